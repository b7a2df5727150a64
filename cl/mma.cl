/* mma.cl -- the mma family's prefill kernel: a work-group's rows of one
 * (batch, head) and all their keys, through mma_core.cl's mma_attend. */

/* Global (nblk * MMA_WG, Hq, B), local (MMA_WG, 1, 1); the arguments are
 * attn_fwd_tiled's (tile.cl). */
__kernel __attribute__((reqd_work_group_size(MMA_WG, 1, 1)))
void attn_fwd_mma(FWD_TILE_PARAMS)
{
    __local mma_local tl;
    __local uint mma_scr[MMA_WARPS * MMA_SCRATCH_WORDS];
    VARIANTS(va);
    kv_rows kv;
    const tile_rows m =
        fwd_tile(lens, BLOCK_ROWS, nblk, q_heads, kv_heads, sq, causal, k, kg, v, vg, &kv);
    mma_attend(&tl, mma_scr, m, get_global_id(2), q_heads, q, qg, qscale, kv, o, og, lse,
               write_lse, 0, 0, 1, 0, va, 1);
}
