/* test_forward.c -- attn_forward against attn_reference_forward, for both
 * kernel families, over a matrix that covers (rather than multiplies out)
 * the problem space: MHA, GQA and MQA; causal and not; right, left and mixed
 * padding with empty batch entries; Sq < Skv (decode) and Sq > Skv (rows
 * with nothing visible); lengths 1 to 1000; head dims 7 to 256; strided
 * layouts; the three storage types; a custom scale; in place; tile
 * parameters that do not divide the lengths; check mode, the completion
 * event and determinism.
 *
 * The cases are the "forward/..." rows of the shared table (case_table.c),
 * run by the shared runner (cases.c): inputs rounded through the storage
 * type, tensors whose every element (gaps included) starts as NaN, O and
 * LSE compared with the reference at the DESIGN tolerance, nothing written
 * outside O, Q, K and V left alone.
 *
 * Build cost: PoCL compiles one program per (family, tile parameters, head
 * dim, dtype); the matrix below needs about 65 programs: about 50 s from a
 * cold cache on 2 CPU cores (PoCL), under a second warm. */
#define _POSIX_C_SOURCE 200809L
#include "cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The families with a forward kernel, each with the library's default
 * tile parameters otherwise. */
static const harness_family families[] = {HARNESS_VECTOR, HARNESS_TILED, HARNESS_FLASH};
#define NFAM 3

static void run_group(const char *group) { harness_run_group(group, attn_forward, "attn_forward"); }

static void test_head_dims_f32(void) { run_group("forward/head_dims"); }
static void test_more_shapes(void) { run_group("forward/more_shapes"); }
static void test_long_1000(void) { run_group("forward/long"); }
static void test_padding(void) { run_group("forward/padding"); }
static void test_decode_padded(void) { run_group("forward/decode_padded"); }
static void test_layouts(void) { run_group("forward/layouts"); }
static void test_dtypes(void) { run_group("forward/dtypes"); }
static void test_dtype_head_dim_sweep(void) { run_group("forward/dtype_sweep"); }
static void test_custom_scale(void) { run_group("forward/custom_scale"); }
static void test_wide_loads(void) { run_group("forward/wide_loads"); }
static void test_in_place(void)
{
    run_group("forward/in_place");
    /* mma reading Q at each k-step: O's rows written where Q's are read */
    harness_run_group_as("forward/in_place", attn_forward, "attn_forward", HARNESS_MMA,
                         "warps=2,keys=16,qregs=0");
    harness_run_group_as("forward/in_place", attn_forward, "attn_forward", HARNESS_MMA,
                         "warps=1,keys=32,mtiles=2,qregs=0"); /* two m-tiles a warp */
}
static void test_default_params(void) { run_group("forward/default_params"); }

/* ---- Sq > Skv and fully masked rows: zeros and -inf, never NaN ---- */

static void test_fully_masked_rows(void)
{
    run_group("forward/masked");
    run_group("forward/masked_rows"); /* under its every family, mma and the default too */
    /* the explicit check, beyond the reference comparison: rows i < Sq - Skv
     * are exactly zero with -inf LSE */
    const harness_case *c = harness_case_named("Sq40 > Skv9 causal");
    for (int f = 0; f < NFAM; f++) {
        float *o = NULL, *l = NULL;
        if (harness_case_run(c, families[f], attn_forward, "attn_forward", &o, &l) == 0) {
            for (int bh = 0; bh < c->B * c->Hq; bh++)
                for (int r = 0; r < c->Sq; r++) {
                    const float *row = o + ((size_t)bh * c->Sq + r) * c->D;
                    int empty = r < c->Sq - c->Skv;
                    for (int d = 0; d < c->D; d++) {
                        CU_ASSERT(!isnan(row[d]));
                        if (empty) CU_ASSERT_EQUAL(row[d], 0.0f);
                    }
                    CU_ASSERT(empty ? l[bh * c->Sq + r] == -INFINITY : isfinite(l[bh * c->Sq + r]));
                }
        }
        free(o);
        free(l);
    }
}

/* p->scale = 0 means 1/sqrt(head_dim). The reference computes that default
 * on its own, so a wrong default on the kernels' side (attn_effective_scale)
 * is a mismatch here, for both families; and the reference's default is an
 * explicit 1/sqrt(D). */
