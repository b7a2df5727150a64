/* test_faults.c -- faults that come from outside attn's arguments, and that
 * the same context (or the next one) survives with correct results: a
 * program-cache folder that is missing, read-only (checked by an
 * unprivileged child when the tests run as root), or nameless; cache entries
 * that are folders, FIFOs, device files, dangling links, or whose header
 * lies about lengths; a process killed with SIGKILL while it writes the
 * cache; scratch allocations beyond the device's max allocation (simulated
 * by lowering the context's limit, and for real); kernel folders
 * (attn_context_set_kernel_dir) whose sources lack a kernel or are not files;
 * a tuning database path that is a folder, a FIFO or a device.
 *
 * Elsewhere: truncated and garbage cache files, a cache path under a
 * regular file, threads storing at once (test_cache.c: test_corrupt_files,
 * test_unwritable_cache_dir, test_concurrent_store); a kernel that does not
 * compile giving ATTN_ERROR_BUILD with the build log's head
 * (test_cache.c: test_kernel_dir). The tuning database's faults (kill -9 of
 * attn-tune mid-write, corrupt files) belong with the database (issue 3);
 * test_kill_during_store below is the pattern for them. */
#define _GNU_SOURCE /* setgroups */
#include "core/config.h"
#include "harness.h"
#include "core/context.h"
#include "core/errors.h"
#include "core/hash.h"
#include "core/program.h"
#include "tuning/tuning.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
static char self_path[4096];

/* ---- helpers ---- */

/* Entries of dir other than . and ..; *.tmp ones counted in *tmp. */
static int count_entries(const char *dir, int *tmp)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (tmp) *tmp = 0;
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        n++;
        size_t l = strlen(e->d_name);
        if (tmp && l > 4 && !strcmp(e->d_name + l - 4, ".tmp")) (*tmp)++;
    }
    closedir(d);
    return n;
}

/* A context on the cache folder cache_dir (NULL: the environment's), the
 * embedded sources and check mode off; NULL after a message. */
static attn_context *new_context(const char *cache_dir)
{
    attn_context *c = NULL;
    attn_status st = attn_context_create(getenv("ATTN_TEST_DEVICE"), &c);
    if (st != ATTN_SUCCESS) {
        printf("\n  attn_context_create: %s: %s\n", attn_status_name(st), attn_last_create_error());
        return NULL;
    }
    if ((cache_dir && (st = attn_context_set_cache_dir(c, cache_dir)) != ATTN_SUCCESS) ||
        (st = attn_context_set_kernel_dir(c, NULL)) != ATTN_SUCCESS ||
        (st = attn_context_set_check(c, 0)) != ATTN_SUCCESS) {
        printf("\n  configuring a context: %s: %s\n", attn_status_name(st), attn_last_error(c));
        attn_context_release(c);
        return NULL;
    }
    return c;
}

static attn_problem problem(int head_dim, int kv_len)
{
    attn_problem p = {.batch = 1, .q_heads = 2, .kv_heads = 1, .head_dim = head_dim, .q_len = 16,
                      .kv_len = kv_len, .dtype = ATTN_F32, .causal = 1, .scale = 0.0f};
    return p;
}

/* Runs this binary with args (argv[1..]) and extra environment entries
 * ("NAME=value", NULL-terminated), stdout and stderr to out_path (if not
 * NULL). Returns the child's pid, or -1. */
static pid_t spawn_self(const char *const args[], const char *const extra_env[],
                        const char *out_path)
{
    return harness_start_program(self_path, args, extra_env, out_path, NULL);
}

static int count_substr(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *s = hay; s && (s = strstr(s, needle)) != NULL; s += strlen(needle)) n++;
    return n;
}

/* The cache file a context writes for problem(16, 16), found by building it
 * into the (fresh, empty) cache folder dir. */
