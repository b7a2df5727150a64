/* clblast.c -- the f32 GEMMs of the CLBlast paths (the layer's projections,
 * the materialized attention), with CLBlast's status codes turned into
 * attn_status and a message naming the call. CLBlast tunes itself per device
 * from its built-in database and caches its compiled kernels per process. */
#include "internal.h"

#include <clblast_c.h>
#include <stdio.h>

static const char *clblast_name(CLBlastStatusCode c)
{
    switch (c) {
#define E(x) case CLBlast##x: return "CLBlast" #x;
    E(Success) E(OpenCLCompilerNotAvailable) E(TempBufferAllocFailure) E(OpenCLOutOfResources)
    E(OpenCLOutOfHostMemory) E(OpenCLBuildProgramFailure) E(InvalidValue)
    E(InvalidCommandQueue) E(InvalidMemObject) E(InvalidBinary) E(InvalidBuildOptions)
    E(InvalidProgram) E(InvalidProgramExecutable) E(InvalidKernelName) E(InvalidKernel)
    E(InvalidLocalThreadsTotal) E(InvalidEvent) E(InvalidOperation) E(InvalidBufferSize)
    E(InvalidGlobalWorkSize) E(NotImplemented) E(InvalidMatrixA) E(InvalidMatrixB)
    E(InvalidMatrixC) E(InvalidDimension) E(InvalidLeadDimA) E(InvalidLeadDimB)
    E(InvalidLeadDimC) E(InsufficientMemoryA) E(InsufficientMemoryB) E(InsufficientMemoryC)
    E(InsufficientMemoryTemp) E(InvalidBatchCount) E(InvalidLocalMemUsage)
    E(NoHalfPrecision) E(NoDoublePrecision) E(DatabaseError) E(UnknownError)
    E(UnexpectedError)
#undef E
    default: return "CLBlast status";
    }
}

static attn_status clblast_fail(attn_context *ctx, CLBlastStatusCode c, const char *call,
                                const char *what)
{
    attn_status s = ATTN_ERROR_OPENCL;
    if (c == CLBlastTempBufferAllocFailure || c == CLBlastOpenCLOutOfResources ||
        c == CLBlastOpenCLOutOfHostMemory)
        s = ATTN_ERROR_OUT_OF_MEMORY;
    else if (c == CLBlastOpenCLBuildProgramFailure)
        s = ATTN_ERROR_BUILD;
    else if (c == CLBlastNoHalfPrecision || c == CLBlastNoDoublePrecision ||
             c == CLBlastInvalidLocalMemUsage || c == CLBlastNotImplemented)
        s = ATTN_ERROR_UNSUPPORTED;
    return ATTN_FAIL(ctx, s, "%s (%s) failed: %s (%d)", call, what, clblast_name(c), (int)c);
}

/* CLBlast's kernels take offsets, leading dimensions and strides as int:
 * every element an operand reaches must have an index below 2^31. */
static attn_status indexable(attn_context *ctx, size_t off, size_t ld, size_t rows, size_t cols,
                             size_t stride, size_t count, const char *operand, const char *what)
{
    const double last = (double)off + (double)ld * (double)(rows - 1) + (double)cols +
                        (double)stride * (double)(count - 1);
    ATTN_CHECK(ctx, last > (double)ATTN_CLBLAST_MAX_INDEX, ATTN_ERROR_UNSUPPORTED,
               "%s: operand %s reaches element %.0f; CLBlast indexes buffers with int (at most "
               "%d)", what, operand, last, ATTN_CLBLAST_MAX_INDEX);
    return ATTN_SUCCESS;
}

/* Row-major with a single row or column: CLBlast still wants ld >= the
 * row's length, although nothing is read through it. */
static size_t ld_at_least(size_t ld, size_t cols) { return ld < cols ? cols : ld; }

