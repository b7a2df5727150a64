/* test_materialized.c -- attn_forward_materialized (CLBlast GEMMs around a
 * row softmax) against attn_reference_forward AND against attn_forward, so
 * that the tiled kernels get a second, independent check; its refusal of a
 * scores buffer beyond the device's max allocation; attn_attention_weights
 * against the seed's properties (rows sum to one, masked and pad entries
 * exactly zero); and CLBlast's indirect GEMM path (forced small). The
 * variants (window, softcap, sinks, ALiBi, mask, packed), alone and
 * together, against the reference, for both the forward and the weights.
 *
 * Cases cover MHA, GQA (group > Hkv and Hkv >= group), MQA, causal and
 * not, right/left/mixed padding with empty entries and NaN in every pad row, Sq < Skv and Sq > Skv, BSHD layouts with
 * offsets and gaps (NaN, which must stay NaN), in place, f16 and bf16. */
#define _POSIX_C_SOURCE 200809L
#include "blas/blas.h" /* ATTN_CLBLAST_MAX_INDEX */
#include "core/context.h" /* max_alloc, lowered by test_packed_sized_by_entry */
#include "core/program.h" /* attn_kernel_source: doctored kernels */
#include "cases.h"

#include <clblast_c.h>
#include <float.h>
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
static void child_softmax_variants(void); /* the variants' rows (below) */

/* One query over S keys whose logits are 0 but one of 300 at `spike`: the
 * softmax is one-hot (e^-300 is below f32), so O is V's row there exactly.
 * Small logits hide a wrong row maximum (the exponentials' ratio is
 * right whatever is subtracted); this one does not, wherever the spike
 * falls among a work-group's lanes. */
static void softmax_spike(attn_context *ctx, int S, int spike)
{
    enum { D = 8 };
    const attn_problem p = {.batch = 1, .q_heads = 1, .kv_heads = 1, .head_dim = D, .q_len = 1,
                            .kv_len = S, .dtype = ATTN_F32, .causal = 0, .scale = 1.0f};
    float q[D] = {1.0f}, o[D];
    float *k = calloc((size_t)S * D, sizeof(float)), *v = harness_xalloc((size_t)S * D);
    CU_ASSERT_PTR_NOT_NULL_FATAL(k);
    k[(size_t)spike * D] = 300.0f;
    for (int j = 0; j < S; j++)
        for (int d = 0; d < D; d++) v[(size_t)j * D + d] = (float)(j * D + d);
    attn_tensor tq, tk, tv, to;
    cl_mem mq = harness_upload(ctx, ATTN_F32, q, 1, 1, 1, D, NULL, &tq);
    cl_mem mk = harness_upload(ctx, ATTN_F32, k, 1, 1, S, D, NULL, &tk);
    cl_mem mv = harness_upload(ctx, ATTN_F32, v, 1, 1, S, D, NULL, &tv);
    cl_mem mo = harness_alloc(ctx, ATTN_F32, 1, 1, 1, D, NULL, &to);
    CU_ASSERT_FATAL(mq && mk && mv && mo);
    CU_ASSERT_EQUAL(attn_forward_materialized(ctx, &p, &tq, &tk, &tv, &to, NULL, NULL, NULL),
                    ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(harness_download(ctx, ATTN_F32, &to, 1, 1, 1, D, o), 0);
    int wrong = 0;
    for (int d = 0; d < D; d++) wrong += o[d] != v[(size_t)spike * D + d];
    if (wrong) printf("\n  spike at %d of %d keys: O[0] = %g, want %g\n", spike, S, o[0],
                      v[(size_t)spike * D]);
    CU_ASSERT_EQUAL(wrong, 0);
    clReleaseMemObject(mq), clReleaseMemObject(mk), clReleaseMemObject(mv);
    clReleaseMemObject(mo);
    free(k), free(v);
}

static void child_softmax_cases(void)
{
    for (size_t j = 0; j < harness_ncases; j++)
        if (strcmp(harness_cases[j].group, "materialized/softmax") == 0) {
            harness_case c = harness_cases[j];
            c.seed += (uint64_t)child_size_index;
            run_case(&c);
        }
    child_softmax_variants();
    /* the spike in every lane of 8 and of 128 at least once, and past them */
    static const int spikes[][2] = {{64, 40}, {64, 63}, {64, 0}, {300, 5}, {300, 255},
                                    {300, 299}, {9, 7}, {9, 8}};
    for (size_t i = 0; i < sizeof spikes / sizeof spikes[0]; i++)
        softmax_spike(harness_context(), spikes[i][0], spikes[i][1]);
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
    /* written plainly, or refused: strtol took " 8" and "+8" */
    CU_ASSERT_EQUAL(softmax_child("--child-softmax-refused", " 8", 0), 0);
    CU_ASSERT_EQUAL(softmax_child("--child-softmax-refused", "+8", 0), 0);
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

/* Check mode on kernels whose O is twice the answer (materialized.cl's
 * probabilities doubled, from a kernel folder): ATTN_ERROR_MISMATCH naming
 * the reference; with check mode off the same call succeeds. */
static void test_check_mode_catches(void)
{
    attn_context *ctx = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &ctx), ATTN_SUCCESS);
    char dir[256], path[512];
    harness_temp_dir(dir, sizeof dir, "materialized-doctored");
    static const char *const names[] = {"common.cl", "variants.cl", "materialized.cl"};
    static const char from[] = "const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;";
    int doctored = 0;
    for (int i = 0; i < 3; i++) {
        char *text = attn_kernel_source(ctx, names[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(text);
        char *at = strstr(text, from);
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "w");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        if (i == 2 && at) {
            fprintf(f, "%.*sconst float inv = sum > 0.0f ? 2.0f / sum : 0.0f;%s",
                    (int)(at - text), text, at + strlen(from));
            doctored = 1;
        } else {
            fputs(text, f);
        }
        CU_ASSERT_EQUAL(fclose(f), 0);
        free(text);
    }
    CU_ASSERT_FATAL(doctored);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_kernel_dir(ctx, dir), ATTN_SUCCESS);
    const attn_problem p = harness_problem(1, 2, 1, 16, 9, 9, 1);
    const size_t nq = (size_t)2 * 9 * 16, nkv = (size_t)9 * 16;
    float *q = harness_xalloc(nq), *kv = harness_xalloc(nkv);
    harness_fill_uniform(q, nq, 81, -1, 1);
    harness_fill_uniform(kv, nkv, 82, 0.5f, 1); /* O away from 0: doubled, it differs */
    attn_tensor tq, tk, to;
    cl_mem mq = harness_upload(ctx, ATTN_F32, q, 1, 2, 9, 16, NULL, &tq);
    cl_mem mk = harness_upload(ctx, ATTN_F32, kv, 1, 1, 9, 16, NULL, &tk);
    cl_mem mo = harness_alloc(ctx, ATTN_F32, 1, 2, 9, 16, NULL, &to);
    CU_ASSERT_FATAL(mq && mk && mo);
    CU_ASSERT_EQUAL(attn_forward_materialized(ctx, &p, &tq, &tk, &tk, &to, NULL, NULL, NULL),
                    ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_check(ctx, 1), ATTN_SUCCESS);
    const attn_status st = attn_forward_materialized(ctx, &p, &tq, &tk, &tk, &to, NULL, NULL, NULL);
    printf("\n  doctored, check mode: %s: %s", attn_status_name(st), attn_last_error(ctx));
    CU_ASSERT_EQUAL(st, ATTN_ERROR_MISMATCH);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "reference"));
    clReleaseMemObject(mq), clReleaseMemObject(mk), clReleaseMemObject(mo);
    free(q), free(kv);
    attn_context_release(ctx);
    harness_remove_tree(dir);
}

