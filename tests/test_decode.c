/* test_decode.c -- the KV cache and attn_decode, for both kernel families:
 * the cached-versus-uncached generation test (a ragged batch: prompts
 * through attn_forward and into the cache, tokens one at a time, a
 * speculative block, its truncation and a re-append; every step equal to
 * the matching rows of one uncached attn_forward over the whole sequence
 * and to the CPU reference, for each storage type), split-KV results equal
 * to the unsplit ones, empty sequences, appends from any rows
 * (attn_kv_cache_append_rows: a left-padded and a packed prompt batch in
 * one call), and every refusal: capacity overflow, rows outside the block,
 * truncation below zero, mismatched heads, head dim or dtype, a decode
 * after a failed append.
 *
 * Build cost: one decode program per (family, dtype) at D=64 (splits are a
 * run-time argument) and two at D=40, the forward programs for the
 * uncached runs, two append programs and the copy kernel: 17 programs,
 * about 20 s of CPU from a cold cache (PoCL; 26-40 s wall on 2 shared
 * cores), a few seconds warm. */
#define _POSIX_C_SOURCE 200809L
#include "decode_world.h"
#include "attention/decode.h" /* the split heuristic */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the cached-versus-uncached generation test ---- */

static void generation(attn_context *ctx, harness_family fam, attn_dtype dt)
{
    const char *family = harness_family_name(fam);
    enum { T = 3, SPEC = 4, CAP = 100 };
    const int prompt[B] = {37, 1, 70};   /* ragged prompts */
    const int accept[B] = {4, 0, 2};     /* drafts each sequence keeps */
    const int last[B] = {1, 0, 2};       /* a ragged final step; sequence 1 idle */
    const uint64_t seed = harness_seed(4000 + 10 * (uint64_t)dt + (fam == HARNESS_TILED));
    char what[160];

    /* final: the sequences as they end up; draft: the same up to each
     * sequence's speculative block, then the drafts (rejected ones differ) */
    world fin, dr;
    int N = 0;
    for (int b = 0; b < B; b++) {
        fin.len[b] = prompt[b] + T + accept[b] + 1 + last[b];
        int nd = prompt[b] + T + SPEC;
        if (fin.len[b] > N) N = fin.len[b];
        if (nd > N) N = nd;
    }
    int fl[B];
    memcpy(fl, fin.len, sizeof fl);
    world_alloc(&fin, N);
    memcpy(fin.len, fl, sizeof fl);
    world_alloc(&dr, N);
    fill_world_inputs(&fin, dt, seed);
    memcpy(dr.q, fin.q, sizeof(float) * (size_t)B * HQ * N * D);
    memcpy(dr.k, fin.k, sizeof(float) * (size_t)B * HKV * N * D);
    memcpy(dr.v, fin.v, sizeof(float) * (size_t)B * HKV * N * D);
    int rej_from[B], rej_to[B];
    for (int b = 0; b < B; b++) {
        dr.len[b] = prompt[b] + T + SPEC;
        rej_from[b] = prompt[b] + T + accept[b];
        rej_to[b] = dr.len[b];
    }
    redraw(&dr, dt, rej_from, rej_to, seed + 100);
    world_results(ctx, &fin, dt, fam, seed);
    world_results(ctx, &dr, dt, fam, seed);

    attn_kv_cache *cache = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, B, HKV, D, CAP, dt, &cache), ATTN_SUCCESS);

    /* 1. the prompt through attn_forward (its rows equal the whole
     * sequence's), then its K/V (a BSHD buffer with gaps) into the cache */
    int maxp = 0;
    for (int b = 0; b < B; b++) maxp = prompt[b] > maxp ? prompt[b] : maxp;
    {
        world pw;
        world_alloc(&pw, maxp);
        memcpy(pw.len, prompt, sizeof prompt);
        for (int b = 0; b < B; b++)
            for (int s = 0; s < maxp; s++) {
                for (int h = 0; h < HQ; h++)
                    memcpy(pw.q + qidx(maxp, b, h, s), fin.q + qidx(N, b, h, s), D * sizeof(float));
                for (int h = 0; h < HKV; h++) {
                    memcpy(pw.k + kidx(maxp, b, h, s), fin.k + kidx(N, b, h, s), D * sizeof(float));
                    memcpy(pw.v + kidx(maxp, b, h, s), fin.v + kidx(N, b, h, s), D * sizeof(float));
                }
            }
        world_results(ctx, &pw, dt, fam, seed);
        double atol, rtol;
        attn_tolerance(dt, &atol, &rtol);
        int bad = 0;
        for (int b = 0; b < B; b++)
            for (int h = 0; h < HQ; h++)
                bad += harness_compare("prompt forward vs the whole sequence's rows",
                                       pw.dev + qidx(maxp, b, h, 0), fin.dev + qidx(N, b, h, 0),
                                       (size_t)prompt[b] * D, atol, rtol, seed);
        CU_ASSERT_EQUAL(bad, 0);
        const int zero[B] = {0, 0, 0};
        const harness_layout bshd = {HARNESS_BSHD, 11, 5, 2};
        append_from(ctx, cache, &pw, dt, zero, maxp, prompt, &bshd);
        world_free(&pw);
    }
    int lens[B];
    CU_ASSERT_EQUAL(attn_kv_cache_lengths(cache, lens), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(memcmp(lens, prompt, sizeof lens), 0);

    /* 2. T tokens one at a time; unsplit, split in 3, automatic */
    const int ones[B] = {1, 1, 1};
    const harness_layout step_layout = {HARNESS_BHSD, 2, 4, 1};
    for (int t = 0; t < T; t++) {
        int cur[B];
        attn_kv_cache_lengths(cache, cur);
        append_from(ctx, cache, &fin, dt, cur, 1, ones, &step_layout);
        const int splits = t == 0 ? 1 : t == 1 ? 3 : 0;
        /* the vector kernel's score reduction folds VEC_WIDTH keys at a
         * time: each width once */
        const int vec = t == 0 ? 4 : t == 1 ? 8 : 16;
        char text[128];
        if (fam == HARNESS_VECTOR)
            snprintf(text, sizeof text, "rows=4,splits=%d,vec=%d", splits, vec);
        else
            snprintf(text, sizeof text, "rows=4,splits=%d", splits);
        harness_use_family(ctx, fam, text);
        snprintf(what, sizeof what, "%s %s step %d (splits=%d, %s)", family, attn_dtype_name(dt), t,
                 splits, text);
        decode_check(ctx, cache, &fin, dt, 1, ones, what, seed, 0);
    }

    /* 3. a speculative block of SPEC drafts, all decoded at once */
    const int spec[B] = {SPEC, SPEC, SPEC};
    {
        int cur[B];
        attn_kv_cache_lengths(cache, cur);
        append_from(ctx, cache, &dr, dt, cur, SPEC, spec, &step_layout);
        use_params(ctx, fam, 4, 2);
        snprintf(what, sizeof what, "%s %s speculative block", family, attn_dtype_name(dt));
        decode_check(ctx, cache, &dr, dt, SPEC, spec, what, seed, 0);
    }

    /* 4. reject: keep accept[b] drafts; 5. re-append the corrected token
     * at the first rejected position (a new value there) */
    for (int b = 0; b < B; b++) {
        int cur[B];
        attn_kv_cache_lengths(cache, cur);
        CU_ASSERT_EQUAL(attn_kv_cache_truncate(cache, b, cur[b] - (SPEC - accept[b])),
                        ATTN_SUCCESS);
    }
    attn_kv_cache_lengths(cache, lens);
    for (int b = 0; b < B; b++) CU_ASSERT_EQUAL(lens[b], prompt[b] + T + accept[b]);
    {
        int cur[B];
        attn_kv_cache_lengths(cache, cur);
        append_from(ctx, cache, &fin, dt, cur, 1, ones, &step_layout);
        use_params(ctx, fam, 4, 3);
        snprintf(what, sizeof what, "%s %s after truncation and re-append", family,
                 attn_dtype_name(dt));
        decode_check(ctx, cache, &fin, dt, 1, ones, what, seed, 0);
    }

    /* 6. a ragged step: 1, 0 and 2 new tokens */
    float *out;
    {
        int cur[B];
        attn_kv_cache_lengths(cache, cur);
        append_from(ctx, cache, &fin, dt, cur, 2, last, &step_layout);
        use_params(ctx, fam, 4, 1);
        snprintf(what, sizeof what, "%s %s ragged step", family, attn_dtype_name(dt));
        out = decode_check(ctx, cache, &fin, dt, 2, last, what, seed, 1);
    }
    attn_kv_cache_lengths(cache, lens);
    CU_ASSERT_EQUAL(memcmp(lens, fin.len, sizeof lens), 0);

    /* the same step as attn_forward over the cache's own tensors */
    if (out) {
        int cur[B];
        attn_kv_cache_lengths(cache, cur);
        size_t nq = (size_t)B * HQ * 2 * D;
        float *hq = harness_xalloc(nq), *got = harness_xalloc(nq);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < HQ; h++)
                for (int i = 0; i < 2; i++) {
                    int pos = cur[b] - last[b] + i;
                    if (i < last[b])
                        memcpy(hq + qidx(2, b, h, i), fin.q + qidx(N, b, h, pos),
                               D * sizeof(float));
                    else
                        for (int d = 0; d < D; d++) hq[qidx(2, b, h, i) + d] = 0.0f;
                }
        attn_tensor tq, to, ck, cv;
        cl_mem mq = harness_upload(ctx, dt, hq, B, HQ, 2, D, NULL, &tq);
        cl_mem mo = harness_alloc(ctx, dt, B, HQ, 2, D, NULL, &to);
        CU_ASSERT_FATAL(mq && mo);
        CU_ASSERT_EQUAL(attn_kv_cache_tensors(cache, &ck, &cv), ATTN_SUCCESS);
        attn_problem p = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = 2,
                          .kv_len = CAP, .dtype = dt, .causal = 1, .scale = 0.0f};
        attn_lengths L = {NULL, last, NULL, cur};
        use_params(ctx, fam, 0, 0);
        attn_status st = attn_forward(ctx, &p, &tq, &ck, &cv, &to, &L, NULL, NULL);
        if (st != ATTN_SUCCESS) printf("\n  forward over the cache: %s\n", attn_last_error(ctx));
        CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
        CU_ASSERT_EQUAL(harness_download(ctx, dt, &to, B, HQ, 2, D, got), 0);
        double atol, rtol;
        attn_tolerance(dt, &atol, &rtol);
        CU_ASSERT_EQUAL(harness_compare("attn_forward over the cache tensors vs decode", got, out,
                                        nq, atol, rtol, seed), 0);
        clReleaseMemObject(mq), clReleaseMemObject(mo);
        free(hq), free(got), free(out);
    }
    attn_kv_cache_release(cache);
    world_free(&fin);
    world_free(&dr);
    harness_use_params(ctx, NULL);
}

