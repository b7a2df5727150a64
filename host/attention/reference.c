/* reference.c -- the CPU reference for attn_forward: contiguous BHSD float
 * arrays, double accumulation, one query row at a time (scores, then the
 * softmax over keys, then the mix of V), written to be read and trusted
 * rather than to be fast. Tests and check mode compare kernels against it. */
#include "core/errors.h"
#include "attention/validate.h"

#include <math.h>
#include <stdlib.h>


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

    /* One row of scores, then the row's output accumulator. */
    double *scores = malloc(((size_t)Skv + (size_t)D) * sizeof(double));
    ATTN_CHECK(NULL, !scores, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    double *acc = scores + Skv;

    for (int b = 0; b < p->batch; b++) {
        const attn_region r = attn_region_of(p, lengths, b);
        for (int h = 0; h < p->q_heads; h++) {
            const int hk = h / group;
            const float *qh = q + ((size_t)b * p->q_heads + h) * Sq * D;
            const float *kh = k + ((size_t)b * p->kv_heads + hk) * Skv * D;
            const float *vh = v + ((size_t)b * p->kv_heads + hk) * Skv * D;
            float *oh = out + ((size_t)b * p->q_heads + h) * Sq * D;
            float *lh = lse ? lse + ((size_t)b * p->q_heads + h) * Sq : NULL;

            for (int row = 0; row < Sq; row++) {
                float *o = oh + (size_t)row * D;
                const int i = row - r.q_start; /* query content index */

                /* Visible keys are content indices [0, nvis): inside kv_len
                 * and, when causal, j <= i + (kv_len - q_len). */
                int nvis = 0;
                if (i >= 0 && i < r.q_len) {
                    nvis = r.kv_len;
                    if (p->causal) {
                        int limit = i + (r.kv_len - r.q_len) + 1;
                        if (limit < nvis) nvis = limit;
                    }
                    if (nvis < 0) nvis = 0;
                }
                if (nvis == 0) { /* pad row or everything masked */
                    for (int d = 0; d < D; d++) o[d] = 0.0f;
                    if (lh) lh[row] = -INFINITY;
                    continue;
                }

                /* Scores of the visible keys, and their max. */
                const float *qr = qh + (size_t)row * D;
                double mx = -INFINITY;
                for (int j = 0; j < nvis; j++) {
                    const float *kr = kh + (size_t)(r.kv_start + j) * D;
                    scores[j] = scale * dot(qr, kr, D);
                    if (scores[j] > mx) mx = scores[j];
                }

                /* Softmax over keys (unnormalised weights, their sum). */
                double sum = 0.0;
                for (int j = 0; j < nvis; j++) {
                    scores[j] = exp(scores[j] - mx);
                    sum += scores[j];
                }

                /* The mix of V rows, normalised once at the end. */
                for (int d = 0; d < D; d++) acc[d] = 0.0;
                for (int j = 0; j < nvis; j++) {
                    const float *vr = vh + (size_t)(r.kv_start + j) * D;
                    const double w = scores[j];
                    for (int d = 0; d < D; d++) acc[d] += w * vr[d];
                }
                for (int d = 0; d < D; d++) o[d] = (float)(acc[d] / sum);
                if (lh) lh[row] = (float)(mx + log(sum));
            }
        }
    }
    free(scores);
    return ATTN_SUCCESS;
}
