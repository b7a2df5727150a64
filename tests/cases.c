/* cases.c -- the case runner declared in cases.h: kernel parameters for the
 * suites, the KV-cache entry point, running one case through an entry and
 * checking it (values, gaps, inputs, event). The table itself is in
 * case_table.c. */
#define _POSIX_C_SOURCE 200809L
#include "cases.h"
#include "kernels/params.h"
#include "attention/kv_quant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_runs;    /* case runs made by this process */
static int g_skipped; /* and rows skipped under mma, which refuses them */

float *harness_xalloc(size_t n)
{
    float *x = calloc(n ? n : 1, sizeof *x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    return x;
}

attn_problem harness_problem(int B, int Hq, int Hkv, int D, int Sq, int Skv, int causal)
{
    attn_problem p = {.batch = B, .q_heads = Hq, .kv_heads = Hkv, .head_dim = D, .q_len = Sq,
                      .kv_len = Skv, .dtype = ATTN_F32, .causal = causal, .scale = 0.0f};
    return p;
}

void harness_fill_qkv(float *q, size_t nq, float *k, float *v, size_t nkv, uint64_t seed,
                      float amp, float v_lo, float v_hi)
{
    harness_fill_normal(q, nq, seed, 0.0f, amp);
    harness_fill_normal(k, nkv, seed + 1, 0.0f, amp);
    harness_fill_uniform(v, nkv, seed + 2, v_lo, v_hi);
}

/* ---- kernel parameters ---- */

const char *harness_family_name(harness_family f)
{
    return f == HARNESS_TILED    ? "tiled"
           : f == HARNESS_VECTOR ? "vector"
           : f == HARNESS_FLASH  ? "flash"
           : f == HARNESS_MMA    ? "mma"
                                 : "auto";
}

attn_status harness_use_params(attn_context *ctx, const char *text)
{
    return attn_context_set_params(ctx, text);
}

attn_status harness_use_family(attn_context *ctx, harness_family f, const char *extra)
{
    char text[192];
    if (f == HARNESS_AUTO)
        return harness_use_params(ctx, extra && *extra ? extra : NULL);
    int n = snprintf(text, sizeof text, "family=%s", harness_family_name(f));
    /* the tables' texts serve every family: mma has no rows (its warps and
     * m-tiles make them), which the planner would leave out with a warning */
    for (const char *at = extra; at && *at;) {
        const size_t len = strcspn(at, ",");
        if (!(f == HARNESS_MMA && strncmp(at, "rows=", 5) == 0) && len)
            n += snprintf(text + n, sizeof text - (size_t)n, ",%.*s", (int)len, at);
        CU_ASSERT_FATAL(n < (int)sizeof text);
        at += len + (at[len] == ',');
    }
    return harness_use_params(ctx, text);
}

/* ---- the table ---- */

const harness_case *harness_case_named(const char *name)
{
    for (size_t i = 0; i < harness_ncases; i++)
        if (strcmp(harness_cases[i].name, name) == 0) return &harness_cases[i];
    printf("\n  no case \"%s\" in the table\n", name);
    CU_FAIL_FATAL("case not in the table");
    return NULL;
}

const harness_case *harness_group_next(const char *group, const harness_case *after)
{
    for (size_t i = after ? (size_t)(after - harness_cases) + 1 : 0; i < harness_ncases; i++)
        if (strcmp(harness_cases[i].group, group) == 0) return &harness_cases[i];
    return NULL;
}

attn_problem harness_case_problem(const harness_case *c)
{
    const attn_problem p = {.batch = c->B, .q_heads = c->Hq, .kv_heads = c->Hkv, .head_dim = c->D,
                            .q_len = c->Sq, .kv_len = c->Skv, .dtype = c->dtype,
                            .causal = c->causal, .scale = c->scale,
                            .use_window = c->window, .window_left = c->window_left,
                            .window_right = c->window_right, .softcap = c->softcap,
                            .alibi_slopes = c->alibi_slopes, .alibi_max_bias = c->alibi_max_bias,
                            .packed = c->packed};
    return p;
}

attn_lengths harness_case_lengths(const harness_case *c)
{
    const attn_lengths L = {c->q_start, c->q_len, c->kv_start, c->kv_len};
    return L;
}

harness_case harness_case_of(const char *name, const attn_problem *p, const attn_lengths *L,
                             const harness_layout *lq, const harness_layout *lk,
                             const harness_layout *lv, const harness_layout *lo)
{
    static const harness_layout bhsd = {HARNESS_BHSD, 0, 0, 0};
    harness_case c;
    memset(&c, 0, sizeof c);
    c.name = name;
    c.B = p->batch, c.Hq = p->q_heads, c.Hkv = p->kv_heads, c.D = p->head_dim;
    c.Sq = p->q_len, c.Skv = p->kv_len;
    c.dtype = p->dtype, c.causal = p->causal, c.scale = p->scale;
    if (L)
        c.q_start = L->q_start, c.q_len = L->q_len, c.kv_start = L->kv_start, c.kv_len = L->kv_len;
    c.lq = lq ? *lq : bhsd, c.lk = lk ? *lk : bhsd;
    c.lv = lv ? *lv : bhsd, c.lo = lo ? *lo : bhsd;
    c.window = p->use_window, c.window_left = p->window_left, c.window_right = p->window_right;
    c.softcap = p->softcap, c.alibi_slopes = p->alibi_slopes, c.alibi_max_bias = p->alibi_max_bias;
    c.packed = p->packed;
    if (p->sinks) c.sinks = HARNESS_SINKS_HOST, c.sink_values = p->sinks;
    return c;
}

/* ---- the KV-cache entry point ---- */

static int any_nonzero(const int *x, int n)
{
    for (int i = 0; x && i < n; i++)
        if (x[i]) return 1;
    return 0;
}

static int decode_block_size; /* harness_decode_blocks */
static attn_kv_storage decode_storage; /* harness_case_run, from the case's kv_int8 */
static int decode_splits; /* harness_case_run, from the case's params: the splits asked for */
static int decode_mma;    /* harness_case_exec: mma forced on a row it runs */

void harness_decode_blocks(int block_size) { decode_block_size = block_size; }

/* The splits of the plan attn_decode would run (1 when unsplit). */
static int planned_splits(attn_context *ctx, attn_kv_cache *cache, const attn_problem *dp,
                          attn_plan_info *info, attn_status *st)
{
    *st = attn_decode_prepare(ctx, cache, dp, info);
    const char *sp = strstr(info->params, "splits=");
    return *st == ATTN_SUCCESS && sp ? atoi(sp + 7) : 1;
}

/* A row that asks for splits tests the combine only where the plan splits:
 * the plan lowers splits to the cache's key blocks, so a cache shorter than
 * two of the family's blocks (mma's 64 keys, the 40-50 keys of most rows)
 * ran unsplit. The plan's keys then go down to 16, as the row's family
 * runs it, and a row that still does not split fails -- but for a block
 * past ATTN_DECODE_MAX_Q_LEN on the vector family, which runs
 * attn_forward's kernels over the cache, unsplit (decode.h). */
static attn_status split_plan(attn_context *ctx, attn_kv_cache *cache, const attn_problem *dp)
{
    attn_plan_info info;
    attn_status st;
    if (planned_splits(ctx, cache, dp, &info, &st) > 1 || st != ATTN_SUCCESS) return st;
    if (dp->q_len > ATTN_DECODE_MAX_Q_LEN && strcmp(info.family, "vector") == 0) return st;
    char text[sizeof info.params + 32];
    int n = 0;
    for (const char *at = info.params; *at;) {
        const size_t len = strcspn(at, ",");
        if (strncmp(at, "keys=", 5) == 0)
            n += snprintf(text + n, sizeof text - (size_t)n, "keys=16,");
        else if (strncmp(at, "splits=", 7) == 0)
            n += snprintf(text + n, sizeof text - (size_t)n, "splits=%d,", decode_splits);
        else n += snprintf(text + n, sizeof text - (size_t)n, "%.*s,", (int)len, at);
        CU_ASSERT_FATAL(n < (int)sizeof text);
        at += len + (at[len] == ',');
    }
    text[n - 1] = 0;
    if ((st = harness_use_params(ctx, text)) != ATTN_SUCCESS) return st;
    if (planned_splits(ctx, cache, dp, &info, &st) > 1 || st != ATTN_SUCCESS) return st;
    printf("\n  harness_decode_entry: splits=%d asked, the plan runs unsplit: %s\n", decode_splits,
           info.params);
    CU_FAIL("a split row's decode is not split");
    return st;
}

attn_status harness_decode_entry(attn_context *ctx, const attn_problem *p, const attn_tensor *q,
                                 const attn_tensor *k, const attn_tensor *v,
                                 const attn_tensor *out, const attn_lengths *L, cl_mem lse,
                                 cl_event *done)
{
    if (L && (any_nonzero(L->q_start, p->batch) || any_nonzero(L->kv_start, p->batch))) {
        printf("\n  harness_decode_entry: a KV cache starts every sequence at 0\n");
        return ATTN_ERROR_UNSUPPORTED;
    }
    attn_kv_cache *cache = NULL;
    const attn_kv_cache_desc desc = {.batch = p->batch, .kv_heads = p->kv_heads,
                                     .head_dim = p->head_dim, .capacity = p->kv_len,
                                     .dtype = p->dtype, .block_size = decode_block_size,
                                     .storage = decode_storage};
    attn_status st = decode_block_size || decode_storage
                         ? attn_kv_cache_create_desc(ctx, &desc, &cache)
                         : attn_kv_cache_create(ctx, p->batch, p->kv_heads, p->head_dim,
                                                p->kv_len, p->dtype, &cache);
    if (st == ATTN_SUCCESS)
        st = attn_kv_cache_append(cache, k, v, p->kv_len, L ? L->kv_len : NULL, NULL);
    attn_problem dp = *p;
    dp.kv_len = 0; /* the cache's own lengths */
    if (st == ATTN_SUCCESS && decode_splits > 1) st = split_plan(ctx, cache, &dp);
    if (st == ATTN_SUCCESS && decode_mma) { /* not passed on another family's plan */
        attn_plan_info info;
        st = attn_decode_prepare(ctx, cache, &dp, &info);
        if (st == ATTN_SUCCESS && strcmp(info.family, "mma") != 0) {
            printf("\n  mma forced, the decode plan is %s", info.params);
            CU_FAIL("mma forced on a decode it runs, another family planned");
        }
    }
    if (st == ATTN_SUCCESS)
        st = attn_decode(ctx, cache, &dp, q, out, L ? L->q_len : NULL, lse, done);
    /* the cache goes with this call: let the decode finish reading it */
    if (st == ATTN_SUCCESS && done && *done) clWaitForEvents(1, done);
    else clFinish(attn_context_queue(ctx));
    attn_kv_cache_release(cache);
    return st;
}

/* ---- checks ---- */

static int is_nan_pattern(attn_dtype t, const unsigned char *p)
{
    if (t == ATTN_F32) {
        float f;
        memcpy(&f, p, sizeof f);
        return isnan(f);
    }
    uint16_t w;
    memcpy(&w, p, sizeof w);
    return t == ATTN_F16 ? (w & 0x7fffu) > 0x7c00u : (w & 0x7fffu) > 0x7f80u;
}

int harness_gaps_written(attn_context *ctx, attn_dtype dtype, const attn_tensor *t, int B,
                          int H, int S, int D)
{
    size_t esize = attn_dtype_size(dtype), bytes = 0;
    clGetMemObjectInfo(t->buffer, CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
    size_t n = bytes / esize;
    unsigned char *raw = malloc(bytes), *owned = calloc(n ? n : 1, 1);
    CU_ASSERT_FATAL(raw != NULL && owned != NULL);
    CU_ASSERT_EQUAL_FATAL(clEnqueueReadBuffer(attn_context_queue(ctx), t->buffer, CL_TRUE, 0,
                                              bytes, raw, 0, NULL, NULL), CL_SUCCESS);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int s = 0; s < S; s++)
                memset(owned + t->offset + (size_t)b * t->stride_batch +
                           (size_t)h * t->stride_head + (size_t)s * t->stride_seq,
                       1, (size_t)D);
    int bad = 0;
    size_t first = 0;
    for (size_t i = 0; i < n; i++)
        if (!owned[i] && !is_nan_pattern(dtype, raw + i * esize)) {
            if (!bad) first = i;
            bad++;
        }
    if (bad)
        printf("\n  O gaps: %d elements outside the tensor were written (first at element %zu)\n",
               bad, first);
    free(raw);
    free(owned);
    return bad;
}

/* A downloaded input against what was uploaded: the same bits, or NaN for
 * NaN (a round trip through f16 may change a NaN's payload). */
static int unchanged(const float *got, const float *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0 && !(isnan(got[i]) && isnan(want[i]))) {
            printf("\n  %s: input modified at [%zu]: %.9g, was %.9g\n", what, i, got[i], want[i]);
            return 1;
        }
    return 0;
}

