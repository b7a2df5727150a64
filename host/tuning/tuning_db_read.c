/* tuning_db_read.c -- reading a tuning database: the JSON text checked
 * field by field, an error naming the file, line, entry and field (the
 * format is in tuning.h; writing, locking and merging are tuning_db.c). */
#include "attention/decode.h" /* ATTN_KV_MIN_BLOCK, ATTN_KV_MAX_BLOCK */
#include "core/file_read.h"
#include "core/hash.h"
#include "core/log.h"
#include "tuning/tuning.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading ---- */

/* 1-based line of byte offset off. */
static int line_of(const char *text, size_t off)
{
    int line = 1;
    for (size_t i = 0; i < off; i++)
        if (text[i] == '\n') line++;
    return line;
}

static size_t column_of(const char *text, size_t off)
{
    size_t col = 1;
    while (col <= off && text[off - col] != '\n') col++;
    return col;
}

/* The line where element `index` of the top-level "entries" array starts
 * (cJSON keeps no positions): a scan that follows strings and nesting.
 * Returns the line of the array itself for index -1, 1 when not found. */
static int entry_line(const char *text, size_t len, int index)
{
    int depth = 0, in_entries = 0, expect = 0, count = -1;
    size_t key_start = 0, key_len = 0, str_start = 0;
    int have_key = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = text[i];
        if (in_entries && depth == 2 && expect && ch != ' ' && ch != '\t' && ch != '\n' &&
            ch != '\r' && ch != ']') {
            if (++count == index) return line_of(text, i);
            expect = 0;
        }
        if (ch == '"') { /* skip the string, remembering it as a possible key */
            str_start = i + 1;
            for (i++; i < len && text[i] != '"'; i++)
                if (text[i] == '\\') i++;
            if (depth == 1) {
                key_start = str_start;
                key_len = i - str_start;
                have_key = 1;
            }
            continue;
        }
        if (ch == '{' || ch == '[') {
            if (depth == 1 && have_key && key_len == 7 &&
                memcmp(text + key_start, "entries", 7) == 0) {
                if (index < 0) return line_of(text, i);
                in_entries = ch == '[';
                expect = 1;
            }
            depth++;
        } else if (ch == '}' || ch == ']') {
            depth--;
            if (depth < 2) in_entries = 0;
        } else if (ch == ',' && depth == 2 && in_entries) {
            expect = 1;
        } else if (ch == ',' && depth == 1) {
            have_key = 0;
        }
    }
    return 1;
}

/* The objects and arrays open at the end of text[0..len) (strings
 * skipped); -1 when it ends inside a string. */
static int depth_of(const char *text, size_t len)
{
    int depth = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '"') {
            for (i++; i < len && text[i] != '"'; i++)
                if (text[i] == '\\') i++;
            if (i >= len) return -1;
        } else if (text[i] == '{' || text[i] == '[') {
            depth++;
        } else if (text[i] == '}' || text[i] == ']') {
            depth--;
        }
    }
    return depth;
}

/* Whether the text stops inside a string or an open object or array: a
 * truncated file, whatever cJSON's error position says. */
static int ends_early(const char *text, size_t len) { return depth_of(text, len) != 0; }

typedef struct reader {
    const char *name, *text;
    size_t len;
    int index; /* the entry being read */
    char *err;
    size_t errsize;
} reader;

static int bad(reader *r, const char *fmt, const char *field)
{
    char what[512];
    snprintf(what, sizeof what, fmt, field);
    snprintf(r->err, r->errsize, "%s:%d: entry %d: %s", r->name,
             entry_line(r->text, r->len, r->index), r->index, what);
    return -1;
}

static int get_string(reader *r, const cJSON *obj, const char *key, char *dst, size_t size,
                      int required)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it) return required ? bad(r, "\"%s\" is missing", key) : 0;
    if (!cJSON_IsString(it) || !it->valuestring) return bad(r, "\"%s\" must be a string", key);
    if (strlen(it->valuestring) >= size) return bad(r, "\"%s\" is too long", key);
    memcpy(dst, it->valuestring, strlen(it->valuestring) + 1);
    return 0;
}

