/* copy_bw.c -- attn_device_copy_gbps: the device's global-memory copy
 * bandwidth, measured with cl/copy.cl the way clpeak does it (a warm-up,
 * then the best of a few timed runs over buffers larger than the caches),
 * so tools can report a memory-bound kernel's fraction of it. */
#define _POSIX_C_SOURCE 200809L
#include "core/context.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/launch.h"
#include "measure/kernel_time.h"

#include <stdio.h>

#define COPY_BYTES ((size_t)256 << 20) /* per buffer: well past any L2/L3 */
#define COPY_REPS 5

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
    if ((st = attn_kernel_build(ctx, sources, 1, options, "attn_copy", &kernel)) != ATTN_SUCCESS)
        goto done;
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
    const attn_karg args[] = {ATTN_KARG(src),       ATTN_KARG(dst),  ATTN_KARG(n),
                              ATTN_KARG(first_mul), ATTN_KARG(step), ATTN_KARG(per_item)};
    if ((st = attn_kernel_set_args(ctx, kernel, args, ATTN_NARGS(args))) != ATTN_SUCCESS)
        goto done;
    double ms, best = 0;
    /* warm-up */
    if ((st = attn_kernel_time(ctx, kernel, global, local, &ms)) != ATTN_SUCCESS) goto done;
    for (int r = 0; r < COPY_REPS; r++) {
        if ((st = attn_kernel_time(ctx, kernel, global, local, &ms)) != ATTN_SUCCESS) goto done;
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
