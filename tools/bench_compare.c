/* bench_compare.c -- attn-bench --compare-materialized: for each problem,
 * the tiled path (attn_forward) and the materialized one (CLBlast GEMMs
 * around an S x S buffer) timed interleaved with clpeak's method, their
 * speed ratio, the device memory each needed and how far their results
 * differ; then the attention layer with its time split into projections and
 * attention. Uses only attn.h, OpenCL and cJSON. */
#define _POSIX_C_SOURCE 200809L
#include "bench_compare.h"
#include "bench_options.h"
#include "common.h"
#include "tool_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)

typedef struct crow {
    attn_problem p;
    attn_plan_info plan;
    double flops;
    int reps_t, reps_m;
    double tiled_ms, mat_ms;      /* medians */
    attn_time_spread tiled, mat;  /* their runs' spread */
    int mat_ok;                   /* 0: refused or failed, why in note */
    char note[400];
    double tensor_bytes;          /* Q, K, V, O: both paths need them */
    size_t ws_t, ws_m;            /* each path's own device buffers */
    double max_diff, diff_ratio;  /* |tiled - materialized|, and over 2 x tolerance */
    int layer_ok, d_model, layer_reps;
    double proj_ms, attn_ms;      /* layer medians */
    char failure[400];            /* why the row fails the run (paths differ, layer failed) */
} crow;

/* Reps for BENCH_TARGET_MS per path, or the fixed count (--reps). */
static int calibrated(int fixed, double ms)
{
    return tool_reps(fixed, BENCH_TARGET_MS, ms, BENCH_MIN_REPS, BENCH_MAX_REPS);
}

/* n values in [lo, hi) of type t from *rng in a new buffer; NULL on failure. */
static cl_mem random_buffer(attn_context *ctx, attn_dtype t, size_t n, uint64_t *rng, float lo,
                            float hi)
{
    cl_mem m;
    const char *what;
    attn_status st = tool_random_input(ctx, t, n, rng, lo, hi, CL_MEM_READ_WRITE, NULL, &m, &what);
    return st == ATTN_SUCCESS ? m : NULL;
}

typedef attn_status (*forward_fn)(attn_context *, const attn_problem *, const attn_tensor *,
                                  const attn_tensor *, const attn_tensor *, const attn_tensor *,
                                  const attn_lengths *, cl_mem, cl_event *);

/* One path's call, for tool_timed. */
typedef struct path_run {
    attn_context *ctx;
    forward_fn fn;
    const attn_problem *p;
    const attn_tensor *t, *o;
} path_run;

/* Path i (0 tiled, 1 materialized) of the two in arg. */
static attn_status run_path(void *arg, int i)
{
    const path_run *r = (const path_run *)arg + i;
    return r->fn(r->ctx, r->p, &r->t[0], &r->t[1], &r->t[2], r->o, NULL, NULL, NULL);
}

/* One run of path i, timed by tool_timed. */
static attn_status timed(attn_context *ctx, path_run *paths, int i, double *ms)
{
    return tool_timed(ctx, run_path, paths, i, ms);
}

/* The workspace path i needs: released, one run, then read. */
static attn_status workspace_of(attn_context *ctx, path_run *paths, int i, size_t *bytes)
{
    double ms;
    attn_status st = attn_context_release_workspace(ctx);
    if (st == ATTN_SUCCESS) st = timed(ctx, paths, i, &ms);
    if (st == ATTN_SUCCESS) st = attn_context_workspace_bytes(ctx, bytes);
    return st;
}

