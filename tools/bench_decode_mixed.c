/* bench_decode_mixed.c -- attn-bench --decode --mixed: sequences of mixed
 * lengths (bench_mixed_pool.c) decoding together, one token each per step,
 * through each compared cache (contiguous: every sequence padded to the
 * longest; paged: a pool of the blocks the sequences need) in each type,
 * all interleaved with copy-bandwidth runs. Reports tokens/s, the K/V
 * bytes the sequences' keys take read per second against the copy
 * bandwidth, each cache's device memory and the ratios of both to the
 * first cache's; checks each configuration's output against the CPU
 * reference. Uses only attn.h, OpenCL and cJSON. */
#define _POSIX_C_SOURCE 200809L
#include "bench_decode_mixed.h"
#include "bench_mixed_pool.h"
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CONF (BENCH_DECODE_MAX_TYPES * BENCH_MAX_BLOCKS)

/* Configuration c is type c / nblocks over cache c % nblocks. */
typedef struct mconf {
    attn_plan_info plan;
    double *times;
    attn_time_spread spread;
    double type_ratio;  /* median / the first type's over the same cache */
    double block_ratio; /* median / the same type's over the first cache */
    double mem_ratio;   /* cache bytes / the same type's first cache's */
    int checked;
    tool_check chk;     /* when checked */
} mconf;

/* What the timing loop's callbacks see. */
typedef struct mixed_runs {
    attn_context *ctx;
    const mixed_seqs *seqs;
    const mixed_type *types;
    int nblocks;
    bench_copy_samples copies;
    const char *step; /* what failed */
    bench_flush flush; /* overwritten before each step, as --decode does */
} mixed_runs;

static attn_status run_step(void *arg, int c)
{
    mixed_runs *m = arg;
    return mixed_step(m->ctx, m->seqs, &m->types[c / m->nblocks], c % m->nblocks, &m->step);
}

/* Untimed, before each step: the lengths back to those before it, and on
 * a GPU its last-level cache overwritten. */
static attn_status rewind_run(void *arg, int c)
{
    mixed_runs *m = arg;
    m->step = "attn_kv_cache_truncate";
    attn_status st = mixed_rewind(m->seqs, &m->types[c / m->nblocks], c % m->nblocks);
    if (st != ATTN_SUCCESS) return st;
    m->step = "clEnqueueFillBuffer (the cache flush)";
    return bench_flush_run(m->ctx, &m->flush, c);
}

static attn_status copy_round(void *arg, int rep)
{
    mixed_runs *m = arg;
    m->step = "attn_device_copy_gbps";
    return bench_copy_sample(&m->copies, rep);
}

/* One step of configuration c outside the rounds: rewound, then timed. */
static attn_status one_step(mixed_runs *m, int c, double *ms)
{
    attn_status st = rewind_run(m, c);
    return st == ATTN_SUCCESS ? tool_timed(m->ctx, run_step, m, c, ms) : st;
}

/* "B=32 Hq=32 Hkv=8 D=128 kv=64..16384" */
static void pool_text(const mixed_seqs *s, char *buf, size_t size)
{
    snprintf(buf, size, "B=%d Hq=%d Hkv=%d D=%d kv=%d..%d", s->n, s->q_heads, s->kv_heads,
             s->head_dim, s->lens[0], s->longest);
}

