/* bench_decode.c -- attn-bench --decode: fills a KV cache per shape,
 * cache type (dtype, stored as it or int8) and block size (contiguous or
 * paged), times attn_decode with
 * each requested number of KV splits (ATTN_PARAMS splits=N, or the
 * heuristic) in each type and cache, all interleaved so that their ratios
 * come from one run, and reports the K/V bytes read per
 * second against the device's copy bandwidth measured in the same run, with
 * each time's spread. Checks each configuration's output against the CPU
 * reference. Uses only attn.h, OpenCL and cJSON. */
#define _POSIX_C_SOURCE 200809L
#include "bench_decode.h"
#include "bench_decode_cache.h"
#include "bench_decode_mixed.h"
#include "common.h"
#include "tool_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CONF (BENCH_DECODE_MAX_TYPES * BENCH_MAX_BLOCKS * BENCH_MAX_SPLITS)

/* DESIGN "Benchmark shapes", decode. */
static const dshape decode_set[] = {
    {4, 32, 8, 128, 1, 1024}, {4, 32, 8, 128, 1, 4096}, {4, 32, 8, 128, 1, 16384}};

typedef struct dconf {
    int splits;          /* requested; 0 = the heuristic ("auto") */
    int type;            /* a cache type (bench_decode.h) */
    int block;           /* index into the caches compared (run_shape's blocks) */
    int block_size;      /* that cache's: 0 contiguous, else paged */
    attn_plan_info plan; /* params end with the splits actually launched */
    double *times;
    double median_ms, min_ms;
    attn_time_spread spread;
    double ratio;        /* median / the first type's with the same block and splits */
    double block_ratio;  /* median / the same type's first block's with the same splits */
    int checked;
    tool_check chk;      /* when checked */
} dconf;

/* The shape, and the variant after it when there is one. */
static void shape_text(const dshape *s, const bench_variant *v, char *buf, size_t size)
{
    char vt[192] = "";
    if (v) bench_variant_text(v, vt, sizeof vt);
    snprintf(buf, size, "B=%d Hq=%d Hkv=%d D=%d Sq=%d kv=%d%s%s", s->batch, s->q_heads,
             s->kv_heads, s->head_dim, s->q_len, s->kv_len, *vt ? " " : "", vt);
}

void bench_decode_error(attn_context *ctx, cJSON *errors, const char *what, const char *step,
                        attn_status st)
{
    const int lib = strncmp(step, "attn_", 5) == 0 && strcmp(step, "attn_reference_forward");
    const char *msg = lib ? attn_last_error(ctx) : tool_refusal(step, "(no detail)");
    char where[320];
    snprintf(where, sizeof where, "decode %s", what);
    tool_error("attn-bench", where, step, st, msg);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "shape", what);
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

/* The keys a step reads per sequence: the whole prefix, or with a
 * window's left limit L only the last q_len + L keys (the rows' windows) */
static double keys_read(const dshape *s, const bench_variant *v)
{
    const int left = v && v->use_window ? v->window_left : -1;
    return left < 0 || (double)s->q_len + left >= s->kv_len ? s->kv_len
                                                             : (double)s->q_len + left;
}

void bench_json_bandwidth(cJSON *j, double kv_bytes, double kv_gbps, double copy_gbps)
{
    cJSON_AddNumberToObject(j, "kv_bytes", kv_bytes);
    cJSON_AddNumberToObject(j, "kv_gbps", kv_gbps);
    if (copy_gbps > 0) {
        cJSON_AddNumberToObject(j, "copy_gbps", copy_gbps);
        cJSON_AddNumberToObject(j, "bandwidth_fraction", kv_gbps / copy_gbps);
    } else {
        cJSON_AddNullToObject(j, "copy_gbps");
        cJSON_AddNullToObject(j, "bandwidth_fraction");
    }
}

/* The row of one configuration: text or CSV on stdout, and a JSON object
 * into results in every format (attn-bench reads the spread from it). */
