/* test_decode_int8.c -- int8 K/V (ATTN_KV_INT8): the host quantizer's
 * rounding, the cache's read-back equal to it (quantize, dequantize, round
 * to the dtype), and attn_decode over int8 caches in every kernel family
 * with a decode kernel (vector, tiled, mma: its head dims) and every dtype: equal to the CPU reference over the dequantized K/V
 * within the DESIGN tolerance, and to the reference over the unquantized
 * K/V within int8's own tolerance (attn_kv_tolerance). Cases: GQA and
 * MQA, an odd head dim, ragged and left-padded appends in two steps, splits
 * automatic and forced, a speculative block of new queries, an all-zero row
 * (scale 0), rows of large magnitude, a paged cache, and long blocks of
 * queries (chunked prefill).
 *
 * Build cost: an int8 decode program per (family, dtype, head dim) used and
 * an int8 append program per dtype: about 14 programs. */
#define _POSIX_C_SOURCE 200809L
#include "cases.h"
#include "attention/kv_quant.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const attn_dtype dtypes[] = {ATTN_F32, ATTN_F16, ATTN_BF16};
#define NDT 3
#define MAXB 4

/* The mma family rounds P to 16 bits for P.V (f16, bf16), as
 * FlashAttention-2, or splits it into two tf32 halves (f32, 3xTF32: about
 * 2^-21 of each product): its error is relative to the terms of P.V, not
 * to O. Where rows of V are 1000x the others and O is their small,
 * cancelling sum (test_large_rows), that is far more than the dtype's
 * tolerance of O (measured: 1.53 in f16, 11.6 in bf16, 2.4e-3 in f32,
 * against results of order 1-10). The bound on top
 * of the tolerance, twice P's unit times the largest |V| of the KV head a
 * row reads (4x for f32), is what the family promises; the cases of
 * unit-scale data hold it to the dtype's tolerance alone, and LSE always. */
static double mma_pv_error(attn_dtype dt, const float *v_head, size_t n)
{
    double vmax = 0.0;
    for (size_t i = 0; i < n; i++) vmax = fabs(v_head[i]) > vmax ? fabs(v_head[i]) : vmax;
    const double unit = dt == ATTN_F16 ? ldexp(1.0, -10) : dt == ATTN_BF16 ? ldexp(1.0, -7)
                                                                           : ldexp(1.0, -19);
    return unit * vmax;
}

/* One scenario. Sequence b holds lens[b] tokens, appended in two steps
 * (the first half, then the rest); its last q_lens[b] = min(q_len,
 * lens[b]) tokens are the new queries. Every third token's K row is scaled
 * by k_mag and V row by v_mag (1: unit-normal data throughout, where the
 * int8 tolerance applies); token 1 of sequence 0, head 0, is all zero. */
typedef struct int8_case {
    int batch, q_heads, kv_heads, head_dim;
    int lens[MAXB];
    int q_len;
    int block_size; /* 0: contiguous */
    int left_pad;   /* appends through attn_kv_cache_append_rows, left-padded */
    int splits;     /* 0: automatic */
    float k_mag, v_mag;
    int pool_blocks; /* paged: the pool's blocks; 0 as many as batch * capacity */
} int8_case;

static int max_len(const int8_case *c)
{
    int n = 1;
    for (int b = 0; b < c->batch; b++) n = c->lens[b] > n ? c->lens[b] : n;
    return n;
}

static size_t kv_at(const int8_case *c, int N, int b, int h, int t)
{
    return (((size_t)b * c->kv_heads + h) * N + t) * c->head_dim;
}

/* Tokens first..first+count[b]-1 of every sequence from K/V ([B][Hkv][N][D]
 * floats) as one block of the longest count's rows, the rest NaN;
 * left-padded (rows at the block's end) when the case says so. */
