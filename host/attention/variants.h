/* variants.h -- the attention variants of attn_problem (sliding window,
 * softcap, sinks, ALiBi, additive mask, packed batches) as the host paths
 * hand them to the kernels (variants.c; the kernels' side is
 * cl/variants.cl): validation, the -D options, the arguments every main
 * kernel ends with, and the mask's per-tile summary for prefill. */
#ifndef ATTN_ATTENTION_VARIANTS_H
#define ATTN_ATTENTION_VARIANTS_H

#include "attn.h"
#include "core/launch.h"

/* Bits of the variants that change a kernel (the -D options and the tuning
 * database's shape class): a window, softcap, sinks, ALiBi, an f32 / f16
 * mask, packed sequences. */
enum {
    ATTN_VARIANT_WINDOW = 1,
    ATTN_VARIANT_SOFTCAP = 2,
    ATTN_VARIANT_SINKS = 4,
    ATTN_VARIANT_ALIBI = 8,
    ATTN_VARIANT_MASK_F32 = 16,
    ATTN_VARIANT_MASK_F16 = 32,
    ATTN_VARIANT_PACKED = 64,
};
unsigned attn_variant_flags(const attn_problem *p);
/* "window,softcap,..." for messages and the tuning database; "" for none */
void attn_variant_names(unsigned flags, char *buf, size_t size);

/* The variant fields of p: values, host arrays' presence, the sink and
 * mask buffers (context, size, reach). mask_q_len / mask_kv_len: the
 * mask's extent (the padded lengths; decode: q_len and the cache's
 * capacity). A failure names the field. */
attn_status attn_validate_variants(attn_context *ctx, const attn_problem *p);
/* attn_validate_variants without the buffers' own checks (no cl_mem is
 * read): the values, the host arrays' contents, the mask's dtype and
 * reach. ctx may be NULL (the thread's last error: the reference's). */
attn_status attn_validate_variant_values(attn_context *ctx, const attn_problem *p);

/* The mask's reach by its offset and strides over [batch][q_heads][q_len]
 * [kv_len], in *end: the bytes from its array's start past its last
 * element, of esize bytes each; ATTN_ERROR_INVALID_ARGUMENT naming p->mask
 * when that overflows size_t. */
attn_status attn_validate_mask_reach(attn_context *ctx, const attn_problem *p, size_t esize,
                                     size_t *end);

/* The bytes of p->mask.buffer the mask reaches, [*lo, *end), from its
 * offset, strides and dtype; 0 when they overflow size_t (which
 * attn_validate_variants refuses). */
int attn_mask_byte_span(const attn_problem *p, size_t *lo, size_t *end);

/* Appends " -DWINDOW=1 ..." for the variants p uses (nothing for none). */
void attn_variant_options(const attn_problem *p, char *buf, size_t size);

/* The logit scale Q is multiplied by before the kernels' dot products:
 * scale * log2(e), or scale / softcap when a softcap applies (the kernel
 * then computes softcap * log2(e) * tanh(q.k)). */
float attn_variant_qscale(const attn_problem *p);

/* The window's left limit as the kernels see it (var_win.x): -1 when p
 * has no window or it is unlimited on the left. */
int attn_variant_window_left(const attn_problem *p);

/* The values of cl/variants.cl's VARIANT_PARAMS for one call. Host arrays
 * (sinks, slopes) are uploaded into small buffers this struct owns; unused
 * pointers are bound to `placeholder` (never read). */
#define ATTN_VARIANT_NARGS 9
typedef struct attn_variant_args {
    cl_int2 win;
    cl_float cap;
    cl_mem sinks, slopes, mask;
    cl_ulong4 mg;
    cl_ulong mk;
    cl_mem tiles;
    cl_int4 mt;
    cl_mem owned[2]; /* uploads to release */
    attn_karg args[ATTN_VARIANT_NARGS];
} attn_variant_args;
attn_status attn_variant_args_make(attn_context *ctx, const attn_problem *p, cl_mem placeholder,
                                   attn_variant_args *va);
/* Fills va->args (pointing into va: va must not move afterwards) and
 * returns them. */
const attn_karg *attn_variant_kargs(attn_variant_args *va);
void attn_variant_args_release(attn_variant_args *va);

/* Prefill with a mask: runs attn_mask_tiles (cl/mask_tiles.cl) from
 * `program`'s kernels over the family's tiles (block_rows x block_keys)
 * into the context's scratch, and points va at the summary: each batch
 * entry's own row and key blocks, after a table of where they are
 * (cl/variants.cl's mask_tile); a mask with a version finds its summary in
 * the context's mask cache (mask_cache.h) or leaves it there. Nothing when
 * p has no mask. lengths and lens (its device copy) as the call's. *done
 * receives the event the main kernel must wait for (or NULL). */
attn_status attn_variant_mask_tiles(attn_context *ctx, const attn_problem *p, cl_program program,
                                    const attn_lengths *lengths, cl_mem lens, int block_rows,
                                    int block_keys, attn_variant_args *va, cl_event *done);

#endif /* ATTN_ATTENTION_VARIANTS_H */
