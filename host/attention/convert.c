/* convert.c -- host conversions between float and the storage types: IEEE
 * binary16 and bfloat16, both rounding to nearest even, bit-exact, so that
 * tests and check mode see exactly the values a kernel reads. */
#include "attention/convert.h"
#include "core/errors.h"

#include <math.h>
#include <string.h>

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round the low `shift` bits of m away, to nearest, ties to even. The carry
 * out of the mantissa lands in the exponent, which is what IEEE wants (up to
 * the smallest normal, or up to infinity). */
static uint32_t round_shift(uint32_t m, int shift)
{
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) r++;
    return r;
}

uint16_t attn_f16_bits(float f)
{
    uint32_t u = float_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t exp = (u >> 23) & 0xffu;
    uint32_t mant = u & 0x7fffffu;

    if (exp == 0xffu) {
        if (mant) return (uint16_t)(sign | 0x7e00u | (mant >> 13)); /* quiet NaN */
        return (uint16_t)(sign | 0x7c00u);                          /* infinity */
    }
    int e = (int)exp - 127;
    if (e > 15) return (uint16_t)(sign | 0x7c00u); /* >= 2^16: overflow */
    if (e >= -14) {                                /* normal half */
        uint32_t m = ((uint32_t)(e + 15) << 23) | mant;
        return (uint16_t)(sign | round_shift(m, 13)); /* may carry to inf */
    }
    if (e >= -25) { /* subnormal half (or rounds up to the smallest one) */
        uint32_t m = mant | 0x800000u; /* value = m * 2^(e-23) */
        return (uint16_t)(sign | round_shift(m, -e - 1));
    }
    return sign; /* below half the smallest subnormal: signed zero */
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;

    if (exp == 0) {
        float v = ldexpf((float)mant, -24); /* zero or subnormal, exact */
        return sign ? -v : v;
    }
    if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));
    return bits_float(sign | ((exp - 15u + 127u) << 23) | (mant << 13));
}

uint16_t attn_bf16_bits(float f)
{
    uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* ties to even; finite overflow becomes inf */
    return (uint16_t)(u >> 16);
}

static float bf16_to_f32(uint16_t b) { return bits_float((uint32_t)b << 16); }

/* What both public conversions check (their call already named by
 * attn_thread_call_begin). */
static attn_status check_args(attn_dtype t, const void *src, const void *dst, size_t n)
{
    if (attn_dtype_size(t) == 0)
        return ATTN_FAIL(NULL, ATTN_ERROR_INVALID_ARGUMENT, "dtype %d is not an attn_dtype", (int)t);
    if (n > 0 && (!src || !dst))
        return ATTN_FAIL(NULL, ATTN_ERROR_INVALID_ARGUMENT, "%s is NULL", !src ? "src" : "dst");
    return ATTN_SUCCESS;
}

void attn_store_from_f32(attn_dtype t, const float *src, void *dst, size_t n)
{
    if (t == ATTN_F32) {
        if (n > 0) memmove(dst, src, n * sizeof(float)); /* tolerates dst == src */
        return;
    }
    /* element by element through memcpy: the storage side is bytes, at
     * any alignment (a .npy's data may start at an odd offset) */
    unsigned char *d = dst;
    for (size_t i = 0; i < n; i++) {
        const uint16_t h = t == ATTN_F16 ? attn_f16_bits(src[i]) : attn_bf16_bits(src[i]);
        memcpy(d + 2 * i, &h, sizeof h);
    }
}

void attn_load_to_f32(attn_dtype t, const void *src, float *dst, size_t n)
{
    if (t == ATTN_F32) {
        if (n > 0) memmove(dst, src, n * sizeof(float));
        return;
    }
    const unsigned char *s = src; /* any alignment, as above */
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, s + 2 * i, sizeof h);
        dst[i] = t == ATTN_F16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
}

attn_status attn_convert_from_f32(attn_dtype t, const float *src, void *dst, size_t n)
{
    attn_thread_call_begin(__func__);
    attn_status st = check_args(t, src, dst, n);
    if (st == ATTN_SUCCESS) attn_store_from_f32(t, src, dst, n);
    return st;
}

attn_status attn_convert_to_f32(attn_dtype t, const void *src, float *dst, size_t n)
{
    attn_thread_call_begin(__func__);
    attn_status st = check_args(t, src, dst, n);
    if (st == ATTN_SUCCESS) attn_load_to_f32(t, src, dst, n);
    return st;
}
