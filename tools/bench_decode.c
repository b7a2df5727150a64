/* bench_decode.c -- attn-bench --decode: fills a KV cache per shape, times
 * attn_decode with each requested number of KV splits (ATTN_PARAMS
 * splits=N, or the heuristic), interleaved so that their ratios come from
 * one run, and reports the K/V bytes read per second against the device's
 * copy bandwidth measured in the same run. Checks each configuration's
 * output against the CPU reference. Uses only attn.h, OpenCL and cJSON. */
#define _POSIX_C_SOURCE 200809L
#include "bench_decode.h"

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
#define MAX_CONF 16
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
    attn_plan_info plan; /* params end with the splits actually launched */
    double *times;
    double median_ms, min_ms;
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int parse_splits(const char *list, dconf *c, int *n)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    *n = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n == MAX_CONF) return -1;
        long v = 0;
        if (strcmp(t, "auto") != 0) {
            char *end;
            v = strtol(t, &end, 10);
            if (end == t || *end || v < 1 || v > 256) return -1;
        }
        memset(&c[*n], 0, sizeof c[*n]);
        c[(*n)++].splits = (int)v;
    }
    return *n ? 0 : -1;
}

int bench_decode_check_splits(const char *list)
{
    dconf c[MAX_CONF];
    int n;
    return list && strlen(list) < 256 ? parse_splits(list, c, &n) : -1;
}

