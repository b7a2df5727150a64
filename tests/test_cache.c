/* test_cache.c -- the program cache: per context in memory, on disk across
 * contexts and processes, and what happens when the disk copy is corrupt or
 * the folder cannot be written; kernel sources from ATTN_KERNEL_DIR (a
 * working copy, a broken one, a missing file); check mode catching a kernel
 * that is subtly wrong.
 *
 * Every test works in a fresh cache folder under /tmp (removed afterwards),
 * given to its contexts by attn_context_set_cache_dir. Child processes of
 * the test binary (harness_run_child) show that a new process loads from
 * disk instead of rebuilding, and that ATTN_CHECK sets check mode; build
 * and load times are printed as "cache timing:" lines. */
#define _XOPEN_SOURCE 700
#include "harness.h"
#include "core/context.h"
#include "core/errors.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/program.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers: folders, files ---- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}


/* The cache folder of the contexts new_context makes. */
static char g_cache[2048];

/* A fresh cache folder, for the contexts new_context makes. */
static void fresh_cache_dir(char *buf, size_t size)
{
    harness_temp_dir(buf, size, "cache");
    snprintf(g_cache, sizeof g_cache, "%s", buf);
}

/* Number of *.bin files in dir; the last one's path in first (if given). */
static int count_bins(const char *dir, char *first, size_t size)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".bin") == 0) {
            n++;
            if (first) snprintf(first, size, "%s/%s", dir, e->d_name);
        }
    }
    closedir(d);
    return n;
}

/* Number of entries (other than . and ..) in dir. */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void write_all(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(data, 1, len, f), len);
    CU_ASSERT_EQUAL(fclose(f), 0);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    write_all(path, text, strlen(text));
}

/* ---- helpers: contexts and problems ---- */

/* A context on g_cache, the embedded sources and check mode off, whatever
 * the environment says. */
static attn_context *new_context(void)
{
    attn_context *c = NULL;
    attn_status st = attn_context_create(getenv("ATTN_TEST_DEVICE"), &c);
    if (st != ATTN_SUCCESS)
        printf("\n  attn_context_create: %s: %s\n", attn_status_name(st), attn_last_create_error());
    CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_context_set_cache_dir(c, g_cache), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_context_set_kernel_dir(c, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_context_set_check(c, 0), ATTN_SUCCESS);
    return c;
}

/* Small enough to build quickly; one program per (D, dtype) on any family. */
static attn_problem small_problem(void)
{
    attn_problem p;
    memset(&p, 0, sizeof p);
    p.batch = 1;
    p.q_heads = 2;
    p.kv_heads = 1;
    p.head_dim = 16;
    p.q_len = 16;
    p.kv_len = 16;
    p.dtype = ATTN_F32;
    p.causal = 1;
    return p;
}

static attn_status prepare_verbose(attn_context *ctx, const attn_problem *p)
{
    attn_status st = attn_prepare(ctx, p, NULL);
    if (st != ATTN_SUCCESS)
        printf("\n  attn_prepare: %s: %s\n", attn_status_name(st), attn_last_error(ctx));
    return st;
}

/* Inputs, a forward, and the comparison with the reference. Returns the
 * forward's status (after printing the message when it is not success);
 * *bad receives the number of elements beyond tolerance (when it ran). */
typedef struct run {
    attn_tensor q, k, v, o;
    cl_mem lse;
    float *hq, *hk, *hv;
} run;

static void run_setup(attn_context *ctx, const attn_problem *p, run *r, uint64_t seed)
{
    memset(r, 0, sizeof *r);
    size_t nq = (size_t)p->batch * p->q_heads * p->q_len * p->head_dim;
    size_t nk = (size_t)p->batch * p->kv_heads * p->kv_len * p->head_dim;
    r->hq = malloc(nq * sizeof(float));
    r->hk = malloc(nk * sizeof(float));
    r->hv = malloc(nk * sizeof(float));
    CU_ASSERT_FATAL(r->hq && r->hk && r->hv);
    harness_fill_uniform(r->hq, nq, seed, -1.0f, 1.0f);
    harness_fill_uniform(r->hk, nk, seed + 1, -1.0f, 1.0f);
    /* values near 1: a 1% error in the normalisation is far beyond tolerance */
    harness_fill_uniform(r->hv, nk, seed + 2, 0.5f, 1.5f);
    CU_ASSERT_PTR_NOT_NULL_FATAL(harness_upload(ctx, p->dtype, r->hq, p->batch, p->q_heads,
                                                p->q_len, p->head_dim, NULL, &r->q));
    CU_ASSERT_PTR_NOT_NULL_FATAL(harness_upload(ctx, p->dtype, r->hk, p->batch, p->kv_heads,
                                                p->kv_len, p->head_dim, NULL, &r->k));
    CU_ASSERT_PTR_NOT_NULL_FATAL(harness_upload(ctx, p->dtype, r->hv, p->batch, p->kv_heads,
                                                p->kv_len, p->head_dim, NULL, &r->v));
    CU_ASSERT_PTR_NOT_NULL_FATAL(harness_alloc(ctx, p->dtype, p->batch, p->q_heads, p->q_len,
                                               p->head_dim, NULL, &r->o));
    r->lse = harness_float_buffer(ctx, (size_t)p->batch * p->q_heads * p->q_len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r->lse);
}

