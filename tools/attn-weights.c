/* attn-weights -- draws the softmax weights of one (batch entry, head) as a
 * heatmap a person can open (PNG, or SVG by the file's extension), through
 * attn_attention_weights, for a synthetic causal problem with left or right
 * padding, so that the masks' structure can be seen. Uses only attn.h. */
#define _POSIX_C_SOURCE 200809L
#include "attn.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2

typedef struct options {
    const char *device, *out;
    int seq, q_heads, kv_heads, head_dim, head, left_pad, right_pad, causal, cell;
    attn_dtype dtype;
    unsigned seed;
} options;

static void usage(FILE *f)
{
    fprintf(f,
        "Usage: attn-weights --out FILE [OPTIONS]\n"
        "Draws the attention weights [query, key] of one head as a heatmap: PNG, or SVG\n"
        "when FILE ends in .svg. The problem is synthetic (one batch entry, random keys,\n"
        "each query near its own key, so the diagonal stands out); exactly-zero weights\n"
        "(causally masked keys, pad keys, pad rows) are drawn grey, the rest on a\n"
        "dark-blue-to-yellow scale of (weight / largest weight)^0.5.\n"
        "\n"
        "  --out FILE            the image to write (required)\n"
        "  --device SEL          as for attn-bench (default $ATTN_DEVICE, else the first GPU)\n"
        "  --seq N               padded sequence length (default 48)\n"
        "  --left-pad N          pad positions before the content (default seq/4)\n"
        "  --right-pad N         pad positions after the content (default 0)\n"
        "  --q-heads N, --kv-heads N, --head-dim N   (default 4, 2, 32)\n"
        "  --head H              the query head to draw (default 0)\n"
        "  --causal, --no-causal bottom-right causal mask or none (default causal)\n"
        "  --dtype f32|f16|bf16  storage type (default f32)\n"
        "  --cell N              pixels per weight in a PNG (default: about 512 px wide)\n"
        "  --seed N              random seed (default 7)\n"
        "  --help, --version\n"
        "\n"
        "Exit status: 0 ok, 1 a library or file error, 2 bad usage.\n");
}

