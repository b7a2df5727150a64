/* mma_operands.cl -- the mma family's shape and its operands per storage
 * type: how Q's fragments are held, how a K/V tile is staged in __local,
 * and the two products of a tile on mma_ops.cl's fragments (S = Q.K^T one
 * k-step at a time, for all of the tile's n-tiles: mma_scores_step; O +=
 * P.V from S). mma.cl's kernel is written
 * against these and is the same for every type. Joined after mma_ops.cl.
 *  - f16, bf16 (STORAGE 1, 2): m16n8k16 on the stored 16-bit values; K
 *    row-major and V transposed in __local as pairs of 16-bit values; P
 *    rounded to the storage type for P.V.
 *  - f32 (STORAGE 0): 3xTF32 on m16n8k8 (CUTLASS's fast-accurate fp32
 *    GEMM, PyTorch's fp32 attention on this hardware): each operand x is
 *    split into big = tf32(x) and small = tf32(x - big), and a product is
 *    small.big + big.small + big.big, about fp32's accuracy (the small.small
 *    term dropped is 2^-22 of the product); K and V as floats in __local. */

#ifndef MMA_WARPS
#define MMA_WARPS 4        /* warps (of 32 work-items) per work-group */
#endif
#ifndef MMA_MTILES
#define MMA_MTILES 1       /* m-tiles of 16 query rows per warp */
#endif
#ifndef BLOCK_KEYS
#define BLOCK_KEYS 64      /* keys per K/V tile, a multiple of 16 */
#endif
#ifndef MMA_QREGS
#define MMA_QREGS 1        /* 1: Q's A fragments held in registers; 0: read at each k-step */
#endif

#if HEAD_DIM % 16 || BLOCK_KEYS % 16
#error "mma: HEAD_DIM and BLOCK_KEYS must be multiples of 16"
#endif

#define BLOCK_ROWS (16 * MMA_MTILES * MMA_WARPS) /* query rows per work-group */
#define MMA_WG (32 * MMA_WARPS)                  /* work-items per work-group */
#define DTILES (HEAD_DIM / 8)                    /* n-tiles of O */
#define NTILES (BLOCK_KEYS / 8)                  /* n-tiles of S */

/* Before each loop that calls mma_ops.cl: emulated, kept a loop (PoCL
 * builds a region per barrier, and an unrolled loop of them took seconds
 * per program); with the PTX unrolled, so that the fragment arrays, which
 * the loops index, stay in registers (a review's point: not left to the
 * compiler's choice). The other loops over fragment arrays are UNROLL
 * (common.cl): left to the compiler, clang kept some, and O's
 * accumulators, Q's fragments and S lay in a 560-byte stack frame at D 128
 * (tools/check-ptx.sh, sm_90). */
#ifdef MMA_PTX
#define MMA_LOOP _Pragma("unroll")
#else
#define MMA_LOOP _Pragma("unroll 1")
#endif

/* A non-finite V element is staged as 0, and its key marked with the
 * tile's tag (vbad[c] and vany, atomically: several work-items may mark a
 * key); the tag, the tile's first key + 1, tells a mark from an earlier
 * tile's. A row that sees the key then weighs it NaN in P.V (mma_poison),
 * so its O is NaN, where the reference's is not finite; a row that does not
 * (its logit MASKED: causal, window, padding, mask) multiplies 0 by 0,
 * where the tensor cores' 0 * inf would be NaN (test_nonfinite). */
inline void mma_mark_bad(volatile __local int *vbad, volatile __local int *vany, int c, int tag)
{
    atomic_xchg(vbad + c, tag);
    atomic_xchg(vany, tag);
}

/* p for the product: NaN for a key of the tile (c, c + 1) whose V is marked
 * and that the row sees (s not MASKED). */
inline float2 mma_poison(float2 p, float2 s, __local const int *vbad, int c, int tag)
{
    if (s.x != MASKED && vbad[c] == tag) p.x = NAN;
    if (s.y != MASKED && vbad[c + 1] == tag) p.y = NAN;
    return p;
}

/* ---- Keys staged in 16-byte loads ----
 * Where a head's K and V rows start 16-byte aligned (pointer and stride:
 * kv_rows_aligned16, once per work-group, mma_stage's `wide`), a run of 16
 * bytes of a row (4 f32, 8 f16/bf16 as bits) is one load, as
 * FlashAttention-2's 128-bit copies; else the elements are read one by one (pairs). HEAD_DIM is a
 * multiple of 16, so rows are whole vectors. The stores to __local are as
 * wide as the layouts allow (mma_local is 16-byte aligned). Written without
 * swizzles or scalar-to-vector splats: Oclgrind's uninitialised-value pass
 * marks every shuffle's result undefined (tiled_core.cl). */
