/* tuning_lookup.c -- how the library uses the tuning database: the
 * kernel-source hash, the lookup tiers
 * (exact device, driver and sources -> same device otherwise, "stale", with
 * a warning -> the heuristic), and the per-context state plan() consults.
 * Shape classes and device identity: shape_class.c, device_identity.c. */
#define _POSIX_C_SOURCE 200809L
#include "core/context.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/hash.h"
#include "core/program.h"
#include "attention/plan.h"
#include "kernels/kernel_desc.h" /* attn_family_desc_of */
#include "tuning/tuning.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- kernel sources ---- */

attn_status attn_kernel_source_hash(attn_context *ctx, int family, char out[17])
{
    return attn_entry_source_hash(ctx, ATTN_ENTRY_PREFILL, family, out);
}

/* ---- lookup ---- */

int attn_tuning_entry_params(const attn_tuning_entry *e, attn_params *out, char *why,
                             size_t size)
{
    /* a family's own fields come from its text; the rest must be legal */
    attn_params pr = {.family = ATTN_FAMILY_TILED, .block_rows = 1, .block_keys = 16,
                      .wg_size = 1, .vec_width = 16};
    /* strict: an entry names its family, so another family's tunable there
     * is a newer attn's (one that gave the family that tunable) */
    char left_out[128];
    int st = attn_params_parse_noting(e->params, &pr, left_out, sizeof left_out, why, size);
    if (st == 0 && left_out[0]) {
        snprintf(why, size, "%s: not a tunable of the family %s here", left_out,
                 attn_family_desc_of(pr.family)->name);
        st = ATTN_PARAMS_UNKNOWN;
    }
    if (st == 0 && e->foreign_why[0]) { /* the params read, but not the class */
        snprintf(why, size, "%s", e->foreign_why);
        return ATTN_PARAMS_UNKNOWN;
    }
    if (st == 0 && out) *out = pr;
    return st;
}

static int entry_family(const attn_tuning_entry *e)
{
    attn_params pr;
    char err[256];
    return attn_tuning_entry_params(e, &pr, err, sizeof err) != 0 ? -1 : pr.family;
}

static attn_tuning_tier entry_tier(const attn_tuning_entry *e, const attn_device_identity *id,
                                   const char *const hashes[ATTN_FAMILY_COUNT])
{
    if (!attn_device_same(&e->device, id)) return ATTN_TIER_NONE;
    int f = entry_family(e);
    if (f < 0 || f >= ATTN_FAMILY_COUNT) return ATTN_TIER_NONE;
    int current = !hashes || !hashes[f] || strcmp(hashes[f], e->kernel_hash) == 0;
    return attn_device_exact(&e->device, id) && current ? ATTN_TIER_EXACT : ATTN_TIER_STALE;
}

attn_tuning_tier attn_tuning_db_lookup(const attn_tuning_db *db, const attn_device_identity *id,
                                       const char *const hashes[ATTN_FAMILY_COUNT], const attn_shape_class *c,
                                       const attn_tuning_entry **out)
{
    return attn_tuning_db_lookup_usable(db, id, hashes, c, NULL, NULL, out);
}

attn_tuning_tier attn_tuning_db_lookup_usable(const attn_tuning_db *db,
                                              const attn_device_identity *id,
                                              const char *const hashes[ATTN_FAMILY_COUNT],
                                              const attn_shape_class *c,
                                              int (*usable)(const attn_tuning_entry *, void *),
                                              void *arg, const attn_tuning_entry **out)
{
    attn_tuning_tier best_tier = ATTN_TIER_NONE;
    int best_dist = 0;
    *out = NULL;
    for (size_t i = 0; i < db->count; i++) {
        const attn_tuning_entry *e = &db->entries[i];
        int d = attn_shape_class_distance(&e->cls, c);
        if (d < 0) continue;
        attn_tuning_tier t = entry_tier(e, id, hashes);
        if (t == ATTN_TIER_NONE || t < best_tier || (usable && !usable(e, arg))) continue;
        /* a tie of distance: the class that sorts last (the longer
         * lengths), not whichever the file lists first */
        const int nearer = t == best_tier && (d < best_dist || (d == best_dist &&
                                              attn_shape_class_compare(&e->cls, &(*out)->cls) > 0));
        if (t > best_tier || nearer) {
            best_tier = t;
            best_dist = d;
            *out = e;
        }
    }
    return best_tier;
}

