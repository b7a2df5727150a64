/* program.c -- builds OpenCL programs from cl/ sources, remembered per
 * context and on disk under a key of source, options, device and driver. */
#define _POSIX_C_SOURCE 200809L
#include "core/context.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/hash.h"
#include "core/program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Concatenates the named sources, each preceded by a #line so that build
 * logs point at the right file. NULL with *st (ctx's error set) on failure. */
static char *join_sources(attn_context *ctx, const char *const *names, int n, attn_status *st)
{
    char *all = NULL;
    size_t len = 0;
    *st = n > 0 ? ATTN_SUCCESS
                : ATTN_FAIL(ctx, ATTN_ERROR_INVALID_ARGUMENT, "a program of no kernel sources");
    for (int i = 0; i < n; i++) {
        char *text;
        *st = attn_kernel_source_read(ctx, names[i], &text);
        if (*st != ATTN_SUCCESS) {
            free(all);
            return NULL;
        }
        char line[256];
        int hl = snprintf(line, sizeof line, "#line 1 \"%s\"\n", names[i]);
        size_t tl = strlen(text);
        char *grown = realloc(all, len + (size_t)hl + tl + 2);
        if (!grown) {
            free(text);
            free(all);
            *st = ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory joining kernel sources");
            return NULL;
        }
        all = grown;
        memcpy(all + len, line, (size_t)hl);
        memcpy(all + len + hl, text, tl);
        len += (size_t)hl + tl;
        all[len++] = '\n';
        all[len] = 0;
        free(text);
    }
    return all;
}

/* The program's build log (malloc'd), or NULL when empty or unreadable. */
static char *build_log(attn_context *ctx, cl_program prog)
{
    size_t n = 0;
    clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *text = n > 1 ? malloc(n) : NULL;
    if (text && clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, n, text, NULL) !=
                    CL_SUCCESS) {
        free(text);
        text = NULL;
    }
    return text;
}

/* The build log at debug level, a message a line (a log message is one
 * line, and the whole of a long log is shown: ptxas's lines, or the error
 * after a page of warnings). */
static void log_build_log(const char *text)
{
    for (const char *at = text; *at;) {
        const size_t n = strcspn(at, "\n");
        if (n) attn_log(ATTN_LOG_DEBUG, "build log: %.*s", (int)n, at);
        at += n + (at[n] == '\n');
    }
}

static attn_status build_failure(attn_context *ctx, cl_program prog, cl_int err, const char *opts)
{
    char log[ATTN_ERROR_MAX / 2] = "";
    char *full = build_log(ctx, prog);
    if (full) {
        log_build_log(full);
        /* its start, on one line: the message is one line too */
        size_t n = 0;
        for (const char *at = full; *at && n + 3 < sizeof log; at++) {
            if (*at != '\n') log[n++] = *at;
            else if (n && log[n - 1] != ' ' && at[1]) log[n++] = ' ', log[n++] = '|', log[n++] = ' ';
        }
        log[n < sizeof log ? n : sizeof log - 1] = 0;
    }
    free(full);
    /* only a compile error is the kernel's (the tuner rejects the candidate
     * for it); no compiler, or memory or resources that ran out, are not */
    const attn_status st =
        err == CL_BUILD_PROGRAM_FAILURE ? ATTN_ERROR_BUILD
        : err == CL_COMPILER_NOT_AVAILABLE ? ATTN_ERROR_UNSUPPORTED
        : err == CL_OUT_OF_HOST_MEMORY || err == CL_OUT_OF_RESOURCES ? ATTN_ERROR_OUT_OF_MEMORY
        : ATTN_ERROR_OPENCL;
    return ATTN_FAIL(ctx, st, "clBuildProgram failed: %s (%d) with options \"%s\"; "
                     "build log: %s", attn_cl_error_name(err), (int)err, opts, log);
}

/* The options clBuildProgram gets (malloc'd; NULL when out of memory):
 * the caller's, with -DATTN_GPU=1 where gpu (common.cl's UNROLL); with
 * verbose, -cl-nv-verbose (cl_nv_compiler_options: ptxas's registers, stack
 * frame and spills per kernel in the build log); and -w unless attn logs
 * at debug level, where the build log is shown: PoCL prints "N warnings
 * generated." to stderr on every first build (clang's -Wpsabi notes on
 * float16 arguments where the CPU lacks AVX-512), noise in an application's
 * output. None is in the program's key: the device, which the key names,
 * decides the first, and the others change no binary. */
