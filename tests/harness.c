/* harness.c -- the shared test helpers declared in harness.h: CUnit running,
 * splitmix64 random numbers, the lazily made OpenCL context, tolerance
 * comparison and strided device tensors. */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#include "harness.h"
#include "cases.h" /* harness_case_runs, harness_case_skips */
#include "core/program.h"    /* attn_kernel_source */
#include "kernels/params.h" /* attn_family_sources */

#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static attn_context *g_ctx;     /* the shared context, made on first use */
static int g_ctx_failed;        /* creation failed once: do not retry */

/* ---- running ---- */

/* Whether one of the comma-separated entries of list is name (exact) or a
 * part of it (!exact). Empty entries match nothing. */
static int listed(const char *name, const char *list, int exact)
{
    for (const char *p = list; *p; p += *p == ',') {
        const size_t len = strcspn(p, ",");
        if (len && exact && strlen(name) == len && strncmp(p, name, len) == 0) return 1;
        for (const char *at = name; len && !exact && *at; at++)
            if (strncmp(at, p, len) == 0) return 1;
        p += len;
    }
    return 0;
}

/* The child check this process runs (ATTN_TEST_CHILD), or NULL. */
static const char *child_mode(void)
{
    const char *name = getenv("ATTN_TEST_CHILD");
    return name && *name ? name : NULL;
}

int harness_add_suite(const char *suite, const harness_test *tests)
{
    if (child_mode()) return 0; /* a child runs its one check only */
    const char *filter = getenv("ATTN_TEST_FILTER"), *skip = getenv("ATTN_TEST_SKIP");
    CU_pSuite s = CU_add_suite(suite, NULL, NULL);
    if (!s) goto fail;
    for (const harness_test *t = tests; t->name; t++) {
        if (filter && *filter && !listed(t->name, filter, 0)) continue;
        if (skip && *skip && listed(t->name, skip, 1)) continue;
        if (!CU_add_test(s, t->name, t->fn)) goto fail;
    }
    return 0;
fail:
    printf("harness: cannot add suite %s: %s\n", suite, CU_get_error_msg());
    return -1;
}

int harness_add_children(const harness_test *children)
{
    const char *name = child_mode();
    if (!name) return 0;
    for (const harness_test *t = children; t->name; t++) {
        if (strcmp(t->name, name) != 0) continue;
        CU_pSuite s = CU_add_suite("child", NULL, NULL);
        if (s && CU_add_test(s, t->name, t->fn)) return 0;
        printf("harness: cannot add child check %s: %s\n", name, CU_get_error_msg());
        return -1;
    }
    printf("harness: no child check named %s\n", name);
    return -1;
}

/* A child's failed assertions, one line each. */
static void print_child_failures(const char *name)
{
    for (CU_pFailureRecord f = CU_get_failure_list(); f; f = f->pNext)
        printf("\n  child %s: %s:%u: %s", name, f->strFileName ? f->strFileName : "?",
               f->uiLineNumber, f->strCondition ? f->strCondition : "?");
    if (CU_get_failure_list()) printf("\n");
}

int harness_run(const char *program, void (*register_fn)(void))
{
    const char *child = child_mode();
    if (CU_initialize_registry() != CUE_SUCCESS) {
        printf("harness: %s: CUnit registry: %s\n", program, CU_get_error_msg());
        return 1;
    }
    if (!child) printf("%s (attn %s)\n", program, attn_version_string());
    register_fn();
    if (CU_get_error() != CUE_SUCCESS) {
        printf("harness: %s: registering tests failed: %s\n", program, CU_get_error_msg());
        CU_cleanup_registry();
        return 1;
    }

    if (child) { /* quiet: CUnit's basic runner prints a summary even when silent */
        CU_run_all_tests();
        print_child_failures(child);
    } else {
        CU_basic_set_mode(CU_BRM_VERBOSE);
        CU_basic_run_tests();
    }
    if (harness_case_runs() && !child)
        printf("%s: %d case runs (and %d rows skipped under mma, which refuses them)\n", program,
               harness_case_runs(), harness_case_skips());
    /* a filter that picks nothing (a test renamed under a ctest part that
     * names it) must not pass as if it had run */
    const char *filter = getenv("ATTN_TEST_FILTER");
    const int none = !child && filter && *filter && CU_get_number_of_tests_run() == 0;
    if (none) printf("%s: no test's name contains ATTN_TEST_FILTER=\"%s\"\n", program, filter);
    int failed = CU_get_number_of_failures() > 0 || CU_get_number_of_suites_failed() > 0 ||
                 CU_get_error() != CUE_SUCCESS || g_ctx_failed || none ||
                 (child && CU_get_number_of_tests_run() != 1);

    attn_context_release(g_ctx);
    g_ctx = NULL;
    CU_cleanup_registry();
    fflush(stdout);
    return failed ? 1 : 0;
}

