/* context.h -- the layout of attn_context (the device, its queue, the
 * device facts read once, the program cache, scratch buffers, the
 * configuration and the plan cache) and the calls that manage its parts.
 * Internal: never installed. */
#ifndef ATTN_CORE_CONTEXT_H
#define ATTN_CORE_CONTEXT_H

#include "attn.h"
#include "kernels/params.h"

#include <pthread.h>
#include <stdint.h>

#define ATTN_ERROR_MAX 1024

/* One built program, remembered per context by the hash of its key. */
typedef struct attn_program_entry {
    uint64_t key;
    /* the source names and options it was asked for, when the sources were
     * the embedded ones (they never change): found again by this text
     * without joining and hashing the sources; NULL otherwise */
    char *request;
    cl_program program;
    struct attn_program_entry *next;
} attn_program_entry;

/* A device buffer the context owns and grows on demand (scratch space for
 * transposed K/V, per-call lengths). */
typedef struct attn_scratch {
    cl_mem mem;
    size_t bytes;
} attn_scratch;
/* The CLBlast paths' buffers: the materialized path's scores and f32
 * copies of Q, K, V, O, and the temporary every GEMM of the context
 * (layers' too) hands CLBlast (clblast.c's gemm_with_temp). */
enum { ATTN_MAT_SCORES, ATTN_MAT_Q, ATTN_MAT_K, ATTN_MAT_V, ATTN_MAT_O, ATTN_MAT_GEMM_TEMP, ATTN_MAT_BUFFERS };

struct attn_context {
    cl_platform_id platform;
    cl_device_id device;
    cl_context cl_ctx;
    cl_command_queue queue;
    int profiling; /* queue has CL_QUEUE_PROFILING_ENABLE */
    int check;     /* check mode: verify every forward against the reference */

    /* device facts, read once */
    cl_device_type device_type;
    cl_uint compute_units;
    cl_uint float_width; /* CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT: 16 with AVX-512, 8 with AVX2 */
    cl_ulong local_mem;
    size_t max_wg;
    cl_ulong max_alloc;
    char platform_name[256], vendor[256], device_name[256], driver[256];
    int nv_cc; /* NVIDIA compute capability x 10 (90: 9.0), 0 for other devices */
    /* the mma family's gate (mma_gate.c): 0 not decided, 1 usable by
     * default, -1 not, with why; mma_f32_state the same for f32 storage
     * (3xTF32), decided after the 16-bit types; mma_assume: a test's device
     * taken as capable, with the emulation (attn_mma_assume) */
    int mma_state, mma_f32_state, mma_assume;
    char mma_why[256], mma_f32_why[256];
    /* the same per head dim other than 64 (16-bit, f32; D / 16 - 1):
     * mma_gate.c's usable_dim */
    signed char mma_dim_state[2][16];

    attn_program_entry *programs;
    /* how programs were obtained (tests and the tuner read these) */
    unsigned programs_built, programs_from_disk, programs_from_memory;
    attn_scratch kt, vp;   /* the vector family's packed K and V */
    attn_scratch mask_tiles; /* prefill: an additive mask's per-tile summary (variants.c) */
    struct attn_mask_cache *mask_cache; /* summaries of masks with a version (mask_cache.c) */
    int clblast_used;      /* a CLBlast call was made through this context (clblast.c) */
    int out_of_order;      /* the queue may reorder: each forward starts with a barrier */
    attn_scratch mat[ATTN_MAT_BUFFERS]; /* the materialized path's buffers (materialized.c) */
    /* decode's split-KV partial results, grown on demand (decode.c): O
     * [row][split][dim_pad] normalised, and log2-domain LSE [row][split] */
    attn_scratch part_o, part_lse;
    struct attn_tuning_state *tuning; /* the tuning database as read (tuning_lookup.c), or NULL */

    /* configuration (config.c): the environment's at creation, then the
     * attn_context_set_* calls'; read under lock only */
    char *override;             /* parameter override text (malloc'd), or NULL */
    const char *override_from;  /* "ATTN_PARAMS" or "attn_context_set_params" */
    char override_noted[528];   /* "text|family|names" last warned as left out (plan.c) */
    char *tuning_user_path;     /* tuning databases (malloc'd); NULL: none */
    char *tuning_system_path;
    char *kernel_dir;           /* the kernel-source folder (malloc'd); NULL: embedded sources */
    char *cache_dir;            /* the program-binary folder (malloc'd); NULL: no disk cache */
    uint64_t cache_max_bytes;   /* $ATTN_CACHE_MAX_MB: the folder's bound; 0 none */
    char *softmax_wg;           /* $ATTN_SOFTMAX_WG (malloc'd), checked by materialized.c; NULL: the device's default */
    struct attn_plan_cache *plans; /* the planner's results by shape class (plan.c) */

    pthread_mutex_t lock;
    char error[ATTN_ERROR_MAX];
    const char *call; /* the public call holding the lock (attn_call_begin), or NULL */
};

/* ---- scratch buffers (context.c) ---- */
attn_status attn_scratch_reserve(attn_context *ctx, attn_scratch *s, size_t bytes);
/* Every scratch buffer of ctx (workspace.c), into list (room for max:
 * ATTN_SCRATCH_MAX holds them all); returns how many. */
enum { ATTN_SCRATCH_MAX = 16 };
int attn_scratch_all(attn_context *ctx, attn_scratch **list, int max);

/* The device facts the heuristic and the legality check read. */
/* (context.c) */
attn_device_limits attn_context_limits(const attn_context *ctx);
/* Whether the device's CL_DEVICE_EXTENSIONS names this extension. */
int attn_device_has_extension(cl_device_id device, const char *name);

#endif /* ATTN_CORE_CONTEXT_H */
