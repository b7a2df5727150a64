/* decode_tiled.cl -- the GPU-style decode kernel: a work-group owns
 * BLOCK_ROWS query rows that share one KV head (the group's query heads x
 * the new queries, so one K/V tile load serves them all) and one split of
 * the cache (tiled_core.cl). Unsplit it writes O and LSE; split, a partial
 * (normalised O, log2 LSE) for attn_decode_combine. */

/* Global (nsplit * WG_SIZE, kv_heads * ntiles, B), local (WG_SIZE, 1, 1).
 * The cache: KV_CACHE_PARAMS (KV_INT8: int8 rows and one scale per row),
 * a tile's rows found by cache_row (through tile.cl's kv_tile); split s
 * covers chunk keys from decode_key_base + s * chunk, chunk a multiple of
 * BLOCK_KEYS. */
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void attn_decode_tiled(__global const storage_t *q, ulong4 qg, KV_CACHE_PARAMS, __global storage_t *o,
                       ulong4 og, __global float *lse, int write_lse, __global float *part_o,
                       __global float *part_lse, int nsplit, int chunk,
                       __global const int2 *lens, int q_heads, int kv_heads, int sq, int causal,
                       float qscale, int ntiles, VARIANT_PARAMS)
{
    __local tiled_local tl;
    VARIANTS(va);
    const int split = get_group_id(0);
    const int tile = get_global_id(1) % ntiles, hk = get_global_id(1) / ntiles;
    const int b = get_global_id(2);
    const tile_rows m = decode_tile(lens[b], va.win, tile * BLOCK_ROWS, q_heads / kv_heads, hk, sq,
                                     causal, split, chunk);
    const kv_rows kv = decode_kv_rows(KV_CACHE_ARGS, kv_heads, b, hk);
    tiled_attend(&tl, m, b, q_heads, q, qg, qscale, kv, o, og, lse, write_lse, part_o, part_lse,
                 nsplit, split, va, 0);
}
