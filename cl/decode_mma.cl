/* decode_mma.cl -- the mma family's decode kernel: a work-group owns
 * BLOCK_ROWS query rows that share one KV head (the group's query heads x
 * the new queries, decode_common.cl's decode_tile: one staged K/V tile
 * serves them all, on the tensor cores) and one split of the cache,
 * through mma_core.cl's mma_attend. Worth it where many rows share a KV
 * head (large GQA groups, MQA, speculative blocks): a lone row fills 1/16
 * of an m-tile (decode_params.c chooses it from ATTN_MMA_DECODE_ROWS
 * rows). Every cache kind: contiguous or paged, stored as the dtype or int8
 * (mma_operands.cl: the int8 values staged, their scales applied in fp32). */

/* Local (MMA_WG, 1, 1); the arguments and the grid: tile.cl's
 * DECODE_TILE_PARAMS. */
__kernel __attribute__((reqd_work_group_size(MMA_WG, 1, 1)))
void attn_decode_mma(DECODE_TILE_PARAMS)
{
    __local mma_local tl;
    __local uint mma_scr[MMA_WARPS * MMA_SCRATCH_WORDS];
    VARIANTS(va);
    int b;
    kv_rows kv;
    const tile_rows m = decode_group_tile(lens, va.win, BLOCK_ROWS, q_heads, kv_heads, sq, causal,
                                          chunk, ntiles, KV_CACHE_ARGS, &b, &kv);
    mma_attend(&tl, mma_scr, m, b, q_heads, q, qg, qscale, kv, o, og, lse, write_lse, part_o,
               part_lse, nsplit, get_group_id(0), va, 0);
}
