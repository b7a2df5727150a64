/* common.c -- attn-bench's shared parts (common.h): timing, random inputs,
 * the threaded reference and the check. */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Which clock tool_timed uses: decided at its first call, then kept, so
 * that every figure of a run is read off the same clock. */
static enum { CLOCK_UNDECIDED, CLOCK_DEVICE, CLOCK_HOST } g_clock;

const char *tool_clock_name(void)
{
    return g_clock == CLOCK_DEVICE ? "device (between two markers, the queue held until both "
                                     "are enqueued)"
                                   : "host (the call and clFinish)";
}

static attn_status finish(cl_command_queue queue)
{
    cl_int err = clFinish(queue);
    if (err == CL_SUCCESS) return ATTN_SUCCESS;
    fprintf(stderr, "attn-bench: clFinish failed: %d\n", (int)err);
    return ATTN_ERROR_OPENCL;
}

/* A call that waits on its own queue (the library's first plan of a kind
 * verifying the mma family, check mode's read-back) would wait forever
 * for the held marker: the gate is let go after this long regardless, and
 * the run goes on on the host's clock. Each configuration's first call is
 * never held (seen_before): that is where the library settles its plans. */
#define GATE_TIMEOUT_S 5

typedef struct gate_watch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, fired;
    cl_event gate;
} gate_watch;

static void *watch_gate(void *p)
{
    gate_watch *w = p;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += GATE_TIMEOUT_S;
    pthread_mutex_lock(&w->mu);
    while (!w->done && pthread_cond_timedwait(&w->cv, &w->mu, &until) == 0) continue;
    if (!w->done) {
        w->fired = 1;
        clSetUserEventStatus(w->gate, CL_COMPLETE);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* The (run, arg, i) timed so far in this series (a bounded memory: past
 * it, every call counts as seen). */
static struct { tool_run_fn run; void *arg; int i; } seen[512];
static int n_seen;

void tool_timing_new_series(void) { n_seen = 0; }

/* Whether run(arg, i) has been timed before in this series. */
static int seen_before(tool_run_fn run, void *arg, int i)
{
    int n = n_seen;
    for (int k = 0; k < n; k++)
        if (seen[k].run == run && seen[k].arg == arg && seen[k].i == i) return 1;
    if (n == (int)(sizeof seen / sizeof seen[0])) return 1;
    seen[n].run = run, seen[n].arg = arg, seen[n].i = i;
    n_seen = n + 1;
    return 0;
}

/* The device time of what run(arg, i) enqueues: a marker waiting for a user
 * event, the call, a second marker, and only then the event set, so the
 * device runs the call's kernels back to back; the time from the first
 * marker's end to the second's. Neither the host's launch of the call nor
 * its wait for the end counts (tens of microseconds on a GPU, as much as a
 * short decode). 1 with *ms, 0 where the device gives no such times (*ms
 * the host's wall time then: the call ran), -1 with *st when it failed. */
static int device_timed(attn_context *ctx, tool_run_fn run, void *arg, int i, double *ms,
                        attn_status *st)
{
    const double t0 = attn_now_ms();
    cl_command_queue queue = attn_context_queue(ctx);
    cl_command_queue_properties props = 0;
    if (clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL) !=
            CL_SUCCESS ||
        !(props & CL_QUEUE_PROFILING_ENABLE) || (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE))
        return 0;
    cl_int err;
    cl_event gate = clCreateUserEvent(attn_context_cl_context(ctx), &err), m[2] = {NULL, NULL};
    if (err != CL_SUCCESS) return 0;
    int got = 0, ran = 0;
    gate_watch w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, gate};
    pthread_t watcher;
    const int watched = pthread_create(&watcher, NULL, watch_gate, &w) == 0;
    if (watched && clEnqueueMarkerWithWaitList(queue, 1, &gate, &m[0]) == CL_SUCCESS) {
        *st = run(arg, i);
        ran = 1;
        if (*st == ATTN_SUCCESS && clEnqueueMarkerWithWaitList(queue, 0, NULL, &m[1]) == CL_SUCCESS)
            got = 1;
    }
    pthread_mutex_lock(&w.mu);
    w.done = 1;
    if (!w.fired) clSetUserEventStatus(gate, CL_COMPLETE); /* always: the queue must not stay held */
    pthread_cond_signal(&w.cv);
    pthread_mutex_unlock(&w.mu);
    if (watched) pthread_join(watcher, NULL);
    if (w.fired) {
        fprintf(stderr, "attn-bench: a call waited on its own queue (check mode?); timing on the "
                "host's clock from here\n");
        got = 0;
        ran = 0; /* its time holds the watchdog's wait: timed again, on the host */
        g_clock = CLOCK_HOST;
    }
    attn_status fin = finish(queue);
    if (*st == ATTN_SUCCESS) *st = fin;
    cl_ulong end[2] = {0, 0};
    if (got && *st == ATTN_SUCCESS)
        for (int k = 0; k < 2; k++)
            got &= clGetEventProfilingInfo(m[k], CL_PROFILING_COMMAND_END, sizeof end[k], &end[k],
                                           NULL) == CL_SUCCESS;
    for (int k = 0; k < 2; k++)
        if (m[k]) clReleaseEvent(m[k]);
    clReleaseEvent(gate);
    if (*st != ATTN_SUCCESS) return -1;
    if (!got || end[1] <= end[0]) {
        *ms = ran ? attn_now_ms() - t0 : -1; /* -1: not run */
        return 0;
    }
    *ms = (double)(end[1] - end[0]) * 1e-6;
    return 1;
}

