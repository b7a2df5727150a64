/* kv_quant.h -- the int8 KV cache format on the host (kv_quant.c): one row
 * quantized exactly as cl/kv_append.cl quantizes it (int8's tolerance is
 * public: attn_kv_tolerance). Internal, like internal.h. */
#ifndef ATTN_ATTENTION_KV_QUANT_H
#define ATTN_ATTENTION_KV_QUANT_H

#include "attn.h"

/* The largest |q| of an int8 cache element: x ~ scale * q, scale = max|x|
 * / ATTN_KV_INT8_MAX (symmetric: -128 is never used). */
#define ATTN_KV_INT8_MAX 127

/* Quantizes one row of n floats (a token's K or V for one KV head) as the
 * append kernel does: *scale = max|x| / 127 (the float below it where 127
 * times that is inf, so that max|x| = FLT_MAX reads back finite; 0 for an
 * all-zero row; NaN when the row holds an inf or NaN, which int8 cannot
 * hold, so that the row reads back as NaN rather than silently finite),
 * q[d] = x[d] / scale
 * rounded to nearest even and saturated to [-127, 127] (0 when the scale
 * is 0 or NaN). Float division, correctly rounded, as the kernel's. */
void attn_kv_quantize_row(const float *x, int n, signed char *q, float *scale);

/* An int8 element's value: q * scale, one float multiply (what the decode
 * kernels use, before any rounding to the cache's dtype). */
static inline float attn_kv_dequantize(signed char q, float scale)
{
    return (float)q * scale;
}

#endif /* ATTN_ATTENTION_KV_QUANT_H */
