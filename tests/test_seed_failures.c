/* test_seed_failures.c -- the seed's "Common implementation failures", one
 * test each, run on the real kernels: the default family (the library's own
 * choice for the device), tiled, flash and mma (case_table.c's SEED rows;
 * mma emulated here). Each test is built so that
 * the buggy behaviour it names would fail it; then the seed's exercises
 * (zero Q and K, the causal table for length 5).
 *
 * The problems are the "seed/..." rows of the shared table (case_table.c),
 * each row named after the failure it guards against; a test makes its own
 * data for its rows and runs them through the shared runner
 * (harness_case_exec: layouts, NaN gaps, nothing written outside O, inputs
 * left alone). Shapes are small and share head dims with test_forward (16,
 * 64), so the programs they need are mostly built once. */
#define _POSIX_C_SOURCE 200809L
#include "cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each row of group, in table order. */
#define EACH_ROW(group, c)                                                                       \
    for (const harness_case *c = harness_group_next(group, NULL); c; c = harness_group_next(group, c))

/* The first row of group; fails the test when there is none. */
static const harness_case *first_row(const char *group)
{
    const harness_case *c = harness_group_next(group, NULL);
    if (!c) printf("\n  no case in group \"%s\"\n", group);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    return c;
}

static const char *fam_name(harness_family f) { return harness_family_name(f); }

/* Host arrays for one row (BHSD), zeroed. */
typedef struct io {
    float *q, *k, *v, *o, *lse;
    size_t nq, nkv, rows;
} io;

static io io_alloc(const harness_case *c)
{
    io x;
    x.nq = (size_t)c->B * c->Hq * c->Sq * c->D;
    x.nkv = (size_t)c->B * c->Hkv * c->Skv * c->D;
    x.rows = (size_t)c->B * c->Hq * c->Sq;
    x.q = harness_xalloc(x.nq), x.k = harness_xalloc(x.nkv), x.v = harness_xalloc(x.nkv);
    x.o = harness_xalloc(x.nq), x.lse = harness_xalloc(x.rows);
    return x;
}

static void io_free(io *x) { free(x->q), free(x->k), free(x->v), free(x->o), free(x->lse); }

/* Row c on the host BHSD inputs q, k, v under family f (the shared runner):
 * O into out, LSE into lse when not NULL. Returns 0, or the failed checks. */
static int run(const harness_case *c, harness_family f, const float *q, const float *k,
               const float *v, float *out, float *lse)
{
    return harness_case_exec(c, f, attn_forward, "attn_forward", q, k, v, out, lse);
}

static int run_io(const harness_case *c, harness_family f, io *x)
{
    return run(c, f, x->q, x->k, x->v, x->o, x->lse);
}

/* out and lse against the reference for row c on q, k, v (its lengths). */
static int check_ref(const harness_case *c, harness_family f, const float *q, const float *k,
                     const float *v, const float *out, const float *lse, uint64_t seed)
{
    const attn_problem p = harness_case_problem(c);
    const attn_lengths L = harness_case_lengths(c);
    const int padded = c->q_start || c->q_len || c->kv_start || c->kv_len;
    return harness_check_reference(fam_name(f), &p, padded ? &L : NULL, q, k, v, out, lse, seed);
}

static int check_io(const harness_case *c, harness_family f, const io *x, uint64_t seed)
{
    return check_ref(c, f, x->q, x->k, x->v, x->o, x->lse, seed);
}

/* run_io, then O and LSE against the reference. Returns 1 when the call
 * succeeded (checked), 0 when it failed (the test failed). */
