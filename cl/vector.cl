/* vector.cl -- the CPU-style prefill kernels: one work-item per
 * work-group owns BLOCK_ROWS query rows of one head and walks all their
 * keys with explicit float vectors (vector_core.cl), which PoCL compiles
 * straight to SIMD code (DESIGN.md: 77-84% of peak where GPU-style kernels
 * reached 6-19%). A pre-pass packs K transposed per key block and V
 * padded, in fp32 and content order, so the main loop needs no bounds. */

/* Where the packed K and V of (batch entry b, KV head hk) start, in keys:
 * entry b has kv_blocks[b + 1] - kv_blocks[b] = ceil(kv_len / BLOCK_KEYS)
 * key blocks (prefix sums, forward.c), one KV head's after another, from
 * block kv_blocks[b] * kv_heads. Sized by each entry's own keys, not the
 * whole axis: B packed sequences along one token axis would otherwise take
 * B times the axis. */
inline ulong kv_head_start(__global const ulong *kv_blocks, int b, int hk, int kv_heads)
{
    const ulong first = kv_blocks[b], n = kv_blocks[b + 1] - first;
    return (first * kv_heads + hk * n) * BLOCK_KEYS;
}

/* Pre-pass: K -> kt[head][j / BLOCK_KEYS][d][j % BLOCK_KEYS] (each key
 * block transposed and contiguous: a [D][S] layout put every d of a block
 * 4*S bytes apart, all in one L1 set, and ran 15-25% slower) and V ->
 * vp[head][j][d], head from kv_head_start, fp32, in content order (key j
 * is buffer row kv_start + j), zero past kv_len and past D.
 * Global (every entry's key blocks: kv_blocks[entries], Hkv), one
 * work-item per key block. */
/* Stores element d of key j0 + c's K (kx) and V (vx) rows where the
 * packed layout above keeps them: ktb and vpb are the head's packed K and V */
