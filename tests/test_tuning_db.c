/* test_tuning_db.c -- the tuning database: a round trip through JSON and
 * disk; corrupt, truncated, wrong-typed and empty files (an error naming
 * file and line for the tuner, one warning and the heuristic for the
 * library); the lookup tiers (exact, other driver, stale kernel sources,
 * other device, nearest bucket, system-wide file) as attn_prepare reports
 * them; decode classes per cache kind (int8, a paged cache's block size); concurrent writers losing nothing; and attn_problem_flops, the
 * work the entries' GFLOP/s are counted by. */
#define _XOPEN_SOURCE 700 /* dup2, mkdir, nftw */
#define _DEFAULT_SOURCE   /* setgroups */
#include "harness.h"
#include "core/program.h"
#include "tuning/tuning.h"
#include "attention/decode.h"
#include "attention/plan.h" /* attn_plan_decode */
#include "attention/variants.h"
#include "tuning/tune_shapes.h"

#include <dirent.h>
#include <grp.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers ---- */

static char g_dir[256]; /* a fresh folder per test */

static void fresh_dir(void) { harness_temp_dir(g_dir, sizeof g_dir, "tuning"); }
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

static attn_problem problem(int D, int hq, int hkv, int s)
{
    attn_problem p;
    memset(&p, 0, sizeof p);
    p.batch = 1;
    p.q_heads = hq;
    p.kv_heads = hkv;
    p.head_dim = D;
    p.q_len = p.kv_len = s;
    p.dtype = ATTN_F32;
    p.causal = 1;
    return p;
}

static attn_tuning_entry entry(const attn_device_identity *dev, const char *hash,
                               const attn_problem *p, const char *params)
{
    attn_tuning_entry e;
    memset(&e, 0, sizeof e);
    e.device = *dev;
    snprintf(e.kernel_hash, sizeof e.kernel_hash, "%s", hash);
    snprintf(e.tool_version, sizeof e.tool_version, "0.1.0");
    snprintf(e.date, sizeof e.date, "2024-05-01T12:00:00Z");
    attn_shape_class_of(p, &e.cls);
    e.batch = p->batch;
    e.q_heads = p->q_heads;
    e.kv_heads = p->kv_heads;
    e.q_len = p->q_len;
    e.kv_len = p->kv_len;
    snprintf(e.params, sizeof e.params, "%s", params);
    e.median_ms = 1.25;
    e.gflops = 123.5;
    const attn_time_spread sp = {1.125, 1.1875, 1.25, 1.375, 2.5}, dsp = {1.25, 1.375, 1.5, 1.625, 3.0};
    e.spread = sp;
    e.default_spread = dsp;
    snprintf(e.default_params, sizeof e.default_params, "family=vector,rows=8,keys=32,vec=16");
    e.default_ms = 1.5;
    e.default_gflops = 102.9;
    e.max_error = 3.5e-7;
    e.error_ratio = 0.0125;
    e.level = ATTN_TUNE_LEVEL_FULL;
    e.tested = 17;
    e.rejected = 2;
    return e;
}

static const attn_device_identity fake_dev = {"Fake Platform", "Fake Vendor", "Fake Device",
                                              "1.0", 4};

static int spreads_equal(const attn_time_spread *a, const attn_time_spread *b)
{
    return a->min_ms == b->min_ms && a->q1_ms == b->q1_ms && a->q3_ms == b->q3_ms &&
           a->max_ms == b->max_ms;
}

static int entries_equal(const attn_tuning_entry *a, const attn_tuning_entry *b)
{
    return spreads_equal(&a->spread, &b->spread) &&
           spreads_equal(&a->default_spread, &b->default_spread) && attn_device_exact(&a->device, &b->device) && strcmp(a->kernel_hash, b->kernel_hash) == 0 &&
           strcmp(a->tool_version, b->tool_version) == 0 && strcmp(a->date, b->date) == 0 &&
           attn_shape_class_equal(&a->cls, &b->cls) && a->batch == b->batch &&
           a->q_heads == b->q_heads && a->kv_heads == b->kv_heads && a->q_len == b->q_len &&
           a->kv_len == b->kv_len && strcmp(a->params, b->params) == 0 &&
           a->median_ms == b->median_ms && a->gflops == b->gflops &&
           strcmp(a->default_params, b->default_params) == 0 && a->default_ms == b->default_ms &&
           a->default_gflops == b->default_gflops && a->max_error == b->max_error &&
           a->error_ratio == b->error_ratio && a->level == b->level && a->tested == b->tested &&
           a->rejected == b->rejected && strcmp(a->foreign_class, b->foreign_class) == 0 &&
           strcmp(a->foreign_why, b->foreign_why) == 0 && strcmp(a->extra, b->extra) == 0;
}

/* Runs fn with stderr captured in a file; returns how many lines of it
 * contain `needle`. */
static int count_stderr(void (*fn)(void *), void *arg, const char *needle)
{
    char path[512];
    path_in(path, sizeof path, "stderr.txt");
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CU_ASSERT_FATAL(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    fn(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *text = harness_read_file(path, NULL);
    int n = 0;
    for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n"))
        if (strstr(line, needle)) {
            n++;
            printf("\n  logged: %.200s", line);
        }
    free(text);
    return n;
}

/* ---- round trip ---- */

/* The variants that change the kernel are part of the class: an entry
 * tuned with a window and softcap serves only such problems, plain entries
 * only plain ones; the database keeps them as "variants": "window,softcap"
 * and reads a file without the field (every file before variants) as
 * none; an unknown name is an error naming the field. */
static void test_variant_classes(void)
{
    attn_problem p = problem(64, 8, 2, 2048), pw = p, pm = p;
    pw.use_window = 1, pw.window_left = 512, pw.window_right = -1, pw.softcap = 30.0f;
    pm.use_window = 1, pm.window_left = 512, pm.window_right = -1; /* the window alone */
    attn_shape_class c, cw, cm;
    attn_shape_class_of(&p, &c);
    attn_shape_class_of(&pw, &cw);
    attn_shape_class_of(&pm, &cm);
    CU_ASSERT_EQUAL(c.variants, 0u);
    CU_ASSERT_EQUAL(cw.variants, (unsigned)(ATTN_VARIANT_WINDOW | ATTN_VARIANT_SOFTCAP));
    CU_ASSERT(!attn_shape_class_equal(&c, &cw));
    CU_ASSERT_EQUAL(attn_shape_class_distance(&c, &cw), -1);
    CU_ASSERT_EQUAL(attn_shape_class_distance(&cm, &cw), -1);
    char buf[128];
    attn_shape_class_format(&cw, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "D64 f32 causal g4 q2048 kv2048 +window,softcap");
    attn_shape_class_format(&c, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "D64 f32 causal g4 q2048 kv2048");

    unsigned f = 99;
    char err[1024] = "";
    CU_ASSERT_EQUAL(attn_variant_flags_parse("", &f, err, sizeof err), 0);
    CU_ASSERT_EQUAL(f, 0u);
    CU_ASSERT_EQUAL(attn_variant_flags_parse("sinks,alibi,mask_f16,packed", &f, err, sizeof err), 0);
    CU_ASSERT_EQUAL(f, (unsigned)(ATTN_VARIANT_SINKS | ATTN_VARIANT_ALIBI | ATTN_VARIANT_MASK_F16 |
                                  ATTN_VARIANT_PACKED));
    CU_ASSERT_EQUAL(attn_variant_flags_parse("window,win", &f, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "\"win\""));

    attn_tuning_db db, back;
    attn_tuning_db_init(&db);
    attn_tuning_db_init(&back);
    const attn_tuning_entry e = entry(&fake_dev, "0123456789abcdef", &p,
                                      "family=vector,rows=10,keys=64,vec=16");
    const attn_tuning_entry ew = entry(&fake_dev, "0123456789abcdef", &pw,
                                       "family=tiled,rows=16,keys=32,wg=128,local_kv=1");
    CU_ASSERT_EQUAL(attn_tuning_db_put(&db, &e), 0);
    CU_ASSERT_EQUAL(attn_tuning_db_put(&db, &ew), 0);
    CU_ASSERT_EQUAL(db.count, 2); /* the same shape, two classes */
    char *text = attn_tuning_db_print(&db);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    char *at = strstr(text, "\"variants\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(at);
    CU_ASSERT_PTR_NULL(strstr(at + 1, "\"variants\"")); /* the plain entry has none */
    CU_ASSERT_PTR_NOT_NULL(strstr(at, "\"window,softcap\""));
    CU_ASSERT_EQUAL(attn_tuning_db_parse(text, strlen(text), "mem", &back, err, sizeof err),
                    ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(back.count, 2);
    CU_ASSERT(entries_equal(&back.entries[0], &e));
    CU_ASSERT(entries_equal(&back.entries[1], &ew));

    /* lookup: each class finds its own entry, the window alone neither */
    const attn_tuning_entry *got = NULL;
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&back, &fake_dev, NULL, &cw, &got), ATTN_TIER_EXACT);
    CU_ASSERT(got && strcmp(got->params, ew.params) == 0);
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&back, &fake_dev, NULL, &c, &got), ATTN_TIER_EXACT);
    CU_ASSERT(got && strcmp(got->params, e.params) == 0);
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&back, &fake_dev, NULL, &cm, &got), ATTN_TIER_NONE);
    CU_ASSERT_PTR_NULL(got);
    /* a nearby length still substitutes within the same variants */
    pw.q_len = pw.kv_len = 4096;
    attn_shape_class_of(&pw, &cw);
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&back, &fake_dev, NULL, &cw, &got), ATTN_TIER_EXACT);
    CU_ASSERT(got && strcmp(got->params, ew.params) == 0);

    /* an unknown variant name (a newer attn's?): the file stays usable, the
     * entry is kept whole and never applied, and says why */
    memcpy(strstr(text, "window,softcap"), "window,softcab", 14);
    CU_ASSERT_EQUAL(attn_tuning_db_parse(text, strlen(text), "mem", &back, err, sizeof err),
                    ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(back.count, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(back.entries[1].foreign_class, "\"window,softcab\""));
    char why[256] = "";
    CU_ASSERT_EQUAL(attn_tuning_entry_params(&back.entries[1], NULL, why, sizeof why),
                    ATTN_PARAMS_UNKNOWN);
    CU_ASSERT(strstr(why, "class.variants") && strstr(why, "softcab"));
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&back, &fake_dev, NULL, &cw, &got), ATTN_TIER_NONE);
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&back, &fake_dev, NULL, &c, &got), ATTN_TIER_EXACT);
    free(text);
    attn_tuning_db_free(&db);
    attn_tuning_db_free(&back);
}

/* attn-tune's shapes name the variants given by value (window, softcap,
 * ALiBi's max_bias), each shape then its own class; bad values are named. */
static void test_tune_shape_variants(void)
{
    attn_problem *s = NULL;
    char err[256] = "", buf[160];
    CU_ASSERT_EQUAL_FATAL(tune_shapes_parse("hq=8:hkv=2:d=64:s=2048:window=512:softcap=30,"
                                            "hq=8:d=64:s=1024:full:window=16/4:alibi=8,"
                                            "hq=8:d=64:s=1024",
                                            "--shapes", &s, err, sizeof err), 3);
    CU_ASSERT(s[0].use_window && s[0].window_left == 512 && s[0].window_right == -1);
    CU_ASSERT_EQUAL(s[0].softcap, 30.0f);
    CU_ASSERT(s[1].use_window && s[1].window_left == 16 && s[1].window_right == 4);
    CU_ASSERT_EQUAL(s[1].alibi_max_bias, 8.0f);
    CU_ASSERT(!s[2].use_window && s[2].softcap == 0.0f && s[2].alibi_max_bias == 0.0f);
    attn_shape_class c;
    attn_shape_class_of(&s[0], &c);
    CU_ASSERT_EQUAL(c.variants, (unsigned)(ATTN_VARIANT_WINDOW | ATTN_VARIANT_SOFTCAP));
    attn_shape_class_of(&s[1], &c);
    CU_ASSERT_EQUAL(c.variants, (unsigned)(ATTN_VARIANT_WINDOW | ATTN_VARIANT_ALIBI));
    tune_shape_format(&s[0], buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "B=1 Hq=8 Hkv=2 D=64 S=2048 f32 causal window=512/-1 softcap=30");
    tune_shape_format(&s[1], buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "B=1 Hq=8 Hkv=8 D=64 S=1024 f32 full window=16/4 alibi=8");
    free(s);
    const char *bad[][2] = {{"hq=8:d=64:s=64:window=-2", "window=-2"},
                            {"hq=8:d=64:s=64:window=4/x", "window=4/x"},
                            {"hq=8:d=64:s=64:softcap=0", "softcap=0"},
                            {"hq=8:d=64:s=64:alibi=inf", "alibi=inf"},
                            {"hq=8:d=64:s=64:softcap=0x10", "softcap=0x10"}, /* strtof: 16 */
                            {"hq=8:d=64:s=64:alibi=+8", "alibi=+8"},
                            {"hq=8:d=64:s=64:softcap=1e-50", "softcap=1e-50"}, /* 0 as a float */
                            {"hq=8:d=64:s=64:sinks=1", "unknown field \"sinks\""},
                            {"hq=8:d=64:s=64:hq=16", "hq is given twice"},
                            {"hq=8:d=64:s=64:f16:bf16", "the dtype is given twice"},
                            {"hq=8:d=64:s=64:causal:full", "causal or full is given twice"},
                            {"hq=8:d=64:s=64:f16:fp16", "unknown word \"fp16\""}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s = NULL;
        CU_ASSERT_EQUAL(tune_shapes_parse(bad[i][0], "--shapes", &s, err, sizeof err), -1);
        if (!strstr(err, bad[i][1])) printf("\n  %s: \"%s\"\n", bad[i][0], err);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i][1]));
        free(s);
    }
    /* a file with a NUL (the shapes after it were dropped without a word),
     * and a folder (it said "no shapes given") */
    fresh_dir();
    char path[512];
    path_in(path, sizeof path, "shapes.txt");
    FILE *fp = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    fputs("hq=8:d=64:s=64", fp), fputc(0, fp), fputs("\nhq=16:d=64:s=64\n", fp);
    CU_ASSERT_EQUAL(fclose(fp), 0);
    s = NULL;
    CU_ASSERT_EQUAL(tune_shapes_from_arg(path, &s, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "a NUL byte at offset 14"));
    free(s);
    s = NULL;
    CU_ASSERT_EQUAL(tune_shapes_from_arg(g_dir, &s, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, strerror(EISDIR)));
    free(s);
    remove_dir();
}

