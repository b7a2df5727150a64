/* file_write.c -- the folders and the temporary of a file written whole
 * and renamed into place (file_write.h). */
#define _POSIX_C_SOURCE 200809L
#include "core/file_write.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int attn_make_dirs(const char *dir)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return (mkdir(tmp, 0755) != 0 && errno != EEXIST) ? -1 : 0;
}

int attn_make_parent_dirs(const char *path)
{
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return 0; /* the working folder's file, or the root's */
    *slash = 0;
    return attn_make_dirs(dir);
}

FILE *attn_create_beside(const char *path, char *tmp, size_t size)
{
    if (snprintf(tmp, size, "%s.%ld.tmp", path, (long)getpid()) >= (int)size) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    unlink(tmp);
    const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        const int saved = errno;
        close(fd);
        unlink(tmp);
        errno = saved;
    }
    return f;
}