static void run_free(run *r)
{
    cl_mem m[] = {r->q.buffer, r->k.buffer, r->v.buffer, r->o.buffer, r->lse};
    for (int i = 0; i < 5; i++)
        if (m[i]) clReleaseMemObject(m[i]);
    free(r->hq);
    free(r->hk);
    free(r->hv);
}

/* Elements of out (from tensor t) beyond tolerance of the reference. */
static int run_errors(attn_context *ctx, const attn_problem *p, run *r, const attn_tensor *t)
{
    size_t no = (size_t)p->batch * p->q_heads * p->q_len * p->head_dim;
    float *got = malloc(no * sizeof *got), *ref = malloc(no * sizeof *ref);
    CU_ASSERT_FATAL(got && ref);
    CU_ASSERT_EQUAL(clFinish(attn_context_queue(ctx)), CL_SUCCESS);
    CU_ASSERT_EQUAL(harness_download(ctx, p->dtype, t, p->batch, p->q_heads, p->q_len,
                                     p->head_dim, got), 0);
    CU_ASSERT_EQUAL(attn_reference_forward(p, r->hq, r->hk, r->hv, ref, NULL, NULL),
                    ATTN_SUCCESS);
    double atol, rtol;
    attn_tolerance(p->dtype, &atol, &rtol);
    int bad = harness_compare("out", got, ref, no, atol, rtol, 7);
    free(got);
    free(ref);
    return bad;
}

/* A forward on fresh inputs, checked against the reference. */
static void forward_is_right(attn_context *ctx, const attn_problem *p)
{
    run r;
    run_setup(ctx, p, &r, 7);
    attn_status st = attn_forward(ctx, p, &r.q, &r.k, &r.v, &r.o, NULL, r.lse, NULL);
    if (st != ATTN_SUCCESS) printf("\n  attn_forward: %s: %s\n", attn_status_name(st), attn_last_error(ctx));
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st == ATTN_SUCCESS) CU_ASSERT_EQUAL(run_errors(ctx, p, &r, &r.o), 0);
    run_free(&r);
}

/* ---- (a) miss, then hit: memory and disk ---- */

