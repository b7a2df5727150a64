/* variants.c -- the attention variants of attn_problem as the host paths
 * hand them to the kernels (variants.h; cl/variants.cl is the kernels'
 * side), and attn_alibi_slopes. */
#define _POSIX_C_SOURCE 200809L
#include "attention/variants.h"
#include "core/context.h"
#include "core/errors.h"
#include "attention/forward.h"
#include "attention/mask_cache.h"
#include "attention/validate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INVALID(ctx, ...) ATTN_FAIL((ctx), ATTN_ERROR_INVALID_ARGUMENT, __VA_ARGS__)
#define LOG2E 1.4426950408889634f
/* window sides past this reach every key of any problem (lengths <= 2^30):
 * the kernels take them clamped here, so that pos +- side cannot overflow */
#define WINDOW_CLAMP (1 << 30)

/* The slopes themselves, for arguments already checked: the forward's own
 * use must not go through the public call, which clears the thread's
 * message (attn_last_error(NULL)). */
static void alibi_fill(int q_heads, float max_bias, float *slopes)
{
    int n2 = 1; /* the largest power of two <= q_heads */
    while (n2 <= q_heads / 2) n2 *= 2;
    const float m0 = powf(2.0f, -max_bias / (float)n2);
    const float m1 = powf(2.0f, -max_bias / 2.0f / (float)n2);
    for (int h = 0; h < q_heads; h++)
        slopes[h] = h < n2 ? powf(m0, (float)(h + 1)) : powf(m1, (float)(2 * (h - n2) + 1));
}

attn_status attn_alibi_slopes(int q_heads, float max_bias, float *slopes)
{
    attn_thread_call_begin(__func__);
    ATTN_CHECK(NULL, q_heads < 1, ATTN_ERROR_INVALID_ARGUMENT, "q_heads = %d must be positive",
               q_heads);
    ATTN_CHECK(NULL, !(max_bias >= 0.0f) || isinf(max_bias), ATTN_ERROR_INVALID_ARGUMENT,
               "max_bias = %g must be finite and >= 0", (double)max_bias);
    ATTN_CHECK(NULL, !slopes, ATTN_ERROR_INVALID_ARGUMENT, "slopes is NULL");
    alibi_fill(q_heads, max_bias, slopes);
    return ATTN_SUCCESS;
}

unsigned attn_variant_flags(const attn_problem *p)
{
    unsigned f = 0;
    if (p->use_window) f |= ATTN_VARIANT_WINDOW;
    if (p->softcap > 0.0f) f |= ATTN_VARIANT_SOFTCAP;
    if (p->sinks || p->sinks_buffer) f |= ATTN_VARIANT_SINKS;
    if (p->alibi_slopes || p->alibi_max_bias > 0.0f) f |= ATTN_VARIANT_ALIBI;
    if (p->mask.buffer) f |= p->mask.dtype == ATTN_F16 ? ATTN_VARIANT_MASK_F16 : ATTN_VARIANT_MASK_F32;
    if (p->packed) f |= ATTN_VARIANT_PACKED;
    return f;
}

static const char *const variant_name[] = {"window", "softcap", "sinks", "alibi",
                                           "mask_f32", "mask_f16", "packed"};

void attn_variant_names(unsigned flags, char *buf, size_t size)
{
    size_t n = 0;
    if (size) buf[0] = '\0';
    for (unsigned i = 0; i < sizeof variant_name / sizeof variant_name[0] && n < size; i++)
        if (flags & (1u << i))
            n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? "," : "", variant_name[i]);
}

/* A small device buffer attn reads: of ctx's context, >= need bytes. */
static attn_status check_buffer(attn_context *ctx, cl_mem m, const char *name, size_t need)
{
    size_t bytes = 0;
    cl_context owner = NULL;
    if (clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) != CL_SUCCESS ||
        clGetMemObjectInfo(m, CL_MEM_CONTEXT, sizeof owner, &owner, NULL) != CL_SUCCESS)
        return INVALID(ctx, "%s is not a valid cl_mem", name);
    if (owner != ctx->cl_ctx) return INVALID(ctx, "%s belongs to another cl_context than ctx's", name);
    if (bytes < need) return INVALID(ctx, "%s holds %zu bytes; it needs %zu", name, bytes, need);
    return attn_validate_readable(ctx, m, name);
}

