/* kernel_sources.c -- the OpenCL C sources: embedded at build time from
 * the files of cl/, or read from $ATTN_KERNEL_DIR for kernel development. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *attn_embedded_source(const char *name); /* generated */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) != NULL) {
        if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        } else {
            buf[n] = 0;
            if (len) *len = (size_t)n;
        }
    }
    fclose(f);
    return buf;
}

char *attn_kernel_source(attn_context *ctx, const char *name)
{
    const char *dir = getenv("ATTN_KERNEL_DIR");
    if (dir && *dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        char *text = read_file(path, NULL);
        if (!text)
            ATTN_FAIL(ctx, ATTN_ERROR_IO, "cannot read kernel source %s (ATTN_KERNEL_DIR)", path);
        else
            attn_log(ATTN_LOG_DEBUG, "kernel source %s from ATTN_KERNEL_DIR", path);
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
