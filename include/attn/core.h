/* attn/core.h -- part of attn's public API (applications include attn.h):
 * the version, status codes, contexts and their accessors, device
 * selection, storage types, and the tensor, problem and lengths that every
 * attention call takes. */
#ifndef ATTN_PUBLIC_CORE_H
#define ATTN_PUBLIC_CORE_H

/* attn needs only OpenCL 1.2's API. An application that calls newer
 * OpenCL itself defines CL_TARGET_OPENCL_VERSION (200, 300) before
 * including attn.h, or includes CL/cl.h first; attn's build does not
 * impose its own on the application. */
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
#define ATTN_VERSION_MINOR 2
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
    ATTN_ERROR_OUT_OF_MEMORY,    /* host or device allocation failed; also OpenCL's
                                    CL_OUT_OF_RESOURCES, which drivers return when a
                                    launch exceeds the device's resources (the message
                                    names the call and the code) */
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
 *  @return ATTN_SUCCESS and *out, or ATTN_ERROR_NO_DEVICE (no device
 *  matches), ATTN_ERROR_INVALID_ARGUMENT ("P:D" past an int),
 *  ATTN_ERROR_OUT_OF_MEMORY (host memory, or the OpenCL runtime's when
 *  making the context or queue) or ATTN_ERROR_OPENCL. */
ATTN_API attn_status attn_context_create(const char *selector, attn_context **out);

/*! attn_context_create_from_queue() : wraps an application's queue (and its
 *  context and device). The queue is retained while the attn_context lives;
 *  the application keeps its own reference and ownership. */
ATTN_API attn_status attn_context_create_from_queue(cl_command_queue queue, attn_context **out);

/*! attn_context_release() : frees everything attn created; accepts NULL. */
ATTN_API void attn_context_release(attn_context *ctx);

/*! attn_last_error() : the last failure on ctx, in words: the argument at
 *  fault, or the OpenCL call and its code, or the build log's head. Every
 *  message begins with the name of the function that failed
 *  ("attn_forward: q is NULL"). "" when the last call on ctx succeeded.
 *  Valid until the next call on ctx.
 *  attn_last_error(NULL) : the same for the calling thread's last call that
 *  had no context to carry its message: a call given a NULL ctx, cache or
 *  layer ("attn_kv_cache_append: cache is NULL"), attn_context_create*,
 *  attn_select_device, attn_reference_forward, attn_convert_*,
 *  attn_alibi_slopes and attn_kv_cache_bytes. Such a
 *  call clears it when it starts and leaves every context's message alone,
 *  so after one read attn_last_error(NULL), not attn_last_error(ctx), which
 *  still holds ctx's own last failure. Per thread (C11 _Thread_local). */
ATTN_API const char *attn_last_error(const attn_context *ctx);

/*! attn_last_create_error() : why the last attn_context_create*() on this
 *  thread failed: the same text as attn_last_error(NULL). */
ATTN_API const char *attn_last_create_error(void);

ATTN_API cl_context       attn_context_cl_context(const attn_context *ctx);
ATTN_API cl_command_queue attn_context_queue(const attn_context *ctx);
ATTN_API cl_device_id     attn_context_device(const attn_context *ctx);

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
 *  dst holds n elements of the destination type. The storage side (the
 *  void pointer) may have any alignment. */
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

/* An additive mask over the logits, [batch][q_heads][q_len][kv_len] by
 * strides (elements; any of them may be 0 to broadcast that dimension, e.g.
 * stride_batch = stride_head = 0 for one [Sq][Skv] mask for everything).
 * Element [b][h][r][c] is added to the logit of query buffer row r and key
 * buffer row c of batch entry b and query head h (buffer rows: q_start + i
 * and kv_start + j of attn_lengths; in attn_decode, r is the new query's
 * row and c the key's position in the cache). -inf masks the key; so does
 * any value that brings the logit below -FLT_MAX / 2 (in log2 units), as
 * the f32 finfo.min masks of other libraries do (f16's finfo.min, -65504,
 * is only a very negative logit: use -inf). A zero-initialised attn_mask
 * is no mask. A tile of keys whose mask values are all -inf or at most
 * -0.75 * FLT_MAX (finfo.min) is skipped whole; other keys the mask hides
 * are weighted by zero, so their V rows must be finite (0 * inf is NaN); keys
 * outside the lengths, the causal limit and the window are never read.
 * The mask's elements, from its offset to the last its strides reach, must
 * not share bytes with out or lse (the same buffer elsewhere is fine). */
typedef struct attn_mask {
    cl_mem buffer;        /* the device calls' mask (read only), or NULL: no mask */
    const float *host;    /* attn_reference_forward's mask: float, same offset and strides;
                           * set without buffer, the device calls refuse it */
    attn_dtype dtype;     /* of buffer: ATTN_F32 or ATTN_F16 */
    size_t offset;        /* elements from the start to element [0][0][0][0] */
    size_t stride_batch, stride_head, stride_q, stride_kv; /* elements; 0 broadcasts */
    /* 0: the contents may change from call to call. Nonzero: a promise that
     * the buffer holds the same contents in every call made with this
     * buffer and this version, so that attn_forward keeps what its pre-pass
     * learns of the mask (which tiles it hides whole) and skips that pass
     * when the mask comes back. Count it up when you write new contents.
     * The context keeps eight such masks and a reference to their buffers
     * (clRetainMemObject) until attn_context_release_workspace or
     * attn_context_release. */
    unsigned long version;
} attn_mask;

