/* attn-bench -- times attn_forward on the DESIGN benchmark shapes (or one
 * shape from the command line) with clpeak's method, reports GFLOP/s and the
 * fraction of the device's measured fp32 peak, and checks each result
 * against the CPU reference. Uses only attn.h, OpenCL and cJSON. */
#define _POSIX_C_SOURCE 200809L
#include "attn.h"
#include "bench_decode.h"
#include "bench_compare.h"
#include "bench_options.h"
#include "bench_report.h"
#include "common.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reference's work is bounded by this many flops per host thread: it
 * ran at about 10 GFLOP/s per Zen 5 core (the S=4096, D=64 prefill shape,
 * 17 GFLOP, in 1.6 s), so at most ~6 s, or ~20 s on a slower host; larger
 * shapes are not checked. */
#define CHECK_FLOPS_PER_THREAD 6e10

/* DESIGN "Benchmark shapes", prefill. */
static const prefill_shape prefill_set[] = {
    {1, 8, 2, 64, 512, 512},    {1, 8, 2, 64, 1024, 1024},  {1, 8, 2, 64, 2048, 2048},
    {1, 8, 2, 64, 4096, 4096},  {1, 32, 8, 128, 1024, 1024}, {1, 32, 8, 128, 2048, 2048},
};

/* The one shape the options describe; 0 when none was given. */
static int custom_shape(const bench_options *o, prefill_shape *s)
{
    if (!o->batch && !o->q_heads && !o->kv_heads && !o->head_dim && !o->seq && !o->q_len &&
        !o->kv_len)
        return 0;
    s->batch = o->batch ? o->batch : 1;
    s->q_heads = o->q_heads ? o->q_heads : 8;
    s->kv_heads = o->kv_heads ? o->kv_heads : (s->q_heads % 4 == 0 ? s->q_heads / 4 : s->q_heads);
    s->head_dim = o->head_dim ? o->head_dim : 64;
    int q = o->seq ? o->seq : o->q_len, kv = o->seq ? o->seq : o->kv_len;
    s->q_len = q ? q : kv ? kv : 1024;
    s->kv_len = kv ? kv : s->q_len;
    return 1;
}

/* ---- the work ---- */

static int mul_ok(size_t *acc, size_t f)
{
    if (f && *acc > SIZE_MAX / f) return 0;
    *acc *= f;
    return 1;
}

/* A library failure: status name and the context's message, on stderr. */
static void report_failure(const char *what, attn_status st, const attn_context *ctx)
{
    fprintf(stderr, "attn-bench: %s: %s: %s\n", what, attn_status_name(st),
            ctx ? attn_last_error(ctx) : attn_last_create_error());
}

/* One storage type of one shape: its inputs on the host (rounded through
 * the type, so the reference sees what the device sees) and the device,
 * its output, its timings. */
typedef struct dtype_run {
    prefill_row r;
    attn_problem p;
    size_t nq, nkv, esize;
    float *hq, *hk, *hv, *ho;
    void *stage;
    cl_mem bq, bk, bv, bo;
    attn_tensor tq, tk, tv, to;
    double *times;
} dtype_run;

static void dtype_run_free(dtype_run *d)
{
    cl_mem m[4] = {d->bq, d->bk, d->bv, d->bo};
    for (int i = 0; i < 4; i++)
        if (m[i]) clReleaseMemObject(m[i]);
    free(d->hq), free(d->hk), free(d->hv), free(d->ho), free(d->stage), free(d->times);
    memset(d, 0, sizeof *d);
}

/* Inputs uniform [-1, 1) from the fixed seed (the same values for every
 * type), stored in the type; the output buffer. */