/* Largest |a - b| and the largest ratio to 2 x (atol + rtol |b|). */
static int compare_outputs(attn_context *ctx, const attn_problem *p, cl_mem a, cl_mem b,
                           size_t n, crow *r)
{
    const size_t es = attn_dtype_size(p->dtype);
    void *ra = malloc(n * es), *rb = malloc(n * es);
    float *fa = malloc(n * sizeof *fa), *fb = malloc(n * sizeof *fb);
    int ok = ra && rb && fa && fb &&
             clEnqueueReadBuffer(attn_context_queue(ctx), a, CL_TRUE, 0, n * es, ra, 0, NULL,
                                 NULL) == CL_SUCCESS &&
             clEnqueueReadBuffer(attn_context_queue(ctx), b, CL_TRUE, 0, n * es, rb, 0, NULL,
                                 NULL) == CL_SUCCESS;
    if (ok) {
        double atol, rtol;
        attn_tolerance(p->dtype, &atol, &rtol);
        attn_convert_to_f32(p->dtype, ra, fa, n);
        attn_convert_to_f32(p->dtype, rb, fb, n);
        r->max_diff = r->diff_ratio = 0;
        for (size_t i = 0; i < n; i++) {
            const double d = fabs((double)fa[i] - fb[i]);
            const double ratio = isfinite(d) ? d / (2 * (atol + rtol * fabs((double)fb[i])))
                                             : INFINITY;
            if (!(d <= r->max_diff)) r->max_diff = d;
            if (!(ratio <= r->diff_ratio)) r->diff_ratio = ratio;
        }
    }
    free(ra), free(rb), free(fa), free(fb);
    return ok;
}

