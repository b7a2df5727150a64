/* test_reference_variants.c -- the CPU reference's attention variants
 * (sliding window, softcap, sinks, ALiBi, the additive mask) on cases small
 * enough to work out by hand, and attn_alibi_slopes against the paper's
 * numbers. The kernels' variant suites (test_variants*) trust the
 * reference; these tests are why they may. */
#include "harness.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static attn_problem problem(int Hq, int D, int Sq, int Skv, int causal, float scale)
{
    attn_problem p;
    memset(&p, 0, sizeof p);
    p.batch = 1, p.q_heads = Hq, p.kv_heads = 1, p.head_dim = D;
    p.q_len = Sq, p.kv_len = Skv, p.dtype = ATTN_F32, p.causal = causal, p.scale = scale;
    return p;
}

/* D = 1, Q and K zero (every logit 0 before the variants), V[j] = j: each
 * output is the mean of the positions of the keys the row sees (with
 * uniform weights) and the LSE is log(count). */
#define NMAX 16
static void zero_logits(const attn_problem *p, const attn_lengths *L, float *out, float *lse)
{
    float q[NMAX] = {0}, k[NMAX] = {0}, v[NMAX];
    for (int j = 0; j < NMAX; j++) v[j] = (float)j;
    CU_ASSERT_FATAL(p->q_len * p->q_heads <= NMAX && p->kv_len <= NMAX && p->head_dim == 1);
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(p, q, k, v, out, L, lse), ATTN_SUCCESS);
}

/* Row r of a zero_logits result sees keys lo..hi: mean and log(count). */
static void expect_span(const float *out, const float *lse, int r, int lo, int hi)
{
    CU_ASSERT_DOUBLE_EQUAL(out[r], (lo + hi) / 2.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(lse[r], log(hi - lo + 1.0), 1e-6);
}

/* ---- sliding window ---- */

/* One head, D = 1, not causal, a window of left and right. */
static attn_problem windowed(int Sq, int Skv, int left, int right)
{
    attn_problem p = problem(1, 1, Sq, Skv, 0, 0.0f);
    p.use_window = 1, p.window_left = left, p.window_right = right;
    return p;
}

static void test_window_spans(void)
{
    /* Sq = Skv = 6, left 2, right 1, not causal: row i sees i-2 .. i+1. */
    attn_problem p = windowed(6, 6, 2, 1);
    float out[NMAX], lse[NMAX];
    zero_logits(&p, NULL, out, lse);
    expect_span(out, lse, 0, 0, 1);
    expect_span(out, lse, 1, 0, 2);
    expect_span(out, lse, 3, 1, 4);
    expect_span(out, lse, 5, 3, 5);
    /* causal caps the right side at the diagonal */
    p.causal = 1;
    zero_logits(&p, NULL, out, lse);
    expect_span(out, lse, 0, 0, 0);
    expect_span(out, lse, 4, 2, 4);
    /* -1 is unlimited on that side */
    p.causal = 0, p.window_left = -1, p.window_right = 0;
    zero_logits(&p, NULL, out, lse);
    expect_span(out, lse, 5, 0, 5);
    expect_span(out, lse, 2, 0, 2);
    p.window_left = 0, p.window_right = -1;
    zero_logits(&p, NULL, out, lse);
    expect_span(out, lse, 2, 2, 5);
    /* left 0, right 0: the diagonal alone */
    p.window_right = 0;
    zero_logits(&p, NULL, out, lse);
    for (int r = 0; r < 6; r++) expect_span(out, lse, r, r, r);
}

static void test_window_bottom_right_and_lengths(void)
{
    /* Sq = 2, Skv = 7: row i sits at key position i + 5; left 1, right 0. */
    attn_problem p = windowed(2, 7, 1, 0);
    float out[NMAX], lse[NMAX];
    zero_logits(&p, NULL, out, lse);
    expect_span(out, lse, 0, 4, 5);
    expect_span(out, lse, 1, 5, 6);
    /* the same with lengths: 2 queries at row 3 of 5, 4 keys at row 2 of 7:
     * content positions (i + 2) - 1 .. i + 2, buffer rows + 2 */
    const int qs[1] = {3}, ql[1] = {2}, ks[1] = {2}, kl[1] = {4};
    const attn_lengths L = {qs, ql, ks, kl};
    p.q_len = 5;
    zero_logits(&p, &L, out, lse);
    expect_span(out, lse, 3, 2 + 1, 2 + 2);
    expect_span(out, lse, 4, 2 + 2, 2 + 3);
    CU_ASSERT_EQUAL(out[0], 0.0f); /* a pad row */
    CU_ASSERT_EQUAL(lse[0], -INFINITY);
    /* Sq > Skv with a window: row 0's position is -1, which sees nothing */
    p = windowed(3, 2, 0, 0);
    zero_logits(&p, NULL, out, lse);
    CU_ASSERT_EQUAL(out[0], 0.0f);
    CU_ASSERT_EQUAL(lse[0], -INFINITY);
    expect_span(out, lse, 1, 0, 0);
    expect_span(out, lse, 2, 1, 1);
}

/* ---- softcap ---- */

/* One query, keys 0 and 1 with raw logits 0 and 3 (scale 1, D = 1), V = j. */
static void two_keys(attn_problem *p, float mask1_k0, float *out, float *lse)
{
    float q[1] = {1}, k[2] = {0, 3}, v[2] = {0, 1};
    float m[2] = {mask1_k0, 0};
    if (mask1_k0 != 0.0f) p->mask.host = m, p->mask.stride_kv = 1;
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(p, q, k, v, out, NULL, lse), ATTN_SUCCESS);
    p->mask.host = NULL;
}