/* ---- random numbers ---- */

void harness_rng_seed(harness_rng *r, uint64_t seed) { r->state = seed; }

uint64_t harness_rng_next(harness_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double harness_rng_uniform(harness_rng *r)
{
    return (double)(harness_rng_next(r) >> 11) * 0x1.0p-53;
}

double harness_rng_normal(harness_rng *r)
{
    const double two_pi = 6.283185307179586476925;
    double u1 = 1.0 - harness_rng_uniform(r); /* (0, 1]: log is finite */
    double u2 = harness_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
}

uint64_t harness_seed(uint64_t dflt)
{
    const char *s = getenv("ATTN_TEST_SEED");
    if (!s || !*s) return dflt;
    return (uint64_t)strtoull(s, NULL, 0);
}

void harness_fill_uniform(float *x, size_t n, uint64_t seed, float lo, float hi)
{
    harness_rng r;
    harness_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(lo + ((double)hi - lo) * harness_rng_uniform(&r));
}

void harness_fill_normal(float *x, size_t n, uint64_t seed, float mean, float stddev)
{
    harness_rng r;
    harness_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) x[i] = (float)(mean + (double)stddev * harness_rng_normal(&r));
}

void harness_round(attn_dtype t, float *x, size_t n)
{
    if (t == ATTN_F32 || n == 0) return;
    uint16_t *tmp = malloc(n * sizeof *tmp);
    if (!tmp) {
        printf("harness: out of memory rounding %zu values\n", n);
        abort(); /* a test helper, not the library: nothing sensible remains */
    }
    attn_convert_from_f32(t, x, tmp, n);
    attn_convert_to_f32(t, tmp, x, n);
    free(tmp);
}

/* ---- comparison ---- */

int harness_compare(const char *what, const float *got, const float *ref, size_t n,
                    double atol, double rtol, uint64_t seed)
{
    int bad = 0;
    size_t worst = 0;
    double worst_ratio = -1.0, max_err = 0.0;

    for (size_t i = 0; i < n; i++) {
        double g = got[i], r = ref[i], ratio;
        if (isnan(g) || isnan(r)) {
            ratio = INFINITY;
        } else if (isinf(g) || isinf(r)) {
            ratio = g == r ? 0.0 : INFINITY; /* -inf == -inf passes */
        } else {
            double err = fabs(g - r);
            if (err > max_err) max_err = err;
            ratio = err / (atol + rtol * fabs(r));
        }
        if (ratio > 1.0) bad++;
        if (ratio > worst_ratio) {
            worst_ratio = ratio;
            worst = i;
        }
    }
    if (bad) {
        printf("\n  %s: %d of %zu elements beyond atol %g + rtol %g; worst [%zu] got %.9g "
               "ref %.9g; max finite error %.3g; seed %llu (ATTN_TEST_SEED=%llu reruns it)\n",
               what, bad, n, atol, rtol, worst, got[worst], ref[worst], max_err,
               (unsigned long long)seed, (unsigned long long)seed);
        fflush(stdout);
    }
    return bad;
}

/* ---- the OpenCL context ---- */