static int get_number(reader *r, const cJSON *obj, const char *key, double *dst, int required)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it || cJSON_IsNull(it)) return required ? bad(r, "\"%s\" is missing", key) : 0;
    if (!cJSON_IsNumber(it)) return bad(r, "\"%s\" must be a number", key);
    /* 1e999 parses as infinity, which the writer could only print as null */
    if (!isfinite(it->valuedouble)) return bad(r, "\"%s\" must be a finite number", key);
    *dst = it->valuedouble;
    return 0;
}

/* The optional spread fields beside a median (entries older than them have
 * none: all zero). */
static int get_spread(reader *r, const cJSON *obj, attn_time_spread *s, double median)
{
    memset(s, 0, sizeof *s);
    if (get_number(r, obj, "min_ms", &s->min_ms, 0) || get_number(r, obj, "q1_ms", &s->q1_ms, 0) ||
        get_number(r, obj, "q3_ms", &s->q3_ms, 0) || get_number(r, obj, "max_ms", &s->max_ms, 0))
        return -1;
    s->median_ms = median;
    return 0;
}

static int get_int(reader *r, const cJSON *obj, const char *key, int *dst, int lo, int hi,
                   int required)
{
    double v = *dst;
    if (get_number(r, obj, key, &v, required) != 0) return -1;
    /* the range first: converting a double outside int's range is undefined */
    if (!(v >= lo && v <= hi) || v != (double)(int)v) {
        char what[128];
        snprintf(what, sizeof what, "\"%%s\" must be an integer in %d..%d", lo, hi);
        return bad(r, what, key);
    }
    *dst = (int)v;
    return 0;
}

/* A member that `is` accepts: NULL when absent (*failed when required) or
 * of another type (*failed, the message saying it must be `what`). */
static const cJSON *get_typed(reader *r, const cJSON *obj, const char *key, int required,
                              cJSON_bool (*is)(const cJSON *), const char *what, int *failed)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    *failed = 0;
    if (!it) {
        if (required) *failed = bad(r, "\"%s\" is missing", key);
        return NULL;
    }
    if (!is(it)) {
        char must[64];
        snprintf(must, sizeof must, "\"%%s\" must be %s", what);
        *failed = bad(r, must, key);
        return NULL;
    }
    return it;
}

static const cJSON *get_object(reader *r, const cJSON *obj, const char *key, int required,
                               int *failed)
{
    return get_typed(r, obj, key, required, cJSON_IsObject, "an object", failed);
}

/* The members of an entry this build reads: for each top-level key, the
 * keys of its object (NULL: not an object here). "class" is read whole or
 * kept whole (read_class). */
static const char *const device_keys[] = {"platform", "vendor", "name", "driver",
                                          "compute_units", NULL};
static const char *const shape_keys[] = {"batch", "q_heads", "kv_heads", "q_len", "kv_len", NULL};
static const char *const default_keys[] = {"params", "median_ms", "gflops", "min_ms",
                                           "q1_ms",  "q3_ms",     "max_ms", NULL};
static const char *const verification_keys[] = {"max_error", "error_ratio", NULL};
static const char *const candidates_keys[] = {"tested", "rejected", "cut_short", NULL};
static const struct {
    const char *key;
    const char *const *members;
} entry_keys[] = {{"device", device_keys}, {"kernel_hash", NULL}, {"tool_version", NULL},
                  {"date", NULL}, {"class", NULL}, {"shape", shape_keys}, {"params", NULL},
                  {"median_ms", NULL}, {"gflops", NULL}, {"min_ms", NULL}, {"q1_ms", NULL},
                  {"q3_ms", NULL}, {"max_ms", NULL}, {"default", default_keys},
                  {"verification", verification_keys}, {"level", NULL},
                  {"candidates", candidates_keys}};
static const char *const class_keys[] = {"head_dim", "dtype",   "causal",  "group",    "q_bucket",
                                         "kv_bucket", "decode", "kv_int8", "kv_block", "variants",
                                         NULL};

