/* fuzz_kv_pool.c -- a KV cache's sequences and memory (attn_kv_cache_create_desc,
 * _append_rows, _seq_add, _seq_remove, _seq_fork, _truncate, _reset, _read,
 * _pool) driven by a sequence of operations decoded from the input, against
 * a host model of every sequence's contents and of the pool.
 *
 * A small cache, paged (blocks of 16, 32 or 64 tokens, a fuzzed pool that
 * is often too small) or contiguous, of any dtype; then up to 16
 * operations with fuzzed sequences, counts and starts, valid or not. The
 * model keeps each sequence's rows (small integers, exact in every dtype)
 * and its own block table with reference counts and copy on write, as the
 * API's comments define them. After every call: the call succeeded exactly
 * when the model says it is valid (an exhausted pool is
 * ATTN_ERROR_OUT_OF_MEMORY, other refusals ATTN_ERROR_INVALID_ARGUMENT, and
 * a refused call changes nothing), every sequence reads back what the model
 * holds, and the free blocks equal the model's (no block lost or leaked). */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAXB = 4, MAXH = 2, MAXD = 8, MAXCAP = 80, MAXPAGES = MAXB * 5, MAX_OPS = 16,
       MAXBLOCK = 64 };

static unsigned long n_ok, n_bad, n_oom;

static void print_counts(void)
{
    fprintf(stderr, "fuzz_kv_pool: %lu calls accepted, %lu refused (%lu for the pool)\n\n",
            n_ok, n_bad, n_oom);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    atexit(print_counts);
    /* build the append copy now: a build inside a run allocates past
     * -malloc_limit_mb (PoCL's binaries) */
    attn_context *ctx = fuzz_context();
    for (int t = ATTN_F32; t <= ATTN_BF16; t++) {
        attn_kv_cache *c;
        float x[4] = {1, 2, 3, 4};
        cl_int err;
        cl_mem m = clCreateBuffer(attn_context_cl_context(ctx),
                                  CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof x, x, &err);
        attn_tensor k = {m, 0, 2, 2, 1};
        attn_status st = attn_kv_cache_create(ctx, 1, 1, 1, 8, (attn_dtype)t, &c);
        if (st == ATTN_SUCCESS) st = attn_kv_cache_append(c, &k, &k, 1, NULL, NULL);
        if (st != ATTN_SUCCESS || err != CL_SUCCESS)
            fuzz_fail("building the append: %s", attn_last_error(ctx));
        clFinish(attn_context_queue(ctx));
        attn_kv_cache_release(c);
        clReleaseMemObject(m);
    }
    return 0;
}

/* ---- the model ---- */

typedef struct model {
    attn_context *ctx;
    attn_kv_cache *cache;
    int batch, heads, dim, cap, block; /* block 0: contiguous */
    attn_dtype dtype;
    int pages, max_pages;
    int len[MAXB], taken[MAXB];
    float rows[MAXB][MAXCAP][MAXH][MAXD];
    /* paged: the model's own pages (ids need not match the cache's) */
    int table[MAXB][MAXCAP], refs[MAXPAGES], free_pages;
    int append_failed;
} model;

static void expect(model *m, attn_status st, attn_status want, const char *what)
{
    const char *msg = attn_last_error(m->ctx);
    if (st != want)
        fuzz_fail("%s: %s by the model, but %s: \"%s\"", what, attn_status_name(want),
                  attn_status_name(st), st == ATTN_SUCCESS ? "" : msg);
    if (st != ATTN_SUCCESS && !msg[0]) fuzz_fail("%s: %s without a message", what,
                                                 attn_status_name(st));
    st == ATTN_SUCCESS ? n_ok++ : n_bad++;
    if (st == ATTN_ERROR_OUT_OF_MEMORY) n_oom++;
}

static int pages_of(const model *m, int b) { return (m->len[b] + m->block - 1) / m->block; }

static int take(model *m)
{
    for (int p = 0; p < m->pages; p++)
        if (m->refs[p] == 0) {
            m->refs[p] = 1;
            m->free_pages--;
            return p;
        }
    fuzz_fail("the model ran out of pages");
}

static void drop(model *m, int p)
{
    if (--m->refs[p] == 0) m->free_pages++;
}

