/* tiled_core.cl -- the GPU-style kernels' body, shared by prefill (tiled.cl)
 * and decode (decode_tiled.cl): a work-group of WG_SIZE work-items owns the
 * BLOCK_ROWS query rows of one tile (common.cl's tile_rows) and walks its
 * key range in tiles of BLOCK_KEYS keys with an online softmax
 * (FlashAttention-2's partitioning). Q lives in __local, pre-scaled; K/V
 * tiles are staged in __local (in 16-byte loads where the rows allow) or
 * read directly. Joined after common.cl
 * (and decode_common.cl) and before the entry kernel. */

#ifndef BLOCK_ROWS
#define BLOCK_ROWS 16      /* query rows per work-group */
#endif
#ifndef BLOCK_KEYS
#define BLOCK_KEYS 32      /* keys per tile */
#endif
#ifndef WG_SIZE
#define WG_SIZE 128        /* work-items per work-group, a multiple of BLOCK_ROWS */
#endif
#ifndef LOCAL_KV
#define LOCAL_KV 1         /* 1: stage K/V tiles in __local; 0: read them from global */
#endif

#if WG_SIZE % BLOCK_ROWS
#error "WG_SIZE must be a multiple of BLOCK_ROWS"
#endif
#define TPR (WG_SIZE / BLOCK_ROWS)              /* work-items per query row */
#define DPT ((HEAD_DIM + TPR - 1) / TPR)        /* output columns per work-item */
/* local row stride: D rounded up to a float4, plus one float4 against bank conflicts */
#define DS (((HEAD_DIM + 3) / 4) * 4 + 4)

/* The work-group's __local memory, one variable the entry kernel declares
 * (OpenCL C allows __local only at kernel scope). The float4 rows come
 * first, each DS floats, so with the struct 16-byte aligned every row
 * starts 16-byte aligned (the staging below stores them as float4; the
 * host's local_bytes rounds the size up to 16 as the alignment does). */
typedef struct __attribute__((aligned(16))) {
    float q[BLOCK_ROWS * DS];
#if LOCAL_KV
    float k[BLOCK_KEYS * DS];
    float v[BLOCK_KEYS * DS];
#endif
    float s[BLOCK_ROWS * BLOCK_KEYS];
    /* l - lc: each row's softmax denominator, compensated (common.cl) */
    float m[BLOCK_ROWS], l[BLOCK_ROWS], lc[BLOCK_ROWS], a[BLOCK_ROWS];
} tiled_local;

/* ---- Rows staged into __local in 16-byte loads ----
 * A run of VW elements (16 bytes) at a 16-byte aligned address is read in
 * one load, converted in fp32 and stored as float4 to a 16-byte aligned
 * __local address: a warp moves 512 bytes per load instead of 64 (f16) or
 * 128 (f32). ST_VW: storage_t (Q, prefill's K/V) elements per 16 bytes;
 * KV_VW: cache_t elements (the int8 cache: 16). The 16-bit types are
 * unpacked from 32-bit words: OpenCL devices are little-endian in practice
 * (element 2i in word i's low half); without cl_khr_fp16 there is no
 * as_half, so a half's bits are converted by hand, exactly (halves4).
 * Written without swizzles or scalar-to-vector splats: Oclgrind's
 * uninitialised-value pass marks every shuffle's result undefined. */
#if STORAGE == 0
#define ST_VW 4
#else
#define ST_VW 8
#endif
#ifdef KV_INT8
#define KV_VW 16
#else
#define KV_VW ST_VW
#endif

#if STORAGE == 1
/* four IEEE halves (the low 16 bits of each h) as floats, as vload_half
 * gives them: zeros and subnormals through an exact int-to-float times
 * 2^-24 (no fp32 subnormal involved, so a flush-to-zero device agrees) */
inline float4 halves4(uint4 h)
{
    const uint4 e = h & 0x7c00u, a = h & 0x7fffu;
    uint4 f = (a << 13) + (112u << 23);                           /* rebias 15 -> 127 */
    f = select(f, (a << 13) | 0x7f800000u, e == (uint4)0x7c00u);   /* inf, NaN */
    f = select(f, as_uint4(convert_float4(a) * 0x1p-24f), e == (uint4)0u);
    return as_float4(f | (h & 0x8000u) << 16);
}
#endif

