/* test_mma_gate.c -- the mma family is chosen only where it works
 * (host/attention/mma_gate.c): attn_family_status's verdict and reasons;
 * with the device taken as capable (attn_mma_assume: the emulation
 * instead of the tensor cores), the heuristic's default for f16, bf16 and
 * f32 problems, correct results through it, the other families for the
 * rest; a doctored family or fragment operation caught by the first-use
 * verification, which falls back without failing the caller's call, even
 * when the family is forced; a doctored f32 path refused for f32 alone;
 * and a long block through a KV cache keeps
 * the plan it had without the gate. */
#define _POSIX_C_SOURCE 200809L
#include "cases.h"
#include "harness.h"
#include "attention/mma_gate.h"
#include "core/program.h"
#include "kernels/params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static attn_context *own_context(void)
{
    attn_context *ctx = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &ctx), ATTN_SUCCESS);
    return ctx;
}

static int is_nvidia(attn_context *ctx)
{
    char vendor[256] = "";
    clGetDeviceInfo(attn_context_device(ctx), CL_DEVICE_VENDOR, sizeof vendor, vendor, NULL);
    return strstr(vendor, "NVIDIA") != NULL;
}

static attn_problem problem(attn_dtype dt, int d)
{
    attn_problem p = harness_problem(1, 4, 2, d, 37, 53, 1);
    p.dtype = dt;
    return p;
}

/* The family attn_prepare plans for p. */
static void planned(attn_context *ctx, const attn_problem *p, attn_plan_info *info)
{
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, p, info), ATTN_SUCCESS);
}

static void test_status_here(void)
{
    attn_context *ctx = harness_context();
    int usable = -1;
    char why[256] = "x";
    static const char *const others[] = {"vector", "tiled", "flash"};
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(attn_family_status(ctx, others[i], &usable, why, sizeof why), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(usable, 1);
        CU_ASSERT_STRING_EQUAL(why, "");
    }
    CU_ASSERT_EQUAL(attn_family_status(ctx, "mma", &usable, why, sizeof why), ATTN_SUCCESS);
    printf("\n  mma here: %s%s", usable ? "usable" : "not used: ", why);
    if (is_nvidia(ctx)) return; /* compute capability decides: gpu-check reports it */
    CU_ASSERT_EQUAL(usable, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "not an NVIDIA device"));
    /* nothing here plans it: an f16 problem keeps the device's family */
    attn_problem p = problem(ATTN_F16, 64);
    attn_plan_info info;
    planned(ctx, &p, &info);
    CU_ASSERT_STRING_NOT_EQUAL(info.family, "mma");
    CU_ASSERT_EQUAL(attn_family_status(NULL, "mma", &usable, NULL, 0), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_family_status(ctx, NULL, &usable, NULL, 0), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "family"));
}

/* Assumed capable: f16, bf16 and f32 with D % 16 == 0 plan mma and are
 * right; D 40, D 8, f32 D 144 and f32 past its key limit keep the device's
 * family. */
static void test_assumed_default(void)
{
    attn_context *ctx = own_context();
    attn_mma_assume(ctx, 1);
    int usable = 0;
    char why[256] = "";
    CU_ASSERT_EQUAL(attn_family_status(ctx, "mma", &usable, why, sizeof why), ATTN_SUCCESS);
    if (!usable) printf("\n  %s", why);
    CU_ASSERT_EQUAL_FATAL(usable, 1);
    attn_plan_info info;
    static const attn_dtype types[] = {ATTN_F16, ATTN_BF16, ATTN_F32};
    for (int i = 0; i < 3; i++) {
        attn_problem p = problem(types[i], 64);
        planned(ctx, &p, &info);
        CU_ASSERT_STRING_EQUAL(info.family, "mma");
        CU_ASSERT_STRING_EQUAL(info.source, "heuristic");
        CU_ASSERT_EQUAL(harness_forward_check(ctx, &p, 71 + (uint64_t)i), 0);
    }
    attn_problem rest[] = {problem(ATTN_F16, 40), problem(ATTN_BF16, 8), problem(ATTN_F32, 144),
                           problem(ATTN_F32, 64)};
    rest[3].kv_len = ATTN_MMA_F32_MAX_KEYS + 1;
    for (int i = 0; i < 4; i++) {
        planned(ctx, &rest[i], &info);
        CU_ASSERT_STRING_NOT_EQUAL(info.family, "mma");
    }
    /* a long block through a KV cache is planned as a prefill, and mma
     * cannot read a cache: the plan is the one the device makes without
     * mma (the prefill family that reads the cache), as before the gate.
     * Paged by 16: the decode plan would clamp keys to 16, the prefill's
     * keeps its 32 (test_decode_prefill's tell) */
    attn_kv_cache *cache = NULL;
    const attn_kv_cache_desc desc = {.batch = 1, .kv_heads = 2, .head_dim = 64, .capacity = 128,
                                     .dtype = ATTN_F16, .block_size = 16};
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, &desc, &cache), ATTN_SUCCESS);
    attn_problem dp = problem(ATTN_F16, 64);
    dp.q_len = 80;
    attn_plan_info with, without;
    CU_ASSERT_EQUAL(attn_decode_prepare(ctx, cache, &dp, &with), ATTN_SUCCESS);
    attn_mma_assume(ctx, 0);
    CU_ASSERT_EQUAL(attn_decode_prepare(ctx, cache, &dp, &without), ATTN_SUCCESS);
    printf("\n  long block: %s %s (without mma: %s %s)", with.family, with.params,
           without.family, without.params);
    CU_ASSERT_STRING_EQUAL(with.family, without.family);
    CU_ASSERT_STRING_EQUAL(with.params, without.params);
    attn_kv_cache_release(cache);
    attn_context_release(ctx);
}

