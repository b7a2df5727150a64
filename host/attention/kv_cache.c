/* kv_cache.c -- the KV cache object: device K/V in the plain layout, the
 * host's record of each sequence's length (the one truth about positions),
 * ragged appends from any rows of a block through cl/kv_append.cl,
 * truncation and reset. */
#define _POSIX_C_SOURCE 200809L
#include "attention/decode.h"
#include "attention/mem_view.h"
#include "core/context.h"
#include "core/errors.h"
#include "core/launch.h"
#include "attention/validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INVALID(ctx, ...) ATTN_FAIL((ctx), ATTN_ERROR_INVALID_ARGUMENT, __VA_ARGS__)

/* A zero-filled device buffer of n bytes (0: none), or *m left NULL. */
static attn_status zeroed_buffer(attn_context *ctx, size_t n, const char *what, cl_mem *m)
{
    if (n == 0) return ATTN_SUCCESS;
    ATTN_CHECK(ctx, n > ctx->max_alloc, ATTN_ERROR_OUT_OF_MEMORY,
               "the cache's %s needs %zu bytes; the device allows %llu per buffer", what, n,
               (unsigned long long)ctx->max_alloc);
    cl_int err;
    *m = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE, n, NULL, &err);
    if (err != CL_SUCCESS)
        return err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
                       err == CL_OUT_OF_HOST_MEMORY || err == CL_INVALID_BUFFER_SIZE
                   ? ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "clCreateBuffer of %zu bytes for "
                               "the cache's %s failed: %s", n, what, attn_cl_error_name(err))
                   : attn_fail_cl(ctx, err, "clCreateBuffer (KV cache)");
    /* Zero: the row padding past head_dim must read as 0 in the decode
     * kernels' whole-vector loads, and rows never appended stay finite.
     * Blocking, so the cache is ready when create returns. */
    const unsigned char zero = 0;
    cl_event filled = NULL;
    err = clEnqueueFillBuffer(ctx->queue, *m, &zero, 1, 0, n, 0, NULL, &filled);
    if (err != CL_SUCCESS) return attn_fail_cl(ctx, err, "clEnqueueFillBuffer (KV cache)");
    err = clWaitForEvents(1, &filled);
    clReleaseEvent(filled);
    return err == CL_SUCCESS ? ATTN_SUCCESS
                             : attn_fail_cl(ctx, err, "clWaitForEvents (KV cache zero fill)");
}

/* name: how messages name d's fields ("desc->", or "" for the arguments
 * of attn_kv_cache_create) */
static attn_status create_locked(attn_context *ctx, const attn_kv_cache_desc *d,
                                 const char *name, attn_kv_cache **out)
{
    ATTN_CHECK(ctx, !out, ATTN_ERROR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    attn_kv_layout l;
    attn_status st = attn_kv_layout_of(ctx, d, name, &l);
    if (st != ATTN_SUCCESS) return st;

    attn_kv_cache *c = calloc(1, sizeof *c);
    int *len = calloc((size_t)d->batch, sizeof *len);
    unsigned char *taken = calloc((size_t)d->batch, 1);
    if (!c || !len || !taken) {
        free(c);
        free(len);
        free(taken);
        return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    *c = (attn_kv_cache){.ctx = ctx, .batch = d->batch, .kv_heads = d->kv_heads,
                         .head_dim = d->head_dim, .capacity = d->capacity, .dtype = d->dtype,
                         .storage = d->storage, .dim_pad = l.dim_pad, .rows = l.rows,
                         .paged = d->block_size > 0, .page_rows = l.page_rows,
                         .num_pages = l.num_pages, .max_pages = l.max_pages, .len = len,
                         .taken = taken};
    if ((st = zeroed_buffer(ctx, l.kv_bytes, "K", &c->k)) != ATTN_SUCCESS ||
        (st = zeroed_buffer(ctx, l.kv_bytes, "V", &c->v)) != ATTN_SUCCESS ||
        (st = zeroed_buffer(ctx, l.scale_bytes, "K scales", &c->k_scale)) != ATTN_SUCCESS ||
        (st = zeroed_buffer(ctx, l.scale_bytes, "V scales", &c->v_scale)) != ATTN_SUCCESS ||
        (st = attn_kv_pool_create(c)) != ATTN_SUCCESS) {
        attn_kv_cache_release(c);
        return st;
    }
    *out = c;
    return ATTN_SUCCESS;
}

attn_status attn_kv_cache_create_desc(attn_context *ctx, const attn_kv_cache_desc *desc,
                                      attn_kv_cache **out)
{
    if (out) *out = NULL;
    if (!ctx) return attn_fail_null(__func__, "ctx");
    attn_call_begin(ctx, __func__);
    attn_status st = create_locked(ctx, desc, "desc->", out);
    attn_call_end(ctx);
    return st;
}

attn_status attn_kv_cache_create_locked(attn_context *ctx, const attn_kv_cache_desc *desc,
                                        attn_kv_cache **out)
{
    return create_locked(ctx, desc, "desc->", out);
}

attn_status attn_kv_cache_create(attn_context *ctx, int batch, int kv_heads, int head_dim,
                                 int capacity, attn_dtype dtype, attn_kv_cache **out)
{
    if (out) *out = NULL;
    if (!ctx) return attn_fail_null(__func__, "ctx");
    attn_call_begin(ctx, __func__);
    const attn_kv_cache_desc d = {.batch = batch, .kv_heads = kv_heads, .head_dim = head_dim,
                                  .capacity = capacity, .dtype = dtype};
    attn_status st = create_locked(ctx, &d, "", out);
    attn_call_end(ctx);
    return st;
}

void attn_kv_cache_release(attn_kv_cache *c)
{
    if (!c) return;
    /* OpenCL keeps the buffers alive until enqueued commands finish */
    cl_mem mems[] = {c->k, c->v, c->k_scale, c->v_scale};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i]) clReleaseMemObject(mems[i]);
    attn_kv_pool_free(c);
    free(c->len);
    free(c->taken);
    free(c);
}

