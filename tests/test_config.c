/* test_config.c -- the configuration API: attn_context_set_params
 * (validation, the plan it gives, clearing, correct results under each
 * family), attn_context_set_tuning_db (a hand-written entry for a forward
 * and for a decode, cached until the next change), the log callback and
 * its level, and the environment read once, when a context is created. */
#define _GNU_SOURCE /* setenv, strdup under C11 */
#include "harness.h"
#include "core/context.h"
#include "core/errors.h"
#include "tuning/tuning.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* B = 1, causal f32, q_len = kv_len = s */
static attn_problem problem(int D, int hq, int hkv, int s)
{
    const attn_problem p = {1, hq, hkv, D, s, s, ATTN_F32, 1, 0.0f};
    return p;
}

/* A context of its own (configuration changes stay in the test). */
static attn_context *own_context(void)
{
    attn_context *ctx = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &ctx), ATTN_SUCCESS);
    return ctx;
}

/* ---- attn_context_set_params ---- */

static void test_set_params_errors(void)
{
    CU_ASSERT_EQUAL(attn_context_set_params(NULL, "rows=4"), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_STRING_EQUAL(attn_last_error(NULL), "attn_context_set_params: ctx is NULL");
    CU_ASSERT_EQUAL(attn_context_set_tuning_db(NULL, NULL, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_STRING_EQUAL(attn_last_error(NULL), "attn_context_set_tuning_db: ctx is NULL");
    attn_context *ctx = own_context();
    const struct { const char *text, *says; } bad[] = {
        {"vec=3", "vec=3"},                         /* not a power of two */
        {"family=vector,rows=17", "rows=17"},       /* beyond the vector family's 16 */
        {"family=tiled,wg=2048", "wg=2048"},        /* beyond any work-group */
        {"splits=-1", "splits=-1"},                 /* below the range */
        {"family=gpu", "family=gpu"},               /* no such family */
        {"block_rows=8", "\"block_rows\""},         /* the field's name, not the tunable's */
        {"rows=8;keys=16", "rows=8;keys=16"},       /* not an integer */
        {"rows=8,keys", "\"keys\""}};               /* not name=value */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_EQUAL(attn_context_set_params(ctx, bad[i].text), ATTN_ERROR_INVALID_ARGUMENT);
        const char *msg = attn_last_error(ctx);
        printf("\n  %s: %s", bad[i].text, msg);
        CU_ASSERT(strncmp(msg, "attn_context_set_params: ", 25) == 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, bad[i].says));
    }
    /* legal on its own: accepted (the problem decides later) */
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, "family=vector,keys=8,vec=16"), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(attn_last_error(ctx), "");
    attn_problem p = problem(16, 2, 2, 40);
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(ctx), "keys=8 is not a multiple of vec=16"));
    attn_context_release(ctx);
}

static void test_override_plan(void)
{
    attn_context *ctx = own_context();
    attn_problem p = problem(32, 4, 2, 100);
    attn_plan_info h, o, c;
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &h), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(h.source, "heuristic");
    /* the other family than the heuristic's, named in full */
    const int tiled = strcmp(h.family, "tiled") == 0;
    const char *want = tiled ? "family=vector,rows=4,keys=16,vec=8"
                             : "family=tiled,rows=4,keys=16,wg=32,local_kv=0";
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, want), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &o), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(o.source, "override");
    CU_ASSERT_STRING_EQUAL(o.family, tiled ? "vector" : "tiled");
    CU_ASSERT_STRING_EQUAL(o.params, want);
    /* a partial override keeps the planned values of the rest */
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, "keys=64"), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &o), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(o.source, "override");
    CU_ASSERT_STRING_EQUAL(o.family, h.family);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.params, "keys=64"));
    /* "" and NULL clear it */
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, ""), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &c), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c.source, "heuristic");
    CU_ASSERT_STRING_EQUAL(c.params, h.params);
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, "rows=2"), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &c), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c.params, h.params);
    /* a refused text leaves the override in force */
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, want), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, "rows=0"), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &o), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(o.params, want);
    attn_context_release(ctx);
}

