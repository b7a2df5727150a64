/* mma_core.cl -- the tensor-core family's body, mma_attend, which its
 * prefill (mma.cl) and decode (decode_mma.cl) kernels call, as tiled_core.cl
 * serves tiled.cl and decode_tiled.cl: FlashAttention-2's forward on
 * the warp-level fragments of mma_ops.cl (f32 accumulators; f16 and bf16
 * operands on m16n8k16, f32 through 3xTF32 on m16n8k8: mma_operands.cl,
 * which also holds the tunables and the shape). A work-group of MMA_WARPS
 * warps owns BLOCK_ROWS query rows of one (batch, head); each warp owns
 * MMA_MTILES m-tiles of 16 rows, and each lane rows g and g + 8 of each
 * (g = lane >> 2, t = lane & 3). Q's A fragments are loaded once into
 * registers, or read at each k-step (MMA_QREGS 0: mma_q); per key tile K
 * and V are staged in __local (mma_stage), S =
 * Q.K^T (mma_scores) and O += P.V (mma_weights) run on fragments, the row
 * maxima and sums combine across the four lanes of a row with mma_xor, and P goes from S's
 * accumulators into P.V's A fragments in registers (no shuffle). Joined
 * after common.cl, variants.cl, tile.cl, mma_ops.cl and mma_operands.cl
 * (a decode: kv_cache_rows.cl and decode_common.cl before tile.cl).
 *
 * No Kahan fold (flash.cl and tiled_core.cl fold O every 512 keys): the
 * 16-bit types' tolerances (2e-3 f16, 1.6e-2 bf16, relative) are 1000x the
 * error of a plain fp32 sum over thousands of keys (flash.cl's notes: 4e-5
 * at 4096 keys with uniform weights); the error there is P's rounding to
 * the storage type, as in FlashAttention-2. f32's tolerance (1e-4
 * relative) is 2.5x that sum's error at 4096 keys: longer f32 rows fold O
 * into a second accumulator instead (MMA_FOLD, at the cost of D/2
 * registers a lane). Each lane sums its own keys' weights, and the four
 * lanes of a row combine once, at the end (the maxima every tile: they set
 * P). */

#define MMA_ROWS (2 * MMA_MTILES) /* rows a lane owns: g, g + 8 per m-tile */
#ifndef MMA_FOLD
#define MMA_FOLD 0 /* 1: fold O into a second accumulator (long f32 rows; the host sets it) */
#endif
/* With MMA_FOLD, keys summed plainly into acc before it is added to tot:
 * acc's drift is then that of MMA_FOLD_KEYS keys, tot's that of one add per
 * MMA_FOLD_KEYS (test_long_context's table) */
#define MMA_FOLD_KEYS 2048
#if MMA_FOLD && MMA_FOLD_KEYS % BLOCK_KEYS
#error "mma: MMA_FOLD_KEYS must be a multiple of BLOCK_KEYS"
#endif

/* The logits of keys key and key + 1 of one row from their Q.K: scaled,
 * then masked outside [lo, hi) or given the variants (tile.cl). */
inline float2 mma_logits(variants va, tile_rows m, int b, float2 s, int key, int lo, int hi,
                         int i, int h, int add_mask, float qscale)
{
    s *= qscale;
    s.x = in_span(key, lo, hi) ? tile_logit(va, m, b, s.x, key, i, h, add_mask) : MASKED;
    s.y = in_span(key + 1, lo, hi) ? tile_logit(va, m, b, s.y, key + 1, i, h, add_mask) : MASKED;
    return s;
}

/* Where mma_scores finds Q's A fragments for one m-tile. MMA_QREGS 1: all
 * of them held in registers, read once (QSTEPS x 4 registers a lane: 64 at
 * D 256 in f16, at D 128 in f32). MMA_QREGS 0: read from global memory at
 * each k-step of each key tile, through the L1 cache (a warp's 16 rows are
 * 8 KiB at D 256 in f16), as FlashAttention-2 reads Q from shared memory
 * by default; this frees those registers for the rest (ptxas's spills
 * with it are mixed: README's check-ptx notes; the tuner weighs it).
 * In place (o == q) stays safe: each lane writes O only at the elements
 * of Q it read itself (q and o share one layout: validate.c), and a row
 * belongs to one work-group. */
