/* test_cl_faults.c -- every OpenCL call attn makes, failed in turn.
 *
 * A workload of the library's main paths -- creating a context; a GQA
 * forward in f16 with left padding, an additive mask kept by version and
 * LSE, twice (the second from the mask's cached summary); a KV cache
 * created, filled from the padded K/V and decoded against -- is run once
 * to count its OpenCL calls, then once more for each call, with that call
 * failing (cl_faults.c: CL_OUT_OF_RESOURCES, an allocation failure or
 * CL_OUT_OF_HOST_MEMORY, as a driver short of memory gives; information
 * queries and device lists too). For each run:
 *   - an attn call that fails does so because of the fault, never another
 *     reason, with a message; nothing crashes (and, in the ASan build,
 *     nothing leaks or is read out of bounds);
 *   - a failed call changes nothing that the next call could see: the same
 *     call again on the same context (or cache) succeeds, and the cache's
 *     lengths are as before the failure;
 *   - every result reported as a success, after a fault or not, matches
 *     the CPU reference;
 *   - everything attn created (buffers, kernels, programs, events, queues,
 *     contexts) is released when the cache and the context are.
 * Four ways: programs from the disk cache (what users run once kernels
 * are built), built from source (no disk cache), and on an application's
 * out-of-order queue (attn's ordering barriers fail too); the fourth, the
 * forward alone on an empty disk cache, where each program is built and
 * then its binary queried and stored (a failed store leaves no file). A second,
 * serving workload (test_serving_calls_failed) does the same for a paged
 * int8 cache (fork, copy on write, truncation, a speculative decode with
 * forced splits) and a forward with every variant on BSHD tensors in
 * check mode, on the library's queue and on an out-of-order one, and a
 * third the materialized path, whose CLBlast calls are failed too.
 *
 * What it found, now fixed: a failed second clGetPlatformIDs or
 * clGetDeviceIDs left the lists uninitialised and the ICD crashed; a failed
 * device query made a context whose every call then failed (a max
 * allocation of 0); on an out-of-order queue an append whose trailing
 * barrier failed reported failure after the lengths had grown, so the
 * retry appended twice; a failed allocation inside CLBlast aborted the
 * process (clblast.c: the comment above gemm_temp); and CLBlast's cache kept an OpenCL
 * context alive per released attn context (test_clblast_lets_go). */
#include "cl_faults.h"
#include "harness.h"
#include "core/context.h"
#include "core/text.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, HQ = 4, HKV = 2, D = 20, S = 13 };
static const int q_start[B] = {0, 4}, q_len[B] = {S, S - 4};
static const int dec_start[B] = {0, 0}, dec_len[B] = {1, 1};

typedef struct inputs {
    float q[B * HQ * S * D], k[B * HKV * S * D], v[B * HKV * S * D];
    float mask[S * S];
    float qd[B * HQ * D];
    float ref[B * HQ * S * D], ref_lse[B * HQ * S], ref_dec[B * HQ * D];
} inputs;

static inputs in;

static attn_problem forward_problem(void)
{
    attn_problem p = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = S,
                      .kv_len = S, .dtype = ATTN_F16, .causal = 1};
    p.mask = (attn_mask){.host = in.mask, .dtype = ATTN_F32, .stride_q = S, .stride_kv = 1,
                         .version = 1};
    return p;
}

static attn_problem decode_problem(void)
{
    return (attn_problem){.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = 1,
                          .kv_len = S, .dtype = ATTN_F16, .causal = 1};
}

/* Inputs rounded through f16 and the reference results, once. */
static void make_inputs(void)
{
    harness_fill_normal(in.q, sizeof in.q / sizeof(float), 11, 0, 1);
    harness_fill_normal(in.k, sizeof in.k / sizeof(float), 12, 0, 1);
    harness_fill_normal(in.v, sizeof in.v / sizeof(float), 13, 0, 1);
    harness_fill_normal(in.qd, sizeof in.qd / sizeof(float), 14, 0, 1);
    harness_fill_uniform(in.mask, S * S, 15, -2, 2);
    for (int i = 0; i < S * S; i += 7) in.mask[i] = -INFINITY;
    harness_round(ATTN_F16, in.q, sizeof in.q / sizeof(float));
    harness_round(ATTN_F16, in.k, sizeof in.k / sizeof(float));
    harness_round(ATTN_F16, in.v, sizeof in.v / sizeof(float));
    harness_round(ATTN_F16, in.qd, sizeof in.qd / sizeof(float));
    attn_problem p = forward_problem();
    const attn_lengths l = {q_start, q_len, q_start, q_len};
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, in.q, in.k, in.v, in.ref, &l, in.ref_lse),
                          ATTN_SUCCESS);
    /* decode: the one new query of each sequence sees every key appended */
    attn_problem pd = decode_problem();
    const attn_lengths ld = {dec_start, dec_len, q_start, q_len};
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&pd, in.qd, in.k, in.v, in.ref_dec, &ld, NULL),
                          ATTN_SUCCESS);
}

