/* tune_search.c -- the tuner's search for one shape class within a budget:
 * every candidate when the space is small, else seeds (the default, each
 * family's start, a neighbouring class's winner) followed by local search
 * around the best, and random picks where it stalls; then the best few
 * and the default re-timed interleaved, near-ties going to the simpler. */
#define _POSIX_C_SOURCE 200809L
#include "core/context.h"
#include "core/errors.h"
#include "core/log.h"
#include "attention/plan.h"
#include "tuning/tuning.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SMALL_SPACE 32   /* measured whole when max_candidates is not given */
#define NEAR_TIE 0.02    /* within 2% of the fastest: the simpler config wins */
#define TOP_K 3          /* re-timed at the end, with the default */
#define SLOW_FACTOR 3.0  /* a candidate this much slower than the best is abandoned */
#define VERIFY_SLOW 8.0  /* ... or this much slower on the small verification shape */
#define FAMILY_PRUNE 4.0 /* a family whose best is this much slower gets no random picks */
#define RANDOM_PICKS 3   /* a quick tune's, once local search stalls */

typedef struct cand {
    attn_params pr;
    int state; /* 0 unvisited, 1 queued, 2 measured */
    attn_candidate_result r;
} cand;

typedef struct search {
    attn_tune_bench *b;
    const attn_search_opts *o;
    cand *c;
    int n, cap;
    int *queue, qlen, qcap;
    int best;           /* index of the fastest valid candidate, -1 */
    double best_verify; /* its verification time */
    double fam_best[ATTN_FAMILY_COUNT]; /* each family's fastest median, 0 = none */
    int fam_count[ATTN_FAMILY_COUNT];
    uint64_t rng;
    double t0, per_cand; /* start, average seconds per measured candidate */
    int measured;
} search;

/* Indexes push() takes besides a candidate's: find's "not there" (queues
 * nothing) and find_or_add's "out of host memory". */
#define NOT_FOUND (-1)
#define NO_MEMORY (-2)

static int find(const search *s, const attn_params *pr)
{
    for (int i = 0; i < s->n; i++)
        if (attn_params_equal(&s->c[i].pr, pr)) return i;
    return NOT_FOUND;
}

/* pr's index, added past the searched values when it lies outside them
 * (the default, a family's start, or a neighbour of one of them). */
static int find_or_add(search *s, const attn_params *pr)
{
    int i = find(s, pr);
    if (i >= 0) return i;
    if (s->n == s->cap) {
        int cap = 2 * s->cap + 8;
        cand *c = realloc(s->c, (size_t)cap * sizeof *c);
        if (!c) return NO_MEMORY;
        memset(c + s->cap, 0, (size_t)(cap - s->cap) * sizeof *c);
        s->c = c;
        s->cap = cap;
    }
    s->c[s->n].pr = *pr;
    return s->n++;
}

/* Queues candidate i; -1 when out of host memory. */
static int push(search *s, int i)
{
    if (i == NO_MEMORY) return -1;
    if (i < 0 || s->c[i].state != 0) return 0;
    if (s->qlen == s->qcap) {
        int cap = s->qcap ? 2 * s->qcap : 64;
        int *q = realloc(s->queue, (size_t)cap * sizeof *q);
        if (!q) return -1;
        s->queue = q;
        s->qcap = cap;
    }
    s->queue[s->qlen++] = i;
    s->c[i].state = 1;
    return 0;
}

/* The final re-timing: rounds of every finalist adding up to about this. */
static double retime_target_ms(const attn_search_opts *o)
{
    return o->level >= ATTN_TUNE_LEVEL_FULL ? 3000 : 1000;
}

static int min_rounds(const attn_search_opts *o)
{
    return o->level >= ATTN_TUNE_LEVEL_FULL ? 5 : 3;
}

/* Whether there is time and count left for one more candidate, keeping
 * enough for the final re-timing. */
