/* tensor_file.c -- reading .npy and raw tensor files (tensor_file.h). The
 * whole file is read and checked (header, dtype, order, exact size) before
 * anything is converted, so a bad file is one message and nothing else. */
#define _POSIX_C_SOURCE 200809L
#include "tensor_file.h"

#include "npy_header.h"
#include "core/file_read.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

int tensor_shape_parse(const char *text, int dims[4], char *err, size_t en)
{
    long v[4];
    int n = 0;
    const char *p = text;
    for (;;) {
        char *end = NULL;
        errno = 0;
        const long x = *p >= '0' && *p <= '9' ? strtol(p, &end, 10) : 0; /* no spaces or '+' */
        if (x == 0 || errno || x > INT_MAX || n == 4)
            return fail(err, en, "shape '%s' is not 2 to 4 positive integers like B,H,S,D", text);
        v[n++] = x;
        if (*end == 0) break;
        if (*end != ',') return fail(err, en, "shape '%s' is not like B,H,S,D", text);
        p = end + 1;
    }
    if (n < 2) return fail(err, en, "shape '%s' needs at least S,D", text);
    for (int i = 0; i < 4; i++) dims[i] = i < 4 - n ? 1 : (int)v[i - (4 - n)];
    return 0;
}

static int ends_with(const char *s, const char *tail)
{
    const size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* The whole file, malloc'd, or NULL with the reason in err: a regular
 * file only, opened without blocking (core/file_read.c: a FIFO in its
 * place would wait for a writer forever). */
static unsigned char *read_all(const char *path, size_t *len, char *err, size_t en)
{
    char *text = NULL;
    *len = 0;
    switch (attn_read_regular_file(path, SIZE_MAX - 1, &text, len)) {
    case ATTN_READ_OK: return (unsigned char *)text;
    case ATTN_READ_NOT_REGULAR: fail(err, en, "%s is not a regular file", path); break;
    case ATTN_READ_NO_MEMORY: fail(err, en, "%s: out of memory", path); break;
    case ATTN_READ_TOO_LARGE: fail(err, en, "%s: too large", path); break;
    case ATTN_READ_MISSING:
    case ATTN_READ_FAILED: fail(err, en, "cannot read %s: %s", path, strerror(errno)); break;
    }
    *len = 0;
    return NULL;
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* n little-endian elements of t at src into floats. */
static int to_floats(attn_dtype t, unsigned char *src, size_t n, float *dst)
{
    const size_t size = attn_dtype_size(t);
    if (!host_is_little_endian())
        for (size_t i = 0; i < n; i++)
            for (size_t a = 0, b = size - 1; a < b; a++, b--) {
                const unsigned char x = src[i * size + a];
                src[i * size + a] = src[i * size + b], src[i * size + b] = x;
            }
    if (t == ATTN_F32) {
        memcpy(dst, src, n * sizeof(float));
        return 0;
    }
    return attn_convert_to_f32(t, src, dst, n) == ATTN_SUCCESS ? 0 : -1;
}

static void shape_text(const int d[4], char *out, size_t n)
{
    snprintf(out, n, "%d,%d,%d,%d", d[0], d[1], d[2], d[3]);
}

int tensor_file_read(const char *path, const int *shape, attn_dtype raw_type, tensor_file *t,
                     char *err, size_t en)
{
    memset(t, 0, sizeof *t);
    const int npy = ends_with(path, ".npy");
    if (!npy && !shape)
        return fail(err, en, "%s is a raw file (not *.npy): give its shape B,H,S,D", path);
    size_t len;
    unsigned char *bytes = read_all(path, &len, err, en);
    if (!bytes) return -1;
    int dims[4];
    size_t offset = 0;
    attn_dtype type = raw_type;
    char why[256];
    if (npy) {
        npy_header h;
        if (npy_header_parse(bytes, len, &h, why, sizeof why) != 0) {
            free(bytes);
            return fail(err, en, "%s: %s", path, why);
        }
        if (strcmp(h.descr, "<f4") == 0) type = ATTN_F32;
        else if (strcmp(h.descr, "<f2") == 0) type = ATTN_F16;
        else {
            free(bytes);
            return fail(err, en, "%s: dtype '%s' is not supported: save it as little-endian "
                        "float32 ('<f4') or float16 ('<f2')", path, h.descr);
        }
        if (h.fortran_order) {
            free(bytes);
            return fail(err, en, "%s: the array is in Fortran order: save it in C order "
                        "(numpy.ascontiguousarray)", path);
        }
        if (h.ndim < 2 || h.ndim > 4) {
            free(bytes);
            return fail(err, en, "%s: the array has %d dimensions, not 2 to 4 ([B,]H,]S,D)",
                        path, h.ndim);
        }
        for (int i = 0; i < 4; i++) {
            const size_t d = i < 4 - h.ndim ? 1 : h.shape[i - (4 - h.ndim)];
            if (d < 1 || d > INT_MAX) {
                free(bytes);
                return fail(err, en, "%s: a dimension of its shape is %zu", path, d);
            }
            dims[i] = (int)d;
        }
        if (shape && memcmp(shape, dims, sizeof dims) != 0) {
            char a[64], b[64];
            shape_text(dims, a, sizeof a), shape_text(shape, b, sizeof b);
            free(bytes);
            return fail(err, en, "%s: its shape is %s, not the %s given", path, a, b);
        }
        offset = h.data_offset;
    } else {
        memcpy(dims, shape, sizeof dims);
    }
    size_t count = 1;
    for (int i = 0; i < 4; i++) {
        if (count > SIZE_MAX / 8 / (size_t)dims[i]) {
            free(bytes);
            return fail(err, en, "%s: the shape is too large", path);
        }
        count *= (size_t)dims[i];
    }
    const size_t need = count * attn_dtype_size(type), have = len - offset;
    if (have != need) {
        char a[64];
        shape_text(dims, a, sizeof a);
        free(bytes);
        return fail(err, en, "%s holds %zu bytes of data; shape %s of %s needs %zu", path, have,
                    a, attn_dtype_name(type), need);
    }
    float *data = malloc(count * sizeof *data);
    if (!data || to_floats(type, bytes + offset, count, data) != 0) {
        free(data), free(bytes);
        return fail(err, en, "%s: out of memory", path);
    }
    free(bytes);
    memcpy(t->dims, dims, sizeof dims);
    t->dtype = type;
    t->data = data;
    return 0;
}

void tensor_file_free(tensor_file *t)
{
    free(t->data);
    t->data = NULL;
}
