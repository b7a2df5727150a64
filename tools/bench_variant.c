/* bench_variant.c -- attn-bench's variants: the options' syntax, their
 * description, and the data one run needs (sinks, a mask made on the host
 * and copied to the device in its type, packed or padded lengths), with the
 * visible pairs a mask leaves counted on the host. */
#define _POSIX_C_SOURCE 200809L
#include "bench_variant.h"
#include "common.h"
#include "core/text.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MASK_BLOCK 64 /* random-block: the blocks' side, the tiled family's usual tile */

static const char *const mask_names[BENCH_MASK_COUNT] = {"none", "causal", "zeros", "prefix-lm",
                                                         "random-block"};

const char *bench_mask_name(bench_mask_kind k)
{
    return k >= 0 && k < BENCH_MASK_COUNT ? mask_names[k] : "?";
}

int bench_parse_window(const char *text, bench_variant *v)
{
    char buf[64];
    if (!text || strlen(text) >= sizeof buf) return -1;
    snprintf(buf, sizeof buf, "%s", text);
    char *comma = strchr(buf, ',');
    if (!comma) return -1;
    *comma = 0;
    int l, r;
    if (attn_parse_int(buf, -1, 1 << 30, &l) || attn_parse_int(comma + 1, -1, 1 << 30, &r))
        return -1;
    v->use_window = 1, v->window_left = l, v->window_right = r;
    return 0;
}

int bench_parse_sinks(const char *text, bench_variant *v)
{
    if (!text) return -1;
    if (strcmp(text, "per-head") == 0) {
        v->sinks = BENCH_SINKS_PER_HEAD;
        return 0;
    }
    if (attn_parse_float(text, -FLT_MAX, FLT_MAX, &v->sink_value)) return -1;
    v->sinks = BENCH_SINKS_VALUE;
    return 0;
}

int bench_parse_mask(const char *text, bench_variant *v)
{
    for (int k = BENCH_MASK_CAUSAL; text && k < BENCH_MASK_COUNT; k++)
        if (strcmp(text, mask_names[k]) == 0) {
            v->mask = (bench_mask_kind)k;
            return 0;
        }
    return -1;
}

int bench_parse_mask_dtype(const char *text, bench_variant *v)
{
    if (text && strcmp(text, "f32") == 0) v->mask_dtype = ATTN_F32;
    else if (text && strcmp(text, "f16") == 0) v->mask_dtype = ATTN_F16;
    else return -1;
    return 0;
}

int bench_variant_any(const bench_variant *v)
{
    return v->use_window || v->softcap > 0 || v->sinks || v->alibi_max_bias > 0 || v->mask ||
           v->npacked;
}

void bench_variant_text(const bench_variant *v, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = 0;
#define ADD(...) (n += (size_t)snprintf(buf + n, n < size ? size - n : 0, __VA_ARGS__))
    if (v->use_window) ADD("%swindow=%d,%d", n ? " " : "", v->window_left, v->window_right);
    if (v->softcap > 0) ADD("%ssoftcap=%g", n ? " " : "", (double)v->softcap);
    if (v->sinks == BENCH_SINKS_PER_HEAD) ADD("%ssinks=per-head", n ? " " : "");
    if (v->sinks == BENCH_SINKS_VALUE) ADD("%ssinks=%g", n ? " " : "", (double)v->sink_value);
    if (v->alibi_max_bias > 0) ADD("%salibi=%g", n ? " " : "", (double)v->alibi_max_bias);
    if (v->mask)
        ADD("%smask=%s/%s%s", n ? " " : "", mask_names[v->mask], attn_dtype_name(v->mask_dtype),
            v->mask_fresh ? "/fresh" : "");
    if (v->npacked) ADD("%s%s=%d", n ? " " : "", v->padded ? "padded" : "packed", v->npacked);
#undef ADD
}

