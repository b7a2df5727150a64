/* mask_tiles.cl -- prefill's pre-pass over an additive mask (variants.cl):
 * one byte per tile of BLOCK_ROWS query rows x BLOCK_KEYS keys, the tile
 * the main kernel walks, saying whether the mask hides the whole tile (-inf
 * or finfo.min: MASK_HIDES; the main kernel skips it, so that a mask costs
 * the visible pairs, as the causal limit does), all zero (nothing to add)
 * or neither. Joined after
 * the family's core, whose BLOCK_ROWS and BLOCK_KEYS it uses; only a
 * problem with a mask has it. */

#if MASK

/* A mask value that hides its key whatever the logit: x * log2(e) alone
 * passes -FLT_MAX, and a logit's |s| < FLT_MAX / 2 (attn.h) leaves the sum
 * below MAX_INIT. -inf, and finfo.min (-FLT_MAX, other libraries' masked
 * value), hide whole tiles alike. */
#define MASK_HIDES (-0.75f * FLT_MAX)

/* Global (the tiles of every batch entry: the summary past its table),
 * work-item t the summary's tile t past the table (variants.cl's
 * mask_tile). var_tiles is the table alone, which the work-items also copy
 * to the summary's start for the main kernel. Rows are buffer rows, keys
 * content indices of batch entry b (key j is mask column kv_start + j);
 * only rows inside the entry's queries and keys inside kv_len are read. */
__kernel void attn_mask_tiles(__global const int4 *lens, VARIANT_PARAMS, __global uchar *tiles)
{
    VARIANTS(va);
    __global const ulong *table = (__global const ulong *)va.tiles;
    for (ulong c = get_global_id(0); c < 4 * (ulong)va.mt.y; c += get_global_size(0))
        ((__global ulong *)tiles)[c] = table[c];
    const ulong t = (ulong)va.mt.y * 4 * sizeof(ulong) + get_global_id(0);
    const int b = entry_of(table, 4, va.mt.y, t);
    const ulong4 e = vload4(b, table);
    const ulong i = t - e.s0; /* [head][row block][key block] of the entry's */
    const int h = (int)(i / e.s3), qb = (int)e.s1 + (int)(i % e.s3 / e.s2), kb = (int)(i % e.s2);
    const int4 len = lens[b];
    int all_masked = 1, all_zero = 1;
    for (int r = qb * BLOCK_ROWS; r < qb * BLOCK_ROWS + BLOCK_ROWS; r++) {
        if (r < len.x || r >= len.x + len.y) continue;
        const ulong mrow = mask_row(va, b, h, r);
        for (int j = kb * BLOCK_KEYS; j < min(kb * BLOCK_KEYS + BLOCK_KEYS, len.w); j++) {
            const float x = MASK_LOAD(va.mask, mrow + (ulong)(len.z + j) * va.mk);
            all_masked &= x <= MASK_HIDES;
            all_zero &= x == 0.0f;
        }
    }
    tiles[mask_tile(va, b, h, qb, kb)] =
        all_masked ? MASK_TILE_MASKED : all_zero ? MASK_TILE_ZERO : MASK_TILE_MIXED;
}
#endif /* MASK */
