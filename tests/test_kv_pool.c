/* test_kv_pool.c -- the KV cache's memory and sequences: the cache size
 * (attn_kv_cache_bytes) against the buffers a cache gets, a paged cache's
 * contents after ragged appends, forks, copy on write, truncation across
 * blocks, removal and reuse (read back with attn_kv_cache_read and checked
 * against a host model, and against a contiguous cache put through the same
 * calls), pool exhaustion with nothing written, and the refusals. Decode
 * through paged caches is test_decode_paged.c's. The story runs in int8
 * too: a fork or copy on write carries the rows' scales. */
#include "cases.h"
#include "harness.h"
#include "attention/kv_quant.h" /* the model of an int8 cache */
#include "core/context.h" /* max_alloc, lowered by test_table_past_max_alloc */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 3, HKV = 2, D = 24, CAP = 200 };

/* The host model: each sequence's K and V rows [CAP][HKV][D], as floats
 * rounded to the storage type, and its length. */
typedef struct model {
    float k[B][CAP][HKV][D], v[B][CAP][HKV][D];
    int len[B];
} model;

static int says(attn_context *ctx, const char *word)
{
    const char *msg = attn_last_error(ctx);
    if (strstr(msg, word)) return 1;
    printf("\n  expected \"%s\" in the message: %s\n", word, msg);
    return 0;
}

/* A row as an int8 cache reads it back: quantized, dequantized, rounded
 * to dt (the device's quantizer is the host's, bit for bit:
 * test_decode_int8). */
static void int8_row(float *row, attn_dtype dt)
{
    signed char q[D];
    float scale;
    attn_kv_quantize_row(row, D, q, &scale);
    for (int d = 0; d < D; d++) row[d] = attn_kv_dequantize(q[d], scale);
    harness_round(dt, row, D);
}

/* Appends counts[b] new random rows to each sequence of every cache in
 * caches[0..n-1] (one block, rows from starts[b]) and to the model (int8:
 * int8 caches, the rows as they store them). */
static void append_all(attn_context *ctx, attn_kv_cache **caches, int n, model *m, attn_dtype dt,
                       int int8, const int *starts, const int *counts, int block_len,
                       uint64_t seed)
{
    const size_t sz = (size_t)B * HKV * block_len * D;
    float *bk = harness_xalloc(sz), *bv = harness_xalloc(sz);
    harness_fill_normal(bk, sz, seed, 0.0f, 1.0f);
    harness_fill_normal(bv, sz, seed + 1, 0.0f, 1.0f);
    harness_round(dt, bk, sz);
    harness_round(dt, bv, sz);
    for (int b = 0; b < B; b++)
        for (int r = 0; r < counts[b]; r++)
            for (int h = 0; h < HKV; h++) {
                const size_t at = (((size_t)b * HKV + h) * block_len + starts[b] + r) * D;
                memcpy(m->k[b][m->len[b] + r][h], bk + at, sizeof(float) * D);
                memcpy(m->v[b][m->len[b] + r][h], bv + at, sizeof(float) * D);
                if (int8) {
                    int8_row(m->k[b][m->len[b] + r][h], dt);
                    int8_row(m->v[b][m->len[b] + r][h], dt);
                }
            }
    attn_tensor tk, tv;
    cl_mem mk = harness_upload(ctx, dt, bk, B, HKV, block_len, D, NULL, &tk);
    cl_mem mv = harness_upload(ctx, dt, bv, B, HKV, block_len, D, NULL, &tv);
    CU_ASSERT_FATAL(mk && mv);
    for (int i = 0; i < n; i++) {
        attn_status st = attn_kv_cache_append_rows(caches[i], &tk, &tv, block_len, starts, counts,
                                                   NULL);
        if (st != ATTN_SUCCESS) printf("\n  append: %s\n", attn_last_error(ctx));
        CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
    }
    for (int b = 0; b < B; b++) m->len[b] += counts[b];
    clReleaseMemObject(mk), clReleaseMemObject(mv);
    free(bk), free(bv);
}

