/* fuzz_kv_cache.c -- the KV cache API (attn_kv_cache_create, _append,
 * _append_rows, _lengths, _truncate, _reset, _tensors and attn_decode) driven by a
 * sequence of operations decoded from the input, against small real
 * buffers on the shared fuzz context.
 *
 * Create takes fuzzed sizes and dtype: out-of-range ones must be
 * ATTN_ERROR_INVALID_ARGUMENT with a message and no cache; valid ones are
 * only tried when the cache is small (a few KiB), and must succeed. Then up
 * to 12 operations: appends of fuzzed blocks (block_len, counts negative or
 * past the capacity, starts of attn_kv_cache_append_rows negative or past
 * the block) from small source tensors with fuzzed strides and
 * offsets, truncates and resets of fuzzed sequences and lengths, and
 * decodes of a small problem (consistent with the cache or not; only for
 * head dims 4 and 8 and capacity <= 40, so kernels stay cheap and few).
 * The target keeps its own model of each sequence's length: after every
 * call attn_kv_cache_lengths must match it (a rejected call changes
 * nothing), a call the model says is invalid must be rejected, and one it
 * says is valid (with tensors known to fit) must succeed. What an append's
 * validation accepts is checked independently with fuzz_tensor_walk. */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NSRC = 3, MAXB = 8, MAX_CACHE_BYTES = 16384, DEC_BYTES = 8192, MAX_OPS = 12 };
static const size_t src_bytes[NSRC] = {2, 512, 4096};
static cl_mem src[NSRC], qbuf, obuf, lsebuf;

static unsigned long n_create_bad, n_create_ok, n_ops_ok, n_ops_bad, n_decodes;

static void print_counts(void)
{
    fprintf(stderr, "fuzz_kv_cache: %lu rejected, %lu accepted (caches %lu rejected, %lu made; "
            "%lu operations accepted, %lu rejected; %lu decodes run)\n\n",
            n_create_bad + n_ops_bad, n_create_ok + n_ops_ok, n_create_bad, n_create_ok,
            n_ops_ok, n_ops_bad, n_decodes);
}

static cl_mem make_buffer(attn_context *ctx, size_t bytes)
{
    cl_int err;
    cl_mem m = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS) fuzz_fail("clCreateBuffer: %d", err);
    /* zeros: decode then reads finite values whatever was appended */
    const unsigned char zero = 0;
    if (clEnqueueFillBuffer(attn_context_queue(ctx), m, &zero, 1, 0, bytes, 0, NULL, NULL) ||
        clFinish(attn_context_queue(ctx)))
        fuzz_fail("clEnqueueFillBuffer");
    return m;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    attn_context *ctx = fuzz_context();
    atexit(print_counts);
    for (int i = 0; i < NSRC; i++) src[i] = make_buffer(ctx, src_bytes[i]);
    qbuf = make_buffer(ctx, DEC_BYTES);
    obuf = make_buffer(ctx, DEC_BYTES);
    lsebuf = make_buffer(ctx, DEC_BYTES);
    /* build now what a run may launch (the append copy, decode for head
     * dims 4 and 8, groups 1..3, q_len 1..4): builds allocate far more
     * than -malloc_limit_mb allows inside a run */
    for (int d = 4; d <= 8; d += 4)
        for (int t = ATTN_F32; t <= ATTN_BF16; t++) {
            attn_kv_cache *c;
            attn_status st = attn_kv_cache_create(ctx, 1, 1, d, 8, (attn_dtype)t, &c);
            attn_tensor k = {src[2], 0, 8 * (size_t)d, 8 * (size_t)d, (size_t)d};
            if (st == ATTN_SUCCESS) st = attn_kv_cache_append(c, &k, &k, 4, NULL, NULL);
            for (int causal = 0; causal < 2 && st == ATTN_SUCCESS; causal++)
                for (int g = 1; g <= 3 && st == ATTN_SUCCESS; g++)
                    for (int ql = 1; ql <= 4 && st == ATTN_SUCCESS; ql++) {
                        attn_problem p = {.batch = 1, .q_heads = g, .kv_heads = 1, .head_dim = d,
                                          .q_len = ql, .kv_len = 8, .dtype = (attn_dtype)t,
                                          .causal = causal, .scale = 0.0f};
                        st = attn_decode_prepare(ctx, c, &p, NULL);
                    }
            if (st != ATTN_SUCCESS)
                fuzz_fail("building D=%d %s: %s: %s", d, attn_dtype_name((attn_dtype)t),
                          attn_status_name(st), attn_last_error(ctx));
            clFinish(attn_context_queue(ctx));
            attn_kv_cache_release(c);
        }
    return 0;
}

