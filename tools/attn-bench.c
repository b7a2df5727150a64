/* attn-bench -- times attn_forward on the DESIGN benchmark shapes (or one
 * shape from the command line) with clpeak's method, reports GFLOP/s and the
 * fraction of the device's measured fp32 peak, and checks each result
 * against the CPU reference. Uses only attn.h, OpenCL and cJSON. */
#define _POSIX_C_SOURCE 200809L
#include "attn.h"
#include "bench_decode.h"
#include "bench_compare.h"
#include "bench_options.h"
#include "bench_prefill.h"
#include "bench_report.h"
#include "bench_variants.h"
#include "common.h"
#include "tool_error.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* DESIGN "Benchmark shapes", prefill. */
static const prefill_shape prefill_set[] = {
    {1, 8, 2, 64, 512, 512},    {1, 8, 2, 64, 1024, 1024},  {1, 8, 2, 64, 2048, 2048},
    {1, 8, 2, 64, 4096, 4096},  {1, 32, 8, 128, 1024, 1024}, {1, 32, 8, 128, 2048, 2048},
};

/* The one shape the options describe; 0 when none was given. */
static int custom_shape(const bench_options *o, prefill_shape *s)
{
    if (!o->batch && !o->q_heads && !o->kv_heads && !o->head_dim && !o->seq && !o->q_len &&
        !o->kv_len && !o->variant.npacked && !o->variants && !o->mixed)
        return 0;
    s->batch = o->batch ? o->batch : 1;
    s->q_heads = o->q_heads ? o->q_heads : 8;
    s->kv_heads = o->kv_heads ? o->kv_heads : (s->q_heads % 4 == 0 ? s->q_heads / 4 : s->q_heads);
    s->head_dim = o->head_dim ? o->head_dim : 64;
    int q = o->seq ? o->seq : o->q_len, kv = o->seq ? o->seq : o->kv_len;
    s->q_len = q ? q : kv ? kv : o->variants ? 2048 : 1024;
    s->kv_len = kv ? kv : s->q_len;
    return 1;
}

/* A library failure: status name and the context's message, on stderr. */
static void report_failure(const char *what, attn_status st, const attn_context *ctx)
{
    tool_error("attn-bench", NULL, what, st, ctx ? attn_last_error(ctx) : attn_last_create_error());
}

