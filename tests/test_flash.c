/* test_flash.c -- the flash family's parameters (cl/flash.cl,
 * host/kernels/desc_flash.c): what attn_context_set_params and the planner
 * refuse (ranges, micro-tiles that do not divide the tile, a work-group or
 * __local tiles beyond the device's, the shrink loop on the H200's
 * limits), the plan and memory attn_prepare
 * reports, and decode, which has no flash kernel, keeping the device's own
 * plan when flash is forced. Its results are checked in the forward
 * matrices (test_forward, test_variants*, test_seed_failures). */
#include "cases.h"
#include "kernels/params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* B = 1, Hq 2, Hkv 1, causal f32, q_len = kv_len = s */
static attn_problem problem(int D, int s) { return harness_problem(1, 2, 1, D, s, s, 1); }

/* The shared context; each test clears its override when it ends. */
static attn_context *context(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    return ctx;
}

/* attn_prepare of p under params text fails with INVALID_ARGUMENT and a
 * message naming the override and containing says */
static void refused(attn_context *ctx, const char *text, int D, const char *says)
{
    attn_problem p = problem(D, 16);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, text), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    const char *msg = attn_last_error(ctx);
    printf("\n  %s: %s", text, msg);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, text));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, says));
}

static void test_flash_params_refused(void)
{
    attn_context *ctx = context();
    /* out of range: refused when set */
    const char *bad[] = {"family=flash,tm=9", "family=flash,rows=129", "family=flash,keys=48",
                         "family=flash,tn=0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_EQUAL(attn_context_set_params(ctx, bad[i]), ATTN_ERROR_INVALID_ARGUMENT);
        printf("\n  %s: %s", bad[i], attn_last_error(ctx));
        CU_ASSERT(strncmp(attn_last_error(ctx), "attn_context_set_params: ", 25) == 0);
    }
    /* legal alone, not together or not on this device: refused at the plan */
    refused(ctx, "family=flash,rows=6,keys=32,tm=4,tn=2", 64, "rows=6 is not a multiple of tm=4");
    refused(ctx, "family=flash,rows=32,keys=8,tm=4,tn=3", 64, "keys=8 is not a multiple of tn=3");
    /* 128 x 128 work-items: beyond any device's work-group */
    refused(ctx, "family=flash,rows=128,keys=128,tm=1,tn=1", 64, "work-items a work-group exceed");
    harness_use_params(ctx, NULL);
}

/* The legality check and the shrink loop against the H200's limits (48
 * KiB of __local, 1024 work-items), whatever device runs the test. */
static void test_flash_gpu_limits(void)
{
    const attn_device_limits h200 = {CL_DEVICE_TYPE_GPU, 48 * 1024, 1024, 132, 0, 0};
    attn_problem p = problem(64, 512);
    attn_params pr = attn_params_defaults(ATTN_FAMILY_FLASH);
    char err[256] = "";
    /* D 64: Q 64 x 17 float4, K and V 32 x 17, P 64 x 32, maxima 64 x 16:
     * 47104 bytes, 256 work-items */
    CU_ASSERT(attn_params_legal(&pr, &h200, &p, err, sizeof err));
    CU_ASSERT_EQUAL(attn_params_local_bytes(&pr, &p), 47104u);
    CU_ASSERT_EQUAL(attn_params_work_group(&pr), 256u);
    /* D 128: 79872 bytes, too many; the shrink loop halves the rows to 16
     * (the micro-tiles stay, so O's registers stay within the budget) */
    p.head_dim = 128;
    CU_ASSERT(!attn_params_legal(&pr, &h200, &p, err, sizeof err));
    printf("\n  D 128 defaults: %s", err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "79872 bytes of local memory"));
    attn_params_fit(ATTN_ENTRY_PREFILL, &pr, &h200, &p);
    CU_ASSERT(attn_params_legal(&pr, &h200, &p, err, sizeof err));
    CU_ASSERT(attn_params_local_bytes(&pr, &p) <= 48 * 1024);
    CU_ASSERT(attn_params_private_bytes(ATTN_ENTRY_PREFILL, &pr, &p) <= ATTN_PRIVATE_BUDGET_GPU);
    CU_ASSERT_EQUAL(pr.block_rows, 16);
    CU_ASSERT_EQUAL(pr.block_keys, 32);
    printf("\n  D 128 fitted: rows=%d keys=%d, %zu work-items", pr.block_rows, pr.block_keys,
           attn_params_work_group(&pr));
    /* prefetching at D 128 on 64 work-items: 16 float4 each of K and V,
     * 512 bytes over the register budget's 1024 with O's 704; fewer rows
     * or keys would leave each more, so the shrink loop turns prefetch off */
    attn_params pf = pr;
    pf.prefetch = 1;
    CU_ASSERT_EQUAL(attn_params_private_bytes(ATTN_ENTRY_PREFILL, &pf, &p), 704u + 512u);
    attn_params_fit(ATTN_ENTRY_PREFILL, &pf, &h200, &p);
    CU_ASSERT_EQUAL(pf.prefetch, 0);
    CU_ASSERT_EQUAL(pf.block_rows, 16);
    CU_ASSERT_EQUAL(pf.block_keys, 32);
    /* D 256: the tiles that fit (rows 16, keys 8) leave 4 column groups,
     * and tm=4,tn=2 would hold 3 KiB of O a work-item; the micro-tile
     * shrinks, keys then rows, to 588 bytes on 128 work-items */
    attn_params big = attn_params_defaults(ATTN_FAMILY_FLASH);
    p.head_dim = 256;
    attn_params_fit(ATTN_ENTRY_PREFILL, &big, &h200, &p);
    CU_ASSERT(attn_params_legal(&big, &h200, &p, err, sizeof err));
    CU_ASSERT_EQUAL(big.block_rows, 16);
    CU_ASSERT_EQUAL(big.block_keys, 8);
    CU_ASSERT_EQUAL(big.tile_n, 1);
    CU_ASSERT_EQUAL(big.tile_m, 1);
    CU_ASSERT_EQUAL(attn_params_private_bytes(ATTN_ENTRY_PREFILL, &big, &p), 588u);
    CU_ASSERT_EQUAL(attn_params_work_group(&big), 128u);
    /* work-items beyond the device's */
    attn_params wide = attn_params_defaults(ATTN_FAMILY_FLASH);
    wide.block_rows = 64, wide.block_keys = 64, wide.tile_m = 2, wide.tile_n = 1;
    p.head_dim = 16;
    CU_ASSERT(!attn_params_legal(&wide, &h200, &p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "2048 work-items a work-group exceed the device's max 1024"));
}

