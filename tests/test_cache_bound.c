/* test_cache_bound.c -- the program cache folder's bound (ATTN_CACHE_MAX_MB,
 * host/core/disk_cache_prune.c): past it the least recently used files go,
 * a load counts as a use, the file just stored stays, other files in the
 * folder are never touched, stale temporary files go; the environment's
 * value read as documented; and a context keeping its folder within the
 * bound as it builds. */
#define _XOPEN_SOURCE 700
#include "harness.h"
#include "core/config.h"
#include "core/hash.h"
#include "core/program.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { PAYLOAD = 64 * 1024, NPROG = 6 };

static uint64_t key_of(const char *text) { return attn_hash_str(ATTN_HASH_INIT, text); }

static void path_of(const char *dir, uint64_t key, char *buf, size_t size)
{
    snprintf(buf, size, "%s/" ATTN_CACHE_FILE_NAME, dir, (unsigned long long)key);
}

static int exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

static long long size_of(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

/* Sets path's access and modification times to now - seconds_ago. */
static void set_age(const char *path, long seconds_ago)
{
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= seconds_ago;
    t[1] = t[0];
    CU_ASSERT_EQUAL(utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW), 0);
}

static long age_of(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return -1;
    return (long)(time(NULL) - sb.st_mtime);
}

static void write_bytes(const char *path, size_t n)
{
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    for (size_t i = 0; i < n; i++) fputc((int)(i * 7u), f);
    CU_ASSERT_EQUAL(fclose(f), 0);
}

/* Six programs stored, program i used 10 - i hours ago, then program 1
 * loaded (used now); beside them files the cache did not make. A bound of
 * 4.5 programs, keeping program 0 (the oldest), removes 2, 3 and 4, the
 * least recently used, down to 3/4 of the bound; the rest stay. */
