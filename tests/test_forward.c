/* test_forward.c -- attn_forward against attn_reference_forward, for both
 * kernel families, over a matrix that covers (rather than multiplies out)
 * the problem space: MHA, GQA and MQA; causal and not; right, left and mixed
 * padding with empty batch entries; Sq < Skv (decode) and Sq > Skv (rows
 * with nothing visible); lengths 1 to 1000; head dims 7 to 256; strided
 * layouts; the three storage types; a custom scale; in place; tile
 * parameters that do not divide the lengths; check mode, the completion
 * event and determinism.
 *
 * Every case rounds its inputs through the storage type, runs the kernel on
 * tensors whose every element (gaps included) starts as NaN, and compares O
 * and LSE with the reference at the DESIGN tolerance. It also checks that
 * the kernel wrote nothing outside O (the gaps are still NaN) and left Q, K
 * and V alone.
 *
 * Build cost: PoCL compiles one program per (family, tile parameters, head
 * dim, dtype); the matrix below needs about 65 programs: about 50 s from a
 * cold cache on 2 CPU cores (PoCL), under a second warm. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The two families with the library's default tile parameters otherwise. */
static const char *const families[] = {"family=vector", "family=tiled"};
#define NFAM 2

/* ---- one case ---- */

typedef struct fcase {
    const char *name;
    int B, Hq, Hkv, D, Sq, Skv;
    attn_dtype dtype;
    int causal;
    float scale;
    /* per-batch regions; NULL arrays mean full */
    const int *q_start, *q_len, *kv_start, *kv_len;
    harness_layout lq, lk, lv, lo;
    int in_place; /* out is the q tensor itself */
    int no_lse;   /* pass lse = NULL */
    float amp;    /* Q and K are normal(0, amp); 0 means 1 */
    uint64_t seed;
} fcase;

static float *xalloc(size_t n)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    return x;
}

static int is_nan_pattern(attn_dtype t, const unsigned char *p)
{
    if (t == ATTN_F32) {
        float f;
        memcpy(&f, p, sizeof f);
        return isnan(f);
    }
    uint16_t w;
    memcpy(&w, p, sizeof w);
    return t == ATTN_F16 ? (w & 0x7fffu) > 0x7c00u : (w & 0x7fffu) > 0x7f80u;
}

/* Every element of t's buffer outside the [B,H,S,D] tensor must still be the
 * NaN the harness filled it with. Returns the number of elements changed. */
static int gaps_untouched(attn_context *ctx, attn_dtype dtype, const attn_tensor *t, int B,
                          int H, int S, int D, const char *what)
{
    size_t esize = attn_dtype_size(dtype), bytes = 0;
    clGetMemObjectInfo(t->buffer, CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
    size_t n = bytes / esize;
    unsigned char *raw = malloc(bytes), *owned = calloc(n ? n : 1, 1);
    CU_ASSERT_FATAL(raw != NULL && owned != NULL);
    cl_int err = clEnqueueReadBuffer(attn_context_queue(ctx), t->buffer, CL_TRUE, 0, bytes, raw,
                                     0, NULL, NULL);
    CU_ASSERT_EQUAL_FATAL(err, CL_SUCCESS);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int s = 0; s < S; s++) {
                size_t at = t->offset + (size_t)b * t->stride_batch + (size_t)h * t->stride_head +
                            (size_t)s * t->stride_seq;
                memset(owned + at, 1, (size_t)D);
            }
    int bad = 0;
    size_t first = 0;
    for (size_t i = 0; i < n; i++)
        if (!owned[i] && !is_nan_pattern(dtype, raw + i * esize)) {
            if (!bad) first = i;
            bad++;
        }
    if (bad)
        printf("\n  %s: %d elements outside the tensor were written (first at element %zu)\n",
               what, bad, first);
    free(raw);
    free(owned);
    return bad;
}

/* Bitwise comparison of a downloaded input with what was uploaded. */
static int unchanged(const float *got, const float *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            printf("\n  %s: input modified at [%zu]: %.9g, was %.9g\n", what, i, got[i], want[i]);
            return 1;
        }
    return 0;
}

static void describe(const fcase *c, const char *params)
{
    printf("\n  case \"%s\" [%s]: B=%d Hq=%d Hkv=%d D=%d Sq=%d Skv=%d %s causal=%d scale=%g "
           "orders q%d k%d v%d o%d in_place=%d%s\n",
           c->name, params ? params : "(default)", c->B, c->Hq, c->Hkv, c->D, c->Sq, c->Skv,
           attn_dtype_name(c->dtype), c->causal, (double)c->scale, c->lq.order, c->lk.order,
           c->lv.order, c->lo.order, c->in_place, c->q_len || c->kv_len ? " padded" : "");
}

/* Runs c with ATTN_PARAMS = params (NULL: the library's choice). Returns the
 * number of failed checks (0 = pass); CUnit assertions are made as well. If
 * out_copy is not NULL it receives O (BHSD floats, malloc'd). */
