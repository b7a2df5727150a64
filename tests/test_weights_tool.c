/* test_weights_tool.c -- attn-weights end to end ($ATTN_WEIGHTS_BIN): the
 * user's Q and K from .npy and raw files made here, drawn as SVG (whose
 * per-cell titles give the weights, checked against hand-computed softmaxes)
 * and as PNG (parsed here: signature, chunk CRCs, IHDR, inflated IDAT, the
 * pad and masked greys present, the file small), and the refusals: an
 * unknown image extension and bad .npy files, each with a clear message. */
#define _XOPEN_SOURCE 700
#include "harness.h"
#include "png_write.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static char dir[512];

static void fresh_dir(void)
{
    if (dir[0]) harness_remove_tree(dir);
    harness_temp_dir(dir, sizeof dir, "weights");
}

static const char *in_dir(const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", dir, name);
    return buf;
}

static void write_bytes(const char *path, const void *a, size_t na, const void *b, size_t nb)
{
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(a, 1, na, f), na);
    if (nb) CU_ASSERT_EQUAL(fwrite(b, 1, nb, f), nb);
    CU_ASSERT_EQUAL(fclose(f), 0);
}

/* A .npy file as numpy.lib.format writes it: magic, version, header length
 * (2 bytes in 1.0, 4 in 2.0), the dict padded with spaces and a newline to
 * a multiple of 64 bytes (plus one when odd_offset: numpy reads such a file,
 * its data at an odd address), then the data. dict is the text between
 * braces. */
static void write_npy_at(const char *path, int major, const char *dict, const void *data,
                         size_t bytes, int odd_offset)
{
    unsigned char head[512];
    const size_t pre = major == 1 ? 10 : 12;
    char text[400];
    int n = snprintf(text, sizeof text, "{%s}", dict);
    while ((pre + (size_t)n + 1) % 64) text[n++] = ' ';
    if (odd_offset) text[n++] = ' ';
    text[n++] = '\n';
    memcpy(head, "\x93NUMPY", 6);
    head[6] = (unsigned char)major, head[7] = 0;
    for (size_t i = 0; i < pre - 8; i++) head[8 + i] = (unsigned char)((size_t)n >> (8 * i));
    memcpy(head + pre, text, (size_t)n);
    write_bytes(path, head, pre + (size_t)n, data, bytes);
}

static void write_npy(const char *path, int major, const char *dict, const void *data,
                      size_t bytes)
{
    write_npy_at(path, major, dict, data, bytes, 0);
}

/* Runs the tool; its output (stdout and stderr) into *text (freed by the
 * caller). Returns the exit status. */
static int run(const char *const *args, char **text)
{
    const char *bin = harness_tool_path("ATTN_WEIGHTS_BIN", "attn-weights");
    char log[600];
    in_dir("tool.log", log, sizeof log);
    const int rc = harness_run_program(bin, args, log);
    *text = harness_read_file(log, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(*text);
    return rc;
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* ---- a problem whose weights are known ---- */

/* Q [2, 2, S, D] and K [2, 1, S, D] (B=2, GQA 2:1), S=12, D=16, the scale
 * 1/4. Batch entry 1, head 1: every query (1, 0, ...), key content index 1
 * (row 3 with --left-pad 2) (4 ln 3, 0, ...), the others 0, so a content
 * query i >= 1 gives key 1 three times the weight of each other visible
 * key: row 1 is 1/4, 3/4; row 2 is 1/5, 3/5, 1/5. Everything else (batch 0,
 * head 0) has other values, so drawing the wrong entry or head shows. */
enum { B = 2, HQ = 2, HKV = 1, S = 12, D = 16, PAD = 2 };

static void known_problem(float *q, float *k)
{
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < HQ; h++)
            for (int s = 0; s < S; s++)
                for (int d = 0; d < D; d++)
                    q[(((size_t)b * HQ + h) * S + s) * D + d] =
                        d == 0 ? (b == 1 && h == 1 ? 1.0f : 0.5f * (float)(b + h)) : 0.0f;
        for (int s = 0; s < S; s++)
            for (int d = 0; d < D; d++)
                k[((size_t)b * S + s) * D + d] =
                    d == 0 && s == PAD + 1 ? 4.0f * logf(3.0f) : (b == 0 && d == 1 ? 0.3f : 0.0f);
    }
}

static const char *const q_dict =
    "'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 12, 16), ";
static const char *const k_dict =
    "'descr': '<f4', 'fortran_order': False, 'shape': (2, 1, 12, 16), ";

