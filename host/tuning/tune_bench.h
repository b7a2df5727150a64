/* tune_bench.h -- the tuner's workbench for one class, shared by the
 * measurement (tune_measure.c: buffers, verification, timing) and the
 * decode side (tune_bench_decode.c: the KV caches attn_decode reads).
 * Internal to the attn_tune library. */
#ifndef ATTN_TUNE_BENCH_H
#define ATTN_TUNE_BENCH_H

#include "core/context.h"
#include "tuning/tuning.h"

/* The verification shape's batches (see tune_measure.c and
 * tune_bench_decode.c for their lengths) and sizes. */
enum { ATTN_TUNE_VB = 4, ATTN_TUNE_VSQ = 67, ATTN_TUNE_VSKV = 131 };

struct attn_tune_bench {
    attn_context *ctx;
    int entry; /* ATTN_ENTRY_*: what is timed, attn_forward or attn_decode */
    attn_tune_cache kv; /* decode: the caches' kind (zero for prefill) */
    /* timing */
    attn_problem tp;
    attn_tensor tq, tk, tv, to;
    double flops;
    attn_kv_cache *tcache; /* decode: tk and tv appended, full to tp.kv_len */
    /* verification */
    attn_problem vp;
    attn_lengths vlen;
    attn_tensor vq, vk, vv;
    attn_kv_cache *vcache; /* decode: vk and vv appended to vlen.kv_len */
    int vq_len[ATTN_TUNE_VB];
    int vkv_len[ATTN_TUNE_VB]; /* prefill: the verification's key lengths */
    float *ref_o, *ref_lse, *nan_host;
    size_t n_o, n_lse;
    int warned_wall, logged_times;
};

/* The decode verification shape: the class's head dim, type, causality,
 * group and q_len against a cache of ATTN_TUNE_VSKV rows holding ragged
 * prefixes. Sets b->vp's lengths and b->vlen (from b->tp). */
attn_status attn_tune_decode_shape(attn_tune_bench *b);
/* Makes the two caches and appends the timing and verification K/V to
 * them (the K/V tensors are released: the caches hold them now). */
attn_status attn_tune_decode_fill(attn_tune_bench *b);

#endif /* ATTN_TUNE_BENCH_H */
