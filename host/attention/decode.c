/* decode.c -- attn_decode and attn_decode_prepare: a few new queries per
 * sequence against the KV cache. Validates against the cache, plans the
 * parameters and the KV splits, enqueues the decode kernel of the device's
 * family and, when split, the combine kernel (flash-decoding). */
#define _POSIX_C_SOURCE 200809L
#include "attention/decode.h"
#include "core/context.h"
#include "core/errors.h"
#include "core/launch.h"
#include "core/log.h"
#include "core/program.h"
#include "attention/validate.h"
#include "attention/forward.h"
#include "attention/check.h"
#include "attention/convert.h"
#include "attention/plan.h"
#include "attention/mma_gate.h"
#include "attention/variants.h"
#include "kernels/kernel_desc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INVALID(ctx, ...) ATTN_FAIL((ctx), ATTN_ERROR_INVALID_ARGUMENT, __VA_ARGS__)

/* Everything decided before enqueueing. */
typedef struct decode_plan {
    attn_params pr;
    const char *source; /* "heuristic", "tuned", "stale" or "override" */
    /* A block longer than ATTN_DECODE_MAX_Q_LEN on the vector family:
     * attn_forward's kernels over the cache (forward.c), not split */
    int prefill;
    int ntiles;         /* work-groups per KV head: ceil(group * q_len / rows) */
    int nsplit, chunk;  /* splits launched, keys per split (a multiple of BLOCK_KEYS) */
    int *qlen;          /* per sequence (malloc'd) */
} decode_plan;

/* need_keys: each sequence must already hold its new queries' K/V (a
 * decode does; preparing may come before the first append). */
static attn_status check_args(attn_context *ctx, const attn_kv_cache *c, const attn_problem *p,
                              const int *q_lens, int need_keys)
{
    ATTN_CHECK(ctx, !c, ATTN_ERROR_INVALID_ARGUMENT, "cache is NULL");
    ATTN_CHECK(ctx, c->ctx != ctx, ATTN_ERROR_INVALID_ARGUMENT,
               "cache was created on another attn_context");
    ATTN_CHECK(ctx, !p, ATTN_ERROR_INVALID_ARGUMENT, "p (the problem) is NULL");
    /* the step's keys never arrived: a decode now would answer for the previous token */
    if (need_keys && c->append_failure[0])
        return INVALID(ctx, "the cache's last append (attn_kv_cache_append or "
                       "attn_kv_cache_append_rows) failed, so it does not hold this step's keys "
                       "and values; append them (successfully) first. That append said: %s",
                       c->append_failure);
    if (p->packed)
        return INVALID(ctx, "p->packed is set, but a decode's queries are [batch][q_heads][q_len] "
                       "and each sequence's keys are in its own cache rows: clear p->packed "
                       "(q_lens gives the sequences' query counts)");
    if (p->batch != c->batch)
        return INVALID(ctx, "p->batch = %d but the cache holds %d sequences", p->batch, c->batch);
    if (p->kv_heads != c->kv_heads)
        return INVALID(ctx, "p->kv_heads = %d but the cache has %d KV heads", p->kv_heads,
                       c->kv_heads);
    if (p->head_dim != c->head_dim)
        return INVALID(ctx, "p->head_dim = %d but the cache's head_dim is %d", p->head_dim,
                       c->head_dim);
    if (p->dtype != c->dtype) {
        const char *name = attn_dtype_name(p->dtype);
        return INVALID(ctx, "p->dtype = %s but the cache stores %s", name ? name : "(invalid)",
                       attn_dtype_name(c->dtype));
    }
    const int most = c->capacity > ATTN_DECODE_MAX_Q_LEN ? c->capacity : ATTN_DECODE_MAX_Q_LEN;
    if (p->q_len < 1 || p->q_len > most)
        return INVALID(ctx, "p->q_len = %d is outside 1..%d (the cache's capacity %d, or "
                       "ATTN_DECODE_MAX_Q_LEN %d when more)", p->q_len, most, c->capacity,
                       ATTN_DECODE_MAX_Q_LEN);
    if (p->q_heads < 1 || p->q_heads % p->kv_heads)
        return INVALID(ctx, "p->q_heads = %d is not a positive multiple of kv_heads = %d",
                       p->q_heads, p->kv_heads);
    if (q_lens)
        for (int b = 0; b < c->batch; b++) {
            if (q_lens[b] < 0 || q_lens[b] > p->q_len)
                return INVALID(ctx, "q_lens[%d] = %d is outside 0..p->q_len (%d)", b, q_lens[b],
                               p->q_len);
            if (need_keys && q_lens[b] > c->len[b])
                return INVALID(ctx, "q_lens[%d] = %d new quer%s but sequence %d holds only %d "
                               "token%s: append their keys and values first", b, q_lens[b],
                               q_lens[b] == 1 ? "y" : "ies", b, c->len[b],
                               c->len[b] == 1 ? "" : "s");
        }
    else if (need_keys)
        for (int b = 0; b < c->batch; b++)
            if (p->q_len > c->len[b])
                return INVALID(ctx, "p->q_len = %d new quer%s but sequence %d holds only %d "
                               "token%s: append their keys and values first (or pass q_lens)",
                               p->q_len, p->q_len == 1 ? "y" : "ies", b, c->len[b],
                               c->len[b] == 1 ? "" : "s");
    return ATTN_SUCCESS;
}