/* Both paths on one problem. Returns 0 or 1 (failed). */
static int run_paths(attn_context *ctx, const bench_compare_options *o, crow *r)
{
    const attn_problem *p = &r->p;
    const size_t es = attn_dtype_size(p->dtype);
    size_t nq = 0, nkv = 0;
    const char *step = "shape";
    attn_status st = tool_shape_elements(p, &nq, &nkv, &step);
    /* compare_outputs' copies of both outputs, as stored and as floats */
    if (st == ATTN_SUCCESS)
        st = tool_host_holds(2.0 * (double)nq * (double)(es + sizeof(float)), &step);
    const int fits = st == ATTN_SUCCESS;
    r->tensor_bytes = (double)(2 * nq + 2 * nkv) * (double)es;
    uint64_t rng = TOOL_SEED;
    cl_mem bq = fits ? random_buffer(ctx, p->dtype, nq, &rng, -1, 1) : NULL;
    cl_mem bk = fits ? random_buffer(ctx, p->dtype, nkv, &rng, -1, 1) : NULL;
    cl_mem bv = fits ? random_buffer(ctx, p->dtype, nkv, &rng, -1, 1) : NULL;
    cl_mem bo_t = fits ? random_buffer(ctx, p->dtype, nq, &rng, 0, 0) : NULL;
    cl_mem bo_m = fits ? random_buffer(ctx, p->dtype, nq, &rng, 0, 0) : NULL;
    double *tt = NULL, *tm = NULL;
    int failed = 1;
    tool_timing_new_series();
    if (!fits) goto done;
    st = ATTN_ERROR_OUT_OF_MEMORY;
    step = "device buffers";
    if (!bq || !bk || !bv || !bo_t || !bo_m) goto done;
    const attn_tensor t[3] = {tool_bhsd(bq, p->q_heads, p->q_len, p->head_dim),
                              tool_bhsd(bk, p->kv_heads, p->kv_len, p->head_dim),
                              tool_bhsd(bv, p->kv_heads, p->kv_len, p->head_dim)};
    attn_tensor ot = t[0], om = t[0];
    ot.buffer = bo_t, om.buffer = bo_m;
    path_run paths[2] = {{ctx, attn_forward, p, t, &ot},
                         {ctx, attn_forward_materialized, p, t, &om}};

    /* warm-ups (with the workspace each needs), then a calibration run each */
    double ms_t = 0, ms_m = 0;
    step = "attn_prepare";
    if ((st = attn_prepare(ctx, p, &r->plan)) != ATTN_SUCCESS) goto done;
    step = "attn_forward";
    if ((st = workspace_of(ctx, paths, 0, &r->ws_t)) != ATTN_SUCCESS ||
        (st = timed(ctx, paths, 0, &ms_t)) != ATTN_SUCCESS)
        goto done;
    r->mat_ok = workspace_of(ctx, paths, 1, &r->ws_m) == ATTN_SUCCESS &&
                timed(ctx, paths, 1, &ms_m) == ATTN_SUCCESS;
    if (!r->mat_ok) /* a refusal (S x S beyond the max allocation) is a result, not a failure */
        snprintf(r->note, sizeof r->note, "%s", attn_last_error(ctx));
    /* workspace_of released attn_forward's scratch after measuring it: made
     * again here, untimed, not in the first timed run */
    double untimed;
    if ((st = timed(ctx, paths, 0, &untimed)) != ATTN_SUCCESS) goto done;
    r->reps_t = calibrated(o->reps, ms_t);
    r->reps_m = r->mat_ok ? calibrated(o->reps, ms_m) : 0;
    /* as many of each, so that neither runs alone once the other is done */
    if (r->mat_ok && r->reps_m < r->reps_t) r->reps_t = r->reps_m;
    if (r->mat_ok) r->reps_m = r->reps_t;
    tt = malloc(sizeof *tt * (size_t)r->reps_t);
    tm = malloc(sizeof *tm * (size_t)(r->reps_m + 1));
    step = "host allocation";
    if (!tt || !tm) goto done;
    /* interleaved, so that both see the same machine (it is shared), and
     * each first in every other round (a round's first run measured slower) */
    double *const times[2] = {tt, tm};
    tool_rounds rounds = {r->mat_ok ? 2 : 1, r->reps_t, run_path, NULL, NULL, paths, times, 0};
    if ((st = tool_time_rounds(ctx, &rounds)) != ATTN_SUCCESS) {
        step = rounds.failed ? "attn_forward_materialized" : "attn_forward";
        goto done;
    }
    r->tiled = attn_time_spread_of(tt, r->reps_t);
    r->tiled_ms = r->tiled.median_ms;
    if (r->mat_ok) r->mat = attn_time_spread_of(tm, r->reps_m);
    r->mat_ms = r->mat_ok ? r->mat.median_ms : 0;
    step = "comparing the outputs";
    st = ATTN_ERROR_OPENCL;
    if (r->mat_ok && !compare_outputs(ctx, p, bo_t, bo_m, nq, r)) goto done;
    st = ATTN_SUCCESS;
    failed = r->mat_ok && !(r->diff_ratio <= 1.0);
    if (failed) {
        snprintf(r->failure, sizeof r->failure, "tiled and materialized results differ by %.3g, "
                 "%.3g times twice the tolerance", r->max_diff, r->diff_ratio);
        fprintf(stderr, "attn-bench: %s\n", r->failure);
    }
done:
    if (st != ATTN_SUCCESS) {
        const char *msg = tool_refusal(step, attn_last_error(ctx));
        tool_error("attn-bench", NULL, step, st, msg);
        tool_error_text(r->note, sizeof r->note, step, st, msg);
    }
    cl_mem all[] = {bq, bk, bv, bo_t, bo_m};
    for (int i = 0; i < 5; i++)
        if (all[i]) clReleaseMemObject(all[i]);
    free(tt), free(tm);
    attn_context_release_workspace(ctx); /* the next problem measures its own */
    return failed;
}

