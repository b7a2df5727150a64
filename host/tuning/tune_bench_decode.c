/* tune_bench_decode.c -- the decode side of the tuner's workbench: the
 * timing cache filled to the class's length (the decode class's kv is the
 * cache's capacity) and a small verification cache of ragged prefixes, so
 * that a decode candidate is verified and timed through attn_decode itself;
 * and the library's plan for the bench's class, which needs that cache. */
#include "tuning/tune_bench.h"
#include "attention/plan.h"
#include "core/errors.h"

/* Prefix lengths of the verification batches: the whole cache (131 rows,
 * no multiple of any key block), and shorter ones; each at least
 * ATTN_DECODE_MAX_Q_LEN, so every query row is a token of the prefix. */
static const int dec_kv_len[ATTN_TUNE_VB] = {131, 67, 100, 64};

attn_status attn_tune_decode_shape(attn_tune_bench *b)
{
    const attn_problem *p = &b->tp;
    if (p->q_len > ATTN_DECODE_MAX_Q_LEN)
        return ATTN_FAIL(b->ctx, ATTN_ERROR_INVALID_ARGUMENT,
                         "attn_tune_bench_create: a decode shape's q_len %d "
                         "exceeds ATTN_DECODE_MAX_Q_LEN (%d)", p->q_len, ATTN_DECODE_MAX_Q_LEN);
    b->vp.q_len = p->q_len;
    b->vp.kv_len = ATTN_TUNE_VSKV;
    for (int i = 0; i < ATTN_TUNE_VB; i++) b->vq_len[i] = p->q_len;
    b->vlen.q_start = NULL;
    b->vlen.q_len = b->vq_len;
    b->vlen.kv_start = NULL;
    b->vlen.kv_len = dec_kv_len;
    return ATTN_SUCCESS;
}

/* A cache like p's holding k and v (block_len rows, counts per sequence). */
static attn_status fill(attn_context *ctx, const attn_problem *p, attn_tensor *k, attn_tensor *v,
                        const int *counts, attn_kv_cache **out)
{
    attn_status st = attn_kv_cache_create(ctx, p->batch, p->kv_heads, p->head_dim, p->kv_len,
                                          p->dtype, out);
    if (st == ATTN_SUCCESS) st = attn_kv_cache_append(*out, k, v, p->kv_len, counts, NULL);
    if (st == ATTN_SUCCESS) {
        const cl_int err = clFinish(ctx->queue);
        if (err != CL_SUCCESS) st = attn_fail_cl(ctx, err, "clFinish (tuner cache)");
    }
    clReleaseMemObject(k->buffer);
    clReleaseMemObject(v->buffer);
    k->buffer = v->buffer = NULL;
    return st;
}

attn_status attn_tune_decode_fill(attn_tune_bench *b)
{
    attn_status st = fill(b->ctx, &b->tp, &b->tk, &b->tv, NULL, &b->tcache);
    if (st != ATTN_SUCCESS) return st;
    return fill(b->ctx, &b->vp, &b->vk, &b->vv, dec_kv_len, &b->vcache);
}

attn_status attn_tune_bench_plan(attn_tune_bench *b, attn_plan_info *info, attn_params *planned)
{
    attn_status st = b->entry == ATTN_ENTRY_DECODE
                         ? attn_decode_prepare(b->ctx, b->tcache, &b->tp, info)
                         : attn_prepare(b->ctx, &b->tp, info);
    if (st != ATTN_SUCCESS) return st;
    /* the plan just made, from the context's cache (the decode class is
     * the cache's capacity, tp.kv_len) */
    const char *source;
    attn_call_begin(b->ctx, __func__);
    st = attn_plan(b->ctx, b->entry, &b->tp, planned, &source);
    attn_call_end(b->ctx);
    return st;
}