static void test_cached_vs_uncached(void)
{
    attn_context *ctx = harness_context();
    for (int f = 0; f < NFAM; f++)
        for (int t = 0; t < NDT; t++) generation(ctx, families[f], dtypes[t]);
}

/* ---- split-KV results equal the unsplit ones ---- */

/* An f32 world of N positions with sequences of lens[b] tokens, its
 * uncached results, and a cache of capacity cap holding it. */
static attn_kv_cache *f32_world_in_cache(attn_context *ctx, world *w, int N, const int *lens,
                                         int cap, uint64_t seed)
{
    world_alloc(w, N);
    memcpy(w->len, lens, sizeof w->len);
    fill_world_inputs(w, ATTN_F32, seed);
    world_results(ctx, w, ATTN_F32, HARNESS_VECTOR, seed);
    return world_cache(ctx, w, ATTN_F32, cap, 0);
}

static void test_split_equals_unsplit(void)
{
    attn_context *ctx = harness_context();
    const uint64_t seed = harness_seed(4100);
    world w;
    const int lens[B] = {1500, 3, 777};
    attn_kv_cache *cache = f32_world_in_cache(ctx, &w, 1500, lens, 1500, seed);
    const int splits[] = {2, 5, 16, 0};
    for (int f = 0; f < NFAM; f++)
        for (int ql = 1; ql <= 3; ql += 2) {
            const int q_lens[B] = {ql, ql, ql};
            char what[128];
            use_params(ctx, families[f], 4, 1);
            snprintf(what, sizeof what, "%s q_len %d unsplit", harness_family_name(families[f]),
                     ql);
            float *base = decode_check(ctx, cache, &w, ATTN_F32, ql, q_lens, what, seed, 1);
            CU_ASSERT_PTR_NOT_NULL_FATAL(base);
            for (size_t s = 0; s < sizeof splits / sizeof splits[0]; s++) {
                use_params(ctx, families[f], 4, splits[s]);
                snprintf(what, sizeof what, "%s q_len %d splits=%d",
                         harness_family_name(families[f]), ql, splits[s]);
                float *got = decode_check(ctx, cache, &w, ATTN_F32, ql, q_lens, what, seed, 1);
                if (got)
                    CU_ASSERT_EQUAL(harness_compare(what, got, base, (size_t)B * HQ * ql * D,
                                                    1e-5, 1e-4, seed), 0);
                free(got);
            }
            free(base);
        }
    /* the plan reports the splits it chose */
    attn_plan_info info;
    use_params(ctx, HARNESS_VECTOR, 4, 5);
    attn_problem p = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = 1,
                      .kv_len = 0, .dtype = ATTN_F32, .causal = 1, .scale = 0.0f};
    CU_ASSERT_EQUAL(attn_decode_prepare(ctx, cache, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.family, "vector");
    CU_ASSERT_STRING_EQUAL(info.source, "override");
    CU_ASSERT_PTR_NOT_NULL(strstr(info.params, "splits=5"));
    harness_use_params(ctx, NULL);
    CU_ASSERT_EQUAL(attn_decode_prepare(ctx, cache, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "heuristic");
    CU_ASSERT_PTR_NOT_NULL(strstr(info.params, "splits="));
    /* the split partials are the context's workspace, not a hidden part of
     * the cache: counted, given back, and grown again by the next split
     * decode (decode alone: the vector family packs nothing for it) */
    use_params(ctx, HARNESS_VECTOR, 4, 2);
    const int q3[B] = {3, 3, 3};
    size_t held = 1;
    CU_ASSERT_EQUAL(attn_context_release_workspace(ctx), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_context_workspace_bytes(ctx, &held), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(held, 0);
    float *got = decode_check(ctx, cache, &w, ATTN_F32, 3, q3, "splits=2 after the workspace's "
                              "release", seed, 1);
    CU_ASSERT_PTR_NOT_NULL(got);
    free(got);
    const size_t rows = (size_t)B * HQ * 3 * 2;
    CU_ASSERT_EQUAL(attn_context_workspace_bytes(ctx, &held), ATTN_SUCCESS);
    CU_ASSERT(held >= rows * D * sizeof(float) + rows * sizeof(float));
    CU_ASSERT_EQUAL(attn_context_release_workspace(ctx), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_context_workspace_bytes(ctx, &held), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(held, 0);
    harness_use_params(ctx, NULL);
    attn_kv_cache_release(cache);
    world_free(&w);
}

/* The split heuristic: split only when the device would idle, and only
 * into chunks worth a combine. */
static void test_split_heuristic(void)
{
    const attn_device_limits cpu = {CL_DEVICE_TYPE_CPU, 65536, 4096, 2, 0, 0};
    const attn_device_limits gpu = {CL_DEVICE_TYPE_GPU, 49152, 1024, 132, 0, 0};
    const size_t f32_128 = 2 * 128 * 4;
    CU_ASSERT_EQUAL(attn_decode_auto_splits(&cpu, 32, 16384, f32_128), 1); /* DESIGN's set */
    CU_ASSERT_EQUAL(attn_decode_auto_splits(&cpu, 1, 16384, f32_128), 2);  /* one KV head */
    CU_ASSERT_EQUAL(attn_decode_auto_splits(&cpu, 1, 1024, f32_128), 1);   /* 1 MiB: not worth it */
    CU_ASSERT_EQUAL(attn_decode_auto_splits(&cpu, 2, 1 << 20, f32_128), 1);
    CU_ASSERT_EQUAL(attn_decode_auto_splits(&gpu, 32, 16384, f32_128), 17); /* 4 per CU */
    CU_ASSERT_EQUAL(attn_decode_auto_splits(&gpu, 32, 1000, f32_128), 1);  /* chunks >= 512 keys */
    CU_ASSERT_EQUAL(attn_decode_auto_splits(&gpu, 1, 1 << 20, f32_128), 64);
    CU_ASSERT_EQUAL(attn_decode_auto_splits(&gpu, 0, 0, f32_128), 1);
}

/* ---- empty sequences ---- */

static void test_empty_sequences(void)
{
    attn_context *ctx = harness_context();
    const uint64_t seed = harness_seed(4200);
    world w;
    const int lens[B] = {0, 40, 5};
    attn_kv_cache *cache = f32_world_in_cache(ctx, &w, 40, lens, 64, seed);
    /* sequence 0 is empty and asks nothing; sequence 2 holds tokens but
     * asks nothing this step; q_len 2 pads sequence 1's one query */
    const int q_lens[B] = {0, 1, 0};
    for (int f = 0; f < NFAM; f++)
        for (int splits = 1; splits <= 2; splits++) {
            char what[96];
            use_params(ctx, families[f], 4, splits);
            snprintf(what, sizeof what, "%s empty sequences, splits=%d",
                     harness_family_name(families[f]), splits);
            decode_check(ctx, cache, &w, ATTN_F32, 2, q_lens, what, seed, 0);
        }
    /* every sequence empty: all zeros and -inf */
    attn_kv_cache_reset(cache, -1);
    const int none[B] = {0, 0, 0};
    for (int f = 0; f < NFAM; f++) {
        use_params(ctx, families[f], 4, 0);
        decode_check(ctx, cache, &w, ATTN_F32, 1, none, "an empty batch", seed, 0);
    }
    harness_use_params(ctx, NULL);
    attn_kv_cache_release(cache);
    world_free(&w);
}

/* ---- the shared case table through the KV cache: MQA, a head dim that
 * is no multiple of 16, full (non-causal), in place; GQA with ragged caches
 * and pad queries in each storage type ---- */

static void test_mqa_odd_dim(void)
{
    harness_run_group("decode/mqa_odd_dim", harness_decode_entry, "attn_decode");
}

static void test_case_table(void)
{
    harness_run_group("decode/table", harness_decode_entry, "attn_decode");
    /* the mma decode kernel reading Q at each k-step (qregs=0), split and not */
    harness_run_group_as("decode/table", harness_decode_entry, "attn_decode", HARNESS_MMA,
                         "warps=1,qregs=0,splits=2");
    harness_run_group_as("decode/table", harness_decode_entry, "attn_decode", HARNESS_MMA,
                         "warps=2,keys=16,mtiles=2,qregs=0,splits=1");
}

/* ---- refusals ---- */

static int says(attn_context *ctx, const char *word)
{
    const char *msg = attn_last_error(ctx);
    if (strstr(msg, word)) return 1;
    printf("\n  expected \"%s\" in the message: %s\n", word, msg);
    return 0;
}

/* Every element of the cache K rows [from, to) of sequence b, head 0. */
static void read_rows(attn_context *ctx, attn_kv_cache *cache, int cap, float *all)
{
    attn_tensor tk;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_tensors(cache, &tk, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(harness_download(ctx, ATTN_F32, &tk, 2, 1, cap, 16, all), 0);
}

static void test_capacity_and_positions(void)
{
    attn_context *ctx = harness_context();
    enum { CAP = 40, DD = 16 };
    attn_kv_cache *cache = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, 2, 1, DD, CAP, ATTN_F32, &cache), ATTN_SUCCESS);
    /* token position j of sequence b carries the value 1000 b + j (+ d/100) */
    float *blk = harness_xalloc((size_t)2 * 30 * DD), *all = harness_xalloc((size_t)2 * CAP * DD);
    attn_tensor tk, tv;
    int cur[2] = {0, 0};
#define FILL(n, tag)                                                                               \
    for (int b = 0; b < 2; b++)                                                                    \
        for (int r = 0; r < (n); r++)                                                              \
            for (int d = 0; d < DD; d++)                                                           \
                blk[((size_t)b * (n) + r) * DD + d] = (tag) + 1000.0f * b + cur[b] + r + d / 100.0f;
    FILL(30, 0.0f);
    cl_mem mk = harness_upload(ctx, ATTN_F32, blk, 2, 1, 30, DD, NULL, &tk);
    cl_mem mv = harness_upload(ctx, ATTN_F32, blk, 2, 1, 30, DD, NULL, &tv);
    CU_ASSERT_FATAL(mk && mv);
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, &tk, &tv, 30, NULL, NULL), ATTN_SUCCESS);
    cur[0] = cur[1] = 30;

    /* overflow: sequence 1 would pass the capacity; nothing is written */
    int over[2] = {10, 11};
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, &tk, &tv, 30, over, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "sequence 1"));
    CU_ASSERT(says(ctx, "capacity"));
    int lens[2];
    attn_kv_cache_lengths(cache, lens);
    CU_ASSERT(lens[0] == 30 && lens[1] == 30);
    read_rows(ctx, cache, CAP, all);
    for (int b = 0; b < 2; b++)
        for (int j = 30; j < CAP; j++) CU_ASSERT_EQUAL(all[((size_t)b * CAP + j) * DD], 0.0f);
    int bad_count[2] = {-1, 0}, too_many[2] = {31, 0};
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, &tk, &tv, 30, bad_count, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "counts[0]"));
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, &tk, &tv, 30, too_many, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, &tk, &tv, 31, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT); /* the block tensor is too small */
    CU_ASSERT(says(ctx, "k"));
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, NULL, &tv, 1, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    /* a count of zero for everything needs no tensors at all */
    int nothing[2] = {0, 0};
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, NULL, NULL, 0, nothing, NULL), ATTN_SUCCESS);

    /* truncation: below zero, growing, a bad sequence; then a real one */
    CU_ASSERT_EQUAL(attn_kv_cache_truncate(cache, 0, -1), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "below zero"));
    CU_ASSERT_EQUAL(attn_kv_cache_truncate(cache, 0, 31), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_kv_cache_truncate(cache, 2, 0), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_kv_cache_truncate(cache, -1, 0), ATTN_ERROR_INVALID_ARGUMENT);
    attn_kv_cache_lengths(cache, lens);
    CU_ASSERT(lens[0] == 30 && lens[1] == 30);
    CU_ASSERT_EQUAL(attn_kv_cache_truncate(cache, 0, 12), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_kv_cache_truncate(cache, 1, 30), ATTN_SUCCESS); /* a no-op */
    cur[0] = 12;
    /* positions stay absolute: the re-append lands at 12 for sequence 0 and
     * 30 for sequence 1, filling sequence 1 exactly to the capacity */
    clReleaseMemObject(mk), clReleaseMemObject(mv);
    FILL(10, 0.5f);
    mk = harness_upload(ctx, ATTN_F32, blk, 2, 1, 10, DD, NULL, &tk);
    mv = harness_upload(ctx, ATTN_F32, blk, 2, 1, 10, DD, NULL, &tv);
    CU_ASSERT_FATAL(mk && mv);
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, &tk, &tv, 10, NULL, NULL), ATTN_SUCCESS);
    attn_kv_cache_lengths(cache, lens);
    CU_ASSERT(lens[0] == 22 && lens[1] == CAP);
    read_rows(ctx, cache, CAP, all);
    /* the first wrong element ends all three loops: one line, no reads past lens[] or all[] */
    int drift = 0;
    for (int b = 0; b < 2 && !drift; b++)
        for (int j = 0; j < lens[b] && !drift; j++) {
            const float tag = (b == 0 && j >= 12) || (b == 1 && j >= 30) ? 0.5f : 0.0f;
            for (int d = 0; d < DD && !drift; d++)
                if (all[((size_t)b * CAP + j) * DD + d] != tag + 1000.0f * b + j + d / 100.0f) {
                    printf("\n  cache row %d of sequence %d holds %g, not token %d's value\n", j,
                           b, (double)all[((size_t)b * CAP + j) * DD + d], j);
                    drift = 1;
                }
        }
    if (drift) CU_FAIL("position drift");
    /* full: one more token for sequence 1 is refused, naming it */
    int one[2] = {0, 1};
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, &tk, &tv, 10, one, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "sequence 1"));
    /* reset */
    CU_ASSERT_EQUAL(attn_kv_cache_reset(cache, 2), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_kv_cache_reset(cache, 1), ATTN_SUCCESS);
    attn_kv_cache_lengths(cache, lens);
    CU_ASSERT(lens[0] == 22 && lens[1] == 0);
    CU_ASSERT_EQUAL(attn_kv_cache_reset(cache, -1), ATTN_SUCCESS);
    attn_kv_cache_lengths(cache, lens);
    CU_ASSERT(lens[0] == 0 && lens[1] == 0);
    CU_ASSERT_EQUAL(attn_kv_cache_lengths(cache, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    #undef FILL
    clReleaseMemObject(mk), clReleaseMemObject(mv);
    attn_kv_cache_release(cache);
    attn_kv_cache_release(NULL);
    free(blk), free(all);
}

/* After a failed append the cache does not hold this step's keys: a decode
 * then must be an error (it would attend for the previous token), until an
 * append succeeds. */
static void test_decode_after_failed_append(void)
{
    attn_context *ctx = harness_context();
    enum { CAP = 4, DD = 16, QH = 2 };
    attn_kv_cache *cache = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, 1, 1, DD, CAP, ATTN_F32, &cache), ATTN_SUCCESS);
    float *kv = harness_xalloc((size_t)CAP * DD), *qh = harness_xalloc((size_t)QH * DD);
    for (int i = 0; i < CAP * DD; i++) kv[i] = (float)(i % 7) / 7.0f;
    for (int i = 0; i < QH * DD; i++) qh[i] = 0.25f;
    attn_tensor tk, tv, tk1, tv1, tq, to;
    cl_mem mk = harness_upload(ctx, ATTN_F32, kv, 1, 1, CAP - 1, DD, NULL, &tk);
    cl_mem mv = harness_upload(ctx, ATTN_F32, kv, 1, 1, CAP - 1, DD, NULL, &tv);
    cl_mem mk1 = harness_upload(ctx, ATTN_F32, kv, 1, 1, 1, DD, NULL, &tk1);
    cl_mem mv1 = harness_upload(ctx, ATTN_F32, kv, 1, 1, 1, DD, NULL, &tv1);
    cl_mem mq = harness_upload(ctx, ATTN_F32, qh, 1, QH, 1, DD, NULL, &tq);
    cl_mem mo = harness_alloc(ctx, ATTN_F32, 1, QH, 1, DD, NULL, &to);
    CU_ASSERT_FATAL(mk && mv && mk1 && mv1 && mq && mo);
    const attn_problem p = {.batch = 1, .q_heads = QH, .kv_heads = 1, .head_dim = DD, .q_len = 1,
                            .kv_len = 1, .dtype = ATTN_F32, .causal = 1, .scale = 0.0f};
    harness_use_params(ctx, NULL);

    /* three prompt tokens, then a step that fits: decode works */
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, &tk, &tv, CAP - 1, NULL, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, &tk1, &tv1, 1, NULL, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &p, &tq, &to, NULL, NULL, NULL), ATTN_SUCCESS);
    /* the next step's append passes the capacity and fails: its decode must too */
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, &tk1, &tv1, 1, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &p, &tq, &to, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "attn_decode: "));
    CU_ASSERT(says(ctx, "this step's keys"));
    CU_ASSERT(says(ctx, "capacity")); /* the append's own reason is repeated */
    /* and stays an error (nothing changed) until an append succeeds */
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &p, &tq, &to, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_kv_cache_truncate(cache, 0, CAP - 1), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &p, &tq, &to, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, &tk1, &tv1, 1, NULL, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &p, &tq, &to, NULL, NULL, NULL), ATTN_SUCCESS);
    /* any failed append counts, a bad argument as well as the capacity */
    CU_ASSERT_EQUAL(attn_kv_cache_truncate(cache, 0, CAP - 1), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, NULL, &tv1, 1, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &p, &tq, &to, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "this step's keys"));
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, &tk1, &tv1, 1, NULL, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &p, &tq, &to, NULL, NULL, NULL), ATTN_SUCCESS);
    clFinish(attn_context_queue(ctx));

    cl_mem mems[] = {mk, mv, mk1, mv1, mq, mo};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++) clReleaseMemObject(mems[i]);
    attn_kv_cache_release(cache);
    free(kv), free(qh);
}

