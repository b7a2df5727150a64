/* test_tune.c -- the tuner: candidates that fail to build, compute wrong
 * results or leave outputs unwritten are rejected and never win (injected
 * through a doctored copy of cl/ in ATTN_KERNEL_DIR, wrong only for certain
 * tunable values); correct candidates pass verification in every storage
 * type; a real attn-tune killed with SIGKILL mid-run leaves a valid database
 * and the next run resumes; the run's budget holds; the tool's database
 * commands and failures; the session (attn_tune_run) called directly, for
 * prefill and for decode; attn-tune --decode --compare; decode over paged
 * and int8 caches (their own classes, search spaces and entries). */
#define _XOPEN_SOURCE 700 /* nftw, kill, mkdir */
#include "harness.h"
#include "core/program.h"
#include "tuning/tune_session.h"
#include "tuning/tuning.h"
#include "attention/decode.h"
#include "attention/plan.h"
#include "tuning/tune_bench.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char g_dir[256];

static void fresh_dir(void) { harness_temp_dir(g_dir, sizeof g_dir, "tune"); }
static void remove_dir(void) { harness_remove_tree(g_dir); }

static void path_in(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", g_dir, name);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
}

static attn_problem problem(int D, int hq, int hkv, int s, attn_dtype t, int causal)
{
    attn_problem p;
    memset(&p, 0, sizeof p);
    p.batch = 1;
    p.q_heads = hq;
    p.kv_heads = hkv;
    p.head_dim = D;
    p.q_len = p.kv_len = s;
    p.dtype = t;
    p.causal = causal;
    return p;
}

static attn_params vector_params(int rows, int keys, int vec)
{
    attn_params pr = {.family = ATTN_FAMILY_VECTOR, .block_rows = rows, .block_keys = keys,
                      .wg_size = 128, .local_kv = 1, .vec_width = vec};
    return pr;
}

/* A quick search's options: budget_s, at most max_candidates, seed and the
 * families' bit mask; no hint, no progress callback. */
static attn_search_opts quick_search(double budget_s, int max_candidates, uint64_t seed,
                                     unsigned families)
{
    attn_search_opts so;
    memset(&so, 0, sizeof so);
    so.budget_s = budget_s;
    so.max_candidates = max_candidates;
    so.level = ATTN_TUNE_LEVEL_QUICK;
    so.seed = seed;
    so.families = families;
    return so;
}

/* s with the first `from` replaced by `to` (malloc'd); the test fails when
 * from is not there (the kernel changed under the test). */
static char *replace(const char *s, const char *from, const char *to)
{
    const char *at = strstr(s, from);
    if (!at) printf("\n  kernel source has no \"%s\" to change", from);
    CU_ASSERT_PTR_NOT_NULL_FATAL(at);
    size_t n = strlen(s) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
    return out;
}

/* head then body, malloc'd; body is freed. */
static char *prepended(const char *head, char *body)
{
    size_t n = strlen(head) + strlen(body) + 1;
    char *out = malloc(n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    snprintf(out, n, "%s%s", head, body);
    free(body);
    return out;
}

/* ---- wrong candidates ---- */

/* The vector and tiled families' sources into dir, vector_core.cl's text
 * given to edit (which returns it, changed, malloc'd, and frees what it
 * was given). */
static void write_vector_sources(attn_context *ctx, const char *dir, char *(*edit)(char *))
{
    static const char *names[] = {"common.cl", "vector_core.cl", "tiled_core.cl",    "tiled.cl",
                                  "vector.cl", "peak.cl",        "vector_helpers.cl", "variants.cl",
                                  "mask_tiles.cl"};
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++) {
        char *text = attn_kernel_source(ctx, names[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(text);
        if (i == 1) text = edit(text);
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        write_file(path, text);
        free(text);
    }
}

/* vector_core.cl made wrong for some BLOCK_ROWS: 4 does not build, 2
 * normalises by 1.01/l, 6 leaves each block's last row unwritten. */
static char *wrong_rows(char *text)
{
    char *a = replace(text, "1.0f / l", "ATTN_TEST_ONE / l");
    char *b = replace(a, "if (qi[r] >= rows.sq) break;",
                      "if (qi[r] >= rows.sq || (BLOCK_ROWS == 6 && r == 5)) break;");
    free(text);
    free(a);
    return prepended("#if BLOCK_ROWS == 4\n#error \"test: this candidate does not build\"\n"
                     "#endif\n#if BLOCK_ROWS == 2\n#define ATTN_TEST_ONE 1.01f\n#else\n"
                     "#define ATTN_TEST_ONE 1.0f\n#endif\n",
                     b);
}

static void doctored_kernels(attn_context *ctx, const char *dir)
{
    write_vector_sources(ctx, dir, wrong_rows);
}

/* Every kernel source into dir, decode_common.cl's combine of split
 * decodes made 1% wrong (a single pass is right): what a candidate
 * verified only unsplit would hide. */
static void doctored_combine(attn_context *ctx, const char *dir)
{
    static const char *names[] = {
        "common.cl",        "variants.cl",    "mask_tiles.cl",    "tile.cl",
        "tiled_core.cl",    "flash.cl",       "mma_ops.cl",       "mma_operands.cl",
        "mma_core.cl",      "mma.cl",         "mma_check.cl",     "tiled.cl",
        "vector_helpers.cl", "vector_core.cl", "vector.cl",       "peak.cl",
        "kv_append.cl",     "kv_cache_rows.cl", "pack_cache.cl",  "decode_common.cl",
        "decode_vector.cl", "decode_tiled.cl", "decode_mma.cl",   "copy.cl",
        "convert.cl",       "materialized.cl"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *text = attn_kernel_source(ctx, names[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(text);
        if (strcmp(names[i], "decode_common.cl") == 0) {
            char *wrong = replace(text, "const float out = acc * finish_row(",
                                  "const float out = (nsplit > 1 ? 1.01f : 1.0f) * acc * "
                                  "finish_row(");
            CU_ASSERT_FATAL(strcmp(wrong, text) != 0);
            free(text);
            text = wrong;
        }
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        write_file(path, text);
        free(text);
    }
}

/* A decode candidate with automatic splits whose timed runs split (the long
 * timing cache) is verified split as well: with the combine doctored, the
 * default is WRONG, and the same parameters forced to one split are OK. It
 * was verified through the single pass automatic splits take on the short
 * verification cache, and passed. Needs a device whose automatic splits
 * split the timing cache (here: 8192 keys of D 128, 8 MiB of K and V, over
 * two or more compute units); skipped elsewhere. */
/* A fresh folder, doctor(ctx, folder) writing kernel sources into it, and
 * a context that reads its kernels from there. */
static attn_context *doctored_context(void (*doctor)(attn_context *, const char *))
{
    fresh_dir();
    attn_context *ctx = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &ctx), ATTN_SUCCESS);
    char kdir[512];
    path_in(kdir, sizeof kdir, "kernels");
    CU_ASSERT_EQUAL_FATAL(mkdir(kdir, 0755), 0);
    doctor(ctx, kdir);
    attn_context_release(ctx);
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &ctx), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_kernel_dir(ctx, kdir), ATTN_SUCCESS);
    return ctx;
}

static void test_decode_split_verified(void)
{
    attn_context *ctx = doctored_context(doctored_combine);
    attn_problem p = problem(128, 2, 1, 8192, ATTN_F32, 1);
    p.q_len = 1;
    const attn_tune_cache kv = {0, ATTN_KV_AS_DTYPE};
    attn_tune_bench *b = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_tune_bench_create(ctx, ATTN_ENTRY_DECODE, &p, &kv, &b),
                          ATTN_SUCCESS);
    attn_params dflt = attn_tune_bench_default(b), planned;
    attn_plan_info info;
    CU_ASSERT_EQUAL_FATAL(attn_tune_bench_plan(b, &info, &planned), ATTN_SUCCESS);
    const char *at = strstr(info.params, ",splits=");
    const int splits = at ? atoi(at + 8) : 1;
    printf("\n  default %s", info.params);
    if (dflt.kv_splits != 0 || splits < 2) {
        printf(" (automatic splits do not split here: not checked)");
    } else {
        attn_measure_opts mo = {.target_ms = 20, .min_reps = 1, .max_reps = 3};
        attn_candidate_result r;
        CU_ASSERT_EQUAL(attn_tune_measure(b, &dflt, &mo, &r), ATTN_SUCCESS);
        printf("\n  automatic: %s %.120s", attn_candidate_status_name(r.status), r.why);
        CU_ASSERT_EQUAL(r.status, ATTN_CAND_WRONG);
        attn_params one = dflt;
        one.kv_splits = 1;
        CU_ASSERT_EQUAL(attn_tune_measure(b, &one, &mo, &r), ATTN_SUCCESS);
        printf("\n  splits=1: %s %.120s", attn_candidate_status_name(r.status), r.why);
        CU_ASSERT_EQUAL(r.status, ATTN_CAND_OK);
    }
    attn_tune_bench_free(b);
    attn_context_release(ctx);
    remove_dir();
}