/* The highest element the mask reaches over [B][Hq][Sq][Skv], overflow-checked */
static int mask_reach(const attn_mask *m, const attn_problem *p, size_t *hi)
{
    size_t span = m->offset, term;
    const size_t ext[4][2] = {{m->stride_batch, (size_t)p->batch - 1},
                              {m->stride_head, (size_t)p->q_heads - 1},
                              {m->stride_q, (size_t)p->q_len - 1},
                              {m->stride_kv, (size_t)p->kv_len - 1}};
    for (int i = 0; i < 4; i++) {
        if (__builtin_mul_overflow(ext[i][0], ext[i][1], &term)) return 0;
        if (__builtin_add_overflow(span, term, &span)) return 0;
    }
    *hi = span;
    return 1;
}

/* The bytes from the mask array's start to the end of its last element,
 * of esize bytes each; 0 when they overflow size_t (hi + 1 included: an
 * offset of SIZE_MAX must not wrap to an empty reach) */
static int mask_end(const attn_problem *p, size_t esize, size_t *end)
{
    size_t hi, n;
    return mask_reach(&p->mask, p, &hi) && !__builtin_add_overflow(hi, 1, &n) &&
           !__builtin_mul_overflow(n, esize, end);
}

int attn_mask_byte_span(const attn_problem *p, size_t *lo, size_t *end)
{
    const size_t esize = attn_dtype_size(p->mask.dtype);
    return mask_end(p, esize, end) && !__builtin_mul_overflow(p->mask.offset, esize, lo);
}

attn_status attn_validate_mask_reach(attn_context *ctx, const attn_problem *p, size_t esize,
                                     size_t *end)
{
    if (!mask_end(p, esize, end)) return INVALID(ctx, "p->mask: offset and strides overflow size_t");
    return ATTN_SUCCESS;
}

attn_status attn_validate_variant_values(attn_context *ctx, const attn_problem *p)
{
    if (p->use_window && (p->window_left < -1 || p->window_right < -1))
        return INVALID(ctx, "p->window_left = %d, p->window_right = %d: each must be >= 0, or -1 "
                       "(unlimited on that side)", p->window_left, p->window_right);
    if (!(p->softcap >= 0.0f) || isinf(p->softcap))
        return INVALID(ctx, "p->softcap = %g must be finite and >= 0 (0 = off)", (double)p->softcap);
    if (p->softcap > 0.0f && !isfinite(attn_effective_scale(p) / p->softcap))
        return INVALID(ctx, "p->softcap = %g is too small: scale / softcap overflows a float",
                       (double)p->softcap);
    if (!isfinite(p->softcap * LOG2E)) /* the kernels' cap is softcap * log2(e) */
        return INVALID(ctx, "p->softcap = %g is too large: softcap * log2(e) overflows a float",
                       (double)p->softcap);
    if (p->sinks && p->sinks_buffer)
        return INVALID(ctx, "p->sinks and p->sinks_buffer are both set; give the sinks one way");
    for (int h = 0; p->sinks && h < p->q_heads; h++) {
        if (isnan(p->sinks[h]) || p->sinks[h] == INFINITY)
            return INVALID(ctx, "p->sinks[%d] = %g: a sink must be finite or -inf", h,
                           (double)p->sinks[h]);
        if (p->sinks[h] != -INFINITY && !isfinite(p->sinks[h] * LOG2E)) /* kernels: log2 units */
            return INVALID(ctx, "p->sinks[%d] = %g is too large: sink * log2(e) overflows a "
                           "float", h, (double)p->sinks[h]);
    }
    if (!(p->alibi_max_bias >= 0.0f) || isinf(p->alibi_max_bias))
        return INVALID(ctx, "p->alibi_max_bias = %g must be finite and >= 0 (0 = off)",
                       (double)p->alibi_max_bias);
    if (p->alibi_slopes && p->alibi_max_bias > 0.0f)
        return INVALID(ctx, "p->alibi_slopes and p->alibi_max_bias are both set; give the slopes "
                       "one way");
    /* the kernels add -slope * log2(e) * |j - pos|, |j - pos| < q_len + kv_len, in float */
    const float reach = (float)p->q_len + (float)p->kv_len;
    for (int h = 0; p->alibi_slopes && h < p->q_heads; h++)
        if (!isfinite(p->alibi_slopes[h] * LOG2E * reach))
            return INVALID(ctx, "p->alibi_slopes[%d] = %g is not finite or too large: slope * "
                           "log2(e) * (q_len + kv_len) overflows a float", h,
                           (double)p->alibi_slopes[h]);
    const attn_mask *m = &p->mask;
    if (!m->buffer) return ATTN_SUCCESS;
    if (m->dtype != ATTN_F32 && m->dtype != ATTN_F16)
        return INVALID(ctx, "p->mask.dtype = %d: the mask is ATTN_F32 or ATTN_F16", (int)m->dtype);
    size_t need;
    return attn_validate_mask_reach(ctx, p, attn_dtype_size(m->dtype), &need);
}

