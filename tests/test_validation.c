/* test_validation.c -- every way attn_forward (and the other entry points)
 * can be called wrongly: each returns ATTN_ERROR_INVALID_ARGUMENT (or the
 * documented status), attn_last_error names the argument at fault, and
 * nothing is enqueued: the output and LSE buffers, pre-filled with a
 * sentinel pattern, are byte-identical afterwards, no event is returned and
 * no program is built. The accepted edge cases (a buffer of exactly the
 * size the strides imply, out == q with the same layout, K/V shared by the
 * batch) run for real and are compared against the CPU reference. The
 * variant fields, packed layouts and check mode's reading of the variants'
 * device inputs are here too. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "core/context.h"
#include "attention/validate.h"
#include "attention/check.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

/* The shape every case starts from: two batch entries (so lengths[1] can be
 * wrong), GQA 4:2, a head dim that keeps the kernel build small. */
enum { B = 2, HQ = 4, HKV = 2, D = 16, SQ = 8, SKV = 12 };

static attn_problem base_problem(attn_dtype dtype)
{
    attn_problem p;
    memset(&p, 0, sizeof p);
    p.batch = B;
    p.q_heads = HQ;
    p.kv_heads = HKV;
    p.head_dim = D;
    p.q_len = SQ;
    p.kv_len = SKV;
    p.dtype = dtype;
    p.causal = 1;
    p.scale = 0.0f;
    return p;
}

/* A buffer of `bytes` bytes filled with a recognisable, non-uniform pattern. */
static cl_mem sentinel_buffer(attn_context *ctx, size_t bytes)
{
    unsigned char *host = malloc(bytes ? bytes : 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(host);
    for (size_t i = 0; i < bytes; i++) host[i] = (unsigned char)(0xA5 ^ (i * 37u) ^ (i >> 8));
    cl_int err;
    cl_mem m = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              bytes ? bytes : 1, host, &err);
    free(host);
    CU_ASSERT_EQUAL_FATAL(err, CL_SUCCESS);
    return m;
}

static size_t mem_size(cl_mem m)
{
    size_t bytes = 0;
    CU_ASSERT_EQUAL(clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof bytes, &bytes, NULL), CL_SUCCESS);
    return bytes;
}

