/* test_config.c -- the configuration API: attn_context_set_params
 * (validation, the plan it gives and the memory it reports, clearing,
 * correct results under each family), the kernels' private-memory
 * estimates and the GPU heuristic's budget, attn_context_set_tuning_db (a
 * hand-written entry for a forward and for a decode, cached until the next
 * change), the program-cache and kernel-source folders, the log callback
 * and its level, the environment read when a context is created (in
 * child processes), and the number syntax they, the tools and the
 * environment share (core/text.c). */
#define _XOPEN_SOURCE 700 /* strdup */
#include "harness.h"
#include "attention/decode.h" /* attn_decode_params_heuristic */
#include "attention/plan.h"   /* attn_plan_family_start */
#include "core/context.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/program.h"
#include "core/text.h"
#include "tuning/tuning.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* B = 1, causal f32, q_len = kv_len = s */
static attn_problem problem(int D, int hq, int hkv, int s)
{
    const attn_problem p = {.batch = 1, .q_heads = hq, .kv_heads = hkv, .head_dim = D, .q_len = s,
                            .kv_len = s, .dtype = ATTN_F32, .causal = 1, .scale = 0.0f};
    return p;
}

/* A context of its own (configuration changes stay in the test). */
static attn_context *own_context(void)
{
    attn_context *ctx = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &ctx), ATTN_SUCCESS);
    return ctx;
}

/* ---- attn_context_set_params ---- */

static void test_set_params_errors(void)
{
    CU_ASSERT_EQUAL(attn_context_set_params(NULL, "rows=4"), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_STRING_EQUAL(attn_last_error(NULL), "attn_context_set_params: ctx is NULL");
    CU_ASSERT_EQUAL(attn_context_set_tuning_db(NULL, NULL, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_STRING_EQUAL(attn_last_error(NULL), "attn_context_set_tuning_db: ctx is NULL");
    attn_context *ctx = own_context();
    const struct { const char *text, *says; } bad[] = {
        {"vec=3", "vec=3"},                         /* not a power of two */
        {"family=vector,rows=17", "rows=17"},       /* beyond the vector family's 16 */
        {"family=tiled,wg=2048", "wg=2048"},        /* beyond any work-group */
        {"splits=-1", "splits=-1"},                 /* below the range */
        {"family=gpu", "family=gpu"},               /* no such family */
        {"block_rows=8", "\"block_rows\""},         /* the field's name, not the tunable's */
        {"rows=8;keys=16", "rows=8;keys=16"},       /* not an integer */
        {"rows=8,keys", "\"keys\""},                /* not name=value */
        {"rows=8,rows=16", "rows is given twice"},  /* a typo, not the last one */
        {"family=tiled,family=vector", "family is given twice"},
        /* another family's tunable: left out, but out of its own range still wrong */
        {"family=vector,wg=4096", "wg=4096"},
        /* whole numbers written plainly: strtol's int cast took 2^32 + 1 as
         * 1 (the vector family), and it took a '+' */
        {"family=4294967297", "family=4294967297"},
        {"family=+1", "family=+1"},
        {"rows=+8", "rows=+8"},
        {"rows=4294967304", "rows=4294967304"},
        /* in range, not powers of two */
        {"vec=12", "vec=12 is outside 4..16 or not a power of two"},
        {"family=vector,keys=48", "keys=48 is outside"},
        {"family=tiled,wg=96", "wg=96 is outside"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_EQUAL(attn_context_set_params(ctx, bad[i].text), ATTN_ERROR_INVALID_ARGUMENT);
        const char *msg = attn_last_error(ctx);
        printf("\n  %s: %s", bad[i].text, msg);
        /* the text echoed, then what is wrong with it: says is looked for
         * after the echo (which holds every name) */
        char echo[128];
        snprintf(echo, sizeof echo, "attn_context_set_params: params \"%s\": ", bad[i].text);
        CU_ASSERT_FATAL(strncmp(msg, echo, strlen(echo)) == 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg + strlen(echo), bad[i].says));
    }
    /* legal on its own: accepted (the problem decides later) */
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, "family=vector,keys=8,vec=16"), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(attn_last_error(ctx), "");
    attn_problem p = problem(16, 2, 2, 40);
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "keys=8 is not a multiple of vec=16"));
    attn_context_release(ctx);
}

static void test_override_plan(void)
{
    attn_context *ctx = own_context();
    attn_problem p = problem(32, 4, 2, 100);
    attn_plan_info h, o, c;
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &h), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(h.source, "heuristic");
    /* the other family than the heuristic's, named in full */
    const int tiled = strcmp(h.family, "tiled") == 0;
    const char *want = tiled ? "family=vector,rows=4,keys=16,vec=8"
                             : "family=tiled,rows=4,keys=16,wg=32,local_kv=0";
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, want), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &o), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(o.source, "override");
    CU_ASSERT_STRING_EQUAL(o.family, tiled ? "vector" : "tiled");
    CU_ASSERT_STRING_EQUAL(o.params, want);
    /* the memory its kernel declares, computed by hand from the arrays of
     * cl/tiled_core.cl (D 32: local Q 4 x 36, scores 4 x 16, 4 x 4 row
     * floats; private acc, tot, cmp of 32 / 8 columns) and cl/vector.cl */
    CU_ASSERT_EQUAL(o.local_bytes, tiled ? 0u : 896u);
    CU_ASSERT_EQUAL(o.private_bytes, tiled ? 3280u : 48u);
    /* a partial override keeps the planned values of the rest */
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, "keys=64"), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &o), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(o.source, "override");
    CU_ASSERT_STRING_EQUAL(o.family, h.family);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.params, "keys=64"));
    /* "" and NULL clear it */
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, ""), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &c), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c.source, "heuristic");
    CU_ASSERT_STRING_EQUAL(c.params, h.params);
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, "rows=2"), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &c), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c.params, h.params);
    /* a refused text leaves the override in force */
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, want), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, "rows=0"), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &o), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(o.params, want);
    attn_context_release(ctx);
}

