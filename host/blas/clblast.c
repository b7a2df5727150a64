/* clblast.c -- the f32 GEMMs of the CLBlast paths (the layer's projections;
 * the materialized attention, per head with K/V broadcast by offsets), with
 * CLBlast's status codes turned into attn_status and a message naming the
 * call. CLBlast tunes itself per device from its built-in database and
 * caches its compiled kernels per process. In a build without CLBlast
 * (ATTN_HAVE_CLBLAST 0, cmake/clblast.cmake) the paths refuse instead. */
#include "core/context.h"
#include "core/errors.h"
#include "blas/blas.h"
#include "core/launch.h"

#ifndef ATTN_HAVE_CLBLAST
#error "ATTN_HAVE_CLBLAST must be defined, 0 or 1 (cmake/clblast.cmake)"
#endif

int attn_has_clblast(void) { return ATTN_HAVE_CLBLAST; }

#if !ATTN_HAVE_CLBLAST
attn_status attn_clblast_required(attn_context *ctx)
{
    return ATTN_FAIL(ctx, ATTN_ERROR_UNSUPPORTED, "this build of attn has no CLBlast (configured "
                     "with ATTN_WITH_CLBLAST=OFF, or CLBlast was not found)");
}

void attn_clblast_release(attn_context *ctx) { (void)ctx; }

/* Never reached: every caller asks attn_clblast_required first. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
attn_status attn_sgemm(attn_context *ctx, int trans_b, size_t m, size_t n, size_t k, cl_mem a,
                       size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb, cl_mem c,
                       size_t c_off, size_t ldc, const char *what)
{
    return attn_clblast_required(ctx);
}

attn_status attn_sgemm_heads(attn_context *ctx, int trans_b, size_t m, size_t n, size_t k,
                             int hq, int hkv, cl_mem a, size_t a_off, size_t lda, size_t a_hs,
                             cl_mem b, size_t b_off, size_t ldb, size_t b_hs, cl_mem c,
                             size_t c_off, size_t ldc, size_t c_hs, const char *what)
{
    return attn_clblast_required(ctx);
}

attn_status attn_sgemm_temp_fits(attn_context *ctx, int trans_b, size_t m, size_t n, size_t k,
                                 const char *what)
{
    return attn_clblast_required(ctx);
}
#else
#include <clblast_c.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

attn_status attn_clblast_required(attn_context *ctx)
{
    (void)ctx;
    return ATTN_SUCCESS;
}

/* Live attn contexts that have called CLBlast. CLBlast's only way to let
 * go of a context's programs is to clear everything, so it waits for the
 * last of them (test_cl_faults: test_clblast_lets_go counted a program, and
 * so an OpenCL context, kept per released attn context). */
static pthread_mutex_t users_lock = PTHREAD_MUTEX_INITIALIZER;
static int users;

/* Under ctx's lock, as every CLBlast call is. */
static void note_user(attn_context *ctx)
{
    if (ctx->clblast_used) return;
    ctx->clblast_used = 1;
    pthread_mutex_lock(&users_lock);
    users++;
    pthread_mutex_unlock(&users_lock);
}

void attn_clblast_release(attn_context *ctx)
{
    if (!ctx->clblast_used) return;
    pthread_mutex_lock(&users_lock);
    /* in-flight commands keep their own references to the programs */
    if (--users == 0) CLBlastClearCache();
    pthread_mutex_unlock(&users_lock);
}

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

/* CLBlast's kernels take offsets and leading dimensions as int: every
 * element an operand reaches must have an index below 2^31. */
static attn_status indexable(attn_context *ctx, size_t off, size_t ld, size_t rows, size_t cols,
                             const char *operand, const char *what)
{
    const double last = (double)off + (double)ld * (double)(rows - 1) + (double)cols;
    ATTN_CHECK(ctx, last > (double)ATTN_CLBLAST_MAX_INDEX, ATTN_ERROR_UNSUPPORTED,
               "%s: operand %s reaches element %.0f; CLBlast indexes buffers with int (at most "
               "%d)", what, operand, last, ATTN_CLBLAST_MAX_INDEX);
    return ATTN_SUCCESS;
}

/* Row-major with a single row or column: CLBlast still wants ld >= the
 * row's length, although nothing is read through it. */
