/* attn/decode.h -- part of attn's public API (applications include attn.h):
 * the KV cache and decode (a few new queries against a cached prefix). */
#ifndef ATTN_PUBLIC_DECODE_H
#define ATTN_PUBLIC_DECODE_H

#include "core.h"
#include "forward.h" /* attn_plan_info */

#ifdef __cplusplus
extern "C" {
#endif

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

/* How a cache stores K and V. */
typedef enum attn_kv_storage {
    ATTN_KV_AS_DTYPE = 0, /* in the cache's dtype, as appended */
    /* int8, one fp32 scale per (token, KV head): x ~ scale * q, scale =
     * max|x| / 127 over the token's head_dim elements (one float lower where
 * 127 * scale would overflow), q = round(x / scale).
     * Quantized at append, dequantized inside the decode kernels; about 1/4
     * (vs f32) or 1/2 (vs f16) of the bytes. Its own tolerance:
     * attn_kv_tolerance. A row holding an inf or NaN, which int8 cannot
     * hold, gets scale NaN: all of its elements read back (and decode) as
     * NaN, not only those. A row so small that max|x| / 127 rounds to 0
     * (max|x| below about 1e-43) reads back as zeros. */
    ATTN_KV_INT8 = 1
} attn_kv_storage;

/*! attn_kv_tolerance() : how close attn_decode over a cache of storage s
 *  and dtype t comes to attn_reference_forward over the K/V as appended:
 *  |out - ref| <= atol + rtol * |ref|. ATTN_KV_AS_DTYPE: attn_tolerance(t).
 *  ATTN_KV_INT8: that plus int8's rounding, 5e-2 and 2e-2 (measured for
 *  values of unit scale and logits of deviation about 1; the error grows
 *  with the values' magnitude and with sharper attention). An unknown
 *  storage or dtype gives NaN for both (no comparison passes). */
ATTN_API void attn_kv_tolerance(attn_kv_storage s, attn_dtype t, double *atol, double *rtol);

/* Everything that decides a cache's shape and memory. Zero-initialise it,
 * then set what you need; the zero of each optional field is the simple
 * case (contiguous, stored as dtype). */
typedef struct attn_kv_cache_desc {
    int batch;        /* sequences (slots 0..batch-1) */
    int kv_heads;     /* KV heads */
    int head_dim;     /* 1..256 */
    int capacity;     /* most tokens one sequence may hold */
    attn_dtype dtype; /* of appended K/V and of decode's q and out */
    /* 0: contiguous, [batch][kv_heads][capacity][head_dim] (every sequence
     * reserves the capacity). Otherwise paged: tokens per block, a power
     * of two from 16 to 256; sequences take blocks from a shared pool as
     * they grow, and forks share them. */
    int block_size;
    /* Paged: blocks in the pool, each holding block_size tokens of every KV
     * head (0: batch * ceil(capacity / block_size), enough for every
     * sequence at capacity). Must be 0 when contiguous. Blocks x
     * block_size is at most 2^31 - 1 (a KV head's rows, which the kernels
     * index with an int). */
    int num_blocks;
    attn_kv_storage storage;
} attn_kv_cache_desc;

/*! attn_kv_cache_create_desc() :
 *  attn_kv_cache_create for any attn_kv_cache_desc: contiguous or paged,
 *  stored as dtype or quantized. attn_kv_cache_create(ctx, B, H, D, C, t,
 *  out) is this with {B, H, D, C, t} and the rest zero.
 *  @return as attn_kv_cache_create; ATTN_ERROR_INVALID_ARGUMENT names the
 *  bad field of desc. */
ATTN_API attn_status attn_kv_cache_create_desc(attn_context *ctx, const attn_kv_cache_desc *desc,
                                               attn_kv_cache **out);

/*! attn_kv_cache_bytes() :
 *  The device memory a cache of this desc takes (K, V, scales and block
 *  table), without creating it: the seed's exercise 5, so that an engine
 *  can size its pool. For a paged desc with num_blocks 0 it is the size at
 *  the default pool. ATTN_ERROR_INVALID_ARGUMENT naming a bad field (the
 *  same checks as creation, except the device's limits), in
 *  attn_last_error(NULL): it has no context. */
ATTN_API attn_status attn_kv_cache_bytes(const attn_kv_cache_desc *desc, size_t *bytes);

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
 *  sequence changes; so is a paged cache's pool that cannot give every
 *  sequence its new blocks (ATTN_ERROR_OUT_OF_MEMORY naming the first
 *  sequence it cannot serve). Paged, a sequence sharing a partly filled
 *  last block with a fork gets its own copy of that block first. A failed
 *  append (for any reason) leaves the cache without this step's keys (its
 *  lengths, blocks and pool as before the call), so attn_decode refuses
 *  the cache until an append that adds rows succeeds (one of no rows,
 *  truncate and reset do not lift that). One exception, on an
 *  out-of-order queue only: when the append is enqueued but neither a
 *  barrier nor a wait can order later work after it, the rows are
 *  appended and the lengths include them;
 *  ATTN_ERROR_OPENCL says so in its message.
 *  k and v must not have been created CL_MEM_WRITE_ONLY, and must not be
 *  the cache's own buffers (attn_kv_cache_tensors) nor sub-buffers of
 *  them: ATTN_ERROR_INVALID_ARGUMENT naming them.
 *  done: NULL, or receives the completion event (set to NULL on any
 *  failure). */
