/* mma.cl -- the tensor-core prefill family: FlashAttention-2's forward on
 * the warp-level m16n8k16 fragments of mma_ops.cl (f32 accumulators, f16 or
 * bf16 operands). A work-group of MMA_WARPS warps owns BLOCK_ROWS query rows
 * of one (batch, head); each warp owns MMA_MTILES m-tiles of 16 rows, and
 * each lane rows g and g + 8 of each (g = lane >> 2, t = lane & 3). Q's A
 * fragments are loaded once into registers; per key tile K (row-major) and
 * V (transposed) are staged in __local as pairs of 16-bit elements, S =
 * Q.K^T and O += P.V run on fragments, the row maxima and sums combine
 * across the four lanes of a row with mma_xor, and P goes from S's
 * accumulators into P.V's A fragments in registers (no shuffle). Joined
 * after common.cl, variants.cl, tile.cl and mma_ops.cl.
 *
 * No Kahan fold (flash.cl and tiled_core.cl fold O every 512 keys): the
 * 16-bit types' tolerances (2e-3 f16, 1.6e-2 bf16, relative) are 1000x the
 * error of a plain fp32 sum over thousands of keys (flash.cl's notes: 4e-5
 * at 4096 keys with uniform weights); the error here is P's rounding to
 * the storage type, as in FlashAttention-2. The row sums l add P as
 * rounded, so that O is a weighted mean of V with the weights the tensor
 * cores saw; each lane sums its own keys, and the four lanes of a row
 * combine once, at the end (the maxima every tile: they set P). */

#ifndef MMA_WARPS
#define MMA_WARPS 4        /* warps (of 32 work-items) per work-group */
#endif
#ifndef MMA_MTILES
#define MMA_MTILES 1       /* m-tiles of 16 query rows per warp */
#endif
#ifndef BLOCK_KEYS
#define BLOCK_KEYS 64      /* keys per K/V tile, a multiple of 16 */
#endif

#if HEAD_DIM % 16 || BLOCK_KEYS % 16
#error "mma.cl: HEAD_DIM and BLOCK_KEYS must be multiples of 16"
#endif
#if STORAGE == 1
#define MMA_OP mma_f16
#define MMA_PACK mma_pack_f16
#define MMA_UNPACK mma_unpack_f16
#elif STORAGE == 2
#define MMA_OP mma_bf16
#define MMA_PACK mma_pack_bf16
#define MMA_UNPACK mma_unpack_bf16
#else
#error "mma.cl: f16 or bf16 storage only"
#endif

#define BLOCK_ROWS (16 * MMA_MTILES * MMA_WARPS) /* query rows per work-group */
#define MMA_WG (32 * MMA_WARPS)                  /* work-items per work-group */
#define MMA_ROWS (2 * MMA_MTILES)                /* rows a lane owns: g, g + 8 per m-tile */
#define DP (HEAD_DIM / 2)                        /* element pairs (uints) of a row */
#define KSTEPS (HEAD_DIM / 16)                   /* k-steps of S = Q.K^T */
#define DTILES (HEAD_DIM / 8)                    /* n-tiles of O */
#define NTILES (BLOCK_KEYS / 8)                  /* n-tiles of S */
/* Row strides in uints, 4 past a multiple of 8: a B fragment read (8 rows
 * x 4 consecutive uints) then touches 32 distinct banks */
#define KS (DP + 4)
#define VS (BLOCK_KEYS / 2 + 4)

/* Before each loop that calls mma_ops.cl: emulated, kept a loop (PoCL
 * builds a region per barrier, and an unrolled loop of them took seconds
 * per program); with the PTX unrolled, so that the fragment arrays, which
 * the loops index, stay in registers (a review's point: not left to the
 * compiler's choice; unmeasured). */
#ifdef MMA_PTX
#define MMA_LOOP _Pragma("unroll")
#else
#define MMA_LOOP _Pragma("unroll 1")
#endif

/* The work-group's __local tiles (the mma scratch is declared apart). */
typedef struct {
    uint k[BLOCK_KEYS * KS];  /* K[key][pair]: keys outside the tile's range zero */
    uint vt[HEAD_DIM * VS];   /* V transposed, Vt[dim][key pair]: the same keys zero */
} mma_local;

/* The bits of elements at and at + 1 (the lower in bits 0-15). */
inline uint mma_pair(__global const storage_t *p, ulong at)
{
    __global const ushort *u = (__global const ushort *)p + at;
    if (((size_t)u & 3) == 0) return *(__global const uint *)u;
    return (uint)u[0] | ((uint)u[1] << 16);
}

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

/* The maximum of v over the four lanes of a row (4g .. 4g + 3). */
inline float mma_row_max(float v, __local uint *ws)
{
    v = max(v, mma_xor(v, 1, ws));
    return max(v, mma_xor(v, 2, ws));
}

