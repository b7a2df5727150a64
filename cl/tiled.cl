/* tiled.cl -- the GPU-style prefill kernel: a work-group owns BLOCK_ROWS
 * query rows of one (batch, head) and all their keys (tiled_core.cl). */

/* Global (nblk * WG_SIZE, Hq, B), local (WG_SIZE, 1, 1): nblk row blocks of
 * the whole axis, or with PACKED as many as the longest entry's rows touch
 * (forward.c; tile.cl's fwd_tile). */
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void attn_fwd_tiled(FWD_TILE_PARAMS)
{
    __local tiled_local tl;
    VARIANTS(va);
    kv_rows kv;
    const tile_rows m =
        fwd_tile(lens, BLOCK_ROWS, nblk, q_heads, kv_heads, sq, causal, k, kg, v, vg, &kv);
    tiled_attend(&tl, m, get_global_id(2), q_heads, q, qg, qscale, kv, o, og, lse, write_lse, NULL,
                 NULL, 1, 0, va, 1);
}