/* The private-memory estimates (desc_tiled.c, desc_vector.c) against
 * hand-computed sums of the kernels' per-work-item arrays, and the GPU
 * heuristic's budget: a device allowing only 16 work-items leaves the tiled
 * default one work-item per row (all 128 columns of O in its registers),
 * which the heuristic halves to 8 rows; a CPU keeps what it is given. */
static void test_private_memory(void)
{
    attn_problem p = problem(128, 8, 2, 256);
    attn_params t = attn_params_defaults(ATTN_FAMILY_TILED); /* rows 16, wg 128 */
    /* 8 work-items a row: 16 columns each of acc, tot, cmp */
    CU_ASSERT_EQUAL(attn_params_private_bytes(ATTN_ENTRY_PREFILL, &t, &p), 3u * 16 * 4);
    t.wg_size = 16;
    size_t last = 0;
    for (int rows = 1; rows <= 16; rows *= 2) { /* grows with rows at a fixed work-group */
        t.block_rows = rows;
        const size_t b = attn_params_private_bytes(ATTN_ENTRY_DECODE, &t, &p);
        CU_ASSERT_EQUAL(b, 3u * (size_t)(128 / (16 / rows)) * 4);
        CU_ASSERT(b > last);
        last = b;
    }
    /* vector decode, rows 4, keys 32, vec 16, D 128 (DIM_PAD 128, PV_ROWS
     * 2), in floats: acc/tot/cmp 1536, lsum/ltot/lcmp 192, s 128, p 128, qv
     * 512, row 128, kvec 128, pv a 256, f32 sums + a 128 (f16: w + a0/a1
     * 640), m/hi/qi/qh 16 */
    attn_params v = attn_params_defaults(ATTN_FAMILY_VECTOR);
    v.block_rows = 4;
    CU_ASSERT_EQUAL(attn_params_private_bytes(ATTN_ENTRY_DECODE, &v, &p), 3152u * 4);
    p.dtype = ATTN_F16;
    CU_ASSERT_EQUAL(attn_params_private_bytes(ATTN_ENTRY_DECODE, &v, &p), 3664u * 4);
    p.dtype = ATTN_F32;
    v.block_rows = 8;
    CU_ASSERT(attn_params_private_bytes(ATTN_ENTRY_DECODE, &v, &p) > 3152u * 4);

    attn_device_limits gpu = {CL_DEVICE_TYPE_GPU, 65536, 16, 8, 0, 0};
    const attn_params h = attn_params_heuristic(&gpu, &p);
    char text[160];
    attn_params_format(&h, text, sizeof text);
    /* the key tile and local K/V do not shrink O: only the rows went */
    CU_ASSERT_STRING_EQUAL(text, "family=tiled,rows=8,keys=32,wg=16,local_kv=1");
    CU_ASSERT(attn_params_private_bytes(ATTN_ENTRY_PREFILL, &h, &p) <= ATTN_PRIVATE_BUDGET_GPU);
    attn_device_limits cpu = gpu;
    cpu.type = CL_DEVICE_TYPE_CPU;
    t.block_rows = 16;
    attn_params_fit(ATTN_ENTRY_PREFILL, &t, &cpu, &p);
    CU_ASSERT_EQUAL(t.block_rows, 16);
    CU_ASSERT(attn_params_private_bytes(ATTN_ENTRY_PREFILL, &t, &p) > ATTN_PRIVATE_BUDGET_GPU);
}

/* The CPU heuristic by native float width (desc_vector.c): AVX-512's 16 and
 * an unknown width (0) keep the static defaults, narrower vectors (AVX2's 8,
 * NEON's 4) take the narrow ones; decode and GPUs are not affected; and this
 * device's plan is the heuristic for its own width. */
