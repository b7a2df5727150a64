/* test_bench.c -- attn-bench's --help cannot drift from its parser:
 * every option of the table the parser is made from is accepted by the
 * built tool and heads exactly one line of its --help, every option the
 * help lists is one the parser knows, and nothing is "not yet supported".
 * Also the list options' syntax (--dtype, --splits). */
#define _GNU_SOURCE
#include "harness.h"
#include "bench_options.h"
#include "measure/sampling.h"

#include <cjson/cJSON.h>
#include <math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs attn-bench with args (NULL-terminated), stdout into out and stderr
 * into err (malloc'd, NUL-terminated; either may be NULL); returns the exit
 * status, -1 if none. */
static int run_bench(const char *const *args, char **out, char **err)
{
    const char *bin = getenv("ATTN_BENCH_BIN");
    CU_ASSERT_PTR_NOT_NULL_FATAL(bin);
    char dir[256], file[300], efile[300];
    harness_temp_dir(dir, sizeof dir, "bench");
    snprintf(file, sizeof file, "%s/out.txt", dir);
    snprintf(efile, sizeof efile, "%s/err.txt", dir);
    const int rc = harness_run_program_split(bin, args, file, efile);
    if (out) *out = harness_read_file(file, NULL);
    if (err) *err = harness_read_file(efile, NULL);
    harness_remove_tree(dir);
    return rc;
}

/* The option names heading the lines of help: a line "  --a N, --b  text"
 * heads --a and --b (the names end at the first two spaces). Returns the
 * count; names are "a", "b" in names[i] (at most max). */
static int help_headings(const char *help, char names[][64], int max)
{
    int n = 0;
    for (const char *line = help; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > 4 && strncmp(line, "  --", 4) == 0) {
            char head[256];
            snprintf(head, sizeof head, "%.*s", (int)len - 2, line + 2);
            char *gap = strstr(head, "  ");
            if (gap) *gap = 0;
            char *save = NULL;
            for (char *t = strtok_r(head, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                while (*t == ' ') t++;
                if (strncmp(t, "--", 2) != 0 || n == max) continue;
                snprintf(names[n], 64, "%s", t + 2);
                char *sp = strchr(names[n], ' ');
                if (sp) *sp = 0;
                n++;
            }
        }
        line = end ? end + 1 : NULL;
    }
    return n;
}

static int is_parser_option(const char *name)
{
    for (int i = 0; i < bench_option_count; i++)
        if (strcmp(bench_option_specs[i].name, name) == 0) return 1;
    return 0;
}

static void test_help_matches_parser(void)
{
    const char *args[] = {"--help", NULL};
    char *help = NULL;
    CU_ASSERT_EQUAL(run_bench(args, &help, NULL), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(help);
    CU_ASSERT_PTR_NULL(strstr(help, "not yet supported"));
    char names[64][64];
    int n = help_headings(help, names, 64);
    CU_ASSERT(n > 0);
    /* every option the help lists is one the parser knows */
    for (int i = 0; i < n; i++) {
        if (!is_parser_option(names[i])) printf("\n  --help lists --%s, which the parser lacks", names[i]);
        CU_ASSERT(is_parser_option(names[i]));
    }
    /* every option the parser knows is listed exactly once */
    for (int i = 0; i < bench_option_count; i++) {
        int seen = 0;
        for (int j = 0; j < n; j++) seen += strcmp(names[j], bench_option_specs[i].name) == 0;
        if (seen != 1) printf("\n  --%s heads %d lines of --help", bench_option_specs[i].name, seen);
        CU_ASSERT_EQUAL(seen, 1);
    }
    free(help);
}

/* The built tool accepts each option of the table (given before --help,
 * which stops before any device is opened) without a word on stderr, and
 * refuses an unknown one, even before --help. */
static void test_parser_accepts_table(void)
{
    for (int i = 0; i < bench_option_count; i++) {
        const bench_option_spec *s = &bench_option_specs[i];
        char opt[64], arg[64] = "1";
        snprintf(opt, sizeof opt, "--%s", s->name);
        if (strcmp(s->name, "dtype") == 0) snprintf(arg, sizeof arg, "f32,f16");
        else if (strcmp(s->name, "splits") == 0) snprintf(arg, sizeof arg, "auto,2");
        else if (s->arg && strchr(s->arg, '|')) snprintf(arg, sizeof arg, "%.*s",
                                                          (int)strcspn(s->arg, "|"), s->arg);
        const char *args[] = {opt, s->arg ? arg : "--help", "--help", NULL};
        char *err = NULL;
        int rc = run_bench(args, NULL, &err);
        if (rc != 0 || (err && *err))
            printf("\n  attn-bench %s %s --help: exit %d, %s", opt, s->arg ? arg : "", rc, err);
        CU_ASSERT_EQUAL(rc, 0);
        CU_ASSERT(err && !*err);
        free(err);
    }
    const char *unknown[] = {"--frobnicate", "--help", NULL};
    CU_ASSERT_EQUAL(run_bench(unknown, NULL, NULL), 2);
    const char *twice[] = {"--dtype", "f16,f16", NULL};
    CU_ASSERT_EQUAL(run_bench(twice, NULL, NULL), 2);
    const char *materialized[] = {"--dtype", "f32,f16", "--compare-materialized", NULL};
    CU_ASSERT_EQUAL(run_bench(materialized, NULL, NULL), 2);
}

static void test_list_syntax(void)
{
    attn_dtype t[BENCH_MAX_DTYPES];
    CU_ASSERT_EQUAL(bench_parse_dtypes("f32", t, BENCH_MAX_DTYPES), 1);
    CU_ASSERT_EQUAL(bench_parse_dtypes("f32,f16,bf16", t, BENCH_MAX_DTYPES), 3);
    CU_ASSERT(t[0] == ATTN_F32 && t[1] == ATTN_F16 && t[2] == ATTN_BF16);
    CU_ASSERT_EQUAL(bench_parse_dtypes("f16,f32", t, BENCH_MAX_DTYPES), 2);
    CU_ASSERT(t[0] == ATTN_F16 && t[1] == ATTN_F32);
    const char *bad_t[] = {"", ",", "f64", "f32,f32", "f32,,x", "F32"};
    for (int i = 0; i < 6; i++) CU_ASSERT_EQUAL(bench_parse_dtypes(bad_t[i], t, BENCH_MAX_DTYPES), -1);
    int s[BENCH_MAX_SPLITS];
    CU_ASSERT_EQUAL(bench_parse_splits("auto,1,2,8", s, BENCH_MAX_SPLITS), 4);
    CU_ASSERT(s[0] == 0 && s[1] == 1 && s[3] == 8);
    const char *bad_s[] = {"", "0", "257", "two", "auto,x", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"};
    for (int i = 0; i < 6; i++) CU_ASSERT_EQUAL(bench_parse_splits(bad_s[i], s, BENCH_MAX_SPLITS), -1);
}

static void test_spread(void)
{
    double t[] = {5, 1, 4, 2, 3}; /* sorted 1..5 */
    attn_time_spread s = attn_time_spread_of(t, 5);
    CU_ASSERT(s.min_ms == 1 && s.q1_ms == 2 && s.median_ms == 3 && s.q3_ms == 4 && s.max_ms == 5);
    CU_ASSERT_DOUBLE_EQUAL(attn_time_spread_iqr(&s), 2.0 / 3.0, 1e-12);
    double u[] = {4, 1, 3, 2}; /* even count: the median between the middle two */
    s = attn_time_spread_of(u, 4);
    CU_ASSERT_DOUBLE_EQUAL(s.median_ms, 2.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.q1_ms, 1.75, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.q3_ms, 3.25, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(attn_relative_change(100, 90), 0.1, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(attn_relative_change(90, 100), 0.1, 1e-12);
    CU_ASSERT_EQUAL(attn_relative_change(0, 100), 0);
}

static double number(const cJSON *o, const char *name)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsNumber(f)) printf("\n  \"%s\" is not a number", name);
    CU_ASSERT(cJSON_IsNumber(f));
    return cJSON_IsNumber(f) ? f->valuedouble : NAN;
}

/* A run's JSON: every row carries its spread in order and its ratio to the
 * first type's median; the peak before and after, and a warning exactly
 * when the run was noisy by the rule. */
static void check_run_json(const char *const *args, int want_rows, int want_types)
{
    char *out = NULL, *err = NULL;
    int rc = run_bench(args, &out, &err);
    if (rc != 0) printf("\n  exit %d: %s", rc, err);
    CU_ASSERT_EQUAL(rc, 0);
    cJSON *root = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    const double before = number(root, "peak_gflops"), after = number(root, "peak_gflops_end");
    const double change = number(root, "peak_change");
    CU_ASSERT(before > 0 && after > 0);
    CU_ASSERT_DOUBLE_EQUAL(change, attn_relative_change(before, after), 1e-9);
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(root, "results");
    const cJSON *warnings = cJSON_GetObjectItemCaseSensitive(root, "warnings");
    CU_ASSERT_FATAL(cJSON_IsArray(results) && cJSON_IsArray(warnings));
    CU_ASSERT_EQUAL(cJSON_GetArraySize(results), want_rows);
    int noisy = change > ATTN_NOISE_LIMIT, k = 0;
    double first[BENCH_MAX_SPLITS] = {0};
    const int per_type = want_rows / want_types;
    const cJSON *r;
    cJSON_ArrayForEach(r, results)
    {
        const double mn = number(r, "min_ms"), q1 = number(r, "q1_ms"), md = number(r, "median_ms");
        const double q3 = number(r, "q3_ms"), mx = number(r, "max_ms"), iqr = number(r, "iqr_fraction");
        CU_ASSERT(mn > 0 && mn <= q1 && q1 <= md && md <= q3 && q3 <= mx);
        CU_ASSERT_DOUBLE_EQUAL(iqr, (q3 - q1) / md, 1e-9);
        noisy |= iqr > ATTN_NOISE_LIMIT;
        /* rows come type-major; each ratio is to the first type's same row */
        if (k < per_type) first[k] = md;
        CU_ASSERT_DOUBLE_EQUAL(number(r, "time_ratio_to_first_dtype"), md / first[k % per_type], 1e-6);
        k++;
    }
    printf("\n  peak %.1f -> %.1f GFLOP/s, %d warnings", before, after, cJSON_GetArraySize(warnings));
    CU_ASSERT_EQUAL(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "noisy")), noisy);
    CU_ASSERT_EQUAL(cJSON_GetArraySize(warnings) > 0, noisy);
    CU_ASSERT_EQUAL(strstr(err, "WARNING") != NULL, noisy);
    cJSON_Delete(root);
    free(out);
    free(err);
}

static void test_spread_and_types_prefill(void)
{
    const char *args[] = {"--seq", "40", "--head-dim", "16", "--q-heads", "2", "--dtype", "f32,f16",
                          "--reps", "7", "--format", "json", NULL};
    check_run_json(args, 2, 2);
}

static void test_spread_and_types_decode(void)
{
    const char *args[] = {"--decode", "--batch", "1", "--q-heads", "2", "--kv-len", "64",
                          "--head-dim", "16", "--dtype", "bf16,f32", "--splits", "auto,2",
                          "--reps", "6", "--format", "json", NULL};
    check_run_json(args, 4, 2);
}

/* --compare-materialized: both paths' spread, in order, in each row. */
static void test_spread_compare(void)
{
    const char *args[] = {"--compare-materialized", "--seq", "48", "--head-dim", "16", "--q-heads",
                          "2", "--reps", "5", "--format", "json", NULL};
    char *out = NULL, *err = NULL;
    if (!attn_has_clblast()) { /* attn-bench refuses, saying why */
        CU_ASSERT_EQUAL(run_bench(args, &out, &err), 1);
        CU_ASSERT(err && strstr(err, "CLBlast"));
        printf("\n  (no CLBlast in this build: checked attn-bench's refusal) ");
        free(out);
        free(err);
        return;
    }
    CU_ASSERT_EQUAL(run_bench(args, &out, &err), 0);
    cJSON *root = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(root, "results");
    CU_ASSERT_EQUAL_FATAL(cJSON_GetArraySize(results), 1);
    const cJSON *r = cJSON_GetArrayItem(results, 0);
    const char *pre[] = {"", "materialized_"};
    int noisy = 0;
    for (int i = 0; i < 2; i++) {
        char n[5][64];
        const char *f[5] = {"min_ms", "q1_ms", i ? "ms" : "median_ms", "q3_ms", "max_ms"};
        double v[5];
        for (int k = 0; k < 5; k++) {
            snprintf(n[k], sizeof n[k], "%s%s", pre[i], f[k]);
            v[k] = number(r, n[k]);
        }
        CU_ASSERT(v[0] > 0 && v[0] <= v[1] && v[1] <= v[2] && v[2] <= v[3] && v[3] <= v[4]);
        char iqr[64];
        snprintf(iqr, sizeof iqr, "%siqr_fraction", pre[i]);
        CU_ASSERT_DOUBLE_EQUAL(number(r, iqr), (v[3] - v[1]) / v[2], 1e-9);
        noisy |= number(r, iqr) > ATTN_NOISE_LIMIT;
    }
    noisy |= number(root, "peak_change") > ATTN_NOISE_LIMIT;
    CU_ASSERT_EQUAL(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "noisy")), noisy);
    cJSON_Delete(root);
    free(out);
    free(err);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_help_matches_parser),
    HARNESS_TEST(test_parser_accepts_table),
    HARNESS_TEST(test_list_syntax),
    HARNESS_TEST(test_spread),
    HARNESS_TEST(test_spread_and_types_prefill),
    HARNESS_TEST(test_spread_and_types_decode),
    HARNESS_TEST(test_spread_compare),
    HARNESS_END
};

static void register_tests(void) { harness_add_suite("bench", tests); }

int main(void) { return harness_run("test_bench", register_tests); }
