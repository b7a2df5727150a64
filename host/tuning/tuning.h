/* tuning.h -- what attn-tune and the library share for tuning: shape
 * classes and device identity (from their own headers), the kernel-source
 * hash, the search space, the tuning database (JSON) with its lookup tiers,
 * and the measurement of one candidate. The one internal header the tuner
 * includes. */
#ifndef ATTN_TUNING_H
#define ATTN_TUNING_H

#include "attn.h"
#include "tuning/device_identity.h"
#include "kernels/params.h"
#include "measure/sampling.h"
#include "tuning/shape_class.h"

#include <stddef.h>
#include <stdint.h>

/* The file's "format" and "version" fields (tuning_db.c writes them,
 * tuning_db_read.c checks them). */
#define ATTN_TUNING_DB_FORMAT "attn-tuning-db"
/* More entries than a database of many devices' tunings holds (hundreds
 * of classes each): refused before reading them, as each takes about
 * 2.7 KB in memory, once per context that reads it */
#define ATTN_TUNING_DB_MAX_ENTRIES 16384
#define ATTN_TUNING_DB_VERSION 1

/* ---- the kernel source hash (tuning_lookup.c) ---- */

/* 16 hex digits hashing the sources of a family's kernels (common.cl and the
 * family's file, as attn_forward would build them, so ATTN_KERNEL_DIR
 * counts). A database entry whose hash differs is stale. */
attn_status attn_kernel_source_hash(attn_context *ctx, int family, char out[17]);
/* The same for entry point `entry` (ATTN_ENTRY_*): a decode entry's
 * kernel_hash is that of the family's decode sources. */
attn_status attn_entry_source_hash(attn_context *ctx, int entry, int family, char out[17]);

/* ---- the search space (search_space.c) ---- */

/* Every legal candidate for entry point `entry` (ATTN_ENTRY_*) of p on
 * dev, of every family (ATTN_FAMILY_* bit mask `families`; 0 means all),
 * starting from `base` (fields a family does not search keep base's
 * value); decode searches its splits too (attn_search_axes), and given
 * its class (cache; NULL for prefill), over a paged cache
 * (cache->kv_block > 0) only keys that fit in a block (attn_plan_fit_page
 * would clamp the others into duplicates). Fills out
 * (malloc'd, caller frees) and returns the count, or -1 when out of memory. */
int attn_search_enumerate(const attn_device_limits *dev, int entry, const attn_problem *p,
                          const attn_shape_class *cache, const attn_params *base,
                          unsigned families, attn_params **out);
/* The legal candidates one step away from c: one searched tunable moved to
 * the next searched value below or above its own (on the list or not). out
 * holds at least 2 * 7 entries; returns the count. */
int attn_search_neighbours(const attn_device_limits *dev, int entry, const attn_problem *p,
                           const attn_shape_class *cache, const attn_params *c, attn_params *out,
                           int max);
/* Whether a and b are the same configuration (fields their family uses,
 * and decode's splits). */
int attn_params_equal(const attn_params *a, const attn_params *b);
/* attn_params_format plus the tunables entry point `entry` searches
 * beyond the family's ("...,splits=4" for decode): the database's text. */
void attn_search_format(int entry, const attn_params *pr, char *buf, size_t size);
/* How far c is from the built-in default dflt: 0 for the default itself,
 * then growing with another family and with each tunable moved (in steps of
 * its search values). Near-ties go to the smaller. */
int attn_search_complexity(const attn_params *c, const attn_params *dflt);

/* ---- the tuning database (tuning_db.c) ---- */

/* A candidate's timed runs are summed up by attn_time_spread (sampling.h). */

enum { ATTN_TUNE_LEVEL_QUICK = 1, ATTN_TUNE_LEVEL_FULL = 2 };

