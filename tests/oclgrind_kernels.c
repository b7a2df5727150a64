/* oclgrind_kernels.c -- every kernel family on tiny shapes, meant to run on
 * Oclgrind's simulated device (tools/check-oclgrind.sh runs it under
 * `oclgrind --data-races --check-api` with ATTN_TEST_DEVICE=oclgrind), where
 * out-of-bounds accesses, races, and barrier divergence are reported, and
 * whose results must match the CPU reference like any other device's.
 *
 * Families: vector (attn_pack_kv + attn_fwd_vector) at small and default
 * tiles; tiled with K/V read from global (local_kv=0) and staged in __local
 * (local_kv=1), and its 16-byte staging on the "oclgrind/wide" rows; flash (attn_fwd_flash) at three micro-tile shapes; mma
 * (attn_fwd_mma, mma_ops.cl's emulation) on its own f16, bf16 and f32 rows
 * ("oclgrind/mma", one of them in place) under three tile sets, one reading
 * Q at each k-step. Shapes: the "oclgrind/tiny" rows of the shared case table
 * (case_table.c), run by the shared runner (cases.c): lengths that end
 * mid-tile, Sq != Skv on the causal diagonal, left and right padding with an
 * empty batch entry, GQA and MQA, head dims that are not a multiple of 4,
 * strided layouts, all three dtypes, and the attention variants (a window
 * with softcap and sinks; an f16 mask with ALiBi over packed sequences).
 * Oclgrind interprets every work-item,
 * so everything here stays tiny.
 *
 * Decode: a ragged cache (kv_append.cl, the second append taking each
 * sequence's rows from its own start), a block of new queries with a pad
 * row, each decode kernel unsplit and split (decode_*.cl and the combine),
 * and split over a paged cache of 16-token blocks (a sequence in two); the
 * tiled kernel over an f16 cache too; the mma kernel (emulated) at D16 in
 * each storage type, split and paged, and over int8; and the same over an int8 cache (ATTN_KV_INT8: the quantizing append, both
 * kernels' int8 builds, the tiled one with K/V staged and read from
 * global; contiguous and paged), against the reference over the
 * dequantized K/V; and a block of 70 new queries, which takes the prefill
 * kernels reading the cache (the vector family's cl/pack_cache.cl).
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
#include "cases.h"
#include "core/context.h" /* the vector family's scratch buffers, to poison or reserve them */
#include "attention/decode.h"   /* the cache's buffers, to write them whole */
#include "attention/kv_quant.h" /* the int8 reference: attn_kv_quantize_row */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The vector family's scratch (packed K and V) filled with NaN: a read of
 * anything the pack kernel did not write shows as a NaN or a mismatch. The
 * scratch exists: the case ran unpoisoned just before. */
static void poison_scratch(attn_context *ctx)
{
    const float nan = NAN;
    attn_scratch *sc[2] = {&ctx->kt, &ctx->vp};
    for (int i = 0; i < 2; i++)
        CU_ASSERT_EQUAL_FATAL(clEnqueueFillBuffer(attn_context_queue(ctx), sc[i]->mem, &nan,
                                                  sizeof nan, 0, sc[i]->bytes, 0, NULL, NULL),
                              CL_SUCCESS);
}

/* Every row of group (of the shared table) under family f with tunables
 * params, through the shared runner (reference, NaN gaps, nothing written
 * outside O, inputs unchanged). */