/* 16-bit element pairs: words x, y as elements 2x.lo, 2x.hi, 2y.lo, 2y.hi */
#if STORAGE == 1
#define PAIRS4(x, y) halves4((uint4)((x) & 0xffffu, (x) >> 16, (y) & 0xffffu, (y) >> 16))
#elif STORAGE == 2
#define PAIRS4(x, y) as_float4((uint4)((x) << 16, (x) & 0xffff0000u, (y) << 16, (y) & 0xffff0000u))
#endif

/* The 16 bytes of storage_t at p (16-byte aligned) times s, as ST_VW
 * floats at dst (16-byte aligned) */
inline void stage_st16(__local float *dst, __global const storage_t *p, float s)
{
    const float4 s4 = (float4)(s, s, s, s);
    __local float4 *d4 = (__local float4 *)dst;
#if STORAGE == 0
    d4[0] = *(__global const float4 *)p * s4;
#else
    const uint4 u = *(__global const uint4 *)p;
    d4[0] = PAIRS4(u.s0, u.s1) * s4;
    d4[1] = PAIRS4(u.s2, u.s3) * s4;
#endif
}

/* Whether float4 q of the KV_VW elements from column d of a __local K/V
 * row is inside the row's columns rounded up to 4, all that DS holds (an
 * int8 vector at the row's end may reach past it) and all that is read */
#define KV_CHUNK(d, q) (HEAD_DIM % KV_VW == 0 || (d) + 4 * (q) < HEAD_DIM)

/* The 16 bytes of cache_t at p (16-byte aligned) times s (KV_INT8: the
 * row's scale; else 1, a constant here), or zeros when !in, as
 * KV_VW floats at column d of the __local row dst (16-byte aligned) */
inline void stage_kv16(__local float *dst, int d, __global const cache_t *p, float s, int in)
{
#ifdef KV_INT8
    __local float4 *d4 = (__local float4 *)dst;
    if (!in) {
        for (int q = 0; q < 4; q++)
            if (KV_CHUNK(d, q)) d4[q] = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
        return;
    }
    const float4 s4 = (float4)(s, s, s, s);
    const uint4 u = *(__global const uint4 *)p;
    d4[0] = convert_float4(as_char4(u.s0)) * s4;
    if (KV_CHUNK(d, 1)) d4[1] = convert_float4(as_char4(u.s1)) * s4;
    if (KV_CHUNK(d, 2)) d4[2] = convert_float4(as_char4(u.s2)) * s4;
    if (KV_CHUNK(d, 3)) d4[3] = convert_float4(as_char4(u.s3)) * s4;
#else
    if (in) {
        stage_st16(dst, p, 1.0f); /* s is 1 */
    } else {
        __local float4 *d4 = (__local float4 *)dst;
        for (int q = 0; q < KV_VW / 4; q++)
            if (KV_CHUNK(d, q)) d4[q] = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
    }
#endif
}

/* A tile's K/V rows: KV_NV whole vectors of KV_VW elements, then KV_TAIL
 * elements one by one. A decode reads its cache (DECODE_KERNELS): rows of
 * DIM_PAD elements, a multiple of 16, each 16-byte aligned (a buffer's
 * start, plus whole rows) and zero past HEAD_DIM (kv_cache.c), so the last
 * vector may reach into the padding; no __local column past HEAD_DIM is
 * ever read (score and the P.V loop stop there). Prefill reads the
 * caller's tensors: whole vectors inside HEAD_DIM only. */
#ifdef DECODE_KERNELS
#if DIM_PAD % 16
#error "DIM_PAD must be a multiple of 16 (whole 16-byte vectors per cache row)"
#endif
#define KV_NV ((HEAD_DIM + KV_VW - 1) / KV_VW)
#define KV_TAIL 0
#else
#define KV_NV (HEAD_DIM / KV_VW)
#define KV_TAIL (HEAD_DIM % KV_VW)
#endif
#define Q_NV (HEAD_DIM / ST_VW) /* Q: the caller's tensor, whole vectors inside HEAD_DIM */
#define Q_TAIL (HEAD_DIM % ST_VW)