/* Sequence b's rows of the block: (first cache row, rows, first block row). */
static cl_int4 append_rows_of(const attn_kv_cache *c, int b, int block_len, const int *starts,
                              const int *counts)
{
    return (cl_int4){{c->len[b], counts ? counts[b] : block_len, starts ? starts[b] : 0, 0}};
}

/* The append kernel's options for an int8 cache (cl/kv_append.cl's
 * quantize_row): the block's type, and correctly rounded division where
 * the device offers it (OpenCL's default allows 2.5 ulp), so that the
 * device's quotients round as the host's attn_kv_quantize_row. */
static void append_int8_options(attn_context *ctx, const attn_kv_cache *c, char *opts,
                                size_t size)
{
    cl_device_fp_config fp = 0;
    if (clGetDeviceInfo(ctx->device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL))
        fp = 0; /* unknown: OpenCL's default division */
    const size_t n = strlen(opts);
    snprintf(opts + n, size - n, " -DKV_INT8 -DSTORAGE=%d%s", (int)c->dtype,
             fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT ? " -cl-fp32-correctly-rounded-divide-sqrt"
                                                       : "");
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
        /* nor sub-buffers cut from them (mem_view.h): the same memory */
        const cl_mem kr = attn_mem_view_of(k->buffer).root, vr = attn_mem_view_of(v->buffer).root;
        ATTN_CHECK(ctx, kr == c->k || kr == c->v || vr == c->k || vr == c->v,
                   ATTN_ERROR_INVALID_ARGUMENT, "k and v must not be the cache's own buffers "
                   "(nor sub-buffers of them)");
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
    int grown = 0;
    cl_mem posbuf = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                   sizeof *pos * (size_t)c->batch, pos, &err);
    free(pos);
    if (err != CL_SUCCESS) return attn_fail_cl(ctx, err, "clCreateBuffer (append positions)");

    char opts[128];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DELEM_BYTES=%d", (int)attn_dtype_size(c->dtype));
    if (c->storage == ATTN_KV_INT8) append_int8_options(ctx, c, opts, sizeof opts);
    const char *sources[] = {"kv_append.cl"};
    if ((st = attn_kernel_build(ctx, sources, 1, opts, "attn_kv_append", &kern)) != ATTN_SUCCESS)
        goto done;
    /* the pages last: a refusal (the pool exhausted) changes nothing */
    if ((st = attn_kv_pool_grow(c, counts, block_len)) != ATTN_SUCCESS) goto done;
    grown = 1;
    cl_mem table;
    if ((st = attn_kv_pool_table(c, &table)) != ATTN_SUCCESS) goto done;
    const cl_ulong4 kg = attn_tensor_geometry(k), vg = attn_tensor_geometry(v);
    const cl_int D = c->head_dim, DP = c->dim_pad, prow = c->page_rows;
    const cl_int maxp = c->max_pages;
    cl_mem ksc = c->k_scale ? c->k_scale : posbuf, vsc = c->v_scale ? c->v_scale : posbuf;
    const cl_ulong pstride = attn_kv_page_stride(c), hstride = attn_kv_head_stride(c);
    const attn_karg args[] = {ATTN_KARG(k->buffer), ATTN_KARG(kg),    ATTN_KARG(v->buffer),
                              ATTN_KARG(vg),        ATTN_KARG(c->k),  ATTN_KARG(c->v),
                              ATTN_KARG(posbuf),    ATTN_KARG(table), ATTN_KARG(maxp),
                              ATTN_KARG(D),         ATTN_KARG(DP),    ATTN_KARG(prow),
                              ATTN_KARG(pstride),   ATTN_KARG(hstride), ATTN_KARG(ksc),
                              ATTN_KARG(vsc)};
    if ((st = attn_kernel_set_args(ctx, kern, args, ATTN_NARGS(args))) != ATTN_SUCCESS) goto done;
    /* an out-of-order queue could run the copy before the caller's writes
     * of k and v, or after a decode that should see it */
    const size_t global[3] = {(size_t)most, (size_t)c->kv_heads, (size_t)c->batch};
    if ((st = attn_queue_order(ctx)) != ATTN_SUCCESS ||
        (st = attn_kernel_enqueue(ctx, kern, 3, global, NULL, 0, NULL, &ev)) != ATTN_SUCCESS)
        goto done;
    /* enqueued: the pages stay and only now do the lengths move. The copy
     * will run, so the ordering below must not fail the call, which the
     * caller would make again (test_cl_faults found it did): it falls back
     * to a wait, and only a device that can do neither reports an error
     * with the rows appended. */
    grown = 0;
    for (int b = 0; b < c->batch; b++)
        c->len[b] += append_rows_of(c, b, block_len, starts, counts).s[1];
    if ((st = attn_queue_order_after(ctx, ev)) != ATTN_SUCCESS) {
        /* ATTN_ERROR_OUT_OF_MEMORY (the barrier's likely failure) would read
         * as the pool's refusal, after which nothing changed: the status
         * is OPENCL, and the message says the rows were appended. The
         * barrier's message, without the call's name it begins with. */
        char why[ATTN_ERROR_MAX];
        const char *w = ctx->error;
        const size_t cn = ctx->call ? strlen(ctx->call) : 0;
        if (cn && strncmp(w, ctx->call, cn) == 0 && strncmp(w + cn, ": ", 2) == 0) w += cn + 2;
        snprintf(why, sizeof why, "%s", w);
        st = ATTN_FAIL(ctx, ATTN_ERROR_OPENCL, "the rows were appended (the lengths include "
                       "them), but nothing could order later work after them: %s", why);
        goto done;
    }
    if (done) {
        *done = ev;
        ev = NULL;
    }
