/* test_gpu_plans.c -- the parameters the planner gives the GPUs attn is
 * built for, run on this device against the CPU reference.
 *
 * A user's first run on a GPU is the plan for that GPU's limits, at the
 * model's head dim; the other suites run the families at parameters of
 * their own on small head dims. Here, for the H200's limits, an AMD
 * GPU's and an Intel Data Center GPU Max's (kernels/gpu_limits.h, which
 * tools/gpu_programs.c also lists its programs for check-ptx.sh,
 * check-amdgcn.sh and check-intel.sh on), at D 64, 128 and 256:
 *   - prefill: tiled, and flash without and with prefetch, each from
 *     the start the planner and the tuner take (attn_plan_family_start,
 *     fitted), on DESIGN's large shape (B 4, Hq 32, Hkv 8, S 4096);
 *   - decode: the decode heuristic's plan for one new token over a
 *     contiguous cache (tiled) and for a block of four over a paged one
 *     (blocks of 16; the H200's is mma where mma runs), splits automatic;
 *   - the H200's own prefill default, the mma family, at D 128 in f16 and
 *     f32 and at D 256 in bf16 (the other suites run it at D 64 and less);
 *   - the D 64 tiled and flash plans again over rows of about 4179 keys
 *     (prefill; decode unsplit and in two splits), where a compiler's
 *     fault in a long key loop shows;
 * mma runs on its emulation here. Each plan is forced, checked to be the
 * plan exactly (attn_prepare, attn_decode_prepare), and run on a small GQA
 * problem, every pad NaN, against the reference: prefill with right and
 * left padding, Sq < Skv, odd lengths and rows that see no key; decode
 * over ragged cache lengths. The storage types go in turn, so that a plan
 * the GPUs share runs in different ones. */
#include "cases.h"
#include "attention/decode.h"
#include "attention/plan.h"
#include "core/context.h"
#include "kernels/gpu_limits.h"
#include "kernels/params.h"

#include <stdio.h>
#include <string.h>

typedef struct gpu {
    const char *name;
    attn_device_limits limits;
} gpu;

static const gpu gpus[] = {
    {"H200", ATTN_GPU_LIMITS_H200},
    {"AMD", ATTN_GPU_LIMITS_AMD},
    /* an Arc's plans are the AMD GPU's; the Max's twice the local memory
     * makes larger tiles at D 128 and 256 */
    {"Intel Max", ATTN_GPU_LIMITS_INTEL_PVC},
};
enum { NGPUS = sizeof gpus / sizeof gpus[0] };
static const int dims[] = {64, 128, 256};
static const attn_dtype types[] = {ATTN_F32, ATTN_F16, ATTN_BF16};

static int nruns; /* a seed each */

/* The tunables after "family=NAME," of a formatted plan, as the harness
 * takes them (it names the family itself). */
static const char *tunables(const char *params)
{
    const char *comma = strchr(params, ',');
    return comma ? comma + 1 : "";
}

/* The plan attn_prepare, or for a decode attn_decode_prepare over a cache
 * of p's shape (paged by page rows, or contiguous: 0), makes of p under
 * params; "" when it fails (the message printed). */
static void plan_of(const attn_problem *p, int decode, int page, const char *params,
                    char *out, size_t size)
{
    attn_context *ctx = harness_context();
    attn_plan_info info;
    attn_kv_cache *cache = NULL;
    attn_status st = attn_context_set_params(ctx, params);
    if (st == ATTN_SUCCESS && decode) {
        const attn_kv_cache_desc desc = {.batch = p->batch, .kv_heads = p->kv_heads,
                                         .head_dim = p->head_dim, .capacity = p->kv_len,
                                         .dtype = p->dtype, .block_size = page};
        st = attn_kv_cache_create_desc(ctx, &desc, &cache);
        if (st == ATTN_SUCCESS) st = attn_decode_prepare(ctx, cache, p, &info);
    } else if (st == ATTN_SUCCESS) {
        st = attn_prepare(ctx, p, &info);
    }
    if (st != ATTN_SUCCESS) printf(": %s", attn_last_error(ctx));
    snprintf(out, size, "%s", st == ATTN_SUCCESS ? info.params : "");
    attn_kv_cache_release(cache);
    harness_use_params(ctx, NULL);
}

/* pr forced on p (a decode: over a cache paged by page rows, or
 * contiguous), run through entry under f with lengths L and compared with
 * the reference, every pad NaN; first, the plan must be pr exactly. A plan
 * this device cannot hold (a GPU with less local memory than the one
 * planned for) is reported skipped, with why. */
