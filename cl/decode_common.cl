/* decode_common.cl -- what both decode kernels share, prepended to each
 * after common.cl: which query rows a tile holds and which keys they see,
 * and the combine kernel that merges split-KV partial results by their LSEs
 * (flash-decoding's second step). */

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

/* The cache's arguments of both decode kernels, in decode.c's order. kc,
 * vc: K and V, found by cache_row below: rows of DIM_PAD elements, each
 * head's in runs of head_rows rows (contiguous, per sequence and head;
 * paged, per head, all pages). pages: with PAGE_ROWS defined (a paged
 * cache, PAGE_ROWS = its block size), the block table [B][max_pages];
 * otherwise unused. kscale, vscale: with KV_INT8, one float per cache row,
 * indexed as the rows; otherwise unused. */
#define KV_CACHE_PARAMS                                                                         \
    __global const cache_t *kc, __global const cache_t *vc, int head_rows,                       \
        __global const int *pages, int max_pages, __global const float *kscale,                  \
        __global const float *vscale

/* The cache row (element index / DIM_PAD; int8 scales are indexed by it)
 * of token j of sequence b, KV head hk, the one place in cl/ that knows the
 * layout (host: decode.h's struct attn_kv_cache): paged (PAGE_ROWS), row j
 * % PAGE_ROWS of page pages[b * max_pages + j / PAGE_ROWS] in head hk's run
 * of head_rows rows (every page's); contiguous, row j of sequence b's
 * head_rows rows of head hk. The host keeps PAGE_ROWS a multiple of
 * BLOCK_KEYS (decode.c), and
 * every key block starts at a multiple of BLOCK_KEYS, so the rows of a
 * block are the consecutive rows from its first: the kernels look a page up
 * once per key block. */
inline ulong cache_row(__global const int *pages, int max_pages, int head_rows, int kv_heads,
                       int b, int hk, int j)
{
#ifdef PAGE_ROWS
#if PAGE_ROWS % BLOCK_KEYS
#error "PAGE_ROWS must be a multiple of BLOCK_KEYS"
#endif
    const int page = pages[b * max_pages + j / PAGE_ROWS];
    return (ulong)hk * (ulong)head_rows + (ulong)page * PAGE_ROWS + j % PAGE_ROWS;
#else
    return ((ulong)b * kv_heads + hk) * (ulong)head_rows + j;
#endif
}

/* log2-domain LSE of a partial that saw no key: finite on purpose, as
 * MASKED in common.cl, and skipped by the combine */
#define EMPTY_LSE (-FLT_MAX)

/* The first key any new query of a sequence can see, where its splits
 * start: 0, or with a window's left limit the first query's position minus
 * it, rounded down to a whole block, so that the splits share out the keys
 * the windows cover rather than the whole cache (host: decode.c's
 * key_base, the same formula). len as decode_tile's. */
inline int decode_key_base(int2 len, int2 win)
{
#if WINDOW
    if (win.x >= 0) return max(len.y - len.x - win.x, 0) / BLOCK_KEYS * BLOCK_KEYS;
#endif
    return 0;
}

/* The rows of a decode tile (common.cl's tile_rows) starting at row t0:
 * (new query i, query head g of KV head hk's group) pairs, t = i * group +
 * g, so that one K/V load serves every query head of the group. len =
 * (new queries, keys in the cache including them): new query i sees the
 * keys up to its own. Split s covers keys [base + s * chunk, base + (s + 1)
 * * chunk), base = decode_key_base. */
inline tile_rows decode_tile(int2 len, int2 win, int t0, int group, int hk, int sq, int causal,
                             int split, int chunk)
{
    const int j0 = decode_key_base(len, win) + split * chunk;
    const tile_rows m = {(int4)(0, len.x, 0, len.y), t0, group, hk * group, sq, causal, j0,
                         j0 + chunk};
    return m;
}

/* Global (HEAD_DIM, sq * q_heads, B). part_o is [row][split][DIM_PAD],
 * normalised per split; part_lse [row][split] in the log2 domain, EMPTY_LSE
 * for a split that saw no key (its O was not written). Row = (b * q_heads +
 * h) * sq + i. O = sum_s w_s O_s / sum_s w_s with w_s = exp2(lse_s - max).
 * The partials leave out the sink: it joins the denominator here, once, for
 * a new query (i < lens[b].x): a row with no key then gets zeros and LSE =
 * the sink; a pad row zeros and -inf. */
__kernel void attn_decode_combine(__global const float *part_o, __global const float *part_lse,
                                  int nsplit, __global storage_t *o, ulong4 og, __global float *lse,
                                  int write_lse, int q_heads, int sq,
                                  __global const int2 *lens, VARIANT_PARAMS)
{
    VARIANTS(va);
    const int d = get_global_id(0), ih = get_global_id(1), b = get_global_id(2);
    const int i = ih % sq, h = ih / sq;
    const ulong row = ((ulong)b * q_heads + h) * sq + i;
    __global const float *pl = part_lse + row * nsplit;
    float m = EMPTY_LSE;
    for (int s = 0; s < nsplit; s++) m = max(m, pl[s]);
    float wsum = 0.0f, acc = 0.0f;
    for (int s = 0; s < nsplit; s++) {
        const float ls = pl[s];
        if (ls <= EMPTY_LSE) continue; /* its O was never written */
        const float w = exp2(ls - m);
        wsum += w;
        acc = mad(w, part_o[(row * nsplit + s) * DIM_PAD + d], acc);
    }
    /* the merged partials are one row's statistics: max m, denominator wsum */
    float row_lse;
    const float out = acc * finish_row(va, h, m, wsum, i < lens[b].x, &row_lse);
    STORE(o, row_index(og, b, h, i) + d, out);
    if (write_lse && d == 0) lse[row] = row_lse * LN2;
}
