/* test_layer.c -- attn_layer (q/k/v projections and out_proj by CLBlast
 * GEMMs around attn_forward) against a CPU reference of the whole layer
 * built on attn_reference_forward: MHA, GQA and MQA, causal and not, left
 * and right padding with NaN in the pad rows of the input, f32, f16 and
 * bf16 storage; the weight layout (PyTorch's [out][in]) pinned by a layer
 * whose result is known in closed form; buffers reused across calls of
 * different sizes; in place; timing; bad arguments; and CLBlast's indirect
 * GEMM path, forced. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "blas/blas.h"     /* ATTN_CLBLAST_MAX_INDEX */
#include "core/context.h" /* max_alloc, lowered by test_bad_arguments */

#include <clblast_c.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float *xalloc(size_t n)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    return x;
}

/* y[rows][n] = x[rows][k] W^T, W [n][k]; accumulated in double, then
 * rounded through the storage type as the layer stores it. */
static void linear(attn_dtype t, const float *x, const float *w, float *y, size_t rows, size_t k,
                   size_t n)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < n; c++) {
            double s = 0;
            for (size_t i = 0; i < k; i++) s += (double)x[r * k + i] * w[c * k + i];
            y[r * n + c] = (float)s;
        }
    harness_round(t, y, rows * n);
}

/* [B][S][H*D] columns of a projection <-> BHSD [B][H][S][D] */
static void to_bhsd(const float *bsx, float *bhsd, int B, int S, int H, int D)
{
    for (int b = 0; b < B; b++)
        for (int s = 0; s < S; s++)
            for (int h = 0; h < H; h++)
                memcpy(bhsd + (((size_t)b * H + h) * S + s) * D,
                       bsx + ((size_t)b * S + s) * H * D + (size_t)h * D, sizeof(float) * D);
}

static void from_bhsd(const float *bhsd, float *bsx, int B, int S, int H, int D)
{
    for (int b = 0; b < B; b++)
        for (int s = 0; s < S; s++)
            for (int h = 0; h < H; h++)
                memcpy(bsx + ((size_t)b * S + s) * H * D + (size_t)h * D,
                       bhsd + (((size_t)b * H + h) * S + s) * D, sizeof(float) * D);
}

/* The whole layer on the host: the seed's ReadableCausalAttention with GQA
 * and padding, the storage type's rounding where the layer stores. */
static void layer_reference(const attn_layer_config *c, int B, int S, const float *x,
                            const float *wq, const float *wk, const float *wv, const float *wo,
                            const attn_lengths *L, float *y)
{
    const int Hq = c->q_heads, Hkv = c->kv_heads, D = c->head_dim, dm = c->d_model;
    const size_t rows = (size_t)B * S, nq = rows * Hq * D, nkv = rows * Hkv * D;
    float *pq = xalloc(nq), *pk = xalloc(nkv), *pv = xalloc(nkv);
    float *q = xalloc(nq), *k = xalloc(nkv), *v = xalloc(nkv), *o = xalloc(nq), *mixed = xalloc(nq);
    linear(c->dtype, x, wq, pq, rows, dm, (size_t)Hq * D);
    linear(c->dtype, x, wk, pk, rows, dm, (size_t)Hkv * D);
    linear(c->dtype, x, wv, pv, rows, dm, (size_t)Hkv * D);
    to_bhsd(pq, q, B, S, Hq, D);
    to_bhsd(pk, k, B, S, Hkv, D);
    to_bhsd(pv, v, B, S, Hkv, D);
    attn_problem p = {.batch = B, .q_heads = Hq, .kv_heads = Hkv, .head_dim = D, .q_len = S,
                      .kv_len = S, .dtype = c->dtype, .causal = c->causal, .scale = c->scale};
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, o, L, NULL), ATTN_SUCCESS);
    harness_round(c->dtype, o, nq);
    from_bhsd(o, mixed, B, S, Hq, D);
    linear(c->dtype, mixed, wo, y, rows, (size_t)Hq * D, dm);
    free(pq), free(pk), free(pv), free(q), free(k), free(v), free(o), free(mixed);
}

/* The NaN elements upload writes before its values, at most. */
#define UPLOAD_NAN_MAX 4096

/* n values of type t from host floats into a new buffer after `extra`
 * elements, the last UPLOAD_NAN_MAX of them NaN (a larger offset leaves
 * the pages before untouched, where the device allocates lazily), and
 * back. */
