/* params.c -- the kernel parameters, generic over the family descriptors
 * (kernel_desc.h): defaults, the device heuristic with its shrink loop,
 * parsing (ATTN_PARAMS, attn_context_set_params, the tuning database),
 * the plan string, the legality check and the -D option string. */
#define _POSIX_C_SOURCE 200809L
#include "core/context.h"
#include "core/text.h"
#include "kernels/kernel_desc.h"
#include "attention/variants.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tunables every family shares: which family, and decode's splits (a
 * kernel argument, not a macro). */
static const attn_tunable_desc common_tunables[] = {
    {"family", NULL, offsetof(attn_params, family), 0, ATTN_FAMILY_COUNT - 1, 0, 0, 0, {0},
     "kernel family: tiled (GPU-style), vector (CPU-style), flash (GPU prefill, unmeasured) "
     "or mma (GPU prefill on tensor cores), or its number"},
    {"splits", NULL, offsetof(attn_params, kv_splits), 0, 256, 0, 0, 8, {0, 1, 2, 4, 8, 16, 32, 64},
     "decode: chunks each sequence's keys are split into, run in parallel and combined by "
     "their LSEs (flash-decoding); 0 = chosen from compute units and prefix length"},
};
#define NCOMMON ((int)(sizeof common_tunables / sizeof common_tunables[0]))

const attn_family_desc *const attn_family_descs[] = {&attn_desc_tiled, &attn_desc_vector,
                                                     &attn_desc_flash, &attn_desc_mma};
const int attn_family_desc_count = (int)(sizeof attn_family_descs / sizeof attn_family_descs[0]);

const attn_family_desc *attn_family_desc_of(int family)
{
    return family >= 0 && family < attn_family_desc_count ? attn_family_descs[family] : NULL;
}

int attn_search_axes(int family, int entry, const attn_tunable_desc **out, int max)
{
    const attn_family_desc *f = attn_family_desc_of(family);
    int n = 0;
    for (int i = 0; f && i < f->ntunables && n < max; i++) out[n++] = &f->tunables[i];
    /* the shared tunables with search values (splits) are decode's only */
    for (int i = 0; entry == ATTN_ENTRY_DECODE && i < NCOMMON && n < max; i++)
        if (common_tunables[i].nsearch > 0) out[n++] = &common_tunables[i];
    return n;
}

int *attn_desc_field(attn_params *pr, size_t offset) { return (int *)((char *)pr + offset); }
int attn_desc_get(const attn_params *pr, size_t offset)
{
    return *(const int *)((const char *)pr + offset);
}

static int out_of_range(const attn_tunable_desc *t, int v)
{
    return v < t->min || v > t->max || (t->pow2 && (v & (v - 1)));
}

static int range_error(const attn_tunable_desc *t, int v, const char *fam, char *err, size_t n)
{
    snprintf(err, n, "%s=%d is outside %d..%d%s%s%s", t->name, v, t->min, t->max,
             t->pow2 ? " or not a power of two" : "", fam ? " for the family " : "",
             fam ? fam : "");
    return 0;
}

attn_params attn_params_defaults(int family)
{
    attn_params pr = {0};
    /* every family's defaults, the chosen one's last: fields it does not
     * use keep sane values for the others */
    for (int pass = 0; pass < 2; pass++)
        for (int d = 0; d < attn_family_desc_count; d++) {
            const attn_family_desc *f = attn_family_descs[d];
            if ((f->family == family) != pass) continue;
            for (int t = 0; t < f->ntunables; t++)
                *attn_desc_field(&pr, f->tunables[t].offset) = f->tunables[t].dflt;
        }
    pr.family = family;
    return pr;
}

/* The name of family f's tunable at offset. */
static const char *name_at(const attn_family_desc *f, size_t offset)
{
    for (int t = 0; t < f->ntunables; t++)
        if (f->tunables[t].offset == offset) return f->tunables[t].name;
    return "?";
}