static void test_wrong_candidates_rejected(void)
{
    attn_context *ctx = doctored_context(doctored_kernels);

    attn_problem p = problem(16, 2, 1, 64, ATTN_F32, 1);
    attn_tune_bench *b = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_tune_bench_create(ctx, ATTN_ENTRY_PREFILL, &p, NULL, &b), ATTN_SUCCESS);
    attn_measure_opts mo = {.target_ms = 50, .min_reps = 3, .max_reps = 10};
    struct {
        attn_params pr;
        attn_candidate_status want;
        const char *why;
    } cases[] = {
        {vector_params(8, 32, 16), ATTN_CAND_OK, ""},
        {vector_params(2, 32, 16), ATTN_CAND_WRONG, "beyond tolerance"},
        {vector_params(4, 32, 16), ATTN_CAND_BUILD, "test: this candidate does not build"},
        {vector_params(6, 32, 16), ATTN_CAND_WRONG, "nan"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        attn_candidate_result r;
        char text[200];
        attn_params_format(&cases[i].pr, text, sizeof text);
        CU_ASSERT_EQUAL(attn_tune_measure(b, &cases[i].pr, &mo, &r), ATTN_SUCCESS);
        printf("\n  %s: %s (error %.2e, %.3g of tolerance) %.160s", text,
               attn_candidate_status_name(r.status), r.max_error, r.error_ratio, r.why);
        CU_ASSERT_EQUAL(r.status, cases[i].want);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.why, cases[i].why));
        if (cases[i].want == ATTN_CAND_OK) {
            CU_ASSERT(r.median_ms > 0 && r.gflops > 0 && r.reps >= 3);
            CU_ASSERT(r.error_ratio < 1.0);
        }
    }
    /* re-timed beside a good one, the one that does not build is dropped
     * (with a warning), or fails the whole re-timing when not to be dropped */
    {
        const attn_params two[2] = {cases[0].pr, cases[2].pr};
        double ms[2] = {0, 0};
        attn_time_spread sp[2];
        CU_ASSERT_EQUAL(attn_tune_retime(b, two, 2, 3, 1, 1, ms, sp), ATTN_SUCCESS);
        CU_ASSERT(ms[0] > 0 && isfinite(ms[0]) && sp[0].median_ms == ms[0]);
        CU_ASSERT(isinf(ms[1]) && sp[1].median_ms == 0);
        CU_ASSERT_EQUAL(attn_tune_retime(b, two, 2, 3, 1, 0, ms, sp), ATTN_ERROR_BUILD);
        CU_ASSERT_EQUAL(attn_tune_retime(b, two + 1, 1, 3, 1, 1, ms, sp), ATTN_ERROR_BUILD);
    }
    /* after the failures the context still works, and nothing stays forced */
    attn_plan_info info;
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "heuristic");

    /* a search that meets them (the wrong one as its hint) never picks one */
    attn_params hint = vector_params(2, 32, 16);
    attn_search_opts so = quick_search(30, 4, 7, 1u << ATTN_FAMILY_VECTOR);
    so.hint = &hint;
    attn_search_result res;
    CU_ASSERT_EQUAL(attn_tune_search(b, &so, &res), ATTN_SUCCESS);
    char text[200];
    attn_params_format(&res.best, text, sizeof text);
    printf("\n  search: %s, %.3f ms (default %.3f ms), %d tested, %d rejected, space %d", text,
           res.best_ms, res.default_ms, res.tested, res.rejected, res.space);
    CU_ASSERT(res.best.block_rows != 2 && res.best.block_rows != 4 && res.best.block_rows != 6);
    CU_ASSERT(res.rejected >= 1);
    CU_ASSERT(res.tested <= 4);
    CU_ASSERT_EQUAL(res.cut_short, 0); /* max_candidates ended it, as asked */
    CU_ASSERT(res.default_ms > 0); /* the default is always measured */
    CU_ASSERT(attn_params_equal(&res.best, &res.dflt) || res.best_ms < res.default_ms);
    CU_ASSERT(res.best_r.status == ATTN_CAND_OK && res.best_r.error_ratio < 1.0);
    /* a budget that leaves room for the first candidate only: cut short */
    attn_search_opts tiny = quick_search(1e-3, 0, 7, 1u << ATTN_FAMILY_VECTOR);
    attn_search_result cut;
    CU_ASSERT_EQUAL(attn_tune_search(b, &tiny, &cut), ATTN_SUCCESS);
    CU_ASSERT(cut.cut_short == 1 && cut.tested == 1);
    attn_tune_bench_free(b);
    attn_context_release(ctx);
    remove_dir();
}

/* ---- the search keeps the fastest ---- */

static int g_slow_rows; /* the BLOCK_ROWS doctored_slow makes slow */

/* vector_core.cl's rows of BLOCK_ROWS == g_slow_rows finished after a
 * spin of 20000 dependent steps (each row's 1 / l, unchanged: right, and
 * slow). */
static char *slow_rows(char *text)
{
    char *a = replace(text, "1.0f / l", "attn_test_spin(l) / l");
    free(text);
    char head[256];
    snprintf(head, sizeof head, "inline float attn_test_spin(float l)\n{\n    float x = l;\n"
             "    for (int i = 0; i < (BLOCK_ROWS == %d ? 20000 : 0); i++)\n"
             "        x = x * 0.5f + l * 0.5f;\n    return x / l;\n}\n",
             g_slow_rows);
    return prepended(head, a);
}

static void doctored_slow(attn_context *ctx, const char *dir)
{
    write_vector_sources(ctx, dir, slow_rows);
}

/* The default made several times slower than its neighbours (right all
 * the same): the search must keep a faster candidate, not the default.
 * A search that kept the slowest as "the fastest" passed every test
 * (the default always won where it was as fast as any). */
static void test_search_keeps_fastest(void)
{
    attn_problem p = problem(16, 2, 1, 64, ATTN_F32, 1);
    attn_tune_bench *b = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_tune_bench_create(harness_context(), ATTN_ENTRY_PREFILL, &p, NULL,
                                                 &b), ATTN_SUCCESS);
    const attn_params dflt = attn_tune_bench_default(b);
    attn_tune_bench_free(b);
    if (dflt.family != ATTN_FAMILY_VECTOR) {
        printf("\n  the default here is not the vector family's: not checked");
        return;
    }
    g_slow_rows = dflt.block_rows;
    attn_context *ctx = doctored_context(doctored_slow);
    CU_ASSERT_EQUAL_FATAL(attn_tune_bench_create(ctx, ATTN_ENTRY_PREFILL, &p, NULL, &b),
                          ATTN_SUCCESS);
    attn_search_opts so = quick_search(30, 6, 7, 1u << ATTN_FAMILY_VECTOR);
    attn_search_result res;
    CU_ASSERT_EQUAL(attn_tune_search(b, &so, &res), ATTN_SUCCESS);
    char text[200];
    attn_params_format(&res.best, text, sizeof text);
    printf("\n  search: %s, %.4f ms (default %.4f ms), %d tested", text, res.best_ms,
           res.default_ms, res.tested);
    CU_ASSERT(res.best.block_rows != g_slow_rows);
    CU_ASSERT(res.best_ms < res.default_ms / 2);
    CU_ASSERT(res.best_r.status == ATTN_CAND_OK);
    attn_tune_bench_free(b);
    attn_context_release(ctx);
    remove_dir();
}

/* Correct candidates pass in every storage type, causal or not, with GQA. */
static void test_correct_candidates_pass(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    const attn_problem ps[] = {problem(16, 8, 2, 40, ATTN_F16, 0), problem(16, 4, 4, 40, ATTN_BF16, 1)};
    attn_measure_opts mo = {.target_ms = 20, .min_reps = 3, .max_reps = 5};
    for (int i = 0; i < 2; i++) {
        attn_tune_bench *b = NULL;
        CU_ASSERT_EQUAL_FATAL(attn_tune_bench_create(ctx, ATTN_ENTRY_PREFILL, &ps[i], NULL, &b), ATTN_SUCCESS);
        attn_params pr = vector_params(8, 32, 16);
        attn_candidate_result r;
        CU_ASSERT_EQUAL(attn_tune_measure(b, &pr, &mo, &r), ATTN_SUCCESS);
        printf("\n  %s: %s, error %.2e (%.3g of tolerance) %s", attn_dtype_name(ps[i].dtype),
               attn_candidate_status_name(r.status), r.max_error, r.error_ratio, r.why);
        CU_ASSERT_EQUAL(r.status, ATTN_CAND_OK);
        attn_tune_bench_free(b);
    }
}

/* ---- the tool ---- */

/* Runs attn-tune with args (NULL-terminated) and this process's environment
 * changed by env (as harness_start_program's extra_env), stdout and stderr
 * into out_path; returns the pid (wait = 0) or the exit status (wait = 1;
 * 128 + the signal, or -1, if it did not exit normally). */
static int run_tool(const char *const *args, const char *const *env, const char *out_path,
                    int wait)
{
    const char *bin = harness_tool_path("ATTN_TUNE_BIN", "attn-tune");
    const pid_t pid = harness_start_program(bin, args, env, out_path, NULL);
    CU_ASSERT_FATAL(pid > 0);
    return wait ? harness_wait_program(pid) : pid;
}

static size_t db_count(const char *path, attn_status *st)
{
    attn_tuning_db db;
    attn_tuning_db_init(&db);
    char err[1024];
    *st = attn_tuning_db_load(path, &db, NULL, err, sizeof err);
    if (*st != ATTN_SUCCESS) printf("\n  %s", err);
    size_t n = db.count;
    attn_tuning_db_free(&db);
    return n;
}

static int count_lines(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

static void test_resume_after_kill(void)
{
    fresh_dir();
    char db[512], out[512];
    path_in(db, sizeof db, "tuning.json");
    path_in(out, sizeof out, "out.txt");
    char env_db[600];
    snprintf(env_db, sizeof env_db, "ATTN_TUNING_DB=%s", db);
    const char *const env[] = {env_db, NULL};
    const char *const slow[] = {env_db, "ATTN_TUNE_TEST_DELAY_MS=1500", NULL};
    /* three classes (three length buckets); each lasts at least 1.5 s */
    const char *args[] = {"--shapes", "hq=2:hkv=1:d=16:s=64,hq=2:hkv=1:d=16:s=128 hq=2:hkv=1:d=16:s=256",
                          "--family", "vector", "--max-candidates", "2", "--budget", "60", NULL};
    pid_t pid = run_tool(args, slow, out, 0);
    /* wait for the first finished class, then kill -9 in the middle of the next */
    attn_status st = ATTN_SUCCESS;
    double t0 = attn_now_s();
    size_t n = 0;
    int status = 0;
    while (attn_now_s() - t0 < 120 && (n = db_count(db, &st)) < 1 && waitpid(pid, &status, WNOHANG) == 0) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    CU_ASSERT_EQUAL(kill(pid, SIGKILL), 0);
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    char *text = harness_read_file(out, NULL);
    printf("\n  killed after %.1f s; its output:\n%s", attn_now_s() - t0, text ? text : "");
    free(text);
    n = db_count(db, &st);
    printf("\n  database after the kill: %s, %zu entries", attn_status_name(st), n);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS); /* valid JSON, whatever the moment */
    CU_ASSERT(n >= 1 && n < 3);

    /* the next run resumes: the finished classes are skipped */
    CU_ASSERT_EQUAL(run_tool(args, env, out, 1), 0);
    text = harness_read_file(out, NULL);
    printf("\n  resumed run:\n%s", text ? text : "");
    CU_ASSERT_EQUAL(count_lines(text, "skipped"), (int)n);
    free(text);
    CU_ASSERT_EQUAL(db_count(db, &st), 3);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    /* and the library uses what it found */
    attn_context *ctx = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &ctx), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_tuning_db(ctx, db, NULL), ATTN_SUCCESS);
    attn_problem p = problem(16, 2, 1, 100, ATTN_F32, 1);
    attn_plan_info info;
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "tuned");
    attn_context_release(ctx);
    remove_dir();
}