static void test_flash_plan(void)
{
    attn_context *ctx = context();
    attn_problem p = problem(32, 40);
    attn_plan_info h, o;
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &h), ATTN_SUCCESS);
    CU_ASSERT_STRING_NOT_EQUAL(h.family, "flash"); /* nobody's default */
    const char *want = "family=flash,rows=64,keys=32,tm=4,tn=2,prefetch=0";
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, want), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &o), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(o.family, "flash");
    CU_ASSERT_STRING_EQUAL(o.source, "override");
    CU_ASSERT_STRING_EQUAL(o.params, want);
    /* by hand from cl/flash.cl at D 32 (8 float4 a row, stride 9): Q 64 x 9
     * and K, V 32 x 9 float4, P 64 x 32 floats, maxima 64 x 16 floats */
    CU_ASSERT_EQUAL(o.local_bytes, 16u * 64 * 9 + 2 * 16u * 32 * 9 + 4u * 64 * 32 + 4u * 64 * 16);
    /* acc, tot, cmp 4 x 1 float4; s 4 x 2; a, kk 6 float4; vv 1 float4;
     * 10 row values x 4 rows: 124 floats */
    CU_ASSERT_EQUAL(o.private_bytes, 4u * (48 + 8 + 24 + 4 + 40));
    /* prefetched: K and V's 32 x 8 float4 over 256 work-items, one float4
     * each held across the tile's arithmetic; the same __local */
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, "family=flash,rows=64,keys=32,tm=4,tn=2,prefetch=1"), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &o), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(o.params, "family=flash,rows=64,keys=32,tm=4,tn=2,prefetch=1");
    CU_ASSERT_EQUAL(o.private_bytes, 4u * (48 + 8 + 24 + 4 + 40 + 8));
    CU_ASSERT_EQUAL(o.local_bytes, 16u * 64 * 9 + 2 * 16u * 32 * 9 + 4u * 64 * 32 + 4u * 64 * 16);
    harness_use_params(ctx, NULL);
}

/* Decode has no flash kernel: forced, it keeps the device's plan.
 * test_seed_failures checks decode's results with
 * family=flash forced (seed/kv_cache_decode). */
static void test_flash_decode_keeps_its_plan(void)
{
    harness_decode_keeps_plan("family=flash,rows=64", ATTN_F32);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_flash_params_refused),
    HARNESS_TEST(test_flash_gpu_limits),
    HARNESS_TEST(test_flash_plan),
    HARNESS_TEST(test_flash_decode_keeps_its_plan),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("flash", tests); }

int main(void) { return harness_run("test_flash", register_tests); }