static int listed(const char *const *keys, const char *key)
{
    for (; *keys; keys++)
        if (strcmp(*keys, key) == 0) return 1;
    return 0;
}

/* Keeps what the reader did not read of entry j (fields a newer attn
 * added) in e->extra, so that a merge writes it back: the unknown members
 * of known objects first, in entry_keys' order, then unknown fields in
 * the file's order, as the writer puts them back (one text per content,
 * whichever attn wrote the file last). */
static int keep_extra(reader *r, const cJSON *j, attn_tuning_entry *e)
{
    cJSON *x = cJSON_Duplicate(j, 1), *out = cJSON_CreateObject();
    if (!x || !out) {
        cJSON_Delete(x);
        cJSON_Delete(out);
        return bad(r, "%s", "out of host memory");
    }
    int lost = 0;
    for (size_t i = 0; i < sizeof entry_keys / sizeof entry_keys[0]; i++) {
        cJSON *it = cJSON_DetachItemFromObjectCaseSensitive(x, entry_keys[i].key);
        if (!it) continue; /* (read_entry refused a key given twice) */
        if (entry_keys[i].members) { /* an object (read_entry checked) */
            for (cJSON *m = it->child, *next; m; m = next) {
                next = m->next;
                if (listed(entry_keys[i].members, m->string))
                    cJSON_Delete(cJSON_DetachItemViaPointer(it, m));
            }
            if (it->child && cJSON_AddItemToObject(out, entry_keys[i].key, it)) continue;
            lost |= it->child != NULL;
        }
        cJSON_Delete(it);
    }
    while (x->child) {
        cJSON *it = cJSON_DetachItemViaPointer(x, x->child);
        if (!cJSON_AddItemToObject(out, it->string, it)) {
            cJSON_Delete(it);
            lost = 1;
        }
    }
    cJSON_Delete(x);
    x = out;
    int st = lost ? bad(r, "%s", "out of host memory") : 0;
    if (!st && x->child) {
        char *text = cJSON_PrintUnformatted(x);
        if (!text) st = bad(r, "%s", "out of host memory");
        else if (strlen(text) >= sizeof e->extra)
            e->lost = 1; /* read and used; a write is refused (tuning_db.c) */
        else memcpy(e->extra, text, strlen(text) + 1);
        free(text);
    }
    cJSON_Delete(x);
    return st;
}

/* A class this build cannot read (a newer attn's): kept verbatim, with
 * why, and never applied. */
static int foreign_class(reader *r, const cJSON *cls, attn_tuning_entry *e, const char *why)
{
    memset(&e->cls, 0, sizeof e->cls);
    snprintf(e->foreign_why, sizeof e->foreign_why, "%s", why);
    char *text = cJSON_PrintUnformatted(cls);
    int st = 0;
    if (!text) st = bad(r, "%s", "out of host memory");
    else if (strlen(text) >= sizeof e->foreign_class) {
        /* never applied, and a write is refused (tuning_db.c); its text's
         * hash keeps it a slot of its own */
        e->lost = 1;
        snprintf(e->foreign_class, sizeof e->foreign_class, "lost %016llx",
                 (unsigned long long)attn_hash_str(ATTN_HASH_INIT, text));
    } else {
        memcpy(e->foreign_class, text, strlen(text) + 1);
    }
    free(text);
    return st;
}

/* A string member: NULL when absent (an error when required), -1 set in
 * *failed when not a string. */
static const char *get_text(reader *r, const cJSON *obj, const char *key, int required,
                            int *failed)
{
    const cJSON *it = get_typed(r, obj, key, required, cJSON_IsString, "a string", failed);
    return it ? it->valuestring : NULL; /* cJSON gives a string item its text */
}

/* The class: read into e->cls; or, where it holds a field, storage type,
 * variant or range this build does not know but a newer attn could have
 * written, kept whole (foreign_class). A class this build knows but whose
 * values are wrong (a missing field, a wrong type) is corrupt. */