/* The budget is the whole run's (start-up included): with four classes that
 * each take 2.5 s and a budget of 4 s, the run ends within a few seconds
 * of the budget and says which classes it left; each class's summary
 * counts candidates out of the same number its progress lines show; and
 * the tool says that a shape without a type is tuned in f32 only. */
static void test_budget_and_summary(void)
{
    fresh_dir();
    char db[512], out[512];
    path_in(db, sizeof db, "tuning.json");
    path_in(out, sizeof out, "out.txt");
    char env_db[600];
    snprintf(env_db, sizeof env_db, "ATTN_TUNING_DB=%s", db);
    const char *const slow[] = {env_db, "ATTN_TUNE_TEST_DELAY_MS=2500", NULL};
    const char *args[] = {"--shapes", "hq=2:hkv=1:d=16:s=64,hq=2:hkv=1:d=16:s=128,"
                          "hq=2:hkv=1:d=16:s=256,hq=2:hkv=1:d=16:s=512",
                          "--family", "vector", "--max-candidates", "2", "--budget", "4", NULL};
    const double t0 = attn_now_s();
    CU_ASSERT_EQUAL(run_tool(args, slow, out, 1), 0);
    const double took = attn_now_s() - t0;
    char *text = harness_read_file(out, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    printf("\n  --budget 4 took %.1f s:\n%s", took, text ? text : "");
    CU_ASSERT(took < 4 + 3.5);
    const int left = count_lines(text, "not tuned: the budget is spent");
    CU_ASSERT(left >= 1 && left <= 3);
    attn_status st;
    CU_ASSERT_EQUAL(db_count(db, &st), (size_t)(4 - left));
    /* each entry keeps the winner's and the default's spread */
    attn_tuning_db tdb;
    attn_tuning_db_init(&tdb);
    char err[1024];
    CU_ASSERT_EQUAL(attn_tuning_db_load(db, &tdb, NULL, err, sizeof err), ATTN_SUCCESS);
    for (size_t i = 0; i < tdb.count; i++) {
        const attn_tuning_entry *e = &tdb.entries[i];
        CU_ASSERT(e->spread.min_ms > 0 && e->spread.min_ms <= e->spread.q1_ms &&
                  e->spread.q1_ms <= e->median_ms && e->median_ms <= e->spread.q3_ms &&
                  e->spread.q3_ms <= e->spread.max_ms);
        CU_ASSERT(e->default_spread.min_ms > 0 && e->default_spread.q1_ms <= e->default_ms &&
                  e->default_ms <= e->default_spread.q3_ms);
    }
    attn_tuning_db_free(&tdb);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "f32 only"));
    /* --quiet still says that classes were left (on stderr), once */
    char db2[512], out2[512], env_db2[600];
    path_in(db2, sizeof db2, "quiet.json");
    path_in(out2, sizeof out2, "quiet.txt");
    snprintf(env_db2, sizeof env_db2, "ATTN_TUNING_DB=%s", db2);
    const char *const slow2[] = {env_db2, "ATTN_TUNE_TEST_DELAY_MS=2500", NULL};
    const char *quiet[] = {"--shapes", "hq=2:hkv=1:d=16:s=64,hq=2:hkv=1:d=16:s=128,"
                           "hq=2:hkv=1:d=16:s=256,hq=2:hkv=1:d=16:s=512", "--family", "vector",
                           "--max-candidates", "2", "--budget", "4", "--quiet", NULL};
    CU_ASSERT_EQUAL(run_tool(quiet, slow2, out2, 1), 0);
    char *qtext = harness_read_file(out2, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(qtext);
    printf("\n  --quiet --budget 4:\n%s", qtext);
    CU_ASSERT_EQUAL(count_lines(qtext, "not tuned for want of time"), 1);
    CU_ASSERT_EQUAL(count_lines(qtext, "not tuned: the budget is spent"), 0);
    free(qtext);
    /* progress "  [i/n] done/planned ..." against the summary "of planned planned" */
    int planned[8] = {0}, summaries = 0;
    for (const char *line = text; line && *line;) {
        int i, n, done, p;
        if (sscanf(line, "  [%d/%d] %d/%d", &i, &n, &done, &p) == 4 && i >= 1 && i <= 8)
            planned[i - 1] = p;
        const char *of = strstr(line, " planned (");
        const char *eol = strchr(line, '\n');
        if (of && (!eol || of < eol)) {
            const char *num = of;
            while (num > line && num[-1] != ' ') num--;
            int want = atoi(num);
            printf("\n  class %d: progress /%d, summary of %d planned", summaries + 1,
                   planned[summaries], want);
            CU_ASSERT(want > 0);
            CU_ASSERT_EQUAL(planned[summaries], want);
            /* the winner's spread, and a warning when it is too wide */
            const char *iqr = strstr(of, "IQR ");
            CU_ASSERT_PTR_NOT_NULL_FATAL(iqr);
            double w = 0, d = 0;
            CU_ASSERT_EQUAL(sscanf(iqr, "IQR %lf%% (default %lf%%)", &w, &d), 2);
            char cls[64];
            snprintf(cls, sizeof cls, "WARNING: %.*s", (int)strcspn(line, " "), line);
            if (w > 100 * ATTN_NOISE_LIMIT || d > 100 * ATTN_NOISE_LIMIT)
                CU_ASSERT_PTR_NOT_NULL(strstr(text, "too noisy to rank close candidates"));
            summaries++;
        }
        line = eol ? eol + 1 : NULL;
    }
    CU_ASSERT_EQUAL(summaries, 4 - left);
    /* the peak before and after, and the run-wide warning exactly when they
     * are too far apart or a class was too noisy */
    double before = 0, after = 0;
    const char *pk = strstr(text, "fp32 FMA peak: ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(pk);
    CU_ASSERT_EQUAL(sscanf(pk, "fp32 FMA peak: %lf GFLOP/s before tuning, %lf after", &before, &after), 2);
    CU_ASSERT(before > 0 && after > 0);
    const int noisy = fabs(after - before) / fmax(before, after) > ATTN_NOISE_LIMIT ||
                      strstr(text, "too noisy to rank close candidates") != NULL;
    CU_ASSERT_EQUAL(strstr(text, "too noisy to rank candidates reliably") != NULL, noisy);
    free(text);
    remove_dir();
}

static void test_time_spread(void)
{
    double x[] = {9, 1, 3, 7, 5}; /* 1 3 5 7 9 */
    attn_time_spread s = attn_time_spread_of(x, 5);
    CU_ASSERT(s.min_ms == 1 && s.q1_ms == 3 && s.median_ms == 5 && s.q3_ms == 7 && s.max_ms == 9);
    CU_ASSERT_DOUBLE_EQUAL(attn_time_spread_iqr(&s), 0.8, 1e-12);
    double y[] = {2, 4}; /* even: the median between the two, as before */
    s = attn_time_spread_of(y, 2);
    CU_ASSERT_DOUBLE_EQUAL(s.median_ms, 3, 1e-12);
}

/* attn_tune_run without the tool: shapes of one class tuned once, each
 * winner in the database, a second run skipping them, --force re-tuning
 * one in place, and bad options or a corrupt database refused. */
/* A session test's start: a fresh folder, the database path in it. */
static attn_context *session_start(char *db, size_t size, const char *name)
{
    fresh_dir();
    path_in(db, size, name);
    return harness_context();
}

static void test_session(void)
{
    char db[300];
    attn_context *ctx = session_start(db, sizeof db, "session.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    /* 32 and 30 share the q32 kv32 bucket; 64 is another class */
    const attn_problem shapes[] = {problem(16, 4, 2, 32, ATTN_F32, 1),
                                   problem(16, 4, 2, 30, ATTN_F32, 1),
                                   problem(16, 4, 2, 64, ATTN_F32, 1)};
    attn_tune_run_opts o = {db, shapes, 3, ATTN_TUNE_LEVEL_QUICK, 120, 0, 2,
                            1u << ATTN_FAMILY_VECTOR, 7, 0, 1, ATTN_ENTRY_PREFILL, {0, ATTN_KV_AS_DTYPE}};
    attn_tune_run_result r;
    CU_ASSERT_EQUAL(attn_tune_run(ctx, &o, &r), ATTN_SUCCESS);
    CU_ASSERT(r.classes == 2 && r.to_tune == 2 && r.tuned == 2 && r.failed == 0 &&
              r.unstarted == 0);
    attn_tuning_db d;
    attn_tuning_db_init(&d);
    char err[1024];
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_load(db, &d, NULL, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(d.count, 2);
    for (size_t i = 0; i < d.count; i++) {
        const attn_tuning_entry *e = &d.entries[i];
        attn_shape_class want;
        attn_shape_class_of(&shapes[i == 0 ? 0 : 2], &want);
        CU_ASSERT(attn_shape_class_equal(&e->cls, &want));
        CU_ASSERT(strstr(e->params, "family=vector") != NULL);
        CU_ASSERT(e->tested >= 1 && e->tested <= 2 && e->level == ATTN_TUNE_LEVEL_QUICK);
        /* the entry's GFLOP/s are attn_problem_flops over its median */
        const attn_problem *sp = &shapes[i == 0 ? 0 : 2];
        CU_ASSERT_DOUBLE_EQUAL(e->gflops, attn_problem_flops(sp, NULL) / (e->median_ms * 1e6),
                               1e-9 * e->gflops);
    }
    attn_tuning_db_free(&d);
    /* again: both current, nothing tuned */
    CU_ASSERT_EQUAL(attn_tune_run(ctx, &o, &r), ATTN_SUCCESS);
    CU_ASSERT(r.classes == 2 && r.to_tune == 0 && r.tuned == 0);
    /* an entry whose search the budget cut short (kept through the file)
     * is tuned again, and then complete (max_candidates is no cut) */
    attn_tuning_db_init(&d);
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_load(db, &d, NULL, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(d.entries[0].cut_short, 0);
    d.entries[0].cut_short = 1;
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(db, &d, err, sizeof err), ATTN_SUCCESS);
    attn_tuning_db_free(&d);
    attn_tuning_db_init(&d);
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_load(db, &d, NULL, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(d.entries[0].cut_short, 1);
    attn_tuning_db_free(&d);
    CU_ASSERT_EQUAL(attn_tune_run(ctx, &o, &r), ATTN_SUCCESS);
    CU_ASSERT(r.classes == 2 && r.to_tune == 1 && r.tuned == 1);
    attn_tuning_db_init(&d);
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_load(db, &d, NULL, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT(d.count == 2 && !d.entries[0].cut_short && !d.entries[1].cut_short);
    attn_tuning_db_free(&d);
    /* forced, one shape: re-tuned, replacing its entry */
    o.force = 1;
    o.nshapes = 1;
    CU_ASSERT_EQUAL(attn_tune_run(ctx, &o, &r), ATTN_SUCCESS);
    CU_ASSERT(r.classes == 1 && r.to_tune == 1 && r.tuned == 1);
    attn_status st;
    CU_ASSERT_EQUAL(db_count(db, &st), 2);
    /* refusals */
    o.nshapes = 0;
    CU_ASSERT_EQUAL(attn_tune_run(ctx, &o, &r), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(r.failed, 1);
    o.nshapes = 1;
    o.level = 3;
    CU_ASSERT_EQUAL(attn_tune_run(ctx, &o, &r), ATTN_ERROR_INVALID_ARGUMENT);
    o.level = ATTN_TUNE_LEVEL_QUICK;
    o.entry = 2;
    CU_ASSERT_EQUAL(attn_tune_run(ctx, &o, &r), ATTN_ERROR_INVALID_ARGUMENT);
    o.entry = ATTN_ENTRY_PREFILL;
    write_file(db, "{\"format\": ");
    CU_ASSERT_EQUAL(attn_tune_run(ctx, &o, &r), ATTN_ERROR_TUNING_DB);
    CU_ASSERT(r.failed == 1 && r.tuned == 0);
    remove_dir();
}

/* The kernel timed is the kernel verified. An f32 prefill past mma's
 * plain sum (ATTN_MMA_F32_PLAIN_KEYS keys) builds its kernel with MMA_FOLD:
 * the verification shape then has a row that long too, built the same. A
 * decode candidate whose forced splits leave chunks that long on the
 * timing cache only is refused unverified, before anything runs. Before,
 * both were verified on another build than the one timed and stored. */
static void test_timed_kernel_verified(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    const attn_params mma = attn_params_defaults(ATTN_FAMILY_MMA);
    char topt[1024], vopt[1024];
    attn_problem p = problem(16, 2, 2, ATTN_MMA_F32_PLAIN_KEYS + 4, ATTN_F32, 1);
    p.q_len = 16;
    attn_tune_bench *b = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_tune_bench_create(ctx, ATTN_ENTRY_PREFILL, &p, NULL, &b), ATTN_SUCCESS);
    attn_params_options(&mma, &b->tp, ATTN_ENTRY_PREFILL, topt, sizeof topt);
    attn_params_options(&mma, &b->vp, ATTN_ENTRY_PREFILL, vopt, sizeof vopt);
    CU_ASSERT_PTR_NOT_NULL(strstr(topt, "MMA_FOLD"));
    CU_ASSERT_STRING_EQUAL(topt, vopt);
    int longest = 0;
    for (int i = 0; i < ATTN_TUNE_VB; i++)
        if (b->vlen.kv_len[i] > longest) longest = b->vlen.kv_len[i];
    CU_ASSERT(longest > ATTN_MMA_F32_PLAIN_KEYS && longest <= b->vp.kv_len);
    attn_tune_bench_free(b);

    p = problem(16, 2, 2, 2 * ATTN_MMA_F32_PLAIN_KEYS, ATTN_F32, 1);
    p.q_len = 1;
    CU_ASSERT_EQUAL_FATAL(attn_tune_bench_create(ctx, ATTN_ENTRY_DECODE, &p, NULL, &b), ATTN_SUCCESS);
    attn_params one = mma;
    one.kv_splits = 1; /* the whole cache in one chunk: folded on the timing cache only */
    const attn_measure_opts mo = {1.0, 1, 2, 0, 0, 0, 0};
    attn_candidate_result r;
    CU_ASSERT_EQUAL(attn_tune_measure(b, &one, &mo, &r), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(r.status, ATTN_CAND_DEVICE);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.why, "could not be verified"));
    printf("\n  splits=1 over %d keys: %s: %.200s", p.kv_len, attn_candidate_status_name(r.status),
           r.why);
    attn_tune_bench_free(b);
}

/* The decode search space: the family's tunables and the KV splits, none
 * of them splitting the keys finer than one key block. */
static void test_decode_space(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    attn_problem p = problem(16, 4, 2, 256, ATTN_F32, 1);
    p.q_len = 1;
    attn_tune_bench *b = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_tune_bench_create(ctx, ATTN_ENTRY_DECODE, &p, NULL, &b), ATTN_SUCCESS);
    attn_device_limits dev;
    attn_tune_bench_limits(b, &dev);
    /* either family, split or not, verifies through attn_decode */
    const attn_measure_opts mo = {1.0, 1, 2, 0, 0, 0, 0};
    for (int f = 0; f < 2; f++)
        for (int split = 0; split <= 2; split += 2) {
            attn_params pr = attn_params_defaults(f);
            pr.block_rows = 2;
            pr.block_keys = 16;
            pr.wg_size = 32;
            pr.vec_width = 8;
            pr.kv_splits = split;
            attn_candidate_result r;
            CU_ASSERT_EQUAL(attn_tune_measure(b, &pr, &mo, &r), ATTN_SUCCESS);
            CU_ASSERT_EQUAL(r.status, ATTN_CAND_OK);
            if (r.status != ATTN_CAND_OK) printf("\n  family %d splits %d: %s", f, split, r.why);
            CU_ASSERT(r.median_ms > 0 && r.error_ratio <= 1);
        }
    attn_tune_bench_free(b);
    const attn_params base = attn_params_defaults(ATTN_FAMILY_VECTOR);
    attn_params *pre = NULL, *dec = NULL;
    const unsigned vec = 1u << ATTN_FAMILY_VECTOR;
    const int np = attn_search_enumerate(&dev, ATTN_ENTRY_PREFILL, &p, NULL, &base, vec, &pre);
    const int nd = attn_search_enumerate(&dev, ATTN_ENTRY_DECODE, &p, NULL, &base, vec, &dec);
    CU_ASSERT(np > 0 && nd > np);
    int seen[65] = {0};
    for (int i = 0; i < np; i++) CU_ASSERT_EQUAL(pre[i].kv_splits, base.kv_splits);
    for (int i = 0; i < nd; i++) {
        CU_ASSERT(dec[i].kv_splits <= 1 || dec[i].kv_splits * dec[i].block_keys <= p.kv_len);
        if (dec[i].kv_splits >= 0 && dec[i].kv_splits <= 64) seen[dec[i].kv_splits] = 1;
    }
    CU_ASSERT(seen[0] && seen[1] && seen[2] && seen[4]);
    /* two candidates apart only in their splits are two candidates */
    attn_params a = base, c = base;
    c.kv_splits = 2;
    CU_ASSERT_FALSE(attn_params_equal(&a, &c));
    CU_ASSERT(attn_search_complexity(&c, &a) > 0);
    free(pre);
    free(dec);
    /* a decode shape beyond ATTN_DECODE_MAX_Q_LEN is refused by name */
    p.q_len = ATTN_DECODE_MAX_Q_LEN + 1;
    CU_ASSERT_EQUAL(attn_tune_bench_create(ctx, ATTN_ENTRY_DECODE, &p, NULL, &b), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "ATTN_DECODE_MAX_Q_LEN"));
}

/* attn_tune_run on a decode shape: one decode entry (splits included, the
 * decode sources' hash) that attn_decode's planner then uses, skipped on
 * the next run; the prefill entry of the same shape stays beside it. */
static void test_session_decode(void)
{
    char db[300];
    attn_context *ctx = session_start(db, sizeof db, "decode.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    attn_problem shape = problem(16, 4, 2, 64, ATTN_F32, 1);
    shape.q_len = 1; /* one new query against a cache of 64 */
    attn_tune_run_opts o = {db, &shape, 1, ATTN_TUNE_LEVEL_QUICK, 120, 0, 2,
                            1u << ATTN_FAMILY_VECTOR, 7, 0, 1, ATTN_ENTRY_PREFILL, {0, ATTN_KV_AS_DTYPE}};
    attn_tune_run_result r;
    CU_ASSERT_EQUAL(attn_tune_run(ctx, &o, &r), ATTN_SUCCESS); /* the prefill entry */
    CU_ASSERT(r.tuned == 1 && r.failed == 0);
    o.entry = ATTN_ENTRY_DECODE;
    CU_ASSERT_EQUAL(attn_tune_run(ctx, &o, &r), ATTN_SUCCESS);
    CU_ASSERT(r.classes == 1 && r.to_tune == 1 && r.tuned == 1 && r.failed == 0);
    attn_tuning_db d;
    attn_tuning_db_init(&d);
    char err[1024], hash[17];
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_load(db, &d, NULL, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(d.count, 2);
    const attn_tuning_entry *de = d.entries[0].cls.decode ? &d.entries[0] : &d.entries[1];
    const attn_tuning_entry *pe = de == &d.entries[0] ? &d.entries[1] : &d.entries[0];
    CU_ASSERT(de->cls.decode == 1 && pe->cls.decode == 0);
    CU_ASSERT(de->kv_len == 64 && de->q_len == 1 && de->tested >= 1 && de->tested <= 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(de->params, "family=vector"));
    CU_ASSERT_PTR_NOT_NULL(strstr(de->params, ",splits="));
    CU_ASSERT_PTR_NULL(strstr(pe->params, "splits"));
    CU_ASSERT_EQUAL(attn_entry_source_hash(ctx, ATTN_ENTRY_DECODE, ATTN_FAMILY_VECTOR, hash),
                    ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(de->kernel_hash, hash);
    CU_ASSERT(de->max_error >= 0 && de->error_ratio <= 1);
    printf("\n  decode entry: %s, %.4f ms", de->params, de->median_ms);

    /* attn_decode's planner takes it */
    attn_context *own = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &own), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_context_set_tuning_db(own, db, ""), ATTN_SUCCESS);
    attn_kv_cache *cache = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(own, 1, 2, 16, 64, ATTN_F32, &cache), ATTN_SUCCESS);
    attn_plan_info info;
    CU_ASSERT_EQUAL(attn_decode_prepare(own, cache, &shape, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "tuned");
    const size_t n = (size_t)(strstr(de->params, ",splits=") - de->params);
    CU_ASSERT(strncmp(info.params, de->params, n) == 0 && strncmp(info.params + n, ",splits=", 8) == 0);
    attn_kv_cache_release(cache);
    attn_context_release(own);

    /* again: current, skipped; both entries still there */
    CU_ASSERT_EQUAL(attn_tune_run(ctx, &o, &r), ATTN_SUCCESS);
    CU_ASSERT(r.classes == 1 && r.to_tune == 0 && r.tuned == 0);
    o.entry = ATTN_ENTRY_PREFILL;
    CU_ASSERT_EQUAL(attn_tune_run(ctx, &o, &r), ATTN_SUCCESS);
    CU_ASSERT(r.classes == 1 && r.to_tune == 0 && r.tuned == 0);
    attn_status st;
    CU_ASSERT_EQUAL(db_count(db, &st), 2);
    attn_tuning_db_free(&d);
    remove_dir();
}

/* A decode bench over a paged cache: its default is the heuristic with
 * the keys per block fitted to the block, its search space holds only keys
 * that fit (the others would be clamped into duplicates), a caller's
 * candidate with more keys is refused by name, and one that fits verifies
 * through attn_decode over the paged cache; an int8 bench verifies at
 * int8's tolerance. */
static void test_decode_cache_kinds_space(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    attn_problem p = problem(16, 4, 2, 256, ATTN_F32, 1);
    p.q_len = 1;
    const attn_tune_cache paged = {16, ATTN_KV_AS_DTYPE}, int8 = {0, ATTN_KV_INT8};
    attn_tune_bench *b = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_tune_bench_create(ctx, ATTN_ENTRY_DECODE, &p, &paged, &b),
                          ATTN_SUCCESS);
    attn_device_limits dev;
    attn_tune_bench_limits(b, &dev);
    attn_shape_class cls;
    attn_tune_bench_class(b, &cls);
    CU_ASSERT(cls.decode == 1 && cls.kv_block == 16 && cls.kv_int8 == 0);
    /* both caches paged, of blocks of 16 */
    CU_ASSERT(b->tcache->paged && b->tcache->page_rows == 16);
    CU_ASSERT(b->vcache->paged && b->vcache->page_rows == 16);
    const attn_params heur = attn_plan_heuristic(ATTN_ENTRY_DECODE, &dev, &p);
    const attn_params dflt = attn_tune_bench_default(b);
    CU_ASSERT(heur.block_keys > 16); /* else the fitting below proves nothing */
    CU_ASSERT_EQUAL(dflt.block_keys, 16);
    attn_params *list = NULL;
    const int n16 = attn_search_enumerate(&dev, ATTN_ENTRY_DECODE, &p, &cls, &dflt, 0, &list);
    CU_ASSERT(n16 > 0);
    for (int i = 0; i < n16; i++) CU_ASSERT(list[i].block_keys <= 16);
    free(list);
    attn_shape_class contiguous = cls;
    contiguous.kv_block = 0;
    const int n0 = attn_search_enumerate(&dev, ATTN_ENTRY_DECODE, &p, &contiguous, &dflt, 0, &list);
    int wider = 0;
    for (int i = 0; i < n0; i++) wider += list[i].block_keys > 16;
    CU_ASSERT(n0 > n16 && wider > 0);
    free(list);
    attn_params nb[16];
    const int nn = attn_search_neighbours(&dev, ATTN_ENTRY_DECODE, &p, &cls, &dflt, nb, 16);
    CU_ASSERT(nn > 0);
    for (int i = 0; i < nn; i++) CU_ASSERT(nb[i].block_keys <= 16);
    const attn_measure_opts mo = {1.0, 1, 2, 0, 0, 0, 0};
    attn_candidate_result r;
    CU_ASSERT_EQUAL(attn_tune_measure(b, &heur, &mo, &r), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(r.status, ATTN_CAND_DEVICE);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.why, "exceed the cache's block size 16"));
    CU_ASSERT_EQUAL(attn_tune_measure(b, &dflt, &mo, &r), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(r.status, ATTN_CAND_OK);
    if (r.status != ATTN_CAND_OK) printf("\n  paged: %s", r.why);
    /* the library's plan for the bench (what --compare times): the
     * heuristic fitted to the block, as planned and as launched */
    attn_plan_info info;
    attn_params planned;
    CU_ASSERT_EQUAL(attn_tune_bench_plan(b, &info, &planned), ATTN_SUCCESS);
    CU_ASSERT(planned.block_keys == 16 && strstr(info.params, "keys=16") != NULL);
    attn_tune_bench_free(b);
    CU_ASSERT_EQUAL_FATAL(attn_tune_bench_create(ctx, ATTN_ENTRY_DECODE, &p, &int8, &b),
                          ATTN_SUCCESS);
    attn_tune_bench_class(b, &cls);
    CU_ASSERT(cls.decode == 1 && cls.kv_block == 0 && cls.kv_int8 == 1);
    CU_ASSERT(!b->tcache->paged && b->tcache->storage == ATTN_KV_INT8);
    CU_ASSERT(!b->vcache->paged && b->vcache->storage == ATTN_KV_INT8);
    CU_ASSERT_EQUAL(attn_tune_measure(b, &heur, &mo, &r), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(r.status, ATTN_CAND_OK);
    if (r.status != ATTN_CAND_OK) printf("\n  int8: %s", r.why);
    attn_tune_bench_free(b);
}

/* Where attn_decode_prepare's plan for a cache of this kind comes from, on
 * a context reading database db. */
static void expect_source(const char *db, int block, attn_kv_storage storage, const char *want,
                          const char *params)
{
    attn_context *own = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &own), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_context_set_tuning_db(own, db, ""), ATTN_SUCCESS);
    const attn_kv_cache_desc d = {.batch = 1, .kv_heads = 2, .head_dim = 16, .capacity = 64,
                                  .dtype = ATTN_F32, .block_size = block, .storage = storage};
    attn_kv_cache *cache = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create_desc(own, &d, &cache), ATTN_SUCCESS);
    attn_problem p = problem(16, 4, 2, 64, ATTN_F32, 1);
    p.q_len = 1;
    attn_plan_info info;
    CU_ASSERT_EQUAL(attn_decode_prepare(own, cache, &p, &info), ATTN_SUCCESS);
    if (strcmp(info.source, want) != 0)
        printf("\n  block %d storage %d: %s, wanted %s", block, (int)storage, info.source, want);
    CU_ASSERT_STRING_EQUAL(info.source, want);
    /* a tuned plan is the entry's parameters, then the splits launched */
    const char *sp = params ? strstr(params, ",splits=") : NULL;
    if (sp) CU_ASSERT(strncmp(info.params, params, (size_t)(sp - params) + 8) == 0);
    attn_kv_cache_release(cache);
    attn_context_release(own);
}

