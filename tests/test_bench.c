/* test_bench.c -- attn-bench's --help cannot drift from its parser:
 * every option of the table the parser is made from is accepted by the
 * built tool and heads exactly one line of its --help, every option the
 * help lists is one the parser knows, and nothing is "not yet supported".
 * Also the list options' syntax (--dtype, --splits, --block-size: no
 * repeats), the variant options'
 * syntax and refusals, the pairs a mask leaves, the threaded reference
 * with variants against the plain one, a tiny --variants run, and a tiny
 * --decode --mixed run's rows (lengths, bytes, memory and speed ratios),
 * and the form of a failure's line. */
#define _GNU_SOURCE
#include "harness.h"
#include "bench_options.h"
#include "common.h"
#include "measure/sampling.h"
#include "tool_error.h"

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
    const char *bin = harness_tool_path("ATTN_BENCH_BIN", "attn-bench");
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
    /* --window's example: a window of W keys is W-1 on the left (README) */
    CU_ASSERT_PTR_NOT_NULL(strstr(help, "4095,0"));
    CU_ASSERT_PTR_NULL(strstr(help, "4096,0"));
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
        else if (strcmp(s->name, "block-size") == 0) snprintf(arg, sizeof arg, "0,16");
        else if (strcmp(s->name, "mixed-lengths") == 0) snprintf(arg, sizeof arg, "16,64");
        else if (strcmp(s->name, "window") == 0) snprintf(arg, sizeof arg, "4,-1");
        else if (strcmp(s->name, "sinks") == 0) snprintf(arg, sizeof arg, "per-head");
        else if (strcmp(s->name, "mask") == 0) snprintf(arg, sizeof arg, "prefix-lm");
        else if (strcmp(s->name, "packed") == 0) snprintf(arg, sizeof arg, "3,5");
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
    /* a list naming one configuration twice is refused, whichever list */
    const char *twice[][4] = {{"--dtype", "f16,f16", NULL},
                              {"--decode", "--splits", "auto,auto", NULL},
                              {"--decode", "--block-size", "0,0", NULL}};
    for (int i = 0; i < 3; i++) {
        char *err = NULL;
        CU_ASSERT_EQUAL(run_bench(twice[i], NULL, &err), 2);
        CU_ASSERT(err && strstr(err, "without repeats"));
        free(err);
    }
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
    const char *bad_t[] = {"", ",", "f64", "f32,f32", "f32,,x", "F32", "f32,", ",f16", "f32,,f16"};
    for (int i = 0; i < 9; i++) CU_ASSERT_EQUAL(bench_parse_dtypes(bad_t[i], t, BENCH_MAX_DTYPES), -1);
    int s[BENCH_MAX_SPLITS];
    CU_ASSERT_EQUAL(bench_parse_splits("auto,1,2,8", s, BENCH_MAX_SPLITS), 4);
    CU_ASSERT(s[0] == 0 && s[1] == 1 && s[3] == 8);
    /* empty items too: "2,,4" is a typo, not the list 2,4 */
    const char *bad_s[] = {"", "0", "257", "two", "auto,x", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17",
                           "2,,4", "2,", ",2", "auto,auto", "2,4,2", "+2", "auto, 2"};
    for (int i = 0; i < 13; i++) CU_ASSERT_EQUAL(bench_parse_splits(bad_s[i], s, BENCH_MAX_SPLITS), -1);
    int b[BENCH_MAX_BLOCKS];
    CU_ASSERT_EQUAL(bench_parse_blocks("0,16,256", b, BENCH_MAX_BLOCKS), 3);
    const char *bad_b[] = {"0,0", "16,0,16", "24", "0,"};
    for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(bench_parse_blocks(bad_b[i], b, BENCH_MAX_BLOCKS), -1);
    /* lengths are not configurations: sequences may share one */
    int lens[4];
    CU_ASSERT_EQUAL(bench_parse_packed("5,5", lens, 4), 2);
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
static void check_json(const char *out, const char *err, int want_rows, int want_types)
{
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
}