static void print_header(const bench_decode_config *cfg, const mixed_seqs *s)
{
    if (cfg->format == 1) {
        printf("batch,q_heads,kv_heads,head_dim,kv_len_min,kv_len_max,kv_tokens,dtype,"
               "kv_storage,block_size,pool_blocks,family,params,params_source,reps,median_ms,"
               "min_ms,q1_ms,q3_ms,max_ms,iqr_fraction,tokens_per_s,kv_gbps,copy_gbps,"
               "bandwidth_fraction,cache_bytes,cache_bytes_ratio_to_first_block,"
               "time_ratio_to_first_block,tokens_per_s_ratio_to_first_block,"
               "time_ratio_to_first_dtype,max_error,max_error_ratio,nonfinite,check\n");
    } else if (cfg->format == 0) {
        char sh[96];
        pool_text(s, sh, sizeof sh);
        printf("decode, mixed lengths: %s, Sq=1: %d sequences of lengths log-spaced from %d to "
               "%d,\n", sh, s->n, s->lens[0], s->longest);
        for (int b = 0; b < s->n; b++)
            printf("%s%d%s", b % 16 ? " " : "  ", s->lens[b], b % 16 == 15 || b + 1 == s->n
                                                                     ? "\n" : "");
        printf("%d keys in all. A step appends one token to every sequence and decodes them "
               "(timed); the sequences\nare then truncated back, untimed, so every step sees "
               "these lengths. tok/s = sequences / median\nstep; K/V GB/s = the K and V bytes "
               "of the %d keys / median step, against the copy bandwidth\n(attn_device_copy_gbps)"
               " measured in the same run. block: 0 contiguous (every sequence holds\n%d rows), "
               "else paged with a pool of sum ceil(len / block) blocks; cache MiB = "
               "attn_kv_cache_bytes;\n", s->total, s->total, s->longest);
        printf("mem x and tok/s x: cache bytes and tokens/s over the first block's (same type)%s\n",
               bench_decode_ntypes(cfg) > 1 ? "; type ratio = median time / the first type's "
                                              "(same block)" : "");
        printf("%-8s %5s %7s %5s %9s %9s %9s %6s %9s %8s %7s %9s %6s %7s%s  %-9s %s\n", "dtype",
               "block", "pool", "reps", "median ms", "min ms", "max ms", "IQR", "tok/s",
               "K/V GB/s", "of copy", "cache MiB", "mem x", "tok/s x",
               bench_decode_ntypes(cfg) > 1 ? "   type" : "", "max error", "check");
    }
    fflush(stdout);
}

/* The row of configuration c: text or CSV on stdout, JSON into results in
 * every format (attn-bench reads the spread from it). */
