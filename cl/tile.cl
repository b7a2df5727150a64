/* tile.cl -- what the work-group families (tiled_core.cl, flash.cl) share
 * about a tile of query rows: where its K/V rows are, the key range its
 * live rows see, and a score's variants. Joined after variants.cl (and
 * decode_common.cl). */

/* The element type of K/V rows and its load as a float: kv_cache_rows.cl
 * sets them for the cache (int8 with KV_INT8); prefill reads storage_t. */
#ifndef KV_LOAD
typedef storage_t cache_t;
#define KV_LOAD(p, i) LOAD(p, i)
#endif

/* K or V rows of one KV head: row j at p + j * stride, D contiguous; with
 * KV_INT8 (decode only) row j's scale at kscale[j] (vscale[j]). A paged
 * decode (PAGE_ROWS, kv_cache_rows.cl) has no such run of rows: k and v
 * (and the scales) are the whole cache and the rest names whose rows these
 * are, for kv_tile_row. */
typedef struct {
    __global const cache_t *k, *v;
    ulong kstride, vstride;
#ifdef KV_INT8
    __global const float *kscale, *vscale;
#endif
#ifdef PAGE_ROWS
    __global const int *pages;
    int max_pages, head_rows, kv_heads, b, hk;
#endif
} kv_rows;
/* x (from K, or V, row j of kv) times the row's scale; x itself unless
 * KV_INT8, so that prefill's code stays as it was */
#ifdef KV_INT8
#define K_SCALED(x, kv, j) ((x) * (kv).kscale[j])
#define V_SCALED(x, kv, j) ((x) * (kv).vscale[j])
#else
#define K_SCALED(x, kv, j) (x)
#define V_SCALED(x, kv, j) (x)
#endif

/* Whether p may be read in 16-byte loads */
#define ALIGNED16(p) (((size_t)(p) & 15) == 0)

/* Whether every K and V row of kv starts 16-byte aligned, vw elements
 * making 16 bytes: the staging's vector loads (tiled_core.cl,
 * mma_operands.cl), decided once per work-group */
inline int kv_rows_aligned16(kv_rows kv, int vw)
{
    return ALIGNED16(kv.k) && ALIGNED16(kv.v) && kv.kstride % vw == 0 && kv.vstride % vw == 0;
}

/* A row of kv (key j0 + c of a tile is at row kv_tile_row(kv, j0) + c):
 * paged, a row of the whole cache, whose count may pass INT_MAX (kv_heads
 * runs of head_rows rows, each at most INT_MAX); otherwise a row of the
 * head's run, as an int, so that prefill and the contiguous decode compile
 * as they did before pages. */
#ifdef PAGE_ROWS
typedef ulong kv_row;
#else
typedef int kv_row;
#endif

/* The row of key j0 (a multiple of BLOCK_KEYS) in kv, the tile's keys in
 * the rows after it. Paged, the tile lies inside one page (cache_row),
 * looked up here once per tile; otherwise j0 itself. An index, not kv's
 * pointers moved to the page: Mesa 22.3's rusticl (llvmpipe) miscompiled
 * that form once a work-group's loop crossed pages (a barrier in the loop,
 * the moved pointers changing with each tile): paged decodes read the
 * wrong rows (found by tools/check-rusticl.sh). */
inline kv_row kv_tile_row(kv_rows kv, int j0)
{
#ifdef PAGE_ROWS
    return cache_row(kv.pages, kv.max_pages, kv.head_rows, kv.kv_heads, kv.b, kv.hk, j0);
#else
    return j0;
#endif
}

#ifdef DECODE_KERNELS
/* A decode's K/V rows of sequence b, KV head hk in the cache
 * (KV_CACHE_PARAMS, kv_cache_rows.cl): paged, the whole cache and whose
 * rows they are (kv_tile_row looks a page up per tile); contiguous, the head's
 * run of rows from its row 0. */
