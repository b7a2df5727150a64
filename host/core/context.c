/* context.c -- device selection, the attn_context's life cycle and the
 * scratch buffers it owns (its errors: errors.c). */
#define _POSIX_C_SOURCE 200809L
#include "blas/blas.h"
#include "core/config.h"
#include "core/context.h"
#include "attention/mma_gate.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/text.h"
#include "tuning/tuning.h"
#include "attention/mask_cache.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- device selection ---- */

/* Walks every device of every platform; fn returns 1 to stop. */
typedef int (*device_visit)(cl_platform_id pl, cl_uint pi, cl_device_id dev, cl_uint di, void *arg);

static attn_status walk_devices(device_visit fn, void *arg, int *stopped)
{
    cl_uint np = 0;
    *stopped = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (err == CL_SUCCESS && np == 0))
        return ATTN_FAIL(NULL, ATTN_ERROR_NO_DEVICE,
                         "no OpenCL platform found (is an ICD installed in /etc/OpenCL/vendors?)");
    cl_platform_id plats[64];
    if (np > 64) np = 64;
    /* the lists are used only when the driver filled them (test_cl_faults:
     * a failed second call left them uninitialised, and the ICD crashed) */
    if (err == CL_SUCCESS) err = clGetPlatformIDs(np, plats, NULL);
    if (err != CL_SUCCESS) return attn_fail_cl(NULL, err, "clGetPlatformIDs");
    for (cl_uint p = 0; p < np && !*stopped; p++) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0)
            continue;
        cl_device_id devs[64];
        if (nd > 64) nd = 64;
        if ((err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL)) != CL_SUCCESS)
            return attn_fail_cl(NULL, err, "clGetDeviceIDs");
        for (cl_uint d = 0; d < nd && !*stopped; d++)
            *stopped = fn(plats[p], p, devs[d], d, arg);
    }
    return ATTN_SUCCESS;
}

/* One walk at a time, process-wide: an ICD's first discovery need not be
 * thread-safe (PoCL 3.1's is not: threads creating their first contexts at
 * once got CL_DEVICE_NOT_FOUND, or a device half built, and crashed
 * reading its name). After the first walk the driver is set up, so holding
 * the lock across the visits costs only their time. */
static pthread_mutex_t discovery = PTHREAD_MUTEX_INITIALIZER;

static attn_status for_each_device(device_visit fn, void *arg, int *stopped)
{
    pthread_mutex_lock(&discovery);
    const attn_status st = walk_devices(fn, arg, stopped);
    pthread_mutex_unlock(&discovery);
    return st;
}

typedef struct {
    const char *sel;     /* substring, or NULL for "first GPU else first" */
    int want_p, want_d;  /* "P:D", or -1 */
    int gpu_only;
    cl_platform_id pl;
    cl_device_id dev;
} select_state;

static int select_visit(cl_platform_id pl, cl_uint pi, cl_device_id dev, cl_uint di, void *arg)
{
    select_state *s = arg;
    if (s->want_p >= 0) {
        if ((int)pi != s->want_p || (int)di != s->want_d) return 0;
    } else if (s->sel) {
        char pname[256] = "", pvendor[256] = "", vendor[256] = "", dname[256] = "";
        clGetPlatformInfo(pl, CL_PLATFORM_NAME, sizeof pname, pname, NULL);
        clGetPlatformInfo(pl, CL_PLATFORM_VENDOR, sizeof pvendor, pvendor, NULL);
        clGetDeviceInfo(dev, CL_DEVICE_VENDOR, sizeof vendor, vendor, NULL);
        clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof dname, dname, NULL);
        cl_device_type t = 0;
        clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof t, &t, NULL);
        const char *type = (t & CL_DEVICE_TYPE_GPU) ? "gpu" : (t & CL_DEVICE_TYPE_CPU) ? "cpu" : "accelerator";
        if (!attn_contains_ci(pname, s->sel) && !attn_contains_ci(pvendor, s->sel) &&
            !attn_contains_ci(vendor, s->sel) &&
            !attn_contains_ci(dname, s->sel) && !attn_equal_ci(type, s->sel))
            return 0;
    } else if (s->gpu_only) {
        cl_device_type t = 0;
        clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof t, &t, NULL);
        if (!(t & CL_DEVICE_TYPE_GPU)) return 0;
    }
    s->pl = pl;
    s->dev = dev;
    return 1;
}

