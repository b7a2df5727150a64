/* materialized.cl -- the materialized baseline's kernels between its CLBlast
 * GEMMs: each score row scaled, masked (causal bottom-right, padding, the
 * variants: window, softcap, ALiBi, additive mask, sinks) and soft-maxed in
 * fp32, then the output rows that no GEMM wrote. Prepended by common.cl
 * (STORAGE, LOAD, STORE, row_index, MAX_INIT, LOG2E, LN2) and variants.cl
 * (the variants, their -D flags and VARIANT_PARAMS). */

/* Largest local size attn_softmax_rows accepts (the host picks a power of two). */
#define SOFTMAX_MAX_WG 256
/* Floats per step along a row: explicit vectors become SIMD code on CPU
 * devices (PoCL: 3-4x over scalar steps at S = 1024), and cost nothing on GPUs. */
#define SVEC 8

inline float hmax8(float8 v)
{
    float4 a = max(v.lo, v.hi);
    float2 b = max(a.lo, a.hi);
    return max(b.x, b.y);
}

inline float hsum8(float8 v)
{
    float4 a = v.lo + v.hi;
    float2 b = a.lo + a.hi;
    return b.x + b.y;
}

/* The variants that change which keys a row sees or what their logits are:
 * their rows start with a pass that rewrites each logit in place (log2
 * domain, MASKED where dropped); the plain passes then run over it with
 * scale 1. Without them the kernel is exactly the plain one. */
#define ROW_VARIANTS (WINDOW || SOFTCAP || ALIBI || MASK)
#if !ROW_VARIANTS
#define HIDDEN(j) ((j) >= vis)
#else
#define HIDDEN(j) ((j) < lo || (j) >= vis)

/* The pass that makes row i's logits final (head h of batch entry b): keys
 * [from, lo), the first vector's keys before the window, become MASKED;
 * keys [lo, vis) q.k * qscale through variant_logit (softcap, ALiBi, mask).
 * One work-item per row (CPUs) runs a unit-stride loop, which the compiler
 * vectorizes, tanh included (PoCL, S = 1024 causal, 8 heads: the softcap
 * row kernel took 110-120 ms with a stride of the work-group size, 26 ms
 * so; the plain one 12-16 ms); wider groups (GPUs) interleave their keys,
 * neighbouring work-items on neighbouring keys. */
inline void rewrite_logits(variants va, __global float *row, int lo, int vis, int from,
                           float qscale, int4 len, int i, int h, int b)
{
    const int lid = get_local_id(0), wg = get_local_size(0);
    const int r = len.x + i, pos = row_pos(r, len);
    const float slope = row_slope(va, h);
    const ulong mrow = mask_row(va, b, h, r);
#define FINAL_LOGIT(j) variant_logit(va, row[j] * qscale, j, len.z + (j), pos, slope, mrow, 1)
    if (lid == 0)
        for (int j = from; j < lo; j++) row[j] = MASKED;
    if (wg == 1)
        for (int j = lo; j < vis; j++) row[j] = FINAL_LOGIT(j);
    else
        for (int j = lo + lid; j < vis; j += wg) row[j] = FINAL_LOGIT(j);
#undef FINAL_LOGIT
}
#endif

/* One work-group per score row. scores: one batch entry's [heads, m, n]
 * raw dot products q.k (row stride n) of query heads h0.., m = its q_len, n
 * = its kv_len (content rows and keys only; len is the entry's (q_start,
 * q_len, kv_start, kv_len) as common.cl takes it). Row i sees keys [lo, vis):
 * all n, or when causal those up to its bottom-right position, narrowed by
 * the window; the logit is q.k * qscale (attn_variant_qscale: log2 domain)
 * with the variants of cl/variants.cl. Overwrites the row with the
 * probabilities (the sink joins the denominator), exact zeros for keys not
 * seen (all zeros when nothing is visible), and writes the row's LSE
 * (natural log; -inf when there is neither key nor sink) at
 * variant_lse_index(b, q_heads, sq, h, q_start + i). Global (m * wg, heads),
 * local (wg, 1). */
