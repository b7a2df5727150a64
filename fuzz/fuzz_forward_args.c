/* fuzz_forward_args.c -- attn_forward's argument validation on arbitrary
 * problems, tensors (NULL, no buffer, another context's buffer, any offset
 * and strides), lengths and LSE buffers, against a few small real buffers.
 *
 * Rejected arguments must give ATTN_ERROR_INVALID_ARGUMENT with a message,
 * the same from attn_forward as from the validation alone. Accepted ones
 * are checked independently: every element of every tensor inside its
 * buffer and reached once, out apart from K and V (and identical to Q or
 * apart from it), lengths inside the padded lengths, LSE large enough and a
 * buffer of its own. Tensors may also lie in sub-buffers cut from the
 * largest buffer (clCreateSubBuffer), which alias it and each other: the
 * checks count where the bytes lie, not the handles. Accepted problems with a head dim of 4 or 7 and a sane
 * scale (programs built once, in LLVMFuzzerInitialize) are also run: the
 * result must match the CPU reference and nothing outside O may change.
 * Other accepted problems are not enqueued, so no input can launch a large
 * kernel. */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_util.h"
#include "core/context.h"
#include "attention/validate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NBUF = 5, MAXB = 8, MAXBYTES = 24576 };
static const size_t buf_bytes[NBUF] = {2, 96, 1000, 4096, MAXBYTES};
static cl_mem bufs[NBUF], foreign; /* foreign: a buffer of another cl_context */
/* sub-buffers of bufs[NBUF - 1], each from its origin to the parent's end */
enum { NSUB = 2 };
static cl_mem subs[NSUB];
static size_t sub_origin[NSUB];
static int nsubs;
static cl_context foreign_ctx;
static const int run_dims[] = {4, 7}; /* head dims whose programs are built */

/* What the inputs did, printed at exit: how many were rejected (by the
 * first word of the message, indices dropped), accepted, and run. */
enum { NKEYS = 96 };
static char reject_key[NKEYS][48];
static unsigned long reject_count[NKEYS], n_rejected, n_accepted, n_run, n_sub, n_lse_beside;

static void count_rejection(const char *msg)
{
    char key[48];
    size_t n = 0;
    for (const char *c = msg; *c && *c != ' ' && n + 1 < sizeof key; c++) {
        if (*c == '[') { /* lengths->q_len[3] -> lengths->q_len[] */
            key[n++] = '[';
            while (*c && *c != ']') c++;
            if (!*c) break;
        }
        key[n++] = *c;
    }
    key[n] = 0;
    n_rejected++;
    for (int i = 0; i < NKEYS; i++) {
        if (!reject_key[i][0]) snprintf(reject_key[i], sizeof reject_key[i], "%s", key);
        if (strcmp(reject_key[i], key) == 0) {
            reject_count[i]++;
            return;
        }
    }
}