static void run_group_set(const char *group, harness_family f, const char *params)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    char platform[256] = "";
    cl_platform_id pl = NULL;
    clGetDeviceInfo(attn_context_device(ctx), CL_DEVICE_PLATFORM, sizeof pl, &pl, NULL);
    clGetPlatformInfo(pl, CL_PLATFORM_NAME, sizeof platform, platform, NULL);
    printf("\n  platform: %s", platform);
    /* Under --uninitialized Oclgrind tracks the unwritten scratch itself:
     * no NaN runs (a host fill would mark the scratch initialised), and the
     * scratch is made once, larger than any case needs, before the first
     * kernel: Oclgrind 21.10 keeps the shadow of a released buffer, so a
     * scratch re-created larger under a reused buffer id would read as
     * uninitialised past the old size. The mask summary's scratch too: the
     * flash sets' 12 x 4 tiles need more of it than the sets before. */
    const char *uninit = getenv("ATTN_OCLGRIND_UNINITIALIZED");
    const int tracked = uninit && *uninit == '1';
    if (tracked)
        CU_ASSERT_FATAL(attn_scratch_reserve(ctx, &ctx->kt, 1 << 20) == ATTN_SUCCESS &&
                        attn_scratch_reserve(ctx, &ctx->vp, 1 << 20) == ATTN_SUCCESS &&
                        attn_scratch_reserve(ctx, &ctx->mask_tiles, 1 << 16) == ATTN_SUCCESS);
    const int vector = f == HARNESS_VECTOR && !tracked;
    int runs = 0;
    for (const harness_case *t = harness_group_next(group, NULL); t;
         t = harness_group_next(group, t)) {
        harness_case c = *t;
        c.params = params;
        for (int poison = 0; poison <= vector; poison++, runs++) {
            if (poison) poison_scratch(ctx);
            int bad = harness_case_run(&c, f, attn_forward, "attn_forward", NULL, NULL);
            CU_ASSERT_EQUAL(bad, 0);
            printf("\n  %-24s %-6s %-39s %s%s", c.name, harness_family_name(f), params,
                   poison ? "scratch NaN " : "", bad ? "FAILED" : "ok");
        }
    }
    CU_ASSERT(runs > 0);
    printf("\n");
}

/* the "oclgrind/tiny" rows */
static void run_set(harness_family f, const char *params)
{
    run_group_set("oclgrind/tiny", f, params);
}

/* Small tiles make tiny shapes span several tiles and end inside one. */
static void test_vector_small_tiles(void) { run_set(HARNESS_VECTOR, "rows=4,keys=8,vec=4"); }
/* the CPU heuristic's choices: native float16 (AVX-512), narrower (AVX2) */
static void test_vector_default(void) { run_set(HARNESS_VECTOR, "rows=8,keys=32,vec=16"); }
static void test_vector_narrow_default(void) { run_set(HARNESS_VECTOR, "rows=5,keys=16,vec=8"); }
static void test_tiled_global_kv(void) { run_set(HARNESS_TILED, "rows=4,keys=8,wg=16,local_kv=0"); }
static void test_tiled_local_kv(void) { run_set(HARNESS_TILED, "rows=4,keys=8,wg=16,local_kv=1"); }
/* the GPU heuristic's choice */
static void test_tiled_default(void) { run_set(HARNESS_TILED, "rows=16,keys=32,wg=128,local_kv=1"); }
/* the tiled staging's 16-byte loads ("oclgrind/wide"): vectors and tails
 * in each dtype, and rows that must be read one by one */
static void test_tiled_wide(void)
{
    run_group_set("oclgrind/wide", HARNESS_TILED, "rows=4,keys=8,wg=16,local_kv=1");
}
/* flash: 2 x 2 micro-tiles on 8 x 8 tiles (16 work-items); odd 3 x 1 ones
 * on 4 keys, the next K/V tile prefetched into registers; and 64
 * work-items sharing 16-row tiles (several float4 of O each at D 40, fewer
 * than one at D 7) */
static void test_flash_small(void) { run_set(HARNESS_FLASH, "rows=8,keys=8,tm=2,tn=2"); }
static void test_flash_odd(void) { run_set(HARNESS_FLASH, "rows=12,keys=4,tm=3,tn=1,prefetch=1"); }
static void test_flash_wide(void) { run_set(HARNESS_FLASH, "rows=16,keys=16,tm=1,tn=4"); }
/* mma (its f16/bf16/f32 rows; mma_ops.cl's emulation): two warps on tiles of
 * 16 keys; one warp of two m-tiles on 32 keys */
