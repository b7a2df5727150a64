/* bench_options.h -- attn-bench's command line: one table of options from
 * which both the parser (getopt_long) and --help are made, so the help can
 * never list an option the parser lacks, or miss one it accepts. */
#ifndef ATTN_BENCH_OPTIONS_H
#define ATTN_BENCH_OPTIONS_H

#include "attn.h"
#include "bench_variant.h"

#include <stdio.h>

#define BENCH_TARGET_MS 1000.0 /* calibrated timed runs of a shape add up to about this */
#define BENCH_MIN_REPS 3    /* calibrated timed runs per shape: at least */
#define BENCH_MAX_REPS 1000 /* ... and at most */
#define BENCH_MAX_DTYPES 3  /* --dtype f32,f16,bf16 */
#define BENCH_MAX_SPLITS 16 /* --splits: values in one list */
#define BENCH_MAX_BLOCKS 4  /* --block-size: values in one list */
#define BENCH_MIXED_SEQS 32  /* --mixed's default --batch: sequences in the pool */
#define BENCH_MIXED_MIN 64   /* --mixed-lengths' default: shortest ... */
#define BENCH_MIXED_MAX 16384 /* ... and longest */
#define BENCH_MIXED_BLOCKS "0,16" /* --block-size's default with --mixed */

typedef enum { BENCH_TEXT, BENCH_CSV, BENCH_JSON } bench_format;

typedef struct bench_options {
    const char *device;
    int batch, q_heads, kv_heads, head_dim, seq, q_len, kv_len; /* 0 = not given */
    int causal;
    attn_dtype dtypes[BENCH_MAX_DTYPES]; /* timed interleaved; the first is the ratios' base */
    int ndtypes;
    int reps; /* 0 = calibrate */
    bench_format format;
    int check;
    int decode;         /* --decode: bench_decode.c */
    const char *splits; /* --splits LIST (decode) */
    int kv_int8;        /* --kv-int8 (decode): each dtype also over an int8 cache */
    const char *blocks; /* --block-size LIST (decode) */
    int mixed;          /* --mixed (decode): --batch sequences of mixed lengths */
    int mixed_min, mixed_max; /* --mixed-lengths MIN,MAX (0,0 = not given) */
    int compare;        /* --compare-materialized (bench_compare.c) */
    bench_variant variant; /* --window, --softcap, --sinks, --alibi, --mask, --packed */
    int variants;       /* --variants: each variant against plain causal (bench_variants.c) */
} bench_options;

/* One row of the table. An entry whose help is NULL is described together
 * with the entry before it ("--causal, --no-causal"). */
typedef struct bench_option_spec {
    const char *name; /* without the leading "--" */
    const char *arg;  /* the argument's placeholder ("N", "LIST"), NULL for a flag */
    const char *help; /* lines joined by '\n' */
} bench_option_spec;

extern const bench_option_spec bench_option_specs[];
extern const int bench_option_count;

/* The defaults: causal, f32, text, check on. */
void bench_options_init(bench_options *o);
/* Prints --help from the table. */
void bench_options_usage(FILE *f);
/* Parses argv into o. Returns -1 to go on, else the exit status (0 after
 * --help or --version, 2 after a usage error, with the message on stderr). */
int bench_options_parse(int argc, char **argv, bench_options *o);

/* --splits LIST: up to BENCH_MAX_SPLITS distinct values, each "auto" (stored
 * as 0) or 1..256, comma-separated. Returns the count, or -1 when list is
 * not one. */
int bench_parse_splits(const char *list, int *splits, int max);
/* --block-size LIST: up to max distinct values, each 0 or a power of two in
 * 16..256, comma-separated. Returns the count, or -1. */
int bench_parse_blocks(const char *list, int *blocks, int max);
/* --mixed-lengths MIN,MAX: 1 <= MIN <= MAX <= 2^20. Returns 2, or -1. */
int bench_parse_mixed_lengths(const char *text, int *min, int *max);
/* The lengths of --mixed n with --mixed-lengths min,max: log-spaced
 * (geometric) from min to max, lens[i] = round(min * (max/min)^(i/(n-1))),
 * ascending, the first min and the last max (n 1: max). No randomness, so
 * every run and machine times the same pool. */
void bench_mixed_lengths(int n, int min, int max, int *lens);
/* --packed LIST: up to max lengths, each 1..2^20, comma-separated. Returns
 * the count, or -1. */
int bench_parse_packed(const char *list, int *lens, int max);
/* --dtype LIST: up to BENCH_MAX_DTYPES distinct names of f32, f16, bf16.
 * Returns the count, or -1. */
int bench_parse_dtypes(const char *list, attn_dtype *dtypes, int max);

#endif /* ATTN_BENCH_OPTIONS_H */