static void test_softcap_by_hand(void)
{
    attn_problem p = problem(1, 1, 1, 2, 0, 1.0f);
    float out, lse;
    /* no cap: weights 1 : e^3 */
    two_keys(&p, 0.0f, &out, &lse);
    CU_ASSERT_DOUBLE_EQUAL(out, exp(3.0) / (1 + exp(3.0)), 1e-6);
    /* cap 2: s1 = 2 tanh(1.5) = 1.81...; s0 = 2 tanh(0) = 0 */
    p.softcap = 2.0f;
    const double s1 = 2.0 * tanh(1.5);
    two_keys(&p, 0.0f, &out, &lse);
    CU_ASSERT_DOUBLE_EQUAL(out, exp(s1) / (1 + exp(s1)), 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(lse, log(1 + exp(s1)), 1e-6);
    /* the mask is added after the cap: +1 on key 0 gives s0 = 1, where a
     * mask before the cap would give 2 tanh(0.5) = 0.92 */
    two_keys(&p, 1.0f, &out, &lse);
    CU_ASSERT_DOUBLE_EQUAL(out, exp(s1) / (exp(1.0) + exp(s1)), 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(lse, log(exp(1.0) + exp(s1)), 1e-6);
    /* the scale applies before the cap: scale 2 -> s1 = 2 tanh(3) */
    p.scale = 2.0f;
    two_keys(&p, 0.0f, &out, &lse);
    CU_ASSERT_DOUBLE_EQUAL(out, exp(2 * tanh(3.0)) / (1 + exp(2 * tanh(3.0))), 1e-6);
    /* a cap far above the logits changes nothing measurable */
    p.scale = 1.0f, p.softcap = 1e6f;
    two_keys(&p, 0.0f, &out, &lse);
    CU_ASSERT_DOUBLE_EQUAL(out, exp(3.0) / (1 + exp(3.0)), 1e-6);
}

/* ---- sinks ---- */

static void test_sinks_by_hand(void)
{
    /* Two heads, one key of logit 0 and V = 1: out = 1 / (1 + e^sink),
     * LSE = log(1 + e^sink). Head 0's sink ln 3 gives 1/4 and ln 4; head
     * 1's -inf is no sink: 1 and 0. */
    attn_problem p = problem(2, 1, 2, 1, 1, 0.0f);
    const float sinks[2] = {(float)log(3.0), -INFINITY};
    float q[4] = {0}, k[1] = {0}, v[1] = {1}, out[4], lse[4];
    p.sinks = sinks;
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, out, NULL, lse), ATTN_SUCCESS);
    /* causal, Sq 2 > Skv 1: row 0 has no key */
    CU_ASSERT_EQUAL(out[0], 0.0f);
    CU_ASSERT_DOUBLE_EQUAL(lse[0], sinks[0], 1e-6); /* the sink alone */
    CU_ASSERT_EQUAL(out[2], 0.0f);
    CU_ASSERT_EQUAL(lse[2], -INFINITY); /* no sink, no key */
    CU_ASSERT_DOUBLE_EQUAL(out[1], 0.25, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(lse[1], log(4.0), 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(out[3], 1.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(lse[3], 0.0, 1e-6);
    /* a sink far above the logits takes nearly all the weight, stably */
    const float big[2] = {200.0f, 200.0f};
    p.sinks = big;
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, out, NULL, lse), ATTN_SUCCESS);
    CU_ASSERT(out[1] >= 0.0f && out[1] < 1e-30f);
    CU_ASSERT_DOUBLE_EQUAL(lse[1], 200.0, 1e-4);
    /* a device buffer without the host copy: the reference cannot read it */
    p.sinks = NULL;
    p.sinks_buffer = (cl_mem)(uintptr_t)1;
    CU_ASSERT_EQUAL(attn_reference_forward(&p, q, k, v, out, NULL, lse), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(strstr(attn_last_error(NULL), "sinks") != NULL);
}

/* ---- ALiBi ---- */

static void test_alibi_slopes(void)
{
    float s[8];
    /* 8 heads, max_bias 8: the paper's 2^-1 .. 2^-8 */
    CU_ASSERT_EQUAL_FATAL(attn_alibi_slopes(8, 8.0f, s), ATTN_SUCCESS);
    for (int h = 0; h < 8; h++) CU_ASSERT_DOUBLE_EQUAL(s[h], pow(2.0, -(h + 1)), 1e-9);
    /* 6 heads: 4 from 2^-2 .. 2^-8, then 2^-1 and 2^-3 interleaved */
    const double want6[6] = {0.25, 1.0 / 16, 1.0 / 64, 1.0 / 256, 0.5, 0.125};
    CU_ASSERT_EQUAL_FATAL(attn_alibi_slopes(6, 8.0f, s), ATTN_SUCCESS);
    for (int h = 0; h < 6; h++) CU_ASSERT_DOUBLE_EQUAL(s[h], want6[h], 1e-9);
    /* max_bias 0: every slope 1 (2^0) */
    CU_ASSERT_EQUAL_FATAL(attn_alibi_slopes(3, 0.0f, s), ATTN_SUCCESS);
    for (int h = 0; h < 3; h++) CU_ASSERT_EQUAL(s[h], 1.0f);
    CU_ASSERT_EQUAL(attn_alibi_slopes(0, 8.0f, s), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_alibi_slopes(4, -1.0f, s), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_alibi_slopes(4, 8.0f, NULL), ATTN_ERROR_INVALID_ARGUMENT);
}

static void test_alibi_by_hand(void)
{
    /* Zero logits, Sq = 1, Skv = 3 not causal: position 2, biases
     * -m |j - 2| = -2m, -m, 0; with Sq = Skv = 3, row 0 (position 0) gets
     * 0, -m, -2m and row 1 -m, 0, -m: keys after the query are penalised
     * as keys before it are (it once favoured them, +m (j - p)). */
    const float slopes[2] = {0.5f, 2.0f};
    attn_problem p = problem(2, 1, 1, 3, 0, 0.0f);
    p.alibi_slopes = slopes;
    float out[NMAX], lse[NMAX];
    zero_logits(&p, NULL, out, lse);
    for (int h = 0; h < 2; h++) {
        const double m = slopes[h], w0 = exp(-2 * m), w1 = exp(-m), w2 = 1.0;
        CU_ASSERT_DOUBLE_EQUAL(out[h], (w1 + 2 * w2) / (w0 + w1 + w2), 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(lse[h], log(w0 + w1 + w2), 1e-6);
    }
    p.q_len = 3;
    zero_logits(&p, NULL, out, lse);
    const double m = 0.5, n0 = 1.0, n1 = exp(-m), n2 = exp(-2 * m);
    CU_ASSERT_DOUBLE_EQUAL(out[0], (n1 + 2 * n2) / (n0 + n1 + n2), 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(out[1], 1.0, 1e-6); /* keys 0 and 2 alike: their mean */
    CU_ASSERT_DOUBLE_EQUAL(lse[1], log(1.0 + 2 * n1), 1e-6);
    /* max_bias 8 over 2 heads: slopes 2^-4 and 2^-8, as from the array */
    float derived[2];
    CU_ASSERT_EQUAL_FATAL(attn_alibi_slopes(2, 8.0f, derived), ATTN_SUCCESS);
    CU_ASSERT_DOUBLE_EQUAL(derived[0], 1.0 / 16, 1e-9);
    float out2[NMAX], lse2[NMAX];
    p.alibi_slopes = derived;
    zero_logits(&p, NULL, out, lse);
    p.alibi_slopes = NULL, p.alibi_max_bias = 8.0f;
    zero_logits(&p, NULL, out2, lse2);
    CU_ASSERT_EQUAL(harness_compare("alibi max_bias vs slopes", out2, out, 6, 1e-7, 1e-7, 0), 0);
    CU_ASSERT_EQUAL(harness_compare("alibi max_bias vs slopes LSE", lse2, lse, 6, 1e-7, 1e-7, 0), 0);
    /* 6 heads, not a power of two: the first 4 take 2^-2, 2^-4, 2^-6,
     * 2^-8 (max_bias / 4 a step), the other two the odd powers of the
     * half step between them, 2^-1 and 2^-3 */
    static const float want6[6] = {0x1p-2f, 0x1p-4f, 0x1p-6f, 0x1p-8f, 0x1p-1f, 0x1p-3f};
    attn_problem p6 = problem(6, 1, 1, 3, 0, 0.0f);
    p6.alibi_slopes = want6;
    zero_logits(&p6, NULL, out, lse);
    p6.alibi_slopes = NULL, p6.alibi_max_bias = 8.0f;
    zero_logits(&p6, NULL, out2, lse2);
    CU_ASSERT_EQUAL(harness_compare("alibi 6 heads: max_bias vs slopes", out2, out, 6, 1e-7, 1e-7,
                                    0), 0);
    CU_ASSERT_EQUAL(harness_compare("alibi 6 heads: max_bias vs slopes LSE", lse2, lse, 6, 1e-7,
                                    1e-7, 0), 0);
}

/* ---- the additive mask ---- */

static void test_mask_by_hand(void)
{
    /* Two batch entries, one head, Sq = 2, Skv = 4, zero logits. The mask
     * is [B][1][Sq][Skv] with an offset and padded rows (stride_q 6):
     * entry 0 row 0 hides keys 1 and 3; row 1 adds ln 3 to key 2. Entry 1
     * broadcasts nothing special: its row 0 is all -inf (no key: zeros,
     * -inf), its row 1 is all -1e30, which is not below the masking
     * threshold: softmax shift-invariance gives the plain mean. */
    enum { OFF = 2, SQ = 6 };
    const float NI = -INFINITY, ln3 = (float)log(3.0);
    float mask[OFF + 2 * 2 * SQ];
    for (size_t i = 0; i < sizeof mask / sizeof mask[0]; i++) mask[i] = NAN; /* gaps */
    const float rows[4][4] = {{0, NI, 0, NI}, {0, 0, ln3, 0}, {NI, NI, NI, NI},
                              {-1e30f, -1e30f, -1e30f, -1e30f}};
    for (int r = 0; r < 4; r++) memcpy(mask + OFF + r * SQ, rows[r], sizeof rows[r]);
    attn_problem p = problem(1, 1, 2, 4, 0, 0.0f);
    p.batch = 2;
    p.mask.host = mask, p.mask.offset = OFF;
    p.mask.stride_batch = 2 * SQ, p.mask.stride_head = 0, p.mask.stride_q = SQ, p.mask.stride_kv = 1;
    float q[4] = {0}, k[8] = {0}, v[8] = {0, 1, 2, 3, 0, 1, 2, 3}, out[4], lse[4];
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, out, NULL, lse), ATTN_SUCCESS);
    CU_ASSERT_DOUBLE_EQUAL(out[0], 1.0, 1e-6); /* keys 0 and 2 */
    CU_ASSERT_DOUBLE_EQUAL(lse[0], log(2.0), 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(out[1], (0 + 1 + 3 * 2 + 3) / 6.0, 1e-6); /* weights 1, 1, 3, 1 */
    CU_ASSERT_DOUBLE_EQUAL(lse[1], log(6.0), 1e-6);
    CU_ASSERT_EQUAL(out[2], 0.0f);
    CU_ASSERT_EQUAL(lse[2], -INFINITY);
    CU_ASSERT_DOUBLE_EQUAL(out[3], 1.5, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(lse[3], -1e30 + log(4.0), 1e24);
    /* a NaN in an element the mask applies to hides the key, as -inf does
     * (core.h): row 1 without key 3, weights 1, 1, 3 */
    mask[OFF + SQ + 3] = NAN;
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, out, NULL, lse), ATTN_SUCCESS);
    CU_ASSERT_DOUBLE_EQUAL(out[1], (0 + 1 + 3 * 2) / 5.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(lse[1], log(5.0), 1e-6);
    /* -FLT_MAX (the "finfo.min" of other libraries) masks like -inf */
    for (int j = 0; j < 4; j++) mask[OFF + 2 * SQ + j] = -FLT_MAX;
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, out, NULL, lse), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(out[2], 0.0f);
    CU_ASSERT_EQUAL(lse[2], -INFINITY);
    /* a buffer without the host copy cannot be read by the reference */
    p.mask.host = NULL;
    p.mask.buffer = (cl_mem)(uintptr_t)1;
    CU_ASSERT_EQUAL(attn_reference_forward(&p, q, k, v, out, NULL, lse), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(strstr(attn_last_error(NULL), "mask") != NULL);
}

static void test_mask_buffer_rows_and_heads(void)
{
    /* Element [b][h][r][c] is by buffer rows: with 1 query at row 2 of 3
     * and 2 keys at rows 1..2 of 4, only column 1..2 of mask row 2 count.
     * Two heads with stride_head 0 share it; a third key row (col 3, pad)
     * is NaN and must never be read. */
    const float NI = -INFINITY;
    float mask[3 * 4] = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, 0, NI, NAN};
    attn_problem p = problem(2, 1, 3, 4, 0, 0.0f);
    p.mask.host = mask, p.mask.stride_q = 4, p.mask.stride_kv = 1;
    const int qs[1] = {2}, ql[1] = {1}, ks[1] = {1}, kl[1] = {2};
    const attn_lengths L = {qs, ql, ks, kl};
    float q[6] = {0}, k[4] = {0}, v[4] = {10, 20, 30, 40}, out[6], lse[6];
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, out, &L, lse), ATTN_SUCCESS);
    for (int h = 0; h < 2; h++) {
        CU_ASSERT_DOUBLE_EQUAL(out[h * 3 + 2], 20.0, 1e-5); /* key row 1 alone */
        CU_ASSERT_DOUBLE_EQUAL(lse[h * 3 + 2], 0.0, 1e-6);
        CU_ASSERT_EQUAL(lse[h * 3], -INFINITY); /* pad rows */
    }
}

