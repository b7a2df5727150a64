/* test_mask_cache.c -- attn_mask.version: a mask with a version keeps its
 * tile summary in the context (host/attention/mask_cache.c) and skips the
 * pre-pass when it comes back, in both kernel families:
 *   a versioned mask gives the answer of version 0, bit for bit, call after call;
 *   the summary is really kept: contents rewritten under the same version
 *     are not seen where the summary skips (the caller broke the promise),
 *     and a new version sees them;
 *   the summary is found only by everything it depends on: other lengths,
 *     another offset, other tile rows or keys, or another query stride
 *     with the same buffer and version are summarised afresh;
 *   the context holds a reference to each kept mask's buffer, at most
 *     ATTN_MASK_CACHE_ENTRIES of them, the least recently used going
 *     first, and attn_context_release_workspace gives them back.
 * Tiles are forced to 8 rows x 16 keys, so that the masks below hide whole
 * key tiles (keys 32..63) and leave others all zero. */
#define _POSIX_C_SOURCE 200809L
#include "cases.h"
#include "attention/mask_cache.h"

#include <float.h>
#include <math.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, HQ = 4, HKV = 2, D = 32, S = 64, HIDE_FROM = 32 };
static const char *const families[] = {"family=vector,rows=8,keys=16",
                                       "family=tiled,rows=8,keys=16"};

typedef struct fixture {
    attn_context *ctx;
    float *q, *k, *v, *ref, *got;
    attn_tensor tq, tk, tv, to;
    cl_mem mask;
} fixture;

static size_t elems(int h) { return (size_t)B * h * S * D; }

static void set_up(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->ctx = harness_context();
    f->q = malloc(elems(HQ) * sizeof(float)), f->ref = malloc(elems(HQ) * sizeof(float));
    f->got = malloc(elems(HQ) * sizeof(float));
    f->k = malloc(elems(HKV) * sizeof(float)), f->v = malloc(elems(HKV) * sizeof(float));
    CU_ASSERT_FATAL(f->q && f->ref && f->got && f->k && f->v);
    harness_fill_uniform(f->q, elems(HQ), 71, -2.0f, 2.0f);
    harness_fill_uniform(f->k, elems(HKV), 72, -2.0f, 2.0f);
    harness_fill_uniform(f->v, elems(HKV), 73, -1.0f, 1.0f);
    CU_ASSERT_FATAL(harness_upload(f->ctx, ATTN_F32, f->q, B, HQ, S, D, NULL, &f->tq) != NULL);
    CU_ASSERT_FATAL(harness_upload(f->ctx, ATTN_F32, f->k, B, HKV, S, D, NULL, &f->tk) != NULL);
    CU_ASSERT_FATAL(harness_upload(f->ctx, ATTN_F32, f->v, B, HKV, S, D, NULL, &f->tv) != NULL);
    CU_ASSERT_FATAL(harness_alloc(f->ctx, ATTN_F32, B, HQ, S, D, NULL, &f->to) != NULL);
    f->mask = harness_float_buffer(f->ctx, (size_t)S * S);
    CU_ASSERT_FATAL(f->mask != NULL);
}

static void tear_down(fixture *f)
{
    attn_context_release_workspace(f->ctx); /* the cache's references */
    cl_mem m[] = {f->tq.buffer, f->tk.buffer, f->tv.buffer, f->to.buffer, f->mask};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (m[i]) clReleaseMemObject(m[i]);
    free(f->q), free(f->k), free(f->v), free(f->ref), free(f->got);
}

/* An [S][S] mask broadcast over batch and heads: 0, except `hole` at keys
 * >= HIDE_FROM in rows < hide_rows. */
static void write_mask_with(fixture *f, float *host, int hide_rows, float hole)
{
    for (int r = 0; r < S; r++)
        for (int c = 0; c < S; c++) host[r * S + c] = r < hide_rows && c >= HIDE_FROM ? hole : 0.0f;
    CU_ASSERT_FATAL(clEnqueueWriteBuffer(attn_context_queue(f->ctx), f->mask, CL_TRUE, 0,
                                         sizeof(float) * S * S, host, 0, NULL, NULL) == CL_SUCCESS);
}

static void write_mask(fixture *f, float *host, int hide_rows)
{
    write_mask_with(f, host, hide_rows, -INFINITY);
}