attn_status tool_timed(attn_context *ctx, tool_run_fn run, void *arg, int i, double *ms)
{
    attn_status st = ATTN_SUCCESS;
    if (g_clock != CLOCK_HOST && seen_before(run, arg, i)) {
        double got = -1;
        const int r = device_timed(ctx, run, arg, i, &got, &st);
        if (r < 0) return st;
        if (r > 0) {
            if (g_clock == CLOCK_UNDECIDED) g_clock = CLOCK_DEVICE;
            *ms = got;
            return ATTN_SUCCESS;
        }
        if (g_clock == CLOCK_DEVICE) { /* it gave times before: not now */
            fprintf(stderr, "attn-bench: the device gave no marker times this run\n");
            return ATTN_ERROR_OPENCL;
        }
        g_clock = CLOCK_HOST;
        if (got >= 0) { /* the call ran, on the host's clock */
            *ms = got;
            return ATTN_SUCCESS;
        }
    }
    const double t0 = attn_now_ms();
    if ((st = run(arg, i)) != ATTN_SUCCESS) return st;
    if ((st = finish(attn_context_queue(ctx))) != ATTN_SUCCESS) return st;
    *ms = attn_now_ms() - t0;
    return ATTN_SUCCESS;
}

int tool_reps(int fixed, double target_ms, double one_ms, int min_reps, int max_reps)
{
    if (fixed) return fixed;
    const double want = one_ms > 0 ? ceil(target_ms / one_ms) : max_reps;
    return want < min_reps ? min_reps : want > max_reps ? max_reps : (int)want;
}

static attn_status time_rounds_once(attn_context *ctx, tool_rounds *r)
{
    attn_status st = ATTN_SUCCESS;
    for (int rep = 0; rep < r->reps; rep++) {
        if (r->before_round && (st = r->before_round(r->arg, rep)) != ATTN_SUCCESS) return st;
        for (int j = 0; j < r->n; j++) {
            const int i = (j + rep) % r->n;
            r->failed = i;
            if (r->before_run && (st = r->before_run(r->arg, i)) != ATTN_SUCCESS) return st;
            if ((st = tool_timed(ctx, r->run, r->arg, i, &r->times[i][rep])) != ATTN_SUCCESS)
                return st;
        }
    }
    return st;
}

attn_status tool_time_rounds(attn_context *ctx, tool_rounds *r)
{
    const int device = g_clock != CLOCK_HOST;
    attn_status st = time_rounds_once(ctx, r);
    /* the clock went over to the host's during the rounds: their times
     * mix two clocks, so they are all taken again, on the host's */
    if (st == ATTN_SUCCESS && device && g_clock == CLOCK_HOST) st = time_rounds_once(ctx, r);
    return st;
}

attn_status tool_random_input(attn_context *ctx, attn_dtype t, size_t n, uint64_t *rng, float lo,
                              float hi, cl_mem_flags flags, float *keep, cl_mem *out,
                              const char **what)
{
    const size_t es = attn_dtype_size(t);
    float *x = keep ? keep : malloc(n * sizeof *x);
    void *raw = malloc(n * es);
    attn_status st = ATTN_ERROR_OUT_OF_MEMORY;
    *out = NULL;
    *what = "host allocation";
    if (!x || !raw) goto done;
    for (size_t i = 0; i < n; i++) x[i] = attn_rand_uniform(rng, lo, hi);
    *what = "attn_convert";
    if ((st = attn_convert_from_f32(t, x, raw, n)) != ATTN_SUCCESS ||
        (keep && (st = attn_convert_to_f32(t, raw, keep, n)) != ATTN_SUCCESS))
        goto done;
    cl_int err;
    *what = "clCreateBuffer";
    *out = clCreateBuffer(attn_context_cl_context(ctx), flags | CL_MEM_COPY_HOST_PTR, n * es, raw,
                          &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "attn-bench: clCreateBuffer of %zu bytes failed: %d\n", n * es, (int)err);
        *out = NULL;
        st = ATTN_ERROR_OUT_OF_MEMORY;
    }
