/* decode_common.cl -- what both decode kernels share, prepended to each
 * after common.cl: which query rows a tile holds and which keys they see,
 * and the combine kernel that merges split-KV partial results by their LSEs
 * (flash-decoding's second step). */

/* Marks a decode program for the cores (vector_core.cl, tiled_core.cl):
 * rows of the cache's DIM_PAD, and split partial results. A program
 * reading a cache for prefill (pack_cache.cl) has DIM_PAD but not this. */
#define DECODE_KERNELS 1

/* The cache's layout (cache_row, cache_t, KV_CACHE_PARAMS) is
 * kv_cache_rows.cl, joined before this file. The decode kernels look a page
 * up once per key block, so a block must not cross a page: */
#if defined(PAGE_ROWS) && PAGE_ROWS % BLOCK_KEYS
#error "PAGE_ROWS must be a multiple of BLOCK_KEYS"
#endif

/* log2-domain LSE of a partial that saw no key: finite on purpose, as
 * MASKED in common.cl, and skipped by the combine */
#define EMPTY_LSE (-FLT_MAX)

/* A split's log2 LSE from its running max m and denominator l: EMPTY_LSE
 * when no key of it was visible (its O is not written), NaN when one of
 * its logits was not finite (l NaN), so that the combine gives the row what
 * a single pass gives it (finish_row: no visible key) instead of merging
 * the other splits as if that one were empty. */
inline float split_lse(float m, float l)
{
    return l > 0.0f ? m + log2(l) : isnan(l) ? NAN : EMPTY_LSE;
}

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
    int poisoned = 0; /* a split met a non-finite logit: the row as a single pass leaves it */
    for (int s = 0; s < nsplit; s++) {
        m = pl[s] > m ? pl[s] : m; /* not max(), undefined for NaN (poisoned: m unused) */
        poisoned |= isnan(pl[s]);
    }
    float wsum = 0.0f, acc = 0.0f;
    for (int s = 0; s < nsplit && !poisoned; s++) {
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
