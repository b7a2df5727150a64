/* tune_measure.c -- how the tuner judges one candidate: verified against the
 * CPU reference on a small shape of the class (fresh NaN-filled outputs,
 * padding, an offset causal diagonal, lengths that are no tile multiple),
 * then timed through attn_forward (or attn_decode, for a decode class)
 * itself with profiling events, so the tuner's numbers are the library's. */
#define _POSIX_C_SOURCE 200809L
#include "core/context.h"
#include "core/errors.h"
#include "core/log.h"
#include "attention/validate.h"
#include "attention/check.h"
#include "attention/convert.h"
#include "attention/decode.h"
#include "tuning/tune_bench.h"
#include "kernels/params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The verification shape: 67 query rows and 131 keys are multiples of no
 * tile size; four batches cover the plain causal diagonal with right
 * padding of the keys, an offset diagonal (kv longer than q), left padding
 * of both, and rows that see no key at all (kv shorter than q). */
enum { VB = ATTN_TUNE_VB, VSQ = ATTN_TUNE_VSQ, VSKV = ATTN_TUNE_VSKV };
static const int v_q_start[VB] = {0, 0, 17, 0}, v_q_len[VB] = {67, 67, 50, 60};
static const int v_kv_start[VB] = {0, 0, 31, 0}, v_kv_len[VB] = {67, 131, 100, 37};

const char *attn_candidate_status_name(attn_candidate_status s)
{
    switch (s) {
    case ATTN_CAND_OK: return "ok";
    case ATTN_CAND_BUILD: return "build failed";
    case ATTN_CAND_DEVICE: return "rejected by the device";
    case ATTN_CAND_WRONG: return "wrong results";
    case ATTN_CAND_SLOW: return "abandoned (far slower)";
    }
    return "?";
}

/* n values in [-1, 1), rounded through the storage type so that the
 * reference sees exactly what the device reads; uploaded as a new buffer. */
static attn_status make_input(attn_context *ctx, attn_dtype t, size_t n, uint64_t seed,
                              float *keep, cl_mem *out)
{
    size_t es = attn_dtype_size(t);
    float *f = keep ? keep : malloc(n * sizeof *f);
    void *raw = malloc(n * es);
    attn_status st = ATTN_SUCCESS;
    if (!f || !raw) {
        st = ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY,
                       "attn_tune_bench_create: out of host memory (%zu values)", n);
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        f[i] = (float)((double)(attn_splitmix64(&seed) >> 11) * 0x1.0p-52 - 1.0);
    attn_store_from_f32(t, f, raw, n);
    attn_load_to_f32(t, raw, f, n);
    cl_int err;
    *out = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * es, raw, &err);
    if (err != CL_SUCCESS) {
        *out = NULL;
        st = attn_fail_cl(ctx, err, "clCreateBuffer (tuner input)");
    }
done:
    if (f != keep) free(f);
    free(raw);
    return st;
}

static attn_tensor bhsd(cl_mem m, int heads, int seq, int dim)
{
    attn_tensor t = {m, 0, (size_t)heads * seq * dim, (size_t)seq * dim, (size_t)dim};
    return t;
}

static void release(cl_mem m)
{
    if (m) clReleaseMemObject(m);
}

void attn_tune_bench_free(attn_tune_bench *b)
{
    if (!b) return;
    attn_kv_cache_release(b->tcache);
    attn_kv_cache_release(b->vcache);
    release(b->tq.buffer);
    release(b->tk.buffer);
    release(b->tv.buffer);
    release(b->to.buffer);
    release(b->vq.buffer);
    release(b->vk.buffer);
    release(b->vv.buffer);
    free(b->ref_o);
    free(b->ref_lse);
    free(b->nan_host);
    free(b);
}

const attn_problem *attn_tune_bench_problem(const attn_tune_bench *b) { return &b->tp; }
int attn_tune_bench_entry(const attn_tune_bench *b) { return b->entry; }
attn_context *attn_tune_bench_context(const attn_tune_bench *b) { return b->ctx; }

void attn_tune_bench_limits(const attn_tune_bench *b, attn_device_limits *dev)
{
    *dev = attn_context_limits(b->ctx);
}

