/* test_context.c -- contexts: device selectors (and $ATTN_DEVICE), the
 * environment read at creation (ATTN_CACHE_DIR, XDG_CACHE_HOME,
 * ATTN_KERNEL_DIR; these in child processes), wrapping an application's
 * queue without taking it over, an out-of-order queue
 * (the scratch reuse must chain on events), the version, the accessors, the
 * last error, the `done` event, logging, and several threads sharing one
 * context. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "core/context.h"

#include <ctype.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers ---- */

static int contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n) return 1;
    }
    return 0;
}

/* The device a selector should pick, worked out independently of the
 * library: "P:D", a substring of platform/vendor/device name or the type
 * name ("cpu", "gpu"), or NULL for the first GPU, else the first device.
 * NULL when nothing matches. */
static cl_device_id expected_device(const char *sel)
{
    cl_uint np = 0;
    if (clGetPlatformIDs(0, NULL, &np) != CL_SUCCESS || np == 0) return NULL;
    cl_platform_id plats[16];
    if (np > 16) np = 16;
    clGetPlatformIDs(np, plats, NULL);
    int want_p = -1, want_d = -1, used = 0;
    if (!sel || sscanf(sel, "%d:%d%n", &want_p, &want_d, &used) != 2 || sel[used] != 0)
        want_p = want_d = -1;
    for (int gpu_pass = sel ? 0 : 1; gpu_pass >= 0; gpu_pass--) {
        for (cl_uint p = 0; p < np; p++) {
            cl_uint nd = 0;
            if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS) continue;
            cl_device_id devs[16];
            if (nd > 16) nd = 16;
            clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL);
            for (cl_uint d = 0; d < nd; d++) {
                char pn[256] = "", pv[256] = "", vn[256] = "", dn[256] = "";
                cl_device_type t = 0;
                clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pn, pn, NULL);
                clGetPlatformInfo(plats[p], CL_PLATFORM_VENDOR, sizeof pv, pv, NULL);
                clGetDeviceInfo(devs[d], CL_DEVICE_VENDOR, sizeof vn, vn, NULL);
                clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof dn, dn, NULL);
                clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof t, &t, NULL);
                if (want_p >= 0) {
                    if ((int)p == want_p && (int)d == want_d) return devs[d];
                } else if (sel) {
                    const char *type = (t & CL_DEVICE_TYPE_GPU) ? "gpu"
                                       : (t & CL_DEVICE_TYPE_CPU) ? "cpu" : "accelerator";
                    if (contains_ci(pn, sel) || contains_ci(pv, sel) || contains_ci(vn, sel) ||
                        contains_ci(dn, sel) ||
                        (strlen(type) == strlen(sel) && contains_ci(type, sel)))
                        return devs[d];
                } else if (gpu_pass == 0 || (t & CL_DEVICE_TYPE_GPU)) {
                    return devs[d];
                }
            }
        }
    }
    return NULL;
}

/* Whether some platform's name contains name. */
static int platform_named(const char *name)
{
    cl_uint np = 0;
    cl_platform_id plats[16];
    if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS) return 0;
    for (cl_uint p = 0; p < np && p < 16; p++) {
        char pn[256] = "";
        clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pn, pn, NULL);
        if (contains_ci(pn, name)) return 1;
    }
    return 0;
}

static attn_problem small_problem(int kv_len)
{
    attn_problem p;
    memset(&p, 0, sizeof p);
    p.batch = 2;
    p.q_heads = 4;
    p.kv_heads = 2;
    p.head_dim = 16;
    p.q_len = 8;
    p.kv_len = kv_len;
    p.dtype = ATTN_F32;
    p.causal = 1;
    return p;
}

/* One forward's host inputs and device tensors. */
typedef struct job {
    attn_problem p;
    float *hq, *hk, *hv, *ref, *got;
    attn_tensor q, k, v, o;
    uint64_t seed;
} job;

static int job_setup(attn_context *ctx, job *j, const attn_problem *p, uint64_t seed)
{
    memset(j, 0, sizeof *j);
    j->p = *p;
    j->seed = seed;
    size_t nq = (size_t)p->batch * p->q_heads * p->q_len * p->head_dim;
    size_t nk = (size_t)p->batch * p->kv_heads * p->kv_len * p->head_dim;
    j->hq = malloc(nq * sizeof(float));
    j->hk = malloc(nk * sizeof(float));
    j->hv = malloc(nk * sizeof(float));
    j->ref = malloc(nq * sizeof(float));
    j->got = malloc(nq * sizeof(float));
    if (!j->hq || !j->hk || !j->hv || !j->ref || !j->got) return -1;
    harness_fill_uniform(j->hq, nq, seed, -1.0f, 1.0f);
    harness_fill_uniform(j->hk, nk, seed + 1, -1.0f, 1.0f);
    harness_fill_uniform(j->hv, nk, seed + 2, -1.0f, 1.0f);
    if (!harness_upload(ctx, p->dtype, j->hq, p->batch, p->q_heads, p->q_len, p->head_dim, NULL, &j->q) ||
        !harness_upload(ctx, p->dtype, j->hk, p->batch, p->kv_heads, p->kv_len, p->head_dim, NULL, &j->k) ||
        !harness_upload(ctx, p->dtype, j->hv, p->batch, p->kv_heads, p->kv_len, p->head_dim, NULL, &j->v) ||
        !harness_alloc(ctx, p->dtype, p->batch, p->q_heads, p->q_len, p->head_dim, NULL, &j->o))
        return -1;
    return attn_reference_forward(p, j->hq, j->hk, j->hv, j->ref, NULL, NULL) == ATTN_SUCCESS ? 0 : -1;
}