/* The layer with d_model = Hq * D on the same shape. Returns 0 or 1. */
static int run_layer(attn_context *ctx, const bench_compare_options *o, crow *r)
{
    const attn_problem *p = &r->p;
    const int dm = p->q_heads * p->head_dim;
    const size_t qd = (size_t)p->q_heads * p->head_dim, kd = (size_t)p->kv_heads * p->head_dim;
    const size_t rows = (size_t)p->batch * p->q_len, n = rows * (size_t)dm;
    attn_layer_config cfg = {dm, p->q_heads, p->kv_heads, p->head_dim, p->dtype, p->causal, 0};
    float *w[4] = {malloc(qd * dm * sizeof(float)), malloc(kd * dm * sizeof(float)),
                   malloc(kd * dm * sizeof(float)), malloc(qd * dm * sizeof(float))};
    const size_t wn[4] = {qd * dm, kd * dm, kd * dm, qd * dm};
    attn_layer *layer = NULL;
    cl_mem hidden = NULL, out = NULL;
    double *tp = NULL, *ta = NULL;
    attn_status st = ATTN_ERROR_OUT_OF_MEMORY;
    const char *step = "host allocation";
    r->d_model = dm;
    for (int i = 0; i < 4; i++)
        if (!w[i]) goto done;
    uint64_t rng = TOOL_SEED + 1;
    for (int i = 0; i < 4; i++) {
        const float a = 1.0f / sqrtf((float)(i < 3 ? dm : (int)qd)); /* PyTorch's init range */
        for (size_t j = 0; j < wn[i]; j++) w[i][j] = attn_rand_uniform(&rng, -a, a);
    }
    step = "attn_layer_create";
    if ((st = attn_layer_create(ctx, &cfg, w[0], w[1], w[2], w[3], &layer)) != ATTN_SUCCESS)
        goto done;
    step = "device buffers";
    st = ATTN_ERROR_OUT_OF_MEMORY;
    hidden = random_buffer(ctx, p->dtype, n, &rng, -1, 1);
    out = random_buffer(ctx, p->dtype, n, &rng, 0, 0);
    if (!hidden || !out) goto done;
    attn_layer_timing tm;
    step = "attn_layer_forward";
    /* one warm-up, which also calibrates (an over-estimate: it builds kernels) */
    if ((st = attn_layer_forward(layer, p->batch, p->q_len, hidden, 0, out, 0, NULL, &tm, NULL)))
        goto done;
    r->layer_reps = calibrated(o->reps, tm.projection_ms + tm.attention_ms);
    tp = malloc(sizeof *tp * (size_t)r->layer_reps);
    ta = malloc(sizeof *ta * (size_t)r->layer_reps);
    if (!tp || !ta) {
        st = ATTN_ERROR_OUT_OF_MEMORY;
        goto done;
    }
    for (int i = 0; i < r->layer_reps; i++) {
        if ((st = attn_layer_forward(layer, p->batch, p->q_len, hidden, 0, out, 0, NULL, &tm,
                                     NULL)) != ATTN_SUCCESS)
            goto done;
        tp[i] = tm.projection_ms;
        ta[i] = tm.attention_ms;
    }
    r->proj_ms = attn_time_spread_of(tp, r->layer_reps).median_ms;
    r->attn_ms = attn_time_spread_of(ta, r->layer_reps).median_ms;
    r->layer_ok = 1;
done:
    if (st != ATTN_SUCCESS) {
        char where[48];
        snprintf(where, sizeof where, "layer d_model=%d", dm);
        tool_error("attn-bench", where, step, st, attn_last_error(ctx));
        char text[300];
        tool_error_text(text, sizeof text, step, st, attn_last_error(ctx));
        snprintf(r->failure + strlen(r->failure), sizeof r->failure - strlen(r->failure),
                 "%s%s: %s", r->failure[0] ? "; " : "", where, text);
    }
    attn_layer_release(layer);
    if (hidden) clReleaseMemObject(hidden);
    if (out) clReleaseMemObject(out);
    for (int i = 0; i < 4; i++) free(w[i]);
    free(tp), free(ta);
    return st != ATTN_SUCCESS;
}

/* ---- output ---- */