static cl_mem upload(attn_context *ctx, attn_dtype t, const float *x, size_t n, size_t extra)
{
    const size_t es = attn_dtype_size(t);
    const size_t nans = extra < UPLOAD_NAN_MAX ? extra : UPLOAD_NAN_MAX;
    unsigned char *raw = malloc((n + nans) * es);
    float *nan = xalloc(nans + n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(raw);
    for (size_t i = 0; i < nans + n; i++) nan[i] = NAN;
    attn_convert_from_f32(t, nan, raw, nans);
    attn_convert_from_f32(t, x ? x : nan, raw + nans * es, n); /* no x: an output, all NaN */
    cl_int err;
    cl_mem m = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_WRITE, (n + extra) * es,
                              NULL, &err);
    CU_ASSERT_EQUAL_FATAL(err, CL_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(clEnqueueWriteBuffer(attn_context_queue(ctx), m, CL_TRUE,
                                               (extra - nans) * es, (n + nans) * es, raw, 0, NULL,
                                               NULL),
                          CL_SUCCESS);
    free(raw);
    free(nan);
    return m;
}

static void download(attn_context *ctx, attn_dtype t, cl_mem m, size_t off, size_t n, float *y)
{
    const size_t es = attn_dtype_size(t);
    unsigned char *raw = malloc(n * es + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(raw);
    CU_ASSERT_EQUAL_FATAL(clEnqueueReadBuffer(attn_context_queue(ctx), m, CL_TRUE, off * es,
                                              n * es, raw, 0, NULL, NULL), CL_SUCCESS);
    attn_convert_to_f32(t, raw, y, n);
    free(raw);
}

typedef struct lcase {
    const char *name;
    attn_layer_config cfg;
    int B, S;
    const int *q_start, *q_len; /* the same region for queries and keys; NULL = full */
    uint64_t seed;
} lcase;

/* Random weights in PyTorch's default range, U(-1/sqrt(in), 1/sqrt(in)),
 * rounded through the storage type. */
typedef struct weights {
    float *q, *k, *v, *o;
} weights;

static weights make_weights(const attn_layer_config *c, uint64_t seed)
{
    const size_t dm = (size_t)c->d_model, qd = (size_t)c->q_heads * c->head_dim,
                 kd = (size_t)c->kv_heads * c->head_dim;
    weights w = {xalloc(qd * dm), xalloc(kd * dm), xalloc(kd * dm), xalloc(dm * qd)};
    const float a = 1.0f / sqrtf((float)dm), b = 1.0f / sqrtf((float)qd);
    harness_fill_uniform(w.q, qd * dm, seed + 10, -a, a);
    harness_fill_uniform(w.k, kd * dm, seed + 11, -a, a);
    harness_fill_uniform(w.v, kd * dm, seed + 12, -a, a);
    harness_fill_uniform(w.o, dm * qd, seed + 13, -b, b);
    harness_round(c->dtype, w.q, qd * dm);
    harness_round(c->dtype, w.k, kd * dm);
    harness_round(c->dtype, w.v, kd * dm);
    harness_round(c->dtype, w.o, dm * qd);
    return w;
}

static void free_weights(weights *w) { free(w->q), free(w->k), free(w->v), free(w->o); }

/* One forward of layer (made from w) on B x S rows from element offset
 * extra of hidden (and of out, in place), checked against the reference;
 * NaN in the pad rows of hidden. Returns failures. */
static int check_forward_at(attn_layer *layer, const lcase *c, const weights *w, int in_place,
                            size_t extra)
{
    attn_context *ctx = harness_context();
    const uint64_t seed = harness_seed(c->seed);
    const attn_layer_config *cfg = &c->cfg;
    const size_t n = (size_t)c->B * c->S * cfg->d_model;
    float *x = xalloc(n), *ref = xalloc(n), *got = xalloc(n);
    harness_fill_normal(x, n, seed, 0, 1);
    harness_round(cfg->dtype, x, n);
    for (int b = 0; b < c->B; b++) {
        const int lo = c->q_start ? c->q_start[b] : 0, len = c->q_len ? c->q_len[b] : c->S;
        for (int s = 0; s < c->S; s++)
            if (s < lo || s >= lo + len)
                for (int d = 0; d < cfg->d_model; d++)
                    x[((size_t)b * c->S + s) * cfg->d_model + d] = NAN;
    }
    attn_lengths L = {c->q_start, c->q_len, c->q_start, c->q_len};
    const int padded = c->q_start || c->q_len;
    layer_reference(cfg, c->B, c->S, x, w->q, w->k, w->v, w->o, padded ? &L : NULL, ref);

    cl_mem hidden = upload(ctx, cfg->dtype, x, n, extra);
    cl_mem out = in_place ? hidden : upload(ctx, cfg->dtype, NULL, n, 0);
    const size_t out_off = in_place ? extra : 0;
    attn_layer_timing timing = {-1, -1};
    cl_event done = NULL;
    attn_status st = attn_layer_forward(layer, c->B, c->S, hidden, extra, out, out_off,
                                        padded ? &L : NULL, &timing, &done);
    int bad = 0;
    if (st != ATTN_SUCCESS) {
        printf("\n  %s: attn_layer_forward: %s: %s\n", c->name, attn_status_name(st),
               attn_last_error(ctx));
        bad = 1;
    } else {
        CU_ASSERT_PTR_NOT_NULL(done);
        if (done) {
            CU_ASSERT_EQUAL(clWaitForEvents(1, &done), CL_SUCCESS);
            clReleaseEvent(done);
        }
        CU_ASSERT(timing.projection_ms > 0 && timing.attention_ms > 0);
        download(ctx, cfg->dtype, out, out_off, n, got);
        double atol, rtol;
        attn_tolerance(cfg->dtype, &atol, &rtol);
        char what[128];
        snprintf(what, sizeof what, "%s (B=%d S=%d%s)", c->name, c->B, c->S,
                 in_place ? ", in place" : "");
        bad = harness_compare(what, got, ref, n, atol, rtol, seed);
        for (int b = 0; b < c->B; b++) /* pad rows of the output are exactly zero */
            for (int s = 0; s < c->S; s++) {
                const int lo = c->q_start ? c->q_start[b] : 0;
                const int len = c->q_len ? c->q_len[b] : c->S;
                if (s >= lo && s < lo + len) continue;
                for (int d = 0; d < cfg->d_model; d++)
                    bad += got[((size_t)b * c->S + s) * cfg->d_model + d] != 0.0f;
            }
    }
    CU_ASSERT_EQUAL(bad, 0);
    clReleaseMemObject(hidden);
    if (!in_place) clReleaseMemObject(out);
    free(x), free(ref), free(got);
    return bad;
}

static int check_forward(attn_layer *layer, const lcase *c, const weights *w, int in_place)
{
    return check_forward_at(layer, c, w, in_place, 7);
}

static void run_case(const lcase *c)
{
    attn_context *ctx = harness_context();
    weights w = make_weights(&c->cfg, harness_seed(c->seed));
    attn_layer *layer = NULL;
    attn_status st = attn_layer_create(ctx, &c->cfg, w.q, w.k, w.v, w.o, &layer);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st == ATTN_SUCCESS) check_forward(layer, c, &w, 0);
    else printf("\n  %s: attn_layer_create: %s\n", c->name, attn_last_error(ctx));
    attn_layer_release(layer);
    free_weights(&w);
}

static attn_layer_config config(int dm, int hq, int hkv, int d, attn_dtype t, int causal)
{
    attn_layer_config c = {dm, hq, hkv, d, t, causal, 0};
    return c;
}

/* entry 0 full, 1 left-padded, 2 right-padded, 3 a single token */
static const int pst[4] = {0, 5, 0, 18}, plen[4] = {19, 14, 9, 1};

static void test_mha_f32(void)
{
    /* d_model 48 != Hq * D = 64: a transposed weight would not even fit */
    lcase c = {"MHA f32 causal", config(48, 4, 4, 16, ATTN_F32, 1), 2, 23, NULL, NULL, 2001};
    run_case(&c);
}

static void test_gqa_padded_f32(void)
{
    lcase c = {"GQA f32 causal padded", config(40, 4, 2, 16, ATTN_F32, 1), 4, 19, pst, plen, 2002};
    run_case(&c);
}

static void test_gqa_padded_f16(void)
{
    lcase c = {"GQA f16 causal padded", config(40, 4, 2, 16, ATTN_F16, 1), 4, 19, pst, plen, 2003};
    run_case(&c);
}

static void test_mqa_bf16_non_causal(void)
{
    lcase c = {"MQA bf16 non-causal padded", config(32, 4, 1, 8, ATTN_BF16, 0), 4, 19, pst,
               plen, 2004};
    run_case(&c);
    /* a scale of the caller's (every other row takes the default 0): the
     * reference takes it too, so a layer that dropped it differs */
    c.name = "MQA bf16 non-causal padded, scale 0.9";
    c.cfg.scale = 0.9f;
    run_case(&c);
}

/* One layer, calls of growing and shrinking sizes (its buffers grow and are
 * reused), then in place. */
static void test_reuse_and_in_place(void)
{
    attn_context *ctx = harness_context();
    lcase c = {"reuse", config(24, 6, 2, 8, ATTN_F16, 1), 1, 5, NULL, NULL, 2101};
    weights w = make_weights(&c.cfg, c.seed);
    attn_layer *layer = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_layer_create(ctx, &c.cfg, w.q, w.k, w.v, w.o, &layer), ATTN_SUCCESS);
    const int sizes[][2] = {{1, 5}, {3, 30}, {2, 7}};
    for (int i = 0; i < 3; i++) {
        c.B = sizes[i][0], c.S = sizes[i][1], c.seed = 2101 + i;
        check_forward(layer, &c, &w, 0);
    }
    c.name = "in place";
    check_forward(layer, &c, &w, 1);
    attn_layer_release(layer);
    free_weights(&w);
}