__kernel void attn_softmax_rows(__global float *scores, int4 len, int causal, float qscale,
                                __global float *lse, int write_lse, int b, int h0, int q_heads,
                                int sq, VARIANT_PARAMS)
{
    VARIANTS(va);
    __local float red[SOFTMAX_MAX_WG];
    const int lid = get_local_id(0), wg = get_local_size(0);
    const int i = get_group_id(0), h = h0 + get_global_id(1);
    const int m = len.y, n = len.w;
    __global float *row = scores + ((ulong)get_global_id(1) * m + i) * n;
#if ROW_VARIANTS
    int lo;
    int vis = visible_span(len.x + i, len, causal, va.win, &lo);
    if (vis <= lo) lo = vis = 0;
    const int c0 = lo / SVEC; /* the first vector with a visible key */
    const float s = 1.0f;     /* the rewritten logits are final */
    rewrite_logits(va, row, lo, vis, c0 * SVEC, qscale, len, i, h, b);
    barrier(CLK_GLOBAL_MEM_FENCE); /* the row's new logits, seen by the whole group */
#else
    const int vis = causal ? clamp(i + n - m + 1, 0, n) : n;
    const int c0 = 0;
    const float s = qscale;
#endif
    /* whole vectors of visible keys, from c0 (nv >= c0 as vis >= lo); the
     * rest is work-item 0's */
    const int nv = vis / SVEC;
    float8 m8 = (float8)(MAX_INIT);
    for (int c = c0 + lid; c < nv; c += wg) m8 = max(m8, vload8(c, row) * s);
    float mx = hmax8(m8);
    if (lid == 0)
        for (int j = nv * SVEC; j < vis; j++) mx = max(mx, row[j] * s);
    red[lid] = mx;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = wg / 2; w > 0; w /= 2) {
        if (lid < w) red[lid] = max(red[lid], red[lid + w]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    mx = red[0];
    barrier(CLK_LOCAL_MEM_FENCE); /* everyone has read red[0] before it is reused */

    float8 s8 = (float8)(0.0f);
    for (int c = c0 + lid; c < nv; c += wg) s8 += exp2(vload8(c, row) * s - mx);
    float sum = hsum8(s8);
    if (lid == 0)
        for (int j = nv * SVEC; j < vis; j++) sum += exp2(row[j] * s - mx);
    red[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = wg / 2; w > 0; w /= 2) {
        if (lid < w) red[lid] += red[lid + w];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    sum = red[0];

#if ROW_VARIANTS || SINKS
    float lse_l2;
    const float inv = finish_row(va, h, mx, sum, 1, &lse_l2);
#else
    /* a NaN sum (a NaN or infinite logit, outside the contract) too: zeros
     * and -inf, as the other families give such a row */
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    const float lse_l2 = vis > 0 && sum > 0.0f ? mx + log2(sum) : -INFINITY;
#endif
    /* Every key of the row: hidden ones become exact zeros, and all of them
     * in a row of zero inverse; select drops whatever exp2 made of them
     * (inf, or NaN times a zero inverse). */
    const int8 lane = (int8)(0, 1, 2, 3, 4, 5, 6, 7);
    const int8 none = (int8)(-(inv == 0.0f));
    for (int c = lid; c < n / SVEC; c += wg) {
        const float8 p = exp2(vload8(c, row) * s - mx) * inv;
        vstore8(select(p, (float8)(0.0f), HIDDEN(c * SVEC + lane) | none), c, row);
    }
    if (lid == 0)
        for (int j = n / SVEC * SVEC; j < n; j++)
            row[j] = HIDDEN(j) || inv == 0.0f ? 0.0f : exp2(row[j] * s - mx) * inv;
    if (write_lse && lid == 0)
        lse[variant_lse_index(b, q_heads, sq, h, len.x + i)] = lse_l2 * LN2;
}

/* Finishes O after the GEMMs. A row is live when it lies in its batch
 * entry's [q_start, q_start + q_len), covered when live and kv_len > 0: the
 * P V GEMM wrote it (into src, contiguous f32 [src_batches, heads, sq, dim],
 * when src_batches > 0: one per entry, or one axis for every entry when
 * src_batches is 1; into o itself otherwise). Covered rows are copied from
 * src; every other row gets zeros in O and in LSE -inf (a live row with a
 * sink: the sink). Packed sequences: rows that are not live belong to
 * another entry and are left alone. Global (sq, heads, B). */
__kernel void attn_rows_out(__global const float *src, int src_batches, __global storage_t *o,
                            ulong4 og, __global const int4 *lens, __global float *lse,
                            int write_lse, int dim, VARIANT_PARAMS)
{
    VARIANTS(va);
    const int s = get_global_id(0), h = get_global_id(1), b = get_global_id(2);
    const int sq = get_global_size(0), heads = get_global_size(1);
    const int4 len = lens[b];
    const int live = s >= len.x && s < len.x + len.y, covered = live && len.w > 0;
    if (PACKED && !live) return;
    const ulong orow = row_index(og, b, h, s);
    if (!covered) {
        for (int d = 0; d < dim; d++) STORE(o, orow + d, 0.0f);
        float lse_l2;
        finish_row(va, h, MAX_INIT, 0.0f, live, &lse_l2);
        if (write_lse) lse[variant_lse_index(b, heads, sq, h, s)] = lse_l2 * LN2;
    } else if (src_batches > 0) {
        const ulong from = (((ulong)(src_batches > 1 ? b : 0) * heads + h) * sq + s) * dim;
        for (int d = 0; d < dim; d++) STORE(o, orow + d, src[from + d]);
    }
}