done:
    if (x != keep) free(x);
    free(raw);
    return st;
}

attn_status tool_output_buffer(attn_context *ctx, size_t bytes, cl_mem *out, const char **what)
{
    cl_int err;
    *out = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err == CL_SUCCESS) return ATTN_SUCCESS;
    *out = NULL;
    *what = "clCreateBuffer";
    fprintf(stderr, "attn-bench: clCreateBuffer of %zu bytes failed: %d\n", bytes, (int)err);
    return ATTN_ERROR_OUT_OF_MEMORY;
}

attn_tensor tool_bhsd(cl_mem m, int heads, int seq, int dim)
{
    const attn_tensor t = {m, 0, (size_t)heads * seq * dim, (size_t)seq * dim, (size_t)dim};
    return t;
}

static int mul_ok(size_t *acc, size_t f)
{
    if (f && *acc > SIZE_MAX / f) return 0;
    *acc *= f;
    return 1;
}

/* The last refusal of tool_shape_elements or tool_host_holds: its step
 * and message (the caller's error line prints it). */
static const char *g_refused_step;
static char g_refusal[160];

static attn_status refuse(attn_status st, const char *step, const char **what)
{
    *what = g_refused_step = step;
    return st;
}

const char *tool_refusal(const char *step, const char *fallback)
{
    return g_refused_step && step && strcmp(step, g_refused_step) == 0 ? g_refusal : fallback;
}

attn_status tool_shape_elements(const attn_problem *p, size_t *nq, size_t *nkv,
                                const char **what)
{
    *nq = *nkv = p->packed ? 1 : (size_t)p->batch;
    if (!mul_ok(nq, (size_t)p->q_heads) || !mul_ok(nq, (size_t)p->q_len) ||
        !mul_ok(nq, (size_t)p->head_dim) || !mul_ok(nkv, (size_t)p->kv_heads) ||
        !mul_ok(nkv, (size_t)p->kv_len) || !mul_ok(nkv, (size_t)p->head_dim) ||
        *nq > SIZE_MAX / 8 || *nkv > SIZE_MAX / 8) {
        snprintf(g_refusal, sizeof g_refusal, "the shape's element count overflows size_t");
        return refuse(ATTN_ERROR_INVALID_ARGUMENT, "shape", what);
    }
    return ATTN_SUCCESS;
}

attn_status tool_host_holds(double bytes, const char **what)
{
#ifdef _SC_PHYS_PAGES
    const double have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (have > 0 && bytes > have) {
        snprintf(g_refusal, sizeof g_refusal, "the shape's tensors need %.3g GiB of host "
                 "memory; this machine has %.3g GiB", bytes / 1073741824.0, have / 1073741824.0);
        return refuse(ATTN_ERROR_OUT_OF_MEMORY, "host memory", what);
    }
#endif
    (void)what;
    return ATTN_SUCCESS;
}

int tool_host_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

/* The reference's work: one (batch, query head) slice per job. */
typedef struct ref_job {
    const attn_problem *p;
    const attn_lengths *lengths;
    const float *slopes; /* ALiBi's, q_heads of them, or NULL */
    const float *q, *k, *v;
    float *out;
    int next, total;
    attn_status status;
    pthread_mutex_t lock;
} ref_job;

/* Runs job t: batch entry b, query head h as a problem of one of each, its
 * variants' per-head values and mask offset, and its own lengths. A packed
 * problem's entries share the token axis (batch stride 0): the slice is
 * computed into scratch and only the entry's own rows copied out. */