attn_status attn_tune_bench_create(attn_context *ctx, int entry, const attn_problem *p,
                                   const attn_tune_cache *kv, attn_tune_bench **out)
{
    *out = NULL;
    attn_status st = attn_validate_problem(ctx, p, NULL);
    if (st != ATTN_SUCCESS) return st;
    attn_tune_bench *b = calloc(1, sizeof *b);
    if (!b) return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY,
                             "attn_tune_bench_create: out of host memory");
    b->ctx = ctx;
    b->entry = entry;
    if (kv) b->kv = *kv;
    b->tp = *p;
    b->flops = attn_problem_flops(p, NULL);
    const int D = p->head_dim, group = p->q_heads / p->kv_heads;
    const size_t nq = (size_t)p->batch * p->q_heads * p->q_len * D;
    const size_t nkv = (size_t)p->batch * p->kv_heads * p->kv_len * D;
    cl_mem m[4] = {NULL, NULL, NULL, NULL};
    if ((st = make_input(ctx, p->dtype, nq, 11, NULL, &m[0])) != ATTN_SUCCESS ||
        (st = make_input(ctx, p->dtype, nkv, 12, NULL, &m[1])) != ATTN_SUCCESS ||
        (st = make_input(ctx, p->dtype, nkv, 13, NULL, &m[2])) != ATTN_SUCCESS ||
        (st = make_input(ctx, p->dtype, nq, 14, NULL, &m[3])) != ATTN_SUCCESS)
        goto fail;
    b->tq = bhsd(m[0], p->q_heads, p->q_len, D);
    b->tk = bhsd(m[1], p->kv_heads, p->kv_len, D);
    b->tv = bhsd(m[2], p->kv_heads, p->kv_len, D);
    b->to = bhsd(m[3], p->q_heads, p->q_len, D);
    m[0] = m[1] = m[2] = m[3] = NULL;

    /* the verification problem: the class's head dim, type, causality and
     * group with two KV heads */
    attn_problem *v = &b->vp;
    *v = *p;
    v->batch = VB;
    v->kv_heads = 2;
    v->q_heads = 2 * group;
    v->q_len = VSQ;
    v->kv_len = VSKV;
    memcpy(b->vkv_len, v_kv_len, sizeof v_kv_len);
    /* f32 rows past ATTN_MMA_F32_PLAIN_KEYS build mma's kernel another way
     * (MMA_FOLD): the verification then has such a row too, so that the
     * kernel timed is the kernel verified (attn_tune_measure checks) */
    if (entry == ATTN_ENTRY_PREFILL && p->dtype == ATTN_F32 &&
        p->kv_len > ATTN_MMA_F32_PLAIN_KEYS) {
        v->kv_len += ATTN_MMA_F32_PLAIN_KEYS;
        b->vkv_len[1] += ATTN_MMA_F32_PLAIN_KEYS; /* the offset diagonal, 67 queries */
    }
    b->vlen.q_start = v_q_start;
    b->vlen.q_len = v_q_len;
    b->vlen.kv_start = v_kv_start;
    b->vlen.kv_len = b->vkv_len;
    if (entry == ATTN_ENTRY_DECODE && (st = attn_tune_decode_shape(b)) != ATTN_SUCCESS) goto fail;
    const int vskv = v->kv_len;
    const size_t vnq = (size_t)VB * v->q_heads * v->q_len * D, vnkv = (size_t)VB * 2 * vskv * D;
    float *hq = malloc(vnq * sizeof *hq), *hk = malloc(vnkv * sizeof *hk);
    float *hv = malloc(vnkv * sizeof *hv);
    b->n_o = vnq;
    b->n_lse = (size_t)VB * v->q_heads * v->q_len;
    b->ref_o = malloc(vnq * sizeof *b->ref_o);
    b->ref_lse = malloc(b->n_lse * sizeof *b->ref_lse);
    b->nan_host = malloc(vnq * sizeof(float));
    if (!hq || !hk || !hv || !b->ref_o || !b->ref_lse || !b->nan_host) {
        st = ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "attn_tune_bench_create: out of host memory");
    } else if ((st = make_input(ctx, p->dtype, vnq, 21, hq, &m[0])) == ATTN_SUCCESS &&
               (st = make_input(ctx, p->dtype, vnkv, 22, hk, &m[1])) == ATTN_SUCCESS &&
               (st = make_input(ctx, p->dtype, vnkv, 23, hv, &m[2])) == ATTN_SUCCESS) {
        b->vq = bhsd(m[0], v->q_heads, v->q_len, D);
        b->vk = bhsd(m[1], 2, vskv, D);
        b->vv = bhsd(m[2], 2, vskv, D);
        m[0] = m[1] = m[2] = NULL;
        st = attn_check_reference(ctx, "attn_tune_bench_create (the verification shape)", v,
                                  hq, hk, hv, b->ref_o, &b->vlen, b->ref_lse);
        /* NaN bit patterns of every storage type, as bytes: 0xffff... */
        memset(b->nan_host, 0xff, vnq * sizeof(float));
    }
    free(hq);
    free(hk);
    free(hv);
    if (st == ATTN_SUCCESS && entry == ATTN_ENTRY_DECODE) st = attn_tune_decode_fill(b);
    if (st != ATTN_SUCCESS) goto fail;
    *out = b;
    return ATTN_SUCCESS;