static int run_checked(const harness_case *c, harness_family f, io *x, uint64_t seed)
{
    if (run_io(c, f, x) != 0) {
        CU_FAIL("attn_forward failed");
        return 0;
    }
    CU_ASSERT_EQUAL(check_io(c, f, x, seed), 0);
    return 1;
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
    /* The row's Hq heads of D make d_model = Hq * D, so the wrong scale is
     * 1/sqrt(Hq) of the right one. Q and K with deviation amp (2) make the
     * logits matter. */
    const harness_case *c = first_row("seed/scale");
    const uint64_t seed = harness_seed(c->seed);
    io x = io_alloc(c);
    float *wrong = harness_xalloc(x.nq), *wl = harness_xalloc(x.rows);
    harness_fill_qkv(x.q, x.nq, x.k, x.v, x.nkv, seed, c->amp, -1, 1);

    attn_problem bad = harness_case_problem(c);
    bad.scale = (float)(1.0 / sqrt((double)c->Hq * c->D));
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&bad, x.q, x.k, x.v, wrong, NULL, wl),
                          ATTN_SUCCESS);
    HARNESS_FOR_FAMILIES(c->families, f) {
        if (!run_checked(c, f, &x, seed)) continue;
        double d = max_abs_diff(x.o, wrong, x.nq), dl = max_abs_diff(x.lse, wl, x.rows);
        if (d < 0.05 || dl < 0.05)
            printf("\n  [%s] output is too close to the 1/sqrt(d_model) answer: %g (LSE %g), "
                   "seed %llu\n", fam_name(f), d, dl, (unsigned long long)seed);
        CU_ASSERT(d >= 0.05); /* the d_model answer is far outside any tolerance */
        CU_ASSERT(dl >= 0.05);
    }
    io_free(&x), free(wrong), free(wl);
}

/* ---- 2. masking after softmax ---- */

/* How many keys row r of batch entry b of c sees (its lengths, bottom-right
 * causal alignment); 0 for a pad row. */
static int visible(const harness_case *c, int b, int r)
{
    const int i = r - c->q_start[b], ql = c->q_len[b], kl = c->kv_len[b];
    int vis = i >= 0 && i < ql ? kl : 0;
    if (vis && c->causal && i + kl - ql + 1 < vis) vis = i + kl - ql + 1;
    return vis < 0 ? 0 : vis;
}

/* The expected O element (b, h, r, d) of row c on inputs x, whose row r
 * sees vis keys. */
typedef double (*want_fn)(const harness_case *c, const io *x, int b, int h, int r, int d, int vis);

/* Every element of x's O against want (f32 tolerance); the first miss is
 * printed. Returns the number of misses. */
static int check_o(const char *what, harness_family f, const harness_case *c, const io *x,
                   want_fn want, uint64_t seed)
{
    const int H = c->Hq, S = c->Sq, D = c->D;
    int bad = 0;
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < H; h++)
            for (int r = 0; r < S; r++) {
                const int vis = visible(c, b, r);
                const float *o = x->o + (((size_t)b * H + h) * S + r) * D;
                for (int d = 0; d < D; d++) {
                    const double w = want(c, x, b, h, r, d, vis);
                    if (fabs(o[d] - w) <= F32_ATOL + F32_RTOL * fabs(w)) continue;
                    if (!bad)
                        printf("\n  [%s] causal=%d %s: out[b%d h%d s%d d%d] = %.9g, want %.9g, "
                               "seed %llu\n", fam_name(f), c->causal, what, b, h, r, d, o[d], w,
                               (unsigned long long)seed);
                    bad++;
                }
            }
    return bad;
}

/* With V = 1: 1 where any key is visible, else 0. */
static double want_one(const harness_case *c, const io *x, int b, int h, int r, int d, int vis)
{
    (void)c, (void)x, (void)b, (void)h, (void)r, (void)d;
    return vis > 0 ? 1.0 : 0.0;
}

static void test_mask_before_softmax_v_ones(void)
{
    /* V = 1 everywhere: every row that sees any key outputs exactly 1, since
     * its weights sum to one. Zeroing masked probabilities after the softmax
     * would leave sums below one. Large logits (deviation amp, 3) make the
     * masked keys' share large. Padded batch entries and Sq > Skv leave some
     * rows empty: those are 0. One row non-causal, one causal. */
    EACH_ROW("seed/mask_v_ones", c) {
        const uint64_t seed = harness_seed(c->seed);
        io x = io_alloc(c);
        harness_fill_normal(x.q, x.nq, seed + c->causal, 0, c->amp);
        harness_fill_normal(x.k, x.nkv, seed + 10 + c->causal, 0, c->amp);
        for (size_t i = 0; i < x.nkv; i++) x.v[i] = 1.0f;
        HARNESS_FOR_FAMILIES(c->families, f) {
            if (!run_checked(c, f, &x, seed)) continue;
            CU_ASSERT_EQUAL(check_o("V=1", f, c, &x, want_one, seed), 0);
        }
        io_free(&x);
    }
}

