/* test_errors.c -- what attn_last_error says. Every message begins with the
 * name of the function that failed (a sample of error paths of each entry
 * point); calls that have no context to carry their message (a NULL ctx,
 * cache or layer; context creation; the reference; the conversions) report
 * it per thread through attn_last_error(NULL) and never show an older
 * call's text; outputs created CL_MEM_READ_ONLY are refused by name; counts
 * read as English ("1 token"). */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 1, HQ = 2, HKV = 1, D = 16, S = 8 };

/* msg begins with "fn: " and (when word is not NULL) contains word. */
static int names(const char *msg, const char *fn, const char *word)
{
    const size_t n = strlen(fn);
    if (strncmp(msg, fn, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ' &&
        (!word || strstr(msg + n, word)))
        return 1;
    printf("\n  expected \"%s: ...%s...\", got \"%s\"\n", fn, word ? word : "", msg);
    return 0;
}

/* call returns status st, and ctx's message (NULL ctx: the thread's) names fn and word. */
#define FAILS(ctx, call, st, fn, word)                          \
    do {                                                        \
        CU_ASSERT_EQUAL((call), (st));                          \
        CU_ASSERT(names(attn_last_error(ctx), (fn), (word)));   \
    } while (0)

typedef struct fixture {
    attn_context *ctx;
    attn_problem p;
    attn_tensor q, k, v, out, ro_out; /* ro_out: created CL_MEM_READ_ONLY */
    cl_mem mem[5], lse, ro_lse;
    attn_kv_cache *cache;
} fixture;

static cl_mem buffer(attn_context *ctx, cl_mem_flags flags, size_t bytes)
{
    cl_int err;
    cl_mem m = clCreateBuffer(attn_context_cl_context(ctx), flags, bytes, NULL, &err);
    CU_ASSERT_EQUAL_FATAL(err, CL_SUCCESS);
    return m;
}

static void fixture_init(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->ctx);
    const attn_problem p = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = S,
                            .kv_len = S, .dtype = ATTN_F32, .causal = 1, .scale = 0.0f};
    f->p = p;
    float *zeros = calloc((size_t)B * HQ * S * D, sizeof(float));
    CU_ASSERT_PTR_NOT_NULL_FATAL(zeros);
    f->mem[0] = harness_upload(f->ctx, ATTN_F32, zeros, B, HQ, S, D, NULL, &f->q);
    f->mem[1] = harness_upload(f->ctx, ATTN_F32, zeros, B, HKV, S, D, NULL, &f->k);
    f->mem[2] = harness_upload(f->ctx, ATTN_F32, zeros, B, HKV, S, D, NULL, &f->v);
    f->mem[3] = harness_alloc(f->ctx, ATTN_F32, B, HQ, S, D, NULL, &f->out);
    free(zeros);
    f->ro_out = f->out;
    f->ro_out.buffer = f->mem[4] =
        buffer(f->ctx, CL_MEM_READ_ONLY, (size_t)B * HQ * S * D * sizeof(float));
    f->lse = buffer(f->ctx, CL_MEM_READ_WRITE, (size_t)B * HQ * S * sizeof(float));
    f->ro_lse = buffer(f->ctx, CL_MEM_READ_ONLY, (size_t)B * HQ * S * sizeof(float));
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(f->ctx, B, HKV, D, 4, ATTN_F32, &f->cache),
                          ATTN_SUCCESS);
}

static void fixture_free(fixture *f)
{
    clFinish(attn_context_queue(f->ctx));
    for (int i = 0; i < 5; i++)
        if (f->mem[i]) clReleaseMemObject(f->mem[i]);
    clReleaseMemObject(f->lse);
    clReleaseMemObject(f->ro_lse);
    attn_kv_cache_release(f->cache);
}

/* ---- every entry point's messages begin with its name ---- */

