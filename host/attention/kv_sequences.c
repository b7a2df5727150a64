/* kv_sequences.c -- a server's calls on the sequences of a KV cache: take
 * and free slots, fork a sequence (shared pages when paged, a device copy
 * when contiguous), read a sequence's K/V back to the host, and the pool's
 * counts. */
#define _POSIX_C_SOURCE 200809L
#include "attention/convert.h"
#include "attention/decode.h"
#include "attention/kv_quant.h"
#include "core/context.h"
#include "core/errors.h"
#include "core/launch.h"

#include <stdlib.h>
#include <string.h>

#define INVALID(ctx, ...) ATTN_FAIL((ctx), ATTN_ERROR_INVALID_ARGUMENT, __VA_ARGS__)

static attn_status check_seq(attn_kv_cache *c, int seq, const char *name)
{
    ATTN_CHECK(c->ctx, seq < 0 || seq >= c->batch, ATTN_ERROR_INVALID_ARGUMENT,
               "%s = %d is outside 0..%d", name, seq, c->batch - 1);
    return ATTN_SUCCESS;
}

attn_status attn_kv_cache_seq_add(attn_kv_cache *c, int *seq)
{
    if (!c) return attn_fail_null(__func__, "cache");
    attn_context *ctx = c->ctx;
    attn_call_begin(ctx, __func__);
    attn_status st = ATTN_SUCCESS;
    int b = 0;
    while (b < c->batch && (c->taken[b] || c->len[b] > 0)) b++;
    if (!seq) st = INVALID(ctx, "seq is NULL");
    else if (b == c->batch)
        st = ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "all %d sequence slots are taken or "
                       "hold tokens; remove one (attn_kv_cache_seq_remove) first", c->batch);
    else {
        c->taken[b] = 1;
        *seq = b;
    }
    attn_call_end(ctx);
    return st;
}

attn_status attn_kv_cache_seq_remove(attn_kv_cache *c, int seq)
{
    if (!c) return attn_fail_null(__func__, "cache");
    attn_context *ctx = c->ctx;
    attn_call_begin(ctx, __func__);
    attn_status st = check_seq(c, seq, "seq");
    if (st == ATTN_SUCCESS) {
        attn_kv_pool_shrink(c, seq, 0);
        c->len[seq] = 0;
        c->taken[seq] = 0;
    }
    attn_call_end(ctx);
    return st;
}

/* Contiguous fork: src's rows 0..len-1 of every head into dst's, for each
 * buffer with `unit` bytes per row (K, V: dim_pad elements; scales: one
 * float). Page b is sequence b, heads [kv_heads][rows] inside it. */
static attn_status copy_rows(attn_kv_cache *c, cl_mem buf, size_t unit, int src, int dst)
{
    const size_t slice = unit * (size_t)c->page_rows;
    const size_t from[3] = {0, 0, (size_t)src * c->kv_heads};
    const size_t to[3] = {0, 0, (size_t)dst * c->kv_heads};
    const size_t region[3] = {unit * (size_t)c->len[src], 1, (size_t)c->kv_heads};
    cl_int err = clEnqueueCopyBufferRect(c->ctx->queue, buf, buf, from, to, region, slice, slice,
                                         slice, slice, 0, NULL, NULL);
    return err == CL_SUCCESS ? ATTN_SUCCESS
                             : attn_fail_cl(c->ctx, err, "clEnqueueCopyBufferRect (fork)");
}

static attn_status fork_locked(attn_kv_cache *c, int src, int dst)
{
    attn_context *ctx = c->ctx;
    attn_status st;
    if ((st = check_seq(c, src, "src")) != ATTN_SUCCESS ||
        (st = check_seq(c, dst, "dst")) != ATTN_SUCCESS)
        return st;
    if (src == dst) return INVALID(ctx, "src and dst are both sequence %d", src);
    if (c->len[dst] > 0)
        return INVALID(ctx, "dst: sequence %d holds %d token%s; a fork needs an empty one "
                       "(attn_kv_cache_seq_remove it first)", dst, c->len[dst],
                       c->len[dst] == 1 ? "" : "s");
    if (c->append_failure[0])
        return INVALID(ctx, "the cache's last append failed, so src may lack its last keys; "
                       "append them (successfully) first. That append said: %s",
                       c->append_failure);
    if (!c->paged && c->len[src] > 0) {
        if ((st = attn_kv_copy_buffers(c, copy_rows, src, dst)) != ATTN_SUCCESS) return st;
    }
    attn_kv_pool_share(c, src, dst);
    c->len[dst] = c->len[src];
    c->taken[dst] = 1;
    return ATTN_SUCCESS;
}

attn_status attn_kv_cache_seq_fork(attn_kv_cache *c, int src, int dst)
{
    if (!c) return attn_fail_null(__func__, "cache");
    attn_call_begin(c->ctx, __func__);
    attn_status st = fork_locked(c, src, dst);
    attn_call_end(c->ctx);
    return st;
}

/* Rows first..first+n-1 of sequence b (all inside page `page`, from row
 * `at` of it) into host rows out_row.. of [kv_heads][count] rows of
 * `unit` device bytes, `keep` of them copied per row. Blocking. */
