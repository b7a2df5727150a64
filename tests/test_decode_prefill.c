/* test_decode_prefill.c -- attn_decode with long blocks of new queries
 * (more than ATTN_DECODE_MAX_Q_LEN rows: a prompt attended through the
 * cache it was appended to, and a chunked prefill), which run the prefill
 * kernels reading the cache. Through contiguous and paged caches, in every
 * kernel family with a decode kernel and every dtype (mma: one per cache kind), each row equal to the CPU reference and
 * to one uncached attn_forward over the whole sequences (decode_world.c):
 * a chunked prefill of ragged, left-padded chunks; the boundary (64 rows
 * through the decode kernels, 65 through the prefill kernels, the same
 * results); the case table's long blocks (GQA, MQA, D40 and D128, in
 * place, pad queries, a sequence with none, the variants); check mode;
 * attn_decode_prepare's plan; and the limits of p->q_len. int8 caches:
 * test_decode_int8.
 *
 * Build cost: a prefill-from-cache program per (family, dtype, block
 * size) and the case table's shapes: about 60 programs, 2-3 minutes of
 * PoCL from a cold cache. */
#define _POSIX_C_SOURCE 200809L
#include "decode_world.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int blocks[] = {0, 16, 64}; /* 0: contiguous */
#define NBLK 3

enum { N = 260, CHUNK = 100 };

static void world_make(attn_context *ctx, world *w, attn_dtype dt, harness_family fam,
                       uint64_t seed)
{
    world_alloc(w, N);
    w->len[0] = N, w->len[1] = 199, w->len[2] = 131;
    fill_world_inputs(w, dt, seed);
    world_results(ctx, w, dt, fam, seed);
}

/* The prompts in chunks of up to CHUNK tokens per sequence, each chunk
 * appended left-padded (ragged: sequences run out at different steps) and
 * then attended as the block of new queries: 100 rows (the prefill
 * kernels), then 100, then 60 (the decode kernels). */
static void chunked(attn_context *ctx, harness_family fam, attn_dtype dt, int block)
{
    const uint64_t seed = harness_seed(0x5e1 + (uint64_t)block * 7 + (uint64_t)dt * 3 + fam);
    world w;
    world_make(ctx, &w, dt, fam, seed);
    attn_kv_cache *cache = NULL;
    const attn_kv_cache_desc desc = {.batch = B, .kv_heads = HKV, .head_dim = D, .capacity = N,
                                     .dtype = dt, .block_size = block};
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, &desc, &cache), ATTN_SUCCESS);
    const harness_layout layout = {HARNESS_BSHD, 1, 2, 0};
    int cur[B] = {0, 0, 0};
    for (int step = 0; step < 3; step++) {
        int counts[B], starts[B], most = 0;
        for (int b = 0; b < B; b++) {
            const int left = w.len[b] - cur[b];
            counts[b] = left < CHUNK ? left : CHUNK;
            most = counts[b] > most ? counts[b] : most;
        }
        for (int b = 0; b < B; b++) starts[b] = most - counts[b];
        append_rows_from(ctx, cache, &w, dt, cur, most, starts, counts, &layout);
        char what[160];
        snprintf(what, sizeof what, "%s %s block %d: chunk %d (%d rows)",
                 harness_family_name(fam), attn_dtype_name(dt), block, step, most);
        use_params(ctx, fam, 0, 0);
        decode_check(ctx, cache, &w, dt, most, counts, what, seed, 0);
        for (int b = 0; b < B; b++) cur[b] += counts[b];
    }
    attn_kv_cache_release(cache);
    world_free(&w);
}

static void test_chunked_prefill(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    for (int k = 0; k < NBLK; k++)
        for (int f = 0; f < NFAM; f++)
            for (int t = 0; t < NDT; t++) {
                /* mma, emulated here at many times the others' cost: one
                 * dtype per cache kind (f16 contiguous, bf16 paged by 16,
                 * f32 by 64) */
                const int mma = families[f] == HARNESS_MMA;
                if (mma ? t == (k + 1) % NDT : dtypes[t] == ATTN_F32 || blocks[k] != 64)
                    chunked(ctx, families[f], dtypes[t], blocks[k]);
            }
    harness_use_params(ctx, NULL);
}