static int may_continue(const search *s)
{
    const attn_search_opts *o = s->o;
    if (o->max_candidates > 0 && s->measured >= o->max_candidates) return 0;
    if (o->budget_s <= 0) return 1;
    double elapsed = attn_now_s() - s->t0;
    double best_s = s->best >= 0 ? s->c[s->best].r.median_ms * 1e-3 : 0;
    /* the re-timing: its target, or its fewest rounds (and the warm-up)
     * of the finalists, which are about as slow as the best */
    double retime = (TOP_K + 1) * (min_rounds(o) + 1) * best_s;
    double reserve = retime > retime_target_ms(o) * 1e-3 ? retime : retime_target_ms(o) * 1e-3;
    return s->measured == 0 || elapsed + s->per_cand + reserve <= o->budget_s;
}

static void report(search *s, const attn_params *cand, const attn_candidate_result *r, int planned)
{
    const attn_search_opts *o = s->o;
    if (!o->progress) return;
    o->progress(o->progress_arg, s->measured, planned, attn_now_s() - s->t0, o->budget_s, cand, r,
                s->best >= 0 ? &s->c[s->best].pr : NULL,
                s->best >= 0 ? s->c[s->best].r.gflops : 0);
}

static attn_status measure(search *s, int i, int planned)
{
    cand *c = &s->c[i];
    attn_measure_opts mo;
    memset(&mo, 0, sizeof mo);
    int full = s->o->level >= ATTN_TUNE_LEVEL_FULL;
    mo.target_ms = full ? 600 : 200;
    mo.min_reps = 3;
    mo.max_reps = full ? 50 : 20;
    if (s->best >= 0) {
        mo.slow_factor = SLOW_FACTOR;
        mo.best_ms = s->c[s->best].r.median_ms;
        mo.verify_factor = VERIFY_SLOW;
        mo.best_verify_ms = s->best_verify;
    }
    double t = attn_now_s();
    attn_status st = attn_tune_measure(s->b, &c->pr, &mo, &c->r);
    if (st != ATTN_SUCCESS) return st;
    c->state = 2;
    s->measured++;
    s->per_cand += (attn_now_s() - t - s->per_cand) / s->measured; /* running mean */
    int f = c->pr.family;
    /* abandoned on the verification shape: as much slower as it was there */
    double est = c->r.median_ms;
    if (c->r.status == ATTN_CAND_SLOW && est <= 0 && s->best >= 0 && s->best_verify > 0)
        est = c->r.verify_ms / s->best_verify * s->c[s->best].r.median_ms;
    if ((c->r.status == ATTN_CAND_OK || c->r.status == ATTN_CAND_SLOW) && est > 0) {
        s->fam_count[f]++;
        if (s->fam_best[f] == 0 || est < s->fam_best[f]) s->fam_best[f] = est;
    }
    if (c->r.status == ATTN_CAND_OK &&
        (s->best < 0 || c->r.median_ms < s->c[s->best].r.median_ms)) {
        s->best = i;
        s->best_verify = c->r.verify_ms;
    }
    report(s, &c->pr, &c->r, planned);
    return ATTN_SUCCESS;
}

/* A family is left alone once its first candidates ran (one in a quick
 * tune, three in a full one) and its best is far behind: on PoCL the
 * GPU-style family is ~30x slower than the vector one; it stays in the
 * space without eating the budget. */
static int family_pruned(const search *s, int f)
{
    int probes = s->o->level >= ATTN_TUNE_LEVEL_FULL ? 3 : 1;
    if (s->best < 0 || s->fam_count[f] < probes) return 0;
    return s->fam_best[f] > FAMILY_PRUNE * s->c[s->best].r.median_ms;
}

static int random_unvisited(search *s)
{
    int left = 0;
    for (int i = 0; i < s->n; i++)
        if (s->c[i].state == 0 && !family_pruned(s, s->c[i].pr.family)) left++;
    if (!left) return -1;
    int k = (int)(attn_splitmix64(&s->rng) % (uint64_t)left);
    for (int i = 0; i < s->n; i++)
        if (s->c[i].state == 0 && !family_pruned(s, s->c[i].pr.family) && k-- == 0) return i;
    return -1;
}

/* Whether the search covers family f: --family's mask, else every family
 * the best can be in (a named-only one only as the default, then searched).
 * The default is measured whatever its family; its steps are not added
 * outside the mask, which would turn --family tiled into a vector search. */
static int searched_family(const search *s, int f)
{
    return !s->o->families || (s->o->families & (1u << f));
}

