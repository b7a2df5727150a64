/* test_reference.c -- the CPU reference against cases small enough to work
 * out by hand (the seed's exercises, scaling, masking, padding, GQA), plus
 * the host conversions and the names of statuses and types. Everything the
 * kernels are checked against rests on these. */
#include "harness.h"
#include "attention/forward.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- helpers ---- */

static attn_problem problem(int B, int Hq, int Hkv, int D, int Sq, int Skv, int causal)
{
    attn_problem p;
    memset(&p, 0, sizeof p);
    p.batch = B;
    p.q_heads = Hq;
    p.kv_heads = Hkv;
    p.head_dim = D;
    p.q_len = Sq;
    p.kv_len = Skv;
    p.dtype = ATTN_F32;
    p.causal = causal;
    p.scale = 0.0f;
    return p;
}

static size_t q_elems(const attn_problem *p)
{
    return (size_t)p->batch * p->q_heads * p->q_len * p->head_dim;
}

static size_t kv_elems(const attn_problem *p)
{
    return (size_t)p->batch * p->kv_heads * p->kv_len * p->head_dim;
}

static float *alloc_floats(size_t n)
{
    float *x = calloc(n ? n : 1, sizeof *x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    return x;
}

/* An independent, materialised implementation for B = 1, Hq = Hkv, no
 * padding: the whole weight matrix, each row normalised over keys. */
static void naive_attention(int H, int Sq, int Skv, int D, double scale, int causal,
                            const float *q, const float *k, const float *v, float *out)
{
    double *w = malloc((size_t)Sq * Skv * sizeof *w);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    for (int h = 0; h < H; h++) {
        const float *qh = q + (size_t)h * Sq * D, *kh = k + (size_t)h * Skv * D;
        const float *vh = v + (size_t)h * Skv * D;
        for (int i = 0; i < Sq; i++) {
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < Skv; j++) {
                double s = 0;
                for (int d = 0; d < D; d++) s += (double)qh[i * D + d] * kh[j * D + d];
                int visible = !causal || j <= i + (Skv - Sq);
                w[i * Skv + j] = visible ? s * scale : -INFINITY;
                if (w[i * Skv + j] > mx) mx = w[i * Skv + j];
            }
            for (int j = 0; j < Skv; j++) {
                w[i * Skv + j] = mx == -INFINITY ? 0.0 : exp(w[i * Skv + j] - mx);
                sum += w[i * Skv + j];
            }
            for (int d = 0; d < D; d++) {
                double acc = 0;
                for (int j = 0; j < Skv; j++) acc += w[i * Skv + j] * vh[j * D + d];
                out[((size_t)h * Sq + i) * D + d] = sum > 0 ? (float)(acc / sum) : 0.0f;
            }
        }
    }
    free(w);
}

static int count_nan(const float *x, size_t n)
{
    int c = 0;
    for (size_t i = 0; i < n; i++) c += isnan(x[i]) != 0;
    return c;
}

/* ---- (a) the seed's exercise 1: zero queries and keys ---- */

static void test_zero_qk_uniform_causal(void)
{
    attn_problem p = problem(1, 1, 1, 3, 5, 5, 1);
    float q[15] = {0}, k[15] = {0}, v[15], out[15], lse[5];
    harness_fill_uniform(v, 15, 1, -1.0f, 1.0f);
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, out, NULL, lse), ATTN_SUCCESS);
    for (int i = 0; i < 5; i++) {
        for (int d = 0; d < 3; d++) {
            double mean = 0;
            for (int j = 0; j <= i; j++) mean += v[j * 3 + d];
            mean /= i + 1;
            CU_ASSERT_DOUBLE_EQUAL(out[i * 3 + d], mean, 1e-6);
        }
        CU_ASSERT_DOUBLE_EQUAL(lse[i], log(i + 1.0), 1e-6); /* i+1 logits of 0 */
    }
}

/* ---- (b) one query, two keys, by hand ---- */

static void test_hand_two_keys(void)
{
    /* D = 4, so scale = 1/2. q.k0 = 0 and q.k1 = 2 ln 3, so the scaled logits
     * are 0 and ln 3: weights 1/4 and 3/4, LSE = ln(1 + 3) = ln 4. */
    const float ln3 = 1.09861228867f;
    float q[4] = {2, 0, 0, 0};
    float k[8] = {0, 0, 0, 0, ln3, 0, 0, 0};
    float v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const float expect[4] = {4, 5, 6, 7}; /* 0.25 * v0 + 0.75 * v1 */
    for (int causal = 0; causal <= 1; causal++) {
        /* Sq = 1 < Skv = 2: bottom-right causal lets the one query see both keys. */
        attn_problem p = problem(1, 1, 1, 4, 1, 2, causal);
        float out[4], lse;
        CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, out, NULL, &lse),
                              ATTN_SUCCESS);
        for (int d = 0; d < 4; d++) CU_ASSERT_DOUBLE_EQUAL(out[d], expect[d], 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(lse, 1.38629436112, 1e-6);
    }

    /* Logits 1 and -1 (scale 1, D = 1): softmax = e/(e + 1/e) = 0.880797. */
    attn_problem p = problem(1, 1, 1, 1, 1, 2, 0);
    p.scale = 1.0f;
    float q1 = 1, k2[2] = {1, -1}, v2[2] = {10, 20}, out1, lse1;
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, &q1, k2, v2, &out1, NULL, &lse1),
                          ATTN_SUCCESS);
    CU_ASSERT_DOUBLE_EQUAL(out1, 0.880797077978 * 10 + 0.119202922022 * 20, 1e-5);
    CU_ASSERT_DOUBLE_EQUAL(lse1, 1.12692801104, 1e-6); /* ln(e + 1/e) */
}

/* ---- (c) 1/sqrt(head_dim), never 1/sqrt(d_model); a given scale wins ---- */

static void test_scale_head_dim(void)
{
    enum { H = 4, S = 3, D = 4, N = H * S * D };
    const uint64_t seed = harness_seed(3);
    attn_problem p = problem(1, H, H, D, S, S, 1);
    float q[N], k[N], v[N], out[N], want[N], wrong[N];
    harness_fill_uniform(q, N, seed, -2, 2);
    harness_fill_uniform(k, N, seed + 1, -2, 2);
    harness_fill_uniform(v, N, seed + 2, -1, 1);

    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, out, NULL, NULL), ATTN_SUCCESS);
    naive_attention(H, S, S, D, 1.0 / sqrt(D), 1, q, k, v, want);
    naive_attention(H, S, S, D, 1.0 / sqrt(H * D), 1, q, k, v, wrong);
    CU_ASSERT_EQUAL(harness_compare("scale 1/sqrt(D)", out, want, N, 1e-6, 1e-6, seed), 0);
    double diff = 0;
    for (int i = 0; i < N; i++) diff = fmax(diff, fabs(out[i] - wrong[i]));
    CU_ASSERT(diff > 1e-3); /* d_model's scale would be visibly different */

    p.scale = 0.3f;
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, out, NULL, NULL), ATTN_SUCCESS);
    naive_attention(H, S, S, D, 0.3f, 1, q, k, v, want);
    CU_ASSERT_EQUAL(harness_compare("custom scale", out, want, N, 1e-6, 1e-6, seed), 0);

    CU_ASSERT_DOUBLE_EQUAL(attn_effective_scale(&p), 0.3, 1e-7);
    p.scale = 0;
    p.head_dim = 64;
    CU_ASSERT_DOUBLE_EQUAL(attn_effective_scale(&p), 0.125, 1e-7);
}

