/* test_long_context.c -- fp32 accumulation over very long key ranges. A few
 * queries against S = 262144 keys (where the issue saw the running sums
 * drift to 8.6e-4 relative error with constant V), for the vector and
 * tiled families and their decode kernels (the flash family's rows over
 * 4096 keys in test_max_grows), must stay within the fp32 tolerance of
 * the reference (double accumulation). Q is zero unless ATTN_LONG_Q_STD
 * says otherwise (test_max_grows' own rows excepted): every weight is
 * then equal, the worst case for running sums (before the compensated
 * folds: 2.6e-3, 22x the tolerance), and with
 * constant V the exact result is V itself. The mma family's f32 path
 * (3xTF32; O folded into a second accumulator past ATTN_MMA_F32_PLAIN_KEYS)
 * runs rows up to ATTN_MMA_F32_MAX_KEYS keys: it must be within the
 * tolerance too, and past that refused.
 *
 * ATTN_LONG_CONTEXT_TABLE=1 instead prints the error as a function of S
 * (4096 ... 1048576, constant and random V, each family and decode): the
 * table in README.md comes from it. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "kernels/params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SQ = 4, D = 64 };
#define LONG_S 262144
#define V_CONST 0.7f

static float *xalloc(size_t n)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    return x;
}

typedef struct result {
    double max_abs, max_rel, ratio; /* ratio: worst error / (atol + rtol |ref|), O and LSE */
} result;

static void measure(const float *got, const float *ref, size_t n, result *r)
{
    for (size_t i = 0; i < n; i++) {
        const double e = fabs((double)got[i] - ref[i]);
        const double rel = ref[i] != 0 ? e / fabs(ref[i]) : e;
        const double ratio = isnan(e) ? INFINITY : e / (1e-5 + 1e-4 * fabs(ref[i]));
        if (isnan(e) || e > r->max_abs) r->max_abs = isnan(e) ? INFINITY : e;
        if (rel > r->max_rel) r->max_rel = rel;
        if (ratio > r->ratio) r->ratio = ratio;
    }
}

static float q_std(void)
{
    const char *e = getenv("ATTN_LONG_Q_STD");
    return e ? (float)atof(e) : 0.0f;
}

/* test_max_grows: Q of deviation 1 and K rows growing with their position,
 * instead of Q zero. */
static int g_grow;

/* Q, K (normal) and V (constant or uniform) for SQ queries and S keys. */
static void inputs(int S, int const_v, uint64_t seed, float *q, float *k, float *v)
{
    harness_fill_normal(q, (size_t)SQ * D, seed, 0.0f, g_grow ? 1.0f : q_std());
    harness_fill_normal(k, (size_t)S * D, seed + 1, 0.0f, 1.0f);
    if (g_grow) /* K row j times 1 + 3 j / S: a row's max keeps growing over the keys */
        for (size_t i = 0; i < (size_t)S * D; i++) k[i] *= 1.0f + 3.0f * (float)(i / D) / (float)S;
    if (const_v)
        for (size_t i = 0; i < (size_t)S * D; i++) v[i] = V_CONST;
    else
        harness_fill_uniform(v, (size_t)S * D, seed + 2, -1.0f, 1.0f);
}

/* The last decode run's plan (attn_decode_prepare's params, with its splits). */
static char g_decode_plan[sizeof ((attn_plan_info *)0)->params];

/* attn_forward (family given: a family's name, then any tunables, as
 * ATTN_PARAMS takes them after "family=") or, with decode, attn_decode
 * over a cache holding the S keys; compared with the reference. */