/* The problem attn_forward would solve over the cache's tensors: its
 * validation covers q, out and lse (sizes, strides, overlaps). */
static attn_problem full_problem(const attn_kv_cache *c, const attn_problem *p)
{
    attn_problem f = *p;
    f.kv_len = c->capacity;
    return f;
}

/* cl/decode_common.cl's decode_key_base: the first key of a sequence with
 * len keys (q_len of them new) that a window of left limit `left` (-1:
 * none) lets any new query see, rounded down to a block of bk keys */
static int key_base(int len, int q_len, int left, int bk)
{
    return left < 0 || len - q_len - left <= 0 ? 0 : (len - q_len - left) / bk * bk;
}

/* A block longer than ATTN_DECODE_MAX_Q_LEN is a prefill against the
 * cache: planned (and tuned) as attn_forward of full, q_len rows against
 * the capacity. The vector family then runs attn_forward's own kernels
 * over the cache (*prefill): its decode kernel walks every key once per
 * tile of 8 rows without packing, 0.76x the prefill kernel's speed at 512
 * queries against 4096 keys (PoCL). A family with a decode kernel (tiled,
 * mma) runs it with the prefill's tiles (its decode kernel is its
 * prefill's core); one without (flash) cannot read a cache, and the decode
 * plan serves. */
static attn_status plan_long(attn_context *ctx, const attn_kv_cache *c, int page,
                             const attn_problem *full, attn_params *pr, const char **source,
                             int *prefill)
{
    attn_status st = attn_plan(ctx, ATTN_ENTRY_PREFILL, full, pr, source);
    if (st != ATTN_SUCCESS) return st;
    *prefill = pr->family == ATTN_FAMILY_VECTOR;
    if (*prefill) return ATTN_SUCCESS;
    if (attn_family_kernel(pr->family, ATTN_ENTRY_DECODE)) {
        /* its decode kernel looks a page up once per key block: fitted as
         * attn_plan_decode fits its own plans */
        attn_plan_fit_page(pr, page);
        return ATTN_SUCCESS;
    }
    attn_log(ATTN_LOG_INFO, "decode: the %s family cannot read a KV cache; %d queries take the "
             "decode plan", attn_family_desc_of(pr->family)->name, full->q_len);
    return attn_plan_decode(ctx, full, page, c->storage, pr, source);
}

/* given: parameters to use instead of the planner's (q_len at most
 * ATTN_DECODE_MAX_Q_LEN), or NULL */
