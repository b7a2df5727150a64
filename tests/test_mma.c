/* test_mma.c -- the mma family's parameters (cl/mma_core.cl,
 * host/kernels/desc_mma.c): what attn_context_set_params and the planner
 * refuse, the __local and private estimates and the shrink loop at the
 * H200's limits (f32's too), the plan attn_prepare reports, the problems it
 * cannot run (f32 past D 128 or its key limit, head dims not a multiple of
 * 16) keeping the device's plan with one
 * INFO line, decode forced onto it over every cache kind, and the
 * tuner searching it only when named, and Q read at each k-step (qregs=0)
 * giving the bits Q held gives. Its results are checked in the forward matrices (test_forward,
 * test_variants*, test_seed_failures: the HARNESS_MMA runs). */
#include "cases.h"
#include "kernels/kernel_desc.h"
#include "tuning/tuning.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* B = 1, Hq 2, Hkv 1, causal, q_len = kv_len = s, storage t */
static attn_problem problem(int D, int s, attn_dtype t)
{
    attn_problem p = harness_problem(1, 2, 1, D, s, s, 1);
    p.dtype = t;
    return p;
}

static attn_context *context(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    return ctx;
}

static void test_mma_params_refused(void)
{
    attn_context *ctx = context();
    /* out of range or not a power of two: refused when set */
    const char *bad[] = {"family=mma,warps=3", "family=mma,warps=16", "family=mma,keys=48",
                         "family=mma,keys=8", "family=mma,mtiles=3", "family=mma,qregs=2",
                         "family=mma,qregs=-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_EQUAL(attn_context_set_params(ctx, bad[i]), ATTN_ERROR_INVALID_ARGUMENT);
        printf("\n  %s: %s", bad[i], attn_last_error(ctx));
        CU_ASSERT(strncmp(attn_last_error(ctx), "attn_context_set_params: ", 25) == 0);
    }
    harness_use_params(ctx, NULL);
}

/* The legality check, the formulas and the shrink loop against the H200's
 * limits (48 KiB of __local, 1024 work-items), whatever device runs it. */
