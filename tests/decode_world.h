/* decode_world.h -- what the KV cache suites (test_decode, test_decode_paged)
 * share: a world of B sequences (host Q/K/V, the CPU reference and one
 * uncached attn_forward over the whole sequences), appends from it into a
 * cache, and a decode step checked against both (decode_world.c). */
#ifndef ATTN_TEST_DECODE_WORLD_H
#define ATTN_TEST_DECODE_WORLD_H

#include "cases.h"

/* every family with a decode kernel (mma emulated off NVIDIA: forced, as
 * the prefill matrices force it) */
static const harness_family families[] = {HARNESS_VECTOR, HARNESS_TILED, HARNESS_MMA};
#define NFAM 3
static const attn_dtype dtypes[] = {ATTN_F32, ATTN_F16, ATTN_BF16};
#define NDT 3

/* The parameters of ctx's calls that follow: family, the decode tile (4 rows:
 * with the 4 query heads per KV head of these tests, q_len > 1 takes
 * several tiles; mma, whose tiles are warps of 16 rows: one warp, so that
 * q_len > 4 takes several) and the number of splits (0 = automatic);
 * rows = 0: the family's defaults. */
void use_params(attn_context *ctx, harness_family family, int rows, int splits);

/* ---- one world of sequences: host data and its uncached results ---- */

enum { B = 3, HQ = 8, HKV = 2, D = 64 };
#define GROUP (HQ / HKV)

typedef struct world {
    int N;                  /* padded length of every array */
    int len[B];             /* each sequence's length in this world */
    float *q, *k, *v;       /* [B][H][N][D], rounded through the dtype */
    float *ref, *ref_lse;   /* the CPU reference over the whole sequences */
    float *dev, *dev_lse;   /* one uncached attn_forward over them */
} world;

static inline size_t qidx(int N, int b, int h, int s) { return (((size_t)b * HQ + h) * N + s) * D; }
static inline size_t kidx(int N, int b, int h, int s) { return (((size_t)b * HKV + h) * N + s) * D; }

void world_alloc(world *w, int N);
void world_free(world *w);
/* Normal(0, 1) Q, K, V from seed, rounded through dt. */
void fill_world_inputs(world *w, attn_dtype dt, uint64_t seed);
/* Overwrites positions [from[b], to[b]) of every head with other values. */
void redraw(world *w, attn_dtype dt, const int *from, const int *to, uint64_t seed);
/* The uncached results: the reference, and attn_forward over the whole
 * (right-padded) sequences, causal, with the family's default tiles. */
void world_results(attn_context *ctx, world *w, attn_dtype dt, harness_family fam,
                   uint64_t seed);

/* ---- the cache, driven from a world ---- */

/* Appends positions cur[b]..cur[b]+counts[b]-1 of w's K/V, as rows
 * starts[b].. of a block of block_len rows whose other rows are NaN, laid
 * out in `layout`: through attn_kv_cache_append_rows, or with starts NULL
 * (rows 0..) through attn_kv_cache_append. */
void append_rows_from(attn_context *ctx, attn_kv_cache *cache, const world *w,
                      attn_dtype dt, const int *cur, int block_len, const int *starts,
                      const int *counts, const harness_layout *layout);
void append_from(attn_context *ctx, attn_kv_cache *cache, const world *w, attn_dtype dt,
                 const int *cur, int block_len, const int *counts,
                 const harness_layout *layout);
/* A cache of capacity cap (block_size 0: contiguous, else paged with the
 * default pool) holding w's len[b] tokens of each sequence (positions 0..). */
attn_kv_cache *world_cache(attn_context *ctx, const world *w, attn_dtype dt, int cap,
                           int block_size);

/* Decodes q_len new rows per sequence (q_lens[b] of them real: the last
 * tokens of each sequence in the cache), taking Q from w, and compares O
 * and LSE with w's reference and w's uncached forward at the matching
 * positions; pad rows must be zeros and -inf. Returns the output (BHSD
 * floats, malloc'd) if keep. */
float *decode_check(attn_context *ctx, attn_kv_cache *cache, const world *w,
                    attn_dtype dt, int q_len, const int *q_lens, const char *what,
                    uint64_t seed, int keep);

#endif /* ATTN_TEST_DECODE_WORLD_H */
