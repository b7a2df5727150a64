/* test_seed_failures.c -- the seed's "Common implementation failures", one
 * test each, run on the real kernels: the default family (the library's own
 * choice for the device) and the tiled family. Each test is built so that
 * the buggy behaviour it names would fail it; then the seed's exercises
 * (zero Q and K, the causal table for length 5).
 *
 * Shapes are small and share head dims with test_forward (16, 64), so the
 * programs they need are mostly built once. */
#define _POSIX_C_SOURCE 200809L
#include "cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The library's choice (the heuristic); then the tiled family. */
static const harness_family families[] = {HARNESS_AUTO, HARNESS_TILED};
#define NFAM 2
static const char *fam_name(int f) { return harness_family_name(families[f]); }

static size_t nq_of(const attn_problem *p)
{
    return (size_t)p->batch * p->q_heads * p->q_len * p->head_dim;
}
static size_t nkv_of(const attn_problem *p)
{
    return (size_t)p->batch * p->kv_heads * p->kv_len * p->head_dim;
}
static size_t rows_of(const attn_problem *p) { return (size_t)p->batch * p->q_heads * p->q_len; }

/* Runs the kernel on host BHSD inputs with the given layouts (NULL = packed
 * BHSD) under family f through the shared runner; writes O (BHSD floats)
 * and, if lse is not NULL, LSE. Returns 0, or the number of failed checks
 * (the call's error printed). */
static int kernel_run_layout(harness_family f, const attn_problem *p, const attn_lengths *L,
                             const float *q, const float *k, const float *v,
                             const harness_layout *lq, const harness_layout *lk,
                             const harness_layout *lv, const harness_layout *lo, float *out,
                             float *lse)
{
    const harness_case c = harness_case_of("seed failure", p, L, lq, lk, lv, lo);
    return harness_case_exec(&c, f, attn_forward, "attn_forward", q, k, v, out, lse);
}

static int kernel_run(harness_family f, const attn_problem *p, const attn_lengths *L,
                      const float *q, const float *k, const float *v, float *out, float *lse)
{
    return kernel_run_layout(f, p, L, q, k, v, NULL, NULL, NULL, NULL, out, lse);
}

static double max_abs_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (isnan(d)) return INFINITY;
        if (d > m) m = d;
    }
    return m;
}

#define F32_ATOL 1e-5
#define F32_RTOL 1e-4

/* ---- 1. wrong scaling dimension: 1/sqrt(d_head), never 1/sqrt(d_model) ---- */

static void test_scale_is_head_dim(void)
{
    /* Hq = 4 heads of D = 16: d_model = 64, so the wrong scale is half the
     * right one. Q and K with deviation 2 make the logits matter. */
    const uint64_t seed = harness_seed(2001);
    attn_problem p = harness_problem(1, 4, 2, 16, 9, 9, 1);
    const size_t nq = nq_of(&p), nkv = nkv_of(&p), rows = rows_of(&p);
    float *q = harness_xalloc(nq), *k = harness_xalloc(nkv), *v = harness_xalloc(nkv);
    float *out = harness_xalloc(nq), *lse = harness_xalloc(rows), *wrong = harness_xalloc(nq),
          *wl = harness_xalloc(rows);
    harness_fill_qkv(q, nq, k, v, nkv, seed, 2, -1, 1);

    attn_problem bad = p;
    bad.scale = (float)(1.0 / sqrt((double)p.q_heads * p.head_dim));
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&bad, q, k, v, wrong, NULL, wl), ATTN_SUCCESS);
    for (int f = 0; f < NFAM; f++) {
        if (kernel_run(families[f], &p, NULL, q, k, v, out, lse) != 0) {
            CU_FAIL("attn_forward failed");
            continue;
        }
        CU_ASSERT_EQUAL(harness_check_reference(fam_name(f), &p, NULL, q, k, v, out, lse, seed), 0);
        double d = max_abs_diff(out, wrong, nq), dl = max_abs_diff(lse, wl, rows);
        if (d < 0.05 || dl < 0.05)
            printf("\n  [%s] output is too close to the 1/sqrt(d_model) answer: %g (LSE %g), "
                   "seed %llu\n", fam_name(f), d, dl, (unsigned long long)seed);
        CU_ASSERT(d >= 0.05); /* the d_model answer is far outside any tolerance */
        CU_ASSERT(dl >= 0.05);
    }
    free(q), free(k), free(v), free(out), free(lse), free(wrong), free(wl);
}

/* ---- 2. masking after softmax ---- */

