/* test_mma_gate.c -- the mma family is chosen only where it works
 * (host/attention/mma_gate.c): attn_family_status's verdict and reasons;
 * with the device taken as capable (attn_mma_assume: the emulation
 * instead of the tensor cores), the heuristic's default for f16, bf16 and
 * f32 problems, correct results through it, the other families for the
 * rest; a doctored family or fragment operation caught by the first-use
 * verification (a doctored decode kernel, or bf16's int8 staging alone,
 * by the verification decodes; a key loop cut short by the forwards over
 * 4179 keys), which falls back without failing the caller's call, even
 * when the family is forced; a doctored f32 path refused for f32 alone;
 * decode on mma where a KV head has enough query rows; a long block
 * through an f16 or int8 KV cache on mma's decode kernel; and programs at
 * one head dim doctored (a build failure, a wrong decode, f32's folded
 * programs) refused at that head dim alone. */
#define _POSIX_C_SOURCE 200809L
#include "cases.h"
#include "harness.h"
#include "attention/mma_gate.h"
#include "core/context.h" /* mma_state */
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

/* Whether the gate on ctx (taken as capable) verifies mma for dt. PoCL,
 * the suite's device, must; another implementation may refuse it where it
 * computes the family wrong (Mesa's rusticl on llvmpipe: rows of some
 * hundreds of keys, measured), which is printed, and the caller's checks
 * of an accepting gate are then skipped. */
static int verified_here(attn_context *ctx, attn_dtype dt)
{
    if (attn_mma_usable(ctx, dt)) return 1;
    printf("\n  %s not on mma here: %s", dt == ATTN_F32 ? "f32" : "16-bit",
           attn_mma_why(ctx, dt));
    char platform[256] = "";
    cl_platform_id pid = NULL;
    clGetDeviceInfo(attn_context_device(ctx), CL_DEVICE_PLATFORM, sizeof pid, &pid, NULL);
    clGetPlatformInfo(pid, CL_PLATFORM_NAME, sizeof platform, platform, NULL);
    CU_ASSERT_PTR_NULL(strstr(platform, "Portable Computing Language"));
    return 0;
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
/* An override that gives the plan to another family that runs the
 * problem leaves the gate undecided (nothing of mma built or run: where
 * its kernels misbehave, forcing another family keeps them off); one the
 * problem refuses (flash's decode) or that names none still decides it. */
static void test_forced_family_skips_gate(void)
{
    attn_context *ctx = own_context();
    attn_mma_assume(ctx, 1);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, "family=tiled,rows=16,keys=32,wg=128"),
                          ATTN_SUCCESS);
    attn_problem p = problem(ATTN_F16, 64);
    attn_plan_info info;
    planned(ctx, &p, &info);
    CU_ASSERT_STRING_EQUAL(info.family, "tiled");
    CU_ASSERT_EQUAL(ctx->mma_state, 0);
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, "keys=32"), ATTN_SUCCESS);
    planned(ctx, &p, &info);
    CU_ASSERT_NOT_EQUAL(ctx->mma_state, 0);
    attn_context_release(ctx);
}

static void test_assumed_default(void)
{
    attn_context *ctx = own_context();
    attn_mma_assume(ctx, 1);
    if (!verified_here(ctx, ATTN_F16)) {
        attn_context_release(ctx);
        return;
    }
    int usable = 0;
    char why[256] = "x";
    CU_ASSERT_EQUAL(attn_family_status(ctx, "mma", &usable, why, sizeof why), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(usable, 1);
    CU_ASSERT_STRING_EQUAL(why, attn_mma_why(ctx, ATTN_F32)); /* "" where f32 is verified too */
    attn_plan_info info;
    static const attn_dtype types[] = {ATTN_F16, ATTN_BF16, ATTN_F32};
    /* f32 has a verdict of its own: where its programs compute wrong it
     * keeps the device's family */
    const int f32_mma = verified_here(ctx, ATTN_F32);
    for (int i = 0; i < 3; i++) {
        attn_problem p = problem(types[i], 64);
        planned(ctx, &p, &info);
        const int want_mma = types[i] != ATTN_F32 || f32_mma;
        CU_ASSERT_EQUAL(strcmp(info.family, "mma") == 0, want_mma);
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
    /* a long block through a KV cache is planned as a prefill: mma's, run
     * by its decode kernel, over an f16 cache and an int8 one (paged by 16:
     * keys fitted to a block), where the device without mma plans its
     * own prefill family */
    for (int int8 = 0; int8 < 2; int8++) {
        attn_kv_cache *cache = NULL;
        const attn_kv_cache_desc desc = {
            .batch = 1, .kv_heads = 2, .head_dim = 64, .capacity = 128, .dtype = ATTN_F16,
            .block_size = 16, .storage = int8 ? ATTN_KV_INT8 : ATTN_KV_AS_DTYPE};
        CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, &desc, &cache), ATTN_SUCCESS);
        attn_problem dp = problem(ATTN_F16, 64);
        dp.q_len = 80;
        attn_plan_info with;
        CU_ASSERT_EQUAL(attn_decode_prepare(ctx, cache, &dp, &with), ATTN_SUCCESS);
        printf("\n  long block, %s cache: %s %s", int8 ? "int8" : "f16", with.family,
               with.params);
        CU_ASSERT_STRING_EQUAL(with.family, "mma");
        CU_ASSERT_PTR_NOT_NULL(strstr(with.params, "keys=16"));
        attn_kv_cache_release(cache);
    }
    attn_context_release(ctx);
}