static void print_row(const bench_decode_config *cfg, const dshape *s, const dconf *c,
                      int nblocks, double flops, double peak, double copy_gbps, int reps,
                      cJSON *results)
{
    const attn_dtype dtype = bench_decode_dtype(cfg, c->type);
    const int int8 = bench_decode_storage(cfg, c->type) == ATTN_KV_INT8;
    const int ratios = bench_decode_ntypes(cfg) > 1;
    const double bytes = 2.0 * s->batch * s->kv_heads * keys_read(s, cfg->variant) *
                         bench_decode_row_bytes(cfg, c->type, s->head_dim);
    const attn_problem p = {.batch = s->batch, .q_heads = s->q_heads, .kv_heads = s->kv_heads,
                            .head_dim = s->head_dim, .q_len = s->q_len, .kv_len = s->kv_len,
                            .dtype = dtype, .causal = 1, .scale = 0.0f}; /* q_len new rows,
                            kv_len keys in the cache */
    const double kv_gbps = c->median_ms > 0 ? bytes / (c->median_ms * 1e6) : 0;
    const double gflops = c->median_ms > 0 ? flops / (c->median_ms * 1e6) : 0;
    const double frac = copy_gbps > 0 ? kv_gbps / copy_gbps : 0;
    const double iqr = attn_time_spread_iqr(&c->spread);
    char sh[288], sp[16], tn[16];
    shape_text(s, cfg->variant, sh, sizeof sh);
    splits_word(c, sp, sizeof sp);
    bench_decode_type_name(cfg, c->type, tn, sizeof tn);
    if (cfg->format == 0) {
        char err[32] = "-", check[48], ratio[16] = "", bratio[16] = "";
        if (c->checked) snprintf(err, sizeof err, "%.2e", c->chk.max_error);
        tool_check_text(c->checked, &c->chk, check, sizeof check);
        if (ratios) snprintf(ratio, sizeof ratio, " %6.3f", c->ratio);
        if (nblocks > 1) snprintf(bratio, sizeof bratio, " %6.3f", c->block_ratio);
        printf("%-36s %-8s %5d %-6s %-7s %-9s %5d %9.3f %9.3f %9.3f %5.1f%% %9.1f %6.1f%% %8.1f"
               "%s%s  %-9s %s  [%s]\n", sh, tn, c->block_size, sp, c->plan.family,
               c->plan.source, reps, c->median_ms, c->spread.min_ms, c->spread.max_ms, 100 * iqr,
               kv_gbps, 100.0 * frac, gflops, ratio, bratio, err, check, c->plan.params);
    } else if (cfg->format == 1) {
        printf("%d,%d,%d,%d,%d,%d,%s,1,%s,\"%s\",%s,%s,%d,%.4f,%.4f,%.3f,", s->batch, s->q_heads,
               s->kv_heads, s->head_dim, s->q_len, s->kv_len, tn, c->plan.family, c->plan.params,
               c->plan.source, sp, reps, c->median_ms, c->min_ms, gflops);
        if (peak > 0) printf("%.3f,%.4f,", peak, gflops / peak);
        else printf(",,");
        printf("%.3f,%.3f,%.4f,", kv_gbps, copy_gbps, frac);
        if (c->checked)
            printf("%.3e,%.4g,%zu,", c->chk.max_error, c->chk.max_ratio, c->chk.nonfinite);
        else printf(",,,");
        printf("%s,%.4f,%.4f,%.4f,%.4f,%.4f,%d,", tool_check_word(c->checked, &c->chk),
               c->spread.q1_ms, c->spread.q3_ms, c->spread.max_ms, iqr, c->ratio, c->block_size);
        char vt[192] = "";
        if (cfg->variant) bench_variant_text(cfg->variant, vt, sizeof vt);
        if (nblocks > 1) printf("%.4f", c->block_ratio);
        printf(",\"%s\"\n", vt); /* the variant, last: as prefill's rows say it */
    }
    cJSON *j = cJSON_CreateObject();
    tool_json_problem(j, &p);
    cJSON_AddStringToObject(j, "mode", "decode");
    cJSON_AddStringToObject(j, "kv_storage", int8 ? "int8" : "dtype");
    tool_json_plan(j, &c->plan);
    cJSON_AddStringToObject(j, "splits_requested", sp);
    cJSON_AddNumberToObject(j, "block_size", c->block_size);
    tool_json_times(j, reps, &c->spread, c->ratio, flops, peak);
    if (nblocks > 1) cJSON_AddNumberToObject(j, "time_ratio_to_first_block", c->block_ratio);
    bench_json_bandwidth(j, bytes, kv_gbps, copy_gbps);
    tool_json_check(j, c->checked, &c->chk, 0);
    if (cfg->variant) bench_variant_json(j, cfg->variant);
    cJSON_AddItemToArray(results, j);
    fflush(stdout);
}

