/* errors.c -- recording failures: the public call in progress, the
 * context's and the thread's last error, the names of OpenCL's codes. */
#define _POSIX_C_SOURCE 200809L
#include "core/context.h"
#include "core/errors.h"
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The last failure on this thread of a call that had no context to carry
 * it (attn_context_create*, a NULL ctx, cache or layer, the reference, the
 * conversions), and the name of such a call in progress. */
static _Thread_local char thread_error[ATTN_ERROR_MAX];
static _Thread_local const char *thread_call;

const char *attn_last_create_error(void) { return thread_error; }

void attn_call_begin(attn_context *ctx, const char *fn)
{
    pthread_mutex_lock(&ctx->lock);
    ctx->error[0] = 0;
    ctx->call = fn;
}

void attn_call_end(attn_context *ctx)
{
    ctx->call = NULL;
    pthread_mutex_unlock(&ctx->lock);
}

void attn_thread_call_begin(const char *fn)
{
    thread_error[0] = 0;
    thread_call = fn;
}

void attn_thread_error_save(attn_thread_error_state *s)
{
    _Static_assert(sizeof s->text == sizeof thread_error, "the thread's message fits");
    memcpy(s->text, thread_error, sizeof thread_error);
    s->call = thread_call;
}

void attn_thread_error_restore(const attn_thread_error_state *s)
{
    memcpy(thread_error, s->text, sizeof thread_error);
    thread_call = s->call;
}

attn_status attn_fail_null(const char *fn, const char *what)
{
    attn_thread_call_begin(fn);
    return ATTN_FAIL(NULL, ATTN_ERROR_INVALID_ARGUMENT, "%s is NULL", what);
}

attn_status attn_fail_at(attn_context *ctx, attn_status s, const char *file, int line,
                         const char *fmt, ...)
{
    char msg[ATTN_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char *buf = ctx ? ctx->error : thread_error;
    const char *call = ctx ? ctx->call : thread_call;
    size_t at = 0;
    /* messages written with their function's name already keep it once */
    if (call && !(strncmp(msg, call, strlen(call)) == 0 && msg[strlen(call)] == ':')) {
        const int n = snprintf(buf, ATTN_ERROR_MAX, "%s: ", call);
        at = n < 0 ? 0 : (size_t)n < ATTN_ERROR_MAX ? (size_t)n : ATTN_ERROR_MAX - 1;
    }
    snprintf(buf + at, ATTN_ERROR_MAX - at, "%s", msg);
    attn_log(ATTN_LOG_DEBUG, "%s:%d: %s: %s", file, line, attn_status_name(s), buf);
    return s;
}

const char *attn_cl_error_name(cl_int err)
{
    switch (err) {
#define E(x) case x: return #x;
    E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE)
    E(CL_COMPILER_NOT_AVAILABLE) E(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY) E(CL_PROFILING_INFO_NOT_AVAILABLE)
    E(CL_BUILD_PROGRAM_FAILURE) E(CL_INVALID_VALUE) E(CL_INVALID_DEVICE_TYPE)
    E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT)
    E(CL_INVALID_QUEUE_PROPERTIES) E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_MEM_OBJECT)
    E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS) E(CL_INVALID_PROGRAM)
    E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME) E(CL_INVALID_KERNEL)
    E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE)
    E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE)
    E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_EVENT_WAIT_LIST)
    E(CL_INVALID_EVENT) E(CL_INVALID_OPERATION) E(CL_INVALID_BUFFER_SIZE)
    E(CL_INVALID_GLOBAL_WORK_SIZE) E(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
#undef E
    default: return "CL_UNKNOWN_ERROR";
    }
}

attn_status attn_fail_cl(attn_context *ctx, cl_int err, const char *call)
{
    attn_status s = (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY ||
                     err == CL_OUT_OF_RESOURCES)
                        ? ATTN_ERROR_OUT_OF_MEMORY
                        : ATTN_ERROR_OPENCL;
    return ATTN_FAIL(ctx, s, "%s failed: %s (%d)", call, attn_cl_error_name(err), (int)err);
}

const char *attn_last_error(const attn_context *ctx) { return ctx ? ctx->error : thread_error; }