/* ---- the model ---- */

typedef struct model {
    attn_context *ctx;
    attn_kv_cache *cache;
    int batch, kv_heads, head_dim, capacity;
    attn_dtype dtype;
    int len[MAXB];
    int append_failed; /* an append failed: decode refuses until one that adds rows succeeds */
} model;

static void expect(model *m, attn_status st, int valid, const char *what)
{
    const char *msg = attn_last_error(m->ctx);
    if (valid && st != ATTN_SUCCESS)
        fuzz_fail("%s: valid by the model, but %s: \"%s\"", what, attn_status_name(st), msg);
    if (!valid && st == ATTN_SUCCESS) fuzz_fail("%s: invalid by the model, but accepted", what);
    if (st != ATTN_SUCCESS && (st != ATTN_ERROR_INVALID_ARGUMENT || !msg[0]))
        fuzz_fail("%s: %s with message \"%s\"", what, attn_status_name(st), msg);
    st == ATTN_SUCCESS ? n_ops_ok++ : n_ops_bad++;
}

static void check_lengths(model *m, const char *after)
{
    int *got = malloc(sizeof *got * (size_t)m->batch); /* exactly batch: an overrun is ASan's */
    if (!got) fuzz_fail("out of memory");
    attn_status st = attn_kv_cache_lengths(m->cache, got);
    if (st != ATTN_SUCCESS) fuzz_fail("attn_kv_cache_lengths: %s", attn_status_name(st));
    for (int b = 0; b < m->batch; b++)
        if (got[b] != m->len[b])
            fuzz_fail("after %s: sequence %d has length %d, the model %d", after, b, got[b],
                      m->len[b]);
    free(got);
}

/* ---- operations ---- */

/* NULL, or a tensor [batch, kv_heads, block, head_dim] in a source buffer
 * (or no buffer, or the cache's own K), packed with some padding or with
 * arbitrary strides. */
static const attn_tensor *read_src_tensor(fuzz_reader *r, const model *m, int block,
                                          attn_tensor *t)
{
    uint8_t mode = fuzz_u8(r);
    if (mode == 255) return NULL;
    uint8_t sel = fuzz_u8(r) % (NSRC + 3);
    if (sel < NSRC) t->buffer = src[sel];
    else if (sel == NSRC) t->buffer = NULL;
    else if (sel == NSRC + 1) attn_kv_cache_tensors(m->cache, t, NULL); /* the cache's own K */
    else t->buffer = src[NSRC - 1];
    if (mode & 1) {
        size_t row = (size_t)m->head_dim + fuzz_u8(r) % 3;
        t->stride_seq = row;
        t->stride_head = ((size_t)block + fuzz_u8(r) % 2) * row;
        t->stride_batch = (size_t)m->kv_heads * t->stride_head;
        t->offset = fuzz_u8(r) % 8;
    } else {
        t->offset = fuzz_size(r, 64);
        t->stride_batch = fuzz_size(r, 1024);
        t->stride_head = fuzz_size(r, 256);
        t->stride_seq = fuzz_size(r, 32);
    }
    return t;
}

static int src_index(cl_mem b)
{
    for (int i = 0; i < NSRC; i++)
        if (src[i] == b) return i;
    return -1;
}

