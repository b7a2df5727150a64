/* ab_call.c -- times two builds of libattn.so call by call in one process,
 * for tools/dev/ab-builds.py (which compiles and runs it; see there).
 *
 * usage: ab_call LIB_A LIB_B decode|prefill f32|f16|bf16 KV_LEN Q_LEN PAIRS
 *                [BATCH Q_HEADS KV_HEADS HEAD_DIM]
 * LIB may end in @FOLDER: that library's context reads its kernel sources
 * from FOLDER (ATTN_KERNEL_DIR at its creation), to time a kernel edit
 * against the same library without it. Each library gets its own context,
 * buffers and (decode) KV cache; after a warm-up the calls alternate
 * A B, B A, ..., each timed to clFinish. Prints the median of the per-pair
 * ratios t_A / t_B (B's speed over A's) with its quartiles, and each
 * library's median and fastest time. Not part of the build. */
#define _GNU_SOURCE /* setenv in a tool that configures each library before its context */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include "attn.h"

typedef struct {
    void *so;
    attn_context *ctx;
    attn_kv_cache *cache;
    attn_problem p;
    attn_tensor q, k, v, o;
    cl_command_queue queue;
    attn_status (*context_create)(const char *, attn_context **);
    cl_context (*cl_context_of)(const attn_context *);
    cl_command_queue (*queue_of)(const attn_context *);
    attn_status (*cache_create)(attn_context *, int, int, int, int, attn_dtype, attn_kv_cache **);
    attn_status (*cache_append)(attn_kv_cache *, const attn_tensor *, const attn_tensor *, int,
                                const int *, cl_event *);
    attn_status (*decode)(attn_context *, attn_kv_cache *, const attn_problem *, const attn_tensor *,
                          const attn_tensor *, const int *, cl_mem, cl_event *);
    attn_status (*forward)(attn_context *, const attn_problem *, const attn_tensor *,
                           const attn_tensor *, const attn_tensor *, const attn_tensor *,
                           const attn_lengths *, cl_mem, cl_event *);
    const char *(*last_error)(const attn_context *);
    attn_status (*convert)(attn_dtype, const float *, void *, size_t);
} build;

