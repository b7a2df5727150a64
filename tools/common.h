/* common.h -- what attn-bench's three parts (attn-bench.c, bench_compare.c,
 * bench_decode.c) share, so that each exists once: the timing loop
 * (clpeak's method: calibrated reps, configurations interleaved in rotating
 * order), random inputs rounded through a storage type, the CPU reference on
 * every host core and the check of an output against it, a shape's text and
 * the JSON fields every timed row has. The clock, the spread of timings and
 * the generator are host/sampling.h's, which the tuner shares. Uses attn.h,
 * OpenCL and cJSON only. */
#ifndef ATTN_TOOLS_COMMON_H
#define ATTN_TOOLS_COMMON_H

#include "attn.h"
#include "measure/sampling.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* The inputs' seed: every tool's runs draw the same values. */
#define TOOL_SEED 20240501u

/* Runs configuration i of arg once (enqueues it; the caller waits). */
typedef attn_status (*tool_run_fn)(void *arg, int i);

/* The time of run(arg, i), all it enqueues (a forward may enqueue a
 * pre-pass and a split decode two kernels, so one kernel's event would
 * miss part of the work): the device's, between two markers around it
 * with the queue held until both are enqueued, where the queue is in order
 * and profiled and the device gives marker times; else host wall time of
 * the call and clFinish. The first call decides the clock for the run
 * (tool_clock_name says which); a call that decides it is itself timed by
 * it only when the device's clock works. The first call of each (run, arg,
 * i) is timed on the host, never held (the library may settle a plan
 * there, waiting on the queue): a warm-up, whose time is not a sample. A
 * held call that waits on its queue is let go after a few seconds, and the
 * run goes on on the host's clock. *ms is set on success. */
attn_status tool_timed(attn_context *ctx, tool_run_fn run, void *arg, int i, double *ms);
/* A new series of runs: each (run, arg, i)'s first call is a warm-up again.
 * Called where the args are made anew (they may sit at the last series'
 * addresses, on the stack). */
void tool_timing_new_series(void);
const char *tool_clock_name(void);

/* Reps for about target_ms when one run takes one_ms, within
 * [min_reps, max_reps]; `fixed` instead when it is not 0. */
int tool_reps(int fixed, double target_ms, double one_ms, int min_reps, int max_reps);

/* The timed rounds: each runs every configuration once, starting one
 * later each round (the first run of a round measured ~10% slower here
 * whatever it was, so every configuration takes every place). */
typedef struct tool_rounds {
    int n, reps;
    tool_run_fn run;
    /* NULL, or called before round rep (e.g. another measurement) */
    attn_status (*before_round)(void *arg, int rep);
    /* NULL, or called before each run of configuration i, untimed */
    attn_status (*before_run)(void *arg, int i);
    void *arg;
    double *const *times; /* times[i][rep] */
    int failed;           /* out: the configuration that failed, when one did */
} tool_rounds;

attn_status tool_time_rounds(attn_context *ctx, tool_rounds *r);

/* A device buffer of n values uniform in [lo, hi) from *rng, stored in type
 * t; keep (NULL, or n floats) receives them rounded through t, as the
 * device sees them. On failure *what names the step (message on stderr). */
attn_status tool_random_input(attn_context *ctx, attn_dtype t, size_t n, uint64_t *rng, float lo,
                              float hi, cl_mem_flags flags, float *keep, cl_mem *out,
                              const char **what);

/* An uninitialized read-write device buffer of `bytes` (the output); on
 * failure *what is "clCreateBuffer", with the message on stderr. */
attn_status tool_output_buffer(attn_context *ctx, size_t bytes, cl_mem *out, const char **what);

/* A contiguous [batch, heads, seq, dim] tensor in m. */
attn_tensor tool_bhsd(cl_mem m, int heads, int seq, int dim);

/* The elements of p's Q (O) and K (V) tensors, BHSD (packed: batch 1), at
 * most SIZE_MAX / 8 each; else ATTN_ERROR_INVALID_ARGUMENT, *what
 * "shape", the message in tool_refusal. */
attn_status tool_shape_elements(const attn_problem *p, size_t *nq, size_t *nkv,
                                const char **what);

/* Whether the machine's memory holds `bytes` of host buffers: refused
 * before malloc (an allocator may grant them lazily, and the reference run
 * out of memory half way) with ATTN_ERROR_OUT_OF_MEMORY, *what "host
 * memory", the message in tool_refusal. */
attn_status tool_host_holds(double bytes, const char **what);

/* The message of the last refusal of those two when it was at `step` (for
 * the JSON's errors), else `fallback`. */
const char *tool_refusal(const char *step, const char *fallback);

/* Host threads for the reference: online cores, 1..64. */
int tool_host_threads(void);
/* attn_reference_forward over contiguous BHSD arrays (batch stride 0 when
 * p->packed: out then gets each entry's own rows only), one (batch, query
 * head) slice per job on every host core, p's variants included; lengths
 * may be NULL (full). */
attn_status tool_reference(const attn_problem *p, const attn_lengths *lengths, const float *q,
                           const float *k, const float *v, float *out);

/* An output against the reference, at the DESIGN tolerance of its type
 * (a decode over an int8 cache: int8's, attn_kv_tolerance). */
typedef struct tool_check {
    int passed;                              /* every output within tolerance and finite */
    double max_error, max_ratio, mean_error; /* over the finite outputs */
    size_t nonfinite;                        /* NaN or inf outputs: each a failure */
} tool_check;

void tool_check_output(attn_kv_storage s, attn_dtype t, const float *got, const float *ref,
                       size_t n, tool_check *c);
/* "skipped" (checked 0), "passed" or "failed": the CSV's and JSON's word. */
const char *tool_check_word(int checked, const tool_check *c);
/* The text table's: "skipped", "ok (0.12 of tol)", "FAILED (3 NaN/inf)". */
void tool_check_text(int checked, const tool_check *c, char *buf, size_t size);
/* JSON: max_error, max_error_ratio, mean_error (with_mean only), nonfinite
 * (all null when not checked) and check (the word). */
void tool_json_check(cJSON *j, int checked, const tool_check *c, int with_mean);

/* "B=1 Hq=8 Hkv=2 D=64 S=1024 causal" (Sq= and Skv= when they differ). */
void tool_shape_text(const attn_problem *p, char *buf, size_t size);

/* The JSON fields of a timed row, each group in this order (readers may
 * rely on it): batch, q_heads, kv_heads, head_dim, q_len, kv_len, dtype,
 * causal ... */
void tool_json_problem(cJSON *j, const attn_problem *p);
/* ... family, params, params_source ... */
void tool_json_plan(cJSON *j, const attn_plan_info *plan);
/* ... reps, median_ms, min_ms, q1_ms, q3_ms, max_ms, iqr_fraction,
 * time_ratio_to_first_dtype (only when ratio >= 0), flops, gflops (flops
 * over the median), peak_gflops and peak_fraction (null when peak is 0). */
void tool_json_times(cJSON *j, int reps, const attn_time_spread *s, double ratio, double flops,
                     double peak);

#endif /* ATTN_TOOLS_COMMON_H */