static void shrink(model *m, int b, int length)
{
    if (!m->block) return;
    for (int i = (length + m->block - 1) / m->block; i < pages_of(m, b); i++) drop(m, m->table[b][i]);
}

/* Every sequence reads back as the model holds it, the lengths and the
 * free blocks match. */
static void check(model *m, const char *after)
{
    int lens[MAXB], fr = -1, total = -1;
    if (attn_kv_cache_lengths(m->cache, lens) != ATTN_SUCCESS ||
        attn_kv_cache_pool(m->cache, &fr, &total) != ATTN_SUCCESS)
        fuzz_fail("after %s: lengths or pool failed", after);
    if (m->block && (fr != m->free_pages || total != m->pages))
        fuzz_fail("after %s: %d of %d blocks free, the model %d of %d", after, fr, total,
                  m->free_pages, m->pages);
    const size_t es = attn_dtype_size(m->dtype);
    for (int b = 0; b < m->batch; b++) {
        if (lens[b] != m->len[b])
            fuzz_fail("after %s: sequence %d has %d tokens, the model %d", after, b, lens[b],
                      m->len[b]);
        const size_t n = (size_t)m->heads * m->len[b] * m->dim;
        if (!n) continue;
        unsigned char *raw = malloc(2 * n * es);
        float *f = malloc(2 * n * sizeof *f);
        if (!raw || !f) fuzz_fail("out of memory");
        if (attn_kv_cache_read(m->cache, b, 0, m->len[b], raw, raw + n * es) != ATTN_SUCCESS ||
            attn_convert_to_f32(m->dtype, raw, f, 2 * n) != ATTN_SUCCESS)
            fuzz_fail("after %s: reading sequence %d: %s", after, b, attn_last_error(m->ctx));
        for (int kv = 0; kv < 2; kv++)
            for (int h = 0; h < m->heads; h++)
                for (int t = 0; t < m->len[b]; t++)
                    for (int d = 0; d < m->dim; d++) {
                        const float got = f[kv * n + ((size_t)h * m->len[b] + t) * m->dim + d];
                        const float want = m->rows[b][t][h][d] + (kv ? 0.5f : 0.0f);
                        if (got != want)
                            fuzz_fail("after %s: sequence %d %s token %d head %d [%d] = %g, the "
                                      "model %g", after, b, kv ? "V" : "K", t, h, d, got, want);
                    }
        free(raw), free(f);
    }
}

/* ---- operations ---- */

