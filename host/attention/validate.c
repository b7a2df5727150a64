/* validate.c -- checks every argument of attn_forward before anything is
 * enqueued; each failure names the argument at fault. */
#include "core/context.h"
#include "core/errors.h"
#include "attention/validate.h"
#include "attention/variants.h"

#include <math.h>
#include <stdio.h>

#define INVALID(ctx, ...) ATTN_FAIL((ctx), ATTN_ERROR_INVALID_ARGUMENT, __VA_ARGS__)

static attn_status check_lengths(attn_context *ctx, const int *arr, const char *name, int batch,
                                 int padded)
{
    if (!arr) return ATTN_SUCCESS;
    for (int b = 0; b < batch; b++)
        if (arr[b] < 0 || arr[b] > padded)
            return INVALID(ctx, "lengths->%s[%d] = %d is outside [0, %d]", name, b, arr[b], padded);
    return ATTN_SUCCESS;
}

static attn_status check_extent(attn_context *ctx, const int *start, const int *len,
                                const char *sname, const char *lname, int batch, int padded)
{
    attn_status st;
    if ((st = check_lengths(ctx, start, sname, batch, padded)) != ATTN_SUCCESS) return st;
    if ((st = check_lengths(ctx, len, lname, batch, padded)) != ATTN_SUCCESS) return st;
    for (int b = 0; b < batch; b++) {
        int s = start ? start[b] : 0, n = len ? len[b] : padded;
        if (s + n > padded)
            return INVALID(ctx, "lengths: %s[%d] + %s[%d] = %d + %d exceeds the padded length %d",
                           sname, b, lname, b, s, n, padded);
    }
    return ATTN_SUCCESS;
}

attn_status attn_validate_problem(attn_context *ctx, const attn_problem *p,
                                  const attn_lengths *lengths)
{
    if (!p) return INVALID(ctx, "p (the problem) is NULL");
    const struct { int value; const char *name; } sizes[] = {
        {p->batch, "batch"},     {p->q_heads, "q_heads"}, {p->kv_heads, "kv_heads"},
        {p->head_dim, "head_dim"}, {p->q_len, "q_len"},   {p->kv_len, "kv_len"},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].value <= 0)
            return INVALID(ctx, "p->%s = %d must be positive", sizes[i].name, sizes[i].value);
    if (p->head_dim > 256) return INVALID(ctx, "p->head_dim = %d exceeds 256", p->head_dim);
    /* kernels index rows with int and add lengths: keep clear of INT_MAX */
    if (p->q_len > (1 << 30)) return INVALID(ctx, "p->q_len = %d exceeds 2^30", p->q_len);
    if (p->kv_len > (1 << 30)) return INVALID(ctx, "p->kv_len = %d exceeds 2^30", p->kv_len);
    if (p->q_heads % p->kv_heads)
        return INVALID(ctx, "p->q_heads = %d is not a multiple of p->kv_heads = %d", p->q_heads,
                       p->kv_heads);
    if ((unsigned)p->dtype > ATTN_BF16) return INVALID(ctx, "p->dtype = %d is not an attn_dtype", (int)p->dtype);
    if (!isfinite(p->scale)) return INVALID(ctx, "p->scale is not finite");
    /* the kernels scale logits by scale * log2(e) in float */
    if (!isfinite(p->scale * 1.4426950408889634f))
        return INVALID(ctx, "p->scale = %g is too large: scale * log2(e) overflows a float",
                       (double)p->scale);
    /* indices inside kernels are int per (batch, head) and ulong overall;
     * in double, since three ints can overflow even a long long (fuzzing
     * found it) */
    const double rows = (double)p->batch * p->q_heads * p->q_len;
    if (rows > 0x7fffffff)
        return INVALID(ctx, "batch * q_heads * q_len = %.0f exceeds 2^31 - 1", rows);
    attn_status st = attn_validate_variants(ctx, p);
    if (st != ATTN_SUCCESS || !lengths) return st;
    st = check_extent(ctx, lengths->q_start, lengths->q_len, "q_start", "q_len",
                                  p->batch, p->q_len);
    if (st == ATTN_SUCCESS)
        st = check_extent(ctx, lengths->kv_start, lengths->kv_len, "kv_start", "kv_len", p->batch,
                          p->kv_len);
    return st;
}

/* Element range [lo, hi] a tensor touches, with overflow checks. */
static int tensor_span(const attn_tensor *t, int batch, int heads, int seq, int dim, size_t *hi)
{
    size_t span = t->offset, term;
    const size_t ext[3][2] = {{t->stride_batch, (size_t)batch - 1},
                              {t->stride_head, (size_t)heads - 1},
                              {t->stride_seq, (size_t)seq - 1}};
    for (int i = 0; i < 3; i++) {
        if (__builtin_mul_overflow(ext[i][0], ext[i][1], &term)) return 0;
        if (__builtin_add_overflow(span, term, &span)) return 0;
    }
    if (__builtin_add_overflow(span, (size_t)dim - 1, &span)) return 0;
    *hi = span;
    return 1;
}

