/* heatmap.c -- the heatmap image of heatmap.h. Layout, left to right: the
 * word QUERY (stacked), query tick labels, the map (key tick labels and the
 * word KEY above it), then the colour scale with its labels, and under it
 * the legend of the pad and masked greys. */
#include "heatmap.h"

#include "bitmap_font.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const unsigned char heatmap_masked_rgb[3] = {110, 110, 110};
const unsigned char heatmap_pad_rgb[3] = {200, 200, 200};
static const unsigned char ink[3] = {20, 20, 20};

enum { SCALE = 2, GLYPH_H = FONT_H * SCALE, TICK = 4, BAR_W = 20, BAR_MIN_H = 160 };

/* t in [0, 1] on a viridis-like ramp (NaN, from non-finite inputs, as 0:
 * (int)NaN would index anywhere). */
static void ramp(double t, unsigned char rgb[3])
{
    static const unsigned char stops[5][3] = {
        {68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
    t = !(t >= 0) ? 0 : t > 1 ? 1 : t;
    const double x = t * 4;
    const int i = x >= 4 ? 3 : (int)x;
    const double f = x - i;
    for (int c = 0; c < 3; c++)
        rgb[c] = (unsigned char)lround(stops[i][c] + f * (stops[i + 1][c] - stops[i][c]));
}

void heatmap_colour(float w, float wmax, int kind, unsigned char rgb[3])
{
    if (kind == CELL_MASKED) memcpy(rgb, heatmap_masked_rgb, 3);
    else if (kind == CELL_PAD) memcpy(rgb, heatmap_pad_rgb, 3);
    else ramp(wmax > 0 ? sqrt((double)w / wmax) : 0, rgb);
}

static void fill(unsigned char *img, int width, int height, int x, int y, int w, int h,
                 const unsigned char rgb[3])
{
    for (int yy = y < 0 ? 0 : y; yy < y + h && yy < height; yy++)
        for (int xx = x < 0 ? 0 : x; xx < x + w && xx < width; xx++)
            memcpy(img + ((size_t)yy * width + xx) * 3, rgb, 3);
}

static int max_int(int a, int b) { return a > b ? a : b; }

/* The smallest of 1, 2, 5, 10, 20, 50, ... positions apart that puts ticks
 * at least min_px pixels apart. */
static int tick_step(int cell, int min_px)
{
    for (int step = 1;; step *= 10)
        for (int m = 1; m <= 5; m += m == 1 ? 1 : 3)
            if ((long)step * m * cell >= min_px) return step * m;
}

int heatmap_fits(int rows, int cols, int cell)
{
    return (long)rows * cell <= HEATMAP_MAX_SIDE && (long)cols * cell <= HEATMAP_MAX_SIDE;
}

unsigned char *heatmap_render(const float *w, const unsigned char *kind, int rows, int cols,
                              int cell, int *width, int *height)
{
    if (!heatmap_fits(rows, cols, cell)) return NULL;
    float wmax = 0;
    for (size_t i = 0; i < (size_t)rows * cols; i++)
        if (kind[i] == CELL_WEIGHT && w[i] > wmax) wmax = w[i];
    char text[32];
    snprintf(text, sizeof text, "%d", rows - 1);
    const int qlabel_w = font_text_width(text, SCALE);
    snprintf(text, sizeof text, "%d", cols - 1);
    const int klabel_w = font_text_width(text, SCALE);

    const int heat_w = cols * cell, heat_h = rows * cell;
    const int left = 6 + FONT_W * SCALE + 10 + qlabel_w + TICK + 4;
    const int top = 8 + GLYPH_H + 6 + GLYPH_H + 4 + TICK;
    const int bar_x = left + heat_w + 24, bar_h = max_int(heat_h, BAR_MIN_H);
    const int legend_y = top + bar_h + 14;
    double bar_ticks[5];
    char bar_labels[5][16];
    int bar_label_w = 0;
    for (int i = 0; i < 5; i++) { /* at t = 0, 1/4, ..., 1 of the (w / wmax)^0.5 scale */
        bar_ticks[i] = i / 4.0;
        snprintf(bar_labels[i], sizeof bar_labels[i], "%.2g",
                 bar_ticks[i] * bar_ticks[i] * (double)wmax);
        const int lw = font_text_width(bar_labels[i], SCALE);
        if (lw > bar_label_w) bar_label_w = lw;
    }
    /* the widest of scale labels, legend and title; the lower of map and legend */
    const int W = max_int(max_int(bar_x + BAR_W + 6 + bar_label_w,
                                  bar_x + GLYPH_H + 8 + font_text_width("MASKED", SCALE)),
                          bar_x + font_text_width("WEIGHT", SCALE)) + 10;
    const int H = max_int(top + heat_h, legend_y + 22 + GLYPH_H) + 10;
    unsigned char *img = malloc((size_t)W * H * 3);
    if (!img) return NULL;
    memset(img, 255, (size_t)W * H * 3);

    /* the map, and a frame so that pad cells stand apart from the page */
    unsigned char rgb[3];
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            const size_t at = (size_t)i * cols + j;
            heatmap_colour(w[at], wmax, kind[at], rgb);
            fill(img, W, H, left + j * cell, top + i * cell, cell, cell, rgb);
        }
    fill(img, W, H, left - 1, top - 1, heat_w + 2, 1, ink);
    fill(img, W, H, left - 1, top + heat_h, heat_w + 2, 1, ink);
    fill(img, W, H, left - 1, top - 1, 1, heat_h + 2, ink);
    fill(img, W, H, left + heat_w, top - 1, 1, heat_h + 2, ink);

    /* key axis: title, ticks and labels above the map */
    font_draw(img, W, H, left + (heat_w - font_text_width("KEY", SCALE)) / 2, 8, "KEY", SCALE,
              ink);
    for (int j = 0, step = tick_step(cell, klabel_w + 10); j < cols; j += step) {
        const int cx = left + j * cell + cell / 2;
        fill(img, W, H, cx, top - 1 - TICK, 1, TICK, ink);
        snprintf(text, sizeof text, "%d", j);
        font_draw(img, W, H, cx - font_text_width(text, SCALE) / 2, top - TICK - 4 - GLYPH_H,
                  text, SCALE, ink);
    }
    /* query axis: the word stacked down the left edge, ticks and labels */
    for (int i = 0; i < 5; i++) {
        const char letter[2] = {"QUERY"[i], 0};
        font_draw(img, W, H, 6, top + i * (GLYPH_H + 4), letter, SCALE, ink);
    }
    for (int i = 0, step = tick_step(cell, GLYPH_H + 6); i < rows; i += step) {
        const int cy = top + i * cell + cell / 2;
        fill(img, W, H, left - 1 - TICK, cy, TICK, 1, ink);
        snprintf(text, sizeof text, "%d", i);
        font_draw(img, W, H, left - TICK - 4 - font_text_width(text, SCALE), cy - GLYPH_H / 2,
                  text, SCALE, ink);
    }

    /* the colour scale: weight 0 at the bottom, the largest at the top */
    font_draw(img, W, H, bar_x, top - TICK - 4 - GLYPH_H, "WEIGHT", SCALE, ink);
    for (int y = 0; y < bar_h; y++) {
        ramp(1.0 - (double)y / (bar_h - 1), rgb);
        fill(img, W, H, bar_x, top + y, BAR_W, 1, rgb);
    }
    for (int i = 0; i < 5; i++) {
        const int y = top + (int)lround((1.0 - bar_ticks[i]) * (bar_h - 1));
        fill(img, W, H, bar_x + BAR_W, y, TICK, 1, ink);
        font_draw(img, W, H, bar_x + BAR_W + 6, y - GLYPH_H / 2, bar_labels[i], SCALE, ink);
    }
    /* the legend */
    const struct { const unsigned char *rgb; const char *name; } legend[2] = {
        {heatmap_pad_rgb, "PAD"}, {heatmap_masked_rgb, "MASKED"}};
    for (int i = 0; i < 2; i++) {
        const int y = legend_y + i * 22;
        fill(img, W, H, bar_x - 1, y - 1, GLYPH_H + 2, GLYPH_H + 2, ink);
        fill(img, W, H, bar_x, y, GLYPH_H, GLYPH_H, legend[i].rgb);
        font_draw(img, W, H, bar_x + GLYPH_H + 8, y, legend[i].name, SCALE, ink);
    }
    *width = W, *height = H;
    return img;
}