static void test_override_results(void)
{
    attn_context *ctx = own_context();
    const char *fams[] = {"family=tiled,rows=8,keys=16,wg=64,local_kv=1",
                          "family=tiled,rows=4,keys=32,wg=32,local_kv=0",
                          "family=vector,rows=6,keys=32,vec=8",
                          "family=vector,rows=1,keys=16,vec=4"};
    attn_problem p = problem(24, 4, 2, 37); /* lengths that are no tile's multiple */
    for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++) {
        CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, fams[i]), ATTN_SUCCESS);
        attn_plan_info info;
        CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &info), ATTN_SUCCESS);
        CU_ASSERT_STRING_EQUAL(info.params, fams[i]);
        const int r = harness_forward_check(ctx, &p, 100 + i);
        CU_ASSERT_EQUAL(r, 0);
        if (r) printf("\n  %s: wrong (%d)", fams[i], r);
    }
    attn_context_release(ctx);
}

/* ---- attn_context_set_tuning_db ---- */

/* An entry for this device and the current sources of its entry point. */
static attn_tuning_entry db_entry(attn_context *ctx, const attn_problem *p, int decode,
                                  int family, const char *params)
{
    attn_tuning_entry e;
    memset(&e, 0, sizeof e);
    attn_device_identity_of(ctx, &e.device);
    CU_ASSERT_EQUAL(attn_entry_source_hash(ctx, decode ? ATTN_ENTRY_DECODE : ATTN_ENTRY_PREFILL,
                                           family, e.kernel_hash),
                    ATTN_SUCCESS);
    attn_shape_class_of(p, &e.cls);
    e.cls.decode = decode;
    snprintf(e.params, sizeof e.params, "%s", params);
    e.level = ATTN_TUNE_LEVEL_QUICK;
    return e;
}

static void test_set_tuning_db(void)
{
    char dir[256], path[512], err[1024];
    harness_temp_dir(dir, sizeof dir, "config");
    snprintf(path, sizeof path, "%s/tuning.json", dir);
    attn_context *ctx = own_context();
    attn_problem p = problem(16, 4, 2, 64);
    attn_problem d = problem(16, 4, 2, 256); /* the decode class: kv = the cache's capacity */
    d.q_len = 1;
    const char *fwd = "family=tiled,rows=2,keys=16,wg=32,local_kv=0";
    const char *dec = "family=vector,rows=2,keys=16,vec=4";
    attn_tuning_entry es[2] = {db_entry(ctx, &p, 0, ATTN_FAMILY_TILED, fwd),
                               db_entry(ctx, &d, 1, ATTN_FAMILY_VECTOR, dec)};
    attn_tuning_db db = {es, 2, 2};
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(path, &db, err, sizeof err), ATTN_SUCCESS);
    char *text = harness_read_file(path, NULL);
    CU_ASSERT_TRUE(text && strstr(text, "\"decode\":"));
    free(text);

    attn_plan_info info;
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "heuristic");
    CU_ASSERT_EQUAL_FATAL(attn_context_set_tuning_db(ctx, path, ""), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "tuned");
    CU_ASSERT_STRING_EQUAL(info.params, fwd);
    CU_ASSERT_EQUAL(harness_forward_check(ctx, &p, 7), 0);

    attn_kv_cache *cache = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, 1, 2, 16, 256, ATTN_F32, &cache), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_decode_prepare(ctx, cache, &d, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "tuned");
    CU_ASSERT(strncmp(info.params, dec, strlen(dec)) == 0 && info.params[strlen(dec)] == ',');
    printf("\n  decode plan: %s (%s)", info.params, info.source);

    /* cached: a changed file is not read again until the next set */
    attn_tuning_db none = {NULL, 0, 0};
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(path, &none, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "tuned");
    CU_ASSERT_EQUAL_FATAL(attn_context_set_tuning_db(ctx, path, ""), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(ctx, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "heuristic");
    CU_ASSERT_EQUAL(attn_decode_prepare(ctx, cache, &d, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "heuristic");
    attn_kv_cache_release(cache);
    attn_context_release(ctx);
    harness_remove_tree(dir);
}

/* ---- the log callback ---- */

typedef struct {
    int info, warn, debug;
    char last[512];
} log_seen;

static void on_log(attn_log_level level, const char *message, void *user)
{
    log_seen *s = user;
    if (level == ATTN_LOG_INFO && strstr(message, "applied")) {
        s->info++;
        snprintf(s->last, sizeof s->last, "%s", message);
    }
    if (level == ATTN_LOG_WARN) s->warn++;
    if (level == ATTN_LOG_DEBUG) s->debug++;
}

static void test_log_callback(void)
{
    attn_context *ctx = own_context();
    attn_problem p = problem(16, 2, 2, 33);
    log_seen seen = {0};
    attn_set_log_callback(on_log, &seen, ATTN_LOG_INFO);
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, "keys=16"), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(seen.info, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(seen.last, "attn_context_set_params applied"));
    CU_ASSERT_PTR_NOT_NULL(strstr(seen.last, "keys=16"));
    CU_ASSERT_EQUAL(seen.debug, 0); /* above the level asked for */
    /* the plan is cached: the override is announced once per class */
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(seen.info, 1);
    /* warnings only: nothing */
    attn_set_log_callback(on_log, &seen, ATTN_LOG_WARN);
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, "keys=32"), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(seen.info, 1);
    /* debug: the failure's own line too */
    attn_set_log_callback(on_log, &seen, ATTN_LOG_DEBUG);
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, "rows=99"), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(seen.debug >= 1);
    /* NULL: stderr again, the callback never called */
    attn_set_log_callback(NULL, NULL, ATTN_LOG_DEBUG);
    const int before = seen.info + seen.debug;
    CU_ASSERT_EQUAL(attn_context_set_params(ctx, "keys=64"), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(seen.info + seen.debug, before);
    attn_context_release(ctx);
}