/* Strides must not make distinct elements overlap: sorted by stride, each
 * dimension (of extent > 1) must step past everything the smaller ones span. */
static int strides_disjoint(const attn_tensor *t, int batch, int heads, int seq, int dim)
{
    size_t st[4] = {1, t->stride_seq, t->stride_head, t->stride_batch};
    size_t ex[4] = {(size_t)dim, (size_t)seq, (size_t)heads, (size_t)batch};
    for (int i = 1; i < 4; i++) /* insertion sort by stride */
        for (int j = i; j > 0 && st[j] < st[j - 1]; j--) {
            size_t a = st[j]; st[j] = st[j - 1]; st[j - 1] = a;
            a = ex[j]; ex[j] = ex[j - 1]; ex[j - 1] = a;
        }
    size_t covered = 1; /* elements spanned by the smaller dimensions */
    for (int i = 0; i < 4; i++) {
        if (ex[i] <= 1) continue;
        if (st[i] < covered) return 0;
        covered = st[i] * ex[i];
    }
    return 1;
}

/* Whether some element index delta = sum_i c_i * st[i] with |c_i| < ex[i]
 * exists, dims sorted by stride descending and nested (as strides_disjoint
 * ensures): at each level at most two multiples of the stride can leave a
 * remainder the smaller dims reach, so the search is tiny. */
static int reachable(long long delta, const long long *st, const long long *ex, const long long *span,
                     int n)
{
    if (n == 0) return delta == 0;
    /* a dimension of extent 1 adds nothing, whatever its stride (0 is
     * legal there, and would divide by zero below: found by fuzzing) */
    if (ex[0] <= 1 || st[0] == 0) return reachable(delta, st + 1, ex + 1, span + 1, n - 1);
    long long lo = delta - (span[0] - 1), hi = delta + (span[0] - 1); /* c * st[0] within */
    long long c0 = lo >= 0 ? (lo + st[0] - 1) / st[0] : -((-lo) / st[0]);
    for (long long c = c0; c * st[0] <= hi; c++)
        if (c > -ex[0] && c < ex[0] && reachable(delta - c * st[0], st + 1, ex + 1, span + 1, n - 1))
            return 1;
    return 0;
}

/* Two tensors of one shape in one buffer: do any of their elements meet?
 * Exact when the strides are identical (a fused QKV or QKVO buffer), by
 * element ranges otherwise. */
static int tensors_meet(const attn_tensor *a, size_t a_hi, const attn_tensor *b, size_t b_hi,
                        int heads, int seq, int dim, int batch)
{
    if (a->buffer != b->buffer || a_hi < b->offset || b_hi < a->offset) return 0;
    if (a->stride_batch != b->stride_batch || a->stride_head != b->stride_head ||
        a->stride_seq != b->stride_seq)
        return 1;
    long long st[4] = {(long long)a->stride_batch, (long long)a->stride_head, (long long)a->stride_seq, 1};
    long long ex[4] = {batch, heads, seq, dim};
    for (int i = 1; i < 4; i++) /* sort by stride, descending */
        for (int j = i; j > 0 && st[j] > st[j - 1]; j--) {
            long long t = st[j]; st[j] = st[j - 1]; st[j - 1] = t;
            t = ex[j]; ex[j] = ex[j - 1]; ex[j - 1] = t;
        }
    long long span[4]; /* elements reached by the dims after i, plus one */
    span[3] = 1;
    for (int i = 2; i >= 0; i--) span[i] = span[i + 1] + (ex[i + 1] - 1) * st[i + 1];
    return reachable((long long)a->offset - (long long)b->offset, st, ex, span, 4);
}

static attn_status check_tensor(attn_context *ctx, const attn_tensor *t, const char *name,
                                int batch, int heads, int seq, int dim, size_t elem, size_t *hi)
{
    if (!t) return INVALID(ctx, "%s is NULL", name);
    if (!t->buffer) return INVALID(ctx, "%s->buffer is NULL", name);
    cl_context owner = NULL;
    size_t bytes = 0;
    if (clGetMemObjectInfo(t->buffer, CL_MEM_CONTEXT, sizeof owner, &owner, NULL) != CL_SUCCESS ||
        clGetMemObjectInfo(t->buffer, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) != CL_SUCCESS)
        return INVALID(ctx, "%s->buffer is not a valid cl_mem", name);
    if (owner != ctx->cl_ctx)
        return INVALID(ctx, "%s->buffer belongs to another cl_context than ctx's", name);
    if (seq > 1 && t->stride_seq < (size_t)dim)
        return INVALID(ctx, "%s->stride_seq = %zu is smaller than head_dim = %d", name,
                       t->stride_seq, dim);
    if (!strides_disjoint(t, batch, heads, seq, dim))
        return INVALID(ctx, "%s: strides (batch %zu, head %zu, seq %zu) make elements overlap "
                       "for shape [%d, %d, %d, %d]", name, t->stride_batch, t->stride_head,
                       t->stride_seq, batch, heads, seq, dim);
    size_t need;
    if (!tensor_span(t, batch, heads, seq, dim, hi) || __builtin_mul_overflow(*hi + 1, elem, &need))
        return INVALID(ctx, "%s: offset and strides overflow size_t", name);
    if (need > bytes)
        return INVALID(ctx, "%s->buffer holds %zu bytes; offset and strides reach %zu bytes", name,
                       bytes, need);
    return ATTN_SUCCESS;
}

