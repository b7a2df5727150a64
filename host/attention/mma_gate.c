/* mma_gate.c -- the mma family is chosen only where it works (issue 12):
 * on an NVIDIA device of compute capability 8.0 or more, after its
 * compiler built the inline PTX, attn_mma_check found the 16-bit types'
 * fragment operations exact, and a small forward per 16-bit type on the
 * family matched the CPU reference (check mode's comparison, as the tuner
 * verifies a candidate), and so did small decodes through a KV cache on
 * its decode kernel (f16 contiguous, f16 and bf16 paged int8), and a
 * forward per 16-bit type and an f16 decode over rows of 4179 keys (a
 * compiler can get the long key loop wrong and the short one right:
 * Mesa's rusticl on llvmpipe does, measured, from about 250 keys at f32
 * D 64); f32 (3xTF32) after its own fragment check (the tf32
 * operations), two forwards (short; 4179 keys, folded) and three decodes
 * (paged; int8; contiguous, past 4096 keys a split, folded), so that an f32
 * path that fails leaves the 16-bit types on the tensor cores. That is
 * all at head dim 64; another head dim's programs are verified on its
 * first plan (usable_dim), a failure leaving only it off. Anything
 * else is one log line saying why and the device's other families, never
 * an error to the caller. */
#include "attention/mma_gate.h"

#include "attention/check.h"
#include "attention/convert.h"
#include "attention/decode.h"
#include "attention/forward.h"
#include "attention/plan.h"
#include "core/context.h"
#include "core/errors.h"
#include "core/log.h"
#include "kernels/mma_check.h"
#include "kernels/params.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cl_nv_device_attribute_query's CL_DEVICE_COMPUTE_CAPABILITY_{MAJOR,MINOR}_NV */
#define NV_CC_MAJOR 0x4000
#define NV_CC_MINOR 0x4001

int attn_nv_compute_capability(cl_device_id device)
{
    cl_uint major = 0, minor = 0;
    if (!attn_device_has_extension(device, "cl_nv_device_attribute_query") ||
        clGetDeviceInfo(device, NV_CC_MAJOR, sizeof major, &major, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(device, NV_CC_MINOR, sizeof minor, &minor, NULL) != CL_SUCCESS)
        return 0;
    return (int)(major * 10 + minor);
}

int attn_mma_ptx(const attn_context *ctx) { return !ctx->mma_assume && ctx->nv_cc >= ATTN_MMA_MIN_CC; }

void attn_mma_options(const attn_context *ctx, int family, char *opts, size_t size)
{
    const size_t n = strlen(opts);
    if (family == ATTN_FAMILY_MMA && attn_mma_ptx(ctx) && n < size)
        snprintf(opts + n, size - n, " -DMMA_PTX=1");
}

const char *attn_mma_why(const attn_context *ctx, attn_dtype dt)
{
    if (ctx->mma_state < 0) return ctx->mma_why;
    return dt == ATTN_F32 && ctx->mma_f32_state < 0 ? ctx->mma_f32_why : "";
}

void attn_mma_forget(attn_context *ctx)
{
    ctx->mma_state = ctx->mma_f32_state = 0;
    ctx->mma_why[0] = ctx->mma_f32_why[0] = 0;
    memset(ctx->mma_dim_state, 0, sizeof ctx->mma_dim_state);
    attn_plan_clear(ctx);
}

void attn_mma_assume(attn_context *ctx, int on)
{
    ctx->mma_assume = on != 0;
    attn_mma_forget(ctx);
}

/* The verification shape: GQA 2:1, fewer queries than keys (bottom-right
 * causal), lengths that are multiples of no tile, two key tiles or more. */
static const attn_problem verify_shape = {.batch = 1, .q_heads = 4, .kv_heads = 2,
                                          .head_dim = 64, .q_len = 37, .kv_len = 83,
                                          .dtype = ATTN_F16, .causal = 1};
/* The head dim the context's verdicts are decided at; each other one has
 * its own programs, verified on its first plan (usable_dim). */
#define D0 64
_Static_assert(sizeof((attn_context *)0)->mma_dim_state[0] == ATTN_MMA_DIM_SLOTS,
               "a verdict per head dim the family takes");

/* Element i of pattern seed, a hash of both: no run of keys repeats
 * another, so that a long row's result depends on every key and a loop
 * cut short shows (the pattern i * 2654435761 mod 2048 that was here
 * repeated every 32 keys at D 64: a row of 4179 keys read as its first
 * 1024 passed). */
static uint32_t pattern_hash(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    return x ^ (x >> 16);
}

/* A device buffer of n elements of dt holding a fixed pattern in [-1, 1)
 * (multiples of 2^-10: exact in f32 and f16, rounded in bf16; the
 * reference reads the inputs back from the device). */
static cl_mem pattern_buffer(attn_context *ctx, attn_dtype dt, size_t n, unsigned seed,
                             attn_status *st)
{
    const size_t size = dt == ATTN_F32 ? sizeof(float) : sizeof(uint16_t);
    unsigned char *h = malloc(n * size);
    if (!h) {
        *st = ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        const float x =
            (float)(pattern_hash((uint32_t)i ^ (seed << 24)) % 2048u) / 1024.0f - 1.0f;
        if (dt == ATTN_F32) {
            memcpy(h + i * size, &x, size);
        } else {
            const uint16_t b = dt == ATTN_F16 ? attn_f16_bits(x) : attn_bf16_bits(x);
            memcpy(h + i * size, &b, size);
        }
    }
    cl_int err;
    cl_mem m = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * size, h,
                              &err);
    free(h);
    if (err != CL_SUCCESS) *st = attn_fail_cl(ctx, err, "clCreateBuffer (mma verification)");
    return m;
}