/* The SVG at path holds known_problem's weights of batch entry 1, head 1,
 * left-padded by 2: the users' own, exactly (they are exact in f16 too). */
static void check_known_titles(const char *path)
{
    char *svg = harness_read_file(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    static const char *const want[] = {
        "<title>q 2, k 2: weight 1</title>",    "<title>q 3, k 2: weight 0.25</title>",
        "<title>q 3, k 3: weight 0.75</title>", "<title>q 4, k 2: weight 0.2</title>",
        "<title>q 4, k 3: weight 0.6</title>",  "<title>q 4, k 4: weight 0.2</title>",
        "<title>q 3, k 4: masked 0</title>",    "<title>q 2, k 11: masked 0</title>",
        "<title>q 0, k 0: pad 0</title>",       "<title>q 5, k 1: pad 0</title>",
        "<title>q 11, k 0: pad 0</title>"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!strstr(svg, want[i])) printf("\n  %s lacks %s", path, want[i]);
        CU_ASSERT_PTR_NOT_NULL(strstr(svg, want[i]));
    }
    free(svg);
}

static void test_npy_weights_are_the_users(void)
{
    fresh_dir();
    float q[B * HQ * S * D], k[B * HKV * S * D];
    known_problem(q, k);
    char qp[600], kp[600], out[600], *text;
    write_npy(in_dir("q.npy", qp, sizeof qp), 1, q_dict, q, sizeof q);
    write_npy(in_dir("k.npy", kp, sizeof kp), 1, k_dict, k, sizeof k);
    in_dir("w.svg", out, sizeof out);
    const char *args[] = {"--q", qp, "--k", kp, "--batch-index", "1", "--head", "1",
                          "--left-pad", "2", "--out", out, NULL};
    const int rc = run(args, &text);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc) printf("\n  attn-weights said:\n%s", text);
    free(text);
    check_known_titles(out);
}