#if STORAGE == 0
#define MMA_VW 4 /* elements per 16 bytes */
#else
#define MMA_VW 8
#endif

#if STORAGE == 1 || STORAGE == 2
/* ---- f16, bf16: m16n8k16 ---- */
#if STORAGE == 1
#define MMA_OP mma_f16
#define MMA_PACK mma_pack_f16
#define MMA_UNPACK mma_unpack_f16
#else
#define MMA_OP mma_bf16
#define MMA_PACK mma_pack_bf16
#define MMA_UNPACK mma_unpack_bf16
#endif
#define QSTEPS (HEAD_DIM / 16) /* k-steps of S = Q.K^T */
#define DP (HEAD_DIM / 2)      /* element pairs (uints) of a row */
/* Row strides in uints, 4 past a multiple of 8: a B fragment read (8 rows
 * x 4 consecutive uints) then touches 32 distinct banks */
#define KS (DP + 4)
#define VS (BLOCK_KEYS / 2 + 4)

/* Q's A fragment of k-step kk as stored: .s0 row g dims 16 kk + 2t, + 1;
 * .s1 row g + 8, the same; .s2, .s3 the same 8 dims on */
typedef uint4 mma_qfrag;

/* The work-group's __local tiles (the mma scratch is declared apart). */
typedef struct {
    uint k[BLOCK_KEYS * KS];  /* K[key][pair]: keys outside the tile's range zero */
    uint vt[HEAD_DIM * VS];   /* V transposed, Vt[dim][key pair]: the same keys zero */
    int vbad[BLOCK_KEYS], vany; /* keys whose V is not finite (mma_mark_bad) */
} __attribute__((aligned(16))) mma_local; /* for the 16-byte stores of mma_stage */

#if STORAGE == 1
#define MMA_EXP 0x7c00u /* an f16's exponent bits: all set, inf or NaN */
#else
#define MMA_EXP 0x7f80u
#endif
/* v (two 16-bit values of key c, element pair) with a non-finite half
 * zeroed and the key marked. */
inline uint mma_finite_pair(uint v, __local mma_local *tl, int c, int tag)
{
    const int lo = (v & MMA_EXP) == MMA_EXP, hi = (v >> 16 & MMA_EXP) == MMA_EXP;
    if (!(lo | hi)) return v;
    mma_mark_bad(tl->vbad, &tl->vany, c, tag);
    return v & (lo ? 0xffff0000u : ~0u) & (hi ? 0xffffu : ~0u);
}

/* The bits of elements at and at + 1 (the lower in bits 0-15). */
inline uint mma_pair(__global const storage_t *p, ulong at)
{
    __global const ushort *u = (__global const ushort *)p + at;
    if (((size_t)u & 3) == 0) return *(__global const uint *)u;
    return (uint)u[0] | ((uint)u[1] << 16);
}

#ifdef KV_INT8
/* An int8 cache (decode). K is staged as its int8 values, exact in f16 and
 * bf16, and its rows' scales apply to S in fp32 (mma_scores): Q.K^T is
 * then the reference's but for fp32's rounding. V is staged dequantized
 * (its values times its row's scale, rounded to the storage type, as the
 * cache reads back), so that P keeps its full range: P times a scale
 * rounded to f16 would drop small weights that the row sums count (a
 * review's finding). Key c's K scale sits in its K row's padding, uint DP
 * of row c, which no B fragment reads (KS = DP + 4). */
#define MMA_KSCALE(tl, c) as_float((tl)->k[(c) * KS + DP])
/* Elements at and at + 1 of int8 rows, each times s, as two 16-bit values. */
inline uint mma_int8_pair(__global const cache_t *p, ulong at, float s)
{
    return MMA_PACK(convert_float(p[at]) * s, convert_float(p[at + 1]) * s);
}
#endif

/* The A fragment of k-step kk of this lane's rows g (q0: its first
 * element) and g + 8 (q1); a dead row's are zeros. */