static size_t ld_at_least(size_t ld, size_t cols) { return ld < cols ? cols : ld; }

/* The GEMMs run on attn's own temporary buffer (ctx->mat[ATTN_MAT_GEMM_TEMP]).
 * CLBlast must never allocate: its Buffer constructor, when clCreateBuffer
 * fails, throws from the buffer's deleter while unwinding, and the C++
 * runtime aborts the whole process (CLBlast 1.5.3 and upstream; found by
 * test_cl_faults). Its batched GEMM always allocates (offsets and scalars),
 * so heads are separate calls. */

/* A temporary of `bytes` for `what`: within one allocation, and within
 * CLBlast's int indices (its padded copies sit one after another in it). */
static attn_status temp_allowed(attn_context *ctx, size_t bytes, const char *what)
{
    ATTN_CHECK(ctx, (cl_ulong)bytes > ctx->max_alloc, ATTN_ERROR_UNSUPPORTED,
               "%s: the GEMM's temporary (CLBlast's padded copies of its operands) needs %zu "
               "bytes, more than the device's max allocation of %llu bytes "
               "(CL_DEVICE_MAX_MEM_ALLOC_SIZE)", what, bytes, (unsigned long long)ctx->max_alloc);
    return indexable(ctx, 0, 0, 1, bytes / sizeof(float),
                     "the GEMM's temporary (CLBlast's padded copies of its operands)", what);
}

attn_status attn_sgemm_temp_fits(attn_context *ctx, int trans_b, size_t m, size_t n, size_t k,
                                 const char *what)
{
    if (m == 0 || n == 0) return ATTN_SUCCESS;
    note_user(ctx);
    /* offsets of 1: every operand copied, the most any GEMM of at most
     * these sizes takes (the copies are padded sizes, which grow with them) */
    size_t need = 0;
    CLBlastStatusCode r = CLBlastSGemmTempBufferSize(
        CLBlastLayoutRowMajor, CLBlastTransposeNo, trans_b ? CLBlastTransposeYes : CLBlastTransposeNo,
        m, n, k, 1, k, 1, trans_b ? k : n, 1, n, &ctx->queue, &need);
    if (r != CLBlastSuccess) return clblast_fail(ctx, r, "CLBlastSGemmTempBufferSize", what);
    return temp_allowed(ctx, need, what);
}

/* Reserves the temporary for GEMMs with any of the nsets offset sets
 * (A, B, C): CLBlast copies an operand only when its offset is not 0 (or
 * its shape needs padding), so the first and the last head bound every
 * head's need. */
static attn_status gemm_temp(attn_context *ctx, CLBlastTranspose tb, size_t m, size_t n, size_t k,
                             const size_t off[][3], int nsets, size_t lda, size_t ldb, size_t ldc,
                             const char *what, size_t *bytes)
{
    *bytes = 0;
    note_user(ctx);
    for (int i = 0; i < nsets; i++) {
        size_t need = 0;
        CLBlastStatusCode r = CLBlastSGemmTempBufferSize(
            CLBlastLayoutRowMajor, CLBlastTransposeNo, tb, m, n, k, off[i][0], lda, off[i][1],
            ldb, off[i][2], ldc, &ctx->queue, &need); /* bytes (CLBlast's clblast.cpp) */
        if (r != CLBlastSuccess) return clblast_fail(ctx, r, "CLBlastSGemmTempBufferSize", what);
        if (need > *bytes) *bytes = need;
    }
    attn_status st = temp_allowed(ctx, *bytes, what);
    if (st != ATTN_SUCCESS) return st;
    /* at least one byte: CLBlast wraps whatever it is given */
    return attn_scratch_reserve(ctx, &ctx->mat[ATTN_MAT_GEMM_TEMP], *bytes ? *bytes : 1);
}

/* One GEMM on the temporary gemm_temp reserved; with an out-of-order queue
 * a barrier first, since the previous GEMM may still use it. */
