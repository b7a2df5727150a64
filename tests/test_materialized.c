/* test_materialized.c -- attn_forward_materialized (CLBlast GEMMs around a
 * row softmax) against attn_reference_forward AND against attn_forward, so
 * that the tiled kernels get a second, independent check; its refusal of a
 * scores buffer beyond the device's max allocation; attn_attention_weights
 * against the seed's properties (rows sum to one, masked and pad entries
 * exactly zero); and CLBlast's indirect GEMM path (forced small).
 *
 * Cases cover MHA, GQA (group > Hkv and Hkv >= group), MQA, causal and
 * not, right/left/mixed padding with empty entries and NaN in every pad row, Sq < Skv and Sq > Skv, BSHD layouts with
 * offsets and gaps (NaN, which must stay NaN), in place, f16 and bf16. */
#define _POSIX_C_SOURCE 200809L
#include "cases.h"

#include <clblast_c.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The materialized path against the reference, and attn_forward (the
 * library's own family) against both: two device results each within the
 * tolerance of the reference are within twice the tolerance of each other.
 * Returns the number of failures. */
static int run_case(const harness_case *c)
{
    const size_t nq = (size_t)c->B * c->Hq * c->Sq * c->D, nrows = (size_t)c->B * c->Hq * c->Sq;
    float *mo = NULL, *mlse = NULL, *to = NULL, *tlse = NULL;
    int bad = harness_case_run(c, HARNESS_AUTO, attn_forward_materialized, "materialized", &mo,
                               &mlse);
    bad += harness_case_run(c, HARNESS_AUTO, attn_forward, "attn_forward", &to, &tlse);
    if (!bad) {
        const uint64_t seed = harness_seed(c->seed);
        double atol, rtol;
        attn_tolerance(c->dtype, &atol, &rtol);
        char what[128];
        snprintf(what, sizeof what, "%s: attn_forward O vs materialized", c->name);
        bad += harness_compare(what, to, mo, nq, 2 * atol, 2 * rtol, seed);
        if (!c->no_lse) {
            snprintf(what, sizeof what, "%s: attn_forward LSE vs materialized", c->name);
            bad += harness_compare(what, tlse, mlse, nrows, 2 * atol, 2 * rtol, seed);
        }
        CU_ASSERT_EQUAL(bad, 0);
    }
    free(mo), free(mlse), free(to), free(tlse);
    return bad;
}

/* Every case of the table's group through run_case. */
static void run_group(const char *group)
{
    int found = 0;
    for (size_t i = 0; i < harness_ncases; i++)
        if (strcmp(harness_cases[i].group, group) == 0) found++, run_case(&harness_cases[i]);
    CU_ASSERT(found > 0);
}

static const harness_layout bshd = {HARNESS_BSHD, 0, 0, 0};
static const harness_layout bshd_gappy = {HARNESS_BSHD, 11, 8, 4}; /* offset, row pad, capacity */

/* ---- shapes: MHA, both GQA batchings, MQA, decode, Sq > Skv ---- */

static void test_shapes(void) { run_group("materialized/shapes"); }

/* ---- padding: right, left, mixed, empty entries; NaN in every pad row ---- */

static void test_padding(void) { run_group("materialized/padding"); }

/* ---- f16 and bf16 storage (f32 copies, f32 GEMMs, narrowed results) ---- */

/* ---- the softmax's work-group reductions (one work-item per row is the
 * CPU default, 128 the GPU one): both sizes on rows of every remainder.
 * ATTN_SOFTMAX_WG is read at context creation, so each size runs in a
 * child process of this program with the variable in its environment. ---- */

static char self_path[4096];
static int child_size_index; /* the child's size: other data under each */

static void child_softmax_cases(void)
{
    for (size_t j = 0; j < harness_ncases; j++)
        if (strcmp(harness_cases[j].group, "materialized/softmax") == 0) {
            harness_case c = harness_cases[j];
            c.seed += (uint64_t)child_size_index;
            run_case(&c);
        }
}

/* A size that is not a power of two: refused before any work, naming the
 * variable. */
