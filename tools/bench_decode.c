/* bench_decode.c -- attn-bench --decode: fills a KV cache per shape and
 * storage type, times attn_decode with each requested number of KV splits
 * (ATTN_PARAMS splits=N, or the heuristic) in each type, all interleaved so
 * that their ratios come from one run, and reports the K/V bytes read per
 * second against the device's copy bandwidth measured in the same run, with
 * each time's spread. Checks each configuration's output against the CPU
 * reference. Uses only attn.h, OpenCL and cJSON. */
#define _POSIX_C_SOURCE 200809L
#include "bench_decode.h"
#include "bench_stats.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SEED 20240501u /* attn-bench's */
#define TARGET_MS 2000.0 /* all configurations' calibrated reps add up to about this */
#define MIN_REPS 5
#define MAX_REPS 1000
#define MAX_CONF (BENCH_MAX_DTYPES * BENCH_MAX_SPLITS)
/* the reference runs single-threaded here: ~2e9 flops is a few seconds */
#define CHECK_FLOPS 4e9
#define COPY_SAMPLES 5 /* copy-bandwidth measurements per shape, interleaved */

typedef struct dshape {
    int batch, q_heads, kv_heads, head_dim, q_len, kv_len;
} dshape;

/* DESIGN "Benchmark shapes", decode. */
static const dshape decode_set[] = {
    {4, 32, 8, 128, 1, 1024}, {4, 32, 8, 128, 1, 4096}, {4, 32, 8, 128, 1, 16384}};

typedef struct dconf {
    int splits;          /* requested; 0 = the heuristic ("auto") */
    int type;            /* index into the config's dtypes */
    attn_plan_info plan; /* params end with the splits actually launched */
    double *times;
    double median_ms, min_ms;
    bench_spread spread;
    double ratio;        /* median / the first type's with the same splits */
    int checked, passed;
    double max_error, max_ratio;
    size_t nonfinite;
} dconf;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static float rng_uniform(uint64_t *s) /* splitmix64, [-1, 1) */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

static void shape_text(const dshape *s, char *buf, size_t size)
{
    snprintf(buf, size, "B=%d Hq=%d Hkv=%d D=%d Sq=%d kv=%d", s->batch, s->q_heads, s->kv_heads,
             s->head_dim, s->q_len, s->kv_len);
}

static void add_error(cJSON *errors, const char *shape, const char *step, attn_status st,
                      const char *msg)
{
    fprintf(stderr, "attn-bench: decode %s: %s: %s: %s\n", shape, step, attn_status_name(st), msg);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "shape", shape);
    cJSON_AddStringToObject(e, "step", step);
    cJSON_AddStringToObject(e, "status", attn_status_name(st));
    cJSON_AddStringToObject(e, "message", msg);
    cJSON_AddItemToArray(errors, e);
}

static void splits_word(const dconf *c, char *buf, size_t size)
{
    if (c->splits) snprintf(buf, size, "%d", c->splits);
    else snprintf(buf, size, "auto");
}

static const char *check_word(const dconf *c)
{
    return !c->checked ? "skipped" : c->passed ? "passed" : "failed";
}

/* The row of one configuration: text or CSV on stdout, and a JSON object
 * into results in every format (attn-bench reads the spread from it). */