/* ---- appends from any rows (attn_kv_cache_append_rows) ---- */

/* A left-padded prompt batch (sequence b in the last prompt[b] of P rows,
 * NaN above them) into the cache in ONE call; then the whole prompt decoded
 * at once and T tokens one at a time, each step equal to the reference and
 * to one uncached attn_forward over the whole sequences. */
static void left_padded(attn_context *ctx, harness_family fam, attn_dtype dt,
                        const harness_layout *layout, const char *lname)
{
    enum { P = 9, T = 2 };
    const int prompt[B] = {5, 1, 9}, zero[B] = {0, 0, 0}, ones[B] = {1, 1, 1};
    const uint64_t seed = harness_seed(4400 + 10 * (uint64_t)dt + (uint64_t)layout->order);
    world w;
    world_alloc(&w, P + T);
    for (int b = 0; b < B; b++) w.len[b] = prompt[b] + T;
    fill_world_inputs(&w, dt, seed);
    world_results(ctx, &w, dt, fam, seed);
    attn_kv_cache *cache = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, B, HKV, D, P + T, dt, &cache), ATTN_SUCCESS);
    int starts[B], lens[B];
    for (int b = 0; b < B; b++) starts[b] = P - prompt[b];
    append_rows_from(ctx, cache, &w, dt, zero, P, starts, prompt, layout);
    CU_ASSERT_EQUAL(attn_kv_cache_lengths(cache, lens), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(memcmp(lens, prompt, sizeof lens), 0);
    char what[160];
    use_params(ctx, fam, 4, 0);
    snprintf(what, sizeof what, "%s %s %s left-padded prompt, all its rows",
             harness_family_name(fam), attn_dtype_name(dt), lname);
    decode_check(ctx, cache, &w, dt, P, prompt, what, seed, 0);
    for (int t = 0; t < T; t++) {
        int cur[B];
        attn_kv_cache_lengths(cache, cur);
        append_from(ctx, cache, &w, dt, cur, 1, ones, layout);
        snprintf(what, sizeof what, "%s %s %s left-padded prompt, step %d",
                 harness_family_name(fam), attn_dtype_name(dt), lname, t);
        decode_check(ctx, cache, &w, dt, 1, ones, what, seed, 0);
    }
    attn_kv_cache_release(cache);
    world_free(&w);
    harness_use_params(ctx, NULL);
}

