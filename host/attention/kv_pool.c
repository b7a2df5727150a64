/* kv_pool.c -- a paged cache's pages: the block table of each sequence, a
 * reference count per page (forks share pages; 0 is free), where a new
 * page comes from (a sequence's pages kept in order where they can be),
 * copy on write of a shared partly filled page, and the device copy of the
 * table the kernels read. The host table is the truth; the device copy is
 * re-made from it (a new buffer, so kernels already enqueued keep the table
 * they were given). */
#define _POSIX_C_SOURCE 200809L
#include "attention/decode.h"
#include "core/errors.h"
#include "core/launch.h"

#include <stdlib.h>
#include <string.h>

attn_status attn_kv_pool_create(attn_kv_cache *c)
{
    attn_context *ctx = c->ctx;
    const size_t entries = (size_t)c->batch * (size_t)c->max_pages;
    if (!c->paged) { /* one page per sequence: page b, made once */
        int *t = malloc(sizeof *t * (size_t)c->batch);
        if (!t) return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
        for (int b = 0; b < c->batch; b++) t[b] = b;
        cl_int err;
        c->table_mem = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                      sizeof *t * (size_t)c->batch, t, &err);
        free(t);
        return err == CL_SUCCESS ? ATTN_SUCCESS
                                 : attn_fail_cl(ctx, err, "clCreateBuffer (KV cache table)");
    }
    const size_t table_bytes = sizeof *c->table * entries;
    ATTN_CHECK(ctx, table_bytes > ctx->max_alloc, ATTN_ERROR_OUT_OF_MEMORY,
               "the cache's block table (batch x ceil(capacity / block_size) = %zu entries) "
               "needs %zu bytes; the device allows %llu per buffer", entries, table_bytes,
               (unsigned long long)ctx->max_alloc);
    c->table = calloc(entries, sizeof *c->table);
    c->refs = calloc((size_t)c->num_pages, sizeof *c->refs);
    c->grow_cow = malloc(sizeof *c->grow_cow * 2 * (size_t)c->batch);
    if (!c->table || !c->refs || !c->grow_cow)
        return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory for the block "
                         "table of %zu entries and %d blocks", entries, c->num_pages);
    for (int b = 0; b < c->batch; b++) c->grow_cow[2 * b] = -1;
    c->free_pages = c->num_pages;
    c->table_dirty = 1;
    /* its device copy made now: a device that cannot hold it fails the
     * creation, not every append after it */
    cl_mem made;
    return attn_kv_pool_table(c, &made);
}

void attn_kv_pool_free(attn_kv_cache *c)
{
    if (c->table_mem) clReleaseMemObject(c->table_mem);
    free(c->table);
    free(c->refs);
    free(c->grow_cow);
}

int attn_kv_pool_pages_of(const attn_kv_cache *c, int b)
{
    return (c->len[b] + c->page_rows - 1) / c->page_rows;
}

static int *entry(attn_kv_cache *c, int b, int i) { return &c->table[(size_t)b * c->max_pages + i]; }

/* A free page for a sequence whose pages so far end with page `after`
 * (-1: it has none): after + 1 when free, so that a sequence's pages run
 * in order and decode streams them like a contiguous cache; otherwise the
 * middle of the largest run of free pages (its start when the run begins
 * the pool), leaving room on both sides for the sequences already growing.
 * Sequences growing together from one pool otherwise interleave their
 * pages, and paged decode with blocks of 16 took 1.6x contiguous's time on
 * PoCL against 0.92x for pages in order. */
static int take_page(attn_kv_cache *c, int after)
{
    int p = after + 1;
    if (after < 0 || p >= c->num_pages || c->refs[p] != 0) {
        int best = 0, best_len = 0;
        for (int i = 0; i < c->num_pages;) {
            if (c->refs[i]) {
                i++;
                continue;
            }
            int j = i;
            while (j < c->num_pages && c->refs[j] == 0) j++;
            if (j - i > best_len) best = i, best_len = j - i;
            i = j;
        }
        p = best == 0 ? 0 : best + best_len / 2;
    }
    c->refs[p] = 1;
    c->free_pages--;
    return p;
}

