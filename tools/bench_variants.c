/* bench_variants.c -- attn-bench --variants: three groups of configurations,
 * each timed interleaved in one run (bench_prefill.c), then summarised
 * against the group's base with the issue's targets beside the numbers:
 *   costs:  plain causal and each variant at one shape; GFLOP/s count
 *           visible pairs, so a variant's ratio is its cost per pair
 *           (window, sinks, ALiBi and mask <= 5%, softcap <= 15%);
 *   window: causal and a window of S/4 at S = 16384 (or --seq): the time
 *           ratio over the visible-pairs ratio (<= 1.15);
 *   packed: the same sequences padded and packed (packed >= padded). */
#define _POSIX_C_SOURCE 200809L
#include "bench_variants.h"
#include "bench_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LONG_SEQ 16384 /* the issue's long-window shape */
#define MAX_GROUP 12

/* One row of a group: its configuration and the target of its ratio to
 * the base row's (GFLOP/s for costs, speed for packed; 0 = the base). */
typedef struct group_row {
    prefill_config c;
    double target;
} group_row;

static prefill_config config(const prefill_shape *s, attn_dtype t, int causal)
{
    prefill_config c;
    memset(&c, 0, sizeof c);
    c.s = *s, c.dtype = t, c.causal = causal;
    return c;
}

/* Runs the group's rows interleaved; then the summary (text) and the
 * group's fields in each JSON row. ratio_of: 0 = GFLOP/s over the base's,
 * 1 = the base's time over the row's (speed). */
static int run_group(attn_context *ctx, const char *name, const group_row *g, int n, int ratio_of,
                     const prefill_how *how, prefill_row *rows, cJSON *results, cJSON *errors)
{
    prefill_config confs[MAX_GROUP];
    for (int i = 0; i < n; i++) confs[i] = g[i].c;
    if (how->format == BENCH_TEXT) {
        char sh[128];
        const prefill_shape eff = prefill_effective_shape(&g[0].c); /* a packed group's */
        prefill_shape_text(&eff, 1, sh, sizeof sh);
        printf("-- %s (at %s %s) --\n", name, sh, attn_dtype_name(g[0].c.dtype));
    }
    const int before = cJSON_GetArraySize(results);
    int failed = prefill_bench(ctx, confs, n, how, rows, results, errors);
    const int size = cJSON_GetArraySize(results);
    if (size - before != n) return 1; /* a step failed: no rows (said on stderr) */
    if (how->format == BENCH_TEXT)
        printf("   %-36s %9s %9s  %s\n", "variant", "GFLOP/s", ratio_of ? "speed" : "vs base",
               "target");
    for (int i = 0; i < n; i++) {
        const prefill_row *r = &rows[i];
        const double ratio = ratio_of ? (r->median_ms > 0 ? rows[0].median_ms / r->median_ms : 0)
                                      : (rows[0].gflops > 0 ? r->gflops / rows[0].gflops : 0);
        char text[192], target[48] = "-";
        bench_variant_text(&r->variant, text, sizeof text);
        if (!*text) snprintf(text, sizeof text, "plain");
        if (!r->causal) snprintf(text + strlen(text), sizeof text - strlen(text), " (no causal)");
        if (i == 0) snprintf(target, sizeof target, "(base)");
        else if (g[i].target > 0)
            snprintf(target, sizeof target, ">= %.2f: %s", g[i].target,
                     ratio >= g[i].target ? "met" : "MISSED");
        if (how->format == BENCH_TEXT)
            printf("   %-36s %9.2f %9.3f  %s\n", text, r->gflops, ratio, target);
        cJSON *j = cJSON_GetArrayItem(results, size - n + i);
        cJSON_AddStringToObject(j, "variants_group", name);
        cJSON_AddNumberToObject(j, ratio_of ? "speed_vs_base" : "gflops_vs_base", ratio);
        if (g[i].target > 0) cJSON_AddNumberToObject(j, "target", g[i].target);
        else cJSON_AddNullToObject(j, "target");
    }
    fflush(stdout);
    return failed;
}