attn_status attn_validate_variants(attn_context *ctx, const attn_problem *p)
{
    attn_status st = attn_validate_variant_values(ctx, p);
    if (st != ATTN_SUCCESS) return st;
    if (p->sinks_buffer &&
        (st = check_buffer(ctx, p->sinks_buffer, "p->sinks_buffer",
                           (size_t)p->q_heads * sizeof(float))) != ATTN_SUCCESS)
        return st;
    const attn_mask *m = &p->mask;
    /* the reference reads mask.host; a device call would drop it unseen */
    if (!m->buffer && m->host)
        return INVALID(ctx, "p->mask.host is set but p->mask.buffer is NULL: the device reads "
                       "the mask from p->mask.buffer (mask.host is the CPU reference's copy)");
    if (!m->buffer) return ATTN_SUCCESS;
    size_t need;
    mask_end(p, attn_dtype_size(m->dtype), &need); /* the values' check passed it */
    char what[64];
    snprintf(what, sizeof what, "p->mask.buffer ([%d][%d][%d][%d] by its strides)", p->batch,
             p->q_heads, p->q_len, p->kv_len);
    return check_buffer(ctx, m->buffer, what, need);
}

void attn_variant_options(const attn_problem *p, char *buf, size_t size)
{
    const unsigned f = attn_variant_flags(p);
    size_t n = strlen(buf);
    const struct { unsigned bit; const char *opt; } opts[] = {
        {ATTN_VARIANT_WINDOW, " -DWINDOW=1"},   {ATTN_VARIANT_SOFTCAP, " -DSOFTCAP=1"},
        {ATTN_VARIANT_SINKS, " -DSINKS=1"},     {ATTN_VARIANT_ALIBI, " -DALIBI=1"},
        {ATTN_VARIANT_MASK_F32, " -DMASK=1"},   {ATTN_VARIANT_MASK_F16, " -DMASK=2"},
        {ATTN_VARIANT_PACKED, " -DPACKED=1"}};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0] && n < size; i++)
        if (f & opts[i].bit) n += (size_t)snprintf(buf + n, size - n, "%s", opts[i].opt);
}

float attn_variant_qscale(const attn_problem *p)
{
    const float scale = attn_effective_scale(p);
    return p->softcap > 0.0f ? scale / p->softcap : scale * LOG2E;
}

/* A window limit as the kernels take it: -1 = unlimited, which a limit
 * past WINDOW_CLAMP also is (no sequence is that long) */
static int window_limit(int w) { return w < 0 || w > WINDOW_CLAMP ? -1 : w; }

int attn_variant_window_left(const attn_problem *p)
{
    return p->use_window ? window_limit(p->window_left) : -1;
}