static void test_cpu_width_defaults(void)
{
    const char *wide = "family=vector,rows=8,keys=32,vec=16";
    const char *narrow = "family=vector,rows=5,keys=16,vec=8";
    const struct { unsigned width; const char *want; } cases[] = {
        {0, wide}, {16, wide}, {32, wide}, {8, narrow}, {4, narrow}, {1, narrow}};
    attn_problem p = problem(64, 8, 2, 1024), pd = p;
    pd.q_len = 1;
    char text[160], gpu0[160];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        attn_device_limits cpu = {CL_DEVICE_TYPE_CPU, 524288, 4096, 2, 0, cases[i].width};
        attn_params h = attn_params_heuristic(&cpu, &p);
        attn_params_format(&h, text, sizeof text);
        CU_ASSERT_STRING_EQUAL(text, cases[i].want);
        const attn_params d = attn_decode_params_heuristic(&cpu, &pd);
        CU_ASSERT_EQUAL(d.family, ATTN_FAMILY_VECTOR);
        CU_ASSERT_EQUAL(d.vec_width, 16);
        CU_ASSERT_EQUAL(d.block_keys, 32);
        attn_device_limits gpu = cpu;
        gpu.type = CL_DEVICE_TYPE_GPU;
        gpu.max_wg = 1024;
        h = attn_params_heuristic(&gpu, &p);
        attn_params_format(&h, text, sizeof text);
        if (i == 0) snprintf(gpu0, sizeof gpu0, "%s", text);
        CU_ASSERT_STRING_EQUAL(text, gpu0);
    }
    /* a GPU's plan may be the gated mma family's, which the limits alone
     * do not say: the device's own plan is checked on CPUs */
    attn_context *ctx = own_context();
    attn_plan_info info;
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "heuristic");
    if (ctx->device_type & CL_DEVICE_TYPE_CPU) {
        const attn_device_limits dev = attn_context_limits(ctx);
        CU_ASSERT(dev.float_width > 0);
        CU_ASSERT_EQUAL(dev.float_width, ctx->float_width);
        const attn_params h = attn_params_heuristic(&dev, &p);
        attn_params_format(&h, text, sizeof text);
        CU_ASSERT_STRING_EQUAL(info.params, text);
        CU_ASSERT_STRING_EQUAL(info.params, dev.float_width < 16 ? narrow : wide);
    }
    attn_context_release(ctx);
}

/* An override naming another family than the plan's starts from that
 * family's own heuristic (plan.c): every family's start is legal wherever
 * it can run the problem, on CPUs of either width and on GPUs, for prefill
 * and decode; and on this device "family=X" alone plans X, the vector
 * family's 5 AVX2 rows never carried into tiled's 128 work-items (which
 * they do not divide) or flash's micro-tiles. */
static void test_override_other_family(void)
{
    const int dims[] = {40, 64, 128, 256};
    const cl_device_type types[] = {CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_GPU};
    const unsigned widths[] = {1, 8, 16}; /* 1: NVIDIA's */
    char err[256];
    for (int t = 0; t < 2; t++)
        for (int w = 0; w < 3; w++)
            for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++)
                for (int entry = 0; entry < ATTN_ENTRY_COUNT; entry++)
                    for (int fam = 0; fam < ATTN_FAMILY_COUNT; fam++) {
                        attn_device_limits dev = {types[t], 49152, 1024, 8, 0, widths[w]};
                        attn_problem p = problem(dims[d], 32, 8, 512);
                        if (entry == ATTN_ENTRY_DECODE) p.q_len = 1;
                        const attn_params pr = attn_plan_family_start(entry, &dev, &p, fam);
                        CU_ASSERT_EQUAL(pr.family, fam);
                        /* the narrow-register vector start only on CPUs */
                        if (fam == ATTN_FAMILY_VECTOR && entry == ATTN_ENTRY_PREFILL)
                            CU_ASSERT_EQUAL(pr.block_rows,
                                            types[t] == CL_DEVICE_TYPE_CPU && widths[w] < 16 ? 5 : 8);
                        if (!attn_family_kernel(fam, entry) || attn_family_refuses(fam, &p))
                            continue;
                        const int legal = attn_params_legal(&pr, &dev, &p, err, sizeof err);
                        if (!legal)
                            printf("\n  type %d width %u D %d entry %d family %d: %s", t,
                                   widths[w], dims[d], entry, fam, err);
                        CU_ASSERT(legal);
                    }
    attn_context *ctx = own_context();
    attn_problem p = problem(64, 8, 2, 256);
    const char *names[] = {"tiled", "vector", "flash"};
    for (int i = 0; i < 3; i++) {
        char text[32];
        snprintf(text, sizeof text, "family=%s", names[i]);
        CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, text), ATTN_SUCCESS);
        attn_plan_info info;
        const attn_status st = attn_prepare(ctx, &p, &info);
        if (st != ATTN_SUCCESS) printf("\n  %s: %s", text, attn_last_error(ctx));
        CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
        if (st == ATTN_SUCCESS) {
            CU_ASSERT_STRING_EQUAL(info.family, names[i]);
            CU_ASSERT_STRING_EQUAL(info.source, "override");
        }
    }
    attn_context_release(ctx);
}

static void test_override_results(void)
{
    attn_context *ctx = own_context();
    const char *fams[] = {"family=tiled,rows=8,keys=16,wg=64,local_kv=1",
                          "family=tiled,rows=4,keys=32,wg=32,local_kv=0",
                          "family=vector,rows=6,keys=32,vec=8",
                          "family=vector,rows=1,keys=16,vec=4"};
    attn_problem p = problem(24, 4, 2, 37); /* lengths that are no tile's multiple */
    for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++) {
        CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, fams[i]), ATTN_SUCCESS);
        attn_plan_info info;
        CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &info), ATTN_SUCCESS);
        CU_ASSERT_STRING_EQUAL(info.params, fams[i]);
        const int r = harness_forward_check(ctx, &p, 100 + i);
        CU_ASSERT_EQUAL(r, 0);
        if (r) printf("\n  %s: wrong (%d)", fams[i], r);
    }
    attn_context_release(ctx);
}

/* ---- attn_context_set_tuning_db ---- */