/* Every sequence of the cache, read back, equals the model; 0 if not. */
static int matches(attn_kv_cache *c, const model *m, attn_dtype dt)
{
    int lens[B], ok = 1;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_lengths(c, lens), ATTN_SUCCESS);
    for (int b = 0; b < B; b++) {
        if (lens[b] != m->len[b]) {
            printf("\n  sequence %d: length %d, model %d\n", b, lens[b], m->len[b]);
            ok = 0;
            continue;
        }
        const size_t n = (size_t)HKV * lens[b] * D;
        if (n == 0) continue;
        void *rk = harness_xalloc(n), *rv = harness_xalloc(n);
        float *fk = harness_xalloc(n), *fv = harness_xalloc(n);
        CU_ASSERT_EQUAL_FATAL(attn_kv_cache_read(c, b, 0, lens[b], rk, rv), ATTN_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(attn_convert_to_f32(dt, rk, fk, n), ATTN_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(attn_convert_to_f32(dt, rv, fv, n), ATTN_SUCCESS);
        for (int h = 0; h < HKV && ok; h++)
            for (int t = 0; t < lens[b] && ok; t++)
                for (int d = 0; d < D && ok; d++) {
                    const size_t i = ((size_t)h * lens[b] + t) * D + d;
                    if (fk[i] != m->k[b][t][h][d] || fv[i] != m->v[b][t][h][d]) {
                        printf("\n  sequence %d token %d head %d [%d]: K %g V %g, model %g %g\n",
                               b, t, h, d, fk[i], fv[i], m->k[b][t][h][d], m->v[b][t][h][d]);
                        ok = 0;
                    }
                }
        free(rk), free(rv), free(fk), free(fv);
    }
    return ok;
}

static int free_blocks(attn_kv_cache *c)
{
    int f = -1;
    CU_ASSERT_EQUAL(attn_kv_cache_pool(c, &f, NULL), ATTN_SUCCESS);
    return f;
}

/* fork `src` into `dst` in the model */
static void model_fork(model *m, int src, int dst)
{
    memcpy(m->k[dst], m->k[src], sizeof m->k[src]);
    memcpy(m->v[dst], m->v[src], sizeof m->v[src]);
    m->len[dst] = m->len[src];
}

/* A paged cache and a contiguous one through the same calls: ragged and
 * left-padded appends, a fork at a partial block whose sequences then
 * diverge (copy on write), truncation across a block boundary (onto one
 * where the block is 32 or less), removal and reuse of the blocks. After
 * each step both equal the model. int8: both caches quantized (a fork or
 * a copy on write must carry the rows' scales). */
static void sequence_story(attn_dtype dt, int block, int int8)
{
    attn_context *ctx = harness_context();
    attn_kv_cache_desc d = {.batch = B, .kv_heads = HKV, .head_dim = D, .capacity = CAP,
                            .dtype = dt, .block_size = block,
                            .storage = int8 ? ATTN_KV_INT8 : ATTN_KV_AS_DTYPE};
    attn_kv_cache *c[2];
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, &d, &c[0]), ATTN_SUCCESS);
    d.block_size = 0;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, &d, &c[1]), ATTN_SUCCESS);
    model *m = calloc(1, sizeof *m);
    CU_ASSERT_FATAL(m != NULL);
    const int total = B * ((CAP + block - 1) / block);
    CU_ASSERT_EQUAL(free_blocks(c[0]), total);

    /* a left-padded prompt batch: lengths 37, 5, 0 in a block of 37 */
    const int s1[B] = {0, 32, 37}, n1[B] = {37, 5, 0};
    append_all(ctx, c, 2, m, dt, int8, s1, n1, 37, 11);
    CU_ASSERT(matches(c[0], m, dt) && matches(c[1], m, dt));
    const int used = (37 + block - 1) / block + (5 + block - 1) / block;
    CU_ASSERT_EQUAL(free_blocks(c[0]), total - used);

    /* sequence 2 forks sequence 0 at 37 tokens (a partial block): no block
     * is taken, both read the same */
    for (int i = 0; i < 2; i++) CU_ASSERT_EQUAL_FATAL(attn_kv_cache_seq_fork(c[i], 0, 2), ATTN_SUCCESS);
    model_fork(m, 0, 2);
    CU_ASSERT_EQUAL(free_blocks(c[0]), total - used);
    CU_ASSERT(matches(c[0], m, dt) && matches(c[1], m, dt));

    /* both diverge: 3 tokens each (the first copies the shared block, the
     * second then owns the original alone and writes in place) */
    const int s2[B] = {0, 0, 0}, n2[B] = {3, 1, 3};
    append_all(ctx, c, 2, m, dt, int8, s2, n2, 3, 23);
    CU_ASSERT(matches(c[0], m, dt) && matches(c[1], m, dt));
    const int pages0 = (40 + block - 1) / block, pages1 = (6 + block - 1) / block;
    const int shared = 37 / block; /* whole blocks both still share */
    CU_ASSERT_EQUAL(free_blocks(c[0]), total - (pages0 + pages1 + (pages0 - shared)));

    /* truncate sequence 0 (40 tokens) across a block boundary, onto one
     * where it can (a block kept past it would be lost to the pool: the
     * last check fails), then grow it again */
    const int cut = block <= 32 ? 32 : 10;
    for (int i = 0; i < 2; i++) CU_ASSERT_EQUAL(attn_kv_cache_truncate(c[i], 0, cut), ATTN_SUCCESS);
    m->len[0] = cut;
    CU_ASSERT(matches(c[0], m, dt) && matches(c[1], m, dt));
    const int grow = block > 64 ? 100 : block + 3; /* inside the capacity */
    const int n3[B] = {grow, 0, 1};
    append_all(ctx, c, 2, m, dt, int8, s2, n3, grow, 31);
    CU_ASSERT(matches(c[0], m, dt) && matches(c[1], m, dt));

    /* remove sequence 2; its blocks return and serve sequence 1 */
    const int before = free_blocks(c[0]);
    for (int i = 0; i < 2; i++) CU_ASSERT_EQUAL(attn_kv_cache_seq_remove(c[i], 2), ATTN_SUCCESS);
    m->len[2] = 0;
    CU_ASSERT(free_blocks(c[0]) > before);
    const int more = block > 64 ? 150 : 2 * block + 1;
    const int n4[B] = {0, more, 0};
    append_all(ctx, c, 2, m, dt, int8, s2, n4, more, 41);
    CU_ASSERT(matches(c[0], m, dt) && matches(c[1], m, dt));

    /* empty everything: no block is lost */
    for (int i = 0; i < 2; i++) CU_ASSERT_EQUAL(attn_kv_cache_reset(c[i], -1), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(free_blocks(c[0]), total);
    free(m);
    attn_kv_cache_release(c[0]);
    attn_kv_cache_release(c[1]);
}

