/* bench_options.c -- attn-bench's options: the table that --help prints and
 * getopt_long parses. An option is added here once; the switch in
 * bench_options_parse is over the table's enum, so -Wswitch (in -Wall)
 * catches an option the parser does not handle. */
#define _POSIX_C_SOURCE 200809L
#include "bench_options.h"
#include "core/text.h"

#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)

typedef enum bench_opt {
    OPT_DEVICE, OPT_BATCH, OPT_QHEADS, OPT_KVHEADS, OPT_HEADDIM, OPT_SEQ, OPT_QLEN, OPT_KVLEN,
    OPT_CAUSAL, OPT_NOCAUSAL, OPT_DTYPE, OPT_REPS, OPT_FORMAT, OPT_CHECK, OPT_NOCHECK,
    OPT_DECODE, OPT_SPLITS, OPT_KVINT8, OPT_BLOCKS, OPT_MIXED, OPT_MIXEDLENS, OPT_MATERIALIZED,
    OPT_WINDOW, OPT_SOFTCAP, OPT_SINKS, OPT_ALIBI, OPT_MASK, OPT_MASKTYPE, OPT_MASKFRESH, OPT_PACKED, OPT_VARIANTS, OPT_HELP,
    OPT_VERSION, OPT_COUNT
} bench_opt;

