/* kernel_sources.c -- the OpenCL C sources: embedded at build time from
 * the files of cl/, or read from the context's kernel folder ($ATTN_KERNEL_DIR
 * at its creation, or attn_context_set_kernel_dir) for kernel development. */
#define _POSIX_C_SOURCE 200809L
#include "core/context.h"
#include "core/errors.h"
#include "core/file_read.h"
#include "core/log.h"
#include "core/program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *attn_embedded_source(const char *name); /* generated */

/* A regular file only, read whole (file_read.h: a folder or FIFO in its
 * place is refused, not read or waited on). */
static char *read_file(const char *path, size_t *len)
{
    char *text;
    return attn_read_regular_file(path, 64 << 20, &text, len) == ATTN_READ_OK ? text : NULL;
}

char *attn_kernel_source(attn_context *ctx, const char *name)
{
    const char *dir = ctx->kernel_dir;
    if (dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        char *text = read_file(path, NULL);
        if (!text)
            ATTN_FAIL(ctx, ATTN_ERROR_IO, "cannot read kernel source %s (the kernel folder)", path);
        else
            attn_log(ATTN_LOG_DEBUG, "kernel source %s from the kernel folder", path);
        return text;
    }
    const char *text = attn_embedded_source(name);
    if (!text) {
        ATTN_FAIL(ctx, ATTN_ERROR_IO, "no embedded kernel source named %s", name);
        return NULL;
    }
    char *copy = strdup(text);
    if (!copy) ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory reading %s", name);
    return copy;
}
