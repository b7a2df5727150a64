/* test_decode_paged.c -- attn_decode through paged KV caches (blocks of 16,
 * 64 and 256 tokens) in both kernel families: every step equal to
 * attn_forward over the same K/V in plain tensors and to the CPU reference
 * (decode_world.c), along a story of sequence operations in each storage
 * type -- left-padded ragged prompts, a fork whose two sequences then
 * diverge (copy on write of their shared partial block), truncation across
 * a block boundary and new tokens there, a sequence removed and its blocks
 * reused by a new one -- with splits forced and automatic; long sequences
 * over many blocks, split and unsplit; the story again on an application's
 * out-of-order queue; the shared case table (GQA, MQA, a
 * head dim of 40, a window, sinks, ALiBi) through paged caches; the keys per
 * block clamped to the page; check mode; and q/out/lse refused with the
 * contiguous cache's messages.
 *
 * Build cost: a decode program per (block size, family, dtype) and per
 * case-table shape and variant, about 40 programs, 1-2 minutes of PoCL
 * from a cold cache. */
#define _POSIX_C_SOURCE 200809L
#include "decode_world.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int blocks[] = {16, 64, 256};
#define NBLK 3

static int free_blocks(attn_kv_cache *c)
{
    int n = -1;
    CU_ASSERT_EQUAL(attn_kv_cache_pool(c, &n, NULL), ATTN_SUCCESS);
    return n;
}

static int pages(int tokens, int block) { return (tokens + block - 1) / block; }

/* Copies positions [0, n) of sequence src's Q, K and V to sequence dst. */
static void world_share(world *w, int src, int dst, int n)
{
    for (int h = 0; h < HQ; h++)
        memcpy(w->q + qidx(w->N, dst, h, 0), w->q + qidx(w->N, src, h, 0),
               sizeof(float) * (size_t)n * D);
    for (int h = 0; h < HKV; h++) {
        memcpy(w->k + kidx(w->N, dst, h, 0), w->k + kidx(w->N, src, h, 0),
               sizeof(float) * (size_t)n * D);
        memcpy(w->v + kidx(w->N, dst, h, 0), w->v + kidx(w->N, src, h, 0),
               sizeof(float) * (size_t)n * D);
    }
}

/* A world that is `from` with sequence `seq`'s positions [first, N)
 * redrawn; its uncached results. */
static void world_branch(attn_context *ctx, world *w, const world *from, attn_dtype dt,
                         harness_family fam, int seq, int first, uint64_t seed)
{
    world_alloc(w, from->N);
    for (int b = 0; b < B; b++) w->len[b] = from->N;
    memcpy(w->q, from->q, sizeof(float) * (size_t)B * HQ * from->N * D);
    memcpy(w->k, from->k, sizeof(float) * (size_t)B * HKV * from->N * D);
    memcpy(w->v, from->v, sizeof(float) * (size_t)B * HKV * from->N * D);
    int lo[B], hi[B];
    for (int b = 0; b < B; b++) lo[b] = hi[b] = 0;
    lo[seq] = first, hi[seq] = from->N;
    redraw(w, dt, lo, hi, seed);
    world_results(ctx, w, dt, fam, seed);
}

/* One step: counts[b] new tokens per sequence from w, then a decode of
 * the last q_lens[b] tokens with `splits` (0: automatic). */
static void step(attn_context *ctx, attn_kv_cache *cache, const world *w, attn_dtype dt,
                 harness_family fam, const int *counts, const int *q_lens, int splits,
                 const char *what, uint64_t seed)
{
    int cur[B], n = 0, q = 0;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_lengths(cache, cur), ATTN_SUCCESS);
    for (int b = 0; b < B; b++) {
        n = counts[b] > n ? counts[b] : n;
        q = q_lens[b] > q ? q_lens[b] : q;
    }
    const harness_layout layout = {HARNESS_BHSD, 2, 4, 1};
    if (n) append_from(ctx, cache, w, dt, cur, n, counts, &layout);
    use_params(ctx, fam, 4, splits);
    char label[200];
    snprintf(label, sizeof label, "%s (splits=%d)", what, splits);
    decode_check(ctx, cache, w, dt, q, q_lens, label, seed, 0);
}

