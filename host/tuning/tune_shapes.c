/* tune_shapes.c -- parsing attn-tune's --shapes list (syntax in
 * tune_shapes.h) and the DESIGN prefill set. */
#define _POSIX_C_SOURCE 200809L
#include "tuning/tune_shapes.h"
#include "attention/validate.h"
#include "core/errors.h"
#include "core/text.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A positive finite float written plainly (attn_parse_float); 0 or -1. */
static int field_float(const char *value, float *out)
{
    return attn_parse_float(value, FLT_TRUE_MIN, FLT_MAX, out);
}

/* The variants a shape can name by value alone (those with host arrays or
 * buffers -- sinks, a mask, packed lengths -- are not shapes):
 * window=L or window=L/R (R -1 when absent: unlimited), softcap=C,
 * alibi=MAX_BIAS. *known = 1 when key is one of them; 0, or -1 with why. */
static int variant_field(const char *key, const char *value, attn_problem *p, char *err,
                         size_t errsize, int *known)
{
    *known = 1;
    if (strcmp(key, "window") == 0) {
        char left[32];
        const char *slash = strchr(value, '/');
        const size_t llen = slash ? (size_t)(slash - value) : strlen(value);
        snprintf(left, sizeof left, "%.*s", (int)(llen < sizeof left ? llen : 0), value);
        p->use_window = 1;
        p->window_right = -1;
        /* a longer L would be cut to its first digits: refused as empty */
        if (llen < sizeof left && attn_parse_int(left, 0, 1 << 30, &p->window_left) == 0 &&
            (!slash || attn_parse_int(slash + 1, -1, 1 << 30, &p->window_right) == 0))
            return 0;
        snprintf(err, errsize, "window=%s: expected L or L/R, keys back and ahead (0..2^30; R "
                 "may be -1, unlimited)", value);
        return -1;
    }
    float *dst = strcmp(key, "softcap") == 0 ? &p->softcap
                 : strcmp(key, "alibi") == 0 ? &p->alibi_max_bias : NULL;
    if (!dst) {
        *known = 0;
        return 0;
    }
    if (field_float(value, dst) == 0) return 0;
    snprintf(err, errsize, "%s=%s: expected a positive number", key, value);
    return -1;
}

/* One shape "hq=8:hkv=2:d=64:s=2048:f16"; 0, or -1 with why in err. */
static int parse_one(char *item, attn_problem *p, char *err, size_t errsize)
{
    memset(p, 0, sizeof *p);
    p->batch = 1;
    p->causal = 1;
    p->dtype = ATTN_F32;
    int s = 0, sq = 0, skv = 0, known = 0;
    /* each field once: "hq=8:hq=16" or "f16:f32" is a typo, not the last */
    const char *seen[16];
    int nseen = 0;
    char *save = NULL;
    for (char *f = strtok_r(item, ":", &save); f; f = strtok_r(NULL, ":", &save)) {
        char *eq = strchr(f, '=');
        const int is_dtype = !strcmp(f, "f32") || !strcmp(f, "f16") || !strcmp(f, "bf16");
        const int is_mask = !strcmp(f, "causal") || !strcmp(f, "full");
        if (!eq && !is_dtype && !is_mask) {
            snprintf(err, errsize, "unknown word \"%s\" (f32, f16, bf16, causal or full)", f);
            return -1;
        }
        const char *what = eq ? f : is_dtype ? "the dtype" : "causal or full";
        const size_t wlen = eq ? (size_t)(eq - f) : strlen(what);
        for (int i = 0; i < nseen; i++)
            if (strlen(seen[i]) == wlen && strncmp(seen[i], what, wlen) == 0) {
                snprintf(err, errsize, "%.*s is given twice", (int)wlen, what);
                return -1;
            }
        if (nseen < 16) seen[nseen++] = what;
        if (!eq) {
            if (strcmp(f, "f32") == 0) p->dtype = ATTN_F32;
            else if (strcmp(f, "f16") == 0) p->dtype = ATTN_F16;
            else if (strcmp(f, "bf16") == 0) p->dtype = ATTN_BF16;
            else if (strcmp(f, "causal") == 0) p->causal = 1;
            else p->causal = 0; /* "full" */
            continue;
        }
        *eq = 0;
        const char *key = f, *value = eq + 1;
        if (variant_field(key, value, p, err, errsize, &known) != 0) return -1;
        if (known) continue;
        int *dst = NULL, lo = 1, hi = INT_MAX;
        if (strcmp(key, "b") == 0) dst = &p->batch;
        else if (strcmp(key, "hq") == 0) dst = &p->q_heads, hi = 1 << 16;
        else if (strcmp(key, "hkv") == 0) dst = &p->kv_heads, hi = 1 << 16;
        else if (strcmp(key, "d") == 0) dst = &p->head_dim, hi = 256;
        else if (strcmp(key, "s") == 0) dst = &s;
        else if (strcmp(key, "sq") == 0) dst = &sq;
        else if (strcmp(key, "skv") == 0) dst = &skv;
        else {
            snprintf(err, errsize, "unknown field \"%s\" (b, hq, hkv, d, s, sq, skv, window, "
                     "softcap, alibi)", key);
            return -1;
        }
        if (attn_parse_int(value, lo, hi, dst) != 0) {
            snprintf(err, errsize, "%s=%s: expected an integer in %d..%d", key, value, lo, hi);
            return -1;
        }
    }
    if (!p->q_heads || !p->head_dim) {
        snprintf(err, errsize, "hq= and d= are required");
        return -1;
    }
    if (s && (sq || skv)) {
        snprintf(err, errsize, "give s= or sq= and skv=, not both");
        return -1;
    }
    p->q_len = s ? s : sq ? sq : skv;
    p->kv_len = s ? s : skv ? skv : sq;
    if (!p->q_len) {
        snprintf(err, errsize, "a length is required (s=, or sq= and skv=)");
        return -1;
    }
    if (!p->kv_heads) p->kv_heads = p->q_heads;
    if (p->q_heads % p->kv_heads) {
        snprintf(err, errsize, "hq=%d is not a multiple of hkv=%d", p->q_heads, p->kv_heads);
        return -1;
    }
    return 0;
}