/* The override for configuration c: the caller's own (ATTN_PARAMS, base),
 * with c's splits in place of any splits= it names (a name given twice is
 * refused). */
static attn_status select_conf(attn_context *ctx, const char *base, const dconf *c)
{
    if (!c->splits) return attn_context_set_params(ctx, base);
    /* base's items less any splits=, then ours: sized to fit, never cut */
    const size_t size = (base ? strlen(base) : 0) + 32;
    char *text = malloc(size), *copy = malloc(size);
    if (!text || !copy) {
        free(text), free(copy);
        return ATTN_ERROR_OUT_OF_MEMORY;
    }
    snprintf(copy, size, "%s", base ? base : "");
    size_t n = 0;
    char *save = NULL;
    for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
        if (strncmp(t, "splits=", 7) != 0) n += (size_t)snprintf(text + n, size - n, "%s,", t);
    snprintf(text + n, size - n, "splits=%d", c->splits);
    const attn_status st = attn_context_set_params(ctx, text);
    free(text), free(copy);
    return st;
}

/* The configurations of one shape, for the timing loop. */
typedef struct decode_runs {
    attn_context *ctx;
    const dtype_res *res;
    const dconf *confs;
    const char *base;              /* the caller's override (ATTN_PARAMS) */
    bench_copy_samples copies;
    const char *step;              /* what failed */
    bench_flush flush;             /* overwritten before each run */
} decode_runs;

/* bench_flush: at least 128 MiB (what NVIDIA's and AMD's OpenCL report as
 * the cache varies; kv 1024 is 17-34 MB, an H100's L2 50 MB), twice the
 * reported size, at most a quarter of one allocation. Not on a CPU: PoCL
 * reports the whole socket's L3 (hundreds of MB here), whose writing would
 * take longer than the runs. */
bench_flush bench_flush_create(attn_context *ctx)
{
    bench_flush f = {NULL, 0};
    cl_device_id dev = attn_context_device(ctx);
    cl_device_type type = 0;
    cl_ulong cache = 0, max_alloc = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL) != CL_SUCCESS ||
        !(type & CL_DEVICE_TYPE_GPU) ||
        clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof cache, &cache, NULL) !=
            CL_SUCCESS ||
        clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL) !=
            CL_SUCCESS)
        return f;
    cl_ulong want = 2 * cache > (128u << 20) ? 2 * cache : (128u << 20);
    if (want > max_alloc / 4) want = max_alloc / 4;
    cl_int err;
    f.buf = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_WRITE, (size_t)want, NULL,
                           &err);
    if (err != CL_SUCCESS) f.buf = NULL;
    f.bytes = f.buf ? (size_t)want : 0;
    return f;
}

attn_status bench_flush_run(attn_context *ctx, const bench_flush *f, int c)
{
    if (!f->buf) return ATTN_SUCCESS;
    const cl_uint word = (cl_uint)c; /* finished before the timed run starts, on either clock */
    cl_command_queue q = attn_context_queue(ctx);
    if (clEnqueueFillBuffer(q, f->buf, &word, sizeof word, 0, f->bytes, 0, NULL, NULL) !=
            CL_SUCCESS ||
        clFinish(q) != CL_SUCCESS)
        return ATTN_ERROR_OPENCL;
    return ATTN_SUCCESS;
}

void bench_flush_release(bench_flush *f)
{
    if (f->buf) clReleaseMemObject(f->buf);
    f->buf = NULL;
    f->bytes = 0;
}

static attn_status run_decode(void *arg, int c)
{
    decode_runs *d = arg;
    const dtype_res *r = &d->res[d->confs[c].type];
    d->step = "attn_decode";
    return attn_decode(d->ctx, r->caches[d->confs[c].block], &r->p, &r->tq, &r->to, NULL, NULL,
                       NULL);
}

static attn_status select_run(void *arg, int c)
{
    decode_runs *d = arg;
    d->step = "clEnqueueFillBuffer (the cache flush)";
    const attn_status st = bench_flush_run(d->ctx, &d->flush, c);
    if (st != ATTN_SUCCESS) return st;
    d->step = "attn_context_set_params";
    return select_conf(d->ctx, d->base, &d->confs[c]);
}