static attn_status gemm_with_temp(attn_context *ctx, CLBlastTranspose tb, size_t m, size_t n,
                                  size_t k, cl_mem a, size_t a_off, size_t lda, cl_mem b,
                                  size_t b_off, size_t ldb, cl_mem c, size_t c_off, size_t ldc,
                                  size_t bytes, const char *what)
{
    attn_status st;
    if (bytes && (st = attn_queue_order(ctx)) != ATTN_SUCCESS) return st;
    CLBlastStatusCode r = CLBlastSgemmWithTempBuffer(
        CLBlastLayoutRowMajor, CLBlastTransposeNo, tb, m, n, k, 1.0f, a, a_off, lda, b, b_off, ldb,
        0.0f, c, c_off, ldc, &ctx->queue, NULL, ctx->mat[ATTN_MAT_GEMM_TEMP].mem);
    return r == CLBlastSuccess ? ATTN_SUCCESS : clblast_fail(ctx, r, "CLBlastSgemm", what);
}

attn_status attn_sgemm(attn_context *ctx, int trans_b, size_t m, size_t n, size_t k, cl_mem a,
                       size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb, cl_mem c,
                       size_t c_off, size_t ldc, const char *what)
{
    if (m == 0 || n == 0) return ATTN_SUCCESS;
    if (m == 1) lda = ld_at_least(lda, k), ldc = ld_at_least(ldc, n);
    if ((trans_b ? n : k) == 1) ldb = ld_at_least(ldb, trans_b ? k : n);
    attn_status st;
    if ((st = indexable(ctx, a_off, lda, m, k, "A", what)) ||
        (st = indexable(ctx, b_off, ldb, trans_b ? n : k, trans_b ? k : n, "B", what)) ||
        (st = indexable(ctx, c_off, ldc, m, n, "C", what)))
        return st;
    const CLBlastTranspose tb = trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    const size_t off[1][3] = {{a_off, b_off, c_off}};
    size_t bytes;
    if ((st = gemm_temp(ctx, tb, m, n, k, off, 1, lda, ldb, ldc, what, &bytes))) return st;
    return gemm_with_temp(ctx, tb, m, n, k, a, a_off, lda, b, b_off, ldb, c, c_off, ldc, bytes,
                          what);
}

attn_status attn_sgemm_heads(attn_context *ctx, int trans_b, size_t m, size_t n, size_t k,
                             int hq, int hkv, cl_mem a, size_t a_off, size_t lda, size_t a_hs,
                             cl_mem b, size_t b_off, size_t ldb, size_t b_hs, cl_mem c,
                             size_t c_off, size_t ldc, size_t c_hs, const char *what)
{
    if (m == 0 || n == 0) return ATTN_SUCCESS;
    if (m == 1) lda = ld_at_least(lda, k), ldc = ld_at_least(ldc, n);
    if ((trans_b ? n : k) == 1) ldb = ld_at_least(ldb, trans_b ? k : n);
    const size_t group = (size_t)(hq / hkv), count = (size_t)hq;
    attn_status st;
    if ((st = indexable(ctx, a_off + (count - 1) * a_hs, lda, m, k, "A", what)) ||
        (st = indexable(ctx, b_off + (size_t)(hkv - 1) * b_hs, ldb, trans_b ? n : k,
                        trans_b ? k : n, "B", what)) ||
        (st = indexable(ctx, c_off + (count - 1) * c_hs, ldc, m, n, "C", what)))
        return st;
    /* One call per query head: head h reads KV head h / group through its
     * B offset, so K and V are broadcast, never copied. (Not CLBlast's
     * batched GEMMs: the offset-array one allocates, the comment above gemm_temp says
     * why that aborts; the strided one's indirect path ignores the offset
     * and stride of an operand it decides not to copy, which gave wrong
     * P V results at S = 4096 with GQA, CLBlast 1.5.3.) */
    const CLBlastTranspose tb = trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    const size_t last = count - 1, off[2][3] = {
        {a_off, b_off, c_off}, {a_off + last * a_hs, b_off + last / group * b_hs, c_off + last * c_hs}};
    size_t bytes;
    if ((st = gemm_temp(ctx, tb, m, n, k, off, count > 1 ? 2 : 1, lda, ldb, ldc, what, &bytes)))
        return st;
    for (size_t h = 0; h < count; h++)
        if ((st = gemm_with_temp(ctx, tb, m, n, k, a, a_off + h * a_hs, lda, b,
                                 b_off + h / group * b_hs, ldb, c, c_off + h * c_hs, ldc, bytes,
                                 what)))
            return st;
    return ATTN_SUCCESS;
}
#endif /* ATTN_HAVE_CLBLAST */
