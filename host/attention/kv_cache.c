/* kv_cache.c -- the KV cache object: device K/V in the plain layout, the
 * host's record of each sequence's length (the one truth about positions),
 * ragged appends from any rows of a block through cl/kv_append.cl,
 * truncation and reset. */
#define _POSIX_C_SOURCE 200809L
#include "attention/decode.h"
#include "core/context.h"
#include "core/errors.h"
#include "core/launch.h"
#include "attention/validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INVALID(ctx, ...) ATTN_FAIL((ctx), ATTN_ERROR_INVALID_ARGUMENT, __VA_ARGS__)

static attn_status create_locked(attn_context *ctx, int batch, int kv_heads, int head_dim,
                                 int capacity, attn_dtype dtype, attn_kv_cache **out)
{
    ATTN_CHECK(ctx, !out, ATTN_ERROR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    ATTN_CHECK(ctx, batch <= 0, ATTN_ERROR_INVALID_ARGUMENT, "batch = %d must be positive", batch);
    ATTN_CHECK(ctx, kv_heads <= 0, ATTN_ERROR_INVALID_ARGUMENT,
               "kv_heads = %d must be positive", kv_heads);
    ATTN_CHECK(ctx, head_dim <= 0 || head_dim > 256, ATTN_ERROR_INVALID_ARGUMENT,
               "head_dim = %d is outside 1..256", head_dim);
    ATTN_CHECK(ctx, capacity <= 0 || capacity > (1 << 30), ATTN_ERROR_INVALID_ARGUMENT,
               "capacity = %d is outside 1..2^30", capacity);
    ATTN_CHECK(ctx, (unsigned)dtype > ATTN_BF16, ATTN_ERROR_INVALID_ARGUMENT,
               "dtype = %d is not an attn_dtype", (int)dtype);

    const int dim_pad = attn_kv_dim_pad(head_dim);
    int rows = (capacity + ATTN_KV_ROW_ALIGN - 1) / ATTN_KV_ROW_ALIGN * ATTN_KV_ROW_ALIGN;
    /* Keep the heads' stride off large powers of two: the work-items stream
     * different heads at once, and 8 MiB-aligned streams (kv 16384) ran
     * 3-6% slower than with one spare block per head, measured on PoCL. */
    if (rows % (8 * ATTN_KV_ROW_ALIGN) == 0) rows += ATTN_KV_ROW_ALIGN;
    size_t bytes = attn_dtype_size(dtype);
    const size_t factors[] = {(size_t)batch, (size_t)kv_heads, (size_t)rows, (size_t)dim_pad};
    for (size_t i = 0; i < sizeof factors / sizeof factors[0]; i++)
        ATTN_CHECK(ctx, __builtin_mul_overflow(bytes, factors[i], &bytes),
                   ATTN_ERROR_INVALID_ARGUMENT, "batch * kv_heads * capacity * head_dim overflows");
    ATTN_CHECK(ctx, bytes > ctx->max_alloc, ATTN_ERROR_OUT_OF_MEMORY,
               "the cache's K (and V) need %zu bytes each; the device allows %llu per buffer",
               bytes, (unsigned long long)ctx->max_alloc);

    attn_kv_cache *c = calloc(1, sizeof *c);
    int *len = calloc((size_t)batch, sizeof *len);
    if (!c || !len) {
        free(c);
        free(len);
        return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    *c = (attn_kv_cache){.ctx = ctx, .batch = batch, .kv_heads = kv_heads, .head_dim = head_dim,
                         .capacity = capacity, .dtype = dtype, .dim_pad = dim_pad, .rows = rows,
                         .page_rows = rows, .num_pages = batch, .max_pages = 1, .len = len};
    attn_status st = ATTN_SUCCESS;
    cl_int err;
    c->k = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err == CL_SUCCESS) c->v = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS) {
        st = err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
                     err == CL_OUT_OF_HOST_MEMORY || err == CL_INVALID_BUFFER_SIZE
                 ? ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "clCreateBuffer of %zu bytes for the "
                             "KV cache failed: %s", bytes, attn_cl_error_name(err))
                 : attn_fail_cl(ctx, err, "clCreateBuffer (KV cache)");
        goto fail;
    }
    /* Zero everything: the row padding past head_dim must read as 0 in the
     * decode kernels' whole-vector loads, and rows never appended stay
     * finite. Blocking, so the cache is ready when create returns. */
    const unsigned char zero = 0;
    cl_event filled[2] = {NULL, NULL};
    err = clEnqueueFillBuffer(ctx->queue, c->k, &zero, 1, 0, bytes, 0, NULL, &filled[0]);
    if (err == CL_SUCCESS)
        err = clEnqueueFillBuffer(ctx->queue, c->v, &zero, 1, 0, bytes, 0, NULL, &filled[1]);
    if (err == CL_SUCCESS) err = clWaitForEvents(2, filled);
    for (int i = 0; i < 2; i++)
        if (filled[i]) clReleaseEvent(filled[i]);
    if (err != CL_SUCCESS) {
        st = attn_fail_cl(ctx, err, "clEnqueueFillBuffer (KV cache)");
        goto fail;
    }
    *out = c;
    return ATTN_SUCCESS;