static void describe(const harness_case *c, harness_family f, const char *entry_name)
{
    printf("\n  case \"%s\" [%s, %s%s%s]: B=%d Hq=%d Hkv=%d D=%d Sq=%d Skv=%d %s causal=%d "
           "scale=%g orders q%d k%d v%d o%d in_place=%d%s\n",
           c->name, entry_name, harness_family_name(f), c->params ? " " : "",
           c->params ? c->params : "", c->B, c->Hq, c->Hkv, c->D, c->Sq, c->Skv,
           attn_dtype_name(c->dtype), c->causal, (double)c->scale, c->lq.order, c->lk.order,
           c->lv.order, c->lo.order, c->in_place, c->q_len || c->kv_len ? " padded" : "");
    if (c->window || c->softcap > 0 || c->sinks || c->alibi_slopes || c->alibi_max_bias > 0 ||
        c->mask || c->packed)
        printf("  variants: window=%d(%d,%d) softcap=%g sinks=%d alibi=%s/%g mask=%d(%s, bcast %u) "
               "packed=%d\n",
               c->window, c->window_left, c->window_right, (double)c->softcap, (int)c->sinks,
               c->alibi_slopes ? "slopes" : "-", (double)c->alibi_max_bias, (int)c->mask,
               attn_dtype_name(c->mask_dtype), c->mask_bcast, c->packed);
}