static void die(const char *what, const char *why)
{
    fprintf(stderr, "ab_call: %s: %s\n", what, why);
    exit(1);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static void *symbol(build *b, const char *lib, const char *name)
{
    void *f = dlsym(b->so, name);
    if (!f) die(lib, name);
    return f;
}

/* A [batch, heads, seq, head_dim] tensor of small random values, stored
 * in the problem's type by the library's own conversion. */
static attn_tensor random_tensor(build *b, const attn_problem *p, int heads, int seq)
{
    const size_t n = (size_t)p->batch * heads * seq * p->head_dim;
    float *f = malloc(n * sizeof *f);
    void *raw = malloc(n * sizeof(float));
    if (!f || !raw) die("tensor", "out of memory");
    for (size_t i = 0; i < n; i++) f[i] = (float)rand() / RAND_MAX - 0.5f;
    if (b->convert(p->dtype, f, raw, n) != ATTN_SUCCESS) die("attn_convert_from_f32", "failed");
    cl_int err;
    cl_mem m = clCreateBuffer(b->cl_context_of(b->ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              n * (p->dtype == ATTN_F32 ? 4 : 2), raw, &err);
    free(f);
    free(raw);
    if (err != CL_SUCCESS) die("clCreateBuffer", "failed");
    const attn_tensor t = {m, 0, (size_t)heads * seq * p->head_dim, (size_t)seq * p->head_dim,
                           (size_t)p->head_dim};
    return t;
}

static void set_up(build *b, const char *arg, const attn_problem *p, int decode)
{
    char lib[4096];
    snprintf(lib, sizeof lib, "%s", arg);
    char *at = strchr(lib, '@');
    if (at) {
        *at = '\0';
        setenv("ATTN_KERNEL_DIR", at + 1, 1);
    } else {
        unsetenv("ATTN_KERNEL_DIR");
    }
    b->so = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!b->so) die(lib, dlerror());
    *(void **)&b->context_create = symbol(b, lib, "attn_context_create");
    *(void **)&b->cl_context_of = symbol(b, lib, "attn_context_cl_context");
    *(void **)&b->queue_of = symbol(b, lib, "attn_context_queue");
    *(void **)&b->cache_create = symbol(b, lib, "attn_kv_cache_create");
    *(void **)&b->cache_append = symbol(b, lib, "attn_kv_cache_append");
    *(void **)&b->decode = symbol(b, lib, "attn_decode");
    *(void **)&b->forward = symbol(b, lib, "attn_forward");
    *(void **)&b->last_error = symbol(b, lib, "attn_last_error");
    *(void **)&b->convert = symbol(b, lib, "attn_convert_from_f32");
    if (b->context_create(NULL, &b->ctx) != ATTN_SUCCESS) die(lib, "no context");
    unsetenv("ATTN_KERNEL_DIR");
    b->queue = b->queue_of(b->ctx);
    b->p = *p;
    b->q = random_tensor(b, p, p->q_heads, p->q_len);
    b->o = random_tensor(b, p, p->q_heads, p->q_len);
    b->k = random_tensor(b, p, p->kv_heads, p->kv_len);
    b->v = random_tensor(b, p, p->kv_heads, p->kv_len);
    if (decode && (b->cache_create(b->ctx, p->batch, p->kv_heads, p->head_dim, p->kv_len, p->dtype,
                                   &b->cache) != ATTN_SUCCESS ||
                   b->cache_append(b->cache, &b->k, &b->v, p->kv_len, NULL, NULL) != ATTN_SUCCESS))
        die(lib, b->last_error(b->ctx));
}

static double timed_call(build *b, int decode)
{
    const double t = now();
    const attn_status s = decode ? b->decode(b->ctx, b->cache, &b->p, &b->q, &b->o, NULL, NULL, NULL)
                                 : b->forward(b->ctx, &b->p, &b->q, &b->k, &b->v, &b->o, NULL, NULL,
                                              NULL);
    clFinish(b->queue);
    if (s != ATTN_SUCCESS) die("call", b->last_error(b->ctx));
    return now() - t;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc != 8 && argc != 12) {
        fprintf(stderr, "usage: ab_call LIB_A LIB_B decode|prefill f32|f16|bf16 KV_LEN Q_LEN PAIRS"
                        " [BATCH Q_HEADS KV_HEADS HEAD_DIM]\n");
        return 2;
    }
    const int decode = !strcmp(argv[3], "decode");
    attn_problem p = {.batch = 4, .q_heads = 32, .kv_heads = 8, .head_dim = 128,
                      .q_len = atoi(argv[6]), .kv_len = atoi(argv[5]), .dtype = ATTN_F32,
                      .causal = 1, .scale = 0.0f};
    if (!strcmp(argv[4], "f16")) p.dtype = ATTN_F16;
    if (!strcmp(argv[4], "bf16")) p.dtype = ATTN_BF16;
    const int pairs = atoi(argv[7]);
    if (argc == 12) {
        p.batch = atoi(argv[8]);
        p.q_heads = atoi(argv[9]);
        p.kv_heads = atoi(argv[10]);
        p.head_dim = atoi(argv[11]);
    }
    if (pairs < 4) die("PAIRS", "at least 4");
    static build a, b;
    set_up(&a, argv[1], &p, decode);
    set_up(&b, argv[2], &p, decode);
    for (int i = 0; i < 3; i++) { /* warm-up: programs built, caches filled */
        timed_call(&a, decode);
        timed_call(&b, decode);
    }
    double *ratio = malloc(3 * sizeof(double) * pairs);
    if (!ratio) die("pairs", "out of memory");
    double *ta = ratio + pairs, *tb = ta + pairs;
    for (int i = 0; i < pairs; i++) {
        if (i & 1) {
            tb[i] = timed_call(&b, decode);
            ta[i] = timed_call(&a, decode);
        } else {
            ta[i] = timed_call(&a, decode);
            tb[i] = timed_call(&b, decode);
        }
        ratio[i] = ta[i] / tb[i];
    }
    qsort(ratio, pairs, sizeof *ratio, by_value);
    qsort(ta, pairs, sizeof *ta, by_value);
    qsort(tb, pairs, sizeof *tb, by_value);
    printf("%s %s kv_len %s q_len %s: B/A speed median %.3f [q1 %.3f q3 %.3f]"
           "  A median %.3f ms fastest %.3f  B median %.3f ms fastest %.3f\n",
           argv[3], argv[4], argv[5], argv[6], ratio[pairs / 2], ratio[pairs / 4],
           ratio[3 * pairs / 4], ta[pairs / 2] * 1e3, ta[0] * 1e3, tb[pairs / 2] * 1e3, tb[0] * 1e3);
    free(ratio);
    return 0;
}