/* Reads a whole buffer (after everything queued has finished). */
static unsigned char *snapshot(attn_context *ctx, cl_mem m, size_t *bytes)
{
    CU_ASSERT_EQUAL(clFinish(attn_context_queue(ctx)), CL_SUCCESS);
    *bytes = mem_size(m);
    unsigned char *host = malloc(*bytes ? *bytes : 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(host);
    cl_int err = clEnqueueReadBuffer(attn_context_queue(ctx), m, CL_TRUE, 0, *bytes, host, 0,
                                     NULL, NULL);
    CU_ASSERT_EQUAL(err, CL_SUCCESS);
    return host;
}

/* A device tensor of `dtype` with a given layout, uploaded from seeded data;
 * bhsd receives the values as the device holds them (rounded). */
static cl_mem make_input(attn_context *ctx, attn_dtype dtype, int H, int S, uint64_t seed,
                         const harness_layout *l, attn_tensor *t, float **bhsd)
{
    size_t n = (size_t)B * H * S * D;
    float *x = malloc(n * sizeof *x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    harness_fill_uniform(x, n, seed, -1.0f, 1.0f);
    harness_round(dtype, x, n);
    cl_mem m = harness_upload(ctx, dtype, x, B, H, S, D, l, t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    if (bhsd) *bhsd = x;
    else free(x);
    return m;
}

/* The valid arguments every case perturbs: packed q/k/v, an out buffer and
 * an lse buffer filled with the sentinel pattern. */
typedef struct fixture {
    attn_context *ctx;
    attn_problem p;
    attn_tensor q, k, v, out;
    cl_mem lse;
    float *hq, *hk, *hv;
} fixture;

static void fixture_init(fixture *fx, attn_dtype dtype)
{
    memset(fx, 0, sizeof *fx);
    fx->ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx->ctx);
    fx->p = base_problem(dtype);
    make_input(fx->ctx, dtype, HQ, SQ, 101, NULL, &fx->q, &fx->hq);
    make_input(fx->ctx, dtype, HKV, SKV, 102, NULL, &fx->k, &fx->hk);
    make_input(fx->ctx, dtype, HKV, SKV, 103, NULL, &fx->v, &fx->hv);
    harness_layout_tensor(NULL, B, HQ, SQ, D, &fx->out);
    fx->out.buffer = sentinel_buffer(fx->ctx, (size_t)B * HQ * SQ * D * attn_dtype_size(dtype));
    fx->lse = sentinel_buffer(fx->ctx, (size_t)B * HQ * SQ * sizeof(float));
}

static void fixture_free(fixture *fx)
{
    cl_mem m[] = {fx->q.buffer, fx->k.buffer, fx->v.buffer, fx->out.buffer, fx->lse};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (m[i]) clReleaseMemObject(m[i]);
    free(fx->hq);
    free(fx->hk);
    free(fx->hv);
}

/* Calls attn_forward and checks that it is rejected as an invalid argument
 * with `what` in the message, that no event came back, nothing was built or
 * enqueued, and that the buffers in `watch` (NULL-terminated) are unchanged.
 * Returns 1 when all of that holds, else prints why and returns 0. */
static int rejected(const char *label, attn_context *ctx, const attn_problem *p,
                    const attn_tensor *q, const attn_tensor *k, const attn_tensor *v,
                    const attn_tensor *out, const attn_lengths *L, cl_mem lse, const char *what,
                    const cl_mem *watch)
{
    unsigned char *before[8] = {0};
    size_t nbefore[8] = {0};
    int nw = 0;
    for (; watch && watch[nw] && nw < 8; nw++) before[nw] = snapshot(ctx, watch[nw], &nbefore[nw]);
    unsigned built = ctx->programs_built, disk = ctx->programs_from_disk;
    unsigned mem = ctx->programs_from_memory;
    cl_event done = (cl_event)(uintptr_t)0x1; /* must be reset to NULL */

    attn_status st = attn_forward(ctx, p, q, k, v, out, L, lse, &done);
    const char *msg = attn_last_error(ctx);
    int ok = 1;
    if (st != ATTN_ERROR_INVALID_ARGUMENT) {
        printf("\n  %s: status %s, expected ATTN_ERROR_INVALID_ARGUMENT (\"%s\")\n", label,
               attn_status_name(st), msg);
        ok = 0;
    }
    if (!strstr(msg, what)) {
        printf("\n  %s: the message \"%s\" does not name \"%s\"\n", label, msg, what);
        ok = 0;
    }
    if (done != NULL) {
        printf("\n  %s: *done was not set to NULL on failure\n", label);
        if (done != (cl_event)(uintptr_t)0x1) clReleaseEvent(done);
        ok = 0;
    }
    if (ctx->programs_built != built || ctx->programs_from_disk != disk ||
        ctx->programs_from_memory != mem) {
        printf("\n  %s: a program was fetched before the failure\n", label);
        ok = 0;
    }
    for (int i = 0; i < nw; i++) {
        size_t n;
        unsigned char *after = snapshot(ctx, watch[i], &n);
        if (n != nbefore[i] || memcmp(after, before[i], n) != 0) {
            printf("\n  %s: buffer %d was written by a rejected call\n", label, i);
            ok = 0;
        }
        free(after);
        free(before[i]);
    }
    fflush(stdout);
    return ok;
}

#define REJECTS(FX, P, Q, K, V, OUT, L, LSE, WHAT)                                            \
    do {                                                                                      \
        const cl_mem watch_[] = {(FX)->out.buffer, (FX)->lse, NULL};                          \
        CU_ASSERT(rejected(WHAT, (FX)->ctx, P, Q, K, V, OUT, L, LSE, WHAT, watch_));          \
    } while (0)

/* Compares a finished forward's output (and lse) with the reference. */
static void expect_matches_reference(attn_context *ctx, const attn_problem *p,
                                     const attn_tensor *out, const float *hq, const float *hk,
                                     const float *hv, cl_mem lse)
{
    size_t no = (size_t)p->batch * p->q_heads * p->q_len * p->head_dim;
    size_t nl = (size_t)p->batch * p->q_heads * p->q_len;
    float *got = malloc(no * sizeof *got), *ref = malloc(no * sizeof *ref);
    float *glse = malloc(nl * sizeof *glse), *rlse = malloc(nl * sizeof *rlse);
    CU_ASSERT_FATAL(got && ref && glse && rlse);
    CU_ASSERT_EQUAL(clFinish(attn_context_queue(ctx)), CL_SUCCESS);
    CU_ASSERT_EQUAL(harness_download(ctx, p->dtype, out, p->batch, p->q_heads, p->q_len,
                                     p->head_dim, got), 0);
    CU_ASSERT_EQUAL(attn_reference_forward(p, hq, hk, hv, ref, NULL, rlse), ATTN_SUCCESS);
    double atol, rtol;
    attn_tolerance(p->dtype, &atol, &rtol);
    CU_ASSERT_EQUAL(harness_compare("out", got, ref, no, atol, rtol, 101), 0);
    if (lse) {
        CU_ASSERT_EQUAL(harness_read_floats(ctx, lse, glse, nl), 0);
        CU_ASSERT_EQUAL(harness_compare("lse", glse, rlse, nl, atol, rtol, 101), 0);
    }
    free(got);
    free(ref);
    free(glse);
    free(rlse);
}

/* ---- NULLs and foreign buffers ---- */

static void test_null_arguments(void)
{
    fixture fx;
    fixture_init(&fx, ATTN_F32);
    attn_context *ctx = fx.ctx;
    cl_event done = NULL;

    CU_ASSERT_EQUAL(attn_forward(NULL, &fx.p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse, &done),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(done);
    CU_ASSERT_PTR_NOT_NULL(attn_last_error(NULL));

    REJECTS(&fx, NULL, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse, "problem");
    REJECTS(&fx, &fx.p, NULL, &fx.k, &fx.v, &fx.out, NULL, fx.lse, "q is NULL");
    REJECTS(&fx, &fx.p, &fx.q, NULL, &fx.v, &fx.out, NULL, fx.lse, "k is NULL");
    REJECTS(&fx, &fx.p, &fx.q, &fx.k, NULL, &fx.out, NULL, fx.lse, "v is NULL");
    REJECTS(&fx, &fx.p, &fx.q, &fx.k, &fx.v, NULL, NULL, fx.lse, "out is NULL");

    attn_tensor t;
    t = fx.q, t.buffer = NULL;
    REJECTS(&fx, &fx.p, &t, &fx.k, &fx.v, &fx.out, NULL, fx.lse, "q->buffer");
    t = fx.k, t.buffer = NULL;
    REJECTS(&fx, &fx.p, &fx.q, &t, &fx.v, &fx.out, NULL, fx.lse, "k->buffer");
    t = fx.v, t.buffer = NULL;
    REJECTS(&fx, &fx.p, &fx.q, &fx.k, &t, &fx.out, NULL, fx.lse, "v->buffer");
    t = fx.out, t.buffer = NULL;
    REJECTS(&fx, &fx.p, &fx.q, &fx.k, &fx.v, &t, NULL, fx.lse, "out->buffer");

    /* the last error is cleared by the next successful call: the fixture's
     * arguments are valid (this builds the f32 program once) */
    CU_ASSERT_EQUAL(attn_forward(ctx, &fx.p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse, &done),
                    ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(attn_last_error(ctx), "");
    CU_ASSERT_PTR_NOT_NULL(done);
    if (done) clReleaseEvent(done);
    expect_matches_reference(ctx, &fx.p, &fx.out, fx.hq, fx.hk, fx.hv, fx.lse);
    fixture_free(&fx);
}

static void test_buffer_from_another_context(void)
{
    fixture fx;
    fixture_init(&fx, ATTN_F32);
    cl_device_id dev = attn_context_device(fx.ctx);
    cl_int err;
    cl_context other = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CU_ASSERT_EQUAL_FATAL(err, CL_SUCCESS);
    size_t qbytes = (size_t)B * HQ * SQ * D * 4, kbytes = (size_t)B * HKV * SKV * D * 4;
    cl_mem fq = clCreateBuffer(other, CL_MEM_READ_WRITE, qbytes, NULL, &err);
    cl_mem fk = clCreateBuffer(other, CL_MEM_READ_WRITE, kbytes, NULL, &err);
    cl_mem fl = clCreateBuffer(other, CL_MEM_READ_WRITE, (size_t)B * HQ * SQ * 4, NULL, &err);
    CU_ASSERT_FATAL(fq && fk && fl);

    attn_tensor t;
    t = fx.q, t.buffer = fq;
    REJECTS(&fx, &fx.p, &t, &fx.k, &fx.v, &fx.out, NULL, fx.lse, "q->buffer belongs to another");
    t = fx.k, t.buffer = fk;
    REJECTS(&fx, &fx.p, &fx.q, &t, &fx.v, &fx.out, NULL, fx.lse, "k->buffer belongs to another");
    t = fx.v, t.buffer = fk;
    REJECTS(&fx, &fx.p, &fx.q, &fx.k, &t, &fx.out, NULL, fx.lse, "v->buffer belongs to another");
    t = fx.out, t.buffer = fq;
    REJECTS(&fx, &fx.p, &fx.q, &fx.k, &fx.v, &t, NULL, fx.lse, "out->buffer belongs to another");
    REJECTS(&fx, &fx.p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fl, "lse belongs to another");

    clReleaseMemObject(fq);
    clReleaseMemObject(fk);
    clReleaseMemObject(fl);
    clReleaseContext(other);
    fixture_free(&fx);
}

/* ---- the problem ---- */

static void test_bad_shapes(void)
{
    fixture fx;
    fixture_init(&fx, ATTN_F32);
    static const char *names[] = {"batch", "q_heads", "kv_heads", "head_dim", "q_len", "kv_len"};
    static const int bad[] = {0, -1, INT_MIN};
    for (int f = 0; f < 6; f++)
        for (int i = 0; i < 3; i++) {
            attn_problem p = fx.p;
            int *fields[] = {&p.batch, &p.q_heads, &p.kv_heads, &p.head_dim, &p.q_len, &p.kv_len};
            *fields[f] = bad[i];
            char what[32];
            snprintf(what, sizeof what, "p->%s", names[f]);
            REJECTS(&fx, &p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse, what);
        }
    attn_problem p = fx.p;
    p.head_dim = 257;
    REJECTS(&fx, &p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse, "head_dim");
    p = fx.p;
    p.q_heads = 3; /* not a multiple of kv_heads = 2 */
    REJECTS(&fx, &p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse, "q_heads");
    p = fx.p;
    p.q_heads = 2, p.kv_heads = 4; /* fewer query heads than KV heads */
    REJECTS(&fx, &p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse, "q_heads");
    p = fx.p;
    p.batch = 1 << 16, p.q_heads = 1 << 8, p.kv_heads = 1 << 8, p.q_len = 1 << 8;
    REJECTS(&fx, &p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse, "q_len");
    p = fx.p;
    p.q_len = (1 << 30) + 1;
    REJECTS(&fx, &p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse, "q_len");
    p = fx.p;
    p.kv_len = INT_MAX;
    REJECTS(&fx, &p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse, "kv_len");
    fixture_free(&fx);
}

static void test_bad_dtype_and_scale(void)
{
    fixture fx;
    fixture_init(&fx, ATTN_F32);
    attn_problem p = fx.p;
    p.dtype = (attn_dtype)7;
    REJECTS(&fx, &p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse, "dtype");
    p.dtype = (attn_dtype)-1;
    REJECTS(&fx, &p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse, "dtype");
    /* and finite ones whose product with log2(e), the kernels' logit scale,
     * overflows float (they gave silently wrong results) */
    const float scales[] = {NAN, INFINITY, -INFINITY, 3e38f, -2.4e38f};
    for (int i = 0; i < 5; i++) {
        p = fx.p;
        p.scale = scales[i];
        REJECTS(&fx, &p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse, "scale");
    }
    fixture_free(&fx);
}

static void test_bad_lengths(void)
{
    fixture fx;
    fixture_init(&fx, ATTN_F32);
    static const char *names[] = {"q_start", "q_len", "kv_start", "kv_len"};
    const int padded[] = {SQ, SQ, SKV, SKV};
    for (int a = 0; a < 4; a++) {
        const int values[] = {-1, INT_MIN, padded[a] + 1, INT_MAX};
        for (int i = 0; i < 4; i++) {
            int arr[B] = {0, values[i]};
            if (a == 1 || a == 3) arr[0] = padded[a]; /* a valid first entry */
            attn_lengths L = {NULL, NULL, NULL, NULL};
            const int **slots[] = {&L.q_start, &L.q_len, &L.kv_start, &L.kv_len};
            *slots[a] = arr;
            char what[64];
            snprintf(what, sizeof what, "lengths->%s[1]", names[a]);
            REJECTS(&fx, &fx.p, &fx.q, &fx.k, &fx.v, &fx.out, &L, fx.lse, what);
        }
    }
    /* start + len beyond the padded length, each alone in range */
    {
        const int qs[B] = {0, 3}, ql[B] = {SQ, SQ - 2};
        attn_lengths L = {qs, ql, NULL, NULL};
        REJECTS(&fx, &fx.p, &fx.q, &fx.k, &fx.v, &fx.out, &L, fx.lse, "q_start[1] + q_len[1]");
        attn_lengths L2 = {qs, NULL, NULL, NULL}; /* NULL len means the padded length */
        REJECTS(&fx, &fx.p, &fx.q, &fx.k, &fx.v, &fx.out, &L2, fx.lse, "q_start[1]");
    }
    {
        const int ks[B] = {1, 0}, kl[B] = {SKV, SKV};
        attn_lengths L = {NULL, NULL, ks, kl};
        REJECTS(&fx, &fx.p, &fx.q, &fx.k, &fx.v, &fx.out, &L, fx.lse, "kv_start[0] + kv_len[0]");
    }
    /* the edges are accepted: start = S with len 0, start 0 with len S */
    {
        const int qs[B] = {SQ, 0}, ql[B] = {0, SQ}, ks[B] = {SKV, 0}, kl[B] = {0, SKV};
        attn_lengths L = {qs, ql, ks, kl};
        CU_ASSERT_EQUAL(attn_validate_forward(fx.ctx, &fx.p, &fx.q, &fx.k, &fx.v, &fx.out, &L,
                                              fx.lse), ATTN_SUCCESS);
        float *o = malloc((size_t)B * HQ * SQ * D * sizeof *o);
        CU_ASSERT_PTR_NOT_NULL_FATAL(o);
        CU_ASSERT_EQUAL(attn_reference_forward(&fx.p, fx.hq, fx.hk, fx.hv, o, &L, NULL),
                        ATTN_SUCCESS);
        free(o);
    }
    fixture_free(&fx);
}

/* ---- strides, sizes and overlaps ---- */

static void test_bad_strides(void)
{
    fixture fx;
    fixture_init(&fx, ATTN_F32);
    const char *names[] = {"q", "k", "v", "out"};
    for (int i = 0; i < 4; i++) {
        attn_tensor t[4] = {fx.q, fx.k, fx.v, fx.out};
        char what[64];
        /* rows overlap inside a head */
        t[i].stride_seq = D - 1;
        snprintf(what, sizeof what, "%s->stride_seq", names[i]);
        REJECTS(&fx, &fx.p, &t[0], &t[1], &t[2], &t[3], NULL, fx.lse, what);
        /* heads land on each other's rows */
        t[i] = (attn_tensor[]){fx.q, fx.k, fx.v, fx.out}[i];
        t[i].stride_head = t[i].stride_seq;
        snprintf(what, sizeof what, "%s: strides", names[i]);
        REJECTS(&fx, &fx.p, &t[0], &t[1], &t[2], &t[3], NULL, fx.lse, what);
        /* every batch entry on the same elements: fine for the inputs (read
         * only: one prompt shared by the batch), not for out unless packed */
        t[i] = (attn_tensor[]){fx.q, fx.k, fx.v, fx.out}[i];
        t[i].stride_batch = 0;
        if (i < 3) {
            CU_ASSERT_EQUAL(attn_validate_forward(fx.ctx, &fx.p, &t[0], &t[1], &t[2], &t[3], NULL,
                                                  fx.lse), ATTN_SUCCESS);
        } else {
            REJECTS(&fx, &fx.p, &t[0], &t[1], &t[2], &t[3], NULL, fx.lse, "p->packed");
        }
        /* BSHD written with a sequence step of one head */
        t[i] = (attn_tensor[]){fx.q, fx.k, fx.v, fx.out}[i];
        t[i].stride_head = D;
        t[i].stride_seq = D;
        REJECTS(&fx, &fx.p, &t[0], &t[1], &t[2], &t[3], NULL, fx.lse, "stride");
        /* strides that overflow size_t */
        t[i] = (attn_tensor[]){fx.q, fx.k, fx.v, fx.out}[i];
        t[i].stride_batch = SIZE_MAX / 2;
        REJECTS(&fx, &fx.p, &t[0], &t[1], &t[2], &t[3], NULL, fx.lse, "overflow");
        /* an offset that puts the last element at index SIZE_MAX: its end,
         * one past it, wraps to 0 bytes (passed as a tiny tensor before) */
        t[i] = (attn_tensor[]){fx.q, fx.k, fx.v, fx.out}[i];
        const int heads = i == 1 || i == 2 ? fx.p.kv_heads : fx.p.q_heads;
        const int seq = i == 1 || i == 2 ? fx.p.kv_len : fx.p.q_len;
        const size_t last = (size_t)(fx.p.batch - 1) * t[i].stride_batch +
                            (size_t)(heads - 1) * t[i].stride_head +
                            (size_t)(seq - 1) * t[i].stride_seq + (size_t)fx.p.head_dim - 1;
        t[i].offset = SIZE_MAX - last;
        REJECTS(&fx, &fx.p, &t[0], &t[1], &t[2], &t[3], NULL, fx.lse, "overflow");
    }
    /* a sequence step below D is fine when there is one position only */
    attn_problem p1 = fx.p;
    p1.q_len = 1;
    attn_tensor q1 = fx.q;
    q1.stride_seq = 0;
    CU_ASSERT_EQUAL(attn_validate_forward(fx.ctx, &p1, &q1, &fx.k, &fx.v, &fx.out, NULL, fx.lse),
                    ATTN_SUCCESS);
    fixture_free(&fx);
}

/* For each dtype and each of q, k, v, out laid out with an offset and
 * padded rows (BSHD for k and v): a buffer of exactly the size the offset
 * and strides reach is accepted (and the forward is right), one element
 * less is rejected naming the tensor. */
static void test_buffer_sizes(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    const attn_dtype types[] = {ATTN_F32, ATTN_F16, ATTN_BF16};
    const harness_layout lq = {HARNESS_BHSD, 5, 3, 0}, lk = {HARNESS_BSHD, 7, 1, 2};
    const harness_layout lv = {HARNESS_BSHD, 0, 0, 1}, lo = {HARNESS_BHSD, 3, 0, 0};
    const char *names[] = {"q->buffer", "k->buffer", "v->buffer", "out->buffer"};
    for (int ti = 0; ti < 3; ti++) {
        attn_dtype dt = types[ti];
        size_t elem = attn_dtype_size(dt);
        attn_problem p = base_problem(dt);
        attn_tensor full[4];
        float *hq, *hk, *hv;
        cl_mem bq = make_input(ctx, dt, HQ, SQ, 201, &lq, &full[0], &hq);
        cl_mem bk = make_input(ctx, dt, HKV, SKV, 202, &lk, &full[1], &hk);
        cl_mem bv = make_input(ctx, dt, HKV, SKV, 203, &lv, &full[2], &hv);
        harness_layout_tensor(&lo, B, HQ, SQ, D, &full[3]);
        /* the element past the last one touched, per tensor */
        const int heads[4] = {HQ, HKV, HKV, HQ}, seqs[4] = {SQ, SKV, SKV, SQ};
        size_t need[4];
        for (int i = 0; i < 4; i++)
            need[i] = full[i].offset + (size_t)(B - 1) * full[i].stride_batch +
                      (size_t)(heads[i] - 1) * full[i].stride_head +
                      (size_t)(seqs[i] - 1) * full[i].stride_seq + D;
        /* exact-size copies of each input, made by copying the first need bytes */
        cl_mem src[3] = {bq, bk, bv}, exact[4], shorter[4];
        for (int i = 0; i < 4; i++) {
            cl_int err;
            exact[i] = i < 3 ? clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_WRITE,
                                              need[i] * elem, NULL, &err)
                             : sentinel_buffer(ctx, need[i] * elem);
            CU_ASSERT_PTR_NOT_NULL_FATAL(exact[i]);
            if (i < 3)
                CU_ASSERT_EQUAL(clEnqueueCopyBuffer(attn_context_queue(ctx), src[i], exact[i], 0,
                                                    0, need[i] * elem, 0, NULL, NULL),
                                CL_SUCCESS);
            shorter[i] = sentinel_buffer(ctx, (need[i] - 1) * elem);
        }
        CU_ASSERT_EQUAL(clFinish(attn_context_queue(ctx)), CL_SUCCESS);
        cl_mem lse = sentinel_buffer(ctx, (size_t)B * HQ * SQ * sizeof(float));
        for (int i = 0; i < 4; i++) {
            attn_tensor t[4];
            for (int j = 0; j < 4; j++) t[j] = full[j], t[j].buffer = exact[j];
            t[i].buffer = shorter[i];
            char label[64];
            snprintf(label, sizeof label, "%s (%s, one element short)", names[i],
                     attn_dtype_name(dt));
            const cl_mem watch[] = {t[3].buffer, lse, NULL};
            CU_ASSERT(rejected(label, ctx, &p, &t[0], &t[1], &t[2], &t[3], NULL, lse, names[i],
                               watch));
            /* short by one byte only: still too small */
            if (i == 3) {
                cl_mem odd = sentinel_buffer(ctx, need[i] * elem - 1);
                t[3].buffer = odd;
                const cl_mem watch2[] = {odd, lse, NULL};
                CU_ASSERT(rejected("out one byte short", ctx, &p, &t[0], &t[1], &t[2], &t[3],
                                   NULL, lse, "out->buffer", watch2));
                clReleaseMemObject(odd);
            }
        }
        /* lse one float short */
        {
            attn_tensor t[4];
            for (int j = 0; j < 4; j++) t[j] = full[j], t[j].buffer = exact[j];
            cl_mem small = sentinel_buffer(ctx, (size_t)B * HQ * SQ * sizeof(float) - sizeof(float));
            const cl_mem watch[] = {exact[3], small, NULL};
            CU_ASSERT(rejected("lse one float short", ctx, &p, &t[0], &t[1], &t[2], &t[3], NULL,
                               small, "lse holds", watch));
            clReleaseMemObject(small);
        }
        /* exactly the size: accepted, and right */
        {
            attn_tensor t[4];
            for (int j = 0; j < 4; j++) t[j] = full[j], t[j].buffer = exact[j];
            attn_status st = attn_forward(ctx, &p, &t[0], &t[1], &t[2], &t[3], NULL, lse, NULL);
            CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
            if (st != ATTN_SUCCESS)
                printf("\n  exact sizes (%s): %s: %s\n", attn_dtype_name(dt),
                       attn_status_name(st), attn_last_error(ctx));
            else
                expect_matches_reference(ctx, &p, &t[3], hq, hk, hv, lse);
        }
        for (int i = 0; i < 4; i++) {
            clReleaseMemObject(exact[i]);
            clReleaseMemObject(shorter[i]);
        }
        clReleaseMemObject(bq);
        clReleaseMemObject(bk);
        clReleaseMemObject(bv);
        clReleaseMemObject(lse);
        free(hq);
        free(hk);
        free(hv);
    }
}

static void test_lse_checks(void)
{
    fixture fx;
    fixture_init(&fx, ATTN_F32);
    /* lse aliasing out (the out buffer is big enough to pass the size check) */
    REJECTS(&fx, &fx.p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.out.buffer, "lse");
    REJECTS(&fx, &fx.p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.q.buffer, "lse");
    REJECTS(&fx, &fx.p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.k.buffer, "lse");
    fixture_free(&fx);
}

static void test_overlaps(void)
{
    fixture fx;
    fixture_init(&fx, ATTN_F32);
    attn_context *ctx = fx.ctx;
    size_t nq = (size_t)B * HQ * SQ * D, nk = (size_t)B * HKV * SKV * D;

    /* out and k in one buffer, overlapping: out at offset 0, k at offset D */
    {
        cl_mem shared = sentinel_buffer(ctx, (nq + nk + D) * sizeof(float));
        attn_tensor o = fx.out, k = fx.k, v = fx.v;
        o.buffer = shared;
        k.buffer = shared;
        k.offset = D;
        const cl_mem watch[] = {shared, fx.lse, NULL};
        CU_ASSERT(rejected("out overlaps k", ctx, &fx.p, &fx.q, &k, &fx.v, &o, NULL, fx.lse,
                           "out overlaps k", watch));
        v.buffer = shared;
        v.offset = nq - 1; /* the last element of out is v's first */
        CU_ASSERT(rejected("out overlaps v", ctx, &fx.p, &fx.q, &fx.k, &v, &o, NULL, fx.lse,
                           "out overlaps v", watch));
        /* the same buffer without overlap (a fused layout) is fine */
        k.offset = nq;
        CU_ASSERT_EQUAL(attn_validate_forward(ctx, &fx.p, &fx.q, &k, &fx.v, &o, NULL, fx.lse),
                        ATTN_SUCCESS);
        clReleaseMemObject(shared);
    }
    /* out over q shifted by one row: a different layout */
    {
        attn_tensor o = fx.q;
        o.offset = D;
        cl_mem big = sentinel_buffer(ctx, (nq + D) * sizeof(float));
        attn_tensor q = fx.q;
        q.buffer = big;
        o.buffer = big;
        const cl_mem watch[] = {big, fx.lse, NULL};
        CU_ASSERT(rejected("out overlaps q", ctx, &fx.p, &q, &fx.k, &fx.v, &o, NULL, fx.lse,
                           "out overlaps q", watch));
        /* same offset, different strides (BSHD vs BHSD) */
        attn_tensor o2;
        harness_layout bshd = {HARNESS_BSHD, 0, 0, 0};
        harness_layout_tensor(&bshd, B, HQ, SQ, D, &o2);
        o2.buffer = big;
        CU_ASSERT(rejected("out over q, other strides", ctx, &fx.p, &q, &fx.k, &fx.v, &o2, NULL,
                           fx.lse, "out overlaps q", watch));
        clReleaseMemObject(big);
    }
    /* out == q with the identical layout: in place, accepted and right */
    {
        attn_status st = attn_forward(ctx, &fx.p, &fx.q, &fx.k, &fx.v, &fx.q, NULL, fx.lse, NULL);
        CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
        if (st != ATTN_SUCCESS) printf("\n  in place: %s\n", attn_last_error(ctx));
        else expect_matches_reference(ctx, &fx.p, &fx.q, fx.hq, fx.hk, fx.hv, fx.lse);
    }
    fixture_free(&fx);
}

/* Sub-buffers (clCreateSubBuffer) of one cl_mem are one allocation: out
 * cut from the same buffer as k, v, q, lse, the sinks or the mask, over
 * the same bytes, is refused as the same handle would be, naming both; cut
 * from disjoint parts it is accepted and right, and two handles on the
 * same bytes with q's layout are in place. A KV cache's buffers, reached
 * through attn_kv_cache_tensors and cut, are refused as decode's out and
 * as append's source. (attn once compared handles only: out over k's
 * memory passed and the flash family's results were wrong.) */
static cl_mem cut(cl_mem parent, size_t origin, size_t bytes)
{
    cl_buffer_region r = {origin, bytes};
    cl_int err;
    cl_mem m = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    CU_ASSERT_EQUAL_FATAL(err, CL_SUCCESS);
    return m;
}

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

static void test_sub_buffer_overlaps(void)
{
    fixture fx;
    fixture_init(&fx, ATTN_F32);
    attn_context *ctx = fx.ctx;
    cl_command_queue queue = attn_context_queue(ctx);
    cl_uint align_bits = 0;
    CU_ASSERT_EQUAL_FATAL(clGetDeviceInfo(attn_context_device(ctx), CL_DEVICE_MEM_BASE_ADDR_ALIGN,
                                          sizeof align_bits, &align_bits, NULL), CL_SUCCESS);
    const size_t al = align_bits / 8 ? align_bits / 8 : 1;
    const size_t ob = (size_t)B * HQ * SQ * D * sizeof(float), kb = (size_t)B * HKV * SKV * D * sizeof(float);
    const size_t lb = (size_t)B * HQ * SQ * sizeof(float);
    /* parts: [out][k][v][lse], each aligned; overlapping views start one
     * alignment step into out */
    const size_t ko = round_up(ob, al), vo = round_up(ko + kb, al), lo = round_up(vo + kb, al);
    const size_t total = round_up(lo + lb, al) + al + ob;
    cl_mem parent = sentinel_buffer(ctx, total);
    cl_mem o_sub = cut(parent, 0, ob), k_sub = cut(parent, ko, kb), v_sub = cut(parent, vo, kb);
    cl_mem l_sub = cut(parent, lo, lb);
    CU_ASSERT_EQUAL(clEnqueueCopyBuffer(queue, fx.k.buffer, k_sub, 0, 0, kb, 0, NULL, NULL), CL_SUCCESS);
    CU_ASSERT_EQUAL(clEnqueueCopyBuffer(queue, fx.v.buffer, v_sub, 0, 0, kb, 0, NULL, NULL), CL_SUCCESS);
    CU_ASSERT_EQUAL(clFinish(queue), CL_SUCCESS);
    attn_tensor o = fx.out, k = fx.k, v = fx.v, q = fx.q;
    o.buffer = o_sub, k.buffer = k_sub, v.buffer = v_sub;
    const cl_mem watch[] = {parent, fx.lse, NULL};

    /* k and v cut over out's bytes (one alignment step in) */
    cl_mem over = cut(parent, al, kb);
    attn_tensor ko_t = k, vo_t = v;
    ko_t.buffer = over, vo_t.buffer = over;
    CU_ASSERT(rejected("sub-buffer k over out", ctx, &fx.p, &fx.q, &ko_t, &v, &o, NULL, fx.lse,
                       "out overlaps k (their buffers are sub-buffers of one cl_mem)", watch));
    CU_ASSERT(rejected("sub-buffer v over out", ctx, &fx.p, &fx.q, &k, &vo_t, &o, NULL, fx.lse,
                       "out overlaps v (their buffers are sub-buffers", watch));
    /* q cut over out's bytes from another origin: a different layout */
    cl_mem q_over = cut(parent, al, ob);
    q.buffer = q_over;
    CU_ASSERT(rejected("sub-buffer q over out", ctx, &fx.p, &q, &k, &v, &o, NULL, fx.lse,
                       "out overlaps q with a different layout", watch));
    /* lse over out, over k; the sinks and the mask over out and over lse */
    CU_ASSERT(rejected("sub-buffer lse over out", ctx, &fx.p, &fx.q, &k, &v, &o, NULL, over,
                       "lse and out->buffer share bytes (their buffers are sub-buffers of one cl_mem)", watch));
    cl_mem l_over_k = cut(parent, ko, lb);
    CU_ASSERT(rejected("sub-buffer lse over k", ctx, &fx.p, &fx.q, &k, &v, &o, NULL, l_over_k,
                       "lse and k->buffer share bytes", watch));
    attn_problem p = fx.p;
    p.sinks_buffer = over;
    CU_ASSERT(rejected("sub-buffer sinks over out", ctx, &p, &fx.q, &k, &v, &o, NULL, fx.lse,
                       "p->sinks_buffer and out->buffer share bytes (their buffers are sub-buffers", watch));
    p.sinks_buffer = cut(parent, lo, (size_t)HQ * sizeof(float));
    CU_ASSERT(rejected("sub-buffer sinks over lse", ctx, &p, &fx.q, &k, &v, &o, NULL, l_sub,
                       "lse and p->sinks_buffer share bytes", watch));
    clReleaseMemObject(p.sinks_buffer);
    p = fx.p;
    p.mask = (attn_mask){over, NULL, ATTN_F32, 0, 0, 0, 0, 0, 0};
    CU_ASSERT(rejected("sub-buffer mask over out", ctx, &p, &fx.q, &k, &v, &o, NULL, fx.lse,
                       "p->mask.buffer and out->buffer share bytes", watch));
    /* a part of its own from lse's origin, the mask's two batches one
     * alignment step apart (at least [HQ][SQ] floats: the step may be
     * longer than lse, 512 bytes on Mesa's rusticl against lse's 256), and
     * lse cut one step in, over the second batch */
    const size_t mask_batch = al / sizeof(float) > (size_t)HQ * SQ ? al / sizeof(float)
                                                                    : (size_t)HQ * SQ;
    cl_mem mask_sub = cut(parent, lo, (mask_batch * (B - 1) + (size_t)HQ * SQ) * sizeof(float));
    p.mask = (attn_mask){mask_sub, NULL, ATTN_F32, 0, mask_batch, SQ, 1, 0, 0};
    cl_mem l_over_mask = cut(parent, lo + al, lb);
    CU_ASSERT(rejected("sub-buffer lse over mask", ctx, &p, &fx.q, &k, &v, &o, NULL,
                       l_over_mask, "lse and p->mask.buffer share bytes", watch));
    /* the mask as the parent itself, its one broadcast element on lse's
     * first float: one buffer is a sub-buffer of the other */
    p.mask = (attn_mask){parent, NULL, ATTN_F32, lo / sizeof(float), 0, 0, 0, 0, 0};
    CU_ASSERT(rejected("parent mask over lse", ctx, &p, &fx.q, &k, &v, &o, NULL, l_sub,
                       "lse and p->mask.buffer share bytes (one buffer is a sub-buffer of the "
                       "other)", watch));
    p.mask.offset = al / sizeof(float);
    CU_ASSERT(rejected("parent mask over out", ctx, &p, &fx.q, &k, &v, &o, NULL, fx.lse,
                       "p->mask.buffer and out->buffer share bytes (one buffer is a sub-buffer",
                       watch));

    /* disjoint parts of one buffer: accepted and right */
    attn_status st = attn_forward(ctx, &fx.p, &fx.q, &k, &v, &o, NULL, l_sub, NULL);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st != ATTN_SUCCESS) printf("\n  disjoint sub-buffers: %s\n", attn_last_error(ctx));
    else expect_matches_reference(ctx, &fx.p, &o, fx.hq, fx.hk, fx.hv, l_sub);
    /* the parent as the mask, read only where k lies: out and lse are its
     * sub-buffers but meet none of the bytes the mask reads. One element
     * broadcast to every logit shifts each row alike, which softmax cancels,
     * so the unmasked reference holds for out (lse moves by that element). */
    p.mask = (attn_mask){parent, NULL, ATTN_F32, ko / sizeof(float), 0, 0, 0, 0, 0};
    st = attn_forward(ctx, &p, &fx.q, &k, &v, &o, NULL, l_sub, NULL);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st != ATTN_SUCCESS) printf("\n  parent as a mask beside its parts: %s\n", attn_last_error(ctx));
    else expect_matches_reference(ctx, &fx.p, &o, fx.hq, fx.hk, fx.hv, NULL);
    /* one handle for lse (its first bytes), the mask (on k's first float)
     * and out (at the end): the same buffer, bytes apart, accepted */
    attn_tensor o_end = o;
    o_end.buffer = parent;
    o_end.offset = (total - ob) / sizeof(float);
    st = attn_forward(ctx, &p, &fx.q, &k, &v, &o_end, NULL, parent, NULL);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st != ATTN_SUCCESS) printf("\n  one handle, disjoint bytes: %s\n", attn_last_error(ctx));
    else expect_matches_reference(ctx, &fx.p, &o_end, fx.hq, fx.hk, fx.hv, NULL);
    /* two handles on the same bytes with one layout: in place */
    cl_mem q_sub = cut(parent, 0, ob);
    CU_ASSERT_EQUAL(clEnqueueCopyBuffer(queue, fx.q.buffer, q_sub, 0, 0, ob, 0, NULL, NULL), CL_SUCCESS);
    q = fx.q;
    q.buffer = q_sub;
    st = attn_forward(ctx, &fx.p, &q, &k, &v, &o, NULL, l_sub, NULL);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st != ATTN_SUCCESS) printf("\n  in place through sub-buffers: %s\n", attn_last_error(ctx));
    else expect_matches_reference(ctx, &fx.p, &o, fx.hq, fx.hk, fx.hv, l_sub);

    /* a KV cache's own buffer, cut: not decode's out, not append's source */
    enum { CAP = 16 };
    attn_kv_cache *cache = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, B, HKV, D, CAP, ATTN_F32, &cache), ATTN_SUCCESS);
    attn_tensor one_k;
    cl_mem bk = harness_alloc(ctx, ATTN_F32, B, HKV, 1, D, NULL, &one_k);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bk);
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, &one_k, &one_k, 1, NULL, NULL), ATTN_SUCCESS);
    attn_tensor ck;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_tensors(cache, &ck, NULL), ATTN_SUCCESS);
    const size_t qb1 = (size_t)B * HQ * D * sizeof(float);
    cl_mem cache_cut = cut(ck.buffer, 0, qb1);
    attn_problem dp = base_problem(ATTN_F32);
    dp.q_len = 1;
    attn_tensor dq, dout;
    cl_mem bq = harness_alloc(ctx, ATTN_F32, B, HQ, 1, D, NULL, &dq);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bq);
    harness_layout_tensor(NULL, B, HQ, 1, D, &dout);
    dout.buffer = cache_cut;
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &dp, &dq, &dout, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "out overlaps k"));
    attn_tensor src = one_k;
    src.buffer = cut(ck.buffer, 0, (size_t)B * HKV * D * sizeof(float));
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, &src, &one_k, 1, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "nor sub-buffers of them"));
    int len[B];
    CU_ASSERT_EQUAL(attn_kv_cache_lengths(cache, len), ATTN_SUCCESS);
    CU_ASSERT(len[0] == 1 && len[1] == 1); /* nothing appended */
    clReleaseMemObject(src.buffer);
    clReleaseMemObject(cache_cut);
    clReleaseMemObject(bq);
    clReleaseMemObject(bk);
    attn_kv_cache_release(cache);

    cl_mem subs[] = {o_sub, k_sub, v_sub, l_sub, over,
                     q_over, l_over_k, mask_sub, l_over_mask, q_sub};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) clReleaseMemObject(subs[i]);
    clReleaseMemObject(parent);
    fixture_free(&fx);
}

