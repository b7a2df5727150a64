/* attn-tune -- tunes the kernels for one device: per shape class, a search
 * over both kernel families' tunables within a budget, every candidate
 * verified against the CPU reference, the winners written to the tuning
 * database (incrementally, so an interrupted run keeps what it finished and
 * the next run resumes). Also shows, exports, imports and forgets entries. */
#define _POSIX_C_SOURCE 200809L
#include "attn.h"
#include "tune_shapes.h"
#include "tuning.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define QUICK_BUDGET_S 60.0
#define FULL_BUDGET_S 900.0

typedef struct options {
    const char *device, *shapes, *export_file, *import_file, *forget;
    int quick, quiet, show, force, compare;
    double budget_s; /* 0 = the level's default */
    int max_candidates;
    unsigned families;
    unsigned long long seed;
} options;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- command line ---- */

static void usage(FILE *f)
{
    fprintf(f,
        "Usage: attn-tune [OPTIONS]\n"
        "Tunes attn's kernels for one device and writes the winners to the tuning\n"
        "database, which attn_forward then uses for every shape of a tuned class\n"
        "(head dim x storage type x causal x GQA group x power-of-two length bucket;\n"
        "the nearest bucket serves other lengths). Every candidate is verified against\n"
        "the CPU reference; the built-in default is always measured, so a tuned entry\n"
        "is never slower than it. Finished classes are saved at once: an interrupted\n"
        "run keeps them, and the next run skips them (resumes).\n"
        "\n"
        "  --device SEL          \"P:D\" or a substring of platform/vendor/device name\n"
        "                        (default: $ATTN_DEVICE, else the first GPU, else the\n"
        "                        first device; attn-info lists them)\n"
        "  --quick               a short search (default budget %.0f s in all)\n"
        "  --shapes FILE|LIST    tune the classes of these shapes (default: the DESIGN\n"
        "                        prefill set, B=1 Hq=8 Hkv=2 D=64 S=512..4096 and\n"
        "                        B=1 Hq=32 Hkv=8 D=128 S=1024,2048, causal, f32)\n"
        "%s"
        "  --budget SECONDS      the whole run's time, start-up included, shared among\n"
        "                        the classes still to tune (default %.0f; with --quick\n"
        "                        %.0f); a class is not started when too little is left\n"
        "                        (the next run tunes it), so only the candidate in\n"
        "                        flight may overrun it\n"
        "  --max-candidates N    at most N candidates measured per class\n"
        "  --family tiled|vector search one kernel family only (default both)\n"
        "  --force               re-tune classes the database already holds\n"
        "  --seed N              seed of the random start (default 1)\n"
        "  --quiet               print nothing but errors\n"
        "  --show                list the database's entries and exit\n"
        "  --export FILE         write the database to FILE and exit\n"
        "  --import FILE         merge FILE's entries into the database and exit\n"
        "  --forget DEVICE       remove the entries of every device whose platform,\n"
        "                        vendor or name contains DEVICE (\"all\": every entry)\n"
        "  --compare             time the library's choice (tuned, stale or heuristic)\n"
        "                        against the built-in default for the shapes,\n"
        "                        interleaved, with the fp32 peak, and exit\n"
        "  --help, --version\n"
        "\n"
        "Database: $ATTN_TUNING_DB, else $XDG_DATA_HOME/attn/tuning.json, else\n"
        "~/.local/share/attn/tuning.json; also read (never written): the system-wide\n"
        "$ATTN_SYSTEM_TUNING_DB, else /usr/share/attn/tuning.json.\n"
        "Exit status: 0 ok, 1 a failure (a corrupt database: ATTN_ERROR_TUNING_DB with\n"
        "the file and line), 2 bad usage.\n",
        QUICK_BUDGET_S, TUNE_SHAPES_SYNTAX, FULL_BUDGET_S, QUICK_BUDGET_S);
}

enum {
    OPT_DEVICE = 256, OPT_QUICK, OPT_SHAPES, OPT_BUDGET, OPT_MAXCAND, OPT_FAMILY, OPT_FORCE,
    OPT_SEED, OPT_QUIET, OPT_SHOW, OPT_EXPORT, OPT_IMPORT, OPT_FORGET, OPT_COMPARE, OPT_HELP,
    OPT_VERSION
};

