/* attn-bench -- times attn_forward on the DESIGN benchmark shapes (or one
 * shape from the command line) with clpeak's method, reports GFLOP/s and the
 * fraction of the device's measured fp32 peak, and checks each result
 * against the CPU reference. Uses only attn.h, OpenCL and cJSON. */
#define _POSIX_C_SOURCE 200809L
#include "attn.h"
#include "bench_decode.h"
#include "bench_compare.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define SEED 20240501u
#define TARGET_MS 1000.0 /* calibrated reps add up to at least this */
#define MIN_REPS 3
#define MAX_REPS 1000
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

typedef enum { FORMAT_TEXT, FORMAT_CSV, FORMAT_JSON } out_format;

typedef struct options {
    const char *device;
    int batch, q_heads, kv_heads, head_dim, seq, q_len, kv_len; /* 0 = not given */
    int causal;
    attn_dtype dtype;
    int reps; /* 0 = calibrate */
    out_format format;
    int check;
    int decode;         /* --decode: bench_decode.c */
    const char *splits; /* --splits LIST (decode) */
    int compare; /* --compare-materialized (bench_compare.c) */
} options;

typedef struct row {
    shape s;
    attn_dtype dtype;
    int causal;
    attn_plan_info plan;
    int reps;
    double median_ms, min_ms, flops, gflops;
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

/* ---- command line ---- */

static void usage(FILE *f)
{
    fprintf(f,
        "Usage: attn-bench [OPTIONS]\n"
        "Times attn_forward and reports median time, GFLOP/s (4*D per visible query-key\n"
        "pair) and the fraction of the device's measured fp32 FMA peak. With no shape\n"
        "option it runs the DESIGN prefill set: B=1 Hq=8 Hkv=2 D=64 S=512..4096 and\n"
        "B=1 Hq=32 Hkv=8 D=128 S=1024,2048, causal.\n"
        "\n"
        "  --device SEL          \"P:D\" or a substring of platform/vendor/device name\n"
        "                        (default: $ATTN_DEVICE, else the first GPU, else the\n"
        "                        first device; attn-info lists them)\n"
        "  --batch N             batch size (default 1)\n"
        "  --q-heads N           query heads (default 8)\n"
        "  --kv-heads N          key/value heads (default Hq/4 when 4 divides Hq, else Hq)\n"
        "  --head-dim N          head dimension, 1..256 (default 64)\n"
        "  --seq N               query and key/value length (default 1024)\n"
        "  --q-len N, --kv-len N the lengths separately (one given: the other follows)\n"
        "  --causal, --no-causal bottom-right causal mask or none (default causal)\n"
        "  --dtype f32|f16|bf16  storage type (default f32)\n"
        "  --reps N              timed runs per shape (default: calibrated to >= 1 s,\n"
        "                        between %d and %d)\n"
        "  --format text|csv|json  output format (default text)\n"
        "  --check, --no-check   compare with the CPU reference (default on; skipped for\n"
        "                        shapes too large for the reference, max_error null)\n"
        "  --decode              the DESIGN decode set (B=4 Hq=32 Hkv=8 D=128 Sq=1,\n"
        "                        kv 1024, 4096, 16384) through a KV cache, or the shape\n"
        "                        given (defaults B=4 Hq=32 D=128 Sq=1); reports K/V GB/s\n"
        "                        and its fraction of the copy bandwidth\n"
        "  --splits LIST         decode: KV splits to compare, interleaved, e.g.\n"
        "                        auto,1,2,4,8 (default auto: the heuristic)\n"
        "  --compare-materialized  time a materialized attention too (not yet supported)\n"
        "  --decode              the DESIGN decode set (not yet supported)\n"
        "  --compare-materialized  time attn_forward_materialized (CLBlast GEMMs around an\n"
        "                        S x S buffer) interleaved with attn_forward: speed ratio,\n"
        "                        device memory, largest difference; and the layer\n"
        "                        (d_model = Hq*D) split into projections and attention\n"
        "  --help                print this help and exit\n"
        "  --version             print the version and exit\n"
        "\n"
        "Exit status: 0 ok, 1 a failed check or a library error, 2 bad usage.\n",
        MIN_REPS, MAX_REPS);
}

static int parse_int(const char *opt, const char *text, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) {
        fprintf(stderr, "attn-bench: --%s wants an integer in %d..%d, not '%s'\n", opt, lo, hi,
                text);
        return -1;
    }
    *out = (int)v;
    return 0;
}

