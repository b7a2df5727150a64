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
 *  fault, or the OpenCL call and its code, or the build log's head. Every
 *  message begins with the name of the function that failed
 *  ("attn_forward: q is NULL"). "" when the last call on ctx succeeded.
 *  Valid until the next call on ctx.
 *  attn_last_error(NULL) : the same for the calling thread's last call that
 *  had no context to carry its message: a call given a NULL ctx, cache or
 *  layer ("attn_kv_cache_append: cache is NULL"), attn_context_create*,
 *  attn_select_device, attn_reference_forward and attn_convert_*. Such a
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

/*! attn_context_set_check() : check mode on (1) or off (0). When on, every
 *  attn_forward waits for its result, reads back the inputs and output,
 *  recomputes them with attn_reference_forward and returns
 *  ATTN_ERROR_MISMATCH (worst element in attn_last_error) when any element
 *  is beyond the DESIGN tolerance. ATTN_CHECK=1 in the environment turns it
 *  on for every new context. */
ATTN_API attn_status attn_context_set_check(attn_context *ctx, int enable);

/*! attn_context_set_params() : overrides the kernel parameters every
 *  attn_forward, attn_prepare, attn_decode and attn_decode_prepare on ctx
 *  plans with, over the heuristic's or the tuning database's choice:
 *  "name=value" pairs separated by commas, as ATTN_PARAMS
 *  ("family=tiled,rows=16"; names not given keep the planned value;
 *  family is tiled or vector). NULL or "" clears the override. The text is
 *  checked now: an unknown name, a value that is not an integer, outside
 *  its range or not a power of two where one is needed is
 *  ATTN_ERROR_INVALID_ARGUMENT naming it, and the previous override stays.
 *  What depends on the problem (local memory, the work-group limit, keys a
 *  multiple of vec) is checked by each call, which then fails with
 *  ATTN_ERROR_INVALID_ARGUMENT. attn_prepare reports the source
 *  "override". ATTN_PARAMS in the environment is every new context's
 *  initial override. */
ATTN_API attn_status attn_context_set_params(attn_context *ctx, const char *params);

/*! attn_context_set_tuning_db() : the tuning databases ctx reads (attn-tune
 *  writes them): user_path, then the read-only system_path. NULL means the
 *  default, from the environment as it is now: user_path $ATTN_TUNING_DB,
 *  else $XDG_DATA_HOME/attn/tuning.json, else
 *  ~/.local/share/attn/tuning.json; system_path $ATTN_SYSTEM_TUNING_DB,
 *  else the build's default. "" means none. Every new context starts with
 *  the defaults. The files are read again on the next call that plans. */
ATTN_API attn_status attn_context_set_tuning_db(attn_context *ctx, const char *user_path,
                                                const char *system_path);

/* How much attn says. */
typedef enum attn_log_level {
    ATTN_LOG_ERROR = 0, /* a failure attn could not report through a status */
    ATTN_LOG_WARN = 1,  /* a problem worked around (unusable tuning database, stale entry) */
    ATTN_LOG_INFO = 2,  /* a choice made (an override applied, the device chosen) */
    ATTN_LOG_DEBUG = 3  /* what was looked up, built and loaded, and every failure */
} attn_log_level;

/* A log message: one line, no newline; valid during the call only. */
typedef void (*attn_log_fn)(attn_log_level level, const char *message, void *user);

/*! attn_set_log_callback() : sends attn's messages of max_level and more
 *  severe to fn (with user), process-wide, instead of stderr. Calls of fn
 *  are serialized; fn must not call attn. NULL fn restores stderr at the
 *  level ATTN_LOG names (error, warn, info, debug or none; default warn).
 *  Thread-safe: after it returns, the previous fn is no longer called. */
ATTN_API void attn_set_log_callback(attn_log_fn fn, void *user, attn_log_level max_level);

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
 *  out->buffer and lse are written by kernels: one created CL_MEM_READ_ONLY
 *  is ATTN_ERROR_INVALID_ARGUMENT naming it (q, k and v may be read-only).
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

/* ---- KV cache and decode ------------------------------------------------
 * During generation a runtime keeps each layer's keys and values and runs
 * attention for one new query (or a few, for speculative decoding) against
 * the whole prefix. An attn_kv_cache holds K and V for a batch of sequences,
 * each with its own length; attn_decode runs those queries against it,
 * splitting long prefixes into chunks processed in parallel and combined by
 * their LSEs (flash-decoding). Positions are absolute: row j of sequence b
 * always holds the K/V of that sequence's token j, so keys and their
 * positions cannot drift apart. */

