/* desc_vector.c -- the vector family (CPU-style: one work-item per
 * work-group streams float vectors, K/V pre-packed): the core
 * cl/vector_core.cl with the entries cl/vector.cl (prefill) and
 * cl/decode_vector.cl (decode). */
#include "attention/decode.h" /* attn_kv_dim_pad, ATTN_KV_ROW_ALIGN */
#include "kernels/kernel_desc.h"

#include <stdio.h>

/* rows 4..16 covers DESIGN's measurements (4 rows 104 GFLOP/s, 8 rows 177,
 * 16 rows ~153 on PoCL); the sizes between powers of two (3, 5, 6, 10, 12)
 * exist because the best block is set by how many accumulators fit the
 * registers (on AVX2, 16 ymm registers, the best lies at 4-5: see
 * narrow_prefill below), and 1 and 2 for decode, where a block's other rows
 * would be computed in vain. Defaults measured on PoCL (DESIGN.md): 8 rows
 * x 32 keys x float16. */
enum { MAX_KEYS = 128 };
/* The decode kernel reads a sequence's last block whole, up to MAX_KEYS
 * rows past its end: a contiguous cache's rows are rounded up so that
 * they stay inside it (a paged cache's pages are whole blocks). */
_Static_assert(MAX_KEYS <= ATTN_KV_ROW_ALIGN, "decode_vector.cl's tail block would pass the cache");
static const attn_tunable_desc tunables[] = {
    {"rows", "BLOCK_ROWS", offsetof(attn_params, block_rows), 1, 16, 0, 8,
     10, {1, 2, 3, 4, 5, 6, 8, 10, 12, 16}, "query rows per work-item"},
    {"keys", "BLOCK_KEYS", offsetof(attn_params, block_keys), 4, MAX_KEYS, 1, 32,
     4, {16, 32, 64, 128}, "keys per K/V tile, a multiple of vec"},
    {"vec", "VEC_WIDTH", offsetof(attn_params, vec_width), 4, 16, 1, 16,
     3, {4, 8, 16}, "float vector width (4, 8 or 16)"},
};

/* A CPU with narrower native vectors than float16 (AVX2: 8 floats, 16 ymm
 * registers; NEON: 4 floats, 32 registers) holds each float16 in two or
 * more registers, and the defaults' 8 rows x D/16 float16 accumulators
 * spill. On PoCL on an AVX2 EPYC (README, "Measured here"), interleaved
 * sweeps of 19 settings over the DESIGN prefill set put rows 4 or 5, keys
 * 16, vec 8 first, 1.4-1.9x the defaults' speed; 5 rows matched 4 at D 64
 * and beat them by 1.06-1.19x at D 128 and in f16. Widths below 8 (NEON)
 * are unmeasured and take the same. Prefill only: decode (B=4 Hq=32 Hkv=8
 * D=128 kv 4096) ran 0.99x (f32) and 1.02x (f16) the defaults' speed with
 * keys 16, vec 8, within the noise, and keeps them. */
static const struct { int rows, keys, vec; } narrow_prefill = {5, 16, 8};

void attn_vector_fit_width(int entry, attn_params *pr, unsigned float_width)
{
    if (entry != ATTN_ENTRY_PREFILL || float_width == 0 || float_width >= 16) return;
    pr->block_rows = narrow_prefill.rows;
    pr->block_keys = narrow_prefill.keys;
    pr->vec_width = narrow_prefill.vec;
}

static const attn_constraint constraints[] = {
    {offsetof(attn_params, block_keys), offsetof(attn_params, vec_width)},
};

/* The head dim the kernels work in: a multiple of the vector width. */
static void derived(const attn_params *pr, const attn_problem *p, int entry, char *buf, size_t n)
{
    (void)entry;
    snprintf(buf, n, " -DHEAD_DIM_PAD=%d", attn_params_padded_dim(pr, p->head_dim));
}

/* Bytes of the per-work-item arrays of the entry kernels (cl/vector.cl,
 * cl/decode_vector.cl) and vector_core.cl's state they declare; a floatV is
 * vec floats. Prefill works in HEAD_DIM_PAD columns, decode in the cache's
 * DIM_PAD (NCHUNK vectors a row either way). */
static size_t private_bytes(const attn_params *pr, const attn_problem *p, int entry)
{
    const size_t r = (size_t)pr->block_rows, k = (size_t)pr->block_keys, v = (size_t)pr->vec_width;
    const int decode = entry == ATTN_ENTRY_DECODE;
    const size_t dpad = (size_t)(decode ? attn_kv_dim_pad(p->head_dim)
                                        : attn_params_padded_dim(pr, p->head_dim));
    const size_t nchunk = dpad / v;
    size_t floats = 3 * r * dpad; /* acc, tot, cmp [BLOCK_ROWS][NCHUNK] floatV */
    floats += 3 * r * v;          /* lsum, ltot, lcmp [BLOCK_ROWS] floatV */
    floats += r * k;              /* s [BLOCK_ROWS][NKV] floatV */
    floats += r * k;              /* p [BLOCK_ROWS][BLOCK_KEYS] float */
    if (!decode) {
        floats += r * (size_t)p->head_dim; /* qs [BLOCK_ROWS][HEAD_DIM] float */
        floats += 2 * r * v;               /* pv_block's a0, a1 [BLOCK_ROWS] floatV */
        floats += 5 * r;                   /* m, hi, qi, qh, lim [BLOCK_ROWS] (4-byte) */
        return floats * 4;
    }
    const size_t pv_rows = nchunk >= 16 ? 1 : 16 / nchunk;
    floats += r * dpad;                 /* qv [BLOCK_ROWS][NCHUNK] floatV */
    floats += dpad;                     /* row [DIM_PAD] float (Q staging) */
    floats += dpad;                     /* dot_rows's kvec [NCHUNK] floatV */
    floats += pv_rows * dpad;           /* pv_block's a [PV_ROWS][NCHUNK] floatV */
    if (p->dtype == ATTN_F32)
        floats += 2 * r * v;            /* sums [BLOCK_ROWS][VEC_WIDTH] float, a [BLOCK_ROWS] floatV */
    else
        floats += r * v * v / 2 + 2 * r * v; /* w [BLOCK_ROWS][VEC_WIDTH / 2] floatV, a0, a1 */
    floats += 4 * r;                    /* m, hi, qi, qh [BLOCK_ROWS] (4-byte) */
    return floats * 4;
}

const attn_family_desc attn_desc_vector = {
    ATTN_FAMILY_VECTOR, "vector", tunables, (int)(sizeof tunables / sizeof tunables[0]),
    constraints, (int)(sizeof constraints / sizeof constraints[0]),
    (size_t)-1, NULL, private_bytes, derived,
    {{"attn_fwd_vector",
      {"common.cl", "variants.cl", "vector_helpers.cl", "vector_core.cl", "vector.cl", "mask_tiles.cl"},
      6,
      {{offsetof(attn_params, block_rows), 1}}, 1},
     {"attn_decode_vector",
      {"common.cl", "variants.cl", "kv_cache_rows.cl", "decode_common.cl", "vector_helpers.cl", "vector_core.cl",
       "decode_vector.cl"},
      7,
      {{offsetof(attn_params, block_rows), 1}}, 1}},
    NULL, NULL, NULL, 0,
};
