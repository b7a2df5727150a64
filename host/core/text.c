/* text.c -- case-insensitive matching of device names and selectors, and
 * strict whole and decimal numbers (text.h), once for the library and the
 * tools. */
#include "core/text.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

int attn_contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] &&
               tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n) return 1;
    }
    return n == 0;
}

int attn_equal_ci(const char *a, const char *b)
{
    return strlen(a) == strlen(b) && attn_contains_ci(a, b);
}

int attn_parse_long(const char *text, long lo, long hi, long *out)
{
    if (!text) return -1;
    const char *digits = text + (*text == '-');
    if (*digits < '0' || *digits > '9') return -1; /* also "", "-", " 1", "+1" */
    char *end;
    errno = 0;
    const long v = strtol(text, &end, 10);
    if (errno || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int attn_parse_int(const char *text, int lo, int hi, int *out)
{
    long v;
    if (attn_parse_long(text, lo, hi, &v)) return -1;
    *out = (int)v;
    return 0;
}

int attn_parse_double(const char *text, double lo, double hi, double *out)
{
    if (!text) return -1;
    const char *p = text + (*text == '-');
    const int digit = isdigit((unsigned char)p[0]) ||
                      (p[0] == '.' && isdigit((unsigned char)p[1]));
    if (!digit || strpbrk(text, "xX")) return -1; /* strtod reads hexadecimal too */
    char *end;
    errno = 0;
    const double v = strtod(text, &end);
    if (errno || *end || !(v >= lo && v <= hi)) return -1; /* NaN fails the range */
    *out = v;
    return 0;
}

int attn_parse_float(const char *text, float lo, float hi, float *out)
{
    double d;
    if (attn_parse_double(text, -DBL_MAX, DBL_MAX, &d)) return -1;
    const float v = (float)d; /* past FLT_MAX: inf, outside any finite range */
    if ((d != 0.0 && v == 0.0f) || !(v >= lo && v <= hi)) return -1; /* underflow, as strtof */
    *out = v;
    return 0;
}