/* attn_tune_run over a paged cache (blocks of 16) and over an int8 one:
 * each class's entry (its keys within the block) is what attn_decode plans
 * for a cache of that kind, and no other kind's: contiguous, blocks of 32,
 * int8 paged and plain caches keep the heuristic. */
static void test_session_decode_cache_kinds(void)
{
    char db[300];
    attn_context *ctx = session_start(db, sizeof db, "kinds.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    attn_problem shape = problem(16, 4, 2, 64, ATTN_F32, 1);
    shape.q_len = 1;
    attn_tune_run_opts o = {db, &shape, 1, ATTN_TUNE_LEVEL_QUICK, 120, 0, 2,
                            1u << ATTN_FAMILY_VECTOR, 7, 0, 1, ATTN_ENTRY_DECODE,
                            {16, ATTN_KV_AS_DTYPE}};
    attn_tune_run_result r;
    CU_ASSERT_EQUAL(attn_tune_run(ctx, &o, &r), ATTN_SUCCESS);
    CU_ASSERT(r.classes == 1 && r.tuned == 1 && r.failed == 0);
    o.kv.block_size = 0;
    o.kv.storage = ATTN_KV_INT8;
    CU_ASSERT_EQUAL(attn_tune_run(ctx, &o, &r), ATTN_SUCCESS);
    CU_ASSERT(r.classes == 1 && r.to_tune == 1 && r.tuned == 1 && r.failed == 0);
    /* a cache's kind is for decode only */
    o.entry = ATTN_ENTRY_PREFILL;
    CU_ASSERT_EQUAL(attn_tune_run(ctx, &o, &r), ATTN_ERROR_INVALID_ARGUMENT);
    attn_tuning_db d;
    attn_tuning_db_init(&d);
    char err[1024];
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_load(db, &d, NULL, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(d.count, 2);
    const attn_tuning_entry *paged = d.entries[0].cls.kv_block ? &d.entries[0] : &d.entries[1];
    const attn_tuning_entry *int8 = paged == &d.entries[0] ? &d.entries[1] : &d.entries[0];
    CU_ASSERT(paged->cls.decode && paged->cls.kv_block == 16 && !paged->cls.kv_int8);
    CU_ASSERT(int8->cls.decode && int8->cls.kv_block == 0 && int8->cls.kv_int8);
    attn_params pr = attn_params_defaults(ATTN_FAMILY_VECTOR);
    CU_ASSERT_EQUAL(attn_params_parse(paged->params, &pr, err, sizeof err), 0);
    CU_ASSERT(pr.block_keys <= 16);
    printf("\n  paged entry %s, int8 entry %s", paged->params, int8->params);
    expect_source(db, 16, ATTN_KV_AS_DTYPE, "tuned", paged->params);
    expect_source(db, 0, ATTN_KV_AS_DTYPE, "heuristic", NULL);
    expect_source(db, 32, ATTN_KV_AS_DTYPE, "heuristic", NULL);
    expect_source(db, 0, ATTN_KV_INT8, "tuned", int8->params);
    expect_source(db, 16, ATTN_KV_INT8, "heuristic", NULL);
    attn_tuning_db_free(&d);
    remove_dir();
}

static void test_tool_commands(void)
{
    fresh_dir();
    char db[512], out[512], ext[512], bad[512];
    path_in(db, sizeof db, "tuning.json");
    path_in(out, sizeof out, "out.txt");
    path_in(ext, sizeof ext, "exported.json");
    path_in(bad, sizeof bad, "bad.json");
    char env_db[600];
    snprintf(env_db, sizeof env_db, "ATTN_TUNING_DB=%s", db);
    const char *const env[] = {env_db, NULL};

    const char *help[] = {"--help", NULL};
    CU_ASSERT_EQUAL(run_tool(help, env, out, 1), 0);
    char *text = harness_read_file(out, NULL);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "--shapes FILE|LIST"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "hq=32:hkv=8:d=128:s=4096"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "--decode"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "--block-size N"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "--kv-int8"));
    free(text);
    const char *usage[][4] = {{"--budget", "soon", NULL}, {"--shapes", "hq=8:d=64", NULL},
                              {"--shapes", "hq=8:hkv=3:d=64:s=64", NULL}, {"--frobnicate", NULL, NULL},
                              {"--decode", "--show", NULL},
                              /* whole numbers written plainly (strtol took the '+') */
                              {"--shapes", "hq=+2:d=16:s=64", NULL},
                              {"--max-candidates", "+3", NULL},
                              {"--budget", " 5", NULL}, {"--budget", "+5", NULL},
                              {"--decode", "--family", "flash", NULL}, /* no decode kernel */
                              {"--export", "", NULL}, {"--bogus", "--help", NULL},
                              /* an L too long to read was cut to its first digits, 0 */
                              {"--shapes", "hq=2:d=16:s=64:window=000000000000000000000000000000"
                                           "00000005", NULL}};
    for (int i = 0; i < 13; i++) {
        CU_ASSERT_EQUAL(run_tool(usage[i], env, out, 1), 2);
        text = harness_read_file(out, NULL);
        printf("\n  usage error: %.160s", text);
        free(text);
    }
    /* no device: the tuning run and --compare say so naming the function
     * once, as the library's message begins with it */
    const char *no_device[][6] = {{"--device", "no-such-device", "--shapes", "hq=2:d=16:s=64", NULL},
                                  {"--device", "no-such-device", "--compare", "--shapes",
                                   "hq=2:d=16:s=64", NULL}};
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(run_tool(no_device[i], env, out, 1), 1);
        text = harness_read_file(out, NULL);
        printf("\n  no device: %.200s", text);
        CU_ASSERT_PTR_NOT_NULL(strstr(text, "attn-tune: ATTN_ERROR_NO_DEVICE: attn_context_create: "));
        CU_ASSERT_EQUAL(count_lines(text, "attn_context_create"), 1);
        free(text);
    }

    /* a family that cannot run the class (mma: head dims of multiples of
     * 16): the class fails and nothing is stored, so a later run tunes it */
    const char *no_cand[] = {"--family", "mma", "--quick", "--shapes", "hq=2:hkv=1:d=24:s=64", NULL};
    CU_ASSERT_EQUAL(run_tool(no_cand, env, out, 1), 1);
    text = harness_read_file(out, NULL);
    printf("\n  no candidate: %.300s", text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "no candidate of the families searched"));
    free(text);
    CU_ASSERT_EQUAL(access(db, F_OK), -1);

    /* a corrupt database: the error names file and line, nothing is tuned */
    write_file(db, "{\n  \"format\": \"attn-tuning-db\",\n  \"entries\": [\n    {\"device\": 3}\n  ]\n}\n");
    const char *tune[] = {"--shapes", "hq=2:d=16:s=64", "--max-candidates", "1", NULL};
    CU_ASSERT_EQUAL(run_tool(tune, env, out, 1), 1);
    text = harness_read_file(out, NULL);
    printf("\n  corrupt: %s", text);
    char where[600];
    snprintf(where, sizeof where, "%s:4:", db);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "ATTN_ERROR_TUNING_DB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, where));
    free(text);
    /* --show on it fails too (exit 1, as --help says), naming file and line */
    const char *show_corrupt[] = {"--show", NULL};
    CU_ASSERT_EQUAL(run_tool(show_corrupt, env, out, 1), 1);
    text = harness_read_file(out, NULL);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, where));
    free(text);
    /* an import of a corrupt file is refused the same way */
    write_file(bad, "{\"entries\": [\n");
    const char *imp_bad[] = {"--import", bad, NULL};
    remove(db);
    CU_ASSERT_EQUAL(run_tool(imp_bad, env, out, 1), 1);
    text = harness_read_file(out, NULL);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "truncated"));
    free(text);

    /* import, show, export, forget */
    attn_tuning_db two;
    attn_tuning_db_init(&two);
    attn_device_identity a = {"Plat A", "Vendor", "Device A", "1", 8}, bdev = a;
    snprintf(bdev.name, sizeof bdev.name, "Device B");
    attn_problem p = problem(64, 8, 2, 2048, ATTN_F32, 1);
    attn_tuning_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.kernel_hash, sizeof e.kernel_hash, "0123456789abcdef");
    attn_shape_class_of(&p, &e.cls);
    snprintf(e.params, sizeof e.params, "family=vector,rows=8,keys=32,vec=16");
    e.level = ATTN_TUNE_LEVEL_QUICK;
    e.device = a;
    attn_tuning_db_put(&two, &e);
    e.device = bdev;
    attn_tuning_db_put(&two, &e);
    char err[1024];
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(bad, &two, err, sizeof err), ATTN_SUCCESS);
    attn_tuning_db_free(&two);
    const char *imp[] = {"--import", bad, NULL};
    CU_ASSERT_EQUAL(run_tool(imp, env, out, 1), 0);
    text = harness_read_file(out, NULL);
    CU_ASSERT(text && strstr(text, "imported 2 entries") && strstr(text, "; 0 of its entries "
                                                                  "replaced"));
    free(text);
    attn_status st;
    CU_ASSERT_EQUAL(db_count(db, &st), 2);
    /* again: both take the place of the entries they made */
    CU_ASSERT_EQUAL(run_tool(imp, env, out, 1), 0);
    text = harness_read_file(out, NULL);
    CU_ASSERT(text && strstr(text, "; 2 of its entries replaced"));
    free(text);
    CU_ASSERT_EQUAL(db_count(db, &st), 2);
    const char *show[] = {"--show", NULL};
    CU_ASSERT_EQUAL(run_tool(show, env, out, 1), 0);
    text = harness_read_file(out, NULL);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "Device A"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "Device B"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "D64 f32 causal g4 q2048 kv2048"));
    free(text);
    const char *exp[] = {"--export", ext, NULL};
    CU_ASSERT_EQUAL(run_tool(exp, env, out, 1), 0);
    CU_ASSERT_EQUAL(db_count(ext, &st), 2);
    const char *forget[] = {"--forget", "device a", NULL};
    CU_ASSERT_EQUAL(run_tool(forget, env, out, 1), 0);
    CU_ASSERT_EQUAL(db_count(db, &st), 1);
    /* a name that matches nothing leaves the file as it was, said so */
    struct stat before, after;
    CU_ASSERT_EQUAL_FATAL(stat(db, &before), 0);
    const char *forget_none[] = {"--forget", "no such device", NULL};
    CU_ASSERT_EQUAL(run_tool(forget_none, env, out, 1), 0);
    text = harness_read_file(out, NULL);
    CU_ASSERT(text && strstr(text, "forgot nothing") && strstr(text, "unchanged"));
    free(text);
    CU_ASSERT_EQUAL_FATAL(stat(db, &after), 0);
    CU_ASSERT_EQUAL(after.st_ino, before.st_ino); /* not even rewritten */
    CU_ASSERT_EQUAL(db_count(db, &st), 1);
    const char *forget_all[] = {"--forget", "all", NULL};
    CU_ASSERT_EQUAL(run_tool(forget_all, env, out, 1), 0);
    CU_ASSERT_EQUAL(db_count(db, &st), 0);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    /* forgetting in a database that does not exist makes neither it nor its folder */
    char gone[600], env_gone[700];
    path_in(gone, sizeof gone, "no/such/folder/tuning.json");
    snprintf(env_gone, sizeof env_gone, "ATTN_TUNING_DB=%s", gone);
    const char *const env_missing[] = {env_gone, NULL};
    CU_ASSERT_EQUAL(run_tool(forget_all, env_missing, out, 1), 0);
    text = harness_read_file(out, NULL);
    CU_ASSERT(text && strstr(text, "does not exist"));
    free(text);
    path_in(gone, sizeof gone, "no");
    CU_ASSERT_NOT_EQUAL(access(gone, F_OK), 0);
    remove_dir();
}