static attn_problem problem(fixture *f, const float *host, unsigned long version)
{
    attn_problem p = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = S,
                      .kv_len = S, .dtype = ATTN_F32};
    p.mask = (attn_mask){f->mask, host, ATTN_F32, 0, 0, 0, S, 1, version};
    return p;
}

/* attn_forward of p into f->got; 0 or the failure */
static int run(fixture *f, const attn_problem *p, const attn_lengths *L)
{
    attn_status st = attn_forward(f->ctx, p, &f->tq, &f->tk, &f->tv, &f->to, L, NULL, NULL);
    if (st != ATTN_SUCCESS) {
        printf("\n  attn_forward: %s\n", attn_last_error(f->ctx));
        return -1;
    }
    return harness_download(f->ctx, ATTN_F32, &f->to, B, HQ, S, D, f->got);
}

/* violations of f->got against the reference of p with mask `host` */
static int against(fixture *f, const attn_problem *p, const float *host, const attn_lengths *L,
                   const char *what)
{
    attn_problem r = *p;
    r.mask.host = host;
    CU_ASSERT_FATAL(attn_reference_forward(&r, f->q, f->k, f->v, f->ref, L, NULL) == ATTN_SUCCESS);
    double atol, rtol;
    attn_tolerance(ATTN_F32, &atol, &rtol);
    if (L) /* only the entries' own rows count: the others are made equal */
        for (int b = 0; b < B; b++)
            for (int h = 0; h < HQ; h++)
                for (int i = 0; i < S; i++)
                    if (i < L->q_start[b] || i >= L->q_start[b] + L->q_len[b]) {
                        const size_t o = (((size_t)b * HQ + h) * S + i) * D;
                        memcpy(f->got + o, f->ref + o, D * sizeof(float));
                    }
    return harness_compare(what, f->got, f->ref, elems(HQ), atol, rtol, 71);
}

static cl_uint references(cl_mem m)
{
    cl_uint n = 0;
    clGetMemObjectInfo(m, CL_MEM_REFERENCE_COUNT, sizeof n, &n, NULL);
    return n;
}

/* m's reference count once the implementation has let go of what its
 * finished commands held: PoCL drops those a moment after the commands
 * complete (its cleanup, slower on a loaded machine: a fresh-clone run saw
 * one too many), so the count is read again, for up to a second, until it
 * is at most want. A count above want then is a reference really kept; one
 * below it is not waited for. */
static cl_uint references_settled(attn_context *ctx, cl_mem m, cl_uint want)
{
    clFinish(attn_context_queue(ctx));
    cl_uint n = references(m);
    const struct timespec ms = {0, 1000000};
    for (int i = 0; i < 1000 && n > want; i++) {
        nanosleep(&ms, NULL);
        n = references(m);
    }
    return n;
}

static void test_versioned_equals_fresh(void)
{
    fixture f;
    set_up(&f);
    float *host = malloc(sizeof(float) * S * S), *fresh = malloc(elems(HQ) * sizeof(float));
    CU_ASSERT_FATAL(host && fresh);
    write_mask(&f, host, 40);
    for (int fam = 0; fam < 2; fam++) {
        CU_ASSERT_FATAL(attn_context_set_params(f.ctx, families[fam]) == ATTN_SUCCESS);
        attn_problem p = problem(&f, host, 0);
        CU_ASSERT_FATAL(run(&f, &p, NULL) == 0);
        CU_ASSERT(against(&f, &p, host, NULL, families[fam]) == 0);
        memcpy(fresh, f.got, elems(HQ) * sizeof(float));
        p.mask.version = 7;
        for (int call = 0; call < 3; call++) { /* makes the summary, then finds it */
            CU_ASSERT_FATAL(run(&f, &p, NULL) == 0);
            CU_ASSERT(memcmp(fresh, f.got, elems(HQ) * sizeof(float)) == 0);
        }
        attn_context_release_workspace(f.ctx);
    }
    attn_context_set_params(f.ctx, NULL);
    free(host), free(fresh);
    tear_down(&f);
}

/* Under each family: keys 32..63 hidden from every row by `hole` (whole
 * tiles) under version 1, then the promise broken: new contents (open: no
 * key hidden), the same version. The kept summary still skips keys
 * 32..63, so the old answer comes back. Then, with what_next: nothing, or
 * version 2 sees the new contents, in version 1's place (an old version
 * kept beside it held the buffer until evicted). */
