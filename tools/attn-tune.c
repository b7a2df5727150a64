/* attn-tune -- tunes the kernels for one device: per shape class, a search
 * over both kernel families' tunables within a budget, every candidate
 * verified against the CPU reference, the winners written to the tuning
 * database (incrementally, so an interrupted run keeps what it finished and
 * the next run resumes). Also shows, exports, imports and forgets entries. */
#define _POSIX_C_SOURCE 200809L
#include "attn.h"
#include "tool_error.h"
#include "tune_compare.h"
#include "tuning/tune_session.h"
#include "tuning/tune_shapes.h"
#include "attention/decode.h" /* ATTN_KV_MIN_BLOCK, ATTN_KV_MAX_BLOCK */
#include "core/text.h"

#ifndef ATTN_SYSTEM_TUNING_DB_DEFAULT /* from CMake: PREFIX/share/attn */
#define ATTN_SYSTEM_TUNING_DB_DEFAULT "/usr/share/attn/tuning.json"
#endif

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define QUICK_BUDGET_S 60.0
#define FULL_BUDGET_S 900.0

typedef struct options {
    const char *device, *shapes, *export_file, *import_file, *forget;
    int quick, quiet, show, force, compare, decode;
    double budget_s; /* 0 = the level's default */
    int max_candidates;
    unsigned families;
    unsigned long long seed;
    attn_tune_cache kv; /* --block-size, --kv-int8 */
} options;

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
        "  --decode              tune attn_decode instead of attn_forward: each shape is\n"
        "                        sq new queries against a KV cache filled to skv keys\n"
        "                        (default shapes: the DESIGN decode set, B=4 Hq=32\n"
        "                        Hkv=8 D=128 sq=1 skv=1024,4096,16384, causal, f32);\n"
        "                        the decode search adds the KV splits\n"
        "  --block-size N        with --decode: over a paged cache of blocks of N tokens\n"
        "                        (a power of two in %d..%d; 0, the default: contiguous),\n"
        "                        a class of its own (keys per block searched up to N)\n"
        "  --kv-int8             with --decode: over an int8 cache (ATTN_KV_INT8), a\n"
        "                        class of its own, verified at int8's tolerance\n"
        "  --budget SECONDS      the whole run's time, start-up included, shared among\n"
        "                        the classes still to tune (default %.0f; with --quick\n"
        "                        %.0f); a class is not started when too little is left\n"
        "                        (the next run tunes it), so only the candidate in\n"
        "                        flight may overrun it\n"
        "  --max-candidates N    at most N candidates measured per class\n"
        "  --family tiled|vector|flash|mma\n"
        "                        search one kernel family only (default all but mma,\n"
        "                        and mma too where it is the device's verified default;\n"
        "                        flash is prefill only)\n"
        "  --force               re-tune classes the database already holds\n"
        "  --seed N              seed of the random start (default 1)\n"
        "  --quiet               print nothing but errors and classes left untuned\n"
        "  --show                list the database's entries and exit\n"
        "  --export FILE         write the database to FILE and exit\n"
        "  --import FILE         merge FILE's entries into the database and exit\n"
        "  --forget DEVICE       remove the entries of every device whose platform,\n"
        "                        vendor or name contains DEVICE (\"all\": every entry)\n"
        "  --compare             time the library's choice (tuned, stale or heuristic)\n"
        "                        against the built-in default for the shapes,\n"
        "                        interleaved, with the fp32 peak, and exit (with\n"
        "                        --decode: decode shapes, through attn_decode)\n"
        "  --help, --version\n"
        "\n"
        "Database: $ATTN_TUNING_DB, else $XDG_DATA_HOME/attn/tuning.json (an absolute\n"
        "$XDG_DATA_HOME), else ~/.local/share/attn/tuning.json; also read (never\n"
        "written): the system-wide $ATTN_SYSTEM_TUNING_DB, else\n"
        ATTN_SYSTEM_TUNING_DB_DEFAULT ".\n"
        "Exit status: 0 ok, 1 a failure (a corrupt database: ATTN_ERROR_TUNING_DB with\n"
        "the file and line), 2 bad usage.\n",
        QUICK_BUDGET_S, TUNE_SHAPES_SYNTAX, ATTN_KV_MIN_BLOCK, ATTN_KV_MAX_BLOCK, FULL_BUDGET_S,
        QUICK_BUDGET_S);
}