/* ---- one run ---- */

typedef struct run {
    long fail_at;
    int out_of_order;    /* the context wraps the test's own out-of-order queue */
    int from_source;     /* no disk cache: every program built from source */
    int cold_cache;      /* a forward alone, on a disk cache of its own, empty: every
                          * program built from source, then stored (store_binary) */
    int materialized;    /* the context and attn_forward_materialized alone */
    int wrong;           /* checks that failed in this run */
    int failures;        /* attn calls that failed */
    const char *stopped; /* the call that failed, for the report */
} run;

static void say(run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(run *r, const char *fmt, ...)
{
    printf("\n  fault %ld (%s): ", r->fail_at, cl_faults_failed() ? cl_faults_failed() : "none");
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    r->wrong++;
}

/* Whether attn's message names the OpenCL call itself when it fails: what
 * it creates, builds, enqueues and waits for (a failed query reads as the
 * object it asked about, "q->buffer is not a valid cl_mem", and a call
 * CLBlast makes as CLBlast's own error). */
static int names_its_call(const char *fn)
{
    static const char *const prefixes[] = {"clCreate", "clBuild", "clEnqueue", "clWaitForEvents",
                                           "clFinish"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(fn, prefixes[i], strlen(prefixes[i])) == 0) return 1;
    return 0;
}

/* After an armed attn call: a failure must come from the fault, with a
 * message; returns 1 when the call is to be made again. */
static int failed(run *r, attn_context *ctx, const char *what, attn_status st,
                  const char *fault_before)
{
    if (st == ATTN_SUCCESS) return 0;
    const char *msg = ctx ? attn_last_error(ctx) : attn_last_create_error();
    r->failures++;
    r->stopped = what;
    if (!cl_faults_failed() || fault_before)
        say(r, "%s failed with no fault of its own: %s", what, msg);
    else if (!msg || !*msg)
        say(r, "%s failed without a message", what);
    else if (names_its_call(cl_faults_failed()) && !strstr(msg, cl_faults_failed()) &&
             !strstr(msg, "CLBlast"))
        say(r, "%s: the message does not name %s: %s", what, cl_faults_failed(), msg);
    return 1;
}

/* Makes an attn call armed, and once more if it failed (the fault is
 * spent by then): st is the last status. */
#define ARMED(r, ctx, what, st, call)                                                              \
    for (int attempt_ = 0; attempt_ < 2; attempt_++) {                                             \
        const char *before_ = cl_faults_failed();                                                  \
        cl_faults_arm();                                                                           \
        st = (call);                                                                               \
        cl_faults_disarm();                                                                        \
        if (!failed(r, ctx, what, st, before_)) break;                                             \
    }

/* A cache's lengths (its first 8 sequences, of at most 64) and free blocks. */
typedef struct cache_state {
    int lens[8], free_blocks;
} cache_state;

static cache_state cache_state_of(const attn_kv_cache *c)
{
    cache_state s;
    memset(&s, 0xff, sizeof s);
    int lens[64];
    for (int i = 0; i < 64; i++) lens[i] = -1;
    if (attn_kv_cache_lengths(c, lens) == ATTN_SUCCESS) memcpy(s.lens, lens, sizeof s.lens);
    attn_kv_cache_pool(c, &s.free_blocks, NULL);
    return s;
}

/* ARMED for a call on a KV cache: a failed attempt must leave the cache's
 * lengths and pool as they were (decode.h: a failed append, fork or
 * truncate changes nothing). */
#define ARMED_CACHE(r, ctx, cache, what, st, call)                                                 \
    for (int attempt_ = 0; attempt_ < 2; attempt_++) {                                             \
        const cache_state state_ = cache_state_of(cache);                                          \
        const char *before_ = cl_faults_failed();                                                  \
        cl_faults_arm();                                                                           \
        st = (call);                                                                               \
        cl_faults_disarm();                                                                        \
        if (!failed(r, ctx, what, st, before_)) break;                                             \
        const cache_state after_ = cache_state_of(cache);                                          \
        if (memcmp(&state_, &after_, sizeof state_) != 0)                                          \
            say(r, "%s failed and changed the cache: free blocks %d -> %d, lengths %d,%d,%d -> "  \
                "%d,%d,%d", what, state_.free_blocks, after_.free_blocks, state_.lens[0],         \
                state_.lens[1], state_.lens[2], after_.lens[0], after_.lens[1], after_.lens[2]);   \
    }

/* After the context is released: every object made is released too. */
static void check_released(run *r)
{
    for (int kind = 0; kind < CL_FAULTS_KINDS; kind++)
        if (cl_faults_live(kind) != 0)
            say(r, "%ld OpenCL objects of kind %s left unreleased", cl_faults_live(kind),
                cl_faults_kind_name(kind));
}

static void compare(run *r, const char *what, const float *got, const float *ref, size_t n,
                    double atol, double rtol)
{
    if (harness_compare(what, got, ref, n, atol, rtol, 0) != 0)
        say(r, "%s differs from the reference", what);
}

/* Reads the [b, h, s, D] tensor t of type dt back (harness_download: once
 * the queue has drained) and compares it with ref. */
static void check_output(run *r, attn_context *ctx, attn_dtype dt, const attn_tensor *t, int b,
                         int h, int s, const float *ref, double atol, double rtol,
                         const char *what)
{
    const size_t n = (size_t)b * h * s * D;
    float *got = malloc(n * sizeof *got);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    if (harness_download(ctx, dt, t, b, h, s, D, got) != 0)
        say(r, "%s: reading the result back failed", what);
    else
        compare(r, what, got, ref, n, atol, rtol);
    free(got);
}

/* The forward, made again once if it failed; its results checked. */
static void forward_step(run *r, attn_context *ctx, const attn_tensor *tq, const attn_tensor *tk,
                         const attn_tensor *tv, const attn_tensor *to, cl_mem lse, cl_mem mask,
                         const char *what, int materialized)
{
    attn_problem p = forward_problem();
    p.mask.buffer = mask;
    const attn_lengths l = {q_start, q_len, q_start, q_len};
    const cl_ushort nan16 = 0x7e00; /* O to NaN: a skipped or half-done write shows */
    clEnqueueFillBuffer(attn_context_queue(ctx), to->buffer, &nan16, sizeof nan16, 0,
                        sizeof(cl_ushort) * B * HQ * S * D, 0, NULL, NULL);
    attn_status st = ATTN_SUCCESS;
    ARMED(r, ctx, what, st,
          materialized ? attn_forward_materialized(ctx, &p, tq, tk, tv, to, &l, lse, NULL)
                       : attn_forward(ctx, &p, tq, tk, tv, to, &l, lse, NULL))
    if (st != ATTN_SUCCESS) return;
    double atol, rtol;
    attn_tolerance(ATTN_F16, &atol, &rtol);
    check_output(r, ctx, ATTN_F16, to, B, HQ, S, in.ref, atol, rtol, what);
    static float got_lse[B * HQ * S];
    if (harness_read_floats(ctx, lse, got_lse, B * HQ * S) != 0)
        say(r, "%s: reading the LSE back failed", what);
    else
        compare(r, "lse", got_lse, in.ref_lse, B * HQ * S, atol, rtol);
}

/* With r->out_of_order, the test's own out-of-order queue (and its
 * context) on the test device, made while no call is armed; else NULL. */
/* The test device, chosen as harness_context chooses it (a context of
 * the harness's own would stay alive across the runs' counts). */
static cl_device_id test_device(void)
{
    cl_platform_id pl;
    cl_device_id dev;
    CU_ASSERT_EQUAL_FATAL(attn_select_device(getenv("ATTN_TEST_DEVICE"), &pl, &dev),
                          ATTN_SUCCESS);
    return dev;
}

/* With r->out_of_order, the test's own out-of-order queue (and its
 * context) on the test device, made while no call is armed; else NULL. */
static cl_command_queue own_queue_for(const run *r, cl_context *own_context)
{
    *own_context = NULL;
    return r->out_of_order ? harness_out_of_order_queue(test_device(), own_context) : NULL;
}

static void run_once(run *r)
{
    cl_faults_reset(r->fail_at);
    const char *sel = getenv("ATTN_TEST_DEVICE");
    attn_context *ctx = NULL;
    cl_context own_context;
    cl_command_queue own_queue = own_queue_for(r, &own_context);
    attn_status st = ATTN_SUCCESS;
    ARMED(r, NULL, "attn_context_create", st,
          own_queue ? attn_context_create_from_queue(own_queue, &ctx)
                    : attn_context_create(sel, &ctx))
    if (!ctx) {
        say(r, "attn_context_create failed twice");
        return;
    }
    if (r->from_source) CU_ASSERT_EQUAL(attn_context_set_cache_dir(ctx, NULL), ATTN_SUCCESS);
    char cache_dir[128] = "";
    if (r->cold_cache) {
        harness_temp_dir(cache_dir, sizeof cache_dir, "cl-faults-cache");
        CU_ASSERT_EQUAL(attn_context_set_cache_dir(ctx, cache_dir), ATTN_SUCCESS);
    }
    attn_tensor tq, tk, tv, to, tqd, tod;
    cl_mem bq = harness_upload(ctx, ATTN_F16, in.q, B, HQ, S, D, NULL, &tq);
    cl_mem bk = harness_upload(ctx, ATTN_F16, in.k, B, HKV, S, D, NULL, &tk);
    cl_mem bv = harness_upload(ctx, ATTN_F16, in.v, B, HKV, S, D, NULL, &tv);
    cl_mem bo = harness_alloc(ctx, ATTN_F16, B, HQ, S, D, NULL, &to);
    cl_mem bqd = harness_upload(ctx, ATTN_F16, in.qd, B, HQ, 1, D, NULL, &tqd);
    cl_mem bod = harness_alloc(ctx, ATTN_F16, B, HQ, 1, D, NULL, &tod);
    cl_mem lse = harness_float_buffer(ctx, B * HQ * S);
    cl_int err;
    cl_mem mask = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                 sizeof in.mask, in.mask, &err);
    CU_ASSERT_FATAL(bq && bk && bv && bo && bqd && bod && lse && mask);

    if (r->materialized) {
        forward_step(r, ctx, &tq, &tk, &tv, &to, lse, mask, "attn_forward_materialized", 1);
        goto release;
    }
    if (r->cold_cache) {
        forward_step(r, ctx, &tq, &tk, &tv, &to, lse, mask, "attn_forward (cold disk cache)", 0);
        /* every program built is stored, but for the one whose binary
         * query failed; nothing is left half-written */
        const char *fault = cl_faults_failed();
        const int want = (int)ctx->programs_built - (fault && !strcmp(fault, "clGetProgramInfo"));
        const int stored = harness_count_files(cache_dir, ".bin");
        if (stored != want || ctx->programs_built < 1)
            say(r, "%d programs in the disk cache, %u built", stored, ctx->programs_built);
        if (harness_count_files(cache_dir, ".tmp") != 0)
            say(r, "the disk cache kept a temporary file");
        harness_remove_tree(cache_dir);
        goto release;
    }
    forward_step(r, ctx, &tq, &tk, &tv, &to, lse, mask, "attn_forward", 0);
    forward_step(r, ctx, &tq, &tk, &tv, &to, lse, mask, "attn_forward (mask summary kept)", 0);

    attn_kv_cache *cache = NULL;
    ARMED(r, ctx, "attn_kv_cache_create", st,
          attn_kv_cache_create(ctx, B, HKV, D, S + 3, ATTN_F16, &cache))
    if (cache) {
        /* a failed append that had moved the lengths shows here, after the
         * second attempt appended again */
        ARMED(r, ctx, "attn_kv_cache_append_rows", st,
              attn_kv_cache_append_rows(cache, &tk, &tv, S, q_start, q_len, NULL))
        int lens[B] = {-1, -1};
        attn_kv_cache_lengths(cache, lens);
        for (int b = 0; b < B; b++)
            if (lens[b] != (st == ATTN_SUCCESS ? q_len[b] : 0))
                say(r, "sequence %d holds %d tokens after the append", b, lens[b]);
        attn_problem pd = decode_problem();
        if (st == ATTN_SUCCESS)
            ARMED(r, ctx, "attn_decode", st,
                  attn_decode(ctx, cache, &pd, &tqd, &tod, NULL, NULL, NULL))
        double atol, rtol;
        attn_tolerance(ATTN_F16, &atol, &rtol);
        if (st == ATTN_SUCCESS)
            check_output(r, ctx, ATTN_F16, &tod, B, HQ, 1, in.ref_dec, atol, rtol, "attn_decode");
        attn_kv_cache_release(cache);
    } else {
        say(r, "attn_kv_cache_create failed twice");
    }
release:
    clReleaseMemObject(bq), clReleaseMemObject(bk), clReleaseMemObject(bv);
    clReleaseMemObject(bo), clReleaseMemObject(bqd), clReleaseMemObject(bod);
    clReleaseMemObject(lse), clReleaseMemObject(mask);
    attn_context_release(ctx);
    if (own_queue) clReleaseCommandQueue(own_queue), clReleaseContext(own_context);
    check_released(r);
}