static void test_default_scale(void)
{
    static const int dims[] = {16, 40, 64, 128};
    for (int i = 0; i < 4; i++) {
        const int D = dims[i];
        const int nq = 2 * 9 * D, nk = 13 * D;
        float *q = harness_xalloc(nq), *k = harness_xalloc(nk), *v = harness_xalloc(nk);
        float *a = harness_xalloc(nq), *b = harness_xalloc(nq);
        harness_fill_uniform(q, (size_t)nq, 900 + D, -3.0f, 3.0f);
        harness_fill_uniform(k, (size_t)nk, 901 + D, -3.0f, 3.0f);
        harness_fill_uniform(v, (size_t)nk, 902 + D, -1.0f, 1.0f);
        attn_problem p = harness_problem(1, 2, 1, D, 9, 13, 1);
        CU_ASSERT_EQUAL(attn_reference_forward(&p, q, k, v, a, NULL, NULL), ATTN_SUCCESS);
        p.scale = (float)(1.0 / sqrt((double)D));
        CU_ASSERT_EQUAL(attn_reference_forward(&p, q, k, v, b, NULL, NULL), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(harness_compare("reference default scale", a, b, (size_t)nq, 1e-6, 1e-6,
                                        900 + D), 0);
        free(q), free(k), free(v), free(a), free(b);
    }
    run_group("forward/default_scale");
}

/* ---- tile parameters that do not divide the lengths ---- */

static void test_tile_params(void)
{
    static const struct { harness_family family; const char *params; } sets[] = {
        {HARNESS_TILED, "rows=8,keys=16,wg=64,local_kv=0"},
        {HARNESS_TILED, "rows=8,keys=16,wg=64,local_kv=1"},
        {HARNESS_TILED, "rows=1,keys=4,wg=1,local_kv=0"},
        {HARNESS_TILED, "rows=4,keys=8,wg=16,local_kv=1"},
        {HARNESS_TILED, "rows=16,keys=64,wg=256,local_kv=1"},
        {HARNESS_VECTOR, "rows=4,keys=16,vec=8"},
        {HARNESS_VECTOR, "rows=5,keys=16,vec=8"}, /* the default with AVX2 */
        {HARNESS_VECTOR, "rows=3,keys=8,vec=4"},
        {HARNESS_VECTOR, "rows=16,keys=64,vec=16"},
        {HARNESS_VECTOR, "rows=7,keys=16,vec=16"},
        {HARNESS_FLASH, "rows=64,keys=32,tm=4,tn=2"}, /* 256 work-items */
        {HARNESS_FLASH, "rows=12,keys=4,tm=3,tn=1,prefetch=1"}, /* odd micro-tiles, 4 keys,
                                                                  * the next tile prefetched */
        {HARNESS_FLASH, "rows=16,keys=64,tm=8,tn=8"}, /* 16 work-items, 8 x 8 */
        {HARNESS_FLASH, "rows=16,keys=4,tm=4,tn=4"}, /* one column group: a row's max is
                                                     * that group's alone */
        {HARNESS_MMA, "warps=1,keys=16"},          /* one warp; tiles of 16 rows and keys */
        {HARNESS_MMA, "warps=2,keys=32,mtiles=2"}, /* two m-tiles a warp */
        {HARNESS_MMA, "warps=8,keys=128,mtiles=2"}, /* 256 rows: one row block */
        {HARNESS_MMA, "warps=2,keys=32,mtiles=2,qregs=0"}, /* Q read at each k-step */
        {HARNESS_MMA, "warps=1,keys=16,qregs=0"},
    };
    /* lengths that are not multiples of any tile, a padded batch, GQA */
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        harness_run_group_as("forward/tiles", attn_forward, "attn_forward", sets[i].family,
                             sets[i].params);
    /* head dims that are not a multiple of the vector width or of 4 */
    run_group("forward/tiles_odd");
}

/* ---- check mode accepts a correct run ---- */

static void test_check_mode(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_EQUAL_FATAL(attn_context_set_check(ctx, 1), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(harness_run_group("forward/check", attn_forward, "attn_forward"), 0);
    CU_ASSERT_EQUAL(attn_context_set_check(ctx, 0), ATTN_SUCCESS);
}

/* ---- determinism: the same call twice gives the same bits, also with
 * another problem run in between (the vector family's scratch is reused) ---- */

/* f32 buffers set to NaN again, so that a call that writes nothing does
 * not pass on the last call's output. */
static void poison(attn_context *ctx, cl_mem a, cl_mem b)
{
    const float nan = NAN;
    const cl_mem m[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        size_t bytes = 0;
        CU_ASSERT_EQUAL_FATAL(clGetMemObjectInfo(m[i], CL_MEM_SIZE, sizeof bytes, &bytes, NULL),
                              CL_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(clEnqueueFillBuffer(attn_context_queue(ctx), m[i], &nan, sizeof nan,
                                                  0, bytes, 0, NULL, NULL),
                              CL_SUCCESS);
    }
    CU_ASSERT_EQUAL_FATAL(clFinish(attn_context_queue(ctx)), CL_SUCCESS);
}

static int forward_into(attn_context *ctx, harness_family family, const attn_problem *p,
                        const attn_tensor *q, const attn_tensor *k, const attn_tensor *v,
                        const attn_tensor *o, cl_mem lse, float *out, float *lse_out)
{
    poison(ctx, o->buffer, lse);
    harness_use_family(ctx, family, NULL);
    cl_event ev = NULL;
    attn_status st = attn_forward(ctx, p, q, k, v, o, NULL, lse, &ev);
    harness_use_params(ctx, NULL);
    if (st != ATTN_SUCCESS) {
        printf("\n  attn_forward [%s]: %s: %s\n", harness_family_name(family), attn_status_name(st),
               attn_last_error(ctx));
        return -1;
    }
    if (!ev || clWaitForEvents(1, &ev) != CL_SUCCESS) return -1;
    clReleaseEvent(ev);
    if (harness_download(ctx, p->dtype, o, p->batch, p->q_heads, p->q_len, p->head_dim, out))
        return -1;
    return harness_read_floats(ctx, lse, lse_out, (size_t)p->batch * p->q_heads * p->q_len);
}

static void test_deterministic(void)
{
    attn_context *ctx = harness_context();
    const uint64_t seed = harness_seed(1301);
    attn_problem a = {.batch = 2, .q_heads = 4, .kv_heads = 2, .head_dim = 64, .q_len = 45,
                      .kv_len = 45, .dtype = ATTN_F32, .causal = 1, .scale = 0.0f};
    attn_problem b = {.batch = 1, .q_heads = 2, .kv_heads = 2, .head_dim = 64, .q_len = 7,
                      .kv_len = 300, .dtype = ATTN_F32, .causal = 0,
                      .scale = 0.0f}; /* a bigger KV */
    const size_t naq = 2 * 4 * 45 * 64, nakv = 2 * 2 * 45 * 64, nbq = 2 * 7 * 64,
                 nbkv = 2 * 300 * 64;
    float *aq = harness_xalloc(naq), *ak = harness_xalloc(nakv), *av = harness_xalloc(nakv);
    float *bq = harness_xalloc(nbq), *bk = harness_xalloc(nbkv), *bv = harness_xalloc(nbkv);
    float *o1 = harness_xalloc(naq), *o2 = harness_xalloc(naq), *o3 = harness_xalloc(naq),
          *ob = harness_xalloc(nbq);
    float l1[2 * 4 * 45], l2[2 * 4 * 45], l3[2 * 4 * 45], lb[2 * 7];
    harness_fill_normal(aq, naq, seed, 0, 1);
    harness_fill_normal(ak, nakv, seed + 1, 0, 1);
    harness_fill_normal(av, nakv, seed + 2, 0, 1);
    harness_fill_normal(bq, nbq, seed + 3, 0, 1);
    harness_fill_normal(bk, nbkv, seed + 4, 0, 1);
    harness_fill_normal(bv, nbkv, seed + 5, 0, 1);
    attn_tensor tq, tk, tv, to, uq, uk, uv, uo;
    cl_mem m[] = {
        harness_upload(ctx, ATTN_F32, aq, 2, 4, 45, 64, NULL, &tq),
        harness_upload(ctx, ATTN_F32, ak, 2, 2, 45, 64, NULL, &tk),
        harness_upload(ctx, ATTN_F32, av, 2, 2, 45, 64, NULL, &tv),
        harness_alloc(ctx, ATTN_F32, 2, 4, 45, 64, NULL, &to),
        harness_upload(ctx, ATTN_F32, bq, 1, 2, 7, 64, NULL, &uq),
        harness_upload(ctx, ATTN_F32, bk, 1, 2, 300, 64, NULL, &uk),
        harness_upload(ctx, ATTN_F32, bv, 1, 2, 300, 64, NULL, &uv),
        harness_alloc(ctx, ATTN_F32, 1, 2, 7, 64, NULL, &uo),
        harness_float_buffer(ctx, 2 * 4 * 45),
        harness_float_buffer(ctx, 2 * 7),
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) CU_ASSERT_PTR_NOT_NULL_FATAL(m[i]);
    /* each family, and the library's own choice */
    static const harness_family chosen[] = {HARNESS_VECTOR, HARNESS_TILED, HARNESS_FLASH,
                                            HARNESS_AUTO};
    const int nchosen = (int)(sizeof chosen / sizeof chosen[0]);
    for (int f = 0; f < nchosen; f++) {
        CU_ASSERT_EQUAL_FATAL(forward_into(ctx, chosen[f], &a, &tq, &tk, &tv, &to, m[8], o1, l1),
                              0);
        CU_ASSERT_EQUAL_FATAL(forward_into(ctx, chosen[f], &a, &tq, &tk, &tv, &to, m[8], o2, l2),
                              0);
        CU_ASSERT_EQUAL_FATAL(forward_into(ctx, chosen[f], &b, &uq, &uk, &uv, &uo, m[9], ob, lb),
                              0);
        CU_ASSERT_EQUAL_FATAL(forward_into(ctx, chosen[f], &a, &tq, &tk, &tv, &to, m[8], o3, l3),
                              0);
        int same12 = memcmp(o1, o2, naq * sizeof(float)) == 0 && memcmp(l1, l2, sizeof l1) == 0;
        int same13 = memcmp(o1, o3, naq * sizeof(float)) == 0 && memcmp(l1, l3, sizeof l1) == 0;
        if (!same12 || !same13)
            printf("\n  [%s] results differ between identical calls (%s), seed %llu\n",
                   harness_family_name(chosen[f]),
                   !same12 ? "back to back" : "after another problem", (unsigned long long)seed);
        CU_ASSERT(same12);
        CU_ASSERT(same13);
        /* and the answer is the right one (enqueued back to back without
         * waiting too: the second problem must not clobber the first's data) */
        float *ref = harness_xalloc(naq), rl[2 * 4 * 45];
        CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&a, aq, ak, av, ref, NULL, rl), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(harness_compare("determinism O", o1, ref, naq, 1e-5, 1e-4, seed), 0);
        CU_ASSERT_EQUAL(harness_compare("determinism LSE", l1, rl, 2 * 4 * 45, 1e-5, 1e-4, seed),
                        0);
        free(ref);
    }

    /* back to back without waiting: A then B enqueued, then both read */
    for (int f = 0; f < nchosen; f++) {
        poison(ctx, to.buffer, m[8]);
        poison(ctx, uo.buffer, m[9]);
        harness_use_family(ctx, chosen[f], NULL);
        cl_event e1 = NULL, e2 = NULL;
        attn_status s1 = attn_forward(ctx, &a, &tq, &tk, &tv, &to, NULL, m[8], &e1);
        attn_status s2 = attn_forward(ctx, &b, &uq, &uk, &uv, &uo, NULL, m[9], &e2);
        harness_use_params(ctx, NULL);
        CU_ASSERT_EQUAL(s1, ATTN_SUCCESS);
        CU_ASSERT_EQUAL(s2, ATTN_SUCCESS);
        if (e1 && e2) {
            cl_event both[2] = {e1, e2};
            CU_ASSERT_EQUAL(clWaitForEvents(2, both), CL_SUCCESS);
        }
        if (e1) clReleaseEvent(e1);
        if (e2) clReleaseEvent(e2);
        float *ref = harness_xalloc(naq), *refb = harness_xalloc(nbq);
        CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&a, aq, ak, av, ref, NULL, NULL),
                              ATTN_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&b, bq, bk, bv, refb, NULL, NULL),
                              ATTN_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(harness_download(ctx, ATTN_F32, &to, 2, 4, 45, 64, o1), 0);
        CU_ASSERT_EQUAL_FATAL(harness_download(ctx, ATTN_F32, &uo, 1, 2, 7, 64, ob), 0);
        CU_ASSERT_EQUAL(harness_compare("back-to-back A", o1, ref, naq, 1e-5, 1e-4, seed), 0);
        CU_ASSERT_EQUAL(harness_compare("back-to-back B", ob, refb, nbq, 1e-5, 1e-4, seed), 0);
        free(ref);
        free(refb);
    }
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) clReleaseMemObject(m[i]);
    free(aq);
    free(ak);
    free(av);
    free(bq);
    free(bk);
    free(bv);
    free(o1);
    free(o2);
    free(o3);
    free(ob);
}