static void print_counts(void)
{
    fprintf(stderr, "fuzz_forward_args: %lu rejected, %lu accepted (%lu through a sub-buffer, %lu "
            "with lse in a tensor's buffer), %lu of those run and compared with the reference\n"
            "  rejected by the message's first word:", n_rejected, n_accepted, n_sub, n_lse_beside,
            n_run);
    for (int i = 0; i < NKEYS && reject_key[i][0]; i++)
        fprintf(stderr, "%s %s %lu", i % 4 ? "," : "\n   ", reject_key[i], reject_count[i]);
    fprintf(stderr, "\n");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    attn_context *ctx = fuzz_context();
    atexit(print_counts);
    cl_int err;
    for (int i = 0; i < NBUF; i++) {
        bufs[i] = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_WRITE, buf_bytes[i],
                                 NULL, &err);
        if (err != CL_SUCCESS) fuzz_fail("clCreateBuffer: %d", err);
    }
    cl_device_id dev = attn_context_device(ctx);
    foreign_ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (err == CL_SUCCESS) foreign = clCreateBuffer(foreign_ctx, CL_MEM_READ_WRITE, MAXBYTES, NULL, &err);
    if (err != CL_SUCCESS) fuzz_fail("the second context: %d", err);
    /* origins one and two alignment steps in (OpenCL's alignment of origins) */
    cl_uint align_bits = 0;
    clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
    const size_t step = align_bits / 8 ? align_bits / 8 : 128;
    for (int i = 0; i < NSUB && (size_t)(i + 1) * step + 1024 <= MAXBYTES; i++) {
        cl_buffer_region reg = {(size_t)(i + 1) * step, MAXBYTES - (size_t)(i + 1) * step};
        subs[i] = clCreateSubBuffer(bufs[NBUF - 1], CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION,
                                    &reg, &err);
        if (err != CL_SUCCESS) fuzz_fail("clCreateSubBuffer: %d", err);
        sub_origin[i] = reg.origin;
        nsubs = i + 1;
    }
    /* build what may run now, so that each run costs the same */
    for (int d = 0; d < (int)(sizeof run_dims / sizeof run_dims[0]); d++)
        for (int t = ATTN_F32; t <= ATTN_BF16; t++) {
            attn_problem p = {.batch = 1, .q_heads = 1, .kv_heads = 1, .head_dim = run_dims[d],
                              .q_len = 1, .kv_len = 1, .dtype = (attn_dtype)t, .causal = 1,
                              .scale = 0.0f};
            attn_status st = attn_prepare(ctx, &p, NULL);
            if (st != ATTN_SUCCESS)
                fuzz_fail("attn_prepare D=%d: %s: %s", run_dims[d], attn_status_name(st),
                          attn_last_error(ctx));
        }
    return 0;
}

/* ---- reading the input ---- */

static cl_mem pick_buffer(fuzz_reader *r)
{
    int sel = fuzz_u8(r) % (NBUF + 2 + NSUB);
    if (sel > NBUF && sel <= NBUF + NSUB) return sel - NBUF - 1 < nsubs ? subs[sel - NBUF - 1] : NULL;
    return sel < NBUF ? bufs[sel] : sel == NBUF ? foreign : NULL;
}

/* A tensor for [B, heads, seq, D]: NULL, or a buffer with either packed
 * strides from the problem (BHSD or BSHD, some padding, a small offset) or
 * arbitrary ones. */
static const attn_tensor *read_tensor(fuzz_reader *r, const attn_problem *p, int heads, int seq,
                                      attn_tensor *t)
{
    uint8_t mode = fuzz_u8(r);
    if (mode == 255) return NULL;
    t->buffer = pick_buffer(r);
    if (mode & 1) {
        size_t D = (size_t)p->head_dim, H = (size_t)heads, S = (size_t)seq;
        size_t row = D + fuzz_u8(r) % 4;
        if (mode & 2) { /* BSHD */
            t->stride_head = row;
            t->stride_seq = H * row;
            t->stride_batch = S * t->stride_seq;
        } else {
            t->stride_seq = row;
            t->stride_head = (S + fuzz_u8(r) % 3) * row;
            t->stride_batch = H * t->stride_head;
        }
        t->offset = fuzz_u8(r) % 16;
    } else {
        t->offset = fuzz_size(r, 64);
        t->stride_batch = fuzz_size(r, 2048);
        t->stride_head = fuzz_size(r, 512);
        t->stride_seq = fuzz_size(r, 64);
    }
    return t;
}