/* The story in one block size, family and storage type. */
static void story(attn_context *ctx, int block, harness_family fam, attn_dtype dt)
{
    enum { N = 100, CAP = 160, PROMPT = 70, TRUNC = 60, SPEC = 5, NEW = 40 };
    const uint64_t seed = harness_seed(4700 + 10 * (uint64_t)dt + (fam == HARNESS_TILED) +
                                       100 * (uint64_t)block);
    char what[160];
    const char *name = harness_family_name(fam), *tn = attn_dtype_name(dt);
    world w1, w2, w3;
    world_alloc(&w1, N);
    for (int b = 0; b < B; b++) w1.len[b] = N;
    fill_world_inputs(&w1, dt, seed);
    world_share(&w1, 0, 2, PROMPT); /* sequence 2 is forked from 0 after the prompt */
    world_results(ctx, &w1, dt, fam, seed);

    const attn_kv_cache_desc desc = {.batch = B, .kv_heads = HKV, .head_dim = D,
                                     .capacity = CAP, .dtype = dt, .block_size = block};
    attn_kv_cache *cache = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, &desc, &cache), ATTN_SUCCESS);
    const int total = B * pages(CAP, block);

    /* 1. left-padded ragged prompts in one block; the last few decoded */
    const int counts[B] = {PROMPT, 17, 0}, starts[B] = {0, PROMPT - 17, PROMPT};
    const int zero[B] = {0, 0, 0};
    const harness_layout bshd = {HARNESS_BSHD, 11, 5, 2};
    append_rows_from(ctx, cache, &w1, dt, zero, PROMPT, starts, counts, &bshd);
    CU_ASSERT_EQUAL(free_blocks(cache), total - pages(PROMPT, block) - pages(17, block));
    snprintf(what, sizeof what, "block %d %s %s: prompt tails", block, name, tn);
    const int tails[B] = {3, 2, 0};
    step(ctx, cache, &w1, dt, fam, zero, tails, 3, what, seed);

    /* 2. fork 0 -> 2 (nothing copied), then both diverge: their first new
     * token goes into the shared partial block, copied on write */
    const int before = free_blocks(cache);
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_seq_fork(cache, 0, 2), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(free_blocks(cache), before);
    const int ones[B] = {1, 1, 1};
    for (int t = 0; t < 3; t++) {
        snprintf(what, sizeof what, "block %d %s %s: fork diverged, step %d", block, name, tn, t);
        step(ctx, cache, &w1, dt, fam, ones, ones, t == 0 ? 1 : t == 1 ? 0 : 2, what, seed);
    }

    /* 3. sequence 0 truncated across a block boundary (73 -> 60), new
     * tokens there; sequence 2 still shares the blocks before it */
    CU_ASSERT_EQUAL(attn_kv_cache_truncate(cache, 0, TRUNC), ATTN_SUCCESS);
    world_branch(ctx, &w2, &w1, dt, fam, 0, TRUNC, seed + 1000);
    const int spec[B] = {SPEC, 0, 0}, none[B] = {0, 0, 0};
    snprintf(what, sizeof what, "block %d %s %s: truncated, %d new", block, name, tn, SPEC);
    step(ctx, cache, &w2, dt, fam, spec, spec, 3, what, seed);
    snprintf(what, sizeof what, "block %d %s %s: after truncation", block, name, tn);
    step(ctx, cache, &w2, dt, fam, ones, ones, 0, what, seed);
    step(ctx, cache, &w2, dt, fam, none, ones, 1, what, seed); /* the same, unsplit */

    /* 4. sequence 1 removed: its blocks go back to the pool, the slot is
     * taken again and a new sequence grows in it from reused blocks */
    int lens[B];
    attn_kv_cache_lengths(cache, lens);
    const int held = free_blocks(cache), gone = pages(lens[1], block);
    CU_ASSERT_EQUAL(attn_kv_cache_seq_remove(cache, 1), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(free_blocks(cache), held + gone);
    int seq = -1;
    CU_ASSERT_EQUAL(attn_kv_cache_seq_add(cache, &seq), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(seq, 1);
    world_branch(ctx, &w3, &w2, dt, fam, 1, 0, seed + 2000);
    const int fresh[B] = {0, NEW, 0}, fresh_tail[B] = {0, 2, 0};
    snprintf(what, sizeof what, "block %d %s %s: a new sequence in reused blocks", block, name,
             tn);
    step(ctx, cache, &w3, dt, fam, fresh, fresh_tail, 2, what, seed);
    CU_ASSERT_EQUAL(free_blocks(cache), held + gone - pages(NEW, block));
    step(ctx, cache, &w3, dt, fam, ones, ones, 0, what, seed);

    attn_kv_cache_release(cache);
    world_free(&w1), world_free(&w2), world_free(&w3);
    harness_use_params(ctx, NULL);
}

static void test_story(void)
{
    attn_context *ctx = harness_context();
    for (int k = 0; k < NBLK; k++)
        for (int f = 0; f < NFAM; f++)
            for (int t = 0; t < NDT; t++) story(ctx, blocks[k], families[f], dtypes[t]);
}

/* ---- the story on an application's out-of-order queue ----
 * Nothing between attn's calls waits (the test drains the queue only to
 * read results back): the appends, a fork's copy on write, truncation, a
 * removed sequence's reused blocks and split decodes are ordered by attn's
 * barriers alone. PoCL reorders such a queue, but seldom here, where each
 * step drains it: without attn's barriers this test failed one run in six
 * (test_context's out-of-order test, with six forwards in flight, every
 * run); a driver that runs commands side by side is the real check. */
static void test_story_out_of_order(void)
{
    attn_context *ctx;
    cl_command_queue queue;
    cl_context cl;
    if (!harness_out_of_order_context(&ctx, &queue, &cl)) return;
    for (int f = 0; f < NFAM; f++) story(ctx, 16, families[f], ATTN_F16);
    harness_app_release(ctx, queue, cl);
}

/* ---- long sequences over many blocks: split equals unsplit ---- */

static void test_long_split_unsplit(void)
{
    attn_context *ctx = harness_context();
    const uint64_t seed = harness_seed(4800);
    enum { N = 600 };
    world w;
    world_alloc(&w, N);
    const int lens[B] = {N, 3, 333};
    memcpy(w.len, lens, sizeof lens);
    fill_world_inputs(&w, ATTN_F32, seed);
    world_results(ctx, &w, ATTN_F32, HARNESS_VECTOR, seed);
    const int splits[] = {5, 0};
    for (int k = 0; k < NBLK; k++) {
        attn_kv_cache *cache = world_cache(ctx, &w, ATTN_F32, N, blocks[k]);
        for (int f = 0; f < NFAM; f++)
            for (int ql = 1; ql <= 3; ql += 2) {
                const int q_lens[B] = {ql, ql, ql};
                char what[128];
                use_params(ctx, families[f], 4, 1);
                snprintf(what, sizeof what, "block %d %s q_len %d unsplit", blocks[k],
                         harness_family_name(families[f]), ql);
                float *base = decode_check(ctx, cache, &w, ATTN_F32, ql, q_lens, what, seed, 1);
                CU_ASSERT_PTR_NOT_NULL_FATAL(base);
                for (size_t s = 0; s < sizeof splits / sizeof splits[0]; s++) {
                    use_params(ctx, families[f], 4, splits[s]);
                    snprintf(what, sizeof what, "block %d %s q_len %d splits=%d", blocks[k],
                             harness_family_name(families[f]), ql, splits[s]);
                    float *got = decode_check(ctx, cache, &w, ATTN_F32, ql, q_lens, what, seed, 1);
                    if (got)
                        CU_ASSERT_EQUAL(harness_compare(what, got, base, (size_t)B * HQ * ql * D,
                                                        1e-5, 1e-4, seed), 0);
                    free(got);
                }
                free(base);
            }
        attn_kv_cache_release(cache);
    }
    world_free(&w);
    harness_use_params(ctx, NULL);
}

/* ---- the shared case table through paged caches ---- */

static void test_case_table_paged(void)
{
    static const char *const variants[] = {
        "decode window 30 of 288, split 4, keys 16",
        "decode window 30 right 5, non-causal, split 3",
        "window 8 + sinks buffer, MQA D40 bf16 in place, split 3",
        "decode alibi, split 3", /* the vector kernel walks its blocks downward */
        "int8: all five, bf16, split 3" /* scales found through the block table */};
    for (int k = 0; k < NBLK; k++) {
        harness_decode_blocks(blocks[k]);
        harness_run_group("decode/mqa_odd_dim", harness_decode_entry, "attn_decode");
        harness_run_group("decode/table", harness_decode_entry, "attn_decode");
        /* the variants in the two smaller blocks: the window's key base
         * and the splits then start inside the sequences' blocks */
        for (size_t i = 0; blocks[k] < 256 && i < sizeof variants / sizeof variants[0]; i++) {
            const harness_case *c = harness_case_named(variants[i]);
            CU_ASSERT_PTR_NOT_NULL_FATAL(c);
            HARNESS_FOR_FAMILIES(c->families, f)
            CU_ASSERT_EQUAL(harness_case_run(c, f, harness_decode_entry, "attn_decode", NULL,
                                             NULL), 0);
        }
    }
    harness_decode_blocks(0);
}

/* ---- the plan, check mode, refusals ---- */

static void test_keys_clamped_to_block(void)
{
    attn_context *ctx = harness_context();
    const uint64_t seed = harness_seed(4900);
    world w;
    world_alloc(&w, 50);
    const int lens[B] = {50, 20, 33};
    memcpy(w.len, lens, sizeof lens);
    fill_world_inputs(&w, ATTN_F32, seed);
    world_results(ctx, &w, ATTN_F32, HARNESS_VECTOR, seed);
    attn_kv_cache *cache = world_cache(ctx, &w, ATTN_F32, 50, 16);
    attn_problem p = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = 1,
                      .dtype = ATTN_F32, .causal = 1};
    attn_plan_info info;
    for (int f = 0; f < NFAM; f++) {
        /* keys=64 asked: a block of 16 tokens holds 16 */
        harness_use_family(ctx, families[f], "rows=4,keys=64,splits=2");
        CU_ASSERT_EQUAL(attn_decode_prepare(ctx, cache, &p, &info), ATTN_SUCCESS);
        CU_ASSERT_PTR_NOT_NULL(strstr(info.params, "keys=16"));
        const int ones[B] = {1, 1, 1};
        decode_check(ctx, cache, &w, ATTN_F32, 1, ones, "keys=64 in blocks of 16", seed, 0);
    }
    /* check mode compares with the reference over K and V read back */
    harness_use_params(ctx, NULL);
    attn_context_set_check(ctx, 1);
    const int ones[B] = {1, 1, 1};
    decode_check(ctx, cache, &w, ATTN_F32, 1, ones, "paged, check mode", seed, 0);
    attn_context_set_check(ctx, 0);
    attn_kv_cache_release(cache);
    world_free(&w);
}

