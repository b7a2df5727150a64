/* convert.cl -- storage conversions on the device for the CLBlast paths.
 * CLBlast's half-precision GEMMs need cl_khr_fp16, which PoCL and NVIDIA's
 * OpenCL lack, so f16 and bf16 data are widened to f32 temporaries, multiplied
 * by the f32 GEMMs, and narrowed back (round to nearest even). Prepended by
 * common.cl (STORAGE, storage_t, LOAD, STORE, row_index). */

/* dst[i] = src[src_off + i] as float, i < n. Global: n rounded up. */
__kernel void attn_to_f32(__global const storage_t *src, ulong src_off, __global float *dst,
                          ulong n)
{
    const ulong i = get_global_id(0);
    if (i < n) dst[i] = LOAD(src, src_off + i);
}

/* dst[dst_off + i] = src[i] in the storage type, i < n. Global: n rounded up. */
__kernel void attn_from_f32(__global const float *src, __global storage_t *dst, ulong dst_off,
                            ulong n)
{
    const ulong i = get_global_id(0);
    if (i < n) STORE(dst, dst_off + i, src[i]);
}

/* A strided [B, H, S, dim] tensor (geometry g) into contiguous f32
 * [B, H, S, dim]. Global (S, H, B), one row per work-item. */
__kernel void attn_gather_f32(__global const storage_t *src, ulong4 g, __global float *dst,
                              int dim)
{
    const int s = get_global_id(0), h = get_global_id(1), b = get_global_id(2);
    const ulong from = row_index(g, b, h, s);
    const ulong to = (((ulong)b * get_global_size(1) + h) * get_global_size(0) + s) * dim;
    for (int d = 0; d < dim; d++) dst[to + d] = LOAD(src, from + d);
}