static void run(const char *gpu_name, const attn_params *pr, harness_family f,
                harness_entry entry, const char *entry_name, const attn_problem *p,
                const attn_lengths *L, int page)
{
    char params[160], name[240], planned[160], forced[180];
    attn_params_format(pr, params, sizeof params);
    /* forced splits (a shared tunable, not in the family's format) go to
     * the run, not the plan's check: a plan made before the cache holds a
     * row reports one split */
    snprintf(forced, sizeof forced, "%s", params);
    if (pr->kv_splits > 0)
        snprintf(forced + strlen(forced), sizeof forced - strlen(forced), ",splits=%d",
                 pr->kv_splits);
    snprintf(name, sizeof name, "%s's %s D %d %s%s: %s", gpu_name, entry_name, p->head_dim,
             attn_dtype_name(p->dtype), page ? " paged" : "", forced);
    printf("\n  %s", name);
    const attn_device_limits here = attn_context_limits(harness_context());
    char why[160];
    if (!attn_params_legal(pr, &here, p, why, sizeof why)) {
        printf(": skipped, not usable on this device: %s", why);
        return;
    }
    plan_of(p, entry != attn_forward, page, params, planned, sizeof planned);
    /* a decode's automatic splits are this device's and this problem's */
    const size_t n = strlen(params);
    const char *rest = planned + n;
    if (strncmp(planned, params, n) != 0 ||
        (*rest && (entry == attn_forward || strncmp(rest, ",splits=", 8) != 0 ||
                   strchr(rest + 1, ',')))) {
        printf(": the plan here is \"%s\"", planned);
        CU_FAIL("the GPU's plan did not run as given");
    }
    harness_case c = harness_case_of(name, p, L, NULL, NULL, NULL, NULL);
    c.params = tunables(forced);
    c.seed = 8100 + (uint64_t)nruns++;
    c.poison_pads = 1;
    harness_decode_blocks(page);
    CU_ASSERT_EQUAL(harness_case_run(&c, f, entry, entry_name, NULL, NULL), 0);
    harness_decode_blocks(0);
}

/* The prefill runs' lengths (B 2, Sq 37 < Skv 45): entry 0 right-padded
 * with more queries than keys (its first 4 rows see none), entry 1
 * left-padded. */
static const int q_start[] = {0, 5}, q_len[] = {34, 29}, kv_start[] = {0, 7}, kv_len[] = {30, 38};
static const attn_lengths lengths = {q_start, q_len, kv_start, kv_len};

/* pr, planned for GPU g on big, fits that GPU (its local memory, work
 * group and registers): run() checks it against this device only, which
 * holds far more local memory than any of them (a plan past the H200's
 * 48 KiB passed). */
static void check_legal_on_gpu(int g, const attn_params *pr, const attn_problem *big)
{
    char why[200] = "", text[160];
    const int legal = attn_params_legal(pr, &gpus[g].limits, big, why, sizeof why);
    if (!legal) {
        attn_params_format(pr, text, sizeof text);
        printf("\n  %s D %d %s: %s does not fit: %s", gpus[g].name, big->head_dim,
               attn_dtype_name(big->dtype), text, why);
    }
    CU_ASSERT(legal);
}

/* GPU g's prefill plan at dims[di] for k (0 tiled, 1 flash, 2 flash with
 * prefetch), on DESIGN's large shape, and the storage type it runs in
 * here (the GPUs' shared plans in other types). */
static attn_params prefill_plan(int g, int di, int k, attn_dtype *dtype)
{
    attn_problem big = harness_problem(4, 32, 8, dims[di], 4096, 4096, 1);
    big.dtype = *dtype = types[(g + di + k) % 3];
    attn_params pr = attn_plan_family_start(ATTN_ENTRY_PREFILL, &gpus[g].limits, &big,
                                            k ? ATTN_FAMILY_FLASH : ATTN_FAMILY_TILED);
    pr.prefetch = k == 2;
    attn_params_fit(ATTN_ENTRY_PREFILL, &pr, &gpus[g].limits, &big);
    check_legal_on_gpu(g, &pr, &big);
    return pr;
}

/* B 2, Hq 4, Hkv 2, the lengths above */
static void test_gpu_prefill_plans(void)
{
    for (int g = 0; g < NGPUS; g++)
        for (int di = 0; di < 3; di++)
            for (int k = 0; k < 3; k++) {
                attn_problem p = harness_problem(2, 4, 2, dims[di], 37, 45, 1);
                const attn_params pr = prefill_plan(g, di, k, &p.dtype);
                run(gpus[g].name, &pr, k ? HARNESS_FLASH : HARNESS_TILED, attn_forward,
                    "attn_forward", &p, &lengths, 0);
            }
}

/* The H200's default, the mma family, at the head dims the other suites
 * leave to it (they run it at D 64 and less): f16 at D 128 (issue 11's
 * target shape), bf16 at D 256 (half the key tile), f32 at D 128 (3xTF32).
 * Its emulation here builds slowly: three programs, not every type. */
