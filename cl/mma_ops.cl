/* mma_ops.cl -- warp-level matrix fragments for the mma family (cl/mma.cl):
 * NVIDIA's tensor-core instructions mma.sync m16n8k16 (f16, bf16) and
 * m16n8k8 (tf32), the butterfly shuffle and the float packings, each with
 * two back ends:
 *  - MMA_PTX (defined by the host only for NVIDIA devices of compute
 *    capability >= 8.0): inline PTX, as NVIDIA's OpenCL compiler accepts it
 *    (../shared/gpu/ptx-probe measured mma.sync exact and at 641 TFLOP/s
 *    fp16 on an H200). No other compiler sees an asm statement.
 *  - otherwise an emulation through __local memory and work-group barriers,
 *    so that the family's fragment bookkeeping runs, and is checked against
 *    the CPU reference, on PoCL and under Oclgrind. It is many times slower
 *    than any other family: for tests and forced runs only.
 * A warp is 32 consecutive work-items of a one-dimensional work-group whose
 * size is a multiple of 32 (NVIDIA's warps). Fragment layouts are the PTX
 * ISA's (section "Matrix Fragments for mma.m16n8k16 / m16n8k8"), with g =
 * lane >> 2 (groupID) and t = lane & 3 (threadID_in_group); two 16-bit
 * values share a uint, the lower column (or k) in the low half:
 *   m16n8k16 A (16x16, row-major): a.s0 (row g, cols 2t, 2t+1), a.s1 (row
 *     g+8, cols 2t, 2t+1), a.s2 (row g, cols 2t+8, 2t+9), a.s3 (row g+8,
 *     cols 2t+8, 2t+9); B (16x8, k x n): b.s0 (k 2t, 2t+1; n g), b.s1 (k
 *     2t+8, 2t+9; n g).
 *   m16n8k8 tf32 A (16x8): a.s0 (g, t), a.s1 (g+8, t), a.s2 (g, t+4), a.s3
 *     (g+8, t+4); B (8x8): b.s0 (k t, n g), b.s1 (k t+4, n g).
 *   D and C (16x8 f32) of both: d.s0 (row g, col 2t), d.s1 (g, 2t+1), d.s2
 *     (g+8, 2t), d.s3 (g+8, 2t+1).
 * RULE for callers: every function taking ws is reached by all work-items
 * of the work-group together, the same number of times (the emulation's
 * barriers); on NVIDIA warp-uniform would do, but the code must run both.
 * ws is the calling warp's MMA_SCRATCH_WORDS uints of __local memory.
 *
 * Other vendors' matrix units (designed for, not written: no such device
 * can be reached to verify them). Each would be a third back end here,
 * chosen by the host from the device's extensions or compiler, gated the
 * same way (host/attention/mma_gate.c: a probe build, attn_mma_check's
 * exact results, a verification forward):
 *  - Intel Xe (cl_intel_subgroup_matrix_multiply_accumulate, with
 *    cl_intel_required_subgroup_size): intel_sub_group_f16_f16_matrix_mad_k16
 *    and its bf16 twin take an M x 16 A (M <= 8) and a 16 x N B (N = the
 *    sub-group size, 8 or 16) and give M x N float accumulators, one column
 *    per work-item. Its "warp" is a sub-group of 8 or 16, so mma_lane,
 *    MMA_SCRATCH_WORDS and the row/column of each accumulator element
 *    change with it; mma.cl's P-to-A reuse (the accumulator's layout is the
 *    A operand's) does not hold there, so P would pass through __local, as
 *    the emulation's scratch already allows.
 *  - AMD CDNA (wave64: __builtin_amdgcn_mfma_f32_16x16x16f16 and the
 *    bf16 variants) and RDNA3/4 (wave32: __builtin_amdgcn_wmma_f32_16x16x16_
 *    f16_w32), guarded by __has_builtin in clang's OpenCL: 16 x 16 tiles
 *    instead of 16 x 8, their own fragment layouts, and a shuffle through
 *    __builtin_amdgcn_ds_bpermute instead of shfl.sync.
 * mma.cl is written against the m16n8 shapes above: a back end with other
 * shapes needs the kernel's n-tile loops parameterised by the shape first. */

inline int mma_lane(void) { return (int)(get_local_id(0) & 31); }
inline int mma_warp(void) { return (int)(get_local_id(0) >> 5); }

