/* desc_flash.c -- the flash family: GPU prefill built like an SGEMM on
 * FlashAttention-2's partitioning (cl/flash.cl: register micro-tiles of
 * S = Q.K^T and of O, row maxima combined through __local). It exists as
 * the candidate successor of the tiled family on GPUs (issue 11: tiled
 * reached 6-10% of the H200's fp32 FMA peak, bound by __local traffic and
 * serial softmax rows), but it has not been measured on a GPU yet: it is
 * nobody's default, runs only when forced (ATTN_PARAMS,
 * attn_context_set_params "family=flash,...") or named by a tuning
 * database entry, and has no decode kernel (decode keeps its own plan). */
#include "kernels/kernel_desc.h"

#include <stddef.h>

/* Starting points from SGEMM practice on NVIDIA and AMD: 128-256
 * work-items, micro-tiles of 4-8 x 2-8; the tile sizes that fit 48 KiB of
 * __local depend on the head dim (README: rows=64,keys=32 at D=64,
 * rows=32,keys=16 at D=128). Unmeasured: the tuner searches them. */
static const attn_tunable_desc tunables[] = {
    {"rows", "BLOCK_ROWS", offsetof(attn_params, block_rows), 1, 128, 0, 64,
     4, {16, 32, 64, 128}, "query rows per work-group, a multiple of tm"},
    {"keys", "BLOCK_KEYS", offsetof(attn_params, block_keys), 4, 128, 1, 32,
     4, {8, 16, 32, 64}, "keys per K/V tile, a multiple of tn"},
    {"tm", "TILE_M", offsetof(attn_params, tile_m), 1, 8, 0, 4,
     3, {2, 4, 8}, "query rows of a work-item's micro-tile"},
    {"tn", "TILE_N", offsetof(attn_params, tile_n), 1, 8, 0, 2,
     3, {1, 2, 4}, "keys of a work-item's micro-tile"},
    /* off by default until a GPU measures it: on CPUs the reads are from
     * cache and the registers cost more than they hide */
    {"prefetch", "PREFETCH", offsetof(attn_params, prefetch), 0, 1, 0, 0,
     2, {0, 1}, "1 = the next K/V tile is read into registers while this one is computed"},
};

static const attn_constraint constraints[] = {
    {offsetof(attn_params, block_rows), offsetof(attn_params, tile_m)},
    {offsetof(attn_params, block_keys), offsetof(attn_params, tile_n)},
};

/* RG x CG: one work-item per micro-tile of the rows x keys tile */
static size_t work_group(const attn_params *pr)
{
    if (pr->tile_m < 1 || pr->tile_n < 1) return 0;
    return (size_t)(pr->block_rows / pr->tile_m) * (size_t)(pr->block_keys / pr->tile_n);
}

/* Float4 columns of a row (D4 in cl/flash.cl) and of O per work-item (DT4). */
static size_t d4_of(int head_dim) { return (size_t)(head_dim + 3) / 4; }
static size_t dt4_of(const attn_params *pr, int head_dim)
{
    const size_t cg = pr->tile_n > 0 ? (size_t)(pr->block_keys / pr->tile_n) : 1;
    return cg ? (d4_of(head_dim) + cg - 1) / cg : d4_of(head_dim);
}

/* Bytes of the __local struct flash_local in cl/flash.cl. */
static size_t local_bytes(const attn_params *pr, const attn_problem *p)
{
    const int head_dim = p->head_dim;
    const size_t ds4 = d4_of(head_dim) + 1; /* DS4: row stride in float4 */
    const size_t rows = (size_t)pr->block_rows, keys = (size_t)pr->block_keys;
    size_t bytes = 16 * rows * ds4;                              /* q */
    bytes += 2 * 16 * keys * ds4;                                /* k, v */
    bytes += 4 * rows * keys;                                    /* p */
    if (pr->tile_n > 0) bytes += 4 * rows * (keys / (size_t)pr->tile_n); /* red [rows][CG] */
    return (bytes + 15) / 16 * 16; /* the struct's size: a multiple of its float4s' alignment */
}

/* float4 of a K (or V) tile each work-item reads (KV_PER_WI) */
static size_t kv_per_wi(const attn_params *pr, int head_dim)
{
    const size_t wg = work_group(pr);
    return wg ? ((size_t)pr->block_keys * d4_of(head_dim) + wg - 1) / wg : 0;
}

/* Bytes of attn_fwd_flash's per-work-item arrays (cl/flash.cl). */
static size_t private_bytes(const attn_params *pr, const attn_problem *p, int entry)
{
    (void)entry;
    const size_t tm = (size_t)pr->tile_m, tn = (size_t)pr->tile_n;
    const size_t dt4 = dt4_of(pr, p->head_dim);
    size_t floats = 3 * tm * dt4 * 4; /* acc, tot, cmp [TILE_M][DT4] float4 */
    floats += tm * tn;                /* s [TILE_M][TILE_N] */
    floats += 4 * (tm + tn);          /* a [TILE_M], kk [TILE_N] float4 */
    floats += 4 * dt4;                /* flash_pv's vv [DT4] float4 */
    floats += 10 * tm;                /* ri, rh, rlo, rhi, rtop, mrow, l, lc, alpha, lsum */
    /* kr, vr [KV_PER_WI] float4: held across the tile's arithmetic only
     * when prefetched (otherwise stored to __local at once) */
    if (pr->prefetch) floats += 2 * 4 * kv_per_wi(pr, p->head_dim);
    return floats * 4;
}

/* Shrinking: first the rows down to 16, then the key tile, then the rows
 * again; each halving keeps the micro-tile and halves the work-group and
 * __local tiles. Rows first: fewer keys would leave fewer column groups
 * and more of O on each work-item (D 128 at keys=8 is 1.5 KiB of O). Then
 * prefetch off: fewer rows or keys leave a work-item more of the tile to
 * hold, so only that brings a prefetching plan within the register budget.
 * Last the micro-tile, keys then rows: at D 256 the tiles that fit 48 KiB
 * (rows 16, keys 8) leave 4 column groups, and tm=4,tn=2 would hold 3 KiB
 * of O a work-item (ptxas, sm_90: 255 registers, 11 KB spilled); tn=1 then
 * tm=1 bring it to 588 bytes on 128 work-items. */
const attn_family_desc attn_desc_flash = {
    ATTN_FAMILY_FLASH, "flash", tunables, (int)(sizeof tunables / sizeof tunables[0]),
    constraints, (int)(sizeof constraints / sizeof constraints[0]),
    (size_t)-1, local_bytes, private_bytes, NULL,
    {{"attn_fwd_flash", {"common.cl", "variants.cl", "tile.cl", "flash.cl", "mask_tiles.cl"}, 5,
      {{offsetof(attn_params, block_rows), 16}, {offsetof(attn_params, block_keys), 8},
       {offsetof(attn_params, block_rows), 8}, {offsetof(attn_params, prefetch), 0},
       {offsetof(attn_params, tile_n), 1}, {offsetof(attn_params, tile_m), 1}}, 6},
     {NULL, {NULL}, 0, {{0, 0}}, 0}},
    work_group, NULL, NULL, 0,
};
