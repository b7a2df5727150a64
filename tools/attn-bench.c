/* attn-bench -- times attn_forward on the DESIGN benchmark shapes (or one
 * shape from the command line) with clpeak's method, reports GFLOP/s and the
 * fraction of the device's measured fp32 peak, and checks each result
 * against the CPU reference. Uses only attn.h, OpenCL and cJSON. */
#define _POSIX_C_SOURCE 200809L
#include "attn.h"
#include "bench_decode.h"
#include "bench_compare.h"
#include "bench_options.h"
#include "bench_stats.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SEED 20240501u
#define TARGET_MS 1000.0 /* calibrated reps add up to at least this */
#define MIN_REPS BENCH_MIN_REPS
#define MAX_REPS BENCH_MAX_REPS
/* The reference's work is bounded by this many flops per host thread: it
 * ran at about 10 GFLOP/s per Zen 5 core (the S=4096, D=64 prefill shape,
 * 17 GFLOP, in 1.6 s), so at most ~6 s, or ~20 s on a slower host; larger
 * shapes are not checked. */
#define CHECK_FLOPS_PER_THREAD 6e10

typedef struct shape {
    int batch, q_heads, kv_heads, head_dim, q_len, kv_len;
} shape;

/* DESIGN "Benchmark shapes", prefill. */
static const shape prefill_set[] = {
    {1, 8, 2, 64, 512, 512},    {1, 8, 2, 64, 1024, 1024},  {1, 8, 2, 64, 2048, 2048},
    {1, 8, 2, 64, 4096, 4096},  {1, 32, 8, 128, 1024, 1024}, {1, 32, 8, 128, 2048, 2048},
};

typedef struct row {
    shape s;
    attn_dtype dtype;
    int causal;
    attn_plan_info plan;
    int reps;
    double median_ms, min_ms, flops, gflops;
    bench_spread spread; /* of the timed runs */
    double ratio;        /* median time / the first dtype's (--dtype LIST), 1 for it */
    int checked; /* 0 = skipped (too large or --no-check) */
    int passed;
    double max_error, max_ratio, mean_error; /* over the finite outputs */
    size_t nonfinite;                        /* NaN or inf outputs: each a failure */
} row;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The one shape the options describe; 0 when none was given. */
static int custom_shape(const bench_options *o, shape *s)
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

/* FLOPs of one forward: 4*D per visible (query, key) pair, over batches and
 * heads; causal is bottom-right aligned. */
static double forward_flops(const shape *s, int causal)
{
    double pairs = 0;
    if (!causal) {
        pairs = (double)s->q_len * s->kv_len;
    } else {
        for (int i = 0; i < s->q_len; i++) {
            long long vis = (long long)i + s->kv_len - s->q_len + 1;
            if (vis > s->kv_len) vis = s->kv_len;
            if (vis > 0) pairs += (double)vis;
        }
    }
    return 4.0 * s->head_dim * pairs * s->batch * s->q_heads;
}

static uint64_t rng_state = SEED;
static float rng_uniform(void) /* splitmix64, [-1, 1) */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

static int mul_ok(size_t *acc, size_t f)
{
    if (f && *acc > SIZE_MAX / f) return 0;
    *acc *= f;
    return 1;
}

/* The reference, one (batch, query head) slice per job, on every host core. */
typedef struct ref_job {
    const attn_problem *p;
    const float *q, *k, *v;
    float *out;
    int next, total;
    attn_status status;
    pthread_mutex_t lock;
} ref_job;

