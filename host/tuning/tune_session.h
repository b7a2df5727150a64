/* tune_session.h -- attn_tune_run: a whole tuning session over a list of
 * shapes (one class each, duplicates dropped; classes the database already
 * holds skipped unless forced), the run's budget shared among the classes
 * still to tune, each class's search started from a neighbouring class's
 * winner, each winner written to the database as soon as it is known.
 * attn-tune's default command is this function; the tests call it too. */
#ifndef ATTN_TUNE_SESSION_H
#define ATTN_TUNE_SESSION_H

#include "tuning/tuning.h"

typedef struct attn_tune_run_opts {
    const char *db_path;         /* the database file to merge the winners into */
    const attn_problem *shapes;  /* the shapes whose classes are tuned, in order */
    int nshapes;
    int level;                   /* ATTN_TUNE_LEVEL_QUICK or _FULL */
    double budget_s;             /* the whole run, from start_s on (> 0) */
    double start_s;              /* attn_now_s() when the run began (0: now), so
                                    the caller's own start-up counts */
    int max_candidates;          /* per class; 0 = no limit */
    unsigned families;           /* bit mask of 1 << attn_family; 0 = all */
    unsigned long long seed;     /* of the random starts; 0 = 1 */
    int force;                   /* re-tune classes the database holds */
    int quiet;                   /* print nothing but errors */
    int entry;                   /* ATTN_ENTRY_PREFILL (0): the shapes are attn_forward's;
                                    ATTN_ENTRY_DECODE: attn_decode's, q_len new queries
                                    against a cache of kv_len (the class's length) */
    attn_tune_cache kv;          /* decode: the cache's kind, part of every class
                                    (zero: contiguous, as the dtype; prefill: zero) */
} attn_tune_run_opts;

typedef struct attn_tune_run_result {
    int classes;      /* distinct classes among the shapes */
    int to_tune;      /* of them, not already in the database (or forced) */
    int tuned;        /* written to the database */
    int unstarted;    /* not started for want of time */
    int failed;       /* classes (or steps) that failed, messages on stderr */
    int noisy;        /* tuned classes whose times spread beyond ATTN_NOISE_LIMIT */
    double peak_before, peak_after; /* fp32 GFLOP/s around the run, 0 = not measured */
} attn_tune_run_result;

/* Runs the session on ctx (whose check mode the caller turns off: every
 * candidate is verified on its own), printing what attn-tune prints (a header, a line
 * per class, progress on stderr, the summary) unless quiet. Returns
 * ATTN_SUCCESS when every class it started was tuned and saved; otherwise
 * the first failure's status, with the message on stderr (and the count in
 * out->failed). A class left for want of time is no failure. */
attn_status attn_tune_run(attn_context *ctx, const attn_tune_run_opts *opts,
                          attn_tune_run_result *out);

#endif /* ATTN_TUNE_SESSION_H */