/* Q, K, V and O interleaved in one buffer, [B, S, Hq + 2 Hkv + Hq, D] (a
 * fused QKVO projection output): the tensors share a buffer and their
 * element ranges interleave, but no element is shared, so it is accepted
 * and right, with GQA's fewer KV heads too; the same with out placed on
 * k's or v's elements, or on q's shifted by a head (which also reaches
 * k's), is rejected. */
static void fused_layout(int hq, int hkv)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    enum { S = 8 };
    attn_problem p = base_problem(ATTN_F32);
    p.q_heads = hq;
    p.kv_heads = hkv;
    p.q_len = p.kv_len = S;
    const int heads[4] = {hq, hkv, hkv, hq}, row = 2 * hq + 2 * hkv; /* heads in a token's row */
    size_t n = (size_t)B * S * row * D, part[3];
    float *host = malloc(n * sizeof *host), *x[3];
    CU_ASSERT_PTR_NOT_NULL_FATAL(host);
    for (int t = 0; t < 3; t++) {
        part[t] = (size_t)B * heads[t] * S * D;
        x[t] = malloc(part[t] * sizeof(float));
        CU_ASSERT_PTR_NOT_NULL_FATAL(x[t]);
        harness_fill_uniform(x[t], part[t], 300 + (uint64_t)t, -1.0f, 1.0f);
    }
    attn_tensor t[4];
    for (int i = 0, at = 0; i < 4; at += heads[i++]) {
        t[i].offset = (size_t)at * D;
        t[i].stride_head = D;
        t[i].stride_seq = (size_t)row * D;
        t[i].stride_batch = (size_t)S * row * D;
    }
    for (size_t i = 0; i < n; i++) host[i] = NAN;
    for (int i = 0; i < 3; i++)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < heads[i]; h++)
                for (int s = 0; s < S; s++)
                    memcpy(host + t[i].offset + b * t[i].stride_batch + h * t[i].stride_head +
                               s * t[i].stride_seq,
                           x[i] + (((size_t)b * heads[i] + h) * S + s) * D, D * sizeof(float));
    cl_int err;
    cl_mem buf = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                n * sizeof(float), host, &err);
    CU_ASSERT_EQUAL_FATAL(err, CL_SUCCESS);
    for (int i = 0; i < 4; i++) t[i].buffer = buf;
    cl_mem lse = sentinel_buffer(ctx, (size_t)B * hq * S * sizeof(float));

    /* out on k's, v's elements; on q's shifted by one head (another layout) */
    const cl_mem watch[] = {buf, lse, NULL};
    attn_tensor o = t[3];
    o.offset = t[1].offset;
    CU_ASSERT(rejected("fused, out on k", ctx, &p, &t[0], &t[1], &t[2], &o, NULL, lse,
                       "out overlaps k", watch));
    o.offset = t[2].offset;
    CU_ASSERT(rejected("fused, out on v", ctx, &p, &t[0], &t[1], &t[2], &o, NULL, lse,
                       "out overlaps v", watch));
    o.offset = t[0].offset + D; /* out's heads are q's from head 1, then k's head 0 */
    CU_ASSERT(rejected("fused, out on q shifted", ctx, &p, &t[0], &t[1], &t[2], &o, NULL, lse,
                       "out overlaps", watch));
    /* the real layout: accepted, and right */
    attn_status st = attn_forward(ctx, &p, &t[0], &t[1], &t[2], &t[3], NULL, lse, NULL);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st != ATTN_SUCCESS) printf("\n  fused layout Hq %d Hkv %d: %s\n", hq, hkv,
                                   attn_last_error(ctx));
    else expect_matches_reference(ctx, &p, &t[3], x[0], x[1], x[2], lse);
    /* and the inputs were not touched */
    for (int i = 0; i < 3; i++) {
        float *after = malloc(part[i] * sizeof(float));
        CU_ASSERT_PTR_NOT_NULL_FATAL(after);
        CU_ASSERT_EQUAL(harness_download(ctx, ATTN_F32, &t[i], B, heads[i], S, D, after), 0);
        CU_ASSERT_EQUAL(memcmp(after, x[i], part[i] * sizeof(float)), 0);
        free(after);
    }
    clReleaseMemObject(buf);
    clReleaseMemObject(lse);
    for (int i = 0; i < 3; i++) free(x[i]);
    free(host);
}