ATTN_API attn_status attn_kv_cache_append(attn_kv_cache *cache, const attn_tensor *k,
                                          const attn_tensor *v, int block_len,
                                          const int *counts, cl_event *done);

/*! attn_kv_cache_append_rows() :
 *  attn_kv_cache_append from any rows of the block: sequence b takes rows
 *  starts[b]..starts[b]+counts[b]-1 of its block (starts[b] is to the
 *  block what attn_lengths' kv_start[b] is to attn_forward's k and v;
 *  starts NULL: 0 each, which is attn_kv_cache_append) and stores them at
 *  its positions len[b]..len[b]+counts[b]-1. One call takes a left-padded
 *  prompt batch (starts[b] = block_len - counts[b]) or a packed one: k and
 *  v may have stride_batch 0 (all sequences along one token axis of
 *  block_len rows, as with p->packed), and then sequence b's rows are rows
 *  starts[b].. of that one axis. Each starts[b] + counts[b] must fit in
 *  block_len (counts NULL: block_len each, so every start must be 0):
 *  otherwise ATTN_ERROR_INVALID_ARGUMENT naming the sequence and the
 *  argument, nothing is enqueued and no sequence changes. k and v are
 *  [batch, kv_heads, block_len, head_dim] as for attn_kv_cache_append and
 *  must lie inside their buffers; only the rows taken are read. Everything
 *  else is attn_kv_cache_append's: the capacity check, and a failed append
 *  leaves attn_decode refusing the cache until an append succeeds. */
ATTN_API attn_status attn_kv_cache_append_rows(attn_kv_cache *cache, const attn_tensor *k,
                                               const attn_tensor *v, int block_len,
                                               const int *starts, const int *counts,
                                               cl_event *done);

/*! attn_kv_cache_lengths() : copies each sequence's current length (tokens
 *  appended and not truncated) into lengths[0..batch-1]. */
ATTN_API attn_status attn_kv_cache_lengths(const attn_kv_cache *cache, int *lengths);

/*! attn_kv_cache_truncate() : shortens sequence `seq` to `length` tokens,
 *  0 <= length <= its current length (e.g. to drop rejected speculative
 *  tokens); the next append writes at position `length`. Enqueues nothing.
 *  Paged, the blocks past the new length go back to the pool (unless a
 *  fork still shares them).
 *  A length below zero or above the current one is
 *  ATTN_ERROR_INVALID_ARGUMENT and changes nothing. */
ATTN_API attn_status attn_kv_cache_truncate(attn_kv_cache *cache, int seq, int length);

/*! attn_kv_cache_reset() : empties sequence `seq`, or every sequence when
 *  seq is -1 (their blocks go back to the pool; slots stay taken). */
ATTN_API attn_status attn_kv_cache_reset(attn_kv_cache *cache, int seq);

/* ---- Sequences ------------------------------------------------------
 * Slots 0..batch-1 are the sequences; every call taking `seq` works on any
 * slot. seq_add and seq_remove are a server's bookkeeping on top: a slot
 * is free when it is empty and not taken by seq_add or seq_fork. */

/*! attn_kv_cache_seq_add() : takes the lowest free slot (empty, not taken)
 *  and writes it to *seq. No free slot: ATTN_ERROR_OUT_OF_MEMORY. */
ATTN_API attn_status attn_kv_cache_seq_add(attn_kv_cache *cache, int *seq);

/*! attn_kv_cache_seq_remove() : empties sequence `seq` (its blocks go back
 *  to the pool once no other sequence shares them) and frees the slot. */
ATTN_API attn_status attn_kv_cache_seq_remove(attn_kv_cache *cache, int seq);

/*! attn_kv_cache_seq_fork() :
 *  Makes sequence `dst` (empty) a copy of sequence `src`: the same length
 *  and K/V, and dst's slot is taken. Paged, dst shares src's blocks
 *  (reference-counted, nothing copied); the first append to either into a
 *  shared, partly filled block copies that one block first (copy on
 *  write). Contiguous, src's rows are copied (enqueued). Beam search,
 *  parallel sampling, a shared system prompt. dst == src, dst not empty,
 *  or the cache's last append failed (src may lack its last keys):
 *  ATTN_ERROR_INVALID_ARGUMENT. */
ATTN_API attn_status attn_kv_cache_seq_fork(attn_kv_cache *cache, int src, int dst);

