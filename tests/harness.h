/* harness.h -- what every CUnit suite of attn shares: running the suites, a
 * seeded RNG, the one OpenCL context, tolerance comparison that prints the
 * seed, and moving BHSD host arrays into and out of strided device tensors.
 *
 * A test file is one executable:
 *
 *     static const harness_test tests[] = {
 *         HARNESS_TEST(test_something),
 *         HARNESS_END
 *     };
 *     static void register_tests(void) { harness_add_suite("reference", tests); }
 *     int main(void) { return harness_run("test_reference", register_tests); }
 *
 * Environment: ATTN_TEST_DEVICE (selector for harness_context, default the
 * library's own choice), ATTN_TEST_SEED (overrides harness_seed's default),
 * ATTN_TEST_FILTER (runs only tests whose name contains it, or one of its
 * comma-separated strings; a program none of whose tests match fails),
 * ATTN_TEST_SKIP
 * (a comma-separated list of test names not to run), ATTN_TEST_CHILD (set
 * by harness_run_child: run only that child check). */
#ifndef ATTN_HARNESS_H
#define ATTN_HARNESS_H

#include "attn.h"

#include <CUnit/CUnit.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* pid_t */

/* ---- running ---- */

typedef struct harness_test {
    const char *name;
    void (*fn)(void);
} harness_test;
#define HARNESS_TEST(fn) { #fn, fn }
#define HARNESS_END { NULL, NULL }

/* Adds a suite of the tests in a HARNESS_END-terminated table (filtered by
 * ATTN_TEST_FILTER). Returns 0, or -1 after printing CUnit's error. */
int harness_add_suite(const char *suite, const harness_test *tests);

/* Initialises the CUnit registry, calls register_fn (which calls
 * harness_add_suite, or CU_add_suite directly), runs everything in verbose
 * basic mode (CUnit's own summary closes the output), releases the shared
 * context and the registry. Returns 0 when everything passed, 1 otherwise:
 * main returns it, so ctest sees the failure. */
int harness_run(const char *program, void (*register_fn)(void));

/* ---- random numbers: splitmix64, identical on every platform ---- */

typedef struct harness_rng {
    uint64_t state;
} harness_rng;

void harness_rng_seed(harness_rng *r, uint64_t seed);
uint64_t harness_rng_next(harness_rng *r);
double harness_rng_uniform(harness_rng *r); /* [0, 1) */
double harness_rng_normal(harness_rng *r);  /* mean 0, deviation 1 (Box-Muller) */

/* $ATTN_TEST_SEED when set (to reproduce a printed failure), else dflt. */
uint64_t harness_seed(uint64_t dflt);

/* x[i] uniform in [lo, hi), or normal(mean, stddev), from seed alone. */
void harness_fill_uniform(float *x, size_t n, uint64_t seed, float lo, float hi);
void harness_fill_normal(float *x, size_t n, uint64_t seed, float mean, float stddev);

/* Rounds x in place through storage type t (float -> t -> float), so that a
 * reference computed from x sees exactly what the device reads. */
void harness_round(attn_dtype t, float *x, size_t n);

/* ---- comparison ---- */

/* Counts elements with |got - ref| > atol + rtol * |ref|. Infinities must
 * match exactly (-inf == -inf passes); a NaN anywhere is a violation. On
 * failure prints `what`, the count, the worst element's index and values,
 * the max error and the seed. Returns the number of violations. */
int harness_compare(const char *what, const float *got, const float *ref, size_t n,
                    double atol, double rtol, uint64_t seed);

/* ---- the OpenCL context ---- */

/* One context for the whole executable, made on first use with selector
 * $ATTN_TEST_DEVICE and released by harness_run. If it cannot be made,
 * prints attn_last_create_error(), fails (and, inside a test, aborts) the
 * current test, and returns NULL. */
attn_context *harness_context(void);

/* 1 when dev offers out-of-order queues; else 0, and prints "skipped". */
int harness_out_of_order_supported(cl_device_id dev);
/* An out-of-order queue on dev in a cl_context of its own (*cl); fails the
 * test (aborting it) where either cannot be made. */
