/* attention.c -- the smallest complete use of libattn: causal GQA attention
 * with a padded batch entry on the default device, checked against the CPU
 * reference. Built against an installed attn by examples/CMakeLists.txt
 * (find_package) or by pkg-config:
 *
 *     cc -std=c11 attention.c $(pkg-config --cflags --libs attn) -lm
 *
 * Exit status: 0 when every element is within the DESIGN tolerance. */
#include <attn.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { B = 2, HQ = 4, HKV = 2, S = 100, D = 64 };

static cl_mem upload(attn_context *ctx, const float *x, size_t n)
{
    cl_int err;
    cl_mem m = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              n * sizeof *x, (void *)x, &err);
    return err == CL_SUCCESS ? m : NULL;
}

int main(void)
{
    attn_context *ctx;
    attn_status st = attn_context_create(NULL, &ctx); /* $ATTN_DEVICE, else the first GPU */
    if (st != ATTN_SUCCESS) {
        fprintf(stderr, "%s: %s\n", attn_status_name(st), attn_last_create_error());
        return 1;
    }
    const size_t nq = (size_t)B * HQ * S * D, nkv = (size_t)B * HKV * S * D;
    float *q = malloc(nq * sizeof *q), *k = malloc(nkv * sizeof *k), *v = malloc(nkv * sizeof *v);
    float *o = malloc(nq * sizeof *o), *ref = malloc(nq * sizeof *ref);
    cl_mem mq = NULL, mk = NULL, mv = NULL, mo = NULL;
    int bad = -1;
    if (!q || !k || !v || !o || !ref) {
        fprintf(stderr, "out of host memory\n");
        goto done;
    }
    srand(1);
    for (size_t i = 0; i < nq; i++) q[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    for (size_t i = 0; i < nkv; i++) k[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    for (size_t i = 0; i < nkv; i++) v[i] = (float)rand() / (float)RAND_MAX - 0.5f;

    /* contiguous BHSD tensors: strides for batch, head and sequence */
    mq = upload(ctx, q, nq), mk = upload(ctx, k, nkv), mv = upload(ctx, v, nkv);
    mo = upload(ctx, q, nq); /* any contents: every element is written */
    attn_tensor tq = {mq, 0, (size_t)HQ * S * D, (size_t)S * D, D};
    attn_tensor tk = {mk, 0, (size_t)HKV * S * D, (size_t)S * D, D};
    attn_tensor tv = {mv, 0, (size_t)HKV * S * D, (size_t)S * D, D};
    attn_tensor to = {mo, 0, (size_t)HQ * S * D, (size_t)S * D, D};
    attn_problem p = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = S,
                      .kv_len = S, .dtype = ATTN_F32, .causal = 1, .scale = 0 /* 1/sqrt(D) */};
    /* batch entry 1 is left-padded: only its last 70 positions are content */
    const int start[B] = {0, S - 70}, len[B] = {S, 70};
    attn_lengths lengths = {start, len, start, len};

    if (!mq || !mk || !mv || !mo) {
        st = ATTN_ERROR_OUT_OF_MEMORY;
        fprintf(stderr, "clCreateBuffer failed\n");
    } else {
        st = attn_forward(ctx, &p, &tq, &tk, &tv, &to, &lengths, NULL, NULL);
        if (st != ATTN_SUCCESS)
            fprintf(stderr, "attn_forward: %s: %s\n", attn_status_name(st), attn_last_error(ctx));
        else if (clEnqueueReadBuffer(attn_context_queue(ctx), mo, CL_TRUE, 0, nq * sizeof *o, o,
                                     0, NULL, NULL) != CL_SUCCESS) {
            st = ATTN_ERROR_OPENCL;
            fprintf(stderr, "clEnqueueReadBuffer failed\n");
        }
    }
    if (st == ATTN_SUCCESS &&
        (st = attn_reference_forward(&p, q, k, v, ref, &lengths, NULL)) != ATTN_SUCCESS)
        fprintf(stderr, "attn_reference_forward: %s: %s\n", attn_status_name(st),
                attn_last_error(NULL)); /* a call without a context: the thread's message */
    if (st == ATTN_SUCCESS) {
        double atol, rtol, worst = 0;
        attn_tolerance(p.dtype, &atol, &rtol);
        bad = 0;
        for (size_t i = 0; i < nq; i++) {
            double e = fabs((double)o[i] - ref[i]);
            if (!(e <= atol + rtol * fabs(ref[i]))) bad++;
            if (e > worst) worst = e;
        }
        char name[256] = "?";
        clGetDeviceInfo(attn_context_device(ctx), CL_DEVICE_NAME, sizeof name, name, NULL);
        printf("attn %s on %s: B=%d Hq=%d Hkv=%d S=%d D=%d causal, padded: max error %.3g, "
               "%d of %zu elements beyond the tolerance\n",
               attn_version_string(), name, B, HQ, HKV, S, D, worst, bad, nq);
    }
done: /* every path releases what it made */
    if (mq) clReleaseMemObject(mq);
    if (mk) clReleaseMemObject(mk);
    if (mv) clReleaseMemObject(mv);
    if (mo) clReleaseMemObject(mo);
    attn_context_release(ctx);
    free(q), free(k), free(v), free(o), free(ref);
    return bad == 0 ? 0 : 1;
}