static int parse_args(int argc, char **argv, options *o)
{
    static const struct option longopts[] = {
        {"device", required_argument, NULL, OPT_DEVICE},
        {"quick", no_argument, NULL, OPT_QUICK},
        {"shapes", required_argument, NULL, OPT_SHAPES},
        {"budget", required_argument, NULL, OPT_BUDGET},
        {"max-candidates", required_argument, NULL, OPT_MAXCAND},
        {"family", required_argument, NULL, OPT_FAMILY},
        {"force", no_argument, NULL, OPT_FORCE},
        {"seed", required_argument, NULL, OPT_SEED},
        {"quiet", no_argument, NULL, OPT_QUIET},
        {"show", no_argument, NULL, OPT_SHOW},
        {"export", required_argument, NULL, OPT_EXPORT},
        {"import", required_argument, NULL, OPT_IMPORT},
        {"forget", required_argument, NULL, OPT_FORGET},
        {"compare", no_argument, NULL, OPT_COMPARE},
        {"help", no_argument, NULL, OPT_HELP},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    int c, bad = 0;
    char *end;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_DEVICE: o->device = optarg; break;
        case OPT_QUICK: o->quick = 1; break;
        case OPT_SHAPES: o->shapes = optarg; break;
        case OPT_BUDGET:
            errno = 0;
            o->budget_s = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(o->budget_s > 0) || o->budget_s > 1e7) {
                fprintf(stderr, "attn-tune: --budget wants a number of seconds > 0, not '%s'\n",
                        optarg);
                bad = 1;
            }
            break;
        case OPT_MAXCAND: {
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || v < 1 || v > 100000) {
                fprintf(stderr, "attn-tune: --max-candidates wants an integer in 1..100000, not "
                        "'%s'\n", optarg);
                bad = 1;
            }
            o->max_candidates = (int)v;
            break;
        }
        case OPT_FAMILY:
            if (strcmp(optarg, "tiled") == 0) o->families = 1u << ATTN_FAMILY_TILED;
            else if (strcmp(optarg, "vector") == 0) o->families = 1u << ATTN_FAMILY_VECTOR;
            else {
                fprintf(stderr, "attn-tune: --family wants tiled or vector, not '%s'\n", optarg);
                bad = 1;
            }
            break;
        case OPT_FORCE: o->force = 1; break;
        case OPT_SEED:
            errno = 0;
            o->seed = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end) {
                fprintf(stderr, "attn-tune: --seed wants an integer, not '%s'\n", optarg);
                bad = 1;
            }
            break;
        case OPT_QUIET: o->quiet = 1; break;
        case OPT_SHOW: o->show = 1; break;
        case OPT_EXPORT: o->export_file = optarg; break;
        case OPT_IMPORT: o->import_file = optarg; break;
        case OPT_FORGET: o->forget = optarg; break;
        case OPT_COMPARE: o->compare = 1; break;
        case OPT_HELP: usage(stdout); return EXIT_SUCCESS;
        case OPT_VERSION:
            printf("attn-tune %d.%d.%d (libattn %s)\n", ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR,
                   ATTN_VERSION_PATCH, attn_version_string());
            return EXIT_SUCCESS;
        default: bad = 1; break;
        }
    }
    if (!bad && optind < argc) {
        fprintf(stderr, "attn-tune: unexpected argument '%s'\n", argv[optind]);
        bad = 1;
    }
    int commands = o->show + !!o->export_file + !!o->import_file + !!o->forget + o->compare;
    if (!bad && commands > 1) {
        fprintf(stderr, "attn-tune: give one of --show, --export, --import, --forget, --compare\n");
        bad = 1;
    }
    if (bad) {
        fprintf(stderr, "Try 'attn-tune --help'.\n");
        return EXIT_USAGE;
    }
    return -1;
}

/* ---- database commands ---- */

static int db_path(char *buf, size_t size)
{
    if (attn_tuning_db_user_path(buf, size)) return 1;
    fprintf(stderr, "attn-tune: no database path: set ATTN_TUNING_DB, XDG_DATA_HOME or HOME\n");
    return 0;
}

static int db_error(attn_status st, const char *msg)
{
    fprintf(stderr, "attn-tune: %s: %s\n", attn_status_name(st), msg);
    return EXIT_FAILURE;
}

static int contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n) return 1;
    }
    return 0;
}

