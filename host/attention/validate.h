/* validate.h -- argument checks shared by the public calls (validate.c). */
#ifndef ATTN_ATTENTION_VALIDATE_H
#define ATTN_ATTENTION_VALIDATE_H

#include "attn.h"


/* ---- validation (validate.c) ---- */
/* Checks every argument of attn_forward; on failure sets ctx's error naming
 * the argument and returns ATTN_ERROR_INVALID_ARGUMENT. q, k and v are read
 * only and may share elements freely; the rows of out that are written (all
 * of them, or each entry's own with p->packed) must not meet one another,
 * k or v, nor q unless out is q with the same layout (in place). */
attn_status attn_validate_forward(attn_context *ctx, const attn_problem *p,
                                  const attn_tensor *q, const attn_tensor *k,
                                  const attn_tensor *v, const attn_tensor *out,
                                  const attn_lengths *lengths, cl_mem lse);
/* attn_validate_forward's checks of q, out and lse alone (the same
 * messages), for K and V that are no caller's tensors: a KV cache's own
 * buffers without plain tensors (decode.c), which q, out and lse cannot
 * meet. */
attn_status attn_validate_io(attn_context *ctx, const attn_problem *p, const attn_tensor *q,
                             const attn_tensor *out, cl_mem lse);
/* The longest q_len and kv_len: kernels index rows with int and add
 * lengths, so they keep clear of INT_MAX. */
#define ATTN_MAX_SEQ (1 << 30)

/* The problem alone (shapes, dtype, scale, lengths). */
attn_status attn_validate_problem(attn_context *ctx, const attn_problem *p,
                                  const attn_lengths *lengths);
/* attn_validate_problem without a context: the same checks and messages,
 * into the thread's last error, but p->sinks_buffer and p->mask.buffer
 * are not examined (no cl_mem is read: attn_validate_variant_values).
 * attn_reference_forward's checks, so that it refuses what attn_forward
 * refuses. */
attn_status attn_validate_problem_values(const attn_problem *p, const attn_lengths *lengths);

/* One tensor attn reads, of shape [batch, heads, seq, dim] with elements of
 * elem bytes: a valid cl_mem of ctx's context, one batch entry's elements
 * distinct (batch entries may share them: stride_batch 0 for one prompt
 * shared by the batch, or packed sequences), large enough, not
 * CL_MEM_WRITE_ONLY; the highest
 * element index it reaches in *hi. */
attn_status attn_validate_tensor(attn_context *ctx, const attn_tensor *t, const char *name,
                                 int batch, int heads, int seq, int dim, size_t elem, size_t *hi);

/* A buffer attn reads (an input, the sinks, the mask) must not have been
 * created CL_MEM_WRITE_ONLY: a kernel reading one is undefined behaviour.
 * attn_validate_tensor checks it too. */
attn_status attn_validate_readable(attn_context *ctx, cl_mem m, const char *name);

/* A buffer attn writes (an output, the LSE) must not have been created
 * CL_MEM_READ_ONLY: a kernel writing one is undefined behaviour. */
attn_status attn_validate_writable(attn_context *ctx, cl_mem m, const char *name);

/* One batch entry's valid regions, resolved from attn_lengths (NULL or a
 * NULL array: the whole length from 0). */
typedef struct attn_region {
    int q_start, q_len, kv_start, kv_len;
} attn_region;

static inline attn_region attn_region_of(const attn_problem *p, const attn_lengths *L, int b)
{
    attn_region r = {0, p->q_len, 0, p->kv_len};
    if (L) {
        if (L->q_start) r.q_start = L->q_start[b];
        if (L->q_len) r.q_len = L->q_len[b];
        if (L->kv_start) r.kv_start = L->kv_start[b];
        if (L->kv_len) r.kv_len = L->kv_len[b];
    }
    return r;
}

/* Whether two batch entries' query rows [q_start, q_start + q_len) meet:
 * 1 (meet = the lower entry, the higher, the first row they share), 0 when
 * none do, -1 out of host memory. */
int attn_packed_rows_meet(const attn_problem *p, const attn_lengths *lengths, int meet[3]);

#endif /* ATTN_ATTENTION_VALIDATE_H */