const attn_tuning_entry *attn_tuning_db_find_current(const attn_tuning_db *db,
                                                     const attn_device_identity *id,
                                                     const char *const hashes[ATTN_FAMILY_COUNT],
                                                     const attn_shape_class *c, int level)
{
    for (size_t i = 0; i < db->count; i++) {
        const attn_tuning_entry *e = &db->entries[i];
        if (attn_shape_class_equal(&e->cls, c) && e->level >= level &&
            entry_tier(e, id, hashes) == ATTN_TIER_EXACT)
            return e;
    }
    return NULL;
}

/* ---- the per-context state ---- */

#define MAX_WARNED 32
/* the warnings given once per class: parameters tuned elsewhere (another
 * driver, older sources), and parameters that cannot run the problem */
enum { WARN_STALE, WARN_ILLEGAL, WARN_KINDS };

struct attn_tuning_state {
    int loaded;
    attn_tuning_db user, sys; /* only this device's entries (any driver) */
    char hash[ATTN_ENTRY_COUNT][ATTN_FAMILY_COUNT][17]; /* per entry point and family */
    int forced;
    attn_params force;
    attn_shape_class warned[WARN_KINDS][MAX_WARNED]; /* classes warned about, per kind */
    int nwarned[WARN_KINDS];
    attn_device_identity id;
};

/* 1 the first time class c is warned about on this context for `kind`:
 * one warning of each kind per class, however often the plan cache
 * forgets it. */
static int first_for_class(struct attn_tuning_state *s, int kind, const attn_shape_class *c)
{
    for (int i = 0; i < s->nwarned[kind] && i < MAX_WARNED; i++)
        if (attn_shape_class_equal(&s->warned[kind][i], c)) return 0;
    s->warned[kind][s->nwarned[kind]++ % MAX_WARNED] = *c;
    return 1;
}

static struct attn_tuning_state *state(attn_context *ctx)
{
    if (!ctx->tuning) ctx->tuning = calloc(1, sizeof *ctx->tuning);
    return ctx->tuning;
}

/* One warning per process for each version of a bad file, however many
 * contexts read it. */
static int first_warning(const char *path)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char seen[8][4200];
    static int nseen;
    char sig[4200];
    struct stat sb;
    if (stat(path, &sb) == 0)
        snprintf(sig, sizeof sig, "%s|%lld|%lld|%ld", path, (long long)sb.st_size,
                 (long long)sb.st_mtim.tv_sec, (long)sb.st_mtim.tv_nsec);
    else
        snprintf(sig, sizeof sig, "%s", path);
    pthread_mutex_lock(&lock);
    int first = 1;
    for (int i = 0; i < nseen && i < 8 && first; i++)
        if (strcmp(seen[i], sig) == 0) first = 0;
    if (first) snprintf(seen[nseen++ % 8], sizeof seen[0], "%s", sig);
    pthread_mutex_unlock(&lock);
    return first;
}

/* Loads one file, keeping only entries for this device. */
static void load_one(const char *path, const attn_device_identity *id, attn_tuning_db *keep)
{
    attn_tuning_db all;
    attn_tuning_db_init(&all);
    char err[1024];
    int missing;
    attn_status st = attn_tuning_db_load(path, &all, &missing, err, sizeof err);
    if (st != ATTN_SUCCESS) {
        if (first_warning(path))
            attn_log(ATTN_LOG_WARN, "tuning database unusable, using built-in parameters: %s "
                     "(attn-tune reports the same; fix or remove the file)", err);
        return;
    }
    for (size_t i = 0; i < all.count; i++)
        if (attn_device_same(&all.entries[i].device, id) && /* no twins: load deduped */
            attn_tuning_db_append(keep, &all.entries[i]) != 0)
            break;
    attn_log(ATTN_LOG_DEBUG, "tuning database %s: %s%zu entries, %zu for this device", path,
             missing ? "missing, " : "", all.count, keep->count);
    attn_tuning_db_free(&all);
}