/* ---- refusal: a buffer beyond the device's max allocation ---- */

/* attn_forward_materialized at Hq heads, S = q_len = kv_len, D = 1 (tiny
 * tensors): refused with ATTN_ERROR_UNSUPPORTED and `want` in the message,
 * nothing allocated, nothing written. */
static void refused_at(attn_context *ctx, int Hq, int S, const char *want)
{
    const int D = 1;
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
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), want));
    printf("\n  Hq=%d S=%d: %s: %s\n", Hq, S, attn_status_name(st), attn_last_error(ctx));
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

/* The scores of two heads just past the limit; then one head's scores
 * just within it (and within int indices), whose GEMM temporary (CLBlast's
 * padded copies of the scores, Q and K) is not: once found only after the
 * scores were allocated and the work begun. */
static void test_refuses_beyond_max_alloc(void)
{
    attn_context *ctx = harness_context();
    cl_ulong max_alloc = 0;
    CU_ASSERT_EQUAL_FATAL(clGetDeviceInfo(attn_context_device(ctx), CL_DEVICE_MAX_MEM_ALLOC_SIZE,
                                          sizeof max_alloc, &max_alloc, NULL), CL_SUCCESS);
    const double past = ceil(sqrt((double)max_alloc / (4.0 * 2))) + 1;
    /* within the allocation and CLBlast's int indices, which a device of
     * more than 8 GiB a buffer (an H100) reaches first */
    const double most = fmin((double)max_alloc / 4.0, (double)ATTN_CLBLAST_MAX_INDEX);
    const double within = floor(sqrt(most));
    if (within > (1 << 28)) {
        printf("\n  max allocation %llu bytes: no refusal reachable, skipped\n",
               (unsigned long long)max_alloc);
        return;
    }
    refused_at(ctx, 2, (int)past, "max allocation");
    refused_at(ctx, 1, (int)within, "the GEMM's temporary");

    /* the weights of an f16 head whose f32 copy of K (64 x 64 floats, 16
     * KiB) passes a lowered limit: UNSUPPORTED, as attn_forward_materialized
     * says of the same copies (it was OUT_OF_MEMORY at the reserve) */
    const attn_problem p = {.batch = 1, .q_heads = 1, .kv_heads = 1, .head_dim = 64, .q_len = 1,
                            .kv_len = 64, .dtype = ATTN_F16, .causal = 0, .scale = 0};
    float x[64 * 64];
    harness_fill_uniform(x, 64 * 64, 3, -1, 1);
    attn_tensor tq, tk;
    cl_mem mq = harness_upload(ctx, ATTN_F16, x, 1, 1, 1, 64, NULL, &tq);
    cl_mem mk = harness_upload(ctx, ATTN_F16, x, 1, 1, 64, 64, NULL, &tk);
    CU_ASSERT_FATAL(mq && mk);
    float w[64];
    const cl_ulong real = ctx->max_alloc;
    ctx->max_alloc = 4096;
    CU_ASSERT_EQUAL(attn_attention_weights(ctx, &p, &tq, &tk, NULL, 0, 0, w),
                    ATTN_ERROR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "the f32 copy of this head's K"));
    ctx->max_alloc = real;
    clReleaseMemObject(mq), clReleaseMemObject(mk);
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

/* Logits outside the contract (a NaN or inf in a visible Q or K row, or a
 * logit past core.h's bound): the materialized path gives each row what
 * attn_forward gives, zeros and an LSE of -inf (the sink's with sinks);
 * it gave NaN (a NaN sum times a zero inverse), and NaN weights. */