/* Lists one database file; returns 0, or -1 when it cannot be read. */
static int show_file(const char *label, const char *path, const attn_device_identity *here,
                     const char *const hashes[2])
{
    attn_tuning_db db;
    attn_tuning_db_init(&db);
    char err[1024];
    int missing;
    attn_status st = attn_tuning_db_load(path, &db, &missing, err, sizeof err);
    if (st != ATTN_SUCCESS) {
        fflush(stdout);
        fprintf(stderr, "attn-tune: %s %s: %s: %s\n", label, path, attn_status_name(st), err);
        return -1;
    }
    printf("%s %s: %s%zu entr%s\n", label, path, missing ? "missing, " : "", db.count,
           db.count == 1 ? "y" : "ies");
    for (size_t i = 0; i < db.count; i++) {
        const attn_tuning_entry *e = &db.entries[i];
        char cls[96];
        attn_shape_class_format(&e->cls, cls, sizeof cls);
        const char *mark = "";
        if (here) {
            const attn_tuning_entry *one;
            attn_tuning_db single = {(attn_tuning_entry *)e, 1, 1};
            attn_tuning_tier t = attn_tuning_db_lookup(&single, here, hashes, &e->cls, &one);
            mark = t == ATTN_TIER_EXACT ? " [this device]" : t == ATTN_TIER_STALE ? " [stale: re-tune]" : "";
        }
        printf("  %s / %s (%u CUs, driver %s)%s\n", e->device.platform, e->device.name,
               e->device.compute_units, e->device.driver, mark);
        char iqr[32] = "";
        if (e->spread.max_ms > 0)
            snprintf(iqr, sizeof iqr, ", IQR %.1f%%", 100 * attn_time_spread_iqr(&e->spread));
        printf("    %-32s %-42s %8.1f GFLOP/s%s, default %8.1f (x%.2f)  %s %s, %d tested, "
               "%d rejected, error %.1e\n", cls, e->params, e->gflops, iqr, e->default_gflops,
               e->default_gflops > 0 ? e->gflops / e->default_gflops : 0.0, e->level >= 2 ? "full" : "quick",
               e->date, e->tested, e->rejected, e->max_error);
    }
    attn_tuning_db_free(&db);
    return 0;
}

static int cmd_show(const options *o)
{
    char user[4096], sys[4096];
    if (!db_path(user, sizeof user)) return EXIT_FAILURE;
    /* marks entries as current or stale for the selected device when one
     * can be opened; the listing does not depend on it */
    attn_context *ctx = NULL;
    attn_device_identity id, *here = NULL;
    char hash[2][17] = {"", ""};
    if (attn_context_create(o->device, &ctx) == ATTN_SUCCESS) {
        attn_device_identity_of(ctx, &id);
        here = &id;
        attn_kernel_source_hash(ctx, ATTN_FAMILY_TILED, hash[0]);
        attn_kernel_source_hash(ctx, ATTN_FAMILY_VECTOR, hash[1]);
    }
    const char *hashes[2] = {hash[0], hash[1]};
    /* both are listed; either unreadable fails the command, as --help says */
    int bad = show_file("user database", user, here, hashes) != 0;
    if (attn_tuning_db_system_path(sys, sizeof sys))
        bad |= show_file("system database", sys, here, hashes) != 0;
    attn_context_release(ctx);
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}

static int cmd_export(const options *o)
{
    char path[4096], err[1024];
    if (!db_path(path, sizeof path)) return EXIT_FAILURE;
    attn_tuning_db db;
    attn_tuning_db_init(&db);
    attn_status st = attn_tuning_db_load(path, &db, NULL, err, sizeof err);
    if (st == ATTN_SUCCESS) st = attn_tuning_db_save(o->export_file, &db, err, sizeof err);
    size_t n = db.count;
    attn_tuning_db_free(&db);
    if (st != ATTN_SUCCESS) return db_error(st, err);
    if (!o->quiet) printf("exported %zu entr%s from %s to %s\n", n, n == 1 ? "y" : "ies", path,
                          o->export_file);
    return EXIT_SUCCESS;
}

static int cmd_import(const options *o)
{
    char path[4096], err[1024];
    if (!db_path(path, sizeof path)) return EXIT_FAILURE;
    attn_tuning_db in;
    attn_tuning_db_init(&in);
    int missing;
    attn_status st = attn_tuning_db_load(o->import_file, &in, &missing, err, sizeof err);
    if (st == ATTN_SUCCESS && missing) {
        snprintf(err, sizeof err, "%s: no such file", o->import_file);
        st = ATTN_ERROR_IO;
    }
    if (st == ATTN_SUCCESS) st = attn_tuning_db_merge_file(path, in.entries, in.count, err, sizeof err);
    size_t n = in.count;
    attn_tuning_db_free(&in);
    if (st != ATTN_SUCCESS) return db_error(st, err);
    if (!o->quiet) printf("imported %zu entr%s into %s\n", n, n == 1 ? "y" : "ies", path);
    return EXIT_SUCCESS;
}

typedef struct forget_arg {
    const char *what;
    size_t removed;
} forget_arg;

static int forget_fn(attn_tuning_db *db, void *arg)
{
    forget_arg *f = arg;
    size_t keep = 0;
    for (size_t i = 0; i < db->count; i++) {
        const attn_device_identity *d = &db->entries[i].device;
        int match = strcmp(f->what, "all") == 0 || contains_ci(d->platform, f->what) ||
                    contains_ci(d->vendor, f->what) || contains_ci(d->name, f->what);
        if (match) f->removed++;
        else db->entries[keep++] = db->entries[i];
    }
    db->count = keep;
    return 0;
}

