/* flash.cl -- the GPU prefill family built like an SGEMM on FlashAttention-2's
 * partitioning: a work-group of RG x CG work-items owns BLOCK_ROWS query
 * rows of one (batch, head); each work-item computes a TILE_M x TILE_N
 * register micro-tile of S = Q.K^T from __local with float4 reads, keeps
 * its TILE_M rows' running max and sum in registers and, for P.V, the same
 * rows' O on the float4 columns cg, cg + CG, ... The work-items sharing a
 * row (one row group) combine its maximum through __local; P goes through
 * __local once per key tile. Joined after common.cl, variants.cl and
 * tile.cl (kv_rows, tile_span, in_span, tile_logit). With PREFETCH the
 * next K/V tile is read from global into registers while this one is
 * computed (SGEMM's register double-buffering: __local holds one tile, and
 * the global reads' latency hides behind the arithmetic), at the cost of
 * KV_PER_WI float4 of K and of V held per work-item. Unmeasured on GPUs
 * (host/kernels/desc_flash.c). */

#ifndef BLOCK_ROWS
#define BLOCK_ROWS 64      /* query rows per work-group */
#endif
#ifndef BLOCK_KEYS
#define BLOCK_KEYS 32      /* keys per K/V tile, a multiple of 4 */
#endif
#ifndef TILE_M
#define TILE_M 4           /* query rows per work-item's micro-tile */
#endif
#ifndef TILE_N
#define TILE_N 2           /* keys per work-item's micro-tile */
#endif
#ifndef PREFETCH
#define PREFETCH 0         /* 1: the next K/V tile read into registers during this one */
#endif

#if BLOCK_ROWS % TILE_M || BLOCK_KEYS % TILE_N || BLOCK_KEYS % 4
#error "BLOCK_ROWS must be a multiple of TILE_M, BLOCK_KEYS of TILE_N and of 4"
#endif
#define RG (BLOCK_ROWS / TILE_M)          /* row groups: row r belongs to group r % RG */
#define CG (BLOCK_KEYS / TILE_N)          /* column groups: key c to group c % CG */
#define FLASH_WG (RG * CG)                /* work-items per work-group */
#define D4 ((HEAD_DIM + 3) / 4)           /* float4 columns of a row (zero-padded) */
#define DS4 (D4 + 1)                      /* __local row stride in float4: odd, so the
                                           * CG work-items reading CG rows hit distinct banks */
#define DT4 ((D4 + CG - 1) / CG)          /* float4 columns of O per work-item */
#define KV4 (BLOCK_KEYS * D4)             /* float4 of a K (or V) tile */
#define KV_PER_WI ((KV4 + FLASH_WG - 1) / FLASH_WG) /* of them each work-item reads */

/* The work-group's __local memory (declared by the kernel). float4 arrays
 * first: their elements stay 16-byte aligned. */
typedef struct {
    float4 q[BLOCK_ROWS * DS4]; /* Q, pre-scaled; zeros in dead rows and pad columns */
    float4 k[BLOCK_KEYS * DS4];
    float4 v[BLOCK_KEYS * DS4];
    float4 p[BLOCK_ROWS * BLOCK_KEYS / 4]; /* the tile's weights exp2(s - m) */
    float red[BLOCK_ROWS * CG];            /* each work-item's maximum of its keys, per row */
} flash_local;

/* Four elements of a row from column 4 * d4, zeros past HEAD_DIM; f16 and
 * bf16 converted to float. */
inline float4 load4(__global const storage_t *p, ulong at, int d4)
{
    const int d = d4 * 4;
    at += (ulong)d;
    if (d + 4 <= HEAD_DIM) {
#if STORAGE == 0
        return vload4(0, p + at);
#elif STORAGE == 1
        if ((at & 3) == 0) return vload_half4(at >> 2, p); /* aligned: one 8-byte read */
#else
        return as_float4(convert_uint4(vload4(0, p + at)) << 16);
#endif
    }
    float4 x = (float4)(0.0f);
    x.s0 = LOAD(p, at);
    if (d + 1 < HEAD_DIM) x.s1 = LOAD(p, at + 1);
    if (d + 2 < HEAD_DIM) x.s2 = LOAD(p, at + 2);
    if (d + 3 < HEAD_DIM) x.s3 = LOAD(p, at + 3);
    return x;
}

/* The first tile of keys from j that is not wholly masked (its kind in
 * *kind), or hmax: the same for the whole work-group. */