static void test_nonfinite_logits_as_forward(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    enum { S = 6, D = 8 };
    const size_t n = (size_t)S * D;
    static const float sinks[1] = {0.25f};
    for (int mode = 0; mode < 4; mode++)
        for (int sink = 0; sink < 2; sink++) {
            float q[S * D], k[S * D], v[S * D], o[2][S * D], lse[2][S];
            harness_fill_uniform(q, n, 1700 + (uint64_t)mode, -1, 1);
            harness_fill_uniform(k, n, 1710, -1, 1);
            harness_fill_uniform(v, n, 1720, -1, 1);
            if (mode == 0) q[2 * D + 1] = NAN;      /* one query row */
            if (mode == 1) k[1 * D + 3] = NAN;      /* one key: every later row sees it */
            if (mode == 2) k[1 * D + 3] = INFINITY;
            if (mode == 3)
                for (int d = 0; d < D; d++) q[2 * D + d] = 3e38f; /* past the bound */
            attn_problem p = {.batch = 1, .q_heads = 1, .kv_heads = 1, .head_dim = D,
                              .q_len = S, .kv_len = S, .dtype = ATTN_F32, .causal = 1};
            if (sink) p.sinks = sinks;
            harness_head h;
            CU_ASSERT_EQUAL_FATAL(harness_head_upload(ctx, q, k, v, S, S, D, &h), 0);
            for (int path = 0; path < 2; path++) {
                const attn_status st =
                    (path ? attn_forward_materialized : attn_forward)(ctx, &p, &h.q, &h.k, &h.v,
                                                                      &h.o, NULL, h.lse, NULL);
                CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
                CU_ASSERT_EQUAL_FATAL(harness_download(ctx, ATTN_F32, &h.o, 1, 1, S, D, o[path]),
                                      0);
                CU_ASSERT_EQUAL_FATAL(harness_read_floats(ctx, h.lse, lse[path], S), 0);
            }
            int differ = 0;
            for (int i = 0; i < S; i++)
                for (int d = 0; d <= D; d++) {
                    const float a = d < D ? o[0][i * D + d] : lse[0][i];
                    const float b = d < D ? o[1][i * D + d] : lse[1][i];
                    const float tol = 4e-6f + 4e-6f * fabsf(a);
                    const int same = isnan(a) ? isnan(b)
                                              : a == b || (isfinite(a) && isfinite(b) &&
                                                           fabsf(a - b) <= tol);
                    if (!same && differ++ == 0)
                        printf("\n  mode %d%s: row %d %s: attn_forward %g, materialized %g", mode,
                               sink ? " (sink)" : "", i, d < D ? "O" : "LSE", a, b);
                }
            CU_ASSERT_EQUAL(differ, 0);
            harness_head_release(&h);
        }
}

static void test_out_of_order_queue(void)
{
    attn_context *ctx;
    cl_command_queue queue;
    cl_context cctx;
    if (!harness_out_of_order_context(&ctx, &queue, &cctx)) return;

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
    harness_app_release(ctx, queue, cctx);
}

/* ==== the variants: sliding window, softcap, sinks, ALiBi, additive mask,
 * packed sequences, alone and together, against attn_reference_forward
 * (the truth), for attn_forward_materialized and attn_attention_weights ==== */

enum { VMAX_HEADS = 8 };
enum { VMASK_NONE, VMASK_F32, VMASK_F16, VMASK_CAUSAL, VMASK_ZERO };
enum { VSINK_NONE, VSINK_HOST, VSINK_BUFFER, VSINK_NEG_INF };
enum { VPACK_NONE, VPACK_COPIES, VPACK_SHARED }; /* packed: a copy per entry, or batch stride 0 */

typedef struct vcase {
    const char *name;
    attn_dtype dtype;
    int B, Hq, Hkv, D, Sq, Skv, causal;
    const int *qs, *ql, *ks, *kl; /* NULL: full lengths */
    int window, left, right;      /* use_window and its sides */
    float softcap, amp;           /* amp: Q and K are normal(0, amp); 0 means 1 */
    int sinks;                    /* VSINK_*: head 1 of VSINK_HOST / _BUFFER has a -inf sink */
    float alibi;                  /* > 0: max_bias; < 0: explicit slopes (one negative) */
    int mask;                     /* VMASK_* */
    int packed;                   /* VPACK_* */
    uint64_t seed;
    int no_lse;                   /* no LSE asked for (packed entries' rows may then meet) */
} vcase;

/* One case's data: the device call's problem and the reference's (host
 * sinks and mask), BHSD host inputs, and their device copies. */
typedef struct vdata {
    attn_problem p, ref;
    attn_lengths L;
    const attn_lengths *lp; /* &L, or NULL for full lengths */
    size_t nq, nkv;
    float *q, *k, *v, *mask; /* mask: the host elements at its strides, or NULL */
    float sinks[VMAX_HEADS], slopes[VMAX_HEADS];
    cl_mem mem[5]; /* q, k, v, mask, sinks buffer */
    attn_tensor tq, tk, tv;
} vdata;

static int in_region(const int *start, const int *len, int b, int S, int s)
{
    const int lo = start ? start[b] : 0, n = len ? len[b] : S;
    return s >= lo && s < lo + n;
}

/* The mask of c: elements at offset + b sb + h sh + r sq + c sk, gaps NaN
 * (never to be read), in m (buffer NULL until uploaded) and *host. */