/* A database a save would refuse (here a top-level member longer than
 * this build keeps) is refused before any class is tuned, and left as it
 * was: it was found after the first class's whole search. */
static void test_unsavable_database_refused_first(void)
{
    fresh_dir();
    char db[512], out[512], env_db[600], text[1700];
    path_in(db, sizeof db, "tuning.json");
    path_in(out, sizeof out, "out.txt");
    snprintf(env_db, sizeof env_db, "ATTN_TUNING_DB=%s", db);
    int n = snprintf(text, sizeof text, "{\"format\": \"attn-tuning-db\", \"version\": 1, "
                     "\"entries\": [], \"comment\": \"");
    memset(text + n, 'x', 1500);
    snprintf(text + n + 1500, sizeof text - (size_t)n - 1500, "\"}\n");
    write_file(db, text);
    const char *const env[] = {env_db, NULL};
    const char *tune[] = {"--shapes", "hq=2:d=16:s=32", "--max-candidates", "1", NULL};
    CU_ASSERT_EQUAL(run_tool(tune, env, out, 1), 1);
    char *said = harness_read_file(out, NULL), *after = harness_read_file(db, NULL);
    CU_ASSERT_PTR_NOT_NULL(said ? strstr(said, "nothing tuned could be stored") : NULL);
    CU_ASSERT_PTR_NOT_NULL(said ? strstr(said, "top level holds more") : NULL);
    CU_ASSERT_PTR_NULL(said ? strstr(said, "GFLOP/s") : "no output"); /* no peak, no search */
    CU_ASSERT(after && strcmp(after, text) == 0);
    free(said);
    free(after);
    remove_dir();
}