static void print_row(const bench_decode_config *cfg, const dshape *s, const dconf *c,
                      double peak, double copy_gbps, int reps, cJSON *results)
{
    const attn_dtype dtype = cfg->dtypes[c->type];
    const int ratios = cfg->ndtypes > 1;
    const double esize = (double)attn_dtype_size(dtype);
    const double bytes = 2.0 * s->batch * s->kv_heads * (double)s->kv_len * s->head_dim * esize;
    double pairs = 0; /* visible (query, key) pairs, bottom-right causal */
    for (int i = 0; i < s->q_len; i++) pairs += (double)(s->kv_len - s->q_len + i + 1);
    const double flops = 4.0 * s->head_dim * pairs * s->batch * s->q_heads;
    const double kv_gbps = c->median_ms > 0 ? bytes / (c->median_ms * 1e6) : 0;
    const double gflops = c->median_ms > 0 ? flops / (c->median_ms * 1e6) : 0;
    const double frac = copy_gbps > 0 ? kv_gbps / copy_gbps : 0;
    const double iqr = bench_iqr_fraction(&c->spread);
    char sh[96], sp[16];
    shape_text(s, sh, sizeof sh);
    splits_word(c, sp, sizeof sp);
    if (cfg->format == 0) {
        char err[32] = "-", check[48] = "skipped", ratio[16] = "";
        if (c->checked) {
            snprintf(err, sizeof err, "%.2e", c->max_error);
            if (c->nonfinite) snprintf(check, sizeof check, "FAILED (%zu NaN/inf)", c->nonfinite);
            else snprintf(check, sizeof check, "%s (%.3g of tol)", c->passed ? "ok" : "FAILED",
                          c->max_ratio);
        }
        if (ratios) snprintf(ratio, sizeof ratio, " %6.3f", c->ratio);
        printf("%-36s %-5s %-6s %-7s %-9s %5d %9.3f %9.3f %9.3f %5.1f%% %9.1f %6.1f%% %8.1f%s  "
               "%-9s %s  [%s]\n", sh, attn_dtype_name(dtype), sp, c->plan.family, c->plan.source,
               reps, c->median_ms, c->spread.min, c->spread.max, 100 * iqr, kv_gbps,
               100.0 * frac, gflops, ratio, err, check, c->plan.params);
    } else if (cfg->format == 1) {
        printf("%d,%d,%d,%d,%d,%d,%s,1,%s,\"%s\",%s,%s,%d,%.4f,%.4f,%.3f,", s->batch, s->q_heads,
               s->kv_heads, s->head_dim, s->q_len, s->kv_len, attn_dtype_name(dtype),
               c->plan.family, c->plan.params, c->plan.source, sp, reps, c->median_ms, c->min_ms,
               gflops);
        if (peak > 0) printf("%.3f,%.4f,", peak, gflops / peak);
        else printf(",,");
        printf("%.3f,%.3f,%.4f,", kv_gbps, copy_gbps, frac);
        if (c->checked) printf("%.3e,%.4g,%zu,", c->max_error, c->max_ratio, c->nonfinite);
        else printf(",,,");
        printf("%s,%.4f,%.4f,%.4f,%.4f,%.4f\n", check_word(c), c->spread.q1, c->spread.q3,
               c->spread.max, iqr, c->ratio);
    }
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "batch", s->batch);
    cJSON_AddNumberToObject(j, "q_heads", s->q_heads);
    cJSON_AddNumberToObject(j, "kv_heads", s->kv_heads);
    cJSON_AddNumberToObject(j, "head_dim", s->head_dim);
    cJSON_AddNumberToObject(j, "q_len", s->q_len);
    cJSON_AddNumberToObject(j, "kv_len", s->kv_len);
    cJSON_AddStringToObject(j, "dtype", attn_dtype_name(dtype));
    cJSON_AddBoolToObject(j, "causal", 1);
    cJSON_AddStringToObject(j, "mode", "decode");
    cJSON_AddStringToObject(j, "family", c->plan.family);
    cJSON_AddStringToObject(j, "params", c->plan.params);
    cJSON_AddStringToObject(j, "params_source", c->plan.source);
    cJSON_AddStringToObject(j, "splits_requested", sp);
    cJSON_AddNumberToObject(j, "reps", reps);
    cJSON_AddNumberToObject(j, "median_ms", c->median_ms);
    cJSON_AddNumberToObject(j, "min_ms", c->min_ms);
    cJSON_AddNumberToObject(j, "q1_ms", c->spread.q1);
    cJSON_AddNumberToObject(j, "q3_ms", c->spread.q3);
    cJSON_AddNumberToObject(j, "max_ms", c->spread.max);
    cJSON_AddNumberToObject(j, "iqr_fraction", iqr);
    cJSON_AddNumberToObject(j, "time_ratio_to_first_dtype", c->ratio);
    cJSON_AddNumberToObject(j, "flops", flops);
    cJSON_AddNumberToObject(j, "gflops", gflops);
    if (peak > 0) {
        cJSON_AddNumberToObject(j, "peak_gflops", peak);
        cJSON_AddNumberToObject(j, "peak_fraction", gflops / peak);
    } else {
        cJSON_AddNullToObject(j, "peak_gflops");
        cJSON_AddNullToObject(j, "peak_fraction");
    }
    cJSON_AddNumberToObject(j, "kv_bytes", bytes);
    cJSON_AddNumberToObject(j, "kv_gbps", kv_gbps);
    if (copy_gbps > 0) {
        cJSON_AddNumberToObject(j, "copy_gbps", copy_gbps);
        cJSON_AddNumberToObject(j, "bandwidth_fraction", frac);
    } else {
        cJSON_AddNullToObject(j, "copy_gbps");
        cJSON_AddNullToObject(j, "bandwidth_fraction");
    }
    if (c->checked) {
        cJSON_AddNumberToObject(j, "max_error", c->max_error);
        cJSON_AddNumberToObject(j, "max_error_ratio", c->max_ratio);
        cJSON_AddNumberToObject(j, "nonfinite", (double)c->nonfinite);
    } else {
        cJSON_AddNullToObject(j, "max_error");
        cJSON_AddNullToObject(j, "max_error_ratio");
        cJSON_AddNullToObject(j, "nonfinite");
    }
    cJSON_AddStringToObject(j, "check", check_word(c));
    cJSON_AddItemToArray(results, j);
    fflush(stdout);
}