enum {
    OPT_DEVICE = 256, OPT_BATCH, OPT_QHEADS, OPT_KVHEADS, OPT_HEADDIM, OPT_SEQ, OPT_QLEN,
    OPT_KVLEN, OPT_CAUSAL, OPT_NOCAUSAL, OPT_DTYPE, OPT_REPS, OPT_FORMAT, OPT_CHECK,
    OPT_NOCHECK, OPT_DECODE, OPT_MATERIALIZED, OPT_HELP, OPT_VERSION, OPT_SPLITS
};

/* Returns -1 to continue, else the exit status. */
static int parse_args(int argc, char **argv, options *o)
{
    static const struct option longopts[] = {
        {"device", required_argument, NULL, OPT_DEVICE},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"q-heads", required_argument, NULL, OPT_QHEADS},
        {"kv-heads", required_argument, NULL, OPT_KVHEADS},
        {"head-dim", required_argument, NULL, OPT_HEADDIM},
        {"seq", required_argument, NULL, OPT_SEQ},
        {"q-len", required_argument, NULL, OPT_QLEN},
        {"kv-len", required_argument, NULL, OPT_KVLEN},
        {"causal", no_argument, NULL, OPT_CAUSAL},
        {"no-causal", no_argument, NULL, OPT_NOCAUSAL},
        {"dtype", required_argument, NULL, OPT_DTYPE},
        {"reps", required_argument, NULL, OPT_REPS},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"check", no_argument, NULL, OPT_CHECK},
        {"no-check", no_argument, NULL, OPT_NOCHECK},
        {"decode", no_argument, NULL, OPT_DECODE},
        {"splits", required_argument, NULL, OPT_SPLITS},
        {"compare-materialized", no_argument, NULL, OPT_MATERIALIZED},
        {"help", no_argument, NULL, OPT_HELP},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    int c, bad = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_DEVICE: o->device = optarg; break;
        case OPT_BATCH: bad |= parse_int("batch", optarg, 1, 1 << 20, &o->batch); break;
        case OPT_QHEADS: bad |= parse_int("q-heads", optarg, 1, 1 << 16, &o->q_heads); break;
        case OPT_KVHEADS: bad |= parse_int("kv-heads", optarg, 1, 1 << 16, &o->kv_heads); break;
        case OPT_HEADDIM: bad |= parse_int("head-dim", optarg, 1, 256, &o->head_dim); break;
        case OPT_SEQ: bad |= parse_int("seq", optarg, 1, INT_MAX, &o->seq); break;
        case OPT_QLEN: bad |= parse_int("q-len", optarg, 1, INT_MAX, &o->q_len); break;
        case OPT_KVLEN: bad |= parse_int("kv-len", optarg, 1, INT_MAX, &o->kv_len); break;
        case OPT_CAUSAL: o->causal = 1; break;
        case OPT_NOCAUSAL: o->causal = 0; break;
        case OPT_DTYPE:
            if (strcmp(optarg, "f32") == 0) o->dtype = ATTN_F32;
            else if (strcmp(optarg, "f16") == 0) o->dtype = ATTN_F16;
            else if (strcmp(optarg, "bf16") == 0) o->dtype = ATTN_BF16;
            else {
                fprintf(stderr, "attn-bench: --dtype wants f32, f16 or bf16, not '%s'\n", optarg);
                bad = -1;
            }
            break;
        case OPT_REPS: bad |= parse_int("reps", optarg, 1, 1000000, &o->reps); break;
        case OPT_FORMAT:
            if (strcmp(optarg, "text") == 0) o->format = FORMAT_TEXT;
            else if (strcmp(optarg, "csv") == 0) o->format = FORMAT_CSV;
            else if (strcmp(optarg, "json") == 0) o->format = FORMAT_JSON;
            else {
                fprintf(stderr, "attn-bench: --format wants text, csv or json, not '%s'\n",
                        optarg);
                bad = -1;
            }
            break;
        case OPT_CHECK: o->check = 1; break;
        case OPT_NOCHECK: o->check = 0; break;
        case OPT_DECODE: o->decode = 1; break;
        case OPT_SPLITS:
            o->splits = optarg;
            if (bench_decode_check_splits(optarg) != 0) {
                fprintf(stderr, "attn-bench: --splits wants up to 16 comma-separated values, "
                        "each \"auto\" or 1..256, not '%s'\n", optarg);
                bad = -1;
            }
            break;
        case OPT_MATERIALIZED: o->compare = 1; break;
        case OPT_HELP: usage(stdout); return EXIT_SUCCESS;
        case OPT_VERSION:
            printf("attn-bench %d.%d.%d (libattn %s)\n", ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR,
                   ATTN_VERSION_PATCH, attn_version_string());
            return EXIT_SUCCESS;
        default: /* getopt_long has said what is wrong */
            bad = -1;
            break;
        }
    }
    if (!bad && optind < argc) {
        fprintf(stderr, "attn-bench: unexpected argument '%s'\n", argv[optind]);
        bad = -1;
    }
    if (!bad && o->seq && (o->q_len || o->kv_len)) {
        fprintf(stderr, "attn-bench: give either --seq or --q-len/--kv-len, not both\n");
        bad = -1;
    }
    if (!bad && o->decode && o->compare) {
        fprintf(stderr, "attn-bench: --decode and --compare-materialized are separate runs\n");
        bad = -1;
    }
    if (!bad && o->splits && !o->decode) {
        fprintf(stderr, "attn-bench: --splits applies to --decode only\n");
        bad = -1;
    }
    if (bad) {
        fprintf(stderr, "Try 'attn-bench --help'.\n");
        return EXIT_USAGE;
    }
    return -1;
}