static void test_mma_gpu_limits(void)
{
    const attn_device_limits h200 = {CL_DEVICE_TYPE_GPU, 48 * 1024, 1024, 132, 0, 0};
    attn_problem p = problem(128, 512, ATTN_F16);
    attn_params pr = attn_params_defaults(ATTN_FAMILY_MMA);
    char err[256] = "";
    /* D 128, 64 keys, 4 warps: K 64 x 68, Vt 128 x 36, the non-finite V
     * marks 64 + 1 (the struct rounded up to 16 bytes: + 3), scratch 4 x 192
     * uints = 39184 bytes; 128 work-items,
     * 64 rows */
    CU_ASSERT(attn_params_legal(&pr, &h200, &p, err, sizeof err));
    CU_ASSERT_EQUAL(attn_params_local_bytes(&pr, &p), 4u * (64 * 68 + 128 * 36 + 68 + 4 * 192));
    CU_ASSERT_EQUAL(attn_params_local_bytes(&pr, &p), 39184u);
    CU_ASSERT_EQUAL(attn_params_work_group(&pr), 128u);
    CU_ASSERT_EQUAL(attn_params_block_rows(&pr), 64);
    /* qa 8 uint4, acc 16 float4, s 8 float4, 7 values x 2 rows */
    CU_ASSERT_EQUAL(attn_params_private_bytes(ATTN_ENTRY_PREFILL, &pr, &p),
                    4u * (32 + 64 + 32 + 14));
    /* D 256: 74000 bytes, too many; the shrink loop halves the keys to 32 */
    p.head_dim = 256;
    CU_ASSERT(!attn_params_legal(&pr, &h200, &p, err, sizeof err));
    printf("\n  D 256 defaults: %s", err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "74000 bytes of local memory"));
    attn_params_fit(ATTN_ENTRY_PREFILL, &pr, &h200, &p);
    CU_ASSERT(attn_params_legal(&pr, &h200, &p, err, sizeof err));
    CU_ASSERT_EQUAL(pr.block_keys, 32);
    CU_ASSERT_EQUAL(pr.mma_warps, 4);
    CU_ASSERT_EQUAL(attn_params_local_bytes(&pr, &p), 4u * (32 * 132 + 256 * 20 + 36 + 4 * 192));
    CU_ASSERT(attn_params_private_bytes(ATTN_ENTRY_PREFILL, &pr, &p) <= ATTN_PRIVATE_BUDGET_GPU);
    /* 8 warps, two m-tiles: 256 work-items, 256 rows a work-group */
    pr.mma_warps = 8, pr.mma_mtiles = 2, pr.block_keys = 16, p.head_dim = 64;
    CU_ASSERT(attn_params_legal(&pr, &h200, &p, err, sizeof err));
    CU_ASSERT_EQUAL(attn_params_work_group(&pr), 256u);
    CU_ASSERT_EQUAL(attn_params_block_rows(&pr), 256);
    /* a device of 128 work-items a work-group */
    const attn_device_limits small = {CL_DEVICE_TYPE_GPU, 48 * 1024, 128, 8, 0, 0};
    CU_ASSERT(!attn_params_legal(&pr, &small, &p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "256 work-items a work-group exceed the device's max 128"));
    /* f32 (3xTF32): K and V as floats, Q's fragments twice the registers;
     * at D 128 the defaults need 71952 bytes, the fit halves the keys */
    p.dtype = ATTN_F32, p.head_dim = 128;
    pr = attn_params_defaults(ATTN_FAMILY_MMA);
    CU_ASSERT(!attn_params_legal(&pr, &h200, &p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "71952 bytes of local memory"));
    attn_params_fit(ATTN_ENTRY_PREFILL, &pr, &h200, &p);
    CU_ASSERT_EQUAL(pr.block_keys, 32);
    /* k [32][128 + 8], v [32][128 + 4] floats, marks 32 + 1 (+ 3 to 16
     * bytes), scratch 4 x 192 uints */
    CU_ASSERT_EQUAL(attn_params_local_bytes(&pr, &p), 4u * (32 * 136 + 32 * 132 + 36 + 4 * 192));
    /* qa 16 float4, acc 16 float4, s 4 float4, 7 values x 2 rows */
    CU_ASSERT_EQUAL(attn_params_private_bytes(ATTN_ENTRY_PREFILL, &pr, &p),
                    4u * (64 + 64 + 16 + 14));
    char opts[512];
    attn_params_options(&pr, &p, ATTN_ENTRY_PREFILL, opts, sizeof opts);
    CU_ASSERT_PTR_NULL(strstr(opts, "MMA_FOLD"));
    /* past ATTN_MMA_F32_PLAIN_KEYS keys O folds into a second accumulator
     * (tot, as acc): built with MMA_FOLD */
    p.kv_len = ATTN_MMA_F32_PLAIN_KEYS + 1;
    attn_params_options(&pr, &p, ATTN_ENTRY_PREFILL, opts, sizeof opts);
    CU_ASSERT_PTR_NOT_NULL(strstr(opts, "-DMMA_FOLD=1"));
    CU_ASSERT_EQUAL(attn_params_private_bytes(ATTN_ENTRY_PREFILL, &pr, &p),
                    4u * (64 + 64 + 64 + 16 + 14));
    /* decode over a cache of that capacity: automatic splits are chunks of
     * at most ATTN_MMA_F32_PLAIN_KEYS keys (two here), summed plainly; one
     * forced split folds, two do not (one new query: a decode) */
    p.q_len = 1;
    attn_params_options(&pr, &p, ATTN_ENTRY_DECODE, opts, sizeof opts);
    CU_ASSERT_PTR_NULL(strstr(opts, "MMA_FOLD"));
    CU_ASSERT_EQUAL(attn_params_private_bytes(ATTN_ENTRY_DECODE, &pr, &p),
                    4u * (64 + 64 + 16 + 14));
    CU_ASSERT_EQUAL(attn_params_decode_least_splits(&pr, &p, p.kv_len), 2);
    CU_ASSERT_EQUAL(attn_params_decode_least_splits(&pr, &p, ATTN_MMA_F32_PLAIN_KEYS), 1);
    CU_ASSERT_EQUAL(attn_params_decode_least_splits(&pr, &p, ATTN_MMA_F32_MAX_KEYS), 256);
    pr.kv_splits = 1;
    attn_params_options(&pr, &p, ATTN_ENTRY_DECODE, opts, sizeof opts);
    CU_ASSERT_PTR_NOT_NULL(strstr(opts, "-DMMA_FOLD=1"));
    pr.kv_splits = 2;
    attn_params_options(&pr, &p, ATTN_ENTRY_DECODE, opts, sizeof opts);
    CU_ASSERT_PTR_NULL(strstr(opts, "MMA_FOLD"));
    pr.kv_splits = 0;
    /* a block of more queries than ATTN_DECODE_MAX_Q_LEN folds instead:
     * no split for the sum's sake (256 partial O's of the whole block) */
    p.q_len = ATTN_DECODE_MAX_Q_LEN + 1;
    attn_params_options(&pr, &p, ATTN_ENTRY_DECODE, opts, sizeof opts);
    CU_ASSERT_PTR_NOT_NULL(strstr(opts, "-DMMA_FOLD=1"));
    CU_ASSERT_EQUAL(attn_params_decode_least_splits(&pr, &p, ATTN_MMA_F32_MAX_KEYS), 1);
    p.q_len = ATTN_DECODE_MAX_Q_LEN;
    attn_params_options(&pr, &p, ATTN_ENTRY_DECODE, opts, sizeof opts);
    CU_ASSERT_PTR_NULL(strstr(opts, "MMA_FOLD"));
    CU_ASSERT_EQUAL(attn_params_decode_least_splits(&pr, &p, ATTN_MMA_F32_MAX_KEYS), 256);
    p.q_len = 512;
    p.dtype = ATTN_F16; /* 16-bit types never fold */
    CU_ASSERT_EQUAL(attn_params_decode_least_splits(&pr, &p, ATTN_MMA_F32_MAX_KEYS), 1);
    p.dtype = ATTN_F32;
    p.kv_len = 512;
    /* the problems it cannot run, whatever the tunables */
    p.head_dim = 144;
    CU_ASSERT(!attn_params_legal(&pr, &h200, &p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "the family mma runs f32 with a head dim of at most 128"));
    p.head_dim = 128, p.kv_len = ATTN_MMA_F32_MAX_KEYS + 1;
    CU_ASSERT_PTR_NOT_NULL(attn_family_refuses(ATTN_FAMILY_MMA, &p));
    p.kv_len = ATTN_MMA_F32_MAX_KEYS;
    CU_ASSERT_PTR_NULL(attn_family_refuses(ATTN_FAMILY_MMA, &p));
    p.dtype = ATTN_BF16, p.head_dim = 40;
    CU_ASSERT(!attn_params_legal(&pr, &h200, &p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "multiple of 16"));
    p.head_dim = 272;
    CU_ASSERT_PTR_NOT_NULL(attn_family_refuses(ATTN_FAMILY_MMA, &p));
    p.head_dim = 16;
    CU_ASSERT_PTR_NULL(attn_family_refuses(ATTN_FAMILY_MMA, &p));
}

