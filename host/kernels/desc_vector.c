/* desc_vector.c -- the vector family (CPU-style: one work-item per
 * work-group streams float vectors, K/V pre-packed): the core
 * cl/vector_core.cl with the entries cl/vector.cl (prefill) and
 * cl/decode_vector.cl (decode). */
#include "kernels/kernel_desc.h"

#include <stdio.h>

/* rows 4..16 covers DESIGN's measurements (4 rows 104 GFLOP/s, 8 rows 177,
 * 16 rows ~153 on PoCL); the odd sizes (6, 10, 12) exist because the best
 * block is set by how many accumulators fit the registers, and 1 and 2 for
 * decode, where a block's other rows would be computed in vain. Defaults
 * measured on PoCL (DESIGN.md): 8 rows x 32 keys x float16. */
static const attn_tunable_desc tunables[] = {
    {"rows", "BLOCK_ROWS", offsetof(attn_params, block_rows), 1, 16, 0, 8,
     8, {1, 2, 4, 6, 8, 10, 12, 16}, "query rows per work-item"},
    {"keys", "BLOCK_KEYS", offsetof(attn_params, block_keys), 4, 128, 1, 32,
     4, {16, 32, 64, 128}, "keys per K/V tile, a multiple of vec"},
    {"vec", "VEC_WIDTH", offsetof(attn_params, vec_width), 4, 16, 1, 16,
     3, {4, 8, 16}, "float vector width (4, 8 or 16)"},
};

static const attn_constraint constraints[] = {
    {offsetof(attn_params, block_keys), offsetof(attn_params, vec_width)},
};

/* The head dim the kernels work in: a multiple of the vector width. */
static void derived(const attn_params *pr, const attn_problem *p, char *buf, size_t n)
{
    snprintf(buf, n, " -DHEAD_DIM_PAD=%d", attn_params_padded_dim(pr, p->head_dim));
}

const attn_family_desc attn_desc_vector = {
    ATTN_FAMILY_VECTOR, "vector", tunables, (int)(sizeof tunables / sizeof tunables[0]),
    constraints, (int)(sizeof constraints / sizeof constraints[0]),
    (size_t)-1, NULL, derived,
    {{"attn_fwd_vector", {"common.cl", "vector_helpers.cl", "vector_core.cl", "vector.cl"}, 4,
      {{offsetof(attn_params, block_rows), 1}}, 1},
     {"attn_decode_vector",
      {"common.cl", "decode_common.cl", "vector_helpers.cl", "vector_core.cl",
       "decode_vector.cl"},
      5,
      {{offsetof(attn_params, block_rows), 1}}, 1}},
};