typedef struct attn_tuning_entry {
    attn_device_identity device;
    char kernel_hash[17];     /* attn_entry_source_hash of the winner's family (and entry) */
    char tool_version[32];
    char date[32];            /* UTC, ISO 8601 */
    attn_shape_class cls;
    int batch, q_heads, kv_heads, q_len, kv_len; /* the shape that was timed */
    char params[160];         /* attn_params_format of the winner */
    double median_ms, gflops; /* the winner on the timed shape */
    attn_time_spread spread;  /* the winner's re-timing rounds (all 0: not recorded) */
    char default_params[160]; /* the built-in default, timed in the same run */
    double default_ms, default_gflops;
    attn_time_spread default_spread;
    double max_error, error_ratio; /* verification: worst |out - ref|, and over tolerance */
    int level;                /* ATTN_TUNE_LEVEL_* */
    int tested, rejected;     /* candidates measured, candidates found invalid */
    int cut_short;            /* the budget ended the search early: a later run tunes it again */
    /* What a newer attn wrote that this build cannot read, kept verbatim so
     * that a merge loses nothing (tuning_db_read.c fills them, tuning_db.c
     * writes them back; "" when there is none):
     * - the "class" object, when it holds a field, storage type, variant or
     *   range this build does not know (foreign_why set). cls is then all
     *   zero and the entry never applies (attn_tuning_entry_params says why).
     * - the entry's other fields this build does not read, as the text of a
     *   JSON object with the same nesting ({"notes": .., "device": {..}}).
     * lost: either was too long to keep here (a class then holds "lost "
     * and its text's hash, a slot of its own). The entry is read (and used,
     * when its class is known), but attn_tuning_db_save refuses to write a
     * database holding it, which would drop what did not fit. */
    char foreign_class[384], foreign_why[128];
    char extra[512];
    int lost;
} attn_tuning_entry;

typedef struct attn_tuning_db {
    attn_tuning_entry *entries;
    size_t count, capacity;
    /* the file's top-level members this build does not read (a newer
     * attn's, a "comment"), as a JSON object's compact text, written back
     * by a save; extra_lost: more than fits here (a save is refused, as
     * for an entry's) */
    char extra[1024];
    int extra_lost;
} attn_tuning_db;

void attn_tuning_db_init(attn_tuning_db *db);
void attn_tuning_db_free(attn_tuning_db *db);
/* Whether a and b fill the same place in a database: the same device
 * (driver included) and class (a class this build cannot read: the same
 * text). */
int attn_tuning_same_slot(const attn_tuning_entry *a, const attn_tuning_entry *b);
/* Adds e, replacing an entry of the same slot. Returns 0, or -1 when out of
 * memory. */
int attn_tuning_db_put(attn_tuning_db *db, const attn_tuning_entry *e);
/* Adds e at the end, whatever is there. Returns 0, or -1 when out of memory. */
int attn_tuning_db_append(attn_tuning_db *db, const attn_tuning_entry *e);
/* Leaves one entry a slot, as attn_tuning_db_put
 * of each in turn would: the first one's place, the last one's value; in
 * O(n log n), for files of many entries. Returns 0, or -1 when out of memory
 * (db unchanged). */
int attn_tuning_db_dedupe(attn_tuning_db *db);

/* The user's database: $ATTN_TUNING_DB, else $XDG_DATA_HOME/attn/tuning.json
 * (an absolute $XDG_DATA_HOME), else ~/.local/share/attn/tuning.json.
 * Returns 0 when none can be named (or fits: a warning). */
int attn_tuning_db_user_path(char *buf, size_t size);
/* The read-only system-wide one: $ATTN_SYSTEM_TUNING_DB (empty: none), else
 * ATTN_SYSTEM_TUNING_DB_DEFAULT. Returns 0 when there is none. */
int attn_tuning_db_system_path(char *buf, size_t size);

/* Reads a database file into db (replacing its contents). A missing file is
 * an empty database (*missing set when given). Anything unreadable,
 * malformed or of the wrong shape is ATTN_ERROR_TUNING_DB (ATTN_ERROR_IO
 * when it cannot be read) with "FILE:LINE: why" in err. */
attn_status attn_tuning_db_load(const char *path, attn_tuning_db *db, int *missing, char *err,
                                size_t errsize);
/* Parses database text; `name` labels the messages. */
attn_status attn_tuning_db_parse(const char *text, size_t len, const char *name,
                                 attn_tuning_db *db, char *err, size_t errsize);
