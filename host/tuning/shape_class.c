/* shape_class.c -- the shape classes of the tuning database (length
 * buckets, variants, equality, distance between classes) and attn_problem_flops, the
 * one count of a forward's work that GFLOP/s figures divide by. */
#include "tuning/shape_class.h"
#include "core/context.h"
#include "attention/variants.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int attn_length_bucket(int n)
{
    if (n <= 1) return 1;
    long long p = 1;
    while (p * 2 <= n) p *= 2;
    /* nearest in log scale: n >= p * sqrt(2) rounds up */
    return (double)n * (double)n >= 2.0 * (double)p * (double)p ? (int)(p * 2) : (int)p;
}

void attn_shape_class_of(const attn_problem *p, attn_shape_class *c)
{
    memset(c, 0, sizeof *c);
    c->head_dim = p->head_dim;
    c->dtype = p->dtype;
    /* one query (bottom-right) sees every key either way: one class, so
     * that a non-causal decode finds the causal classes attn-tune makes */
    c->causal = p->causal != 0 || p->q_len == 1;
    c->group = p->kv_heads > 0 ? p->q_heads / p->kv_heads : 1;
    c->q_bucket = attn_length_bucket(p->q_len);
    c->kv_bucket = attn_length_bucket(p->kv_len);
    c->variants = attn_variant_flags(p);
}

void attn_decode_class_of(const attn_problem *p, int page_rows, int kv_int8,
                          attn_shape_class *c)
{
    attn_shape_class_of(p, c);
    c->decode = 1;
    c->kv_int8 = kv_int8 != 0;
    c->kv_block = page_rows > 0 ? page_rows : 0;
}

void attn_shape_class_format(const attn_shape_class *c, char *buf, size_t size)
{
    const char *t = attn_dtype_name(c->dtype);
    char v[96], block[24] = "";
    attn_variant_names(c->variants, v, sizeof v);
    if (c->kv_block) snprintf(block, sizeof block, " block%d", c->kv_block);
    snprintf(buf, size, "D%d %s %s g%d q%d kv%d%s%s%s%s%s", c->head_dim, t ? t : "?",
             c->causal ? "causal" : "full", c->group, c->q_bucket, c->kv_bucket,
             c->decode ? " decode" : "", c->kv_int8 ? " int8" : "", block, v[0] ? " +" : "", v);
}

int attn_variant_flags_parse(const char *names, unsigned *flags, char *err, size_t errsize)
{
    *flags = 0;
    for (const char *at = names; *at;) {
        const size_t n = strcspn(at, ",");
        unsigned bit = 0;
        char name[32];
        /* each bit's name as attn_variant_names spells it; "" past the last */
        for (unsigned i = 0; i < 32 && !bit; i++) {
            attn_variant_names(1u << i, name, sizeof name);
            if (!name[0]) break;
            if (strlen(name) == n && strncmp(name, at, n) == 0) bit = 1u << i;
        }
        if (!bit) {
            snprintf(err, errsize, "unknown variant \"%.*s\"", (int)n, at);
            return -1;
        }
        *flags |= bit;
        at += n + (at[n] == ',');
    }
    return 0;
}

int attn_shape_class_compare(const attn_shape_class *a, const attn_shape_class *b)
{
    const long x[] = {a->head_dim, a->dtype,   a->causal,  a->group,   a->q_bucket,
                      a->kv_bucket, a->decode, a->kv_int8, a->kv_block, (long)a->variants};
    const long y[] = {b->head_dim, b->dtype,   b->causal,  b->group,   b->q_bucket,
                      b->kv_bucket, b->decode, b->kv_int8, b->kv_block, (long)b->variants};
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
}

int attn_shape_class_equal(const attn_shape_class *a, const attn_shape_class *b)
{
    return attn_shape_class_compare(a, b) == 0;
}

/* |log2(a / b)| in half octaves */
static int octaves(int a, int b)
{
    return (int)lround(2.0 * fabs(log2((double)a / (double)b)));
}

int attn_shape_class_distance(const attn_shape_class *a, const attn_shape_class *b)
{
    if (a->head_dim != b->head_dim || a->dtype != b->dtype || a->causal != b->causal ||
        a->decode != b->decode || a->kv_int8 != b->kv_int8 || a->kv_block != b->kv_block ||
        a->variants != b->variants)
        return -1; /* a paged class's keys fit its block: no other block's (or contiguous) */
    if (a->group < 1 || b->group < 1 || a->q_bucket < 1 || b->q_bucket < 1 || a->kv_bucket < 1 ||
        b->kv_bucket < 1)
        return -1;
    return octaves(a->group, b->group) + octaves(a->q_bucket, b->q_bucket) +
           octaves(a->kv_bucket, b->kv_bucket);
}