inline kv_rows decode_kv_rows(__global const cache_t *kc, __global const cache_t *vc,
                              int head_rows, __global const int *pages, int max_pages,
                              __global const float *kscale, __global const float *vscale,
                              int kv_heads, int b, int hk)
{
#ifdef PAGE_ROWS
    const kv_rows kv = {.k = kc, .v = vc, .kstride = DIM_PAD, .vstride = DIM_PAD,
#ifdef KV_INT8
                        .kscale = kscale, .vscale = vscale,
#endif
                        .pages = pages, .max_pages = max_pages, .head_rows = head_rows,
                        .kv_heads = kv_heads, .b = b, .hk = hk};
#else
    const ulong row0 = cache_row(pages, max_pages, head_rows, kv_heads, b, hk, 0);
    const kv_rows kv = {.k = kc + row0 * DIM_PAD, .v = vc + row0 * DIM_PAD, .kstride = DIM_PAD,
#ifdef KV_INT8
                        .kscale = kscale + row0, .vscale = vscale + row0,
#endif
                        .vstride = DIM_PAD};
#endif
    return kv;
}

/* The arguments of the work-group families' decode kernels
 * (decode_tiled.cl, decode_mma.cl): global (nsplit * work-group, kv_heads *
 * ntiles, B). The cache: KV_CACHE_PARAMS (KV_INT8: int8 rows and one scale
 * per row), a tile's rows found by cache_row (through kv_tile_row); split s
 * covers chunk keys from decode_key_base + s * chunk, chunk a multiple of
 * BLOCK_KEYS. */
#define DECODE_TILE_PARAMS                                                                      \
    __global const storage_t *q, ulong4 qg, KV_CACHE_PARAMS, __global storage_t *o, ulong4 og,  \
        __global float *lse, int write_lse, __global float *part_o, __global float *part_lse,   \
        int nsplit, int chunk, __global const int2 *lens, int q_heads, int kv_heads, int sq,     \
        int causal, float qscale, int ntiles, VARIANT_PARAMS

/* A decode work-group's tile (DECODE_TILE_PARAMS' geometry): nrows rows
 * of KV head hk's group (decode_tile) from tile get_global_id(1) % ntiles,
 * split get_group_id(0) of the keys, sequence *b; *kv that head's rows. */
inline tile_rows decode_group_tile(__global const int2 *lens, int2 win, int nrows, int q_heads,
                                   int kv_heads, int sq, int causal, int chunk, int ntiles,
                                   KV_CACHE_PARAMS, int *b, kv_rows *kv)
{
    const int tile = get_global_id(1) % ntiles, hk = get_global_id(1) / ntiles;
    *b = get_global_id(2);
    *kv = decode_kv_rows(KV_CACHE_ARGS, kv_heads, *b, hk);
    return decode_tile(lens[*b], win, tile * nrows, q_heads / kv_heads, hk, sq, causal,
                       get_group_id(0), chunk);
}
#endif

/* The arguments of the work-group families' prefill kernels (tiled.cl,
 * flash.cl); global (nblk * work-group, Hq, B). */
#define FWD_TILE_PARAMS                                                                         \
    __global const storage_t *q, ulong4 qg, __global const storage_t *k, ulong4 kg,              \
        __global const storage_t *v, ulong4 vg, __global storage_t *o, ulong4 og,               \
        __global float *lse, int write_lse, __global const int4 *lens, int q_heads,              \
        int kv_heads, int sq, int causal, float qscale, int nblk, VARIANT_PARAMS

#ifndef KV_INT8 /* prefill's K/V are storage_t; an int8 build is a decode */
/* A prefill work-group's tile (FWD_TILE_PARAMS' geometry): nrows rows of
 * one head, the row block nblk - 1 - group (the heaviest, last rows first;
 * with PACKED counted from the block holding the entry's q_start), all
 * their keys; *kv the rows of its KV head, key j at buffer row
 * kv_start + j. */