static void op_append(model *m, fuzz_reader *r)
{
    const int block = fuzz_int(r, -1, 12);
    /* bit 0: counts given; bit 1: starts given; bit 2: append_rows even
     * without starts */
    const uint8_t arrays = fuzz_u8(r);
    int *counts = NULL, *starts = NULL;
    if (arrays & 1) {
        counts = malloc(sizeof *counts * (size_t)m->batch);
        if (!counts) fuzz_fail("out of memory");
        for (int b = 0; b < m->batch; b++) counts[b] = fuzz_int(r, -1, 12);
    }
    if (arrays & 2) {
        starts = malloc(sizeof *starts * (size_t)m->batch);
        if (!starts) fuzz_fail("out of memory");
        for (int b = 0; b < m->batch; b++) starts[b] = fuzz_int(r, -2, 12);
    }
    attn_tensor tk, tv;
    const attn_tensor *k = read_src_tensor(r, m, block, &tk);
    const attn_tensor *v = fuzz_u8(r) % 8 == 0 ? k : read_src_tensor(r, m, block, &tv);
    const int want_event = fuzz_u8(r) & 1;

    /* what the model says: starts, counts and capacity decide; the tensors
     * matter only when some sequence takes rows */
    int sizes_ok = block >= 0 && block <= (1 << 30), most = 0;
    for (int b = 0; sizes_ok && b < m->batch; b++) {
        const int n = counts ? counts[b] : block, s = starts ? starts[b] : 0;
        if (n < 0 || n > block || s < 0 || s > block - n || n > m->capacity - m->len[b])
            sizes_ok = 0;
        else if (n > most) most = n;
    }
    cl_event done = (cl_event)1;
    attn_status st =
        starts || (arrays & 4)
            ? attn_kv_cache_append_rows(m->cache, k, v, block, starts, counts,
                                        want_event ? &done : NULL)
            : attn_kv_cache_append(m->cache, k, v, block, counts, want_event ? &done : NULL);
    if (!sizes_ok || most == 0) {
        expect(m, st, sizes_ok, "append");
    } else if (st != ATTN_SUCCESS) {
        expect(m, st, 0, "append (tensors)");
    } else {
        n_ops_ok++;
        /* accepted: each tensor lies inside a source buffer, each batch entry's
         * elements reached once (entries may share them: append only reads) */
        static unsigned char marks[4096];
        const attn_tensor *ts[2] = {k, v};
        const size_t es = attn_dtype_size(m->dtype);
        for (int i = 0; i < 2; i++) {
            int bi = ts[i] ? src_index(ts[i]->buffer) : -1;
            if (bi < 0) fuzz_fail("append accepted tensor %d without a source buffer", i);
            memset(marks, 0, sizeof marks);
            int w = fuzz_input_walk(ts[i], m->batch, m->kv_heads, block, m->head_dim,
                                    src_bytes[bi] / es, marks, 1);
            if (w == -1) fuzz_fail("append accepted tensor %d past its buffer", i);
            if (w == -2) fuzz_fail("append accepted tensor %d with overlapping elements", i);
        }
    }
    /* a success of no rows leaves the refusal as it was */
    if (st != ATTN_SUCCESS) m->append_failed = 1;
    else if (most > 0) m->append_failed = 0;
    if (st == ATTN_SUCCESS) {
        for (int b = 0; b < m->batch; b++) m->len[b] += counts ? counts[b] : block;
        if (want_event) {
            if (!done || done == (cl_event)1) fuzz_fail("append gave no event");
            clReleaseEvent(done);
        }
    } else if (want_event && done != NULL) {
        fuzz_fail("a rejected append left an event");
    }
    free(counts), free(starts);
    check_lengths(m, "append");
}

static void op_truncate(model *m, fuzz_reader *r)
{
    const int seq = fuzz_int(r, -1, 4), length = fuzz_int(r, -1, 41);
    const int valid = seq >= 0 && seq < m->batch && length >= 0 && length <= m->len[seq];
    expect(m, attn_kv_cache_truncate(m->cache, seq, length), valid, "truncate");
    if (valid) m->len[seq] = length;
    check_lengths(m, "truncate");
}

static void op_reset(model *m, fuzz_reader *r)
{
    const int seq = fuzz_int(r, -2, 4);
    const int valid = seq == -1 || (seq >= 0 && seq < m->batch);
    expect(m, attn_kv_cache_reset(m->cache, seq), valid, "reset");
    for (int b = 0; valid && b < m->batch; b++)
        if (seq == -1 || seq == b) m->len[b] = 0;
    check_lengths(m, "reset");
}