attn_status bench_copy_sample(bench_copy_samples *c, int rep)
{
    if (rep % c->every != 0 || c->n >= BENCH_COPY_SAMPLES) return ATTN_SUCCESS;
    attn_status st = attn_device_copy_gbps(c->ctx, &c->gbps[c->n]);
    if (st == ATTN_SUCCESS) c->n++;
    return st;
}

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

int bench_copy_every(int reps, int n)
{
    int every = reps / BENCH_COPY_SAMPLES > 1 ? reps / BENCH_COPY_SAMPLES : 1;
    while (gcd(every, n) > 1) every++;
    return every;
}

static attn_status copy_sample(void *arg, int rep)
{
    decode_runs *d = arg;
    d->step = "attn_device_copy_gbps";
    return bench_copy_sample(&d->copies, rep);
}

/* Returns 0 when every configuration ran and passed its check. blocks:
 * the caches compared (0 contiguous, else a block size). */
static int run_shape(attn_context *ctx, const bench_decode_config *cfg, const dshape *s,
                     const int *blocks, int nblocks, dconf *confs, int nconf, double peak,
                     cJSON *results, cJSON *errors)
{
    char sh[288];
    shape_text(s, cfg->variant, sh, sizeof sh);
    const char *base = getenv("ATTN_PARAMS"); /* the context's own override, read at creation */
    const attn_problem whole = {.batch = s->batch, .q_heads = s->q_heads,
                                .kv_heads = s->kv_heads, .head_dim = s->head_dim,
                                .q_len = s->q_len, .kv_len = s->kv_len};
    dtype_res res[BENCH_DECODE_MAX_TYPES];
    memset(res, 0, sizeof res);
    double *times[MAX_CONF];
    float *ho = NULL, *ref = NULL;
    int failed = 1, reps = 0, bad_type = 0;
    bench_flush flush = {NULL, 0}; /* here: done releases it (the gotos pass dr) */
    const char *step = "host allocation";
    size_t nq, nkv;
    /* each type's q, k, v and staging copy (at most floats), the output
     * and the reference's */
    attn_status st = tool_shape_elements(&whole, &nq, &nkv, &step);
    if (st == ATTN_SUCCESS)
        st = tool_host_holds(((double)bench_decode_ntypes(cfg) * ((double)nq + 3.0 * (double)nkv) +
                              2.0 * (double)nq) * (double)sizeof(float), &step);
    if (st != ATTN_SUCCESS) goto done;
    if (!(ho = malloc(nq * sizeof *ho))) {
        st = ATTN_ERROR_OUT_OF_MEMORY;
        goto done;
    }
    for (int t = 0; t < bench_decode_ntypes(cfg); t++) {
        bad_type = t;
        st = dtype_res_setup(ctx, s, bench_decode_dtype(cfg, t), bench_decode_storage(cfg, t),
                             cfg->variant, blocks, nblocks, &res[t], &step);
        if (st != ATTN_SUCCESS) goto done;
    }

    decode_runs dr = {ctx, res, confs, base, {ctx, {0}, 0, 1}, "", {NULL, 0}};
    tool_timing_new_series();
    flush = dr.flush = bench_flush_create(ctx);
    double ms = 0;
    for (int c = 0; c < nconf; c++) {
        const dtype_res *r = &res[confs[c].type];
        bad_type = confs[c].type;
        step = "attn_context_set_params";
        if ((st = select_conf(ctx, base, &confs[c])) != ATTN_SUCCESS) goto done;
        step = "attn_decode_prepare";
        if ((st = attn_decode_prepare(ctx, r->caches[confs[c].block], &r->p, &confs[c].plan)) !=
            ATTN_SUCCESS)
            goto done;
        step = "attn_decode";
        if ((st = tool_timed(ctx, run_decode, &dr, c, &ms)) != ATTN_SUCCESS ||
            (st = tool_timed(ctx, run_decode, &dr, c, &ms)) != ATTN_SUCCESS)
            goto done;
        if (c == 0) reps = tool_reps(cfg->reps, BENCH_DECODE_TARGET_MS / nconf, ms,
                                       BENCH_DECODE_MIN_REPS, BENCH_DECODE_MAX_REPS);
        if (!(times[c] = confs[c].times = malloc(sizeof(double) * (size_t)reps))) {
            st = ATTN_ERROR_OUT_OF_MEMORY;
            step = "host allocation";
            goto done;
        }
    }
    /* interleaved: every configuration once per round, and the copy
     * bandwidth in a few rounds spread over the run (the device may be
     * shared: the fraction must compare like with like) */
    dr.copies.every = bench_copy_every(reps, nconf);
    tool_rounds rounds = {nconf, reps, run_decode, copy_sample, select_run, &dr, times, 0};
    st = tool_time_rounds(ctx, &rounds);
    if (st != ATTN_SUCCESS) {
        step = dr.step;
        bad_type = confs[rounds.failed].type;
        goto done;
    }
    const attn_time_spread copy = attn_time_spread_of(dr.copies.gbps, dr.copies.n);
    for (int c = 0; c < nconf; c++) {
        confs[c].spread = attn_time_spread_of(confs[c].times, reps);
        confs[c].min_ms = confs[c].spread.min_ms;
        confs[c].median_ms = confs[c].spread.median_ms;
    }
    /* c = (type * nblocks + block) * nsplits + split: the first type's with
     * the same block and splits, and the same type's first block's */
    const int per_type = nconf / bench_decode_ntypes(cfg), nsplits = per_type / nblocks;
    for (int c = 0; c < nconf; c++) {
        const double by_type = confs[c % per_type].median_ms;
        const double by_block = confs[c / per_type * per_type + c % nsplits].median_ms;
        confs[c].ratio = by_type > 0 ? confs[c].median_ms / by_type : 0;
        confs[c].block_ratio = by_block > 0 ? confs[c].median_ms / by_block : 0;
    }

    /* the check: each configuration's output against its type's reference */
    if (cfg->check && bench_variant_flops(&res[0].p, NULL) <= BENCH_DECODE_CHECK_FLOPS &&
        (ref = malloc(nq * sizeof *ref))) {
        for (int c = 0; c < nconf; c++) {
            const dtype_res *r = &res[confs[c].type];
            bad_type = confs[c].type;
            if (c == 0 || confs[c].type != confs[c - 1].type) {
                step = "attn_reference_forward";
                if ((st = tool_reference(&r->p, NULL, r->hq, r->hk, r->hv, ref)) != ATTN_SUCCESS)
                    goto done;
            }
            step = "attn_decode";
            if ((st = select_conf(ctx, base, &confs[c])) != ATTN_SUCCESS ||
                (st = tool_timed(ctx, run_decode, &dr, c, &ms)) != ATTN_SUCCESS)
                goto done;
            step = "reading the output";
            if (clEnqueueReadBuffer(attn_context_queue(ctx), r->bo, CL_TRUE, 0, nq * r->esize,
                                    r->stage, 0, NULL, NULL) != CL_SUCCESS) {
                st = ATTN_ERROR_OPENCL;
                goto done;
            }
            attn_convert_to_f32(r->dtype, r->stage, ho, nq);
            confs[c].checked = 1;
            tool_check_output(r->storage, r->dtype, ho, ref, nq, &confs[c].chk);
        }
    }
    failed = 0;
    if (cfg->format == 0)
        printf("%-36s copy bandwidth %.1f GB/s (median of %d, %.1f..%.1f; read + written)\n", sh,
               copy.median_ms, dr.copies.n, copy.min_ms, copy.max_ms);
    for (int c = 0; c < nconf; c++) {
        print_row(cfg, s, &confs[c], nblocks, bench_variant_flops(&res[0].p, NULL), peak,
                  copy.median_ms, reps, results);
        if (confs[c].checked && !confs[c].chk.passed) {
            char tn[16];
            fprintf(stderr, "attn-bench: CHECK FAILED: decode %s %s block %d splits %d: max "
                    "error %.3e is %.3g times the tolerance; %zu outputs NaN or inf\n", sh,
                    bench_decode_type_name(cfg, confs[c].type, tn, sizeof tn),
                    confs[c].block_size, confs[c].splits, confs[c].chk.max_error,
                    confs[c].chk.max_ratio, confs[c].chk.nonfinite);
            failed = 1;
        }
    }
done:
    if (st != ATTN_SUCCESS) {
        char what[320], tn[16];
        snprintf(what, sizeof what, "%s %s", sh,
                 bench_decode_type_name(cfg, bad_type, tn, sizeof tn));
        bench_decode_error(ctx, errors, what, step, st);
        failed = 1;
    }
    attn_context_set_params(ctx, base); /* as it was */
    bench_flush_release(&flush);
    for (int c = 0; c < nconf; c++) {
        free(confs[c].times);
        confs[c].times = NULL;
    }
    for (int t = 0; t < bench_decode_ntypes(cfg); t++) dtype_res_free(&res[t]);
    free(ho), free(ref);
    return failed;
}