inline tile_rows fwd_tile(__global const int4 *lens, int nrows, int nblk, int q_heads,
                          int kv_heads, int sq, int causal, __global const storage_t *k, ulong4 kg,
                          __global const storage_t *v, ulong4 vg, kv_rows *kv)
{
    const int h = get_global_id(1), b = get_global_id(2);
#if PACKED
    const int blk = lens[b].x / nrows + nblk - 1 - (int)get_group_id(0);
#else
    const int blk = nblk - 1 - (int)get_group_id(0);
#endif
    const int hk = h / (q_heads / kv_heads);
    const int4 len = lens[b];
    kv->k = k + row_index(kg, b, hk, len.z);
    kv->v = v + row_index(vg, b, hk, len.z);
    kv->kstride = kg.s3;
    kv->vstride = vg.s3;
    const tile_rows m = {len, blk * nrows, 1, h, sq, causal, 0, INT_MAX};
    return m;
}
#endif

/* The key range of a tile's nrows rows: [*lmin, return) covers every
 * live row's keys [lo, hi) (row_span); *hmin is the nearest row end and *lmax the furthest
 * row start: a tile inside [lmax, hmin) needs no per-row limits. Without a
 * window, *lmin = *lmax = j_lo. */
inline int tile_span(tile_rows m, int2 win, int nrows, int *lmin, int *hmin, int *lmax)
{
    int i, h, hmax = m.j_lo;
    *lmin = *hmin = INT_MAX;
    *lmax = m.j_lo;
    for (int r = 0; r < nrows; r++) {
        int lo;
        const int hr = row_span(m, r, win, &i, &h, &lo);
        if (hr > lo) {
            hmax = max(hmax, hr);
            *hmin = min(*hmin, hr);
            *lmin = min(*lmin, lo);
            *lmax = max(*lmax, lo);
        }
    }
    *lmin = min(*lmin, hmax);
    return hmax;
}

/* Whether key j is in [lo, hi). Without a window lo is the tile's (or the
 * split's) first key or below it, so only hi is compared. */
inline int in_span(int j, int lo, int hi)
{
#if WINDOW
    return j >= lo && j < hi;
#else
    return j < hi;
#endif
}

/* The logit of query buffer row i of head h and key j from s = (Q
 * pre-scaled) . K: variants.cl's variant_logit (softcap, ALiBi, mask; the
 * mask only when add_mask: the tile's part of it is not all zero). */
inline float tile_logit(variants va, tile_rows m, int b, float s, int j, int i, int h,
                        int add_mask)
{
#if SOFTCAP || ALIBI || MASK
    ulong mrow = 0;
#if MASK
    mrow = mask_row(va, b, h, i);
#endif
    s = variant_logit(va, s, j, m.len.z + j, row_pos(i, m.len), row_slope(va, h), mrow, add_mask);
#endif
    return s;
}

/* The mask summary's kind (MASK_TILE_*, mask_tiles.cl) of a prefill
 * work-group's tile of keys from j0: rows m.t0 .. of nrows a block, keys
 * of nkeys; MASK_TILE_MIXED without a mask (nothing to skip). The same for
 * the whole work-group: skipping the tile keeps barriers uniform. */
inline int tile_mask_kind(variants va, tile_rows m, int b, int nrows, int nkeys, int j0)
{
#if MASK
    return va.tiles[mask_tile(va, b, m.h0, m.t0 / nrows, j0 / nkeys)];
#else
    return MASK_TILE_MIXED;
#endif
}

/* Whether a tile of keys [j0, j0 + nkeys) needs each row's limits: it
 * reaches past some live row's end (hmin, tile_span) or, with a window,
 * before some row's start (lmax). tiled_core.cl's rule. */
inline int tile_guard(int j0, int nkeys, int hmin, int lmax)
{
#if WINDOW
    return j0 + nkeys > hmin || j0 < lmax;
#else
    return j0 + nkeys > hmin;
#endif
}