static void test_sequences_paged(void)
{
    const attn_dtype dts[] = {ATTN_F32, ATTN_F16, ATTN_BF16};
    const int blocks[] = {16, 64, 256};
    for (int i = 0; i < 3; i++) sequence_story(dts[i], blocks[i], 0);
    sequence_story(ATTN_F32, 32, 0);
    sequence_story(ATTN_F16, 16, 1);
    sequence_story(ATTN_BF16, 64, 1);
}

/* An append the pool cannot serve: ATTN_ERROR_OUT_OF_MEMORY naming the
 * sequence, nothing written anywhere, decode refused until an append
 * succeeds. */
static void test_pool_exhaustion(void)
{
    attn_context *ctx = harness_context();
    const attn_kv_cache_desc d = {.batch = B, .kv_heads = HKV, .head_dim = D, .capacity = CAP,
                                  .dtype = ATTN_F32, .block_size = 16, .num_blocks = 4};
    attn_kv_cache *c;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, &d, &c), ATTN_SUCCESS);
    model *m = calloc(1, sizeof *m);
    CU_ASSERT_FATAL(m != NULL);
    const int s[B] = {0, 0, 0}, n1[B] = {40, 0, 0};
    append_all(ctx, &c, 1, m, ATTN_F32, 0, s, n1, 40, 5); /* 3 blocks */
    CU_ASSERT_EQUAL(free_blocks(c), 1);

    /* 9 more for sequence 0 fit its third block; sequence 1's 20 need 2 */
    const int n2[B] = {5, 20, 0};
    const size_t sz = (size_t)B * HKV * 20 * D;
    float *x = harness_xalloc(sz * sizeof(float));
    harness_fill_normal(x, sz, 9, 0.0f, 1.0f);
    attn_tensor t;
    cl_mem mx = harness_upload(ctx, ATTN_F32, x, B, HKV, 20, D, NULL, &t);
    CU_ASSERT_FATAL(mx != NULL);
    CU_ASSERT_EQUAL(attn_kv_cache_append(c, &t, &t, 20, n2, NULL), ATTN_ERROR_OUT_OF_MEMORY);
    CU_ASSERT(says(ctx, "sequence 1") && says(ctx, "nothing was appended"));
    CU_ASSERT_EQUAL(free_blocks(c), 1);
    CU_ASSERT(matches(c, m, ATTN_F32));
    attn_problem p = {.batch = B, .q_heads = HKV, .kv_heads = HKV, .head_dim = D, .q_len = 1,
                      .dtype = ATTN_F32, .causal = 1};
    int one[B] = {1, 0, 0};
    CU_ASSERT_EQUAL(attn_decode(ctx, c, &p, &t, &t, one, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "append"));
    /* what fits goes in */
    const int n3[B] = {5, 16, 0};
    append_all(ctx, &c, 1, m, ATTN_F32, 0, s, n3, 16, 13);
    CU_ASSERT_EQUAL(free_blocks(c), 0);
    CU_ASSERT(matches(c, m, ATTN_F32));
    clReleaseMemObject(mx);
    free(x);
    free(m);
    attn_kv_cache_release(c);
}

