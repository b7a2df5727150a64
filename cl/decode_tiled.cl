/* decode_tiled.cl -- the GPU-style decode kernel: a work-group of WG_SIZE
 * work-items owns BLOCK_ROWS query rows that share one KV head (the group's
 * query heads x the new queries, so one K/V tile load serves them all) and
 * one chunk of the cache, and walks it in tiles of BLOCK_KEYS keys with an
 * online softmax, as tiled.cl. Unsplit it writes O and LSE; split, a
 * partial (normalised O, log2 LSE) for attn_decode_combine. */

#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8       /* query rows per work-group */
#endif
#ifndef BLOCK_KEYS
#define BLOCK_KEYS 32      /* keys per tile */
#endif
#ifndef WG_SIZE
#define WG_SIZE 128        /* work-items per work-group, a multiple of BLOCK_ROWS */
#endif
#ifndef LOCAL_KV
#define LOCAL_KV 1         /* 1: stage K/V tiles in __local; 0: read them from global */
#endif

#if WG_SIZE % BLOCK_ROWS
#error "WG_SIZE must be a multiple of BLOCK_ROWS"
#endif
#define TPR (WG_SIZE / BLOCK_ROWS)              /* work-items per query row */
#define DPT ((HEAD_DIM + TPR - 1) / TPR)        /* output columns per work-item */
/* local row stride: D rounded up to a float4, plus one float4 against bank conflicts */
#define DS (((HEAD_DIM + 3) / 4) * 4 + 4)

#if LOCAL_KV
inline float score(__local const float *qr, __local const float *kr)
{
    float acc = 0.0f;
    for (int d = 0; d < HEAD_DIM / 4; d++) acc += dot(vload4(d, qr), vload4(d, kr));
    for (int d = HEAD_DIM / 4 * 4; d < HEAD_DIM; d++) acc = mad(qr[d], kr[d], acc);
    return acc;
}
#else
inline float score(__local const float *qr, __global const storage_t *kr)
{
    float acc = 0.0f;
    for (int d = 0; d < HEAD_DIM; d++) acc = mad(qr[d], LOAD(kr, d), acc);
    return acc;
}
#endif