attn_context *harness_context(void)
{
    if (g_ctx) return g_ctx;
    if (!g_ctx_failed) {
        const char *sel = getenv("ATTN_TEST_DEVICE");
        attn_status st = attn_context_create(sel, &g_ctx);
        if (st == ATTN_SUCCESS) {
            char name[256] = "?";
            clGetDeviceInfo(attn_context_device(g_ctx), CL_DEVICE_NAME, sizeof name - 1, name,
                            NULL);
            printf("\n  harness: device \"%s\" (ATTN_TEST_DEVICE=%s)\n", name,
                   sel ? sel : "(unset)");
            fflush(stdout);
            return g_ctx;
        }
        g_ctx = NULL;
        g_ctx_failed = 1;
        printf("\n  harness: NO OPENCL CONTEXT (ATTN_TEST_DEVICE=%s): %s: %s\n",
               sel ? sel : "(unset)", attn_status_name(st), attn_last_create_error());
        fflush(stdout);
    }
    if (CU_is_test_running())
        CU_assertImplementation(CU_FALSE, __LINE__, "harness_context(): no OpenCL context",
                                __FILE__, "", CU_TRUE); /* aborts the test */
    return NULL;
}

int harness_out_of_order_supported(cl_device_id dev)
{
    cl_command_queue_properties supported = 0;
    clGetDeviceInfo(dev, CL_DEVICE_QUEUE_PROPERTIES, sizeof supported, &supported, NULL);
    if (supported & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) return 1;
    printf("\n  the device has no out-of-order queues: skipped\n");
    return 0;
}

cl_command_queue harness_out_of_order_queue(cl_device_id dev, cl_context *cl)
{
    cl_int err;
    *cl = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CU_ASSERT_EQUAL_FATAL(err, CL_SUCCESS);
    cl_command_queue q = clCreateCommandQueue(*cl, dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
    if (err != CL_SUCCESS) {
        printf("\n  clCreateCommandQueue (out of order): %d\n", (int)err);
        clReleaseContext(*cl);
        *cl = NULL;
        CU_FAIL_FATAL("harness_out_of_order_queue");
    }
    return q;
}

int harness_out_of_order_context(attn_context **ctx, cl_command_queue *queue, cl_context *cl)
{
    *ctx = NULL, *queue = NULL, *cl = NULL;
    attn_context *h = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    cl_device_id dev = attn_context_device(h);
    if (!harness_out_of_order_supported(dev)) return 0;
    *queue = harness_out_of_order_queue(dev, cl);
    if (attn_context_create_from_queue(*queue, ctx) == ATTN_SUCCESS) return 1;
    printf("\n  an attn context on an out-of-order queue: %s\n", attn_last_create_error());
    harness_app_release(*ctx, *queue, *cl);
    *ctx = NULL, *queue = NULL, *cl = NULL;
    CU_FAIL_FATAL("harness_out_of_order_context");
    return 0;
}

void harness_app_release(attn_context *ctx, cl_command_queue queue, cl_context cl)
{
    attn_context_release(ctx);
    if (queue) clReleaseCommandQueue(queue);
    if (cl) clReleaseContext(cl);
}

/* ---- device tensors ---- */

size_t harness_layout_tensor(const harness_layout *l, int B, int H, int S, int D,
                             attn_tensor *t)
{
    static const harness_layout packed = {HARNESS_BHSD, 0, 0, 0};
    if (!l) l = &packed;
    size_t rows = (size_t)S + l->spare_seq;
    t->offset = l->offset;
    if (l->order == HARNESS_BSHD) {
        t->stride_head = (size_t)D;
        t->stride_seq = (size_t)H * D + l->seq_pad;
        t->stride_batch = rows * t->stride_seq;
    } else {
        t->stride_seq = (size_t)D + l->seq_pad;
        t->stride_head = rows * t->stride_seq;
        t->stride_batch = (size_t)H * t->stride_head;
    }
    return l->offset + (size_t)B * t->stride_batch;
}

static size_t row_index(const attn_tensor *t, int b, int h, int s)
{
    return t->offset + (size_t)b * t->stride_batch + (size_t)h * t->stride_head +
           (size_t)s * t->stride_seq;
}

/* The NaN each storage type is filled with. */
static void fill_nan(attn_dtype dtype, void *dst, size_t n)
{
    if (dtype == ATTN_F32) {
        float *f = dst;
        for (size_t i = 0; i < n; i++) f[i] = NAN;
    } else {
        uint16_t *w = dst, nan = dtype == ATTN_F16 ? 0x7e00u : 0x7fc0u;
        for (size_t i = 0; i < n; i++) w[i] = nan;
    }
}

static cl_mem make_tensor(attn_context *ctx, attn_dtype dtype, const float *bhsd, int B, int H,
                          int S, int D, const harness_layout *l, attn_tensor *t)
{
    size_t esize = attn_dtype_size(dtype);
    if (!ctx || !t || esize == 0 || B < 1 || H < 1 || S < 1 || D < 1) {
        printf("harness: bad arguments for a device tensor\n");
        return NULL;
    }
    size_t n = harness_layout_tensor(l, B, H, S, D, t);
    unsigned char *host = malloc(n * esize);
    if (!host) {
        printf("harness: out of memory for a %zu-element tensor\n", n);
        return NULL;
    }
    fill_nan(dtype, host, n);
    if (bhsd) {
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int s = 0; s < S; s++) {
                    const float *src = bhsd + (((size_t)b * H + h) * S + s) * D;
                    attn_convert_from_f32(dtype, src, host + row_index(t, b, h, s) * esize,
                                          (size_t)D);
                }
    }
    cl_int err;
    t->buffer = clCreateBuffer(attn_context_cl_context(ctx),
                               CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * esize, host, &err);
    free(host);
    if (err != CL_SUCCESS) {
        printf("harness: clCreateBuffer(%zu bytes) failed: %d\n", n * esize, (int)err);
        t->buffer = NULL;
    }
    return t->buffer;
}