static int cmd_forget(const options *o)
{
    char path[4096], err[1024];
    if (!db_path(path, sizeof path)) return EXIT_FAILURE;
    if (!*o->forget) {
        fprintf(stderr, "attn-tune: --forget wants a device name (or \"all\")\nTry 'attn-tune --help'.\n");
        return EXIT_USAGE;
    }
    forget_arg f = {o->forget, 0};
    attn_status st = attn_tuning_db_update(path, forget_fn, &f, err, sizeof err);
    if (st != ATTN_SUCCESS) return db_error(st, err);
    if (!o->quiet) printf("forgot %zu entr%s matching \"%s\" in %s\n", f.removed,
                          f.removed == 1 ? "y" : "ies", o->forget, path);
    return EXIT_SUCCESS;
}

/* ---- progress ---- */

typedef struct progress {
    int quiet, tty;
    const char *cls;
    int index, total;  /* this class's number and the count of classes */
    double run_t0, run_budget, class_budget;
    int classes_left;  /* after this one */
    int last_len;      /* characters of the bar line on screen */
    double class_t0;   /* when this class started */
    double first_result_s; /* this class's start to its first measured candidate, 0 = none */
} progress;

static void fmt_time(double s, char *buf, size_t size)
{
    if (s < 0) s = 0;
    int t = (int)(s + 0.5);
    snprintf(buf, size, "%d:%02d", t / 60, t % 60);
}

static void on_progress(void *arg, int done, int planned, double elapsed, double budget,
                        const attn_params *cand, const attn_candidate_result *r,
                        const attn_params *best, double best_gflops)
{
    progress *pg = arg;
    if (cand && done == 1) /* what a class costs before it has anything to show */
        pg->first_result_s = now_s() - pg->class_t0;
    if (pg->quiet) return;
    char best_text[200] = "none yet", eta[16];
    if (best) attn_params_format(best, best_text, sizeof best_text);
    /* this class's remaining time: its budget or its remaining candidates at
     * the pace so far, whichever is sooner; then the classes after it */
    double per = done > 0 ? elapsed / done : 0;
    double left = planned > done ? (planned - done) * per : 0;
    if (budget > 0 && elapsed + left > budget) left = budget - elapsed;
    double later = pg->classes_left * pg->class_budget;
    double run_left = pg->run_budget - (now_s() - pg->run_t0) ;
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
    attn_params_format(cand, text, sizeof text);
    if (r->status == ATTN_CAND_OK)
        fprintf(stderr, "  [%d/%d] %d/%d %-44s %9.1f GFLOP/s  (verified, error %.1e; ETA %s)\n",
                pg->index, pg->total, done, planned, text, r->gflops, r->max_error, eta);
    else
        fprintf(stderr, "  [%d/%d] %d/%d %-44s %s: %s\n", pg->index, pg->total, done, planned,
                text, attn_candidate_status_name(r->status), r->why);
}

static void progress_end(progress *pg)
{
    if (!pg->quiet && pg->tty && pg->last_len) {
        fputc('\r', stderr);
        for (int i = 0; i < pg->last_len; i++) fputc(' ', stderr);
        fputc('\r', stderr);
        pg->last_len = 0;
    }
}

/* ---- tuning ---- */

