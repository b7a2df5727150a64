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

#if VEC_WIDTH == 16
#define IOTA ((int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#elif VEC_WIDTH == 8
#define IOTA ((int8)(0, 1, 2, 3, 4, 5, 6, 7))
#elif VEC_WIDTH == 4
#define IOTA ((int4)(0, 1, 2, 3))
#else
#error "VEC_WIDTH must be 4, 8 or 16"
#endif

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