static attn_status make_plan(attn_context *ctx, const attn_kv_cache *c, const attn_problem *p,
                             const int *q_lens, const attn_params *given, decode_plan *dp)
{
    const attn_device_limits dev = attn_context_limits(ctx);
    const attn_problem full = full_problem(c, p); /* the class: kv by the cache's capacity */
    attn_params pr;
    /* a decode class is the cache's kind too: attn_plan_decode fits the
     * keys per block to a page (attn_plan_fit_page) */
    const int page = c->paged ? c->page_rows : 0;
    attn_status st = ATTN_SUCCESS;
    if (given) {
        pr = *given;
        attn_plan_fit_page(&pr, page);
        dp->source = "override";
    } else {
        st = p->q_len > ATTN_DECODE_MAX_Q_LEN
                 ? plan_long(ctx, c, page, &full, &pr, &dp->source, &dp->prefill)
                 : attn_plan_decode(ctx, &full, page, c->storage, &pr, &dp->source);
    }
    if (st != ATTN_SUCCESS) return st;
    dp->pr = pr;
    dp->qlen = malloc(sizeof *dp->qlen * (size_t)c->batch);
    if (!dp->qlen) return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (dp->prefill) { /* attn_forward's grid: no splits */
        for (int b = 0; b < c->batch; b++) dp->qlen[b] = q_lens ? q_lens[b] : p->q_len;
        dp->nsplit = 1;
        return ATTN_SUCCESS;
    }
    /* the keys the splits share out: each sequence's from its key_base */
    const int left = attn_variant_window_left(p), bk = pr.block_keys;
    int max_span = 0;
    for (int b = 0; b < c->batch; b++) {
        dp->qlen[b] = q_lens ? q_lens[b] : p->q_len;
        const int span = c->len[b] - key_base(c->len[b], dp->qlen[b], left, bk);
        if (dp->qlen[b] > 0 && span > max_span) max_span = span;
    }
    const int rows_needed = p->q_heads / p->kv_heads * p->q_len;
    const int tile_rows = attn_params_block_rows(&pr); /* mma: warps x m-tiles x 16 */
    dp->ntiles = (rows_needed + tile_rows - 1) / tile_rows;
    const int items = c->batch * c->kv_heads * dp->ntiles;
    const size_t key_bytes = 2 * attn_kv_row_bytes(c);
    int want = pr.kv_splits;
    if (want <= 0) {
        want = attn_decode_auto_splits(&dev, items, max_span, key_bytes);
        const int least = attn_params_decode_least_splits(&pr, &full, max_span);
        if (want < least) want = least;
    }
    int chunk = (max_span + want - 1) / want;
    chunk = (chunk + bk - 1) / bk * bk;
    if (chunk < bk) chunk = bk;
    dp->chunk = chunk;
    dp->nsplit = max_span > 0 ? (max_span + chunk - 1) / chunk : 1;
    return ATTN_SUCCESS;
}

static attn_status get_kernels(attn_context *ctx, const decode_plan *dp, const attn_problem *p,
                               const attn_kv_cache *c, cl_kernel *main_k, cl_kernel *combine_k)
{
    char opts[720];
    /* the problem as planned (kv_len: the capacity), so that a build that
     * depends on the row length (mma's f32 MMA_FOLD, where forced splits
     * are longer than its plain sum's reach) covers every key */
    const attn_problem full = full_problem(c, p);
    attn_params_options(&dp->pr, &full, ATTN_ENTRY_DECODE, opts, sizeof opts - 64); /* room for the cache's -D */
    attn_mma_options(ctx, dp->pr.family, opts, sizeof opts);
    attn_kv_cache_options(c, opts, sizeof opts);
    const char *const *sources;
    const int nsources = attn_family_sources(dp->pr.family, ATTN_ENTRY_DECODE, &sources);
    cl_program prog;
    attn_status st = attn_program_get(ctx, sources, nsources, opts, &prog);
    if (st == ATTN_SUCCESS)
        st = attn_kernel_create(ctx, prog, attn_family_kernel(dp->pr.family, ATTN_ENTRY_DECODE),
                                main_k);
    if (st == ATTN_SUCCESS && combine_k &&
        (st = attn_kernel_create(ctx, prog, "attn_decode_combine", combine_k)) != ATTN_SUCCESS) {
        clReleaseKernel(*main_k);
        *main_k = NULL;
    }
    return st;
}

