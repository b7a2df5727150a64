/* decode.h -- what the KV cache and decode files of host/ share: the
 * cache's layout in device memory, and the decode tunables (the heuristic
 * and the number of KV splits). Internal, like internal.h. */
#ifndef ATTN_DECODE_H
#define ATTN_DECODE_H

#include "core/context.h"

/* Row stride of the cache: head_dim rounded up to 16 elements, the padding
 * zero, so that decode kernels load whole float vectors (4, 8 or 16 wide)
 * with no tail. */
#define ATTN_KV_DIM_ALIGN 16
/* The cache's row stride (DIM_PAD of the decode kernels) for head_dim. */
static inline int attn_kv_dim_pad(int head_dim)
{
    return (head_dim + ATTN_KV_DIM_ALIGN - 1) / ATTN_KV_DIM_ALIGN * ATTN_KV_DIM_ALIGN;
}
/* Contiguous: rows per head are the capacity rounded up to the largest
 * BLOCK_KEYS (128), so a kernel's last key block never reads past the
 * buffer (plus one block when that would make the head stride a multiple
 * of 1024 rows; kv_layout.c). */
#define ATTN_KV_ROW_ALIGN 128

/* A paged cache's block sizes (tokens per page), powers of two. */
#define ATTN_KV_MIN_BLOCK 16
#define ATTN_KV_MAX_BLOCK 256

/* A cache's geometry and bytes from its desc (kv_layout.c). */
typedef struct attn_kv_layout {
    int dim_pad, rows; /* rows: contiguous only (0 paged) */
    int page_rows, num_pages, max_pages;
    size_t elem;        /* bytes per K/V element: 1 for int8 */
    size_t kv_bytes;    /* of K (and of V) */
    size_t scale_bytes; /* of k_scale (and v_scale); 0 unless int8 */
    size_t table_bytes, total_bytes;
} attn_kv_layout;
/* Checks every field of d (messages name it as f, then the field: "desc->"
 * or "") and computes its layout. */
attn_status attn_kv_layout_of(attn_context *ctx, const attn_kv_cache_desc *d, const char *f,
                              attn_kv_layout *l);

/* Where a token's K/V row lives: token j of sequence b, head hk, is row j %
 * page_rows of page table[b * max_pages + j / page_rows], and row r of
 * page p, head hk, is cache row p * attn_kv_page_stride + hk *
 * attn_kv_head_stride + r (dim_pad elements each). Paged, page_rows is the
 * desc's block_size, pages come from the pool (kv_pool.c), and K (and V) is
 * [kv_heads][num_pages][page_rows][dim_pad]: a head's rows of every page
 * form one run, so a sequence whose pages are in order streams like a
 * contiguous one. (Pages of all heads, [page][kv_heads][page_rows], put
 * the other heads' rows between a head's pages: paged decode ran 1.4x
 * (blocks of 64) to 1.9x (16) slower than contiguous on PoCL, against
 * 0.9-1.0x head-major.) Contiguous is one page per sequence: page b,
 * page_rows = rows, max_pages 1, pages of all heads (the plain layout
 * [batch][kv_heads][rows][dim_pad], which decode reads directly, never
 * re-packed per step, and attn_forward can take).
 * Quantized (ATTN_KV_INT8), K and V hold int8 and k_scale / v_scale one
 * float per cache row, in the same layout. */
struct attn_kv_cache {
    attn_context *ctx;
    int batch, kv_heads, head_dim, capacity;
    attn_dtype dtype;         /* of appended K/V, decode's q and out */
    attn_kv_storage storage;
    int dim_pad;   /* elements per row */
    int rows;      /* contiguous: rows per head (>= capacity) */
    int paged;     /* 0: contiguous */
    int page_rows; /* rows per page: block_size paged, rows contiguous */
    int num_pages; /* pages in K (and V) */
    int max_pages; /* table entries per sequence: ceil(capacity / page_rows) */
    cl_mem k, v;
    cl_mem k_scale, v_scale; /* ATTN_KV_INT8 only, else NULL */
    int *len;      /* host copy of each sequence's length: the one truth */
    unsigned char *taken; /* per slot: taken by seq_add or seq_fork */
    /* paged only (NULL contiguous): the host table [batch][max_pages]
     * (entries past a sequence's pages are 0) and each page's reference
     * count (0 = free). table_mem: the device table, re-made from the host
     * table when table_dirty (kv_pool.c: attn_kv_pool_table); contiguous,
     * the table {0, 1, .., batch-1} made at creation */
    int *table, *refs;
    /* the last attn_kv_pool_grow's copies on write, for attn_kv_pool_ungrow:
     * [2b] the shared page sequence b left (-1: none), [2b + 1] its copy */
    int *grow_cow;
    int free_pages;
    cl_mem table_mem;
    int table_dirty;
    /* The message of the last append (attn_kv_cache_append or
     * attn_kv_cache_append_rows) when it failed, "" after one that
     * succeeded. A decode after a failed append would attend for the
     * previous step's token, so attn_decode refuses while it is set. */
    char append_failure[ATTN_ERROR_MAX];
};