static void test_fused_layout(void)
{
    fused_layout(2, 2);
    fused_layout(4, 1); /* MQA: Q, K, V and O of different widths in one row */
    fused_layout(4, 2);
}

/* ---- ATTN_PARAMS ---- */

/* Strides of 0 in dimensions of extent 1 are legal; out and k sharing a
 * buffer with such strides must be told apart exactly (the overlap search
 * divided by the zero stride: fuzz/fuzz_forward_args found it). Validation
 * only: nothing is built. */
static void test_zero_stride_single_extent(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    attn_problem p = {.batch = 1, .q_heads = 1, .kv_heads = 1, .head_dim = 4, .q_len = 4,
                      .kv_len = 4, .dtype = ATTN_F32, .causal = 1, .scale = 0.0f};
    cl_int err;
    cl_mem shared = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_WRITE, 64 * 4, NULL, &err);
    cl_mem other = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_WRITE, 64 * 4, NULL, &err);
    CU_ASSERT_FATAL(shared && other);
    attn_tensor q = {other, 0, 0, 0, 4}, v = {other, 16, 0, 0, 4};
    attn_tensor k = {shared, 0, 0, 0, 4}, out = {shared, 16, 0, 0, 4}; /* [0,16) and [16,32) */
    CU_ASSERT_EQUAL(attn_validate_forward(ctx, &p, &q, &k, &v, &out, NULL, NULL), ATTN_SUCCESS);
    out.offset = 8; /* now the rows of out and k meet */
    CU_ASSERT_EQUAL(attn_validate_forward(ctx, &p, &q, &k, &v, &out, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "overlaps k"));
    clReleaseMemObject(shared);
    clReleaseMemObject(other);
}

