/* bench_decode_res.h -- attn-bench --decode's data for one storage type of
 * a shape (bench_decode_res.c): the host inputs the reference reads, the
 * query and output buffers, and one filled KV cache per cache compared
 * (contiguous, or paged with a block size). */
#ifndef ATTN_BENCH_DECODE_RES_H
#define ATTN_BENCH_DECODE_RES_H

#include "attn.h"
#include "bench_options.h"
#include "bench_variant.h"

typedef struct dshape {
    int batch, q_heads, kv_heads, head_dim, q_len, kv_len;
} dshape;

typedef struct dtype_res {
    attn_dtype dtype;
    attn_problem p;
    size_t esize;
    float *hq, *hk, *hv; /* the same values in every type, rounded through it */
    void *stage;
    cl_mem bq, bo;
    attn_tensor tq, to;
    attn_kv_cache *caches[BENCH_MAX_BLOCKS]; /* one per block size, each holding the prefix */
    bench_variant_data vd; /* the variant's sinks and mask ([q_len][capacity]) */
} dtype_res;

/* Makes r for shape s in type t with variant v (NULL: none): caches of
 * blocks[0..nblocks-1] (0: contiguous), each filled with the whole prefix
 * (paged, a block of every sequence at a time: their blocks interleave).
 * On failure *step names what failed; dtype_res_free cleans up either
 * way. */
attn_status dtype_res_setup(attn_context *ctx, const dshape *s, attn_dtype t,
                            const bench_variant *v, const int *blocks, int nblocks, dtype_res *r,
                            const char **step);
void dtype_res_free(dtype_res *r);

#endif /* ATTN_BENCH_DECODE_RES_H */