static float read_scale(fuzz_reader *r)
{
    uint8_t sel = fuzz_u8(r);
    if (sel < 128) return 0.0f;
    if (sel < 240) return (float)(sel - 184) / 16.0f; /* -3.5 .. 3.4 */
    uint32_t bits = fuzz_u32(r);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* ---- the independent check of what validation accepted ---- */

/* The buffer of bufs that m is or was cut from, and m's byte origin in
 * it; -1 for another context's buffer. */
static int buffer_index_at(cl_mem m, size_t *origin)
{
    *origin = 0;
    for (int i = 0; i < NBUF; i++)
        if (bufs[i] == m) return i;
    for (int i = 0; i < nsubs; i++)
        if (subs[i] == m) {
            *origin = sub_origin[i];
            return NBUF - 1;
        }
    return -1;
}

static int buffer_index(cl_mem m)
{
    size_t origin;
    return buffer_index_at(m, &origin);
}

/* t as elements of its parent buffer (origins are multiples of 128 bytes,
 * so of any element size) */
static attn_tensor in_parent(const attn_tensor *t, size_t esize)
{
    size_t origin;
    attn_tensor r = *t;
    buffer_index_at(t->buffer, &origin);
    r.offset += origin / esize;
    return r;
}

static unsigned char marks[NBUF][MAXBYTES]; /* per element: 1 q, 2 k, 4 v, 8 out */

static void check_extent(const int *start, const int *len, int b, int padded, const char *what)
{
    int s = start ? start[b] : 0, n = len ? len[b] : padded;
    if (s < 0 || n < 0 || s > padded || n > padded || s + n > padded)
        fuzz_fail("accepted %s start %d length %d in a padded length of %d", what, s, n, padded);
}

static void check_accepted(const attn_problem *p, const attn_tensor *q, const attn_tensor *k,
                           const attn_tensor *v, const attn_tensor *o, const attn_lengths *L,
                           cl_mem lse)
{
    if (p->batch <= 0 || p->q_heads <= 0 || p->kv_heads <= 0 || p->head_dim <= 0 ||
        p->head_dim > 256 || p->q_len <= 0 || p->kv_len <= 0 || p->q_heads % p->kv_heads ||
        (unsigned)p->dtype > ATTN_BF16 || !isfinite(p->scale * 1.4426950408889634f))
        fuzz_fail("accepted problem B=%d Hq=%d Hkv=%d D=%d Sq=%d Skv=%d dtype=%d", p->batch,
                  p->q_heads, p->kv_heads, p->head_dim, p->q_len, p->kv_len, (int)p->dtype);
    const attn_tensor *ts[4] = {q, k, v, o};
    const int heads[4] = {p->q_heads, p->kv_heads, p->kv_heads, p->q_heads};
    const int seqs[4] = {p->q_len, p->kv_len, p->kv_len, p->q_len};
    const size_t esize = attn_dtype_size(p->dtype);
    memset(marks, 0, sizeof marks);
    attn_tensor at[4]; /* as elements of the parent buffers */
    int through_sub = 0;
    for (int i = 0; i < 4; i++) {
        int bi = ts[i] ? buffer_index(ts[i]->buffer) : -1;
        if (bi < 0) fuzz_fail("accepted tensor %d without a buffer of this context", i);
        at[i] = in_parent(ts[i], esize);
        through_sub |= at[i].offset != ts[i]->offset;
        /* q, k, v are read only: batch entries may share elements (each
         * sub-buffer reaches its parent's end, so the limit is the parent's) */
        int w = (i < 3 ? fuzz_input_walk : fuzz_tensor_walk)(&at[i], p->batch, heads[i], seqs[i],
                                                             p->head_dim, buf_bytes[bi] / esize,
                                                             marks[bi], (unsigned char)(1 << i));
        if (w == -1) fuzz_fail("accepted tensor %d reaches past its buffer (%zu bytes)", i, buf_bytes[bi]);
        if (w == -2) fuzz_fail("accepted tensor %d whose strides make elements overlap", i);
    }
    const int in_place = buffer_index(q->buffer) == buffer_index(o->buffer) &&
                         at[0].offset == at[3].offset && q->stride_batch == o->stride_batch &&
                         q->stride_head == o->stride_head && q->stride_seq == o->stride_seq;
    for (int bi = 0; bi < NBUF; bi++)
        for (size_t e = 0; e < MAXBYTES; e++) {
            unsigned m = marks[bi][e];
            if ((m & 8) && (m & 6)) fuzz_fail("accepted out overlapping k or v (element %zu)", e);
            if ((m & 8) && (m & 1) && !in_place)
                fuzz_fail("accepted out overlapping q with another layout (element %zu)", e);
        }
    n_sub += (unsigned long)through_sub;
    for (int b = 0; L && b < p->batch; b++) {
        check_extent(L->q_start, L->q_len, b, p->q_len, "q");
        check_extent(L->kv_start, L->kv_len, b, p->kv_len, "kv");
    }
    if (lse) {
        size_t origin;
        int bi = buffer_index_at(lse, &origin);
        if (bi < 0) fuzz_fail("accepted an lse of another context");
        const size_t bytes = buf_bytes[bi] - origin, need = (size_t)p->batch * p->q_heads *
                                                            p->q_len * sizeof(float);
        if (bytes < need) fuzz_fail("accepted an lse of %zu bytes", bytes);
        /* its floats may share a buffer with the tensors (directly or
         * through a sub-buffer), never one of their elements */
        for (size_t e = origin / esize; e < (origin + need + esize - 1) / esize; e++)
            if (marks[bi][e]) fuzz_fail("accepted an lse over a tensor's element %zu", e);
        for (int i = 0; i < 4; i++)
            if (buffer_index(ts[i]->buffer) == bi) {
                n_lse_beside++;
                break;
            }
    }
}

/* ---- running what validation accepted, small and known ---- */

static float pattern(size_t i, unsigned seed)
{
    uint64_t z = (uint64_t)i * 0x9e3779b97f4a7c15ull + seed;
    z = (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ull;
    return (float)((z >> 40) & 0xffff) / 32768.0f - 1.0f; /* [-1, 1) */
}

/* Gathers t (type dtype, elements in raw) into contiguous BHSD floats. */
static void gather(const unsigned char *raw, attn_dtype dtype, const attn_tensor *t, int B, int H,
                   int S, int D, float *dst)
{
    const size_t es = attn_dtype_size(dtype);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int s = 0; s < S; s++) {
                size_t at = t->offset + b * t->stride_batch + h * t->stride_head + s * t->stride_seq;
                attn_convert_to_f32(dtype, raw + at * es, dst, (size_t)D);
                dst += D;
            }
}

static int runnable(const attn_problem *p)
{
    int d_ok = 0;
    for (size_t i = 0; i < sizeof run_dims / sizeof run_dims[0]; i++) d_ok |= p->head_dim == run_dims[i];
    /* the tolerance is meant for logits of ordinary size */
    return d_ok && fabsf(p->scale) <= 4.0f;
}

static void run_and_compare(attn_context *ctx, const attn_problem *p, const attn_tensor *q,
                            const attn_tensor *k, const attn_tensor *v, const attn_tensor *o,
                            const attn_lengths *L, cl_mem lse, unsigned seed, int want_event)
{
    static unsigned char before[NBUF][MAXBYTES], after[NBUF][MAXBYTES];
    static float lse_got[MAXBYTES / 4];
    cl_command_queue queue = attn_context_queue(ctx);
    const size_t es = attn_dtype_size(p->dtype);
    for (int bi = 0; bi < NBUF; bi++) {
        size_t n = buf_bytes[bi] / es;
        for (size_t e = 0; e < n; e++) {
            float f = pattern(e, seed + 77u * (unsigned)bi);
            attn_convert_from_f32(p->dtype, &f, before[bi] + e * es, 1);
        }
        if (clEnqueueWriteBuffer(queue, bufs[bi], CL_TRUE, 0, n * es, before[bi], 0, NULL, NULL))
            fuzz_fail("clEnqueueWriteBuffer");
    }
    const int B = p->batch, Hq = p->q_heads, Hkv = p->kv_heads, D = p->head_dim;
    const size_t nq = (size_t)B * Hq * p->q_len * D, nkv = (size_t)B * Hkv * p->kv_len * D;
    const size_t nrows = (size_t)B * Hq * p->q_len;
    float *hq = malloc(nq * 4), *hk = malloc(nkv * 4), *hv = malloc(nkv * 4);
    float *ref = malloc(nq * 4), *got = malloc(nq * 4), *ref_lse = malloc(nrows * 4);
    if (!hq || !hk || !hv || !ref || !got || !ref_lse) fuzz_fail("out of memory");
    const attn_tensor pq = in_parent(q, es), pk = in_parent(k, es), pv = in_parent(v, es);
    const attn_tensor po = in_parent(o, es);
    gather(before[buffer_index(q->buffer)], p->dtype, &pq, B, Hq, p->q_len, D, hq);
    gather(before[buffer_index(k->buffer)], p->dtype, &pk, B, Hkv, p->kv_len, D, hk);
    gather(before[buffer_index(v->buffer)], p->dtype, &pv, B, Hkv, p->kv_len, D, hv);
    if (attn_reference_forward(p, hq, hk, hv, ref, L, ref_lse) != ATTN_SUCCESS)
        fuzz_fail("the reference refused an accepted problem");

    cl_event done = NULL;
    attn_status st = attn_forward(ctx, p, q, k, v, o, L, lse, want_event ? &done : NULL);
    if (st != ATTN_SUCCESS)
        fuzz_fail("accepted, then attn_forward: %s: %s", attn_status_name(st), attn_last_error(ctx));
    if (want_event && !done) fuzz_fail("no completion event");
    if (done) clReleaseEvent(done);
    if (clFinish(queue) != CL_SUCCESS) fuzz_fail("clFinish");
    for (int bi = 0; bi < NBUF; bi++)
        if (clEnqueueReadBuffer(queue, bufs[bi], CL_TRUE, 0, buf_bytes[bi] / es * es, after[bi], 0,
                                NULL, NULL))
            fuzz_fail("clEnqueueReadBuffer");

    double atol, rtol;
    attn_tolerance(p->dtype, &atol, &rtol);
    size_t lorigin = 0;
    const int ob = buffer_index(o->buffer), lb = lse ? buffer_index_at(lse, &lorigin) : -1;
    gather(after[ob], p->dtype, &po, B, Hq, p->q_len, D, got);
    for (size_t i = 0; i < nq; i++)
        if (!(fabs((double)got[i] - ref[i]) <= atol + rtol * fabs(ref[i])))
            fuzz_fail("B=%d Hq=%d Hkv=%d D=%d Sq=%d Skv=%d %s causal=%d scale=%g: O[%zu] = %.9g, "
                      "reference %.9g", B, Hq, Hkv, D, p->q_len, p->kv_len,
                      attn_dtype_name(p->dtype), p->causal, (double)p->scale, i, got[i], ref[i]);
    if (lse) {
        memcpy(lse_got, after[lb] + lorigin, nrows * 4);
        for (size_t i = 0; i < nrows; i++) {
            int same_inf = isinf(ref_lse[i]) && lse_got[i] == ref_lse[i];
            if (!same_inf && !(fabs((double)lse_got[i] - ref_lse[i]) <= atol + rtol * fabs(ref_lse[i])))
                fuzz_fail("LSE[%zu] = %.9g, reference %.9g", i, lse_got[i], ref_lse[i]);
        }
    }
    /* nothing else changed: every byte outside O (and the LSE rows) is as written */
    memset(marks, 0, sizeof marks);
    fuzz_tensor_walk(&po, B, Hq, p->q_len, D, buf_bytes[ob] / es, marks[ob], 8);
    for (int bi = 0; bi < NBUF; bi++) {
        size_t n = buf_bytes[bi] / es;
        for (size_t e = 0; e < n; e++) {
            if (bi == ob && marks[bi][e]) continue;
            if (bi == lb && e * es >= lorigin && e * es < lorigin + nrows * 4) continue;
            if (memcmp(before[bi] + e * es, after[bi] + e * es, es) != 0)
                fuzz_fail("buffer %d element %zu changed outside O", bi, e);
        }
    }
    free(hq), free(hk), free(hv), free(ref), free(got), free(ref_lse);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    attn_context *ctx = fuzz_context();
    fuzz_reader r = {data, size};
    attn_problem p;
    memset(&p, 0, sizeof p);
    p.batch = fuzz_int(&r, -1, 3);
    p.q_heads = fuzz_int(&r, -1, 8);
    p.kv_heads = fuzz_int(&r, -1, 4);
    uint8_t dsel = fuzz_u8(&r);
    p.head_dim = dsel < 160 ? run_dims[dsel & 1] : fuzz_int(&r, -1, 300);
    p.q_len = fuzz_int(&r, -1, 24);
    p.kv_len = fuzz_int(&r, -1, 24);
    uint8_t tsel = fuzz_u8(&r);
    p.dtype = tsel < 250 ? (attn_dtype)(tsel % 3) : (attn_dtype)(int)fuzz_u32(&r);
    p.causal = fuzz_u8(&r) & 1 ? (int)fuzz_u32(&r) | 1 : 0;
    p.scale = read_scale(&r);

    attn_tensor tq, tk, tv, to;
    const attn_tensor *q = read_tensor(&r, &p, p.q_heads, p.q_len, &tq);
    const attn_tensor *k = read_tensor(&r, &p, p.kv_heads, p.kv_len, &tk);
    const attn_tensor *v = read_tensor(&r, &p, p.kv_heads, p.kv_len, &tv);
    const attn_tensor *o = fuzz_u8(&r) % 8 == 0 ? q /* in place */
                                                : read_tensor(&r, &p, p.q_heads, p.q_len, &to);

    /* lengths: arrays of `batch` ints (the API's contract), so only for small batches */
    static int arr[4][MAXB];
    attn_lengths lengths = {NULL, NULL, NULL, NULL};
    const attn_lengths *L = NULL;
    uint8_t lsel = fuzz_u8(&r);
    if (lsel & 1) {
        L = &lengths;
        const int **slot[4] = {&lengths.q_start, &lengths.q_len, &lengths.kv_start, &lengths.kv_len};
        for (int i = 0; i < 4 && p.batch >= 1 && p.batch <= MAXB; i++)
            if (lsel >> (i + 1) & 1) {
                for (int b = 0; b < p.batch; b++) arr[i][b] = fuzz_int(&r, -1, 24);
                *slot[i] = arr[i];
            }
    }
    uint8_t esel = fuzz_u8(&r);
    cl_mem lse = esel < 128 ? NULL : esel < 250 ? pick_buffer(&r) : o ? o->buffer : NULL;
    const int want_event = fuzz_u8(&r) & 1;
    const unsigned seed = fuzz_u32(&r);

    attn_status st = attn_validate_forward(ctx, &p, q, k, v, o, L, lse);
    if (st != ATTN_SUCCESS) {
        char msg[ATTN_ERROR_MAX];
        snprintf(msg, sizeof msg, "%s", attn_last_error(ctx));
        if (st != ATTN_ERROR_INVALID_ARGUMENT || !msg[0])
            fuzz_fail("validation: %s with message \"%s\"", attn_status_name(st), msg);
        cl_event done = (cl_event)1;
        attn_status st2 = attn_forward(ctx, &p, q, k, v, o, L, lse, want_event ? &done : NULL);
        /* the public call names itself before the validation's message */
        char want[ATTN_ERROR_MAX]; /* truncated where the library truncates */
        snprintf(want, sizeof want, "attn_forward: %s", msg);
        if (st2 != st || strcmp(want, attn_last_error(ctx)) != 0)
            fuzz_fail("attn_forward said %s \"%s\", validation %s \"%s\"", attn_status_name(st2),
                      attn_last_error(ctx), attn_status_name(st), msg);
        if (want_event && done != NULL) fuzz_fail("a rejected call left an event");
        count_rejection(msg);
        return 0;
    }
    n_accepted++;
    check_accepted(&p, q, k, v, o, L, lse);
    if (runnable(&p)) {
        n_run++;
        run_and_compare(ctx, &p, q, k, v, o, L, lse, seed, want_event);
    }
    return 0;
}