static int padded(const harness_case *c)
{
    return c->q_start || c->q_len || c->kv_start || c->kv_len;
}

/* Packed: whether buffer row r of the token axis (q_start / q_len, or the
 * kv arrays) belongs to some batch entry. */
static int row_in_entry(const harness_case *c, const int *start, const int *len, int S, int r)
{
    for (int b = 0; b < c->B; b++) {
        const int lo = start ? start[b] : 0, n = len ? len[b] : S;
        if (r >= lo && r < lo + n) return 1;
    }
    return 0;
}

/* Packed: the device's one token axis (O [Hq][Sq][D], LSE [Hq][Sq]) into
 * the runner's BHSD [B] arrays as the reference lays them out: entry b's
 * own rows from the device, zeros and -inf in its pad rows. Returns the
 * rows of no entry the kernel wrote (they must stay NaN). */
static int unpack_out(const harness_case *c, const float *o1, const float *l1, float *out,
                      float *lse)
{
    const size_t D = (size_t)c->D, S = (size_t)c->Sq;
    int bad = 0;
    for (int h = 0; h < c->Hq; h++)
        for (int r = 0; r < c->Sq; r++) {
            const float *src = o1 + ((size_t)h * S + (size_t)r) * D;
            if (row_in_entry(c, c->q_start, c->q_len, c->Sq, r)) continue;
            for (size_t d = 0; d < D; d++) bad += !isnan(src[d]);
            if (l1) bad += !isnan(l1[(size_t)h * S + (size_t)r]);
        }
    if (bad) printf("\n  packed: %d elements of rows no entry owns were written\n", bad);
    for (int b = 0; b < c->B; b++) {
        const int lo = c->q_start ? c->q_start[b] : 0, n = c->q_len ? c->q_len[b] : c->Sq;
        for (int h = 0; h < c->Hq; h++)
            for (int r = 0; r < c->Sq; r++) {
                const size_t row = ((size_t)b * c->Hq + (size_t)h) * S + (size_t)r;
                const size_t row1 = (size_t)h * S + (size_t)r;
                const int own = r >= lo && r < lo + n;
                for (size_t d = 0; d < D; d++) out[row * D + d] = own ? o1[row1 * D + d] : 0.0f;
                if (lse && l1) lse[row] = own ? l1[row1] : -INFINITY;
            }
    }
    return bad;
}

