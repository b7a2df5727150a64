/* kernel_time.c -- a timed kernel launch for the device measurements
 * (kernel_time.h): profiling-event time when the queue has it, else wall. */
#define _POSIX_C_SOURCE 200809L
#include "core/context.h"
#include "core/errors.h"
#include "core/launch.h"
#include "measure/kernel_time.h"

#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

attn_status attn_kernel_time(attn_context *ctx, cl_kernel k, size_t global, size_t local,
                             double *ms)
{
    cl_event ev = NULL;
    const double t0 = now_ms();
    attn_status st = attn_kernel_enqueue(ctx, k, 1, &global, local ? &local : NULL, 0, NULL, &ev);
    if (st != ATTN_SUCCESS) return st;
    const char *call = "clWaitForEvents";
    cl_int err = clWaitForEvents(1, &ev);
    if (err == CL_SUCCESS) {
        call = "clFinish";
        err = clFinish(ctx->queue);
    }
    *ms = now_ms() - t0;
    if (err != CL_SUCCESS) {
        clReleaseEvent(ev);
        return attn_fail_cl(ctx, err, call);
    }
    if (ctx->profiling) {
        cl_ulong start = 0, end = 0;
        cl_int e1 = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start,
                                            NULL);
        cl_int e2 = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
        /* CL_PROFILING_INFO_NOT_AVAILABLE or a broken clock: keep wall time */
        if (e1 == CL_SUCCESS && e2 == CL_SUCCESS && end > start) *ms = (double)(end - start) / 1e6;
    }
    clReleaseEvent(ev);
    return ATTN_SUCCESS;
}
