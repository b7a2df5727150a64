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

/* The plain layout [batch][kv_heads][rows][dim_pad]: what decode reads
 * directly (never re-packed per step) and what attn_forward can take. */
struct attn_kv_cache {
    attn_context *ctx;
    int batch, kv_heads, head_dim, capacity;
    attn_dtype dtype;
    int dim_pad; /* elements per row */
    int rows;    /* rows per head (>= capacity) */
    cl_mem k, v;
    int *len;    /* host copy of each sequence's length: the one truth */
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
