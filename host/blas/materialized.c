/* materialized.c -- attention the usual way, as a baseline for the tiled
 * kernels and a second, independent check of them: S = Q K^T by CLBlast
 * GEMMs (one per query head, by offsets), a kernel that scales, masks and
 * soft-maxes each row in fp32 (cl/materialized.cl), then O = P V likewise;
 * and, through the same steps, the softmax weights of one (batch entry,
 * head) for diagnostics. Every variant of attn_problem (window, softcap,
 * sinks, ALiBi, mask, packed) applies in the row kernel. */
#include "core/context.h"
#include "core/errors.h"
#include "core/text.h"
#include "core/launch.h"
#include "attention/validate.h"
#include "attention/forward.h"
#include "attention/check.h"
#include "attention/variants.h"
#include "blas/blas.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* attn_softmax_rows' and attn_rows_out's arguments before VARIANT_PARAMS */
#define SOFTMAX_NARGS 10
#define ROWS_OUT_NARGS 8

/* Work-items per score row: a power of two within the device's limit. On
 * PoCL (CPU) one work-item per row, its float8 steps as SIMD code, measured
 * best: S = 4096, 8 heads, 1.1-1.5 G elements/s against 0.7-0.9 with 4 or 8
 * work-items; the scalar kernel this replaced managed 0.13. GPUs: 128.
 * ATTN_SOFTMAX_WG, read at context creation, overrides it (tests use it to
 * cover the reductions); checked here, where max_wg bounds it. */
static attn_status softmax_wg(attn_context *ctx, size_t *out)
{
    size_t want = (ctx->device_type & CL_DEVICE_TYPE_CPU) ? 1 : 128, wg = 1;
    const char *env = ctx->softmax_wg;
    if (env) {
        int v = 0;
        ATTN_CHECK(ctx,
                   attn_parse_int(env, 1, 256, &v) || (v & (v - 1)) || (size_t)v > ctx->max_wg,
                   ATTN_ERROR_INVALID_ARGUMENT, "ATTN_SOFTMAX_WG=\"%s\": expected a power of two "
                   "in 1..%zu", env, ctx->max_wg < 256 ? ctx->max_wg : 256);
        want = (size_t)v;
    }
    while (wg * 2 <= want && wg * 2 <= ctx->max_wg) wg *= 2;
    *out = wg;
    return ATTN_SUCCESS;
}

/* A buffer of n floats, refused (no work done) beyond the device's max
 * allocation; `what` says what it holds. */
static attn_status fits(attn_context *ctx, double n, const char *what)
{
    const double bytes = n * sizeof(float);
    ATTN_CHECK(ctx, bytes > (double)ctx->max_alloc, ATTN_ERROR_UNSUPPORTED,
               "materialized attention: %s need %.0f bytes, more than the device's max "
               "allocation of %llu bytes (CL_DEVICE_MAX_MEM_ALLOC_SIZE)", what, bytes,
               (unsigned long long)ctx->max_alloc);
    return ATTN_SUCCESS;
}

/* The kernel `name` of materialized.cl built for p: its storage type and
 * the variants it uses (common.cl + variants.cl + materialized.cl), with
 * the variants' arguments va bound after its first nargs. */
static attn_status mat_kernel(attn_context *ctx, const attn_problem *p, const char *name,
                              int nargs, attn_variant_args *va, cl_kernel *out)
{
    char opts[256];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DSTORAGE=%d", (int)p->dtype);
    attn_variant_options(p, opts, sizeof opts);
    const char *sources[] = {"common.cl", "variants.cl", "materialized.cl"};
    attn_status st = attn_kernel_build(ctx, sources, 3, opts, name, out);
    if (st == ATTN_SUCCESS)
        st = attn_kernel_set_args_at(ctx, *out, nargs, attn_variant_kargs(va), ATTN_VARIANT_NARGS);
    return st;
}

/* Scores of query heads [h0, h0 + nh) of one batch entry (region r) into
 * `scores` ([nh, m, n] floats), then the softmax kernel over them. q_off
 * points at row q_start of query head h0, k_off at row kv_start of KV head
 * h0 / group; f32 tensors. nh is 1 or all of p->q_heads. */