static void test_messages_name_the_function(void)
{
    fixture f;
    fixture_init(&f);
    attn_context *ctx = f.ctx;
    attn_problem bad = f.p;
    bad.head_dim = 0;
    float w[S * S];

    FAILS(ctx, attn_forward(ctx, &f.p, NULL, &f.k, &f.v, &f.out, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_forward", "q is NULL");
    FAILS(ctx, attn_forward(ctx, &bad, &f.q, &f.k, &f.v, &f.out, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_forward", "head_dim");
    FAILS(ctx, attn_prepare(ctx, NULL, NULL), ATTN_ERROR_INVALID_ARGUMENT, "attn_prepare",
          "p (the problem) is NULL");
    FAILS(ctx, attn_forward_materialized(ctx, &f.p, &f.q, NULL, &f.v, &f.out, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_forward_materialized", "k is NULL");
    FAILS(ctx, attn_attention_weights(ctx, &f.p, &f.q, &f.k, NULL, 0, HQ, w),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_attention_weights", "head = 2 is outside");
    attn_kv_cache *c2 = NULL;
    FAILS(ctx, attn_kv_cache_create(ctx, 0, HKV, D, 4, ATTN_F32, &c2),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_kv_cache_create", "batch");
    FAILS(ctx, attn_kv_cache_append_rows(f.cache, &f.k, &f.v, S, (int[B]){-1}, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_kv_cache_append_rows", "starts[0]");
    FAILS(ctx, attn_kv_cache_append(f.cache, &f.k, &f.v, -1, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_kv_cache_append", "block_len");
    FAILS(ctx, attn_decode(ctx, f.cache, &f.p, &f.q, &f.out, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_decode", "block_len"); /* that append's reason */
    /* an append of no rows does not lift that; a fresh (empty) cache for the rest */
    CU_ASSERT_EQUAL(attn_kv_cache_append(f.cache, NULL, NULL, 0, NULL, NULL), ATTN_SUCCESS);
    FAILS(ctx, attn_decode(ctx, f.cache, &f.p, &f.q, &f.out, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_decode", "block_len");
    attn_kv_cache_release(f.cache);
    f.cache = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, B, HKV, D, 4, ATTN_F32, &f.cache),
                          ATTN_SUCCESS);
    FAILS(ctx, attn_kv_cache_lengths(f.cache, NULL), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_kv_cache_lengths", "lengths");
    FAILS(ctx, attn_kv_cache_truncate(f.cache, 3, 0), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_kv_cache_truncate", "seq");
    FAILS(ctx, attn_kv_cache_reset(f.cache, 5), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_kv_cache_reset", "seq");
    attn_problem dp = f.p;
    dp.q_len = 1;
    dp.kv_heads = 2;
    FAILS(ctx, attn_decode(ctx, f.cache, &dp, &f.q, &f.out, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_decode", "kv_heads");
    dp.kv_heads = HKV;
    FAILS(ctx, attn_decode(ctx, f.cache, &dp, &f.q, &f.out, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_decode", "append"); /* the cache is empty */
    dp.head_dim = 8;
    FAILS(ctx, attn_decode_prepare(ctx, f.cache, &dp, NULL), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_decode_prepare", "head_dim");
    FAILS(ctx, attn_context_workspace_bytes(ctx, NULL), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_context_workspace_bytes", NULL);
    FAILS(ctx, attn_device_peak_gflops(ctx, NULL), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_device_peak_gflops", NULL);
    FAILS(ctx, attn_device_copy_gbps(ctx, NULL), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_device_copy_gbps", NULL);
    int usable;
    FAILS(ctx, attn_family_status(ctx, "mma", NULL, NULL, 0), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_family_status", "usable");
    FAILS(ctx, attn_family_status(ctx, "tensor", &usable, NULL, 0), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_family_status", "tensor");

    /* the layer */
    attn_layer_config cfg = {16, 2, 1, 8, ATTN_F32, 1, 0.0f};
    float *wq = calloc(16 * 16, sizeof(float)), *wk = calloc(8 * 16, sizeof(float)),
          *wv = calloc(8 * 16, sizeof(float)), *wo = calloc(16 * 16, sizeof(float));
    CU_ASSERT_FATAL(wq && wk && wv && wo);
    attn_layer *layer = NULL;
    cfg.d_model = 0;
    FAILS(ctx, attn_layer_create(ctx, &cfg, wq, wk, wv, wo, &layer), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_layer_create", "d_model");
    cfg.d_model = 16;
    FAILS(ctx, attn_layer_create(ctx, &cfg, wq, NULL, wv, wo, &layer),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_layer_create", "w_k");
    if (attn_has_clblast()) { /* else test_without_clblast */
        CU_ASSERT_EQUAL_FATAL(attn_layer_create(ctx, &cfg, wq, wk, wv, wo, &layer), ATTN_SUCCESS);
        FAILS(ctx, attn_layer_forward(layer, 0, 4, f.mem[3], 0, f.mem[3], 0, NULL, NULL, NULL),
              ATTN_ERROR_INVALID_ARGUMENT, "attn_layer_forward", "batch");
        FAILS(ctx, attn_layer_forward(layer, 1, 4, NULL, 0, f.mem[3], 0, NULL, NULL, NULL),
              ATTN_ERROR_INVALID_ARGUMENT, "attn_layer_forward", "hidden");
        /* the attention's limits, named as the layer's arguments, not p's */
        FAILS(ctx, attn_layer_forward(layer, 1, INT_MAX, f.mem[3], 0, f.mem[3], 0, NULL, NULL,
                                      NULL),
              ATTN_ERROR_INVALID_ARGUMENT, "attn_layer_forward", "seq = 2147483647");
        FAILS(ctx, attn_layer_forward(layer, INT_MAX, 1 << 20, f.mem[3], 0, f.mem[3], 0, NULL,
                                      NULL, NULL),
              ATTN_ERROR_INVALID_ARGUMENT, "attn_layer_forward", "batch x q_heads x seq");
        attn_layer_release(layer);
    }
    free(wq), free(wk), free(wv), free(wo);

    /* without a context: the thread's message */
    attn_context *none = (attn_context *)1;
    FAILS(NULL, attn_context_create("no-such-device-xyz", &none), ATTN_ERROR_NO_DEVICE,
          "attn_context_create", "no-such-device-xyz");
    CU_ASSERT_STRING_EQUAL(attn_last_create_error(), attn_last_error(NULL));
    FAILS(NULL, attn_context_create_from_queue(NULL, &none), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_context_create_from_queue", "queue");
    cl_device_id dev;
    FAILS(NULL, attn_select_device(NULL, NULL, &dev), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_select_device", "platform");
    FAILS(NULL, attn_select_device("no-such-device-xyz", (cl_platform_id[1]){0}, &dev),
          ATTN_ERROR_NO_DEVICE, "attn_select_device", "no-such-device-xyz");
    float x[4] = {0}, y[4];
    FAILS(NULL, attn_reference_forward(&bad, x, x, x, y, NULL, NULL), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_reference_forward", "head_dim");
    FAILS(NULL, attn_reference_forward(&f.p, x, NULL, x, y, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_reference_forward", "k");
    FAILS(NULL, attn_convert_from_f32((attn_dtype)7, x, y, 4), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_convert_from_f32", "dtype");
    FAILS(NULL, attn_convert_to_f32(ATTN_F16, NULL, y, 4), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_convert_to_f32", "src");
    FAILS(NULL, attn_forward(NULL, &f.p, &f.q, &f.k, &f.v, &f.out, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_forward", "ctx is NULL");
    FAILS(ctx, attn_decode(ctx, NULL, &dp, &f.q, &f.out, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_decode", "cache is NULL");
    FAILS(NULL, attn_kv_cache_append(NULL, &f.k, &f.v, 1, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_kv_cache_append", "cache is NULL");
    FAILS(NULL, attn_kv_cache_append_rows(NULL, &f.k, &f.v, 1, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_kv_cache_append_rows", "cache is NULL");
    FAILS(NULL, attn_kv_cache_tensors(NULL, &f.k, NULL), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_kv_cache_tensors", "cache is NULL");
    FAILS(NULL, attn_layer_forward(NULL, 1, 4, f.mem[3], 0, f.mem[3], 0, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_layer_forward", "layer is NULL");
    FAILS(NULL, attn_context_set_check(NULL, 1), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_context_set_check", "ctx is NULL");
    /* 0 or 1 only */
    FAILS(f.ctx, attn_context_set_check(f.ctx, 7), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_context_set_check", "enable = 7");
    FAILS(f.ctx, attn_context_set_check(f.ctx, -1), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_context_set_check", "enable = -1");
    fixture_free(&f);
}

/* ---- a call without a context never shows an older message ---- */

static void *forward_without_context(void *arg)
{
    char *msg = arg;
    attn_forward(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    snprintf(msg, 256, "%s", attn_last_error(NULL));
    return NULL;
}

static void test_no_stale_message(void)
{
    fixture f;
    fixture_init(&f);
    attn_context *ctx = f.ctx;
    /* the user's report: a failure on the context, then append(NULL cache) */
    FAILS(ctx, attn_kv_cache_lengths(f.cache, NULL), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_kv_cache_lengths", "lengths");
    FAILS(NULL, attn_kv_cache_append(NULL, &f.k, &f.v, 1, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_kv_cache_append", "cache is NULL");
    CU_ASSERT_PTR_NULL(strstr(attn_last_error(NULL), "lengths"));
    /* the context's own message is its own last failure, untouched */
    CU_ASSERT(names(attn_last_error(ctx), "attn_kv_cache_lengths", NULL));
    /* a call without a context that succeeds clears the thread's message */
    float x = 1.0f;
    uint16_t h;
    CU_ASSERT_EQUAL(attn_convert_from_f32(ATTN_F16, &x, &h, 1), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(attn_last_error(NULL), "");
    /* and a call on the context that succeeds clears the context's */
    int lens[B];
    CU_ASSERT_EQUAL(attn_kv_cache_lengths(f.cache, lens), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(attn_last_error(ctx), "");
    /* attn_kv_cache_tensors too (its success once left the message) */
    FAILS(ctx, attn_kv_cache_lengths(f.cache, NULL), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_kv_cache_lengths", "lengths");
    attn_tensor ck;
    CU_ASSERT_EQUAL(attn_kv_cache_tensors(f.cache, &ck, NULL), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(attn_last_error(ctx), "");
    /* per thread: another thread's failure is its own */
    FAILS(NULL, attn_kv_cache_tensors(NULL, NULL, NULL), ATTN_ERROR_INVALID_ARGUMENT,
          "attn_kv_cache_tensors", NULL);
    char theirs[256] = "";
    pthread_t t;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, forward_without_context, theirs), 0);
    pthread_join(t, NULL);
    CU_ASSERT(names(theirs, "attn_forward", "ctx is NULL"));
    CU_ASSERT(names(attn_last_error(NULL), "attn_kv_cache_tensors", NULL));
    /* a call on a context leaves the thread's message alone, though it
     * converts inside (an int8 cache's read dequantizes; it once cleared it) */
    const attn_kv_cache_desc desc = {.batch = B, .kv_heads = HKV, .head_dim = D, .capacity = 4,
                                     .dtype = ATTN_F16, .storage = ATTN_KV_INT8};
    attn_kv_cache *q8 = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, &desc, &q8), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_kv_cache_append(q8, &f.k, &f.v, 1, NULL, NULL), ATTN_SUCCESS);
    uint16_t kr[HKV * D], vr[HKV * D];
    CU_ASSERT_EQUAL(attn_kv_cache_read(q8, 0, 0, 1, kr, vr), ATTN_SUCCESS);
    CU_ASSERT(names(attn_last_error(NULL), "attn_kv_cache_tensors", NULL));
    attn_kv_cache_release(q8);
    /* nor a forward that makes ALiBi's slopes, nor check mode's reference
     * (both went through the public context-less calls, which clear it) */
    attn_problem alibi = f.p;
    alibi.alibi_max_bias = 8.0f;
    CU_ASSERT_EQUAL(attn_forward(ctx, &alibi, &f.q, &f.k, &f.v, &f.out, NULL, NULL, NULL),
                    ATTN_SUCCESS);
    CU_ASSERT(names(attn_last_error(NULL), "attn_kv_cache_tensors", NULL));
    CU_ASSERT_EQUAL_FATAL(attn_context_set_check(ctx, 1), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_forward(ctx, &f.p, &f.q, &f.k, &f.v, &f.out, NULL, NULL, NULL),
                    ATTN_SUCCESS);
    CU_ASSERT(names(attn_last_error(NULL), "attn_kv_cache_tensors", NULL));
    CU_ASSERT_EQUAL(attn_context_set_check(ctx, 0), ATTN_SUCCESS);
    fixture_free(&f);
}

/* ---- outputs attn writes must be writable by kernels ---- */

/* Outputs made CL_MEM_READ_ONLY and inputs made CL_MEM_WRITE_ONLY are
 * refused, naming them; read-only inputs are fine. */
static void test_read_only_outputs(void)
{
    fixture f;
    fixture_init(&f);
    attn_context *ctx = f.ctx;
    FAILS(ctx, attn_forward(ctx, &f.p, &f.q, &f.k, &f.v, &f.ro_out, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_forward", "out");
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "CL_MEM_READ_ONLY"));
    FAILS(ctx, attn_forward(ctx, &f.p, &f.q, &f.k, &f.v, &f.out, NULL, f.ro_lse, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_forward", "lse");
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "CL_MEM_READ_ONLY"));
    FAILS(ctx, attn_forward_materialized(ctx, &f.p, &f.q, &f.k, &f.v, &f.ro_out, NULL, NULL,
                                         NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_forward_materialized", "out");
    FAILS(ctx, attn_forward_materialized(ctx, &f.p, &f.q, &f.k, &f.v, &f.out, NULL, f.ro_lse,
                                         NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_forward_materialized", "lse");

    /* decode: one token in the cache, one query */
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_append(f.cache, &f.k, &f.v, S, (int[B]){1}, NULL),
                          ATTN_SUCCESS);
    attn_problem dp = f.p;
    dp.q_len = 1;
    attn_tensor q1 = f.q, o1 = f.out, ro1 = f.ro_out;
    FAILS(ctx, attn_decode(ctx, f.cache, &dp, &q1, &ro1, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_decode", "out");
    FAILS(ctx, attn_decode(ctx, f.cache, &dp, &q1, &o1, NULL, f.ro_lse, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_decode", "lse");

    /* the layer writes out */
    attn_layer_config cfg = {16, 2, 1, 8, ATTN_F32, 1, 0.0f};
    float *wq = calloc(16 * 16, sizeof(float)), *wk = calloc(8 * 16, sizeof(float)),
          *wv = calloc(8 * 16, sizeof(float)), *wo = calloc(16 * 16, sizeof(float));
    CU_ASSERT_FATAL(wq && wk && wv && wo);
    attn_layer *layer = NULL;
    if (attn_has_clblast()) { /* else there is no layer */
        CU_ASSERT_EQUAL_FATAL(attn_layer_create(ctx, &cfg, wq, wk, wv, wo, &layer), ATTN_SUCCESS);
        FAILS(ctx, attn_layer_forward(layer, 1, 4, f.mem[3], 0, f.mem[4], 0, NULL, NULL, NULL),
              ATTN_ERROR_INVALID_ARGUMENT, "attn_layer_forward", "out");
        CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "CL_MEM_READ_ONLY"));
        attn_layer_release(layer);
    }
    free(wq), free(wk), free(wv), free(wo);

    /* read-only inputs are fine: q, k, v made CL_MEM_READ_ONLY */
    attn_tensor rq = f.q, rk = f.k, rv = f.v;
    rq.buffer = buffer(ctx, CL_MEM_READ_ONLY, (size_t)B * HQ * S * D * sizeof(float));
    rk.buffer = buffer(ctx, CL_MEM_READ_ONLY, (size_t)B * HKV * S * D * sizeof(float));
    rv.buffer = buffer(ctx, CL_MEM_READ_ONLY, (size_t)B * HKV * S * D * sizeof(float));
    attn_status st = attn_forward(ctx, &f.p, &rq, &rk, &rv, &f.out, NULL, f.lse, NULL);
    if (st != ATTN_SUCCESS) printf("\n  %s\n", attn_last_error(ctx));
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    clFinish(attn_context_queue(ctx));
    clReleaseMemObject(rq.buffer), clReleaseMemObject(rk.buffer), clReleaseMemObject(rv.buffer);

    /* write-only inputs are not: a kernel reading one is undefined */
    attn_tensor wq_t = f.q, wk_t = f.k;
    wq_t.buffer = buffer(ctx, CL_MEM_WRITE_ONLY, (size_t)B * HQ * S * D * sizeof(float));
    wk_t.buffer = buffer(ctx, CL_MEM_WRITE_ONLY, (size_t)B * HKV * S * D * sizeof(float));
    FAILS(ctx, attn_forward(ctx, &f.p, &wq_t, &f.k, &f.v, &f.out, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_forward", "q->buffer was created CL_MEM_WRITE_ONLY");
    FAILS(ctx, attn_forward(ctx, &f.p, &f.q, &f.k, &wk_t, &f.out, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_forward", "v->buffer was created CL_MEM_WRITE_ONLY");
    FAILS(ctx, attn_forward_materialized(ctx, &f.p, &f.q, &wk_t, &f.v, &f.out, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_forward_materialized", "k->buffer was created");
    FAILS(ctx, attn_decode(ctx, f.cache, &dp, &wq_t, &o1, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_decode", "q->buffer was created CL_MEM_WRITE_ONLY");
    FAILS(ctx, attn_kv_cache_append(f.cache, &wk_t, &f.v, 1, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_kv_cache_append", "k->buffer was created");
    attn_problem sp = f.p;
    sp.sinks_buffer = buffer(ctx, CL_MEM_WRITE_ONLY, HQ * sizeof(float));
    FAILS(ctx, attn_forward(ctx, &sp, &f.q, &f.k, &f.v, &f.out, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_forward", "p->sinks_buffer was created");
    clReleaseMemObject(sp.sinks_buffer);
    clReleaseMemObject(wq_t.buffer), clReleaseMemObject(wk_t.buffer);
    fixture_free(&f);
}

/* ---- a refused call leaves no event, even without a context ---- */

/* Each call that hands back an event, refused before it reaches a context
 * (its ctx, cache or layer NULL): *done must not keep the caller's value,
 * which a caller would wait on or release. */
static void test_null_handle_clears_done(void)
{
    fixture f;
    fixture_init(&f);
    attn_problem dp = f.p;
    dp.q_len = 1;
    const cl_event stale = (cl_event)(uintptr_t)0x1234;
    cl_event ev[6] = {stale, stale, stale, stale, stale, stale};
    CU_ASSERT_NOT_EQUAL(attn_forward(NULL, &f.p, &f.q, &f.k, &f.v, &f.out, NULL, NULL, &ev[0]),
                        ATTN_SUCCESS);
    CU_ASSERT_NOT_EQUAL(attn_forward_materialized(NULL, &f.p, &f.q, &f.k, &f.v, &f.out, NULL,
                                                  NULL, &ev[1]), ATTN_SUCCESS);
    CU_ASSERT_NOT_EQUAL(attn_decode(f.ctx, NULL, &dp, &f.q, &f.out, NULL, NULL, &ev[2]),
                        ATTN_SUCCESS);
    CU_ASSERT_NOT_EQUAL(attn_kv_cache_append(NULL, &f.k, &f.v, S, NULL, &ev[3]), ATTN_SUCCESS);
    CU_ASSERT_NOT_EQUAL(attn_kv_cache_append_rows(NULL, &f.k, &f.v, S, NULL, NULL, &ev[4]),
                        ATTN_SUCCESS);
    CU_ASSERT_NOT_EQUAL(attn_layer_forward(NULL, 1, S, f.mem[3], 0, f.mem[3], 0, NULL, NULL,
                                           &ev[5]), ATTN_SUCCESS);
    for (int i = 0; i < 6; i++) {
        CU_ASSERT_PTR_NULL(ev[i]);
        if (ev[i]) printf("\n  call %d left *done as it was\n", i);
    }
    fixture_free(&f);
}

/* ---- counts in words ---- */

static void test_plurals(void)
{
    fixture f;
    fixture_init(&f);
    attn_context *ctx = f.ctx;
    /* capacity 4: three tokens, then one more and one too many */
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_append(f.cache, &f.k, &f.v, S, (int[B]){3}, NULL),
                          ATTN_SUCCESS);
    attn_problem dp = f.p;
    dp.q_len = 4;
    FAILS(ctx, attn_decode(ctx, f.cache, &dp, &f.q, &f.out, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_decode", "holds only 3 tokens");
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_append(f.cache, &f.k, &f.v, S, (int[B]){1}, NULL),
                          ATTN_SUCCESS);
    FAILS(ctx, attn_kv_cache_append(f.cache, &f.k, &f.v, S, (int[B]){1}, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_kv_cache_append", "appending 1 token to its 4 ");
    CU_ASSERT_PTR_NULL(strstr(attn_last_error(ctx), "1 tokens"));
    /* one token again (an append of rows lifts the failed one's refusal) */
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_truncate(f.cache, 0, 0), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_append(f.cache, &f.k, &f.v, S, (int[B]){1}, NULL),
                          ATTN_SUCCESS);
    dp.q_len = 2;
    FAILS(ctx, attn_decode(ctx, f.cache, &dp, &f.q, &f.out, NULL, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_decode", "2 new queries but sequence 0 holds only 1 token:");
    FAILS(ctx, attn_decode(ctx, f.cache, &dp, &f.q, &f.out, (int[B]){2}, NULL, NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_decode", "holds only 1 token:");
    fixture_free(&f);
}

/* ---- a build without CLBlast: its paths refuse valid calls, after validation ---- */

static void test_without_clblast(void)
{
    if (attn_has_clblast()) {
        printf("\n  (this build has CLBlast: test_materialized and test_layer run its paths) ");
        return;
    }
    fixture f;
    fixture_init(&f);
    attn_context *ctx = f.ctx;
    float w[S * S];
    w[0] = 7.0f;
    FAILS(ctx, attn_forward_materialized(ctx, &f.p, &f.q, &f.k, &f.v, &f.out, NULL, f.lse, NULL),
          ATTN_ERROR_UNSUPPORTED, "attn_forward_materialized", "no CLBlast");
    FAILS(ctx, attn_forward_materialized(ctx, &f.p, &f.q, &f.k, &f.v, &f.ro_out, NULL, NULL,
                                         NULL),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_forward_materialized", "out");
    FAILS(ctx, attn_attention_weights(ctx, &f.p, &f.q, &f.k, NULL, 0, 0, w),
          ATTN_ERROR_UNSUPPORTED, "attn_attention_weights", "no CLBlast");
    CU_ASSERT_EQUAL(w[0], 7.0f); /* untouched */
    attn_layer_config cfg = {16, 2, 1, 8, ATTN_F32, 1, 0.0f};
    float wts[16 * 16] = {0};
    attn_layer *layer = (attn_layer *)&cfg;
    FAILS(ctx, attn_layer_create(ctx, &cfg, wts, wts, wts, wts, &layer), ATTN_ERROR_UNSUPPORTED,
          "attn_layer_create", "no CLBlast");
    CU_ASSERT_PTR_NULL(layer);
    FAILS(ctx, attn_layer_create(ctx, &cfg, wts, wts, wts, NULL, &layer),
          ATTN_ERROR_INVALID_ARGUMENT, "attn_layer_create", "w_o");
    fixture_free(&f);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_messages_name_the_function),
    HARNESS_TEST(test_without_clblast),
    HARNESS_TEST(test_no_stale_message),
    HARNESS_TEST(test_read_only_outputs),
    HARNESS_TEST(test_plurals),
    HARNESS_TEST(test_null_handle_clears_done),
    HARNESS_END
};

static void register_tests(void) { harness_add_suite("errors", tests); }

int main(void) { return harness_run("test_errors", register_tests); }