static void test_mask_future_does_not_leak(void)
{
    /* Causal, S = 37. First run: random Q (each element >= 0), K, V. Second
     * run: K and V rows of every position after row I0 replaced by huge
     * values (K = 1000, V = 1e4): their logits are hundreds above any
     * visible one. Rows 0..I0 see none of them, so they must not change at
     * all; a mask applied after the softmax, or a max taken over all keys
     * (exp2 of the visible logits less it underflows to 0), would let them
     * in or wash the visible weights out. */
    enum { I0 = 17 };
    const harness_case *c = first_row("seed/mask_future");
    const uint64_t seed = harness_seed(c->seed);
    const int H = c->Hq, S = c->Sq, D = c->D;
    io x = io_alloc(c), y = io_alloc(c); /* y: the changed K and V */
    harness_fill_qkv(x.q, x.nq, x.k, x.v, x.nkv, seed, 1, -1, 1);
    for (size_t i = 0; i < x.nq; i++) x.q[i] = fabsf(x.q[i]);
    memcpy(y.q, x.q, x.nq * sizeof *x.q);
    memcpy(y.k, x.k, x.nkv * sizeof *x.k);
    memcpy(y.v, x.v, x.nkv * sizeof *x.v);
    for (int h = 0; h < H; h++)
        for (int j = I0 + 1; j < S; j++)
            for (int d = 0; d < D; d++) {
                y.k[((size_t)h * S + j) * D + d] = 1000.0f;
                y.v[((size_t)h * S + j) * D + d] = 1e4f;
            }
    HARNESS_FOR_FAMILIES(c->families, f) {
        if (!run_checked(c, f, &x, seed) || !run_checked(c, f, &y, seed)) continue;
        for (int h = 0; h < H; h++) {
            const size_t at = (size_t)h * S * D, nrow = (size_t)(I0 + 1) * D;
            char w[64];
            snprintf(w, sizeof w, "[%s] rows 0..%d with future K/V changed", fam_name(f), I0);
            CU_ASSERT_EQUAL(harness_compare(w, y.o + at, x.o + at, nrow, F32_ATOL, F32_RTOL, seed),
                            0);
            snprintf(w, sizeof w, "[%s] LSE 0..%d with future K changed", fam_name(f), I0);
            CU_ASSERT_EQUAL(harness_compare(w, y.lse + h * S, x.lse + h * S, I0 + 1, F32_ATOL,
                                            F32_RTOL, seed), 0);
            /* and the changed rows did arrive for the later queries */
            CU_ASSERT(max_abs_diff(y.o + at + nrow, x.o + at + nrow, (size_t)S * D - nrow) > 1.0);
        }
    }
    io_free(&x), io_free(&y);
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
    const harness_case *c = first_row("seed/softmax_axis");
    CU_ASSERT_FATAL(c->B == 1 && c->Hq == 1 && c->Hkv == 1 && c->Sq == Sq && c->Skv == Skv &&
                    c->D == D && c->scale == 1.0f && !c->causal);
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
    HARNESS_FOR_FAMILIES(c->families, f) {
        if (run(c, f, q, k, v, out, lse) != 0) {
            CU_FAIL("attn_forward failed");
            continue;
        }
        CU_ASSERT_EQUAL(check_ref(c, f, q, k, v, out, lse, 0), 0);
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
    const harness_case *c = first_row("seed/causal_row0");
    const uint64_t seed = harness_seed(c->seed);
    const int B = c->B, Hq = c->Hq, G = c->Hq / c->Hkv, S = c->Sq, D = c->D;
    CU_ASSERT_FATAL(c->causal && c->Sq == c->Skv && c->scale == 0.0f);
    io x = io_alloc(c);
    harness_fill_qkv(x.q, x.nq, x.k, x.v, x.nkv, seed, c->amp, -3, 3);
    HARNESS_FOR_FAMILIES(c->families, f) {
        if (!run_checked(c, f, &x, seed)) continue;
        for (int b = 0; b < B; b++)
            for (int h = 0; h < Hq; h++) {
                const float *o = x.o + ((size_t)b * Hq + h) * S * D;
                const float *v0 = x.v + ((size_t)b * c->Hkv + h / G) * S * D;
                char w[64];
                snprintf(w, sizeof w, "[%s] row 0 == V[0] (b%d h%d)", fam_name(f), b, h);
                CU_ASSERT_EQUAL(harness_compare(w, o, v0, (size_t)D, F32_ATOL, F32_RTOL, seed), 0);
                /* LSE of a single key is that key's scaled logit (1/sqrt(D)) */
                const float *q0 = x.q + ((size_t)b * Hq + h) * S * D;
                const float *k0 = x.k + ((size_t)b * c->Hkv + h / G) * S * D;
                double logit = 0;
                for (int d = 0; d < D; d++) logit += (double)q0[d] * k0[d];
                logit /= sqrt((double)D);
                CU_ASSERT_DOUBLE_EQUAL(x.lse[((size_t)b * Hq + h) * S], logit,
                                       F32_ATOL + F32_RTOL * fabs(logit));
            }
    }
    io_free(&x);
}

/* ---- 4. silent transpose errors ---- */

static void test_layouts_same_logical_tensor(void)
{
    /* A non-square problem: Sq = 5, Skv = 11, Hq = 6, Hkv = 2, D = 16, so no
     * two of the dimensions coincide and a read with axes swapped indexes
     * different elements (or past the end, into NaN). The same logical
     * tensors in every row's layouts (BHSD, BSHD, mixed with gaps) must give
     * the first row's output. */
    const harness_case *c0 = first_row("seed/layouts");
    const uint64_t seed = harness_seed(c0->seed);
    const int B = c0->B, H = c0->Hq, S = c0->Sq, D = c0->D;
    io x = io_alloc(c0);
    float *o = harness_xalloc(x.nq);
    harness_fill_qkv(x.q, x.nq, x.k, x.v, x.nkv, seed, 1, -1, 1);
    HARNESS_FOR_FAMILIES(c0->families, f) {
        if (!run_checked(c0, f, &x, seed)) continue;
        for (const harness_case *c = harness_group_next("seed/layouts", c0); c;
             c = harness_group_next("seed/layouts", c)) {
            CU_ASSERT_FATAL(c->B == B && c->Hq == H && c->Hkv == c0->Hkv && c->D == D &&
                            c->Sq == S && c->Skv == c0->Skv && c->causal == c0->causal);
            if (run(c, f, x.q, x.k, x.v, o, NULL) != 0) {
                CU_FAIL("attn_forward failed");
                continue;
            }
            char w[96];
            snprintf(w, sizeof w, "[%s] %s vs %s", fam_name(f), c->name, c0->name);
            CU_ASSERT_EQUAL(harness_compare(w, o, x.o, x.nq, F32_ATOL, F32_RTOL, seed), 0);
        }
    }

    /* The same data read as if it were BSHD when it is BHSD (the silent
     * transpose) gives a different answer: the test above can tell. */
    const attn_problem p = harness_case_problem(c0);
    float *qt = harness_xalloc(x.nq), *o_t = harness_xalloc(x.nq);
    for (int h = 0; h < H; h++)
        for (int s = 0; s < S; s++)
            for (int b = 0; b < B; b++)
                memcpy(qt + (((size_t)b * H + h) * S + s) * D, /* [b][h][s] of the BSHD read */
                       x.q + (((size_t)b * S + s) * H + h) * D, (size_t)D * sizeof(float));
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, qt, x.k, x.v, o_t, NULL, NULL), ATTN_SUCCESS);
    CU_ASSERT(max_abs_diff(o_t, x.o, x.nq) > 0.05);
    free(qt), free(o_t), free(o);
    io_free(&x);
}