static int read_class(reader *r, const cJSON *cls, attn_tuning_entry *e)
{
    char why[128];
    int failed;
    const char *dtype = get_text(r, cls, "dtype", 1, &failed);
    if (failed) return -1;
    if (get_int(r, cls, "head_dim", &e->cls.head_dim, 1, 1 << 16, 1) ||
        get_int(r, cls, "group", &e->cls.group, 1, 1 << 16, 1) ||
        get_int(r, cls, "q_bucket", &e->cls.q_bucket, 1, 1 << 30, 1) ||
        get_int(r, cls, "kv_bucket", &e->cls.kv_bucket, 1, 1 << 30, 1))
        return -1;
    /* buckets are powers of two (attn_length_bucket): another never equals
     * a class, yet would serve as the nearest */
    if (e->cls.q_bucket & (e->cls.q_bucket - 1))
        return bad(r, "\"%s\" must be a power of two", "class.q_bucket");
    if (e->cls.kv_bucket & (e->cls.kv_bucket - 1))
        return bad(r, "\"%s\" must be a power of two", "class.kv_bucket");
    const cJSON *causal = cJSON_GetObjectItemCaseSensitive(cls, "causal");
    if (!cJSON_IsBool(causal)) return bad(r, "\"%s\" must be true or false", "class.causal");
    e->cls.causal = cJSON_IsTrue(causal);
    /* optional: an entry for attn_decode (absent: attn_forward's) */
    const cJSON *decode = cJSON_GetObjectItemCaseSensitive(cls, "decode");
    if (decode && !cJSON_IsBool(decode))
        return bad(r, "\"%s\" must be true or false", "class.decode");
    e->cls.decode = cJSON_IsTrue(decode);
    /* optional: a decode over an int8 cache (absent: K/V as the dtype) */
    const cJSON *kv_int8 = cJSON_GetObjectItemCaseSensitive(cls, "kv_int8");
    if (kv_int8 && (!cJSON_IsBool(kv_int8) || !e->cls.decode))
        return bad(r, "\"%s\" must be true or false, and only in a decode class",
                   "class.kv_int8");
    e->cls.kv_int8 = cJSON_IsTrue(kv_int8);
    /* optional: a decode over a paged cache, its block size (absent: a
     * contiguous cache, as every database before paged classes) */
    if (cJSON_GetObjectItemCaseSensitive(cls, "kv_block") &&
        get_int(r, cls, "kv_block", &e->cls.kv_block, 1, 1 << 30, 1))
        return -1;
    if (e->cls.kv_block && (!e->cls.decode || (e->cls.kv_block & (e->cls.kv_block - 1))))
        return bad(r, "\"%s\" must be a power of two, and only in a decode class",
                   "class.kv_block");
    /* optional: the variants the entry was tuned with, "window,softcap"
     * (absent: none, as every database before them) */
    const char *variants = get_text(r, cls, "variants", 0, &failed);
    if (failed) return -1;
    char why_v[96];

    /* what a newer attn may know: checked once the fields this build reads
     * are well formed (a typo beside them is no excuse) */
    for (const cJSON *m = cls->child; m; m = m->next)
        if (!listed(class_keys, m->string)) {
            snprintf(why, sizeof why, "class field \"%.64s\" is unknown to this attn", m->string);
            return foreign_class(r, cls, e, why);
        }
    if (strcmp(dtype, "f32") == 0) e->cls.dtype = ATTN_F32;
    else if (strcmp(dtype, "f16") == 0) e->cls.dtype = ATTN_F16;
    else if (strcmp(dtype, "bf16") == 0) e->cls.dtype = ATTN_BF16;
    else {
        snprintf(why, sizeof why, "class.dtype \"%.40s\" is unknown to this attn", dtype);
        return foreign_class(r, cls, e, why);
    }
    if (e->cls.head_dim > 256) { /* validate.c's bound */
        snprintf(why, sizeof why, "class.head_dim %d is beyond this attn's 256", e->cls.head_dim);
        return foreign_class(r, cls, e, why);
    }
    if (e->cls.kv_block && (e->cls.kv_block < ATTN_KV_MIN_BLOCK || e->cls.kv_block > ATTN_KV_MAX_BLOCK)) {
        snprintf(why, sizeof why, "class.kv_block %d is outside this attn's %d..%d",
                 e->cls.kv_block, ATTN_KV_MIN_BLOCK, ATTN_KV_MAX_BLOCK);
        return foreign_class(r, cls, e, why);
    }
    if (attn_variant_flags_parse(variants ? variants : "", &e->cls.variants, why_v,
                                 sizeof why_v) != 0) {
        snprintf(why, sizeof why, "class.variants: %s", why_v);
        return foreign_class(r, cls, e, why);
    }
    return 0;
}

