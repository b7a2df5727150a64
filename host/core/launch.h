/* launch.h -- a kernel by file and storage type, its arguments set and
 * enqueued in one call (launch.c); used by the CLBlast paths' small kernels. */
#ifndef ATTN_CORE_LAUNCH_H
#define ATTN_CORE_LAUNCH_H

#include "attn.h"


/* A kernel from the program common.cl + file built for storage type dtype
 * (launch.c); the caller releases it. */
attn_status attn_kernel_get(attn_context *ctx, const char *file, attn_dtype dtype,
                            const char *name, cl_kernel *out);
typedef struct attn_karg { size_t size; const void *value; } attn_karg;
#define ATTN_KARG(x) {sizeof(x), &(x)}
/* Sets n arguments and enqueues the kernel on ctx's queue (no event). */
attn_status attn_kernel_run(attn_context *ctx, cl_kernel k, const attn_karg *args, int n,
                            cl_uint dims, const size_t *global, const size_t *local);
/* On an out-of-order queue, a barrier between dependent steps; else nothing. */
attn_status attn_queue_order(attn_context *ctx);

#endif /* ATTN_CORE_LAUNCH_H */
