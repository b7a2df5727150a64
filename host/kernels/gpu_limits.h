/* gpu_limits.h -- the limits of the GPUs attn plans for without one at
 * hand, for tools/gpu_programs.c (the programs check-ptx.sh,
 * check-amdgcn.sh and check-intel.sh compile) and tests/test_gpu_plans.c (the same plans run
 * against the reference): one place, so that both mean the same GPU. */
#ifndef ATTN_GPU_LIMITS_H
#define ATTN_GPU_LIMITS_H

#include "kernels/params.h"

/* NVIDIA's H200 as measured there (../shared/gpu/README.md): 48 KiB of
 * __local memory, work-groups of 1024, 132 compute units; mma, the gate's
 * verdict there. */
#define ATTN_GPU_LIMITS_H200 {CL_DEVICE_TYPE_GPU, 48 * 1024, 1024, 132, 1, 0}
/* An AMD GPU as ROCm's OpenCL reports it: 64 KiB of __local memory,
 * work-groups of at most 256 by default, 110 compute units (an MI250X
 * die); no mma (mma_gate.c verifies NVIDIA's PTX only). */
#define ATTN_GPU_LIMITS_AMD {CL_DEVICE_TYPE_GPU, 64 * 1024, 256, 110, 0, 0}
/* An Intel GPU as its OpenCL runtime (NEO) reports an Arc A770: 64 KiB of
 * __local memory, work-groups of 1024, 512 compute units (its EUs); no
 * mma. */
#define ATTN_GPU_LIMITS_INTEL {CL_DEVICE_TYPE_GPU, 64 * 1024, 1024, 512, 0, 0}
/* Intel's data-centre GPU, a Data Center GPU Max 1100 (Xe-HPC, Ponte
 * Vecchio): 128 KiB of __local memory, work-groups of 1024, 448 EUs. */
#define ATTN_GPU_LIMITS_INTEL_PVC {CL_DEVICE_TYPE_GPU, 128 * 1024, 1024, 448, 0, 0}

#endif /* ATTN_GPU_LIMITS_H */