static float *make_mask(const vcase *c, uint64_t seed, attn_mask *m)
{
    memset(m, 0, sizeof *m);
    const int shared = c->packed != VPACK_NONE || c->mask != VMASK_F32;
    m->dtype = c->mask == VMASK_F32 || c->mask == VMASK_CAUSAL ? ATTN_F32 : ATTN_F16;
    m->offset = c->mask == VMASK_F32 ? 5 : 0;
    m->stride_kv = 1;
    m->stride_q = c->mask == VMASK_ZERO ? 0 : (size_t)c->Skv + (c->mask == VMASK_F32 ? 3 : 0);
    m->stride_head = shared ? 0 : (size_t)c->Sq * m->stride_q;
    m->stride_batch = shared ? 0 : (size_t)c->Hq * m->stride_head;
    const size_t n = m->offset + (size_t)(c->B - 1) * m->stride_batch +
                     (size_t)(c->Hq - 1) * m->stride_head + (size_t)(c->Sq - 1) * m->stride_q +
                     (size_t)c->Skv;
    float *x = harness_xalloc(n);
    harness_rng rng;
    harness_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) x[i] = NAN;
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->Hq; h++)
            for (int r = 0; r < c->Sq; r++)
                for (int col = 0; col < c->Skv; col++) {
                    float *e = x + m->offset + b * m->stride_batch + h * m->stride_head +
                               r * m->stride_q + col * m->stride_kv;
                    const double u = harness_rng_uniform(&rng);
                    if (c->mask == VMASK_ZERO) *e = 0.0f;
                    else if (c->mask == VMASK_CAUSAL) *e = col > r + c->Skv - c->Sq ? -INFINITY : 0.0f;
                    else if (r % 7 == 2) *e = -INFINITY; /* a row the mask hides entirely */
                    else if (u < 0.15) *e = -INFINITY;
                    else if (u < 0.2 && c->mask == VMASK_F32) *e = -FLT_MAX; /* finfo.min */
                    else *e = (float)(4.0 * harness_rng_uniform(&rng) - 2.5);
                }
    harness_round(m->dtype, x, n);
    m->host = x;
    return x;
}

/* A device copy of n floats as storage type t; NULL after a message. */
static cl_mem device_floats(attn_context *ctx, attn_dtype t, const float *x, size_t n)
{
    void *conv = malloc(n * attn_dtype_size(t));
    cl_mem m = NULL;
    if (conv && attn_convert_from_f32(t, x, conv, n) == ATTN_SUCCESS) {
        cl_int err;
        m = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                           n * attn_dtype_size(t), conv, &err);
        if (err != CL_SUCCESS) printf("\n  clCreateBuffer: %d\n", (int)err), m = NULL;
    }
    free(conv);
    return m;
}

/* The inputs: independent per entry, or (packed) one token axis shared by
 * every entry, its rows outside every entry's region NaN. one_hot: V row s
 * is the unit vector e_s (D >= Skv), so that O holds the weights. */
static void fill_inputs(const vcase *c, uint64_t seed, int one_hot, vdata *d)
{
    const int B = c->B, per = c->packed ? 1 : B; /* entries drawn */
    const size_t q1 = (size_t)c->Hq * c->Sq * c->D, kv1 = (size_t)c->Hkv * c->Skv * c->D;
    d->q = harness_xalloc(d->nq), d->k = harness_xalloc(d->nkv), d->v = harness_xalloc(d->nkv);
    harness_fill_qkv(d->q, q1 * per, d->k, d->v, kv1 * per, seed, c->amp > 0 ? c->amp : 1.0f,
                     -2.0f, 2.0f);
    for (size_t i = 0; one_hot && i < kv1 * per; i++)
        d->v[i] = (float)((i / c->D) % c->Skv == i % c->D);
    harness_round(c->dtype, d->q, q1 * per);
    harness_round(c->dtype, d->k, kv1 * per);
    harness_round(c->dtype, d->v, kv1 * per);
    if (!c->packed) {
        harness_poison_pads(d->q, B, c->Hq, c->Sq, c->D, c->qs, c->ql);
        harness_poison_pads(d->k, B, c->Hkv, c->Skv, c->D, c->ks, c->kl);
        harness_poison_pads(d->v, B, c->Hkv, c->Skv, c->D, c->ks, c->kl);
        return;
    }
    float *t[3] = {d->q, d->k, d->v};
    for (int a = 0; a < 3; a++) { /* rows of no entry: NaN; then a copy per entry */
        const int H = a ? c->Hkv : c->Hq, S = a ? c->Skv : c->Sq;
        const int *st = a ? c->ks : c->qs, *ln = a ? c->kl : c->ql;
        for (int s = 0; s < S; s++) {
            int used = 0;
            for (int b = 0; b < B; b++) used |= in_region(st, ln, b, S, s);
            for (int h = 0; !used && h < H; h++)
                for (int x = 0; x < c->D; x++) t[a][((size_t)h * S + s) * c->D + x] = NAN;
        }
        const size_t one = (size_t)H * S * c->D;
        for (int b = 1; b < B; b++) memcpy(t[a] + b * one, t[a], one * sizeof(float));
    }
}