static attn_status enqueue(attn_context *ctx, attn_kv_cache *c, const decode_plan *dp,
                           const attn_problem *p, const attn_tensor *q, const attn_tensor *o,
                           cl_mem lse, cl_event *finished_out)
{
    attn_status st;
    cl_int err;
    cl_kernel main_k = NULL, comb_k = NULL;
    cl_event decoded = NULL, finished = NULL;
    cl_mem lens = NULL;
    const int split = dp->nsplit > 1;
    attn_variant_args va;
    memset(&va, 0, sizeof va);

    cl_int2 *hl = malloc(sizeof *hl * (size_t)c->batch);
    if (!hl) return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int b = 0; b < c->batch; b++) {
        hl[b].s[0] = dp->qlen[b];
        hl[b].s[1] = c->len[b];
    }
    lens = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                          sizeof *hl * (size_t)c->batch, hl, &err);
    free(hl);
    if (err != CL_SUCCESS) return attn_fail_cl(ctx, err, "clCreateBuffer (decode lengths)");

    if ((st = get_kernels(ctx, dp, p, c, &main_k, split ? &comb_k : NULL)) != ATTN_SUCCESS)
        goto done;
    const size_t rows = (size_t)p->batch * p->q_heads * p->q_len * dp->nsplit;
    /* the context's, not the cache's: counted and given back as its
     * workspace, and one for all of a model's layers */
    const size_t part_bytes = rows * c->dim_pad * sizeof(float);
    if (split && ((st = attn_scratch_reserve(ctx, &ctx->part_o, part_bytes)) ||
                  (st = attn_scratch_reserve(ctx, &ctx->part_lse, rows * sizeof(float)))))
        goto done;
    cl_mem part_o = split ? ctx->part_o.mem : lens, part_lse = split ? ctx->part_lse.mem : lens;
    const cl_ulong4 qg = attn_tensor_geometry(q), og = attn_tensor_geometry(o);
    const cl_int write_lse = lse != NULL;
    cl_mem lse_arg = lse ? lse : lens; /* never written when write_lse is 0 */
    /* KV_CACHE_PARAMS (cl/kv_cache_rows.cl); unused scale buffers get lens */
    attn_kv_kernel_args ka;
    if ((st = attn_kv_kernel_args_of(c, lens, &ka))) goto done;
    const cl_int nsplit = dp->nsplit, chunk = dp->chunk;
    const cl_int hq = p->q_heads, hkv = p->kv_heads, sq = p->q_len, causal = p->causal != 0;
    const cl_int ntiles = dp->ntiles;
    const cl_float qscale = attn_variant_qscale(p);
    if ((st = attn_variant_args_make(ctx, p, lens, &va))) goto done;
    const attn_karg main_args[] = {
        ATTN_KARG(q->buffer), ATTN_KARG(qg), ATTN_KV_KARGS(ka), ATTN_KARG(o->buffer),
        ATTN_KARG(og), ATTN_KARG(lse_arg), ATTN_KARG(write_lse), ATTN_KARG(part_o),
        ATTN_KARG(part_lse), ATTN_KARG(nsplit), ATTN_KARG(chunk), ATTN_KARG(lens), ATTN_KARG(hq),
        ATTN_KARG(hkv), ATTN_KARG(sq), ATTN_KARG(causal), ATTN_KARG(qscale), ATTN_KARG(ntiles)};
    if ((st = attn_kernel_set_args(ctx, main_k, main_args, ATTN_NARGS(main_args))) ||
        (st = attn_kernel_set_args_at(ctx, main_k, ATTN_NARGS(main_args), attn_variant_kargs(&va),
                                      ATTN_VARIANT_NARGS)))
        goto done;
    if (split) {
        const attn_karg comb_args[] = {
            ATTN_KARG(part_o), ATTN_KARG(part_lse), ATTN_KARG(nsplit), ATTN_KARG(o->buffer),
            ATTN_KARG(og), ATTN_KARG(lse_arg), ATTN_KARG(write_lse), ATTN_KARG(hq), ATTN_KARG(sq),
            ATTN_KARG(lens)};
        if ((st = attn_kernel_set_args(ctx, comb_k, comb_args, ATTN_NARGS(comb_args))) ||
            (st = attn_kernel_set_args_at(ctx, comb_k, ATTN_NARGS(comb_args),
                                          attn_variant_kargs(&va), ATTN_VARIANT_NARGS)))
            goto done;
    }

    /* an out-of-order queue could run this before the appends it must see */
    if ((st = attn_queue_order(ctx))) goto done;
    const size_t wg = attn_params_work_group(&dp->pr);
    const size_t global[3] = {(size_t)nsplit * wg, (size_t)hkv * ntiles, (size_t)p->batch};
    const size_t local[3] = {wg, 1, 1};
    if ((st = attn_kernel_enqueue(ctx, main_k, 3, global, local, 0, NULL,
                                  split ? &decoded : &finished)))
        goto done;
    if (split) {
        const size_t cg[3] = {(size_t)p->head_dim, (size_t)sq * hq, (size_t)p->batch};
        if ((st = attn_kernel_enqueue(ctx, comb_k, 3, cg, NULL, 1, &decoded, &finished)))
            goto done;
    }
    *finished_out = finished;
    finished = NULL;