static void test_mask_before_softmax_v_ones(void)
{
    /* V = 1 everywhere: every row that sees any key outputs exactly 1, since
     * its weights sum to one. Zeroing masked probabilities after the softmax
     * would leave sums below one. Large logits (deviation 3) make the masked
     * keys' share large. Padded batch entries and Sq > Skv leave some rows
     * empty: those are 0. */
    const uint64_t seed = harness_seed(2002);
    enum { B = 3, H = 2, S = 23 };
    static const int qs[B] = {0, 4, 0}, ql[B] = {23, 19, 23}, ks[B] = {0, 0, 6},
                     kl[B] = {23, 15, 9};
    attn_lengths L = {qs, ql, ks, kl};
    for (int causal = 0; causal <= 1; causal++) {
        attn_problem p = harness_problem(B, H, H, 16, S, S, causal);
        const size_t n = nq_of(&p), rows = rows_of(&p);
        float *q = harness_xalloc(n), *k = harness_xalloc(n), *v = harness_xalloc(n),
              *out = harness_xalloc(n), *lse = harness_xalloc(rows);
        harness_fill_normal(q, n, seed + causal, 0, 3);
        harness_fill_normal(k, n, seed + 10 + causal, 0, 3);
        for (size_t i = 0; i < n; i++) v[i] = 1.0f;
        for (int f = 0; f < NFAM; f++) {
            if (kernel_run(families[f], &p, &L, q, k, v, out, lse) != 0) {
                CU_FAIL("attn_forward failed");
                continue;
            }
            int bad = 0;
            for (int b = 0; b < B; b++)
                for (int h = 0; h < H; h++)
                    for (int r = 0; r < S; r++) {
                        int i = r - qs[b];
                        int vis = i >= 0 && i < ql[b] ? kl[b] : 0;
                        if (causal && vis > i + kl[b] - ql[b] + 1) vis = i + kl[b] - ql[b] + 1;
                        if (vis < 0) vis = 0;
                        const float *o = out + (((size_t)b * H + h) * S + r) * 16;
                        for (int d = 0; d < 16; d++) {
                            float want = vis > 0 ? 1.0f : 0.0f;
                            if (!(fabsf(o[d] - want) <= F32_ATOL + F32_RTOL * want)) {
                                if (!bad)
                                    printf("\n  [%s] causal=%d V=1: out[b%d h%d s%d d%d] = %.9g, "
                                           "want %g, seed %llu\n", fam_name(f), causal, b, h, r,
                                           d, o[d], want, (unsigned long long)seed);
                                bad++;
                            }
                        }
                    }
            CU_ASSERT_EQUAL(bad, 0);
            CU_ASSERT_EQUAL(harness_check_reference(fam_name(f), &p, &L, q, k, v, out, lse, seed),
                            0);
        }
        free(q), free(k), free(v), free(out), free(lse);
    }
}

static void test_mask_future_does_not_leak(void)
{
    /* Causal, S = 37. First run: random Q, K, V. Second run: K and V rows of
     * every position after row i0 replaced by huge values (K = 30, V = 1e4).
     * Rows 0..i0 see none of them, so they must not change at all; a mask
     * applied after the softmax (or after a max taken over all keys) would
     * let them in or wash the visible weights out. */
    const uint64_t seed = harness_seed(2003);
    enum { H = 2, S = 37, D = 16, I0 = 17 };
    attn_problem p = harness_problem(1, H, H, D, S, S, 1);
    const size_t n = nq_of(&p), rows = rows_of(&p);
    float *q = harness_xalloc(n), *k = harness_xalloc(n), *v = harness_xalloc(n),
          *k2 = harness_xalloc(n), *v2 = harness_xalloc(n);
    float *o1 = harness_xalloc(n), *o2 = harness_xalloc(n), *l1 = harness_xalloc(rows),
          *l2 = harness_xalloc(rows);
    harness_fill_qkv(q, n, k, v, n, seed, 1, -1, 1);
    memcpy(k2, k, n * sizeof *k);
    memcpy(v2, v, n * sizeof *v);
    for (int h = 0; h < H; h++)
        for (int j = I0 + 1; j < S; j++)
            for (int d = 0; d < D; d++) {
                k2[((size_t)h * S + j) * D + d] = 30.0f;
                v2[((size_t)h * S + j) * D + d] = 1e4f;
            }
    for (int f = 0; f < NFAM; f++) {
        if (kernel_run(families[f], &p, NULL, q, k, v, o1, l1) != 0 ||
            kernel_run(families[f], &p, NULL, q, k2, v2, o2, l2) != 0) {
            CU_FAIL("attn_forward failed");
            continue;
        }
        CU_ASSERT_EQUAL(harness_check_reference(fam_name(f), &p, NULL, q, k, v, o1, l1, seed), 0);
        CU_ASSERT_EQUAL(harness_check_reference(fam_name(f), &p, NULL, q, k2, v2, o2, l2, seed), 0);
        for (int h = 0; h < H; h++) {
            const size_t at = (size_t)h * S * D, nrow = (size_t)(I0 + 1) * D;
            char w[64];
            snprintf(w, sizeof w, "[%s] rows 0..%d with future K/V changed", fam_name(f), I0);
            CU_ASSERT_EQUAL(harness_compare(w, o2 + at, o1 + at, nrow, F32_ATOL, F32_RTOL, seed),
                            0);
            snprintf(w, sizeof w, "[%s] LSE 0..%d with future K changed", fam_name(f), I0);
            CU_ASSERT_EQUAL(harness_compare(w, l2 + h * S, l1 + h * S, I0 + 1, F32_ATOL, F32_RTOL,
                                            seed), 0);
            /* and the changed rows did arrive for the later queries */
            CU_ASSERT(max_abs_diff(o2 + at + nrow, o1 + at + nrow, (size_t)S * D - nrow) > 1.0);
        }
    }
    free(q), free(k), free(v), free(k2), free(v2), free(o1), free(o2), free(l1), free(l2);
}

