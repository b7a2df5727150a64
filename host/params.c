/* params.c -- the one table of kernel tunables, the device heuristic, the
 * ATTN_PARAMS override and the -D option string. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every tunable of cl/tiled.cl and cl/vector.cl, with its range. The
 * kernels carry the same names as #ifndef defaults. */
const attn_tunable attn_tunables[] = {
    {"family", "(source file)", offsetof(attn_params, family), 0, 1, 0,
     "kernel family: 0 tiled (GPU-style, cl/tiled.cl), 1 vector (CPU-style, cl/vector.cl)"},
    {"rows", "BLOCK_ROWS", offsetof(attn_params, block_rows), 1, 64, 0,
     "query rows per work-group (tiled) or per work-item (vector, at most 16)"},
    {"keys", "BLOCK_KEYS", offsetof(attn_params, block_keys), 4, 128, 1,
     "keys per K/V tile; vector: a multiple of vec"},
    {"wg", "WG_SIZE", offsetof(attn_params, wg_size), 1, 1024, 1,
     "tiled: work-items per work-group, a multiple of rows"},
    {"local_kv", "LOCAL_KV", offsetof(attn_params, local_kv), 0, 1, 0,
     "tiled: 1 stages K/V tiles in __local, 0 reads them from global memory"},
    {"vec", "VEC_WIDTH", offsetof(attn_params, vec_width), 4, 16, 1,
     "vector: float vector width (4, 8 or 16)"},
    {"splits", "(runtime argument)", offsetof(attn_params, kv_splits), 0, 256, 0,
     "decode: chunks each sequence's keys are split into, run in parallel and combined by "
     "their LSEs (flash-decoding); 0 = chosen from compute units and prefix length"},
};
const int attn_tunable_count = (int)(sizeof attn_tunables / sizeof attn_tunables[0]);

static int *field(attn_params *p, const attn_tunable *t) { return (int *)((char *)p + t->offset); }
static int get(const attn_params *p, const attn_tunable *t)
{
    return *(const int *)((const char *)p + t->offset);
}

/* Bytes of __local memory the tiled kernel declares (mirrors cl/tiled.cl). */
static size_t tiled_local_bytes(const attn_params *pr, int head_dim)
{
    size_t d4 = (size_t)((head_dim + 3) / 4) * 4 + 4; /* padded row stride, floats */
    size_t bytes = (size_t)pr->block_rows * d4 * 4;               /* Q */
    bytes += (size_t)pr->block_rows * pr->block_keys * 4;          /* scores */
    bytes += (size_t)pr->block_rows * 4 * 3;                       /* m, l, alpha */
    if (pr->local_kv) bytes += 2 * (size_t)pr->block_keys * d4 * 4; /* K, V tiles */
    return bytes;
}

int attn_params_legal(const attn_params *pr, const attn_device_limits *dev,
                      const attn_problem *p, char *err, size_t errsize)
{
    for (int i = 0; i < attn_tunable_count; i++) {
        const attn_tunable *t = &attn_tunables[i];
        int v = get(pr, t);
        if (v < t->min || v > t->max || (t->pow2 && (v & (v - 1)))) {
            snprintf(err, errsize, "%s=%d is outside %d..%d%s", t->name, v, t->min, t->max,
                     t->pow2 ? " or not a power of two" : "");
            return 0;
        }
    }
    if (pr->family == ATTN_FAMILY_VECTOR) {
        if (pr->block_rows > 16) {
            snprintf(err, errsize, "rows=%d: the vector family takes at most 16", pr->block_rows);
            return 0;
        }
        if (pr->block_keys % pr->vec_width) {
            snprintf(err, errsize, "keys=%d is not a multiple of vec=%d", pr->block_keys,
                     pr->vec_width);
            return 0;
        }
        return 1;
    }
    if (pr->wg_size % pr->block_rows) {
        snprintf(err, errsize, "wg=%d is not a multiple of rows=%d", pr->wg_size, pr->block_rows);
        return 0;
    }
    if (dev && (size_t)pr->wg_size > dev->max_wg) {
        snprintf(err, errsize, "wg=%d exceeds the device's max work-group size %zu", pr->wg_size,
                 dev->max_wg);
        return 0;
    }
    size_t local = tiled_local_bytes(pr, p->head_dim);
    if (dev && local > dev->local_mem) {
        snprintf(err, errsize, "needs %zu bytes of local memory, the device has %llu", local,
                 (unsigned long long)dev->local_mem);
        return 0;
    }
    return 1;
}