/* One decode, timed on the host around the call and clFinish (a split
 * decode is two kernels). */
static attn_status timed(attn_context *ctx, attn_kv_cache *cache, const attn_problem *p,
                         const attn_tensor *q, const attn_tensor *o, double *ms)
{
    double t0 = now_ms();
    attn_status st = attn_decode(ctx, cache, p, q, o, NULL, NULL, NULL);
    if (st != ATTN_SUCCESS) return st;
    if (clFinish(attn_context_queue(ctx)) != CL_SUCCESS) return ATTN_ERROR_OPENCL;
    *ms = now_ms() - t0;
    return ATTN_SUCCESS;
}

static cl_mem upload(attn_context *ctx, const void *data, size_t bytes)
{
    cl_int err;
    cl_mem m = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_WRITE |
                              (data ? CL_MEM_COPY_HOST_PTR : 0), bytes, (void *)data, &err);
    return err == CL_SUCCESS ? m : NULL;
}

/* One storage type of one shape: the inputs (the same values in every
 * type, rounded through it so the reference sees what the device sees),
 * the filled cache, the query and output buffers. */
typedef struct dtype_res {
    attn_dtype dtype;
    attn_problem p;
    size_t esize;
    float *hq, *hk, *hv;
    void *stage;
    cl_mem bq, bo;
    attn_tensor tq, to;
    attn_kv_cache *cache;
} dtype_res;

static void dtype_res_free(dtype_res *r)
{
    attn_kv_cache_release(r->cache);
    if (r->bq) clReleaseMemObject(r->bq);
    if (r->bo) clReleaseMemObject(r->bo);
    free(r->hq), free(r->hk), free(r->hv), free(r->stage);
    memset(r, 0, sizeof *r);
}

