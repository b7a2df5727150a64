/* test_nonfinite.c -- masked and pad positions never contribute, whatever
 * they hold. Every position of Q, K and V that no query sees (pad rows and
 * keys outside each batch entry's window, queries that see no key) holds
 * +inf, -inf or NaN, and so do the last keys of each sequence under the
 * causal mask: those are masked for every row but the last ones, yet lie in
 * the same key block as keys those rows do see, where 0 * inf = NaN would
 * leak in if a masked probability were multiplied instead of skipped.
 *
 * Rows whose reference result is not finite (they do see a poisoned key)
 * must not be finite either; every other row must match the reference
 * (double accumulation over the visible keys only) in O and LSE. Every kernel
 * family (attn_context_set_params family=...) and the three decode kernels,
 * over a cache as the dtype and an int8 one. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float *xalloc(size_t n)
{
    float *x = calloc(n ? n : 1, sizeof *x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    return x;
}

/* +inf, -inf, NaN in turn */
static float poison(size_t i)
{
    static const float v[3] = {INFINITY, -INFINITY, NAN};
    return v[i % 3];
}

static void poison_row(float *row, int D, size_t salt)
{
    for (int d = 0; d < D; d++) row[d] = poison(salt + (size_t)d);
}

/* Compares the rows of [rows][D] outputs whose reference row is finite (O
 * and LSE), and asserts the others are not finite; returns the number of
 * bad rows and sets *checked (the finite ones). */
static int compare_finite_rows(const char *what, const float *got, const float *ref,
                               const float *got_lse, const float *ref_lse, size_t rows, int D,
                               double atol, double rtol, uint64_t seed, int *checked)
{
    int bad = 0;
    *checked = 0;
    for (size_t r = 0; r < rows; r++) {
        const float *rr = ref + r * (size_t)D;
        int finite = !isnan(ref_lse[r]) && !(isinf(ref_lse[r]) && ref_lse[r] > 0);
        for (int d = 0; d < D && finite; d++) finite = isfinite(rr[d]);
        if (!finite) { /* a row that sees a non-finite key is not finite either */
            const float *gr = got + r * (size_t)D;
            int got_finite = isfinite(got_lse[r]);
            for (int d = 0; d < D && got_finite; d++) got_finite = isfinite(gr[d]);
            if (got_finite && bad++ == 0)
                printf("\n  %s row %zu: finite (O[0] %g), where the reference's is not", what,
                       r, gr[0]);
            continue;
        }
        ++*checked;
        char label[224];
        snprintf(label, sizeof label, "%.160s row %zu O", what, r);
        int b = harness_compare(label, got + r * (size_t)D, rr, (size_t)D, atol, rtol, seed);
        snprintf(label, sizeof label, "%.160s row %zu LSE", what, r);
        b += harness_compare(label, got_lse + r, ref_lse + r, 1, atol, rtol, seed);
        bad += b > 0;
    }
    return bad;
}

/* ---- attn_forward ---- */

enum { FB = 3, FHQ = 2, FHKV = 1, FD = 16, FS = 21 };
/* entry 0 full, entry 1 padded on both sides, entry 2 with more queries than
 * keys (its first rows see nothing under the causal mask) */
static const int f_qs[FB] = {0, 3, 1}, f_ql[FB] = {FS, 15, 12};
static const int f_ks[FB] = {0, 2, 9}, f_kl[FB] = {FS, 16, 5};
#define POISONED_KEYS 2 /* the last keys of every sequence, with the causal mask */

static size_t fidx(int H, int b, int h, int s) { return (((size_t)b * H + h) * FS + s) * FD; }