static void test_qkt_not_kqt(void)
{
    /* Asymmetric Q and K (different distributions) with Sq = Skv, so that
     * K Q^T is computable: the kernel must match softmax(Q K^T) V and be
     * measurably far from softmax(K Q^T) V, in both masking modes. */
    EACH_ROW("seed/qkt", c) {
        const uint64_t seed = harness_seed(c->seed);
        const attn_problem p = harness_case_problem(c);
        CU_ASSERT_FATAL(c->Sq == c->Skv && c->Hq == c->Hkv);
        io x = io_alloc(c);
        float *swapped = harness_xalloc(x.nq);
        harness_fill_normal(x.q, x.nq, seed + c->causal, 0.5f, 2.0f);
        harness_fill_uniform(x.k, x.nkv, seed + 10 + c->causal, -3.0f, 1.0f);
        harness_fill_uniform(x.v, x.nkv, seed + 20 + c->causal, -1.0f, 1.0f);
        CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, x.k, x.q, x.v, swapped, NULL, NULL),
                              ATTN_SUCCESS);
        HARNESS_FOR_FAMILIES(c->families, f) {
            if (!run_checked(c, f, &x, seed)) continue;
            CU_ASSERT(max_abs_diff(x.o, swapped, x.nq) > 0.05);
        }
        io_free(&x), free(swapped);
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
     * the same content run on its own, unpadded (the row cut down to one
     * entry). A kernel that counted positions from the buffer start instead
     * of from kv_start (or aligned causality to the buffer) would drift. */
    const harness_case *c = first_row("seed/left_padding");
    const uint64_t seed = harness_seed(c->seed);
    const int B = c->B, Hq = c->Hq, Hkv = c->Hkv, D = c->D, S = c->Sq;
    const int *qs = c->q_start, *ql = c->q_len, *ks = c->kv_start, *kl = c->kv_len;
    CU_ASSERT_FATAL(qs && ql && ks && kl && c->Skv == S);
    io x = io_alloc(c);
    harness_fill_qkv(x.q, x.nq, x.k, x.v, x.nkv, seed, 1, -1, 1);
    HARNESS_FOR_FAMILIES(c->families, f) {
        if (!run_checked(c, f, &x, seed)) continue;
        for (int b = 0; b < B; b++) {
            harness_case u = *c; /* entry b alone, unpadded */
            u.name = "position drift: one entry unpadded";
            u.B = 1, u.Sq = ql[b], u.Skv = kl[b];
            u.q_start = u.q_len = u.kv_start = u.kv_len = NULL;
            io y = io_alloc(&u);
            take_rows(x.q, b, Hq, S, D, qs[b], ql[b], y.q);
            take_rows(x.k, b, Hkv, S, D, ks[b], kl[b], y.k);
            take_rows(x.v, b, Hkv, S, D, ks[b], kl[b], y.v);
            if (run_io(&u, f, &y) == 0) {
                float *po = harness_xalloc(y.nq), *pl = harness_xalloc(y.rows);
                take_rows(x.o, b, Hq, S, D, qs[b], ql[b], po);
                for (int h = 0; h < Hq; h++)
                    memcpy(pl + (size_t)h * ql[b], x.lse + ((size_t)b * Hq + h) * S + qs[b],
                           (size_t)ql[b] * sizeof(float));
                char w[80];
                snprintf(w, sizeof w, "[%s] entry %d padded vs unpadded O", fam_name(f), b);
                CU_ASSERT_EQUAL(harness_compare(w, po, y.o, y.nq, F32_ATOL, F32_RTOL, seed), 0);
                snprintf(w, sizeof w, "[%s] entry %d padded vs unpadded LSE", fam_name(f), b);
                CU_ASSERT_EQUAL(harness_compare(w, pl, y.lse, y.rows, F32_ATOL, F32_RTOL, seed),
                                0);
                /* the pad rows of the padded run are zeros */
                for (int h = 0; h < Hq; h++)
                    for (int r = 0; r < qs[b]; r++)
                        for (int d = 0; d < D; d++)
                            CU_ASSERT_EQUAL(x.o[(((size_t)b * Hq + h) * S + r) * D + d], 0.0f);
                free(po);
                free(pl);
            } else {
                CU_FAIL("attn_forward (unpadded) failed");
            }
            io_free(&y);
        }
    }
    io_free(&x);
}