/* The layout pinned: with w_q = w_k = 0 every visible key weighs the same,
 * w_v = identity and w_o a permutation P stored [out][in] (w_o[c][P(c)] = 1),
 * so y[i][c] is the mean of x[j][P(c)] over the keys j <= i. */
static void test_weight_layout(void)
{
    attn_context *ctx = harness_context();
    enum { DM = 8, S = 6 };
    const attn_layer_config cfg = config(DM, 2, 2, 4, ATTN_F32, 1);
    static const int perm[DM] = {3, 7, 0, 5, 1, 6, 2, 4};
    float wq[DM * DM] = {0}, wk[DM * DM] = {0}, wv[DM * DM] = {0}, wo[DM * DM] = {0};
    for (int i = 0; i < DM; i++) wv[i * DM + i] = 1, wo[i * DM + perm[i]] = 1;
    attn_layer *layer = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_layer_create(ctx, &cfg, wq, wk, wv, wo, &layer), ATTN_SUCCESS);
    float x[S * DM], y[S * DM];
    harness_fill_uniform(x, S * DM, 2201, -1, 1);
    cl_mem hidden = upload(ctx, ATTN_F32, x, S * DM, 0), out = upload(ctx, ATTN_F32, NULL, S * DM, 0);
    CU_ASSERT_EQUAL_FATAL(attn_layer_forward(layer, 1, S, hidden, 0, out, 0, NULL, NULL, NULL),
                          ATTN_SUCCESS);
    download(ctx, ATTN_F32, out, 0, S * DM, y);
    int bad = 0;
    for (int i = 0; i < S; i++)
        for (int c = 0; c < DM; c++) {
            double mean = 0;
            for (int j = 0; j <= i; j++) mean += x[j * DM + perm[c]];
            mean /= i + 1;
            bad += !(fabs(y[i * DM + c] - mean) <= 1e-5 + 1e-4 * fabs(mean));
        }
    CU_ASSERT_EQUAL(bad, 0);
    clReleaseMemObject(hidden), clReleaseMemObject(out);
    attn_layer_release(layer);
}

