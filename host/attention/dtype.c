/* dtype.c -- the storage types' sizes and names, the DESIGN tolerances
 * and the effective logit scale. */
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
    double a = 1e-5, r = 1e-4;
    switch (t) {
    case ATTN_F32: a = 1e-5; r = 1e-4; break;
    case ATTN_F16: a = 2e-3; r = 2e-3; break;
    case ATTN_BF16: a = 1.6e-2; r = 1.6e-2; break;
    }
    if (atol) *atol = a;
    if (rtol) *rtol = r;
}

float attn_effective_scale(const attn_problem *p)
{
    if (p->scale != 0.0f) return p->scale;
    return 1.0f / sqrtf((float)p->head_dim);
}