inline mma_qfrag mma_q_frag(__global const storage_t *q, ulong q0, ulong q1, int live0, int live1,
                            int kk)
{
    const ulong d = 16 * kk + 2 * (mma_lane() & 3);
    return (uint4)(live0 ? mma_pair(q, q0 + d) : 0u, live1 ? mma_pair(q, q1 + d) : 0u,
                   live0 ? mma_pair(q, q0 + d + 8) : 0u, live1 ? mma_pair(q, q1 + d + 8) : 0u);
}

/* V's uint4 u (8 16-bit values of key c) with non-finite values zeroed
 * and the key marked, as mma_finite_pair, into w[4] */
inline void mma_finite_quad(uint4 u, uint *w, __local mma_local *tl, int c, int tag)
{
    w[0] = mma_finite_pair(u.s0, tl, c, tag);
    w[1] = mma_finite_pair(u.s1, tl, c, tag);
    w[2] = mma_finite_pair(u.s2, tl, c, tag);
    w[3] = mma_finite_pair(u.s3, tl, c, tag);
}

#ifndef KV_INT8 /* an int8 cache is staged element by element */
#define MMA_QV (DP / 4) /* uint4 of a row */
/* mma_stage where wide: K a uint4 (8 dims) per load and store (KS
 * is a multiple of 4); V a uint4 of keys 2 kp and 2 kp + 1 at dims 8 q ..
 * 8 q + 7, stored as 8 uints of Vt (dims 8 q + i, key pair kp). The
 * work-items of a warp take 16 consecutive key pairs of q even and odd
 * (adjacent, so each pair of them reads 32 bytes of a row). VS is 4 past
 * a multiple of 8, so 8 q VS is 0 mod 32 banks and rows i, i + 4 are 16
 * banks apart: odd q stores its dims 4 .. 7 first, and each of the 8
 * stores meets 32 banks where BLOCK_KEYS >= 32 (two-way at 16; the scalar
 * path's stores are 8-way at D >= 64). */
inline void mma_stage_wide(__local mma_local *tl, kv_rows kv, int j0, int lo, int hi)
{
    const kv_row jb = kv_tile_row(kv, j0); /* key j0 + c at row jb + c of kv */
    const int tag = j0 + 1;
    const int tid = get_local_id(0);
    for (int x = tid; x < BLOCK_KEYS * MMA_QV; x += MMA_WG) {
        const int c = x / MMA_QV, q = x % MMA_QV;
        __local uint4 *dst = (__local uint4 *)(tl->k + c * KS + 4 * q);
        if (in_span(j0 + c, lo, hi))
            *dst = *(__global const uint4 *)(kv.k + (ulong)(jb + c) * kv.kstride + 8 * q);
        else
            *dst = (uint4)(0u, 0u, 0u, 0u);
    }
    for (int x = tid; x < BLOCK_KEYS / 2 * MMA_QV; x += MMA_WG) {
        const int odd = x & 1, y = x >> 1;
        const int kp = y % (BLOCK_KEYS / 2), q = 2 * (y / (BLOCK_KEYS / 2)) + odd;
        const int c = j0 + 2 * kp;
        __global const storage_t *src = kv.v + (ulong)(jb + 2 * kp) * kv.vstride + 8 * q;
        uint a[4], b[4];
        mma_finite_quad(in_span(c, lo, hi) ? *(__global const uint4 *)src : (uint4)(0u, 0u, 0u, 0u),
                        a, tl, 2 * kp, tag);
        mma_finite_quad(in_span(c + 1, lo, hi) ? *(__global const uint4 *)(src + kv.vstride)
                                              : (uint4)(0u, 0u, 0u, 0u),
                        b, tl, 2 * kp + 1, tag);
        /* Vt's rows 8 q .. 8 q + 3 (lo) and 8 q + 4 .. 8 q + 7 (hi) at kp:
         * dims 2 m, 2 m + 1 from element pair m of both keys */
        uint lo4[4], hi4[4];
        for (int m = 0; m < 2; m++) {
            lo4[2 * m] = (a[m] & 0xffffu) | (b[m] << 16);
            lo4[2 * m + 1] = (a[m] >> 16) | (b[m] & 0xffff0000u);
            hi4[2 * m] = (a[m + 2] & 0xffffu) | (b[m + 2] << 16);
            hi4[2 * m + 1] = (a[m + 2] >> 16) | (b[m + 2] & 0xffff0000u);
        }
        __local uint *vt = tl->vt + (8 * q + 4 * odd) * VS + kp; /* odd: hi first */
        for (int s = 0; s < 4; s++) {
            vt[s * VS] = odd ? hi4[s] : lo4[s];
            vt[(s + 4 - 8 * odd) * VS] = odd ? lo4[s] : hi4[s];
        }
    }
}

