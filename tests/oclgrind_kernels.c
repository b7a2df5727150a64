/* oclgrind_kernels.c -- every kernel family on tiny shapes, meant to run on
 * Oclgrind's simulated device (tools/check-oclgrind.sh runs it under
 * `oclgrind --data-races --check-api` with ATTN_TEST_DEVICE=oclgrind), where
 * out-of-bounds accesses, races, and barrier divergence are reported, and
 * whose results must match the CPU reference like any other device's.
 *
 * Families: vector (attn_pack_kv + attn_fwd_vector) at small and default
 * tiles; tiled with K/V read from global (local_kv=0) and staged in __local
 * (local_kv=1). Shapes: lengths that end mid-tile, Sq != Skv on the causal
 * diagonal, left and right padding with an empty batch entry, GQA and MQA,
 * head dims that are not a multiple of 4, strided layouts, all three dtypes.
 * Oclgrind interprets every work-item, so everything here stays tiny.
 *
 * Decode: a ragged cache (kv_append.cl), a block of new queries with a pad
 * row, each decode kernel unsplit and split (decode_*.cl and the combine).
 *
 * The stage runs twice (tools/check-oclgrind.sh). The first pass, on the
 * optimised kernels, also runs the vector family with its scratch (packed
 * K/V) filled with NaN first: a read of anything the pack kernel did not
 * write shows as a NaN or a mismatch. The second pass adds --uninitialized
 * (ATTN_OCLGRIND_UNINITIALIZED=1) with the kernels built at -O0
 * (OCLGRIND_BUILD_OPTIONS=-cl-opt-disable): Oclgrind 21.10's uninitialised-
 * value plugin crashes on the optimiser's shuffles with undefined mask
 * lanes (vector family, peak kernel) and stops on its `freeze`
 * instruction (tiled family). Buffers the caller owns are NaN outside the
 * tensors already (harness_alloc). */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "internal.h" /* the vector family's scratch buffers, to poison or reserve them */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


typedef struct ocase {
    const char *name;
    int B, Hq, Hkv, D, Sq, Skv;
    attn_dtype dtype;
    int causal;
    const int *q_start, *q_len, *kv_start, *kv_len; /* NULL: full */
    harness_layout lq, lkv, lo;
} ocase;

static const int pad_qs[3] = {0, 4, 0}, pad_ql[3] = {7, 6, 3};
static const int pad_ks[3] = {0, 5, 2}, pad_kl[3] = {9, 7, 0}; /* entry 2: no keys at all */