static void test_prune_least_recently_used(void)
{
    char dir[512], path[NPROG][700], text[NPROG][32];
    harness_temp_dir(dir, sizeof dir, "bound");
    unsigned char *payload = malloc(PAYLOAD);
    CU_ASSERT_PTR_NOT_NULL_FATAL(payload);
    for (int i = 0; i < PAYLOAD; i++) payload[i] = (unsigned char)(i * 13 + 1);
    for (int i = 0; i < NPROG; i++) {
        snprintf(text[i], sizeof text[i], "program %d", i);
        CU_ASSERT_EQUAL(attn_disk_cache_store(dir, text[i], key_of(text[i]), payload, PAYLOAD), 1);
        path_of(dir, key_of(text[i]), path[i], sizeof path[i]);
        set_age(path[i], (10 - i) * 3600L);
    }
    const long long each = size_of(path[0]);
    CU_ASSERT(each > PAYLOAD);
    unsigned char *bin = NULL;
    size_t len = 0;
    CU_ASSERT_EQUAL(attn_disk_cache_load(dir, text[1], key_of(text[1]), &bin, &len), 1);
    CU_ASSERT(len == PAYLOAD && bin && memcmp(bin, payload, PAYLOAD) == 0);
    free(bin);
    CU_ASSERT(age_of(path[1]) >= 0 && age_of(path[1]) < 600); /* the load marked it used */

    /* not the cache's: another program's file, a name in capitals, a link
     * and a folder named as the cache names files; temporary files a
     * killed writer left 70 minutes ago, one 50 minutes old (stale past an
     * hour: it stays), and a file named nearly as one */
    char notes[600], caps[600], link[600], sub[600], stale[800], fresh[800], mine[800];
    snprintf(notes, sizeof notes, "%s/notes.txt", dir);
    snprintf(caps, sizeof caps, "%s/0123456789ABCDEF.bin", dir);
    snprintf(link, sizeof link, "%s/fedcba9876543210.bin", dir);
    snprintf(sub, sizeof sub, "%s/00000000000000aa.bin", dir);
    snprintf(stale, sizeof stale, "%s.123.0.5a.tmp", path[3]);
    snprintf(fresh, sizeof fresh, "%s.124.0.5b.tmp", path[3]);
    snprintf(mine, sizeof mine, "%s.mine.tmp", path[3]); /* not a name the cache writes */
    write_bytes(notes, (size_t)each * 5);
    write_bytes(caps, (size_t)each);
    CU_ASSERT_EQUAL(symlink(notes, link), 0);
    CU_ASSERT_EQUAL(mkdir(sub, 0755), 0);
    write_bytes(stale, 100);
    write_bytes(fresh, 100);
    write_bytes(mine, 100);
    const char *const others[] = {notes, caps, link, sub, mine};
    for (int i = 0; i < 5; i++) set_age(others[i], 30 * 86400L);
    set_age(stale, 70 * 60L);
    set_age(fresh, 50 * 60L);

    /* no bound: no program goes; the stale temporary file does */
    attn_disk_cache_prune(dir, 0, key_of(text[0]));
    for (int i = 0; i < NPROG; i++) CU_ASSERT(exists(path[i]));
    CU_ASSERT(!exists(stale));
    CU_ASSERT(exists(fresh));

    const uint64_t bound = (uint64_t)each * 9 / 2;
    attn_disk_cache_prune(dir, bound, key_of(text[0]));
    const int kept[NPROG] = {1, 1, 0, 0, 0, 1};
    for (int i = 0; i < NPROG; i++) {
        if (exists(path[i]) != kept[i])
            printf("\n  program %d (used %s): %s", i, i == 1 ? "now" : "hours ago",
                   exists(path[i]) ? "kept, should have gone" : "removed, should have stayed");
        CU_ASSERT_EQUAL(exists(path[i]), kept[i]);
    }
    for (int i = 0; i < 5; i++) CU_ASSERT(exists(others[i]));
    CU_ASSERT(exists(fresh));

    /* within the bound now: a second pass removes nothing */
    attn_disk_cache_prune(dir, bound, key_of(text[5]));
    for (int i = 0; i < NPROG; i++) CU_ASSERT_EQUAL(exists(path[i]), kept[i]);

    /* a bound below the kept file alone: everything else goes, it stays */
    attn_disk_cache_prune(dir, 1, key_of(text[5]));
    for (int i = 0; i < NPROG; i++) CU_ASSERT_EQUAL(exists(path[i]), i == 5);
    CU_ASSERT(exists(notes) && exists(caps) && exists(fresh));
    /* and again, when it is the only cache file left */
    attn_disk_cache_prune(dir, 1, key_of(text[5]));
    CU_ASSERT(exists(path[5]));
    free(payload);
    harness_remove_tree(dir);
}

/* Eight programs, program i used 8 - i hours ago, under a bound of 7.9
 * programs keeping the newest: the 3 least recently used go, down to 3/4
 * of the bound (5.9 programs), not 2 (7/8 of it) nor 1 (the bound). */
static void test_prune_down_to_three_quarters(void)
{
    enum { N = 8 };
    char dir[512], path[N][700], text[N][32];
    harness_temp_dir(dir, sizeof dir, "bound34");
    unsigned char *payload = calloc(1, PAYLOAD);
    CU_ASSERT_PTR_NOT_NULL_FATAL(payload);
    for (int i = 0; i < N; i++) {
        snprintf(text[i], sizeof text[i], "program %d", i);
        CU_ASSERT_EQUAL(attn_disk_cache_store(dir, text[i], key_of(text[i]), payload, PAYLOAD), 1);
        path_of(dir, key_of(text[i]), path[i], sizeof path[i]);
        set_age(path[i], (N - i) * 3600L);
    }
    const long long each = size_of(path[0]);
    attn_disk_cache_prune(dir, (uint64_t)each * 79 / 10, key_of(text[N - 1]));
    for (int i = 0; i < N; i++) {
        if (exists(path[i]) != (i >= 3))
            printf("\n  program %d: %s", i, exists(path[i]) ? "kept" : "removed");
        CU_ASSERT_EQUAL(exists(path[i]), i >= 3);
    }
    free(payload);
    harness_remove_tree(dir);
}

static char g_logged[1024];