#endif /* KV_INT8 */

/* Stages keys j0 .. j0 + BLOCK_KEYS - 1 of kv (wide: its rows are
 * kv_rows_aligned16; never with an int8 cache); only keys in [lo, hi) are
 * read (keys some live row sees), the others are zeros, never a pad row's
 * inf or NaN; a non-finite V is zeroed and marked (mma_mark_bad; int8: a
 * row whose scale is NaN). The caller's barrier follows. */
inline void mma_stage(__local mma_local *tl, kv_rows kv, int wide, int j0, int lo, int hi)
{
#ifndef KV_INT8
    if (wide) {
        mma_stage_wide(tl, kv, j0, lo, hi);
        return;
    }
#endif
    const kv_row jb = kv_tile_row(kv, j0); /* key j0 + c at row jb + c of kv */
    const int tag = j0 + 1;
    const int tid = get_local_id(0);
    for (int x = tid; x < BLOCK_KEYS * DP; x += MMA_WG) {
        const int c = x / DP, dp = x % DP;
        const int in = in_span(j0 + c, lo, hi);
#ifdef KV_INT8
        const ulong at = (ulong)(jb + c) * kv.kstride + 2 * dp;
        tl->k[c * KS + dp] = in ? mma_int8_pair(kv.k, at, 1.0f) : 0u;
        if (dp == 0) tl->k[c * KS + DP] = as_uint(in ? kv.kscale[jb + c] : 0.0f);
#else
        tl->k[c * KS + dp] = in ? mma_pair(kv.k, (ulong)(jb + c) * kv.kstride + 2 * dp) : 0u;
#endif
    }
    /* V's keys 2 kp, 2 kp + 1 at dims 2 dp, 2 dp + 1: two uints of Vt */
    for (int x = tid; x < BLOCK_KEYS / 2 * DP; x += MMA_WG) {
        const int kp = x / DP, dp = x % DP, c = j0 + 2 * kp;
        const ulong at = (ulong)(jb + 2 * kp) * kv.vstride + 2 * dp;
#ifdef KV_INT8 /* dequantized: a NaN scale (a row that held inf or NaN) is marked next */
        const ulong r = (ulong)(jb + 2 * kp);
        uint v0 = in_span(c, lo, hi) ? mma_int8_pair(kv.v, at, kv.vscale[r]) : 0u;
        uint v1 = in_span(c + 1, lo, hi) ? mma_int8_pair(kv.v, at + kv.vstride, kv.vscale[r + 1])
                                         : 0u;
#else
        uint v0 = in_span(c, lo, hi) ? mma_pair(kv.v, at) : 0u;
        uint v1 = in_span(c + 1, lo, hi) ? mma_pair(kv.v, at + kv.vstride) : 0u;
#endif
        v0 = mma_finite_pair(v0, tl, 2 * kp, tag);
        v1 = mma_finite_pair(v1, tl, 2 * kp + 1, tag);
        tl->vt[2 * dp * VS + kp] = (v0 & 0xffffu) | (v1 << 16);
        tl->vt[(2 * dp + 1) * VS + kp] = (v0 >> 16) | (v1 & 0xffff0000u);
    }
}

/* k-step kk of S = Q.K^T of one m-tile over the staged tile (mma_core.cl's
 * mma_scores), a its A fragment: s[j] for keys 8 j .. 8 j + 7, .s0, .s1
 * row g keys 2t, 2t + 1; .s2, .s3 row g + 8 */
inline void mma_scores_step(float4 *s, mma_qfrag a, int kk, __local const mma_local *tl,
                            __local uint *ws)
{
    __local const uint *kr = tl->k + (mma_lane() >> 2) * KS + (mma_lane() & 3) + 8 * kk;
    MMA_LOOP
    for (int j = 0; j < NTILES; j++)
        MMA_OP(&s[j], a, (uint2)(kr[8 * j * KS], kr[8 * j * KS + 4]), ws);
}