inline int flash_next_tile(variants va, tile_rows m, int b, int j, int hmax, int *kind)
{
    for (; j < hmax; j += BLOCK_KEYS) {
        *kind = tile_mask_kind(va, m, b, BLOCK_ROWS, BLOCK_KEYS, j);
        if (*kind != MASK_TILE_MASKED) break;
    }
    return j;
}

#if PREFETCH
/* The work-item's share of the K/V tile from j0 (float4 tid, tid +
 * FLASH_WG, ... of it) into kr, vr: zeros for a key no live row sees (past
 * hmax or, with a window, before lmin), whose row may not exist. */
inline __attribute__((always_inline)) void flash_read_tile(kv_rows kv, int j0, int lmin, int hmax,
                                                           int tid, float4 *kr, float4 *vr)
{
    const int nk = min(BLOCK_KEYS, hmax - j0);
    UNROLL
    for (int n = 0; n < KV_PER_WI; n++) {
        const int x = tid + n * FLASH_WG;
        const int c = x / D4, d4 = x % D4;
        const int in = x < KV4 && in_span(j0 + c, lmin, j0 + nk);
        kr[n] = in ? load4(kv.k, (ulong)(j0 + c) * kv.kstride, d4) : (float4)(0.0f);
        vr[n] = in ? load4(kv.v, (ulong)(j0 + c) * kv.vstride, d4) : (float4)(0.0f);
    }
}

/* flash_read_tile's share written to the tile in __local */
inline __attribute__((always_inline)) void flash_store_tile(__local flash_local *tl, int tid,
                                                            const float4 *kr, const float4 *vr)
{
    UNROLL
    for (int n = 0; n < KV_PER_WI; n++) {
        const int x = tid + n * FLASH_WG;
        if (x >= KV4) break;
        const int c = x / D4, d4 = x % D4;
        tl->k[c * DS4 + d4] = kr[n];
        tl->v[c * DS4 + d4] = vr[n];
    }
}
#else
/* The K/V tile from j0 read straight into __local, one float4 at a time
 * (no registers held), zeros where flash_read_tile has them. */
inline void flash_stage_tile(__local flash_local *tl, kv_rows kv, int j0, int lmin, int hmax,
                             int tid)
{
    const int nk = min(BLOCK_KEYS, hmax - j0);
    for (int x = tid; x < KV4; x += FLASH_WG) {
        const int c = x / D4, d4 = x % D4;
        const int in = in_span(j0 + c, lmin, j0 + nk);
        tl->k[c * DS4 + d4] = in ? load4(kv.k, (ulong)(j0 + c) * kv.kstride, d4) : (float4)(0.0f);
        tl->v[c * DS4 + d4] = in ? load4(kv.v, (ulong)(j0 + c) * kv.vstride, d4) : (float4)(0.0f);
    }
}
#endif

/* common.cl's kahan_add on four sums at once (OpenCL C cannot take the
 * address of a vector's element) */
inline void kahan_add4(float4 *s, float4 *c, float4 x)
{
    const float4 y = x - *c;
    const float4 t = *s + y;
    *c = (t - *s) - y;
    *s = t;
}

/* O += P.V for the work-item's rows over the tile's keys [0, nk): with
 * guard, only each row's own keys [lo - j0, hi - j0) (a key outside them
 * has weight zero, but its V row may hold inf or NaN). lsum gets each
 * row's sum of weights. */
inline __attribute__((always_inline)) void flash_pv(
    __local const flash_local *tl, int nk, int j0, int guard, int rg, int cg,
    const int *rlo, const int *rhi, float4 acc[TILE_M][DT4], float *lsum)
{
    __local const float *pw = (__local const float *)tl->p;
    for (int c = 0; c < nk; c++) {
        float4 vv[DT4];
        UNROLL
        for (int t = 0; t < DT4; t++) {
            const int d4 = cg + t * CG;
            vv[t] = d4 < D4 ? tl->v[c * DS4 + d4] : (float4)0.0f;
        }
        UNROLL
        for (int i = 0; i < TILE_M; i++) {
            if (guard && !(j0 + c >= rlo[i] && j0 + c < rhi[i])) continue;
            const float w = pw[(rg + i * RG) * BLOCK_KEYS + c];
            lsum[i] += w;
            UNROLL
            for (int t = 0; t < DT4; t++) acc[i][t] = mad((float4)w, vv[t], acc[i][t]);
        }
    }
}