/* A database one short of its entry limit: a new class would pass the
 * limit, so the tune is refused before any search and the file is left as
 * it was; a class the file already holds (re-tuned with --force) adds no
 * entry and is tuned. Entries of other drivers fill the file. */
static void test_entry_limit_refused_first(void)
{
    fresh_dir();
    char db[512], out[512], env_db[600], err[1024] = "";
    path_in(db, sizeof db, "tuning.json");
    path_in(out, sizeof out, "out.txt");
    snprintf(env_db, sizeof env_db, "ATTN_TUNING_DB=%s", db);
    const char *const env[] = {env_db, NULL};
    const char *tune[] = {"--shapes", "hq=2:d=16:s=32", "--max-candidates", "1", NULL, NULL};
    CU_ASSERT_EQUAL_FATAL(run_tool(tune, env, out, 1), 0);
    attn_tuning_db full;
    attn_tuning_db_init(&full);
    int missing = 1;
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_load(db, &full, &missing, err, sizeof err),
                          ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(full.count, 1);
    const attn_tuning_entry held = full.entries[0];
    for (int i = 1; i < ATTN_TUNING_DB_MAX_ENTRIES; i++) {
        attn_tuning_entry other = held;
        snprintf(other.device.driver, sizeof other.device.driver, "other %d", i);
        CU_ASSERT_EQUAL_FATAL(attn_tuning_db_append(&full, &other), 0);
    }
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(db, &full, err, sizeof err), ATTN_SUCCESS);
    attn_tuning_db_free(&full);
    char *before = harness_read_file(db, NULL);
    /* a class not held: one entry too many */
    tune[1] = "hq=2:d=16:s=64";
    CU_ASSERT_EQUAL(run_tool(tune, env, out, 1), 1);
    char *said = harness_read_file(out, NULL), *after = harness_read_file(db, NULL);
    CU_ASSERT_PTR_NOT_NULL(said ? strstr(said, "nothing tuned could be stored") : NULL);
    CU_ASSERT_PTR_NOT_NULL(said ? strstr(said, "16385 entries, more than the 16384") : NULL);
    CU_ASSERT_PTR_NULL(said ? strstr(said, "GFLOP/s") : "no output"); /* no peak, no search */
    CU_ASSERT(before && after && strcmp(after, before) == 0);
    free(said);
    free(after);
    /* the held class again: it replaces its own entry */
    tune[1] = "hq=2:d=16:s=32";
    tune[4] = "--force";
    CU_ASSERT_EQUAL(run_tool(tune, env, out, 1), 0);
    attn_status st = ATTN_SUCCESS;
    CU_ASSERT_EQUAL(db_count(db, &st), (size_t)ATTN_TUNING_DB_MAX_ENTRIES);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    after = harness_read_file(db, NULL);
    CU_ASSERT(before && after && strcmp(after, before) != 0); /* re-tuned and written */
    free(before);
    free(after);
    remove_dir();
}

