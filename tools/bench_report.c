/* bench_report.c -- attn-bench's prefill rows as text, CSV and JSON, the
 * device's description, the noise warnings and the JSON document: the
 * output half of attn-bench.c. */
#define _POSIX_C_SOURCE 200809L
#include "bench_report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

attn_problem prefill_problem(const prefill_shape *s, attn_dtype t, int causal)
{
    const attn_problem p = {.batch = s->batch, .q_heads = s->q_heads, .kv_heads = s->kv_heads,
                            .head_dim = s->head_dim, .q_len = s->q_len, .kv_len = s->kv_len,
                            .dtype = t, .causal = causal};
    return p;
}

void prefill_shape_text(const prefill_shape *s, int causal, char *buf, size_t size)
{
    const attn_problem p = prefill_problem(s, ATTN_F32, causal);
    tool_shape_text(&p, buf, size);
}

void prefill_text(const prefill_shape *s, int causal, const bench_variant *v, char *buf,
                  size_t size)
{
    char vt[192];
    prefill_shape_text(s, causal, buf, size);
    bench_variant_text(v, vt, sizeof vt);
    if (*vt) snprintf(buf + strlen(buf), size - strlen(buf), " %s", vt);
}

void bench_read_device(attn_context *ctx, device_facts *f)
{
    cl_device_id d = attn_context_device(ctx);
    cl_platform_id pl = NULL;
    cl_device_type t = 0;
    memset(f, 0, sizeof *f);
    clGetDeviceInfo(d, CL_DEVICE_PLATFORM, sizeof pl, &pl, NULL);
    if (pl) clGetPlatformInfo(pl, CL_PLATFORM_NAME, sizeof f->platform - 1, f->platform, NULL);
    clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof f->name - 1, f->name, NULL);
    clGetDeviceInfo(d, CL_DEVICE_VENDOR, sizeof f->vendor - 1, f->vendor, NULL);
    clGetDeviceInfo(d, CL_DRIVER_VERSION, sizeof f->driver - 1, f->driver, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof f->compute_units, &f->compute_units,
                    NULL);
    clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof t, &t, NULL);
    f->type = t & CL_DEVICE_TYPE_GPU ? "GPU" : t & CL_DEVICE_TYPE_CPU ? "CPU"
            : t & CL_DEVICE_TYPE_ACCELERATOR ? "accelerator" : "other";
}

void prefill_text_header(bench_ratio ratios)
{
    printf("%-38s %-5s %-7s %-9s %5s %10s %9s %9s %6s %9s %6s%s  %-9s %s\n", "shape", "dtype",
           "family", "source", "reps", "median ms", "min ms", "max ms", "IQR", "GFLOP/s", "peak",
           ratios ? "  ratio" : "", "max error", "check");
}

void prefill_text_row(const prefill_row *r, double peak, bench_ratio ratios)
{
    char sh[256], pk[16] = "-", err[32] = "-", ratio[16] = "";
    prefill_text(&r->s, r->causal, &r->variant, sh, sizeof sh);
    if (peak > 0) snprintf(pk, sizeof pk, "%.1f%%", 100.0 * r->gflops / peak);
    if (r->checked) snprintf(err, sizeof err, "%.2e", r->chk.max_error);
    if (ratios) snprintf(ratio, sizeof ratio, " %6.3f",
                         ratios == BENCH_RATIO_PADDED ? r->padded_ratio : r->ratio);
    char check[64];
    tool_check_text(r->checked, &r->chk, check, sizeof check);
    printf("%-38s %-5s %-7s %-9s %5d %10.3f %9.3f %9.3f %5.1f%% %9.2f %6s%s  %-9s %s  [%s]\n", sh,
           attn_dtype_name(r->dtype), r->plan.family, r->plan.source, r->reps, r->median_ms,
           r->spread.min_ms, r->spread.max_ms, 100.0 * attn_time_spread_iqr(&r->spread), r->gflops,
           pk, ratio, err, check, r->plan.params);
    fflush(stdout);
}

/* New columns go at the end, so that readers by position keep working. */
void prefill_csv_header(void)
{
    printf("batch,q_heads,kv_heads,head_dim,q_len,kv_len,dtype,causal,family,params,"
           "params_source,reps,median_ms,min_ms,gflops,peak_gflops,peak_fraction,max_error,"
           "max_error_ratio,mean_error,nonfinite,check,q1_ms,q3_ms,max_ms,iqr_fraction,"
           "time_ratio_to_first_dtype,variant,time_ratio_to_padded\n");
}