/* ---- PNG ---- */

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c)
{
    const int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

typedef struct png_image {
    int width, height;
    unsigned char *rgb;
    size_t file_bytes;
    int idat_chunks;
    uint32_t idat_max; /* the longest IDAT's length */
} png_image;

/* Reads an 8-bit RGB PNG as a viewer would, asserting its structure: the
 * signature, IHDR first, every chunk's CRC, IDAT before IEND, IEND last,
 * the inflated data exactly height rows of a filter byte and the pixels. */
static int read_png(const char *path, png_image *img)
{
    size_t n;
    unsigned char *f = (unsigned char *)harness_read_file(path, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    img->file_bytes = n;
    img->rgb = NULL;
    img->idat_chunks = 0;
    img->idat_max = 0;
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    int ok = n > 8 + 25 && memcmp(f, sig, 8) == 0;
    CU_ASSERT(ok);
    unsigned char *idat = NULL;
    size_t idat_n = 0, at = 8;
    int chunks = 0, seen_end = 0;
    while (ok && !seen_end) {
        ok = at + 12 <= n;
        CU_ASSERT(ok);
        if (!ok) break;
        const uint32_t len = be32(f + at);
        ok = len <= n - at - 12;
        CU_ASSERT(ok);
        if (!ok) break;
        const unsigned char *type = f + at + 4, *data = f + at + 8;
        const uLong crc = crc32(crc32(0L, type, 4), data, len);
        CU_ASSERT_EQUAL(crc, be32(data + len));
        ok = crc == be32(data + len);
        if (chunks++ == 0) { /* IHDR: 13 bytes, 8-bit RGB, deflate, no interlace */
            ok = ok && memcmp(type, "IHDR", 4) == 0 && len == 13 && data[8] == 8 &&
                 data[9] == 2 && data[10] == 0 && data[11] == 0 && data[12] == 0;
            CU_ASSERT(ok);
            img->width = (int)be32(data), img->height = (int)be32(data + 4);
        } else if (memcmp(type, "IDAT", 4) == 0) {
            img->idat_chunks++;
            if (len > img->idat_max) img->idat_max = len;
            unsigned char *more = realloc(idat, idat_n + len);
            CU_ASSERT_PTR_NOT_NULL_FATAL(more);
            idat = more;
            memcpy(idat + idat_n, data, len);
            idat_n += len;
        } else if (memcmp(type, "IEND", 4) == 0) {
            seen_end = 1;
            CU_ASSERT_EQUAL(at + 12 + len, n); /* nothing after IEND */
        }
        at += 12 + len;
    }
    ok = ok && seen_end && idat_n > 0 && img->width > 0 && img->height > 0;
    CU_ASSERT(ok);
    const size_t row = 1 + (size_t)img->width * 3;
    uLongf raw_n = (uLongf)(row * (size_t)img->height);
    unsigned char *raw = ok ? malloc(raw_n + 1) : NULL;
    if (ok) {
        uLongf got = raw_n + 1; /* one byte more: too much data shows as got > raw_n */
        ok = raw && uncompress(raw, &got, idat, (uLong)idat_n) == Z_OK && got == raw_n;
        CU_ASSERT(ok);
    }
    if (ok) { /* undo the row filters (0 none, 1 sub, 2 up, 3 average, 4 Paeth) */
        img->rgb = malloc((size_t)img->width * img->height * 3);
        CU_ASSERT_PTR_NOT_NULL_FATAL(img->rgb);
        const size_t w3 = (size_t)img->width * 3;
        for (int y = 0; ok && y < img->height; y++) {
            const unsigned char ft = raw[y * row], *in = raw + y * row + 1;
            unsigned char *out = img->rgb + y * w3;
            const unsigned char *up = y ? out - w3 : NULL;
            ok = ft <= 4;
            for (size_t x = 0; ok && x < w3; x++) {
                const int a = x >= 3 ? out[x - 3] : 0, b = up ? up[x] : 0,
                          c = x >= 3 && up ? up[x - 3] : 0;
                const int pred = ft == 0 ? 0 : ft == 1 ? a : ft == 2 ? b : ft == 3 ? (a + b) / 2
                                                                                   : paeth(a, b, c);
                out[x] = (unsigned char)(in[x] + pred);
            }
        }
        CU_ASSERT(ok);
    }
    free(raw), free(idat), free(f);
    return ok;
}

static size_t count_colour(const png_image *img, unsigned char r, unsigned char g, unsigned char b)
{
    size_t n = 0;
    for (size_t i = 0; i < (size_t)img->width * img->height; i++)
        n += img->rgb[3 * i] == r && img->rgb[3 * i + 1] == g && img->rgb[3 * i + 2] == b;
    return n;
}

/* A PNG of the known problem: valid, with the masked (#6e6e6e) and pad
 * (#c8c8c8) greys of --help in it, and small. */
static void check_png(const char *path, size_t max_bytes)
{
    png_image img;
    if (!read_png(path, &img)) return;
    printf("\n  %s: %dx%d, %zu bytes", path, img.width, img.height, img.file_bytes);
    CU_ASSERT(img.file_bytes <= max_bytes);
    CU_ASSERT(img.width > S && img.height > S);
    /* more than the legend's 14 x 14 swatch of each: the map has them */
    CU_ASSERT(count_colour(&img, 110, 110, 110) > 4 * 196); /* masked */
    CU_ASSERT(count_colour(&img, 200, 200, 200) > 4 * 196); /* pad */
    free(img.rgb);
}

static void test_raw_and_f16_npy_draw_png(void)
{
    fresh_dir();
    float q[B * HQ * S * D], k[B * HKV * S * D];
    known_problem(q, k);
    uint16_t q16[B * HQ * S * D], k16[B * HKV * S * D];
    CU_ASSERT_EQUAL_FATAL(attn_convert_from_f32(ATTN_F16, q, q16, B * HQ * S * D), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_convert_from_f32(ATTN_F16, k, k16, B * HKV * S * D), ATTN_SUCCESS);
    char qp[600], kp[600], out[600], *text;

    /* raw little-endian f16 with the shapes on the command line */
    write_bytes(in_dir("q.bin", qp, sizeof qp), q16, sizeof q16, NULL, 0);
    write_bytes(in_dir("k.bin", kp, sizeof kp), k16, sizeof k16, NULL, 0);
    in_dir("raw.png", out, sizeof out);
    const char *raw_args[] = {"--q", qp, "--k", kp, "--q-shape", "2,2,12,16", "--k-shape",
                              "2,1,12,16", "--raw-type", "f16", "--left-pad", "2", "--out", out,
                              NULL};
    int rc = run(raw_args, &text);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc) printf("\n  attn-weights said:\n%s", text);
    free(text);
    check_png(out, 32 << 10);

    /* a '<f2' .npy in format 2.0 (4-byte header length) */
    write_npy(in_dir("q2.npy", qp, sizeof qp), 2,
              "'descr': '<f2', 'fortran_order': False, 'shape': (2, 2, 12, 16), ", q16, sizeof q16);
    write_npy(in_dir("k2.npy", kp, sizeof kp), 2,
              "'descr': '<f2', 'fortran_order': False, 'shape': (2, 1, 12, 16), ", k16, sizeof k16);
    in_dir("npy16.png", out, sizeof out);
    const char *npy_args[] = {"--q", qp, "--k", kp, "--left-pad", "2", "--out", out, NULL};
    rc = run(npy_args, &text);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc) printf("\n  attn-weights said:\n%s", text);
    /* the file's type is the computation's ("bf16" holds "f16" too) */
    CU_ASSERT_PTR_NOT_NULL(strstr(text, " f16)"));
    CU_ASSERT_PTR_NULL(strstr(text, "bf16"));
    free(text);
    check_png(out, 32 << 10);
    /* and its values are the users' (a PNG shows only the masks' greys) */
    in_dir("npy16.svg", out, sizeof out);
    const char *svg_args[] = {"--q", qp, "--k", kp, "--batch-index", "1", "--head", "1",
                              "--left-pad", "2", "--out", out, NULL};
    rc = run(svg_args, &text);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc) printf("\n  attn-weights said:\n%s", text);
    free(text);
    check_known_titles(out);

    /* the same '<f2' data at an odd offset (a header of 64 + 1 bytes): read
     * byte by byte, not as misaligned uint16_t (UBSan's abort) */
    write_npy_at(in_dir("q1.npy", qp, sizeof qp), 1,
                 "'descr': '<f2', 'fortran_order': False, 'shape': (2, 2, 12, 16), ", q16,
                 sizeof q16, 1);
    write_npy_at(in_dir("k1.npy", kp, sizeof kp), 1,
                 "'descr': '<f2', 'fortran_order': False, 'shape': (2, 1, 12, 16), ", k16,
                 sizeof k16, 1);
    in_dir("odd.png", out, sizeof out);
    rc = run(npy_args, &text);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc) printf("\n  attn-weights said:\n%s", text);
    free(text);
    check_png(out, 32 << 10);
}