static void test_kv_cache_shift_and_decode(void)
{
    /* A cache (the decode rows: capacity Skv 64, plus spare rows past it in
     * the tensor layout) holding N = 27 tokens at kv_start = 9. Decoding the
     * last token (Sq = 1) and a chunk of the last 3 tokens (Sq = 3) must
     * equal the matching rows of a full causal prefill (the prefill row)
     * over the same 27 tokens computed unshifted: the cached and uncached
     * paths agree on positions. */
    const harness_case *pc = first_row("seed/kv_cache_prefill");
    const uint64_t seed = harness_seed(pc->seed);
    const int H = pc->Hq, D = pc->D, N = pc->Sq;
    CU_ASSERT_FATAL(pc->B == 1 && pc->Hkv == H && pc->Skv == N && pc->causal);
    io x = io_alloc(pc);
    harness_fill_qkv(x.q, x.nq, x.k, x.v, x.nkv, seed, 1, -1, 1);
    HARNESS_FOR_FAMILIES(pc->families, f) {
        if (!run_checked(pc, f, &x, seed)) continue;
        EACH_ROW("seed/kv_cache_decode", c) {
            const int chunk = c->Sq, CAP = c->Skv, SHIFT = c->kv_start[0];
            CU_ASSERT_FATAL(c->B == 1 && c->Hq == H && c->Hkv == H && c->D == D &&
                            c->kv_len[0] == N && !c->q_start && !c->q_len);
            io y = io_alloc(c);
            float *want = harness_xalloc(y.nq), *wl = harness_xalloc(y.rows);
            /* the shifted cache: [1, H, CAP, D], content at rows SHIFT ..
             * SHIFT+N-1, the rest garbage (large values that must never be
             * read) */
            for (size_t i = 0; i < y.nkv; i++) {
                y.k[i] = 25.0f;
                y.v[i] = -1e4f;
            }
            for (int h = 0; h < H; h++) {
                memcpy(y.k + ((size_t)h * CAP + SHIFT) * D, x.k + (size_t)h * N * D,
                       (size_t)N * D * sizeof(float));
                memcpy(y.v + ((size_t)h * CAP + SHIFT) * D, x.v + (size_t)h * N * D,
                       (size_t)N * D * sizeof(float));
            }
            take_rows(x.q, 0, H, N, D, N - chunk, chunk, y.q);
            take_rows(x.o, 0, H, N, D, N - chunk, chunk, want);
            for (int h = 0; h < H; h++)
                memcpy(wl + (size_t)h * chunk, x.lse + (size_t)h * N + N - chunk,
                       (size_t)chunk * sizeof(float));
            if (run_io(c, f, &y) != 0) {
                CU_FAIL("attn_forward (cache) failed");
            } else {
                char w[96];
                snprintf(w, sizeof w, "[%s] %s vs prefill rows", fam_name(f), c->name);
                CU_ASSERT_EQUAL(harness_compare(w, y.o, want, y.nq, F32_ATOL, F32_RTOL, seed), 0);
                snprintf(w, sizeof w, "[%s] %s LSE", fam_name(f), c->name);
                CU_ASSERT_EQUAL(harness_compare(w, y.lse, wl, y.rows, F32_ATOL, F32_RTOL, seed),
                                0);
            }
            io_free(&y), free(want), free(wl);
        }
    }
    io_free(&x);
}

