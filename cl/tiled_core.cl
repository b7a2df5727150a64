/* tiled_core.cl -- the GPU-style kernels' body, shared by prefill (tiled.cl)
 * and decode (decode_tiled.cl): a work-group of WG_SIZE work-items owns the
 * BLOCK_ROWS query rows of one tile (common.cl's tile_rows) and walks its
 * key range in tiles of BLOCK_KEYS keys with an online softmax
 * (FlashAttention-2's partitioning). Q lives in __local, pre-scaled; K/V
 * tiles are staged in __local or read directly. Joined after common.cl
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
 * (OpenCL C allows __local only at kernel scope). The float4-read rows
 * come first, so they start 16-byte aligned. */
typedef struct {
    float q[BLOCK_ROWS * DS];
#if LOCAL_KV
    float k[BLOCK_KEYS * DS];
    float v[BLOCK_KEYS * DS];
#endif
    float s[BLOCK_ROWS * BLOCK_KEYS];
    /* l - lc: each row's softmax denominator, compensated (common.cl) */
    float m[BLOCK_ROWS], l[BLOCK_ROWS], lc[BLOCK_ROWS], a[BLOCK_ROWS];
} tiled_local;

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
 * order at row j; tile.cl's kv_tile finds each tile's rows), with the
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

    for (int i = tid; i < BLOCK_ROWS * HEAD_DIM; i += WG_SIZE) {
        const int r = i / HEAD_DIM, d = i % HEAD_DIM;
        const int live = row_span(m, r, va.win, &qi, &qh, &lr) > lr;
        tl->q[r * DS + d] = live ? LOAD(q, row_index(qg, b, qh, qi) + d) * qscale : 0.0f;
    }
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
        int jb;
        const kv_rows t = kv_tile(kv, j0, &jb); /* key j0 + c at row jb + c */
#if LOCAL_KV
        for (int i = tid; i < BLOCK_KEYS * HEAD_DIM; i += WG_SIZE) {
            const int c = i / HEAD_DIM, d = i % HEAD_DIM;
            const int in = in_span(j0 + c, lmin, j0 + nk); /* a key some live row sees */
            /* KV_INT8: dequantized here, once per element */
            tl->k[c * DS + d] =
                in ? K_SCALED(KV_LOAD(t.k, (ulong)(jb + c) * t.kstride + d), t, jb + c) : 0.0f;
            tl->v[c * DS + d] =
                in ? V_SCALED(KV_LOAD(t.v, (ulong)(jb + c) * t.vstride + d), t, jb + c) : 0.0f;
        }
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
                s = K_SCALED(score(tl->q + r * DS, t.k + (ulong)(jb + c) * t.kstride), t, jb + c);
#endif
                s = tile_logit(va, m, b, s, j, qi, qh, add_mask);
            }
            tl->s[i] = s;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (tid < BLOCK_ROWS) softmax_row(tl, tid);
        barrier(CLK_LOCAL_MEM_FENCE);
        const float alpha = tl->a[row];
        if (alpha != 1.0f)
            for (int t = 0; t < DPT; t++) {
                acc[t] *= alpha;
                tot[t] *= alpha;
                cmp[t] *= alpha;
            }
        __local const float *pr = tl->s + row * BLOCK_KEYS;
        /* only this row's keys: a key outside them has weight zero, but its
         * V row may hold inf or NaN (0 * inf = NaN) */
        const int nr = min(nk, my_hi - j0);
        for (int c = WINDOW ? max(my_lo - j0, 0) : 0; c < nr; c++) {
#if LOCAL_KV
            const float pc = pr[c];
            __local const float *vr = tl->v + c * DS;
            for (int t = 0; t < DPT; t++) {
                const int d = lane + t * TPR;
                if (d < HEAD_DIM) acc[t] = mad(pc, vr[d], acc[t]);
            }
#else
            const float pc = V_SCALED(pr[c], t, jb + c); /* KV_INT8: V's scale in P */
            __global const cache_t *vr = t.v + (ulong)(jb + c) * t.vstride;
            for (int t = 0; t < DPT; t++) {
                const int d = lane + t * TPR;
                if (d < HEAD_DIM) acc[t] = mad(pc, KV_LOAD(vr, d), acc[t]);
            }
#endif
        }
        if (++nfold == FOLD_BLOCKS) {
            nfold = 0;
            for (int t = 0; t < DPT; t++) {
                kahan_add(&tot[t], &cmp[t], acc[t]);
                acc[t] = 0.0f;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* before the next tile overwrites s, k, v */
    }
    for (int t = 0; t < DPT; t++) kahan_add(&tot[t], &cmp[t], acc[t]); /* the last fold */

    if (my_i >= m.sq) return; /* a row past the tile's queries */
    const int query = my_i >= m.len.x && my_i < m.len.x + m.len.y; /* not a pad row */
    const float l = my_hi > my_lo ? tl->l[row] - tl->lc[row] : 0.0f;
    if (nsplit == 1) {
        float lse_l2;
        const float inv = finish_row(va, my_h, tl->m[row], l, query, &lse_l2);
        if (PACKED && !query) return; /* packed: another sequence's row */
        const ulong orow = row_index(og, b, my_h, my_i);
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
        if (l > 0.0f)
            for (int t = 0; t < DPT; t++) {
                const int d = lane + t * TPR;
                if (d < HEAD_DIM) part_o[pr * DIM_PAD + d] = (tot[t] - cmp[t]) * inv;
            }
        if (lane == 0) part_lse[pr] = l > 0.0f ? tl->m[row] + log2(l) : EMPTY_LSE;
#endif
    }
}
