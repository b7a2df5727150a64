/* cases.h -- the one case table of the correctness suites (test_forward,
 * test_materialized, test_decode, test_seed_failures) and the one runner
 * that checks a case through an entry point: attn_forward,
 * attn_forward_materialized, or attn_decode through a KV cache
 * (harness_decode_entry). The kernel family is a field of the case.
 *
 * A suite runs its part of the table by group:
 *
 *     harness_run_group("forward/padding", attn_forward, "attn_forward");
 *
 * and a test that needs its own data (hand-made Q, K, V) runs a case on
 * them with harness_case_exec, which uploads them in the case's layouts,
 * runs the entry and checks everything but the values. */
#ifndef ATTN_TEST_CASES_H
#define ATTN_TEST_CASES_H

#include "harness.h"

/* n floats, zeroed; fails (and aborts) the current test when out of memory. */
float *harness_xalloc(size_t n);

/* An f32 problem with the default scale. */
attn_problem harness_problem(int B, int Hq, int Hkv, int D, int Sq, int Skv, int causal);

/* Attention inputs from one seed: Q from normal(0, amp) (seed), K from
 * normal(0, amp) (seed + 1), V uniform in [v_lo, v_hi) (seed + 2). */
void harness_fill_qkv(float *q, size_t nq, float *k, float *v, size_t nkv, uint64_t seed,
                      float amp, float v_lo, float v_hi);

/* NaN into every row of the BHSD array x outside the batch entries' regions
 * (start, len: NULL = 0 and S): whatever pad rows hold must never reach a
 * result. */
void harness_poison_pads(float *x, int B, int H, int S, int D, const int *start, const int *len);

/* out (and lse, when not NULL) against attn_reference_forward of p on the
 * same inputs with lengths L (NULL = full), at p's dtype tolerance, named
 * "<what> O" / "<what> LSE" in messages. Returns the number of violations. */
int harness_check_reference(const char *what, const attn_problem *p, const attn_lengths *L,
                            const float *q, const float *k, const float *v, const float *out,
                            const float *lse, uint64_t seed);

/* Elements of t's buffer outside the [B,H,S,D] tensor (type dtype) that are
 * no longer the NaN harness_alloc filled them with (a message names the
 * first); 0 when the kernel wrote only its own elements. */
int harness_gaps_written(attn_context *ctx, attn_dtype dtype, const attn_tensor *t, int B, int H,
                         int S, int D);

/* ---- kernel parameters ---- */

/* The kernel families a case runs under, as bits: each set bit is one run. */
typedef enum harness_family {
    HARNESS_AUTO = 1,   /* the library's own choice for the device */
    HARNESS_TILED = 2,
    HARNESS_VECTOR = 4,
    HARNESS_FLASH = 8,  /* prefill only: forced on decode, the planner keeps decode's own */
    HARNESS_MMA = 16,   /* D % 16 == 0 (f32: D <= 128, 4096 keys); others skip it */
} harness_family;
#define HARNESS_BOTH (HARNESS_TILED | HARNESS_VECTOR)
/* the prefill matrices: every family with a forward kernel */
#define HARNESS_FORWARD (HARNESS_BOTH | HARNESS_FLASH | HARNESS_MMA)
/* the decode matrices: every family with a decode kernel */
#define HARNESS_DECODE (HARNESS_BOTH | HARNESS_MMA)

/* "auto", "tiled", "vector", "flash", "mma" */
const char *harness_family_name(harness_family f);

/* The one place the suites choose kernel parameters: text is an override
 * ("family=tiled,rows=8", attn_context_set_params) or NULL for the
 * library's own choice, for the calls on ctx that follow. Returns
 * ATTN_SUCCESS or the refusal. */
attn_status harness_use_params(attn_context *ctx, const char *text);

/* harness_use_params with "family=<f>" followed by extra ("rows=4,splits=2",
 * may be NULL); HARNESS_AUTO with extra tunables keeps the automatic family. */
attn_status harness_use_family(attn_context *ctx, harness_family f, const char *extra);

/* ---- one case ---- */

/* How a case gives the sinks: none, p->sinks (host), p->sinks_buffer. */
typedef enum harness_sinks { HARNESS_SINKS_NONE, HARNESS_SINKS_HOST, HARNESS_SINKS_BUFFER } harness_sinks;

/* The content of a case's mask ([b][h][r][c] by buffer rows; elements of
 * pad rows and keys are NaN when the case poisons pads):
 *   RANDOM: normal(0, 1), ~30% -inf holes, every fifth query row all -inf;
 *   FINFO:  RANDOM with -FLT_MAX for the holes (the "finfo.min" masks of
 *           other libraries; f32 masks only);
 *   CAUSAL: -inf where key j > query position i + kv_len - q_len of the
 *           entry, 0 elsewhere (== causal);
 *   ZEROS:  0 everywhere (== no mask). */
