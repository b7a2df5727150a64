/* attn-weights -- draws the softmax weights of one (batch entry, head) as a
 * heatmap a person can open (PNG, or SVG by the file's extension), through
 * attn_attention_weights: of the user's own Q and K (.npy or raw files), or
 * of a synthetic causal problem with left or right padding, so that the
 * masks' structure can be seen. Uses only attn.h. */
#define _POSIX_C_SOURCE 200809L
#include "attn.h"
#include "core/file_write.h"
#include "core/text.h"
#include "heatmap.h"
#include "png_write.h"
#include "measure/sampling.h"
#include "tensor_file.h"
#include "tool_error.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define EXIT_USAGE 2

typedef struct options {
    const char *device, *out, *q_path, *k_path;
    int seq, q_heads, kv_heads, head_dim, head, batch_index, left_pad, right_pad, causal, cell;
    int q_shape[4], k_shape[4], has_q_shape, has_k_shape;
    int synthetic_set; /* an option that only the synthetic problem takes was given */
    attn_dtype dtype, raw_type;
    int dtype_set;
    unsigned seed;
} options;

static void usage(FILE *f)
{
    fprintf(f,
        "Usage: attn-weights --out FILE [OPTIONS]\n"
        "Draws the attention weights [query, key] of one head as a heatmap: PNG (with\n"
        "axes, a colour scale and a legend) or SVG, by FILE's extension (.png or .svg;\n"
        "any other is refused). The weights are on a dark-blue-to-yellow scale of\n"
        "(weight / largest weight)^0.5; keys the causal mask hides from a real query are\n"
        "mid grey (#6e6e6e), pad queries and keys light grey (#c8c8c8).\n"
        "\n"
        "Your own data: --q and --k, [B, H, S, D] (BHSD; a 3-D [H, S, D] or 2-D [S, D]\n"
        "file is one batch entry, one head). A FILE.npy is read with its header (dtype\n"
        "'<f4' or '<f2', C order); any other file is raw little-endian elements of\n"
        "--raw-type with the shape given by --q-shape / --k-shape.\n"
        "  --q FILE, --k FILE    the queries and keys\n"
        "  --q-shape B,H,S,D     a raw Q's shape (or H,S,D or S,D); checked against a .npy\n"
        "  --k-shape B,H,S,D     the same for K\n"
        "  --raw-type f32|f16|bf16  a raw file's element type (default f32)\n"
        "  --batch-index N       the batch entry to draw (default 0)\n"
        "Without --q and --k the problem is synthetic (one batch entry, random keys, each\n"
        "query near its own key, so the diagonal stands out):\n"
        "  --seq N               padded sequence length (default 48)\n"
        "  --q-heads N, --kv-heads N, --head-dim N   (default 4, 2, 32)\n"
        "  --seed N              random seed (default 7)\n"
        "Either way:\n"
        "  --out FILE            the image to write (required)\n"
        "  --device SEL          as for attn-bench (default $ATTN_DEVICE, else the first GPU)\n"
        "  --left-pad N          pad positions before the content of every query and key\n"
        "                        sequence (default seq/4 for the synthetic problem, else 0)\n"
        "  --right-pad N         pad positions after the content (default 0)\n"
        "  --head H              the query head to draw (default 0)\n"
        "  --causal, --no-causal bottom-right causal mask or none (default causal)\n"
        "  --dtype f32|f16|bf16  storage type of the computation (default: Q's file's type,\n"
        "                        else f32)\n"
        "  --cell N              pixels per weight in a PNG (default: a map about 512 px)\n"
        "  --help, --version\n"
        "\n"
        "Exit status: 0 ok, 1 a library or file error (a bad .npy, Q and K that do not\n"
        "fit together), 2 bad usage.\n");
}

static int parse_int(const char *opt, const char *text, int lo, int hi, int *out)
{
    if (attn_parse_int(text, lo, hi, out)) {
        fprintf(stderr, "attn-weights: --%s wants an integer in %d..%d, not '%s'\n", opt, lo, hi,
                text);
        return -1;
    }
    return 0;
}