/* Sum of max(0, a + s * i) over integers i in [lo, hi), in O(1): the
 * terms are positive on one side of the root of a linear function. */
static double positive_sum(double a, double s, long long lo, long long hi)
{
    if (s > 0) { /* positive from the first i with a + s * i >= 1 */
        const long long first = (long long)ceil((1 - a) / s);
        if (first > lo) lo = first;
    } else if (s < 0) { /* positive up to the last i with a + s * i >= 1 */
        const long long last = (long long)floor((1 - a) / s);
        if (last + 1 < hi) hi = last + 1;
    } else if (a < 1) {
        return 0;
    }
    if (hi <= lo) return 0;
    const double n = (double)(hi - lo);
    return n * a + s * (n * (double)lo + n * (n - 1) / 2); /* the terms' sum, all positive */
}

/* Visible (query, key) pairs of a batch entry with ql queries and kl keys:
 * query i sits at key position pos = i + kl - ql (bottom-right) and sees
 * keys max(0, pos - left) .. min(kl - 1, pos when causal, pos + right);
 * left / right < 0: unlimited on that side. The count per query is linear
 * in i between the points where a bound starts or stops binding, so it is
 * summed per stretch in closed form: O(1), whatever the lengths (a loop
 * over the queries took minutes on attn-bench's largest shapes). */
static double visible_pairs(long long ql, long long kl, int causal, long long left,
                            long long right)
{
    if (ql <= 0 || kl <= 0) return 0;
    if (!causal && left < 0 && right < 0) return (double)ql * (double)kl;
    const long long shift = kl - ql; /* pos = i + shift */
    /* where the bounds switch: pos - left = 0 (lo leaves 0), pos = kl - 1
     * (causal: hi reaches the last key), pos + right = kl - 1 */
    long long cuts[5] = {0, ql, ql, ql, ql};
    int n = 2;
    if (left >= 0) cuts[n++] = left - shift;
    if (causal) cuts[n++] = kl - 1 - shift;
    if (right >= 0) cuts[n++] = kl - 1 - right - shift;
    for (int i = 1; i < n; i++) /* sort (each stretch is clamped into [0, ql] below) */
        for (int j = i; j > 0 && cuts[j] < cuts[j - 1]; j--) {
            const long long t = cuts[j]; cuts[j] = cuts[j - 1]; cuts[j - 1] = t;
        }
    double pairs = 0;
    for (int c = 0; c + 1 < n; c++) {
        long long a = cuts[c] < 0 ? 0 : cuts[c] > ql ? ql : cuts[c];
        long long b = cuts[c + 1] < 0 ? 0 : cuts[c + 1] > ql ? ql : cuts[c + 1];
        if (b <= a) continue;
        /* on [a, b) each bound is one linear piece: read it at i = a */
        const long long pos = a + shift;
        const int lo_moves = left >= 0 && pos - left >= 0;
        long long hi = kl - 1;
        int hi_moves = 0;
        if (causal && pos < hi) hi = pos, hi_moves = 1;
        if (right >= 0 && pos + right < hi) hi = pos + right, hi_moves = 1;
        /* count(i) = hi(i) - lo(i) + 1 = value at a + slope * (i - a) */
        const double at_a = (double)hi - (double)(lo_moves ? pos - left : 0) + 1;
        const double slope = (double)hi_moves - (double)lo_moves;
        pairs += positive_sum(at_a - slope * (double)a, slope, a, b);
    }
    return pairs;
}

double attn_problem_flops(const attn_problem *p, const attn_lengths *lengths)
{
    if (!p || p->batch <= 0 || p->q_heads <= 0 || p->head_dim <= 0) return 0;
    const long long left = p->use_window ? p->window_left : -1;
    const long long right = p->use_window ? p->window_right : -1;
    double pairs = 0;
    for (int b = 0; b < p->batch; b++) {
        const int ql = lengths && lengths->q_len ? lengths->q_len[b] : p->q_len;
        const int kl = lengths && lengths->kv_len ? lengths->kv_len[b] : p->kv_len;
        pairs += visible_pairs(ql, kl, p->causal, left, right);
    }
    /* Q K^T and P V: a multiply and an add each per pair and head dim */
    return 4.0 * p->head_dim * pairs * p->q_heads;
}