/* ---- everything at once, by hand ---- */

static void test_all_variants_by_hand(void)
{
    /* One query (position 3 of Skv 4, causal), window left 1: keys 2 and 3.
     * Raw logits 0 and 3 (scale 1, D 1, k = j-dependent); softcap 2; ALiBi
     * slope 0.5 adds -0.5 and 0; the mask adds ln 2 to key 3; sink 1:
     *   s2 = 0 - 0.5, s3 = 2 tanh(1.5) + ln 2, and the sink's e^1. */
    const float slope[1] = {0.5f}, sink[1] = {1.0f};
    float mask[4] = {NAN, NAN, 0, (float)log(2.0)}; /* keys 0, 1 outside the window */
    attn_problem p = problem(1, 1, 1, 4, 1, 1.0f);
    p.use_window = 1, p.window_left = 1, p.window_right = -1;
    p.softcap = 2.0f, p.alibi_slopes = slope, p.sinks = sink;
    p.mask.host = mask, p.mask.stride_kv = 1;
    float q[1] = {1}, k[4] = {NAN, NAN, 0, 3}, v[4] = {NAN, NAN, 5, 7}, out, lse;
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, &out, NULL, &lse), ATTN_SUCCESS);
    const double e2 = exp(-0.5), e3 = exp(2 * tanh(1.5) + log(2.0)), es = exp(1.0);
    CU_ASSERT_DOUBLE_EQUAL(out, (5 * e2 + 7 * e3) / (e2 + e3 + es), 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(lse, log(e2 + e3 + es), 1e-6);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_window_spans),
    HARNESS_TEST(test_window_bottom_right_and_lengths),
    HARNESS_TEST(test_softcap_by_hand),
    HARNESS_TEST(test_sinks_by_hand),
    HARNESS_TEST(test_alibi_slopes),
    HARNESS_TEST(test_alibi_by_hand),
    HARNESS_TEST(test_mask_by_hand),
    HARNESS_TEST(test_mask_buffer_rows_and_heads),
    HARNESS_TEST(test_all_variants_by_hand),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("reference_variants", tests); }

int main(void) { return harness_run("test_reference_variants", register_tests); }
