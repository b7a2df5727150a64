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
/* Rows per head: the capacity rounded up to the largest BLOCK_KEYS (128),
 * so a kernel's last key block never reads past the buffer (plus one block
 * when that would make the head stride a multiple of 1024 rows). */
#define ATTN_KV_ROW_ALIGN 128

/* Where a token's K/V row lives: the cache's K (and V) is an array of
 * pages [page][kv_heads][page_rows][dim_pad], and token j of sequence b,
 * head hk, is row j % page_rows of page table[b * max_pages + j /
 * page_rows]. Paged, page_rows is the desc's block_size and pages come from
 * the pool (kv_pool.c). Contiguous is the same formula with one page per
 * sequence: page b, page_rows = rows, max_pages 1 (the plain layout
 * [batch][kv_heads][rows][dim_pad], which decode reads directly, never
 * re-packed per step, and attn_forward can take).
 * Quantized (ATTN_KV_INT8), K and V hold int8 and k_scale / v_scale one
 * float per row, [page][kv_heads][page_rows]. */
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
     * (entries past a sequence's pages are 0), each page's reference
     * count (0 = free), and the device copy of the table, re-made from the
     * host table when table_dirty (kv_pool.c: attn_kv_pool_table) */
    int *table, *refs;
    int free_pages;
    cl_mem table_mem;
    int table_dirty;
    /* The message of the last append (attn_kv_cache_append or
     * attn_kv_cache_append_rows) when it failed, "" after one that
     * succeeded. A decode after a failed append would attend for the
     * previous step's token, so attn_decode refuses while it is set. */
    char append_failure[ATTN_ERROR_MAX];
    /* split-KV partial results, grown on demand: O [row][split][dim_pad]
     * normalised, and log2-domain LSE [row][split] */
    attn_scratch part_o, part_lse;
};

/* Built-in decode parameters for this device and problem (q_len, heads):
 * the family by device type; rows = the KV group's query heads x new
 * queries, rounded up to a power of two and capped; splits 0 (automatic). */
attn_params attn_decode_params_heuristic(const attn_device_limits *dev, const attn_problem *p);

/* The number of KV splits when the parameters leave it automatic: enough
 * work-groups to fill the device's compute units, each split long enough
 * to pay for the combine. items = work-groups without splitting; key_bytes
 * = bytes of K and V per key. */
#define ATTN_DECODE_MIN_CHUNK 512                     /* keys, GPU */
#define ATTN_DECODE_MIN_CHUNK_BYTES (2.0 * (1 << 20)) /* bytes of K and V, CPU */
int attn_decode_auto_splits(const attn_device_limits *dev, int items, int max_len,
                            size_t key_bytes);

#endif /* ATTN_DECODE_H */