/* attn-tune --decode --compare: after the smallest tuning of a small
 * decode class (one candidate, the heuristic's), its row shows the tuned
 * entry timed against the heuristic through attn_decode (in K/V GB/s), with the splits
 * it launches, and the two as the same parameters (the automatic splits
 * are compared as planned, not as launched). Then the same over an int8
 * cache of blocks of 16 (--kv-int8 --block-size 16), a class of its own. */
static void test_compare_decode(void)
{
    fresh_dir();
    char db[512], out[512], env_db[600];
    path_in(db, sizeof db, "tuning.json");
    path_in(out, sizeof out, "out.txt");
    snprintf(env_db, sizeof env_db, "ATTN_TUNING_DB=%s", db);
    const char *const env[] = {env_db, NULL};
    const char *shape = "b=1:hq=2:hkv=1:d=16:sq=1:skv=64";
    const char *tune[] = {"--decode", "--shapes", shape, "--max-candidates", "1", "--quiet", NULL};
    CU_ASSERT_EQUAL_FATAL(run_tool(tune, env, out, 1), 0);
    const char *cmp[] = {"--decode", "--compare", "--shapes", shape, NULL};
    CU_ASSERT_EQUAL(run_tool(cmp, env, out, 1), 0);
    char *text = harness_read_file(out, NULL);
    printf("\n  %s", text ? text : "(no output)");
    CU_ASSERT_PTR_NOT_NULL(text ? strstr(text, "--decode --compare") : NULL);
    /* memory-bound: K/V GB/s against the copy bandwidth, not GFLOP/s */
    CU_ASSERT_PTR_NOT_NULL(text ? strstr(text, "KV GB/s") : NULL);
    CU_ASSERT_PTR_NOT_NULL(text ? strstr(text, "%copy") : NULL);
    const char *row = text ? strstr(text, "Sq=1 Skv=64 f32 causal") : NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(row);
    CU_ASSERT_PTR_NOT_NULL(strstr(row, " tuned "));
    CU_ASSERT_PTR_NOT_NULL(strstr(row, ",splits="));
    CU_ASSERT_PTR_NOT_NULL(strstr(row, "(same parameters)"));
    free(text);

    /* --block-size and --kv-int8: refused without --decode or with a block
     * size that is none */
    const char *usage[][4] = {{"--kv-int8", NULL}, {"--decode", "--block-size", "24", NULL},
                              {"--block-size", "16", NULL}, {"--seed", "-5", NULL},
                              {"--seed", " 5", NULL}, {"--seed", "+5", NULL},
                              {"--decode", "--shapes", "hq=4:hkv=2:d=16:sq=65:skv=128", NULL},
                              {"--decode", "--shapes", "hq=4:hkv=2:d=16:sq=16:skv=8", NULL},
                              /* what the library refuses, refused before the peak's timing */
                              {"--shapes", "hq=8:d=64:s=2000000000", NULL},
                              {"--shapes", "b=100000:hq=64:d=64:s=4096", NULL}};
    const char *why[] = {"--kv-int8 goes with --decode", "--block-size wants 0 (contiguous)",
                         "--block-size goes with --decode",
                         "--seed wants a non-negative integer", /* not 2^64 - 5 */
                         "--seed wants a non-negative integer", /* strtoull skipped the space */
                         "--seed wants a non-negative integer",
                         "sq = 65 exceeds ATTN_DECODE_MAX_Q_LEN", /* found before any device */
                         "sq = 16 exceeds skv = 8",
                         "S=2000000000 f32 causal: p->q_len = 2000000000 exceeds 2^30",
                         "batch * q_heads * q_len = 26214400000 exceeds 2^31 - 1"};
    for (int i = 0; i < 10; i++) {
        CU_ASSERT_EQUAL(run_tool(usage[i], env, out, 1), 2);
        text = harness_read_file(out, NULL);
        CU_ASSERT_PTR_NOT_NULL(text ? strstr(text, why[i]) : NULL);
        free(text);
    }
    /* over an int8 cache of blocks of 16 the contiguous entry does not
     * serve; once that class is tuned, --show lists it and --compare times
     * it as tuned, its keys within the block */
    const char *cmp8[] = {"--decode", "--block-size", "16", "--kv-int8", "--compare", "--shapes",
                          shape, NULL};
    CU_ASSERT_EQUAL(run_tool(cmp8, env, out, 1), 0);
    text = harness_read_file(out, NULL);
    row = text ? strstr(text, "Sq=1 Skv=64 f32 causal int8 block16") : NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(row);
    CU_ASSERT_PTR_NOT_NULL(strstr(row, " heuristic "));
    free(text);
    const char *tune8[] = {"--decode", "--block-size", "16", "--kv-int8", "--shapes", shape,
                           "--max-candidates", "1", "--quiet", NULL};
    CU_ASSERT_EQUAL_FATAL(run_tool(tune8, env, out, 1), 0);
    const char *show[] = {"--show", NULL};
    CU_ASSERT_EQUAL(run_tool(show, env, out, 1), 0);
    text = harness_read_file(out, NULL);
    CU_ASSERT_PTR_NOT_NULL(text ? strstr(text, "D16 f32 causal g2 q1 kv64 decode int8 block16")
                                : NULL);
    free(text);
    CU_ASSERT_EQUAL(run_tool(cmp8, env, out, 1), 0);
    text = harness_read_file(out, NULL);
    printf("\n  %s", text ? text : "(no output)");
    row = text ? strstr(text, "Sq=1 Skv=64 f32 causal int8 block16") : NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(row);
    CU_ASSERT_PTR_NOT_NULL(strstr(row, " tuned "));
    CU_ASSERT_PTR_NOT_NULL(strstr(row, "keys=16"));
    free(text);
    remove_dir();
}