/* The last 64 tokens through the decode kernels and the last 65 through
 * the prefill kernels: both against the reference, and their 64 shared
 * rows equal within the tolerance; then the whole prompts at once. */
static void test_boundary(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    const uint64_t seed = harness_seed(0x5e2);
    double atol, rtol;
    attn_tolerance(ATTN_F32, &atol, &rtol);
    for (int f = 0; f < NFAM; f++) {
        world w;
        world_make(ctx, &w, ATTN_F32, families[f], seed);
        attn_kv_cache *cache = world_cache(ctx, &w, ATTN_F32, N, 16);
        use_params(ctx, families[f], 0, 0);
        const int q64[B] = {64, 64, 64}, q65[B] = {65, 65, 65};
        float *a = decode_check(ctx, cache, &w, ATTN_F32, 64, q64, "last 64", seed, 1);
        float *b = decode_check(ctx, cache, &w, ATTN_F32, 65, q65, "last 65", seed, 1);
        float *a_rows = harness_xalloc((size_t)B * HQ * 64 * D);
        float *b_rows = harness_xalloc((size_t)B * HQ * 64 * D);
        for (int s = 0; s < B; s++)
            for (int h = 0; h < HQ; h++) {
                const size_t to = qidx(64, s, h, 0);
                memcpy(a_rows + to, a + qidx(64, s, h, 0), sizeof(float) * 64 * D);
                memcpy(b_rows + to, b + qidx(65, s, h, 1), sizeof(float) * 64 * D);
            }
        CU_ASSERT_EQUAL(harness_compare("decode kernels (64 rows) vs prefill kernels (65)",
                                        b_rows, a_rows, (size_t)B * HQ * 64 * D, atol, rtol,
                                        seed), 0);
        decode_check(ctx, cache, &w, ATTN_F32, N, w.len, "whole prompts", seed, 0);
        free(a), free(b), free(a_rows), free(b_rows);
        attn_kv_cache_release(cache);
        world_free(&w);
    }
    harness_use_params(ctx, NULL);
}

/* The case table's long blocks over each cache kind; mma (emulated here,
 * the slowest family) over the paged cache of 16 only. */
static void test_case_table(void)
{
    const char *group = "decode/prefill";
    for (int k = 0; k < NBLK; k++) {
        harness_decode_blocks(blocks[k]);
        int found = 0;
        for (const harness_case *c = harness_group_next(group, NULL); c;
             c = harness_group_next(group, c), found++) {
            harness_case x = *c;
            if (blocks[k] != 16) x.families &= ~(unsigned)HARNESS_MMA;
            HARNESS_FOR_FAMILIES(x.families, f)
                harness_case_run(&x, f, harness_decode_entry, "attn_decode", NULL, NULL);
        }
        CU_ASSERT(found > 0);
    }
    harness_decode_blocks(0);
}

/* Check mode reads a paged cache back and compares a long block with the
 * reference; attn_decode_prepare reports the prefill's plan: on the
 * vector family attn_forward's kernels over the packed cache (unsplit, and
 * its keys not clamped to the blocks of 16, as the decode kernels' are). */
