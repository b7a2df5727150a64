/* decode_vector.cl -- the CPU-style decode kernel: one work-item streams one
 * split of one KV head's cache rows (read as they are, contiguous or paged:
 * nothing is re-packed per step) for BLOCK_ROWS query rows of that head's
 * group, with explicit float vectors (vector_core.cl). Unsplit it writes O
 * and LSE; split, a partial (normalised O, log2 LSE) for
 * attn_decode_combine. */

#if DIM_PAD % VEC_WIDTH
#error "VEC_WIDTH must divide DIM_PAD"
#endif

/* Rows per pass of O += P V: their accumulators (PV_ROWS x NCHUNK vectors,
 * 16 registers) stay in registers while each V row is read once, in order.
 * Walking V a column chunk at a time instead (all rows' accumulators for
 * one chunk) made the reads stride across rows: 2.3x slower, measured. */
#define PV_ROWS (NCHUNK >= 16 ? 1 : 16 / NCHUNK)

/* vector c of a cache row, as floats (vloadV: vector_helpers.cl); int8
 * still to be scaled (KV_INT8: the key's scale on its score, the value's
 * on its weight p). int8 rows are read as aligned vectors (a row starts
 * at a multiple of DIM_PAD bytes, DIM_PAD a multiple of 16): PoCL 3.1
 * compiled vload16 of chars into eight 16-bit inserts. */
#ifdef KV_INT8
#define LOADV(c, p) convert_floatV(((__global const CAT(char, VEC_WIDTH) *)(p))[c])
#elif STORAGE == 0
#define LOADV(c, p) vloadV((c), (p))
#elif STORAGE == 1
#define LOADV(c, p) CAT(vload_half, VEC_WIDTH)((c), (p))
#else
#define LOADV(c, p) CAT(as_float, VEC_WIDTH)(CAT(convert_uint, VEC_WIDTH)(vloadV((c), (p))) << 16)
#endif


/* a[r] = the partial sums (a vector) of Q row r times one cache row */
inline __attribute__((always_inline)) void dot_rows(floatV qv[BLOCK_ROWS][NCHUNK], __global const cache_t *krow,
                     floatV a[BLOCK_ROWS])
{
    floatV kvec[NCHUNK];
#pragma unroll
    for (int c = 0; c < NCHUNK; c++) kvec[c] = LOADV(c, krow);
#pragma unroll
    for (int r = 0; r < BLOCK_ROWS; r++) {
        floatV x = qv[r][0] * kvec[0];
#pragma unroll
        for (int c = 1; c < NCHUNK; c++) x = MULADD(qv[r][c], kvec[c], x);
        a[r] = x;
    }
}

/* acc += P V for one block of nk keys from vrow: rows past the furthest
 * limit may hold stale data (truncated tokens). With masked, a key outside
 * a row's [lo, hi) is skipped, not weighted by zero: its V may hold inf or NaN
 * (0 * inf = NaN). Without it every key of the block is visible to every
 * live row; a row that sees nothing here is never stored. */
inline __attribute__((always_inline)) void pv_block(floatV acc[BLOCK_ROWS][NCHUNK],
                                                    float p[BLOCK_ROWS][BLOCK_KEYS],
                                                    __global const cache_t *vrow, int nk, int j0,
                                                    const int lo[BLOCK_ROWS],
                                                    const int hi[BLOCK_ROWS], const int masked)
{
    for (int r0 = 0; r0 < BLOCK_ROWS; r0 += PV_ROWS) {
        floatV a[PV_ROWS][NCHUNK];
#pragma unroll
        for (int rr = 0; rr < PV_ROWS; rr++)
#pragma unroll
            for (int c = 0; c < NCHUNK; c++) a[rr][c] = r0 + rr < BLOCK_ROWS ? acc[r0 + rr][c] : (floatV)(0.0f);
        for (int kk = 0; kk < nk; kk++) {
            __global const cache_t *vr = vrow + (ulong)kk * DIM_PAD;
#pragma unroll
            for (int c = 0; c < NCHUNK; c++) {
                const floatV vv = LOADV(c, vr);
#pragma unroll
                for (int rr = 0; rr < PV_ROWS; rr++)
#if WINDOW
                    if (r0 + rr < BLOCK_ROWS &&
                        (!masked || (j0 + kk < hi[r0 + rr] && j0 + kk >= lo[r0 + rr])))
#else
                    if (r0 + rr < BLOCK_ROWS && (!masked || j0 + kk < hi[r0 + rr]))
#endif
                        a[rr][c] = MULADD((floatV)(p[r0 + rr][kk]), vv, a[rr][c]);
            }
        }
#pragma unroll
        for (int rr = 0; rr < PV_ROWS; rr++)
#pragma unroll
            for (int c = 0; c < NCHUNK; c++)
                if (r0 + rr < BLOCK_ROWS) acc[r0 + rr][c] = a[rr][c];
    }
}