static int parse_int(const char *opt, const char *text, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) {
        fprintf(stderr, "attn-weights: --%s wants an integer in %d..%d, not '%s'\n", opt, lo, hi,
                text);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Returns -1 to continue, else the exit status. */
static int parse_args(int argc, char **argv, options *o)
{
    enum { DEV = 256, OUT, SEQ, LPAD, RPAD, QH, KVH, HD, HEAD, CAUSAL, NOCAUSAL, DTYPE, CELL,
           SEED, HELP, VERSION };
    static const struct option longopts[] = {
        {"device", required_argument, NULL, DEV}, {"out", required_argument, NULL, OUT},
        {"seq", required_argument, NULL, SEQ}, {"left-pad", required_argument, NULL, LPAD},
        {"right-pad", required_argument, NULL, RPAD}, {"q-heads", required_argument, NULL, QH},
        {"kv-heads", required_argument, NULL, KVH}, {"head-dim", required_argument, NULL, HD},
        {"head", required_argument, NULL, HEAD}, {"causal", no_argument, NULL, CAUSAL},
        {"no-causal", no_argument, NULL, NOCAUSAL}, {"dtype", required_argument, NULL, DTYPE},
        {"cell", required_argument, NULL, CELL}, {"seed", required_argument, NULL, SEED},
        {"help", no_argument, NULL, HELP}, {"version", no_argument, NULL, VERSION},
        {NULL, 0, NULL, 0}};
    int c, bad = 0, seed = 7;
    o->left_pad = -1;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case DEV: o->device = optarg; break;
        case OUT: o->out = optarg; break;
        case SEQ: bad |= parse_int("seq", optarg, 1, 8192, &o->seq); break;
        case LPAD: bad |= parse_int("left-pad", optarg, 0, 8192, &o->left_pad); break;
        case RPAD: bad |= parse_int("right-pad", optarg, 0, 8192, &o->right_pad); break;
        case QH: bad |= parse_int("q-heads", optarg, 1, 1024, &o->q_heads); break;
        case KVH: bad |= parse_int("kv-heads", optarg, 1, 1024, &o->kv_heads); break;
        case HD: bad |= parse_int("head-dim", optarg, 1, 256, &o->head_dim); break;
        case HEAD: bad |= parse_int("head", optarg, 0, 1023, &o->head); break;
        case CAUSAL: o->causal = 1; break;
        case NOCAUSAL: o->causal = 0; break;
        case DTYPE:
            if (strcmp(optarg, "f32") == 0) o->dtype = ATTN_F32;
            else if (strcmp(optarg, "f16") == 0) o->dtype = ATTN_F16;
            else if (strcmp(optarg, "bf16") == 0) o->dtype = ATTN_BF16;
            else {
                fprintf(stderr, "attn-weights: --dtype wants f32, f16 or bf16, not '%s'\n", optarg);
                bad = -1;
            }
            break;
        case CELL: bad |= parse_int("cell", optarg, 1, 64, &o->cell); break;
        case SEED: bad |= parse_int("seed", optarg, 0, 1 << 30, &seed); break;
        case HELP: usage(stdout); return EXIT_SUCCESS;
        case VERSION:
            printf("attn-weights %d.%d.%d (libattn %s)\n", ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR,
                   ATTN_VERSION_PATCH, attn_version_string());
            return EXIT_SUCCESS;
        default: bad = -1; break;
        }
    }
    o->seed = (unsigned)seed;
    if (o->left_pad < 0) o->left_pad = o->seq / 4;
    const char *why = NULL;
    if (!bad && optind < argc) why = "unexpected argument";
    else if (!bad && !o->out) why = "--out FILE is required";
    else if (!bad && o->left_pad + o->right_pad > o->seq) why = "the padding exceeds --seq";
    else if (!bad && o->q_heads % o->kv_heads) why = "--q-heads must be a multiple of --kv-heads";
    else if (!bad && o->head >= o->q_heads) why = "--head must be below --q-heads";
    if (why) fprintf(stderr, "attn-weights: %s\n", why);
    if (bad || why) {
        fprintf(stderr, "Try 'attn-weights --help'.\n");
        return EXIT_USAGE;
    }
    return -1;
}

/* ---- the synthetic problem ---- */