/* S's last touch, after its k-steps: an int8 cache's K scales applied. */
inline void mma_scores_finish(float4 *s, __local const mma_local *tl)
{
#ifdef KV_INT8 /* keys 8 j + 2t, + 1: their rows' K scales */
    const int t = mma_lane() & 3;
    UNROLL
    for (int j = 0; j < NTILES; j++) {
        const float k0 = MMA_KSCALE(tl, 8 * j + 2 * t), k1 = MMA_KSCALE(tl, 8 * j + 2 * t + 1);
        s[j].s0 *= k0;
        s[j].s1 *= k1;
        s[j].s2 *= k0;
        s[j].s3 *= k1;
    }
#endif
}

/* O += P.V with P = exp2(s - mb) (mb: the rows' maxima, as s's layout;
 * tag: the staged tile's, for mma_poison); returns the sums of P over this
 * lane's keys for rows g (.x) and g + 8 (.y), P as rounded, so that O is a
 * weighted mean of V with the weights the tensor cores saw. P's A fragment
 * for keys 16 ks ..: A's (row g, cols 2t, 2t + 1) are S tile 2 ks's .s0,
 * .s1, (g + 8, 2t, 2t + 1) its .s2, .s3, cols 2t + 8, 2t + 9 the same of
 * tile 2 ks + 1: S's accumulator layout is A's, so P stays in the lane that
 * computed it (FlashAttention-2). */
inline float2 mma_weights(float4 *acc, const float4 *s, float4 mb, __local const mma_local *tl,
                          int tag, __local uint *ws)
{
    const int g = mma_lane() >> 2, t = mma_lane() & 3;
    const int bad = tl->vany == tag; /* the same for the work-group */
    float2 sum = (float2)(0.0f);
    MMA_LOOP
    for (int ks = 0; ks < BLOCK_KEYS / 16; ks++) {
        float4 p0 = exp2(s[2 * ks] - mb), p1 = exp2(s[2 * ks + 1] - mb);
        uint4 pa = (uint4)(MMA_PACK(p0.s0, p0.s1), MMA_PACK(p0.s2, p0.s3),
                           MMA_PACK(p1.s0, p1.s1), MMA_PACK(p1.s2, p1.s3));
        const float2 u0 = MMA_UNPACK(pa.s0) + MMA_UNPACK(pa.s2);
        const float2 u1 = MMA_UNPACK(pa.s1) + MMA_UNPACK(pa.s3);
        sum += (float2)(u0.x + u0.y, u1.x + u1.y);
        if (bad) {
            const int c = 16 * ks + 2 * t;
            p0.s01 = mma_poison(p0.s01, s[2 * ks].s01, tl->vbad, c, tag);
            p0.s23 = mma_poison(p0.s23, s[2 * ks].s23, tl->vbad, c, tag);
            p1.s01 = mma_poison(p1.s01, s[2 * ks + 1].s01, tl->vbad, c + 8, tag);
            p1.s23 = mma_poison(p1.s23, s[2 * ks + 1].s23, tl->vbad, c + 8, tag);
            pa = (uint4)(MMA_PACK(p0.s0, p0.s1), MMA_PACK(p0.s2, p0.s3), MMA_PACK(p1.s0, p1.s1),
                         MMA_PACK(p1.s2, p1.s3));
        }
        /* V's B fragment: keys 16 ks + 2t, + 1 (and + 8) of dim 8 dn + g */
        MMA_LOOP
        for (int dn = 0; dn < DTILES; dn++) {
            __local const uint *vr = tl->vt + (8 * dn + g) * VS + 8 * ks + t;
            MMA_OP(&acc[dn], pa, (uint2)(vr[0], vr[4]), ws);
        }
    }
    return sum;
}

#elif STORAGE == 0
/* ---- f32: 3xTF32 on m16n8k8 ----
 * The k index of both operands of a product may be permuted alike (a dot
 * product does not depend on the order of its terms): here a k-step's
 * column t stands for element 2t of its 8 and column t + 4 for element 2t +
 * 1. Then an A fragment's (t, t + 4) are two adjacent elements, one float2
 * of a row, and P's A fragment is exactly what S's accumulators hold. */
#define QSTEPS (HEAD_DIM / 8) /* k-steps of S = Q.K^T */
/* Row strides in floats past a multiple of 32: K is read as float2 (8 rows x
 * 4 lanes: 8 past, a half-warp's 16 float2 on 32 banks), V as floats of rows
 * 2t, 2t + 1 and dims g (4 past: 8t + g, 32 banks) */
#define DR ((HEAD_DIM + 31) / 32 * 32)
#define KS (DR + 8)
#define VS (DR + 4)