static void child_softmax_refused(void)
{
    attn_context *ctx = harness_context();
    attn_problem p = {.batch = 1, .q_heads = 1, .kv_heads = 1, .head_dim = 8, .q_len = 4,
                      .kv_len = 4, .dtype = ATTN_F32, .causal = 1, .scale = 0};
    attn_tensor t, o;
    float x[32];
    harness_fill_uniform(x, 32, 5, -1, 1);
    cl_mem m = harness_upload(ctx, ATTN_F32, x, 1, 1, 4, 8, NULL, &t);
    cl_mem mo = harness_alloc(ctx, ATTN_F32, 1, 1, 4, 8, NULL, &o);
    CU_ASSERT_FATAL(m && mo);
    CU_ASSERT_EQUAL(attn_forward_materialized(ctx, &p, &t, &t, &t, &o, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "ATTN_SOFTMAX_WG"));
    clReleaseMemObject(m), clReleaseMemObject(mo);
}

/* Runs this program's child mode with ATTN_SOFTMAX_WG=wg; its exit status. */
static int softmax_child(const char *mode, const char *wg, int index)
{
    char var[64], arg[16];
    snprintf(var, sizeof var, "ATTN_SOFTMAX_WG=%s", wg);
    snprintf(arg, sizeof arg, "%d", index);
    const char *const args[] = {mode, arg, NULL}, *const env[] = {var, NULL};
    return harness_wait_program(harness_start_program(self_path, args, env, NULL, NULL));
}

static void test_softmax_work_groups(void)
{
    static const char *const sizes[] = {"1", "8", "128"};
    for (int i = 0; i < 3; i++) CU_ASSERT_EQUAL(softmax_child("--child-softmax", sizes[i], i), 0);
    CU_ASSERT_EQUAL(softmax_child("--child-softmax-refused", "3", 0), 0);
}

static void test_storage_types(void) { run_group("materialized/storage"); }

/* ---- check mode applies to the materialized path too ---- */

static void test_check_mode(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_EQUAL_FATAL(attn_context_set_check(ctx, 1), ATTN_SUCCESS);
    run_group("materialized/check");
    attn_context_set_check(ctx, 0);
}

/* ---- refusal: a scores buffer beyond the device's max allocation ---- */

static void test_refuses_beyond_max_alloc(void)
{
    attn_context *ctx = harness_context();
    cl_ulong max_alloc = 0;
    CU_ASSERT_EQUAL_FATAL(clGetDeviceInfo(attn_context_device(ctx), CL_DEVICE_MAX_MEM_ALLOC_SIZE,
                                          sizeof max_alloc, &max_alloc, NULL), CL_SUCCESS);
    /* Hq x S x S floats just past the limit; D = 1 keeps the tensors tiny */
    const int Hq = 2, D = 1;
    const double s = ceil(sqrt((double)max_alloc / (4.0 * Hq))) + 1;
    if (s > (1 << 28)) {
        printf("\n  max allocation %llu bytes: no refusal reachable, skipped\n",
               (unsigned long long)max_alloc);
        return;
    }
    const int S = (int)s;
    attn_problem p = {.batch = 1, .q_heads = Hq, .kv_heads = 1, .head_dim = D, .q_len = S,
                      .kv_len = S, .dtype = ATTN_F32, .causal = 1, .scale = 0};
    attn_tensor tq, tk, tv, to;
    float *x = harness_xalloc((size_t)Hq * S);
    harness_fill_uniform(x, (size_t)Hq * S, 7, -1, 1);
    cl_mem mq = harness_upload(ctx, ATTN_F32, x, 1, Hq, S, D, NULL, &tq);
    cl_mem mk = harness_upload(ctx, ATTN_F32, x, 1, 1, S, D, NULL, &tk);
    cl_mem mv = harness_upload(ctx, ATTN_F32, x, 1, 1, S, D, NULL, &tv);
    cl_mem mo = harness_alloc(ctx, ATTN_F32, 1, Hq, S, D, NULL, &to);
    cl_mem ml = harness_float_buffer(ctx, (size_t)Hq * S);
    CU_ASSERT_FATAL(mq && mk && mv && mo && ml);
    size_t before = 0, after = 0;
    CU_ASSERT_EQUAL(attn_context_workspace_bytes(ctx, &before), ATTN_SUCCESS);
    cl_event done = (cl_event)&done; /* must come back NULL */
    attn_status st = attn_forward_materialized(ctx, &p, &tq, &tk, &tv, &to, NULL, ml, &done);
    CU_ASSERT_EQUAL(st, ATTN_ERROR_UNSUPPORTED);
    CU_ASSERT_PTR_NULL(done);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "max allocation"));
    printf("\n  S=%d: %s: %s\n", S, attn_status_name(st), attn_last_error(ctx));
    CU_ASSERT_EQUAL(attn_context_workspace_bytes(ctx, &after), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(after, before); /* nothing allocated */
    /* nothing written: O and LSE are still all NaN */
    float *o = harness_xalloc((size_t)Hq * S), *l = harness_xalloc((size_t)Hq * S);
    CU_ASSERT_EQUAL_FATAL(harness_download(ctx, ATTN_F32, &to, 1, Hq, S, D, o), 0);
    CU_ASSERT_EQUAL_FATAL(harness_read_floats(ctx, ml, l, (size_t)Hq * S), 0);
    int written = 0;
    for (size_t i = 0; i < (size_t)Hq * S; i++) written += !isnan(o[i]) || !isnan(l[i]);
    CU_ASSERT_EQUAL(written, 0);
    clReleaseMemObject(mq), clReleaseMemObject(mk), clReleaseMemObject(mv);
    clReleaseMemObject(mo), clReleaseMemObject(ml);
    free(x), free(o), free(l);
}