static int run_case_keep(const fcase *c, const char *params, float **out_copy, float **lse_copy)
{
    attn_context *ctx = harness_context();
    const uint64_t seed = harness_seed(c->seed);
    const size_t nq = (size_t)c->B * c->Hq * c->Sq * c->D;
    const size_t nkv = (size_t)c->B * c->Hkv * c->Skv * c->D;
    const size_t nrows = (size_t)c->B * c->Hq * c->Sq;
    float *q = xalloc(nq), *k = xalloc(nkv), *v = xalloc(nkv);
    float *ref = xalloc(nq), *ref_lse = xalloc(nrows), *got = xalloc(nq), *got_lse = xalloc(nrows);
    float *back = xalloc(nq > nkv ? nq : nkv);
    const float amp = c->amp > 0 ? c->amp : 1.0f;
    harness_fill_normal(q, nq, seed, 0.0f, amp);
    harness_fill_normal(k, nkv, seed + 1, 0.0f, amp);
    harness_fill_uniform(v, nkv, seed + 2, -2.0f, 2.0f);
    harness_round(c->dtype, q, nq);
    harness_round(c->dtype, k, nkv);
    harness_round(c->dtype, v, nkv);

    attn_problem p = {c->B, c->Hq, c->Hkv, c->D, c->Sq, c->Skv, c->dtype, c->causal, c->scale};
    attn_lengths L = {c->q_start, c->q_len, c->kv_start, c->kv_len};
    const int padded = c->q_start || c->q_len || c->kv_start || c->kv_len;
    int fails = 0;
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, q, k, v, ref, padded ? &L : NULL, ref_lse),
                          ATTN_SUCCESS);

    attn_tensor tq, tk, tv, to;
    cl_mem mq = harness_upload(ctx, c->dtype, q, c->B, c->Hq, c->Sq, c->D, &c->lq, &tq);
    cl_mem mk = harness_upload(ctx, c->dtype, k, c->B, c->Hkv, c->Skv, c->D, &c->lk, &tk);
    cl_mem mv = harness_upload(ctx, c->dtype, v, c->B, c->Hkv, c->Skv, c->D, &c->lv, &tv);
    cl_mem mo = NULL;
    if (c->in_place) to = tq;
    else mo = harness_alloc(ctx, c->dtype, c->B, c->Hq, c->Sq, c->D, &c->lo, &to);
    cl_mem mlse = c->no_lse ? NULL : harness_float_buffer(ctx, nrows);
    CU_ASSERT_FATAL(mq && mk && mv && (c->in_place || mo) && (c->no_lse || mlse));

    if (params) setenv("ATTN_PARAMS", params, 1);
    else unsetenv("ATTN_PARAMS");
    cl_event done = NULL;
    attn_status st = attn_forward(ctx, &p, &tq, &tk, &tv, &to, padded ? &L : NULL, mlse, &done);
    unsetenv("ATTN_PARAMS");
    if (st != ATTN_SUCCESS) {
        describe(c, params);
        printf("  attn_forward: %s: %s\n", attn_status_name(st), attn_last_error(ctx));
        fails++;
        CU_FAIL("attn_forward failed");
        goto out;
    }
    CU_ASSERT_PTR_NOT_NULL(done);
    if (done) {
        cl_int es = -1;
        CU_ASSERT_EQUAL(clWaitForEvents(1, &done), CL_SUCCESS);
        clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof es, &es, NULL);
        CU_ASSERT_EQUAL(es, CL_COMPLETE);
        clReleaseEvent(done);
    }

    double atol, rtol;
    attn_tolerance(c->dtype, &atol, &rtol);
    char what[96];
    CU_ASSERT_EQUAL_FATAL(harness_download(ctx, c->dtype, &to, c->B, c->Hq, c->Sq, c->D, got), 0);
    snprintf(what, sizeof what, "%s O", c->name);
    int bad = harness_compare(what, got, ref, nq, atol, rtol, seed);
    if (!c->no_lse) {
        CU_ASSERT_EQUAL_FATAL(harness_read_floats(ctx, mlse, got_lse, nrows), 0);
        snprintf(what, sizeof what, "%s LSE", c->name);
        bad += harness_compare(what, got_lse, ref_lse, nrows, atol, rtol, seed);
    }
    snprintf(what, sizeof what, "%s O gaps", c->name);
    bad += gaps_untouched(ctx, c->dtype, &to, c->B, c->Hq, c->Sq, c->D, what);
    /* the inputs are left alone */
    if (!c->in_place) {
        CU_ASSERT_EQUAL_FATAL(harness_download(ctx, c->dtype, &tq, c->B, c->Hq, c->Sq, c->D, back), 0);
        bad += unchanged(back, q, nq, "Q");
    }
    CU_ASSERT_EQUAL_FATAL(harness_download(ctx, c->dtype, &tk, c->B, c->Hkv, c->Skv, c->D, back), 0);
    bad += unchanged(back, k, nkv, "K");
    CU_ASSERT_EQUAL_FATAL(harness_download(ctx, c->dtype, &tv, c->B, c->Hkv, c->Skv, c->D, back), 0);
    bad += unchanged(back, v, nkv, "V");
    if (bad) {
        describe(c, params);
        fails++;
    }
    CU_ASSERT_EQUAL(bad, 0);
    if (out_copy) {
        *out_copy = got;
        got = NULL;
    }
    if (lse_copy) {
        *lse_copy = got_lse;
        got_lse = NULL;
    }
