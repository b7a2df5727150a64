/* variants.cl -- the attention variants (attn.h's attn_problem: sliding
 * window, logit softcap, sinks, ALiBi, an additive mask, packed batches)
 * as every kernel family sees them, joined right after common.cl. Each is a
 * macro the host defines only when the problem uses it, so that a plain
 * problem compiles to exactly the kernels it had before; the values come as
 * the kernel arguments VARIANT_PARAMS, the same list in every entry. Logits
 * are in the log2 domain here (the kernels use exp2). */

#ifndef WINDOW
#define WINDOW 0   /* 1: keys outside [pos - left, pos + right] are not visible */
#endif
#ifndef SOFTCAP
#define SOFTCAP 0  /* 1: s = cap * tanh(s), Q pre-scaled by scale / softcap */
#endif
#ifndef SINKS
#define SINKS 0    /* 1: a per-head logit joins each row's softmax denominator */
#endif
#ifndef ALIBI
#define ALIBI 0    /* 1: s -= slope_h * log2(e) * |j - pos| */
#endif
#ifndef MASK
#define MASK 0     /* 1: an fp32 additive mask; 2: an fp16 one */
#endif
#ifndef PACKED
#define PACKED 0   /* 1: packed sequences: pad rows are not written, lse is [Hq][Sq] */
#endif

#if MASK == 2
typedef half mask_t;
#define MASK_LOAD(p, i) vload_half((i), (p))
#else
typedef float mask_t;
#define MASK_LOAD(p, i) ((p)[i])
#endif

#if SOFTCAP
/* tanh for the softcap, as name(x) over float type T (defined here for
 * float, by vector_core.cl for its vectors): x P(x^2) / Q(x^2), a rational
 * fit of minimal relative error on [0, 9] (2.1e-8 in exact arithmetic;
 * swept over every float below 12 against tanh in double, 3.2e-7 at most,
 * 1.6e-7 below 1e-3, where the softcap -> infinity limit lives), x clamped
 * at +-9, where tanh rounds to +-1. Four multiply-adds a polynomial and a
 * division: the exp2 form cost the vector family 38% over plain causal
 * attention (S=2048), OpenCL's tanh the tiled one 23%. */
#define SOFT_TANH_LIMIT 9.0f
#define SOFT_TANH(name, T)                                                                      \
    inline __attribute__((always_inline)) T name(T x)                                           \
    {                                                                                           \
        const T c = clamp(x, (T)(-SOFT_TANH_LIMIT), (T)(SOFT_TANH_LIMIT)), t = c * c;           \
        const T p = (((1.3353187e-8f * t + 2.0608034e-5f) * t + 3.4955261e-3f) * t +            \
                     1.3380974e-1f) * t + 0.99999998f;                                          \
        const T q = (((7.7759580e-7f * t + 3.2855320e-4f) * t + 2.5876749e-2f) * t +            \
                     4.6714290e-1f) * t + 1.0f;                                                 \
        return c * p / q;                                                                     \
    }
SOFT_TANH(soft_tanh, float)
#endif

/* The arguments every main kernel ends with (host: variants.c). */
#define VARIANT_PARAMS                                                                          \
    int2 var_win, float var_cap, __global const float *var_sinks,                               \
        __global const float *var_slopes, __global const mask_t *var_mask, ulong4 var_mg,       \
        ulong var_mk, __global const uchar *var_tiles, int4 var_mt
/* ... gathered into one value for the cores: `VARIANTS(va);` in the entry */
#define VARIANTS(name)                                                                          \
    const variants name = {var_win, var_cap, var_sinks, var_slopes, var_mask, var_mg, var_mk,   \
                           var_tiles, var_mt}

typedef struct {
    int2 win;                     /* (left, right), -1 = unlimited; each <= 2^30 */
    float cap;                    /* softcap * log2(e) */
    __global const float *sinks;  /* per query head, natural log */
    __global const float *slopes; /* per query head, natural log per key step */
    __global const mask_t *mask;  /* attn_mask: element (offset, batch, head, q) strides in mg */
    ulong4 mg;
    ulong mk;                     /* the mask's key stride */
    /* prefill: the mask's per-tile summary (mask_tiles.cl, mask_tile); mt.x
     * its heads (1 when the mask broadcasts them), mt.y its batch entries */
    __global const uchar *tiles;
    int4 mt;
} variants;

/* A tile of the mask is all -inf (skipped: no score is computed), all zero
 * (nothing to add) or neither; mask_tiles.cl writes these. */
#define MASK_TILE_MASKED 0
#define MASK_TILE_ZERO 1
#define MASK_TILE_MIXED 2

/* The key position of query buffer row r (attn.h: bottom-right aligned) */
inline int row_pos(int r, int4 len)
{
    return r - len.x + len.w - len.y;
}

/* Where query buffer row r of (b, h) starts in the mask */
inline ulong mask_row(variants va, int b, int h, int r)
{
    return va.mg.s0 + (ulong)b * va.mg.s1 + (ulong)h * va.mg.s2 + (ulong)r * va.mg.s3;
}