const bench_option_spec bench_option_specs[OPT_COUNT] = {
    [OPT_DEVICE] = {"device", "SEL", "\"P:D\" or a substring of platform/vendor/device name\n"
                    "(default: $ATTN_DEVICE, else the first GPU, else the\n"
                    "first device; attn-info lists them)"},
    [OPT_BATCH] = {"batch", "N", "batch size (default 1)"},
    [OPT_QHEADS] = {"q-heads", "N", "query heads (default 8)"},
    [OPT_KVHEADS] = {"kv-heads", "N", "key/value heads (default Hq/4 when 4 divides Hq, else Hq)"},
    [OPT_HEADDIM] = {"head-dim", "N", "head dimension, 1..256 (default 64)"},
    [OPT_SEQ] = {"seq", "N", "query and key/value length (default 1024); with\n"
                 "--decode the cache's length only (default 4096, and\n"
                 "--q-len default 1)"},
    [OPT_QLEN] = {"q-len", "N", NULL},
    [OPT_KVLEN] = {"kv-len", "N", "the lengths separately (one given: the other follows)"},
    [OPT_CAUSAL] = {"causal", NULL, NULL},
    [OPT_NOCAUSAL] = {"no-causal", NULL, "bottom-right causal mask or none (default causal)"},
    [OPT_DTYPE] = {"dtype", "LIST", "storage types, from f32, f16, bf16 (default f32); several\n"
                   "(e.g. f32,f16) are timed interleaved in one run, each\n"
                   "row adding its median time's ratio to the first type's"},
    [OPT_REPS] = {"reps", "N", "timed runs per shape (default: calibrated to >= 1 s,\n"
                  "between " STR(BENCH_MIN_REPS) " and " STR(BENCH_MAX_REPS) ")"},
    [OPT_FORMAT] = {"format", "text|csv|json", "output format (default text)"},
    [OPT_CHECK] = {"check", NULL, NULL},
    [OPT_NOCHECK] = {"no-check", NULL, "compare with the CPU reference (default on; skipped for\n"
                     "shapes too large for the reference, max_error null)"},
    [OPT_DECODE] = {"decode", NULL, "the DESIGN decode set (B=4 Hq=32 Hkv=8 D=128 Sq=1,\n"
                    "kv 1024, 4096, 16384) through a KV cache, or the shape\n"
                    "given (defaults B=4 Hq=32 D=128 Sq=1); reports K/V GB/s\n"
                    "and its fraction of the copy bandwidth"},
    [OPT_SPLITS] = {"splits", "LIST", "decode: KV splits to compare, interleaved, e.g.\n"
                    "auto,1,2,4,8 (default auto: the heuristic)"},
    [OPT_KVINT8] = {"kv-int8", NULL, "decode: each --dtype also over an int8 cache\n"
                    "(ATTN_KV_INT8), of each --block-size, timed interleaved\n"
                    "with the others"},
    [OPT_BLOCKS] = {"block-size", "LIST", "decode: KV caches to compare, interleaved: 0 for\n"
                    "contiguous, else a paged cache's block size (16..256,\n"
                    "a power of two), e.g. 0,16,64,256 (default 0); rows add\n"
                    "their median time's ratio to the first cache's"},
    [OPT_MIXED] = {"mixed", NULL, "decode: --batch sequences (default " STR(BENCH_MIXED_SEQS)
                   ") of mixed\n"
                   "lengths (--mixed-lengths) decoding together, one token\n"
                   "each per step (appended, then decoded; truncated back\n"
                   "untimed): tokens/s and cache memory of each --block-size\n"
                   "(default " BENCH_MIXED_BLOCKS ") against the first, 0 being a contiguous\n"
                   "cache padding every sequence to the longest (Hq=32\n"
                   "Hkv=8 D=128 unless given)"},
    [OPT_MIXEDLENS] = {"mixed-lengths", "MIN,MAX", "--mixed's lengths: log-spaced from MIN to MAX\n"
                       "(default " STR(BENCH_MIXED_MIN) "," STR(BENCH_MIXED_MAX)
                       "), ascending, no randomness"},
    [OPT_MATERIALIZED] = {"compare-materialized", NULL,
                          "time attn_forward_materialized (CLBlast GEMMs around an\n"
                          "S x S buffer) interleaved with attn_forward: speed ratio,\n"
                          "device memory, largest difference; and the layer\n"
                          "(d_model = Hq*D) split into projections and attention"},
    [OPT_WINDOW] = {"window", "L,R", "sliding window: keys p-L..p+R of query position p,\n"
                    "-1 = unlimited on that side; a causal window of W keys\n"
                    "is W-1,0 (e.g. 4095,0: Mistral's 4096)"},
    [OPT_SOFTCAP] = {"softcap", "C", "logit softcap: s = C*tanh(s/C) (e.g. 50; Gemma 2)"},
    [OPT_SINKS] = {"sinks", "V|per-head", "attention sinks (gpt-oss): logit V for every head, or\n"
                   "per-head values -1, -0.75, ... 0.75 (head h: h%8/4 - 1)"},
    [OPT_ALIBI] = {"alibi", "MAX_BIAS", "ALiBi with slopes from max_bias (e.g. 8)"},
    [OPT_MASK] = {"mask", "KIND", "an additive mask [Sq][Skv] shared by batch and heads:\n"
                  "causal (-inf above the diagonal: compare with --causal),\n"
                  "zeros, prefix-lm (first Skv/2 keys seen by every row, then\n"
                  "causal; needs --no-causal), random-block (64x64 blocks\n"
                  "-inf with probability 1/2)"},
    [OPT_MASKTYPE] = {"mask-dtype", "f32|f16", "the mask's storage type (default f32)"},
    [OPT_MASKFRESH] = {"mask-fresh", NULL, "the mask with version 0: its tile pre-pass runs\n"
                       "every call (default version 1, a mask that never changes:\n"
                       "the first call's summary is kept)"},
    [OPT_PACKED] = {"packed", "LIST", "a batch of sequences of these lengths (e.g.\n"
                    "100,1000,3000,4096) packed on one token axis and the\n"
                    "same padded to the longest, timed interleaved: a row\n"
                    "each (replaces --batch and the lengths)"},
    [OPT_VARIANTS] = {"variants", NULL, "each variant against plain causal at one shape\n"
                      "(default B=1 Hq=8 Hkv=2 D=64 S=2048), interleaved, as\n"
                      "GFLOP/s (visible pairs) and their ratio; then window\n"
                      "S/4 at S=16384 (or --seq) against causal and visible\n"
                      "pairs; then packed against padded (--packed, default\n"
                      "100,1000,3000,4096). Measures, never asserts"},
    [OPT_HELP] = {"help", NULL, "print this help and exit"},
    [OPT_VERSION] = {"version", NULL, "print the version and exit"},
};
const int bench_option_count = OPT_COUNT;

void bench_options_init(bench_options *o)
{
    memset(o, 0, sizeof *o);
    o->causal = 1;
    o->dtypes[0] = ATTN_F32;
    o->ndtypes = 1;
    o->format = BENCH_TEXT;
    o->check = 1;
}