/* The size an engine plans with is what the cache takes: MHA, GQA and MQA
 * in the ratio of their KV heads, paged by blocks, int8 with its scales. */
static void test_cache_bytes(void)
{
    size_t mha, gqa, mqa, paged, int8;
    attn_kv_cache_desc d = {.batch = 4, .kv_heads = 32, .head_dim = 128, .capacity = 4096,
                            .dtype = ATTN_F16};
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_bytes(&d, &mha), ATTN_SUCCESS);
    d.kv_heads = 8;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_bytes(&d, &gqa), ATTN_SUCCESS);
    d.kv_heads = 1;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_bytes(&d, &mqa), ATTN_SUCCESS);
    /* rows: 4096 rounded to 128 and one spare block (a power-of-two head
     * stride); table: one int per sequence */
    const size_t table = 4 * sizeof(int), per_head = 2 * 4 * (size_t)(4096 + 128) * 128 * 2;
    CU_ASSERT_EQUAL(mha, 32 * per_head + table);
    CU_ASSERT_EQUAL(gqa, 8 * per_head + table);
    CU_ASSERT_EQUAL(mqa, per_head + table);
    d.kv_heads = 8;
    d.block_size = 16;
    d.capacity = 1000; /* 63 blocks per sequence */
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_bytes(&d, &paged), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(paged, 2 * (size_t)(4 * 63) * 8 * 16 * 128 * 2 + 4 * 63 * sizeof(int));
    d.storage = ATTN_KV_INT8;
    d.num_blocks = 100;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_bytes(&d, &int8), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(int8, 2 * (size_t)100 * 8 * 16 * (128 + sizeof(float)) + 4 * 63 * sizeof(int));

    /* a cache made from a desc reports the pool it was sized for */
    attn_context *ctx = harness_context();
    attn_kv_cache_desc small = {.batch = 2, .kv_heads = 2, .head_dim = 16, .capacity = 100,
                                .dtype = ATTN_F32, .block_size = 32};
    attn_kv_cache *c;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, &small, &c), ATTN_SUCCESS);
    int fr, total;
    CU_ASSERT_EQUAL(attn_kv_cache_pool(c, &fr, &total), ATTN_SUCCESS);
    CU_ASSERT(fr == 8 && total == 8);
    attn_kv_cache_release(c);

    /* every bad field by name, from both calls */
    struct { attn_kv_cache_desc d; const char *word; } bad[] = {
        {{.batch = 0, .kv_heads = 1, .head_dim = 8, .capacity = 8}, "desc->batch"},
        {{.batch = 1, .kv_heads = 1, .head_dim = 257, .capacity = 8}, "desc->head_dim"},
        {{.batch = 1, .kv_heads = 1, .head_dim = 8, .capacity = 8, .block_size = 24},
         "desc->block_size"},
        {{.batch = 1, .kv_heads = 1, .head_dim = 8, .capacity = 8, .block_size = 512},
         "desc->block_size"},
        {{.batch = 1, .kv_heads = 1, .head_dim = 8, .capacity = 8, .num_blocks = 4},
         "desc->num_blocks"},
        {{.batch = 1, .kv_heads = 1, .head_dim = 8, .capacity = 8, .storage = 7},
         "desc->storage"},
        /* 2^23 blocks of 256: 2^31 rows per KV head, past the kernels' int;
         * one block fewer is accepted by attn_kv_cache_bytes (below) */
        {{.batch = 1, .kv_heads = 1, .head_dim = 8, .capacity = 8, .block_size = 256,
          .num_blocks = 1 << 23}, "desc->num_blocks = 8388608"},
        /* K's bytes past 64 bits: the unbounded factor, kv_heads, named */
        {{.batch = 1, .kv_heads = 1 << 30, .head_dim = 8, .capacity = 8, .block_size = 256,
          .num_blocks = (1 << 23) - 1}, "desc->kv_heads = 1073741824 with num_blocks"},
        {{.batch = 1, .kv_heads = 1 << 30, .head_dim = 8, .capacity = 1 << 30},
         "desc->kv_heads = 1073741824 with capacity"},
        /* the default pool, batch * ceil(capacity / block): 2^24 blocks of 256 */
        {{.batch = 1 << 14, .kv_heads = 1, .head_dim = 8, .capacity = 1 << 18,
          .block_size = 256}, "batch * ceil(capacity / block_size)"},
    };
    attn_kv_cache_desc edge = {.batch = 1, .kv_heads = 1, .head_dim = 8, .capacity = 8,
                               .block_size = 256, .num_blocks = (1 << 23) - 1};
    size_t edge_bytes = 0;
    CU_ASSERT_EQUAL(attn_kv_cache_bytes(&edge, &edge_bytes), ATTN_SUCCESS);
    CU_ASSERT(edge_bytes > ((size_t)1 << 35));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t n = 1;
        CU_ASSERT_EQUAL(attn_kv_cache_bytes(&bad[i].d, &n), ATTN_ERROR_INVALID_ARGUMENT);
        CU_ASSERT(n == 0 && says(NULL, bad[i].word) && says(NULL, "attn_kv_cache_bytes"));
        c = (attn_kv_cache *)&n;
        CU_ASSERT_EQUAL(attn_kv_cache_create_desc(ctx, &bad[i].d, &c),
                        ATTN_ERROR_INVALID_ARGUMENT);
        CU_ASSERT(c == NULL && says(ctx, bad[i].word));
    }
    CU_ASSERT_EQUAL(attn_kv_cache_bytes(NULL, &paged), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(NULL, "desc"));
}