/* Elements beyond tolerance (after the caller made sure the forward finished). */
static int job_errors(attn_context *ctx, job *j)
{
    const attn_problem *p = &j->p;
    if (harness_download(ctx, p->dtype, &j->o, p->batch, p->q_heads, p->q_len, p->head_dim,
                         j->got) != 0)
        return -1;
    double atol, rtol;
    attn_tolerance(p->dtype, &atol, &rtol);
    return harness_compare("out", j->got, j->ref,
                           (size_t)p->batch * p->q_heads * p->q_len * p->head_dim, atol, rtol,
                           j->seed);
}

static void job_free(job *j)
{
    cl_mem m[] = {j->q.buffer, j->k.buffer, j->v.buffer, j->o.buffer};
    for (int i = 0; i < 4; i++)
        if (m[i]) clReleaseMemObject(m[i]);
    free(j->hq);
    free(j->hk);
    free(j->hv);
    free(j->ref);
    free(j->got);
}

static cl_uint queue_refs(cl_command_queue q)
{
    cl_uint n = 0;
    CU_ASSERT_EQUAL(clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof n, &n, NULL),
                    CL_SUCCESS);
    return n;
}

static cl_uint context_refs(cl_context c)
{
    cl_uint n = 0;
    CU_ASSERT_EQUAL(clGetContextInfo(c, CL_CONTEXT_REFERENCE_COUNT, sizeof n, &n, NULL),
                    CL_SUCCESS);
    return n;
}

/* ---- version and accessors ---- */

static void test_version(void)
{
    CU_ASSERT_EQUAL(attn_version(), ATTN_VERSION_NUMBER);
    CU_ASSERT_EQUAL(ATTN_VERSION_NUMBER, 200);
    CU_ASSERT_STRING_EQUAL(attn_version_string(), "0.2.0");
    char expect[32];
    snprintf(expect, sizeof expect, "%d.%d.%d", ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR,
             ATTN_VERSION_PATCH);
    CU_ASSERT_STRING_EQUAL(attn_version_string(), expect);
}