static void test_bad_arguments(void)
{
    attn_context *ctx = harness_context();
    attn_layer_config cfg = config(16, 4, 2, 8, ATTN_F32, 1);
    float w[32 * 16] = {0};
    attn_layer *layer = (attn_layer *)&layer;
    CU_ASSERT_EQUAL(attn_layer_create(NULL, &cfg, w, w, w, w, &layer), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_layer_create(ctx, NULL, w, w, w, w, &layer), ATTN_ERROR_INVALID_ARGUMENT);
    attn_layer_config bad = cfg;
    bad.kv_heads = 3;
    CU_ASSERT_EQUAL(attn_layer_create(ctx, &bad, w, w, w, w, &layer), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "kv_heads"));
    bad = cfg;
    bad.d_model = 0;
    CU_ASSERT_EQUAL(attn_layer_create(ctx, &bad, w, w, w, w, &layer), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "d_model"));
    bad = cfg;
    bad.scale = 3e38f; /* finite, but not times log2(e): refused here, by the caller's name */
    CU_ASSERT_EQUAL(attn_layer_create(ctx, &bad, w, w, w, w, &layer), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "cfg->scale = 3e+38 is too large"));
    CU_ASSERT_EQUAL(attn_layer_create(ctx, &cfg, w, w, NULL, w, &layer), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "w_v"));
    CU_ASSERT_PTR_NULL(layer);
    CU_ASSERT_EQUAL(attn_layer_create(ctx, &cfg, w, w, w, w, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    /* weights past the device's largest allocation: a valid layer this
     * device cannot hold (the fused q/k/v matrix is 64 x 16 floats, 4 KiB) */
    const cl_ulong real = ctx->max_alloc;
    ctx->max_alloc = 2048;
    CU_ASSERT_EQUAL(attn_layer_create(ctx, &cfg, w, w, w, w, &layer), ATTN_ERROR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "max allocation"));
    CU_ASSERT_PTR_NULL(layer);
    ctx->max_alloc = real;

    layer = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_layer_create(ctx, &cfg, w, w, w, w, &layer), ATTN_SUCCESS);
    cl_mem hidden = upload(ctx, ATTN_F32, w, 3 * 16, 0), out = upload(ctx, ATTN_F32, NULL, 4 * 16, 0);
    CU_ASSERT_EQUAL(attn_layer_forward(NULL, 1, 4, hidden, 0, out, 0, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_layer_forward(layer, 0, 4, hidden, 0, out, 0, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "batch"));
    /* hidden holds 3 rows of 16, 4 are asked for */
    CU_ASSERT_EQUAL(attn_layer_forward(layer, 1, 4, hidden, 0, out, 0, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "hidden"));
    CU_ASSERT_EQUAL(attn_layer_forward(layer, 1, 3, hidden, 0, out, 17, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "out"));
    static const int len[1] = {5};
    attn_lengths L = {NULL, len, NULL, len};
    CU_ASSERT_EQUAL(attn_layer_forward(layer, 1, 3, hidden, 0, out, 0, &L, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "q_len"));
    float y[4 * 16];
    download(ctx, ATTN_F32, out, 0, 4 * 16, y);
    int written = 0;
    for (int i = 0; i < 4 * 16; i++) written += !isnan(y[i]);
    CU_ASSERT_EQUAL(written, 0);
    /* more rows than this device's buffers hold (the fused q/k/v rows are 64
     * x 64 floats, 16 KiB): UNSUPPORTED naming the rows, before any work
     * (it was OUT_OF_MEMORY at a scratch reserve, "scratch buffer ...") */
    float big[64 * 16] = {0};
    cl_mem hb = upload(ctx, ATTN_F32, big, 64 * 16, 0);
    cl_mem ob = upload(ctx, ATTN_F32, NULL, 64 * 16, 0);
    ctx->max_alloc = 8192;
    CU_ASSERT_EQUAL(attn_layer_forward(layer, 1, 64, hb, 0, ob, 0, NULL, NULL, NULL),
                    ATTN_ERROR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "batch x seq = 64 rows: the fused q/k/v"));
    ctx->max_alloc = real;
    clReleaseMemObject(hb), clReleaseMemObject(ob);
    clReleaseMemObject(hidden), clReleaseMemObject(out);
    attn_layer_release(layer);
    attn_layer_release(NULL);
}