fail:
    for (int i = 0; i < 4; i++) release(m[i]);
    attn_tune_bench_free(b);
    return st;
}

/* A fresh buffer of `bytes` all-ones bytes: NaN in f32, f16 and bf16. */
static cl_mem nan_buffer(attn_tune_bench *b, size_t bytes, cl_int *err)
{
    return clCreateBuffer(b->ctx->cl_ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes,
                          b->nan_host, err);
}

static double event_ms(cl_event from, cl_event to)
{
    cl_ulong a = 0, z = 0;
    if (clGetEventProfilingInfo(from, CL_PROFILING_COMMAND_END, sizeof a, &a, NULL) != CL_SUCCESS ||
        clGetEventProfilingInfo(to, CL_PROFILING_COMMAND_END, sizeof z, &z, NULL) != CL_SUCCESS ||
        z < a)
        return -1;
    return (double)(z - a) * 1e-6;
}

/* One run of the bench's entry point on the verification shape (verif)
 * or the timing one. */
static attn_status run(attn_tune_bench *b, int verif, const attn_tensor *o, cl_mem lse,
                       cl_event *done)
{
    const attn_problem *p = verif ? &b->vp : &b->tp;
    if (b->entry == ATTN_ENTRY_DECODE)
        return attn_decode(b->ctx, verif ? b->vcache : b->tcache, p, verif ? &b->vq : &b->tq, o,
                           NULL, lse, done);
    if (verif) return attn_forward(b->ctx, p, &b->vq, &b->vk, &b->vv, o, &b->vlen, lse, done);
    return attn_forward(b->ctx, p, &b->tq, &b->tk, &b->tv, o, NULL, lse, done);
}

/* One run and its time: from a marker enqueued just before it to the end
 * of its last kernel (a forward enqueues a pre-pass and the main kernel on
 * the vector family, a split decode its combine), so the host work of the
 * call counts too; the wall time around the call and the wait when events
 * give nothing. */
static attn_status timed_run(attn_tune_bench *b, int verif, const attn_tensor *o, cl_mem lse,
                             double *ms)
{
    attn_context *ctx = b->ctx;
    cl_event mark = NULL, done = NULL;
    double t0 = attn_now_ms();
    cl_int err = clEnqueueMarkerWithWaitList(ctx->queue, 0, NULL, &mark);
    if (err != CL_SUCCESS) return attn_fail_cl(ctx, err, "clEnqueueMarkerWithWaitList");
    attn_status st = run(b, verif, o, lse, &done);
    if (st == ATTN_SUCCESS) {
        err = clWaitForEvents(1, &done);
        double wall = attn_now_ms() - t0;
        if (err != CL_SUCCESS) st = attn_fail_cl(ctx, err, "clWaitForEvents (tuner)");
        else if ((*ms = event_ms(mark, done)) <= 0) {
            if (!b->warned_wall)
                attn_log(ATTN_LOG_INFO, "tuner: no profiling times from the queue; timing with "
                         "the host clock");
            b->warned_wall = 1;
            *ms = wall;
        } else if (attn_log_enabled(ATTN_LOG_DEBUG) && b->logged_times < 3) {
            b->logged_times++;
            attn_log(ATTN_LOG_DEBUG, "tuner: run %.3f ms by events, %.3f ms by the host clock",
                     *ms, wall);
        }
    }
    clReleaseEvent(mark);
    if (done) clReleaseEvent(done);
    return st;
}

/* Status of a failed forward as a candidate verdict. */
static attn_candidate_status verdict(attn_status st)
{
    return st == ATTN_ERROR_BUILD ? ATTN_CAND_BUILD : ATTN_CAND_DEVICE;
}

