/* tune_compare.c -- attn-tune --compare (and --decode --compare): for each
 * shape, the library's choice (tuned, stale or heuristic) and the built-in
 * default timed interleaved through the tuner's bench (attn_forward, or
 * attn_decode on a full cache of the chosen kind: contiguous or paged, as
 * the dtype or int8), with the yardstick measured in the same run (the
 * fp32 FMA peak between rounds; for decode, which is memory-bound, the copy
 * bandwidth before and after, against the K/V bytes a step reads), so that
 * a tuned entry's gain is seen on this machine now. */
#include "tune_compare.h"
#include "tool_error.h"
#include "tuning/tune_shapes.h"
#include "tuning/tuning.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tune_open(const char *device, const char *shapes_arg, int decode, attn_problem **shapes,
              int *nshapes, attn_context **ctx)
{
    char err[1024];
    *nshapes = tune_shapes_load(shapes_arg, decode, shapes, err, sizeof err);
    if (*nshapes < 0) {
        fprintf(stderr, "attn-tune: %s\nTry 'attn-tune --help'.\n", err);
        return EXIT_USAGE;
    }
    const attn_status st = attn_context_create(device, ctx);
    if (st != ATTN_SUCCESS) {
        tool_error("attn-tune", NULL, "attn_context_create", st, attn_last_create_error());
        free(*shapes);
        *shapes = NULL;
        return EXIT_FAILURE;
    }
    attn_context_set_check(*ctx, 0); /* the tuner checks on its own; --compare only times */
    return -1;
}

/* A decode step's K and V bytes: the whole cache's rows, read once. */
static double kv_bytes(const attn_problem *p, const attn_tune_cache *kv)
{
    const double row = kv && kv->storage == ATTN_KV_INT8
                           ? p->head_dim + 4.0 /* and the row's float scale */
                           : (double)p->head_dim * attn_dtype_size(p->dtype);
    return 2.0 * p->batch * p->kv_heads * p->kv_len * row;
}

