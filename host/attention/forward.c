/* forward.c -- attn_forward and attn_prepare: plan the parameters
 * (plan.c), fetch the program, set arguments, enqueue. */
#define _POSIX_C_SOURCE 200809L
#include "core/context.h"
#include "core/errors.h"
#include "core/launch.h"
#include "core/program.h"
#include "attention/validate.h"
#include "attention/decode.h"
#include "attention/forward.h"
#include "attention/check.h"
#include "attention/plan.h"
#include "attention/variants.h"
#include "kernels/kernel_desc.h"
#include "tuning/tuning.h"
#include "attention/mma_gate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The prefill program of pr's family; reading a KV cache (cache not NULL,
 * the vector family: attn_decode's long blocks), with the cache's layout
 * and its packing kernel (cl/kv_cache_rows.cl, cl/pack_cache.cl) joined
 * and the cache's -D options. */
static attn_status get_program(attn_context *ctx, const attn_params *pr, const attn_problem *p,
                               const attn_kv_cache *cache, cl_program *out)
{
    char opts[720];
    attn_params_options(pr, p, ATTN_ENTRY_PREFILL, opts, sizeof opts - 64); /* room for the cache's -D */
    attn_mma_options(ctx, pr->family, opts, sizeof opts);
    const char *const *family;
    const int nfamily = attn_family_sources(pr->family, ATTN_ENTRY_PREFILL, &family);
    if (!cache) return attn_program_get(ctx, family, nfamily, opts, out);
    attn_kv_cache_options(cache, opts, sizeof opts);
    const char *sources[ATTN_DESC_MAX_SOURCES + 2];
    for (int i = 0; i < nfamily; i++) sources[i] = family[i];
    sources[nfamily] = "kv_cache_rows.cl";
    sources[nfamily + 1] = "pack_cache.cl";
    return attn_program_get(ctx, sources, nfamily + 2, opts, out);
}

static attn_status get_kernel(attn_context *ctx, const attn_params *pr, const attn_problem *p,
                              const char *name, cl_kernel *out)
{
    cl_program prog;
    attn_status st = get_program(ctx, pr, p, NULL, &prog);
    if (st == ATTN_SUCCESS) st = attn_kernel_create(ctx, prog, name, out);
    return st;
}

/* Row blocks in the prefill grid's first dimension: the whole query
 * axis', or packed, the most that one entry's rows touch, counted from the
 * block holding its q_start (cl/vector.cl, cl/tiled.cl): B entries packed
 * along one axis would otherwise launch B times the axis' work-groups, all
 * but one entry's worth with nothing to do (32 sequences of 128 on PoCL:
 * 2.1 times the padded layout's time in the tiled family, now 1.0). */
static int row_blocks(const attn_problem *p, const attn_lengths *lengths, int block_rows)
{
    if (!p->packed) return (p->q_len + block_rows - 1) / block_rows;
    int most = 1; /* a grid of none is not allowed: one work-group finds nothing to do */
    for (int b = 0; b < p->batch; b++) {
        const attn_region r = attn_region_of(p, lengths, b);
        if (r.q_len > 0) {
            const int n = (r.q_start + r.q_len - 1) / block_rows - r.q_start / block_rows + 1;
            most = n > most ? n : most;
        }
    }
    return most;
}

/* The vector family's packed K/V room per batch entry (cl/vector.cl's
 * kv_head_start): entry b's key blocks are [table[b], table[b + 1]),
 * ceil(kv_len / block_keys) of them, so that the scratch follows the keys
 * the entries have, not B times the whole axis. A buffer made per call,
 * like lens; *total = table[B]. */
static attn_status kv_block_table(attn_context *ctx, const attn_problem *p,
                                  const attn_lengths *lengths, int block_keys, cl_mem *out,
                                  size_t *total)
{
    cl_ulong *table = malloc(sizeof *table * ((size_t)p->batch + 1));
    if (!table) return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    table[0] = 0;
    for (int b = 0; b < p->batch; b++) {
        const attn_region r = attn_region_of(p, lengths, b);
        table[b + 1] = table[b] + ((cl_ulong)r.kv_len + block_keys - 1) / block_keys;
    }
    *total = (size_t)table[p->batch];
    cl_int err;
    *out = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                          sizeof *table * ((size_t)p->batch + 1), table, &err);
    free(table);
    if (err != CL_SUCCESS) {
        *out = NULL;
        return attn_fail_cl(ctx, err, "clCreateBuffer (key blocks)");
    }
    return ATTN_SUCCESS;
}

