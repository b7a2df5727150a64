/* search_space.c -- the tuner's search space: for each kernel family the
 * values it tries of each tunable (a subset of the ranges in params.c's one
 * table), the legal candidates for a device and problem, a candidate's
 * neighbours for local search, and how far a candidate is from the default. */
#include "tuning.h"

#include <stdlib.h>
#include <string.h>

/* Vector: rows 4..16 covers DESIGN's measurements (4 rows 104 GFLOP/s, 8
 * rows 177, 16 rows ~153 on PoCL); the odd sizes (6, 10, 12) exist because
 * the best block is set by how many accumulators fit the registers, and 1
 * and 2 for decode, where a block's other rows would be computed in vain.
 * Tiled: llama.cpp's starting points (work-group 128, 4-16 rows, 32 keys)
 * with room around them; local_kv matters per vendor. */
const attn_search_family attn_search_families[] = {
    {ATTN_FAMILY_TILED, "tiled", 4,
     {{"rows", 6, {1, 2, 4, 8, 16, 32}},
      {"keys", 3, {16, 32, 64}},
      {"wg", 4, {32, 64, 128, 256}},
      {"local_kv", 2, {0, 1}}}},
    {ATTN_FAMILY_VECTOR, "vector", 3,
     {{"rows", 8, {1, 2, 4, 6, 8, 10, 12, 16}},
      {"keys", 4, {16, 32, 64, 128}},
      {"vec", 3, {4, 8, 16}}}},
};
const int attn_search_family_count =
    (int)(sizeof attn_search_families / sizeof attn_search_families[0]);

static const attn_tunable *tunable(const char *name)
{
    for (int i = 0; i < attn_tunable_count; i++)
        if (strcmp(attn_tunables[i].name, name) == 0) return &attn_tunables[i];
    return NULL;
}

static int *field(attn_params *p, const char *name)
{
    const attn_tunable *t = tunable(name);
    return t ? (int *)((char *)p + t->offset) : NULL;
}

static int value(const attn_params *p, const char *name)
{
    const attn_tunable *t = tunable(name);
    return t ? *(const int *)((const char *)p + t->offset) : 0;
}

static const attn_search_family *family_of(int family)
{
    for (int i = 0; i < attn_search_family_count; i++)
        if (attn_search_families[i].family == family) return &attn_search_families[i];
    return NULL;
}

/* Index of the axis value nearest to v. */
static int nearest_index(const attn_search_axis *a, int v)
{
    int best = 0;
    for (int i = 1; i < a->nvalues; i++)
        if (abs(a->values[i] - v) < abs(a->values[best] - v)) best = i;
    return best;
}

int attn_params_equal(const attn_params *a, const attn_params *b)
{
    if (a->family != b->family) return 0;
    const attn_search_family *f = family_of(a->family);
    if (!f) return memcmp(a, b, sizeof *a) == 0;
    for (int i = 0; i < f->naxes; i++)
        if (value(a, f->axes[i].name) != value(b, f->axes[i].name)) return 0;
    return 1;
}

int attn_search_enumerate(const attn_device_limits *dev, const attn_problem *p,
                          const attn_params *base, unsigned families, attn_params **out)
{
    size_t cap = 0;
    for (int fi = 0; fi < attn_search_family_count; fi++) {
        const attn_search_family *f = &attn_search_families[fi];
        size_t n = 1;
        for (int a = 0; a < f->naxes; a++) n *= (size_t)f->axes[a].nvalues;
        cap += n;
    }
    attn_params *list = malloc((cap ? cap : 1) * sizeof *list);
    if (!list) return -1;
    int count = 0;
    char err[256];
    for (int fi = 0; fi < attn_search_family_count; fi++) {
        const attn_search_family *f = &attn_search_families[fi];
        if (families && !(families & (1u << f->family))) continue;
        int idx[6] = {0};
        for (;;) {
            attn_params c = *base;
            c.family = f->family;
            for (int a = 0; a < f->naxes; a++) *field(&c, f->axes[a].name) = f->axes[a].values[idx[a]];
            if (attn_params_legal(&c, dev, p, err, sizeof err)) list[count++] = c;
            int a = 0; /* the next combination, like an odometer */
            while (a < f->naxes && ++idx[a] == f->axes[a].nvalues) idx[a++] = 0;
            if (a == f->naxes) break;
        }
    }
    *out = list;
    return count;
}

int attn_search_neighbours(const attn_device_limits *dev, const attn_problem *p,
                           const attn_params *c, attn_params *out, int max)
{
    const attn_search_family *f = family_of(c->family);
    if (!f) return 0;
    int n = 0;
    char err[256];
    for (int a = 0; a < f->naxes; a++) {
        const attn_search_axis *ax = &f->axes[a];
        int i = nearest_index(ax, value(c, ax->name));
        for (int step = -1; step <= 1; step += 2) {
            int j = i + step;
            if (j < 0 || j >= ax->nvalues || n >= max) continue;
            attn_params nb = *c;
            *field(&nb, ax->name) = ax->values[j];
            if (attn_params_legal(&nb, dev, p, err, sizeof err)) out[n++] = nb;
        }
    }
    return n;
}

int attn_search_complexity(const attn_params *c, const attn_params *dflt)
{
    if (attn_params_equal(c, dflt)) return 0;
    int score = 1 + (c->family != dflt->family ? 100 : 0);
    const attn_search_family *f = family_of(c->family);
    if (!f) return score;
    for (int a = 0; a < f->naxes; a++) {
        const attn_search_axis *ax = &f->axes[a];
        score += abs(nearest_index(ax, value(c, ax->name)) - nearest_index(ax, value(dflt, ax->name)));
    }
    return score;
}