static void kept_past_a_broken_promise(float hole, int what_next)
{
    fixture f;
    set_up(&f);
    float *hidden = malloc(sizeof(float) * S * S), *open = malloc(sizeof(float) * S * S);
    CU_ASSERT_FATAL(hidden && open);
    for (int fam = 0; fam < 2; fam++) {
        CU_ASSERT_FATAL(attn_context_set_params(f.ctx, families[fam]) == ATTN_SUCCESS);
        write_mask_with(&f, hidden, S, hole);
        attn_problem p = problem(&f, hidden, 1);
        CU_ASSERT_FATAL(run(&f, &p, NULL) == 0);
        CU_ASSERT(against(&f, &p, hidden, NULL, "version 1") == 0);
        write_mask(&f, open, 0);
        CU_ASSERT_FATAL(run(&f, &p, NULL) == 0);
        CU_ASSERT(against(&f, &p, hidden, NULL, "version 1, rewritten: its tiles skipped") == 0);
        if (what_next) {
            printf("\n  (a mismatch against the new contents is expected here:)");
            CU_ASSERT(against(&f, &p, open, NULL, "version 1 against its new contents") > 0);
            p.mask.version = 2;
            CU_ASSERT_FATAL(clFinish(attn_context_queue(f.ctx)) == CL_SUCCESS);
            const cl_uint before = references_settled(f.ctx, f.mask, references(f.mask));
            CU_ASSERT_FATAL(run(&f, &p, NULL) == 0);
            CU_ASSERT(against(&f, &p, open, NULL, "version 2") == 0);
            /* version 2's summary took version 1's place, and its reference */
            CU_ASSERT(references_settled(f.ctx, f.mask, before) == before);
        }
        attn_context_release_workspace(f.ctx);
    }
    attn_context_set_params(f.ctx, NULL);
    free(hidden), free(open);
    tear_down(&f);
}

static void test_summary_is_kept_until_the_version_changes(void)
{
    kept_past_a_broken_promise(-INFINITY, 1);
}

/* A kernel folder's mask_tiles.cl may change between calls: no summary is
 * kept while one is set, and one kept before is dropped when it is set
 * (a summary written by other sources served the new folder's kernels).
 * Seen through a broken promise: the mask rewritten under its version is
 * read afresh. The folder holds the built-in sources. */
static void test_kernel_folder_keeps_no_summary(void)
{
    fixture f;
    set_up(&f);
    char dir[256];
    harness_temp_dir(dir, sizeof dir, "mask-kernels");
    harness_write_sources(f.ctx, dir, 0);
    float *hidden = malloc(sizeof(float) * S * S), *open = malloc(sizeof(float) * S * S);
    CU_ASSERT_FATAL(hidden && open);
    for (int before = 0; before < 2; before++) {
        CU_ASSERT_FATAL(attn_context_set_kernel_dir(f.ctx, before ? NULL : dir) == ATTN_SUCCESS);
        write_mask(&f, hidden, S);
        attn_problem p = problem(&f, hidden, 1);
        CU_ASSERT_FATAL(run(&f, &p, NULL) == 0); /* kept here only when before */
        CU_ASSERT(against(&f, &p, hidden, NULL, "version 1") == 0);
        if (before) CU_ASSERT_FATAL(attn_context_set_kernel_dir(f.ctx, dir) == ATTN_SUCCESS);
        write_mask(&f, open, 0);
        CU_ASSERT_FATAL(run(&f, &p, NULL) == 0);
        CU_ASSERT(against(&f, &p, open, NULL, "version 1 rewritten, with a kernel folder") == 0);
    }
    attn_context_set_kernel_dir(f.ctx, NULL);
    harness_remove_tree(dir);
    free(hidden), free(open);
    tear_down(&f);
}

/* A mask of finfo.min (-FLT_MAX, PyTorch's and Hugging Face's masked value)
 * hides a key as -inf does (attn.h), and whole tiles of it are skipped as
 * -inf's are. */
static void test_finfo_min_tiles_are_skipped(void) { kept_past_a_broken_promise(-FLT_MAX, 0); }

