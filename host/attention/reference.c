/* reference.c -- the CPU reference for attn_forward: contiguous BHSD float
 * arrays, double accumulation, one query row at a time (scores, then the
 * softmax over keys, then the mix of V), written to be read and trusted
 * rather than to be fast. Tests and check mode compare kernels against it. */
#include "core/errors.h"
#include "attention/validate.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

/* ALiBi's slope of head h of n from max_bias, in double, written here from
 * the definition rather than shared with the library's attn_alibi_slopes:
 * n2 = the largest power of two <= n; the first n2 heads take
 * (2^(-max_bias / n2))^(h + 1), the rest interleave between them,
 * (2^(-max_bias / 2 / n2))^(2 (h - n2) + 1). */
static double reference_alibi_slope(int h, int n, float max_bias)
{
    int n2 = 1;
    while (n2 * 2 <= n) n2 *= 2;
    if (h < n2) return pow(2.0, -(double)max_bias / n2 * (h + 1));
    return pow(2.0, -(double)max_bias / 2.0 / n2 * (2 * (h - n2) + 1));
}


static int span_ok(int start, int len, int padded)
{
    return start >= 0 && start <= padded && len >= 0 && len <= padded && start + len <= padded;
}

/* The problem's shape and lengths against the DESIGN rules, each failure
 * named in the thread's last error (the reference has no context). Its own
 * rules, not attn_validate_problem's: the reference ignores p->dtype and
 * stays independent of the code it checks. */
static attn_status reference_check(const attn_problem *p, const attn_lengths *L)
{
    const struct { int value; const char *name; } sizes[] = {
        {p->batch, "batch"},     {p->q_heads, "q_heads"}, {p->kv_heads, "kv_heads"},
        {p->head_dim, "head_dim"}, {p->q_len, "q_len"},   {p->kv_len, "kv_len"},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        ATTN_CHECK(NULL, sizes[i].value < 1, ATTN_ERROR_INVALID_ARGUMENT,
                   "p->%s = %d must be positive", sizes[i].name, sizes[i].value);
    ATTN_CHECK(NULL, p->head_dim > 256, ATTN_ERROR_INVALID_ARGUMENT,
               "p->head_dim = %d exceeds 256", p->head_dim);
    ATTN_CHECK(NULL, p->q_heads % p->kv_heads != 0, ATTN_ERROR_INVALID_ARGUMENT,
               "p->q_heads = %d is not a multiple of p->kv_heads = %d", p->q_heads, p->kv_heads);
    ATTN_CHECK(NULL, !isfinite(p->scale), ATTN_ERROR_INVALID_ARGUMENT, "p->scale is not finite");
    ATTN_CHECK(NULL, p->use_window && (p->window_left < -1 || p->window_right < -1),
               ATTN_ERROR_INVALID_ARGUMENT,
               "p->window_left = %d, p->window_right = %d: each must be >= 0, or -1 (unlimited)",
               p->window_left, p->window_right);
    ATTN_CHECK(NULL, !(p->softcap >= 0.0f) || isinf(p->softcap), ATTN_ERROR_INVALID_ARGUMENT,
               "p->softcap = %g must be finite and >= 0 (0 = off)", (double)p->softcap);
    ATTN_CHECK(NULL, p->sinks_buffer && !p->sinks, ATTN_ERROR_INVALID_ARGUMENT,
               "p->sinks_buffer is set but p->sinks is NULL: the reference reads the sinks "
               "from host memory");
    ATTN_CHECK(NULL, p->mask.buffer && !p->mask.host, ATTN_ERROR_INVALID_ARGUMENT,
               "p->mask.buffer is set but p->mask.host is NULL: the reference reads the mask "
               "from host memory");
    ATTN_CHECK(NULL, p->alibi_slopes && p->alibi_max_bias > 0.0f, ATTN_ERROR_INVALID_ARGUMENT,
               "p->alibi_slopes and p->alibi_max_bias are both set; give the slopes one way");
    ATTN_CHECK(NULL, !(p->alibi_max_bias >= 0.0f) || isinf(p->alibi_max_bias),
               ATTN_ERROR_INVALID_ARGUMENT, "p->alibi_max_bias = %g must be finite and >= 0",
               (double)p->alibi_max_bias);
    for (int b = 0; L && b < p->batch; b++) {
        attn_region r = attn_region_of(p, L, b);
        ATTN_CHECK(NULL, !span_ok(r.q_start, r.q_len, p->q_len), ATTN_ERROR_INVALID_ARGUMENT,
                   "lengths: batch %d's query rows %d..%d+%d do not fit q_len = %d", b,
                   r.q_start, r.q_start, r.q_len, p->q_len);
        ATTN_CHECK(NULL, !span_ok(r.kv_start, r.kv_len, p->kv_len), ATTN_ERROR_INVALID_ARGUMENT,
                   "lengths: batch %d's key rows %d..%d+%d do not fit kv_len = %d", b,
                   r.kv_start, r.kv_start, r.kv_len, p->kv_len);
    }
    return ATTN_SUCCESS;
}

/* Four partial sums break the add chain (D = 64 in one chain made S = 1000
 * take most of a second); in double the order barely matters. */
static double dot(const float *a, const float *b, int n)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int d = 0;
    for (; d + 4 <= n; d += 4) {
        s0 += (double)a[d] * b[d];
        s1 += (double)a[d + 1] * b[d + 1];
        s2 += (double)a[d + 2] * b[d + 2];
        s3 += (double)a[d + 3] * b[d + 3];
    }
    for (; d < n; d++) s0 += (double)a[d] * b[d];
    return (s0 + s1) + (s2 + s3);
}

