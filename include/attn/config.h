/* attn/config.h -- part of attn's public API (applications include attn.h):
 * a context's configuration (check mode, the kernel-parameter override, the
 * tuning databases, the program-cache and kernel-source folders) and
 * logging. Each replaces a default a context takes from the environment
 * when it is created (README.md, "Environment"). */
#ifndef ATTN_PUBLIC_CONFIG_H
#define ATTN_PUBLIC_CONFIG_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/*! attn_context_set_check() : check mode on (1) or off (0). When on, every
 *  attn_forward (and attn_decode: over the cache's K and V as the kernels
 *  read them, an int8 cache's dequantized, not rounded to its dtype) waits
 *  for its result, reads back the inputs and output, recomputes them with
 *  attn_reference_forward and returns
 *  ATTN_ERROR_MISMATCH (worst element in attn_last_error) when any element
 *  is beyond the DESIGN tolerance. ATTN_CHECK=1 in the environment turns it
 *  on for every new context. Any other enable is ATTN_ERROR_INVALID_ARGUMENT
 *  and leaves the mode as it was. */
ATTN_API attn_status attn_context_set_check(attn_context *ctx, int enable);

/*! attn_context_set_params() : overrides the kernel parameters every
 *  attn_forward, attn_prepare, attn_decode and attn_decode_prepare on ctx
 *  plans with, over the heuristic's or the tuning database's choice:
 *  "name=value" pairs separated by commas, as ATTN_PARAMS
 *  ("family=tiled,rows=16"; names not given keep the planned value, or,
 *  where the text names another family than the plan's, that family's
 *  own starting value on this device;
 *  family is tiled, vector, flash or mma; flash has no decode kernel, so
 *  decode keeps its own plan under it (the class's tuned one, where there
 *  is one); a name the family in effect lacks (rows for mma) is checked
 *  against its own family's range and left out, with one warning a
 *  context, so that one text can serve every family). A family forced
 *  for what it cannot run (flash's decode, mma at a head dim that is not a
 *  multiple of 16, mma on an NVIDIA device where its check failed) gives
 *  way, for that problem, to the device's own plan (the class's tuned
 *  entry, else the heuristic's) with an INFO line, and attn_prepare
 *  reports that plan and its source; on a device without inline PTX, mma
 *  forced runs its exact but slow emulation, for testing. NULL or ""
 *  clears the override. The text is checked now: an unknown name, a name
 *  given twice, a value that is not an integer, outside its range or not
 *  a power of two where one is needed is ATTN_ERROR_INVALID_ARGUMENT
 *  naming it, and the previous override stays.
 *  What depends on the problem (local memory, the work-group limit, keys a
 *  multiple of vec) is checked by each call, which then fails with
 *  ATTN_ERROR_INVALID_ARGUMENT. attn_prepare reports the source
 *  "override" for a plan the override applies to. ATTN_PARAMS in the
 *  environment is every new context's initial override. */
ATTN_API attn_status attn_context_set_params(attn_context *ctx, const char *params);

/*! attn_context_set_tuning_db() : the tuning databases ctx reads (attn-tune
 *  writes them): user_path, then the read-only system_path. NULL means the
 *  default, from the environment as it is now: user_path $ATTN_TUNING_DB,
 *  else $XDG_DATA_HOME/attn/tuning.json (an absolute $XDG_DATA_HOME), else
 *  ~/.local/share/attn/tuning.json; system_path $ATTN_SYSTEM_TUNING_DB,
 *  else the build's default. "" means none. Every new context starts with
 *  the defaults. The files are read again on the next call that plans. */
ATTN_API attn_status attn_context_set_tuning_db(attn_context *ctx, const char *user_path,
                                                const char *system_path);

/*! attn_context_set_cache_dir() : the folder where ctx keeps built programs
 *  on disk, for later contexts and processes (made when first written; a
 *  folder that cannot be written only costs the rebuilds). NULL or "" means
 *  no disk cache. It applies to programs ctx builds after the call; those
 *  already in its memory stay. Every new context starts with
 *  $ATTN_CACHE_DIR (set but empty: none), else $XDG_CACHE_HOME/attn (an
 *  absolute $XDG_CACHE_HOME), else
 *  ~/.cache/attn. Its program files are kept within $ATTN_CACHE_MAX_MB
 *  (default 1024 MiB; 0: no bound): past it, the least recently used are
 *  removed, never the one just stored, never a file attn did not name
 *  (README.md, "Environment"). */
ATTN_API attn_status attn_context_set_cache_dir(attn_context *ctx, const char *dir);

/*! attn_context_set_kernel_dir() : a folder ctx reads its OpenCL C sources
 *  from (the files of cl/, for kernel development), on every call that
 *  needs a program, instead of the copies built into the library; NULL or
 *  "" means the built-in ones. Programs are found in memory and on disk by a
 *  hash of the sources as read, so a changed folder or file never gives a
 *  program built from other sources; the plans and the tuning database
 *  (whose entries name their sources' hash) are looked up again, the mma
 *  family is checked again (once for each folder set: files edited in place
 *  are not checked again), and the summaries of versioned masks
 *  (attn_mask.version) are neither kept nor reused while a folder is set. A missing
 *  file is ATTN_ERROR_IO from the call that needs it, naming the path.
 *  Every new context starts with $ATTN_KERNEL_DIR. */
ATTN_API attn_status attn_context_set_kernel_dir(attn_context *ctx, const char *dir);

/* How much attn says. */
typedef enum attn_log_level {
    ATTN_LOG_ERROR = 0, /* a failure attn could not report through a status */
    ATTN_LOG_WARN = 1,  /* a problem worked around (unusable tuning database, stale entry) */
    ATTN_LOG_INFO = 2,  /* a choice made (an override applied, the device chosen) */
    ATTN_LOG_DEBUG = 3  /* what was looked up, built and loaded, and every failure */
} attn_log_level;

/* A log message: one line, no newline; valid during the call only. */
typedef void (*attn_log_fn)(attn_log_level level, const char *message, void *user);

/*! attn_set_log_callback() : sends attn's messages of max_level and more
 *  severe to fn (with user), process-wide, instead of stderr. Calls of fn
 *  are serialized; fn must not call attn. NULL fn restores stderr at the
 *  level ATTN_LOG names (error, warn, info, debug or none; default warn).
 *  max_level is a bound: above ATTN_LOG_DEBUG every message goes to fn,
 *  below ATTN_LOG_ERROR none does.
 *  Thread-safe: after it returns, the previous fn is no longer called. */
ATTN_API void attn_set_log_callback(attn_log_fn fn, void *user, attn_log_level max_level);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_PUBLIC_CONFIG_H */
