/* decode_common.cl -- what both decode kernels share, prepended to each
 * after common.cl: which query row a tile row is, how many keys it sees,
 * and the combine kernel that merges split-KV partial results by their LSEs
 * (flash-decoding's second step). */

#ifndef DIM_PAD
#define DIM_PAD (((HEAD_DIM) + 15) / 16 * 16) /* the cache's row stride (host: ATTN_KV_DIM_ALIGN) */
#endif
/* log2-domain LSE of a partial that saw no key: finite on purpose, as
 * MASKED in common.cl, and skipped by the combine */
#define EMPTY_LSE (-FLT_MAX)

/* A tile's rows are (new query i, query head g of the KV group) pairs,
 * t = i * group + g: one K/V load serves every query head of the group.
 * lens[b] = (new queries, keys in the cache including them). Returns the
 * number of keys row t sees (0 for a pad row) and its query row and head. */
inline int decode_row(int t, int group, int sq, int hk, int2 len, int causal, int *i, int *h)
{
    *i = t / group;
    *h = hk * group + t % group;
    if (t >= group * sq || *i >= len.x) return 0;
    return causal ? len.y - len.x + *i + 1 : len.y;
}

/* Global (HEAD_DIM, sq * q_heads, B). part_o is [row][split][DIM_PAD],
 * normalised per split; part_lse [row][split] in the log2 domain, EMPTY_LSE
 * for a split that saw no key (its O was not written). Row = (b * q_heads +
 * h) * sq + i. O = sum_s w_s O_s / sum_s w_s with w_s = exp2(lse_s - max). */
__kernel void attn_decode_combine(__global const float *part_o, __global const float *part_lse,
                                  int nsplit, __global storage_t *o, ulong4 og, __global float *lse,
                                  int write_lse, int q_heads, int sq)
{
    const int d = get_global_id(0), ih = get_global_id(1), b = get_global_id(2);
    const int i = ih % sq, h = ih / sq;
    const ulong row = ((ulong)b * q_heads + h) * sq + i;
    __global const float *pl = part_lse + row * nsplit;
    float m = EMPTY_LSE;
    for (int s = 0; s < nsplit; s++) m = max(m, pl[s]);
    float out = 0.0f, row_lse = -INFINITY;
    if (m > EMPTY_LSE) {
        float wsum = 0.0f, acc = 0.0f;
        for (int s = 0; s < nsplit; s++) {
            const float ls = pl[s];
            if (ls <= EMPTY_LSE) continue; /* its O was never written */
            const float w = exp2(ls - m);
            wsum += w;
            acc = mad(w, part_o[(row * nsplit + s) * DIM_PAD + d], acc);
        }
        out = acc / wsum;
        row_lse = (m + log2(wsum)) * LN2;
    }
    STORE(o, row_index(og, b, h, i) + d, out);
    if (write_lse && d == 0) lse[row] = row_lse;
}