/* ---- the tests ---- */

/* Which calls to fail: every one ($ATTN_CL_FAULTS_EVERY=N, N >= 1: every
 * N-th).
 * A GPU builds programs and makes contexts far more slowly than PoCL, and
 * the mma family's first plan on a context verifies it (mma_gate.c): there
 * about 100 calls spread over the workload, so that the suite stays within
 * its time on a GPU too. */
static long call_stride(long n)
{
    long every;
    if (attn_parse_long(getenv("ATTN_CL_FAULTS_EVERY"), 1, LONG_MAX, &every) == 0) return every;
    cl_platform_id pl;
    cl_device_id dev;
    cl_device_type type = CL_DEVICE_TYPE_CPU;
    if (attn_select_device(getenv("ATTN_TEST_DEVICE"), &pl, &dev) == ATTN_SUCCESS)
        clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    return (type & CL_DEVICE_TYPE_CPU) || n <= 100 ? 1 : (n + 99) / 100;
}

/* Which of those this process runs: part i of n ($ATTN_CL_FAULTS_PART=i/n,
 * 0 <= i < n; default 0/1): the i-th, (i + n)-th, (i + 2n)-th ... of them.
 * tests/CMakeLists.txt runs the suite as several ctest tests so that each
 * stays within its timeout under AddressSanitizer, where a run costs 3 to
 * 15 times what it costs in a Release build. */