/* A paged cache refuses bad q, out and lse with the contiguous cache's
 * messages (it has no tensors to validate them against). */
static void test_refusals_as_contiguous(void)
{
    attn_context *ctx = harness_context();
    attn_kv_cache *caches[2] = {NULL, NULL};
    const attn_kv_cache_desc desc = {.batch = 2, .kv_heads = 2, .head_dim = 16, .capacity = 40,
                                     .dtype = ATTN_F32, .block_size = 16};
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, 2, 2, 16, 40, ATTN_F32, &caches[0]),
                          ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(ctx, &desc, &caches[1]), ATTN_SUCCESS);
    float zeros[2 * 2 * 3 * 16] = {0};
    attn_tensor tk, tv, tq, to, small_o;
    cl_mem mk = harness_upload(ctx, ATTN_F32, zeros, 2, 2, 3, 16, NULL, &tk);
    cl_mem mv = harness_upload(ctx, ATTN_F32, zeros, 2, 2, 3, 16, NULL, &tv);
    cl_mem mq = harness_upload(ctx, ATTN_F32, zeros, 2, 4, 1, 16, NULL, &tq);
    cl_mem mo = harness_alloc(ctx, ATTN_F32, 2, 4, 1, 16, NULL, &to);
    cl_mem mso = harness_alloc(ctx, ATTN_F32, 1, 4, 1, 16, NULL, &small_o);
    cl_mem small_lse = harness_float_buffer(ctx, 3);
    CU_ASSERT_FATAL(mk && mv && mq && mo && mso && small_lse);
    const attn_problem p = {.batch = 2, .q_heads = 4, .kv_heads = 2, .head_dim = 16,
                            .q_len = 1, .dtype = ATTN_F32, .causal = 1};
    char msg[2][3][512];
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(attn_kv_cache_append(caches[i], &tk, &tv, 3, NULL, NULL), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(attn_decode(ctx, caches[i], &p, &tq, &small_o, NULL, NULL, NULL),
                        ATTN_ERROR_INVALID_ARGUMENT);
        snprintf(msg[i][0], sizeof msg[i][0], "%s", attn_last_error(ctx));
        CU_ASSERT_EQUAL(attn_decode(ctx, caches[i], &p, &tq, &to, NULL, small_lse, NULL),
                        ATTN_ERROR_INVALID_ARGUMENT);
        snprintf(msg[i][1], sizeof msg[i][1], "%s", attn_last_error(ctx));
        attn_tensor overlap = to; /* out over q, another layout */
        overlap.buffer = mq;
        overlap.stride_seq = 1;
        CU_ASSERT_EQUAL(attn_decode(ctx, caches[i], &p, &tq, &overlap, NULL, NULL, NULL),
                        ATTN_ERROR_INVALID_ARGUMENT);
        snprintf(msg[i][2], sizeof msg[i][2], "%s", attn_last_error(ctx));
        CU_ASSERT_EQUAL(attn_decode(ctx, caches[i], &p, &tq, &to, NULL, NULL, NULL), ATTN_SUCCESS);
    }
    for (int j = 0; j < 3; j++) {
        CU_ASSERT_STRING_EQUAL(msg[1][j], msg[0][j]);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg[1][j], "attn_decode"));
    }
    clFinish(attn_context_queue(ctx));
    clReleaseMemObject(mk), clReleaseMemObject(mv), clReleaseMemObject(mq);
    clReleaseMemObject(mo), clReleaseMemObject(mso), clReleaseMemObject(small_lse);
    attn_kv_cache_release(caches[0]), attn_kv_cache_release(caches[1]);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_story),
    HARNESS_TEST(test_story_out_of_order),
    HARNESS_TEST(test_long_split_unsplit),
    HARNESS_TEST(test_case_table_paged),
    HARNESS_TEST(test_keys_clamped_to_block),
    HARNESS_TEST(test_refusals_as_contiguous),
    HARNESS_END
};

static void register_tests(void) { harness_add_suite("decode_paged", tests); }

int main(void) { return harness_run("test_decode_paged", register_tests); }
