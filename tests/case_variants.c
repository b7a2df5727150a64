/* case_variants.c -- the data a case's attention variants need (cases.h):
 * per-head sinks from the case's seed, the additive mask made by kind in a
 * strided (or broadcast) layout with NaN gaps, their device copies, and
 * attaching them to an attn_problem for the call or for the reference. */
#define _POSIX_C_SOURCE 200809L
#include "cases.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The mask's layout: an offset and padded rows, so a kernel that ignores
 * either reads the NaN gaps. */
enum { MASK_OFFSET = 3, MASK_ROW_PAD = 2 };

static cl_mem device_copy(attn_context *ctx, attn_dtype t, const float *x, size_t n)
{
    const size_t bytes = n * attn_dtype_size(t);
    void *raw = malloc(bytes ? bytes : 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(raw);
    CU_ASSERT_EQUAL_FATAL(attn_convert_from_f32(t, x, raw, n), ATTN_SUCCESS);
    cl_int err;
    cl_mem m = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                              bytes, raw, &err);
    free(raw);
    if (err != CL_SUCCESS) printf("\n  harness: clCreateBuffer(%zu bytes) failed: %d\n", bytes, (int)err);
    CU_ASSERT_FATAL(err == CL_SUCCESS);
    return m;
}

/* The entry's content region (the case's lengths; NULL arrays = full). */
static void region(const harness_case *c, int b, int *qs, int *ql, int *ks, int *kl)
{
    *qs = c->q_start ? c->q_start[b] : 0, *ql = c->q_len ? c->q_len[b] : c->Sq;
    *ks = c->kv_start ? c->kv_start[b] : 0, *kl = c->kv_len ? c->kv_len[b] : c->Skv;
}

/* The mask's element count (offset and gaps included) after setting m's strides. */
static size_t mask_layout(const harness_case *c, attn_mask *m)
{
    const unsigned bc = c->mask_bcast;
    const size_t rows = bc & HARNESS_BCAST_Q ? 1 : (size_t)c->Sq;
    const size_t heads = bc & HARNESS_BCAST_HEAD ? 1 : (size_t)c->Hq;
    const size_t batch = bc & HARNESS_BCAST_BATCH ? 1 : (size_t)c->B;
    const size_t row = (size_t)c->Skv + MASK_ROW_PAD;
    m->dtype = c->mask_dtype;
    m->offset = MASK_OFFSET;
    m->stride_kv = 1;
    m->stride_q = bc & HARNESS_BCAST_Q ? 0 : row;
    m->stride_head = bc & HARNESS_BCAST_HEAD ? 0 : rows * row;
    m->stride_batch = bc & HARNESS_BCAST_BATCH ? 0 : heads * rows * row;
    return MASK_OFFSET + batch * heads * rows * row;
}

static size_t mask_at(const attn_mask *m, int b, int h, int r, int col)
{
    return m->offset + (size_t)b * m->stride_batch + (size_t)h * m->stride_head +
           (size_t)r * m->stride_q + (size_t)col;
}

/* The host mask of c: values by kind in every element the layout reaches
 * (random: some holes NaN), NaN in the gaps (and, when c poisons pads, in
 * elements no entry's content reaches). */