/* attn_select_device without naming a call: context creation uses it too. */
/* "P:D", two whole numbers written plainly (a '-' sign is recognised, to
 * be refused, "-0" too; no '+' or spaces): 1 and the indices; -1 when one
 * is negative or past INT_MAX (sscanf's %d was undefined there); 0 when
 * selector is not of that form (a name). */
static int index_pair(const char *selector, int *p, int *d)
{
    const char *at = selector;
    long long v[2];
    int negative = 0;
    for (int i = 0; i < 2; i++) {
        const char *digits = at + (*at == '-');
        if (*digits < '0' || *digits > '9') return 0;
        negative |= *at == '-';
        char *end;
        errno = 0;
        v[i] = strtoll(at, &end, 10);
        if (errno == ERANGE) v[i] = -1; /* out of range either way */
        if (*end != (i == 0 ? ':' : '\0')) return 0;
        at = end + 1;
    }
    if (negative || v[0] < 0 || v[1] < 0 || v[0] > INT_MAX || v[1] > INT_MAX) return -1;
    *p = (int)v[0], *d = (int)v[1];
    return 1;
}

static attn_status select_device(const char *selector, cl_platform_id *platform,
                                 cl_device_id *device)
{
    const char *from = "selector";
    if (!selector || !*selector) {
        selector = getenv("ATTN_DEVICE");
        from = "ATTN_DEVICE";
    }
    select_state s = {NULL, -1, -1, 0, NULL, NULL};
    int stopped = 0;
    attn_status st;
    if (selector && *selector) {
        int p, d;
        const int form = index_pair(selector, &p, &d);
        if (form) {
            ATTN_CHECK(NULL, form < 0, ATTN_ERROR_INVALID_ARGUMENT,
                       "%s \"%s\": platform and device indices must be in 0..%d", from, selector,
                       INT_MAX);
            s.want_p = p;
            s.want_d = d;
        } else {
            s.sel = selector;
        }
        if ((st = for_each_device(select_visit, &s, &stopped)) != ATTN_SUCCESS) return st;
        ATTN_CHECK(NULL, !stopped, ATTN_ERROR_NO_DEVICE,
                   "%s \"%s\" matches no OpenCL device (attn-info lists them)", from, selector);
    } else {
        s.gpu_only = 1;
        if ((st = for_each_device(select_visit, &s, &stopped)) != ATTN_SUCCESS) return st;
        if (!stopped) {
            s.gpu_only = 0;
            if ((st = for_each_device(select_visit, &s, &stopped)) != ATTN_SUCCESS) return st;
        }
        ATTN_CHECK(NULL, !stopped, ATTN_ERROR_NO_DEVICE, "no OpenCL device found");
    }
    *platform = s.pl;
    *device = s.dev;
    return ATTN_SUCCESS;
}

attn_status attn_select_device(const char *selector, cl_platform_id *platform,
                               cl_device_id *device)
{
    attn_thread_call_begin(__func__);
    ATTN_CHECK(NULL, !platform || !device, ATTN_ERROR_INVALID_ARGUMENT,
               "platform and device must not be NULL");
    return select_device(selector, platform, device);
}

/* ---- life cycle ---- */

int attn_device_has_extension(cl_device_id device, const char *name)
{
    size_t n = 0;
    if (clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, 0, NULL, &n) != CL_SUCCESS || n == 0) return 0;
    char *ext = malloc(n + 1);
    if (!ext) return 0;
    int has = clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, n, ext, NULL) == CL_SUCCESS;
    ext[n] = 0;
    /* a whole name of the space-separated list */
    const size_t len = strlen(name);
    const char *at = ext;
    int found = 0;
    while (has && !found && (at = strstr(at, name)) != NULL) {
        found = (at == ext || at[-1] == ' ') && (at[len] == ' ' || at[len] == 0);
        at += len;
    }
    free(ext);
    return found;
}

/* A platform's (pl) or else a device's string, cut to fit buf: a name
 * longer than the field is no error. */
static cl_int info_string(cl_platform_id pl, cl_device_id dev, cl_uint what, char *buf,
                          size_t size)
{
    size_t n = 0;
    cl_int err = pl ? clGetPlatformInfo(pl, what, 0, NULL, &n)
                    : clGetDeviceInfo(dev, what, 0, NULL, &n);
    if (err != CL_SUCCESS) return err;
    char *all = malloc(n + 1);
    if (!all) return CL_OUT_OF_HOST_MEMORY;
    err = pl ? clGetPlatformInfo(pl, what, n, all, NULL) : clGetDeviceInfo(dev, what, n, all, NULL);
    if (err == CL_SUCCESS) {
        all[n] = 0;
        snprintf(buf, size, "%s", all);
    }
    free(all);
    return err;
}