/* q . k over HEAD_DIM, q from __local; k from __local (LOCAL_KV) or global */
#if LOCAL_KV
inline float score(__local const float *qr, __local const float *kr)
{
    float acc = 0.0f;
    for (int d = 0; d < HEAD_DIM / 4; d++) acc += dot(vload4(d, qr), vload4(d, kr));
    for (int d = HEAD_DIM / 4 * 4; d < HEAD_DIM; d++) acc = mad(qr[d], kr[d], acc);
    return acc;
}
#else
inline float score(__local const float *qr, __global const cache_t *kr)
{
    float acc = 0.0f;
    for (int d = 0; d < HEAD_DIM; d++) acc = mad(qr[d], KV_LOAD(kr, d), acc);
    return acc;
}
#endif

/* Online softmax statistics of row `row` over the tile's scores s (one
 * work-item a row): s becomes the weights exp2(s - m), m the new running
 * max, l - lc the rescaled denominator; a the factor rescaling O. */
inline void softmax_row(__local tiled_local *tl, int row)
{
    __local float *sr = tl->s + row * BLOCK_KEYS;
    float mb = sr[0];
    for (int c = 1; c < BLOCK_KEYS; c++) mb = max(mb, sr[c]);
    const float m_old = tl->m[row];
    const float m_new = max(m_old, mb);
    float sum = 0.0f;
    for (int c = 0; c < BLOCK_KEYS; c++) {
        const float e = exp2(sr[c] - m_new);
        sr[c] = e;
        sum += e;
    }
    const float alpha = exp2(m_old - m_new);
    tl->a[row] = alpha;
    float l = tl->l[row] * alpha, lc = tl->lc[row] * alpha;
    kahan_add(&l, &lc, sum);
    tl->l[row] = l;
    tl->lc[row] = lc;
    tl->m[row] = m_new;
}

/* The tile's attention over keys [m.j_lo, m.j_end) of kv (key j of content
 * order at row j; tile.cl's kv_tile_row finds each tile's rows), with the
 * variants of va. A row's result: unsplit (nsplit 1), O at row (b, h, i)
 * of o and, with write_lse, its natural-log LSE
 * (finish_row: with the sink; -inf for an empty row); split, a partial for
 * attn_decode_combine (decode_common.cl), without the sink: O normalised
 * over this split's keys at part_o[(lse_index * nsplit + split) *
 * DIM_PAD], its log2 LSE or EMPTY_LSE at part_lse[lse_index * nsplit +
 * split]. mask_tiles: prefill, whose mask has a per-tile summary
 * (mask_tiles.cl); decode reads its mask directly. Always inlined:
 * prefill's constant nsplit, j range and mask_tiles drop the code they
 * rule out. */