attn_status attn_sgemm(attn_context *ctx, int trans_b, size_t m, size_t n, size_t k, cl_mem a,
                       size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb, cl_mem c,
                       size_t c_off, size_t ldc, const char *what)
{
    if (m == 0 || n == 0) return ATTN_SUCCESS;
    if (m == 1) lda = ld_at_least(lda, k), ldc = ld_at_least(ldc, n);
    if ((trans_b ? n : k) == 1) ldb = ld_at_least(ldb, trans_b ? k : n);
    attn_status st;
    if ((st = indexable(ctx, a_off, lda, m, k, 0, 1, "A", what)) ||
        (st = indexable(ctx, b_off, ldb, trans_b ? n : k, trans_b ? k : n, 0, 1, "B", what)) ||
        (st = indexable(ctx, c_off, ldc, m, n, 0, 1, "C", what)))
        return st;
    CLBlastStatusCode r = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                                       trans_b ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k,
                                       1.0f, a, a_off, lda, b, b_off, ldb, 0.0f, c, c_off, ldc,
                                       &ctx->queue, NULL);
    return r == CLBlastSuccess ? ATTN_SUCCESS : clblast_fail(ctx, r, "CLBlastSgemm", what);
}

static attn_status batched(attn_context *ctx, int trans_b, size_t m, size_t n, size_t k,
                           cl_mem a, size_t a_off, size_t lda, size_t a_st, cl_mem b,
                           size_t b_off, size_t ldb, size_t b_st, cl_mem c, size_t c_off,
                           size_t ldc, size_t c_st, size_t count, const char *what)
{
    attn_status st;
    if ((st = indexable(ctx, a_off, lda, m, k, a_st, count, "A", what)) ||
        (st = indexable(ctx, b_off, ldb, trans_b ? n : k, trans_b ? k : n, b_st, count, "B",
                        what)) ||
        (st = indexable(ctx, c_off, ldc, m, n, c_st, count, "C", what)))
        return st;
    CLBlastStatusCode r = CLBlastSgemmStridedBatched(
        CLBlastLayoutRowMajor, CLBlastTransposeNo,
        trans_b ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k, 1.0f, a, a_off, lda, a_st, b,
        b_off, ldb, b_st, 0.0f, c, c_off, ldc, c_st, count, &ctx->queue, NULL);
    return r == CLBlastSuccess ? ATTN_SUCCESS
                               : clblast_fail(ctx, r, "CLBlastSgemmStridedBatched", what);
}

attn_status attn_sgemm_heads(attn_context *ctx, int trans_b, size_t m, size_t n, size_t k,
                             int hq, int hkv, cl_mem a, size_t a_off, size_t lda, size_t a_hs,
                             cl_mem b, size_t b_off, size_t ldb, size_t b_hs, cl_mem c,
                             size_t c_off, size_t ldc, size_t c_hs, const char *what)
{
    if (m == 0 || n == 0) return ATTN_SUCCESS;
    if (m == 1) lda = ld_at_least(lda, k), ldc = ld_at_least(ldc, n);
    if ((trans_b ? n : k) == 1) ldb = ld_at_least(ldb, trans_b ? k : n);
    const size_t group = (size_t)(hq / hkv);
    attn_status st = ATTN_SUCCESS;
    /* A strided batch has one stride per operand, and query head h reads KV
     * head h / group: either one call per group member g, batched over the
     * KV heads (query heads g, g + group, ...), or one call per KV head,
     * batched over its group with B's stride 0. Whichever makes fewer calls. */
    if ((size_t)hkv >= group) {
        for (size_t g = 0; g < group && st == ATTN_SUCCESS; g++)
            st = batched(ctx, trans_b, m, n, k, a, a_off + g * a_hs, lda, group * a_hs, b, b_off,
                         ldb, b_hs, c, c_off + g * c_hs, ldc, group * c_hs, (size_t)hkv, what);
    } else {
        for (size_t hk = 0; hk < (size_t)hkv && st == ATTN_SUCCESS; hk++)
            st = batched(ctx, trans_b, m, n, k, a, a_off + hk * group * a_hs, lda, a_hs, b,
                         b_off + hk * b_hs, ldb, 0, c, c_off + hk * group * c_hs, ldc, c_hs, group,
                         what);
    }
    return st;
}