/* c's problems and data; device buffers when ctx is not NULL. */
static void vdata_make(attn_context *ctx, const vcase *c, int one_hot, vdata *d)
{
    memset(d, 0, sizeof *d);
    CU_ASSERT_FATAL(c->Hq <= VMAX_HEADS);
    const uint64_t seed = harness_seed(c->seed);
    attn_problem p = harness_problem(c->B, c->Hq, c->Hkv, c->D, c->Sq, c->Skv, c->causal);
    p.dtype = c->dtype;
    p.use_window = c->window, p.window_left = c->left, p.window_right = c->right;
    p.softcap = c->softcap;
    for (int h = 0; h < c->Hq; h++) {
        d->sinks[h] = c->sinks == VSINK_NEG_INF || h == 1 ? -INFINITY : 1.5f - 0.7f * h;
        d->slopes[h] = h == 2 ? -0.25f : 0.6f / (h + 1);
    }
    if (c->alibi > 0) p.alibi_max_bias = c->alibi;
    if (c->alibi < 0) p.alibi_slopes = d->slopes;
    p.packed = c->packed != VPACK_NONE;
    d->L = (attn_lengths){c->qs, c->ql, c->ks, c->kl};
    d->lp = c->qs || c->ql || c->ks || c->kl ? &d->L : NULL;
    d->nq = (size_t)c->B * c->Hq * c->Sq * c->D, d->nkv = (size_t)c->B * c->Hkv * c->Skv * c->D;
    fill_inputs(c, seed, one_hot, d);
    if (c->mask) d->mask = make_mask(c, seed + 7, &p.mask);
    d->ref = p;
    if (c->sinks) d->ref.sinks = d->sinks;
    if (c->sinks == VSINK_HOST || c->sinks == VSINK_NEG_INF) p.sinks = d->sinks;
    d->p = p;
    if (!ctx) return;
    /* packed, shared: one entry's tensors, read by all through batch stride 0 */
    const int Bd = c->packed == VPACK_SHARED ? 1 : c->B;
    const harness_layout *lq = c->dtype == ATTN_F32 ? NULL : &bshd;
    d->mem[0] = harness_upload(ctx, c->dtype, d->q, Bd, c->Hq, c->Sq, c->D, lq, &d->tq);
    d->mem[1] = harness_upload(ctx, c->dtype, d->k, Bd, c->Hkv, c->Skv, c->D, NULL, &d->tk);
    d->mem[2] = harness_upload(ctx, c->dtype, d->v, Bd, c->Hkv, c->Skv, c->D, NULL, &d->tv);
    CU_ASSERT_FATAL(d->mem[0] && d->mem[1] && d->mem[2]);
    if (c->packed == VPACK_SHARED) d->tq.stride_batch = d->tk.stride_batch = d->tv.stride_batch = 0;
    if (c->mask) {
        const attn_mask *m = &p.mask;
        const size_t n = m->offset + (size_t)(c->B - 1) * m->stride_batch +
                         (size_t)(c->Hq - 1) * m->stride_head + (size_t)(c->Sq - 1) * m->stride_q +
                         (size_t)c->Skv;
        CU_ASSERT_PTR_NOT_NULL_FATAL(d->mem[3] = device_floats(ctx, m->dtype, d->mask, n));
        d->p.mask.buffer = d->mem[3];
        d->ref.mask.buffer = d->mem[3]; /* the reference reads .host; it wants both set */
    }
    if (c->sinks == VSINK_BUFFER) {
        CU_ASSERT_PTR_NOT_NULL_FATAL(d->mem[4] = device_floats(ctx, ATTN_F32, d->sinks, c->Hq));
        d->p.sinks_buffer = d->mem[4];
    }
}

static void vdata_free(vdata *d)
{
    for (int i = 0; i < 5; i++)
        if (d->mem[i]) clReleaseMemObject(d->mem[i]);
    free(d->q), free(d->k), free(d->v), free(d->mask);
}

/* Packed results, [copies][H][S][width] (a copy per entry, or one that all
 * share): each entry's rows appended to got_rows, the reference's
 * ([B][H][S][width]) to ref_rows; returns their count. *stray grows by the
 * elements of other rows (rows of no entry, or of another entry's copy)
 * that are not the NaN they started as. */
static size_t take_rows(const vcase *c, const float *src, int copies, int H, int S, int width,
                        const float *ref, float *got_rows, float *ref_rows, int *stray)
{
    size_t n = 0;
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < H; h++)
            for (int s = 0; s < S; s++) {
                if (!in_region(c->qs, c->ql, b, S, s)) continue;
                const float *g = src + (((size_t)(copies > 1 ? b : 0) * H + h) * S + s) * width;
                const float *r = ref + (((size_t)b * H + h) * S + s) * width;
                memcpy(got_rows + n * width, g, width * sizeof(float));
                memcpy(ref_rows + n * width, r, width * sizeof(float));
                n++;
            }
    for (int b = 0; b < copies; b++) /* rows of no entry (of this copy's entry) */
        for (int h = 0; h < H; h++)
            for (int s = 0; s < S; s++) {
                int used = 0;
                for (int e = 0; e < c->B; e++)
                    used |= (copies == 1 || e == b) && in_region(c->qs, c->ql, e, S, s);
                for (int x = 0; !used && x < width; x++)
                    *stray += !isnan(src[(((size_t)b * H + h) * S + s) * width + x]);
            }
    return n;
}

/* attn_forward_materialized on c's problem against the reference on the
 * problem of `as` (the same data; NULL: c itself): O and LSE; packed, only
 * each entry's rows, every other row of O and LSE left as it was. Returns
 * the failures. */