/* Global (nblk * FLASH_WG, Hq, B), local (FLASH_WG, 1, 1); the arguments
 * are attn_fwd_tiled's (tile.cl). */
__kernel __attribute__((reqd_work_group_size(FLASH_WG, 1, 1)))
void attn_fwd_flash(FWD_TILE_PARAMS)
{
    __local flash_local tl;
    VARIANTS(va);
    kv_rows kv;
    const tile_rows m =
        fwd_tile(lens, BLOCK_ROWS, nblk, q_heads, kv_heads, sq, causal, k, kg, v, vg, &kv);
    const int b = get_global_id(2);
    const int tid = get_local_id(0), rg = tid / CG, cg = tid % CG;

    int lmin, hmin, lmax;
    const int hmax = tile_span(m, va.win, BLOCK_ROWS, &lmin, &hmin, &lmax);
    const int jfirst = lmin / BLOCK_KEYS * BLOCK_KEYS;

    for (int x = tid; x < BLOCK_ROWS * D4; x += FLASH_WG) {
        const int r = x / D4, d4 = x % D4;
        int qi, qh, lo;
        const int live = row_span(m, r, va.win, &qi, &qh, &lo) > lo;
        tl.q[r * DS4 + d4] = live ? load4(q, row_index(qg, b, qh, qi), d4) * qscale : (float4)(0.0f);
    }
    /* this work-item's rows rg + i * RG: their query, head and keys [rlo, rhi) */
    int ri[TILE_M], rh[TILE_M], rlo[TILE_M], rhi[TILE_M];
    float mrow[TILE_M], l[TILE_M], lc[TILE_M]; /* running max; denominator l - lc (Kahan) */
    /* O summed plainly over FOLD_BLOCKS tiles (acc), each fold added to a
     * compensated total (tot - cmp), as tiled_core.cl does */
    float4 acc[TILE_M][DT4], tot[TILE_M][DT4], cmp[TILE_M][DT4];
    UNROLL
    for (int i = 0; i < TILE_M; i++) {
        rhi[i] = row_span(m, rg + i * RG, va.win, &ri[i], &rh[i], &rlo[i]);
        mrow[i] = MAX_INIT;
        l[i] = lc[i] = 0.0f;
        UNROLL
        for (int t = 0; t < DT4; t++) acc[i][t] = tot[i][t] = cmp[i][t] = (float4)(0.0f);
    }
    /* a row's key end on tiles that need no per-row limits: 0 for a dead
     * row (a pad row, one past sq), whose mask row must not be read */
    int rtop[TILE_M];
    UNROLL
    for (int i = 0; i < TILE_M; i++) rtop[i] = rhi[i] > rlo[i] ? hmax : 0;
    int nfold = 0;
    /* the global fence orders the Q reads before any O write when out == q */
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);

    int kind = MASK_TILE_MIXED, knext = MASK_TILE_MIXED;
    int j0 = flash_next_tile(va, m, b, jfirst, hmax, &kind);
#if PREFETCH
    float4 kr[KV_PER_WI], vr[KV_PER_WI]; /* this work-item's share of the next K/V tile */
    if (j0 < hmax) flash_read_tile(kv, j0, lmin, hmax, tid, kr, vr);
