/* file_read.c -- a whole regular file, read without blocking on a FIFO. */
#define _POSIX_C_SOURCE 200809L
#include "core/file_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

attn_read_result attn_read_regular_file(const char *path, size_t max_bytes, char **text,
                                        size_t *len)
{
    *text = NULL;
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? ATTN_READ_MISSING : ATTN_READ_FAILED;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < 0) {
        const int saved = errno;
        close(fd);
        errno = saved;
        return ATTN_READ_NOT_REGULAR;
    }
    if ((unsigned long long)sb.st_size > max_bytes) {
        close(fd);
        return ATTN_READ_TOO_LARGE;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        const int saved = errno;
        close(fd);
        errno = saved;
        return ATTN_READ_FAILED;
    }
    const size_t n = (size_t)sb.st_size;
    char *buf = malloc(n + 1);
    attn_read_result r = ATTN_READ_OK;
    if (!buf) {
        r = ATTN_READ_NO_MEMORY;
    } else if (fread(buf, 1, n, f) != n) {
        r = ATTN_READ_FAILED;
        if (!ferror(f)) errno = EIO; /* shorter than fstat said: it changed under us */
        free(buf);
        buf = NULL;
    } else {
        buf[n] = 0;
        if (len) *len = n;
    }
    const int saved = errno;
    fclose(f);
    errno = saved;
    *text = buf;
    return r;
}
