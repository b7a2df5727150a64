/* mma_check.cl -- one warp exercises each operation of mma_ops.cl on known
 * operands (host/kernels/mma_check.c compares the results with the host's):
 * on NVIDIA, with MMA_PTX, the probe that the instructions build and that
 * their fragment layouts are the ones the mma family assumes; elsewhere the
 * check of the emulation. Fragments are loaded here by the forward map
 * (what each lane holds), independently of the emulation's inverse map.
 * Joined after mma_ops.cl; local size 32. */

/* out: [0, 384) three 16x8 products as float bits (f16, bf16, tf32; C =
 * 0.25 * (8 r + c)); [384, 480) mma_xor with masks 1, 2 and 5 of 3 * lane
 * + 1; [480, 512) mma_pack_f16 and [512, 544) mma_pack_bf16 of pk's pairs;
 * [544, 608) mma_tf32_of of pk. Two programs, each writing its part: the
 * 16-bit types' operations, or with MMA_CHECK_TF32 the tf32 product and
 * rounding that f32 adds (a compiler refusing one leaves the other). */
#define MMA_CHECK_WORDS 608
#ifndef MMA_CHECK_TF32
#define MMA_CHECK_TF32 0
#endif

/* row r of a 16x8 product's D fragment element i, and its column */
#define CHECK_ROW(g, i) ((g) + 8 * ((i) >> 1))
#define CHECK_COL(t, i) (2 * (t) + ((i) & 1))

inline uint check_pair(__global const ushort *m, int at) { return m[at] | ((uint)m[at + 1] << 16); }
inline uint check_col_pair(__global const ushort *m, int at, int stride)
{
    return m[at] | ((uint)m[at + stride] << 16);
}

inline float4 check_c(int g, int t)
{
    float4 c;
    c.s0 = 0.25f * (8 * CHECK_ROW(g, 0) + CHECK_COL(t, 0));
    c.s1 = 0.25f * (8 * CHECK_ROW(g, 1) + CHECK_COL(t, 1));
    c.s2 = 0.25f * (8 * CHECK_ROW(g, 2) + CHECK_COL(t, 2));
    c.s3 = 0.25f * (8 * CHECK_ROW(g, 3) + CHECK_COL(t, 3));
    return c;
}

inline void check_store(__global uint *out, int g, int t, float4 d)
{
    out[CHECK_ROW(g, 0) * 8 + CHECK_COL(t, 0)] = as_uint(d.s0);
    out[CHECK_ROW(g, 1) * 8 + CHECK_COL(t, 1)] = as_uint(d.s1);
    out[CHECK_ROW(g, 2) * 8 + CHECK_COL(t, 2)] = as_uint(d.s2);
    out[CHECK_ROW(g, 3) * 8 + CHECK_COL(t, 3)] = as_uint(d.s3);
}

/* a16: two 16x16 A (f16 bits, then bf16 bits), row-major; b16: two 16x8 B
 * (k x n, row-major); af: 16x8 A and bf: 8x8 B as floats (tf32-exact); pk:
 * 64 floats */
__kernel __attribute__((reqd_work_group_size(32, 1, 1))) void attn_mma_check(
    __global const ushort *a16, __global const ushort *b16, __global const float *af,
    __global const float *bf, __global const float *pk, __global uint *out)
{
    __local uint ws[MMA_SCRATCH_WORDS];
    const int lane = mma_lane(), g = lane >> 2, t = lane & 3;
#if !MMA_CHECK_TF32
    for (int kind = 0; kind < 2; kind++) {
        __global const ushort *a = a16 + kind * 256, *b = b16 + kind * 128;
        const uint4 fa = (uint4)(check_pair(a, g * 16 + 2 * t), check_pair(a, (g + 8) * 16 + 2 * t),
                                 check_pair(a, g * 16 + 2 * t + 8),
                                 check_pair(a, (g + 8) * 16 + 2 * t + 8));
        const uint2 fb = (uint2)(check_col_pair(b, 2 * t * 8 + g, 8),
                                 check_col_pair(b, (2 * t + 8) * 8 + g, 8));
        float4 d = check_c(g, t);
        if (kind == 0)
            mma_f16(&d, fa, fb, ws);
        else
            mma_bf16(&d, fa, fb, ws);
        check_store(out + kind * 128, g, t, d);
    }
    const float v = 3.0f * lane + 1.0f;
    out[384 + lane] = as_uint(mma_xor(v, 1, ws));
    out[416 + lane] = as_uint(mma_xor(v, 2, ws));
    out[448 + lane] = as_uint(mma_xor(v, 5, ws));
    out[480 + lane] = mma_pack_f16(pk[2 * lane], pk[2 * lane + 1]);
    out[512 + lane] = mma_pack_bf16(pk[2 * lane], pk[2 * lane + 1]);
#else
    const uint4 ta = (uint4)(mma_tf32_of(af[g * 8 + t]), mma_tf32_of(af[(g + 8) * 8 + t]),
                             mma_tf32_of(af[g * 8 + t + 4]), mma_tf32_of(af[(g + 8) * 8 + t + 4]));
    const uint2 tb = (uint2)(mma_tf32_of(bf[t * 8 + g]), mma_tf32_of(bf[(t + 4) * 8 + g]));
    float4 d = check_c(g, t);
    mma_tf32(&d, ta, tb, ws);
    check_store(out + 256, g, t, d);
    out[544 + lane] = mma_tf32_of(pk[lane]);
    out[576 + lane] = mma_tf32_of(pk[32 + lane]);
#endif
}