static int run_vcase_as(const vcase *c, const vcase *as)
{
    attn_context *ctx = harness_context();
    vdata d, r;
    vdata_make(ctx, c, 0, &d);
    vdata_make(NULL, as ? as : c, 0, &r);
    const int copies = c->packed == VPACK_SHARED ? 1 : c->B;
    /* packed: LSE is [Hq][Sq]; the rest of a [B][Hq][Sq] buffer stays NaN */
    const size_t nrows = (size_t)c->B * c->Hq * c->Sq, lse_n = c->packed ? nrows / c->B : nrows;
    attn_tensor to;
    cl_mem mo = harness_alloc(ctx, c->dtype, copies, c->Hq, c->Sq, c->D, NULL, &to);
    cl_mem ml = harness_float_buffer(ctx, nrows);
    CU_ASSERT_FATAL(mo && ml);
    if (c->packed == VPACK_SHARED) to.stride_batch = 0;
    int bad = 0;
    attn_status st = attn_forward_materialized(ctx, &d.p, &d.tq, &d.tk, &d.tv, &to, d.lp,
                                               c->no_lse ? NULL : ml, NULL);
    if (st != ATTN_SUCCESS) printf("\n  %s: %s: %s\n", c->name, attn_status_name(st), attn_last_error(ctx));
    CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
    float *o = harness_xalloc((size_t)copies * c->Hq * c->Sq * c->D), *l = harness_xalloc(nrows);
    float *ro = harness_xalloc(d.nq), *rl = harness_xalloc(nrows);
    CU_ASSERT_EQUAL_FATAL(harness_download(ctx, c->dtype, &to, copies, c->Hq, c->Sq, c->D, o), 0);
    CU_ASSERT_EQUAL_FATAL(harness_read_floats(ctx, ml, l, nrows), 0);
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&r.ref, d.q, d.k, d.v, ro, r.lp, rl), ATTN_SUCCESS);
    double atol, rtol;
    attn_tolerance(c->dtype, &atol, &rtol);
    const uint64_t seed = harness_seed(c->seed);
    char what[160];
    if (!c->packed) {
        snprintf(what, sizeof what, "%s: O", c->name);
        bad += harness_compare(what, o, ro, d.nq, atol, rtol, seed);
        snprintf(what, sizeof what, "%s: LSE", c->name);
        bad += harness_compare(what, l, rl, nrows, atol, rtol, seed);
    } else {
        float *g = harness_xalloc(d.nq), *e = harness_xalloc(d.nq);
        int stray = 0;
        for (size_t i = lse_n; i < nrows; i++) stray += !isnan(l[i]);
        size_t n = take_rows(c, o, copies, c->Hq, c->Sq, c->D, ro, g, e, &stray);
        snprintf(what, sizeof what, "%s: O of the entries' rows", c->name);
        bad += harness_compare(what, g, e, n * c->D, atol, rtol, seed);
        if (!c->no_lse) {
            n = take_rows(c, l, 1, c->Hq, c->Sq, 1, rl, g, e, &stray);
            snprintf(what, sizeof what, "%s: LSE ([Hq][Sq]) of the entries' rows", c->name);
            bad += harness_compare(what, g, e, n, atol, rtol, seed);
        }
        if (stray) printf("\n  %s: %d elements written outside the entries' rows\n", c->name, stray);
        bad += stray;
        free(g), free(e);
    }
    free(o), free(l), free(ro), free(rl);
    CU_ASSERT_EQUAL(bad, 0);
    clReleaseMemObject(mo), clReleaseMemObject(ml);
    vdata_free(&d), vdata_free(&r);
    return bad;
}

/* Mixed padding: entry 1 left-and-right padded, entry 2 with queries but no
 * key (a sink's LSE alone), entry 3 with keys but no query. */
static const int pad_qs[4] = {0, 5, 0, 0}, pad_ql[4] = {24, 11, 7, 0};
static const int pad_ks[4] = {0, 4, 0, 0}, pad_kl[4] = {32, 20, 0, 9};
#define PADDED pad_qs, pad_ql, pad_ks, pad_kl
/* Packed: three sequences on one token axis of 40, rows 37..39 unused */
static const int pk_s[3] = {0, 10, 25}, pk_l[3] = {10, 15, 12};
#define PACKED_LENS pk_s, pk_l, pk_s, pk_l
/* Packed entries whose rows meet (rows 5..9 are both's): allowed with no
 * LSE and out's batch stride nonzero, each entry writing its own copy */
static const int ov_s[2] = {0, 5}, ov_l[2] = {10, 10};

