/* case_table.c -- the one table of correctness cases (see cases.h). Each row
 * names the suite test that runs it (group), the kernel families it runs
 * under and the problem; together the rows cover (rather than multiply out)
 * the problem space: MHA, GQA and MQA; causal and not; right, left and mixed
 * padding with empty batch entries; Sq < Skv and Sq > Skv (rows with nothing
 * visible); lengths 1 to 1000; head dims 1 to 256; strided layouts; the
 * three storage types; custom and default scales; in place. Then the
 * attention variants alone and together, in forward and decode
 * (test_variants, test_variants_decode), the seed-failure rows (test_seed_failures, each named after the failure it
 * guards against) and the tiny rows Oclgrind runs (oclgrind_kernels). */
#include "cases.h"

#define SHAPE(b, hq, hkv, d, sq, skv) .B = (b), .Hq = (hq), .Hkv = (hkv), .D = (d), .Sq = (sq), .Skv = (skv)
#define LENS(qs, ql, ks, kl) .q_start = (qs), .q_len = (ql), .kv_start = (ks), .kv_len = (kl)
#define ALL_LAYOUTS(...) .lq = __VA_ARGS__, .lk = __VA_ARGS__, .lv = __VA_ARGS__, .lo = __VA_ARGS__

/* layouts */
#define BSHD {HARNESS_BSHD, 0, 0, 0}
#define BSHD_GAPPY {HARNESS_BSHD, 11, 8, 4}  /* offset, row padding, spare capacity */
#define BHSD_GAPPY {HARNESS_BHSD, 5, 3, 2}
#define BHSD_OFF_PAD {HARNESS_BHSD, 5, 3, 0}
#define BHSD_CACHE {HARNESS_BHSD, 0, 0, 23} /* a KV cache with spare capacity */
#define ODD_OFFSETS {HARNESS_BHSD, 3, 1, 2} /* 2-byte alignment only */
#define ODD_START {HARNESS_BHSD, 1, 0, 0}
#define BHSD_SPARE {HARNESS_BHSD, 0, 0, 13}  /* capacity past the problem's Skv */
#define BSHD_SPARE {HARNESS_BSHD, 4, 0, 13}

/* padding: entry 0 full, 1 right-padded, 2 left-padded, 3 mixed (q left, kv
 * in the middle), 4 q_len = 0, 5 kv_len = 0, 6 q_len > kv_len (causal
 * leaves the first rows empty) */
enum { PB = 7, PS = 19 };
static const int pqs[PB] = {0, 0, 6, 9, 0, 4, 0}, pql[PB] = {19, 13, 13, 10, 0, 9, 17};
static const int pks[PB] = {0, 0, 8, 3, 0, 0, 2}, pkl[PB] = {19, 15, 11, 12, 19, 0, 5};
#define PADDED LENS(pqs, pql, pks, pkl)

static const int kv_left_s[1] = {37}, kv_left_l[1] = {963};
static const int dq1s[3] = {0, 0, 0}, dq1l[3] = {1, 1, 0}, dk1s[3] = {0, 200, 10},
                 dk1l[3] = {257, 57, 100};
static const int dq7s[2] = {0, 2}, dq7l[2] = {7, 5}, dk7s[2] = {20, 0}, dk7l[2] = {13, 1};
static const int lay_ks[2] = {0, 4}, lay_kl[2] = {21, 17};
static const int dt_qs[2] = {0, 3}, dt_ql[2] = {26, 23}, dt_ks[2] = {0, 5}, dt_kl[2] = {30, 20};
static const int ip_qs[2] = {0, 5}, ip_ql[2] = {33, 20};
static const int tl_qs[2] = {0, 4}, tl_ql[2] = {37, 29}, tl_ks[2] = {0, 1}, tl_kl[2] = {45, 39};
static const int ck_qs[2] = {0, 2}, ck_ql[2] = {21, 17}, ck_ks[2] = {0, 3}, ck_kl[2] = {21, 0};
static const int mqa_kl[2] = {13, 70};
static const int wl_kl[2] = {70, 41}; /* the tiled decode's padded vectors */
static const int dc_kl[3] = {50, 20, 33}, dc_ql[3] = {3, 1, 0}, dc_kl2[3] = {40, 7, 12};
/* decode windows far from the cache's start: splits begin at each
 * sequence's first windowed block (decode_key_base), not at key 0; the
 * first's first visible key (288 - 3 - 30 = 255) is a block's last, where
 * a base one too far drops a block */
static const int dw_kl[3] = {288, 181, 97}, dw_ql[3] = {3, 1, 2};
/* ... and the longest span not the longest cache's: a cache shorter than
 * the window (span 20), spans 44 and 49 (keys 16: the last sets the chunk) */
static const int dw_kl2[3] = {300, 20, 97}, dw_ql2[3] = {2, 5, 5};
/* the variants' lengths: packed sequences of 1, 7, 33 and 64 along one
 * axis; a packed axis with rows no entry owns (3, 11 of q; 10, 11, 39 of kv) */
static const int pk_s[4] = {0, 1, 8, 41}, pk_l[4] = {1, 7, 33, 64};
static const int pg_qs[3] = {0, 4, 6}, pg_ql[3] = {3, 1, 5}, pg_ks[3] = {0, 12, 32},
                 pg_kl[3] = {10, 20, 7};
/* nine short packed entries of uneven lengths, gaps between some (rows no
 * entry owns): each entry's own K/V blocks and mask tiles, not the axis' */
static const int p9_qs[9] = {0, 6, 23, 26, 66, 75, 111, 113, 178},
                 p9_ql[9] = {5, 17, 1, 40, 9, 33, 2, 64, 12};
static const int p9_ks[9] = {2, 11, 29, 59, 102, 103, 153, 165, 229},
                 p9_kl[9] = {9, 17, 30, 40, 1, 50, 7, 64, 20};
static const float alibi4[4] = {0.7f, 0.3f, 0.05f, 1.2f};
/* head 0's bias reaches past -FLT_MAX / 2 in log2 units for queries 59 and
 * more positions from the key: those keys count as masked (attn.h) */
static const float alibi_huge[2] = {2e36f, 0.5f};
/* decode: query row 2 of entries 0 and 1 masked whole (the mask's every
 * fifth row; with sinks: zeros and LSE = the sink); entry 1's queries are
 * its whole cache, entry 2 has pad rows */
static const int dz_ql[3] = {3, 3, 1}, dz_kl[3] = {40, 3, 17};
/* long blocks through a KV cache (more than ATTN_DECODE_MAX_Q_LEN rows):
 * ragged, a sequence with no new query, one whose queries are its whole
 * cache; the variants' a query block 65 long (the first past the limit) */
static const int pf_ql[3] = {100, 70, 0}, pf_kl[3] = {230, 70, 15}, pf_kl2[2] = {150, 90};
static const int pf_ql3[2] = {97, 50}, pf_ql4[3] = {72, 65, 10}, pf_kl4[3] = {160, 65, 100};
/* the seed-failure rows' lengths */
static const int mv_qs[3] = {0, 4, 0}, mv_ql[3] = {23, 19, 23}, mv_ks[3] = {0, 0, 6},
                 mv_kl[3] = {23, 15, 9};
static const int lp_qs[2] = {10, 0}, lp_ql[2] = {19, 29}, lp_ks[2] = {8, 0}, lp_kl[2] = {21, 29};
static const int kd_ks[1] = {9}, kd_kl[1] = {27};
static const int og_qs[3] = {0, 4, 0}, og_ql[3] = {7, 6, 3};
static const int og_ks[3] = {0, 5, 2}, og_kl[3] = {9, 7, 0}; /* entry 2: no keys at all */
static const int ocp_s[2] = {0, 5}, ocp_l[2] = {5, 6}; /* Oclgrind's packed row */
static const int zq_qs[2] = {0, 3}, zq_ql[2] = {9, 6}, zq_ks[2] = {0, 2}, zq_kl[2] = {9, 7};

#define F(group_, name_) .group = (group_), .name = (name_), .families = HARNESS_FORWARD
#define SEED(group_, name_)                                                                     \
    .group = (group_), .name = (name_),                                                         \
    .families = HARNESS_AUTO | HARNESS_TILED | HARNESS_FLASH | HARNESS_MMA