typedef struct attn_kv_cache attn_kv_cache;

/*! attn_kv_cache_create() :
 *  Allocates on ctx's device K and V for `batch` sequences of up to
 *  `capacity` tokens each, with `kv_heads` heads of `head_dim` (1..256)
 *  elements, stored as `dtype`. Every sequence starts empty. The cache
 *  works through ctx (its queue, its lock; its failures are reported by
 *  attn_last_error(ctx)) and must be released before ctx.
 *  @return ATTN_SUCCESS and *out; ATTN_ERROR_INVALID_ARGUMENT naming a bad
 *  size; ATTN_ERROR_OUT_OF_MEMORY when the device cannot hold it. */
ATTN_API attn_status attn_kv_cache_create(attn_context *ctx, int batch, int kv_heads,
                                          int head_dim, int capacity, attn_dtype dtype,
                                          attn_kv_cache **out);

/*! attn_kv_cache_release() : frees the cache's device buffers; accepts NULL. */
ATTN_API void attn_kv_cache_release(attn_kv_cache *cache);

/*! attn_kv_cache_append() :
 *  Enqueues the copy of a block of new keys and values to the end of each
 *  sequence (a ragged batch). k and v are [batch, kv_heads, block_len,
 *  head_dim] tensors of the cache's dtype in any strides (a projection's
 *  output can be appended as it is). Sequence b takes rows
 *  0..counts[b]-1 of the block (counts NULL: block_len rows each; a count
 *  may be 0) and stores them at its positions len[b]..len[b]+counts[b]-1;
 *  its length grows by counts[b].
 *  All sequences are checked before anything is enqueued: one that would
 *  pass the capacity is ATTN_ERROR_INVALID_ARGUMENT naming it, and no
 *  sequence changes. A failed append (for any reason) leaves the cache
 *  without this step's keys, so attn_decode refuses the cache until an
 *  append succeeds (truncate and reset do not lift that).
 *  done: NULL, or receives the completion event. */
ATTN_API attn_status attn_kv_cache_append(attn_kv_cache *cache, const attn_tensor *k,
                                          const attn_tensor *v, int block_len,
                                          const int *counts, cl_event *done);

/*! attn_kv_cache_lengths() : copies each sequence's current length (tokens
 *  appended and not truncated) into lengths[0..batch-1]. */
ATTN_API attn_status attn_kv_cache_lengths(const attn_kv_cache *cache, int *lengths);

/*! attn_kv_cache_truncate() : shortens sequence `seq` to `length` tokens,
 *  0 <= length <= its current length (e.g. to drop rejected speculative
 *  tokens); the next append writes at position `length`. Enqueues nothing.
 *  A length below zero or above the current one is
 *  ATTN_ERROR_INVALID_ARGUMENT and changes nothing. */
ATTN_API attn_status attn_kv_cache_truncate(attn_kv_cache *cache, int seq, int length);

/*! attn_kv_cache_reset() : empties sequence `seq`, or every sequence when
 *  seq is -1. */
ATTN_API attn_status attn_kv_cache_reset(attn_kv_cache *cache, int seq);

/*! attn_kv_cache_tensors() : the cache's K and V in the plain layout, as
 *  attn_tensors of shape [batch, kv_heads, capacity, head_dim] (the row
 *  stride may exceed head_dim). They can be read by the caller or passed to
 *  attn_forward with p->kv_len = capacity and lengths->kv_len = the
 *  sequences' lengths. Either pointer may be NULL. */
ATTN_API attn_status attn_kv_cache_tensors(const attn_kv_cache *cache, attn_tensor *k,
                                           attn_tensor *v);

/* The largest p->q_len attn_decode takes; longer blocks are a prefill
 * (attn_forward over attn_kv_cache_tensors). */
#define ATTN_DECODE_MAX_Q_LEN 64