/* The first member name of an object in j's tree (j too) that its object
 * gives twice, or NULL. The reader takes the first and most JSON tools the
 * last: a hand edit appended to an entry would be ignored, then dropped by
 * the next merge. */
static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A member name object j gives twice, or NULL: pairwise for the few an
 * entry's objects have, sorted for a wide one (pairwise, a hand-made
 * object of 80000 members took 7 s, each context's first plan) */
static const char *twice_in(const cJSON *j)
{
    size_t n = 0;
    for (const cJSON *m = j->child; m; m = m->next) n++;
    const char **names = n > 16 ? malloc(n * sizeof *names) : NULL;
    if (!names) { /* (out of memory: pairwise still answers) */
        for (const cJSON *m = j->child; m; m = m->next)
            for (const cJSON *o = m->next; o && m->string; o = o->next)
                if (o->string && strcmp(m->string, o->string) == 0) return m->string;
        return NULL;
    }
    size_t k = 0;
    for (const cJSON *m = j->child; m; m = m->next)
        if (m->string) names[k++] = m->string;
    qsort(names, k, sizeof *names, by_name);
    const char *twice = NULL;
    for (size_t i = 1; i < k && !twice; i++)
        if (strcmp(names[i - 1], names[i]) == 0) twice = names[i];
    free(names);
    return twice;
}

static const char *given_twice(const cJSON *j)
{
    const char *twice = j && cJSON_IsObject(j) ? twice_in(j) : NULL;
    for (const cJSON *m = j ? j->child : NULL; m && !twice; m = m->next) twice = given_twice(m);
    return twice;
}