static void check_run_json(const char *const *args, int want_rows, int want_types)
{
    char *out = NULL, *err = NULL;
    int rc = run_bench(args, &out, &err);
    if (rc != 0) printf("\n  exit %d: %s", rc, err);
    CU_ASSERT_EQUAL(rc, 0);
    check_json(out, err, want_rows, want_types);
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

/* The fields of one CSV line, quotes respected (the variant's text has
 * commas): into f (at most max), returns the count. */
static int csv_fields(const char *line, char f[][64], int max)
{
    int n = 0, quoted = 0;
    size_t at = 0;
    for (const char *c = line;; c++) {
        if (*c == '"') {
            quoted = !quoted;
        } else if ((*c == ',' && !quoted) || *c == '\n' || !*c) {
            if (n < max) f[n][at < 63 ? at : 63] = 0;
            n++, at = 0;
            if (*c != ',') return n;
        } else if (n < max && at < 63) {
            f[n][at++] = *c;
        }
    }
}

/* --packed: each row's ratio to its type's padded row is named so
 * (time_ratio_to_padded: JSON, and CSV's last column); its ratio to the
 * first type is to that type's row of the same layout, 1 with one type.
 * A run without --packed has no padded ratio. */
static void packed_ratios_json(const char *const *args, int want_rows)
{
    char *out = NULL, *err = NULL;
    CU_ASSERT_EQUAL(run_bench(args, &out, &err), 0);
    cJSON *root = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(root, "results"), *r;
    CU_ASSERT_EQUAL_FATAL(cJSON_GetArraySize(results), want_rows);
    double md[8] = {0};
    int k = 0;
    cJSON_ArrayForEach(r, results) md[k++] = number(r, "median_ms");
    k = 0;
    cJSON_ArrayForEach(r, results)
    {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "variant");
        const cJSON *layout = cJSON_GetObjectItemCaseSensitive(v, "layout");
        CU_ASSERT_STRING_EQUAL(cJSON_IsString(layout) ? layout->valuestring : "",
                               k % 2 ? "packed" : "padded");
        CU_ASSERT_DOUBLE_EQUAL(number(r, "time_ratio_to_padded"), md[k] / md[k - k % 2], 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(number(r, "time_ratio_to_first_dtype"), md[k] / md[k % 2], 1e-6);
        k++;
    }
    cJSON_Delete(root);
    free(out), free(err);
}

static void test_packed_ratios(void)
{
    const char *one[] = {"--packed", "5,17", "--head-dim", "16", "--q-heads", "2", "--reps",
                         "3", "--no-check", "--format", "json", NULL};
    packed_ratios_json(one, 2);
    const char *two[] = {"--packed", "5,17", "--head-dim", "16", "--q-heads", "2", "--dtype",
                         "f32,f16", "--reps", "3", "--no-check", "--format", "json", NULL};
    packed_ratios_json(two, 4);

    const char *csv_args[] = {"--packed", "5,17", "--head-dim", "16", "--q-heads", "2",
                              "--reps", "3", "--no-check", "--format", "csv", NULL};
    char *out = NULL, *err = NULL;
    CU_ASSERT_EQUAL(run_bench(csv_args, &out, &err), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    static char f[40][64];
    const char *line = strstr(out, "batch,");
    CU_ASSERT_PTR_NOT_NULL_FATAL(line);
    const int nh = csv_fields(line, f, 40);
    CU_ASSERT_STRING_EQUAL(f[nh - 1], "time_ratio_to_padded");
    CU_ASSERT_STRING_EQUAL(f[nh - 3], "time_ratio_to_first_dtype");
    int rows = 0;
    for (line = strchr(line, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        CU_ASSERT_EQUAL(csv_fields(line + 1, f, 40), nh);
        CU_ASSERT_STRING_EQUAL(f[nh - 3], "1.0000"); /* one type: its own */
        if (rows == 0) CU_ASSERT_STRING_EQUAL(f[nh - 1], "1.0000"); /* the padded row */
        CU_ASSERT(atof(f[nh - 1]) > 0);
        rows++;
    }
    CU_ASSERT_EQUAL(rows, 2);
    free(out), free(err);

    const char *plain[] = {"--seq", "20", "--head-dim", "16", "--q-heads", "2", "--reps", "3",
                           "--no-check", "--format", "json", NULL};
    CU_ASSERT_EQUAL(run_bench(plain, &out, &err), 0);
    cJSON *root = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(root, "results"), *r;
    CU_ASSERT_EQUAL(cJSON_GetArraySize(results), 1);
    cJSON_ArrayForEach(r, results)
        CU_ASSERT_PTR_NULL(cJSON_GetObjectItemCaseSensitive(r, "time_ratio_to_padded"));
    cJSON_Delete(root);
    free(out), free(err);
}

/* --block-size: a row per cache and splits, block-major within a type,
 * each with its block size and its ratio to the first cache's row of the
 * same splits. */
static void test_decode_blocks(void)
{
    const char *args[] = {"--decode", "--batch", "1", "--q-heads", "2", "--kv-len", "64",
                          "--head-dim", "16", "--block-size", "0,16", "--splits", "auto,2",
                          "--reps", "5", "--format", "json", NULL};
    check_run_json(args, 4, 1);
    char *out = NULL, *err = NULL;
    CU_ASSERT_EQUAL_FATAL(run_bench(args, &out, &err), 0);
    cJSON *root = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(root, "results"), *r;
    CU_ASSERT_EQUAL_FATAL(cJSON_GetArraySize(results), 4);
    double md[4];
    int k = 0;
    cJSON_ArrayForEach(r, results)
    {
        md[k] = number(r, "median_ms");
        CU_ASSERT_EQUAL(number(r, "block_size"), k < 2 ? 0 : 16);
        CU_ASSERT_DOUBLE_EQUAL(number(r, "time_ratio_to_first_block"), md[k] / md[k % 2], 1e-6);
        k++;
    }
    cJSON_Delete(root);
    free(out);
    free(err);
}

/* --mixed's lengths: log-spaced from MIN to MAX, both ends exact. */
static void test_mixed_lengths(void)
{
    int lens[8];
    bench_mixed_lengths(5, 16, 256, lens);
    for (int i = 0; i < 5; i++) CU_ASSERT_EQUAL(lens[i], 16 << i);
    bench_mixed_lengths(7, 64, 16384, lens);
    CU_ASSERT(lens[0] == 64 && lens[6] == 16384);
    for (int i = 1; i < 7; i++) CU_ASSERT(lens[i] > lens[i - 1]);
    bench_mixed_lengths(1, 3, 90, lens);
    CU_ASSERT_EQUAL(lens[0], 90);
    bench_mixed_lengths(3, 40, 40, lens);
    CU_ASSERT(lens[0] == 40 && lens[1] == 40 && lens[2] == 40);
    int lo = 0, hi = 0;
    CU_ASSERT(bench_parse_mixed_lengths("8,200", &lo, &hi) == 2 && lo == 8 && hi == 200);
    const char *bad[] = {"", "8", "0,4", "9,8", "8,200,300", "8,x", "1,2000000"};
    for (int i = 0; i < 7; i++) CU_ASSERT_EQUAL(bench_parse_mixed_lengths(bad[i], &lo, &hi), -1);
}

/* --decode --mixed: a row per type and cache, type-major; the pool's
 * lengths, K/V bytes of the keys the sequences hold (not the padding),
 * tokens/s, each cache's bytes (attn_kv_cache_bytes of its desc: the
 * contiguous one at the longest length, the paged pools of the blocks the
 * lengths need) and the ratios to the first cache's, each output checked. */
static void test_decode_mixed(void)
{
    enum { N = 4, HQ = 2, HKV = 1, D = 16, MIN = 8, MAX = 200, BLOCK = 16 };
    const char *args[] = {"--decode", "--mixed", "--batch", "4", "--mixed-lengths", "8,200",
                          "--q-heads", "2", "--kv-heads", "1", "--head-dim", "16",
                          "--block-size", "0,16", "--kv-int8", "--reps", "5", "--format", "json",
                          NULL};
    char *out = NULL, *err = NULL;
    const int rc = run_bench(args, &out, &err);
    if (rc != 0) printf("\n  exit %d: %s", rc, err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    check_json(out, err, 4, 2); /* the spread, and the int8 rows' ratio to the f32 ones */
    int lens[N], total = 0, pool = 0;
    bench_mixed_lengths(N, MIN, MAX, lens);
    for (int b = 0; b < N; b++) total += lens[b], pool += (lens[b] + BLOCK - 1) / BLOCK;
    cJSON *root = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(root, "results"), *r;
    CU_ASSERT_EQUAL_FATAL(cJSON_GetArraySize(results), 4);
    double md0 = 0, bytes0 = 0;
    int k = 0;
    cJSON_ArrayForEach(r, results)
    {
        const int paged = k % 2, int8 = k / 2;
        const cJSON *mode = cJSON_GetObjectItemCaseSensitive(r, "mode");
        CU_ASSERT(cJSON_IsString(mode) && strcmp(mode->valuestring, "decode_mixed") == 0);
        const cJSON *ks = cJSON_GetObjectItemCaseSensitive(r, "kv_storage");
        CU_ASSERT(cJSON_IsString(ks) && strcmp(ks->valuestring, int8 ? "int8" : "dtype") == 0);
        CU_ASSERT_EQUAL(number(r, "batch"), N);
        CU_ASSERT_EQUAL(number(r, "kv_len"), MAX);
        CU_ASSERT_EQUAL(number(r, "block_size"), paged ? BLOCK : 0);
        CU_ASSERT_EQUAL(number(r, "pool_blocks"), paged ? pool : 0);
        CU_ASSERT_EQUAL(number(r, "kv_tokens"), total);
        const cJSON *jl = cJSON_GetObjectItemCaseSensitive(r, "kv_lengths");
        CU_ASSERT_FATAL(cJSON_IsArray(jl) && cJSON_GetArraySize(jl) == N);
        for (int b = 0; b < N; b++) CU_ASSERT_EQUAL(cJSON_GetArrayItem(jl, b)->valueint, lens[b]);
        const double md = number(r, "median_ms"), tps = number(r, "tokens_per_s");
        CU_ASSERT(md > 0 && tps > 0);
        CU_ASSERT_DOUBLE_EQUAL(tps, N * 1e3 / md, 1e-6 * tps);
        /* the keys the sequences hold, not the padded capacity */
        const double kv_bytes = 2.0 * HKV * total * (int8 ? D + 4 : D * 4);
        CU_ASSERT_DOUBLE_EQUAL(number(r, "kv_bytes"), kv_bytes, 0.5);
        const double gbps = number(r, "kv_gbps"), copy = number(r, "copy_gbps");
        CU_ASSERT_DOUBLE_EQUAL(gbps, kv_bytes / (md * 1e6), 1e-9 * gbps);
        CU_ASSERT(copy > 0);
        CU_ASSERT_DOUBLE_EQUAL(number(r, "bandwidth_fraction"), gbps / copy, 1e-9);
        const attn_kv_cache_desc d = {.batch = N, .kv_heads = HKV, .head_dim = D,
                                      .capacity = MAX, .dtype = ATTN_F32,
                                      .block_size = paged ? BLOCK : 0,
                                      .num_blocks = paged ? pool : 0,
                                      .storage = int8 ? ATTN_KV_INT8 : ATTN_KV_AS_DTYPE};
        size_t want = 0;
        CU_ASSERT_EQUAL(attn_kv_cache_bytes(&d, &want), ATTN_SUCCESS);
        const double bytes = number(r, "cache_bytes");
        CU_ASSERT_EQUAL(bytes, (double)want);
        if (!paged) md0 = md, bytes0 = bytes;
        const double mem = number(r, "cache_bytes_ratio_to_first_block");
        CU_ASSERT_DOUBLE_EQUAL(mem, bytes / bytes0, 1e-9);
        if (paged) CU_ASSERT(mem < 1); /* mixed lengths: the pool holds less than the padding */
        CU_ASSERT_DOUBLE_EQUAL(number(r, "time_ratio_to_first_block"), md / md0, 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(number(r, "tokens_per_s_ratio_to_first_block"), md0 / md, 1e-6);
        const cJSON *check = cJSON_GetObjectItemCaseSensitive(r, "check");
        CU_ASSERT(cJSON_IsString(check) && strcmp(check->valuestring, "passed") == 0);
        k++;
    }
    cJSON_Delete(root);
    free(out), free(err);
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

/* The variant options' syntax, as the parser reads it. */
static void test_variant_syntax(void)
{
    bench_variant v;
    memset(&v, 0, sizeof v);
    CU_ASSERT_EQUAL(bench_parse_window("4096,0", &v), 0);
    CU_ASSERT(v.use_window && v.window_left == 4096 && v.window_right == 0);
    CU_ASSERT_EQUAL(bench_parse_window("-1,7", &v), 0);
    CU_ASSERT(v.window_left == -1 && v.window_right == 7);
    const char *bad_w[] = {"", "4096", "4,", ",4", "-2,0", "1,x", "1,2,3", "1.5,0"};
    for (int i = 0; i < 8; i++) CU_ASSERT_EQUAL(bench_parse_window(bad_w[i], &v), -1);
    CU_ASSERT_EQUAL(bench_parse_sinks("per-head", &v), 0);
    CU_ASSERT_EQUAL(v.sinks, BENCH_SINKS_PER_HEAD);
    CU_ASSERT_EQUAL(bench_parse_sinks("-0.5", &v), 0);
    CU_ASSERT(v.sinks == BENCH_SINKS_VALUE && v.sink_value == -0.5f);
    const char *bad_s[] = {"", "inf", "nan", "1x", "perhead"};
    for (int i = 0; i < 5; i++) CU_ASSERT_EQUAL(bench_parse_sinks(bad_s[i], &v), -1);
    const char *masks[] = {"causal", "zeros", "prefix-lm", "random-block"};
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(bench_parse_mask(masks[i], &v), 0);
        CU_ASSERT_STRING_EQUAL(bench_mask_name(v.mask), masks[i]);
    }
    CU_ASSERT_EQUAL(bench_parse_mask("none", &v), -1);
    CU_ASSERT_EQUAL(bench_parse_mask("Causal", &v), -1);
    CU_ASSERT_EQUAL(bench_parse_mask_dtype("f16", &v), 0);
    CU_ASSERT_EQUAL(v.mask_dtype, ATTN_F16);
    CU_ASSERT_EQUAL(bench_parse_mask_dtype("bf16", &v), -1);
    int lens[BENCH_MAX_PACKED];
    CU_ASSERT_EQUAL(bench_parse_packed("100,1000,3000,4096", lens, BENCH_MAX_PACKED), 4);
    CU_ASSERT(lens[0] == 100 && lens[3] == 4096);
    const char *bad_p[] = {"", "0", "5,-1", "5,,x", "2000000", "5,,6", "5,"};
    for (int i = 0; i < 7; i++) CU_ASSERT_EQUAL(bench_parse_packed(bad_p[i], lens, BENCH_MAX_PACKED), -1);
    CU_ASSERT_EQUAL(bench_parse_packed("1,2,3", lens, 2), -1); /* more than max */
    /* the text names what is on, and nothing when nothing is */
    bench_variant w;
    memset(&w, 0, sizeof w);
    char text[192];
    bench_variant_text(&w, text, sizeof text);
    CU_ASSERT_STRING_EQUAL(text, "");
    CU_ASSERT_FALSE(bench_variant_any(&w));
    w.use_window = 1, w.window_left = 128, w.softcap = 50, w.alibi_max_bias = 8;
    w.sinks = BENCH_SINKS_PER_HEAD, w.mask = BENCH_MASK_CAUSAL, w.mask_dtype = ATTN_F16;
    w.npacked = 4;
    bench_variant_text(&w, text, sizeof text);
    CU_ASSERT_STRING_EQUAL(text, "window=128,0 softcap=50 sinks=per-head alibi=8 "
                                 "mask=causal/f16 packed=4");
}

/* Bad variant values and clashing modes: exit 2 before any device is
 * opened, with a message naming the option and the usual hint. */
static void test_variant_refusals(void)
{
    static const struct { const char *args[6]; const char *says; } cases[] = {
        {{"--window", "4096", NULL}, "--window wants LEFT,RIGHT"},
        {{"--window", "0,-3", NULL}, "--window wants"},
        {{"--softcap", "0", NULL}, "--softcap wants a number"},
        {{"--softcap", "nan", NULL}, "--softcap wants a number"},
        {{"--sinks", "big", NULL}, "--sinks wants a finite logit"},
        {{"--alibi", "-8", NULL}, "--alibi wants a number"},
        {{"--mask", "upper", NULL}, "--mask wants causal, zeros, prefix-lm or random-block"},
        {{"--mask", "zeros", "--mask-dtype", "bf16", NULL}, "--mask-dtype wants f32 or f16"},
        {{"--mask-dtype", "f16", NULL}, "--mask-dtype needs --mask"},
        {{"--mask-fresh", NULL}, "--mask-fresh needs --mask"},
        /* a prefix-LM mask under the causal rule masks nothing more */
        {{"--mask", "prefix-lm", NULL}, "--mask prefix-lm needs --no-causal"},
        /* placed by buffer position: padded and packed would differ */
        {{"--packed", "10,20", "--mask", "random-block", NULL}, "--packed takes --mask causal or zeros"},
        {{"--packed", "10,0", NULL}, "--packed wants up to"},
        {{"--packed", "10,20", "--batch", "2", NULL}, "--packed sets the batch"},
        {{"--packed", "10,20", "--seq", "64", NULL}, "--packed sets the lengths"},
        {{"--decode", "--packed", "4,5", NULL}, "--packed applies to prefill"},
        {{"--decode", "--no-causal", NULL}, "--no-causal applies to prefill"},
        {{"--variants", "--no-causal", NULL}, "--no-causal applies to prefill"},
        {{"--decode", "--block-size", "0,24", NULL}, "--block-size wants up to"},
        {{"--decode", "--block-size", "512", NULL}, "--block-size wants up to"},
        {{"--block-size", "16", NULL}, "--block-size applies to --decode only"},
        {{"--compare-materialized", "--sinks", "1", NULL}, "--compare-materialized takes no variant"},
        {{"--decode", "--mixed", "--mixed-lengths", "0,10", NULL}, "--mixed-lengths wants MIN,MAX"},
        {{"--decode", "--mixed", "--mixed-lengths", "300,20", NULL}, "--mixed-lengths wants"},
        {{"--decode", "--mixed", "--mixed-lengths", "64", NULL}, "--mixed-lengths wants"},
        {{"--decode", "--mixed", "--mixed-lengths", "1,2,3", NULL}, "--mixed-lengths wants"},
        {{"--mixed", NULL}, "--mixed applies to --decode only"},
        {{"--decode", "--mixed-lengths", "1,2", NULL}, "--mixed-lengths needs --mixed"},
        {{"--decode", "--mixed", "--kv-len", "64", NULL}, "--mixed sets the lengths"},
        {{"--decode", "--mixed", "--splits", "2", NULL}, "--mixed uses the heuristic's splits"},
        {{"--decode", "--mixed", "--softcap", "30", NULL}, "--mixed takes no variant option"},
        {{"--variants", "--decode", NULL}, "--variants is a prefill run of its own"},
        {{"--variants", "--dtype", "f32,f16", NULL}, "--variants takes one --dtype"},
        {{"--variants", "--alibi", "8", NULL}, "--variants runs its own variants"},
        /* the library's limit on lengths, 2^30, not INT_MAX */
        {{"--seq", "2147483647", NULL}, "--seq wants an integer in 1..1073741824"},
        {{"--kv-len", "1073741825", NULL}, "--kv-len wants an integer in 1..1073741824"},
        /* whole numbers written plainly (strtol took a '+' and spaces) */
        {{"--seq", "+64", NULL}, "--seq wants an integer"},
        {{"--head-dim", " 16", NULL}, "--head-dim wants an integer"},
        {{"--window", "+8,0", NULL}, "--window wants"},
        /* decimal numbers written plainly too (strtof took these) */
        {{"--softcap", " 50", NULL}, "--softcap wants a number"},
        {{"--alibi", "0x8", NULL}, "--alibi wants a number"},
        {{"--sinks", "+1", NULL}, "--sinks wants a finite logit"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *err = NULL;
        const int rc = run_bench(cases[i].args, NULL, &err);
        const int said = err && strstr(err, cases[i].says) && strstr(err, "Try 'attn-bench --help'");
        if (rc != 2 || !said)
            printf("\n  attn-bench %s %s: exit %d, stderr: %s", cases[i].args[0],
                   cases[i].args[1] ? cases[i].args[1] : "", rc, err ? err : "(none)");
        CU_ASSERT_EQUAL(rc, 2);
        CU_ASSERT(said);
        free(err);
    }
}

/* A shape too large for the host ends at once with the reason, before any
 * allocation (counting its FLOPs, per query, once took minutes before the
 * size was checked). */
static void test_huge_shape_refused(void)
{
    const char *args[] = {"--batch", "1048576", "--seq", "1073741824", "--reps", "1", NULL};
    char *err = NULL;
    const int rc = run_bench(args, NULL, &err);
    CU_ASSERT_EQUAL(rc, 1);
    const char *says = "GiB of host memory; this machine has";
    CU_ASSERT(err != NULL && strstr(err, says) != NULL);
    if (rc != 1 || !err || !strstr(err, says))
        printf("\n  exit %d, stderr: %s\n", rc, err ? err : "(none)");
    free(err);
    /* decode and --compare-materialized too (they wrapped the element
     * count and asked for a buffer of 0 bytes), the reason in the JSON */
    static const char *const modes[][16] = {
        {"--decode", "--batch", "1048576", "--q-heads", "65536", "--kv-heads", "65536",
         "--head-dim", "256", "--q-len", "1073741824", "--kv-len", "1073741824"},
        {"--compare-materialized", "--batch", "1048576", "--q-heads", "65536", "--kv-heads",
         "65536", "--head-dim", "256", "--seq", "1073741824"}};
    for (int m = 0; m < 2; m++) {
        const char *a[20];
        int n = 0;
        for (; modes[m][n]; n++) a[n] = modes[m][n];
        a[n++] = "--reps", a[n++] = "1", a[n++] = "--format", a[n++] = "json", a[n] = NULL;
        char *out = NULL;
        err = NULL;
        CU_ASSERT_EQUAL(run_bench(a, &out, &err), 1);
        cJSON *root = cJSON_Parse(out);
        const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "errors"), 0);
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
        CU_ASSERT(cJSON_IsString(msg) && strstr(msg->valuestring, "overflows size_t"));
        if (!cJSON_IsString(msg)) printf("\n  %s: stderr: %s\n", a[0], err ? err : "(none)");
        cJSON_Delete(root);
        free(out), free(err);
    }
}

/* A library failure's line names the failing function once: the library's
 * message begins with it (tool_error.h). */
static void test_error_line(void)
{
    char text[256];
    tool_error_text(text, sizeof text, "attn_forward", ATTN_ERROR_INVALID_ARGUMENT,
                    "attn_forward: q is NULL");
    CU_ASSERT_STRING_EQUAL(text, "ATTN_ERROR_INVALID_ARGUMENT: attn_forward: q is NULL");
    /* a step the message does not name (not the library's) stays */
    tool_error_text(text, sizeof text, "clCreateBuffer", ATTN_ERROR_OUT_OF_MEMORY, "(no detail)");
    CU_ASSERT_STRING_EQUAL(text, "clCreateBuffer: ATTN_ERROR_OUT_OF_MEMORY: (no detail)");
    tool_error_text(text, sizeof text, "attn_forward", ATTN_ERROR_OPENCL, "attn_forward_x: y");
    CU_ASSERT_STRING_EQUAL(text, "attn_forward: ATTN_ERROR_OPENCL: attn_forward_x: y");
    tool_error_text(text, sizeof text, NULL, ATTN_ERROR_IO, "m");
    CU_ASSERT_STRING_EQUAL(text, "ATTN_ERROR_IO: m");
    /* the built tool */
    const char *args[] = {"--device", "no-such-device", "--seq", "16", NULL};
    char *err = NULL;
    CU_ASSERT_EQUAL(run_bench(args, NULL, &err), 1);
    const char *says = "attn-bench: ATTN_ERROR_NO_DEVICE: attn_context_create: selector";
    const char *at = err ? strstr(err, "attn_context_create") : NULL;
    if (!err || strncmp(err, says, strlen(says)) != 0) printf("\n  stderr: %s", err ? err : "(none)");
    CU_ASSERT(err && strncmp(err, says, strlen(says)) == 0);
    CU_ASSERT(at && !strstr(at + 1, "attn_context_create"));
    free(err);
}

/* A report that cannot be written (stdout on a full disk) is a failure,
 * said on stderr, not exit 0 with truncated JSON; --version after a bad
 * option is a usage error, as --help is. */
static void test_output_checked(void)
{
    const char *bin = harness_tool_path("ATTN_BENCH_BIN", "attn-bench");
    char dir[256], efile[300];
    harness_temp_dir(dir, sizeof dir, "bench");
    snprintf(efile, sizeof efile, "%s/err.txt", dir);
    const char *args[] = {"--seq", "16", "--head-dim", "16", "--q-heads", "2", "--reps", "1",
                          "--format", "json", NULL};
    CU_ASSERT_EQUAL(harness_run_program_split(bin, args, "/dev/full", efile), 1);
    char *err = harness_read_file(efile, NULL);
    CU_ASSERT(err && strstr(err, "attn-bench: writing to standard output failed"));
    if (err && !strstr(err, "writing to standard output failed")) printf("\n  stderr: %s", err);
    free(err);
    harness_remove_tree(dir);
    const char *version[] = {"--seq", "5x", "--version", NULL};
    char *out = NULL;
    CU_ASSERT_EQUAL(run_bench(version, &out, NULL), 2);
    CU_ASSERT(out && !strstr(out, "libattn")); /* no version line */
    free(out);
}

/* GFLOP/s count visible pairs: a causal mask over a full problem counts as
 * causal, zeros add nothing hidden, prefix-LM adds the prefix's pairs. */
static void test_mask_pairs(void)
{
    enum { SQ = 12, SKV = 20 };
    float mask[SQ * SKV];
    attn_problem p = {.batch = 2, .q_heads = 3, .kv_heads = 1, .head_dim = 8, .q_len = SQ,
                      .kv_len = SKV, .causal = 1};
    const double causal = attn_problem_flops(&p, NULL);
    for (int r = 0; r < SQ; r++)
        for (int c = 0; c < SKV; c++) mask[r * SKV + c] = c > r + SKV - SQ ? -INFINITY : 0.0f;
    const attn_mask m = {NULL, mask, ATTN_F32, 0, 0, 0, SKV, 1, 0};
    p.mask = m;
    p.causal = 0;
    CU_ASSERT_DOUBLE_EQUAL(bench_variant_flops(&p, NULL), causal, 0.5);
    for (int i = 0; i < SQ * SKV; i++) mask[i] = 0;
    p.causal = 1;
    CU_ASSERT_DOUBLE_EQUAL(bench_variant_flops(&p, NULL), causal, 0.5);
    /* prefix-LM over the full problem: causal plus the prefix keys past the diagonal */
    double extra = 0;
    for (int r = 0; r < SQ; r++)
        for (int c = 0; c < SKV; c++) {
            mask[r * SKV + c] = c >= SKV / 2 && c > r + SKV - SQ ? -INFINITY : 0.0f;
            extra += c < SKV / 2 && c > r + SKV - SQ;
        }
    p.causal = 0;
    CU_ASSERT_DOUBLE_EQUAL(bench_variant_flops(&p, NULL), causal + 4.0 * 8 * 3 * 2 * extra, 0.5);
    /* a window inside the mask's pairs: each row sees at most 3 keys */
    for (int i = 0; i < SQ * SKV; i++) mask[i] = 0;
    p.causal = 1, p.use_window = 1, p.window_left = 2, p.window_right = 0;
    CU_ASSERT_DOUBLE_EQUAL(bench_variant_flops(&p, NULL), 4.0 * 8 * 3 * 2 * SQ * 3, 0.5);
}

static void fill(float *x, size_t n, uint64_t *rng)
{
    for (size_t i = 0; i < n; i++) x[i] = attn_rand_uniform(rng, -1, 1);
}

/* The threaded reference slices each variant per (batch, head): it must
 * give attn_reference_forward's result on the whole problem, and a packed
 * batch each entry's rows of the same problem laid out per entry. */
static void test_threaded_reference(void)
{
    enum { B = 2, HQ = 4, HKV = 2, S = 24, D = 8 };
    const size_t nq = (size_t)B * HQ * S * D, nkv = (size_t)B * HKV * S * D;
    float *q = malloc(nq * 4), *k = malloc(nkv * 4), *v = malloc(nkv * 4);
    float *a = malloc(nq * 4), *b = malloc(nq * 4), *mask = malloc((size_t)B * HQ * S * S * 4);
    CU_ASSERT_FATAL(q && k && v && a && b && mask);
    uint64_t rng = 7;
    fill(q, nq, &rng), fill(k, nkv, &rng), fill(v, nkv, &rng);
    fill(mask, (size_t)B * HQ * S * S, &rng);
    mask[5] = mask[S * S + 40] = -INFINITY;
    const float sinks[HQ] = {-1, 0.5f, 0, 2};
    const int ql[B] = {20, 9}, kl[B] = {24, 13}, qs[B] = {1, 0}, ks[B] = {0, 5};
    const attn_lengths L = {qs, ql, ks, kl};
    attn_problem p = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = S,
                      .kv_len = S, .causal = 1, .use_window = 1, .window_left = 6,
                      .window_right = -1, .softcap = 3, .sinks = sinks, .alibi_max_bias = 8};
    const attn_mask m = {NULL, mask, ATTN_F32, 3, (size_t)HQ * S * S - 3, (size_t)S * S, S, 1, 0};
    p.mask = m;
    memset(a, 0, nq * 4), memset(b, 0, nq * 4);
    CU_ASSERT_EQUAL(tool_reference(&p, &L, q, k, v, a), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_reference_forward(&p, q, k, v, b, &L, NULL), ATTN_SUCCESS);
    double worst = 0;
    for (size_t i = 0; i < nq; i++) worst = fmax(worst, fabs((double)a[i] - b[i]));
    CU_ASSERT(worst < 1e-6); /* ALiBi: the library's slopes against the reference's own */
    /* packed: entry 1's sequences follow entry 0's on one token axis of
     * q/out [HQ][S][D] and k/v [HKV][S][D], batch stride 0; the per-entry
     * layout repeats the axis for each entry */
    const int pq[B] = {0, 10}, pl[B] = {10, 14};
    const attn_lengths P = {pq, pl, pq, pl};
    attn_problem pk = {.batch = B, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = S,
                       .kv_len = S, .causal = 1, .sinks = sinks, .alibi_max_bias = 4,
                       .packed = 1};
    memset(a, 0, nq * 4);
    CU_ASSERT_EQUAL(tool_reference(&pk, &P, q, k, v, a), ATTN_SUCCESS);
    float *q2 = malloc(nq * 4), *k2 = malloc(nkv * 4), *v2 = malloc(nkv * 4);
    CU_ASSERT_FATAL(q2 && k2 && v2);
    for (int e = 0; e < B; e++) {
        memcpy(q2 + (size_t)e * HQ * S * D, q, (size_t)HQ * S * D * 4);
        memcpy(k2 + (size_t)e * HKV * S * D, k, (size_t)HKV * S * D * 4);
        memcpy(v2 + (size_t)e * HKV * S * D, v, (size_t)HKV * S * D * 4);
    }
    pk.packed = 0;
    CU_ASSERT_EQUAL(attn_reference_forward(&pk, q2, k2, v2, b, &P, NULL), ATTN_SUCCESS);
    worst = 0;
    for (int e = 0; e < B; e++)
        for (int h = 0; h < HQ; h++)
            for (int r = pq[e]; r < pq[e] + pl[e]; r++)
                for (int d = 0; d < D; d++) {
                    const size_t at = ((size_t)h * S + r) * D + d;
                    worst = fmax(worst, fabs((double)a[at] - b[(size_t)e * HQ * S * D + at]));
                }
    CU_ASSERT(worst < 1e-6); /* ALiBi: the library's slopes against the reference's own */
    free(q), free(k), free(v), free(a), free(b), free(mask), free(q2), free(k2), free(v2);
}

/* A tiny --variants run (speeds not asserted): every group's every row,
 * in the text summary and in the JSON with its group and ratio. */
static void test_variants_run(void)
{
    static const char *const rows[] = {
        "plain", "window=16,0", "softcap=50", "sinks=per-head", "alibi=8", "mask=causal/f32",
        "mask=causal/f32/fresh", "mask=causal/f16", "mask=zeros/f32", "mask=random-block/f32", "mask=prefix-lm/f16",
        "padded=3", "packed=3"};
    const int nrows = (int)(sizeof rows / sizeof rows[0]);
    const char *text_args[] = {"--variants", "--seq", "64", "--head-dim", "16", "--q-heads",
                               "2", "--packed", "5,17,33", "--reps", "3", "--no-check", NULL};
    char *out = NULL, *err = NULL;
    int rc = run_bench(text_args, &out, &err);
    if (rc != 0) printf("\n  --variants: exit %d: %s", rc, err);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    for (int i = 0; i < nrows; i++) {
        char line[64];
        snprintf(line, sizeof line, "\n   %s ", rows[i]);
        if (!strstr(out, line)) printf("\n  no summary row for %s", rows[i]);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, line));
    }
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "times the pairs' share"));
    /* the packed group's heading names its own shape: a batch of the 3
     * sequences, the longest's length (it named --seq's B=1 S=64) */
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "padded (at B=3 Hq=2 Hkv=2 D=16 S=33 causal f32) --"));
    free(out), free(err);
    const char *json_args[] = {"--variants", "--seq", "64", "--head-dim", "16", "--q-heads", "2",
                               "--packed", "5,17,33", "--reps", "3", "--no-check", "--format",
                               "json", NULL};
    rc = run_bench(json_args, &out, &err);
    CU_ASSERT_EQUAL(rc, 0);
    cJSON *root = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(root, "results"), *r;
    /* costs: 11 rows, window: 2, packed: 2 */
    CU_ASSERT_EQUAL(cJSON_GetArraySize(results), 15);
    int k = 0;
    cJSON_ArrayForEach(r, results)
    {
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(r, "variants_group");
        CU_ASSERT(cJSON_IsString(g));
        CU_ASSERT(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(r, "variant")));
        const double ratio = number(r, k < 11 ? "gflops_vs_base" : "speed_vs_base");
        CU_ASSERT(ratio > 0);
        if (k == 0 || k == 11 || k == 13) CU_ASSERT_DOUBLE_EQUAL(ratio, 1.0, 1e-12);
        k++;
    }
    cJSON_Delete(root);
    free(out), free(err);
}

