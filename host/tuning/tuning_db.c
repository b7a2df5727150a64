/* tuning_db.c -- the tuning database as a JSON file (cJSON): its entries in
 * memory, its default paths, writing it atomically (temporary file,
 * rename), and read-merge-write under a lock so that concurrent tuners lose
 * nothing. Reading is tuning_db_read.c; lookup lives in tuning_lookup.c. */
#define _DEFAULT_SOURCE /* flock */
#include "core/config.h"
#include "core/file_write.h"
#include "core/log.h"
#include "tuning/tuning.h"
#include "attention/variants.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>


#ifndef ATTN_SYSTEM_TUNING_DB_DEFAULT
#define ATTN_SYSTEM_TUNING_DB_DEFAULT "/usr/share/attn/tuning.json"
#endif

void attn_tuning_db_init(attn_tuning_db *db) { memset(db, 0, sizeof *db); }

void attn_tuning_db_free(attn_tuning_db *db)
{
    free(db->entries);
    memset(db, 0, sizeof *db);
}

int attn_tuning_same_slot(const attn_tuning_entry *a, const attn_tuning_entry *b)
{
    return attn_device_exact(&a->device, &b->device) && attn_shape_class_equal(&a->cls, &b->cls) &&
           strcmp(a->foreign_class, b->foreign_class) == 0;
}

int attn_tuning_db_put(attn_tuning_db *db, const attn_tuning_entry *e)
{
    for (size_t i = 0; i < db->count; i++)
        if (attn_tuning_same_slot(&db->entries[i], e)) {
            db->entries[i] = *e;
            return 0;
        }
    return attn_tuning_db_append(db, e);
}

int attn_tuning_db_append(attn_tuning_db *db, const attn_tuning_entry *e)
{
    if (db->count == db->capacity) {
        size_t cap = db->capacity ? db->capacity * 2 : 16;
        attn_tuning_entry *grown = realloc(db->entries, cap * sizeof *grown);
        if (!grown) return -1;
        db->entries = grown;
        db->capacity = cap;
    }
    db->entries[db->count++] = *e;
    return 0;
}

/* device (driver included), then class; ties in array order */
static int slot_order(const void *pa, const void *pb)
{
    const attn_tuning_entry *a = *(const attn_tuning_entry *const *)pa;
    const attn_tuning_entry *b = *(const attn_tuning_entry *const *)pb;
    int c = attn_device_compare(&a->device, &b->device);
    if (!c) c = attn_shape_class_compare(&a->cls, &b->cls);
    if (!c) c = strcmp(a->foreign_class, b->foreign_class);
    return c ? c : (a > b) - (a < b);
}

int attn_tuning_db_dedupe(attn_tuning_db *db)
{
    const size_t n = db->count;
    if (n < 2) return 0;
    const attn_tuning_entry **order = malloc(n * sizeof *order);
    unsigned char *dropped = calloc(n, 1);
    if (!order || !dropped) {
        free(order);
        free(dropped);
        return -1;
    }
    for (size_t i = 0; i < n; i++) order[i] = &db->entries[i];
    qsort(order, n, sizeof *order, slot_order);
    /* a run of one slot: the first keeps its place, the last its value */
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && attn_tuning_same_slot(order[j], order[i]); j++)
            dropped[order[j] - db->entries] = 1;
        if (j - i > 1) db->entries[order[i] - db->entries] = *order[j - 1];
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (!dropped[i]) db->entries[kept++] = db->entries[i];
    db->count = kept;
    free(order);
    free(dropped);
    return 0;
}

/* ---- where the files are ---- */

int attn_tuning_db_user_path(char *buf, size_t size)
{
    return attn_env_path(buf, size, "ATTN_TUNING_DB", "XDG_DATA_HOME", "attn/tuning.json",
                         ".local/share/attn/tuning.json");
}

int attn_tuning_db_system_path(char *buf, size_t size)
{
    const char *env = getenv("ATTN_SYSTEM_TUNING_DB");
    if (env) /* set but empty: no system-wide file */
        return *env &&
               attn_path_fits(snprintf(buf, size, "%s", env), size, "ATTN_SYSTEM_TUNING_DB");
    return attn_path_fits(snprintf(buf, size, "%s", ATTN_SYSTEM_TUNING_DB_DEFAULT), size,
                          "the build's system tuning database");
}

/* ---- writing ---- */