/* Global (nsplit * WG_SIZE, kv_heads * ntiles, B), local (WG_SIZE, 1, 1).
 * The cache is [B][kv_heads][head_rows][DIM_PAD]; split s covers keys
 * [s * chunk, (s + 1) * chunk), chunk a multiple of BLOCK_KEYS. */
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void attn_decode_tiled(__global const storage_t *q, ulong4 qg, __global const storage_t *kc,
                       __global const storage_t *vc, int head_rows, __global storage_t *o,
                       ulong4 og, __global float *lse, int write_lse, __global float *part_o,
                       __global float *part_lse, int nsplit, int chunk,
                       __global const int2 *lens, int q_heads, int kv_heads, int sq, int causal,
                       float qscale, int ntiles)
{
    __local float q_l[BLOCK_ROWS * DS];
    __local float s_l[BLOCK_ROWS * BLOCK_KEYS];
    /* l_l - lc_l: each row's softmax denominator, compensated (common.cl) */
    __local float m_l[BLOCK_ROWS], l_l[BLOCK_ROWS], lc_l[BLOCK_ROWS], a_l[BLOCK_ROWS];
#if LOCAL_KV
    __local float k_l[BLOCK_KEYS * DS];
    __local float v_l[BLOCK_KEYS * DS];
#endif
    const int tid = get_local_id(0);
    const int split = get_group_id(0);
    const int tile = get_global_id(1) % ntiles, hk = get_global_id(1) / ntiles;
    const int b = get_global_id(2);
    const int group = q_heads / kv_heads;
    const int2 len = lens[b];
    const int j_lo = split * chunk, j_end = j_lo + chunk;
    const ulong head = ((ulong)b * kv_heads + hk) * (ulong)head_rows * DIM_PAD;
    __global const storage_t *kh = kc + head;
    __global const storage_t *vh = vc + head;

    /* the work-group's key range in this split: up to the furthest row's limit */
    int hmax = j_lo, hmin = INT_MAX, qi, qh;
    for (int r = 0; r < BLOCK_ROWS; r++) {
        const int hr = min(decode_row(tile * BLOCK_ROWS + r, group, sq, hk, len, causal, &qi, &qh), j_end);
        if (hr > j_lo) {
            hmax = max(hmax, hr);
            hmin = min(hmin, hr);
        }
    }

    for (int i = tid; i < BLOCK_ROWS * HEAD_DIM; i += WG_SIZE) {
        const int r = i / HEAD_DIM, d = i % HEAD_DIM;
        const int hr = min(decode_row(tile * BLOCK_ROWS + r, group, sq, hk, len, causal, &qi, &qh), j_end);
        q_l[r * DS + d] = hr > j_lo ? LOAD(q, row_index(qg, b, qh, qi) + d) * qscale : 0.0f;
    }
    if (tid < BLOCK_ROWS) {
        m_l[tid] = MAX_INIT;
        l_l[tid] = lc_l[tid] = 0.0f;
    }
    const int row = tid / TPR, lane = tid % TPR;
    int my_i, my_h;
    const int my_hi = min(decode_row(tile * BLOCK_ROWS + row, group, sq, hk, len, causal, &my_i, &my_h), j_end);
    /* O: summed plainly over FOLD_BLOCKS tiles (acc), each fold added to a
     * compensated total (tot - cmp) */
    float acc[DPT], tot[DPT], cmp[DPT];
    for (int t = 0; t < DPT; t++) acc[t] = tot[t] = cmp[t] = 0.0f;
    int nfold = 0;
    /* the global fence orders the Q reads before any O write when out == q */
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);

    for (int j0 = j_lo; j0 < hmax; j0 += BLOCK_KEYS) {
        const int nk = min(BLOCK_KEYS, hmax - j0); /* keys of this tile inside the range */
#if LOCAL_KV
        for (int i = tid; i < BLOCK_KEYS * HEAD_DIM; i += WG_SIZE) {
            const int c = i / HEAD_DIM, d = i % HEAD_DIM;
            const int in = c < nk;
            const ulong at = (ulong)(j0 + c) * DIM_PAD + d;
            k_l[c * DS + d] = in ? LOAD(kh, at) : 0.0f;
            v_l[c * DS + d] = in ? LOAD(vh, at) : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
        const int need_mask = j0 + BLOCK_KEYS > hmin;
        for (int i = tid; i < BLOCK_ROWS * BLOCK_KEYS; i += WG_SIZE) {
            const int r = i / BLOCK_KEYS, c = i % BLOCK_KEYS;
            int hr = hmax;
            if (need_mask)
                hr = min(decode_row(tile * BLOCK_ROWS + r, group, sq, hk, len, causal, &qi, &qh), j_end);
            float s = MASKED;
            if (j0 + c < hr) {
#if LOCAL_KV
                s = score(q_l + r * DS, k_l + c * DS);
#else
                s = score(q_l + r * DS, kh + (ulong)(j0 + c) * DIM_PAD);
#endif
            }
            s_l[i] = s;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (tid < BLOCK_ROWS) { /* online softmax statistics, one row each */
            __local float *sr = s_l + tid * BLOCK_KEYS;
            float mb = sr[0];
            for (int c = 1; c < BLOCK_KEYS; c++) mb = max(mb, sr[c]);
            const float m_old = m_l[tid];
            const float m_new = max(m_old, mb);
            float sum = 0.0f;
            for (int c = 0; c < BLOCK_KEYS; c++) {
                const float e = exp2(sr[c] - m_new);
                sr[c] = e;
                sum += e;
            }
            const float alpha = exp2(m_old - m_new);
            a_l[tid] = alpha;
            float l = l_l[tid] * alpha, lc = lc_l[tid] * alpha;
            kahan_add(&l, &lc, sum);
            l_l[tid] = l;
            lc_l[tid] = lc;
            m_l[tid] = m_new;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const float alpha = a_l[row];
        if (alpha != 1.0f)
            for (int t = 0; t < DPT; t++) {
                acc[t] *= alpha;
                tot[t] *= alpha;
                cmp[t] *= alpha;
            }
        __local const float *pr = s_l + row * BLOCK_KEYS;
        /* only this row's visible keys: a masked key's weight is zero, but its
         * V row may hold inf or NaN (0 * inf = NaN) */
        const int nr = min(nk, my_hi - j0);
        for (int c = 0; c < nr; c++) {
            const float pc = pr[c];
#if LOCAL_KV
            __local const float *vr = v_l + c * DS;
            for (int t = 0; t < DPT; t++) {
                const int d = lane + t * TPR;
                if (d < HEAD_DIM) acc[t] = mad(pc, vr[d], acc[t]);
            }
#else
            __global const storage_t *vr = vh + (ulong)(j0 + c) * DIM_PAD;
            for (int t = 0; t < DPT; t++) {
                const int d = lane + t * TPR;
                if (d < HEAD_DIM) acc[t] = mad(pc, LOAD(vr, d), acc[t]);
            }
#endif
        }
        if (++nfold == FOLD_BLOCKS || j0 + BLOCK_KEYS >= hmax) {
            nfold = 0;
            for (int t = 0; t < DPT; t++) {
                kahan_add(&tot[t], &cmp[t], acc[t]);
                acc[t] = 0.0f;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* before the next tile overwrites s_l, k_l, v_l */
    }

    if (tile * BLOCK_ROWS + row >= group * sq) return;
    const float l = my_hi > j_lo ? l_l[row] - lc_l[row] : 0.0f;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    const ulong prow = ((ulong)b * q_heads + my_h) * sq + my_i;
    if (nsplit == 1) {
        const ulong orow = row_index(og, b, my_h, my_i);
        for (int t = 0; t < DPT; t++) {
            const int d = lane + t * TPR;
            if (d < HEAD_DIM) STORE(o, orow + d, l > 0.0f ? (tot[t] - cmp[t]) * inv : 0.0f);
        }
        if (write_lse && lane == 0) lse[prow] = l > 0.0f ? (m_l[row] + log2(l)) * LN2 : -INFINITY;
    } else {
        const ulong pr = prow * nsplit + split;
        if (l > 0.0f)
            for (int t = 0; t < DPT; t++) {
                const int d = lane + t * TPR;
                if (d < HEAD_DIM) part_o[pr * DIM_PAD + d] = (tot[t] - cmp[t]) * inv;
            }
        if (lane == 0) part_lse[pr] = l > 0.0f ? m_l[row] + log2(l) : EMPTY_LSE;
    }
}
