/* log.c -- leveled logging: to stderr at the level ATTN_LOG names
 * (error|warn|info|debug|none, default warn, read once per process; any
 * other value is said on stderr and taken as warn), or to
 * the application's callback (attn_set_log_callback) up to its level. */
#include "core/log.h"

#include <stdatomic.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static int env_level = ATTN_LOG_WARN;
static atomic_int log_level = ATTN_LOG_WARN; /* the most detailed level emitted; -1: none */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static attn_log_fn log_fn;   /* NULL: stderr; under log_lock */
static void *log_user;

static void log_init(void)
{
    const char *env = getenv("ATTN_LOG");
    if (env && *env) {
        static const char *names[] = {"error", "warn", "info", "debug"};
        int known = 0;
        for (int i = 0; i < 4; i++)
            if (strcmp(env, names[i]) == 0) env_level = i, known = 1;
        if (strcmp(env, "warning") == 0) env_level = ATTN_LOG_WARN, known = 1;
        if (strcmp(env, "none") == 0 || strcmp(env, "off") == 0) env_level = -1, known = 1;
        /* a typo ("verbose", "DEBUG") is said once, not silently the default;
         * straight to stderr: attn_log would wait on this very pthread_once */
        if (!known)
            fprintf(stderr, "attn: warning: ATTN_LOG=\"%s\" is not error, warn, info, debug or "
                    "none; logging at warn\n", env);
    }
    pthread_mutex_lock(&log_lock);
    if (!log_fn) atomic_store(&log_level, env_level);
    pthread_mutex_unlock(&log_lock);
}

int attn_log_enabled(attn_log_level level)
{
    pthread_once(&log_once, log_init);
    return (int)level <= atomic_load_explicit(&log_level, memory_order_relaxed);
}

void attn_set_log_callback(attn_log_fn fn, void *user, attn_log_level max_level)
{
    pthread_once(&log_once, log_init);
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_user = user;
    atomic_store(&log_level, fn ? (int)max_level : env_level);
    pthread_mutex_unlock(&log_lock);
}

void attn_log(attn_log_level level, const char *fmt, ...)
{
    if (!attn_log_enabled(level)) return;
    static const char *tags[] = {"error", "warning", "info", "debug"};
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* under the lock: a callback is never called after it was replaced, and
     * lines from threads do not interleave; the level is read again there,
     * since a callback at debug removed meanwhile leaves stderr at ATTN_LOG's */
    pthread_mutex_lock(&log_lock);
    if ((int)level <= atomic_load(&log_level)) {
        if (log_fn) log_fn(level, line, log_user);
        else fprintf(stderr, "attn: %s: %s\n", tags[level], line);
    }
    pthread_mutex_unlock(&log_lock);
}