static void keep_warning(attn_log_level level, const char *message, void *user)
{
    (void)user;
    if (level == ATTN_LOG_WARN) snprintf(g_logged, sizeof g_logged, "%s", message);
}

/* ATTN_CACHE_MAX_MB's text: MiB; 0 no bound; unset or empty the default;
 * anything else warned about (naming it) and the default. */
static void test_bound_from_text(void)
{
    const uint64_t def = (uint64_t)ATTN_CACHE_MAX_MB_DEFAULT << 20;
    attn_set_log_callback(keep_warning, NULL, ATTN_LOG_WARN);
    const struct {
        const char *text;
        uint64_t bytes;
        int warned;
    } cases[] = {
        {NULL, def, 0},
        {"", def, 0},
        {"0", 0, 0},
        {"1", 1u << 20, 0},
        {"2048", (uint64_t)2048 << 20, 0},
        {"17592186044415", (uint64_t)17592186044415ull << 20, 0}, /* the largest that fits */
        {"17592186044416", def, 1},
        {"99999999999999999999999", def, 1},
        {"abc", def, 1},
        {"-1", def, 1},
        {"1.5", def, 1},
        {"512MB", def, 1},
        {" 64", def, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        g_logged[0] = 0;
        const uint64_t got = attn_cache_max_bytes(cases[i].text);
        if (got != cases[i].bytes)
            printf("\n  ATTN_CACHE_MAX_MB=\"%s\": %llu bytes, want %llu",
                   cases[i].text ? cases[i].text : "(unset)", (unsigned long long)got,
                   (unsigned long long)cases[i].bytes);
        CU_ASSERT_EQUAL(got, cases[i].bytes);
        CU_ASSERT_EQUAL(g_logged[0] != 0, cases[i].warned);
        if (cases[i].warned) {
            CU_ASSERT_PTR_NOT_NULL(strstr(g_logged, "ATTN_CACHE_MAX_MB"));
            CU_ASSERT_PTR_NOT_NULL(strstr(g_logged, cases[i].text));
        }
    }
    attn_set_log_callback(NULL, NULL, ATTN_LOG_WARN);
}

/* ---- a context keeps its folder within ATTN_CACHE_MAX_MB ---- */

/* Child check: a context from the environment builds one program. */
static void child_build_one(void)
{
    attn_context *c = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &c), ATTN_SUCCESS);
    const attn_problem p = {.batch = 1, .q_heads = 2, .kv_heads = 1, .head_dim = 16, .q_len = 16,
                            .kv_len = 16, .dtype = ATTN_F32, .causal = 1};
    CU_ASSERT_EQUAL(attn_prepare(c, &p, NULL), ATTN_SUCCESS);
    attn_context_release(c);
}

enum { NFAKE = 3, FAKE_BYTES = 600 * 1024 };

/* A fresh folder holding NFAKE files named as cache files (that no key
 * will ask for), fake i used 3 - i days ago; their paths into fake. */
static void fake_cache(char *dir, size_t size, char fake[NFAKE][700])
{
    harness_temp_dir(dir, size, "bound-env");
    for (int i = 0; i < NFAKE; i++) {
        snprintf(fake[i], 700, "%s/%016llx.bin", dir, 0xabc0ull + (unsigned long long)i);
        write_bytes(fake[i], FAKE_BYTES);
        set_age(fake[i], (NFAKE - i) * 86400L);
    }
}

/* The bytes of the cache files in dir, not counting the fakes; all of them
 * into *all. */
