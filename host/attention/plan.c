/* plan.c -- the one planner of attn_forward and attn_decode: the device
 * heuristic, then the tuning database, then the context's override, each
 * result cached per shape class so that a call does no parsing and no
 * database search after the first of its class. */
#include "attention/decode.h"
#include "attention/mma_gate.h"
#include "attention/plan.h"
#include "kernels/kernel_desc.h"
#include "tuning/tuning.h"
#include "core/context.h"
#include "core/errors.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLAN_CACHE 64

typedef struct plan_entry {
    int entry;              /* ATTN_ENTRY_* */
    attn_shape_class cls;   /* cls.decode set for decode */
    int q_len;              /* decode: the heuristic's rows follow q_len exactly */
    long long groups;       /* decode: batch x kv_heads, which tuned splits are kept for */
    unsigned refusals;      /* refusals_of the problem planned */
    attn_params pr;
    const char *source;
} plan_entry;

struct attn_plan_cache {
    plan_entry e[PLAN_CACHE];
    int n;    /* entries filled */
    int next; /* the one to replace when full (the oldest) */
};

attn_device_limits attn_context_limits(const attn_context *ctx)
{
    attn_device_limits dev = {ctx->device_type, ctx->local_mem, ctx->max_wg, ctx->compute_units, 0,
                              ctx->float_width};
    return dev;
}

void attn_plan_clear(attn_context *ctx)
{
    if (ctx->plans) ctx->plans->n = ctx->plans->next = 0;
}

attn_params attn_plan_heuristic(int entry, const attn_device_limits *dev, const attn_problem *p)
{
    return entry == ATTN_ENTRY_DECODE ? attn_decode_params_heuristic(dev, p)
                                      : attn_params_heuristic(dev, p);
}

attn_params attn_plan_family_start(int entry, const attn_device_limits *dev,
                                   const attn_problem *p, int family)
{
    attn_device_limits as = *dev;
    as.type = family == ATTN_FAMILY_VECTOR ? CL_DEVICE_TYPE_CPU : CL_DEVICE_TYPE_GPU;
    as.mma = family == ATTN_FAMILY_MMA;
    /* the vector defaults' narrow-register choice was measured on CPUs: a
     * GPU's float width (1 on NVIDIA) says nothing about it */
    if (!(dev->type & CL_DEVICE_TYPE_CPU)) as.float_width = 0;
    attn_params pr = attn_plan_heuristic(entry, &as, p);
    if (pr.family != family) { /* flash; mma where it refuses p */
        pr = attn_params_defaults(family);
        attn_params_fit(entry, &pr, &as, p);
    }
    return pr;
}

int attn_plan_parse_over(int entry, const attn_device_limits *dev, const attn_problem *p,
                         const char *text, attn_params *pr, char *err, size_t size)
{
    return attn_plan_parse_over_noting(entry, dev, p, text, pr, NULL, 0, err, size);
}

int attn_plan_parse_over_noting(int entry, const attn_device_limits *dev, const attn_problem *p,
                                const char *text, attn_params *pr, char *left_out,
                                size_t left_size, char *err, size_t size)
{
    attn_params out = *pr;
    if (attn_params_parse_noting(text, &out, left_out, left_size, err, size) != 0) return -1;
    /* another family than pr's: the fields families share (rows, keys) mean
     * other things in each (a CPU's 5 vector rows do not divide tiled's 128
     * work-items), so text goes on that family's own start, not on pr's
     * values; splits too start afresh, as they were chosen for pr's kernels */
    if (out.family != pr->family) {
        out = attn_plan_family_start(entry, dev, p, out.family);
        /* parsed once already */
        if (attn_params_parse_noting(text, &out, left_out, left_size, err, size) != 0) return -1;
    }
    *pr = out;
    return 0;
}

int attn_plan_mma(attn_context *ctx, int entry, const attn_problem *p)
{
    /* asked only for a problem the family could take: the first such plan
     * on a context builds and verifies it (mma_gate.c). A decode's rows
     * per KV head: enough to fill a tensor-core tile (decode.h) */
    if (entry == ATTN_ENTRY_DECODE && p->q_heads / p->kv_heads * p->q_len < ATTN_MMA_DECODE_ROWS)
        return 0;
    return attn_params_mma_suits(p) && attn_mma_usable_for(ctx, p);
}


void attn_plan_fit_page(attn_params *pr, int page_rows)
{
    if (page_rows > 0 && pr->block_keys > page_rows) {
        attn_log(ATTN_LOG_DEBUG, "decode: keys=%d clamped to the cache's block size %d",
                 pr->block_keys, page_rows);
        pr->block_keys = page_rows;
    }
}