static void test_accessors_and_last_error(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_PTR_NOT_NULL(attn_context_cl_context(ctx));
    CU_ASSERT_PTR_NOT_NULL(attn_context_queue(ctx));
    CU_ASSERT_PTR_NOT_NULL(attn_context_device(ctx));
    cl_context qc = NULL;
    cl_device_id qd = NULL;
    cl_command_queue_properties props = 0;
    clGetCommandQueueInfo(attn_context_queue(ctx), CL_QUEUE_CONTEXT, sizeof qc, &qc, NULL);
    clGetCommandQueueInfo(attn_context_queue(ctx), CL_QUEUE_DEVICE, sizeof qd, &qd, NULL);
    clGetCommandQueueInfo(attn_context_queue(ctx), CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
    CU_ASSERT_PTR_EQUAL(qc, attn_context_cl_context(ctx));
    CU_ASSERT_PTR_EQUAL(qd, attn_context_device(ctx));
    /* its own queue: in order, with profiling */
    CU_ASSERT(props & CL_QUEUE_PROFILING_ENABLE);
    CU_ASSERT_FALSE(props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);

    /* a failure is recorded, the next success clears it */
    attn_problem p = small_problem(8);
    CU_ASSERT_EQUAL(attn_prepare(ctx, NULL, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_STRING_NOT_EQUAL(attn_last_error(ctx), "");
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, NULL), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(attn_last_error(ctx), "");
    job j;
    CU_ASSERT_EQUAL_FATAL(job_setup(ctx, &j, &p, 5), 0);
    CU_ASSERT_EQUAL(attn_forward(ctx, &p, &j.q, &j.k, &j.v, &j.o, NULL, NULL, NULL),
                    ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(attn_last_error(ctx), "");
    CU_ASSERT_EQUAL(attn_forward(ctx, &p, NULL, &j.k, &j.v, &j.o, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_STRING_NOT_EQUAL(attn_last_error(ctx), "");
    CU_ASSERT_EQUAL(attn_forward(ctx, &p, &j.q, &j.k, &j.v, &j.o, NULL, NULL, NULL),
                    ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(attn_last_error(ctx), "");
    CU_ASSERT_EQUAL(clFinish(attn_context_queue(ctx)), CL_SUCCESS);
    CU_ASSERT_EQUAL(job_errors(ctx, &j), 0);
    job_free(&j);
}

/* ---- selectors ---- */

/* Creates a context with sel; checks the status, and on success that the
 * device is `want` and agrees with attn_select_device. */
static void check_selector(const char *sel, cl_device_id want)
{
    attn_context *c = (attn_context *)(uintptr_t)0x1;
    attn_status st = attn_context_create(sel, &c);
    if (!want) {
        CU_ASSERT_EQUAL(st, ATTN_ERROR_NO_DEVICE);
        CU_ASSERT_PTR_NULL(c);
        if (st != ATTN_ERROR_NO_DEVICE)
            printf("\n  selector \"%s\": %s, expected ATTN_ERROR_NO_DEVICE\n", sel ? sel : "(NULL)",
                   attn_status_name(st));
        return;
    }
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st != ATTN_SUCCESS) {
        printf("\n  selector \"%s\": %s: %s\n", sel ? sel : "(NULL)", attn_status_name(st),
               attn_last_create_error());
        return;
    }
    CU_ASSERT_STRING_EQUAL(attn_last_create_error(), "");
    CU_ASSERT_PTR_EQUAL(attn_context_device(c), want);
    cl_platform_id pl = NULL;
    cl_device_id dev = NULL;
    CU_ASSERT_EQUAL(attn_select_device(sel, &pl, &dev), ATTN_SUCCESS);
    CU_ASSERT_PTR_EQUAL(dev, attn_context_device(c));
    cl_platform_id dev_pl = NULL;
    clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof dev_pl, &dev_pl, NULL);
    CU_ASSERT_PTR_EQUAL(pl, dev_pl);
    CU_ASSERT_STRING_EQUAL(attn_last_error(c), "");
    attn_context_release(c);
}

/* Child check, ATTN_DEVICE unset: the selectors themselves. */
static void child_selectors(void)
{
    cl_device_id dflt = expected_device(NULL), d00 = expected_device("0:0");
    CU_ASSERT_PTR_NOT_NULL_FATAL(dflt);
    CU_ASSERT_PTR_NOT_NULL(d00);

    check_selector(NULL, dflt);
    check_selector("", dflt);
    check_selector("0:0", d00);
    /* substrings, any case, and type names: expected only where present
     * (PoCL is "Portable Computing Language" by "The pocl project": "pocl"
     * must find it through the platform's vendor) */
    if (platform_named("Portable Computing Language"))
        CU_ASSERT_PTR_NOT_NULL(expected_device("pocl"));
    check_selector("pocl", expected_device("pocl"));
    check_selector("PoCL", expected_device("pocl"));
    check_selector("cpu", expected_device("cpu"));
    check_selector("CPU", expected_device("cpu"));
    check_selector("gpu", expected_device("gpu"));
    char dname[256] = "";
    clGetDeviceInfo(dflt, CL_DEVICE_NAME, sizeof dname, dname, NULL);
    dname[6] = 0; /* a prefix of the device's own name */
    check_selector(dname, expected_device(dname));
    check_selector("no-such-device-xyz", NULL);
    check_selector("0:99", NULL);
    check_selector("99:0", NULL);
    /* indices are written plainly: with a '+' (which strtoll took) or a
     * space, "P:D" is a name, and no device has it */
    check_selector("+0:+0", NULL);
    check_selector("0:+0", NULL);
    check_selector(" 0:0", NULL);
    attn_context *c = NULL;
    CU_ASSERT_NOT_EQUAL(attn_context_create("-1:0", &c), ATTN_SUCCESS);
    CU_ASSERT_PTR_NULL(c);
    /* indices past INT_MAX: out of range, said so (sscanf's %d overflowed);
     * a minus sign too, on zero as well */
    const char *huge[] = {"0:99999999999999999999", "4294967296:0", "-0:0", "0:-1"};
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        CU_ASSERT_EQUAL(attn_context_create(huge[i], &c), ATTN_ERROR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_create_error(), "indices must be in 0..2147483647"));
        CU_ASSERT_PTR_NULL(c);
    }

}

/* Child checks with ATTN_DEVICE set: used when the selector is NULL or "". */
static void child_device_0_0(void) /* ATTN_DEVICE=0:0 */
{
    cl_device_id d00 = expected_device("0:0");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d00);
    check_selector(NULL, d00);
    check_selector("", d00);
}

static void child_device_no_such(void) /* ATTN_DEVICE=no-such */
{
    attn_context *c = (attn_context *)(uintptr_t)0x1;
    CU_ASSERT_EQUAL(attn_context_create(NULL, &c), ATTN_ERROR_NO_DEVICE);
    CU_ASSERT_PTR_NULL(c);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_create_error(), "no-such"));
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_create_error(), "ATTN_DEVICE"));
    CU_ASSERT_EQUAL(attn_context_create("", &c), ATTN_ERROR_NO_DEVICE);
    cl_platform_id pl;
    cl_device_id dev;
    CU_ASSERT_EQUAL(attn_select_device(NULL, &pl, &dev), ATTN_ERROR_NO_DEVICE);
    /* an explicit selector wins over the environment */
    check_selector("0:0", expected_device("0:0"));
}