/* ---- packing: two floats into one uint of 16-bit values (lo in bits 0-15) ---- */

/* bf16 from bf16's bits: the float's upper half */
inline float2 mma_unpack_bf16(uint u) { return (float2)(as_float(u << 16), as_float(u & 0xffff0000u)); }

/* f16 bits to float, exactly (no half arithmetic: NVIDIA's OpenCL has no cl_khr_fp16) */
inline float mma_f16_to_float(uint h)
{
    const uint s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) return as_float(s | as_uint((float)m * 0x1p-24f)); /* zero, subnormal */
    if (e == 31) return as_float(s | 0x7f800000u | (m << 13));       /* inf, NaN */
    return as_float(s | ((e + 112u) << 23) | (m << 13));
}
inline float2 mma_unpack_f16(uint u) { return (float2)(mma_f16_to_float(u & 0xffffu), mma_f16_to_float(u >> 16)); }

#ifndef MMA_PTX
/* float to f16 bits, round to nearest even (as vstore_half_rte) */
inline uint mma_f16_of(float f)
{
    uint x = as_uint(f);
    const uint s = (x >> 16) & 0x8000u;
    x &= 0x7fffffffu;
    if (x > 0x7f800000u) return s | 0x7e00u;         /* NaN */
    if (x >= 0x477ff000u) return s | 0x7c00u;        /* rounds past 65504: inf */
    if (x < 0x38800000u)                             /* below 2^-14: subnormal, exact scaling */
        return s | (uint)rint(as_float(x) * 0x1p24f);
    x += 0xfffu + ((x >> 13) & 1u);                  /* to nearest even on the 13 bits dropped */
    return s | ((x - 0x38000000u) >> 13);            /* rebias 127 -> 15 */
}
/* float to bf16 bits, round to nearest even; NaN stays NaN (common.cl's bf16_from_float) */
inline uint mma_bf16_of(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}
inline uint mma_pack_f16(float lo, float hi) { return mma_f16_of(lo) | (mma_f16_of(hi) << 16); }
inline uint mma_pack_bf16(float lo, float hi) { return mma_bf16_of(lo) | (mma_bf16_of(hi) << 16); }
/* x rounded to tf32 (10 mantissa bits), to nearest with ties away from zero
 * (cvt.rna.tf32.f32); inf and NaN unchanged */
inline uint mma_tf32_of(float x)
{
    const uint u = as_uint(x);
    if ((u & 0x7f800000u) == 0x7f800000u) return u;
    return (u + 0x1000u) & 0xffffe000u;
}
#else
/* cvt packs its first source into the upper half */
inline uint mma_pack_f16(float lo, float hi)
{
    uint d;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
}
inline uint mma_pack_bf16(float lo, float hi)
{
    uint d;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
}
inline uint mma_tf32_of(float x)
{
    uint d;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(d) : "f"(x));
    /* the PTX ISA leaves tf32's layout in a register to the implementation:
     * the low 13 bits cleared, it is an f32 for mma_split's remainder */
    return d & 0xffffe000u;
}
#endif

/* ---- the warp-level operations ---- */

#ifdef MMA_PTX
#define MMA_SCRATCH_WORDS 1 /* unused */

/* one mma.sync of the given shape and types: D = A.B + D, in place */
#define MMA_PTX_OP(name, shape_types)                                                          \
    inline void name(float4 *d, uint4 a, uint2 b, __local uint *ws)                           \
    {                                                                                         \
        (void)ws;                                                                             \
        float d0 = d->s0, d1 = d->s1, d2 = d->s2, d3 = d->s3;                                 \
        asm volatile("mma.sync.aligned." shape_types " {%0,%1,%2,%3}, {%4,%5,%6,%7}, "       \
                     "{%8,%9}, {%0,%1,%2,%3};"                                                \
                     : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)                                 \
                     : "r"(a.s0), "r"(a.s1), "r"(a.s2), "r"(a.s3), "r"(b.s0), "r"(b.s1));     \
        *d = (float4)(d0, d1, d2, d3);                                                        \
    }