/* The one shape the options describe; 0 when none was given. */
static int custom_shape(const options *o, shape *s)
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
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

/* Runs one shape; *what names the failing step when the result is not
 * ATTN_SUCCESS. */
static attn_status bench_shape(attn_context *ctx, const options *o, const shape *s, row *r,
                               const char **what)
{
    attn_status st = ATTN_SUCCESS;
    memset(r, 0, sizeof *r);
    r->s = *s;
    r->dtype = o->dtype;
    r->causal = o->causal;
    r->flops = forward_flops(s, o->causal);

    attn_problem p = {s->batch, s->q_heads, s->kv_heads, s->head_dim, s->q_len, s->kv_len,
                      o->dtype, o->causal, 0.0f};
    size_t nq = (size_t)s->batch, nkv = (size_t)s->batch;
    if (!mul_ok(&nq, (size_t)s->q_heads) || !mul_ok(&nq, (size_t)s->q_len) ||
        !mul_ok(&nq, (size_t)s->head_dim) || !mul_ok(&nkv, (size_t)s->kv_heads) ||
        !mul_ok(&nkv, (size_t)s->kv_len) || !mul_ok(&nkv, (size_t)s->head_dim) ||
        nq > SIZE_MAX / 8 || nkv > SIZE_MAX / 8) {
        *what = "shape";
        fprintf(stderr, "attn-bench: the shape's element count overflows size_t\n");
        return ATTN_ERROR_INVALID_ARGUMENT;
    }
    const size_t esize = attn_dtype_size(o->dtype);
    float *hq = malloc(nq * sizeof(float)), *hk = malloc(nkv * sizeof(float));
    float *hv = malloc(nkv * sizeof(float)), *ho = malloc(nq * sizeof(float));
    void *stage = malloc((nq > nkv ? nq : nkv) * esize);
    cl_mem bq = NULL, bk = NULL, bv = NULL, bo = NULL;
    double *times = NULL;
    if (!hq || !hk || !hv || !ho || !stage) {
        *what = "host allocation";
        fprintf(stderr, "attn-bench: out of host memory for %zu + 2 x %zu elements\n", nq, nkv);
        st = ATTN_ERROR_OUT_OF_MEMORY;
        goto done;
    }

    /* Inputs: uniform [-1, 1) from a fixed seed, stored in the dtype; the
     * host copies are rounded through the dtype so the reference sees what
     * the device sees. */
    rng_state = SEED;
    float *host[3] = {hq, hk, hv};
    size_t count[3] = {nq, nkv, nkv};
    cl_mem *dev[3] = {&bq, &bk, &bv};
    cl_context clctx = attn_context_cl_context(ctx);
    for (int t = 0; t < 3; t++) {
        for (size_t i = 0; i < count[t]; i++) host[t][i] = rng_uniform();
        if ((st = attn_convert_from_f32(o->dtype, host[t], stage, count[t])) != ATTN_SUCCESS ||
            (st = attn_convert_to_f32(o->dtype, stage, host[t], count[t])) != ATTN_SUCCESS) {
            *what = "attn_convert";
            goto done;
        }
        cl_int err;
        *dev[t] = clCreateBuffer(clctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, count[t] * esize,
                                 stage, &err);
        if (err != CL_SUCCESS) {
            *what = "clCreateBuffer";
            fprintf(stderr, "attn-bench: clCreateBuffer of %zu bytes failed: %d\n",
                    count[t] * esize, (int)err);
            st = ATTN_ERROR_OUT_OF_MEMORY;
            goto done;
        }
    }
    cl_int err;
    bo = clCreateBuffer(clctx, CL_MEM_READ_WRITE, nq * esize, NULL, &err);
    if (err != CL_SUCCESS) {
        *what = "clCreateBuffer";
        fprintf(stderr, "attn-bench: clCreateBuffer of %zu bytes failed: %d\n", nq * esize,
                (int)err);
        st = ATTN_ERROR_OUT_OF_MEMORY;
        goto done;
    }
    const size_t D = (size_t)s->head_dim;
    attn_tensor tq = {bq, 0, (size_t)s->q_heads * s->q_len * D, (size_t)s->q_len * D, D};
    attn_tensor tk = {bk, 0, (size_t)s->kv_heads * s->kv_len * D, (size_t)s->kv_len * D, D};
    attn_tensor tv = tk;
    tv.buffer = bv;
    attn_tensor to = tq;
    to.buffer = bo;

    /* Build (or load) the kernels and learn the plan, then clpeak's method:
     * an untimed warm-up, a calibration run, enough reps for TARGET_MS. */
    *what = "attn_prepare";
    if ((st = attn_prepare(ctx, &p, &r->plan)) != ATTN_SUCCESS) goto done;
    *what = "attn_forward";
    double ms;
    if ((st = timed_forward(ctx, &p, &tq, &tk, &tv, &to, &ms)) != ATTN_SUCCESS) goto done;
    if ((st = timed_forward(ctx, &p, &tq, &tk, &tv, &to, &ms)) != ATTN_SUCCESS) goto done;
    int reps = o->reps;
    if (!reps) {
        double want = ms > 0 ? ceil(TARGET_MS / ms) : MAX_REPS;
        reps = want < MIN_REPS ? MIN_REPS : want > MAX_REPS ? MAX_REPS : (int)want;
    }
    times = malloc((size_t)reps * sizeof *times);
    if (!times) {
        *what = "host allocation";
        st = ATTN_ERROR_OUT_OF_MEMORY;
        goto done;
    }
    for (int i = 0; i < reps; i++)
        if ((st = timed_forward(ctx, &p, &tq, &tk, &tv, &to, &times[i])) != ATTN_SUCCESS)
            goto done;
    qsort(times, (size_t)reps, sizeof *times, cmp_double);
    r->reps = reps;
    r->min_ms = times[0];
    r->median_ms = reps % 2 ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
    r->gflops = r->median_ms > 0 ? r->flops / (r->median_ms * 1e6) : 0;

    /* The check: the last run's output against the reference. */
    if (o->check && r->flops <= CHECK_FLOPS_PER_THREAD * host_threads()) {
        *what = "reading the output";
        err = clEnqueueReadBuffer(attn_context_queue(ctx), bo, CL_TRUE, 0, nq * esize, stage, 0,
                                  NULL, NULL);
        if (err != CL_SUCCESS) {
            fprintf(stderr, "attn-bench: clEnqueueReadBuffer failed: %d\n", (int)err);
            st = ATTN_ERROR_OPENCL;
            goto done;
        }
        if ((st = attn_convert_to_f32(o->dtype, stage, ho, nq)) != ATTN_SUCCESS) goto done;
        float *ref = stage; /* the staging area is no longer needed as such */
        if (esize < sizeof(float)) {
            ref = malloc(nq * sizeof(float));
            if (!ref) {
                *what = "host allocation";
                st = ATTN_ERROR_OUT_OF_MEMORY;
                goto done;
            }
        }
        *what = "attn_reference_forward";
        st = reference_parallel(&p, hq, hk, hv, ref);
        if (st == ATTN_SUCCESS) {
            double atol, rtol, sum = 0;
            attn_tolerance(o->dtype, &atol, &rtol);
            r->checked = 1;
            r->passed = 1;
            for (size_t i = 0; i < nq; i++) {
                double e = fabs((double)ho[i] - (double)ref[i]);
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
            r->mean_error = r->nonfinite < nq ? sum / (double)(nq - r->nonfinite) : 0;
        }
        if (ref != stage) free(ref);
    }

done:
    free(times);
    if (bq) clReleaseMemObject(bq);
    if (bk) clReleaseMemObject(bk);
    if (bv) clReleaseMemObject(bv);
    if (bo) clReleaseMemObject(bo);
    free(stage);
    free(hq);
    free(hk);
    free(hv);
    free(ho);
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

static void print_text_header(void)
{
    printf("%-38s %-5s %-7s %-9s %5s %10s %9s %6s  %-9s %s\n", "shape", "dtype", "family",
           "source", "reps", "median ms", "GFLOP/s", "peak", "max error", "check");
}

static void print_text_row(const row *r, double peak)
{
    char sh[128], pk[16] = "-", err[32] = "-";
    shape_text(&r->s, r->causal, sh, sizeof sh);
    if (peak > 0) snprintf(pk, sizeof pk, "%.1f%%", 100.0 * r->gflops / peak);
    if (r->checked) snprintf(err, sizeof err, "%.2e", r->max_error);
    char check[64];
    if (!r->checked)
        snprintf(check, sizeof check, "skipped");
    else if (r->nonfinite)
        snprintf(check, sizeof check, "FAILED (%zu NaN/inf)", r->nonfinite);
    else
        snprintf(check, sizeof check, "%s (%.3g of tol)", r->passed ? "ok" : "FAILED",
                 r->max_ratio);
    printf("%-38s %-5s %-7s %-9s %5d %10.3f %9.2f %6s  %-9s %s  [%s]\n", sh,
           attn_dtype_name(r->dtype), r->plan.family, r->plan.source, r->reps, r->median_ms,
           r->gflops, pk, err, check, r->plan.params);
    fflush(stdout);
}

static void print_csv_header(void)
{
    printf("batch,q_heads,kv_heads,head_dim,q_len,kv_len,dtype,causal,family,params,"
           "params_source,reps,median_ms,min_ms,gflops,peak_gflops,peak_fraction,max_error,"
           "max_error_ratio,mean_error,nonfinite,check\n");
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
    printf("%s\n", check_word(r));
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

int main(int argc, char **argv)
{
    options o = {0};
    o.causal = 1;
    o.dtype = ATTN_F32;
    o.format = FORMAT_TEXT;
    o.check = 1;
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0) return rc;

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
            return EXIT_USAGE;
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
    if (o.format == FORMAT_TEXT) {
        printf("attn-bench %s: device %s / %s (%s, %u compute units, driver %s)\n",
               attn_version_string(), dev.platform, dev.name, dev.type,
               (unsigned)dev.compute_units, dev.driver);
        fflush(stdout);
    }

    double peak = 0;
    st = attn_device_peak_gflops(ctx, &peak);
    if (st != ATTN_SUCCESS) {
        report_failure("attn_device_peak_gflops", st, ctx);
        peak = 0;
        failed = 1;
    }
    if (o.format == FORMAT_TEXT) {
        if (peak > 0) printf("fp32 FMA peak: %.1f GFLOP/s\n", peak);
        printf("dtype %s, seed %u, check %s\n", attn_dtype_name(o.dtype), SEED,
               o.check ? "on" : "off");
        if (!o.decode && !o.compare) print_text_header();
    } else if (o.format == FORMAT_CSV && !o.decode && !o.compare) {
        print_csv_header();
    }

    cJSON *results = cJSON_CreateArray(), *errors = cJSON_CreateArray();
    if (o.decode) {
        bench_decode_config dc = {(int)o.format, o.dtype, o.reps, o.check, o.splits,
                                  0, 0, 0, 0, 0, 0};
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
                                    s->kv_len, o.dtype, o.causal, 0.0f};
            probs[i] = p;
        }
        failed |= !probs || bench_compare(ctx, probs, nshapes, &co, results, errors);
        free(probs);
        nshapes = 0;
    }
    for (size_t i = 0; i < nshapes; i++) {
        row r;
        const char *what = "";
        st = bench_shape(ctx, &o, &shapes[i], &r, &what);
        if (st != ATTN_SUCCESS) {
            char sh[128];
            shape_text(&shapes[i], o.causal, sh, sizeof sh);
            /* the context's message belongs to calls on the context only */
            const char *msg = strcmp(what, "attn_prepare") == 0 || strcmp(what, "attn_forward") == 0
                                  ? attn_last_error(ctx)
                                  : "(no detail beyond any message above)";
            fprintf(stderr, "attn-bench: %s %s: %s: %s: %s\n", sh, attn_dtype_name(o.dtype), what,
                    attn_status_name(st), msg);
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "shape", sh);
            cJSON_AddStringToObject(e, "step", what);
            cJSON_AddStringToObject(e, "status", attn_status_name(st));
            cJSON_AddStringToObject(e, "message", msg);
            cJSON_AddItemToArray(errors, e);
            failed = 1;
            continue;
        }
        if (r.checked && !r.passed) {
            char sh[128];
            shape_text(&r.s, r.causal, sh, sizeof sh);
            fprintf(stderr, "attn-bench: CHECK FAILED: %s %s: max error %.3e is %.3g times the "
                    "tolerance; %zu outputs NaN or inf\n", sh, attn_dtype_name(r.dtype),
                    r.max_error, r.max_ratio, r.nonfinite);
            failed = 1;
        }
        if (o.format == FORMAT_TEXT) print_text_row(&r, peak);
        else if (o.format == FORMAT_CSV) print_csv_row(&r, peak);
        cJSON_AddItemToArray(results, json_row(&r, peak));
    }

    if (o.format == FORMAT_JSON) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "tool", "attn-bench");
        cJSON_AddStringToObject(root, "version", attn_version_string());
        cJSON *d = cJSON_AddObjectToObject(root, "device");
        cJSON_AddStringToObject(d, "platform", dev.platform);
        cJSON_AddStringToObject(d, "name", dev.name);
        cJSON_AddStringToObject(d, "vendor", dev.vendor);
        cJSON_AddStringToObject(d, "driver", dev.driver);
        cJSON_AddNumberToObject(d, "compute_units", dev.compute_units);
        cJSON_AddStringToObject(d, "type", dev.type);
        if (peak > 0) cJSON_AddNumberToObject(root, "peak_gflops", peak);
        else cJSON_AddNullToObject(root, "peak_gflops");
        cJSON_AddNumberToObject(root, "seed", SEED);
        cJSON_AddItemToObject(root, "results", results);
        cJSON_AddItemToObject(root, "errors", errors);
        results = errors = NULL;
        char *text = cJSON_Print(root);
        if (text) puts(text);
        else failed = 1;
        free(text);
        cJSON_Delete(root);
    } else if (o.format == FORMAT_TEXT) {
        printf("%s\n", failed ? "FAILED: see the messages above" : "all results within tolerance "
               "(or not checked)");
    }
    cJSON_Delete(results);
    cJSON_Delete(errors);
    attn_context_release(ctx);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