int attn_params_legal(const attn_params *pr, const attn_device_limits *dev,
                      const attn_problem *p, char *err, size_t errsize)
{
    for (int i = 0; i < NCOMMON; i++)
        if (out_of_range(&common_tunables[i], attn_desc_get(pr, common_tunables[i].offset)))
            return range_error(&common_tunables[i], attn_desc_get(pr, common_tunables[i].offset),
                               NULL, err, errsize);
    const attn_family_desc *f = attn_family_desc_of(pr->family);
    const char *refused = attn_family_refuses(pr->family, p);
    if (refused) {
        snprintf(err, errsize, "the family %s %s", f->name, refused);
        return 0;
    }
    for (int i = 0; i < f->ntunables; i++) {
        const int v = attn_desc_get(pr, f->tunables[i].offset);
        if (out_of_range(&f->tunables[i], v))
            return range_error(&f->tunables[i], v, f->name, err, errsize);
    }
    for (int i = 0; i < f->nconstraints; i++) {
        const attn_constraint *c = &f->constraints[i];
        const int a = attn_desc_get(pr, c->a), b = attn_desc_get(pr, c->b);
        if (a % b == 0) continue;
        snprintf(err, errsize, "%s=%d is not a multiple of %s=%d", name_at(f, c->a), a,
                 name_at(f, c->b), b);
        return 0;
    }
    if (dev && f->wg_offset != (size_t)-1 && (size_t)attn_desc_get(pr, f->wg_offset) > dev->max_wg) {
        snprintf(err, errsize, "%s=%d exceeds the device's max work-group size %zu",
                 name_at(f, f->wg_offset), attn_desc_get(pr, f->wg_offset), dev->max_wg);
        return 0;
    }
    if (f->work_group && dev && f->work_group(pr) > dev->max_wg) {
        snprintf(err, errsize, "%zu work-items a work-group exceed the device's max %zu",
                 f->work_group(pr), dev->max_wg);
        return 0;
    }
    const size_t local = attn_params_local_bytes(pr, p);
    if (dev && local > dev->local_mem) {
        snprintf(err, errsize, "needs %zu bytes of local memory, the device has %llu", local,
                 (unsigned long long)dev->local_mem);
        return 0;
    }
    return 1;
}

/* The work-group size down to the device's limit, staying a multiple of the
 * fields it must be a multiple of. */
static void clamp_wg(const attn_family_desc *f, attn_params *pr, const attn_device_limits *dev)
{
    if (f->wg_offset == (size_t)-1) return;
    int *wg = attn_desc_field(pr, f->wg_offset);
    for (int i = 0; i < f->nconstraints; i++) {
        if (f->constraints[i].a != f->wg_offset) continue;
        const int base = attn_desc_get(pr, f->constraints[i].b);
        if (*wg % base) *wg = base;
        while ((size_t)*wg > dev->max_wg && *wg > base) *wg /= 2;
    }
}

int attn_params_block_rows(const attn_params *pr)
{
    const attn_family_desc *f = attn_family_desc_of(pr->family);
    return f->block_rows ? f->block_rows(pr) : pr->block_rows;
}

const char *attn_family_refuses(int family, const attn_problem *p)
{
    const attn_family_desc *f = attn_family_desc_of(family);
    return f->refuses ? f->refuses(p) : NULL;
}

size_t attn_params_local_bytes(const attn_params *pr, const attn_problem *p)
{
    const attn_family_desc *f = attn_family_desc_of(pr->family);
    return f->local_bytes ? f->local_bytes(pr, p) : 0;
}

size_t attn_params_private_bytes(int entry, const attn_params *pr, const attn_problem *p)
{
    return attn_family_desc_of(pr->family)->private_bytes(pr, p, entry);
}

/* Whether pr's private state is over the GPU budget (never elsewhere). */
static int over_private(int entry, const attn_params *pr, const attn_device_limits *dev,
                        const attn_problem *p)
{
    return (dev->type & CL_DEVICE_TYPE_GPU) &&
           attn_params_private_bytes(entry, pr, p) > ATTN_PRIVATE_BUDGET_GPU;
}

/* Whether shrink step s of entry e can apply to pr: its field above the
 * floor and, when only the private budget is exceeded (legal), halving it
 * lowers the estimate (a smaller key tile does not shrink tiled's O). */
static int step_helps(const attn_family_desc *f, int entry, const attn_shrink_step *s,
                      const attn_params *pr, const attn_device_limits *dev,
                      const attn_problem *p, int legal)
{
    if (attn_desc_get(pr, s->offset) <= s->floor) return 0;
    if (!legal) return 1;
    attn_params t = *pr;
    *attn_desc_field(&t, s->offset) /= 2;
    clamp_wg(f, &t, dev);
    return attn_params_private_bytes(entry, &t, p) < attn_params_private_bytes(entry, pr, p);
}