/* ---- (d) masking before softmax: visible weights sum to one ---- */

static void test_mask_before_softmax(void)
{
    enum { B = 2, H = 2, S = 7, D = 5 };
    const uint64_t seed = harness_seed(4);
    attn_problem p = problem(B, H, H, D, S, S, 1);
    const int q_start[B] = {0, 2}, q_len[B] = {7, 5};
    const int kv_start[B] = {0, 3}, kv_len[B] = {6, 4};
    attn_lengths L = {q_start, q_len, kv_start, kv_len};
    size_t n = q_elems(&p);
    float *q = alloc_floats(n), *k = alloc_floats(n), *v = alloc_floats(n);
    float *out = alloc_floats(n), lse[B * H * S];
    harness_fill_uniform(q, n, seed, -3, 3);
    harness_fill_uniform(k, n, seed + 1, -3, 3);
    for (size_t i = 0; i < n; i++) v[i] = 1.0f;

    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, out, &L, lse), ATTN_SUCCESS);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int r = 0; r < S; r++) {
                int i = r - q_start[b];
                int visible = i >= 0 && i < q_len[b] && i + (kv_len[b] - q_len[b]) >= 0;
                const float *o = out + (((size_t)b * H + h) * S + r) * D;
                for (int d = 0; d < D; d++) CU_ASSERT_EQUAL(o[d], visible ? 1.0f : 0.0f);
                CU_ASSERT(visible ? isfinite(lse[(b * H + h) * S + r])
                                  : lse[(b * H + h) * S + r] == -INFINITY);
            }
    free(q);
    free(k);
    free(v);
    free(out);
}

/* ---- (e) causal is bottom-right aligned ---- */

static void test_causal_bottom_right(void)
{
    /* Sq = 2, Skv = 5: query 0 sees keys 0..3, query 1 sees 0..4. With zero
     * Q and K the weights are uniform over exactly those keys. */
    enum { Sq = 2, Skv = 5, D = 2 };
    attn_problem p = problem(1, 1, 1, D, Sq, Skv, 1);
    float q[Sq * D] = {0}, k[Skv * D] = {0}, out[Sq * D], lse[Sq];
    float v[Skv * D] = {1, 10, 2, 20, 3, 30, 4, 40, 5, 50};
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, out, NULL, lse), ATTN_SUCCESS);
    CU_ASSERT_DOUBLE_EQUAL(out[0], 2.5, 1e-6); /* mean of 1..4 */
    CU_ASSERT_DOUBLE_EQUAL(out[1], 25.0, 1e-5);
    CU_ASSERT_DOUBLE_EQUAL(out[2], 3.0, 1e-6); /* mean of 1..5 */
    CU_ASSERT_DOUBLE_EQUAL(out[3], 30.0, 1e-5);
    CU_ASSERT_DOUBLE_EQUAL(lse[0], log(4.0), 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(lse[1], log(5.0), 1e-6);

    /* Random Q and K: the same as the explicit mask j <= i + (Skv - Sq). */
    const uint64_t seed = harness_seed(5);
    float qr[3 * 3 * 4], kr[3 * 7 * 4], vr[3 * 7 * 4], o2[3 * 3 * 4], want[3 * 3 * 4];
    attn_problem p2 = problem(1, 3, 3, 4, 3, 7, 1);
    harness_fill_normal(qr, 36, seed, 0, 1);
    harness_fill_normal(kr, 84, seed + 1, 0, 1);
    harness_fill_normal(vr, 84, seed + 2, 0, 1);
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p2, qr, kr, vr, o2, NULL, NULL),
                          ATTN_SUCCESS);
    naive_attention(3, 3, 7, 4, 0.5, 1, qr, kr, vr, want);
    CU_ASSERT_EQUAL(harness_compare("causal Sq<Skv", o2, want, 36, 1e-6, 1e-6, seed), 0);
}

/* ---- (f) left and right padding ---- */

static void test_padding_left_right(void)
{
    /* Batch 0 right-padded, batch 1 left-padded, batch 2 mixed (queries
     * left-padded, keys in the middle). Pad K/V rows hold NaN: attending
     * to one would show. */
    enum { B = 3, Hq = 2, Hkv = 1, S = 8, D = 3 };
    const uint64_t seed = harness_seed(6);
    const int q_start[B] = {0, 3, 5}, q_len[B] = {5, 5, 3};
    const int kv_start[B] = {0, 3, 1}, kv_len[B] = {5, 5, 6};
    attn_lengths L = {q_start, q_len, kv_start, kv_len};
    for (int causal = 0; causal <= 1; causal++) {
        attn_problem p = problem(B, Hq, Hkv, D, S, S, causal);
        size_t nq = q_elems(&p), nkv = kv_elems(&p);
        float *q = alloc_floats(nq), *k = alloc_floats(nkv), *v = alloc_floats(nkv);
        float *out = alloc_floats(nq), lse[B * Hq * S];
        harness_fill_normal(q, nq, seed, 0, 1);
        harness_fill_normal(k, nkv, seed + 1, 0, 1);
        harness_fill_normal(v, nkv, seed + 2, 0, 1);
        for (int b = 0; b < B; b++)
            for (int r = 0; r < S; r++)
                if (r < kv_start[b] || r >= kv_start[b] + kv_len[b])
                    for (int d = 0; d < D; d++) {
                        k[((size_t)b * S + r) * D + d] = NAN;
                        v[((size_t)b * S + r) * D + d] = NAN;
                    }
        CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, out, &L, lse), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(count_nan(out, nq), 0);
        CU_ASSERT_EQUAL(count_nan(lse, B * Hq * S), 0);

        for (int b = 0; b < B; b++) {
            /* The same batch entry as an unpadded problem of its own. */
            attn_problem u = problem(1, Hq, Hkv, D, q_len[b], kv_len[b], causal);
            float uq[Hq * S * D], uk[S * D], uv[S * D], uo[Hq * S * D], ul[Hq * S];
            for (int h = 0; h < Hq; h++)
                memcpy(uq + (size_t)h * q_len[b] * D,
                       q + (((size_t)b * Hq + h) * S + q_start[b]) * D,
                       (size_t)q_len[b] * D * sizeof(float));
            memcpy(uk, k + ((size_t)b * S + kv_start[b]) * D, (size_t)kv_len[b] * D * sizeof(float));
            memcpy(uv, v + ((size_t)b * S + kv_start[b]) * D, (size_t)kv_len[b] * D * sizeof(float));
            CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&u, uq, uk, uv, uo, NULL, ul),
                                  ATTN_SUCCESS);
            for (int h = 0; h < Hq; h++)
                for (int r = 0; r < S; r++) {
                    int i = r - q_start[b];
                    const float *o = out + (((size_t)b * Hq + h) * S + r) * D;
                    float l = lse[(b * Hq + h) * S + r];
                    if (i < 0 || i >= q_len[b]) { /* a pad row */
                        for (int d = 0; d < D; d++) CU_ASSERT_EQUAL(o[d], 0.0f);
                        CU_ASSERT_EQUAL(l, -INFINITY);
                        continue;
                    }
                    const float *want = uo + ((size_t)h * q_len[b] + i) * D;
                    for (int d = 0; d < D; d++) CU_ASSERT_EQUAL(o[d], want[d]);
                    CU_ASSERT_EQUAL(l, ul[h * q_len[b] + i]);
                }
        }
        free(q);
        free(k);
        free(v);
        free(out);
    }
}

