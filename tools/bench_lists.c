/* bench_lists.c -- the syntax of attn-bench's list-valued options
 * (--splits, --block-size, --mixed-lengths, --packed, --dtype) and the
 * lengths --mixed stands for, declared in bench_options.h; the parser
 * (bench_options.c) and the tests use them. */
#define _POSIX_C_SOURCE 200809L
#include "bench_options.h"
#include "core/text.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The next item of a comma-separated list held in a writable buffer,
 * split in place; NULL after the last. Items may be empty ("1,,2", a
 * trailing comma): the callers refuse those, where strtok_r skipped them. */
static char *next_item(char **at)
{
    char *t = *at;
    if (!t) return NULL;
    char *comma = strchr(t, ',');
    *at = comma ? comma + 1 : NULL;
    if (comma) *comma = 0;
    return t;
}

/* Whether x is among v[0..n-1]. A list of configurations to compare
 * refuses a repeat, which would time one configuration twice. */
static int repeated(const int *v, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x) return 1;
    return 0;
}

/* A comma-separated list of up to max integers in lo..hi, or the word
 * zero_word (when not NULL) for 0, each once when distinct. Returns the
 * count, or -1. */
static int parse_int_list(const char *list, long lo, long hi, const char *zero_word, int distinct,
                          int *out, int max)
{
    char buf[1024];
    if (!list || strlen(list) >= sizeof buf) return -1;
    snprintf(buf, sizeof buf, "%s", list);
    int n = 0;
    char *at = buf;
    for (char *t; (t = next_item(&at));) {
        if (n == max) return -1;
        long v = 0;
        if (!zero_word || strcmp(t, zero_word) != 0) {
            if (attn_parse_long(t, lo, hi, &v)) return -1;
        }
        if (distinct && repeated(out, n, (int)v)) return -1;
        out[n++] = (int)v;
    }
    return n ? n : -1;
}

int bench_parse_splits(const char *list, int *splits, int max)
{
    return parse_int_list(list, 1, 256, "auto", 1, splits, max);
}

int bench_parse_blocks(const char *list, int *blocks, int max)
{
    const int n = parse_int_list(list, 0, 256, NULL, 1, blocks, max);
    for (int i = 0; i < n; i++)
        if (blocks[i] && (blocks[i] < 16 || (blocks[i] & (blocks[i] - 1)))) return -1;
    return n;
}

int bench_parse_mixed_lengths(const char *text, int *min, int *max)
{
    int v[2];
    if (parse_int_list(text, 1, 1 << 20, NULL, 0, v, 2) != 2 || v[0] > v[1]) return -1;
    *min = v[0], *max = v[1];
    return 2;
}

void bench_mixed_lengths(int n, int min, int max, int *lens)
{
    for (int i = 0; i < n; i++) {
        const double f = n > 1 ? (double)i / (n - 1) : 1.0;
        lens[i] = (int)lround(min * pow((double)max / min, f));
    }
    if (n > 0) lens[0] = n > 1 ? min : max, lens[n - 1] = max; /* exact ends */
}

int bench_parse_packed(const char *list, int *lens, int max)
{
    return parse_int_list(list, 1, 1 << 20, NULL, 0, lens, max); /* sequences may share a length */
}

int bench_parse_dtypes(const char *list, attn_dtype *dtypes, int max)
{
    static const struct { const char *name; attn_dtype t; } names[] = {
        {"f32", ATTN_F32}, {"f16", ATTN_F16}, {"bf16", ATTN_BF16}};
    char buf[64];
    if (!list || strlen(list) >= sizeof buf) return -1;
    snprintf(buf, sizeof buf, "%s", list);
    int n = 0, seen[3]; /* the names' indices: no repeats, so at most 3 */
    char *at = buf;
    for (char *t; (t = next_item(&at));) {
        int k = 0;
        while (k < 3 && strcmp(t, names[k].name) != 0) k++;
        if (k == 3 || n == max || repeated(seen, n, k)) return -1;
        seen[n] = k;
        dtypes[n++] = names[k].t;
    }
    return n ? n : -1;
}