/*! attn_kv_cache_read() :
 *  Copies tokens first..first+count-1 of sequence `seq` into host arrays k
 *  and v (either may be NULL), each [kv_heads][count][head_dim] elements of
 *  the cache's dtype (int8 storage: dequantized, then rounded to dtype).
 *  Blocking: waits for what is enqueued before it. Tokens outside
 *  0..length-1: ATTN_ERROR_INVALID_ARGUMENT. For inspection and tests. */
ATTN_API attn_status attn_kv_cache_read(attn_kv_cache *cache, int seq, int first, int count,
                                        void *k, void *v);

/*! attn_kv_cache_pool() : a paged cache's blocks: *total in the pool, *free_blocks
 *  held by no sequence (either may be NULL). A contiguous cache reports
 *  one block per sequence, none free. */
ATTN_API attn_status attn_kv_cache_pool(const attn_kv_cache *cache, int *free_blocks,
                                        int *total);

/*! attn_kv_cache_tensors() : the cache's K and V in the plain layout, as
 *  attn_tensors of shape [batch, kv_heads, capacity, head_dim] (the row
 *  stride may exceed head_dim). Only a contiguous cache stored as its
 *  dtype has them: paged or int8, ATTN_ERROR_INVALID_ARGUMENT (use
 *  attn_kv_cache_read). They can be read by the caller or passed to
 *  attn_forward with p->kv_len = capacity and lengths->kv_len = the
 *  sequences' lengths. Either pointer may be NULL. */
ATTN_API attn_status attn_kv_cache_tensors(const attn_kv_cache *cache, attn_tensor *k,
                                           attn_tensor *v);

/* The longest block of new queries (p->q_len) that attn_decode runs
 * through its decode kernels, which split the cache's keys across
 * work-groups (flash-decoding) and are tuned as decode classes. A longer
 * block -- a prompt appended to the cache and then attended, or one chunk
 * of a chunked prefill -- runs through the prefill kernels reading the
 * cache (every cache kind: contiguous, paged, int8), planned and tuned as
 * a prefill of q_len rows against the cache's capacity. */
#define ATTN_DECODE_MAX_Q_LEN 64

/*! attn_decode() :
 *  Enqueues attention of a few new queries per sequence against the cache.
 *  p->batch, p->kv_heads, p->head_dim and p->dtype must equal the cache's
 *  (ATTN_ERROR_INVALID_ARGUMENT naming both otherwise); p->q_heads is a
 *  multiple of kv_heads (GQA/MQA: no copies); p->q_len is the padded
 *  number of new query rows, from 1 to the cache's capacity (or to
 *  ATTN_DECODE_MAX_Q_LEN when that is more): one token, a speculative
 *  block, a chunk of a chunked prefill or a whole prompt; p->kv_len
 *  is not used (the cache's lengths are); p->packed must be 0 (q_lens gives
 *  each sequence's queries), and a mask spans [B][Hq][q_len][capacity]. q and out are [batch, q_heads,
 *  q_len, head_dim] (out may be q itself). Sequence b's queries are rows
 *  0..q_lens[b]-1 (q_lens NULL: q_len each; 0 allowed) and are its LAST
 *  q_lens[b] tokens, whose K/V must already be appended (the cache's last
 *  append, by attn_kv_cache_append or _rows, must have succeeded: after a failed one, decode is
 *  ATTN_ERROR_INVALID_ARGUMENT repeating the append's message, until an
 *  append succeeds; it would otherwise attend for the previous token): with L tokens in
 *  the cache, query row i is token L - q_lens[b] + i and sees keys
 *  0..L - q_lens[b] + i when p->causal (bottom-right inside the new block),
 *  all L keys otherwise. Rows past q_lens[b] get zeros and -inf LSE.
 *  lse: NULL or >= batch * q_heads * q_len floats, [B, Hq, q_len], natural
 *  log (out and lse not CL_MEM_READ_ONLY, q not CL_MEM_WRITE_ONLY, as for
 *  attn_forward). The result equals attn_forward over attn_kv_cache_tensors with
 *  lengths {q_len = q_lens, kv_len = the cache's lengths}, within the DESIGN
 *  tolerance. Long prefixes are split into chunks that run in parallel and
 *  are combined with their LSEs; the number of splits comes from the
 *  device's compute units and the longest prefix (an override's splits=N,
 *  attn_context_set_params, replaces it: at most N, as each split takes
 *  whole key blocks; info->params of attn_decode_prepare gives the count
 *  launched). The splits' partial results live in the context's workspace
 *  (attn_context_workspace_bytes; one for all of a context's caches), not
 *  in the cache. Blocks longer than
 *  ATTN_DECODE_MAX_Q_LEN take the prefill kernels (ATTN_DECODE_MAX_Q_LEN's
 *  comment): on a CPU the vector family packs each sequence's keys from
 *  the cache as attn_forward packs its k and v, and is as fast. Check
 *  mode verifies decode like attn_forward, against the reference over the
 *  cache's K and V as attn_kv_cache_read gives them (int8: its dequantized
 *  floats, not rounded to the dtype, as the kernels read them).
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

#ifdef __cplusplus
}
#endif
#endif /* ATTN_PUBLIC_DECODE_H */
