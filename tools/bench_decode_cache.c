/* bench_decode_cache.c -- attn-bench --decode's inputs per cache type:
 * random q, k, v rounded through the dtype, the query and output buffers,
 * and one KV cache of the type's storage per compared block size, filled
 * with the whole prefix. */
#define _POSIX_C_SOURCE 200809L
#include "bench_decode_cache.h"
#include "common.h"

#include <stdlib.h>
#include <string.h>

void dtype_res_free(dtype_res *r)
{
    for (int i = 0; i < BENCH_MAX_BLOCKS; i++) attn_kv_cache_release(r->caches[i]);
    if (r->bq) clReleaseMemObject(r->bq);
    if (r->bo) clReleaseMemObject(r->bo);
    free(r->hq), free(r->hk), free(r->hv), free(r->stage);
    bench_variant_data_free(&r->vd);
    memset(r, 0, sizeof *r);
}

attn_status dtype_res_setup(attn_context *ctx, const dshape *s, attn_dtype t,
                            attn_kv_storage storage, const bench_variant *v, const int *blocks,
                            int nblocks, dtype_res *r, const char **step)
{
    memset(r, 0, sizeof *r);
    r->dtype = t;
    r->storage = storage;
    const attn_problem p = {.batch = s->batch, .q_heads = s->q_heads, .kv_heads = s->kv_heads,
                            .head_dim = s->head_dim, .q_len = s->q_len, .kv_len = s->kv_len,
                            .dtype = t, .causal = 1, .scale = 0.0f};
    r->p = p;
    attn_status st;
    if (v && (st = bench_variant_apply(ctx, v, &r->p, &r->vd, step)) != ATTN_SUCCESS) return st;
    const size_t D = (size_t)s->head_dim;
    const size_t nq = (size_t)s->batch * s->q_heads * s->q_len * D;
    const size_t nkv = (size_t)s->batch * s->kv_heads * s->kv_len * D;
    r->esize = attn_dtype_size(t);
    r->hq = malloc(nq * sizeof *r->hq), r->hk = malloc(nkv * sizeof *r->hk);
    r->hv = malloc(nkv * sizeof *r->hv), r->stage = malloc(nkv * r->esize);
    *step = "host allocation";
    if (!r->hq || !r->hk || !r->hv || !r->stage) return ATTN_ERROR_OUT_OF_MEMORY;
    uint64_t rng = TOOL_SEED;
    float *host[3] = {r->hq, r->hk, r->hv};
    size_t count[3] = {nq, nkv, nkv};
    cl_mem dev[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++)
        if ((st = tool_random_input(ctx, t, count[i], &rng, -1, 1, CL_MEM_READ_WRITE, host[i],
                                    &dev[i], step)) != ATTN_SUCCESS)
            goto done;
    if ((st = tool_output_buffer(ctx, nq * r->esize, &r->bo, step)) != ATTN_SUCCESS) goto done;
    r->bq = dev[0];
    dev[0] = NULL;
    r->tq = tool_bhsd(r->bq, s->q_heads, s->q_len, s->head_dim);
    r->to = tool_bhsd(r->bo, s->q_heads, s->q_len, s->head_dim);
    const attn_tensor tk = tool_bhsd(dev[1], s->kv_heads, s->kv_len, s->head_dim);
    const attn_tensor tv = tool_bhsd(dev[2], s->kv_heads, s->kv_len, s->head_dim);
    /* each cache filled with the whole prefix: contiguous in one append;
     * paged a block at a time in every sequence, as generation grows them,
     * so that each sequence's blocks lie between the others' (one append
     * would give each sequence consecutive blocks, the best case) */
    int *starts = malloc(sizeof *starts * (size_t)s->batch);
    int *counts = malloc(sizeof *counts * (size_t)s->batch);
    *step = "host allocation";
    if (!starts || !counts) st = ATTN_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < nblocks && st == ATTN_SUCCESS; i++) {
        const attn_kv_cache_desc d = {.batch = s->batch, .kv_heads = s->kv_heads,
                                      .head_dim = s->head_dim, .capacity = s->kv_len,
                                      .dtype = t, .block_size = blocks[i],
                                      .storage = storage};
        *step = "attn_kv_cache_create_desc";
        if ((st = attn_kv_cache_create_desc(ctx, &d, &r->caches[i])) != ATTN_SUCCESS) break;
        *step = "attn_kv_cache_append_rows";
        const int step_rows = blocks[i] ? blocks[i] : s->kv_len;
        for (int t0 = 0; t0 < s->kv_len && st == ATTN_SUCCESS; t0 += step_rows) {
            for (int b = 0; b < s->batch; b++) {
                starts[b] = t0;
                counts[b] = s->kv_len - t0 < step_rows ? s->kv_len - t0 : step_rows;
            }
            st = attn_kv_cache_append_rows(r->caches[i], &tk, &tv, s->kv_len, starts, counts,
                                           NULL);
        }
    }
    free(starts), free(counts);
    if (st != ATTN_SUCCESS) goto done;
    clFinish(attn_context_queue(ctx));
done:
    for (int i = 0; i < 3; i++)
        if (dev[i]) clReleaseMemObject(dev[i]);
    return st;
}