typedef struct {
#if MMA_QREGS
    mma_qfrag a[QSTEPS];
#else
    __global const storage_t *q;
    ulong q0, q1; /* the first elements of rows g and g + 8 */
    int live0, live1;
#endif
} mma_q;

inline void mma_q_init(mma_q *qs, __global const storage_t *q, ulong q0, ulong q1, int live0,
                       int live1)
{
#if MMA_QREGS
    UNROLL
    for (int kk = 0; kk < QSTEPS; kk++) qs->a[kk] = mma_q_frag(q, q0, q1, live0, live1, kk);
#else
    qs->q = q;
    qs->q0 = q0;
    qs->q1 = q1;
    qs->live0 = live0;
    qs->live1 = live1;
#endif
}

/* S = Q.K^T of one m-tile over the staged tile, as mma_scores_step lays it
 * out (without qscale; an int8 cache's K scales applied). */
inline void mma_scores(float4 *s, const mma_q *qs, __local const mma_local *tl, __local uint *ws)
{
    UNROLL
    for (int j = 0; j < NTILES; j++) s[j] = (float4)(0.0f);
    MMA_LOOP
    for (int kk = 0; kk < QSTEPS; kk++) {
#if MMA_QREGS
        const mma_qfrag a = qs->a[kk];
#else
        const mma_qfrag a = mma_q_frag(qs->q, qs->q0, qs->q1, qs->live0, qs->live1, kk);
#endif
        mma_scores_step(s, a, kk, tl, ws);
    }
    mma_scores_finish(s, tl);
}

/* The maximum of v over the four lanes of a row (4g .. 4g + 3). */
inline float mma_row_max(float v, __local uint *ws)
{
    v = max(v, mma_xor(v, 1, ws));
    return max(v, mma_xor(v, 2, ws));
}

/* The tile's attention over keys [m.j_lo, m.j_end) of kv (tile.cl's
 * kv_tile_row finds each key tile's rows), with the variants of va; tl and
 * scr, the work-group's __local tiles and mma_ops.cl scratch. A row's
 * result: unsplit (nsplit 1), O at row (b, h, i) of o and, with write_lse,
 * its natural-log LSE (finish_row: with the sink; -inf for an empty row);
 * split, a partial for attn_decode_combine (decode_common.cl), without the
 * sink: O normalised over this split's keys at part_o[(lse_index * nsplit
 * + split) * DIM_PAD], its log2 LSE or EMPTY_LSE at part_lse[lse_index *
 * nsplit + split] (tiled_core.cl's contract). mask_tiles: prefill, whose
 * mask has a per-tile summary (mask_tiles.cl); decode reads its mask
 * directly. Every mma_ops.cl call is reached by the whole work-group (the
 * emulation's barriers): the loops around them have work-group-uniform
 * bounds, and dead rows compute on zeros. */