/* Q, K, V with every position no row may use poisoned. */
static void forward_inputs(float *q, float *k, float *v, int causal, attn_dtype dt, uint64_t seed)
{
    const size_t nq = (size_t)FB * FHQ * FS * FD, nk = (size_t)FB * FHKV * FS * FD;
    harness_fill_normal(q, nq, seed, 0.0f, 1.0f);
    harness_fill_normal(k, nk, seed + 1, 0.0f, 1.0f);
    harness_fill_uniform(v, nk, seed + 2, -2.0f, 2.0f);
    harness_round(dt, q, nq);
    harness_round(dt, k, nk);
    harness_round(dt, v, nk);
    for (int b = 0; b < FB; b++) {
        for (int h = 0; h < FHQ; h++)
            for (int s = 0; s < FS; s++) {
                const int i = s - f_qs[b];
                int sees = i >= 0 && i < f_ql[b] && f_kl[b] > 0;
                if (sees && causal) sees = i + f_kl[b] - f_ql[b] + 1 > 0;
                if (!sees) poison_row(q + fidx(FHQ, b, h, s), FD, (size_t)s + h);
            }
        for (int h = 0; h < FHKV; h++)
            for (int s = 0; s < FS; s++) {
                const int j = s - f_ks[b];
                int unused = j < 0 || j >= f_kl[b];
                if (causal) unused |= j >= f_kl[b] - POISONED_KEYS;
                if (unused) {
                    poison_row(k + fidx(FHKV, b, h, s), FD, (size_t)s);
                    poison_row(v + fidx(FHKV, b, h, s), FD, (size_t)s + 1);
                }
            }
    }
}

static void forward_case(const char *params, int causal, attn_dtype dt)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    const size_t nq = (size_t)FB * FHQ * FS * FD, nk = (size_t)FB * FHKV * FS * FD;
    const size_t rows = (size_t)FB * FHQ * FS;
    const uint64_t seed = harness_seed(9200 + 2 * (uint64_t)dt + (uint64_t)causal);
    float *q = xalloc(nq), *k = xalloc(nk), *v = xalloc(nk), *ref = xalloc(nq), *got = xalloc(nq);
    float *ref_lse = xalloc(rows), *got_lse = xalloc(rows);
    forward_inputs(q, k, v, causal, dt, seed);
    attn_problem p = {.batch = FB, .q_heads = FHQ, .kv_heads = FHKV, .head_dim = FD, .q_len = FS,
                      .kv_len = FS, .dtype = dt, .causal = causal, .scale = 0.0f};
    attn_lengths L = {f_qs, f_ql, f_ks, f_kl};
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, ref, &L, ref_lse), ATTN_SUCCESS);

    attn_tensor tq, tk, tv, to;
    cl_mem mq = harness_upload(ctx, dt, q, FB, FHQ, FS, FD, NULL, &tq);
    cl_mem mk = harness_upload(ctx, dt, k, FB, FHKV, FS, FD, NULL, &tk);
    cl_mem mv = harness_upload(ctx, dt, v, FB, FHKV, FS, FD, NULL, &tv);
    cl_mem mo = harness_alloc(ctx, dt, FB, FHQ, FS, FD, NULL, &to);
    cl_mem ml = harness_float_buffer(ctx, rows);
    CU_ASSERT_FATAL(mq && mk && mv && mo && ml);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, params), ATTN_SUCCESS);
    attn_status st = attn_forward(ctx, &p, &tq, &tk, &tv, &to, &L, ml, NULL);
    attn_context_set_params(ctx, NULL);
    if (st != ATTN_SUCCESS) printf("\n  attn_forward: %s\n", attn_last_error(ctx));
    CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(harness_download(ctx, dt, &to, FB, FHQ, FS, FD, got), 0);
    CU_ASSERT_EQUAL_FATAL(harness_read_floats(ctx, ml, got_lse, rows), 0);

    char what[160];
    snprintf(what, sizeof what, "[%s %s %s]", params, causal ? "causal" : "full",
             attn_dtype_name(dt));
    int checked = 0;
    double atol, rtol;
    attn_tolerance(dt, &atol, &rtol);
    CU_ASSERT_EQUAL(compare_finite_rows(what, got, ref, got_lse, ref_lse, rows, FD, atol, rtol,
                                        seed, &checked), 0);
    /* all but the rows that see a poisoned key (causal: the last ones) */
    CU_ASSERT(checked >= (int)rows - (causal ? FB * FHQ * POISONED_KEYS : 0));
    clReleaseMemObject(mq), clReleaseMemObject(mk), clReleaseMemObject(mv);
    clReleaseMemObject(mo), clReleaseMemObject(ml);
    free(q), free(k), free(v), free(ref), free(got), free(ref_lse), free(got_lse);
}