/* The verification's Q, K, V and O (mem[0..3]) for p, patterns in p's
 * dtype, and their tensors (BHSD, contiguous). */
static attn_status verify_buffers(attn_context *ctx, const attn_problem *p, cl_mem *mem,
                                  attn_tensor *t)
{
    const size_t d = (size_t)p->head_dim;
    const size_t nq = (size_t)p->q_heads * p->q_len * d, nkv = (size_t)p->kv_heads * p->kv_len * d;
    attn_status st = ATTN_SUCCESS;
    for (int i = 0; i < 4 && st == ATTN_SUCCESS; i++) {
        const int kv = i == 1 || i == 2;
        mem[i] = pattern_buffer(ctx, p->dtype, kv ? nkv : nq, (unsigned)i + 1, &st);
        const attn_tensor x = {mem[i], 0, kv ? nkv : nq, (size_t)(kv ? p->kv_len : p->q_len) * d, d};
        t[i] = x;
    }
    return st;
}

static void release_buffers(cl_mem *mem)
{
    for (int i = 0; i < 4; i++)
        if (mem[i]) clReleaseMemObject(mem[i]);
}

/* The family's default parameters for entry on p, fitted here. */
static attn_status verify_params(attn_context *ctx, int entry, const attn_problem *p,
                                 attn_params *pr)
{
    const attn_device_limits dev = attn_context_limits(ctx);
    *pr = attn_params_defaults(ATTN_FAMILY_MMA);
    attn_params_fit(entry, pr, &dev, p);
    char err[256];
    if (!attn_params_legal(pr, &dev, p, err, sizeof err))
        return ATTN_FAIL(ctx, ATTN_ERROR_UNSUPPORTED, "no legal parameters: %s", err);
    return ATTN_SUCCESS;
}

/* The keys of a long verification row: ATTN_MMA_F32_PLAIN_KEYS, plains
 * times, and verify_shape's; against 16 queries. */
static int long_keys(int plains)
{
    return plains * ATTN_MMA_F32_PLAIN_KEYS + verify_shape.kv_len;
}

/* One forward of verify_shape in dt on the family's default parameters,
 * compared with the reference. ATTN_ERROR_MISMATCH (ctx's error naming
 * the worst element) when it differs. long_rows: 16 queries against
 * long_keys(1) keys instead (66 key tiles or more): the
 * key loop run long, and past ATTN_MMA_F32_PLAIN_KEYS, f32 rows built
 * folded (MMA_FOLD), another program. */
