/* kernel_sources.c -- the OpenCL C sources: embedded at build time from
 * the files of cl/, or read from the context's kernel folder ($ATTN_KERNEL_DIR
 * at its creation, or attn_context_set_kernel_dir) for kernel development. */
#define _POSIX_C_SOURCE 200809L
#include "core/context.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/program.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *attn_embedded_source(const char *name); /* generated */

/* A regular file only, read whole: ftell on a folder gives LONG_MAX here
 * (an 8 EiB malloc, found by tests/test_faults.c under ASan), and opening
 * a FIFO would block. */
static char *read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat sb;
    FILE *f = NULL;
    char *buf = NULL;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > (64 << 20) ||
        !(f = fdopen(fd, "rb"))) {
        close(fd);
        return NULL;
    }
    const size_t n = (size_t)sb.st_size;
    if ((buf = malloc(n + 1)) != NULL) {
        if (fread(buf, 1, n, f) != n) {
            free(buf);
            buf = NULL;
        } else {
            buf[n] = 0;
            if (len) *len = n;
        }
    }
    fclose(f);
    return buf;
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