/* png_write (built here with PNG_CHUNK_MAX 64, tests/CMakeLists.txt) splits
 * its data into IDAT chunks of at most that many bytes, which a reader
 * joins back into the same pixels: a map past 2 GiB of compressed data was
 * one chunk with a wrapped length. */
static void test_png_idat_chunks(void)
{
    fresh_dir();
    enum { W = 23, H = 17 };
    unsigned char rgb[W * H * 3];
    uint64_t x = 12345;
    for (size_t i = 0; i < sizeof rgb; i++) { /* noise: deflate keeps most of it */
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        rgb[i] = (unsigned char)(x >> 56);
    }
    char path[600];
    in_dir("chunks.png", path, sizeof path);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT(png_write(f, rgb, W, H, "chunks"));
    CU_ASSERT_EQUAL(fclose(f), 0);
    png_image img;
    CU_ASSERT_FATAL(read_png(path, &img));
    CU_ASSERT_EQUAL(img.width, W);
    CU_ASSERT_EQUAL(img.height, H);
    CU_ASSERT(img.idat_chunks >= (int)(sizeof rgb / 64)); /* one would be too long */
    CU_ASSERT(img.idat_max <= 64);
    CU_ASSERT_EQUAL(memcmp(img.rgb, rgb, sizeof rgb), 0);
    free(img.rgb);
}

/* The synthetic 32 x 32 map, unpadded and full, as PNG: it was 787 KB of
 * stored deflate blocks; compressed it is about 15 KB. */
static void test_32x32_png_is_small(void)
{
    fresh_dir();
    char out[600], *text;
    in_dir("w32.png", out, sizeof out);
    const char *args[] = {"--seq", "32", "--left-pad", "0", "--no-causal", "--out", out, NULL};
    const int rc = run(args, &text);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc) printf("\n  attn-weights said:\n%s", text);
    free(text);
    png_image img;
    if (read_png(out, &img)) {
        printf("\n  32x32 map: %dx%d px, %zu bytes", img.width, img.height, img.file_bytes);
        CU_ASSERT(img.file_bytes <= 32 << 10);
        free(img.rgb);
    }
}

/* ---- refusals ---- */

static void expect_refusal(const char *const *args, int want_rc, const char *want_text,
                           const char *out)
{
    char *text;
    const int rc = run(args, &text);
    CU_ASSERT_EQUAL(rc, want_rc);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, want_text));
    if (rc != want_rc || !strstr(text, want_text))
        printf("\n  wanted exit %d and \"%s\"; got %d and:\n%s", want_rc, want_text, rc, text);
    CU_ASSERT(!exists(out)); /* nothing written */
    free(text);
}