out:
    clReleaseMemObject(mq);
    clReleaseMemObject(mk);
    clReleaseMemObject(mv);
    if (mo) clReleaseMemObject(mo);
    if (mlse) clReleaseMemObject(mlse);
    free(q);
    free(k);
    free(v);
    free(ref);
    free(ref_lse);
    free(got);
    free(got_lse);
    free(back);
    return fails;
}

static int run_case(const fcase *c, const char *params)
{
    return run_case_keep(c, params, NULL, NULL);
}

/* Runs every case of a table under both families. */
static void run_table(const fcase *cases, int n)
{
    for (int f = 0; f < NFAM; f++)
        for (int i = 0; i < n; i++) run_case(&cases[i], families[f]);
}

static fcase base(const char *name, int B, int Hq, int Hkv, int D, int Sq, int Skv, int causal,
                  uint64_t seed)
{
    fcase c;
    memset(&c, 0, sizeof c);
    c.name = name;
    c.B = B;
    c.Hq = Hq;
    c.Hkv = Hkv;
    c.D = D;
    c.Sq = Sq;
    c.Skv = Skv;
    c.dtype = ATTN_F32;
    c.causal = causal;
    c.seed = seed;
    return c;
}

/* ---- head dims, fp32: each once per family, each carrying other features ---- */

static void test_head_dims_f32(void)
{
    static const harness_layout bshd = {HARNESS_BSHD, 0, 0, 0};
    fcase cs[9];
    int n = 0;
    /* the smallest head dim, non-causal, Sq < Skv */
    cs[n++] = base("D1 non-causal Sq7 Skv257", 1, 2, 1, 1, 7, 257, 0, 100);
    /* odd head dim, MHA, B = 2, lengths not a multiple of any tile */
    cs[n++] = base("D7 MHA causal", 2, 2, 2, 7, 33, 33, 1, 101);
    /* GQA 4:2, non-causal, BSHD everywhere */
    cs[n] = base("D16 GQA BSHD", 2, 4, 2, 16, 7, 7, 0, 102);
    cs[n].lq = cs[n].lk = cs[n].lv = cs[n].lo = bshd;
    n++;
    /* MQA, decode-like Sq < Skv, bottom-right causal */
    cs[n++] = base("D40 MQA Sq7 Skv33", 1, 4, 1, 40, 7, 33, 1, 103);
    /* GQA 8:2 prefill of 257 */
    cs[n++] = base("D64 GQA S257", 1, 8, 2, 64, 257, 257, 1, 104);
    /* decode: one query row against 257 keys */
    cs[n++] = base("D80 decode Sq1 Skv257", 2, 4, 1, 80, 1, 257, 1, 105);
    /* Sq > Skv: causal leaves the first 26 rows with nothing visible */
    cs[n++] = base("D96 Sq33 > Skv7", 1, 2, 1, 96, 33, 7, 1, 106);
    /* length 1 */
    cs[n++] = base("D128 S1", 2, 2, 2, 128, 1, 1, 1, 107);
    cs[n] = base("D256 GQA S33 BSHD", 1, 4, 2, 256, 33, 33, 1, 108);
    cs[n].lq = cs[n].lo = bshd;
    n++;
    run_table(cs, n);
}

/* ---- more shapes: many heads, exact tile multiples, large logits ---- */

static void test_more_shapes(void)
{
    fcase cs[5];
    /* the DESIGN's big prefill head layout, short */
    cs[0] = base("Hq32 Hkv8 D128 S65", 1, 32, 8, 128, 65, 65, 1, 151);
    /* lengths that are exact multiples of every default tile */
    cs[1] = base("S64 exact tiles", 1, 2, 1, 64, 64, 64, 1, 152);
    cs[2] = base("Sq32 Skv96 exact tiles", 2, 2, 2, 64, 32, 96, 1, 153);
    /* logits in the hundreds: only a max-subtracted softmax survives */
    cs[3] = base("large logits", 1, 2, 1, 64, 45, 45, 1, 154);
    cs[3].amp = 8.0f;
    cs[4] = base("large logits f16 non-causal", 1, 2, 2, 64, 33, 33, 0, 155);
    cs[4].amp = 6.0f;
    cs[4].dtype = ATTN_F16;
    run_table(cs, 5);
}

/* ---- length 1000: once per family, few heads ---- */

static void test_long_1000(void)
{
    fcase cs[2];
    cs[0] = base("S1000 causal", 1, 2, 1, 64, 1000, 1000, 1, 201);
    /* non-causal, Sq < Skv, and the KV padded on the left */
    static const int ks[1] = {37}, kl[1] = {963};
    cs[1] = base("Sq257 Skv1000 kv left-pad", 1, 2, 2, 128, 257, 1000, 0, 202);
    cs[1].kv_start = ks;
    cs[1].kv_len = kl;
    run_table(cs, 2);
}