/* Cache rows from one page to the next, and from one head to the next
 * (decode.h's layout above; cl/kv_cache_rows.cl's cache_row). */
static inline size_t attn_kv_page_stride(const attn_kv_cache *c)
{
    return (size_t)c->page_rows * (c->paged ? 1 : (size_t)c->kv_heads);
}
static inline size_t attn_kv_head_stride(const attn_kv_cache *c)
{
    return (size_t)c->page_rows * (c->paged ? (size_t)c->num_pages : 1);
}

/* ---- the pages (kv_pool.c) ----
 * Paged caches only, unless said. Host bookkeeping; device copies (copy on
 * write) are enqueued on the context's queue, in order with appends and
 * decodes. */
attn_status attn_kv_pool_create(attn_kv_cache *c); /* table and refs; all pages free */
void attn_kv_pool_free(attn_kv_cache *c);
/* Pages of sequence b holding its len[b] tokens. */
int attn_kv_pool_pages_of(const attn_kv_cache *c, int b);
/* Gives every sequence b with counts[b] > 0 the pages for counts[b] more
 * tokens (counts NULL: n each), copying a shared, partly filled last page
 * first (copy on write). All or nothing: ATTN_ERROR_OUT_OF_MEMORY naming
 * the first sequence the pool cannot serve, and nothing changes. */
attn_status attn_kv_pool_grow(attn_kv_cache *c, const int *counts, int n);
/* Undoes the attn_kv_pool_grow just made (same counts, n) when the append
 * fails after it, before the lengths move: its new pages go back, and a
 * sequence that copied a shared page on write shares it again (the copy,
 * already enqueued, lands in a free page), so the table, the reference
 * counts and the free pages are as before the append. */
void attn_kv_pool_ungrow(attn_kv_cache *c, const int *counts, int n);
/* copy(c, buf, unit, from, to): enqueues a copy inside buf, unit bytes per
 * cache row (a page's rows, or a contiguous sequence's). */
typedef attn_status (*attn_kv_copy_fn)(attn_kv_cache *c, cl_mem buf, size_t unit, int from,
                                       int to);
/* copy over K and V (unit: a row's bytes) and, int8, both scale buffers
 * (unit: a float), ordered after what is enqueued and before what follows
 * (copy on write, a contiguous fork). Any cache. */
attn_status attn_kv_copy_buffers(attn_kv_cache *c, attn_kv_copy_fn copy, int from, int to);
/* Sequence b keeps the pages for `length` tokens; the rest are released. */
void attn_kv_pool_shrink(attn_kv_cache *c, int b, int length);
/* dst (no pages) shares src's pages. */
void attn_kv_pool_share(attn_kv_cache *c, int src, int dst);
/* The device table for kernels, [batch][max_pages] ints: re-made from the
 * host table when it changed. Contiguous: the table of one page per
 * sequence made at creation. */
attn_status attn_kv_pool_table(attn_kv_cache *c, cl_mem *table);

/* ---- what kernels reading a cache are given (kv_kernel_args.c) ---- */

/* Appends to buf (n bytes in all) the -D options of the cache's kind
 * (cl/kv_cache_rows.cl): -DDIM_PAD, and -DKV_INT8, -DPAGE_ROWS as it is. */
void attn_kv_cache_options(const attn_kv_cache *c, char *buf, size_t n);
/* The values of cl/kv_cache_rows.cl's KV_CACHE_PARAMS. */
typedef struct attn_kv_kernel_args {
    cl_mem k, v;
    cl_int head_rows;
    cl_mem pages; /* the device block table (attn_kv_pool_table) */
    cl_int max_pages;
    cl_mem kscale, vscale; /* int8's scales, else any buffer (unread) */
} attn_kv_kernel_args;
/* Fills a for c (the device table re-made if it changed; `unused` for the
 * scales of a cache without them). */