static const char *const forward_params[] = {
    "family=vector,rows=4,keys=8,vec=4",
    "family=vector,rows=8,keys=32,vec=16",
    "family=tiled,rows=4,keys=8,wg=16,local_kv=0",
    "family=tiled,rows=4,keys=8,wg=16,local_kv=1",
    "family=tiled,rows=16,keys=32,wg=128,local_kv=1",
    "family=flash,rows=8,keys=8,tm=2,tn=2",
    /* the tensor-core family (emulated here): all of a tile's keys go
     * through P.V, masked or not */
    "family=mma,warps=1,keys=16,mtiles=1",
    "family=mma,warps=2,keys=32,mtiles=2",
};

static void forward_all(int causal)
{
    static const attn_dtype dts[] = {ATTN_F32, ATTN_F16, ATTN_BF16};
    for (size_t i = 0; i < sizeof forward_params / sizeof *forward_params; i++)
        for (int t = 0; t < 3; t++) forward_case(forward_params[i], causal, dts[t]);
}

static void test_forward_causal(void) { forward_all(1); }
static void test_forward_full(void) { forward_all(0); }

/* One key's V non-finite (its K finite: the rows that see it weigh it) in
 * a causal problem:
 * - windowed == 0: key 10. Rows 10.. see it and are not finite, the rows
 *   before match the reference. Key 10 lies in the upper half of a 16-key
 *   step, and rows 10..15 (that see it) share their mma fragments with
 *   rows 2..7 (that do not): a marking read from the other half's key or
 *   row passed the suite, whose poisoned keys have K poisoned too.
 * - windowed: key 0, under a window of 2 keys left: rows 0..2 see it, the
 *   rows after do not, though key 0 is in their tile (a P.V loop that
 *   started at the tile's first key, not the row's window, passed). */
static void bad_key_case(const char *params, attn_dtype dt, int windowed)
{
    enum { H = 2, S = 32 };
    const int bad = windowed ? 0 : 10;
    attn_context *ctx = harness_context();
    const uint64_t seed = harness_seed(9350 + (uint64_t)dt);
    const size_t nq = (size_t)H * S * FD, nk = (size_t)S * FD;
    float *q = xalloc(nq), *k = xalloc(nk), *v = xalloc(nk), *ref = xalloc(nq), *got = xalloc(nq);
    float ref_lse[H * S], got_lse[H * S];
    harness_fill_normal(q, nq, seed, 0.0f, 1.0f);
    harness_fill_normal(k, nk, seed + 1, 0.0f, 1.0f);
    harness_fill_uniform(v, nk, seed + 2, -2.0f, 2.0f);
    harness_round(dt, q, nq), harness_round(dt, k, nk), harness_round(dt, v, nk);
    poison_row(v + (size_t)bad * FD, FD, 0);
    attn_problem p = {.batch = 1, .q_heads = H, .kv_heads = 1, .head_dim = FD, .q_len = S,
                      .kv_len = S, .dtype = dt, .causal = 1, .scale = 0.0f};
    if (windowed) p.use_window = 1, p.window_left = 2, p.window_right = 0;
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, ref, NULL, ref_lse), ATTN_SUCCESS);
    attn_tensor tq, tk, tv, to;
    cl_mem m[] = {harness_upload(ctx, dt, q, 1, H, S, FD, NULL, &tq),
                  harness_upload(ctx, dt, k, 1, 1, S, FD, NULL, &tk),
                  harness_upload(ctx, dt, v, 1, 1, S, FD, NULL, &tv),
                  harness_alloc(ctx, dt, 1, H, S, FD, NULL, &to), harness_float_buffer(ctx, H * S)};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) CU_ASSERT_PTR_NOT_NULL_FATAL(m[i]);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, params), ATTN_SUCCESS);
    const attn_status st = attn_forward(ctx, &p, &tq, &tk, &tv, &to, NULL, m[4], NULL);
    attn_context_set_params(ctx, NULL);
    if (st != ATTN_SUCCESS) printf("\n  attn_forward: %s\n", attn_last_error(ctx));
    CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(harness_download(ctx, dt, &to, 1, H, S, FD, got), 0);
    CU_ASSERT_EQUAL_FATAL(harness_read_floats(ctx, m[4], got_lse, H * S), 0);
    char what[160];
    snprintf(what, sizeof what, "[%s %s, V of key %d not finite%s]", params,
             attn_dtype_name(dt), bad, windowed ? ", window 2 left" : "");
    double atol, rtol;
    attn_tolerance(dt, &atol, &rtol);
    int checked = 0;
    CU_ASSERT_EQUAL(compare_finite_rows(what, got, ref, got_lse, ref_lse, H * S, FD, atol, rtol,
                                        seed, &checked), 0);
    CU_ASSERT_EQUAL(checked, windowed ? H * (S - 3) : H * bad);
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) clReleaseMemObject(m[i]);
    free(q), free(k), free(v), free(ref), free(got);
}