void bench_variant_json(cJSON *row, const bench_variant *v)
{
    cJSON *j = cJSON_AddObjectToObject(row, "variant");
    if (v->use_window) {
        cJSON_AddNumberToObject(j, "window_left", v->window_left);
        cJSON_AddNumberToObject(j, "window_right", v->window_right);
    } else {
        cJSON_AddNullToObject(j, "window_left");
        cJSON_AddNullToObject(j, "window_right");
    }
    cJSON_AddNumberToObject(j, "softcap", v->softcap);
    if (v->sinks == BENCH_SINKS_VALUE) cJSON_AddNumberToObject(j, "sinks", v->sink_value);
    else if (v->sinks == BENCH_SINKS_PER_HEAD) cJSON_AddStringToObject(j, "sinks", "per-head");
    else cJSON_AddNullToObject(j, "sinks");
    cJSON_AddNumberToObject(j, "alibi_max_bias", v->alibi_max_bias);
    if (v->mask) {
        cJSON_AddStringToObject(j, "mask", mask_names[v->mask]);
        cJSON_AddStringToObject(j, "mask_dtype", attn_dtype_name(v->mask_dtype));
        cJSON_AddNumberToObject(j, "mask_version", v->mask_fresh ? 0 : 1);
    } else {
        cJSON_AddNullToObject(j, "mask");
        cJSON_AddNullToObject(j, "mask_dtype");
        cJSON_AddNullToObject(j, "mask_version");
    }
    if (v->npacked) {
        cJSON_AddStringToObject(j, "layout", v->padded ? "padded" : "packed");
        cJSON_AddItemToObject(j, "lengths", cJSON_CreateIntArray(v->packed, v->npacked));
    } else {
        cJSON_AddNullToObject(j, "layout");
        cJSON_AddNullToObject(j, "lengths");
    }
}

void bench_variant_shape(const bench_variant *v, attn_problem *p)
{
    if (!v->npacked) return;
    int sum = 0, max = 0;
    for (int i = 0; i < v->npacked; i++) {
        sum += v->packed[i];
        if (v->packed[i] > max) max = v->packed[i];
    }
    p->batch = v->npacked;
    p->q_len = p->kv_len = v->padded ? max : sum;
    p->packed = !v->padded;
}

/* The mask's value at buffer row r, key row c of an Sq x Skv mask. */
static float mask_value(bench_mask_kind k, int r, int c, int sq, int skv, const char *blocks,
                        int nbk)
{
    const int diag = r + skv - sq; /* the bottom-right diagonal's key at row r */
    switch (k) {
    case BENCH_MASK_CAUSAL: return c > diag ? -INFINITY : 0.0f;
    case BENCH_MASK_PREFIX_LM: return c >= skv / 2 && c > diag ? -INFINITY : 0.0f;
    case BENCH_MASK_RANDOM_BLOCK:
        return blocks[(size_t)(r / MASK_BLOCK) * nbk + c / MASK_BLOCK] ? -INFINITY : 0.0f;
    default: return 0.0f;
    }
}

/* The mask of p's [Sq][Skv] buffer rows, broadcast over batch and heads. */
static attn_status make_mask(attn_context *ctx, const bench_variant *v, attn_problem *p,
                             bench_variant_data *d, const char **what)
{
    const size_t sq = (size_t)p->q_len, skv = (size_t)p->kv_len, n = sq * skv;
    const int nbq = (int)((sq + MASK_BLOCK - 1) / MASK_BLOCK);
    const int nbk = (int)((skv + MASK_BLOCK - 1) / MASK_BLOCK);
    char *blocks = malloc((size_t)nbq * nbk);
    void *raw = malloc(n * attn_dtype_size(v->mask_dtype));
    d->mask = malloc(n * sizeof(float));
    attn_status st = ATTN_ERROR_OUT_OF_MEMORY;
    *what = "host allocation";
    if (!blocks || !raw || !d->mask) goto done;
    uint64_t rng = TOOL_SEED;
    for (size_t i = 0; i < (size_t)nbq * nbk; i++) blocks[i] = attn_rand_uniform(&rng, 0, 1) < 0.5f;
    for (size_t r = 0; r < sq; r++)
        for (size_t c = 0; c < skv; c++)
            d->mask[r * skv + c] = mask_value(v->mask, (int)r, (int)c, (int)sq, (int)skv, blocks,
                                              nbk);
    *what = "attn_convert_from_f32";
    if ((st = attn_convert_from_f32(v->mask_dtype, d->mask, raw, n)) != ATTN_SUCCESS) goto done;
    cl_int err;
    *what = "clCreateBuffer";
    d->mask_buffer = clCreateBuffer(attn_context_cl_context(ctx),
                                    CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                    n * attn_dtype_size(v->mask_dtype), raw, &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "attn-bench: clCreateBuffer of the %zu x %zu mask failed: %d\n", sq, skv,
                (int)err);
        d->mask_buffer = NULL;
        goto done;
    }
    /* the bench never changes a mask's contents: version 1 promises so */
    const attn_mask m = {d->mask_buffer, d->mask, v->mask_dtype, 0, 0, 0, skv, 1,
                         v->mask_fresh ? 0UL : 1UL};
    p->mask = m;
    st = ATTN_SUCCESS;
