/* decode_tiled.cl -- the GPU-style decode kernel: a work-group owns
 * BLOCK_ROWS query rows that share one KV head (the group's query heads x
 * the new queries, so one K/V tile load serves them all) and one split of
 * the cache (tiled_core.cl). Unsplit it writes O and LSE; split, a partial
 * (normalised O, log2 LSE) for attn_decode_combine. */

/* Local (WG_SIZE, 1, 1); the arguments and the grid: tile.cl's
 * DECODE_TILE_PARAMS. */
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void attn_decode_tiled(DECODE_TILE_PARAMS)
{
    __local tiled_local tl;
    VARIANTS(va);
    int b;
    kv_rows kv;
    const tile_rows m = decode_group_tile(lens, va.win, BLOCK_ROWS, q_heads, kv_heads, sq, causal,
                                          chunk, ntiles, KV_CACHE_ARGS, &b, &kv);
    tiled_attend(&tl, m, b, q_heads, q, qg, qscale, kv, o, og, lse, write_lse, part_o, part_lse,
                 nsplit, get_group_id(0), va, 0);
}
