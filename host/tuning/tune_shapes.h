/* tune_shapes.h -- attn-tune's --shapes: the user's production shapes, from
 * a comma list on the command line or a file, and the DESIGN prefill and
 * decode sets. */
#ifndef ATTN_TUNE_SHAPES_H
#define ATTN_TUNE_SHAPES_H

#include "attn.h"

#include <stddef.h>

/* The syntax, for --help and README. */
#define TUNE_SHAPES_SYNTAX \
    "  A shape is fields joined by ':' -- hq=N (query heads), hkv=N (key/value\n" \
    "  heads, default hq), d=N (head dim), s=N (both lengths) or sq=N and skv=N,\n" \
    "  b=N (batch, default 1), and the words f32|f16|bf16 (default f32: a shape\n" \
    "  without one is tuned in f32 only; add :f16 or :bf16 to tune that type) and\n" \
    "  causal|full (default causal); variants: window=L or window=L/R (keys back\n" \
    "  and ahead, R -1 unlimited), softcap=C, alibi=MAX_BIAS (each its own tuned\n" \
    "  class). Shapes are separated by ',' or white space;\n" \
    "  in a file, '#' starts a comment. With --decode, sq=N is the new queries\n" \
    "  per step (1..64) and skv=N the cache's length (the class's). Examples:\n" \
    "    --shapes hq=32:hkv=8:d=128:s=4096,hq=8:hkv=2:d=64:s=1024:f16:full\n" \
    "    --decode --shapes b=4:hq=32:hkv=8:d=128:sq=1:skv=8192\n"

/* Parses text (a list as above) into out (malloc'd, caller frees); `origin`
 * labels messages ("--shapes" or a file name). Returns the count, or -1
 * after writing why (with the item and, for a file, the line) to err. */
int tune_shapes_parse(const char *text, const char *origin, attn_problem **out, char *err,
                      size_t errsize);

/* --shapes ARG: a readable file's contents, else ARG itself as a list. */
int tune_shapes_from_arg(const char *arg, attn_problem **out, char *err, size_t errsize);

/* The DESIGN prefill set (B=1 Hq=8 Hkv=2 D=64 S=512..4096, B=1 Hq=32 Hkv=8
 * D=128 S=1024,2048, causal, f32). */
int tune_shapes_design(attn_problem **out);
/* The DESIGN decode set (B=4 Hq=32 Hkv=8 D=128, one new query against a
 * cache of 1024, 4096 and 16384 keys, causal, f32): attn-tune --decode. */
int tune_shapes_design_decode(attn_problem **out);

/* The shapes attn-tune works on: --shapes ARG when arg is not NULL (a
 * file or a list), else the DESIGN set of the entry (decode nonzero: the
 * decode set). A decode shape must be a block attn_decode runs through its
 * decode kernels: sq at most ATTN_DECODE_MAX_Q_LEN (longer blocks are
 * planned and tuned as prefill) and at most skv (the new queries are the
 * cache's last tokens). Returns the count, or -1 with why in err. */
int tune_shapes_load(const char *arg, int decode, attn_problem **out, char *err, size_t errsize);

/* "B=1 Hq=8 Hkv=2 D=64 S=2048 f32 causal" (then " window=L/R softcap=C
 * alibi=M" for the variants it has) */
void tune_shape_format(const attn_problem *p, char *buf, size_t size);

#endif /* ATTN_TUNE_SHAPES_H */
