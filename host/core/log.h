/* log.h -- leveled logging (log.c). */
#ifndef ATTN_CORE_LOG_H
#define ATTN_CORE_LOG_H

#include "attn.h"

/* ---- logging (log.c): ATTN_LOG=error|warn|info|debug, default warn, or
 * attn_set_log_callback; attn_log_level is public (attn.h) ---- */
void attn_log(attn_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int attn_log_enabled(attn_log_level level);

#endif /* ATTN_CORE_LOG_H */