/* The JSON text of db (malloc'd), or NULL when out of memory. */
char *attn_tuning_db_print(const attn_tuning_db *db);
/* Whether a save of db with `adding` more entries would be refused for
 * what it holds (more than ATTN_TUNING_DB_MAX_ENTRIES; what this build
 * read but cannot keep, which writing would drop): ATTN_ERROR_TUNING_DB
 * with why, naming path. The tuner asks before tuning anything. */
attn_status attn_tuning_db_refusal(const char *path, const attn_tuning_db *db, size_t adding,
                                   char *err, size_t errsize);
/* Writes db to path atomically (a temporary file in the same folder, then
 * rename, then the folder synced), making the folder if needed. A file
 * there that this process may not write is refused (ATTN_ERROR_IO), not
 * replaced. */
attn_status attn_tuning_db_save(const char *path, const attn_tuning_db *db, char *err,
                                size_t errsize);

/* Read-modify-write of the file at path under an exclusive lock on
 * "path.lock", so concurrent tuners lose nothing: loads it, calls
 * fn(db, arg) (which changes db and returns 0, returns 1 when it changed
 * nothing, or -1 to abandon), and saves it atomically when changed (a
 * missing file stays missing when nothing changed). */
attn_status attn_tuning_db_update(const char *path, int (*fn)(attn_tuning_db *db, void *arg),
                                  void *arg, char *err, size_t errsize);
/* Whether attn_tuning_db_update could write path: its folder made and
 * writable (the lock, the temporary and the rename happen there), and the
 * file, where there is one, writable. Nothing is written; a full disk shows
 * only when the write comes. ATTN_ERROR_IO naming the folder or the file
 * otherwise. */
attn_status attn_tuning_db_check_writable(const char *path, char *err, size_t errsize);
/* The common update: merge entries into the file (same device and class
 * replaced). No entries: nothing is written (not even a missing folder
 * made), and the file is only read (a corrupt one is still refused). */
attn_status attn_tuning_db_merge_file(const char *path, const attn_tuning_entry *entries,
                                      size_t n, char *err, size_t errsize);
/* The same, and *replaced: how many of the file's entries an entry of
 * entries took the place of (attn-tune --import says so), where entries
 * hold one entry a slot, as a loaded database's do. */
attn_status attn_tuning_db_merge_file_counted(const char *path, const attn_tuning_entry *entries,
                                              size_t n, size_t *replaced, char *err,
                                              size_t errsize);

/* ---- lookup (tuning_lookup.c) ---- */

typedef enum attn_tuning_tier {
    ATTN_TIER_NONE = 0,  /* nothing usable: the heuristic */
    ATTN_TIER_STALE = 1, /* same device, other driver or kernel sources changed */
    ATTN_TIER_EXACT = 2  /* same device, driver and kernel sources */
} attn_tuning_tier;

/* An entry's params as this build reads them: 0 and *out (when given), or
 * ATTN_PARAMS_SYNTAX (a corrupt entry) or ATTN_PARAMS_UNKNOWN (a newer
 * attn's, in its params or its class: never applied) with why. */
int attn_tuning_entry_params(const attn_tuning_entry *e, attn_params *out, char *why,
                             size_t size);

/* The best entry of db for class c on device id: the exact tier first, then
 * stale, each the nearest class (attn_shape_class_distance). hashes[f] is
 * the current source hash of family f (NULL: any hash counts as current).
 * Returns the tier; *out the entry (NULL for ATTN_TIER_NONE). */
attn_tuning_tier attn_tuning_db_lookup(const attn_tuning_db *db, const attn_device_identity *id,
                                       const char *const hashes[ATTN_FAMILY_COUNT], const attn_shape_class *c,
                                       const attn_tuning_entry **out);
/* The same, among the entries usable(e, arg) accepts (usable NULL: all). */
attn_tuning_tier attn_tuning_db_lookup_usable(const attn_tuning_db *db,
                                              const attn_device_identity *id,
                                              const char *const hashes[ATTN_FAMILY_COUNT],
                                              const attn_shape_class *c,
                                              int (*usable)(const attn_tuning_entry *, void *),
                                              void *arg, const attn_tuning_entry **out);

/* Whether the database already holds a current (exact-tier, same class
 * exactly, level >= level) entry for c: the tuner skips such classes. */