static void child_device_empty(void) /* ATTN_DEVICE= : the default choice */
{
    cl_device_id dflt = expected_device(NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dflt);
    check_selector(NULL, dflt);
}

static void test_selectors(void)
{
    const char *const unset[] = {"ATTN_DEVICE", NULL}, *const d00[] = {"ATTN_DEVICE=0:0", NULL},
                      *const none[] = {"ATTN_DEVICE=no-such", NULL},
                      *const empty[] = {"ATTN_DEVICE=", NULL};
    CU_ASSERT_EQUAL(harness_run_child("child_selectors", unset, NULL), 0);
    CU_ASSERT_EQUAL(harness_run_child("child_device_0_0", d00, NULL), 0);
    CU_ASSERT_EQUAL(harness_run_child("child_device_no_such", none, NULL), 0);
    CU_ASSERT_EQUAL(harness_run_child("child_device_empty", empty, NULL), 0);
}

/* ---- the environment, read at creation only ---- */

/* Child check: a new context stores its program in the folder
 * ATTN_TEST_CACHE names (the one ATTN_CACHE_DIR or XDG_CACHE_HOME gives it)
 * and finds it in memory the second time. */
static void child_cache_folder(void)
{
    const char *dir = getenv("ATTN_TEST_CACHE");
    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    attn_problem p = small_problem(8);
    attn_context *a = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &a), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(a, &p, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(a->programs_built, 1); /* the folder is empty */
    CU_ASSERT_EQUAL(harness_count_files(dir, ".bin"), 1);
    unsigned from_memory = a->programs_from_memory;
    CU_ASSERT_EQUAL(attn_prepare(a, &p, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(a->programs_from_memory, from_memory + 1);
    CU_ASSERT_EQUAL(harness_count_files(dir, ".bin"), 1);
    attn_context_release(a);
}

/* Child check, ATTN_CACHE_DIR set but empty and XDG_CACHE_HOME set: no
 * disk cache (as attn_context_set_cache_dir's ""), nothing made in the
 * folder ATTN_TEST_CACHE names. */
static void child_cache_off(void)
{
    attn_problem p = small_problem(8);
    attn_context *a = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &a), ATTN_SUCCESS);
    CU_ASSERT_PTR_NULL(a->cache_dir);
    CU_ASSERT_EQUAL(attn_prepare(a, &p, NULL), ATTN_SUCCESS);
    struct stat sb;
    CU_ASSERT_NOT_EQUAL(stat(getenv("ATTN_TEST_CACHE"), &sb), 0);
    attn_context_release(a);
}

/* Child check: the context's cache folder is the one ATTN_TEST_CACHE names
 * ("": none), nothing built. */
static void child_cache_dir_is(void)
{
    const char *want = getenv("ATTN_TEST_CACHE");
    CU_ASSERT_PTR_NOT_NULL_FATAL(want);
    attn_context *a = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &a), ATTN_SUCCESS);
    if (!*want) CU_ASSERT_PTR_NULL(a->cache_dir);
    if (*want) CU_ASSERT(a->cache_dir && strcmp(a->cache_dir, want) == 0);
    attn_context_release(a);
}

/* Child check, ATTN_KERNEL_DIR=/nonexistent/attn/kernels: none there, an
 * error naming it. */
static void child_kernel_folder(void)
{
    attn_problem p = small_problem(8);
    attn_context *b = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &b), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(b, &p, NULL), ATTN_ERROR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(b), "/nonexistent/attn/kernels"));
    attn_context_release(b);
}

/* ATTN_CACHE_DIR, XDG_CACHE_HOME and ATTN_KERNEL_DIR as a new context
 * (another process) finds them. */