fail:
    if (c->k) clReleaseMemObject(c->k);
    if (c->v) clReleaseMemObject(c->v);
    free(c->len);
    free(c);
    return st;
}

attn_status attn_kv_cache_create(attn_context *ctx, int batch, int kv_heads, int head_dim,
                                 int capacity, attn_dtype dtype, attn_kv_cache **out)
{
    if (out) *out = NULL;
    if (!ctx) return attn_fail_null(__func__, "ctx");
    attn_call_begin(ctx, __func__);
    attn_status st = create_locked(ctx, batch, kv_heads, head_dim, capacity, dtype, out);
    attn_call_end(ctx);
    return st;
}

void attn_kv_cache_release(attn_kv_cache *c)
{
    if (!c) return;
    /* OpenCL keeps the buffers alive until enqueued commands finish */
    cl_mem mems[] = {c->k, c->v, c->part_o.mem, c->part_lse.mem};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i]) clReleaseMemObject(mems[i]);
    free(c->len);
    free(c);
}

/* Sequence b's rows of the block: (first cache row, rows, first block row). */
static cl_int4 append_rows_of(const attn_kv_cache *c, int b, int block_len, const int *starts,
                              const int *counts)
{
    return (cl_int4){{c->len[b], counts ? counts[b] : block_len, starts ? starts[b] : 0, 0}};
}

