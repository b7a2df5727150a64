/* attn.h -- the one public header of libattn: tiled (FlashAttention-style)
 * causal attention with padding masks and GQA/MQA, built as OpenCL kernels
 * at run time for any OpenCL 1.2+ device, checked against a CPU reference.
 *
 * Ownership: the caller owns every cl_mem, queue and event it passes in.
 * Threads: an attn_context may be used from several threads; calls on one
 * context are serialised by a lock inside it. Details at the end. */
#ifndef ATTN_H
#define ATTN_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define ATTN_API __attribute__((visibility("default")))
#else
#define ATTN_API
#endif

#define ATTN_VERSION_MAJOR 0
#define ATTN_VERSION_MINOR 1
#define ATTN_VERSION_PATCH 0
#define ATTN_VERSION_NUMBER \
    (ATTN_VERSION_MAJOR * 10000 + ATTN_VERSION_MINOR * 100 + ATTN_VERSION_PATCH)

/*! attn_version() : @return ATTN_VERSION_NUMBER of the library actually linked. */
ATTN_API unsigned attn_version(void);
/*! attn_version_string() : @return "MAJOR.MINOR.PATCH" of the linked library. */
ATTN_API const char *attn_version_string(void);

typedef enum attn_status {
    ATTN_SUCCESS = 0,
    ATTN_ERROR_INVALID_ARGUMENT, /* bad shape, NULL, inconsistent sizes, buffer too small */
    ATTN_ERROR_UNSUPPORTED,      /* a valid request this device or build cannot serve */
    ATTN_ERROR_NO_DEVICE,        /* no OpenCL device matches the selector */
    ATTN_ERROR_OPENCL,           /* an OpenCL call failed */
    ATTN_ERROR_BUILD,            /* a kernel failed to build */
    ATTN_ERROR_OUT_OF_MEMORY,    /* host or device allocation failed */
    ATTN_ERROR_TUNING_DB,        /* unreadable or corrupt tuning database */
    ATTN_ERROR_IO,               /* a file could not be read or written */
    ATTN_ERROR_MISMATCH          /* check mode: a result differs from the CPU reference */
} attn_status;

/*! attn_status_name() : @return a constant name such as "ATTN_ERROR_BUILD";
 *  "ATTN_STATUS_UNKNOWN" for a value outside the enum. */
ATTN_API const char *attn_status_name(attn_status s);

typedef struct attn_context attn_context;

/*! attn_context_create() :
 *  selector: NULL or "" = $ATTN_DEVICE if set, else the first GPU, else the
 *  first device; "P:D" = platform and device index; otherwise a
 *  case-insensitive substring of platform, vendor or device name
 *  ("nvidia", "pocl", "cpu").  Creates its own cl_context and an in-order
 *  queue with profiling enabled.
 *  @return ATTN_SUCCESS and *out, or ATTN_ERROR_NO_DEVICE / _OPENCL. */
ATTN_API attn_status attn_context_create(const char *selector, attn_context **out);

/*! attn_context_create_from_queue() : wraps an application's queue (and its
 *  context and device). The queue is retained while the attn_context lives;
 *  the application keeps its own reference and ownership. */
ATTN_API attn_status attn_context_create_from_queue(cl_command_queue queue, attn_context **out);

/*! attn_context_release() : frees everything attn created; accepts NULL. */
ATTN_API void attn_context_release(attn_context *ctx);

/*! attn_last_error() : the last failure on ctx, in words: the argument at
 *  fault, or the OpenCL call and its code, or the build log's head.
 *  "" when nothing failed; "(null context)" for NULL. Valid until the next
 *  call on ctx. */
ATTN_API const char *attn_last_error(const attn_context *ctx);

/*! attn_last_create_error() : why the last attn_context_create*() on this
 *  thread failed (no context exists to carry it). */
ATTN_API const char *attn_last_create_error(void);

ATTN_API cl_context       attn_context_cl_context(const attn_context *ctx);
ATTN_API cl_command_queue attn_context_queue(const attn_context *ctx);
ATTN_API cl_device_id     attn_context_device(const attn_context *ctx);

/*! attn_context_set_check() : check mode on (1) or off (0). When on, every
 *  attn_forward waits for its result, reads back the inputs and output,
 *  recomputes them with attn_reference_forward and returns
 *  ATTN_ERROR_MISMATCH (worst element in attn_last_error) when any element
 *  is beyond the DESIGN tolerance. ATTN_CHECK=1 in the environment turns it
 *  on for every new context. */
ATTN_API attn_status attn_context_set_check(attn_context *ctx, int enable);

/*! attn_select_device() : resolves a selector (rules as attn_context_create)
 *  without creating anything. */
ATTN_API attn_status attn_select_device(const char *selector, cl_platform_id *platform,
                               cl_device_id *device);

typedef enum attn_dtype {
    ATTN_F32,  /* IEEE binary32 */
    ATTN_F16,  /* IEEE binary16, read with vload_half: no cl_khr_fp16 needed */
    ATTN_BF16  /* bfloat16 as raw 16-bit words (top half of a binary32) */
} attn_dtype;

/*! attn_dtype_size() : bytes per element; 0 for an unknown dtype. */
ATTN_API size_t attn_dtype_size(attn_dtype t);
/*! attn_dtype_name() : "f32", "f16", "bf16"; NULL for an unknown dtype. */
ATTN_API const char *attn_dtype_name(attn_dtype t);

/*! attn_convert_from_f32() / attn_convert_to_f32() : host conversions between
 *  float and a storage type (round to nearest even, NaN kept a NaN).
 *  dst holds n elements of the destination type. */
ATTN_API attn_status attn_convert_from_f32(attn_dtype t, const float *src, void *dst, size_t n);
ATTN_API attn_status attn_convert_to_f32(attn_dtype t, const void *src, float *dst, size_t n);