static void test_mma_two_warps(void)
{
    run_group_set("oclgrind/mma", HARNESS_MMA, "warps=2,keys=16");
}
static void test_mma_two_mtiles(void)
{
    run_group_set("oclgrind/mma", HARNESS_MMA, "warps=1,keys=32,mtiles=2");
}
/* Q's fragments read at each k-step of each key tile (qregs=0) */
static void test_mma_q_read(void)
{
    run_group_set("oclgrind/mma", HARNESS_MMA, "warps=2,keys=16,mtiles=2,qregs=0");
}

/* row (n floats) as an int8 cache holds it: quantized and dequantized */
static void quant_dequant_row(float *row, int n)
{
    signed char q[256];
    float scale;
    attn_kv_quantize_row(row, n, q, &scale);
    for (int d = 0; d < n; d++) row[d] = attn_kv_dequantize(q[d], scale);
}

/* Decode on a ragged cache (block 0: contiguous, else paged with blocks of
 * that many tokens): sequence lengths 17 + NEW and 3 after two appends,
 * then NEW new queries for sequence 0 and 1 (pad rows) for sequence 1,
 * against the reference over the whole sequences (bottom-right causal).
 * NEW is 2, or more than ATTN_DECODE_MAX_Q_LEN: a long block, through the
 * prefill kernels reading the cache. extra: more parameters
 * ("local_kv=0"), or "". int8: an int8 cache, against the reference over
 * K/V quantized and dequantized on the host. */