/* ---- 3. softmax over the wrong axis ---- */

static void test_softmax_over_keys(void)
{
    /* Non-causal, scale 1, Sq = 4 queries against Skv = 6 keys, D = 16 with
     * only the first component used: logit(i, j) = a_i * b_j. V = identity
     * (D >= Skv), so output row i is the weight row i. Normalised over keys
     * each row sums to one; normalised over queries (columns) it would not,
     * and the values differ. */
    enum { Sq = 4, Skv = 6, D = 16 };
    attn_problem p = harness_problem(1, 1, 1, D, Sq, Skv, 0);
    p.scale = 1.0f;
    const float a[Sq] = {0.5f, 1.0f, -1.5f, 2.0f}, bk[Skv] = {-1.0f, 0.2f, 0.7f, 1.1f, -0.4f, 1.6f};
    float q[Sq * D] = {0}, k[Skv * D] = {0}, v[Skv * D] = {0}, out[Sq * D], lse[Sq];
    for (int i = 0; i < Sq; i++) q[i * D] = a[i];
    for (int j = 0; j < Skv; j++) {
        k[j * D] = bk[j];
        v[j * D + j] = 1.0f;
    }
    /* the wrong-axis weights, column-normalised */
    double col[Sq][Skv];
    for (int j = 0; j < Skv; j++) {
        double s = 0;
        for (int i = 0; i < Sq; i++) s += exp((double)a[i] * bk[j]);
        for (int i = 0; i < Sq; i++) col[i][j] = exp((double)a[i] * bk[j]) / s;
    }
    for (int f = 0; f < NFAM; f++) {
        if (kernel_run(families[f], &p, NULL, q, k, v, out, lse) != 0) {
            CU_FAIL("attn_forward failed");
            continue;
        }
        CU_ASSERT_EQUAL(harness_check_reference(fam_name(f), &p, NULL, q, k, v, out, lse, 0), 0);
        double far = 0;
        for (int i = 0; i < Sq; i++) {
            double sum = 0;
            for (int j = 0; j < Skv; j++) {
                sum += out[i * D + j];
                far = fmax(far, fabs(out[i * D + j] - col[i][j]));
                /* the row's own softmax, by hand */
                double z = 0;
                for (int jj = 0; jj < Skv; jj++) z += exp((double)a[i] * bk[jj]);
                CU_ASSERT_DOUBLE_EQUAL(out[i * D + j], exp((double)a[i] * bk[j]) / z, 1e-5);
            }
            CU_ASSERT_DOUBLE_EQUAL(sum, 1.0, 1e-5); /* each query's weights sum to one */
            for (int d = Skv; d < D; d++) CU_ASSERT_EQUAL(out[i * D + d], 0.0f);
        }
        CU_ASSERT(far > 0.1); /* the column-normalised answer is far away */
    }
}

static void test_causal_row0_is_v0(void)
{
    /* Under causal with Sq = Skv, row 0 sees only key 0: its output is V[0]
     * whatever Q and K are (a softmax over queries would mix rows). */
    const uint64_t seed = harness_seed(2004);
    attn_problem p = harness_problem(2, 4, 2, 64, 19, 19, 1);
    const size_t nq = nq_of(&p), nkv = nkv_of(&p), rows = rows_of(&p);
    float *q = harness_xalloc(nq), *k = harness_xalloc(nkv), *v = harness_xalloc(nkv),
          *out = harness_xalloc(nq), *lse = harness_xalloc(rows);
    harness_fill_qkv(q, nq, k, v, nkv, seed, 2, -3, 3);
    for (int f = 0; f < NFAM; f++) {
        if (kernel_run(families[f], &p, NULL, q, k, v, out, lse) != 0) {
            CU_FAIL("attn_forward failed");
            continue;
        }
        CU_ASSERT_EQUAL(harness_check_reference(fam_name(f), &p, NULL, q, k, v, out, lse, seed), 0);
        for (int b = 0; b < 2; b++)
            for (int h = 0; h < 4; h++) {
                const float *o = out + ((size_t)b * 4 + h) * 19 * 64;
                const float *v0 = v + ((size_t)b * 2 + h / 2) * 19 * 64;
                char w[64];
                snprintf(w, sizeof w, "[%s] row 0 == V[0] (b%d h%d)", fam_name(f), b, h);
                CU_ASSERT_EQUAL(harness_compare(w, o, v0, 64, F32_ATOL, F32_RTOL, seed), 0);
                /* LSE of a single key is that key's scaled logit */
                const float *q0 = q + ((size_t)b * 4 + h) * 19 * 64;
                const float *k0 = k + ((size_t)b * 2 + h / 2) * 19 * 64;
                double logit = 0;
                for (int d = 0; d < 64; d++) logit += (double)q0[d] * k0[d];
                CU_ASSERT_DOUBLE_EQUAL(lse[(b * 4 + h) * 19], logit / 8.0,
                                       F32_ATOL + F32_RTOL * fabs(logit / 8.0));
            }
    }
    free(q), free(k), free(v), free(out), free(lse);
}