/* ATTN_PARAMS = the caller's own setting plus splits=N (later names win). */
static void use_splits(const char *base, int splits)
{
    char text[512];
    snprintf(text, sizeof text, "%s%ssplits=%d", base ? base : "", base && *base ? "," : "",
             splits);
    setenv("ATTN_PARAMS", text, 1);
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

static void print_row(const bench_decode_config *cfg, const dshape *s, const dconf *c,
                      double peak, double copy_gbps, int reps, cJSON *results)
{
    const double esize = (double)attn_dtype_size(cfg->dtype);
    const double bytes = 2.0 * s->batch * s->kv_heads * (double)s->kv_len * s->head_dim * esize;
    double pairs = 0; /* visible (query, key) pairs, bottom-right causal */
    for (int i = 0; i < s->q_len; i++) pairs += (double)(s->kv_len - s->q_len + i + 1);
    const double flops = 4.0 * s->head_dim * pairs * s->batch * s->q_heads;
    const double kv_gbps = c->median_ms > 0 ? bytes / (c->median_ms * 1e6) : 0;
    const double gflops = c->median_ms > 0 ? flops / (c->median_ms * 1e6) : 0;
    const double frac = copy_gbps > 0 ? kv_gbps / copy_gbps : 0;
    char sh[96], sp[16];
    shape_text(s, sh, sizeof sh);
    splits_word(c, sp, sizeof sp);
    if (cfg->format == 0) {
        char err[32] = "-", check[48] = "skipped";
        if (c->checked) {
            snprintf(err, sizeof err, "%.2e", c->max_error);
            if (c->nonfinite) snprintf(check, sizeof check, "FAILED (%zu NaN/inf)", c->nonfinite);
            else snprintf(check, sizeof check, "%s (%.3g of tol)", c->passed ? "ok" : "FAILED",
                          c->max_ratio);
        }
        printf("%-36s %-5s %-6s %-7s %-9s %5d %9.3f %9.1f %6.1f%% %8.1f  %-9s %s  [%s]\n", sh,
               attn_dtype_name(cfg->dtype), sp, c->plan.family, c->plan.source, reps, c->median_ms,
               kv_gbps, 100.0 * frac, gflops, err, check, c->plan.params);
    } else if (cfg->format == 1) {
        printf("%d,%d,%d,%d,%d,%d,%s,1,%s,\"%s\",%s,%s,%d,%.4f,%.4f,%.3f,", s->batch, s->q_heads,
               s->kv_heads, s->head_dim, s->q_len, s->kv_len, attn_dtype_name(cfg->dtype),
               c->plan.family, c->plan.params, c->plan.source, sp, reps, c->median_ms, c->min_ms,
               gflops);
        if (peak > 0) printf("%.3f,%.4f,", peak, gflops / peak);
        else printf(",,");
        printf("%.3f,%.3f,%.4f,", kv_gbps, copy_gbps, frac);
        if (c->checked) printf("%.3e,%.4g,%zu,", c->max_error, c->max_ratio, c->nonfinite);
        else printf(",,,");
        printf("%s\n", check_word(c));
    } else {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "batch", s->batch);
        cJSON_AddNumberToObject(j, "q_heads", s->q_heads);
        cJSON_AddNumberToObject(j, "kv_heads", s->kv_heads);
        cJSON_AddNumberToObject(j, "head_dim", s->head_dim);
        cJSON_AddNumberToObject(j, "q_len", s->q_len);
        cJSON_AddNumberToObject(j, "kv_len", s->kv_len);
        cJSON_AddStringToObject(j, "dtype", attn_dtype_name(cfg->dtype));
        cJSON_AddBoolToObject(j, "causal", 1);
        cJSON_AddStringToObject(j, "mode", "decode");
        cJSON_AddStringToObject(j, "family", c->plan.family);
        cJSON_AddStringToObject(j, "params", c->plan.params);
        cJSON_AddStringToObject(j, "params_source", c->plan.source);
        cJSON_AddStringToObject(j, "splits_requested", sp);
        cJSON_AddNumberToObject(j, "reps", reps);
        cJSON_AddNumberToObject(j, "median_ms", c->median_ms);
        cJSON_AddNumberToObject(j, "min_ms", c->min_ms);
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
    }
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

/* Returns 0 when every configuration ran and passed its check. */
static int run_shape(attn_context *ctx, const bench_decode_config *cfg, const dshape *s,
                     dconf *confs, int nconf, double peak, cJSON *results, cJSON *errors)
{
    double copies[COPY_SAMPLES], copy_gbps = 0;
    int ncopies = 0;
    char sh[96];
    shape_text(s, sh, sizeof sh);
    const char *base = getenv("ATTN_PARAMS");
    char *saved = base ? strdup(base) : NULL;
    const size_t D = (size_t)s->head_dim, esize = attn_dtype_size(cfg->dtype);
    const size_t nq = (size_t)s->batch * s->q_heads * s->q_len * D;
    const size_t nkv = (size_t)s->batch * s->kv_heads * s->kv_len * D;
    float *hq = malloc(nq * sizeof *hq), *hk = malloc(nkv * sizeof *hk);
    float *hv = malloc(nkv * sizeof *hv), *ho = malloc(nq * sizeof *ho), *ref = NULL;
    void *stage = malloc(nkv * esize);
    cl_mem bq = NULL, bk = NULL, bv = NULL, bo = NULL;
    attn_kv_cache *cache = NULL;
    int failed = 1, reps = 0;
    attn_status st = ATTN_SUCCESS;
    const char *step = "host allocation";
    if (!hq || !hk || !hv || !ho || !stage) {
        st = ATTN_ERROR_OUT_OF_MEMORY;
        goto done;
    }
    /* inputs uniform [-1, 1), stored in the dtype; the host copies rounded
     * through it so the reference sees what the device sees */
    uint64_t rng = SEED;
    float *host[3] = {hq, hk, hv};
    size_t count[3] = {nq, nkv, nkv};
    cl_mem *dev[3] = {&bq, &bk, &bv};
    step = "uploading the inputs";
    for (int t = 0; t < 3; t++) {
        for (size_t i = 0; i < count[t]; i++) host[t][i] = rng_uniform(&rng);
        attn_convert_from_f32(cfg->dtype, host[t], stage, count[t]);
        attn_convert_to_f32(cfg->dtype, stage, host[t], count[t]);
        if (!(*dev[t] = upload(ctx, stage, count[t] * esize))) {
            st = ATTN_ERROR_OUT_OF_MEMORY;
            goto done;
        }
    }
    if (!(bo = upload(ctx, NULL, nq * esize))) {
        st = ATTN_ERROR_OUT_OF_MEMORY;
        goto done;
    }
    const attn_tensor tq = {bq, 0, (size_t)s->q_heads * s->q_len * D, (size_t)s->q_len * D, D};
    const attn_tensor tk = {bk, 0, (size_t)s->kv_heads * s->kv_len * D, (size_t)s->kv_len * D, D};
    attn_tensor tv = tk, to = tq;
    tv.buffer = bv;
    to.buffer = bo;

    /* the cache, filled with the whole prefix in one append */
    step = "attn_kv_cache_create";
    if ((st = attn_kv_cache_create(ctx, s->batch, s->kv_heads, s->head_dim, s->kv_len,
                                   cfg->dtype, &cache)) != ATTN_SUCCESS)
        goto done;
    step = "attn_kv_cache_append";
    if ((st = attn_kv_cache_append(cache, &tk, &tv, s->kv_len, NULL, NULL)) != ATTN_SUCCESS)
        goto done;
    clFinish(attn_context_queue(ctx));
    clReleaseMemObject(bk), clReleaseMemObject(bv);
    bk = bv = NULL;

    const attn_problem p = {s->batch, s->q_heads, s->kv_heads, s->head_dim, s->q_len, s->kv_len,
                            cfg->dtype, 1, 0.0f};
    double ms = 0;
    for (int c = 0; c < nconf; c++) {
        if (confs[c].splits) use_splits(saved, confs[c].splits);
        else if (saved) setenv("ATTN_PARAMS", saved, 1);
        else unsetenv("ATTN_PARAMS");
        step = "attn_decode_prepare";
        if ((st = attn_decode_prepare(ctx, cache, &p, &confs[c].plan)) != ATTN_SUCCESS) goto done;
        step = "attn_decode";
        if ((st = timed(ctx, cache, &p, &tq, &to, &ms)) != ATTN_SUCCESS) goto done; /* warm-up */
        if ((st = timed(ctx, cache, &p, &tq, &to, &ms)) != ATTN_SUCCESS) goto done;
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
    for (int r = 0; r < reps; r++) {
        if (r % every == 0 && ncopies < COPY_SAMPLES) {
            step = "attn_device_copy_gbps";
            if ((st = attn_device_copy_gbps(ctx, &copies[ncopies])) != ATTN_SUCCESS) goto done;
            ncopies++;
        }
        step = "attn_decode";
        /* the order rotates: the first decode of a round measured ~10% slower
         * whatever it was, so every configuration takes every place */
        for (int i = 0; i < nconf; i++) {
            const int c = (i + r) % nconf;
            if (confs[c].splits) use_splits(saved, confs[c].splits);
            else if (saved) setenv("ATTN_PARAMS", saved, 1);
            else unsetenv("ATTN_PARAMS");
            if ((st = timed(ctx, cache, &p, &tq, &to, &confs[c].times[r])) != ATTN_SUCCESS)
                goto done;
        }
    }
    qsort(copies, (size_t)ncopies, sizeof(double), cmp_double);
    copy_gbps = ncopies % 2 ? copies[ncopies / 2]
                            : 0.5 * (copies[ncopies / 2 - 1] + copies[ncopies / 2]);
    for (int c = 0; c < nconf; c++) {
        qsort(confs[c].times, (size_t)reps, sizeof(double), cmp_double);
        confs[c].min_ms = confs[c].times[0];
        confs[c].median_ms = reps % 2 ? confs[c].times[reps / 2]
                                      : 0.5 * (confs[c].times[reps / 2 - 1] + confs[c].times[reps / 2]);
    }

    /* the check: each configuration's output against the reference */
    const double flops = 4.0 * (double)D * s->kv_len * s->batch * s->q_heads * s->q_len;
    if (cfg->check && flops <= CHECK_FLOPS && (ref = malloc(nq * sizeof *ref))) {
        step = "attn_reference_forward";
        if ((st = attn_reference_forward(&p, hq, hk, hv, ref, NULL, NULL)) != ATTN_SUCCESS)
            goto done;
        double atol, rtol;
        attn_tolerance(cfg->dtype, &atol, &rtol);
        for (int c = 0; c < nconf; c++) {
            if (confs[c].splits) use_splits(saved, confs[c].splits);
            else if (saved) setenv("ATTN_PARAMS", saved, 1);
            else unsetenv("ATTN_PARAMS");
            step = "attn_decode";
            if ((st = timed(ctx, cache, &p, &tq, &to, &ms)) != ATTN_SUCCESS) goto done;
            step = "reading the output";
            if (clEnqueueReadBuffer(attn_context_queue(ctx), bo, CL_TRUE, 0, nq * esize, stage, 0,
                                    NULL, NULL) != CL_SUCCESS) {
                st = ATTN_ERROR_OPENCL;
                goto done;
            }
            attn_convert_to_f32(cfg->dtype, stage, ho, nq);
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
        printf("%-36s copy bandwidth %.1f GB/s (median of %d, read + written)\n", sh, copy_gbps,
               ncopies);
    for (int c = 0; c < nconf; c++) {
        print_row(cfg, s, &confs[c], peak, copy_gbps, reps, results);
        if (confs[c].checked && !confs[c].passed) {
            fprintf(stderr, "attn-bench: CHECK FAILED: decode %s %s splits %d: max error %.3e "
                    "is %.3g times the tolerance; %zu outputs NaN or inf\n", sh,
                    attn_dtype_name(cfg->dtype), confs[c].splits, confs[c].max_error,
                    confs[c].max_ratio, confs[c].nonfinite);
            failed = 1;
        }
    }
done:
    if (st != ATTN_SUCCESS) {
        const int lib = strncmp(step, "attn_", 5) == 0 && strcmp(step, "attn_reference_forward");
        add_error(errors, sh, step, st, lib ? attn_last_error(ctx) : "(no detail)");
        failed = 1;
    }
    if (saved) setenv("ATTN_PARAMS", saved, 1);
    else unsetenv("ATTN_PARAMS");
    free(saved);
    for (int c = 0; c < nconf; c++) {
        free(confs[c].times);
        confs[c].times = NULL;
    }
    attn_kv_cache_release(cache);
    cl_mem mems[] = {bq, bk, bv, bo};
    for (int i = 0; i < 4; i++)
        if (mems[i]) clReleaseMemObject(mems[i]);
    free(hq), free(hk), free(hv), free(ho), free(ref), free(stage);
    return failed;
}

int bench_decode(attn_context *ctx, const bench_decode_config *cfg, double peak,
                 cJSON *results, cJSON *errors)
{
    dconf confs[MAX_CONF];
    int nconf = 0;
    if (parse_splits(cfg->splits ? cfg->splits : "auto", confs, &nconf) != 0) {
        fprintf(stderr, "attn-bench: --splits wants up to %d comma-separated values, each "
                "\"auto\" or 1..256, not '%s'\n", MAX_CONF, cfg->splits);
        return 2;
    }
    dshape one = {cfg->batch, cfg->q_heads, cfg->kv_heads, cfg->head_dim, cfg->q_len,
                  cfg->kv_len};
    const dshape *shapes = cfg->batch > 0 ? &one : decode_set;
    const size_t nshapes = cfg->batch > 0 ? 1 : sizeof decode_set / sizeof decode_set[0];

    if (cfg->format == 0) {
        printf("decode: K/V GB/s = K and V bytes of the prefix read once / median time; splits\n"
               "compared interleaved with copy-bandwidth runs (attn_device_copy_gbps)\n");
        printf("%-36s %-5s %-6s %-7s %-9s %5s %9s %9s %7s %8s  %-9s %s\n", "shape", "dtype",
               "splits", "family", "source", "reps", "median ms", "K/V GB/s", "of copy", "GFLOP/s",
               "max error", "check");
    } else if (cfg->format == 1) {
        printf("batch,q_heads,kv_heads,head_dim,q_len,kv_len,dtype,causal,family,params,"
               "params_source,splits_requested,reps,median_ms,min_ms,gflops,peak_gflops,"
               "peak_fraction,kv_gbps,copy_gbps,bandwidth_fraction,max_error,max_error_ratio,"
               "nonfinite,check\n");
    }
    fflush(stdout);
    int failed = 0;
    for (size_t i = 0; i < nshapes; i++)
        failed |= run_shape(ctx, cfg, &shapes[i], confs, nconf, peak, results, errors);
    return failed;
}