/* Configuration 1 waits on its own queue after its first call (as check
 * mode's read-back does); configuration 0 never does. */
typedef struct blocking_runs {
    attn_context *ctx;
    cl_mem buf;
    int calls[2];
} blocking_runs;

static attn_status blocking_run(void *arg, int i)
{
    blocking_runs *b = arg;
    const float zero = 0;
    cl_command_queue q = attn_context_queue(b->ctx);
    if (clEnqueueFillBuffer(q, b->buf, &zero, sizeof zero, 0, 4096, 0, NULL, NULL) != CL_SUCCESS)
        return ATTN_ERROR_OPENCL;
    if (i == 1 && b->calls[i]++ > 0 && clFinish(q) != CL_SUCCESS) return ATTN_ERROR_OPENCL;
    return ATTN_SUCCESS;
}

/* A call that waits on its own queue is let go after the gate's timeout
 * and timed again on the host's clock: no sample holds the wait (one of 5
 * s was kept), and rounds that changed clocks are taken again, all on the
 * host's (the other configuration's first samples were the device's). */
static void test_blocking_call_timed_on_host(void)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    cl_int err;
    blocking_runs b = {ctx, clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_WRITE, 4096,
                                           NULL, &err), {0, 0}};
    CU_ASSERT_EQUAL_FATAL(err, CL_SUCCESS);
    tool_timing_new_series();
    double t0[4], t1[4], ms;
    double *const times[2] = {t0, t1};
    for (int i = 0; i < 2; i++) /* each configuration's first call: never held */
        CU_ASSERT_EQUAL_FATAL(tool_timed(ctx, blocking_run, &b, i, &ms), ATTN_SUCCESS);
    tool_rounds rounds = {2, 4, blocking_run, NULL, NULL, &b, times, 0};
    CU_ASSERT_EQUAL(tool_time_rounds(ctx, &rounds), ATTN_SUCCESS);
    int held = 0;
    for (int r = 0; r < 4; r++) held += t0[r] > 2500 || t1[r] > 2500;
    CU_ASSERT_EQUAL(held, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(tool_clock_name(), "host"));
    clReleaseMemObject(b.buf);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_help_matches_parser),
    HARNESS_TEST(test_parser_accepts_table),
    HARNESS_TEST(test_list_syntax),
    HARNESS_TEST(test_spread),
    HARNESS_TEST(test_spread_and_types_prefill),
    HARNESS_TEST(test_spread_and_types_decode),
    HARNESS_TEST(test_packed_ratios),
    HARNESS_TEST(test_decode_blocks),
    HARNESS_TEST(test_mixed_lengths),
    HARNESS_TEST(test_decode_mixed),
    HARNESS_TEST(test_spread_compare),
    HARNESS_TEST(test_variant_syntax),
    HARNESS_TEST(test_variant_refusals),
    HARNESS_TEST(test_huge_shape_refused),
    HARNESS_TEST(test_error_line),
    HARNESS_TEST(test_output_checked),
    HARNESS_TEST(test_mask_pairs),
    HARNESS_TEST(test_threaded_reference),
    HARNESS_TEST(test_variants_run),
    HARNESS_TEST(test_blocking_call_timed_on_host),
    HARNESS_END
};

static void register_tests(void) { harness_add_suite("bench", tests); }

int main(void) { return harness_run("test_bench", register_tests); }
