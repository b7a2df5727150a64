/* launch.h -- building, binding and enqueueing a kernel in one place
 * (launch.c), for every host path: attention (forward, decode, KV append),
 * the CLBlast paths' small kernels and the device measurements. Failure
 * messages name the OpenCL call, the kernel and, for arguments, the index. */
#ifndef ATTN_CORE_LAUNCH_H
#define ATTN_CORE_LAUNCH_H

#include "attn.h"

/* One kernel argument: its size and where its value is. */
typedef struct attn_karg { size_t size; const void *value; } attn_karg;
#define ATTN_KARG(x) {sizeof(x), &(x)}
/* The number of entries of an attn_karg array (an array, not a pointer). */
#define ATTN_NARGS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* A tensor's layout as the kernels take it: (offset, batch, head and
 * sequence strides), in elements, for cl/common.cl's row_index. */
static inline cl_ulong4 attn_tensor_geometry(const attn_tensor *t)
{
    cl_ulong4 g = {{t->offset, t->stride_batch, t->stride_head, t->stride_seq}};
    return g;
}

/* The kernel `name` of program prog; the caller releases it. */
attn_status attn_kernel_create(attn_context *ctx, cl_program prog, const char *name,
                               cl_kernel *out);
/* The kernel `name` of the program built from `sources` with `options`
 * (program.c's caches); the caller releases it. */
attn_status attn_kernel_build(attn_context *ctx, const char *const *sources, int nsources,
                              const char *options, const char *name, cl_kernel *out);
/* A kernel from the program common.cl + file built for storage type dtype
 * (the CLBlast paths' small kernels); the caller releases it. */
attn_status attn_kernel_get(attn_context *ctx, const char *file, attn_dtype dtype,
                            const char *name, cl_kernel *out);
/* Sets arguments 0..n-1 of k in order; stops at the first failure. */
attn_status attn_kernel_set_args(attn_context *ctx, cl_kernel k, const attn_karg *args, int n);
/* Sets arguments first..first+n-1 (a kernel's trailing arguments, such as
 * cl/variants.cl's VARIANT_PARAMS). */
attn_status attn_kernel_set_args_at(attn_context *ctx, cl_kernel k, int first,
                                    const attn_karg *args, int n);
/* clEnqueueNDRangeKernel on ctx's queue (no offset), after the nwait events
 * of wait, handing back its event when event is not NULL. */
attn_status attn_kernel_enqueue(attn_context *ctx, cl_kernel k, cl_uint dims, const size_t *global,
                                const size_t *local, cl_uint nwait, const cl_event *wait,
                                cl_event *event);
/* Sets n arguments and enqueues the kernel on ctx's queue (no event);
 * nothing is enqueued when a global size is 0. */
attn_status attn_kernel_run(attn_context *ctx, cl_kernel k, const attn_karg *args, int n,
                            cl_uint dims, const size_t *global, const size_t *local);
/* On an out-of-order queue, a barrier between dependent steps; else nothing. */
attn_status attn_queue_order(attn_context *ctx);
/* The same after a command (ev, or NULL: attn_queue_order) whose effect the
 * caller already counts on (a cache's lengths have grown): when the barrier
 * cannot be enqueued, the host waits for ev instead, which orders later
 * commands as well; an error only when both fail. */
attn_status attn_queue_order_after(attn_context *ctx, cl_event ev);

#endif /* ATTN_CORE_LAUNCH_H */