/* ---- padding: right, left, mixed, empty entries ---- */

static void test_padding(void)
{
    /* entry 0 full, 1 right-padded, 2 left-padded, 3 mixed (q left, kv in
     * the middle), 4 q_len = 0, 5 kv_len = 0, 6 q_len > kv_len (causal leaves
     * the first rows empty) */
    enum { B = 7, S = 19 };
    static const int qs[B] = {0, 0, 6, 9, 0, 4, 0}, ql[B] = {19, 13, 13, 10, 0, 9, 17};
    static const int ks[B] = {0, 0, 8, 3, 0, 0, 2}, kl[B] = {19, 15, 11, 12, 19, 0, 5};
    fcase cs[4];
    for (int causal = 0; causal <= 1; causal++) {
        cs[causal] = base(causal ? "padding causal" : "padding non-causal", B, 4, 2, 64, S, S,
                          causal, 301 + causal);
        cs[causal].q_start = qs;
        cs[causal].q_len = ql;
        cs[causal].kv_start = ks;
        cs[causal].kv_len = kl;
    }
    /* some arrays NULL: only kv_len given (right-padded keys, full queries),
     * and only q_start/q_len given */
    cs[2] = base("padding kv_len only", B, 4, 2, 64, S, S, 1, 303);
    cs[2].kv_len = kl;
    cs[3] = base("padding q_start/q_len only", B, 4, 2, 64, S, S, 1, 304);
    cs[3].q_start = qs;
    cs[3].q_len = ql;
    run_table(cs, 4);
}

/* ---- decode shapes with padding: Sq = 1 and 7 against a padded cache ---- */

static void test_decode_padded(void)
{
    static const int qs1[3] = {0, 0, 0}, ql1[3] = {1, 1, 0};
    static const int ks1[3] = {0, 200, 10}, kl1[3] = {257, 57, 100};
    static const int qs7[2] = {0, 2}, ql7[2] = {7, 5};
    static const int ks7[2] = {20, 0}, kl7[2] = {13, 1};
    fcase cs[4];
    cs[0] = base("decode Sq1 padded cache", 3, 8, 2, 64, 1, 257, 1, 401);
    cs[0].q_start = qs1;
    cs[0].q_len = ql1;
    cs[0].kv_start = ks1;
    cs[0].kv_len = kl1;
    cs[1] = cs[0];
    cs[1].name = "decode Sq1 padded cache non-causal";
    cs[1].causal = 0;
    cs[1].seed = 402;
    cs[2] = base("Sq7 Skv33 padded", 2, 4, 1, 64, 7, 33, 1, 403);
    cs[2].q_start = qs7;
    cs[2].q_len = ql7;
    cs[2].kv_start = ks7;
    cs[2].kv_len = kl7;
    cs[3] = base("Sq7 Skv33 non-causal MQA", 2, 4, 1, 64, 7, 33, 0, 404);
    run_table(cs, 4);
}

/* ---- Sq > Skv and fully masked rows: zeros and -inf, never NaN ---- */

static void test_fully_masked_rows(void)
{
    fcase cs[2];
    cs[0] = base("Sq40 > Skv9 causal", 2, 2, 2, 64, 40, 9, 1, 501);
    cs[1] = base("Sq40 > Skv9 non-causal", 1, 2, 1, 64, 40, 9, 0, 502);
    run_table(cs + 1, 1);
    /* the explicit check, beyond the reference comparison: rows i < Sq - Skv
     * are exactly zero with -inf LSE */
    for (int f = 0; f < NFAM; f++) {
        float *o = NULL, *l = NULL;
        if (run_case_keep(&cs[0], families[f], &o, &l) == 0) {
            for (int bh = 0; bh < 4; bh++)
                for (int r = 0; r < 40; r++) {
                    const float *row = o + ((size_t)bh * 40 + r) * 64;
                    int empty = r < 40 - 9;
                    for (int d = 0; d < 64; d++) {
                        CU_ASSERT(!isnan(row[d]));
                        if (empty) CU_ASSERT_EQUAL(row[d], 0.0f);
                    }
                    CU_ASSERT(empty ? l[bh * 40 + r] == -INFINITY : isfinite(l[bh * 40 + r]));
                }
        }
        free(o);
        free(l);
    }
}

/* ---- strided layouts: BSHD, offsets, sequence padding, cache capacity ---- */