static const char *level_name(int level)
{
    return level >= ATTN_TUNE_LEVEL_FULL ? "full" : "quick";
}

/* The spread beside a median, when one was recorded. */
static void add_spread(cJSON *obj, const attn_time_spread *s)
{
    if (!(s->max_ms > 0)) return;
    cJSON_AddNumberToObject(obj, "min_ms", s->min_ms);
    cJSON_AddNumberToObject(obj, "q1_ms", s->q1_ms);
    cJSON_AddNumberToObject(obj, "q3_ms", s->q3_ms);
    cJSON_AddNumberToObject(obj, "max_ms", s->max_ms);
}

static void add_class(cJSON *entry, const attn_shape_class *c)
{
    cJSON *o = cJSON_AddObjectToObject(entry, "class");
    cJSON_AddNumberToObject(o, "head_dim", c->head_dim);
    cJSON_AddStringToObject(o, "dtype", attn_dtype_name(c->dtype));
    cJSON_AddBoolToObject(o, "causal", c->causal);
    cJSON_AddNumberToObject(o, "group", c->group);
    cJSON_AddNumberToObject(o, "q_bucket", c->q_bucket);
    cJSON_AddNumberToObject(o, "kv_bucket", c->kv_bucket);
    if (c->decode) cJSON_AddBoolToObject(o, "decode", 1);
    if (c->kv_int8) cJSON_AddBoolToObject(o, "kv_int8", 1);
    if (c->kv_block) cJSON_AddNumberToObject(o, "kv_block", c->kv_block);
    if (c->variants) {
        char v[96];
        attn_variant_names(c->variants, v, sizeof v);
        cJSON_AddStringToObject(o, "variants", v);
    }
}

/* Puts back the fields of an entry (or the file's top level) this build
 * did not read (e->extra, db->extra): members of an object this build also
 * writes ("device", "shape", ...) into it, the others beside them. */
static int add_extra(cJSON *entry, const char *extra)
{
    if (!extra[0]) return 0;
    cJSON *x = cJSON_Parse(extra);
    int failed = !x; /* out of memory: the reader checked the text */
    while (x && x->child && !failed) {
        cJSON *item = cJSON_DetachItemViaPointer(x, x->child);
        cJSON *into = cJSON_GetObjectItemCaseSensitive(entry, item->string);
        if (cJSON_IsObject(item) && cJSON_IsObject(into)) {
            while (item->child && !failed) {
                cJSON *m = cJSON_DetachItemViaPointer(item, item->child);
                if (!cJSON_AddItemToObject(into, m->string, m)) {
                    cJSON_Delete(m);
                    failed = 1;
                }
            }
            cJSON_Delete(item);
        } else if (!cJSON_AddItemToObject(entry, item->string, item)) {
            cJSON_Delete(item);
            failed = 1;
        }
    }
    cJSON_Delete(x);
    return failed ? -1 : 0;
}