/* An entry for this device and the current sources of its entry point. */
static attn_tuning_entry db_entry(attn_context *ctx, const attn_problem *p, int decode,
                                  int family, const char *params)
{
    attn_tuning_entry e;
    memset(&e, 0, sizeof e);
    attn_device_identity_of(ctx, &e.device);
    CU_ASSERT_EQUAL(attn_entry_source_hash(ctx, decode ? ATTN_ENTRY_DECODE : ATTN_ENTRY_PREFILL,
                                           family, e.kernel_hash),
                    ATTN_SUCCESS);
    attn_shape_class_of(p, &e.cls);
    e.cls.decode = decode;
    snprintf(e.params, sizeof e.params, "%s", params);
    e.level = ATTN_TUNE_LEVEL_QUICK;
    return e;
}

static void test_set_tuning_db(void)
{
    char dir[256], path[512], err[1024];
    harness_temp_dir(dir, sizeof dir, "config");
    snprintf(path, sizeof path, "%s/tuning.json", dir);
    attn_context *ctx = own_context();
    attn_problem p = problem(16, 4, 2, 64);
    attn_problem d = problem(16, 4, 2, 256); /* the decode class: kv = the cache's capacity */
    d.q_len = 1;
    const char *fwd = "family=tiled,rows=2,keys=16,wg=32,local_kv=0";
    const char *dec = "family=vector,rows=2,keys=16,vec=4";
    attn_tuning_entry es[2] = {db_entry(ctx, &p, 0, ATTN_FAMILY_TILED, fwd),
                               db_entry(ctx, &d, 1, ATTN_FAMILY_VECTOR, dec)};
    attn_tuning_db db = {.entries = es, .count = 2, .capacity = 2};
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(path, &db, err, sizeof err), ATTN_SUCCESS);
    char *text = harness_read_file(path, NULL);
    CU_ASSERT_TRUE(text && strstr(text, "\"decode\":"));
    free(text);

    attn_plan_info info;
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "heuristic");
    CU_ASSERT_EQUAL_FATAL(attn_context_set_tuning_db(ctx, path, ""), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "tuned");
    CU_ASSERT_STRING_EQUAL(info.params, fwd);
    CU_ASSERT_EQUAL(harness_forward_check(ctx, &p, 7), 0);

    attn_kv_cache *cache = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, 1, 2, 16, 256, ATTN_F32, &cache), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_decode_prepare(ctx, cache, &d, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "tuned");
    CU_ASSERT(strncmp(info.params, dec, strlen(dec)) == 0 && info.params[strlen(dec)] == ',');
    printf("\n  decode plan: %s (%s)", info.params, info.source);

    /* an override naming some fields: the others stay the tuned plan's */
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, "keys=32"), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "override");
    CU_ASSERT_STRING_EQUAL(info.params, "family=tiled,rows=2,keys=32,wg=32,local_kv=0");
    /* a family the decode refuses (flash): the class's tuned plan, with
     * the override's splits (info.params says the splits of the cache's
     * present fill: the plan's own are asked of attn_plan_decode) */
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, "family=flash,splits=4"), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_decode_prepare(ctx, cache, &d, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "tuned");
    CU_ASSERT(strncmp(info.params, dec, strlen(dec)) == 0);
    attn_params planned;
    const char *source = NULL;
    CU_ASSERT_EQUAL(attn_plan_decode(ctx, &d, 0, ATTN_KV_AS_DTYPE, &planned, &source),
                    ATTN_SUCCESS);
    CU_ASSERT_EQUAL(planned.kv_splits, 4);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, NULL), ATTN_SUCCESS);

    /* cached: a changed file is not read again until the next set */
    attn_tuning_db none = {.entries = NULL, .count = 0, .capacity = 0};
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(path, &none, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "tuned");
    CU_ASSERT_EQUAL_FATAL(attn_context_set_tuning_db(ctx, path, ""), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "heuristic");
    CU_ASSERT_EQUAL(attn_decode_prepare(ctx, cache, &d, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "heuristic");
    attn_kv_cache_release(cache);
    attn_context_release(ctx);
    harness_remove_tree(dir);
}

/* A tuned entry that names only some of another family's fields plans as
 * the same text does as an override: over that family's own start (plan.c's
 * attn_plan_parse_over), not over the heuristic plan's rows (a CPU's 5
 * vector rows do not divide tiled's 128 work-items). */
static void test_tuned_entry_other_family(void)
{
    char dir[256], path[512], err[1024];
    harness_temp_dir(dir, sizeof dir, "config");
    snprintf(path, sizeof path, "%s/tuning.json", dir);
    attn_context *ctx = own_context();
    const attn_problem p = problem(64, 8, 2, 256);
    const char *texts[] = {"family=tiled,keys=32,wg=128,local_kv=1", "family=flash,keys=32"};
    for (int i = 0; i < 2; i++) {
        attn_tuning_entry e = db_entry(ctx, &p, 0, i ? ATTN_FAMILY_FLASH : ATTN_FAMILY_TILED,
                                       texts[i]);
        attn_tuning_db db = {.entries = &e, .count = 1, .capacity = 1};
        CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(path, &db, err, sizeof err), ATTN_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, NULL), ATTN_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(attn_context_set_tuning_db(ctx, path, ""), ATTN_SUCCESS);
        attn_plan_info tuned, forced;
        CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &tuned), ATTN_SUCCESS);
        printf("\n  entry %s: %s (%s)", texts[i], tuned.params, tuned.source);
        CU_ASSERT_STRING_EQUAL(tuned.source, "tuned");
        CU_ASSERT_STRING_EQUAL(tuned.family, i ? "flash" : "tiled");
        CU_ASSERT_EQUAL(harness_forward_check(ctx, &p, 31 + i), 0);
        CU_ASSERT_EQUAL_FATAL(attn_context_set_tuning_db(ctx, "", ""), ATTN_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, texts[i]), ATTN_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &forced), ATTN_SUCCESS);
        CU_ASSERT_STRING_EQUAL(forced.source, "override");
        CU_ASSERT_STRING_EQUAL(tuned.params, forced.params);
    }
    attn_context_release(ctx);
    harness_remove_tree(dir);
}

