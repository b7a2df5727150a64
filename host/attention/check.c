/* check.c -- check mode: every attn_forward result recomputed by the CPU
 * reference and compared at the DESIGN tolerance, for users bringing up a
 * new device or driver (ATTN_CHECK=1 or attn_context_set_check). */
#include "core/context.h"
#include "core/errors.h"
#include "attention/check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct attn_check_inputs {
    float *q, *k, *v;
};

attn_status attn_tensor_download(attn_context *ctx, const attn_tensor *t, attn_dtype dtype,
                                 int batch, int heads, int seq, int dim, float *dst)
{
    size_t elem = attn_dtype_size(dtype);
    size_t hi = t->offset + (size_t)(batch - 1) * t->stride_batch +
                (size_t)(heads - 1) * t->stride_head + (size_t)(seq - 1) * t->stride_seq + dim;
    size_t n = hi - t->offset;
    unsigned char *raw = malloc(n * elem);
    float *row = malloc(sizeof(float) * (size_t)dim);
    attn_status st = ATTN_SUCCESS;
    if (!raw || !row) {
        st = ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "check mode: out of host memory");
        goto done;
    }
    cl_int err = clEnqueueReadBuffer(ctx->queue, t->buffer, CL_TRUE, t->offset * elem, n * elem,
                                     raw, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        st = attn_fail_cl(ctx, err, "clEnqueueReadBuffer (check mode)");
        goto done;
    }
    for (int b = 0; b < batch; b++)
        for (int h = 0; h < heads; h++)
            for (int s = 0; s < seq; s++) {
                size_t at = (size_t)b * t->stride_batch + (size_t)h * t->stride_head +
                            (size_t)s * t->stride_seq;
                attn_convert_to_f32(dtype, raw + at * elem, row, (size_t)dim);
                memcpy(dst + (((size_t)b * heads + h) * seq + s) * dim, row, sizeof(float) * (size_t)dim);
            }
done:
    free(raw);
    free(row);
    return st;
}

void attn_check_free(attn_check_inputs *in)
{
    if (!in) return;
    free(in->q);
    free(in->k);
    free(in->v);
    free(in);
}

attn_status attn_check_read_inputs(attn_context *ctx, const attn_problem *p,
                                   const attn_tensor *q, const attn_tensor *k,
                                   const attn_tensor *v, attn_check_inputs **out)
{
    size_t D = (size_t)p->head_dim;
    size_t nq = (size_t)p->batch * p->q_heads * p->q_len * D;
    size_t nk = (size_t)p->batch * p->kv_heads * p->kv_len * D;
    attn_check_inputs *in = calloc(1, sizeof *in);
    if (in) {
        in->q = malloc(nq * sizeof(float));
        in->k = malloc(nk * sizeof(float));
        in->v = malloc(nk * sizeof(float));
    }
    if (!in || !in->q || !in->k || !in->v) {
        attn_check_free(in);
        return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "check mode: out of host memory");
    }
    attn_status st;
    if ((st = attn_tensor_download(ctx, q, p->dtype, p->batch, p->q_heads, p->q_len, p->head_dim, in->q)) ||
        (st = attn_tensor_download(ctx, k, p->dtype, p->batch, p->kv_heads, p->kv_len, p->head_dim, in->k)) ||
        (st = attn_tensor_download(ctx, v, p->dtype, p->batch, p->kv_heads, p->kv_len, p->head_dim, in->v))) {
        attn_check_free(in);
        return st;
    }
    *out = in;
    return ATTN_SUCCESS;
}

/* Index of the worst element by |got - ref| / (atol + rtol |ref|), and that ratio. */
static double worst(const float *got, const float *ref, size_t n, double atol, double rtol,
                    size_t *at)
{
    double w = 0;
    *at = 0;
    for (size_t i = 0; i < n; i++) {
        double r;
        if (isinf(ref[i]) && got[i] == ref[i]) r = 0; /* -inf LSE of an empty row */
        else if (isnan(got[i]) || isinf(got[i]) || isinf(ref[i])) r = INFINITY;
        else r = fabs((double)got[i] - ref[i]) / (atol + rtol * fabs(ref[i]));
        if (r > w || (isinf(r) && !isinf(w))) {
            w = r;
            *at = i;
        }
    }
    return w;
}