static void append_part(attn_context *ctx, attn_kv_cache *cache, const int8_case *c,
                        attn_dtype dt, const float *k, const float *v, int N, const int *first,
                        const int *count)
{
    int block = 1, starts[MAXB];
    for (int b = 0; b < c->batch; b++) block = count[b] > block ? count[b] : block;
    const size_t n = (size_t)c->batch * c->kv_heads * block * c->head_dim;
    float *bk = harness_xalloc(n), *bv = harness_xalloc(n);
    for (size_t i = 0; i < n; i++) bk[i] = bv[i] = NAN;
    for (int b = 0; b < c->batch; b++) {
        starts[b] = c->left_pad ? block - count[b] : 0;
        for (int h = 0; h < c->kv_heads; h++)
            for (int r = 0; r < count[b]; r++) {
                const size_t to = kv_at(c, block, b, h, starts[b] + r);
                memcpy(bk + to, k + kv_at(c, N, b, h, first[b] + r), sizeof(float) * c->head_dim);
                memcpy(bv + to, v + kv_at(c, N, b, h, first[b] + r), sizeof(float) * c->head_dim);
            }
    }
    attn_tensor tk, tv;
    cl_mem mk = harness_upload(ctx, dt, bk, c->batch, c->kv_heads, block, c->head_dim, NULL, &tk);
    cl_mem mv = harness_upload(ctx, dt, bv, c->batch, c->kv_heads, block, c->head_dim, NULL, &tv);
    CU_ASSERT_FATAL(mk && mv);
    const attn_status st =
        c->left_pad ? attn_kv_cache_append_rows(cache, &tk, &tv, block, starts, count, NULL)
                    : attn_kv_cache_append(cache, &tk, &tv, block, count, NULL);
    if (st != ATTN_SUCCESS) printf("\n  append: %s\n", attn_last_error(ctx));
    CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
    clReleaseMemObject(mk), clReleaseMemObject(mv);
    free(bk), free(bv);
}

/* x quantized and dequantized row by row, as the cache holds it (floats,
 * before any rounding to the dtype) */
static void quant_dequant(const float *x, float *out, size_t rows, int D)
{
    signed char *q = malloc((size_t)D);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    for (size_t r = 0; r < rows; r++) {
        float s;
        attn_kv_quantize_row(x + r * D, D, q, &s);
        for (int d = 0; d < D; d++) out[r * D + d] = attn_kv_dequantize(q[d], s);
    }
    free(q);
}

/* attn_kv_cache_read of every sequence equals deq (the host's quantize-
 * dequantize) rounded to the dtype, bit for bit. */
