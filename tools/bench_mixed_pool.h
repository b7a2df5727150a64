/* bench_mixed_pool.h -- the pool attn-bench --decode --mixed times
 * (bench_mixed_pool.c): sequences of mixed lengths with their K/V packed
 * on one token axis on the device, and for each cache type one cache per
 * compared block size holding every sequence's prefix less its last token;
 * a step appends that token to every sequence and decodes, and a rewind
 * truncates them back, so that every step sees the same lengths. */
#ifndef ATTN_BENCH_MIXED_POOL_H
#define ATTN_BENCH_MIXED_POOL_H

#include "attn.h"
#include "bench_options.h"

typedef struct mixed_seqs {
    int n;         /* sequences */
    int q_heads, kv_heads, head_dim;
    int *lens;     /* each one's length in a step (after its append) */
    int *offsets;  /* its first row on the packed token axis */
    int *last;     /* offsets[b] + lens[b] - 1: the row a step appends */
    int *ones;     /* 1 each: a step's counts */
    int total;     /* the lengths' sum: rows of the packed axis, keys a step reads */
    int longest;   /* the contiguous cache's capacity */
} mixed_seqs;

/* n sequences of bench_mixed_lengths(n, min, max) with these heads. */
attn_status mixed_seqs_init(mixed_seqs *s, int n, int min, int max, int q_heads, int kv_heads,
                            int head_dim);
void mixed_seqs_free(mixed_seqs *s);

/* One cache type (a dtype, stored as it or int8) over every compared
 * cache. The inputs are the same values in every type, rounded through its
 * dtype. */
typedef struct mixed_type {
    attn_dtype dtype;
    attn_kv_storage storage;
    attn_problem p;            /* batch n, q_len 1, kv_len the longest (not used by decode) */
    size_t esize;
    float *hq, *hk, *hv;       /* as the device sees them (hk, hv: [kv_heads][total][head_dim]);
                                * NULL unless kept for the check */
    void *stage;               /* one output, read back for the check */
    cl_mem bq, bo, bk, bv;
    attn_tensor tq, to;        /* [n][q_heads][1][head_dim] */
    attn_tensor tk, tv;        /* packed: stride_batch 0, rows on one axis of `total` */
    attn_kv_cache *caches[BENCH_MAX_BLOCKS];
    attn_kv_cache_desc descs[BENCH_MAX_BLOCKS];
    size_t bytes[BENCH_MAX_BLOCKS]; /* attn_kv_cache_bytes of each desc */
} mixed_type;

/* Fills r: caches of blocks[0..nblocks-1], 0 contiguous (capacity the
 * longest length), else paged with a pool of sum ceil(len / block) blocks
 * (what the sequences hold at a step), each filled with every sequence's
 * lens[b] - 1 first tokens (paged, a block of every sequence at a time, as
 * sequences growing together fill them). keep_host keeps the host inputs
 * for mixed_reference. On failure *step names what failed (the caller
 * frees r with mixed_type_free). */
attn_status mixed_type_setup(attn_context *ctx, const mixed_seqs *s, attn_dtype t,
                             attn_kv_storage storage, int keep_host, const int *blocks,
                             int nblocks, mixed_type *r, const char **step);
void mixed_type_free(mixed_type *r);

/* One step on cache i: enqueues the append of every sequence's last token
 * and the decode of its query (the caller waits). */
attn_status mixed_step(attn_context *ctx, const mixed_seqs *s, const mixed_type *r, int i,
                       const char **step);
/* Truncates every sequence of cache i back to lens[b] - 1 (enqueues nothing). */
attn_status mixed_rewind(const mixed_seqs *s, const mixed_type *r, int i);
/* The reference output of a step ([n][q_heads][1][head_dim] floats): each
 * sequence's query against its lens[b] keys. Needs keep_host. */
attn_status mixed_reference(const mixed_seqs *s, const mixed_type *r, float *ref);

#endif /* ATTN_BENCH_MIXED_POOL_H */