static const ocase cases[] = {
    /* lengths 13: every tile size above ends mid-tile; the plain triangle */
    {"edges S13 D8 MHA", 1, 2, 2, 8, 13, 13, ATTN_F32, 1, NULL, NULL, NULL, NULL,
     {0}, {0}, {0}},
    /* decode-like GQA 4:2, D not a multiple of 4, bottom-right diagonal */
    {"GQA Sq3 Skv19 D6 f16", 1, 4, 2, 6, 3, 19, ATTN_F16, 1, NULL, NULL, NULL, NULL,
     {0}, {0}, {0}},
    /* MQA with right, left and empty padding, causal over the valid parts */
    {"MQA padded B3 bf16", 3, 2, 1, 8, 10, 12, ATTN_BF16, 1, pad_qs, pad_ql, pad_ks, pad_kl,
     {0}, {0}, {0}},
    /* Sq > Skv: the first rows see nothing (zeros and -inf) */
    {"Sq9 > Skv5 D4", 1, 1, 1, 4, 9, 5, ATTN_F32, 1, NULL, NULL, NULL, NULL, {0}, {0}, {0}},
    /* non-causal, strided: BSHD with row padding and an offset, KV with spare capacity */
    /* the default tiles (16 or 8 rows, 32 keys): two blocks each way, ending mid-tile */
    {"default tiles S40 D16", 1, 2, 1, 16, 40, 40, ATTN_F32, 1, NULL, NULL, NULL, NULL,
     {0}, {0}, {0}},
    {"strided non-causal D5", 2, 2, 1, 5, 6, 11, ATTN_F32, 0, NULL, NULL, NULL, NULL,
     {HARNESS_BSHD, 3, 2, 0}, {HARNESS_BHSD, 1, 3, 4}, {HARNESS_BSHD, 7, 1, 0}},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

static int is_nan_pattern(attn_dtype t, const unsigned char *p)
{
    if (t == ATTN_F32) {
        float f;
        memcpy(&f, p, sizeof f);
        return isnan(f);
    }
    uint16_t w;
    memcpy(&w, p, sizeof w);
    return t == ATTN_F16 ? (w & 0x7fffu) > 0x7c00u : (w & 0x7fffu) > 0x7f80u;
}

/* Elements of t's buffer outside the tensor that are no longer NaN. */
static int gaps_written(attn_context *ctx, attn_dtype dtype, const attn_tensor *t, int B, int H,
                        int S, int D)
{
    size_t esize = attn_dtype_size(dtype), bytes = 0;
    clGetMemObjectInfo(t->buffer, CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
    size_t n = bytes / esize;
    unsigned char *raw = malloc(bytes), *owned = calloc(n, 1);
    CU_ASSERT_FATAL(raw != NULL && owned != NULL);
    CU_ASSERT_EQUAL_FATAL(clEnqueueReadBuffer(attn_context_queue(ctx), t->buffer, CL_TRUE, 0,
                                              bytes, raw, 0, NULL, NULL), CL_SUCCESS);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int s = 0; s < S; s++)
                memset(owned + t->offset + (size_t)b * t->stride_batch +
                           (size_t)h * t->stride_head + (size_t)s * t->stride_seq, 1, (size_t)D);
    int bad = 0;
    for (size_t i = 0; i < n; i++) bad += !owned[i] && !is_nan_pattern(dtype, raw + i * esize);
    free(raw);
    free(owned);
    return bad;
}

/* One case under one parameter set; returns the number of failed checks.
 * poison: fill the vector family's scratch buffers with NaN first. */
static int run_one(const ocase *c, const char *params, uint64_t seed, int poison)
{
    attn_context *ctx = harness_context();
    const size_t nq = (size_t)c->B * c->Hq * c->Sq * c->D;
    const size_t nkv = (size_t)c->B * c->Hkv * c->Skv * c->D;
    const size_t nrows = (size_t)c->B * c->Hq * c->Sq;
    float *q = malloc(nq * 4), *k = malloc(nkv * 4), *v = malloc(nkv * 4);
    float *ref = malloc(nq * 4), *got = malloc(nq * 4), *back = malloc((nq > nkv ? nq : nkv) * 4);
    float *ref_lse = malloc(nrows * 4), *got_lse = malloc(nrows * 4);
    CU_ASSERT_FATAL(q && k && v && ref && got && back && ref_lse && got_lse);
    harness_fill_normal(q, nq, seed, 0.0f, 1.0f);
    harness_fill_normal(k, nkv, seed + 1, 0.0f, 1.0f);
    harness_fill_uniform(v, nkv, seed + 2, -2.0f, 2.0f);
    harness_round(c->dtype, q, nq);
    harness_round(c->dtype, k, nkv);
    harness_round(c->dtype, v, nkv);

    attn_problem p = {c->B, c->Hq, c->Hkv, c->D, c->Sq, c->Skv, c->dtype, c->causal, 0.0f};
    attn_lengths L = {c->q_start, c->q_len, c->kv_start, c->kv_len};
    const attn_lengths *lp = c->q_len || c->kv_len ? &L : NULL;
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, ref, lp, ref_lse), ATTN_SUCCESS);

    attn_tensor tq, tk, tv, to;
    cl_mem mq = harness_upload(ctx, c->dtype, q, c->B, c->Hq, c->Sq, c->D, &c->lq, &tq);
    cl_mem mk = harness_upload(ctx, c->dtype, k, c->B, c->Hkv, c->Skv, c->D, &c->lkv, &tk);
    cl_mem mv = harness_upload(ctx, c->dtype, v, c->B, c->Hkv, c->Skv, c->D, &c->lkv, &tv);
    cl_mem mo = harness_alloc(ctx, c->dtype, c->B, c->Hq, c->Sq, c->D, &c->lo, &to);
    cl_mem mlse = harness_float_buffer(ctx, nrows);
    CU_ASSERT_FATAL(mq && mk && mv && mo && mlse);

    int bad = 0;
    if (poison) { /* the scratch exists (the first run made it): NaN everywhere */
        const float nan = NAN;
        attn_scratch *sc[2] = {&ctx->kt, &ctx->vp};
        for (int i = 0; i < 2; i++)
            CU_ASSERT_EQUAL_FATAL(clEnqueueFillBuffer(attn_context_queue(ctx), sc[i]->mem, &nan,
                                                      sizeof nan, 0, sc[i]->bytes, 0, NULL, NULL),
                                  CL_SUCCESS);
    }
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, params), ATTN_SUCCESS);
    attn_status st = attn_forward(ctx, &p, &tq, &tk, &tv, &to, lp, mlse, NULL);
    attn_context_set_params(ctx, NULL);
    if (st != ATTN_SUCCESS) {
        printf("\n  attn_forward: %s: %s\n", attn_status_name(st), attn_last_error(ctx));
        bad++;
    } else {
        double atol, rtol;
        attn_tolerance(c->dtype, &atol, &rtol);
        CU_ASSERT_EQUAL_FATAL(clFinish(attn_context_queue(ctx)), CL_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(harness_download(ctx, c->dtype, &to, c->B, c->Hq, c->Sq, c->D, got), 0);
        CU_ASSERT_EQUAL_FATAL(harness_read_floats(ctx, mlse, got_lse, nrows), 0);
        bad += harness_compare("O", got, ref, nq, atol, rtol, seed);
        bad += harness_compare("LSE", got_lse, ref_lse, nrows, atol, rtol, seed);
        int gaps = gaps_written(ctx, c->dtype, &to, c->B, c->Hq, c->Sq, c->D);
        if (gaps) printf("\n  %d elements outside O were written\n", gaps);
        bad += gaps;
        /* the inputs are left alone */
        CU_ASSERT_EQUAL_FATAL(harness_download(ctx, c->dtype, &tq, c->B, c->Hq, c->Sq, c->D, back), 0);
        bad += memcmp(back, q, nq * 4) != 0;
        CU_ASSERT_EQUAL_FATAL(harness_download(ctx, c->dtype, &tk, c->B, c->Hkv, c->Skv, c->D, back), 0);
        bad += memcmp(back, k, nkv * 4) != 0;
        CU_ASSERT_EQUAL_FATAL(harness_download(ctx, c->dtype, &tv, c->B, c->Hkv, c->Skv, c->D, back), 0);
        bad += memcmp(back, v, nkv * 4) != 0;
    }
    printf("\n  %-24s %-46s %s%s", c->name, params, poison ? "scratch NaN " : "",
           bad ? "FAILED" : "ok");
    clReleaseMemObject(mq);
    clReleaseMemObject(mk);
    clReleaseMemObject(mv);
    clReleaseMemObject(mo);
    clReleaseMemObject(mlse);
    free(q), free(k), free(v), free(ref), free(got), free(back), free(ref_lse), free(got_lse);
    return bad;
}