/* costs: each variant against plain causal at s. */
static int group_costs(attn_context *ctx, const prefill_shape *s, attn_dtype t,
                       const prefill_how *how, cJSON *results, cJSON *errors)
{
    group_row g[MAX_GROUP];
    int n = 0;
    g[n++] = (group_row){config(s, t, 1), 0};
    g[n] = (group_row){config(s, t, 1), 0.95};
    g[n].c.variant.use_window = 1, g[n].c.variant.window_left = s->kv_len / 4;
    g[n++].c.variant.window_right = 0;
    g[n] = (group_row){config(s, t, 1), 0.85};
    g[n++].c.variant.softcap = 50;
    g[n] = (group_row){config(s, t, 1), 0.95};
    g[n++].c.variant.sinks = BENCH_SINKS_PER_HEAD;
    g[n] = (group_row){config(s, t, 1), 0.95};
    g[n++].c.variant.alibi_max_bias = 8;
    /* masks: causal as a mask in both types (the flag off), f32 also with
     * version 0 (its pre-pass every call), zeros and random blocks over
     * causal, prefix-LM without the flag */
    const struct { bench_mask_kind k; attn_dtype mt; int causal, fresh; } masks[] = {
        {BENCH_MASK_CAUSAL, ATTN_F32, 0, 0}, {BENCH_MASK_CAUSAL, ATTN_F32, 0, 1},
        {BENCH_MASK_CAUSAL, ATTN_F16, 0, 0}, {BENCH_MASK_ZEROS, ATTN_F32, 1, 0},
        {BENCH_MASK_RANDOM_BLOCK, ATTN_F32, 1, 0}, {BENCH_MASK_PREFIX_LM, ATTN_F16, 0, 0}};
    for (size_t i = 0; i < sizeof masks / sizeof masks[0]; i++) {
        g[n] = (group_row){config(s, t, masks[i].causal), 0.95};
        g[n].c.variant.mask = masks[i].k;
        g[n].c.variant.mask_fresh = masks[i].fresh;
        g[n++].c.variant.mask_dtype = masks[i].mt;
    }
    prefill_row rows[MAX_GROUP];
    return run_group(ctx, "costs: GFLOP/s over visible pairs against plain causal", g, n, 0, how,
                     rows, results, errors);
}

/* window: causal against a window of S/4 at S; the time ratio over the
 * visible-pairs ratio. */
static int group_window(attn_context *ctx, const prefill_shape *s, attn_dtype t,
                        const prefill_how *how, cJSON *results, cJSON *errors)
{
    group_row g[2] = {{config(s, t, 1), 0}, {config(s, t, 1), 0}};
    g[1].c.variant.use_window = 1, g[1].c.variant.window_left = s->kv_len / 4;
    prefill_row rows[2];
    const int before = cJSON_GetArraySize(results);
    const int failed = run_group(ctx, "window: time against causal's and the visible pairs", g, 2,
                                 1, how, rows, results, errors);
    if (cJSON_GetArraySize(results) - before != 2 || rows[0].median_ms <= 0 || rows[0].flops <= 0)
        return failed;
    const double time_ratio = rows[1].median_ms / rows[0].median_ms;
    const double pairs_ratio = rows[1].flops / rows[0].flops;
    const double over = pairs_ratio > 0 ? time_ratio / pairs_ratio : 0;
    if (how->format == BENCH_TEXT)
        printf("   window time / causal time %.3f, visible pairs %.3f of causal's: %.3f times "
               "the pairs' share (target <= 1.15: %s)\n", time_ratio, pairs_ratio, over,
               over <= 1.15 ? "met" : "MISSED");
    cJSON *j = cJSON_GetArrayItem(results, cJSON_GetArraySize(results) - 1);
    cJSON_AddNumberToObject(j, "time_vs_pairs_share", over);
    return failed;
}

/* packed: the sequences padded (the base) against packed. */
static int group_packed(attn_context *ctx, const prefill_shape *s, attn_dtype t,
                        const bench_variant *given, const prefill_how *how, cJSON *results,
                        cJSON *errors)
{
    static const int issue_lengths[] = {100, 1000, 3000, 4096};
    group_row g[2] = {{config(s, t, 1), 0}, {config(s, t, 1), 1.0}};
    for (int i = 0; i < 2; i++) {
        bench_variant *v = &g[i].c.variant;
        if (given->npacked) {
            memcpy(v->packed, given->packed, sizeof v->packed);
            v->npacked = given->npacked;
        } else {
            memcpy(v->packed, issue_lengths, sizeof issue_lengths);
            v->npacked = 4;
        }
        v->padded = i == 0;
    }
    prefill_row rows[2];
    return run_group(ctx, "packed: speed against the same sequences padded", g, 2, 1, how, rows,
                     results, errors);
}

int bench_variants(attn_context *ctx, const prefill_shape *shape, attn_dtype t, int seq_given,
                   const bench_variant *given, const prefill_how *how, cJSON *results,
                   cJSON *errors)
{
    prefill_shape long_shape = *shape;
    if (!seq_given) long_shape.q_len = long_shape.kv_len = LONG_SEQ;
    int failed = group_costs(ctx, shape, t, how, results, errors);
    failed |= group_window(ctx, &long_shape, t, how, results, errors);
    failed |= group_packed(ctx, shape, t, given, how, results, errors);
    return failed;
}
