/* decode_world.c -- the KV cache suites' shared helpers (decode_world.h):
 * a world of sequences with its uncached results, appends from it, and a
 * decode step checked against the reference and attn_forward. */
#define _POSIX_C_SOURCE 200809L
#include "decode_world.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void use_params(attn_context *ctx, harness_family family, int rows, int splits)
{
    char text[64];
    if (family == HARNESS_MMA) snprintf(text, sizeof text, "warps=1,splits=%d", splits);
    else snprintf(text, sizeof text, "rows=%d,splits=%d", rows, splits);
    harness_use_family(ctx, family, rows ? text : NULL);
}

/* ---- one world of sequences: host data and its uncached results ---- */

void world_alloc(world *w, int N)
{
    memset(w, 0, sizeof *w);
    w->N = N;
    size_t nq = (size_t)B * HQ * N * D, nk = (size_t)B * HKV * N * D;
    w->q = harness_xalloc(nq);
    w->k = harness_xalloc(nk);
    w->v = harness_xalloc(nk);
    w->ref = harness_xalloc(nq);
    w->dev = harness_xalloc(nq);
    w->ref_lse = harness_xalloc((size_t)B * HQ * N);
    w->dev_lse = harness_xalloc((size_t)B * HQ * N);
}

void world_free(world *w)
{
    free(w->q), free(w->k), free(w->v), free(w->ref), free(w->dev), free(w->ref_lse),
        free(w->dev_lse);
}

void world_results(attn_context *ctx, world *w, attn_dtype dt, harness_family fam,
                   uint64_t seed)
{
    attn_problem p = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = w->N,
                      .kv_len = w->N, .dtype = dt, .causal = 1, .scale = 0.0f};
    attn_lengths L = {NULL, w->len, NULL, w->len};
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, w->q, w->k, w->v, w->ref, &L, w->ref_lse),
                          ATTN_SUCCESS);
    attn_tensor tq, tk, tv, to;
    cl_mem bq = harness_upload(ctx, dt, w->q, B, HQ, w->N, D, NULL, &tq);
    cl_mem bk = harness_upload(ctx, dt, w->k, B, HKV, w->N, D, NULL, &tk);
    cl_mem bv = harness_upload(ctx, dt, w->v, B, HKV, w->N, D, NULL, &tv);
    cl_mem bo = harness_alloc(ctx, dt, B, HQ, w->N, D, NULL, &to);
    cl_mem lse = harness_float_buffer(ctx, (size_t)B * HQ * w->N);
    CU_ASSERT_FATAL(bq && bk && bv && bo && lse);
    use_params(ctx, fam, 0, 0);
    attn_status st = attn_forward(ctx, &p, &tq, &tk, &tv, &to, &L, lse, NULL);
    if (st != ATTN_SUCCESS) printf("\n  attn_forward: %s\n", attn_last_error(ctx));
    CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(harness_download(ctx, dt, &to, B, HQ, w->N, D, w->dev), 0);
    CU_ASSERT_EQUAL_FATAL(harness_read_floats(ctx, lse, w->dev_lse, (size_t)B * HQ * w->N), 0);
    double atol, rtol;
    attn_tolerance(dt, &atol, &rtol);
    /* rows past a sequence's length are padding (zeros) in both */
    CU_ASSERT_EQUAL(harness_compare("uncached forward vs reference", w->dev, w->ref,
                                    (size_t)B * HQ * w->N * D, atol, rtol, seed), 0);
    clReleaseMemObject(bq), clReleaseMemObject(bk), clReleaseMemObject(bv);
    clReleaseMemObject(bo), clReleaseMemObject(lse);
}

/* ---- the cache, driven from a world ---- */