/* ---- 4. silent transpose errors ---- */

static void test_layouts_same_logical_tensor(void)
{
    /* A non-square problem: Sq = 5, Skv = 11, Hq = 6, Hkv = 2, D = 16, so no
     * two of the dimensions coincide and a read with axes swapped indexes
     * different elements (or past the end, into NaN). The same logical
     * tensors laid out BHSD, BSHD and mixed must give the same output. */
    const uint64_t seed = harness_seed(2005);
    attn_problem p = harness_problem(2, 6, 2, 16, 5, 11, 1);
    const size_t nq = nq_of(&p), nkv = nkv_of(&p), rows = rows_of(&p);
    float *q = harness_xalloc(nq), *k = harness_xalloc(nkv), *v = harness_xalloc(nkv);
    float *o_bhsd = harness_xalloc(nq), *o_bshd = harness_xalloc(nq), *o_mix = harness_xalloc(nq),
          *lse = harness_xalloc(rows);
    harness_fill_qkv(q, nq, k, v, nkv, seed, 1, -1, 1);
    static const harness_layout bshd = {HARNESS_BSHD, 0, 0, 0};
    static const harness_layout bshd_pad = {HARNESS_BSHD, 7, 5, 3};
    static const harness_layout bhsd_pad = {HARNESS_BHSD, 2, 3, 4};
    for (int f = 0; f < NFAM; f++) {
        if (kernel_run(families[f], &p, NULL, q, k, v, o_bhsd, lse) != 0 ||
            kernel_run_layout(families[f], &p, NULL, q, k, v, &bshd, &bshd, &bshd, &bshd, o_bshd,
                              NULL) != 0 ||
            kernel_run_layout(families[f], &p, NULL, q, k, v, &bshd_pad, &bhsd_pad, &bshd,
                              &bhsd_pad, o_mix, NULL) != 0) {
            CU_FAIL("attn_forward failed");
            continue;
        }
        CU_ASSERT_EQUAL(harness_check_reference(fam_name(f), &p, NULL, q, k, v, o_bhsd, lse, seed),
                        0);
        char w[64];
        snprintf(w, sizeof w, "[%s] BSHD vs BHSD", fam_name(f));
        CU_ASSERT_EQUAL(harness_compare(w, o_bshd, o_bhsd, nq, F32_ATOL, F32_RTOL, seed), 0);
        snprintf(w, sizeof w, "[%s] mixed layouts vs BHSD", fam_name(f));
        CU_ASSERT_EQUAL(harness_compare(w, o_mix, o_bhsd, nq, F32_ATOL, F32_RTOL, seed), 0);
    }

    /* The same data read as if it were BSHD when it is BHSD (the silent
     * transpose) gives a different answer: the test above can tell. */
    float *qt = harness_xalloc(nq), *o_t = harness_xalloc(nq);
    for (int h = 0; h < 6; h++)
        for (int s = 0; s < 5; s++)
            for (int b = 0; b < 2; b++)
                memcpy(qt + (((size_t)b * 6 + h) * 5 + s) * 16, /* [b][h][s] of the BSHD read */
                       q + ((((size_t)b * 5 + s) * 6 + h)) * 16, 16 * sizeof(float));
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, qt, k, v, o_t, NULL, NULL), ATTN_SUCCESS);
    CU_ASSERT(max_abs_diff(o_t, o_bhsd, nq) > 0.05);
    free(qt), free(o_t), free(q), free(k), free(v), free(o_bhsd), free(o_bshd), free(o_mix),
    free(lse);
}

static void test_qkt_not_kqt(void)
{
    /* Asymmetric Q and K (different distributions) with Sq = Skv, so that
     * K Q^T is computable: the kernel must match softmax(Q K^T) V and be
     * measurably far from softmax(K Q^T) V, in both masking modes. */
    const uint64_t seed = harness_seed(2006);
    for (int causal = 0; causal <= 1; causal++) {
        attn_problem p = harness_problem(1, 2, 2, 16, 13, 13, causal);
        const size_t n = nq_of(&p), rows = rows_of(&p);
        float *q = harness_xalloc(n), *k = harness_xalloc(n), *v = harness_xalloc(n),
              *out = harness_xalloc(n), *lse = harness_xalloc(rows);
        float *swapped = harness_xalloc(n);
        harness_fill_normal(q, n, seed + causal, 0.5f, 2.0f);
        harness_fill_uniform(k, n, seed + 10 + causal, -3.0f, 1.0f);
        harness_fill_uniform(v, n, seed + 20 + causal, -1.0f, 1.0f);
        CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, k, q, v, swapped, NULL, NULL),
                              ATTN_SUCCESS);
        for (int f = 0; f < NFAM; f++) {
            if (kernel_run(families[f], &p, NULL, q, k, v, out, lse) != 0) {
                CU_FAIL("attn_forward failed");
                continue;
            }
            CU_ASSERT_EQUAL(harness_check_reference(fam_name(f), &p, NULL, q, k, v, out, lse, seed),
                            0);
            CU_ASSERT(max_abs_diff(out, swapped, n) > 0.05);
        }
        free(q), free(k), free(v), free(out), free(lse), free(swapped);
    }
}