static result run(const char *family, int decode, int S, int const_v, int causal)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    const uint64_t seed = harness_seed(9400);
    float *q = xalloc((size_t)SQ * D), *k = xalloc((size_t)S * D), *v = xalloc((size_t)S * D);
    float *ref = xalloc((size_t)SQ * D), *got = xalloc((size_t)SQ * D);
    float ref_lse[SQ], got_lse[SQ];
    inputs(S, const_v, seed, q, k, v);
    attn_problem p = {.batch = 1, .q_heads = 1, .kv_heads = 1, .head_dim = D, .q_len = SQ,
                      .kv_len = S, .dtype = ATTN_F32, .causal = causal, .scale = 0.0f};
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, ref, NULL, ref_lse), ATTN_SUCCESS);

    harness_head h;
    CU_ASSERT_EQUAL_FATAL(harness_head_upload(ctx, q, k, v, SQ, S, D, &h), 0);
    char params[64];
    attn_status st;
    attn_kv_cache *cache = NULL;
    if (decode) {
        /* the prompt's S - SQ keys, then this step's SQ (decode is causal) */
        const int first = S - SQ, step = SQ;
        CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, 1, 1, D, S, ATTN_F32, &cache),
                              ATTN_SUCCESS);
        attn_tensor a = h.k, b = h.v;
        CU_ASSERT_EQUAL_FATAL(attn_kv_cache_append(cache, &a, &b, first, NULL, NULL),
                              ATTN_SUCCESS);
        a.offset += (size_t)first * D;
        b.offset += (size_t)first * D;
        CU_ASSERT_EQUAL_FATAL(attn_kv_cache_append(cache, &a, &b, step, NULL, NULL),
                              ATTN_SUCCESS);
        snprintf(params, sizeof params, "family=%s", family);
        CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, params), ATTN_SUCCESS);
        attn_problem dp = p;
        dp.kv_len = 0;
        attn_plan_info info;
        CU_ASSERT_EQUAL_FATAL(attn_decode_prepare(ctx, cache, &dp, &info), ATTN_SUCCESS);
        snprintf(g_decode_plan, sizeof g_decode_plan, "%s", info.params);
        st = attn_decode(ctx, cache, &dp, &h.q, &h.o, NULL, h.lse, NULL);
    } else {
        snprintf(params, sizeof params, "family=%s", family);
        CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, params), ATTN_SUCCESS);
        st = attn_forward(ctx, &p, &h.q, &h.k, &h.v, &h.o, NULL, h.lse, NULL);
    }
    attn_context_set_params(ctx, NULL);
    if (st != ATTN_SUCCESS) printf("\n  %s: %s\n", params, attn_last_error(ctx));
    CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(harness_download(ctx, ATTN_F32, &h.o, 1, 1, SQ, D, got), 0);
    CU_ASSERT_EQUAL_FATAL(harness_read_floats(ctx, h.lse, got_lse, SQ), 0);
    result r = {0, 0, 0};
    measure(got, ref, (size_t)SQ * D, &r);
    result rl = {0, 0, 0};
    measure(got_lse, ref_lse, SQ, &rl);
    if (rl.ratio > r.ratio) r.ratio = rl.ratio;
    if (cache) attn_kv_cache_release(cache);
    harness_head_release(&h);
    free(q), free(k), free(v), free(ref), free(got);
    return r;
}

static const struct {
    const char *family;
    int decode;
} paths[] = {{"vector", 0}, {"tiled", 0}, {"vector", 1}, {"tiled", 1},
             {"mma", 0},    {"mma", 1},   {"flash", 0}};
#define NPATHS ((int)(sizeof paths / sizeof *paths))

static void check(int path, int const_v, int causal)
{
    result r = run(paths[path].family, paths[path].decode, LONG_S, const_v, causal);
    printf("\n  %s%s S=%d %s V %s: max abs %.3g, max rel %.3g, %.3g of the tolerance",
           paths[path].decode ? "decode " : "", paths[path].family, LONG_S,
           const_v ? "constant" : "random", causal ? "causal" : "full", r.max_abs, r.max_rel,
           r.ratio);
    CU_ASSERT(r.ratio <= 1.0);
}

/* Equal weights never move a row's running max: the rescales of O and of
 * the sums when it grows (at each key tile, and at each fold of the
 * compensated sums) run here, over 4096 keys whose logits grow with the
 * key, random V, on every path. Dropping the sum's rescale at a fold
 * passed test_long_context before. Then each decode kernel in two forced
 * splits over 4100 keys (the second shorter): unequal logits weigh the
 * splits unequally in the combine (an unweighted average of the splits,
 * and a last partial split dropped, passed the suite's equal-logit and
 * evenly divided decodes). */
