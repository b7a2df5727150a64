/* test_check_variants.c -- check mode with the variants' device inputs: it
 * reads an f16 mask (at an offset, broadcast strides) and sinks_buffer back
 * for the reference, and with p->packed compares only the rows attn writes
 * (lse [Hq][Sq]). attn_check_compare is fed results computed on the host,
 * so these tests check check mode itself, whatever the kernels do; one
 * attn_forward in check mode runs the whole path. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "attention/check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, HQ = 4, HKV = 2, D = 16, SQ = 8, SKV = 12, MASK_OFFSET = 3 };

static attn_problem base_problem(void)
{
    attn_problem p;
    memset(&p, 0, sizeof p);
    p.batch = B;
    p.q_heads = HQ;
    p.kv_heads = HKV;
    p.head_dim = D;
    p.q_len = SQ;
    p.kv_len = SKV;
    p.dtype = ATTN_F32;
    p.causal = 1;
    return p;
}

/* A read-write buffer holding n bytes of host. */
static cl_mem upload_bytes(attn_context *ctx, const void *host, size_t n)
{
    cl_int err;
    cl_mem m = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              n, (void *)host, &err);
    CU_ASSERT_EQUAL_FATAL(err, CL_SUCCESS);
    return m;
}

static float *random_floats(size_t n, uint64_t seed, float lo, float hi)
{
    float *x = malloc(n * sizeof *x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    harness_fill_uniform(x, n, seed, lo, hi);
    return x;
}

/* Q, K, V on the device (BHSD) and their host copies. */
typedef struct inputs {
    attn_tensor q, k, v;
    float *hq, *hk, *hv;
} inputs;

static void inputs_make(attn_context *ctx, int batch, inputs *in)
{
    const size_t nq = (size_t)batch * HQ * SQ * D, nk = (size_t)batch * HKV * SKV * D;
    in->hq = random_floats(nq, 501, -1.0f, 1.0f);
    in->hk = random_floats(nk, 502, -1.0f, 1.0f);
    in->hv = random_floats(nk, 503, -1.0f, 1.0f);
    CU_ASSERT_PTR_NOT_NULL_FATAL(harness_upload(ctx, ATTN_F32, in->hq, batch, HQ, SQ, D, NULL, &in->q));
    CU_ASSERT_PTR_NOT_NULL_FATAL(harness_upload(ctx, ATTN_F32, in->hk, batch, HKV, SKV, D, NULL, &in->k));
    CU_ASSERT_PTR_NOT_NULL_FATAL(harness_upload(ctx, ATTN_F32, in->hv, batch, HKV, SKV, D, NULL, &in->v));
}

static void inputs_free(inputs *in)
{
    clReleaseMemObject(in->q.buffer);
    clReleaseMemObject(in->k.buffer);
    clReleaseMemObject(in->v.buffer);
    free(in->hq);
    free(in->hk);
    free(in->hv);
}

/* Reads p's inputs back and compares the given out / lse in check mode. */
static attn_status check(attn_context *ctx, const attn_problem *p, const inputs *in,
                         const attn_tensor *out, const attn_lengths *L, cl_mem lse)
{
    attn_check_inputs *ci = NULL;
    attn_status st = attn_check_read_inputs(ctx, p, &in->q, &in->k, &in->v, &ci);
    if (st == ATTN_SUCCESS) st = attn_check_compare(ctx, p, ci, out, L, lse);
    attn_check_free(ci);
    return st;
}

/* An [SQ][SKV] mask broadcast over batch and heads, stored f16 from element
 * MASK_OFFSET, and per-head sinks in a device buffer: check mode passes the
 * result the reference gives with them, and reports a mismatch when the
 * device holds another mask or other sinks than the result was made with. */
static void test_check_mask_and_sinks(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    inputs in;
    inputs_make(ctx, B, &in);
    const size_t nm = MASK_OFFSET + (size_t)SQ * SKV;
    float *hmask = random_floats(nm, 504, -2.0f, 0.0f);
    for (int r = 0; r < SQ; r++) /* a band of -inf: keys well before the row */
        for (int c = 0; c + 6 < r + SKV - SQ; c++) hmask[MASK_OFFSET + (size_t)r * SKV + c] = -INFINITY;
    harness_round(ATTN_F16, hmask, nm);
    unsigned short *h16 = malloc(nm * sizeof *h16), *zero16 = calloc(nm, sizeof *zero16);
    CU_ASSERT_FATAL(h16 && zero16);
    CU_ASSERT_EQUAL(attn_convert_from_f32(ATTN_F16, hmask, h16, nm), ATTN_SUCCESS);
    cl_mem mask = upload_bytes(ctx, h16, nm * sizeof *h16);
    cl_mem zero_mask = upload_bytes(ctx, zero16, nm * sizeof *zero16);
    const float sinks[HQ] = {0.5f, -1.0f, 2.0f, -INFINITY}, zero_sinks[HQ] = {0};
    cl_mem bsinks = upload_bytes(ctx, sinks, sizeof sinks);
    cl_mem bzero = upload_bytes(ctx, zero_sinks, sizeof zero_sinks);

    attn_problem p = base_problem();
    p.mask = (attn_mask){mask, NULL, ATTN_F16, MASK_OFFSET, 0, 0, SKV, 1};
    p.sinks_buffer = bsinks;
    /* the expected result, from host copies */
    attn_problem hp = p;
    hp.mask.buffer = NULL;
    hp.mask.host = hmask;
    hp.sinks_buffer = NULL;
    hp.sinks = sinks;
    const size_t no = (size_t)B * HQ * SQ * D, nl = (size_t)B * HQ * SQ;
    float *ref = malloc(no * sizeof *ref), *ref_lse = malloc(nl * sizeof *ref_lse);
    CU_ASSERT_FATAL(ref && ref_lse);
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&hp, in.hq, in.hk, in.hv, ref, NULL, ref_lse),
                          ATTN_SUCCESS);
    attn_tensor out;
    cl_mem bo = harness_upload(ctx, ATTN_F32, ref, B, HQ, SQ, D, NULL, &out);
    cl_mem lse = upload_bytes(ctx, ref_lse, nl * sizeof *ref_lse);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bo);

    attn_status st = check(ctx, &p, &in, &out, NULL, lse);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st != ATTN_SUCCESS) printf("\n  mask + sinks: %s\n", attn_last_error(ctx));
    attn_problem other = p;
    other.mask.buffer = zero_mask;
    CU_ASSERT_EQUAL(check(ctx, &other, &in, &out, NULL, lse), ATTN_ERROR_MISMATCH);
    other = p;
    other.sinks_buffer = bzero;
    CU_ASSERT_EQUAL(check(ctx, &other, &in, &out, NULL, lse), ATTN_ERROR_MISMATCH);

    /* the whole path: a zero mask and -inf sinks change nothing, so this
     * holds whether or not the kernels apply them yet */
    const float no_sinks[HQ] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    cl_mem bnone = upload_bytes(ctx, no_sinks, sizeof no_sinks);
    other = p;
    other.mask.buffer = zero_mask;
    other.sinks_buffer = bnone;
    CU_ASSERT_EQUAL(attn_context_set_check(ctx, 1), ATTN_SUCCESS);
    st = attn_forward(ctx, &other, &in.q, &in.k, &in.v, &out, NULL, lse, NULL);
    CU_ASSERT_EQUAL(attn_context_set_check(ctx, 0), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st != ATTN_SUCCESS) printf("\n  forward in check mode: %s\n", attn_last_error(ctx));

    cl_mem bufs[] = {mask, zero_mask, bsinks, bzero, bnone, bo, lse};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) clReleaseMemObject(bufs[i]);
    free(h16);
    free(zero16);
    free(hmask);
    free(ref);
    free(ref_lse);
    inputs_free(&in);
}