static attn_status dtype_run_setup(attn_context *ctx, const bench_options *o, const prefill_shape *s,
                                   attn_dtype t, dtype_run *d, const char **what)
{
    memset(d, 0, sizeof *d);
    prefill_row *r = &d->r;
    r->s = *s;
    r->dtype = t;
    r->causal = o->causal;
    d->p = prefill_problem(s, t, o->causal);
    r->flops = attn_problem_flops(&d->p, NULL);
    r->ratio = 1;
    size_t nq = (size_t)s->batch, nkv = (size_t)s->batch;
    if (!mul_ok(&nq, (size_t)s->q_heads) || !mul_ok(&nq, (size_t)s->q_len) ||
        !mul_ok(&nq, (size_t)s->head_dim) || !mul_ok(&nkv, (size_t)s->kv_heads) ||
        !mul_ok(&nkv, (size_t)s->kv_len) || !mul_ok(&nkv, (size_t)s->head_dim) ||
        nq > SIZE_MAX / 8 || nkv > SIZE_MAX / 8) {
        *what = "shape";
        fprintf(stderr, "attn-bench: the shape's element count overflows size_t\n");
        return ATTN_ERROR_INVALID_ARGUMENT;
    }
    d->nq = nq, d->nkv = nkv, d->esize = attn_dtype_size(t);
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
    attn_status st;
    for (int i = 0; i < 3; i++)
        if ((st = tool_random_input(ctx, t, count[i], &rng, -1, 1, CL_MEM_READ_ONLY, host[i],
                                    dev[i], what)) != ATTN_SUCCESS)
            return st;
    if ((st = tool_output_buffer(ctx, nq * d->esize, &d->bo, what)) != ATTN_SUCCESS) return st;
    d->tq = tool_bhsd(d->bq, s->q_heads, s->q_len, s->head_dim);
    d->tk = tool_bhsd(d->bk, s->kv_heads, s->kv_len, s->head_dim);
    d->tv = tool_bhsd(d->bv, s->kv_heads, s->kv_len, s->head_dim);
    d->to = tool_bhsd(d->bo, s->q_heads, s->q_len, s->head_dim);
    return ATTN_SUCCESS;
}

/* The check: the last run's output against the reference. */
static attn_status dtype_run_check(attn_context *ctx, dtype_run *d, const char **what)
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
    float *ref = malloc(d->nq * sizeof(float));
    if (!ref) {
        *what = "host allocation";
        return ATTN_ERROR_OUT_OF_MEMORY;
    }
    *what = "attn_reference_forward";
    st = tool_reference(&d->p, d->hq, d->hk, d->hv, ref);
    if (st == ATTN_SUCCESS) {
        r->checked = 1;
        tool_check_output(r->dtype, d->ho, ref, d->nq, &r->chk);
    }
    free(ref);
    return st;
}

/* The types of one shape, for the timing loop's runs. */
typedef struct bench_job {
    attn_context *ctx;
    const dtype_run *runs;
} bench_job;

/* Runs one shape in each of the n storage types: clpeak's method (an
 * untimed warm-up, a calibration run, enough reps for BENCH_TARGET_MS at their
 * mean time), the types timed interleaved with the order rotating each
 * round, so that their ratios come from one run; then each checked. *failed
 * is the index of the type whose step *what failed, when the result is not
 * ATTN_SUCCESS. */
static attn_status run_forward(void *arg, int i)
{
    const bench_job *b = arg;
    const dtype_run *d = &b->runs[i];
    return attn_forward(b->ctx, &d->p, &d->tq, &d->tk, &d->tv, &d->to, NULL, NULL, NULL);
}

