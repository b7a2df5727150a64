/* gpu_programs.c -- the OpenCL programs attn would build on an NVIDIA H200,
 * one a line, for tools/check-ptx.sh (which compiles each to PTX with clang
 * and assembles it with NVIDIA's ptxas, on a machine without a GPU), or
 * with --amd on an AMD GPU, for tools/check-amdgcn.sh, or with --intel or
 * --intel-pvc on an Intel GPU, for tools/check-intel.sh.
 *
 * usage: gpu-programs [SETS] | gpu-programs --amd | --intel | --intel-pvc
 *        | gpu-programs [--amd | --intel | --intel-pvc] --local-limit
 * Prints "label<TAB>kernel<TAB>sources<TAB>options" per program: the
 * planner's own pieces (attn_params_fit on the H200's limits, the family's
 * sources, attn_params_options, the cache's -D options, -DMMA_PTX=1 and
 * -DATTN_GPU=1 as forward.c, decode.c, mma_gate.c and program.c add them), over the families a GPU
 * runs (tiled, flash with and without prefetch, mma), the storage types,
 * D 64, 128 and 256, prefill and decode (KV as the dtype and int8, contiguous
 * and paged), the prefill sets of file SETS (tools/gpu-prefill-sets.txt,
 * which tools/gpu-session.sh times: one ATTN_PARAMS string a line, '#'
 * comments), and the mma gate's two fragment checks, on the H200's limits
 * (kernels/gpu_limits.h).
 *
 * --amd: the same on an AMD GPU's limits (kernels/gpu_limits.h), tiled
 * and flash only: the mma family there is mma_ops.cl's emulation, which
 * the planner never chooses (mma_gate.c verifies NVIDIA's PTX only), so
 * no mma program, no sets. --intel, --intel-pvc: the same on an Intel Arc's
 * and an Intel Data Center GPU Max's limits. */
#include "attention/decode.h"
#include "attention/plan.h"
#include "kernels/gpu_limits.h"
#include "kernels/kernel_desc.h"
#include "kernels/params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const attn_device_limits h200 = ATTN_GPU_LIMITS_H200;
static const attn_device_limits amd = ATTN_GPU_LIMITS_AMD;
static const attn_device_limits intel = ATTN_GPU_LIMITS_INTEL;
static const attn_device_limits intel_pvc = ATTN_GPU_LIMITS_INTEL_PVC;
static const attn_device_limits *dev = &h200;

static void print_program(const char *label, const attn_params *pr, const attn_problem *p,
                          int entry, const char *cache_options)
{
    const char *const *names;
    const int n = attn_family_sources(pr->family, entry, &names);
    const char *kernel = attn_family_kernel(pr->family, entry);
    if (!kernel) return;
    char opts[720];
    attn_params_options(pr, p, entry, opts, sizeof opts - 96);
    if (pr->family == ATTN_FAMILY_MMA) strcat(opts, " -DMMA_PTX=1");
    strcat(opts, cache_options);
    strcat(opts, " -DATTN_GPU=1"); /* program.c's, on any GPU */
    char params[160];
    attn_params_format(pr, params, sizeof params);
    /* the private-memory estimate the shrink loop used, next to ptxas's
     * registers in check-ptx.sh's report; and the __local one the plan was
     * fitted by, which the check stages hold each compiler's figure to */
    printf("%s,%s,est=%zuB,lmem=%zuB\t%s\t", label, params,
           attn_params_private_bytes(entry, pr, p), attn_params_local_bytes(pr, p), kernel);
    for (int i = 0; i < n; i++) printf("%s%s", i ? " " : "", names[i]);
    printf("\t%s\n", opts);
}

#define MAX_SETS 16
static char sets[MAX_SETS][160];
static int nsets;

