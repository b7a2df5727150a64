/* heatmap.h -- draws attention weights [query][key] as an RGB image with
 * axes (tick labels in bitmap_font.h's font), a colour scale bar and a
 * legend, keeping pad and masked cells apart from weights, even zero ones. */
#ifndef ATTN_HEATMAP_H
#define ATTN_HEATMAP_H

#include <stdio.h>

/* What a cell is: a weight the softmax computed (it may be 0 by underflow),
 * a key the causal mask hides from a real query, or a pad query or key. */
enum { CELL_WEIGHT = 0, CELL_MASKED = 1, CELL_PAD = 2 };

/* The colours of masked and pad cells (greys, off the weights' scale). */
extern const unsigned char heatmap_masked_rgb[3], heatmap_pad_rgb[3];

/* A weight's colour: dark blue to yellow on (w / wmax)^0.5; masked and pad
 * cells their own grey. */
void heatmap_colour(float w, float wmax, int kind, unsigned char rgb[3]);

/* The most pixels the map may take on a side: its image then stays under
 * 3 GB and every coordinate within an int. */
#define HEATMAP_MAX_SIDE 30000

/* Whether a map of rows x cols cells of cell x cell pixels stays within
 * HEATMAP_MAX_SIDE a side. */
int heatmap_fits(int rows, int cols, int cell);

/* rows x cols weights w and their kinds (row-major), each cell cell x cell
 * pixels. Returns the image (malloc'd RGB rows) and its size, or NULL when
 * out of memory or when the map does not fit (heatmap_fits). */
unsigned char *heatmap_render(const float *w, const unsigned char *kind, int rows, int cols,
                              int cell, int *width, int *height);

/* The same weights as an SVG written to f, titled (escaped for XML);
 * nonzero when written (heatmap_svg.c). */
int heatmap_write_svg(FILE *f, const float *w, const unsigned char *kind, int rows, int cols,
                      const char *title);

#endif /* ATTN_HEATMAP_H */