/* |got - ref| against the tolerance; a NaN, or an infinity that differs,
 * is a failure. Updates the worst error and ratio; returns the number of
 * violations and the first one's index in *first. */
static size_t compare(const float *got, const float *ref, size_t n, double atol, double rtol,
                      double *max_err, double *max_ratio, size_t *first)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], r = ref[i], ratio;
        if (isnan(g) || isnan(r)) ratio = INFINITY;
        else if (isinf(g) || isinf(r)) ratio = g == r ? 0 : INFINITY;
        else {
            double e = fabs(g - r);
            if (e > *max_err) *max_err = e;
            ratio = e / (atol + rtol * fabs(r));
        }
        if (ratio > *max_ratio) *max_ratio = ratio;
        if (ratio > 1.0 && bad++ == 0) *first = i;
    }
    return bad;
}

static attn_status verify(attn_tune_bench *b, attn_candidate_result *r)
{
    attn_context *ctx = b->ctx;
    const attn_problem *v = &b->vp;
    cl_int err;
    cl_mem o = nan_buffer(b, b->n_o * attn_dtype_size(v->dtype), &err);
    cl_mem lse = err == CL_SUCCESS ? nan_buffer(b, b->n_lse * sizeof(float), &err) : NULL;
    float *got = malloc(b->n_o * sizeof *got), *got_lse = malloc(b->n_lse * sizeof *got_lse);
    attn_status st = ATTN_SUCCESS;
    if (err != CL_SUCCESS || !got || !got_lse) {
        st = err != CL_SUCCESS ? attn_fail_cl(ctx, err, "clCreateBuffer (tuner output)")
                               : ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY,
                                           "attn_tune_measure: out of host memory");
        goto done;
    }
    attn_tensor to = bhsd(o, v->q_heads, v->q_len, v->head_dim);
    double ms;
    attn_status fst = timed_run(b, 1, &to, lse, &ms);
    if (fst != ATTN_SUCCESS) {
        r->status = verdict(fst);
        snprintf(r->why, sizeof r->why, "%s: %s", attn_status_name(fst), attn_last_error(ctx));
        goto done;
    }
    if ((st = attn_tensor_download(ctx, &to, v->dtype, v->batch, v->q_heads, v->q_len,
                                   v->head_dim, got)) != ATTN_SUCCESS)
        goto done;
    err = clEnqueueReadBuffer(ctx->queue, lse, CL_TRUE, 0, b->n_lse * sizeof(float), got_lse, 0,
                              NULL, NULL);
    if (err != CL_SUCCESS) {
        st = attn_fail_cl(ctx, err, "clEnqueueReadBuffer (tuner LSE)");
        goto done;
    }
    double atol, rtol;
    attn_kv_tolerance(b->kv.storage, v->dtype, &atol, &rtol); /* attn_tolerance but int8's */
    size_t first_o = 0, first_l = 0;
    size_t bad_o = compare(got, b->ref_o, b->n_o, atol, rtol, &r->max_error, &r->error_ratio, &first_o);
    size_t bad_l = compare(got_lse, b->ref_lse, b->n_lse, atol, rtol, &r->max_error,
                           &r->error_ratio, &first_l);
    if (bad_o || bad_l) {
        r->status = ATTN_CAND_WRONG;
        if (bad_o)
            snprintf(r->why, sizeof r->why, "%zu outputs beyond tolerance, first out[%zu] = %g, "
                     "reference %g", bad_o, first_o, got[first_o], b->ref_o[first_o]);
        else
            snprintf(r->why, sizeof r->why, "%zu LSE values beyond tolerance, first lse[%zu] = "
                     "%g, reference %g", bad_l, first_l, got_lse[first_l], b->ref_lse[first_l]);
        goto done;
    }
    /* a second run for its time (the first paid for any lazy compilation) */
    fst = timed_run(b, 1, &to, lse, &r->verify_ms);
    if (fst != ATTN_SUCCESS) {
        r->status = verdict(fst);
        snprintf(r->why, sizeof r->why, "%s: %s", attn_status_name(fst), attn_last_error(ctx));
    }
done:
    release(o);
    release(lse);
    free(got);
    free(got_lse);
    return st;
}

/* The parameters the verification runs with: pr, but where pr leaves a
 * decode's splits automatic and the timed runs split (a GPU's many work-
 * groups over the long timing cache), as many splits on the short
 * verification cache, so that the path timed -- partial outputs and their
 * combine -- is the path verified, not the single pass automatic splits
 * take on 131 keys. Same build as timed (splits are an argument), else pr
 * as it is. pr is forced on entry. A failure to plan is the candidate's. */