static void test_append_left_padded(void)
{
    attn_context *ctx = harness_context();
    const harness_layout layouts[2] = {{HARNESS_BHSD, 5, 3, 0}, {HARNESS_BSHD, 7, 2, 0}};
    const char *names[2] = {"BHSD", "BSHD"};
    /* the families take turns: each meets every dtype and both layouts */
    for (int t = 0; t < NDT; t++)
        for (int l = 0; l < 2; l++)
            left_padded(ctx, families[(t + l) % NFAM], dtypes[t], &layouts[l], names[l]);
}

/* Every byte of the cache's K and V buffers, padding included, after its
 * lengths (n: the count). */
static unsigned char *cache_bytes(attn_context *ctx, const attn_kv_cache *cache, size_t *n)
{
    attn_tensor tk, tv;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_tensors(cache, &tk, &tv), ATTN_SUCCESS);
    size_t bytes = 0;
    CU_ASSERT_EQUAL_FATAL(clGetMemObjectInfo(tk.buffer, CL_MEM_SIZE, sizeof bytes, &bytes, NULL),
                          CL_SUCCESS);
    int lens[B];
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_lengths(cache, lens), ATTN_SUCCESS);
    unsigned char *all = malloc(sizeof lens + 2 * bytes);
    CU_ASSERT_FATAL(all != NULL);
    memcpy(all, lens, sizeof lens);
    const cl_mem bufs[2] = {tk.buffer, tv.buffer};
    for (int i = 0; i < 2; i++)
        CU_ASSERT_EQUAL_FATAL(clEnqueueReadBuffer(attn_context_queue(ctx), bufs[i], CL_TRUE, 0,
                                                  bytes, all + sizeof lens + i * bytes, 0, NULL,
                                                  NULL),
                              CL_SUCCESS);
    *n = sizeof lens + 2 * bytes;
    return all;
}

