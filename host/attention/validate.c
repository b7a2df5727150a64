/* validate.c -- checks every argument of attn_forward before anything is
 * enqueued; each failure names the argument at fault. */
#include "core/context.h"
#include "core/errors.h"
#include "attention/mem_view.h"
#include "attention/validate.h"
#include "attention/variants.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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
        if (n > padded - s) /* both in [0, padded]: s + n may pass INT_MAX */
            return INVALID(ctx, "lengths: %s[%d] + %s[%d] = %d + %d exceeds the padded length %d",
                           sname, b, lname, b, s, n, padded);
    }
    return ATTN_SUCCESS;
}

/* attn_validate_problem; with buffers 0 the variants' buffers go unchecked */
static attn_status validate_problem(attn_context *ctx, const attn_problem *p,
                                    const attn_lengths *lengths, int buffers)
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
    if (p->q_len > ATTN_MAX_SEQ) return INVALID(ctx, "p->q_len = %d exceeds 2^30", p->q_len);
    if (p->kv_len > ATTN_MAX_SEQ) return INVALID(ctx, "p->kv_len = %d exceeds 2^30", p->kv_len);
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
    attn_status st = buffers ? attn_validate_variants(ctx, p) : attn_validate_variant_values(ctx, p);
    if (st != ATTN_SUCCESS || !lengths) return st;
    st = check_extent(ctx, lengths->q_start, lengths->q_len, "q_start", "q_len",
                                  p->batch, p->q_len);
    if (st == ATTN_SUCCESS)
        st = check_extent(ctx, lengths->kv_start, lengths->kv_len, "kv_start", "kv_len", p->batch,
                          p->kv_len);
    return st;
}

attn_status attn_validate_problem(attn_context *ctx, const attn_problem *p,
                                  const attn_lengths *lengths)
{
    return validate_problem(ctx, p, lengths, 1);
}

attn_status attn_validate_problem_values(const attn_problem *p, const attn_lengths *lengths)
{
    return validate_problem(NULL, p, lengths, 0);
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

static long long floor_div(long long a, long long b) { return a / b - (a % b != 0 && a < 0); }

/* Whether delta = sum_i c_i * st[i] for integers lo[i] <= c_i <= hi[i],
 * dims sorted by stride descending and nested (as strides_disjoint
 * ensures), reach[i] = the [min, max] the dims after i add: at each level
 * only two or three multiples of the stride leave a remainder the smaller
 * dims reach, so the search is tiny. */
static int reachable(long long delta, const long long *st, const long long *lo,
                     const long long *hi, const long long (*reach)[2], int n)
{
    if (n == 0) return delta == 0;
    /* a zero stride adds nothing, whatever its coefficient (legal on a
     * dimension of extent 1; dividing by it was a fuzzing find) */
    if (st[0] == 0) return reachable(delta, st + 1, lo + 1, hi + 1, reach + 1, n - 1);
    long long c = -floor_div(reach[0][1] - delta, st[0]); /* ceil((delta - max) / st) */
    long long last = floor_div(delta - reach[0][0], st[0]);
    if (c < lo[0]) c = lo[0];
    if (last > hi[0]) last = hi[0];
    for (; c <= last; c++)
        if (reachable(delta - c * st[0], st + 1, lo + 1, hi + 1, reach + 1, n - 1)) return 1;
    return 0;
}

/* reachable() over n <= 4 dims in any order: sorts them and sums the reach. */
static int lattice_meets(long long delta, int n, long long *st, long long *lo, long long *hi)
{
    for (int i = 1; i < n; i++) /* sort by stride, descending */
        for (int j = i; j > 0 && st[j] > st[j - 1]; j--) {
            long long *v[3] = {st, lo, hi};
            for (int k = 0; k < 3; k++) {
                long long t = v[k][j]; v[k][j] = v[k][j - 1]; v[k][j - 1] = t;
            }
        }
    long long reach[4][2] = {{0, 0}};
    for (int i = n - 2; i >= 0; i--) {
        reach[i][0] = reach[i + 1][0] + lo[i + 1] * st[i + 1];
        reach[i][1] = reach[i + 1][1] + hi[i + 1] * st[i + 1];
    }
    return reachable(delta, st, lo, hi, (const long long (*)[2])reach, n);
}

/* Two tensors in one buffer, a of [batch, a_heads, a_seq, dim] and b of
 * [batch, b_heads, b_seq, dim]: do any of their elements meet? Exact when
 * the strides are identical (a fused QKV or QKVO buffer, GQA's fewer KV
 * heads too), by element ranges otherwise. */
static int tensors_meet(const attn_tensor *a, size_t a_hi, int a_heads, int a_seq,
                        const attn_tensor *b, size_t b_hi, int b_heads, int b_seq, int dim,
                        int batch)
{
    if (a->buffer != b->buffer || a_hi < b->offset || b_hi < a->offset) return 0;
    if (a->stride_batch != b->stride_batch || a->stride_head != b->stride_head ||
        a->stride_seq != b->stride_seq)
        return 1;
    /* a->offset + st . ia == b->offset + st . ib: st . (ib - ia) == delta */
    long long st[4] = {(long long)a->stride_batch, (long long)a->stride_head,
                       (long long)a->stride_seq, 1};
    long long lo[4] = {-(batch - 1), -(a_heads - 1), -(a_seq - 1), -(dim - 1)};
    long long hi[4] = {batch - 1, b_heads - 1, b_seq - 1, dim - 1};
    return lattice_meets((long long)a->offset - (long long)b->offset, 4, st, lo, hi);
}

/* A tensor attn reads or writes: a valid cl_mem of ctx's context, large
 * enough, and one batch entry's elements distinct (a layout mistake
 * otherwise); batch entries may share elements (checked for out alone). */
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
    if (!strides_disjoint(t, 1, heads, seq, dim))
        return INVALID(ctx, "%s: strides (head %zu, seq %zu) make one batch entry's elements "
                       "overlap for shape [%d, %d, %d]", name, t->stride_head, t->stride_seq,
                       heads, seq, dim);
    size_t need;
    /* *hi == SIZE_MAX: one past it wraps to 0, a tensor of no bytes */
    if (!tensor_span(t, batch, heads, seq, dim, hi) || *hi == SIZE_MAX ||
        __builtin_mul_overflow(*hi + 1, elem, &need))
        return INVALID(ctx, "%s: offset and strides overflow size_t", name);
    if (need > bytes)
        return INVALID(ctx, "%s->buffer holds %zu bytes; offset and strides reach %zu bytes", name,
                       bytes, need);
    return ATTN_SUCCESS;
}

