/* sampling.c -- the clock, the spread of timings and the generator that
 * attn-bench, attn-tune and the tuning library share (sampling.h). */
#define _POSIX_C_SOURCE 200809L
#include "measure/sampling.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

double attn_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

double attn_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the p-quantile of sorted x, interpolated between neighbours */
static double quantile(const double *x, int n, double p)
{
    double at = p * (n - 1);
    int lo = (int)floor(at);
    return lo >= n - 1 ? x[n - 1] : x[lo] + (at - lo) * (x[lo + 1] - x[lo]);
}

attn_time_spread attn_time_spread_of(double *x, int n)
{
    attn_time_spread s = {0, 0, 0, 0, 0};
    if (n < 1) return s;
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    s.min_ms = x[0];
    s.q1_ms = quantile(x, n, 0.25);
    s.median_ms = quantile(x, n, 0.5); /* the middle value, or the mean of the middle two */
    s.q3_ms = quantile(x, n, 0.75);
    s.max_ms = x[n - 1];
    return s;
}

double attn_time_spread_iqr(const attn_time_spread *s)
{
    return s->median_ms > 0 ? (s->q3_ms - s->q1_ms) / s->median_ms : 0;
}

double attn_relative_change(double a, double b)
{
    if (!(a > 0) || !(b > 0)) return 0;
    return fabs(b - a) / (a > b ? a : b);
}

uint64_t attn_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

float attn_rand_uniform(uint64_t *state, float lo, float hi)
{
    const uint64_t z = attn_splitmix64(state);
    return lo + (hi - lo) * (float)((double)(z >> 40) / (double)(1ull << 24));
}