/* Every case under one parameter set. */
static void run_set(const char *params)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    char platform[256] = "";
    cl_platform_id pl = NULL;
    clGetDeviceInfo(attn_context_device(ctx), CL_DEVICE_PLATFORM, sizeof pl, &pl, NULL);
    clGetPlatformInfo(pl, CL_PLATFORM_NAME, sizeof platform, platform, NULL);
    printf("\n  platform: %s", platform);
    uint64_t seed = harness_seed(600);
    /* Under --uninitialized Oclgrind tracks the unwritten scratch itself:
     * no NaN runs (a host fill would mark the scratch initialised), and the
     * scratch is made once, larger than any case needs, before the first
     * kernel: Oclgrind 21.10 keeps the shadow of a released buffer, so a
     * scratch re-created larger under a reused buffer id would read as
     * uninitialised past the old size. */
    const char *uninit = getenv("ATTN_OCLGRIND_UNINITIALIZED");
    const int tracked = uninit && *uninit == '1';
    if (tracked)
        CU_ASSERT_FATAL(attn_scratch_reserve(ctx, &ctx->kt, 1 << 20) == ATTN_SUCCESS &&
                        attn_scratch_reserve(ctx, &ctx->vp, 1 << 20) == ATTN_SUCCESS);
    const int vector = strstr(params, "family=vector") != NULL && !tracked;
    for (int i = 0; i < NCASES; i++)
        for (int poison = 0; poison <= vector; poison++)
            CU_ASSERT_EQUAL(run_one(&cases[i], params, seed + 10 * (uint64_t)i, poison), 0);
    printf("\n");
}

