/* desc_tiled.c -- the tiled family (GPU-style: a work-group of many
 * work-items, Q and scores in __local): the core cl/tiled_core.cl with the
 * entries cl/tiled.cl (prefill) and cl/decode_tiled.cl (decode). */
#include "kernels/kernel_desc.h"

#include <stddef.h>

/* llama.cpp's Vulkan starting points (work-group 128, 4-16 rows, 32 keys)
 * with room around them; local_kv matters per vendor. */
static const attn_tunable_desc tunables[] = {
    /* a power of two: it must divide wg, which is one */
    {"rows", "BLOCK_ROWS", offsetof(attn_params, block_rows), 1, 64, 1, 16,
     6, {1, 2, 4, 8, 16, 32}, "query rows per work-group"},
    {"keys", "BLOCK_KEYS", offsetof(attn_params, block_keys), 4, 128, 1, 32,
     3, {16, 32, 64}, "keys per K/V tile"},
    {"wg", "WG_SIZE", offsetof(attn_params, wg_size), 1, 1024, 1, 128,
     4, {32, 64, 128, 256}, "work-items per work-group, a multiple of rows"},
    {"local_kv", "LOCAL_KV", offsetof(attn_params, local_kv), 0, 1, 0, 1,
     2, {0, 1}, "1 stages K/V tiles in __local, 0 reads them from global memory"},
};

static const attn_constraint constraints[] = {
    {offsetof(attn_params, wg_size), offsetof(attn_params, block_rows)},
};

/* Bytes of the __local struct tiled_local in cl/tiled_core.cl, which both
 * entry kernels (tiled.cl, decode_tiled.cl) declare. */
static size_t local_bytes(const attn_params *pr, const attn_problem *p)
{
    const int head_dim = p->head_dim;
    size_t d4 = (size_t)((head_dim + 3) / 4) * 4 + 4; /* padded row stride, floats */
    size_t bytes = (size_t)pr->block_rows * d4 * 4;               /* Q */
    bytes += (size_t)pr->block_rows * pr->block_keys * 4;          /* scores */
    bytes += (size_t)pr->block_rows * 4 * 4;                       /* m, l, lc, a */
    if (pr->local_kv) bytes += 2 * (size_t)pr->block_keys * d4 * 4; /* K, V tiles */
    return (bytes + 15) / 16 * 16; /* the struct is 16-byte aligned (float4 stores) */
}

/* Bytes of the per-work-item arrays of tiled_attend (cl/tiled_core.cl), the
 * same for both entries: each work-item owns DPT output columns of its row. */
static size_t private_bytes(const attn_params *pr, const attn_problem *p, int entry)
{
    (void)entry;
    const int tpr = pr->block_rows > 0 && pr->wg_size >= pr->block_rows
                        ? pr->wg_size / pr->block_rows /* TPR: work-items per row */
                        : 1;
    const size_t dpt = (size_t)(p->head_dim + tpr - 1) / tpr; /* DPT: columns per work-item */
    return 3 * dpt * 4;                                       /* acc, tot, cmp [DPT] floats */
}

/* Shrinking: first the key tile, then direct K/V reads, then rows. */
const attn_family_desc attn_desc_tiled = {
    ATTN_FAMILY_TILED, "tiled", tunables, (int)(sizeof tunables / sizeof tunables[0]),
    constraints, (int)(sizeof constraints / sizeof constraints[0]),
    offsetof(attn_params, wg_size), local_bytes, private_bytes, NULL,
    {{"attn_fwd_tiled", {"common.cl", "variants.cl", "tile.cl", "tiled_core.cl", "tiled.cl", "mask_tiles.cl"}, 6,
      {{offsetof(attn_params, block_keys), 16}, {offsetof(attn_params, local_kv), 0},
       {offsetof(attn_params, block_rows), 1}}, 3},
     {"attn_decode_tiled",
      {"common.cl", "variants.cl", "kv_cache_rows.cl", "decode_common.cl", "tile.cl", "tiled_core.cl",
       "decode_tiled.cl"},
      7,
      {{offsetof(attn_params, block_keys), 8}, {offsetof(attn_params, local_kv), 0},
       {offsetof(attn_params, block_rows), 1}}, 3}},
    NULL, NULL, NULL, 0,
};