/* An application's out-of-order queue: the layer's phases (conversions,
 * GEMMs, attention) are ordered by barriers; two calls back to back. (PoCL
 * happens to run this in order even without them; a reordering driver makes
 * it a real check.) */
static void test_out_of_order_queue(void)
{
    attn_context *ctx;
    cl_command_queue queue;
    cl_context cctx;
    if (!harness_out_of_order_context(&ctx, &queue, &cctx)) return;
    const attn_layer_config cfg = config(40, 4, 2, 16, ATTN_F16, 1);
    weights w = make_weights(&cfg, 2401);
    attn_layer *layer = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_layer_create(ctx, &cfg, w.q, w.k, w.v, w.o, &layer), ATTN_SUCCESS);
    enum { B = 4, S = 19 };
    const size_t n = (size_t)B * S * 40;
    const attn_lengths L = {pst, plen, pst, plen};
    float *x[2], *ref[2], *got = xalloc(n);
    cl_mem hidden[2], out[2];
    for (int i = 0; i < 2; i++) {
        x[i] = xalloc(n), ref[i] = xalloc(n);
        harness_fill_normal(x[i], n, 2402 + i, 0, 1);
        harness_round(ATTN_F16, x[i], n);
        layer_reference(&cfg, B, S, x[i], w.q, w.k, w.v, w.o, &L, ref[i]);
        hidden[i] = upload(ctx, ATTN_F16, x[i], n, 0);
        out[i] = upload(ctx, ATTN_F16, NULL, n, 0);
    }
    for (int i = 0; i < 2; i++) /* back to back, no waits */
        CU_ASSERT_EQUAL(attn_layer_forward(layer, B, S, hidden[i], 0, out[i], 0, &L, NULL, NULL),
                        ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(clFinish(queue), CL_SUCCESS);
    double atol, rtol;
    attn_tolerance(ATTN_F16, &atol, &rtol);
    for (int i = 0; i < 2; i++) {
        download(ctx, ATTN_F16, out[i], 0, n, got);
        CU_ASSERT_EQUAL(harness_compare("layer, out-of-order queue", got, ref[i], n, atol, rtol,
                                        2402 + i), 0);
        clReleaseMemObject(hidden[i]), clReleaseMemObject(out[i]);
        free(x[i]), free(ref[i]);
    }
    free(got);
    free_weights(&w);
    attn_layer_release(layer);
    harness_app_release(ctx, queue, cctx);
}