static void drop_page(attn_kv_cache *c, int p)
{
    if (--c->refs[p] == 0) c->free_pages++;
}

/* Table entries from..to-1 of sequence b go back (to the pool unless
 * shared). */
static void release_pages(attn_kv_cache *c, int b, int from, int to)
{
    for (int i = from; i < to; i++) {
        drop_page(c, *entry(c, b, i));
        *entry(c, b, i) = 0;
        c->table_dirty = 1;
    }
}

/* Undoes the new pages of a grow by `add` tokens before the length moved. */
static void release_new(attn_kv_cache *c, int b, int add)
{
    if (add > 0)
        release_pages(c, b, attn_kv_pool_pages_of(c, b),
                      (c->len[b] + add + c->page_rows - 1) / c->page_rows);
}

/* Pages sequence b needs for n more tokens; *cow: its last page is shared
 * and partly filled, so the append's first rows would write into a page
 * another sequence reads. `released` of that page's references are
 * already planned to go (siblings' copies earlier in the same append). */
static int pages_needed(const attn_kv_cache *c, int b, int n, int released, int *cow)
{
    const int have = attn_kv_pool_pages_of(c, b);
    const int len = c->len[b], need = (len + n + c->page_rows - 1) / c->page_rows;
    *cow = n > 0 && len % c->page_rows != 0 &&
           c->refs[c->table[(size_t)b * c->max_pages + have - 1]] - released > 1;
    return need - have + *cow;
}

/* Sequence b's last page, or -1 when it has none. */
static int last_page(const attn_kv_cache *c, int b)
{
    const int have = attn_kv_pool_pages_of(c, b);
    return have ? c->table[(size_t)b * c->max_pages + have - 1] : -1;
}

/* Enqueues the copy of page `from` into page `to` in buf (row_bytes per
 * cache row): each head's rows of the page are a run of their own
 * (decode.h's layout), one copy each. */
static attn_status copy_page(attn_kv_cache *c, cl_mem buf, size_t row_bytes, int from, int to)
{
    const size_t run = row_bytes * (size_t)c->page_rows, page = row_bytes * attn_kv_page_stride(c);
    const size_t head = row_bytes * attn_kv_head_stride(c);
    cl_int err = CL_SUCCESS;
    for (int hk = 0; hk < c->kv_heads && err == CL_SUCCESS; hk++)
        err = clEnqueueCopyBuffer(c->ctx->queue, buf, buf, page * (size_t)from + head * hk,
                                  page * (size_t)to + head * hk, run, 0, NULL, NULL);
    return err == CL_SUCCESS ? ATTN_SUCCESS
                             : attn_fail_cl(c->ctx, err, "clEnqueueCopyBuffer (copy on write)");
}

attn_status attn_kv_copy_buffers(attn_kv_cache *c, attn_kv_copy_fn copy, int from, int to)
{
    const size_t row = (size_t)c->dim_pad * (c->storage == ATTN_KV_INT8
                                                 ? 1 : attn_dtype_size(c->dtype));
    attn_status st;
    if ((st = attn_queue_order(c->ctx)) != ATTN_SUCCESS ||
        (st = copy(c, c->k, row, from, to)) != ATTN_SUCCESS ||
        (st = copy(c, c->v, row, from, to)) != ATTN_SUCCESS)
        return st;
    if (c->k_scale && ((st = copy(c, c->k_scale, sizeof(float), from, to)) != ATTN_SUCCESS ||
                       (st = copy(c, c->v_scale, sizeof(float), from, to)) != ATTN_SUCCESS))
        return st;
    return attn_queue_order(c->ctx);
}