static void test_mma_plan(void)
{
    attn_context *ctx = context();
    attn_problem p = problem(32, 40, ATTN_BF16);
    attn_plan_info h, o;
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &h), ATTN_SUCCESS);
    CU_ASSERT_STRING_NOT_EQUAL(h.family, "mma"); /* nobody's default */
    const char *set = "family=mma,warps=2,keys=32,mtiles=2";
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, set), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &o), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(o.family, "mma");
    CU_ASSERT_STRING_EQUAL(o.source, "override");
    CU_ASSERT_STRING_EQUAL(o.params, "family=mma,warps=2,keys=32,mtiles=2,qregs=1"); /* default */
    /* by hand from cl/mma_operands.cl at D 32: K 32 x (16 + 4), Vt 32 x (16
     * + 4), marks 32 + 1 (+ 3 to 16 bytes), scratch 2 x 192 uints; qa 2 x 2
     * uint4, acc 2 x 4 float4, s 4 float4, 7 values x 4 rows */
    CU_ASSERT_EQUAL(o.local_bytes, 4u * (32 * 20 + 32 * 20 + 36 + 2 * 192));
    CU_ASSERT_EQUAL(o.private_bytes, 4u * (16 + 32 + 16 + 28));
    /* Q read at each k-step: qa is 2 x (a pointer, two offsets, two flags) */
    const char *read = "family=mma,warps=2,keys=32,mtiles=2,qregs=0";
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, read), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &o), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(o.params, read);
    CU_ASSERT_EQUAL(o.local_bytes, 4u * (32 * 20 + 32 * 20 + 36 + 2 * 192));
    CU_ASSERT_EQUAL(o.private_bytes, 4u * (2 * 8 + 32 + 16 + 28));
    harness_use_params(ctx, NULL);
}