static attn_status append_locked(attn_kv_cache *c, const attn_tensor *k, const attn_tensor *v,
                                 int block_len, const int *starts, const int *counts,
                                 cl_event *done)
{
    attn_context *ctx = c->ctx;
    attn_status st;
    if (done) *done = NULL;
    ATTN_CHECK(ctx, block_len < 0 || block_len > (1 << 30), ATTN_ERROR_INVALID_ARGUMENT,
               "block_len = %d is outside 0..2^30", block_len);
    /* every sequence first: nothing is written unless all fit; the rows
     * of the block before the capacity, the likelier mistake */
    int most = 0;
    for (int b = 0; b < c->batch; b++) {
        const cl_int4 r = append_rows_of(c, b, block_len, starts, counts);
        const int n = r.s[1], s = r.s[2];
        if (n < 0 || n > block_len)
            return INVALID(ctx, "sequence %d: counts[%d] = %d is outside 0..block_len (%d)", b,
                           b, n, block_len);
        if (s < 0) return INVALID(ctx, "sequence %d: starts[%d] = %d is below zero", b, b, s);
        if (s > block_len - n)
            return INVALID(ctx, "sequence %d: its rows starts[%d] + counts[%d] = %d + %d pass "
                           "block_len %d%s; nothing was appended", b, b, b, s, n, block_len,
                           counts ? "" : " (counts is NULL: block_len rows each)");
        if (n > most) most = n;
    }
    for (int b = 0; b < c->batch; b++) {
        const int n = append_rows_of(c, b, block_len, starts, counts).s[1];
        if (n > c->capacity - c->len[b])
            return INVALID(ctx, "sequence %d: appending %d token%s to its %d would pass the "
                           "cache's capacity %d; nothing was appended", b, n, n == 1 ? "" : "s",
                           c->len[b], c->capacity);
    }
    /* the whole block lies in the buffers, so each sequence's rows (inside
     * it, checked above) do too; stride_batch 0 (a packed axis) is allowed */
    if (most > 0) {
        const int D = c->head_dim;
        size_t hi;
        if ((st = attn_validate_tensor(ctx, k, "k", c->batch, c->kv_heads, block_len, D,
                                       attn_dtype_size(c->dtype), &hi)) != ATTN_SUCCESS ||
            (st = attn_validate_tensor(ctx, v, "v", c->batch, c->kv_heads, block_len, D,
                                       attn_dtype_size(c->dtype), &hi)) != ATTN_SUCCESS)
            return st;
        ATTN_CHECK(ctx, k->buffer == c->k || k->buffer == c->v || v->buffer == c->k ||
                            v->buffer == c->v,
                   ATTN_ERROR_INVALID_ARGUMENT, "k and v must not be the cache's own buffers");
    }

    cl_int err;
    if (most == 0) { /* nothing to copy; still hand back an event if asked */
        if (done && (err = clEnqueueMarkerWithWaitList(ctx->queue, 0, NULL, done)) != CL_SUCCESS)
            return attn_fail_cl(ctx, err, "clEnqueueMarkerWithWaitList");
        return ATTN_SUCCESS;
    }
    cl_int4 *pos = malloc(sizeof *pos * (size_t)c->batch);
    if (!pos) return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int b = 0; b < c->batch; b++) pos[b] = append_rows_of(c, b, block_len, starts, counts);
    cl_kernel kern = NULL;
    cl_event ev = NULL;
    cl_mem posbuf = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                   sizeof *pos * (size_t)c->batch, pos, &err);
    free(pos);
    if (err != CL_SUCCESS) return attn_fail_cl(ctx, err, "clCreateBuffer (append positions)");

    char opts[64];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DELEM_BYTES=%d", (int)attn_dtype_size(c->dtype));
    const char *sources[] = {"kv_append.cl"};
    if ((st = attn_kernel_build(ctx, sources, 1, opts, "attn_kv_append", &kern)) != ATTN_SUCCESS)
        goto done;
    const cl_ulong4 kg = attn_tensor_geometry(k), vg = attn_tensor_geometry(v);
    const cl_int D = c->head_dim, DP = c->dim_pad, rows = c->rows, hkv = c->kv_heads;
    const attn_karg args[] = {ATTN_KARG(k->buffer), ATTN_KARG(kg),  ATTN_KARG(v->buffer),
                              ATTN_KARG(vg),        ATTN_KARG(c->k), ATTN_KARG(c->v),
                              ATTN_KARG(posbuf),    ATTN_KARG(D),    ATTN_KARG(DP),
                              ATTN_KARG(rows),      ATTN_KARG(hkv)};
    if ((st = attn_kernel_set_args(ctx, kern, args, ATTN_NARGS(args))) != ATTN_SUCCESS) goto done;
    /* an out-of-order queue could run the copy before the caller's writes
     * of k and v, or after a decode that should see it */
    const size_t global[3] = {(size_t)most, (size_t)c->kv_heads, (size_t)c->batch};
    if ((st = attn_queue_order(ctx)) != ATTN_SUCCESS ||
        (st = attn_kernel_enqueue(ctx, kern, 3, global, NULL, 0, NULL, &ev)) != ATTN_SUCCESS ||
        (st = attn_queue_order(ctx)) != ATTN_SUCCESS)
        goto done;
    /* enqueued: only now do the lengths move */
    for (int b = 0; b < c->batch; b++)
        c->len[b] += append_rows_of(c, b, block_len, starts, counts).s[1];
    if (done) {
        *done = ev;
        ev = NULL;
    }
