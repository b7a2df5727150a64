/* bench_decode_mixed.h -- attn-bench --decode --mixed: a pool of sequences
 * of mixed lengths decoding together, one token each per step, through a
 * contiguous cache padded to the longest and through paged caches, timed
 * interleaved: tokens/s, K/V GB/s against the same run's copy bandwidth,
 * and each cache's device memory. */
#ifndef ATTN_BENCH_DECODE_MIXED_H
#define ATTN_BENCH_DECODE_MIXED_H

#include "bench_decode.h"

/* cfg->batch sequences of lengths bench_mixed_lengths(batch, mixed_min,
 * mixed_max) with cfg's heads and head_dim (attn-bench sets their
 * defaults), through each cfg->blocks cache (BENCH_MIXED_BLOCKS when NULL)
 * of each type. Rows to stdout (text, csv) and results, in every format;
 * failures to stderr and errors. Returns 0 when everything ran and passed
 * its check, 1 otherwise, 2 for a bad --block-size, batch or lengths. */
int bench_decode_mixed(attn_context *ctx, const bench_decode_config *cfg, double peak,
                       cJSON *results, cJSON *errors);

#endif /* ATTN_BENCH_DECODE_MIXED_H */
