/* file_read.h -- reading a whole file that a path names but attn does not
 * own (a tuning database, a kernel folder's source): a regular file only,
 * opened without blocking, its size checked before anything is allocated. */
#ifndef ATTN_FILE_READ_H
#define ATTN_FILE_READ_H

#include <stddef.h>

typedef enum attn_read_result {
    ATTN_READ_OK,
    ATTN_READ_MISSING,     /* no such file (ENOENT) */
    ATTN_READ_NOT_REGULAR, /* a folder, FIFO, device ... */
    ATTN_READ_TOO_LARGE,   /* more than max_bytes */
    ATTN_READ_NO_MEMORY,
    ATTN_READ_FAILED /* open or read failed: errno says why */
} attn_read_result;

/* Reads path whole into *text (malloc'd, NUL-terminated; its length in
 * *len, if len is not NULL). O_NONBLOCK: a FIFO in its place would block
 * the open, and the caller's lock, forever; fstat refuses it and anything
 * else not a regular file (ftell on a folder gives LONG_MAX: an 8 EiB
 * malloc). *text is NULL unless the result is ATTN_READ_OK. */
attn_read_result attn_read_regular_file(const char *path, size_t max_bytes, char **text,
                                        size_t *len);

#endif