static attn_status dtype_res_setup(attn_context *ctx, const dshape *s, attn_dtype t,
                                   dtype_res *r, const char **step)
{
    memset(r, 0, sizeof *r);
    r->dtype = t;
    const attn_problem p = {s->batch, s->q_heads, s->kv_heads, s->head_dim, s->q_len, s->kv_len,
                            t, 1, 0.0f};
    r->p = p;
    const size_t D = (size_t)s->head_dim;
    const size_t nq = (size_t)s->batch * s->q_heads * s->q_len * D;
    const size_t nkv = (size_t)s->batch * s->kv_heads * s->kv_len * D;
    r->esize = attn_dtype_size(t);
    r->hq = malloc(nq * sizeof *r->hq), r->hk = malloc(nkv * sizeof *r->hk);
    r->hv = malloc(nkv * sizeof *r->hv), r->stage = malloc(nkv * r->esize);
    *step = "host allocation";
    if (!r->hq || !r->hk || !r->hv || !r->stage) return ATTN_ERROR_OUT_OF_MEMORY;
    uint64_t rng = SEED;
    float *host[3] = {r->hq, r->hk, r->hv};
    size_t count[3] = {nq, nkv, nkv};
    cl_mem dev[3] = {NULL, NULL, NULL};
    attn_status st = ATTN_ERROR_OUT_OF_MEMORY;
    *step = "uploading the inputs";
    for (int i = 0; i < 3; i++) {
        for (size_t j = 0; j < count[i]; j++) host[i][j] = rng_uniform(&rng);
        attn_convert_from_f32(t, host[i], r->stage, count[i]);
        attn_convert_to_f32(t, r->stage, host[i], count[i]);
        if (!(dev[i] = upload(ctx, r->stage, count[i] * r->esize))) goto done;
    }
    if (!(r->bo = upload(ctx, NULL, nq * r->esize))) goto done;
    r->bq = dev[0];
    dev[0] = NULL;
    const attn_tensor tq = {r->bq, 0, (size_t)s->q_heads * s->q_len * D, (size_t)s->q_len * D, D};
    const attn_tensor tk = {dev[1], 0, (size_t)s->kv_heads * s->kv_len * D, (size_t)s->kv_len * D, D};
    attn_tensor tv = tk;
    tv.buffer = dev[2];
    r->tq = r->to = tq;
    r->to.buffer = r->bo;
    /* the cache, filled with the whole prefix in one append */
    *step = "attn_kv_cache_create";
    if ((st = attn_kv_cache_create(ctx, s->batch, s->kv_heads, s->head_dim, s->kv_len, t,
                                   &r->cache)) != ATTN_SUCCESS)
        goto done;
    *step = "attn_kv_cache_append";
    if ((st = attn_kv_cache_append(r->cache, &tk, &tv, s->kv_len, NULL, NULL)) != ATTN_SUCCESS)
        goto done;
    clFinish(attn_context_queue(ctx));
done:
    for (int i = 0; i < 3; i++)
        if (dev[i]) clReleaseMemObject(dev[i]);
    return st;
}

/* The override for configuration c: the caller's own (ATTN_PARAMS, base),
 * with c's splits (later names win). */
static attn_status select_conf(attn_context *ctx, const char *base, const dconf *c)
{
    char text[512];
    if (!c->splits) return attn_context_set_params(ctx, base);
    snprintf(text, sizeof text, "%s%ssplits=%d", base ? base : "", base && *base ? "," : "",
             c->splits);
    return attn_context_set_params(ctx, text);
}