inline void pack_store(__global float *ktb, __global float *vpb, int j0, int c, int d, float kx,
                       float vx)
{
    ktb[(ulong)j0 * HEAD_DIM_PAD + d * BLOCK_KEYS + c] = kx;
    vpb[(ulong)(j0 + c) * HEAD_DIM_PAD + d] = vx;
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void attn_pack_kv(__global const storage_t *k, ulong4 kg, __global const storage_t *v, ulong4 vg,
                  __global const int4 *lens, __global float *kt, __global float *vp, int kv_heads,
                  __global const ulong *kv_blocks, int entries)
{
    const ulong g = get_global_id(0);
    const int hk = get_global_id(1), b = entry_of(kv_blocks, 1, entries, g);
    const int4 len = lens[b];
    const int j0 = (int)(g - kv_blocks[b]) * BLOCK_KEYS;
    const ulong start = kv_head_start(kv_blocks, b, hk, kv_heads) * HEAD_DIM_PAD;
    __global float *ktb = kt + start, *vpb = vp + start;
    for (int c = 0; c < BLOCK_KEYS; c++) {
        const int j = j0 + c;
        const int valid = j < len.w;
        const ulong kr = valid ? row_index(kg, b, hk, len.z + j) : 0;
        const ulong vr = valid ? row_index(vg, b, hk, len.z + j) : 0;
        for (int d = 0; d < HEAD_DIM_PAD; d++) {
            const int in = valid && d < HEAD_DIM;
            pack_store(ktb, vpb, j0, c, d, in ? LOAD(k, kr + d) : 0.0f, in ? LOAD(v, vr + d) : 0.0f);
        }
    }
}

/* acc[r] += sum over the block's keys kk < nk of p[r][kk] * V[kk]. With
 * masked, row r's keys end at lim[r] (and, with WINDOW, start at low[r])
 * and a key outside is skipped, not multiplied by its zero weight: a
 * masked key's V row may hold inf or NaN, and 0 * inf = NaN. Called with a constant `masked` and always inlined
 * (PoCL kept it a function otherwise, with acc in memory: 5-7% slower), so
 * that the unmasked blocks (all but the diagonal and the tail) keep the
 * plain FMA loop. */
inline __attribute__((always_inline)) void pv_block(floatV acc[BLOCK_ROWS][NCHUNK], float p[BLOCK_ROWS][BLOCK_KEYS],
                     __global const float *vrow, int nk, const int *lim, const int *low,
                     int masked)
{
#if NCHUNK % 2 == 0
    /* two output chunks per pass: one broadcast of p feeds two FMAs, so the
     * loop issues 10 loads per 16 FMAs instead of 9 per 8 */
    for (int c = 0; c < NCHUNK; c += 2) {
        floatV a0[BLOCK_ROWS], a1[BLOCK_ROWS];
#pragma unroll
        for (int r = 0; r < BLOCK_ROWS; r++) { a0[r] = acc[r][c]; a1[r] = acc[r][c + 1]; }
        for (int kk = 0; kk < nk; kk++) {
            const floatV v0 = vloadV(c, vrow + (ulong)kk * HEAD_DIM_PAD);
            const floatV v1 = vloadV(c + 1, vrow + (ulong)kk * HEAD_DIM_PAD);
#pragma unroll
            for (int r = 0; r < BLOCK_ROWS; r++) {
#if WINDOW
                if (masked && (kk >= lim[r] || kk < low[r])) continue;
#else
                if (masked && kk >= lim[r]) continue;
#endif
                const floatV pr = (floatV)(p[r][kk]);
                a0[r] = MULADD(pr, v0, a0[r]);
                a1[r] = MULADD(pr, v1, a1[r]);
            }
        }
#pragma unroll
        for (int r = 0; r < BLOCK_ROWS; r++) { acc[r][c] = a0[r]; acc[r][c + 1] = a1[r]; }
    }
#else
    for (int c = 0; c < NCHUNK; c++) {
        floatV a[BLOCK_ROWS];
#pragma unroll
        for (int r = 0; r < BLOCK_ROWS; r++) a[r] = acc[r][c];
        for (int kk = 0; kk < nk; kk++) {
            const floatV vv = vloadV(c, vrow + (ulong)kk * HEAD_DIM_PAD);
#pragma unroll
            for (int r = 0; r < BLOCK_ROWS; r++)
#if WINDOW
                if (!masked || (kk < lim[r] && kk >= low[r]))
#else
                if (!masked || kk < lim[r])
#endif
                    a[r] = MULADD((floatV)(p[r][kk]), vv, a[r]);
        }
#pragma unroll
        for (int r = 0; r < BLOCK_ROWS; r++) acc[r][c] = a[r];
    }
#endif
}

/* Main kernel. Global (nblk, Hq, B), local (1, 1, 1): nblk row blocks of
 * the whole axis, or with PACKED as many as the longest entry's rows touch
 * (forward.c). Row blocks are taken last first: under the causal mask the
 * last rows see the most keys, and starting the heaviest work first
 * balances the cores. */
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void attn_fwd_vector(__global const storage_t *q, ulong4 qg, __global const float *kt,
                     __global const float *vp, __global storage_t *o, ulong4 og,
                     __global float *lse, int write_lse, __global const int4 *lens, int q_heads,
                     int kv_heads, int sq, __global const ulong *kv_blocks, int causal,
                     float qscale, int nblk, VARIANT_PARAMS)
{
#if PACKED
    /* nblk row blocks from the one holding the entry's q_start */
    const int blk = lens[get_global_id(2)].x / BLOCK_ROWS + nblk - 1 - (int)get_global_id(0);
#else
    const int blk = nblk - 1 - (int)get_global_id(0);
#endif
    const int h = get_global_id(1), b = get_global_id(2);
    const int hk = h / (q_heads / kv_heads);
    const ulong start = kv_head_start(kv_blocks, b, hk, kv_heads) * HEAD_DIM_PAD;
    __global const float *ktb = kt + start, *vpb = vp + start;
    VARIANTS(va);
    /* one head's rows, all keys */
    const tile_rows rows = {lens[b], blk * BLOCK_ROWS, 1, h, sq, causal, 0, INT_MAX};
    int hi[BLOCK_ROWS], lo[BLOCK_ROWS], qi[BLOCK_ROWS], qh[BLOCK_ROWS], hmax, hmin, lmin, lmax;
    vec_rows(rows, va.win, hi, lo, qi, qh, &hmax, &hmin, &lmin, &lmax);

    /* Q pre-multiplied by scale * log2(e); a score step broadcasts one
     * element of each row against a vector of keys. Rows are laid out
     * [row][d], so this copy is plain vector code: the [d][row] layout
     * compiled to a scatter and cost 6% at S=512 (perf, PoCL 3.1, Zen 5). */
    float qs[BLOCK_ROWS][HEAD_DIM];
    for (int r = 0; r < BLOCK_ROWS; r++) {
        const int live = hi[r] > 0;
        const ulong qr = live ? row_index(qg, b, h, qi[r]) : 0;
        for (int d = 0; d < HEAD_DIM; d++) qs[r][d] = live ? LOAD(q, qr + d) * qscale : 0.0f;
    }

    /* each row's running state (vector_core.cl) */
    floatV acc[BLOCK_ROWS][NCHUNK], tot[BLOCK_ROWS][NCHUNK], cmp[BLOCK_ROWS][NCHUNK];
    floatV lsum[BLOCK_ROWS], ltot[BLOCK_ROWS], lcmp[BLOCK_ROWS];
    float m[BLOCK_ROWS];
    vec_start(acc, tot, cmp, lsum, ltot, lcmp, m);

    /* row r's visible keys in the current block: [low[r], lim[r]) */
    int lim[BLOCK_ROWS], low[BLOCK_ROWS];
    for (int r = 0; r < BLOCK_ROWS; r++) {
        lim[r] = BLOCK_KEYS;
        low[r] = 0;
    }
    int nfold = 0;
#if WINDOW
    /* blocks before every row's window are skipped, not masked */
    const int jstart = lmin / BLOCK_KEYS * BLOCK_KEYS;
#else
    const int jstart = 0;
#endif
    FOR_KEY_BLOCKS(j0, jstart, hmax) {
#if SOFTCAP || ALIBI || MASK
        int add_mask = 0;
#endif
#if MASK
        /* the mask's summary of this tile (mask_tiles.cl): all -inf is
         * skipped, all zero adds nothing */
        const uchar tile = va.tiles[mask_tile(va, b, h, blk, j0 / BLOCK_KEYS)];
        if (tile == MASK_TILE_MASKED) {
            vec_fold(acc, tot, cmp, lsum, ltot, lcmp, &nfold, LAST_KEY_BLOCK(j0, jstart, hmax));
            continue;
        }
        add_mask = tile == MASK_TILE_MIXED;
#endif
        floatV s[BLOCK_ROWS][NKV];
#pragma unroll
        for (int r = 0; r < BLOCK_ROWS; r++)
#pragma unroll
            for (int kv = 0; kv < NKV; kv++) s[r][kv] = (floatV)(0.0f);
        __global const float *kblk = ktb + (ulong)j0 * HEAD_DIM_PAD;
        for (int d = 0; d < HEAD_DIM; d++) {
#pragma unroll
            for (int kv = 0; kv < NKV; kv++) {
                const floatV kk = vloadV(kv, kblk + d * BLOCK_KEYS);
#pragma unroll
                for (int r = 0; r < BLOCK_ROWS; r++) s[r][kv] = MULADD((floatV)(qs[r][d]), kk, s[r][kv]);
            }
        }
        /* only the diagonal or tail block (or, with WINDOW, a block
         * cutting some row's window start) needs the mask */
#if WINDOW
        const int masked = j0 + BLOCK_KEYS > hmin || j0 < lmax;
#else
        const int masked = j0 + BLOCK_KEYS > hmin;
#endif
        if (masked)
#pragma unroll
            for (int r = 0; r < BLOCK_ROWS; r++) {
                lim[r] = hi[r] - j0;
#if WINDOW
                low[r] = lo[r] - j0;
#endif
            }
#if SOFTCAP || ALIBI || MASK
        /* all rows' logits before any row's softmax: with each row's
         * softmax between, its branch kept PoCL from overlapping the rows'
         * chains, and the softcap cost 17% over plain causal, not 7%; a
         * mask mixed in every tile 85%, not 45% (S=2048, CPU time) */
#pragma unroll
        for (int r = 0; r < BLOCK_ROWS; r++)
            vec_logits(va, s[r], rows, b, qi[r], qh[r], j0, lo[r], hi[r], add_mask);
#endif
        float p[BLOCK_ROWS][BLOCK_KEYS];
#pragma unroll
        for (int r = 0; r < BLOCK_ROWS; r++) {
            vec_softmax_row(acc[r], tot[r], cmp[r], &lsum[r], &ltot[r], &lcmp[r], &m[r], s[r], p[r], j0,
                            lo[r], hi[r], masked);
        }
        __global const float *vrow = vpb + (ulong)j0 * HEAD_DIM_PAD;
        const int nk = min(BLOCK_KEYS, hmax - j0);
        /* a constant last argument: the unmasked blocks keep the plain loop */
        if (masked)
            pv_block(acc, p, vrow, nk, lim, low, 1);
        else
            pv_block(acc, p, vrow, nk, lim, low, 0);
        vec_fold(acc, tot, cmp, lsum, ltot, lcmp, &nfold, LAST_KEY_BLOCK(j0, jstart, hmax));
    }
    vec_store(tot, cmp, ltot, lcmp, m, rows, hi, qi, qh, b, q_heads, o, og, lse, write_lse, NULL,
              NULL, 1, 0, va);
}