/* The sets of file path (the format above) into sets; exits on an error. */
static void read_sets(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "gpu-programs: cannot read %s\n", path);
        exit(1);
    }
    char line[1024];
    for (int no = 1; fgets(line, sizeof line, f); no++) {
        if (!strchr(line, '\n') && !feof(f)) { /* fgets would split it */
            fprintf(stderr, "gpu-programs: %s:%d: longer than %d characters\n", path, no,
                    (int)sizeof line - 2);
            exit(1);
        }
        char *s = line, *d = line;
        for (; *s && *s != '#'; s++) /* without the comment and the blanks */
            if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r') *d++ = *s;
        *d = 0;
        if (!*line) continue;
        if (nsets == MAX_SETS || strlen(line) >= sizeof sets[0]) {
            fprintf(stderr, "gpu-programs: %s:%d: more than %d sets, or a set of more than %d "
                    "characters\n", path, no, MAX_SETS, (int)sizeof sets[0] - 1);
            exit(1);
        }
        strcpy(sets[nsets++], line);
    }
    fclose(f);
}

/* B=4 Hq=32 Hkv=8 S=4096 causal: DESIGN.md's large prefill shape */
static void prefill(attn_dtype dt, int dim)
{
    const attn_problem p = {.batch = 4, .q_heads = 32, .kv_heads = 8, .head_dim = dim,
                            .q_len = 4096, .kv_len = 4096, .dtype = dt, .causal = 1};
    const int families[] = {ATTN_FAMILY_TILED, ATTN_FAMILY_FLASH, ATTN_FAMILY_MMA};
    for (int f = 0; f < 3; f++) {
        if (attn_family_refuses(families[f], &p)) continue;
        if (families[f] == ATTN_FAMILY_MMA && !dev->mma) continue;
        for (int prefetch = 0; prefetch < 1 + (families[f] == ATTN_FAMILY_FLASH); prefetch++) {
            /* the family's start as the tuner takes it: the plan where
             * the heuristic picks the family (tiled's rows and keys by D) */
            attn_params pr = attn_plan_family_start(ATTN_ENTRY_PREFILL, dev, &p, families[f]);
            pr.prefetch = prefetch;
            attn_params_fit(ATTN_ENTRY_PREFILL, &pr, dev, &p);
            char label[64];
            snprintf(label, sizeof label, "prefill,%s,d%d", attn_dtype_name(dt), dim);
            print_program(label, &pr, &p, ATTN_ENTRY_PREFILL, "");
        }
    }
    /* f32 on mma past 4096 keys: rows built with MMA_FOLD, as the gate's
     * long f32 check and every longer f32 prefill build them */
    attn_problem folded = p;
    folded.q_len = folded.kv_len = 8192;
    if (dt == ATTN_F32 && dev->mma && !attn_family_refuses(ATTN_FAMILY_MMA, &folded)) {
        attn_params pr =
            attn_plan_family_start(ATTN_ENTRY_PREFILL, dev, &folded, ATTN_FAMILY_MMA);
        attn_params_fit(ATTN_ENTRY_PREFILL, &pr, dev, &folded);
        char label[64];
        snprintf(label, sizeof label, "prefill,f32,d%d,folded", dim);
        print_program(label, &pr, &folded, ATTN_ENTRY_PREFILL, "");
    }
    for (int i = 0; i < nsets; i++) {
        /* over the plan, as ATTN_PARAMS goes in gpu-session.sh: a set
         * naming another family starts from that family's own plan, so that
         * fields it leaves out (keys) are that family's, not tiled's */
        attn_params pr = attn_plan_heuristic(ATTN_ENTRY_PREFILL, dev, &p);
        char err[160], label[64];
        if (attn_plan_parse_over(ATTN_ENTRY_PREFILL, dev, &p, sets[i], &pr, err, sizeof err)) {
            fprintf(stderr, "gpu-programs: %s: %s\n", sets[i], err);
            exit(1);
        }
        if (attn_family_refuses(pr.family, &p)) continue;
        attn_params_fit(ATTN_ENTRY_PREFILL, &pr, dev, &p);
        snprintf(label, sizeof label, "prefill,%s,d%d,session", attn_dtype_name(dt), dim);
        print_program(label, &pr, &p, ATTN_ENTRY_PREFILL, "");
    }
}

