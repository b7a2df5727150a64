/* launch.c -- one way to build, bind and enqueue a kernel (launch.h): the
 * attention paths, the CLBlast paths' small kernels and the measurements
 * share it, so every failure names the call, the kernel and the argument. */
#include "core/context.h"
#include "core/errors.h"
#include "core/program.h"
#include "core/launch.h"

#include <stdio.h>

/* "call (kernel)", or "call(kernel, index)" when index >= 0. The name is
 * asked of OpenCL only here, on failure: the launches pay nothing for it. */
static attn_status fail_kernel(attn_context *ctx, cl_int err, const char *call, cl_kernel k,
                               int index)
{
    char name[96] = "kernel", text[160];
    if (clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name - 1, name, NULL) != CL_SUCCESS)
        snprintf(name, sizeof name, "kernel");
    if (index >= 0) snprintf(text, sizeof text, "%s(%s, %d)", call, name, index);
    else snprintf(text, sizeof text, "%s (%s)", call, name);
    return attn_fail_cl(ctx, err, text);
}

attn_status attn_kernel_create(attn_context *ctx, cl_program prog, const char *name,
                               cl_kernel *out)
{
    cl_int err;
    *out = clCreateKernel(prog, name, &err);
    if (err == CL_SUCCESS) return ATTN_SUCCESS;
    *out = NULL;
    char call[128];
    snprintf(call, sizeof call, "clCreateKernel (%s)", name);
    return attn_fail_cl(ctx, err, call);
}

attn_status attn_kernel_build(attn_context *ctx, const char *const *sources, int nsources,
                              const char *options, const char *name, cl_kernel *out)
{
    *out = NULL;
    cl_program prog;
    attn_status st = attn_program_get(ctx, sources, nsources, options, &prog);
    return st == ATTN_SUCCESS ? attn_kernel_create(ctx, prog, name, out) : st;
}

attn_status attn_kernel_get(attn_context *ctx, const char *file, attn_dtype dtype,
                            const char *name, cl_kernel *out)
{
    char opts[64];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DSTORAGE=%d", (int)dtype);
    const char *sources[] = {"common.cl", file};
    return attn_kernel_build(ctx, sources, 2, opts, name, out);
}

attn_status attn_kernel_set_args_at(attn_context *ctx, cl_kernel k, int first,
                                    const attn_karg *args, int n)
{
    for (int i = 0; i < n; i++) {
        cl_int err = clSetKernelArg(k, (cl_uint)(first + i), args[i].size, args[i].value);
        if (err != CL_SUCCESS) return fail_kernel(ctx, err, "clSetKernelArg", k, first + i);
    }
    return ATTN_SUCCESS;
}

attn_status attn_kernel_set_args(attn_context *ctx, cl_kernel k, const attn_karg *args, int n)
{
    return attn_kernel_set_args_at(ctx, k, 0, args, n);
}

attn_status attn_kernel_enqueue(attn_context *ctx, cl_kernel k, cl_uint dims, const size_t *global,
                                const size_t *local, cl_uint nwait, const cl_event *wait,
                                cl_event *event)
{
    cl_int err = clEnqueueNDRangeKernel(ctx->queue, k, dims, NULL, global, local, nwait,
                                        nwait ? wait : NULL, event);
    return err == CL_SUCCESS ? ATTN_SUCCESS
                             : fail_kernel(ctx, err, "clEnqueueNDRangeKernel", k, -1);
}

attn_status attn_kernel_run(attn_context *ctx, cl_kernel k, const attn_karg *args, int n,
                            cl_uint dims, const size_t *global, const size_t *local)
{
    attn_status st = attn_kernel_set_args(ctx, k, args, n);
    if (st != ATTN_SUCCESS) return st;
    for (cl_uint d = 0; d < dims; d++)
        if (global[d] == 0) return ATTN_SUCCESS; /* nothing to do */
    return attn_kernel_enqueue(ctx, k, dims, global, local, 0, NULL, NULL);
}

attn_status attn_queue_order(attn_context *ctx) { return attn_queue_order_after(ctx, NULL); }

attn_status attn_queue_order_after(attn_context *ctx, cl_event ev)
{
    if (!ctx->out_of_order) return ATTN_SUCCESS;
    cl_int err = clEnqueueBarrierWithWaitList(ctx->queue, 0, NULL, NULL);
    if (err == CL_SUCCESS || (ev && clWaitForEvents(1, &ev) == CL_SUCCESS)) return ATTN_SUCCESS;
    return attn_fail_cl(ctx, err, "clEnqueueBarrierWithWaitList");
}
