/* mma_check.c -- attn_mma_check: runs cl/mma_check.cl (one warp, every
 * operation of cl/mma_ops.cl on known operands, the 16-bit part or the
 * tf32 part) and compares each result with the host's. With ptx, the
 * NVIDIA build's inline PTX: the probe that
 * the tensor-core instructions build on this device and that their
 * fragment layouts are the ones the mma family assumes, before the family
 * is trusted; without, the emulation the family runs elsewhere. Operands
 * are small multiples of 1/4 and 1/2, so every product and sum is exact in
 * fp32 and the comparison is exact. */
#include "kernels/mma_check.h"

#include "attention/convert.h"
#include "core/context.h"
#include "core/errors.h"
#include "core/launch.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CHECK_WORDS 608 /* MMA_CHECK_WORDS in cl/mma_check.cl */

typedef struct check_inputs {
    uint16_t a16[2][256], b16[2][128]; /* f16 then bf16: A 16x16, B 16x8 (k x n) */
    float af[128], bf[64];             /* tf32: A 16x8, B 8x8 */
    float pk[64];                      /* values to pack and round */
} check_inputs;

static float a_val(int r, int k) { return (float)((r * 16 + k) * 7 % 13 - 6) * 0.25f; }
static float b_val(int k, int n) { return (float)((k * 8 + n) * 5 % 11 - 5) * 0.5f; }
static float c_val(int r, int n) { return 0.25f * (float)(8 * r + n); }