static void test_miss_then_hit(void)
{
    char dir[512];
    fresh_cache_dir(dir, sizeof dir);
    attn_problem p = small_problem();

    attn_context *c1 = new_context();
    CU_ASSERT_EQUAL(prepare_verbose(c1, &p), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(c1->programs_built, 1);
    CU_ASSERT_EQUAL(c1->programs_from_disk, 0);
    CU_ASSERT_EQUAL(c1->programs_from_memory, 0);
    CU_ASSERT_EQUAL(count_bins(dir, NULL, 0), 1);
    /* the same context again: memory */
    CU_ASSERT_EQUAL(prepare_verbose(c1, &p), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(c1->programs_built, 1);
    CU_ASSERT_EQUAL(c1->programs_from_memory, 1);
    /* a forward fetches its kernel(s) from memory too, never rebuilds */
    forward_is_right(c1, &p);
    CU_ASSERT_EQUAL(c1->programs_built, 1);
    CU_ASSERT(c1->programs_from_memory >= 2);
    /* another problem (head dim) is another program and another file */
    attn_problem p2 = p;
    p2.head_dim = 32;
    CU_ASSERT_EQUAL(prepare_verbose(c1, &p2), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(c1->programs_built, 2);
    CU_ASSERT_EQUAL(count_bins(dir, NULL, 0), 2);
    attn_context_release(c1);

    /* a new context: both from disk, nothing built */
    attn_context *c2 = new_context();
    CU_ASSERT_EQUAL(prepare_verbose(c2, &p), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(c2->programs_built, 0);
    CU_ASSERT_EQUAL(c2->programs_from_disk, 1);
    CU_ASSERT_EQUAL(c2->programs_from_memory, 0);
    CU_ASSERT_EQUAL(prepare_verbose(c2, &p), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(c2->programs_from_disk, 1);
    CU_ASSERT_EQUAL(c2->programs_from_memory, 1);
    CU_ASSERT_EQUAL(prepare_verbose(c2, &p2), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(c2->programs_from_disk, 2);
    CU_ASSERT_EQUAL(c2->programs_built, 0);
    /* a program loaded from disk computes the right thing */
    forward_is_right(c2, &p);
    forward_is_right(c2, &p2);
    CU_ASSERT_EQUAL(c2->programs_built, 0);
    CU_ASSERT_EQUAL(count_bins(dir, NULL, 0), 2);
    /* no temporary files left behind */
    CU_ASSERT_EQUAL(count_entries(dir), 2);
    attn_context_release(c2);

    harness_remove_tree(dir);
}

/* ---- (b) a second process does not rebuild ---- */

/* Child check: one context (ATTN_CACHE_DIR from the environment), one
 * prepare, one forward, with want_built programs built and want_disk loaded;
 * prints its times. */
static void prepare_in_child(unsigned want_built, unsigned want_disk)
{
    attn_context *c = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &c), ATTN_SUCCESS);
    attn_problem p = small_problem();
    double t0 = now_ms();
    attn_status st = prepare_verbose(c, &p);
    double t1 = now_ms();
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    /* the first forward too: some drivers finish code generation lazily */
    size_t nq = (size_t)p.batch * p.q_heads * p.q_len * p.head_dim;
    size_t nk = (size_t)p.batch * p.kv_heads * p.kv_len * p.head_dim;
    float *x = calloc(nq > nk ? nq : nk, sizeof *x);
    CU_ASSERT_PTR_NOT_NULL(x);
    attn_tensor q, k, v, o;
    cl_mem bq = harness_upload(c, p.dtype, x, p.batch, p.q_heads, p.q_len, p.head_dim, NULL, &q);
    cl_mem bk = harness_upload(c, p.dtype, x, p.batch, p.kv_heads, p.kv_len, p.head_dim, NULL, &k);
    cl_mem bv = harness_upload(c, p.dtype, x, p.batch, p.kv_heads, p.kv_len, p.head_dim, NULL, &v);
    cl_mem bo = harness_alloc(c, p.dtype, p.batch, p.q_heads, p.q_len, p.head_dim, NULL, &o);
    CU_ASSERT(bq && bk && bv && bo);
    double t2 = now_ms();
    if (st == ATTN_SUCCESS && bq && bk && bv && bo) {
        st = attn_forward(c, &p, &q, &k, &v, &o, NULL, NULL, NULL);
        CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
        clFinish(attn_context_queue(c));
    }
    double t3 = now_ms();
    printf("cache timing: %s process (POCL_KERNEL_CACHE=%s): attn_prepare %.1f ms, first "
           "attn_forward %.1f ms (built %u, from disk %u)\n",
           c->programs_built ? "cold" : "warm",
           getenv("POCL_KERNEL_CACHE") ? getenv("POCL_KERNEL_CACHE") : "unset", t1 - t0, t3 - t2,
           c->programs_built, c->programs_from_disk);
    CU_ASSERT_EQUAL(c->programs_built, want_built);
    CU_ASSERT_EQUAL(c->programs_from_disk, want_disk);
    cl_mem m[] = {bq, bk, bv, bo};
    for (int i = 0; i < 4; i++)
        if (m[i]) clReleaseMemObject(m[i]);
    free(x);
    attn_context_release(c);
}

static void child_prepare_cold(void) { prepare_in_child(1, 0); }
static void child_prepare_warm(void) { prepare_in_child(0, 1); }

/* Runs child check `check` on the cache folder g_cache, the embedded
 * sources, check mode off and extra (NULL or "NAME=value"); returns its exit
 * status. */
static int spawn_child(const char *check, const char *extra)
{
    char cache[2100];
    snprintf(cache, sizeof cache, "ATTN_CACHE_DIR=%s", g_cache);
    const char *const env[] = {cache, "ATTN_KERNEL_DIR", "ATTN_CHECK", extra, NULL};
    return harness_run_child(check, env, NULL);
}

static void test_second_process(void)
{
    char dir[512];
    fresh_cache_dir(dir, sizeof dir);
    printf("\n");
    /* with PoCL's own kernel cache off, the times are attn's alone */
    CU_ASSERT_EQUAL(spawn_child("child_prepare_cold", "POCL_KERNEL_CACHE=0"), 0);
    CU_ASSERT_EQUAL(count_bins(dir, NULL, 0), 1);
    CU_ASSERT_EQUAL(spawn_child("child_prepare_warm", "POCL_KERNEL_CACHE=0"), 0);
    /* and with the environment as it is, twice: PoCL's own cache then holds
     * the code it generates at the first enqueue */
    CU_ASSERT_EQUAL(spawn_child("child_prepare_warm", NULL), 0);
    CU_ASSERT_EQUAL(spawn_child("child_prepare_warm", NULL), 0);

    /* the same measured in this process: a fresh context on an empty folder,
     * then a fresh context on the populated one */
    char dir2[512];
    fresh_cache_dir(dir2, sizeof dir2);
    attn_problem p = small_problem();
    p.head_dim = 24; /* a program no other test builds: cold unless PoCL's cache has it */
    attn_context *c1 = new_context();
    double t0 = now_ms();
    CU_ASSERT_EQUAL(prepare_verbose(c1, &p), ATTN_SUCCESS);
    double t1 = now_ms();
    CU_ASSERT_EQUAL(c1->programs_built, 1);
    attn_context_release(c1);
    attn_context *c2 = new_context();
    double t2 = now_ms();
    CU_ASSERT_EQUAL(prepare_verbose(c2, &p), ATTN_SUCCESS);
    double t3 = now_ms();
    CU_ASSERT_EQUAL(c2->programs_built, 0);
    CU_ASSERT_EQUAL(c2->programs_from_disk, 1);
    double t4 = now_ms();
    CU_ASSERT_EQUAL(prepare_verbose(c2, &p), ATTN_SUCCESS);
    double t5 = now_ms();
    CU_ASSERT_EQUAL(c2->programs_from_memory, 1);
    printf("cache timing: in process (D=%d, f32, PoCL's cache as the environment sets it): "
           "attn_prepare built %.1f ms, disk hit %.1f ms, memory hit %.3f ms\n", p.head_dim,
           t1 - t0, t3 - t2, t5 - t4);
    fflush(stdout);
    attn_context_release(c2);
    harness_remove_tree(dir);
    harness_remove_tree(dir2);
}

/* ---- (c) corrupt cache files are rebuilt and rewritten ---- */

enum { HEADER_BYTES = 32 }; /* magic 8, format 4, key length 4, binary length 8, hash 8 */

static void test_corrupt_files(void)
{
    char dir[512], path[1024];
    fresh_cache_dir(dir, sizeof dir);
    attn_problem p = small_problem();
    attn_context *c0 = new_context();
    CU_ASSERT_EQUAL_FATAL(prepare_verbose(c0, &p), ATTN_SUCCESS);
    attn_context_release(c0);
    CU_ASSERT_EQUAL_FATAL(count_bins(dir, path, sizeof path), 1);
    size_t len;
    char *good = harness_read_file(path, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(good);
    CU_ASSERT_FATAL(len > HEADER_BYTES + 100);
    CU_ASSERT_EQUAL(memcmp(good, "ATTNBIN\n", 8), 0);
    uint32_t key_len;
    memcpy(&key_len, good + 12, 4);
    CU_ASSERT_FATAL(HEADER_BYTES + (size_t)key_len < len);

    static const char *modes[] = {"half",      "empty",      "garbage",     "payload byte",
                                  "key byte",  "format",     "trailing",    "header only",
                                  "huge length", "payload garbage, valid checksum"};
    for (int m = 0; m < (int)(sizeof modes / sizeof modes[0]); m++) {
        unsigned char *bad = malloc(len + 1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
        memcpy(bad, good, len);
        size_t blen = len;
        switch (m) {
        case 0: blen = len / 2; break;
        case 1: blen = 0; break;
        case 2: {
            harness_rng r;
            harness_rng_seed(&r, 99);
            for (size_t i = 0; i < len; i++) bad[i] = (unsigned char)harness_rng_next(&r);
            break;
        }
        case 3: bad[len - 1 - (len - HEADER_BYTES - key_len) / 2] ^= 0x01; break; /* mid-payload */
        case 4: bad[HEADER_BYTES + key_len / 2] ^= 0x20; break;
        case 5: bad[8] ^= 0x02; break; /* the format version */
        case 6: bad[len] = 0; blen = len + 1; break;
        case 7: blen = HEADER_BYTES; break;
        case 8: memset(bad + 16, 0xff, 8); break; /* binary length */
        case 9: { /* passes every check of the file; the driver must reject it */
            size_t at = HEADER_BYTES + key_len, n = len - at;
            harness_rng r;
            harness_rng_seed(&r, 98);
            for (size_t i = 0; i < n; i++) bad[at + i] = (unsigned char)harness_rng_next(&r);
            uint64_t h = attn_hash_bytes(ATTN_HASH_INIT, bad + at, n);
            memcpy(bad + 24, &h, 8);
            break;
        }
        }
        write_all(path, bad, blen);
        free(bad);

        attn_context *c = new_context();
        attn_status st = prepare_verbose(c, &p);
        CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
        CU_ASSERT_EQUAL(c->programs_built, 1);
        CU_ASSERT_EQUAL(c->programs_from_disk, 0);
        if (c->programs_built != 1) printf("\n  corruption \"%s\" was not rebuilt\n", modes[m]);
        attn_context_release(c);

        /* rewritten: a valid file of the original length, which loads */
        size_t nlen;
        char *now = harness_read_file(path, &nlen);
        CU_ASSERT_PTR_NOT_NULL(now);
        CU_ASSERT_EQUAL(nlen, len);
        CU_ASSERT(now && nlen >= 8 && memcmp(now, "ATTNBIN\n", 8) == 0);
        free(now);
        c = new_context();
        CU_ASSERT_EQUAL(prepare_verbose(c, &p), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(c->programs_built, 0);
        CU_ASSERT_EQUAL(c->programs_from_disk, 1);
        if (c->programs_from_disk != 1)
            printf("\n  after corruption \"%s\" the file was not rewritten valid\n", modes[m]);
        if (m == 0) forward_is_right(c, &p);
        attn_context_release(c);
        CU_ASSERT_EQUAL(count_entries(dir), 1);
    }
    free(good);
    harness_remove_tree(dir);
}

/* ---- several contexts filling the cache at once ---- */

typedef struct store_arg {
    attn_context *ctx;
    attn_status st;
} store_arg;

static void *store_thread(void *varg)
{
    store_arg *a = varg;
    attn_problem p = small_problem();
    a->st = attn_prepare(a->ctx, &p, NULL);
    return NULL;
}

/* Threads of one process, each with its own context, building and storing
 * the same program at the same moment: every prepare succeeds, one valid
 * file remains (no temporary files) and it loads. */
static void test_concurrent_store(void)
{
    char dir[512];
    fresh_cache_dir(dir, sizeof dir);
    enum { T = 4 };
    pthread_t th[T];
    store_arg args[T];
    for (int i = 0; i < T; i++) args[i].ctx = new_context();
    for (int i = 0; i < T; i++)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, store_thread, &args[i]), 0);
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        CU_ASSERT_EQUAL(args[i].st, ATTN_SUCCESS);
        attn_context_release(args[i].ctx);
    }
    CU_ASSERT_EQUAL(count_bins(dir, NULL, 0), 1);
    CU_ASSERT_EQUAL(count_entries(dir), 1);
    attn_context *c = new_context();
    attn_problem p = small_problem();
    CU_ASSERT_EQUAL(prepare_verbose(c, &p), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(c->programs_from_disk, 1);
    CU_ASSERT_EQUAL(c->programs_built, 0);
    attn_context_release(c);
    harness_remove_tree(dir);
}

/* ---- (d) a cache folder that cannot be written ---- */

static void test_unwritable_cache_dir(void)
{
    char base[512], file[1024], sub[1536];
    harness_temp_dir(base, sizeof base, "unwritable");
    snprintf(file, sizeof file, "%s/file", base);
    write_all(file, "not a folder\n", 13);
    attn_problem p = small_problem();

    /* a path under a regular file (mkdir fails with ENOTDIR, even for root),
     * and the regular file itself */
    snprintf(sub, sizeof sub, "%s/sub/deeper", file);
    const char *paths[] = {sub, file};
    for (int i = 0; i < 2; i++) {
        snprintf(g_cache, sizeof g_cache, "%s", paths[i]);
        for (int round = 0; round < 2; round++) {
            attn_context *c = new_context();
            CU_ASSERT_EQUAL(prepare_verbose(c, &p), ATTN_SUCCESS);
            CU_ASSERT_EQUAL(c->programs_built, 1); /* every context rebuilds */
            CU_ASSERT_EQUAL(c->programs_from_disk, 0);
            forward_is_right(c, &p);
            attn_context_release(c);
        }
    }
    size_t len;
    char *text = harness_read_file(file, &len);
    CU_ASSERT(text && len == 13 && memcmp(text, "not a folder\n", 13) == 0);
    free(text);
    CU_ASSERT_EQUAL(count_entries(base), 1);

    /* a read-only folder: only meaningful when not root (root writes anyway) */
    char ro[1024];
    snprintf(ro, sizeof ro, "%s/ro", base);
    CU_ASSERT_EQUAL_FATAL(mkdir(ro, 0555), 0);
    snprintf(g_cache, sizeof g_cache, "%s", ro);
    attn_context *c = new_context();
    CU_ASSERT_EQUAL(prepare_verbose(c, &p), ATTN_SUCCESS);
    forward_is_right(c, &p);
    if (geteuid() != 0) CU_ASSERT_EQUAL(count_entries(ro), 0);
    attn_context_release(c);

    harness_remove_tree(base);
}

/* ---- (e) ATTN_KERNEL_DIR ---- */

/* the forward families' files; 1 and 2 are the cores, where the kernels'
 * bodies (and the final normalisation) are */
static const char *const source_names[] = {"common.cl",         "tiled_core.cl", "vector_core.cl",
                                           "peak.cl",           "vector_helpers.cl", "tiled.cl",
                                           "vector.cl",         "variants.cl",   "mask_tiles.cl"};
enum { NSOURCES = sizeof source_names / sizeof source_names[0] };

/* Writes the embedded sources (ctx was created without ATTN_KERNEL_DIR)
 * into dir; returns them (malloc'd) in text[]. */
static void export_sources(attn_context *ctx, const char *dir, char *text[NSOURCES])
{
    for (int i = 0; i < NSOURCES; i++) {
        text[i] = attn_kernel_source(ctx, source_names[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(text[i]);
        CU_ASSERT(strlen(text[i]) > 100);
        write_text(dir, source_names[i], text[i]);
    }
}

/* A new context reading its kernel sources from dir (NULL: the embedded
 * ones). */
static attn_context *kernel_dir_context(const char *dir)
{
    attn_context *c = new_context();
    CU_ASSERT_EQUAL(attn_context_set_kernel_dir(c, dir), ATTN_SUCCESS);
    return c;
}

/* A context on dir whose prepare fails with ATTN_ERROR_IO naming dir and
 * one of the files. */
static void missing_sources(const char *dir, const char *const *files, int nfiles)
{
    attn_problem p = small_problem();
    attn_context *ctx = kernel_dir_context(dir);
    attn_status st = attn_prepare(ctx, &p, NULL);
    CU_ASSERT_EQUAL(st, ATTN_ERROR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), dir));
    int named = 0;
    for (int i = 0; i < nfiles; i++) named += strstr(attn_last_error(ctx), files[i]) != NULL;
    CU_ASSERT(named > 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), ": no such file")); /* and why */
    if (st != ATTN_ERROR_IO || !named)
        printf("\n  missing file: %s: %s\n", attn_status_name(st), attn_last_error(ctx));
    attn_context_release(ctx);
}

/* What a debug-level callback saw of a failed build: messages with a
 * newline (a log message is one line), and build-log lines with the
 * compiler's error. */
typedef struct { int multi_line, log_lines, log_errors; } seen_log;

static void watch_log(attn_log_level level, const char *message, void *user)
{
    seen_log *s = user;
    (void)level;
    s->multi_line += strchr(message, '\n') != NULL;
    if (strncmp(message, "build log: ", 11) == 0) {
        s->log_lines++;
        s->log_errors += strstr(message, "error") != NULL;
    }
}

static void test_kernel_dir(void)
{
    char cache[512], kdir[512], broken[512], partial[512], empty[512];
    fresh_cache_dir(cache, sizeof cache);
    harness_temp_dir(kdir, sizeof kdir, "kernels");
    harness_temp_dir(broken, sizeof broken, "broken");
    harness_temp_dir(partial, sizeof partial, "partial");
    harness_temp_dir(empty, sizeof empty, "empty");
    attn_problem p = small_problem();
    attn_context *ctx = new_context();
    char *text[NSOURCES];
    export_sources(ctx, kdir, text);
    attn_context_release(ctx);

    /* a working copy: builds and computes the right thing */
    ctx = kernel_dir_context(kdir);
    CU_ASSERT_EQUAL(prepare_verbose(ctx, &p), ATTN_SUCCESS);
    forward_is_right(ctx, &p);
    CU_ASSERT_PTR_NULL(strstr(attn_last_error(ctx), "ATTN"));
    attn_context_release(ctx);
    int bins = count_bins(cache, NULL, 0);

    /* a broken copy of both families: a build error with the compiler's log */
    write_text(broken, "common.cl", text[0]);
    write_text(broken, "peak.cl", text[3]);
    write_text(broken, "vector_helpers.cl", text[4]);
    write_text(broken, "tiled.cl", text[5]);
    write_text(broken, "vector.cl", text[6]);
    write_text(broken, "variants.cl", text[7]);
    write_text(broken, "mask_tiles.cl", text[8]);
    for (int i = 1; i <= 2; i++) {
        size_t n = strlen(text[i]);
        char *bad = malloc(n + 128);
        CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
        snprintf(bad, n + 128, "%s\n__kernel void broken(void) { this is not OpenCL C }\n",
                 text[i]);
        write_text(broken, source_names[i], bad);
        free(bad);
    }
    ctx = kernel_dir_context(broken);
    unsigned built = ctx->programs_built;
    attn_status st = attn_prepare(ctx, &p, NULL);
    const char *msg = attn_last_error(ctx);
    printf("\n  broken kernel: %s: %.300s\n", attn_status_name(st), msg);
    CU_ASSERT_EQUAL(st, ATTN_ERROR_BUILD);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "build log"));
    const char *log = strstr(msg, "build log: ");
    CU_ASSERT(log && strlen(log + 11) > 10);              /* the log is not empty */
    CU_ASSERT(log && (strstr(log, "error") || strstr(log, "rror"))); /* the compiler's words */
    CU_ASSERT_EQUAL(ctx->programs_built, built);
    CU_ASSERT_EQUAL(count_bins(cache, NULL, 0), bins); /* nothing cached */
    /* warnings off (-w, the options' end) unless attn logs at debug level,
     * where the build log is shown: PoCL prints "N warnings generated." */
    CU_ASSERT_EQUAL(strstr(msg, " -w\"") != NULL, !attn_log_enabled(ATTN_LOG_DEBUG));
    CU_ASSERT_PTR_NULL(strchr(msg, '\n')); /* the message is one line */
    seen_log seen = {0};
    attn_set_log_callback(watch_log, &seen, ATTN_LOG_DEBUG);
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, NULL), ATTN_ERROR_BUILD);
    /* the whole build log, a message a line */
    CU_ASSERT_EQUAL(seen.multi_line, 0);
    CU_ASSERT(seen.log_lines >= 2 && seen.log_errors >= 1);
    if (seen.multi_line || seen.log_lines < 2 || !seen.log_errors)
        printf("\n  debug log: %d multi-line, %d build-log lines, %d with \"error\"\n",
               seen.multi_line, seen.log_lines, seen.log_errors);
    CU_ASSERT_PTR_NULL(strstr(attn_last_error(ctx), " -w\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "with options \"-cl-std"));
    attn_set_log_callback(NULL, NULL, ATTN_LOG_WARN); /* back to ATTN_LOG's level */
    /* and attn_forward reports the same */
    {
        run r;
        run_setup(ctx, &p, &r, 11);
        st = attn_forward(ctx, &p, &r.q, &r.k, &r.v, &r.o, NULL, NULL, NULL);
        CU_ASSERT_EQUAL(st, ATTN_ERROR_BUILD);
        CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "build log"));
        run_free(&r);
    }
    attn_context_release(ctx);

    /* a context without a kernel folder uses the embedded sources */
    ctx = kernel_dir_context(NULL);
    CU_ASSERT_EQUAL(prepare_verbose(ctx, &p), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(attn_last_error(ctx), "");
    forward_is_right(ctx, &p);
    attn_context_release(ctx);

    /* a missing family file, then a missing common.cl: IO errors naming the path */
    write_text(partial, "common.cl", text[0]);
    const char *family_files[] = {"vector.cl",      "tiled.cl",    "vector_helpers.cl",
                                  "tiled_core.cl",  "vector_core.cl", "variants.cl",
                                  "mask_tiles.cl"};
    missing_sources(partial, family_files, 7); /* the family's first missing file */
    const char *common[] = {"common.cl"};
    missing_sources(empty, common, 1);
    missing_sources("/nonexistent/attn/kernels", common, 1);
    /* a folder whose files' paths do not fit: said so, not read at a cut path */
    static char deep[5000];
    memset(deep, 'k', sizeof deep - 1);
    deep[0] = '/';
    ctx = kernel_dir_context(deep);
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, NULL), ATTN_ERROR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "is longer than"));
    attn_context_release(ctx);

    for (int i = 0; i < NSOURCES; i++) free(text[i]);
    harness_remove_tree(cache);
    harness_remove_tree(kdir);
    harness_remove_tree(broken);
    harness_remove_tree(partial);
    harness_remove_tree(empty);
}