static void print_text(const crow *r, int header)
{
    if (header) {
        printf("%-36s %-5s %9s %6s %9s %6s %8s %9s %9s %9s | %7s %9s %9s\n", "shape", "dtype",
               "tiled ms", "IQR", "mat. ms", "IQR", "speedup", "tiled MiB", "mat. MiB",
               "max diff", "d_model", "proj. ms", "attn ms");
    }
    char sh[128], mat[16] = "refused", ratio[16] = "-", mmib[16] = "-", diff[16] = "-";
    char miqr[16] = "-";
    char proj[16] = "-", attn[16] = "-";
    tool_shape_text(&r->p, sh, sizeof sh);
    if (r->mat_ok) {
        snprintf(mat, sizeof mat, "%.2f", r->mat_ms);
        snprintf(miqr, sizeof miqr, "%.1f%%", 100 * attn_time_spread_iqr(&r->mat));
        snprintf(ratio, sizeof ratio, "%.1fx", r->mat_ms / r->tiled_ms);
        snprintf(mmib, sizeof mmib, "%.1f", (r->tensor_bytes + (double)r->ws_m) / MIB);
        snprintf(diff, sizeof diff, "%.2e", r->max_diff);
    }
    if (r->layer_ok) {
        snprintf(proj, sizeof proj, "%.2f", r->proj_ms);
        snprintf(attn, sizeof attn, "%.2f", r->attn_ms);
    }
    printf("%-36s %-5s %9.2f %5.1f%% %9s %6s %8s %9.1f %9s %9s | %7d %9s %9s\n", sh,
           attn_dtype_name(r->p.dtype), r->tiled_ms, 100 * attn_time_spread_iqr(&r->tiled), mat,
           miqr, ratio,
           (r->tensor_bytes + (double)r->ws_t) / MIB, mmib, diff, r->d_model, proj, attn);
    if (!r->mat_ok) printf("  materialized: %s\n", r->note);
    fflush(stdout);
}

static void print_csv(const crow *r, int header)
{
    if (header)
        printf("batch,q_heads,kv_heads,head_dim,q_len,kv_len,dtype,causal,family,params_source,"
               "median_ms,materialized_ms,speedup_vs_materialized,tensor_bytes,"
               "tiled_workspace_bytes,materialized_workspace_bytes,max_diff,d_model,"
               "layer_projection_ms,layer_attention_ms,min_ms,q1_ms,q3_ms,max_ms,iqr_fraction,"
               "materialized_min_ms,materialized_q1_ms,materialized_q3_ms,materialized_max_ms,"
               "materialized_iqr_fraction\n");
    printf("%d,%d,%d,%d,%d,%d,%s,%d,%s,%s,%.4f,", r->p.batch, r->p.q_heads, r->p.kv_heads,
           r->p.head_dim, r->p.q_len, r->p.kv_len, attn_dtype_name(r->p.dtype), r->p.causal,
           r->plan.family, r->plan.source, r->tiled_ms);
    if (r->mat_ok) printf("%.4f,%.3f,", r->mat_ms, r->mat_ms / r->tiled_ms);
    else printf(",,");
    printf("%.0f,%zu,", r->tensor_bytes, r->ws_t);
    if (r->mat_ok) printf("%zu,%.3e,", r->ws_m, r->max_diff);
    else printf(",,");
    printf("%d,", r->d_model);
    if (r->layer_ok) printf("%.4f,%.4f,", r->proj_ms, r->attn_ms);
    else printf(",,");
    printf("%.4f,%.4f,%.4f,%.4f,%.4f,", r->tiled.min_ms, r->tiled.q1_ms, r->tiled.q3_ms, r->tiled.max_ms,
           attn_time_spread_iqr(&r->tiled));
    if (r->mat_ok)
        printf("%.4f,%.4f,%.4f,%.4f,%.4f\n", r->mat.min_ms, r->mat.q1_ms, r->mat.q3_ms, r->mat.max_ms,
               attn_time_spread_iqr(&r->mat));
    else printf(",,,,\n");
    fflush(stdout);
}

