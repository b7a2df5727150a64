/* fuzz_util.c -- the helpers fuzz_util.h declares. */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint8_t fuzz_u8(fuzz_reader *r)
{
    if (!r->n) return 0;
    r->n--;
    return *r->p++;
}

uint32_t fuzz_u32(fuzz_reader *r)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)fuzz_u8(r) << (8 * i);
    return v;
}

uint64_t fuzz_u64(fuzz_reader *r)
{
    uint64_t v = fuzz_u32(r);
    return v | (uint64_t)fuzz_u32(r) << 32;
}

int fuzz_int(fuzz_reader *r, int lo, int hi)
{
    uint8_t sel = fuzz_u8(r);
    if (sel >= 240) return (int)fuzz_u32(r);
    return lo + (int)(fuzz_u8(r) % (unsigned)(hi - lo + 1));
}

size_t fuzz_size(fuzz_reader *r, size_t hi)
{
    uint8_t sel = fuzz_u8(r);
    if (sel >= 240) return (size_t)fuzz_u64(r);
    return (size_t)fuzz_u32(r) % (hi + 1);
}

void fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "\nFUZZ FINDING: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stderr);
    abort();
}

const char *fuzz_temp_dir(void)
{
    static char dir[512];
    if (dir[0]) return dir;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/attn-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) fuzz_fail("mkdtemp %s failed", dir);
    return dir;
}

attn_context *fuzz_context(void)
{
    static attn_context *ctx;
    if (ctx) return ctx;
    setenv("ATTN_LOG", "error", 0);
    attn_status st = attn_context_create(NULL, &ctx);
    if (st != ATTN_SUCCESS)
        fuzz_fail("no OpenCL context: %s: %s", attn_status_name(st), attn_last_create_error());
    return ctx;
}

int fuzz_tensor_walk(const attn_tensor *t, int B, int H, int S, int D, size_t nelem,
                     unsigned char *marks, unsigned char tag)
{
    typedef unsigned __int128 u128;
    size_t visited = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int s = 0; s < S; s++)
                for (int d = 0; d < D; d++) {
                    u128 at = (u128)t->offset + (u128)b * t->stride_batch +
                              (u128)h * t->stride_head + (u128)s * t->stride_seq + (u128)d;
                    if (at >= nelem) return -1;
                    if (marks[(size_t)at] & tag) return -2;
                    marks[(size_t)at] |= tag;
                    if (++visited > nelem) return -2; /* unreachable: some mark repeats first */
                }
    return 0;
}

int fuzz_input_walk(const attn_tensor *t, int B, int H, int S, int D, size_t nelem,
                    unsigned char *marks, unsigned char tag)
{
    typedef unsigned __int128 u128;
    unsigned char *entry = calloc(nelem ? nelem : 1, 1);
    if (!entry) fuzz_fail("out of memory");
    int w = 0;
    for (int b = 0; b < B && w == 0; b++) {
        const u128 at = (u128)t->offset + (u128)b * t->stride_batch;
        if (at >= nelem) {
            w = -1;
            break;
        }
        attn_tensor one = *t;
        one.offset = (size_t)at;
        memset(entry, 0, nelem);
        w = fuzz_tensor_walk(&one, 1, H, S, D, nelem, entry, 1);
        for (size_t e = 0; e < nelem; e++)
            if (entry[e]) marks[e] |= tag;
    }
    free(entry);
    return w;
}
