/* desc_mma.c -- the mma family: GPU prefill on tensor-core fragments
 * (cl/mma_core.cl: FlashAttention-2's forward on the fragment operations of
 * cl/mma_ops.cl, f32 accumulators; f16 and bf16 on m16n8k16, f32 through
 * 3xTF32 on m16n8k8: cl/mma_operands.cl). Inline PTX on NVIDIA
 * (cc >= 8.0); elsewhere mma_ops.cl emulates each warp-level operation
 * through __local memory and work-group barriers, correct but many times
 * slower than the other families: there it is for testing only. It is the
 * heuristic's choice only on a device where host/attention/mma_gate.c
 * verified it (NVIDIA, compute capability 8.0 or more: the PTX built, the
 * fragment operations exact, f16 and bf16 forwards and decodes right,
 * short and over 4179 keys; f32 after verifications of its own);
 * elsewhere it runs when forced (ATTN_PARAMS, attn_context_set_params
 * "family=mma,...") or named by a tuning database entry. A head dim that
 * is a multiple of 16 up to 256 (f32: 128, and rows of at most
 * ATTN_MMA_F32_MAX_KEYS keys, folded past ATTN_MMA_F32_PLAIN_KEYS); another problem keeps the device's own
 * plan (plan.c). Its decode kernel (cl/decode_mma.cl) reads every cache
 * kind (contiguous, paged, int8); the decode heuristic chooses it where a
 * KV head has ATTN_MMA_DECODE_ROWS query rows or more (decode_params.c). */
#include "kernels/kernel_desc.h"

#include <stddef.h>
#include <stdio.h>

#define STR2(x) #x
#define STR(x) STR2(x)

/* __local uints one warp's mma_ops.cl scratch takes when emulated (1
 * under the PTX, unused). Counted at the emulation's size everywhere:
 * the local-memory estimate must hold for the build that uses the most. */
#define MMA_SCRATCH_WORDS_MAX 192

/* FlashAttention-2's starting point: 4 warps of 16 rows, 64 keys a tile
 * (about 34 KiB of __local at D 128). */
static const attn_tunable_desc tunables[] = {
    {"warps", "MMA_WARPS", offsetof(attn_params, mma_warps), 1, 8, 1, 4,
     4, {1, 2, 4, 8}, "warps (32 work-items) per work-group"},
    {"keys", "BLOCK_KEYS", offsetof(attn_params, block_keys), 16, 128, 1, 64,
     4, {16, 32, 64, 128}, "keys per K/V tile"},
    {"mtiles", "MMA_MTILES", offsetof(attn_params, mma_mtiles), 1, 2, 0, 1,
     2, {1, 2}, "m-tiles of 16 query rows per warp"},
    /* 0 frees QSTEPS x 4 registers a lane (64 at D 256 f16, D 128 f32) for
     * Q reads through the L1 cache at every key tile (cl/mma_core.cl's
     * mma_q). ptxas's spills with it are mixed (README: some halve, some do
     * not move), and no GPU has timed it: the default keeps Q in registers
     * and the tuner weighs both */
    {"qregs", "MMA_QREGS", offsetof(attn_params, mma_qregs), 0, 1, 0, 1,
     2, {0, 1}, "1: Q's fragments held in registers, 0: read at each k-step"},
};

static size_t work_group(const attn_params *pr) { return 32 * (size_t)pr->mma_warps; }

static int block_rows(const attn_params *pr) { return 16 * pr->mma_mtiles * pr->mma_warps; }

static const char *refuses(const attn_problem *p)
{
    if (p->head_dim % 16 || p->head_dim > 256)
        return "needs a head dim that is a multiple of 16, at most 256";
    if (p->dtype != ATTN_F32) return NULL;
    /* Q's fragments and O take D registers a lane in f32: 256 would spill */
    if (p->head_dim > 128) return "runs f32 with a head dim of at most 128";
    /* no compensated sums (cl/mma_core.cl): past this even the folded sums'
     * drift nears the f32 tolerance (test_long_context's table) */
    if (p->kv_len > ATTN_MMA_F32_MAX_KEYS)
        return "runs f32 rows of at most " STR(ATTN_MMA_F32_MAX_KEYS) " keys";
    return NULL;
}

/* Bytes of attn_fwd_mma's __local arrays (cl/mma_operands.cl's mma_local,
 * whose row strides KS, VS are padded against bank conflicts, and the
 * scratch). */
static size_t local_bytes(const attn_params *pr, const attn_problem *p)
{
    const size_t d = (size_t)p->head_dim, keys = (size_t)pr->block_keys;
    size_t words;
    if (p->dtype == ATTN_F32) {
        const size_t dr = (d + 31) / 32 * 32;
        words = keys * (dr + 8) + keys * (dr + 4); /* k: [keys][DR + 8], v: [keys][DR + 4] */
    } else {
        /* k: [keys][D/2 + 4], vt: [D][keys/2 + 4] */
        words = keys * (d / 2 + 4) + d * (keys / 2 + 4);
    }
    words += keys + 1;                                      /* vbad, vany */
    words = (words + 3) / 4 * 4; /* mma_local is 16-byte aligned (16-byte stores), sizeof too */
    words += (size_t)pr->mma_warps * MMA_SCRATCH_WORDS_MAX; /* mma_scr */
    return 4 * words;
}