static void test_forward_one_bad_key(void)
{
    static const attn_dtype dts[] = {ATTN_F32, ATTN_F16, ATTN_BF16};
    for (int windowed = 0; windowed < 2; windowed++)
        for (size_t i = 0; i < sizeof forward_params / sizeof *forward_params; i++)
            for (int t = 0; t < 3; t++) bad_key_case(forward_params[i], dts[t], windowed);
}

/* ---- attn_decode ---- */

enum { DB = 2, DHQ = 4, DHKV = 2, DD = 16, DCAP = 112, DNEW = 3 };
static const int d_prompt[DB] = {93, 7}; /* 96 keys: three splits of 32 */
static const int d_qlens[DB] = {DNEW, 2}; /* sequence 1 has a pad query row */

/* A single pass's rows, against which a split run's rows that see a
 * non-finite key are compared: the split count must not change them (a
 * split that met a NaN logit was dropped by the merge, which then gave a
 * finite row from the other splits' keys alone). */
typedef struct single_pass {
    float *o, *lse; /* NULL before the single pass ran */
} single_pass;

/* Rows a and b (D values and an LSE) agree: NaN where the other is NaN,
 * else equal within the type's tolerance. */
static int same_row(const float *a, const float *b, float la, float lb, int D, double atol,
                    double rtol)
{
    for (int d = 0; d <= D; d++) {
        const float x = d < D ? a[d] : la, y = d < D ? b[d] : lb;
        if (isnan(x) != isnan(y)) return 0;
        if (!isnan(x) && x != y && !(fabs((double)x - y) <= atol + rtol * fabs((double)y)))
            return 0;
    }
    return 1;
}

/* Decode of DNEW new queries after a prompt, in a cache whose rows past
 * each length hold inf/NaN (appended, then truncated away) and whose newest
 * key (K and V) is inf/NaN: only the newest query sees it. The newest
 * query's rows (the reference is not finite there) must come out the same
 * whatever the splits: sp holds the single pass's. */