static void call_part(long *part, long *parts)
{
    *part = 0, *parts = 1;
    const char *e = getenv("ATTN_CL_FAULTS_PART");
    if (!e || !*e) return;
    const char *slash = strchr(e, '/');
    char first[32];
    const size_t len = slash ? (size_t)(slash - e) : 0;
    if (slash && len < sizeof first) memcpy(first, e, len), first[len] = 0;
    if (!slash || len >= sizeof first || attn_parse_long(first, 0, LONG_MAX, part) != 0 ||
        attn_parse_long(slash + 1, 1, LONG_MAX, parts) != 0 || *part >= *parts) {
        printf("\n  ATTN_CL_FAULTS_PART=\"%s\": expected i/n with 0 <= i < n\n", e);
        CU_FAIL_FATAL("ATTN_CL_FAULTS_PART");
    }
}

/* The workload once clean, then once per OpenCL call with that call failed;
 * `how` sets the way (out of order, from source, materialized). */
static void each_call_failed(void (*work)(run *), run how)
{
    long part, parts;
    call_part(&part, &parts);
    make_inputs();
    run clean = how;
    work(&clean); /* fills the disk cache; counts the calls */
    work(&clean); /* the same again: from the disk cache where the way has one */
    const long n = cl_faults_calls();
    printf("\n  %ld OpenCL calls in the workload", n);
    CU_ASSERT_EQUAL_FATAL(clean.wrong, 0);
    CU_ASSERT_EQUAL(clean.failures, 0);
    CU_ASSERT(n > 20);
    const long every = call_stride(n);
    int wrong = 0, runs_failing = 0, runs = 0;
    for (long at = 1 + part * every; at <= n; at += every * parts, runs++) {
        run r = how;
        r.fail_at = at;
        work(&r);
        if (!cl_faults_failed()) {
            printf("\n  fault %ld: the run made fewer calls than the clean one (%ld)", at,
                   cl_faults_calls());
            wrong++;
        }
        wrong += r.wrong;
        runs_failing += r.failures > 0;
    }
    printf("\n  %d runs (every %ld. call of %ld, part %ld of %ld), each with one call failed: %d "
           "with an attn call that failed (and succeeded when made again), %d problems",
           runs, every, n, part + 1, parts, runs_failing, wrong);
    if (!runs) printf("\n  (with ATTN_CL_FAULTS_EVERY=%ld, no failed call falls in this part)", every);
    CU_ASSERT_EQUAL(wrong, 0);
}

