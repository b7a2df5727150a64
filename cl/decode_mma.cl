/* decode_mma.cl -- the mma family's decode kernel: a work-group owns
 * BLOCK_ROWS query rows that share one KV head (the group's query heads x
 * the new queries, decode_common.cl's decode_tile: one staged K/V tile
 * serves them all, on the tensor cores) and one split of the cache,
 * through mma_core.cl's mma_attend. Worth it where many rows share a KV
 * head (large GQA groups, MQA, speculative blocks): a lone row fills 1/16
 * of an m-tile (decode_params.c chooses it from ATTN_MMA_DECODE_ROWS
 * rows). Every cache kind: contiguous or paged, stored as the dtype or int8
 * (mma_operands.cl: the int8 values staged, their scales applied in fp32). */

/* Global (nsplit * MMA_WG, kv_heads * ntiles, B), local (MMA_WG, 1, 1);
 * the arguments are attn_decode_tiled's. */
__kernel __attribute__((reqd_work_group_size(MMA_WG, 1, 1)))
void attn_decode_mma(__global const storage_t *q, ulong4 qg, KV_CACHE_PARAMS,
                     __global storage_t *o, ulong4 og, __global float *lse, int write_lse,
                     __global float *part_o, __global float *part_lse, int nsplit, int chunk,
                     __global const int2 *lens, int q_heads, int kv_heads, int sq, int causal,
                     float qscale, int ntiles, VARIANT_PARAMS)
{
    __local mma_local tl;
    __local uint mma_scr[MMA_WARPS * MMA_SCRATCH_WORDS];
    VARIANTS(va);
    const int split = get_group_id(0);
    const int tile = get_global_id(1) % ntiles, hk = get_global_id(1) / ntiles;
    const int b = get_global_id(2);
    const tile_rows m = decode_tile(lens[b], va.win, tile * BLOCK_ROWS, q_heads / kv_heads, hk, sq,
                                     causal, split, chunk);
    const kv_rows kv = decode_kv_rows(KV_CACHE_ARGS, kv_heads, b, hk);
    mma_attend(&tl, mma_scr, m, b, q_heads, q, qg, qscale, kv, o, og, lse, write_lse, part_o,
               part_lse, nsplit, split, va, 0);
}