void prefill_csv_row(const prefill_row *r, double peak)
{
    printf("%d,%d,%d,%d,%d,%d,%s,%d,%s,\"%s\",%s,%d,%.4f,%.4f,%.3f,", r->s.batch, r->s.q_heads,
           r->s.kv_heads, r->s.head_dim, r->s.q_len, r->s.kv_len, attn_dtype_name(r->dtype),
           r->causal, r->plan.family, r->plan.params, r->plan.source, r->reps, r->median_ms,
           r->min_ms, r->gflops);
    if (peak > 0) printf("%.3f,%.4f,", peak, r->gflops / peak);
    else printf(",,");
    if (r->checked)
        printf("%.3e,%.4g,%.3e,%zu,", r->chk.max_error, r->chk.max_ratio, r->chk.mean_error,
               r->chk.nonfinite);
    else printf(",,,,");
    char vt[192], padded[32] = "";
    bench_variant_text(&r->variant, vt, sizeof vt);
    if (r->padded_ratio >= 0) snprintf(padded, sizeof padded, "%.4f", r->padded_ratio);
    printf("%s,%.4f,%.4f,%.4f,%.4f,%.4f,\"%s\",%s\n", tool_check_word(r->checked, &r->chk),
           r->spread.q1_ms, r->spread.q3_ms,
           r->spread.max_ms, attn_time_spread_iqr(&r->spread), r->ratio, vt, padded);
    fflush(stdout);
}

cJSON *prefill_json_row(const prefill_row *r, double peak)
{
    cJSON *j = cJSON_CreateObject();
    const attn_problem p = prefill_problem(&r->s, r->dtype, r->causal);
    tool_json_problem(j, &p);
    tool_json_plan(j, &r->plan);
    tool_json_times(j, r->reps, &r->spread, r->ratio, r->flops, peak);
    if (r->padded_ratio >= 0) cJSON_AddNumberToObject(j, "time_ratio_to_padded", r->padded_ratio);
    tool_json_check(j, r->checked, &r->chk, 1);
    bench_variant_json(j, &r->variant);
    return j;
}

/* A noise warning: on stderr at once, and into the JSON's "warnings". */
void bench_warn_noise(cJSON *warnings, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fprintf(stderr, "attn-bench: WARNING: %s\n", text);
    cJSON_AddItemToArray(warnings, cJSON_CreateString(text));
}

/* Results whose quartiles lie further apart than the noise limit. */
void bench_check_noise(cJSON *results, cJSON *warnings)
{
    int noisy = 0, n = 0;
    double worst = 0;
    cJSON *r;
    cJSON_ArrayForEach(r, results)
    {
        /* every timed path of the row: "iqr_fraction", "materialized_iqr_fraction" */
        double row_worst = -1;
        const cJSON *f;
        cJSON_ArrayForEach(f, r)
        {
            const size_t len = strlen(f->string), suffix = strlen("iqr_fraction");
            if (cJSON_IsNumber(f) && len >= suffix &&
                strcmp(f->string + len - suffix, "iqr_fraction") == 0 && f->valuedouble > row_worst)
                row_worst = f->valuedouble;
        }
        if (row_worst < 0) continue;
        n++;
        if (row_worst > ATTN_NOISE_LIMIT) noisy++;
        if (row_worst > worst) worst = row_worst;
    }
    if (noisy)
        bench_warn_noise(warnings, "%d of %d results spread by more than %.0f%% of their median "
                   "between the quartiles (up to %.0f%%): the machine is too noisy to rank them",
                   noisy, n, 100 * ATTN_NOISE_LIMIT, 100 * worst);
}

int bench_print_json(const device_facts *dev, double peak, double peak_end, double drift,
                     cJSON *results, cJSON *errors, cJSON *warnings)
{
    int failed = 0;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "tool", "attn-bench");
    cJSON_AddStringToObject(root, "version", attn_version_string());
    cJSON_AddBoolToObject(root, "clblast", attn_has_clblast());
    cJSON *d = cJSON_AddObjectToObject(root, "device");
    cJSON_AddStringToObject(d, "platform", dev->platform);
    cJSON_AddStringToObject(d, "name", dev->name);
    cJSON_AddStringToObject(d, "vendor", dev->vendor);
    cJSON_AddStringToObject(d, "driver", dev->driver);
    cJSON_AddNumberToObject(d, "compute_units", dev->compute_units);
    cJSON_AddStringToObject(d, "type", dev->type);
    if (peak > 0) cJSON_AddNumberToObject(root, "peak_gflops", peak);
    else cJSON_AddNullToObject(root, "peak_gflops");
    if (peak_end > 0) cJSON_AddNumberToObject(root, "peak_gflops_end", peak_end);
    else cJSON_AddNullToObject(root, "peak_gflops_end");
    cJSON_AddNumberToObject(root, "peak_change", drift);
    cJSON_AddStringToObject(root, "clock", tool_clock_name()); /* what the times were read off */
    cJSON_AddBoolToObject(root, "noisy", cJSON_GetArraySize(warnings) > 0);
    cJSON_AddNumberToObject(root, "seed", TOOL_SEED);
    cJSON_AddItemToObject(root, "results", results);
    cJSON_AddItemToObject(root, "errors", errors);
    cJSON_AddItemToObject(root, "warnings", warnings);
    char *text = cJSON_Print(root);
    if (text) puts(text);
    else failed = 1;
    free(text);
    cJSON_Delete(root);
    return failed;
}