int tune_shapes_parse(const char *text, const char *origin, attn_problem **out, char *err,
                      size_t errsize)
{
    char *copy = strdup(text);
    attn_problem *list = NULL;
    int n = 0, cap = 0, line = 1;
    *out = NULL;
    if (!copy) goto oom;
    char *p = copy;
    while (*p) {
        if (*p == '#') { /* a comment to the end of the line */
            while (*p && *p != '\n') p++;
            continue;
        }
        if (*p == ',' || *p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
            if (*p == '\n') line++;
            p++;
            continue;
        }
        char *start = p;
        while (*p && !strchr(", \t\r\n#", *p)) p++;
        char saved = *p;
        *p = 0;
        char item[256], why[256];
        snprintf(item, sizeof item, "%s", start);
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            attn_problem *grown = realloc(list, (size_t)cap * sizeof *grown);
            if (!grown) goto oom;
            list = grown;
        }
        if (parse_one(start, &list[n], why, sizeof why) != 0) {
            if (strcmp(origin, "--shapes") == 0)
                snprintf(err, errsize, "--shapes: \"%s\": %s", item, why);
            else
                snprintf(err, errsize, "%s:%d: \"%s\": %s", origin, line, item, why);
            free(list);
            free(copy);
            return -1;
        }
        n++;
        *p = saved;
    }
    free(copy);
    if (n == 0) {
        snprintf(err, errsize, "%s: no shapes given", origin);
        free(list);
        return -1;
    }
    *out = list;
    return n;
oom:
    snprintf(err, errsize, "out of host memory");
    free(list);
    free(copy);
    return -1;
}

int tune_shapes_from_arg(const char *arg, attn_problem **out, char *err, size_t errsize)
{
    if (!strchr(arg, '=') || access(arg, F_OK) == 0) {
        FILE *f = fopen(arg, "rb");
        if (!f) {
            snprintf(err, errsize, "--shapes %s: %s (a file, or a list such as hq=8:d=64:s=2048)",
                     arg, strerror(errno));
            return -1;
        }
        char *text = NULL;
        size_t len = 0, cap = 0;
        int c;
        while ((c = fgetc(f)) != EOF) {
            if (len + 2 > cap) {
                cap = cap ? 2 * cap : 4096;
                char *grown = realloc(text, cap);
                if (!grown) {
                    free(text);
                    fclose(f);
                    snprintf(err, errsize, "out of host memory");
                    return -1;
                }
                text = grown;
            }
            text[len++] = (char)c;
        }
        const int read_error = ferror(f) ? (errno ? errno : EIO) : 0; /* a folder: EISDIR */
        fclose(f);
        if (read_error) {
            free(text);
            snprintf(err, errsize, "--shapes %s: %s", arg, strerror(read_error));
            return -1;
        }
        const char *nul = text ? memchr(text, 0, len) : NULL;
        if (nul) { /* read as a C string: the shapes after it would be dropped */
            snprintf(err, errsize, "--shapes %s: a NUL byte at offset %zu: not a text file", arg,
                     (size_t)(nul - text));
            free(text);
            return -1;
        }
        if (!text) text = calloc(1, 1);
        if (!text) {
            snprintf(err, errsize, "out of host memory");
            return -1;
        }
        text[len] = 0;
        int n = tune_shapes_parse(text, arg, out, err, errsize);
        free(text);
        return n;
    }
    return tune_shapes_parse(arg, "--shapes", out, err, errsize);
}