/* Rows < 36 hide keys 32..63. Summarised first for queries 36..63 only,
 * the row tile 32..39 is all zero; for all queries it is mixed (rows
 * 32..35 hide keys): a summary found by buffer and version alone would
 * let those rows see the hidden keys. */
static void test_other_lengths_are_summarised_afresh(void)
{
    fixture f;
    set_up(&f);
    float *host = malloc(sizeof(float) * S * S);
    CU_ASSERT_FATAL(host != NULL);
    write_mask(&f, host, 36);
    static const int late_start[B] = {36, 36}, late_len[B] = {S - 36, S - 36};
    static const int all_start[B] = {0, 0}, all_len[B] = {S, S};
    const attn_lengths late = {late_start, late_len, NULL, NULL};
    const attn_lengths all = {all_start, all_len, NULL, NULL};
    for (int fam = 0; fam < 2; fam++) {
        CU_ASSERT_FATAL(attn_context_set_params(f.ctx, families[fam]) == ATTN_SUCCESS);
        attn_problem p = problem(&f, host, 3);
        CU_ASSERT_FATAL(run(&f, &p, &late) == 0);
        CU_ASSERT(against(&f, &p, host, &late, "queries 36..63") == 0);
        CU_ASSERT_FATAL(run(&f, &p, &all) == 0);
        CU_ASSERT(against(&f, &p, host, &all, "then every query") == 0);
        attn_context_release_workspace(f.ctx);
    }
    attn_context_set_params(f.ctx, NULL);
    free(host);
    tear_down(&f);
}

/* One buffer and version, two layouts: a plane of zeros at offset 0 and
 * keys 32..63 hidden at offset S * S; then the tile rows changed (8 to
 * 16) under a mask whose row tile 32..47 is mixed. Each call must get its
 * own summary. */
static void test_other_layouts_are_summarised_afresh(void)
{
    fixture f;
    set_up(&f);
    float *planes = malloc(2 * sizeof(float) * S * S), *host = malloc(sizeof(float) * S * S);
    CU_ASSERT_FATAL(planes != NULL && host != NULL);
    for (int i = 0; i < S * S; i++) planes[i] = 0.0f, planes[S * S + i] = i % S >= HIDE_FROM ? -INFINITY : 0.0f;
    cl_int err;
    cl_mem two = clCreateBuffer(attn_context_cl_context(f.ctx), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                2 * sizeof(float) * S * S, planes, &err);
    CU_ASSERT_FATAL(err == CL_SUCCESS);
    write_mask(&f, host, 36);
    static const char *const rows16[] = {"family=vector,rows=16,keys=16",
                                         "family=tiled,rows=16,keys=16"};
    for (int fam = 0; fam < 2; fam++) {
        CU_ASSERT_FATAL(attn_context_set_params(f.ctx, families[fam]) == ATTN_SUCCESS);
        attn_problem p = problem(&f, planes, 5); /* the host copy: the same offset */
        p.mask.buffer = two, p.mask.offset = (size_t)S * S;
        CU_ASSERT_FATAL(run(&f, &p, NULL) == 0);
        CU_ASSERT(against(&f, &p, planes, NULL, "offset S * S") == 0);
        p.mask.offset = 0;
        CU_ASSERT_FATAL(run(&f, &p, NULL) == 0);
        CU_ASSERT(against(&f, &p, planes, NULL, "then offset 0") == 0);
        attn_problem q = problem(&f, host, 6);
        CU_ASSERT_FATAL(run(&f, &q, NULL) == 0);
        CU_ASSERT(against(&f, &q, host, NULL, "rows 8") == 0);
        CU_ASSERT_FATAL(attn_context_set_params(f.ctx, rows16[fam]) == ATTN_SUCCESS);
        CU_ASSERT_FATAL(run(&f, &q, NULL) == 0);
        CU_ASSERT(against(&f, &q, host, NULL, "then rows 16") == 0);
        attn_context_release_workspace(f.ctx);
    }
    attn_context_set_params(f.ctx, NULL);
    clReleaseMemObject(two);
    free(planes), free(host);
    tear_down(&f);
}

/* The same buffer and version under key tiles of 16, then of 32 keys: a
 * mask that hides keys 16..31 hides a whole tile of the first and half a
 * tile of the second, so the first's summary would skip visible keys (a
 * key that left the tile's keys out passed the suite). */
