/* internal.h -- what the files of host/ share: the context's layout, the
 * error-recording macros and logging. Never installed, never included by
 * applications; tools include it only where they must (tuning). */
#ifndef ATTN_INTERNAL_H
#define ATTN_INTERNAL_H

#include "attn.h"
#include "params.h"

#include <pthread.h>
#include <stdarg.h>
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
/* The materialized path's buffers: scores, then f32 copies of Q, K, V, O. */
enum { ATTN_MAT_SCORES, ATTN_MAT_Q, ATTN_MAT_K, ATTN_MAT_V, ATTN_MAT_O, ATTN_MAT_BUFFERS };

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
    cl_ulong local_mem;
    size_t max_wg;
    cl_ulong max_alloc;
    char platform_name[256], vendor[256], device_name[256], driver[256];

    attn_program_entry *programs;
    /* how programs were obtained (tests and the tuner read these) */
    unsigned programs_built, programs_from_disk, programs_from_memory;
    attn_scratch kt, vp;   /* the vector family's packed K and V */
    int out_of_order;      /* the queue may reorder: each forward starts with a barrier */
    attn_scratch mat[ATTN_MAT_BUFFERS]; /* the materialized path's buffers (materialized.c) */
    struct attn_tuning_state *tuning; /* the tuning database as read (tuning_lookup.c), or NULL */

    /* configuration (config.c): the environment's at creation, then the
     * attn_context_set_* calls'; read under lock only */
    char *override;             /* parameter override text (malloc'd), or NULL */
    const char *override_from;  /* "ATTN_PARAMS" or "attn_context_set_params" */
    char *tuning_user_path;     /* tuning databases (malloc'd); NULL: none */
    char *tuning_system_path;
    char *kernel_dir;           /* $ATTN_KERNEL_DIR (malloc'd); NULL: the embedded sources */
    char *cache_dir;            /* the program-binary folder (malloc'd); NULL: no disk cache */
    char *softmax_wg;           /* $ATTN_SOFTMAX_WG (malloc'd), checked by materialized.c; NULL: the device's default */
    struct attn_plan_cache *plans; /* the planner's results by shape class (plan.c) */

    pthread_mutex_t lock;
    char error[ATTN_ERROR_MAX];
    const char *call; /* the public call holding the lock (attn_call_begin), or NULL */
};

/* ---- errors (context.c) ----
 * Every message begins with the name of the public function that failed.
 * A public call on a context starts with attn_call_begin(ctx, __func__)
 * (takes ctx's lock, clears ctx's last error, names the call) and ends with
 * attn_call_end. A call without a context (creation, the reference, the
 * conversions) starts with attn_thread_call_begin(__func__): its messages
 * go to the calling thread's last error (attn_last_error(NULL)); a NULL
 * handle is reported there too, by attn_fail_null. */
void attn_call_begin(attn_context *ctx, const char *fn);
void attn_call_end(attn_context *ctx);
void attn_thread_call_begin(const char *fn);
/* "fn: what is NULL" as the thread's last error; ATTN_ERROR_INVALID_ARGUMENT. */
attn_status attn_fail_null(const char *fn, const char *what);
/* Records a formatted message as ctx's last error (ctx NULL: the thread's),
 * after the name of the call in progress unless it already begins with it,
 * and logs it at debug level with file and line. Returns s. */
