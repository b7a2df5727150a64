/* png_write.c -- the PNG of png_write.h: signature, IHDR, an optional tEXt
 * title, the zlib-compressed rows in IDAT chunks of at most PNG_CHUNK_MAX
 * bytes, IEND, each chunk with zlib's CRC-32.
 * Rows use filter 0 (none): a heatmap is runs of flat colour, which deflate
 * already shrinks to a few bytes per run. */
#include "png_write.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* The most bytes one IDAT chunk carries here (the format allows 2^31 - 1). */
#ifndef PNG_CHUNK_MAX
#define PNG_CHUNK_MAX ((size_t)1 << 30)
#endif

static void be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

static int chunk(FILE *f, const char *type, const unsigned char *data, size_t n)
{
    unsigned char head[8], tail[4];
    be32(head, (uint32_t)n);
    memcpy(head + 4, type, 4);
    uLong c = crc32(0L, head + 4, 4);
    if (n) c = crc32_z(c, data, n);
    be32(tail, (uint32_t)c);
    return fwrite(head, 1, 8, f) == 8 && (n == 0 || fwrite(data, 1, n, f) == n) &&
           fwrite(tail, 1, 4, f) == 4;
}

int png_write(FILE *f, const unsigned char *img, int width, int height, const char *title)
{
    const size_t row = 1 + (size_t)width * 3, raw_n = row * (size_t)height;
    uLongf zn = compressBound((uLong)raw_n);
    unsigned char *raw = malloc(raw_n), *z = malloc(zn);
    int ok = raw && z;
    for (int y = 0; ok && y < height; y++) {
        raw[(size_t)y * row] = 0; /* filter type 0 */
        memcpy(raw + (size_t)y * row + 1, img + (size_t)y * width * 3, (size_t)width * 3);
    }
    ok = ok && compress2(z, &zn, raw, (uLong)raw_n, Z_BEST_COMPRESSION) == Z_OK;
    unsigned char ihdr[13];
    be32(ihdr, (uint32_t)width);
    be32(ihdr + 4, (uint32_t)height);
    ihdr[8] = 8, ihdr[9] = 2, ihdr[10] = ihdr[11] = ihdr[12] = 0; /* 8-bit RGB, no interlace */
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    ok = ok && fwrite(sig, 1, 8, f) == 8 && chunk(f, "IHDR", ihdr, 13);
    if (ok && title) { /* tEXt: keyword, NUL, Latin-1 text */
        const size_t tn = strlen(title);
        unsigned char *text = malloc(6 + tn);
        ok = text != NULL;
        if (ok) {
            memcpy(text, "Title", 6);
            memcpy(text + 6, title, tn);
            ok = chunk(f, "tEXt", text, 6 + tn);
        }
        free(text);
    }
    /* a chunk holds at most 2^31 - 1 bytes: a large image's data takes several */
    for (size_t at = 0; ok && at < zn; at += PNG_CHUNK_MAX)
        ok = chunk(f, "IDAT", z + at, zn - at < PNG_CHUNK_MAX ? zn - at : PNG_CHUNK_MAX);
    ok = ok && chunk(f, "IEND", NULL, 0);
    free(raw), free(z);
    return ok;
}
