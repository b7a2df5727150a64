/* vector_core.cl -- the CPU-style kernels' shared body: one work-item owns
 * the BLOCK_ROWS query rows of one tile (common.cl's tile_rows) and walks
 * their keys a block of BLOCK_KEYS at a time with explicit float vectors.
 * The entries (vector.cl: prefill over packed K/V; decode_vector.cl: the
 * cache as it is) compute each block's scores and add P V; this file holds
 * the rest: the rows' state, the mask, the online-softmax step, the
 * compensated fold and the stores. Joined after vector_helpers.cl. */

#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8       /* query rows per work-item (1..16) */
#endif
#ifndef BLOCK_KEYS
#define BLOCK_KEYS 32      /* keys per block, a multiple of VEC_WIDTH */
#endif
#ifndef HEAD_DIM_PAD
#define HEAD_DIM_PAD (((HEAD_DIM) + VEC_WIDTH - 1) / VEC_WIDTH * VEC_WIDTH) /* D rounded up */
#endif

/* vectors per output row: D padded to the vector width, or in decode
 * (decode_common.cl defines DIM_PAD) a whole cache row */
#ifdef DIM_PAD
#define NCHUNK (DIM_PAD / VEC_WIDTH)
#else
#define NCHUNK (HEAD_DIM_PAD / VEC_WIDTH)
#endif
#define NKV (BLOCK_KEYS / VEC_WIDTH)  /* vectors of scores per block and row */

#if BLOCK_KEYS % VEC_WIDTH
#error "VEC_WIDTH must divide BLOCK_KEYS"
#endif

/* The tile's rows: row r is query qi[r] of head qh[r] and sees keys up to
 * hi[r] (clamped to the split's end; a row with hi <= j_lo is empty here).
 * The tile's key range is [j_lo, hmax); blocks from hmin on cut some live
 * row. */
inline __attribute__((always_inline)) void vec_rows(tile_rows m, int hi[BLOCK_ROWS],
                                                    int qi[BLOCK_ROWS], int qh[BLOCK_ROWS],
                                                    int *hmax, int *hmin)
{
    *hmax = m.j_lo;
    *hmin = INT_MAX;
    for (int r = 0; r < BLOCK_ROWS; r++) {
        hi[r] = row_keys(m, r, &qi[r], &qh[r]);
        if (hi[r] > m.j_lo) {
            *hmax = max(*hmax, hi[r]);
            *hmin = min(*hmin, hi[r]);
        }
    }
}

/* The running state of each row, in separate arrays the entry kernel
 * declares, as before the cores: with them PoCL makes the same hot loops
 * as before (compared instruction by instruction). O and the softmax
 * denominator are summed plainly per fold of FOLD_BLOCKS key blocks (acc,
 * lsum) and each fold is added to a compensated total (tot - cmp, ltot -
 * lcmp, common.cl): adding every key to one running sum drifted to 2.6e-3
 * relative error at 262144 keys. m is the running max (log2 domain). */
inline __attribute__((always_inline)) void vec_start(
    floatV acc[BLOCK_ROWS][NCHUNK], floatV tot[BLOCK_ROWS][NCHUNK],
    floatV cmp[BLOCK_ROWS][NCHUNK], floatV lsum[BLOCK_ROWS], floatV ltot[BLOCK_ROWS],
    floatV lcmp[BLOCK_ROWS], float m[BLOCK_ROWS])
{
    for (int r = 0; r < BLOCK_ROWS; r++) {
        for (int c = 0; c < NCHUNK; c++) acc[r][c] = tot[r][c] = cmp[r][c] = (floatV)(0.0f);
        lsum[r] = ltot[r] = lcmp[r] = (floatV)(0.0f);
        m[r] = MAX_INIT;
    }
}

/* One block's online-softmax step for one row: with masked, the scores of
 * keys past the row's limit hi become MASKED; then the row's running max
 * grows to the block's, rescaling its sums, and p gets exp2(s - m). The
 * entries call it per row, in an unrolled loop of their own: one function
 * over the whole tile's arrays (or a wrapper looping over this one) made
 * PoCL keep more vectors on the stack, and decode 3-4% slower (measured
 * interleaved, call by call, against the kernel before the cores). */
