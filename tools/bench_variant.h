/* bench_variant.h -- the attention variants attn-bench applies to its runs
 * (--window, --softcap, --sinks, --alibi, --mask, --packed): their parsing,
 * their text and JSON, the host and device data one run of a variant needs
 * (sinks, the mask, the packed or padded lengths), and the work counted by
 * visible pairs only. Uses attn.h, OpenCL and cJSON only. */
#ifndef ATTN_BENCH_VARIANT_H
#define ATTN_BENCH_VARIANT_H

#include "attn.h"

#include <cjson/cJSON.h>
#include <stddef.h>

#define BENCH_MAX_PACKED 64 /* --packed: sequences in one list */

typedef enum bench_mask_kind {
    BENCH_MASK_NONE,
    BENCH_MASK_CAUSAL,       /* -inf above the bottom-right diagonal: causal as a mask */
    BENCH_MASK_ZEROS,        /* all zeros: the mask's cost with nothing masked */
    BENCH_MASK_PREFIX_LM,    /* the first half of the keys seen by all, then causal */
    BENCH_MASK_RANDOM_BLOCK, /* 64 x 64 blocks, each -inf with probability 1/2 */
    BENCH_MASK_COUNT
} bench_mask_kind;

/* Sinks: none, one value for every head, or per-head values. */
typedef enum { BENCH_SINKS_NONE, BENCH_SINKS_VALUE, BENCH_SINKS_PER_HEAD } bench_sinks_kind;

typedef struct bench_variant {
    int use_window, window_left, window_right; /* -1 = unlimited on that side */
    float softcap;                             /* 0 = off */
    bench_sinks_kind sinks;
    float sink_value;                          /* BENCH_SINKS_VALUE */
    float alibi_max_bias;                      /* 0 = off */
    bench_mask_kind mask;
    attn_dtype mask_dtype;                     /* ATTN_F32 or ATTN_F16 */
    int mask_fresh; /* the mask's version 0: its summary made every call (default 1: kept) */
    int npacked, packed[BENCH_MAX_PACKED];     /* sequence lengths; 0 = one padded shape */
    int padded; /* with npacked: the same sequences padded to the longest, not packed */
} bench_variant;

/* The options' syntax; each returns 0, or -1 when text is not one. */
int bench_parse_window(const char *text, bench_variant *v); /* "L,R", each -1 or >= 0 */
int bench_parse_sinks(const char *text, bench_variant *v);  /* "per-head" or a finite number */
int bench_parse_mask(const char *text, bench_variant *v);   /* a bench_mask_name */
int bench_parse_mask_dtype(const char *text, bench_variant *v); /* f32 or f16 */
const char *bench_mask_name(bench_mask_kind k); /* "causal", "zeros", "prefix-lm", ... */

/* Nonzero when v changes anything. */
int bench_variant_any(const bench_variant *v);
/* "window=4096,0 softcap=50 sinks=per-head alibi=8 mask=causal/f16[/fresh] packed=4"
 * ("padded=4" for the padded layout), "" for none. */
void bench_variant_text(const bench_variant *v, char *buf, size_t size);
/* The JSON "variant" object of a row (null fields for what is off). */
void bench_variant_json(cJSON *row, const bench_variant *v);

/* What one run of a variant holds: the sinks, the mask (host copy in f32
 * for the reference, device copy in its type), the lengths. */
typedef struct bench_variant_data {
    float *sinks, *mask;
    cl_mem mask_buffer;
    int *lens; /* q_start, q_len, kv_start, kv_len: 4 x batch ints */
    attn_lengths lengths;
    int has_lengths;
} bench_variant_data;

/* The shape of v's problem: a packed batch is one token axis of the sum of
 * the lengths, a padded one is padded to the longest; otherwise p as is. */
void bench_variant_shape(const bench_variant *v, attn_problem *p);
/* Sets v's fields in p (after bench_variant_shape) and makes its data: the
 * sinks, the mask [Sq][Skv] broadcast over batch and heads, the lengths.
 * On failure *what names the step (message on stderr). */
attn_status bench_variant_apply(attn_context *ctx, const bench_variant *v, attn_problem *p,
                                bench_variant_data *d, const char **what);
void bench_variant_data_free(bench_variant_data *d);
/* The work of p over lengths by visible pairs only: attn_problem_flops, or
 * with a mask the pairs that lengths, causal, window and mask leave, counted
 * on the host. */
double bench_variant_flops(const attn_problem *p, const attn_lengths *lengths);

#endif /* ATTN_BENCH_VARIANT_H */