char *attn_tuning_db_print(const attn_tuning_db *db)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON_AddStringToObject(root, "format", ATTN_TUNING_DB_FORMAT);
    cJSON_AddNumberToObject(root, "version", ATTN_TUNING_DB_VERSION);
    cJSON *arr = cJSON_AddArrayToObject(root, "entries");
    int lost = 0; /* a kept text that could not be parsed back: out of memory */
    for (size_t i = 0; arr && i < db->count; i++) {
        const attn_tuning_entry *e = &db->entries[i];
        cJSON *j = cJSON_CreateObject();
        if (!j) break;
        cJSON_AddItemToArray(arr, j);
        cJSON *d = cJSON_AddObjectToObject(j, "device");
        cJSON_AddStringToObject(d, "platform", e->device.platform);
        cJSON_AddStringToObject(d, "vendor", e->device.vendor);
        cJSON_AddStringToObject(d, "name", e->device.name);
        cJSON_AddStringToObject(d, "driver", e->device.driver);
        cJSON_AddNumberToObject(d, "compute_units", e->device.compute_units);
        cJSON_AddStringToObject(j, "kernel_hash", e->kernel_hash);
        cJSON_AddStringToObject(j, "tool_version", e->tool_version);
        cJSON_AddStringToObject(j, "date", e->date);
        if (e->foreign_why[0]) { /* verbatim, as a newer attn wrote it */
            cJSON *fc = cJSON_Parse(e->foreign_class);
            if (!cJSON_AddItemToObject(j, "class", fc)) {
                cJSON_Delete(fc);
                lost = 1;
            }
        } else {
            add_class(j, &e->cls);
        }
        if (e->batch > 0) {
            cJSON *s = cJSON_AddObjectToObject(j, "shape");
            cJSON_AddNumberToObject(s, "batch", e->batch);
            cJSON_AddNumberToObject(s, "q_heads", e->q_heads);
            cJSON_AddNumberToObject(s, "kv_heads", e->kv_heads);
            cJSON_AddNumberToObject(s, "q_len", e->q_len);
            cJSON_AddNumberToObject(s, "kv_len", e->kv_len);
        }
        cJSON_AddStringToObject(j, "params", e->params);
        cJSON_AddNumberToObject(j, "median_ms", e->median_ms);
        cJSON_AddNumberToObject(j, "gflops", e->gflops);
        add_spread(j, &e->spread);
        cJSON *df = cJSON_AddObjectToObject(j, "default");
        cJSON_AddStringToObject(df, "params", e->default_params);
        cJSON_AddNumberToObject(df, "median_ms", e->default_ms);
        cJSON_AddNumberToObject(df, "gflops", e->default_gflops);
        add_spread(df, &e->default_spread);
        cJSON *v = cJSON_AddObjectToObject(j, "verification");
        cJSON_AddNumberToObject(v, "max_error", e->max_error);
        cJSON_AddNumberToObject(v, "error_ratio", e->error_ratio);
        cJSON_AddStringToObject(j, "level", level_name(e->level));
        cJSON *cd = cJSON_AddObjectToObject(j, "candidates");
        cJSON_AddNumberToObject(cd, "tested", e->tested);
        cJSON_AddNumberToObject(cd, "rejected", e->rejected);
        if (e->cut_short) cJSON_AddBoolToObject(cd, "cut_short", 1);
        lost |= add_extra(j, e->extra) != 0;
    }
    lost |= add_extra(root, db->extra) != 0;
    char *text = lost ? NULL : cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

/* Path's folder into dir ("." when it names none, "/" for the root's
 * files); returns its base name, within path. */
static const char *folder_of(const char *path, char *dir, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, size, ".");
    else if (slash == path) snprintf(dir, size, "/");
    else snprintf(dir, size, "%.*s", (int)(slash - path), path);
    return slash ? slash + 1 : path;
}

/* 1, with err set, when path is a file this process may not write (its
 * mode, a read-only mount) or one nobody may (no write bit: root passes
 * access() whatever the mode): the rename would replace it all the same,
 * and a database made read-only on purpose must stay as it is. */
static int read_only(const char *path, char *err, size_t errsize)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return 0; /* none yet */
    const int no_bits = (sb.st_mode & 0222) == 0;
    if (!no_bits && access(path, W_OK) == 0) return 0;
    snprintf(err, errsize, "%s: the file is not writable (%s), so it is not replaced; make it "
             "writable, or name another file in ATTN_TUNING_DB", path,
             no_bits ? "no write permission bits" : strerror(errno));
    return 1;
}

/* The rename reaches the disk with the folder's entry: without this, a
 * crash soon after could bring back the old file, or none. Best effort
 * (some file systems cannot sync a folder); the data itself was synced. */
static void sync_folder(const char *path)
{
    char dir[4096];
    folder_of(path, dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return;
    fsync(fd);
    close(fd);
}

/* The file a symbolic link names (a dotfile kept elsewhere): the rename
 * must replace it, not the link. Else path itself. A link to a file not
 * made yet is followed one step (relative to the link's folder). */
static const char *link_target(const char *path, char buf[PATH_MAX])
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode)) return path;
    if (realpath(path, buf)) return buf;
    char to[PATH_MAX];
    const ssize_t n = readlink(path, to, sizeof to - 1);
    if (n <= 0) return path;
    to[n] = 0;
    const char *slash = strrchr(path, '/');
    const int dir = to[0] == '/' || !slash ? 0 : (int)(slash - path + 1);
    return snprintf(buf, PATH_MAX, "%.*s%s", dir, path, to) < PATH_MAX ? buf : path;
}