/* Local search steps to the searched values just below and above each
 * tunable: for a value on the list its neighbours there, for one off it (7
 * vector rows, between 6 and 8; 9 between 8 and 10) the two that bracket
 * it. */
static void test_neighbours_bracket(void)
{
    const attn_device_limits dev = {CL_DEVICE_TYPE_CPU, 65536, 4096, 2, 0, 8};
    const attn_problem p = problem(64, 8, 2, 256, ATTN_F32, 1);
    const struct {
        int rows, below, above;
    } cases[] = {{5, 4, 6}, {8, 6, 10}, {1, 0, 2}, {16, 12, 0}, {3, 2, 4}, {7, 6, 8}, {9, 8, 10}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const attn_params c = vector_params(cases[i].rows, 32, 8);
        attn_params nb[16];
        const int nn = attn_search_neighbours(&dev, ATTN_ENTRY_PREFILL, &p, NULL, &c, nb, 16);
        int below = 0, above = 0, other = 0;
        for (int k = 0; k < nn; k++) {
            attn_params same = nb[k];
            same.block_rows = c.block_rows;
            if (!attn_params_equal(&same, &c)) continue; /* another tunable moved */
            if (nb[k].block_rows == cases[i].below) below++;
            else if (nb[k].block_rows == cases[i].above) above++;
            else other++;
        }
        printf("\n  rows=%d: %d neighbours, below %d above %d other %d", cases[i].rows, nn, below,
               above, other);
        CU_ASSERT_EQUAL(below, cases[i].below > 0);
        CU_ASSERT_EQUAL(above, cases[i].above > 0);
        CU_ASSERT_EQUAL(other, 0);
        /* keys 32 and vec 8 are on their lists: their neighbours too */
        int keys16 = 0, keys64 = 0, vec4 = 0, vec16 = 0;
        for (int k = 0; k < nn; k++) {
            keys16 += nb[k].block_keys == 16;
            keys64 += nb[k].block_keys == 64;
            vec4 += nb[k].vec_width == 4;
            vec16 += nb[k].vec_width == 16;
        }
        CU_ASSERT(keys16 == 1 && keys64 == 1 && vec4 == 1 && vec16 == 1);
    }
}

/* The candidates a search measured (the first 8) and the best after each. */
typedef struct seen_with_best {
    attn_params cand[8], best[8];
    int n;
} seen_with_best;

static void seen_candidate(void *arg, int done, int planned, double elapsed_s, double budget_s,
                           const attn_params *cand, const attn_candidate_result *r,
                           const attn_params *best, double best_gflops)
{
    (void)done, (void)planned, (void)elapsed_s, (void)budget_s, (void)r, (void)best_gflops;
    seen_with_best *seen = arg;
    if (!cand || seen->n == 8) return;
    seen->cand[seen->n] = *cand;
    if (best) seen->best[seen->n] = *best;
    seen->n++;
}

/* A small prefill class, searched quickly over tiled, vector and flash for
 * at most max_candidates (plus the seeds when max_candidates is 0): the
 * seeds it should start with in want[] (the default, then each family's
 * start that differs from it, in *nwant), what it measured in *seen. */
static void search_small_class(int max_candidates, attn_params want[4], int *nwant,
                               seen_with_best *seen, attn_device_limits *dev,
                               attn_problem *p_out)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    const attn_problem p = problem(32, 4, 2, 48, ATTN_F32, 1);
    *p_out = p;
    attn_tune_bench *b = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_tune_bench_create(ctx, ATTN_ENTRY_PREFILL, &p, NULL, &b), ATTN_SUCCESS);
    attn_tune_bench_limits(b, dev);
    const attn_params dflt = attn_tune_bench_default(b);
    want[0] = dflt;
    *nwant = 1;
    const int fams[] = {ATTN_FAMILY_TILED, ATTN_FAMILY_VECTOR, ATTN_FAMILY_FLASH};
    for (int k = 0; k < 3; k++) {
        const attn_params start = attn_plan_family_start(ATTN_ENTRY_PREFILL, dev, &p, fams[k]);
        if (!attn_params_equal(&start, &dflt)) want[(*nwant)++] = start;
    }
    memset(seen, 0, sizeof *seen);
    /* the default's family too (mma on a GPU that has it): local search
     * steps only within the searched families */
    attn_search_opts so = quick_search(60, *nwant + max_candidates, 11,
                                       1u << ATTN_FAMILY_TILED | 1u << ATTN_FAMILY_VECTOR |
                                           1u << ATTN_FAMILY_FLASH | 1u << dflt.family);
    so.progress = seen_candidate;
    so.progress_arg = seen;
    attn_search_result res;
    CU_ASSERT_EQUAL(attn_tune_search(b, &so, &res), ATTN_SUCCESS);
    CU_ASSERT(!res.exhaustive && res.tested <= *nwant + max_candidates);
    CU_ASSERT(attn_params_equal(&res.dflt, &dflt));
    attn_tune_bench_free(b);
}

/* The search's first candidates: the default, then each searched family's
 * own start as a plan forced to that family begins (attn_plan_family_start),
 * so that flash, which no heuristic picks, and tiled, which a GPU with
 * tensor cores no longer starts from, are measured from a good start, not
 * only at random. The order is built from this device's own starts: on a
 * CPU the default is vector's start, on a GPU with tensor cores mma's. */
static void test_search_seeds_each_family(void)
{
    attn_params want[4];
    int nwant;
    seen_with_best seen;
    attn_device_limits dev;
    attn_problem p;
    search_small_class(0, want, &nwant, &seen, &dev, &p);
    CU_ASSERT_EQUAL_FATAL(seen.n, nwant);
    for (int k = 0; k < nwant; k++) {
        char w[200], got[200];
        attn_params_format(&want[k], w, sizeof w);
        attn_params_format(&seen.cand[k], got, sizeof got);
        printf("\n  candidate %d: %s (wanted %s)", k + 1, got, w);
        CU_ASSERT(attn_params_equal(&seen.cand[k], &want[k]));
    }
    /* on a CPU that is vector's start first: all three families' starts */
    if (dev.type & CL_DEVICE_TYPE_CPU) CU_ASSERT_EQUAL(nwant, 3);
}

/* After the seeds, local search: the first candidate past them is a step
 * from the best so far, not a random pick (drawn up front, random picks
 * took a quick tune's few seconds a class from the steps around the
 * default, or were skipped in families the starts showed slow). */
static void test_search_steps_before_random(void)
{
    attn_params want[4];
    int seeds;
    seen_with_best seen;
    attn_device_limits dev;
    attn_problem p;
    search_small_class(1, want, &seeds, &seen, &dev, &p);
    CU_ASSERT_EQUAL_FATAL(seen.n, seeds + 1);
    attn_params nb[16];
    const int nn = attn_search_neighbours(&dev, ATTN_ENTRY_PREFILL, &p, NULL, &seen.best[seeds - 1],
                                          nb, 16);
    int step = 0;
    for (int k = 0; k < nn; k++) step |= attn_params_equal(&nb[k], &seen.cand[seeds]);
    char best[200], got[200];
    attn_params_format(&seen.best[seeds - 1], best, sizeof best);
    attn_params_format(&seen.cand[seeds], got, sizeof got);
    printf("\n  after %d seeds: %s (best so far %s, %d steps from it)", seeds, got, best, nn);
    CU_ASSERT(step);
}

/* A search limited to one family (attn-tune --family) measures the
 * default whatever its family, and nothing else outside that family: the
 * default's steps are not added (they were, and --family tiled on a CPU
 * became a search of vector settings). */
static void test_search_keeps_to_family(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    const attn_problem p = problem(32, 4, 2, 48, ATTN_F32, 1);
    attn_tune_bench *b = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_tune_bench_create(ctx, ATTN_ENTRY_PREFILL, &p, NULL, &b), ATTN_SUCCESS);
    const attn_params dflt = attn_tune_bench_default(b);
    const int only = dflt.family == ATTN_FAMILY_TILED ? ATTN_FAMILY_VECTOR : ATTN_FAMILY_TILED;
    seen_with_best seen;
    memset(&seen, 0, sizeof seen);
    attn_search_opts so = quick_search(60, 8, 11, 1u << only);
    so.progress = seen_candidate;
    so.progress_arg = &seen;
    attn_search_result res;
    CU_ASSERT_EQUAL(attn_tune_search(b, &so, &res), ATTN_SUCCESS);
    int outside = 0;
    for (int k = 0; k < seen.n; k++) {
        char text[200];
        attn_params_format(&seen.cand[k], text, sizeof text);
        printf("\n  %d: %s", k + 1, text);
        outside += seen.cand[k].family != only && !attn_params_equal(&seen.cand[k], &dflt);
    }
    CU_ASSERT(seen.n >= 2);
    CU_ASSERT_EQUAL(outside, 0);
    attn_tune_bench_free(b);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_tool_commands),
    HARNESS_TEST(test_wrong_candidates_rejected),
    HARNESS_TEST(test_search_keeps_fastest),
    HARNESS_TEST(test_decode_split_verified),
    HARNESS_TEST(test_correct_candidates_pass),
    HARNESS_TEST(test_resume_after_kill),
    HARNESS_TEST(test_budget_and_summary),
    HARNESS_TEST(test_timed_kernel_verified),
    HARNESS_TEST(test_time_spread),
    HARNESS_TEST(test_session),
    HARNESS_TEST(test_decode_space),
    HARNESS_TEST(test_neighbours_bracket),
    HARNESS_TEST(test_search_seeds_each_family),
    HARNESS_TEST(test_search_steps_before_random),
    HARNESS_TEST(test_search_keeps_to_family),
    HARNESS_TEST(test_session_decode),
    HARNESS_TEST(test_unsavable_database_refused_first),
    HARNESS_TEST(test_entry_limit_refused_first),
    HARNESS_TEST(test_compare_decode),
    HARNESS_TEST(test_decode_cache_kinds_space),
    HARNESS_TEST(test_session_decode_cache_kinds),
    HARNESS_END
};

static void register_tests(void) { harness_add_suite("tune", tests); }

int main(void) { return harness_run("test_tune", register_tests); }
