/* kv_append.cl -- copies a block of new keys and values into the KV cache:
 * row pos[b].z + r of sequence b's block becomes cache row pos[b].x + r.
 * Raw elements, no conversion (block and cache share the storage type); the
 * row padding of the cache is never written, so it stays zero. */

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

/* Global (largest count, kv_heads, batch). kg, vg: the block's geometry
 * (offset, stride_batch, stride_head, stride_seq) in elements; stride_batch
 * may be 0 (sequences packed along one axis). pos[b]: (first cache row,
 * rows to copy, first block row, unused). Token t of sequence b is row
 * t % page_rows of page pages[b * max_pages + t / page_rows] (contiguous,
 * page b), and row r of page p, head hk, is cache row p * page_stride +
 * hk * head_stride + r (host: decode.h's struct attn_kv_cache). */
__kernel void attn_kv_append(__global const elem_t *k, ulong4 kg, __global const elem_t *v,
                             ulong4 vg, __global elem_t *kc, __global elem_t *vc,
                             __global const int4 *pos, __global const int *pages, int max_pages,
                             int head_dim, int dim_pad, int page_rows, ulong page_stride,
                             ulong head_stride)
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
    for (int d = 0; d < head_dim; d++) {
        kc[dst + d] = k[ks + d];
        vc[dst + d] = v[vs + d];
    }
}