static void op_append(model *m, fuzz_reader *r, int salt)
{
    const int block = fuzz_int(r, 0, 24);
    int counts[MAXB], starts[MAXB];
    for (int b = 0; b < m->batch; b++) {
        counts[b] = fuzz_int(r, 0, 24);
        starts[b] = fuzz_int(r, 0, 8);
    }
    /* the model: the block's rows, then the capacity, then the pool */
    attn_status want = block < 0 || block > (1 << 30) ? ATTN_ERROR_INVALID_ARGUMENT : ATTN_SUCCESS;
    int need = 0, released[MAXPAGES] = {0}, most = 0;
    for (int b = 0; b < m->batch && want == ATTN_SUCCESS; b++) {
        if (counts[b] < 0 || counts[b] > block || starts[b] < 0 ||
            (long long)starts[b] > (long long)block - counts[b])
            want = ATTN_ERROR_INVALID_ARGUMENT;
        if (counts[b] > most) most = counts[b];
    }
    for (int b = 0; b < m->batch && want == ATTN_SUCCESS; b++)
        if (counts[b] > m->cap - m->len[b]) want = ATTN_ERROR_INVALID_ARGUMENT;
    /* a block past MAXBLOCK gets a source of one row: it cannot hold the
     * rows taken, which validation finds before the pool */
    const int big = block > MAXBLOCK, rows = big || block < 1 ? 1 : block;
    if (want == ATTN_SUCCESS && big && most > 0) want = ATTN_ERROR_INVALID_ARGUMENT;
    for (int b = 0; b < m->batch && want == ATTN_SUCCESS && m->block; b++) {
        if (!counts[b]) continue;
        const int have = pages_of(m, b), last = have ? m->table[b][have - 1] : -1;
        const int cow = m->len[b] % m->block && m->refs[last] - released[last] > 1;
        if (cow) released[last]++;
        need += (m->len[b] + counts[b] + m->block - 1) / m->block - have + cow;
        if (need > m->free_pages) want = ATTN_ERROR_OUT_OF_MEMORY;
    }
    /* the source [batch][heads][block][dim], K then V, values no other
     * append gives (exact in every dtype) */
    const size_t n = (size_t)m->batch * m->heads * rows * m->dim;
    float *x = malloc(2 * n * sizeof *x);
    unsigned char *raw = malloc(2 * n * attn_dtype_size(m->dtype));
    if (!x || !raw) fuzz_fail("out of memory");
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)((int)((i * 7 + (size_t)salt * 13) % 241) - 120);
        x[n + i] = x[i] + 0.5f;
    }
    attn_convert_from_f32(m->dtype, x, raw, 2 * n);
    cl_int err;
    cl_mem buf = clCreateBuffer(attn_context_cl_context(m->ctx),
                                CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                2 * n * attn_dtype_size(m->dtype), raw, &err);
    if (err != CL_SUCCESS) fuzz_fail("clCreateBuffer");
    const size_t sh = (size_t)rows * m->dim;
    attn_tensor tk = {buf, 0, (size_t)m->heads * sh, sh, (size_t)m->dim}, tv = tk;
    tv.offset = n;
    attn_status st = attn_kv_cache_append_rows(m->cache, &tk, &tv, block, starts, counts, NULL);
    expect(m, st, want, "append");
    /* a success of no rows leaves the refusal as it was */
    if (st != ATTN_SUCCESS) m->append_failed = 1;
    else if (most > 0) m->append_failed = 0;
    if (st == ATTN_SUCCESS) {
        for (int b = 0; b < m->batch; b++) {
            if (!counts[b]) continue;
            if (m->block) { /* copy on write, then new pages */
                const int have = pages_of(m, b);
                if (m->len[b] % m->block && m->refs[m->table[b][have - 1]] > 1) {
                    drop(m, m->table[b][have - 1]);
                    m->table[b][have - 1] = take(m);
                }
                const int to = (m->len[b] + counts[b] + m->block - 1) / m->block;
                for (int i = have; i < to; i++) m->table[b][i] = take(m);
            }
            for (int t = 0; t < counts[b]; t++)
                for (int h = 0; h < m->heads; h++)
                    for (int d = 0; d < m->dim; d++)
                        m->rows[b][m->len[b] + t][h][d] =
                            x[(((size_t)b * m->heads + h) * rows + starts[b] + t) * m->dim + d];
            m->len[b] += counts[b];
        }
    }
    clReleaseMemObject(buf);
    free(x), free(raw);
}

static void op_fork(model *m, fuzz_reader *r)
{
    const int src = fuzz_int(r, -1, MAXB), dst = fuzz_int(r, -1, MAXB);
    const int valid = src >= 0 && src < m->batch && dst >= 0 && dst < m->batch && src != dst &&
                      m->len[dst] == 0 && !m->append_failed;
    expect(m, attn_kv_cache_seq_fork(m->cache, src, dst),
           valid ? ATTN_SUCCESS : ATTN_ERROR_INVALID_ARGUMENT, "fork");
    if (!valid) return;
    for (int i = 0; m->block && i < pages_of(m, src); i++) {
        m->table[dst][i] = m->table[src][i];
        m->refs[m->table[src][i]]++;
    }
    memcpy(m->rows[dst], m->rows[src], sizeof m->rows[src]);
    m->len[dst] = m->len[src];
    m->taken[dst] = 1;
}

