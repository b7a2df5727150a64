/* file_write.h -- writing a file that others may read while it is written
 * (a tuning database, a picture): the folders made first, the bytes into a
 * temporary beside the file, then renamed over it by the caller. */
#ifndef ATTN_FILE_WRITE_H
#define ATTN_FILE_WRITE_H

#include <stddef.h>
#include <stdio.h>

/* mkdir -p of dir (mode 0755 for what it makes); 0, or -1 with errno. */
int attn_make_dirs(const char *dir);

/* mkdir -p of the folder path names a file in (none: nothing to make). */
int attn_make_parent_dirs(const char *path);

/* Opens "path.PID.tmp" (its name into tmp, of size bytes) for writing,
 * new: a leftover of a killed run with this pid goes first, and O_EXCL
 * makes a new file, never one that a link planted there points to. NULL
 * with errno set when it cannot (nothing is left behind). */
FILE *attn_create_beside(const char *path, char *tmp, size_t size);

#endif