/* ---- shared inputs, packed batches, the variant fields ---- */

/* K and V given once for the whole batch (stride_batch 0, one prompt every
 * sequence attends to), and Q likewise: read only, so accepted, and the
 * result is the reference's over the inputs repeated per entry. */
static void test_shared_inputs(void)
{
    fixture fx;
    fixture_init(&fx, ATTN_F32);
    attn_context *ctx = fx.ctx;
    const int H[3] = {HQ, HKV, HKV}, S[3] = {SQ, SKV, SKV};
    attn_tensor t[3];
    cl_mem m[3];
    float *rep[3];
    for (int i = 0; i < 3; i++) {
        const size_t n = (size_t)H[i] * S[i] * D; /* one entry */
        float *x = malloc(n * sizeof *x);
        rep[i] = malloc((size_t)B * n * sizeof *x);
        CU_ASSERT_FATAL(x && rep[i]);
        harness_fill_uniform(x, n, 400 + (uint64_t)i, -1.0f, 1.0f);
        for (int b = 0; b < B; b++) memcpy(rep[i] + (size_t)b * n, x, n * sizeof *x);
        m[i] = harness_upload(ctx, ATTN_F32, x, 1, H[i], S[i], D, NULL, &t[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m[i]);
        t[i].stride_batch = 0;
        free(x);
    }
    /* shared K/V with per-entry Q; then Q shared too */
    attn_status st = attn_forward(ctx, &fx.p, &fx.q, &t[1], &t[2], &fx.out, NULL, fx.lse, NULL);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st != ATTN_SUCCESS) printf("\n  shared K/V: %s\n", attn_last_error(ctx));
    else expect_matches_reference(ctx, &fx.p, &fx.out, fx.hq, rep[1], rep[2], fx.lse);
    st = attn_forward(ctx, &fx.p, &t[0], &t[1], &t[2], &fx.out, NULL, fx.lse, NULL);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st != ATTN_SUCCESS) printf("\n  shared Q/K/V: %s\n", attn_last_error(ctx));
    else expect_matches_reference(ctx, &fx.p, &fx.out, rep[0], rep[1], rep[2], fx.lse);
    /* k and v on the very same elements: still only read */
    CU_ASSERT_EQUAL(attn_validate_forward(ctx, &fx.p, &fx.q, &t[1], &t[1], &fx.out, NULL, fx.lse),
                    ATTN_SUCCESS);
    /* out on a shared K still overlaps it */
    attn_tensor o = fx.out;
    o.buffer = m[1];
    CU_ASSERT_EQUAL(attn_validate_forward(ctx, &fx.p, &fx.q, &t[1], &t[2], &o, NULL, fx.lse),
                    ATTN_ERROR_INVALID_ARGUMENT);
    for (int i = 0; i < 3; i++) {
        clReleaseMemObject(m[i]);
        free(rep[i]);
    }
    fixture_free(&fx);
}

/* Validates p with the lengths' four arrays; expects `want` and, on a
 * failure, `what` in the message. */
static void expect_packed(fixture *fx, const attn_problem *p, const attn_tensor *out,
                          const int *qs, const int *ql, cl_mem lse, attn_status want,
                          const char *what)
{
    static const int ks[B] = {0, 5}, kl[B] = {5, 7};
    const attn_lengths L = {qs, ql, ks, kl};
    attn_status st = attn_validate_forward(fx->ctx, p, &fx->q, &fx->k, &fx->v, out, &L, lse);
    CU_ASSERT_EQUAL(st, want);
    if (st != want || (what && !strstr(attn_last_error(fx->ctx), what)))
        printf("\n  packed q_start {%d, %d} q_len {%d, %d}: %s \"%s\" (wanted \"%s\")\n", qs[0],
               qs[1], ql[0], ql[1], attn_status_name(st), attn_last_error(fx->ctx),
               what ? what : "");
    if (what) CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(fx->ctx), what));
}

/* Sequences packed along one token axis (stride_batch 0 everywhere, each
 * entry's rows by q_start/kv_start): accepted when the sequences' rows of
 * out are apart, rejected naming out when two share a row; lse is
 * [q_heads][q_len]. Without p->packed the same out is an overlap. */