static void test_check_mode_and_plan(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    const uint64_t seed = harness_seed(0x5e3);
    world w;
    world_make(ctx, &w, ATTN_F16, HARNESS_VECTOR, seed);
    attn_kv_cache *cache = world_cache(ctx, &w, ATTN_F16, N, 16);
    /* a sequence with no new query, then with one (continuous batching
     * mixes a decode step into a prefill chunk: it kept its keys) */
    const int q[B] = {120, 0, 77}, q1[B] = {120, 1, 77};
    for (int f = 0; f < NFAM; f++) {
        /* the vector family with 32 keys, named: its default on an AVX2 CPU
         * is 16 keys, which would not tell clamped from not */
        if (families[f] == HARNESS_VECTOR) {
            CU_ASSERT_EQUAL_FATAL(harness_use_family(ctx, HARNESS_VECTOR, "keys=32"), ATTN_SUCCESS);
        } else {
            use_params(ctx, families[f], 0, 0);
        }
        CU_ASSERT_EQUAL_FATAL(attn_context_set_check(ctx, 1), ATTN_SUCCESS);
        decode_check(ctx, cache, &w, ATTN_F16, 120, q, "paged, check mode", seed, 0);
        decode_check(ctx, cache, &w, ATTN_F16, 120, q1, "paged, check mode, one query", seed, 0);
        CU_ASSERT_EQUAL(attn_context_set_check(ctx, 0), ATTN_SUCCESS);
        const attn_problem p = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D,
                                .q_len = 120, .dtype = ATTN_F16, .causal = 1};
        attn_plan_info info, short_info;
        CU_ASSERT_EQUAL(attn_decode_prepare(ctx, cache, &p, &info), ATTN_SUCCESS);
        CU_ASSERT_STRING_EQUAL(info.family, harness_family_name(families[f]));
        attn_problem sp = p;
        sp.q_len = ATTN_DECODE_MAX_Q_LEN;
        CU_ASSERT_EQUAL(attn_decode_prepare(ctx, cache, &sp, &short_info), ATTN_SUCCESS);
        CU_ASSERT_PTR_NOT_NULL(strstr(short_info.params, "keys=16"));
        if (families[f] == HARNESS_VECTOR) {
            CU_ASSERT_PTR_NOT_NULL(strstr(info.params, "keys=32"));
            CU_ASSERT_PTR_NOT_NULL(strstr(info.params, "splits=1"));
        } else { /* tiled's and mma's decode kernels: a key block inside a page */
            CU_ASSERT_PTR_NULL(strstr(info.params, "keys=32"));
        }
    }
    harness_use_params(ctx, NULL);
    attn_kv_cache_release(cache);
    world_free(&w);
}

static int refuses(attn_context *ctx, attn_kv_cache *cache, int q_len, const char *word)
{
    const attn_problem p = {.batch = 1, .q_heads = 2, .kv_heads = 1, .head_dim = 16,
                            .q_len = q_len, .dtype = ATTN_F32, .causal = 1};
    attn_plan_info info;
    const attn_status st = attn_decode_prepare(ctx, cache, &p, &info);
    if (!word) return st == ATTN_SUCCESS;
    return st == ATTN_ERROR_INVALID_ARGUMENT && strstr(attn_last_error(ctx), word) != NULL &&
           strstr(attn_last_error(ctx), "p->q_len") != NULL;
}

/* p->q_len runs to the capacity, or to ATTN_DECODE_MAX_Q_LEN when the
 * capacity is smaller (a padded block of queries, as before) */
static void test_q_len_limits(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    attn_kv_cache *small = NULL, *big = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, 1, 1, 16, 16, ATTN_F32, &small), ATTN_SUCCESS);
    const attn_kv_cache_desc desc = {.batch = 1, .kv_heads = 1, .head_dim = 16, .capacity = 200,
                                     .dtype = ATTN_F32, .block_size = 64};
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, &desc, &big), ATTN_SUCCESS);
    CU_ASSERT(refuses(ctx, small, ATTN_DECODE_MAX_Q_LEN, NULL));
    CU_ASSERT(refuses(ctx, small, ATTN_DECODE_MAX_Q_LEN + 1, "capacity 16"));
    CU_ASSERT(refuses(ctx, big, 200, NULL));
    CU_ASSERT(refuses(ctx, big, 201, "capacity 200"));
    CU_ASSERT(refuses(ctx, big, 0, "1..200"));
    attn_kv_cache_release(small);
    attn_kv_cache_release(big);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_q_len_limits),
    HARNESS_TEST(test_boundary),
    HARNESS_TEST(test_chunked_prefill),
    HARNESS_TEST(test_case_table),
    HARNESS_TEST(test_check_mode_and_plan),
    HARNESS_END};

static void register_tests(void) { harness_add_suite("decode_prefill", tests); }

int main(void) { return harness_run("test_decode_prefill", register_tests); }
