/* hash.h -- FNV-1a 64, for program and tuning keys (hash.c). */
#ifndef ATTN_CORE_HASH_H
#define ATTN_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* ---- hashing (hash.c): FNV-1a 64 ---- */
uint64_t attn_hash_bytes(uint64_t h, const void *data, size_t n);
uint64_t attn_hash_str(uint64_t h, const char *s);
#define ATTN_HASH_INIT 0xcbf29ce484222325ull

#endif /* ATTN_CORE_HASH_H */
