/* params.h -- the kernel parameters: one struct, the device heuristic, the
 * override syntax and the one function that turns parameters into -D
 * options. Each family's tunables (ranges, defaults, search values) are in
 * its descriptor (kernel_desc.h). Shared by the library and the tuner. */
#ifndef ATTN_PARAMS_H
#define ATTN_PARAMS_H

#include "attn.h"

typedef enum attn_family {
    ATTN_FAMILY_TILED = 0, /* GPU-style: a work-group of many work-items, cl/tiled.cl */
    ATTN_FAMILY_VECTOR = 1, /* CPU-style: one work-item per work-group, cl/vector.cl */
    ATTN_FAMILY_FLASH = 2,  /* GPU prefill with register micro-tiles, cl/flash.cl; only when
                             * forced or tuned (unmeasured on GPUs: desc_flash.c) */
    ATTN_FAMILY_MMA = 3,    /* GPU prefill on tensor-core fragments, cl/mma.cl; the
                             * default where mma_gate.c verified it, else only when
                             * forced or tuned (desc_mma.c) */
    ATTN_FAMILY_COUNT = 4
} attn_family;

typedef struct attn_params {
    int family;     /* attn_family */
    int block_rows; /* query rows per work-group (tiled) or per work-item (vector) */
    int block_keys; /* keys per K/V tile */
    int wg_size;    /* tiled: work-items per work-group */
    int local_kv;   /* tiled: 1 = stage K/V tiles in __local, 0 = read global directly */
    int vec_width;  /* vector: float vector width, 8 or 16 */
    int kv_splits;  /* decode: KV chunks run in parallel and combined; 0 = automatic */
    int tile_m;     /* flash: query rows of a work-item's micro-tile */
    int tile_n;     /* flash: keys of a work-item's micro-tile */
    int prefetch;   /* flash: 1 = the next K/V tile read into registers during this one */
    int mma_warps;  /* mma: warps (32 work-items) per work-group */
    int mma_mtiles; /* mma: m-tiles of 16 query rows per warp */
    int mma_qregs;  /* mma: 1 = Q's fragments held in registers, 0 = read at each k-step */
} attn_params;

/* Device facts the heuristic and the legality check need. */
typedef struct attn_device_limits {
    cl_device_type type;
    cl_ulong local_mem;
    size_t max_wg;
    cl_uint compute_units;
    int mma; /* the mma family may be the default here (mma_gate.c's verdict; 0 unless asked) */
    unsigned float_width; /* native float vector width; 0 = unknown (the static defaults) */
} attn_device_limits;

/* A family's entry points (kernel_desc.h). */
enum { ATTN_ENTRY_PREFILL = 0, ATTN_ENTRY_DECODE = 1, ATTN_ENTRY_COUNT = 2 };

/* Private (register) bytes per work-item the GPU heuristic allows: NVIDIA
 * gives a thread at most 255 32-bit registers (1020 bytes) and AMD's RDNA
 * and CDNA at most 256 VGPRs a lane (1 KiB); private arrays beyond the
 * register file spill to off-chip memory, many times slower. The estimate
 * (attn_params_private_bytes) counts the arrays alone, so one over this
 * spills for sure. Not applied to CPUs, whose private arrays live in cache. */
#define ATTN_PRIVATE_BUDGET_GPU 1024

/* The family's defaults (other families' fields at theirs). */
attn_params attn_params_defaults(int family);

/* Shrinks *pr, in the order the family's entry point gives, until it is
 * legal for dev and p and, on a GPU, its private state is within
 * ATTN_PRIVATE_BUDGET_GPU (or nothing is left to shrink). Over the budget
 * alone, it shrinks the first field whose halving lowers the estimate. */
void attn_params_fit(int entry, attn_params *pr, const attn_device_limits *dev,
                     const attn_problem *p);

/* f32 rows on the mma family: up to ATTN_MMA_F32_PLAIN_KEYS keys O is
 * summed plainly (cl/mma.cl); with equal weights (the worst case) its drift
 * grows with the keys: 4e-5 relative at 4096, 1.6e-4 at 16384 (the
 * emulation, test_long_context's table), against f32's 1e-4. Longer rows
 * are built with MMA_FOLD (O moved into a second accumulator every 2048
 * keys), up to ATTN_MMA_F32_MAX_KEYS; longer still keep the device's own
 * family, whose sums are compensated. */
#define ATTN_MMA_F32_PLAIN_KEYS 4096
#define ATTN_MMA_F32_MAX_KEYS 1048576