static void *ref_worker(void *arg)
{
    ref_job *j = arg;
    const attn_problem *p = j->p;
    const size_t D = (size_t)p->head_dim, Sq = (size_t)p->q_len, Skv = (size_t)p->kv_len;
    const int group = p->q_heads / p->kv_heads;
    attn_problem one = *p;
    one.batch = one.q_heads = one.kv_heads = 1; /* scale 0 still means 1/sqrt(D) */
    for (;;) {
        pthread_mutex_lock(&j->lock);
        int t = j->next < j->total && j->status == ATTN_SUCCESS ? j->next++ : -1;
        pthread_mutex_unlock(&j->lock);
        if (t < 0) break;
        int b = t / p->q_heads, h = t % p->q_heads, hk = h / group;
        size_t qo = ((size_t)b * p->q_heads + h) * Sq * D;
        size_t ko = ((size_t)b * p->kv_heads + hk) * Skv * D;
        attn_status st =
            attn_reference_forward(&one, j->q + qo, j->k + ko, j->v + ko, j->out + qo, NULL, NULL);
        if (st != ATTN_SUCCESS) {
            pthread_mutex_lock(&j->lock);
            j->status = st;
            pthread_mutex_unlock(&j->lock);
        }
    }
    return NULL;
}

static int host_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

static attn_status reference_parallel(const attn_problem *p, const float *q, const float *k,
                                      const float *v, float *out)
{
    ref_job j = {p, q, k, v, out, 0, p->batch * p->q_heads, ATTN_SUCCESS,
                 PTHREAD_MUTEX_INITIALIZER};
    int n = host_threads();
    if (n > j.total) n = j.total;
    pthread_t threads[64];
    int started = 0;
    for (int i = 1; i < n; i++)
        if (pthread_create(&threads[started], NULL, ref_worker, &j) == 0) started++;
    ref_worker(&j);
    for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
    pthread_mutex_destroy(&j.lock);
    return j.status;
}

/* A library failure: status name and the context's message, on stderr. */
static void report_failure(const char *what, attn_status st, const attn_context *ctx)
{
    fprintf(stderr, "attn-bench: %s: %s: %s\n", what, attn_status_name(st),
            ctx ? attn_last_error(ctx) : attn_last_create_error());
}

static void shape_text(const shape *s, int causal, char *buf, size_t size)
{
    if (s->q_len == s->kv_len)
        snprintf(buf, size, "B=%d Hq=%d Hkv=%d D=%d S=%d %s", s->batch, s->q_heads, s->kv_heads,
                 s->head_dim, s->q_len, causal ? "causal" : "full");
    else
        snprintf(buf, size, "B=%d Hq=%d Hkv=%d D=%d Sq=%d Skv=%d %s", s->batch, s->q_heads,
                 s->kv_heads, s->head_dim, s->q_len, s->kv_len, causal ? "causal" : "full");
}

/* One timed run: host wall time around attn_forward and clFinish (a forward
 * may enqueue a pre-pass before its main kernel, so one event would miss
 * part of it). */
static attn_status timed_forward(attn_context *ctx, const attn_problem *p, const attn_tensor *q,
                                 const attn_tensor *k, const attn_tensor *v,
                                 const attn_tensor *o, double *ms)
{
    double t0 = now_ms();
    attn_status st = attn_forward(ctx, p, q, k, v, o, NULL, NULL, NULL);
    if (st != ATTN_SUCCESS) return st;
    cl_int err = clFinish(attn_context_queue(ctx));
    *ms = now_ms() - t0;
    if (err != CL_SUCCESS) {
        fprintf(stderr, "attn-bench: clFinish failed: %d\n", (int)err);
        return ATTN_ERROR_OPENCL;
    }
    return ATTN_SUCCESS;
}

/* One storage type of one shape: its inputs on the host (rounded through
 * the type, so the reference sees what the device sees) and the device,
 * its output, its timings. */
