/* bench_stats.h -- the spread of a set of timings (min, quartiles, median,
 * max) and the noise rule shared by attn-bench's prefill, decode and
 * comparison runs: one copy instead of a median helper per file. */
#ifndef ATTN_BENCH_STATS_H
#define ATTN_BENCH_STATS_H

/* Too noisy to rank: a result whose interquartile range exceeds this
 * fraction of its median, or a peak measured before and after the runs
 * that moved by more than this. */
#define BENCH_NOISE_LIMIT 0.10

typedef struct bench_spread {
    double min, q1, median, q3, max; /* quartiles interpolated linearly */
} bench_spread;

/* Sorts t[0..n-1] in place and returns its spread (all zero for n < 1). */
bench_spread bench_spread_of(double *t, int n);
/* (q3 - q1) / median, 0 when the median is 0. */
double bench_iqr_fraction(const bench_spread *s);
/* |b - a| / max(a, b), 0 when either is not positive. */
double bench_change(double a, double b);

#endif /* ATTN_BENCH_STATS_H */