/* Two sequences packed along one axis (stride_batch 0), rows 0..2 and 3..6;
 * row 7 is written by neither and holds NaN: check mode passes the packed
 * result, and names a wrong value in a written row of out or of the
 * [Hq][Sq] lse. */
static void test_check_packed(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    inputs in;
    inputs_make(ctx, 1, &in); /* the packed axis */
    in.q.stride_batch = in.k.stride_batch = in.v.stride_batch = 0;
    attn_problem p = base_problem();
    p.packed = 1;
    static const int qs[B] = {0, 3}, ql[B] = {3, 4}, ks[B] = {0, 5}, kl[B] = {5, 7};
    const attn_lengths L = {qs, ql, ks, kl};
    /* the reference over the axis repeated per entry (the padded layout) */
    const size_t nq = (size_t)HQ * SQ * D, nk = (size_t)HKV * SKV * D;
    float *rq = malloc(B * nq * sizeof(float)), *rk = malloc(B * nk * sizeof(float));
    float *rv = malloc(B * nk * sizeof(float)), *ref = malloc(B * nq * sizeof(float));
    float *ref_lse = malloc((size_t)B * HQ * SQ * sizeof(float));
    float *axis = malloc(nq * sizeof(float)), *axis_lse = malloc((size_t)HQ * SQ * sizeof(float));
    CU_ASSERT_FATAL(rq && rk && rv && ref && ref_lse && axis && axis_lse);
    for (int b = 0; b < B; b++) {
        memcpy(rq + b * nq, in.hq, nq * sizeof(float));
        memcpy(rk + b * nk, in.hk, nk * sizeof(float));
        memcpy(rv + b * nk, in.hv, nk * sizeof(float));
    }
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, rq, rk, rv, ref, &L, ref_lse), ATTN_SUCCESS);
    for (size_t i = 0; i < nq; i++) axis[i] = NAN;
    for (int i = 0; i < HQ * SQ; i++) axis_lse[i] = NAN;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HQ; h++)
            for (int s = qs[b]; s < qs[b] + ql[b]; s++) {
                const size_t row = ((size_t)b * HQ + h) * SQ + s;
                memcpy(axis + ((size_t)h * SQ + s) * D, ref + row * D, D * sizeof(float));
                axis_lse[h * SQ + s] = ref_lse[row];
            }
    attn_tensor out;
    cl_mem bo = harness_upload(ctx, ATTN_F32, axis, 1, HQ, SQ, D, NULL, &out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bo);
    out.stride_batch = 0;
    cl_mem lse = upload_bytes(ctx, axis_lse, (size_t)HQ * SQ * sizeof(float));

    attn_status st = check(ctx, &p, &in, &out, &L, lse);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st != ATTN_SUCCESS) printf("\n  packed: %s\n", attn_last_error(ctx));
    CU_ASSERT_EQUAL(check(ctx, &p, &in, &out, &L, NULL), ATTN_SUCCESS);
    /* head 2, row 4 (sequence 1's second row), element 5: off by 1 */
    const size_t at = ((size_t)2 * SQ + 4) * D + 5;
    const float bad = axis[at] + 1.0f;
    cl_command_queue queue = attn_context_queue(ctx);
    CU_ASSERT_EQUAL(clEnqueueWriteBuffer(queue, bo, CL_TRUE, at * sizeof(float), sizeof bad, &bad,
                                         0, NULL, NULL), CL_SUCCESS);
    CU_ASSERT_EQUAL(check(ctx, &p, &in, &out, &L, lse), ATTN_ERROR_MISMATCH);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "out[b=1, h=2, s=4, d=5]"));
    CU_ASSERT_EQUAL(clEnqueueWriteBuffer(queue, bo, CL_TRUE, at * sizeof(float), sizeof bad,
                                         &axis[at], 0, NULL, NULL), CL_SUCCESS);
    /* lse of head 1, row 0 (sequence 0) */
    const float bad_lse = axis_lse[SQ] + 1.0f;
    CU_ASSERT_EQUAL(clEnqueueWriteBuffer(queue, lse, CL_TRUE, SQ * sizeof(float), sizeof bad_lse,
                                         &bad_lse, 0, NULL, NULL), CL_SUCCESS);
    CU_ASSERT_EQUAL(check(ctx, &p, &in, &out, &L, lse), ATTN_ERROR_MISMATCH);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "lse[b=0, h=1, s=0]"));

    clReleaseMemObject(bo);
    clReleaseMemObject(lse);
    free(rq);
    free(rk);
    free(rv);
    free(ref);
    free(ref_lse);
    free(axis);
    free(axis_lse);
    inputs_free(&in);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_check_mask_and_sinks),
    HARNESS_TEST(test_check_packed),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("check_variants", tests); }

int main(void) { return harness_run("test_check_variants", register_tests); }
