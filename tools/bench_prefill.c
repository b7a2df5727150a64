/* bench_prefill.c -- attn-bench's prefill configurations: inputs on the
 * device (the same values in every type, rounded through it so that the
 * reference sees what the device sees), the variant's data, the timed
 * rounds, the check and the rows. */
#define _POSIX_C_SOURCE 200809L
#include "bench_prefill.h"
#include "bench_options.h"
#include "tool_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reference's work is bounded by this many flops per host thread: it
 * ran at about 10 GFLOP/s per Zen 5 core (the S=4096, D=64 prefill shape,
 * 17 GFLOP, in 1.6 s), so at most ~6 s, or ~20 s on a slower host; larger
 * shapes are not checked. */
#define CHECK_FLOPS_PER_THREAD 6e10

/* One configuration: its inputs on the host and the device, its variant's
 * data, its output and timings. */
typedef struct prefill_run {
    prefill_row r;
    attn_problem p;
    bench_variant_data vd;
    size_t nq, nkv, esize;
    float *hq, *hk, *hv, *ho;
    void *stage;
    cl_mem bq, bk, bv, bo;
    attn_tensor tq, tk, tv, to;
    double *times;
} prefill_run;

static void run_free(prefill_run *d)
{
    cl_mem m[4] = {d->bq, d->bk, d->bv, d->bo};
    for (int i = 0; i < 4; i++)
        if (m[i]) clReleaseMemObject(m[i]);
    bench_variant_data_free(&d->vd);
    free(d->hq), free(d->hk), free(d->hv), free(d->ho), free(d->stage), free(d->times);
    memset(d, 0, sizeof *d);
}

prefill_shape prefill_effective_shape(const prefill_config *c)
{
    attn_problem p = prefill_problem(&c->s, c->dtype, c->causal);
    bench_variant_shape(&c->variant, &p);
    const prefill_shape s = {p.batch, p.q_heads, p.kv_heads, p.head_dim, p.q_len, p.kv_len};
    return s;
}

/* Inputs uniform [-1, 1) from the fixed seed, stored in the type; a packed
 * problem's tensors are one token axis (batch stride 0). */
static attn_status run_setup(attn_context *ctx, const prefill_config *c, prefill_run *d,
                             const char **what)
{
    memset(d, 0, sizeof *d);
    d->p = prefill_problem(&c->s, c->dtype, c->causal);
    bench_variant_shape(&c->variant, &d->p);
    attn_status st = bench_variant_apply(ctx, &c->variant, &d->p, &d->vd, what);
    if (st != ATTN_SUCCESS) return st;
    const attn_problem *p = &d->p;
    prefill_row *r = &d->r;
    r->s = prefill_effective_shape(c);
    r->dtype = c->dtype;
    r->causal = c->causal;
    r->variant = c->variant;
    r->flops = bench_variant_flops(p, d->vd.has_lengths ? &d->vd.lengths : NULL);
    r->ratio = 1;
    r->padded_ratio = -1;
    size_t nq, nkv;
    if ((st = tool_shape_elements(p, &nq, &nkv, what)) != ATTN_SUCCESS) return st;
    d->nq = nq, d->nkv = nkv, d->esize = attn_dtype_size(c->dtype);
    /* q, o, k, v as floats and the staging copy */
    const double need = (2.0 * (double)nq + 2.0 * (double)nkv) * sizeof(float) +
                        (double)(nq > nkv ? nq : nkv) * (double)d->esize;
    if ((st = tool_host_holds(need, what)) != ATTN_SUCCESS) return st;
    d->hq = malloc(nq * sizeof(float)), d->hk = malloc(nkv * sizeof(float));
    d->hv = malloc(nkv * sizeof(float)), d->ho = malloc(nq * sizeof(float));
    d->stage = malloc((nq > nkv ? nq : nkv) * d->esize);
    if (!d->hq || !d->hk || !d->hv || !d->ho || !d->stage) {
        *what = "host allocation";
        fprintf(stderr, "attn-bench: out of host memory for %zu + 2 x %zu elements\n", nq, nkv);
        return ATTN_ERROR_OUT_OF_MEMORY;
    }
    uint64_t rng = TOOL_SEED;
    float *host[3] = {d->hq, d->hk, d->hv};
    size_t count[3] = {nq, nkv, nkv};
    cl_mem *dev[3] = {&d->bq, &d->bk, &d->bv};
    for (int i = 0; i < 3; i++)
        if ((st = tool_random_input(ctx, c->dtype, count[i], &rng, -1, 1, CL_MEM_READ_ONLY,
                                    host[i], dev[i], what)) != ATTN_SUCCESS)
            return st;
    if ((st = tool_output_buffer(ctx, nq * d->esize, &d->bo, what)) != ATTN_SUCCESS) return st;
    /* pad rows are not written (packed has none): zeros, as the reference's */
    const float zero = 0;
    if (clEnqueueFillBuffer(attn_context_queue(ctx), d->bo, &zero, d->esize == 4 ? 4 : 2, 0,
                            nq * d->esize, 0, NULL, NULL) != CL_SUCCESS) {
        *what = "clEnqueueFillBuffer";
        return ATTN_ERROR_OPENCL;
    }
    d->tq = tool_bhsd(d->bq, p->q_heads, p->q_len, p->head_dim);
    d->tk = tool_bhsd(d->bk, p->kv_heads, p->kv_len, p->head_dim);
    d->tv = tool_bhsd(d->bv, p->kv_heads, p->kv_len, p->head_dim);
    d->to = tool_bhsd(d->bo, p->q_heads, p->q_len, p->head_dim);
    if (p->packed) d->tq.stride_batch = d->tk.stride_batch = d->tv.stride_batch = 0;
    if (p->packed) d->to.stride_batch = 0;
    return ATTN_SUCCESS;
}