/* ---- running ---- */

/* 1 (a failed assertion) when attn_forward of p, mma forced, would not run
 * the mma family: a case it can run must not pass on the fallback plan. */
static int not_mma(attn_context *ctx, const attn_problem *p)
{
    attn_plan_info info;
    const attn_status st = attn_prepare(ctx, p, &info);
    CU_ASSERT_EQUAL(st, ATTN_SUCCESS);
    if (st != ATTN_SUCCESS || strcmp(info.family, "mma") == 0) return st != ATTN_SUCCESS;
    printf("\n  mma forced, the plan is %s", info.params);
    CU_FAIL("mma forced on a problem it runs, another family planned");
    return 1;
}

int harness_case_exec(const harness_case *c, harness_family f, harness_entry entry,
                      const char *entry_name, const float *q, const float *k, const float *v,
                      float *out, float *lse)
{
    attn_context *ctx = harness_context();
    /* packed: one token axis on the device (batch entry 0 of the host arrays) */
    const int Bd = c->packed ? 1 : c->B;
    const size_t nq = (size_t)Bd * c->Hq * c->Sq * c->D;
    const size_t nkv = (size_t)Bd * c->Hkv * c->Skv * c->D;
    const size_t nrows = (size_t)Bd * c->Hq * c->Sq;
    attn_problem p = harness_case_problem(c);
    const attn_lengths L = harness_case_lengths(c);
    harness_variant_data vd;
    harness_variant_data_make(c, ctx, &vd);
    harness_variant_attach(c, &vd, 1, &p);
    attn_tensor tq, tk, tv, to;
    cl_mem mq = harness_upload(ctx, c->dtype, q, Bd, c->Hq, c->Sq, c->D, &c->lq, &tq);
    cl_mem mk = harness_upload(ctx, c->dtype, k, Bd, c->Hkv, c->Skv, c->D, &c->lk, &tk);
    cl_mem mv = harness_upload(ctx, c->dtype, v, Bd, c->Hkv, c->Skv, c->D, &c->lv, &tv);
    cl_mem mo = NULL;
    if (c->in_place) to = tq;
    else mo = harness_alloc(ctx, c->dtype, Bd, c->Hq, c->Sq, c->D, &c->lo, &to);
    cl_mem mlse = c->no_lse ? NULL : harness_float_buffer(ctx, nrows);
    CU_ASSERT_FATAL(mq && mk && mv && (c->in_place || mo) && (c->no_lse || mlse));
    if (c->packed) tq.stride_batch = tk.stride_batch = tv.stride_batch = to.stride_batch = 0;
    float *back = harness_xalloc(nq > nkv ? nq : nkv);
    float *o1 = c->packed ? harness_xalloc(nq) : out, *l1 = c->packed ? harness_xalloc(nrows) : lse;
    int bad = 0;
    g_runs++;

    cl_event done = NULL;
    attn_status st = harness_use_family(ctx, f, c->params);
    if (st == ATTN_SUCCESS && f == HARNESS_MMA && entry == attn_forward &&
        !attn_family_refuses(ATTN_FAMILY_MMA, &p))
        bad += not_mma(ctx, &p);
    decode_mma = f == HARNESS_MMA && !attn_family_refuses(ATTN_FAMILY_MMA, &p);
    if (st == ATTN_SUCCESS)
        st = entry(ctx, &p, &tq, &tk, &tv, &to, padded(c) ? &L : NULL, mlse, &done);
    decode_mma = 0;
    /* the message before resetting the parameters clears it */
    if (st != ATTN_SUCCESS)
        printf("\n  %s: %s: %s", entry_name, attn_status_name(st), attn_last_error(ctx));
    harness_use_params(ctx, NULL);
    if (st != ATTN_SUCCESS) {
        CU_FAIL("the call failed");
        bad++;
        goto out;
    }
    CU_ASSERT_PTR_NOT_NULL(done);
    if (done) {
        cl_int es = -1;
        CU_ASSERT_EQUAL(clWaitForEvents(1, &done), CL_SUCCESS);
        clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof es, &es, NULL);
        CU_ASSERT_EQUAL(es, CL_COMPLETE);
        clReleaseEvent(done);
    }
    CU_ASSERT_EQUAL_FATAL(harness_download(ctx, c->dtype, &to, Bd, c->Hq, c->Sq, c->D, o1), 0);
    if (lse && mlse) CU_ASSERT_EQUAL_FATAL(harness_read_floats(ctx, mlse, l1, nrows), 0);
    bad += harness_gaps_written(ctx, c->dtype, &to, Bd, c->Hq, c->Sq, c->D);
    if (c->packed) bad += unpack_out(c, o1, lse && mlse ? l1 : NULL, out, lse);
    if (!c->in_place) {
        CU_ASSERT_EQUAL_FATAL(harness_download(ctx, c->dtype, &tq, Bd, c->Hq, c->Sq, c->D, back),
                              0);
        bad += unchanged(back, q, nq, "Q");
    }
    CU_ASSERT_EQUAL_FATAL(harness_download(ctx, c->dtype, &tk, Bd, c->Hkv, c->Skv, c->D, back),
                          0);
    bad += unchanged(back, k, nkv, "K");
    CU_ASSERT_EQUAL_FATAL(harness_download(ctx, c->dtype, &tv, Bd, c->Hkv, c->Skv, c->D, back),
                          0);
    bad += unchanged(back, v, nkv, "V");
    CU_ASSERT_EQUAL(bad, 0);