static void test_each_call_failed(void) { each_call_failed(run_once, (run){0}); }

/* The same with every program built from source (no disk cache). */
static void test_each_call_failed_from_source(void) { each_call_failed(run_once, (run){.from_source = 1}); }

/* A forward on an empty disk cache: each program built from source and
 * stored, whose binary queries (clGetProgramInfo) fail in turn too. */
static void test_each_call_failed_cold_cache(void) { each_call_failed(run_once, (run){.cold_cache = 1}); }

/* The same on an application's out-of-order queue, where attn orders its
 * commands with barriers (attn_queue_order), which may fail too. */
static int has_out_of_order_queues(void) { return harness_out_of_order_supported(test_device()); }

static void test_each_call_failed_out_of_order(void)
{
    if (has_out_of_order_queues()) each_call_failed(run_once, (run){.out_of_order = 1});
}

/* ---- a serving workload: a paged int8 cache, a fork, copy on write, a
 * truncation and a speculative decode with forced splits; a forward with
 * every variant on BSHD tensors ---- */

enum { SB = 3, SCAP = 40, SA = 20, SQ = 2 };

typedef struct serving_inputs {
    float k[SB * HKV * SA * D], v[SB * HKV * SA * D]; /* the block appended to sequence 0 */
    float k1[SB * HKV * D], v1[SB * HKV * D];         /* one token appended to sequence 1 */
    float q[SB * HQ * SQ * D];
    float ck[SB * HKV * (SA + 1) * D], cv[SB * HKV * (SA + 1) * D]; /* each sequence's K/V */
    float ref[SB * HQ * SQ * D];
    float vq[B * HQ * S * D], vk[B * HKV * S * D], vv[B * HKV * S * D], vref[B * HQ * S * D];
    float sinks[HQ], slopes[HQ];
} serving_inputs;

