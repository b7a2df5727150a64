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
 * (decode_common.cl defines DECODE_KERNELS) a whole cache row */
#ifdef DECODE_KERNELS
#define NCHUNK (DIM_PAD / VEC_WIDTH)
#else
#define NCHUNK (HEAD_DIM_PAD / VEC_WIDTH)
#endif
#define NKV (BLOCK_KEYS / VEC_WIDTH)  /* vectors of scores per block and row */

#if BLOCK_KEYS % VEC_WIDTH
#error "VEC_WIDTH must divide BLOCK_KEYS"
#endif

/* The tile's rows: row r is query qi[r] of head qh[r] and sees keys [lo[r],
 * hi[r]) (clamped to the split's range; a row with hi <= j_lo is empty here).
 * The tile's key range is [j_lo, hmax); blocks from hmin on cut some live
 * row's hi. With WINDOW (variants.cl's row_span) the keys start at the
 * lowest live lo, lmin, and blocks below lmax cut some live row's lo; an
 * empty row gets lo = hi = j_lo, as without it. */
inline __attribute__((always_inline)) void vec_rows(tile_rows m, int2 win, int hi[BLOCK_ROWS],
                                                    int lo[BLOCK_ROWS], int qi[BLOCK_ROWS],
                                                    int qh[BLOCK_ROWS], int *hmax, int *hmin,
                                                    int *lmin, int *lmax)
{
    *hmax = m.j_lo;
    *hmin = INT_MAX;
    *lmin = INT_MAX;
    *lmax = m.j_lo;
    for (int r = 0; r < BLOCK_ROWS; r++) {
#if WINDOW
        hi[r] = row_span(m, r, win, &qi[r], &qh[r], &lo[r]);
        if (hi[r] <= lo[r]) hi[r] = lo[r] = m.j_lo;
#else
        hi[r] = row_keys(m, r, &qi[r], &qh[r]);
        lo[r] = m.j_lo;
#endif
        if (hi[r] > m.j_lo) {
            *hmax = max(*hmax, hi[r]);
            *hmin = min(*hmin, hi[r]);
            *lmin = min(*lmin, lo[r]);
            *lmax = max(*lmax, lo[r]);
        }
    }
    if (*lmin == INT_MAX) *lmin = m.j_lo;
}

/* The walk over a tile's key blocks from jstart (a multiple of BLOCK_KEYS)
 * to hmax: upward, or with ALiBi downward. ALiBi raises a row's logits
 * toward its own position, under the causal mask the high keys: walked
 * upward, the running max grew at nearly every block and rescaled every
 * sum (+40% time, S=2048 causal); from the top it meets the max first.
 * (Without the mask the peak is inside the span: either way meets it
 * halfway.) */
#if ALIBI
#define FOR_KEY_BLOCKS(j0, jstart, hmax)                                                        \
    for (int j0 = (hmax) > (jstart) ? ((hmax) - 1) / BLOCK_KEYS * BLOCK_KEYS : (jstart) - 1;     \
         j0 >= (jstart); j0 -= BLOCK_KEYS)
#define LAST_KEY_BLOCK(j0, jstart, hmax) ((j0) - BLOCK_KEYS < (jstart))
#else
#define FOR_KEY_BLOCKS(j0, jstart, hmax) for (int j0 = (jstart); j0 < (hmax); j0 += BLOCK_KEYS)
#define LAST_KEY_BLOCK(j0, jstart, hmax) ((j0) + BLOCK_KEYS >= (hmax))
#endif

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

#if SOFTCAP
SOFT_TANH(soft_tanh_v, floatV) /* variants.cl's tanh, a vector at a time */
#endif

#if MASK == 2 /* VEC_WIDTH mask elements from p on */
#define MASK_LOADV(p) CAT(vload_half, VEC_WIDTH)(0, (p))
#elif MASK
#define MASK_LOADV(p) vloadV(0, (p))
#endif

#if SOFTCAP || ALIBI || MASK
/* variants.cl's variant_logit on one row's scores of the block at j0, a
 * vector at a time: the row is buffer row qi of head qh and sees keys [lo,
 * hi). The mask is read only inside them (never past kv_len) and only with
 * add_mask (prefill skips it in a tile its summary says adds zeros); a key
 * it hides, or brings below MAX_INIT, becomes MASKED. */
