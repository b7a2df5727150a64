/* check.h -- check mode: every forward compared with the CPU reference. */
#ifndef ATTN_ATTENTION_CHECK_H
#define ATTN_ATTENTION_CHECK_H

#include "attn.h"


/* ---- check mode (check.c) ---- */
/* Host copies of a forward's inputs, contiguous BHSD float. */
typedef struct attn_check_inputs attn_check_inputs;
/* Reads q, k, v back (blocking, after what the queue holds, even an
 * out-of-order one) before the kernels run: out may be q. k or v NULL:
 * left zero, for the caller to fill (attn_check_kv). */
attn_status attn_check_read_inputs(attn_context *ctx, const attn_problem *p,
                                   const attn_tensor *q, const attn_tensor *k,
                                   const attn_tensor *v, attn_check_inputs **out);
/* The host K and V of in, [batch][kv_heads][kv_len][head_dim] floats. */
void attn_check_kv(attn_check_inputs *in, float **k, float **v);
/* Waits for the result, recomputes it with the reference and compares at
 * the dtype's tolerance: ATTN_ERROR_MISMATCH naming the worst element. */
attn_status attn_check_compare(attn_context *ctx, const attn_problem *p,
                               const attn_check_inputs *in, const attn_tensor *out,
                               const attn_lengths *lengths, cl_mem lse);
void attn_check_free(attn_check_inputs *in);
/* The end of a forward in check mode: when st is success and inputs were
 * read, waits for finished and compares; frees inputs; hands finished to
 * *done on success (the caller releases it), else releases it. Returns the
 * final status. */
attn_status attn_check_finish(attn_context *ctx, attn_status st, const attn_problem *p,
                              attn_check_inputs *inputs, const attn_tensor *out,
                              const attn_lengths *lengths, cl_mem lse, cl_event finished,
                              cl_event *done);
/* attn_reference_forward for a call on ctx: a refusal becomes ctx's error,
 * "<who>: the reference failed (<status>: <why>)", while the thread's
 * attn_last_error(NULL) keeps the caller's message. */
attn_status attn_check_reference(attn_context *ctx, const char *who, const attn_problem *p,
                                 const float *q, const float *k, const float *v, float *o,
                                 const attn_lengths *lengths, float *lse);
/* Reads a strided tensor of p->dtype back into contiguous [B,H,S,D] floats. */
attn_status attn_tensor_download(attn_context *ctx, const attn_tensor *t, attn_dtype dtype,
                                 int batch, int heads, int seq, int dim, float *dst);

#endif /* ATTN_ATTENTION_CHECK_H */