static void cache_file_of_small_problem(const char *dir, char *path, size_t size)
{
    attn_context *c = new_context(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    attn_problem p = problem(16, 16);
    CU_ASSERT_EQUAL_FATAL(attn_prepare(c, &p, NULL), ATTN_SUCCESS);
    attn_context_release(c);
    DIR *d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    struct dirent *e;
    path[0] = 0;
    while ((e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".bin")) snprintf(path, size, "%s/%s", dir, e->d_name);
    closedir(d);
    CU_ASSERT_FATAL(path[0] != 0);
}

/* ---- a missing folder, and none at all ---- */

static void test_missing_cache_dir(void)
{
    char base[512], deep[1024];
    harness_temp_dir(base, sizeof base, "missing");
    snprintf(deep, sizeof deep, "%s/not/yet/there", base);
    attn_problem p = problem(16, 16);
    attn_context *c = new_context(deep);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(harness_forward_check(c, &p, 1), 0);
    CU_ASSERT_EQUAL(c->programs_built, 1);
    attn_context_release(c);
    CU_ASSERT_EQUAL(count_entries(deep, NULL), 1); /* made, and the program stored */
    c = new_context(deep);
    CU_ASSERT_EQUAL(harness_forward_check(c, &p, 2), 0);
    CU_ASSERT_EQUAL(c->programs_from_disk, 1);
    attn_context_release(c);
    harness_remove_tree(base);
}

/* Child check, ATTN_CACHE_DIR, XDG_CACHE_HOME and HOME unset: nothing names
 * a folder, so no disk cache, and every context builds. */
static void child_no_cache_dir_named(void)
{
    attn_problem p = problem(16, 16);
    char dir[16];
    CU_ASSERT_EQUAL(attn_disk_cache_dir(dir, sizeof dir), 0);
    for (int round = 0; round < 2; round++) {
        attn_context *c = new_context(NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_PTR_NULL(c->cache_dir);
        CU_ASSERT_EQUAL(harness_forward_check(c, &p, 3), 0);
        CU_ASSERT_EQUAL(c->programs_built, 1);
        attn_context_release(c);
    }
}

/* Child check, ATTN_CACHE_DIR a name too long for any path: right results. */
static void child_cache_dir_too_long(void)
{
    attn_problem p = problem(16, 16);
    attn_context *c = new_context(NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(harness_forward_check(c, &p, 4), 0);
    attn_context_release(c);
}

static void test_no_cache_dir_named(void)
{
    const char *const none[] = {"ATTN_CACHE_DIR", "XDG_CACHE_HOME", "HOME", NULL};
    CU_ASSERT_EQUAL(harness_run_child("child_no_cache_dir_named", none, NULL), 0);
    /* a name too long for any path, from the environment and by the API */
    enum { LONG = 5999 };
    char *longname = malloc(LONG + 16);
    CU_ASSERT_PTR_NOT_NULL_FATAL(longname);
    const size_t at = (size_t)sprintf(longname, "ATTN_CACHE_DIR=/");
    memset(longname + at, 'x', LONG - 1);
    longname[at + LONG - 1] = 0;
    const char *const too_long[] = {longname, NULL};
    CU_ASSERT_EQUAL(harness_run_child("child_cache_dir_too_long", too_long, NULL), 0);
    attn_problem p = problem(16, 16);
    attn_context *c = new_context(longname + at - 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(strlen(c->cache_dir), LONG);
    CU_ASSERT_EQUAL(harness_forward_check(c, &p, 4), 0);
    attn_context_release(c);
    free(longname);
}

/* ---- a read-only folder, seen by a process that cannot write it ---- */

/* The child: drops root (to nobody) if it is root, checks that the folder
 * really cannot be written, then builds and runs two programs. Exit: 0 ok,
 * 77 cannot drop privileges, 78 the folder is writable, 1 a wrong result. */
static int child_readonly(const char *dir)
{
    if (geteuid() == 0 &&
        (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) {
        printf("child: cannot drop root: %s\n", strerror(errno));
        return 77;
    }
    char probe[1200];
    snprintf(probe, sizeof probe, "%s/probe", dir);
    int fd = open(probe, O_WRONLY | O_CREAT, 0644);
    if (fd >= 0) {
        close(fd);
        return 78;
    }
    attn_context *c = new_context(dir);
    if (!c) return 1;
    attn_problem p1 = problem(16, 16), p2 = problem(8, 24);
    int r = harness_forward_check(c, &p1, 5) || harness_forward_check(c, &p2, 6);
    printf("child: uid %d, built %u programs, %s\n", (int)geteuid(), c->programs_built,
           r ? "WRONG" : "right");
    attn_context_release(c);
    return r ? 1 : 0;
}

static void test_readonly_cache_dir(void)
{
    char base[512], ro[1024], out[1024];
    harness_temp_dir(base, sizeof base, "readonly");
    CU_ASSERT_EQUAL_FATAL(chmod(base, 0755), 0); /* the unprivileged child must get in */
    snprintf(ro, sizeof ro, "%s/ro", base);
    snprintf(out, sizeof out, "%s/child.log", base);
    CU_ASSERT_EQUAL_FATAL(mkdir(ro, 0555), 0);
    char pocl_dir[1200], pocl_env[1300];
    /* PoCL builds in its cache folder; the build tree's is not writable for nobody */
    snprintf(pocl_dir, sizeof pocl_dir, "%s/pocl", base);
    CU_ASSERT_EQUAL_FATAL(mkdir(pocl_dir, 0777), 0);
    CU_ASSERT_EQUAL_FATAL(chmod(pocl_dir, 0777), 0); /* past the umask */
    snprintf(pocl_env, sizeof pocl_env, "POCL_CACHE_DIR=%s", pocl_dir);
    /* the child compiles its kernels afresh: under ASan, without the slow
     * unwinder that the leak suppressions need (its leaks are not the point) */
    const char *const extra[] = {pocl_env, "ATTN_LOG=warn", "ASAN_OPTIONS=detect_leaks=0",
                                 NULL};
    const char *const args[] = {"--child-readonly", ro, NULL};
    int rc = harness_wait_program(spawn_self(args, extra, out));
    char *log = harness_read_file(out, NULL);
    printf("\n  read-only cache folder: child exit %d; its output:\n%s", rc, log ? log : "(none)");
    if (rc == 77 || rc == 78) {
        printf("  (skipped: %s)\n", rc == 77 ? "cannot drop root" : "the folder is writable");
    } else {
        CU_ASSERT_EQUAL(rc, 0);
        CU_ASSERT_EQUAL(count_entries(ro, NULL), 0);
        /* one warning for the process, not one per program */
        CU_ASSERT_EQUAL(count_substr(log, "is not writable"), 1);
    }
    free(log);
    harness_remove_tree(base);
}

/* ---- odd things in place of a cache file ---- */

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "\ntest_faults: timed out (a cache entry or tuning database hung its reader)\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(3);
}

/* Puts kind k at path, replacing what was there (never through a link:
 * only the entry itself goes): 0 a folder, 1 a FIFO, 2 a link to /dev/zero,
 * 3 a dangling link, 4 a link to the folder elsewhere. 0 when made. */
static int make_odd_entry(const char *path, int kind, const char *elsewhere)
{
    if (unlink(path) != 0) rmdir(path);
    switch (kind) {
    case 0: return mkdir(path, 0755);
    case 1: return mkfifo(path, 0644);
    case 2: return symlink("/dev/zero", path);
    case 3: return symlink("/nonexistent/attn/entry", path);
    case 4: return symlink(elsewhere, path);
    }
    return -1;
}

static void test_odd_cache_entries(void)
{
    char dir[512], path[1024];
    harness_temp_dir(dir, sizeof dir, "odd");
    cache_file_of_small_problem(dir, path, sizeof path);
    char elsewhere[512];
    harness_temp_dir(elsewhere, sizeof elsewhere, "elsewhere");
    static const char *kinds[] = {"folder", "FIFO", "link to /dev/zero", "dangling link",
                                  "link to a folder"};
    attn_problem p = problem(16, 16);
    signal(SIGALRM, on_alarm);
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL_FATAL(make_odd_entry(path, i, elsewhere), 0);
        alarm(60); /* before the fix a FIFO blocked the open forever */
        attn_context *c = new_context(dir);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        int r = harness_forward_check(c, &p, 10 + (uint64_t)i);
        CU_ASSERT_EQUAL(r, 0);
        CU_ASSERT_EQUAL(c->programs_built, 1);
        CU_ASSERT_EQUAL(c->programs_from_disk, 0);
        attn_context_release(c);
        /* the store replaced the entry with a valid file, except a folder
         * (rename cannot replace it): then every process rebuilds */
        c = new_context(dir);
        CU_ASSERT_EQUAL(harness_forward_check(c, &p, 20 + (uint64_t)i), 0);
        CU_ASSERT_EQUAL(c->programs_from_disk, i == 0 ? 0 : 1);
        printf("\n  cache entry is a %s: rebuilt, then %s", kinds[i],
               c->programs_from_disk ? "replaced by a valid file"
                                     : "left alone (rebuilt each time)");
        attn_context_release(c);
        alarm(0);
        int tmp;
        count_entries(dir, &tmp);
        CU_ASSERT_EQUAL(tmp, 0);
    }
    signal(SIGALRM, SIG_DFL);
    printf("\n");
    CU_ASSERT_EQUAL(count_entries(elsewhere, NULL), 0);
    harness_remove_tree(elsewhere);
    harness_remove_tree(dir);
}

/* The tuning database's path naming a folder, a FIFO or a device: each
 * plan reads it, so a FIFO that blocked the open held the context's lock
 * forever (an audit's finding); now it is refused as not a regular file,
 * and the context plans without it. */
static void test_odd_tuning_db(void)
{
    char dir[512], path[1024];
    harness_temp_dir(dir, sizeof dir, "odd-db");
    snprintf(path, sizeof path, "%s/tuning.json", dir);
    static const char *kinds[] = {"folder", "FIFO", "link to /dev/zero"};
    attn_problem p = problem(16, 16);
    signal(SIGALRM, on_alarm);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL_FATAL(make_odd_entry(path, i, NULL), 0);
        alarm(60);
        attn_tuning_db db;
        memset(&db, 0, sizeof db);
        char err[1200] = "";
        int missing = -1;
        CU_ASSERT_EQUAL(attn_tuning_db_load(path, &db, &missing, err, sizeof err),
                        ATTN_ERROR_TUNING_DB);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "not a regular file"));
        CU_ASSERT_EQUAL(missing, 0);
        attn_tuning_db_free(&db);
        attn_context *c = new_context(NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_EQUAL(attn_context_set_tuning_db(c, path, ""), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(harness_forward_check(c, &p, 30 + (uint64_t)i), 0);
        attn_context_release(c);
        alarm(0);
        printf("\n  tuning database is a %s: %s; planned without it", kinds[i], err);
    }
    signal(SIGALRM, SIG_DFL);
    printf("\n");
    if (unlink(path) != 0) rmdir(path);
    harness_remove_tree(dir);
}

/* Headers that lie: lengths far beyond the file, a key length of 4 GiB. */
static void test_lying_cache_headers(void)
{
    char dir[512], path[1024];
    harness_temp_dir(dir, sizeof dir, "lying");
    cache_file_of_small_problem(dir, path, sizeof path);
    FILE *f = fopen(path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    static unsigned char good[1 << 20];
    size_t len = fread(good, 1, sizeof good, f);
    fclose(f);
    CU_ASSERT_FATAL(len > 64 && len < sizeof good);
    const struct { const char *what; size_t at; uint64_t value; int bytes; } lies[] = {
        {"binary length 1 GiB (under the 2 GiB cap)", 16, (uint64_t)1 << 30, 8},
        {"binary length 2 GiB", 16, (uint64_t)1 << 31, 8},
        {"binary length one byte more", 16, 0, 8}, /* filled below */
        {"binary length zero", 16, 0, 8},
        {"key length 4 GiB - 1", 12, 0xffffffffu, 4},
        {"format version 0", 8, 0, 4},
    };
    uint64_t real_len;
    memcpy(&real_len, good + 16, 8);
    attn_problem p = problem(16, 16);
    for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
        unsigned char *bad = malloc(len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
        memcpy(bad, good, len);
        uint64_t v = i == 2 ? real_len + 1 : lies[i].value;
        memcpy(bad + lies[i].at, &v, (size_t)lies[i].bytes);
        f = fopen(path, "wb");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        CU_ASSERT_EQUAL(fwrite(bad, 1, len, f), len);
        fclose(f);
        free(bad);
        attn_context *c = new_context(dir);
        CU_ASSERT_EQUAL(harness_forward_check(c, &p, 30 + i), 0);
        CU_ASSERT_EQUAL(c->programs_built, 1);
        printf("\n  cache header with %s: %s", lies[i].what,
               c->programs_built == 1 ? "rebuilt" : "NOT REBUILT");
        attn_context_release(c);
    }
    printf("\n");
    harness_remove_tree(dir);
}

/* ---- SIGKILL while the cache is being written ---- */

enum { STORE_BYTES = 8 << 20 };
static const char STORE_KEY[] = "test_faults kill-during-store key";

static unsigned char *store_payload(void)
{
    unsigned char *b = malloc(STORE_BYTES);
    if (!b) return NULL;
    harness_rng r;
    harness_rng_seed(&r, 77);
    for (size_t i = 0; i < STORE_BYTES; i += 8) {
        uint64_t x = harness_rng_next(&r);
        memcpy(b + i, &x, 8);
    }
    return b;
}

/* The child: stores the same 8 MiB binary into dir over and over until
 * killed. */
static int child_store(const char *dir)
{
    unsigned char *b = store_payload();
    if (!b) return 1;
    uint64_t key = attn_hash_str(ATTN_HASH_INIT, STORE_KEY);
    for (;;) attn_disk_cache_store(dir, STORE_KEY, key, b, STORE_BYTES);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_kill_during_store(void)
{
    char dir[512];
    harness_temp_dir(dir, sizeof dir, "kill");
    unsigned char *want = store_payload();
    CU_ASSERT_PTR_NOT_NULL_FATAL(want);
    const uint64_t key = attn_hash_str(ATTN_HASH_INIT, STORE_KEY);
    int stale_total = 0;
    for (int round = 0; round < 6; round++) {
        const char *const args[] = {"--child-store", dir, NULL};
        pid_t pid = spawn_self(args, NULL, NULL);
        CU_ASSERT_FATAL(pid > 0);
        /* rounds 0-1: killed before the first rename can have happened or
         * soon after; later rounds: while rewriting a complete file */
        struct timespec d = {0, (long)(3 + round * 17) * 1000000L};
        nanosleep(&d, NULL);
        kill(pid, SIGKILL);
        CU_ASSERT_EQUAL(harness_wait_program(pid), 128 + SIGKILL);
        unsigned char *bin = NULL;
        size_t len = 0;
        int hit = attn_disk_cache_load(dir, STORE_KEY, key, &bin, &len);
        /* either nothing yet, or the whole binary: never a torn one */
        if (hit) CU_ASSERT(len == STORE_BYTES && memcmp(bin, want, STORE_BYTES) == 0);
        int tmp;
        count_entries(dir, &tmp);
        stale_total += tmp;
        printf("\n  SIGKILL after %2d ms: %s, %d stale temporary file(s)", 3 + round * 17,
               hit ? "the complete binary is there" : "no file yet", tmp);
        free(bin);
    }
    /* and a later writer still works (stale temporary files are harmless) */
    double t0 = now_s();
    attn_disk_cache_store(dir, STORE_KEY, key, want, STORE_BYTES);
    unsigned char *bin = NULL;
    size_t len = 0;
    CU_ASSERT_EQUAL(attn_disk_cache_load(dir, STORE_KEY, key, &bin, &len), 1);
    CU_ASSERT(bin && len == STORE_BYTES && memcmp(bin, want, STORE_BYTES) == 0);
    printf("\n  after the kills: stored and loaded back in %.0f ms; %d stale temporary files "
           "in all (each killed write can leave one)\n", (now_s() - t0) * 1e3, stale_total);
    free(bin);
    free(want);
    harness_remove_tree(dir);
}

/* ---- scratch beyond the device's max allocation ---- */

static attn_problem vector_problem(int head_dim, int kv_len)
{
    attn_problem p = {.batch = 1, .q_heads = 1, .kv_heads = 1, .head_dim = head_dim, .q_len = 1,
                      .kv_len = kv_len, .dtype = ATTN_F16, .causal = 1, .scale = 0.0f};
    return p;
}

/* The limit lowered on the context: a problem whose packed K/V would need
 * more fails with ATTN_ERROR_OUT_OF_MEMORY, and the context goes on. */
static void test_scratch_limit_simulated(void)
{
    attn_context *c = new_context(NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    /* the family with scratch buffers */
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(c, "family=vector"), ATTN_SUCCESS);
    attn_problem small = problem(16, 16), big = problem(16, 200);
    CU_ASSERT_EQUAL_FATAL(harness_forward_check(c, &small, 40), 0);
    const cl_ulong real_limit = c->max_alloc;
    const size_t have = c->kt.bytes;
    CU_ASSERT_FATAL(have > 0);
    c->max_alloc = have; /* the small problem's scratch fits exactly, nothing more */
    CU_ASSERT_EQUAL(harness_forward_check(c, &big, 41), ATTN_ERROR_OUT_OF_MEMORY);
    printf("\n  over the (lowered) limit: %s", attn_last_error(c));
    CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(c), "max allocation"));
    CU_ASSERT_EQUAL(c->kt.bytes, have); /* the old scratch is kept */
    CU_ASSERT_EQUAL(harness_forward_check(c, &small, 42), 0);
    CU_ASSERT_STRING_EQUAL(attn_last_error(c), "");
    c->max_alloc = real_limit;
    CU_ASSERT_EQUAL(harness_forward_check(c, &big, 43), 0);
    printf("\n");
    attn_context_release(c);
}

/* For real: D = 1 pads to 16 floats per key in the packed K and V, so the
 * scratch is 32 times the caller's f16 K; a kv_len just past the device's
 * max allocation / 64 needs more scratch than one allocation may hold, with
 * K and V buffers the device can give. */
static void test_scratch_limit_real(void)
{
    attn_context *c = new_context(NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(c, "family=vector,vec=16"), ATTN_SUCCESS);
    const cl_ulong limit = c->max_alloc;
    const cl_ulong kv = limit / (16 * 4) + 64;
    if (kv > (1u << 30) || kv * 2 > ((cl_ulong)600 << 20)) {
        printf("\n  skipped: max allocation %llu bytes needs K/V buffers over 600 MiB\n",
               (unsigned long long)limit);
        attn_context_release(c);
            return;
    }
    attn_problem p = vector_problem(1, (int)kv);
    cl_int err;
    cl_context cl = attn_context_cl_context(c);
    cl_mem q = clCreateBuffer(cl, CL_MEM_READ_WRITE, 64, NULL, &err);
    cl_mem o = clCreateBuffer(cl, CL_MEM_READ_WRITE, 64, NULL, &err);
    cl_mem k = clCreateBuffer(cl, CL_MEM_READ_ONLY, (size_t)kv * 2, NULL, &err);
    cl_mem v = clCreateBuffer(cl, CL_MEM_READ_ONLY, (size_t)kv * 2, NULL, &err);
    CU_ASSERT_FATAL(q && o && k && v);
    attn_tensor tq = {q, 0, 1, 1, 1}, to = {o, 0, 1, 1, 1};
    attn_tensor tk = {k, 0, (size_t)kv, (size_t)kv, 1}, tv = {v, 0, (size_t)kv, (size_t)kv, 1};
    attn_status st = attn_forward(c, &p, &tq, &tk, &tv, &to, NULL, NULL, NULL);
    printf("\n  kv_len %llu, D=1 (max allocation %llu bytes): %s: %s\n", (unsigned long long)kv,
           (unsigned long long)limit, attn_status_name(st), attn_last_error(c));
    CU_ASSERT(st == ATTN_ERROR_OUT_OF_MEMORY || st == ATTN_ERROR_INVALID_ARGUMENT);
    CU_ASSERT(attn_last_error(c)[0] != 0);
    /* attn's own check names the scratch and the limit (any message passed) */
    if (st == ATTN_ERROR_OUT_OF_MEMORY)
        CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(c), "exceeds the device's max allocation"));
    /* a driver that reported a larger limit than it honours: attn's own check
     * passes and clCreateBuffer refuses the scratch -- only if this driver
     * refuses it (the spec says it must), never letting a kernel touch it */
    const size_t scratch = (size_t)(kv + 64) * 16 * 4;
    cl_mem probe = clCreateBuffer(cl, CL_MEM_READ_WRITE, scratch, NULL, &err);
    if (probe) {
        clReleaseMemObject(probe);
        printf("  (the driver gives %zu bytes past its limit: driver refusal not tried)\n",
               scratch);
    } else {
        c->max_alloc = ~(cl_ulong)0;
        st = attn_forward(c, &p, &tq, &tk, &tv, &to, NULL, NULL, NULL);
        printf("  the same past attn's check, refused by the driver: %s: %s\n",
               attn_status_name(st), attn_last_error(c));
        CU_ASSERT_EQUAL(st, ATTN_ERROR_OUT_OF_MEMORY);
        CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(c), "clCreateBuffer"));
        c->max_alloc = limit;
    }
    clReleaseMemObject(q), clReleaseMemObject(o), clReleaseMemObject(k), clReleaseMemObject(v);
    attn_problem small = problem(16, 16);
    CU_ASSERT_EQUAL(harness_forward_check(c, &small, 44), 0); /* still usable */
    attn_context_release(c);
}