static attn_status verify_forward(attn_context *ctx, attn_dtype dt, int d, int long_rows)
{
    attn_problem p = verify_shape;
    p.dtype = dt;
    p.head_dim = d;
    if (long_rows) p.q_len = 16, p.kv_len = long_keys(1);
    _Static_assert(ATTN_MMA_F32_PLAIN_KEYS == 4096, "the f32 gate's message names 4096");
    attn_params pr;
    attn_status st = verify_params(ctx, ATTN_ENTRY_PREFILL, &p, &pr);
    cl_mem mem[4] = {NULL, NULL, NULL, NULL};
    attn_tensor t[4];
    attn_check_inputs *in = NULL;
    cl_event done = NULL;
    if (st == ATTN_SUCCESS) st = verify_buffers(ctx, &p, mem, t);
    if (st == ATTN_SUCCESS) st = attn_check_read_inputs(ctx, &p, &t[0], &t[1], &t[2], &in);
    if (st == ATTN_SUCCESS) st = attn_forward_params(ctx, &pr, &p, &t[0], &t[1], &t[2], &t[3], &done);
    if (st == ATTN_SUCCESS) st = attn_check_compare(ctx, &p, in, &t[3], NULL, NULL);
    if (done) clReleaseEvent(done);
    attn_check_free(in);
    release_buffers(mem);
    return st;
}

/* verify_shape's K and V appended to a cache (block: 0 contiguous, else
 * paged by that many tokens; int8: quantized), and its queries (the
 * cache's last q_len tokens: the same problem, bottom-right causal)
 * decoded on the family's decode kernel in two splits (the combine too),
 * compared with the reference (int8: over the cache as read back): the
 * decode program built, its cache reads (paged: a page looked up per key
 * tile) and partial results right. long_rows: 16 queries against
 * long_keys(1) keys instead, long_keys(2) in f32, so that each split's
 * key loop runs long, and f32's past
 * ATTN_MMA_F32_PLAIN_KEYS (built folded, as forced splits may leave it). */
static attn_status verify_decode(attn_context *ctx, attn_dtype dt, int d, int block, int int8,
                                 int long_rows)
{
    attn_problem p = verify_shape;
    p.dtype = dt;
    p.head_dim = d;
    if (long_rows)
        p.q_len = 16, p.kv_len = long_keys(dt == ATTN_F32 ? 2 : 1);
    attn_params pr;
    attn_status st = verify_params(ctx, ATTN_ENTRY_DECODE, &p, &pr);
    pr.kv_splits = 2;
    cl_mem mem[4] = {NULL, NULL, NULL, NULL};
    attn_tensor t[4];
    attn_kv_cache *cache = NULL;
    cl_event appended = NULL, done = NULL;
    const attn_kv_cache_desc desc = {.batch = 1, .kv_heads = p.kv_heads, .head_dim = p.head_dim,
                                     .capacity = p.kv_len, .dtype = dt, .block_size = block,
                                     .storage = int8 ? ATTN_KV_INT8 : ATTN_KV_AS_DTYPE};
    if (st == ATTN_SUCCESS) st = verify_buffers(ctx, &p, mem, t);
    if (st == ATTN_SUCCESS) st = attn_kv_cache_create_locked(ctx, &desc, &cache);
    if (st == ATTN_SUCCESS)
        st = attn_kv_cache_append_locked(cache, &t[1], &t[2], p.kv_len, &appended);
    if (st == ATTN_SUCCESS) {
        /* check mode: compared with the reference over the cache's rows
         * (int8: as read back), as attn_decode's check mode does */
        const int check = ctx->check;
        ctx->check = 1;
        st = attn_decode_params(ctx, cache, &pr, &p, &t[0], &t[3], &done);
        ctx->check = check;
    }
    if (appended) clReleaseEvent(appended);
    if (done) clReleaseEvent(done);
    attn_kv_cache_release(cache);
    release_buffers(mem);
    return st;
}

