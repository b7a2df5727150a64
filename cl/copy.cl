/* copy.cl -- a plain global-memory copy: the device's copy bandwidth as
 * clpeak measures it, the yardstick for memory-bound kernels (decode).
 * Used only by attn_device_copy_gbps. */

#ifndef COPY_WIDTH
#define COPY_WIDTH 16 /* float vector width: 4 (GPU, coalesced) or 16 (CPU, AVX-512) */
#endif

#if COPY_WIDTH == 16
typedef float16 copy_t;
#elif COPY_WIDTH == 8
typedef float8 copy_t;
#elif COPY_WIDTH == 4
typedef float4 copy_t;
#else
#error "COPY_WIDTH must be 4, 8 or 16"
#endif

/* Work-item g copies vectors g * first_mul + t * step for t < per_item,
 * below n. A CPU gets contiguous ranges (first_mul = per_item, step = 1:
 * each core streams), a GPU a grid stride (first_mul = 1, step = global
 * size: neighbouring work-items touch neighbouring vectors). */
__kernel void attn_copy(__global const copy_t *src, __global copy_t *dst, ulong n,
                        ulong first_mul, ulong step, ulong per_item)
{
    const ulong first = (ulong)get_global_id(0) * first_mul;
    for (ulong t = 0; t < per_item; t++) {
        const ulong i = first + t * step;
        if (i >= n) break;
        dst[i] = src[i];
    }
}