const attn_tuning_entry *attn_tuning_db_find_current(const attn_tuning_db *db,
                                                     const attn_device_identity *id,
                                                     const char *const hashes[ATTN_FAMILY_COUNT],
                                                     const attn_shape_class *c, int level);

/* Library side: what the planner (plan.c) asks. Loads the context's user
 * and system database once; replaces *pr and *source ("tuned" or "stale")
 * when an entry of class c (a decode class for attn_decode) applies and is
 * legal here. Never fails: a corrupt database is one warning and the
 * heuristic. Caller holds ctx->lock. */
void attn_tuning_apply(attn_context *ctx, const attn_device_limits *dev, const attn_problem *p,
                       const attn_shape_class *c, attn_params *pr, const char **source);
/* While attn_tuning_force holds parameters: 1 with them in *pr. */
int attn_tuning_forced(attn_context *ctx, attn_params *pr);
/* Forgets the loaded databases (they are read again on the next plan) and
 * the cached plans. */
void attn_tuning_reload(attn_context *ctx);
/* The tuner's way to run one candidate through attn_forward: while set,
 * every plan on ctx uses *pr (source "override"); NULL clears it. */
attn_status attn_tuning_force(attn_context *ctx, const attn_params *pr);
/* Frees what attn_tuning_apply keeps on ctx (context.c calls it). */
void attn_tuning_release(attn_context *ctx);

/* ---- measuring one candidate (tune_measure.c) ---- */

typedef enum attn_candidate_status {
    ATTN_CAND_OK = 0,       /* verified and timed */
    ATTN_CAND_BUILD,        /* failed to build */
    ATTN_CAND_DEVICE,       /* rejected by the device (enqueue or run failed) */
    ATTN_CAND_WRONG,        /* missed the tolerance, or left NaN in the output */
    ATTN_CAND_SLOW          /* verified but abandoned: far slower than the best so far */
} attn_candidate_status;

const char *attn_candidate_status_name(attn_candidate_status s);

typedef struct attn_candidate_result {
    attn_candidate_status status;
    double max_error, error_ratio; /* verification: worst error and worst error / tolerance */
    double verify_ms;              /* one run on the verification shape (after a first one) */
    double median_ms, gflops;      /* on the timing shape (ATTN_CAND_OK) */
    attn_time_spread spread;       /* of those reps */
    int reps;
    char why[1024];                /* for a rejection: what went wrong */
} attn_candidate_result;

/* One class's workbench: the timing problem with its buffers, and the small
 * verification problem with its inputs and reference output. */
typedef struct attn_tune_bench attn_tune_bench;

/* The kind of KV cache a decode class reads (attn_kv_cache_desc's fields):
 * block_size 0 contiguous, else paged (a power of two 16..256); storage as
 * the dtype or int8. All zero: contiguous, as the dtype. */
typedef struct attn_tune_cache {
    int block_size;
    attn_kv_storage storage;
} attn_tune_cache;

/* Makes the buffers for timing p and for verifying p's class (same head
 * dim, type, causality and group; padding, a causal diagonal off the main
 * one, lengths that are not tile multiples; the reference computed once),
 * for entry point `entry` (ATTN_ENTRY_*). A decode bench times attn_decode
 * of p's q_len new queries against a cache of kind kv (NULL: contiguous,
 * as the dtype) and capacity p->kv_len filled to it, and verifies on a
 * small cache of the same kind holding ragged prefixes (an int8 cache at
 * attn_kv_tolerance). A prefill bench takes kv NULL. */
attn_status attn_tune_bench_create(attn_context *ctx, int entry, const attn_problem *p,
                                   const attn_tune_cache *kv, attn_tune_bench **out);
void attn_tune_bench_free(attn_tune_bench *b);
const attn_problem *attn_tune_bench_problem(const attn_tune_bench *b);
int attn_tune_bench_entry(const attn_tune_bench *b);
attn_context *attn_tune_bench_context(const attn_tune_bench *b);
/* The limits of the bench's device, as the heuristic and legality see them. */
void attn_tune_bench_limits(const attn_tune_bench *b, attn_device_limits *dev);
/* The bench's class (a decode class with its cache's kind). */
void attn_tune_bench_class(const attn_tune_bench *b, attn_shape_class *c);
/* The built-in default of the bench's class: the device heuristic, its keys
 * per block fitted to a paged cache's block (attn_plan_fit_page), as
 * attn_decode would run it without a tuned entry. */