/* ---- bad arguments: named, nothing written ---- */

static void test_bad_arguments(void)
{
    attn_context *ctx = harness_context();
    attn_problem p = {.batch = 1, .q_heads = 4, .kv_heads = 2, .head_dim = 16, .q_len = 8,
                      .kv_len = 8, .dtype = ATTN_F32, .causal = 1, .scale = 0};
    attn_tensor tq, tk, tv, to;
    float x[4 * 8 * 16];
    harness_fill_uniform(x, sizeof x / sizeof x[0], 9, -1, 1);
    cl_mem mq = harness_upload(ctx, ATTN_F32, x, 1, 4, 8, 16, NULL, &tq);
    cl_mem mk = harness_upload(ctx, ATTN_F32, x, 1, 2, 8, 16, NULL, &tk);
    cl_mem mv = harness_upload(ctx, ATTN_F32, x, 1, 2, 8, 16, NULL, &tv);
    cl_mem mo = harness_alloc(ctx, ATTN_F32, 1, 4, 8, 16, NULL, &to);
    CU_ASSERT_FATAL(mq && mk && mv && mo);
    CU_ASSERT_EQUAL(attn_forward_materialized(NULL, &p, &tq, &tk, &tv, &to, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    attn_tensor small = tk;
    small.stride_head *= 4; /* reaches past the buffer */
    CU_ASSERT_EQUAL(attn_forward_materialized(ctx, &p, &tq, &small, &tv, &to, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "k"));
    attn_problem bad = p;
    bad.kv_heads = 3;
    CU_ASSERT_EQUAL(attn_forward_materialized(ctx, &bad, &tq, &tk, &tv, &to, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "kv_heads"));
    float o[4 * 8 * 16];
    CU_ASSERT_EQUAL_FATAL(harness_download(ctx, ATTN_F32, &to, 1, 4, 8, 16, o), 0);
    int written = 0;
    for (size_t i = 0; i < sizeof o / sizeof o[0]; i++) written += !isnan(o[i]);
    CU_ASSERT_EQUAL(written, 0);

    /* the weights API: batch entry and head in range, an array to write */
    float w[8 * 8];
    for (int i = 0; i < 64; i++) w[i] = 42.0f;
    CU_ASSERT_EQUAL(attn_attention_weights(ctx, &p, &tq, &tk, NULL, 1, 0, w),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "batch_index"));
    CU_ASSERT_EQUAL(attn_attention_weights(ctx, &p, &tq, &tk, NULL, 0, 4, w),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "head"));
    CU_ASSERT_EQUAL(attn_attention_weights(ctx, &p, &tq, &tk, NULL, 0, 0, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "weights"));
    CU_ASSERT_EQUAL(attn_attention_weights(ctx, &p, &tq, &small, NULL, 0, 0, w),
                    ATTN_ERROR_INVALID_ARGUMENT);
    int touched = 0;
    for (int i = 0; i < 64; i++) touched += w[i] != 42.0f;
    CU_ASSERT_EQUAL(touched, 0);
    clReleaseMemObject(mq), clReleaseMemObject(mk), clReleaseMemObject(mv);
    clReleaseMemObject(mo);
}

/* ---- attention weights: the seed's properties, and the values ---- */

