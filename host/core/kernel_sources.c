/* kernel_sources.c -- the OpenCL C sources: embedded at build time from
 * the files of cl/, or read from the context's kernel folder ($ATTN_KERNEL_DIR
 * at its creation, or attn_context_set_kernel_dir) for kernel development. */
#define _POSIX_C_SOURCE 200809L
#include "core/context.h"
#include "core/errors.h"
#include "core/file_read.h"
#include "core/log.h"
#include "core/program.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *attn_embedded_source(const char *name); /* generated */

/* A kernel folder's file: a regular file only, read whole (file_read.h: a
 * folder or FIFO in its place is refused, not read or waited on). */
static attn_status read_from_folder(attn_context *ctx, const char *dir, const char *name,
                                    char **text)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return ATTN_FAIL(ctx, ATTN_ERROR_IO, "kernel folder %.200s...: the path of %s in it is "
                         "longer than %zu bytes", dir, name, sizeof path - 1);
    const size_t max = 64 << 20;
    const char *why = NULL;
    size_t len = 0;
    switch (attn_read_regular_file(path, max, text, &len)) {
    case ATTN_READ_OK: {
        /* compiled and hashed as a C string: what follows a NUL would be
         * dropped without a word */
        const char *nul = memchr(*text, 0, len);
        if (nul) {
            const size_t at = (size_t)(nul - *text);
            free(*text);
            *text = NULL;
            return ATTN_FAIL(ctx, ATTN_ERROR_IO, "kernel source %s (the kernel folder) holds a "
                             "NUL byte at offset %zu: not OpenCL C text", path, at);
        }
        attn_log(ATTN_LOG_DEBUG, "kernel source %s from the kernel folder", path);
        return ATTN_SUCCESS;
    }
    case ATTN_READ_NO_MEMORY:
        return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory reading %s", path);
    case ATTN_READ_MISSING: why = "no such file"; break;
    case ATTN_READ_NOT_REGULAR: why = "not a regular file"; break;
    case ATTN_READ_TOO_LARGE: why = "more than 64 MiB"; break;
    case ATTN_READ_FAILED: why = strerror(errno); break;
    }
    return ATTN_FAIL(ctx, ATTN_ERROR_IO, "cannot read kernel source %s (the kernel folder): %s",
                     path, why);
}

attn_status attn_kernel_source_read(attn_context *ctx, const char *name, char **text)
{
    *text = NULL;
    if (ctx->kernel_dir) return read_from_folder(ctx, ctx->kernel_dir, name, text);
    const char *embedded = attn_embedded_source(name);
    if (!embedded)
        return ATTN_FAIL(ctx, ATTN_ERROR_IO, "no embedded kernel source named %s", name);
    *text = strdup(embedded);
    return *text ? ATTN_SUCCESS
                 : ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory reading %s", name);
}

char *attn_kernel_source(attn_context *ctx, const char *name)
{
    char *text;
    attn_kernel_source_read(ctx, name, &text);
    return text;
}