enum {
    OPT_DEVICE = 256, OPT_QUICK, OPT_SHAPES, OPT_BUDGET, OPT_MAXCAND, OPT_FAMILY, OPT_FORCE,
    OPT_SEED, OPT_QUIET, OPT_SHOW, OPT_EXPORT, OPT_IMPORT, OPT_FORGET, OPT_COMPARE, OPT_HELP,
    OPT_VERSION, OPT_DECODE, OPT_BLOCK_SIZE, OPT_KV_INT8
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
        {"decode", no_argument, NULL, OPT_DECODE},
        {"block-size", required_argument, NULL, OPT_BLOCK_SIZE},
        {"kv-int8", no_argument, NULL, OPT_KV_INT8},
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
        case OPT_DECODE: o->decode = 1; break;
        case OPT_KV_INT8: o->kv.storage = ATTN_KV_INT8; break;
        case OPT_BLOCK_SIZE: {
            int v = 0;
            if (attn_parse_int(optarg, 0, ATTN_KV_MAX_BLOCK, &v) ||
                (v != 0 && (v < ATTN_KV_MIN_BLOCK || (v & (v - 1))))) {
                fprintf(stderr, "attn-tune: --block-size wants 0 (contiguous) or a power of two "
                        "in %d..%d, not '%s'\n", ATTN_KV_MIN_BLOCK, ATTN_KV_MAX_BLOCK, optarg);
                bad = 1;
            }
            o->kv.block_size = v;
            break;
        }
        case OPT_BUDGET:
            if (attn_parse_double(optarg, 0.0, 1e7, &o->budget_s) || !(o->budget_s > 0)) {
                fprintf(stderr, "attn-tune: --budget wants a number of seconds > 0 and at most "
                        "1e7, not '%s'\n", optarg);
                bad = 1;
            }
            break;
        case OPT_MAXCAND: {
            int v = 0;
            if (attn_parse_int(optarg, 1, 100000, &v)) {
                fprintf(stderr, "attn-tune: --max-candidates wants an integer in 1..100000, not "
                        "'%s'\n", optarg);
                bad = 1;
            }
            o->max_candidates = v;
            break;
        }
        case OPT_FAMILY: {
            const int f = attn_family_named(optarg); /* the descriptors' names */
            if (f >= 0) o->families = 1u << f;
            else {
                fprintf(stderr, "attn-tune: --family wants tiled, vector, flash or mma, not '%s'\n",
                        optarg);
                bad = 1;
            }
            break;
        }
        case OPT_FORCE: o->force = 1; break;
        case OPT_SEED:
            errno = 0;
            o->seed = strtoull(optarg, &end, 10);
            /* digits only: strtoull skips spaces, takes a '+' and "-5" as
             * 2^64 - 5 (attn_parse_long stops at LONG_MAX) */
            if (!isdigit((unsigned char)optarg[0]) || errno || end == optarg || *end) {
                fprintf(stderr, "attn-tune: --seed wants a non-negative integer, not '%s'\n",
                        optarg);
                bad = 1;
            }
            break;
        case OPT_QUIET: o->quiet = 1; break;
        case OPT_SHOW: o->show = 1; break;
        case OPT_EXPORT: o->export_file = optarg; break;
        case OPT_IMPORT: o->import_file = optarg; break;
        case OPT_FORGET: o->forget = optarg; break;
        case OPT_COMPARE: o->compare = 1; break;
        case OPT_HELP: usage(stdout); return bad ? EXIT_USAGE : EXIT_SUCCESS;
        case OPT_VERSION:
            if (bad) break; /* as --help: an error before it is still one */
            printf("attn-tune %d.%d.%d (libattn %s)\n", ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR,
                   ATTN_VERSION_PATCH, attn_version_string());
            return EXIT_SUCCESS;
        default: bad = 1; break;
        }
    }
    /* "" would reach the file calls, whose message names no option */
    const char *const named[][2] = {{"export", o->export_file}, {"import", o->import_file},
                                    {"forget", o->forget}};
    for (int i = 0; i < 3 && !bad; i++)
        if (named[i][1] && !*named[i][1]) {
            fprintf(stderr, "attn-tune: --%s wants %s, not ''\n", named[i][0],
                    i == 2 ? "a device" : "a file name");
            bad = 1;
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
    if (!bad && (o->kv.block_size || o->kv.storage) && !o->decode) {
        fprintf(stderr, "attn-tune: --%s goes with --decode (a KV cache's kind)\n",
                o->kv.block_size ? "block-size" : "kv-int8");
        bad = 1;
    }
    if (!bad && o->decode && o->families == 1u << ATTN_FAMILY_FLASH) {
        fprintf(stderr, "attn-tune: --family flash has no decode kernel; --decode searches "
                "tiled, vector or mma\n");
        bad = 1;
    }
    if (!bad && o->decode && commands - o->compare) {
        fprintf(stderr, "attn-tune: --decode goes with tuning or --compare, not with --show, "
                "--export, --import or --forget\n");
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
    fprintf(stderr, "attn-tune: no database path: set ATTN_TUNING_DB, an absolute "
                    "XDG_DATA_HOME, or HOME (or the one set is too long)\n");
    return 0;
}

static int db_error(attn_status st, const char *msg)
{
    tool_error("attn-tune", NULL, NULL, st, msg);
    return EXIT_FAILURE;
}

/* Lists one database file; returns 0, or -1 when it cannot be read. */
static int show_file(const char *label, const char *path, const attn_device_identity *here,
                     char hash[ATTN_ENTRY_COUNT][ATTN_FAMILY_COUNT][17])
{
    attn_tuning_db db;
    attn_tuning_db_init(&db);
    char err[1024];
    int missing;
    attn_status st = attn_tuning_db_load(path, &db, &missing, err, sizeof err);
    if (st != ATTN_SUCCESS) {
        fflush(stdout);
        char where[4200];
        snprintf(where, sizeof where, "%s %s", label, path);
        tool_error("attn-tune", where, NULL, st, err);
        return -1;
    }
    printf("%s %s: %s%zu entr%s\n", label, path, missing ? "missing, " : "", db.count,
           db.count == 1 ? "y" : "ies");
    for (size_t i = 0; i < db.count; i++) {
        const attn_tuning_entry *e = &db.entries[i];
        char cls[sizeof e->foreign_class];
        if (e->foreign_why[0])
            snprintf(cls, sizeof cls, "%s", e->lost ? "(a class too long to show)"
                                                    : e->foreign_class);
        else attn_shape_class_format(&e->cls, cls, sizeof cls);
        const char *mark = "";
        if (here) {
            const attn_tuning_entry *one;
            attn_tuning_db single = {.entries = (attn_tuning_entry *)e, .count = 1,
                                     .capacity = 1};
            const int entry = e->cls.decode ? ATTN_ENTRY_DECODE : ATTN_ENTRY_PREFILL;
            const char *hashes[ATTN_FAMILY_COUNT];
            for (int f = 0; f < ATTN_FAMILY_COUNT; f++) hashes[f] = hash[entry][f];
            attn_tuning_tier t = attn_tuning_db_lookup(&single, here, hashes, &e->cls, &one);
            mark = t == ATTN_TIER_EXACT ? " [this device]" : t == ATTN_TIER_STALE ? " [stale: re-tune]" : "";
        }
        char why[256], unusable[300] = "";
        if (attn_tuning_entry_params(e, NULL, why, sizeof why) != 0)
            snprintf(unusable, sizeof unusable, " [not for this attn (a newer one's?): %s]", why);
        printf("  %s / %s (%u CUs, driver %s)%s%s\n", e->device.platform, e->device.name,
               e->device.compute_units, e->device.driver, mark, unusable);
        char iqr[32] = "";
        if (e->spread.max_ms > 0)
            snprintf(iqr, sizeof iqr, ", IQR %.1f%%", 100 * attn_time_spread_iqr(&e->spread));
        printf("    %-32s %-42s %8.1f GFLOP/s%s, default %8.1f (x%.2f)  %s%s %s, %d tested, "
               "%d rejected, error %.1e\n", cls, e->params, e->gflops, iqr, e->default_gflops,
               e->default_gflops > 0 ? e->gflops / e->default_gflops : 0.0,
               e->level >= 2 ? "full" : "quick", e->cut_short ? " (cut short by the budget)" : "",
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
    char hashes[ATTN_ENTRY_COUNT][ATTN_FAMILY_COUNT][17] = {{""}}; /* per entry point, family */
    if (attn_context_create(o->device, &ctx) == ATTN_SUCCESS) {
        attn_device_identity_of(ctx, &id);
        here = &id;
        for (int e = 0; e < ATTN_ENTRY_COUNT; e++)
            for (int f = 0; f < ATTN_FAMILY_COUNT; f++) attn_entry_source_hash(ctx, e, f, hashes[e][f]);
    }
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
    size_t replaced = 0;
    if (st == ATTN_SUCCESS)
        st = attn_tuning_db_merge_file_counted(path, in.entries, in.count, &replaced, err,
                                               sizeof err);
    size_t n = in.count;
    attn_tuning_db_free(&in);
    if (st != ATTN_SUCCESS) return db_error(st, err);
    /* an imported entry takes the place of the one for its device, driver
     * and class, whatever their dates or kernel sources: said, not silent */
    if (!o->quiet)
        printf("imported %zu entr%s into %s; %zu of its entries replaced (the same device, "
               "driver and shape class)\n", n, n == 1 ? "y" : "ies", path, replaced);
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
        int match = strcmp(f->what, "all") == 0 || attn_contains_ci(d->platform, f->what) ||
                    attn_contains_ci(d->vendor, f->what) || attn_contains_ci(d->name, f->what);
        if (match) f->removed++;
        else db->entries[keep++] = db->entries[i];
    }
    db->count = keep;
    return f->removed ? 0 : 1; /* none matched: the file is left as it is (or missing) */
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
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT) { /* nothing to forget: no folder made */
        if (!o->quiet) printf("forgot nothing: %s does not exist\n", path);
        return EXIT_SUCCESS;
    }
    attn_status st = attn_tuning_db_update(path, forget_fn, &f, err, sizeof err);
    if (st != ATTN_SUCCESS) return db_error(st, err);
    if (!o->quiet && f.removed == 0)
        printf("forgot nothing: no entry in %s matches \"%s\"; the file is unchanged\n", path,
               o->forget);
    else if (!o->quiet)
        printf("forgot %zu entr%s matching \"%s\" in %s\n", f.removed,
               f.removed == 1 ? "y" : "ies", o->forget, path);
    return EXIT_SUCCESS;
}

/* ---- tuning: the session (host/tuning/tune_session.c) ---- */

static int cmd_tune(options *o)
{
    const double run_t0 = attn_now_s(); /* the budget counts the whole run, start-up included */
    char path[4096];
    if (!db_path(path, sizeof path)) return EXIT_FAILURE;
    /* the candidates are forced past any override (attn_tuning_force) */
    const char *env = getenv("ATTN_PARAMS");
    if (env && *env && !o->quiet)
        fprintf(stderr, "attn-tune: note: ATTN_PARAMS is ignored while tuning\n");
    attn_problem *shapes = NULL;
    attn_context *ctx = NULL;
    int nshapes;
    const int rc = tune_open(o->device, o->shapes, o->decode, &shapes, &nshapes, &ctx);
    if (rc >= 0) return rc;
    const attn_tune_run_opts ro = {
        path, shapes, nshapes, o->quick ? ATTN_TUNE_LEVEL_QUICK : ATTN_TUNE_LEVEL_FULL,
        o->budget_s > 0 ? o->budget_s : o->quick ? QUICK_BUDGET_S : FULL_BUDGET_S, run_t0,
        o->max_candidates, o->families, o->seed, o->force, o->quiet,
        o->decode ? ATTN_ENTRY_DECODE : ATTN_ENTRY_PREFILL, o->kv};
    attn_tune_run_result res;
    const attn_status st = attn_tune_run(ctx, &ro, &res);
    attn_context_release(ctx);
    free(shapes);
    return st == ATTN_SUCCESS ? EXIT_SUCCESS : EXIT_FAILURE;
}

static int run(int argc, char **argv)
{
    options o;
    memset(&o, 0, sizeof o);
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0) return rc;
    if (o.show) return cmd_show(&o);
    if (o.export_file) return cmd_export(&o);
    if (o.import_file) return cmd_import(&o);
    if (o.forget) return cmd_forget(&o);
    if (o.compare)
        return tune_compare(o.device, o.shapes, o.decode ? ATTN_ENTRY_DECODE : ATTN_ENTRY_PREFILL,
                            &o.kv);
    return cmd_tune(&o);
}

int main(int argc, char **argv) { return tool_exit("attn-tune", run(argc, argv)); }