/* A 4-D tensor [batch, heads, seq, head_dim] inside a cl_mem. The head
 * dimension is contiguous; the rest is strides, so BHSD, BSHD, a KV cache
 * with spare capacity and a fused QKV buffer are all expressible. */
typedef struct attn_tensor {
    cl_mem buffer;       /* holds elements of the problem's dtype */
    size_t offset;       /* elements from the start of buffer to element [0,0,0,0] */
    size_t stride_batch; /* elements between consecutive batch entries */
    size_t stride_head;  /* elements between consecutive heads */
    size_t stride_seq;   /* elements between consecutive sequence positions */
} attn_tensor;

typedef struct attn_problem {
    int batch;     /* B >= 1 */
    int q_heads;   /* Hq >= 1 */
    int kv_heads;  /* Hkv >= 1, Hq % Hkv == 0; query head h reads KV head h / (Hq/Hkv) */
    int head_dim;  /* D, 1..256 */
    int q_len;     /* padded query length: the S of Q's and O's buffers, >= 1 */
    int kv_len;    /* padded key/value length: the S of K's and V's buffers, >= 1 */
    attn_dtype dtype; /* storage type of Q, K, V and O; accumulation is fp32 */
    int causal;    /* nonzero: bottom-right aligned causal mask */
    float scale;   /* logit scale; 0 means 1/sqrt(head_dim) */
} attn_problem;

/* Per-batch valid regions within the padded lengths, host arrays of `batch`
 * ints. A NULL array means "full": start 0, length = the padded length.
 * Right padding is start = 0; left padding is start = S - len. */
typedef struct attn_lengths {
    const int *q_start, *q_len, *kv_start, *kv_len;
} attn_lengths;

/*! attn_forward() :
 *  Enqueues O = softmax(mask(scale * Q K^T)) V on ctx's queue.
 *  Query content index i (row q_start+i) sees key content index j (row
 *  kv_start+j) iff j < kv_len and, when causal, j <= i + (kv_len - q_len).
 *  Every row of `out` inside [0, q_len) is written; rows with no visible key
 *  get zeros (and -inf in lse). lse: NULL, or a cl_mem of >= B*Hq*Sq floats,
 *  written [B, Hq, Sq] as natural-log sum-exp of the scaled, masked logits.
 *  done: NULL, or receives the completion event (caller releases it).
 *  All arguments are validated before anything is enqueued. */
ATTN_API attn_status attn_forward(attn_context *ctx, const attn_problem *p,
                         const attn_tensor *q, const attn_tensor *k,
                         const attn_tensor *v, const attn_tensor *out,
                         const attn_lengths *lengths, cl_mem lse,
                         cl_event *done);

/*! attn_reference_forward() : the CPU reference. Contiguous BHSD float
 *  arrays (Q and O [B,Hq,Sq,D], K and V [B,Hkv,Skv,D]), double accumulation,
 *  the same semantics as attn_forward (p->dtype is ignored: float in, float
 *  out). lengths and lse may be NULL. */
ATTN_API attn_status attn_reference_forward(const attn_problem *p, const float *q,
                                   const float *k, const float *v, float *out,
                                   const attn_lengths *lengths, float *lse);

/*! attn_tolerance() : the DESIGN tolerance for a storage type:
 *  |out - ref| <= atol + rtol * |ref|. */
ATTN_API void attn_tolerance(attn_dtype t, double *atol, double *rtol);

/* Which kernel family runs a problem, and where its parameters came from. */
typedef struct attn_plan_info {
    char family[16];   /* "tiled" (GPU-style) or "vector" (CPU-style) */
    char params[160];  /* the tunables, "name=value,..." */
    char source[16];   /* "tuned", "stale", "heuristic" or "override" */
} attn_plan_info;

/*! attn_prepare() : builds (or loads from the cache) the kernels for p ahead
 *  of time and reports the plan. info may be NULL. */
ATTN_API attn_status attn_prepare(attn_context *ctx, const attn_problem *p, attn_plan_info *info);

/*! attn_device_peak_gflops() : measures the device's fp32 FMA throughput
 *  with a small kernel through this context's runtime (clpeak's method:
 *  warm-up, then timed with profiling events). */
ATTN_API attn_status attn_device_peak_gflops(attn_context *ctx, double *gflops);

/* ---- Threads: what may be shared ----
 *
 * - One attn_context, many threads: every call on a context takes the
 *   context's lock, so calls on one context run one at a time (enqueueing
 *   is quick; a first call that builds a program holds the lock for the
 *   build). Threads that want builds or check mode in parallel use one
 *   context each, on the same device if they like.
 * - attn_last_error(ctx) is the message of the last failed call on ctx, by
 *   any thread. With threads sharing a context, read it only while no other
 *   thread is inside a call on ctx, or give each thread its own context.
 *   attn_last_create_error() is per thread.
 * - attn_context_release(ctx) must come after every other thread's last
 *   call on ctx has returned.
 * - ctx's queue: attn enqueues on it inside the lock. An application that
 *   enqueues on the same queue from other threads orders those commands
 *   itself (clFinish, events, or its own lock).
 * - No shared state, any thread, any time: attn_reference_forward,
 *   attn_convert_*, attn_tolerance, attn_status_name, attn_dtype_*,
 *   attn_version*, attn_select_device.
 * - The program cache on disk is safe across threads and processes (each
 *   file is written to a temporary name and renamed).
 * - ATTN_* environment variables are read during calls: do not change
 *   them while other threads are calling attn.
 *
 * tests/test_threads.c checks this under ThreadSanitizer
 * (tools/check-tsan.sh). */

#ifdef __cplusplus
}
#endif
#endif /* ATTN_H */
