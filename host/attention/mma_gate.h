/* mma_gate.h -- whether the mma family (cl/mma.cl on cl/mma_ops.cl's
 * tensor-core fragments) may be a context's default: mma_gate.c. */
#ifndef ATTN_ATTENTION_MMA_GATE_H
#define ATTN_ATTENTION_MMA_GATE_H

#include "attn.h"

#include <stddef.h>

/* The lowest NVIDIA compute capability (x 10) the family's instructions
 * need: mma.sync m16n8k16 with bf16 and cvt.rn.{f16,bf16}x2.f32 are sm_80's. */
#define ATTN_MMA_MIN_CC 80

/* The head dims that have a verdict each: 16, 32, ..., 16 * this (the
 * family's largest, desc_mma.c). */
#define ATTN_MMA_DIM_SLOTS 16

/* NVIDIA's compute capability x 10 (cl_nv_device_attribute_query), or 0
 * for a device without that extension. */
int attn_nv_compute_capability(cl_device_id device);

/* Whether the mma family's programs are built with -DMMA_PTX=1 (the
 * tensor cores) on ctx: an NVIDIA device of ATTN_MMA_MIN_CC or more.
 * Elsewhere they use cl/mma_ops.cl's emulation (forced runs, tests). */
int attn_mma_ptx(const attn_context *ctx);

/* Appends to the options opts (of size bytes) of a program of `family`
 * what ctx's build of it needs: -DMMA_PTX=1 for the mma family where
 * attn_mma_ptx (else cl/mma_ops.cl emulates). Every mma program, prefill
 * and decode, is built through it. */
void attn_mma_options(const attn_context *ctx, int family, char *opts, size_t size);

/* Whether the heuristic may choose the mma family on ctx for storage dt:
 * a device with the instructions, whose compiler builds them, whose
 * fragment operations pass attn_mma_check and on which a small f16 and
 * bf16 forward and a small f16 decode (through a KV cache, contiguous and
 * paged int8, split) on the family match the CPU reference, and so do an
 * f16 and a bf16 forward and an f16 decode over rows of 4179 keys; for
 * ATTN_F32 also f32 forwards (small; 4179 keys, folded) and decodes
 * (paged, int8; splits past 4096 keys, folded; 3xTF32) within
 * the f32 tolerance, decided on the first f32 call. Each verdict is kept
 * for the context's life; a failure is one log line (why). ctx's error is
 * left as it was. Lock held. */
int attn_mma_usable(attn_context *ctx, attn_dtype dt);

/* attn_mma_usable for p's dtype, and at p's head dim (a multiple of 16,
 * at most 16 * ATTN_MMA_DIM_SLOTS): the verdicts above are decided at
 * head dim 64; each other head dim's programs are verified apart on its
 * first call (a short forward per 16-bit type, the f16 one also over 4179
 * keys, a paged int8 decode per type; f32: a forward and a decode, short
 * and past 4096 keys). A failure is one log line naming the head dim and
 * the step, and leaves the other head dims on mma. Lock held. */
int attn_mma_usable_for(attn_context *ctx, const attn_problem *p);

/* Why not (or "" while undecided or usable), for attn-info and tests: the
 * 16-bit verdict's reason, or with dt ATTN_F32 the f32 one's. */
const char *attn_mma_why(const attn_context *ctx, attn_dtype dt);

/* Tests only: take ctx's device as capable, with the emulation instead of
 * PTX, so that the gate, the default and the fallback run on any device;
 * resets the decision and the cached plans. */
void attn_mma_assume(attn_context *ctx, int on);
/* Forgets the verdicts (and the plans), to be decided again on the next
 * call: a new kernel folder's sources were never checked. */
void attn_mma_forget(attn_context *ctx);

#endif /* ATTN_ATTENTION_MMA_GATE_H */