static int parse_dtype(const char *opt, const char *text, attn_dtype *out)
{
    if (strcmp(text, "f32") == 0) *out = ATTN_F32;
    else if (strcmp(text, "f16") == 0) *out = ATTN_F16;
    else if (strcmp(text, "bf16") == 0) *out = ATTN_BF16;
    else {
        fprintf(stderr, "attn-weights: --%s wants f32, f16 or bf16, not '%s'\n", opt, text);
        return -1;
    }
    return 0;
}

static int parse_shape(const char *opt, const char *text, int dims[4], int *has)
{
    char err[256];
    if (tensor_shape_parse(text, dims, err, sizeof err) != 0) {
        fprintf(stderr, "attn-weights: --%s: %s\n", opt, err);
        return -1;
    }
    *has = 1;
    return 0;
}

/* ".png" or ".svg" at the end of path, in any case; NULL otherwise. */
static const char *image_type(const char *path)
{
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    const size_t n = strlen(base); /* a name before the extension: ".png" alone is none */
    if (n > 4 && strcasecmp(base + n - 4, ".png") == 0) return "png";
    if (n > 4 && strcasecmp(base + n - 4, ".svg") == 0) return "svg";
    return NULL;
}

/* Returns -1 to continue, else the exit status. */
static int parse_args(int argc, char **argv, options *o)
{
    enum { DEV = 256, OUT, SEQ, LPAD, RPAD, QH, KVH, HD, HEAD, CAUSAL, NOCAUSAL, DTYPE, CELL,
           SEED, QFILE, KFILE, QSHAPE, KSHAPE, RAWTYPE, BATCH, HELP, VERSION };
    static const struct option longopts[] = {
        {"device", required_argument, NULL, DEV}, {"out", required_argument, NULL, OUT},
        {"seq", required_argument, NULL, SEQ}, {"left-pad", required_argument, NULL, LPAD},
        {"right-pad", required_argument, NULL, RPAD}, {"q-heads", required_argument, NULL, QH},
        {"kv-heads", required_argument, NULL, KVH}, {"head-dim", required_argument, NULL, HD},
        {"head", required_argument, NULL, HEAD}, {"causal", no_argument, NULL, CAUSAL},
        {"no-causal", no_argument, NULL, NOCAUSAL}, {"dtype", required_argument, NULL, DTYPE},
        {"cell", required_argument, NULL, CELL}, {"seed", required_argument, NULL, SEED},
        {"q", required_argument, NULL, QFILE}, {"k", required_argument, NULL, KFILE},
        {"q-shape", required_argument, NULL, QSHAPE}, {"k-shape", required_argument, NULL, KSHAPE},
        {"raw-type", required_argument, NULL, RAWTYPE},
        {"batch-index", required_argument, NULL, BATCH},
        {"help", no_argument, NULL, HELP}, {"version", no_argument, NULL, VERSION},
        {NULL, 0, NULL, 0}};
    int c, bad = 0, seed = 7;
    o->left_pad = -1;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case DEV: o->device = optarg; break;
        case OUT: o->out = optarg; break;
        case SEQ: bad |= parse_int("seq", optarg, 1, 8192, &o->seq); break;
        case LPAD: bad |= parse_int("left-pad", optarg, 0, 1 << 30, &o->left_pad); break;
        case RPAD: bad |= parse_int("right-pad", optarg, 0, 1 << 30, &o->right_pad); break;
        case QH: bad |= parse_int("q-heads", optarg, 1, 1024, &o->q_heads); break;
        case KVH: bad |= parse_int("kv-heads", optarg, 1, 1024, &o->kv_heads); break;
        case HD: bad |= parse_int("head-dim", optarg, 1, 256, &o->head_dim); break;
        case HEAD: bad |= parse_int("head", optarg, 0, 1 << 30, &o->head); break;
        case CAUSAL: o->causal = 1; break;
        case NOCAUSAL: o->causal = 0; break;
        case DTYPE: bad |= parse_dtype("dtype", optarg, &o->dtype), o->dtype_set = 1; break;
        case CELL: bad |= parse_int("cell", optarg, 1, 64, &o->cell); break;
        case SEED: bad |= parse_int("seed", optarg, 0, 1 << 30, &seed); break;
        case QFILE: o->q_path = optarg; break;
        case KFILE: o->k_path = optarg; break;
        case QSHAPE: bad |= parse_shape("q-shape", optarg, o->q_shape, &o->has_q_shape); break;
        case KSHAPE: bad |= parse_shape("k-shape", optarg, o->k_shape, &o->has_k_shape); break;
        case RAWTYPE: bad |= parse_dtype("raw-type", optarg, &o->raw_type); break;
        case BATCH: bad |= parse_int("batch-index", optarg, 0, 1 << 30, &o->batch_index); break;
        case HELP:
            if (bad) break; /* an error before --help is still one */
            usage(stdout);
            return EXIT_SUCCESS;
        case VERSION:
            if (bad) break; /* as --help: an error before it is still one */
            printf("attn-weights %d.%d.%d (libattn %s)\n", ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR,
                   ATTN_VERSION_PATCH, attn_version_string());
            return EXIT_SUCCESS;
        default: bad = -1; break;
        }
        if (c == SEQ || c == QH || c == KVH || c == HD || c == SEED) o->synthetic_set = 1;
    }
    o->seed = (unsigned)seed;
    const int files = o->q_path || o->k_path;
    char why[256] = "";
    if (bad) {
    } else if (optind < argc) {
        snprintf(why, sizeof why, "unexpected argument '%s'", argv[optind]);
    } else if (!o->out) {
        snprintf(why, sizeof why, "--out FILE is required");
    } else if (!image_type(o->out)) {
        const char *slash = strrchr(o->out, '/'), *base = slash ? slash + 1 : o->out;
        const char *dot = strrchr(base, '.');
        if (dot == base && (strcasecmp(base, ".png") == 0 || strcasecmp(base, ".svg") == 0))
            snprintf(why, sizeof why, "--out %s: a file name is needed before the extension",
                     o->out);
        else
            snprintf(why, sizeof why, "--out %s: the image type comes from the extension, which "
                     "must be .png or .svg%s%s%s", o->out, dot ? ", not '" : "", dot ? dot : "",
                     dot ? "'" : "");
    } else if (files && !(o->q_path && o->k_path)) {
        snprintf(why, sizeof why, "--q and --k go together");
    } else if (files && o->synthetic_set) {
        snprintf(why, sizeof why, "--seq, --q-heads, --kv-heads, --head-dim and --seed describe "
                 "the synthetic problem; with --q and --k the shapes come from the files");
    } else if (!files && o->q_heads % o->kv_heads) {
        snprintf(why, sizeof why, "--q-heads must be a multiple of --kv-heads");
    } else if (!files && (o->has_q_shape || o->has_k_shape || o->batch_index)) {
        snprintf(why, sizeof why, "--q-shape, --k-shape and --batch-index need --q and --k");
    }
    if (why[0]) fprintf(stderr, "attn-weights: %s\n", why);
    if (bad || why[0]) {
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
    for (int i = 0; i < 2; i++) u[i] = ((double)(attn_splitmix64(&rng) >> 11) + 1.0) * 0x1.0p-53;
    return sqrt(-2.0 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

/* Q [1, H, S, D] and K [1, Hk, S, D]: keys random, each query close to its
 * own key (and a little to the one before), so the weights have a visible
 * diagonal. Returns 0, or -1 when out of memory. */
static int synthetic(const options *o, tensor_file *q, tensor_file *k)
{
    const int S = o->seq, H = o->q_heads, Hk = o->kv_heads, D = o->head_dim;
    rng = o->seed;
    *q = (tensor_file){{1, H, S, D}, ATTN_F32, malloc((size_t)H * S * D * sizeof(float))};
    *k = (tensor_file){{1, Hk, S, D}, ATTN_F32, malloc((size_t)Hk * S * D * sizeof(float))};
    if (!q->data || !k->data) return -1;
    for (size_t i = 0; i < (size_t)Hk * S * D; i++) k->data[i] = (float)normal();
    for (int h = 0; h < H; h++)
        for (int s = 0; s < S; s++)
            for (int d = 0; d < D; d++) {
                const float *kr = k->data + ((size_t)(h / (H / Hk)) * S + s) * D;
                q->data[((size_t)h * S + s) * D + d] =
                    (float)(0.5 * kr[d] + (s > 0 ? 0.35 * kr[d - D] : 0) + normal());
            }
    return 0;
}

/* ---- the device ---- */

/* A packed BHSD tensor of floats uploaded as dtype t. */
static cl_mem upload(attn_context *ctx, attn_dtype t, const tensor_file *x, attn_tensor *out)
{
    const int *d = x->dims;
    const size_t n = (size_t)d[0] * d[1] * d[2] * d[3];
    void *raw = malloc(n * attn_dtype_size(t));
    if (!raw) return NULL;
    attn_convert_from_f32(t, x->data, raw, n);
    cl_int err;
    cl_mem m = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                              n * attn_dtype_size(t), raw, &err);
    free(raw);
    *out = (attn_tensor){m, 0, (size_t)d[1] * d[2] * d[3], (size_t)d[2] * d[3], (size_t)d[3]};
    return err == CL_SUCCESS ? m : NULL;
}

/* ---- the picture ---- */

/* A PNG's pixels per weight: --cell, else a map about 512 px. */
static int png_cell(const options *o, int sq, int skv)
{
    const int longest = sq > skv ? sq : skv;
    return o->cell ? o->cell : longest >= 512 ? 1 : 512 / longest;
}

/* What each cell [i][j] is, from the lengths and the mask alone (not from
 * the weights), with attn_forward's rule: content query i sees content key
 * j iff j <= i + (kv_len - q_len) when causal. */
static void classify(unsigned char *kind, int sq, int skv, int qs, int ql, int ks, int kl,
                     int causal)
{
    for (int i = 0; i < sq; i++)
        for (int j = 0; j < skv; j++) {
            unsigned char c = CELL_WEIGHT;
            if (i < qs || i >= qs + ql || j < ks || j >= ks + kl) c = CELL_PAD;
            else if (causal && j - ks > i - qs + (kl - ql)) c = CELL_MASKED;
            kind[(size_t)i * skv + j] = c;
        }
}

static int write_image(const options *o, const float *w, const unsigned char *kind, int sq,
                       int skv, const char *title)
{
    int ok = 0, width = 0, height = 0;
    unsigned char *img = NULL;
    if (strcmp(image_type(o->out), "png") == 0) { /* drawn before the file is opened */
        img = heatmap_render(w, kind, sq, skv, png_cell(o, sq, skv), &width, &height);
        if (!img) {
            fprintf(stderr, "attn-weights: out of host memory for the image\n");
            return 0;
        }
    }
    /* into a temporary beside it, then renamed: a failed write leaves
     * neither a partial picture nor an existing file destroyed */
    char tmp[4200];
    FILE *f = attn_create_beside(o->out, tmp, sizeof tmp);
    if (!f) {
        fprintf(stderr, "attn-weights: cannot write %s (through %s): %s\n", o->out, tmp,
                strerror(errno));
        free(img);
        return 0;
    }
    ok = img ? png_write(f, img, width, height, title) : heatmap_write_svg(f, w, kind, sq, skv, title);
    ok = fclose(f) == 0 && ok;
    free(img);
    if (ok && rename(tmp, o->out) != 0) {
        fprintf(stderr, "attn-weights: cannot write %s: %s\n", o->out, strerror(errno));
        ok = 0;
    } else if (!ok) {
        fprintf(stderr, "attn-weights: writing %s failed\n", o->out);
    }
    if (!ok) remove(tmp);
    return ok;
}

/* ---- the inputs ---- */

/* Q and K from the files, or the synthetic problem. Returns 0, or the exit
 * status after a message. */
static int load_inputs(options *o, tensor_file *q, tensor_file *k)
{
    char err[512];
    if (!o->q_path) {
        if (o->left_pad < 0) o->left_pad = o->seq / 4;
        if (synthetic(o, q, k) != 0) {
            fprintf(stderr, "attn-weights: out of host memory\n");
            return EXIT_FAILURE;
        }
        return 0;
    }
    if (o->left_pad < 0) o->left_pad = 0;
    if (tensor_file_read(o->q_path, o->has_q_shape ? o->q_shape : NULL, o->raw_type, q, err,
                         sizeof err) != 0 ||
        tensor_file_read(o->k_path, o->has_k_shape ? o->k_shape : NULL, o->raw_type, k, err,
                         sizeof err) != 0) {
        fprintf(stderr, "attn-weights: %s\n", err);
        return EXIT_FAILURE;
    }
    const int *a = q->dims, *b = k->dims;
    const char *why = NULL;
    if (a[0] != b[0]) why = "Q and K have different batch sizes";
    else if (a[3] != b[3]) why = "Q and K have different head dims";
    else if (a[1] % b[1]) why = "Q's heads are not a multiple of K's";
    if (why) {
        fprintf(stderr, "attn-weights: %s (Q %d,%d,%d,%d, K %d,%d,%d,%d as B,H,S,D)\n", why,
                a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]);
        return EXIT_FAILURE;
    }
    if (!o->dtype_set) o->dtype = q->dtype;
    return 0;
}

