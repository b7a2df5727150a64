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

#endif /* ATTN_ATTENTION_FORWARD_H */
