/* png_write.h -- writes an 8-bit RGB image as a PNG compressed with zlib. */
#ifndef ATTN_PNG_WRITE_H
#define ATTN_PNG_WRITE_H

#include <stdio.h>

/* img: height rows of width RGB pixels. title (may be NULL) goes into a
 * tEXt "Title" chunk. Returns 1, or 0 when memory, zlib or the write failed
 * (the caller reports it). */
int png_write(FILE *f, const unsigned char *img, int width, int height, const char *title);

#endif /* ATTN_PNG_WRITE_H */