cl_command_queue harness_out_of_order_queue(cl_device_id dev, cl_context *cl);
/* An application's out-of-order queue on harness_context's device, in a
 * cl_context of its own, and an attn context made from it. Returns 1 with
 * *ctx, *queue and *cl set; 0 (and prints "skipped") where the device has
 * no out-of-order queues; fails the test (aborting it) where creation
 * fails. harness_app_release releases the three. */
int harness_out_of_order_context(attn_context **ctx, cl_command_queue *queue, cl_context *cl);
void harness_app_release(attn_context *ctx, cl_command_queue queue, cl_context cl);

/* ---- device tensors ---- */

enum { HARNESS_BHSD = 0, HARNESS_BSHD = 1 };

/* Where a [B, H, S, D] tensor lies in its buffer. Zeroed = packed BHSD. */
typedef struct harness_layout {
    int order;        /* HARNESS_BHSD or HARNESS_BSHD */
    size_t offset;    /* elements before element [0,0,0,0] */
    size_t seq_pad;   /* extra elements per sequence step (stride_seq > D for
                         BHSD, > H*D for BSHD) */
    size_t spare_seq; /* extra sequence positions per head (a KV cache with
                         capacity S + spare_seq) */
} harness_layout;

/* Fills t's offset and strides for layout l; returns the buffer's size in
 * elements. */
size_t harness_layout_tensor(const harness_layout *l, int B, int H, int S, int D,
                             attn_tensor *t);

/* Creates a buffer for a [B, H, S, D] tensor of type dtype laid out as l
 * (NULL = packed BHSD), every element, gaps included, set to NaN so that a
 * kernel reading a gap or skipping a row shows. Sets *t (t->buffer is the
 * returned cl_mem, which the caller releases). NULL after a message. */
cl_mem harness_alloc(attn_context *ctx, attn_dtype dtype, int B, int H, int S, int D,
                     const harness_layout *l, attn_tensor *t);

/* harness_alloc, then the contiguous BHSD floats bhsd converted to dtype
 * and scattered into place. */
cl_mem harness_upload(attn_context *ctx, attn_dtype dtype, const float *bhsd, int B, int H,
                      int S, int D, const harness_layout *l, attn_tensor *t);

/* Reads tensor t (type dtype) back into contiguous BHSD floats (blocking).
 * Returns 0, or -1 after a message. */
int harness_download(attn_context *ctx, attn_dtype dtype, const attn_tensor *t, int B, int H,
                     int S, int D, float *bhsd);

/* A buffer of n floats set to NaN (for LSE), and reading n floats back. */
cl_mem harness_float_buffer(attn_context *ctx, size_t n);
int harness_read_floats(attn_context *ctx, cl_mem buf, float *dst, size_t n);

/* One batch and head in f32, packed: Q (sq x d), K and V (skv x d)
 * uploaded, O (sq x d) and an LSE of sq floats allocated (NaN). */
typedef struct harness_head {
    attn_tensor q, k, v, o;
    cl_mem lse;
} harness_head;
/* Returns 0, or -1 after a message (with nothing left to release). */
int harness_head_upload(attn_context *ctx, const float *q, const float *k, const float *v, int sq,
                        int skv, int d, harness_head *h);
void harness_head_release(harness_head *h);

/* ---- one checked forward ---- */

/* A forward of p on fresh inputs (seeded), packed BHSD, no lengths, no LSE,
 * compared with the reference at p's dtype tolerance. Returns 0 when right,
 * the attn_status when the call failed (after printing its message), -1 for
 * a wrong result or a failed set-up. Usable outside a CUnit test (child
 * processes, threads): it makes no CUnit assertions. */
int harness_forward_check(attn_context *ctx, const attn_problem *p, uint64_t seed);

/* ---- scratch folders ---- */

/* Makes a fresh folder /tmp/attn-test-<what>-XXXXXX in buf (fails the
 * current test fatally when it cannot). */
void harness_temp_dir(char *buf, size_t size, const char *what);

/* The sources of the vector and tiled families' prefill (mask_tiles.cl
 * among them) as ctx reads them, into the folder dir: as they are (wrong
 * 0), with a result off by more than the tolerance (1), or followed by a
 * NUL and text that does not compile (2). For attn_context_set_kernel_dir. */