static void test_layouts(void)
{
    static const harness_layout L[] = {
        {HARNESS_BHSD, 5, 3, 0},    /* offset, padded rows */
        {HARNESS_BSHD, 0, 0, 0},    /* packed BSHD */
        {HARNESS_BSHD, 11, 8, 4},   /* BSHD with offset, row padding, spare capacity */
        {HARNESS_BHSD, 0, 0, 23},   /* KV cache with spare capacity */
        {HARNESS_BHSD, 3, 1, 2},    /* odd offset and padding (2-byte alignment only) */
    };
    static const int ks[2] = {0, 4}, kl[2] = {21, 17};
    fcase cs[4];
    cs[0] = base("layout q:BHSD+off k:BSHD v:cache o:BSHD+pad", 2, 4, 2, 64, 21, 21, 1, 601);
    cs[0].lq = L[0];
    cs[0].lk = L[1];
    cs[0].lv = L[3];
    cs[0].lo = L[2];
    cs[1] = base("layout all BSHD padded cache, kv padded", 2, 4, 2, 64, 9, 21, 1, 602);
    cs[1].lq = cs[1].lk = cs[1].lv = cs[1].lo = L[2];
    cs[1].kv_start = ks;
    cs[1].kv_len = kl;
    cs[2] = base("layout odd offsets f16", 1, 2, 1, 64, 13, 13, 0, 603);
    cs[2].dtype = ATTN_F16;
    cs[2].lq = L[4];
    cs[2].lk = L[4];
    cs[2].lv = L[2];
    cs[2].lo = L[4];
    cs[3] = base("layout odd offsets bf16", 1, 2, 1, 64, 13, 13, 1, 604);
    cs[3].dtype = ATTN_BF16;
    cs[3].lq = L[2];
    cs[3].lk = L[4];
    cs[3].lv = L[0];
    cs[3].lo = L[4];
    run_table(cs, 4);
}

/* ---- storage types at a few head dims ---- */

static void test_dtypes(void)
{
    static const int qs[2] = {0, 3}, ql[2] = {26, 23}, ks[2] = {0, 5}, kl[2] = {30, 20};
    fcase cs[8];
    int n = 0;
    for (int t = ATTN_F16; t <= ATTN_BF16; t++) {
        cs[n] = base(t == ATTN_F16 ? "f16 D64 GQA padded causal" : "bf16 D64 GQA padded causal",
                     2, 4, 2, 64, 26, 30, 1, 700 + n);
        cs[n].dtype = (attn_dtype)t;
        cs[n].q_start = qs;
        cs[n].q_len = ql;
        cs[n].kv_start = ks;
        cs[n].kv_len = kl;
        n++;
    }
    cs[n] = base("f16 D128 MQA decode", 2, 4, 1, 128, 1, 257, 1, 710);
    cs[n++].dtype = ATTN_F16;
    cs[n] = base("f16 D7 non-causal", 1, 2, 2, 7, 33, 33, 0, 711);
    cs[n++].dtype = ATTN_F16;
    cs[n] = base("bf16 D96 Sq>Skv", 1, 2, 1, 96, 33, 7, 1, 712);
    cs[n++].dtype = ATTN_BF16;
    cs[n] = base("bf16 D16 BSHD", 2, 2, 1, 16, 7, 7, 1, 713);
    cs[n].lq = cs[n].lk = cs[n].lv = cs[n].lo = (harness_layout){HARNESS_BSHD, 1, 0, 0};
    cs[n++].dtype = ATTN_BF16;
    cs[n] = base("bf16 D256", 1, 2, 1, 256, 21, 21, 1, 714);
    cs[n++].dtype = ATTN_BF16;
    cs[n] = base("f16 D40 GQA Sq<Skv", 1, 4, 2, 40, 7, 33, 1, 715);
    cs[n++].dtype = ATTN_F16;
    run_table(cs, n);
}

/* ---- every head dim in the 16-bit types: one small case each ---- */

static void test_dtype_head_dim_sweep(void)
{
    static const int dims[] = {7, 16, 40, 64, 80, 96, 128, 256};
    static const harness_layout odd = {HARNESS_BHSD, 1, 0, 0}; /* 2-byte alignment only */
    for (int t = ATTN_F16; t <= ATTN_BF16; t++)
        for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
            fcase c = base(t == ATTN_F16 ? "f16 head dim sweep" : "bf16 head dim sweep", 1, 2, 1,
                           dims[i], 17, 20, 1, 750 + i);
            c.dtype = (attn_dtype)t;
            c.lq = c.lk = c.lv = c.lo = odd;
            for (int f = 0; f < NFAM; f++) run_case(&c, families[f]);
        }
}

/* ---- a custom scale, and lse = NULL ---- */

static void test_custom_scale(void)
{
    fcase cs[4];
    cs[3] = base("scale -0.3 (negative, valid)", 1, 2, 1, 64, 21, 21, 1, 804);
    cs[3].scale = -0.3f;
    cs[0] = base("scale 0.37", 1, 4, 2, 64, 21, 21, 1, 801);
    cs[0].scale = 0.37f;
    cs[1] = base("scale 2.0 (sharp)", 1, 2, 1, 16, 7, 33, 1, 802);
    cs[1].scale = 2.0f;
    cs[2] = base("scale 0.01 (flat), no LSE", 1, 2, 2, 64, 21, 21, 0, 803);
    cs[2].scale = 0.01f;
    cs[2].no_lse = 1;
    run_table(cs, 4);
}

/* p->scale = 0 means 1/sqrt(head_dim). The reference computes that default
 * on its own, so a wrong default on the kernels' side (attn_effective_scale)
 * is a mismatch here, for both families; and the reference's default is an
 * explicit 1/sqrt(D). */