/* attn_problem_flops sums each batch entry's visible pairs in closed form
 * (per stretch of queries where the same bounds bind); a per-query count
 * is the truth it must equal, exactly, over lengths, Sq < Skv and Sq >
 * Skv, causal or not, and windows on either side. The largest lengths the
 * library takes cost no more than small ones (the per-query loop it
 * replaced made attn-bench hang). */
static double pairs_by_query(long long ql, long long kl, int causal, long long left, long long right)
{
    double pairs = 0;
    for (long long i = 0; i < ql; i++) {
        const long long pos = i + kl - ql;
        long long lo = left >= 0 ? pos - left : 0, hi = kl - 1;
        if (lo < 0) lo = 0;
        if (causal && pos < hi) hi = pos;
        if (right >= 0 && pos + right < hi) hi = pos + right;
        if (hi >= lo) pairs += (double)(hi - lo + 1);
    }
    return pairs;
}

static void test_problem_flops_closed_form(void)
{
    uint64_t rng = 77;
    int wrong = 0;
    for (int t = 0; t < 20000; t++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        const unsigned r = (unsigned)(rng >> 33);
        const int span = r % 4 == 0 ? 600 : 24;
        attn_problem p = {.batch = 1, .q_heads = 1, .kv_heads = 1, .head_dim = 1,
                          .q_len = 1 + (int)((r >> 2) % span), .kv_len = 1 + (int)((r >> 11) % span),
                          .dtype = ATTN_F32, .causal = (int)((r >> 20) & 1)};
        p.use_window = (r >> 21) % 3 != 0;
        p.window_left = (r >> 23) % 3 == 0 ? -1 : (int)((r >> 5) % (span + 4));
        p.window_right = (r >> 25) % 3 == 0 ? -1 : (int)((r >> 13) % (span + 4));
        const double want = 4.0 * pairs_by_query(p.q_len, p.kv_len, p.causal,
                                                 p.use_window ? p.window_left : -1,
                                                 p.use_window ? p.window_right : -1);
        if (attn_problem_flops(&p, NULL) != want && wrong++ < 5)
            printf("\n  q_len %d kv_len %d causal %d window %d (%d, %d): %.0f, want %.0f\n",
                   p.q_len, p.kv_len, p.causal, p.use_window, p.window_left, p.window_right,
                   attn_problem_flops(&p, NULL), want);
    }
    CU_ASSERT_EQUAL(wrong, 0);
    /* 2^30 queries and keys, causal: n (n + 1) / 2 pairs, at once */
    attn_problem big = {.batch = 1, .q_heads = 1, .kv_heads = 1, .head_dim = 1,
                        .q_len = 1 << 30, .kv_len = 1 << 30, .dtype = ATTN_F32, .causal = 1};
    const double n = (double)(1 << 30);
    CU_ASSERT_DOUBLE_EQUAL(attn_problem_flops(&big, NULL), 4.0 * n * (n + 1) / 2, 1e3);
}

/* attn_problem_flops with a sliding window counts only the pairs inside
 * it: query i at key position pos sees pos - left .. pos + right (and no
 * further than pos when causal); a window wider than the keys, or
 * use_window 0, is no window. */
static void test_problem_flops_window(void)
{
    attn_problem p = {.batch = 1, .q_heads = 1, .kv_heads = 1, .head_dim = 8, .q_len = 6,
                      .kv_len = 6, .dtype = ATTN_F32, .causal = 1, .scale = 0.0f};
    p.use_window = 1, p.window_left = 2, p.window_right = -1;
    CU_ASSERT_EQUAL(attn_problem_flops(&p, NULL), 4.0 * 8 * (1 + 2 + 3 + 3 + 3 + 3));
    p.window_left = 100; /* wider than the keys */
    CU_ASSERT_EQUAL(attn_problem_flops(&p, NULL), 4.0 * 8 * 21);
    p.window_left = 2, p.use_window = 0; /* off: the sides are ignored */
    CU_ASSERT_EQUAL(attn_problem_flops(&p, NULL), 4.0 * 8 * 21);
    p.use_window = 1, p.window_left = 0, p.window_right = 0; /* the diagonal alone */
    CU_ASSERT_EQUAL(attn_problem_flops(&p, NULL), 4.0 * 8 * 6);
    /* not causal, one key either side: 2 + 3 + 3 + 3 + 2 */
    p.causal = 0, p.q_len = p.kv_len = 5, p.window_left = 1, p.window_right = 1;
    CU_ASSERT_EQUAL(attn_problem_flops(&p, NULL), 4.0 * 8 * 13);
    /* right side only, not causal: row i sees 0 .. i + 1 */
    p.window_left = -1;
    CU_ASSERT_EQUAL(attn_problem_flops(&p, NULL), 4.0 * 8 * (2 + 3 + 4 + 5 + 5));
    /* more keys than queries: positions 3 and 4, one key back: 2 each */
    p.causal = 1, p.q_len = 2, p.kv_len = 5, p.window_left = 1, p.window_right = -1;
    CU_ASSERT_EQUAL(attn_problem_flops(&p, NULL), 4.0 * 8 * 4);
    /* with lengths: sequence 1 (3 queries, 3 keys) sees 1, 2, 2 */
    const int q_len[2] = {2, 3}, kv_len[2] = {5, 3};
    const attn_lengths L = {NULL, q_len, NULL, kv_len};
    p.batch = 2;
    CU_ASSERT_EQUAL(attn_problem_flops(&p, &L), 4.0 * 8 * (4 + 5));
    /* the shape: S = 16384 causal, window 4096 back: rows see
     * min(i + 1, 4097) keys */
    attn_problem big = {.batch = 1, .q_heads = 8, .kv_heads = 2, .head_dim = 64, .q_len = 16384,
                        .kv_len = 16384, .dtype = ATTN_F16, .causal = 1, .scale = 0.0f,
                        .use_window = 1, .window_left = 4096, .window_right = -1};
    const double pairs = 4097.0 * 4098.0 / 2.0 + (16384.0 - 4097.0) * 4097.0;
    CU_ASSERT_EQUAL(attn_problem_flops(&big, NULL), 4.0 * 64 * 8 * pairs);
}

/* attn_problem_flops: 4 * D per visible (query, key) pair, over batches and
 * query heads, whatever the key heads are. */
static void test_problem_flops(void)
{
    attn_problem p = {.batch = 2, .q_heads = 8, .kv_heads = 2, .head_dim = 64, .q_len = 100,
                      .kv_len = 300, .dtype = ATTN_F32, .causal = 0, .scale = 0.0f};
    CU_ASSERT_EQUAL(attn_problem_flops(&p, NULL), 4.0 * 64 * 2 * 8 * 100 * 300);
    p.kv_heads = 8; /* GQA or not: the same work */
    CU_ASSERT_EQUAL(attn_problem_flops(&p, NULL), 4.0 * 64 * 2 * 8 * 100 * 300);
    p.kv_heads = 1;
    CU_ASSERT_EQUAL(attn_problem_flops(&p, NULL), 4.0 * 64 * 2 * 8 * 100 * 300);
    /* causal, square: 1 + 2 + 3 + 4 keys */
    const attn_problem sq = {.batch = 1, .q_heads = 1, .kv_heads = 1, .head_dim = 8, .q_len = 4,
                             .kv_len = 4, .dtype = ATTN_F16, .causal = 1, .scale = 0.0f};
    CU_ASSERT_EQUAL(attn_problem_flops(&sq, NULL), 4.0 * 8 * 10);
    /* causal, more keys (bottom-right): rows see 4 and 5 keys */
    const attn_problem off = {.batch = 1, .q_heads = 2, .kv_heads = 1, .head_dim = 16, .q_len = 2,
                              .kv_len = 5, .dtype = ATTN_F32, .causal = 1, .scale = 0.0f};
    CU_ASSERT_EQUAL(attn_problem_flops(&off, NULL), 4.0 * 16 * 2 * 9);
    /* causal, fewer keys: three rows see none, then 1 and 2 */
    const attn_problem few = {.batch = 1, .q_heads = 1, .kv_heads = 1, .head_dim = 4, .q_len = 5,
                              .kv_len = 2, .dtype = ATTN_F32, .causal = 1, .scale = 0.0f};
    CU_ASSERT_EQUAL(attn_problem_flops(&few, NULL), 4.0 * 4 * 3);
    /* padding: each sequence's own lengths (starts do not matter), causal */
    const int q_start[3] = {0, 5, 8}, q_len[3] = {8, 3, 0}, kv_len[3] = {8, 6, 5};
    const attn_problem pad = {.batch = 3, .q_heads = 2, .kv_heads = 1, .head_dim = 32, .q_len = 8,
                              .kv_len = 8, .dtype = ATTN_BF16, .causal = 1, .scale = 0.0f};
    const attn_lengths L = {q_start, q_len, NULL, kv_len};
    CU_ASSERT_EQUAL(attn_problem_flops(&pad, &L), 4.0 * 32 * 2 * (36 + (4 + 5 + 6) + 0));
    /* ... and full, with the keys' lengths only (queries padded) */
    attn_problem padfull = pad;
    padfull.causal = 0;
    const attn_lengths K = {NULL, NULL, NULL, kv_len};
    CU_ASSERT_EQUAL(attn_problem_flops(&padfull, &K), 4.0 * 32 * 2 * 8 * (8 + 6 + 5));
    /* decode: 4 new rows against 10 cached keys see 7, 8, 9 and 10 keys */
    const attn_problem dec = {.batch = 2, .q_heads = 4, .kv_heads = 2, .head_dim = 8, .q_len = 4,
                              .kv_len = 10, .dtype = ATTN_F32, .causal = 1, .scale = 0.0f};
    CU_ASSERT_EQUAL(attn_problem_flops(&dec, NULL), 4.0 * 8 * 4 * 2 * (7 + 8 + 9 + 10));
    /* nothing to count */
    CU_ASSERT_EQUAL(attn_problem_flops(NULL, NULL), 0);
    attn_problem none = p;
    none.batch = 0;
    CU_ASSERT_EQUAL(attn_problem_flops(&none, NULL), 0);
    none = p;
    none.kv_len = -3;
    CU_ASSERT_EQUAL(attn_problem_flops(&none, NULL), 0);
}

/* A decode over an int8 cache has its own class: it never takes a plain
 * decode's entry (nor the reverse), and the database keeps it as
 * "kv_int8": true, refused in a prefill class. */
static void test_int8_decode_class(void)
{
    attn_problem p = problem(128, 32, 8, 16384);
    p.q_len = 1;
    attn_tuning_entry plain = entry(&fake_dev, "0123456789abcdef", &p, "family=vector,rows=4");
    plain.cls.decode = 1;
    attn_tuning_entry q8 = plain;
    q8.cls.kv_int8 = 1;
    CU_ASSERT(!attn_shape_class_equal(&plain.cls, &q8.cls));
    CU_ASSERT_EQUAL(attn_shape_class_distance(&plain.cls, &q8.cls), -1);
    char buf[128];
    attn_shape_class_format(&q8.cls, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "D128 f32 causal g4 q1 kv16384 decode int8");

    attn_tuning_db db, back;
    attn_tuning_db_init(&db);
    attn_tuning_db_init(&back);
    CU_ASSERT_EQUAL(attn_tuning_db_put(&db, &plain), 0);
    CU_ASSERT_EQUAL(attn_tuning_db_put(&db, &q8), 0);
    CU_ASSERT_EQUAL(db.count, 2); /* two classes, not one replaced */
    char *text = attn_tuning_db_print(&db);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"kv_int8\""));
    char err[1024] = "";
    CU_ASSERT_EQUAL(attn_tuning_db_parse(text, strlen(text), "mem", &back, err, sizeof err),
                    ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(back.count, 2);
    CU_ASSERT(entries_equal(&back.entries[0], &plain));
    CU_ASSERT(entries_equal(&back.entries[1], &q8));
    attn_tuning_db_free(&back);
    /* kv_int8 without decode: an error naming the field */
    char *bad = strstr(text, "\"decode\":\ttrue");
    CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
    bad = strstr(bad + 1, "\"decode\":\ttrue"); /* the int8 entry's */
    CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
    char *prefill = malloc(strlen(text) + 2);
    snprintf(prefill, strlen(text) + 2, "%.*s\"decode\":\tfalse%s", (int)(bad - text), text,
             bad + strlen("\"decode\":\ttrue"));
    CU_ASSERT_NOT_EQUAL(attn_tuning_db_parse(prefill, strlen(prefill), "mem", &back, err, sizeof err),
                        ATTN_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "class.kv_int8"));
    free(prefill);
    free(text);
    attn_tuning_db_free(&back);
    attn_tuning_db_free(&db);
}