static void op_misc(model *m, fuzz_reader *r)
{
    if (fuzz_u8(r) & 1) {
        expect(m, attn_kv_cache_lengths(m->cache, NULL), 0, "lengths(NULL)");
    } else {
        attn_tensor k, v;
        if (attn_kv_cache_tensors(m->cache, &k, &v) != ATTN_SUCCESS ||
            attn_kv_cache_tensors(m->cache, NULL, NULL) != ATTN_SUCCESS)
            fuzz_fail("attn_kv_cache_tensors failed");
        if (!k.buffer || !v.buffer || k.buffer == v.buffer || k.stride_seq < (size_t)m->head_dim ||
            k.stride_head < (size_t)m->capacity * k.stride_seq ||
            k.stride_batch < (size_t)m->kv_heads * k.stride_head)
            fuzz_fail("attn_kv_cache_tensors: a layout that does not hold the cache");
    }
    check_lengths(m, "lengths/tensors");
}

static void op_decode(model *m, fuzz_reader *r)
{
    if ((m->head_dim != 4 && m->head_dim != 8) || m->capacity > 40) return;
    attn_problem p;
    memset(&p, 0, sizeof p);
    const uint8_t off = fuzz_u8(r); /* which fields differ from the cache */
    p.batch = off & 1 ? fuzz_int(r, -1, 4) : m->batch;
    p.kv_heads = off & 2 ? fuzz_int(r, -1, 4) : m->kv_heads;
    p.head_dim = off & 4 ? fuzz_int(r, 0, 9) : m->head_dim;
    p.dtype = off & 8 ? (attn_dtype)(fuzz_u8(r) % 4) : m->dtype;
    p.q_heads = off & 16 ? fuzz_int(r, -1, 8) : m->kv_heads * (1 + fuzz_u8(r) % 3);
    p.q_len = fuzz_int(r, 0, 5);
    p.kv_len = fuzz_int(r, -1, 40); /* not used */
    p.causal = fuzz_u8(r) & 1;
    p.scale = 0.0f;
    int *q_lens = NULL;
    if (fuzz_u8(r) & 1) {
        q_lens = malloc(sizeof *q_lens * (size_t)m->batch);
        if (!q_lens) fuzz_fail("out of memory");
        for (int b = 0; b < m->batch; b++) q_lens[b] = fuzz_int(r, -1, 5);
    }
    const uint8_t tsel = fuzz_u8(r);

    int valid = p.batch == m->batch && p.kv_heads == m->kv_heads && p.head_dim == m->head_dim &&
                p.dtype == m->dtype && p.q_len >= 1 &&
                p.q_len <= (m->capacity > ATTN_DECODE_MAX_Q_LEN ? m->capacity
                                                                 : ATTN_DECODE_MAX_Q_LEN) &&
                p.q_heads >= 1 && p.q_heads % p.kv_heads == 0 && !m->append_failed;
    for (int b = 0; valid && b < m->batch; b++) {
        const int n = q_lens ? q_lens[b] : p.q_len;
        if (n < 0 || n > p.q_len || n > m->len[b]) valid = 0;
    }
    /* q and out packed BHSD; only when they fit is the call expected to pass */
    attn_tensor tq = {qbuf, 0, 0, 0, (size_t)p.head_dim}, to;
    tq.stride_head = (size_t)p.q_len * tq.stride_seq;
    tq.stride_batch = (size_t)p.q_heads * tq.stride_head;
    to = tq;
    to.buffer = obuf;
    const attn_tensor *out = tsel & 1 ? &tq : &to; /* in place or not */
    cl_mem lse = tsel & 2 ? lsebuf : NULL;
    /* only what LLVMFuzzerInitialize built runs: a build inside a run
     * allocates past -malloc_limit_mb (PoCL's binaries) */
    if (valid && (p.q_heads / p.kv_heads > 3 || p.q_len > 4)) {
        free(q_lens);
        return;
    }
    if (valid) {
        const size_t rows = (size_t)p.batch * p.q_heads * p.q_len;
        if (rows * p.head_dim * attn_dtype_size(p.dtype) > DEC_BYTES || rows * 4 > DEC_BYTES) {
            free(q_lens);
            return; /* too large for the buffers: not tried */
        }
    }
    const int want_event = tsel & 4;
    cl_event done = (cl_event)1;
    attn_status st = attn_decode(m->ctx, m->cache, &p, &tq, out, q_lens, lse,
                                 want_event ? &done : NULL);
    expect(m, st, valid, "decode");
    if (st == ATTN_SUCCESS) {
        n_decodes++;
        if (want_event) {
            if (!done || done == (cl_event)1) fuzz_fail("decode gave no event");
            clReleaseEvent(done);
        }
        if (clFinish(attn_context_queue(m->ctx)) != CL_SUCCESS) fuzz_fail("clFinish");
    } else if (want_event && done != NULL) {
        fuzz_fail("a rejected decode left an event");
    }
    free(q_lens);
    check_lengths(m, "decode");
}