typedef struct job {
    attn_problem p;
    attn_shape_class cls;
    int skip; /* the database already holds a current entry */
} job;

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
    double want = env ? atof(env) * 1e-3 : 0;
    while (want > 0 && now_s() - class_t0 < want) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static int cmd_tune(options *o)
{
    const double run_t0 = now_s(); /* the budget counts the whole run, start-up included */
    char path[4096], err[1024];
    if (!db_path(path, sizeof path)) return EXIT_FAILURE;
    /* the candidates are forced past any override (attn_tuning_force) */
    const char *env = getenv("ATTN_PARAMS");
    if (env && *env && !o->quiet)
        fprintf(stderr, "attn-tune: note: ATTN_PARAMS is ignored while tuning\n");
    attn_problem *shapes = NULL;
    int nshapes = o->shapes ? tune_shapes_from_arg(o->shapes, &shapes, err, sizeof err)
                            : tune_shapes_design(&shapes);
    if (nshapes < 0) {
        fprintf(stderr, "attn-tune: %s\nTry 'attn-tune --help'.\n", o->shapes ? err : "out of memory");
        return EXIT_USAGE;
    }
    /* the database must be readable before any time is spent */
    attn_tuning_db db;
    attn_tuning_db_init(&db);
    attn_status st = attn_tuning_db_load(path, &db, NULL, err, sizeof err);
    if (st != ATTN_SUCCESS) {
        free(shapes);
        return db_error(st, err);
    }
    attn_context *ctx = NULL;
    st = attn_context_create(o->device, &ctx);
    if (st != ATTN_SUCCESS) {
        fprintf(stderr, "attn-tune: attn_context_create: %s: %s\n", attn_status_name(st),
                attn_last_create_error());
        attn_tuning_db_free(&db);
        free(shapes);
        return EXIT_FAILURE;
    }
    attn_context_set_check(ctx, 0); /* the tuner verifies on its own */
    attn_device_identity id;
    attn_device_identity_of(ctx, &id);
    char hash[2][17];
    for (int f = 0; f < 2; f++)
        if (attn_kernel_source_hash(ctx, f, hash[f]) != ATTN_SUCCESS) {
            fprintf(stderr, "attn-tune: %s\n", attn_last_error(ctx));
            attn_context_release(ctx);
            attn_tuning_db_free(&db);
            free(shapes);
            return EXIT_FAILURE;
        }
    const char *hashes[2] = {hash[0], hash[1]};
    const int level = o->quick ? ATTN_TUNE_LEVEL_QUICK : ATTN_TUNE_LEVEL_FULL;

    /* one job per class, the first shape of each class timed */
    job *jobs = calloc((size_t)nshapes, sizeof *jobs);
    int njobs = 0, todo = 0, failed = 0;
    if (!jobs) {
        fprintf(stderr, "attn-tune: out of host memory\n");
        failed = 1;
        goto done;
    }
    for (int i = 0; i < nshapes; i++) {
        attn_shape_class c;
        attn_shape_class_of(&shapes[i], &c);
        int dup = 0;
        for (int j = 0; j < njobs; j++) dup |= attn_shape_class_equal(&jobs[j].cls, &c);
        if (dup) continue;
        jobs[njobs].p = shapes[i];
        jobs[njobs].cls = c;
        jobs[njobs].skip = !o->force && attn_tuning_db_find_current(&db, &id, hashes, &c, level);
        todo += !jobs[njobs].skip;
        njobs++;
    }
    double budget = o->budget_s > 0 ? o->budget_s : o->quick ? QUICK_BUDGET_S : FULL_BUDGET_S;
    if (!o->quiet) {
        printf("attn-tune %s: %s / %s (driver %s, %u compute units)\n", attn_version_string(),
               id.platform, id.name, id.driver, id.compute_units);
        printf("database %s; %d class%s, %d to tune, %s search, budget %.0f s\n", path, njobs,
               njobs == 1 ? "" : "es", todo, o->quick ? "quick" : "full", budget);
        /* the storage types are part of the class: say which are tuned */
        int has[3] = {0, 0, 0};
        for (int j = 0; j < njobs; j++)
            if ((unsigned)jobs[j].cls.dtype < 3) has[jobs[j].cls.dtype] = 1;
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

    /* the fp32 peak before and after: a machine busy with other work shows
     * as the two disagreeing, and then close candidates cannot be ranked */
    double peak_before = 0, peak_after = 0, peak_s = now_s();
    if (todo > 0 && attn_device_peak_gflops(ctx, &peak_before) != ATTN_SUCCESS) peak_before = 0;
    /* the measurement at the end is kept within the budget too; it reuses
     * the built kernel (PoCL here: 3.0 s for the first, building, 0.3-0.4 s
     * for the next), so at most 1 s is set aside for it */
    peak_s = now_s() - peak_s;
    if (peak_s > 1.0) peak_s = 1.0;
    if (!o->quiet && peak_before > 0) {
        printf("fp32 FMA peak before tuning: %.1f GFLOP/s\n", peak_before);
        fflush(stdout);
    }
    int noisy_classes = 0;

    progress pg = {o->quiet, isatty(STDERR_FILENO), "", 0, todo, run_t0, budget, 0, 0, 0, 0, 0};
    const double deadline = run_t0 + budget - (peak_before > 0 ? peak_s : 0);
    int unstarted = 0;
    /* What starting a class costs up to its first measured candidate: a
     * class whose head dim and type no class before it had builds its
     * kernels anew (PoCL here: 4-5 s), the others reuse them (under 1 s).
     * The slowest "new" start and the quickest "reused" one so far. */
    double start_new_s = 0, start_reused_s = 0;
    int seen_n = 0, seen_d[16], seen_t[16];
    int done_count = 0;
    attn_params hints[8];
    attn_shape_class hint_cls[8];
    int nhints = 0;
    for (int j = 0; j < njobs; j++) {
        char cls[96], shape[128];
        attn_shape_class_format(&jobs[j].cls, cls, sizeof cls);
        tune_shape_format(&jobs[j].p, shape, sizeof shape);
        if (jobs[j].skip) {
            if (!o->quiet) {
                printf("%-32s already tuned (current entry in the database): skipped\n", cls);
                fflush(stdout);
            }
            continue;
        }
        double t0 = now_s();
        int left = todo - done_count - unstarted;
        /* The budget is the run's: a class is not started when the time
         * left is less than a class like it (new kernels to build or not)
         * took so far to measure its first candidate (bench, build,
         * verification), and each search stops at the deadline; only the
         * candidate in flight may pass it. */
        int reused = 0;
        for (int k = 0; k < seen_n; k++)
            reused |= seen_d[k] == jobs[j].cls.head_dim && seen_t[k] == (int)jobs[j].cls.dtype;
        const double need = reused ? start_reused_s : start_new_s; /* 0: not known yet */
        if (t0 >= deadline || (need > 0 && deadline - t0 < need)) {
            if (!o->quiet) {
                printf("%-32s not tuned: the budget is spent (%.1f s left)\n", cls,
                       deadline - t0 > 0 ? deadline - t0 : 0.0);
                fflush(stdout);
            }
            unstarted++;
            continue;
        }
        double class_budget = (deadline - t0) / left;
        pg.cls = cls;
        pg.class_t0 = t0;
        pg.first_result_s = 0;
        pg.index = ++done_count;
        pg.class_budget = class_budget;
        pg.classes_left = left - 1;

        attn_tune_bench *bench = NULL;
        st = attn_tune_bench_create(ctx, &jobs[j].p, &bench);
        if (st != ATTN_SUCCESS) {
            fprintf(stderr, "attn-tune: %s (%s): %s: %s\n", cls, shape, attn_status_name(st),
                    attn_last_error(ctx));
            failed = 1;
            continue;
        }
        /* the winner of a class with the same head dim, type and causality
         * is a good place to start */
        const attn_params *hint = NULL;
        for (int h = nhints - 1; h >= 0 && !hint; h--)
            if (attn_shape_class_distance(&hint_cls[h], &jobs[j].cls) >= 0) hint = &hints[h];
        attn_search_opts so;
        memset(&so, 0, sizeof so);
        so.budget_s = class_budget - (now_s() - t0); /* making the bench counts too */
        if (so.budget_s > deadline - now_s()) so.budget_s = deadline - now_s();
        if (so.budget_s < 0.01) so.budget_s = 0.01; /* 0 would mean no limit: one candidate */
        so.max_candidates = o->max_candidates;
        so.level = level;
        so.seed = (o->seed ? o->seed : 1) * 0x9e3779b97f4a7c15ull + (uint64_t)j;
        so.families = o->families;
        so.hint = hint;
        so.progress = on_progress;
        so.progress_arg = &pg;
        attn_search_result res;
        st = attn_tune_search(bench, &so, &res);
        progress_end(&pg);
        if (pg.first_result_s > 0) {
            if (!reused && pg.first_result_s > start_new_s) start_new_s = pg.first_result_s;
            if (reused && (start_reused_s == 0 || pg.first_result_s < start_reused_s))
                start_reused_s = pg.first_result_s;
        }
        if (!reused && seen_n < 16) {
            seen_d[seen_n] = jobs[j].cls.head_dim;
            seen_t[seen_n++] = (int)jobs[j].cls.dtype;
        }
        attn_tune_bench_free(bench);
        if (st != ATTN_SUCCESS) {
            fprintf(stderr, "attn-tune: %s (%s): %s: %s\n", cls, shape, attn_status_name(st),
                    attn_last_error(ctx));
            failed = 1;
            continue;
        }
        if (nhints < 8) {
            hints[nhints] = res.best;
            hint_cls[nhints++] = jobs[j].cls;
        }

        attn_tuning_entry e;
        memset(&e, 0, sizeof e);
        e.device = id;
        snprintf(e.kernel_hash, sizeof e.kernel_hash, "%s", hash[res.best.family & 1]);
        snprintf(e.tool_version, sizeof e.tool_version, "%s", attn_version_string());
        utc_now(e.date, sizeof e.date);
        e.cls = jobs[j].cls;
        e.batch = jobs[j].p.batch;
        e.q_heads = jobs[j].p.q_heads;
        e.kv_heads = jobs[j].p.kv_heads;
        e.q_len = jobs[j].p.q_len;
        e.kv_len = jobs[j].p.kv_len;
        attn_params_format(&res.best, e.params, sizeof e.params);
        e.median_ms = res.best_ms;
        double flops = attn_problem_flops(&jobs[j].p, NULL);
        e.gflops = flops / (res.best_ms * 1e6);
        attn_params_format(&res.dflt, e.default_params, sizeof e.default_params);
        e.default_ms = res.default_ms;
        e.spread = res.best_r.spread;
        e.default_spread = res.default_spread;
        e.default_gflops = res.default_ms > 0 ? flops / (res.default_ms * 1e6) : 0;
        e.max_error = res.best_r.max_error;
        e.error_ratio = res.best_r.error_ratio;
        e.level = level;
        e.tested = res.tested;
        e.rejected = res.rejected;
        test_delay(t0);
        st = attn_tuning_db_merge_file(path, &e, 1, err, sizeof err);
        if (st != ATTN_SUCCESS) {
            db_error(st, err);
            failed = 1;
            break; /* nothing more could be saved */
        }
        if (!o->quiet) {
            /* "of N planned" is the progress bar's N; the IQR is the winner's
             * (and the default's) over the final re-timing's rounds */
            const double iqr = attn_time_spread_iqr(&res.best_r.spread);
            const double diqr = attn_time_spread_iqr(&res.default_spread);
            printf("%-32s %-40s %8.1f GFLOP/s, default %8.1f (x%.3f), %d tested (%d rejected, "
                   "%d abandoned) of %d planned (%d in the space%s) in %.1f s; times %.3f..%.3f "
                   "ms, IQR %.1f%% (default %.1f%%)\n", cls, e.params, e.gflops,
                   e.default_gflops, e.default_gflops > 0 ? e.gflops / e.default_gflops : 0.0,
                   res.tested, res.rejected, res.slow, res.planned, res.space,
                   res.exhaustive ? ", all" : "", now_s() - t0, res.best_r.spread.min_ms,
                   res.best_r.spread.max_ms, 100 * iqr, 100 * diqr);
            fflush(stdout);
        }
        if (attn_time_spread_iqr(&res.best_r.spread) > ATTN_TUNE_NOISE_LIMIT ||
            attn_time_spread_iqr(&res.default_spread) > ATTN_TUNE_NOISE_LIMIT) {
            noisy_classes++;
            if (!o->quiet)
                fprintf(stderr, "attn-tune: WARNING: %s: the times spread by more than %.0f%% of "
                        "their median between the quartiles: too noisy to rank close candidates\n",
                        cls, 100 * ATTN_TUNE_NOISE_LIMIT);
        }
    }
    if (peak_before > 0 && attn_device_peak_gflops(ctx, &peak_after) != ATTN_SUCCESS)
        peak_after = 0;
    const double drift = peak_before > 0 && peak_after > 0
                             ? fabs(peak_after - peak_before) / fmax(peak_before, peak_after) : 0;
    if (!o->quiet && peak_after > 0)
        printf("fp32 FMA peak: %.1f GFLOP/s before tuning, %.1f after (%.1f%% apart)\n",
               peak_before, peak_after, 100 * drift);
    if (!o->quiet && (drift > ATTN_TUNE_NOISE_LIMIT || noisy_classes))
        fprintf(stderr, "attn-tune: WARNING: too noisy to rank candidates reliably: the peak moved "
                "%.0f%% during the run, %d class%s spread beyond %.0f%%; re-tune (--force) on a "
                "quieter machine\n", 100 * drift, noisy_classes, noisy_classes == 1 ? "" : "es",
                100 * ATTN_TUNE_NOISE_LIMIT);
    if (!o->quiet) {
        printf("%s in %.1f s (budget %.0f s)", failed ? "FAILED: see the messages above" : "done",
               now_s() - run_t0, budget);
        if (unstarted)
            printf("; %d class%s not tuned for want of time: run again to go on (finished "
                   "classes are kept)", unstarted, unstarted == 1 ? "" : "es");
        printf("\n");
    }
done:
    free(jobs);
    attn_context_release(ctx);
    attn_tuning_db_free(&db);
    free(shapes);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- --compare: the database's choice against the built-in default ---- */

static int cmd_compare(options *o)
{
    char err[1024];
    attn_problem *shapes = NULL;
    int nshapes = o->shapes ? tune_shapes_from_arg(o->shapes, &shapes, err, sizeof err)
                            : tune_shapes_design(&shapes);
    if (nshapes < 0) {
        fprintf(stderr, "attn-tune: %s\nTry 'attn-tune --help'.\n", o->shapes ? err : "out of memory");
        return EXIT_USAGE;
    }
    attn_context *ctx = NULL;
    attn_status st = attn_context_create(o->device, &ctx);
    if (st != ATTN_SUCCESS) {
        fprintf(stderr, "attn-tune: attn_context_create: %s: %s\n", attn_status_name(st),
                attn_last_create_error());
        free(shapes);
        return EXIT_FAILURE;
    }
    attn_context_set_check(ctx, 0);
    attn_device_identity id;
    attn_device_identity_of(ctx, &id);
    printf("attn-tune %s --compare: %s / %s (driver %s, %u compute units)\n"
           "the library's choice and the built-in default timed interleaved, with the fp32 FMA\n"
           "peak measured between rounds; medians\n", attn_version_string(), id.platform, id.name,
           id.driver, id.compute_units);
    printf("%-34s %-9s %-44s %9s %9s %7s %7s %7s %8s %6s %6s %13s\n", "shape", "source", "params",
           "GFLOP/s", "default", "ratio", "%peak", "dflt%", "peak", "IQR", "dIQR", "peak range");
    fflush(stdout);
    int failed = 0;
    for (int i = 0; i < nshapes && !failed; i++) {
        const attn_problem *p = &shapes[i];
        char shape[128];
        tune_shape_format(p, shape, sizeof shape);
        attn_plan_info info;
        attn_tune_bench *b = NULL;
        attn_params cands[2];
        if ((st = attn_prepare(ctx, p, &info)) != ATTN_SUCCESS ||
            (st = attn_tune_bench_create(ctx, p, &b)) != ATTN_SUCCESS) {
            fprintf(stderr, "attn-tune: %s: %s: %s\n", shape, attn_status_name(st), attn_last_error(ctx));
            failed = 1;
            break;
        }
        attn_device_limits dev;
        attn_tune_bench_limits(b, &dev);
        cands[1] = attn_params_heuristic(&dev, p);
        cands[0] = cands[1];
        if (attn_params_parse(info.params, &cands[0], err, sizeof err) != 0) {
            fprintf(stderr, "attn-tune: %s: plan \"%s\": %s\n", shape, info.params, err);
            failed = 1;
        }
        /* rounds for about 4 s of forwards, 5 to 41 */
        double one[2] = {0, 0};
        if (!failed) st = attn_tune_retime(b, cands, 2, 1, 1, one, NULL);
        int rounds = one[0] + one[1] > 0 ? (int)(4000 / (one[0] + one[1])) : 5;
        rounds = rounds < 5 ? 5 : rounds > 41 ? 41 : rounds;
        double *t0 = malloc(sizeof(double) * (size_t)rounds), *t1 = malloc(sizeof(double) * (size_t)rounds);
        double *pk = malloc(sizeof(double) * (size_t)rounds);
        if (!t0 || !t1 || !pk) st = ATTN_ERROR_OUT_OF_MEMORY;
        for (int r = 0; r < rounds && st == ATTN_SUCCESS && !failed; r++) {
            double ms[2];
            if ((st = attn_device_peak_gflops(ctx, &pk[r])) != ATTN_SUCCESS) break;
            if ((st = attn_tune_retime(b, cands, 2, 1, 0, ms, NULL)) != ATTN_SUCCESS) break;
            t0[r] = ms[0];
            t1[r] = ms[1];
        }
        if (st != ATTN_SUCCESS) {
            fprintf(stderr, "attn-tune: %s: %s: %s\n", shape, attn_status_name(st), attn_last_error(ctx));
            failed = 1;
        } else if (!failed) {
            double flops = attn_problem_flops(p, NULL);
            const attn_time_spread st0 = attn_time_spread_of(t0, rounds);
            const attn_time_spread st1 = attn_time_spread_of(t1, rounds);
            const attn_time_spread sp = attn_time_spread_of(pk, rounds);
            double mt = st0.median_ms, md = st1.median_ms, peak = sp.median_ms;
            double gt = flops / (mt * 1e6), gd = flops / (md * 1e6);
            const double iqr_t = attn_time_spread_iqr(&st0), iqr_d = attn_time_spread_iqr(&st1);
            const double peak_moved = sp.max_ms > 0 ? (sp.max_ms - sp.min_ms) / sp.max_ms : 0;
            /* the same parameters twice show the noise of the measurement */
            printf("%-34s %-9s %-44s %9.1f %9.1f %7.3f %6.1f%% %6.1f%% %8.1f %5.1f%% %5.1f%% "
                   "%6.1f..%-6.1f%s\n", shape, info.source, info.params, gt, gd, gt / gd,
                   100 * gt / peak, 100 * gd / peak, peak, 100 * iqr_t, 100 * iqr_d, sp.min_ms,
                   sp.max_ms, attn_params_equal(&cands[0], &cands[1]) ? "  (same parameters)" : "");
            fflush(stdout);
            if (iqr_t > ATTN_TUNE_NOISE_LIMIT || iqr_d > ATTN_TUNE_NOISE_LIMIT ||
                peak_moved > ATTN_TUNE_NOISE_LIMIT)
                fprintf(stderr, "attn-tune: WARNING: %s: too noisy to rank: IQR %.0f%% and %.0f%% "
                        "of the medians, peak %.1f..%.1f GFLOP/s between rounds (limit %.0f%%)\n",
                        shape, 100 * iqr_t, 100 * iqr_d, sp.min_ms, sp.max_ms,
                        100 * ATTN_TUNE_NOISE_LIMIT);
        }
        free(t0);
        free(t1);
        free(pk);
        attn_tune_bench_free(b);
    }
    attn_context_release(ctx);
    free(shapes);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
    options o;
    memset(&o, 0, sizeof o);
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0) return rc;
    if (o.show) return cmd_show(&o);
    if (o.export_file) return cmd_export(&o);
    if (o.import_file) return cmd_import(&o);
    if (o.forget) return cmd_forget(&o);
    if (o.compare) return cmd_compare(&o);
    return cmd_tune(&o);
}