static attn_status scores_softmax(attn_context *ctx, const attn_problem *p, attn_region r, int b,
                                  int h0, int nh, const attn_tensor *q, size_t q_off,
                                  const attn_tensor *k, size_t k_off, cl_mem scores,
                                  cl_kernel softmax, size_t wg, cl_mem lse)
{
    const size_t m = (size_t)r.q_len, n = (size_t)r.kv_len, D = (size_t)p->head_dim;
    attn_status st;
    if (nh == 1)
        st = attn_sgemm(ctx, 1, m, n, D, q->buffer, q_off, q->stride_seq, k->buffer, k_off,
                        k->stride_seq, scores, 0, n, "scores = Q K^T");
    else
        st = attn_sgemm_heads(ctx, 1, m, n, D, p->q_heads, p->kv_heads, q->buffer, q_off,
                              q->stride_seq, q->stride_head, k->buffer, k_off, k->stride_seq,
                              k->stride_head, scores, 0, n, m * n, "scores = Q K^T");
    if (st != ATTN_SUCCESS || (st = attn_queue_order(ctx)) != ATTN_SUCCESS) return st;
    const cl_int4 len = {{r.q_start, r.q_len, r.kv_start, r.kv_len}};
    const cl_int causal = p->causal != 0, write_lse = lse != NULL, cb = b, ch0 = h0;
    const cl_int heads = p->q_heads, sq = p->q_len;
    const cl_float qscale = attn_variant_qscale(p); /* exp2 domain, or / softcap */
    cl_mem lse_arg = lse ? lse : scores; /* never written when write_lse is 0 */
    const attn_karg args[SOFTMAX_NARGS] = {
        ATTN_KARG(scores), ATTN_KARG(len), ATTN_KARG(causal), ATTN_KARG(qscale),
        ATTN_KARG(lse_arg), ATTN_KARG(write_lse), ATTN_KARG(cb), ATTN_KARG(ch0),
        ATTN_KARG(heads), ATTN_KARG(sq)};
    const size_t global[2] = {wg * m, (size_t)nh}, local[2] = {wg, 1};
    if ((st = attn_kernel_run(ctx, softmax, args, SOFTMAX_NARGS, 2, global, local)))
        return st;
    return attn_queue_order(ctx);
}

static attn_tensor contiguous(cl_mem buf, int heads, int seq, int dim)
{
    attn_tensor t = {buf, 0, (size_t)heads * seq * dim, (size_t)seq * dim, (size_t)dim};
    return t;
}

/* The f32 copy of input t ([B, heads, seq, D]) in buf, as *view: one batch
 * entry's worth when t's batch stride is 0 (packed sequences, a prompt
 * shared by the batch), read by every entry through a batch stride of 0. */
static attn_status widen(attn_context *ctx, attn_dtype dtype, const attn_tensor *t, int B,
                         int heads, int seq, int D, cl_mem buf, attn_tensor *view)
{
    *view = contiguous(buf, heads, seq, D);
    if (t->stride_batch == 0) view->stride_batch = 0, B = 1;
    return attn_device_gather_f32(ctx, dtype, t, B, heads, seq, D, buf);
}

/* How many batch entries' worth the f32 copy of O holds: one axis for
 * packed sequences whose query rows never meet (each entry writes only its
 * own rows, as widen's inputs of batch stride 0 are read), else one per
 * entry; -1 out of host memory. */
static int o_copies(const attn_problem *p, const attn_lengths *lengths)
{
    int meet[3];
    if (!p->packed) return p->batch;
    const int found = attn_packed_rows_meet(p, lengths, meet);
    return found < 0 ? -1 : found ? p->batch : 1;
}

static size_t at(const attn_tensor *t, int b, int h, int s)
{
    return t->offset + (size_t)b * t->stride_batch + (size_t)h * t->stride_head +
           (size_t)s * t->stride_seq;
}

