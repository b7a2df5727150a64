/* bench_mixed_pool.c -- attn-bench --decode --mixed's pool: the lengths,
 * random q, k, v rounded through each type (K/V packed on one token axis,
 * which attn_kv_cache_append_rows takes with stride_batch 0), one cache per
 * compared block size, a step (append the last token of every sequence,
 * decode) and its rewind. */
#define _POSIX_C_SOURCE 200809L
#include "bench_mixed_pool.h"
#include "common.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

void mixed_seqs_free(mixed_seqs *s)
{
    free(s->lens), free(s->offsets), free(s->last), free(s->ones);
    memset(s, 0, sizeof *s);
}

attn_status mixed_seqs_init(mixed_seqs *s, int n, int min, int max, int q_heads, int kv_heads,
                            int head_dim)
{
    memset(s, 0, sizeof *s);
    s->n = n, s->q_heads = q_heads, s->kv_heads = kv_heads, s->head_dim = head_dim;
    s->lens = malloc(sizeof *s->lens * (size_t)n);
    s->offsets = malloc(sizeof *s->offsets * (size_t)n);
    s->last = malloc(sizeof *s->last * (size_t)n);
    s->ones = malloc(sizeof *s->ones * (size_t)n);
    if (!s->lens || !s->offsets || !s->last || !s->ones) return ATTN_ERROR_OUT_OF_MEMORY;
    bench_mixed_lengths(n, min, max, s->lens);
    long long total = 0;
    for (int b = 0; b < n; b++) {
        if (total + s->lens[b] > INT_MAX) return ATTN_ERROR_INVALID_ARGUMENT; /* one token axis */
        s->offsets[b] = (int)total;
        s->last[b] = (int)total + s->lens[b] - 1;
        s->ones[b] = 1;
        total += s->lens[b];
        if (s->lens[b] > s->longest) s->longest = s->lens[b];
    }
    s->total = (int)total;
    return ATTN_SUCCESS;
}

void mixed_type_free(mixed_type *r)
{
    for (int i = 0; i < BENCH_MAX_BLOCKS; i++) attn_kv_cache_release(r->caches[i]);
    cl_mem m[4] = {r->bq, r->bo, r->bk, r->bv};
    for (int i = 0; i < 4; i++)
        if (m[i]) clReleaseMemObject(m[i]);
    free(r->hq), free(r->hk), free(r->hv), free(r->stage);
    memset(r, 0, sizeof *r);
}

/* Blocks the sequences hold at a step: sum of ceil(lens[b] / block). */
static int pool_blocks(const mixed_seqs *s, int block)
{
    long long blocks = 0;
    for (int b = 0; b < s->n; b++) blocks += (s->lens[b] + block - 1) / block;
    return blocks > INT_MAX ? INT_MAX : (int)blocks;
}

/* Cache i of r, filled with each sequence's first lens[b] - 1 tokens. */
static attn_status fill_cache(attn_context *ctx, const mixed_seqs *s, int block, mixed_type *r,
                              int i, int *starts, int *counts, const char **step)
{
    const attn_kv_cache_desc d = {.batch = s->n, .kv_heads = s->kv_heads,
                                  .head_dim = s->head_dim, .capacity = s->longest,
                                  .dtype = r->dtype, .block_size = block,
                                  .num_blocks = block ? pool_blocks(s, block) : 0,
                                  .storage = r->storage};
    r->descs[i] = d;
    attn_status st;
    *step = "attn_kv_cache_bytes";
    if ((st = attn_kv_cache_bytes(&d, &r->bytes[i])) != ATTN_SUCCESS) return st;
    *step = "attn_kv_cache_create_desc";
    if ((st = attn_kv_cache_create_desc(ctx, &d, &r->caches[i])) != ATTN_SUCCESS) return st;
    /* contiguous in one append; paged a block of every sequence at a time,
     * as a batch growing together takes them */
    *step = "attn_kv_cache_append_rows";
    const int rows = block ? block : s->longest;
    for (int t0 = 0; t0 < s->longest - 1 && st == ATTN_SUCCESS; t0 += rows) {
        for (int b = 0; b < s->n; b++) {
            const int left = s->lens[b] - 1 - t0;
            counts[b] = left < 0 ? 0 : left < rows ? left : rows;
            starts[b] = counts[b] ? s->offsets[b] + t0 : 0;
        }
        st = attn_kv_cache_append_rows(r->caches[i], &r->tk, &r->tv, s->total, starts, counts,
                                       NULL);
    }
    return st;
}

