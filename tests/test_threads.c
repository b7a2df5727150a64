/* test_threads.c -- what attn.h promises about threads, exercised hard
 * enough for ThreadSanitizer (tools/check-tsan.sh runs this file's binary
 * from a -DATTN_SANITIZE=thread build): several threads on one context
 * (forwards of different shapes, head dims and dtypes, prepares, check mode
 * switched on and off); one context per thread on the same device, built
 * and stored into one cache folder at the same moment; contexts created and
 * released concurrently, with per-thread creation errors; the log callback
 * from several threads; the CPU reference from several threads. Every
 * result is compared with the reference. */
#define _XOPEN_SOURCE 700
#include "harness.h"
#include "core/context.h"

#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { THREADS = 4, ITERS = 3 };

typedef struct worker {
    attn_context *ctx; /* shared, or NULL: the worker makes its own */
    int index;
    int failures;
    char message[256];
} worker;

static void fail(worker *w, const char *fmt, const char *detail, int it)
{
    if (!w->failures++) snprintf(w->message, sizeof w->message, fmt, detail, it);
}

/* Shapes differ per thread and iteration: the programs (head dims 8 and 16,
 * f32 and f16) are built concurrently inside one context, and the vector
 * family's scratch buffers grow while other threads use them. */
static attn_problem shape(int index, int it)
{
    attn_problem p = {.batch = 1 + (index & 1), .q_heads = 2, .kv_heads = 1,
                      .head_dim = (index + it) % 2 ? 8 : 16, .q_len = 5 + 3 * it,
                      .kv_len = 8 + 8 * index + 4 * it,
                      .dtype = (index + it) % 3 == 2 ? ATTN_F16 : ATTN_F32,
                      .causal = (index + it) & 1, .scale = 0.0f};
    return p;
}

static void *shared_worker(void *arg)
{
    worker *w = arg;
    for (int it = 0; it < ITERS; it++) {
        attn_problem p = shape(w->index, it);
        if (w->index == 0 && it == 1) attn_context_set_check(w->ctx, 1);
        if (w->index == 0 && it == 2) attn_context_set_check(w->ctx, 0);
        attn_problem other = shape(w->index + 1, it);
        if (attn_prepare(w->ctx, &other, NULL) != ATTN_SUCCESS) fail(w, "%s, iteration %d", "prepare", it);
        int r = harness_forward_check(w->ctx, &p, 1000 + 10 * (uint64_t)w->index + (uint64_t)it);
        if (r != 0) fail(w, "%s, iteration %d", r < 0 ? "wrong result" : "forward failed", it);
    }
    return NULL;
}

/* The cache folder of the contexts own_context_worker makes (written
 * before the threads start). */
static char cache_dir[256];

static void *own_context_worker(void *arg)
{
    worker *w = arg;
    attn_context *c = NULL;
    if (attn_context_create(getenv("ATTN_TEST_DEVICE"), &c) != ATTN_SUCCESS) {
        fail(w, "%s (%d)", attn_last_create_error(), 0);
        return NULL;
    }
    if (attn_context_set_cache_dir(c, cache_dir) != ATTN_SUCCESS)
        fail(w, "%s (%d)", attn_last_error(c), 0);
    for (int it = 0; it < ITERS; it++) {
        /* every thread the same shapes: the same programs, stored at once */
        attn_problem p = shape(0, it);
        int r = harness_forward_check(c, &p, 2000 + 10 * (uint64_t)w->index + (uint64_t)it);
        if (r != 0) fail(w, "%s, iteration %d", r < 0 ? "wrong result" : "forward failed", it);
    }
    attn_context_release(c);
    return NULL;
}

static void *create_release_worker(void *arg)
{
    worker *w = arg;
    char sel[64];
    for (int it = 0; it < ITERS; it++) {
        attn_context *c = NULL;
        if ((w->index + it) & 1) {
            /* a selector nothing matches: the message is this thread's own */
            snprintf(sel, sizeof sel, "no-such-device-%d-%d", w->index, it);
            attn_status st = attn_context_create(sel, &c);
            if (st != ATTN_ERROR_NO_DEVICE || c != NULL) fail(w, "%s, iteration %d", "bad selector accepted", it);
            else if (!strstr(attn_last_create_error(), sel))
                fail(w, "%s, iteration %d", "another thread's creation error", it);
        } else {
            if (attn_context_create(getenv("ATTN_TEST_DEVICE"), &c) != ATTN_SUCCESS)
                fail(w, "%s, iteration %d", "create failed", it);
            attn_context_release(c);
        }
    }
    return NULL;
}

