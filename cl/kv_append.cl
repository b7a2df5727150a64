/* kv_append.cl -- copies a block of new keys and values into the KV cache:
 * row pos[b].z + r of sequence b's block becomes cache row pos[b].x + r.
 * Raw elements, no conversion (block and cache share the storage type); the
 * row padding of the cache is never written, so it stays zero. With
 * KV_INT8 (an int8 cache) each row is quantized instead: one scale per row
 * and int8 elements (quantize_row). */

#ifndef ELEM_BYTES
#define ELEM_BYTES 4 /* bytes per element: 4 (f32) or 2 (f16, bf16) */
#endif

#if ELEM_BYTES == 4
typedef uint elem_t;
#elif ELEM_BYTES == 2
typedef ushort elem_t; /* f16 as raw bits: no cl_khr_fp16 needed */
#else
#error "ELEM_BYTES must be 4 or 2"
#endif

#ifdef KV_INT8
#ifndef STORAGE
#define STORAGE 0 /* the block's type: 0 f32, 1 f16, 2 bf16 (attn_dtype, as common.cl's) */
#endif
typedef char cache_t;

/* element i of the block as a float, from its raw bits */
inline float in_float(__global const elem_t *p, ulong i)
{
#if STORAGE == 0
    return as_float(p[i]);
#elif STORAGE == 1
    return vload_half(i, (__global const half *)p); /* legal without cl_khr_fp16 */
#else
    return as_float((uint)p[i] << 16);
#endif
}

/* Row x (n elements) of the block as int8 q and its scale, exactly as the
 * host's attn_kv_quantize_row (host/attention/kv_quant.c): scale = max|x| /
 * 127 (one float lower where 127 * scale would be inf; 0 for an all-zero
 * row, NaN for a row holding inf or NaN), q = x /
 * scale rounded to nearest even, saturated to [-127, 127] (0 when the
 * scale is 0 or NaN). The host builds this with correctly rounded division
 * where the device has it, so that both sides divide alike. */
inline void quantize_row(__global const elem_t *x, int n, __global char *q, __global float *scale)
{
    float amax = 0.0f;
    int finite = 1;
    for (int d = 0; d < n; d++) {
        const float e = in_float(x, d);
        if (!isfinite(e)) finite = 0;
        else amax = max(amax, fabs(e));
    }
    float s = finite ? amax / 127.0f : NAN;
    if (isinf(s * 127.0f)) s = nextafter(s, 0.0f); /* FLT_MAX / 127 rounds up */
    for (int d = 0; d < n; d++)
        q[d] = s > 0.0f ? convert_char_sat_rte(clamp(in_float(x, d) / s, -127.0f, 127.0f)) : 0;
    *scale = s;
}
#else
typedef elem_t cache_t;
#endif

/* Global (largest count, kv_heads, batch). kg, vg: the block's geometry
 * (offset, stride_batch, stride_head, stride_seq) in elements; stride_batch
 * may be 0 (sequences packed along one axis). pos[b]: (first cache row,
 * rows to copy, first block row, unused). Token t of sequence b is row
 * t % page_rows of page pages[b * max_pages + t / page_rows] (contiguous,
 * page b), and row r of page p, head hk, is cache row p * page_stride +
 * hk * head_stride + r (host: decode.h's struct attn_kv_cache). ksc, vsc:
 * with KV_INT8 the rows' scales, one float per cache row; otherwise
 * unused. */
__kernel void attn_kv_append(__global const elem_t *k, ulong4 kg, __global const elem_t *v,
                             ulong4 vg, __global cache_t *kc, __global cache_t *vc,
                             __global const int4 *pos, __global const int *pages, int max_pages,
                             int head_dim, int dim_pad, int page_rows, ulong page_stride,
                             ulong head_stride, __global float *ksc, __global float *vsc)
{
    const int r = get_global_id(0), hk = get_global_id(1), b = get_global_id(2);
    const int4 pc = pos[b];
    if (r >= pc.y) return;
    const ulong row = (ulong)(pc.z + r);
    const ulong ks = kg.s0 + (ulong)b * kg.s1 + (ulong)hk * kg.s2 + row * kg.s3;
    const ulong vs = vg.s0 + (ulong)b * vg.s1 + (ulong)hk * vg.s2 + row * vg.s3;
    const int t = pc.x + r, page = pages[b * max_pages + t / page_rows];
    const ulong dst = ((ulong)page * page_stride + (ulong)hk * head_stride +
                       (ulong)(t % page_rows)) * (ulong)dim_pad;
#ifdef KV_INT8
    quantize_row(k + ks, head_dim, kc + dst, ksc + dst / dim_pad);
    quantize_row(v + vs, head_dim, vc + dst, vsc + dst / dim_pad);
#else
    for (int d = 0; d < head_dim; d++) {
        kc[dst + d] = k[ks + d];
        vc[dst + d] = v[vs + d];
    }
#endif
}