static const vcase vcases[] = {
    {"window (5, 0), causal, GQA, padded", ATTN_F32, 4, 4, 2, 16, 24, 32, 1, PADDED, 1, 5, 0,
     .seed = 1701},
    {"window (7, 3), Sq < Skv, f16", ATTN_F16, 2, 2, 1, 32, 6, 40, 0, NULL, NULL, NULL, NULL, 1,
     7, 3, .seed = 1702},
    {"window (-1, 2), Sq > Skv: early rows see nothing", ATTN_F32, 1, 3, 3, 8, 40, 20, 0, NULL,
     NULL, NULL, NULL, 1, -1, 2, .seed = 1703},
    {"softcap 1.5, MQA", ATTN_F32, 2, 4, 1, 16, 33, 33, 1, NULL, NULL, NULL, NULL, .softcap = 1.5f,
     .amp = 2.0f, .seed = 1704},
    {"softcap 5, padded, bf16", ATTN_BF16, 4, 4, 2, 16, 24, 32, 1, PADDED, .softcap = 5.0f,
     .amp = 3.0f, .seed = 1705},
    {"sinks (host), causal Sq > Skv: empty rows give the sink", ATTN_F32, 1, 4, 2, 16, 30, 20, 1,
     NULL, NULL, NULL, NULL, .sinks = VSINK_HOST, .seed = 1706},
    {"sinks (buffer), padded, f16", ATTN_F16, 4, 4, 2, 16, 24, 32, 1, PADDED,
     .sinks = VSINK_BUFFER, .seed = 1707},
    {"ALiBi from max_bias 8, 8 heads", ATTN_F32, 2, 8, 2, 16, 29, 29, 1, NULL, NULL, NULL, NULL,
     .alibi = 8.0f, .seed = 1708},
    {"ALiBi slopes, 6 heads, non-causal Sq < Skv", ATTN_F32, 1, 6, 3, 16, 12, 37, 0, NULL, NULL,
     NULL, NULL, .alibi = -1.0f, .seed = 1709},
    {"mask f32 per head with gaps, padded", ATTN_F32, 4, 4, 2, 16, 24, 32, 1, PADDED,
     .mask = VMASK_F32, .seed = 1710},
    {"mask f16 broadcast, non-causal, f16", ATTN_F16, 2, 2, 2, 16, 19, 45, 0, NULL, NULL, NULL,
     NULL, .mask = VMASK_F16, .seed = 1711},
    {"window + softcap + sinks (Gemma 2, gpt-oss), padded, f16", ATTN_F16, 4, 4, 2, 16, 24, 32,
     1, PADDED, 1, 6, 0, 2.0f, 2.0f, VSINK_HOST, .seed = 1712},
    {"ALiBi + mask + window, non-causal", ATTN_F32, 2, 4, 4, 8, 21, 26, 0, NULL, NULL, NULL,
     NULL, 1, 4, 4, .alibi = 8.0f, .mask = VMASK_F32, .seed = 1713},
    {"all of them, padded, GQA, bf16", ATTN_BF16, 4, 4, 2, 16, 24, 32, 1, PADDED, 1, 9, 0, 3.0f,
     2.0f, VSINK_BUFFER, -1.0f, VMASK_F16, .seed = 1714},
    {"packed (a copy per entry), window + sinks", ATTN_F32, 3, 4, 2, 16, 40, 40, 1, PACKED_LENS,
     1, 5, 0, .sinks = VSINK_HOST, .packed = VPACK_COPIES, .seed = 1715},
    {"packed (batch stride 0), mask + sinks, f16", ATTN_F16, 3, 2, 1, 16, 40, 40, 1,
     PACKED_LENS, .sinks = VSINK_BUFFER, .mask = VMASK_F16, .packed = VPACK_SHARED,
     .seed = 1716},
    {"packed (batch stride 0)", ATTN_F32, 3, 2, 2, 8, 40, 40, 0, PACKED_LENS,
     .packed = VPACK_SHARED, .seed = 1717},
    /* the f32 copy of O is one token axis for every entry's rows */
    {"packed (a copy per entry), bf16", ATTN_BF16, 3, 2, 1, 16, 40, 40, 1, PACKED_LENS,
     .packed = VPACK_COPIES, .seed = 1718},
    /* ... but a copy per entry when their rows meet */
    {"packed, rows that meet, no LSE, bf16", ATTN_BF16, 2, 2, 1, 16, 16, 16, 1, ov_s, ov_l, ov_s,
     ov_l, .packed = VPACK_COPIES, .seed = 1719, .no_lse = 1},
};

/* Under each work-group size of test_softmax_work_groups: the rewriting
 * pass and the window's first vector with many work-items per row. */
static void child_softmax_variants(void)
{
    static const size_t pick[] = {0, 9, 13};
    for (size_t i = 0; i < sizeof pick / sizeof pick[0]; i++) {
        vcase c = vcases[pick[i]];
        c.seed += (uint64_t)child_size_index;
        run_vcase_as(&c, NULL);
    }
}

static void test_variants(void)
{
    for (size_t i = 0; i < sizeof vcases / sizeof vcases[0]; i++) run_vcase_as(&vcases[i], NULL);
}

/* Packed entries need the scores of the largest entry, not of the shared
 * axis: four sequences of 64 on an axis of 256 (scores 2 MiB for the axis,
 * 128 KiB for one entry) run, and match the reference, on a device whose
 * largest allocation is 1 MiB; one entry of 256 is refused there. */
static void test_packed_sized_by_entry(void)
{
    static const int s[4] = {0, 64, 128, 192}, l[4] = {64, 64, 64, 64};
    static const int whole_s[1] = {0}, whole_l[1] = {256};
    const vcase packed = {"4 packed sequences of 64, max allocation 1 MiB", ATTN_F32, 4, 8, 2,
                          16, 256, 256, 1, s, l, s, l, .packed = VPACK_SHARED, .seed = 1731};
    attn_context *ctx = harness_context();
    const cl_ulong real = ctx->max_alloc;
    attn_context_release_workspace(ctx); /* nothing kept from larger calls */
    ctx->max_alloc = 1 << 20;
    CU_ASSERT_EQUAL(run_vcase_as(&packed, NULL), 0);
    /* one sequence of the axis's length: its own scores are 2 MiB */
    vcase one = packed;
    one.name = "1 packed sequence of 256, max allocation 1 MiB";
    one.B = 1, one.qs = one.ks = whole_s, one.ql = one.kl = whole_l;
    vdata d;
    vdata_make(ctx, &one, 0, &d);
    attn_tensor to;
    cl_mem mo = harness_alloc(ctx, one.dtype, 1, one.Hq, one.Sq, one.D, NULL, &to);
    CU_ASSERT_FATAL(mo != NULL);
    const attn_status st = attn_forward_materialized(ctx, &d.p, &d.tq, &d.tk, &d.tv, &to, d.lp,
                                                     NULL, NULL);
    printf("\n  %s: %s: %.200s", one.name, attn_status_name(st), attn_last_error(ctx));
    CU_ASSERT_EQUAL(st, ATTN_ERROR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "largest batch entry"));
    ctx->max_alloc = real;
    clReleaseMemObject(mo);
    vdata_free(&d);
}

/* The limits: each variant at its neutral extreme equals the
 * problem without it (the reference computes the plain problem). */