typedef enum harness_mask_kind {
    HARNESS_MASK_NONE,
    HARNESS_MASK_RANDOM,
    HARNESS_MASK_FINFO,
    HARNESS_MASK_CAUSAL,
    HARNESS_MASK_ZEROS,
} harness_mask_kind;

/* harness_case.mask_bcast: the mask dimensions given with stride 0. */
enum { HARNESS_BCAST_BATCH = 1, HARNESS_BCAST_HEAD = 2, HARNESS_BCAST_Q = 4 };

typedef struct harness_case {
    const char *group;  /* the suite test that runs it ("forward/padding") */
    const char *name;
    unsigned families;  /* harness_family bits: one run under each */
    const char *params; /* tunables after the family ("rows=8,keys=16"), or NULL */
    int B, Hq, Hkv, D, Sq, Skv;
    attn_dtype dtype;
    int causal;
    float scale;
    const int *q_start, *q_len, *kv_start, *kv_len; /* per batch entry; NULL = full */
    harness_layout lq, lk, lv, lo;
    int in_place;    /* out is the q tensor itself */
    int no_lse;      /* pass lse = NULL */
    int poison_pads; /* NaN in every input row outside the lengths */
    float amp;       /* Q and K are normal(0, amp); 0 means 1 */
    uint64_t seed;
    /* ---- the variants (attn_problem's fields; zero = none) ---- */
    int window, window_left, window_right; /* use_window and its sides */
    float softcap;
    harness_sinks sinks;      /* where the per-head sink logits are given */
    const float *sink_values; /* Hq of them, or NULL: uniform in [0, 4) from seed + 3 */
    const float *alibi_slopes;
    float alibi_max_bias;
    harness_mask_kind mask;   /* the additive mask's content */
    attn_dtype mask_dtype;    /* ATTN_F32 (0) or ATTN_F16 */
    unsigned mask_bcast;      /* HARNESS_BCAST_* bits: strides of 0 */
    /* Packed: the batch entries' rows (the lengths) lie along one token axis
     * of q_len / kv_len rows; Q, K, V, O have stride_batch 0 and LSE is
     * [Hq][Sq]. The runner's host arrays keep the BHSD [B] shape with every
     * batch entry a copy of the one axis; O rows of no entry must stay
     * untouched (NaN). */
    int packed;
    /* Through an int8 KV cache (ATTN_KV_INT8; harness_decode_entry only):
     * the reference reads K and V quantized and dequantized row by row, as
     * the cache holds them, at the dtype's tolerance */
    int kv_int8;
} harness_case;

/* The shared table (case_table.c) and its length. */
extern const harness_case harness_cases[];
extern const size_t harness_ncases;

/* The table's case of that name; fails the current test fatally when there
 * is none. */
const harness_case *harness_case_named(const char *name);

/* The table's next case of group after `after` (NULL: the first), or NULL:
 *     for (c = harness_group_next(g, NULL); c; c = harness_group_next(g, c)) */
const harness_case *harness_group_next(const char *group, const harness_case *after);

/* Each family f (a harness_family) whose bit is set in fams, in bit order:
 *     HARNESS_FOR_FAMILIES(c->families, f) run(c, f); */
#define HARNESS_FOR_FAMILIES(fams, f)                                                   \
    for (harness_family f = HARNESS_AUTO; f <= HARNESS_MMA; f = (harness_family)(f << 1))    \
        if (!((fams) & (unsigned)f)) {                                                   \
        } else

/* c's problem and lengths (the lengths' arrays are c's own). The problem
 * has c's scalar variant fields (window, softcap, ALiBi, packed); the
 * sinks and the mask, which need data, come from harness_variant_data. */
attn_problem harness_case_problem(const harness_case *c);
attn_lengths harness_case_lengths(const harness_case *c);

/* The data of c's sinks and mask, a function of c alone (so the runner's
 * call and its reference see the same values): host arrays, and with a
 * context the device buffers. */
typedef struct harness_variant_data {
    float *sinks;       /* Hq floats, or NULL */
    cl_mem sinks_buffer;
    float *mask_host;   /* the mask as floats, in the mask's layout (NaN in its gaps) */
    cl_mem mask_buffer; /* the same in c->mask_dtype */
    attn_mask mask;     /* offset and strides (buffer, host filled in) */
} harness_variant_data;

/* Makes c's variant data (device buffers only when ctx is not NULL).
 * Fails the current test fatally when it cannot. */
void harness_variant_data_make(const harness_case *c, attn_context *ctx, harness_variant_data *vd);
void harness_variant_data_release(harness_variant_data *vd);