static void check_read_back(attn_kv_cache *cache, const int8_case *c, attn_dtype dt,
                            const float *kdq, const float *vdq, int N, uint64_t seed)
{
    const int D = c->head_dim;
    for (int b = 0; b < c->batch; b++) {
        const int L = c->lens[b];
        const size_t n = (size_t)c->kv_heads * L * D;
        void *raw_k = malloc(n * 4), *raw_v = malloc(n * 4);
        float *gk = harness_xalloc(n), *gv = harness_xalloc(n), *ek = harness_xalloc(n),
              *ev = harness_xalloc(n);
        CU_ASSERT_FATAL(raw_k && raw_v);
        CU_ASSERT_EQUAL_FATAL(attn_kv_cache_read(cache, b, 0, L, raw_k, raw_v), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(attn_convert_to_f32(dt, raw_k, gk, n), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(attn_convert_to_f32(dt, raw_v, gv, n), ATTN_SUCCESS);
        for (int h = 0; h < c->kv_heads; h++) {
            memcpy(ek + (size_t)h * L * D, kdq + kv_at(c, N, b, h, 0), sizeof(float) * L * D);
            memcpy(ev + (size_t)h * L * D, vdq + kv_at(c, N, b, h, 0), sizeof(float) * L * D);
        }
        harness_round(dt, ek, n);
        harness_round(dt, ev, n);
        CU_ASSERT_EQUAL(harness_compare("read-back K vs host quantize", gk, ek, n, 0, 0, seed), 0);
        CU_ASSERT_EQUAL(harness_compare("read-back V vs host quantize", gv, ev, n, 0, 0, seed), 0);
        free(raw_k), free(raw_v), free(gk), free(gv), free(ek), free(ev);
    }
}

/* One scenario under one family and dtype: cache, read-back, and unless
 * paged the decode (the decode kernels read through the block table in
 * another branch of issue 14: test_paged decodes once that has merged). */
static void run_case(const int8_case *c, harness_family fam, const char *extra, attn_dtype dt,
                     uint64_t seed)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    const int B = c->batch, HQ = c->q_heads, HKV = c->kv_heads, D = c->head_dim, N = max_len(c);
    const size_t nk = (size_t)B * HKV * N * D, nq = (size_t)B * HQ * c->q_len * D;
    float *k = harness_xalloc(nk), *v = harness_xalloc(nk), *kdq = harness_xalloc(nk),
          *vdq = harness_xalloc(nk), *q = harness_xalloc(nq), *got = harness_xalloc(nq),
          *ref = harness_xalloc(nq);
    float *lse = harness_xalloc((size_t)B * HQ * c->q_len),
          *ref_lse = harness_xalloc((size_t)B * HQ * c->q_len);
    harness_fill_normal(k, nk, seed, 0.0f, 1.0f);
    harness_fill_normal(v, nk, seed + 1, 0.0f, 1.0f);
    harness_fill_normal(q, nq, seed + 2, 0.0f, 1.0f);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HKV; h++)
            for (int t = 0; t < N; t += 3)
                for (int d = 0; d < D; d++) {
                    k[kv_at(c, N, b, h, t) + d] *= c->k_mag;
                    v[kv_at(c, N, b, h, t) + d] *= c->v_mag;
                }
    if (c->lens[0] > 1) {
        memset(k + kv_at(c, N, 0, 0, 1), 0, sizeof(float) * D);
        memset(v + kv_at(c, N, 0, 0, 1), 0, sizeof(float) * D);
    }
    harness_round(dt, k, nk);
    harness_round(dt, v, nk);
    harness_round(dt, q, nq);
    quant_dequant(k, kdq, nk / D, D);
    quant_dequant(v, vdq, nk / D, D);

    const attn_kv_cache_desc desc = {.batch = B, .kv_heads = HKV, .head_dim = D,
                                     .capacity = N + 5, .dtype = dt,
                                     .block_size = c->block_size, .storage = ATTN_KV_INT8,
                                     .num_blocks = c->pool_blocks};
    attn_kv_cache *cache = NULL;
    attn_status st = attn_kv_cache_create_desc(ctx, &desc, &cache);
    if (st != ATTN_SUCCESS) printf("\n  create: %s\n", attn_last_error(ctx));
    CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
    int first[MAXB] = {0}, count[MAXB], q_lens[MAXB];
    for (int b = 0; b < B; b++) count[b] = c->lens[b] / 2;
    append_part(ctx, cache, c, dt, k, v, N, first, count);
    for (int b = 0; b < B; b++) {
        first[b] = count[b];
        count[b] = c->lens[b] - count[b];
        q_lens[b] = c->q_len < c->lens[b] ? c->q_len : c->lens[b];
    }
    append_part(ctx, cache, c, dt, k, v, N, first, count);
    check_read_back(cache, c, dt, kdq, vdq, N, seed);

    /* the decode's queries: rows 0..q_lens[b]-1 of q, the rest ignored */
    const attn_problem p = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D,
                            .q_len = c->q_len, .kv_len = N, .dtype = dt, .causal = 1};
    attn_tensor tq, to;
    cl_mem mq = harness_upload(ctx, dt, q, B, HQ, c->q_len, D, NULL, &tq);
    cl_mem mo = harness_alloc(ctx, dt, B, HQ, c->q_len, D, NULL, &to);
    cl_mem ml = harness_float_buffer(ctx, (size_t)B * HQ * c->q_len);
    CU_ASSERT_FATAL(mq && mo && ml);
    char params[64];
    snprintf(params, sizeof params, "splits=%d%s%s", c->splits, *extra ? "," : "", extra);
    CU_ASSERT_EQUAL_FATAL(harness_use_family(ctx, fam, params), ATTN_SUCCESS);
    attn_plan_info info;
    CU_ASSERT_EQUAL_FATAL(attn_decode_prepare(ctx, cache, &p, &info), ATTN_SUCCESS);
    if (fam != HARNESS_AUTO) /* the family forced is the one that runs */
        CU_ASSERT_STRING_EQUAL(info.family, harness_family_name(fam));
    st = attn_decode(ctx, cache, &p, &tq, &to, q_lens, ml, NULL);
    if (st != ATTN_SUCCESS) printf("\n  attn_decode: %s\n", attn_last_error(ctx));
    CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(harness_download(ctx, dt, &to, B, HQ, c->q_len, D, got), 0);
    CU_ASSERT_EQUAL_FATAL(harness_read_floats(ctx, ml, lse, (size_t)B * HQ * c->q_len), 0);

    char what[160];
    double atol, rtol;
    const attn_lengths L = {NULL, q_lens, NULL, c->lens};
    snprintf(what, sizeof what, "%s %s %s D%d int8 decode vs reference over dequantized K/V",
             harness_family_name(fam), params, attn_dtype_name(dt), D);
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, kdq, vdq, ref, &L, ref_lse), ATTN_SUCCESS);
    attn_tolerance(dt, &atol, &rtol);
    if (fam == HARNESS_MMA && (c->k_mag != 1.0f || c->v_mag != 1.0f)) {
        /* each query head's rows against its KV head's bound */
        const size_t rows = (size_t)c->q_len * D;
        for (int b = 0; b < B; b++)
            for (int h = 0; h < HQ; h++) {
                const size_t at = ((size_t)b * HQ + h) * rows;
                const double bound =
                    atol + mma_pv_error(dt, vdq + kv_at(c, N, b, h / (HQ / HKV), 0), (size_t)N * D);
                CU_ASSERT_EQUAL(harness_compare(what, got + at, ref + at, rows, bound, rtol, seed),
                                0);
            }
    } else {
        CU_ASSERT_EQUAL(harness_compare(what, got, ref, nq, atol, rtol, seed), 0);
    }
    CU_ASSERT_EQUAL(harness_compare("LSE", lse, ref_lse, (size_t)B * HQ * c->q_len, atol, rtol,
                                    seed), 0);
    if (c->k_mag == 1.0f && c->v_mag == 1.0f) {
        snprintf(what, sizeof what, "%s %s %s D%d int8 decode vs reference over unquantized "
                 "K/V", harness_family_name(fam), params, attn_dtype_name(dt), D);
        CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, ref, &L, NULL), ATTN_SUCCESS);
        attn_kv_tolerance(ATTN_KV_INT8, dt, &atol, &rtol);
        CU_ASSERT_EQUAL(harness_compare(what, got, ref, nq, atol, rtol, seed), 0);
    }
    harness_use_params(ctx, NULL);
    clReleaseMemObject(mq), clReleaseMemObject(mo), clReleaseMemObject(ml);
    attn_kv_cache_release(cache);
    free(k), free(v), free(kdq), free(vdq), free(q), free(got), free(ref), free(lse),
        free(ref_lse);
}