static void print_row(const bench_decode_config *cfg, const mixed_seqs *s, const mixed_type *r,
                      int t, int block, const mconf *c, double copy_gbps, double peak, int reps,
                      cJSON *results)
{
    const double kv_bytes = 2.0 * s->kv_heads * s->total *
                            bench_decode_row_bytes(cfg, t, s->head_dim);
    const double md = c->spread.median_ms, iqr = attn_time_spread_iqr(&c->spread);
    const double kv_gbps = md > 0 ? kv_bytes / (md * 1e6) : 0, tps = md > 0 ? s->n * 1e3 / md : 0;
    const double frac = copy_gbps > 0 ? kv_gbps / copy_gbps : 0;
    const double speed = c->block_ratio > 0 ? 1 / c->block_ratio : 0;
    const attn_kv_cache_desc *d = &r->descs[block];
    const int int8 = r->storage == ATTN_KV_INT8;
    const attn_lengths lengths = {NULL, NULL, NULL, s->lens};
    const double flops = attn_problem_flops(&r->p, &lengths);
    char tn[16];
    bench_decode_type_name(cfg, t, tn, sizeof tn);
    if (cfg->format == 0) {
        char err[32] = "-", check[48], pool[16] = "-", ratio[16] = "";
        if (c->checked) snprintf(err, sizeof err, "%.2e", c->chk.max_error);
        tool_check_text(c->checked, &c->chk, check, sizeof check);
        if (d->block_size) snprintf(pool, sizeof pool, "%d", d->num_blocks);
        if (bench_decode_ntypes(cfg) > 1) snprintf(ratio, sizeof ratio, " %6.3f", c->type_ratio);
        printf("%-8s %5d %7s %5d %9.3f %9.3f %9.3f %5.1f%% %9.1f %8.1f %6.1f%% %9.1f %6.3f %7.3f"
               "%s  %-9s %s  [%s]\n", tn, d->block_size, pool, reps, md, c->spread.min_ms,
               c->spread.max_ms, 100 * iqr, tps, kv_gbps, 100 * frac,
               (double)r->bytes[block] / (1 << 20), c->mem_ratio, speed, ratio, err, check,
               c->plan.params);
    } else if (cfg->format == 1) {
        printf("%d,%d,%d,%d,%d,%d,%d,%s,%s,%d,%d,%s,\"%s\",%s,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,"
               "%.1f,%.3f,%.3f,%.4f,%zu,%.4f,%.4f,%.4f,%.4f,", s->n, s->q_heads, s->kv_heads,
               s->head_dim, s->lens[0], s->longest, s->total, attn_dtype_name(r->dtype),
               int8 ? "int8" : "dtype", d->block_size, d->num_blocks, c->plan.family,
               c->plan.params, c->plan.source, reps, md, c->spread.min_ms, c->spread.q1_ms,
               c->spread.q3_ms, c->spread.max_ms, iqr, tps, kv_gbps, copy_gbps, frac,
               r->bytes[block], c->mem_ratio, c->block_ratio, speed, c->type_ratio);
        if (c->checked)
            printf("%.3e,%.4g,%zu,", c->chk.max_error, c->chk.max_ratio, c->chk.nonfinite);
        else printf(",,,");
        printf("%s\n", tool_check_word(c->checked, &c->chk));
    }
    cJSON *j = cJSON_CreateObject();
    tool_json_problem(j, &r->p);
    cJSON_AddStringToObject(j, "mode", "decode_mixed");
    cJSON_AddStringToObject(j, "kv_storage", int8 ? "int8" : "dtype");
    tool_json_plan(j, &c->plan);
    cJSON_AddNumberToObject(j, "block_size", d->block_size);
    cJSON_AddNumberToObject(j, "pool_blocks", d->num_blocks);
    tool_json_times(j, reps, &c->spread, c->type_ratio, flops, peak);
    cJSON_AddNumberToObject(j, "time_ratio_to_first_block", c->block_ratio);
    cJSON_AddNumberToObject(j, "tokens_per_s", tps);
    cJSON_AddNumberToObject(j, "tokens_per_s_ratio_to_first_block", speed);
    cJSON_AddNumberToObject(j, "cache_bytes", (double)r->bytes[block]);
    cJSON_AddNumberToObject(j, "cache_bytes_ratio_to_first_block", c->mem_ratio);
    cJSON_AddNumberToObject(j, "kv_tokens", s->total);
    cJSON_AddItemToObject(j, "kv_lengths", cJSON_CreateIntArray(s->lens, s->n));
    bench_json_bandwidth(j, kv_bytes, kv_gbps, copy_gbps);
    tool_json_check(j, c->checked, &c->chk, 0);
    cJSON_AddItemToArray(results, j);
    fflush(stdout);
}

/* Each configuration's output after one step against its type's
 * reference; ho and ref hold one output. */
static attn_status check_all(mixed_runs *m, mconf *confs, int nconf, float *ho, float *ref,
                             int *bad, const char **step)
{
    const mixed_seqs *s = m->seqs;
    const size_t nq = (size_t)s->n * s->q_heads * s->head_dim;
    attn_status st = ATTN_SUCCESS;
    double ms;
    for (int c = 0; c < nconf && st == ATTN_SUCCESS; c++) {
        const mixed_type *r = &m->types[c / m->nblocks];
        *bad = c / m->nblocks;
        if (c % m->nblocks == 0) {
            *step = "attn_reference_forward";
            if ((st = mixed_reference(s, r, ref)) != ATTN_SUCCESS) break;
        }
        if ((st = one_step(m, c, &ms)) != ATTN_SUCCESS) {
            *step = m->step;
            break;
        }
        *step = "reading the output";
        if (clEnqueueReadBuffer(attn_context_queue(m->ctx), r->bo, CL_TRUE, 0, nq * r->esize,
                                r->stage, 0, NULL, NULL) != CL_SUCCESS) {
            st = ATTN_ERROR_OPENCL;
            break;
        }
        attn_convert_to_f32(r->dtype, r->stage, ho, nq);
        confs[c].checked = 1;
        tool_check_output(r->storage, r->dtype, ho, ref, nq, &confs[c].chk);
    }
    return st;
}