/* The family a decode of q_len new queries, hq query heads over 2 KV
 * heads, plans on ctx over a D 64 f16 cache (int8: quantized). */
static attn_plan_info decode_planned(attn_context *ctx, int hq, int q_len, int int8)
{
    const attn_kv_cache_desc desc = {.batch = 1, .kv_heads = 2, .head_dim = 64, .capacity = 128,
                                     .dtype = ATTN_F16,
                                     .storage = int8 ? ATTN_KV_INT8 : ATTN_KV_AS_DTYPE};
    attn_kv_cache *cache = NULL;
    attn_plan_info info;
    memset(&info, 0, sizeof info);
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, &desc, &cache), ATTN_SUCCESS);
    attn_problem p = harness_problem(1, hq, 2, 64, q_len, 128, 1);
    p.dtype = ATTN_F16;
    CU_ASSERT_EQUAL(attn_decode_prepare(ctx, cache, &p, &info), ATTN_SUCCESS);
    attn_kv_cache_release(cache);
    return info;
}

/* Assumed capable, decode takes mma where a KV head has
 * ATTN_MMA_DECODE_ROWS query rows (group x new queries) or more, whatever
 * the cache, with as few warps of 16 rows as hold them (at most the
 * default 4); fewer rows keep the device's decode family. */
