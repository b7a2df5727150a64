/* mask_cache.c -- the context's summaries of unchanging masks
 * (mask_cache.h). A few entries, found by a key of every input the summary
 * depends on; a linear search, as there are so few. */
#include "attention/mask_cache.h"
#include "core/context.h"
#include "attention/validate.h"

#include <stdlib.h>
#include <string.h>

/* What a summary depends on besides the per-entry lengths, in arrays
 * without padding between their elements, compared member by member */
typedef struct mask_key {
    cl_mem buffer;
    unsigned long version;
    size_t layout[5]; /* offset, stride_batch, stride_head, stride_q, stride_kv */
    int shape[7];     /* dtype, batch, q_heads, q_len, kv_len, block_rows, block_keys */
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
    const attn_mask *m = &p->mask;
    const mask_key k = {m->buffer, m->version,
                        {m->offset, m->stride_batch, m->stride_head, m->stride_q, m->stride_kv},
                        {(int)m->dtype, p->batch, p->q_heads, p->q_len, p->kv_len, block_rows,
                         block_keys}};
    return k;
}

static int key_equal(const mask_key *a, const mask_key *b)
{
    return a->buffer == b->buffer && a->version == b->version &&
           !memcmp(a->layout, b->layout, sizeof a->layout) &&
           !memcmp(a->shape, b->shape, sizeof a->shape);
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
    /* a kernel folder's mask_tiles.cl may change between calls (its
     * programs are hashed each call): its summaries are not kept */
    if (!c || !p->mask.buffer || !p->mask.version || ctx->kernel_dir) return NULL;
    const mask_key k = make_key(p, block_rows, block_keys);
    for (int i = 0; i < ATTN_MASK_CACHE_ENTRIES; i++) {
        mask_entry *e = &c->e[i];
        if (e->tiles && key_equal(&e->key, &k) && lengths_equal(p, lengths, e->lens)) {
            e->used = ++c->clock;
            *mt = e->mt;
            return e->tiles;
        }
    }
    return NULL;
}

int attn_mask_cache_put(attn_context *ctx, const attn_problem *p, const attn_lengths *lengths,
                        int block_rows, int block_keys, cl_int4 mt, attn_scratch *scratch)
{
    if (ctx->kernel_dir) return 0; /* (see attn_mask_cache_find) */
    if (!ctx->mask_cache && !(ctx->mask_cache = calloc(1, sizeof *ctx->mask_cache))) return 0;
    struct attn_mask_cache *c = ctx->mask_cache;
    attn_region *lens = malloc(sizeof *lens * (size_t)p->batch);
    if (!lens) return 0;
    for (int b = 0; b < p->batch; b++) lens[b] = attn_region_of(p, lengths, b);
    /* the entry of this buffer under another version (stale), else an
     * empty slot, else the least recently used */
    mask_entry *slot = NULL;
    for (int i = 0; i < ATTN_MASK_CACHE_ENTRIES && !slot; i++)
        if (c->e[i].tiles && c->e[i].key.buffer == p->mask.buffer &&
            c->e[i].key.version != p->mask.version)
            slot = &c->e[i];
    for (int i = 0; i < ATTN_MASK_CACHE_ENTRIES && !slot; i++)
        if (!c->e[i].tiles) slot = &c->e[i];
    if (!slot) {
        slot = &c->e[0];
        for (int i = 1; i < ATTN_MASK_CACHE_ENTRIES; i++)
            if (c->e[i].used < slot->used) slot = &c->e[i];
    }
    /* the scratch and the evicted summary's buffer change places */
    const attn_scratch evicted = {slot->tiles, slot->bytes};
    slot->tiles = NULL;
    drop(slot);
    slot->key = make_key(p, block_rows, block_keys);
    clRetainMemObject(slot->key.buffer);
    slot->lens = lens, slot->tiles = scratch->mem, slot->bytes = scratch->bytes, slot->mt = mt;
    slot->used = ++c->clock;
    *scratch = evicted;
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
