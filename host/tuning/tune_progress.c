/* tune_progress.c -- the tuning session's progress display (a bar on a
 * terminal, a line per candidate otherwise) and the time to a class's first
 * result that its budget rule reads. */
#include "tuning/tune_progress.h"

#include <stdio.h>

static void fmt_time(double s, char *buf, size_t size)
{
    if (s < 0) s = 0;
    int t = (int)(s + 0.5);
    snprintf(buf, size, "%d:%02d", t / 60, t % 60);
}

void attn_tune_progress_update(void *arg, int done, int planned, double elapsed, double budget,
                               const attn_params *cand, const attn_candidate_result *r,
                               const attn_params *best, double best_gflops)
{
    attn_tune_progress *pg = arg;
    if (cand && done == 1) /* what a class costs before it has anything to show */
        pg->first_result_s = attn_now_s() - pg->class_t0;
    if (pg->quiet) return;
    char best_text[200] = "none yet", eta[16];
    if (best) attn_search_format(pg->entry, best, best_text, sizeof best_text);
    /* this class's remaining time: its budget or its remaining candidates at
     * the pace so far, whichever is sooner; then the classes after it */
    double per = done > 0 ? elapsed / done : 0;
    double left = planned > done ? (planned - done) * per : 0;
    if (budget > 0 && elapsed + left > budget) left = budget - elapsed;
    double later = pg->classes_left * pg->class_budget;
    double run_left = pg->run_budget - (attn_now_s() - pg->run_t0);
    if (later > run_left - left) later = run_left - left;
    fmt_time(left + (later > 0 ? later : 0), eta, sizeof eta);
    if (pg->tty) {
        const int width = 24;
        int fill = planned > 0 ? done * width / planned : 0;
        if (budget > 0 && elapsed / budget * width > fill) fill = (int)(elapsed / budget * width);
        if (fill > width) fill = width;
        char bar[32];
        for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
        bar[width] = 0;
        int n = fprintf(stderr, "\r[%d/%d] %s [%s] %d/%d ETA %s best %.1f GFLOP/s %s", pg->index,
                        pg->total, pg->cls, bar, done, planned, eta, best_gflops, best_text);
        for (int i = n; i < pg->last_len; i++) fputc(' ', stderr);
        pg->last_len = n;
        fflush(stderr);
        return;
    }
    if (!cand) return;
    char text[200];
    attn_search_format(pg->entry, cand, text, sizeof text);
    if (r->status == ATTN_CAND_OK)
        fprintf(stderr, "  [%d/%d] %d/%d %-44s %9.1f GFLOP/s  (verified, error %.1e; ETA %s)\n",
                pg->index, pg->total, done, planned, text, r->gflops, r->max_error, eta);
    else
        fprintf(stderr, "  [%d/%d] %d/%d %-44s %s: %s\n", pg->index, pg->total, done, planned,
                text, attn_candidate_status_name(r->status), r->why);
}

void attn_tune_progress_end(attn_tune_progress *pg)
{
    if (!pg->quiet && pg->tty && pg->last_len) {
        fputc('\r', stderr);
        for (int i = 0; i < pg->last_len; i++) fputc(' ', stderr);
        fputc('\r', stderr);
        pg->last_len = 0;
    }
}