static long long built_bytes(const char *dir, char fake[NFAKE][700], long long *all)
{
    long long built = 0;
    *all = 0;
    DIR *d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    struct dirent *e;
    char path[1100];
    while ((e = readdir(d)) != NULL) {
        const size_t n = strlen(e->d_name);
        if (n != 20 || strcmp(e->d_name + 16, ".bin") != 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        const long long s = size_of(path);
        *all += s;
        int is_fake = 0;
        for (int i = 0; i < NFAKE; i++) is_fake |= !strcmp(path, fake[i]);
        if (!is_fake) built += s;
    }
    closedir(d);
    return built;
}

static void test_context_keeps_bound(void)
{
    char dir[512], fake[NFAKE][700], env_dir[600], err[700];
    /* 1 MiB: the fakes (1.8 MiB) and the new program pass it; the oldest
     * fakes go first, the new program stays */
    fake_cache(dir, sizeof dir, fake);
    snprintf(env_dir, sizeof env_dir, "ATTN_CACHE_DIR=%s", dir);
    snprintf(err, sizeof err, "%s/stderr.txt", dir);
    const char *const one[] = {env_dir, "ATTN_CACHE_MAX_MB=1", "ATTN_LOG=info",
                               "ATTN_KERNEL_DIR", NULL};
    CU_ASSERT_EQUAL(harness_run_child("child_build_one", one, err), 0);
    long long all;
    const long long built = built_bytes(dir, fake, &all);
    printf("\n  ATTN_CACHE_MAX_MB=1: the program built %lld bytes; cache files %lld bytes after\n",
           built, all);
    CU_ASSERT(built > 0);
    CU_ASSERT(all <= (built > (1 << 20) ? built : (1 << 20)));
    CU_ASSERT(!exists(fake[0]));
    for (int i = 1; i < NFAKE; i++)
        if (exists(fake[i - 1])) CU_ASSERT(exists(fake[i])); /* older ones go first */
    char *log = harness_read_file(err, NULL);
    CU_ASSERT(log && strstr(log, "past its bound of 1.0 MiB (ATTN_CACHE_MAX_MB)"));
    free(log);
    harness_remove_tree(dir);

    /* the fakes used in the future (a clock that was ahead): the new
     * program is the least recently used, and stays */
    fake_cache(dir, sizeof dir, fake);
    for (int i = 0; i < NFAKE; i++) set_age(fake[i], -(i + 1) * 86400L);
    snprintf(env_dir, sizeof env_dir, "ATTN_CACHE_DIR=%s", dir);
    snprintf(err, sizeof err, "%s/stderr.txt", dir);
    CU_ASSERT_EQUAL(harness_run_child("child_build_one", one, err), 0);
    CU_ASSERT(built_bytes(dir, fake, &all) > 0);
    CU_ASSERT(!exists(fake[0]));
    harness_remove_tree(dir);

    /* 0: no bound; a value that is not a number: warned, and the default */
    const char *const values[] = {"ATTN_CACHE_MAX_MB=0", "ATTN_CACHE_MAX_MB=lots"};
    for (int v = 0; v < 2; v++) {
        fake_cache(dir, sizeof dir, fake);
        snprintf(env_dir, sizeof env_dir, "ATTN_CACHE_DIR=%s", dir);
        snprintf(err, sizeof err, "%s/stderr.txt", dir);
        const char *const env[] = {env_dir, values[v], "ATTN_LOG=warn", "ATTN_KERNEL_DIR", NULL};
        CU_ASSERT_EQUAL(harness_run_child("child_build_one", env, err), 0);
        for (int i = 0; i < NFAKE; i++) CU_ASSERT(exists(fake[i]));
        CU_ASSERT(built_bytes(dir, fake, &all) > 0);
        log = harness_read_file(err, NULL);
        CU_ASSERT(log != NULL);
        if (log) CU_ASSERT_EQUAL(strstr(log, "ATTN_CACHE_MAX_MB=\"lots\"") != NULL, v == 1);
        free(log);
        harness_remove_tree(dir);
    }
}

static const harness_test tests[] = {
    HARNESS_TEST(test_prune_least_recently_used),
    HARNESS_TEST(test_prune_down_to_three_quarters),
    HARNESS_TEST(test_bound_from_text),
    HARNESS_TEST(test_context_keeps_bound),
    HARNESS_END,
};

static const harness_test children[] = {
    HARNESS_TEST(child_build_one),
    HARNESS_END,
};

static void register_tests(void)
{
    harness_add_suite("cache_bound", tests);
    harness_add_children(children);
}

int main(void) { return harness_run("test_cache_bound", register_tests); }