cl_mem harness_alloc(attn_context *ctx, attn_dtype dtype, int B, int H, int S, int D,
                     const harness_layout *l, attn_tensor *t)
{
    return make_tensor(ctx, dtype, NULL, B, H, S, D, l, t);
}

cl_mem harness_upload(attn_context *ctx, attn_dtype dtype, const float *bhsd, int B, int H,
                      int S, int D, const harness_layout *l, attn_tensor *t)
{
    if (!bhsd) {
        printf("harness: harness_upload without data\n");
        return NULL;
    }
    return make_tensor(ctx, dtype, bhsd, B, H, S, D, l, t);
}

/* An application's out-of-order queue could run a read before the kernels
 * that write its buffer: there everything enqueued finishes first. An
 * in-order queue is left alone, so that the tests reading right after a
 * done event still show that the event suffices. */
static cl_int drain_out_of_order(attn_context *ctx)
{
    cl_command_queue_properties props = 0;
    cl_int err = clGetCommandQueueInfo(attn_context_queue(ctx), CL_QUEUE_PROPERTIES, sizeof props,
                                       &props, NULL);
    if (err == CL_SUCCESS && (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE))
        err = clFinish(attn_context_queue(ctx));
    if (err != CL_SUCCESS) printf("harness: draining the out-of-order queue failed: %d\n", (int)err);
    return err;
}

int harness_download(attn_context *ctx, attn_dtype dtype, const attn_tensor *t, int B, int H,
                     int S, int D, float *bhsd)
{
    size_t esize = attn_dtype_size(dtype), bytes = 0;
    if (!ctx || !t || !t->buffer || !bhsd || esize == 0) {
        printf("harness: bad arguments for harness_download\n");
        return -1;
    }
    cl_int err = clGetMemObjectInfo(t->buffer, CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
    if (err != CL_SUCCESS) {
        printf("harness: clGetMemObjectInfo failed: %d\n", (int)err);
        return -1;
    }
    if (row_index(t, B - 1, H - 1, S - 1) + (size_t)D > bytes / esize) {
        printf("harness: tensor extends past its %zu-byte buffer\n", bytes);
        return -1;
    }
    unsigned char *host = malloc(bytes);
    if (!host) {
        printf("harness: out of memory reading %zu bytes\n", bytes);
        return -1;
    }
    err = drain_out_of_order(ctx);
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(attn_context_queue(ctx), t->buffer, CL_TRUE, 0, bytes, host, 0,
                                  NULL, NULL);
    if (err != CL_SUCCESS) {
        printf("harness: clEnqueueReadBuffer failed: %d\n", (int)err);
        free(host);
        return -1;
    }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int s = 0; s < S; s++) {
                float *dst = bhsd + (((size_t)b * H + h) * S + s) * D;
                attn_convert_to_f32(dtype, host + row_index(t, b, h, s) * esize, dst, (size_t)D);
            }
    free(host);
    return 0;
}