done:
    if (ev) clReleaseEvent(ev);
    if (kern) clReleaseKernel(kern);
    clReleaseMemObject(posbuf); /* the enqueued kernel keeps it alive */
    return st;
}

/* Both public appends: fn names the one called, in its messages. */
static attn_status append_call(attn_kv_cache *c, const char *fn, const attn_tensor *k,
                               const attn_tensor *v, int block_len, const int *starts,
                               const int *counts, cl_event *done)
{
    if (!c) return attn_fail_null(fn, "cache");
    attn_context *ctx = c->ctx;
    attn_call_begin(ctx, fn);
    attn_status st = append_locked(c, k, v, block_len, starts, counts, done);
    if (st == ATTN_SUCCESS) c->append_failure[0] = 0;
    else snprintf(c->append_failure, sizeof c->append_failure, "%s", ctx->error);
    attn_call_end(ctx);
    return st;
}

attn_status attn_kv_cache_append_rows(attn_kv_cache *c, const attn_tensor *k,
                                      const attn_tensor *v, int block_len, const int *starts,
                                      const int *counts, cl_event *done)
{
    return append_call(c, __func__, k, v, block_len, starts, counts, done);
}

attn_status attn_kv_cache_append(attn_kv_cache *c, const attn_tensor *k, const attn_tensor *v,
                                 int block_len, const int *counts, cl_event *done)
{
    return append_call(c, __func__, k, v, block_len, NULL, counts, done);
}

attn_status attn_kv_cache_lengths(const attn_kv_cache *c, int *lengths)
{
    if (!c) return attn_fail_null(__func__, "cache");
    attn_context *ctx = c->ctx;
    attn_call_begin(ctx, __func__);
    attn_status st = ATTN_SUCCESS;
    if (!lengths) st = INVALID(ctx, "lengths is NULL");
    else memcpy(lengths, c->len, sizeof *lengths * (size_t)c->batch);
    attn_call_end(ctx);
    return st;
}

attn_status attn_kv_cache_truncate(attn_kv_cache *c, int seq, int length)
{
    if (!c) return attn_fail_null(__func__, "cache");
    attn_context *ctx = c->ctx;
    attn_call_begin(ctx, __func__);
    attn_status st = ATTN_SUCCESS;
    if (seq < 0 || seq >= c->batch)
        st = INVALID(ctx, "seq = %d is outside 0..%d", seq, c->batch - 1);
    else if (length < 0)
        st = INVALID(ctx, "sequence %d: length %d is below zero", seq, length);
    else if (length > c->len[seq])
        st = INVALID(ctx, "sequence %d holds %d token%s; truncating to %d would grow it "
                     "(append instead)", seq, c->len[seq], c->len[seq] == 1 ? "" : "s", length);
    else
        c->len[seq] = length;
    attn_call_end(ctx);
    return st;
}

attn_status attn_kv_cache_reset(attn_kv_cache *c, int seq)
{
    if (!c) return attn_fail_null(__func__, "cache");
    attn_context *ctx = c->ctx;
    attn_call_begin(ctx, __func__);
    attn_status st = ATTN_SUCCESS;
    if (seq == -1) memset(c->len, 0, sizeof *c->len * (size_t)c->batch);
    else if (seq < 0 || seq >= c->batch)
        st = INVALID(ctx, "seq = %d is outside 0..%d (or -1 for all)", seq, c->batch - 1);
    else c->len[seq] = 0;
    attn_call_end(ctx);
    return st;
}

attn_status attn_kv_cache_tensors(const attn_kv_cache *c, attn_tensor *k, attn_tensor *v)
{
    if (!c) return attn_fail_null(__func__, "cache");
    const size_t row = (size_t)c->dim_pad, head = row * (size_t)c->rows;
    const attn_tensor t = {c->k, 0, head * (size_t)c->kv_heads, head, row};
    if (k) *k = t;
    if (v) {
        *v = t;
        v->buffer = c->v;
    }
    return ATTN_SUCCESS;
}
