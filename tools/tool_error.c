/* tool_error.c -- the tools' failure lines and checked exit (tool_error.h). */
#include "tool_error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Whether msg begins with "step:" (the library's message names its call). */
static int names_step(const char *msg, const char *step)
{
    const size_t n = strlen(step);
    return strncmp(msg, step, n) == 0 && msg[n] == ':';
}

void tool_error_text(char *buf, size_t size, const char *step, attn_status st, const char *msg)
{
    if (!msg) msg = "";
    const int with_step = step && *step && !names_step(msg, step);
    snprintf(buf, size, "%s%s%s: %s", with_step ? step : "", with_step ? ": " : "",
             attn_status_name(st), msg);
}

void tool_error(const char *tool, const char *where, const char *step, attn_status st,
                const char *msg)
{
    char text[1280]; /* the library's messages stay under 1024 bytes (ATTN_ERROR_MAX) */
    tool_error_text(text, sizeof text, step, st, msg);
    fprintf(stderr, "%s: %s%s%s\n", tool, where ? where : "", where ? ": " : "", text);
}

int tool_exit(const char *tool, int rc)
{
    /* fflush reports a write that fails now; ferror one that failed before */
    errno = 0;
    const int flushed = fflush(stdout) == 0;
    if (flushed && !ferror(stdout)) return rc;
    const int e = flushed ? 0 : errno;
    fprintf(stderr, "%s: writing to standard output failed%s%s\n", tool, e ? ": " : "",
            e ? strerror(e) : "");
    return rc ? rc : 1;
}