attn_status attn_validate_forward(attn_context *ctx, const attn_problem *p,
                                  const attn_tensor *q, const attn_tensor *k,
                                  const attn_tensor *v, const attn_tensor *out,
                                  const attn_lengths *lengths, cl_mem lse)
{
    attn_status st = attn_validate_problem(ctx, p, lengths);
    if (st != ATTN_SUCCESS) return st;
    size_t elem = attn_dtype_size(p->dtype), qhi, khi, vhi, ohi;
    int D = p->head_dim;
    if ((st = check_tensor(ctx, q, "q", p->batch, p->q_heads, p->q_len, D, elem, &qhi)) ||
        (st = check_tensor(ctx, k, "k", p->batch, p->kv_heads, p->kv_len, D, elem, &khi)) ||
        (st = check_tensor(ctx, v, "v", p->batch, p->kv_heads, p->kv_len, D, elem, &vhi)) ||
        (st = check_tensor(ctx, out, "out", p->batch, p->q_heads, p->q_len, D, elem, &ohi)) ||
        (st = attn_validate_writable(ctx, out->buffer, "out->buffer")))
        return st;
    /* out may be q itself (each row is read before it is written), never K or V */
    if (p->q_heads == p->kv_heads && p->q_len == p->kv_len) {
        if (tensors_meet(out, ohi, k, khi, p->q_heads, p->q_len, D, p->batch))
            return INVALID(ctx, "out overlaps k in the same buffer");
        if (tensors_meet(out, ohi, v, vhi, p->q_heads, p->q_len, D, p->batch))
            return INVALID(ctx, "out overlaps v in the same buffer");
    } else { /* shapes differ: element ranges */
        if (k->buffer == out->buffer && k->offset <= ohi && out->offset <= khi)
            return INVALID(ctx, "out overlaps k in the same buffer");
        if (v->buffer == out->buffer && v->offset <= ohi && out->offset <= vhi)
            return INVALID(ctx, "out overlaps v in the same buffer");
    }
    const int in_place = q->buffer == out->buffer && q->offset == out->offset &&
                         q->stride_batch == out->stride_batch && q->stride_head == out->stride_head &&
                         q->stride_seq == out->stride_seq;
    if (!in_place && tensors_meet(out, ohi, q, qhi, p->q_heads, p->q_len, D, p->batch))
        return INVALID(ctx, "out overlaps q with a different layout (in place needs identical "
                       "offset and strides)");
    if (lse) {
        size_t bytes = 0;
        cl_context owner = NULL;
        if (clGetMemObjectInfo(lse, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) != CL_SUCCESS ||
            clGetMemObjectInfo(lse, CL_MEM_CONTEXT, sizeof owner, &owner, NULL) != CL_SUCCESS)
            return INVALID(ctx, "lse is not a valid cl_mem");
        if (owner != ctx->cl_ctx) return INVALID(ctx, "lse belongs to another cl_context than ctx's");
        if ((st = attn_validate_writable(ctx, lse, "lse")) != ATTN_SUCCESS) return st;
        size_t need = (size_t)p->batch * p->q_heads * p->q_len * sizeof(float);
        if (bytes < need)
            return INVALID(ctx, "lse holds %zu bytes; batch * q_heads * q_len floats need %zu",
                           bytes, need);
        if (lse == out->buffer || lse == q->buffer || lse == k->buffer || lse == v->buffer)
            return INVALID(ctx, "lse must be a buffer of its own, not one of q, k, v or out");
    }
    return ATTN_SUCCESS;
}

attn_status attn_validate_tensor(attn_context *ctx, const attn_tensor *t, const char *name,
                                 int batch, int heads, int seq, int dim, size_t elem, size_t *hi)
{
    return check_tensor(ctx, t, name, batch, heads, seq, dim, elem, hi);
}

attn_status attn_validate_writable(attn_context *ctx, cl_mem m, const char *name)
{
    cl_mem_flags flags = 0;
    if (clGetMemObjectInfo(m, CL_MEM_FLAGS, sizeof flags, &flags, NULL) != CL_SUCCESS)
        return INVALID(ctx, "%s is not a valid cl_mem", name);
    if (flags & CL_MEM_READ_ONLY)
        return INVALID(ctx, "%s was created CL_MEM_READ_ONLY, but attn writes to it", name);
    return ATTN_SUCCESS;
}
