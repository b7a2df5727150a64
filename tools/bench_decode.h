/* bench_decode.h -- attn-bench's decode benchmark (--decode): the DESIGN
 * decode set or one shape, timed through attn_decode against a filled KV
 * cache (contiguous or paged, each block size requested) in each requested
 * storage type with each requested number of KV splits, all interleaved,
 * reporting K/V GB/s against the copy bandwidth measured in the same run. */
#ifndef ATTN_BENCH_DECODE_H
#define ATTN_BENCH_DECODE_H

#include "attn.h"
#include "bench_options.h"

#include <cjson/cJSON.h>
#include <stdio.h>

typedef struct bench_decode_config {
    int format;         /* 0 text, 1 csv, 2 json (attn-bench's out_format order) */
    attn_dtype dtypes[BENCH_MAX_DTYPES]; /* each its own cache; ratios to the first */
    int ndtypes;
    int reps;           /* 0 = calibrate */
    int check;          /* compare every configuration's output with the reference */
    const char *splits; /* "auto,1,2,4,8": the splits to compare, "auto" = the heuristic */
    const char *blocks; /* "0,16,64": the caches to compare, 0 = contiguous (NULL: "0") */
    const bench_variant *variant; /* NULL or applied to every run (not packed) */
    /* one shape instead of the DESIGN set when batch > 0 */
    int batch, q_heads, kv_heads, head_dim, q_len, kv_len;
    int kv_int8; /* each dtype also over an int8 cache (after all the dtypes') */
} bench_decode_config;

/* The configuration's cache types: type t is dtype t % ndtypes, over an
 * int8 cache from ndtypes on (kv_int8). */
static inline int bench_decode_ntypes(const bench_decode_config *cfg)
{
    return cfg->ndtypes * (cfg->kv_int8 ? 2 : 1);
}
static inline attn_dtype bench_decode_dtype(const bench_decode_config *cfg, int t)
{
    return cfg->dtypes[t % cfg->ndtypes];
}
static inline attn_kv_storage bench_decode_storage(const bench_decode_config *cfg, int t)
{
    return t >= cfg->ndtypes ? ATTN_KV_INT8 : ATTN_KV_AS_DTYPE;
}
/* "f16", or "f16+int8" (queries and outputs f16, K/V int8) */
static inline const char *bench_decode_type_name(const bench_decode_config *cfg, int t, char *buf,
                                                 size_t size)
{
    snprintf(buf, size, "%s%s", attn_dtype_name(bench_decode_dtype(cfg, t)),
             bench_decode_storage(cfg, t) == ATTN_KV_INT8 ? "+int8" : "");
    return buf;
}

/* Runs the decode benchmark; rows go to stdout (text, csv) and into
 * results (every format: attn-bench reads their spread), failures to
 * stderr and errors. Returns 0 when everything ran and passed its check, 1
 * otherwise, 2 for a bad --splits list (check it first with
 * bench_parse_splits). */
int bench_decode(attn_context *ctx, const bench_decode_config *cfg, double peak_gflops,
                 cJSON *results, cJSON *errors);

#endif /* ATTN_BENCH_DECODE_H */