void append_rows_from(attn_context *ctx, attn_kv_cache *cache, const world *w,
                      attn_dtype dt, const int *cur, int block_len, const int *starts,
                      const int *counts, const harness_layout *layout)
{
    size_t n = (size_t)B * HKV * block_len * D;
    float *bk = harness_xalloc(n), *bv = harness_xalloc(n);
    for (size_t i = 0; i < n; i++) bk[i] = bv[i] = NAN;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HKV; h++)
            for (int r = 0; r < counts[b]; r++) {
                const size_t at = kidx(block_len, b, h, (starts ? starts[b] : 0) + r);
                memcpy(bk + at, w->k + kidx(w->N, b, h, cur[b] + r), D * sizeof(float));
                memcpy(bv + at, w->v + kidx(w->N, b, h, cur[b] + r), D * sizeof(float));
            }
    attn_tensor tk, tv;
    cl_mem mk = harness_upload(ctx, dt, bk, B, HKV, block_len, D, layout, &tk);
    cl_mem mv = harness_upload(ctx, dt, bv, B, HKV, block_len, D, layout, &tv);
    CU_ASSERT_FATAL(mk && mv);
    cl_event ev = NULL;
    attn_status st =
        starts ? attn_kv_cache_append_rows(cache, &tk, &tv, block_len, starts, counts, &ev)
               : attn_kv_cache_append(cache, &tk, &tv, block_len, counts, &ev);
    if (st != ATTN_SUCCESS) printf("\n  append: %s\n", attn_last_error(ctx));
    CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL(ev);
    if (ev) clReleaseEvent(ev);
    clReleaseMemObject(mk), clReleaseMemObject(mv);
    free(bk), free(bv);
}

void append_from(attn_context *ctx, attn_kv_cache *cache, const world *w, attn_dtype dt,
                 const int *cur, int block_len, const int *counts,
                 const harness_layout *layout)
{
    append_rows_from(ctx, cache, w, dt, cur, block_len, NULL, counts, layout);
}

float *decode_check(attn_context *ctx, attn_kv_cache *cache, const world *w,
                    attn_dtype dt, int q_len, const int *q_lens, const char *what,
                    uint64_t seed, int keep)
{
    int cur[B];
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_lengths(cache, cur), ATTN_SUCCESS);
    size_t nq = (size_t)B * HQ * q_len * D, nl = (size_t)B * HQ * q_len;
    float *hq = harness_xalloc(nq), *exp_ref = harness_xalloc(nq), *exp_dev = harness_xalloc(nq),
          *got = harness_xalloc(nq);
    float *lref = harness_xalloc(nl), *ldev = harness_xalloc(nl), *lgot = harness_xalloc(nl);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HQ; h++)
            for (int i = 0; i < q_len; i++) {
                size_t at = qidx(q_len, b, h, i), li = ((size_t)b * HQ + h) * q_len + i;
                if (i < q_lens[b]) {
                    int pos = cur[b] - q_lens[b] + i;
                    memcpy(hq + at, w->q + qidx(w->N, b, h, pos), D * sizeof(float));
                    memcpy(exp_ref + at, w->ref + qidx(w->N, b, h, pos), D * sizeof(float));
                    memcpy(exp_dev + at, w->dev + qidx(w->N, b, h, pos), D * sizeof(float));
                    lref[li] = w->ref_lse[((size_t)b * HQ + h) * w->N + pos];
                    ldev[li] = w->dev_lse[((size_t)b * HQ + h) * w->N + pos];
                } else { /* a pad row: never read, written as zeros */
                    for (int d = 0; d < D; d++) {
                        hq[at + d] = NAN;
                        exp_ref[at + d] = exp_dev[at + d] = 0.0f;
                    }
                    lref[li] = ldev[li] = -INFINITY;
                }
            }
    const harness_layout lq = {HARNESS_BSHD, 3, 8, 0}, lo = {HARNESS_BHSD, 7, 0, 1};
    attn_tensor tq, to;
    cl_mem mq = harness_upload(ctx, dt, hq, B, HQ, q_len, D, &lq, &tq);
    cl_mem mo = harness_alloc(ctx, dt, B, HQ, q_len, D, &lo, &to);
    cl_mem lse = harness_float_buffer(ctx, nl);
    CU_ASSERT_FATAL(mq && mo && lse);
    attn_problem p = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = q_len,
                      .kv_len = 0, .dtype = dt, .causal = 1, .scale = 0.0f};
    cl_event ev = NULL;
    attn_status st = attn_decode(ctx, cache, &p, &tq, &to, q_lens, lse, &ev);
    if (st != ATTN_SUCCESS) printf("\n  %s: attn_decode: %s\n", what, attn_last_error(ctx));
    CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL(ev);
    if (ev) clReleaseEvent(ev);
    CU_ASSERT_EQUAL_FATAL(harness_download(ctx, dt, &to, B, HQ, q_len, D, got), 0);
    CU_ASSERT_EQUAL_FATAL(harness_read_floats(ctx, lse, lgot, nl), 0);
    double atol, rtol;
    attn_tolerance(dt, &atol, &rtol);
    char label[256];
    int bad = 0;
    snprintf(label, sizeof label, "%.200s: O vs reference", what);
    bad += harness_compare(label, got, exp_ref, nq, atol, rtol, seed);
    snprintf(label, sizeof label, "%.200s: O vs uncached attn_forward", what);
    bad += harness_compare(label, got, exp_dev, nq, atol, rtol, seed);
    snprintf(label, sizeof label, "%.200s: LSE vs reference", what);
    bad += harness_compare(label, lgot, lref, nl, atol, rtol, seed);
    snprintf(label, sizeof label, "%.200s: LSE vs uncached attn_forward", what);
    bad += harness_compare(label, lgot, ldev, nl, atol, rtol, seed);
    CU_ASSERT_EQUAL(bad, 0);
    clReleaseMemObject(mq), clReleaseMemObject(mo), clReleaseMemObject(lse);
    free(hq), free(exp_ref), free(exp_dev), free(lref), free(ldev), free(lgot);
    if (keep) return got;
    free(got);
    return NULL;
}