inline __attribute__((always_inline)) void vec_softmax_row(
    floatV acc[NCHUNK], floatV tot[NCHUNK], floatV cmp[NCHUNK], floatV *lsum, floatV *ltot,
    floatV *lcmp, float *m, floatV s[NKV], float p[BLOCK_KEYS], int j0, int hi, int masked)
{
    if (masked) {
#pragma unroll
        for (int kv = 0; kv < NKV; kv++) {
            const intV key = (intV)(j0 + kv * VEC_WIDTH) + IOTA;
            s[kv] = select(s[kv], (floatV)(MASKED), key >= (intV)(hi));
        }
    }
    floatV bm = s[0];
#pragma unroll
    for (int kv = 1; kv < NKV; kv++) bm = max(bm, s[kv]);
    const float mb = hmax_v(bm);
    if (mb > *m) { /* rescale only when the row's max grows */
        const float alpha = exp2(*m - mb);
        for (int c = 0; c < NCHUNK; c++) {
            acc[c] *= alpha;
            tot[c] *= alpha;
            cmp[c] *= alpha;
        }
        *lsum *= alpha;
        *ltot *= alpha;
        *lcmp *= alpha;
        *m = mb;
    }
#pragma unroll
    for (int kv = 0; kv < NKV; kv++) {
        const floatV e = exp2(s[kv] - (floatV)(*m));
        *lsum += e;
        vstoreV(e, kv, p);
    }
}

/* After a block's P V: every FOLD_BLOCKS blocks, and after the last, the
 * plain sums go into the compensated totals */
inline __attribute__((always_inline)) void vec_fold(
    floatV acc[BLOCK_ROWS][NCHUNK], floatV tot[BLOCK_ROWS][NCHUNK],
    floatV cmp[BLOCK_ROWS][NCHUNK], floatV lsum[BLOCK_ROWS], floatV ltot[BLOCK_ROWS],
    floatV lcmp[BLOCK_ROWS], int *nfold,
    int last)
{
    if (++*nfold == FOLD_BLOCKS || last) {
        *nfold = 0;
        for (int r = 0; r < BLOCK_ROWS; r++) {
            for (int c = 0; c < NCHUNK; c++) {
                kahan_add_v(&tot[r][c], &cmp[r][c], acc[r][c]);
                acc[r][c] = (floatV)(0.0f);
            }
            kahan_add_v(&ltot[r], &lcmp[r], lsum[r]);
            lsum[r] = (floatV)(0.0f);
        }
    }
}

/* Each row's result. Unsplit (nsplit 1): O at row (b, h, i) of o and,
 * with write_lse, its natural-log LSE (-inf for an empty row). Split: a
 * partial for attn_decode_combine (decode_common.cl), O normalised over
 * this split's keys at part_o[(lse_index * nsplit + split) * DIM_PAD], its
 * log2 LSE or EMPTY_LSE at part_lse[lse_index * nsplit + split]. */
inline __attribute__((always_inline)) void vec_store(
    floatV tot[BLOCK_ROWS][NCHUNK], floatV cmp[BLOCK_ROWS][NCHUNK], floatV ltot[BLOCK_ROWS],
    floatV lcmp[BLOCK_ROWS], float m[BLOCK_ROWS], tile_rows rows, const int hi[BLOCK_ROWS],
    const int qi[BLOCK_ROWS], const int qh[BLOCK_ROWS], int b, int q_heads, __global storage_t *o,
    ulong4 og, __global float *lse, int write_lse, __global float *part_o, __global float *part_lse,
    int nsplit, int split)
{
    for (int r = 0; r < BLOCK_ROWS; r++) {
        if (qi[r] >= rows.sq) break;
        const float l = hi[r] > rows.j_lo ? hsum_v(ltot[r] - lcmp[r]) : 0.0f;
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
        const ulong prow = lse_index(b, q_heads, rows.sq, qh[r], qi[r]);
        if (nsplit == 1) {
            const ulong orow = row_index(og, b, qh[r], qi[r]);
            /* an empty row stores zeros even if a masked V held inf or NaN */
            for (int c = 0; c < NCHUNK; c++)
                store_chunk(o, orow, c, l > 0.0f ? (tot[r][c] - cmp[r][c]) * inv : (floatV)(0.0f));
            if (write_lse) lse[prow] = l > 0.0f ? (m[r] + log2(l)) * LN2 : -INFINITY;
        } else {
#ifdef DIM_PAD /* decode_common.cl: only decode splits */
            const ulong pr = prow * nsplit + split;
            if (l > 0.0f)
                for (int c = 0; c < NCHUNK; c++)
                    vstoreV((tot[r][c] - cmp[r][c]) * inv, c, part_o + pr * DIM_PAD);
            part_lse[pr] = l > 0.0f ? m[r] + log2(l) : EMPTY_LSE;
#endif
        }
    }
}