/* Decides ctx's gate; why says why not. */
static int decide(attn_context *ctx, char *why, size_t n)
{
    if (!ctx->mma_assume) {
        if (ctx->nv_cc == 0) {
            snprintf(why, n, "not an NVIDIA device (no cl_nv_device_attribute_query)");
            return 0;
        }
        if (ctx->nv_cc < ATTN_MMA_MIN_CC) {
            snprintf(why, n, "NVIDIA compute capability %d.%d, below %d.%d", ctx->nv_cc / 10,
                     ctx->nv_cc % 10, ATTN_MMA_MIN_CC / 10, ATTN_MMA_MIN_CC % 10);
            return 0;
        }
    }
    int ok = 0;
    char detail[200] = "";
    attn_status st =
        attn_mma_check(ctx, attn_mma_ptx(ctx), ATTN_MMA_CHECK_16, &ok, detail, sizeof detail);
    if (st != ATTN_SUCCESS) {
        snprintf(why, n, "the 16-bit fragment check did not run: %.140s", ctx->error);
        return 0;
    }
    if (!ok) {
        snprintf(why, n, "the 16-bit fragment check failed: %.150s", detail);
        return 0;
    }
    static const attn_dtype types[] = {ATTN_F16, ATTN_BF16};
    for (int i = 0; i < 2; i++)
        if ((st = verify_forward(ctx, types[i], D0, 0)) != ATTN_SUCCESS) {
            snprintf(why, n, "the %s verification forward failed: %.150s",
                     types[i] == ATTN_F16 ? "f16" : "bf16", ctx->error);
            return 0;
        }
    /* f16 contiguous; f16 and bf16 paged int8 (each type's decode program
     * once, and the int8 staging, whose K conversion differs per type) */
    static const struct { attn_dtype dt; int block, int8; } decodes[] = {
        {ATTN_F16, 0, 0}, {ATTN_F16, 16, 1}, {ATTN_BF16, 16, 1}};
    for (int i = 0; i < 3; i++)
        if ((st = verify_decode(ctx, decodes[i].dt, D0, decodes[i].block, decodes[i].int8, 0)) !=
            ATTN_SUCCESS) {
            snprintf(why, n, "the %s verification decode (%s cache) failed: %.130s",
                     decodes[i].dt == ATTN_F16 ? "f16" : "bf16",
                     decodes[i].int8 ? "paged int8" : "contiguous", ctx->error);
            return 0;
        }
    /* last, so that a fault the short ones find is named by them */
    for (int i = 0; i < 2; i++)
        if ((st = verify_forward(ctx, types[i], D0, 1)) != ATTN_SUCCESS) {
            snprintf(why, n, "the %s verification forward over %d keys failed: %.130s",
                     types[i] == ATTN_F16 ? "f16" : "bf16",
                     long_keys(1), ctx->error);
            return 0;
        }
    if ((st = verify_decode(ctx, ATTN_F16, D0, 16, 1, 1)) != ATTN_SUCCESS) {
        snprintf(why, n, "the f16 verification decode over %d keys (paged int8 cache) failed: %.120s",
                 long_keys(1), ctx->error);
        return 0;
    }
    return 1;
}

/* The 16-bit verdict, decided on the first call. */
static int usable16(attn_context *ctx)
{
    if (ctx->mma_state) return ctx->mma_state > 0;
    char why[sizeof ctx->mma_why] = "";
    const int ok = decide(ctx, why, sizeof why);
    ctx->mma_state = ok ? 1 : -1;
    snprintf(ctx->mma_why, sizeof ctx->mma_why, "%s", why);
    if (ok)
        attn_log(ATTN_LOG_INFO, "the mma family is usable here (%s, verified)",
                 attn_mma_ptx(ctx) ? "tensor cores" : "emulated");
    else if (ctx->nv_cc >= ATTN_MMA_MIN_CC || ctx->mma_assume)
        attn_log(ATTN_LOG_WARN, "the mma family is not used on this device: %s", why);
    else
        attn_log(ATTN_LOG_DEBUG, "the mma family is not used on this device: %s", why);
    return ok;
}

/* The f32 verdict (after a usable 16-bit one), decided on the first call. */
static int usable32(attn_context *ctx)
{
    if (ctx->mma_f32_state) return ctx->mma_f32_state > 0;
    /* the tf32 instructions first: a compiler that does not take them
     * leaves f16 and bf16 (checked apart) on the tensor cores */
    int ok = 0;
    char found[140] = "", detail[160] = "";
    const char *step = "the tf32 fragment check";
    attn_status st =
        attn_mma_check(ctx, attn_mma_ptx(ctx), ATTN_MMA_CHECK_TF32, &ok, found, sizeof found);
    if (st != ATTN_SUCCESS)
        snprintf(detail, sizeof detail, "did not run: %.140s", ctx->error);
    else if (!ok)
        snprintf(detail, sizeof detail, "failed: %s", found);
    if (ok) {
        step = "the f32 verification forward (3xTF32)";
        ok = verify_forward(ctx, ATTN_F32, D0, 0) == ATTN_SUCCESS;
        if (ok && !(ok = verify_forward(ctx, ATTN_F32, D0, 1) == ATTN_SUCCESS))
            step = "the f32 verification forward past 4096 keys (3xTF32, folded)";
        if (ok && (ok = verify_decode(ctx, ATTN_F32, D0, 16, 0, 0) == ATTN_SUCCESS &&
                        verify_decode(ctx, ATTN_F32, D0, 0, 1, 0) == ATTN_SUCCESS) == 0)
            step = "the f32 verification decode (3xTF32)";
        if (ok && !(ok = verify_decode(ctx, ATTN_F32, D0, 0, 0, 1) == ATTN_SUCCESS))
            step = "the f32 verification decode past 4096 keys a split (3xTF32, folded)";
        if (!ok) snprintf(detail, sizeof detail, "failed: %.150s", ctx->error);
    }
    ctx->mma_f32_state = ok ? 1 : -1;
    snprintf(ctx->mma_f32_why, sizeof ctx->mma_f32_why, "%s%s%s", ok ? "" : step, ok ? "" : " ",
             ok ? "" : detail);
    if (ok)
        attn_log(ATTN_LOG_INFO, "the mma family is usable here for f32 (3xTF32, verified)");
    else
        attn_log(ATTN_LOG_WARN, "the mma family is not used for f32 on this device: %s",
                 ctx->mma_f32_why);
    return ok;
}

