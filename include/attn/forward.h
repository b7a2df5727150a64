/* attn/forward.h -- part of attn's public API (applications include attn.h):
 * attention over whole sequences (attn_forward), the CPU reference and its
 * tolerance, planning ahead (attn_prepare) and the device's peak. */
#ifndef ATTN_PUBLIC_FORWARD_H
#define ATTN_PUBLIC_FORWARD_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/*! attn_forward() :
 *  Enqueues O = softmax(mask(scale * Q K^T)) V on ctx's queue.
 *  Query content index i (row q_start+i) sees key content index j (row
 *  kv_start+j) iff j < kv_len and, when causal, j <= i + (kv_len - q_len);
 *  p's variants (sliding window, softcap, sinks, ALiBi, additive mask,
 *  packed sequences: attn/core.h) refine that and the logits.
 *  Every row of `out` inside [0, q_len) is written (with p->packed, only
 *  each entry's own rows); rows with no visible key get zeros (and -inf in
 *  lse, or the sink with sinks). lse: NULL, or a cl_mem of >= B*Hq*Sq floats
 *  (Hq*Sq with p->packed), written [B, Hq, Sq] ([Hq, Sq]) as natural-log
 *  sum-exp of the scaled, masked logits.
 *  out->buffer and lse are written by kernels: one created CL_MEM_READ_ONLY
 *  is ATTN_ERROR_INVALID_ARGUMENT naming it (q, k and v may be read-only);
 *  buffers attn reads -- q, k, v, p->sinks_buffer, p->mask.buffer -- must
 *  not be CL_MEM_WRITE_ONLY (the same error).
 *  q, k and v are only read: they may share elements, across batch entries
 *  too (stride_batch 0 for one prompt the whole batch attends to), though
 *  one entry's elements must be distinct. The rows of out that are written
 *  must not meet one another, k or v, nor q unless out is q with the same
 *  layout (in place); with p->packed only each entry's own rows count, and
 *  lse is [Hq][Sq] (>= Hq*Sq floats). Memory, not handles, is compared:
 *  sub-buffers (clCreateSubBuffer) of one cl_mem are seen as the one
 *  allocation they are, for out, lse, p->sinks_buffer and p->mask.buffer
 *  (and attn_decode's out against the cache's K and V); what counts is the
 *  bytes each one reaches (the mask's from its offset to its last element
 *  by its strides), so disjoint parts of one arena are accepted. OpenCL
 *  itself leaves a buffer used beside its sub-buffer, or beside another
 *  sub-buffer that overlaps it, undefined when either is written; attn
 *  checks the bytes, which is what the devices it runs on need.
 *  done: NULL, or receives the completion event (caller releases it).
 *  All arguments are validated before anything is enqueued: a refused call
 *  writes nothing. A failure after work was enqueued (an OpenCL error, a
 *  kernel that fails to build or run midway) may leave out and lse partly
 *  written. */
ATTN_API attn_status attn_forward(attn_context *ctx, const attn_problem *p,
                         const attn_tensor *q, const attn_tensor *k,
                         const attn_tensor *v, const attn_tensor *out,
                         const attn_lengths *lengths, cl_mem lse,
                         cl_event *done);

/*! attn_reference_forward() : the CPU reference. Contiguous BHSD float
 *  arrays (Q and O [B,Hq,Sq,D], K and V [B,Hkv,Skv,D]), double accumulation,
 *  the same semantics as attn_forward (p->dtype is ignored: float in, float
 *  out), variants included: it reads the mask from p->mask.host and the
 *  sinks from p->sinks (host memory; a device buffer alone is
 *  ATTN_ERROR_INVALID_ARGUMENT). Every row of out is written (p->packed
 *  changes nothing here: the arrays are per batch entry). lengths and lse
 *  may be NULL. */
ATTN_API attn_status attn_reference_forward(const attn_problem *p, const float *q,
                                   const float *k, const float *v, float *out,
                                   const attn_lengths *lengths, float *lse);

/*! attn_tolerance() : the DESIGN tolerance for a storage type:
 *  |out - ref| <= atol + rtol * |ref|. An unknown dtype gives NaN for
 *  both, so that no comparison against it passes. */
ATTN_API void attn_tolerance(attn_dtype t, double *atol, double *rtol);