static void test_other_key_tiles_are_summarised_afresh(void)
{
    fixture f;
    set_up(&f);
    float *host = malloc(sizeof(float) * S * S);
    CU_ASSERT_FATAL(host != NULL);
    for (int r = 0; r < S; r++)
        for (int c = 0; c < S; c++) host[r * S + c] = c >= 16 && c < 32 ? -INFINITY : 0.0f;
    CU_ASSERT_FATAL(clEnqueueWriteBuffer(attn_context_queue(f.ctx), f.mask, CL_TRUE, 0,
                                         sizeof(float) * S * S, host, 0, NULL, NULL) == CL_SUCCESS);
    static const char *const keys32[] = {"family=vector,rows=8,keys=32",
                                         "family=tiled,rows=8,keys=32"};
    for (int fam = 0; fam < 2; fam++) {
        CU_ASSERT_FATAL(attn_context_set_params(f.ctx, families[fam]) == ATTN_SUCCESS);
        const attn_problem p = problem(&f, host, 9);
        CU_ASSERT_FATAL(run(&f, &p, NULL) == 0);
        CU_ASSERT(against(&f, &p, host, NULL, "keys 16") == 0);
        CU_ASSERT_FATAL(attn_context_set_params(f.ctx, keys32[fam]) == ATTN_SUCCESS);
        CU_ASSERT_FATAL(run(&f, &p, NULL) == 0);
        CU_ASSERT(against(&f, &p, host, NULL, "then keys 32") == 0);
        attn_context_release_workspace(f.ctx);
    }
    attn_context_set_params(f.ctx, NULL);
    free(host);
    tear_down(&f);
}

/* The same buffer and version read with a query stride of 0 (every row is
 * row 0, which hides nothing), then of S (rows below 36 hide keys 32..):
 * the first's summary would skip nothing the second hides (a key that
 * left the stride out passed the suite). */
static void test_other_strides_are_summarised_afresh(void)
{
    fixture f;
    set_up(&f);
    float *host = malloc(sizeof(float) * S * S), *row0 = malloc(sizeof(float) * S * S);
    CU_ASSERT_FATAL(host && row0);
    write_mask(&f, host, 36);
    for (int r = 0; r < S; r++) memcpy(row0 + r * S, host, sizeof(float) * S);
    for (int fam = 0; fam < 2; fam++) {
        CU_ASSERT_FATAL(attn_context_set_params(f.ctx, families[fam]) == ATTN_SUCCESS);
        attn_problem p = problem(&f, host, 10);
        p.mask.stride_q = 0;
        CU_ASSERT_FATAL(run(&f, &p, NULL) == 0);
        attn_problem as_read = p;
        as_read.mask.stride_q = S; /* the reference reads row0 as written out */
        CU_ASSERT(against(&f, &as_read, row0, NULL, "stride_q 0") == 0);
        p.mask.stride_q = S;
        CU_ASSERT_FATAL(run(&f, &p, NULL) == 0);
        CU_ASSERT(against(&f, &p, host, NULL, "then stride_q S") == 0);
        attn_context_release_workspace(f.ctx);
    }
    attn_context_set_params(f.ctx, NULL);
    free(host), free(row0);
    tear_down(&f);
}

/* n buffers holding f's mask, each a mask of its own to the cache */
static void copies_of_mask(fixture *f, cl_mem *masks, int n)
{
    for (int i = 0; i < n; i++) {
        masks[i] = harness_float_buffer(f->ctx, (size_t)S * S);
        CU_ASSERT_FATAL(masks[i] != NULL);
        CU_ASSERT_FATAL(clEnqueueCopyBuffer(attn_context_queue(f->ctx), f->mask, masks[i], 0, 0,
                                            sizeof(float) * S * S, 0, NULL, NULL) == CL_SUCCESS);
    }
}

/* A summary found again counts as used: with mask 0 used again before the
 * cache fills, the one to go is mask 1, and mask 0 keeps its reference (a
 * lookup that did not refresh the entry passed the suite). */