/* The rows one batch entry of out writes, as a key range for the sweep in
 * check_out_rows: query rows when stride_batch is 0 (entries then meet
 * exactly when their rows do), element indices otherwise. */
typedef struct out_rows {
    long long lo, hi;
    int b, start, len;
} out_rows;

static int by_lo(const void *a, const void *b)
{
    const out_rows *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Whether the written rows of entries x and y of out share an element. */
static int rows_meet(const attn_tensor *o, int heads, int dim, const out_rows *x, const out_rows *y)
{
    long long st[3] = {(long long)o->stride_head, (long long)o->stride_seq, 1};
    long long lo[3] = {-(heads - 1), y->start - (x->start + x->len - 1), -(dim - 1)};
    long long hi[3] = {heads - 1, y->start + y->len - 1 - x->start, dim - 1};
    return lattice_meets((long long)(x->b - y->b) * (long long)o->stride_batch, 3, st, lo, hi);
}

static int by_start(const void *a, const void *b)
{
    const int *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

int attn_packed_rows_meet(const attn_problem *p, const attn_lengths *lengths, int meet[3])
{
    int (*span)[3] = malloc(sizeof *span * (size_t)p->batch);
    if (!span) return -1;
    int n = 0, found = 0;
    for (int b = 0; b < p->batch; b++) {
        const attn_region r = attn_region_of(p, lengths, b);
        if (r.q_len == 0) continue;
        span[n][0] = r.q_start;
        span[n][1] = r.q_start + r.q_len;
        span[n++][2] = b;
    }
    qsort(span, (size_t)n, sizeof *span, by_start);
    for (int i = 1; i < n && !found; i++)
        if (span[i][0] < span[i - 1][1]) {
            const int a = span[i - 1][2], b = span[i][2];
            meet[0] = a < b ? a : b;
            meet[1] = a < b ? b : a;
            meet[2] = span[i][0];
            found = 1;
        }
    free(span);
    return found;
}

/* Packed lse is [q_heads][q_len] by buffer row, so the entries' query rows
 * [q_start, q_start + q_len) must not meet, whatever out's strides do. */
static attn_status check_packed_lse_rows(attn_context *ctx, const attn_problem *p,
                                         const attn_lengths *lengths)
{
    int meet[3];
    const int found = attn_packed_rows_meet(p, lengths, meet);
    if (found < 0) return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (found)
        return INVALID(ctx, "lse: with p->packed it is [q_heads][q_len] by buffer row, but "
                       "batch entries %d and %d both have query rows at %d (lengths->q_start "
                       "and q_len): their LSE rows would meet", meet[0], meet[1], meet[2]);
    return ATTN_SUCCESS;
}

/* out's written rows must not meet one another: all rows [0, q_len) of
 * every entry, or with p->packed each entry's own [q_start, q_start +
 * q_len). Entries sorted by their first element; only those whose ranges
 * meet are tested exactly. */
static attn_status check_out_rows(attn_context *ctx, const attn_problem *p,
                                  const attn_lengths *lengths, const attn_tensor *o)
{
    const int H = p->q_heads, D = p->head_dim;
    if (strides_disjoint(o, p->batch, H, p->q_len, D)) return ATTN_SUCCESS;
    if (!p->packed)
        return INVALID(ctx, "out: strides (batch %zu, head %zu, seq %zu) make batch entries "
                       "overlap; without p->packed every row [0, q_len) of every entry is "
                       "written (set p->packed for sequences packed along one token axis)",
                       o->stride_batch, o->stride_head, o->stride_seq);
    out_rows *r = malloc(sizeof *r * (size_t)p->batch);
    if (!r) return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    const long long sb = (long long)o->stride_batch, ss = (long long)o->stride_seq;
    const long long reach = (long long)(H - 1) * (long long)o->stride_head + D - 1;
    int n = 0;
    for (int b = 0; b < p->batch; b++) {
        const attn_region g = attn_region_of(p, lengths, b);
        if (g.q_len == 0) continue;
        out_rows e = {g.q_start, g.q_start + g.q_len - 1, b, g.q_start, g.q_len};
        if (sb) {
            e.lo = (long long)b * sb + (long long)g.q_start * ss;
            e.hi = e.lo + (long long)(g.q_len - 1) * ss + reach;
        }
        r[n++] = e;
    }
    qsort(r, (size_t)n, sizeof *r, by_lo);
    attn_status st = ATTN_SUCCESS;
    for (int i = 0; i < n && st == ATTN_SUCCESS; i++)
        for (int j = i + 1; j < n && r[j].lo <= r[i].hi; j++)
            if (!sb || rows_meet(o, H, D, &r[i], &r[j])) {
                const out_rows *x = r[i].b < r[j].b ? &r[i] : &r[j], *y = x == &r[i] ? &r[j] : &r[i];
                st = INVALID(ctx, "out: with p->packed, the rows of sequences %d (q_start %d, "
                             "q_len %d) and %d (q_start %d, q_len %d) share elements", x->b,
                             x->start, x->len, y->b, y->start, y->len);
                break;
            }
    free(r);
    return st;
}

/* A tensor where its memory lies: t's buffer replaced by the allocation it
 * is a view of (mem_view.h) and its offset and hi counted from there;
 * exact when the sub-buffer's origin is a whole number of elements, as
 * OpenCL's alignment of origins (CL_DEVICE_MEM_BASE_ADDR_ALIGN, at least
 * 128 bytes) makes it; otherwise only its byte range is compared. */
typedef struct placed {
    attn_tensor t;  /* buffer: the root; offset: in elements from the root's start */
    size_t hi;      /* the highest element index it reaches, from the root's start */
    cl_mem mem;     /* the caller's handle */
    size_t lo, end; /* bytes [lo, end) of mem it touches */
    int exact;
} placed;

static placed place(const attn_tensor *t, size_t elem, size_t hi)
{
    const attn_mem_view w = attn_mem_view_of(t->buffer);
    placed r = {*t, hi, t->buffer, t->offset * elem, (hi + 1) * elem, w.origin % elem == 0};
    r.t.buffer = w.root;
    r.t.offset += w.origin / elem;
    r.hi += w.origin / elem;
    return r;
}

/* Whether placed out (the q shape) and b (the q shape, or with kv the kv
 * shape) share memory: exactly (tensors_meet) when both are exact, by
 * byte ranges otherwise. */
static int placed_meet(const placed *out, const placed *b, int kv, const attn_problem *p)
{
    if (!out->t.buffer || out->t.buffer != b->t.buffer) return 0;
    if (!out->exact || !b->exact)
        return attn_mem_bytes_meet(out->mem, out->lo, out->end, b->mem, b->lo, b->end);
    return tensors_meet(&out->t, out->hi, p->q_heads, p->q_len, &b->t, b->hi,
                        kv ? p->kv_heads : p->q_heads, kv ? p->kv_len : p->q_len, p->head_dim,
                        p->batch);
}

/* How two cl_mem that met share memory, for a message */
static const char *alias_kind(cl_mem a, cl_mem b)
{
    if (a == b) return "in the same buffer";
    if (attn_mem_view_of(a).root == a || attn_mem_view_of(b).root == b)
        return "(one buffer is a sub-buffer of the other)";
    return "(their buffers are sub-buffers of one cl_mem)";
}

/* The bytes of the mask buffer the mask reads; its whole size if they
 * cannot be computed (attn_validate_variants refuses that earlier) */
static void mask_bytes(const attn_problem *p, size_t *lo, size_t *end)
{
    if (attn_mask_byte_span(p, lo, end)) return;
    *lo = 0;
    *end = SIZE_MAX;
}

/* attn_validate_forward, or with kv 0 attn_validate_io (k and v unused) */
static attn_status validate(attn_context *ctx, const attn_problem *p, const attn_tensor *q,
                            const attn_tensor *k, const attn_tensor *v, const attn_tensor *out,
                            const attn_lengths *lengths, cl_mem lse, int kv)
{
    attn_status st = attn_validate_problem(ctx, p, lengths);
    if (st != ATTN_SUCCESS) return st;
    size_t elem = attn_dtype_size(p->dtype), qhi = 0, khi = 0, vhi = 0, ohi = 0;
    int D = p->head_dim;
    if ((st = attn_validate_tensor(ctx, q, "q", p->batch, p->q_heads, p->q_len, D, elem, &qhi)) ||
        (kv && (st = attn_validate_tensor(ctx, k, "k", p->batch, p->kv_heads, p->kv_len, D, elem,
                                          &khi))) ||
        (kv && (st = attn_validate_tensor(ctx, v, "v", p->batch, p->kv_heads, p->kv_len, D, elem,
                                          &vhi))) ||
        (st = check_tensor(ctx, out, "out", p->batch, p->q_heads, p->q_len, D, elem, &ohi)) ||
        (st = attn_validate_writable(ctx, out->buffer, "out->buffer")) ||
        (st = check_out_rows(ctx, p, lengths, out)))
        return st;
    /* sub-buffers of one cl_mem are one allocation: compare where the
     * elements lie, not the handles */
    const placed pq = place(q, elem, qhi), po = place(out, elem, ohi);
    placed pk = {0}, pv = {0};
    if (kv) pk = place(k, elem, khi), pv = place(v, elem, vhi);
    /* out may be q itself (each row is read before it is written), never K or V */
    if (kv && placed_meet(&po, &pk, 1, p))
        return INVALID(ctx, "out overlaps k %s", alias_kind(out->buffer, k->buffer));
    if (kv && placed_meet(&po, &pv, 1, p))
        return INVALID(ctx, "out overlaps v %s", alias_kind(out->buffer, v->buffer));
    const int in_place = pq.exact && po.exact && pq.t.buffer == po.t.buffer &&
                         pq.t.offset == po.t.offset && q->stride_batch == out->stride_batch &&
                         q->stride_head == out->stride_head && q->stride_seq == out->stride_seq;
    if (!in_place && placed_meet(&po, &pq, 0, p))
        return INVALID(ctx, "out overlaps q with a different layout (in place needs identical "
                       "offset and strides)%s%s", q->buffer == out->buffer ? "" : " ",
                       q->buffer == out->buffer ? "" : alias_kind(q->buffer, out->buffer));
    const size_t sinks_bytes = (size_t)p->q_heads * sizeof(float);
    size_t mask_lo = 0, mask_end = 0;
    if (p->mask.buffer) mask_bytes(p, &mask_lo, &mask_end);
    if (lse) {
        size_t bytes = 0;
        cl_context owner = NULL;
        if (clGetMemObjectInfo(lse, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) != CL_SUCCESS ||
            clGetMemObjectInfo(lse, CL_MEM_CONTEXT, sizeof owner, &owner, NULL) != CL_SUCCESS)
            return INVALID(ctx, "lse is not a valid cl_mem");
        if (owner != ctx->cl_ctx) return INVALID(ctx, "lse belongs to another cl_context than ctx's");
        if ((st = attn_validate_writable(ctx, lse, "lse")) != ATTN_SUCCESS) return st;
        /* packed: [q_heads][q_len] by buffer row, the batch dropped */
        const size_t need = (size_t)(p->packed ? 1 : p->batch) * p->q_heads * p->q_len * sizeof(float);
        if (bytes < need)
            return INVALID(ctx, "lse holds %zu bytes; %s floats need %zu", bytes,
                           p->packed ? "q_heads * q_len (p->packed)" : "batch * q_heads * q_len",
                           need);
        if (p->packed && (st = check_packed_lse_rows(ctx, p, lengths)) != ATTN_SUCCESS) return st;
        const placed *seen[4] = {&pq, &po, &pk, &pv};
        const char *names[4] = {"q->buffer", "out->buffer", "k->buffer", "v->buffer"};
        for (int i = 0; i < (kv ? 4 : 2); i++)
            if (attn_mem_bytes_meet(lse, 0, need, seen[i]->mem, seen[i]->lo, seen[i]->end))
                return INVALID(ctx, "lse and %s share bytes %s: lse must be memory of its own",
                               names[i], alias_kind(lse, seen[i]->mem));
        if (p->sinks_buffer && attn_mem_bytes_meet(lse, 0, need, p->sinks_buffer, 0, sinks_bytes))
            return INVALID(ctx, "lse and p->sinks_buffer share bytes %s (attn reads the sinks "
                           "while it writes lse)", alias_kind(lse, p->sinks_buffer));
        if (p->mask.buffer &&
            attn_mem_bytes_meet(lse, 0, need, p->mask.buffer, mask_lo, mask_end))
            return INVALID(ctx, "lse and p->mask.buffer share bytes %s (attn reads the mask "
                           "while it writes lse)", alias_kind(lse, p->mask.buffer));
    }
    if (p->sinks_buffer &&
        attn_mem_bytes_meet(out->buffer, po.lo, po.end, p->sinks_buffer, 0, sinks_bytes))
        return INVALID(ctx, "p->sinks_buffer and out->buffer share bytes %s: attn reads the "
                       "sinks while it writes out", alias_kind(p->sinks_buffer, out->buffer));
    /* the mask's reach from its offset to its last element; what it reads
     * in between depends on its strides */
    if (p->mask.buffer &&
        attn_mem_bytes_meet(out->buffer, po.lo, po.end, p->mask.buffer, mask_lo, mask_end))
        return INVALID(ctx, "p->mask.buffer and out->buffer share bytes %s: attn reads the mask "
                       "while it writes out", alias_kind(p->mask.buffer, out->buffer));
    return ATTN_SUCCESS;
}

attn_status attn_validate_forward(attn_context *ctx, const attn_problem *p,
                                  const attn_tensor *q, const attn_tensor *k,
                                  const attn_tensor *v, const attn_tensor *out,
                                  const attn_lengths *lengths, cl_mem lse)
{
    return validate(ctx, p, q, k, v, out, lengths, lse, 1);
}

attn_status attn_validate_io(attn_context *ctx, const attn_problem *p, const attn_tensor *q,
                             const attn_tensor *out, cl_mem lse)
{
    return validate(ctx, p, q, NULL, NULL, out, NULL, lse, 0);
}

attn_status attn_validate_tensor(attn_context *ctx, const attn_tensor *t, const char *name,
                                 int batch, int heads, int seq, int dim, size_t elem, size_t *hi)
{
    attn_status st = check_tensor(ctx, t, name, batch, heads, seq, dim, elem, hi);
    if (st != ATTN_SUCCESS) return st;
    char what[48];
    snprintf(what, sizeof what, "%s->buffer", name);
    return attn_validate_readable(ctx, t->buffer, what);
}

/* m must not carry `flag`: CL_MEM_WRITE_ONLY for what attn reads,
 * CL_MEM_READ_ONLY for what it writes */
static attn_status check_access(attn_context *ctx, cl_mem m, const char *name, cl_mem_flags flag)
{
    cl_mem_flags flags = 0;
    if (clGetMemObjectInfo(m, CL_MEM_FLAGS, sizeof flags, &flags, NULL) != CL_SUCCESS)
        return INVALID(ctx, "%s is not a valid cl_mem", name);
    if (flags & flag)
        return INVALID(ctx, "%s was created %s, but attn %s", name,
                       flag == CL_MEM_WRITE_ONLY ? "CL_MEM_WRITE_ONLY" : "CL_MEM_READ_ONLY",
                       flag == CL_MEM_WRITE_ONLY ? "reads it" : "writes to it");
    return ATTN_SUCCESS;
}

attn_status attn_validate_readable(attn_context *ctx, cl_mem m, const char *name)
{
    return check_access(ctx, m, name, CL_MEM_WRITE_ONLY);
}

attn_status attn_validate_writable(attn_context *ctx, cl_mem m, const char *name)
{
    return check_access(ctx, m, name, CL_MEM_READ_ONLY);
}