done:
    if (decoded) clReleaseEvent(decoded);
    if (finished) clReleaseEvent(finished);
    if (main_k) clReleaseKernel(main_k);
    if (comb_k) clReleaseKernel(comb_k);
    attn_variant_args_release(&va);
    clReleaseMemObject(lens); /* enqueued kernels keep it alive */
    return st;
}

/* A long block on the vector family: attn_forward's kernels over the
 * cache (forward.c), each sequence's keys packed only when it has new
 * queries (the packed K/V are fp32 copies of every key they cover: a
 * sequence without queries would cost its whole length for pad rows). */
static attn_status enqueue_prefill(attn_context *ctx, attn_kv_cache *c, const decode_plan *dp,
                                   const attn_problem *full, const attn_tensor *q,
                                   const attn_tensor *o, cl_mem lse, cl_event *finished)
{
    int *keys = malloc(sizeof *keys * (size_t)c->batch);
    if (!keys) return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int b = 0; b < c->batch; b++) keys[b] = dp->qlen[b] > 0 ? c->len[b] : 0;
    const attn_lengths lengths = {NULL, dp->qlen, NULL, keys};
    attn_status st = attn_forward_cache_enqueue(ctx, &dp->pr, full, q, c, o, &lengths, lse,
                                                finished);
    free(keys);
    return st;
}

/* Whether the cache's K and V are plain tensors (attn_kv_cache_tensors
 * gives them): contiguous and stored as the dtype. */
static int plain_tensors(const attn_kv_cache *c)
{
    return !c->paged && c->storage == ATTN_KV_AS_DTYPE;
}

/* q, out and lse checked as attn_forward over the cache's tensors checks
 * them (the same messages). A cache without plain tensors passes none: its
 * K and V are buffers of its own, which no caller holds, so they cannot
 * meet q, out or lse. */
static attn_status validate_io(attn_context *ctx, const attn_kv_cache *c, const attn_problem *full,
                               const attn_tensor *q, const attn_tensor *out, cl_mem lse)
{
    if (!plain_tensors(c)) return attn_validate_io(ctx, full, q, out, lse);
    attn_tensor ck, cv;
    attn_kv_plain_tensors(c, &ck, &cv);
    return attn_validate_forward(ctx, full, q, &ck, &cv, out, NULL, lse);
}

