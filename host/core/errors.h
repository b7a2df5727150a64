/* errors.h -- how every failure is recorded: the call in progress, the
 * per-context and per-thread last error, the OpenCL codes' names. */
#ifndef ATTN_CORE_ERRORS_H
#define ATTN_CORE_ERRORS_H

#include "attn.h"


/* ---- errors (errors.c) ----
 * Every message begins with the name of the public function that failed.
 * A public call on a context starts with attn_call_begin(ctx, __func__)
 * (takes ctx's lock, clears ctx's last error, names the call) and ends with
 * attn_call_end. A call without a context (creation, the reference, the
 * conversions) starts with attn_thread_call_begin(__func__): its messages
 * go to the calling thread's last error (attn_last_error(NULL)); a NULL
 * handle is reported there too, by attn_fail_null. */
void attn_call_begin(attn_context *ctx, const char *fn);
void attn_call_end(attn_context *ctx);
void attn_thread_call_begin(const char *fn);
/* The thread's last error and call, kept across an internal use of a
 * context-less public function (the reference in check mode and in the
 * tuner), which clears them when it starts: a call on a context leaves
 * attn_last_error(NULL) alone. */
typedef struct attn_thread_error_state {
    char text[1024]; /* ATTN_ERROR_MAX */
    const char *call;
} attn_thread_error_state;
void attn_thread_error_save(attn_thread_error_state *s);
void attn_thread_error_restore(const attn_thread_error_state *s);
/* "fn: what is NULL" as the thread's last error; ATTN_ERROR_INVALID_ARGUMENT. */
attn_status attn_fail_null(const char *fn, const char *what);
/* Records a formatted message as ctx's last error (ctx NULL: the thread's),
 * after the name of the call in progress unless it already begins with it,
 * and logs it at debug level with file and line. Returns s. */
attn_status attn_fail_at(attn_context *ctx, attn_status s, const char *file, int line,
                         const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
#define ATTN_FAIL(ctx, s, ...) attn_fail_at((ctx), (s), __FILE__, __LINE__, __VA_ARGS__)
/* zstd-style: if cond holds, record the message and return status. */
#define ATTN_CHECK(ctx, cond, s, ...)                      \
    do {                                                   \
        if (cond) return ATTN_FAIL((ctx), (s), __VA_ARGS__); \
    } while (0)
/* An OpenCL call's error code as a status, naming the call. */
attn_status attn_fail_cl(attn_context *ctx, cl_int err, const char *call);
const char *attn_cl_error_name(cl_int err);

#endif /* ATTN_CORE_ERRORS_H */