static attn_status upload(attn_context *ctx, const float *host, int n, const char *what, cl_mem *out)
{
    cl_int err;
    *out = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                          (size_t)n * sizeof(float), (void *)host, &err);
    return err == CL_SUCCESS ? ATTN_SUCCESS : attn_fail_cl(ctx, err, what);
}

attn_status attn_variant_args_make(attn_context *ctx, const attn_problem *p, cl_mem placeholder,
                                   attn_variant_args *va)
{
    memset(va, 0, sizeof *va);
    va->win.s[0] = window_limit(p->window_left);
    va->win.s[1] = window_limit(p->window_right);
    va->cap = p->softcap > 0.0f ? p->softcap * LOG2E : 0.0f;
    va->sinks = va->slopes = va->mask = va->tiles = placeholder;
    attn_status st = ATTN_SUCCESS;
    if (p->sinks_buffer) va->sinks = p->sinks_buffer;
    else if (p->sinks &&
             (st = upload(ctx, p->sinks, p->q_heads, "clCreateBuffer (sinks)", &va->owned[0])))
        return st;
    else if (p->sinks)
        va->sinks = va->owned[0];
    if (p->alibi_slopes || p->alibi_max_bias > 0.0f) {
        float *slopes = malloc(sizeof(float) * (size_t)p->q_heads);
        if (!slopes) return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
        if (p->alibi_slopes) memcpy(slopes, p->alibi_slopes, sizeof(float) * (size_t)p->q_heads);
        else alibi_fill(p->q_heads, p->alibi_max_bias, slopes); /* checked by validate */
        st = upload(ctx, slopes, p->q_heads, "clCreateBuffer (ALiBi slopes)", &va->owned[1]);
        free(slopes);
        if (st) return st;
        va->slopes = va->owned[1];
    }
    if (p->mask.buffer) {
        va->mask = p->mask.buffer;
        const cl_ulong4 mg = {{p->mask.offset, p->mask.stride_batch, p->mask.stride_head,
                               p->mask.stride_q}};
        va->mg = mg;
        va->mk = p->mask.stride_kv;
    }
    return ATTN_SUCCESS;
}

const attn_karg *attn_variant_kargs(attn_variant_args *va)
{
    const attn_karg a[ATTN_VARIANT_NARGS] = {
        ATTN_KARG(va->win),  ATTN_KARG(va->cap), ATTN_KARG(va->sinks),
        ATTN_KARG(va->slopes), ATTN_KARG(va->mask), ATTN_KARG(va->mg),
        ATTN_KARG(va->mk),   ATTN_KARG(va->tiles), ATTN_KARG(va->mt)};
    memcpy(va->args, a, sizeof a);
    return va->args;
}

void attn_variant_args_release(attn_variant_args *va)
{
    for (int i = 0; i < 2; i++)
        if (va->owned[i]) clReleaseMemObject(va->owned[i]); /* enqueued kernels keep them alive */
    memset(va->owned, 0, sizeof va->owned);
}

/* The summary's table (cl/variants.cl's mask_tile): per batch entry where
 * its tiles start (bytes, past the table), its first row block, key blocks
 * and tiles per head; only the blocks its own query rows and keys touch.
 * Returns the summary's size in bytes, SIZE_MAX when that overflows (which
 * attn_scratch_reserve then refuses). */
static size_t mask_tile_table(const attn_problem *p, const attn_lengths *lengths, int heads,
                              int block_rows, int block_keys, cl_ulong4 *table)
{
    size_t at = sizeof *table * (size_t)p->batch;
    for (int b = 0; b < p->batch; b++) {
        const attn_region r = attn_region_of(p, lengths, b);
        const int first = r.q_start / block_rows;
        const int last = (r.q_start + r.q_len - 1) / block_rows;
        const size_t rows = r.q_len ? (size_t)(last - first + 1) : 0;
        const size_t keys = ((size_t)r.kv_len + block_keys - 1) / block_keys;
        const cl_ulong4 e = {{at, (cl_ulong)first, keys, rows * keys}};
        table[b] = e;
        size_t tiles;
        if (__builtin_mul_overflow(rows * keys, (size_t)heads, &tiles) ||
            __builtin_add_overflow(at, tiles, &at))
            return SIZE_MAX;
    }
    return at;
}

