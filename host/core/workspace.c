/* workspace.c -- the device memory a context holds between calls (scratch
 * buffers grown on demand and kept for reuse): how much, and giving it back. */
#include "core/context.h"
#include "core/errors.h"
#include "attention/mask_cache.h"

/* Every scratch buffer of the context; a new one belongs in this list. */
static int scratch_list(attn_context *ctx, attn_scratch **list, int max)
{
    int n = 0;
    list[n++] = &ctx->kt;
    list[n++] = &ctx->vp;
    list[n++] = &ctx->mask_tiles;
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
        attn_scratch *list[16];
        int n = scratch_list(ctx, list, 16);
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
    attn_scratch *list[16];
    int n = scratch_list(ctx, list, 16);
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