/* Whether the searched values hold candidates of family f. */
static int family_listed(const search *s, int f)
{
    for (int i = 0; i < s->n; i++)
        if (s->c[i].pr.family == f) return 1;
    return 0;
}

/* The search's order, before local search: default first, then each
 * family's start and a similar class's winner. Random picks come only once
 * local search stalls (attn_tune_search): drawn up front, they took a quick
 * tune's few seconds a class from the steps around the default, the best
 * candidates there, or landed in families the starts then showed slow. */
static attn_status seed_queue(search *s, int dflt, int exhaustive, const attn_device_limits *dev,
                              const attn_problem *p)
{
    if (push(s, dflt) < 0) return ATTN_ERROR_OUT_OF_MEMORY;
    if (exhaustive) {
        int i;
        while ((i = random_unvisited(s)) >= 0)
            if (push(s, i) < 0) return ATTN_ERROR_OUT_OF_MEMORY;
        return ATTN_SUCCESS;
    }
    /* each searched family's own start, as a plan forced to that family
     * begins (plan.c), fitted to a paged cache's block as the default is;
     * one outside the searched values (a heuristic's choice the lists
     * lack) joins them, as the default does, where it is legal here */
    attn_shape_class cls;
    attn_tune_bench_class(s->b, &cls);
    for (int f = 0; f < ATTN_FAMILY_COUNT; f++) {
        if (s->o->families && !(s->o->families & (1u << f))) continue;
        attn_params rep = attn_plan_family_start(attn_tune_bench_entry(s->b), dev, p, f);
        attn_plan_fit_page(&rep, cls.kv_block);
        char err[256];
        int i = find(s, &rep);
        if (i < 0 && family_listed(s, f) && attn_params_legal(&rep, dev, p, err, sizeof err))
            i = find_or_add(s, &rep);
        if (push(s, i) < 0) return ATTN_ERROR_OUT_OF_MEMORY;
    }
    if (s->o->hint && push(s, find(s, s->o->hint)) < 0) return ATTN_ERROR_OUT_OF_MEMORY;
    return ATTN_SUCCESS;
}

typedef struct ranked {
    double ms;
    int i;
} ranked;

static int cmp_ranked(const void *a, const void *b)
{
    double x = ((const ranked *)a)->ms, y = ((const ranked *)b)->ms;
    return (x > y) - (x < y);
}