/* Whether caches a and b hold the same lengths and bytes. */
static int same_cache(attn_context *ctx, const attn_kv_cache *a, const attn_kv_cache *b,
                      const char *what)
{
    size_t na, nb;
    unsigned char *x = cache_bytes(ctx, a, &na), *y = cache_bytes(ctx, b, &nb);
    const int same = na == nb && memcmp(x, y, na) == 0;
    if (!same) printf("\n  %s: the caches differ\n", what);
    free(x), free(y);
    return same;
}

/* A packed prompt (the sequences along one token axis of a BSHD tensor with
 * stride_batch 0, sequence b from row starts[b]) appended in one call holds
 * each sequence's rows at its positions 0.., bit for bit what one
 * attn_kv_cache_append per sequence with a moved offset leaves; and
 * attn_kv_cache_append is attn_kv_cache_append_rows with starts NULL (or
 * all 0), bit for bit. */
static void test_append_rows_packed(void)
{
    attn_context *ctx = harness_context();
    enum { TOTAL = 15, CAP = 12 };
    const int starts[B] = {0, 5, 6}, counts[B] = {5, 1, 9};
    const int zeros[B] = {0, 0, 0}, more[B] = {2, 0, 1};
    const harness_layout packed = {HARNESS_BSHD, 3, 1, 0};
    const size_t n = (size_t)HKV * TOTAL * D;
    float *hk = harness_xalloc(n), *hv = harness_xalloc(n);
    float *got = harness_xalloc((size_t)B * HKV * CAP * D);
    for (int t = 0; t < NDT; t++) {
        const attn_dtype dt = dtypes[t];
        const uint64_t seed = harness_seed(4500 + (uint64_t)t);
        harness_fill_normal(hk, n, seed, 0.0f, 1.0f);
        harness_fill_normal(hv, n, seed + 1, 0.5f, 2.0f);
        harness_round(dt, hk, n);
        harness_round(dt, hv, n);
        attn_tensor tk, tv;
        cl_mem mk = harness_upload(ctx, dt, hk, 1, HKV, TOTAL, D, &packed, &tk);
        cl_mem mv = harness_upload(ctx, dt, hv, 1, HKV, TOTAL, D, &packed, &tv);
        CU_ASSERT_FATAL(mk && mv);
        tk.stride_batch = tv.stride_batch = 0; /* every sequence reads the one axis */
        attn_kv_cache *c[4] = {NULL, NULL, NULL, NULL};
        for (int i = 0; i < 4; i++)
            CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, B, HKV, D, CAP, dt, &c[i]),
                                  ATTN_SUCCESS);
        /* c[0]: one call; c[1]: one append per sequence */
        cl_event ev = NULL;
        attn_status st = attn_kv_cache_append_rows(c[0], &tk, &tv, TOTAL, starts, counts, &ev);
        if (st != ATTN_SUCCESS) printf("\n  append_rows: %s\n", attn_last_error(ctx));
        CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
        CU_ASSERT_PTR_NOT_NULL(ev);
        if (ev) clReleaseEvent(ev);
        for (int b = 0; b < B; b++) {
            int only[B] = {0, 0, 0};
            only[b] = counts[b];
            attn_tensor sk = tk, sv = tv;
            sk.offset += (size_t)starts[b] * tk.stride_seq;
            sv.offset += (size_t)starts[b] * tv.stride_seq;
            CU_ASSERT_EQUAL(attn_kv_cache_append(c[1], &sk, &sv, counts[b], only, NULL),
                            ATTN_SUCCESS);
        }
        CU_ASSERT(same_cache(ctx, c[0], c[1], "packed: one call vs one per sequence"));
        /* and the contents are the packed rows, at positions 0.. */
        attn_tensor ck, cv;
        CU_ASSERT_EQUAL(attn_kv_cache_tensors(c[0], &ck, &cv), ATTN_SUCCESS);
        const attn_tensor *ct[2] = {&ck, &cv};
        const float *src[2] = {hk, hv};
        int wrong = 0;
        for (int i = 0; i < 2; i++) {
            CU_ASSERT_EQUAL_FATAL(harness_download(ctx, dt, ct[i], B, HKV, CAP, D, got), 0);
            for (int b = 0; b < B; b++)
                for (int h = 0; h < HKV; h++)
                    wrong += memcmp(got + kidx(CAP, b, h, 0), src[i] + kidx(TOTAL, 0, h, starts[b]),
                                    (size_t)counts[b] * D * sizeof(float)) != 0;
        }
        if (wrong) printf("\n  packed %s: %d sequences' rows are not the packed rows\n",
                          attn_dtype_name(dt), wrong);
        CU_ASSERT_EQUAL(wrong, 0);

        /* c[2] the old call, c[3] the new one with starts NULL, then all 0 */
        attn_tensor bk = tk, bv = tv;
        bk.stride_batch = bv.stride_batch = 0;
        CU_ASSERT_EQUAL(attn_kv_cache_append(c[2], &bk, &bv, 9, counts, NULL), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(attn_kv_cache_append_rows(c[3], &bk, &bv, 9, NULL, counts, NULL),
                        ATTN_SUCCESS);
        CU_ASSERT_EQUAL(attn_kv_cache_append(c[2], &bk, &bv, 2, more, NULL), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(attn_kv_cache_append_rows(c[3], &bk, &bv, 2, zeros, more, NULL),
                        ATTN_SUCCESS);
        CU_ASSERT(same_cache(ctx, c[2], c[3], "append vs append_rows with starts NULL / 0"));
        for (int i = 0; i < 4; i++) attn_kv_cache_release(c[i]);
        clReleaseMemObject(mk), clReleaseMemObject(mv);
    }
    free(hk), free(hv), free(got);
}