static char *device_options(const char *options, int gpu, int verbose)
{
    const int quiet = !attn_log_enabled(ATTN_LOG_DEBUG);
    char *all = malloc(strlen(options) + 40);
    if (all)
        sprintf(all, "%s%s%s%s", options, gpu ? " -DATTN_GPU=1" : "",
                verbose ? " -cl-nv-verbose" : "", quiet ? " -w" : "");
    return all;
}

static int is_gpu(const attn_context *ctx) { return (ctx->device_type & CL_DEVICE_TYPE_GPU) != 0; }

static cl_program from_binary(attn_context *ctx, const unsigned char *bin, size_t len,
                              const char *options)
{
    cl_int err, bin_status;
    char *opts = device_options(options, is_gpu(ctx), 0);
    if (!opts) return NULL; /* the source path reports it */
    cl_program prog = clCreateProgramWithBinary(ctx->cl_ctx, 1, &ctx->device, &len, &bin,
                                                &bin_status, &err);
    if (err == CL_SUCCESS && bin_status == CL_SUCCESS)
        err = clBuildProgram(prog, 1, &ctx->device, opts, NULL, NULL);
    free(opts);
    if (err != CL_SUCCESS || bin_status != CL_SUCCESS) {
        if (prog) clReleaseProgram(prog);
        return NULL;
    }
    return prog;
}

/* Builds prog from source with the device's options. A GPU build that
 * the compiler rejects with -DATTN_GPU=1 (UNROLL's pragma, new to a
 * vendor's compiler) is retried once without it, with a warning when that
 * builds: the unrolled loops are the faster code, not different results.
 * Another failure (out of memory, resources) is not retried: a build
 * without the pragma would be stored and kept by every later process. */
static cl_int build_source(attn_context *ctx, cl_program prog, const char *options,
                           char **used)
{
    const int verbose = attn_log_enabled(ATTN_LOG_DEBUG) && ctx->nv_cc > 0 &&
                        attn_device_has_extension(ctx->device, "cl_nv_compiler_options");
    cl_int err = CL_OUT_OF_HOST_MEMORY;
    for (int gpu = is_gpu(ctx); gpu >= 0; gpu--) {
        free(*used);
        *used = device_options(options, gpu, verbose);
        if (!*used) return CL_OUT_OF_HOST_MEMORY;
        err = clBuildProgram(prog, 1, &ctx->device, *used, NULL, NULL);
        if (err != CL_BUILD_PROGRAM_FAILURE || !gpu) break;
    }
    if (err == CL_SUCCESS && is_gpu(ctx) && !strstr(*used, "-DATTN_GPU=1"))
        attn_log(ATTN_LOG_WARN, "program failed to build with -DATTN_GPU=1 and was built "
                 "without it (loops over private arrays left to the compiler)");
    return err;
}

/* Into the disk cache, if ctx has one: with none, the binary is not asked
 * for (PoCL serialises the whole program for it; under AddressSanitizer
 * that was most of a build from source's time). */
static void store_binary(attn_context *ctx, cl_program prog, const char *key_text, uint64_t key)
{
    size_t len = 0;
    if (!ctx->cache_dir || !*ctx->cache_dir) return;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) != CL_SUCCESS ||
        len == 0)
        return;
    unsigned char *bin = malloc(len);
    if (bin && clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS)
        if (attn_disk_cache_store(ctx->cache_dir, key_text, key, bin, len))
            attn_disk_cache_prune(ctx->cache_dir, ctx->cache_max_bytes, key);
    free(bin);
}

/* "name name ...\noptions" when the sources are the embedded ones, else
 * NULL (also when out of memory: the slow path still works). */
static char *request_text(const attn_context *ctx, const char *const *sources, int nsources,
                          const char *options)
{
    if (ctx->kernel_dir) return NULL; /* files may change between calls: hash them */
    size_t len = strlen(options) + 2;
    for (int i = 0; i < nsources; i++) len += strlen(sources[i]) + 1;
    char *text = malloc(len);
    if (!text) return NULL;
    size_t at = 0;
    for (int i = 0; i < nsources; i++) at += (size_t)sprintf(text + at, "%s ", sources[i]);
    sprintf(text + at, "\n%s", options);
    return text;
}