int tune_compare(const char *device, const char *shapes_arg, int entry, const attn_tune_cache *kv)
{
    attn_problem *shapes = NULL;
    attn_context *ctx = NULL;
    const int decode = entry == ATTN_ENTRY_DECODE;
    int nshapes;
    const int rc = tune_open(device, shapes_arg, decode, &shapes, &nshapes, &ctx);
    if (rc >= 0) return rc;
    attn_status st;
    attn_device_identity id;
    attn_device_identity_of(ctx, &id);
    printf("attn-tune %s %s: %s / %s (driver %s, %u compute units)\n"
           "the library's choice and the built-in default timed interleaved; medians\n",
           attn_version_string(), decode ? "--decode --compare" : "--compare", id.platform,
           id.name, id.driver, id.compute_units);
    if (decode)
        printf("K/V GB/s: the cache's K and V rows read once a step, against the copy bandwidth\n"
               "measured before and after; the runs are back to back, so a cache that fits the\n"
               "last-level cache is read warm and can pass it\n");
    else
        printf("%%peak: of the fp32 FMA peak measured between rounds\n");
    printf("%-34s %-9s %-44s %9s %9s %7s %7s %7s %8s %6s %6s %13s\n", "shape", "source", "params",
           decode ? "KV GB/s" : "GFLOP/s", "default", "ratio", decode ? "%copy" : "%peak",
           "dflt%", decode ? "copy" : "peak", "IQR", "dIQR", decode ? "copy range" : "peak range");
    fflush(stdout);
    int failed = 0;
    for (int i = 0; i < nshapes && !failed; i++) {
        const attn_problem *p = &shapes[i];
        char shape[160];
        tune_shape_format(p, shape, sizeof shape);
        if (decode && kv && kv->storage == ATTN_KV_INT8)
            snprintf(shape + strlen(shape), sizeof shape - strlen(shape), " int8");
        if (decode && kv && kv->block_size)
            snprintf(shape + strlen(shape), sizeof shape - strlen(shape), " block%d",
                     kv->block_size);
        attn_plan_info info;
        attn_tune_bench *b = NULL;
        attn_params cands[2];
        if ((st = attn_tune_bench_create(ctx, entry, p, decode ? kv : NULL, &b)) != ATTN_SUCCESS ||
            (st = attn_tune_bench_plan(b, &info, &cands[0])) != ATTN_SUCCESS) {
            tool_error("attn-tune", shape, NULL, st, attn_last_error(ctx));
            attn_tune_bench_free(b);
            failed = 1;
            break;
        }
        cands[1] = attn_tune_bench_default(b);
        /* rounds for about 4 s of forwards, 5 to 41 */
        double one[2] = {0, 0};
        if (!failed) st = attn_tune_retime(b, cands, 2, 1, 1, 0, one, NULL);
        int rounds = one[0] + one[1] > 0 ? (int)(4000 / (one[0] + one[1])) : 5;
        rounds = rounds < 5 ? 5 : rounds > 41 ? 41 : rounds;
        double *t0 = malloc(sizeof(double) * (size_t)rounds), *t1 = malloc(sizeof(double) * (size_t)rounds);
        /* the copy bandwidth takes seconds (two 256 MiB buffers) where the
         * peak takes a tenth: it is measured before and after the rounds */
        const int nref = decode ? 2 : rounds;
        double *pk = malloc(sizeof(double) * (size_t)nref);
        if (!t0 || !t1 || !pk) st = ATTN_ERROR_OUT_OF_MEMORY;
        if (decode && st == ATTN_SUCCESS) st = attn_device_copy_gbps(ctx, &pk[0]);
        for (int r = 0; r < rounds && st == ATTN_SUCCESS && !failed; r++) {
            /* each side first in every other round: the run right after
             * the peak's is the slower slot (tune_measure.c) */
            const int s = r % 2;
            const attn_params order[2] = {cands[s], cands[1 - s]};
            double ms[2];
            if (!decode && (st = attn_device_peak_gflops(ctx, &pk[r])) != ATTN_SUCCESS) break;
            if ((st = attn_tune_retime(b, order, 2, 1, 0, 0, ms, NULL)) != ATTN_SUCCESS) break;
            t0[r] = ms[s];
            t1[r] = ms[1 - s];
        }
        if (decode && st == ATTN_SUCCESS) st = attn_device_copy_gbps(ctx, &pk[1]);
        if (st != ATTN_SUCCESS) {
            tool_error("attn-tune", shape, NULL, st, attn_last_error(ctx));
            failed = 1;
        } else if (!failed) {
            const double work = decode ? kv_bytes(p, kv) : attn_problem_flops(p, NULL);
            const attn_time_spread st0 = attn_time_spread_of(t0, rounds);
            const attn_time_spread st1 = attn_time_spread_of(t1, rounds);
            const attn_time_spread sp = attn_time_spread_of(pk, nref);
            double mt = st0.median_ms, md = st1.median_ms, peak = sp.median_ms;
            double gt = work / (mt * 1e6), gd = work / (md * 1e6);
            const double iqr_t = attn_time_spread_iqr(&st0), iqr_d = attn_time_spread_iqr(&st1);
            const double peak_moved = sp.max_ms > 0 ? (sp.max_ms - sp.min_ms) / sp.max_ms : 0;
            /* the same parameters twice show the noise of the measurement */
            printf("%-34s %-9s %-44s %9.1f %9.1f %7.3f %6.1f%% %6.1f%% %8.1f %5.1f%% %5.1f%% "
                   "%6.1f..%-6.1f%s\n", shape, info.source, info.params, gt, gd, gt / gd,
                   100 * gt / peak, 100 * gd / peak, peak, 100 * iqr_t, 100 * iqr_d, sp.min_ms,
                   sp.max_ms, attn_params_equal(&cands[0], &cands[1]) ? "  (same parameters)" : "");
            fflush(stdout);
            if (iqr_t > ATTN_NOISE_LIMIT || iqr_d > ATTN_NOISE_LIMIT ||
                peak_moved > ATTN_NOISE_LIMIT)
                fprintf(stderr, "attn-tune: WARNING: %s: too noisy to rank: IQR %.0f%% and %.0f%% "
                        "of the medians, %s %.1f..%.1f %s (limit %.0f%%)\n",
                        shape, 100 * iqr_t, 100 * iqr_d,
                        decode ? "copy bandwidth" : "peak between rounds", sp.min_ms, sp.max_ms,
                        decode ? "GB/s" : "GFLOP/s",
                        100 * ATTN_NOISE_LIMIT);
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
