/* family_status.c -- attn_family_status: whether a kernel family may be a
 * device's default, and why not (attn-info prints it). */
#include "attention/mma_gate.h"
#include "core/context.h"
#include "core/errors.h"
#include "kernels/params.h"

#include <stdio.h>

attn_status attn_family_status(attn_context *ctx, const char *family, int *usable, char *why,
                               size_t why_size)
{
    if (!ctx) return attn_fail_null(__func__, "ctx");
    attn_call_begin(ctx, __func__);
    attn_status st = ATTN_SUCCESS;
    const int f = attn_family_named(family);
    if (!family || !usable)
        st = ATTN_FAIL(ctx, ATTN_ERROR_INVALID_ARGUMENT, "%s is NULL", !family ? "family" : "usable");
    else if (f < 0)
        st = ATTN_FAIL(ctx, ATTN_ERROR_INVALID_ARGUMENT, "family \"%.40s\" is not a kernel family "
                       "(vector, tiled, flash, mma)", family);
    else {
        /* mma: the 16-bit verdict; when that is yes, f32's is decided too
         * and why names a failure of it */
        *usable = f != ATTN_FAMILY_MMA || attn_mma_usable(ctx, ATTN_F16);
        const int f32 = f != ATTN_FAMILY_MMA || !*usable || attn_mma_usable(ctx, ATTN_F32);
        if (why && why_size)
            snprintf(why, why_size, "%s", !*usable ? attn_mma_why(ctx, ATTN_F16)
                                          : f32    ? ""
                                                   : attn_mma_why(ctx, ATTN_F32));
    }
    attn_call_end(ctx);
    return st;
}