attn_status attn_reference_forward(const attn_problem *p, const float *q, const float *k,
                                   const float *v, float *out, const attn_lengths *lengths,
                                   float *lse)
{
    attn_thread_call_begin(__func__);
    const void *args[] = {p, q, k, v, out};
    const char *names[] = {"p", "q", "k", "v", "out"};
    for (int i = 0; i < 5; i++)
        ATTN_CHECK(NULL, !args[i], ATTN_ERROR_INVALID_ARGUMENT, "%s is NULL", names[i]);
    attn_status st = reference_check(p, lengths);
    if (st != ATTN_SUCCESS) return st;

    const int D = p->head_dim, Sq = p->q_len, Skv = p->kv_len;
    const int group = p->q_heads / p->kv_heads;
    /* The default scale computed here, in double, not by the kernels'
     * attn_effective_scale: a wrong default there must show as a mismatch. */
    const double scale = p->scale != 0.0f ? (double)p->scale : 1.0 / sqrt((double)D);

    /* One row of scores and of their keep flags, then the row's output
     * accumulator; the ALiBi slopes. */
    double *scores = malloc(((size_t)Skv + (size_t)D + (size_t)p->q_heads) * sizeof(double));
    char *keep = malloc((size_t)Skv);
    if (!scores || !keep) {
        free(scores);
        free(keep);
        return ATTN_FAIL(NULL, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    double *acc = scores + Skv, *slope = acc + D;
    for (int h = 0; h < p->q_heads; h++) slope[h] = 0.0;
    if (p->alibi_slopes)
        for (int h = 0; h < p->q_heads; h++) slope[h] = p->alibi_slopes[h];
    else if (p->alibi_max_bias > 0.0f)
        for (int h = 0; h < p->q_heads; h++) slope[h] = reference_alibi_slope(h, p->q_heads, p->alibi_max_bias);
    /* a logit below this (natural log) counts as masked: attn.h's rule, the
     * kernels' -FLT_MAX / 2 in log2 units */
    const double masked_below = -FLT_MAX / 2.0 / 1.4426950408889634;

    for (int b = 0; b < p->batch; b++) {
        const attn_region r = attn_region_of(p, lengths, b);
        for (int h = 0; h < p->q_heads; h++) {
            const int hk = h / group;
            const float *qh = q + ((size_t)b * p->q_heads + h) * Sq * D;
            const float *kh = k + ((size_t)b * p->kv_heads + hk) * Skv * D;
            const float *vh = v + ((size_t)b * p->kv_heads + hk) * Skv * D;
            float *oh = out + ((size_t)b * p->q_heads + h) * Sq * D;
            float *lh = lse ? lse + ((size_t)b * p->q_heads + h) * Sq : NULL;
            const double sink = p->sinks ? (double)p->sinks[h] : -INFINITY;

            for (int row = 0; row < Sq; row++) {
                float *o = oh + (size_t)row * D;
                const int i = row - r.q_start; /* query content index */
                for (int d = 0; d < D; d++) o[d] = 0.0f;
                if (i < 0 || i >= r.q_len) { /* a pad row: no query at all */
                    if (lh) lh[row] = -INFINITY;
                    continue;
                }
                /* the query's key position: bottom-right alignment */
                const long pos = (long)i + r.kv_len - r.q_len;

                /* Scores of the keys the position rules leave (inside
                 * kv_len, the causal limit, the window), with bias and mask,
                 * and their max. */
                const float *qr = qh + (size_t)row * D;
                double mx = -INFINITY;
                for (int j = 0; j < r.kv_len; j++) {
                    keep[j] = !(p->causal && j > pos) &&
                              !(p->use_window && p->window_left >= 0 && j < pos - p->window_left) &&
                              !(p->use_window && p->window_right >= 0 && j > pos + p->window_right);
                    if (!keep[j]) continue;
                    const float *kr = kh + (size_t)(r.kv_start + j) * D;
                    double s = scale * dot(qr, kr, D);
                    if (p->softcap > 0.0f) s = p->softcap * tanh(s / p->softcap);
                    s += slope[h] * (double)(j - pos);
                    if (p->mask.host) {
                        s += p->mask.host[p->mask.offset + (size_t)b * p->mask.stride_batch +
                                          (size_t)h * p->mask.stride_head +
                                          (size_t)row * p->mask.stride_q +
                                          (size_t)(r.kv_start + j) * p->mask.stride_kv];
                        if (!(s >= masked_below)) { /* the mask's -inf, or as good as */
                            keep[j] = 0;
                            continue;
                        }
                    }
                    scores[j] = s;
                    if (s > mx) mx = s;
                }
                if (sink > mx) mx = sink;
                if (mx == -INFINITY) { /* nothing visible, no sink */
                    if (lh) lh[row] = -INFINITY;
                    continue;
                }

                /* Softmax over the kept keys and the sink (unnormalised
                 * weights, their sum); the sink adds to the sum only. */
                double sum = p->sinks ? exp(sink - mx) : 0.0;
                for (int j = 0; j < r.kv_len; j++)
                    if (keep[j]) {
                        scores[j] = exp(scores[j] - mx);
                        sum += scores[j];
                    }

                /* The mix of V rows, normalised once at the end. */
                for (int d = 0; d < D; d++) acc[d] = 0.0;
                for (int j = 0; j < r.kv_len; j++) {
                    if (!keep[j]) continue;
                    const float *vr = vh + (size_t)(r.kv_start + j) * D;
                    const double w = scores[j];
                    for (int d = 0; d < D; d++) acc[d] += w * vr[d];
                }
                for (int d = 0; d < D; d++) o[d] = (float)(acc[d] / sum);
                if (lh) lh[row] = (float)(mx + log(sum));
            }
        }
    }
    free(keep);
    free(scores);
    return ATTN_SUCCESS;
}