static void test_env_read_at_creation(void)
{
    char first[512], xdg[512], xdg_attn[600], e_cache[600], e_test[700], e_xdg[600];
    harness_temp_dir(first, sizeof first, "env-first");
    harness_temp_dir(xdg, sizeof xdg, "env-xdg");
    snprintf(xdg_attn, sizeof xdg_attn, "%s/attn", xdg);
    /* ATTN_CACHE_DIR, the embedded sources */
    snprintf(e_cache, sizeof e_cache, "ATTN_CACHE_DIR=%s", first);
    snprintf(e_test, sizeof e_test, "ATTN_TEST_CACHE=%s", first);
    const char *const env_first[] = {e_cache, e_test, "ATTN_KERNEL_DIR", NULL};
    CU_ASSERT_EQUAL(harness_run_child("child_cache_folder", env_first, NULL), 0);
    /* the kernel folder */
    const char *const env_kernels[] = {"ATTN_KERNEL_DIR=/nonexistent/attn/kernels", NULL};
    CU_ASSERT_EQUAL(harness_run_child("child_kernel_folder", env_kernels, NULL), 0);
    /* without ATTN_CACHE_DIR: $XDG_CACHE_HOME/attn */
    snprintf(e_xdg, sizeof e_xdg, "XDG_CACHE_HOME=%s", xdg);
    snprintf(e_test, sizeof e_test, "ATTN_TEST_CACHE=%s", xdg_attn);
    const char *const env_xdg[] = {"ATTN_CACHE_DIR", e_xdg, e_test, "ATTN_KERNEL_DIR", NULL};
    CU_ASSERT_EQUAL(harness_run_child("child_cache_folder", env_xdg, NULL), 0);
    /* ATTN_CACHE_DIR set but empty: none, whatever XDG_CACHE_HOME says */
    harness_remove_tree(xdg_attn);
    const char *const env_off[] = {"ATTN_CACHE_DIR=", e_xdg, e_test, "ATTN_KERNEL_DIR", NULL};
    CU_ASSERT_EQUAL(harness_run_child("child_cache_off", env_off, NULL), 0);
    /* a relative XDG_CACHE_HOME is ignored (the XDG spec): ~/.cache/attn */
    char e_home[600], home_cache[700];
    snprintf(e_home, sizeof e_home, "HOME=%s", xdg);
    snprintf(home_cache, sizeof home_cache, "ATTN_TEST_CACHE=%s/.cache/attn", xdg);
    const char *const env_rel[] = {"ATTN_CACHE_DIR", "XDG_CACHE_HOME=relative/cache", e_home,
                                   home_cache, NULL};
    CU_ASSERT_EQUAL(harness_run_child("child_cache_dir_is", env_rel, NULL), 0);
    /* a path too long for the cache's buffer: none (a warning), not a cut one */
    static char e_long[5000];
    const int at = snprintf(e_long, sizeof e_long, "ATTN_CACHE_DIR=/");
    memset(e_long + at, 'x', sizeof e_long - (size_t)at - 1);
    e_long[sizeof e_long - 1] = 0;
    const char *const env_long[] = {e_long, "ATTN_TEST_CACHE=", NULL};
    CU_ASSERT_EQUAL(harness_run_child("child_cache_dir_is", env_long, NULL), 0);
    harness_remove_tree(first);
    harness_remove_tree(xdg);
}

/* ---- wrapping an application's queue ---- */

/* The application's own context and queue on the harness's device. */
static cl_command_queue app_queue(cl_command_queue_properties props, cl_context *cctx)
{
    attn_context *h = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    cl_device_id dev = attn_context_device(h);
    cl_int err;
    *cctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CU_ASSERT_EQUAL_FATAL(err, CL_SUCCESS);
    cl_command_queue q = clCreateCommandQueue(*cctx, dev, props, &err);
    if (err != CL_SUCCESS) {
        clReleaseContext(*cctx);
        return NULL;
    }
    return q;
}