static void op_shorten(model *m, fuzz_reader *r)
{
    const uint8_t kind = fuzz_u8(r) % 3;
    const int seq = fuzz_int(r, -2, MAXB), in = seq >= 0 && seq < m->batch;
    attn_status st;
    int length = 0, valid = in;
    if (kind == 0) {
        length = fuzz_int(r, -1, MAXCAP);
        valid = in && length >= 0 && length <= m->len[seq];
        st = attn_kv_cache_truncate(m->cache, seq, length);
    } else if (kind == 1) {
        valid = in || seq == -1;
        st = attn_kv_cache_reset(m->cache, seq);
    } else {
        st = attn_kv_cache_seq_remove(m->cache, seq);
    }
    expect(m, st, valid ? ATTN_SUCCESS : ATTN_ERROR_INVALID_ARGUMENT,
           kind == 0 ? "truncate" : kind == 1 ? "reset" : "remove");
    for (int b = 0; valid && b < m->batch; b++)
        if (b == seq || seq == -1) {
            shrink(m, b, length);
            m->len[b] = length;
            if (kind == 2) m->taken[b] = 0;
        }
}

static void op_add_or_read(model *m, fuzz_reader *r)
{
    if (fuzz_u8(r) & 1) {
        int want = -1, got = -1;
        for (int b = m->batch - 1; b >= 0; b--)
            if (!m->taken[b] && m->len[b] == 0) want = b;
        expect(m, attn_kv_cache_seq_add(m->cache, &got),
               want >= 0 ? ATTN_SUCCESS : ATTN_ERROR_OUT_OF_MEMORY, "add");
        if (want >= 0 && got != want) fuzz_fail("add: slot %d, the model %d", got, want);
        if (want >= 0) m->taken[want] = 1;
        return;
    }
    const int seq = fuzz_int(r, -1, MAXB), first = fuzz_int(r, -1, MAXCAP);
    const int count = fuzz_int(r, -1, MAXCAP);
    const int valid = seq >= 0 && seq < m->batch && first >= 0 && count >= 0 &&
                      (long long)first + count <= m->len[seq];
    unsigned short scratch[2 * MAXCAP * MAXH * MAXD * 2];
    expect(m, attn_kv_cache_read(m->cache, seq, first, count, scratch, NULL),
           valid ? ATTN_SUCCESS : ATTN_ERROR_INVALID_ARGUMENT, "read");
}

/* ---- one input ---- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_reader r = {data, size};
    model *m = calloc(1, sizeof *m);
    if (!m) fuzz_fail("out of memory");
    m->ctx = fuzz_context();
    m->batch = 1 + fuzz_u8(&r) % MAXB;
    m->heads = 1 + fuzz_u8(&r) % MAXH;
    m->dim = 1 + fuzz_u8(&r) % MAXD;
    m->cap = 1 + fuzz_u8(&r) % MAXCAP;
    m->dtype = (attn_dtype)(fuzz_u8(&r) % 3);
    const int blocks[4] = {0, 16, 32, 64};
    m->block = blocks[fuzz_u8(&r) % 4];
    m->max_pages = m->block ? (m->cap + m->block - 1) / m->block : 1;
    const int pool = m->block ? fuzz_u8(&r) % (m->batch * m->max_pages + 1) : 0;
    m->pages = m->block ? (pool ? pool : m->batch * m->max_pages) : m->batch;
    m->free_pages = m->pages;
    const attn_kv_cache_desc d = {.batch = m->batch, .kv_heads = m->heads, .head_dim = m->dim,
                                  .capacity = m->cap, .dtype = m->dtype,
                                  .block_size = m->block, .num_blocks = pool};
    if (attn_kv_cache_create_desc(m->ctx, &d, &m->cache) != ATTN_SUCCESS)
        fuzz_fail("create: %s", attn_last_error(m->ctx));
    check(m, "create");
    for (int i = 0; i < MAX_OPS && r.n > 0; i++) {
        const char *what;
        switch (fuzz_u8(&r) % 4) {
        case 0: op_append(m, &r, i), what = "append"; break;
        case 1: op_fork(m, &r), what = "fork"; break;
        case 2: op_shorten(m, &r), what = "truncate/reset/remove"; break;
        default: op_add_or_read(m, &r), what = "add/read"; break;
        }
        check(m, what);
    }
    /* emptied, every block is back */
    for (int b = 0; b < m->batch; b++) attn_kv_cache_seq_remove(m->cache, b);
    int fr = -1;
    attn_kv_cache_pool(m->cache, &fr, NULL);
    if (m->block && fr != m->pages) fuzz_fail("emptied: %d of %d blocks free", fr, m->pages);
    attn_kv_cache_release(m->cache);
    free(m);
    return 0;
}
