/* attn/blas.h -- part of attn's public API (applications include attn.h):
 * the paths through CLBlast GEMMs: materialized attention, attention
 * weights and the attention layer. */
#ifndef ATTN_PUBLIC_BLAS_H
#define ATTN_PUBLIC_BLAS_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==== Materialized attention, attention weights and the attention layer ====
 * (CLBlast paths.) GEMMs run through CLBlast in f32: its half-precision
 * routines need cl_khr_fp16, which PoCL and NVIDIA's OpenCL lack, so f16 and
 * bf16 data are widened to f32 temporaries on the device, multiplied in f32
 * (f32 accumulation, as everywhere in attn) and narrowed back, rounding to
 * nearest even.
 * CLBlast is optional at build time (ATTN_WITH_CLBLAST, README.md). In a
 * build without it, attn_forward_materialized, attn_attention_weights and
 * attn_layer_create validate their arguments as usual (a bad one is still
 * ATTN_ERROR_INVALID_ARGUMENT naming it), then return ATTN_ERROR_UNSUPPORTED
 * with the message "<function>: this build of attn has no CLBlast (...)",
 * having done nothing; attn_layer_forward then has no layer to run.
 * CLBlast keeps the kernels it compiles for each OpenCL context for the
 * life of the process, and they keep that context alive; it can only let
 * go of all of them at once (CLBlastClearCache). attn calls it when the
 * last attn context that used CLBlast is released, so that contexts made
 * and released in turn do not accumulate; the next context that uses
 * CLBlast, and an application that calls CLBlast itself, then compile its
 * kernels again. Release attn's contexts before the process exits (not
 * from an atexit handler or a static destructor, which may run after
 * CLBlast's own caches are gone). The GEMMs run on a temporary buffer the
 * context keeps with its workspace (attn_context_workspace_bytes counts
 * it, attn_context_release_workspace frees it): CLBlast must not allocate,
 * because a failed allocation inside it ends the process. */

/*! attn_has_clblast() : @return 1 when this library was built with CLBlast
 *  (the functions below work), 0 when they return ATTN_ERROR_UNSUPPORTED. */
ATTN_API int attn_has_clblast(void);

/*! attn_forward_materialized() :
 *  The same contract, arguments and outputs as attn_forward (zeros and -inf
 *  LSE for rows with no visible key, out may be q, check mode applies), done
 *  the usual way: per batch entry, S = Q K^T for each query head by a
 *  CLBlast GEMM over that entry's content rows and keys (K/V heads
 *  broadcast to their query heads by offsets, never copied), a kernel that
 *  scales, masks and soft-maxes each row in fp32, then O = P V by GEMMs.
 *  A baseline for the tiled kernels and an independent check of them.
 *  Every variant of attn_problem applies as in attn_forward (window,
 *  softcap, sinks, ALiBi, mask, packed: lse is then [q_heads][q_len] and
 *  only the entries' own rows of out are written); the scores are still
 *  computed for all of an entry's keys, so a window or mask saves no GEMM
 *  work here, and keys the window, causal rule or mask hide get weight
 *  exactly zero (their V rows must be finite: 0 * NaN is NaN).
 *  It needs one device buffer of q_heads x q_len x kv_len floats for the
 *  batch entry of most content rows x keys (lengths' q_len[b] x kv_len[b];
 *  a packed entry's own, not the shared axis's), a GEMM temporary of about
 *  one such head's scores plus its Q and K
 *  (CLBlast's padded copies) and, for f16/bf16, f32 copies of Q, K, V and
 *  O; when any would exceed CL_DEVICE_MAX_MEM_ALLOC_SIZE, or reach past
 *  2^31 - 1 elements (CLBlast indexes with int), it returns
 *  ATTN_ERROR_UNSUPPORTED before doing anything. The context keeps these
 *  buffers for reuse (attn_context_release_workspace). */
ATTN_API attn_status attn_forward_materialized(attn_context *ctx, const attn_problem *p,
                                               const attn_tensor *q, const attn_tensor *k,
                                               const attn_tensor *v, const attn_tensor *out,
                                               const attn_lengths *lengths, cl_mem lse,
                                               cl_event *done);

/*! attn_attention_weights() :
 *  The softmax weights of one batch entry and query head, through the
 *  materialized path, for diagnostics: weights (host, q_len x kv_len
 *  floats, row-major, padded lengths) receives at [i][j] how much query row i
 *  took from key row j, with every variant of p applied. Each visible row
 *  sums to one -- or, with attention sinks, to less: the sink is in the
 *  denominator, e^s_j / (sum_k e^s_k + e^sink_h), and takes the rest.
 *  Masked keys (causal, window, mask), pad keys and pad rows are exactly
 *  zero; so is a row with nothing visible, and a row that meets a NaN or
 *  infinite logit (outside the contract, as attn_forward's zeros). With
 *  p->packed, rows and keys outside the entry's own are pad. Blocking; the
 *  array is written only on success. (Attention weights show how one head mixed values, not why a
 *  model predicted what it did.) */