/*! attn_problem_flops() : the floating-point work of attn_forward over p,
 *  as attn-bench, attn-tune and the tuning database count it (their
 *  GFLOP/s divide this by the time): 4 * head_dim FLOPs (the multiply and
 *  add of Q K^T and of P V) per visible (query, key) pair, summed over
 *  batches and query heads. Only unmasked pairs count: with lengths, each
 *  sequence's q_len[b] x kv_len[b] (start offsets do not matter; a NULL
 *  array is the padded length); when causal, query i sees i + kv_len -
 *  q_len + 1 keys (bottom-right, clamped to 0..kv_len); with use_window,
 *  only keys inside the window count (pos - window_left .. pos +
 *  window_right at query position pos = i + kv_len - q_len, a side of -1
 *  unlimited), so a window's GFLOP/s count the pairs it computes. Softmax,
 *  scaling, padding rows, the other variants and the additive mask's
 *  -inf entries (data, not shape) are not counted. A decode of q_len new rows against a
 *  cache holding L tokens is p with kv_len = L (its q_lens as lengths->q_len,
 *  the cache's lengths as lengths->kv_len). lengths may be NULL (all full);
 *  its arrays hold p->batch ints.
 *  @return the FLOPs, or 0 when p is NULL or has no batch, query head or
 *  head dim (negative lengths count as 0). */
ATTN_API double attn_problem_flops(const attn_problem *p, const attn_lengths *lengths);

/* Which kernel family runs a problem, where its parameters came from and
 * the memory its main kernel declares. */
typedef struct attn_plan_info {
    char family[16];      /* "tiled" (GPU-style), "vector" (CPU-style), "flash"
                           * (GPU prefill, only when forced or tuned) or "mma"
                           * (NVIDIA tensor cores: attn_family_status) */
    char params[160];     /* the tunables, "name=value,..." */
    char source[16];      /* "tuned", "stale", "heuristic" or "override" */
    size_t local_bytes;   /* __local memory per work-group (0 for none) */
    size_t private_bytes; /* estimated private (register) state per work-item:
                             the kernel's per-work-item arrays; a GPU spills
                             above about 1 KiB */
} attn_plan_info;

/*! attn_prepare() : builds (or loads from the cache) the kernels for p ahead
 *  of time and reports the plan. info may be NULL. */
ATTN_API attn_status attn_prepare(attn_context *ctx, const attn_problem *p, attn_plan_info *info);

/*! attn_family_status() : whether the kernel family named `family`
 *  ("vector", "tiled", "flash", "mma") may be chosen by default on ctx's
 *  device: *usable 1, or 0 with why (why_size bytes, may be 0) saying why
 *  not. Every family but "mma" runs on any OpenCL 1.2 device (the device
 *  type and the tuner choose among them). "mma", FlashAttention-2 on
 *  NVIDIA's tensor cores through inline PTX, needs an NVIDIA device of
 *  compute capability 8.0 or more, and is then verified once per context
 *  (its 16-bit fragment operations, small f16 and bf16 forwards and
 *  decodes, and forwards and a decode over 4179 keys, against the CPU
 *  reference): the first call, or the first f16/bf16 plan, builds and runs
 *  those kernels. *usable is that verdict; f32 storage (3xTF32) has one of
 *  its own, from its tf32 fragment operations, f32 forwards and decodes
 *  (short, and past 4096 keys a row or a split): where the 16-bit types are
 *  usable and f32 is not, why says why (and is "" otherwise). Those
 *  verdicts are at head dim 64; the first plan at each other head dim
 *  verifies that head dim's own programs too (a failure there is a
 *  warning in the log, and that head dim and type class plan another
 *  family, while *usable stays the head dim 64 verdict). Elsewhere it runs
 *  only when forced, on an emulation that is exact but slow (for
 *  testing).
 *  @return ATTN_ERROR_INVALID_ARGUMENT naming ctx, family or usable when
 *  NULL, or an unknown family name. */
ATTN_API attn_status attn_family_status(attn_context *ctx, const char *family, int *usable,
                                        char *why, size_t why_size);

/*! attn_device_peak_gflops() : measures the device's fp32 FMA throughput
 *  with a small kernel through this context's runtime (clpeak's method:
 *  warm-up, then timed with profiling events). */
ATTN_API attn_status attn_device_peak_gflops(attn_context *ctx, double *gflops);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_PUBLIC_FORWARD_H */