int bench_decode_mixed(attn_context *ctx, const bench_decode_config *cfg, double peak,
                       cJSON *results, cJSON *errors)
{
    int blocks[BENCH_MAX_BLOCKS];
    const char *list = cfg->blocks ? cfg->blocks : BENCH_MIXED_BLOCKS;
    const int nblocks = bench_parse_blocks(list, blocks, BENCH_MAX_BLOCKS);
    if (nblocks < 0 || cfg->ndtypes < 1 || cfg->ndtypes > BENCH_MAX_DTYPES || cfg->batch < 1 ||
        cfg->mixed_min < 1 || cfg->mixed_min > cfg->mixed_max) {
        fprintf(stderr, "attn-bench: bad --block-size '%s', --batch or --mixed-lengths "
                "(attn-bench --help)\n", list);
        return 2;
    }
    const int ntypes = bench_decode_ntypes(cfg), nconf = ntypes * nblocks;
    mixed_seqs s;
    mixed_type res[BENCH_DECODE_MAX_TYPES];
    mconf confs[MAX_CONF];
    memset(res, 0, sizeof res);
    memset(confs, 0, sizeof confs);
    float *ho = NULL, *ref = NULL;
    int failed = 1, reps = 0, bad = 0;
    const char *step = "host allocation";
    char sh[96] = "mixed";
    bench_flush flush = {NULL, 0}; /* here: done releases it (the gotos pass m) */
    attn_status st = mixed_seqs_init(&s, cfg->batch, cfg->mixed_min, cfg->mixed_max,
                                     cfg->q_heads, cfg->kv_heads, cfg->head_dim);
    if (st != ATTN_SUCCESS) {
        step = st == ATTN_ERROR_OUT_OF_MEMORY ? "host allocation" : "the lengths' sum (> 2^31)";
        goto done;
    }
    pool_text(&s, sh, sizeof sh);
    print_header(cfg, &s);
    const size_t nq = (size_t)s.n * s.q_heads * s.head_dim;
    attn_problem any = {.batch = s.n, .q_heads = s.q_heads, .kv_heads = s.kv_heads,
                        .head_dim = s.head_dim, .q_len = 1, .kv_len = s.longest, .causal = 1};
    const attn_lengths lengths = {NULL, NULL, NULL, s.lens};
    const int check = cfg->check && attn_problem_flops(&any, &lengths) <= BENCH_DECODE_CHECK_FLOPS;
    for (int t = 0; t < ntypes; t++) {
        bad = t;
        if ((st = mixed_type_setup(ctx, &s, bench_decode_dtype(cfg, t),
                                   bench_decode_storage(cfg, t), check, blocks, nblocks, &res[t],
                                   &step)) != ATTN_SUCCESS)
            goto done;
    }

    /* each configuration: a first step (kernels built), its plan at the
     * step's lengths, one timed step for the calibration */
    mixed_runs m = {ctx, &s, res, nblocks, {ctx, {0}, 0, 1}, "", {NULL, 0}};
    tool_timing_new_series();
    flush = m.flush = bench_flush_create(ctx);
    double ms = 0;
    for (int c = 0; c < nconf; c++) {
        bad = c / nblocks;
        if ((st = one_step(&m, c, &ms)) != ATTN_SUCCESS) {
            step = m.step;
            goto done;
        }
        step = "attn_decode_prepare";
        if ((st = attn_decode_prepare(ctx, res[bad].caches[c % nblocks], &res[bad].p,
                                      &confs[c].plan)) != ATTN_SUCCESS)
            goto done;
        if ((st = one_step(&m, c, &ms)) != ATTN_SUCCESS) {
            step = m.step;
            goto done;
        }
        if (c == 0)
            reps = tool_reps(cfg->reps, BENCH_DECODE_TARGET_MS / nconf, ms, BENCH_DECODE_MIN_REPS,
                             BENCH_DECODE_MAX_REPS);
        step = "host allocation";
        if (!(confs[c].times = malloc(sizeof(double) * (size_t)reps))) {
            st = ATTN_ERROR_OUT_OF_MEMORY;
            goto done;
        }
    }
    /* interleaved: every configuration once per round (rewound untimed
     * before its step), the copy bandwidth in a few rounds */
    double *times[MAX_CONF];
    for (int c = 0; c < nconf; c++) times[c] = confs[c].times;
    m.copies.every = bench_copy_every(reps, nconf);
    tool_rounds rounds = {nconf, reps, run_step, copy_round, rewind_run, &m, times, 0};
    if ((st = tool_time_rounds(ctx, &rounds)) != ATTN_SUCCESS) {
        step = m.step;
        bad = rounds.failed / nblocks;
        goto done;
    }
    const attn_time_spread copy = attn_time_spread_of(m.copies.gbps, m.copies.n);
    for (int c = 0; c < nconf; c++) confs[c].spread = attn_time_spread_of(confs[c].times, reps);
    for (int c = 0; c < nconf; c++) {
        const int t = c / nblocks, b = c % nblocks;
        const double by_type = confs[b].spread.median_ms;
        const double by_block = confs[t * nblocks].spread.median_ms;
        confs[c].type_ratio = by_type > 0 ? confs[c].spread.median_ms / by_type : 0;
        confs[c].block_ratio = by_block > 0 ? confs[c].spread.median_ms / by_block : 0;
        confs[c].mem_ratio = (double)res[t].bytes[b] / (double)res[t].bytes[0];
    }

    step = "host allocation";
    if (check && (!(ho = malloc(nq * sizeof *ho)) || !(ref = malloc(nq * sizeof *ref)))) {
        st = ATTN_ERROR_OUT_OF_MEMORY;
        goto done;
    }
    if (check && (st = check_all(&m, confs, nconf, ho, ref, &bad, &step)) != ATTN_SUCCESS)
        goto done;
    failed = 0;
    if (cfg->format == 0)
        printf("copy bandwidth %.1f GB/s (median of %d, %.1f..%.1f; read + written)\n",
               copy.median_ms, m.copies.n, copy.min_ms, copy.max_ms);
    for (int c = 0; c < nconf; c++) {
        const int t = c / nblocks;
        print_row(cfg, &s, &res[t], t, c % nblocks, &confs[c], copy.median_ms, peak, reps,
                  results);
        if (confs[c].checked && !confs[c].chk.passed) {
            char tn[16];
            fprintf(stderr, "attn-bench: CHECK FAILED: decode %s %s block %d: max error %.3e "
                    "is %.3g times the tolerance; %zu outputs NaN or inf\n", sh,
                    bench_decode_type_name(cfg, t, tn, sizeof tn), blocks[c % nblocks],
                    confs[c].chk.max_error, confs[c].chk.max_ratio, confs[c].chk.nonfinite);
            failed = 1;
        }
    }
done:
    if (st != ATTN_SUCCESS) {
        char what[160], tn[16];
        snprintf(what, sizeof what, "%s %s", sh, bench_decode_type_name(cfg, bad, tn, sizeof tn));
        bench_decode_error(ctx, errors, what, step, st);
        failed = 1;
    }
    bench_flush_release(&flush);
    for (int c = 0; c < nconf; c++) free(confs[c].times);
    for (int t = 0; t < ntypes; t++) mixed_type_free(&res[t]);
    mixed_seqs_free(&s);
    free(ho), free(ref);
    return failed;
}