static void decode_case(const char *family, int splits, attn_dtype dt, attn_kv_storage kv,
                        single_pass *sp)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    const uint64_t seed = harness_seed(9300 + (uint64_t)dt);
    const int N = DCAP; /* host arrays: [b][h][N][D], the whole sequence */
    const size_t nk = (size_t)DB * DHKV * N * DD, nqall = (size_t)DB * DHQ * N * DD;
    float *k = xalloc(nk), *v = xalloc(nk), *qall = xalloc(nqall);
    harness_fill_normal(k, nk, seed, 0.0f, 1.0f);
    harness_fill_uniform(v, nk, seed + 1, -2.0f, 2.0f);
    harness_fill_normal(qall, nqall, seed + 2, 0.0f, 1.0f);
    harness_round(dt, k, nk);
    harness_round(dt, v, nk);
    harness_round(dt, qall, nqall);
    int len[DB];
    for (int b = 0; b < DB; b++) {
        len[b] = d_prompt[b] + d_qlens[b];
        for (int h = 0; h < DHKV; h++)
            for (int s = len[b] - 1; s < N; s++) { /* the newest key and all beyond */
                poison_row(k + (((size_t)b * DHKV + h) * N + s) * DD, DD, (size_t)s);
                poison_row(v + (((size_t)b * DHKV + h) * N + s) * DD, DD, (size_t)s + 2);
            }
    }

    attn_kv_cache *cache = NULL;
    const attn_kv_cache_desc desc = {.batch = DB, .kv_heads = DHKV, .head_dim = DD,
                                     .capacity = DCAP, .dtype = dt, .storage = kv};
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, &desc, &cache), ATTN_SUCCESS);
    /* stale rows: the whole capacity appended (poison past the prompt), then truncated */
    attn_tensor tk, tv;
    cl_mem mk = harness_upload(ctx, dt, k, DB, DHKV, N, DD, NULL, &tk);
    cl_mem mv = harness_upload(ctx, dt, v, DB, DHKV, N, DD, NULL, &tv);
    CU_ASSERT_FATAL(mk && mv);
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_append(cache, &tk, &tv, N, NULL, NULL), ATTN_SUCCESS);
    for (int b = 0; b < DB; b++)
        CU_ASSERT_EQUAL_FATAL(attn_kv_cache_truncate(cache, b, d_prompt[b]), ATTN_SUCCESS);
    /* this step's tokens: rows prompt .. len-1 of each sequence (the last one poisoned) */
    attn_tensor tk2, tv2;
    float *bk = xalloc((size_t)DB * DHKV * DNEW * DD), *bv = xalloc((size_t)DB * DHKV * DNEW * DD);
    for (int b = 0; b < DB; b++)
        for (int h = 0; h < DHKV; h++)
            for (int r = 0; r < DNEW; r++) {
                const size_t dst = (((size_t)b * DHKV + h) * DNEW + r) * DD;
                if (r < d_qlens[b]) {
                    const size_t src = (((size_t)b * DHKV + h) * N + d_prompt[b] + r) * DD;
                    memcpy(bk + dst, k + src, DD * sizeof(float));
                    memcpy(bv + dst, v + src, DD * sizeof(float));
                } else {
                    poison_row(bk + dst, DD, r);
                    poison_row(bv + dst, DD, r + 1);
                }
            }
    cl_mem mk2 = harness_upload(ctx, dt, bk, DB, DHKV, DNEW, DD, NULL, &tk2);
    cl_mem mv2 = harness_upload(ctx, dt, bv, DB, DHKV, DNEW, DD, NULL, &tv2);
    CU_ASSERT_FATAL(mk2 && mv2);
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_append(cache, &tk2, &tv2, DNEW, d_qlens, NULL),
                          ATTN_SUCCESS);

    /* the new queries; pad query rows poisoned */
    const size_t nq = (size_t)DB * DHQ * DNEW * DD, rows = (size_t)DB * DHQ * DNEW;
    float *q = xalloc(nq), *ref = xalloc(nq), *got = xalloc(nq);
    float *ref_lse = xalloc(rows), *got_lse = xalloc(rows);
    for (int b = 0; b < DB; b++)
        for (int h = 0; h < DHQ; h++)
            for (int i = 0; i < DNEW; i++) {
                float *dst = q + (((size_t)b * DHQ + h) * DNEW + i) * DD;
                if (i < d_qlens[b])
                    memcpy(dst, qall + (((size_t)b * DHQ + h) * N + d_prompt[b] + i) * DD,
                           DD * sizeof(float));
                else
                    poison_row(dst, DD, i);
            }
    /* the reference: the new queries against each whole sequence, bottom-right causal */
    attn_problem rp = {.batch = DB, .q_heads = DHQ, .kv_heads = DHKV, .head_dim = DD, .q_len = DNEW,
                       .kv_len = N, .dtype = dt, .causal = 1, .scale = 0.0f};
    attn_lengths L = {NULL, d_qlens, NULL, len};
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&rp, q, k, v, ref, &L, ref_lse), ATTN_SUCCESS);

    attn_tensor tq, to;
    cl_mem mq = harness_upload(ctx, dt, q, DB, DHQ, DNEW, DD, NULL, &tq);
    cl_mem mo = harness_alloc(ctx, dt, DB, DHQ, DNEW, DD, NULL, &to);
    cl_mem ml = harness_float_buffer(ctx, rows);
    CU_ASSERT_FATAL(mq && mo && ml);
    char params[96];
    snprintf(params, sizeof params, "family=%s%s,splits=%d", family,
             strcmp(family, "mma") == 0 ? "" : ",rows=4", splits);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, params), ATTN_SUCCESS);
    attn_problem p = {.batch = DB, .q_heads = DHQ, .kv_heads = DHKV, .head_dim = DD, .q_len = DNEW,
                      .kv_len = 0, .dtype = dt, .causal = 1, .scale = 0.0f};
    attn_status st = attn_decode(ctx, cache, &p, &tq, &to, d_qlens, ml, NULL);
    attn_context_set_params(ctx, NULL);
    if (st != ATTN_SUCCESS) printf("\n  attn_decode: %s\n", attn_last_error(ctx));
    CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(harness_download(ctx, dt, &to, DB, DHQ, DNEW, DD, got), 0);
    CU_ASSERT_EQUAL_FATAL(harness_read_floats(ctx, ml, got_lse, rows), 0);

    char what[160];
    snprintf(what, sizeof what, "[decode %s %s%s]", params, attn_dtype_name(dt),
             kv == ATTN_KV_INT8 ? ", int8 cache" : "");
    int checked = 0;
    double atol, rtol;
    attn_kv_tolerance(kv, dt, &atol, &rtol);
    CU_ASSERT_EQUAL(compare_finite_rows(what, got, ref, got_lse, ref_lse, rows, DD, atol, rtol,
                                        seed, &checked), 0);
    /* every row but each sequence's newest query */
    CU_ASSERT_EQUAL(checked, (int)rows - DB * DHQ);
    if (!sp->o) {
        sp->o = xalloc(nq), sp->lse = xalloc(rows);
        memcpy(sp->o, got, nq * sizeof(float));
        memcpy(sp->lse, got_lse, rows * sizeof(float));
    } else {
        int differ = 0;
        for (int b = 0; b < DB; b++)
            for (int h = 0; h < DHQ; h++) {
                const size_t r = ((size_t)b * DHQ + h) * DNEW + (size_t)d_qlens[b] - 1;
                if (!same_row(got + r * DD, sp->o + r * DD, got_lse[r], sp->lse[r], DD, atol,
                              rtol)) {
                    if (!differ++)
                        printf("\n  %s row %zu (sees a non-finite key): O[0] %g LSE %g, one "
                               "pass O[0] %g LSE %g", what, r, got[r * DD], got_lse[r],
                               sp->o[r * DD], sp->lse[r]);
                }
            }
        CU_ASSERT_EQUAL(differ, 0);
    }

    attn_kv_cache_release(cache);
    clReleaseMemObject(mk), clReleaseMemObject(mv), clReleaseMemObject(mk2);
    clReleaseMemObject(mv2), clReleaseMemObject(mq), clReleaseMemObject(mo);
    clReleaseMemObject(ml);
    free(k), free(v), free(qall), free(bk), free(bv), free(q), free(ref), free(got);
    free(ref_lse), free(got_lse);
}