inline __attribute__((always_inline)) void tiled_attend(
    __local tiled_local *tl, tile_rows m, int b, int q_heads, __global const storage_t *q,
    ulong4 qg, float qscale, kv_rows kv, __global storage_t *o, ulong4 og, __global float *lse,
    int write_lse, __global float *part_o, __global float *part_lse, int nsplit, int split,
    variants va, int mask_tiles)
{
    const int tid = get_local_id(0);
    int qi = 0, qh = 0, lr;

    /* the work-group's key range; it starts at a whole tile (j_lo is one:
     * a decode split's start, prefill's 0), so that tiles outside every live row's
     * keys are never visited and prefill's tiles are the mask summary's */
    int lmin, hmin, lmax;
    const int hmax = tile_span(m, va.win, BLOCK_ROWS, &lmin, &hmin, &lmax);
    const int jfirst = lmin / BLOCK_KEYS * BLOCK_KEYS;
#if LOCAL_KV
#ifdef DECODE_KERNELS
    const int kv_wide = 1; /* the cache's rows (KV_NV) */
#else
    /* the caller's K/V rows of this head: 16-byte loads when each starts
     * 16-byte aligned (the same for the whole work-group) */
    const int kv_wide = kv_rows_aligned16(kv, KV_VW);
#endif
#endif

    /* Q, pre-scaled: whole vectors, in 16-byte loads where the row's
     * element is 16-byte aligned (else one by one), then the rest */
#if Q_NV
    for (int i = tid; i < BLOCK_ROWS * Q_NV; i += WG_SIZE) {
        const int r = i / Q_NV, d = i % Q_NV * ST_VW;
        const int live = row_span(m, r, va.win, &qi, &qh, &lr) > lr;
        __local float *dst = tl->q + r * DS + d;
        if (live) {
            __global const storage_t *src = q + row_index(qg, b, qh, qi) + d;
            if (ALIGNED16(src))
                stage_st16(dst, src, qscale);
            else
                for (int e = 0; e < ST_VW; e++) dst[e] = LOAD(src, e) * qscale;
        } else {
            for (int e = 0; e < ST_VW; e++) dst[e] = 0.0f;
        }
    }
#endif
#if Q_TAIL
    for (int i = tid; i < BLOCK_ROWS * Q_TAIL; i += WG_SIZE) {
        const int r = i / Q_TAIL, d = Q_NV * ST_VW + i % Q_TAIL;
        const int live = row_span(m, r, va.win, &qi, &qh, &lr) > lr;
        tl->q[r * DS + d] = live ? LOAD(q, row_index(qg, b, qh, qi) + d) * qscale : 0.0f;
    }
#endif
    if (tid < BLOCK_ROWS) {
        tl->m[tid] = MAX_INIT;
        tl->l[tid] = tl->lc[tid] = 0.0f;
    }
    const int row = tid / TPR, lane = tid % TPR;
    int my_i, my_h, my_lo;
    /* this work-item's row: its keys [my_lo, my_hi) */
    const int my_hi = row_span(m, row, va.win, &my_i, &my_h, &my_lo);
    /* O: summed plainly over FOLD_BLOCKS tiles (acc), each fold added to a
     * compensated total (tot - cmp) */
    float acc[DPT], tot[DPT], cmp[DPT];
    UNROLL
    for (int t = 0; t < DPT; t++) acc[t] = tot[t] = cmp[t] = 0.0f;
    int nfold = 0;
    /* the global fence orders the Q reads before any O write when out == q */
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);

    for (int j0 = jfirst; j0 < hmax; j0 += BLOCK_KEYS) {
        int add_mask = 1;
#if MASK
        if (mask_tiles) { /* the same for the whole work-group: barriers stay uniform */
            const uchar kind = va.tiles[mask_tile(va, b, m.h0, m.t0 / BLOCK_ROWS, j0 / BLOCK_KEYS)];
            if (kind == MASK_TILE_MASKED) continue;
            add_mask = kind == MASK_TILE_MIXED;
        }
#endif
        const int nk = min(BLOCK_KEYS, hmax - j0); /* keys of this tile inside the range */
        const kv_row jb = kv_tile_row(kv, j0); /* key j0 + c at row jb + c of kv */
#if LOCAL_KV
        /* a key some live row sees, else zeros (a row outside the keys may
         * hold inf or NaN); KV_INT8: dequantized here, once per element */
#if KV_NV
        if (kv_wide)
            for (int i = tid; i < BLOCK_KEYS * KV_NV; i += WG_SIZE) {
                const int c = i / KV_NV, d = i % KV_NV * KV_VW;
                const int in = in_span(j0 + c, lmin, j0 + nk);
                const kv_row jr = jb + c;
                stage_kv16(tl->k + c * DS + d, d, kv.k + (ulong)jr * kv.kstride + d,
                           in ? K_SCALED(1.0f, kv, jr) : 0.0f, in);
                stage_kv16(tl->v + c * DS + d, d, kv.v + (ulong)jr * kv.vstride + d,
                           in ? V_SCALED(1.0f, kv, jr) : 0.0f, in);
            }
#endif
#ifndef DECODE_KERNELS /* a decode's vectors cover its rows (KV_TAIL 0) */
        /* the columns the vectors leave: all of them when the rows are not */
        const int d0 = kv_wide ? KV_NV * KV_VW : 0, nd = kv_wide ? KV_TAIL : HEAD_DIM;
        for (int i = tid; i < BLOCK_KEYS * nd; i += WG_SIZE) {
            const int c = i / nd, d = d0 + i % nd;
            const int in = in_span(j0 + c, lmin, j0 + nk);
            tl->k[c * DS + d] =
                in ? K_SCALED(KV_LOAD(kv.k, (ulong)(jb + c) * kv.kstride + d), kv, jb + c) : 0.0f;
            tl->v[c * DS + d] =
                in ? V_SCALED(KV_LOAD(kv.v, (ulong)(jb + c) * kv.vstride + d), kv, jb + c) : 0.0f;
        }
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
        /* only a tile reaching past some live row's end or before its start
         * needs each row's limits; ALiBi and the mask need each row's query
         * and head */
#if ALIBI || MASK
        const int need_rows = 1;
#elif WINDOW
        const int need_rows = j0 + BLOCK_KEYS > hmin || j0 < lmax;
#else
        const int need_rows = j0 + BLOCK_KEYS > hmin;
#endif
        for (int i = tid; i < BLOCK_ROWS * BLOCK_KEYS; i += WG_SIZE) {
            const int r = i / BLOCK_KEYS, c = i % BLOCK_KEYS, j = j0 + c;
            lr = j0;
            const int hr = need_rows ? row_span(m, r, va.win, &qi, &qh, &lr) : hmax;
            float s = MASKED;
            if (in_span(j, lr, hr)) {
#if LOCAL_KV
                s = score(tl->q + r * DS, tl->k + c * DS);
#else
                s = K_SCALED(score(tl->q + r * DS, kv.k + (ulong)(jb + c) * kv.kstride), kv,
                             jb + c);
#endif
                s = tile_logit(va, m, b, s, j, qi, qh, add_mask);
            }
            tl->s[i] = s;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (tid < BLOCK_ROWS) softmax_row(tl, tid);
        barrier(CLK_LOCAL_MEM_FENCE);
        const float alpha = tl->a[row];
        if (alpha != 1.0f) {
            UNROLL
            for (int t = 0; t < DPT; t++) {
                acc[t] *= alpha;
                tot[t] *= alpha;
                cmp[t] *= alpha;
            }
        }
        __local const float *pr = tl->s + row * BLOCK_KEYS;
        /* only this row's keys: a key outside them has weight zero, but its
         * V row may hold inf or NaN (0 * inf = NaN) */
        const int nr = min(nk, my_hi - j0);
        for (int c = WINDOW ? max(my_lo - j0, 0) : 0; c < nr; c++) {
#if LOCAL_KV
            const float pc = pr[c];
            __local const float *vr = tl->v + c * DS;
            UNROLL
            for (int t = 0; t < DPT; t++) {
                const int d = lane + t * TPR;
                if (d < HEAD_DIM) acc[t] = mad(pc, vr[d], acc[t]);
            }
#else
            const float pc = V_SCALED(pr[c], kv, jb + c); /* KV_INT8: V's scale in P */
            __global const cache_t *vr = kv.v + (ulong)(jb + c) * kv.vstride;
            UNROLL
            for (int t = 0; t < DPT; t++) {
                const int d = lane + t * TPR;
                if (d < HEAD_DIM) acc[t] = mad(pc, KV_LOAD(vr, d), acc[t]);
            }
#endif
        }
        if (++nfold == FOLD_BLOCKS) {
            nfold = 0;
            UNROLL
            for (int t = 0; t < DPT; t++) {
                kahan_add(&tot[t], &cmp[t], acc[t]);
                acc[t] = 0.0f;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* before the next tile overwrites s, k, v */
    }
    UNROLL
    for (int t = 0; t < DPT; t++) kahan_add(&tot[t], &cmp[t], acc[t]); /* the last fold */

    if (my_i >= m.sq) return; /* a row past the tile's queries */
    const int query = my_i >= m.len.x && my_i < m.len.x + m.len.y; /* not a pad row */
    const float l = my_hi > my_lo ? tl->l[row] - tl->lc[row] : 0.0f;
    if (nsplit == 1) {
        float lse_l2;
        const float inv = finish_row(va, my_h, tl->m[row], l, query, &lse_l2);
        if (PACKED && !query) return; /* packed: another sequence's row */
        const ulong orow = row_index(og, b, my_h, my_i);
        UNROLL
        for (int t = 0; t < DPT; t++) {
            const int d = lane + t * TPR;
            if (d < HEAD_DIM) STORE(o, orow + d, l > 0.0f ? (tot[t] - cmp[t]) * inv : 0.0f);
        }
        if (write_lse && lane == 0)
            lse[variant_lse_index(b, q_heads, m.sq, my_h, my_i)] = lse_l2 * LN2;
    } else {
#ifdef DECODE_KERNELS /* decode_common.cl: only decode splits */
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
        const ulong pr = lse_index(b, q_heads, m.sq, my_h, my_i) * nsplit + split;
        if (l > 0.0f) {
            UNROLL
            for (int t = 0; t < DPT; t++) {
                const int d = lane + t * TPR;
                if (d < HEAD_DIM) part_o[pr * DIM_PAD + d] = (tot[t] - cmp[t]) * inv;
            }
        }
        if (lane == 0) part_lse[pr] = split_lse(tl->m[row], l);
#endif
    }
}