cl_mem harness_float_buffer(attn_context *ctx, size_t n)
{
    if (!ctx) return NULL;
    if (n == 0) n = 1;
    float *host = malloc(n * sizeof *host);
    if (!host) {
        printf("harness: out of memory for %zu floats\n", n);
        return NULL;
    }
    fill_nan(ATTN_F32, host, n);
    cl_int err;
    cl_mem m = clCreateBuffer(attn_context_cl_context(ctx),
                              CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof *host, host,
                              &err);
    free(host);
    if (err != CL_SUCCESS) {
        printf("harness: clCreateBuffer(%zu floats) failed: %d\n", n, (int)err);
        return NULL;
    }
    return m;
}

int harness_read_floats(attn_context *ctx, cl_mem buf, float *dst, size_t n)
{
    if (!ctx || !buf || (!dst && n)) return -1;
    if (n == 0) return 0;
    cl_int err = drain_out_of_order(ctx);
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(attn_context_queue(ctx), buf, CL_TRUE, 0, n * sizeof *dst, dst,
                                  0, NULL, NULL);
    if (err != CL_SUCCESS) {
        printf("harness: clEnqueueReadBuffer(%zu floats) failed: %d\n", n, (int)err);
        return -1;
    }
    return 0;
}

void harness_head_release(harness_head *h)
{
    const cl_mem mem[5] = {h->q.buffer, h->k.buffer, h->v.buffer, h->o.buffer, h->lse};
    for (int i = 0; i < 5; i++)
        if (mem[i]) clReleaseMemObject(mem[i]);
    memset(h, 0, sizeof *h);
}

int harness_head_upload(attn_context *ctx, const float *q, const float *k, const float *v, int sq,
                        int skv, int d, harness_head *h)
{
    memset(h, 0, sizeof *h);
    const int ok = harness_upload(ctx, ATTN_F32, q, 1, 1, sq, d, NULL, &h->q) &&
                   harness_upload(ctx, ATTN_F32, k, 1, 1, skv, d, NULL, &h->k) &&
                   harness_upload(ctx, ATTN_F32, v, 1, 1, skv, d, NULL, &h->v) &&
                   harness_alloc(ctx, ATTN_F32, 1, 1, sq, d, NULL, &h->o) &&
                   (h->lse = harness_float_buffer(ctx, (size_t)sq)) != NULL;
    if (!ok) harness_head_release(h);
    return ok ? 0 : -1;
}

/* ---- one checked forward ---- */