static uint64_t rng = 1;
static double normal(void) /* splitmix64 + Box-Muller */
{
    double u[2];
    for (int i = 0; i < 2; i++) {
        uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        u[i] = ((double)((z ^ (z >> 31)) >> 11) + 1.0) * 0x1.0p-53;
    }
    return sqrt(-2.0 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

/* A tensor [1, H, S, D] of floats uploaded as dtype. */
static cl_mem upload(attn_context *ctx, attn_dtype t, const float *x, size_t n)
{
    void *raw = malloc(n * attn_dtype_size(t));
    if (!raw) return NULL;
    attn_convert_from_f32(t, x, raw, n);
    cl_int err;
    cl_mem m = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                              n * attn_dtype_size(t), raw, &err);
    free(raw);
    return err == CL_SUCCESS ? m : NULL;
}

/* ---- colours ---- */

static void colour(float w, float wmax, unsigned char rgb[3])
{
    static const unsigned char ramp[5][3] = {
        {68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
    if (w == 0.0f) { /* masked or padding: exactly zero */
        rgb[0] = rgb[1] = rgb[2] = 60;
        return;
    }
    double t = wmax > 0 ? sqrt((double)w / wmax) : 0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    const double x = t * 4;
    const int i = x >= 4 ? 3 : (int)x;
    const double f = x - i;
    for (int c = 0; c < 3; c++)
        rgb[c] = (unsigned char)lround(ramp[i][c] + f * (ramp[i + 1][c] - ramp[i][c]));
}

/* ---- PNG: stored (uncompressed) deflate blocks, CRC-32, Adler-32 ---- */

static uint32_t crc_table[256];
static void crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}
static uint32_t crc(uint32_t c, const unsigned char *p, size_t n)
{
    c = ~c;
    while (n--) c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}

static void be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

static int chunk(FILE *f, const char *type, const unsigned char *data, size_t n)
{
    unsigned char head[8], tail[4];
    be32(head, (uint32_t)n);
    memcpy(head + 4, type, 4);
    uint32_t c = crc(crc(0, head + 4, 4), data, n);
    be32(tail, c);
    return fwrite(head, 1, 8, f) == 8 && fwrite(data, 1, n, f) == n && fwrite(tail, 1, 4, f) == 4;
}

/* img: height rows of width RGB pixels. */
static int write_png(FILE *f, const unsigned char *img, int width, int height)
{
    const size_t row = 1 + (size_t)width * 3, raw_n = row * (size_t)height;
    const size_t blocks = (raw_n + 65534) / 65535;
    unsigned char *raw = malloc(raw_n), *z = malloc(2 + raw_n + blocks * 5 + 4);
    if (!raw || !z) {
        free(raw), free(z);
        return 0;
    }
    for (int y = 0; y < height; y++) { /* filter type 0 (none) per row */
        raw[(size_t)y * row] = 0;
        memcpy(raw + (size_t)y * row + 1, img + (size_t)y * width * 3, (size_t)width * 3);
    }
    size_t zn = 0;
    z[zn++] = 0x78, z[zn++] = 0x01; /* zlib header: deflate, 32 KiB window, no dictionary */
    uint32_t a = 1, b = 0;
    for (size_t at = 0; at < raw_n;) {
        const size_t len = raw_n - at < 65535 ? raw_n - at : 65535;
        z[zn++] = at + len == raw_n; /* BFINAL, BTYPE 00 (stored) */
        z[zn++] = (unsigned char)len, z[zn++] = (unsigned char)(len >> 8);
        z[zn++] = (unsigned char)~len, z[zn++] = (unsigned char)(~len >> 8);
        memcpy(z + zn, raw + at, len);
        for (size_t i = 0; i < len; i++) {
            a = (a + raw[at + i]) % 65521;
            b = (b + a) % 65521;
        }
        zn += len, at += len;
    }
    be32(z + zn, (b << 16) | a);
    zn += 4;
    unsigned char ihdr[13];
    be32(ihdr, (uint32_t)width);
    be32(ihdr + 4, (uint32_t)height);
    ihdr[8] = 8, ihdr[9] = 2, ihdr[10] = ihdr[11] = ihdr[12] = 0; /* 8-bit RGB */
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    crc_init();
    int ok = fwrite(sig, 1, 8, f) == 8 && chunk(f, "IHDR", ihdr, 13) && chunk(f, "IDAT", z, zn) &&
             chunk(f, "IEND", NULL, 0);
    free(raw), free(z);
    return ok;
}

static int write_image(const options *o, const float *w, int sq, int skv, const char *title)
{
    float wmax = 0;
    for (size_t i = 0; i < (size_t)sq * skv; i++) wmax = w[i] > wmax ? w[i] : wmax;
    FILE *f = fopen(o->out, "wb");
    if (!f) {
        fprintf(stderr, "attn-weights: cannot write %s: %s\n", o->out, strerror(errno));
        return 0;
    }
    const size_t len = strlen(o->out);
    int ok;
    unsigned char rgb[3];
    if (len > 4 && strcmp(o->out + len - 4, ".svg") == 0) {
        const int cell = 10, left = 40, top = 46;
        fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                "font-family=\"sans-serif\" font-size=\"12\">\n<title>%s</title>\n"
                "<text x=\"%d\" y=\"16\">%s</text>\n<text x=\"%d\" y=\"36\">key position "
                "&#8594;</text>\n<text transform=\"translate(24,%d) rotate(90)\">query position "
                "&#8594;</text>\n", left + skv * cell < 640 ? 660 : left + skv * cell + 20,
                top + sq * cell + 10, title, left,
                title, left, top);
        for (int i = 0; i < sq; i++)
            for (int j = 0; j < skv; j++) {
                colour(w[(size_t)i * skv + j], wmax, rgb);
                fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                        "fill=\"#%02x%02x%02x\"><title>q %d, k %d: %.4g</title></rect>\n",
                        left + j * cell, top + i * cell, cell, cell, rgb[0], rgb[1], rgb[2], i, j,
                        (double)w[(size_t)i * skv + j]);
            }
        ok = fprintf(f, "</svg>\n") > 0;
    } else {
        const int cell = o->cell ? o->cell : (skv >= 512 ? 1 : 512 / skv);
        const int width = skv * cell, height = sq * cell;
        unsigned char *img = malloc((size_t)width * height * 3);
        ok = img != NULL;
        for (int y = 0; ok && y < height; y++)
            for (int x = 0; x < width; x++)
                colour(w[(size_t)(y / cell) * skv + x / cell], wmax,
                       img + ((size_t)y * width + x) * 3);
        ok = ok && write_png(f, img, width, height);
        free(img);
    }
    ok = fclose(f) == 0 && ok;
    if (!ok) fprintf(stderr, "attn-weights: writing %s failed\n", o->out);
    return ok;
}