#endif
    while (j0 < hmax) {
        const int jn = flash_next_tile(va, m, b, j0 + BLOCK_KEYS, hmax, &knext);
        const int add_mask = kind == MASK_TILE_MIXED;
        const int nk = min(BLOCK_KEYS, hmax - j0); /* keys of this tile inside the range */
#if PREFETCH
        flash_store_tile(&tl, tid, kr, vr);
#else
        flash_stage_tile(&tl, kv, j0, lmin, hmax, tid);
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
#if PREFETCH
        /* the next tile's reads, in flight while this one is computed */
        if (jn < hmax) flash_read_tile(kv, jn, lmin, hmax, tid, kr, vr);
#endif

        const int guard = tile_guard(j0, BLOCK_KEYS, hmin, lmax);
        float s[TILE_M][TILE_N];
        UNROLL
        for (int i = 0; i < TILE_M; i++) {
            UNROLL
            for (int j = 0; j < TILE_N; j++) s[i][j] = 0.0f;
        }
        for (int d4 = 0; d4 < D4; d4++) {
            float4 a[TILE_M], kk[TILE_N];
            UNROLL
            for (int i = 0; i < TILE_M; i++) a[i] = tl.q[(rg + i * RG) * DS4 + d4];
            UNROLL
            for (int j = 0; j < TILE_N; j++) kk[j] = tl.k[(cg + j * CG) * DS4 + d4];
            UNROLL
            for (int i = 0; i < TILE_M; i++) {
                UNROLL
                for (int j = 0; j < TILE_N; j++) s[i][j] += dot(a[i], kk[j]);
            }
        }
        UNROLL
        for (int i = 0; i < TILE_M; i++) {
            float mx = MASKED;
            UNROLL
            for (int j = 0; j < TILE_N; j++) {
                const int key = j0 + cg + j * CG;
                const int lo = guard ? rlo[i] : j0, hi = guard ? rhi[i] : rtop[i];
                s[i][j] = in_span(key, lo, hi)
                              ? tile_logit(va, m, b, s[i][j], key, ri[i], rh[i], add_mask)
                              : MASKED;
                mx = max(mx, s[i][j]);
            }
            tl.red[(rg + i * RG) * CG + cg] = mx;
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        __local float *pw = (__local float *)tl.p;
        float alpha[TILE_M];
        UNROLL
        for (int i = 0; i < TILE_M; i++) {
            const int r = rg + i * RG;
            float mb = mrow[i];
            for (int g = 0; g < CG; g++) mb = max(mb, tl.red[r * CG + g]);
            alpha[i] = exp2(mrow[i] - mb);
            mrow[i] = mb;
            UNROLL
            for (int j = 0; j < TILE_N; j++) pw[r * BLOCK_KEYS + cg + j * CG] = exp2(s[i][j] - mb);
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        float lsum[TILE_M];
        UNROLL
        for (int i = 0; i < TILE_M; i++) {
            lsum[i] = 0.0f;
            if (alpha[i] != 1.0f) {
                l[i] *= alpha[i];
                lc[i] *= alpha[i];
                UNROLL
                for (int t = 0; t < DT4; t++) {
                    acc[i][t] *= alpha[i];
                    tot[i][t] *= alpha[i];
                    cmp[i][t] *= alpha[i];
                }
            }
        }
        if (guard)
            flash_pv(&tl, nk, j0, 1, rg, cg, rlo, rhi, acc, lsum);
        else
            flash_pv(&tl, nk, j0, 0, rg, cg, rlo, rhi, acc, lsum);
        UNROLL
        for (int i = 0; i < TILE_M; i++) kahan_add(&l[i], &lc[i], lsum[i]);
        if (++nfold == FOLD_BLOCKS) {
            nfold = 0;
            UNROLL
            for (int i = 0; i < TILE_M; i++) {
                UNROLL
                for (int t = 0; t < DT4; t++) {
                    kahan_add4(&tot[i][t], &cmp[i][t], acc[i][t]);
                    acc[i][t] = (float4)(0.0f);
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* before the next tile overwrites k, v, red, p */
        j0 = jn;
        kind = knext;
    }

    UNROLL
    for (int i = 0; i < TILE_M; i++) {
        if (ri[i] >= m.sq) continue; /* a row past the tile's queries */
        const int query = ri[i] >= m.len.x && ri[i] < m.len.x + m.len.y; /* not a pad row */
        const float lt = rhi[i] > rlo[i] ? l[i] - lc[i] : 0.0f;
        float lse_l2;
        const float inv = finish_row(va, rh[i], mrow[i], lt, query, &lse_l2);
        if (PACKED && !query) continue; /* packed: another sequence's row */
        const ulong orow = row_index(og, b, rh[i], ri[i]);
        UNROLL
        for (int t = 0; t < DT4; t++) {
            const int d = (cg + t * CG) * 4;
            float4 y = (float4)(0.0f);
            if (lt > 0.0f) {
                kahan_add4(&tot[i][t], &cmp[i][t], acc[i][t]); /* the last fold */
                y = (tot[i][t] - cmp[i][t]) * inv;
            }
            if (d < HEAD_DIM) STORE(o, orow + d, y.s0);
            if (d + 1 < HEAD_DIM) STORE(o, orow + d + 1, y.s1);
            if (d + 2 < HEAD_DIM) STORE(o, orow + d + 2, y.s2);
            if (d + 3 < HEAD_DIM) STORE(o, orow + d + 3, y.s3);
        }
        if (write_lse && cg == 0)
            lse[variant_lse_index(b, q_heads, m.sq, rh[i], ri[i])] = lse_l2 * LN2;
    }
}