inline __attribute__((always_inline)) void vec_logits(variants va, floatV s[NKV], tile_rows rows,
                                                      int b, int qi, int qh, int j0, int lo,
                                                      int hi, int add_mask)
{
#if ALIBI
    const float slope = row_slope(va, qh);
    const intV pos = (intV)(row_pos(qi, rows.len));
#endif
#if MASK
    /* key j is mask column kv_start + j */
    const ulong mrow = mask_row(va, b, qh, qi) + (ulong)rows.len.z * va.mk;
    /* a block inside the row's keys, of a mask with key stride 1, is read
     * a vector at a time (the gather below cost 2.5x as much) */
    const int whole = va.mk == 1 && j0 >= lo && j0 + BLOCK_KEYS <= hi;
#endif
#pragma unroll
    for (int kv = 0; kv < NKV; kv++) {
        const int k0 = j0 + kv * VEC_WIDTH;
#if SOFTCAP
        s[kv] = (floatV)(va.cap) * soft_tanh_v(s[kv]);
#endif
#if ALIBI
        { /* -|j - pos| */
            const intV d = (intV)(k0) + IOTA - pos;
            s[kv] = MULADD((floatV)(slope), convert_floatV(min(d, -d)), s[kv]);
        }
#endif
#if MASK
        if (add_mask) {
            floatV add;
            if (whole) {
                add = MASK_LOADV(va.mask + mrow + k0);
            } else {
                float g[VEC_WIDTH];
                for (int e = 0; e < VEC_WIDTH; e++) {
                    const int j = k0 + e;
                    g[e] = j >= lo && j < hi ? MASK_LOAD(va.mask, mrow + (ulong)j * va.mk) : 0.0f;
                }
                add = vloadV(0, g);
            }
            const floatV x = MULADD(add, (floatV)(LOG2E), s[kv]);
            s[kv] = select((floatV)(MASKED), x, x >= (floatV)(MAX_INIT));
        }
#endif
    }
}
#endif

/* One block's online-softmax step for one row: with masked, the scores of
 * keys past the row's limit hi (or, with WINDOW, before its lo) become MASKED; then the row's running max
 * grows to the block's, rescaling its sums, and p gets exp2(s - m). The
 * entries call it per row, in an unrolled loop of their own: one function
 * over the whole tile's arrays (or a wrapper looping over this one) made
 * PoCL keep more vectors on the stack, and decode 3-4% slower (measured
 * interleaved, call by call, against the kernel before the cores). */
inline __attribute__((always_inline)) void vec_softmax_row(
    floatV acc[NCHUNK], floatV tot[NCHUNK], floatV cmp[NCHUNK], floatV *lsum, floatV *ltot,
    floatV *lcmp, float *m, floatV s[NKV], float p[BLOCK_KEYS], int j0, int lo, int hi, int masked)
{
    if (masked) {
#pragma unroll
        for (int kv = 0; kv < NKV; kv++) {
            const intV key = (intV)(j0 + kv * VEC_WIDTH) + IOTA;
#if WINDOW
            s[kv] = select(s[kv], (floatV)(MASKED), key >= (intV)(hi) || key < (intV)(lo));
#else
            s[kv] = select(s[kv], (floatV)(MASKED), key >= (intV)(hi));
#endif
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
 * with write_lse, its natural-log LSE (-inf for an empty row), both with the
 * head's sink under SINKS (variants.cl's finish_row). Split: a partial for
 * attn_decode_combine (decode_common.cl, which adds the sink), O normalised
 * over this split's keys at part_o[(lse_index * nsplit + split) * DIM_PAD],
 * its log2 LSE or EMPTY_LSE at part_lse[lse_index * nsplit + split]. PACKED:
 * no pad row is written (it is another sequence's), the LSE is [Hq][Sq]. */
inline __attribute__((always_inline)) void vec_store(
    floatV tot[BLOCK_ROWS][NCHUNK], floatV cmp[BLOCK_ROWS][NCHUNK], floatV ltot[BLOCK_ROWS],
    floatV lcmp[BLOCK_ROWS], float m[BLOCK_ROWS], tile_rows rows, const int hi[BLOCK_ROWS],
    const int qi[BLOCK_ROWS], const int qh[BLOCK_ROWS], int b, int q_heads, __global storage_t *o,
    ulong4 og, __global float *lse, int write_lse, __global float *part_o, __global float *part_lse,
    int nsplit, int split, variants va)
{
    for (int r = 0; r < BLOCK_ROWS; r++) {
        if (qi[r] >= rows.sq) break;
#if SINKS || PACKED
        const int query = qi[r] >= rows.len.x && qi[r] < rows.len.x + rows.len.y; /* not a pad row */
#endif
#if PACKED
        if (!query) continue;
#endif
        const float l = hi[r] > rows.j_lo ? hsum_v(ltot[r] - lcmp[r]) : 0.0f;
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
        const ulong prow = variant_lse_index(b, q_heads, rows.sq, qh[r], qi[r]);
        if (nsplit == 1) {
            const ulong orow = row_index(og, b, qh[r], qi[r]);
#if SINKS
            float lse_l2;
            const float f = finish_row(va, qh[r], m[r], l, query, &lse_l2);
#else
            const float f = inv;
#endif
            /* an empty row stores zeros even if a masked V held inf or NaN */
            for (int c = 0; c < NCHUNK; c++)
                store_chunk(o, orow, c, l > 0.0f ? (tot[r][c] - cmp[r][c]) * f : (floatV)(0.0f));
#if SINKS
            if (write_lse) lse[prow] = lse_l2 * LN2;
#else
            if (write_lse) lse[prow] = l > 0.0f ? (m[r] + log2(l)) * LN2 : -INFINITY;
#endif
        } else {
#ifdef DECODE_KERNELS /* decode_common.cl: only decode splits */
            const ulong pr = prow * nsplit + split;
            if (l > 0.0f)
                for (int c = 0; c < NCHUNK; c++)
                    vstoreV((tot[r][c] - cmp[r][c]) * inv, c, part_o + pr * DIM_PAD);
            part_lse[pr] = split_lse(m[r], l);
#endif
        }
    }
}