static attn_status bench_shape(attn_context *ctx, const bench_options *o, const prefill_shape *s,
                               dtype_run *runs, int n, int *failed, const char **what)
{
    attn_status st = ATTN_SUCCESS;
    bench_job job = {ctx, runs};
    double sum_ms = 0, *times[BENCH_MAX_DTYPES];
    for (int i = 0; i < n; i++) {
        dtype_run *d = &runs[i];
        *failed = i;
        if ((st = dtype_run_setup(ctx, o, s, o->dtypes[i], d, what)) != ATTN_SUCCESS) return st;
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
        tool_reps(o->reps, BENCH_TARGET_MS * n, sum_ms, BENCH_MIN_REPS, BENCH_MAX_REPS);
    for (int i = 0; i < n; i++) {
        *failed = i;
        if (!(times[i] = runs[i].times = malloc((size_t)reps * sizeof(double)))) {
            *what = "host allocation";
            return ATTN_ERROR_OUT_OF_MEMORY;
        }
    }
    *what = "attn_forward";
    tool_rounds rounds = {n, reps, run_forward, NULL, NULL, &job, times, 0};
    st = tool_time_rounds(ctx, &rounds);
    *failed = rounds.failed;
    if (st != ATTN_SUCCESS) return st;
    for (int i = 0; i < n; i++) {
        prefill_row *r = &runs[i].r;
        r->reps = reps;
        r->spread = attn_time_spread_of(runs[i].times, reps);
        r->min_ms = r->spread.min_ms;
        r->median_ms = r->spread.median_ms;
        r->gflops = r->median_ms > 0 ? r->flops / (r->median_ms * 1e6) : 0;
        r->ratio = runs[0].r.median_ms > 0 ? r->median_ms / runs[0].r.median_ms : 0;
    }
    if (!o->check || runs[0].r.flops > CHECK_FLOPS_PER_THREAD * tool_host_threads()) return st;
    for (int i = 0; i < n; i++) {
        *failed = i;
        if ((st = dtype_run_check(ctx, &runs[i], what)) != ATTN_SUCCESS) return st;
    }
    return st;
}

int main(int argc, char **argv)
{
    bench_options o;
    bench_options_init(&o);
    int rc = bench_options_parse(argc, argv, &o);
    if (rc >= 0) return rc;
    if (o.compare && !attn_has_clblast()) {
        fprintf(stderr, "attn-bench: --compare-materialized needs CLBlast; this libattn was built "
                        "without it (ATTN_WITH_CLBLAST)\n");
        return EXIT_FAILURE;
    }

    prefill_shape custom;
    const prefill_shape *shapes = prefill_set;
    size_t nshapes = sizeof prefill_set / sizeof prefill_set[0];
    const int have_custom = custom_shape(&o, &custom);
    if (have_custom && o.decode) { /* decode's defaults: DESIGN's decode shape */
        custom.batch = o.batch ? o.batch : 4;
        custom.q_heads = o.q_heads ? o.q_heads : 32;
        custom.kv_heads = o.kv_heads ? o.kv_heads : custom.q_heads % 4 ? custom.q_heads
                                                                        : custom.q_heads / 4;
        custom.head_dim = o.head_dim ? o.head_dim : 128;
        custom.q_len = o.q_len ? o.q_len : 1;
        custom.kv_len = o.kv_len ? o.kv_len : o.seq ? o.seq : 4096;
    }
    if (have_custom) {
        if (custom.q_heads % custom.kv_heads != 0) {
            fprintf(stderr, "attn-bench: --q-heads (%d) must be a multiple of --kv-heads (%d)\n"
                    "Try 'attn-bench --help'.\n", custom.q_heads, custom.kv_heads);
            return 2;
        }
        shapes = &custom;
        nshapes = 1;
    }

    attn_context *ctx = NULL;
    attn_status st = attn_context_create(o.device, &ctx);
    if (st != ATTN_SUCCESS) {
        report_failure("attn_context_create", st, NULL);
        return EXIT_FAILURE;
    }
    /* The tool checks on its own, outside the timed runs; the library's
     * check mode (ATTN_CHECK=1) would put the reference inside them. */
    attn_context_set_check(ctx, 0);

    int failed = 0;
    device_facts dev;
    bench_read_device(ctx, &dev);
    if (o.format == BENCH_TEXT) {
        printf("attn-bench %s (%s CLBlast): device %s / %s (%s, %u compute units, driver %s)\n",
               attn_version_string(), attn_has_clblast() ? "with" : "without", dev.platform,
               dev.name, dev.type, (unsigned)dev.compute_units, dev.driver);
        fflush(stdout);
    }

    /* The peak before the runs (the fractions use it) and after them: a
     * machine shared with other work shows as the two disagreeing. */
    double peak = 0, peak_end = 0;
    st = attn_device_peak_gflops(ctx, &peak);
    if (st != ATTN_SUCCESS) {
        report_failure("attn_device_peak_gflops", st, ctx);
        peak = 0;
        failed = 1;
    }
    char types[32] = "";
    for (int i = 0; i < o.ndtypes; i++)
        snprintf(types + strlen(types), sizeof types - strlen(types), "%s%s", i ? "," : "",
                 attn_dtype_name(o.dtypes[i]));
    const int ratios = o.ndtypes > 1;
    if (o.format == BENCH_TEXT) {
        if (peak > 0) printf("fp32 FMA peak: %.1f GFLOP/s (before the runs)\n", peak);
        printf("dtype %s%s, seed %u, check %s\n", types,
               ratios ? " (interleaved; ratio = median time / the first type's)" : "", TOOL_SEED,
               o.check ? "on" : "off");
        if (!o.decode && !o.compare) prefill_text_header(ratios);
    } else if (o.format == BENCH_CSV && !o.decode && !o.compare) {
        prefill_csv_header();
    }

    cJSON *results = cJSON_CreateArray(), *errors = cJSON_CreateArray();
    cJSON *warnings = cJSON_CreateArray();
    if (o.decode) {
        bench_decode_config dc = {(int)o.format, {ATTN_F32}, o.ndtypes, o.reps, o.check,
                                  o.splits, 0, 0, 0, 0, 0, 0};
        memcpy(dc.dtypes, o.dtypes, sizeof o.dtypes);
        if (have_custom) {
            dc.batch = custom.batch, dc.q_heads = custom.q_heads, dc.kv_heads = custom.kv_heads;
            dc.head_dim = custom.head_dim, dc.q_len = custom.q_len, dc.kv_len = custom.kv_len;
        }
        failed |= bench_decode(ctx, &dc, peak, results, errors) != 0;
        nshapes = 0;
    } else if (o.compare) { /* the comparison's own rows instead of the plain ones */
        const bench_compare_options co = {o.reps, (int)o.format, peak, 1};
        attn_problem *probs = calloc(nshapes, sizeof *probs);
        for (size_t i = 0; probs && i < nshapes; i++) {
            const prefill_shape *s = &shapes[i];
            const attn_problem p = {.batch = s->batch, .q_heads = s->q_heads,
                                    .kv_heads = s->kv_heads, .head_dim = s->head_dim,
                                    .q_len = s->q_len, .kv_len = s->kv_len, .dtype = o.dtypes[0],
                                    .causal = o.causal, .scale = 0.0f};
            probs[i] = p;
        }
        failed |= !probs || bench_compare(ctx, probs, nshapes, &co, results, errors);
        free(probs);
        nshapes = 0;
    }
    for (size_t i = 0; i < nshapes; i++) {
        dtype_run runs[BENCH_MAX_DTYPES];
        memset(runs, 0, sizeof runs);
        const char *what = "";
        int bad = 0;
        st = bench_shape(ctx, &o, &shapes[i], runs, o.ndtypes, &bad, &what);
        if (st != ATTN_SUCCESS) {
            char sh[128];
            prefill_shape_text(&shapes[i], o.causal, sh, sizeof sh);
            /* the context's message belongs to calls on the context only */
            const char *msg = strcmp(what, "attn_prepare") == 0 || strcmp(what, "attn_forward") == 0
                                  ? attn_last_error(ctx)
                                  : "(no detail beyond any message above)";
            fprintf(stderr, "attn-bench: %s %s: %s: %s: %s\n", sh, attn_dtype_name(o.dtypes[bad]),
                    what, attn_status_name(st), msg);
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "shape", sh);
            cJSON_AddStringToObject(e, "dtype", attn_dtype_name(o.dtypes[bad]));
            cJSON_AddStringToObject(e, "step", what);
            cJSON_AddStringToObject(e, "status", attn_status_name(st));
            cJSON_AddStringToObject(e, "message", msg);
            cJSON_AddItemToArray(errors, e);
            failed = 1;
        }
        for (int k = 0; k < o.ndtypes && st == ATTN_SUCCESS; k++) {
            const prefill_row *r = &runs[k].r;
            if (r->checked && !r->chk.passed) {
                char sh[128];
                prefill_shape_text(&r->s, r->causal, sh, sizeof sh);
                fprintf(stderr, "attn-bench: CHECK FAILED: %s %s: max error %.3e is %.3g times "
                        "the tolerance; %zu outputs NaN or inf\n", sh, attn_dtype_name(r->dtype),
                        r->chk.max_error, r->chk.max_ratio, r->chk.nonfinite);
                failed = 1;
            }
            if (o.format == BENCH_TEXT) prefill_text_row(r, peak, ratios);
            else if (o.format == BENCH_CSV) prefill_csv_row(r, peak);
            cJSON_AddItemToArray(results, prefill_json_row(r, peak));
        }
        for (int k = 0; k < o.ndtypes; k++) dtype_run_free(&runs[k]);
    }

    if (peak > 0 && attn_device_peak_gflops(ctx, &peak_end) != ATTN_SUCCESS) {
        report_failure("attn_device_peak_gflops", st, ctx);
        peak_end = 0;
        failed = 1;
    }
    const double drift = attn_relative_change(peak, peak_end);
    if (o.format == BENCH_TEXT && peak_end > 0)
        printf("fp32 FMA peak: %.1f GFLOP/s before the runs, %.1f after (%.1f%% apart)\n", peak,
               peak_end, 100 * drift);
    if (drift > ATTN_NOISE_LIMIT)
        bench_warn_noise(warnings, "the fp32 peak was %.1f GFLOP/s before the runs and %.1f after "
                   "(%.0f%% apart, more than %.0f%%): the machine is too noisy to rank results",
                   peak, peak_end, 100 * drift, 100 * ATTN_NOISE_LIMIT);
    bench_check_noise(results, warnings);

    if (o.format == BENCH_JSON) {
        failed |= bench_print_json(&dev, peak, peak_end, drift, results, errors, warnings);
        results = errors = warnings = NULL;
    } else if (o.format == BENCH_TEXT) {
        printf("%s%s\n", failed ? "FAILED: see the messages above" : "all results within tolerance "
               "(or not checked)", cJSON_GetArraySize(warnings) ? "; too noisy to rank (see the "
               "warnings)" : "");
    }
    cJSON_Delete(results);
    cJSON_Delete(errors);
    cJSON_Delete(warnings);
    attn_context_release(ctx);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
