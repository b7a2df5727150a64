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
/* attn_plan for a decode over a cache of blocks of page_rows tokens (0:
 * contiguous) and this storage: each kind is a shape class of its own (an
 * int8 cache has its own kernels; a paged one bounds the keys per block).
 * The result fits the cache (attn_plan_fit_page). */
attn_status attn_plan_decode(attn_context *ctx, const attn_problem *p, int page_rows,
                             attn_kv_storage storage, attn_params *out, const char **source);
/* Paged (page_rows > 0): a key block must lie inside one page
 * (cl/kv_cache_rows.cl's cache_row looks a page up once per block), so keys
 * per block above the page size are clamped to it, with a debug log (both
 * powers of two, so they then divide it; a smaller block is always legal:
 * less __local and private memory, still a multiple of the vector width,
 * which is at most the smallest page). The heuristic and an override may
 * need it; a tuned entry of a paged class never does (the tuner searches
 * only keys that fit). */
void attn_plan_fit_page(attn_params *pr, int page_rows);
/* The device heuristic alone for entry point `entry` (ATTN_ENTRY_*): where
 * a plan starts, and the tuner's default. */
attn_params attn_plan_heuristic(int entry, const attn_device_limits *dev, const attn_problem *p);
/* Where a plan of `family` starts on device dev: that family's own
 * heuristic (the vector family's as on a CPU, the others' as on a GPU, with
 * dev's other limits; a family the heuristic would not pick for p, its
 * defaults fitted to those limits). An override or a tuned entry that names
 * another family than the plan's starts here, and the tuner seeds it. */
attn_params attn_plan_family_start(int entry, const attn_device_limits *dev,
                                   const attn_problem *p, int family);
/* Parameter text (ATTN_PARAMS, attn_context_set_params, a tuning database
 * entry) applied over *pr: its fields over pr's, or, where it names another
 * family, over that family's start. 0, or -1 with err set and *pr as it was. */
int attn_plan_parse_over(int entry, const attn_device_limits *dev, const attn_problem *p,
                         const char *text, attn_params *pr, char *err, size_t size);
/* The same, with the names text gave that the family in effect lacks (left
 * out) in left_out (attn_params_parse_noting). */
int attn_plan_parse_over_noting(int entry, const attn_device_limits *dev, const attn_problem *p,
                                const char *text, attn_params *pr, char *left_out,
                                size_t left_size, char *err, size_t size);
/* The device limits' mma flag for p at entry point `entry`: whether the
 * heuristic may choose the mma family (a problem it can run, on a device
 * where mma_gate.c verified it; the first such call verifies; a decode
 * with ATTN_MMA_DECODE_ROWS query rows per KV head or more). Lock held. */
int attn_plan_mma(attn_context *ctx, int entry, const attn_problem *p);
/* Forgets the cached plans (after a configuration change). */
void attn_plan_clear(attn_context *ctx);

#endif /* ATTN_ATTENTION_PLAN_H */
