/* materialized.cl -- the materialized baseline's kernels between its CLBlast
 * GEMMs: each score row scaled, masked (causal bottom-right, padding) and
 * soft-maxed in fp32, then the output rows that no GEMM wrote. Prepended by
 * common.cl (STORAGE, LOAD, STORE, row_index, MAX_INIT, LOG2E, LN2). */

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

/* One work-group per score row. scores: one batch entry's [heads, m, n]
 * logits (row stride n), m = its q_len, n = its kv_len (content rows and keys
 * only). Row i sees keys j < vis(i): all n, or when causal n - m + 1 + i
 * (bottom-right aligned). Overwrites the row with the probabilities, exact
 * zeros for masked keys (all zeros when nothing is visible), and writes the
 * row's LSE (natural log, -inf when empty) to
 * lse[(lse_head0 + h) * sq + q_start + i]. Global (m * wg, heads), local (wg, 1). */
__kernel void attn_softmax_rows(__global float *scores, int m, int n, int causal,
                                float scale_log2e, __global float *lse, int write_lse,
                                int lse_head0, int sq, int q_start)
{
    __local float red[SOFTMAX_MAX_WG];
    const int lid = get_local_id(0), wg = get_local_size(0);
    const int i = get_group_id(0), h = get_global_id(1);
    __global float *row = scores + ((ulong)h * m + i) * n;
    const int vis = causal ? clamp(i + n - m + 1, 0, n) : n;
    const int nv = vis / SVEC; /* whole vectors of visible keys; the rest is work-item 0's */
    const float s = scale_log2e;

    float8 m8 = (float8)(MAX_INIT);
    for (int c = lid; c < nv; c += wg) m8 = max(m8, vload8(c, row) * s);
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
    for (int c = lid; c < nv; c += wg) s8 += exp2(vload8(c, row) * s - mx);
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

    /* Every key of the row: masked ones (j >= vis) become exact zeros; select
     * drops whatever exp2 made of them (inf, or NaN times a zero inverse). */
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    const int8 lane = (int8)(0, 1, 2, 3, 4, 5, 6, 7);
    for (int c = lid; c < n / SVEC; c += wg) {
        const float8 p = exp2(vload8(c, row) * s - mx) * inv;
        vstore8(select(p, (float8)(0.0f), c * SVEC + lane >= vis), c, row);
    }
    if (lid == 0)
        for (int j = n / SVEC * SVEC; j < n; j++)
            row[j] = j < vis ? exp2(row[j] * s - mx) * inv : 0.0f;
    if (write_lse && lid == 0)
        lse[(ulong)(lse_head0 + h) * sq + q_start + i] = vis > 0 ? (mx + log2(sum)) * LN2 : -INFINITY;
}

/* Finishes O after the GEMMs. A row is covered when its batch entry has
 * q_len > 0 and kv_len > 0 and the row lies in [q_start, q_start + q_len):
 * the P V GEMM wrote it (into src, contiguous f32 [B, heads, sq, dim], when
 * has_src; into o itself otherwise). Covered rows are copied from src when
 * has_src; every other row gets zeros in O and -inf in LSE. Global (sq, heads, B). */
__kernel void attn_rows_out(__global const float *src, int has_src, __global storage_t *o,
                            ulong4 og, __global const int4 *lens, __global float *lse,
                            int write_lse, int dim)
{
    const int s = get_global_id(0), h = get_global_id(1), b = get_global_id(2);
    const int sq = get_global_size(0), heads = get_global_size(1);
    const int4 len = lens[b];
    const int covered = len.y > 0 && len.w > 0 && s >= len.x && s < len.x + len.y;
    const ulong orow = row_index(og, b, h, s);
    if (!covered) {
        for (int d = 0; d < dim; d++) STORE(o, orow + d, 0.0f);
        if (write_lse) lse[((ulong)b * heads + h) * sq + s] = -INFINITY;
    } else if (has_src) {
        const ulong from = (((ulong)b * heads + h) * sq + s) * dim;
        for (int d = 0; d < dim; d++) STORE(o, orow + d, src[from + d]);
    }
}