attn_status attn_entry_source_hash(attn_context *ctx, int entry, int f, char out[17])
{
    const char *const *names;
    const int n = attn_family_sources(f, entry, &names);
    uint64_t h = ATTN_HASH_INIT;
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        char *text = attn_kernel_source(ctx, names[i]);
        if (!text) return ATTN_ERROR_IO;
        h = attn_hash_str(h, text);
        free(text);
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
    return ATTN_SUCCESS;
}

static void load(attn_context *ctx, struct attn_tuning_state *s)
{
    attn_device_identity_of(ctx, &s->id);
    s->loaded = 1;
    if (ctx->tuning_user_path) load_one(ctx->tuning_user_path, &s->id, &s->user);
    if (ctx->tuning_system_path) load_one(ctx->tuning_system_path, &s->id, &s->sys);
    if (s->user.count + s->sys.count == 0) return;
    char saved[ATTN_ERROR_MAX];
    memcpy(saved, ctx->error, sizeof saved);
    for (int e = 0; e < ATTN_ENTRY_COUNT; e++)
        for (int f = 0; f < ATTN_FAMILY_COUNT; f++)
            attn_entry_source_hash(ctx, e, f, s->hash[e][f]); /* "" on failure: stale */
    memcpy(ctx->error, saved, sizeof saved); /* the build reports that failure itself */
}

int attn_tuning_forced(attn_context *ctx, attn_params *pr)
{
    if (!ctx->tuning || !ctx->tuning->forced) return 0;
    *pr = ctx->tuning->force;
    return 1;
}

/* What the entry's parameters make of pr for this problem, if they can run it. */
struct apply_to {
    int entry;
    const attn_device_limits *dev;
    const attn_problem *p;
    attn_params base;
};

static int applies(const attn_tuning_entry *e, const struct apply_to *a, attn_params *tuned,
                   char *err, size_t size)
{
    *tuned = a->base;
    return attn_plan_parse_over(a->entry, a->dev, a->p, e->params, tuned, err, size) == 0 &&
           attn_params_legal(tuned, a->dev, a->p, err, size);
}

static int usable(const attn_tuning_entry *e, void *arg)
{
    attn_params tuned;
    char err[256];
    return applies(e, arg, &tuned, err, sizeof err);
}

/* The better tier of the two files, then the nearer class; the user's file
 * wins a tie of both (a distant class of the user's must not hide the
 * system file's own). */
static attn_tuning_tier choose(const struct attn_tuning_state *s, const char *const *hashes,
                               const attn_shape_class *c, struct apply_to *only,
                               const attn_tuning_entry **e, int *user_first)
{
    int (*filter)(const attn_tuning_entry *, void *) = only ? usable : NULL;
    const attn_tuning_entry *eu, *es;
    const attn_tuning_tier tu =
        attn_tuning_db_lookup_usable(&s->user, &s->id, hashes, c, filter, only, &eu);
    const attn_tuning_tier ts =
        attn_tuning_db_lookup_usable(&s->sys, &s->id, hashes, c, filter, only, &es);
    *user_first = tu > ts;
    if (tu == ts && tu != ATTN_TIER_NONE)
        *user_first = attn_shape_class_distance(&eu->cls, c) <=
                      attn_shape_class_distance(&es->cls, c);
    *e = *user_first ? eu : es;
    return *user_first ? tu : ts;
}