static void test_max_grows(void)
{
    g_grow = 1;
    for (int path = 0; path < NPATHS; path++) {
        result r = run(paths[path].family, paths[path].decode, 4096, 0, 1);
        printf("\n  %s%s S=4096 growing logits: max rel %.3g, %.3g of the tolerance",
               paths[path].decode ? "decode " : "", paths[path].family, r.max_rel, r.ratio);
        CU_ASSERT(r.ratio <= 1.0);
    }
    static const char *const split2[] = {"vector,splits=2", "tiled,splits=2", "mma,splits=2"};
    for (int i = 0; i < 3; i++) {
        result r = run(split2[i], 1, 4100, 0, 1);
        printf("\n  decode %s S=4100 growing logits (%s): max rel %.3g, %.3g of the tolerance",
               split2[i], g_decode_plan, r.max_rel, r.ratio);
        CU_ASSERT(r.ratio <= 1.0);
        CU_ASSERT_PTR_NOT_NULL(strstr(g_decode_plan, ",splits=2"));
    }
    /* mma's f32 folded builds (rows, or splits, past ATTN_MMA_F32_PLAIN_KEYS):
     * the fold's O rescaled as the max grows (Q zero elsewhere never moves it) */
    enum { FOLDED = 2 * ATTN_MMA_F32_PLAIN_KEYS + 64 };
    for (int decode = 0; decode < 2; decode++) {
        result r = run(decode ? "mma,splits=2" : "mma", decode, FOLDED, 0, 1);
        printf("\n  %smma S=%d growing logits, folded: max rel %.3g, %.3g of the tolerance",
               decode ? "decode " : "", FOLDED, r.max_rel, r.ratio);
        CU_ASSERT(r.ratio <= 1.0);
    }
    g_grow = 0;
}

static void test_vector(void)
{
    check(0, 1, 0);
    check(0, 0, 1);
}
static void test_tiled(void) { check(1, 1, 1); }
static void test_decode_vector(void) { check(2, 1, 1); }
static void test_decode_tiled(void) { check(3, 1, 1); }

/* The family attn_prepare plans for S keys under family=mma. */
static int plans_mma(int S)
{
    attn_context *ctx = harness_context();
    const attn_problem p = {.batch = 1, .q_heads = 1, .kv_heads = 1, .head_dim = D, .q_len = SQ,
                            .kv_len = S, .dtype = ATTN_F32, .causal = 1};
    attn_plan_info info;
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, "family=mma"), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &info), ATTN_SUCCESS);
    attn_context_set_params(ctx, NULL);
    return strcmp(info.family, "mma") == 0;
}

/* mma's f32, equal weights: within the tolerance at its longest plain row
 * (measured: 0.4 of it at 4096 keys; 1.6 at 16384 unfolded) and at 65536
 * keys: prefill folded, decode in automatic splits of at most 4096 keys or
 * folded where forced splits are longer; one key past ATTN_MMA_F32_MAX_KEYS
 * is refused (the device's family runs it). */
static void test_mma_f32(void)
{
    static const int lengths[] = {ATTN_MMA_F32_PLAIN_KEYS, 65536};
    for (int i = 0; i < 2; i++) {
        CU_ASSERT(plans_mma(lengths[i]));
        result r = run("mma", 0, lengths[i], 1, 1);
        printf("\n  mma f32 S=%d constant V causal: max rel %.3g, %.3g of the tolerance",
               lengths[i], r.max_rel, r.ratio);
        CU_ASSERT(r.ratio <= 1.0);
    }
    /* the decode kernel over a 65536-key cache: automatic splits are at
     * least 16 chunks of 4096 keys (attn_params_decode_least_splits; more
     * where the device has many compute units), summed plainly; two forced
     * splits of 32768 keys are built folded */
    static const char *const plans[] = {"mma", "mma,splits=2"};
    enum { KEYS = 65536, CAP = ATTN_MMA_F32_MAX_KEYS / ATTN_MMA_F32_PLAIN_KEYS };
    static const int least[] = {KEYS / ATTN_MMA_F32_PLAIN_KEYS, 2}, most[] = {CAP, 2};
    for (int i = 0; i < 2; i++) {
        result r = run(plans[i], 1, KEYS, 1, 1);
        printf("\n  decode %s f32 S=65536 constant V causal (%s): max rel %.3g, %.3g of the "
               "tolerance",
               plans[i], g_decode_plan, r.max_rel, r.ratio);
        CU_ASSERT(r.ratio <= 1.0);
        const char *at = strstr(g_decode_plan, ",splits=");
        CU_ASSERT_PTR_NOT_NULL_FATAL(at);
        const int splits = atoi(at + strlen(",splits="));
        CU_ASSERT(splits >= least[i] && splits <= most[i]);
    }
    CU_ASSERT(plans_mma(ATTN_MMA_F32_MAX_KEYS));
    CU_ASSERT(!plans_mma(ATTN_MMA_F32_MAX_KEYS + 1));
}