/* A paged cache whose block table the device cannot hold in one buffer,
 * though its pool fits: refused at creation (it was made, and then every
 * append failed in OpenCL). */
static void test_table_past_max_alloc(void)
{
    attn_context *ctx = harness_context();
    /* 64 sequences of up to 65536 tokens in blocks of 16: a 1 MiB table;
     * a pool of 64 blocks: 64 KiB of K and V each */
    const attn_kv_cache_desc d = {.batch = 64, .kv_heads = 1, .head_dim = 16, .capacity = 65536,
                                  .dtype = ATTN_F32, .block_size = 16, .num_blocks = 64};
    const size_t table = (size_t)64 * 4096 * sizeof(int);
    cl_ulong *limit = &ctx->max_alloc;
    const cl_ulong real = *limit;
    attn_kv_cache *c = NULL;
    *limit = table - 1;
    CU_ASSERT_EQUAL(attn_kv_cache_create_desc(ctx, &d, &c), ATTN_ERROR_OUT_OF_MEMORY);
    CU_ASSERT(c == NULL && says(ctx, "block table") && says(ctx, "1048576 bytes"));
    *limit = table; /* exactly: made, and it holds */
    CU_ASSERT_EQUAL(attn_kv_cache_create_desc(ctx, &d, &c), ATTN_SUCCESS);
    *limit = real;
    if (c) {
        float *x = calloc((size_t)64 * 20 * 16, sizeof *x);
        attn_tensor t;
        cl_mem m = x ? harness_upload(ctx, ATTN_F32, x, 64, 1, 20, 16, NULL, &t) : NULL;
        CU_ASSERT_PTR_NOT_NULL(m);
        if (m) {
            int lens[64];
            for (int b = 0; b < 64; b++) lens[b] = 1 + b % 16; /* one block each: the pool */
            const attn_status st = attn_kv_cache_append(c, &t, &t, 20, lens, NULL);
            if (st != ATTN_SUCCESS) printf("\n  append: %s\n", attn_last_error(ctx));
            CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
            clReleaseMemObject(m);
        }
        free(x);
        attn_kv_cache_release(c);
    }
}

