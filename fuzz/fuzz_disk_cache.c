/* fuzz_disk_cache.c -- the program-cache file reader (host/disk_cache.c)
 * on arbitrary files: each input is written as the cache file of a fixed
 * key, then attn_disk_cache_load reads it. It must never crash or allocate
 * more than the file holds, must accept exactly the well-formed files
 * (header, this key, a binary whose checksum matches, nothing after), and a
 * binary stored with attn_disk_cache_store must load back unchanged. */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_util.h"
#include "core/hash.h"
#include "core/program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The key every input is filed under (any text works; a real one looks
 * like this). The seed corpus holds valid files for it. */
static const char KEY_TEXT[] = "attn program cache v1\nsource 0123456789abcdef\noptions -DFUZZ\n"
                               "platform fuzz\ndevice fuzz\nvendor fuzz\ndriver 1\n";
static uint64_t key;
static char path[1024];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    setenv("ATTN_LOG", "error", 0); /* every unusable file would log a warning */
    key = attn_hash_str(ATTN_HASH_INIT, KEY_TEXT);
    snprintf(path, sizeof path, "%s/%016llx.bin", fuzz_temp_dir(), (unsigned long long)key);
    return 0;
}

/* What the reader must accept: the layout attn_disk_cache_store writes. */
static int well_formed(const uint8_t *d, size_t n, size_t *bin_at, size_t *bin_len)
{
    const size_t klen = strlen(KEY_TEXT);
    uint32_t format, key_len;
    uint64_t blen, hash;
    if (n < 32 + klen || memcmp(d, "ATTNBIN\n", 8) != 0) return 0;
    memcpy(&format, d + 8, 4);
    memcpy(&key_len, d + 12, 4);
    memcpy(&blen, d + 16, 8);
    memcpy(&hash, d + 24, 8);
    if (format != ATTN_CACHE_FORMAT_VERSION || key_len != klen || blen == 0 ||
        blen != n - 32 - klen || memcmp(d + 32, KEY_TEXT, klen) != 0)
        return 0;
    if (attn_hash_bytes(ATTN_HASH_INIT, d + 32 + klen, (size_t)blen) != hash) return 0;
    *bin_at = 32 + klen;
    *bin_len = (size_t)blen;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) fuzz_fail("cannot write %s", path);

    unsigned char *bin = (unsigned char *)1;
    size_t len = 12345;
    int hit = attn_disk_cache_load(fuzz_temp_dir(), KEY_TEXT, key, &bin, &len);
    size_t at = 0, want = 0;
    int valid = well_formed(data, size, &at, &want);
    if (hit != valid) fuzz_fail("load returned %d for a file that is %s", hit, valid ? "valid" : "not valid");
    if (hit) {
        if (len != want || memcmp(bin, data + at, len) != 0)
            fuzz_fail("load returned a binary of %zu bytes, the file holds %zu", len, want);
        free(bin);
    } else if (bin != NULL || len != 0) {
        fuzz_fail("a miss left bin=%p len=%zu (must be NULL, 0)", (void *)bin, len);
    }

    /* the input as a binary: stored, it loads back byte for byte */
    if (size > 0) {
        attn_disk_cache_store(fuzz_temp_dir(), KEY_TEXT, key, data, size);
        if (!attn_disk_cache_load(fuzz_temp_dir(), KEY_TEXT, key, &bin, &len))
            fuzz_fail("a stored binary of %zu bytes did not load back", size);
        if (len != size || memcmp(bin, data, size) != 0)
            fuzz_fail("a stored binary of %zu bytes loaded back as %zu different bytes", size, len);
        free(bin);
        /* the same key with another text: a miss, never the wrong binary */
        if (attn_disk_cache_load(fuzz_temp_dir(), "another key text", key, &bin, &len))
            fuzz_fail("a file stored for one key text loaded for another");
    }
    return 0;
}