static void make_inputs(check_inputs *in)
{
    for (int r = 0; r < 16; r++)
        for (int k = 0; k < 16; k++) {
            in->a16[0][r * 16 + k] = attn_f16_bits(a_val(r, k));
            in->a16[1][r * 16 + k] = attn_bf16_bits(a_val(r, k));
        }
    for (int k = 0; k < 16; k++)
        for (int n = 0; n < 8; n++) {
            in->b16[0][k * 8 + n] = attn_f16_bits(b_val(k, n));
            in->b16[1][k * 8 + n] = attn_bf16_bits(b_val(k, n));
        }
    for (int r = 0; r < 16; r++)
        for (int k = 0; k < 8; k++) in->af[r * 8 + k] = a_val(r, k + 3);
    for (int k = 0; k < 8; k++)
        for (int n = 0; n < 8; n++) in->bf[k * 8 + n] = b_val(k + 5, n);
    /* rounding's edge cases (ties either way, the largest f16, overflow,
     * subnormals, infinity; bf16's own ties, down and up to even: f16
     * holds them exactly; f16's subnormal ties, up and down to even), then
     * values over many magnitudes */
    static const float edge[] = {1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 1.0f + 0x1p-8f + 0x1p-9f,
                                 -(1.0f + 0x3p-9f), 65504.0f, 65520.0f, 65519.0f, 0x1p-15f,
                                 1e-7f, -2.5e-8f, 6.1e-5f, INFINITY, -INFINITY, 0.0f, -0.0f,
                                 1.0f + 0x1p-11f + 0x1p-20f, 1.0f + 0x1p-8f, -(1.0f + 0x3p-8f),
                                 0x3p-25f, -0x5p-25f};
    const int ne = (int)(sizeof edge / sizeof edge[0]);
    for (int i = 0; i < 64; i++)
        in->pk[i] = i < ne ? edge[i] : ldexpf((float)((i * 2654435761u) % 100003u) / 100003.0f + 0.5f,
                                              i % 40 - 20) * (i & 1 ? -1.0f : 1.0f);
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* tf32 of x: to nearest, ties away (cvt.rna.tf32.f32); inf unchanged */
static uint32_t tf32_bits(float x)
{
    const uint32_t u = bits_of(x);
    return (u & 0x7f800000u) == 0x7f800000u ? u : (u + 0x1000u) & 0xffffe000u;
}

/* The expected words (cl/mma_check.cl's out layout). */
static void expected(const check_inputs *in, uint32_t *want)
{
    for (int kind = 0; kind < 3; kind++)
        for (int r = 0; r < 16; r++)
            for (int n = 0; n < 8; n++) {
                float s = c_val(r, n);
                for (int k = 0; k < (kind < 2 ? 16 : 8); k++)
                    s += kind < 2 ? a_val(r, k) * b_val(k, n) : in->af[r * 8 + k] * in->bf[k * 8 + n];
                want[kind * 128 + r * 8 + n] = bits_of(s);
            }
    static const int masks[3] = {1, 2, 5};
    for (int m = 0; m < 3; m++)
        for (int l = 0; l < 32; l++) want[384 + m * 32 + l] = bits_of(3.0f * (float)(l ^ masks[m]) + 1.0f);
    for (int l = 0; l < 32; l++) {
        want[480 + l] = attn_f16_bits(in->pk[2 * l]) | (uint32_t)attn_f16_bits(in->pk[2 * l + 1]) << 16;
        want[512 + l] = attn_bf16_bits(in->pk[2 * l]) | (uint32_t)attn_bf16_bits(in->pk[2 * l + 1]) << 16;
    }
    for (int i = 0; i < 64; i++) want[544 + i] = tf32_bits(in->pk[i]);
}

/* Names the section of word w of out. */
static const char *section(int w)
{
    return w < 128   ? "mma_f16 (m16n8k16)"
           : w < 256 ? "mma_bf16 (m16n8k16)"
           : w < 384 ? "mma_tf32 (m16n8k8)"
           : w < 480 ? "mma_xor"
           : w < 512 ? "mma_pack_f16"
           : w < 544 ? "mma_pack_bf16"
                     : "mma_tf32_of";
}

/* Whether word w of out belongs to the tf32 part (else the 16-bit one). */
static int tf32_word(int w) { return (w >= 256 && w < 384) || w >= 544; }

attn_status attn_mma_check(attn_context *ctx, int ptx, int part, int *ok, char *why,
                           size_t whysize)
{
    *ok = 0;
    if (whysize) why[0] = 0;
    check_inputs in;
    make_inputs(&in);
    uint32_t want[CHECK_WORDS], got[CHECK_WORDS];
    expected(&in, want);

    const char *sources[] = {"mma_ops.cl", "mma_check.cl"};
    cl_kernel kernel = NULL;
    const int tf32 = part == ATTN_MMA_CHECK_TF32;
    char opts[96];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DMMA_CHECK_TF32=%d%s", tf32,
             ptx ? " -DMMA_PTX=1" : "");
    attn_status st = attn_kernel_build(ctx, sources, 2, opts, "attn_mma_check", &kernel);
    if (st != ATTN_SUCCESS) return st;
    struct { const void *host; size_t bytes; } bufs[] = {
        {in.a16, sizeof in.a16}, {in.b16, sizeof in.b16}, {in.af, sizeof in.af},
        {in.bf, sizeof in.bf},   {in.pk, sizeof in.pk},   {NULL, sizeof got}};
    enum { NBUF = sizeof bufs / sizeof bufs[0] };
    cl_mem mem[NBUF] = {0};
    for (int i = 0; i < NBUF && st == ATTN_SUCCESS; i++) {
        cl_int err;
        mem[i] = clCreateBuffer(ctx->cl_ctx, bufs[i].host ? CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR
                                                          : CL_MEM_WRITE_ONLY,
                                bufs[i].bytes, (void *)bufs[i].host, &err);
        if (err != CL_SUCCESS) st = attn_fail_cl(ctx, err, "clCreateBuffer (mma check)");
    }
    if (st == ATTN_SUCCESS) {
        const attn_karg args[] = {ATTN_KARG(mem[0]), ATTN_KARG(mem[1]), ATTN_KARG(mem[2]),
                                  ATTN_KARG(mem[3]), ATTN_KARG(mem[4]), ATTN_KARG(mem[5])};
        const size_t global = 32, local = 32;
        st = attn_kernel_run(ctx, kernel, args, ATTN_NARGS(args), 1, &global, &local);
    }
    if (st == ATTN_SUCCESS) st = attn_queue_order(ctx); /* an application's out-of-order queue */
    if (st == ATTN_SUCCESS) {
        cl_int err = clEnqueueReadBuffer(ctx->queue, mem[NBUF - 1], CL_TRUE, 0, sizeof got, got, 0,
                                         NULL, NULL);
        if (err != CL_SUCCESS) st = attn_fail_cl(ctx, err, "clEnqueueReadBuffer (mma check)");
    }
    for (int i = 0; i < NBUF; i++)
        if (mem[i]) clReleaseMemObject(mem[i]);
    clReleaseKernel(kernel);
    if (st != ATTN_SUCCESS) return st;

    int bad = 0, first = -1, words = 0;
    for (int w = 0; w < CHECK_WORDS; w++) {
        if (tf32_word(w) != tf32) continue; /* the other part's: not written */
        words++;
        /* the products' sums: an exact cancellation's zero may come with
         * either sign (bits compared otherwise) */
        const int zeros = w < 384 && ((got[w] | want[w]) & 0x7fffffffu) == 0;
        if (got[w] != want[w] && !zeros) {
            bad++;
            if (first < 0) first = w;
        }
    }
    *ok = bad == 0;
    if (bad && whysize)
        snprintf(why, whysize, "%d of %d results differ; the first in %s, word %d: 0x%08x, "
                 "expected 0x%08x", bad, words, section(first), first, (unsigned)got[first],
                 (unsigned)want[first]);
    return ATTN_SUCCESS;
}