typedef struct dtype_run {
    row r;
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
static attn_status dtype_run_setup(attn_context *ctx, const bench_options *o, const shape *s,
                                   attn_dtype t, dtype_run *d, const char **what)
{
    memset(d, 0, sizeof *d);
    row *r = &d->r;
    r->s = *s;
    r->dtype = t;
    r->causal = o->causal;
    r->flops = forward_flops(s, o->causal);
    r->ratio = 1;
    const attn_problem p = {s->batch, s->q_heads, s->kv_heads, s->head_dim, s->q_len, s->kv_len,
                            t, o->causal, 0.0f};
    d->p = p;
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
    rng_state = SEED;
    float *host[3] = {d->hq, d->hk, d->hv};
    size_t count[3] = {nq, nkv, nkv};
    cl_mem *dev[3] = {&d->bq, &d->bk, &d->bv};
    cl_context clctx = attn_context_cl_context(ctx);
    attn_status st;
    for (int i = 0; i < 3; i++) {
        for (size_t j = 0; j < count[i]; j++) host[i][j] = rng_uniform();
        if ((st = attn_convert_from_f32(t, host[i], d->stage, count[i])) != ATTN_SUCCESS ||
            (st = attn_convert_to_f32(t, d->stage, host[i], count[i])) != ATTN_SUCCESS) {
            *what = "attn_convert";
            return st;
        }
        cl_int err;
        *dev[i] = clCreateBuffer(clctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                 count[i] * d->esize, d->stage, &err);
        if (err != CL_SUCCESS) {
            *dev[i] = NULL;
            *what = "clCreateBuffer";
            fprintf(stderr, "attn-bench: clCreateBuffer of %zu bytes failed: %d\n",
                    count[i] * d->esize, (int)err);
            return ATTN_ERROR_OUT_OF_MEMORY;
        }
    }
    cl_int err;
    d->bo = clCreateBuffer(clctx, CL_MEM_READ_WRITE, nq * d->esize, NULL, &err);
    if (err != CL_SUCCESS) {
        d->bo = NULL;
        *what = "clCreateBuffer";
        fprintf(stderr, "attn-bench: clCreateBuffer of %zu bytes failed: %d\n", nq * d->esize,
                (int)err);
        return ATTN_ERROR_OUT_OF_MEMORY;
    }
    const size_t D = (size_t)s->head_dim;
    const attn_tensor tq = {d->bq, 0, (size_t)s->q_heads * s->q_len * D, (size_t)s->q_len * D, D};
    const attn_tensor tk = {d->bk, 0, (size_t)s->kv_heads * s->kv_len * D, (size_t)s->kv_len * D, D};
    d->tq = tq, d->tk = tk, d->tv = tk, d->to = tq;
    d->tv.buffer = d->bv;
    d->to.buffer = d->bo;
    return ATTN_SUCCESS;
}

/* The check: the last run's output against the reference. */
static attn_status dtype_run_check(attn_context *ctx, dtype_run *d, const char **what)
{
    row *r = &d->r;
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
    st = reference_parallel(&d->p, d->hq, d->hk, d->hv, ref);
    if (st == ATTN_SUCCESS) {
        double atol, rtol, sum = 0;
        attn_tolerance(r->dtype, &atol, &rtol);
        r->checked = 1;
        r->passed = 1;
        for (size_t i = 0; i < d->nq; i++) {
            double e = fabs((double)d->ho[i] - (double)ref[i]);
            if (!isfinite(e)) { /* NaN or inf in the output */
                r->nonfinite++;
                r->passed = 0;
                continue;
            }
            double ratio = e / (atol + rtol * fabs((double)ref[i]));
            if (e > r->max_error) r->max_error = e;
            if (ratio > r->max_ratio) r->max_ratio = ratio;
            if (ratio > 1.0) r->passed = 0;
            sum += e;
        }
        r->mean_error = r->nonfinite < d->nq ? sum / (double)(d->nq - r->nonfinite) : 0;
    }
    free(ref);
    return st;
}

/* Runs one shape in each of the n storage types: clpeak's method (an
 * untimed warm-up, a calibration run, enough reps for TARGET_MS at their
 * mean time), the types timed interleaved with the order rotating each
 * round, so that their ratios come from one run; then each checked. *failed
 * is the index of the type whose step *what failed, when the result is not
 * ATTN_SUCCESS. */
static attn_status bench_shape(attn_context *ctx, const bench_options *o, const shape *s,
                               dtype_run *runs, int n, int *failed, const char **what)
{
    attn_status st = ATTN_SUCCESS;
    double sum_ms = 0;
    for (int i = 0; i < n; i++) {
        dtype_run *d = &runs[i];
        *failed = i;
        if ((st = dtype_run_setup(ctx, o, s, o->dtypes[i], d, what)) != ATTN_SUCCESS) return st;
        *what = "attn_prepare";
        if ((st = attn_prepare(ctx, &d->p, &d->r.plan)) != ATTN_SUCCESS) return st;
        *what = "attn_forward";
        double ms;
        if ((st = timed_forward(ctx, &d->p, &d->tq, &d->tk, &d->tv, &d->to, &ms)) != ATTN_SUCCESS ||
            (st = timed_forward(ctx, &d->p, &d->tq, &d->tk, &d->tv, &d->to, &ms)) != ATTN_SUCCESS)
            return st;
        sum_ms += ms;
    }
    int reps = o->reps;
    if (!reps) {
        double want = sum_ms > 0 ? ceil(TARGET_MS * n / sum_ms) : MAX_REPS;
        reps = want < MIN_REPS ? MIN_REPS : want > MAX_REPS ? MAX_REPS : (int)want;
    }
    for (int i = 0; i < n; i++) {
        *failed = i;
        if (!(runs[i].times = malloc((size_t)reps * sizeof(double)))) {
            *what = "host allocation";
            return ATTN_ERROR_OUT_OF_MEMORY;
        }
    }
    *what = "attn_forward";
    for (int rep = 0; rep < reps; rep++)
        for (int j = 0; j < n; j++) {
            dtype_run *d = &runs[(j + rep) % n];
            *failed = (j + rep) % n;
            if ((st = timed_forward(ctx, &d->p, &d->tq, &d->tk, &d->tv, &d->to,
                                    &d->times[rep])) != ATTN_SUCCESS)
                return st;
        }
    for (int i = 0; i < n; i++) {
        row *r = &runs[i].r;
        r->reps = reps;
        r->spread = bench_spread_of(runs[i].times, reps);
        r->min_ms = r->spread.min;
        r->median_ms = r->spread.median;
        r->gflops = r->median_ms > 0 ? r->flops / (r->median_ms * 1e6) : 0;
        r->ratio = runs[0].r.median_ms > 0 ? r->median_ms / runs[0].r.median_ms : 0;
    }
    if (!o->check || runs[0].r.flops > CHECK_FLOPS_PER_THREAD * host_threads()) return st;
    for (int i = 0; i < n; i++) {
        *failed = i;
        if ((st = dtype_run_check(ctx, &runs[i], what)) != ATTN_SUCCESS) return st;
    }
    return st;
}

/* ---- output ---- */

typedef struct device_facts {
    char platform[256], name[256], vendor[256], driver[256];
    cl_uint compute_units;
    const char *type;
} device_facts;

static void read_device(attn_context *ctx, device_facts *f)
{
    cl_device_id d = attn_context_device(ctx);
    cl_platform_id pl = NULL;
    cl_device_type t = 0;
    memset(f, 0, sizeof *f);
    clGetDeviceInfo(d, CL_DEVICE_PLATFORM, sizeof pl, &pl, NULL);
    if (pl) clGetPlatformInfo(pl, CL_PLATFORM_NAME, sizeof f->platform - 1, f->platform, NULL);
    clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof f->name - 1, f->name, NULL);
    clGetDeviceInfo(d, CL_DEVICE_VENDOR, sizeof f->vendor - 1, f->vendor, NULL);
    clGetDeviceInfo(d, CL_DRIVER_VERSION, sizeof f->driver - 1, f->driver, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof f->compute_units, &f->compute_units,
                    NULL);
    clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof t, &t, NULL);
    f->type = t & CL_DEVICE_TYPE_GPU ? "GPU" : t & CL_DEVICE_TYPE_CPU ? "CPU"
            : t & CL_DEVICE_TYPE_ACCELERATOR ? "accelerator" : "other";
}