/* B=4 Hkv=8 kv 16384: one new token of Hq=32 (tiled's rows), and a block of
 * four (16 rows a KV head: the mma decode) */
static void decode(attn_dtype dt, int dim)
{
    for (int q_len = 1; q_len <= 4; q_len += 3)
        for (int int8 = 0; int8 < 2; int8++)
            for (int page = 0; page <= 16; page += 16) {
                const attn_problem p = {.batch = 4, .q_heads = 32, .kv_heads = 8,
                                        .head_dim = dim, .q_len = q_len, .kv_len = 16384,
                                        .dtype = dt, .causal = 1};
                attn_params pr = attn_decode_params_heuristic(dev, &p);
                if (page) attn_plan_fit_page(&pr, page);
                /* the fields attn_kv_cache_options reads */
                const attn_kv_cache c = {.storage = int8 ? ATTN_KV_INT8 : ATTN_KV_AS_DTYPE,
                                         .dim_pad = attn_kv_dim_pad(dim), .paged = page > 0,
                                         .page_rows = page};
                char cache[96] = "", label[64];
                attn_kv_cache_options(&c, cache, sizeof cache);
                snprintf(label, sizeof label, "decode,%s,d%d,q%d,%s,%s", attn_dtype_name(dt), dim,
                         q_len, int8 ? "int8" : "kv-as-dtype", page ? "paged16" : "contiguous");
                print_program(label, &pr, &p, ATTN_ENTRY_DECODE, cache);
                /* f32 on mma in one forced split: chunks past 4096 keys,
                 * built with MMA_FOLD (automatic splits of blocks of at
                 * most ATTN_DECODE_MAX_Q_LEN queries never are; a longer
                 * block folds, as this program does) */
                if (pr.family == ATTN_FAMILY_MMA && dt == ATTN_F32 && !int8 && !page) {
                    pr.kv_splits = 1;
                    strcat(label, ",splits=1");
                    print_program(label, &pr, &p, ATTN_ENTRY_DECODE, cache);
                }
            }
}

int main(int argc, char **argv)
{
    int arg = 1;
    static const struct {
        const char *flag;
        const attn_device_limits *dev;
    } others[] = {{"--amd", &amd}, {"--intel", &intel}, {"--intel-pvc", &intel_pvc}};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (arg < argc && strcmp(argv[arg], others[i].flag) == 0) {
            dev = others[i].dev;
            arg++;
            break;
        }
    /* --local-limit: the __local bytes a work-group may take on those
     * limits, for a check that compares a compiler's figure with them */
    if (argc - arg == 1 && strcmp(argv[arg], "--local-limit") == 0) {
        printf("%llu\n", (unsigned long long)dev->local_mem);
        return 0;
    }
    if (argc - arg > 1 || (arg < argc && dev != &h200) || (arg < argc && argv[arg][0] == '-')) {
        fprintf(stderr, "usage: gpu-programs [SETS] | gpu-programs --amd | --intel | "
                "--intel-pvc\n       gpu-programs [--amd | --intel | --intel-pvc] "
                "--local-limit\n");
        return 2;
    }
    if (arg < argc) read_sets(argv[arg]);
    const attn_dtype types[] = {ATTN_F32, ATTN_F16, ATTN_BF16};
    for (int t = 0; t < 3; t++)
        for (int dim = 64; dim <= 256; dim *= 2) {
            prefill(types[t], dim);
            decode(types[t], dim);
        }
    /* mma_check.c's two programs */
    for (int tf32 = 0; tf32 < 2 && dev->mma; tf32++)
        printf("mma_check,%s\tattn_mma_check\tmma_ops.cl mma_check.cl\t"
               "-cl-std=CL1.2 -DMMA_CHECK_TF32=%d -DMMA_PTX=1 -DATTN_GPU=1\n", tf32 ? "tf32" : "16-bit", tf32);
    return 0;
}