void bench_options_usage(FILE *f)
{
    enum { COLUMN = 24 };
    fputs("Usage: attn-bench [OPTIONS]\n"
          "Times attn_forward and reports median time (with min, quartiles and max),\n"
          "GFLOP/s (4*D per visible query-key pair) and the fraction of the device's\n"
          "fp32 FMA peak, measured before and after the runs (a warning when they differ\n"
          "by more than 10%, or a result's quartiles by more than 10% of its median: too\n"
          "noisy to rank). With no shape option it runs the DESIGN prefill set: B=1 Hq=8\n"
          "Hkv=2 D=64 S=512..4096 and B=1 Hq=32 Hkv=8 D=128 S=1024,2048, causal.\n\n", f);
    for (int i = 0; i < OPT_COUNT;) {
        /* the names of this entry and of those it describes with the next */
        char names[128] = "";
        size_t len = 0;
        int j = i;
        for (;; j++) {
            const bench_option_spec *s = &bench_option_specs[j];
            len += (size_t)snprintf(names + len, sizeof names - len, "%s--%s%s%s",
                                    j > i ? ", " : "", s->name, s->arg ? " " : "",
                                    s->arg ? s->arg : "");
            if (s->help || j + 1 == OPT_COUNT) break;
        }
        const char *help = bench_option_specs[j].help ? bench_option_specs[j].help : "";
        int col = fprintf(f, "  %s", names);
        if (col + 2 > COLUMN) { /* at least two spaces before the text */
            fputc('\n', f);
            col = 0;
        }
        for (const char *line = help; *line;) {
            const char *nl = strchr(line, '\n');
            int n = nl ? (int)(nl - line) : (int)strlen(line);
            fprintf(f, "%*s%.*s\n", COLUMN - col, "", n, line);
            col = 0;
            line += n + (nl ? 1 : 0);
        }
        if (!*help) fputc('\n', f);
        i = j + 1;
    }
    fputs("\nExit status: 0 ok, 1 a failed check or a library error, 2 bad usage.\n", f);
}

static int parse_float(const char *opt, const char *text, float lo, float hi, float *out)
{
    if (attn_parse_float(text, lo, hi, out)) {
        fprintf(stderr, "attn-bench: --%s wants a number in %g..%g, not '%s'\n", opt, (double)lo,
                (double)hi, text);
        return -1;
    }
    return 0;
}

static int parse_int(const char *opt, const char *text, int lo, int hi, int *out)
{
    if (attn_parse_int(text, lo, hi, out)) {
        fprintf(stderr, "attn-bench: --%s wants an integer in %d..%d, not '%s'\n", opt, lo, hi,
                text);
        return -1;
    }
    return 0;
}

/* The variant options against the modes: -1 (said why) when they clash. */
static int check_variant_use(const bench_options *o, int mask_dtype_given, int fresh_given)
{
    const bench_variant *v = &o->variant;
    bench_variant others = *v;
    others.npacked = 0;
    const char *why = NULL;
    if (mask_dtype_given && !v->mask) why = "--mask-dtype needs --mask";
    else if (fresh_given && !v->mask) why = "--mask-fresh needs --mask";
    else if (o->compare && bench_variant_any(v))
        why = "--compare-materialized takes no variant option (--window ... --packed)";
    else if (o->decode && v->npacked) why = "--packed applies to prefill (attn_decode refuses "
                                            "packed batches)";
    else if (!o->causal && (o->decode || o->variants))
        why = "--no-causal applies to prefill: --decode and --variants run causal";
    else if (o->variants && (o->decode || o->compare))
        why = "--variants is a prefill run of its own; not with --decode or "
              "--compare-materialized";
    else if (o->variants && o->ndtypes > 1) why = "--variants takes one --dtype";
    else if (o->variants && bench_variant_any(&others))
        why = "--variants runs its own variants; of the variant options it takes --packed only";
    else if (v->npacked && o->batch) why = "--packed sets the batch: give no --batch";
    else if (v->npacked && (o->seq || o->q_len || o->kv_len) && !o->variants)
        why = "--packed sets the lengths: give no --seq, --q-len or --kv-len";
    else if (v->mask == BENCH_MASK_PREFIX_LM && (o->causal || o->decode))
        why = "--mask prefix-lm needs --no-causal (prefill): the causal rule hides all it shows";
    else if (v->npacked && (v->mask == BENCH_MASK_PREFIX_LM || v->mask == BENCH_MASK_RANDOM_BLOCK))
        why = "--packed takes --mask causal or zeros: prefix-lm and random-block are placed by "
              "buffer position, so the packed and padded rows would mask different pairs";
    if (!why) return 0;
    fprintf(stderr, "attn-bench: %s\n", why);
    return -1;
}

/* --mixed and --mixed-lengths against the rest: -1 (said why) when they
 * clash. */