/* Rows outside the block, a start below zero, counts past the capacity:
 * refused naming the sequence and the argument, nothing enqueued or
 * changed, and attn_decode refuses the cache until an append of rows
 * succeeds. */
static void test_append_rows_refusals(void)
{
    attn_context *ctx = harness_context();
    enum { CAP = 5, DD = 16, QH = 2, BL = 4 };
    attn_kv_cache *cache = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, B, 1, DD, CAP, ATTN_F32, &cache),
                          ATTN_SUCCESS);
    float *blk = harness_xalloc((size_t)B * BL * DD), *qh = harness_xalloc((size_t)B * QH * DD);
    for (int i = 0; i < B * BL * DD; i++) blk[i] = (float)(i % 11) / 11.0f;
    for (int i = 0; i < B * QH * DD; i++) qh[i] = 0.25f;
    attn_tensor tk, tq, to;
    cl_mem mk = harness_upload(ctx, ATTN_F32, blk, B, 1, BL, DD, NULL, &tk);
    cl_mem mq = harness_upload(ctx, ATTN_F32, qh, B, QH, 1, DD, NULL, &tq);
    cl_mem mo = harness_alloc(ctx, ATTN_F32, B, QH, 1, DD, NULL, &to);
    CU_ASSERT_FATAL(mk && mq && mo);
    const attn_problem p = {.batch = B, .q_heads = QH, .kv_heads = 1, .head_dim = DD, .q_len = 1,
                            .kv_len = 1, .dtype = ATTN_F32, .causal = 1, .scale = 0.0f};
    harness_use_params(ctx, NULL);
    const int two[B] = {2, 2, 2};
    CU_ASSERT_EQUAL(attn_kv_cache_append_rows(cache, &tk, &tk, BL, two, two, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &p, &tq, &to, NULL, NULL, NULL), ATTN_SUCCESS);
    size_t n0;
    unsigned char *before = cache_bytes(ctx, cache, &n0);
    static const struct {
        int starts[B], counts[B], null_counts;
        const char *seq, *arg;
    } cases[] = {
        {{0, -1, 0}, {1, 1, 1}, 0, "sequence 1", "starts[1] = -1"},
        {{0, 0, 2}, {1, 1, 3}, 0, "sequence 2", "starts[2] + counts[2] = 2 + 3"},
        {{0, 5, 0}, {1, 0, 1}, 0, "sequence 1", "starts[1] + counts[1] = 5 + 0"},
        {{0, 1, 0}, {0}, 1, "sequence 1", "counts is NULL"},
        {{0, 0, 0}, {1, 4, 1}, 0, "sequence 1", "capacity"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cl_event ev = (cl_event)1;
        attn_status st = attn_kv_cache_append_rows(cache, &tk, &tk, BL, cases[i].starts,
                                                   cases[i].null_counts ? NULL : cases[i].counts,
                                                   &ev);
        CU_ASSERT_EQUAL(st, ATTN_ERROR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NULL(ev);
        CU_ASSERT(says(ctx, "attn_kv_cache_append_rows: "));
        CU_ASSERT(says(ctx, cases[i].seq));
        CU_ASSERT(says(ctx, cases[i].arg));
        /* nothing changed, and the step's keys are missing */
        size_t n1;
        unsigned char *after = cache_bytes(ctx, cache, &n1);
        CU_ASSERT(n1 == n0 && memcmp(before, after, n0) == 0);
        free(after);
        CU_ASSERT_EQUAL(attn_decode(ctx, cache, &p, &tq, &to, NULL, NULL, NULL),
                        ATTN_ERROR_INVALID_ARGUMENT);
        CU_ASSERT(says(ctx, "this step's keys"));
        CU_ASSERT(says(ctx, cases[i].arg)); /* the append's reason, repeated */
    }
    /* an append of no rows (k and v NULL, not even read) succeeds but
     * cannot put the step back: the refusal stays */
    const int none[B] = {0, 0, 0};
    CU_ASSERT_EQUAL(attn_kv_cache_append_rows(cache, NULL, NULL, BL, none, none, NULL),
                    ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &p, &tq, &to, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "this step's keys"));
    /* a good append lifts the refusal */
    const int s1[B] = {3, 0, 1}, one[B] = {1, 1, 1};
    CU_ASSERT_EQUAL(attn_kv_cache_append_rows(cache, &tk, &tk, BL, s1, one, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &p, &tq, &to, NULL, NULL, NULL), ATTN_SUCCESS);
    int lens[B];
    attn_kv_cache_lengths(cache, lens);
    CU_ASSERT(lens[0] == 3 && lens[1] == 3 && lens[2] == 3);
    clFinish(attn_context_queue(ctx));
    clReleaseMemObject(mk), clReleaseMemObject(mq), clReleaseMemObject(mo);
    attn_kv_cache_release(cache);
    free(blk), free(qh), free(before);
}