/* A block of more than ATTN_DECODE_MAX_Q_LEN new queries (chunked
 * prefill) over more than ATTN_MMA_F32_PLAIN_KEYS keys on the mma decode
 * kernel: one split, folded (the partial O's of 256 splits of a long block
 * could take gigabytes), Q zero and V constant (the sums' worst case),
 * over 4 x ATTN_MMA_F32_PLAIN_KEYS keys: where a plain sum is past the
 * tolerance (just past ATTN_MMA_F32_PLAIN_KEYS, an unfolded build passed). */
static void test_mma_f32_long_block(void)
{
    enum { QL = ATTN_DECODE_MAX_Q_LEN + 16, S = 4 * ATTN_MMA_F32_PLAIN_KEYS + 200 };
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    float *q = xalloc((size_t)QL * D), *kv = xalloc((size_t)S * D);
    float *ref = xalloc((size_t)QL * D), *got = xalloc((size_t)QL * D);
    for (size_t i = 0; i < (size_t)QL * D; i++) q[i] = 0.0f;
    for (size_t i = 0; i < (size_t)S * D; i++) kv[i] = V_CONST;
    attn_problem p = {.batch = 1, .q_heads = 1, .kv_heads = 1, .head_dim = D, .q_len = QL,
                      .kv_len = S, .dtype = ATTN_F32, .causal = 1};
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, kv, kv, ref, NULL, NULL), ATTN_SUCCESS);
    harness_head h;
    CU_ASSERT_EQUAL_FATAL(harness_head_upload(ctx, q, kv, kv, QL, S, D, &h), 0);
    attn_kv_cache *cache = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, 1, 1, D, S, ATTN_F32, &cache), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_append(cache, &h.k, &h.v, S, NULL, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, "family=mma"), ATTN_SUCCESS);
    attn_problem dp = p;
    dp.kv_len = 0;
    attn_plan_info info;
    CU_ASSERT_EQUAL(attn_decode_prepare(ctx, cache, &dp, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.family, "mma");
    CU_ASSERT_PTR_NOT_NULL(strstr(info.params, ",splits=1"));
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &dp, &h.q, &h.o, NULL, NULL, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(harness_download(ctx, ATTN_F32, &h.o, 1, 1, QL, D, got), 0);
    result r = {0, 0, 0};
    measure(got, ref, (size_t)QL * D, &r);
    printf("\n  mma f32 decode, %d queries over %d keys (%s): max rel %.3g, %.3g of the "
           "tolerance\n", QL, S, info.params, r.max_rel, r.ratio);
    CU_ASSERT(r.ratio <= 1.0);
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, NULL), ATTN_SUCCESS);
    attn_kv_cache_release(cache);
    harness_head_release(&h);
    free(q), free(kv), free(ref), free(got);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_max_grows),
    HARNESS_TEST(test_vector),
    HARNESS_TEST(test_tiled),
    HARNESS_TEST(test_decode_vector),
    HARNESS_TEST(test_decode_tiled),
    HARNESS_TEST(test_mma_f32),
    HARNESS_TEST(test_mma_f32_long_block),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("long_context", tests); }

/* The table: max relative error (constant V) and max abs error (random V),
 * non-causal (decode: causal, the last SQ keys being the new ones). */
static void test_table(void)
{
    static const int lengths[] = {4096, 65536, 262144, 1048576};
    printf("\n| path | S | constant V: max rel error | random V: max abs error |\n|---|---|---|---|\n");
    for (int p = 0; p < NPATHS; p++)
        for (int i = 0; i < 4; i++) {
            if (strcmp(paths[p].family, "flash") == 0) break; /* test_max_grows' only */
            if (strcmp(paths[p].family, "mma") == 0 && lengths[i] > ATTN_MMA_F32_MAX_KEYS) {
                printf("| mma | %d | (refused: f32 rows of at most %d keys) | |\n", lengths[i],
                       ATTN_MMA_F32_MAX_KEYS);
                continue;
            }
            result c = run(paths[p].family, paths[p].decode, lengths[i], 1, paths[p].decode);
            result r = run(paths[p].family, paths[p].decode, lengths[i], 0, paths[p].decode);
            printf("| %s%s | %d | %.2g | %.2g |\n", paths[p].decode ? "decode " : "",
                   paths[p].family, lengths[i], c.max_rel, r.max_abs);
            fflush(stdout);
        }
}

static const harness_test table_tests[] = {HARNESS_TEST(test_table), HARNESS_END};

static void register_table(void) { harness_add_suite("long_context_table", table_tests); }

int main(void)
{
    const char *t = getenv("ATTN_LONG_CONTEXT_TABLE");
    if (t && *t == '1') return harness_run("test_long_context", register_table);
    return harness_run("test_long_context", register_tests);
}
