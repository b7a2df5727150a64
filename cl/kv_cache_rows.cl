/* kv_cache_rows.cl -- where a KV cache keeps token j of a sequence (host:
 * host/attention/decode.h's struct attn_kv_cache), for every kernel that
 * reads a cache: the decode kernels (joined before decode_common.cl) and
 * the vector family's packing of a cache for long query blocks
 * (pack_cache.cl). Options: -DDIM_PAD (the row stride), -DPAGE_ROWS (paged:
 * the block size), -DKV_INT8 (int8 rows with one float scale each). */

#ifndef DIM_PAD
#define DIM_PAD (((HEAD_DIM) + 15) / 16 * 16) /* the cache's row stride (host: ATTN_KV_DIM_ALIGN) */
#endif
/* The cache's element type and its load as a float: with KV_INT8 int8
 * rows (each times its row's scale, kscale / vscale below), otherwise the
 * problem's storage type. Queries and outputs stay storage_t. */
#ifdef KV_INT8
typedef char cache_t;
#define KV_LOAD(p, i) convert_float((p)[i])
#else
typedef storage_t cache_t;
#define KV_LOAD(p, i) LOAD(p, i)
#endif

/* The cache's arguments of every kernel reading it, in the order of the
 * host's ATTN_KV_KARGS (host/attention/decode.h). kc, vc: K and V, found
 * by cache_row below: rows of DIM_PAD elements, each head's in runs of
 * head_rows rows (contiguous, per sequence and head; paged, per head, all
 * pages). pages: with PAGE_ROWS defined (a paged
 * cache, PAGE_ROWS = its block size), the block table [B][max_pages];
 * otherwise unused. kscale, vscale: with KV_INT8, one float per cache row,
 * indexed as the rows; otherwise unused. */
#define KV_CACHE_PARAMS                                                                         \
    __global const cache_t *kc, __global const cache_t *vc, int head_rows,                       \
        __global const int *pages, int max_pages, __global const float *kscale,                  \
        __global const float *vscale
/* KV_CACHE_PARAMS passed on */
#define KV_CACHE_ARGS kc, vc, head_rows, pages, max_pages, kscale, vscale

/* The cache row (element index / DIM_PAD; int8 scales are indexed by it)
 * of token j of sequence b, KV head hk, the one place in cl/ that knows the
 * layout (host: decode.h's struct attn_kv_cache): paged (PAGE_ROWS), row j
 * % PAGE_ROWS of page pages[b * max_pages + j / PAGE_ROWS] in head hk's run
 * of head_rows rows (every page's); contiguous, row j of sequence b's
 * head_rows rows of head hk. In the decode kernels PAGE_ROWS is a multiple
 * of BLOCK_KEYS (decode.c) and every key block starts at a multiple of
 * BLOCK_KEYS, so the rows of a block are the consecutive rows from its
 * first: they look a page up once per key block (decode_common.cl). */
inline ulong cache_row(__global const int *pages, int max_pages, int head_rows, int kv_heads,
                       int b, int hk, int j)
{
#ifdef PAGE_ROWS
    const int page = pages[b * max_pages + j / PAGE_ROWS];
    return (ulong)hk * (ulong)head_rows + (ulong)page * PAGE_ROWS + j % PAGE_ROWS;
#else
    return ((ulong)b * kv_heads + hk) * (ulong)head_rows + j;
#endif
}