static serving_inputs sv;
static const int sv_qlens[SB] = {SQ, SQ, 0}, sv_kvlens[SB] = {SA - 2, SA + 1, 0};

static attn_problem variants_problem(void)
{
    return (attn_problem){.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = S,
                          .kv_len = S, .dtype = ATTN_F32, .causal = 1, .use_window = 1,
                          .window_left = 5, .window_right = 0, .softcap = 20, .sinks = sv.sinks,
                          .alibi_slopes = sv.slopes};
}

static void make_serving_inputs(void)
{
    harness_fill_normal(sv.k, sizeof sv.k / sizeof(float), 21, 0, 1);
    harness_fill_normal(sv.v, sizeof sv.v / sizeof(float), 22, 0, 1);
    harness_fill_normal(sv.k1, sizeof sv.k1 / sizeof(float), 23, 0, 1);
    harness_fill_normal(sv.v1, sizeof sv.v1 / sizeof(float), 24, 0, 1);
    harness_fill_normal(sv.q, sizeof sv.q / sizeof(float), 25, 0, 1);
    /* sequence 0: the block's first SA - 2 rows (truncated); 1: all SA rows
     * (forked) and the one token; 2: empty */
    memset(sv.ck, 0, sizeof sv.ck), memset(sv.cv, 0, sizeof sv.cv);
    for (int s = 0; s < 2; s++)
        for (int h = 0; h < HKV; h++)
            for (int t = 0; t < sv_kvlens[s]; t++) {
                const float *fk = t < SA ? &sv.k[((size_t)h * SA + t) * D] /* batch 0 */
                                         : &sv.k1[((size_t)1 * HKV + h) * D];
                const float *fv = t < SA ? &sv.v[((size_t)h * SA + t) * D]
                                         : &sv.v1[((size_t)1 * HKV + h) * D];
                const size_t at = (((size_t)s * HKV + h) * (SA + 1) + t) * D;
                memcpy(&sv.ck[at], fk, D * sizeof(float));
                memcpy(&sv.cv[at], fv, D * sizeof(float));
            }
    attn_problem p = {.batch = SB, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = SQ,
                      .kv_len = SA + 1, .dtype = ATTN_F32, .causal = 1};
    const int zero[SB] = {0, 0, 0};
    const attn_lengths l = {zero, sv_qlens, zero, sv_kvlens};
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&p, sv.q, sv.ck, sv.cv, sv.ref, &l, NULL),
                          ATTN_SUCCESS);
    harness_fill_normal(sv.vq, sizeof sv.vq / sizeof(float), 26, 0, 1);
    harness_fill_normal(sv.vk, sizeof sv.vk / sizeof(float), 27, 0, 1);
    harness_fill_normal(sv.vv, sizeof sv.vv / sizeof(float), 28, 0, 1);
    for (int h = 0; h < HQ; h++) sv.sinks[h] = 0.25f * (float)h - 0.5f;
    CU_ASSERT_EQUAL_FATAL(attn_alibi_slopes(HQ, 8.0f, sv.slopes), ATTN_SUCCESS);
    attn_problem vp = variants_problem();
    const attn_lengths vl = {q_start, q_len, q_start, q_len};
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(&vp, sv.vq, sv.vk, sv.vv, sv.vref, &vl, NULL),
                          ATTN_SUCCESS);
}

