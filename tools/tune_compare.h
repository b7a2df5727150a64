/* tune_compare.h -- attn-tune --compare: the library's choice against the
 * built-in default on the given shapes (prefill or decode), timed
 * interleaved. */
#ifndef ATTN_TUNE_COMPARE_H
#define ATTN_TUNE_COMPARE_H

#include "tuning/tuning.h"

#define EXIT_USAGE 2 /* attn-tune's exit status after bad usage */

/* device: a selector as attn_context_create takes; shapes_arg: --shapes
 * (NULL: the DESIGN prefill set, or decode set); entry: ATTN_ENTRY_PREFILL
 * or ATTN_ENTRY_DECODE (--decode: each shape timed through attn_decode over
 * a cache of kind kv; NULL: contiguous, as the dtype).
 * Prints a row per shape; returns the exit status (0, 1 after a failure,
 * 2 for bad shapes). */
/* Shared by the tuning run and --compare: the shapes of shapes_arg (as
 * tune_shapes_load) and a context on device with the library's check mode
 * off. Returns -1 to go on, else the exit status (2 for bad shapes, 1 when
 * no context opens; said on stderr). */
int tune_open(const char *device, const char *shapes_arg, int decode, attn_problem **shapes,
              int *nshapes, attn_context **ctx);

int tune_compare(const char *device, const char *shapes_arg, int entry, const attn_tune_cache *kv);

#endif /* ATTN_TUNE_COMPARE_H */