/* Why `family` cannot run p at entry point `entry` here, or NULL. */
static const char *family_refusal(attn_context *ctx, int family, int entry, const attn_problem *p)
{
    const char *refused = attn_family_kernel(family, entry)
                              ? attn_family_refuses(family, p)
                              : entry == ATTN_ENTRY_DECODE ? "has no decode kernel"
                                                           : "has no forward kernel";
    /* forced or tuned where its own kernels would be the tensor cores', mma
     * runs only once mma_gate.c verified it: a PTX build that fails, or
     * fragments that compute wrong, must not reach the caller */
    if (!refused && family == ATTN_FAMILY_MMA && (attn_mma_ptx(ctx) || ctx->mma_assume) &&
        !attn_mma_usable_for(ctx, p))
        refused = "is not verified on this device for this dtype and head dim "
                  "(the log's warning says why)";
    return refused;
}

/* What ctx's override names, parsed over nothing: family -1 and kv_splits
 * -1 where it names none (also for no override, or text the plan's own
 * parse will refuse). */
static attn_params override_named(const attn_context *ctx)
{
    attn_params probe = attn_params_defaults(-1), none = probe;
    probe.kv_splits = none.kv_splits = -1;
    char err[256];
    if (!ctx->override || attn_params_parse(ctx->override, &probe, err, sizeof err) != 0)
        return none;
    return probe;
}

/* The uncached plan. */
static attn_status plan_new(attn_context *ctx, int entry, const attn_problem *p,
                            const attn_shape_class *cls, attn_params *out, const char **source)
{
    attn_device_limits dev = attn_context_limits(ctx);
    /* mma's gate (a build and verification on the first suitable plan) is
     * not run for a plan an override gives to another family that runs p:
     * the plan cannot be mma, and where mma's kernels misbehave, forcing
     * another family keeps them off */
    const attn_params named = override_named(ctx);
    const int forced = named.family;
    const int moot = forced >= 0 && forced != ATTN_FAMILY_MMA &&
                     !family_refusal(ctx, forced, entry, p);
    dev.mma = moot ? 0 : attn_plan_mma(ctx, entry, p);
    attn_params pr = attn_plan_heuristic(entry, &dev, p);
    *source = "heuristic";
    attn_tuning_apply(ctx, &dev, p, cls, &pr, source);
    /* the device's own plan (tuned or built in), where an override's family
     * cannot run p */
    const attn_params own = pr;
    const char *own_source = *source;
    const char *text = ctx->override;
    char err[256], desc[200], from[600] = "", left_out[128] = "";
    if (text) {
        /* names where the override came from: ATTN_PARAMS="..." or
         * attn_context_set_params("...") */
        const int env = strcmp(ctx->override_from, "ATTN_PARAMS") == 0;
        snprintf(from, sizeof from, env ? "%s=\"%.500s\"" : "%s(\"%.500s\")", ctx->override_from,
                 text);
        if (attn_plan_parse_over_noting(entry, &dev, p, text, &pr, left_out, sizeof left_out, err,
                                        sizeof err) != 0)
            return ATTN_FAIL(ctx, ATTN_ERROR_INVALID_ARGUMENT, "%s: %s", from, err);
        attn_search_format(entry, &pr, desc, sizeof desc);
        attn_log(ATTN_LOG_INFO, "%s applied to %s: %s", ctx->override_from,
                 entry == ATTN_ENTRY_DECODE ? "decode" : "forward", desc);
        *source = "override";
    }
    const char *refused = family_refusal(ctx, pr.family, entry, p);
    /* one text may serve several families; what the family in effect lacks
     * is said once for each text, family and such names, not once a plan
     * (attn-bench sets the same override before every run) */
    if (left_out[0] && !refused) {
        char noted[sizeof ctx->override_noted];
        snprintf(noted, sizeof noted, "%.400s|%d|%.100s", text, pr.family, left_out);
        if (strcmp(noted, ctx->override_noted) != 0) {
            memcpy(ctx->override_noted, noted, sizeof noted);
            attn_log(ATTN_LOG_WARN, "%s: %s left out: not a tunable of the family %s, which "
                     "the %s plan uses here", from, left_out, attn_family_desc_of(pr.family)->name,
                     entry == ATTN_ENTRY_DECODE ? "decode" : "forward");
        }
    }
    if (refused) {
        /* a family forced or tuned for what it cannot run (flash's
         * decode, mma's f32 past its key limit): the device's own choice
         * (what was tuned for the class, when the override's family is the
         * refused one and the tuned one is not), so that one override can
         * serve a model's prefill and decode, any dtype */
        const char *fam = attn_family_desc_of(pr.family)->name;
        const int splits = pr.kv_splits; /* the override's, if it names them */
        if (text && own.family != pr.family && !family_refusal(ctx, own.family, entry, p)) {
            pr = own;
            *source = own_source;
            if (named.kv_splits >= 0) pr.kv_splits = splits;
        } else {
            pr = attn_plan_heuristic(entry, &dev, p);
            pr.kv_splits = splits;
            *source = "heuristic";
        }
        attn_search_format(entry, &pr, desc, sizeof desc);
        attn_log(ATTN_LOG_INFO, "the family %s %s: %s uses %s (%s)", fam, refused,
                 entry == ATTN_ENTRY_DECODE ? "decode" : "forward", desc, *source);
    }
    attn_plan_fit_page(&pr, cls->kv_block);
    if (!attn_params_legal(&pr, &dev, p, err, sizeof err)) {
        attn_search_format(entry, &pr, desc, sizeof desc);
        if (text)
            return ATTN_FAIL(ctx, ATTN_ERROR_INVALID_ARGUMENT, "%s gives %s, not usable here: %s",
                             from, desc, err);
        return ATTN_FAIL(ctx, ATTN_ERROR_UNSUPPORTED, "%s parameters %s are not usable here: %s",
                         *source, desc, err);
    }
    *out = pr;
    return ATTN_SUCCESS;
}