static int run(int argc, char **argv)
{
    bench_options o;
    bench_options_init(&o);
    int rc = bench_options_parse(argc, argv, &o);
    if (rc >= 0) return rc;
    if (o.compare && !attn_has_clblast()) {
        fprintf(stderr, "attn-bench: --compare-materialized needs CLBlast; this libattn was built "
                        "without it (ATTN_WITH_CLBLAST)\n");
        return EXIT_FAILURE;
    }

    prefill_shape custom;
    const prefill_shape *shapes = prefill_set;
    size_t nshapes = sizeof prefill_set / sizeof prefill_set[0];
    const int have_custom = custom_shape(&o, &custom);
    if (have_custom && o.decode) { /* decode's defaults: DESIGN's decode shape */
        custom.batch = o.batch ? o.batch : o.mixed ? BENCH_MIXED_SEQS : 4;
        custom.q_heads = o.q_heads ? o.q_heads : 32;
        custom.kv_heads = o.kv_heads ? o.kv_heads : custom.q_heads % 4 ? custom.q_heads
                                                                        : custom.q_heads / 4;
        custom.head_dim = o.head_dim ? o.head_dim : 128;
        custom.q_len = o.q_len ? o.q_len : 1;
        custom.kv_len = o.kv_len ? o.kv_len : o.seq ? o.seq : 4096;
    }
    if (have_custom) {
        if (custom.q_heads % custom.kv_heads != 0) {
            fprintf(stderr, "attn-bench: --q-heads (%d) must be a multiple of --kv-heads (%d)\n"
                    "Try 'attn-bench --help'.\n", custom.q_heads, custom.kv_heads);
            return 2;
        }
        shapes = &custom;
        nshapes = 1;
    }

    attn_context *ctx = NULL;
    attn_status st = attn_context_create(o.device, &ctx);
    if (st != ATTN_SUCCESS) {
        report_failure("attn_context_create", st, NULL);
        return EXIT_FAILURE;
    }
    /* The tool checks on its own, outside the timed runs; the library's
     * check mode (ATTN_CHECK=1) would put the reference inside them. */
    attn_context_set_check(ctx, 0);

    int failed = 0;
    device_facts dev;
    bench_read_device(ctx, &dev);
    if (o.format == BENCH_TEXT) {
        printf("attn-bench %s (%s CLBlast): device %s / %s (%s, %u compute units, driver %s)\n",
               attn_version_string(), attn_has_clblast() ? "with" : "without", dev.platform,
               dev.name, dev.type, (unsigned)dev.compute_units, dev.driver);
        fflush(stdout);
    }

    /* The peak before the runs (the fractions use it) and after them: a
     * machine shared with other work shows as the two disagreeing. */
    double peak = 0, peak_end = 0;
    st = attn_device_peak_gflops(ctx, &peak);
    if (st != ATTN_SUCCESS) {
        report_failure("attn_device_peak_gflops", st, ctx);
        peak = 0;
        failed = 1;
    }
    char types[32] = "";
    for (int i = 0; i < o.ndtypes; i++)
        snprintf(types + strlen(types), sizeof types - strlen(types), "%s%s", i ? "," : "",
                 attn_dtype_name(o.dtypes[i]));
    const bench_ratio ratios = o.variants ? BENCH_RATIO_NONE
                               : o.ndtypes > 1 ? BENCH_RATIO_FIRST_DTYPE
                               : o.variant.npacked ? BENCH_RATIO_PADDED : BENCH_RATIO_NONE;
    if (o.format == BENCH_TEXT) {
        if (peak > 0) printf("fp32 FMA peak: %.1f GFLOP/s (before the runs)\n", peak);
        printf("dtype %s%s, seed %u, check %s\n", types,
               o.ndtypes > 1 ? " (interleaved; ratio = median time / the first type's)"
               : ratios ? " (padded and packed interleaved; ratio = median time / the padded "
                          "layout's)" : "", TOOL_SEED, o.check ? "on" : "off");
        if (!o.decode && !o.compare) prefill_text_header(ratios);
    } else if (o.format == BENCH_CSV && !o.decode && !o.compare) {
        prefill_csv_header();
    }

    cJSON *results = cJSON_CreateArray(), *errors = cJSON_CreateArray();
    cJSON *warnings = cJSON_CreateArray();
    if (o.decode) {
        bench_decode_config dc = {(int)o.format, {ATTN_F32}, o.ndtypes, o.reps, o.check,
                                  o.splits, o.blocks, &o.variant, 0, 0, 0, 0, 0, 0,
                                  o.kv_int8, o.mixed, BENCH_MIXED_MIN, BENCH_MIXED_MAX};
        memcpy(dc.dtypes, o.dtypes, sizeof o.dtypes);
        if (o.mixed_max) dc.mixed_min = o.mixed_min, dc.mixed_max = o.mixed_max;
        if (have_custom) {
            dc.batch = custom.batch, dc.q_heads = custom.q_heads, dc.kv_heads = custom.kv_heads;
            dc.head_dim = custom.head_dim, dc.q_len = custom.q_len, dc.kv_len = custom.kv_len;
        }
        failed |= bench_decode(ctx, &dc, peak, results, errors) != 0;
        nshapes = 0;
    } else if (o.compare) { /* the comparison's own rows instead of the plain ones */
        const bench_compare_options co = {o.reps, (int)o.format, peak, 1};
        attn_problem *probs = calloc(nshapes, sizeof *probs);
        for (size_t i = 0; probs && i < nshapes; i++) {
            const prefill_shape *s = &shapes[i];
            const attn_problem p = {.batch = s->batch, .q_heads = s->q_heads,
                                    .kv_heads = s->kv_heads, .head_dim = s->head_dim,
                                    .q_len = s->q_len, .kv_len = s->kv_len, .dtype = o.dtypes[0],
                                    .causal = o.causal, .scale = 0.0f};
            probs[i] = p;
        }
        failed |= !probs || bench_compare(ctx, probs, nshapes, &co, results, errors);
        free(probs);
        nshapes = 0;
    } else if (o.variants) {
        const prefill_how how = {.reps = o.reps, .check = o.check, .format = (int)o.format,
                                 .ratios = BENCH_RATIO_NONE, .period = 0, .peak = peak};
        const int seq_given = o.seq || o.q_len || o.kv_len;
        failed |= bench_variants(ctx, &custom, o.dtypes[0], seq_given, &o.variant, &how, results,
                                 errors);
        nshapes = 0;
    }
    /* each shape: every type (and with --packed, the padded and the packed
     * layout of each), type-major, timed interleaved */
    const int layouts = o.variant.npacked ? 2 : 1;
    const prefill_how how = {.reps = o.reps, .check = o.check, .format = (int)o.format,
                             .ratios = ratios, .period = layouts, .packed = layouts > 1,
                             .peak = peak};
    for (size_t i = 0; i < nshapes; i++) {
        prefill_config confs[2 * BENCH_MAX_DTYPES];
        for (int k = 0; k < o.ndtypes * layouts; k++) {
            const prefill_config c = {shapes[i], o.dtypes[k / layouts], o.causal, o.variant};
            confs[k] = c;
            confs[k].variant.padded = layouts > 1 && k % layouts == 0;
        }
        failed |= prefill_bench(ctx, confs, o.ndtypes * layouts, &how, NULL, results, errors);
    }

    if (peak > 0 && (st = attn_device_peak_gflops(ctx, &peak_end)) != ATTN_SUCCESS) {
        report_failure("attn_device_peak_gflops", st, ctx);
        peak_end = 0;
        failed = 1;
    }
    const double drift = attn_relative_change(peak, peak_end);
    if (o.format == BENCH_TEXT && peak_end > 0)
        printf("fp32 FMA peak: %.1f GFLOP/s before the runs, %.1f after (%.1f%% apart)\n", peak,
               peak_end, 100 * drift);
    if (o.format == BENCH_TEXT) printf("times read off the %s clock\n", tool_clock_name());
    if (drift > ATTN_NOISE_LIMIT)
        bench_warn_noise(warnings, "the fp32 peak was %.1f GFLOP/s before the runs and %.1f after "
                   "(%.0f%% apart, more than %.0f%%): the machine is too noisy to rank results",
                   peak, peak_end, 100 * drift, 100 * ATTN_NOISE_LIMIT);
    bench_check_noise(results, warnings);

    if (o.format == BENCH_JSON) {
        failed |= bench_print_json(&dev, peak, peak_end, drift, results, errors, warnings);
        results = errors = warnings = NULL;
    } else if (o.format == BENCH_TEXT) {
        printf("%s%s\n", failed ? "FAILED: see the messages above" : "all results within tolerance "
               "(or not checked)", cJSON_GetArraySize(warnings) ? "; too noisy to rank (see the "
               "warnings)" : "");
    }
    cJSON_Delete(results);
    cJSON_Delete(errors);
    cJSON_Delete(warnings);
    attn_context_release(ctx);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int main(int argc, char **argv) { return tool_exit("attn-bench", run(argc, argv)); }