/* p with vd's sinks and mask: for the device call (device != 0: the sinks
 * as c gives them, the mask buffer) or for attn_reference_forward (host
 * arrays only). */
void harness_variant_attach(const harness_case *c, const harness_variant_data *vd, int device,
                            attn_problem *p);

/* A case for problem p with lengths L (NULL = full) and layouts (NULL =
 * contiguous BHSD), for harness_case_exec on a test's own data. p's window,
 * softcap, ALiBi, packed flag and host sinks carry over; a mask does not
 * (set the case's mask kind). */
harness_case harness_case_of(const char *name, const attn_problem *p, const attn_lengths *L,
                             const harness_layout *lq, const harness_layout *lk,
                             const harness_layout *lv, const harness_layout *lo);

/* ---- entry points ---- */

typedef attn_status (*harness_entry)(attn_context *, const attn_problem *, const attn_tensor *,
                                     const attn_tensor *, const attn_tensor *,
                                     const attn_tensor *, const attn_lengths *, cl_mem,
                                     cl_event *);

/* attn_decode with attn_forward's arguments: a KV cache of capacity
 * p->kv_len made for the call, K and V appended (kv_len[b] rows each), then
 * q_len[b] queries per sequence decoded against it. The bottom-right causal
 * alignment is the same as attn_forward's. Lengths with a start other than
 * zero are refused (a cache starts every sequence at position 0). */
attn_status harness_decode_entry(attn_context *ctx, const attn_problem *p, const attn_tensor *q,
                                 const attn_tensor *k, const attn_tensor *v,
                                 const attn_tensor *out, const attn_lengths *L, cl_mem lse,
                                 cl_event *done);
/* The caches harness_decode_entry makes from now on: contiguous (0, the
 * default) or paged with blocks of block_size tokens (the default pool). */
void harness_decode_blocks(int block_size);

/* ---- the runner ---- */

/* Runs c's problem on the host BHSD inputs q, k, v (laid out on the device
 * as c says, every gap NaN) through entry under family f and c->params.
 * Writes O and, when lse is not NULL and c->no_lse is 0, LSE (BHSD floats).
 * c's sinks and mask are made (harness_variant_data) and passed. Packed, the
 * device gets batch entry 0 of q, k, v as the one token axis, and out / lse
 * receive each entry's own rows (zeros and -inf in its pad rows, as the
 * reference writes them) after a check that rows of no entry stayed NaN.
 * Checks the completion event, that nothing outside O was written and that
 * the inputs are unchanged (CUnit assertions and messages naming the case).
 * Returns 0, or the number of failed checks (a failed call counts one, its
 * message printed). */
int harness_case_exec(const harness_case *c, harness_family f, harness_entry entry,
                      const char *entry_name, const float *q, const float *k, const float *v,
                      float *out, float *lse);

/* c on seeded inputs (normal(0, amp) Q and K, uniform V in [-2, 2], rounded
 * through the storage type, pads poisoned if c asks) through entry under
 * family f, compared with attn_reference_forward at the dtype's tolerance.
 * Returns the number of failed checks; when o_keep / lse_keep are not NULL
 * they receive O and LSE (malloc'd) when the call succeeded. Under
 * HARNESS_MMA a case the family cannot run (attn_family_refuses) is
 * skipped (0), unless o_keep or lse_keep asks for its result. */
int harness_case_run(const harness_case *c, harness_family f, harness_entry entry,
                     const char *entry_name, float **o_keep, float **lse_keep);

/* a and b (the same shape, e.g. a case and its variant that must not
 * change the answer) through entry under family f, each checked against
 * the reference as harness_case_run does, then against each other: O and
 * LSE bit for bit when exact, else within twice a's dtype tolerance.
 * Returns the number of failed checks. */
int harness_case_same(const harness_case *a, const harness_case *b, harness_family f,
                      harness_entry entry, const char *entry_name, int exact);

/* Every case of group, under each of its families (or under `families`
 * with tunables `params` for every case when families is not 0), through
 * entry. Fails the test when the group has no case. Returns the failures. */
int harness_run_group_as(const char *group, harness_entry entry, const char *entry_name,
                         unsigned families, const char *params);
int harness_run_group(const char *group, harness_entry entry, const char *entry_name);

/* A decode (q_len 1 over a cache of dtype) with params forced, naming a
 * family without a decode kernel (flash, mma): the plan is the device's
 * own, as without the override. */
void harness_decode_keeps_plan(const char *params, attn_dtype dtype);

/* How many case runs (one per family) this process has made: the suites
 * print it so that coverage is counted, not guessed. */
int harness_case_runs(void);
/* How many rows were skipped under mma, which refuses them (its head dims,
 * f32 past its key limit): said beside the count, not passed silently. */
int harness_case_skips(void);

#endif /* ATTN_TEST_CASES_H */