/* Slots, and the calls' refusals: each names its argument and changes
 * nothing. */
static void test_slots_and_refusals(void)
{
    attn_context *ctx = harness_context();
    const attn_kv_cache_desc d = {.batch = B, .kv_heads = HKV, .head_dim = D, .capacity = CAP,
                                  .dtype = ATTN_F16, .block_size = 16};
    attn_kv_cache *c;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, &d, &c), ATTN_SUCCESS);
    int s = -1;
    for (int i = 0; i < B; i++) {
        CU_ASSERT_EQUAL(attn_kv_cache_seq_add(c, &s), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(s, i);
    }
    CU_ASSERT_EQUAL(attn_kv_cache_seq_add(c, &s), ATTN_ERROR_OUT_OF_MEMORY);
    CU_ASSERT(says(ctx, "slots"));
    CU_ASSERT_EQUAL(attn_kv_cache_seq_remove(c, 1), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_kv_cache_seq_add(c, &s), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(s, 1);
    CU_ASSERT_EQUAL(attn_kv_cache_seq_remove(c, B), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "seq"));

    model *m = calloc(1, sizeof *m);
    CU_ASSERT_FATAL(m != NULL);
    const int st0[B] = {0, 0, 0}, n[B] = {20, 0, 0};
    append_all(ctx, &c, 1, m, ATTN_F16, 0, st0, n, 20, 3);
    CU_ASSERT_EQUAL(attn_kv_cache_seq_fork(c, 0, 0), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "src and dst"));
    CU_ASSERT_EQUAL(attn_kv_cache_seq_fork(c, 1, 0), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "dst"));
    CU_ASSERT_EQUAL(attn_kv_cache_seq_fork(c, 0, -1), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "dst = -1"));
    unsigned short buf[HKV * 20 * D];
    CU_ASSERT_EQUAL(attn_kv_cache_read(c, 0, 15, 6, buf, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "first = 15"));
    CU_ASSERT_EQUAL(attn_kv_cache_read(c, 0, -1, 1, buf, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_kv_cache_read(c, 0, 19, 1, buf, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_kv_cache_read(c, 1, 0, 1, buf, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "sequence 1 holds no tokens")); /* it said "0..-1" */
    attn_tensor tk;
    CU_ASSERT_EQUAL(attn_kv_cache_tensors(c, &tk, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "paged") && says(ctx, "attn_kv_cache_read"));
    CU_ASSERT(matches(c, m, ATTN_F16));
    CU_ASSERT_EQUAL(attn_kv_cache_seq_fork(NULL, 0, 1), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_kv_cache_pool(NULL, NULL, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    free(m);
    attn_kv_cache_release(c);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_sequences_paged),
    HARNESS_TEST(test_pool_exhaustion),
    HARNESS_TEST(test_cache_bytes),
    HARNESS_TEST(test_table_past_max_alloc),
    HARNESS_TEST(test_slots_and_refusals),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("kv_pool", tests); }

int main(void) { return harness_run("test_kv_pool", register_tests); }