static void test_unknown_extension_refused(void)
{
    fresh_dir();
    char out[600];
    const char *jpg[] = {"--seq", "8", "--out", in_dir("w.jpg", out, sizeof out), NULL};
    expect_refusal(jpg, 2, "must be .png or .svg, not '.jpg'", out);
    const char *none[] = {"--seq", "8", "--out", in_dir("weights", out, sizeof out), NULL};
    expect_refusal(none, 2, "must be .png or .svg", out);
    /* an extension with no name before it, in a folder or not */
    const char *bare[] = {"--seq", "8", "--out", in_dir(".png", out, sizeof out), NULL};
    expect_refusal(bare, 2, "a file name is needed before the extension", out);
    /* a map too large for a PNG: refused before the weights are computed
     * (rows x --cell overflowed an int in the layout) */
    const char *huge[] = {"--seq", "8192", "--cell", "64", "--out",
                          in_dir("w.png", out, sizeof out), NULL};
    expect_refusal(huge, 2, "8192 x 8192 weights at --cell 64 would make a map of 524288 x 524288 "
                   "pixels", out);
}

/* Options that do not fit together are usage errors, found before any file
 * is read. */
static void test_mixed_options_refused(void)
{
    fresh_dir();
    char out[600];
    in_dir("w.png", out, sizeof out);
    const char *half[] = {"--q", "q.npy", "--out", out, NULL};
    expect_refusal(half, 2, "--q and --k go together", out);
    const char *both[] = {"--q", "q.npy", "--k", "k.npy", "--seq", "8", "--out", out, NULL};
    expect_refusal(both, 2, "with --q and --k the shapes come from the files", out);
    const char *shape[] = {"--q-shape", "2,8", "--out", out, NULL};
    expect_refusal(shape, 2, "need --q and --k", out);
    const char *bad_shape[] = {"--q", "q", "--k", "k", "--q-shape", "2,x,8", "--out", out, NULL};
    expect_refusal(bad_shape, 2, "shape '2,x,8' is not", out);
    const char *plus_shape[] = {"--q", "q", "--k", "k", "--q-shape", "2,+4,8", "--out", out, NULL};
    expect_refusal(plus_shape, 2, "shape '2,+4,8' is not", out); /* strtol took the '+' */
}

/* Inputs outside the contract still give a picture and a word: NaN in Q
 * (its row's weights 0, as attn_forward's zeros) in both formats. A FIFO in place of
 * a file is refused, not waited on; --help after a bad option is still a
 * usage error. */
static void test_odd_inputs(void)
{
    fresh_dir();
    float q[B * HQ * S * D], k[B * HKV * S * D];
    known_problem(q, k);
    q[(((size_t)1 * HQ + 1) * S + 5) * D + 3] = NAN; /* entry 1, head 1, row 5 */
    char qp[600], kp[600], out[600];
    write_npy(in_dir("q.npy", qp, sizeof qp), 1, q_dict, q, sizeof q);
    write_npy(in_dir("k.npy", kp, sizeof kp), 1, k_dict, k, sizeof k);
    for (int svg = 0; svg < 2; svg++) {
        in_dir(svg ? "nan.svg" : "nan.png", out, sizeof out);
        const char *args[] = {"--q", qp, "--k", kp, "--batch-index", "1", "--head", "1",
                              "--out", out, NULL};
        char *text;
        const int rc = run(args, &text);
        CU_ASSERT_EQUAL(rc, 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(text, "1 rows that see keys have weights of 0"));
        if (rc != 0) printf("\n  NaN input, %s: exit %d:\n%s", out, rc, text);
        CU_ASSERT(exists(out));
        free(text);
    }
    char fifo[600];
    in_dir("fifo.npy", fifo, sizeof fifo);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    in_dir("w.png", out, sizeof out);
    const char *from_fifo[] = {"--q", fifo, "--k", kp, "--out", out, NULL};
    expect_refusal(from_fifo, 1, "is not a regular file", out);
    const char *help_late[] = {"--seq", "5x", "--help", NULL};
    expect_refusal(help_late, 2, "--seq", out);
}

