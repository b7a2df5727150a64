/* sampling.h -- what every measuring program here shares, so that each
 * exists once: the monotonic clock, the spread of a set of timings (min,
 * quartiles, median, max) and the noise rule, and the splitmix64 generator
 * of test inputs. Built as its own small static library (attn_sampling)
 * that the tuning library (attn_tune) and the tools (tools/common.c) link;
 * depends on nothing but libc. */
#ifndef ATTN_SAMPLING_H
#define ATTN_SAMPLING_H

#include <stdint.h>

/* Too noisy to rank: a result whose interquartile range exceeds this
 * fraction of its median, or a peak measured before and after the runs
 * that moved by more than this (attn-bench, attn-tune). */
#define ATTN_NOISE_LIMIT 0.10

/* CLOCK_MONOTONIC in milliseconds, and in seconds. */
double attn_now_ms(void);
double attn_now_s(void);

typedef struct attn_time_spread {
    double min_ms, q1_ms, median_ms, q3_ms, max_ms; /* quartiles interpolated linearly */
} attn_time_spread;

/* Sorts x[0..n-1] (milliseconds, or any other sample) in place and returns
 * its spread (all zero for n < 1). */
attn_time_spread attn_time_spread_of(double *x, int n);
/* (q3 - q1) / median, 0 when the median is 0: above ATTN_NOISE_LIMIT the
 * times are too noisy to rank close results. */
double attn_time_spread_iqr(const attn_time_spread *s);
/* |b - a| / max(a, b), 0 when either is not positive. */
double attn_relative_change(double a, double b);

/* The next splitmix64 output of the generator whose state is *state. */
uint64_t attn_splitmix64(uint64_t *state);
/* A value in [lo, hi) from the top 24 bits of the next output (exact in
 * float: lo + (hi - lo) * k / 2^24). */
float attn_rand_uniform(uint64_t *state, float lo, float hi);

#endif /* ATTN_SAMPLING_H */