/* ---- 6. GQA repetition is sharing, not new parameters ---- */

static void test_gqa_is_sharing(void)
{
    /* Each row's Hq = 8 over Hkv = 2 (and MQA, Hkv = 1) equals MHA with K/V
     * heads repeated explicitly (query head h uses KV head h / (Hq / Hkv)),
     * and runs on K/V buffers sized for Hkv heads exactly. */
    attn_context *ctx = harness_context();
    EACH_ROW("seed/gqa", c) {
        const uint64_t seed = harness_seed(c->seed);
        const int B = c->B, Hq = c->Hq, hkv = c->Hkv, S = c->Sq, D = c->D;
        const attn_problem g = harness_case_problem(c);
        harness_case m = *c; /* the same problem as MHA on repeated K/V heads */
        m.name = "GQA is sharing: repeated MHA";
        m.Hkv = Hq;
        const size_t row = (size_t)S * D;
        io x = io_alloc(c), y = io_alloc(&m);
        harness_fill_normal(x.q, x.nq, seed + hkv, 0, 1);
        harness_fill_normal(x.k, x.nkv, seed + 10 + hkv, 0, 1);
        harness_fill_uniform(x.v, x.nkv, seed + 20 + hkv, -1, 1);
        memcpy(y.q, x.q, x.nq * sizeof *x.q);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < Hq; h++) {
                int hk = h / (Hq / hkv);
                memcpy(y.k + ((size_t)b * Hq + h) * row, x.k + ((size_t)b * hkv + hk) * row,
                       row * sizeof(float));
                memcpy(y.v + ((size_t)b * Hq + h) * row, x.v + ((size_t)b * hkv + hk) * row,
                       row * sizeof(float));
            }
        HARNESS_FOR_FAMILIES(c->families, f) {
            if (!run_checked(c, f, &x, seed)) continue;
            if (run_io(&m, f, &y) != 0) {
                CU_FAIL("attn_forward (repeated MHA) failed");
                continue;
            }
            char w[64];
            snprintf(w, sizeof w, "[%s] GQA %d:%d vs repeated MHA", fam_name(f), Hq, hkv);
            CU_ASSERT_EQUAL(harness_compare(w, x.o, y.o, x.nq, F32_ATOL, F32_RTOL, seed), 0);
            CU_ASSERT_EQUAL(harness_compare(w, x.lse, y.lse, x.rows, F32_ATOL, F32_RTOL, seed), 0);
        }

        /* exact Hkv-sized buffers are accepted; one head short is rejected */
        attn_tensor tq, tk, tv, to, tshort;
        cl_mem mq = harness_upload(ctx, ATTN_F32, x.q, B, Hq, S, D, NULL, &tq);
        cl_mem mk = harness_upload(ctx, ATTN_F32, x.k, B, hkv, S, D, NULL, &tk);
        cl_mem mv = harness_upload(ctx, ATTN_F32, x.v, B, hkv, S, D, NULL, &tv);
        cl_mem mo = harness_alloc(ctx, ATTN_F32, B, Hq, S, D, NULL, &to);
        CU_ASSERT_FATAL(mq && mk && mv && mo);
        size_t bytes = 0;
        clGetMemObjectInfo(mk, CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
        CU_ASSERT_EQUAL(bytes, x.nkv * sizeof(float)); /* Hkv heads, not Hq */
        HARNESS_FOR_FAMILIES(c->families, f) {
            harness_use_family(ctx, f, NULL);
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
                                       (x.nkv - 1) * sizeof(float), NULL, &err);
        CU_ASSERT_EQUAL_FATAL(err, CL_SUCCESS);
        CU_ASSERT_EQUAL(attn_forward(ctx, &g, &tq, &tshort, &tv, &to, NULL, NULL, NULL),
                        ATTN_ERROR_INVALID_ARGUMENT);
        clReleaseMemObject(tshort.buffer);
        clReleaseMemObject(mq);
        clReleaseMemObject(mk);
        clReleaseMemObject(mv);
        clReleaseMemObject(mo);
        io_free(&x), io_free(&y);
    }
}

