/* tune_session.c -- attn_tune_run, a tuning session over many shapes: one
 * job per class, the run's budget shared among the classes still to tune
 * (a class is not started when too little is left), the previous winners as
 * starting hints, the fp32 peak around the run as the noise check, and each
 * winner merged into the database at once (an interrupted run keeps them). */
#define _POSIX_C_SOURCE 200809L
#include "tuning/tune_session.h"
#include "tuning/tune_progress.h"
#include "tuning/tune_shapes.h"
#include "core/program.h"
#include "core/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_HINTS 8     /* winners kept as starting points */
#define MAX_SEEN 16     /* (head dim, type) pairs whose kernels were built */

typedef struct job {
    attn_problem p;
    attn_shape_class cls;
    int skip; /* the database already holds a current entry */
    /* its current entry was cut short by a budget: the search resumes
     * from that entry's winner (the hint) */
    int resume;
    attn_params resume_from;
} job;

typedef struct session {
    attn_context *ctx;
    const attn_tune_run_opts *o;
    attn_tune_run_result *r;
    attn_status first; /* the first failure's status */
    int stop;          /* the database cannot be written: nothing more could be saved */
    attn_device_identity id;
    char hash[ATTN_FAMILY_COUNT][17];
    job *jobs;
    int njobs;
    double deadline;
    attn_tune_progress pg;
    /* What starting a class costs up to its first measured candidate: a
     * class whose head dim and type no class before it had builds its
     * kernels anew (PoCL here: 4-5 s), the others reuse them (under 1 s).
     * The slowest "new" start and the quickest "reused" one so far. */
    double start_new_s, start_reused_s;
    int seen_n, seen_d[MAX_SEEN], seen_t[MAX_SEEN];
    attn_params hints[MAX_HINTS];
    attn_shape_class hint_cls[MAX_HINTS];
    int nhints;
} session;

static void failed(session *s, attn_status st)
{
    if (s->first == ATTN_SUCCESS) s->first = st;
    s->r->failed++;
}

static void utc_now(char *buf, size_t size)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Test-only: ATTN_TUNE_TEST_DELAY_MS makes each class last at least that
 * long, so that a test can kill a run between classes or in the middle of
 * one. */
