/* test_rounding.c -- the device's f16 and bf16 stores, bit for bit against
 * the host's attn_convert_from_f32 (round to nearest, ties to even), at
 * values exactly halfway between two storage values, where a wrong rounding
 * mode differs by one step: through attn_device_from_f32 (cl/convert.cl) and
 * through the attention kernels' output (attn_forward of each family and
 * attn_decode of each with a decode kernel), whose f16/bf16 tolerances are
 * wider than one step and so cannot see the rounding. NaNs whose low bits
 * are set stay NaN. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "blas/blas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const families[] = {"vector", "tiled", "flash", "mma"};
#define NFAM 4

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t host_store(attn_dtype t, float x)
{
    uint16_t h;
    CU_ASSERT_EQUAL(attn_convert_from_f32(t, &x, &h, 1), ATTN_SUCCESS);
    return h;
}

static float widen(attn_dtype t, uint16_t h)
{
    float x;
    CU_ASSERT_EQUAL(attn_convert_to_f32(t, &h, &x, 1), ATTN_SUCCESS);
    return x;
}

/* n adjacent pairs (lo[i], lo[i] + 1 step) of finite storage values of one
 * sign: both mantissa parities, both signs, f16 subnormals, the largest
 * finite values, then seeded patterns. For the kernels (kernel != 0), bf16
 * pairs stay within 2^-100..2^100: their f32 sum must not overflow and no
 * value may be an f32 subnormal, which a device may flush. */
static void adjacent_pairs(attn_dtype t, uint16_t *lo, size_t n, uint64_t seed, int kernel)
{
    const uint16_t max_lo = t == ATTN_F16 ? 0x7bfe : 0x7f7e; /* lo + 1 stays finite */
    static const uint16_t f16_fixed[] = {0x0000, 0x0001, 0x0002, 0x0003, 0x03ff, 0x0400,
                                         0x3c00, 0x3c01, 0x3bff, 0x7bfd, 0x7bfe, 0x4000};
    static const uint16_t bf16_fixed[] = {0x0000, 0x0001, 0x007f, 0x0080, 0x3f80, 0x3f81,
                                          0x3f7f, 0x7f7d, 0x7f7e, 0x4000, 0x0101, 0x0100};
    const uint16_t *fixed = t == ATTN_F16 ? f16_fixed : bf16_fixed;
    harness_rng r;
    harness_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        uint16_t h = i < 12 ? fixed[i] : (uint16_t)(harness_rng_next(&r) % (max_lo + 1u));
        if (i >= 12 && i % 4 == 0) h |= 1; /* plenty of odd ones: ties that round up */
        if (h > max_lo) h = max_lo;
        if (kernel && t == ATTN_BF16 && (h < 0x0d80 || h > 0x7180))
            h = (uint16_t)(0x0d80 + h % 0x6400); /* 0x0d80 is even: the parity stays */
        lo[i] = (i / 2) % 2 ? (uint16_t)(h | 0x8000u) : h; /* half the pairs negative */
    }
}

/* The exact midpoint of the pair (lo, lo + 1 step): one more significand
 * bit, set. (For f16 also the f32 mean, exact: a sum of two 11-bit
 * significands.) */
static float midpoint(attn_dtype t, uint16_t lo)
{
    if (t == ATTN_BF16) return bits_f32((uint32_t)lo << 16 | 0x8000u);
    return (widen(t, lo) + widen(t, (uint16_t)(lo + 1))) / 2.0f;
}

/* ---- the host converter at ties, worked out independently ---- */

static void test_host_ties(void)
{
    const attn_dtype ts[] = {ATTN_F16, ATTN_BF16};
    enum { N = 256 };
    uint16_t lo[N];
    for (int ti = 0; ti < 2; ti++) {
        adjacent_pairs(ts[ti], lo, N, 7100 + ti, 0);
        for (int i = 0; i < N; i++) {
            const float mid = midpoint(ts[ti], lo[i]);
            const uint16_t even = lo[i] & 1 ? (uint16_t)(lo[i] + 1) : lo[i];
            const uint16_t got = host_store(ts[ti], mid);
            if (got != even) {
                printf("\n  %s: %.9g (halfway above 0x%04x) became 0x%04x, not 0x%04x\n",
                       attn_dtype_name(ts[ti]), (double)mid, lo[i], got, even);
                CU_FAIL("host tie not to even");
                break;
            }
        }
    }
    /* f16's largest tie rounds to infinity; just below it, to the largest half */
    CU_ASSERT_EQUAL(host_store(ATTN_F16, 65520.0f), 0x7c00);
    CU_ASSERT_EQUAL(host_store(ATTN_F16, 65519.996f), 0x7bff);
    /* bf16: the tie above 1 + 2^-7 rounds up to even, the one above 1 stays */
    CU_ASSERT_EQUAL(host_store(ATTN_BF16, bits_f32(0x3f818000u)), 0x3f82);
    CU_ASSERT_EQUAL(host_store(ATTN_BF16, bits_f32(0x3f808000u)), 0x3f80);
}

