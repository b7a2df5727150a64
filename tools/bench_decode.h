/* bench_decode.h -- attn-bench's decode benchmark (--decode): the DESIGN
 * decode set or one shape, timed through attn_decode against a filled KV
 * cache (contiguous or paged, each block size requested) in each requested
 * storage type with each requested number of KV splits, all interleaved,
 * reporting K/V GB/s against the copy bandwidth measured in the same run;
 * or, with --mixed, sequences of mixed lengths (bench_decode_mixed.h). */
#ifndef ATTN_BENCH_DECODE_H
#define ATTN_BENCH_DECODE_H

#include "attn.h"
#include "bench_options.h"

#include <cjson/cJSON.h>
#include <stdio.h>

/* Shared by the decode runs (bench_decode.c, bench_decode_mixed.c). */
#define BENCH_DECODE_TARGET_MS 2000.0 /* all configurations' calibrated reps add up to about this */
#define BENCH_DECODE_MIN_REPS 5
#define BENCH_DECODE_MAX_REPS 1000
/* the reference's work bound (attn_problem_flops of a shape): ~4e9 flops is
 * a few seconds on one host core, less on several */
#define BENCH_DECODE_CHECK_FLOPS 4e9
#define BENCH_COPY_SAMPLES 5 /* copy-bandwidth measurements per shape, interleaved */
/* cache types at most: each dtype, and with --kv-int8 each over int8 */
#define BENCH_DECODE_MAX_TYPES (2 * BENCH_MAX_DTYPES)

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
    /* --mixed: batch sequences of lengths log-spaced from mixed_min to
     * mixed_max (bench_mixed_lengths) instead of kv_len each */
    int mixed, mixed_min, mixed_max;
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

/* The copy bandwidth sampled a few times across the timed rounds (the
 * device may be shared: a fraction of it must compare like with like). */
typedef struct bench_copy_samples {
    attn_context *ctx;
    double gbps[BENCH_COPY_SAMPLES];
    int n, every; /* taken so far; one every this many rounds */
} bench_copy_samples;
/* Before round rep: a sample every `every` rounds, BENCH_COPY_SAMPLES at most. */
attn_status bench_copy_sample(bench_copy_samples *c, int rep);
/* `every` for reps rounds of n configurations: about reps /
 * BENCH_COPY_SAMPLES, prime to n, so that the configuration run right after
 * a sample (whose copy leaves a CPU's caches cold) rotates with the rounds'
 * order instead of always being the first. */
int bench_copy_every(int reps, int n);

/* On a GPU, a buffer larger than its last-level cache, written before
 * each timed decode (bench_decode.c): else a cache that fits in L2 is read
 * from the previous run's, not from memory. buf NULL where there is none
 * (a CPU, or no memory for it). */
typedef struct bench_flush {
    cl_mem buf;
    size_t bytes;
} bench_flush;
bench_flush bench_flush_create(attn_context *ctx);
/* Overwrites it and waits (untimed, before run c); ATTN_SUCCESS where there
 * is none, ATTN_ERROR_OPENCL when OpenCL fails. */
attn_status bench_flush_run(attn_context *ctx, const bench_flush *f, int c);
void bench_flush_release(bench_flush *f);

/* A failed step of a decode run: on stderr and into errors, with the
 * context's message when step names a library call. */
void bench_decode_error(attn_context *ctx, cJSON *errors, const char *what, const char *step,
                        attn_status st);

/* The bytes of one key's K (or V) row of one KV head in type t: head_dim
 * elements, or head_dim int8 and the row's fp32 scale. */
static inline double bench_decode_row_bytes(const bench_decode_config *cfg, int t, int head_dim)
{
    return bench_decode_storage(cfg, t) == ATTN_KV_INT8
               ? head_dim + 4.0
               : (double)head_dim * attn_dtype_size(bench_decode_dtype(cfg, t));
}

/* A row's K/V traffic in JSON: kv_bytes, kv_gbps, then copy_gbps and
 * bandwidth_fraction (kv_gbps / copy_gbps), both null when copy_gbps is 0. */
void bench_json_bandwidth(cJSON *j, double kv_bytes, double kv_gbps, double copy_gbps);

/* Runs the decode benchmark (cfg->mixed: bench_decode_mixed); rows go to
 * stdout (text, csv) and into results (every format: attn-bench reads their spread), failures to
 * stderr and errors. Returns 0 when everything ran and passed its check, 1
 * otherwise, 2 for a bad --splits list (check it first with
 * bench_parse_splits). */
int bench_decode(attn_context *ctx, const bench_decode_config *cfg, double peak_gflops,
                 cJSON *results, cJSON *errors);

#endif /* ATTN_BENCH_DECODE_H */
