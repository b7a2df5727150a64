/* layer.c -- the attention layer (the seed's ReadableCausalAttention with
 * GQA): one CLBlast GEMM for the q, k and v projections into a fused buffer,
 * attn_forward reading it in place by BSHD strides, and out_proj by GEMM. */
#define _POSIX_C_SOURCE 200809L
#include "core/context.h"
#include "core/errors.h"
#include "core/launch.h"
#include "attention/validate.h"
#include "attention/forward.h"
#include "attention/convert.h"
#include "blas/blas.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct attn_layer {
    attn_context *ctx;
    attn_layer_config cfg;
    size_t qkv_width;    /* (Hq + 2 Hkv) * D: q, then k, then v columns */
    size_t mixed_width;  /* Hq * D */
    cl_mem w_qkv, w_o;   /* f32 [qkv_width][d_model] and [d_model][mixed_width] */
    attn_scratch qkv;    /* [B, S, qkv_width] of the storage type */
    attn_scratch mixed;  /* [B, S, mixed_width] of the storage type: the attention's output */
    attn_scratch t_in, t_out; /* f16/bf16: f32 operand and result of a GEMM */
    pthread_mutex_t lock; /* one forward at a time: the buffers above are shared */
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static attn_status check_config(attn_context *ctx, const attn_layer_config *c)
{
    ATTN_CHECK(ctx, !c, ATTN_ERROR_INVALID_ARGUMENT, "cfg (the layer's configuration) is NULL");
    const struct { int value; const char *name; } sizes[] = {
        {c->d_model, "d_model"}, {c->q_heads, "q_heads"}, {c->kv_heads, "kv_heads"},
        {c->head_dim, "head_dim"}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        ATTN_CHECK(ctx, sizes[i].value <= 0, ATTN_ERROR_INVALID_ARGUMENT,
                   "cfg->%s = %d must be positive", sizes[i].name, sizes[i].value);
    ATTN_CHECK(ctx, c->head_dim > 256, ATTN_ERROR_INVALID_ARGUMENT,
               "cfg->head_dim = %d exceeds 256", c->head_dim);
    ATTN_CHECK(ctx, c->q_heads % c->kv_heads, ATTN_ERROR_INVALID_ARGUMENT,
               "cfg->q_heads = %d is not a multiple of cfg->kv_heads = %d", c->q_heads,
               c->kv_heads);
    ATTN_CHECK(ctx, (unsigned)c->dtype > ATTN_BF16, ATTN_ERROR_INVALID_ARGUMENT,
               "cfg->dtype = %d is not an attn_dtype", (int)c->dtype);
    ATTN_CHECK(ctx, !isfinite(c->scale), ATTN_ERROR_INVALID_ARGUMENT, "cfg->scale is not finite");
    /* as attn_validate_problem refuses p->scale, but named as the caller set it */
    ATTN_CHECK(ctx, !isfinite(c->scale * 1.4426950408889634f), ATTN_ERROR_INVALID_ARGUMENT,
               "cfg->scale = %g is too large: scale * log2(e) overflows a float", (double)c->scale);
    const double width = ((double)c->q_heads + 2.0 * c->kv_heads) * c->head_dim;
    ATTN_CHECK(ctx, width * c->d_model > 1e15 || (double)c->d_model > 1e9,
               ATTN_ERROR_INVALID_ARGUMENT, "cfg: d_model = %d with %.0f projection columns is "
               "too large", c->d_model, width);
    return ATTN_SUCCESS;
}

/* rows x cols floats, rounded through dtype, into a new device buffer. */
static attn_status upload(attn_context *ctx, attn_dtype t, const float *const *parts,
                          const size_t *rows, int nparts, size_t cols, cl_mem *out)
{
    size_t total = 0;
    for (int i = 0; i < nparts; i++) total += rows[i];
    const size_t n = total * cols;
    /* a valid layer this device or CLBlast cannot hold: refused, not failed */
    ATTN_CHECK(ctx, n * sizeof(float) > ctx->max_alloc, ATTN_ERROR_UNSUPPORTED,
               "the weights need %zu bytes, more than the device's max allocation (%llu bytes)",
               n * sizeof(float), (unsigned long long)ctx->max_alloc);
    ATTN_CHECK(ctx, n > (size_t)ATTN_CLBLAST_MAX_INDEX, ATTN_ERROR_UNSUPPORTED,
               "the weights hold %zu elements in one matrix; CLBlast indexes with int (at most "
               "%d)", n, ATTN_CLBLAST_MAX_INDEX);
    float *host = malloc(n * sizeof *host);
    void *narrow = t == ATTN_F32 ? NULL : malloc(n * attn_dtype_size(t));
    attn_status st = ATTN_SUCCESS;
    if (!host || (t != ATTN_F32 && !narrow)) {
        st = ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory for the weights");
        goto done;
    }
    size_t row = 0;
    for (int i = 0; i < nparts; row += rows[i], i++)
        memcpy(host + row * cols, parts[i], rows[i] * cols * sizeof *host);
    if (narrow) { /* the layer computes with the weights the storage type can hold */
        attn_store_from_f32(t, host, narrow, n);
        attn_load_to_f32(t, narrow, host, n);
    }
    cl_int err;
    *out = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * sizeof *host,
                          host, &err);
    if (err != CL_SUCCESS) {
        *out = NULL;
        st = attn_fail_cl(ctx, err, "clCreateBuffer (weights)");
    }
done:
    free(host);
    free(narrow);
    return st;
}

