/* heatmap_svg.c -- the weights as an SVG: one titled rect per cell (so a
 * viewer shows each value on hover), the same colours as heatmap.c's PNG. */
#include "heatmap.h"

#include <stdio.h>
#include <string.h>

/* The length of the well-formed UTF-8 sequence at s (1 for ASCII), or 0. */
static int utf8_length(const unsigned char *s)
{
    const unsigned char c = s[0];
    int n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
          : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    /* no overlong forms, surrogates or code points past U+10FFFF */
    if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) ||
        (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

int heatmap_write_svg(FILE *f, const float *w, const unsigned char *kind, int sq, int skv,
                      const char *title)
{
    float wmax = 0;
    for (size_t i = 0; i < (size_t)sq * skv; i++)
        if (kind[i] == CELL_WEIGHT && w[i] > wmax) wmax = w[i];
    static const char *kind_name[] = {"weight", "masked", "pad"};
    char safe[1024]; /* the title names the user's file: escape it for XML */
    size_t n = 0;
    for (const unsigned char *c = (const unsigned char *)title; *c && n + 7 < sizeof safe;) {
        const char *e = *c == '&' ? "&amp;" : *c == '<' ? "&lt;" : *c == '>' ? "&gt;" : NULL;
        const int u = utf8_length(c);
        if (e) memcpy(safe + n, e, strlen(e)), n += strlen(e), c++;
        else if (*c < 0x20 || u == 0) safe[n++] = '?', c++; /* not allowed in XML, or not UTF-8 */
        else memcpy(safe + n, c, (size_t)u), n += (size_t)u, c += u;
    }
    safe[n] = 0;
    title = safe;
    const int cell = 10, left = 40, top = 62;
    unsigned char rgb[3];
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n<title>%s</title>\n"
            "<text x=\"%d\" y=\"16\">%s</text>\n"
            "<text x=\"%d\" y=\"34\">weights: dark blue (0) to yellow (%.4g), on a square-root "
            "scale; masked <tspan fill=\"#%02x%02x%02x\">&#9632;</tspan>, pad <tspan "
            "fill=\"#%02x%02x%02x\">&#9632;</tspan></text>\n"
            "<text x=\"%d\" y=\"52\">key position &#8594;</text>\n<text "
            "transform=\"translate(24,%d) rotate(90)\">query position &#8594;</text>\n",
            left + skv * cell < 640 ? 660 : left + skv * cell + 20, top + sq * cell + 10, title,
            left, title, left, (double)wmax, heatmap_masked_rgb[0], heatmap_masked_rgb[1],
            heatmap_masked_rgb[2], heatmap_pad_rgb[0], heatmap_pad_rgb[1], heatmap_pad_rgb[2],
            left, top);
    for (int i = 0; i < sq; i++)
        for (int j = 0; j < skv; j++) {
            const size_t at = (size_t)i * skv + j;
            heatmap_colour(w[at], wmax, kind[at], rgb);
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                    "fill=\"#%02x%02x%02x\"><title>q %d, k %d: %s %.4g</title></rect>\n",
                    left + j * cell, top + i * cell, cell, cell, rgb[0], rgb[1], rgb[2], i, j,
                    kind_name[kind[at]], (double)w[at]);
        }
    return fprintf(f, "</svg>\n") > 0 && !ferror(f);
}