/*! attn_decode() :
 *  Enqueues attention of a few new queries per sequence against the cache.
 *  p->batch, p->kv_heads, p->head_dim and p->dtype must equal the cache's
 *  (ATTN_ERROR_INVALID_ARGUMENT naming both otherwise); p->q_heads is a
 *  multiple of kv_heads (GQA/MQA: no copies); p->q_len, 1..
 *  ATTN_DECODE_MAX_Q_LEN, is the padded number of new query rows; p->kv_len
 *  is not used (the cache's lengths are). q and out are [batch, q_heads,
 *  q_len, head_dim] (out may be q itself). Sequence b's queries are rows
 *  0..q_lens[b]-1 (q_lens NULL: q_len each; 0 allowed) and are its LAST
 *  q_lens[b] tokens, whose K/V must already be appended (the cache's last
 *  attn_kv_cache_append must have succeeded: after a failed one, decode is
 *  ATTN_ERROR_INVALID_ARGUMENT repeating the append's message, until an
 *  append succeeds; it would otherwise attend for the previous token): with L tokens in
 *  the cache, query row i is token L - q_lens[b] + i and sees keys
 *  0..L - q_lens[b] + i when p->causal (bottom-right inside the new block),
 *  all L keys otherwise. Rows past q_lens[b] get zeros and -inf LSE.
 *  lse: NULL or >= batch * q_heads * q_len floats, [B, Hq, q_len], natural
 *  log (out and lse not CL_MEM_READ_ONLY, as for attn_forward). The result equals attn_forward over attn_kv_cache_tensors with
 *  lengths {q_len = q_lens, kv_len = the cache's lengths}, within the DESIGN
 *  tolerance. Long prefixes are split into chunks that run in parallel and
 *  are combined with their LSEs; the number of splits comes from the
 *  device's compute units and the longest prefix (an override's splits=N,
 *  attn_context_set_params, replaces it). Check mode verifies decode like attn_forward.
 *  done: NULL, or receives the completion event. */
ATTN_API attn_status attn_decode(attn_context *ctx, attn_kv_cache *cache, const attn_problem *p,
                                 const attn_tensor *q, const attn_tensor *out, const int *q_lens,
                                 cl_mem lse, cl_event *done);

/*! attn_decode_prepare() : builds (or loads) the decode kernels for p
 *  against the cache and reports the plan; info->params ends with the
 *  number of splits chosen for the cache's current lengths. info may be
 *  NULL. */
ATTN_API attn_status attn_decode_prepare(attn_context *ctx, attn_kv_cache *cache,
                                         const attn_problem *p, attn_plan_info *info);

/*! attn_device_copy_gbps() : the device's global-memory copy bandwidth in
 *  GB/s (bytes read plus bytes written, 1e9 per GB) measured with a plain
 *  copy kernel over buffers larger than the caches (clpeak's method), the
 *  yardstick for memory-bound work such as decode. */
ATTN_API attn_status attn_device_copy_gbps(attn_context *ctx, double *gbps);
/* ==== Materialized attention, attention weights and the attention layer ====
 * (CLBlast paths.) GEMMs run through CLBlast in f32: its half-precision
 * routines need cl_khr_fp16, which PoCL and NVIDIA's OpenCL lack, so f16 and
 * bf16 data are widened to f32 temporaries on the device, multiplied in f32
 * (f32 accumulation, as everywhere in attn) and narrowed back, rounding to
 * nearest even.
 * CLBlast is optional at build time (ATTN_WITH_CLBLAST, README.md). In a
 * build without it, attn_forward_materialized, attn_attention_weights and
 * attn_layer_create validate their arguments as usual (a bad one is still
 * ATTN_ERROR_INVALID_ARGUMENT naming it), then return ATTN_ERROR_UNSUPPORTED
 * with the message "<function>: this build of attn has no CLBlast (...)",
 * having done nothing; attn_layer_forward then has no layer to run. */

/*! attn_has_clblast() : @return 1 when this library was built with CLBlast
 *  (the functions below work), 0 when they return ATTN_ERROR_UNSUPPORTED. */
ATTN_API int attn_has_clblast(void);

/*! attn_forward_materialized() :
 *  The same contract, arguments and outputs as attn_forward (zeros and -inf
 *  LSE for rows with no visible key, out may be q, check mode applies), done
 *  the usual way: per batch entry, S = Q K^T for all query heads by one
 *  CLBlast batched GEMM over that entry's content rows and keys (K/V heads
 *  broadcast to their query heads by offsets, never copied), a kernel that
 *  scales, masks and soft-maxes each row in fp32, then O = P V by GEMMs.
 *  A baseline for the tiled kernels and an independent check of them.
 *  It needs one device buffer of q_heads x q_len x kv_len floats (padded
 *  lengths) and, for f16/bf16, f32 copies of Q, K, V and O; when any would
 *  exceed CL_DEVICE_MAX_MEM_ALLOC_SIZE it returns ATTN_ERROR_UNSUPPORTED
 *  before doing anything. CLBlast may allocate temporaries of its own. The
 *  context keeps its buffers for reuse (attn_context_release_workspace). */
ATTN_API attn_status attn_forward_materialized(attn_context *ctx, const attn_problem *p,
                                               const attn_tensor *q, const attn_tensor *k,
                                               const attn_tensor *v, const attn_tensor *out,
                                               const attn_lengths *lengths, cl_mem lse,
                                               cl_event *done);

