/* kv_quant.c -- the int8 KV cache format on the host: a row quantized as
 * cl/kv_append.cl quantizes it (tests compare the cache against it), and
 * int8 decode's own tolerance. */
#include "attention/kv_quant.h"

#include <math.h>

void attn_kv_quantize_row(const float *x, int n, signed char *q, float *scale)
{
    float amax = 0.0f;
    int finite = 1;
    for (int d = 0; d < n; d++) {
        if (!isfinite(x[d])) finite = 0;
        else if (fabsf(x[d]) > amax) amax = fabsf(x[d]);
    }
    const float s = finite ? amax / (float)ATTN_KV_INT8_MAX : NAN;
    for (int d = 0; d < n; d++) {
        float r = s > 0.0f ? rintf(x[d] / s) : 0.0f; /* the default rounding: to nearest even */
        if (r > ATTN_KV_INT8_MAX) r = ATTN_KV_INT8_MAX;
        if (r < -ATTN_KV_INT8_MAX) r = -ATTN_KV_INT8_MAX;
        q[d] = (signed char)r;
    }
    *scale = s;
}

/* The int8 part of the tolerance, added to the dtype's DESIGN tolerance.
 * Derived from measurement: decode's answer over quantize-dequantized K/V
 * against the double reference over the unquantized ones (the kernels'
 * own error is DESIGN's fp32 tolerance, far below), unit-normal q, k, v
 * with the default scale 1/sqrt(D) (logits of deviation about 1), D in
 * {1, 8, 40, 64, 96, 128, 256}, 1..4096 keys, 10 seeds each: the worst
 * |out - ref| was 2.9e-2, and the worst share of 5e-2 + 2e-2 |ref| used
 * was 0.55. The error is mostly V's rounding, at most max|v| / 254 per
 * element when one key dominates, and shrinks as more keys share the
 * weight; K's rounding moves the logits by about max|k| / 254 / sqrt(3)
 * times the logit scale, so sharper attention errs more (logits of
 * deviation 2: 4.9e-2, 4: 9.4e-2). Both grow with the data's magnitude:
 * the tolerance is for values of unit scale. */
#define KV_INT8_ATOL 5e-2
#define KV_INT8_RTOL 2e-2

void attn_kv_int8_tolerance(attn_dtype t, double *atol, double *rtol)
{
    double a, r;
    attn_tolerance(t, &a, &r);
    if (atol) *atol = a + KV_INT8_ATOL;
    if (rtol) *rtol = r + KV_INT8_RTOL;
}