/* ---- (g) GQA is MHA with K/V heads duplicated ---- */

static void test_gqa_equals_duplicated_mha(void)
{
    enum { B = 2, Hq = 4, Hkv = 2, S = 6, D = 8 };
    const uint64_t seed = harness_seed(7);
    for (int kv_heads = Hkv; kv_heads >= 1; kv_heads--) { /* GQA, then MQA */
        attn_problem g = problem(B, Hq, kv_heads, D, S, S, 1);
        attn_problem m = problem(B, Hq, Hq, D, S, S, 1);
        size_t nq = q_elems(&g), nkv = kv_elems(&g), row = (size_t)S * D;
        float *q = alloc_floats(nq), *k = alloc_floats(nkv), *v = alloc_floats(nkv);
        float *k4 = alloc_floats(nq), *v4 = alloc_floats(nq);
        float *og = alloc_floats(nq), *om = alloc_floats(nq), lg[B * Hq * S], lm[B * Hq * S];
        harness_fill_normal(q, nq, seed, 0, 1);
        harness_fill_normal(k, nkv, seed + 1, 0, 1);
        harness_fill_normal(v, nkv, seed + 2, 0, 1);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < Hq; h++) {
                int hk = h / (Hq / kv_heads);
                memcpy(k4 + ((size_t)b * Hq + h) * row, k + ((size_t)b * kv_heads + hk) * row,
                       row * sizeof(float));
                memcpy(v4 + ((size_t)b * Hq + h) * row, v + ((size_t)b * kv_heads + hk) * row,
                       row * sizeof(float));
            }
        CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&g, q, k, v, og, NULL, lg), ATTN_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&m, q, k4, v4, om, NULL, lm), ATTN_SUCCESS);
        CU_ASSERT(memcmp(og, om, nq * sizeof(float)) == 0);
        CU_ASSERT(memcmp(lg, lm, sizeof lg) == 0);
        free(q);
        free(k);
        free(v);
        free(k4);
        free(v4);
        free(og);
        free(om);
    }
}

/* ---- (h) a row with nothing visible: zeros and -inf, never NaN ---- */

static void test_fully_masked_rows(void)
{
    /* Causal, Sq = 5 > Skv = 2: query i sees j <= i - 3, so rows 0..2 see
     * nothing; row 3 sees key 0 only (its output is V row 0). */
    enum { Sq = 5, Skv = 2, D = 3 };
    attn_problem p = problem(1, 1, 1, D, Sq, Skv, 1);
    float q[Sq * D], k[Skv * D], v[Skv * D], out[Sq * D], lse[Sq];
    harness_fill_uniform(q, Sq * D, 8, -1, 1);
    harness_fill_uniform(k, Skv * D, 9, -1, 1);
    harness_fill_uniform(v, Skv * D, 10, -1, 1);
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, out, NULL, lse), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(count_nan(out, Sq * D) + count_nan(lse, Sq), 0);
    for (int r = 0; r < 3; r++) {
        for (int d = 0; d < D; d++) CU_ASSERT_EQUAL(out[r * D + d], 0.0f);
        CU_ASSERT_EQUAL(lse[r], -INFINITY);
    }
    for (int d = 0; d < D; d++) CU_ASSERT_DOUBLE_EQUAL(out[3 * D + d], v[d], 1e-7);
    double logit = 0;
    for (int d = 0; d < D; d++) logit += (double)q[3 * D + d] * k[d];
    CU_ASSERT_DOUBLE_EQUAL(lse[3], logit / sqrt(D), 1e-6); /* one key: LSE = its logit */
    CU_ASSERT(isfinite(lse[4]));

    /* kv_len = 0 for one batch entry, q_len = 0 for another: all zeros. */
    attn_problem p2 = problem(2, 1, 1, D, 2, 2, 0);
    const int ql[2] = {2, 0}, kl[2] = {0, 2};
    attn_lengths L = {NULL, ql, NULL, kl};
    float q2[12], k2[12], v2[12], o2[12], l2[4];
    harness_fill_uniform(q2, 12, 11, -1, 1);
    harness_fill_uniform(k2, 12, 12, -1, 1);
    harness_fill_uniform(v2, 12, 13, -1, 1);
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p2, q2, k2, v2, o2, &L, l2), ATTN_SUCCESS);
    for (int i = 0; i < 12; i++) CU_ASSERT_EQUAL(o2[i], 0.0f);
    for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(l2[i], -INFINITY);
}

/* ---- (i) softmax over keys, not over queries ---- */

