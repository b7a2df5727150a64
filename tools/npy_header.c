/* npy_header.c -- the .npy header parser of npy_header.h. The header is a
 * Python dict literal written by numpy.lib.format, e.g.
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (2, 8, 64), }
 * padded with spaces to a multiple of 64 bytes and ended by '\n'. This
 * parses that grammar (quoted keys, a string, True/False and a tuple of
 * integers as values), not just the bytes numpy happens to write, and
 * refuses anything it does not understand. */
#include "npy_header.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct cursor {
    const char *p, *end;
} cursor;

static int fail(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

static void skip_space(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int take(cursor *c, char ch)
{
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* A quoted string ('...' or "...", no escapes: numpy writes none in these
 * fields) into out. */
static int string(cursor *c, char *out, size_t size)
{
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return -1;
    const char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || n + 1 >= size) return -1;
        out[n++] = *c->p++;
    }
    if (c->p >= c->end) return -1;
    c->p++;
    out[n] = 0;
    return 0;
}

static int word(cursor *c, const char *w)
{
    skip_space(c);
    const size_t n = strlen(w);
    if ((size_t)(c->end - c->p) >= n && memcmp(c->p, w, n) == 0) {
        c->p += n;
        return 1;
    }
    return 0;
}

/* (d0, d1, ...) with an optional trailing comma; "()" is a scalar. */
static int shape(cursor *c, npy_header *h, char *err, size_t en)
{
    if (!take(c, '(')) return fail(err, en, "'shape' is not a tuple");
    h->ndim = 0;
    for (;;) {
        if (take(c, ')')) return 0;
        skip_space(c);
        if (c->p >= c->end || *c->p < '0' || *c->p > '9')
            return fail(err, en, "'shape' holds something other than non-negative integers");
        uint64_t v = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            v = v * 10 + (uint64_t)(*c->p++ - '0');
            if (v > ((uint64_t)1 << 48)) return fail(err, en, "'shape' has a dimension too large");
        }
        if (h->ndim == NPY_MAX_DIMS)
            return fail(err, en, "'shape' has more than %d dimensions", NPY_MAX_DIMS);
        h->shape[h->ndim++] = (size_t)v;
        if (!take(c, ',')) {
            if (take(c, ')')) return 0;
            return fail(err, en, "'shape' is not a tuple of integers");
        }
    }
}

int npy_header_parse(const unsigned char *b, size_t n, npy_header *h, char *err, size_t en)
{
    memset(h, 0, sizeof *h);
    if (n < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
        return fail(err, en, "not a .npy file (no \\x93NUMPY magic)");
    const int major = b[6];
    size_t len, start;
    if (major == 1) {
        len = (size_t)b[8] | (size_t)b[9] << 8;
        start = 10;
    } else if (major == 2 || major == 3) {
        if (n < 12) return fail(err, en, "the file ends inside the header");
        len = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        start = 12;
    } else {
        return fail(err, en, "format version %d.%d is not 1.0, 2.0 or 3.0", major, b[7]);
    }
    if (len > n - start) return fail(err, en, "the file ends inside the header");
    h->data_offset = start + len;
    /* the strings are read as C strings: '<f4\0junk' would pass as '<f4' */
    if (memchr(b + start, 0, len)) return fail(err, en, "the header holds a NUL byte");
    cursor c = {(const char *)b + start, (const char *)b + start + len};
    if (!take(&c, '{')) return fail(err, en, "the header is not a dict");
    int seen_descr = 0, seen_order = 0, seen_shape = 0;
    while (!take(&c, '}')) {
        char key[32];
        if (string(&c, key, sizeof key) != 0) return fail(err, en, "the header has a bad key");
        if (!take(&c, ':')) return fail(err, en, "the header has no ':' after '%s'", key);
        if (strcmp(key, "descr") == 0 && !seen_descr++) {
            if (string(&c, h->descr, sizeof h->descr) != 0)
                return fail(err, en, "'descr' is not a simple dtype string (a structured "
                            "dtype is not supported)");
        } else if (strcmp(key, "fortran_order") == 0 && !seen_order++) {
            if (word(&c, "True")) h->fortran_order = 1;
            else if (!word(&c, "False"))
                return fail(err, en, "'fortran_order' is not True or False");
        } else if (strcmp(key, "shape") == 0 && !seen_shape++) {
            if (shape(&c, h, err, en) != 0) return -1;
        } else {
            return fail(err, en, "the header has an unexpected or repeated key '%s'", key);
        }
        if (!take(&c, ',')) {
            if (take(&c, '}')) break;
            return fail(err, en, "the header dict is malformed after '%s'", key);
        }
    }
    skip_space(&c);
    if (c.p != c.end) return fail(err, en, "the header has text after its dict");
    if (!seen_descr) return fail(err, en, "the header has no 'descr'");
    if (!seen_order) return fail(err, en, "the header has no 'fortran_order'");
    if (!seen_shape) return fail(err, en, "the header has no 'shape'");
    return 0;
}
