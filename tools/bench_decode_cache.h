/* bench_decode_cache.h -- one cache type of one attn-bench --decode shape
 * (bench_decode_cache.c): the host inputs the reference reads, the query
 * and output buffers, and one filled KV cache (stored as the dtype or int8)
 * per cache compared (contiguous, or paged with a block size). */
#ifndef ATTN_BENCH_DECODE_CACHE_H
#define ATTN_BENCH_DECODE_CACHE_H

#include "attn.h"
#include "bench_options.h"
#include "bench_variant.h"

typedef struct dshape {
    int batch, q_heads, kv_heads, head_dim, q_len, kv_len;
} dshape;

/* One cache type of one shape: the inputs (the same values in every
 * type, rounded through its dtype so the reference sees what the device
 * reads; an int8 cache is checked at int8's tolerance), the filled caches,
 * the query and output buffers. */
typedef struct dtype_res {
    attn_dtype dtype;
    attn_kv_storage storage;
    attn_problem p;
    size_t esize;
    float *hq, *hk, *hv;
    void *stage;
    cl_mem bq, bo;
    attn_tensor tq, to;
    attn_kv_cache *caches[BENCH_MAX_BLOCKS]; /* one per block size, each holding the prefix */
    bench_variant_data vd; /* the variant's sinks and mask ([q_len][capacity]) */
} dtype_res;

void dtype_res_free(dtype_res *r);
/* Fills r for shape s in dtype t over caches of `storage`, with variant v
 * (NULL: none): caches of blocks[0..nblocks-1] (0: contiguous), each
 * filled with the whole prefix (paged, a block of every sequence at a
 * time: their blocks interleave). On failure *step names what failed (r is
 * then freed by the caller with dtype_res_free). */
attn_status dtype_res_setup(attn_context *ctx, const dshape *s, attn_dtype t,
                            attn_kv_storage storage, const bench_variant *v, const int *blocks,
                            int nblocks, dtype_res *r, const char **step);

#endif /* ATTN_BENCH_DECODE_CACHE_H */