/* Small tiles make tiny shapes span several tiles and end inside one. */
static void test_vector_small_tiles(void) { run_set("family=vector,rows=4,keys=8,vec=4"); }
/* the CPU heuristic's choice */
static void test_vector_default(void) { run_set("family=vector,rows=8,keys=32,vec=16"); }
static void test_tiled_global_kv(void) { run_set("family=tiled,rows=4,keys=8,wg=16,local_kv=0"); }
static void test_tiled_local_kv(void) { run_set("family=tiled,rows=4,keys=8,wg=16,local_kv=1"); }
/* the GPU heuristic's choice */
static void test_tiled_default(void) { run_set("family=tiled,rows=16,keys=32,wg=128,local_kv=1"); }

/* Decode on a ragged cache: sequence lengths 13 and 3 after two appends,
 * then 2 new queries for sequence 0 and 1 (a pad row) for sequence 1,
 * against the reference over the whole sequences (bottom-right causal). */
static void decode_set(const char *family, int splits)
{
    enum { B = 2, HQ = 4, HKV = 2, DD = 6, CAP = 20, NEW = 2 };
    static const int prompt[B] = {11, 2}, q_lens[B] = {NEW, 1};
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    const uint64_t seed = harness_seed(700);
    const size_t nk = (size_t)B * HKV * CAP * DD, nq = (size_t)B * HQ * NEW * DD;
    const size_t rows = (size_t)B * HQ * NEW;
    float *k = malloc(nk * 4), *v = malloc(nk * 4), *q = malloc(nq * 4), *ref = malloc(nq * 4);
    float *got = malloc(nq * 4), *ref_lse = malloc(rows * 4), *got_lse = malloc(rows * 4);
    CU_ASSERT_FATAL(k && v && q && ref && got && ref_lse && got_lse);
    harness_fill_normal(k, nk, seed, 0.0f, 1.0f);
    harness_fill_uniform(v, nk, seed + 1, -2.0f, 2.0f);
    harness_fill_normal(q, nq, seed + 2, 0.0f, 1.0f);
    int len[B];
    for (int b = 0; b < B; b++) len[b] = prompt[b] + q_lens[b];
    attn_problem rp = {B, HQ, HKV, DD, NEW, CAP, ATTN_F32, 1, 0.0f};
    attn_lengths L = {NULL, q_lens, NULL, len};
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&rp, q, k, v, ref, &L, ref_lse), ATTN_SUCCESS);

    attn_kv_cache *cache = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, B, HKV, DD, CAP, ATTN_F32, &cache),
                          ATTN_SUCCESS);
    const char *uninit = getenv("ATTN_OCLGRIND_UNINITIALIZED");
    if (uninit && *uninit == '1') {
        /* The cache is zeroed at creation by clEnqueueFillBuffer, which
         * Oclgrind 21.10's shadow memory records pattern by pattern, as a
         * buffer of one pattern's size: write the same zeros in one piece. */
        attn_tensor ck, cv;
        CU_ASSERT_EQUAL_FATAL(attn_kv_cache_tensors(cache, &ck, &cv), ATTN_SUCCESS);
        cl_mem bufs[2] = {ck.buffer, cv.buffer};
        for (int i = 0; i < 2; i++) {
            size_t bytes = 0;
            clGetMemObjectInfo(bufs[i], CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
            void *zeros = calloc(bytes, 1);
            CU_ASSERT_FATAL(zeros != NULL);
            CU_ASSERT_EQUAL_FATAL(clEnqueueWriteBuffer(attn_context_queue(ctx), bufs[i], CL_TRUE,
                                                       0, bytes, zeros, 0, NULL, NULL),
                                  CL_SUCCESS);
            free(zeros);
        }
    }
    attn_tensor tk, tv, tq, to;
    cl_mem mk = harness_upload(ctx, ATTN_F32, k, B, HKV, CAP, DD, NULL, &tk);
    cl_mem mv = harness_upload(ctx, ATTN_F32, v, B, HKV, CAP, DD, NULL, &tv);
    cl_mem mq = harness_upload(ctx, ATTN_F32, q, B, HQ, NEW, DD, NULL, &tq);
    cl_mem mo = harness_alloc(ctx, ATTN_F32, B, HQ, NEW, DD, NULL, &to);
    cl_mem ml = harness_float_buffer(ctx, rows);
    CU_ASSERT_FATAL(mk && mv && mq && mo && ml);
    /* the prompts, then this step's tokens (rows prompt[b].. of K and V) */
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_append(cache, &tk, &tv, CAP, prompt, NULL), ATTN_SUCCESS);
    float *bk = malloc((size_t)B * HKV * NEW * DD * 4), *bv = malloc((size_t)B * HKV * NEW * DD * 4);
    CU_ASSERT_FATAL(bk && bv);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HKV; h++)
            for (int r = 0; r < NEW; r++) {
                const size_t dst = (((size_t)b * HKV + h) * NEW + r) * DD;
                const size_t src = (((size_t)b * HKV + h) * CAP + prompt[b] + r) * DD;
                memcpy(bk + dst, k + src, DD * sizeof(float));
                memcpy(bv + dst, v + src, DD * sizeof(float));
            }
    attn_tensor sk, sv;
    cl_mem mbk = harness_upload(ctx, ATTN_F32, bk, B, HKV, NEW, DD, NULL, &sk);
    cl_mem mbv = harness_upload(ctx, ATTN_F32, bv, B, HKV, NEW, DD, NULL, &sv);
    CU_ASSERT_FATAL(mbk && mbv);
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_append(cache, &sk, &sv, NEW, q_lens, NULL), ATTN_SUCCESS);
    char params[96];
    snprintf(params, sizeof params, "family=%s,rows=4,splits=%d", family, splits);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, params), ATTN_SUCCESS);
    attn_problem p = {B, HQ, HKV, DD, NEW, 0, ATTN_F32, 1, 0.0f};
    attn_status st = attn_decode(ctx, cache, &p, &tq, &to, q_lens, ml, NULL);
    attn_context_set_params(ctx, NULL);
    int bad = 0;
    if (st != ATTN_SUCCESS) {
        printf("\n  attn_decode: %s: %s\n", attn_status_name(st), attn_last_error(ctx));
        bad++;
    } else {
        double atol, rtol;
        attn_tolerance(ATTN_F32, &atol, &rtol);
        CU_ASSERT_EQUAL_FATAL(harness_download(ctx, ATTN_F32, &to, B, HQ, NEW, DD, got), 0);
        CU_ASSERT_EQUAL_FATAL(harness_read_floats(ctx, ml, got_lse, rows), 0);
        bad += harness_compare("decode O", got, ref, nq, atol, rtol, seed);
        bad += harness_compare("decode LSE", got_lse, ref_lse, rows, atol, rtol, seed);
    }
    printf("\n  %-24s %-46s %s\n", "decode ragged D6", params, bad ? "FAILED" : "ok");
    CU_ASSERT_EQUAL(bad, 0);
    attn_kv_cache_release(cache);
    clReleaseMemObject(mk), clReleaseMemObject(mv), clReleaseMemObject(mq);
    clReleaseMemObject(mo), clReleaseMemObject(ml), clReleaseMemObject(mbk);
    clReleaseMemObject(mbv);
    free(k), free(v), free(q), free(ref), free(got), free(ref_lse), free(got_lse), free(bk);
    free(bv);
}

static void test_decode_vector(void)
{
    decode_set("vector", 1);
    decode_set("vector", 2);
}
static void test_decode_tiled(void)
{
    decode_set("tiled", 1);
    decode_set("tiled", 2);
}

/* The peak-measuring kernel (cl/peak.cl) too. */
static void test_peak(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    double gflops = 0;
    attn_status st = attn_device_peak_gflops(ctx, &gflops);
    printf("\n  peak: %s, %.3g GFLOP/s\n", attn_status_name(st), gflops);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    CU_ASSERT(gflops > 0);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_vector_small_tiles),
    HARNESS_TEST(test_vector_default),
    HARNESS_TEST(test_tiled_global_kv),
    HARNESS_TEST(test_tiled_local_kv),
    HARNESS_TEST(test_tiled_default),
    HARNESS_TEST(test_decode_vector),
    HARNESS_TEST(test_decode_tiled),
    HARNESS_TEST(test_peak),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("oclgrind", tests); }

int main(void) { return harness_run("oclgrind_kernels", register_tests); }