/* Returns 0 when every configuration ran and passed its check. */
static int run_shape(attn_context *ctx, const bench_decode_config *cfg, const dshape *s,
                     dconf *confs, int nconf, double peak, cJSON *results, cJSON *errors)
{
    double copies[COPY_SAMPLES];
    int ncopies = 0;
    char sh[96];
    shape_text(s, sh, sizeof sh);
    const char *base = getenv("ATTN_PARAMS"); /* the context's own override, read at creation */
    const size_t D = (size_t)s->head_dim;
    const size_t nq = (size_t)s->batch * s->q_heads * s->q_len * D;
    dtype_res res[BENCH_MAX_DTYPES];
    memset(res, 0, sizeof res);
    float *ho = malloc(nq * sizeof *ho), *ref = NULL;
    int failed = 1, reps = 0, bad_type = 0;
    attn_status st = ATTN_SUCCESS;
    const char *step = "host allocation";
    if (!ho) {
        st = ATTN_ERROR_OUT_OF_MEMORY;
        goto done;
    }
    for (int t = 0; t < cfg->ndtypes; t++) {
        bad_type = t;
        if ((st = dtype_res_setup(ctx, s, cfg->dtypes[t], &res[t], &step)) != ATTN_SUCCESS)
            goto done;
    }

    double ms = 0;
    for (int c = 0; c < nconf; c++) {
        const dtype_res *r = &res[confs[c].type];
        bad_type = confs[c].type;
        step = "attn_context_set_params";
        if ((st = select_conf(ctx, base, &confs[c])) != ATTN_SUCCESS) goto done;
        step = "attn_decode_prepare";
        if ((st = attn_decode_prepare(ctx, r->cache, &r->p, &confs[c].plan)) != ATTN_SUCCESS)
            goto done;
        step = "attn_decode";
        if ((st = timed(ctx, r->cache, &r->p, &r->tq, &r->to, &ms)) != ATTN_SUCCESS) goto done;
        if ((st = timed(ctx, r->cache, &r->p, &r->tq, &r->to, &ms)) != ATTN_SUCCESS) goto done;
        if (c == 0) {
            reps = cfg->reps;
            if (!reps) {
                double want = ms > 0 ? ceil(TARGET_MS / (ms * nconf)) : MAX_REPS;
                reps = want < MIN_REPS ? MIN_REPS : want > MAX_REPS ? MAX_REPS : (int)want;
            }
        }
        if (!(confs[c].times = malloc(sizeof(double) * (size_t)reps))) {
            st = ATTN_ERROR_OUT_OF_MEMORY;
            step = "host allocation";
            goto done;
        }
    }
    /* interleaved: every configuration once per round, and the copy
     * bandwidth in a few rounds spread over the run (the device may be
     * shared: the fraction must compare like with like) */
    const int every = reps / COPY_SAMPLES > 1 ? reps / COPY_SAMPLES : 1;
    for (int rep = 0; rep < reps; rep++) {
        if (rep % every == 0 && ncopies < COPY_SAMPLES) {
            step = "attn_device_copy_gbps";
            if ((st = attn_device_copy_gbps(ctx, &copies[ncopies])) != ATTN_SUCCESS) goto done;
            ncopies++;
        }
        step = "attn_decode";
        /* the order rotates: the first decode of a round measured ~10% slower
         * whatever it was, so every configuration takes every place */
        for (int i = 0; i < nconf; i++) {
            const int c = (i + rep) % nconf;
            const dtype_res *r = &res[confs[c].type];
            bad_type = confs[c].type;
            if ((st = select_conf(ctx, base, &confs[c])) != ATTN_SUCCESS ||
                (st = timed(ctx, r->cache, &r->p, &r->tq, &r->to, &confs[c].times[rep])) !=
                ATTN_SUCCESS)
                goto done;
        }
    }
    const bench_spread copy = bench_spread_of(copies, ncopies);
    for (int c = 0; c < nconf; c++) {
        confs[c].spread = bench_spread_of(confs[c].times, reps);
        confs[c].min_ms = confs[c].spread.min;
        confs[c].median_ms = confs[c].spread.median;
    }
    for (int c = 0; c < nconf; c++) { /* the first type's with the same splits */
        const dconf *base_c = &confs[c % (nconf / cfg->ndtypes)];
        confs[c].ratio = base_c->median_ms > 0 ? confs[c].median_ms / base_c->median_ms : 0;
    }

    /* the check: each configuration's output against its type's reference */
    const double flops = 4.0 * (double)D * s->kv_len * s->batch * s->q_heads * s->q_len;
    if (cfg->check && flops <= CHECK_FLOPS && (ref = malloc(nq * sizeof *ref))) {
        for (int c = 0; c < nconf; c++) {
            const dtype_res *r = &res[confs[c].type];
            bad_type = confs[c].type;
            if (c == 0 || confs[c].type != confs[c - 1].type) {
                step = "attn_reference_forward";
                if ((st = attn_reference_forward(&r->p, r->hq, r->hk, r->hv, ref, NULL, NULL)) !=
                    ATTN_SUCCESS)
                    goto done;
            }
            double atol, rtol;
            attn_tolerance(r->dtype, &atol, &rtol);
            step = "attn_decode";
            if ((st = select_conf(ctx, base, &confs[c])) != ATTN_SUCCESS) goto done;
            if ((st = timed(ctx, r->cache, &r->p, &r->tq, &r->to, &ms)) != ATTN_SUCCESS) goto done;
            step = "reading the output";
            if (clEnqueueReadBuffer(attn_context_queue(ctx), r->bo, CL_TRUE, 0, nq * r->esize,
                                    r->stage, 0, NULL, NULL) != CL_SUCCESS) {
                st = ATTN_ERROR_OPENCL;
                goto done;
            }
            attn_convert_to_f32(r->dtype, r->stage, ho, nq);
            dconf *k = &confs[c];
            k->checked = k->passed = 1;
            for (size_t i = 0; i < nq; i++) {
                double e = fabs((double)ho[i] - ref[i]);
                if (!isfinite(e)) {
                    k->nonfinite++;
                    k->passed = 0;
                    continue;
                }
                double ratio = e / (atol + rtol * fabs((double)ref[i]));
                if (e > k->max_error) k->max_error = e;
                if (ratio > k->max_ratio) k->max_ratio = ratio;
                if (ratio > 1.0) k->passed = 0;
            }
        }
    }
    failed = 0;
    if (cfg->format == 0)
        printf("%-36s copy bandwidth %.1f GB/s (median of %d, %.1f..%.1f; read + written)\n", sh,
               copy.median, ncopies, copy.min, copy.max);
    for (int c = 0; c < nconf; c++) {
        print_row(cfg, s, &confs[c], peak, copy.median, reps, results);
        if (confs[c].checked && !confs[c].passed) {
            fprintf(stderr, "attn-bench: CHECK FAILED: decode %s %s splits %d: max error %.3e "
                    "is %.3g times the tolerance; %zu outputs NaN or inf\n", sh,
                    attn_dtype_name(cfg->dtypes[confs[c].type]), confs[c].splits,
                    confs[c].max_error, confs[c].max_ratio, confs[c].nonfinite);
            failed = 1;
        }
    }
done:
    if (st != ATTN_SUCCESS) {
        const int lib = strncmp(step, "attn_", 5) == 0 && strcmp(step, "attn_reference_forward");
        char what[160];
        snprintf(what, sizeof what, "%s %s", sh, attn_dtype_name(cfg->dtypes[bad_type]));
        add_error(errors, what, step, st, lib ? attn_last_error(ctx) : "(no detail)");
        failed = 1;
    }
    attn_context_set_params(ctx, base); /* as it was */
    for (int c = 0; c < nconf; c++) {
        free(confs[c].times);
        confs[c].times = NULL;
    }
    for (int t = 0; t < cfg->ndtypes; t++) dtype_res_free(&res[t]);
    free(ho), free(ref);
    return failed;
}

