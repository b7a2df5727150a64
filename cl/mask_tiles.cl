/* mask_tiles.cl -- prefill's pre-pass over an additive mask (variants.cl):
 * one byte per tile of BLOCK_ROWS query rows x BLOCK_KEYS keys, the tile
 * the main kernel walks, saying whether the mask leaves the tile all -inf
 * (the main kernel skips it, so that a mask costs the visible pairs, as the
 * causal limit does), all zero (nothing to add) or neither. Joined after
 * the family's core, whose BLOCK_ROWS and BLOCK_KEYS it uses. */

/* Global (key blocks, row blocks, B * heads), heads = var_mt.x (1 when the
 * mask's head stride is 0). Rows are buffer rows, keys content indices of
 * batch entry b (key j is mask column kv_start + j); only rows inside the
 * entry's queries and keys inside kv_len are read. */
__kernel void attn_mask_tiles(__global const int4 *lens, VARIANT_PARAMS, __global uchar *tiles)
{
    VARIANTS(va);
    const int kb = get_global_id(0), qb = get_global_id(1);
    const int bh = get_global_id(2), b = bh / va.mt.x, h = bh % va.mt.x;
    const int4 len = lens[b];
    int all_masked = 1, all_zero = 1;
    for (int r = qb * BLOCK_ROWS; r < qb * BLOCK_ROWS + BLOCK_ROWS; r++) {
        if (r < len.x || r >= len.x + len.y) continue;
        const ulong mrow = mask_row(va, b, h, r);
        for (int j = kb * BLOCK_KEYS; j < min(kb * BLOCK_KEYS + BLOCK_KEYS, len.w); j++) {
            const float x = MASK_LOAD(va.mask, mrow + (ulong)(len.z + j) * va.mk);
            all_masked &= x == -INFINITY;
            all_zero &= x == 0.0f;
        }
    }
    tiles[mask_tile(va, b, h, qb, kb)] =
        all_masked ? MASK_TILE_MASKED : all_zero ? MASK_TILE_ZERO : MASK_TILE_MIXED;
}