out:
    if (bad) describe(c, f, entry_name);
    clReleaseMemObject(mq);
    clReleaseMemObject(mk);
    clReleaseMemObject(mv);
    if (mo) clReleaseMemObject(mo);
    if (mlse) clReleaseMemObject(mlse);
    harness_variant_data_release(&vd);
    if (c->packed) free(o1), free(l1);
    free(back);
    return bad;
}

/* NaN into every row outside the batch entries' content regions: whatever
 * pad rows hold must never reach a result. */
void harness_poison_pads(float *x, int B, int H, int S, int D, const int *start, const int *len)
{
    for (int b = 0; b < B; b++) {
        const int lo = start ? start[b] : 0, n = len ? len[b] : S;
        for (int h = 0; h < H; h++)
            for (int s = 0; s < S; s++)
                if (s < lo || s >= lo + n)
                    for (int d = 0; d < D; d++) x[(((size_t)b * H + h) * S + s) * D + d] = NAN;
    }
}

int harness_check_reference(const char *what, const attn_problem *p, const attn_lengths *L,
                            const float *q, const float *k, const float *v, const float *out,
                            const float *lse, uint64_t seed)
{
    const size_t nq = (size_t)p->batch * p->q_heads * p->q_len * p->head_dim;
    const size_t rows = (size_t)p->batch * p->q_heads * p->q_len;
    float *ref = harness_xalloc(nq), *ref_lse = harness_xalloc(rows);
    CU_ASSERT_EQUAL_FATAL(attn_reference_forward(p, q, k, v, ref, L, ref_lse), ATTN_SUCCESS);
    double atol, rtol;
    attn_tolerance(p->dtype, &atol, &rtol);
    char name[192];
    snprintf(name, sizeof name, "%s O", what);
    int bad = harness_compare(name, out, ref, nq, atol, rtol, seed);
    if (lse) {
        snprintf(name, sizeof name, "%s LSE", what);
        bad += harness_compare(name, lse, ref_lse, rows, atol, rtol, seed);
    }
    free(ref), free(ref_lse);
    return bad;
}

