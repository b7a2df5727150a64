/* bench_stats.c -- the spread of a set of timings for attn-bench. */
#include "bench_stats.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the p-quantile of sorted t, interpolated between neighbours */
static double quantile(const double *t, int n, double p)
{
    double at = p * (n - 1);
    int lo = (int)floor(at);
    if (lo >= n - 1) return t[n - 1];
    return t[lo] + (at - lo) * (t[lo + 1] - t[lo]);
}

bench_spread bench_spread_of(double *t, int n)
{
    bench_spread s = {0, 0, 0, 0, 0};
    if (n < 1) return s;
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    s.min = t[0];
    s.q1 = quantile(t, n, 0.25);
    s.median = quantile(t, n, 0.5);
    s.q3 = quantile(t, n, 0.75);
    s.max = t[n - 1];
    return s;
}

double bench_iqr_fraction(const bench_spread *s)
{
    return s->median > 0 ? (s->q3 - s->q1) / s->median : 0;
}

double bench_change(double a, double b)
{
    if (!(a > 0) || !(b > 0)) return 0;
    return fabs(b - a) / (a > b ? a : b);
}