/* ---- the seed's exercise 1: zero Q and K ---- */

/* With zero Q and K: the mean of the visible V rows (0 when none). */
static double want_mean(const harness_case *c, const io *x, int b, int h, int r, int d, int vis)
{
    const int H = c->Hkv, S = c->Skv, D = c->D;
    double mean = 0;
    (void)r;
    for (int j = 0; j < vis; j++) mean += x->v[(((size_t)b * H + h) * S + c->kv_start[b] + j) * D + d];
    return vis ? mean / vis : 0.0;
}

static void test_zero_qk_uniform(void)
{
    /* All logits are 0: each row's weights are uniform over its visible
     * keys, so output row i is the mean of the visible V rows and LSE is
     * log(number visible). Causal, and with a padded second entry. */
    EACH_ROW("seed/zero_qk", c) {
        const uint64_t seed = harness_seed(c->seed);
        const int B = c->B, H = c->Hq, S = c->Sq;
        CU_ASSERT_FATAL(c->Hkv == H && c->Skv == S && c->kv_start);
        io x = io_alloc(c); /* Q and K stay zero */
        harness_fill_uniform(x.v, x.nkv, seed + c->causal, -1, 1);
        HARNESS_FOR_FAMILIES(c->families, f) {
            if (run_io(c, f, &x) != 0) {
                CU_FAIL("attn_forward failed");
                continue;
            }
            int bad = check_o("zero Q/K", f, c, &x, want_mean, seed);
            for (int b = 0; b < B; b++)
                for (int h = 0; h < H; h++)
                    for (int r = 0; r < S; r++) {
                        const int vis = visible(c, b, r);
                        double wl = vis ? log((double)vis) : -INFINITY;
                        float gl = x.lse[((size_t)b * H + h) * S + r];
                        if (vis ? !(fabs(gl - wl) <= F32_ATOL + F32_RTOL * wl) : gl != -INFINITY)
                            bad++;
                    }
            if (bad)
                printf("\n  [%s] causal=%d zero Q/K: %d values are not the mean of visible V "
                       "(or LSE not log(count)), seed %llu\n", fam_name(f), c->causal, bad,
                       (unsigned long long)seed);
            CU_ASSERT_EQUAL(bad, 0);
        }
        io_free(&x);
    }
}