/* Global (nsplit, kv_heads * ntiles, B), local (1, 1, 1). The cache:
 * KV_CACHE_PARAMS (KV_INT8: int8 rows and one scale per row), a key
 * block's rows found by cache_row; split s covers chunk keys from
 * decode_key_base + s * chunk, chunk a multiple of BLOCK_KEYS. */
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void attn_decode_vector(__global const storage_t *q, ulong4 qg, KV_CACHE_PARAMS, __global storage_t *o,
                        ulong4 og, __global float *lse, int write_lse, __global float *part_o,
                        __global float *part_lse, int nsplit, int chunk,
                        __global const int2 *lens, int q_heads, int kv_heads, int sq, int causal,
                        float qscale, int ntiles, VARIANT_PARAMS)
{
    const int split = get_global_id(0);
    const int tile = get_global_id(1) % ntiles, hk = get_global_id(1) / ntiles;
    const int b = get_global_id(2);
    VARIANTS(va);
#ifndef PAGE_ROWS /* contiguous: the head's rows, one run from its row 0 */
    const ulong row0 = cache_row(pages, max_pages, head_rows, kv_heads, b, hk, 0);
    __global const cache_t *kh = kc + row0 * DIM_PAD;
    __global const cache_t *vh = vc + row0 * DIM_PAD;
    __global const float *ksc = kscale + row0, *vsc = vscale + row0; /* KV_INT8 only */
#endif
    const tile_rows rows = decode_tile(lens[b], va.win, tile * BLOCK_ROWS, q_heads / kv_heads,
                                       hk, sq, causal, split, chunk);
    int hi[BLOCK_ROWS], lo[BLOCK_ROWS], qi[BLOCK_ROWS], qh[BLOCK_ROWS], hmax, hmin, lmin, lmax;
    vec_rows(rows, va.win, hi, lo, qi, qh, &hmax, &hmin, &lmin, &lmax);

    /* Q pre-multiplied by scale * log2(e), zero past HEAD_DIM like the cache */
    floatV qv[BLOCK_ROWS][NCHUNK];
    for (int r = 0; r < BLOCK_ROWS; r++) {
        float row[DIM_PAD];
        const int live = hi[r] > rows.j_lo;
        const ulong qr = live ? row_index(qg, b, qh[r], qi[r]) : 0;
        for (int d = 0; d < DIM_PAD; d++) row[d] = live && d < HEAD_DIM ? LOAD(q, qr + d) * qscale : 0.0f;
        for (int c = 0; c < NCHUNK; c++) qv[r][c] = vloadV(c, row);
    }

    /* each row's running state (vector_core.cl) */
    floatV acc[BLOCK_ROWS][NCHUNK], tot[BLOCK_ROWS][NCHUNK], cmp[BLOCK_ROWS][NCHUNK];
    floatV lsum[BLOCK_ROWS], ltot[BLOCK_ROWS], lcmp[BLOCK_ROWS];
    float m[BLOCK_ROWS];
    vec_start(acc, tot, cmp, lsum, ltot, lcmp, m);

    int nfold = 0;
#if WINDOW
    /* blocks before every row's window are skipped, not masked */
    const int jstart = lmin / BLOCK_KEYS * BLOCK_KEYS;
#else
    const int jstart = rows.j_lo;
#endif
    FOR_KEY_BLOCKS(j0, jstart, hmax) {
        /* key j0 + c at row jb + c of kh and vh (and of the scales ksc,
         * vsc): paged, the block's rows (consecutive in its page,
         * cache_row); contiguous, the head's */
#ifdef PAGE_ROWS
        /* No load a page ahead: it paid while a sequence's pages were
         * interleaved with others', and cost 1.3x contiguous's time (blocks
         * of 64, f16) once kv_pool.c kept them in order (PoCL, measured). */
        const ulong blk = cache_row(pages, max_pages, head_rows, kv_heads, b, hk, j0);
        __global const cache_t *kh = kc + blk * DIM_PAD, *vh = vc + blk * DIM_PAD;
        __global const float *ksc = kscale + blk, *vsc = vscale + blk; /* KV_INT8 only */
        const int jb = 0;
#else
        const int jb = j0;
#endif
#if STORAGE == 0 && !defined(KV_INT8)
        /* scores: each K row is read once (converted once) and serves every
         * row of the tile. f32 rows: a horizontal sum per (row, key); it
         * measured as fast as a transpose-reduce of 16 keys' partial sums,
         * and 30% faster than fold_pair below (interleaved, kv 4096): the
         * loop waits on memory, not on these adds. */
        floatV s[BLOCK_ROWS][NKV];
        for (int kv = 0; kv < NKV; kv++) {
            float sums[BLOCK_ROWS][VEC_WIDTH];
            for (int kk = 0; kk < VEC_WIDTH; kk++) {
                floatV a[BLOCK_ROWS];
                dot_rows(qv, kh + (ulong)(jb + kv * VEC_WIDTH + kk) * DIM_PAD, a);
#pragma unroll
                for (int r = 0; r < BLOCK_ROWS; r++) sums[r][kk] = hsum_v(a[r]);
            }
#pragma unroll
            for (int r = 0; r < BLOCK_ROWS; r++) s[r][kv] = vloadV(0, sums[r]);
        }
#else
        /* half-size (or int8) rows: each (row, key) leaves a vector of partial sums;
         * fold_pair (vector_helpers.cl) reduces a block of VEC_WIDTH keys'
         * vectors to one vector of their sums in log2(VEC_WIDTH) levels. The
         * horizontal sum per (row, key), stored to a float array and read
         * back as a vector, made f16 decode compute-bound (54% of the copy
         * bandwidth where f32 reached 72%). */
        floatV s[BLOCK_ROWS][NKV];
        for (int kv = 0; kv < NKV; kv++) {
#ifdef KV_INT8
            const floatV ks = vloadV(0, ksc + jb + kv * VEC_WIDTH); /* the keys' scales */
#else
            const floatV ks = (floatV)(1.0f);
#endif
            floatV w[BLOCK_ROWS][VEC_WIDTH / 2];
            for (int kk = 0; kk < VEC_WIDTH; kk += 2) {
                __global const cache_t *krow = kh + (ulong)(jb + kv * VEC_WIDTH + kk) * DIM_PAD;
                floatV a0[BLOCK_ROWS], a1[BLOCK_ROWS];
                dot_rows(qv, krow, a0);
                dot_rows(qv, krow + DIM_PAD, a1);
#pragma unroll
                for (int r = 0; r < BLOCK_ROWS; r++) w[r][kk / 2] = fold_pair(a0[r], a1[r]);
            }
#pragma unroll
            for (int r = 0; r < BLOCK_ROWS; r++) {
#pragma unroll
                for (int n = VEC_WIDTH / 2; n > 1; n /= 2)
#pragma unroll
                    for (int i = 0; i < n / 2; i++) w[r][i] = fold_pair(w[r][2 * i], w[r][2 * i + 1]);
                s[r][kv] = w[r][0] * ks;
            }
        }
#endif
        /* only a block reaching past some live row's limit (or, with
         * WINDOW, before its start) needs the mask */
#if WINDOW
        const int masked = j0 + BLOCK_KEYS > hmin || j0 < lmax;
#else
        const int masked = j0 + BLOCK_KEYS > hmin;
#endif
#if SOFTCAP || ALIBI || MASK
        /* all rows' logits before any row's softmax (vector.cl); the mask
         * as it is: row = new query, column = cache position */
#pragma unroll
        for (int r = 0; r < BLOCK_ROWS; r++)
            vec_logits(va, s[r], rows, b, qi[r], qh[r], j0, lo[r], hi[r], 1);
#endif
        float p[BLOCK_ROWS][BLOCK_KEYS];
#pragma unroll
        for (int r = 0; r < BLOCK_ROWS; r++) {
            vec_softmax_row(acc[r], tot[r], cmp[r], &lsum[r], &ltot[r], &lcmp[r], &m[r], s[r], p[r], j0,
                            lo[r], hi[r], masked);
        }
#ifdef KV_INT8
        /* each value's scale into its weight, a vector of keys at a time (a
         * key a row does not see is skipped in pv_block, whatever its p) */
#pragma unroll
        for (int r = 0; r < BLOCK_ROWS; r++)
#pragma unroll
            for (int kv = 0; kv < NKV; kv++)
                vstoreV(vloadV(kv, p[r]) * vloadV(kv, vsc + jb), kv, p[r]);
#endif
        /* O += P V over the keys inside the split's range only (pv_block) */
        const int nk = min(BLOCK_KEYS, hmax - j0);
        __global const cache_t *vrow = vh + (ulong)jb * DIM_PAD;
        /* a constant last argument: blocks no live row's limit cuts keep the
         * plain loop (the per-key check cost 10% of an f32 step) */
        if (masked)
            pv_block(acc, p, vrow, nk, j0, lo, hi, 1);
        else
            pv_block(acc, p, vrow, nk, j0, lo, hi, 0);
        vec_fold(acc, tot, cmp, lsum, ltot, lcmp, &nfold, LAST_KEY_BLOCK(j0, jstart, hmax));
    }
    vec_store(tot, cmp, ltot, lcmp, m, rows, hi, qi, qh, b, q_heads, o, og, lse, write_lse, part_o,
              part_lse, nsplit, split, va);
}
