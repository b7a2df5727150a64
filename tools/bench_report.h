/* bench_report.h -- attn-bench's prefill rows and how they are printed
 * (text, CSV, JSON), the device's description, the noise warnings and the
 * JSON document. */
#ifndef ATTN_BENCH_REPORT_H
#define ATTN_BENCH_REPORT_H

#include "bench_variant.h"
#include "common.h"

#include <cjson/cJSON.h>

/* A shape of the DESIGN prefill set or of the command line. */
typedef struct prefill_shape {
    int batch, q_heads, kv_heads, head_dim, q_len, kv_len;
} prefill_shape;

/* One storage type's result on one shape. */
typedef struct prefill_row {
    prefill_shape s;
    attn_dtype dtype;
    int causal;
    bench_variant variant;   /* all zero: plain attention */
    attn_plan_info plan;
    int reps;
    double median_ms, min_ms, flops, gflops;
    attn_time_spread spread; /* of the timed runs */
    double ratio;            /* median time / the first dtype's same layout's, 1 for it */
    double padded_ratio;     /* --packed: median time / the same type's padded row's; else -1 */
    int checked;             /* 0 = skipped (too large or --no-check) */
    tool_check chk;          /* when checked */
} prefill_row;

/* The device, as the header line and the JSON name it. */
typedef struct device_facts {
    char platform[256], name[256], vendor[256], driver[256];
    cl_uint compute_units;
    const char *type;
} device_facts;

/* The problem of shape s in type t; its text ("B=1 Hq=8 ... causal"). */
attn_problem prefill_problem(const prefill_shape *s, attn_dtype t, int causal);
void prefill_shape_text(const prefill_shape *s, int causal, char *buf, size_t size);
/* The shape's text and the variant's after it, when there is one. */
void prefill_text(const prefill_shape *s, int causal, const bench_variant *v, char *buf,
                  size_t size);

void bench_read_device(attn_context *ctx, device_facts *f);

/* The ratio the text's ratio column shows: none, the first type's
 * (--dtype LIST), or the padded layout's (--packed with one type). CSV and
 * JSON give each ratio that a row has in its own column and field. */
typedef enum bench_ratio { BENCH_RATIO_NONE, BENCH_RATIO_FIRST_DTYPE, BENCH_RATIO_PADDED } bench_ratio;

/* One row per line; CSV's new columns go at the end, so that readers by
 * position keep working. */
void prefill_text_header(bench_ratio ratio);
void prefill_text_row(const prefill_row *r, double peak, bench_ratio ratio);
void prefill_csv_header(void);
void prefill_csv_row(const prefill_row *r, double peak);
cJSON *prefill_json_row(const prefill_row *r, double peak);

/* A noise warning: on stderr at once, and into the JSON's "warnings". */
void bench_warn_noise(cJSON *warnings, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* One warning when results' quartiles lie further apart than the noise limit. */
void bench_check_noise(cJSON *results, cJSON *warnings);
/* Prints the JSON document (taking the three arrays); returns 1 if it could
 * not be made. */
int bench_print_json(const device_facts *dev, double peak, double peak_end, double drift,
                     cJSON *results, cJSON *errors, cJSON *warnings);

#endif /* ATTN_BENCH_REPORT_H */
