/* bench_prefill.h -- attn-bench's prefill runs: configurations (a shape, a
 * storage type, causal or not, a variant) set up on the device, timed
 * interleaved with clpeak's method, checked against the CPU reference and
 * printed as rows. attn-bench.c's plain runs and bench_variants.c's table
 * both use it. */
#ifndef ATTN_BENCH_PREFILL_H
#define ATTN_BENCH_PREFILL_H

#include "bench_report.h"

#include <cjson/cJSON.h>

/* One configuration to time. */
typedef struct prefill_config {
    prefill_shape s;
    attn_dtype dtype;
    int causal;
    bench_variant variant; /* all zero: plain attention */
} prefill_config;

/* How to run and print them. */
typedef struct prefill_how {
    int reps;      /* 0 = calibrate */
    int check;     /* compare with the reference when the shape is small enough */
    int format;    /* bench_format: rows on stdout in text or CSV */
    bench_ratio ratios; /* text: the ratio column shown */
    int period;    /* rows per type: row i's ratio is to row i % period's median time
                    * (0: each row is its own base) */
    int packed;    /* rows come in pairs, padded then packed: padded_ratio */
    double peak;   /* fp32 peak for the fractions (0: unknown) */
} prefill_how;

/* c's shape as run: a packed or padded batch's own (one entry per
 * sequence, S the longest). */
prefill_shape prefill_effective_shape(const prefill_config *c);

/* Runs the n configurations interleaved, prints their rows, adds them to
 * results and any failure to errors (and stderr); rows (NULL, or n) get
 * the results. Returns 0 when all ran and passed their check. */
int prefill_bench(attn_context *ctx, const prefill_config *c, int n, const prefill_how *how,
                  prefill_row *rows, cJSON *results, cJSON *errors);

#endif /* ATTN_BENCH_PREFILL_H */