MMA_PTX_OP(mma_f16, "m16n8k16.row.col.f32.f16.f16.f32")
MMA_PTX_OP(mma_bf16, "m16n8k16.row.col.f32.bf16.bf16.f32")
MMA_PTX_OP(mma_tf32, "m16n8k8.row.col.f32.tf32.tf32.f32")
inline float mma_xor(float v, int mask, __local uint *ws)
{
    (void)ws;
    uint r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;"
                 : "=r"(r)
                 : "r"(as_uint(v)), "r"(mask));
    return as_float(r);
}

#else /* the emulation */
/* per warp: every lane's A registers (32 x 4), then its B registers (32 x 2) */
#define MMA_SCRATCH_WORDS 192

/* Publishes this lane's fragments to the warp's scratch. */
inline void mma_emul_put(uint4 a, uint2 b, __local uint *ws)
{
    const int l = mma_lane();
    vstore4(a, l, ws);
    vstore2(b, l, ws + 128);
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* The emulations below find the lane and register holding an element (the
 * inverse of the layouts in the header); a fragment loader writes the
 * forward map, so a test of the two against a host product checks one
 * reading of the PTX ISA against another. */

/* m16n8k16: A's element (r, k) and B's (k, n) as stored 16-bit values */
inline uint mma_emul_a16(__local const uint *ws, int r, int k)
{
    const int lane = 4 * (r & 7) + ((k & 7) >> 1), reg = (r >> 3) + 2 * (k >> 3);
    return (ws[lane * 4 + reg] >> (16 * (k & 1))) & 0xffffu;
}
inline uint mma_emul_b16(__local const uint *ws, int k, int n)
{
    const int lane = 4 * n + ((k & 7) >> 1), reg = k >> 3;
    return (ws[128 + lane * 2 + reg] >> (16 * (k & 1))) & 0xffffu;
}

/* D += A.B over k of 16, bf16 (bf16 != 0) or f16; fp32 products and sums */
inline void mma_emul_16816(float4 *d, uint4 a, uint2 b, __local uint *ws, int bf16)
{
    mma_emul_put(a, b, ws);
    const int g = mma_lane() >> 2, t = mma_lane() & 3;
    float acc[4] = {d->s0, d->s1, d->s2, d->s3};
    for (int i = 0; i < 4; i++) {
        const int r = g + 8 * (i >> 1), n = 2 * t + (i & 1);
        for (int k = 0; k < 16; k++) {
            const uint x = mma_emul_a16(ws, r, k), y = mma_emul_b16(ws, k, n);
            acc[i] = bf16 ? fma(as_float(x << 16), as_float(y << 16), acc[i])
                          : fma(mma_f16_to_float(x), mma_f16_to_float(y), acc[i]);
        }
    }
    *d = (float4)(acc[0], acc[1], acc[2], acc[3]);
    barrier(CLK_LOCAL_MEM_FENCE); /* before the next operation overwrites ws */
}
inline void mma_f16(float4 *d, uint4 a, uint2 b, __local uint *ws) { mma_emul_16816(d, a, b, ws, 0); }
inline void mma_bf16(float4 *d, uint4 a, uint2 b, __local uint *ws) { mma_emul_16816(d, a, b, ws, 1); }

/* m16n8k8 tf32: the tensor cores read an operand's upper 19 bits only */
inline void mma_tf32(float4 *d, uint4 a, uint2 b, __local uint *ws)
{
    mma_emul_put(a, b, ws);
    const int g = mma_lane() >> 2, t = mma_lane() & 3;
    float acc[4] = {d->s0, d->s1, d->s2, d->s3};
    for (int i = 0; i < 4; i++) {
        const int r = g + 8 * (i >> 1), n = 2 * t + (i & 1);
        for (int k = 0; k < 8; k++) {
            const uint x = ws[(4 * (r & 7) + (k & 3)) * 4 + (r >> 3) + 2 * (k >> 2)];
            const uint y = ws[128 + (4 * n + (k & 3)) * 2 + (k >> 2)];
            acc[i] = fma(as_float(x & 0xffffe000u), as_float(y & 0xffffe000u), acc[i]);
        }
    }
    *d = (float4)(acc[0], acc[1], acc[2], acc[3]);
    barrier(CLK_LOCAL_MEM_FENCE);
}

inline float mma_xor(float v, int mask, __local uint *ws)
{
    const int l = mma_lane();
    ws[l] = as_uint(v);
    barrier(CLK_LOCAL_MEM_FENCE);
    const float r = as_float(ws[l ^ mask]);
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}
#endif