static void test_packed_layout(void)
{
    fixture fx;
    fixture_init(&fx, ATTN_F32);
    attn_context *ctx = fx.ctx;
    attn_problem p = fx.p;
    p.packed = 1;
    fx.q.stride_batch = fx.k.stride_batch = fx.v.stride_batch = fx.out.stride_batch = 0;
    cl_mem lse = sentinel_buffer(ctx, (size_t)HQ * SQ * sizeof(float));
    cl_mem short_lse = sentinel_buffer(ctx, (size_t)HQ * SQ * sizeof(float) - 1);
    const int qs[B] = {0, 3}, ql[B] = {3, 5};
    expect_packed(&fx, &p, &fx.out, qs, ql, lse, ATTN_SUCCESS, NULL);
    expect_packed(&fx, &p, &fx.q, qs, ql, lse, ATTN_SUCCESS, NULL); /* in place */
    expect_packed(&fx, &p, &fx.out, qs, ql, NULL, ATTN_SUCCESS, NULL);
    expect_packed(&fx, &p, &fx.out, qs, ql, short_lse, ATTN_ERROR_INVALID_ARGUMENT,
                  "q_heads * q_len (p->packed)");
    /* an empty sequence writes nothing, wherever it starts */
    const int qs0[B] = {0, 4}, ql0[B] = {8, 0};
    expect_packed(&fx, &p, &fx.out, qs0, ql0, lse, ATTN_SUCCESS, NULL);
    /* rows 2 of both sequences */
    const int qs2[B] = {0, 2}, ql2[B] = {3, 5};
    expect_packed(&fx, &p, &fx.out, qs2, ql2, lse, ATTN_ERROR_INVALID_ARGUMENT,
                  "out: with p->packed, the rows of sequences 0 (q_start 0, q_len 3) and 1");
    /* the same through attn_forward: nothing built, nothing written */
    {
        static const int ks[B] = {0, 5}, kl[B] = {5, 7};
        const attn_lengths L = {qs2, ql2, ks, kl};
        REJECTS(&fx, &p, &fx.q, &fx.k, &fx.v, &fx.out, &L, lse, "out: with p->packed");
    }
    /* without packed every row of every entry is written */
    attn_problem unpacked = fx.p;
    expect_packed(&fx, &unpacked, &fx.out, qs, ql, fx.lse, ATTN_ERROR_INVALID_ARGUMENT,
                  "p->packed");
    /* entries two rows apart (stride_batch 2 rows): entry b's row s is the
     * axis' row 2b + s, so rows {0, 1} and {3, 4, 5} are apart in every head,
     * rows {0, 1, 2} and {2, 3} are not */
    attn_tensor o = fx.out;
    o.stride_batch = 2 * D;
    const int qsa[B] = {0, 1}, qla[B] = {2, 3}, qsb[B] = {0, 0}, qlb[B] = {3, 2};
    expect_packed(&fx, &p, &o, qsa, qla, NULL, ATTN_SUCCESS, NULL);
    /* ... but packed lse is [Hq][Sq] by buffer row: rows 1 of both meet */
    expect_packed(&fx, &p, &o, qsa, qla, lse, ATTN_ERROR_INVALID_ARGUMENT,
                  "batch entries 0 and 1 both have query rows at 1");
    expect_packed(&fx, &p, &o, qsb, qlb, lse, ATTN_ERROR_INVALID_ARGUMENT,
                  "out: with p->packed, the rows of sequences 0 (q_start 0, q_len 3) and 1");
    clReleaseMemObject(lse);
    clReleaseMemObject(short_lse);
    fixture_free(&fx);
}

/* The variant fields: each bad value rejected naming it, nothing enqueued. */
static void test_bad_variants(void)
{
    fixture fx;
    fixture_init(&fx, ATTN_F32);
    attn_context *ctx = fx.ctx;
#define VREJECTS(P, WHAT) REJECTS(&fx, P, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse, WHAT)
    attn_problem p = fx.p;
    p.use_window = 1;
    p.window_left = -2;
    VREJECTS(&p, "p->window_left = -2");
    p.window_left = 4, p.window_right = -2;
    VREJECTS(&p, "p->window_right = -2");
    p.use_window = 0; /* ignored when off */
    CU_ASSERT_EQUAL(attn_validate_forward(ctx, &p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse),
                    ATTN_SUCCESS);
    const float caps[] = {NAN, INFINITY, -INFINITY, -1.0f};
    for (int i = 0; i < 4; i++) {
        p = fx.p;
        p.softcap = caps[i];
        VREJECTS(&p, "p->softcap");
    }
    const float sinks[HQ] = {0.5f, NAN, 0.0f, 0.0f};
    cl_mem sink_buf = sentinel_buffer(ctx, HQ * sizeof(float));
    cl_mem sink_small = sentinel_buffer(ctx, HQ * sizeof(float) - 1);
    p = fx.p;
    p.sinks = sinks;
    p.sinks_buffer = sink_buf;
    VREJECTS(&p, "p->sinks and p->sinks_buffer are both set");
    p.sinks_buffer = NULL;
    VREJECTS(&p, "p->sinks[1]");
    /* finite, but past a float in the kernels' log2 units (it gave NaN) */
    const float huge_sinks[HQ] = {0.5f, -INFINITY, -3e38f, 0.0f};
    p.sinks = huge_sinks;
    VREJECTS(&p, "p->sinks[2] = -3e+38 is too large");
    p.sinks = NULL;
    p.sinks_buffer = sink_small;
    VREJECTS(&p, "p->sinks_buffer holds");
    const float slopes[HQ] = {0.5f, 0.25f, 0.125f, INFINITY};
    p = fx.p;
    p.alibi_slopes = slopes;
    p.alibi_max_bias = 8.0f;
    VREJECTS(&p, "p->alibi_slopes and p->alibi_max_bias are both set");
    p.alibi_max_bias = 0.0f;
    VREJECTS(&p, "p->alibi_slopes[3]");
    p.alibi_slopes = NULL;
    p.alibi_max_bias = -1.0f;
    VREJECTS(&p, "p->alibi_max_bias");

    /* the mask: [B][HQ][SQ][SKV] f32 by contiguous strides, exactly the
     * size accepted, one element short rejected; broadcast strides need
     * only one [SQ][SKV] plane */
    const size_t plane = (size_t)SQ * SKV, full = (size_t)B * HQ * plane;
    cl_mem mask = sentinel_buffer(ctx, full * sizeof(float));
    cl_mem mask_short = sentinel_buffer(ctx, (full - 1) * sizeof(float));
    p = fx.p;
    /* a host mask alone: the reference's, which the device would drop */
    float host_mask[1] = {0.0f};
    p.mask = (attn_mask){NULL, host_mask, ATTN_F32, 0, 0, 0, 0, 0, 0};
    VREJECTS(&p, "p->mask.host is set but p->mask.buffer is NULL");
    p.mask = (attn_mask){mask, NULL, ATTN_F32, 0, HQ * plane, plane, SKV, 1, 0};
    CU_ASSERT_EQUAL(attn_validate_forward(ctx, &p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse),
                    ATTN_SUCCESS);
    p.mask.dtype = ATTN_F16; /* half the bytes: fine */
    CU_ASSERT_EQUAL(attn_validate_forward(ctx, &p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse),
                    ATTN_SUCCESS);
    p.mask.dtype = ATTN_BF16;
    VREJECTS(&p, "p->mask.dtype");
    p.mask.dtype = (attn_dtype)9;
    VREJECTS(&p, "p->mask.dtype");
    p.mask.dtype = ATTN_F32;
    p.mask.buffer = mask_short;
    VREJECTS(&p, "p->mask.buffer ([2][4][8][12] by its strides) holds");
    p.mask.stride_batch = p.mask.stride_head = 0;
    CU_ASSERT_EQUAL(attn_validate_forward(ctx, &p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse),
                    ATTN_SUCCESS);
    p.mask.offset = full - plane + 1;
    VREJECTS(&p, "p->mask.buffer");
    p.mask.offset = 0;
    p.mask.stride_q = SIZE_MAX / 4;
    VREJECTS(&p, "p->mask: offset and strides overflow");
    /* strides 0 and an offset of SIZE_MAX: only the end past it, hi + 1,
     * overflows (it wrapped to a reach of 0 bytes, which any buffer held) */
    p.mask.stride_q = p.mask.stride_kv = 0, p.mask.offset = SIZE_MAX;
    VREJECTS(&p, "p->mask: offset and strides overflow");
    /* a mask of another cl_context */
    cl_device_id dev = attn_context_device(ctx);
    cl_int err;
    cl_context other = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CU_ASSERT_EQUAL_FATAL(err, CL_SUCCESS);
    cl_mem foreign = clCreateBuffer(other, CL_MEM_READ_WRITE, full * sizeof(float), NULL, &err);
    CU_ASSERT_EQUAL_FATAL(err, CL_SUCCESS);
    p = fx.p;
    p.mask = (attn_mask){foreign, NULL, ATTN_F32, 0, HQ * plane, plane, SKV, 1, 0};
    VREJECTS(&p, "belongs to another cl_context");
    VREJECTS(&p, "p->mask.buffer");
    /* a softcap whose softcap * log2(e) overflows; slopes that overflow
     * over the problem's positions */
    p = fx.p;
    p.softcap = 3e38f;
    VREJECTS(&p, "p->softcap = 3e+38 is too large");
    const float huge_slopes[HQ] = {0.5f, 1e38f, 0.125f, 0.0625f};
    p = fx.p;
    p.alibi_slopes = huge_slopes;
    VREJECTS(&p, "p->alibi_slopes[1]");
    /* buffers attn reads must not be those it writes */
    cl_mem fused = sentinel_buffer(ctx, full * sizeof(float));
    p = fx.p;
    p.mask = (attn_mask){fused, NULL, ATTN_F32, 0, 0, 0, SKV, 1, 0};
    CU_ASSERT_EQUAL(attn_validate_forward(ctx, &p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fused),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "lse and p->mask.buffer share bytes in "
                                                        "the same buffer"));
    p = fx.p;
    p.sinks_buffer = fx.lse;
    VREJECTS(&p, "lse and p->sinks_buffer share bytes in the same buffer");
    p = fx.p;
    p.sinks_buffer = fx.out.buffer;
    VREJECTS(&p, "p->sinks_buffer and out->buffer share bytes in the same buffer");
    p = fx.p;
    p.mask = (attn_mask){fx.out.buffer, NULL, ATTN_F32, 0, 0, 0, 0, 0, 0};
    VREJECTS(&p, "p->mask.buffer and out->buffer share bytes in the same buffer");
    clReleaseMemObject(fused);
