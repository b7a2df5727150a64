/* disk_cache_prune.c -- keeps the program cache folder within its bound
 * ($ATTN_CACHE_MAX_MB). Each release and each driver makes its own files
 * (their keys hold the sources and the driver), and attn-tune builds a
 * program per candidate, so a folder nothing prunes only grows. After a
 * store, when the cache's files take more than the bound, the least
 * recently used go (a load hit marks its file used) until they take three
 * quarters of it, so that the next stores do not each remove one. The file
 * just stored stays, even alone past the bound. Temporary files a killed
 * writer left, older than an hour, go too (with no bound as well). Only
 * names the cache makes are
 * touched: other files in a shared folder stay and do not count. Any
 * problem is a log line at most, never an error. */
#define _POSIX_C_SOURCE 200809L
#include "core/log.h"
#include "core/program.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { NAME_LEN = 20 };        /* 16 hex digits and ".bin" (ATTN_CACHE_FILE_NAME) */
#define TEMP_STALE_SECONDS 3600 /* a writer holds its temporary file for milliseconds */

typedef struct {
    char name[NAME_LEN + 1];
    uint64_t bytes;
    struct timespec used; /* the modification time: its store or its last load */
} cache_file;

/* Whether name starts as the cache's names do: 16 lowercase hex digits and
 * ".bin" (a temporary file continues with ".<pid>...tmp"). */
static int cache_name_prefix(const char *name)
{
    for (int i = 0; i < 16; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return 0;
    return strncmp(name + 16, ".bin", 4) == 0;
}

/* Whether rest is what attn_disk_cache_store's temporary names add after
 * the cache name: ".<pid>.<serial>.<hex>.tmp". */
static int temp_suffix(const char *rest)
{
    static const char *const digits[] = {"0123456789", "0123456789", "0123456789abcdef"};
    for (int part = 0; part < 3; part++) {
        if (*rest++ != '.') return 0;
        const size_t n = strspn(rest, digits[part]);
        if (n == 0) return 0;
        rest += n;
    }
    return strcmp(rest, ".tmp") == 0;
}

static int older_first(const void *a, const void *b)
{
    const cache_file *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec) return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    if (x->used.tv_nsec != y->used.tv_nsec) return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

void attn_disk_cache_prune(const char *dir, uint64_t max_bytes, uint64_t keep)
{
    if (!dir || !*dir) return;
    DIR *d = opendir(dir);
    if (!d) return;
    char keep_name[NAME_LEN + 1];
    snprintf(keep_name, sizeof keep_name, ATTN_CACHE_FILE_NAME, (unsigned long long)keep);
    const int dfd = dirfd(d);
    const time_t now = time(NULL);
    cache_file *files = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    int listed = 1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        const size_t len = strlen(name);
        struct stat sb;
        if (len < NAME_LEN || !cache_name_prefix(name)) continue;
        /* not followed: a link planted in a shared folder is not ours */
        if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode)) continue;
        if (len > NAME_LEN) {
            if (temp_suffix(name + NAME_LEN) && now - sb.st_mtime > TEMP_STALE_SECONDS)
                unlinkat(dfd, name, 0);
            continue;
        }
        if (max_bytes == 0) continue; /* no bound: only the temporary files */
        total += (uint64_t)sb.st_size;
        if (!strcmp(name, keep_name)) continue; /* counted, never removed */
        if (n == cap) {
            cache_file *grown = realloc(files, sizeof *files * (cap = cap ? 2 * cap : 64));
            if (!grown) {
                listed = 0;
                break;
            }
            files = grown;
        }
        memcpy(files[n].name, name, NAME_LEN + 1);
        files[n].bytes = (uint64_t)sb.st_size;
        files[n].used = sb.st_mtim;
        n++;
    }
    if (listed && max_bytes > 0 && total > max_bytes && n > 0) {
        qsort(files, n, sizeof *files, older_first);
        const uint64_t target = max_bytes / 4 * 3, before = total;
        size_t removed = 0;
        for (size_t i = 0; i < n && total > target; i++) {
            struct stat sb;
            /* used or stored again since the listing (another process): kept */
            if (fstatat(dfd, files[i].name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
                (sb.st_mtim.tv_sec != files[i].used.tv_sec ||
                 sb.st_mtim.tv_nsec != files[i].used.tv_nsec))
                continue;
            /* gone already: another process pruned it */
            if (unlinkat(dfd, files[i].name, 0) != 0 && errno != ENOENT) continue;
            total -= files[i].bytes;
            removed++;
        }
        if (removed > 0)
            attn_log(ATTN_LOG_INFO, "program cache %s held %.1f MiB, past its bound of %.1f MiB "
                     "(ATTN_CACHE_MAX_MB): removed the %zu least recently used files, %.1f MiB "
                     "left", dir, before / 1048576.0, max_bytes / 1048576.0, removed,
                     total / 1048576.0);
    }
    free(files);
    closedir(d);
}
