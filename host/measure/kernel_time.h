/* kernel_time.h -- one timed launch of a 1-D kernel (kernel_time.c), as
 * the device measurements (peak.c, copy_bw.c) take it. */
#ifndef ATTN_MEASURE_KERNEL_TIME_H
#define ATTN_MEASURE_KERNEL_TIME_H

#include "attn.h"

/* Enqueues k (its arguments set) over global work-items in work-groups of
 * local (0: the runtime's choice), waits, and puts its time in *ms: from
 * the profiling events when ctx's queue has them, else the host's wall
 * time around the launch, the wait and clFinish. */
attn_status attn_kernel_time(attn_context *ctx, cl_kernel k, size_t global, size_t local,
                             double *ms);

#endif /* ATTN_MEASURE_KERNEL_TIME_H */