static int read_entry(reader *r, const cJSON *j, attn_tuning_entry *e)
{
    memset(e, 0, sizeof *e);
    if (!cJSON_IsObject(j)) return bad(r, "%s", "not an object");
    const char *twice = given_twice(j);
    if (twice) return bad(r, "\"%s\" is given twice", twice);
    int failed;
    const cJSON *dev = get_object(r, j, "device", 1, &failed);
    if (failed) return -1;
    int cu = 0;
    if (get_string(r, dev, "platform", e->device.platform, sizeof e->device.platform, 1) ||
        get_string(r, dev, "vendor", e->device.vendor, sizeof e->device.vendor, 1) ||
        get_string(r, dev, "name", e->device.name, sizeof e->device.name, 1) ||
        get_string(r, dev, "driver", e->device.driver, sizeof e->device.driver, 1) ||
        get_int(r, dev, "compute_units", &cu, 0, 1 << 30, 1))
        return -1;
    e->device.compute_units = (unsigned)cu;
    if (get_string(r, j, "kernel_hash", e->kernel_hash, sizeof e->kernel_hash, 1) ||
        get_string(r, j, "tool_version", e->tool_version, sizeof e->tool_version, 0) ||
        get_string(r, j, "date", e->date, sizeof e->date, 0))
        return -1;

    const cJSON *cls = get_object(r, j, "class", 1, &failed);
    if (failed || read_class(r, cls, e) != 0) return -1;

    if (get_string(r, j, "params", e->params, sizeof e->params, 1)) return -1;
    char why[256];
    /* a tunable, family or range this build does not know (a newer attn
     * wrote it) leaves the entry unusable here, not the file corrupt:
     * lookup skips it, a merge keeps it, and attn-tune --show says why */
    if (attn_tuning_entry_params(e, NULL, why, sizeof why) == ATTN_PARAMS_SYNTAX) {
        char what[512];
        snprintf(what, sizeof what, "\"params\": %s", why);
        return bad(r, "%s", what);
    }

    const cJSON *shape = get_object(r, j, "shape", 0, &failed);
    if (failed) return -1;
    if (shape && (get_int(r, shape, "batch", &e->batch, 1, 1 << 30, 0) ||
                  get_int(r, shape, "q_heads", &e->q_heads, 1, 1 << 30, 0) ||
                  get_int(r, shape, "kv_heads", &e->kv_heads, 1, 1 << 30, 0) ||
                  get_int(r, shape, "q_len", &e->q_len, 1, 1 << 30, 0) ||
                  get_int(r, shape, "kv_len", &e->kv_len, 1, 1 << 30, 0)))
        return -1;
    if (get_number(r, j, "median_ms", &e->median_ms, 0) ||
        get_number(r, j, "gflops", &e->gflops, 0) || get_spread(r, j, &e->spread, e->median_ms))
        return -1;
    const cJSON *dflt = get_object(r, j, "default", 0, &failed);
    if (failed) return -1;
    if (dflt && (get_string(r, dflt, "params", e->default_params, sizeof e->default_params, 0) ||
                 get_number(r, dflt, "median_ms", &e->default_ms, 0) ||
                 get_number(r, dflt, "gflops", &e->default_gflops, 0) ||
                 get_spread(r, dflt, &e->default_spread, e->default_ms)))
        return -1;
    const cJSON *ver = get_object(r, j, "verification", 0, &failed);
    if (failed) return -1;
    if (ver && (get_number(r, ver, "max_error", &e->max_error, 0) ||
                get_number(r, ver, "error_ratio", &e->error_ratio, 0)))
        return -1;
    char level[16] = "quick";
    if (get_string(r, j, "level", level, sizeof level, 0)) return -1;
    if (strcmp(level, "quick") == 0) e->level = ATTN_TUNE_LEVEL_QUICK;
    else if (strcmp(level, "full") == 0) e->level = ATTN_TUNE_LEVEL_FULL;
    else return bad(r, "\"%s\" must be \"quick\" or \"full\"", "level");
    const cJSON *cand = get_object(r, j, "candidates", 0, &failed);
    if (failed) return -1;
    if (cand && (get_int(r, cand, "tested", &e->tested, 0, 1 << 30, 0) ||
                 get_int(r, cand, "rejected", &e->rejected, 0, 1 << 30, 0)))
        return -1;
    const cJSON *cut = cand ? get_typed(r, cand, "cut_short", 0, cJSON_IsBool, "true or false",
                                        &failed)
                            : NULL;
    if (failed) return -1;
    e->cut_short = cut && cJSON_IsTrue(cut);
    return keep_extra(r, j, e);
}

static const char *const root_known[] = {"format", "version", "entries"};
enum { ROOT_KNOWN = 3 };

/* name's index in root_known, or ROOT_KNOWN when it is none of them */
static int root_member_index(const char *name)
{
    int k = 0;
    while (k < ROOT_KNOWN && (!name || strcmp(name, root_known[k]) != 0)) k++;
    return k;
}

/* The name of root's first member that a database written without
 * "format" (by hand: {} or {"entries": [...]}) would not have, or of one of
 * format, version and entries given twice (the next merge would keep one);
 * NULL when there is none. *twice says which. */
static const char *odd_member(const cJSON *root, int *twice)
{
    int seen[ROOT_KNOWN] = {0, 0, 0};
    const char *unknown = NULL;
    const cJSON *m;
    *twice = 0;
    cJSON_ArrayForEach(m, root)
    {
        const int k = root_member_index(m->string);
        if (k == ROOT_KNOWN) {
            if (!unknown) unknown = m->string ? m->string : "";
        } else if (seen[k]++) { /* past an unknown member too */
            *twice = 1;
            return root_known[k];
        }
    }
    return unknown;
}

/* Keeps root's members other than root_known in db->extra (see tuning.h);
 * -1 when out of memory. */