attn_status attn_tuning_db_refusal(const char *path, const attn_tuning_db *db, size_t adding,
                                   char *err, size_t errsize)
{
    if (db->count + adding > ATTN_TUNING_DB_MAX_ENTRIES) { /* it would not be read back */
        snprintf(err, errsize, "%s: not written: %zu entries, more than the %d a tuning database "
                 "may hold (attn-tune --forget a device's entries first)", path,
                 db->count + adding, ATTN_TUNING_DB_MAX_ENTRIES);
        return ATTN_ERROR_TUNING_DB;
    }
    if (db->extra_lost) {
        snprintf(err, errsize, "%s: not written: its top level holds more that this attn cannot "
                 "read than it can keep (%zu bytes as compact JSON), and writing would drop it "
                 "(use a newer attn, or remove those members by hand)", path,
                 sizeof db->extra - 1);
        return ATTN_ERROR_TUNING_DB;
    }
    for (size_t i = 0; i < db->count; i++)
        if (db->entries[i].lost) {
            snprintf(err, errsize, "%s: not written: entry %zu (from a newer attn?) holds more "
                     "that this attn cannot read than it can keep, and writing would drop it "
                     "(use a newer attn, or remove the entry by hand)", path, i);
            return ATTN_ERROR_TUNING_DB;
        }
    return ATTN_SUCCESS;
}

attn_status attn_tuning_db_save(const char *path, const attn_tuning_db *db, char *err,
                                size_t errsize)
{
    char target[PATH_MAX];
    path = link_target(path, target);
    const attn_status refused = attn_tuning_db_refusal(path, db, 0, err, errsize);
    if (refused != ATTN_SUCCESS) return refused;
    char *text = attn_tuning_db_print(db);
    if (!text) {
        snprintf(err, errsize, "%s: out of host memory", path);
        return ATTN_ERROR_OUT_OF_MEMORY;
    }
    if (read_only(path, err, errsize)) {
        free(text);
        return ATTN_ERROR_IO;
    }
    char tmp[4200];
    attn_status st = ATTN_SUCCESS;
    FILE *f = attn_make_parent_dirs(path) == 0 ? attn_create_beside(path, tmp, sizeof tmp) : NULL;
    if (!f) {
        snprintf(err, errsize, "%s: cannot write: %s", path, strerror(errno));
        free(text);
        return ATTN_ERROR_IO;
    }
    struct stat old;
    if (stat(path, &old) == 0) fchmod(fileno(f), old.st_mode & 07777); /* keep its mode */
    size_t n = strlen(text);
    int ok = fwrite(text, 1, n, f) == n && fputc('\n', f) != EOF && fflush(f) == 0;
    ok = fsync(fileno(f)) == 0 && ok; /* the data reaches the disk before the rename */
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, errsize, "%s: cannot write: %s", path, strerror(errno));
        remove(tmp);
        st = ATTN_ERROR_IO;
    } else {
        sync_folder(path);
    }
    free(text);
    return st;
}

/* Takes the exclusive lock on the file `lock`, which each holder unlinks
 * before it lets go (no empty lock file stays behind). A waiter may thus
 * have locked an inode that is no longer at that path: it then goes round
 * again, so that whoever holds a lock on the inode now named `lock` is the
 * only holder. Returns the locked descriptor, or -1 with errno set. */
static int lock_acquire(const char *lock)
{
    for (;;) {
        int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) return -1;
        while (flock(fd, LOCK_EX) != 0) {
            if (errno != EINTR) {
                int e = errno;
                close(fd);
                errno = e;
                return -1;
            }
        }
        struct stat held, named;
        if (fstat(fd, &held) == 0 && stat(lock, &named) == 0 && held.st_dev == named.st_dev &&
            held.st_ino == named.st_ino)
            return fd;
        close(fd); /* the previous holder removed it: lock the file there now */
    }
}

/* Unlinks the lock file while still holding it, then lets go. */
static void lock_release(const char *lock, int fd)
{
    unlink(lock);
    close(fd);
}

/* Removes "BASE.PID.tmp" beside path whose writer (PID) is gone: a save
 * killed between writing and renaming (SIGKILL) leaves one. Called under
 * the lock; a live process's temporary, possibly being written, stays. */
static void remove_stale_temporaries(const char *path)
{
    char dir[4096];
    const char *base = folder_of(path, dir, sizeof dir);
    size_t blen = strlen(base);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *n = de->d_name;
        if (strncmp(n, base, blen) != 0 || n[blen] != '.') continue;
        char *end;
        errno = 0;
        long pid = strtol(n + blen + 1, &end, 10);
        if (errno || end == n + blen + 1 || strcmp(end, ".tmp") != 0 || pid <= 0 ||
            pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours to ask */
        char full[8300];
        snprintf(full, sizeof full, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, n);
        if (unlink(full) == 0)
            attn_log(ATTN_LOG_INFO, "tuning database: removed %s, left by process %ld, which "
                     "is gone", full, pid);
    }
    closedir(d);
}

