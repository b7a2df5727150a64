/* search_space.c -- the tuner's search space, from the family descriptors'
 * search values (kernel_desc.h): the legal candidates for a device and
 * problem, a candidate's neighbours for local search, and how far a
 * candidate is from the default. */
#include "kernels/kernel_desc.h"
#include "tuning/tuning.h"
#include "core/context.h"

#include <stdlib.h>
#include <string.h>

/* Index of the axis value nearest to v. */
static int nearest_index(const attn_tunable_desc *a, int v)
{
    int best = 0;
    for (int i = 1; i < a->nsearch; i++)
        if (abs(a->search[i] - v) < abs(a->search[best] - v)) best = i;
    return best;
}

int attn_params_equal(const attn_params *a, const attn_params *b)
{
    if (a->family != b->family) return 0;
    const attn_family_desc *f = attn_family_desc_of(a->family);
    if (!f) return memcmp(a, b, sizeof *a) == 0;
    for (int i = 0; i < f->ntunables; i++)
        if (attn_desc_get(a, f->tunables[i].offset) != attn_desc_get(b, f->tunables[i].offset))
            return 0;
    return 1;
}

int attn_search_enumerate(const attn_device_limits *dev, const attn_problem *p,
                          const attn_params *base, unsigned families, attn_params **out)
{
    size_t cap = 0;
    for (int fi = 0; fi < attn_family_desc_count; fi++) {
        const attn_family_desc *f = attn_family_descs[fi];
        size_t n = 1;
        for (int a = 0; a < f->ntunables; a++) n *= (size_t)f->tunables[a].nsearch;
        cap += n;
    }
    attn_params *list = malloc((cap ? cap : 1) * sizeof *list);
    if (!list) return -1;
    int count = 0;
    char err[256];
    for (int fi = 0; fi < attn_family_desc_count; fi++) {
        const attn_family_desc *f = attn_family_descs[fi];
        if (families && !(families & (1u << f->family))) continue;
        int idx[16] = {0};
        for (;;) {
            attn_params c = *base;
            c.family = f->family;
            for (int a = 0; a < f->ntunables; a++)
                *attn_desc_field(&c, f->tunables[a].offset) = f->tunables[a].search[idx[a]];
            if (attn_params_legal(&c, dev, p, err, sizeof err)) list[count++] = c;
            int a = 0; /* the next combination, like an odometer */
            while (a < f->ntunables && ++idx[a] == f->tunables[a].nsearch) idx[a++] = 0;
            if (a == f->ntunables) break;
        }
    }
    *out = list;
    return count;
}

int attn_search_neighbours(const attn_device_limits *dev, const attn_problem *p,
                           const attn_params *c, attn_params *out, int max)
{
    const attn_family_desc *f = attn_family_desc_of(c->family);
    if (!f) return 0;
    int n = 0;
    char err[256];
    for (int a = 0; a < f->ntunables; a++) {
        const attn_tunable_desc *ax = &f->tunables[a];
        int i = nearest_index(ax, attn_desc_get(c, ax->offset));
        for (int step = -1; step <= 1; step += 2) {
            int j = i + step;
            if (j < 0 || j >= ax->nsearch || n >= max) continue;
            attn_params nb = *c;
            *attn_desc_field(&nb, ax->offset) = ax->search[j];
            if (attn_params_legal(&nb, dev, p, err, sizeof err)) out[n++] = nb;
        }
    }
    return n;
}

int attn_search_complexity(const attn_params *c, const attn_params *dflt)
{
    if (attn_params_equal(c, dflt)) return 0;
    int score = 1 + (c->family != dflt->family ? 100 : 0);
    const attn_family_desc *f = attn_family_desc_of(c->family);
    if (!f) return score;
    for (int a = 0; a < f->ntunables; a++) {
        const attn_tunable_desc *ax = &f->tunables[a];
        score += abs(nearest_index(ax, attn_desc_get(c, ax->offset)) -
                     nearest_index(ax, attn_desc_get(dflt, ax->offset)));
    }
    return score;
}