static const char *check_word(const row *r)
{
    return !r->checked ? "skipped" : r->passed ? "passed" : "failed";
}

static void print_text_header(int ratios)
{
    printf("%-38s %-5s %-7s %-9s %5s %10s %9s %9s %6s %9s %6s%s  %-9s %s\n", "shape", "dtype",
           "family", "source", "reps", "median ms", "min ms", "max ms", "IQR", "GFLOP/s", "peak",
           ratios ? "  ratio" : "", "max error", "check");
}

static void print_text_row(const row *r, double peak, int ratios)
{
    char sh[128], pk[16] = "-", err[32] = "-", ratio[16] = "";
    shape_text(&r->s, r->causal, sh, sizeof sh);
    if (peak > 0) snprintf(pk, sizeof pk, "%.1f%%", 100.0 * r->gflops / peak);
    if (r->checked) snprintf(err, sizeof err, "%.2e", r->max_error);
    if (ratios) snprintf(ratio, sizeof ratio, " %6.3f", r->ratio);
    char check[64];
    if (!r->checked)
        snprintf(check, sizeof check, "skipped");
    else if (r->nonfinite)
        snprintf(check, sizeof check, "FAILED (%zu NaN/inf)", r->nonfinite);
    else
        snprintf(check, sizeof check, "%s (%.3g of tol)", r->passed ? "ok" : "FAILED",
                 r->max_ratio);
    printf("%-38s %-5s %-7s %-9s %5d %10.3f %9.3f %9.3f %5.1f%% %9.2f %6s%s  %-9s %s  [%s]\n", sh,
           attn_dtype_name(r->dtype), r->plan.family, r->plan.source, r->reps, r->median_ms,
           r->spread.min, r->spread.max, 100.0 * bench_iqr_fraction(&r->spread), r->gflops, pk,
           ratio, err, check, r->plan.params);
    fflush(stdout);
}