/* ---- 5. KV cache position drift ---- */

/* Copies rows [start, start + len) of every head of batch entry b of a BHSD
 * tensor [B, H, S, D] into dst [H, len, D]. */
static void take_rows(const float *src, int b, int H, int S, int D, int start, int len, float *dst)
{
    for (int h = 0; h < H; h++)
        memcpy(dst + (size_t)h * len * D, src + (((size_t)b * H + h) * S + start) * D,
               (size_t)len * D * sizeof(float));
}

static void test_left_padding_matches_unpadded(void)
{
    /* Batch entry 0 is left-padded: its queries and keys sit at the end of
     * the buffers (start = S - len). Entry 1 is full. Each entry must equal
     * the same content run on its own, unpadded. A kernel that counted
     * positions from the buffer start instead of from kv_start (or aligned
     * causality to the buffer) would drift. */
    const uint64_t seed = harness_seed(2007);
    enum { B = 2, Hq = 4, Hkv = 2, D = 16, S = 29 };
    static const int qs[B] = {10, 0}, ql[B] = {19, 29}, ks[B] = {8, 0}, kl[B] = {21, 29};
    attn_lengths L = {qs, ql, ks, kl};
    attn_problem p = harness_problem(B, Hq, Hkv, D, S, S, 1);
    const size_t nq = nq_of(&p), nkv = nkv_of(&p), rows = rows_of(&p);
    float *q = harness_xalloc(nq), *k = harness_xalloc(nkv), *v = harness_xalloc(nkv),
          *out = harness_xalloc(nq), *lse = harness_xalloc(rows);
    harness_fill_qkv(q, nq, k, v, nkv, seed, 1, -1, 1);
    for (int f = 0; f < NFAM; f++) {
        if (kernel_run(families[f], &p, &L, q, k, v, out, lse) != 0) {
            CU_FAIL("attn_forward failed");
            continue;
        }
        CU_ASSERT_EQUAL(harness_check_reference(fam_name(f), &p, &L, q, k, v, out, lse, seed), 0);
        for (int b = 0; b < B; b++) {
            attn_problem u = harness_problem(1, Hq, Hkv, D, ql[b], kl[b], 1);
            float *uq = harness_xalloc(nq_of(&u)), *uk = harness_xalloc(nkv_of(&u)),
                  *uv = harness_xalloc(nkv_of(&u));
            float *uo = harness_xalloc(nq_of(&u)), *ul = harness_xalloc(rows_of(&u));
            take_rows(q, b, Hq, S, D, qs[b], ql[b], uq);
            take_rows(k, b, Hkv, S, D, ks[b], kl[b], uk);
            take_rows(v, b, Hkv, S, D, ks[b], kl[b], uv);
            if (kernel_run(families[f], &u, NULL, uq, uk, uv, uo, ul) == 0) {
                float *po = harness_xalloc(nq_of(&u)), *pl = harness_xalloc(rows_of(&u));
                take_rows(out, b, Hq, S, D, qs[b], ql[b], po);
                for (int h = 0; h < Hq; h++)
                    memcpy(pl + (size_t)h * ql[b], lse + ((size_t)b * Hq + h) * S + qs[b],
                           (size_t)ql[b] * sizeof(float));
                char w[80];
                snprintf(w, sizeof w, "[%s] entry %d padded vs unpadded O", fam_name(f), b);
                CU_ASSERT_EQUAL(harness_compare(w, po, uo, nq_of(&u), F32_ATOL, F32_RTOL, seed), 0);
                snprintf(w, sizeof w, "[%s] entry %d padded vs unpadded LSE", fam_name(f), b);
                CU_ASSERT_EQUAL(harness_compare(w, pl, ul, rows_of(&u), F32_ATOL, F32_RTOL, seed),
                                0);
                /* the pad rows of the padded run are zeros */
                for (int h = 0; h < Hq; h++)
                    for (int r = 0; r < qs[b]; r++)
                        for (int d = 0; d < D; d++)
                            CU_ASSERT_EQUAL(out[(((size_t)b * Hq + h) * S + r) * D + d], 0.0f);
                free(po);
                free(pl);
            } else {
                CU_FAIL("attn_forward (unpadded) failed");
            }
            free(uq), free(uk), free(uv), free(uo), free(ul);
        }
    }
    free(q), free(k), free(v), free(out), free(lse);
}