static void layer_free(attn_layer *l)
{
    if (l->w_qkv) clReleaseMemObject(l->w_qkv);
    if (l->w_o) clReleaseMemObject(l->w_o);
    attn_scratch *s[] = {&l->qkv, &l->mixed, &l->t_in, &l->t_out};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        if (s[i]->mem) clReleaseMemObject(s[i]->mem);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

attn_status attn_layer_create(attn_context *ctx, const attn_layer_config *cfg, const float *w_q,
                              const float *w_k, const float *w_v, const float *w_o,
                              attn_layer **out)
{
    if (out) *out = NULL;
    if (!ctx) return attn_fail_null(__func__, "ctx");
    attn_call_begin(ctx, __func__);
    attn_layer *l = NULL;
    attn_status st = check_config(ctx, cfg);
    if (st == ATTN_SUCCESS && !out)
        st = ATTN_FAIL(ctx, ATTN_ERROR_INVALID_ARGUMENT, "out (where the layer goes) is NULL");
    const float *const weights[] = {w_q, w_k, w_v, w_o};
    const char *const names[] = {"w_q", "w_k", "w_v", "w_o"};
    for (int i = 0; i < 4 && st == ATTN_SUCCESS; i++)
        if (!weights[i]) st = ATTN_FAIL(ctx, ATTN_ERROR_INVALID_ARGUMENT, "%s is NULL", names[i]);
    if (st == ATTN_SUCCESS) st = attn_clblast_required(ctx); /* arguments first, then the build */
    if (st != ATTN_SUCCESS) goto done;
    l = calloc(1, sizeof *l);
    if (!l || pthread_mutex_init(&l->lock, NULL) != 0) {
        free(l);
        l = NULL;
        st = ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory for the layer");
        goto done;
    }
    l->ctx = ctx;
    l->cfg = *cfg;
    const size_t D = (size_t)cfg->head_dim, dm = (size_t)cfg->d_model;
    l->mixed_width = (size_t)cfg->q_heads * D;
    l->qkv_width = l->mixed_width + 2 * (size_t)cfg->kv_heads * D;
    const float *qkv_parts[] = {w_q, w_k, w_v}, *o_parts[] = {w_o};
    const size_t qkv_rows[] = {l->mixed_width, (size_t)cfg->kv_heads * D,
                               (size_t)cfg->kv_heads * D},
                 o_rows[] = {dm};
    if ((st = upload(ctx, cfg->dtype, qkv_parts, qkv_rows, 3, dm, &l->w_qkv)) ||
        (st = upload(ctx, cfg->dtype, o_parts, o_rows, 1, l->mixed_width, &l->w_o))) {
        layer_free(l);
        goto done;
    }
    *out = l;
done:
    attn_call_end(ctx);
    return st;
}

void attn_layer_release(attn_layer *layer)
{
    if (layer) layer_free(layer);
}

/* hidden or out: a valid cl_mem of the layer's context holding n elements
 * from offset. */
static attn_status check_buffer(attn_context *ctx, cl_mem m, const char *name, int written,
                                size_t offset, size_t n, size_t esize)
{
    ATTN_CHECK(ctx, !m, ATTN_ERROR_INVALID_ARGUMENT, "%s is NULL", name);
    cl_context owner = NULL;
    size_t bytes = 0, need;
    if (clGetMemObjectInfo(m, CL_MEM_CONTEXT, sizeof owner, &owner, NULL) != CL_SUCCESS ||
        clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) != CL_SUCCESS)
        return ATTN_FAIL(ctx, ATTN_ERROR_INVALID_ARGUMENT, "%s is not a valid cl_mem", name);
    ATTN_CHECK(ctx, owner != ctx->cl_ctx, ATTN_ERROR_INVALID_ARGUMENT,
               "%s belongs to another cl_context than the layer's", name);
    attn_status st;
    if (written && (st = attn_validate_writable(ctx, m, name)) != ATTN_SUCCESS) return st;
    if (!written && (st = attn_validate_readable(ctx, m, name)) != ATTN_SUCCESS) return st;
    ATTN_CHECK(ctx, __builtin_add_overflow(offset, n, &need) ||
                        __builtin_mul_overflow(need, esize, &need) || need > bytes,
               ATTN_ERROR_INVALID_ARGUMENT, "%s holds %zu bytes; offset %zu + batch x seq x "
               "d_model = %zu elements need more", name, bytes, offset, n);
    return ATTN_SUCCESS;
}