/* ---- one key far above the rest, at each tile's last column ----
 * Head h's key DOMINANT[h] (the last of a tile of 16, 32, 64 or 128 keys)
 * has logits 256 above the others: exp2 of it less a max taken without it
 * overflows. A row max that left a tile's last column out passed every
 * suite (softmax does not see a shift that stays finite). */
static void test_dominant_key_each_tile_end(void)
{
    enum { H = 4, D = 16, SQ = 4, SKV = 128 };
    static const int dominant[H] = {15, 31, 63, 127};
    attn_context *ctx = harness_context();
    const uint64_t seed = harness_seed(1401);
    const attn_problem p = {.batch = 1, .q_heads = H, .kv_heads = H, .head_dim = D, .q_len = SQ,
                            .kv_len = SKV, .dtype = ATTN_F32, .causal = 0, .scale = 0.0f};
    float q[H * SQ * D], k[H * SKV * D], v[H * SKV * D], ref[H * SQ * D], got[H * SQ * D];
    float ref_lse[H * SQ], got_lse[H * SQ];
    for (int i = 0; i < H * SQ * D; i++) q[i] = 1.0f;
    harness_fill_normal(k, H * SKV * D, seed, 0, 0.5f);
    harness_fill_normal(v, H * SKV * D, seed + 1, 0, 1);
    for (int h = 0; h < H; h++)
        for (int d = 0; d < D; d++) k[(h * SKV + dominant[h]) * D + d] = 64.0f; /* logit 256 */
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, ref, NULL, ref_lse), ATTN_SUCCESS);
    attn_tensor tq, tk, tv, to;
    cl_mem m[] = {harness_upload(ctx, ATTN_F32, q, 1, H, SQ, D, NULL, &tq),
                  harness_upload(ctx, ATTN_F32, k, 1, H, SKV, D, NULL, &tk),
                  harness_upload(ctx, ATTN_F32, v, 1, H, SKV, D, NULL, &tv),
                  harness_alloc(ctx, ATTN_F32, 1, H, SQ, D, NULL, &to),
                  harness_float_buffer(ctx, H * SQ)};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) CU_ASSERT_PTR_NOT_NULL_FATAL(m[i]);
    static const harness_family fams[] = {HARNESS_VECTOR, HARNESS_TILED, HARNESS_FLASH,
                                          HARNESS_MMA};
    double atol, rtol;
    attn_tolerance(ATTN_F32, &atol, &rtol);
    for (int f = 0; f < 4; f++) {
        CU_ASSERT_EQUAL_FATAL(forward_into(ctx, fams[f], &p, &tq, &tk, &tv, &to, m[4], got,
                                           got_lse), 0);
        char what[64];
        snprintf(what, sizeof what, "[%s] O, a dominant key", harness_family_name(fams[f]));
        CU_ASSERT_EQUAL(harness_compare(what, got, ref, H * SQ * D, atol, rtol, seed), 0);
        snprintf(what, sizeof what, "[%s] LSE, a dominant key", harness_family_name(fams[f]));
        CU_ASSERT_EQUAL(harness_compare(what, got_lse, ref_lse, H * SQ, atol, rtol, seed), 0);
    }
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) clReleaseMemObject(m[i]);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_head_dims_f32),
    HARNESS_TEST(test_more_shapes),
    HARNESS_TEST(test_long_1000),
    HARNESS_TEST(test_padding),
    HARNESS_TEST(test_decode_padded),
    HARNESS_TEST(test_fully_masked_rows),
    HARNESS_TEST(test_layouts),
    HARNESS_TEST(test_dtypes),
    HARNESS_TEST(test_dtype_head_dim_sweep),
    HARNESS_TEST(test_custom_scale),
    HARNESS_TEST(test_wide_loads),
    HARNESS_TEST(test_default_scale),
    HARNESS_TEST(test_in_place),
    HARNESS_TEST(test_tile_params),
    HARNESS_TEST(test_default_params),
    HARNESS_TEST(test_check_mode),
    HARNESS_TEST(test_deterministic),
    HARNESS_TEST(test_dominant_key_each_tile_end),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("forward", tests); }

int main(void) { return harness_run("test_forward", register_tests); }