static int keep_root_extra(const cJSON *root, attn_tuning_db *db)
{
    cJSON *x = cJSON_CreateObject();
    int failed = !x;
    const cJSON *m;
    cJSON_ArrayForEach(m, root)
    {
        if (root_member_index(m->string) < ROOT_KNOWN || failed) continue;
        cJSON *copy = cJSON_Duplicate(m, 1);
        if (!copy || !cJSON_AddItemToObject(x, m->string, copy)) {
            cJSON_Delete(copy);
            failed = 1;
        }
    }
    if (!failed && x->child) {
        char *text = cJSON_PrintUnformatted(x);
        if (!text) failed = 1;
        else if (strlen(text) >= sizeof db->extra) db->extra_lost = 1;
        else memcpy(db->extra, text, strlen(text) + 1);
        free(text);
    }
    cJSON_Delete(x);
    return failed ? -1 : 0;
}

/* The offset of the first NUL in text, raw or written \u0000 (after an odd
 * run of backslashes: "\\u0000" is a backslash and "u0000"); len if none. */
static size_t nul_at(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (text[i] == 0) return i;
        if (text[i] != '\\') continue;
        size_t j = i;
        while (j < len && text[j] == '\\') j++;
        if ((j - i) % 2 == 1 && len - j >= 5 && memcmp(text + j, "u0000", 5) == 0) return j - 1;
        i = j - 1;
    }
    return len;
}