static void test_default_scale(void)
{
    static const int dims[] = {16, 40, 64, 128};
    for (int i = 0; i < 4; i++) {
        const int D = dims[i];
        const int nq = 2 * 9 * D, nk = 13 * D;
        float *q = malloc(sizeof(float) * nq), *k = malloc(sizeof(float) * nk),
              *v = malloc(sizeof(float) * nk), *a = malloc(sizeof(float) * nq),
              *b = malloc(sizeof(float) * nq);
        CU_ASSERT_FATAL(q && k && v && a && b);
        harness_fill_uniform(q, (size_t)nq, 900 + D, -3.0f, 3.0f);
        harness_fill_uniform(k, (size_t)nk, 901 + D, -3.0f, 3.0f);
        harness_fill_uniform(v, (size_t)nk, 902 + D, -1.0f, 1.0f);
        attn_problem p = {1, 2, 1, D, 9, 13, ATTN_F32, 1, 0.0f};
        CU_ASSERT_EQUAL(attn_reference_forward(&p, q, k, v, a, NULL, NULL), ATTN_SUCCESS);
        p.scale = (float)(1.0 / sqrt((double)D));
        CU_ASSERT_EQUAL(attn_reference_forward(&p, q, k, v, b, NULL, NULL), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(harness_compare("reference default scale", a, b, (size_t)nq, 1e-6, 1e-6,
                                        900 + D), 0);
        free(q), free(k), free(v), free(a), free(b);
    }
    fcase cs[3];
    cs[0] = base("default scale, D 40", 1, 4, 2, 40, 19, 27, 1, 811);
    cs[1] = base("default scale, D 64, full", 2, 2, 1, 64, 17, 17, 0, 812);
    cs[2] = base("default scale, D 128", 1, 2, 2, 128, 9, 33, 1, 813);
    for (int i = 0; i < 3; i++) cs[i].amp = 2.0f; /* sharp logits: the scale matters */
    run_table(cs, 3);
}

/* ---- in place: out is the q tensor ---- */

static void test_in_place(void)
{
    static const int qs[2] = {0, 5}, ql[2] = {33, 20};
    fcase cs[3];
    cs[0] = base("in place BHSD", 2, 4, 2, 64, 33, 33, 1, 901);
    cs[0].in_place = 1;
    cs[0].q_start = qs;
    cs[0].q_len = ql;
    cs[1] = base("in place BSHD offset", 1, 4, 1, 16, 33, 7, 0, 902);
    cs[1].in_place = 1;
    cs[1].lq = (harness_layout){HARNESS_BSHD, 3, 2, 1};
    cs[2] = base("in place f16", 1, 2, 2, 64, 26, 30, 1, 903);
    cs[2].dtype = ATTN_F16;
    cs[2].in_place = 1;
    run_table(cs, 3);
}

/* ---- tile parameters that do not divide the lengths ---- */

static void test_tile_params(void)
{
    static const char *const params[] = {
        "family=tiled,rows=8,keys=16,wg=64,local_kv=0",
        "family=tiled,rows=8,keys=16,wg=64,local_kv=1",
        "family=tiled,rows=1,keys=4,wg=1,local_kv=0",
        "family=tiled,rows=4,keys=8,wg=16,local_kv=1",
        "family=tiled,rows=16,keys=64,wg=256,local_kv=1",
        "family=vector,rows=4,keys=16,vec=8",
        "family=vector,rows=3,keys=8,vec=4",
        "family=vector,rows=16,keys=64,vec=16",
        "family=vector,rows=7,keys=16,vec=16",
    };
    /* lengths that are not multiples of any tile, a padded batch, GQA */
    static const int qs[2] = {0, 4}, ql[2] = {37, 29}, ks[2] = {0, 1}, kl[2] = {45, 39};
    fcase cs[3];
    cs[0] = base("tiles causal padded", 2, 4, 2, 64, 37, 45, 1, 1001);
    cs[0].q_start = qs;
    cs[0].q_len = ql;
    cs[0].kv_start = ks;
    cs[0].kv_len = kl;
    cs[1] = base("tiles Sq>Skv causal", 1, 2, 1, 64, 37, 11, 1, 1002);
    cs[2] = base("tiles decode non-causal", 2, 4, 1, 64, 1, 45, 0, 1003);
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++)
        for (int j = 0; j < 3; j++) run_case(&cs[j], params[i]);

    /* head dims that are not a multiple of the vector width or of 4 */
    static const struct { const char *params; int D; } odd[] = {
        {"family=tiled,rows=8,keys=16,wg=64,local_kv=0", 7},
        {"family=tiled,rows=1,keys=32,wg=256,local_kv=1", 7},  /* more lanes than columns */
        {"family=tiled,rows=2,keys=4,wg=64,local_kv=1", 40},   /* wg > rows * keys */
        {"family=vector,rows=4,keys=16,vec=8", 40},
        {"family=vector,rows=3,keys=8,vec=4", 7},
    };
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        fcase c = cs[0];
        c.name = "tiles odd head dim, causal padded";
        c.D = odd[i].D;
        run_case(&c, odd[i].params);
    }
}