/* the INFO lines the planner logs, for test_mma_fallback */
static char g_info[1024];
static void keep_info(attn_log_level level, const char *message, void *user)
{
    (void)user;
    if (level == ATTN_LOG_INFO && strstr(message, "family mma"))
        snprintf(g_info, sizeof g_info, "%s", message);
}

/* Problems mma cannot run, forced: the device's own plan, one INFO line
 * saying why, a correct result; the HARNESS_MMA runs of the case table
 * skip such cases (cases.c), so this is their one check. */
static void test_mma_fallback(void)
{
    attn_context *ctx = context();
    const attn_dtype types[] = {ATTN_F32, ATTN_F16};
    const int dims[] = {144, 40};
    for (int i = 0; i < 2; i++) {
        attn_problem p = problem(dims[i], 23, types[i]);
        attn_plan_info plain, forced;
        CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &plain), ATTN_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, "family=mma,warps=2"), ATTN_SUCCESS);
        g_info[0] = 0;
        attn_set_log_callback(keep_info, NULL, ATTN_LOG_INFO);
        CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &forced), ATTN_SUCCESS);
        attn_set_log_callback(NULL, NULL, ATTN_LOG_WARN);
        printf("\n  %s D%d under family=mma: %s (%s)", i ? "f16" : "f32", dims[i],
               forced.params, g_info);
        CU_ASSERT_STRING_EQUAL(forced.family, plain.family);
        CU_ASSERT_STRING_EQUAL(forced.params, plain.params);
        CU_ASSERT_STRING_EQUAL(forced.source, "heuristic");
        CU_ASSERT_PTR_NOT_NULL(
            strstr(g_info, i ? "multiple of 16" : "f32 with a head dim of at most 128"));
        harness_use_params(ctx, NULL);
    }
    /* and it runs: a case the mma runs skip, through the fallback */
    harness_case c = *harness_case_named("D40 MQA Sq7 Skv33");
    c.families = HARNESS_VECTOR; /* harness_case_run skips HARNESS_MMA here */
    c.params = NULL;
    const attn_problem cp = harness_case_problem(&c);
    CU_ASSERT_PTR_NOT_NULL(attn_family_refuses(ATTN_FAMILY_MMA, &cp));
    const float amp = 1.0f;
    const size_t nq = (size_t)c.B * c.Hq * c.Sq * c.D, nkv = (size_t)c.B * c.Hkv * c.Skv * c.D;
    float *q = harness_xalloc(nq), *k = harness_xalloc(nkv), *v = harness_xalloc(nkv);
    float *o = harness_xalloc(nq), *l = harness_xalloc((size_t)c.B * c.Hq * c.Sq);
    harness_fill_qkv(q, nq, k, v, nkv, 41, amp, -2.0f, 2.0f);
    CU_ASSERT_EQUAL(harness_case_exec(&c, HARNESS_MMA, attn_forward, "attn_forward", q, k, v, o, l),
                    0);
    CU_ASSERT_EQUAL(harness_check_reference("D40 f32 under family=mma", &cp, NULL, q, k, v, o, l,
                                            41),
                    0);
    free(q), free(k), free(v), free(o), free(l);

    /* f32 past ATTN_MMA_F32_MAX_KEYS is refused by its exact length, which
     * shares a bucket (a plan cache slot) with lengths the family runs: the
     * cached mma plan once served the longer problem too */
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, "family=mma"), ATTN_SUCCESS);
    attn_problem lp = problem(32, 1, ATTN_F32);
    const int keys[] = {ATTN_MMA_F32_MAX_KEYS, ATTN_MMA_F32_MAX_KEYS + 1, ATTN_MMA_F32_MAX_KEYS};
    for (int i = 0; i < 3; i++) {
        lp.kv_len = keys[i];
        attn_plan_info info;
        CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &lp, &info), ATTN_SUCCESS);
        printf("\n  f32 %d keys under family=mma: %s", keys[i], info.params);
        CU_ASSERT_EQUAL(strcmp(info.family, "mma") == 0, keys[i] <= ATTN_MMA_F32_MAX_KEYS);
    }
    harness_use_params(ctx, NULL);
}

/* The plan attn_decode_prepare reports for a cache of desc under params
 * (NULL: the device's own), for q_len new queries of q_heads query heads. */