static void test_assumed_decode(void)
{
    attn_context *ctx = own_context();
    attn_mma_assume(ctx, 1);
    if (!verified_here(ctx, ATTN_F16)) {
        attn_context_release(ctx);
        return;
    }
    static const struct {
        int hq, q_len, int8;
        const char *family, *warps;
    } rows[] = {
        {32, 1, 0, "mma", "warps=1"},  /* MQA-like group of 16 */
        {4, 8, 0, "mma", "warps=1"},   /* a speculative block of 8, group 2 */
        {4, 12, 0, "mma", "warps=2"},  /* 24 rows */
        {4, 40, 0, "mma", "warps=4"},  /* 80 rows: the default's 4 warps */
        {4, 1, 0, NULL, NULL},         /* 2 rows */
        {4, 7, 0, NULL, NULL},         /* 14 rows */
        {32, 1, 1, "mma", "warps=1"},  /* over an int8 cache too */
        {4, 1, 1, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const attn_plan_info info = decode_planned(ctx, rows[i].hq, rows[i].q_len, rows[i].int8);
        printf("\n  decode Hq %d Hkv 2 q_len %d%s: %s %s", rows[i].hq, rows[i].q_len,
               rows[i].int8 ? " int8" : "", info.family, info.params);
        CU_ASSERT_STRING_EQUAL(info.source, "heuristic");
        if (rows[i].family) {
            CU_ASSERT_STRING_EQUAL(info.family, rows[i].family);
            CU_ASSERT_PTR_NOT_NULL(strstr(info.params, rows[i].warps));
        } else {
            CU_ASSERT_STRING_NOT_EQUAL(info.family, "mma");
        }
    }
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
                                        "mma_operands.cl", "mma_core.cl", "mma.cl",
                                        "mask_tiles.cl",
                                        "mma_check.cl", "vector_helpers.cl", "vector_core.cl",
                                        "vector.cl", "tiled_core.cl", "tiled.cl", "flash.cl",
                                        "kv_append.cl", "kv_cache_rows.cl", "decode_common.cl",
                                        "decode_mma.cl"};
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

/* Whether the gate verifies the sources as they are on this device (once
 * a process): a refusal of doctored ones names the doctored step only
 * where it does. */
static int undoctored_verified(void)
{
    static int verdict; /* 0: not asked yet, 1 yes, -1 no */
    if (!verdict) {
        attn_context *ctx = own_context();
        attn_mma_assume(ctx, 1);
        verdict = verified_here(ctx, ATTN_F16) ? 1 : -1;
        attn_context_release(ctx);
    }
    return verdict > 0;
}

/* file's `from` replaced by `to`: the gate must then refuse the family
 * saying `why` (where the sources as they are pass it; elsewhere it
 * refuses them already, at a step that may come first), and plans and
 * results stay those of the device's other families. */
static void check_doctored(const char *file, const char *from, const char *to, const char *why_has)
{
    const int names_step = undoctored_verified();
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
    if (names_step) CU_ASSERT_PTR_NOT_NULL(strstr(why, why_has));
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

/* The decode kernel's splits all written as split 0: the verification
 * decode (two splits) catches it, and the family is refused. */
static void test_doctored_decode_refused(void)
{
    check_doctored("decode_mma.cl", "part_lse, nsplit, get_group_id(0), va, 0);",
                   "part_lse, nsplit, 0, va, 0);", "f16 verification decode");
}

/* The key loop cut at 16 tiles (as a compiler that gets long loops wrong
 * might leave it): every short verification passes, the rows of 4179 keys
 * catch it. */
static void test_doctored_long_rows_refused(void)
{
    check_doctored("mma_core.cl", "j0 < hmax; j0 += BLOCK_KEYS) {",
                   "j0 < min(hmax, jfirst + 16 * BLOCK_KEYS); j0 += BLOCK_KEYS) {",
                   "the f16 verification forward over 4179 keys failed");
}

/* Each split's keys cut at 16 tiles in the decode kernel alone: the short
 * decodes and every forward pass, the long decode catches it. */
static void test_doctored_long_decode_refused(void)
{
    check_doctored("decode_mma.cl", "chunk, ntiles, KV_CACHE_ARGS",
                   "min(chunk, 16 * BLOCK_KEYS), ntiles, KV_CACHE_ARGS",
                   "the f16 verification decode over 4179 keys (paged int8 cache) failed");
}

/* bf16's int8 K staged at twice its values, f16's untouched: only the
 * bf16 verification decode (paged int8) sees it, after f16's pass. */
static void test_doctored_bf16_decode_refused(void)
{
    check_doctored("mma_operands.cl", "mma_int8_pair(kv.k, at, 1.0f)",
                   "mma_int8_pair(kv.k, at, STORAGE == 2 ? 2.0f : 1.0f)",
                   "bf16 verification decode (paged int8 cache)");
}

/* file's `from` replaced by `to` breaks f32 alone: f32 is refused, saying
 * why_has, and runs on the device's family; f16 keeps the tensor cores. */
static void check_f32_refused(const char *file, const char *from, const char *to,
                              const char *why_has)
{
    char dir[256];
    harness_temp_dir(dir, sizeof dir, "mma-gate");
    attn_context *ctx = own_context();
    doctor(ctx, dir, file, from, to);
    if (!verified_here(ctx, ATTN_F16)) { /* nothing here shows f32 refused alone */
        attn_context_release(ctx);
        harness_remove_tree(dir);
        return;
    }
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
    CU_ASSERT_PTR_NOT_NULL(strstr(why, why_has));
    attn_context_release(ctx);
    harness_remove_tree(dir);
}

/* f32's path with 1xTF32 (the small terms dropped: about 1e-3 relative,
 * ten times f32's tolerance) */
static void test_doctored_f32_refused(void)
{
    check_f32_refused("mma_operands.cl",
                      "    mma_tf32(d, asmall, (uint2)(x.x, y.x), ws);\n"
                      "    mma_tf32(d, abig, (uint2)(x.y, y.y), ws);\n",
                      "", "the f32 verification forward (3xTF32) failed");
}

/* the folded f32 rows alone broken (past 4096 keys: the folded sum
 * dropped at the end), which every shorter verification misses */
static void test_doctored_f32_fold_refused(void)
{
    check_f32_refused("mma_core.cl", "const float4 a = tot[r / 2][dn] + acc[r / 2][dn];",
                      "const float4 a = acc[r / 2][dn];",
                      "the f32 verification forward past 4096 keys (3xTF32, folded) failed");
}

/* the folded f32 rows broken in the decode kernel alone (a split past
 * 4096 keys, as forced splits may leave it), which the folded forward
 * misses */
static void test_doctored_f32_fold_decode_refused(void)
{
    check_f32_refused("mma_core.cl", "const float4 a = tot[r / 2][dn] + acc[r / 2][dn];",
                      "\n#ifdef DECODE_KERNELS\n            const float4 a = acc[r / 2][dn];\n"
                      "#else\n            const float4 a = tot[r / 2][dn] + acc[r / 2][dn];\n"
                      "#endif\n",
                      "the f32 verification decode past 4096 keys a split (3xTF32, folded) failed");
}

/* the tf32 product's A layout broken (as a compiler refusing its
 * instructions would leave it): the tf32 fragment check, apart from the
 * 16-bit one, refuses f32 alone */
static void test_doctored_tf32_ops_refused(void)
{
    check_f32_refused("mma_ops.cl", "(r >> 3) + 2 * (k >> 2)]", "2 * (r >> 3) + (k >> 2)]",
                      "the tf32 fragment check failed: ");
}

/* The programs at one head dim doctored, those at 64 (where the verdicts
 * are decided) untouched: p (f16 at that head dim) is refused, forced or
 * not, with right results and no error; head dim 64 keeps the family. */
static void check_dim_refused(const char *file, const char *from, const char *to, int d)
{
    const attn_problem p = problem(ATTN_F16, d);
    char dir[256];
    harness_temp_dir(dir, sizeof dir, "mma-gate");
    attn_context *ctx = own_context();
    doctor(ctx, dir, file, from, to);
    if (verified_here(ctx, ATTN_F16)) {
        check_refused(ctx, &p, 77);
        attn_plan_info info;
        const attn_problem p64 = problem(ATTN_F16, 64);
        planned(ctx, &p64, &info);
        CU_ASSERT_STRING_EQUAL(info.family, "mma");
        CU_ASSERT_EQUAL(harness_forward_check(ctx, &p64, 78), 0);
    }
    attn_context_release(ctx);
    harness_remove_tree(dir);
}

/* A prefill program that fails to build at head dim 128 alone (as a
 * compiler may, out of registers): refused there, not ATTN_ERROR_BUILD. */
static void test_doctored_head_dim_build_refused(void)
{
    check_dim_refused("mma.cl", "    __local mma_local tl;\n",
                      "    __local mma_local tl;\n#if HEAD_DIM == 128\n    doctored;\n#endif\n",
                      128);
}

/* The decode kernel's splits all written as split 0 at head dim 32 alone:
 * its verification decodes catch it, and the forward at 32 is refused
 * too (the verdict is the head dim's). */
static void test_doctored_head_dim_decode_refused(void)
{
    check_dim_refused("decode_mma.cl", "part_lse, nsplit, get_group_id(0), va, 0);",
                      "part_lse, nsplit, HEAD_DIM == 32 ? 0 : get_group_id(0), va, 0);", 32);
}

/* f32's folded programs (past 4096 keys) fail to build at head dim 128
 * alone: the head dim's f32 verdict runs them, so f32 at 128 is refused
 * there, even for short rows, and its long rows never reach the caller as
 * ATTN_ERROR_BUILD; f16 at 128 keeps the family. */
static void test_doctored_head_dim_f32_fold_refused(void)
{
    char dir[256];
    harness_temp_dir(dir, sizeof dir, "mma-gate");
    attn_context *ctx = own_context();
    doctor(ctx, dir, "mma.cl", "    __local mma_local tl;\n",
           "    __local mma_local tl;\n#if MMA_FOLD && HEAD_DIM == 128\n    doctored;\n"
           "#endif\n");
    if (verified_here(ctx, ATTN_F16) && verified_here(ctx, ATTN_F32)) {
        const attn_problem p32 = problem(ATTN_F32, 128), p16 = problem(ATTN_F16, 128);
        check_refused(ctx, &p32, 79);
        attn_plan_info info;
        planned(ctx, &p16, &info);
        CU_ASSERT_STRING_EQUAL(info.family, "mma");
    }
    attn_context_release(ctx);
    harness_remove_tree(dir);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_status_here),
    HARNESS_TEST(test_assumed_default),
    HARNESS_TEST(test_forced_family_skips_gate),
    HARNESS_TEST(test_assumed_decode),
    HARNESS_TEST(test_doctored_fragments_refused),
    HARNESS_TEST(test_doctored_f32_fold_refused),
    HARNESS_TEST(test_doctored_f32_fold_decode_refused),
    HARNESS_TEST(test_doctored_family_refused),
    HARNESS_TEST(test_doctored_decode_refused),
    HARNESS_TEST(test_doctored_bf16_decode_refused),
    HARNESS_TEST(test_doctored_long_rows_refused),
    HARNESS_TEST(test_doctored_long_decode_refused),
    HARNESS_TEST(test_doctored_f32_refused),
    HARNESS_TEST(test_doctored_tf32_ops_refused),
    HARNESS_TEST(test_doctored_head_dim_build_refused),
    HARNESS_TEST(test_doctored_head_dim_decode_refused),
    HARNESS_TEST(test_doctored_head_dim_f32_fold_refused),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("mma_gate", tests); }

int main(void) { return harness_run("test_mma_gate", register_tests); }