/* Each dtype, in a cache as the dtype and in an int8 cache (whose staging
 * marks a key non-finite from its scale, NaN for such a row). */
static void decode_all(const char *family)
{
    static const attn_dtype dts[] = {ATTN_F32, ATTN_F16, ATTN_BF16};
    for (int kv = 0; kv < 2; kv++)
        for (int t = 0; t < 3; t++) {
            single_pass sp = {NULL, NULL};
            for (int splits = 1; splits <= 3; splits++)
                decode_case(family, splits, dts[t], kv ? ATTN_KV_INT8 : ATTN_KV_AS_DTYPE, &sp);
            free(sp.o), free(sp.lse);
        }
}

static void test_decode_vector(void) { decode_all("vector"); }
static void test_decode_tiled(void) { decode_all("tiled"); }
/* mma (emulated here): the poisoned newest key is in the tile every row
 * stages, weighed 0 by the rows that do not see it (cl/mma_operands.cl's
 * marking) */
static void test_decode_mma(void) { decode_all("mma"); }

static const harness_test tests[] = {
    HARNESS_TEST(test_forward_causal),
    HARNESS_TEST(test_forward_full),
    HARNESS_TEST(test_forward_one_bad_key),
    HARNESS_TEST(test_decode_vector),
    HARNESS_TEST(test_decode_tiled),
    HARNESS_TEST(test_decode_mma),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("nonfinite", tests); }

int main(void) { return harness_run("test_nonfinite", register_tests); }