attn_status attn_tuning_db_parse(const char *text, size_t len, const char *name,
                                 attn_tuning_db *db, char *err, size_t errsize)
{
    attn_tuning_db_free(db);
    size_t first = 0;
    while (first < len && strchr(" \t\r\n", text[first])) first++;
    if (first == len) {
        snprintf(err, errsize, "%s:1: the file is empty, not a tuning database (remove it, or "
                 "write {} for an empty one)", name);
        return ATTN_ERROR_TUNING_DB;
    }
    /* cJSON reads strings as C strings: a NUL, raw or as \u0000, would cut
     * one short ("5.0\u0000x" matching driver 5.0) and a merge would
     * write back the shortened value */
    const size_t nul = nul_at(text, len);
    if (nul < len) {
        snprintf(err, errsize, "%s:%d:%zu: a NUL character (raw or \\u0000): a tuning database "
                 "holds text only", name, line_of(text, nul), column_of(text, nul));
        return ATTN_ERROR_TUNING_DB;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        const char *at = end ? end : cJSON_GetErrorPtr();
        size_t off = at && at >= text && at <= text + len ? (size_t)(at - text) : 0;
        const size_t col = column_of(text, off);
        char near[24];
        size_t n = 0;
        for (size_t i = off; i < len && n < sizeof near - 1 && text[i] != '\n'; i++)
            near[n++] = (text[i] >= 32 && text[i] < 127) ? text[i] : '?';
        near[n] = 0;
        int early = off >= len || ends_early(text, len);
        char why[64] = "";
        if (off < len && (text[off] == '[' || text[off] == '{') &&
            depth_of(text, off) >= CJSON_NESTING_LIMIT) /* the bracket cJSON refused */
            snprintf(why, sizeof why, " (nested deeper than the %d levels read)",
                     CJSON_NESTING_LIMIT);
        else if (early)
            snprintf(why, sizeof why, " (the file ends too early: truncated?)");
        snprintf(err, errsize, "%s:%d:%zu: not valid JSON near \"%s\"%s", name,
                 line_of(text, off), col, near, why);
        return ATTN_ERROR_TUNING_DB;
    }
    /* cJSON stops after the first value: text after it (two files pasted
     * together, a tail of junk) would be dropped by the next merge */
    size_t rest = end && end >= text && end <= text + len ? (size_t)(end - text) : len;
    while (rest < len && strchr(" \t\r\n", text[rest]) && text[rest]) rest++;
    if (rest < len) {
        snprintf(err, errsize, "%s:%d:%zu: text after the end of the JSON object", name,
                 line_of(text, rest), column_of(text, rest));
        cJSON_Delete(root);
        return ATTN_ERROR_TUNING_DB;
    }
    attn_status st = ATTN_ERROR_TUNING_DB;
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "version");
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(root, "entries");
    int twice = 0;
    const char *odd = cJSON_IsObject(root) ? odd_member(root, &twice) : NULL;
    if (!cJSON_IsObject(root)) {
        snprintf(err, errsize, "%s:%d: the top level must be an object {\"format\": \"%s\", "
                 "\"entries\": [...]}", name, line_of(text, first), ATTN_TUNING_DB_FORMAT);
    } else if (odd && twice) {
        snprintf(err, errsize, "%s:1: \"%s\" is given twice", name, odd);
    } else if (odd && !fmt) {
        /* another program's JSON: the next tune would replace it */
        snprintf(err, errsize, "%s:1: no \"format\": \"%s\", and a member \"%.64s\" a "
                 "tuning database does not have: not a tuning database", name,
                 ATTN_TUNING_DB_FORMAT, odd);
    } else if (fmt && (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, ATTN_TUNING_DB_FORMAT) != 0)) {
        snprintf(err, errsize, "%s:1: \"format\" is not \"%s\": not a tuning database", name,
                 ATTN_TUNING_DB_FORMAT);
    } else if (ver && (!cJSON_IsNumber(ver) || ver->valuedouble != ATTN_TUNING_DB_VERSION)) {
        snprintf(err, errsize, "%s:1: \"version\" must be %d (a newer attn wrote it?)", name,
                 ATTN_TUNING_DB_VERSION);
    } else if (entries && !cJSON_IsArray(entries)) {
        snprintf(err, errsize, "%s:%d: \"entries\" must be an array", name,
                 entry_line(text, len, -1));
    } else if (entries && cJSON_GetArraySize(entries) > ATTN_TUNING_DB_MAX_ENTRIES) {
        snprintf(err, errsize, "%s:%d: %d entries, more than the %d a tuning database may hold",
                 name, entry_line(text, len, -1), cJSON_GetArraySize(entries),
                 ATTN_TUNING_DB_MAX_ENTRIES);
    } else {
        reader r = {name, text, len, 0, err, errsize};
        st = ATTN_SUCCESS;
        const cJSON *it;
        cJSON_ArrayForEach(it, entries)
        {
            attn_tuning_entry e;
            if (read_entry(&r, it, &e) != 0) {
                st = ATTN_ERROR_TUNING_DB;
                break;
            }
            if (attn_tuning_db_append(db, &e) != 0) {
                snprintf(err, errsize, "%s: out of host memory", name);
                st = ATTN_ERROR_OUT_OF_MEMORY;
                break;
            }
            r.index++;
        }
        if (st == ATTN_SUCCESS && (attn_tuning_db_dedupe(db) != 0 ||
                                   (odd && keep_root_extra(root, db) != 0))) {
            snprintf(err, errsize, "%s: out of host memory", name);
            st = ATTN_ERROR_OUT_OF_MEMORY;
        }
    }
    cJSON_Delete(root);
    if (st != ATTN_SUCCESS) attn_tuning_db_free(db);
    return st;
}

attn_status attn_tuning_db_load(const char *path, attn_tuning_db *db, int *missing, char *err,
                                size_t errsize)
{
    attn_tuning_db_free(db);
    if (missing) *missing = 0;
    char *text;
    size_t len = 0;
    const size_t max = 64 << 20;
    attn_status st = ATTN_ERROR_TUNING_DB;
    switch (attn_read_regular_file(path, max, &text, &len)) {
    case ATTN_READ_OK: st = attn_tuning_db_parse(text, len, path, db, err, errsize); break;
    case ATTN_READ_MISSING:
        if (missing) *missing = 1;
        return ATTN_SUCCESS;
    case ATTN_READ_NOT_REGULAR: snprintf(err, errsize, "%s: not a regular file", path); break;
    case ATTN_READ_TOO_LARGE:
        snprintf(err, errsize, "%s: more than %zu bytes is too large for a tuning database", path,
                 max);
        break;
    case ATTN_READ_NO_MEMORY:
        snprintf(err, errsize, "%s: out of host memory", path);
        st = ATTN_ERROR_OUT_OF_MEMORY;
        break;
    case ATTN_READ_FAILED: snprintf(err, errsize, "%s: cannot read: %s", path, strerror(errno)); break;
    }
    free(text);
    return st;
}