static void test_mismatches(void)
{
    attn_context *ctx = harness_context();
    attn_kv_cache *cache = NULL;
    /* creation */
    CU_ASSERT_EQUAL(attn_kv_cache_create(ctx, 0, 2, 64, 10, ATTN_F32, &cache),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "batch"));
    CU_ASSERT_EQUAL(attn_kv_cache_create(ctx, 2, 2, 257, 10, ATTN_F32, &cache),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "head_dim"));
    CU_ASSERT_EQUAL(attn_kv_cache_create(ctx, 2, 2, 64, 0, ATTN_F32, &cache),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "capacity"));
    CU_ASSERT_EQUAL(attn_kv_cache_create(ctx, 2, 2, 64, 10, (attn_dtype)7, &cache),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_kv_cache_create(ctx, 2, 2, 64, 10, ATTN_F32, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_kv_cache_create(ctx, 2, 0x7fffffff, 256, 1 << 30, ATTN_F32, &cache),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(cache);

    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, 2, 2, 64, 10, ATTN_F16, &cache), ATTN_SUCCESS);
    /* give each sequence 3 tokens */
    attn_tensor tk, tv;
    cl_mem mk = harness_alloc(ctx, ATTN_F16, 2, 2, 3, 64, NULL, &tk);
    cl_mem mv = harness_alloc(ctx, ATTN_F16, 2, 2, 3, 64, NULL, &tv);
    CU_ASSERT_FATAL(mk && mv);
    CU_ASSERT_EQUAL(attn_kv_cache_append(cache, &tk, &tv, 3, NULL, NULL), ATTN_SUCCESS);
    attn_tensor tq, to;
    cl_mem mq = harness_alloc(ctx, ATTN_F16, 2, 8, 4, 64, NULL, &tq);
    cl_mem mo = harness_alloc(ctx, ATTN_F16, 2, 8, 4, 64, NULL, &to);
    CU_ASSERT_FATAL(mq && mo);
    const attn_problem good = {.batch = 2, .q_heads = 8, .kv_heads = 2, .head_dim = 64, .q_len = 1,
                               .kv_len = 0, .dtype = ATTN_F16, .causal = 1, .scale = 0.0f};
    attn_problem p;
    struct { const char *field, *word; } cases[] = {
        {"kv_heads", "kv_heads"}, {"head_dim", "head_dim"}, {"dtype", "dtype"},
        {"batch", "batch"}, {"q_heads", "q_heads"}, {"q_len0", "q_len"}, {"q_len65", "q_len"},
        {"q_len4", "append"}, {"scale", "scale"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        p = good;
        const char *f = cases[i].field;
        if (!strcmp(f, "kv_heads")) p.kv_heads = 4;
        else if (!strcmp(f, "head_dim")) p.head_dim = 32;
        else if (!strcmp(f, "dtype")) p.dtype = ATTN_BF16;
        else if (!strcmp(f, "batch")) p.batch = 1;
        else if (!strcmp(f, "q_heads")) p.q_heads = 7;
        else if (!strcmp(f, "q_len0")) p.q_len = 0;
        else if (!strcmp(f, "q_len65")) p.q_len = ATTN_DECODE_MAX_Q_LEN + 1;
        else if (!strcmp(f, "q_len4")) p.q_len = 4; /* more queries than tokens held */
        else if (!strcmp(f, "scale")) p.scale = NAN;
        attn_status st = attn_decode(ctx, cache, &p, &tq, &to, NULL, NULL, NULL);
        if (st != ATTN_ERROR_INVALID_ARGUMENT) printf("\n  case %s: %s\n", f, attn_status_name(st));
        CU_ASSERT_EQUAL(st, ATTN_ERROR_INVALID_ARGUMENT);
        CU_ASSERT(says(ctx, cases[i].word));
    }
    /* the message names both sides */
    p = good;
    p.dtype = ATTN_F32;
    attn_decode(ctx, cache, &p, &tq, &to, NULL, NULL, NULL);
    CU_ASSERT(says(ctx, "f32") && says(ctx, "f16"));
    p = good;
    p.kv_heads = 1;
    attn_decode(ctx, cache, &p, &tq, &to, NULL, NULL, NULL);
    CU_ASSERT(says(ctx, "1") && says(ctx, "2 KV heads"));
    /* per-sequence lengths: more than q_len, or more than held */
    int ql[2] = {2, 0};
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &good, &tq, &to, ql, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "q_lens[0]"));
    /* q and out: NULL, too small, out overlapping the cache */
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &good, NULL, &to, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "q"));
    attn_tensor ck;
    attn_kv_cache_tensors(cache, &ck, NULL);
    attn_tensor bad_out = ck;
    bad_out.stride_head = ck.stride_seq; /* 8 heads of one row each inside K */
    bad_out.stride_batch = 8 * ck.stride_seq;
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &good, &tq, &bad_out, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "out"));
    cl_mem small = harness_float_buffer(ctx, 3);
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &good, &tq, &to, NULL, small, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "lse"));
    CU_ASSERT_EQUAL(attn_decode(ctx, NULL, &good, &tq, &to, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "cache"));
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, NULL, &tq, &to, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    /* bad parameters for decode are refused, naming them: legal alone but
     * not together by the call, naming the override; out of range by the
     * setter, naming the field */
    CU_ASSERT_EQUAL(harness_use_params(ctx, "family=vector,keys=8,vec=16"), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_decode(ctx, cache, &good, &tq, &to, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "attn_context_set_params"));
    CU_ASSERT_EQUAL(harness_use_params(ctx, "splits=999"), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(says(ctx, "splits"));
    harness_use_params(ctx, NULL);
    /* another context's cache */
    attn_context *other = NULL;
    if (attn_context_create(getenv("ATTN_TEST_DEVICE"), &other) == ATTN_SUCCESS) {
        CU_ASSERT_EQUAL(attn_decode(other, cache, &good, &tq, &to, NULL, NULL, NULL),
                        ATTN_ERROR_INVALID_ARGUMENT);
        CU_ASSERT(says(other, "another attn_context"));
        attn_context_release(other);
    }
    CU_ASSERT_EQUAL(attn_decode(NULL, cache, &good, &tq, &to, NULL, NULL, NULL),
                    ATTN_ERROR_INVALID_ARGUMENT);
    /* nothing above changed the cache */
    int lens[2];
    attn_kv_cache_lengths(cache, lens);
    CU_ASSERT(lens[0] == 3 && lens[1] == 3);
    clReleaseMemObject(mk), clReleaseMemObject(mv), clReleaseMemObject(mq), clReleaseMemObject(mo);
    clReleaseMemObject(small);
    attn_kv_cache_release(cache);
}