/* CLBlast's indirect GEMMs (pad/transpose copies around the main kernel),
 * which it picks only for large products: forced, on tile-multiple sizes
 * and element offsets. Last: the override stays for the rest of the process. */
static void test_indirect_gemm(void)
{
    attn_context *ctx = harness_context();
    const char *names[] = {"XGEMM_MIN_INDIRECT_SIZE"};
    const size_t values[] = {8};
    CU_ASSERT_EQUAL_FATAL(CLBlastOverrideParameters(attn_context_device(ctx), "GemmRoutine",
                                                    CLBlastPrecisionSingle, 1, names, values),
                          CLBlastSuccess);
    lcase c = {"indirect f32", config(64, 4, 2, 16, ATTN_F32, 1), 2, 64, NULL, NULL, 2301};
    run_case(&c);
    lcase h = {"indirect f16 padded", config(40, 4, 2, 16, ATTN_F16, 1), 4, 19, pst, plen, 2302};
    run_case(&h);
}

/* f16 hidden and out (in place) past element 2^31: CLBlast's GEMMs read
 * and write only the f32 copies, so the offset is no limit (it was
 * refused: "hidden reaches element 2147483655"). A buffer of 4 GiB, whose
 * pages before the rows stay untouched (upload); skipped on a device whose
 * largest allocation is smaller. */
static void test_f16_offset_past_int(void)
{
    attn_context *ctx = harness_context();
    lcase c = {"f16 past 2^31", config(16, 4, 2, 8, ATTN_F16, 1), 1, 5, NULL, NULL, 2401};
    const size_t offset = (size_t)ATTN_CLBLAST_MAX_INDEX + 8;
    const double bytes = ((double)offset + (double)c.B * c.S * c.cfg.d_model) * 2;
    if (bytes > (double)ctx->max_alloc) {
        printf("\n  max allocation %llu bytes: skipped\n", (unsigned long long)ctx->max_alloc);
        return;
    }
    weights w = make_weights(&c.cfg, harness_seed(c.seed));
    attn_layer *layer = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_layer_create(ctx, &c.cfg, w.q, w.k, w.v, w.o, &layer),
                          ATTN_SUCCESS);
    check_forward_at(layer, &c, &w, 1, offset);
    attn_layer_release(layer);
    free_weights(&w);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_mha_f32),
    HARNESS_TEST(test_gqa_padded_f32),
    HARNESS_TEST(test_gqa_padded_f16),
    HARNESS_TEST(test_mqa_bf16_non_causal),
    HARNESS_TEST(test_reuse_and_in_place),
    HARNESS_TEST(test_weight_layout),
    HARNESS_TEST(test_bad_arguments),
    HARNESS_TEST(test_out_of_order_queue),
    HARNESS_TEST(test_f16_offset_past_int),
    HARNESS_TEST(test_indirect_gemm),
    HARNESS_END
};

static void register_tests(void) { harness_add_suite("layer", tests); }

int main(void) { return harness_run("test_layer", register_tests); }
