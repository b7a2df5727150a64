/* reference.c -- the CPU reference for attn_forward: contiguous BHSD float
 * arrays, double accumulation, one query row at a time (scores, then the
 * softmax over keys, then the mix of V), written to be read and trusted
 * rather than to be fast. Tests and check mode compare kernels against it. */
#include "core/errors.h"
#include "attention/validate.h"
#include "attention/variants.h"

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


/* The problem and lengths by attn_forward's own checks, with its messages
 * (attn_validate_problem_values), so that the reference refuses what
 * attn_forward refuses; but p->dtype is ignored (float in, float out) and
 * the host copies it reads stand in for the device buffers. The
 * arithmetic below stays independent of the code it checks. Failures go
 * to the thread's last error (the reference has no context). */
static attn_status reference_check(const attn_problem *p, const attn_lengths *L)
{
    ATTN_CHECK(NULL, p->sinks_buffer && !p->sinks, ATTN_ERROR_INVALID_ARGUMENT,
               "p->sinks_buffer is set but p->sinks is NULL: the reference reads the sinks "
               "from host memory");
    ATTN_CHECK(NULL, p->mask.buffer && !p->mask.host, ATTN_ERROR_INVALID_ARGUMENT,
               "p->mask.buffer is set but p->mask.host is NULL: the reference reads the mask "
               "from host memory");
    attn_problem rp = *p;
    rp.dtype = ATTN_F32;
    attn_status st = attn_validate_problem_values(&rp, L);
    size_t end;
    if (st == ATTN_SUCCESS && p->mask.host) /* floats, by the buffer's offset and strides */
        st = attn_validate_mask_reach(NULL, p, sizeof(float), &end);
    return st;
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

/* What the rows of one (batch entry, query head) share: the entry's
 * regions, the head's K and V, its scale, ALiBi slope and sink, the index
 * of its mask element [b][h][0][0], and the scratch for one row's scores
 * and their keep flags. */
typedef struct head_rows {
    const attn_problem *p;
    attn_region r;
    const float *kh, *vh;
    double scale, slope, sink;
    size_t mask_at;
    double *scores;
    char *keep;
} head_rows;

/* a logit below this (natural log) counts as masked: attn.h's rule, the
 * kernels' -FLT_MAX / 2 in log2 units */
#define MASKED_BELOW (-FLT_MAX / 2.0 / 1.4426950408889634)

/* Buffer row `row` of a head, its query qr: the output row, normalised,
 * into acc (head_dim doubles) and the LSE returned; zeros and -inf for a
 * pad row and for a row that sees no key and has no sink. */
static double reference_row(const head_rows *t, int row, const float *qr, double *acc)
{
    const attn_problem *p = t->p;
    const attn_region r = t->r;
    const int D = p->head_dim, i = row - r.q_start; /* query content index */
    double *scores = t->scores;
    char *keep = t->keep;
    for (int d = 0; d < D; d++) acc[d] = 0.0;
    if (i < 0 || i >= r.q_len) return -INFINITY; /* a pad row: no query at all */
    /* the query's key position: bottom-right alignment */
    const long pos = (long)i + r.kv_len - r.q_len;

    /* Scores of the keys the position rules leave (inside kv_len, the
     * causal limit, the window), with bias and mask, and their max. */
    double mx = -INFINITY;
    for (int j = 0; j < r.kv_len; j++) {
        keep[j] = !(p->causal && j > pos) &&
                  !(p->use_window && p->window_left >= 0 && j < pos - p->window_left) &&
                  !(p->use_window && p->window_right >= 0 && j > pos + p->window_right);
        if (!keep[j]) continue;
        const float *kr = t->kh + (size_t)(r.kv_start + j) * D;
        double s = t->scale * dot(qr, kr, D);
        if (p->softcap > 0.0f) s = p->softcap * tanh(s / p->softcap);
        s -= t->slope * fabs((double)(j - pos)); /* llama.cpp's and FlashAttention's -|j - p| */
        if (p->mask.host)
            s += p->mask.host[t->mask_at + (size_t)row * p->mask.stride_q +
                              (size_t)(r.kv_start + j) * p->mask.stride_kv];
        /* the mask's -inf, or a mask or ALiBi bias as good as that; a NaN
         * logit is hidden where a mask applies, as the kernels do */
        if (s < MASKED_BELOW || (p->mask.host && isnan(s))) {
            keep[j] = 0;
            continue;
        }
        scores[j] = s;
        if (s > mx) mx = s;
    }
    if (t->sink > mx) mx = t->sink;
    if (mx == -INFINITY) return -INFINITY; /* nothing visible, no sink */

    /* Softmax over the kept keys and the sink (unnormalised weights, their
     * sum); the sink adds to the sum only. */
    double sum = p->sinks ? exp(t->sink - mx) : 0.0;
    for (int j = 0; j < r.kv_len; j++)
        if (keep[j]) {
            scores[j] = exp(scores[j] - mx);
            sum += scores[j];
        }

    /* The mix of V rows, normalised once at the end. */
    for (int j = 0; j < r.kv_len; j++) {
        if (!keep[j]) continue;
        const float *vr = t->vh + (size_t)(r.kv_start + j) * D;
        const double w = scores[j];
        for (int d = 0; d < D; d++) acc[d] += w * vr[d];
    }
    for (int d = 0; d < D; d++) acc[d] /= sum;
    return mx + log(sum);
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

    for (int b = 0; b < p->batch; b++)
        for (int h = 0; h < p->q_heads; h++) {
            const int hk = h / group;
            const head_rows t = {
                p, attn_region_of(p, lengths, b),
                k + ((size_t)b * p->kv_heads + hk) * Skv * D,
                v + ((size_t)b * p->kv_heads + hk) * Skv * D,
                scale, slope[h], p->sinks ? (double)p->sinks[h] : -INFINITY,
                p->mask.offset + (size_t)b * p->mask.stride_batch + (size_t)h * p->mask.stride_head,
                scores, keep};
            const float *qh = q + ((size_t)b * p->q_heads + h) * Sq * D;
            float *oh = out + ((size_t)b * p->q_heads + h) * Sq * D;
            float *lh = lse ? lse + ((size_t)b * p->q_heads + h) * Sq : NULL;
            for (int row = 0; row < Sq; row++) {
                /* out's row is written only after q's is read: out may be
                 * q itself (in place, as attn_forward allows) */
                const double l = reference_row(&t, row, qh + (size_t)row * D, acc);
                float *o = oh + (size_t)row * D;
                for (int d = 0; d < D; d++) o[d] = (float)acc[d];
                if (lh) lh[row] = (float)l;
            }
        }
    free(keep);
    free(scores);
    return ATTN_SUCCESS;
}
