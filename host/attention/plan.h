/* plan.h -- the planner (plan.c): one per context, for prefill and decode. */
#ifndef ATTN_ATTENTION_PLAN_H
#define ATTN_ATTENTION_PLAN_H

#include "attn.h"
#include "kernels/params.h"


/* ---- the planner (plan.c) ---- */
/* The parameters for entry point `entry` (ATTN_ENTRY_*) of p: the device
 * heuristic, then the tuning database, then the override; cached per shape
 * class (the decode heuristic also by q_len), so repeated calls do no
 * parsing and no database search. *source is "heuristic", "tuned",
 * "stale" or "override". Caller holds ctx->lock. */
attn_status attn_plan(attn_context *ctx, int entry, const attn_problem *p, attn_params *out,
                      const char **source);
/* attn_plan for a decode over a cache of this storage: an int8 cache has
 * kernels, and so a shape class, of its own. */
attn_status attn_plan_decode(attn_context *ctx, const attn_problem *p, attn_kv_storage storage,
                             attn_params *out, const char **source);
/* The device heuristic alone for entry point `entry` (ATTN_ENTRY_*): where
 * a plan starts, and the tuner's default. */
attn_params attn_plan_heuristic(int entry, const attn_device_limits *dev, const attn_problem *p);
/* Forgets the cached plans (after a configuration change). */
void attn_plan_clear(attn_context *ctx);

#endif /* ATTN_ATTENTION_PLAN_H */