static void test_variant_limits(void)
{
    static const vcase pairs[][2] = {
        {{"window wider than the sequence", ATTN_F32, 2, 2, 1, 16, 20, 28, 1, NULL, NULL, NULL,
          NULL, 1, 28, 28, .seed = 1721},
         {"no window", ATTN_F32, 2, 2, 1, 16, 20, 28, 1, .seed = 1721}},
        {{"window of 2e9 each side, non-causal", ATTN_F16, 1, 2, 2, 16, 20, 28, 0, NULL, NULL,
          NULL, NULL, 1, 2000000000, 2000000000, .seed = 1722},
         {"no window", ATTN_F16, 1, 2, 2, 16, 20, 28, 0, .seed = 1722}},
        {{"softcap 1e5", ATTN_F32, 2, 2, 1, 16, 20, 28, 1, .softcap = 1e5f, .seed = 1723},
         {"no softcap", ATTN_F32, 2, 2, 1, 16, 20, 28, 1, .seed = 1723}},
        {{"sinks all -inf", ATTN_F32, 2, 4, 2, 16, 20, 28, 1, .sinks = VSINK_NEG_INF, .seed = 1724},
         {"no sinks", ATTN_F32, 2, 4, 2, 16, 20, 28, 1, .seed = 1724}},
        {{"a mask of zeros (stride_q 0)", ATTN_F32, 2, 2, 2, 16, 20, 28, 1, .mask = VMASK_ZERO,
          .seed = 1725},
         {"no mask", ATTN_F32, 2, 2, 2, 16, 20, 28, 1, .seed = 1725}},
        {{"-inf above the diagonal, not causal", ATTN_F32, 2, 2, 2, 16, 20, 28, 0,
          .mask = VMASK_CAUSAL, .seed = 1726},
         {"causal", ATTN_F32, 2, 2, 2, 16, 20, 28, 1, .seed = 1726}},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        run_vcase_as(&pairs[i][0], &pairs[i][1]);
}

/* attn_attention_weights with variants: V one-hot (D = Skv) makes the
 * reference's O the weights themselves. Hidden keys exactly zero; with
 * sinks the rows sum to less than one (the sink's share). */
static void check_vweights(const vcase *c)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_FATAL(c->D == c->Skv);
    vdata d;
    vdata_make(ctx, c, 1, &d);
    float *ro = harness_xalloc(d.nq), *w = harness_xalloc((size_t)c->Sq * c->Skv);
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&d.ref, d.q, d.k, d.v, ro, d.lp, NULL),
                          ATTN_SUCCESS);
    double atol, rtol, least = 2.0;
    attn_tolerance(c->dtype, &atol, &rtol);
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->Hq; h++) {
            attn_status st = attn_attention_weights(ctx, &d.p, &d.tq, &d.tk, d.lp, b, h, w);
            if (st != ATTN_SUCCESS) printf("\n  %s: %s\n", c->name, attn_last_error(ctx));
            CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
            const float *ref = ro + ((size_t)b * c->Hq + h) * c->Sq * c->D;
            int zeros = 0, values = 0;
            for (int r = 0; r < c->Sq; r++) {
                double sum = 0;
                for (int j = 0; j < c->Skv; j++) {
                    const double x = w[(size_t)r * c->Skv + j], e = ref[(size_t)r * c->D + j];
                    sum += x;
                    if (e == 0.0) zeros += x != 0.0;
                    else values += !(fabs(x - e) <= atol + rtol * fabs(e));
                }
                if (sum > 0 && sum < least) least = sum;
            }
            if (zeros + values)
                printf("\n  weights %s b=%d h=%d: %d hidden keys not zero, %d values off\n",
                       c->name, b, h, zeros, values);
            CU_ASSERT_EQUAL(zeros + values, 0);
        }
    if (c->sinks) CU_ASSERT(least < 0.99); /* a sink took a visible share of some row */
    free(ro), free(w);
    vdata_free(&d);
}

static void test_weights_variants(void)
{
    static const vcase wc[] = {
        {"weights: window + sinks + mask, padded, GQA", ATTN_F32, 4, 4, 2, 32, 24, 32, 1,
         PADDED, 1, 6, 0, .sinks = VSINK_HOST, .mask = VMASK_F32, .seed = 1731},
        {"weights: window + softcap + ALiBi + f16 mask, f16, MQA", ATTN_F16, 1, 4, 1, 24, 20,
         24, 0, NULL, NULL, NULL, NULL, 1, 4, 4, 2.0f, 2.0f, VSINK_BUFFER, 8.0f, VMASK_F16,
         .seed = 1732},
        {"weights: packed, sinks + window", ATTN_F32, 3, 2, 1, 40, 40, 40, 1, PACKED_LENS, 1, 7,
         0, .sinks = VSINK_HOST, .packed = VPACK_COPIES, .seed = 1733},
    };
    for (size_t i = 0; i < sizeof wc / sizeof wc[0]; i++) check_vweights(&wc[i]);
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
    HARNESS_TEST(test_check_mode_catches),
    HARNESS_TEST(test_refuses_beyond_max_alloc),
    HARNESS_TEST(test_bad_arguments),
    HARNESS_TEST(test_weights),
    HARNESS_TEST(test_out_of_order_queue),
    HARNESS_TEST(test_nonfinite_logits_as_forward),
    HARNESS_TEST(test_variants),
    HARNESS_TEST(test_packed_sized_by_entry),
    HARNESS_TEST(test_variant_limits),
    HARNESS_TEST(test_weights_variants),
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
    if (argc > 1 && strncmp(argv[1], "--child-", 8) == 0) {
        /* the parent's filter named the parent's test, not the child's */
        unsetenv("ATTN_TEST_FILTER");
        unsetenv("ATTN_TEST_SKIP");
    }
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
