/* tune_bench_decode.c -- the decode side of the tuner's workbench: the
 * timing cache filled to the class's length (the decode class's kv is the
 * cache's capacity) and a small verification cache of ragged prefixes, both
 * of the class's cache kind (contiguous or paged, as the dtype or int8), so
 * that a decode candidate is verified and timed through attn_decode itself;
 * the bench's class and default; and the library's plan for the bench's
 * class, which needs that cache. */
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

/* A cache like p's, of kind kv, holding k and v (block_len rows, counts per
 * sequence; paged, each sequence's blocks in order, as the pool gives a
 * growing sequence its next block). */
static attn_status fill(attn_context *ctx, const attn_problem *p, const attn_tune_cache *kv,
                        attn_tensor *k, attn_tensor *v, const int *counts, attn_kv_cache **out)
{
    const attn_kv_cache_desc d = {.batch = p->batch, .kv_heads = p->kv_heads,
                                  .head_dim = p->head_dim, .capacity = p->kv_len,
                                  .dtype = p->dtype, .block_size = kv->block_size,
                                  .storage = kv->storage};
    attn_status st = attn_kv_cache_create_desc(ctx, &d, out);
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
    attn_status st = fill(b->ctx, &b->tp, &b->kv, &b->tk, &b->tv, NULL, &b->tcache);
    if (st != ATTN_SUCCESS) return st;
    return fill(b->ctx, &b->vp, &b->kv, &b->vk, &b->vv, dec_kv_len, &b->vcache);
}

void attn_tune_bench_class(const attn_tune_bench *b, attn_shape_class *c)
{
    if (b->entry == ATTN_ENTRY_DECODE)
        attn_decode_class_of(&b->tp, b->kv.block_size, b->kv.storage == ATTN_KV_INT8, c);
    else
        attn_shape_class_of(&b->tp, c);
}

attn_params attn_tune_bench_default(const attn_tune_bench *b)
{
    attn_device_limits dev;
    attn_tune_bench_limits(b, &dev);
    attn_call_begin(b->ctx, __func__);
    dev.mma = attn_plan_mma(b->ctx, b->entry, &b->tp); /* as attn_forward would plan */
    attn_call_end(b->ctx);
    attn_params pr = attn_plan_heuristic(b->entry, &dev, &b->tp);
    if (b->entry == ATTN_ENTRY_DECODE) attn_plan_fit_page(&pr, b->kv.block_size);
    return pr;
}

attn_status attn_tune_bench_plan(attn_tune_bench *b, attn_plan_info *info, attn_params *planned)
{
    attn_status st = b->entry == ATTN_ENTRY_DECODE
                         ? attn_decode_prepare(b->ctx, b->tcache, &b->tp, info)
                         : attn_prepare(b->ctx, &b->tp, info);
    if (st != ATTN_SUCCESS) return st;
    /* the plan just made, from the context's cache (the decode class is
     * the cache's capacity, tp.kv_len, and its kind) */
    const char *source;
    attn_call_begin(b->ctx, __func__);
    st = b->entry == ATTN_ENTRY_DECODE
             ? attn_plan_decode(b->ctx, &b->tp, b->kv.block_size, b->kv.storage, planned, &source)
             : attn_plan(b->ctx, b->entry, &b->tp, planned, &source);
    attn_call_end(b->ctx);
    return st;
}