static void test_softmax_over_keys(void)
{
    /* Scale 1, D = 2, q = (1,0), (2,0); k = (1,0), (3,0): logits
     * [[1, 3], [2, 6]]. With V = I, each output row is that row's weights.
     * Over keys: row 0 = (1, e^2)/(1 + e^2) = (0.119203, 0.880797), row 1 =
     * (0.017986, 0.982014): each sums to one. Over queries, column 0 would
     * be (1, e)/(1 + e) = (0.268941, 0.731059), and rows would not sum to 1. */
    attn_problem p = problem(1, 1, 1, 2, 2, 2, 0);
    p.scale = 1.0f;
    float q[4] = {1, 0, 2, 0}, k[4] = {1, 0, 3, 0}, v[4] = {1, 0, 0, 1}, out[4];
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, out, NULL, NULL), ATTN_SUCCESS);
    CU_ASSERT_DOUBLE_EQUAL(out[0], 0.119202922, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(out[1], 0.880797078, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(out[2], 0.017986210, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(out[3], 0.982013790, 1e-6);
    CU_ASSERT(fabs(out[0] - 0.268941421) > 0.1); /* the query-axis answer */
    CU_ASSERT_DOUBLE_EQUAL(out[0] + out[1], 1.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(out[2] + out[3], 1.0, 1e-6);
}

/* ---- large logits: the max is subtracted, nothing overflows ---- */

static void test_large_logits_stable(void)
{
    /* Logits 1000 and 900 (scale 1): exp would overflow without the max
     * shift; the result is V row 0 to within e^-100, LSE = 1000. */
    attn_problem p = problem(1, 1, 1, 1, 1, 2, 0);
    p.scale = 1.0f;
    float q = 100, k[2] = {10, 9}, v[2] = {3, -7}, out, lse;
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, &q, k, v, &out, NULL, &lse), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(out, 3.0f);
    CU_ASSERT_DOUBLE_EQUAL(lse, 1000.0, 1e-3);
}

/* ---- (j) invalid arguments ---- */

static void test_invalid_arguments(void)
{
    enum { S = 4, D = 2 };
    float q[2 * 4 * S * D] = {0}, k[2 * 4 * S * D] = {0}, v[2 * 4 * S * D] = {0};
    float out[2 * 4 * S * D];
    const attn_problem ok = problem(2, 2, 1, D, S, S, 1);
    CU_ASSERT_EQUAL(attn_reference_forward(&ok, q, k, v, out, NULL, NULL), ATTN_SUCCESS);

    CU_ASSERT_EQUAL(attn_reference_forward(NULL, q, k, v, out, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_reference_forward(&ok, NULL, k, v, out, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_reference_forward(&ok, q, NULL, v, out, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_reference_forward(&ok, q, k, NULL, out, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_reference_forward(&ok, q, k, v, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);

    /* Shapes: each problem differs from ok in one field. */
    attn_problem bad[12];
    for (int i = 0; i < 12; i++) bad[i] = ok;
    bad[0].batch = 0;
    bad[1].q_heads = 0;
    bad[2].kv_heads = 0;
    bad[3].q_heads = 3; /* 3 % 2 */
    bad[3].kv_heads = 2;
    bad[4].head_dim = 0;
    bad[5].head_dim = 257;
    bad[6].q_len = 0;
    bad[7].kv_len = -1;
    bad[8].batch = -3;
    bad[9].scale = NAN;
    bad[10].scale = INFINITY;
    bad[11].kv_heads = 4; /* more KV heads than query heads */
    for (int i = 0; i < 12; i++) {
        attn_status st = attn_reference_forward(&bad[i], q, k, v, out, NULL, NULL);
        if (st != ATTN_ERROR_INVALID_ARGUMENT) printf("\n  bad problem %d accepted\n", i);
        CU_ASSERT_EQUAL(st, ATTN_ERROR_INVALID_ARGUMENT);
    }

    /* Lengths: out of [0, S], or start + len > S. */
    const int good[2] = {0, 0}, full[2] = {S, S}, neg[2] = {0, -1}, over[2] = {S + 1, 1};
    const int two[2] = {2, 2}, three[2] = {3, 3}, start_over[2] = {S + 1, 0};
    const attn_lengths bad_lengths[] = {
        {neg, NULL, NULL, NULL},   {NULL, neg, NULL, NULL},  {NULL, NULL, neg, NULL},
        {NULL, NULL, NULL, neg},   {NULL, over, NULL, NULL}, {NULL, NULL, NULL, over},
        {two, three, NULL, NULL},  {NULL, NULL, two, three}, {two, NULL, NULL, NULL},
        {start_over, good, NULL, NULL}, {NULL, NULL, good, over},
    };
    for (size_t i = 0; i < sizeof bad_lengths / sizeof bad_lengths[0]; i++) {
        attn_status st = attn_reference_forward(&ok, q, k, v, out, &bad_lengths[i], NULL);
        if (st != ATTN_ERROR_INVALID_ARGUMENT) printf("\n  bad lengths %zu accepted\n", i);
        CU_ASSERT_EQUAL(st, ATTN_ERROR_INVALID_ARGUMENT);
    }

    /* Edges that are valid: empty and full regions, head_dim 256, start S. */
    const int ends[2] = {S, S}, zero[2] = {0, 0};
    attn_lengths edge = {ends, zero, good, full};
    CU_ASSERT_EQUAL(attn_reference_forward(&ok, q, k, v, out, &edge, NULL), ATTN_SUCCESS);
    attn_lengths empty = {NULL, NULL, NULL, NULL};
    CU_ASSERT_EQUAL(attn_reference_forward(&ok, q, k, v, out, &empty, NULL), ATTN_SUCCESS);
    attn_problem big = problem(1, 1, 1, 256, 1, 1, 0);
    float q256[256] = {0}, k256[256] = {0}, v256[256] = {0}, o256[256];
    CU_ASSERT_EQUAL(attn_reference_forward(&big, q256, k256, v256, o256, NULL, NULL),
                    ATTN_SUCCESS);
}

/* attn_reference_forward refuses p with L as attn_forward does: status and
 * message (the small arrays hold every problem these tests give it). */
static void expect_refused(const attn_problem *p, const attn_lengths *L, const char *why)
{
    float x[64] = {0}, out[64];
    CU_ASSERT_EQUAL(attn_reference_forward(p, x, x, x, out, L, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    const char *got = attn_last_error(NULL);
    if (!strstr(got, why)) printf("\n  got \"%s\", want \"%s\"\n", got, why);
    CU_ASSERT(strstr(got, why) != NULL);
}

/* lengths named as attn_forward names them */
static void test_refuses_lengths_as_attn_forward(void)
{
    const attn_problem ok = problem(1, 2, 1, 2, 4, 4, 0);
    const int minus1[1] = {-1}, two[1] = {2}, three[1] = {3};
    const attn_lengths L[2] = {{minus1, NULL, NULL, NULL}, {NULL, NULL, two, three}};
    expect_refused(&ok, &L[0], "lengths->q_start[0] = -1 is outside [0, 4]");
    expect_refused(&ok, &L[1], "lengths: kv_start[0] + kv_len[0] = 2 + 3 exceeds the padded length 4");
    /* at the largest padded length start + len passes INT_MAX: still refused
     * (it wrapped negative once, and the region ran 2^30 rows past the end) */
    const int most[1] = {1 << 30};
    const attn_problem longest = problem(1, 1, 1, 1, 1 << 30, 1 << 30, 0);
    const attn_lengths wrap[2] = {{NULL, NULL, most, most}, {most, most, NULL, NULL}};
    expect_refused(&longest, &wrap[0], "lengths: kv_start[0] + kv_len[0] = 1073741824 + "
                                       "1073741824 exceeds the padded length 1073741824");
    expect_refused(&longest, &wrap[1], "lengths: q_start[0] + q_len[0] = 1073741824 + "
                                       "1073741824 exceeds the padded length 1073741824");
}

/* sinks NaN or +inf, slopes NaN or too large; a sink of -inf is none */
static void test_refuses_nonfinite_sinks_and_slopes(void)
{
    const attn_problem ok = problem(1, 2, 1, 2, 4, 4, 0);
    attn_problem p = ok;
    float sinks[2] = {0.0f, NAN};
    p.sinks = sinks;
    expect_refused(&p, NULL, "p->sinks[1] = nan: a sink must be finite or -inf");
    sinks[1] = INFINITY;
    expect_refused(&p, NULL, "p->sinks[1] = inf: a sink must be finite or -inf");
    sinks[1] = -INFINITY;
    float x[64] = {0}, out[64];
    CU_ASSERT_EQUAL(attn_reference_forward(&p, x, x, x, out, NULL, NULL), ATTN_SUCCESS);
    p = ok;
    float slopes[2] = {NAN, 0.5f};
    p.alibi_slopes = slopes;
    expect_refused(&p, NULL, "p->alibi_slopes[0] = nan is not finite or too large");
    slopes[0] = FLT_MAX;
    expect_refused(&p, NULL, "p->alibi_slopes[0] = 3.40282e+38 is not finite or too large");
}

/* A host mask whose offset and strides overflow size_t: the indices would
 * wrap outside it. An offset of SIZE_MAX overflows only its hi + 1. */
static void test_refuses_mask_overflow(void)
{
    attn_problem p = problem(1, 2, 1, 2, 4, 4, 0);
    float mh[16] = {0};
    p.mask.host = mh, p.mask.stride_q = SIZE_MAX / 2, p.mask.stride_kv = 1;
    expect_refused(&p, NULL, "p->mask: offset and strides overflow size_t");
    p.mask.stride_q = p.mask.stride_kv = 0, p.mask.offset = SIZE_MAX;
    expect_refused(&p, NULL, "p->mask: offset and strides overflow size_t");
}

/* The rest of attn_forward's rules: a scale or a softcap its floats cannot
 * take, both kinds of sinks given. */
static void test_refuses_what_attn_forward_refuses(void)
{
    const attn_problem ok = problem(1, 2, 1, 2, 4, 4, 0);
    attn_problem p = ok;
    p.scale = FLT_MAX;
    expect_refused(&p, NULL, "p->scale = 3.40282e+38 is too large");
    p = ok;
    p.softcap = 1e-40f;
    expect_refused(&p, NULL, "is too small: scale / softcap overflows a float");
    p = ok;
    const float sinks[2] = {0.0f, 0.0f};
    p.sinks = sinks, p.sinks_buffer = (cl_mem)(uintptr_t)1; /* never read */
    expect_refused(&p, NULL, "p->sinks and p->sinks_buffer are both set");
}

/* ---- (k) in place, and inputs that share memory ---- */

/* attn_forward allows out == q (same layout) and q, k, v sharing elements;
 * the reference gives what it gives on separate arrays, bit for bit. Left
 * padding, causal with more queries than keys (rows that see nothing),
 * sinks and a mask: every kind of row. */
static void test_in_place_and_shared_inputs(void)
{
    enum { B = 2, Hq = 2, Hkv = 2, D = 4, Sq = 6, Skv = 4, NQ = B * Hq * Sq * D };
    const uint64_t seed = harness_seed(31);
    const int q_start[B] = {0, 2}, q_len[B] = {6, 4};
    const attn_lengths L = {q_start, q_len, NULL, NULL};
    const float sinks[Hq] = {0.5f, -INFINITY};
    float mask[Sq * Skv];
    harness_fill_uniform(mask, Sq * Skv, seed + 3, -1, 1);
    mask[5] = -INFINITY;
    attn_problem p = problem(B, Hq, Hkv, D, Sq, Skv, 1);
    p.sinks = sinks;
    p.mask.host = mask, p.mask.stride_q = Skv, p.mask.stride_kv = 1;
    float q[NQ], k[NQ], v[NQ], want[NQ], want_lse[B * Hq * Sq];
    float got[NQ], got_lse[B * Hq * Sq];
    harness_fill_normal(q, NQ, seed, 0, 1);
    harness_fill_normal(k, NQ, seed + 1, 0, 1);
    harness_fill_normal(v, NQ, seed + 2, 0, 1);
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, want, &L, want_lse), ATTN_SUCCESS);
    memcpy(got, q, sizeof q); /* out == q */
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, got, k, v, got, &L, got_lse), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(memcmp(got, want, sizeof got), 0);
    CU_ASSERT_EQUAL(memcmp(got_lse, want_lse, sizeof got_lse), 0);

    /* q, k and v one array (Sq = Skv, Hq = Hkv: one shape), against copies */
    p.q_len = Skv;
    const attn_lengths none = {NULL, NULL, NULL, NULL};
    float k2[NQ], v2[NQ];
    memcpy(k2, q, sizeof q);
    memcpy(v2, q, sizeof q);
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k2, v2, want, &none, want_lse),
                          ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, q, q, got, &none, got_lse), ATTN_SUCCESS);
    const size_t n = (size_t)B * Hq * Skv;
    CU_ASSERT_EQUAL(memcmp(got, want, n * D * sizeof(float)), 0);
    CU_ASSERT_EQUAL(memcmp(got_lse, want_lse, n * sizeof(float)), 0);
}

/* ---- speed: the reference must not slow the suites down ---- */

/* The reference's arithmetic without its rules: for every (head, query,
 * key) a double dot product of two contiguous rows, then the weighted sum of
 * V rows, in the reference's loop order. Its time is the same run's yardstick
 * for test_reference_speed; the result only keeps the loops from being
 * optimised away. */
static double plain_pass(const attn_problem *p, const float *q, const float *k, const float *v)
{
    const int D = p->head_dim, S = p->kv_len, group = p->q_heads / p->kv_heads;
    double *acc = calloc((size_t)D, sizeof *acc), total = 0;
    CU_ASSERT_PTR_NOT_NULL_FATAL(acc);
    for (int h = 0; h < p->q_heads; h++) {
        const float *kh = k + (size_t)(h / group) * S * D, *vh = v + (size_t)(h / group) * S * D;
        for (int i = 0; i < p->q_len; i++) {
            const float *qr = q + ((size_t)h * p->q_len + i) * D;
            for (int d = 0; d < D; d++) acc[d] = 0;
            for (int j = 0; j < S; j++) {
                const float *kr = kh + (size_t)j * D, *vr = vh + (size_t)j * D;
                double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
                for (int d = 0; d + 4 <= D; d += 4) {
                    s0 += (double)qr[d] * kr[d];
                    s1 += (double)qr[d + 1] * kr[d + 1];
                    s2 += (double)qr[d + 2] * kr[d + 2];
                    s3 += (double)qr[d + 3] * kr[d + 3];
                }
                const double w = 1e-3 * ((s0 + s1) + (s2 + s3));
                for (int d = 0; d < D; d++) acc[d] += w * vr[d];
            }
            total += acc[i % D];
        }
    }
    free(acc);
    return total;
}

static double cpu_seconds_since(clock_t t0) { return (double)(clock() - t0) / CLOCKS_PER_SEC; }

/* A lost loop order (a strided walk over K or V, a row recomputed per key)
 * makes the reference many times slower than the plain pass over the same
 * data; the rules, the exp and the checks cost about as much again. A ratio
 * measured in the same process holds under sanitizers and on slow machines,
 * where a bound in seconds did not (10.4 s against 10 under ASan on an AVX2
 * EPYC). The reference with its V mix turned d-outer measured 5.1-7.2x
 * (two machines, four runs); intact, 0.95-1.2x in release and under ASan:
 * the bound of 3 sits between them. CPU time, each the better of two runs,
 * so a busy machine cannot tip it. */
static void test_reference_speed(void)
{
    attn_problem p = problem(1, 8, 2, 64, 512, 512, 0);
    size_t nq = q_elems(&p), nkv = kv_elems(&p);
    float *q = alloc_floats(nq), *k = alloc_floats(nkv), *v = alloc_floats(nkv);
    float *out = alloc_floats(nq);
    harness_fill_normal(q, nq, 14, 0, 1);
    harness_fill_normal(k, nkv, 15, 0, 1);
    harness_fill_normal(v, nkv, 16, 0, 1);
    double t_ref = INFINITY, t_plain = INFINITY, sink = 0;
    for (int rep = 0; rep < 2; rep++) {
        clock_t t0 = clock();
        sink += plain_pass(&p, q, k, v);
        t_plain = fmin(t_plain, cpu_seconds_since(t0));
        t0 = clock();
        CU_ASSERT_EQUAL(attn_reference_forward(&p, q, k, v, out, NULL, NULL), ATTN_SUCCESS);
        t_ref = fmin(t_ref, cpu_seconds_since(t0));
    }
    const double ratio = t_ref / fmax(t_plain, 1e-6);
    printf("(B=1 Hq=8 Hkv=2 D=64 S=512, not causal: reference %.3f s, plain pass %.3f s, "
           "%.2fx%s) ", t_ref, t_plain, ratio, isfinite(sink) ? "" : "?");
    CU_ASSERT(t_plain > 0.0);
    CU_ASSERT(ratio < 3.0); /* catches a lost loop order, not noise */
    CU_ASSERT_EQUAL(count_nan(out, nq), 0);
    free(q);
    free(k);
    free(v);
    free(out);
}

/* ---- conversions ---- */

static uint16_t to_f16(float x)
{
    uint16_t h = 0;
    CU_ASSERT_EQUAL(attn_convert_from_f32(ATTN_F16, &x, &h, 1), ATTN_SUCCESS);
    return h;
}

static uint16_t to_bf16(float x)
{
    uint16_t h = 0;
    CU_ASSERT_EQUAL(attn_convert_from_f32(ATTN_BF16, &x, &h, 1), ATTN_SUCCESS);
    return h;
}

static float from16(attn_dtype t, uint16_t h)
{
    float x = 0;
    CU_ASSERT_EQUAL(attn_convert_to_f32(t, &h, &x, 1), ATTN_SUCCESS);
    return x;
}

static float bits_to_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void test_convert_f16_patterns(void)
{
    CU_ASSERT_EQUAL(to_f16(1.0f), 0x3c00);
    CU_ASSERT_EQUAL(to_f16(-2.0f), 0xc000);
    CU_ASSERT_EQUAL(to_f16(0.0f), 0x0000);
    CU_ASSERT_EQUAL(to_f16(-0.0f), 0x8000);
    CU_ASSERT_EQUAL(to_f16(65504.0f), 0x7bff);      /* the largest half */
    CU_ASSERT_EQUAL(to_f16(65519.0f), 0x7bff);      /* below the tie: rounds down */
    CU_ASSERT_EQUAL(to_f16(65520.0f), 0x7c00);      /* the tie rounds to even: inf */
    CU_ASSERT_EQUAL(to_f16(1e6f), 0x7c00);          /* overflow */
    CU_ASSERT_EQUAL(to_f16(-1e6f), 0xfc00);
    CU_ASSERT_EQUAL(to_f16(ldexpf(1, -14)), 0x0400); /* smallest normal */
    CU_ASSERT_EQUAL(to_f16(ldexpf(1, -24)), 0x0001); /* smallest subnormal */
    CU_ASSERT_EQUAL(to_f16(ldexpf(1023, -24)), 0x03ff);
    CU_ASSERT_EQUAL(to_f16(ldexpf(1, -25)), 0x0000);     /* tie with 0: even */
    CU_ASSERT_EQUAL(to_f16(ldexpf(3, -26)), 0x0001);     /* 0.75 ulp: up */
    CU_ASSERT_EQUAL(to_f16(ldexpf(3, -25)), 0x0002);     /* 1.5 ulp: tie to even 2 */
    CU_ASSERT_EQUAL(to_f16(ldexpf(5, -25)), 0x0002);     /* 2.5 ulp: tie to even 2 */
    CU_ASSERT_EQUAL(to_f16(ldexpf(2047, -25)), 0x0400);  /* 1023.5 ulp: carries to normal */
    CU_ASSERT_EQUAL(to_f16(1e-10f), 0x0000);
    CU_ASSERT_EQUAL(to_f16(1.0f + ldexpf(1, -11)), 0x3c00);   /* tie: even */
    CU_ASSERT_EQUAL(to_f16(1.0f + ldexpf(3, -11)), 0x3c02);   /* tie: even */
    CU_ASSERT_EQUAL(to_f16(1.0f + ldexpf(1, -11) + ldexpf(1, -20)), 0x3c01);
    CU_ASSERT_EQUAL(to_f16(INFINITY), 0x7c00);
    CU_ASSERT_EQUAL(to_f16(-INFINITY), 0xfc00);
    uint16_t n = to_f16(NAN);
    CU_ASSERT((n & 0x7c00) == 0x7c00 && (n & 0x03ff) != 0);
    n = to_f16(bits_to_float(0x7f800001u)); /* a NaN whose payload truncates to 0 */
    CU_ASSERT((n & 0x7c00) == 0x7c00 && (n & 0x03ff) != 0);

    CU_ASSERT_EQUAL(from16(ATTN_F16, 0x3c00), 1.0f);
    CU_ASSERT_EQUAL(from16(ATTN_F16, 0x7bff), 65504.0f);
    CU_ASSERT_EQUAL(from16(ATTN_F16, 0x0001), ldexpf(1, -24));
    CU_ASSERT_EQUAL(from16(ATTN_F16, 0x03ff), ldexpf(1023, -24));
    CU_ASSERT_EQUAL(from16(ATTN_F16, 0x7c00), INFINITY);
    CU_ASSERT_EQUAL(from16(ATTN_F16, 0xfc00), -INFINITY);
    CU_ASSERT(isnan(from16(ATTN_F16, 0x7e00)));
    CU_ASSERT(isnan(from16(ATTN_F16, 0x7c01)));
    float z = from16(ATTN_F16, 0x8000);
    CU_ASSERT(z == 0.0f && signbit(z));
}

static void test_convert_bf16_patterns(void)
{
    CU_ASSERT_EQUAL(to_bf16(1.0f), 0x3f80);
    CU_ASSERT_EQUAL(to_bf16(-1.0f), 0xbf80);
    CU_ASSERT_EQUAL(to_bf16(-0.0f), 0x8000);
    CU_ASSERT_EQUAL(to_bf16(1.0f + ldexpf(1, -8)), 0x3f80); /* tie: even */
    CU_ASSERT_EQUAL(to_bf16(1.0f + ldexpf(3, -8)), 0x3f82); /* tie: even */
    CU_ASSERT_EQUAL(to_bf16(1.0f + ldexpf(1, -8) + ldexpf(1, -20)), 0x3f81);
    CU_ASSERT_EQUAL(to_bf16(INFINITY), 0x7f80);
    CU_ASSERT_EQUAL(to_bf16(-INFINITY), 0xff80);
    CU_ASSERT_EQUAL(to_bf16(FLT_MAX), 0x7f80); /* rounds past the largest bf16 */
    CU_ASSERT_EQUAL(to_bf16(ldexpf(1, -133)), 0x0001); /* subnormals keep their top bits */
    uint16_t n = to_bf16(NAN);
    CU_ASSERT((n & 0x7f80) == 0x7f80 && (n & 0x0040) != 0); /* a quiet NaN */
    n = to_bf16(bits_to_float(0x7f800001u)); /* truncation would make it inf */
    CU_ASSERT((n & 0x7f80) == 0x7f80 && (n & 0x007f) != 0);
    n = to_bf16(bits_to_float(0xffc00000u));
    CU_ASSERT_EQUAL(n, 0xffc0);

    CU_ASSERT_EQUAL(from16(ATTN_BF16, 0x3f80), 1.0f);
    CU_ASSERT_EQUAL(from16(ATTN_BF16, 0x4049), 3.140625f);
    CU_ASSERT_EQUAL(from16(ATTN_BF16, 0xff80), -INFINITY);
    CU_ASSERT(isnan(from16(ATTN_BF16, 0x7fc0)));
}

/* Every 16-bit pattern survives 16 -> 32 -> 16 (NaNs stay NaNs). */
static void test_convert_round_trips(void)
{
    static uint16_t bits[65536], back[65536];
    static float f[65536], g[65536];
    for (int i = 0; i < 65536; i++) bits[i] = (uint16_t)i;
    const attn_dtype types[2] = {ATTN_F16, ATTN_BF16};
    for (int t = 0; t < 2; t++) {
        CU_ASSERT_EQUAL(attn_convert_to_f32(types[t], bits, f, 65536), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(attn_convert_from_f32(types[t], f, back, 65536), ATTN_SUCCESS);
        int wrong = 0;
        for (int i = 0; i < 65536; i++) {
            if (isnan(f[i])) {
                uint16_t e = types[t] == ATTN_F16 ? 0x7c00 : 0x7f80;
                uint16_t m = types[t] == ATTN_F16 ? 0x03ff : 0x007f;
                wrong += (back[i] & e) != e || (back[i] & m) == 0;
            } else {
                wrong += back[i] != bits[i];
            }
        }
        if (wrong) printf("\n  %s: %d patterns changed\n", attn_dtype_name(types[t]), wrong);
        CU_ASSERT_EQUAL(wrong, 0);
    }

    /* float -> f16 -> float moves no value by more than half an ulp. */
    harness_fill_uniform(f, 65536, 17, -70000.0f, 70000.0f);
    memcpy(g, f, sizeof f);
    harness_round(ATTN_F16, g, 65536);
    int far = 0;
    for (int i = 0; i < 65536; i++) {
        if (fabsf(f[i]) >= 65520.0f) {
            far += !isinf(g[i]);
            continue;
        }
        int e;
        frexpf(f[i], &e); /* f = m * 2^e, 0.5 <= |m| < 1: the half ulp is 2^(e-12) */
        far += fabs((double)g[i] - f[i]) > ldexp(1, (e - 1 < -14 ? -14 : e - 1) - 11);
    }
    CU_ASSERT_EQUAL(far, 0);

    /* F32 is a copy, in place too. */
    float a[3] = {1.5f, -2.25f, NAN}, b[3];
    CU_ASSERT_EQUAL(attn_convert_from_f32(ATTN_F32, a, b, 3), ATTN_SUCCESS);
    CU_ASSERT(memcmp(a, b, sizeof a) == 0);
    CU_ASSERT_EQUAL(attn_convert_to_f32(ATTN_F32, b, b, 3), ATTN_SUCCESS);
    CU_ASSERT(memcmp(a, b, sizeof a) == 0);
}

static void test_convert_errors(void)
{
    float x = 1;
    uint16_t h;
    CU_ASSERT_EQUAL(attn_convert_from_f32(ATTN_F16, NULL, &h, 1), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_convert_from_f32(ATTN_F16, &x, NULL, 1), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_convert_to_f32(ATTN_BF16, NULL, &x, 1), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_convert_to_f32(ATTN_F32, &h, NULL, 1), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_convert_from_f32((attn_dtype)7, &x, &h, 1),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_convert_to_f32((attn_dtype)7, &h, &x, 1), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_convert_from_f32(ATTN_F16, NULL, NULL, 0), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_convert_to_f32(ATTN_BF16, NULL, NULL, 0), ATTN_SUCCESS);
}

/* ---- names, sizes, tolerances, version ---- */

static void test_names_and_version(void)
{
    static const struct {
        attn_status s;
        const char *name;
    } names[] = {
        {ATTN_SUCCESS, "ATTN_SUCCESS"},
        {ATTN_ERROR_INVALID_ARGUMENT, "ATTN_ERROR_INVALID_ARGUMENT"},
        {ATTN_ERROR_UNSUPPORTED, "ATTN_ERROR_UNSUPPORTED"},
        {ATTN_ERROR_NO_DEVICE, "ATTN_ERROR_NO_DEVICE"},
        {ATTN_ERROR_OPENCL, "ATTN_ERROR_OPENCL"},
        {ATTN_ERROR_BUILD, "ATTN_ERROR_BUILD"},
        {ATTN_ERROR_OUT_OF_MEMORY, "ATTN_ERROR_OUT_OF_MEMORY"},
        {ATTN_ERROR_TUNING_DB, "ATTN_ERROR_TUNING_DB"},
        {ATTN_ERROR_IO, "ATTN_ERROR_IO"},
        {ATTN_ERROR_MISMATCH, "ATTN_ERROR_MISMATCH"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        CU_ASSERT_STRING_EQUAL(attn_status_name(names[i].s), names[i].name);
    CU_ASSERT_STRING_EQUAL(attn_status_name((attn_status)99), "ATTN_STATUS_UNKNOWN");
    CU_ASSERT_STRING_EQUAL(attn_status_name((attn_status)-1), "ATTN_STATUS_UNKNOWN");

    CU_ASSERT_EQUAL(attn_dtype_size(ATTN_F32), 4);
    CU_ASSERT_EQUAL(attn_dtype_size(ATTN_F16), 2);
    CU_ASSERT_EQUAL(attn_dtype_size(ATTN_BF16), 2);
    CU_ASSERT_EQUAL(attn_dtype_size((attn_dtype)9), 0);
    CU_ASSERT_STRING_EQUAL(attn_dtype_name(ATTN_F32), "f32");
    CU_ASSERT_STRING_EQUAL(attn_dtype_name(ATTN_F16), "f16");
    CU_ASSERT_STRING_EQUAL(attn_dtype_name(ATTN_BF16), "bf16");
    CU_ASSERT_PTR_NULL(attn_dtype_name((attn_dtype)9));

    double atol, rtol;
    attn_tolerance(ATTN_F32, &atol, &rtol);
    CU_ASSERT(atol == 1e-5 && rtol == 1e-4);
    attn_tolerance(ATTN_F16, &atol, &rtol);
    CU_ASSERT(atol == 2e-3 && rtol == 2e-3);
    attn_tolerance(ATTN_BF16, &atol, &rtol);
    CU_ASSERT(atol == 1.6e-2 && rtol == 1.6e-2);
    /* unknown enums: NaN, which no difference is within (it once gave f32's) */
    attn_tolerance((attn_dtype)9, &atol, &rtol);
    CU_ASSERT(isnan(atol) && isnan(rtol));
    attn_kv_tolerance(ATTN_KV_INT8, ATTN_F16, &atol, &rtol);
    CU_ASSERT(atol > 2e-3 && rtol > 2e-3);
    attn_kv_tolerance((attn_kv_storage)5, ATTN_F32, &atol, &rtol);
    CU_ASSERT(isnan(atol) && isnan(rtol));
    attn_kv_tolerance(ATTN_KV_INT8, (attn_dtype)9, &atol, &rtol);
    CU_ASSERT(isnan(atol) && isnan(rtol));

    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR,
             ATTN_VERSION_PATCH);
    CU_ASSERT_STRING_EQUAL(attn_version_string(), want);
    CU_ASSERT_EQUAL(attn_version(), ATTN_VERSION_NUMBER);
}

/* ---- the harness's own helpers ---- */

static void test_harness_helpers(void)
{
    /* compare: -inf == -inf passes, NaN and a wrong infinity fail. */
    float ref[4] = {1.0f, -INFINITY, 2.0f, 0.0f}, got[4] = {1.0f, -INFINITY, 2.0f, 0.0f};
    CU_ASSERT_EQUAL(harness_compare("same", got, ref, 4, 0, 0, 0), 0);
    got[2] = 2.0f + 2e-5f; /* atol 1e-5 + rtol 1e-4 * 2 = 2.1e-4: inside */
    CU_ASSERT_EQUAL(harness_compare("inside", got, ref, 4, 1e-5, 1e-4, 0), 0);
    printf("\n  (three deliberate failures follow)");
    got[2] = 2.001f;
    CU_ASSERT_EQUAL(harness_compare("outside", got, ref, 4, 1e-5, 1e-4, 0), 1);
    got[2] = 2.0f;
    got[3] = NAN;
    got[1] = INFINITY;
    CU_ASSERT_EQUAL(harness_compare("nan and +inf", got, ref, 4, 1, 1, 0), 2);
    ref[0] = NAN;
    got[0] = NAN;
    CU_ASSERT_EQUAL(harness_compare("nan in ref", got, ref, 1, 1, 1, 0), 1);

    /* The RNG is deterministic, in range, and normal fills look normal. */
    float a[1000], b[1000];
    harness_fill_uniform(a, 1000, 42, -2, 3);
    harness_fill_uniform(b, 1000, 42, -2, 3);
    CU_ASSERT(memcmp(a, b, sizeof a) == 0);
    int out_of_range = 0;
    for (int i = 0; i < 1000; i++) out_of_range += a[i] < -2 || a[i] > 3;
    CU_ASSERT_EQUAL(out_of_range, 0);
    harness_fill_uniform(b, 1000, 43, -2, 3);
    CU_ASSERT(memcmp(a, b, sizeof a) != 0);
    harness_fill_normal(a, 1000, 1, 5, 2);
    double mean = 0, var = 0;
    for (int i = 0; i < 1000; i++) mean += a[i] / 1000.0;
    for (int i = 0; i < 1000; i++) var += (a[i] - mean) * (a[i] - mean) / 999.0;
    CU_ASSERT(fabs(mean - 5) < 0.3 && fabs(sqrt(var) - 2) < 0.3);

    /* Layouts. */
    attn_tensor t;
    harness_layout bshd = {HARNESS_BSHD, 7, 2, 0};
    size_t n = harness_layout_tensor(&bshd, 2, 3, 5, 4, &t);
    CU_ASSERT(t.offset == 7 && t.stride_head == 4 && t.stride_seq == 14 &&
              t.stride_batch == 70 && n == 7 + 140);
    harness_layout cache = {HARNESS_BHSD, 0, 1, 3};
    n = harness_layout_tensor(&cache, 2, 3, 5, 4, &t);
    CU_ASSERT(t.stride_seq == 5 && t.stride_head == 40 && t.stride_batch == 120 && n == 240);
    n = harness_layout_tensor(NULL, 2, 3, 5, 4, &t);
    CU_ASSERT(t.stride_seq == 4 && t.stride_head == 20 && t.stride_batch == 60 && n == 120);
}

static const harness_test reference_tests[] = {
    HARNESS_TEST(test_zero_qk_uniform_causal),
    HARNESS_TEST(test_hand_two_keys),
    HARNESS_TEST(test_scale_head_dim),
    HARNESS_TEST(test_mask_before_softmax),
    HARNESS_TEST(test_causal_bottom_right),
    HARNESS_TEST(test_padding_left_right),
    HARNESS_TEST(test_gqa_equals_duplicated_mha),
    HARNESS_TEST(test_fully_masked_rows),
    HARNESS_TEST(test_softmax_over_keys),
    HARNESS_TEST(test_large_logits_stable),
    HARNESS_TEST(test_invalid_arguments),
    HARNESS_TEST(test_refuses_lengths_as_attn_forward),
    HARNESS_TEST(test_refuses_nonfinite_sinks_and_slopes),
    HARNESS_TEST(test_refuses_mask_overflow),
    HARNESS_TEST(test_refuses_what_attn_forward_refuses),
    HARNESS_TEST(test_in_place_and_shared_inputs),
    HARNESS_TEST(test_reference_speed),
    HARNESS_END,
};

static const harness_test convert_tests[] = {
    HARNESS_TEST(test_convert_f16_patterns),
    HARNESS_TEST(test_convert_bf16_patterns),
    HARNESS_TEST(test_convert_round_trips),
    HARNESS_TEST(test_convert_errors),
    HARNESS_TEST(test_names_and_version),
    HARNESS_TEST(test_harness_helpers),
    HARNESS_END,
};

static void register_tests(void)
{
    harness_add_suite("reference", reference_tests);
    harness_add_suite("convert_and_names", convert_tests);
}

int main(void) { return harness_run("test_reference", register_tests); }
