/* kv_kernel_args.c -- what every kernel reading a KV cache is given: the
 * program options that describe the cache (cl/kv_cache_rows.cl) and the
 * values of its KV_CACHE_PARAMS, for the decode kernels (decode.c) and the
 * vector family's packing of a cache for long query blocks (forward.c). */
#include "attention/decode.h"
#include "core/errors.h"

#include <stdio.h>
#include <string.h>

void attn_kv_cache_options(const attn_kv_cache *c, char *buf, size_t n)
{
    const size_t used = strlen(buf);
    if (used >= n) return;
    char page[32] = "";
    if (c->paged) snprintf(page, sizeof page, " -DPAGE_ROWS=%d", c->page_rows);
    snprintf(buf + used, n - used, " -DDIM_PAD=%d%s%s", c->dim_pad,
             c->storage == ATTN_KV_INT8 ? " -DKV_INT8" : "", page);
}

attn_status attn_kv_kernel_args_of(attn_kv_cache *c, cl_mem unused, attn_kv_kernel_args *a)
{
    /* head_rows fits an int: kv_layout.c refuses a cache where it would not */
    attn_status st = attn_kv_pool_table(c, &a->pages);
    if (st != ATTN_SUCCESS) return st;
    a->k = c->k;
    a->v = c->v;
    a->kscale = c->k_scale ? c->k_scale : unused;
    a->vscale = c->v_scale ? c->v_scale : unused;
    a->head_rows = (cl_int)attn_kv_head_stride(c);
    a->max_pages = c->max_pages;
    return ATTN_SUCCESS;
}
