/* device_convert.c -- storage conversions on the device (cl/convert.cl) for
 * the CLBlast paths: CLBlast's half GEMMs need cl_khr_fp16, which PoCL and
 * NVIDIA's OpenCL lack, so f16/bf16 data go through f32 temporaries. */
#include "core/launch.h"
#include "blas/blas.h"

/* A 1-D launch over n elements: rounded up to a multiple of 64 so the
 * runtime can pick a sensible work-group size (the kernels bound-check). */
static attn_status flat(attn_context *ctx, attn_dtype t, const char *name, const attn_karg *args,
                        size_t n)
{
    if (n == 0) return ATTN_SUCCESS;
    cl_kernel k;
    attn_status st = attn_kernel_get(ctx, "convert.cl", t, name, &k);
    if (st != ATTN_SUCCESS) return st;
    const size_t global = (n + 63) / 64 * 64;
    st = attn_kernel_run(ctx, k, args, 4, 1, &global, NULL);
    clReleaseKernel(k);
    return st;
}

attn_status attn_device_to_f32(attn_context *ctx, attn_dtype t, cl_mem src, size_t off,
                               cl_mem dst, size_t n)
{
    const cl_ulong o = off, cn = n;
    const attn_karg args[] = {ATTN_KARG(src), ATTN_KARG(o), ATTN_KARG(dst), ATTN_KARG(cn)};
    return flat(ctx, t, "attn_to_f32", args, n);
}

attn_status attn_device_from_f32(attn_context *ctx, attn_dtype t, cl_mem src, cl_mem dst,
                                 size_t off, size_t n)
{
    const cl_ulong o = off, cn = n;
    const attn_karg args[] = {ATTN_KARG(src), ATTN_KARG(dst), ATTN_KARG(o), ATTN_KARG(cn)};
    return flat(ctx, t, "attn_from_f32", args, n);
}

attn_status attn_device_gather_f32(attn_context *ctx, attn_dtype t, const attn_tensor *src,
                                   int batch, int heads, int seq, int dim, cl_mem dst)
{
    cl_kernel k;
    attn_status st = attn_kernel_get(ctx, "convert.cl", t, "attn_gather_f32", &k);
    if (st != ATTN_SUCCESS) return st;
    const cl_ulong4 g = attn_tensor_geometry(src);
    const cl_int d = dim;
    const attn_karg args[] = {ATTN_KARG(src->buffer), ATTN_KARG(g), ATTN_KARG(dst), ATTN_KARG(d)};
    const size_t global[3] = {(size_t)seq, (size_t)heads, (size_t)batch};
    st = attn_kernel_run(ctx, k, args, 4, 3, global, NULL);
    clReleaseKernel(k);
    return st;
}