static attn_status ref_one(const ref_job *j, int t, float *scratch)
{
    const attn_problem *p = j->p;
    const attn_lengths *L = j->lengths;
    const size_t D = (size_t)p->head_dim, Sq = (size_t)p->q_len, Skv = (size_t)p->kv_len;
    const int b = t / p->q_heads, h = t % p->q_heads, hk = h / (p->q_heads / p->kv_heads);
    const size_t bq = p->packed ? 0 : (size_t)b, qo = (bq * p->q_heads + h) * Sq * D;
    const size_t ko = (bq * p->kv_heads + hk) * Skv * D;
    attn_problem one = *p;
    one.batch = one.q_heads = one.kv_heads = 1; /* scale 0 still means 1/sqrt(D) */
    one.packed = 0;
    one.sinks = p->sinks ? p->sinks + h : NULL;
    one.sinks_buffer = NULL;
    one.alibi_slopes = j->slopes ? j->slopes + h : NULL;
    one.alibi_max_bias = 0;
    one.mask.buffer = NULL;
    one.mask.offset += (size_t)b * p->mask.stride_batch + (size_t)h * p->mask.stride_head;
    const attn_lengths l1 = {L && L->q_start ? L->q_start + b : NULL,
                             L && L->q_len ? L->q_len + b : NULL,
                             L && L->kv_start ? L->kv_start + b : NULL,
                             L && L->kv_len ? L->kv_len + b : NULL};
    float *out = p->packed ? scratch : j->out + qo;
    attn_status st = attn_reference_forward(&one, j->q + qo, j->k + ko, j->v + ko, out,
                                            L ? &l1 : NULL, NULL);
    if (st == ATTN_SUCCESS && p->packed) {
        const size_t first = l1.q_start ? (size_t)*l1.q_start : 0;
        const size_t rows = l1.q_len ? (size_t)*l1.q_len : Sq;
        memcpy(j->out + qo + first * D, scratch + first * D, rows * D * sizeof(float));
    }
    return st;
}

static void *ref_worker(void *arg)
{
    ref_job *j = arg;
    const attn_problem *p = j->p;
    float *scratch = p->packed ? malloc((size_t)p->q_len * p->head_dim * sizeof(float)) : NULL;
    if (p->packed && !scratch) {
        pthread_mutex_lock(&j->lock);
        j->status = ATTN_ERROR_OUT_OF_MEMORY;
        pthread_mutex_unlock(&j->lock);
    }
    for (;;) {
        pthread_mutex_lock(&j->lock);
        int t = j->next < j->total && j->status == ATTN_SUCCESS ? j->next++ : -1;
        pthread_mutex_unlock(&j->lock);
        if (t < 0) break;
        attn_status st = ref_one(j, t, scratch);
        if (st != ATTN_SUCCESS) {
            pthread_mutex_lock(&j->lock);
            j->status = st;
            pthread_mutex_unlock(&j->lock);
        }
    }
    free(scratch);
    return NULL;
}

attn_status tool_reference(const attn_problem *p, const attn_lengths *lengths, const float *q,
                           const float *k, const float *v, float *out)
{
    /* ALiBi from max_bias: the library's slopes for all the heads (a
     * problem of one head would get head 0's) */
    float *slopes = NULL;
    if (!p->alibi_slopes && p->alibi_max_bias > 0) {
        if (!(slopes = malloc((size_t)p->q_heads * sizeof(float)))) return ATTN_ERROR_OUT_OF_MEMORY;
        attn_status st = attn_alibi_slopes(p->q_heads, p->alibi_max_bias, slopes);
        if (st != ATTN_SUCCESS) {
            free(slopes);
            return st;
        }
    }
    ref_job j = {p, lengths, slopes ? slopes : p->alibi_slopes, q, k, v, out, 0,
                 p->batch * p->q_heads, ATTN_SUCCESS, PTHREAD_MUTEX_INITIALIZER};
    int n = tool_host_threads();
    if (n > j.total) n = j.total;
    pthread_t threads[64];
    int started = 0;
    for (int i = 1; i < n; i++)
        if (pthread_create(&threads[started], NULL, ref_worker, &j) == 0) started++;
    ref_worker(&j);
    for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
    pthread_mutex_destroy(&j.lock);
    free(slopes);
    return j.status;
}

void tool_check_output(attn_kv_storage s, attn_dtype t, const float *got, const float *ref,
                       size_t n, tool_check *c)
{
    double atol, rtol, sum = 0;
    attn_kv_tolerance(s, t, &atol, &rtol);
    c->passed = 1;
    c->max_error = c->max_ratio = c->mean_error = 0;
    c->nonfinite = 0;
    for (size_t i = 0; i < n; i++) {
        const double e = fabs((double)got[i] - (double)ref[i]);
        if (!isfinite(e)) { /* NaN or inf in the output */
            c->nonfinite++;
            c->passed = 0;
            continue;
        }
        const double ratio = e / (atol + rtol * fabs((double)ref[i]));
        if (e > c->max_error) c->max_error = e;
        if (ratio > c->max_ratio) c->max_ratio = ratio;
        if (ratio > 1.0) c->passed = 0;
        sum += e;
    }
    c->mean_error = c->nonfinite < n ? sum / (double)(n - c->nonfinite) : 0;
}