/* ---- kernel folders with sources that are not what they should be ---- */

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
}

static void test_kernel_dir_faults(void)
{
    char cache[512], kdir[512];
    harness_temp_dir(cache, sizeof cache, "kcache");
    harness_temp_dir(kdir, sizeof kdir, "kdir");
    attn_context *c = new_context(cache);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    static const char *names[] = {"common.cl",      "tile.cl",           "tiled_core.cl",
                                  "tiled.cl",       "vector.cl",         "peak.cl",
                                  "vector_core.cl", "vector_helpers.cl", "variants.cl",
                                  "mask_tiles.cl"};
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++) {
        char *text = attn_kernel_source(c, names[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(text);
        write_file(kdir, names[i], text);
        free(text);
    }
    attn_context_release(c);
    c = new_context(cache);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_kernel_dir(c, kdir), ATTN_SUCCESS);
    attn_problem p = problem(16, 16);
    char path[1024];
    const char *fams[] = {"family=vector", "family=tiled"};
    for (int f = 0; f < 2; f++) {
        CU_ASSERT_EQUAL_FATAL(attn_context_set_params(c, fams[f]), ATTN_SUCCESS);
        const char *file = f == 0 ? "vector.cl" : "tiled.cl";
        snprintf(path, sizeof path, "%s/%s", kdir, file);
        char *keep = attn_kernel_source(c, file);
        CU_ASSERT_PTR_NOT_NULL_FATAL(keep);

        /* compiles, but holds no kernel of the expected name */
        write_file(kdir, file,
                   "__kernel void not_the_kernel(__global float *x) { x[0] = 1.0f; }\n");
        int st = harness_forward_check(c, &p, 50);
        printf("\n  %s without its kernels: %s: %s", file, attn_status_name((attn_status)st),
               attn_last_error(c));
        CU_ASSERT_EQUAL(st, ATTN_ERROR_OPENCL);
        CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(c), "clCreateKernel"));
        /* empty */
        write_file(kdir, file, "");
        st = harness_forward_check(c, &p, 51);
        CU_ASSERT(st == ATTN_ERROR_OPENCL || st == ATTN_ERROR_BUILD);
        printf("\n  %s empty: %s", file, attn_status_name((attn_status)st));
        /* a folder in its place */
        remove(path);
        CU_ASSERT_EQUAL_FATAL(mkdir(path, 0755), 0);
        st = harness_forward_check(c, &p, 52);
        printf("\n  %s a folder: %s: %s", file, attn_status_name((attn_status)st),
               attn_last_error(c));
        CU_ASSERT_EQUAL(st, ATTN_ERROR_IO);
        CU_ASSERT_PTR_NOT_NULL(strstr(attn_last_error(c), file));
        rmdir(path);
        /* put back: the same context works again */
        write_file(kdir, file, keep);
        free(keep);
        CU_ASSERT_EQUAL(harness_forward_check(c, &p, 53), 0);
    }
    printf("\n");
    attn_context_release(c);
    harness_remove_tree(cache);
    harness_remove_tree(kdir);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_missing_cache_dir),
    HARNESS_TEST(test_no_cache_dir_named),
    HARNESS_TEST(test_readonly_cache_dir),
    HARNESS_TEST(test_odd_cache_entries),
    HARNESS_TEST(test_odd_tuning_db),
    HARNESS_TEST(test_lying_cache_headers),
    HARNESS_TEST(test_kill_during_store),
    HARNESS_TEST(test_scratch_limit_simulated),
    HARNESS_TEST(test_scratch_limit_real),
    HARNESS_TEST(test_kernel_dir_faults),
    HARNESS_END,
};

static const harness_test children[] = {
    HARNESS_TEST(child_no_cache_dir_named),
    HARNESS_TEST(child_cache_dir_too_long),
    HARNESS_END,
};

static void register_tests(void)
{
    harness_add_suite("faults", tests);
    harness_add_children(children);
}

int main(int argc, char **argv)
{
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n > 0) self_path[n] = 0;
    else snprintf(self_path, sizeof self_path, "%s", argv[0]);
    if (argc > 2 && strcmp(argv[1], "--child-readonly") == 0) return child_readonly(argv[2]);
    if (argc > 2 && strcmp(argv[1], "--child-store") == 0) return child_store(argv[2]);
    return harness_run("test_faults", register_tests);
}