static int run(int argc, char **argv)
{
    options o = {.seq = 48, .q_heads = 4, .kv_heads = 2, .head_dim = 32, .causal = 1,
                 .dtype = ATTN_F32, .raw_type = ATTN_F32, .seed = 7};
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0) return rc;
    tensor_file q = {{0}, ATTN_F32, NULL}, k = {{0}, ATTN_F32, NULL};
    attn_context *ctx = NULL;
    cl_mem mq = NULL, mk = NULL;
    float *w = NULL;
    unsigned char *kind = NULL;
    if ((rc = load_inputs(&o, &q, &k)) != 0) goto done;
    const int B = q.dims[0], H = q.dims[1], Hk = k.dims[1], D = q.dims[3];
    const int Sq = q.dims[2], Skv = k.dims[2];
    const char *why = NULL;
    const int cell = png_cell(&o, Sq, Skv); /* refused before the weights are computed */
    const int png = strcmp(image_type(o.out), "png") == 0;
    if (png && !heatmap_fits(Sq, Skv, cell)) {
        fprintf(stderr, "attn-weights: --out %s: %d x %d weights at --cell %d would make a map "
                "of %ld x %ld pixels, more than the %d a side a PNG here may have (a smaller "
                "--cell, shorter sequences, or .svg)\n", o.out, Sq, Skv, cell, (long)Skv * cell,
                (long)Sq * cell, HEATMAP_MAX_SIDE);
        rc = EXIT_USAGE;
        goto done;
    }
    if (o.head >= H) why = "--head must be below the number of query heads";
    else if (o.batch_index >= B) why = "--batch-index must be below the batch size";
    else if ((long)o.left_pad + o.right_pad > Sq || (long)o.left_pad + o.right_pad > Skv)
        why = "the padding exceeds a sequence's length";
    if (why) {
        fprintf(stderr, "attn-weights: %s (Q is %d,%d,%d,%d as B,H,S,D)\n", why, B, H, Sq, D);
        rc = EXIT_USAGE;
        goto done;
    }
    rc = EXIT_FAILURE;
    attn_status st = attn_context_create(o.device, &ctx);
    if (st != ATTN_SUCCESS) {
        tool_error("attn-weights", NULL, NULL, st, attn_last_create_error());
        goto done;
    }
    w = malloc((size_t)Sq * Skv * sizeof *w);
    kind = malloc((size_t)Sq * Skv);
    if (!w || !kind) {
        fprintf(stderr, "attn-weights: out of host memory\n");
        goto done;
    }
    attn_tensor tq, tk;
    mq = upload(ctx, o.dtype, &q, &tq);
    mk = upload(ctx, o.dtype, &k, &tk);
    if (!mq || !mk) {
        fprintf(stderr, "attn-weights: clCreateBuffer failed\n");
        goto done;
    }
    const attn_problem p = {.batch = B, .q_heads = H, .kv_heads = Hk, .head_dim = D, .q_len = Sq,
                            .kv_len = Skv, .dtype = o.dtype, .causal = o.causal, .scale = 0};
    int *lens = malloc(4 * (size_t)B * sizeof *lens);
    if (!lens) {
        fprintf(stderr, "attn-weights: out of host memory\n");
        goto done;
    }
    const int ql = Sq - o.left_pad - o.right_pad, kl = Skv - o.left_pad - o.right_pad;
    for (int b = 0; b < B; b++) /* the same padding for every batch entry */
        lens[b] = lens[2 * B + b] = o.left_pad, lens[B + b] = ql, lens[3 * B + b] = kl;
    const attn_lengths L = {lens, lens + B, lens + 2 * B, lens + 3 * B};
    st = attn_attention_weights(ctx, &p, &tq, &tk, &L, o.batch_index, o.head, w);
    free(lens);
    if (st != ATTN_SUCCESS) {
        tool_error("attn-weights", NULL, "attn_attention_weights", st, attn_last_error(ctx));
        goto done;
    }
    classify(kind, Sq, Skv, o.left_pad, ql, o.left_pad, kl, o.causal);
    size_t stray = 0; /* the library promises exact zeros outside the visible cells */
    for (size_t i = 0; i < (size_t)Sq * Skv; i++) stray += kind[i] != CELL_WEIGHT && w[i] != 0;
    if (stray)
        fprintf(stderr, "attn-weights: warning: %zu masked or pad cells hold a non-zero "
                "weight\n", stray);
    /* A NaN or infinite logit (NaN or inf in Q or K, also where --dtype
     * rounds a large value to inf, or a logit past the contract's bound)
     * gives its row weights of 0, attn_forward's zeros: said, or such a row
     * would pass for one that attends nowhere */
    size_t zero_rows = 0, nonfinite = 0;
    for (size_t i = 0; i < (size_t)Sq; i++) {
        int sees = 0, weighs = 0;
        for (size_t j = 0; j < (size_t)Skv; j++) {
            sees |= kind[i * Skv + j] == CELL_WEIGHT;
            weighs |= kind[i * Skv + j] == CELL_WEIGHT && w[i * Skv + j] != 0;
        }
        zero_rows += sees && !weighs;
    }
    if (zero_rows)
        fprintf(stderr, "attn-weights: warning: %zu rows that see keys have weights of 0: a NaN "
                "or infinite logit (NaN or inf in Q or K, in --dtype too, or |scale q.k| past "
                "attn's bound), outside attn's contract\n", zero_rows);
    for (size_t i = 0; i < (size_t)Sq * Skv; i++) nonfinite += !isfinite(w[i]);
    if (nonfinite) /* not from the library (its weights are finite), drawn as 0 */
        fprintf(stderr, "attn-weights: warning: %zu weights are not finite, drawn as 0\n",
                nonfinite);
    char title[512];
    snprintf(title, sizeof title, "attention weights of %s, batch entry %d, head %d of Hq=%d "
             "Hkv=%d D=%d, Sq=%d Skv=%d, %s, query content [%d, %d), key content [%d, %d), %s",
             o.q_path ? o.q_path : "a synthetic problem", o.batch_index, o.head, H, Hk, D, Sq,
             Skv, o.causal ? "causal" : "full", o.left_pad, o.left_pad + ql, o.left_pad,
             o.left_pad + kl, attn_dtype_name(o.dtype));
    if (write_image(&o, w, kind, Sq, Skv, title)) {
        printf("attn-weights: wrote %s (%s)\n", o.out, title);
        rc = stray ? EXIT_FAILURE : EXIT_SUCCESS;
    }
done:
    if (mq) clReleaseMemObject(mq);
    if (mk) clReleaseMemObject(mk);
    tensor_file_free(&q), tensor_file_free(&k);
    free(w), free(kind);
    attn_context_release(ctx);
    return rc;
}

int main(int argc, char **argv) { return tool_exit("attn-weights", run(argc, argv)); }