void fill_world_inputs(world *w, attn_dtype dt, uint64_t seed)
{
    harness_fill_normal(w->q, (size_t)B * HQ * w->N * D, seed, 0.0f, 1.0f);
    harness_fill_normal(w->k, (size_t)B * HKV * w->N * D, seed + 1, 0.0f, 1.0f);
    harness_fill_normal(w->v, (size_t)B * HKV * w->N * D, seed + 2, 0.0f, 1.0f);
    harness_round(dt, w->q, (size_t)B * HQ * w->N * D);
    harness_round(dt, w->k, (size_t)B * HKV * w->N * D);
    harness_round(dt, w->v, (size_t)B * HKV * w->N * D);
}

void redraw(world *w, attn_dtype dt, const int *from, const int *to, uint64_t seed)
{
    float row[D];
    for (int b = 0; b < B; b++)
        for (int s = from[b]; s < to[b]; s++) {
            for (int h = 0; h < HQ; h++) {
                harness_fill_normal(row, D, seed++, 0.0f, 1.0f);
                harness_round(dt, row, D);
                memcpy(w->q + qidx(w->N, b, h, s), row, sizeof row);
            }
            for (int h = 0; h < HKV; h++) {
                harness_fill_normal(row, D, seed++, 0.0f, 1.0f);
                harness_round(dt, row, D);
                memcpy(w->k + kidx(w->N, b, h, s), row, sizeof row);
                harness_fill_normal(row, D, seed++, 0.5f, 2.0f);
                harness_round(dt, row, D);
                memcpy(w->v + kidx(w->N, b, h, s), row, sizeof row);
            }
        }
}

attn_kv_cache *world_cache(attn_context *ctx, const world *w, attn_dtype dt, int cap,
                           int block_size)
{
    const attn_kv_cache_desc desc = {.batch = B, .kv_heads = HKV, .head_dim = D, .capacity = cap,
                                     .dtype = dt, .block_size = block_size};
    attn_kv_cache *cache = NULL;
    attn_status st = attn_kv_cache_create_desc(ctx, &desc, &cache);
    if (st != ATTN_SUCCESS) printf("\n  attn_kv_cache_create_desc: %s\n", attn_last_error(ctx));
    CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
    attn_tensor tk, tv;
    cl_mem mk = harness_upload(ctx, dt, w->k, B, HKV, w->N, D, NULL, &tk);
    cl_mem mv = harness_upload(ctx, dt, w->v, B, HKV, w->N, D, NULL, &tv);
    CU_ASSERT_FATAL(mk && mv);
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_append(cache, &tk, &tv, w->N, w->len, NULL), ATTN_SUCCESS);
    clReleaseMemObject(mk), clReleaseMemObject(mv);
    return cache;
}