/* ---- the log callback ---- */

typedef struct {
    int info, warn, debug;
    char last[512];
} log_seen;

static void on_log(attn_log_level level, const char *message, void *user)
{
    log_seen *s = user;
    if (level == ATTN_LOG_INFO && strstr(message, "applied")) {
        s->info++;
        snprintf(s->last, sizeof s->last, "%s", message);
    }
    if (level == ATTN_LOG_WARN) s->warn++;
    if (level == ATTN_LOG_DEBUG) s->debug++;
}

static void test_log_callback(void)
{
    attn_context *ctx = own_context();
    attn_problem p = problem(16, 2, 2, 33);
    log_seen seen = {0};
    attn_set_log_callback(on_log, &seen, ATTN_LOG_INFO);
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, "keys=16"), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(seen.info, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(seen.last, "attn_context_set_params applied"));
    CU_ASSERT_PTR_NOT_NULL(strstr(seen.last, "keys=16"));
    CU_ASSERT_EQUAL(seen.debug, 0); /* above the level asked for */
    /* the plan is cached: the override is announced once per class */
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(seen.info, 1);
    /* warnings only: nothing */
    attn_set_log_callback(on_log, &seen, ATTN_LOG_WARN);
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, "keys=32"), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(seen.info, 1);
    CU_ASSERT_EQUAL(seen.warn, 0);
    /* another family's tunable (one text may serve several families):
     * left out of the plan, and said once a context and override, not once
     * a plan (a cached plan is made again after every eviction) */
    attn_plan_info plan, with_other_family;
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &plan), ATTN_SUCCESS);
    const int vec = strcmp(plan.family, "vector") == 0;
    char other[96];
    for (int named = 0; named < 2; named++) {
        snprintf(other, sizeof other, "%s%s%s", named ? "family=" : "", named ? plan.family : "",
                 vec ? (named ? ",keys=32,wg=64" : "keys=32,wg=64")
                     : (named ? ",keys=32,vec=8" : "keys=32,vec=8"));
        CU_ASSERT_EQUAL(attn_context_set_params(ctx, other), ATTN_SUCCESS);
        attn_plan_info with_other;
        attn_problem q = p;
        for (int len = 33; len < 33 * 8; len *= 2) { /* several classes: several plans */
            q.q_len = q.kv_len = len;
            CU_ASSERT_EQUAL(attn_prepare(ctx, &q, &with_other), ATTN_SUCCESS);
        }
        CU_ASSERT_EQUAL(attn_prepare(ctx, &p, &with_other), ATTN_SUCCESS);
        CU_ASSERT_STRING_EQUAL(with_other.params, plan.params);
        CU_ASSERT_EQUAL(seen.warn, 1 + named);
    }
    /* the same text set again (attn-bench does, before every run): no new
     * warning; nor for a family the problem refuses (mma at D 24), whose
     * fallback plan has the name */
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, other), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(seen.warn, 2);
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, "family=mma,rows=8"), ATTN_SUCCESS);
    attn_problem d24 = problem(24, 2, 2, 33);
    CU_ASSERT_EQUAL(attn_prepare(ctx, &d24, &with_other_family), ATTN_SUCCESS);
    CU_ASSERT_STRING_NOT_EQUAL(with_other_family.family, "mma");
    CU_ASSERT_EQUAL(seen.warn, 2);
    /* debug: the failure's own line too */
    attn_set_log_callback(on_log, &seen, ATTN_LOG_DEBUG);
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, "rows=99"), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(seen.debug >= 1);
    /* NULL: stderr again, the callback never called */
    attn_set_log_callback(NULL, NULL, ATTN_LOG_DEBUG);
    const int before = seen.info + seen.debug;
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, "keys=64"), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(seen.info + seen.debug, before);
    /* at ATTN_LOG's level, not the callback's debug */
    const char *level = getenv("ATTN_LOG");
    if (!level || strcmp(level, "debug") != 0) CU_ASSERT(!attn_log_enabled(ATTN_LOG_DEBUG));
    attn_context_release(ctx);
}

/* ---- the program-cache and kernel-source folders ---- */