static int check_mixed_use(const bench_options *o)
{
    const char *why = NULL;
    if (o->mixed_max && !o->mixed) why = "--mixed-lengths needs --mixed";
    else if (o->mixed && !o->decode) why = "--mixed applies to --decode only";
    else if (o->mixed && (o->seq || o->q_len || o->kv_len))
        why = "--mixed sets the lengths (--mixed-lengths): give no --seq, --q-len or --kv-len";
    else if (o->mixed && o->splits) why = "--mixed uses the heuristic's splits: give no --splits";
    else if (o->mixed && bench_variant_any(&o->variant))
        why = "--mixed takes no variant option (--window ... --packed)";
    if (!why) return 0;
    fprintf(stderr, "attn-bench: %s\n", why);
    return -1;
}

int bench_options_parse(int argc, char **argv, bench_options *o)
{
    struct option longopts[OPT_COUNT + 1];
    for (int i = 0; i < OPT_COUNT; i++) {
        longopts[i].name = bench_option_specs[i].name;
        longopts[i].has_arg = bench_option_specs[i].arg ? required_argument : no_argument;
        longopts[i].flag = NULL;
        longopts[i].val = 256 + i;
    }
    memset(&longopts[OPT_COUNT], 0, sizeof longopts[OPT_COUNT]);
    int c, bad = 0, splits[BENCH_MAX_SPLITS], mask_dtype_given = 0, fresh_given = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c < 256 || c >= 256 + OPT_COUNT) { /* getopt_long has said what is wrong */
            bad = -1;
            continue;
        }
        switch ((bench_opt)(c - 256)) {
        case OPT_DEVICE: o->device = optarg; break;
        case OPT_BATCH: bad |= parse_int("batch", optarg, 1, 1 << 20, &o->batch); break;
        case OPT_QHEADS: bad |= parse_int("q-heads", optarg, 1, 1 << 16, &o->q_heads); break;
        case OPT_KVHEADS: bad |= parse_int("kv-heads", optarg, 1, 1 << 16, &o->kv_heads); break;
        case OPT_HEADDIM: bad |= parse_int("head-dim", optarg, 1, 256, &o->head_dim); break;
        case OPT_SEQ: bad |= parse_int("seq", optarg, 1, 1 << 30, &o->seq); break;
        case OPT_QLEN: bad |= parse_int("q-len", optarg, 1, 1 << 30, &o->q_len); break;
        case OPT_KVLEN: bad |= parse_int("kv-len", optarg, 1, 1 << 30, &o->kv_len); break;
        case OPT_CAUSAL: o->causal = 1; break;
        case OPT_NOCAUSAL: o->causal = 0; break;
        case OPT_DTYPE: {
            int n = bench_parse_dtypes(optarg, o->dtypes, BENCH_MAX_DTYPES);
            if (n < 0) {
                fprintf(stderr, "attn-bench: --dtype wants f32, f16 or bf16, or a comma-separated "
                        "list of them without repeats, not '%s'\n", optarg);
                bad = -1;
            } else {
                o->ndtypes = n;
            }
            break;
        }
        case OPT_REPS: bad |= parse_int("reps", optarg, 1, 1000000, &o->reps); break;
        case OPT_FORMAT:
            if (strcmp(optarg, "text") == 0) o->format = BENCH_TEXT;
            else if (strcmp(optarg, "csv") == 0) o->format = BENCH_CSV;
            else if (strcmp(optarg, "json") == 0) o->format = BENCH_JSON;
            else {
                fprintf(stderr, "attn-bench: --format wants text, csv or json, not '%s'\n",
                        optarg);
                bad = -1;
            }
            break;
        case OPT_CHECK: o->check = 1; break;
        case OPT_NOCHECK: o->check = 0; break;
        case OPT_DECODE: o->decode = 1; break;
        case OPT_SPLITS:
            o->splits = optarg;
            if (bench_parse_splits(optarg, splits, BENCH_MAX_SPLITS) < 0) {
                fprintf(stderr, "attn-bench: --splits wants up to %d comma-separated values "
                        "without repeats, each \"auto\" or 1..256, not '%s'\n", BENCH_MAX_SPLITS,
                        optarg);
                bad = -1;
            }
            break;
        case OPT_KVINT8: o->kv_int8 = 1; break;
        case OPT_BLOCKS:
            o->blocks = optarg;
            if (bench_parse_blocks(optarg, splits, BENCH_MAX_BLOCKS) < 0) {
                fprintf(stderr, "attn-bench: --block-size wants up to %d comma-separated values "
                        "without repeats, each 0 (contiguous) or a power of two in 16..256, "
                        "not '%s'\n", BENCH_MAX_BLOCKS, optarg);
                bad = -1;
            }
            break;
        case OPT_MIXED: o->mixed = 1; break;
        case OPT_MIXEDLENS:
            if (bench_parse_mixed_lengths(optarg, &o->mixed_min, &o->mixed_max) < 0) {
                fprintf(stderr, "attn-bench: --mixed-lengths wants MIN,MAX with 1 <= MIN <= MAX "
                        "<= %d, not '%s'\n", 1 << 20, optarg);
                bad = -1;
            }
            break;
        case OPT_MATERIALIZED: o->compare = 1; break;
        case OPT_WINDOW:
            if (bench_parse_window(optarg, &o->variant) < 0) {
                fprintf(stderr, "attn-bench: --window wants LEFT,RIGHT, each -1 (unlimited) or "
                        "a count of keys >= 0, not '%s'\n", optarg);
                bad = -1;
            }
            break;
        case OPT_SOFTCAP:
            bad |= parse_float("softcap", optarg, 1e-3f, 1e6f, &o->variant.softcap);
            break;
        case OPT_SINKS:
            if (bench_parse_sinks(optarg, &o->variant) < 0) {
                fprintf(stderr, "attn-bench: --sinks wants a finite logit (e.g. 0.5) or "
                        "per-head, not '%s'\n", optarg);
                bad = -1;
            }
            break;
        case OPT_ALIBI:
            bad |= parse_float("alibi", optarg, 1e-3f, 1e3f, &o->variant.alibi_max_bias);
            break;
        case OPT_MASK:
            if (bench_parse_mask(optarg, &o->variant) < 0) {
                fprintf(stderr, "attn-bench: --mask wants causal, zeros, prefix-lm or "
                        "random-block, not '%s'\n", optarg);
                bad = -1;
            }
            break;
        case OPT_MASKTYPE:
            if (bench_parse_mask_dtype(optarg, &o->variant) < 0) {
                fprintf(stderr, "attn-bench: --mask-dtype wants f32 or f16, not '%s'\n", optarg);
                bad = -1;
            }
            mask_dtype_given = 1;
            break;
        case OPT_MASKFRESH:
            o->variant.mask_fresh = fresh_given = 1;
            break;
        case OPT_PACKED: {
            int n = bench_parse_packed(optarg, o->variant.packed, BENCH_MAX_PACKED);
            if (n < 0) {
                fprintf(stderr, "attn-bench: --packed wants up to %d comma-separated lengths, "
                        "each 1..%d, not '%s'\n", BENCH_MAX_PACKED, 1 << 20, optarg);
                bad = -1;
            } else {
                o->variant.npacked = n;
            }
            break;
        }
        case OPT_VARIANTS: o->variants = 1; break;
        case OPT_HELP:
            if (bad) break; /* an error before --help is still one */
            bench_options_usage(stdout);
            return EXIT_SUCCESS;
        case OPT_VERSION:
            if (bad) break; /* as --help: an error before it is still one */
            printf("attn-bench %d.%d.%d (libattn %s)\n", ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR,
                   ATTN_VERSION_PATCH, attn_version_string());
            return EXIT_SUCCESS;
        case OPT_COUNT: break; /* not an option */
        }
    }
    if (!bad && optind < argc) {
        fprintf(stderr, "attn-bench: unexpected argument '%s'\n", argv[optind]);
        bad = -1;
    }
    if (!bad && o->seq && (o->q_len || o->kv_len)) {
        fprintf(stderr, "attn-bench: give either --seq or --q-len/--kv-len, not both\n");
        bad = -1;
    }
    if (!bad && o->decode && o->compare) {
        fprintf(stderr, "attn-bench: --decode and --compare-materialized are separate runs\n");
        bad = -1;
    }
    if (!bad && (o->splits || o->kv_int8 || o->blocks) && !o->decode) {
        fprintf(stderr, "attn-bench: --%s applies to --decode only\n",
                o->splits ? "splits" : o->kv_int8 ? "kv-int8" : "block-size");
        bad = -1;
    }
    if (!bad) bad = check_mixed_use(o);
    if (!bad && o->compare && o->ndtypes > 1) {
        fprintf(stderr, "attn-bench: --compare-materialized takes one --dtype\n");
        bad = -1;
    }
    if (!bad) bad = check_variant_use(o, mask_dtype_given, fresh_given);
    if (bad) {
        fprintf(stderr, "Try 'attn-bench --help'.\n");
        return 2;
    }
    return -1;
}
