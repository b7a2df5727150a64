/* program.h -- kernel sources (embedded or $ATTN_KERNEL_DIR) and built
 * programs, cached per context and on disk. */
#ifndef ATTN_CORE_PROGRAM_H
#define ATTN_CORE_PROGRAM_H


/* ---- kernel sources (kernel_sources.c, embedded or ctx->kernel_dir) ---- */
/* A malloc'd copy of cl/<name> into *text: ATTN_SUCCESS, or
 * ATTN_ERROR_IO (a kernel folder's file missing or unreadable, no such
 * embedded source) or ATTN_ERROR_OUT_OF_MEMORY with ctx's error set and
 * *text NULL. */
attn_status attn_kernel_source_read(attn_context *ctx, const char *name, char **text);
/* The same, returning the copy or NULL. */
char *attn_kernel_source(attn_context *ctx, const char *name);

/* ---- programs (program.c, disk_cache.c) ---- */
/* Builds, or fetches from the per-context or on-disk cache, the program made
 * of the named sources (concatenated, common.cl first) with options. */
attn_status attn_program_get(attn_context *ctx, const char *const *sources, int nsources,
                             const char *options, cl_program *out);
/* Disk cache in the folder dir (a context's cache_dir; NULL: none): key
 * text -> binary. Any problem reads as a miss, logged once. A hit marks its
 * file used (its modification time), for attn_disk_cache_prune. */
int attn_disk_cache_load(const char *dir, const char *key_text, uint64_t key, unsigned char **bin,
                         size_t *len);
/* Returns 1 when the file was written, else 0 (logged). */
int attn_disk_cache_store(const char *dir, const char *key_text, uint64_t key,
                          const unsigned char *bin, size_t len);
/* Removes the least recently used of dir's cache files, when they take
 * more than max_bytes, until they take 3/4 of it; never keep's file (the
 * one just stored); max_bytes 0: no bound. Temporary files older than an
 * hour go in any case (disk_cache_prune.c). */
void attn_disk_cache_prune(const char *dir, uint64_t max_bytes, uint64_t keep);
#define ATTN_CACHE_FORMAT_VERSION 1
/* The largest program binary the cache keeps (a larger one is not stored:
 * loading would refuse it, as a garbage length, every time) */
#define ATTN_CACHE_MAX_BINARY ((uint64_t)1 << 31)
/* A cache file's name in its folder, from its key (unsigned long long) */
#define ATTN_CACHE_FILE_NAME "%016llx.bin"

#endif /* ATTN_CORE_PROGRAM_H */
