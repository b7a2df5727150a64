/* mma_check.h -- the check of the mma family's fragment operations
 * (cl/mma_ops.cl) on the context's device: mma_check.c. */
#ifndef ATTN_KERNELS_MMA_CHECK_H
#define ATTN_KERNELS_MMA_CHECK_H

#include "attn.h"

#include <stddef.h>

/* The operations a check covers, each its own program, so that a compiler
 * that refuses one part (an instruction it does not take) leaves the other:
 * what f16 and bf16 run (their m16n8k16 products, the shuffle, the 16-bit
 * packs), or what f32 adds (the m16n8k8 tf32 product, tf32 rounding). */
enum { ATTN_MMA_CHECK_16 = 0, ATTN_MMA_CHECK_TF32 = 1 };

/* Builds cl/mma_check.cl for part (with ptx: -DMMA_PTX=1, NVIDIA's inline
 * PTX; else the emulation), runs it on one warp and compares the part's
 * results with the host's, exactly. *ok = 1 when all agree; else 0 and why
 * names the first difference. Returns a failure status (build, run) with
 * ctx's error set; a wrong result is not one. */
attn_status attn_mma_check(attn_context *ctx, int ptx, int part, int *ok, char *why,
                           size_t whysize);

#endif /* ATTN_KERNELS_MMA_CHECK_H */