attn_status attn_tune_search(attn_tune_bench *b, const attn_search_opts *o, attn_search_result *out)
{
    memset(out, 0, sizeof *out);
    attn_context *ctx = NULL;
    const attn_problem *p = attn_tune_bench_problem(b);
    search s;
    memset(&s, 0, sizeof s);
    s.b = b;
    s.o = o;
    s.best = -1;
    s.rng = o->seed ? o->seed : 0x5eed;
    s.t0 = attn_now_s();
    attn_status st = ATTN_SUCCESS;

    ctx = attn_tune_bench_context(b);
    attn_device_limits dev;
    attn_tune_bench_limits(b, &dev);
    const int entry = attn_tune_bench_entry(b);
    attn_params dflt = attn_tune_bench_default(b);
    attn_shape_class cls;
    attn_tune_bench_class(b, &cls);
    attn_params *list = NULL;
    const attn_shape_class *cache = entry == ATTN_ENTRY_DECODE ? &cls : NULL;
    int n = attn_search_enumerate(&dev, entry, p, cache, &dflt, o->families, &list);
    if (n < 0) return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY,
                                "attn_tune_search: out of host memory");
    /* a search limited to families that cannot run the class would time
     * the built-in default alone and store it as tuned, and the class
     * would then be skipped as done by every later run */
    if (n == 0 && o->families) {
        free(list);
        return ATTN_FAIL(ctx, ATTN_ERROR_UNSUPPORTED, "attn_tune_search: no candidate of the "
                         "families searched can run this class here; nothing was stored");
    }
    /* room for the default and the families' starts where they lie off the
     * searched values (seed_queue); find_or_add grows it for neighbours */
    s.cap = n + 1 + ATTN_FAMILY_COUNT;
    s.c = calloc((size_t)s.cap, sizeof *s.c);
    if (!s.c) {
        free(list);
        return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "attn_tune_search: out of host memory");
    }
    for (int i = 0; i < n; i++) s.c[i].pr = list[i];
    free(list);
    s.n = n;
    const int di = find_or_add(&s, &dflt); /* the heuristic, searched or not */
    out->space = s.n;
    out->dflt = dflt;
    int limit = o->max_candidates > 0 ? o->max_candidates : SMALL_SPACE;
    out->exhaustive = s.n <= limit;
    int planned = o->max_candidates > 0 && o->max_candidates < s.n ? o->max_candidates : s.n;
    if (!out->exhaustive && o->level < ATTN_TUNE_LEVEL_FULL && planned > 24) planned = 24;
    out->planned = planned;
    if ((st = seed_queue(&s, di, out->exhaustive, &dev, p)) != ATTN_SUCCESS) {
        st = ATTN_FAIL(ctx, st, "attn_tune_search: out of host memory");
        goto done;
    }
    report(&s, NULL, NULL, planned);

    int head = 0, randoms = 0, settled = 0;
    for (;;) {
        if (!may_continue(&s)) { /* the budget, or the candidates asked for */
            /* cut short: the budget stopped it with candidates left (queued
             * ones unmeasured, or an inexhaustive space's local search not
             * settled around its best, or a quick tune's few random picks
             * not all made). A full tune's random picks past a local optimum
             * go on for as long as the budget lasts: their end is no cut (a
             * full tune was cut short every time, and every next run tuned
             * the class again). */
            int left = 0, all = 1;
            for (int q = head; q < s.qlen; q++) left += s.c[s.queue[q]].state != 2;
            for (int c = 0; c < s.n; c++) all &= s.c[c].state == 2;
            out->cut_short = !(o->max_candidates > 0 && s.measured >= o->max_candidates) &&
                             !all && (left > 0 || (!out->exhaustive &&
                                                   !(settled && o->level >= ATTN_TUNE_LEVEL_FULL)));
            break;
        }
        if (head == s.qlen) {
            /* local search: the unmeasured neighbours of the best so far,
             * also those off the searched values in a searched family (a
             * best off them, such as a default or start the heuristic
             * shrank, keeps its off-list value as it steps in the others) */
            attn_params nb[16];
            int nn = s.best >= 0
                         ? attn_search_neighbours(&dev, entry, p, cache, &s.c[s.best].pr, nb, 16) : 0;
            for (int k = 0; k < nn; k++)
                if (push(&s, searched_family(&s, nb[k].family) ? find_or_add(&s, &nb[k])
                                                               : find(&s, &nb[k])) < 0) {
                    st = ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY,
                                   "attn_tune_search: out of host memory");
                    goto done;
                }
            /* a local optimum: random picks (RANDOM_PICKS in a quick tune,
             * any number in a full one), each from a family not found slow,
             * and local search again around a new best */
            if (head == s.qlen) settled = 1; /* the best's neighbours all measured (or no best) */
            if (head == s.qlen && (o->level >= ATTN_TUNE_LEVEL_FULL || randoms < RANDOM_PICKS)) {
                randoms++;
                const int r = random_unvisited(&s);
                if (r >= 0 && push(&s, r) < 0) {
                    st = ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY,
                                   "attn_tune_search: out of host memory");
                    goto done;
                }
            }
            if (head == s.qlen) break;
        }
        int i = s.queue[head++];
        if (s.c[i].state == 2) continue;
        if (i != di && family_pruned(&s, s.c[i].pr.family) && !out->exhaustive) continue;
        const int best_before = s.best;
        if ((st = measure(&s, i, planned)) != ATTN_SUCCESS) goto done;
        if (s.best != best_before) settled = 0; /* a new best: its neighbours unsearched */
    }

    /* the best few and the default, re-timed interleaved */
    int order[TOP_K + 1], k = 0;
    {
        ranked *idx = malloc((size_t)s.n * sizeof *idx);
        int m = 0;
        if (!idx) {
            st = ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "attn_tune_search: out of host memory");
            goto done;
        }
        for (int i = 0; i < s.n; i++)
            if (s.c[i].state == 2 && s.c[i].r.status == ATTN_CAND_OK) {
                idx[m].ms = s.c[i].r.median_ms;
                idx[m++].i = i;
            }
        qsort(idx, (size_t)m, sizeof *idx, cmp_ranked);
        for (int i = 0; i < m && k < TOP_K; i++) order[k++] = idx[i].i;
        free(idx);
    }
    for (int i = 0; i < s.n; i++) {
        out->tested += s.c[i].state == 2;
        out->rejected += s.c[i].state == 2 && s.c[i].r.status != ATTN_CAND_OK &&
                         s.c[i].r.status != ATTN_CAND_SLOW;
        out->slow += s.c[i].state == 2 && s.c[i].r.status == ATTN_CAND_SLOW;
    }
    if (k == 0) {
        st = ATTN_FAIL(ctx, ATTN_ERROR_UNSUPPORTED,
                       "attn_tune_search: no candidate was valid (%d measured, "
                       "%d rejected)", out->tested, out->rejected);
        goto done;
    }
    int have_default = s.c[di].state == 2 && s.c[di].r.status == ATTN_CAND_OK;
    int in_top = 0;
    for (int i = 0; i < k; i++) in_top |= order[i] == di;
    if (have_default && !in_top) order[k++] = di;
    attn_params cands[TOP_K + 1];
    double ms[TOP_K + 1];
    attn_time_spread spread[TOP_K + 1];
    for (int i = 0; i < k; i++) cands[i] = s.c[order[i]].pr;
    /* enough rounds for the target time, at least 3 (5 in a full tune) */
    double round_ms = 0;
    for (int i = 0; i < k; i++) round_ms += s.c[order[i]].r.median_ms;
    int rounds = round_ms > 0 ? (int)(retime_target_ms(o) / round_ms) : min_rounds(o);
    if (rounds < min_rounds(o)) rounds = min_rounds(o);
    if (rounds > 101) rounds = 101;
    if (o->budget_s > 0 && round_ms > 0) { /* what the budget still holds, the warm-up round too */
        double left_ms = (o->budget_s - (attn_now_s() - s.t0)) * 1e3;
        int fit = (int)(left_ms / round_ms) - 1;
        if (rounds > fit) rounds = fit;
    }
    /* too few rounds left to rank them better than their own timings did
     * (one round has no spread at all): those stand */
    const int retime = k > 1 && rounds >= min_rounds(o);
    if (retime && (st = attn_tune_retime(b, cands, k, rounds, 1, 1, ms, spread)) != ATTN_SUCCESS)
        goto done;
    for (int i = 0; !retime && i < k; i++) {
        ms[i] = s.c[order[i]].r.median_ms;
        spread[i] = s.c[order[i]].r.spread;
    }
    double fastest = ms[0];
    for (int i = 1; i < k; i++)
        if (ms[i] < fastest) fastest = ms[i];
    int win = -1;
    for (int i = 0; i < k; i++) {
        int cx = attn_search_complexity(&cands[i], &dflt);
        if (attn_log_enabled(ATTN_LOG_DEBUG)) {
            char text[200];
            attn_search_format(entry, &cands[i], text, sizeof text);
            attn_log(ATTN_LOG_DEBUG, "%s %s: %.4f ms (first measured %.4f), complexity %d",
                     retime ? "re-timed" : "not re-timed (no budget left)", text, ms[i],
                     s.c[order[i]].r.median_ms, cx);
        }
        if (ms[i] <= fastest * (1 + NEAR_TIE) &&
            (win < 0 || cx < attn_search_complexity(&cands[win], &dflt)))
            win = i;
    }
    out->best = cands[win];
    out->best_r = s.c[order[win]].r;
    out->best_ms = ms[win];
    out->best_r.median_ms = ms[win];
    out->best_r.spread = spread[win];
    out->best_r.gflops = attn_problem_flops(p, NULL) / (ms[win] * 1e6);
    out->default_ms = 0;
    for (int i = 0; i < k; i++)
        if (order[i] == di && isfinite(ms[i])) { /* (dropped while re-timed: unknown, 0) */
            out->default_ms = ms[i];
            out->default_spread = spread[i];
        }
    report(&s, NULL, NULL, planned);
done:
    free(s.c);
    free(s.queue);
    return st;
}