/* The weights of (b, h) from the same inputs on the host, in double. */
static void host_weights(const attn_problem *p, const attn_lengths *L, const float *q,
                         const float *k, int b, int h, double *w)
{
    const int Sq = p->q_len, Skv = p->kv_len, D = p->head_dim;
    const int hk = h / (p->q_heads / p->kv_heads);
    const int qs = L->q_start[b], ql = L->q_len[b], ks = L->kv_start[b], kl = L->kv_len[b];
    const double scale = p->scale > 0 ? p->scale : 1.0 / sqrt((double)D);
    for (int i = 0; i < Sq * Skv; i++) w[i] = 0;
    for (int i = 0; i < ql; i++) {
        int vis = p->causal ? i + kl - ql + 1 : kl;
        vis = vis < 0 ? 0 : vis > kl ? kl : vis;
        double mx = -INFINITY, sum = 0, *row = w + (size_t)(qs + i) * Skv + ks;
        const float *qr = q + (((size_t)b * p->q_heads + h) * Sq + qs + i) * D;
        for (int j = 0; j < vis; j++) {
            const float *kr = k + (((size_t)b * p->kv_heads + hk) * Skv + ks + j) * D;
            double s = 0;
            for (int d = 0; d < D; d++) s += (double)qr[d] * kr[d];
            row[j] = s * scale;
            mx = row[j] > mx ? row[j] : mx;
        }
        for (int j = 0; j < vis; j++) sum += row[j] = exp(row[j] - mx);
        for (int j = 0; j < vis; j++) row[j] /= sum;
    }
}

static void check_weights(attn_dtype dtype, int B, int Hq, int Hkv, int D, int Sq, int Skv,
                          const int *qs, const int *ql, const int *ks, const int *kl,
                          const harness_layout *layout, uint64_t seed0)
{
    attn_context *ctx = harness_context();
    const uint64_t seed = harness_seed(seed0);
    const size_t nq = (size_t)B * Hq * Sq * D, nk = (size_t)B * Hkv * Skv * D;
    float *q = harness_xalloc(nq), *k = harness_xalloc(nk), *w = harness_xalloc((size_t)Sq * Skv);
    double *ref = malloc((size_t)Sq * Skv * sizeof *ref);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
    harness_fill_normal(q, nq, seed, 0, 1.5f);
    harness_fill_normal(k, nk, seed + 1, 0, 1.5f);
    harness_round(dtype, q, nq);
    harness_round(dtype, k, nk);
    harness_poison_pads(q, B, Hq, Sq, D, qs, ql);
    harness_poison_pads(k, B, Hkv, Skv, D, ks, kl);
    attn_problem p = {.batch = B, .q_heads = Hq, .kv_heads = Hkv, .head_dim = D, .q_len = Sq,
                      .kv_len = Skv, .dtype = dtype, .causal = 1, .scale = 0};
    attn_lengths L = {qs, ql, ks, kl};
    attn_tensor tq, tk;
    cl_mem mq = harness_upload(ctx, dtype, q, B, Hq, Sq, D, layout, &tq);
    cl_mem mk = harness_upload(ctx, dtype, k, B, Hkv, Skv, D, layout, &tk);
    CU_ASSERT_FATAL(mq && mk);
    double atol, rtol;
    attn_tolerance(dtype, &atol, &rtol);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < Hq; h += Hq > 1 ? Hq - 1 : 1) { /* first and last head */
            attn_status st = attn_attention_weights(ctx, &p, &tq, &tk, &L, b, h, w);
            CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
            if (st != ATTN_SUCCESS) {
                printf("\n  weights b=%d h=%d: %s: %s\n", b, h, attn_status_name(st),
                       attn_last_error(ctx));
                continue;
            }
            host_weights(&p, &L, q, k, b, h, ref);
            int bad_sum = 0, bad_mask = 0, bad_pad = 0, bad_value = 0;
            for (int r = 0; r < Sq; r++) {
                const int i = r - qs[b], content = i >= 0 && i < ql[b];
                int vis = content ? i + kl[b] - ql[b] + 1 : 0;
                vis = vis < 0 ? 0 : vis > kl[b] ? kl[b] : vis;
                double sum = 0;
                for (int c = 0; c < Skv; c++) {
                    const float x = w[(size_t)r * Skv + c];
                    const int j = c - ks[b], visible = j >= 0 && j < vis;
                    sum += x;
                    if (!content) bad_pad += x != 0.0f;          /* pad rows: all zero */
                    else if (!visible) bad_mask += x != 0.0f;    /* masked: exactly zero */
                    else if (!(fabs(x - ref[(size_t)r * Skv + c]) <=
                               atol + rtol * fabs(ref[(size_t)r * Skv + c])))
                        bad_value++;
                }
                if (vis > 0 && !(fabs(sum - 1.0) <= 1e-5)) bad_sum++; /* rows sum to one */
            }
            if (bad_sum + bad_mask + bad_pad + bad_value)
                printf("\n  weights %s b=%d h=%d (seed %llu): %d rows not summing to one, %d "
                       "masked and %d pad entries not zero, %d values off\n",
                       attn_dtype_name(dtype), b, h, (unsigned long long)seed, bad_sum,
                       bad_mask, bad_pad, bad_value);
            CU_ASSERT_EQUAL(bad_sum + bad_mask + bad_pad + bad_value, 0);
        }
    clReleaseMemObject(mq), clReleaseMemObject(mk);
    free(q), free(k), free(w), free(ref);
}

