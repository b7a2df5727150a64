/* disk_cache.c -- program binaries on disk, so a second process does not
 * rebuild. One file per program, named by the key's hash, holding the full
 * key text (a hash collision or a stale file reads as a miss) and a checksum
 * of the binary. Written to a temporary file and renamed; a hit marks its
 * file used, for the bound disk_cache_prune.c keeps. Any problem is a
 * miss with one log line, never an error (tests/test_faults.c and
 * fuzz/fuzz_disk_cache.c try the problems). */
#define _POSIX_C_SOURCE 200809L
#include "core/log.h"
#include "core/file_write.h"
#include "core/hash.h"
#include "core/program.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char MAGIC[8] = {'A', 'T', 'T', 'N', 'B', 'I', 'N', '\n'};

typedef struct {
    char magic[8];
    uint32_t format;
    uint32_t key_len;
    uint64_t bin_len;
    uint64_t bin_hash;
} cache_header;

static int cache_path(const char *dir, uint64_t key, char *buf, size_t size)
{
    if (!dir || !*dir) return 0;
    return snprintf(buf, size, "%s/" ATTN_CACHE_FILE_NAME, dir, (unsigned long long)key) <
           (int)size;
}

int attn_disk_cache_load(const char *dir, const char *key_text, uint64_t key, unsigned char **bin,
                         size_t *len)
{
    char path[4096];
    *bin = NULL;
    *len = 0;
    if (!cache_path(dir, key, path, sizeof path)) return 0;
    /* O_NONBLOCK: a FIFO in the cache folder must not hang the open;
     * O_NOFOLLOW: what a link there points to is not ours (stores and
     * pruning do not follow one either) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return 0; /* a plain miss: no log line */
    const char *why = NULL;
    cache_header h;
    struct stat sb;
    size_t key_len = strlen(key_text);
    char *stored_key = NULL;
    unsigned char *data = NULL;
    FILE *f = NULL;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        why = "not a regular file";
    else if (!(f = fdopen(fd, "rb")))
        why = "cannot be read";
    else if (fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, MAGIC, sizeof MAGIC) != 0)
        why = "bad header";
    else if (h.format != ATTN_CACHE_FORMAT_VERSION)
        why = "other format version";
    else if (h.key_len != key_len || h.bin_len == 0 || h.bin_len > ATTN_CACHE_MAX_BINARY)
        why = "key or size mismatch";
    /* the file's size must be exactly what the header says, checked before
     * allocating: a garbage length must not cost a large allocation */
    else if ((uint64_t)sb.st_size < sizeof h + key_len + h.bin_len)
        why = "truncated";
    else if ((uint64_t)sb.st_size > sizeof h + key_len + h.bin_len)
        why = "trailing bytes";
    else if (!(stored_key = malloc(key_len + 1)) || !(data = malloc((size_t)h.bin_len)))
        why = "out of host memory";
    else if (fread(stored_key, 1, key_len, f) != key_len || memcmp(stored_key, key_text, key_len) != 0)
        why = "key mismatch";
    else if (fread(data, 1, (size_t)h.bin_len, f) != (size_t)h.bin_len)
        why = "truncated";
    else if (attn_hash_bytes(ATTN_HASH_INIT, data, (size_t)h.bin_len) != h.bin_hash)
        why = "checksum mismatch";
    else if (fgetc(f) != EOF)
        why = "trailing bytes"; /* it grew since fstat */
    else
        futimens(fd, NULL); /* used now, for the pruning (where this user may set its times) */
    if (f) fclose(f);
    else close(fd);
    free(stored_key);
    if (why) {
        free(data);
        attn_log(ATTN_LOG_WARN, "program cache file %s is unusable (%s); rebuilding", path, why);
        return 0;
    }
    *bin = data;
    *len = (size_t)h.bin_len;
    return 1;
}

int attn_disk_cache_store(const char *dir, const char *key_text, uint64_t key,
                          const unsigned char *bin, size_t len)
{
    static atomic_int warned_unwritable; /* one log line per process, not one per program */
    static atomic_uint tmp_serial;       /* threads of one process storing the same key */
    char path[4096], tmp[4200];
    if (len > ATTN_CACHE_MAX_BINARY || !cache_path(dir, key, path, sizeof path)) return 0;
    /* a name no one else holds: made here (O_EXCL), never through a link
     * planted in a shared folder (O_NOFOLLOW), and apart from another
     * container's process of the same pid (the time, then retries) */
    FILE *f = NULL;
    if (attn_make_dirs(dir) == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int fd = -1;
        for (int attempt = 0; attempt < 8 && fd < 0; attempt++) {
            snprintf(tmp, sizeof tmp, "%s.%ld.%u.%lx.tmp", path, (long)getpid(),
                     atomic_fetch_add(&tmp_serial, 1u),
                     (unsigned long)(ts.tv_nsec ^ ts.tv_sec * 2654435761u) + (unsigned)attempt);
            fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
            if (fd < 0 && errno != EEXIST) break;
        }
        if (fd >= 0 && !(f = fdopen(fd, "wb"))) {
            close(fd);
            remove(tmp);
        }
    }
    if (!f) {
        if (!atomic_exchange(&warned_unwritable, 1)) {
            attn_log(ATTN_LOG_WARN, "program cache folder %s is not writable (%s); programs are "
                     "rebuilt by each process", dir, strerror(errno));
        }
        return 0;
    }
    cache_header h;
    memcpy(h.magic, MAGIC, sizeof MAGIC);
    h.format = ATTN_CACHE_FORMAT_VERSION;
    h.key_len = (uint32_t)strlen(key_text);
    h.bin_len = len;
    h.bin_hash = attn_hash_bytes(ATTN_HASH_INIT, bin, len);
    int ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(key_text, 1, h.key_len, f) == h.key_len &&
             fwrite(bin, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        attn_log(ATTN_LOG_WARN, "cannot write program cache file %s: %s", path, strerror(errno));
        remove(tmp);
        return 0;
    }
    return 1;
}