/* New columns go at the end, so that readers by position keep working. */
static void print_csv_header(void)
{
    printf("batch,q_heads,kv_heads,head_dim,q_len,kv_len,dtype,causal,family,params,"
           "params_source,reps,median_ms,min_ms,gflops,peak_gflops,peak_fraction,max_error,"
           "max_error_ratio,mean_error,nonfinite,check,q1_ms,q3_ms,max_ms,iqr_fraction,"
           "time_ratio_to_first_dtype\n");
}

static void print_csv_row(const row *r, double peak)
{
    printf("%d,%d,%d,%d,%d,%d,%s,%d,%s,\"%s\",%s,%d,%.4f,%.4f,%.3f,", r->s.batch, r->s.q_heads,
           r->s.kv_heads, r->s.head_dim, r->s.q_len, r->s.kv_len, attn_dtype_name(r->dtype),
           r->causal, r->plan.family, r->plan.params, r->plan.source, r->reps, r->median_ms,
           r->min_ms, r->gflops);
    if (peak > 0) printf("%.3f,%.4f,", peak, r->gflops / peak);
    else printf(",,");
    if (r->checked)
        printf("%.3e,%.4g,%.3e,%zu,", r->max_error, r->max_ratio, r->mean_error, r->nonfinite);
    else printf(",,,,");
    printf("%s,%.4f,%.4f,%.4f,%.4f,%.4f\n", check_word(r), r->spread.q1, r->spread.q3,
           r->spread.max, bench_iqr_fraction(&r->spread), r->ratio);
    fflush(stdout);
}

