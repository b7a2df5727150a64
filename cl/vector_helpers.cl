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
 * and fmax cost measurably on PoCL. */
inline float hmax_v(floatV x)
{
#if VEC_WIDTH == 16
    float8 a = max(x.lo, x.hi);
    float4 b = max(a.lo, a.hi);
#elif VEC_WIDTH == 8
    float4 b = max(x.lo, x.hi);
#else
    float4 b = x;
#endif
    float2 c = max(b.lo, b.hi);
    return max(c.x, c.y);
}

inline float hsum_v(floatV x)
{
#if VEC_WIDTH == 16
    float8 a = x.lo + x.hi;
    float4 b = a.lo + a.hi;
#elif VEC_WIDTH == 8
    float4 b = x.lo + x.hi;
#else
    float4 b = x;
#endif
    float2 c = b.lo + b.hi;
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
