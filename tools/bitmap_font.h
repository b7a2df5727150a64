/* bitmap_font.h -- a tiny 5x7 pixel font (digits, the characters of
 * printf's %g, and the capitals that attn-weights' labels use) drawn into an
 * RGB image, so that the PNG can carry tick labels without a font library. */
#ifndef ATTN_BITMAP_FONT_H
#define ATTN_BITMAP_FONT_H

enum { FONT_W = 5, FONT_H = 7, FONT_ADVANCE = 6 }; /* pixels at scale 1 */

/* Width in pixels of text drawn at scale (no trailing gap). */
int font_text_width(const char *text, int scale);

/* Draws text with its top-left corner at (x, y) into img (height rows of
 * width RGB pixels), each font pixel a scale x scale square of rgb; what
 * falls outside the image is clipped. A character the font lacks is drawn
 * as a hollow box, so a missing glyph shows instead of vanishing. */
void font_draw(unsigned char *img, int width, int height, int x, int y, const char *text,
               int scale, const unsigned char rgb[3]);

#endif /* ATTN_BITMAP_FONT_H */
