/* params.h -- the kernel tunables: one struct, one table listing every
 * tunable with its range and meaning, the device heuristic, the ATTN_PARAMS
 * override and the one function that turns parameters into -D options.
 * Shared by the library and the tuner. */
#ifndef ATTN_PARAMS_H
#define ATTN_PARAMS_H

#include "attn.h"

typedef enum attn_family {
    ATTN_FAMILY_TILED = 0, /* GPU-style: a work-group of many work-items, cl/tiled.cl */
    ATTN_FAMILY_VECTOR = 1 /* CPU-style: one work-item per work-group, cl/vector.cl */
} attn_family;

typedef struct attn_params {
    int family;     /* attn_family */
    int block_rows; /* query rows per work-group (tiled) or per work-item (vector) */
    int block_keys; /* keys per K/V tile */
    int wg_size;    /* tiled: work-items per work-group */
    int local_kv;   /* tiled: 1 = stage K/V tiles in __local, 0 = read global directly */
    int vec_width;  /* vector: float vector width, 8 or 16 */
    int kv_splits;  /* decode: KV chunks run in parallel and combined; 0 = automatic */
} attn_params;

/* One row of the tunables table. */
typedef struct attn_tunable {
    const char *name;  /* as written in ATTN_PARAMS and plan strings */
    const char *macro; /* the -D macro in cl/ */
    size_t offset;     /* offsetof(attn_params, field) */
    int min, max;      /* inclusive range */
    int pow2;          /* must be a power of two */
    const char *meaning;
} attn_tunable;

extern const attn_tunable attn_tunables[];
extern const int attn_tunable_count;

/* Device facts the heuristic and the legality check need. */
typedef struct attn_device_limits {
    cl_device_type type;
    cl_ulong local_mem;
    size_t max_wg;
    cl_uint compute_units;
} attn_device_limits;

/* Built-in defaults for this device type and head dim. */
attn_params attn_params_heuristic(const attn_device_limits *dev, const attn_problem *p);

/* Parses "family=vector,rows=8,keys=32,..." over *params (fields not named
 * keep their value). Returns 0 on success, else -1 with why in err. */
int attn_params_parse(const char *text, attn_params *params, char *err, size_t errsize);

/* Whether params are legal for this device and problem (ranges, divisibility,
 * local memory, work-group size); why not in err. */
int attn_params_legal(const attn_params *params, const attn_device_limits *dev,
                      const attn_problem *p, char *err, size_t errsize);

/* "family=vector,rows=8,..." */
void attn_params_format(const attn_params *params, char *buf, size_t size);

/* The -D option string for the forward kernel of this family. */
void attn_params_options(const attn_params *params, const attn_problem *p, char *buf,
                         size_t size);

/* The cl/ files a family's forward program joins, in order; returns how
 * many (at most ATTN_FAMILY_MAX_SOURCES). The tuner hashes the same list to
 * spot stale entries. */
#define ATTN_FAMILY_MAX_SOURCES 4
int attn_family_sources(int family, const char *names[ATTN_FAMILY_MAX_SOURCES]);

/* Padded head dim the vector family works in (a multiple of vec_width). */
int attn_params_padded_dim(const attn_params *params, int head_dim);

#endif /* ATTN_PARAMS_H */
