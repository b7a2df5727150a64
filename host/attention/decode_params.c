/* decode_params.c -- the decode tunables' built-in values: the kernel family
 * and tile by device type, and how many chunks (splits) the KV range is
 * cut into so that a few long sequences still fill the device. */
#include "attention/decode.h"

attn_params attn_decode_params_heuristic(const attn_device_limits *dev, const attn_problem *p)
{
    /* the tile's rows are the KV group's query heads x the new queries: one
     * K/V load serves them all; a power of two, capped */
    const int need = p->q_heads / p->kv_heads * p->q_len;
    if (dev->mma && need >= ATTN_MMA_DECODE_ROWS && attn_params_mma_suits(p)) {
        /* the tensor cores (plan.c asks only where mma_gate.c verified
         * them): as few warps of 16 rows as hold the rows, so that a tile
         * is not mostly padding; the splits fill the device */
        attn_params pr = attn_params_defaults(ATTN_FAMILY_MMA);
        int warps = 1;
        while (warps < pr.mma_warps && 16 * pr.mma_mtiles * warps < need) warps *= 2;
        pr.mma_warps = warps;
        attn_params_fit(ATTN_ENTRY_DECODE, &pr, dev, p);
        return pr;
    }
    int rows = 1;
    while (rows < need && rows < 8) rows *= 2;
    /* a CPU: one work-item streams its K/V rows with float16 vectors (the
     * vector family's structure, DESIGN.md) */
    attn_params pr = attn_params_defaults(dev->type & CL_DEVICE_TYPE_CPU ? ATTN_FAMILY_VECTOR
                                                                          : ATTN_FAMILY_TILED);
    pr.block_rows = rows;
    if (pr.family == ATTN_FAMILY_VECTOR) return pr;
    /* GPU-style: llama.cpp's decode starting point is one query row per
     * group and 64-key blocks; with GQA the group's heads are the rows */
    if (p->head_dim > 128) pr.block_keys = 16;
    attn_params_fit(ATTN_ENTRY_DECODE, &pr, dev, p);
    return pr;
}

int attn_decode_auto_splits(const attn_device_limits *dev, int items, int max_len,
                            size_t key_bytes)
{
    const long cus = dev->compute_units ? dev->compute_units : 1;
    const int cpu = (dev->type & CL_DEVICE_TYPE_CPU) != 0;
    /* Work-groups wanted. A GPU: four per compute unit, each chunk at least
     * ATTN_DECODE_MIN_CHUNK keys. llama.cpp splits below two per compute
     * unit, but on the H200 (132 compute units; B=4 Hkv=8 kv 16384, f32)
     * two per unit gave 9 splits and 938 GB/s of K/V, forcing 16 gave 1286
     * GB/s (issue 11): a work-group streaming keys needs more company than
     * one that computes to hide memory latency.
     * A CPU: one per core (PoCL runs a work-group on one thread, which
     * streams its rows at a core's full rate), and each chunk at least
     * ATTN_DECODE_MIN_CHUNK_BYTES of K and V: the combine is one more
     * kernel launch, measured at about 40 us on PoCL, about what a core
     * streams in 0.6 MiB. */
    const long want = cpu ? cus : 4 * cus;
    if (items <= 0 || items >= want) return 1;
    long splits = (want + items - 1) / items;
    long most = cpu ? (long)((double)max_len * (double)key_bytes / ATTN_DECODE_MIN_CHUNK_BYTES)
                    : max_len / ATTN_DECODE_MIN_CHUNK;
    if (splits > most) splits = most;
    if (splits > 64) splits = 64;
    return splits < 1 ? 1 : (int)splits;
}
