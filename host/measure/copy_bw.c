/* copy_bw.c -- attn_device_copy_gbps: the device's global-memory copy
 * bandwidth, measured with cl/copy.cl the way clpeak does it (a warm-up,
 * then the best of a few timed runs over buffers larger than the caches),
 * so tools can report a memory-bound kernel's fraction of it. */
#define _POSIX_C_SOURCE 200809L
#include "core/context.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/program.h"

#include <stdio.h>
#include <time.h>

#define COPY_BYTES ((size_t)256 << 20) /* per buffer: well past any L2/L3 */
#define COPY_REPS 5

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One run: profiling-event time when the queue has it, else wall time. */
static attn_status run_once(attn_context *ctx, cl_kernel kernel, size_t global, size_t local,
                            double *ms)
{
    cl_event ev = NULL;
    double t0 = now_ms();
    cl_int err = clEnqueueNDRangeKernel(ctx->queue, kernel, 1, NULL, &global,
                                        local ? &local : NULL, 0, NULL, &ev);
    if (err != CL_SUCCESS) return attn_fail_cl(ctx, err, "clEnqueueNDRangeKernel (attn_copy)");
    err = clWaitForEvents(1, &ev);
    double wall = now_ms() - t0;
    if (err != CL_SUCCESS) {
        clReleaseEvent(ev);
        return attn_fail_cl(ctx, err, "clWaitForEvents (attn_copy)");
    }
    *ms = wall;
    if (ctx->profiling) {
        cl_ulong start = 0, end = 0;
        if (clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) ==
                CL_SUCCESS &&
            clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) ==
                CL_SUCCESS &&
            end > start)
            *ms = (double)(end - start) / 1e6;
    }
    clReleaseEvent(ev);
    return ATTN_SUCCESS;
}

attn_status attn_device_copy_gbps(attn_context *ctx, double *gbps)
{
    if (!ctx) return attn_fail_null(__func__, "ctx");
    attn_call_begin(ctx, __func__);
    attn_status st = ATTN_SUCCESS;
    cl_mem src = NULL, dst = NULL;
    cl_kernel kernel = NULL;
    if (!gbps) {
        st = ATTN_FAIL(ctx, ATTN_ERROR_INVALID_ARGUMENT, "gbps is NULL");
        goto done;
    }
    *gbps = 0;
    const int cpu = (ctx->device_type & CL_DEVICE_TYPE_CPU) != 0;
    const int width = cpu ? 16 : 4;
    size_t bytes = COPY_BYTES;
    while (bytes > ctx->max_alloc && bytes > ((size_t)1 << 20)) bytes /= 2;
    const cl_ulong n = bytes / (sizeof(float) * (size_t)width);
    cl_int err;
    src = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err == CL_SUCCESS) dst = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS) {
        st = attn_fail_cl(ctx, err, "clCreateBuffer (copy bandwidth)");
        goto done;
    }
    /* touch both buffers so no run pays for first use of their pages */
    const float one = 1.0f;
    err = clEnqueueFillBuffer(ctx->queue, src, &one, sizeof one, 0, bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueFillBuffer(ctx->queue, dst, &one, sizeof one, 0, bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS) err = clFinish(ctx->queue);
    if (err != CL_SUCCESS) {
        st = attn_fail_cl(ctx, err, "clEnqueueFillBuffer (copy bandwidth)");
        goto done;
    }

    char options[64];
    snprintf(options, sizeof options, "-cl-std=CL1.2 -DCOPY_WIDTH=%d", width);
    const char *sources[] = {"copy.cl"};
    cl_program program;
    if ((st = attn_program_get(ctx, sources, 1, options, &program)) != ATTN_SUCCESS) goto done;
    kernel = clCreateKernel(program, "attn_copy", &err);
    if (err != CL_SUCCESS) {
        st = attn_fail_cl(ctx, err, "clCreateKernel (attn_copy)");
        goto done;
    }
    /* A CPU: a few contiguous ranges per core, one work-item per work-group
     * (each core streams). A GPU: one vector per work-item and pass,
     * neighbours on neighbours, 256-wide work-groups, a grid stride. */
    const size_t cus = ctx->compute_units ? ctx->compute_units : 1;
    size_t global, local;
    cl_ulong first_mul, step, per_item;
    if (cpu) {
        global = cus * 4;
        local = 1;
        per_item = (n + global - 1) / global;
        first_mul = per_item;
        step = 1;
    } else {
        local = ctx->max_wg < 256 ? ctx->max_wg : 256;
        global = cus * 2048 / local * local;
        if (global == 0) global = local;
        per_item = (n + global - 1) / global;
        first_mul = 1;
        step = global;
    }
    const struct { size_t size; const void *value; } args[] = {
        {sizeof src, &src}, {sizeof dst, &dst}, {sizeof n, &n},
        {sizeof first_mul, &first_mul}, {sizeof step, &step}, {sizeof per_item, &per_item}};
    for (cl_uint i = 0; i < sizeof args / sizeof args[0]; i++)
        if ((err = clSetKernelArg(kernel, i, args[i].size, args[i].value)) != CL_SUCCESS) {
            st = attn_fail_cl(ctx, err, "clSetKernelArg (attn_copy)");
            goto done;
        }
    double ms, best = 0;
    if ((st = run_once(ctx, kernel, global, local, &ms)) != ATTN_SUCCESS) goto done; /* warm-up */
    for (int r = 0; r < COPY_REPS; r++) {
        if ((st = run_once(ctx, kernel, global, local, &ms)) != ATTN_SUCCESS) goto done;
        const double g = ms > 0 ? 2.0 * (double)n * width * sizeof(float) / (ms * 1e6) : 0;
        if (g > best) best = g;
    }
    attn_log(ATTN_LOG_INFO, "copy bandwidth: float%d, %zu MiB each way, global %zu, local %zu: "
             "%.1f GB/s (read + written)", width, bytes >> 20, global, local, best);
    *gbps = best;
done:
    if (kernel) clReleaseKernel(kernel);
    if (src) clReleaseMemObject(src);
    if (dst) clReleaseMemObject(dst);
    attn_call_end(ctx);
    return st;
}