ATTN_API attn_status attn_attention_weights(attn_context *ctx, const attn_problem *p,
                                            const attn_tensor *q, const attn_tensor *k,
                                            const attn_lengths *lengths, int batch_index,
                                            int head, float *weights);

/* The attention layer of the seed (ReadableCausalAttention) with GQA:
 * y = out_proj(attention(q_proj(x), k_proj(x), v_proj(x))), bias-free. */
typedef struct attn_layer attn_layer;

typedef struct attn_layer_config {
    int d_model;      /* model width: rows of hidden and out have d_model elements */
    int q_heads;      /* Hq; q_proj maps d_model -> Hq * head_dim */
    int kv_heads;     /* Hkv, Hq % Hkv == 0; k_proj, v_proj map d_model -> Hkv * head_dim */
    int head_dim;     /* D, 1..256 */
    attn_dtype dtype; /* storage of hidden, out and the projections' outputs */
    int causal;       /* nonzero: bottom-right aligned causal mask */
    float scale;      /* 0 means 1/sqrt(head_dim) */
} attn_layer_config;

/*! attn_layer_create() :
 *  Weights are host float arrays in PyTorch's nn.Linear layout, [out][in]
 *  row-major (a module's `weight.data` as is), y = x W^T:
 *  w_q [Hq*D][d_model], w_k and w_v [Hkv*D][d_model], w_o [d_model][Hq*D].
 *  Column h*D + d of a projection's output is head h, dimension d (the
 *  seed's split_heads). The layer copies them to the device (rounded through
 *  cfg->dtype, held as f32 for CLBlast); the caller may free them. The layer
 *  uses ctx (release the layer first) and owns its intermediate buffers,
 *  grown as needed and reused across calls. Weights that this device or
 *  CLBlast cannot hold (the fused q/k/v matrix or w_o past the device's
 *  largest allocation, or past 2^31 - 1 elements) are
 *  ATTN_ERROR_UNSUPPORTED, nothing made. */
ATTN_API attn_status attn_layer_create(attn_context *ctx, const attn_layer_config *cfg,
                                       const float *w_q, const float *w_k, const float *w_v,
                                       const float *w_o, attn_layer **out);
/*! attn_layer_release() : frees the layer's buffers; accepts NULL. */
ATTN_API void attn_layer_release(attn_layer *layer);

/* Where a layer forward spent its time (filled when asked for). */
typedef struct attn_layer_timing {
    double projection_ms; /* q/k/v projections (one fused GEMM) and out_proj, with conversions */
    double attention_ms;  /* attn_forward */
} attn_layer_timing;

/*! attn_layer_forward() :
 *  hidden and out: cl_mems holding [batch][seq][d_model] elements of
 *  cfg->dtype, contiguous, from element offsets hidden_offset / out_offset
 *  (they may be the same: hidden is consumed before out is written; out
 *  must not have been created CL_MEM_READ_ONLY, nor hidden
 *  CL_MEM_WRITE_ONLY).
 *  lengths (optional) are the attention's per-batch regions, as for
 *  attn_forward with q_len = kv_len = seq: pad rows of out are zero, and
 *  whatever pad rows of hidden hold never reaches a content row.
 *  Enqueues on ctx's queue: one GEMM for q, k and v together into a fused
 *  [batch, seq, (Hq + 2 Hkv) * D] buffer, attn_forward reading it in place
 *  by BSHD strides, out_proj into out. timing: NULL, or the queue is
 *  finished after each phase and their wall times reported (slower).
 *  done: NULL, or receives the completion event (caller releases it).
 *  Calls on one layer are serialised (its buffers are shared); bad
 *  arguments are found before anything is enqueued, and so are
 *  batch x seq rows whose buffers (or a GEMM's temporary) this device
 *  cannot hold in one allocation: ATTN_ERROR_UNSUPPORTED naming them. In
 *  f32, hidden and out are CLBlast's own operands, which it indexes with
 *  int: hidden_offset (out_offset) + batch x seq x d_model must be at most
 *  2^31 - 1, else ATTN_ERROR_UNSUPPORTED naming hidden (out). f16 and bf16
 *  reach them through f32 copies, with no such limit. */
ATTN_API attn_status attn_layer_forward(attn_layer *layer, int batch, int seq, cl_mem hidden,
                                        size_t hidden_offset, cl_mem out, size_t out_offset,
                                        const attn_lengths *lengths, attn_layer_timing *timing,
                                        cl_event *done);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_PUBLIC_BLAS_H */