static attn_plan_info decode_plan_heads(const attn_kv_cache_desc *desc, const char *params,
                                        int q_heads, int q_len)
{
    attn_context *ctx = context();
    attn_kv_cache *cache = NULL;
    attn_plan_info info;
    memset(&info, 0, sizeof info);
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, desc, &cache), ATTN_SUCCESS);
    attn_problem p = harness_problem(desc->batch, q_heads, desc->kv_heads, desc->head_dim, q_len,
                                     desc->capacity, 1);
    p.dtype = desc->dtype;
    CU_ASSERT_EQUAL(harness_use_params(ctx, params), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_decode_prepare(ctx, cache, &p, &info), ATTN_SUCCESS);
    harness_use_params(ctx, NULL);
    attn_kv_cache_release(cache);
    return info;
}

/* ... with 2 query heads per KV head */
static attn_plan_info decode_plan(const attn_kv_cache_desc *desc, const char *params, int q_len)
{
    return decode_plan_heads(desc, params, 2 * desc->kv_heads, q_len);
}

/* Forced, decode runs on mma (cl/decode_mma.cl) over every cache kind:
 * contiguous or paged, as the dtype or int8; at a head dim it cannot run
 * it keeps the device's plan. Its results: the decode matrices
 * (test_decode*, test_variants_decode: HARNESS_MMA). */
static void test_mma_decode_forced(void)
{
    const char *forced = "family=mma,warps=2";
    static const attn_dtype types[] = {ATTN_F32, ATTN_F16, ATTN_BF16};
    for (int t = 0; t < 3; t++)
        for (int kind = 0; kind < 4; kind++) {
            const int paged = kind & 1, int8 = kind >> 1;
            const attn_kv_cache_desc d = {.batch = 1, .kv_heads = 1, .head_dim = 32,
                                          .capacity = 64, .dtype = types[t],
                                          .block_size = paged ? 16 : 0,
                                          .storage = int8 ? ATTN_KV_INT8 : ATTN_KV_AS_DTYPE};
            const attn_plan_info info = decode_plan(&d, forced, 1);
            CU_ASSERT_STRING_EQUAL(info.family, "mma");
            CU_ASSERT_STRING_EQUAL(info.source, "override");
            CU_ASSERT_PTR_NOT_NULL(strstr(info.params, "warps=2"));
            /* paged by 16: a key tile inside one block */
            if (paged) CU_ASSERT_PTR_NOT_NULL(strstr(info.params, "keys=16"));
        }
    const attn_kv_cache_desc d40 = {.batch = 1, .kv_heads = 1, .head_dim = 40, .capacity = 64,
                                    .dtype = ATTN_F16};
    const attn_plan_info plain = decode_plan(&d40, NULL, 1);
    const attn_plan_info info = decode_plan(&d40, forced, 1);
    printf("\n  f16 cache D40 under %s: %s %s", forced, info.family, info.params);
    CU_ASSERT_STRING_EQUAL(info.family, plain.family);
    CU_ASSERT_STRING_EQUAL(info.source, "heuristic");
}

/* Q read at each k-step (qregs=0) sums the same products in the same
 * order as Q held in registers: the same bits, forward and decode, in each
 * storage type, with padding and GQA, one and two m-tiles a warp. */
static void test_mma_q_read_same(void)
{
    static const struct {
        const char *name, *held, *read;
        harness_entry entry;
        const char *entry_name;
    } runs[] = {
        {"tiles causal padded", "warps=2,keys=32,mtiles=2,qregs=1",
         "warps=2,keys=32,mtiles=2,qregs=0", attn_forward, "attn_forward"},
        {"tiles causal padded f16 D32", "warps=1,keys=16,qregs=1", "warps=1,keys=16,qregs=0",
         attn_forward, "attn_forward"},
        {"tiles Sq>Skv bf16 D48", "warps=2,keys=16,mtiles=2,qregs=1",
         "warps=2,keys=16,mtiles=2,qregs=0", attn_forward, "attn_forward"},
        {"decode GQA f32 ragged caches", "warps=1,splits=2,qregs=1", "warps=1,splits=2,qregs=0",
         harness_decode_entry, "attn_decode"},
        {"decode GQA bf16 full, split", "warps=2,keys=16,mtiles=2,splits=3,qregs=1",
         "warps=2,keys=16,mtiles=2,splits=3,qregs=0", harness_decode_entry, "attn_decode"},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        harness_case held = *harness_case_named(runs[i].name), read = held;
        held.families = read.families = HARNESS_MMA;
        held.params = runs[i].held, read.params = runs[i].read;
        /* the runs force mma on attn_forward's plan (cases.c); decode's is
         * checked here, or a plan fallen back to another family would
         * compare with itself */
        if (runs[i].entry == harness_decode_entry)
            for (int r = 0; r < 2; r++) {
                char set[128];
                snprintf(set, sizeof set, "family=mma,%s", r ? runs[i].read : runs[i].held);
                const attn_kv_cache_desc d = {.batch = held.B, .kv_heads = held.Hkv,
                                              .head_dim = held.D, .capacity = held.Skv,
                                              .dtype = held.dtype};
                const attn_plan_info info = decode_plan_heads(&d, set, held.Hq, held.Sq);
                CU_ASSERT_STRING_EQUAL(info.family, "mma");
                CU_ASSERT_PTR_NOT_NULL(strstr(info.params, r ? "qregs=0" : "qregs=1"));
            }
        CU_ASSERT_EQUAL(harness_case_same(&held, &read, HARNESS_MMA, runs[i].entry,
                                          runs[i].entry_name, 1),
                        0);
    }
}