static void test_kv_cache_shift_and_decode(void)
{
    /* A cache of capacity 64 (plus spare rows past it in the tensor layout)
     * holding N = 27 tokens at kv_start = 9. Decoding the last token (Sq =
     * 1) and a chunk of the last 3 tokens (Sq = 3) must equal the matching
     * rows of a full causal prefill over the same 27 tokens computed
     * unshifted: the cached and uncached paths agree on positions. */
    const uint64_t seed = harness_seed(2008);
    enum { H = 2, D = 16, N = 27, CAP = 64, SHIFT = 9 };
    attn_problem full = harness_problem(1, H, H, D, N, N, 1);
    const size_t nf = nq_of(&full);
    float *q = harness_xalloc(nf), *k = harness_xalloc(nf), *v = harness_xalloc(nf),
          *of = harness_xalloc(nf), *lf = harness_xalloc(H * N);
    harness_fill_qkv(q, nf, k, v, nf, seed, 1, -1, 1);

    /* the shifted cache: [1, H, CAP, D], content at rows SHIFT .. SHIFT+N-1,
     * the rest garbage (large values that must never be read) */
    attn_problem cache = harness_problem(1, H, H, D, 1, CAP, 1);
    float *kc = harness_xalloc(nkv_of(&cache)), *vc = harness_xalloc(nkv_of(&cache));
    for (size_t i = 0; i < nkv_of(&cache); i++) {
        kc[i] = 25.0f;
        vc[i] = -1e4f;
    }
    for (int h = 0; h < H; h++) {
        memcpy(kc + ((size_t)h * CAP + SHIFT) * D, k + (size_t)h * N * D,
               (size_t)N * D * sizeof(float));
        memcpy(vc + ((size_t)h * CAP + SHIFT) * D, v + (size_t)h * N * D,
               (size_t)N * D * sizeof(float));
    }
    static const harness_layout spare = {HARNESS_BHSD, 0, 0, 13}; /* capacity beyond CAP too */
    static const harness_layout spare_bshd = {HARNESS_BSHD, 4, 0, 13};
    for (int f = 0; f < NFAM; f++) {
        if (kernel_run(families[f], &full, NULL, q, k, v, of, lf) != 0) {
            CU_FAIL("attn_forward failed");
            continue;
        }
        CU_ASSERT_EQUAL(harness_check_reference(fam_name(f), &full, NULL, q, k, v, of, lf, seed),
                        0);
        for (int chunk = 1; chunk <= 3; chunk += 2) {
            attn_problem dec = cache;
            dec.q_len = chunk;
            const int ks[1] = {SHIFT}, kl[1] = {N};
            attn_lengths L = {NULL, NULL, ks, kl};
            float *dq = harness_xalloc((size_t)H * chunk * D),
                  *dout = harness_xalloc((size_t)H * chunk * D);
            float *dl = harness_xalloc((size_t)H * chunk),
                  *want = harness_xalloc((size_t)H * chunk * D);
            float *wl = harness_xalloc((size_t)H * chunk);
            for (int h = 0; h < H; h++) {
                memcpy(dq + (size_t)h * chunk * D, q + ((size_t)h * N + N - chunk) * D,
                       (size_t)chunk * D * sizeof(float));
                memcpy(want + (size_t)h * chunk * D, of + ((size_t)h * N + N - chunk) * D,
                       (size_t)chunk * D * sizeof(float));
                memcpy(wl + (size_t)h * chunk, lf + (size_t)h * N + N - chunk,
                       (size_t)chunk * sizeof(float));
            }
            for (int lay = 0; lay < 2; lay++) {
                const harness_layout *kvl = lay ? &spare_bshd : &spare;
                if (kernel_run_layout(families[f], &dec, &L, dq, kc, vc, NULL, kvl, kvl, NULL, dout,
                                      dl) != 0) {
                    CU_FAIL("attn_forward (cache) failed");
                    continue;
                }
                char w[96];
                snprintf(w, sizeof w, "[%s] cache decode Sq=%d (layout %d) vs prefill rows",
                         fam_name(f), chunk, lay);
                CU_ASSERT_EQUAL(harness_compare(w, dout, want, (size_t)H * chunk * D, F32_ATOL,
                                                F32_RTOL, seed), 0);
                snprintf(w, sizeof w, "[%s] cache decode Sq=%d LSE", fam_name(f), chunk);
                CU_ASSERT_EQUAL(harness_compare(w, dl, wl, (size_t)H * chunk, F32_ATOL, F32_RTOL,
                                                seed), 0);
            }
            free(dq), free(dout), free(dl), free(want), free(wl);
        }
    }
    free(q), free(k), free(v), free(of), free(lf), free(kc), free(vc);
}

/* ---- 6. GQA repetition is sharing, not new parameters ---- */

