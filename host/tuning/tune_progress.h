/* tune_progress.h -- what a tuning session shows while a class is searched:
 * a bar with the ETA on a terminal, a line per candidate otherwise (both on
 * stderr), and when the class measured its first candidate, which the
 * session's budget rule uses. Internal to the tuner (tune_session.c). */
#ifndef ATTN_TUNE_PROGRESS_H
#define ATTN_TUNE_PROGRESS_H

#include "tuning/tuning.h"

typedef struct attn_tune_progress {
    int quiet, tty;
    const char *cls;
    int index, total;  /* this class's number and the count of classes */
    double run_t0, run_budget, class_budget;
    int classes_left;  /* after this one */
    int last_len;      /* characters of the bar line on screen */
    double class_t0;   /* when this class started */
    double first_result_s; /* this class's start to its first measured candidate, 0 = none */
    int entry;         /* ATTN_ENTRY_*: which tunables a candidate shows */
} attn_tune_progress;

/* attn_search_opts.progress, with arg an attn_tune_progress. */
void attn_tune_progress_update(void *arg, int done, int planned, double elapsed, double budget,
                               const attn_params *cand, const attn_candidate_result *r,
                               const attn_params *best, double best_gflops);
/* Clears the bar line, if one is on screen. */
void attn_tune_progress_end(attn_tune_progress *pg);

#endif /* ATTN_TUNE_PROGRESS_H */