void attn_tuning_apply(attn_context *ctx, const attn_device_limits *dev, const attn_problem *p,
                       const attn_shape_class *c, attn_params *pr, const char **source)
{
    struct attn_tuning_state *s = state(ctx);
    if (!s) return; /* out of memory: the heuristic */
    if (!s->loaded) load(ctx, s);
    if (s->user.count + s->sys.count == 0) return;

    const attn_device_identity *id = &s->id;
    const int entry = c->decode ? ATTN_ENTRY_DECODE : ATTN_ENTRY_PREFILL;
    const char *hashes[ATTN_FAMILY_COUNT];
    for (int f = 0; f < ATTN_FAMILY_COUNT; f++) hashes[f] = s->hash[entry][f];
    const attn_tuning_entry *e;
    int user_first;
    attn_tuning_tier tier = choose(s, hashes, c, NULL, &e, &user_first);
    if (tier == ATTN_TIER_NONE) return;
    /* the warnings name the file, so that the entry can be found and fixed */
    const char *file = user_first ? ctx->tuning_user_path : ctx->tuning_system_path;

    char cls[96], err[256];
    attn_shape_class_format(c, cls, sizeof cls);
    struct apply_to to = {entry, dev, p, *pr};
    attn_params tuned;
    if (!applies(e, &to, &tuned, err, sizeof err)) {
        /* the nearest entry that can run it, else the built-in ones; a
         * tuned class that silently plans otherwise would go unseen */
        const attn_tuning_entry *bad = e;
        const char *bad_file = file;
        tier = choose(s, hashes, c, &to, &e, &user_first);
        file = user_first ? ctx->tuning_user_path : ctx->tuning_system_path;
        if (first_for_class(s, WARN_ILLEGAL, c)) {
            char other[600] = "the built-in ones";
            if (tier != ATTN_TIER_NONE)
                snprintf(other, sizeof other, "the nearest that do, %.200s (in %.300s)",
                         e->params, file);
            attn_log(ATTN_LOG_WARN, "%s: tuned parameters %s (in %s) do not apply here (%s); "
                     "using %s", cls, bad->params, bad_file, err, other);
        }
        if (tier == ATTN_TIER_NONE || !applies(e, &to, &tuned, err, sizeof err)) return;
    }
    /* a split count fills the device for the batch x KV heads it was timed
     * at (the class has neither): another count of work-groups splits
     * automatically */
    if (c->decode && tuned.kv_splits > 0 && e->batch > 0 && e->kv_heads > 0 &&
        (long long)e->batch * e->kv_heads != (long long)p->batch * p->kv_heads) {
        attn_log(ATTN_LOG_DEBUG, "%s: tuned splits=%d were timed at batch %d x %d KV heads; "
                 "splitting automatically for %d x %d", cls, tuned.kv_splits, e->batch,
                 e->kv_heads, p->batch, p->kv_heads);
        tuned.kv_splits = 0;
    }
    *pr = tuned;
    *source = tier == ATTN_TIER_EXACT ? "tuned" : "stale";
    if (tier == ATTN_TIER_EXACT) {
        attn_log(ATTN_LOG_DEBUG, "%s: tuned parameters %s", cls, e->params);
        return;
    }
    if (!first_for_class(s, WARN_STALE, c)) return;
    const char *why = strcmp(e->device.driver, id->driver) != 0 ? "another driver" : "older kernel sources";
    attn_log(ATTN_LOG_WARN, "%s: using parameters tuned under %s (in %s: driver \"%s\", "
             "kernel sources %s; now \"%s\", %s); run attn-tune again for this device", cls,
             why, file, e->device.driver, e->kernel_hash, id->driver, hashes[entry_family(e)]);
}

void attn_tuning_reload(attn_context *ctx)
{
    attn_plan_clear(ctx);
    struct attn_tuning_state *s = ctx->tuning;
    if (!s) return;
    attn_tuning_db_free(&s->user);
    attn_tuning_db_free(&s->sys);
    s->loaded = 0;
    memset(s->nwarned, 0, sizeof s->nwarned);
}

attn_status attn_tuning_force(attn_context *ctx, const attn_params *pr)
{
    attn_call_begin(ctx, __func__);
    struct attn_tuning_state *s = state(ctx);
    if (s) {
        s->forced = pr != NULL;
        if (pr) s->force = *pr;
    }
    const attn_status st =
        s ? ATTN_SUCCESS : ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    attn_call_end(ctx);
    return st;
}

void attn_tuning_release(attn_context *ctx)
{
    if (!ctx || !ctx->tuning) return;
    attn_tuning_db_free(&ctx->tuning->user);
    attn_tuning_db_free(&ctx->tuning->sys);
    free(ctx->tuning);
    ctx->tuning = NULL;
}