static void test_gqa_is_sharing(void)
{
    /* Hq = 8 over Hkv = 2 (and MQA, Hkv = 1) equals MHA with K/V heads
     * repeated explicitly (query head h uses KV head h / (Hq / Hkv)), and
     * runs on K/V buffers sized for Hkv heads exactly. */
    const uint64_t seed = harness_seed(2009);
    attn_context *ctx = harness_context();
    enum { B = 2, Hq = 8, S = 11, D = 16 };
    for (int hkv = 2; hkv >= 1; hkv--) {
        attn_problem g = harness_problem(B, Hq, hkv, D, S, S, 1),
                     m = harness_problem(B, Hq, Hq, D, S, S, 1);
        const size_t nq = nq_of(&g), nkv = nkv_of(&g), row = (size_t)S * D;
        float *q = harness_xalloc(nq), *k = harness_xalloc(nkv), *v = harness_xalloc(nkv),
              *kr = harness_xalloc(nq), *vr = harness_xalloc(nq);
        float *og = harness_xalloc(nq), *om = harness_xalloc(nq), *lg = harness_xalloc(rows_of(&g)),
              *lm = harness_xalloc(rows_of(&g));
        harness_fill_normal(q, nq, seed + hkv, 0, 1);
        harness_fill_normal(k, nkv, seed + 10 + hkv, 0, 1);
        harness_fill_uniform(v, nkv, seed + 20 + hkv, -1, 1);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < Hq; h++) {
                int hk = h / (Hq / hkv);
                memcpy(kr + ((size_t)b * Hq + h) * row, k + ((size_t)b * hkv + hk) * row,
                       row * sizeof(float));
                memcpy(vr + ((size_t)b * Hq + h) * row, v + ((size_t)b * hkv + hk) * row,
                       row * sizeof(float));
            }
        for (int f = 0; f < NFAM; f++) {
            if (kernel_run(families[f], &g, NULL, q, k, v, og, lg) != 0 ||
                kernel_run(families[f], &m, NULL, q, kr, vr, om, lm) != 0) {
                CU_FAIL("attn_forward failed");
                continue;
            }
            char w[64];
            snprintf(w, sizeof w, "[%s] GQA %d:%d vs repeated MHA", fam_name(f), Hq, hkv);
            CU_ASSERT_EQUAL(harness_compare(w, og, om, nq, F32_ATOL, F32_RTOL, seed), 0);
            CU_ASSERT_EQUAL(harness_compare(w, lg, lm, rows_of(&g), F32_ATOL, F32_RTOL, seed), 0);
            CU_ASSERT_EQUAL(harness_check_reference(fam_name(f), &g, NULL, q, k, v, og, lg, seed),
                            0);
        }

        /* exact Hkv-sized buffers are accepted; one head short is rejected */
        attn_tensor tq, tk, tv, to, tshort;
        cl_mem mq = harness_upload(ctx, ATTN_F32, q, B, Hq, S, D, NULL, &tq);
        cl_mem mk = harness_upload(ctx, ATTN_F32, k, B, hkv, S, D, NULL, &tk);
        cl_mem mv = harness_upload(ctx, ATTN_F32, v, B, hkv, S, D, NULL, &tv);
        cl_mem mo = harness_alloc(ctx, ATTN_F32, B, Hq, S, D, NULL, &to);
        CU_ASSERT_FATAL(mq && mk && mv && mo);
        size_t bytes = 0;
        clGetMemObjectInfo(mk, CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
        CU_ASSERT_EQUAL(bytes, nkv * sizeof(float)); /* Hkv heads, not Hq */
        for (int f = 0; f < NFAM; f++) {
            harness_use_family(ctx, families[f], NULL);
            attn_status st = attn_forward(ctx, &g, &tq, &tk, &tv, &to, NULL, NULL, NULL);
            harness_use_params(ctx, NULL);
            if (st != ATTN_SUCCESS)
                printf("\n  [%s] Hkv-sized K/V rejected: %s\n", fam_name(f), attn_last_error(ctx));
            CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
        }
        CU_ASSERT_EQUAL(clFinish(attn_context_queue(ctx)), CL_SUCCESS);
        /* a K buffer one element short of Hkv heads */
        cl_int err;
        tshort = tk;
        tshort.buffer = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_WRITE,
                                       (nkv - 1) * sizeof(float), NULL, &err);
        CU_ASSERT_EQUAL_FATAL(err, CL_SUCCESS);
        CU_ASSERT_EQUAL(attn_forward(ctx, &g, &tq, &tshort, &tv, &to, NULL, NULL, NULL),
                        ATTN_ERROR_INVALID_ARGUMENT);
        clReleaseMemObject(tshort.buffer);
        clReleaseMemObject(mq);
        clReleaseMemObject(mk);
        clReleaseMemObject(mv);
        clReleaseMemObject(mo);
        free(q), free(k), free(v), free(kr), free(vr), free(og), free(om), free(lg), free(lm);
    }
}

/* ---- the seed's exercise 1: zero Q and K ---- */