/* The tuner's candidates: mma's only when named, all of them legal (f32's
 * fewer), none for a problem it cannot run. */
static void test_mma_search(void)
{
    const attn_device_limits h200 = {CL_DEVICE_TYPE_GPU, 48 * 1024, 1024, 132, 0, 0};
    attn_problem p = problem(128, 512, ATTN_F16);
    const attn_params base = attn_params_defaults(ATTN_FAMILY_TILED);
    attn_params *list = NULL;
    int n = attn_search_enumerate(&h200, ATTN_ENTRY_PREFILL, &p, NULL, &base, 0, &list);
    CU_ASSERT(n > 0);
    for (int i = 0; i < n; i++) CU_ASSERT_NOT_EQUAL(list[i].family, ATTN_FAMILY_MMA);
    free(list);
    n = attn_search_enumerate(&h200, ATTN_ENTRY_PREFILL, &p, NULL, &base, 1u << ATTN_FAMILY_MMA,
                              &list);
    /* 4 warps x 4 keys x 2 m-tiles x Q held or read, less 128 keys (K 128
     * x 68 + Vt 128 x 68 uints and the scratch: 73 KiB and more) */
    CU_ASSERT_EQUAL(n, 4 * 3 * 2 * 2);
    char err[256];
    for (int i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(list[i].family, ATTN_FAMILY_MMA);
        CU_ASSERT(attn_params_legal(&list[i], &h200, &p, err, sizeof err));
    }
    free(list);
    /* f32: K and V as floats, 64 keys and more over 48 KiB */
    p.dtype = ATTN_F32;
    n = attn_search_enumerate(&h200, ATTN_ENTRY_PREFILL, &p, NULL, &base, 1u << ATTN_FAMILY_MMA,
                              &list);
    CU_ASSERT_EQUAL(n, 4 * 2 * 2 * 2);
    free(list);
    /* decode, over a cache of blocks of 16: its splits too, keys 16 */
    p.dtype = ATTN_F16;
    attn_shape_class cache;
    attn_decode_class_of(&p, 16, 0, &cache);
    n = attn_search_enumerate(&h200, ATTN_ENTRY_DECODE, &p, &cache, &base, 1u << ATTN_FAMILY_MMA,
                              &list);
    CU_ASSERT(n > 4 * 2);
    for (int i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(list[i].family, ATTN_FAMILY_MMA);
        CU_ASSERT_EQUAL(list[i].block_keys, 16);
    }
    free(list);
    p.dtype = ATTN_F32;
    p.head_dim = 144;
    n = attn_search_enumerate(&h200, ATTN_ENTRY_PREFILL, &p, NULL, &base, 1u << ATTN_FAMILY_MMA,
                              &list);
    CU_ASSERT_EQUAL(n, 0);
    free(list);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_mma_params_refused),
    HARNESS_TEST(test_mma_gpu_limits),
    HARNESS_TEST(test_mma_plan),
    HARNESS_TEST(test_mma_fallback),
    HARNESS_TEST(test_mma_decode_forced),
    HARNESS_TEST(test_mma_q_read_same),
    HARNESS_TEST(test_mma_search),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("mma", tests); }

int main(void) { return harness_run("test_mma", register_tests); }