/* The last run's output against the reference. */
static attn_status run_check(attn_context *ctx, prefill_run *d, const char **what)
{
    prefill_row *r = &d->r;
    *what = "reading the output";
    cl_int err = clEnqueueReadBuffer(attn_context_queue(ctx), d->bo, CL_TRUE, 0,
                                     d->nq * d->esize, d->stage, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "attn-bench: clEnqueueReadBuffer failed: %d\n", (int)err);
        return ATTN_ERROR_OPENCL;
    }
    attn_status st = attn_convert_to_f32(r->dtype, d->stage, d->ho, d->nq);
    if (st != ATTN_SUCCESS) return st;
    float *ref = calloc(d->nq, sizeof(float));
    if (!ref) {
        *what = "host allocation";
        return ATTN_ERROR_OUT_OF_MEMORY;
    }
    *what = "attn_reference_forward";
    st = tool_reference(&d->p, d->vd.has_lengths ? &d->vd.lengths : NULL, d->hq, d->hk, d->hv,
                        ref);
    if (st == ATTN_SUCCESS) {
        r->checked = 1;
        tool_check_output(ATTN_KV_AS_DTYPE, r->dtype, d->ho, ref, d->nq, &r->chk);
    }
    free(ref);
    return st;
}

/* The configurations, for the timing loop's runs. */
typedef struct prefill_job {
    attn_context *ctx;
    const prefill_run *runs;
} prefill_job;

static attn_status run_forward(void *arg, int i)
{
    const prefill_job *b = arg;
    const prefill_run *d = &b->runs[i];
    return attn_forward(b->ctx, &d->p, &d->tq, &d->tk, &d->tv, &d->to,
                        d->vd.has_lengths ? &d->vd.lengths : NULL, NULL, NULL);
}

/* clpeak's method (an untimed warm-up, a calibration run, enough reps for
 * BENCH_TARGET_MS at their mean time), the configurations timed interleaved
 * with the order rotating each round, so that their ratios come from one
 * run; then each checked. *failed is the configuration whose step *what
 * failed, when the result is not ATTN_SUCCESS. */
