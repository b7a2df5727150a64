/* bench_variants.h -- attn-bench --variants: each attention variant timed
 * interleaved with plain causal attention at the same shape, as GFLOP/s
 * over visible pairs and their ratio; a long window against causal and the
 * visible pairs; a packed batch against the same sequences padded. It
 * measures and prints the targets beside the numbers; it never
 * fails a run for missing one. */
#ifndef ATTN_BENCH_VARIANTS_H
#define ATTN_BENCH_VARIANTS_H

#include "bench_prefill.h"

/* shape: the costs' shape (its q_len, and kv_len, also the long window's
 * when seq_given, else 16384); given: --packed's lengths, if any. Rows go
 * to stdout (how->format) and results, each with "variants_group",
 * "gflops_vs_base" and "target"; failures to errors. Returns 0 when all ran
 * and passed their check. */
int bench_variants(attn_context *ctx, const prefill_shape *shape, attn_dtype t, int seq_given,
                   const bench_variant *given, const prefill_how *how, cJSON *results,
                   cJSON *errors);

#endif /* ATTN_BENCH_VARIANTS_H */