static void serving_once(run *r)
{
    cl_faults_reset(r->fail_at);
    attn_context *ctx = NULL;
    cl_context own_context;
    cl_command_queue own_queue = own_queue_for(r, &own_context);
    CU_ASSERT_EQUAL_FATAL(own_queue ? attn_context_create_from_queue(own_queue, &ctx)
                                    : attn_context_create(getenv("ATTN_TEST_DEVICE"), &ctx),
                          ATTN_SUCCESS);
    const harness_layout bshd = {.order = HARNESS_BSHD, .seq_pad = 3};
    attn_tensor tk, tv, tk1, tv1, tq, to, vq, vk, vv, vo;
    cl_mem bufs[] = {
        harness_upload(ctx, ATTN_F32, sv.k, SB, HKV, SA, D, NULL, &tk),
        harness_upload(ctx, ATTN_F32, sv.v, SB, HKV, SA, D, NULL, &tv),
        harness_upload(ctx, ATTN_F32, sv.k1, SB, HKV, 1, D, NULL, &tk1),
        harness_upload(ctx, ATTN_F32, sv.v1, SB, HKV, 1, D, NULL, &tv1),
        harness_upload(ctx, ATTN_F32, sv.q, SB, HQ, SQ, D, NULL, &tq),
        harness_alloc(ctx, ATTN_F32, SB, HQ, SQ, D, NULL, &to),
        harness_upload(ctx, ATTN_F32, sv.vq, B, HQ, S, D, &bshd, &vq),
        harness_upload(ctx, ATTN_F32, sv.vk, B, HKV, S, D, &bshd, &vk),
        harness_upload(ctx, ATTN_F32, sv.vv, B, HKV, S, D, &bshd, &vv),
        harness_alloc(ctx, ATTN_F32, B, HQ, S, D, &bshd, &vo)};
    const int nbufs = (int)(sizeof bufs / sizeof bufs[0]);
    for (int i = 0; i < nbufs; i++) CU_ASSERT_PTR_NOT_NULL_FATAL(bufs[i]);

    /* every variant at once, BSHD with padded rows, in check mode (which
     * reads the inputs and the result back and runs the reference) */
    attn_status st = ATTN_SUCCESS;
    attn_problem vp = variants_problem();
    const attn_lengths vl = {q_start, q_len, q_start, q_len};
    CU_ASSERT_EQUAL(attn_context_set_check(ctx, 1), ATTN_SUCCESS);
    ARMED(r, ctx, "attn_forward (variants, check mode)", st,
          attn_forward(ctx, &vp, &vq, &vk, &vv, &vo, &vl, NULL, NULL))
    CU_ASSERT_EQUAL(attn_context_set_check(ctx, 0), ATTN_SUCCESS);
    double atol, rtol;
    attn_tolerance(ATTN_F32, &atol, &rtol);
    if (st == ATTN_SUCCESS)
        check_output(r, ctx, ATTN_F32, &vo, B, HQ, S, sv.vref, atol, rtol, "attn_forward (variants)");

    const attn_kv_cache_desc desc = {.batch = SB, .kv_heads = HKV, .head_dim = D,
                                     .capacity = SCAP, .dtype = ATTN_F32, .block_size = 16,
                                     .storage = ATTN_KV_INT8};
    attn_kv_cache *cache = NULL;
    ARMED(r, ctx, "attn_kv_cache_create_desc", st, attn_kv_cache_create_desc(ctx, &desc, &cache))
    if (!cache) {
        say(r, "attn_kv_cache_create_desc failed twice");
        goto release;
    }
    const int block0[SB] = {SA, 0, 0}, token1[SB] = {0, 1, 0};
    ARMED_CACHE(r, ctx, cache, "attn_kv_cache_append (sequence 0)", st,
                attn_kv_cache_append(cache, &tk, &tv, SA, block0, NULL))
    ARMED_CACHE(r, ctx, cache, "attn_kv_cache_seq_fork", st, attn_kv_cache_seq_fork(cache, 0, 1))
    ARMED_CACHE(r, ctx, cache, "attn_kv_cache_append (copy on write)", st,
                attn_kv_cache_append(cache, &tk1, &tv1, 1, token1, NULL))
    ARMED_CACHE(r, ctx, cache, "attn_kv_cache_truncate", st,
                attn_kv_cache_truncate(cache, 0, SA - 2))
    int lens[SB] = {-1, -1, -1};
    attn_kv_cache_lengths(cache, lens);
    for (int b = 0; b < SB; b++)
        if (lens[b] != sv_kvlens[b])
            say(r, "sequence %d holds %d tokens, not %d", b, lens[b], sv_kvlens[b]);
    /* splits forced, so that the merge of split results runs too */
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, "splits=3"), ATTN_SUCCESS);
    attn_problem pd = {.batch = SB, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = SQ,
                       .kv_len = 1, .dtype = ATTN_F32, .causal = 1};
    ARMED(r, ctx, "attn_decode (speculative, split)", st,
          attn_decode(ctx, cache, &pd, &tq, &to, sv_qlens, NULL, NULL))
    attn_kv_tolerance(ATTN_KV_INT8, ATTN_F32, &atol, &rtol);
    if (st == ATTN_SUCCESS)
        check_output(r, ctx, ATTN_F32, &to, SB, HQ, SQ, sv.ref, atol, rtol,
                     "attn_decode (speculative, split)");
    attn_kv_cache_release(cache);
