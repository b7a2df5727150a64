/* mask_cache.c -- the context's summaries of unchanging masks
 * (mask_cache.h). Four entries, found by a key of every input the summary
 * depends on; a linear search, as there are so few. */
#include "attention/mask_cache.h"
#include "core/context.h"
#include "attention/validate.h"

#include <stdlib.h>
#include <string.h>

/* What a summary depends on besides the per-entry lengths. Built with
 * memset first, so that memcmp compares no padding bytes. */
typedef struct mask_key {
    cl_mem buffer;
    unsigned long version;
    attn_dtype dtype;
    size_t offset, stride_batch, stride_head, stride_q, stride_kv;
    int batch, q_heads, q_len, kv_len, block_rows, block_keys;
} mask_key;

typedef struct mask_entry {
    mask_key key;
    attn_region *lens; /* each batch entry's */
    cl_mem tiles;      /* the summary, owned */
    size_t bytes;
    cl_int4 mt;
    unsigned long used; /* the cache's clock at the last find or put */
} mask_entry;

struct attn_mask_cache {
    mask_entry e[ATTN_MASK_CACHE_ENTRIES];
    unsigned long clock;
};

static mask_key make_key(const attn_problem *p, int block_rows, int block_keys)
{
    mask_key k;
    memset(&k, 0, sizeof k);
    k.buffer = p->mask.buffer, k.version = p->mask.version, k.dtype = p->mask.dtype;
    k.offset = p->mask.offset, k.stride_batch = p->mask.stride_batch;
    k.stride_head = p->mask.stride_head, k.stride_q = p->mask.stride_q;
    k.stride_kv = p->mask.stride_kv;
    k.batch = p->batch, k.q_heads = p->q_heads, k.q_len = p->q_len, k.kv_len = p->kv_len;
    k.block_rows = block_rows, k.block_keys = block_keys;
    return k;
}

static int lengths_equal(const attn_problem *p, const attn_lengths *L, const attn_region *r)
{
    for (int b = 0; b < p->batch; b++) {
        const attn_region x = attn_region_of(p, L, b);
        if (memcmp(&x, &r[b], sizeof x)) return 0;
    }
    return 1;
}

static void drop(mask_entry *e)
{
    if (e->tiles) clReleaseMemObject(e->tiles);
    if (e->key.buffer) clReleaseMemObject(e->key.buffer);
    free(e->lens);
    memset(e, 0, sizeof *e);
}

cl_mem attn_mask_cache_find(attn_context *ctx, const attn_problem *p, const attn_lengths *lengths,
                            int block_rows, int block_keys, cl_int4 *mt)
{
    struct attn_mask_cache *c = ctx->mask_cache;
    if (!c || !p->mask.buffer || !p->mask.version) return NULL;
    const mask_key k = make_key(p, block_rows, block_keys);
    for (int i = 0; i < ATTN_MASK_CACHE_ENTRIES; i++) {
        mask_entry *e = &c->e[i];
        if (e->tiles && !memcmp(&e->key, &k, sizeof k) && lengths_equal(p, lengths, e->lens)) {
            e->used = ++c->clock;
            *mt = e->mt;
            return e->tiles;
        }
    }
    return NULL;
}

int attn_mask_cache_put(attn_context *ctx, const attn_problem *p,
                        const attn_lengths *lengths, int block_rows, int block_keys, cl_int4 mt,
                        cl_mem tiles, size_t bytes)
{
    if (!ctx->mask_cache && !(ctx->mask_cache = calloc(1, sizeof *ctx->mask_cache))) return 0;
    struct attn_mask_cache *c = ctx->mask_cache;
    attn_region *lens = malloc(sizeof *lens * (size_t)p->batch);
    if (!lens) return 0;
    for (int b = 0; b < p->batch; b++) lens[b] = attn_region_of(p, lengths, b);
    /* one entry per buffer (under another version it is stale), else an
     * empty slot, else the least recently used */
    mask_entry *slot = NULL;
    for (int i = 0; i < ATTN_MASK_CACHE_ENTRIES && !slot; i++)
        if (c->e[i].tiles && c->e[i].key.buffer == p->mask.buffer) slot = &c->e[i];
    for (int i = 0; i < ATTN_MASK_CACHE_ENTRIES && !slot; i++)
        if (!c->e[i].tiles) slot = &c->e[i];
    if (!slot) {
        slot = &c->e[0];
        for (int i = 1; i < ATTN_MASK_CACHE_ENTRIES; i++)
            if (c->e[i].used < slot->used) slot = &c->e[i];
    }
    drop(slot);
    slot->key = make_key(p, block_rows, block_keys);
    clRetainMemObject(slot->key.buffer);
    slot->lens = lens, slot->tiles = tiles, slot->bytes = bytes, slot->mt = mt;
    slot->used = ++c->clock;
    return 1;
}

size_t attn_mask_cache_bytes(const attn_context *ctx)
{
    size_t n = 0;
    if (ctx->mask_cache)
        for (int i = 0; i < ATTN_MASK_CACHE_ENTRIES; i++) n += ctx->mask_cache->e[i].bytes;
    return n;
}

void attn_mask_cache_release(attn_context *ctx)
{
    if (!ctx->mask_cache) return;
    for (int i = 0; i < ATTN_MASK_CACHE_ENTRIES; i++) drop(&ctx->mask_cache->e[i]);
    free(ctx->mask_cache);
    ctx->mask_cache = NULL;
}