attn_status attn_check_compare(attn_context *ctx, const attn_problem *p,
                               const attn_check_inputs *in, const attn_tensor *out,
                               const attn_lengths *lengths, cl_mem lse)
{
    size_t D = (size_t)p->head_dim, rows = (size_t)p->batch * p->q_heads * p->q_len;
    float *ref = malloc(rows * D * sizeof(float)), *got = malloc(rows * D * sizeof(float));
    float *ref_lse = malloc(rows * sizeof(float)), *got_lse = lse ? malloc(rows * sizeof(float)) : NULL;
    attn_status st = ATTN_SUCCESS;
    if (!ref || !got || !ref_lse || (lse && !got_lse)) {
        st = ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "check mode: out of host memory");
        goto done;
    }
    if ((st = attn_tensor_download(ctx, out, p->dtype, p->batch, p->q_heads, p->q_len, p->head_dim, got)))
        goto done;
    if (lse) {
        cl_int err = clEnqueueReadBuffer(ctx->queue, lse, CL_TRUE, 0, rows * sizeof(float), got_lse,
                                         0, NULL, NULL);
        if (err != CL_SUCCESS) {
            st = attn_fail_cl(ctx, err, "clEnqueueReadBuffer (check mode, lse)");
            goto done;
        }
    }
    if ((st = attn_reference_forward(p, in->q, in->k, in->v, ref, lengths, ref_lse)) != ATTN_SUCCESS) {
        st = ATTN_FAIL(ctx, st, "check mode: the reference failed (%s)", attn_status_name(st));
        goto done;
    }
    double atol, rtol;
    attn_tolerance(p->dtype, &atol, &rtol);
    size_t at;
    double w = worst(got, ref, rows * D, atol, rtol, &at);
    if (w > 1.0) {
        size_t row = at / D, d = at % D;
        st = ATTN_FAIL(ctx, ATTN_ERROR_MISMATCH,
                       "check mode: out[b=%zu, h=%zu, s=%zu, d=%zu] = %.9g, reference %.9g "
                       "(|diff| %.3g > atol %g + rtol %g * |ref|)",
                       row / ((size_t)p->q_heads * p->q_len), row / p->q_len % p->q_heads,
                       row % p->q_len, d, got[at], ref[at], fabs((double)got[at] - ref[at]),
                       atol, rtol);
        goto done;
    }
    if (lse) {
        w = worst(got_lse, ref_lse, rows, atol, rtol, &at);
        if (w > 1.0)
            st = ATTN_FAIL(ctx, ATTN_ERROR_MISMATCH,
                           "check mode: lse[b=%zu, h=%zu, s=%zu] = %.9g, reference %.9g",
                           at / ((size_t)p->q_heads * p->q_len), at / p->q_len % p->q_heads,
                           at % p->q_len, got_lse[at], ref_lse[at]);
    }
done:
    free(ref);
    free(got);
    free(ref_lse);
    free(got_lse);
    return st;
}

attn_status attn_check_finish(attn_context *ctx, attn_status st, const attn_problem *p,
                              attn_check_inputs *inputs, const attn_tensor *out,
                              const attn_lengths *lengths, cl_mem lse, cl_event finished,
                              cl_event *done)
{
    if (st == ATTN_SUCCESS && inputs) {
        cl_int err = clWaitForEvents(1, &finished);
        st = err == CL_SUCCESS ? attn_check_compare(ctx, p, inputs, out, lengths, lse)
                               : attn_fail_cl(ctx, err, "clWaitForEvents (check mode)");
    }
    attn_check_free(inputs);
    if (st == ATTN_SUCCESS && done) *done = finished;
    else if (finished) clReleaseEvent(finished);
    return st;
}