static void decode_set_rows(const char *family, int splits, int block, const char *extra,
                            int int8, const int NEW, int keys, attn_dtype dt, const int DD)
{
    enum { B = 2, HQ = 4, HKV = 2 };
    const int CAP = NEW + 22;
    const int prompt[B] = {17, 2}, q_lens[B] = {NEW, 1};
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    const uint64_t seed = harness_seed(700);
    const size_t nk = (size_t)B * HKV * CAP * DD, nq = (size_t)B * HQ * NEW * DD;
    const size_t rows = (size_t)B * HQ * NEW;
    float *k = harness_xalloc(nk), *v = harness_xalloc(nk), *q = harness_xalloc(nq);
    float *got = harness_xalloc(nq), *got_lse = harness_xalloc(rows);
    harness_fill_normal(k, nk, seed, 0.0f, 1.0f);
    harness_fill_uniform(v, nk, seed + 1, -2.0f, 2.0f);
    harness_fill_normal(q, nq, seed + 2, 0.0f, 1.0f);
    harness_round(dt, k, nk), harness_round(dt, v, nk), harness_round(dt, q, nq);
    int len[B];
    for (int b = 0; b < B; b++) len[b] = prompt[b] + q_lens[b];

    attn_kv_cache *cache = NULL;
    const attn_kv_cache_desc desc = {.batch = B, .kv_heads = HKV, .head_dim = DD, .capacity = CAP,
                                     .dtype = dt, .block_size = block,
                                     .storage = int8 ? ATTN_KV_INT8 : ATTN_KV_AS_DTYPE};
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, &desc, &cache), ATTN_SUCCESS);
    const char *uninit = getenv("ATTN_OCLGRIND_UNINITIALIZED");
    if (uninit && *uninit == '1') {
        /* The cache is zeroed at creation by clEnqueueFillBuffer, which
         * Oclgrind 21.10's shadow memory records pattern by pattern, as a
         * buffer of one pattern's size: write the same zeros in one piece. */
        /* The split partials too, reserved here for every split (B * HQ
         * * NEW rows of up to 2 splits of DIM_PAD 16, with room): made
         * inside attn_decode, a buffer can inherit Oclgrind's stale shadow
         * of a freed one (each set alone is clean), as the mask summary's
         * scratch above. */
        const size_t part_rows = rows * 2 + 48;
        CU_ASSERT_EQUAL_FATAL(attn_scratch_reserve(ctx, &ctx->part_o,
                                                   part_rows * 16 * sizeof(float)),
                              ATTN_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(attn_scratch_reserve(ctx, &ctx->part_lse,
                                                   part_rows * sizeof(float)),
                              ATTN_SUCCESS);
        cl_mem bufs[6] = {cache->k, cache->v, ctx->part_o.mem, ctx->part_lse.mem,
                          cache->k_scale, cache->v_scale};
        for (int i = 0; i < (int8 ? 6 : 4); i++) {
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
    cl_mem mk = harness_upload(ctx, dt, k, B, HKV, CAP, DD, NULL, &tk);
    cl_mem mv = harness_upload(ctx, dt, v, B, HKV, CAP, DD, NULL, &tv);
    cl_mem mq = harness_upload(ctx, dt, q, B, HQ, NEW, DD, NULL, &tq);
    cl_mem mo = harness_alloc(ctx, dt, B, HQ, NEW, DD, NULL, &to);
    cl_mem ml = harness_float_buffer(ctx, rows);
    CU_ASSERT_FATAL(mk && mv && mq && mo && ml);
    /* the prompts, then this step's tokens: rows prompt[b].. of the same K
     * and V (kv_append.cl's per-sequence start) */
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_append(cache, &tk, &tv, CAP, prompt, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_append_rows(cache, &tk, &tv, CAP, prompt, q_lens, NULL),
                          ATTN_SUCCESS);
    char params[96], name[48];
    /* 16 keys a block: 19 keys in 2 splits (with 32, one) */
    snprintf(params, sizeof params, "family=%s%s,keys=%d,splits=%d%s%s", family,
             strcmp(family, "mma") == 0 ? "" : ",rows=4", keys, splits, *extra ? "," : "", extra);
    attn_problem p = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = DD, .q_len = NEW,
                      .kv_len = 0, .dtype = dt, .causal = 1, .scale = 0.0f};
    /* a long block's packed K/V NaN first, where earlier cases left them:
     * a read of anything attn_pack_kv_cache did not write shows (not under
     * --uninitialized, which tracks the scratch itself: run_set) */
    if (NEW > 2 && ctx->kt.mem && !(uninit && *uninit == '1')) poison_scratch(ctx);
    attn_status st = harness_use_params(ctx, params);
    if (st == ATTN_SUCCESS) st = attn_decode(ctx, cache, &p, &tq, &to, q_lens, ml, NULL);
    harness_use_params(ctx, NULL);
    int bad = 0;
    if (st != ATTN_SUCCESS) {
        printf("\n  attn_decode: %s: %s\n", attn_status_name(st), attn_last_error(ctx));
        bad++;
    } else { /* against the reference over the whole sequences */
        attn_problem rp = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = DD, .q_len = NEW,
                           .kv_len = CAP, .dtype = dt, .causal = 1, .scale = 0.0f};
        attn_lengths L = {NULL, q_lens, NULL, len};
        CU_ASSERT_EQUAL_FATAL(harness_download(ctx, dt, &to, B, HQ, NEW, DD, got), 0);
        CU_ASSERT_EQUAL_FATAL(harness_read_floats(ctx, ml, got_lse, rows), 0);
        if (int8) /* what the cache holds: each row quantized, as floats */
            for (size_t r = 0; r < nk / DD; r++) {
                quant_dequant_row(k + r * DD, DD);
                quant_dequant_row(v + r * DD, DD);
            }
        bad += harness_check_reference("decode", &rp, &L, q, k, v, got, got_lse, seed);
    }
    snprintf(name, sizeof name, "decode %s D%d%s%s%s", block ? "paged 16" : "ragged", DD,
             int8 ? " int8" : "", NEW > 2 ? " long" : "",
             dt == ATTN_F16 ? " f16" : dt == ATTN_BF16 ? " bf16" : "");
    printf("\n  %-24s %-46s %s\n", name, params, bad ? "FAILED" : "ok");
    CU_ASSERT_EQUAL(bad, 0);
    attn_kv_cache_release(cache);
    clReleaseMemObject(mk), clReleaseMemObject(mv), clReleaseMemObject(mq);
    clReleaseMemObject(mo), clReleaseMemObject(ml);
    free(k), free(v), free(q), free(got), free(got_lse);
}