/* Check mode's inputs, read before the kernels run (out may be q): q, and
 * the cache's K and V as the reference's [batch][kv_heads][capacity]
 * rows, from its tensors or, without plain tensors, sequence by sequence
 * (attn_kv_read_locked; rows past a sequence's length stay zero, unread).
 * An int8 cache's rows are its dequantized floats, as the kernels read
 * them: rounded to an f16 or bf16 dtype they were another problem, off by
 * more than the tolerance where attention is sharp. */
static attn_status read_check_inputs(attn_context *ctx, attn_kv_cache *c, const attn_problem *full,
                                     const attn_tensor *q, attn_check_inputs **inputs)
{
    attn_tensor ck, cv;
    const int plain = plain_tensors(c);
    if (plain) attn_kv_plain_tensors(c, &ck, &cv);
    /* (after the appends: attn_check_read_inputs orders an out-of-order queue) */
    attn_status st =
        attn_check_read_inputs(ctx, full, q, plain ? &ck : NULL, plain ? &cv : NULL, inputs);
    if (st != ATTN_SUCCESS || plain) return st;
    const size_t D = (size_t)c->head_dim, cap = (size_t)c->capacity;
    float *hk, *hv;
    attn_check_kv(*inputs, &hk, &hv);
    const int int8 = c->storage == ATTN_KV_INT8;
    const attn_dtype read_as = int8 ? ATTN_F32 : c->dtype;
    const size_t es = attn_dtype_size(read_as);
    unsigned char *raw = malloc(2 * (size_t)c->kv_heads * cap * D * es);
    if (!raw) st = ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "check mode: out of host memory");
    for (int b = 0; st == ATTN_SUCCESS && b < c->batch; b++) {
        const size_t n = (size_t)c->len[b] * D, half = (size_t)c->kv_heads * n;
        unsigned char *rv = raw + half * es;
        st = attn_kv_read_locked(c, b, 0, c->len[b], raw, rv, int8);
        for (int h = 0; st == ATTN_SUCCESS && h < c->kv_heads; h++) {
            const size_t at = ((size_t)b * c->kv_heads + h) * cap * D;
            const size_t from = (size_t)h * n * es;
            attn_load_to_f32(read_as, raw + from, hk + at, n);
            attn_load_to_f32(read_as, rv + from, hv + at, n);
        }
    }
    free(raw);
    if (st != ATTN_SUCCESS) {
        attn_check_free(*inputs);
        *inputs = NULL;
    }
    return st;
}

/* attn_decode with ctx's lock held, on the planner's parameters or given
 * ones (q_len at most ATTN_DECODE_MAX_Q_LEN); check mode included. */
static attn_status decode_locked(attn_context *ctx, attn_kv_cache *cache, const attn_problem *p,
                                 const attn_tensor *q, const attn_tensor *out, const int *q_lens,
                                 cl_mem lse, const attn_params *given, cl_event *done)
{
    decode_plan dp = {0};
    attn_check_inputs *inputs = NULL;
    cl_event finished = NULL;
    attn_problem full;
    attn_status st = check_args(ctx, cache, p, q_lens, 1);
    if (st == ATTN_SUCCESS && given && p->q_len > ATTN_DECODE_MAX_Q_LEN)
        st = INVALID(ctx, "p->q_len = %d is over ATTN_DECODE_MAX_Q_LEN %d", p->q_len,
                     ATTN_DECODE_MAX_Q_LEN);
    if (st == ATTN_SUCCESS) {
        full = full_problem(cache, p);
        st = validate_io(ctx, cache, &full, q, out, lse);
    }
    if (st == ATTN_SUCCESS) st = make_plan(ctx, cache, p, q_lens, given, &dp);
    if (st == ATTN_SUCCESS && ctx->check) st = read_check_inputs(ctx, cache, &full, q, &inputs);
    if (st == ATTN_SUCCESS)
        st = dp.prefill ? enqueue_prefill(ctx, cache, &dp, &full, q, out, lse, &finished)
                        : enqueue(ctx, cache, &dp, p, q, out, lse, &finished);
    if (st == ATTN_SUCCESS && inputs) {
        /* the same problem for attn_forward: each sequence's queries are its
         * last q_len[b] tokens of len[b] */
        const attn_lengths lengths = {NULL, dp.qlen, NULL, cache->len};
        cl_int err = clWaitForEvents(1, &finished);
        st = err == CL_SUCCESS ? attn_check_compare(ctx, &full, inputs, out, &lengths, lse)
                               : attn_fail_cl(ctx, err, "clWaitForEvents (check mode)");
    }
    attn_check_free(inputs);
    free(dp.qlen);
    if (st == ATTN_SUCCESS && done) *done = finished; /* the caller releases it */
    else if (finished) clReleaseEvent(finished);
    return st;
}