/* A decode block longer than ATTN_DECODE_MAX_Q_LEN (chunked prefill over
 * a cache): its query tiles fill the device, and splitting its rows only
 * to keep the plain sum would cost a partial O per split (a block of 4096
 * queries of 32 heads at D 128 over 2^20 keys: 256 splits, 16 GiB); it
 * folds, as a prefill row of its length does. */
static int long_block(const attn_problem *p) { return p->q_len > ATTN_DECODE_MAX_Q_LEN; }

/* Whether entry's rows fold O into a second accumulator (cl/mma_core.cl's
 * MMA_FOLD): f32 rows past the plain sum's reach. A prefill row is kv_len
 * keys long; a decode work-group sums one split's chunk of the capacity
 * (kv_len): automatic splits keep it within the plain sum's reach
 * (attn_params_decode_least_splits), forced ones (kv_splits) may not; a
 * long block's rows are not split for it. */
static int folds(const attn_params *pr, const attn_problem *p, int entry)
{
    if (p->dtype != ATTN_F32) return 0;
    if (entry != ATTN_ENTRY_DECODE || long_block(p)) return p->kv_len > ATTN_MMA_F32_PLAIN_KEYS;
    return pr->kv_splits > 0 &&
           ((long)p->kv_len + pr->kv_splits - 1) / pr->kv_splits > ATTN_MMA_F32_PLAIN_KEYS;
}

int attn_params_decode_least_splits(const attn_params *pr, const attn_problem *p, int span)
{
    if (pr->family != ATTN_FAMILY_MMA || p->dtype != ATTN_F32 || long_block(p)) return 1;
    return span > 0 ? (span + ATTN_MMA_F32_PLAIN_KEYS - 1) / ATTN_MMA_F32_PLAIN_KEYS : 1;
}

static void derived_options(const attn_params *pr, const attn_problem *p, int entry, char *buf,
                            size_t n)
{
    if (n && folds(pr, p, entry)) snprintf(buf, n, " -DMMA_FOLD=1");
}

/* Bytes of mma_attend's per-work-item arrays (cl/mma_core.cl), which both
 * entries run; the folded sum's tot only where the entry folds. */
static size_t private_bytes(const attn_params *pr, const attn_problem *p, int entry)
{
    const size_t mt = (size_t)pr->mma_mtiles, d = (size_t)p->head_dim;
    const size_t qsteps = p->dtype == ATTN_F32 ? d / 8 : d / 16;
    /* qa [MMA_MTILES]: QSTEPS uint4 or float4, or (qregs 0) a pointer, two
     * row offsets and two flags */
    size_t words = mt * (pr->mma_qregs ? qsteps * 4 : 8);
    words += mt * (d / 8) * 4;               /* acc [MMA_MTILES][D/8] float4 */
    if (folds(pr, p, entry)) words += mt * (d / 8) * 4; /* tot, as acc */
    words += (size_t)pr->block_keys / 8 * 4; /* s [BLOCK_KEYS/8] float4 */
    words += 7 * 2 * mt;                     /* ri, rh, rlo, rhi, rtop, mrow, l [2 m-tiles] */
    return 4 * words;
}

/* Shrinking (of the defaults, one m-tile): the key tile first (the __local
 * tiles), then the warps. Two m-tiles at f32 D 128 are 1200 bytes of
 * registers a lane, past ATTN_PRIVATE_BUDGET_GPU: the tuner's candidates
 * include them, to be measured. */
const attn_family_desc attn_desc_mma = {
    ATTN_FAMILY_MMA, "mma", tunables, (int)(sizeof tunables / sizeof tunables[0]),
    NULL, 0, (size_t)-1, local_bytes, private_bytes, derived_options,
    {{"attn_fwd_mma",
      {"common.cl", "variants.cl", "tile.cl", "mma_ops.cl", "mma_operands.cl", "mma_core.cl",
       "mma.cl", "mask_tiles.cl"},
      8,
      {{offsetof(attn_params, block_keys), 16}, {offsetof(attn_params, mma_warps), 1}}, 2},
     {"attn_decode_mma",
      {"common.cl", "variants.cl", "kv_cache_rows.cl", "decode_common.cl", "tile.cl", "mma_ops.cl",
       "mma_operands.cl", "mma_core.cl", "decode_mma.cl"},
      9,
      {{offsetof(attn_params, block_keys), 16}, {offsetof(attn_params, mma_warps), 1}}, 2}},
    work_group, block_rows, refuses,
    1, /* emulated off NVIDIA: a default tuning run must not spend its budget on it */
};