/* Packed: NaN into the rows of the one token axis (x: [H][S][D]) that no
 * batch entry owns. */
static void poison_unowned(const harness_case *c, float *x, int H, int S, const int *start,
                           const int *len)
{
    for (int h = 0; h < H; h++)
        for (int r = 0; r < S; r++)
            if (!row_in_entry(c, start, len, S, r))
                for (int d = 0; d < c->D; d++) x[((size_t)h * S + r) * c->D + d] = NAN;
}

/* rows of d floats as an int8 cache holds them (attn_kv_quantize_row) */
static void quant_dequant(float *x, size_t rows, int d)
{
    signed char *q = malloc((size_t)d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    for (size_t r = 0; r < rows; r++) {
        float s;
        attn_kv_quantize_row(x + r * (size_t)d, d, q, &s);
        for (int i = 0; i < d; i++) x[r * (size_t)d + i] = attn_kv_dequantize(q[i], s);
    }
    free(q);
}

int harness_case_run(const harness_case *c, harness_family f, harness_entry entry,
                     const char *entry_name, float **o_keep, float **lse_keep)
{
    const attn_problem cp = harness_case_problem(c);
    /* a case mma cannot run would run the device's plan (test_mma checks
     * that): skipped, unless the caller keeps the result */
    if (f == HARNESS_MMA && attn_family_refuses(ATTN_FAMILY_MMA, &cp) && !o_keep && !lse_keep) {
        g_skipped++;
        return 0;
    }
    const uint64_t seed = harness_seed(c->seed);
    const size_t nq = (size_t)c->B * c->Hq * c->Sq * c->D;
    const size_t nkv = (size_t)c->B * c->Hkv * c->Skv * c->D;
    const size_t nrows = (size_t)c->B * c->Hq * c->Sq;
    float *q = harness_xalloc(nq), *k = harness_xalloc(nkv), *v = harness_xalloc(nkv);
    float *got = harness_xalloc(nq), *got_lse = harness_xalloc(nrows);
    const float amp = c->amp > 0 ? c->amp : 1.0f;
    if (c->packed) { /* one token axis, copied into every batch entry */
        harness_fill_qkv(q, nq / c->B, k, v, nkv / c->B, seed, amp, -2.0f, 2.0f);
        if (c->poison_pads) {
            poison_unowned(c, q, c->Hq, c->Sq, c->q_start, c->q_len);
            poison_unowned(c, k, c->Hkv, c->Skv, c->kv_start, c->kv_len);
            poison_unowned(c, v, c->Hkv, c->Skv, c->kv_start, c->kv_len);
        }
        for (int b = 1; b < c->B; b++) {
            memcpy(q + nq / c->B * b, q, nq / c->B * sizeof *q);
            memcpy(k + nkv / c->B * b, k, nkv / c->B * sizeof *k);
            memcpy(v + nkv / c->B * b, v, nkv / c->B * sizeof *v);
        }
    } else {
        harness_fill_qkv(q, nq, k, v, nkv, seed, amp, -2.0f, 2.0f);
        if (c->poison_pads) {
            harness_poison_pads(q, c->B, c->Hq, c->Sq, c->D, c->q_start, c->q_len);
            harness_poison_pads(k, c->B, c->Hkv, c->Skv, c->D, c->kv_start, c->kv_len);
            harness_poison_pads(v, c->B, c->Hkv, c->Skv, c->D, c->kv_start, c->kv_len);
        }
    }
    harness_round(c->dtype, q, nq);
    harness_round(c->dtype, k, nkv);
    harness_round(c->dtype, v, nkv);
    CU_ASSERT_FATAL(!c->kv_int8 || entry == harness_decode_entry); /* only a cache holds int8 */
    decode_storage = c->kv_int8 ? ATTN_KV_INT8 : ATTN_KV_AS_DTYPE;
    const char *splits = c->params ? strstr(c->params, "splits=") : NULL;
    decode_splits = splits ? atoi(splits + 7) : 0;
    int bad = harness_case_exec(c, f, entry, entry_name, q, k, v, got, got_lse);
    decode_storage = ATTN_KV_AS_DTYPE;
    decode_splits = 0;
    if (c->kv_int8) { /* what the cache holds, a token's head row at a time */
        quant_dequant(k, nkv / (size_t)c->D, c->D);
        quant_dequant(v, nkv / (size_t)c->D, c->D);
    }
    if (!bad) {
        attn_problem p = harness_case_problem(c);
        const attn_lengths L = harness_case_lengths(c);
        harness_variant_data vd;
        harness_variant_data_make(c, NULL, &vd);
        harness_variant_attach(c, &vd, 0, &p);
        char what[160];
        snprintf(what, sizeof what, "%s [%s, %s]", c->name, entry_name, harness_family_name(f));
        bad = harness_check_reference(what, &p, padded(c) ? &L : NULL, q, k, v, got,
                                      c->no_lse ? NULL : got_lse, seed);
        harness_variant_data_release(&vd);
        if (bad) describe(c, f, entry_name);
        CU_ASSERT_EQUAL(bad, 0);
        if (o_keep) *o_keep = got, got = NULL;
        if (lse_keep) *lse_keep = got_lse, got_lse = NULL;
    }
    free(q), free(k), free(v), free(got), free(got_lse);
    return bad;
}

/* Elements of got that differ from want: bit for bit (NaN matching NaN)
 * when exact, else beyond atol + rtol |want| (infinities equal). */
static int differ(const char *what, const float *got, const float *want, size_t n, int exact,
                  double atol, double rtol, uint64_t seed)
{
    if (!exact) return harness_compare(what, got, want, n, atol, rtol, seed);
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof got[i]) != 0 && !(isnan(got[i]) && isnan(want[i]))) {
            if (!bad)
                printf("\n  %s: [%zu] %.9g is not bit for bit %.9g\n", what, i, got[i], want[i]);
            bad++;
        }
    if (bad) printf("  %s: %d of %zu elements differ\n", what, bad, n);
    return bad;
}