static void test_from_queue(void)
{
    cl_context cctx;
    cl_command_queue q = app_queue(0, &cctx); /* no profiling */
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    cl_uint qrefs = queue_refs(q), crefs = context_refs(cctx);

    attn_context *ctx = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create_from_queue(q, &ctx), ATTN_SUCCESS);
    CU_ASSERT_PTR_EQUAL(attn_context_queue(ctx), q);
    CU_ASSERT_PTR_EQUAL(attn_context_cl_context(ctx), cctx);
    CU_ASSERT_PTR_NOT_NULL(attn_context_device(ctx));
    CU_ASSERT_EQUAL(ctx->profiling, 0);
    CU_ASSERT_STRING_EQUAL(attn_last_error(ctx), "");

    attn_problem p = small_problem(12);
    job j;
    CU_ASSERT_EQUAL_FATAL(job_setup(ctx, &j, &p, 31), 0);
    cl_event done = NULL;
    attn_status st = attn_forward(ctx, &p, &j.q, &j.k, &j.v, &j.o, NULL, NULL, &done);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st != ATTN_SUCCESS) printf("\n  forward on the app's queue: %s\n", attn_last_error(ctx));
    CU_ASSERT_PTR_NOT_NULL(done);
    if (done) {
        CU_ASSERT_EQUAL(clWaitForEvents(1, &done), CL_SUCCESS);
        cl_command_queue eq = NULL;
        clGetEventInfo(done, CL_EVENT_COMMAND_QUEUE, sizeof eq, &eq, NULL);
        CU_ASSERT_PTR_EQUAL(eq, q);
        clReleaseEvent(done);
    }
    CU_ASSERT_EQUAL(job_errors(ctx, &j), 0);
    job_free(&j);
    attn_context_release(ctx);

    /* the application's queue and context are as they were, and usable.
     * PoCL drops the references its finished commands hold on the queue
     * from its own threads, a moment after the events complete: wait for
     * that (seen under ASan's timing), at most 2 s */
    CU_ASSERT_EQUAL(clFinish(q), CL_SUCCESS);
    for (int i = 0; i < 200 && queue_refs(q) != qrefs; i++) {
        struct timespec ms10 = {0, 10000000L};
        nanosleep(&ms10, NULL);
    }
    CU_ASSERT_EQUAL(queue_refs(q), qrefs);
    CU_ASSERT_EQUAL(context_refs(cctx), crefs);
    CU_ASSERT_EQUAL(clFinish(q), CL_SUCCESS);
    cl_int err;
    cl_mem m = clCreateBuffer(cctx, CL_MEM_READ_WRITE, 64, NULL, &err);
    CU_ASSERT_EQUAL(err, CL_SUCCESS);
    float zero = 0;
    CU_ASSERT_EQUAL(clEnqueueFillBuffer(q, m, &zero, sizeof zero, 0, 64, 0, NULL, NULL), CL_SUCCESS);
    CU_ASSERT_EQUAL(clFinish(q), CL_SUCCESS);
    clReleaseMemObject(m);

    /* the application may drop its own reference first: the wrapper keeps
     * the queue alive until it is released */
    CU_ASSERT_EQUAL_FATAL(attn_context_create_from_queue(q, &ctx), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(clReleaseCommandQueue(q), CL_SUCCESS);
    CU_ASSERT_EQUAL(clReleaseContext(cctx), CL_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(job_setup(ctx, &j, &p, 32), 0);
    CU_ASSERT_EQUAL(attn_forward(ctx, &p, &j.q, &j.k, &j.v, &j.o, NULL, NULL, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(clFinish(attn_context_queue(ctx)), CL_SUCCESS);
    CU_ASSERT_EQUAL(job_errors(ctx, &j), 0);
    job_free(&j);
    attn_context_release(ctx);
}

/* Several forwards back to back on an out-of-order queue, each with its own
 * inputs and output, no waits in between: they share the context's scratch
 * buffers, so each must wait for the previous one. */
static void test_out_of_order_queue(void)
{
    attn_context *ctx;
    cl_command_queue q;
    cl_context cctx;
    if (!harness_out_of_order_context(&ctx, &q, &cctx)) return;

    /* same shape (scratch reused), then a longer KV (scratch grows), then
     * short again; a few rounds, since a missing wait shows only sometimes */
    enum { N = 6, ROUNDS = 4 };
    const int kv[N] = {16, 16, 16, 40, 16, 40};
    for (int round = 0; round < ROUNDS; round++) {
        job j[N];
        cl_event done[N];
        for (int i = 0; i < N; i++) {
            attn_problem p = small_problem(kv[i]);
            CU_ASSERT_EQUAL_FATAL(job_setup(ctx, &j[i], &p, 100 + 10 * (uint64_t)i + 1000 * (uint64_t)round), 0);
        }
        CU_ASSERT_EQUAL(clFinish(q), CL_SUCCESS); /* the uploads */
        for (int i = 0; i < N; i++) {
            attn_status st = attn_forward(ctx, &j[i].p, &j[i].q, &j[i].k, &j[i].v, &j[i].o,
                                          NULL, NULL, &done[i]);
            CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
            if (st != ATTN_SUCCESS) {
                printf("\n  forward %d: %s\n", i, attn_last_error(ctx));
                done[i] = NULL;
            }
        }
        for (int i = 0; i < N; i++)
            if (done[i]) {
                CU_ASSERT_EQUAL(clWaitForEvents(1, &done[i]), CL_SUCCESS);
                clReleaseEvent(done[i]);
            }
        CU_ASSERT_EQUAL(clFinish(q), CL_SUCCESS);
        for (int i = 0; i < N; i++) {
            int bad = job_errors(ctx, &j[i]);
            CU_ASSERT_EQUAL(bad, 0);
            if (bad)
                printf("\n  out-of-order round %d, forward %d (kv_len %d) is wrong\n", round, i,
                       kv[i]);
            job_free(&j[i]);
        }
    }
    /* check mode on an out-of-order queue: its reads must wait for the
     * kernels (the inputs' uploads are finished; the outputs are not) */
    CU_ASSERT_EQUAL(attn_context_set_check(ctx, 1), ATTN_SUCCESS);
    for (int round = 0; round < ROUNDS; round++) {
        job j;
        attn_problem p = small_problem(kv[round % N]);
        CU_ASSERT_EQUAL_FATAL(job_setup(ctx, &j, &p, 7000 + (uint64_t)round), 0);
        CU_ASSERT_EQUAL(clFinish(q), CL_SUCCESS);
        attn_status st = attn_forward(ctx, &p, &j.q, &j.k, &j.v, &j.o, NULL, NULL, NULL);
        CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
        if (st != ATTN_SUCCESS)
            printf("\n  check mode on an out-of-order queue, round %d: %s: %s\n", round,
                   attn_status_name(st), attn_last_error(ctx));
        CU_ASSERT_EQUAL(clFinish(q), CL_SUCCESS);
        CU_ASSERT_EQUAL(job_errors(ctx, &j), 0);
        job_free(&j);
    }
    harness_app_release(ctx, q, cctx);
}

/* ---- the done event ---- */

static void test_done_event(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    attn_problem p = small_problem(8);
    job j;
    CU_ASSERT_EQUAL_FATAL(job_setup(ctx, &j, &p, 41), 0);
    cl_event done = NULL;
    CU_ASSERT_EQUAL(attn_forward(ctx, &p, &j.q, &j.k, &j.v, &j.o, NULL, NULL, &done),
                    ATTN_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(done);
    CU_ASSERT_EQUAL(clWaitForEvents(1, &done), CL_SUCCESS);
    cl_int status = -1;
    CU_ASSERT_EQUAL(clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                                   &status, NULL), CL_SUCCESS);
    CU_ASSERT_EQUAL(status, CL_COMPLETE);
    cl_command_queue eq = NULL;
    clGetEventInfo(done, CL_EVENT_COMMAND_QUEUE, sizeof eq, &eq, NULL);
    CU_ASSERT_PTR_EQUAL(eq, attn_context_queue(ctx));
    /* the library's own queue profiles */
    cl_ulong t0 = 0, t1 = 0;
    CU_ASSERT_EQUAL(clGetEventProfilingInfo(done, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL),
                    CL_SUCCESS);
    CU_ASSERT_EQUAL(clGetEventProfilingInfo(done, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL),
                    CL_SUCCESS);
    CU_ASSERT(t1 >= t0 && t0 > 0);
    /* the result is there once the event completes (no clFinish), read
     * through another queue: a read on the library's in-order queue would
     * wait for the kernel whatever the event said (a done that completed
     * before the kernel passed) */
    cl_int err;
    cl_command_queue other = clCreateCommandQueue(attn_context_cl_context(ctx),
                                                  attn_context_device(ctx), 0, &err);
    CU_ASSERT_EQUAL_FATAL(err, CL_SUCCESS);
    const size_t n = (size_t)p.batch * p.q_heads * p.q_len * p.head_dim;
    CU_ASSERT_EQUAL_FATAL(p.dtype, ATTN_F32);
    CU_ASSERT_EQUAL(clEnqueueReadBuffer(other, j.o.buffer, CL_TRUE, 0, n * sizeof(float), j.got,
                                        0, NULL, NULL), CL_SUCCESS);
    double atol, rtol;
    attn_tolerance(p.dtype, &atol, &rtol);
    CU_ASSERT_EQUAL(harness_compare("out, read on another queue", j.got, j.ref, n, atol, rtol,
                                    j.seed), 0);
    clReleaseCommandQueue(other);
    CU_ASSERT_EQUAL(job_errors(ctx, &j), 0);
    /* the caller's reference outlives later forwards */
    CU_ASSERT_EQUAL(attn_forward(ctx, &p, &j.q, &j.k, &j.v, &j.o, NULL, NULL, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(clFinish(attn_context_queue(ctx)), CL_SUCCESS);
    cl_uint refs = 0;
    CU_ASSERT_EQUAL(clGetEventInfo(done, CL_EVENT_REFERENCE_COUNT, sizeof refs, &refs, NULL),
                    CL_SUCCESS);
    CU_ASSERT(refs >= 1);
    CU_ASSERT_EQUAL(clReleaseEvent(done), CL_SUCCESS);
    job_free(&j);
}

/* ---- logging (in a child process: the level is read once) ---- */

/* Child check, ATTN_LOG set: a failure (logged at debug level) and a
 * success, on stderr at that level. */
static void child_log(void)
{
    attn_context *c = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &c), ATTN_SUCCESS);
    attn_problem p = small_problem(8);
    CU_ASSERT_EQUAL(attn_prepare(c, &p, NULL), ATTN_SUCCESS);
    job j;
    CU_ASSERT_EQUAL_FATAL(job_setup(c, &j, &p, 51), 0);
    CU_ASSERT_EQUAL(attn_forward(c, &p, NULL, &j.k, &j.v, &j.o, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_forward(c, &p, &j.q, &j.k, &j.v, &j.o, NULL, NULL, NULL), ATTN_SUCCESS);
    clFinish(attn_context_queue(c));
    CU_ASSERT_EQUAL(job_errors(c, &j), 0);
    job_free(&j);
    attn_context_release(c);
}

/* Runs child_log with ATTN_LOG=level and stderr to errfile. */
static int spawn_log_child(const char *level, const char *errfile)
{
    char var[64];
    snprintf(var, sizeof var, "ATTN_LOG=%s", level);
    const char *const env[] = {var, NULL};
    return harness_run_child("child_log", env, errfile);
}

static void test_logging(void)
{
    char errfile[] = "/tmp/attn-test-log-XXXXXX";
    int fd = mkstemp(errfile);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    CU_ASSERT_EQUAL(spawn_log_child("debug", errfile), 0);
    char *text = harness_read_file(errfile, NULL);
    CU_ASSERT_PTR_NOT_NULL(text);
    if (text) {
        CU_ASSERT_PTR_NOT_NULL(strstr(text, "attn: debug:"));
        CU_ASSERT_PTR_NOT_NULL(strstr(text, "attn: info:"));
        CU_ASSERT_PTR_NOT_NULL(strstr(text, "q is NULL")); /* the failure, logged */
    }
    free(text);
    /* the default level says nothing about a successful run; an unknown
     * level is harmless, said once, and logs at warn */
    CU_ASSERT_EQUAL(spawn_log_child("", errfile), 0);
    text = harness_read_file(errfile, NULL);
    CU_ASSERT(text && !strstr(text, "attn: debug:") && !strstr(text, "attn: info:"));
    free(text);
    CU_ASSERT_EQUAL(spawn_log_child("bogus-level", errfile), 0);
    text = harness_read_file(errfile, NULL);
    CU_ASSERT(text && strstr(text, "ATTN_LOG=\"bogus-level\" is not error, warn, info, debug") &&
              !strstr(text, "attn: info:"));
    free(text);
    CU_ASSERT_EQUAL(spawn_log_child("off", errfile), 0);
    text = harness_read_file(errfile, NULL);
    CU_ASSERT(text && !strstr(text, "attn:"));
    free(text);
    unlink(errfile);
}

/* ---- threads sharing one context ---- */

enum { THREADS = 4, PER_THREAD = 3 };

typedef struct thread_arg {
    attn_context *ctx;
    int index;
    int failures;      /* forwards that failed or were wrong */
    char message[256]; /* the first failure */
} thread_arg;

static void *thread_main(void *varg)
{
    thread_arg *a = varg;
    for (int it = 0; it < PER_THREAD; it++) {
        /* a KV length of its own per thread and iteration: the scratch
         * buffers grow and are reused across threads */
        attn_problem p = small_problem(8 + 4 * a->index + 8 * it);
        p.causal = (a->index + it) & 1;
        job j;
        if (job_setup(a->ctx, &j, &p, 1000 + 100 * (uint64_t)a->index + (uint64_t)it) != 0) {
            a->failures++;
            snprintf(a->message, sizeof a->message, "setup failed");
            job_free(&j);
            continue;
        }
        cl_event done = NULL;
        attn_status st = attn_forward(a->ctx, &p, &j.q, &j.k, &j.v, &j.o, NULL, NULL, &done);
        if (st != ATTN_SUCCESS) {
            if (!a->failures++)
                snprintf(a->message, sizeof a->message, "forward: %s", attn_status_name(st));
        } else {
            clWaitForEvents(1, &done);
            clReleaseEvent(done);
            int bad = job_errors(a->ctx, &j);
            if (bad != 0 && !a->failures++)
                snprintf(a->message, sizeof a->message, "iteration %d: %d elements wrong", it, bad);
        }
        job_free(&j);
    }
    return NULL;
}

static void test_threads(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    attn_problem p = small_problem(8);
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, NULL), ATTN_SUCCESS); /* build once, up front */
    pthread_t th[THREADS];
    thread_arg args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].ctx = ctx;
        args[i].index = i;
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        CU_ASSERT_EQUAL(args[i].failures, 0);
        if (args[i].failures) printf("\n  thread %d: %s\n", i, args[i].message);
    }
}

static const harness_test tests[] = {
    HARNESS_TEST(test_version),
    HARNESS_TEST(test_accessors_and_last_error),
    HARNESS_TEST(test_selectors),
    HARNESS_TEST(test_env_read_at_creation),
    HARNESS_TEST(test_from_queue),
    HARNESS_TEST(test_out_of_order_queue),
    HARNESS_TEST(test_done_event),
    HARNESS_TEST(test_logging),
    HARNESS_TEST(test_threads),
    HARNESS_END,
};

static const harness_test children[] = {
    HARNESS_TEST(child_selectors),     HARNESS_TEST(child_device_0_0),
    HARNESS_TEST(child_device_no_such), HARNESS_TEST(child_device_empty),
    HARNESS_TEST(child_cache_folder),  HARNESS_TEST(child_kernel_folder),
    HARNESS_TEST(child_cache_off),     HARNESS_TEST(child_cache_dir_is),
    HARNESS_TEST(child_log),
    HARNESS_END,
};

static void register_tests(void)
{
    harness_add_suite("context", tests);
    harness_add_children(children);
}

int main(void) { return harness_run("test_context", register_tests); }