/* ---- (f) check mode catches a wrong kernel ---- */

/* Replaces every `from` in text by `to`; returns a malloc'd copy and the count. */
static char *replace_all(const char *text, const char *from, const char *to, int *count)
{
    size_t fl = strlen(from), tl = strlen(to), n = 0;
    for (const char *s = text; (s = strstr(s, from)) != NULL; s += fl) n++;
    char *out = malloc(strlen(text) + n * (tl > fl ? tl - fl : 0) + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    char *w = out;
    const char *s = text, *hit;
    while ((hit = strstr(s, from)) != NULL) {
        memcpy(w, s, (size_t)(hit - s));
        w += hit - s;
        memcpy(w, to, tl);
        w += tl;
        s = hit + fl;
    }
    strcpy(w, s);
    *count = (int)n;
    return out;
}

/* Child check, ATTN_KERNEL_DIR naming the wrong kernels and ATTN_CHECK=1:
 * a new context checks, and catches them. */
static void child_check_catches(void)
{
    attn_context *c2 = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &c2), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(c2->check, 1);
    attn_problem p = small_problem();
    run r;
    run_setup(c2, &p, &r, 22);
    attn_status st = attn_forward(c2, &p, &r.q, &r.k, &r.v, &r.o, NULL, NULL, NULL);
    CU_ASSERT_EQUAL(st, ATTN_ERROR_MISMATCH);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(c2), "out["));
    run_free(&r);
    attn_context_release(c2);
}