/* ---- the library's own choice (no ATTN_PARAMS) ---- */

static void test_default_params(void)
{
    fcase c = base("default params", 2, 8, 2, 64, 33, 33, 1, 1101);
    run_case(&c, NULL);
}

/* ---- check mode accepts a correct run ---- */

static void test_check_mode(void)
{
    attn_context *ctx = harness_context();
    static const int qs[2] = {0, 2}, ql[2] = {21, 17}, ks[2] = {0, 3}, kl[2] = {21, 0};
    for (int f = 0; f < NFAM; f++)
        for (int t = ATTN_F32; t <= ATTN_F16; t++) {
            CU_ASSERT_EQUAL_FATAL(attn_context_set_check(ctx, 1), ATTN_SUCCESS);
            fcase c = base("check mode", 2, 4, 2, 64, 21, 21, 1, 1201 + t);
            c.dtype = (attn_dtype)t;
            c.q_start = qs;
            c.q_len = ql;
            c.kv_start = ks;
            c.kv_len = kl;
            c.lq = (harness_layout){HARNESS_BSHD, 2, 0, 0};
            int fails = run_case(&c, families[f]);
            CU_ASSERT_EQUAL(fails, 0);
            c.name = "check mode in place";
            c.in_place = 1;
            CU_ASSERT_EQUAL(run_case(&c, families[f]), 0);
            CU_ASSERT_EQUAL(attn_context_set_check(ctx, 0), ATTN_SUCCESS);
        }
}

/* ---- determinism: the same call twice gives the same bits, also with
 * another problem run in between (the vector family's scratch is reused) ---- */

static int forward_into(attn_context *ctx, const char *params, const attn_problem *p,
                        const attn_tensor *q, const attn_tensor *k, const attn_tensor *v,
                        const attn_tensor *o, cl_mem lse, float *out, float *lse_out)
{
    setenv("ATTN_PARAMS", params, 1);
    cl_event ev = NULL;
    attn_status st = attn_forward(ctx, p, q, k, v, o, NULL, lse, &ev);
    unsetenv("ATTN_PARAMS");
    if (st != ATTN_SUCCESS) {
        printf("\n  attn_forward [%s]: %s: %s\n", params, attn_status_name(st),
               attn_last_error(ctx));
        return -1;
    }
    if (!ev || clWaitForEvents(1, &ev) != CL_SUCCESS) return -1;
    clReleaseEvent(ev);
    if (harness_download(ctx, p->dtype, o, p->batch, p->q_heads, p->q_len, p->head_dim, out))
        return -1;
    return harness_read_floats(ctx, lse, lse_out, (size_t)p->batch * p->q_heads * p->q_len);
}