/* A kernel folder in dir holding every source, with file's `from`
 * replaced by `to`, for ctx, which is then taken as capable. */
static void doctor(attn_context *ctx, const char *dir, const char *file, const char *from,
                   const char *to)
{
    char path[512];
    CU_ASSERT_EQUAL_FATAL(attn_context_set_cache_dir(ctx, NULL), ATTN_SUCCESS);
    static const char *const names[] = {"common.cl", "variants.cl", "tile.cl", "mma_ops.cl",
                                        "mma_operands.cl", "mma.cl", "mask_tiles.cl",
                                        "mma_check.cl", "vector_helpers.cl", "vector_core.cl",
                                        "vector.cl", "tiled_core.cl", "tiled.cl", "flash.cl"};
    int replaced = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *text = attn_kernel_source(ctx, names[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(text);
        char *at = strcmp(names[i], file) == 0 ? strstr(text, from) : NULL;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "w");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        if (at) {
            fprintf(f, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
            replaced = 1;
        } else
            fputs(text, f);
        CU_ASSERT_EQUAL(fclose(f), 0);
        free(text);
    }
    CU_ASSERT_FATAL(replaced);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_kernel_dir(ctx, dir), ATTN_SUCCESS);
    attn_mma_assume(ctx, 1);
}

/* p, planned and forced: never mma, right results, no error. */
static void check_refused(attn_context *ctx, const attn_problem *p, uint64_t seed)
{
    attn_plan_info info;
    planned(ctx, p, &info);
    CU_ASSERT_STRING_NOT_EQUAL(info.family, "mma");
    CU_ASSERT_EQUAL(harness_forward_check(ctx, p, seed), 0);
    /* forced, it is refused too (the tensor cores' build would run there):
     * the device's plan, right results, no error */
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, "family=mma,warps=2"), ATTN_SUCCESS);
    planned(ctx, p, &info);
    CU_ASSERT_STRING_NOT_EQUAL(info.family, "mma");
    CU_ASSERT_EQUAL(harness_forward_check(ctx, p, seed + 1), 0);
    harness_use_params(ctx, NULL);
}

/* file's `from` replaced by `to`: the gate must then refuse the family
 * saying `why`, and plans and results stay those of the device's other
 * families. */
static void check_doctored(const char *file, const char *from, const char *to, const char *why_has)
{
    char dir[256];
    harness_temp_dir(dir, sizeof dir, "mma-gate");
    attn_context *ctx = own_context();
    doctor(ctx, dir, file, from, to);
    /* the first f16 plan decides: the family is refused, the call succeeds */
    const attn_problem p = problem(ATTN_F16, 64);
    check_refused(ctx, &p, 73);
    int usable = 1;
    char why[256] = "";
    CU_ASSERT_EQUAL(attn_family_status(ctx, "mma", &usable, why, sizeof why), ATTN_SUCCESS);
    printf("\n  doctored %s: %s", file, why);
    CU_ASSERT_EQUAL(usable, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, why_has));
    attn_context_release(ctx);
    harness_remove_tree(dir);
}

static void test_doctored_fragments_refused(void)
{
    check_doctored("mma_ops.cl", "ws[l ^ mask]", "ws[l]", "fragment check failed");
}

static void test_doctored_family_refused(void)
{
    check_doctored("mma_operands.cl", "#define MMA_PACK mma_pack_f16",
                   "#define MMA_PACK mma_pack_bf16", "f16 verification forward");
}

/* f32's path with 1xTF32 (the small terms dropped: about 1e-3 relative,
 * ten times f32's tolerance): f32 is refused, saying so, and runs on the
 * device's family; f16 keeps the tensor cores. */
static void test_doctored_f32_refused(void)
{
    char dir[256];
    harness_temp_dir(dir, sizeof dir, "mma-gate");
    attn_context *ctx = own_context();
    doctor(ctx, dir, "mma_operands.cl",
           "    mma_tf32(d, asmall, (uint2)(x.x, y.x), ws);\n"
           "    mma_tf32(d, abig, (uint2)(x.y, y.y), ws);\n",
           "");
    const attn_problem p32 = problem(ATTN_F32, 64), p16 = problem(ATTN_F16, 64);
    check_refused(ctx, &p32, 75);
    attn_plan_info info;
    planned(ctx, &p16, &info);
    CU_ASSERT_STRING_EQUAL(info.family, "mma");
    int usable = 0;
    char why[256] = "";
    CU_ASSERT_EQUAL(attn_family_status(ctx, "mma", &usable, why, sizeof why), ATTN_SUCCESS);
    printf("\n  doctored f32: usable %d, %s", usable, why);
    CU_ASSERT_EQUAL(usable, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "the f32 verification forward (3xTF32) failed"));
    attn_context_release(ctx);
    harness_remove_tree(dir);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_status_here),
    HARNESS_TEST(test_assumed_default),
    HARNESS_TEST(test_doctored_fragments_refused),
    HARNESS_TEST(test_doctored_family_refused),
    HARNESS_TEST(test_doctored_f32_refused),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("mma_gate", tests); }

int main(void) { return harness_run("test_mma_gate", register_tests); }