static const harness_family families[] = {HARNESS_VECTOR, HARNESS_TILED, HARNESS_MMA};
#define NFAM ((int)(sizeof families / sizeof families[0]))

/* Every family and dtype over one scenario (mma: head dims that are a
 * multiple of 16, the others' only). */
static void run_all(const int8_case *c, uint64_t dflt_seed)
{
    const uint64_t seed = harness_seed(dflt_seed);
    for (int f = 0; f < NFAM; f++)
        for (int t = 0; t < NDT; t++)
            if (families[f] != HARNESS_MMA || c->head_dim % 16 == 0)
                run_case(c, families[f], "", dtypes[t], seed);
}

/* ---- the host quantizer ---- */

static void test_quantize_row(void)
{
    signed char q[8];
    float s;
    /* scale 1: the quotients are the values; ties to even, both signs */
    const float x[8] = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -127.0f, 3.49f};
    const signed char want[8] = {127, 0, 2, 2, 0, -2, -127, 3};
    attn_kv_quantize_row(x, 8, q, &s);
    CU_ASSERT_EQUAL(s, 1.0f);
    CU_ASSERT_EQUAL(memcmp(q, want, sizeof want), 0);
    /* the largest element maps to +-127 whatever the scale's rounding */
    const float y[3] = {-3.0e-3f, 1.0e-3f, 0.0f};
    attn_kv_quantize_row(y, 3, q, &s);
    CU_ASSERT_EQUAL(s, 3.0e-3f / 127.0f);
    CU_ASSERT_EQUAL(q[0], -127);
    CU_ASSERT_EQUAL(q[1], 42); /* 127 / 3 = 42.33 */
    CU_ASSERT_EQUAL(q[2], 0);
    /* an all-zero row: scale 0, zeros */
    const float z[4] = {0.0f, -0.0f, 0.0f, 0.0f};
    memset(q, 5, sizeof q);
    attn_kv_quantize_row(z, 4, q, &s);
    CU_ASSERT_EQUAL(s, 0.0f);
    CU_ASSERT(q[0] == 0 && q[1] == 0 && q[2] == 0 && q[3] == 0);
    /* inf or NaN: the whole row reads back as NaN */
    const float w[3] = {1.0f, INFINITY, 2.0f};
    attn_kv_quantize_row(w, 3, q, &s);
    CU_ASSERT(isnan(s));
    CU_ASSERT(q[0] == 0 && q[1] == 0 && q[2] == 0);
    CU_ASSERT(isnan(attn_kv_dequantize(q[0], s)));
    /* max|x| = FLT_MAX: FLT_MAX / 127 rounds up, and 127 times it was inf */
    const float big[3] = {FLT_MAX, -FLT_MAX, 1.0f};
    attn_kv_quantize_row(big, 3, q, &s);
    CU_ASSERT(q[0] == 127 && q[1] == -127);
    CU_ASSERT(isfinite(attn_kv_dequantize(q[0], s)) && isfinite(attn_kv_dequantize(q[1], s)));
}

