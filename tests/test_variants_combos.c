/* test_variants_combos.c -- the attention variants together through
 * attn_forward against attn_reference_forward, in both kernel families,
 * over the matrix: GQA and MQA, padding with empty entries and pads full
 * of NaN, Sq != Skv and rows with nothing visible, head dims 7 to 256,
 * strided layouts and odd offsets, f32/f16/bf16, in place and without LSE,
 * tile parameters that do not divide the lengths (the window's and the
 * mask's tile skipping at their edges), and packed batches with the other
 * variants. The "variants/combos", "variants/tiles" and
 * "variants/packed_combos" rows of the shared table (case_table.c); each
 * variant alone and the equivalences are in test_variants.c. */
#define _POSIX_C_SOURCE 200809L
#include "cases.h"
#include "core/context.h" /* the scratch sizes and the lowered allocation limit */

#include <stdio.h>
#include <string.h>

static void run_group(const char *group) { harness_run_group(group, attn_forward, "attn_forward"); }

static void test_combos(void) { run_group("variants/combos"); }
static void test_odd_tiles(void) { run_group("variants/tiles"); }
static void test_packed_combos(void) { run_group("variants/packed_combos"); }

/* Packed sequences take scratch for their own keys and mask tiles, not B
 * times the token axis: 32 entries of 1 to 24 rows (with gaps) along one
 * axis of 395, a mask, the vector family (keys=32, D16: 16 floats a key).
 * Each entry's packed K (and V) is its own ceil(kv_len / 32) key blocks,
 * one here; sized by B x the axis it was 32 * 13 blocks, 13 times more. Under
 * a max allocation lowered between the two, the call succeeds and matches
 * the reference, and the context holds exactly the entries' blocks; one
 * byte below them, it is refused with ATTN_ERROR_OUT_OF_MEMORY. */
static void test_packed_scratch_follows_entries(void)
{
    enum { B = 32, KEYS = 32, DPAD = 16 };
    static int starts[B], lens[B];
    int axis = 0, blocks = 0;
    for (int b = 0; b < B; b++) {
        axis += b % 3 == 1; /* a row no entry owns */
        starts[b] = axis;
        lens[b] = 1 + b * 7 % 24;
        axis += lens[b];
        blocks += (lens[b] + KEYS - 1) / KEYS;
    }
    const harness_case c = {.group = "variants/scratch", .name = "packed 32 short entries + mask",
                            .families = HARNESS_VECTOR, .params = "rows=8,keys=32,vec=16",
                            .B = B, .Hq = 2, .Hkv = 1, .D = 16, .Sq = axis, .Skv = axis,
                            .causal = 1, .q_start = starts, .q_len = lens, .kv_start = starts,
                            .kv_len = lens, .packed = 1, .poison_pads = 1,
                            .mask = HARNESS_MASK_RANDOM, .mask_bcast = HARNESS_BCAST_BATCH,
                            .seed = 3906};
    attn_context *ctx = harness_context();
    const size_t kv_bytes = (size_t)blocks * KEYS * DPAD * sizeof(float);
    const size_t axis_bytes = (size_t)B * ((axis + KEYS - 1) / KEYS) * KEYS * DPAD * sizeof(float);
    CU_ASSERT_FATAL(axis_bytes > 4 * kv_bytes);
    CU_ASSERT_EQUAL_FATAL(attn_context_release_workspace(ctx), ATTN_SUCCESS);
    const cl_ulong limit = ctx->max_alloc;
    ctx->max_alloc = 2 * kv_bytes; /* the mask tiles' summary is far smaller */
    const int bad = harness_case_run(&c, HARNESS_VECTOR, attn_forward, "attn_forward", NULL, NULL);
    CU_ASSERT_EQUAL(bad, 0);
    ctx->max_alloc = limit;
    size_t held = 0;
    CU_ASSERT_EQUAL(attn_context_workspace_bytes(ctx, &held), ATTN_SUCCESS);
    printf("\n  packed K/V %zu bytes each (by the axis: %zu), workspace %zu bytes\n", ctx->kt.bytes,
           axis_bytes, held);
    CU_ASSERT_EQUAL(ctx->kt.bytes, kv_bytes);
    CU_ASSERT_EQUAL(ctx->vp.bytes, kv_bytes);
    CU_ASSERT(held < 3 * kv_bytes);

    /* one byte less than the entries' blocks: refused cleanly, nothing run */
    attn_problem p = harness_case_problem(&c);
    const attn_lengths L = harness_case_lengths(&c);
    const size_t n = (size_t)c.Hq * axis * c.D; /* one token axis, batch stride 0 */
    cl_int err;
    cl_mem m = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_WRITE, 4 * n, NULL, &err);
    CU_ASSERT_FATAL(err == CL_SUCCESS);
    cl_mem kv = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_ONLY, 4 * n, NULL, &err);
    CU_ASSERT_FATAL(err == CL_SUCCESS);
    const attn_tensor q = {m, 0, 0, (size_t)axis * c.D, (size_t)c.D};
    const attn_tensor k = {kv, 0, 0, (size_t)axis * c.D, (size_t)c.D};
    CU_ASSERT_EQUAL_FATAL(attn_context_release_workspace(ctx), ATTN_SUCCESS);
    /* the case's 32-key blocks, not the device's default (16 keys on AVX2) */
    CU_ASSERT_EQUAL_FATAL(harness_use_family(ctx, HARNESS_VECTOR, c.params), ATTN_SUCCESS);
    ctx->max_alloc = kv_bytes - 1;
    const attn_status st = attn_forward(ctx, &p, &q, &k, &k, &q, &L, NULL, NULL);
    ctx->max_alloc = limit;
    printf("  one byte short: %s: %s\n", attn_status_name(st), attn_last_error(ctx));
    CU_ASSERT_EQUAL(st, ATTN_ERROR_OUT_OF_MEMORY);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "max allocation"));
    CU_ASSERT_EQUAL(harness_use_params(ctx, NULL), ATTN_SUCCESS);
    clReleaseMemObject(m);
    clReleaseMemObject(kv);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_combos),
    HARNESS_TEST(test_odd_tiles),
    HARNESS_TEST(test_packed_combos),
    HARNESS_TEST(test_packed_scratch_follows_entries),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("variants_combos", tests); }

int main(void) { return harness_run("test_variants_combos", register_tests); }