int harness_case_same(const harness_case *a, const harness_case *b, harness_family f,
                      harness_entry entry, const char *entry_name, int exact)
{
    float *oa = NULL, *la = NULL, *ob = NULL, *lb = NULL;
    int bad = harness_case_run(a, f, entry, entry_name, &oa, &la);
    bad += harness_case_run(b, f, entry, entry_name, &ob, &lb);
    if (oa && ob) {
        const size_t rows = (size_t)a->B * a->Hq * a->Sq;
        double atol, rtol;
        attn_tolerance(a->dtype, &atol, &rtol);
        char what[256];
        snprintf(what, sizeof what, "\"%s\" vs \"%s\" [%s, %s] O", b->name, a->name, entry_name,
                 harness_family_name(f));
        const uint64_t seed = harness_seed(a->seed);
        int d = differ(what, ob, oa, rows * (size_t)a->D, exact, 2 * atol, 2 * rtol, seed);
        if (!a->no_lse && !b->no_lse) {
            snprintf(what, sizeof what, "\"%s\" vs \"%s\" [%s, %s] LSE", b->name, a->name,
                     entry_name, harness_family_name(f));
            d += differ(what, lb, la, rows, exact, 2 * atol, 2 * rtol, seed);
        }
        CU_ASSERT_EQUAL(d, 0);
        bad += d;
    }
    free(oa), free(la), free(ob), free(lb);
    return bad;
}