int harness_forward_check(attn_context *ctx, const attn_problem *p, uint64_t seed)
{
    const size_t nq = (size_t)p->batch * p->q_heads * p->q_len * p->head_dim;
    const size_t nk = (size_t)p->batch * p->kv_heads * p->kv_len * p->head_dim;
    float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nk * 4);
    float *got = malloc(nq * 4), *ref = malloc(nq * 4);
    int result = -1;
    attn_tensor tq, tk, tv, to;
    cl_mem m[4] = {NULL, NULL, NULL, NULL};
    if (!q || !k || !v || !got || !ref) goto out;
    harness_fill_uniform(q, nq, seed, -1.0f, 1.0f);
    harness_fill_uniform(k, nk, seed + 1, -1.0f, 1.0f);
    harness_fill_uniform(v, nk, seed + 2, 0.5f, 1.5f);
    harness_round(p->dtype, q, nq);
    harness_round(p->dtype, k, nk);
    harness_round(p->dtype, v, nk);
    m[0] = harness_upload(ctx, p->dtype, q, p->batch, p->q_heads, p->q_len, p->head_dim, NULL, &tq);
    m[1] = harness_upload(ctx, p->dtype, k, p->batch, p->kv_heads, p->kv_len, p->head_dim, NULL, &tk);
    m[2] = harness_upload(ctx, p->dtype, v, p->batch, p->kv_heads, p->kv_len, p->head_dim, NULL, &tv);
    m[3] = harness_alloc(ctx, p->dtype, p->batch, p->q_heads, p->q_len, p->head_dim, NULL, &to);
    if (!m[0] || !m[1] || !m[2] || !m[3]) goto out;
    attn_status st = attn_forward(ctx, p, &tq, &tk, &tv, &to, NULL, NULL, NULL);
    if (st != ATTN_SUCCESS) {
        printf("\n  attn_forward: %s: %s\n", attn_status_name(st), attn_last_error(ctx));
        result = (int)st;
        goto out;
    }
    if (harness_download(ctx, p->dtype, &to, p->batch, p->q_heads, p->q_len, p->head_dim, got) ||
        attn_reference_forward(p, q, k, v, ref, NULL, NULL) != ATTN_SUCCESS)
        goto out;
    double atol, rtol;
    attn_tolerance(p->dtype, &atol, &rtol);
    result = harness_compare("out", got, ref, nq, atol, rtol, seed) ? -1 : 0;
out:
    for (int i = 0; i < 4; i++)
        if (m[i]) clReleaseMemObject(m[i]);
    free(q), free(k), free(v), free(got), free(ref);
    return result;
}


/* ---- scratch folders ---- */

void harness_temp_dir(char *buf, size_t size, const char *what)
{
    snprintf(buf, size, "/tmp/attn-test-%s-XXXXXX", what);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(buf));
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)ftw;
    if (flag == FTW_DP) chmod(path, 0755);
    if (remove(path) != 0) printf("\n  cannot remove %s: %s\n", path, strerror(errno));
    return 0;
}

void harness_write_sources(attn_context *ctx, const char *dir, int wrong)
{
    for (int f = 0; f < 2; f++) {
        const char *const *names;
        const int n = attn_family_sources(f, ATTN_ENTRY_PREFILL, &names);
        CU_ASSERT_FATAL(n > 0);
        for (int i = 0; i < n; i++) {
            char *text = attn_kernel_source(ctx, names[i]), path[512];
            CU_ASSERT_PTR_NOT_NULL_FATAL(text);
            char *at = wrong == 1 ? strstr(text, "1.0f / l") : NULL;
            if (at) at[2] = '1'; /* "1.1f / l": more than the tolerance */
            snprintf(path, sizeof path, "%s/%s", dir, names[i]);
            FILE *fp = fopen(path, "w");
            CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
            fputs(text, fp);
            if (wrong == 2) fputc(0, fp), fputs("not OpenCL C", fp);
            CU_ASSERT_EQUAL(fclose(fp), 0);
            free(text);
        }
    }
}

void harness_remove_tree(const char *path)
{
    chmod(path, 0755); /* a test may have made it read-only */
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int harness_count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    const size_t sl = strlen(suffix);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const size_t l = strlen(e->d_name);
        n += l > sl && strcmp(e->d_name + l - sl, suffix) == 0;
    }
    closedir(d);
    return n;
}

char *harness_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("\n  cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    /* Read in growing steps until end of file: no size is trusted up front,
     * and a short read is an error rather than a silently cut text. */
    size_t n = 0, cap = 4096;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - 1 - n, f);
        if (n < cap - 1) break; /* end of file or an error: ferror tells */
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) free(buf);
        buf = bigger, cap *= 2;
    }
    if (buf && ferror(f)) {
        printf("\n  cannot read %s: %s\n", path, strerror(errno));
        free(buf);
        buf = NULL;
    } else if (!buf) {
        printf("\n  out of memory reading %s\n", path);
    }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

/* ---- other programs ---- */

