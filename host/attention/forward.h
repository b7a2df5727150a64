/* forward.h -- attn_forward's work for callers that hold the lock (the
 * layer), and the scale it applies (dtype.c). */
#ifndef ATTN_ATTENTION_FORWARD_H
#define ATTN_ATTENTION_FORWARD_H

#include "attn.h"


/* attn_forward's work, with ctx's lock held by the caller (the layer runs
 * it inside its own call). */
attn_status attn_forward_locked(attn_context *ctx, const attn_problem *p, const attn_tensor *q,
                                const attn_tensor *k, const attn_tensor *v,
                                const attn_tensor *out, const attn_lengths *lengths, cl_mem lse,
                                cl_event *done);

/* The softmax scale p asks for: p->scale, or 1/sqrt(head_dim) when 0 (dtype.c). */
float attn_effective_scale(const attn_problem *p);

/* The kernels' `lens`: per batch entry (q_start, q_len, kv_start, kv_len)
 * as int4, resolved from lengths (attn_region_of), in a small read-only
 * buffer made per call, so that the caller's arrays need not outlive it. */
attn_status attn_lengths_buffer(attn_context *ctx, const attn_problem *p,
                                const attn_lengths *lengths, cl_mem *out);

#endif /* ATTN_ATTENTION_FORWARD_H */