attn_status attn_lengths_buffer(attn_context *ctx, const attn_problem *p,
                                const attn_lengths *lengths, cl_mem *out)
{
    cl_int4 *hl = malloc(sizeof *hl * (size_t)p->batch);
    if (!hl) return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int b = 0; b < p->batch; b++) {
        const attn_region r = attn_region_of(p, lengths, b);
        hl[b] = (cl_int4){{r.q_start, r.q_len, r.kv_start, r.kv_len}};
    }
    cl_int err;
    *out = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                          sizeof *hl * (size_t)p->batch, hl, &err);
    free(hl);
    if (err == CL_SUCCESS) return ATTN_SUCCESS;
    *out = NULL;
    return attn_fail_cl(ctx, err, "clCreateBuffer (lengths)");
}

/* Where the keys come from: tensors k and v, or (the vector family only)
 * a KV cache whose rows attn_pack_kv_cache packs. */
typedef struct kv_source {
    const attn_tensor *k, *v;
    attn_kv_cache *cache;
} kv_source;

/* The vector family's pre-pass: K and V packed into ctx->kt and ctx->vp
 * by attn_pack_kv from src's tensors or attn_pack_kv_cache from its cache;
 * *pack_k is the kernel, its arguments set. lens: the kernels' lengths. */
static attn_status pack_kernel(attn_context *ctx, cl_program prog, const kv_source *src,
                               cl_mem lens, cl_mem kv_blocks, cl_int hkv, cl_int entries,
                               cl_kernel *pack_k)
{
    const char *name = src->cache ? "attn_pack_kv_cache" : "attn_pack_kv";
    attn_status st = attn_kernel_create(ctx, prog, name, pack_k);
    if (st != ATTN_SUCCESS) return st;
    if (src->cache) {
        attn_kv_kernel_args ka;
        if ((st = attn_kv_kernel_args_of(src->cache, lens, &ka)) != ATTN_SUCCESS) return st;
        const attn_karg args[] = {ATTN_KV_KARGS(ka), ATTN_KARG(lens), ATTN_KARG(ctx->kt.mem),
                                  ATTN_KARG(ctx->vp.mem), ATTN_KARG(hkv), ATTN_KARG(kv_blocks),
                                  ATTN_KARG(entries)};
        return attn_kernel_set_args(ctx, *pack_k, args, ATTN_NARGS(args));
    }
    const cl_ulong4 kg = attn_tensor_geometry(src->k), vg = attn_tensor_geometry(src->v);
    const attn_karg args[] = {
        ATTN_KARG(src->k->buffer), ATTN_KARG(kg), ATTN_KARG(src->v->buffer), ATTN_KARG(vg),
        ATTN_KARG(lens), ATTN_KARG(ctx->kt.mem), ATTN_KARG(ctx->vp.mem), ATTN_KARG(hkv),
        ATTN_KARG(kv_blocks), ATTN_KARG(entries)};
    return attn_kernel_set_args(ctx, *pack_k, args, ATTN_NARGS(args));
}