/* ---- check mode, the default plan, and the copy bandwidth ---- */

static void test_check_mode_and_defaults(void)
{
    attn_context *ctx = harness_context();
    const uint64_t seed = harness_seed(4300);
    world w;
    const int lens[B] = {50, 20, 33};
    attn_kv_cache *cache = f32_world_in_cache(ctx, &w, 50, lens, 50, seed);
    const int ones[B] = {1, 1, 1};
    harness_use_params(ctx, NULL); /* the device's own plan */
    attn_context_set_check(ctx, 1);
    decode_check(ctx, cache, &w, ATTN_F32, 1, ones, "check mode, default plan", seed, 0);
    attn_context_set_check(ctx, 0);
    double gbps = 0;
    CU_ASSERT_EQUAL(attn_device_copy_gbps(ctx, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(attn_device_copy_gbps(ctx, &gbps), ATTN_SUCCESS);
    CU_ASSERT(gbps > 0.1);
    printf("\n  copy bandwidth %.1f GB/s\n", gbps);
    attn_kv_cache_release(cache);
    world_free(&w);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_cached_vs_uncached),
    HARNESS_TEST(test_split_equals_unsplit),
    HARNESS_TEST(test_split_heuristic),
    HARNESS_TEST(test_empty_sequences),
    HARNESS_TEST(test_mqa_odd_dim),
    HARNESS_TEST(test_case_table),
    HARNESS_TEST(test_capacity_and_positions),
    HARNESS_TEST(test_decode_after_failed_append),
    HARNESS_TEST(test_append_left_padded),
    HARNESS_TEST(test_append_rows_packed),
    HARNESS_TEST(test_append_rows_refusals),
    HARNESS_TEST(test_mismatches),
    HARNESS_TEST(test_check_mode_and_defaults),
    HARNESS_END
};

static void register_tests(void) { harness_add_suite("decode", tests); }

int main(void) { return harness_run("test_decode", register_tests); }