void attn_params_fit(int entry, attn_params *pr, const attn_device_limits *dev,
                     const attn_problem *p)
{
    const attn_family_desc *f = attn_family_desc_of(pr->family);
    const attn_entry_desc *e = &f->entry[entry];
    char err[256];
    clamp_wg(f, pr, dev);
    for (;;) {
        const int legal = attn_params_legal(pr, dev, p, err, sizeof err);
        if (legal && !over_private(entry, pr, dev, p)) break;
        int s = 0;
        while (s < e->nshrink && !step_helps(f, entry, &e->shrink[s], pr, dev, p, legal)) s++;
        if (s == e->nshrink) break;
        *attn_desc_field(pr, e->shrink[s].offset) /= 2;
        clamp_wg(f, pr, dev);
    }
}

int attn_params_mma_suits(const attn_problem *p)
{
    return attn_family_refuses(ATTN_FAMILY_MMA, p) == NULL;
}

attn_params attn_params_heuristic(const attn_device_limits *dev, const attn_problem *p)
{
    if (dev->mma && attn_params_mma_suits(p)) {
        attn_params pr = attn_params_defaults(ATTN_FAMILY_MMA);
        attn_params_fit(ATTN_ENTRY_PREFILL, &pr, dev, p);
        return pr;
    }
    if (dev->type & CL_DEVICE_TYPE_CPU) {
        attn_params pr = attn_params_defaults(ATTN_FAMILY_VECTOR);
        attn_vector_fit_width(ATTN_ENTRY_PREFILL, &pr, dev->float_width);
        return pr;
    }
    /* GPU-style starting points (llama.cpp's Vulkan table): 128 work-items,
     * 16 rows, 32 keys; 64 keys when D is not a multiple of 16. */
    attn_params pr = attn_params_defaults(ATTN_FAMILY_TILED);
    if (p->head_dim % 16) pr.block_keys = 64;
    if (p->head_dim > 128) pr.block_rows = 8;
    attn_params_fit(ATTN_ENTRY_PREFILL, &pr, dev, p);
    return pr;
}

/* The tunable called name: of family f when it has one, else of any. */
static const attn_tunable_desc *find_tunable(const char *name, const attn_family_desc *f)
{
    for (int i = 0; i < NCOMMON; i++)
        if (strcmp(common_tunables[i].name, name) == 0) return &common_tunables[i];
    for (int pass = 0; pass < 2; pass++)
        for (int d = 0; d < attn_family_desc_count; d++) {
            const attn_family_desc *g = attn_family_descs[d];
            if (pass == 0 && g != f) continue;
            for (int i = 0; i < g->ntunables; i++)
                if (strcmp(g->tunables[i].name, name) == 0) return &g->tunables[i];
        }
    return NULL;
}

int attn_family_named(const char *name)
{
    for (int d = 0; name && d < attn_family_desc_count; d++)
        if (strcmp(attn_family_descs[d]->name, name) == 0) return attn_family_descs[d]->family;
    return -1;
}

/* family=NAME or its number */
static int family_value(const char *value)
{
    const int named = attn_family_named(value);
    if (named >= 0) return named;
    int v;
    return !attn_parse_int(value, 0, ATTN_FAMILY_COUNT - 1, &v) && attn_family_desc_of(v) ? v
                                                                                           : -1;
}

/* Whether t is one of f's own tunables (not a shared one, not another
 * family's). */
static int own_tunable(const attn_family_desc *f, const attn_tunable_desc *t)
{
    return f && t >= f->tunables && t < f->tunables + f->ntunables;
}

static int shared_tunable(const attn_tunable_desc *t)
{
    return t >= common_tunables && t < common_tunables + NCOMMON;
}

/* One pass over "name=value,...": with apply 0 it only finds family=.
 * Another family's tunable (rows for mma, wg for vector) is checked
 * against its own range and left out, its name added to left_out (when
 * given): one text may serve several families ("rows=4,splits=2" for every
 * decode family), and the planner says what it left out. */