/* ---- the seed's causal table for length 5 ---- */

/* V = identity (D = 16 >= S = 5, one-hot V rows), so output row i is the
 * weight row i. With Q = K = 0 the visible weights are equal; with random
 * Q and K they differ but the masked ones are still exactly zero. Either
 * way the support is the seed's table: with Sq < 5 queries, its last Sq
 * rows (bottom-right; top-left would give query 0 one key, not 5 - Sq + 1). */
static void causal_table(const harness_case *c)
{
    static const char *const full[5] = {"Y....", "YY...", "YYY..", "YYYY.", "YYYYY"};
    enum { S = 5, D = 16, H = 2 };
    CU_ASSERT_FATAL(c->B == 1 && c->Hq == H && c->Hkv == 1 && c->Sq <= S && c->Skv == S &&
                    c->D == D && c->causal);
    const char *const *table = full + (S - c->Sq);
    const int Sq = c->Sq;
    const uint64_t seed = harness_seed(c->seed);
    float q[H * S * D], k[S * D], v[S * D] = {0}, out[H * S * D], lse[H * S];
    for (int j = 0; j < S; j++) v[j * D + j] = 1.0f;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0) {
            memset(q, 0, sizeof q);
            memset(k, 0, sizeof k);
        } else {
            harness_fill_normal(q, (size_t)H * Sq * D, seed, 0, 1);
            harness_fill_normal(k, S * D, seed + 1, 0, 1);
        }
        HARNESS_FOR_FAMILIES(c->families, f) {
            if (run(c, f, q, k, v, out, lse) != 0) {
                CU_FAIL("attn_forward failed");
                continue;
            }
            CU_ASSERT_EQUAL(check_ref(c, f, q, k, v, out, lse, seed), 0);
            int bad = 0;
            for (int h = 0; h < H; h++)
                for (int i = 0; i < Sq; i++) {
                    const float *w = out + ((size_t)h * Sq + i) * D;
                    const int seen = i + 1 + (S - Sq);
                    double sum = 0;
                    for (int j = 0; j < S; j++) {
                        sum += w[j];
                        if (table[i][j] == '.') bad += w[j] != 0.0f; /* exactly zero */
                        else bad += !(w[j] > 0.0f);
                        if (pass == 0 && table[i][j] == 'Y')
                            bad += !(fabs(w[j] - 1.0 / seen) <= 1e-6);
                    }
                    for (int d = S; d < D; d++) bad += w[d] != 0.0f;
                    bad += !(fabs(sum - 1.0) <= 1e-5);
                }
            if (bad)
                printf("\n  [%s] %s Q/K, %d queries: %d weights break the seed's length-5 causal "
                       "table, seed %llu\n", fam_name(f), pass ? "random" : "zero", Sq, bad,
                       (unsigned long long)seed);
            CU_ASSERT_EQUAL(bad, 0);
        }
    }
}

static void test_causal_table_length5(void)
{
    int rows = 0;
    for (const harness_case *c = first_row("seed/causal_table5"); c;
         c = harness_group_next("seed/causal_table5", c), rows++)
        causal_table(c);
    CU_ASSERT_EQUAL(rows, 2); /* 5 queries, and 3 */
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
