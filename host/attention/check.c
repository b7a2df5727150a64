/* check.c -- check mode: every attn_forward result recomputed by the CPU
 * reference and compared at the DESIGN tolerance, for users bringing up a
 * new device or driver (ATTN_CHECK=1 or attn_context_set_check). */
#include "core/context.h"
#include "core/errors.h"
#include "core/launch.h"
#include "attention/check.h"
#include "attention/convert.h"
#include "attention/validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct attn_check_inputs {
    float *q, *k, *v;
    float *mask;  /* the mask's reach from its offset, as float (NULL: none) */
    float *sinks; /* sinks_buffer read back (NULL: none, or p->sinks on the host) */
};

/* One past the highest element index a strided box reaches from offset
 * (validation has ruled out overflow). */
static size_t box_end(size_t offset, const size_t *stride, const int *extent, int n, size_t last)
{
    size_t hi = offset + last;
    for (int i = 0; i < n; i++) hi += (size_t)(extent[i] - 1) * stride[i];
    return hi;
}

/* Reads n elements of dtype from element `offset` of m into floats. */
static attn_status read_floats(attn_context *ctx, cl_mem m, attn_dtype dtype, size_t offset,
                               size_t n, float *dst)
{
    const size_t elem = attn_dtype_size(dtype);
    void *raw = dtype == ATTN_F32 ? (void *)dst : malloc(n * elem);
    if (!raw) return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "check mode: out of host memory");
    cl_int err = clEnqueueReadBuffer(ctx->queue, m, CL_TRUE, offset * elem, n * elem, raw, 0,
                                     NULL, NULL);
    if (err == CL_SUCCESS && raw != dst) attn_load_to_f32(dtype, raw, dst, n);
    if (raw != dst) free(raw);
    return err == CL_SUCCESS ? ATTN_SUCCESS : attn_fail_cl(ctx, err, "clEnqueueReadBuffer (check mode)");
}

attn_status attn_check_reference(attn_context *ctx, const char *who, const attn_problem *p,
                                 const float *q, const float *k, const float *v, float *o,
                                 const attn_lengths *lengths, float *lse)
{
    attn_thread_error_state saved; /* the thread's message is the caller's */
    attn_thread_error_save(&saved);
    const attn_status st = attn_reference_forward(p, q, k, v, o, lengths, lse);
    if (st != ATTN_SUCCESS)
        ATTN_FAIL(ctx, st, "%s: the reference failed (%s: %s)", who, attn_status_name(st),
                  attn_last_error(NULL));
    attn_thread_error_restore(&saved);
    return st;
}

attn_status attn_tensor_download(attn_context *ctx, const attn_tensor *t, attn_dtype dtype,
                                 int batch, int heads, int seq, int dim, float *dst)
{
    const size_t stride[3] = {t->stride_batch, t->stride_head, t->stride_seq};
    const int extent[3] = {batch, heads, seq};
    const size_t n = box_end(t->offset, stride, extent, 3, (size_t)dim) - t->offset;
    float *all = malloc(n * sizeof(float));
    if (!all) return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "check mode: out of host memory");
    attn_status st = read_floats(ctx, t->buffer, dtype, t->offset, n, all);
    for (int b = 0; st == ATTN_SUCCESS && b < batch; b++) /* stride_batch 0 repeats an entry */
        for (int h = 0; h < heads; h++)
            for (int s = 0; s < seq; s++)
                memcpy(dst + (((size_t)b * heads + h) * seq + s) * dim,
                       all + b * stride[0] + h * stride[1] + s * stride[2],
                       sizeof(float) * (size_t)dim);
    free(all);
    return st;
}

void attn_check_kv(attn_check_inputs *in, float **k, float **v)
{
    *k = in->k;
    *v = in->v;
}

void attn_check_free(attn_check_inputs *in)
{
    if (!in) return;
    free(in->q);
    free(in->k);
    free(in->v);
    free(in->mask);
    free(in->sinks);
    free(in);
}

/* The device-side variant inputs the reference reads from the host: the
 * mask's reach (from its offset) and sinks_buffer. */
