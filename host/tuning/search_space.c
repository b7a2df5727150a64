/* search_space.c -- the tuner's search space, from the family descriptors'
 * search values (kernel_desc.h): the legal candidates for a device and
 * problem and entry point (decode adds its splits), a candidate's
 * neighbours for local search, and how far a candidate is from the default. */
#include "kernels/kernel_desc.h"
#include "tuning/tuning.h"
#include "core/context.h"

#include <stdio.h>
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

/* Every tunable a candidate of c's family may differ in: its family's and
 * decode's splits (a prefill candidate's splits are always its base's, so
 * comparing them changes nothing there). */
static int all_axes(const attn_params *c, const attn_tunable_desc **ax)
{
    return attn_search_axes(c->family, ATTN_ENTRY_DECODE, ax, ATTN_SEARCH_MAX_AXES);
}

int attn_params_equal(const attn_params *a, const attn_params *b)
{
    if (a->family != b->family) return 0;
    const attn_tunable_desc *ax[ATTN_SEARCH_MAX_AXES];
    const int n = all_axes(a, ax);
    if (!attn_family_desc_of(a->family)) return memcmp(a, b, sizeof *a) == 0;
    for (int i = 0; i < n; i++)
        if (attn_desc_get(a, ax[i]->offset) != attn_desc_get(b, ax[i]->offset)) return 0;
    return 1;
}

/* A decode candidate whose splits would leave a split less than one key
 * block is the same launch as one with fewer splits: not searched. */
static int redundant_splits(const attn_params *c, const attn_problem *p)
{
    return c->kv_splits > 1 && (long)c->kv_splits * c->block_keys > p->kv_len;
}

/* Whether c is a candidate: legal here, for a decode class (cache, else
 * NULL) its keys per block within a paged cache's block, and not a
 * duplicate launch. */
static int searchable(const attn_params *c, const attn_device_limits *dev,
                      const attn_problem *p, const attn_shape_class *cache)
{
    char err[256];
    const int page_rows = cache ? cache->kv_block : 0;
    return !redundant_splits(c, p) && (page_rows <= 0 || c->block_keys <= page_rows) &&
           attn_params_legal(c, dev, p, err, sizeof err);
}

int attn_search_enumerate(const attn_device_limits *dev, int entry, const attn_problem *p,
                          const attn_shape_class *cache, const attn_params *base, unsigned families,
                          attn_params **out)
{
    size_t cap = 0;
    const attn_tunable_desc *ax[ATTN_SEARCH_MAX_AXES];
    for (int fi = 0; fi < attn_family_desc_count; fi++) {
        const int na =
            attn_search_axes(attn_family_descs[fi]->family, entry, ax, ATTN_SEARCH_MAX_AXES);
        size_t n = 1;
        for (int a = 0; a < na; a++) n *= (size_t)ax[a]->nsearch;
        cap += n;
    }
    attn_params *list = malloc((cap ? cap : 1) * sizeof *list);
    if (!list) return -1;
    int count = 0;
    for (int fi = 0; fi < attn_family_desc_count; fi++) {
        const attn_family_desc *f = attn_family_descs[fi];
        /* a named-only family (mma) is searched unnamed where it is the
         * default (base: the heuristic's plan), i.e. where it was verified */
        if (families ? !(families & (1u << f->family))
                     : f->search_named_only && base->family != f->family)
            continue;
        if (!f->entry[entry].kernel) continue; /* no such kernel (flash's decode) */
        const int na = attn_search_axes(f->family, entry, ax, ATTN_SEARCH_MAX_AXES);
        int idx[ATTN_SEARCH_MAX_AXES] = {0};
        for (;;) {
            attn_params c = *base;
            c.family = f->family;
            for (int a = 0; a < na; a++)
                *attn_desc_field(&c, ax[a]->offset) = ax[a]->search[idx[a]];
            if (searchable(&c, dev, p, cache)) list[count++] = c;
            int a = 0; /* the next combination, like an odometer */
            while (a < na && ++idx[a] == ax[a]->nsearch) idx[a++] = 0;
            if (a == na) break;
        }
    }
    *out = list;
    return count;
}

int attn_search_neighbours(const attn_device_limits *dev, int entry, const attn_problem *p,
                           const attn_shape_class *cache, const attn_params *c, attn_params *out,
                           int max)
{
    const attn_tunable_desc *axes[ATTN_SEARCH_MAX_AXES];
    const int na = attn_search_axes(c->family, entry, axes, ATTN_SEARCH_MAX_AXES);
    int n = 0;
    for (int a = 0; a < na; a++) {
        const attn_tunable_desc *ax = axes[a];
        const int v = attn_desc_get(c, ax->offset);
        /* the searched values just below and just above v: its neighbours in
         * the list, or, for a value off it (a heuristic default or family
         * start the device's limits shrank between two searched values),
         * the two that bracket it */
        int below = -1, above = -1;
        for (int i = 0; i < ax->nsearch; i++) {
            if (ax->search[i] < v) below = i;
            if (ax->search[i] > v && above < 0) above = i;
        }
        const int js[2] = {below, above};
        for (int k = 0; k < 2; k++) {
            if (js[k] < 0 || n >= max) continue;
            attn_params nb = *c;
            *attn_desc_field(&nb, ax->offset) = ax->search[js[k]];
            if (searchable(&nb, dev, p, cache)) out[n++] = nb;
        }
    }
    return n;
}

void attn_search_format(int entry, const attn_params *pr, char *buf, size_t size)
{
    attn_params_format(pr, buf, size);
    const attn_family_desc *f = attn_family_desc_of(pr->family);
    const attn_tunable_desc *ax[ATTN_SEARCH_MAX_AXES];
    const int na = attn_search_axes(pr->family, entry, ax, ATTN_SEARCH_MAX_AXES);
    size_t n = strlen(buf);
    for (int a = f ? f->ntunables : na; a < na && n < size; a++) /* beyond the family's */
        n += (size_t)snprintf(buf + n, size - n, ",%s=%d", ax[a]->name,
                              attn_desc_get(pr, ax[a]->offset));
}

int attn_search_complexity(const attn_params *c, const attn_params *dflt)
{
    if (attn_params_equal(c, dflt)) return 0;
    int score = 1 + (c->family != dflt->family ? 100 : 0);
    const attn_tunable_desc *axes[ATTN_SEARCH_MAX_AXES];
    const int na = all_axes(c, axes);
    for (int a = 0; a < na; a++) {
        const attn_tunable_desc *ax = axes[a];
        score += abs(nearest_index(ax, attn_desc_get(c, ax->offset)) -
                     nearest_index(ax, attn_desc_get(dflt, ax->offset)));
    }
    return score;
}