int harness_run_group_as(const char *group, harness_entry entry, const char *entry_name,
                         unsigned families, const char *params)
{
    int fails = 0, found = 0;
    for (const harness_case *t = harness_group_next(group, NULL); t;
         t = harness_group_next(group, t)) {
        harness_case c = *t;
        if (families) c.families = families, c.params = params;
        found++;
        HARNESS_FOR_FAMILIES(c.families, f)
            fails += harness_case_run(&c, f, entry, entry_name, NULL, NULL);
    }
    if (!found) {
        printf("\n  no case in group \"%s\"\n", group);
        CU_FAIL("empty case group");
    }
    return fails;
}

int harness_run_group(const char *group, harness_entry entry, const char *entry_name)
{
    return harness_run_group_as(group, entry, entry_name, 0, NULL);
}

int harness_case_runs(void) { return g_runs; }
int harness_case_skips(void) { return g_skipped; }

void harness_decode_keeps_plan(const char *params, attn_dtype dtype)
{
    attn_context *ctx = harness_context();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    attn_kv_cache *cache = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, 1, 1, 32, 64, dtype, &cache), ATTN_SUCCESS);
    attn_problem p = harness_problem(1, 2, 1, 32, 1, 64, 1);
    p.dtype = dtype;
    attn_plan_info plain, forced;
    CU_ASSERT_EQUAL_FATAL(attn_decode_prepare(ctx, cache, &p, &plain), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, params), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_decode_prepare(ctx, cache, &p, &forced), ATTN_SUCCESS);
    CU_ASSERT_STRING_EQUAL(forced.family, plain.family);
    CU_ASSERT_STRING_EQUAL(forced.source, "heuristic");
    printf("\n  decode under %s: %s", params, forced.params);
    attn_kv_cache_release(cache);
    harness_use_params(ctx, NULL);
}