static void test_zero_qk_uniform(void)
{
    /* All logits are 0: each row's weights are uniform over its visible
     * keys, so output row i is the mean of the visible V rows and LSE is
     * log(number visible). Causal, and with a padded second entry. */
    const uint64_t seed = harness_seed(2010);
    enum { B = 2, H = 2, S = 9, D = 16 };
    static const int qs[B] = {0, 3}, ql[B] = {9, 6}, ks[B] = {0, 2}, kl[B] = {9, 7};
    attn_lengths L = {qs, ql, ks, kl};
    for (int causal = 1; causal >= 0; causal--) {
        attn_problem p = harness_problem(B, H, H, D, S, S, causal);
        const size_t n = nq_of(&p), rows = rows_of(&p);
        float *q = harness_xalloc(n), *k = harness_xalloc(n), *v = harness_xalloc(n),
              *out = harness_xalloc(n), *lse = harness_xalloc(rows);
        harness_fill_uniform(v, n, seed + causal, -1, 1);
        for (int f = 0; f < NFAM; f++) {
            if (kernel_run(families[f], &p, &L, q, k, v, out, lse) != 0) {
                CU_FAIL("attn_forward failed");
                continue;
            }
            int bad = 0;
            for (int b = 0; b < B; b++)
                for (int h = 0; h < H; h++)
                    for (int r = 0; r < S; r++) {
                        int i = r - qs[b];
                        int vis = i >= 0 && i < ql[b] ? kl[b] : 0;
                        if (vis && causal && i + kl[b] - ql[b] + 1 < vis)
                            vis = i + kl[b] - ql[b] + 1;
                        if (vis < 0) vis = 0;
                        const float *o = out + (((size_t)b * H + h) * S + r) * D;
                        for (int d = 0; d < D; d++) {
                            double mean = 0;
                            for (int j = 0; j < vis; j++)
                                mean += v[(((size_t)b * H + h) * S + ks[b] + j) * D + d];
                            mean = vis ? mean / vis : 0.0;
                            if (!(fabs(o[d] - mean) <= F32_ATOL + F32_RTOL * fabs(mean))) bad++;
                        }
                        double wl = vis ? log((double)vis) : -INFINITY;
                        float gl = lse[(b * H + h) * S + r];
                        if (vis ? !(fabs(gl - wl) <= F32_ATOL + F32_RTOL * wl) : gl != -INFINITY)
                            bad++;
                    }
            if (bad)
                printf("\n  [%s] causal=%d zero Q/K: %d values are not the mean of visible V "
                       "(or LSE not log(count)), seed %llu\n", fam_name(f), causal, bad,
                       (unsigned long long)seed);
            CU_ASSERT_EQUAL(bad, 0);
        }
        free(q), free(k), free(v), free(out), free(lse);
    }
}

/* ---- the seed's causal table for length 5 ---- */

static void test_causal_table_length5(void)
{
    /* V = identity (D = 16 >= S = 5, one-hot V rows), so output row i is the
     * weight row i. With Q = K = 0 the visible weights are equal; with random
     * Q and K they differ but the masked ones are still exactly zero. Either
     * way the support is the seed's table. */
    static const char *const table[5] = {"Y....", "YY...", "YYY..", "YYYY.", "YYYYY"};
    enum { S = 5, D = 16, H = 2 };
    const uint64_t seed = harness_seed(2011);
    attn_problem p = harness_problem(1, H, 1, D, S, S, 1);
    float q[H * S * D], k[S * D], v[S * D] = {0}, out[H * S * D], lse[H * S];
    for (int j = 0; j < S; j++) v[j * D + j] = 1.0f;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0) {
            memset(q, 0, sizeof q);
            memset(k, 0, sizeof k);
        } else {
            harness_fill_normal(q, H * S * D, seed, 0, 1);
            harness_fill_normal(k, S * D, seed + 1, 0, 1);
        }
        for (int f = 0; f < NFAM; f++) {
            if (kernel_run(families[f], &p, NULL, q, k, v, out, lse) != 0) {
                CU_FAIL("attn_forward failed");
                continue;
            }
            CU_ASSERT_EQUAL(harness_check_reference(fam_name(f), &p, NULL, q, k, v, out, lse, seed),
                            0);
            int bad = 0;
            for (int h = 0; h < H; h++)
                for (int i = 0; i < S; i++) {
                    const float *w = out + ((size_t)h * S + i) * D;
                    double sum = 0;
                    for (int j = 0; j < S; j++) {
                        sum += w[j];
                        if (table[i][j] == '.') bad += w[j] != 0.0f; /* exactly zero */
                        else bad += !(w[j] > 0.0f);
                        if (pass == 0 && table[i][j] == 'Y')
                            bad += !(fabs(w[j] - 1.0 / (i + 1)) <= 1e-6);
                    }
                    for (int d = S; d < D; d++) bad += w[d] != 0.0f;
                    bad += !(fabs(sum - 1.0) <= 1e-5);
                }
            if (bad)
                printf("\n  [%s] %s Q/K: %d weights break the seed's length-5 causal table, "
                       "seed %llu\n", fam_name(f), pass ? "random" : "zero", bad,
                       (unsigned long long)seed);
            CU_ASSERT_EQUAL(bad, 0);
        }
    }
}

static const harness_test tests[] = {
    HARNESS_TEST(test_scale_is_head_dim),
    HARNESS_TEST(test_mask_before_softmax_v_ones),
    HARNESS_TEST(test_mask_future_does_not_leak),
    HARNESS_TEST(test_softmax_over_keys),
    HARNESS_TEST(test_causal_row0_is_v0),
    HARNESS_TEST(test_layouts_same_logical_tensor),
    HARNESS_TEST(test_qkt_not_kqt),
    HARNESS_TEST(test_left_padding_matches_unpadded),
    HARNESS_TEST(test_kv_cache_shift_and_decode),
    HARNESS_TEST(test_gqa_is_sharing),
    HARNESS_TEST(test_zero_qk_uniform),
    HARNESS_TEST(test_causal_table_length5),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("seed_failures", tests); }

int main(void) { return harness_run("test_seed_failures", register_tests); }