static attn_status time_all(attn_context *ctx, const prefill_config *c, int n,
                            const prefill_how *how, prefill_run *runs, int *failed,
                            const char **what)
{
    attn_status st = ATTN_SUCCESS;
    prefill_job job = {ctx, runs};
    tool_timing_new_series();
    double sum_ms = 0;
    for (int i = 0; i < n; i++) {
        prefill_run *d = &runs[i];
        *failed = i;
        if ((st = run_setup(ctx, &c[i], d, what)) != ATTN_SUCCESS) return st;
        *what = "attn_prepare";
        if ((st = attn_prepare(ctx, &d->p, &d->r.plan)) != ATTN_SUCCESS) return st;
        *what = "attn_forward";
        double ms;
        if ((st = tool_timed(ctx, run_forward, &job, i, &ms)) != ATTN_SUCCESS ||
            (st = tool_timed(ctx, run_forward, &job, i, &ms)) != ATTN_SUCCESS)
            return st;
        sum_ms += ms;
    }
    const int reps =
        tool_reps(how->reps, BENCH_TARGET_MS * n, sum_ms, BENCH_MIN_REPS, BENCH_MAX_REPS);
    double **times = calloc((size_t)n, sizeof *times);
    *what = "host allocation";
    if (!times) return ATTN_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < n; i++) {
        *failed = i;
        if (!(times[i] = runs[i].times = malloc((size_t)reps * sizeof(double)))) {
            free(times);
            return ATTN_ERROR_OUT_OF_MEMORY;
        }
    }
    *what = "attn_forward";
    tool_rounds rounds = {n, reps, run_forward, NULL, NULL, &job, times, 0};
    st = tool_time_rounds(ctx, &rounds);
    free(times);
    *failed = rounds.failed;
    if (st != ATTN_SUCCESS) return st;
    const int period = how->period > 0 ? how->period : n;
    for (int i = 0; i < n; i++) {
        prefill_row *r = &runs[i].r;
        r->reps = reps;
        r->spread = attn_time_spread_of(runs[i].times, reps);
        r->min_ms = r->spread.min_ms;
        r->median_ms = r->spread.median_ms;
        r->gflops = r->median_ms > 0 ? r->flops / (r->median_ms * 1e6) : 0;
    }
    for (int i = 0; i < n; i++) {
        const double base = runs[i % period].r.median_ms;
        const double padded = runs[i - i % 2].r.median_ms;
        runs[i].r.ratio = base > 0 ? runs[i].r.median_ms / base : 0;
        if (how->packed) runs[i].r.padded_ratio = padded > 0 ? runs[i].r.median_ms / padded : 0;
    }
    for (int i = 0; how->check && i < n; i++) {
        *failed = i;
        if (runs[i].r.flops > CHECK_FLOPS_PER_THREAD * tool_host_threads()) continue;
        if ((st = run_check(ctx, &runs[i], what)) != ATTN_SUCCESS) return st;
    }
    return st;
}

int prefill_bench(attn_context *ctx, const prefill_config *c, int n, const prefill_how *how,
                  prefill_row *rows, cJSON *results, cJSON *errors)
{
    prefill_run *runs = calloc((size_t)n, sizeof *runs);
    if (!runs) {
        fprintf(stderr, "attn-bench: out of host memory\n");
        return 1;
    }
    const char *what = "";
    int bad = 0, failed = 0;
    attn_status st = time_all(ctx, c, n, how, runs, &bad, &what);
    if (st != ATTN_SUCCESS) {
        char sh[256];
        const prefill_shape eff = prefill_effective_shape(&c[bad]);
        prefill_text(&eff, c[bad].causal, &c[bad].variant, sh, sizeof sh);
        /* the context's message belongs to calls on the context only */
        const char *msg = strcmp(what, "attn_prepare") == 0 || strcmp(what, "attn_forward") == 0
                              ? attn_last_error(ctx)
                          : tool_refusal(what, "(no detail beyond any message above)");
        char where[300];
        snprintf(where, sizeof where, "%s %s", sh, attn_dtype_name(c[bad].dtype));
        tool_error("attn-bench", where, what, st, msg);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "shape", sh);
        cJSON_AddStringToObject(e, "dtype", attn_dtype_name(c[bad].dtype));
        cJSON_AddStringToObject(e, "step", what);
        cJSON_AddStringToObject(e, "status", attn_status_name(st));
        cJSON_AddStringToObject(e, "message", msg);
        cJSON_AddItemToArray(errors, e);
        failed = 1;
    }
    for (int k = 0; k < n && st == ATTN_SUCCESS; k++) {
        const prefill_row *r = &runs[k].r;
        if (r->checked && !r->chk.passed) {
            char sh[256];
            prefill_text(&r->s, r->causal, &r->variant, sh, sizeof sh);
            fprintf(stderr, "attn-bench: CHECK FAILED: %s %s: max error %.3e is %.3g times "
                    "the tolerance; %zu outputs NaN or inf\n", sh, attn_dtype_name(r->dtype),
                    r->chk.max_error, r->chk.max_ratio, r->chk.nonfinite);
            failed = 1;
        }
        if (how->format == BENCH_TEXT) prefill_text_row(r, how->peak, how->ratios);
        else if (how->format == BENCH_CSV) prefill_csv_row(r, how->peak);
        cJSON_AddItemToArray(results, prefill_json_row(r, how->peak));
    }
    for (int k = 0; k < n; k++) {
        if (rows) rows[k] = runs[k].r;
        run_free(&runs[k]);
    }
    free(runs);
    return failed;
}
