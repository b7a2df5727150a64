/* dtype.c -- the storage types' sizes and names, the DESIGN tolerances
 * (and int8 K/V's own) and the effective logit scale. */
#include "attention/forward.h"

#include <math.h>

size_t attn_dtype_size(attn_dtype t)
{
    switch (t) {
    case ATTN_F32: return 4;
    case ATTN_F16: return 2;
    case ATTN_BF16: return 2;
    }
    return 0;
}

const char *attn_dtype_name(attn_dtype t)
{
    switch (t) {
    case ATTN_F32: return "f32";
    case ATTN_F16: return "f16";
    case ATTN_BF16: return "bf16";
    }
    return NULL;
}

/* DESIGN's tolerances: fp16 and bf16 are set by the storage rounding of
 * inputs and output (2^-11 and 2^-8 relative), not by the accumulation. */
void attn_tolerance(attn_dtype t, double *atol, double *rtol)
{
    double a = NAN, r = NAN; /* an unknown dtype: no comparison passes */
    switch (t) {
    case ATTN_F32: a = 1e-5; r = 1e-4; break;
    case ATTN_F16: a = 2e-3; r = 2e-3; break;
    case ATTN_BF16: a = 1.6e-2; r = 1.6e-2; break;
    }
    if (atol) *atol = a;
    if (rtol) *rtol = r;
}

/* The int8 part of the tolerance, added to the dtype's DESIGN tolerance.
 * Derived from measurement: decode's answer over quantize-dequantized K/V
 * against the double reference over the unquantized ones (the kernels'
 * own error is DESIGN's fp32 tolerance, far below), unit-normal q, k, v
 * with the default scale 1/sqrt(D) (logits of deviation about 1), D in
 * {1, 8, 40, 64, 96, 128, 256}, 1..4096 keys, 10 seeds each: the worst
 * |out - ref| was 2.9e-2, and the worst share of 5e-2 + 2e-2 |ref| used
 * was 0.52. The error is mostly V's rounding, at most max|v| / 254 per
 * element when one key dominates, and shrinks as more keys share the
 * weight; K's rounding moves the logits by about max|k| / 254 / sqrt(3)
 * times the logit scale, so sharper attention errs more (logits of
 * deviation 2: 4.9e-2, 4: 9.4e-2). Both grow with the data's magnitude:
 * the tolerance is for values of unit scale. */
#define KV_INT8_ATOL 5e-2
#define KV_INT8_RTOL 2e-2

void attn_kv_tolerance(attn_kv_storage s, attn_dtype t, double *atol, double *rtol)
{
    double a, r;
    attn_tolerance(t, &a, &r);
    if (s == ATTN_KV_INT8) {
        a += KV_INT8_ATOL;
        r += KV_INT8_RTOL;
    } else if (s != ATTN_KV_AS_DTYPE) {
        a = r = NAN; /* an unknown storage, as an unknown dtype */
    }
    if (atol) *atol = a;
    if (rtol) *rtol = r;
}

float attn_effective_scale(const attn_problem *p)
{
    if (p->scale != 0.0f) return p->scale;
    return 1.0f / sqrtf((float)p->head_dim);
}