/* The fewest splits automatic decode splits (kv_splits 0) cut span keys
 * into under pr: for mma's f32, chunks of at most ATTN_MMA_F32_PLAIN_KEYS
 * keys, so that its decode kernel is built without MMA_FOLD, whose second
 * accumulator spilled 300-400 bytes a lane at D 128 (tools/check-ptx.sh,
 * sm_90); at most 256 splits, ATTN_MMA_F32_MAX_KEYS / 4096. Else 1. */
int attn_params_decode_least_splits(const attn_params *pr, const attn_problem *p, int span);

/* Whether p is a problem the mma family can run (desc_mma.c's refusals:
 * a head dim that is a multiple of 16 up to 256; f32 up to 128 and
 * ATTN_MMA_F32_MAX_KEYS keys). */
int attn_params_mma_suits(const attn_problem *p);

/* Built-in defaults for this device type and head dim (the mma family's
 * where dev->mma and the problem suits it). */
attn_params attn_params_heuristic(const attn_device_limits *dev, const attn_problem *p);

/* What attn_params_parse returns on failure: text no attn writes (not
 * name=value, a name twice, a value that is not an integer), or text of the
 * right form that this build does not know (a tunable or family, or a value
 * out of its range: a newer attn may have written it). */
enum { ATTN_PARAMS_SYNTAX = -1, ATTN_PARAMS_UNKNOWN = -2 };

/* Parses "family=vector,rows=8,keys=32,..." over *params (fields not named
 * keep their value); each value must be in the range of the family in
 * effect (named in text, else params->family; any family when that is not
 * one). Returns 0 on success, else ATTN_PARAMS_SYNTAX or
 * ATTN_PARAMS_UNKNOWN with why in err. */
int attn_params_parse(const char *text, attn_params *params, char *err, size_t errsize);
/* The same, with the names it left out (another family's tunables, checked
 * but not applied: "rows" for mma) in left_out, comma-separated ("" when
 * none). */
int attn_params_parse_noting(const char *text, attn_params *params, char *left_out,
                             size_t left_size, char *err, size_t errsize);

/* Whether params are legal for this device and problem (ranges, divisibility,
 * local memory, work-group size); why not in err. */
int attn_params_legal(const attn_params *params, const attn_device_limits *dev,
                      const attn_problem *p, char *err, size_t errsize);

/* "family=vector,rows=8,...": the family's tunables, in descriptor order */
void attn_params_format(const attn_params *params, char *buf, size_t size);

/* The -D option string for entry point `entry` (ATTN_ENTRY_*) of this
 * family: for decode, p is the problem as planned (kv_len: the cache's
 * capacity). */
void attn_params_options(const attn_params *params, const attn_problem *p, int entry, char *buf,
                         size_t size);

/* The cl/ files an entry point's program joins, in order; returns how
 * many. The tuner hashes the same list to spot stale entries. */
int attn_family_sources(int family, int entry, const char *const **names);
/* The kernel of an entry point ("attn_fwd_tiled"), or NULL when the family
 * has none for it (flash has no decode kernel). */
const char *attn_family_kernel(int family, int entry);

/* The family called name ("tiled", "vector", "flash", "mma"), or -1. */
int attn_family_named(const char *name);

/* Query rows per work-group of a prefill launch: the field block_rows, or
 * what the family derives from its tunables (mma: 16 x m-tiles x warps). */
int attn_params_block_rows(const attn_params *pr);

/* Why family cannot run problem p at all (its storage type, head dim), or
 * NULL when it can. The planner replaces a forced or tuned plan of such a
 * family by the device's heuristic plan, as for a missing entry point. */
const char *attn_family_refuses(int family, const attn_problem *p);

/* Bytes of __local memory the family's kernels declare for p (0 for none). */
size_t attn_params_local_bytes(const attn_params *pr, const attn_problem *p);
/* Bytes of private (register) state one work-item of entry point `entry`
 * (ATTN_ENTRY_*) holds for p: the descriptor's estimate (kernel_desc.h). */
size_t attn_params_private_bytes(int entry, const attn_params *pr, const attn_problem *p);

/* Work-items per work-group of the family's kernels (1 for one work-item
 * per work-group); the launch's local size. */
size_t attn_params_work_group(const attn_params *pr);

/* Padded head dim the vector family works in (a multiple of vec_width). */
int attn_params_padded_dim(const attn_params *params, int head_dim);

#endif /* ATTN_PARAMS_H */