int bench_decode(attn_context *ctx, const bench_decode_config *cfg, double peak,
                 cJSON *results, cJSON *errors)
{
    if (cfg->mixed) return bench_decode_mixed(ctx, cfg, peak, results, errors);
    int splits[BENCH_MAX_SPLITS], blocks[BENCH_MAX_BLOCKS];
    const int nsplits = bench_parse_splits(cfg->splits ? cfg->splits : "auto", splits,
                                           BENCH_MAX_SPLITS);
    const int nblocks = bench_parse_blocks(cfg->blocks ? cfg->blocks : "0", blocks,
                                           BENCH_MAX_BLOCKS);
    if (nsplits < 0 || nblocks < 0 || cfg->ndtypes < 1 || cfg->ndtypes > BENCH_MAX_DTYPES) {
        fprintf(stderr, "attn-bench: bad --splits '%s' or --block-size '%s' (attn-bench --help)\n",
                cfg->splits ? cfg->splits : "", cfg->blocks ? cfg->blocks : "");
        return 2;
    }
    /* type-major, then block: configuration c is type c / (nblocks * nsplits),
     * block c / nsplits % nblocks, splits[c % nsplits] */
    dconf confs[MAX_CONF];
    const int nconf = nsplits * nblocks * bench_decode_ntypes(cfg);
    for (int c = 0; c < nconf; c++) {
        memset(&confs[c], 0, sizeof confs[c]);
        confs[c].type = c / (nsplits * nblocks);
        confs[c].block = c / nsplits % nblocks;
        confs[c].block_size = blocks[confs[c].block];
        confs[c].splits = splits[c % nsplits];
    }
    dshape one = {cfg->batch, cfg->q_heads, cfg->kv_heads, cfg->head_dim, cfg->q_len,
                  cfg->kv_len};
    const dshape *shapes = cfg->batch > 0 ? &one : decode_set;
    const size_t nshapes = cfg->batch > 0 ? 1 : sizeof decode_set / sizeof decode_set[0];

    if (cfg->format == 0) {
        printf("decode: K/V GB/s = K and V bytes of the prefix (of a window's keys) read once / "
               "median time;\nconfigurations compared interleaved with copy-bandwidth runs "
               "(attn_device_copy_gbps); block: the cache's block size (0 contiguous)%s%s\n",
               bench_decode_ntypes(cfg) > 1 ? "; ratio = median time / the first type's with the "
               "same block and splits" : "", nblocks > 1 ? "; blk ratio = median time / the first "
               "block's with the same type and splits" : "");
        printf("%-36s %-8s %5s %-6s %-7s %-9s %5s %9s %9s %9s %6s %9s %7s %8s%s%s  %-9s %s\n",
               "shape", "dtype", "block", "splits", "family", "source", "reps", "median ms",
               "min ms", "max ms", "IQR", "K/V GB/s", "of copy", "GFLOP/s",
               bench_decode_ntypes(cfg) > 1 ? "  ratio" : "", nblocks > 1 ? " blk ratio" : "",
               "max error", "check");
    } else if (cfg->format == 1) {
        printf("batch,q_heads,kv_heads,head_dim,q_len,kv_len,dtype,causal,family,params,"
               "params_source,splits_requested,reps,median_ms,min_ms,gflops,peak_gflops,"
               "peak_fraction,kv_gbps,copy_gbps,bandwidth_fraction,max_error,max_error_ratio,"
               "nonfinite,check,q1_ms,q3_ms,max_ms,iqr_fraction,time_ratio_to_first_dtype,"
               "block_size,time_ratio_to_first_block,variant\n");
    }
    fflush(stdout);
    int failed = 0;
    for (size_t i = 0; i < nshapes; i++)
        failed |= run_shape(ctx, cfg, &shapes[i], blocks, nblocks, confs, nconf, peak, results,
                            errors);
    return failed;
}
