/* pack_cache.cl -- the vector family's K/V pre-pass (vector.cl's
 * attn_pack_kv) reading a KV cache instead of k and v tensors: attn_decode
 * with a long block of queries (chunked prefill) packs each sequence's
 * keys from the cache, contiguous or paged (kv_cache_rows.cl's cache_row),
 * int8 rows times their scales, and then runs attn_fwd_vector unchanged.
 * Joined after kv_cache_rows.cl and vector.cl. */

/* Global (every entry's key blocks: kv_blocks[entries], Hkv), one
 * work-item per key block, as attn_pack_kv. lens as attn_fwd_vector's: a
 * cache's sequence b holds keys 0..lens[b].w - 1 (kv_start 0). A key's row
 * is looked up per key: the block of BLOCK_KEYS keys may cross a page. */
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void attn_pack_kv_cache(KV_CACHE_PARAMS, __global const int4 *lens, __global float *kt,
                        __global float *vp, int kv_heads, __global const ulong *kv_blocks,
                        int entries)
{
    const ulong g = get_global_id(0);
    const int hk = get_global_id(1), b = entry_of(kv_blocks, 1, entries, g);
    const int len = lens[b].w;
    const int j0 = (int)(g - kv_blocks[b]) * BLOCK_KEYS;
    const ulong start = kv_head_start(kv_blocks, b, hk, kv_heads) * HEAD_DIM_PAD;
    __global float *ktb = kt + start, *vpb = vp + start;
    for (int c = 0; c < BLOCK_KEYS; c++) {
        const int valid = j0 + c < len;
        const ulong row = valid ? cache_row(pages, max_pages, head_rows, kv_heads, b, hk, j0 + c) : 0;
#ifdef KV_INT8
        const float ks = valid ? kscale[row] : 0.0f, vs = valid ? vscale[row] : 0.0f;
#else
        const float ks = 1.0f, vs = 1.0f;
#endif
        __global const cache_t *kr = kc + row * DIM_PAD, *vr = vc + row * DIM_PAD;
        for (int d = 0; d < HEAD_DIM_PAD; d++) {
            const int in = valid && d < HEAD_DIM;
            pack_store(ktb, vpb, j0, c, d, in ? KV_LOAD(kr, d) * ks : 0.0f,
                       in ? KV_LOAD(vr, d) * vs : 0.0f);
        }
    }
}
