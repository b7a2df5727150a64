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

/* *s += x, with the rounding error carried in *c (Kahan): the sum is *s - *c */
inline void kahan_add_v(floatV *s, floatV *c, floatV x)
{
    const floatV y = x - *c;
    const floatV t = *s + y;
    *c = (t - *s) - y;
    *s = t;
}