static void test_deterministic(void)
{
    attn_context *ctx = harness_context();
    const uint64_t seed = harness_seed(1301);
    attn_problem a = {2, 4, 2, 64, 45, 45, ATTN_F32, 1, 0.0f};
    attn_problem b = {1, 2, 2, 64, 7, 300, ATTN_F32, 0, 0.0f}; /* a bigger KV */
    const size_t naq = 2 * 4 * 45 * 64, nakv = 2 * 2 * 45 * 64, nbq = 2 * 7 * 64,
                 nbkv = 2 * 300 * 64;
    float *aq = xalloc(naq), *ak = xalloc(nakv), *av = xalloc(nakv);
    float *bq = xalloc(nbq), *bk = xalloc(nbkv), *bv = xalloc(nbkv);
    float *o1 = xalloc(naq), *o2 = xalloc(naq), *o3 = xalloc(naq), *ob = xalloc(nbq);
    float l1[2 * 4 * 45], l2[2 * 4 * 45], l3[2 * 4 * 45], lb[2 * 7];
    harness_fill_normal(aq, naq, seed, 0, 1);
    harness_fill_normal(ak, nakv, seed + 1, 0, 1);
    harness_fill_normal(av, nakv, seed + 2, 0, 1);
    harness_fill_normal(bq, nbq, seed + 3, 0, 1);
    harness_fill_normal(bk, nbkv, seed + 4, 0, 1);
    harness_fill_normal(bv, nbkv, seed + 5, 0, 1);
    attn_tensor tq, tk, tv, to, uq, uk, uv, uo;
    cl_mem m[] = {
        harness_upload(ctx, ATTN_F32, aq, 2, 4, 45, 64, NULL, &tq),
        harness_upload(ctx, ATTN_F32, ak, 2, 2, 45, 64, NULL, &tk),
        harness_upload(ctx, ATTN_F32, av, 2, 2, 45, 64, NULL, &tv),
        harness_alloc(ctx, ATTN_F32, 2, 4, 45, 64, NULL, &to),
        harness_upload(ctx, ATTN_F32, bq, 1, 2, 7, 64, NULL, &uq),
        harness_upload(ctx, ATTN_F32, bk, 1, 2, 300, 64, NULL, &uk),
        harness_upload(ctx, ATTN_F32, bv, 1, 2, 300, 64, NULL, &uv),
        harness_alloc(ctx, ATTN_F32, 1, 2, 7, 64, NULL, &uo),
        harness_float_buffer(ctx, 2 * 4 * 45),
        harness_float_buffer(ctx, 2 * 7),
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) CU_ASSERT_PTR_NOT_NULL_FATAL(m[i]);
    for (int f = 0; f < NFAM; f++) {
        CU_ASSERT_EQUAL_FATAL(forward_into(ctx, families[f], &a, &tq, &tk, &tv, &to, m[8], o1, l1), 0);
        CU_ASSERT_EQUAL_FATAL(forward_into(ctx, families[f], &a, &tq, &tk, &tv, &to, m[8], o2, l2), 0);
        CU_ASSERT_EQUAL_FATAL(forward_into(ctx, families[f], &b, &uq, &uk, &uv, &uo, m[9], ob, lb), 0);
        CU_ASSERT_EQUAL_FATAL(forward_into(ctx, families[f], &a, &tq, &tk, &tv, &to, m[8], o3, l3), 0);
        int same12 = memcmp(o1, o2, naq * sizeof(float)) == 0 && memcmp(l1, l2, sizeof l1) == 0;
        int same13 = memcmp(o1, o3, naq * sizeof(float)) == 0 && memcmp(l1, l3, sizeof l1) == 0;
        if (!same12 || !same13)
            printf("\n  [%s] results differ between identical calls (%s), seed %llu\n",
                   families[f], !same12 ? "back to back" : "after another problem",
                   (unsigned long long)seed);
        CU_ASSERT(same12);
        CU_ASSERT(same13);
        /* and the answer is the right one (enqueued back to back without
         * waiting too: the second problem must not clobber the first's data) */
        float *ref = xalloc(naq), rl[2 * 4 * 45];
        CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&a, aq, ak, av, ref, NULL, rl), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(harness_compare("determinism O", o1, ref, naq, 1e-5, 1e-4, seed), 0);
        CU_ASSERT_EQUAL(harness_compare("determinism LSE", l1, rl, 2 * 4 * 45, 1e-5, 1e-4, seed), 0);
        free(ref);
    }

    /* back to back without waiting: A then B enqueued, then both read */
    for (int f = 0; f < NFAM; f++) {
        setenv("ATTN_PARAMS", families[f], 1);
        cl_event e1 = NULL, e2 = NULL;
        attn_status s1 = attn_forward(ctx, &a, &tq, &tk, &tv, &to, NULL, m[8], &e1);
        attn_status s2 = attn_forward(ctx, &b, &uq, &uk, &uv, &uo, NULL, m[9], &e2);
        unsetenv("ATTN_PARAMS");
        CU_ASSERT_EQUAL(s1, ATTN_SUCCESS);
        CU_ASSERT_EQUAL(s2, ATTN_SUCCESS);
        if (e1 && e2) {
            cl_event both[2] = {e1, e2};
            CU_ASSERT_EQUAL(clWaitForEvents(2, both), CL_SUCCESS);
        }
        if (e1) clReleaseEvent(e1);
        if (e2) clReleaseEvent(e2);
        float *ref = xalloc(naq), *refb = xalloc(nbq);
        CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&a, aq, ak, av, ref, NULL, NULL), ATTN_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&b, bq, bk, bv, refb, NULL, NULL), ATTN_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(harness_download(ctx, ATTN_F32, &to, 2, 4, 45, 64, o1), 0);
        CU_ASSERT_EQUAL_FATAL(harness_download(ctx, ATTN_F32, &uo, 1, 2, 7, 64, ob), 0);
        CU_ASSERT_EQUAL(harness_compare("back-to-back A", o1, ref, naq, 1e-5, 1e-4, seed), 0);
        CU_ASSERT_EQUAL(harness_compare("back-to-back B", ob, refb, nbq, 1e-5, 1e-4, seed), 0);
        free(ref);
        free(refb);
    }
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) clReleaseMemObject(m[i]);
    free(aq);
    free(ak);
    free(av);
    free(bq);
    free(bk);
    free(bv);
    free(o1);
    free(o2);
    free(o3);
    free(ob);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_head_dims_f32),
    HARNESS_TEST(test_more_shapes),
    HARNESS_TEST(test_long_1000),
    HARNESS_TEST(test_padding),
    HARNESS_TEST(test_decode_padded),
    HARNESS_TEST(test_fully_masked_rows),
    HARNESS_TEST(test_layouts),
    HARNESS_TEST(test_dtypes),
    HARNESS_TEST(test_dtype_head_dim_sweep),
    HARNESS_TEST(test_custom_scale),
    HARNESS_TEST(test_default_scale),
    HARNESS_TEST(test_in_place),
    HARNESS_TEST(test_tile_params),
    HARNESS_TEST(test_default_params),
    HARNESS_TEST(test_check_mode),
    HARNESS_TEST(test_deterministic),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("forward", tests); }

int main(void) { return harness_run("test_forward", register_tests); }