static void test_gpu_mma_plans(void)
{
    static const struct {
        int d;
        attn_dtype dtype;
    } runs[] = {{128, ATTN_F16}, {256, ATTN_BF16}, {128, ATTN_F32}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        attn_problem big = harness_problem(4, 32, 8, runs[i].d, 4096, 4096, 1);
        big.dtype = runs[i].dtype;
        const attn_params pr =
            attn_plan_family_start(ATTN_ENTRY_PREFILL, &gpus[0].limits, &big, ATTN_FAMILY_MMA);
        CU_ASSERT_EQUAL_FATAL(pr.family, ATTN_FAMILY_MMA);
        check_legal_on_gpu(0, &pr, &big);
        attn_problem p = harness_problem(2, 4, 2, runs[i].d, 37, 45, 1);
        p.dtype = runs[i].dtype;
        run(gpus[0].name, &pr, HARNESS_MMA, attn_forward, "attn_forward", &p, &lengths, 0);
    }
}

/* GPU g's decode plan at dims[di] for one new token over a contiguous
 * cache (block 0) or a block of four over one paged by 16 (block 4), and
 * the storage type it runs in here. */
static attn_params decode_plan(int g, int di, int block, attn_dtype *dtype)
{
    attn_problem big = harness_problem(4, 32, 8, dims[di], block ? 4 : 1, 16384, 1);
    big.dtype = *dtype = types[(g + di + block / 4 + 1) % 3];
    attn_params pr = attn_decode_params_heuristic(&gpus[g].limits, &big);
    if (block) attn_plan_fit_page(&pr, 16);
    check_legal_on_gpu(g, &pr, &big);
    return pr;
}

/* B 2, Hq 4, Hkv 2 over 45 cache rows, entry 1 holding 31 (a decode's
 * lengths start at 0: no left padding). The H200 decodes a block of four
 * on mma where it runs (16 rows a KV head: decode_params.c), tiled where
 * not (f32 at D 256). */
static void test_gpu_decode_plans(void)
{
    static const int zero[] = {0, 0}, q1[] = {1, 1}, q4[] = {4, 3}, rows[] = {45, 31};
    for (int g = 0; g < NGPUS; g++)
        for (int di = 0; di < 3; di++)
            for (int block = 0; block <= 4; block += 4) {
                attn_problem p = harness_problem(2, 4, 2, dims[di], block ? 4 : 1, 45, 1);
                const attn_params pr = decode_plan(g, di, block, &p.dtype);
                const attn_lengths dl = {zero, block ? q4 : q1, zero, rows};
                run(gpus[g].name, &pr, pr.family == ATTN_FAMILY_MMA ? HARNESS_MMA : HARNESS_TILED,
                    harness_decode_entry, "attn_decode", &p, &dl, block ? 16 : 0);
            }
}

/* The D 64 plans of tiled and flash above (the same programs: nothing
 * more to build) over rows of about 4179 keys, 66 key tiles or more: a
 * compiler can get a long key loop wrong and the short one right (Mesa's
 * rusticl does so for the mma family's emulation, left out here: the
 * gate's long checks and test_mma_gate cover it). Prefill: 16 queries,
 * right and left padding; decode over ragged caches, in automatic splits
 * (one on a CPU device: a work-group walks a whole row) and in two forced
 * ones of about 2090 keys (the combine after long rows; splits are a
 * kernel argument, not a build option). */
static void test_gpu_long_rows(void)
{
    static const int qs[] = {0, 3}, ql[] = {16, 13}, ks[] = {0, 5}, kl[] = {4179, 4170};
    static const attn_lengths prefill_lengths = {qs, ql, ks, kl};
    static const int zero[] = {0, 0}, q1[] = {1, 1}, q4[] = {4, 3}, rows[] = {4179, 3001};
    for (int g = 0; g < NGPUS; g++) {
        for (int k = 0; k < 3; k++) {
            attn_problem p = harness_problem(2, 4, 2, 64, 16, 4184, 1);
            const attn_params pr = prefill_plan(g, 0, k, &p.dtype);
            run(gpus[g].name, &pr, k ? HARNESS_FLASH : HARNESS_TILED, attn_forward,
                "attn_forward", &p, &prefill_lengths, 0);
        }
        for (int block = 0; block <= 4; block += 4) {
            attn_problem p = harness_problem(2, 4, 2, 64, block ? 4 : 1, 4179, 1);
            attn_params pr = decode_plan(g, 0, block, &p.dtype);
            if (pr.family == ATTN_FAMILY_MMA) continue;
            const attn_lengths dl = {zero, block ? q4 : q1, zero, rows};
            for (int splits = 0; splits <= 2; splits += 2) {
                pr.kv_splits = splits;
                run(gpus[g].name, &pr, HARNESS_TILED, harness_decode_entry, "attn_decode", &p,
                    &dl, block ? 16 : 0);
            }
        }
    }
}

static const harness_test tests[] = {
    HARNESS_TEST(test_gpu_prefill_plans),
    HARNESS_TEST(test_gpu_decode_plans),
    HARNESS_TEST(test_gpu_mma_plans),
    HARNESS_TEST(test_gpu_long_rows),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("gpu_plans", tests); }

int main(void) { return harness_run("test_gpu_plans", register_tests); }