static void decode_set(const char *family, int splits, int block, const char *extra, int int8)
{
    decode_set_rows(family, splits, block, extra, int8, 2, 16, ATTN_F32, 6);
}

/* a block of 70 queries: the vector family packing the cache
 * (cl/pack_cache.cl; key blocks of 32 crossing the cache's blocks of 16),
 * the tiled family's decode kernel with long tiles */
static void test_decode_long(void)
{
    decode_set_rows("vector", 1, 16, "", 1, 70, 32, ATTN_F32, 6);
    decode_set_rows("vector", 1, 0, "", 0, 70, 16, ATTN_F32, 6);
    decode_set_rows("tiled", 2, 16, "", 0, 70, 16, ATTN_F32, 6);
}

static void test_decode_vector(void)
{
    decode_set("vector", 1, 0, "", 0);
    decode_set("vector", 2, 0, "", 0);
    decode_set("vector", 2, 16, "", 0);
}
static void test_decode_tiled(void)
{
    decode_set("tiled", 1, 0, "", 0);
    decode_set("tiled", 2, 0, "", 0);
    decode_set("tiled", 2, 16, "", 0);
    /* an f16 cache: one 16-byte vector of 8 halves per row, 2 of them the
     * row's padding (cl/tiled_core.cl's stage_kv16) */
    decode_set_rows("tiled", 1, 0, "", 0, 2, 16, ATTN_F16, 6);
    decode_set_rows("tiled", 2, 16, "", 0, 2, 16, ATTN_F16, 6);
}
/* mma's decode kernel (mma_ops.cl's emulation), one warp: D16 (its
 * smallest), key tiles of 16, in each storage type, split and paged, and
 * over int8 caches (16-bit: the scales in K's row padding) */
static void test_decode_mma(void)
{
    decode_set_rows("mma", 1, 0, "warps=1", 0, 2, 16, ATTN_F32, 16);
    decode_set_rows("mma", 2, 16, "warps=1", 0, 2, 16, ATTN_F16, 16);
    decode_set_rows("mma", 2, 0, "warps=1", 0, 2, 16, ATTN_BF16, 16);
    decode_set_rows("mma", 2, 16, "warps=1", 1, 2, 16, ATTN_F16, 16);
    decode_set_rows("mma", 1, 0, "warps=1", 1, 2, 16, ATTN_F32, 16);
}
static void test_decode_int8(void)
{
    decode_set("vector", 2, 0, "", 1);
    decode_set("tiled", 1, 0, "", 1);
    decode_set("tiled", 2, 0, "local_kv=0", 1);
    decode_set("vector", 2, 16, "", 1);
    decode_set("tiled", 2, 16, "", 1);
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
    HARNESS_TEST(test_vector_narrow_default),
    HARNESS_TEST(test_tiled_global_kv),
    HARNESS_TEST(test_tiled_local_kv),
    HARNESS_TEST(test_tiled_default),
    HARNESS_TEST(test_tiled_wide),
    HARNESS_TEST(test_flash_small),
    HARNESS_TEST(test_flash_odd),
    HARNESS_TEST(test_flash_wide),
    HARNESS_TEST(test_mma_two_warps),
    HARNESS_TEST(test_mma_two_mtiles),
    HARNESS_TEST(test_mma_q_read),
    HARNESS_TEST(test_decode_vector),
    HARNESS_TEST(test_decode_tiled),
    HARNESS_TEST(test_decode_mma),
    HARNESS_TEST(test_decode_int8),
    HARNESS_TEST(test_decode_long),
    HARNESS_TEST(test_peak),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("oclgrind", tests); }

int main(void) { return harness_run("oclgrind_kernels", register_tests); }