/* The number of times needle occurs in text. */
static int occurrences(const char *text, const char *needle)
{
    int n = 0;
    for (const char *at = strstr(text, needle); at; at = strstr(at + 1, needle)) n++;
    return n;
}

/* A decode over a paged cache has its own class per block size: the
 * database keeps it as "kv_block": N (a contiguous class writes nothing, so
 * a file written before paged classes reads as contiguous), lookup never
 * crosses block sizes or contiguous and paged, and a bad block size is an
 * error naming the field. */
static void test_paged_decode_class(void)
{
    attn_problem p = problem(128, 32, 8, 4096);
    p.q_len = 1;
    attn_tuning_entry plain = entry(&fake_dev, "0123456789abcdef", &p, "family=vector,rows=4");
    attn_decode_class_of(&p, 0, 0, &plain.cls);
    attn_tuning_entry b16 = plain, b64 = plain, q16 = plain;
    attn_decode_class_of(&p, 16, 0, &b16.cls);
    attn_decode_class_of(&p, 64, 0, &b64.cls);
    attn_decode_class_of(&p, 16, 1, &q16.cls);
    snprintf(b16.params, sizeof b16.params, "family=vector,rows=4,keys=16");
    snprintf(b64.params, sizeof b64.params, "family=vector,rows=4,keys=64");
    snprintf(q16.params, sizeof q16.params, "family=vector,rows=2,keys=16");
    const attn_tuning_entry *all[4] = {&plain, &b16, &b64, &q16};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            CU_ASSERT_EQUAL(attn_shape_class_equal(&all[i]->cls, &all[j]->cls), i == j);
            CU_ASSERT_EQUAL(attn_shape_class_distance(&all[i]->cls, &all[j]->cls) >= 0, i == j);
        }
    char buf[128];
    attn_shape_class_format(&q16.cls, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "D128 f32 causal g4 q1 kv4096 decode int8 block16");

    /* written and read back: the block size kept, none on the contiguous one */
    attn_tuning_db db, back;
    attn_tuning_db_init(&db);
    attn_tuning_db_init(&back);
    for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(attn_tuning_db_put(&db, all[i]), 0);
    CU_ASSERT_EQUAL(db.count, 4);
    char *text = attn_tuning_db_print(&db);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_EQUAL(occurrences(text, "\"kv_block\":\t16"), 2);
    CU_ASSERT_EQUAL(occurrences(text, "\"kv_block\":\t64"), 1);
    char err[1024] = "";
    CU_ASSERT_EQUAL(attn_tuning_db_parse(text, strlen(text), "mem", &back, err, sizeof err),
                    ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(back.count, 4);
    for (int i = 0; i < 4; i++) CU_ASSERT(entries_equal(&back.entries[i], all[i]));
    CU_ASSERT(back.entries[1].cls.kv_block == 16 && back.entries[2].cls.kv_block == 64);

    /* lookup: each class finds its own entry, a block size without one none */
    const attn_tuning_entry *got = NULL;
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(attn_tuning_db_lookup(&back, &fake_dev, NULL, &all[i]->cls, &got),
                        ATTN_TIER_EXACT);
        CU_ASSERT(got && strcmp(got->params, all[i]->params) == 0);
    }
    attn_shape_class b32;
    attn_decode_class_of(&p, 32, 0, &b32);
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&back, &fake_dev, NULL, &b32, &got), ATTN_TIER_NONE);
    attn_tuning_db_free(&back);

    /* a file written before paged classes (no "kv_block"): contiguous */
    attn_tuning_db old;
    attn_tuning_db_init(&old);
    CU_ASSERT_EQUAL(attn_tuning_db_put(&old, &plain), 0);
    char *old_text = attn_tuning_db_print(&old);
    CU_ASSERT_PTR_NOT_NULL_FATAL(old_text);
    CU_ASSERT_PTR_NULL(strstr(old_text, "kv_block"));
    CU_ASSERT_EQUAL(attn_tuning_db_parse(old_text, strlen(old_text), "old", &back, err,
                                         sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(back.count, 1);
    CU_ASSERT_EQUAL(back.entries[0].cls.kv_block, 0);
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&back, &fake_dev, NULL, &plain.cls, &got),
                    ATTN_TIER_EXACT);
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&back, &fake_dev, NULL, &b16.cls, &got),
                    ATTN_TIER_NONE);
    attn_tuning_db_free(&back);
    free(old_text);
    attn_tuning_db_free(&old);

    /* refused: not a power of two, in a prefill class (the b64 entry's
     * "decode" false); a power of two outside this build's range (a newer
     * attn's?) is kept, never applied */
    char *b64_at = strstr(text, "\"kv_block\":\t64"), *decode_at = NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(b64_at);
    for (char *at = strstr(text, "\"decode\":\ttrue"); at && at < b64_at;
         at = strstr(at + 1, "\"decode\":\ttrue"))
        decode_at = at;
    CU_ASSERT_PTR_NOT_NULL_FATAL(decode_at);
    static const struct { const char *to, *why; attn_status st; } bad[] = {
        {"\"kv_block\":\t48", "class.kv_block", ATTN_ERROR_TUNING_DB},
        {"\"kv_block\":\t512", "class.kv_block 512 is outside this attn's 16..256", ATTN_SUCCESS},
        {"\"decode\":\tfalse", "class.kv_block", ATTN_ERROR_TUNING_DB},
    };
    for (int i = 0; i < 3; i++) {
        char *at = i < 2 ? b64_at : decode_at;
        const size_t len = strlen(i < 2 ? "\"kv_block\":\t64" : "\"decode\":\ttrue");
        const size_t n = strlen(text) + 8;
        char *doctored = malloc(n);
        snprintf(doctored, n, "%.*s%s%s", (int)(at - text), text, bad[i].to, at + len);
        err[0] = 0;
        CU_ASSERT_EQUAL(attn_tuning_db_parse(doctored, strlen(doctored), "mem", &back, err,
                                             sizeof err), bad[i].st);
        for (size_t k = 0; k < back.count; k++) /* the kept one's why */
            if (back.entries[k].foreign_why[0])
                attn_tuning_entry_params(&back.entries[k], NULL, err, sizeof err);
        if (!strstr(err, bad[i].why)) printf("\n  case %d: %s", i, err);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i].why));
        attn_tuning_db_free(&back);
        free(doctored);
    }
    free(text);
    attn_tuning_db_free(&db);
}