static void test_found_again_is_kept(void)
{
    fixture f;
    set_up(&f);
    enum { N = ATTN_MASK_CACHE_ENTRIES + 1 };
    float *host = malloc(sizeof(float) * S * S);
    CU_ASSERT_FATAL(host != NULL);
    write_mask(&f, host, 20);
    cl_mem masks[N];
    cl_uint kept[N];
    copies_of_mask(&f, masks, N);
    for (int i = 0; i < N; i++) {
        attn_problem p = problem(&f, host, 1);
        if (i == N - 1) { /* mask 0 again, before the last one */
            p.mask.buffer = masks[0];
            CU_ASSERT_FATAL(run(&f, &p, NULL) == 0);
        }
        p.mask.buffer = masks[i];
        CU_ASSERT_FATAL(clFinish(attn_context_queue(f.ctx)) == CL_SUCCESS);
        const cl_uint before = references(masks[i]);
        CU_ASSERT_FATAL(run(&f, &p, NULL) == 0);
        kept[i] = references_settled(f.ctx, masks[i], before + 1);
    }
    CU_ASSERT(references_settled(f.ctx, masks[0], kept[0]) == kept[0]);
    CU_ASSERT(references_settled(f.ctx, masks[1], kept[1] - 1) == kept[1] - 1);
    attn_context_release_workspace(f.ctx);
    for (int i = 0; i < N; i++) clReleaseMemObject(masks[i]);
    free(host);
    tear_down(&f);
}

static void test_references_bounded_and_released(void)
{
    fixture f;
    set_up(&f);
    enum { N = ATTN_MASK_CACHE_ENTRIES + 1 };
    float *host = malloc(sizeof(float) * S * S);
    CU_ASSERT_FATAL(host != NULL);
    write_mask(&f, host, 20);
    cl_mem masks[N];
    copies_of_mask(&f, masks, N);
    /* counts compared at quiet points (every command finished), each with
     * its own earlier count: an implementation may hold some of its own */
    cl_uint kept[N];
    for (int i = 0; i < N; i++) {
        attn_problem p = problem(&f, host, 1);
        p.mask.buffer = masks[i];
        CU_ASSERT_FATAL(clFinish(attn_context_queue(f.ctx)) == CL_SUCCESS);
        const cl_uint before = references(masks[i]);
        CU_ASSERT_FATAL(run(&f, &p, NULL) == 0);
        CU_ASSERT(against(&f, &p, host, NULL, "one of several masks") == 0);
        kept[i] = references_settled(f.ctx, masks[i], before + 1);
        CU_ASSERT(kept[i] == before + 1); /* the cache's */
    }
    /* the least recently used went, with its reference; the rest stay */
    CU_ASSERT(references_settled(f.ctx, masks[0], kept[0] - 1) == kept[0] - 1);
    for (int i = 1; i < N; i++)
        CU_ASSERT(references_settled(f.ctx, masks[i], kept[i]) == kept[i]);
    size_t held = 0;
    CU_ASSERT(attn_context_workspace_bytes(f.ctx, &held) == ATTN_SUCCESS);
    CU_ASSERT(held > 0);
    CU_ASSERT(attn_context_release_workspace(f.ctx) == ATTN_SUCCESS);
    CU_ASSERT(references_settled(f.ctx, masks[0], kept[0] - 1) == kept[0] - 1);
    for (int i = 1; i < N; i++)
        CU_ASSERT(references_settled(f.ctx, masks[i], kept[i] - 1) == kept[i] - 1);
    CU_ASSERT(attn_context_workspace_bytes(f.ctx, &held) == ATTN_SUCCESS);
    CU_ASSERT(held == 0);
    for (int i = 0; i < N; i++) clReleaseMemObject(masks[i]);
    free(host);
    tear_down(&f);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_kernel_folder_keeps_no_summary),
    HARNESS_TEST(test_versioned_equals_fresh),
    HARNESS_TEST(test_summary_is_kept_until_the_version_changes),
    HARNESS_TEST(test_finfo_min_tiles_are_skipped),
    HARNESS_TEST(test_other_lengths_are_summarised_afresh),
    HARNESS_TEST(test_other_layouts_are_summarised_afresh),
    HARNESS_TEST(test_other_key_tiles_are_summarised_afresh),
    HARNESS_TEST(test_other_strides_are_summarised_afresh),
    HARNESS_TEST(test_references_bounded_and_released),
    HARNESS_TEST(test_found_again_is_kept),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("mask_cache", tests); }

int main(void) { return harness_run("test_mask_cache", register_tests); }