static void test_delay(double class_t0)
{
    const char *env = getenv("ATTN_TUNE_TEST_DELAY_MS");
    double want = 0; /* unset, or not a plain number of ms up to an hour: no delay */
    if (env && attn_parse_double(env, 0, 3.6e6, &want) == 0) want *= 1e-3;
    while (want > 0 && attn_now_s() - class_t0 < want) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* One job per class, the first shape of each class timed; a class with a
 * current entry is skipped unless forced. */
static void make_jobs(session *s, const attn_tuning_db *db)
{
    const attn_tune_run_opts *o = s->o;
    const char *hashes[ATTN_FAMILY_COUNT];
    for (int f = 0; f < ATTN_FAMILY_COUNT; f++) hashes[f] = s->hash[f];
    for (int i = 0; i < o->nshapes; i++) {
        attn_shape_class c;
        if (o->entry == ATTN_ENTRY_DECODE)
            attn_decode_class_of(&o->shapes[i], o->kv.block_size, o->kv.storage == ATTN_KV_INT8,
                                 &c);
        else
            attn_shape_class_of(&o->shapes[i], &c);
        int dup = 0;
        for (int j = 0; j < s->njobs; j++) dup |= attn_shape_class_equal(&s->jobs[j].cls, &c);
        if (dup) continue;
        job *jb = &s->jobs[s->njobs++];
        jb->p = o->shapes[i];
        jb->cls = c;
        /* a class whose search the budget cut short is tuned again */
        const attn_tuning_entry *cur =
            attn_tuning_db_find_current(db, &s->id, hashes, &c, o->level);
        jb->skip = !o->force && cur && !cur->cut_short;
        char why[256];
        jb->resume = !jb->skip && cur && cur->cut_short &&
                     attn_tuning_entry_params(cur, &jb->resume_from, why, sizeof why) == 0;
        s->r->to_tune += !jb->skip;
    }
    s->r->classes = s->njobs;
}

static void print_header(const session *s)
{
    const attn_tune_run_opts *o = s->o;
    const attn_device_identity *id = &s->id;
    printf("attn-tune %s: %s / %s (driver %s, %u compute units)\n", attn_version_string(),
           id->platform, id->name, id->driver, id->compute_units);
    printf("database %s; %d %sclass%s, %d to tune, %s search, budget %.0f s\n", o->db_path,
           s->njobs, o->entry == ATTN_ENTRY_DECODE ? "decode " : "", s->njobs == 1 ? "" : "es",
           s->r->to_tune,
           o->level == ATTN_TUNE_LEVEL_QUICK ? "quick" : "full", o->budget_s);
    /* the storage types are part of the class: say which are tuned */
    int has[3] = {0, 0, 0};
    for (int j = 0; j < s->njobs; j++)
        if ((unsigned)s->jobs[j].cls.dtype < 3) has[s->jobs[j].cls.dtype] = 1;
    char types[32] = "";
    const char *names[3] = {"f32", "f16", "bf16"};
    const attn_dtype order[3] = {ATTN_F32, ATTN_F16, ATTN_BF16};
    for (int t = 0; t < 3; t++)
        if (has[order[t]])
            snprintf(types + strlen(types), sizeof types - strlen(types), "%s%s",
                     *types ? ", " : "", names[t]);
    printf("storage types tuned: %s (a shape without f16 or bf16 is tuned in f32 only)\n",
           types);
    fflush(stdout);
}

/* The database entry of a class's winner. */
static void make_entry(const session *s, const job *jb, const attn_search_result *res,
                       attn_tuning_entry *e)
{
    memset(e, 0, sizeof *e);
    e->device = s->id;
    snprintf(e->kernel_hash, sizeof e->kernel_hash, "%s", s->hash[res->best.family]);
    snprintf(e->tool_version, sizeof e->tool_version, "%s", attn_version_string());
    utc_now(e->date, sizeof e->date);
    e->cls = jb->cls;
    e->batch = jb->p.batch;
    e->q_heads = jb->p.q_heads;
    e->kv_heads = jb->p.kv_heads;
    e->q_len = jb->p.q_len;
    e->kv_len = jb->p.kv_len;
    attn_search_format(s->o->entry, &res->best, e->params, sizeof e->params);
    e->median_ms = res->best_ms;
    const double flops = attn_problem_flops(&jb->p, NULL);
    e->gflops = flops / (res->best_ms * 1e6);
    attn_search_format(s->o->entry, &res->dflt, e->default_params, sizeof e->default_params);
    e->default_ms = res->default_ms;
    e->spread = res->best_r.spread;
    e->default_spread = res->default_spread;
    e->default_gflops = res->default_ms > 0 ? flops / (res->default_ms * 1e6) : 0;
    e->max_error = res->best_r.max_error;
    e->error_ratio = res->best_r.error_ratio;
    e->level = s->o->level;
    e->tested = res->tested;
    e->rejected = res->rejected;
    e->cut_short = res->cut_short;
}

/* Merges the winner into the database and reports it. */
static void save(session *s, const job *jb, const attn_search_result *res, const char *cls,
                 double t0)
{
    attn_tuning_entry e;
    make_entry(s, jb, res, &e);
    test_delay(t0);
    char err[1024];
    attn_status st = attn_tuning_db_merge_file(s->o->db_path, &e, 1, err, sizeof err);
    if (st != ATTN_SUCCESS) {
        /* the search's result, so that the time spent is not lost */
        fprintf(stderr, "attn-tune: %s: %s\nattn-tune: %s: not stored: %s (%.1f GFLOP/s, "
                "default %s %.1f); the classes after it were not tuned\n",
                attn_status_name(st), err, cls, e.params, e.gflops, e.default_params,
                e.default_gflops);
        failed(s, st);
        s->stop = 1;
        return;
    }
    s->r->tuned++;
    const double iqr = attn_time_spread_iqr(&res->best_r.spread);
    const double diqr = attn_time_spread_iqr(&res->default_spread);
    if (!s->o->quiet) {
        /* "of N planned" is the progress bar's N; the IQR is the winner's
         * (and the default's) over the final re-timing's rounds */
        printf("%-32s %-40s %8.1f GFLOP/s, default %8.1f (x%.3f), %d tested (%d rejected, "
               "%d abandoned) of %d planned (%d in the space%s) in %.1f s; times %.3f..%.3f "
               "ms, IQR %.1f%% (default %.1f%%)\n", cls, e.params, e.gflops,
               e.default_gflops, e.default_gflops > 0 ? e.gflops / e.default_gflops : 0.0,
               res->tested, res->rejected, res->slow, res->planned, res->space,
               res->exhaustive ? ", all" : "", attn_now_s() - t0, res->best_r.spread.min_ms,
               res->best_r.spread.max_ms, 100 * iqr, 100 * diqr);
        if (res->cut_short)
            printf("%-32s cut short by the budget: stored, and tuned again by the next run\n",
                   cls);
        fflush(stdout);
    }
    if (iqr > ATTN_NOISE_LIMIT || diqr > ATTN_NOISE_LIMIT) {
        s->r->noisy++;
        if (!s->o->quiet)
            fprintf(stderr, "attn-tune: WARNING: %s: the times spread by more than %.0f%% of "
                    "their median between the quartiles: too noisy to rank close candidates\n",
                    cls, 100 * ATTN_NOISE_LIMIT);
    }
}

/* Whether the kernels of job jb's head dim and type were built before. */
static int kernels_reused(const session *s, const job *jb)
{
    int reused = 0;
    for (int k = 0; k < s->seen_n; k++)
        reused |= s->seen_d[k] == jb->cls.head_dim && s->seen_t[k] == (int)jb->cls.dtype;
    return reused;
}

/* What this class's start cost teaches about the next ones'. */
static void learn_start(session *s, const job *jb, int reused)
{
    const double first = s->pg.first_result_s;
    if (first > 0) {
        if (!reused && first > s->start_new_s) s->start_new_s = first;
        if (reused && (s->start_reused_s == 0 || first < s->start_reused_s))
            s->start_reused_s = first;
    }
    if (!reused && s->seen_n < MAX_SEEN) {
        s->seen_d[s->seen_n] = jb->cls.head_dim;
        s->seen_t[s->seen_n++] = (int)jb->cls.dtype;
    }
}

/* Searches job j's class within its share of what is left of the budget
 * (left: the classes still to start, this one included). */
static void tune_class(session *s, int j, int left, double t0, const char *cls)
{
    const attn_tune_run_opts *o = s->o;
    const job *jb = &s->jobs[j];
    char shape[128];
    tune_shape_format(&jb->p, shape, sizeof shape);
    const int reused = kernels_reused(s, jb);
    const double class_budget = (s->deadline - t0) / left;
    attn_tune_progress *pg = &s->pg;
    pg->cls = cls;
    pg->class_t0 = t0;
    pg->first_result_s = 0;
    pg->index++;
    pg->class_budget = class_budget;
    pg->classes_left = left - 1;

    attn_tune_bench *bench = NULL;
    attn_status st = attn_tune_bench_create(s->ctx, o->entry, &jb->p,
                                            o->entry == ATTN_ENTRY_DECODE ? &o->kv : NULL, &bench);
    if (st != ATTN_SUCCESS) {
        fprintf(stderr, "attn-tune: %s (%s): %s: %s\n", cls, shape, attn_status_name(st),
                attn_last_error(s->ctx));
        failed(s, st);
        return;
    }
    /* where a search the budget cut short left off, else the winner of a
     * class with the same head dim, type and causality: a good place to
     * start */
    const attn_params *hint = jb->resume ? &jb->resume_from : NULL;
    for (int h = s->nhints - 1; h >= 0 && !hint; h--)
        if (attn_shape_class_distance(&s->hint_cls[h], &jb->cls) >= 0) hint = &s->hints[h];
    attn_search_opts so;
    memset(&so, 0, sizeof so);
    so.budget_s = class_budget - (attn_now_s() - t0); /* making the bench counts too */
    if (so.budget_s > s->deadline - attn_now_s()) so.budget_s = s->deadline - attn_now_s();
    if (so.budget_s < 0.01) so.budget_s = 0.01; /* 0 would mean no limit: one candidate */
    so.max_candidates = o->max_candidates;
    so.level = o->level;
    so.seed = (o->seed ? o->seed : 1) * 0x9e3779b97f4a7c15ull + (uint64_t)j;
    so.families = o->families;
    so.hint = hint;
    so.progress = attn_tune_progress_update;
    so.progress_arg = pg;
    attn_search_result res;
    st = attn_tune_search(bench, &so, &res);
    attn_tune_progress_end(pg);
    learn_start(s, jb, reused);
    attn_tune_bench_free(bench);
    if (st != ATTN_SUCCESS) {
        fprintf(stderr, "attn-tune: %s (%s): %s: %s\n", cls, shape, attn_status_name(st),
                attn_last_error(s->ctx));
        failed(s, st);
        return;
    }
    if (s->nhints < MAX_HINTS) {
        s->hints[s->nhints] = res.best;
        s->hint_cls[s->nhints++] = jb->cls;
    }
    save(s, jb, &res, cls, t0);
}

/* The jobs in order, each started only when the budget allows. */
static void run_jobs(session *s)
{
    const int quiet = s->o->quiet;
    for (int j = 0; j < s->njobs && !s->stop; j++) {
        char cls[96];
        attn_shape_class_format(&s->jobs[j].cls, cls, sizeof cls);
        if (s->jobs[j].skip) {
            if (!quiet) {
                printf("%-32s already tuned (current entry in the database): skipped\n", cls);
                fflush(stdout);
            }
            continue;
        }
        const double t0 = attn_now_s();
        /* The budget is the run's: a class is not started when the time
         * left is less than a class like it (new kernels to build or not)
         * took so far to measure its first candidate (bench, build,
         * verification), and each search stops at the deadline; only the
         * candidate in flight may pass it. */
        const double need = kernels_reused(s, &s->jobs[j]) ? s->start_reused_s
                                                            : s->start_new_s; /* 0: not known */
        if (t0 >= s->deadline || (need > 0 && s->deadline - t0 < need)) {
            if (!quiet) {
                printf("%-32s not tuned: the budget is spent (%.1f s left)\n", cls,
                       s->deadline - t0 > 0 ? s->deadline - t0 : 0.0);
                fflush(stdout);
            }
            s->r->unstarted++;
            continue;
        }
        tune_class(s, j, s->r->to_tune - s->pg.index - s->r->unstarted, t0, cls);
    }
}

/* The fp32 peak before the run, and the time set aside to measure it again
 * after: a machine busy with other work shows as the two disagreeing, and
 * then close candidates cannot be ranked. */
static double peak_before(session *s)
{
    double t = attn_now_s();
    if (s->r->to_tune > 0 && attn_device_peak_gflops(s->ctx, &s->r->peak_before) != ATTN_SUCCESS)
        s->r->peak_before = 0;
    /* the measurement at the end is kept within the budget too; it reuses
     * the built kernel (PoCL here: 3.0 s for the first, building, 0.3-0.4 s
     * for the next), so at most 1 s is set aside for it */
    t = attn_now_s() - t;
    if (!s->o->quiet && s->r->peak_before > 0) {
        printf("fp32 FMA peak before tuning: %.1f GFLOP/s\n", s->r->peak_before);
        fflush(stdout);
    }
    return s->r->peak_before > 0 ? (t > 1.0 ? 1.0 : t) : 0;
}

static void print_summary(session *s, double start)
{
    const attn_tune_run_result *r = s->r;
    const int quiet = s->o->quiet;
    const double drift = attn_relative_change(r->peak_before, r->peak_after);
    if (!quiet && r->peak_after > 0)
        printf("fp32 FMA peak: %.1f GFLOP/s before tuning, %.1f after (%.1f%% apart)\n",
               r->peak_before, r->peak_after, 100 * drift);
    if (!quiet && (drift > ATTN_NOISE_LIMIT || r->noisy))
        fprintf(stderr, "attn-tune: WARNING: too noisy to rank candidates reliably: the peak moved "
                "%.0f%% during the run, %d class%s spread beyond %.0f%%; re-tune (--force) on a "
                "quieter machine\n", 100 * drift, r->noisy, r->noisy == 1 ? "" : "es",
                100 * ATTN_NOISE_LIMIT);
    if (!quiet) {
        printf("%s in %.1f s (budget %.0f s)",
               r->failed ? "FAILED: see the messages above" : "done", attn_now_s() - start,
               s->o->budget_s);
        if (r->unstarted)
            printf("; %d class%s not tuned for want of time: run again to go on (finished "
                   "classes are kept)", r->unstarted, r->unstarted == 1 ? "" : "es");
        printf("\n");
    } else if (r->unstarted) { /* a script must learn that classes are left */
        fprintf(stderr, "attn-tune: %d class%s not tuned for want of time: run again to go on "
                "(finished classes are kept)\n", r->unstarted, r->unstarted == 1 ? "" : "es");
    }
}

attn_status attn_tune_run(attn_context *ctx, const attn_tune_run_opts *opts,
                          attn_tune_run_result *out)
{
    memset(out, 0, sizeof *out);
    const double start = opts->start_s > 0 ? opts->start_s : attn_now_s();
    session s;
    memset(&s, 0, sizeof s);
    s.ctx = ctx, s.o = opts, s.r = out;
    const int kv_prefill = opts->entry == ATTN_ENTRY_PREFILL &&
                           (opts->kv.block_size || opts->kv.storage != ATTN_KV_AS_DTYPE);
    if (!opts->db_path || !opts->shapes || opts->nshapes < 1 || !(opts->budget_s > 0) ||
        (opts->level != ATTN_TUNE_LEVEL_QUICK && opts->level != ATTN_TUNE_LEVEL_FULL) ||
        (opts->entry != ATTN_ENTRY_PREFILL && opts->entry != ATTN_ENTRY_DECODE) || kv_prefill) {
        fprintf(stderr, "attn-tune: attn_tune_run: %s\n", !opts->db_path ? "db_path is NULL"
                : !opts->shapes || opts->nshapes < 1 ? "no shapes"
                : !(opts->budget_s > 0) ? "budget_s must be > 0"
                : opts->entry != ATTN_ENTRY_PREFILL && opts->entry != ATTN_ENTRY_DECODE
                ? "entry is not one of ATTN_ENTRY_PREFILL, ATTN_ENTRY_DECODE"
                : kv_prefill ? "kv (a cache's kind) is for ATTN_ENTRY_DECODE only" : "level is "
                "not one of ATTN_TUNE_LEVEL_QUICK, ATTN_TUNE_LEVEL_FULL");
        failed(&s, ATTN_ERROR_INVALID_ARGUMENT);
        return s.first;
    }
    char err[1024];
    attn_tuning_db db;
    attn_tuning_db_init(&db);
    attn_status st = attn_tuning_db_load(opts->db_path, &db, NULL, err, sizeof err);
    if (st != ATTN_SUCCESS) {
        fprintf(stderr, "attn-tune: %s: %s\n", attn_status_name(st), err);
        failed(&s, st);
        return s.first;
    }
    attn_device_identity_of(ctx, &s.id);
    for (int f = 0; f < ATTN_FAMILY_COUNT; f++)
        if ((st = attn_entry_source_hash(ctx, opts->entry, f, s.hash[f])) != ATTN_SUCCESS) {
            fprintf(stderr, "attn-tune: %s\n", attn_last_error(ctx));
            failed(&s, st);
            goto done;
        }
    if (!(s.jobs = calloc((size_t)opts->nshapes, sizeof *s.jobs))) {
        fprintf(stderr, "attn-tune: out of host memory\n");
        failed(&s, ATTN_ERROR_OUT_OF_MEMORY);
        goto done;
    }
    make_jobs(&s, &db);
    /* before any class is tuned, not after the first one's search */
    if (out->to_tune > 0 &&
        (st = attn_tuning_db_check_writable(opts->db_path, err, sizeof err)) != ATTN_SUCCESS) {
        fprintf(stderr, "attn-tune: %s: %s\n", attn_status_name(st), err);
        failed(&s, st);
        goto done;
    }
    /* what a save would refuse (an entry or member this build cannot keep,
     * a database the new classes would take past its limit): said now,
     * not after the first class's search */
    size_t adding = 0;
    attn_tuning_entry slot = {0}; /* the slot a job's result would fill */
    slot.device = s.id;
    for (int j = 0; j < s.njobs; j++) {
        int held = 0;
        slot.cls = s.jobs[j].cls;
        for (size_t i = 0; i < db.count && !held && !s.jobs[j].skip; i++)
            held = attn_tuning_same_slot(&db.entries[i], &slot);
        adding += !s.jobs[j].skip && !held;
    }
    if (out->to_tune > 0 && (st = attn_tuning_db_refusal(opts->db_path, &db, adding, err,
                                                         sizeof err)) != ATTN_SUCCESS) {
        fprintf(stderr, "attn-tune: %s: %s: nothing tuned could be stored\n",
                attn_status_name(st), err);
        failed(&s, st);
        goto done;
    }
    if (!opts->quiet) print_header(&s);
    const double peak_s = peak_before(&s);
    const attn_tune_progress pg = {opts->quiet, isatty(STDERR_FILENO), "", 0, out->to_tune,
                                   start, opts->budget_s, 0, 0, 0, 0, 0, opts->entry};
    s.pg = pg;
    s.deadline = start + opts->budget_s - peak_s;
    run_jobs(&s);
    if (out->peak_before > 0 && attn_device_peak_gflops(ctx, &out->peak_after) != ATTN_SUCCESS)
        out->peak_after = 0;
    print_summary(&s, start);
done:
    free(s.jobs);
    attn_tuning_db_free(&db);
    return s.first;
}