/* The key range [*lo, hi) of query buffer row r: common.cl's visible_keys
 * with the window's two limits (in long: a window of 2^30 either side of
 * any position must not overflow). */
inline int visible_span(int r, int4 len, int causal, int2 win, int *lo)
{
    const int hi = visible_keys(r, len, causal);
    *lo = 0;
#if WINDOW
    if (hi > 0) {
        const long pos = row_pos(r, len);
        if (win.x >= 0) *lo = (int)max(pos - win.x, 0L);
        if (win.y >= 0) return (int)clamp(pos + win.y + 1, 0L, (long)hi);
    }
#endif
    return hi;
}

/* common.cl's row_keys with the window: tile row r's keys [*lo, hi),
 * clamped to the tile's range [j_lo, j_end); the row is live here when hi >
 * *lo. Without WINDOW, *lo = j_lo and hi is row_keys'. */
inline int row_span(tile_rows m, int r, int2 win, int *i, int *h, int *lo)
{
    const int t = m.t0 + r;
    *i = t / m.group;
    *h = m.h0 + t % m.group;
    int l = 0;
    const int hi = *i < m.sq ? min(visible_span(*i, m.len, m.causal, win, &l), m.j_end) : 0;
    *lo = max(l, m.j_lo);
    return hi;
}

/* A logit after the value-changing variants, the log2 domain: s arrives as
 * (Q pre-scaled) . K. slope is the row's ALiBi slope * log2(e); mrow where
 * its mask row starts; key the key's buffer row (its mask column) and j its
 * position. A logit the mask brings below MAX_INIT (also -inf and NaN)
 * becomes MASKED. */
inline float variant_logit(variants va, float s, int j, int key, int pos, float slope, ulong mrow,
                           int add_mask)
{
#if SOFTCAP
    s = va.cap * soft_tanh(s);
#endif
#if ALIBI
    s = mad(slope, (float)min(j - pos, pos - j), s); /* -|j - pos| */
#endif
#if MASK
    if (add_mask) {
        s = mad(MASK_LOAD(va.mask, mrow + (ulong)key * va.mk), LOG2E, s);
        s = s >= MAX_INIT ? s : MASKED;
    }
#endif
    return s;
}

/* The row's ALiBi slope in the log2 domain (0 without ALiBi) */
inline float row_slope(variants va, int h)
{
#if ALIBI
    return va.slopes[h] * LOG2E;
#else
    return 0.0f;
#endif
}

/* A row's final statistics with its head's sink (log2 domain: running max
 * m, denominator l over the keys, live = a query row, pad rows excluded):
 * returns the factor O's sum is multiplied by (1 / denominator, or 0 for a
 * row with nothing to mix) and sets *lse_l2 (-INFINITY when there is
 * neither key nor sink). Without SINKS, the plain 1 / l. */
inline float finish_row(variants va, int h, float m, float l, int live, float *lse_l2)
{
#if SINKS
    if (live) {
        const float sink = va.sinks[h] * LOG2E;
        if (!(l > 0.0f)) { /* no key: zeros, and the sink alone (-inf for a -inf sink) */
            *lse_l2 = sink;
            return 0.0f;
        }
        /* a -inf sink leaves m; not max(), undefined for infinities */
        const float mm = sink > m ? sink : m;
        const float lt = l * exp2(m - mm) + exp2(sink - mm);
        *lse_l2 = mm + log2(lt);
        return exp2(m - mm) / lt;
    }
#endif
    *lse_l2 = l > 0.0f ? m + log2(l) : -INFINITY;
    return l > 0.0f ? 1.0f / l : 0.0f;
}

/* Where row (b, h, buffer row i)'s LSE goes: [B][Hq][Sq], or [Hq][Sq] for
 * packed sequences (their rows never meet) */
inline ulong variant_lse_index(int b, int q_heads, int sq, int h, int i)
{
    return lse_index(PACKED ? 0 : b, q_heads, sq, h, i);
}

#if MASK
/* Where the prefill mask summary (mask_tiles.cl) keeps the tile of row
 * block qb (query buffer rows qb * BLOCK_ROWS ...) and key block kb of
 * batch entry b, head h. The summary starts with a table of one ulong4 per
 * entry (variants.c): where its tiles start, its first row block (the one
 * holding q_start), its key blocks (ceil(kv_len / BLOCK_KEYS)) and its
 * tiles per head; its tiles follow as [head][row block][key block], one
 * head when the mask broadcasts them (mt.x 1). Each entry has only the
 * tiles of its own rows and keys: packed sequences along one token axis
 * would otherwise take B times the axis squared. */
inline ulong mask_tile(variants va, int b, int h, int qb, int kb)
{
    const ulong4 e = vload4(b, (__global const ulong *)va.tiles);
    return e.s0 + (va.mt.x > 1 ? h : 0) * e.s3 + (ulong)(qb - (int)e.s1) * e.s2 + kb;
}
#endif