inline __attribute__((always_inline)) void mma_attend(
    __local mma_local *tl, __local uint *scr, tile_rows m, int b, int q_heads,
    __global const storage_t *q, ulong4 qg, float qscale, kv_rows kv, __global storage_t *o,
    ulong4 og, __global float *lse, int write_lse, __global float *part_o,
    __global float *part_lse, int nsplit, int split, variants va, int mask_tiles)
{
    __local uint *ws = scr + mma_warp() * MMA_SCRATCH_WORDS;
    const int tid = get_local_id(0), g = mma_lane() >> 2, t = mma_lane() & 3;

    int lmin, hmin, lmax;
    const int hmax = tile_span(m, va.win, BLOCK_ROWS, &lmin, &hmin, &lmax);
    const int jfirst = lmin / BLOCK_KEYS * BLOCK_KEYS;
    const int wide = kv_rows_aligned16(kv, MMA_VW); /* K/V staged in 16-byte loads */

    /* this lane's rows 2 mt (g of m-tile mt) and 2 mt + 1 (g + 8): query,
     * head, keys [rlo, rhi); running max, sum of weights; O's n-tiles */
    int ri[MMA_ROWS], rh[MMA_ROWS], rlo[MMA_ROWS], rhi[MMA_ROWS], rtop[MMA_ROWS];
    float mrow[MMA_ROWS], l[MMA_ROWS];
    float4 acc[MMA_MTILES][DTILES];
#if MMA_FOLD
    float4 tot[MMA_MTILES][DTILES]; /* O folded out of acc every MMA_FOLD_KEYS keys */
    int nfold = 0;
#endif
    mma_q qa[MMA_MTILES]; /* Q's A fragments as stored, or where to read them (mma_q) */
    UNROLL
    for (int mt = 0; mt < MMA_MTILES; mt++) {
        const int r0 = (mma_warp() * MMA_MTILES + mt) * 16 + g;
        UNROLL
        for (int x = 0; x < 2; x++) {
            const int r = 2 * mt + x;
            rhi[r] = row_span(m, r0 + 8 * x, va.win, &ri[r], &rh[r], &rlo[r]);
            /* a row's key end on tiles that need no per-row limits: 0 for a
             * dead row (a pad row, one past sq), whose mask row must not be read */
            rtop[r] = rhi[r] > rlo[r] ? hmax : 0;
            mrow[r] = MAX_INIT;
            l[r] = 0.0f;
        }
        mma_q_init(&qa[mt], q, row_index(qg, b, rh[2 * mt], ri[2 * mt]),
                   row_index(qg, b, rh[2 * mt + 1], ri[2 * mt + 1]), rhi[2 * mt] > rlo[2 * mt],
                   rhi[2 * mt + 1] > rlo[2 * mt + 1]);
        UNROLL
        for (int dn = 0; dn < DTILES; dn++) acc[mt][dn] = (float4)(0.0f);
#if MMA_FOLD
        UNROLL
        for (int dn = 0; dn < DTILES; dn++) tot[mt][dn] = (float4)(0.0f);
#endif
    }
    for (int c = tid; c < BLOCK_KEYS; c += MMA_WG) tl->vbad[c] = 0; /* no tile's tag */
    if (tid == 0) tl->vany = 0;
    /* the global fence orders qregs=1's Q reads before any O write when
     * out == q (qregs=0: mma_q says why in place stays safe) */
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);

    for (int j0 = jfirst; j0 < hmax; j0 += BLOCK_KEYS) {
        const int kind =
            mask_tiles ? tile_mask_kind(va, m, b, BLOCK_ROWS, BLOCK_KEYS, j0) : MASK_TILE_MIXED;
        if (kind == MASK_TILE_MASKED) continue;
        const int add_mask = kind == MASK_TILE_MIXED;
        const int nk = min(BLOCK_KEYS, hmax - j0); /* keys of this tile inside the range */
        mma_stage(tl, kv, wide, j0, lmin, j0 + nk);
        barrier(CLK_LOCAL_MEM_FENCE);

        const int guard = tile_guard(j0, BLOCK_KEYS, hmin, lmax);
        MMA_LOOP
        for (int mt = 0; mt < MMA_MTILES; mt++) {
            const int r0 = 2 * mt, r1 = r0 + 1;
            float4 s[NTILES]; /* S for keys j0 + 8 j .. (mma_scores) */
            mma_scores(s, &qa[mt], tl, ws);
            const int lo0 = guard ? rlo[r0] : j0, hi0 = guard ? rhi[r0] : rtop[r0];
            const int lo1 = guard ? rlo[r1] : j0, hi1 = guard ? rhi[r1] : rtop[r1];
            float mx0 = MASKED, mx1 = MASKED;
            UNROLL
            for (int j = 0; j < NTILES; j++) {
                const int key = j0 + 8 * j + 2 * t;
                s[j].s01 = mma_logits(va, m, b, s[j].s01, key, lo0, hi0, ri[r0], rh[r0], add_mask,
                                      qscale);
                s[j].s23 = mma_logits(va, m, b, s[j].s23, key, lo1, hi1, ri[r1], rh[r1], add_mask,
                                      qscale);
                mx0 = max(mx0, max(s[j].s0, s[j].s1));
                mx1 = max(mx1, max(s[j].s2, s[j].s3));
            }
            const float mb0 = max(mrow[r0], mma_row_max(mx0, ws));
            const float mb1 = max(mrow[r1], mma_row_max(mx1, ws));
            const float a0 = exp2(mrow[r0] - mb0), a1 = exp2(mrow[r1] - mb1);
            mrow[r0] = mb0;
            mrow[r1] = mb1;
            l[r0] *= a0;
            l[r1] *= a1;
            UNROLL
            for (int dn = 0; dn < DTILES; dn++) acc[mt][dn] *= (float4)(a0, a0, a1, a1);
#if MMA_FOLD
            UNROLL
            for (int dn = 0; dn < DTILES; dn++) tot[mt][dn] *= (float4)(a0, a0, a1, a1);
#endif
            const float2 sum =
                mma_weights(acc[mt], s, (float4)(mb0, mb0, mb1, mb1), tl, j0 + 1, ws);
            l[r0] += sum.x;
            l[r1] += sum.y;
        }
#if MMA_FOLD
        if (++nfold == MMA_FOLD_KEYS / BLOCK_KEYS) {
            nfold = 0;
            UNROLL
            for (int mt = 0; mt < MMA_MTILES; mt++) {
                UNROLL
                for (int dn = 0; dn < DTILES; dn++) {
                    tot[mt][dn] += acc[mt][dn];
                    acc[mt][dn] = (float4)(0.0f);
                }
            }
        }
#endif
        /* before the next tile overwrites the staged tile (needed with the
         * PTX: the emulation's own barriers would hide its absence from
         * Oclgrind) */
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    /* each row's sum over its four lanes (the whole work-group: mma_xor) */
    MMA_LOOP
    for (int r = 0; r < MMA_ROWS; r++) {
        l[r] += mma_xor(l[r], 1, ws);
        l[r] += mma_xor(l[r], 2, ws);
    }
    UNROLL
    for (int r = 0; r < MMA_ROWS; r++) {
        if (ri[r] >= m.sq) continue; /* a row past the tile's queries */
        const int query = ri[r] >= m.len.x && ri[r] < m.len.x + m.len.y; /* not a pad row */
        const float lt = rhi[r] > rlo[r] ? l[r] : 0.0f;
        float lse_l2, inv;
        if (nsplit == 1) {
            inv = finish_row(va, rh[r], mrow[r], lt, query, &lse_l2);
            if (PACKED && !query) continue; /* packed: another sequence's row */
        } else {
            inv = lt > 0.0f ? 1.0f / lt : 0.0f;
        }
        ulong orow = row_index(og, b, rh[r], ri[r]) + 2 * t;
#ifdef DECODE_KERNELS /* decode_common.cl: only decode splits */
        const ulong pr = lse_index(b, q_heads, m.sq, rh[r], ri[r]) * nsplit + split;
        if (nsplit > 1) orow = pr * DIM_PAD + 2 * t;
#endif
        UNROLL
        for (int dn = 0; dn < DTILES; dn++) {
#if MMA_FOLD
            const float4 a = tot[r / 2][dn] + acc[r / 2][dn];
#else
            const float4 a = acc[r / 2][dn];
#endif
            const float2 y = lt > 0.0f ? (r & 1 ? a.s23 : a.s01) * inv : (float2)(0.0f);
            if (nsplit == 1) {
                STORE(o, orow + 8 * dn, y.x);
                STORE(o, orow + 8 * dn + 1, y.y);
            } else if (lt > 0.0f) { /* a split that saw no key leaves its O unwritten */
                part_o[orow + 8 * dn] = y.x;
                part_o[orow + 8 * dn + 1] = y.y;
            }
        }
        if (t != 0) continue;
        if (nsplit == 1 && write_lse)
            lse[variant_lse_index(b, q_heads, m.sq, rh[r], ri[r])] = lse_l2 * LN2;
#ifdef DECODE_KERNELS
        if (nsplit > 1) part_lse[pr] = split_lse(mrow[r], lt);
#endif
    }
}