/* The families that refuse p, a bit each. A family may refuse by exact
 * length where the class has only a bucket (mma's f32 past
 * ATTN_MMA_F32_MAX_KEYS keys): a plan serves only problems refused alike. */
static unsigned refusals_of(const attn_problem *p)
{
    unsigned bits = 0;
    for (int f = 0; f < ATTN_FAMILY_COUNT; f++)
        if (attn_family_desc_of(f) && attn_family_refuses(f, p)) bits |= 1u << f;
    return bits;
}

/* attn_plan of class cls (a decode class names its cache's kind) */
static attn_status plan_of(attn_context *ctx, int entry, const attn_problem *p,
                           const attn_shape_class *cls, attn_params *out, const char **source)
{
    const attn_device_limits dev = attn_context_limits(ctx);
    char err[256];
    if (attn_tuning_forced(ctx, out)) { /* the tuner's candidate: never cached */
        *source = "override";
        attn_plan_fit_page(out, cls->kv_block);
        if (attn_params_legal(out, &dev, p, err, sizeof err)) return ATTN_SUCCESS;
        return ATTN_FAIL(ctx, ATTN_ERROR_INVALID_ARGUMENT, "the tuner's parameters are not "
                         "usable here: %s", err);
    }
    const int q_len = cls->decode ? p->q_len : 0;
    /* a tuned split count applies only at the batch x KV heads it was timed
     * at (attn_tuning_apply), which the class does not hold */
    const long long groups = cls->decode ? (long long)p->batch * p->kv_heads : 0;
    const unsigned refusals = refusals_of(p);
    if (!ctx->plans) ctx->plans = calloc(1, sizeof *ctx->plans);
    struct attn_plan_cache *c = ctx->plans;
    for (int i = 0; c && i < c->n; i++) {
        const plan_entry *e = &c->e[i];
        if (e->entry == entry && e->q_len == q_len && e->groups == groups &&
            e->refusals == refusals &&
            attn_shape_class_equal(&e->cls, cls)) {
            *out = e->pr;
            *source = e->source;
            return ATTN_SUCCESS;
        }
    }
    attn_status st = plan_new(ctx, entry, p, cls, out, source);
    if (st != ATTN_SUCCESS || !c) return st; /* failures are not cached: they say why each time */
    plan_entry *e = &c->e[c->next];
    c->next = (c->next + 1) % PLAN_CACHE;
    if (c->n < PLAN_CACHE) c->n++;
    e->entry = entry;
    e->cls = *cls;
    e->q_len = q_len;
    e->groups = groups;
    e->refusals = refusals;
    e->pr = *out;
    e->source = *source;
    return ATTN_SUCCESS;
}

attn_status attn_plan(attn_context *ctx, int entry, const attn_problem *p, attn_params *out,
                      const char **source)
{
    attn_shape_class cls;
    if (entry == ATTN_ENTRY_DECODE) attn_decode_class_of(p, 0, 0, &cls);
    else attn_shape_class_of(p, &cls);
    return plan_of(ctx, entry, p, &cls, out, source);
}

attn_status attn_plan_decode(attn_context *ctx, const attn_problem *p, int page_rows,
                             attn_kv_storage storage, attn_params *out, const char **source)
{
    attn_shape_class cls;
    attn_decode_class_of(p, page_rows, storage == ATTN_KV_INT8, &cls);
    return plan_of(ctx, ATTN_ENTRY_DECODE, p, &cls, out, source);
}