/* The device's facts: names for the caches' keys and the tuning database,
 * limits for planning. A query that fails fails the context, naming it
 * (test_cl_faults: a max allocation left at 0 had made every later call
 * fail as if the device could allocate nothing). */
static attn_status read_device_facts(attn_context *c)
{
    cl_int err = info_string(c->platform, NULL, CL_PLATFORM_NAME, c->platform_name,
                             sizeof c->platform_name);
    if (err != CL_SUCCESS) return attn_fail_cl(NULL, err, "clGetPlatformInfo(CL_PLATFORM_NAME)");
#define DEVICE_STRING(what, field)                                                                 \
    if ((err = info_string(NULL, c->device, what, c->field, sizeof c->field)) != CL_SUCCESS)       \
        return attn_fail_cl(NULL, err, "clGetDeviceInfo(" #what ")");
#define DEVICE_FACT(what, field)                                                                   \
    if ((err = clGetDeviceInfo(c->device, what, sizeof c->field, &c->field, NULL)) != CL_SUCCESS)  \
        return attn_fail_cl(NULL, err, "clGetDeviceInfo(" #what ")");
    DEVICE_STRING(CL_DEVICE_VENDOR, vendor)
    DEVICE_STRING(CL_DEVICE_NAME, device_name)
    DEVICE_STRING(CL_DRIVER_VERSION, driver)
    DEVICE_FACT(CL_DEVICE_TYPE, device_type)
    DEVICE_FACT(CL_DEVICE_MAX_COMPUTE_UNITS, compute_units)
    DEVICE_FACT(CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, float_width)
    DEVICE_FACT(CL_DEVICE_LOCAL_MEM_SIZE, local_mem)
    DEVICE_FACT(CL_DEVICE_MAX_WORK_GROUP_SIZE, max_wg)
    DEVICE_FACT(CL_DEVICE_MAX_MEM_ALLOC_SIZE, max_alloc)
#undef DEVICE_FACT
#undef DEVICE_STRING
    c->nv_cc = attn_nv_compute_capability(c->device);
    return ATTN_SUCCESS;
}

static attn_context *context_new(void)
{
    attn_context *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c);
        return NULL;
    }
    if (attn_config_init(c) != 0) { /* the environment's defaults, read once */
        attn_config_release(c);
        pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
    }
    return c;
}

attn_status attn_context_create(const char *selector, attn_context **out)
{
    attn_thread_call_begin(__func__);
    ATTN_CHECK(NULL, !out, ATTN_ERROR_INVALID_ARGUMENT, "out must not be NULL");
    *out = NULL;
    cl_platform_id pl = NULL;
    cl_device_id dev = NULL;
    attn_status st = select_device(selector, &pl, &dev);
    if (st != ATTN_SUCCESS) return st;

    attn_context *c = context_new();
    ATTN_CHECK(NULL, !c, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    c->platform = pl;
    c->device = dev;
    cl_int err;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)pl, 0};
    c->cl_ctx = clCreateContext(props, 1, &dev, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        st = attn_fail_cl(NULL, err, "clCreateContext");
        goto fail;
    }
    c->queue = clCreateCommandQueue(c->cl_ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
    if (err != CL_SUCCESS) {
        st = attn_fail_cl(NULL, err, "clCreateCommandQueue");
        goto fail;
    }
    c->profiling = 1;
    if ((st = read_device_facts(c)) != ATTN_SUCCESS) goto fail;
    attn_log(ATTN_LOG_INFO, "device: %s / %s (%s)", c->platform_name, c->device_name, c->driver);
    *out = c;
    return ATTN_SUCCESS;
fail:
    attn_context_release(c);
    return st;
}

