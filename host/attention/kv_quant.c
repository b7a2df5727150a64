/* kv_quant.c -- the int8 KV cache format on the host: a row quantized as
 * cl/kv_append.cl quantizes it (tests compare the cache against it). */
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
    float s = finite ? amax / (float)ATTN_KV_INT8_MAX : NAN;
    if (isinf(s * ATTN_KV_INT8_MAX)) s = nextafterf(s, 0.0f); /* FLT_MAX / 127 rounds up */
    for (int d = 0; d < n; d++) {
        float r = s > 0.0f ? rintf(x[d] / s) : 0.0f; /* the default rounding: to nearest even */
        if (r > ATTN_KV_INT8_MAX) r = ATTN_KV_INT8_MAX;
        if (r < -ATTN_KV_INT8_MAX) r = -ATTN_KV_INT8_MAX;
        q[d] = (signed char)r;
    }
    *scale = s;
}