/* Q's A fragment of k-step kk, unsplit: .s0 (row g, dim 8 kk + 2t), .s1 (g
 * + 8, the same), .s2 (g, 8 kk + 2t + 1), .s3 (g + 8, the same) */
typedef float4 mma_qfrag;

typedef struct {
    /* K[key][dim] as float2 (KS is even), so that a B fragment's pair is one
     * aligned 8-byte read: keys outside the tile's range zero */
    float2 k[BLOCK_KEYS * KS / 2];
    float v[BLOCK_KEYS * VS]; /* V[key][dim]: the same keys zero */
    int vbad[BLOCK_KEYS], vany; /* keys whose V is not finite (mma_mark_bad) */
} __attribute__((aligned(16))) mma_local; /* for the 16-byte stores of mma_stage */

/* x as (big, small), each a tf32: big = tf32(x), small = tf32(x - big). An
 * infinite x's remainder is NaN: its small is 0 (a product with it may
 * still be inf * 0 = NaN: a row that sees an infinite Q or K is not finite
 * in the reference either; V's are zeroed in staging, mma_mark_bad). x's
 * that round up to inf, within 2^-11 of FLT_MAX, give NaN. */
inline uint2 mma_split(float x)
{
    const uint big = mma_tf32_of(x);
    const float r = x - as_float(big);
    return (uint2)(big, isnan(r) ? 0u : mma_tf32_of(r));
}

/* The big and the small halves of an A fragment. */
inline void mma_split4(float4 a, uint4 *big, uint4 *small)
{
    const uint2 x = mma_split(a.s0), y = mma_split(a.s1), z = mma_split(a.s2), w = mma_split(a.s3);
    *big = (uint4)(x.x, y.x, z.x, w.x);
    *small = (uint4)(x.y, y.y, z.y, w.y);
}

/* d += a.b in 3xTF32, a split, b = (b0, b1) unsplit: the small products
 * first, so that they are not lost against big.big's rounding. */
inline void mma_3xtf32(float4 *d, uint4 abig, uint4 asmall, float b0, float b1, __local uint *ws)
{
    const uint2 x = mma_split(b0), y = mma_split(b1);
    mma_tf32(d, asmall, (uint2)(x.x, y.x), ws);
    mma_tf32(d, abig, (uint2)(x.y, y.y), ws);
    mma_tf32(d, abig, (uint2)(x.x, y.x), ws);
}

inline mma_qfrag mma_q_frag(__global const storage_t *q, ulong q0, ulong q1, int live0, int live1,
                            int kk)
{
    const ulong d = 8 * kk + 2 * (mma_lane() & 3);
    return (float4)(live0 ? LOAD(q, q0 + d) : 0.0f, live1 ? LOAD(q, q1 + d) : 0.0f,
                    live0 ? LOAD(q, q0 + d + 1) : 0.0f, live1 ? LOAD(q, q1 + d + 1) : 0.0f);
}

/* V's float4 (4 dims of key c) with non-finite values zeroed and the key
 * marked */
inline float4 mma_finite4(float4 v, __local mma_local *tl, int c, int tag)
{
    float x = v.s0, y = v.s1, z = v.s2, w = v.s3;
    if (isfinite(x) && isfinite(y) && isfinite(z) && isfinite(w)) return v;
    mma_mark_bad(tl->vbad, &tl->vany, c, tag);
    x = isfinite(x) ? x : 0.0f;
    y = isfinite(y) ? y : 0.0f;
    z = isfinite(z) ? z : 0.0f;
    w = isfinite(w) ? w : 0.0f;
    return (float4)(x, y, z, w);
}

#ifndef KV_INT8 /* an int8 cache is staged element by element */
/* mma_stage where wide: a float4 per load and store (KS and VS
 * are multiples of 4) */
inline void mma_stage_wide(__local mma_local *tl, kv_rows kv, int j0, int lo, int hi)
{
    const kv_row jb = kv_tile_row(kv, j0); /* key j0 + c at row jb + c of kv */
    for (int x = get_local_id(0); x < BLOCK_KEYS * (HEAD_DIM / 4); x += MMA_WG) {
        const int c = x / (HEAD_DIM / 4), d = x % (HEAD_DIM / 4) * 4;
        __local float4 *k = (__local float4 *)((__local float *)tl->k + c * KS + d);
        __local float4 *v = (__local float4 *)(tl->v + c * VS + d);
        if (in_span(j0 + c, lo, hi)) {
            *k = *(__global const float4 *)(kv.k + (ulong)(jb + c) * kv.kstride + d);
            *v = mma_finite4(*(__global const float4 *)(kv.v + (ulong)(jb + c) * kv.vstride + d),
                             tl, c, j0 + 1);
        } else {
            *k = *v = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
        }
    }
}