attn_params attn_params_heuristic(const attn_device_limits *dev, const attn_problem *p)
{
    attn_params pr = {ATTN_FAMILY_TILED, 16, 32, 128, 1, 16, 0};
    if (dev->type & CL_DEVICE_TYPE_CPU) {
        /* measured on PoCL (DESIGN.md): 8 rows x 32 keys x float16 */
        pr.family = ATTN_FAMILY_VECTOR;
        pr.block_rows = 8;
        pr.block_keys = 32;
        return pr;
    }
    /* GPU-style starting points (llama.cpp's Vulkan table): 128 work-items,
     * 16 rows, 32 keys; 64 keys when D is not a multiple of 16. */
    if (p->head_dim % 16) pr.block_keys = 64;
    if (p->head_dim > 128) pr.block_rows = 8;
    while ((size_t)pr.wg_size > dev->max_wg && pr.wg_size > pr.block_rows) pr.wg_size /= 2;
    char err[256];
    /* shrink until it fits: first the key tile, then direct K/V reads, then rows */
    while (!attn_params_legal(&pr, dev, p, err, sizeof err)) {
        if (pr.block_keys > 16) pr.block_keys /= 2;
        else if (pr.local_kv) pr.local_kv = 0;
        else if (pr.block_rows > 1) pr.block_rows /= 2;
        else break;
        if (pr.wg_size % pr.block_rows) pr.wg_size = pr.block_rows;
        while ((size_t)pr.wg_size > dev->max_wg && pr.wg_size > pr.block_rows) pr.wg_size /= 2;
    }
    return pr;
}

int attn_params_parse(const char *text, attn_params *params, char *err, size_t errsize)
{
    char buf[512];
    if (snprintf(buf, sizeof buf, "%s", text) >= (int)sizeof buf) {
        snprintf(err, errsize, "too long");
        return -1;
    }
    attn_params out = *params;
    char *save = NULL;
    for (char *item = strtok_r(buf, ", ", &save); item; item = strtok_r(NULL, ", ", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) {
            snprintf(err, errsize, "\"%s\" is not name=value", item);
            return -1;
        }
        *eq = 0;
        const char *value = eq + 1;
        const attn_tunable *t = NULL;
        for (int i = 0; i < attn_tunable_count; i++)
            if (strcmp(attn_tunables[i].name, item) == 0) t = &attn_tunables[i];
        if (!t) {
            snprintf(err, errsize, "unknown tunable \"%s\"", item);
            return -1;
        }
        long v;
        char *end;
        if (t->offset == offsetof(attn_params, family) && strcmp(value, "tiled") == 0) v = 0;
        else if (t->offset == offsetof(attn_params, family) && strcmp(value, "vector") == 0) v = 1;
        else {
            v = strtol(value, &end, 10);
            if (end == value || *end || v < t->min || v > t->max) {
                snprintf(err, errsize, "%s=%s: expected an integer in %d..%d", item, value, t->min,
                         t->max);
                return -1;
            }
        }
        *field(&out, t) = (int)v;
    }
    *params = out;
    return 0;
}

void attn_params_format(const attn_params *pr, char *buf, size_t size)
{
    if (pr->family == ATTN_FAMILY_VECTOR)
        snprintf(buf, size, "family=vector,rows=%d,keys=%d,vec=%d", pr->block_rows,
                 pr->block_keys, pr->vec_width);
    else
        snprintf(buf, size, "family=tiled,rows=%d,keys=%d,wg=%d,local_kv=%d", pr->block_rows,
                 pr->block_keys, pr->wg_size, pr->local_kv);
}

int attn_family_sources(int family, const char *names[ATTN_FAMILY_MAX_SOURCES])
{
    names[0] = "common.cl";
    if (family == ATTN_FAMILY_VECTOR) {
        names[1] = "vector_helpers.cl";
        names[2] = "vector_core.cl";
        names[3] = "vector.cl";
        return 4;
    }
    names[1] = "tiled_core.cl";
    names[2] = "tiled.cl";
    return 3;
}

int attn_params_padded_dim(const attn_params *pr, int head_dim)
{
    return (head_dim + pr->vec_width - 1) / pr->vec_width * pr->vec_width;
}

void attn_params_options(const attn_params *pr, const attn_problem *p, char *buf, size_t size)
{
    if (pr->family == ATTN_FAMILY_VECTOR)
        snprintf(buf, size, "-cl-std=CL1.2 -DHEAD_DIM=%d -DSTORAGE=%d -DBLOCK_ROWS=%d "
                 "-DBLOCK_KEYS=%d -DVEC_WIDTH=%d -DHEAD_DIM_PAD=%d", p->head_dim, (int)p->dtype,
                 pr->block_rows, pr->block_keys, pr->vec_width,
                 attn_params_padded_dim(pr, p->head_dim));
    else
        snprintf(buf, size, "-cl-std=CL1.2 -DHEAD_DIM=%d -DSTORAGE=%d -DBLOCK_ROWS=%d "
                 "-DBLOCK_KEYS=%d -DWG_SIZE=%d -DLOCAL_KV=%d", p->head_dim, (int)p->dtype,
                 pr->block_rows, pr->block_keys, pr->wg_size, pr->local_kv);
}
