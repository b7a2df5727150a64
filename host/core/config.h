/* config.h -- a context's configuration (config.c): the environment read
 * once at creation as defaults, which the attn_context_set_* calls replace,
 * and the default paths the environment names. */
#ifndef ATTN_CORE_CONFIG_H
#define ATTN_CORE_CONFIG_H

#include "attn.h"

#include <stddef.h>
#include <stdint.h>

/* Reads ATTN_PARAMS, ATTN_CHECK, ATTN_TUNING_DB and ATTN_SYSTEM_TUNING_DB
 * (and ATTN_KERNEL_DIR, ATTN_CACHE_DIR, ATTN_CACHE_MAX_MB, ATTN_SOFTMAX_WG) into a new
 * context: the defaults the setters replace. 0, or -1 when out
 * of memory. */
int attn_config_init(attn_context *ctx);
void attn_config_release(attn_context *ctx);
/* The environment's cache folder ($ATTN_CACHE_DIR, $XDG_CACHE_HOME/attn,
 * ~/.cache/attn; config.c, read at context creation) into buf; returns 0
 * when none can be named, or ATTN_CACHE_DIR is set but empty (no cache). */
int attn_disk_cache_dir(char *buf, size_t size);
/* The program cache folder's bound, when ATTN_CACHE_MAX_MB is unset or
 * empty (README's "Environment"; 1 GiB holds some thousands of programs). */
#define ATTN_CACHE_MAX_MB_DEFAULT 1024
/* ATTN_CACHE_MAX_MB's value text (NULL: unset) in bytes; 0 is no bound.
 * Text that is not a whole number of MiB is said (a warning) and gives the
 * default. */
uint64_t attn_cache_max_bytes(const char *text);
/* Whether a path snprintf made (its return value `made`) from `from`'s
 * value (an environment variable's name, or a description) fits a buffer
 * of size bytes; a warning when not, since the file would otherwise be
 * missing without a word. */
int attn_path_fits(int made, size_t size, const char *from);
/* The XDG rule for a default path (config.c): $var, else $xdg/under_xdg
 * (an absolute $xdg only, as the XDG spec says), else $HOME/under_home,
 * into buf; returns 0 when none is set, or when the one set does not fit
 * (a warning). */
int attn_env_path(char *buf, size_t size, const char *var, const char *xdg,
                  const char *under_xdg, const char *under_home);

#endif /* ATTN_CORE_CONFIG_H */