#endif /* KV_INT8 */

/* An int8 cache's rows are dequantized here (x times its row's scale, in
 * fp32 as the reference), then split as any f32 operand. */
inline void mma_stage(__local mma_local *tl, kv_rows kv, int wide, int j0, int lo, int hi)
{
#ifndef KV_INT8
    if (wide) {
        mma_stage_wide(tl, kv, j0, lo, hi);
        return;
    }
#endif
    const kv_row jb = kv_tile_row(kv, j0); /* key j0 + c at row jb + c of kv */
    for (int x = get_local_id(0); x < BLOCK_KEYS * HEAD_DIM; x += MMA_WG) {
        const int c = x / HEAD_DIM, d = x % HEAD_DIM;
        const int in = in_span(j0 + c, lo, hi);
        ((__local float *)tl->k)[c * KS + d] =
            in ? K_SCALED(KV_LOAD(kv.k, (ulong)(jb + c) * kv.kstride + d), kv, jb + c) : 0.0f;
        float v = in ? V_SCALED(KV_LOAD(kv.v, (ulong)(jb + c) * kv.vstride + d), kv, jb + c)
                     : 0.0f;
        if (!isfinite(v)) {
            mma_mark_bad(tl->vbad, &tl->vany, c, j0 + 1);
            v = 0.0f;
        }
        tl->v[c * VS + d] = v;
    }
}

/* B's (k t, n g), (k t + 4, n g) of k-step kk: K[key 8 j + g][dims 8 kk +
 * 2t, + 1], one float2. Q's fragment a is split once, for all n-tiles. */
inline void mma_scores_step(float4 *s, mma_qfrag a, int kk, __local const mma_local *tl,
                            __local uint *ws)
{
    const int g = mma_lane() >> 2, t = mma_lane() & 3;
    uint4 qb, qs;
    mma_split4(a, &qb, &qs);
    MMA_LOOP
    for (int j = 0; j < NTILES; j++) {
        const float2 kb = tl->k[((8 * j + g) * KS + 8 * kk + 2 * t) / 2];
        mma_3xtf32(&s[j], qb, qs, kb.x, kb.y, ws);
    }
}

/* Nothing after the k-steps: an int8 cache is dequantized in staging. */
inline void mma_scores_finish(float4 *s, __local const mma_local *tl) {}

/* One k-step per S n-tile j (its 8 keys): A's (g, t), (g + 8, t), (g, t +
 * 4), (g + 8, t + 4) are P's (g, key 2t), (g + 8, 2t), (g, 2t + 1), (g + 8,
 * 2t + 1): S's .s0, .s2, .s1, .s3. B's: V[keys 8 j + 2t, + 1][dim 8 dn + g].
 * The row sums add P unrounded (3xTF32 keeps it to 2^-22). */
inline float2 mma_weights(float4 *acc, const float4 *s, float4 mb, __local const mma_local *tl,
                          int tag, __local uint *ws)
{
    const int g = mma_lane() >> 2, t = mma_lane() & 3;
    const int bad = tl->vany == tag; /* the same for the work-group */
    float2 sum = (float2)(0.0f);
    MMA_LOOP
    for (int j = 0; j < NTILES; j++) {
        float4 p = exp2(s[j] - mb);
        sum += (float2)(p.s0 + p.s1, p.s2 + p.s3);
        if (bad) {
            p.s01 = mma_poison(p.s01, s[j].s01, tl->vbad, 8 * j + 2 * t, tag);
            p.s23 = mma_poison(p.s23, s[j].s23, tl->vbad, 8 * j + 2 * t, tag);
        }
        uint4 pb, ps;
        mma_split4(p.s0213, &pb, &ps);
        __local const float *vr = tl->v + (8 * j + 2 * t) * VS + g;
        MMA_LOOP
        for (int dn = 0; dn < DTILES; dn++)
            mma_3xtf32(&acc[dn], pb, ps, vr[8 * dn], vr[VS + 8 * dn], ws);
    }
    return sum;
}

#else
#error "mma: f32, f16 or bf16 storage only"
#endif