done:
    free(blocks);
    free(raw);
    return st;
}

attn_status bench_variant_apply(attn_context *ctx, const bench_variant *v, attn_problem *p,
                                bench_variant_data *d, const char **what)
{
    memset(d, 0, sizeof *d);
    p->use_window = v->use_window;
    p->window_left = v->window_left;
    p->window_right = v->window_right;
    p->softcap = v->softcap;
    p->alibi_max_bias = v->alibi_max_bias;
    *what = "host allocation";
    if (v->sinks) {
        if (!(d->sinks = malloc((size_t)p->q_heads * sizeof(float))))
            return ATTN_ERROR_OUT_OF_MEMORY;
        /* per-head: -1 .. 0.75, about the logits' size with inputs in [-1, 1) */
        for (int h = 0; h < p->q_heads; h++)
            d->sinks[h] = v->sinks == BENCH_SINKS_VALUE ? v->sink_value : 0.25f * (h % 8) - 1.0f;
        p->sinks = d->sinks;
    }
    if (v->npacked) {
        const int B = v->npacked;
        if (!(d->lens = calloc(4 * (size_t)B, sizeof(int)))) return ATTN_ERROR_OUT_OF_MEMORY;
        for (int b = 0, at = 0; b < B; at += v->packed[b++]) {
            d->lens[b] = d->lens[2 * B + b] = v->padded ? 0 : at; /* cu_seqlens[b] */
            d->lens[B + b] = d->lens[3 * B + b] = v->packed[b];
        }
        const attn_lengths l = {d->lens, d->lens + B, d->lens + 2 * B, d->lens + 3 * B};
        d->lengths = l;
        d->has_lengths = 1;
    }
    return v->mask ? make_mask(ctx, v, p, d, what) : ATTN_SUCCESS;
}

void bench_variant_data_free(bench_variant_data *d)
{
    if (d->mask_buffer) clReleaseMemObject(d->mask_buffer);
    free(d->sinks), free(d->mask), free(d->lens);
    memset(d, 0, sizeof *d);
}

double bench_variant_flops(const attn_problem *p, const attn_lengths *L)
{
    if (!p->mask.host) return attn_problem_flops(p, L);
    const attn_mask *m = &p->mask;
    double pairs = 0;
    for (int b = 0; b < p->batch; b++) {
        const int qs = L && L->q_start ? L->q_start[b] : 0;
        const int ks = L && L->kv_start ? L->kv_start[b] : 0;
        const int ql = L && L->q_len ? L->q_len[b] : p->q_len;
        const int kl = L && L->kv_len ? L->kv_len[b] : p->kv_len;
        for (long i = 0; i < ql; i++) {
            const long pos = i + kl - ql, lo = p->use_window && p->window_left >= 0
                                                  ? pos - p->window_left : 0;
            long hi = p->causal ? pos : kl - 1;
            if (p->use_window && p->window_right >= 0 && pos + p->window_right < hi)
                hi = pos + p->window_right;
            if (hi > kl - 1) hi = kl - 1;
            const float *row = m->host + m->offset + (size_t)b * m->stride_batch +
                               (size_t)(qs + i) * m->stride_q;
            for (long j = lo < 0 ? 0 : lo; j <= hi; j++)
                pairs += row[(size_t)(ks + j) * m->stride_kv] > -1e30f; /* not -inf */
        }
    }
    /* the bench's masks broadcast over heads (stride_head 0) */
    return 4.0 * p->head_dim * pairs * p->q_heads;
}
