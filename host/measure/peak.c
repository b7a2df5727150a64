/* peak.c -- attn_device_peak_gflops: the device's fp32 FMA throughput,
 * measured with cl/peak.cl the way clpeak does it (warm-up, a calibration
 * run, then timed runs), so tools can report a fraction of peak. */
#define _POSIX_C_SOURCE 200809L
#include "core/context.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/launch.h"
#include "measure/kernel_time.h"

#include <stdio.h>

/* One shape of the peak kernel: vector width and independent chains. */
typedef struct peak_config {
    int width;  /* PEAK_WIDTH */
    int chains; /* PEAK_CHAINS */
} peak_config;

#define PEAK_UNROLL 16
#define PEAK_REPS 5
#define PEAK_TARGET_MS 25.0 /* one timed run; short enough for GPU watchdogs */
#define PEAK_MAX_TRIPS (1 << 24)

/* A CPU runs one work-item per work-group with explicit wide vectors: PoCL
 * compiles float16 fma straight to AVX-512 (8 chains cover the 4-cycle
 * latency on 2 FMA pipes: 520 GFLOP/s on 2 Zen 5 cores, 8 chains of float8
 * reach only half of that there) while float8 avoids spilling the 16 ymm
 * registers of an AVX2-only CPU. A GPU hides latency with other warps, so
 * narrow vectors and fewer chains; the best of the candidates is reported,
 * like clpeak's best vector width. */
static const peak_config cpu_configs[] = {{16, 8}, {8, 8}};
static const peak_config gpu_configs[] = {{1, 8}, {2, 4}, {4, 2}};

/* Runs the kernel once with `trips` loop trips; its time in ms in *ms. */
static attn_status run_once(attn_context *ctx, cl_kernel kernel, int trips, size_t global,
                            size_t local, double *ms)
{
    cl_int err = clSetKernelArg(kernel, 1, sizeof trips, &trips);
    if (err != CL_SUCCESS) return attn_fail_cl(ctx, err, "clSetKernelArg(attn_peak, 1)");
    return attn_kernel_time(ctx, kernel, global, local, ms);
}

/* Measures one configuration; *gflops receives the best of PEAK_REPS runs. */
static attn_status measure(attn_context *ctx, const peak_config *cfg, cl_mem out, double *gflops)
{
    const char *sources[] = {"peak.cl"};
    char options[128];
    snprintf(options, sizeof options, "-DPEAK_WIDTH=%d -DPEAK_CHAINS=%d -DPEAK_UNROLL=%d",
             cfg->width, cfg->chains, PEAK_UNROLL);
    cl_kernel kernel;
    attn_status st = attn_kernel_build(ctx, sources, 1, options, "attn_peak", &kernel);
    if (st != ATTN_SUCCESS) return st;

    const int cpu = (ctx->device_type & CL_DEVICE_TYPE_CPU) != 0;
    size_t local = 1;
    if (!cpu) {
        size_t kernel_wg = ctx->max_wg;
        if (clGetKernelWorkGroupInfo(kernel, ctx->device, CL_KERNEL_WORK_GROUP_SIZE,
                                     sizeof kernel_wg, &kernel_wg, NULL) != CL_SUCCESS)
            kernel_wg = ctx->max_wg;
        size_t cap = kernel_wg < ctx->max_wg ? kernel_wg : ctx->max_wg;
        local = 256;
        while (local > cap && local > 1) local /= 2;
    }
    /* Enough work-groups to fill every compute unit several times over. */
    size_t cus = ctx->compute_units ? ctx->compute_units : 1;
    size_t global = cpu ? cus * 16 : cus * 2048;
    global = (global + local - 1) / local * local;

    const float m = 0.999f, c = 0.001f;
    const int trips0 = 8; /* argument 1, the trip count, is set per run */
    const attn_karg args[] = {ATTN_KARG(out), ATTN_KARG(trips0), ATTN_KARG(m), ATTN_KARG(c)};
    if ((st = attn_kernel_set_args(ctx, kernel, args, ATTN_NARGS(args))) != ATTN_SUCCESS)
        goto done;

    /* Warm-up, then grow the trip count until a run is long enough to time,
     * then scale it to the target. */
    double ms = 0;
    int trips = trips0;
    st = run_once(ctx, kernel, trips, global, local, &ms);
    while (st == ATTN_SUCCESS && ms < PEAK_TARGET_MS / 8 && trips < PEAK_MAX_TRIPS) {
        trips = trips * 8 > PEAK_MAX_TRIPS ? PEAK_MAX_TRIPS : trips * 8;
        st = run_once(ctx, kernel, trips, global, local, &ms);
    }
    if (st != ATTN_SUCCESS) goto done;
    if (ms > 0) {
        double scaled = trips * (PEAK_TARGET_MS / ms);
        trips = scaled > PEAK_MAX_TRIPS ? PEAK_MAX_TRIPS : scaled < 1 ? 1 : (int)scaled;
    }

    const double flops =
        2.0 * (double)global * trips * PEAK_UNROLL * cfg->chains * cfg->width;
    double best = 0;
    for (int r = 0; r < PEAK_REPS; r++) {
        st = run_once(ctx, kernel, trips, global, local, &ms);
        if (st != ATTN_SUCCESS) goto done;
        double g = ms > 0 ? flops / (ms * 1e6) : 0;
        if (g > best) best = g;
    }
    attn_log(ATTN_LOG_INFO, "peak: float%d x %d chains, global %zu, local %zu, %d trips: "
             "%.1f GFLOP/s", cfg->width, cfg->chains, global, local, trips, best);
    *gflops = best;
done:
    clReleaseKernel(kernel);
    return st;
}

attn_status attn_device_peak_gflops(attn_context *ctx, double *gflops)
{
    if (!ctx) return attn_fail_null(__func__, "ctx");
    attn_call_begin(ctx, __func__);
    attn_status st = ATTN_SUCCESS;
    cl_mem out = NULL;
    if (!gflops) {
        st = ATTN_FAIL(ctx, ATTN_ERROR_INVALID_ARGUMENT,
                       "gflops must not be NULL");
        goto done;
    }
    *gflops = 0;

    const int cpu = (ctx->device_type & CL_DEVICE_TYPE_CPU) != 0;
    const peak_config *configs = cpu ? cpu_configs : gpu_configs;
    size_t nconfigs = cpu ? sizeof cpu_configs / sizeof cpu_configs[0]
                          : sizeof gpu_configs / sizeof gpu_configs[0];
    size_t cus = ctx->compute_units ? ctx->compute_units : 1;
    cl_int err;
    /* Room for the largest global size measure() uses, rounded up to 256. */
    out = clCreateBuffer(ctx->cl_ctx, CL_MEM_WRITE_ONLY, (cus * 2048 + 256) * sizeof(float),
                         NULL, &err);
    if (err != CL_SUCCESS) {
        st = attn_fail_cl(ctx, err, "clCreateBuffer");
        goto done;
    }
    double best = 0;
    for (size_t i = 0; i < nconfigs; i++) {
        double g = 0;
        st = measure(ctx, &configs[i], out, &g);
        if (st != ATTN_SUCCESS) goto done;
        if (g > best) best = g;
    }
    *gflops = best;
done:
    if (out) clReleaseMemObject(out);
    attn_call_end(ctx);
    return st;
}