/* Counts elements whose bits differ, printing the first. */
/* Whether h is a NaN of type t (f16 or bf16). */
static int nan_bits(attn_dtype t, uint16_t h)
{
    const uint16_t e = t == ATTN_F16 ? 0x7c00u : 0x7f80u;
    return (h & e) == e && (h & (uint16_t)~(e | 0x8000u)) != 0;
}

/* got against want bit for bit, but any NaN for a NaN (a device may give
 * its own payload). */
static int differ_bits(const char *what, attn_dtype t, const uint16_t *got, const uint16_t *want,
                       const float *from, size_t n)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i] && !(nan_bits(t, got[i]) && nan_bits(t, want[i])) && bad++ == 0)
            printf("\n  %s, %s: [%zu] %.9g stored as 0x%04x; the host rounds it to 0x%04x\n",
                   what, attn_dtype_name(t), i, (double)from[i], got[i], want[i]);
    return bad;
}

/* The storage side of the host converters at an odd address (the data of
 * a .npy whose header has an odd length): the same values as at an aligned
 * one. Under the sanitizer build, a uint16_t read there was UBSan's
 * misaligned load. */
static void test_host_unaligned(void)
{
    enum { N = 9 };
    const float x[N] = {0.f, -1.5f, 3.140625f, 65504.f, 1e-7f, -2.f, 0.333f, 1e30f, -0.f};
    const attn_dtype types[] = {ATTN_F16, ATTN_BF16};
    for (int ti = 0; ti < 2; ti++) {
        const attn_dtype t = types[ti];
        uint16_t aligned[N];
        unsigned char raw[2 * N + 1];
        float back_aligned[N], back_odd[N];
        CU_ASSERT_EQUAL(attn_convert_from_f32(t, x, aligned, N), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(attn_convert_from_f32(t, x, raw + 1, N), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(memcmp(raw + 1, aligned, sizeof aligned), 0);
        CU_ASSERT_EQUAL(attn_convert_to_f32(t, aligned, back_aligned, N), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(attn_convert_to_f32(t, raw + 1, back_odd, N), ATTN_SUCCESS);
        CU_ASSERT_EQUAL(memcmp(back_odd, back_aligned, sizeof back_odd), 0);
        CU_ASSERT_EQUAL(back_odd[2], 3.140625f); /* exact in both types */
    }
}

/* ---- attn_device_from_f32 (cl/convert.cl) ---- */

static void test_device_convert(void)
{
    attn_context *ctx = harness_context();
    cl_context cl = attn_context_cl_context(ctx);
    cl_command_queue queue = attn_context_queue(ctx);
    const attn_dtype ts[] = {ATTN_F16, ATTN_BF16};
    enum { PAIRS = 512, N = 3 * PAIRS + 7 };
    for (int ti = 0; ti < 2; ti++) {
        const attn_dtype t = ts[ti];
        uint16_t lo[PAIRS], want[N], got[N];
        float x[N];
        adjacent_pairs(t, lo, PAIRS, 7200 + ti, 0);
        /* each tie, and the floats just below and above it */
        for (int i = 0; i < PAIRS; i++) {
            const float mid = midpoint(t, lo[i]);
            uint32_t u;
            memcpy(&u, &mid, sizeof u);
            x[3 * i] = mid;
            x[3 * i + 1] = bits_f32(u - 1);
            x[3 * i + 2] = bits_f32(u + 1);
        }
        x[N - 4] = 65520.0f, x[N - 3] = -65520.0f, x[N - 2] = 1e-8f, x[N - 1] = -3e-8f;
        /* NaNs whose low bits are set: rounded as numbers they turn to 0 or inf */
        x[N - 7] = bits_f32(0x7fffffffu), x[N - 6] = bits_f32(0xffffffffu);
        x[N - 5] = bits_f32(0x7f800001u);
        for (int i = 0; i < N; i++) want[i] = host_store(t, x[i]);

        cl_int err;
        cl_mem src = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof x, x, &err);
        CU_ASSERT_FATAL(err == CL_SUCCESS);
        cl_mem dst = clCreateBuffer(cl, CL_MEM_READ_WRITE, sizeof got + 8, NULL, &err);
        CU_ASSERT_FATAL(err == CL_SUCCESS);
        /* at an element offset, as the CLBlast paths narrow into a tensor */
        attn_status st = attn_device_from_f32(ctx, t, src, dst, 4, N);
        if (st != ATTN_SUCCESS) printf("\n  attn_device_from_f32: %s\n", attn_last_error(ctx));
        CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(clEnqueueReadBuffer(queue, dst, CL_TRUE, 8, sizeof got, got, 0,
                                                  NULL, NULL), CL_SUCCESS);
        CU_ASSERT_EQUAL(differ_bits("attn_device_from_f32", t, got, want, x, N), 0);
        clReleaseMemObject(src);
        clReleaseMemObject(dst);
    }
}

/* ---- the attention kernels' output store ----
 * Q = 0 makes every logit 0, so each query row weighs its two visible keys
 * equally: O = (V[0] + V[1]) / 2 exactly (weights exp2(0) = 1, sum 2), and
 * with V[0], V[1] adjacent storage values every element of O is a tie. */

enum { H = 8, DIM = 64 };

/* V [1, H, 2, DIM] holding the pairs, and the expected O [1, H, 1, DIM]
 * as floats (the host's rounding of each midpoint, widened). */
static void tie_problem(attn_dtype t, uint64_t seed, float *v, float *mid, float *want)
{
    uint16_t lo[H * DIM];
    adjacent_pairs(t, lo, H * DIM, seed, 1);
    for (int h = 0; h < H; h++)
        for (int d = 0; d < DIM; d++) {
            const int i = h * DIM + d;
            const int swap = (i / 3) % 2; /* the upper value first, sometimes */
            v[((size_t)h * 2 + swap) * DIM + d] = widen(t, lo[i]);
            v[((size_t)h * 2 + !swap) * DIM + d] = widen(t, (uint16_t)(lo[i] + 1));
            mid[i] = midpoint(t, lo[i]);
            want[i] = widen(t, host_store(t, mid[i]));
        }
}

/* Bitwise comparison of widened outputs (the widening is one to one). */
static int differ_floats(const char *what, attn_dtype t, const float *got, const float *want,
                         const float *mid, size_t n)
{
    uint16_t g[H * DIM], w[H * DIM];
    attn_convert_from_f32(t, got, g, n);
    attn_convert_from_f32(t, want, w, n);
    return differ_bits(what, t, g, w, mid, n);
}

static void test_forward_ties(void)
{
    attn_context *ctx = harness_context();
    const attn_dtype ts[] = {ATTN_F16, ATTN_BF16};
    static float q[H * DIM], k[H * 2 * DIM], v[H * 2 * DIM], want[H * DIM], got[H * DIM], mid[H * DIM];
    harness_fill_uniform(k, H * 2 * DIM, 7300, -1.0f, 1.0f); /* any: Q = 0 */
    for (int ti = 0; ti < 2; ti++)
        for (int f = 0; f < NFAM; f++) {
            const attn_dtype t = ts[ti];
            tie_problem(t, 7310 + ti, v, mid, want);
            harness_round(t, k, H * 2 * DIM);
            attn_tensor tq, tk, tv, to;
            cl_mem mq = harness_upload(ctx, t, q, 1, H, 1, DIM, NULL, &tq);
            cl_mem mk = harness_upload(ctx, t, k, 1, H, 2, DIM, NULL, &tk);
            cl_mem mv = harness_upload(ctx, t, v, 1, H, 2, DIM, NULL, &tv);
            cl_mem mo = harness_alloc(ctx, t, 1, H, 1, DIM, NULL, &to);
            CU_ASSERT_FATAL(mq && mk && mv && mo);
            const attn_problem p = {.batch = 1, .q_heads = H, .kv_heads = H, .head_dim = DIM,
                                    .q_len = 1, .kv_len = 2, .dtype = t, .causal = 0,
                                    .scale = 0.0f};
            char params[32], what[64];
            snprintf(params, sizeof params, "family=%s", families[f]);
            CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, params), ATTN_SUCCESS);
            attn_status st = attn_forward(ctx, &p, &tq, &tk, &tv, &to, NULL, NULL, NULL);
            attn_context_set_params(ctx, NULL);
            if (st != ATTN_SUCCESS) printf("\n  attn_forward: %s\n", attn_last_error(ctx));
            CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
            CU_ASSERT_EQUAL_FATAL(harness_download(ctx, t, &to, 1, H, 1, DIM, got), 0);
            snprintf(what, sizeof what, "attn_forward (%s) output", families[f]);
            CU_ASSERT_EQUAL(differ_floats(what, t, got, want, mid, H * DIM), 0);
            clReleaseMemObject(mq), clReleaseMemObject(mk), clReleaseMemObject(mv);
            clReleaseMemObject(mo);
        }
}