const char *harness_tool_path(const char *env, const char *tool)
{
    const char *bin = getenv(env);
    if (bin && *bin) return bin;
    printf("\n  %s is not set: it names the %s this suite runs (ctest sets it; run the suite "
           "through ctest, or set %s=build/tools/%s)", env, tool, env, tool);
    CU_FAIL_FATAL("the tool's path is not set");
    return NULL;
}

int harness_run_program(const char *bin, const char *const *args, const char *out_path)
{
    return harness_run_program_split(bin, args, out_path, NULL);
}

int harness_run_program_split(const char *bin, const char *const *args, const char *out_path,
                              const char *err_path)
{
    const pid_t pid = harness_start_program(bin, args, NULL, out_path, err_path);
    if (pid < 0) return -1;
    const int rc = harness_wait_program(pid);
    if (rc < 0 || rc > 255) {
        printf("\n  %s did not exit normally (%d)\n", bin, rc);
        return -1;
    }
    return rc;
}

/* Whether the environment entry "NAME=value" is for the variable that
 * spec ("NAME=value" or "NAME") names. */
static int same_name(const char *entry, const char *spec)
{
    const size_t n = strcspn(spec, "=");
    return strncmp(entry, spec, n) == 0 && entry[n] == '=';
}

/* environ with extra_env's "NAME=value" entries in place of any of the same
 * name and without the variables of its "NAME" entries (the caller frees
 * the array, not the strings); NULL when out of memory. */
static char **environment_with(const char *const *extra_env)
{
    size_t n = 0, ne = 0;
    while (environ[n]) n++;
    while (extra_env && extra_env[ne]) ne++;
    char **envp = calloc(n + ne + 1, sizeof *envp);
    if (!envp) return NULL;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int replaced = 0;
        for (size_t j = 0; j < ne; j++) replaced |= same_name(environ[i], extra_env[j]);
        if (!replaced) envp[m++] = environ[i];
    }
    for (size_t j = 0; j < ne; j++)
        if (strchr(extra_env[j], '=')) envp[m++] = (char *)extra_env[j];
    envp[m] = NULL;
    return envp;
}

pid_t harness_start_program(const char *bin, const char *const *args,
                            const char *const *extra_env, const char *out_path,
                            const char *err_path)
{
    enum { MAX_ARGS = 64 };
    char *argv[MAX_ARGS + 2];
    int n = 0;
    argv[n++] = (char *)bin;
    for (; args && args[n - 1]; n++) {
        if (n > MAX_ARGS) {
            printf("\n  %s: more than %d arguments\n", bin, MAX_ARGS);
            return -1;
        }
        argv[n] = (char *)args[n - 1];
    }
    argv[n] = NULL;
    char **envp = environment_with(extra_env);
    if (!envp) {
        printf("\n  out of memory starting %s\n", bin);
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (out_path)
        posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err_path)
        posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    else if (out_path)
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
    fflush(stdout); /* the child must not repeat what this process buffered */
    pid_t pid;
    const int rc = posix_spawn(&pid, bin, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    if (rc != 0) {
        printf("\n  cannot start %s: %s\n", bin, strerror(rc));
        return -1;
    }
    return pid;
}

int harness_run_child(const char *name, const char *const *env, const char *err_path)
{
    enum { MAX_ENV = 32 };
    char self[4096], mode[256];
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        printf("\n  readlink /proc/self/exe: %s\n", strerror(errno));
        return -1;
    }
    self[len] = 0;
    const char *envp[MAX_ENV + 2];
    size_t n = 0;
    for (; env && env[n]; n++) {
        if (n == MAX_ENV) {
            printf("\n  child %s: more than %d variables\n", name, MAX_ENV);
            return -1;
        }
        envp[n] = env[n];
    }
    snprintf(mode, sizeof mode, "ATTN_TEST_CHILD=%s", name);
    envp[n++] = mode;
    envp[n] = NULL;
    return harness_wait_program(harness_start_program(self, NULL, envp, NULL, err_path));
}

int harness_wait_program(pid_t pid)
{
    int status;
    if (pid < 0) return -1;
    if (waitpid(pid, &status, 0) != pid) {
        printf("\n  waitpid %ld: %s\n", (long)pid, strerror(errno));
        return -1;
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}