attn_status attn_context_create_from_queue(cl_command_queue queue, attn_context **out)
{
    attn_thread_call_begin(__func__);
    ATTN_CHECK(NULL, !out, ATTN_ERROR_INVALID_ARGUMENT, "out must not be NULL");
    *out = NULL;
    ATTN_CHECK(NULL, !queue, ATTN_ERROR_INVALID_ARGUMENT, "queue must not be NULL");
    attn_context *c = context_new();
    ATTN_CHECK(NULL, !c, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    cl_command_queue_properties qp = 0;
    cl_int err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof c->cl_ctx, &c->cl_ctx, NULL);
    if (err == CL_SUCCESS)
        err = clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof c->device, &c->device, NULL);
    if (err == CL_SUCCESS)
        err = clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof qp, &qp, NULL);
    if (err == CL_SUCCESS)
        err = clGetDeviceInfo(c->device, CL_DEVICE_PLATFORM, sizeof c->platform, &c->platform, NULL);
    if (err != CL_SUCCESS) {
        attn_status st = err == CL_INVALID_COMMAND_QUEUE
                             ? ATTN_FAIL(NULL, ATTN_ERROR_INVALID_ARGUMENT,
                                         "queue is not a valid command queue")
                             : attn_fail_cl(NULL, err, "clGetCommandQueueInfo");
        attn_config_release(c);
        pthread_mutex_destroy(&c->lock);
        free(c);
        return st;
    }
    /* borrowed: retained here, released in attn_context_release */
    clRetainCommandQueue(queue);
    clRetainContext(c->cl_ctx);
    c->queue = queue;
    c->profiling = (qp & CL_QUEUE_PROFILING_ENABLE) != 0;
    c->out_of_order = (qp & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0;
    const attn_status st = read_device_facts(c);
    if (st != ATTN_SUCCESS) {
        attn_context_release(c); /* the queue and context retained above too */
        return st;
    }
    *out = c;
    return ATTN_SUCCESS;
}

void attn_context_release(attn_context *ctx)
{
    if (!ctx) return;
    for (attn_program_entry *e = ctx->programs, *next; e; e = next) {
        next = e->next;
        clReleaseProgram(e->program);
        free(e->request);
        free(e);
    }
    attn_tuning_release(ctx);
    attn_config_release(ctx);
    attn_mask_cache_release(ctx);
    attn_scratch *scratch[ATTN_SCRATCH_MAX];
    const int nscratch = attn_scratch_all(ctx, scratch, ATTN_SCRATCH_MAX);
    for (int i = 0; i < nscratch; i++)
        if (scratch[i]->mem) clReleaseMemObject(scratch[i]->mem);
    attn_clblast_release(ctx);
    if (ctx->queue) clReleaseCommandQueue(ctx->queue);
    if (ctx->cl_ctx) clReleaseContext(ctx->cl_ctx);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

cl_context attn_context_cl_context(const attn_context *ctx) { return ctx ? ctx->cl_ctx : NULL; }
cl_command_queue attn_context_queue(const attn_context *ctx) { return ctx ? ctx->queue : NULL; }
cl_device_id attn_context_device(const attn_context *ctx) { return ctx ? ctx->device : NULL; }

attn_status attn_context_set_check(attn_context *ctx, int enable)
{
    if (!ctx) return attn_fail_null(__func__, "ctx");
    attn_call_begin(ctx, __func__);
    attn_status st = ATTN_SUCCESS;
    if (enable != 0 && enable != 1) /* not taken as "nonzero": a wrong argument, said so */
        st = ATTN_FAIL(ctx, ATTN_ERROR_INVALID_ARGUMENT,
                       "attn_context_set_check: enable = %d is not 0 or 1", enable);
    else
        ctx->check = enable;
    attn_call_end(ctx);
    return st;
}

attn_status attn_scratch_reserve(attn_context *ctx, attn_scratch *s, size_t bytes)
{
    if (bytes == 0) bytes = 16;
    if (s->mem && s->bytes >= bytes) return ATTN_SUCCESS;
    ATTN_CHECK(ctx, bytes > ctx->max_alloc, ATTN_ERROR_OUT_OF_MEMORY,
               "scratch buffer of %zu bytes exceeds the device's max allocation (%llu bytes)",
               bytes, (unsigned long long)ctx->max_alloc);
    if (s->mem) {
        /* the in-order queue may still use the old buffer; release only drops
         * our reference, OpenCL keeps it alive until those commands finish */
        clReleaseMemObject(s->mem);
        s->mem = NULL;
        s->bytes = 0;
    }
    cl_int err;
    s->mem = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS) {
        s->mem = NULL;
        /* the size is attn's choice, not the caller's: a driver that refuses
         * it (beyond a limit it reported larger) is out of memory too */
        if (err == CL_INVALID_BUFFER_SIZE)
            return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "clCreateBuffer (scratch) of %zu bytes "
                             "failed: CL_INVALID_BUFFER_SIZE (-61)", bytes);
        return attn_fail_cl(ctx, err, "clCreateBuffer (scratch)");
    }
    s->bytes = bytes;
    return ATTN_SUCCESS;
}