/* The verdict for head dim d (another than D0) in dt's class, after a
 * usable one at D0, decided on the first call: its own programs (the
 * fragments' loops and registers are D's), which a compiler may fail to
 * build, or build wrong, where D0's pass. The checks that tell a program
 * at D from D0's: 16-bit forwards per type, short and long (f16), and
 * paged int8 decodes per type; f32 a forward and a paged decode, short
 * and past 4096 keys (folded). */
static int usable_dim(attn_context *ctx, attn_dtype dt, int d)
{
    const int f32 = dt == ATTN_F32;
    if (d == D0) return 1;
    if (d < 16 || d > 16 * ATTN_MMA_DIM_SLOTS || d % 16) return 0;
    signed char *state = &ctx->mma_dim_state[f32][d / 16 - 1];
    if (*state) return *state > 0;
    const char *step = NULL;
    if (f32) {
        /* past 4096 keys a row or a split: the folded programs, more
         * registers a lane (MMA_FOLD) */
        if (verify_forward(ctx, ATTN_F32, d, 0) != ATTN_SUCCESS)
            step = "the f32 verification forward (3xTF32)";
        else if (verify_decode(ctx, ATTN_F32, d, 16, 0, 0) != ATTN_SUCCESS)
            step = "the f32 verification decode (3xTF32, paged cache)";
        else if (verify_forward(ctx, ATTN_F32, d, 1) != ATTN_SUCCESS)
            step = "the f32 verification forward past 4096 keys (3xTF32, folded)";
        else if (verify_decode(ctx, ATTN_F32, d, 0, 0, 1) != ATTN_SUCCESS)
            step = "the f32 verification decode past 4096 keys a split (3xTF32, folded)";
    } else {
        static const attn_dtype types[] = {ATTN_F16, ATTN_BF16};
        for (int i = 0; i < 2 && !step; i++)
            if (verify_forward(ctx, types[i], d, 0) != ATTN_SUCCESS)
                step = i ? "the bf16 verification forward" : "the f16 verification forward";
        for (int i = 0; i < 2 && !step; i++)
            if (verify_decode(ctx, types[i], d, 16, 1, 0) != ATTN_SUCCESS)
                step = i ? "the bf16 verification decode (paged int8 cache)"
                         : "the f16 verification decode (paged int8 cache)";
        if (!step && verify_forward(ctx, ATTN_F16, d, 1) != ATTN_SUCCESS)
            step = "the f16 verification forward over 4179 keys";
    }
    *state = step ? -1 : 1;
    if (step)
        attn_log(ATTN_LOG_WARN, "the mma family is not used for %s at head dim %d on this "
                 "device: %s failed: %.150s", f32 ? "f32" : "f16 and bf16", d, step, ctx->error);
    return !step;
}

/* The gate's checks leave their own errors in ctx->error; a caller's
 * message from before stays. */
static int usable_saving_error(attn_context *ctx, attn_dtype dt, int d)
{
    char saved[ATTN_ERROR_MAX];
    memcpy(saved, ctx->error, sizeof saved);
    const int ok =
        usable16(ctx) && (dt != ATTN_F32 || usable32(ctx)) && usable_dim(ctx, dt, d);
    memcpy(ctx->error, saved, sizeof saved);
    return ok;
}

int attn_mma_usable(attn_context *ctx, attn_dtype dt)
{
    return usable_saving_error(ctx, dt, D0);
}

int attn_mma_usable_for(attn_context *ctx, const attn_problem *p)
{
    return usable_saving_error(ctx, p->dtype, p->head_dim);
}