/* The append kernel quantizes a row holding FLT_MAX as the host does: it
 * reads back finite, equal to the host's. */
static void test_flt_max_row(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    enum { D = 16 };
    const attn_kv_cache_desc desc = {1, 1, D, 4, ATTN_F32, 0, 0, ATTN_KV_INT8};
    attn_kv_cache *cache = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, &desc, &cache), ATTN_SUCCESS);
    float x[D], got[D], want[D];
    for (int d = 0; d < D; d++) x[d] = d == D - 1 ? -FLT_MAX : d == 0 ? FLT_MAX : 1.0f;
    attn_tensor t;
    cl_mem m = harness_upload(ctx, ATTN_F32, x, 1, 1, 1, D, NULL, &t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, &t, &t, 1, NULL, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_kv_cache_read(cache, 0, 0, 1, got, NULL), ATTN_SUCCESS);
    signed char q[D];
    float s;
    attn_kv_quantize_row(x, D, q, &s);
    for (int d = 0; d < D; d++) want[d] = attn_kv_dequantize(q[d], s);
    CU_ASSERT(isfinite(got[0]) && isfinite(got[D - 1]));
    CU_ASSERT_EQUAL(memcmp(got, want, sizeof got), 0);
    clReleaseMemObject(m);
    attn_kv_cache_release(cache);
}

/* The append kernel gives a row holding an inf or a NaN (K or V) scale
 * NaN: every element of it reads back NaN (decode.h), its neighbours
 * finite. */
static void test_nonfinite_rows_read_nan(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    enum { D = 8, T = 4 };
    const attn_kv_cache_desc desc = {1, 1, D, 8, ATTN_F32, 0, 0, ATTN_KV_INT8};
    attn_kv_cache *cache = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, &desc, &cache), ATTN_SUCCESS);
    float k[T * D], v[T * D], rk[T * D], rv[T * D];
    for (int i = 0; i < T * D; i++) k[i] = v[i] = 0.25f * (float)(i % 7) - 0.5f;
    k[1 * D + 3] = INFINITY; /* row 1: K inf, V finite */
    v[2 * D + 5] = NAN;      /* row 2: V NaN, K finite */
    k[3 * D] = -INFINITY, v[3 * D + 7] = NAN;
    attn_tensor tk, tv;
    cl_mem mk = harness_upload(ctx, ATTN_F32, k, 1, 1, T, D, NULL, &tk);
    cl_mem mv = harness_upload(ctx, ATTN_F32, v, 1, 1, T, D, NULL, &tv);
    CU_ASSERT_FATAL(mk && mv);
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, &tk, &tv, T, NULL, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_kv_cache_read(cache, 0, 0, T, rk, rv), ATTN_SUCCESS);
    for (int r = 0; r < T; r++) {
        const int kbad = r == 1 || r == 3, vbad = r == 2 || r == 3;
        for (int d = 0; d < D; d++) {
            CU_ASSERT_EQUAL(isnan(rk[r * D + d]) != 0, kbad);
            CU_ASSERT_EQUAL(isnan(rv[r * D + d]) != 0, vbad);
            if (!kbad) CU_ASSERT(isfinite(rk[r * D + d]));
            if (!vbad) CU_ASSERT(isfinite(rv[r * D + d]));
        }
    }
    clReleaseMemObject(mk), clReleaseMemObject(mv);
    attn_kv_cache_release(cache);
}