/* Child check, ATTN_CHECK=0, no or unset: a new context does not check. */
static void child_check_off(void)
{
    attn_context *c = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &c), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(c->check, 0);
    attn_context_release(c);
}

static void test_check_mode_catches_wrong_kernel(void)
{
    char cache[512], wrong[512];
    fresh_cache_dir(cache, sizeof cache);
    harness_temp_dir(wrong, sizeof wrong, "wrong");
    attn_problem p = small_problem();
    attn_context *ctx = new_context();
    char *text[NSOURCES];
    export_sources(ctx, wrong, text);
    attn_context_release(ctx);
    /* the final normalisation off by 1%, in both families */
    for (int i = 1; i <= 2; i++) {
        int n = 0;
        char *bad = replace_all(text[i], "1.0f / l", "1.01f / l", &n);
        CU_ASSERT(n >= 1);
        if (n < 1) printf("\n  %s has no \"1.0f / l\" to make wrong\n", source_names[i]);
        write_text(wrong, source_names[i], bad);
        free(bad);
    }
    ctx = kernel_dir_context(wrong);

    run r;
    run_setup(ctx, &p, &r, 21);
    /* check mode off: the wrong result goes unnoticed by attn_forward */
    CU_ASSERT_EQUAL(ctx->check, 0);
    CU_ASSERT_EQUAL(attn_forward(ctx, &p, &r.q, &r.k, &r.v, &r.o, NULL, r.lse, NULL), ATTN_SUCCESS);
    printf("\n  (the wrong kernel, check mode off: the comparison below is expected to fail)");
    CU_ASSERT(run_errors(ctx, &p, &r, &r.o) > 0); /* but it is wrong (harness prints it) */
    /* check mode on: a mismatch naming the element and both values */
    CU_ASSERT_EQUAL(attn_context_set_check(ctx, 1), ATTN_SUCCESS);
    attn_status st = attn_forward(ctx, &p, &r.q, &r.k, &r.v, &r.o, NULL, r.lse, NULL);
    printf("\n  check mode: %s: %s\n", attn_status_name(st), attn_last_error(ctx));
    CU_ASSERT_EQUAL(st, ATTN_ERROR_MISMATCH);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "out["));
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "reference"));
    run_free(&r);
    attn_context_release(ctx);
    /* the right kernels pass check mode, also in place (out == q) */
    ctx = kernel_dir_context(NULL);
    CU_ASSERT_EQUAL(attn_context_set_check(ctx, 1), ATTN_SUCCESS);
    run_setup(ctx, &p, &r, 21);
    st = attn_forward(ctx, &p, &r.q, &r.k, &r.v, &r.o, NULL, r.lse, NULL);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st != ATTN_SUCCESS) printf("\n  check mode, right kernel: %s\n", attn_last_error(ctx));
    st = attn_forward(ctx, &p, &r.q, &r.k, &r.v, &r.q, NULL, r.lse, NULL);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st != ATTN_SUCCESS) printf("\n  check mode, in place: %s\n", attn_last_error(ctx));
    CU_ASSERT_EQUAL(run_errors(ctx, &p, &r, &r.q), 0);
    run_free(&r);
    CU_ASSERT_EQUAL(attn_context_set_check(ctx, 0), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(ctx->check, 0);
    attn_context_release(ctx);

    /* ATTN_CHECK=1: every new context checks; 0 or unset: none does */
    char kd[600], cd[600];
    snprintf(kd, sizeof kd, "ATTN_KERNEL_DIR=%s", wrong);
    snprintf(cd, sizeof cd, "ATTN_CACHE_DIR=%s", cache);
    const char *const on[] = {kd, cd, "ATTN_CHECK=1", NULL};
    const char *const off[] = {kd, cd, "ATTN_CHECK=0", NULL};
    const char *const unset[] = {kd, cd, "ATTN_CHECK", NULL};
    CU_ASSERT_EQUAL(harness_run_child("child_check_catches", on, NULL), 0);
    CU_ASSERT_EQUAL(harness_run_child("child_check_off", off, NULL), 0);
    CU_ASSERT_EQUAL(harness_run_child("child_check_off", unset, NULL), 0);
    /* the words: "no" is off (it once turned check mode on), "yes" on */
    const char *const no[] = {kd, cd, "ATTN_CHECK=no", NULL};
    const char *const yes[] = {kd, cd, "ATTN_CHECK=Yes", NULL};
    CU_ASSERT_EQUAL(harness_run_child("child_check_off", no, NULL), 0);
    CU_ASSERT_EQUAL(harness_run_child("child_check_catches", yes, NULL), 0);
    /* another word is warned about and turns it on (README), not off */
    const char *const other[] = {kd, cd, "ATTN_CHECK=maybe", NULL};
    CU_ASSERT_EQUAL(harness_run_child("child_check_catches", other, NULL), 0);

    for (int i = 0; i < NSOURCES; i++) free(text[i]);
    harness_remove_tree(cache);
    harness_remove_tree(wrong);
}