attn_status mixed_type_setup(attn_context *ctx, const mixed_seqs *s, attn_dtype t,
                             attn_kv_storage storage, int keep_host, const int *blocks,
                             int nblocks, mixed_type *r, const char **step)
{
    memset(r, 0, sizeof *r);
    r->dtype = t;
    r->storage = storage;
    const attn_problem p = {.batch = s->n, .q_heads = s->q_heads, .kv_heads = s->kv_heads,
                            .head_dim = s->head_dim, .q_len = 1, .kv_len = s->longest,
                            .dtype = t, .causal = 1, .scale = 0.0f};
    r->p = p;
    const size_t D = (size_t)s->head_dim;
    const size_t nq = (size_t)s->n * s->q_heads * D, nkv = (size_t)s->kv_heads * s->total * D;
    r->esize = attn_dtype_size(t);
    r->stage = malloc(nq * r->esize);
    if (keep_host) {
        r->hq = malloc(nq * sizeof *r->hq), r->hk = malloc(nkv * sizeof *r->hk);
        r->hv = malloc(nkv * sizeof *r->hv);
    }
    *step = "host allocation";
    if (!r->stage || (keep_host && (!r->hq || !r->hk || !r->hv))) return ATTN_ERROR_OUT_OF_MEMORY;
    uint64_t rng = TOOL_SEED;
    float *host[3] = {r->hq, r->hk, r->hv};
    const size_t count[3] = {nq, nkv, nkv};
    cl_mem *dev[3] = {&r->bq, &r->bk, &r->bv};
    attn_status st;
    for (int i = 0; i < 3; i++)
        if ((st = tool_random_input(ctx, t, count[i], &rng, -1, 1, CL_MEM_READ_WRITE, host[i],
                                    dev[i], step)) != ATTN_SUCCESS)
            return st;
    if ((st = tool_output_buffer(ctx, nq * r->esize, &r->bo, step)) != ATTN_SUCCESS) return st;
    r->tq = tool_bhsd(r->bq, s->q_heads, 1, s->head_dim);
    r->to = tool_bhsd(r->bo, s->q_heads, 1, s->head_dim);
    r->tk = tool_bhsd(r->bk, s->kv_heads, s->total, s->head_dim);
    r->tv = tool_bhsd(r->bv, s->kv_heads, s->total, s->head_dim);
    r->tk.stride_batch = r->tv.stride_batch = 0; /* every sequence on the one axis */
    int *starts = malloc(sizeof *starts * (size_t)s->n);
    int *counts = malloc(sizeof *counts * (size_t)s->n);
    *step = "host allocation";
    st = starts && counts ? ATTN_SUCCESS : ATTN_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < nblocks && st == ATTN_SUCCESS; i++)
        st = fill_cache(ctx, s, blocks[i], r, i, starts, counts, step);
    free(starts), free(counts);
    if (st == ATTN_SUCCESS) clFinish(attn_context_queue(ctx));
    return st;
}

attn_status mixed_step(attn_context *ctx, const mixed_seqs *s, const mixed_type *r, int i,
                       const char **step)
{
    *step = "attn_kv_cache_append_rows";
    attn_status st = attn_kv_cache_append_rows(r->caches[i], &r->tk, &r->tv, s->total, s->last,
                                               s->ones, NULL);
    if (st != ATTN_SUCCESS) return st;
    *step = "attn_decode";
    return attn_decode(ctx, r->caches[i], &r->p, &r->tq, &r->to, NULL, NULL, NULL);
}

attn_status mixed_rewind(const mixed_seqs *s, const mixed_type *r, int i)
{
    attn_status st = ATTN_SUCCESS;
    for (int b = 0; b < s->n && st == ATTN_SUCCESS; b++)
        st = attn_kv_cache_truncate(r->caches[i], b, s->lens[b] - 1);
    return st;
}

attn_status mixed_reference(const mixed_seqs *s, const mixed_type *r, float *ref)
{
    const size_t D = (size_t)s->head_dim, rows = (size_t)s->kv_heads * s->longest * D;
    float *k = malloc(rows * sizeof *k), *v = malloc(rows * sizeof *v);
    attn_status st = k && v && r->hk ? ATTN_SUCCESS : ATTN_ERROR_OUT_OF_MEMORY;
    for (int b = 0; b < s->n && st == ATTN_SUCCESS; b++) {
        const size_t len = (size_t)s->lens[b];
        for (int h = 0; h < s->kv_heads; h++) { /* sequence b's rows of head h, on their own */
            const size_t from = ((size_t)h * s->total + s->offsets[b]) * D;
            memcpy(k + h * len * D, r->hk + from, len * D * sizeof *k);
            memcpy(v + h * len * D, r->hv + from, len * D * sizeof *v);
        }
        attn_problem p = r->p;
        p.batch = 1;
        p.kv_len = s->lens[b];
        const size_t q = (size_t)b * s->q_heads * D;
        st = tool_reference(&p, NULL, r->hq + q, k, v, ref + q);
    }
    free(k), free(v);
    return st;
}