static cJSON *json_row(const row *r, double peak)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "batch", r->s.batch);
    cJSON_AddNumberToObject(j, "q_heads", r->s.q_heads);
    cJSON_AddNumberToObject(j, "kv_heads", r->s.kv_heads);
    cJSON_AddNumberToObject(j, "head_dim", r->s.head_dim);
    cJSON_AddNumberToObject(j, "q_len", r->s.q_len);
    cJSON_AddNumberToObject(j, "kv_len", r->s.kv_len);
    cJSON_AddStringToObject(j, "dtype", attn_dtype_name(r->dtype));
    cJSON_AddBoolToObject(j, "causal", r->causal);
    cJSON_AddStringToObject(j, "family", r->plan.family);
    cJSON_AddStringToObject(j, "params", r->plan.params);
    cJSON_AddStringToObject(j, "params_source", r->plan.source);
    cJSON_AddNumberToObject(j, "reps", r->reps);
    cJSON_AddNumberToObject(j, "median_ms", r->median_ms);
    cJSON_AddNumberToObject(j, "min_ms", r->min_ms);
    cJSON_AddNumberToObject(j, "q1_ms", r->spread.q1);
    cJSON_AddNumberToObject(j, "q3_ms", r->spread.q3);
    cJSON_AddNumberToObject(j, "max_ms", r->spread.max);
    cJSON_AddNumberToObject(j, "iqr_fraction", bench_iqr_fraction(&r->spread));
    cJSON_AddNumberToObject(j, "time_ratio_to_first_dtype", r->ratio);
    cJSON_AddNumberToObject(j, "flops", r->flops);
    cJSON_AddNumberToObject(j, "gflops", r->gflops);
    if (peak > 0) {
        cJSON_AddNumberToObject(j, "peak_gflops", peak);
        cJSON_AddNumberToObject(j, "peak_fraction", r->gflops / peak);
    } else {
        cJSON_AddNullToObject(j, "peak_gflops");
        cJSON_AddNullToObject(j, "peak_fraction");
    }
    if (r->checked) {
        cJSON_AddNumberToObject(j, "max_error", r->max_error);
        cJSON_AddNumberToObject(j, "max_error_ratio", r->max_ratio);
        cJSON_AddNumberToObject(j, "mean_error", r->mean_error);
        cJSON_AddNumberToObject(j, "nonfinite", (double)r->nonfinite);
    } else {
        cJSON_AddNullToObject(j, "max_error");
        cJSON_AddNullToObject(j, "max_error_ratio");
        cJSON_AddNullToObject(j, "mean_error");
        cJSON_AddNullToObject(j, "nonfinite");
    }
    cJSON_AddStringToObject(j, "check", check_word(r));
    return j;
}

/* A noise warning: on stderr at once, and into the JSON's "warnings". */
static void warn_noise(cJSON *warnings, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fprintf(stderr, "attn-bench: WARNING: %s\n", text);
    cJSON_AddItemToArray(warnings, cJSON_CreateString(text));
}