#undef VREJECTS
    clReleaseMemObject(foreign);
    clReleaseContext(other);
    clReleaseMemObject(mask);
    clReleaseMemObject(mask_short);
    clReleaseMemObject(sink_buf);
    clReleaseMemObject(sink_small);
    fixture_free(&fx);
}

/* attn_alibi_slopes: 8 heads at max_bias 8 are 1/2, 1/4, ... 1/256 (the
 * ALiBi paper's sequence); 12 heads take those 8 and interleave 4 more at
 * 2^-0.5, 2^-1.5, ...; bad arguments are named in attn_last_error(NULL). */
static void test_alibi_slopes(void)
{
    float s[12];
    CU_ASSERT_EQUAL(attn_alibi_slopes(8, 8.0f, s), ATTN_SUCCESS);
    for (int h = 0; h < 8; h++) CU_ASSERT_EQUAL(s[h], ldexpf(1.0f, -(h + 1)));
    CU_ASSERT_EQUAL(attn_alibi_slopes(12, 8.0f, s), ATTN_SUCCESS);
    for (int h = 0; h < 12; h++) {
        const double want = h < 8 ? ldexp(1.0, -(h + 1)) : pow(2.0, -0.5 - (h - 8));
        CU_ASSERT_DOUBLE_EQUAL(s[h], want, 1e-6 * want);
    }
    CU_ASSERT_EQUAL(attn_alibi_slopes(1, 8.0f, s), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(s[0], 1.0f / 256.0f);
    CU_ASSERT_EQUAL(attn_alibi_slopes(0, 8.0f, s), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(NULL), "q_heads"));
    CU_ASSERT_EQUAL(attn_alibi_slopes(4, -1.0f, s), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(NULL), "max_bias"));
    CU_ASSERT_EQUAL(attn_alibi_slopes(4, NAN, s), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_alibi_slopes(4, 8.0f, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(NULL), "slopes"));
}

/* attn_decode and attn_decode_prepare refuse p->packed; a decode's mask
 * spans [B][Hq][q_len][the cache's capacity] (validated against the full
 * problem, kv_len = capacity). Nothing is built. */
static void test_decode_variants(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    enum { CAP = 16 };
    attn_kv_cache *cache = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, B, HKV, D, CAP, ATTN_F32, &cache),
                          ATTN_SUCCESS);
    attn_problem p = base_problem(ATTN_F32);
    p.q_len = 1;
    attn_tensor q, out;
    cl_mem bq = harness_alloc(ctx, ATTN_F32, B, HQ, 1, D, NULL, &q);
    cl_mem bo = harness_alloc(ctx, ATTN_F32, B, HQ, 1, D, NULL, &out);
    CU_ASSERT_FATAL(bq && bo);
    p.packed = 1;
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &p, &q, &out, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "attn_decode: p->packed"));
    CU_ASSERT_EQUAL(attn_decode_prepare(ctx, cache, &p, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "p->packed"));
    /* one key per sequence, then a mask one element short of [B][HQ][1][CAP] */
    p.packed = 0;
    attn_tensor k;
    cl_mem bk = harness_alloc(ctx, ATTN_F32, B, HKV, 1, D, NULL, &k);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bk);
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, &k, &k, 1, NULL, NULL), ATTN_SUCCESS);
    const size_t n = (size_t)B * HQ * CAP;
    cl_mem mask = sentinel_buffer(ctx, (n - 1) * sizeof(float));
    p.mask = (attn_mask){mask, NULL, ATTN_F32, 0, HQ * CAP, CAP, CAP, 1, 0};
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &p, &q, &out, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "p->mask.buffer ([2][4][1][16]"));
    clReleaseMemObject(mask);
    clReleaseMemObject(bk);
    clReleaseMemObject(bq);
    clReleaseMemObject(bo);
    attn_kv_cache_release(cache);
}

/* ---- check mode with the variants' device inputs ----
 * It reads an f16 mask (at an offset, broadcast strides) and sinks_buffer
 * back for the reference, and with p->packed compares only the rows attn
 * writes (lse [Hq][Sq]). attn_check_compare is fed results computed on the
 * host, so these tests check check mode itself, whatever the kernels do;
 * one attn_forward in check mode runs the whole path. */

enum { MASK_OFFSET = 3 };

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

/* Check mode alone: reads p's inputs back and compares the given out / lse in check mode. */
static attn_status check_mode(attn_context *ctx, const attn_problem *p, const inputs *in,
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

    attn_problem p = base_problem(ATTN_F32);
    p.mask = (attn_mask){mask, NULL, ATTN_F16, MASK_OFFSET, 0, 0, SKV, 1, 0};
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

    attn_status st = check_mode(ctx, &p, &in, &out, NULL, lse);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st != ATTN_SUCCESS) printf("\n  mask + sinks: %s\n", attn_last_error(ctx));
    attn_problem other = p;
    other.mask.buffer = zero_mask;
    CU_ASSERT_EQUAL(check_mode(ctx, &other, &in, &out, NULL, lse), ATTN_ERROR_MISMATCH);
    other = p;
    other.sinks_buffer = bzero;
    CU_ASSERT_EQUAL(check_mode(ctx, &other, &in, &out, NULL, lse), ATTN_ERROR_MISMATCH);

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
    attn_problem p = base_problem(ATTN_F32);
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

    attn_status st = check_mode(ctx, &p, &in, &out, &L, lse);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st != ATTN_SUCCESS) printf("\n  packed: %s\n", attn_last_error(ctx));
    CU_ASSERT_EQUAL(check_mode(ctx, &p, &in, &out, &L, NULL), ATTN_SUCCESS);
    /* head 2, row 4 (sequence 1's second row), element 5: off by 1 */
    const size_t at = ((size_t)2 * SQ + 4) * D + 5;
    const float bad = axis[at] + 1.0f;
    cl_command_queue queue = attn_context_queue(ctx);
    CU_ASSERT_EQUAL(clEnqueueWriteBuffer(queue, bo, CL_TRUE, at * sizeof(float), sizeof bad, &bad,
                                         0, NULL, NULL), CL_SUCCESS);
    CU_ASSERT_EQUAL(check_mode(ctx, &p, &in, &out, &L, lse), ATTN_ERROR_MISMATCH);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "out[b=1, h=2, s=4, d=5]"));
    CU_ASSERT_EQUAL(clEnqueueWriteBuffer(queue, bo, CL_TRUE, at * sizeof(float), sizeof bad,
                                         &axis[at], 0, NULL, NULL), CL_SUCCESS);
    /* lse of head 1, row 0 (sequence 0) */
    const float bad_lse = axis_lse[SQ] + 1.0f;
    CU_ASSERT_EQUAL(clEnqueueWriteBuffer(queue, lse, CL_TRUE, SQ * sizeof(float), sizeof bad_lse,
                                         &bad_lse, 0, NULL, NULL), CL_SUCCESS);
    CU_ASSERT_EQUAL(check_mode(ctx, &p, &in, &out, &L, lse), ATTN_ERROR_MISMATCH);
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

static void test_bad_params_override(void)
{
    fixture fx;
    fixture_init(&fx, ATTN_F32);
    /* refused when set, naming the field; the context keeps its plan */
    const struct { const char *text, *field; } refused[] = {
        {"family=vector,keys=24,vec=16", "keys"}, /* not a power of two */
        {"family=tiled,rows=16,wg=24", "wg"},     /* not a power of two */
        {"family=tiled,rows=3", "rows"},          /* divides no wg: refused when set */
        {"family=vector,rows=32", "rows"},        /* too many rows for vector */
        {"family=simd", "family"},                /* no such family */
        {"foo=1", "foo"},                         /* unknown name */
        {"rows", "rows"},                         /* not name=value */
        {"rows=abc", "rows"},                     /* not an integer */
        {"keys=100000", "keys"}};                 /* out of range */
    attn_plan_info before, after;
    CU_ASSERT_EQUAL_FATAL(attn_prepare(fx.ctx, &fx.p, &before), ATTN_SUCCESS);
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        attn_status st = attn_context_set_params(fx.ctx, refused[i].text);
        const char *msg = attn_last_error(fx.ctx);
        const int named = strncmp(msg, "attn_context_set_params: ", 25) == 0 &&
                          strstr(msg + 25, refused[i].field) != NULL;
        CU_ASSERT_EQUAL(st, ATTN_ERROR_INVALID_ARGUMENT);
        CU_ASSERT(named);
        if (st != ATTN_ERROR_INVALID_ARGUMENT || !named)
            printf("\n  set_params(%s): %s \"%s\"\n", refused[i].text, attn_status_name(st), msg);
    }
    CU_ASSERT_EQUAL(attn_prepare(fx.ctx, &fx.p, &after), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(after.params, before.params);
    CU_ASSERT_STRING_EQUAL(after.source, before.source);
    /* legal alone, not together: refused by the call, naming the override */
    const char *call_time[] = {"family=vector,keys=8,vec=16", /* keys not a multiple of vec */
                               "family=tiled,rows=16,wg=8"};  /* wg not a multiple of rows */
    for (size_t i = 0; i < sizeof call_time / sizeof call_time[0]; i++) {
        CU_ASSERT_EQUAL_FATAL(attn_context_set_params(fx.ctx, call_time[i]), ATTN_SUCCESS);
        char label[96];
        snprintf(label, sizeof label, "set_params(%s) (attn_forward)", call_time[i]);
        const cl_mem watch[] = {fx.out.buffer, fx.lse, NULL};
        CU_ASSERT(rejected(label, fx.ctx, &fx.p, &fx.q, &fx.k, &fx.v, &fx.out, NULL, fx.lse,
                           "attn_context_set_params", watch));
        attn_status st = attn_prepare(fx.ctx, &fx.p, NULL);
        CU_ASSERT_EQUAL(st, ATTN_ERROR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(fx.ctx), "not a multiple of"));
    }
    CU_ASSERT_EQUAL(attn_context_set_params(fx.ctx, NULL), ATTN_SUCCESS);
    fixture_free(&fx);
}

/* ---- the other entry points ---- */

