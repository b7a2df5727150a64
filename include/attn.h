/* attn.h -- the one header applications include for libattn: tiled
 * (FlashAttention-style) causal attention with padding masks and GQA/MQA,
 * built as OpenCL kernels at run time for any OpenCL 1.2+ device, checked
 * against a CPU reference. The API is declared by concern in attn/ (core,
 * config, forward, decode, blas), all included here.
 *
 * Ownership: the caller owns every cl_mem, queue and event it passes in.
 * Threads: an attn_context may be used from several threads; calls on one
 * context are serialised by a lock inside it. Details at the end. */
#ifndef ATTN_H
#define ATTN_H

#include "attn/core.h"
#include "attn/config.h"
#include "attn/forward.h"
#include "attn/decode.h"
#include "attn/blas.h"

/* ---- Threads: what may be shared ----
 *
 * - One attn_context, many threads: every call on a context takes the
 *   context's lock, so calls on one context run one at a time (enqueueing
 *   is quick; a first call that builds a program holds the lock for the
 *   build). Threads that want builds or check mode in parallel use one
 *   context each, on the same device if they like.
 * - attn_last_error(ctx) is the message of the last call on ctx, by any
 *   thread ("" after a success). With threads sharing a context, read it
 *   only while no other thread is inside a call on ctx, or give each thread
 *   its own context. attn_last_error(NULL) and attn_last_create_error() are
 *   per thread.
 * - attn_context_release(ctx) must come after every other thread's last
 *   call on ctx has returned.
 * - ctx's queue: attn enqueues on it inside the lock. An application that
 *   enqueues on the same queue from other threads orders those commands
 *   itself (clFinish, events, or its own lock).
 * - No shared state, any thread, any time: attn_reference_forward,
 *   attn_convert_*, attn_tolerance, attn_status_name, attn_dtype_*,
 *   attn_version*, attn_select_device. Creating contexts from several
 *   threads at once is safe too, also as the process's first OpenCL calls
 *   (attn walks the devices one thread at a time: an OpenCL driver's first
 *   discovery need not be thread-safe, and PoCL's is not).
 * - The program cache on disk is safe across threads and processes (each
 *   file is written to a temporary name and renamed).
 * - ATTN_* environment variables are read when a context is created
 *   (ATTN_LOG once per process; attn_context_set_tuning_db with a NULL
 *   path reads the default's): change them only while no other thread is
 *   creating a context or in those calls. A change never reaches an
 *   existing context.
 *
 * tests/test_threads.c checks this under ThreadSanitizer
 * (tools/check-tsan.sh). */

#endif /* ATTN_H */