static attn_status materialized(attn_context *ctx, const attn_problem *p, const attn_tensor *q,
                                const attn_tensor *k, const attn_tensor *v,
                                const attn_tensor *out, const attn_lengths *lengths, cl_mem lse,
                                int only_refusals, cl_event *finished)
{
    const int B = p->batch, Hq = p->q_heads, Hkv = p->kv_heads, D = p->head_dim;
    const int Sq = p->q_len, Skv = p->kv_len, wide = p->dtype != ATTN_F32;
    attn_status st;
    /* the f32 copies' batch entries: an input of batch stride 0 is copied
     * once (widen), O once for packed rows that never meet */
    const int qn = q->stride_batch ? B : 1, kn = k->stride_batch ? B : 1;
    const int vn = v->stride_batch ? B : 1, on = wide ? o_copies(p, lengths) : B;
    ATTN_CHECK(ctx, on < 0, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    /* The largest batch entry's content rows and keys: the GEMMs and the
     * scores see no more (packed entries are far shorter than their axis). */
    size_t most_m = 0, most_n = 0, most_mn = 0;
    for (int b = 0; b < B; b++) {
        const attn_region r = attn_region_of(p, lengths, b);
        const size_t m = (size_t)r.q_len, n = (size_t)r.kv_len;
        if (m * n > most_mn) most_mn = m * n;
        if (m > most_m) most_m = m;
        if (n > most_n) most_n = n;
    }
    /* Every refusal before any work: the scores of the largest batch entry
     * (all its query heads) and, for f16/bf16, the f32 copies. */
    if ((st = fits(ctx, (double)Hq * most_mn, "the scores of the largest batch entry (q_heads x "
                   "its q_len x its kv_len floats; attn_forward needs no such buffer)")) != ATTN_SUCCESS)
        return st;
    const double qo = (double)(qn > on ? qn : on) * Hq * Sq * D;
    const double kv = (double)(kn > vn ? kn : vn) * Hkv * Skv * D;
    if (wide && ((st = fits(ctx, qo, "f32 copies of Q and O")) ||
                 (st = fits(ctx, kv, "f32 copies of K and V"))))
        return st;
    /* CLBlast indexes with int: what its GEMMs read and write must fit. */
    const struct { const attn_tensor *t; int n, h, s; const char *name; } ops[] = {
        {q, qn, Hq, Sq, "q"}, {k, kn, Hkv, Skv, "k"}, {v, vn, Hkv, Skv, "v"},
        {out, on, Hq, Sq, "out"}};
    double last = (double)Hq * most_mn;
    const char *which = "the scores";
    for (int i = 0; i < 4; i++) {
        const double e = wide ? (double)ops[i].n * ops[i].h * ops[i].s * D /* the f32 copy */
                              : (double)at(ops[i].t, B - 1, ops[i].h - 1, ops[i].s - 1) + D;
        if (e > last) last = e, which = ops[i].name;
    }
    ATTN_CHECK(ctx, last > (double)ATTN_CLBLAST_MAX_INDEX, ATTN_ERROR_UNSUPPORTED,
               "materialized attention: %s reach element %.0f; CLBlast indexes buffers with int "
               "(at most %d)", which, last, ATTN_CLBLAST_MAX_INDEX);
    /* and the GEMMs' temporary, which for one head is about its scores
     * (padded sizes: the largest entry's bound every entry's) */
    if ((st = attn_sgemm_temp_fits(ctx, 1, most_m, most_n, (size_t)D,
                                   "materialized attention, S = Q K^T")) ||
        (st = attn_sgemm_temp_fits(ctx, 0, most_m, (size_t)D, most_n,
                                   "materialized attention, O = P V")))
        return st;
    if (only_refusals) return ATTN_SUCCESS;
    size_t wg;
    if ((st = softmax_wg(ctx, &wg)) != ATTN_SUCCESS) return st;
    cl_kernel softmax = NULL, rows_out = NULL;
    cl_mem lens = NULL;
    attn_variant_args va = {0};
    cl_int err;
    attn_scratch *mat = ctx->mat;
    const size_t fl = sizeof(float);
    if ((st = attn_scratch_reserve(ctx, &mat[ATTN_MAT_SCORES],
                                   (size_t)Hq * (most_mn ? most_mn : 1) * fl)) ||
        (wide && ((st = attn_scratch_reserve(ctx, &mat[ATTN_MAT_Q], qn * (size_t)Hq * Sq * D * fl)) ||
                  (st = attn_scratch_reserve(ctx, &mat[ATTN_MAT_K], kn * (size_t)Hkv * Skv * D * fl)) ||
                  (st = attn_scratch_reserve(ctx, &mat[ATTN_MAT_V], vn * (size_t)Hkv * Skv * D * fl)) ||
                  (st = attn_scratch_reserve(ctx, &mat[ATTN_MAT_O], on * (size_t)Hq * Sq * D * fl)))))
        goto done;
    if ((st = attn_lengths_buffer(ctx, p, lengths, &lens)) != ATTN_SUCCESS) goto done;
    if ((st = attn_variant_args_make(ctx, p, lens, &va)) ||
        (st = mat_kernel(ctx, p, "attn_softmax_rows", SOFTMAX_NARGS, &va, &softmax)) ||
        (st = mat_kernel(ctx, p, "attn_rows_out", ROWS_OUT_NARGS, &va, &rows_out)))
        goto done;

    /* f32 views of the operands: the caller's tensors, or f32 copies. */
    attn_tensor fq = *q, fk = *k, fv = *v, fo = *out;
    if ((st = attn_queue_order(ctx)) != ATTN_SUCCESS) goto done;
    if (wide) {
        fo = contiguous(mat[ATTN_MAT_O].mem, Hq, Sq, D);
        if (on == 1) fo.stride_batch = 0; /* packed: every entry's rows on one axis */
        if ((st = widen(ctx, p->dtype, q, B, Hq, Sq, D, mat[ATTN_MAT_Q].mem, &fq)) ||
            (st = widen(ctx, p->dtype, k, B, Hkv, Skv, D, mat[ATTN_MAT_K].mem, &fk)) ||
            (st = widen(ctx, p->dtype, v, B, Hkv, Skv, D, mat[ATTN_MAT_V].mem, &fv)) ||
            (st = attn_queue_order(ctx)))
            goto done;
    }
    /* One batch entry at a time, its content rows and keys only: pad rows
     * (whatever they hold) never enter a GEMM. */
    cl_mem scores = mat[ATTN_MAT_SCORES].mem;
    for (int b = 0; b < B; b++) {
        const attn_region r = attn_region_of(p, lengths, b);
        if (r.q_len == 0 || r.kv_len == 0) continue; /* rows_out zeroes them */
        const size_t m = (size_t)r.q_len, n = (size_t)r.kv_len;
        if ((st = scores_softmax(ctx, p, r, b, 0, Hq, &fq, at(&fq, b, 0, r.q_start), &fk,
                                 at(&fk, b, 0, r.kv_start), scores, softmax, wg, lse)) ||
            (st = attn_sgemm_heads(ctx, 0, m, (size_t)D, n, Hq, Hkv, scores, 0, n, m * n,
                                   fv.buffer, at(&fv, b, 0, r.kv_start), fv.stride_seq,
                                   fv.stride_head, fo.buffer, at(&fo, b, 0, r.q_start),
                                   fo.stride_seq, fo.stride_head, "O = P V")) ||
            (st = attn_queue_order(ctx)))
            goto done;
    }
    /* Rows no GEMM wrote get zeros and -inf (a live row with a sink: the
     * sink; packed, other entries' rows are not touched); f16/bf16 results
     * are narrowed. */
    const cl_ulong4 og = attn_tensor_geometry(out);
    const cl_int src_batches = wide ? on : 0, write_lse = lse != NULL, dim = D;
    cl_mem src = wide ? fo.buffer : lens, lse_arg = lse ? lse : lens; /* unused when unset */
    const attn_karg args[ROWS_OUT_NARGS] = {
        ATTN_KARG(src), ATTN_KARG(src_batches), ATTN_KARG(out->buffer), ATTN_KARG(og),
        ATTN_KARG(lens), ATTN_KARG(lse_arg), ATTN_KARG(write_lse), ATTN_KARG(dim)};
    const size_t global[3] = {(size_t)Sq, (size_t)Hq, (size_t)B};
    if ((st = attn_kernel_run(ctx, rows_out, args, ROWS_OUT_NARGS, 3, global, NULL)))
        goto done;
    err = clEnqueueMarkerWithWaitList(ctx->queue, 0, NULL, finished);
    if (err != CL_SUCCESS) st = attn_fail_cl(ctx, err, "clEnqueueMarkerWithWaitList");
done:
    if (softmax) clReleaseKernel(softmax);
    if (rows_out) clReleaseKernel(rows_out);
    if (lens) clReleaseMemObject(lens); /* enqueued kernels keep it alive */
    attn_variant_args_release(&va);
    return st;
}

attn_status attn_forward_materialized(attn_context *ctx, const attn_problem *p,
                                      const attn_tensor *q, const attn_tensor *k,
                                      const attn_tensor *v, const attn_tensor *out,
                                      const attn_lengths *lengths, cl_mem lse, cl_event *done)
{
    if (done) *done = NULL;
    if (!ctx) return attn_fail_null(__func__, "ctx");
    attn_call_begin(ctx, __func__);
    attn_check_inputs *inputs = NULL;
    cl_event finished = NULL;
    attn_status st = attn_validate_forward(ctx, p, q, k, v, out, lengths, lse);
    if (st == ATTN_SUCCESS) st = attn_clblast_required(ctx); /* arguments first, then the build */
    /* the size refusals before check mode reads the inputs back (it reads
     * first: out may be q itself), as blas.h promises: before doing anything */
    if (st == ATTN_SUCCESS && ctx->check &&
        (st = materialized(ctx, p, q, k, v, out, lengths, lse, 1, NULL)) == ATTN_SUCCESS)
        st = attn_check_read_inputs(ctx, p, q, k, v, &inputs);
    if (st == ATTN_SUCCESS) st = materialized(ctx, p, q, k, v, out, lengths, lse, 0, &finished);
    st = attn_check_finish(ctx, st, p, inputs, out, lengths, lse, finished, done);
    attn_call_end(ctx);
    return st;
}

static attn_status weights(attn_context *ctx, const attn_problem *p, const attn_tensor *q,
                           const attn_tensor *k, const attn_lengths *lengths, int b, int h,
                           float *w)
{
    attn_status st;
    size_t hi;
    if ((st = attn_validate_problem(ctx, p, lengths)) ||
        (st = attn_validate_tensor(ctx, q, "q", p->batch, p->q_heads, p->q_len, p->head_dim,
                                   attn_dtype_size(p->dtype), &hi)) ||
        (st = attn_validate_tensor(ctx, k, "k", p->batch, p->kv_heads, p->kv_len, p->head_dim,
                                   attn_dtype_size(p->dtype), &hi)))
        return st;
    ATTN_CHECK(ctx, b < 0 || b >= p->batch, ATTN_ERROR_INVALID_ARGUMENT,
               "batch_index = %d is outside [0, %d)", b, p->batch);
    ATTN_CHECK(ctx, h < 0 || h >= p->q_heads, ATTN_ERROR_INVALID_ARGUMENT,
               "head = %d is outside [0, q_heads = %d)", h, p->q_heads);
    ATTN_CHECK(ctx, !w, ATTN_ERROR_INVALID_ARGUMENT, "weights (the output array) is NULL");
    if ((st = attn_clblast_required(ctx)) != ATTN_SUCCESS) return st;
    const attn_region r = attn_region_of(p, lengths, b);
    const size_t m = (size_t)r.q_len, n = (size_t)r.kv_len, D = (size_t)p->head_dim;
    const int hk = h / (p->q_heads / p->kv_heads), wide = p->dtype != ATTN_F32;
    size_t wg;
    if ((st = fits(ctx, (double)m * n, "the scores of one head (q_len x kv_len floats)")) ||
        (wide && ((st = fits(ctx, (double)m * D, "the f32 copy of this head's Q")) ||
                  (st = fits(ctx, (double)n * D, "the f32 copy of this head's K")))) ||
        (st = attn_sgemm_temp_fits(ctx, 1, m, n, D, "attention weights, S = Q K^T")) ||
        (st = softmax_wg(ctx, &wg)))
        return st;
    float *host = malloc((m && n ? m * n : 1) * sizeof *host);
    ATTN_CHECK(ctx, !host, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory for %zu x %zu weights",
               m, n);
    cl_kernel softmax = NULL;
    attn_variant_args va = {0};
    attn_tensor fq = *q, fk = *k;
    size_t q_off = at(q, b, h, r.q_start), k_off = at(k, b, hk, r.kv_start);
    if (m && n) {
        attn_scratch *mat = ctx->mat;
        if ((st = attn_scratch_reserve(ctx, &mat[ATTN_MAT_SCORES], m * n * sizeof(float))) ||
            (wide && ((st = attn_scratch_reserve(ctx, &mat[ATTN_MAT_Q], m * D * sizeof(float))) ||
                      (st = attn_scratch_reserve(ctx, &mat[ATTN_MAT_K], n * D * sizeof(float))))) ||
            (st = attn_variant_args_make(ctx, p, mat[ATTN_MAT_SCORES].mem, &va)) ||
            (st = mat_kernel(ctx, p, "attn_softmax_rows", SOFTMAX_NARGS, &va, &softmax)) ||
            (st = attn_queue_order(ctx)))
            goto done;
        if (wide) { /* just this head's content rows, widened */
            attn_tensor qs = *q, ks = *k;
            qs.offset = q_off, ks.offset = k_off;
            fq = contiguous(mat[ATTN_MAT_Q].mem, 1, (int)m, (int)D);
            fk = contiguous(mat[ATTN_MAT_K].mem, 1, (int)n, (int)D);
            q_off = k_off = 0;
            if ((st = attn_device_gather_f32(ctx, p->dtype, &qs, 1, 1, (int)m, (int)D, fq.buffer)) ||
                (st = attn_device_gather_f32(ctx, p->dtype, &ks, 1, 1, (int)n, (int)D, fk.buffer)) ||
                (st = attn_queue_order(ctx)))
                goto done;
        }
        if ((st = scores_softmax(ctx, p, r, b, h, 1, &fq, q_off, &fk, k_off,
                                 mat[ATTN_MAT_SCORES].mem, softmax, wg, NULL)))
            goto done;
        cl_int err = clEnqueueReadBuffer(ctx->queue, mat[ATTN_MAT_SCORES].mem, CL_TRUE, 0,
                                         m * n * sizeof(float), host, 0, NULL, NULL);
        if (err != CL_SUCCESS) {
            st = attn_fail_cl(ctx, err, "clEnqueueReadBuffer (weights)");
            goto done;
        }
    }
    /* Only now the caller's array: zeros, then the content block. */
    memset(w, 0, (size_t)p->q_len * (size_t)p->kv_len * sizeof *w);
    for (size_t i = 0; i < m && n; i++)
        memcpy(w + (r.q_start + i) * (size_t)p->kv_len + r.kv_start, host + i * n, n * sizeof *w);
done:
    if (softmax) clReleaseKernel(softmax);
    attn_variant_args_release(&va);
    free(host);
    return st;
}

attn_status attn_attention_weights(attn_context *ctx, const attn_problem *p,
                                   const attn_tensor *q, const attn_tensor *k,
                                   const attn_lengths *lengths, int batch_index, int head,
                                   float *weights_out)
{
    if (!ctx) return attn_fail_null(__func__, "ctx");
    attn_call_begin(ctx, __func__);
    attn_status st = weights(ctx, p, q, k, lengths, batch_index, head, weights_out);
    attn_call_end(ctx);
    return st;
}