attn_status attn_tuning_db_update(const char *path, int (*fn)(attn_tuning_db *db, void *arg),
                                  void *arg, char *err, size_t errsize)
{
    char target[PATH_MAX]; /* one lock for every link to the file */
    path = link_target(path, target);
    char lock[4200];
    snprintf(lock, sizeof lock, "%s.lock", path);
    if (attn_make_parent_dirs(path) != 0) {
        snprintf(err, errsize, "%s: cannot make its folder: %s", path, strerror(errno));
        return ATTN_ERROR_IO;
    }
    /* the lock is a separate file: the database itself is replaced by
     * rename, so a lock on it would guard an inode nobody reads any more */
    int fd = lock_acquire(lock);
    if (fd < 0) {
        snprintf(err, errsize, "%s: cannot lock: %s", lock, strerror(errno));
        return ATTN_ERROR_IO;
    }
    remove_stale_temporaries(path);
    attn_tuning_db db;
    attn_tuning_db_init(&db);
    attn_status st = attn_tuning_db_load(path, &db, NULL, err, errsize);
    if (st == ATTN_SUCCESS) {
        const int changed = fn(&db, arg);
        if (changed < 0) {
            snprintf(err, errsize, "%s: the update was abandoned", path);
            st = ATTN_ERROR_OUT_OF_MEMORY;
        } else if (changed == 0) { /* nothing to write: no file made, none rewritten */
            st = attn_tuning_db_save(path, &db, err, errsize);
        }
    }
    attn_tuning_db_free(&db);
    lock_release(lock, fd);
    return st;
}

attn_status attn_tuning_db_check_writable(const char *path, char *err, size_t errsize)
{
    char target[PATH_MAX], dir[4200];
    path = link_target(path, target);
    if (attn_make_parent_dirs(path) != 0) {
        snprintf(err, errsize, "%s: cannot make its folder: %s", path, strerror(errno));
        return ATTN_ERROR_IO;
    }
    folder_of(path, dir, sizeof dir);
    if (access(dir, W_OK | X_OK) != 0) {
        snprintf(err, errsize, "%s: its folder %s is not writable (%s): nothing tuned could be "
                 "stored", path, dir, strerror(errno));
        return ATTN_ERROR_IO;
    }
    return read_only(path, err, errsize) ? ATTN_ERROR_IO : ATTN_SUCCESS;
}

typedef struct merge_arg {
    const attn_tuning_entry *entries;
    size_t n;
    size_t replaced; /* of the file's entries, before the merge */
} merge_arg;

static int merge_fn(attn_tuning_db *db, void *arg)
{
    merge_arg *m = arg;
    const size_t before = db->count; /* loaded, so one entry a slot */
    for (size_t i = 0; i < m->n; i++)
        if (attn_tuning_db_append(db, &m->entries[i]) != 0) return -1;
    if (attn_tuning_db_dedupe(db) != 0) return -1;
    /* entries hold one a slot too: each slot the merge dropped was the file's */
    m->replaced = before + m->n - db->count;
    return 0;
}

attn_status attn_tuning_db_merge_file_counted(const char *path, const attn_tuning_entry *entries,
                                              size_t n, size_t *replaced, char *err,
                                              size_t errsize)
{
    if (replaced) *replaced = 0;
    if (n == 0) { /* nothing written, no folder made: the file is only read, as a merge would */
        attn_tuning_db db;
        attn_tuning_db_init(&db);
        const attn_status st = attn_tuning_db_load(path, &db, NULL, err, errsize);
        attn_tuning_db_free(&db);
        return st;
    }
    merge_arg m = {entries, n, 0};
    const attn_status st = attn_tuning_db_update(path, merge_fn, &m, err, errsize);
    if (replaced) *replaced = st == ATTN_SUCCESS ? m.replaced : 0;
    return st;
}

attn_status attn_tuning_db_merge_file(const char *path, const attn_tuning_entry *entries,
                                      size_t n, char *err, size_t errsize)
{
    return attn_tuning_db_merge_file_counted(path, entries, n, NULL, err, errsize);
}