attn_status attn_kv_pool_grow(attn_kv_cache *c, const int *counts, int n)
{
    if (!c->paged) return ATTN_SUCCESS;
    attn_context *ctx = c->ctx;
    /* every sequence first: all or nothing. cow_pages[2b]: the shared page
     * sequence b will copy (-1: none), [2b + 1] the copy */
    int *cow_pages = c->grow_cow;
    int want = 0;
    for (int b = 0; b < c->batch; b++) {
        const int add = counts ? counts[b] : n, last = last_page(c, b);
        int cow, released = 0;
        for (int i = 0; i < b && last >= 0; i++) released += cow_pages[2 * i] == last;
        const int need = pages_needed(c, b, add, released, &cow);
        cow_pages[2 * b] = cow ? last : -1;
        if (need > c->free_pages - want) {
            for (int i = 0; i < c->batch; i++) cow_pages[2 * i] = -1; /* nothing to undo */
            return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY,
                             "sequence %d: appending %d token%s to its %d needs %d more block%s "
                             "of %d tokens%s, but the pool has %d free of %d (after the "
                             "sequences before it); nothing was appended", b, add,
                             add == 1 ? "" : "s", c->len[b], need, need == 1 ? "" : "s",
                             c->page_rows, cow ? " (one to copy its shared last block)" : "",
                             c->free_pages - want, c->num_pages);
        }
        want += need;
    }
    /* then the host table (refs now drop as planned: pages_needed agrees) */
    for (int b = 0; b < c->batch; b++) {
        const int add = counts ? counts[b] : n, have = attn_kv_pool_pages_of(c, b);
        int cow;
        const int extra = add > 0 ? pages_needed(c, b, add, 0, &cow) : (cow = 0);
        if (cow) {
            const int shared = *entry(c, b, have - 1);
            const int own = take_page(c, have > 1 ? *entry(c, b, have - 2) : -1);
            cow_pages[2 * b + 1] = own;
            drop_page(c, shared); /* still held by another sequence */
            *entry(c, b, have - 1) = own;
        }
        for (int i = 0; i < extra - cow; i++)
            *entry(c, b, have + i) = take_page(c, have + i > 0 ? *entry(c, b, have + i - 1) : -1);
        if (extra) c->table_dirty = 1;
    }
    attn_status st = ATTN_SUCCESS;
    for (int b = 0; b < c->batch && st == ATTN_SUCCESS; b++)
        if (cow_pages[2 * b] >= 0)
            st = attn_kv_copy_buffers(c, copy_page, cow_pages[2 * b], cow_pages[2 * b + 1]);
    if (st != ATTN_SUCCESS) attn_kv_pool_ungrow(c, counts, n); /* the lengths never moved */
    return st;
}

void attn_kv_pool_shrink(attn_kv_cache *c, int b, int length)
{
    if (c->paged)
        release_pages(c, b, (length + c->page_rows - 1) / c->page_rows,
                      attn_kv_pool_pages_of(c, b));
}

void attn_kv_pool_ungrow(attn_kv_cache *c, const int *counts, int n)
{
    if (!c->paged) return;
    for (int b = 0; b < c->batch; b++) {
        release_new(c, b, counts ? counts[b] : n);
        int *cow = &c->grow_cow[2 * b];
        if (cow[0] < 0) continue;
        int *e = entry(c, b, attn_kv_pool_pages_of(c, b) - 1);
        c->refs[cow[0]]++;
        drop_page(c, *e);
        *e = cow[0];
        cow[0] = -1; /* undone once */
        c->table_dirty = 1;
    }
}

void attn_kv_pool_share(attn_kv_cache *c, int src, int dst)
{
    if (!c->paged) return;
    const int n = attn_kv_pool_pages_of(c, src);
    for (int i = 0; i < n; i++) {
        const int p = *entry(c, src, i);
        c->refs[p]++;
        *entry(c, dst, i) = p;
    }
    c->table_dirty = 1;
}

attn_status attn_kv_pool_table(attn_kv_cache *c, cl_mem *table)
{
    if (c->paged && c->table_dirty) {
        cl_int err;
        cl_mem m = clCreateBuffer(c->ctx->cl_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                  sizeof *c->table * (size_t)c->batch * (size_t)c->max_pages,
                                  c->table, &err);
        if (err != CL_SUCCESS) return attn_fail_cl(c->ctx, err, "clCreateBuffer (block table)");
        /* kernels enqueued with the old one keep it alive */
        if (c->table_mem) clReleaseMemObject(c->table_mem);
        c->table_mem = m;
        c->table_dirty = 0;
    }
    *table = c->table_mem;
    return ATTN_SUCCESS;
}
