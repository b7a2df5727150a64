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
 * text -> binary. Any problem reads as a miss, logged once. */
int attn_disk_cache_load(const char *dir, const char *key_text, uint64_t key, unsigned char **bin,
                         size_t *len);
void attn_disk_cache_store(const char *dir, const char *key_text, uint64_t key,
                           const unsigned char *bin, size_t len);
#define ATTN_CACHE_FORMAT_VERSION 1

#endif /* ATTN_CORE_PROGRAM_H */
