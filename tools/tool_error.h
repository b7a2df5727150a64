/* tool_error.h -- the one form of the tools' failure lines (attn-bench,
 * attn-tune, attn-info, attn-weights), and their exit through a checked
 * standard output:
 *     TOOL: [WHERE: ][STEP: ]STATUS: MESSAGE
 * MESSAGE is the library's (attn_last_error), which begins with the name of
 * the public function that failed, so STEP (the call or step the tool was
 * at) is left out when MESSAGE already begins with it, as the library does
 * (host/core/errors.c): "attn-bench: ATTN_ERROR_NO_DEVICE:
 * attn_context_create: selector ...", the function named once. */
#ifndef ATTN_TOOLS_TOOL_ERROR_H
#define ATTN_TOOLS_TOOL_ERROR_H

#include "attn.h"

#include <stddef.h>

/* "[STEP: ]STATUS: MESSAGE" into buf (a report's note); step may be NULL. */
void tool_error_text(char *buf, size_t size, const char *step, attn_status st, const char *msg);
/* The whole line on stderr; where and step may be NULL. */
void tool_error(const char *tool, const char *where, const char *step, attn_status st,
                const char *msg);

/* A tool's exit status once its standard output is flushed: rc, or 1
 * (with a line on stderr) when the output could not be written, so that a
 * report cut short by a full disk does not exit 0. Each tool's main ends
 * with it. */
int tool_exit(const char *tool, int rc);

#endif /* ATTN_TOOLS_TOOL_ERROR_H */