static attn_status verified_as_timed(attn_tune_bench *b, const attn_params *pr, const char *topt,
                                     attn_params *pv, attn_candidate_result *r)
{
    *pv = *pr;
    if (b->entry != ATTN_ENTRY_DECODE || pr->kv_splits > 0) return ATTN_SUCCESS;
    int n = 1;
    const attn_status st = attn_decode_prepare_splits(b->ctx, b->tcache, &b->tp, NULL, &n);
    if (st != ATTN_SUCCESS) {
        r->status = verdict(st);
        snprintf(r->why, sizeof r->why, "%s: %s", attn_status_name(st), attn_last_error(b->ctx));
        return ATTN_SUCCESS;
    }
    if (n <= 1) return ATTN_SUCCESS;
    pv->kv_splits = n < 256 ? n : 256;
    char vopt[1024];
    attn_params_options(pv, &b->vp, b->entry, vopt, sizeof vopt);
    if (strcmp(vopt, topt) != 0) *pv = *pr;
    return ATTN_SUCCESS;
}

/* The timing problem once; a failure is the candidate's (device) fault. */
static attn_status time_once(attn_tune_bench *b, attn_candidate_result *r, double *ms, int *ok)
{
    attn_status st = timed_run(b, 0, &b->to, NULL, ms);
    *ok = st == ATTN_SUCCESS;
    if (!*ok) {
        r->status = verdict(st);
        snprintf(r->why, sizeof r->why, "%s: %s", attn_status_name(st), attn_last_error(b->ctx));
    }
    return ATTN_SUCCESS;
}

attn_status attn_tune_measure(attn_tune_bench *b, const attn_params *pr,
                              const attn_measure_opts *opts, attn_candidate_result *r)
{
    memset(r, 0, sizeof *r);
    attn_context *ctx = b->ctx; /* a context's override never replaces a forced candidate */
    attn_device_limits dev;
    attn_tune_bench_limits(b, &dev);
    if (b->kv.block_size > 0 && pr->block_keys > b->kv.block_size)
        snprintf(r->why, sizeof r->why, "keys=%d exceed the cache's block size %d",
                 pr->block_keys, b->kv.block_size);
    if (r->why[0] || !attn_params_legal(pr, &dev, &b->tp, r->why, sizeof r->why) ||
        !attn_params_legal(pr, &dev, &b->vp, r->why, sizeof r->why)) {
        r->status = ATTN_CAND_DEVICE; /* never enumerated; a caller's own candidate */
        return ATTN_SUCCESS;
    }
    /* the kernel timed must be the kernel verified: a decode candidate
     * whose forced splits leave f32 chunks past mma's plain sum builds
     * another kernel on the timing cache than on the verification's */
    char topt[1024], vopt[1024];
    attn_params_options(pr, &b->tp, b->entry, topt, sizeof topt);
    attn_params_options(pr, &b->vp, b->entry, vopt, sizeof vopt);
    if (strcmp(topt, vopt) != 0) {
        r->status = ATTN_CAND_DEVICE;
        snprintf(r->why, sizeof r->why, "built with \"%.300s\" on the timing shape but \"%.300s\" "
                 "on the verification shape: it could not be verified", topt, vopt);
        return ATTN_SUCCESS;
    }
    attn_status st = attn_tuning_force(ctx, pr);
    if (st != ATTN_SUCCESS) return st;
    double *times = NULL;
    attn_params pv;
    if ((st = verified_as_timed(b, pr, topt, &pv, r)) != ATTN_SUCCESS ||
        r->status != ATTN_CAND_OK || (st = attn_tuning_force(ctx, &pv)) != ATTN_SUCCESS ||
        (st = verify(b, r)) != ATTN_SUCCESS || r->status != ATTN_CAND_OK ||
        (st = attn_tuning_force(ctx, pr)) != ATTN_SUCCESS)
        goto done;
    if (opts->verify_factor > 0 && opts->best_verify_ms > 0 &&
        r->verify_ms > opts->verify_factor * opts->best_verify_ms) {
        r->status = ATTN_CAND_SLOW;
        snprintf(r->why, sizeof r->why, "%.3f ms on the verification shape, the best took %.3f",
                 r->verify_ms, opts->best_verify_ms);
        goto done;
    }
    int ok;
    double ms;
    if ((st = time_once(b, r, &ms, &ok)) != ATTN_SUCCESS || !ok) goto done; /* warm-up */
    int hopeless = opts->slow_factor > 0 && opts->best_ms > 0 && ms > 2 * opts->slow_factor * opts->best_ms;
    if (!hopeless && ((st = time_once(b, r, &ms, &ok)) != ATTN_SUCCESS || !ok)) goto done; /* calibration */
    if (opts->slow_factor > 0 && opts->best_ms > 0 && ms > opts->slow_factor * opts->best_ms) {
        r->status = ATTN_CAND_SLOW;
        r->median_ms = ms;
        r->reps = 1;
        r->gflops = b->flops / (ms * 1e6);
        snprintf(r->why, sizeof r->why, "%.2f ms per run, the best takes %.2f", ms, opts->best_ms);
        goto done;
    }
    int reps = ms > 0 ? (int)ceil(opts->target_ms / ms) : opts->max_reps;
    if (reps < opts->min_reps) reps = opts->min_reps;
    if (reps > opts->max_reps) reps = opts->max_reps;
    if (reps < 1) reps = 1;
    times = malloc((size_t)reps * sizeof *times);
    if (!times) {
        st = ATTN_FAIL(b->ctx, ATTN_ERROR_OUT_OF_MEMORY, "attn_tune_measure: out of host memory");
        goto done;
    }
    for (int i = 0; i < reps; i++)
        if ((st = time_once(b, r, &times[i], &ok)) != ATTN_SUCCESS || !ok) goto done;
    r->reps = reps;
    r->spread = attn_time_spread_of(times, reps);
    r->median_ms = r->spread.median_ms;
    r->gflops = r->median_ms > 0 ? b->flops / (r->median_ms * 1e6) : 0;
done:
    free(times);
    attn_tuning_force(b->ctx, NULL);
    return st;
}