const char *tool_check_word(int checked, const tool_check *c)
{
    return !checked ? "skipped" : c->passed ? "passed" : "failed";
}

void tool_check_text(int checked, const tool_check *c, char *buf, size_t size)
{
    if (!checked)
        snprintf(buf, size, "skipped");
    else if (c->nonfinite)
        snprintf(buf, size, "FAILED (%zu NaN/inf)", c->nonfinite);
    else
        snprintf(buf, size, "%s (%.3g of tol)", c->passed ? "ok" : "FAILED", c->max_ratio);
}

void tool_json_check(cJSON *j, int checked, const tool_check *c, int with_mean)
{
    const char *names[4] = {"max_error", "max_error_ratio", "mean_error", "nonfinite"};
    const double values[4] = {c->max_error, c->max_ratio, c->mean_error, (double)c->nonfinite};
    for (int i = 0; i < 4; i++) {
        if (i == 2 && !with_mean) continue;
        if (checked) cJSON_AddNumberToObject(j, names[i], values[i]);
        else cJSON_AddNullToObject(j, names[i]);
    }
    cJSON_AddStringToObject(j, "check", tool_check_word(checked, c));
}

void tool_shape_text(const attn_problem *p, char *buf, size_t size)
{
    if (p->q_len == p->kv_len)
        snprintf(buf, size, "B=%d Hq=%d Hkv=%d D=%d S=%d %s", p->batch, p->q_heads, p->kv_heads,
                 p->head_dim, p->q_len, p->causal ? "causal" : "full");
    else
        snprintf(buf, size, "B=%d Hq=%d Hkv=%d D=%d Sq=%d Skv=%d %s", p->batch, p->q_heads,
                 p->kv_heads, p->head_dim, p->q_len, p->kv_len, p->causal ? "causal" : "full");
}

void tool_json_problem(cJSON *j, const attn_problem *p)
{
    cJSON_AddNumberToObject(j, "batch", p->batch);
    cJSON_AddNumberToObject(j, "q_heads", p->q_heads);
    cJSON_AddNumberToObject(j, "kv_heads", p->kv_heads);
    cJSON_AddNumberToObject(j, "head_dim", p->head_dim);
    cJSON_AddNumberToObject(j, "q_len", p->q_len);
    cJSON_AddNumberToObject(j, "kv_len", p->kv_len);
    cJSON_AddStringToObject(j, "dtype", attn_dtype_name(p->dtype));
    cJSON_AddBoolToObject(j, "causal", p->causal);
}

void tool_json_plan(cJSON *j, const attn_plan_info *plan)
{
    cJSON_AddStringToObject(j, "family", plan->family);
    cJSON_AddStringToObject(j, "params", plan->params);
    cJSON_AddStringToObject(j, "params_source", plan->source);
    cJSON_AddNumberToObject(j, "local_bytes", (double)plan->local_bytes);
    cJSON_AddNumberToObject(j, "private_bytes", (double)plan->private_bytes);
}

void tool_json_times(cJSON *j, int reps, const attn_time_spread *s, double ratio, double flops,
                     double peak)
{
    const double gflops = s->median_ms > 0 ? flops / (s->median_ms * 1e6) : 0;
    cJSON_AddNumberToObject(j, "reps", reps);
    cJSON_AddNumberToObject(j, "median_ms", s->median_ms);
    cJSON_AddNumberToObject(j, "min_ms", s->min_ms);
    cJSON_AddNumberToObject(j, "q1_ms", s->q1_ms);
    cJSON_AddNumberToObject(j, "q3_ms", s->q3_ms);
    cJSON_AddNumberToObject(j, "max_ms", s->max_ms);
    cJSON_AddNumberToObject(j, "iqr_fraction", attn_time_spread_iqr(s));
    if (ratio >= 0) cJSON_AddNumberToObject(j, "time_ratio_to_first_dtype", ratio);
    cJSON_AddNumberToObject(j, "flops", flops);
    cJSON_AddNumberToObject(j, "gflops", gflops);
    if (peak > 0) {
        cJSON_AddNumberToObject(j, "peak_gflops", peak);
        cJSON_AddNumberToObject(j, "peak_fraction", gflops / peak);
    } else {
        cJSON_AddNullToObject(j, "peak_gflops");
        cJSON_AddNullToObject(j, "peak_fraction");
    }
}