/* Another driver (an upgrade) or another device of the same platform
 * never loads this one's binary: both are in the key (either left out
 * passed the suite). */
static void test_key_names_driver_and_device(void)
{
    char dir[512];
    fresh_cache_dir(dir, sizeof dir);
    const attn_problem p = small_problem();
    attn_context *first = new_context();
    CU_ASSERT_EQUAL(prepare_verbose(first, &p), ATTN_SUCCESS);
    CU_ASSERT(first->programs_built > 0);
    attn_context_release(first);
    for (int which = 0; which < 3; which++) {
        attn_context *c = new_context();
        char *field = which == 1 ? c->driver : which == 2 ? c->device_name : NULL;
        _Static_assert(sizeof c->driver == sizeof c->device_name, "one size for both");
        if (field) strncat(field, " (other)", sizeof c->driver - 1 - strlen(field));
        CU_ASSERT_EQUAL(prepare_verbose(c, &p), ATTN_SUCCESS);
        /* the same device loads it; another driver or device builds its own */
        CU_ASSERT_EQUAL(c->programs_from_disk > 0, which == 0);
        if ((c->programs_from_disk > 0) != (which == 0))
            printf("\n  %s: %u programs from disk\n", which == 0 ? "the same device"
                   : which == 1 ? "another driver" : "another device", c->programs_from_disk);
        attn_context_release(c);
    }
    harness_remove_tree(dir);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_miss_then_hit),
    HARNESS_TEST(test_second_process),
    HARNESS_TEST(test_corrupt_files),
    HARNESS_TEST(test_key_names_driver_and_device),
    HARNESS_TEST(test_concurrent_store),
    HARNESS_TEST(test_unwritable_cache_dir),
    HARNESS_TEST(test_kernel_dir),
    HARNESS_TEST(test_check_mode_catches_wrong_kernel),
    HARNESS_END,
};

static const harness_test children[] = {
    HARNESS_TEST(child_prepare_cold),
    HARNESS_TEST(child_prepare_warm),
    HARNESS_TEST(child_check_catches),
    HARNESS_TEST(child_check_off),
    HARNESS_END,
};

static void register_tests(void)
{
    harness_add_suite("cache", tests);
    harness_add_children(children);
}

int main(void) { return harness_run("test_cache", register_tests); }