static void test_set_dirs_errors(void)
{
    CU_ASSERT_EQUAL(attn_context_set_cache_dir(NULL, "/tmp"), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_STRING_EQUAL(attn_last_error(NULL), "attn_context_set_cache_dir: ctx is NULL");
    CU_ASSERT_EQUAL(attn_context_set_kernel_dir(NULL, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_STRING_EQUAL(attn_last_error(NULL), "attn_context_set_kernel_dir: ctx is NULL");
    /* the text is copied: the caller's buffer may change afterwards */
    attn_context *ctx = own_context();
    char dir[64] = "/tmp/attn-a";
    CU_ASSERT_EQUAL(attn_context_set_cache_dir(ctx, dir), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_context_set_kernel_dir(ctx, dir), ATTN_SUCCESS);
    dir[10] = 'b';
    CU_ASSERT_STRING_EQUAL(ctx->cache_dir, "/tmp/attn-a");
    CU_ASSERT_STRING_EQUAL(ctx->kernel_dir, "/tmp/attn-a");
    CU_ASSERT_PTR_NOT_EQUAL(ctx->cache_dir, ctx->kernel_dir);
    /* "" and NULL are none */
    CU_ASSERT_EQUAL(attn_context_set_cache_dir(ctx, ""), ATTN_SUCCESS);
    CU_ASSERT_PTR_NULL(ctx->cache_dir);
    CU_ASSERT_EQUAL(attn_context_set_kernel_dir(ctx, NULL), ATTN_SUCCESS);
    CU_ASSERT_PTR_NULL(ctx->kernel_dir);
    CU_ASSERT_STRING_EQUAL(attn_last_error(ctx), "");
    attn_context_release(ctx);
}

static void test_set_cache_dir(void)
{
    char dir[256];
    harness_temp_dir(dir, sizeof dir, "config-cache");
    attn_problem p = problem(16, 2, 1, 24), p2 = problem(8, 2, 1, 24);
    attn_context *a = own_context();
    CU_ASSERT_EQUAL_FATAL(attn_context_set_cache_dir(a, dir), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(harness_forward_check(a, &p, 11), 0);
    CU_ASSERT_EQUAL(a->programs_built + a->programs_from_disk, 1);
    CU_ASSERT_EQUAL(harness_count_files(dir, ".bin"), 1); /* stored there */
    /* another context on the same folder loads it instead of building */
    attn_context *b = own_context();
    CU_ASSERT_EQUAL_FATAL(attn_context_set_cache_dir(b, dir), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(harness_forward_check(b, &p, 12), 0);
    CU_ASSERT_EQUAL(b->programs_built, 0);
    CU_ASSERT_EQUAL(b->programs_from_disk, 1);
    /* no folder: built and stored nowhere; the program in memory stays */
    CU_ASSERT_EQUAL_FATAL(attn_context_set_cache_dir(b, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(harness_forward_check(b, &p2, 13), 0);
    CU_ASSERT_EQUAL(b->programs_built, 1);
    CU_ASSERT_EQUAL(harness_count_files(dir, ".bin"), 1);
    const unsigned from_memory = b->programs_from_memory;
    CU_ASSERT_EQUAL(attn_prepare(b, &p, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(b->programs_from_memory, from_memory + 1);
    attn_context_release(b);
    attn_context_release(a);
    harness_remove_tree(dir);
}

/* Writes the forward's sources of both families into dir, each core's
 * final normalisation 1% off when wrong is set. */
static void test_set_kernel_dir(void)
{
    char right[256], wrong[256], empty[256], nul[256];
    harness_temp_dir(right, sizeof right, "config-right");
    harness_temp_dir(wrong, sizeof wrong, "config-wrong");
    harness_temp_dir(empty, sizeof empty, "config-empty");
    harness_temp_dir(nul, sizeof nul, "config-nul");
    attn_context *ctx = own_context();
    CU_ASSERT_EQUAL_FATAL(attn_context_set_kernel_dir(ctx, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_cache_dir(ctx, NULL), ATTN_SUCCESS);
    harness_write_sources(ctx, right, 0);
    harness_write_sources(ctx, wrong, 1);
    attn_problem p = problem(16, 2, 1, 40);
    CU_ASSERT_EQUAL(harness_forward_check(ctx, &p, 21), 0); /* the built-in sources */
    /* the folder's sources are used: wrong results, not the program in memory */
    CU_ASSERT_EQUAL(attn_context_set_kernel_dir(ctx, wrong), ATTN_SUCCESS);
    printf("\n  (the doctored sources: the comparison below is expected to fail)");
    CU_ASSERT_EQUAL(harness_forward_check(ctx, &p, 22), -1);
    /* back to the built-in ones, then a right copy: right again */
    CU_ASSERT_EQUAL(attn_context_set_kernel_dir(ctx, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(harness_forward_check(ctx, &p, 23), 0);
    CU_ASSERT_EQUAL(attn_context_set_kernel_dir(ctx, right), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(harness_forward_check(ctx, &p, 24), 0);
    /* a folder without the sources: the call names the path */
    CU_ASSERT_EQUAL(attn_context_set_kernel_dir(ctx, empty), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, NULL), ATTN_ERROR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), empty));
    /* a source with a NUL: refused, not compiled up to it (it built) */
    CU_ASSERT_EQUAL(attn_context_set_kernel_dir(ctx, NULL), ATTN_SUCCESS);
    harness_write_sources(ctx, nul, 2);
    CU_ASSERT_EQUAL(attn_context_set_kernel_dir(ctx, nul), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, NULL), ATTN_ERROR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "holds a NUL byte at offset"));
    attn_context_release(ctx);
    harness_remove_tree(nul);
    harness_remove_tree(right);
    harness_remove_tree(wrong);
    harness_remove_tree(empty);
}

/* ---- the environment: read when a context is created (child checks) ---- */

#define ENV_PARAMS "family=vector,rows=2,keys=16,vec=4"
#define ENV_BAD_PARAMS "family=vector,keys=8,vec=16"

/* ATTN_PARAMS=ENV_PARAMS, ATTN_CHECK=1: the override and check mode */
static void child_params_and_check(void)
{
    attn_context *ctx = own_context();
    attn_problem p = problem(16, 2, 1, 50);
    attn_plan_info info;
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "override");
    CU_ASSERT_STRING_EQUAL(info.params, ENV_PARAMS);
    CU_ASSERT_EQUAL(ctx->check, 1);
    CU_ASSERT_EQUAL(harness_forward_check(ctx, &p, 3), 0); /* checked against the reference too */
    attn_context_release(ctx);
}

/* ATTN_PARAMS=ENV_BAD_PARAMS: named as ATTN_PARAMS when a call plans */
static void child_bad_params(void)
{
    attn_context *bad = own_context();
    attn_problem p = problem(16, 2, 1, 50);
    attn_plan_info info;
    CU_ASSERT_EQUAL(bad->check, 0);
    CU_ASSERT_EQUAL(attn_prepare(bad, &p, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(bad), "ATTN_PARAMS=\"family=vector,keys=8"));
    /* the API replaces the environment's value */
    CU_ASSERT_EQUAL(attn_context_set_params(bad, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(bad, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_NOT_EQUAL(info.source, "override");
    attn_context_release(bad);
}

/* The tuning databases' entries test_environment_at_creation writes: the
 * user's for env_user_problem, the system's for env_system_problem. */
#define ENV_USER_TUNED "family=tiled,rows=2,keys=16,wg=32,local_kv=0"
#define ENV_SYSTEM_TUNED "family=vector,rows=2,keys=16,vec=4"
static attn_problem env_user_problem(void) { return problem(16, 4, 2, 64); }
static attn_problem env_system_problem(void) { return problem(32, 4, 2, 64); }

/* Whether ctx plans p from a tuned entry with these params. */
static int plans_tuned(attn_context *ctx, const attn_problem *p, const char *params)
{
    attn_plan_info info;
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, p, &info), ATTN_SUCCESS);
    return strcmp(info.source, "tuned") == 0 && strcmp(info.params, params) == 0;
}

/* ATTN_TUNING_DB and ATTN_SYSTEM_TUNING_DB each a database: both read at
 * creation, left by "" and found again by NULL (their default) */
static void child_tuning_dbs(void)
{
    attn_context *ctx = own_context();
    const attn_problem u = env_user_problem(), s = env_system_problem();
    CU_ASSERT(plans_tuned(ctx, &u, ENV_USER_TUNED));
    CU_ASSERT(plans_tuned(ctx, &s, ENV_SYSTEM_TUNED));
    CU_ASSERT_EQUAL(attn_context_set_tuning_db(ctx, "", ""), ATTN_SUCCESS);
    CU_ASSERT(!plans_tuned(ctx, &u, ENV_USER_TUNED));
    CU_ASSERT(!plans_tuned(ctx, &s, ENV_SYSTEM_TUNED));
    CU_ASSERT_EQUAL(attn_context_set_tuning_db(ctx, NULL, NULL), ATTN_SUCCESS);
    CU_ASSERT(plans_tuned(ctx, &u, ENV_USER_TUNED));
    CU_ASSERT(plans_tuned(ctx, &s, ENV_SYSTEM_TUNED));
    attn_context_release(ctx);
}

static void test_environment_at_creation(void)
{
    const char *const good[] = {"ATTN_PARAMS=" ENV_PARAMS, "ATTN_CHECK=1", NULL};
    CU_ASSERT_EQUAL(harness_run_child("child_params_and_check", good, NULL), 0);
    const char *const bad[] = {"ATTN_PARAMS=" ENV_BAD_PARAMS, "ATTN_CHECK", NULL};
    CU_ASSERT_EQUAL(harness_run_child("child_bad_params", bad, NULL), 0);

    char dir[256], user[600], sys[600], err[1024];
    harness_temp_dir(dir, sizeof dir, "config-env");
    snprintf(user, sizeof user, "ATTN_TUNING_DB=%s/user.json", dir);
    snprintf(sys, sizeof sys, "ATTN_SYSTEM_TUNING_DB=%s/system.json", dir);
    attn_context *ctx = own_context();
    const attn_problem u = env_user_problem(), s = env_system_problem();
    attn_tuning_entry eu = db_entry(ctx, &u, 0, ATTN_FAMILY_TILED, ENV_USER_TUNED);
    attn_tuning_entry es = db_entry(ctx, &s, 0, ATTN_FAMILY_VECTOR, ENV_SYSTEM_TUNED);
    attn_tuning_db du = {.entries = &eu, .count = 1, .capacity = 1};
    attn_tuning_db ds = {.entries = &es, .count = 1, .capacity = 1};
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(strchr(user, '=') + 1, &du, err, sizeof err),
                          ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(strchr(sys, '=') + 1, &ds, err, sizeof err),
                          ATTN_SUCCESS);
    attn_context_release(ctx);
    const char *const dbs[] = {user, sys, NULL};
    CU_ASSERT_EQUAL(harness_run_child("child_tuning_dbs", dbs, NULL), 0);
    harness_remove_tree(dir);
}

/* One string a number parser reads: whether it takes it, and as what. */
typedef struct syntax_case {
    const char *text;
    int ok;
    double value;
} syntax_case;

static int parse_whole(const char *text, double *out)
{
    long v;
    if (attn_parse_long(text, -7, 4096, &v)) return -1;
    *out = (double)v;
    return 0;
}

static int parse_decimal(const char *text, double *out)
{
    return attn_parse_double(text, -3.0, 100.0, out);
}

static void check_syntax(const char *name, int (*parse)(const char *, double *),
                         const syntax_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double v = 12345.0;
        const int ok = parse(c[i].text, &v) == 0;
        CU_ASSERT_EQUAL(ok, c[i].ok);
        CU_ASSERT_EQUAL(v, ok ? c[i].value : 12345.0); /* a refusal leaves it alone */
        if (ok != c[i].ok) printf("\n  %s(\"%s\"): %d\n", name, c[i].text, ok);
    }
}

/* Whole and decimal numbers as the override text, the tools' options and
 * the environment read them: written plainly, the whole string, in range. */
static void test_number_syntax(void)
{
    static const syntax_case whole[] = {
        {"0", 1, 0},     {"-7", 1, -7},  {"4096", 1, 4096}, {"007", 1, 7},   {"", 0, 0},
        {"-", 0, 0},     {" 1", 0, 0},   {"1 ", 0, 0},      {"+1", 0, 0},    {"0x10", 0, 0},
        {"1.0", 0, 0},   {"1e3", 0, 0},  {"--1", 0, 0},     {"4097", 0, 0},  {"-8", 0, 0},
        {"99999999999999999999", 0, 0}};
    check_syntax("attn_parse_long", parse_whole, whole, sizeof whole / sizeof *whole);
    int n = 5;
    CU_ASSERT_EQUAL(attn_parse_int("4294967297", 0, 10, &n), -1); /* no wrap to 1 */
    CU_ASSERT_EQUAL(n, 5);
    CU_ASSERT_EQUAL(attn_parse_long(NULL, 0, 10, NULL), -1);

    static const syntax_case decimal[] = {
        {"0.5", 1, 0.5},  {".5", 1, 0.5},  {"-.5", 1, -0.5}, {"5.", 1, 5.0},  {"1e2", 1, 100.0},
        {"-3", 1, -3.0},  {"100", 1, 100}, {" 1", 0, 0},     {"+1", 0, 0},    {"1 ", 0, 0},
        {".", 0, 0},      {"-", 0, 0},     {"", 0, 0},       {"1e", 0, 0},    {"0x10", 0, 0},
        {"inf", 0, 0},    {"nan", 0, 0},   {"-nan", 0, 0},   {"1e999", 0, 0}, {"1e-999", 0, 0},
        {"100.5", 0, 0},  {"-3.5", 0, 0},  {"1,5", 0, 0}};
    check_syntax("attn_parse_double", parse_decimal, decimal, sizeof decimal / sizeof *decimal);
    CU_ASSERT_EQUAL(attn_parse_double(NULL, 0, 1, NULL), -1);

    /* floats: the range checked on the float, underflow and overflow refused */
    float f = 5.0f;
    CU_ASSERT_EQUAL(attn_parse_float("0.001", 1e-3f, 1.0f, &f), 0); /* the double is below 1e-3f */
    CU_ASSERT_EQUAL(f, 1e-3f);
    CU_ASSERT_EQUAL(attn_parse_float("3.4028235e38", 0.0f, FLT_MAX, &f), 0);
    CU_ASSERT_EQUAL(f, FLT_MAX);
    f = 5.0f;
    CU_ASSERT_EQUAL(attn_parse_float("1e-50", -1.0f, 1.0f, &f), -1);
    CU_ASSERT_EQUAL(attn_parse_float("1e39", 0.0f, FLT_MAX, &f), -1);
    CU_ASSERT_EQUAL(attn_parse_float(" 1", 0.0f, 2.0f, &f), -1);
    CU_ASSERT_EQUAL(f, 5.0f);
    CU_ASSERT_EQUAL(attn_parse_float("0", 0.0f, 1.0f, &f), 0);
    CU_ASSERT_EQUAL(f, 0.0f);
}

static void register_tests(void)
{
    static const harness_test tests[] = {
        HARNESS_TEST(test_set_params_errors), HARNESS_TEST(test_override_plan),
        HARNESS_TEST(test_private_memory),   HARNESS_TEST(test_cpu_width_defaults),
        HARNESS_TEST(test_override_other_family),
        HARNESS_TEST(test_override_results),  HARNESS_TEST(test_set_tuning_db),
        HARNESS_TEST(test_tuned_entry_other_family),
        HARNESS_TEST(test_set_dirs_errors),   HARNESS_TEST(test_set_cache_dir),
        HARNESS_TEST(test_set_kernel_dir),    HARNESS_TEST(test_log_callback),
        HARNESS_TEST(test_environment_at_creation), HARNESS_TEST(test_number_syntax),
        HARNESS_END};
    static const harness_test children[] = {
        HARNESS_TEST(child_params_and_check), HARNESS_TEST(child_bad_params),
        HARNESS_TEST(child_tuning_dbs), HARNESS_END};
    harness_add_suite("config", tests);
    harness_add_children(children);
}

int main(void) { return harness_run("test_config", register_tests); }
