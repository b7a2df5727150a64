/* forward.h -- attn_forward's work for callers that hold the lock (the
 * layer), and the scale it applies (dtype.c). */
#ifndef ATTN_ATTENTION_FORWARD_H
#define ATTN_ATTENTION_FORWARD_H

#include "attn.h"
#include "kernels/params.h" /* attn_params */


/* attn_forward's work, with ctx's lock held by the caller (the layer runs
 * it inside its own call). */
attn_status attn_forward_locked(attn_context *ctx, const attn_problem *p, const attn_tensor *q,
                                const attn_tensor *k, const attn_tensor *v,
                                const attn_tensor *out, const attn_lengths *lengths, cl_mem lse,
                                cl_event *done);

/* One forward on explicit parameters, no plan, no lengths, no LSE, no
 * check (the mma family's first-use verification, mma_gate.c); p valid. */
attn_status attn_forward_params(attn_context *ctx, const attn_params *pr, const attn_problem *p,
                                const attn_tensor *q, const attn_tensor *k, const attn_tensor *v,
                                const attn_tensor *out, cl_event *done);

/* attn_decode's blocks longer than ATTN_DECODE_MAX_Q_LEN on the vector
 * family (decode.c): attn_forward's kernels with the keys packed from the
 * cache (cl/pack_cache.cl). p: the problem over the cache's capacity
 * (kv_len = capacity), validated; lengths: each sequence's new queries
 * and its length; pr: the vector family's parameters. Lock held. */
attn_status attn_forward_cache_enqueue(attn_context *ctx, const attn_params *pr,
                                       const attn_problem *p, const attn_tensor *q,
                                       attn_kv_cache *cache, const attn_tensor *out,
                                       const attn_lengths *lengths, cl_mem lse, cl_event *done);
/* Builds (or loads) that path's program and kernels (attn_decode_prepare). */
attn_status attn_forward_cache_prepare(attn_context *ctx, const attn_params *pr,
                                       const attn_problem *p, const attn_kv_cache *cache);

/* The softmax scale p asks for: p->scale, or 1/sqrt(head_dim) when 0 (dtype.c). */
float attn_effective_scale(const attn_problem *p);

/* The kernels' `lens`: per batch entry (q_start, q_len, kv_start, kv_len)
 * as int4, resolved from lengths (attn_region_of), in a small read-only
 * buffer made per call, so that the caller's arrays need not outlive it. */
attn_status attn_lengths_buffer(attn_context *ctx, const attn_problem *p,
                                const attn_lengths *lengths, cl_mem *out);

#endif /* ATTN_ATTENTION_FORWARD_H */