release:
    for (int i = 0; i < nbufs; i++) clReleaseMemObject(bufs[i]);
    attn_context_release(ctx);
    if (own_queue) clReleaseCommandQueue(own_queue), clReleaseContext(own_context);
    check_released(r);
}

static void test_serving_calls_failed(void)
{
    make_serving_inputs();
    each_call_failed(serving_once, (run){0});
}

/* The same on an application's out-of-order queue: the pool's copies on
 * write, the sequence operations and the split decode ordered by
 * barriers that may fail too. */
static void test_serving_calls_failed_out_of_order(void)
{
    if (!has_out_of_order_queues()) return;
    make_serving_inputs();
    each_call_failed(serving_once, (run){.out_of_order = 1});
}

/* ---- CLBlast's cache ---- */

/* A context made, used for a materialized forward (CLBlast), and kept. */
static attn_context *clblast_context(void)
{
    attn_context *ctx = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &ctx), ATTN_SUCCESS);
    attn_tensor tq, tk, tv, to;
    cl_mem m[] = {harness_upload(ctx, ATTN_F32, in.q, B, HQ, S, D, NULL, &tq),
                  harness_upload(ctx, ATTN_F32, in.k, B, HKV, S, D, NULL, &tk),
                  harness_upload(ctx, ATTN_F32, in.v, B, HKV, S, D, NULL, &tv),
                  harness_alloc(ctx, ATTN_F32, B, HQ, S, D, NULL, &to)};
    attn_problem p = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = S,
                      .kv_len = S, .dtype = ATTN_F32, .causal = 1};
    const attn_status st = attn_forward_materialized(ctx, &p, &tq, &tk, &tv, &to, NULL, NULL, NULL);
    if (st != ATTN_SUCCESS) printf("\n  attn_forward_materialized: %s", attn_last_error(ctx));
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    CU_ASSERT_EQUAL(clFinish(attn_context_queue(ctx)), CL_SUCCESS);
    for (int i = 0; i < 4; i++) clReleaseMemObject(m[i]);
    return ctx;
}

/* CLBlast keeps the programs it compiled per OpenCL context for the life
 * of the process, and each keeps its context alive: one program (and one
 * context) stayed behind each released attn context that had used it.
 * Once the last such context is released nothing may stay; while another
 * one lives, it keeps working. */
static void test_clblast_lets_go(void)
{
    if (!attn_has_clblast()) {
        printf("\n  skipped: this build has no CLBlast");
        return;
    }
    make_inputs();
    for (int round = 0; round < 3; round++) {
        attn_context_release(clblast_context());
        CU_ASSERT_EQUAL(cl_faults_live(CL_FAULTS_PROGRAM), 0);
        CU_ASSERT_EQUAL(cl_faults_live(CL_FAULTS_CONTEXT), 0);
    }
    attn_context *a = clblast_context(), *b = clblast_context();
    attn_context_release(a);
    attn_context_release(clblast_context()); /* b still uses CLBlast meanwhile */
    attn_context_release(b);
    for (int kind = 0; kind < CL_FAULTS_KINDS; kind++) {
        if (cl_faults_live(kind) != 0)
            printf("\n  %ld objects of kind %s left", cl_faults_live(kind),
                   cl_faults_kind_name(kind));
        CU_ASSERT_EQUAL(cl_faults_live(kind), 0);
    }
}

/* The materialized path: attn's conversions and softmax, and CLBlast's
 * GEMMs, whose OpenCL calls go through cl_faults.c as well. */
static void test_materialized_calls_failed(void)
{
    if (!attn_has_clblast()) {
        printf("\n  skipped: this build has no CLBlast");
        return;
    }
    each_call_failed(run_once, (run){.materialized = 1});
}

/* tests/CMakeLists.txt runs these in parts, picked by name (ATTN_TEST_FILTER):
 * a test added here needs a part there. */
static const harness_test tests[] = {
    HARNESS_TEST(test_each_call_failed),
    HARNESS_TEST(test_each_call_failed_from_source),
    HARNESS_TEST(test_each_call_failed_cold_cache),
    HARNESS_TEST(test_each_call_failed_out_of_order),
    HARNESS_TEST(test_serving_calls_failed),
    HARNESS_TEST(test_serving_calls_failed_out_of_order),
    HARNESS_TEST(test_clblast_lets_go),
    HARNESS_TEST(test_materialized_calls_failed),
    HARNESS_END
};

static void register_tests(void) { harness_add_suite("cl_faults", tests); }

int main(void) { return harness_run("test_cl_faults", register_tests); }
