/* mma_check.h -- the check of the mma family's fragment operations
 * (cl/mma_ops.cl) on the context's device: mma_check.c. */
#ifndef ATTN_KERNELS_MMA_CHECK_H
#define ATTN_KERNELS_MMA_CHECK_H

#include "attn.h"

#include <stddef.h>

/* Builds cl/mma_check.cl (with ptx: -DMMA_PTX=1, NVIDIA's inline PTX; else
 * the emulation), runs it on one warp and compares every result with the
 * host's, exactly. *ok = 1 when all agree; else 0 and why names the first
 * difference. Returns a failure status (build, run) with ctx's error set;
 * a wrong result is not one. */
attn_status attn_mma_check(attn_context *ctx, int ptx, int *ok, char *why, size_t whysize);

#endif /* ATTN_KERNELS_MMA_CHECK_H */