static void test_round_trip(void)
{
    fresh_dir();
    attn_tuning_db db, back;
    attn_tuning_db_init(&db);
    attn_tuning_db_init(&back);
    attn_problem p1 = problem(64, 8, 2, 2048), p2 = problem(128, 32, 8, 1000);
    p2.dtype = ATTN_BF16;
    p2.causal = 0;
    attn_tuning_entry e1 = entry(&fake_dev, "0123456789abcdef", &p1,
                                 "family=vector,rows=10,keys=64,vec=16");
    attn_tuning_entry e2 = entry(&fake_dev, "fedcba9876543210", &p2,
                                 "family=tiled,rows=16,keys=32,wg=128,local_kv=1");
    e2.level = ATTN_TUNE_LEVEL_QUICK;
    memset(&e2.spread, 0, sizeof e2.spread); /* written before spreads were: none */
    memset(&e2.default_spread, 0, sizeof e2.default_spread);
    snprintf(e2.device.name, sizeof e2.device.name, "Name with \"quotes\" and \\ and ünïcode");
    CU_ASSERT_EQUAL(attn_tuning_db_put(&db, &e1), 0);
    CU_ASSERT_EQUAL(attn_tuning_db_put(&db, &e2), 0);
    CU_ASSERT_EQUAL(db.count, 2);
    CU_ASSERT_EQUAL(e2.cls.kv_bucket, 1024); /* 1000 is nearest 1024 */

    /* text */
    char *text = attn_tuning_db_print(&db);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    char err[1024] = "";
    CU_ASSERT_EQUAL(attn_tuning_db_parse(text, strlen(text), "mem", &back, err, sizeof err),
                    ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(back.count, 2);
    CU_ASSERT(entries_equal(&back.entries[0], &e1));
    CU_ASSERT(entries_equal(&back.entries[1], &e2));
    free(text);

    /* disk, into a folder that does not exist yet */
    char path[512];
    path_in(path, sizeof path, "sub/dir/tuning.json");
    CU_ASSERT_EQUAL(attn_tuning_db_save(path, &db, err, sizeof err), ATTN_SUCCESS);
    int missing = 1;
    CU_ASSERT_EQUAL(attn_tuning_db_load(path, &back, &missing, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(missing, 0);
    CU_ASSERT_EQUAL_FATAL(back.count, 2);
    CU_ASSERT(entries_equal(&back.entries[0], &e1));
    CU_ASSERT(entries_equal(&back.entries[1], &e2));

    /* put replaces the same device and class; merging adds the rest */
    attn_tuning_entry e3 = e1;
    snprintf(e3.params, sizeof e3.params, "family=vector,rows=12,keys=32,vec=16");
    attn_tuning_entry e4 = e1;
    snprintf(e4.device.driver, sizeof e4.device.driver, "2.0"); /* another driver: kept apart */
    attn_tuning_entry more[2] = {e3, e4};
    CU_ASSERT_EQUAL(attn_tuning_db_merge_file(path, more, 2, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_tuning_db_load(path, &back, NULL, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(back.count, 3);
    CU_ASSERT(entries_equal(&back.entries[0], &e3));
    CU_ASSERT(entries_equal(&back.entries[2], &e4));

    /* an entry with a tunable this build does not know (a newer attn wrote
     * it) is kept through a merge, and never applied */
    attn_problem p3 = problem(32, 4, 4, 512);
    attn_tuning_entry e5 = entry(&fake_dev, "0123456789abcdef", &p3,
                                 "family=vector,rows=8,keys=32,vec=16,from_the_future=3");
    CU_ASSERT_EQUAL(attn_tuning_db_merge_file(path, &e5, 1, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_tuning_db_load(path, &back, NULL, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(back.count, 4);
    CU_ASSERT(entries_equal(&back.entries[3], &e5));
    attn_shape_class c3;
    attn_shape_class_of(&p3, &c3);
    const attn_tuning_entry *found;
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&back, &fake_dev, NULL, &c3, &found), ATTN_TIER_NONE);
    attn_shape_class_of(&p1, &c3);
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&back, &fake_dev, NULL, &c3, &found), ATTN_TIER_EXACT);

    /* so is one of a family this build does not know, a value beyond its
     * range, or a tunable its family lacks here (a newer attn gave it one;
     * an override may carry one for another family, an entry may not):
     * kept, listed, never applied; the file stays usable */
    const char *newer[] = {"family=newfam,rows=8", "family=9,rows=8",
                           "family=vector,rows=8,keys=1048576,vec=16",
                           "family=vector,rows=8,keys=32,vec=16,wg=64"};
    for (int i = 0; i < 4; i++) {
        attn_problem pn = problem(48 + 32 * i, 2, 2, 256); /* no other entry of its D */
        attn_tuning_entry en = entry(&fake_dev, "0123456789abcdef", &pn, newer[i]);
        CU_ASSERT_EQUAL(attn_tuning_db_merge_file(path, &en, 1, err, sizeof err), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(attn_tuning_db_load(path, &back, NULL, err, sizeof err), ATTN_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(back.count, (size_t)5 + i);
        CU_ASSERT(entries_equal(&back.entries[4 + i], &en));
        char why[256] = "";
        CU_ASSERT_EQUAL(attn_tuning_entry_params(&en, NULL, why, sizeof why), ATTN_PARAMS_UNKNOWN);
        printf("\n  %s: %s", newer[i], why);
        attn_shape_class_of(&pn, &c3);
        CU_ASSERT_EQUAL(attn_tuning_db_lookup(&back, &fake_dev, NULL, &c3, &found), ATTN_TIER_NONE);
    }

    /* a missing file is an empty database, and so is {} */
    path_in(path, sizeof path, "none.json");
    CU_ASSERT_EQUAL(attn_tuning_db_load(path, &back, &missing, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(missing, 1);
    CU_ASSERT_EQUAL(back.count, 0);
    CU_ASSERT_EQUAL(attn_tuning_db_parse("{}", 2, "mem", &back, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(back.count, 0);

    /* nothing but the database is left in the folder (no lock file) */
    char sub[512];
    path_in(sub, sizeof sub, "sub/dir");
    DIR *d = opendir(sub);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    int files = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        if (de->d_name[0] != '.') {
            files++;
            CU_ASSERT_STRING_EQUAL(de->d_name, "tuning.json");
        }
    closedir(d);
    CU_ASSERT_EQUAL(files, 1);
    attn_tuning_db_free(&db);
    attn_tuning_db_free(&back);
    remove_dir();
}

/* ---- corrupt files ---- */

typedef struct bad_case {
    const char *name, *text;
    const char *expect; /* in the message, after "FILE:" */
} bad_case;

/* A valid file, line by line, to break in several ways. */
static const char *good_text(void)
{
    return "{\n"
           "  \"format\": \"attn-tuning-db\",\n"
           "  \"version\": 1,\n"
           "  \"entries\": [\n"
           "    {\"device\": {\"platform\": \"P\", \"vendor\": \"V\", \"name\": \"N\",\n"
           "                \"driver\": \"1\", \"compute_units\": 2},\n"
           "     \"kernel_hash\": \"0000000000000000\",\n"
           "     \"class\": {\"head_dim\": 16, \"dtype\": \"f32\", \"causal\": true,\n"
           "               \"group\": 2, \"q_bucket\": 64, \"kv_bucket\": 64},\n"
           "     \"params\": \"family=vector,rows=4,keys=32,vec=16\"},\n"
           "    {\"device\": {\"platform\": \"P\", \"vendor\": \"V\", \"name\": \"N\",\n"
           "                \"driver\": \"1\", \"compute_units\": 2},\n"
           "     \"kernel_hash\": \"0000000000000000\",\n"
           "     \"class\": {\"head_dim\": 16, \"dtype\": \"f32\", \"causal\": true,\n"
           "               \"group\": 2, \"q_bucket\": 128, \"kv_bucket\": 128},\n"
           "     \"params\": \"family=vector,rows=4,keys=32,vec=16\"}\n"
           "  ]\n"
           "}\n";
}

static char *replace(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    CU_ASSERT_PTR_NOT_NULL_FATAL(at);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

/* A raw NUL is refused wherever it is (cJSON took one before the object
 * as white space); an escaped backslash before u0000 is no NUL. The file's
 * own top-level members beside format, version and entries (a comment, a
 * newer attn's) survive a merge, as an entry's unknown fields do: they
 * were dropped without a word. */
static void test_text_only_and_top_level_kept(void)
{
    fresh_dir();
    attn_tuning_db db;
    attn_tuning_db_init(&db);
    char err[1024] = "";
    const char raw[] = "\0{\"format\": \"attn-tuning-db\", \"entries\": []}";
    CU_ASSERT_EQUAL(attn_tuning_db_parse(raw, sizeof raw - 1, "raw", &db, err, sizeof err),
                    ATTN_ERROR_TUNING_DB);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "raw:1:1: a NUL character"));
    const char *kept = "{\"format\": \"attn-tuning-db\", \"comment\": \"keep me \\\\u0000\", "
                       "\"entries\": [], \"future\": {\"x\": [1, 2]}}";
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_parse(kept, strlen(kept), "kept", &db, err, sizeof err),
                          ATTN_SUCCESS);
    char path[512];
    path_in(path, sizeof path, "tuning.json");
    write_file(path, kept);
    attn_device_identity dev = {0};
    snprintf(dev.name, sizeof dev.name, "N");
    const attn_problem p = problem(16, 2, 1, 64);
    const attn_tuning_entry e = entry(&dev, "0000000000000000", &p, "family=vector,rows=4");
    CU_ASSERT_EQUAL(attn_tuning_db_merge_file(path, &e, 1, err, sizeof err), ATTN_SUCCESS);
    char *text = harness_read_file(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"comment\":\t\"keep me \\\\u0000\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"future\":"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "family=vector,rows=4"));
    attn_tuning_db_free(&db);
    CU_ASSERT_EQUAL(attn_tuning_db_parse(text, strlen(text), "back", &db, err, sizeof err),
                    ATTN_SUCCESS);
    CU_ASSERT_EQUAL(db.count, 1);
    free(text);
    attn_tuning_db_free(&db);
    remove_dir();
}

/* The problem, and the database attn_context_set_tuning_db names. */
typedef struct { const attn_problem *p; const char *db; } heuristic_case;

static void prepare_heuristic(void *arg)
{
    const heuristic_case *hc = arg;
    const attn_problem *p = hc->p;
    /* two contexts, two plans each: still one warning */
    for (int i = 0; i < 2; i++) {
        attn_context *ctx = NULL;
        CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &ctx), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(attn_context_set_tuning_db(ctx, hc->db, ""), ATTN_SUCCESS);
        attn_plan_info info;
        for (int j = 0; j < 2; j++) {
            CU_ASSERT_EQUAL(attn_prepare(ctx, p, &info), ATTN_SUCCESS);
            CU_ASSERT_STRING_EQUAL(info.source, "heuristic");
        }
        attn_context_release(ctx);
    }
}

/* Dedupe of many entries (a file of thousands, or an --import) gives what
 * put of each in turn gives: the first one's place, the last one's value;
 * and so does reading a file that holds the twins. */
static int same_entries(const attn_tuning_db *a, const attn_tuning_db *b)
{
    int same = a->count == b->count;
    for (size_t i = 0; same && i < a->count; i++) same = entries_equal(&a->entries[i], &b->entries[i]);
    return same;
}

static void test_dedupe_as_put(void)
{
    attn_tuning_db by_put, all, back;
    attn_tuning_db_init(&by_put);
    attn_tuning_db_init(&all);
    attn_tuning_db_init(&back);
    unsigned seed = 12345;
    for (int i = 0; i < 3000; i++) {
        seed = seed * 1103515245u + 12345u;
        const unsigned r = seed >> 8;
        attn_device_identity dev = fake_dev;
        snprintf(dev.driver, sizeof dev.driver, "%u.0", r % 3);
        dev.compute_units = 4 + (r >> 2) % 2;
        attn_problem p = problem(16 << ((r >> 3) % 4), 4, 1 << ((r >> 5) % 3), 64 << ((r >> 7) % 5));
        p.causal = (r >> 10) & 1;
        attn_tuning_entry e = entry(&dev, "0123456789abcdef", &p, "family=vector,rows=8");
        e.tested = i; /* which one it was */
        CU_ASSERT_EQUAL_FATAL(attn_tuning_db_put(&by_put, &e), 0);
        CU_ASSERT_EQUAL_FATAL(attn_tuning_db_append(&all, &e), 0);
    }
    printf("\n  3000 entries, %zu slots", by_put.count);
    CU_ASSERT(by_put.count > 100 && by_put.count < 1000);
    char *text = attn_tuning_db_print(&all);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    char err[1024] = "";
    CU_ASSERT_EQUAL(attn_tuning_db_parse(text, strlen(text), "twins", &back, err, sizeof err),
                    ATTN_SUCCESS);
    CU_ASSERT(same_entries(&back, &by_put));
    CU_ASSERT_EQUAL(all.count, 3000);
    CU_ASSERT_EQUAL(attn_tuning_db_dedupe(&all), 0);
    CU_ASSERT(same_entries(&all, &by_put));
    free(text);
    attn_tuning_db_free(&by_put);
    attn_tuning_db_free(&all);
    attn_tuning_db_free(&back);
}

/* A database that is a symbolic link (a dotfile kept elsewhere) is updated
 * where the link points, the link kept; and the file keeps its mode. */
static void test_save_through_link(void)
{
    fresh_dir();
    char real[512], link[512], err[1024] = "";
    path_in(real, sizeof real, "real.json");
    path_in(link, sizeof link, "link.json");
    write_file(real, "{}\n");
    CU_ASSERT_EQUAL_FATAL(chmod(real, 0600), 0);
    CU_ASSERT_EQUAL_FATAL(symlink("real.json", link), 0);
    attn_problem p = problem(64, 8, 2, 512);
    attn_tuning_entry e = entry(&fake_dev, "0123456789abcdef", &p, "family=vector,rows=8");
    CU_ASSERT_EQUAL(attn_tuning_db_merge_file(link, &e, 1, err, sizeof err), ATTN_SUCCESS);
    struct stat st;
    CU_ASSERT(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    CU_ASSERT(stat(real, &st) == 0 && (st.st_mode & 07777) == 0600);
    attn_tuning_db db;
    attn_tuning_db_init(&db);
    CU_ASSERT_EQUAL(attn_tuning_db_load(real, &db, NULL, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(db.count, 1);
    attn_tuning_db_free(&db);
    /* a link to a file not made yet: the file is made where it points */
    char later[512], dangling[512];
    path_in(later, sizeof later, "later.json");
    path_in(dangling, sizeof dangling, "dangling.json");
    CU_ASSERT_EQUAL_FATAL(symlink("later.json", dangling), 0);
    CU_ASSERT_EQUAL(attn_tuning_db_merge_file(dangling, &e, 1, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT(lstat(dangling, &st) == 0 && S_ISLNK(st.st_mode));
    CU_ASSERT(stat(later, &st) == 0 && S_ISREG(st.st_mode));
    remove_dir();
}

/* One entry of fake_dev's as a newer attn might write it: `cls` the class
 * object's members, `more` members after params ("" or starting with ","). */
static void foreign_entry(char *buf, size_t size, const char *cls, const char *params,
                          const char *more)
{
    snprintf(buf, size,
             "{\"device\": {\"platform\": \"%s\", \"vendor\": \"%s\", \"name\": \"%s\", "
             "\"driver\": \"%s\", \"compute_units\": %u},\n"
             " \"kernel_hash\": \"0123456789abcdef\", \"class\": {%s},\n"
             " \"params\": \"%s\"%s}",
             fake_dev.platform, fake_dev.vendor, fake_dev.name, fake_dev.driver,
             fake_dev.compute_units, cls, params, more);
}

/* What a newer attn may write and this build cannot read: a class with a
 * field, storage type, head dim or variant it does not know, and fields
 * beside the ones it reads. The file stays usable; such a class is kept
 * whole, listed with why, never applied and never taken for the class it
 * resembles; a merge writes everything back as it was. */
static void test_foreign_entries(void)
{
    fresh_dir();
    const char *known = "\"head_dim\": 64, \"dtype\": \"f32\", \"causal\": true, \"group\": 4, "
                        "\"q_bucket\": 2048, \"kv_bucket\": 2048";
    static const struct { const char *cls_tail, *why; } newer[] = {
        {", \"kv_fp8\": true", "class field \"kv_fp8\" is unknown"}, /* else: known's twin */
        {"", "class.dtype \"fp8\" is unknown"},
        {"", "class.head_dim 512 is beyond this attn's 256"},
        {", \"variants\": \"window,chunked\"", "unknown variant \"chunked\""},
    };
    char e[5][1024], cls[512];
    foreign_entry(e[0], sizeof e[0], known, "family=vector,rows=8",
                  ", \"notes\": \"kept\", "
                  "\"shape\": {\"batch\": 1, \"q_heads\": 8, \"kv_heads\": 2, \"q_len\": 2048, "
                  "\"kv_len\": 2048, \"pages\": [1, 2]}");
    char *cu = strstr(e[0], "\"compute_units\": 4}"); /* and one in the device */
    CU_ASSERT_PTR_NOT_NULL_FATAL(cu);
    char tail[1024];
    snprintf(tail, sizeof tail, "%s", cu + strlen("\"compute_units\": 4}"));
    snprintf(cu, sizeof e[0] - (size_t)(cu - e[0]), "\"compute_units\": 4, \"uuid\": \"GPU-1\"}%s",
             tail);
    for (int i = 0; i < 4; i++) {
        snprintf(cls, sizeof cls, "%s%s", known, newer[i].cls_tail);
        if (i == 1) memcpy(strstr(cls, "\"f32\""), "\"fp8\"", 5);
        if (i == 2) snprintf(cls, sizeof cls, "\"head_dim\": 512%s", strchr(known, ','));
        foreign_entry(e[1 + i], sizeof e[1 + i], cls, "family=tiled,rows=16", "");
    }
    char text[8192];
    snprintf(text, sizeof text,
             "{\"format\": \"attn-tuning-db\", \"version\": 1, \"entries\": [\n%s,\n%s,\n%s,\n%s,\n%s]}\n",
             e[0], e[1], e[2], e[3], e[4]);
    attn_tuning_db db, back;
    attn_tuning_db_init(&db);
    attn_tuning_db_init(&back);
    char err[1024] = "";
    const attn_status st = attn_tuning_db_parse(text, strlen(text), "mem", &db, err, sizeof err);
    if (st != ATTN_SUCCESS) printf("\n  %s", err);
    CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(db.count, 5);
    /* the known class applies, with its own params, and keeps its extras */
    attn_problem p = problem(64, 8, 2, 2048);
    attn_shape_class c;
    attn_shape_class_of(&p, &c);
    const attn_tuning_entry *got = NULL;
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&db, &fake_dev, NULL, &c, &got), ATTN_TIER_EXACT);
    CU_ASSERT(got == &db.entries[0]);
    CU_ASSERT_STRING_EQUAL(db.entries[0].foreign_class, "");
    CU_ASSERT_STRING_EQUAL(db.entries[0].extra, "{\"device\":{\"uuid\":\"GPU-1\"},"
                                                "\"shape\":{\"pages\":[1,2]},\"notes\":\"kept\"}");
    for (int i = 0; i < 4; i++) {
        const attn_tuning_entry *f = &db.entries[1 + i];
        char why[256] = "";
        CU_ASSERT_EQUAL(attn_tuning_entry_params(f, NULL, why, sizeof why), ATTN_PARAMS_UNKNOWN);
        printf("\n  %s: %s", f->foreign_class, why);
        CU_ASSERT_PTR_NOT_NULL(strstr(why, newer[i].why));
        CU_ASSERT_PTR_NOT_NULL(strstr(f->foreign_class, "\"q_bucket\":2048"));
        CU_ASSERT_EQUAL(f->cls.head_dim, 0);
    }

    /* a merge into the file keeps them all, as they were */
    char path[512];
    path_in(path, sizeof path, "newer.json");
    write_file(path, text);
    attn_problem p2 = problem(32, 4, 4, 512);
    attn_tuning_entry other = entry(&fake_dev, "0123456789abcdef", &p2, "family=vector,rows=4");
    CU_ASSERT_EQUAL(attn_tuning_db_merge_file(path, &other, 1, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_tuning_db_load(path, &back, NULL, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(back.count, 6);
    for (int i = 0; i < 5; i++) CU_ASSERT(entries_equal(&back.entries[i], &db.entries[i]));
    CU_ASSERT(entries_equal(&back.entries[5], &other));
    char *a = attn_tuning_db_print(&db), *b = attn_tuning_db_print(&back);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT(strncmp(a, b, strlen(a) - 8) == 0); /* the same five first */
    CU_ASSERT_PTR_NOT_NULL(strstr(a, "\"uuid\":\t\"GPU-1\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(a, "\"pages\":\t[1, 2]"));
    free(a);
    free(b);
    /* the known class's entry replaced: its twin with kv_fp8 stays */
    attn_tuning_entry mine = entry(&fake_dev, "0123456789abcdef", &p, "family=vector,rows=4");
    CU_ASSERT_EQUAL(attn_tuning_db_merge_file(path, &mine, 1, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_tuning_db_load(path, &back, NULL, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(back.count, 6);
    CU_ASSERT(entries_equal(&back.entries[0], &mine));
    CU_ASSERT(entries_equal(&back.entries[1], &db.entries[1]));

    /* what is too long to keep is read (and, in a known class, used), but
     * no database holding it is written: that would drop it */
    char long_value[600];
    memset(long_value, 'x', sizeof long_value - 1);
    long_value[sizeof long_value - 1] = 0;
    char one[2048];
    for (int i = 0; i < 2; i++) {
        char more[700] = "";
        if (i == 0) snprintf(cls, sizeof cls, "%s, \"later\": \"%.400s\"", known, long_value);
        else snprintf(cls, sizeof cls, "%s", known);
        if (i == 1) snprintf(more, sizeof more, ", \"notes\": \"%s\"", long_value);
        foreign_entry(one, sizeof one, cls, "family=vector,rows=8", more);
        snprintf(text, sizeof text, "{\"entries\": [%s]}", one);
        CU_ASSERT_EQUAL(attn_tuning_db_parse(text, strlen(text), "mem", &back, err, sizeof err),
                        ATTN_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(back.count, 1);
        CU_ASSERT_EQUAL(back.entries[0].lost, 1);
        CU_ASSERT_EQUAL(attn_tuning_db_lookup(&back, &fake_dev, NULL, &c, &got),
                        i == 0 ? ATTN_TIER_NONE : ATTN_TIER_EXACT);
        write_file(path, text);
        CU_ASSERT_EQUAL(attn_tuning_db_merge_file(path, &other, 1, err, sizeof err),
                        ATTN_ERROR_TUNING_DB);
        printf("\n  too long (%s): %s", i ? "fields" : "class", err);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "not written"));
        char *kept = harness_read_file(path, NULL); /* the file as it was */
        CU_ASSERT(kept && strcmp(kept, text) == 0);
        free(kept);
    }
    /* two such classes of one device stay two slots */
    char two[2][2048];
    for (int i = 0; i < 2; i++) {
        snprintf(cls, sizeof cls, "%s, \"later\": \"%d%.400s\"", known, i, long_value);
        foreign_entry(two[i], sizeof two[i], cls, "family=vector,rows=8", "");
    }
    snprintf(text, sizeof text, "{\"entries\": [%s, %s]}", two[0], two[1]);
    CU_ASSERT_EQUAL(attn_tuning_db_parse(text, strlen(text), "mem", &back, err, sizeof err),
                    ATTN_SUCCESS);
    CU_ASSERT_EQUAL(back.count, 2);
    /* a class whose known fields are wrong is corrupt, an unknown field
     * beside them or not */
    static const struct { const char *cls, *expect; } corrupt[] = {
        {"\"head_dim\": 64, \"dtype\": 5, \"causal\": true, \"group\": 4, \"q_bucket\": 64, "
         "\"kv_bucket\": 64", "\"dtype\" must be a string"},
        {"\"head_dim\": \"x\", \"hed_dim\": 64, \"dtype\": \"f32\", \"causal\": true, "
         "\"group\": 4, \"q_bucket\": 64, \"kv_bucket\": 64", "\"head_dim\" must be a number"},
        {"\"dtype\": \"f32\", \"causal\": true, \"group\": 4, \"q_bucket\": 64, "
         "\"kv_bucket\": 64, \"head_dims\": 64", "\"head_dim\" is missing"},
    };
    for (int i = 0; i < 3; i++) {
        foreign_entry(one, sizeof one, corrupt[i].cls, "family=vector,rows=8", "");
        snprintf(text, sizeof text, "{\"entries\": [%s]}", one);
        CU_ASSERT_EQUAL(attn_tuning_db_parse(text, strlen(text), "mem", &back, err, sizeof err),
                        ATTN_ERROR_TUNING_DB);
        printf("\n  corrupt: %s", err);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, corrupt[i].expect));
        CU_ASSERT_EQUAL(back.count, 0);
    }
    attn_tuning_db_free(&db);
    attn_tuning_db_free(&back);
    remove_dir();
}

static void test_corrupt_files(void)
{
    fresh_dir();
    const char *good = good_text();
    char *truncated = strndup(good, strlen(good) * 2 / 3);
    char *syntax = replace(good, "\"kernel_hash\": \"0000000000000000\",\n     \"class\"",
                           "\"kernel_hash\": \"0000000000000000\"\n     \"class\"");
    char *wrong_cu = replace(good, "\"compute_units\": 2}", "\"compute_units\": \"two\"}");
    char *wrong_second = replace(strstr(good, "    {\"device\"") ? good : good,
                                 "\"q_bucket\": 128", "\"q_bucket\": true");
    char *wrong_params = replace(good, "rows=4,keys=32,vec=16\"},", "rows=4,keys=32,vec=sixteen\"},");
    char *missing_params = replace(good, ",\n     \"params\": \"family=vector,rows=4,keys=32,vec=16\"}\n  ]", "}\n  ]");
    char *entries_obj = replace(good, "\"entries\": [", "\"entries\": {\"x\": [");
    char *fixed_obj = replace(entries_obj, "  ]\n}", "  ]}\n}");
    /* a key given twice inside an entry: the reader would take the first,
     * most JSON tools the last */
    char *causal_twice = replace(good, "\"causal\": true,\n               \"group\": 2, "
                                 "\"q_bucket\": 128", "\"causal\": true, \"causal\": false,\n"
                                 "               \"group\": 2, \"q_bucket\": 128");
    char *bucket_3000 = replace(good, "\"q_bucket\": 128", "\"q_bucket\": 3000");
    char *params_twice = replace(good, "vec=16\"},\n    {",
                                 "vec=16\", \"params\": \"family=tiled\"},\n    {");
    /* cJSON would cut the string at the NUL: driver "1" matching exactly */
    char *nul_escape = replace(good, "\"driver\": \"1\"", "\"driver\": \"1\\u0000x\"");
    /* a wide object (found by sorting: pairwise, 80000 members took 7 s)
     * with one name twice */
    char wide_obj[4096] = "\"zz\": {";
    for (int i = 0; i < 200; i++)
        snprintf(wide_obj + strlen(wide_obj), sizeof wide_obj - strlen(wide_obj), "\"m%d\": %d, ",
                 i, i);
    const char *last = "\"params\": \"family=vector,rows=4,keys=32,vec=16\"}\n  ]";
    snprintf(wide_obj + strlen(wide_obj), sizeof wide_obj - strlen(wide_obj),
             "\"m150\": 0},\n     %s", last);
    char *wide = replace(good, last, wide_obj);
    /* deeper than cJSON reads: it said only "not valid JSON" */
    char deep[2300];
    const int at = snprintf(deep, sizeof deep, "{\"format\": \"attn-tuning-db\", \"x\": ");
    memset(deep + at, '[', 1100);
    memset(deep + at + 1100, ']', 1100);
    snprintf(deep + at + 2200, sizeof deep - (size_t)at - 2200, "}");
    const bad_case cases[] = {
        {"empty.json", "", ":1: the file is empty"},
        {"blank.json", "  \n\n ", ":1: the file is empty"},
        {"truncated.json", truncated, "truncated"},
        {"syntax.json", syntax, ":8:"}, /* the missing comma shows at the next key */
        {"toplevel.json", "[1, 2]\n", ":1: the top level must be an object"},
        {"wrong_cu.json", wrong_cu, ":5: entry 0: \"compute_units\" must be a number"},
        {"wrong_second.json", wrong_second, ":11: entry 1: \"q_bucket\" must be a number"},
        {"wrong_params.json", wrong_params, ":5: entry 0: \"params\": vec=sixteen"},
        {"missing_params.json", missing_params, ":11: entry 1: \"params\" is missing"},
        {"entries_obj.json", fixed_obj, ":4: \"entries\" must be an array"},
        {"format.json", "{\"format\": \"something else\", \"entries\": []}", "not a tuning database"},
        {"binary.json", "\x01\x02\xff{", ":1:3: not valid JSON"},
        /* two files pasted together: the next merge would drop the second */
        {"pasted.json", "{}\n{\"entries\": []}\n", ":2:1: text after the end of the JSON"},
        {"tail.json", "{\"entries\": []} junk", ":1:17: text after the end of the JSON"},
        {"twice.json", "{} {}", ":1:4: text after"},
        /* another program's JSON (no "format"): the next tune replaced it */
        {"other.json", "{\"name\": \"my settings\", \"entries\": []}",
         ":1: no \"format\": \"attn-tuning-db\", and a member \"name\""},
        {"entries_twice.json", "{\"format\": \"attn-tuning-db\", \"entries\": [], "
         "\"entries\": []}", ":1: \"entries\" is given twice"},
        {"twice_later.json", "{\"format\": \"attn-tuning-db\", \"note\": 1, \"entries\": [], "
         "\"entries\": []}", ":1: \"entries\" is given twice"},
        {"causal_twice.json", causal_twice, ":11: entry 1: \"causal\" is given twice"},
        {"bucket_3000.json", bucket_3000,
         ":11: entry 1: \"class.q_bucket\" must be a power of two"},
        {"params_twice.json", params_twice, ":5: entry 0: \"params\" is given twice"},
        {"nul_escape.json", nul_escape, ":6:29: a NUL character"},
        {"wide.json", wide, ": entry 1: \"m150\" is given twice"},
        {"deep.json", deep, "nested deeper than the 1000 levels read"},
    };
    attn_problem p = problem(16, 2, 1, 64);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512], err[1024] = "";
        path_in(path, sizeof path, cases[i].name);
        write_file(path, cases[i].text);
        attn_tuning_db db;
        attn_tuning_db_init(&db);
        attn_status st = attn_tuning_db_load(path, &db, NULL, err, sizeof err);
        printf("\n  %s: %s: %s", cases[i].name, attn_status_name(st), err);
        CU_ASSERT_EQUAL(st, ATTN_ERROR_TUNING_DB);
        CU_ASSERT_EQUAL(db.count, 0);
        CU_ASSERT(strncmp(err, path, strlen(path)) == 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, cases[i].expect));
        if (!strstr(err, cases[i].expect)) printf("\n  (expected \"%s\")", cases[i].expect);
        attn_tuning_db_free(&db);
    }
    /* the library: one warning, then the heuristic, for every kind */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        path_in(path, sizeof path, cases[i].name);
        heuristic_case hc = {&p, path};
        CU_ASSERT_EQUAL(count_stderr(prepare_heuristic, &hc, "tuning database unusable"), 1);
    }
    /* more entries than a database may hold: refused before they are read
     * (each would take about 2.7 KB, once per context) */
    {
        const int n = ATTN_TUNING_DB_MAX_ENTRIES + 1;
        char *many = malloc((size_t)n * 3 + 64);
        CU_ASSERT_PTR_NOT_NULL_FATAL(many);
        size_t at = (size_t)sprintf(many, "{\"format\": \"%s\", \"entries\": [",
                                    ATTN_TUNING_DB_FORMAT);
        for (int i = 0; i < n; i++) at += (size_t)sprintf(many + at, i ? ",{}" : "{}");
        strcpy(many + at, "]}");
        char e2[1024] = "";
        attn_tuning_db big;
        attn_tuning_db_init(&big);
        CU_ASSERT_EQUAL(attn_tuning_db_parse(many, strlen(many), "many.json", &big, e2, sizeof e2),
                        ATTN_ERROR_TUNING_DB);
        printf("\n  many.json: %s", e2);
        CU_ASSERT_PTR_NOT_NULL(strstr(e2, "many.json:1: 16385 entries, more than the 16384"));
        CU_ASSERT_EQUAL(big.count, 0);
        /* nor is such a database written (it could not be read back) */
        attn_tuning_entry blank;
        memset(&blank, 0, sizeof blank);
        for (int i = 0; i < n; i++) CU_ASSERT_EQUAL_FATAL(attn_tuning_db_append(&big, &blank), 0);
        char out[512];
        path_in(out, sizeof out, "many_out.json");
        CU_ASSERT_EQUAL(attn_tuning_db_save(out, &big, e2, sizeof e2), ATTN_ERROR_TUNING_DB);
        printf("\n  many_out.json: %s", e2);
        CU_ASSERT_PTR_NOT_NULL(strstr(e2, "not written: 16385 entries"));
        CU_ASSERT_EQUAL(access(out, F_OK), -1);
        attn_tuning_db_free(&big);
        free(many);
    }
    /* a folder where the file should be: unreadable */
    char path[512], err[1024];
    path_in(path, sizeof path, "adir.json");
    CU_ASSERT_EQUAL(mkdir(path, 0755), 0);
    attn_tuning_db db;
    attn_tuning_db_init(&db);
    CU_ASSERT_EQUAL(attn_tuning_db_load(path, &db, NULL, err, sizeof err), ATTN_ERROR_TUNING_DB);
    printf("\n  adir.json: %s", err);
    heuristic_case hc = {&p, path};
    CU_ASSERT_EQUAL(count_stderr(prepare_heuristic, &hc, "tuning database unusable"), 1);
    /* and the unbroken text is fine */
    path_in(path, sizeof path, "good.json");
    write_file(path, good);
    CU_ASSERT_EQUAL(attn_tuning_db_load(path, &db, NULL, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(db.count, 2);
    attn_tuning_db_free(&db);
    free(truncated);
    free(syntax);
    free(wrong_cu);
    free(wrong_second);
    free(wrong_params);
    free(missing_params);
    free(entries_obj);
    free(fixed_obj);
    free(causal_twice);
    free(params_twice);
    free(nul_escape);
    free(wide);
    free(bucket_3000);
    remove_dir();
}

/* ---- lookup tiers ---- */

/* The lookup tiers' problems, told apart by group: g1 (its entry exact),
 * g2 (another driver), g4 (stale sources), g8 (another device only), and
 * g1 at a length no entry has (the nearest bucket); all entries have the
 * same parameters. */
#define TIERS_PARAMS "family=vector,rows=4,keys=32,vec=16"
enum { TIERS_N = 5 };
static void tiers_problems(attn_problem ps[TIERS_N])
{
    ps[0] = problem(16, 2, 2, 64);
    ps[1] = problem(16, 4, 2, 64);
    ps[2] = problem(16, 8, 2, 64);
    ps[3] = problem(16, 16, 2, 64);
    ps[4] = problem(16, 2, 2, 100); /* buckets 128: distance 2 octaves */
}

/* Child check, ATTN_TUNING_DB naming test_lookup_tiers' database and
 * ATTN_SYSTEM_TUNING_DB empty: a new context reads them, and attn_prepare
 * reports each tier. */
static void child_tiers_from_env(void)
{
    attn_problem ps[TIERS_N];
    tiers_problems(ps);
    attn_context *c2 = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &c2), ATTN_SUCCESS);
    /* g2's nearest exact entry is g1 (one octave), and likewise g4 and g8 */
    attn_plan_info info;
    for (int i = 0; i < TIERS_N; i++) {
        CU_ASSERT_EQUAL(attn_prepare(c2, &ps[i], &info), ATTN_SUCCESS);
        CU_ASSERT_STRING_EQUAL(info.source, "tuned");
        CU_ASSERT_STRING_EQUAL(info.params, TIERS_PARAMS);
    }
    attn_context_release(c2);
}

/* The user's file and the system's, each with an exact entry of its own
 * class: a problem gets the nearer class, whichever file holds it; the
 * user's file wins only a tie. Before, any exact user entry won, however
 * far its class. */
static void test_lookup_nearer_file(void)
{
    fresh_dir();
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    attn_device_identity here;
    attn_device_identity_of(ctx, &here);
    char hv[17], user[512], sys[512], err[1024];
    CU_ASSERT_EQUAL_FATAL(attn_kernel_source_hash(ctx, ATTN_FAMILY_VECTOR, hv), ATTN_SUCCESS);
    const attn_problem short_p = problem(16, 2, 2, 64), long_p = problem(16, 2, 2, 4096);
    const char *short_params = "family=vector,rows=2,keys=32,vec=16";
    const char *long_params = "family=vector,rows=4,keys=32,vec=16";
    attn_tuning_entry ue = entry(&here, hv, &short_p, short_params);
    attn_tuning_entry se = entry(&here, hv, &long_p, long_params);
    attn_tuning_db udb = {.entries = &ue, .count = 1, .capacity = 1};
    attn_tuning_db sdb = {.entries = &se, .count = 1, .capacity = 1};
    path_in(user, sizeof user, "user.json");
    path_in(sys, sizeof sys, "system.json");
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(user, &udb, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(sys, &sdb, err, sizeof err), ATTN_SUCCESS);
    attn_context *c2 = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &c2), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_tuning_db(c2, user, sys), ATTN_SUCCESS);
    attn_plan_info info;
    CU_ASSERT_EQUAL(attn_prepare(c2, &long_p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "tuned");
    CU_ASSERT_STRING_EQUAL(info.params, long_params);
    CU_ASSERT_EQUAL(attn_prepare(c2, &short_p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.params, short_params);
    attn_context_release(c2);
    /* a tie of class and tier: the user's */
    ue = entry(&here, hv, &long_p, short_params);
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(user, &udb, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &c2), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_tuning_db(c2, user, sys), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(c2, &long_p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.params, short_params);
    attn_context_release(c2);
    remove_dir();
}

/* A decode entry's fixed split count fills the device at the batch x KV
 * heads it was timed at (the class has neither): it applies there, and any
 * other count of work-groups splits automatically. */
static void test_decode_splits_follow_batch(void)
{
    fresh_dir();
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    attn_device_identity here;
    attn_device_identity_of(ctx, &here);
    char hd[17], path[512], err[1024];
    CU_ASSERT_EQUAL_FATAL(attn_entry_source_hash(ctx, ATTN_ENTRY_DECODE, ATTN_FAMILY_VECTOR, hd),
                          ATTN_SUCCESS);
    attn_problem p = problem(16, 4, 2, 512);
    p.batch = 4;
    p.q_len = 1;
    attn_tuning_entry e = entry(&here, hd, &p, "family=vector,rows=2,splits=3");
    attn_decode_class_of(&p, 0, 0, &e.cls);
    attn_tuning_db db = {.entries = &e, .count = 1, .capacity = 1};
    path_in(path, sizeof path, "decode.json");
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(path, &db, err, sizeof err), ATTN_SUCCESS);
    attn_context *c2 = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &c2), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_tuning_db(c2, path, ""), ATTN_SUCCESS);
    const attn_device_limits dev = attn_context_limits(c2);
    const int batches[2] = {4, 1};
    for (int i = 0; i < 2; i++) {
        attn_problem q = p;
        q.batch = batches[i];
        attn_shape_class c;
        attn_decode_class_of(&q, 0, 0, &c);
        attn_params pr = attn_decode_params_heuristic(&dev, &q);
        const char *source = "heuristic";
        attn_tuning_apply(c2, &dev, &q, &c, &pr, &source);
        CU_ASSERT_STRING_EQUAL(source, "tuned");
        CU_ASSERT_EQUAL(pr.block_rows, 2);
        CU_ASSERT_EQUAL(pr.kv_splits, batches[i] == 4 ? 3 : 0);
    }
    /* the same through the plan cache, whose class has no batch: the
     * first call's choice served the other batch */
    const int again[4] = {4, 1, 4, 1};
    for (int i = 0; i < 4; i++) {
        attn_problem q = p;
        q.batch = again[i];
        attn_params pr;
        const char *source;
        CU_ASSERT_EQUAL(attn_plan_decode(c2, &q, 0, ATTN_KV_AS_DTYPE, &pr, &source),
                        ATTN_SUCCESS);
        CU_ASSERT_EQUAL(pr.kv_splits, again[i] == 4 ? 3 : 0);
    }
    attn_context_release(c2);
    remove_dir();
}

/* Plans D24 f32 q64 kv64 `times` times in a fresh context reading the
 * database at path, each from `source` (and, if given, with params). */
typedef struct {
    const char *path, *source, *params;
    int times;
} prepare_case;

static void prepare_as(void *arg)
{
    const prepare_case *pc = arg;
    attn_context *c2 = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &c2), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_tuning_db(c2, pc->path, ""), ATTN_SUCCESS);
    const attn_problem p = problem(24, 2, 2, 64);
    attn_plan_info info;
    for (int i = 0; i < pc->times; i++) {
        CU_ASSERT_EQUAL(attn_prepare(c2, &p, &info), ATTN_SUCCESS);
        CU_ASSERT_STRING_EQUAL(info.source, pc->source);
        if (pc->params) CU_ASSERT_STRING_EQUAL(info.params, pc->params);
    }
    attn_context_release(c2);
}

/* An exact entry whose parameters cannot run the problem: the built-in
 * ones, with one warning for the class however often it is planned (it
 * was logged at info level, so a tuned class planned as untuned without a
 * word). */
static void test_lookup_illegal_warns(void)
{
    fresh_dir();
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    attn_device_identity here;
    attn_device_identity_of(ctx, &here);
    char hv[17], path[512], err[1024];
    CU_ASSERT_EQUAL_FATAL(attn_kernel_source_hash(ctx, ATTN_FAMILY_VECTOR, hv), ATTN_SUCCESS);
    /* mma takes head dims that are multiples of 16 only */
    const attn_problem p = problem(24, 2, 2, 64);
    attn_tuning_entry e = entry(&here, hv, &p, "family=mma");
    attn_tuning_db db = {.entries = &e, .count = 1, .capacity = 1};
    path_in(path, sizeof path, "tuning.json");
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(path, &db, err, sizeof err), ATTN_SUCCESS);
    const prepare_case twice = {path, "heuristic", NULL, 2};
    CU_ASSERT_EQUAL(count_stderr(prepare_as, (void *)&twice, "do not apply here"), 1);
    char named[600]; /* the warning names the file the entry is in */
    snprintf(named, sizeof named, "family=mma (in %s) do not apply here", path);
    CU_ASSERT_EQUAL(count_stderr(prepare_as, (void *)&twice, named), 1);
    /* an entry of a farther class that can run it is the next choice
     * (it was the heuristic), and the warning names it */
    char hm[17]; /* both current: a stale entry loses to a current one anyway */
    CU_ASSERT_EQUAL_FATAL(attn_kernel_source_hash(ctx, ATTN_FAMILY_MMA, hm), ATTN_SUCCESS);
    const attn_problem far = problem(24, 2, 2, 1024);
    attn_tuning_entry both[2] = {entry(&here, hm, &p, "family=mma"),
                                 entry(&here, hv, &far, "family=vector,rows=4,keys=16,vec=8")};
    attn_tuning_db db2 = {.entries = both, .count = 2, .capacity = 2};
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(path, &db2, err, sizeof err), ATTN_SUCCESS);
    const prepare_case over = {path, "tuned", "family=vector,rows=4,keys=16,vec=8", 1};
    CU_ASSERT_EQUAL(count_stderr(prepare_as, (void *)&over,
                                 "using the nearest that do, family=vector,rows=4"), 1);
    remove_dir();
}

/* attn_tuning_db_check_writable: a folder the tuner cannot write is
 * refused by name before any tuning (it was found after the first class's
 * search); a writable one, and one it makes, pass. A read-only file in a
 * writable folder is refused too, by the check and by a save, and stays as
 * it was (the rename would have replaced it). Root writes anywhere, so the
 * refusals are checked in a child that becomes nobody (skipped where it
 * cannot). */
static void test_check_writable(void)
{
    fresh_dir();
    char ok[512], made[512], ro[512], inside[600], open_dir[512], ro_file[600], err[1024];
    path_in(ok, sizeof ok, "tuning.json");
    path_in(made, sizeof made, "new/folder/tuning.json");
    CU_ASSERT_EQUAL(attn_tuning_db_check_writable(ok, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_tuning_db_check_writable(made, err, sizeof err), ATTN_SUCCESS);
    path_in(ro, sizeof ro, "ro");
    CU_ASSERT_EQUAL_FATAL(mkdir(ro, 0555), 0);
    CU_ASSERT_EQUAL_FATAL(chmod(g_dir, 0755), 0); /* nobody must get in */
    snprintf(inside, sizeof inside, "%s/tuning.json", ro);
    path_in(open_dir, sizeof open_dir, "open");
    CU_ASSERT_EQUAL_FATAL(mkdir(open_dir, 0777), 0);
    CU_ASSERT_EQUAL_FATAL(chmod(open_dir, 0777), 0); /* past the umask */
    snprintf(ro_file, sizeof ro_file, "%s/tuning.json", open_dir);
    attn_tuning_db empty = {.entries = NULL, .count = 0, .capacity = 0};
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(ro_file, &empty, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(chmod(ro_file, 0444), 0);
    size_t len_before = 0;
    free(harness_read_file(ro_file, &len_before));
    /* no write bit: refused whoever runs it, root included */
    CU_ASSERT_EQUAL(attn_tuning_db_check_writable(ro_file, err, sizeof err), ATTN_ERROR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "not replaced"));
    attn_tuning_entry one_entry;
    memset(&one_entry, 0, sizeof one_entry);
    snprintf(one_entry.params, sizeof one_entry.params, "family=vector,rows=8");
    attn_tuning_db one_db = {.entries = &one_entry, .count = 1, .capacity = 1};
    CU_ASSERT_EQUAL(attn_tuning_db_save(ro_file, &one_db, err, sizeof err), ATTN_ERROR_IO);
    fflush(stdout);
    const pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        if (getuid() == 0 &&
            (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0))
            _exit(77);
        char e[1024] = "";
        const attn_status st = attn_tuning_db_check_writable(inside, e, sizeof e);
        printf("\n  child: %s: %s", attn_status_name(st), e);
        if (st != ATTN_ERROR_IO || !strstr(e, ro) || !strstr(e, "not writable")) _exit(1);
        /* the read-only file: refused by the check, and by a save */
        const attn_status sc = attn_tuning_db_check_writable(ro_file, e, sizeof e);
        printf("\n  child: %s: %s", attn_status_name(sc), e);
        if (sc != ATTN_ERROR_IO || !strstr(e, ro_file) || !strstr(e, "not writable")) _exit(2);
        attn_tuning_entry one;
        memset(&one, 0, sizeof one);
        snprintf(one.params, sizeof one.params, "family=vector,rows=8");
        attn_tuning_db db = {.entries = &one, .count = 1, .capacity = 1};
        const attn_status ss = attn_tuning_db_save(ro_file, &db, e, sizeof e);
        printf("\n  child: %s: %s", attn_status_name(ss), e);
        fflush(stdout);
        _exit(ss == ATTN_ERROR_IO && strstr(e, "not replaced") ? 0 : 3);
    }
    int status = 0;
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77) printf("\n  (refusal not checked: cannot drop root)");
    else CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
    size_t len_after = 0;
    free(harness_read_file(ro_file, &len_after));
    CU_ASSERT_EQUAL(len_after, len_before); /* not replaced */
    chmod(ro, 0755);
    chmod(ro_file, 0644);
    remove_dir();
}

static void test_lookup_tiers(void)
{
    fresh_dir();
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    attn_device_identity here, other_driver, other_device;
    attn_device_identity_of(ctx, &here);
    other_driver = here;
    snprintf(other_driver.driver, sizeof other_driver.driver, "%.200s-older", here.driver);
    other_device = here;
    snprintf(other_device.name, sizeof other_device.name, "%.200s (another one)", here.name);
    char hv[17], ht[17];
    CU_ASSERT_EQUAL_FATAL(attn_kernel_source_hash(ctx, ATTN_FAMILY_VECTOR, hv), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_kernel_source_hash(ctx, ATTN_FAMILY_TILED, ht), ATTN_SUCCESS);
    CU_ASSERT_STRING_NOT_EQUAL(hv, ht);
    const char *hashes[ATTN_FAMILY_COUNT] = {ht, hv, NULL};

    /* classes told apart by group: g1 exact, g2 another driver, g4 stale
     * sources, g8 another device only */
    const char *pr = TIERS_PARAMS;
    attn_problem ps[TIERS_N];
    tiers_problems(ps);
    const attn_problem p1 = ps[0], p2 = ps[1], p4 = ps[2], p8 = ps[3];
    attn_tuning_db db;
    attn_tuning_db_init(&db);
    attn_tuning_entry es[] = {entry(&here, hv, &p1, pr), entry(&other_driver, hv, &p2, pr),
                              entry(&here, "0000000000000000", &p4, pr),
                              entry(&other_device, hv, &p8, pr)};
    for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(attn_tuning_db_put(&db, &es[i]), 0);
    attn_shape_class c;
    const attn_tuning_entry *e;
    attn_shape_class_of(&p1, &c);
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&db, &here, hashes, &c, &e), ATTN_TIER_EXACT);
    CU_ASSERT_PTR_EQUAL(e, &db.entries[0]);
    attn_shape_class_of(&p2, &c);
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&db, &here, hashes, &c, &e), ATTN_TIER_EXACT);
    CU_ASSERT_PTR_EQUAL(e, &db.entries[0]); /* an exact tier beats a nearer stale one */
    /* alone, each entry: */
    attn_tuning_db one = {.entries = NULL, .count = 1, .capacity = 1};
    for (int i = 0; i < 4; i++) {
        one.entries = &db.entries[i];
        attn_shape_class_of(i == 0 ? &p1 : i == 1 ? &p2 : i == 2 ? &p4 : &p8, &c);
        attn_tuning_tier want[] = {ATTN_TIER_EXACT, ATTN_TIER_STALE, ATTN_TIER_STALE, ATTN_TIER_NONE};
        CU_ASSERT_EQUAL(attn_tuning_db_lookup(&one, &here, hashes, &c, &e), want[i]);
        if (attn_tuning_db_lookup(&one, &here, hashes, &c, &e) != want[i]) printf("\n  entry %d", i);
    }
    /* nearest bucket: an unseen length uses the nearest tuned one */
    attn_shape_class_of(&ps[4], &c);
    CU_ASSERT_EQUAL(c.q_bucket, 128);
    one.entries = &db.entries[0];
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&one, &here, hashes, &c, &e), ATTN_TIER_EXACT);
    attn_problem pd = problem(32, 2, 2, 64); /* another head dim: never */
    attn_shape_class_of(&pd, &c);
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&db, &here, hashes, &c, &e), ATTN_TIER_NONE);
    CU_ASSERT_EQUAL(attn_length_bucket(1), 1);
    CU_ASSERT_EQUAL(attn_length_bucket(3), 4);
    CU_ASSERT_EQUAL(attn_length_bucket(1448), 1024);
    CU_ASSERT_EQUAL(attn_length_bucket(1449), 2048);
    /* two classes as near (q1024 and q4096 for q2048): the longer, in
     * either order of the file */
    {
        attn_tuning_entry pair[2] = {entry(&here, hv, &ps[0], pr), entry(&here, hv, &ps[0], pr)};
        attn_problem pa = problem(16, 2, 1, 1024), pb = problem(16, 2, 1, 4096);
        attn_problem pq = problem(16, 2, 1, 2048);
        attn_shape_class_of(&pa, &pair[0].cls);
        attn_shape_class_of(&pb, &pair[1].cls);
        attn_shape_class_of(&pq, &c);
        for (int order = 0; order < 2; order++) {
            attn_tuning_entry two[2] = {pair[order], pair[1 - order]};
            attn_tuning_db tie = {.entries = two, .count = 2, .capacity = 2};
            CU_ASSERT_EQUAL(attn_tuning_db_lookup(&tie, &here, hashes, &c, &e), ATTN_TIER_EXACT);
            CU_ASSERT(e && e->cls.q_bucket == 4096);
        }
    }
    /* one query sees every key, causal or not: one class */
    {
        attn_problem d1 = problem(16, 2, 1, 1), d0 = d1, d8 = problem(16, 2, 1, 8), d8f = d8;
        d1.kv_len = d8.kv_len = d8f.kv_len = 512;
        d0.kv_len = 512;
        d0.causal = 0;
        d8f.causal = 0;
        attn_shape_class c1, c0, c8, c8f;
        attn_shape_class_of(&d1, &c1);
        attn_shape_class_of(&d0, &c0);
        attn_shape_class_of(&d8, &c8);
        attn_shape_class_of(&d8f, &c8f);
        CU_ASSERT(attn_shape_class_equal(&c1, &c0));
        CU_ASSERT(!attn_shape_class_equal(&c8, &c8f));
    }

    /* the library: attn_prepare reports each tier, and the tuned
     * parameters compute the right thing */
    char path[512], err[1024];
    path_in(path, sizeof path, "tuning.json");
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(path, &db, err, sizeof err), ATTN_SUCCESS);
    char env_db[600];
    snprintf(env_db, sizeof env_db, "ATTN_TUNING_DB=%s", path);
    const char *const env[] = {env_db, "ATTN_SYSTEM_TUNING_DB=", NULL};
    CU_ASSERT_EQUAL(harness_run_child("child_tiers_from_env", env, NULL), 0);
    attn_context *c2 = NULL;
    attn_plan_info info;
    /* without the exact entry, the stale ones show, the other device not */
    attn_tuning_db rest = {.entries = db.entries + 1, .count = 3, .capacity = 3};
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(path, &rest, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &c2), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_tuning_db(c2, path, ""), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(c2, &p2, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "stale");
    CU_ASSERT_EQUAL(attn_prepare(c2, &p4, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "stale");
    attn_context_release(c2);
    attn_tuning_db only_other = {.entries = db.entries + 3, .count = 1, .capacity = 1};
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(path, &only_other, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &c2), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_tuning_db(c2, path, ""), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(c2, &p8, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "heuristic");
    attn_context_release(c2);

    /* the system-wide file: used when the user's has nothing better; an
     * exact user entry beats an exact system one */
    char sys[512];
    path_in(sys, sizeof sys, "system.json");
    attn_tuning_entry se = entry(&here, hv, &p1, "family=vector,rows=2,keys=32,vec=16");
    attn_tuning_db sysdb = {.entries = &se, .count = 1, .capacity = 1};
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(sys, &sysdb, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &c2), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_tuning_db(c2, path, sys), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(c2, &p1, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "tuned");
    CU_ASSERT_STRING_EQUAL(info.params, "family=vector,rows=2,keys=32,vec=16");
    attn_context_release(c2);
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(path, &db, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &c2), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_tuning_db(c2, path, sys), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(c2, &p1, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.params, pr);
    /* an override still overrides a tuned entry */
    CU_ASSERT_EQUAL(attn_context_set_params(c2, "rows=8"), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(c2, &p1, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "override");
    CU_ASSERT_STRING_EQUAL(info.params, "family=vector,rows=8,keys=32,vec=16");
    CU_ASSERT_EQUAL(attn_context_set_params(c2, NULL), ATTN_SUCCESS);
    /* an override whose family cannot run the problem (mma at D 24): the
     * class's tuned plan, not the heuristic */
    attn_problem p24 = problem(24, 2, 2, 64);
    const attn_tuning_entry e24 = entry(&here, hv, &p24, "family=vector,rows=2,keys=16,vec=8");
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_merge_file(path, &e24, 1, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_tuning_db(c2, path, sys), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(c2, &p24, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "tuned");
    CU_ASSERT_EQUAL(attn_context_set_params(c2, "family=mma,warps=2"), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(c2, &p24, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "tuned");
    CU_ASSERT_STRING_EQUAL(info.params, "family=vector,rows=2,keys=16,vec=8");
    CU_ASSERT_EQUAL(attn_context_set_params(c2, NULL), ATTN_SUCCESS);

    /* a forward with the tuned parameters, against the reference */
    attn_problem pf = problem(16, 2, 2, 61);
    size_t nq = 2 * 61 * 16;
    float *q = malloc(nq * 4), *k = malloc(nq * 4), *v = malloc(nq * 4), *o = malloc(nq * 4),
          *ref = malloc(nq * 4);
    harness_fill_uniform(q, nq, 1, -1, 1);
    harness_fill_uniform(k, nq, 2, -1, 1);
    harness_fill_uniform(v, nq, 3, -1, 1);
    attn_tensor tq, tk, tv, to;
    cl_mem bq = harness_upload(c2, ATTN_F32, q, 1, 2, 61, 16, NULL, &tq);
    cl_mem bk = harness_upload(c2, ATTN_F32, k, 1, 2, 61, 16, NULL, &tk);
    cl_mem bv = harness_upload(c2, ATTN_F32, v, 1, 2, 61, 16, NULL, &tv);
    cl_mem bo = harness_alloc(c2, ATTN_F32, 1, 2, 61, 16, NULL, &to);
    CU_ASSERT_EQUAL(attn_prepare(c2, &pf, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "tuned");
    CU_ASSERT_EQUAL(attn_forward(c2, &pf, &tq, &tk, &tv, &to, NULL, NULL, NULL), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(harness_download(c2, ATTN_F32, &to, 1, 2, 61, 16, o), 0);
    CU_ASSERT_EQUAL(attn_reference_forward(&pf, q, k, v, ref, NULL, NULL), ATTN_SUCCESS);
    double atol, rtol;
    attn_tolerance(ATTN_F32, &atol, &rtol);
    CU_ASSERT_EQUAL(harness_compare("tuned forward", o, ref, nq, atol, rtol, 1), 0);
    clReleaseMemObject(bq), clReleaseMemObject(bk), clReleaseMemObject(bv), clReleaseMemObject(bo);
    free(q), free(k), free(v), free(o), free(ref);
    attn_context_release(c2);
    attn_tuning_db_free(&db);
    remove_dir();
}

/* ---- concurrent writers ---- */

enum { WRITERS = 4, PER_WRITER = 12 };

static void test_concurrent_writers(void)
{
    fresh_dir();
    char path[512];
    path_in(path, sizeof path, "shared.json");
    pid_t pids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        CU_ASSERT_FATAL(pids[w] >= 0);
        if (pids[w] == 0) { /* each writer merges its entries one at a time */
            int failed = 0;
            for (int i = 0; i < PER_WRITER; i++) {
                attn_problem p = problem(16, 1 << w, 1, 1 << (i + 1));
                attn_tuning_entry e = entry(&fake_dev, "0123456789abcdef", &p,
                                            "family=vector,rows=8,keys=32,vec=16");
                char err[1024];
                if (attn_tuning_db_merge_file(path, &e, 1, err, sizeof err) != ATTN_SUCCESS) {
                    fprintf(stderr, "writer %d: %s\n", w, err);
                    failed = 1;
                }
            }
            _exit(failed);
        }
    }
    for (int w = 0; w < WRITERS; w++) {
        int status = 0;
        CU_ASSERT_EQUAL(waitpid(pids[w], &status, 0), pids[w]);
        CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    attn_tuning_db db;
    attn_tuning_db_init(&db);
    char err[1024];
    CU_ASSERT_EQUAL(attn_tuning_db_load(path, &db, NULL, err, sizeof err), ATTN_SUCCESS);
    printf("\n  %d writers x %d entries: %zu in the file", WRITERS, PER_WRITER, db.count);
    CU_ASSERT_EQUAL(db.count, WRITERS * PER_WRITER);
    for (int w = 0; w < WRITERS; w++)
        for (int i = 0; i < PER_WRITER; i++) {
            attn_problem p = problem(16, 1 << w, 1, 1 << (i + 1));
            attn_shape_class c;
            attn_shape_class_of(&p, &c);
            int found = 0;
            for (size_t j = 0; j < db.count; j++) found += attn_shape_class_equal(&db.entries[j].cls, &c);
            CU_ASSERT_EQUAL(found, 1);
        }
    attn_tuning_db_free(&db);
    /* nothing left beside the database: no lock file, no temporary */
    DIR *d = opendir(g_dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        if (strcmp(de->d_name, "shared.json") != 0) printf("\n  left behind: %s", de->d_name);
        CU_ASSERT_STRING_EQUAL(de->d_name, "shared.json");
    }
    closedir(d);
    remove_dir();
}

/* ---- what an update leaves behind ---- */

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* The lock file goes with the update that made it, and the temporaries of
 * writers killed mid-save (their process gone) go with the next update;
 * a live writer's temporary and other files' stay. */
static void test_update_cleans_up(void)
{
    fresh_dir();
    char path[512], lock[600], dead_tmp[600], live_tmp[600], other_tmp[600], odd[600];
    path_in(path, sizeof path, "tuning.json");
    snprintf(lock, sizeof lock, "%s.lock", path);
    pid_t child = fork(); /* a process id that is surely gone */
    CU_ASSERT_FATAL(child >= 0);
    if (child == 0) _exit(0);
    CU_ASSERT_EQUAL(waitpid(child, NULL, 0), child);
    snprintf(dead_tmp, sizeof dead_tmp, "%s.%ld.tmp", path, (long)child);
    snprintf(live_tmp, sizeof live_tmp, "%s.%ld.tmp", path, (long)getppid());
    path_in(other_tmp, sizeof other_tmp, "other.json");
    snprintf(other_tmp + strlen(other_tmp), sizeof other_tmp - strlen(other_tmp), ".%ld.tmp",
             (long)child);
    snprintf(odd, sizeof odd, "%s.12ab.tmp", path);
    const char *made[] = {dead_tmp, live_tmp, other_tmp, odd};
    for (int i = 0; i < 4; i++) write_file(made[i], "{\"entries\": [");

    attn_problem p = problem(64, 8, 2, 1024);
    attn_tuning_entry e = entry(&fake_dev, "0123456789abcdef", &p, "family=vector,rows=8,keys=32,vec=16");
    char err[1024];
    CU_ASSERT_EQUAL(attn_tuning_db_merge_file(path, &e, 1, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT(exists(path));
    CU_ASSERT(!exists(lock));
    CU_ASSERT(!exists(dead_tmp));
    CU_ASSERT(exists(live_tmp));
    CU_ASSERT(exists(other_tmp));
    CU_ASSERT(exists(odd));
    /* a lock file left by an older version is taken over and removed */
    write_file(lock, "");
    CU_ASSERT_EQUAL(attn_tuning_db_merge_file(path, &e, 1, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT(!exists(lock));
    attn_tuning_db db;
    attn_tuning_db_init(&db);
    CU_ASSERT_EQUAL(attn_tuning_db_load(path, &db, NULL, err, sizeof err), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(db.count, 1);
    attn_tuning_db_free(&db);
    /* nothing to merge: a missing folder is not made (attn-tune --import of
     * an empty file) */
    char deep[600];
    path_in(deep, sizeof deep, "not-made");
    const size_t at = strlen(deep);
    snprintf(deep + at, sizeof deep - at, "/tuning.json");
    size_t replaced = 7;
    CU_ASSERT_EQUAL(attn_tuning_db_merge_file_counted(deep, &e, 0, &replaced, err, sizeof err),
                    ATTN_SUCCESS);
    CU_ASSERT_EQUAL(replaced, 0);
    deep[at] = 0;
    CU_ASSERT(!exists(deep));
    /* and a corrupt file is still refused */
    write_file(path, "{\"entries\": [");
    CU_ASSERT_EQUAL(attn_tuning_db_merge_file_counted(path, &e, 0, &replaced, err, sizeof err),
                    ATTN_ERROR_TUNING_DB);
    remove_dir();
}

/* A database path from the environment that does not fit: none (with a
 * warning), not a cut one naming another file. */
static void test_paths_too_long(void)
{
    static char huge[5000];
    memset(huge, 'x', sizeof huge - 1);
    huge[0] = '/';
    const char *had = getenv("ATTN_SYSTEM_TUNING_DB");
    char *saved = had ? strdup(had) : NULL, buf[4096];
    CU_ASSERT_EQUAL(setenv("ATTN_SYSTEM_TUNING_DB", huge, 1), 0);
    CU_ASSERT_EQUAL(attn_tuning_db_system_path(buf, sizeof buf), 0);
    CU_ASSERT_EQUAL(setenv("ATTN_SYSTEM_TUNING_DB", "/etc/attn/tuning.json", 1), 0);
    CU_ASSERT_EQUAL(attn_tuning_db_system_path(buf, sizeof buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "/etc/attn/tuning.json");
    if (saved) setenv("ATTN_SYSTEM_TUNING_DB", saved, 1);
    else unsetenv("ATTN_SYSTEM_TUNING_DB");
    free(saved);
}

/* An entry serves its own class on its own device only: the same shape in
 * another dtype, causality or entry point, or on a device of other compute
 * units, vendor or platform, finds nothing (each line of the comparisons
 * left out passed the suite). */
static void test_entry_only_for_its_class_and_device(void)
{
    const attn_problem p = problem(64, 8, 2, 1024);
    attn_tuning_entry e = entry(&fake_dev, "0123456789abcdef", &p, "family=vector,rows=8");
    const attn_tuning_db db = {.entries = &e, .count = 1, .capacity = 1};
    const attn_tuning_entry *got;
    attn_shape_class c;
    attn_shape_class_of(&p, &c);
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&db, &fake_dev, NULL, &c, &got), ATTN_TIER_EXACT);
    attn_problem q = p;
    q.dtype = ATTN_F16;
    attn_shape_class_of(&q, &c);
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&db, &fake_dev, NULL, &c, &got), ATTN_TIER_NONE);
    q = p;
    q.causal = 0;
    attn_shape_class_of(&q, &c);
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&db, &fake_dev, NULL, &c, &got), ATTN_TIER_NONE);
    attn_shape_class_of(&p, &c);
    c.decode = 1;
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&db, &fake_dev, NULL, &c, &got), ATTN_TIER_NONE);
    attn_shape_class_of(&p, &c);
    attn_device_identity d = fake_dev;
    d.compute_units++;
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&db, &d, NULL, &c, &got), ATTN_TIER_NONE);
    d = fake_dev;
    snprintf(d.vendor, sizeof d.vendor, "Other Vendor");
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&db, &d, NULL, &c, &got), ATTN_TIER_NONE);
    d = fake_dev;
    snprintf(d.platform, sizeof d.platform, "Other Platform");
    CU_ASSERT_EQUAL(attn_tuning_db_lookup(&db, &d, NULL, &c, &got), ATTN_TIER_NONE);
}