/*! attn_attention_weights() :
 *  The softmax weights of one batch entry and query head, through the
 *  materialized path, for diagnostics: weights (host, q_len x kv_len
 *  floats, row-major, padded lengths) receives at [i][j] how much query row i
 *  took from key row j. Each visible row sums to one; masked keys, pad keys
 *  and pad rows are exactly zero. Blocking; the array is written only on
 *  success. (Attention weights show how one head mixed values, not why a
 *  model predicted what it did.) */
ATTN_API attn_status attn_attention_weights(attn_context *ctx, const attn_problem *p,
                                            const attn_tensor *q, const attn_tensor *k,
                                            const attn_lengths *lengths, int batch_index,
                                            int head, float *weights);

/*! attn_context_workspace_bytes() : device bytes the context holds in
 *  scratch buffers (grown on demand by attn_forward and the materialized
 *  path, kept for reuse). */
ATTN_API attn_status attn_context_workspace_bytes(attn_context *ctx, size_t *bytes);
/*! attn_context_release_workspace() : gives those buffers back (commands
 *  in flight keep what they use); the next call grows them again. */
ATTN_API attn_status attn_context_release_workspace(attn_context *ctx);

/* The attention layer of the seed (ReadableCausalAttention) with GQA:
 * y = out_proj(attention(q_proj(x), k_proj(x), v_proj(x))), bias-free. */
typedef struct attn_layer attn_layer;

typedef struct attn_layer_config {
    int d_model;      /* model width: rows of hidden and out have d_model elements */
    int q_heads;      /* Hq; q_proj maps d_model -> Hq * head_dim */
    int kv_heads;     /* Hkv, Hq % Hkv == 0; k_proj, v_proj map d_model -> Hkv * head_dim */
    int head_dim;     /* D, 1..256 */
    attn_dtype dtype; /* storage of hidden, out and the projections' outputs */
    int causal;       /* nonzero: bottom-right aligned causal mask */
    float scale;      /* 0 means 1/sqrt(head_dim) */
} attn_layer_config;

/*! attn_layer_create() :
 *  Weights are host float arrays in PyTorch's nn.Linear layout, [out][in]
 *  row-major (a module's `weight.data` as is), y = x W^T:
 *  w_q [Hq*D][d_model], w_k and w_v [Hkv*D][d_model], w_o [d_model][Hq*D].
 *  Column h*D + d of a projection's output is head h, dimension d (the
 *  seed's split_heads). The layer copies them to the device (rounded through
 *  cfg->dtype, held as f32 for CLBlast); the caller may free them. The layer
 *  uses ctx (release the layer first) and owns its intermediate buffers,
 *  grown as needed and reused across calls. */
ATTN_API attn_status attn_layer_create(attn_context *ctx, const attn_layer_config *cfg,
                                       const float *w_q, const float *w_k, const float *w_v,
                                       const float *w_o, attn_layer **out);
/*! attn_layer_release() : frees the layer's buffers; accepts NULL. */
ATTN_API void attn_layer_release(attn_layer *layer);

/* Where a layer forward spent its time (filled when asked for). */
typedef struct attn_layer_timing {
    double projection_ms; /* q/k/v projections (one fused GEMM) and out_proj, with conversions */
    double attention_ms;  /* attn_forward */
} attn_layer_timing;

/*! attn_layer_forward() :
 *  hidden and out: cl_mems holding [batch][seq][d_model] elements of
 *  cfg->dtype, contiguous, from element offsets hidden_offset / out_offset
 *  (they may be the same: hidden is consumed before out is written; out
 *  must not have been created CL_MEM_READ_ONLY).
 *  lengths (optional) are the attention's per-batch regions, as for
 *  attn_forward with q_len = kv_len = seq: pad rows of out are zero, and
 *  whatever pad rows of hidden hold never reaches a content row.
 *  Enqueues on ctx's queue: one GEMM for q, k and v together into a fused
 *  [batch, seq, (Hq + 2 Hkv) * D] buffer, attn_forward reading it in place
 *  by BSHD strides, out_proj into out. timing: NULL, or the queue is
 *  finished after each phase and their wall times reported (slower).
 *  done: NULL, or receives the completion event (caller releases it).
 *  Calls on one layer are serialised (its buffers are shared); bad
 *  arguments are found before anything is enqueued. */
ATTN_API attn_status attn_layer_forward(attn_layer *layer, int batch, int seq, cl_mem hidden,
                                        size_t hidden_offset, cl_mem out, size_t out_offset,
                                        const attn_lengths *lengths, attn_layer_timing *timing,
                                        cl_event *done);

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