attn_status attn_decode(attn_context *ctx, attn_kv_cache *cache, const attn_problem *p,
                        const attn_tensor *q, const attn_tensor *out, const int *q_lens,
                        cl_mem lse, cl_event *done)
{
    if (done) *done = NULL;
    if (!ctx) return attn_fail_null(__func__, "ctx");
    attn_call_begin(ctx, __func__);
    const attn_status st = decode_locked(ctx, cache, p, q, out, q_lens, lse, NULL, done);
    attn_call_end(ctx);
    return st;
}

attn_status attn_decode_params(attn_context *ctx, attn_kv_cache *cache, const attn_params *pr,
                               const attn_problem *p, const attn_tensor *q,
                               const attn_tensor *out, cl_event *done)
{
    if (done) *done = NULL;
    return decode_locked(ctx, cache, p, q, out, NULL, NULL, pr, done);
}

attn_status attn_decode_prepare(attn_context *ctx, attn_kv_cache *cache, const attn_problem *p,
                                attn_plan_info *info)
{
    return attn_decode_prepare_splits(ctx, cache, p, info, NULL);
}

attn_status attn_decode_prepare_splits(attn_context *ctx, attn_kv_cache *cache,
                                       const attn_problem *p, attn_plan_info *info, int *splits)
{
    if (!ctx) return attn_fail_null("attn_decode_prepare", "ctx");
    attn_call_begin(ctx, "attn_decode_prepare");
    decode_plan dp = {0};
    cl_kernel main_k = NULL, comb_k = NULL;
    attn_problem full;
    attn_status st = check_args(ctx, cache, p, NULL, 0);
    if (st == ATTN_SUCCESS) {
        full = full_problem(cache, p);
        st = attn_validate_problem(ctx, &full, NULL);
    }
    if (st == ATTN_SUCCESS) st = make_plan(ctx, cache, p, NULL, NULL, &dp);
    if (st == ATTN_SUCCESS)
        st = dp.prefill ? attn_forward_cache_prepare(ctx, &dp.pr, &full, cache)
                        : get_kernels(ctx, &dp, p, cache, &main_k, &comb_k);
    if (main_k) clReleaseKernel(main_k);
    if (comb_k) clReleaseKernel(comb_k);
    if (st == ATTN_SUCCESS && info) {
        memset(info, 0, sizeof *info);
        snprintf(info->family, sizeof info->family, "%s",
                 attn_family_desc_of(dp.pr.family)->name);
        attn_params_format(&dp.pr, info->params, sizeof info->params);
        size_t n = strlen(info->params);
        snprintf(info->params + n, sizeof info->params - n, ",splits=%d", dp.nsplit);
        snprintf(info->source, sizeof info->source, "%s", dp.source);
        info->local_bytes = attn_params_local_bytes(&dp.pr, &full);
        info->private_bytes = attn_params_private_bytes(
            dp.prefill ? ATTN_ENTRY_PREFILL : ATTN_ENTRY_DECODE, &dp.pr, &full);
    }
    if (st == ATTN_SUCCESS && splits) *splits = dp.nsplit;
    free(dp.qlen);
    attn_call_end(ctx);
    return st;
}