attn_status attn_program_get(attn_context *ctx, const char *const *sources, int nsources,
                             const char *options, cl_program *out)
{
    /* Joining and hashing the ~30 KB of sources took about 40 us a call,
     * 3% of a 1 ms prefill (perf, S=512 D=64): a program asked for before
     * with the same embedded sources and options is found by that request. */
    char *request = request_text(ctx, sources, nsources, options);
    if (request)
        for (attn_program_entry *e = ctx->programs; e; e = e->next)
            if (e->request && strcmp(e->request, request) == 0) {
                ctx->programs_from_memory++;
                *out = e->program;
                free(request);
                return ATTN_SUCCESS;
            }
    attn_status joined;
    char *src = join_sources(ctx, sources, nsources, &joined);
    if (!src) {
        free(request);
        return joined;
    }
    size_t key_size = strlen(options) + 1200;
    char *key_text = malloc(key_size);
    if (!key_text) {
        free(request);
        free(src);
        return ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    snprintf(key_text, key_size, "attn program cache v%d\nsource %016llx\noptions %s\n"
             "platform %s\ndevice %s\nvendor %s\ndriver %s\n", ATTN_CACHE_FORMAT_VERSION,
             (unsigned long long)attn_hash_str(ATTN_HASH_INIT, src), options, ctx->platform_name,
             ctx->device_name, ctx->vendor, ctx->driver);
    uint64_t key = attn_hash_str(ATTN_HASH_INIT, key_text);
    attn_status st = ATTN_SUCCESS;

    for (attn_program_entry *e = ctx->programs; e; e = e->next)
        if (e->key == key) {
            ctx->programs_from_memory++;
            *out = e->program;
            if (!e->request) { /* first built from a kernel folder's same text */
                e->request = request;
                request = NULL;
            }
            goto done;
        }

    cl_program prog = NULL;
    unsigned char *bin;
    size_t bin_len;
    double t0 = now_ms();
    if (attn_disk_cache_load(ctx->cache_dir, key_text, key, &bin, &bin_len)) {
        prog = from_binary(ctx, bin, bin_len, options);
        free(bin);
        if (prog) {
            ctx->programs_from_disk++;
            attn_log(ATTN_LOG_INFO, "program %016llx loaded from the disk cache in %.1f ms",
                     (unsigned long long)key, now_ms() - t0);
        }
        else
            attn_log(ATTN_LOG_WARN, "program cache entry %016llx was rejected by the driver; "
                     "rebuilding", (unsigned long long)key);
    }
    if (!prog) {
        cl_int err;
        const char *text = src;
        prog = clCreateProgramWithSource(ctx->cl_ctx, 1, &text, NULL, &err);
        if (err != CL_SUCCESS) {
            st = attn_fail_cl(ctx, err, "clCreateProgramWithSource");
            goto done;
        }
        char *used = NULL;
        err = build_source(ctx, prog, options, &used);
        if (err != CL_SUCCESS) {
            st = used ? build_failure(ctx, prog, err, used)
                      : ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
            free(used);
            clReleaseProgram(prog);
            goto done;
        }
        attn_log(ATTN_LOG_INFO, "program %016llx built in %.1f ms (%s)", (unsigned long long)key,
                 now_ms() - t0, used);
        free(used);
        if (attn_log_enabled(ATTN_LOG_DEBUG)) { /* NVIDIA's: ptxas's lines (-cl-nv-verbose) */
            char *text = build_log(ctx, prog);
            if (text) log_build_log(text);
            free(text);
        }
        ctx->programs_built++;
        store_binary(ctx, prog, key_text, key);
    }
    attn_program_entry *e = malloc(sizeof *e);
    if (!e) {
        clReleaseProgram(prog);
        st = ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    e->key = key;
    e->request = request;
    request = NULL;
    e->program = prog;
    e->next = ctx->programs;
    ctx->programs = e;
    *out = prog;
done:
    free(request);
    free(key_text);
    free(src);
    return st;
}
