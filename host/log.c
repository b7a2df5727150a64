/* log.c -- leveled logging to stderr. ATTN_LOG=error|warn|info|debug picks
 * the level (default warn), read once; a library must not be chatty. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static int log_level = ATTN_LOG_WARN;

static void log_init(void)
{
    const char *env = getenv("ATTN_LOG");
    if (!env || !*env) return;
    static const char *names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (strcmp(env, names[i]) == 0) log_level = i;
    if (strcmp(env, "warning") == 0) log_level = ATTN_LOG_WARN;
    if (strcmp(env, "none") == 0 || strcmp(env, "off") == 0) log_level = -1;
}

int attn_log_enabled(attn_log_level level)
{
    pthread_once(&log_once, log_init);
    return (int)level <= log_level;
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
    /* one fprintf per line so that lines from threads do not interleave */
    fprintf(stderr, "attn: %s: %s\n", tags[level], line);
}