#define M(group_, name_) .group = (group_), .name = (name_), .families = HARNESS_AUTO, .poison_pads = 1
/* every head dim in the 16-bit types, one small case each */
#define SWEEP(t, d, seed_)                                                                     \
    {F("forward/dtype_sweep", #t " head dim sweep D" #d), SHAPE(1, 2, 1, d, 17, 20),          \
     .dtype = t, .causal = 1, ALL_LAYOUTS(ODD_START), .seed = (seed_)}

const harness_case harness_cases[] = {
    /* ---- forward: head dims, fp32, each carrying other features ---- */
    {F("forward/head_dims", "D1 non-causal Sq7 Skv257"), SHAPE(1, 2, 1, 1, 7, 257), .seed = 100},
    {F("forward/head_dims", "D7 MHA causal"), SHAPE(2, 2, 2, 7, 33, 33), .causal = 1, .seed = 101},
    /* 2 past a multiple of 4: the last 4-wide load's third element is pad */
    {F("forward/head_dims", "D6 GQA Sq9 Skv13"), SHAPE(1, 4, 2, 6, 9, 13), .causal = 1,
     .seed = 109},
    {F("forward/head_dims", "D16 GQA BSHD"), SHAPE(2, 4, 2, 16, 7, 7), ALL_LAYOUTS(BSHD), .seed = 102},
    {F("forward/head_dims", "D40 MQA Sq7 Skv33"), SHAPE(1, 4, 1, 40, 7, 33), .causal = 1, .seed = 103},
    {F("forward/head_dims", "D64 GQA S257"), SHAPE(1, 8, 2, 64, 257, 257), .causal = 1, .seed = 104},
    {F("forward/head_dims", "D80 decode Sq1 Skv257"), SHAPE(2, 4, 1, 80, 1, 257), .causal = 1, .seed = 105},
    /* Sq > Skv: causal leaves the first 26 rows with nothing visible */
    {F("forward/head_dims", "D96 Sq33 > Skv7"), SHAPE(1, 2, 1, 96, 33, 7), .causal = 1, .seed = 106},
    {F("forward/head_dims", "D128 S1"), SHAPE(2, 2, 2, 128, 1, 1), .causal = 1, .seed = 107},
    {F("forward/head_dims", "D256 GQA S33 BSHD"), SHAPE(1, 4, 2, 256, 33, 33), .causal = 1,
     .lq = BSHD, .lo = BSHD, .seed = 108},

    /* ---- forward: many heads, exact tile multiples, large logits ---- */
    {F("forward/more_shapes", "Hq32 Hkv8 D128 S65"), SHAPE(1, 32, 8, 128, 65, 65), .causal = 1, .seed = 151},
    {F("forward/more_shapes", "S64 exact tiles"), SHAPE(1, 2, 1, 64, 64, 64), .causal = 1, .seed = 152},
    {F("forward/more_shapes", "Sq32 Skv96 exact tiles"), SHAPE(2, 2, 2, 64, 32, 96), .causal = 1, .seed = 153},
    /* logits in the hundreds: only a max-subtracted softmax survives */
    {F("forward/more_shapes", "large logits"), SHAPE(1, 2, 1, 64, 45, 45), .causal = 1, .amp = 8.0f, .seed = 154},
    {F("forward/more_shapes", "large logits f16 non-causal"), SHAPE(1, 2, 2, 64, 33, 33),
     .dtype = ATTN_F16, .amp = 6.0f, .seed = 155},

    /* ---- forward: length 1000 ---- */
    {F("forward/long", "S1000 causal"), SHAPE(1, 2, 1, 64, 1000, 1000), .causal = 1, .seed = 201},
    {F("forward/long", "Sq257 Skv1000 kv left-pad"), SHAPE(1, 2, 2, 128, 257, 1000),
     LENS(NULL, NULL, kv_left_s, kv_left_l), .seed = 202},

    /* ---- forward: padding; some arrays NULL ---- */
    {F("forward/padding", "padding non-causal"), SHAPE(PB, 4, 2, 64, PS, PS), PADDED, .seed = 301},
    {F("forward/padding", "padding causal"), SHAPE(PB, 4, 2, 64, PS, PS), PADDED, .causal = 1, .seed = 302},
    {F("forward/padding", "padding kv_len only"), SHAPE(PB, 4, 2, 64, PS, PS),
     LENS(NULL, NULL, NULL, pkl), .causal = 1, .seed = 303},
    {F("forward/padding", "padding q_start/q_len only"), SHAPE(PB, 4, 2, 64, PS, PS),
     LENS(pqs, pql, NULL, NULL), .causal = 1, .seed = 304},

    /* ---- forward: Sq = 1 and 7 against a padded cache ---- */
    {F("forward/decode_padded", "decode Sq1 padded cache"), SHAPE(3, 8, 2, 64, 1, 257),
     LENS(dq1s, dq1l, dk1s, dk1l), .causal = 1, .seed = 401},
    {F("forward/decode_padded", "decode Sq1 padded cache non-causal"), SHAPE(3, 8, 2, 64, 1, 257),
     LENS(dq1s, dq1l, dk1s, dk1l), .seed = 402},
    {F("forward/decode_padded", "Sq7 Skv33 padded"), SHAPE(2, 4, 1, 64, 7, 33),
     LENS(dq7s, dq7l, dk7s, dk7l), .causal = 1, .seed = 403},
    {F("forward/decode_padded", "Sq7 Skv33 non-causal MQA"), SHAPE(2, 4, 1, 64, 7, 33), .seed = 404},

    /* ---- forward: Sq > Skv: non-causal, every row sees every key; causal
     * (bottom-right), the first Sq - Skv rows see none (checked row by
     * row too) ---- */
    {F("forward/masked", "Sq40 > Skv9 non-causal"), SHAPE(1, 2, 1, 64, 40, 9), .seed = 502},
    {F("forward/masked_rows", "Sq40 > Skv9 causal"), SHAPE(2, 2, 2, 64, 40, 9), .causal = 1, .seed = 501},

    /* ---- forward: strided layouts ---- */
    {F("forward/layouts", "layout q:BHSD+off k:BSHD v:cache o:BSHD+pad"), SHAPE(2, 4, 2, 64, 21, 21),
     .causal = 1, .lq = BHSD_OFF_PAD, .lk = BSHD, .lv = BHSD_CACHE, .lo = BSHD_GAPPY, .seed = 601},
    {F("forward/layouts", "layout all BSHD padded cache, kv padded"), SHAPE(2, 4, 2, 64, 9, 21),
     .causal = 1, ALL_LAYOUTS(BSHD_GAPPY), LENS(NULL, NULL, lay_ks, lay_kl), .seed = 602},
    {F("forward/layouts", "layout odd offsets f16"), SHAPE(1, 2, 1, 64, 13, 13), .dtype = ATTN_F16,
     .lq = ODD_OFFSETS, .lk = ODD_OFFSETS, .lv = BSHD_GAPPY, .lo = ODD_OFFSETS, .seed = 603},
    {F("forward/layouts", "layout odd offsets bf16"), SHAPE(1, 2, 1, 64, 13, 13), .dtype = ATTN_BF16,
     .causal = 1, .lq = ODD_OFFSETS, .lk = ODD_OFFSETS, .lv = BHSD_OFF_PAD, .lo = ODD_OFFSETS,
     .seed = 604},

    /* ---- forward: storage types ---- */
    {F("forward/dtypes", "f16 D64 GQA padded causal"), SHAPE(2, 4, 2, 64, 26, 30), .dtype = ATTN_F16,
     .causal = 1, LENS(dt_qs, dt_ql, dt_ks, dt_kl), .seed = 700},
    {F("forward/dtypes", "bf16 D64 GQA padded causal"), SHAPE(2, 4, 2, 64, 26, 30), .dtype = ATTN_BF16,
     .causal = 1, LENS(dt_qs, dt_ql, dt_ks, dt_kl), .seed = 701},
    {F("forward/dtypes", "f16 D128 MQA decode"), SHAPE(2, 4, 1, 128, 1, 257), .dtype = ATTN_F16,
     .causal = 1, .seed = 710},
    {F("forward/dtypes", "f16 D7 non-causal"), SHAPE(1, 2, 2, 7, 33, 33), .dtype = ATTN_F16, .seed = 711},
    {F("forward/dtypes", "bf16 D96 Sq>Skv"), SHAPE(1, 2, 1, 96, 33, 7), .dtype = ATTN_BF16,
     .causal = 1, .seed = 712},
    {F("forward/dtypes", "bf16 D16 BSHD"), SHAPE(2, 2, 1, 16, 7, 7), .dtype = ATTN_BF16, .causal = 1,
     ALL_LAYOUTS({HARNESS_BSHD, 1, 0, 0}), .seed = 713},
    {F("forward/dtypes", "bf16 D256"), SHAPE(1, 2, 1, 256, 21, 21), .dtype = ATTN_BF16, .causal = 1,
     .seed = 714},
    {F("forward/dtypes", "f16 D40 GQA Sq<Skv"), SHAPE(1, 4, 2, 40, 7, 33), .dtype = ATTN_F16,
     .causal = 1, .seed = 715},
    /* the 16-bit types over the matrix the f32 rows above cover (the mma
     * family's problems: D a multiple of 16) */
    {F("forward/dtypes", "f16 GQA 4:1 padded causal, pads NaN"), SHAPE(PB, 4, 1, 64, PS, PS),
     PADDED, .dtype = ATTN_F16, .causal = 1, .poison_pads = 1, .seed = 720},
    {F("forward/dtypes", "bf16 MQA padded non-causal, gappy BSHD"), SHAPE(PB, 4, 1, 32, PS, PS),
     PADDED, .dtype = ATTN_BF16, ALL_LAYOUTS(BSHD_GAPPY), .poison_pads = 1, .seed = 721},
    {F("forward/dtypes", "f16 D16 Sq37 Skv53 causal"), SHAPE(2, 2, 2, 16, 37, 53),
     .dtype = ATTN_F16, .causal = 1, .seed = 722},
    {F("forward/dtypes", "bf16 D128 GQA Sq37 Skv53 non-causal"), SHAPE(1, 4, 2, 128, 37, 53),
     .dtype = ATTN_BF16, .seed = 723},
    {F("forward/dtypes", "f16 Sq40 > Skv9 causal (rows with nothing visible)"),
     SHAPE(1, 2, 1, 64, 40, 9), .dtype = ATTN_F16, .causal = 1, .seed = 724},
    {F("forward/dtypes", "bf16 D256 Sq9 < Skv70 BSHD"), SHAPE(1, 2, 1, 256, 9, 70),
     .dtype = ATTN_BF16, .causal = 1, .lq = BSHD, .lo = BSHD, .seed = 725},
    {F("forward/dtypes", "f16 S200 causal, large logits"), SHAPE(1, 2, 1, 64, 200, 200),
     .dtype = ATTN_F16, .causal = 1, .amp = 4.0f, .seed = 726},
    SWEEP(ATTN_F16, 7, 750), SWEEP(ATTN_F16, 16, 751), SWEEP(ATTN_F16, 40, 752),
    SWEEP(ATTN_F16, 64, 753), SWEEP(ATTN_F16, 80, 754), SWEEP(ATTN_F16, 96, 755),
    SWEEP(ATTN_F16, 128, 756), SWEEP(ATTN_F16, 256, 757),
    SWEEP(ATTN_BF16, 7, 750), SWEEP(ATTN_BF16, 16, 751), SWEEP(ATTN_BF16, 40, 752),
    SWEEP(ATTN_BF16, 64, 753), SWEEP(ATTN_BF16, 80, 754), SWEEP(ATTN_BF16, 96, 755),
    SWEEP(ATTN_BF16, 128, 756), SWEEP(ATTN_BF16, 256, 757),

    /* ---- forward: the tiled family's K/V and Q staging (cl/tiled_core.cl):
     * 16-byte loads (4 f32, 8 f16/bf16) where a head's rows start 16-byte
     * aligned, whole vectors inside D then the rest one by one; otherwise
     * one by one throughout. Tiled only: the other families do not stage
     * this way. ---- */
#define WIDE(name_) .group = "forward/wide_loads", .name = (name_), .families = HARNESS_TILED
    /* rows padded from 37 to 40: vectors (9 f32, 4 f16/bf16) and a tail of 1 or 5 */
    {WIDE("f16 D37 rows of 40: vectors and a tail"), SHAPE(2, 4, 2, 37, 21, 30), .dtype = ATTN_F16,
     .causal = 1, ALL_LAYOUTS({HARNESS_BHSD, 0, 3, 0}), .seed = 760},
    {WIDE("bf16 D37 rows of 40: vectors and a tail"), SHAPE(2, 4, 2, 37, 21, 30),
     .dtype = ATTN_BF16, .causal = 1, ALL_LAYOUTS({HARNESS_BHSD, 0, 3, 0}), .seed = 761},
    {WIDE("f32 D37 rows of 40: vectors and a tail"), SHAPE(2, 4, 2, 37, 21, 30), .causal = 1,
     ALL_LAYOUTS({HARNESS_BHSD, 0, 3, 0}), .seed = 762},
    /* rows of 36: a multiple of 4 (f32 vectors), not of 8 (f16: one by one;
     * Q's rows alternately aligned) */
    {WIDE("f16 D36 rows of 36: K/V one by one"), SHAPE(2, 4, 2, 36, 26, 30), .dtype = ATTN_F16,
     .causal = 1, LENS(dt_qs, dt_ql, dt_ks, dt_kl), .poison_pads = 1, .seed = 763},
    {WIDE("f32 D36 rows of 36: vectors"), SHAPE(2, 4, 2, 36, 26, 30), .causal = 1,
     LENS(dt_qs, dt_ql, dt_ks, dt_kl), .poison_pads = 1, .seed = 764},
    /* an offset of 4 elements: 16 bytes in f32 (vectors), 8 in bf16 (one by one) */
    {WIDE("f32 D40 offset 4: vectors"), SHAPE(2, 2, 1, 40, 17, 33), .causal = 1,
     ALL_LAYOUTS({HARNESS_BHSD, 4, 0, 0}), .seed = 765},
    {WIDE("bf16 D40 offset 4: one by one"), SHAPE(2, 2, 1, 40, 17, 33), .dtype = ATTN_BF16,
     .causal = 1, ALL_LAYOUTS({HARNESS_BHSD, 4, 0, 0}), .seed = 766},
    /* K aligned, V not (offset 8 vs 1, f16): the work-group's rows one by one */
    {WIDE("f16 D64 K aligned, V not"), SHAPE(1, 2, 1, 64, 13, 45), .dtype = ATTN_F16,
     .lk = {HARNESS_BSHD, 8, 0, 0}, .lv = {HARNESS_BHSD, 1, 0, 0}, .seed = 767},
    /* D below one vector: the tail only */
    {WIDE("f16 D6 below one vector"), SHAPE(1, 2, 2, 6, 9, 9), .dtype = ATTN_F16, .causal = 1,
     .seed = 768},

    /* ---- forward: scales, lse = NULL ---- */
    {F("forward/custom_scale", "scale 0.37"), SHAPE(1, 4, 2, 64, 21, 21), .causal = 1, .scale = 0.37f, .seed = 801},
    {F("forward/custom_scale", "scale 2.0 (sharp)"), SHAPE(1, 2, 1, 16, 7, 33), .causal = 1, .scale = 2.0f, .seed = 802},
    {F("forward/custom_scale", "scale 0.01 (flat), no LSE"), SHAPE(1, 2, 2, 64, 21, 21),
     .scale = 0.01f, .no_lse = 1, .seed = 803},
    {F("forward/custom_scale", "scale -0.3 (negative, valid)"), SHAPE(1, 2, 1, 64, 21, 21),
     .causal = 1, .scale = -0.3f, .seed = 804},
    /* scale 0 = 1/sqrt(D); sharp logits make the scale matter */
    {F("forward/default_scale", "default scale, D 40"), SHAPE(1, 4, 2, 40, 19, 27), .causal = 1, .amp = 2.0f, .seed = 811},
    {F("forward/default_scale", "default scale, D 64, full"), SHAPE(2, 2, 1, 64, 17, 17), .amp = 2.0f, .seed = 812},
    {F("forward/default_scale", "default scale, D 128"), SHAPE(1, 2, 2, 128, 9, 33), .causal = 1, .amp = 2.0f, .seed = 813},

    /* ---- forward: in place (out is the q tensor) ---- */
    {F("forward/in_place", "in place BHSD"), SHAPE(2, 4, 2, 64, 33, 33), .causal = 1, .in_place = 1,
     LENS(ip_qs, ip_ql, NULL, NULL), .seed = 901},
    {F("forward/in_place", "in place BSHD offset"), SHAPE(1, 4, 1, 16, 33, 7), .in_place = 1,
     .lq = {HARNESS_BSHD, 3, 2, 1}, .seed = 902},
    {F("forward/in_place", "in place f16"), SHAPE(1, 2, 2, 64, 26, 30), .dtype = ATTN_F16,
     .causal = 1, .in_place = 1, .seed = 903},

    /* ---- forward: tiles that do not divide the lengths (run under every
     * tile parameter set of test_tile_params) ---- */
    {F("forward/tiles", "tiles causal padded"), SHAPE(2, 4, 2, 64, 37, 45), .causal = 1,
     LENS(tl_qs, tl_ql, tl_ks, tl_kl), .seed = 1001},
    {F("forward/tiles", "tiles Sq>Skv causal"), SHAPE(1, 2, 1, 64, 37, 11), .causal = 1, .seed = 1002},
    {F("forward/tiles", "tiles decode non-causal"), SHAPE(2, 4, 1, 64, 1, 45), .seed = 1003},
    {F("forward/tiles", "tiles causal padded f16 D32"), SHAPE(2, 4, 2, 32, 37, 45), .causal = 1,
     .dtype = ATTN_F16, LENS(tl_qs, tl_ql, tl_ks, tl_kl), .seed = 1004},
    {F("forward/tiles", "tiles Sq>Skv bf16 D48"), SHAPE(1, 2, 1, 48, 37, 11), .causal = 1,
     .dtype = ATTN_BF16, .seed = 1005},
    /* head dims that are not a multiple of the vector width or of 4 */
#define ODD_TILES(fam, p, d)                                                                     \
    {.group = "forward/tiles_odd", .name = "tiles odd head dim, causal padded", .families = (fam), \
     .params = (p), SHAPE(2, 4, 2, d, 37, 45), .causal = 1, LENS(tl_qs, tl_ql, tl_ks, tl_kl),    \
     .seed = 1001}
    ODD_TILES(HARNESS_TILED, "rows=8,keys=16,wg=64,local_kv=0", 7),
    ODD_TILES(HARNESS_TILED, "rows=1,keys=32,wg=256,local_kv=1", 7), /* more lanes than columns */
    ODD_TILES(HARNESS_TILED, "rows=2,keys=4,wg=64,local_kv=1", 40),  /* wg > rows * keys */
    ODD_TILES(HARNESS_VECTOR, "rows=4,keys=16,vec=8", 40),
    ODD_TILES(HARNESS_VECTOR, "rows=3,keys=8,vec=4", 7),
    ODD_TILES(HARNESS_FLASH, "rows=8,keys=16,tm=2,tn=4", 7),   /* columns past D in a float4 */
    /* two float4 of O a work-item; 80 float4 of a K tile over 128
     * work-items, prefetched */
    ODD_TILES(HARNESS_FLASH, "rows=16,keys=8,tm=1,tn=1,prefetch=1", 40),

    /* ---- forward: the library's own choice; check mode ---- */
    {.group = "forward/default_params", .name = "default params", .families = HARNESS_AUTO,
     SHAPE(2, 8, 2, 64, 33, 33), .causal = 1, .seed = 1101},
#define CHECK(t, in_place_, seed_)                                                              \
    {F("forward/check", in_place_ ? "check mode in place" : "check mode"), SHAPE(2, 4, 2, 64, 21, 21), \
     .dtype = t, .causal = 1, LENS(ck_qs, ck_ql, ck_ks, ck_kl), .lq = {HARNESS_BSHD, 2, 0, 0},  \
     .in_place = in_place_, .seed = seed_}
    CHECK(ATTN_F32, 0, 1201), CHECK(ATTN_F32, 1, 1201), CHECK(ATTN_F16, 0, 1202), CHECK(ATTN_F16, 1, 1202),

    /* ---- materialized (CLBlast) against the reference and attn_forward;
     * NaN in every pad row ---- */
    {M("materialized/shapes", "MHA causal B2"), SHAPE(2, 2, 2, 64, 37, 37), .causal = 1, .seed = 1001},
    /* group 4 > Hkv 2: each KV head read by four query heads */
    {M("materialized/shapes", "GQA 8:2 causal BSHD"), SHAPE(1, 8, 2, 64, 70, 70), .causal = 1,
     ALL_LAYOUTS(BSHD), .seed = 1002},
    {M("materialized/shapes", "GQA 6:3 non-causal"), SHAPE(1, 6, 3, 64, 33, 33), .seed = 1003},
    {M("materialized/shapes", "MQA decode Sq1 Skv100"), SHAPE(2, 4, 1, 64, 1, 100), .causal = 1, .seed = 1004},
    {M("materialized/shapes", "MQA Sq7 Skv40 causal"), SHAPE(1, 4, 1, 64, 7, 40), .causal = 1, .seed = 1005},
    /* causal leaves the first 31 rows with nothing visible: zeros, -inf */
    {M("materialized/shapes", "materialized Sq40 > Skv9 causal"), SHAPE(1, 2, 1, 64, 40, 9),
     .causal = 1, .seed = 1006},
    {M("materialized/shapes", "large logits, custom scale"), SHAPE(1, 2, 1, 64, 45, 45),
     .causal = 1, .amp = 8.0f, .scale = 0.3f, .seed = 1007},
    {M("materialized/shapes", "D16 gappy layouts"), SHAPE(2, 4, 2, 16, 19, 23),
     .lq = BHSD_GAPPY, .lo = BHSD_GAPPY, .lk = BSHD_GAPPY, .lv = BSHD_GAPPY, .seed = 1008},
    {M("materialized/padding", "padding causal GQA BSHD"), SHAPE(PB, 4, 2, 64, PS, PS), PADDED,
     .causal = 1, .lq = BSHD_GAPPY, .lo = BSHD_GAPPY, .lk = BSHD, .lv = BSHD, .seed = 1101},
    {M("materialized/padding", "padding non-causal, no LSE"), SHAPE(PB, 4, 2, 64, PS, PS),
     PADDED, .no_lse = 1, .seed = 1102},
    {M("materialized/padding", "padding causal, in place"), SHAPE(PB, 2, 1, 64, PS, PS),
     PADDED, .causal = 1, .in_place = 1, .seed = 1103},
    /* the softmax's work-group reductions: run under each size */
    {M("materialized/softmax", "softmax work-group"), SHAPE(PB, 2, 1, 32, PS, PS), PADDED,
     .causal = 1, .seed = 1151},
    {M("materialized/softmax", "softmax work-group, long rows"), SHAPE(1, 2, 2, 32, 13, 301),
     .seed = 1161},
    {M("materialized/storage", "f16 padding causal GQA gappy"), SHAPE(PB, 4, 2, 64, PS, PS),
     PADDED, .dtype = ATTN_F16, .causal = 1, .lq = BSHD_GAPPY, .lo = BSHD_GAPPY, .lk = BHSD_GAPPY,
     .lv = BHSD_GAPPY, .seed = 1201},
    {M("materialized/storage", "bf16 MQA non-causal Sq<Skv"), SHAPE(2, 4, 1, 64, 9, 30),
     .dtype = ATTN_BF16, .seed = 1202},
    {M("materialized/storage", "f16 in place GQA"), SHAPE(1, 4, 2, 64, 25, 25),
     .dtype = ATTN_F16, .causal = 1, .in_place = 1, .seed = 1203},
    /* an odd head dim: odd leading dimensions for CLBlast's GEMMs */
    {M("materialized/storage", "f16 D7 GQA padded causal"), SHAPE(PB, 4, 2, 7, PS, PS), PADDED,
     .dtype = ATTN_F16, .causal = 1, .seed = 1204},
    /* only entries 0 and 1 of the padding are used: B = 2 */
    {M("materialized/check", "materialized check mode"), SHAPE(2, 4, 2, 64, 21, 21), PADDED,
     .causal = 1, .seed = 1301},
    /* CLBlast's indirect GEMMs, forced: tile-multiple sizes, packed, is the
     * case its strided-batched routine got wrong */
    {M("materialized/indirect", "indirect: padding causal GQA BSHD"), SHAPE(PB, 4, 2, 64, PS, PS),
     PADDED, .causal = 1, .lq = BSHD_GAPPY, .lo = BSHD_GAPPY, .lk = BSHD, .lv = BSHD, .seed = 1501},
    {M("materialized/indirect", "indirect: GQA 6:3 S70 non-causal"), SHAPE(1, 6, 3, 64, 70, 70),
     .lo = BSHD_GAPPY, .seed = 1502},
    {M("materialized/indirect", "indirect: f16 MQA Sq9 Skv40"), SHAPE(2, 4, 1, 64, 9, 40),
     .dtype = ATTN_F16, .causal = 1, .seed = 1503},
    {M("materialized/indirect", "indirect: GQA 8:2 S128 packed"), SHAPE(1, 8, 2, 64, 128, 128),
     .causal = 1, .seed = 1504},

    /* ---- decode through a KV cache (harness_decode_entry) ---- */
    /* MQA, a head dim no multiple of 16, f16, causal and full, split or not */
#define MQA(name_, causal_, splits, in_place_)                                                           \
    {.group = "decode/mqa_odd_dim", .name = (name_), .families = HARNESS_DECODE, \
     .params = splits, SHAPE(2, 6, 1, 40, 2, 90), .dtype = ATTN_F16, .causal = causal_,            \
     LENS(NULL, NULL, NULL, mqa_kl), .in_place = in_place_, .poison_pads = 1, .seed = 4400 + causal_}
    MQA("MQA D40 full, unsplit", 0, "splits=1", 0), MQA("MQA D40 full, split 3", 0, "splits=3", 0),
    MQA("MQA D40 causal, unsplit", 1, "splits=1", 0), MQA("MQA D40 causal, split 3", 1, "splits=3", 0),
    MQA("MQA D40 in place, unsplit", 1, "splits=1", 1), MQA("MQA D40 in place, split 3", 1, "splits=3", 1),
    /* GQA with ragged caches and pad queries, in each storage type */
    {.group = "decode/table", .name = "decode GQA f32 ragged caches", .families = HARNESS_DECODE,
     .params = "rows=4,splits=2", SHAPE(3, 8, 2, 64, 1, 50), .causal = 1,
     LENS(NULL, NULL, NULL, dc_kl), .poison_pads = 1, .lq = BSHD_GAPPY, .lo = BHSD_GAPPY, .seed = 4501},
    {.group = "decode/table", .name = "decode GQA f16 pad queries", .families = HARNESS_DECODE,
     .params = "rows=4,splits=1", SHAPE(3, 8, 2, 64, 3, 40), .dtype = ATTN_F16, .causal = 1,
     LENS(NULL, dc_ql, NULL, dc_kl2), .poison_pads = 1, .seed = 4502},
    {.group = "decode/table", .name = "decode GQA bf16 full, split", .families = HARNESS_DECODE,
     .params = "rows=4,splits=3", SHAPE(3, 8, 2, 64, 3, 40), .dtype = ATTN_BF16,
     LENS(NULL, dc_ql, NULL, dc_kl2), .poison_pads = 1, .lk = BSHD, .lv = BSHD_GAPPY, .seed = 4503},
    /* in place at a head dim mma takes (the MQA rows above are D40): O's
     * rows written over the Q rows the kernel reads, split and merged */
    {.group = "decode/table", .name = "decode GQA f16 in place, split", .families = HARNESS_DECODE,
     .params = "rows=4,splits=2", SHAPE(3, 8, 2, 64, 3, 40), .dtype = ATTN_F16, .causal = 1,
     LENS(NULL, dc_ql, NULL, dc_kl2), .in_place = 1, .poison_pads = 1, .seed = 4507},
    /* the largest head dims, each family's widest rows, split and merged;
     * a scale of the caller's own */
    {.group = "decode/table", .name = "decode GQA bf16 D256, split 3", .families = HARNESS_DECODE,
     .params = "rows=4,splits=3", SHAPE(3, 8, 2, 256, 3, 40), .dtype = ATTN_BF16, .causal = 1,
     LENS(NULL, dc_ql, NULL, dc_kl2), .lq = BSHD_GAPPY, .poison_pads = 1, .seed = 4508},
    {.group = "decode/table", .name = "decode MQA f32 D128 scale 0.37, split 2",
     .families = HARNESS_DECODE, .params = "splits=2", SHAPE(2, 8, 1, 128, 2, 90), .causal = 1,
     LENS(NULL, NULL, NULL, mqa_kl), .scale = 0.37f, .poison_pads = 1, .seed = 4509},

    /* the tiled kernel's cache rows in 16-byte vectors: D37 (row stride 48)
     * ends inside a vector (f32's 10th, f16's 5th), D12 inside bf16's 2nd:
     * the vector reads the row's padding, which must never reach O */
    {.group = "decode/table", .name = "decode GQA f16 D37, cache padding in the last vector",
     .families = HARNESS_TILED, .params = "rows=4,splits=2", SHAPE(2, 8, 2, 37, 2, 70),
     .dtype = ATTN_F16, .causal = 1, LENS(NULL, NULL, NULL, wl_kl), .poison_pads = 1, .seed = 4504},
    {.group = "decode/table", .name = "decode GQA f32 D37, cache padding in the last vector",
     .families = HARNESS_TILED, .params = "rows=8,splits=1", SHAPE(2, 8, 2, 37, 2, 70),
     .causal = 1, LENS(NULL, NULL, NULL, wl_kl), .poison_pads = 1, .seed = 4505},
    {.group = "decode/table", .name = "decode MQA bf16 D12, cache padding in the last vector",
     .families = HARNESS_TILED, .params = "rows=4,splits=3", SHAPE(3, 4, 1, 12, 3, 70),
     .dtype = ATTN_BF16, .causal = 1, LENS(NULL, dc_ql, NULL, dc_kl2), .poison_pads = 1,
     .seed = 4506},

    /* ---- the variants, each alone (test_variants): a few shapes each, in
     * both families, through attn_forward ---- */
#define WIN(l, r) .window = 1, .window_left = (l), .window_right = (r)
    {F("variants/window", "window 8/0 causal GQA padded"), SHAPE(2, 4, 2, 64, 37, 45), .causal = 1,
     LENS(tl_qs, tl_ql, tl_ks, tl_kl), WIN(8, 0), .seed = 3001},
    {F("variants/window", "window 5/3 non-causal MQA Sq7 Skv33"), SHAPE(1, 4, 1, 40, 7, 33),
     WIN(5, 3), .seed = 3002},
    {F("variants/window", "window -1/2 non-causal f16"), SHAPE(1, 2, 2, 64, 33, 33),
     .dtype = ATTN_F16, WIN(-1, 2), .seed = 3003},
    {F("variants/window", "window 0/0 (the diagonal only)"), SHAPE(1, 2, 1, 16, 21, 21),
     WIN(0, 0), .seed = 3004},
    {F("variants/window", "window 16/-1 causal S100"), SHAPE(1, 2, 1, 64, 100, 100), .causal = 1,
     WIN(16, -1), .seed = 3005},
    /* a tile's first visible key the last of a key tile (rows from 48: key
     * 31), where a start one too far drops a tile */
    {F("variants/window", "window 17/0 causal S100"), SHAPE(1, 2, 1, 64, 100, 100), .causal = 1,
     WIN(17, 0), .seed = 3006},
    /* logits of a few tens: the cap bites */
    {F("variants/softcap", "softcap 5 causal GQA padded"), SHAPE(2, 4, 2, 64, 37, 45), .causal = 1,
     LENS(tl_qs, tl_ql, tl_ks, tl_kl), .softcap = 5.0f, .amp = 3.0f, .seed = 3101},
    {F("variants/softcap", "softcap 1.5 non-causal MQA D40"), SHAPE(1, 4, 1, 40, 7, 33),
     .softcap = 1.5f, .amp = 2.0f, .seed = 3102},
    {F("variants/softcap", "softcap 30 bf16 scale 1"), SHAPE(1, 2, 2, 64, 33, 33), .causal = 1,
     .dtype = ATTN_BF16, .scale = 1.0f, .softcap = 30.0f, .seed = 3103},
    {F("variants/sinks", "sinks host causal GQA padded"), SHAPE(2, 4, 2, 64, 37, 45), .causal = 1,
     LENS(tl_qs, tl_ql, tl_ks, tl_kl), .sinks = HARNESS_SINKS_HOST, .seed = 3201},
    /* rows with no visible key: zeros, LSE = the sink */
    {F("variants/sinks", "sinks buffer Sq33 > Skv7 causal"), SHAPE(1, 4, 2, 64, 33, 7),
     .causal = 1, .sinks = HARNESS_SINKS_BUFFER, .seed = 3202},
    {F("variants/sinks", "sinks host non-causal f16 D7"), SHAPE(1, 2, 1, 7, 9, 21),
     .dtype = ATTN_F16, .sinks = HARNESS_SINKS_HOST, .seed = 3203},
    {F("variants/sinks", "sinks buffer bf16 Sq33 > Skv7 causal"), SHAPE(1, 4, 2, 32, 33, 7),
     .dtype = ATTN_BF16, .causal = 1, .sinks = HARNESS_SINKS_BUFFER, .seed = 3204},
    {F("variants/alibi", "alibi max_bias 8 Hq8 causal"), SHAPE(1, 8, 2, 64, 37, 37), .causal = 1,
     .alibi_max_bias = 8.0f, .seed = 3301},
    {F("variants/alibi", "alibi max_bias 8 Hq6 non-causal padded"), SHAPE(2, 6, 3, 64, 37, 45),
     LENS(tl_qs, tl_ql, tl_ks, tl_kl), .alibi_max_bias = 8.0f, .seed = 3302},
    {F("variants/alibi", "alibi slopes Hq4 MQA Sq7 Skv33 f16"), SHAPE(1, 4, 1, 64, 7, 33),
     .causal = 1, .dtype = ATTN_F16, .alibi_slopes = alibi4, .seed = 3303},
    {F("variants/alibi", "alibi slope 2e36 non-causal Sq100 Skv1"), SHAPE(1, 2, 1, 16, 100, 1),
     .alibi_slopes = alibi_huge, .seed = 3304},
    {F("variants/mask", "mask f32 random per head, padded, pads NaN"), SHAPE(2, 4, 2, 64, 37, 45),
     LENS(tl_qs, tl_ql, tl_ks, tl_kl), .mask = HARNESS_MASK_RANDOM, .poison_pads = 1, .seed = 3401},
    {F("variants/mask", "mask f16 random broadcast B and H, causal"), SHAPE(2, 4, 2, 64, 33, 33),
     .causal = 1, .mask = HARNESS_MASK_RANDOM, .mask_dtype = ATTN_F16,
     .mask_bcast = HARNESS_BCAST_BATCH | HARNESS_BCAST_HEAD, .seed = 3402},
    {F("variants/mask", "mask f32 -FLT_MAX holes, broadcast H, MQA"), SHAPE(1, 4, 1, 40, 7, 33),
     .mask = HARNESS_MASK_FINFO, .mask_bcast = HARNESS_BCAST_HEAD, .seed = 3403},
    {F("variants/mask", "mask f16 one row for every query (padding mask)"), SHAPE(2, 2, 1, 64, 21, 40),
     .mask = HARNESS_MASK_RANDOM, .mask_dtype = ATTN_F16, .mask_bcast = HARNESS_BCAST_Q, .seed = 3404},
    {F("variants/mask", "mask f32 random per head, f16 storage, padded, pads NaN"),
     SHAPE(2, 4, 2, 64, 37, 45), .dtype = ATTN_F16, LENS(tl_qs, tl_ql, tl_ks, tl_kl),
     .mask = HARNESS_MASK_RANDOM, .poison_pads = 1, .seed = 3405},
    {F("variants/packed", "packed 1, 7, 33, 64 causal GQA"), SHAPE(4, 4, 2, 64, 105, 105),
     .causal = 1, LENS(pk_s, pk_l, pk_s, pk_l), .packed = 1, .poison_pads = 1, .seed = 3501},
    {F("variants/packed", "packed Sq != Skv, unowned rows, non-causal"), SHAPE(3, 4, 1, 40, 12, 40),
     LENS(pg_qs, pg_ql, pg_ks, pg_kl), .packed = 1, .poison_pads = 1, .seed = 3502},
    {F("variants/packed", "packed bf16 BSHD causal"), SHAPE(3, 2, 2, 64, 12, 40), .dtype = ATTN_BF16,
     .causal = 1, LENS(pg_qs, pg_ql, pg_ks, pg_kl), ALL_LAYOUTS(BSHD), .packed = 1,
     .poison_pads = 1, .seed = 3503},

    /* ---- the variants together, over the matrix (GQA/MQA, padding,
     * Sq != Skv, rows with nothing visible, odd D, strides, the three
     * storage types, in place) ---- */
#define C(name_) F("variants/combos", name_)
    /* Gemma 2: a window and the cap; Mistral-like window with GQA */
    {C("window 12 + softcap 8, GQA padded f16"), SHAPE(2, 4, 2, 64, 37, 45), .dtype = ATTN_F16,
     .causal = 1, LENS(tl_qs, tl_ql, tl_ks, tl_kl), WIN(12, 0), .softcap = 8.0f, .amp = 3.0f,
     .seed = 3701},
    /* gpt-oss: a window and the sinks */
    {C("window 16 + sinks buffer, GQA 8:2 bf16 S100"), SHAPE(1, 8, 2, 64, 100, 100),
     .dtype = ATTN_BF16, .causal = 1, WIN(16, 0), .sinks = HARNESS_SINKS_BUFFER, .seed = 3702},
    /* every fifth row masked whole: zeros and LSE = the sink */
    {C("mask + sinks, hidden rows, MQA D40"), SHAPE(2, 4, 1, 40, 21, 33), .causal = 1,
     .mask = HARNESS_MASK_RANDOM, .sinks = HARNESS_SINKS_HOST, .seed = 3703},
    {C("ALiBi + window 4/4 + mask f16 per batch, padding, pads NaN"), SHAPE(PB, 4, 2, 64, PS, PS),
     PADDED, .alibi_max_bias = 8.0f, WIN(4, 4), .mask = HARNESS_MASK_RANDOM,
     .mask_dtype = ATTN_F16, .mask_bcast = HARNESS_BCAST_HEAD, .poison_pads = 1, .seed = 3704},
    {C("softcap + ALiBi + sinks, D7, Sq33 > Skv7"), SHAPE(1, 2, 1, 7, 33, 7), .causal = 1,
     .softcap = 3.0f, .alibi_max_bias = 4.0f, .sinks = HARNESS_SINKS_HOST, .amp = 2.0f, .seed = 3705},
    {C("all five, GQA padded, strided layouts"), SHAPE(2, 4, 2, 64, 26, 30), .causal = 1,
     LENS(dt_qs, dt_ql, dt_ks, dt_kl), WIN(9, 0), .softcap = 6.0f, .sinks = HARNESS_SINKS_BUFFER,
     .alibi_max_bias = 8.0f, .mask = HARNESS_MASK_FINFO, .lq = BHSD_OFF_PAD, .lk = BSHD_GAPPY,
     .lv = BHSD_CACHE, .lo = BSHD_GAPPY, .amp = 2.0f, .seed = 3706},
    {C("all five in place, no LSE, D96 f16"), SHAPE(1, 4, 2, 96, 21, 21), .dtype = ATTN_F16,
     .causal = 1, .in_place = 1, .no_lse = 1, WIN(5, 0), .softcap = 10.0f,
     .sinks = HARNESS_SINKS_HOST, .alibi_slopes = alibi4, .mask = HARNESS_MASK_RANDOM,
     .mask_dtype = ATTN_F16, .seed = 3707},
    {C("all five bf16 D256, odd offsets"), SHAPE(1, 2, 1, 256, 21, 21), .dtype = ATTN_BF16,
     WIN(3, 6), .softcap = 20.0f, .sinks = HARNESS_SINKS_HOST, .alibi_max_bias = 2.0f,
     .mask = HARNESS_MASK_RANDOM, .mask_bcast = HARNESS_BCAST_Q, ALL_LAYOUTS(ODD_OFFSETS),
     .seed = 3708},
    /* a long row of one query: the window keeps the last 64 of 257 keys */
    {C("window 64 + softcap, Sq1 Skv257 MQA D80"), SHAPE(2, 4, 1, 80, 1, 257), .causal = 1,
     WIN(64, 0), .softcap = 15.0f, .seed = 3709},
    {C("window 100 + sinks, S1000"), SHAPE(1, 2, 1, 64, 1000, 1000), .causal = 1, WIN(100, 0),
     .sinks = HARNESS_SINKS_HOST, .seed = 3710},
    /* decode-shaped forward with a padded cache and a window on the left */
    {C("window -1/0 + mask, Sq1 padded cache, non-causal"), SHAPE(3, 8, 2, 64, 1, 257),
     LENS(dq1s, dq1l, dk1s, dk1l), WIN(-1, 0), .mask = HARNESS_MASK_RANDOM, .poison_pads = 1,
     .seed = 3711},
    /* tiles that do not divide the lengths, the window and mask's tile
     * skipping at their edges (the mask pre-pass at these tile sizes too) */
#define VTILES(fam, p, d)                                                                          {.group = "variants/tiles", .name = "window 7 + mask + sinks, odd tiles", .families = (fam),      .params = (p), SHAPE(2, 4, 2, d, 37, 45), .causal = 1, LENS(tl_qs, tl_ql, tl_ks, tl_kl),        WIN(7, 0), .mask = HARNESS_MASK_RANDOM, .sinks = HARNESS_SINKS_HOST, .seed = 3801}
    VTILES(HARNESS_TILED, "rows=8,keys=16,wg=64,local_kv=0", 64),
    VTILES(HARNESS_TILED, "rows=1,keys=32,wg=256,local_kv=1", 7),
    VTILES(HARNESS_TILED, "rows=2,keys=4,wg=64,local_kv=1", 40),
    VTILES(HARNESS_VECTOR, "rows=4,keys=16,vec=8", 40),
    VTILES(HARNESS_VECTOR, "rows=3,keys=8,vec=4", 7),
    VTILES(HARNESS_FLASH, "rows=8,keys=16,tm=2,tn=4", 64),
    VTILES(HARNESS_FLASH, "rows=12,keys=4,tm=3,tn=1,prefetch=1", 7), /* skips past masked tiles */
    VTILES(HARNESS_FLASH, "rows=64,keys=32,tm=8,tn=4", 40),
#define VTILES16(p, d, t)                                                                      \
    {.group = "variants/tiles", .name = "window 7 + mask + sinks, odd tiles, 16-bit",          \
     .families = HARNESS_MMA, .params = (p), SHAPE(2, 4, 2, d, 37, 45), .dtype = (t),           \
     .causal = 1, LENS(tl_qs, tl_ql, tl_ks, tl_kl), WIN(7, 0), .mask = HARNESS_MASK_RANDOM,     \
     .sinks = HARNESS_SINKS_HOST, .seed = 3802}
    VTILES16("warps=1,keys=16", 64, ATTN_F16),
    VTILES16("warps=2,keys=32,mtiles=2", 32, ATTN_BF16),
    VTILES16("warps=8,keys=128", 16, ATTN_F16),
    VTILES16("warps=2,keys=16,mtiles=2,qregs=0", 64, ATTN_F16), /* Q read at each k-step */
    /* packed with the other variants */
#define P(name_) F("variants/packed_combos", name_), .packed = 1, .poison_pads = 1
    {P("packed + window 8 + sinks, 1/7/33/64 f16"), SHAPE(4, 4, 2, 64, 105, 105), .dtype = ATTN_F16,
     .causal = 1, LENS(pk_s, pk_l, pk_s, pk_l), WIN(8, 0), .sinks = HARNESS_SINKS_BUFFER,
     .seed = 3901},
    {P("packed + mask (one for the axis) + softcap, non-causal"), SHAPE(4, 2, 1, 64, 105, 105),
     LENS(pk_s, pk_l, pk_s, pk_l), .mask = HARNESS_MASK_RANDOM,
     .mask_bcast = HARNESS_BCAST_BATCH | HARNESS_BCAST_HEAD, .softcap = 4.0f, .amp = 2.0f,
     .seed = 3902},
    {P("packed + ALiBi, Sq != Skv, unowned rows, D7"), SHAPE(3, 4, 2, 7, 12, 40),
     LENS(pg_qs, pg_ql, pg_ks, pg_kl), .alibi_slopes = alibi4, .causal = 1, .seed = 3903},
    {P("packed in place, all five, bf16"), SHAPE(3, 4, 1, 64, 12, 40), .dtype = ATTN_BF16,
     LENS(pg_qs, pg_ql, pg_ks, pg_kl), .in_place = 1, WIN(4, 2), .softcap = 5.0f,
     .sinks = HARNESS_SINKS_HOST, .alibi_max_bias = 8.0f, .mask = HARNESS_MASK_RANDOM,
     .mask_dtype = ATTN_F16, .mask_bcast = HARNESS_BCAST_BATCH, .seed = 3904},

    {P("packed 9 uneven entries + mask per head + window 16, D40"), SHAPE(9, 4, 2, 40, 191, 250),
     .causal = 1, LENS(p9_qs, p9_ql, p9_ks, p9_kl), WIN(16, 0), .mask = HARNESS_MASK_RANDOM,
     .mask_bcast = HARNESS_BCAST_BATCH, .seed = 3905},

    /* ---- the variants in decode through a KV cache, unsplit and split ---- */
#define VDEC(name_, splits, ...)                                                                       {.group = "variants_decode/alone", .name = (name_), .families = HARNESS_DECODE, .params = splits,      SHAPE(3, 8, 2, 64, 3, 50), .causal = 1, LENS(NULL, dc_ql, NULL, dc_kl), .poison_pads = 1,         .seed = 3600, __VA_ARGS__}
    VDEC("decode window 8, unsplit", "splits=1", WIN(8, 0)),
    VDEC("decode window 8, split 3", "splits=3", WIN(8, 0)),
    {.group = "variants_decode/alone", .name = "decode window 30 of 288, split 4, keys 16",
     .families = HARNESS_DECODE, .params = "splits=4,keys=16", SHAPE(3, 8, 2, 64, 3, 300),
     .causal = 1, LENS(NULL, dw_ql, NULL, dw_kl), .poison_pads = 1, WIN(30, 0), .seed = 3601},
    {.group = "variants_decode/alone", .name = "decode window 30 right 5, non-causal, split 3",
     .families = HARNESS_DECODE, .params = "splits=3", SHAPE(3, 4, 4, 40, 3, 300),
     .dtype = ATTN_F16, LENS(NULL, dw_ql, NULL, dw_kl), .poison_pads = 1, WIN(30, 5),
     .seed = 3602},
    {.group = "variants_decode/alone", .name = "decode window 30, spans 44/20/49, split 4, keys 16",
     .families = HARNESS_DECODE, .params = "splits=4,keys=16", SHAPE(3, 4, 2, 64, 5, 300),
     .causal = 1, LENS(NULL, dw_ql2, NULL, dw_kl2), .poison_pads = 1, WIN(30, 0), .seed = 3603},
    VDEC("decode sinks, unsplit", "splits=1", .sinks = HARNESS_SINKS_HOST),
    VDEC("decode sinks buffer, split 3", "splits=3", .sinks = HARNESS_SINKS_BUFFER),
    VDEC("decode softcap 4, split 3", "splits=3", .softcap = 4.0f, .amp = 3.0f),
    VDEC("decode alibi, split 3", "splits=3", .alibi_max_bias = 8.0f),
    VDEC("decode mask f16, unsplit", "splits=1", .mask = HARNESS_MASK_RANDOM, .mask_dtype = ATTN_F16),
    VDEC("decode mask f32, split 3", "splits=3", .mask = HARNESS_MASK_RANDOM),

    /* ---- long query blocks through a KV cache: the prefill kernels
     * reading the cache (chunked prefill) ---- */
#define PF(name_, ...)                                                                            \
    {.group = "decode/prefill", .name = (name_), .families = HARNESS_DECODE, .poison_pads = 1,       \
     __VA_ARGS__}
    PF("prefill GQA f32 ragged, pad queries", SHAPE(3, 8, 2, 64, 100, 230), .causal = 1,
       LENS(NULL, pf_ql, NULL, pf_kl), .lq = BSHD_GAPPY, .lo = BHSD_GAPPY, .seed = 4601),
    PF("prefill GQA f32 ragged, split 3", SHAPE(3, 8, 2, 64, 100, 230), .causal = 1,
       .params = "splits=3", LENS(NULL, pf_ql, NULL, pf_kl), .seed = 4602),
    PF("prefill MQA D40 f16 non-causal in place", SHAPE(2, 6, 1, 40, 80, 150), .dtype = ATTN_F16,
       LENS(NULL, NULL, NULL, pf_kl2), .in_place = 1, .seed = 4603),
    PF("prefill bf16 D128 whole prompts", SHAPE(2, 4, 2, 128, 97, 97), .dtype = ATTN_BF16,
       .causal = 1, LENS(NULL, pf_ql3, NULL, pf_ql3), .lk = BSHD, .seed = 4604),
    /* a prefill plan of a family with no decode kernel (flash): the decode
     * plan serves the long block, the decode kernels on 100 queries */
    {.group = "decode/prefill", .name = "prefill planned as flash, the decode plan serves",
     .families = HARNESS_FLASH, .poison_pads = 1, SHAPE(3, 8, 2, 64, 100, 230),
     .dtype = ATTN_F16, .causal = 1, LENS(NULL, pf_ql, NULL, pf_kl), .lq = BSHD_GAPPY,
     .seed = 4620},
#define PFV(name_, ...)                                                                           \
    PF(name_, SHAPE(3, 8, 2, 64, 72, 160), .causal = 1, LENS(NULL, pf_ql4, NULL, pf_kl4),          \
       .seed = 4610, __VA_ARGS__)
    PFV("prefill window 30", WIN(30, 0)),
    PFV("prefill window 20 right 3, f16", WIN(20, 3), .dtype = ATTN_F16),
    PFV("prefill softcap 4", .softcap = 4.0f, .amp = 3.0f),
    PFV("prefill sinks buffer", .sinks = HARNESS_SINKS_BUFFER),
    PFV("prefill alibi", .alibi_max_bias = 8.0f),
    PFV("prefill mask f32", .mask = HARNESS_MASK_RANDOM),
    PFV("prefill mask f16, window 40 + sinks", .mask = HARNESS_MASK_RANDOM,
        .mask_dtype = ATTN_F16, WIN(40, 0), .sinks = HARNESS_SINKS_HOST),

#define VDC(name_, splits, ...)                                                                   \
    {.group = "variants_decode/combos", .name = (name_), .families = HARNESS_DECODE,                 \
     .params = splits, .poison_pads = 1, __VA_ARGS__}
    /* gpt-oss: window and sinks, each way of splitting */
    VDC("window 8 + sinks, GQA f16 BSHD, unsplit", "splits=1", SHAPE(3, 8, 2, 64, 3, 50),
        .dtype = ATTN_F16, .causal = 1, LENS(NULL, dc_ql, NULL, dc_kl), WIN(8, 0),
        .sinks = HARNESS_SINKS_HOST, .lq = BSHD_GAPPY, .lo = BSHD_GAPPY, .seed = 3951),
    VDC("window 8 + sinks, GQA f16 BSHD, split 3", "splits=3", SHAPE(3, 8, 2, 64, 3, 50),
        .dtype = ATTN_F16, .causal = 1, LENS(NULL, dc_ql, NULL, dc_kl), WIN(8, 0),
        .sinks = HARNESS_SINKS_HOST, .lq = BSHD_GAPPY, .lo = BSHD_GAPPY, .seed = 3951),
    VDC("window 8 + sinks buffer, MQA D40 bf16 in place, split 3", "splits=3",
        SHAPE(2, 6, 1, 40, 2, 90), .dtype = ATTN_BF16, .causal = 1, LENS(NULL, NULL, NULL, mqa_kl),
        WIN(8, 0), .sinks = HARNESS_SINKS_BUFFER, .in_place = 1, .seed = 3952),
    /* row 2 of each sequence masked whole: zeros and LSE = the sink, also
     * from the combine */
    VDC("mask f16 broadcast + sinks + softcap, split 2", "splits=2", SHAPE(3, 8, 2, 64, 3, 50),
        .causal = 1, LENS(NULL, dc_ql, NULL, dc_kl), .mask = HARNESS_MASK_RANDOM,
        .mask_dtype = ATTN_F16, .mask_bcast = HARNESS_BCAST_BATCH | HARNESS_BCAST_HEAD,
        .sinks = HARNESS_SINKS_HOST, .softcap = 5.0f, .amp = 2.0f, .seed = 3953),
    VDC("hidden rows + sinks, unsplit", "splits=1", SHAPE(3, 4, 2, 64, 3, 40), .causal = 1,
        LENS(NULL, dz_ql, NULL, dz_kl), .sinks = HARNESS_SINKS_HOST, .mask = HARNESS_MASK_RANDOM,
        .seed = 3954),
    VDC("hidden rows + sinks buffer + window, split 3", "splits=3", SHAPE(3, 4, 2, 64, 3, 40),
        .causal = 1, LENS(NULL, dz_ql, NULL, dz_kl), .sinks = HARNESS_SINKS_BUFFER, WIN(5, 0),
        .mask = HARNESS_MASK_RANDOM, .mask_dtype = ATTN_F16, .seed = 3954),
    VDC("all five, BSHD K/V, split 3", "splits=3", SHAPE(3, 8, 2, 64, 3, 50), .causal = 1,
        LENS(NULL, dc_ql, NULL, dc_kl), WIN(11, 0), .softcap = 6.0f, .sinks = HARNESS_SINKS_HOST,
        .alibi_max_bias = 8.0f, .mask = HARNESS_MASK_FINFO, .lk = BSHD, .lv = BSHD_GAPPY,
        .seed = 3955),
    VDC("non-causal window 6/1 + ALiBi slopes, MQA, unsplit", "splits=1", SHAPE(2, 4, 1, 64, 3, 90),
        LENS(NULL, NULL, NULL, mqa_kl), WIN(6, 1), .alibi_slopes = alibi4, .seed = 3956),
    /* an int8 cache under every variant: each family's int8 scaling of K
     * (before the logits' variants) and V (after the softmax) */
    VDC("int8: all five, bf16, unsplit", "splits=1", SHAPE(3, 8, 2, 64, 3, 50), .dtype = ATTN_BF16,
        .causal = 1, LENS(NULL, dc_ql, NULL, dc_kl), WIN(11, 0), .softcap = 6.0f,
        .sinks = HARNESS_SINKS_HOST, .alibi_max_bias = 8.0f, .mask = HARNESS_MASK_RANDOM,
        .mask_dtype = ATTN_F16, .kv_int8 = 1, .seed = 3957),
    VDC("int8: all five, bf16, split 3", "splits=3", SHAPE(3, 8, 2, 64, 3, 50), .dtype = ATTN_BF16,
        .causal = 1, LENS(NULL, dc_ql, NULL, dc_kl), WIN(11, 0), .softcap = 6.0f,
        .sinks = HARNESS_SINKS_HOST, .alibi_max_bias = 8.0f, .mask = HARNESS_MASK_RANDOM,
        .mask_dtype = ATTN_F16, .kv_int8 = 1, .seed = 3957),
    VDC("int8: window 8 + sinks, MQA D40 f32, split 2", "splits=2", SHAPE(2, 6, 1, 40, 2, 90),
        .causal = 1, LENS(NULL, NULL, NULL, mqa_kl), WIN(8, 0), .sinks = HARNESS_SINKS_BUFFER,
        .kv_int8 = 1, .seed = 3958),

    /* ---- the seed's "Common implementation failures" (test_seed_failures):
     * each row's test runs it on data made so that the failure it names
     * would fail it, under the library's choice and the tiled family ---- */
    /* wrong scaling dimension: Hq 4 x D 16 = d_model 64, so 1/sqrt(d_model)
     * is half the right scale */
    {SEED("seed/scale", "wrong scaling dimension: Hq4 D16"), SHAPE(1, 4, 2, 16, 9, 9),
     .causal = 1, .amp = 2.0f, .seed = 2001},
    /* masking after softmax: V = 1 sums the weights; padding and Sq > Skv
     * leave rows empty */
    {SEED("seed/mask_v_ones", "masking after softmax: V=1 padded non-causal"),
     SHAPE(3, 2, 2, 16, 23, 23), LENS(mv_qs, mv_ql, mv_ks, mv_kl), .amp = 3.0f, .seed = 2002},
    {SEED("seed/mask_v_ones", "masking after softmax: V=1 padded causal"),
     SHAPE(3, 2, 2, 16, 23, 23), LENS(mv_qs, mv_ql, mv_ks, mv_kl), .causal = 1, .amp = 3.0f,
     .seed = 2002},
    /* masking after softmax: huge future K and V must not reach earlier rows */
    {SEED("seed/mask_future", "masking after softmax: future K/V"), SHAPE(1, 2, 2, 16, 37, 37),
     .causal = 1, .seed = 2003},
    /* softmax over the wrong axis: scale 1, rank-1 logits, V = identity */
    {SEED("seed/softmax_axis", "softmax over the wrong axis: Sq4 Skv6"), SHAPE(1, 1, 1, 16, 4, 6),
     .scale = 1.0f},
    {SEED("seed/causal_row0", "softmax over the wrong axis: causal row 0 is V[0]"),
     SHAPE(2, 4, 2, 64, 19, 19), .causal = 1, .amp = 2.0f, .seed = 2004},
    /* silent transpose errors: no two dimensions equal; the first row is the
     * answer the other layouts must give */
    {SEED("seed/layouts", "silent transpose: BHSD"), SHAPE(2, 6, 2, 16, 5, 11), .causal = 1,
     .seed = 2005},
    {SEED("seed/layouts", "silent transpose: BSHD"), SHAPE(2, 6, 2, 16, 5, 11), .causal = 1,
     ALL_LAYOUTS(BSHD), .seed = 2005},
    {SEED("seed/layouts", "silent transpose: mixed"), SHAPE(2, 6, 2, 16, 5, 11), .causal = 1,
     .lq = {HARNESS_BSHD, 7, 5, 3}, .lk = {HARNESS_BHSD, 2, 3, 4}, .lv = BSHD,
     .lo = {HARNESS_BHSD, 2, 3, 4}, .seed = 2005},
    {SEED("seed/qkt", "silent transpose: QK^T not KQ^T, non-causal"), SHAPE(1, 2, 2, 16, 13, 13),
     .seed = 2006},
    {SEED("seed/qkt", "silent transpose: QK^T not KQ^T, causal"), SHAPE(1, 2, 2, 16, 13, 13),
     .causal = 1, .seed = 2006},
    /* KV cache position drift: entry 0 left-padded, each entry against
     * itself unpadded */
    {SEED("seed/left_padding", "position drift: left padding"), SHAPE(2, 4, 2, 16, 29, 29),
     .causal = 1, LENS(lp_qs, lp_ql, lp_ks, lp_kl), .seed = 2007},
    /* KV cache position drift: 27 tokens at kv_start 9 of a capacity-64
     * cache (spare rows past it too), the last 1 and 3 decoded against the
     * prefill row */
    {SEED("seed/kv_cache_prefill", "position drift: prefill of 27"), SHAPE(1, 2, 2, 16, 27, 27),
     .causal = 1, .seed = 2008},
#define KV_DRIFT(name_, sq, layout)                                                               \
    {SEED("seed/kv_cache_decode", "position drift: " name_), SHAPE(1, 2, 2, 16, sq, 64),       \
     .causal = 1, LENS(NULL, NULL, kd_ks, kd_kl), .lk = layout, .lv = layout, .seed = 2008}
    KV_DRIFT("cache Sq1 BHSD", 1, BHSD_SPARE), KV_DRIFT("cache Sq1 BSHD", 1, BSHD_SPARE),
    KV_DRIFT("cache Sq3 BHSD", 3, BHSD_SPARE), KV_DRIFT("cache Sq3 BSHD", 3, BSHD_SPARE),
    /* treating GQA repetition as new parameters: against MHA with K/V
     * repeated, on buffers of Hkv heads */
    {SEED("seed/gqa", "GQA is sharing: 8:2"), SHAPE(2, 8, 2, 16, 11, 11), .causal = 1, .seed = 2009},
    {SEED("seed/gqa", "GQA is sharing: MQA 8:1"), SHAPE(2, 8, 1, 16, 11, 11), .causal = 1,
     .seed = 2009},
    /* the seed's exercise 1 (zero Q and K), causal then not, padded */
    {SEED("seed/zero_qk", "exercise 1: zero Q/K causal"), SHAPE(2, 2, 2, 16, 9, 9), .causal = 1,
     LENS(zq_qs, zq_ql, zq_ks, zq_kl), .seed = 2010},
    {SEED("seed/zero_qk", "exercise 1: zero Q/K non-causal"), SHAPE(2, 2, 2, 16, 9, 9),
     LENS(zq_qs, zq_ql, zq_ks, zq_kl), .seed = 2010},
    /* the seed's causal table for length 5 (V = identity), and its last 3
     * rows as 3 queries over the 5 keys (bottom-right: query 0 sees 3) */
    {SEED("seed/causal_table5", "causal table, length 5"), SHAPE(1, 2, 1, 16, 5, 5), .causal = 1,
     .seed = 2011},
    {SEED("seed/causal_table5", "causal table, 3 queries over 5 keys"), SHAPE(1, 2, 1, 16, 3, 5),
     .causal = 1, .seed = 2012},

    /* ---- every kernel on Oclgrind's simulated device (oclgrind_kernels,
     * under each of its parameter sets): tiny, since Oclgrind interprets
     * every work-item ---- */
#define OCL(name_) .group = "oclgrind/tiny", .name = (name_), .families = HARNESS_BOTH
    /* lengths 13: every tile size there ends mid-tile; the plain triangle */
    {OCL("edges S13 D8 MHA"), SHAPE(1, 2, 2, 8, 13, 13), .causal = 1, .seed = 600},
    /* decode-like GQA 4:2, D not a multiple of 4, bottom-right diagonal */
    {OCL("GQA Sq3 Skv19 D6 f16"), SHAPE(1, 4, 2, 6, 3, 19), .dtype = ATTN_F16, .causal = 1,
     .seed = 610},
    /* MQA with right, left and empty padding, causal over the valid parts */
    {OCL("MQA padded B3 bf16"), SHAPE(3, 2, 1, 8, 10, 12), .dtype = ATTN_BF16, .causal = 1,
     LENS(og_qs, og_ql, og_ks, og_kl), .seed = 620},
    /* Sq > Skv: the first rows see nothing (zeros and -inf) */
    {OCL("Sq9 > Skv5 D4"), SHAPE(1, 1, 1, 4, 9, 5), .causal = 1, .seed = 630},
    /* the default tiles (16 or 8 rows, 32 keys): two blocks each way, ending mid-tile */
    {OCL("default tiles S40 D16"), SHAPE(1, 2, 1, 16, 40, 40), .causal = 1, .seed = 640},
    /* non-causal, strided: BSHD with row padding and an offset, KV with spare capacity */
    {OCL("strided non-causal D5"), SHAPE(2, 2, 1, 5, 6, 11), .lq = {HARNESS_BSHD, 3, 2, 0},
     .lk = {HARNESS_BHSD, 1, 3, 4}, .lv = {HARNESS_BHSD, 1, 3, 4}, .lo = {HARNESS_BSHD, 7, 1, 0},
     .seed = 650},
    /* the variants: a window's tile skipping, the cap and the sinks; a mask
     * (its tile pre-pass) with ALiBi over two packed sequences */
    {OCL("window 3 + softcap + sinks S13 D8 GQA"), SHAPE(1, 4, 2, 8, 13, 13), .causal = 1,
     WIN(3, 0), .softcap = 4.0f, .sinks = HARNESS_SINKS_BUFFER, .seed = 660},
    {OCL("mask f16 + ALiBi, packed 5 + 6, D4"), SHAPE(2, 2, 1, 4, 11, 11), .causal = 1,
     LENS(ocp_s, ocp_l, ocp_s, ocp_l), .packed = 1, .mask = HARNESS_MASK_RANDOM,
     .mask_dtype = ATTN_F16, .mask_bcast = HARNESS_BCAST_BATCH, .alibi_max_bias = 8.0f, .seed = 670},
    /* the tiled staging's 16-byte loads (oclgrind_kernels' test_tiled_wide):
     * rows padded to 16 (f16: a vector and a tail of 4), bf16 and f32 rows
     * of 8 (vectors only), f16 rows at an odd offset (one by one) */
#define OCL_WIDE(name_) .group = "oclgrind/wide", .name = (name_), .families = HARNESS_TILED
    {OCL_WIDE("wide f16 D12 rows of 16"), SHAPE(1, 4, 2, 12, 5, 11), .dtype = ATTN_F16,
     .causal = 1, ALL_LAYOUTS({HARNESS_BHSD, 0, 4, 0}), .seed = 690},
    {OCL_WIDE("wide bf16 D8 BSHD"), SHAPE(3, 2, 1, 8, 10, 12), .dtype = ATTN_BF16, .causal = 1,
     LENS(og_qs, og_ql, og_ks, og_kl), ALL_LAYOUTS(BSHD), .seed = 691},
    {OCL_WIDE("wide f32 D8 offset 4"), SHAPE(1, 2, 2, 8, 9, 9), .causal = 1,
     ALL_LAYOUTS({HARNESS_BHSD, 4, 0, 0}), .seed = 692},
    {OCL_WIDE("wide f16 D8 odd offsets"), SHAPE(1, 2, 1, 8, 7, 9), .dtype = ATTN_F16,
     ALL_LAYOUTS(ODD_OFFSETS), .seed = 693},
    /* the mma family's (f16 and bf16, D a multiple of 16): ragged padding
     * with an empty entry and two key tiles of 16; the variants */
#define OCL_MMA(name_) .group = "oclgrind/mma", .name = (name_), .families = HARNESS_MMA
    {OCL_MMA("mma MQA padded B3 f16 D16"), SHAPE(3, 2, 1, 16, 10, 12), .dtype = ATTN_F16,
     .causal = 1, LENS(og_qs, og_ql, og_ks, og_kl), .poison_pads = 1, .seed = 680},
    {OCL_MMA("mma Sq19 > Skv5 bf16 D32 BSHD"), SHAPE(1, 2, 2, 32, 19, 5), .dtype = ATTN_BF16,
     .causal = 1, ALL_LAYOUTS(BSHD), .seed = 681},
    {OCL_MMA("mma window + softcap + sinks S21 f16"), SHAPE(1, 2, 1, 16, 21, 21),
     .dtype = ATTN_F16, .causal = 1, WIN(5, 0), .softcap = 4.0f, .sinks = HARNESS_SINKS_BUFFER,
     .seed = 682},
    {OCL_MMA("mma mask + ALiBi packed 5 + 6 bf16"), SHAPE(2, 2, 1, 16, 11, 11), .dtype = ATTN_BF16,
     .causal = 1, LENS(ocp_s, ocp_l, ocp_s, ocp_l), .packed = 1, .mask = HARNESS_MASK_RANDOM,
     .mask_dtype = ATTN_F16, .mask_bcast = HARNESS_BCAST_BATCH, .alibi_max_bias = 8.0f,
     .seed = 683},
    /* f32 (3xTF32): poisoned pads never reach the split, keys < a tile */
    {OCL_MMA("mma GQA padded B3 f32 D16"), SHAPE(3, 4, 2, 16, 10, 12), .causal = 1,
     LENS(og_qs, og_ql, og_ks, og_kl), .poison_pads = 1, .seed = 684},
    {OCL_MMA("mma Sq19 > Skv5 f32 D32 BSHD"), SHAPE(1, 2, 1, 32, 19, 5), .causal = 1,
     ALL_LAYOUTS(BSHD), .seed = 685},
    /* rows that are not 16-byte aligned: mma_stage's scalar path (the
     * cases above take its 16-byte loads) */
    {OCL_MMA("mma odd offsets f16 D16"), SHAPE(1, 2, 1, 16, 9, 11), .dtype = ATTN_F16,
     .causal = 1, ALL_LAYOUTS(ODD_OFFSETS), .seed = 686},
    {OCL_MMA("mma odd offsets f32 D16"), SHAPE(1, 2, 1, 16, 9, 11), ALL_LAYOUTS(ODD_OFFSETS),
     .seed = 687},
    /* in place: each lane writes only the Q elements it read (mma_core.cl);
     * a write into a row another lane still reads is a race Oclgrind sees */
    {OCL_MMA("mma in place GQA padded bf16 D16"), SHAPE(2, 4, 2, 16, 13, 13), .dtype = ATTN_BF16,
     .causal = 1, LENS(og_qs, og_ql, og_ks, og_kl), .in_place = 1, .seed = 688},
};

const size_t harness_ncases = sizeof harness_cases / sizeof harness_cases[0];