/* int8's tolerance adds to the dtype's; a cache as dtype keeps the dtype's */
static void test_tolerance_order(void)
{
    for (int t = 0; t < NDT; t++) {
        double a, r, a8, r8;
        attn_tolerance(dtypes[t], &a, &r);
        attn_kv_tolerance(ATTN_KV_INT8, dtypes[t], &a8, &r8);
        CU_ASSERT(a8 > a && r8 > r);
        attn_kv_tolerance(ATTN_KV_AS_DTYPE, dtypes[t], &a8, &r8);
        CU_ASSERT(a8 == a && r8 == r);
    }
}

/* ---- decode over int8 caches ---- */

/* GQA, ragged lengths across key blocks, splits automatic */
static void test_gqa_ragged(void)
{
    const int8_case c = {3, 8, 2, 64, {37, 1, 300}, 1, 0, 0, 0, 1.0f, 1.0f, 0};
    run_all(&c, 0x18a1);
}

/* the same forced into 3 splits, and a speculative block of 4 queries */
static void test_gqa_split_block(void)
{
    const int8_case c = {3, 8, 2, 64, {200, 5, 130}, 4, 0, 0, 3, 1.0f, 1.0f, 0};
    run_all(&c, 0x18a2);
}

/* the tiled kernel reading K/V from global: the scales on the score and
 * on p, not on staged K/V */
static void test_tiled_global_kv(void)
{
    const int8_case c = {3, 8, 2, 64, {200, 5, 130}, 4, 0, 0, 3, 1.0f, 1.0f, 0};
    for (int t = 0; t < 2; t++)
        run_case(&c, HARNESS_TILED, "local_kv=0", dtypes[t], harness_seed(0x18a6));
}

/* MQA, an odd head dim (row padding 19 -> 32), left-padded appends; in
 * check mode, which compares an int8 decode with the reference over the
 * cache read back (dequantized) */
static void test_mqa_odd_dim_left_padded(void)
{
    const int8_case c = {2, 4, 1, 19, {50, 9}, 3, 0, 1, 2, 1.0f, 1.0f, 0};
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_check(ctx, 1), ATTN_SUCCESS);
    run_all(&c, 0x18a3);
    attn_context_set_check(ctx, 0);
}

/* Check mode over an int8 cache in f16 and bf16 where attention is sharp
 * (q and K of 3x unit scale): the check's reference reads the cache's
 * dequantized floats, as the kernels do. Rounded to the dtype first (as it
 * was), it differed from a correct decode by more than the tolerance
 * (measured 0.0025 in f16, 0.025 in bf16) and check mode said MISMATCH. */
static void test_check_mode_sharp(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    const uint64_t seed = harness_seed(0x18aa);
    const int B = 1, HQ = 8, HKV = 2, D = 128, S = 256;
    const int8_case c = {B, HQ, HKV, D, {S}, 1, 0, 0, 0, 1.0f, 1.0f, 0};
    const size_t nk = (size_t)B * HKV * S * D, nq = (size_t)B * HQ * D;
    float *k = harness_xalloc(nk), *v = harness_xalloc(nk), *q = harness_xalloc(nq);
    harness_fill_normal(k, nk, seed, 0.0f, 3.0f);
    harness_fill_normal(v, nk, seed + 1, 0.0f, 1.0f);
    harness_fill_normal(q, nq, seed + 2, 0.0f, 3.0f);
    const harness_family fams[] = {HARNESS_VECTOR, HARNESS_TILED};
    CU_ASSERT_EQUAL_FATAL(attn_context_set_check(ctx, 1), ATTN_SUCCESS);
    for (int t = 1; t < NDT; t++)
        for (int f = 0; f < 2; f++) {
            const attn_dtype dt = dtypes[t];
            const attn_kv_cache_desc desc = {.batch = B, .kv_heads = HKV, .head_dim = D,
                                             .capacity = S, .dtype = dt,
                                             .storage = ATTN_KV_INT8};
            attn_kv_cache *cache = NULL;
            CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, &desc, &cache), ATTN_SUCCESS);
            const int first[MAXB] = {0}, count[MAXB] = {S};
            append_part(ctx, cache, &c, dt, k, v, S, first, count);
            const attn_problem p = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D,
                                    .q_len = 1, .kv_len = S, .dtype = dt, .causal = 1};
            attn_tensor tq, to;
            cl_mem mq = harness_upload(ctx, dt, q, B, HQ, 1, D, NULL, &tq);
            cl_mem mo = harness_alloc(ctx, dt, B, HQ, 1, D, NULL, &to);
            CU_ASSERT_FATAL(mq && mo);
            CU_ASSERT_EQUAL_FATAL(harness_use_family(ctx, fams[f], ""), ATTN_SUCCESS);
            const attn_status st = attn_decode(ctx, cache, &p, &tq, &to, NULL, NULL, NULL);
            if (st != ATTN_SUCCESS)
                printf("\n  %s %s: %s", harness_family_name(fams[f]), attn_dtype_name(dt),
                       attn_last_error(ctx));
            CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
            harness_use_params(ctx, NULL);
            clReleaseMemObject(mq), clReleaseMemObject(mo);
            attn_kv_cache_release(cache);
        }
    attn_context_set_check(ctx, 0);
    free(k), free(v), free(q);
}

