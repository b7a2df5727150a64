/* kv_layout.c -- a cache's shape from its attn_kv_cache_desc: the checks of
 * every field, the page geometry (decode.h's struct attn_kv_cache) and the
 * bytes of each buffer. One computation for attn_kv_cache_create_desc and
 * attn_kv_cache_bytes, so the size an engine plans with is the size it
 * gets. */
#include "attention/decode.h"
#include "core/errors.h"

#include <limits.h>
#include <stdio.h>

#define INVALID(ctx, ...) ATTN_FAIL((ctx), ATTN_ERROR_INVALID_ARGUMENT, __VA_ARGS__)

/* bytes = a * b * c * d * e, or 0 with an error when it overflows */
static attn_status mul_bytes(attn_context *ctx, const size_t f[5], size_t *out, const char *what)
{
    size_t n = 1;
    for (int i = 0; i < 5; i++)
        ATTN_CHECK(ctx, __builtin_mul_overflow(n, f[i], &n), ATTN_ERROR_INVALID_ARGUMENT,
                   "%s overflows", what);
    *out = n;
    return ATTN_SUCCESS;
}

attn_status attn_kv_layout_of(attn_context *ctx, const attn_kv_cache_desc *d, const char *f,
                              attn_kv_layout *l)
{
    ATTN_CHECK(ctx, !d, ATTN_ERROR_INVALID_ARGUMENT, "desc is NULL");
    if (d->batch <= 0) return INVALID(ctx, "%sbatch = %d must be positive", f, d->batch);
    if (d->kv_heads <= 0)
        return INVALID(ctx, "%skv_heads = %d must be positive", f, d->kv_heads);
    if (d->head_dim <= 0 || d->head_dim > 256)
        return INVALID(ctx, "%shead_dim = %d is outside 1..256", f, d->head_dim);
    if (d->capacity <= 0 || d->capacity > (1 << 30))
        return INVALID(ctx, "%scapacity = %d is outside 1..2^30", f, d->capacity);
    if ((unsigned)d->dtype > ATTN_BF16)
        return INVALID(ctx, "%sdtype = %d is not an attn_dtype", f, (int)d->dtype);
    if ((unsigned)d->storage > ATTN_KV_INT8)
        return INVALID(ctx, "%sstorage = %d is not an attn_kv_storage", f, (int)d->storage);
    const int bs = d->block_size;
    if (bs != 0 && (bs < ATTN_KV_MIN_BLOCK || bs > ATTN_KV_MAX_BLOCK || (bs & (bs - 1))))
        return INVALID(ctx, "%sblock_size = %d is neither 0 (contiguous) nor a power of two "
                       "from %d to %d", f, bs, ATTN_KV_MIN_BLOCK, ATTN_KV_MAX_BLOCK);
    if (d->num_blocks < 0 || (bs == 0 && d->num_blocks != 0))
        return INVALID(ctx, "%snum_blocks = %d must be %s", f, d->num_blocks,
                       bs ? "0 (enough for every sequence) or positive"
                          : "0 for a contiguous cache (desc->block_size 0)");

    attn_kv_layout o = {.dim_pad = attn_kv_dim_pad(d->head_dim)};
    if (bs == 0) {
        int rows = (d->capacity + ATTN_KV_ROW_ALIGN - 1) / ATTN_KV_ROW_ALIGN * ATTN_KV_ROW_ALIGN;
        /* Keep the heads' stride off large powers of two: the work-items
         * stream different heads at once, and 8 MiB-aligned streams (kv
         * 16384) ran 3-6% slower than with one spare block per head,
         * measured on PoCL. */
        if (rows % (8 * ATTN_KV_ROW_ALIGN) == 0) rows += ATTN_KV_ROW_ALIGN;
        o.rows = o.page_rows = rows;
        o.num_pages = d->batch;
        o.max_pages = 1;
    } else {
        o.page_rows = bs;
        o.max_pages = (d->capacity + bs - 1) / bs;
        /* the kernels index the table [batch][max_pages] with an int */
        long long all = (long long)d->batch * o.max_pages;
        if (all > (1 << 30))
            return INVALID(ctx, "%sbatch * ceil(capacity / block_size) = %lld block-table "
                           "entries is over 2^30: fewer sequences, a smaller capacity or larger "
                           "blocks", f, all);
        o.num_pages = d->num_blocks ? d->num_blocks : (int)all;
        /* the kernels index a head's rows (every page's) with an int
         * (cl/kv_cache_rows.cl's head_rows): refused here, not at decode */
        const long long head_rows = (long long)o.num_pages * bs;
        if (head_rows > INT_MAX)
            return INVALID(ctx, "%snum_blocks = %d%s: %d blocks of %d tokens are %lld rows per "
                           "KV head, over the kernels' %d: fewer or smaller blocks", f,
                           d->num_blocks, d->num_blocks ? "" : " (batch * ceil(capacity / "
                           "block_size))", o.num_pages, bs, head_rows, INT_MAX);
    }
    o.elem = d->storage == ATTN_KV_INT8 ? 1 : attn_dtype_size(d->dtype);
    const size_t kv[5] = {o.elem, (size_t)o.num_pages, (size_t)d->kv_heads,
                          (size_t)o.page_rows, (size_t)o.dim_pad};
    char what[200];
    snprintf(what, sizeof what, "%skv_heads = %d with %s = %d: the cache's K (%d %s x kv_heads x "
             "%d rows x %d elements)", f, d->kv_heads, bs ? "num_blocks" : "capacity",
             bs ? o.num_pages : d->capacity, o.num_pages, bs ? "blocks" : "sequences",
             o.page_rows, o.dim_pad);
    attn_status st = mul_bytes(ctx, kv, &o.kv_bytes, what);
    if (st != ATTN_SUCCESS) return st;
    if (d->storage == ATTN_KV_INT8) {
        const size_t sc[5] = {sizeof(float), (size_t)o.num_pages, (size_t)d->kv_heads,
                              (size_t)o.page_rows, 1};
        if ((st = mul_bytes(ctx, sc, &o.scale_bytes, "the cache's scales")) != ATTN_SUCCESS)
            return st;
    }
    const size_t tb[5] = {sizeof(int), (size_t)d->batch, (size_t)o.max_pages, 1, 1};
    if ((st = mul_bytes(ctx, tb, &o.table_bytes, "the block table")) != ATTN_SUCCESS) return st;
    size_t total = o.table_bytes;
    const size_t parts[] = {o.kv_bytes, o.kv_bytes, o.scale_bytes, o.scale_bytes};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        ATTN_CHECK(ctx, __builtin_add_overflow(total, parts[i], &total),
                   ATTN_ERROR_INVALID_ARGUMENT, "the cache's size overflows");
    o.total_bytes = total;
    *l = o;
    return ATTN_SUCCESS;
}

attn_status attn_kv_cache_bytes(const attn_kv_cache_desc *desc, size_t *bytes)
{
    attn_thread_call_begin(__func__);
    if (!bytes) return attn_fail_null(__func__, "bytes");
    *bytes = 0;
    attn_kv_layout l;
    attn_status st = attn_kv_layout_of(NULL, desc, "desc->", &l);
    if (st == ATTN_SUCCESS) *bytes = l.total_bytes;
    return st;
}