static void test_bad_npy_refused(void)
{
    fresh_dir();
    float q[B * HQ * S * D], k[B * HKV * S * D];
    known_problem(q, k);
    char qp[600], kp[600], out[600];
    write_npy(in_dir("k.npy", kp, sizeof kp), 1, k_dict, k, sizeof k);
    in_dir("w.png", out, sizeof out);
    in_dir("q.npy", qp, sizeof qp);
    const struct { const char *dict; size_t bytes; const char *says; } bad[] = {
        {"'descr': '<f8', 'fortran_order': False, 'shape': (2, 2, 12, 16), ", sizeof q,
         "dtype '<f8' is not supported"},
        {"'descr': '>f4', 'fortran_order': False, 'shape': (2, 2, 12, 16), ", sizeof q,
         "dtype '>f4' is not supported"},
        {"'descr': '<f4', 'fortran_order': True, 'shape': (2, 2, 12, 16), ", sizeof q,
         "Fortran order"},
        {"'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 12, 17), ", sizeof q,
         "holds 3072 bytes of data; shape 2,2,12,17 of f32 needs 3264"},
        {"'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 12, 16), ", sizeof q - 4,
         "holds 3068 bytes"},
        {"'descr': '<f4', 'fortran_order': False, 'shape': (768,), ", sizeof q,
         "1 dimensions, not 2 to 4"},
        {"'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 12 16), ", sizeof q,
         "'shape' is not a tuple of integers"},
        {"'descr': '<f4', 'fortran_order': False, ", sizeof q, "has no 'shape'"},
        {"'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 12, 16), 'x': 1, ", sizeof q,
         "unexpected or repeated key 'x'"},
        {"'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 2, 12, 16), ", sizeof q,
         "structured dtype"},
        {"'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 12, 32), ", 2 * sizeof q,
         "different head dims"}, /* a good file, but not K's */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        float *data = calloc(1, bad[i].bytes);
        CU_ASSERT_PTR_NOT_NULL_FATAL(data);
        write_npy(qp, 1, bad[i].dict, data, bad[i].bytes);
        free(data);
        const char *args[] = {"--q", qp, "--k", kp, "--out", out, NULL};
        expect_refusal(args, 1, bad[i].says, out);
    }
    /* a NUL in the header ('<f4\0' was read as '<f4'): written as '@' */
    write_npy(qp, 1, "'descr': '<f4@', 'fortran_order': False, 'shape': (2, 2, 12, 16), ", q,
              sizeof q);
    FILE *fp = fopen(qp, "r+b");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    unsigned char head[128];
    CU_ASSERT_EQUAL_FATAL(fread(head, 1, sizeof head, fp), sizeof head);
    const unsigned char *at = memchr(head, '@', sizeof head);
    CU_ASSERT_PTR_NOT_NULL_FATAL(at);
    CU_ASSERT_EQUAL(fseek(fp, (long)(at - head), SEEK_SET), 0);
    fputc(0, fp);
    CU_ASSERT_EQUAL(fclose(fp), 0);
    const char *nul_args[] = {"--q", qp, "--k", kp, "--out", out, NULL};
    expect_refusal(nul_args, 1, "the header holds a NUL byte", out);
    write_bytes(qp, "PK\3\4 not numpy at all", 22, NULL, 0);
    const char *zip[] = {"--q", qp, "--k", kp, "--out", out, NULL};
    expect_refusal(zip, 1, "not a .npy file", out);
    /* a raw file whose size is not its shape's */
    write_bytes(in_dir("q.bin", qp, sizeof qp), q, sizeof q - 2, NULL, 0);
    const char *raw[] = {"--q", qp, "--k", kp, "--q-shape", "2,2,12,16", "--out", out, NULL};
    expect_refusal(raw, 1, "holds 3070 bytes of data; shape 2,2,12,16 of f32 needs 3072", out);
    const char *no_shape[] = {"--q", qp, "--k", kp, "--out", out, NULL};
    expect_refusal(no_shape, 1, "give its shape", out);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_npy_weights_are_the_users),
    HARNESS_TEST(test_raw_and_f16_npy_draw_png),
    HARNESS_TEST(test_32x32_png_is_small),
    HARNESS_TEST(test_png_idat_chunks),
    HARNESS_TEST(test_unknown_extension_refused),
    HARNESS_TEST(test_mixed_options_refused),
    HARNESS_TEST(test_bad_npy_refused),
    HARNESS_TEST(test_odd_inputs),
    HARNESS_END
};

static void register_tests(void) { harness_add_suite("weights_tool", tests); }

int main(void)
{
    const int rc = harness_run("test_weights_tool", register_tests);
    if (dir[0]) harness_remove_tree(dir);
    return rc;
}