attn_status attn_tune_retime(attn_tune_bench *b, const attn_params *cands, int n, int rounds,
                             int warmup, int drop_failures, double *ms,
                             attn_time_spread *spread)
{
    if (n <= 0) return ATTN_SUCCESS;
    if (rounds < 1) rounds = 1;
    double *t = malloc((size_t)n * (size_t)rounds * sizeof *t);
    char *dropped = calloc((size_t)n, 1);
    if (!t || !dropped) {
        free(t);
        free(dropped);
        return ATTN_FAIL(b->ctx, ATTN_ERROR_OUT_OF_MEMORY, "attn_tune_retime: out of host memory");
    }
    attn_status st = ATTN_SUCCESS;
    int left = n;
    /* round -1 is the warm-up; interleaving spreads the machine's other
     * load over every candidate alike, and each round starts with the next
     * candidate, since a run right after other work measured up to 10%
     * slower here */
    for (int round = warmup ? -1 : 0; round < rounds && left > 0; round++)
        for (int j = 0; j < n && left > 0; j++) {
            const int i = (j + (round > 0 ? round : 0)) % n;
            if (dropped[i]) continue;
            double x = 0;
            attn_status cs = attn_tuning_force(b->ctx, &cands[i]);
            if (cs == ATTN_SUCCESS) cs = timed_run(b, 0, &b->to, NULL, &x);
            if (cs != ATTN_SUCCESS && !drop_failures) {
                st = cs;
                left = 0;
            } else if (cs != ATTN_SUCCESS) { /* this candidate's, unless every one fails */
                char text[200];
                attn_search_format(b->entry, &cands[i], text, sizeof text);
                attn_log(ATTN_LOG_WARN, "tuner: %s failed while re-timed and is dropped (%s: %s)",
                         text, attn_status_name(cs), attn_last_error(b->ctx));
                dropped[i] = 1;
                left--;
                st = cs;
            } else if (round >= 0) {
                t[(size_t)i * rounds + round] = x;
            }
        }
    attn_tuning_force(b->ctx, NULL);
    if (left > 0) st = ATTN_SUCCESS;
    for (int i = 0; left > 0 && i < n; i++) {
        const attn_time_spread none = {0};
        const attn_time_spread sp =
            dropped[i] ? none : attn_time_spread_of(t + (size_t)i * rounds, rounds);
        ms[i] = dropped[i] ? INFINITY : sp.median_ms;
        if (spread) spread[i] = sp;
    }
    free(t);
    free(dropped);
    return st;
}
