/* vector_helpers.cl -- what the CPU-style (vector) kernels share: the
 * width-generic vector names and the horizontal max and sum. Joined after
 * common.cl and before vector.cl or decode_vector.cl. */

#ifndef VEC_WIDTH
#define VEC_WIDTH 16       /* float vector width: 4, 8 or 16 */
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatV CAT(float, VEC_WIDTH)
#define intV CAT(int, VEC_WIDTH)
#define vloadV CAT(vload, VEC_WIDTH)
#define vstoreV CAT(vstore, VEC_WIDTH)
#define uintV CAT(uint, VEC_WIDTH)
#define ushortV CAT(ushort, VEC_WIDTH)
#define convert_floatV CAT(convert_float, VEC_WIDTH)

#if VEC_WIDTH == 16
#define IOTA ((int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#elif VEC_WIDTH == 8
#define IOTA ((int8)(0, 1, 2, 3, 4, 5, 6, 7))
#elif VEC_WIDTH == 4
#define IOTA ((int4)(0, 1, 2, 3))
#else
#error "VEC_WIDTH must be 4, 8 or 16"
#endif

/* fma() is one instruction where the CPU has FMA (clang predefines __FMA__
 * for such x86 targets and __ARM_FEATURE_FMA on ARM; FP_FAST_FMAF is
 * OpenCL's own sign); PoCL compiles mad() to a multiply and an add (5-9%
 * slower here), and fma() without hardware support to a slow call. */
#if defined(FP_FAST_FMAF) || defined(__FMA__) || defined(__ARM_FEATURE_FMA)
#define MULADD(a, b, c) fma((a), (b), (c))
#else
#define MULADD(a, b, c) mad((a), (b), (c))
#endif

/* Two vectors of partial sums -> one with the pair sums of a in the low
 * half and those of b in the high half. log2(VEC_WIDTH) levels of it turn
 * VEC_WIDTH vectors into one whose lane k is the sum of vector k. */
inline __attribute__((always_inline)) floatV fold_pair(floatV a, floatV b)
{
#if defined(ATTN_FOLD_THROUGH_MEMORY)
    /* for Oclgrind's --uninitialized pass (tools/check-oclgrind.sh): its
     * 21.10 marks every shuffle's result undefined, even of defined data */
    float t[2 * VEC_WIDTH], r[VEC_WIDTH];
    vstoreV(a, 0, t);
    vstoreV(b, 1, t);
    for (int i = 0; i < VEC_WIDTH; i++) r[i] = t[2 * i] + t[2 * i + 1];
    return vloadV(0, r);
#elif defined(__clang__)
    /* full masks: Oclgrind 21.10 crashes on the swizzle form's shuffles */
#if VEC_WIDTH == 16
    return __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30) +
           __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
#elif VEC_WIDTH == 8
    return __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14) +
           __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
#else
    return __builtin_shufflevector(a, b, 0, 2, 4, 6) + __builtin_shufflevector(a, b, 1, 3, 5, 7);
#endif
#else
    return (floatV)(a.even + a.odd, b.even + b.odd);
#endif
}

/* Horizontal max and sum. max() rather than fmax(): no NaN handling needed,
 * and fmax cost measurably on PoCL. The halves go through a private array,
 * not .lo/.hi: the compiler makes the same shuffles of it, and Oclgrind
 * 21.10's --uninitialized takes x.hi's lanes for undefined (it compares a
 * shuffle index with the result's width instead of the source's). */
inline float hmax_v(floatV x)
{
    float t[VEC_WIDTH];
    vstoreV(x, 0, t);
#if VEC_WIDTH == 16
    vstore8(max(vload8(0, t), vload8(1, t)), 0, t);
#endif
#if VEC_WIDTH >= 8
    vstore4(max(vload4(0, t), vload4(1, t)), 0, t);
#endif
    const float2 c = max(vload2(0, t), vload2(1, t));
    return max(c.x, c.y);
}

inline float hsum_v(floatV x)
{
    float t[VEC_WIDTH];
    vstoreV(x, 0, t);
#if VEC_WIDTH == 16
    vstore8(vload8(0, t) + vload8(1, t), 0, t);
#endif
#if VEC_WIDTH >= 8
    vstore4(vload4(0, t) + vload4(1, t), 0, t);
#endif
    const float2 c = vload2(0, t) + vload2(1, t);
    return c.x + c.y;
}

/* Stores chunk c (elements c * VEC_WIDTH ...) of an output row at o + row,
 * rounded as STORE rounds (common.cl). A chunk inside HEAD_DIM is one vector
 * store: going through a float array and element stores made a 32-byte load
 * of three smaller stores, a store-forwarding stall that cost 4% at S=512
 * (perf, PoCL 3.1, Zen 5). The chunk that crosses HEAD_DIM, or an unaligned
 * one, goes element by element. */
inline void store_chunk(__global storage_t *o, ulong row, int c, floatV x)
{
    __global storage_t *p = o + row + (ulong)c * VEC_WIDTH;
    /* PoCL 3.1 compiles vstore_half16 and vstore16 to aligned stores (a
     * fault on a row at an odd offset), so only aligned chunks take it */
    if ((c + 1) * VEC_WIDTH <= HEAD_DIM && (ulong)p % (VEC_WIDTH * sizeof(storage_t)) == 0) {
#if STORAGE == 0
        vstoreV(x, 0, p);
#elif STORAGE == 1
        CAT(CAT(vstore_half, VEC_WIDTH), _rte)(x, 0, p);
#else
        /* bf16_from_float (common.cl), on a vector */
        const uintV u = CAT(as_uint, VEC_WIDTH)(x);
        const uintV rounded = (u + (uintV)(0x7fffu) + ((u >> 16) & (uintV)(1u))) >> 16;
        const uintV quiet = (u >> 16) | (uintV)(0x40u);
        const intV nan = (u & (uintV)(0x7fffffffu)) > (uintV)(0x7f800000u);
        vstoreV(CAT(convert_ushort, VEC_WIDTH)(select(rounded, quiet, nan)), 0, p);
#endif
        return;
    }
    float out[VEC_WIDTH];
    vstoreV(x, 0, out);
    for (int e = 0; e < VEC_WIDTH && c * VEC_WIDTH + e < HEAD_DIM; e++) STORE(o, row + (ulong)c * VEC_WIDTH + e, out[e]);
}

/* *s += x, with the rounding error carried in *c (Kahan): the sum is *s - *c */
inline void kahan_add_v(floatV *s, floatV *c, floatV x)
{
    const floatV y = x - *c;
    const floatV t = *s + y;
    *c = (t - *s) - y;
    *s = t;
}