attn_params attn_tune_bench_default(const attn_tune_bench *b);
/* The library's own plan for the bench's class (tuned, stale, heuristic or
 * override): *info as attn_prepare reports it, or for decode
 * attn_decode_prepare through the timing cache (its params end with the
 * splits it launches); *planned the parameters as planned (decode's splits
 * 0 when automatic, as the heuristic's), for attn_tune_retime. */
attn_status attn_tune_bench_plan(attn_tune_bench *b, attn_plan_info *info, attn_params *planned);

typedef struct attn_measure_opts {
    double target_ms;  /* timed reps add up to about this much */
    int min_reps, max_reps;
    /* 0, or: abandon (ATTN_CAND_SLOW) when the first run on the timing
     * shape takes more than slow_factor * best_ms (twice that for the
     * warm-up run, which may include lazy compilation) */
    double slow_factor, best_ms;
    /* 0, or: abandon before timing when the run on the verification shape
     * takes more than verify_factor * best_verify_ms */
    double verify_factor, best_verify_ms;
} attn_measure_opts;

/* Verifies candidate pr (fresh NaN-filled outputs, O and LSE against the
 * reference at the DESIGN tolerance), then times it through attn_forward
 * (attn_decode on a decode bench):
 * an untimed warm-up, a calibration run, reps for opts->target_ms, median.
 * Each run's time is that of everything attn_forward enqueues, from
 * profiling events. Returns ATTN_SUCCESS with the verdict in *r; another
 * status only when the context itself fails. */
attn_status attn_tune_measure(attn_tune_bench *b, const attn_params *pr,
                              const attn_measure_opts *opts, attn_candidate_result *r);

/* Times the given candidates (already verified) interleaved: `rounds`
 * rounds, each running every candidate once, after one warm-up round when
 * `warmup` is set. ms[i] receives candidate i's median, and spread[i] (when
 * spread is not NULL) the spread of its rounds. A run that fails is the
 * status returned, unless drop_failures: then its candidate is dropped,
 * with a warning naming it and why (ms[i] = INFINITY, spread zero), and
 * another status comes back only when every candidate failed (the last
 * failure's) or out of host memory. */
attn_status attn_tune_retime(attn_tune_bench *b, const attn_params *cands, int n, int rounds,
                             int warmup, int drop_failures, double *ms,
                             attn_time_spread *spread);

/* ---- the search (tune_search.c) ---- */

typedef struct attn_search_opts {
    double budget_s;       /* stop starting candidates after this long (0: no limit) */
    int max_candidates;    /* at most this many measured (0: no limit) */
    int level;             /* ATTN_TUNE_LEVEL_* */
    uint64_t seed;         /* for the random start */
    unsigned families;     /* bit mask of 1 << attn_family; 0 = all */
    const attn_params *hint; /* NULL, or a good start (a neighbouring class's winner) */
    /* called after each candidate (and with cand NULL at the start and the
     * end); may be NULL */
    void (*progress)(void *arg, int done, int planned, double elapsed_s, double budget_s,
                     const attn_params *cand, const attn_candidate_result *r,
                     const attn_params *best, double best_gflops);
    void *progress_arg;
} attn_search_opts;

typedef struct attn_search_result {
    attn_params best, dflt;
    attn_candidate_result best_r; /* best_r.spread: of the final re-timing's rounds */
    double best_ms, default_ms;   /* from the final interleaved re-timing (default_ms 0: the
                                   * default was not timed, or failed there) */
    attn_time_spread default_spread;
    int tested, rejected, slow, space;
    int planned;                  /* the count the progress callback was given */
    int exhaustive;
    int cut_short; /* the budget stopped it with candidates left (max_candidates is no cut) */
} attn_search_result;

/* Tunes one class: the timing problem of bench. Returns ATTN_SUCCESS with a
 * winner, ATTN_ERROR_UNSUPPORTED when no candidate was valid, another
 * status when the context fails. */
attn_status attn_tune_search(attn_tune_bench *b, const attn_search_opts *opts,
                             attn_search_result *out);

#endif /* ATTN_TUNING_H */