/* rows of large magnitude beside unit ones, and the zero row: each row's
 * own scale (against the dequantized reference only: the int8 tolerance is
 * for unit-scale data) */
static void test_large_rows(void)
{
    const int8_case c = {2, 4, 2, 64, {70, 33}, 1, 0, 0, 0, 8.0f, 1000.0f, 0};
    run_all(&c, 0x18a4);
}

/* a paged cache of 16-token blocks: scales follow the block table; an odd
 * head dim */
static void test_paged(void)
{
    const int8_case c = {3, 8, 2, 64, {40, 17, 3}, 2, 16, 1, 0, 1.0f, 1.0f, 0};
    run_all(&c, 0x18a5);
    /* D37 (rows of 48): the tiled kernel's last 16-byte vector of a row
     * holds 5 columns and 11 of padding, of which only what fits the
     * __local row (up to 40) is stored */
    const int8_case odd = {2, 4, 2, 37, {40, 29}, 2, 16, 0, 2, 1.0f, 1.0f, 0};
    run_all(&odd, 0x18a9);
    /* pages out of order: the pool gives a sequence the page after its
     * last where free (above, each sequence's pages run in order); in a
     * pool of just the 9 blocks needed, sequence 0's second half runs into
     * the pages of the others' first and takes its last pages as 0-3, 4,
     * 8, 7, so that a lookup taking the first entry plus an offset reads
     * other sequences' rows */
    const int8_case scattered = {3, 4, 2, 32, {100, 3, 3}, 2, 16, 0, 0, 1.0f, 1.0f, 9};
    run_all(&scattered, 0x18aa);
}

/* long query blocks (more than ATTN_DECODE_MAX_Q_LEN: a chunked prefill,
 * through the prefill kernels reading the cache, which dequantize as they
 * pack), contiguous with left-padded appends and paged; sequence 1's
 * queries are its whole cache */
static void test_long_block(void)
{
    const int8_case c = {3, 8, 2, 64, {300, 70, 150}, 100, 0, 1, 0, 1.0f, 1.0f, 0};
    run_all(&c, 0x18a7);
    const int8_case paged = {3, 8, 2, 40, {300, 70, 150}, 100, 16, 0, 0, 1.0f, 1.0f, 0};
    run_all(&paged, 0x18a8);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_quantize_row),
    HARNESS_TEST(test_flt_max_row),
    HARNESS_TEST(test_nonfinite_rows_read_nan),
    HARNESS_TEST(test_tolerance_order),
    HARNESS_TEST(test_gqa_ragged),
    HARNESS_TEST(test_gqa_split_block),
    HARNESS_TEST(test_tiled_global_kv),
    HARNESS_TEST(test_mqa_odd_dim_left_padded),
    HARNESS_TEST(test_check_mode_sharp),
    HARNESS_TEST(test_large_rows),
    HARNESS_TEST(test_paged),
    HARNESS_TEST(test_long_block),
    HARNESS_END};

static void register_tests(void) { harness_add_suite("decode_int8", tests); }

int main(void) { return harness_run("test_decode_int8", register_tests); }