attn_status attn_kv_kernel_args_of(attn_kv_cache *c, cl_mem unused, attn_kv_kernel_args *a);
/* a's attn_karg entries, in KV_CACHE_PARAMS's order (core/launch.h) */
#define ATTN_KV_KARGS(a)                                                                        \
    ATTN_KARG((a).k), ATTN_KARG((a).v), ATTN_KARG((a).head_rows), ATTN_KARG((a).pages),          \
        ATTN_KARG((a).max_pages), ATTN_KARG((a).kscale), ATTN_KARG((a).vscale)

/* Bytes of one token's K (or V) row as a decode reads it: head_dim
 * elements of the dtype, or int8 bytes and the row's fp32 scale. */
static inline size_t attn_kv_row_bytes(const struct attn_kv_cache *c)
{
    return c->storage == ATTN_KV_INT8 ? (size_t)c->head_dim + sizeof(float)
                                      : (size_t)c->head_dim * attn_dtype_size(c->dtype);
}
/* attn_kv_cache_tensors of a contiguous cache stored as its dtype, without
 * taking ctx's lock (kv_cache.c): for attn_decode, which holds it. */
void attn_kv_plain_tensors(const struct attn_kv_cache *c, attn_tensor *k, attn_tensor *v);
/* attn_kv_cache_read with ctx's lock already held (kv_sequences.c): check
 * mode's read of a cache without plain tensors inside attn_decode.
 * int8_as_f32: an int8 cache's K and V as floats, not rounded to its dtype
 * (what the kernels compute with); no effect on other storage. */
attn_status attn_kv_read_locked(attn_kv_cache *c, int seq, int first, int count, void *k,
                                void *v, int int8_as_f32);

/* attn_kv_cache_create_desc and attn_kv_cache_append with ctx's lock held
 * (mma_gate.c's verification decode). */
attn_status attn_kv_cache_create_locked(attn_context *ctx, const attn_kv_cache_desc *desc,
                                        attn_kv_cache **out);
attn_status attn_kv_cache_append_locked(attn_kv_cache *c, const attn_tensor *k,
                                        const attn_tensor *v, int block_len, cl_event *done);
/* attn_decode of p (q_len at most ATTN_DECODE_MAX_Q_LEN, every sequence's
 * queries its last q_len tokens, no LSE) on the parameters pr, not the
 * planner's, with ctx's lock held, in check mode when ctx->check is set:
 * mma_gate.c's verification of the mma decode. */
attn_status attn_decode_params(attn_context *ctx, attn_kv_cache *cache, const attn_params *pr,
                               const attn_problem *p, const attn_tensor *q,
                               const attn_tensor *out, cl_event *done);

/* attn_decode_prepare that also gives the number of KV splits the plan
 * launches (the tuner verifies a candidate as it is timed). */
attn_status attn_decode_prepare_splits(attn_context *ctx, attn_kv_cache *cache,
                                       const attn_problem *p, attn_plan_info *info, int *splits);

/* Built-in decode parameters for this device and problem (q_len, heads):
 * the family by device type (mma where dev->mma and a KV head has
 * ATTN_MMA_DECODE_ROWS query rows or more); rows = the KV group's query
 * heads x new queries, rounded up to a power of two and capped (mma: warps
 * of 16 rows enough for them, up to its default); splits 0 (automatic). */
attn_params attn_decode_params_heuristic(const attn_device_limits *dev, const attn_problem *p);
/* Query rows per KV head (GQA group x new queries) from which the decode
 * heuristic takes the mma family where it is verified: one m-tile. Fewer
 * leave most of a tensor-core tile's rows padding, and the tiled decode's
 * scalar dot products then cost it nothing (decode is bound by reading
 * K/V); unmeasured on a GPU. */
#define ATTN_MMA_DECODE_ROWS 16

/* The number of KV splits when the parameters leave it automatic: enough
 * work-groups to fill the device's compute units, each split long enough
 * to pay for the combine. items = work-groups without splitting; key_bytes
 * = bytes of K and V per key. */
#define ATTN_DECODE_MIN_CHUNK 512                     /* keys, GPU */
#define ATTN_DECODE_MIN_CHUNK_BYTES (2.0 * (1 << 20)) /* bytes of K and V, CPU */
int attn_decode_auto_splits(const attn_device_limits *dev, int items, int max_len,
                            size_t key_bytes);

#endif /* ATTN_DECODE_H */