attn_status attn_fail_at(attn_context *ctx, attn_status s, const char *file, int line,
                         const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
#define ATTN_FAIL(ctx, s, ...) attn_fail_at((ctx), (s), __FILE__, __LINE__, __VA_ARGS__)
/* zstd-style: if cond holds, record the message and return status. */
#define ATTN_CHECK(ctx, cond, s, ...)                      \
    do {                                                   \
        if (cond) return ATTN_FAIL((ctx), (s), __VA_ARGS__); \
    } while (0)
/* An OpenCL call's error code as a status, naming the call. */
attn_status attn_fail_cl(attn_context *ctx, cl_int err, const char *call);
const char *attn_cl_error_name(cl_int err);

/* ---- logging (log.c): ATTN_LOG=error|warn|info|debug, default warn, or
 * attn_set_log_callback; attn_log_level is public (attn.h) ---- */
void attn_log(attn_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int attn_log_enabled(attn_log_level level);

/* ---- hashing (hash.c): FNV-1a 64 ---- */
uint64_t attn_hash_bytes(uint64_t h, const void *data, size_t n);
uint64_t attn_hash_str(uint64_t h, const char *s);
#define ATTN_HASH_INIT 0xcbf29ce484222325ull

/* ---- kernel sources (kernel_sources.c, embedded or ctx->kernel_dir) ---- */
/* Returns a malloc'd copy of cl/<name>, or NULL with ctx's error set. */
char *attn_kernel_source(attn_context *ctx, const char *name);

/* ---- programs (program.c, disk_cache.c) ---- */
/* Builds, or fetches from the per-context or on-disk cache, the program made
 * of the named sources (concatenated, common.cl first) with options. */
attn_status attn_program_get(attn_context *ctx, const char *const *sources, int nsources,
                             const char *options, cl_program *out);
/* Disk cache in the folder dir (a context's cache_dir; NULL: none): key
 * text -> binary. Any problem reads as a miss, logged once. */
int attn_disk_cache_load(const char *dir, const char *key_text, uint64_t key, unsigned char **bin,
                         size_t *len);
void attn_disk_cache_store(const char *dir, const char *key_text, uint64_t key,
                           const unsigned char *bin, size_t len);
/* The environment's cache folder ($ATTN_CACHE_DIR, $XDG_CACHE_HOME/attn,
 * ~/.cache/attn; config.c, read at context creation) into buf; returns 0
 * when none can be named. */
int attn_disk_cache_dir(char *buf, size_t size);
/* The XDG rule for a default path (config.c): $var, else $xdg/under_xdg,
 * else $HOME/under_home, into buf; returns 0 when none is set or fits. */
int attn_env_path(char *buf, size_t size, const char *var, const char *xdg,
                  const char *under_xdg, const char *under_home);
#define ATTN_CACHE_FORMAT_VERSION 1

/* ---- scratch buffers (context.c) ---- */
attn_status attn_scratch_reserve(attn_context *ctx, attn_scratch *s, size_t bytes);

/* ---- validation (validate.c) ---- */
/* Checks every argument of attn_forward; on failure sets ctx's error naming
 * the argument and returns ATTN_ERROR_INVALID_ARGUMENT. */
attn_status attn_validate_forward(attn_context *ctx, const attn_problem *p,
                                  const attn_tensor *q, const attn_tensor *k,
                                  const attn_tensor *v, const attn_tensor *out,
                                  const attn_lengths *lengths, cl_mem lse);
/* The problem alone (shapes, dtype, scale, lengths). */
attn_status attn_validate_problem(attn_context *ctx, const attn_problem *p,
                                  const attn_lengths *lengths);

/* One tensor of shape [batch, heads, seq, dim] with elements of elem bytes:
 * a valid cl_mem of ctx's context, strides that do not overlap, large
 * enough; the highest element index it reaches in *hi. */
attn_status attn_validate_tensor(attn_context *ctx, const attn_tensor *t, const char *name,
                                 int batch, int heads, int seq, int dim, size_t elem, size_t *hi);

/* attn_forward's work, with ctx's lock held by the caller (the layer runs
 * it inside its own call). */
attn_status attn_forward_locked(attn_context *ctx, const attn_problem *p, const attn_tensor *q,
                                const attn_tensor *k, const attn_tensor *v,
                                const attn_tensor *out, const attn_lengths *lengths, cl_mem lse,
                                cl_event *done);

/* A buffer attn writes (an output, the LSE) must not have been created
 * CL_MEM_READ_ONLY: a kernel writing one is undefined behaviour. */
attn_status attn_validate_writable(attn_context *ctx, cl_mem m, const char *name);

/* ---- check mode (check.c) ---- */
/* Host copies of a forward's inputs, contiguous BHSD float. */
typedef struct attn_check_inputs attn_check_inputs;
/* Reads q, k, v back (blocking) before the kernels run: out may be q. */
attn_status attn_check_read_inputs(attn_context *ctx, const attn_problem *p,
                                   const attn_tensor *q, const attn_tensor *k,
                                   const attn_tensor *v, attn_check_inputs **out);
/* Waits for the result, recomputes it with the reference and compares at
 * the dtype's tolerance: ATTN_ERROR_MISMATCH naming the worst element. */
attn_status attn_check_compare(attn_context *ctx, const attn_problem *p,
                               const attn_check_inputs *in, const attn_tensor *out,
                               const attn_lengths *lengths, cl_mem lse);
void attn_check_free(attn_check_inputs *in);
/* Reads a strided tensor of p->dtype back into contiguous [B,H,S,D] floats. */
attn_status attn_tensor_download(attn_context *ctx, const attn_tensor *t, attn_dtype dtype,
                                 int batch, int heads, int seq, int dim, float *dst);

/* ---- configuration (config.c) and the planner (plan.c) ---- */
/* Reads ATTN_PARAMS, ATTN_CHECK, ATTN_TUNING_DB and ATTN_SYSTEM_TUNING_DB
 * into a new context: the defaults the setters replace. 0, or -1 when out
 * of memory. */
int attn_config_init(attn_context *ctx);
void attn_config_release(attn_context *ctx);
/* The parameters for entry point `entry` (ATTN_ENTRY_*) of p: the device
 * heuristic, then the tuning database, then the override; cached per shape
 * class (the decode heuristic also by q_len), so repeated calls do no
 * parsing and no database search. *source is "heuristic", "tuned",
 * "stale" or "override". Caller holds ctx->lock. */
attn_status attn_plan(attn_context *ctx, int entry, const attn_problem *p, attn_params *out,
                      const char **source);
/* Forgets the cached plans (after a configuration change). */
void attn_plan_clear(attn_context *ctx);
/* The device facts the heuristic and the legality check read. */
attn_device_limits attn_context_limits(const attn_context *ctx);

/* ---- misc ---- */
float attn_effective_scale(const attn_problem *p);

/* ---- the CLBlast paths: materialized attention and the layer (issue 5) ---- */
/* A kernel from the program common.cl + file built for storage type dtype
 * (launch.c); the caller releases it. */
attn_status attn_kernel_get(attn_context *ctx, const char *file, attn_dtype dtype,
                            const char *name, cl_kernel *out);
typedef struct attn_karg { size_t size; const void *value; } attn_karg;
#define ATTN_KARG(x) {sizeof(x), &(x)}
/* Sets n arguments and enqueues the kernel on ctx's queue (no event). */
attn_status attn_kernel_run(attn_context *ctx, cl_kernel k, const attn_karg *args, int n,
                            cl_uint dims, const size_t *global, const size_t *local);
/* On an out-of-order queue, a barrier between dependent steps; else nothing. */
attn_status attn_queue_order(attn_context *ctx);
/* Device conversions (device_convert.c): n elements of storage type t at
 * element offset off to f32 and back; a strided tensor into contiguous f32. */
attn_status attn_device_to_f32(attn_context *ctx, attn_dtype t, cl_mem src, size_t off,
                               cl_mem dst, size_t n);
attn_status attn_device_from_f32(attn_context *ctx, attn_dtype t, cl_mem src, cl_mem dst,
                                 size_t off, size_t n);
attn_status attn_device_gather_f32(attn_context *ctx, attn_dtype t, const attn_tensor *src,
                                   int batch, int heads, int seq, int dim, cl_mem dst);
/* ATTN_SUCCESS in a build with CLBlast; otherwise ATTN_ERROR_UNSUPPORTED
 * saying the build has none (clblast.c). The CLBlast paths ask it after
 * validating their arguments, before any work. */
attn_status attn_clblast_required(attn_context *ctx);
/* CLBlast indexes buffers with int: the largest element index it can reach. */
#define ATTN_CLBLAST_MAX_INDEX 0x7fffffff
/* f32 GEMMs through CLBlast, row-major (clblast.c): C[m,n] = A[m,k] op(B),
 * op(B) = B[k,n] or, when trans_b, B[n,k]^T. Failures name `what`. */
attn_status attn_sgemm(attn_context *ctx, int trans_b, size_t m, size_t n, size_t k, cl_mem a,
                       size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb, cl_mem c,
                       size_t c_off, size_t ldc, const char *what);
/* The same for every query head h < hq at once: A and C advance by a_hs and
 * c_hs per query head, B by b_hs per KV head h / (hq / hkv); one batched call
 * with per-head offsets, K/V broadcast by offsets (never copied). */
attn_status attn_sgemm_heads(attn_context *ctx, int trans_b, size_t m, size_t n, size_t k,
                             int hq, int hkv, cl_mem a, size_t a_off, size_t lda, size_t a_hs,
                             cl_mem b, size_t b_off, size_t ldb, size_t b_hs, cl_mem c,
                             size_t c_off, size_t ldc, size_t c_hs, const char *what);

#endif /* ATTN_INTERNAL_H */