int bench_decode(attn_context *ctx, const bench_decode_config *cfg, double peak,
                 cJSON *results, cJSON *errors)
{
    int splits[BENCH_MAX_SPLITS];
    const int nsplits = bench_parse_splits(cfg->splits ? cfg->splits : "auto", splits,
                                           BENCH_MAX_SPLITS);
    if (nsplits < 0 || cfg->ndtypes < 1 || cfg->ndtypes > BENCH_MAX_DTYPES) {
        fprintf(stderr, "attn-bench: --splits wants up to %d comma-separated values, each "
                "\"auto\" or 1..256, not '%s'\n", BENCH_MAX_SPLITS, cfg->splits);
        return 2;
    }
    /* type-major: configuration c is type c / nsplits with splits[c % nsplits] */
    dconf confs[MAX_CONF];
    const int nconf = nsplits * cfg->ndtypes;
    for (int c = 0; c < nconf; c++) {
        memset(&confs[c], 0, sizeof confs[c]);
        confs[c].type = c / nsplits;
        confs[c].splits = splits[c % nsplits];
    }
    dshape one = {cfg->batch, cfg->q_heads, cfg->kv_heads, cfg->head_dim, cfg->q_len,
                  cfg->kv_len};
    const dshape *shapes = cfg->batch > 0 ? &one : decode_set;
    const size_t nshapes = cfg->batch > 0 ? 1 : sizeof decode_set / sizeof decode_set[0];

    if (cfg->format == 0) {
        printf("decode: K/V GB/s = K and V bytes of the prefix read once / median time; "
               "configurations\ncompared interleaved with copy-bandwidth runs "
               "(attn_device_copy_gbps)%s\n", cfg->ndtypes > 1 ? "; ratio = median time / the "
               "first type's with the same splits" : "");
        printf("%-36s %-5s %-6s %-7s %-9s %5s %9s %9s %9s %6s %9s %7s %8s%s  %-9s %s\n", "shape",
               "dtype", "splits", "family", "source", "reps", "median ms", "min ms", "max ms",
               "IQR", "K/V GB/s", "of copy", "GFLOP/s", cfg->ndtypes > 1 ? "  ratio" : "",
               "max error", "check");
    } else if (cfg->format == 1) {
        printf("batch,q_heads,kv_heads,head_dim,q_len,kv_len,dtype,causal,family,params,"
               "params_source,splits_requested,reps,median_ms,min_ms,gflops,peak_gflops,"
               "peak_fraction,kv_gbps,copy_gbps,bandwidth_fraction,max_error,max_error_ratio,"
               "nonfinite,check,q1_ms,q3_ms,max_ms,iqr_fraction,time_ratio_to_first_dtype\n");
    }
    fflush(stdout);
    int failed = 0;
    for (size_t i = 0; i < nshapes; i++)
        failed |= run_shape(ctx, cfg, &shapes[i], confs, nconf, peak, results, errors);
    return failed;
}