static float *make_mask(const harness_case *c, attn_mask *m)
{
    const size_t n = mask_layout(c, m);
    float *x = harness_xalloc(n);
    char *reached = calloc(n, 1), *content = calloc(n, 1);
    CU_ASSERT_FATAL(reached && content);
    harness_rng rng;
    harness_rng_seed(&rng, harness_seed(c->seed) + 4);
    const float hole = c->mask == HARNESS_MASK_FINFO ? -FLT_MAX : -INFINITY;
    for (size_t i = 0; i < n; i++) {
        x[i] = NAN;
        if (c->mask == HARNESS_MASK_RANDOM || c->mask == HARNESS_MASK_FINFO) {
            /* a tenth of a random mask's holes NaN, which hides a key as
             * -inf does (core.h): the gaps' NaN are never read */
            const double u = harness_rng_uniform(&rng);
            x[i] = u < 0.03 && c->mask == HARNESS_MASK_RANDOM ? NAN
                   : u < 0.3                                 ? hole
                                                             : (float)harness_rng_normal(&rng);
        }
    }
    for (int b = 0; b < c->B; b++) {
        int qs, ql, ks, kl;
        region(c, b, &qs, &ql, &ks, &kl);
        for (int h = 0; h < c->Hq; h++)
            for (int r = 0; r < c->Sq; r++)
                for (int col = 0; col < c->Skv; col++) {
                    const size_t at = mask_at(m, b, h, r, col);
                    const int i = r - qs, j = col - ks;
                    reached[at] = 1;
                    if (i < 0 || i >= ql || j < 0 || j >= kl) continue;
                    content[at] = 1;
                    if (c->mask == HARNESS_MASK_CAUSAL)
                        x[at] = j > i + kl - ql ? -INFINITY : 0.0f;
                }
    }
    for (size_t i = 0; i < n; i++) {
        if (!reached[i] || (c->poison_pads && !content[i])) x[i] = NAN;
        else if (c->mask == HARNESS_MASK_ZEROS) x[i] = 0.0f;
        else if ((c->mask == HARNESS_MASK_CAUSAL) && !content[i]) x[i] = 0.0f;
    }
    /* every fifth query row hidden entirely: rows with no visible key */
    if (c->mask == HARNESS_MASK_RANDOM || c->mask == HARNESS_MASK_FINFO)
        for (int r = 2; r < c->Sq && !(c->mask_bcast & HARNESS_BCAST_Q); r += 5)
            for (int b = 0; b < c->B; b++)
                for (int h = 0; h < c->Hq; h++)
                    for (int col = 0; col < c->Skv; col++)
                        if (!isnan(x[mask_at(m, b, h, r, col)])) x[mask_at(m, b, h, r, col)] = hole;
    harness_round(c->mask_dtype, x, n);
    free(reached);
    free(content);
    return x;
}

void harness_variant_data_make(const harness_case *c, attn_context *ctx, harness_variant_data *vd)
{
    memset(vd, 0, sizeof *vd);
    if (c->sinks != HARNESS_SINKS_NONE) {
        vd->sinks = harness_xalloc((size_t)c->Hq);
        if (c->sink_values) memcpy(vd->sinks, c->sink_values, (size_t)c->Hq * sizeof(float));
        else /* either sign: gpt-oss's are mostly negative */
            harness_fill_uniform(vd->sinks, (size_t)c->Hq, harness_seed(c->seed) + 3, -4.0f, 4.0f);
        if (ctx && c->sinks == HARNESS_SINKS_BUFFER)
            vd->sinks_buffer = device_copy(ctx, ATTN_F32, vd->sinks, (size_t)c->Hq);
    }
    if (c->mask != HARNESS_MASK_NONE) {
        vd->mask_host = make_mask(c, &vd->mask);
        vd->mask.host = vd->mask_host;
        if (ctx) {
            attn_mask probe;
            vd->mask_buffer = device_copy(ctx, c->mask_dtype, vd->mask_host, mask_layout(c, &probe));
            vd->mask.buffer = vd->mask_buffer;
        }
    }
}

void harness_variant_data_release(harness_variant_data *vd)
{
    if (vd->sinks_buffer) clReleaseMemObject(vd->sinks_buffer);
    if (vd->mask_buffer) clReleaseMemObject(vd->mask_buffer);
    free(vd->sinks);
    free(vd->mask_host);
    memset(vd, 0, sizeof *vd);
}

void harness_variant_attach(const harness_case *c, const harness_variant_data *vd, int device,
                            attn_problem *p)
{
    p->sinks = NULL, p->sinks_buffer = NULL;
    if (vd->sinks) {
        if (device && c->sinks == HARNESS_SINKS_BUFFER) p->sinks_buffer = vd->sinks_buffer;
        else p->sinks = vd->sinks;
    }
    p->mask = vd->mask;
    if (!device) p->mask.buffer = NULL;
    p->mask.host = vd->mask_host;
}
