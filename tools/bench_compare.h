/* bench_compare.h -- attn-bench --compare-materialized: the tiled path
 * (attn_forward) against the materialized one (attn_forward_materialized)
 * and the layer's time split, kept apart from attn-bench.c's main loop. */
#ifndef ATTN_BENCH_COMPARE_H
#define ATTN_BENCH_COMPARE_H

#include "attn.h"

#include <cjson/cJSON.h>
#include <stddef.h>

typedef struct bench_compare_options {
    int reps;      /* timed runs of each path; 0 = calibrated (clpeak's method) */
    int format;    /* 0 text, 1 csv, 2 json (rows into `results` only) */
    double peak;   /* the device's fp32 FMA peak in GFLOP/s, 0 if unknown */
    int layer;     /* also time the layer (d_model = Hq * D) */
} bench_compare_options;

/* Runs every problem (lengths full) on ctx: both paths interleaved, their
 * median times, speed ratio, device memory and largest difference; then
 * the layer. Text and CSV rows are printed as they come; a JSON object per
 * problem is appended to results, a failure to errors. Returns 0, or 1 if
 * anything failed (a path, or the paths disagreeing beyond twice the
 * tolerance). */
int bench_compare(attn_context *ctx, const attn_problem *problems, size_t n,
                  const bench_compare_options *o, cJSON *results, cJSON *errors);

#endif /* ATTN_BENCH_COMPARE_H */
