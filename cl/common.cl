/* common.cl -- what both kernel families share: the storage types with their
 * loads and stores, tensor addressing, and the visibility rule (causal,
 * bottom-right aligned, with per-batch padding). Prepended to each family. */

#ifndef HEAD_DIM
#define HEAD_DIM 64      /* D, the head dimension (1..256) */
#endif
#ifndef STORAGE
#define STORAGE 0        /* storage type of Q, K, V, O: 0 f32, 1 f16, 2 bf16 (attn_dtype) */
#endif

#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f
/* The running max starts at -FLT_MAX/2, not -inf: a row that has seen only
 * masked keys then rescales by exp2(0) = 1 instead of computing inf - inf. */
#define MAX_INIT (-FLT_MAX / 2)
/* A masked logit. Finite on purpose: max() is undefined for infinities and
 * vendor compilers may assume finite math; exp2(MASKED - m) is still 0 for
 * any running max m >= MAX_INIT. */
#define MASKED (-FLT_MAX)
/* Before a loop of constant trip count that indexes a private array: on a
 * GPU (ATTN_GPU, which host/core/program.c defines there) fully unrolled,
 * so that the array's elements become registers; a GPU compiler that keeps
 * the loop leaves the array in the stack frame, off-chip (the tiled, flash
 * and mma families' accumulators at D 128 before: tools/check-ptx.sh prints
 * NVIDIA's stack frames). Not on a CPU, where private arrays live in cache
 * and the unrolled tiled decode took PoCL 24% longer to build. */
#ifdef ATTN_GPU
#define UNROLL _Pragma("unroll")
#else
#define UNROLL
#endif

#if STORAGE == 0
typedef float storage_t;
#define LOAD(p, i) ((p)[i])
#define STORE(p, i, x) ((p)[i] = (x))
#elif STORAGE == 1
/* half pointers are legal without cl_khr_fp16 for vload_half/vstore_half */
typedef half storage_t;
#define LOAD(p, i) vload_half((i), (p))
#define STORE(p, i, x) vstore_half_rte((x), (i), (p))
#elif STORAGE == 2
typedef ushort storage_t;
#define LOAD(p, i) as_float((uint)(p)[i] << 16)
#define STORE(p, i, x) ((p)[i] = bf16_from_float(x))
/* round to nearest even; a NaN stays a (quiet) NaN */
inline ushort bf16_from_float(float x)
{
    uint u = as_uint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}
#else
#error "STORAGE must be 0 (f32), 1 (f16) or 2 (bf16)"
#endif

/* A tensor's geometry as passed by the host: (offset, stride_batch,
 * stride_head, stride_seq), all in elements; the head dim is contiguous. */
inline ulong row_index(ulong4 g, int b, int h, int s)
{
    return g.s0 + (ulong)b * g.s1 + (ulong)h * g.s2 + (ulong)s * g.s3;
}

/* Per-batch lengths as int4 (q_start, q_len, kv_start, kv_len). Returns how
 * many keys (content indices 0..n-1) query buffer row r sees: 0 for a pad row
 * or a row the causal mask leaves empty. */
inline int visible_keys(int r, int4 len, int causal)
{
    int i = r - len.x;
    if (i < 0 || i >= len.y) return 0;
    int hi = causal ? min(len.w, i + len.w - len.y + 1) : len.w;
    return max(hi, 0);
}

/* The rows of one work-group's tile: row r is t = t0 + r, query i = t /
 * group of head h0 + t % group. Prefill passes group 1 (a tile is rows of
 * one head), decode the KV group (one K/V load serves every query head of
 * the group). The tile sees keys [j_lo, j_end): a split of the cache in
 * decode, all of them (0, INT_MAX) in prefill. */
typedef struct {
    int4 len; /* as visible_keys takes it */
    int t0, group, h0, sq, causal, j_lo, j_end;
} tile_rows;

/* How many keys tile row r sees, clamped to j_end (a row that sees no key
 * past j_lo is empty here: a pad row, one past sq, or one the causal mask
 * leaves before this split); sets its query index and head. */
inline int row_keys(tile_rows m, int r, int *i, int *h)
{
    const int t = m.t0 + r;
    *i = t / m.group;
    *h = m.h0 + t % m.group;
    return *i < m.sq ? min(visible_keys(*i, m.len, m.causal), m.j_end) : 0;
}

/* The batch entry whose part of a per-entry table holds item t: the last
 * b < n with first[b * stride] <= t, where first[b * stride] is where
 * entry b's items start (ascending; entry b holds [first[b * stride],
 * first[(b + 1) * stride]), the last one up to the table's end). A grid
 * over every entry's own items (the vector family's K/V blocks, a mask's
 * tiles) finds its entry with it in log2(n) steps. */
inline int entry_of(__global const ulong *first, int stride, int n, ulong t)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (first[(ulong)mid * stride] <= t) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* Where row (b, h, i)'s LSE goes: lse[(b * q_heads + h) * sq + i] */
inline ulong lse_index(int b, int q_heads, int sq, int h, int i)
{
    return ((ulong)b * q_heads + h) * sq + i;
}

/* *s += x, with the rounding error carried in *c (Kahan): the sum is *s - *c.
 * The kernels add each run of a few hundred keys' plain partial sum this
 * way, so that a row's error does not grow with its length. */
inline void kahan_add(float *s, float *c, float x)
{
    const float y = x - *c;
    const float t = *s + y;
    *c = (t - *s) - y;
    *s = t;
}

/* Key blocks (tiles) summed plainly before such a compensated fold: about
 * 512 keys. A plain sum of that many stays 20x inside the fp32 tolerance
 * (about 5e-6 relative with uniform weights: 256 keys gave 2.5e-6, 4096
 * gave 4e-5), and a fold costs the vector kernel about 1% at 512 keys, 2%
 * at 256. */
#define FOLD_BLOCKS (BLOCK_KEYS >= 512 ? 1 : 512 / BLOCK_KEYS)