/* A kernel folder set after a tuned plan: its sources are not the ones
 * the entry was tuned on, so the entry is stale (attn_context_set_kernel_dir
 * that kept the tuned plan passed the suite). */
static void test_kernel_dir_makes_entry_stale(void)
{
    fresh_dir();
    attn_context *h = harness_context();
    attn_device_identity here;
    attn_device_identity_of(h, &here);
    char hv[17], path[512], kdir[512], err[1024];
    CU_ASSERT_EQUAL_FATAL(attn_kernel_source_hash(h, ATTN_FAMILY_VECTOR, hv), ATTN_SUCCESS);
    const attn_problem p = problem(16, 2, 2, 64);
    attn_tuning_entry e = entry(&here, hv, &p, TIERS_PARAMS);
    const attn_tuning_db db = {.entries = &e, .count = 1, .capacity = 1};
    path_in(path, sizeof path, "tuning.json");
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(path, &db, err, sizeof err), ATTN_SUCCESS);
    path_in(kdir, sizeof kdir, "kernels");
    CU_ASSERT_EQUAL_FATAL(mkdir(kdir, 0755), 0);
    harness_write_sources(h, kdir, 1);
    attn_context *c = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &c), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_tuning_db(c, path, ""), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_context_set_kernel_dir(c, NULL), ATTN_SUCCESS);
    attn_plan_info info;
    CU_ASSERT_EQUAL(attn_prepare(c, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "tuned");
    CU_ASSERT_EQUAL(attn_context_set_kernel_dir(c, kdir), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(attn_prepare(c, &p, &info), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(info.source, "stale");
    attn_context_release(c);
    remove_dir();
}

/* A save that cannot write its whole text (a file size limit, as a full
 * disk) is ATTN_ERROR_IO and leaves the old file as it was, byte for byte
 * (a rename after a failed write, which truncated it, passed the suite). */
static void test_failed_save_keeps_file(void)
{
    fresh_dir();
    char path[512], err[1024];
    path_in(path, sizeof path, "keep.json");
    const attn_problem p = problem(64, 8, 2, 1024);
    attn_tuning_entry e = entry(&fake_dev, "0123456789abcdef", &p, "family=vector,rows=8");
    const attn_tuning_db one = {.entries = &e, .count = 1, .capacity = 1};
    CU_ASSERT_EQUAL_FATAL(attn_tuning_db_save(path, &one, err, sizeof err), ATTN_SUCCESS);
    char *before = harness_read_file(path, NULL);
    enum { M = 200 };
    attn_tuning_entry *many = calloc(M, sizeof *many);
    CU_ASSERT_PTR_NOT_NULL_FATAL(many);
    for (int i = 0; i < M; i++) {
        attn_problem q = problem(8 * (1 + i / 12), 8, 2, 16 << (i % 12));
        many[i] = entry(&fake_dev, "0123456789abcdef", &q, "family=vector,rows=8");
    }
    const attn_tuning_db big = {.entries = many, .count = M, .capacity = M};
    fflush(NULL);
    const pid_t child = fork();
    CU_ASSERT_FATAL(child >= 0);
    if (child == 0) {
        signal(SIGXFSZ, SIG_IGN);
        const struct rlimit rl = {4096, 4096};
        setrlimit(RLIMIT_FSIZE, &rl);
        _exit(attn_tuning_db_save(path, &big, err, sizeof err) == ATTN_ERROR_IO ? 0 : 1);
    }
    int ws = 0;
    CU_ASSERT_EQUAL(waitpid(child, &ws, 0), child);
    CU_ASSERT(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    char *after = harness_read_file(path, NULL);
    CU_ASSERT(before && after && strcmp(before, after) == 0);
    free(before), free(after), free(many);
    remove_dir();
}

static const harness_test tests[] = {
    HARNESS_TEST(test_round_trip),
    HARNESS_TEST(test_int8_decode_class),
    HARNESS_TEST(test_paged_decode_class),
    HARNESS_TEST(test_concurrent_writers), /* forks: before any OpenCL thread exists */
    HARNESS_TEST(test_update_cleans_up),    /* forks too */
    HARNESS_TEST(test_failed_save_keeps_file), /* forks too */
    HARNESS_TEST(test_entry_only_for_its_class_and_device),
    HARNESS_TEST(test_kernel_dir_makes_entry_stale),
    HARNESS_TEST(test_corrupt_files),
    HARNESS_TEST(test_foreign_entries),
    HARNESS_TEST(test_dedupe_as_put),
    HARNESS_TEST(test_save_through_link),
    HARNESS_TEST(test_lookup_tiers),
    HARNESS_TEST(test_lookup_nearer_file),
    HARNESS_TEST(test_decode_splits_follow_batch),
    HARNESS_TEST(test_paths_too_long),
    HARNESS_TEST(test_lookup_illegal_warns),
    HARNESS_TEST(test_text_only_and_top_level_kept),
    HARNESS_TEST(test_check_writable),
    HARNESS_TEST(test_problem_flops),
    HARNESS_TEST(test_problem_flops_window),
    HARNESS_TEST(test_problem_flops_closed_form),
    HARNESS_TEST(test_variant_classes),
    HARNESS_TEST(test_tune_shape_variants),
    HARNESS_END
};

static const harness_test children[] = {HARNESS_TEST(child_tiers_from_env), HARNESS_END};

static void register_tests(void)
{
    harness_add_suite("tuning_db", tests);
    harness_add_children(children);
}

/* The library's warnings on stderr, as it writes them itself. */
static void warnings_to_stderr(attn_log_level level, const char *message, void *user)
{
    (void)user;
    fprintf(stderr, "attn: %s: %s\n", level == ATTN_LOG_ERROR ? "error" : "warning", message);
}

int main(void)
{
    /* the corrupt-file test counts the library's warnings: they must show */
    const char *level = getenv("ATTN_LOG");
    if (level && (!strcmp(level, "error") || !strcmp(level, "none") || !strcmp(level, "off")))
        attn_set_log_callback(warnings_to_stderr, NULL, ATTN_LOG_WARN);
    return harness_run("test_tuning_db", register_tests);
}
