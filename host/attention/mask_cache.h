/* mask_cache.h -- the per-tile summaries (cl/mask_tiles.cl) of the masks a
 * caller promised not to change (attn_mask.version != 0), kept in the
 * context so that a mask that comes back skips the pre-pass. A summary is
 * found again only by everything it depends on: the buffer, the version,
 * the mask's dtype, offset and strides, the problem's extent and lengths,
 * and the tile sizes. None is kept or found while a kernel folder is set
 * (its mask_tiles.cl may change between calls), so every summary kept was
 * written by the built-in sources. */
#ifndef ATTN_ATTENTION_MASK_CACHE_H
#define ATTN_ATTENTION_MASK_CACHE_H

#include "attn.h"
#include "core/context.h"

/* The summaries a context keeps at most: the least recently used goes.
 * Each is small (a byte per tile); the masks' buffers they keep alive are
 * the caller's. */
#define ATTN_MASK_CACHE_ENTRIES 8

/* The summary of p's mask (with these lengths and tiles) if the context
 * holds it: its buffer (owned by the context) and va's summary shape (mt)
 * in *mt; NULL when p's mask has version 0 or was not seen. */
cl_mem attn_mask_cache_find(attn_context *ctx, const attn_problem *p, const attn_lengths *lengths,
                            int block_rows, int block_keys, cl_int4 *mt);

/* Keeps the summary in *scratch (the context's summary scratch, which it
 * was just written into) as p's mask's, in the entry of the same buffer
 * under another version (stale), else an empty or the least recently used
 * one; *scratch receives the evicted entry's buffer (or nothing) to write
 * the next summary into. The mask's buffer is retained while the entry
 * lives, so that its handle cannot be reused by a new buffer that the
 * summary would not describe. Returns 0, changing nothing, when host
 * memory ran out: the summary is then just not kept. */
int attn_mask_cache_put(attn_context *ctx, const attn_problem *p, const attn_lengths *lengths,
                        int block_rows, int block_keys, cl_int4 mt, attn_scratch *scratch);

/* Device bytes of the kept summaries, and dropping them all (with the
 * references to the masks' buffers): attn_context_release_workspace and
 * attn_context_release. */
size_t attn_mask_cache_bytes(const attn_context *ctx);
void attn_mask_cache_release(attn_context *ctx);

#endif /* ATTN_ATTENTION_MASK_CACHE_H */