static void test_decode_ties(void)
{
    attn_context *ctx = harness_context();
    const attn_dtype ts[] = {ATTN_F16, ATTN_BF16};
    static float q[H * DIM], k[H * 2 * DIM], v[H * 2 * DIM], want[H * DIM], got[H * DIM], mid[H * DIM];
    harness_fill_uniform(k, H * 2 * DIM, 7400, -1.0f, 1.0f);
    for (int ti = 0; ti < 2; ti++)
        for (int f = 0; f < NFAM; f++) {
            if (!strcmp(families[f], "flash")) continue; /* no decode kernel */
            const attn_dtype t = ts[ti];
            tie_problem(t, 7410 + ti, v, mid, want);
            harness_round(t, k, H * 2 * DIM);
            attn_kv_cache *cache = NULL;
            CU_ASSERT_EQUAL_FATAL(attn_kv_cache_create(ctx, 1, H, DIM, 8, t, &cache),
                                  ATTN_SUCCESS);
            attn_tensor tq, tk, tv, to;
            cl_mem mq = harness_upload(ctx, t, q, 1, H, 1, DIM, NULL, &tq);
            cl_mem mk = harness_upload(ctx, t, k, 1, H, 2, DIM, NULL, &tk);
            cl_mem mv = harness_upload(ctx, t, v, 1, H, 2, DIM, NULL, &tv);
            cl_mem mo = harness_alloc(ctx, t, 1, H, 1, DIM, NULL, &to);
            CU_ASSERT_FATAL(mq && mk && mv && mo);
            CU_ASSERT_EQUAL_FATAL(attn_kv_cache_append(cache, &tk, &tv, 2, NULL, NULL),
                                  ATTN_SUCCESS);
            const attn_problem p = {.batch = 1, .q_heads = H, .kv_heads = H, .head_dim = DIM,
                                    .q_len = 1, .kv_len = 2, .dtype = t, .causal = 0,
                                    .scale = 0.0f};
            char params[32], what[64];
            snprintf(params, sizeof params, "family=%s", families[f]);
            CU_ASSERT_EQUAL_FATAL(attn_context_set_params(ctx, params), ATTN_SUCCESS);
            attn_status st = attn_decode(ctx, cache, &p, &tq, &to, NULL, NULL, NULL);
            attn_context_set_params(ctx, NULL);
            if (st != ATTN_SUCCESS) printf("\n  attn_decode: %s\n", attn_last_error(ctx));
            CU_ASSERT_EQUAL_FATAL(st, ATTN_SUCCESS);
            CU_ASSERT_EQUAL_FATAL(harness_download(ctx, t, &to, 1, H, 1, DIM, got), 0);
            snprintf(what, sizeof what, "attn_decode (%s) output", families[f]);
            CU_ASSERT_EQUAL(differ_floats(what, t, got, want, mid, H * DIM), 0);
            clReleaseMemObject(mq), clReleaseMemObject(mk), clReleaseMemObject(mv);
            clReleaseMemObject(mo);
            attn_kv_cache_release(cache);
        }
}

static const harness_test tests[] = {
    HARNESS_TEST(test_host_ties),
    HARNESS_TEST(test_host_unaligned),
    HARNESS_TEST(test_device_convert),
    HARNESS_TEST(test_forward_ties),
    HARNESS_TEST(test_decode_ties),
    HARNESS_END
};

static void register_tests(void) { harness_add_suite("rounding", tests); }

int main(void) { return harness_run("test_rounding", register_tests); }
