/* tiled.cl -- the GPU-style prefill kernel: a work-group owns BLOCK_ROWS
 * query rows of one (batch, head) and all their keys (tiled_core.cl). */

/* Global (nblk * WG_SIZE, Hq, B), local (WG_SIZE, 1, 1): nblk row blocks of
 * the whole axis, or with PACKED as many as the longest entry's rows touch
 * (forward.c). */
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void attn_fwd_tiled(__global const storage_t *q, ulong4 qg, __global const storage_t *k, ulong4 kg,
                    __global const storage_t *v, ulong4 vg, __global storage_t *o, ulong4 og,
                    __global float *lse, int write_lse, __global const int4 *lens, int q_heads,
                    int kv_heads, int sq, int causal, float qscale, int nblk, VARIANT_PARAMS)
{
    __local tiled_local tl;
    VARIANTS(va);
#if PACKED
    /* heaviest (last) rows first, nblk of them from the row block holding
     * the entry's q_start */
    const int blk = lens[get_global_id(2)].x / BLOCK_ROWS + nblk - 1 - (int)get_group_id(0);
#else
    const int blk = nblk - 1 - (int)get_group_id(0); /* heaviest (last) rows first */
#endif
    const int h = get_global_id(1), b = get_global_id(2);
    const int hk = h / (q_heads / kv_heads);
    const int4 len = lens[b];
    /* one head's rows, all keys; key j is buffer row kv_start + j */
    const tile_rows m = {len, blk * BLOCK_ROWS, 1, h, sq, causal, 0, INT_MAX};
    const kv_rows kv = {k + row_index(kg, b, hk, len.z), v + row_index(vg, b, hk, len.z), kg.s3, vg.s3};
    tiled_attend(&tl, m, b, q_heads, q, qg, qscale, kv, o, og, lse, write_lse, NULL, NULL, 1, 0,
                 va, 1);
}
