/* blas.h -- what the CLBlast paths (materialized attention, the layer)
 * share: device conversions to and from f32 and the GEMMs. */
#ifndef ATTN_BLAS_BLAS_H
#define ATTN_BLAS_BLAS_H

#include "attn.h"


/* ---- the CLBlast paths: materialized attention and the layer ---- */
/* Device conversions (device_convert.c): n elements of storage type t at
 * element offset off to f32 and back; a strided tensor into contiguous f32. */
attn_status attn_device_to_f32(attn_context *ctx, attn_dtype t, cl_mem src, size_t off,
                               cl_mem dst, size_t n);
attn_status attn_device_from_f32(attn_context *ctx, attn_dtype t, cl_mem src, cl_mem dst,
                                 size_t off, size_t n);
attn_status attn_device_gather_f32(attn_context *ctx, attn_dtype t, const attn_tensor *src,
                                   int batch, int heads, int seq, int dim, cl_mem dst);
/* ATTN_SUCCESS in a build with CLBlast; otherwise ATTN_ERROR_UNSUPPORTED
 * saying the build has none (clblast.c). The CLBlast paths ask it after
 * validating their arguments, before any work. */
attn_status attn_clblast_required(attn_context *ctx);
/* At attn_context_release: CLBlast keeps the programs it compiled for an
 * OpenCL context for the life of the process, and they keep that context
 * alive; when the last attn context that called CLBlast goes, its caches
 * are cleared (CLBlastClearCache), so that creating and releasing contexts
 * does not pile up released contexts. Nothing in a build without CLBlast. */
void attn_clblast_release(attn_context *ctx);
/* CLBlast indexes buffers with int: the largest element index it can reach. */
#define ATTN_CLBLAST_MAX_INDEX 0x7fffffff
/* f32 GEMMs through CLBlast, row-major (clblast.c): C[m,n] = A[m,k] op(B),
 * op(B) = B[k,n] or, when trans_b, B[n,k]^T. Failures name `what`. */
attn_status attn_sgemm(attn_context *ctx, int trans_b, size_t m, size_t n, size_t k, cl_mem a,
                       size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb, cl_mem c,
                       size_t c_off, size_t ldc, const char *what);
/* Whether the temporary of any such GEMM of at most m x n x k (every
 * operand copied and padded by CLBlast) fits one allocation and CLBlast's
 * int indices: ATTN_ERROR_UNSUPPORTED naming `what` if not. For refusing
 * before any work; attn_sgemm* check their own as well. */
attn_status attn_sgemm_temp_fits(attn_context *ctx, int trans_b, size_t m, size_t n, size_t k,
                                 const char *what);
/* The same for every query head h < hq: A and C advance by a_hs and c_hs
 * per query head, B by b_hs per KV head h / (hq / hkv); a GEMM per head on
 * one temporary buffer, K/V broadcast by offsets (never copied). */
attn_status attn_sgemm_heads(attn_context *ctx, int trans_b, size_t m, size_t n, size_t k,
                             int hq, int hkv, cl_mem a, size_t a_off, size_t lda, size_t a_hs,
                             cl_mem b, size_t b_off, size_t ldb, size_t b_hs, cl_mem c,
                             size_t c_off, size_t ldc, size_t c_hs, const char *what);

#endif /* ATTN_BLAS_BLAS_H */