static void test_weights(void)
{
    /* causal with left padding (entry 1), right padding (2), an empty entry
     * (3), and fewer queries than keys (4: decode-like, bottom-right) */
    static const int qs[5] = {0, 7, 0, 0, 20}, ql[5] = {24, 17, 15, 0, 4};
    static const int ks[5] = {0, 7, 0, 0, 0}, kl[5] = {24, 17, 20, 24, 24};
    check_weights(ATTN_F32, 5, 4, 2, 16, 24, 24, qs, ql, ks, kl, NULL, 1401);
    check_weights(ATTN_F16, 5, 4, 1, 16, 24, 24, qs, ql, ks, kl, &bshd_gappy, 1402);
}

/* ---- an application's out-of-order queue: every dependent step of the
 * path is ordered by barriers; two calls back to back share the buffers.
 * (PoCL happens to run this in order even without the barriers; a driver
 * that reorders makes it a real check.) ---- */

static void test_out_of_order_queue(void)
{
    attn_context *h = harness_context();
    cl_device_id dev = attn_context_device(h);
    cl_command_queue_properties supported = 0;
    clGetDeviceInfo(dev, CL_DEVICE_QUEUE_PROPERTIES, sizeof supported, &supported, NULL);
    if (!(supported & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)) {
        printf("\n  the device has no out-of-order queues: skipped\n");
        return;
    }
    cl_int err;
    cl_context cctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CU_ASSERT_EQUAL_FATAL(err, CL_SUCCESS);
    cl_command_queue queue =
        clCreateCommandQueue(cctx, dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
    CU_ASSERT_EQUAL_FATAL(err, CL_SUCCESS);
    attn_context *ctx = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create_from_queue(queue, &ctx), ATTN_SUCCESS);

    enum { B = 3, HQ = 4, HKV = 2, D = 32, S = 40 };
    static const int qs[B] = {0, 9, 0}, ql[B] = {40, 31, 17}, ks[B] = {0, 9, 0}, kl[B] = {40, 31, 17};
    const attn_lengths L = {qs, ql, ks, kl};
    const size_t nq = (size_t)B * HQ * S * D, nkv = (size_t)B * HKV * S * D;
    float *q[2], *k[2], *v[2], *ref[2], *got = harness_xalloc(nq), *w = harness_xalloc(S * S);
    attn_tensor tq[2], tk[2], tv[2], to[2];
    cl_mem mem[8];
    for (int i = 0; i < 2; i++) {
        q[i] = harness_xalloc(nq), k[i] = harness_xalloc(nkv), v[i] = harness_xalloc(nkv), ref[i] = harness_xalloc(nq);
        harness_fill_normal(q[i], nq, 1601 + 10 * i, 0, 1);
        harness_fill_normal(k[i], nkv, 1602 + 10 * i, 0, 1);
        harness_fill_uniform(v[i], nkv, 1603 + 10 * i, -2, 2);
        harness_round(ATTN_F16, q[i], nq);
        harness_round(ATTN_F16, k[i], nkv);
        harness_round(ATTN_F16, v[i], nkv);
        attn_problem p = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = S,
                          .kv_len = S, .dtype = ATTN_F16, .causal = 1, .scale = 0};
        CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q[i], k[i], v[i], ref[i], &L, NULL),
                              ATTN_SUCCESS);
        mem[4 * i] = harness_upload(ctx, ATTN_F16, q[i], B, HQ, S, D, &bshd, &tq[i]);
        mem[4 * i + 1] = harness_upload(ctx, ATTN_F16, k[i], B, HKV, S, D, NULL, &tk[i]);
        mem[4 * i + 2] = harness_upload(ctx, ATTN_F16, v[i], B, HKV, S, D, &bshd, &tv[i]);
        mem[4 * i + 3] = harness_alloc(ctx, ATTN_F16, B, HQ, S, D, &bshd_gappy, &to[i]);
        CU_ASSERT_FATAL(mem[4 * i] && mem[4 * i + 1] && mem[4 * i + 2] && mem[4 * i + 3]);
    }
    const attn_problem p = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = S,
                            .kv_len = S, .dtype = ATTN_F16, .causal = 1, .scale = 0};
    for (int i = 0; i < 2; i++) /* back to back, no waits */
        CU_ASSERT_EQUAL(attn_forward_materialized(ctx, &p, &tq[i], &tk[i], &tv[i], &to[i], &L,
                                                  NULL, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(clFinish(queue), CL_SUCCESS);
    double atol, rtol;
    attn_tolerance(ATTN_F16, &atol, &rtol);
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL_FATAL(harness_download(ctx, ATTN_F16, &to[i], B, HQ, S, D, got), 0);
        CU_ASSERT_EQUAL(harness_compare("out-of-order queue", got, ref[i], nq, atol, rtol, 1601),
                        0);
    }
    /* the weights are read back only after the softmax (a barrier orders them) */
    CU_ASSERT_EQUAL(attn_attention_weights(ctx, &p, &tq[0], &tk[0], &L, 1, 3, w), ATTN_SUCCESS);
    int bad = 0;
    for (int r = 9; r < S; r++) {
        double sum = 0;
        for (int c = 0; c < S; c++) sum += w[r * S + c];
        bad += !(fabs(sum - 1.0) <= 1e-5);
    }
    CU_ASSERT_EQUAL(bad, 0);
    for (int i = 0; i < 8; i++) clReleaseMemObject(mem[i]);
    for (int i = 0; i < 2; i++) free(q[i]), free(k[i]), free(v[i]), free(ref[i]);
    free(got), free(w);
    attn_context_release(ctx);
    clReleaseCommandQueue(queue);
    clReleaseContext(cctx);
}