static attn_status enqueue(attn_context *ctx, const attn_params *pr, const attn_problem *p,
                           const attn_tensor *q, const kv_source *src, const attn_tensor *o,
                           const attn_lengths *lengths, cl_mem lse, cl_event *finished_out)
{
    attn_status st;
    cl_kernel main_k = NULL, pack_k = NULL;
    cl_mem lens = NULL, kv_blocks = NULL;
    cl_event before[2] = {NULL, NULL}, finished = NULL; /* the pre-passes: K/V packing, mask tiles */
    attn_variant_args va;
    memset(&va, 0, sizeof va);

    if ((st = attn_lengths_buffer(ctx, p, lengths, &lens)) != ATTN_SUCCESS) return st;

    const cl_ulong4 qg = attn_tensor_geometry(q), og = attn_tensor_geometry(o);
    const cl_int write_lse = lse != NULL;
    cl_mem lse_arg = lse ? lse : lens; /* never written when write_lse is 0 */
    const cl_int hq = p->q_heads, hkv = p->kv_heads, sq = p->q_len, causal = p->causal != 0;
    const cl_float qscale = attn_variant_qscale(p);
    const int block_rows = attn_params_block_rows(pr);
    const cl_int nblk = row_blocks(p, lengths, block_rows);
    cl_program prog = NULL;

    /* An out-of-order queue would let these kernels overtake the writes of
     * their inputs, or a previous call still reading the scratch buffers. */
    if ((st = attn_queue_order(ctx)) != ATTN_SUCCESS) goto done;
    if (src->cache && pr->family != ATTN_FAMILY_VECTOR) { /* decode.c never asks */
        st = ATTN_FAIL(ctx, ATTN_ERROR_UNSUPPORTED, "internal: the %s family's prefill cannot "
                       "read a KV cache", attn_family_desc_of(pr->family)->name);
        goto done;
    }
    if ((st = get_program(ctx, pr, p, src->cache, &prog)) ||
        (st = attn_kernel_create(ctx, prog, attn_family_kernel(pr->family, ATTN_ENTRY_PREFILL),
                                 &main_k)) ||
        (st = attn_variant_args_make(ctx, p, lens, &va)) ||
        (st = attn_variant_mask_tiles(ctx, p, prog, lengths, lens, block_rows,
                                      pr->block_keys, &va, &before[1])))
        goto done;
    if (pr->family == ATTN_FAMILY_VECTOR) {
        size_t blocks = 0, bytes;
        if ((st = kv_block_table(ctx, p, lengths, pr->block_keys, &kv_blocks, &blocks)))
            goto done;
        const size_t dpad = (size_t)attn_params_padded_dim(pr, p->head_dim);
        /* an overflow asks for more than any device allows: refused below */
        const size_t per_block = (size_t)p->kv_heads * dpad * pr->block_keys * sizeof(float);
        if (__builtin_mul_overflow(per_block, blocks, &bytes)) bytes = SIZE_MAX;
        if ((st = attn_scratch_reserve(ctx, &ctx->kt, bytes)) != ATTN_SUCCESS ||
            (st = attn_scratch_reserve(ctx, &ctx->vp, bytes)) != ATTN_SUCCESS ||
            (st = pack_kernel(ctx, prog, src, lens, kv_blocks, hkv, p->batch, &pack_k)))
            goto done;
        const attn_karg main_args[] = {
            ATTN_KARG(q->buffer), ATTN_KARG(qg), ATTN_KARG(ctx->kt.mem), ATTN_KARG(ctx->vp.mem),
            ATTN_KARG(o->buffer), ATTN_KARG(og), ATTN_KARG(lse_arg), ATTN_KARG(write_lse),
            ATTN_KARG(lens), ATTN_KARG(hq), ATTN_KARG(hkv), ATTN_KARG(sq), ATTN_KARG(kv_blocks),
            ATTN_KARG(causal), ATTN_KARG(qscale), ATTN_KARG(nblk)};
        if ((st = attn_kernel_set_args(ctx, main_k, main_args, ATTN_NARGS(main_args))) ||
            (st = attn_kernel_set_args_at(ctx, main_k, ATTN_NARGS(main_args),
                                          attn_variant_kargs(&va), ATTN_VARIANT_NARGS)))
            goto done;
        /* every entry's own key blocks (none when no entry has keys) */
        const size_t pg[2] = {blocks, (size_t)hkv}, one[2] = {1, 1};
        if (blocks && (st = attn_kernel_enqueue(ctx, pack_k, 2, pg, one, 0, NULL, &before[0])))
            goto done;
    } else {
        const cl_ulong4 kg = attn_tensor_geometry(src->k), vg = attn_tensor_geometry(src->v);
        const attn_karg main_args[] = {
            ATTN_KARG(q->buffer), ATTN_KARG(qg), ATTN_KARG(src->k->buffer), ATTN_KARG(kg),
            ATTN_KARG(src->v->buffer), ATTN_KARG(vg), ATTN_KARG(o->buffer), ATTN_KARG(og),
            ATTN_KARG(lse_arg), ATTN_KARG(write_lse), ATTN_KARG(lens), ATTN_KARG(hq),
            ATTN_KARG(hkv), ATTN_KARG(sq), ATTN_KARG(causal), ATTN_KARG(qscale), ATTN_KARG(nblk)};
        if ((st = attn_kernel_set_args(ctx, main_k, main_args, ATTN_NARGS(main_args))) ||
            (st = attn_kernel_set_args_at(ctx, main_k, ATTN_NARGS(main_args),
                                          attn_variant_kargs(&va), ATTN_VARIANT_NARGS)))
            goto done;
    }
    /* global (nblk * work-group, Hq, B): a work-group per block of rows
     * (row_blocks) */
    const size_t wg = attn_params_work_group(pr);
    const size_t gl[3] = {(size_t)nblk * wg, (size_t)hq, (size_t)p->batch};
    const size_t lo[3] = {wg, 1, 1};
    cl_event wait[2];
    cl_uint nwait = 0;
    for (int i = 0; i < 2; i++)
        if (before[i]) wait[nwait++] = before[i];
    if ((st = attn_kernel_enqueue(ctx, main_k, 3, gl, lo, nwait, wait, &finished)) != ATTN_SUCCESS)
        goto done;
    *finished_out = finished;
    finished = NULL;
done:
    for (int i = 0; i < 2; i++)
        if (before[i]) clReleaseEvent(before[i]);
    attn_variant_args_release(&va);
    if (main_k) clReleaseKernel(main_k);
    if (pack_k) clReleaseKernel(pack_k);
    if (lens) clReleaseMemObject(lens); /* enqueued kernels keep them alive */
    if (kv_blocks) clReleaseMemObject(kv_blocks);
    return st;
}