/* out[rows, n] = in[rows, k] W^T (W is [n][k], f32 on the device), in and
 * out of the storage type: f32 directly, else through f32 temporaries. */
static attn_status project(attn_layer *l, size_t rows, size_t k, size_t n, cl_mem in,
                           size_t in_off, cl_mem w, cl_mem out, size_t out_off, const char *what)
{
    attn_context *ctx = l->ctx;
    const attn_dtype t = l->cfg.dtype;
    if (t == ATTN_F32)
        return attn_sgemm(ctx, 1, rows, n, k, in, in_off, k, w, 0, k, out, out_off, n, what);
    attn_status st;
    if ((st = attn_device_to_f32(ctx, t, in, in_off, l->t_in.mem, rows * k)) ||
        (st = attn_queue_order(ctx)) ||
        (st = attn_sgemm(ctx, 1, rows, n, k, l->t_in.mem, 0, k, w, 0, k, l->t_out.mem, 0, n,
                         what)) ||
        (st = attn_queue_order(ctx)))
        return st;
    return attn_device_from_f32(ctx, t, l->t_out.mem, out, out_off, rows * n);
}

static attn_status finish(attn_context *ctx, double *t)
{
    cl_int err = clFinish(ctx->queue);
    *t = now_ms();
    return err == CL_SUCCESS ? ATTN_SUCCESS : attn_fail_cl(ctx, err, "clFinish (layer timing)");
}