/* ---- CLBlast's indirect GEMMs (pad/transpose copies around the main
 * kernel), which it picks only for large products: forced here. Last in the
 * suite: the override stays for the rest of the process. ---- */

static void test_indirect_gemm(void)
{
    attn_context *ctx = harness_context();
    const char *names[] = {"XGEMM_MIN_INDIRECT_SIZE"};
    const size_t values[] = {8};
    CLBlastStatusCode s = CLBlastOverrideParameters(attn_context_device(ctx), "GemmRoutine",
                                                    CLBlastPrecisionSingle, 1, names, values);
    CU_ASSERT_EQUAL_FATAL(s, CLBlastSuccess);
    run_group("materialized/indirect");
}

static const harness_test tests[] = {
    HARNESS_TEST(test_shapes),
    HARNESS_TEST(test_padding),
    HARNESS_TEST(test_softmax_work_groups),
    HARNESS_TEST(test_storage_types),
    HARNESS_TEST(test_check_mode),
    HARNESS_TEST(test_refuses_beyond_max_alloc),
    HARNESS_TEST(test_bad_arguments),
    HARNESS_TEST(test_weights),
    HARNESS_TEST(test_out_of_order_queue),
    HARNESS_TEST(test_indirect_gemm),
    HARNESS_END
};

static const harness_test child_cases[] = {HARNESS_TEST(child_softmax_cases), HARNESS_END};
static const harness_test child_refused[] = {HARNESS_TEST(child_softmax_refused), HARNESS_END};

static void register_tests(void) { harness_add_suite("materialized", tests); }
static void register_child_cases(void) { harness_add_suite("materialized (child)", child_cases); }
static void register_child_refused(void)
{
    harness_add_suite("materialized (child)", child_refused);
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "--child-softmax") == 0) {
        child_size_index = atoi(argv[2]);
        return harness_run("test_materialized --child-softmax", register_child_cases);
    }
    if (argc > 1 && strcmp(argv[1], "--child-softmax-refused") == 0)
        return harness_run("test_materialized --child-softmax-refused", register_child_refused);
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n > 0) self_path[n] = 0;
    else snprintf(self_path, sizeof self_path, "%s", argv[0]);
    return harness_run("test_materialized", register_tests);
}