/* ---- one input ---- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_reader r = {data, size};
    model m;
    memset(&m, 0, sizeof m);
    m.ctx = fuzz_context();
    m.batch = fuzz_int(&r, 0, 4);
    m.kv_heads = fuzz_int(&r, 0, 3);
    const uint8_t dsel = fuzz_u8(&r);
    m.head_dim = dsel < 160 ? (dsel & 1 ? 8 : 4) : fuzz_int(&r, 0, 20);
    m.capacity = fuzz_int(&r, -2, 40);
    const uint8_t tsel = fuzz_u8(&r);
    m.dtype = tsel < 250 ? (attn_dtype)(tsel % 3) : (attn_dtype)(int)fuzz_u32(&r);

    const int valid = m.batch >= 1 && m.kv_heads >= 1 && m.head_dim >= 1 && m.head_dim <= 256 &&
                      m.capacity >= 1 && m.capacity <= (1 << 30) &&
                      (unsigned)m.dtype <= ATTN_BF16;
    if (valid) {
        /* a generous bound on what the cache allocates (padding included):
         * valid but large caches are not made */
        const double bytes = (double)m.batch * m.kv_heads * (m.capacity + 64.0) *
                             (m.head_dim + 16.0) * 4.0;
        if (m.batch > MAXB || bytes > 4.0 * MAX_CACHE_BYTES) return 0;
    }
    attn_kv_cache *cache = (attn_kv_cache *)1;
    attn_status st = attn_kv_cache_create(m.ctx, m.batch, m.kv_heads, m.head_dim, m.capacity,
                                          m.dtype, &cache);
    if (!valid) {
        const char *msg = attn_last_error(m.ctx);
        if (st != ATTN_ERROR_INVALID_ARGUMENT || !msg[0])
            fuzz_fail("create B=%d H=%d D=%d cap=%d dtype=%d: %s with message \"%s\"", m.batch,
                      m.kv_heads, m.head_dim, m.capacity, (int)m.dtype, attn_status_name(st), msg);
        if (cache != NULL) fuzz_fail("a rejected create left a cache");
        n_create_bad++;
        return 0;
    }
    if (st != ATTN_SUCCESS || !cache)
        fuzz_fail("create B=%d H=%d D=%d cap=%d dtype=%d: %s: %s", m.batch, m.kv_heads,
                  m.head_dim, m.capacity, (int)m.dtype, attn_status_name(st),
                  attn_last_error(m.ctx));
    n_create_ok++;
    m.cache = cache;
    check_lengths(&m, "create");

    for (int i = 0; i < MAX_OPS && r.n > 0; i++) {
        switch (fuzz_u8(&r) % 5) {
        case 0: op_append(&m, &r); break;
        case 1: op_truncate(&m, &r); break;
        case 2: op_reset(&m, &r); break;
        case 3: op_decode(&m, &r); break;
        default: op_misc(&m, &r); break;
        }
    }
    if (clFinish(attn_context_queue(m.ctx)) != CL_SUCCESS) fuzz_fail("clFinish");
    attn_kv_cache_release(cache);
    return 0;
}