/* ---- the environment: read when a context is created ---- */

static void test_environment_at_creation(void)
{
    const char *keep = getenv("ATTN_PARAMS");
    char *saved = keep ? strdup(keep) : NULL;
    const char *want = "family=vector,rows=2,keys=16,vec=4";
    setenv("ATTN_PARAMS", want, 1);
    setenv("ATTN_CHECK", "1", 1);
    attn_context *ctx = own_context();
    unsetenv("ATTN_CHECK");
    setenv("ATTN_PARAMS", "family=tiled", 1); /* too late for ctx */
    attn_problem p = problem(16, 2, 1, 50);
    attn_plan_info info;
    CU_ASSERT_EQUAL(attn_prepare(ctx, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "override");
    CU_ASSERT_STRING_EQUAL(info.params, want);
    CU_ASSERT_EQUAL(ctx->check, 1);
    CU_ASSERT_EQUAL(harness_forward_check(ctx, &p, 3), 0); /* checked against the reference too */
    /* a bad one is named as ATTN_PARAMS when a call plans */
    setenv("ATTN_PARAMS", "family=vector,keys=8,vec=16", 1);
    attn_context *bad = own_context();
    CU_ASSERT_EQUAL(attn_prepare(bad, &p, NULL), ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(bad), "ATTN_PARAMS=\"family=vector,keys=8"));
    /* the API replaces the environment's value */
    CU_ASSERT_EQUAL(attn_context_set_params(bad, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(bad, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_NOT_EQUAL(info.source, "override");
    if (saved) setenv("ATTN_PARAMS", saved, 1);
    else unsetenv("ATTN_PARAMS");
    free(saved);
    attn_context_release(bad);
    attn_context_release(ctx);
}

static void register_tests(void)
{
    static const harness_test tests[] = {
        HARNESS_TEST(test_set_params_errors), HARNESS_TEST(test_override_plan),
        HARNESS_TEST(test_override_results),  HARNESS_TEST(test_set_tuning_db),
        HARNESS_TEST(test_log_callback),      HARNESS_TEST(test_environment_at_creation),
        HARNESS_END};
    harness_add_suite("config", tests);
}

int main(void) { return harness_run("test_config", register_tests); }