int main(int argc, char **argv)
{
    options o = {NULL, NULL, 48, 4, 2, 32, 0, -1, 0, 1, 0, ATTN_F32, 7};
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0) return rc;
    const int S = o.seq, H = o.q_heads, Hk = o.kv_heads, D = o.head_dim;
    attn_context *ctx = NULL;
    attn_status st = attn_context_create(o.device, &ctx);
    if (st != ATTN_SUCCESS) {
        fprintf(stderr, "attn-weights: %s: %s\n", attn_status_name(st), attn_last_create_error());
        return EXIT_FAILURE;
    }
    /* Keys random; each query close to its own key (and a little to the one
     * before), so the weights have a visible diagonal. */
    rng = o.seed;
    const size_t nq = (size_t)H * S * D, nk = (size_t)Hk * S * D;
    float *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k);
    float *w = malloc((size_t)S * S * sizeof *w);
    cl_mem mq = NULL, mk = NULL;
    rc = EXIT_FAILURE;
    if (!q || !k || !w) {
        fprintf(stderr, "attn-weights: out of host memory\n");
        goto done;
    }
    for (size_t i = 0; i < nk; i++) k[i] = (float)normal();
    for (int h = 0; h < H; h++)
        for (int s = 0; s < S; s++)
            for (int d = 0; d < D; d++) {
                const float *kr = k + ((size_t)(h / (H / Hk)) * S + s) * D;
                q[((size_t)h * S + s) * D + d] =
                    (float)(0.5 * kr[d] + (s > 0 ? 0.35 * kr[d - D] : 0) + normal());
            }
    mq = upload(ctx, o.dtype, q, nq);
    mk = upload(ctx, o.dtype, k, nk);
    if (!mq || !mk) {
        fprintf(stderr, "attn-weights: clCreateBuffer failed\n");
        goto done;
    }
    const attn_tensor tq = {mq, 0, nq, (size_t)S * D, (size_t)D};
    const attn_tensor tk = {mk, 0, nk, (size_t)S * D, (size_t)D};
    const attn_problem p = {1, H, Hk, D, S, S, o.dtype, o.causal, 0};
    const int start = o.left_pad, len = S - o.left_pad - o.right_pad;
    const attn_lengths L = {&start, &len, &start, &len};
    st = attn_attention_weights(ctx, &p, &tq, &tk, &L, 0, o.head, w);
    if (st != ATTN_SUCCESS) {
        fprintf(stderr, "attn-weights: attn_attention_weights: %s: %s\n", attn_status_name(st),
                attn_last_error(ctx));
        goto done;
    }
    char title[256];
    snprintf(title, sizeof title, "attention weights, head %d of Hq=%d Hkv=%d D=%d, S=%d, %s, "
             "content [%d, %d), %s", o.head, H, Hk, D, S, o.causal ? "causal" : "full", start,
             start + len, attn_dtype_name(o.dtype));
    if (write_image(&o, w, S, S, title)) {
        printf("attn-weights: wrote %s (%s)\n", o.out, title);
        rc = EXIT_SUCCESS;
    }
done:
    if (mq) clReleaseMemObject(mq);
    if (mk) clReleaseMemObject(mk);
    free(q), free(k), free(w);
    attn_context_release(ctx);
    return rc;
}