void harness_write_sources(attn_context *ctx, const char *dir, int wrong);

/* Removes path and everything below it; folders a test made read-only are
 * made writable first. A file that cannot be removed is reported. */
void harness_remove_tree(const char *path);

/* The number of entries of the folder dir whose names end in suffix (a
 * program cache's ".bin" files), or -1 when dir cannot be opened. */
int harness_count_files(const char *dir, const char *suffix);

/* The whole of the file at path, NUL-terminated (the caller frees it), and
 * its length in *len (len may be NULL). NULL after a message naming the
 * file when it cannot be opened or read to its end. */
char *harness_read_file(const char *path, size_t *len);

/* ---- other programs ---- */

/* The path of the tool a suite runs, from the environment variable env
 * (ctest sets it); unset or empty, a message saying so and the running
 * test aborted, not a bare assertion. */
const char *harness_tool_path(const char *env, const char *tool);

/* Runs the program bin with args (a NULL-terminated list, not including
 * argv[0]) and this process's environment, its stdout and stderr both into
 * the file out_path, and waits for it. Returns its exit status, or -1 (after
 * a message) when it could not be started or did not exit normally. */
int harness_run_program(const char *bin, const char *const *args, const char *out_path);
/* The same with stderr into its own file, err_path (NULL: into out_path). */
int harness_run_program_split(const char *bin, const char *const *args, const char *out_path,
                              const char *err_path);

/* Starts bin with args (NULL-terminated, not including argv[0]; NULL: none)
 * and this process's environment changed by extra_env (NULL: unchanged): a
 * "NAME=value" entry sets NAME, in place of any value it had; a "NAME"
 * entry (no '=') unsets it. stdout goes into out_path (NULL: this
 * process's) and stderr into err_path (NULL: with stdout). Returns the
 * child's pid, or -1 after a message. */
pid_t harness_start_program(const char *bin, const char *const *args,
                            const char *const *extra_env, const char *out_path,
                            const char *err_path);

/* Waits for a child started by harness_start_program: its exit status,
 * 128 + the signal that ended it, or -1 (after a message). */
int harness_wait_program(pid_t pid);

/* ---- checks that need an environment of their own ---- */

/* What a context reads from the environment when it is created (ATTN_DEVICE,
 * ATTN_PARAMS, ATTN_CACHE_DIR, ...) is checked in a child process given
 * that environment, never by changing this process's (setenv races with
 * other threads' getenv, and a change leaks into later tests). A test file
 * lists its child checks -- CUnit test functions like any other -- in a
 * HARNESS_END-terminated table that its register function also passes to
 * harness_add_children:
 *
 *     static const harness_test children[] = {
 *         HARNESS_TEST(child_params_from_env),
 *         HARNESS_END
 *     };
 *     ...  harness_add_suite("config", tests); harness_add_children(children);
 *
 * and a test runs one of them with the environment it needs:
 *
 *     const char *const env[] = {"ATTN_PARAMS=rows=2", "ATTN_CHECK", NULL};
 *     CU_ASSERT_EQUAL(harness_run_child("child_params_from_env", env, NULL), 0);
 *
 * The child is this test program (/proc/self/exe) with ATTN_TEST_CHILD set
 * to the check's name: then harness_add_suite adds nothing and
 * harness_add_children only that check, and harness_run prints each failed
 * assertion (file, line, condition) and returns 1 when any failed. */

/* In a child, adds the check ATTN_TEST_CHILD names (ATTN_TEST_FILTER and
 * ATTN_TEST_SKIP do not apply); otherwise nothing. Returns 0, or -1 after a
 * message. */
int harness_add_children(const harness_test *children);

/* Runs child check `name` in a new process of this test program, its
 * environment this process's changed by env (as harness_start_program's
 * extra_env), its stdout this process's and its stderr into err_path (NULL:
 * this process's). Returns its exit status (0: every assertion held), or -1
 * after a message. */
int harness_run_child(const char *name, const char *const *env, const char *err_path);

#endif /* ATTN_HARNESS_H */