attn_status attn_forward_locked(attn_context *ctx, const attn_problem *p, const attn_tensor *q,
                                const attn_tensor *k, const attn_tensor *v,
                                const attn_tensor *out, const attn_lengths *lengths, cl_mem lse,
                                cl_event *done)
{
    if (done) *done = NULL;
    attn_params pr;
    const char *source;
    attn_check_inputs *inputs = NULL;
    cl_event finished = NULL;
    attn_status st = attn_validate_forward(ctx, p, q, k, v, out, lengths, lse);
    if (st == ATTN_SUCCESS) st = attn_plan(ctx, ATTN_ENTRY_PREFILL, p, &pr, &source);
    /* check mode reads the inputs first: out may be q itself */
    if (st == ATTN_SUCCESS && ctx->check) st = attn_check_read_inputs(ctx, p, q, k, v, &inputs);
    const kv_source src = {k, v, NULL};
    if (st == ATTN_SUCCESS) st = enqueue(ctx, &pr, p, q, &src, out, lengths, lse, &finished);
    st = attn_check_finish(ctx, st, p, inputs, out, lengths, lse, finished, done);
    return st;
}

attn_status attn_forward_params(attn_context *ctx, const attn_params *pr, const attn_problem *p,
                                const attn_tensor *q, const attn_tensor *k, const attn_tensor *v,
                                const attn_tensor *out, cl_event *done)
{
    const kv_source src = {k, v, NULL};
    return enqueue(ctx, pr, p, q, &src, out, NULL, NULL, done);
}

attn_status attn_forward_cache_enqueue(attn_context *ctx, const attn_params *pr,
                                       const attn_problem *p, const attn_tensor *q,
                                       attn_kv_cache *cache, const attn_tensor *out,
                                       const attn_lengths *lengths, cl_mem lse, cl_event *done)
{
    const kv_source src = {NULL, NULL, cache};
    return enqueue(ctx, pr, p, q, &src, out, lengths, lse, done);
}

attn_status attn_forward_cache_prepare(attn_context *ctx, const attn_params *pr,
                                       const attn_problem *p, const attn_kv_cache *cache)
{
    cl_program prog;
    cl_kernel kern = NULL, pack = NULL;
    attn_status st = get_program(ctx, pr, p, cache, &prog);
    if (st == ATTN_SUCCESS)
        st = attn_kernel_create(ctx, prog, attn_family_kernel(pr->family, ATTN_ENTRY_PREFILL),
                                &kern);
    if (st == ATTN_SUCCESS) st = attn_kernel_create(ctx, prog, "attn_pack_kv_cache", &pack);
    if (kern) clReleaseKernel(kern);
    if (pack) clReleaseKernel(pack);
    return st;
}

attn_status attn_forward(attn_context *ctx, const attn_problem *p, const attn_tensor *q,
                         const attn_tensor *k, const attn_tensor *v, const attn_tensor *out,
                         const attn_lengths *lengths, cl_mem lse, cl_event *done)
{
    if (done) *done = NULL;
    if (!ctx) return attn_fail_null(__func__, "ctx");
    attn_call_begin(ctx, __func__);
    attn_status st = attn_forward_locked(ctx, p, q, k, v, out, lengths, lse, done);
    attn_call_end(ctx);
    return st;
}

attn_status attn_prepare(attn_context *ctx, const attn_problem *p, attn_plan_info *info)
{
    if (!ctx) return attn_fail_null(__func__, "ctx");
    attn_call_begin(ctx, __func__);
    attn_params pr;
    const char *source;
    cl_kernel kern = NULL;
    attn_status st = attn_validate_problem(ctx, p, NULL);
    if (st == ATTN_SUCCESS) st = attn_plan(ctx, ATTN_ENTRY_PREFILL, p, &pr, &source);
    if (st == ATTN_SUCCESS)
        st = get_kernel(ctx, &pr, p, attn_family_kernel(pr.family, ATTN_ENTRY_PREFILL), &kern);
    if (kern) clReleaseKernel(kern);
    if (st == ATTN_SUCCESS && info) {
        memset(info, 0, sizeof *info);
        snprintf(info->family, sizeof info->family, "%s", attn_family_desc_of(pr.family)->name);
        attn_params_format(&pr, info->params, sizeof info->params);
        snprintf(info->source, sizeof info->source, "%s", source);
        info->local_bytes = attn_params_local_bytes(&pr, p);
        info->private_bytes = attn_params_private_bytes(ATTN_ENTRY_PREFILL, &pr, p);
    }
    attn_call_end(ctx);
    return st;
}