static attn_status read_variants(attn_context *ctx, const attn_problem *p, attn_check_inputs *in)
{
    attn_status st = ATTN_SUCCESS;
    const attn_mask *m = &p->mask;
    if (m->buffer) {
        const size_t stride[4] = {m->stride_batch, m->stride_head, m->stride_q, m->stride_kv};
        const int extent[4] = {p->batch, p->q_heads, p->q_len, p->kv_len};
        const size_t n = box_end(m->offset, stride, extent, 4, 1) - m->offset;
        if (!(in->mask = malloc(n * sizeof(float))))
            return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "check mode: out of host memory");
        st = read_floats(ctx, m->buffer, m->dtype, m->offset, n, in->mask);
    }
    if (st == ATTN_SUCCESS && p->sinks_buffer) {
        if (!(in->sinks = malloc(sizeof(float) * (size_t)p->q_heads)))
            return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "check mode: out of host memory");
        st = read_floats(ctx, p->sinks_buffer, ATTN_F32, 0, (size_t)p->q_heads, in->sinks);
    }
    return st;
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
        in->k = k ? malloc(nk * sizeof(float)) : calloc(nk, sizeof(float));
        in->v = v ? malloc(nk * sizeof(float)) : calloc(nk, sizeof(float));
    }
    if (!in || !in->q || !in->k || !in->v) {
        attn_check_free(in);
        return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "check mode: out of host memory");
    }
    attn_status st;
    const int B = p->batch, hd = p->head_dim, hkv = p->kv_heads, skv = p->kv_len;
    /* on an out-of-order queue the reads would overtake the caller's writes */
    if ((st = attn_queue_order(ctx)) ||
        (st = attn_tensor_download(ctx, q, p->dtype, B, p->q_heads, p->q_len, hd, in->q)) ||
        (k && (st = attn_tensor_download(ctx, k, p->dtype, B, hkv, skv, hd, in->k))) ||
        (v && (st = attn_tensor_download(ctx, v, p->dtype, B, hkv, skv, hd, in->v))) ||
        (st = read_variants(ctx, p, in))) {
        attn_check_free(in);
        return st;
    }
    *out = in;
    return ATTN_SUCCESS;
}

/* Packed: only each entry's own rows of out and lse are written. The
 * reference's pad rows stand in for the rows attn left alone (so they
 * compare equal), and the device's lse, [Hq][Sq], is spread over the
 * reference's [B][Hq][Sq]. */
static void packed_rows(const attn_problem *p, const attn_lengths *lengths, float *got,
                        const float *ref, float *got_lse, const float *dev_lse, const float *ref_lse)
{
    const size_t D = (size_t)p->head_dim, Sq = (size_t)p->q_len;
    for (int b = 0; b < p->batch; b++) {
        const attn_region r = attn_region_of(p, lengths, b);
        for (int h = 0; h < p->q_heads; h++)
            for (size_t s = 0; s < Sq; s++) {
                const size_t row = ((size_t)b * p->q_heads + h) * Sq + s;
                const int written = (int)s >= r.q_start && (int)s < r.q_start + r.q_len;
                if (!written) memcpy(got + row * D, ref + row * D, D * sizeof(float));
                if (got_lse) got_lse[row] = written ? dev_lse[(size_t)h * Sq + s] : ref_lse[row];
            }
    }
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
    /* the device's lse: [Hq][Sq] when packed */
    const size_t dev_rows = p->packed ? (size_t)p->q_heads * p->q_len : rows;
    float *ref = malloc(rows * D * sizeof(float)), *got = malloc(rows * D * sizeof(float));
    float *ref_lse = malloc(rows * sizeof(float)), *got_lse = lse ? malloc(rows * sizeof(float)) : NULL;
    float *dev_lse = lse && p->packed ? malloc(dev_rows * sizeof(float)) : got_lse;
    attn_problem rp = *p; /* the reference reads the variants' device data from host copies */
    if (in->mask) {
        rp.mask.host = in->mask;
        rp.mask.offset = 0;
    }
    if (in->sinks) {
        rp.sinks = in->sinks;
        rp.sinks_buffer = NULL;
    }
    attn_status st = ATTN_SUCCESS;
    if (!ref || !got || !ref_lse || (lse && (!got_lse || !dev_lse))) {
        st = ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "check mode: out of host memory");
        goto done;
    }
    if ((st = attn_tensor_download(ctx, out, p->dtype, p->batch, p->q_heads, p->q_len, p->head_dim, got)) ||
        (lse && (st = read_floats(ctx, lse, ATTN_F32, 0, dev_rows, dev_lse))))
        goto done;
    if ((st = attn_check_reference(ctx, "check mode", &rp, in->q, in->k, in->v, ref, lengths,
                                   ref_lse)) != ATTN_SUCCESS)
        goto done;
    if (p->packed) packed_rows(p, lengths, got, ref, got_lse, dev_lse, ref_lse);
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
    if (dev_lse != got_lse) free(dev_lse);
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