/* Validation, buffers and the input projection; ctx->lock held. */
static attn_status prologue(attn_layer *l, int batch, int seq, cl_mem hidden, size_t h_off,
                            cl_mem out, size_t o_off, const attn_problem *p,
                            const attn_lengths *lengths)
{
    attn_context *ctx = l->ctx;
    const attn_layer_config *c = &l->cfg;
    ATTN_CHECK(ctx, batch <= 0, ATTN_ERROR_INVALID_ARGUMENT, "batch = %d must be positive", batch);
    ATTN_CHECK(ctx, seq <= 0, ATTN_ERROR_INVALID_ARGUMENT, "seq = %d must be positive", seq);
    /* the attention's limits, named as this call's arguments (p's fields
     * are not the caller's) */
    ATTN_CHECK(ctx, seq > ATTN_MAX_SEQ, ATTN_ERROR_INVALID_ARGUMENT, "seq = %d exceeds 2^30", seq);
    const double query_rows = (double)batch * c->q_heads * seq;
    ATTN_CHECK(ctx, query_rows > 0x7fffffff, ATTN_ERROR_INVALID_ARGUMENT,
               "batch x q_heads x seq = %.0f exceeds 2^31 - 1", query_rows);
    attn_status st = attn_validate_problem(ctx, p, lengths);
    if (st != ATTN_SUCCESS) return st;
    const size_t rows = (size_t)batch * (size_t)seq, esize = attn_dtype_size(c->dtype);
    const size_t dm = (size_t)c->d_model;
    ATTN_CHECK(ctx, (double)rows * (double)(l->qkv_width > dm ? l->qkv_width : dm) > 1e15,
               ATTN_ERROR_INVALID_ARGUMENT, "batch x seq = %zu rows is too large", rows);
    if ((st = check_buffer(ctx, hidden, "hidden", 0, h_off, rows * dm, esize)) ||
        (st = check_buffer(ctx, out, "out", 1, o_off, rows * dm, esize)))
        return st;
    const size_t in_w = dm > l->mixed_width ? dm : l->mixed_width;
    const size_t out_w = dm > l->qkv_width ? dm : l->qkv_width;
    /* CLBlast indexes with int: every GEMM operand must stay below 2^31.
     * In f16 and bf16 its operands are the f32 copies, which start at 0
     * (the conversions take 64-bit offsets), not hidden and out */
    const int f32 = c->dtype == ATTN_F32;
    const struct {
        double last;
        const char *what;
    } reach[] = {{f32 ? (double)h_off + (double)rows * dm : (double)rows * in_w,
                  f32 ? "hidden" : "the f32 copy of a projection's input"},
                 {f32 ? (double)o_off + (double)rows * dm : (double)rows * out_w,
                  f32 ? "out" : "the f32 copy of a projection's output"},
                 {(double)rows * l->qkv_width, "the fused q/k/v buffer"}};
    for (size_t i = 0; i < sizeof reach / sizeof reach[0]; i++)
        ATTN_CHECK(ctx, reach[i].last > (double)ATTN_CLBLAST_MAX_INDEX, ATTN_ERROR_UNSUPPORTED,
                   "%s reaches element %.0f; CLBlast indexes buffers with int (at most %d): "
                   "use smaller batches%s", reach[i].what, reach[i].last, ATTN_CLBLAST_MAX_INDEX,
                   f32 && i < 2 ? " or a smaller offset" : "");
    /* too large for this device: refused before any work, as
     * attn_forward_materialized refuses (not OUT_OF_MEMORY at a scratch
     * reserve, nor a GEMM's temporary after the attention ran) */
    const struct {
        double bytes;
        const char *what;
    } need[] = {{(double)rows * l->qkv_width * esize, "the fused q/k/v rows"},
                {(double)rows * l->mixed_width * esize, "the attention's output rows"},
                {c->dtype != ATTN_F32 ? (double)rows * in_w * sizeof(float) : 0,
                 "the f32 copy of a projection's input"},
                {c->dtype != ATTN_F32 ? (double)rows * out_w * sizeof(float) : 0,
                 "the f32 copy of a projection's output"}};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        ATTN_CHECK(ctx, need[i].bytes > (double)ctx->max_alloc, ATTN_ERROR_UNSUPPORTED,
                   "batch x seq = %zu rows: %s need %.0f bytes, more than the device's max "
                   "allocation of %llu bytes (CL_DEVICE_MAX_MEM_ALLOC_SIZE): use smaller "
                   "batches", rows, need[i].what, need[i].bytes,
                   (unsigned long long)ctx->max_alloc);
    if ((st = attn_sgemm_temp_fits(ctx, 1, rows, l->qkv_width, dm, "q/k/v projection")) ||
        (st = attn_sgemm_temp_fits(ctx, 1, rows, dm, l->mixed_width, "out_proj")))
        return st;
    if ((st = attn_scratch_reserve(ctx, &l->qkv, rows * l->qkv_width * esize)) ||
        (st = attn_scratch_reserve(ctx, &l->mixed, rows * l->mixed_width * esize)) ||
        (c->dtype != ATTN_F32 &&
         ((st = attn_scratch_reserve(ctx, &l->t_in, rows * in_w * sizeof(float))) ||
          (st = attn_scratch_reserve(ctx, &l->t_out, rows * out_w * sizeof(float))))) ||
        (st = attn_queue_order(ctx)))
        return st;
    return project(l, rows, dm, l->qkv_width, hidden, h_off, l->w_qkv, l->qkv.mem, 0,
                   "q/k/v projection");
}