/* Global (nblk * MMA_WG, Hq, B), local (MMA_WG, 1, 1); the arguments are
 * attn_fwd_tiled's (tile.cl). Every mma_ops.cl call is reached by the whole
 * work-group (the emulation's barriers): the loops around them have
 * work-group-uniform bounds, and dead rows compute on zeros. */
__kernel __attribute__((reqd_work_group_size(MMA_WG, 1, 1)))
void attn_fwd_mma(FWD_TILE_PARAMS)
{
    __local mma_local tl;
    __local uint mma_scr[MMA_WARPS * MMA_SCRATCH_WORDS];
    __local uint *ws = mma_scr + mma_warp() * MMA_SCRATCH_WORDS;
    VARIANTS(va);
    kv_rows kv;
    const tile_rows m =
        fwd_tile(lens, BLOCK_ROWS, nblk, q_heads, kv_heads, sq, causal, k, kg, v, vg, &kv);
    const int b = get_global_id(2);
    const int tid = get_local_id(0), g = mma_lane() >> 2, t = mma_lane() & 3;

    int lmin, hmin, lmax;
    const int hmax = tile_span(m, va.win, BLOCK_ROWS, &lmin, &hmin, &lmax);
    const int jfirst = lmin / BLOCK_KEYS * BLOCK_KEYS;

    /* this lane's rows 2 mt (g of m-tile mt) and 2 mt + 1 (g + 8): query,
     * head, keys [rlo, rhi); running max, sum of weights; O's n-tiles */
    int ri[MMA_ROWS], rh[MMA_ROWS], rlo[MMA_ROWS], rhi[MMA_ROWS], rtop[MMA_ROWS];
    float mrow[MMA_ROWS], l[MMA_ROWS];
    float4 acc[MMA_MTILES][DTILES];
    uint4 qa[MMA_MTILES][KSTEPS]; /* Q's A fragments, as stored (qscale applies to S) */
    for (int mt = 0; mt < MMA_MTILES; mt++) {
        const int r0 = (mma_warp() * MMA_MTILES + mt) * 16 + g;
        for (int x = 0; x < 2; x++) {
            const int r = 2 * mt + x;
            rhi[r] = row_span(m, r0 + 8 * x, va.win, &ri[r], &rh[r], &rlo[r]);
            /* a row's key end on tiles that need no per-row limits: 0 for a
             * dead row (a pad row, one past sq), whose mask row must not be read */
            rtop[r] = rhi[r] > rlo[r] ? hmax : 0;
            mrow[r] = MAX_INIT;
            l[r] = 0.0f;
        }
        const int live0 = rhi[2 * mt] > rlo[2 * mt], live1 = rhi[2 * mt + 1] > rlo[2 * mt + 1];
        const ulong q0 = row_index(qg, b, rh[2 * mt], ri[2 * mt]) + 2 * t;
        const ulong q1 = row_index(qg, b, rh[2 * mt + 1], ri[2 * mt + 1]) + 2 * t;
        for (int kk = 0; kk < KSTEPS; kk++) {
            qa[mt][kk].s0 = live0 ? mma_pair(q, q0 + 16 * kk) : 0u;
            qa[mt][kk].s1 = live1 ? mma_pair(q, q1 + 16 * kk) : 0u;
            qa[mt][kk].s2 = live0 ? mma_pair(q, q0 + 16 * kk + 8) : 0u;
            qa[mt][kk].s3 = live1 ? mma_pair(q, q1 + 16 * kk + 8) : 0u;
        }
        for (int dn = 0; dn < DTILES; dn++) acc[mt][dn] = (float4)(0.0f);
    }
    /* the global fence orders the Q reads before any O write when out == q */
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);

    for (int j0 = jfirst; j0 < hmax; j0 += BLOCK_KEYS) {
        const int kind = tile_mask_kind(va, m, b, BLOCK_ROWS, BLOCK_KEYS, j0);
        if (kind == MASK_TILE_MASKED) continue;
        const int add_mask = kind == MASK_TILE_MIXED;
        const int nk = min(BLOCK_KEYS, hmax - j0); /* keys of this tile inside the range */
        /* only keys some live row sees are read (in_span): the others are
         * zeros, never a pad row's inf or NaN */
        for (int x = tid; x < BLOCK_KEYS * DP; x += MMA_WG) {
            const int c = x / DP, dp = x % DP;
            const int in = in_span(j0 + c, lmin, j0 + nk);
            tl.k[c * KS + dp] = in ? mma_pair(kv.k, (ulong)(j0 + c) * kv.kstride + 2 * dp) : 0u;
        }
        /* V's keys 2 kp, 2 kp + 1 at dims 2 dp, 2 dp + 1: two uints of Vt */
        for (int x = tid; x < BLOCK_KEYS / 2 * DP; x += MMA_WG) {
            const int kp = x / DP, dp = x % DP, c = j0 + 2 * kp;
            const ulong at = (ulong)c * kv.vstride + 2 * dp;
            const uint v0 = in_span(c, lmin, j0 + nk) ? mma_pair(kv.v, at) : 0u;
            const uint v1 = in_span(c + 1, lmin, j0 + nk) ? mma_pair(kv.v, at + kv.vstride) : 0u;
            tl.vt[2 * dp * VS + kp] = (v0 & 0xffffu) | (v1 << 16);
            tl.vt[(2 * dp + 1) * VS + kp] = (v0 >> 16) | (v1 & 0xffff0000u);
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        const int guard = tile_guard(j0, BLOCK_KEYS, hmin, lmax);
        MMA_LOOP
        for (int mt = 0; mt < MMA_MTILES; mt++) {
            const int r0 = 2 * mt, r1 = r0 + 1;
            /* S for keys j0 + 8 j ..: .s0, .s1 row g keys 2t, 2t + 1; .s2, .s3 row g + 8 */
            float4 s[NTILES];
            MMA_LOOP
            for (int j = 0; j < NTILES; j++) {
                s[j] = (float4)(0.0f);
                __local const uint *kr = tl.k + (8 * j + g) * KS + t;
                MMA_LOOP
                for (int kk = 0; kk < KSTEPS; kk++)
                    MMA_OP(&s[j], qa[mt][kk], (uint2)(kr[8 * kk], kr[8 * kk + 4]), ws);
            }
            const int lo0 = guard ? rlo[r0] : j0, hi0 = guard ? rhi[r0] : rtop[r0];
            const int lo1 = guard ? rlo[r1] : j0, hi1 = guard ? rhi[r1] : rtop[r1];
            float mx0 = MASKED, mx1 = MASKED;
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
            for (int dn = 0; dn < DTILES; dn++) acc[mt][dn] *= (float4)(a0, a0, a1, a1);
            const float4 mb = (float4)(mb0, mb0, mb1, mb1);
            /* P's A fragment for keys 16 ks ..: A's (row g, cols 2t, 2t + 1)
             * are S tile 2 ks's .s0, .s1 (keys 16 ks + 2t, + 1), (g + 8, 2t,
             * 2t + 1) its .s2, .s3, and cols 2t + 8, 2t + 9 the same of tile
             * 2 ks + 1 (keys 16 ks + 8 + 2t): S's accumulator layout is A's,
             * so P stays in the lane that computed it (FlashAttention-2) */
            MMA_LOOP
            for (int ks = 0; ks < BLOCK_KEYS / 16; ks++) {
                const float4 p0 = exp2(s[2 * ks] - mb), p1 = exp2(s[2 * ks + 1] - mb);
                const uint4 pa = (uint4)(MMA_PACK(p0.s0, p0.s1), MMA_PACK(p0.s2, p0.s3),
                                         MMA_PACK(p1.s0, p1.s1), MMA_PACK(p1.s2, p1.s3));
                const float2 u0 = MMA_UNPACK(pa.s0) + MMA_UNPACK(pa.s2);
                const float2 u1 = MMA_UNPACK(pa.s1) + MMA_UNPACK(pa.s3);
                l[r0] += u0.x + u0.y;
                l[r1] += u1.x + u1.y;
                /* V's B fragment: keys 16 ks + 2t, + 1 (and + 8) of dim 8 dn + g */
                MMA_LOOP
                for (int dn = 0; dn < DTILES; dn++) {
                    __local const uint *vr = tl.vt + (8 * dn + g) * VS + 8 * ks + t;
                    MMA_OP(&acc[mt][dn], pa, (uint2)(vr[0], vr[4]), ws);
                }
            }
        }
        /* before the next tile overwrites k, vt (needed with the PTX: the
         * emulation's own barriers would hide its absence from Oclgrind) */
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    /* each row's sum over its four lanes (the whole work-group: mma_xor) */
    MMA_LOOP
    for (int r = 0; r < MMA_ROWS; r++) {
        l[r] += mma_xor(l[r], 1, ws);
        l[r] += mma_xor(l[r], 2, ws);
    }
    for (int r = 0; r < MMA_ROWS; r++) {
        if (ri[r] >= m.sq) continue; /* a row past the tile's queries */
        const int query = ri[r] >= m.len.x && ri[r] < m.len.x + m.len.y; /* not a pad row */
        const float lt = rhi[r] > rlo[r] ? l[r] : 0.0f;
        float lse_l2;
        const float inv = finish_row(va, rh[r], mrow[r], lt, query, &lse_l2);
        if (PACKED && !query) continue; /* packed: another sequence's row */
        const ulong orow = row_index(og, b, rh[r], ri[r]) + 2 * t;
        for (int dn = 0; dn < DTILES; dn++) {
            const float4 a = acc[r / 2][dn];
            const float2 y = lt > 0.0f ? (r & 1 ? a.s23 : a.s01) * inv : (float2)(0.0f);
            STORE(o, orow + 8 * dn, y.x);
            STORE(o, orow + 8 * dn + 1, y.y);
        }
        if (write_lse && t == 0)
            lse[variant_lse_index(b, q_heads, m.sq, rh[r], ri[r])] = lse_l2 * LN2;
    }
}
