/* version.c -- the library's version, the names of statuses and storage
 * types, the DESIGN tolerances and the effective logit scale: small facts
 * every other file and every tool asks for. */
#include "internal.h"

#include <math.h>

#define ATTN_STR2(x) #x
#define ATTN_STR(x) ATTN_STR2(x)

unsigned attn_version(void) { return ATTN_VERSION_NUMBER; }

const char *attn_version_string(void)
{
    return ATTN_STR(ATTN_VERSION_MAJOR) "." ATTN_STR(ATTN_VERSION_MINOR) "." ATTN_STR(
        ATTN_VERSION_PATCH);
}

const char *attn_status_name(attn_status s)
{
    switch (s) {
    case ATTN_SUCCESS: return "ATTN_SUCCESS";
    case ATTN_ERROR_INVALID_ARGUMENT: return "ATTN_ERROR_INVALID_ARGUMENT";
    case ATTN_ERROR_UNSUPPORTED: return "ATTN_ERROR_UNSUPPORTED";
    case ATTN_ERROR_NO_DEVICE: return "ATTN_ERROR_NO_DEVICE";
    case ATTN_ERROR_OPENCL: return "ATTN_ERROR_OPENCL";
    case ATTN_ERROR_BUILD: return "ATTN_ERROR_BUILD";
    case ATTN_ERROR_OUT_OF_MEMORY: return "ATTN_ERROR_OUT_OF_MEMORY";
    case ATTN_ERROR_TUNING_DB: return "ATTN_ERROR_TUNING_DB";
    case ATTN_ERROR_IO: return "ATTN_ERROR_IO";
    case ATTN_ERROR_MISMATCH: return "ATTN_ERROR_MISMATCH";
    }
    return "ATTN_STATUS_UNKNOWN";
}

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