static int parse_pass(char *buf, attn_params *out, int apply, char *left_out, size_t left_size,
                      char *err, size_t errsize)
{
    char *save = NULL;
    const attn_family_desc *f = attn_family_desc_of(out->family);
    size_t seen[32]; /* each name once: "rows=8,rows=16" is a mistake, not rows=16 */
    int nseen = 0;
    for (char *item = strtok_r(buf, ", ", &save); item; item = strtok_r(NULL, ", ", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) {
            snprintf(err, errsize, "\"%s\" is not name=value", item);
            return ATTN_PARAMS_SYNTAX;
        }
        *eq = 0;
        const char *value = eq + 1;
        const attn_tunable_desc *t = find_tunable(item, f);
        if (!t) {
            snprintf(err, errsize, "unknown tunable \"%s\"", item);
            return ATTN_PARAMS_UNKNOWN;
        }
        for (int i = 0; i < nseen; i++)
            if (seen[i] == t->offset) {
                snprintf(err, errsize, "%s is given twice", item);
                return ATTN_PARAMS_SYNTAX;
            }
        if (nseen < 32) seen[nseen++] = t->offset;
        if (t->offset == offsetof(attn_params, family)) {
            if ((out->family = family_value(value)) < 0) {
                snprintf(err, errsize, "family=%s: expected tiled, vector, flash or mma", value);
                return *value ? ATTN_PARAMS_UNKNOWN : ATTN_PARAMS_SYNTAX;
            }
            f = attn_family_desc_of(out->family);
            continue;
        }
        if (!apply) continue;
        int v;
        if (attn_parse_int(value, t->min, t->max, &v)) {
            snprintf(err, errsize, "%s=%s: expected an integer in %d..%d", item, value, t->min,
                     t->max);
            /* an integer out of this build's range may be a newer one's */
            return attn_parse_int(value, INT_MIN, INT_MAX, &v) ? ATTN_PARAMS_SYNTAX
                                                               : ATTN_PARAMS_UNKNOWN;
        }
        if (out_of_range(t, v)) { /* not a power of two */
            range_error(t, v, NULL, err, errsize);
            return ATTN_PARAMS_UNKNOWN;
        }
        /* no f (a family not known yet): checked against any */
        if (f && !shared_tunable(t) && !own_tunable(f, t)) {
            if (left_out) {
                const size_t n = strlen(left_out);
                snprintf(left_out + n, left_size - n, "%s%s", n ? "," : "", item);
            }
            continue;
        }
        *attn_desc_field(out, t->offset) = v;
    }
    return 0;
}

int attn_params_parse(const char *text, attn_params *params, char *err, size_t errsize)
{
    return attn_params_parse_noting(text, params, NULL, 0, err, errsize);
}

int attn_params_parse_noting(const char *text, attn_params *params, char *left_out,
                             size_t left_size, char *err, size_t errsize)
{
    if (left_out && left_size) left_out[0] = 0;
    char buf[512], again[512];
    if (snprintf(buf, sizeof buf, "%s", text) >= (int)sizeof buf) {
        snprintf(err, errsize, "too long");
        return ATTN_PARAMS_SYNTAX;
    }
    memcpy(again, buf, sizeof buf);
    attn_params out = *params;
    /* the family first, wherever it is written: the ranges are its own */
    int bad = parse_pass(buf, &out, 0, NULL, 0, err, errsize);
    if (bad == 0) bad = parse_pass(again, &out, 1, left_out, left_size, err, errsize);
    if (bad != 0) return bad;
    *params = out;
    return 0;
}

void attn_params_format(const attn_params *pr, char *buf, size_t size)
{
    const attn_family_desc *f = attn_family_desc_of(pr->family);
    size_t n = (size_t)snprintf(buf, size, "family=%s", f ? f->name : "?");
    for (int i = 0; f && i < f->ntunables && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, ",%s=%d", f->tunables[i].name,
                              attn_desc_get(pr, f->tunables[i].offset));
}

int attn_family_sources(int family, int entry, const char *const **names)
{
    const attn_entry_desc *e = &attn_family_desc_of(family)->entry[entry];
    *names = e->sources;
    return e->nsources;
}

const char *attn_family_kernel(int family, int entry)
{
    return attn_family_desc_of(family)->entry[entry].kernel;
}

size_t attn_params_work_group(const attn_params *pr)
{
    const attn_family_desc *f = attn_family_desc_of(pr->family);
    if (f->work_group) return f->work_group(pr);
    return f->wg_offset == (size_t)-1 ? 1 : (size_t)attn_desc_get(pr, f->wg_offset);
}

int attn_params_padded_dim(const attn_params *pr, int head_dim)
{
    return (head_dim + pr->vec_width - 1) / pr->vec_width * pr->vec_width;
}

void attn_params_options(const attn_params *pr, const attn_problem *p, int entry, char *buf,
                         size_t size)
{
    const attn_family_desc *f = attn_family_desc_of(pr->family);
    size_t n = (size_t)snprintf(buf, size, "-cl-std=CL1.2 -DHEAD_DIM=%d -DSTORAGE=%d",
                                p->head_dim, (int)p->dtype);
    for (int i = 0; i < f->ntunables && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, " -D%s=%d", f->tunables[i].macro,
                              attn_desc_get(pr, f->tunables[i].offset));
    if (n < size && f->derived_options) f->derived_options(pr, p, entry, buf + n, size - n);
    attn_variant_options(p, buf, size);
}