/* Results whose quartiles lie further apart than the noise limit. */
static void check_results_noise(cJSON *results, cJSON *warnings)
{
    int noisy = 0, n = 0;
    double worst = 0;
    cJSON *r;
    cJSON_ArrayForEach(r, results)
    {
        /* every timed path of the row: "iqr_fraction", "materialized_iqr_fraction" */
        double row_worst = -1;
        const cJSON *f;
        cJSON_ArrayForEach(f, r)
        {
            const size_t len = strlen(f->string), suffix = strlen("iqr_fraction");
            if (cJSON_IsNumber(f) && len >= suffix &&
                strcmp(f->string + len - suffix, "iqr_fraction") == 0 && f->valuedouble > row_worst)
                row_worst = f->valuedouble;
        }
        if (row_worst < 0) continue;
        n++;
        if (row_worst > BENCH_NOISE_LIMIT) noisy++;
        if (row_worst > worst) worst = row_worst;
    }
    if (noisy)
        warn_noise(warnings, "%d of %d results spread by more than %.0f%% of their median "
                   "between the quartiles (up to %.0f%%): the machine is too noisy to rank them",
                   noisy, n, 100 * BENCH_NOISE_LIMIT, 100 * worst);
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

    shape custom;
    const shape *shapes = prefill_set;
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
    read_device(ctx, &dev);
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
               ratios ? " (interleaved; ratio = median time / the first type's)" : "", SEED,
               o.check ? "on" : "off");
        if (!o.decode && !o.compare) print_text_header(ratios);
    } else if (o.format == BENCH_CSV && !o.decode && !o.compare) {
        print_csv_header();
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
            const shape *s = &shapes[i];
            const attn_problem p = {s->batch, s->q_heads, s->kv_heads, s->head_dim, s->q_len,
                                    s->kv_len, o.dtypes[0], o.causal, 0.0f};
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
            shape_text(&shapes[i], o.causal, sh, sizeof sh);
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
            const row *r = &runs[k].r;
            if (r->checked && !r->passed) {
                char sh[128];
                shape_text(&r->s, r->causal, sh, sizeof sh);
                fprintf(stderr, "attn-bench: CHECK FAILED: %s %s: max error %.3e is %.3g times "
                        "the tolerance; %zu outputs NaN or inf\n", sh, attn_dtype_name(r->dtype),
                        r->max_error, r->max_ratio, r->nonfinite);
                failed = 1;
            }
            if (o.format == BENCH_TEXT) print_text_row(r, peak, ratios);
            else if (o.format == BENCH_CSV) print_csv_row(r, peak);
            cJSON_AddItemToArray(results, json_row(r, peak));
        }
        for (int k = 0; k < o.ndtypes; k++) dtype_run_free(&runs[k]);
    }

    if (peak > 0 && attn_device_peak_gflops(ctx, &peak_end) != ATTN_SUCCESS) {
        report_failure("attn_device_peak_gflops", st, ctx);
        peak_end = 0;
        failed = 1;
    }
    const double drift = bench_change(peak, peak_end);
    if (o.format == BENCH_TEXT && peak_end > 0)
        printf("fp32 FMA peak: %.1f GFLOP/s before the runs, %.1f after (%.1f%% apart)\n", peak,
               peak_end, 100 * drift);
    if (drift > BENCH_NOISE_LIMIT)
        warn_noise(warnings, "the fp32 peak was %.1f GFLOP/s before the runs and %.1f after "
                   "(%.0f%% apart, more than %.0f%%): the machine is too noisy to rank results",
                   peak, peak_end, 100 * drift, 100 * BENCH_NOISE_LIMIT);
    check_results_noise(results, warnings);

    if (o.format == BENCH_JSON) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "tool", "attn-bench");
        cJSON_AddStringToObject(root, "version", attn_version_string());
        cJSON_AddBoolToObject(root, "clblast", attn_has_clblast());
        cJSON *d = cJSON_AddObjectToObject(root, "device");
        cJSON_AddStringToObject(d, "platform", dev.platform);
        cJSON_AddStringToObject(d, "name", dev.name);
        cJSON_AddStringToObject(d, "vendor", dev.vendor);
        cJSON_AddStringToObject(d, "driver", dev.driver);
        cJSON_AddNumberToObject(d, "compute_units", dev.compute_units);
        cJSON_AddStringToObject(d, "type", dev.type);
        if (peak > 0) cJSON_AddNumberToObject(root, "peak_gflops", peak);
        else cJSON_AddNullToObject(root, "peak_gflops");
        if (peak_end > 0) cJSON_AddNumberToObject(root, "peak_gflops_end", peak_end);
        else cJSON_AddNullToObject(root, "peak_gflops_end");
        cJSON_AddNumberToObject(root, "peak_change", drift);
        cJSON_AddBoolToObject(root, "noisy", cJSON_GetArraySize(warnings) > 0);
        cJSON_AddNumberToObject(root, "seed", SEED);
        cJSON_AddItemToObject(root, "results", results);
        cJSON_AddItemToObject(root, "errors", errors);
        cJSON_AddItemToObject(root, "warnings", warnings);
        results = errors = warnings = NULL;
        char *text = cJSON_Print(root);
        if (text) puts(text);
        else failed = 1;
        free(text);
        cJSON_Delete(root);
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