typedef struct attn_problem {
    int batch;     /* B >= 1 */
    int q_heads;   /* Hq >= 1 */
    int kv_heads;  /* Hkv >= 1, Hq % Hkv == 0; query head h reads KV head h / (Hq/Hkv) */
    int head_dim;  /* D, 1..256 */
    int q_len;     /* padded query length: the S of Q's and O's buffers, >= 1 */
    int kv_len;    /* padded key/value length: the S of K's and V's buffers, >= 1 */
    attn_dtype dtype; /* storage type of Q, K, V and O; accumulation is fp32 */
    int causal;    /* nonzero: bottom-right aligned causal mask */
    float scale;   /* logit scale; 0 means 1/sqrt(head_dim). Every logit a
                    * query sees must be finite and |scale * q.k| below
                    * FLT_MAX / (2 log2(e)), about 1.1e38: the kernels work
                    * in log2 units from a running max that starts at
                    * -FLT_MAX / 2. A NaN or infinite logit (NaN or inf in
                    * a visible Q or K row, or past that bound) is outside
                    * the contract: the kernels then hide that key (a NaN
                    * logit where a mask is applied) or give the row zeros
                    * (as for no visible key; with sinks, the sink's LSE),
                    * the same for any decode split count, while the CPU
                    * reference may give NaN; check mode reports the
                    * mismatch. Likewise every V value a query sees must
                    * be finite, and the sum of their magnitudes over a
                    * row's visible keys below FLT_MAX (the kernels add
                    * p * v in fp32 before dividing by the weights' sum):
                    * past that, attn_forward and attn_decode give the
                    * row's O NaN (the reference: inf, or the finite mean
                    * of huge values) */

    /* ---- Variants. Every field zero (as `attn_problem p = {0}` or the
     * positional initialisers of attn 0.2 leave them) is plain attention.
     * Positions: query content index i (attn_lengths) sits at key position
     * p = i + kv_len - q_len of its batch entry (bottom-right, as causal),
     * and key content index j at position j. The logit of (i, j) is
     *     s = softcap(scale * q.k) - alibi_slope[h] * |j - p| + mask,
     * then keys outside the window (and past p when causal) are dropped,
     * and so are keys whose s the bias or the mask brings below
     * -FLT_MAX / 2 in log2 units (attn_mask).
     * See "Attention variants" in README.md for models' settings. ---- */
    int use_window;   /* nonzero: sliding window (Mistral, Gemma, FlashAttention's window_size) */
    int window_left;  /* with use_window: keys p - window_left .. p + window_right are */
    int window_right; /* visible; -1 = unlimited on that side; whole key tiles outside are skipped */
    float softcap;    /* > 0: s = softcap * tanh(s / softcap) before bias and mask (Gemma 2); 0 off */
    /* Attention sinks (gpt-oss): per query head a logit (natural log) that
     * joins each row's softmax denominator and contributes no value:
     * P_j = e^s_j / (sum_k e^s_k + e^sink_h); the LSE includes it, and a
     * row with no visible key but a sink gives zeros and LSE = sink_h (a
     * padding row, outside its entry's queries, keeps LSE -inf).
     * q_heads floats, read at the call: from the host (sinks) or a device
     * buffer (sinks_buffer, >= q_heads floats); at most one of the two.
     * Each is -inf (no sink) or finite with |sink| * log2(e) a float
     * (below about 2.3e38): host sinks outside that are
     * ATTN_ERROR_INVALID_ARGUMENT; a device buffer's are not read before
     * the call, so outside that its rows' results are undefined. */
    const float *sinks;
    cl_mem sinks_buffer;
    /* ALiBi: s -= slope_h * |j - p| (llama.cpp's and FlashAttention's:
     * slope_h * (j - p) under the causal mask). Slopes from alibi_slopes (q_heads
     * floats, host, read at the call) or from alibi_max_bias > 0 as
     * llama.cpp and the ALiBi paper derive them (attn_alibi_slopes); giving
     * both is ATTN_ERROR_INVALID_ARGUMENT. */
    const float *alibi_slopes;
    float alibi_max_bias;
    attn_mask mask;   /* an additive mask (see attn_mask); mask.buffer NULL = none */
    /* Packed variable-length batches (FlashAttention's cu_seqlens): the batch
     * entries are sequences concatenated along one token axis, found by
     * attn_lengths' q_start/kv_start (q_len/kv_len are the axis' lengths).
     * Only each entry's own query rows of out are written (no pad rows),
     * lse is [q_heads][q_len] by buffer row, and q, k, v, out (and the
     * mask) may have stride_batch 0. */
    int packed;
} attn_problem;

/*! attn_alibi_slopes() : the ALiBi slope of each of q_heads heads from
 *  max_bias, as llama.cpp computes them (the ALiBi paper's geometric
 *  sequence, 2^(-8/n)... for max_bias 8 and n a power of two; interleaved
 *  for other head counts). slopes receives q_heads floats. */
ATTN_API attn_status attn_alibi_slopes(int q_heads, float max_bias, float *slopes);

/* Per-batch valid regions within the padded lengths, host arrays of `batch`
 * ints. A NULL array means "full": start 0, length = the padded length.
 * Right padding is start = 0; left padding is start = S - len. */
typedef struct attn_lengths {
    const int *q_start, *q_len, *kv_start, *kv_len;
} attn_lengths;

/*! attn_context_workspace_bytes() : device bytes the context holds in
 *  scratch buffers (grown on demand by attn_forward, attn_decode's split
 *  keys and the materialized path, kept for reuse) and in the tile
 *  summaries of masks with a version (attn_mask.version). */
ATTN_API attn_status attn_context_workspace_bytes(attn_context *ctx, size_t *bytes);
/*! attn_context_release_workspace() : gives those buffers back, drops the
 *  mask summaries and the references the context holds to those masks'
 *  buffers (commands in flight keep what they use); the next call grows
 *  them again. */
ATTN_API attn_status attn_context_release_workspace(attn_context *ctx);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_PUBLIC_CORE_H */