static attn_status read_rows(attn_kv_cache *c, cl_mem buf, size_t unit, size_t keep, int page,
                             int at, int n, int out_row, int count, void *out)
{
    const size_t slice = unit * attn_kv_head_stride(c); /* a head's rows to the next's */
    const size_t from[3] = {0, (size_t)page * attn_kv_page_stride(c) + (size_t)at, 0};
    const size_t to[3] = {0, (size_t)out_row, 0};
    const size_t region[3] = {keep, (size_t)n, (size_t)c->kv_heads};
    cl_int err = clEnqueueReadBufferRect(c->ctx->queue, buf, CL_TRUE, from, to, region, unit,
                                         slice, keep, keep * (size_t)count, out, 0, NULL, NULL);
    return err == CL_SUCCESS ? ATTN_SUCCESS
                             : attn_fail_cl(c->ctx, err, "clEnqueueReadBufferRect (read)");
}

/* One of K or V (with its scales when int8) of tokens first..first+count-1
 * into out, [kv_heads][count][head_dim] of the cache's dtype, or of an
 * int8 cache with int8_as_f32, floats before that rounding. */
static attn_status read_one(attn_kv_cache *c, cl_mem buf, cl_mem scales, int seq, int first,
                            int count, void *out, int int8_as_f32)
{
    const int int8 = c->storage == ATTN_KV_INT8, D = c->head_dim;
    const size_t es = attn_dtype_size(c->dtype), n = (size_t)c->kv_heads * count * D;
    signed char *q = int8 ? malloc(n) : NULL;
    float *s = int8 ? malloc(sizeof *s * (size_t)c->kv_heads * count) : NULL;
    float *f = int8 ? int8_as_f32 ? out : malloc(sizeof *f * n) : NULL;
    attn_status st = ATTN_SUCCESS;
    if (int8 && (!q || !s || !f)) st = ATTN_FAIL(c->ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of "
                                                  "host memory");
    for (int t = first; t < first + count && st == ATTN_SUCCESS;) {
        /* a run of tokens inside one page */
        const int at = t % c->page_rows, n_run = c->page_rows - at < first + count - t
                                                     ? c->page_rows - at : first + count - t;
        const int page = c->paged ? c->table[(size_t)seq * c->max_pages + t / c->page_rows] : seq;
        if (int8) {
            st = read_rows(c, buf, (size_t)c->dim_pad, (size_t)D, page, at, n_run, t - first,
                           count, q);
            if (st == ATTN_SUCCESS)
                st = read_rows(c, scales, sizeof(float), sizeof(float), page, at, n_run,
                               t - first, count, s);
        } else {
            st = read_rows(c, buf, es * c->dim_pad, es * D, page, at, n_run, t - first, count,
                           out);
        }
        t += n_run;
    }
    if (st == ATTN_SUCCESS && int8) {
        for (size_t i = 0; i < n; i++) f[i] = attn_kv_dequantize(q[i], s[i / D]);
        if (!int8_as_f32) attn_store_from_f32(c->dtype, f, out, n);
    }
    free(q);
    free(s);
    if (f != out) free(f);
    return st;
}

attn_status attn_kv_read_locked(attn_kv_cache *c, int seq, int first, int count, void *k,
                                void *v, int int8_as_f32)
{
    attn_context *ctx = c->ctx;
    attn_status st = check_seq(c, seq, "seq");
    if (st == ATTN_SUCCESS && (first < 0 || count < 0 || first > c->len[seq] - count))
        st = c->len[seq] == 0
                 ? INVALID(ctx, "tokens first = %d, count = %d: sequence %d holds no tokens",
                           first, count, seq)
                 : INVALID(ctx, "tokens first = %d, count = %d are outside sequence %d's 0..%d",
                           first, count, seq, c->len[seq] - 1);
    if (st == ATTN_SUCCESS && count > 0) st = attn_queue_order(ctx);
    if (st == ATTN_SUCCESS && count > 0 && k)
        st = read_one(c, c->k, c->k_scale, seq, first, count, k, int8_as_f32);
    if (st == ATTN_SUCCESS && count > 0 && v)
        st = read_one(c, c->v, c->v_scale, seq, first, count, v, int8_as_f32);
    return st;
}

attn_status attn_kv_cache_read(attn_kv_cache *c, int seq, int first, int count, void *k,
                               void *v)
{
    if (!c) return attn_fail_null(__func__, "cache");
    attn_call_begin(c->ctx, __func__);
    const attn_status st = attn_kv_read_locked(c, seq, first, count, k, v, 0);
    attn_call_end(c->ctx);
    return st;
}

attn_status attn_kv_cache_pool(const attn_kv_cache *c, int *free_blocks, int *total)
{
    if (!c) return attn_fail_null(__func__, "cache");
    attn_call_begin(c->ctx, __func__);
    if (free_blocks) *free_blocks = c->paged ? c->free_pages : 0;
    if (total) *total = c->num_pages;
    attn_call_end(c->ctx);
    return ATTN_SUCCESS;
}
