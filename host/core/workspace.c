/* workspace.c -- the device memory a context holds between calls (scratch
 * buffers grown on demand and kept for reuse): how much, and giving it back. */
#include "core/context.h"
#include "core/errors.h"
#include "attention/mask_cache.h"

/* A new scratch buffer of the context belongs in this list. */
int attn_scratch_all(attn_context *ctx, attn_scratch **list, int max)
{
    attn_scratch *named[] = {&ctx->kt, &ctx->vp, &ctx->mask_tiles, &ctx->part_o, &ctx->part_lse};
    int n = 0;
    for (size_t i = 0; i < sizeof named / sizeof named[0] && n < max; i++) list[n++] = named[i];
    for (int i = 0; i < ATTN_MAT_BUFFERS && n < max; i++) list[n++] = &ctx->mat[i];
    return n;
}

attn_status attn_context_workspace_bytes(attn_context *ctx, size_t *bytes)
{
    if (!ctx) return attn_fail_null(__func__, "ctx");
    attn_call_begin(ctx, __func__);
    attn_status st = ATTN_SUCCESS;
    if (!bytes) {
        st = ATTN_FAIL(ctx, ATTN_ERROR_INVALID_ARGUMENT, "bytes is NULL");
    } else {
        attn_scratch *list[ATTN_SCRATCH_MAX];
        int n = attn_scratch_all(ctx, list, ATTN_SCRATCH_MAX);
        *bytes = 0;
        for (int i = 0; i < n; i++) *bytes += list[i]->mem ? list[i]->bytes : 0;
        *bytes += attn_mask_cache_bytes(ctx);
    }
    attn_call_end(ctx);
    return st;
}

attn_status attn_context_release_workspace(attn_context *ctx)
{
    if (!ctx) return attn_fail_null(__func__, "ctx");
    attn_call_begin(ctx, __func__);
    attn_scratch *list[ATTN_SCRATCH_MAX];
    int n = attn_scratch_all(ctx, list, ATTN_SCRATCH_MAX);
    for (int i = 0; i < n; i++) {
        /* OpenCL keeps a buffer alive until the commands using it finish */
        if (list[i]->mem) clReleaseMemObject(list[i]->mem);
        list[i]->mem = NULL;
        list[i]->bytes = 0;
    }
    attn_mask_cache_release(ctx);
    attn_call_end(ctx);
    return ATTN_SUCCESS;
}