static cJSON *json_row(const crow *r, double peak)
{
    cJSON *j = cJSON_CreateObject();
    tool_json_problem(j, &r->p);
    tool_json_plan(j, &r->plan);
    tool_json_times(j, r->reps_t, &r->tiled, -1, r->flops, peak);
    cJSON_AddNullToObject(j, "max_error"); /* not against the reference here: see max_diff */
    /* the paths against each other (more than twice the tolerance fails) */
    if (r->mat_ok)
        cJSON_AddStringToObject(j, "check", r->diff_ratio <= 1.0 ? "passed" : "failed");
    else cJSON_AddNullToObject(j, "check");
    cJSON_AddNumberToObject(j, "tensor_bytes", r->tensor_bytes);
    cJSON_AddNumberToObject(j, "tiled_workspace_bytes", (double)r->ws_t);
    if (r->mat_ok) {
        cJSON_AddNumberToObject(j, "materialized_reps", r->reps_m);
        cJSON_AddNumberToObject(j, "materialized_ms", r->mat_ms);
        cJSON_AddNumberToObject(j, "materialized_min_ms", r->mat.min_ms);
        cJSON_AddNumberToObject(j, "materialized_q1_ms", r->mat.q1_ms);
        cJSON_AddNumberToObject(j, "materialized_q3_ms", r->mat.q3_ms);
        cJSON_AddNumberToObject(j, "materialized_max_ms", r->mat.max_ms);
        cJSON_AddNumberToObject(j, "materialized_iqr_fraction", attn_time_spread_iqr(&r->mat));
        cJSON_AddNumberToObject(j, "speedup_vs_materialized", r->mat_ms / r->tiled_ms);
        cJSON_AddNumberToObject(j, "materialized_workspace_bytes", (double)r->ws_m);
        cJSON_AddNumberToObject(j, "max_diff_vs_materialized", r->max_diff);
    } else {
        cJSON_AddNullToObject(j, "materialized_ms");
        cJSON_AddNullToObject(j, "speedup_vs_materialized");
        cJSON_AddNullToObject(j, "materialized_workspace_bytes");
        cJSON_AddNullToObject(j, "max_diff_vs_materialized");
        cJSON_AddStringToObject(j, "materialized_refused", r->note);
    }
    if (r->layer_ok) {
        cJSON_AddNumberToObject(j, "layer_d_model", r->d_model);
        cJSON_AddNumberToObject(j, "layer_reps", r->layer_reps);
        cJSON_AddNumberToObject(j, "layer_projection_ms", r->proj_ms);
        cJSON_AddNumberToObject(j, "layer_attention_ms", r->attn_ms);
    }
    return j;
}

/* An entry of the JSON's errors: the shape and why. */
static void add_error(cJSON *errors, const attn_problem *p, const char *message)
{
    char sh[128];
    tool_shape_text(p, sh, sizeof sh);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "shape", sh);
    cJSON_AddStringToObject(e, "message", message);
    cJSON_AddItemToArray(errors, e);
}

int bench_compare(attn_context *ctx, const attn_problem *problems, size_t n,
                  const bench_compare_options *o, cJSON *results, cJSON *errors)
{
    int failed = 0, rows = 0;
    if (o->format == 0)
        printf("tiled = attn_forward, mat. = attn_forward_materialized (CLBlast GEMMs); speedup = "
               "mat. ms / tiled ms; MiB = Q, K, V, O plus each path's own buffers (CLBlast's "
               "temporary among them); layer: d_model = Hq * D, medians of its projections "
               "and attention\n");
    for (size_t i = 0; i < n; i++) {
        crow r;
        memset(&r, 0, sizeof r);
        r.p = problems[i];
        r.flops = attn_problem_flops(&r.p, NULL);
        int bad = run_paths(ctx, o, &r);
        if (bad && !r.tiled_ms) { /* the tiled path itself failed: no row */
            add_error(errors, &r.p, r.note);
            failed = 1;
            continue;
        }
        if (o->layer) bad |= run_layer(ctx, o, &r);
        failed |= bad;
        if (r.failure[0]) add_error(errors, &r.p, r.failure); /* a row that fails the run */
        if (o->format == 0) print_text(&r, rows++ == 0);
        else if (o->format == 1) print_csv(&r, rows++ == 0);
        cJSON_AddItemToArray(results, json_row(&r, o->peak));
    }
    return failed;
}
