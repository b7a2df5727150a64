/* text.c -- case-insensitive matching of device names and selectors
 * (text.h), once for the library and attn-tune. */
#include "core/text.h"

#include <ctype.h>
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