done:
    if (grown) attn_kv_pool_ungrow(c, counts, block_len);
    if (ev) clReleaseEvent(ev);
    if (kern) clReleaseKernel(kern);
    clReleaseMemObject(posbuf); /* the enqueued kernel keeps it alive */
    return st;
}

/* Both public appends: fn names the one called, in its messages. */
attn_status attn_kv_cache_append_locked(attn_kv_cache *c, const attn_tensor *k,
                                        const attn_tensor *v, int block_len, cl_event *done)
{
    return append_locked(c, k, v, block_len, NULL, NULL, done);
}

static attn_status append_call(attn_kv_cache *c, const char *fn, const attn_tensor *k,
                               const attn_tensor *v, int block_len, const int *starts,
                               const int *counts, cl_event *done)
{
    if (done) *done = NULL; /* every failure leaves no event behind, this one too */
    if (!c) return attn_fail_null(fn, "cache");
    attn_context *ctx = c->ctx;
    attn_call_begin(ctx, fn);
    long long before = 0, after = 0;
    for (int b = 0; b < c->batch; b++) before += c->len[b];
    attn_status st = append_locked(c, k, v, block_len, starts, counts, done);
    for (int b = 0; b < c->batch; b++) after += c->len[b];
    /* only an append that adds rows lifts a failed one's refusal: one of
     * none (k and v not even read) cannot have put the lost step back */
    if (st == ATTN_SUCCESS && after > before) c->append_failure[0] = 0;
    else if (st != ATTN_SUCCESS)
        snprintf(c->append_failure, sizeof c->append_failure, "%s", ctx->error);
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
    else {
        attn_kv_pool_shrink(c, seq, length);
        c->len[seq] = length;
    }
    attn_call_end(ctx);
    return st;
}

attn_status attn_kv_cache_reset(attn_kv_cache *c, int seq)
{
    if (!c) return attn_fail_null(__func__, "cache");
    attn_context *ctx = c->ctx;
    attn_call_begin(ctx, __func__);
    attn_status st = ATTN_SUCCESS;
    if (seq < -1 || seq >= c->batch)
        st = INVALID(ctx, "seq = %d is outside 0..%d (or -1 for all)", seq, c->batch - 1);
    else
        for (int b = seq < 0 ? 0 : seq; b < (seq < 0 ? c->batch : seq + 1); b++) {
            attn_kv_pool_shrink(c, b, 0);
            c->len[b] = 0;
        }
    attn_call_end(ctx);
    return st;
}

void attn_kv_plain_tensors(const attn_kv_cache *c, attn_tensor *k, attn_tensor *v)
{
    const size_t row = (size_t)c->dim_pad, head = row * (size_t)c->rows;
    const attn_tensor t = {c->k, 0, head * (size_t)c->kv_heads, head, row};
    if (k) *k = t;
    if (v) {
        *v = t;
        v->buffer = c->v;
    }
}

attn_status attn_kv_cache_tensors(const attn_kv_cache *c, attn_tensor *k, attn_tensor *v)
{
    if (!c) return attn_fail_null(__func__, "cache");
    /* a call like the others: success clears ctx's last error too */
    attn_call_begin(c->ctx, __func__);
    attn_status st = ATTN_SUCCESS;
    if (c->paged || c->storage != ATTN_KV_AS_DTYPE)
        st = INVALID(c->ctx, "the cache is %s, so its K and V are not plain tensors; read them "
                     "with attn_kv_cache_read", c->paged ? "paged" : "quantized");
    else
        attn_kv_plain_tensors(c, k, v);
    attn_call_end(c->ctx);
    return st;
}