/* Shapes of batch b, n rows {hq, hkv, d, kv length}, q_len new queries
 * each (0: q_len = the kv length), causal f32. */
static int design_set(const int (*set)[4], int n, int b, int q_len, attn_problem **out)
{
    attn_problem *list = calloc((size_t)n, sizeof *list);
    if (!list) return -1;
    for (int i = 0; i < n; i++) {
        list[i].batch = b;
        list[i].q_heads = set[i][0];
        list[i].kv_heads = set[i][1];
        list[i].head_dim = set[i][2];
        list[i].kv_len = set[i][3];
        list[i].q_len = q_len ? q_len : set[i][3];
        list[i].dtype = ATTN_F32;
        list[i].causal = 1;
    }
    *out = list;
    return n;
}

int tune_shapes_design(attn_problem **out)
{
    static const int set[][4] = {{8, 2, 64, 512}, {8, 2, 64, 1024}, {8, 2, 64, 2048},
                                 {8, 2, 64, 4096}, {32, 8, 128, 1024}, {32, 8, 128, 2048}};
    return design_set(set, (int)(sizeof set / sizeof set[0]), 1, 0, out);
}

int tune_shapes_design_decode(attn_problem **out)
{
    static const int set[][4] = {{32, 8, 128, 1024}, {32, 8, 128, 4096}, {32, 8, 128, 16384}};
    return design_set(set, (int)(sizeof set / sizeof set[0]), 4, 1, out);
}

void tune_shape_format(const attn_problem *p, char *buf, size_t size)
{
    int n;
    if (p->q_len == p->kv_len)
        n = snprintf(buf, size, "B=%d Hq=%d Hkv=%d D=%d S=%d %s %s", p->batch, p->q_heads,
                     p->kv_heads, p->head_dim, p->q_len, attn_dtype_name(p->dtype),
                     p->causal ? "causal" : "full");
    else
        n = snprintf(buf, size, "B=%d Hq=%d Hkv=%d D=%d Sq=%d Skv=%d %s %s", p->batch,
                     p->q_heads, p->kv_heads, p->head_dim, p->q_len, p->kv_len,
                     attn_dtype_name(p->dtype), p->causal ? "causal" : "full");
    size_t at = n > 0 && (size_t)n < size ? (size_t)n : size;
    if (p->use_window && at < size)
        at += (size_t)snprintf(buf + at, size - at, " window=%d/%d", p->window_left, p->window_right);
    if (p->softcap > 0.0f && at < size)
        at += (size_t)snprintf(buf + at, size - at, " softcap=%g", (double)p->softcap);
    if (p->alibi_max_bias > 0.0f && at < size)
        snprintf(buf + at, size - at, " alibi=%g", (double)p->alibi_max_bias);
}

int tune_shapes_load(const char *arg, int decode, attn_problem **out, char *err, size_t errsize)
{
    const int n = arg ? tune_shapes_from_arg(arg, out, err, errsize)
                  : decode ? tune_shapes_design_decode(out) : tune_shapes_design(out);
    if (n < 0) {
        if (!arg) snprintf(err, errsize, "out of host memory");
        return -1;
    }
    /* what the library would refuse, refused here by the option's name,
     * before the peak is measured and the first class started */
    for (int i = 0; i < n; i++) {
        attn_thread_error_state saved;
        attn_thread_error_save(&saved);
        attn_thread_call_begin(NULL); /* the message without a function's name */
        const attn_status st = attn_validate_problem_values(&(*out)[i], NULL);
        if (st != ATTN_SUCCESS) {
            char shape[256];
            tune_shape_format(&(*out)[i], shape, sizeof shape);
            snprintf(err, errsize, "--shapes: %s: %s", shape, attn_last_error(NULL));
        }
        attn_thread_error_restore(&saved);
        if (st != ATTN_SUCCESS) {
            free(*out);
            *out = NULL;
            return -1;
        }
    }
    for (int i = 0; decode && i < n; i++) {
        const attn_problem *p = &(*out)[i];
        const int too_long = p->q_len > ATTN_DECODE_MAX_Q_LEN;
        if (too_long || p->q_len > p->kv_len) {
            char shape[256];
            tune_shape_format(p, shape, sizeof shape);
            if (too_long)
                snprintf(err, errsize, "--shapes: %s: a decode shape's sq = %d exceeds "
                         "ATTN_DECODE_MAX_Q_LEN = %d (a longer block is a prefill against the "
                         "cache: tune it without --decode; a shape without sq= has sq = skv, "
                         "so give sq=1 for one new query)", shape, p->q_len,
                         ATTN_DECODE_MAX_Q_LEN);
            else
                snprintf(err, errsize, "--shapes: %s: a decode shape's sq = %d exceeds skv = %d "
                         "(the new queries are the cache's last tokens)", shape, p->q_len,
                         p->kv_len);
            free(*out);
            *out = NULL;
            return -1;
        }
    }
    return n;
}