/* Runs attn_mask_tiles into the context's summary scratch (of `bytes`,
 * `table` at its start: the kernel copies it there from a buffer of its
 * own, which is also its var_tiles, where mask_tile reads the table). A
 * kernel's copy and not clEnqueueCopyBuffer: after a host-side copy into
 * the scratch, Oclgrind 21.10's --uninitialized took the tiles the kernel
 * then wrote for undefined. */
static attn_status summarise(attn_context *ctx, cl_program program, cl_mem lens,
                             attn_variant_args *va, const cl_ulong4 *table, size_t table_bytes,
                             size_t bytes, cl_event *done)
{
    cl_int err;
    cl_kernel k = NULL;
    cl_mem from = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, table_bytes,
                                 (void *)table, &err);
    if (err != CL_SUCCESS) return attn_fail_cl(ctx, err, "clCreateBuffer (mask tile table)");
    va->tiles = from;
    attn_karg args[2 + ATTN_VARIANT_NARGS];
    args[0] = (attn_karg)ATTN_KARG(lens);
    memcpy(args + 1, attn_variant_kargs(va), sizeof(attn_karg) * ATTN_VARIANT_NARGS);
    args[1 + ATTN_VARIANT_NARGS] = (attn_karg)ATTN_KARG(ctx->mask_tiles.mem);
    const size_t global[1] = {bytes - table_bytes};
    attn_status st = attn_kernel_create(ctx, program, "attn_mask_tiles", &k);
    if (st == ATTN_SUCCESS) st = attn_kernel_set_args(ctx, k, args, 2 + ATTN_VARIANT_NARGS);
    if (st == ATTN_SUCCESS) st = attn_kernel_enqueue(ctx, k, 1, global, NULL, 0, NULL, done);
    if (k) clReleaseKernel(k);
    clReleaseMemObject(from); /* the enqueued kernel keeps it alive */
    if (st) va->tiles = NULL;   /* not left pointing at the released table */
    return st;
}

attn_status attn_variant_mask_tiles(attn_context *ctx, const attn_problem *p, cl_program program,
                                    const attn_lengths *lengths, cl_mem lens, int block_rows,
                                    int block_keys, attn_variant_args *va, cl_event *done)
{
    *done = NULL;
    if (!p->mask.buffer) return ATTN_SUCCESS;
    cl_mem kept = attn_mask_cache_find(ctx, p, lengths, block_rows, block_keys, &va->mt);
    if (kept) {
        va->tiles = kept;
        return ATTN_SUCCESS;
    }
    const int heads = p->mask.stride_head ? p->q_heads : 1;
    const size_t table_bytes = sizeof(cl_ulong4) * (size_t)p->batch;
    cl_ulong4 *table = malloc(table_bytes);
    if (!table) return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    const size_t bytes = mask_tile_table(p, lengths, heads, block_rows, block_keys, table);
    va->mt.s[0] = heads;
    va->mt.s[1] = p->batch;
    /* no tile (no entry has both rows and keys): nothing is read or kept */
    attn_status st = ATTN_SUCCESS;
    if (bytes > table_bytes && (st = attn_scratch_reserve(ctx, &ctx->mask_tiles, bytes)) == ATTN_SUCCESS)
        st = summarise(ctx, program, lens, va, table, table_bytes, bytes, done);
    free(table);
    if (st || bytes <= table_bytes) return st;
    va->tiles = ctx->mask_tiles.mem;
    /* a mask with a version keeps its summary: the scratch becomes the
     * cache entry's, and an evicted summary's buffer the scratch */
    if (p->mask.version)
        attn_mask_cache_put(ctx, p, lengths, block_rows, block_keys, va->mt, &ctx->mask_tiles);
    return ATTN_SUCCESS;
}