static void *reference_worker(void *arg)
{
    worker *w = arg;
    attn_problem p = shape(w->index, 1);
    size_t nq = (size_t)p.batch * p.q_heads * p.q_len * p.head_dim;
    size_t nk = (size_t)p.batch * p.kv_heads * p.kv_len * p.head_dim;
    float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nk * 4);
    float *o1 = malloc(nq * 4), *o2 = malloc(nq * 4);
    if (q && k && v && o1 && o2) {
        harness_fill_uniform(q, nq, 5, -1, 1);
        harness_fill_uniform(k, nk, 6, -1, 1);
        harness_fill_uniform(v, nk, 7, -1, 1);
        for (int it = 0; it < 20; it++) {
            attn_reference_forward(&p, q, k, v, it ? o2 : o1, NULL, NULL);
            if (it && memcmp(o1, o2, nq * 4) != 0) fail(w, "%s, iteration %d", "reference differs", it);
        }
    } else {
        fail(w, "%s (%d)", "out of memory", 0);
    }
    free(q), free(k), free(v), free(o1), free(o2);
    return NULL;
}

static void run_workers(void *(*fn)(void *), attn_context *shared, const char *what)
{
    pthread_t th[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].ctx = shared;
        w[i].index = i;
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, fn, &w[i]), 0);
    }
    int failures = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        failures += w[i].failures;
        if (w[i].failures) printf("\n  %s: thread %d: %s", what, i, w[i].message);
    }
    printf("\n  %s: %d threads, %d failures", what, THREADS, failures);
    CU_ASSERT_EQUAL(failures, 0);
}

static void test_one_context_many_threads(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    run_workers(shared_worker, ctx, "one shared context");
    printf("\n");
}

static void test_context_per_thread(void)
{
    /* a fresh cache folder, so that the threads build and store together */
    harness_temp_dir(cache_dir, sizeof cache_dir, "threads");
    run_workers(own_context_worker, NULL, "a context per thread");
    /* afterwards every program loads from the folder: the stores were whole */
    attn_context *c = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &c), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_cache_dir(c, cache_dir), ATTN_SUCCESS);
    for (int it = 0; it < ITERS; it++) {
        attn_problem p = shape(0, it);
        CU_ASSERT_EQUAL(attn_prepare(c, &p, NULL), ATTN_SUCCESS);
    }
    CU_ASSERT_EQUAL(c->programs_built, 0);
    CU_ASSERT(c->programs_from_disk >= 1);
    attn_context_release(c);
    harness_remove_tree(cache_dir);
    printf("\n");
}

/* Also run alone (ctest test_threads_first_use): then these are the
 * process's first OpenCL calls, which PoCL does not make thread-safe
 * (attn serialises the device walk; without, 6 runs in 6 failed or
 * crashed). */
static void test_create_release_concurrently(void)
{
    run_workers(create_release_worker, NULL, "create and release");
    printf("\n");
}

/* The log callback, called from several threads: attn serialises it
 * (config.h). It counts without atomics and notes a call that starts
 * while another runs (ThreadSanitizer reports the counters' race where
 * the serialising lock is missing). */
static volatile int g_in_log, g_overlaps; /* volatile: each store made, in order */
static long g_lines;
static pthread_barrier_t g_log_start;

static void count_line(attn_log_level level, const char *message, void *user)
{
    (void)level, (void)message, (void)user;
    if (g_in_log) g_overlaps++;
    g_in_log = 1;
    g_lines++;
    for (volatile int i = 0; i < 20000; i++) {
    } /* a window for another call to start */
    g_in_log = 0;
}

/* A context of its own, whose refused params each log a debug line:
 * the threads' lines are not serialised by one context's lock. */
static void *logging_worker(void *arg)
{
    worker *w = arg;
    attn_context *c = NULL;
    if (attn_context_create(getenv("ATTN_TEST_DEVICE"), &c) != ATTN_SUCCESS) {
        fail(w, "%s (%d)", attn_last_create_error(), 0);
        pthread_barrier_wait(&g_log_start);
        return NULL;
    }
    pthread_barrier_wait(&g_log_start); /* created one at a time; they log at once */
    for (int it = 0; it < 200; it++)
        if (attn_context_set_params(c, "rows=99") != ATTN_ERROR_INVALID_ARGUMENT)
            fail(w, "%s, iteration %d", "rows=99 accepted", it);
    attn_context_release(c);
    return NULL;
}

static void test_log_from_many_threads(void)
{
    CU_ASSERT_EQUAL_FATAL(pthread_barrier_init(&g_log_start, NULL, THREADS), 0);
    attn_set_log_callback(count_line, NULL, ATTN_LOG_DEBUG);
    run_workers(logging_worker, NULL, "a context per thread, logging at debug");
    attn_set_log_callback(NULL, NULL, ATTN_LOG_WARN);
    printf("\n  %ld log lines, %d begun during another\n", g_lines, g_overlaps);
    CU_ASSERT(g_lines >= THREADS * 200);
    CU_ASSERT_EQUAL(g_overlaps, 0);
    pthread_barrier_destroy(&g_log_start);
}

static void test_reference_concurrently(void)
{
    run_workers(reference_worker, NULL, "the CPU reference");
    printf("\n");
}

static const harness_test tests[] = {
    HARNESS_TEST(test_one_context_many_threads),
    HARNESS_TEST(test_context_per_thread),
    HARNESS_TEST(test_create_release_concurrently),
    HARNESS_TEST(test_log_from_many_threads),
    HARNESS_TEST(test_reference_concurrently),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("threads", tests); }

int main(void) { return harness_run("test_threads", register_tests); }