static void test_reference_validation(void)
{
    attn_problem p = base_problem(ATTN_F32);
    size_t nq = (size_t)B * HQ * SQ * D, nk = (size_t)B * HKV * SKV * D;
    float *q = calloc(nq, sizeof *q), *k = calloc(nk, sizeof *k), *v = calloc(nk, sizeof *v);
    float *o = calloc(nq, sizeof *o), *lse = calloc((size_t)B * HQ * SQ, sizeof *lse);
    CU_ASSERT_FATAL(q && k && v && o && lse);
    CU_ASSERT_EQUAL(attn_reference_forward(&p, q, k, v, o, NULL, lse), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_reference_forward(NULL, q, k, v, o, NULL, lse), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_reference_forward(&p, NULL, k, v, o, NULL, lse), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_reference_forward(&p, q, NULL, v, o, NULL, lse), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_reference_forward(&p, q, k, NULL, o, NULL, lse), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_reference_forward(&p, q, k, v, NULL, NULL, lse), ATTN_ERROR_INVALID_ARGUMENT);
    for (int f = 0; f < 6; f++) {
        attn_problem b = p;
        int *fields[] = {&b.batch, &b.q_heads, &b.kv_heads, &b.head_dim, &b.q_len, &b.kv_len};
        *fields[f] = 0;
        CU_ASSERT_EQUAL(attn_reference_forward(&b, q, k, v, o, NULL, lse), ATTN_ERROR_INVALID_ARGUMENT);
        *fields[f] = -3;
        CU_ASSERT_EQUAL(attn_reference_forward(&b, q, k, v, o, NULL, lse), ATTN_ERROR_INVALID_ARGUMENT);
    }
    attn_problem b = p;
    b.head_dim = 257;
    CU_ASSERT_EQUAL(attn_reference_forward(&b, q, k, v, o, NULL, lse), ATTN_ERROR_INVALID_ARGUMENT);
    b = p;
    b.q_heads = 3;
    CU_ASSERT_EQUAL(attn_reference_forward(&b, q, k, v, o, NULL, lse), ATTN_ERROR_INVALID_ARGUMENT);
    b = p;
    b.scale = NAN;
    CU_ASSERT_EQUAL(attn_reference_forward(&b, q, k, v, o, NULL, lse), ATTN_ERROR_INVALID_ARGUMENT);
    b.scale = INFINITY;
    CU_ASSERT_EQUAL(attn_reference_forward(&b, q, k, v, o, NULL, lse), ATTN_ERROR_INVALID_ARGUMENT);
    const int neg[B] = {0, -1}, over[B] = {0, SKV + 1}, s3[B] = {3, 0}, full[B] = {SQ, SQ};
    attn_lengths L1 = {neg, NULL, NULL, NULL}, L2 = {NULL, NULL, NULL, over};
    attn_lengths L3 = {s3, full, NULL, NULL}, L4 = {NULL, neg, NULL, NULL};
    attn_lengths L5 = {NULL, NULL, neg, NULL};
    CU_ASSERT_EQUAL(attn_reference_forward(&p, q, k, v, o, &L1, lse), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_reference_forward(&p, q, k, v, o, &L2, lse), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_reference_forward(&p, q, k, v, o, &L3, lse), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_reference_forward(&p, q, k, v, o, &L4, lse), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_reference_forward(&p, q, k, v, o, &L5, lse), ATTN_ERROR_INVALID_ARGUMENT);
    free(q);
    free(k);
    free(v);
    free(o);
    free(lse);
}

static void test_prepare_validation(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    attn_problem p = base_problem(ATTN_F32);
    attn_plan_info info;
    CU_ASSERT_EQUAL(attn_prepare(NULL, &p, &info), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_prepare(ctx, NULL, &info), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "problem"));
    unsigned built = ctx->programs_built;
    struct { int field; int value; const char *what; } cases[] = {
        {0, 0, "batch"}, {1, -2, "q_heads"}, {2, 0, "kv_heads"}, {3, 257, "head_dim"},
        {3, 0, "head_dim"}, {4, 0, "q_len"}, {5, -1, "kv_len"}, {1, 5, "q_heads"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        attn_problem b = p;
        int *fields[] = {&b.batch, &b.q_heads, &b.kv_heads, &b.head_dim, &b.q_len, &b.kv_len};
        *fields[cases[i].field] = cases[i].value;
        CU_ASSERT_EQUAL(attn_prepare(ctx, &b, &info), ATTN_ERROR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), cases[i].what));
    }
    attn_problem b = p;
    b.dtype = (attn_dtype)7;
    CU_ASSERT_EQUAL(attn_prepare(ctx, &b, &info), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "dtype"));
    b = p;
    b.scale = NAN;
    CU_ASSERT_EQUAL(attn_prepare(ctx, &b, &info), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "scale"));
    CU_ASSERT_EQUAL(ctx->programs_built, built);
    /* and a good problem still prepares, clearing the error */
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(attn_last_error(ctx), "");
    CU_ASSERT(strcmp(info.family, "vector") == 0 || strcmp(info.family, "tiled") == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(info.params, "family="));
}

static void test_convert_validation(void)
{
    float f[4] = {1, 2, 3, 4}, back[4];
    uint16_t h[4];
    CU_ASSERT_EQUAL(attn_convert_from_f32((attn_dtype)7, f, h, 4), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_convert_to_f32((attn_dtype)7, h, back, 4), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_convert_from_f32((attn_dtype)-1, f, h, 4), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_convert_to_f32((attn_dtype)-1, h, back, 4), ATTN_ERROR_INVALID_ARGUMENT);
    const attn_dtype types[] = {ATTN_F32, ATTN_F16, ATTN_BF16};
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(attn_convert_from_f32(types[i], NULL, h, 4), ATTN_ERROR_INVALID_ARGUMENT);
        CU_ASSERT_EQUAL(attn_convert_from_f32(types[i], f, NULL, 4), ATTN_ERROR_INVALID_ARGUMENT);
        CU_ASSERT_EQUAL(attn_convert_to_f32(types[i], NULL, back, 4), ATTN_ERROR_INVALID_ARGUMENT);
        CU_ASSERT_EQUAL(attn_convert_to_f32(types[i], h, NULL, 4), ATTN_ERROR_INVALID_ARGUMENT);
        /* nothing to convert: NULL is fine */
        CU_ASSERT_EQUAL(attn_convert_from_f32(types[i], NULL, NULL, 0), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(attn_convert_to_f32(types[i], NULL, NULL, 0), ATTN_SUCCESS);
    }
    CU_ASSERT_EQUAL(attn_dtype_size((attn_dtype)7), 0);
    CU_ASSERT_PTR_NULL(attn_dtype_name((attn_dtype)7));
}

static void test_context_creation_errors(void)
{
    attn_context *c = (attn_context *)(uintptr_t)0x1;
    CU_ASSERT_EQUAL(attn_context_create(NULL, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_context_create("0:0", NULL), ATTN_ERROR_INVALID_ARGUMENT);

    CU_ASSERT_EQUAL(attn_context_create("no-such-device-xyz", &c), ATTN_ERROR_NO_DEVICE);
    CU_ASSERT_PTR_NULL(c);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_create_error(), "no-such-device-xyz"));
    c = (attn_context *)(uintptr_t)0x1;
    CU_ASSERT_EQUAL(attn_context_create("9:9", &c), ATTN_ERROR_NO_DEVICE);
    CU_ASSERT_PTR_NULL(c);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_create_error(), "9:9"));

    c = (attn_context *)(uintptr_t)0x1;
    CU_ASSERT_EQUAL(attn_context_create_from_queue(NULL, &c), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(c);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_create_error(), "queue"));
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_EQUAL(attn_context_create_from_queue(attn_context_queue(ctx), NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);

    cl_platform_id pl;
    cl_device_id dev;
    CU_ASSERT_EQUAL(attn_select_device(NULL, NULL, &dev), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_select_device(NULL, &pl, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_select_device("no-such-device-xyz", &pl, &dev), ATTN_ERROR_NO_DEVICE);

    attn_context_release(NULL); /* fine */
    CU_ASSERT_PTR_NOT_NULL(attn_last_error(NULL));
    CU_ASSERT_EQUAL(attn_context_set_check(NULL, 1), ATTN_ERROR_INVALID_ARGUMENT);
    double g = 0;
    CU_ASSERT_EQUAL(attn_device_peak_gflops(NULL, &g), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_device_peak_gflops(ctx, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(attn_context_cl_context(NULL));
    CU_ASSERT_PTR_NULL(attn_context_queue(NULL));
    CU_ASSERT_PTR_NULL(attn_context_device(NULL));
}

static void test_status_names(void)
{
    static const char *names[] = {
        "ATTN_SUCCESS", "ATTN_ERROR_INVALID_ARGUMENT", "ATTN_ERROR_UNSUPPORTED",
        "ATTN_ERROR_NO_DEVICE", "ATTN_ERROR_OPENCL", "ATTN_ERROR_BUILD",
        "ATTN_ERROR_OUT_OF_MEMORY", "ATTN_ERROR_TUNING_DB", "ATTN_ERROR_IO",
        "ATTN_ERROR_MISMATCH"};
    for (int s = ATTN_SUCCESS; s <= ATTN_ERROR_MISMATCH; s++)
        CU_ASSERT_STRING_EQUAL(attn_status_name((attn_status)s), names[s]);
    CU_ASSERT_STRING_EQUAL(attn_status_name((attn_status)(ATTN_ERROR_MISMATCH + 1)),
                           "ATTN_STATUS_UNKNOWN");
    CU_ASSERT_STRING_EQUAL(attn_status_name((attn_status)-1), "ATTN_STATUS_UNKNOWN");
    CU_ASSERT_STRING_EQUAL(attn_status_name((attn_status)1000), "ATTN_STATUS_UNKNOWN");
}

static const harness_test tests[] = {
    HARNESS_TEST(test_null_arguments),
    HARNESS_TEST(test_buffer_from_another_context),
    HARNESS_TEST(test_bad_shapes),
    HARNESS_TEST(test_bad_dtype_and_scale),
    HARNESS_TEST(test_bad_lengths),
    HARNESS_TEST(test_bad_strides),
    HARNESS_TEST(test_buffer_sizes),
    HARNESS_TEST(test_lse_checks),
    HARNESS_TEST(test_overlaps),
    HARNESS_TEST(test_fused_layout),
    HARNESS_TEST(test_sub_buffer_overlaps),
    HARNESS_TEST(test_zero_stride_single_extent),
    HARNESS_TEST(test_shared_inputs),
    HARNESS_TEST(test_packed_layout),
    HARNESS_TEST(test_bad_variants),
    HARNESS_TEST(test_alibi_slopes),
    HARNESS_TEST(test_decode_variants),
    HARNESS_TEST(test_check_mask_and_sinks),
    HARNESS_TEST(test_check_packed),
    HARNESS_TEST(test_bad_params_override),
    HARNESS_TEST(test_reference_validation),
    HARNESS_TEST(test_prepare_validation),
    HARNESS_TEST(test_convert_validation),
    HARNESS_TEST(test_context_creation_errors),
    HARNESS_TEST(test_status_names),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("validation", tests); }

int main(void) { return harness_run("test_validation", register_tests); }
