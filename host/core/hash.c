/* hash.c -- FNV-1a 64: keys for the program caches. Not cryptographic;
 * a collision is caught by the full key text stored in each cache file. */
#include "core/hash.h"

#include <string.h>

uint64_t attn_hash_bytes(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t attn_hash_str(uint64_t h, const char *s)
{
    /* include the terminator so that ("ab","c") and ("a","bc") differ */
    return attn_hash_bytes(h, s, strlen(s) + 1);
}
