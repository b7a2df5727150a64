/* bitmap_font.c -- the 5x7 glyphs of bitmap_font.h, written as pictures
 * ('#' lit, '.' not; seven rows of five, separated by spaces) so that a
 * glyph can be checked by eye. */
#include "bitmap_font.h"

#include <stddef.h>
#include <string.h>

static const struct glyph {
    char c;
    const char *rows;
} glyphs[] = {
    {'0', ".###. #...# #..## #.#.# ##..# #...# .###."},
    {'1', "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###."},
    {'2', ".###. #...# ....# ...#. ..#.. .#... #####"},
    {'3', "####. ....# ....# .###. ....# ....# ####."},
    {'4', "...#. ..##. .#.#. #..#. ##### ...#. ...#."},
    {'5', "##### #.... ####. ....# ....# #...# .###."},
    {'6', "..##. .#... #.... ####. #...# #...# .###."},
    {'7', "##### ....# ...#. ..#.. .#... .#... .#..."},
    {'8', ".###. #...# #...# .###. #...# #...# .###."},
    {'9', ".###. #...# #...# .#### ....# ...#. .##.."},
    {'.', "..... ..... ..... ..... ..... .##.. .##.."},
    {'-', "..... ..... ..... ##### ..... ..... ....."},
    {'+', "..... ..#.. ..#.. ##### ..#.. ..#.. ....."},
    {'e', "..... ..... .###. #...# ##### #.... .###."},
    {' ', "..... ..... ..... ..... ..... ..... ....."},
    {'A', ".###. #...# #...# ##### #...# #...# #...#"},
    {'D', "####. #...# #...# #...# #...# #...# ####."},
    {'E', "##### #.... #.... ####. #.... #.... #####"},
    {'G', ".###. #...# #.... #.### #...# #...# .####"},
    {'H', "#...# #...# #...# ##### #...# #...# #...#"},
    {'I', ".###. ..#.. ..#.. ..#.. ..#.. ..#.. .###."},
    {'K', "#...# #..#. #.#.. ##... #.#.. #..#. #...#"},
    {'M', "#...# ##.## #.#.# #.#.# #...# #...# #...#"},
    {'P', "####. #...# #...# ####. #.... #.... #...."},
    {'Q', ".###. #...# #...# #...# #.#.# #..#. .##.#"},
    {'R', "####. #...# #...# ####. #.#.. #..#. #...#"},
    {'S', ".#### #.... #.... .###. ....# ....# ####."},
    {'T', "##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#.."},
    {'U', "#...# #...# #...# #...# #...# #...# .###."},
    {'W', "#...# #...# #...# #.#.# #.#.# #.#.# .#.#."},
    {'Y', "#...# #...# .#.#. ..#.. ..#.. ..#.. ..#.."},
};
static const char box[] = "##### #...# #...# #...# #...# #...# #####";

static const char *rows_of(char c)
{
    for (size_t i = 0; i < sizeof glyphs / sizeof glyphs[0]; i++)
        if (glyphs[i].c == c) return glyphs[i].rows;
    return box;
}

int font_text_width(const char *text, int scale)
{
    const int n = (int)strlen(text);
    return n ? (n * FONT_ADVANCE - (FONT_ADVANCE - FONT_W)) * scale : 0;
}

void font_draw(unsigned char *img, int width, int height, int x, int y, const char *text,
               int scale, const unsigned char rgb[3])
{
    for (; *text; text++, x += FONT_ADVANCE * scale) {
        const char *rows = rows_of(*text);
        for (int r = 0; r < FONT_H; r++)
            for (int c = 0; c < FONT_W; c++) {
                if (rows[r * (FONT_W + 1) + c] != '#') continue;
                for (int dy = 0; dy < scale; dy++)
                    for (int dx = 0; dx < scale; dx++) {
                        const int px = x + c * scale + dx, py = y + r * scale + dy;
                        if (px < 0 || py < 0 || px >= width || py >= height) continue;
                        memcpy(img + ((size_t)py * width + px) * 3, rgb, 3);
                    }
            }
    }
}