static attn_status forward(attn_layer *l, int batch, int seq, cl_mem hidden, size_t h_off,
                           cl_mem out, size_t o_off, const attn_lengths *lengths,
                           attn_layer_timing *timing, cl_event *done)
{
    attn_context *ctx = l->ctx;
    const attn_layer_config *c = &l->cfg;
    const attn_problem p = {.batch = batch, .q_heads = c->q_heads, .kv_heads = c->kv_heads,
                            .head_dim = c->head_dim, .q_len = seq, .kv_len = seq,
                            .dtype = c->dtype, .causal = c->causal, .scale = c->scale};
    double t0 = 0, t1 = 0, t2 = 0, t3 = 0;
    attn_status st = ATTN_SUCCESS;
    attn_call_begin(ctx, "attn_layer_forward");
    if (timing) st = finish(ctx, &t0); /* the caller's own work is not ours */
    if (st == ATTN_SUCCESS) st = prologue(l, batch, seq, hidden, h_off, out, o_off, &p, lengths);
    if (st == ATTN_SUCCESS && timing) st = finish(ctx, &t1);
    if (st != ATTN_SUCCESS) {
        attn_call_end(ctx);
        return st;
    }

    /* q, k and v are column blocks of the fused [B, S, qkv_width] rows: BSHD
     * strides, read in place. The attention writes [B, S, Hq * D] rows. */
    const size_t D = (size_t)c->head_dim, W = l->qkv_width, S = (size_t)seq;
    const attn_tensor tq = {l->qkv.mem, 0, S * W, D, W};
    const attn_tensor tk = {l->qkv.mem, (size_t)c->q_heads * D, S * W, D, W};
    const attn_tensor tv = {l->qkv.mem, (size_t)(c->q_heads + c->kv_heads) * D, S * W, D, W};
    const attn_tensor to = {l->mixed.mem, 0, S * l->mixed_width, D, l->mixed_width};
    st = attn_forward_locked(ctx, &p, &tq, &tk, &tv, &to, lengths, NULL, NULL);
    if (st == ATTN_SUCCESS && timing) st = finish(ctx, &t2);
    if (st == ATTN_SUCCESS) st = attn_queue_order(ctx);
    if (st == ATTN_SUCCESS)
        st = project(l, (size_t)batch * S, l->mixed_width, (size_t)c->d_model, l->mixed.mem, 0,
                     l->w_o, out, o_off, "out_proj");
    if (st == ATTN_SUCCESS && done) {
        cl_int err = clEnqueueMarkerWithWaitList(ctx->queue, 0, NULL, done);
        if (err != CL_SUCCESS) st = attn_fail_cl(ctx, err, "clEnqueueMarkerWithWaitList");
    }
    if (st == ATTN_SUCCESS && timing) st = finish(ctx, &t3);
    if (st != ATTN_SUCCESS && done && *done) {
        clReleaseEvent(*done);
        *done = NULL;
    }
    attn_call_end(ctx);
    if (st == ATTN_SUCCESS && timing) {
        timing->projection_ms = (t1 - t0) + (t3 - t2);
        timing->attention_ms = t2 - t1;
    }
    return st;
}

attn_status attn_layer_forward(attn_layer *layer, int batch, int seq, cl_mem hidden,
                               size_t hidden_offset, cl_mem out, size_t out_offset,
                               const attn_lengths *lengths, attn_layer_timing *timing,
                               cl_event *done)
{
    if (done) *done = NULL;
    if (!layer) return attn_fail_null(__func__, "layer");
    pthread_mutex_lock(&layer->lock);
    attn_status st = forward(layer, batch, seq, hidden, hidden_offset, out, out_offset, lengths,
                             timing, done);
    pthread_mutex_unlock(&layer->lock);
    return st;
}
