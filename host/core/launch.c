/* launch.c -- what the CLBlast paths need to run their own small kernels
 * (cl/convert.cl, cl/materialized.cl): fetch a kernel, set its arguments,
 * enqueue it, and keep dependent steps ordered on an out-of-order queue. */
#include "core/context.h"
#include "core/errors.h"
#include "core/program.h"
#include "core/launch.h"

#include <stdio.h>

attn_status attn_kernel_get(attn_context *ctx, const char *file, attn_dtype dtype,
                            const char *name, cl_kernel *out)
{
    char opts[64];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DSTORAGE=%d", (int)dtype);
    const char *sources[] = {"common.cl", file};
    cl_program prog;
    attn_status st = attn_program_get(ctx, sources, 2, opts, &prog);
    if (st != ATTN_SUCCESS) return st;
    cl_int err;
    *out = clCreateKernel(prog, name, &err);
    if (err != CL_SUCCESS) {
        char call[128];
        snprintf(call, sizeof call, "clCreateKernel (%s)", name);
        return attn_fail_cl(ctx, err, call);
    }
    return ATTN_SUCCESS;
}

attn_status attn_kernel_run(attn_context *ctx, cl_kernel k, const attn_karg *args, int n,
                            cl_uint dims, const size_t *global, const size_t *local)
{
    char name[96] = "kernel", call[160];
    clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name - 1, name, NULL);
    for (int i = 0; i < n; i++) {
        cl_int err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].value);
        if (err != CL_SUCCESS) {
            snprintf(call, sizeof call, "clSetKernelArg(%s, %d)", name, i);
            return attn_fail_cl(ctx, err, call);
        }
    }
    for (cl_uint d = 0; d < dims; d++)
        if (global[d] == 0) return ATTN_SUCCESS; /* nothing to do */
    cl_int err = clEnqueueNDRangeKernel(ctx->queue, k, dims, NULL, global, local, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        snprintf(call, sizeof call, "clEnqueueNDRangeKernel (%s)", name);
        return attn_fail_cl(ctx, err, call);
    }
    return ATTN_SUCCESS;
}

attn_status attn_queue_order(attn_context *ctx)
{
    if (!ctx->out_of_order) return ATTN_SUCCESS;
    cl_int err = clEnqueueBarrierWithWaitList(ctx->queue, 0, NULL, NULL);
    return err == CL_SUCCESS ? ATTN_SUCCESS : attn_fail_cl(ctx, err, "clEnqueueBarrierWithWaitList");
}
