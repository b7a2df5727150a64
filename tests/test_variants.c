/* test_variants.c -- the attention variants of attn_problem (sliding window,
 * logit softcap, sinks, ALiBi, the additive mask, packed batches) through
 * attn_forward against attn_reference_forward, in both kernel families:
 * each variant alone over a few shapes (together over the matrix:
 * test_variants_combos.c), then the equivalences the semantics promise:
 *   window wider than the sequence == no window        (bit for bit)
 *   sinks all -inf == no sinks                          (bit for bit)
 *   softcap 1e6 == no softcap                           (tolerance)
 *   a mask of zeros == no mask                          (tolerance)
 *   -inf above the bottom-right diagonal == causal      (tolerance)
 *   packed == padded for the same sequences             (tolerance)
 *   a row with no visible key but a sink: zeros, LSE = the sink (exact O)
 * "Tolerance" is twice the storage type's: the two runs each lie within it
 * of the reference, and their arithmetic differs (a cap's tanh, another
 * tile alignment). Bit for bit: the variant only narrows a range to the
 * same keys, or adds exp(-inf) = 0.
 *
 * The cases are the "variants/..." rows of the shared table (case_table.c),
 * run by the shared runner (cases.c), which makes each case's sinks and
 * mask (case_variants.c) and, packed, checks that rows no entry owns stay
 * untouched. Decode through a KV cache: test_variants_decode.c.
 *
 * Build cost: PoCL compiles a program per (family, variant flags, head
 * dim, dtype, tile parameters); from a cold cache the forward suites took
 * about 10 minutes on 2 busy cores together, hence two executables. */
#define _POSIX_C_SOURCE 200809L
#include "cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const fwd = "attn_forward";

static void run_group(const char *group) { harness_run_group(group, attn_forward, fwd); }

static void test_window(void) { run_group("variants/window"); }
static void test_softcap(void) { run_group("variants/softcap"); }
static void test_sinks(void) { run_group("variants/sinks"); }
static void test_alibi(void) { run_group("variants/alibi"); }
static void test_mask(void) { run_group("variants/mask"); }
static void test_packed(void) { run_group("variants/packed"); }

/* ---- equivalences ---- */

/* base with no variant against each of n twins that must give the same
 * answer, under every family with a forward kernel. */
static void same_as(const harness_case *base, const harness_case *twins, int n, int exact)
{
    for (int i = 0; i < n; i++)
        HARNESS_FOR_FAMILIES(HARNESS_FORWARD, f)
            harness_case_same(base, &twins[i], f, attn_forward, fwd, exact);
}

/* The table's case `name` with its variants cleared: the plain problem. */
static harness_case plain(const char *name)
{
    harness_case c = *harness_case_named(name);
    c.window = c.window_left = c.window_right = 0;
    c.softcap = 0.0f, c.sinks = HARNESS_SINKS_NONE, c.sink_values = NULL;
    c.alibi_slopes = NULL, c.alibi_max_bias = 0.0f, c.mask = HARNESS_MASK_NONE;
    return c;
}

static void test_window_wider_than_sequence(void)
{
    static const char *const bases[] = {"window 8/0 causal GQA padded",
                                        "window 5/3 non-causal MQA Sq7 Skv33",
                                        "window -1/2 non-causal f16"};
    for (int i = 0; i < 3; i++) {
        const harness_case a = plain(bases[i]);
        harness_case t[3] = {a, a, a};
        const int wide = a.Skv + a.Sq + 3;
        t[0].window = 1, t[0].window_left = wide, t[0].window_right = wide;
        t[1].window = 1, t[1].window_left = -1, t[1].window_right = -1;
        t[2].window = 1, t[2].window_left = -1, t[2].window_right = a.causal ? 0 : wide;
        t[0].name = "window wider than the sequence";
        t[1].name = "window -1/-1";
        t[2].name = "window -1/0 (causal) or -1/wide";
        same_as(&a, t, 3, 1);
    }
}

static void test_sinks_neg_inf_is_none(void)
{
    static const float neg_inf[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                                     -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    static const char *const bases[] = {"sinks host causal GQA padded",
                                        "sinks buffer Sq33 > Skv7 causal"};
    for (int i = 0; i < 2; i++) {
        const harness_case a = plain(bases[i]);
        harness_case t[2] = {a, a};
        CU_ASSERT_FATAL(a.Hq <= 8);
        t[0].sinks = HARNESS_SINKS_HOST, t[0].sink_values = neg_inf, t[0].name = "host sinks -inf";
        t[1].sinks = HARNESS_SINKS_BUFFER, t[1].sink_values = neg_inf;
        t[1].name = "buffer sinks -inf";
        same_as(&a, t, 2, 1);
    }
}

static void test_softcap_huge_is_none(void)
{
    static const char *const bases[] = {"softcap 5 causal GQA padded",
                                        "softcap 30 bf16 scale 1"};
    for (int i = 0; i < 2; i++) {
        const harness_case a = plain(bases[i]);
        harness_case t = a;
        t.softcap = 1e6f, t.name = "softcap 1e6";
        same_as(&a, &t, 1, 0);
    }
}

static void test_mask_zeros_is_none(void)
{
    const harness_case a = plain("mask f32 random per head, padded, pads NaN");
    harness_case t[2] = {a, a};
    t[0].mask = HARNESS_MASK_ZEROS, t[0].name = "mask of zeros f32";
    t[1].mask = HARNESS_MASK_ZEROS, t[1].mask_dtype = ATTN_F16, t[1].mask_bcast = HARNESS_BCAST_HEAD;
    t[1].name = "mask of zeros f16, broadcast heads";
    same_as(&a, t, 2, 0);
}

static void test_mask_upper_triangle_is_causal(void)
{
    /* per entry (padding: left, right, empty entries, q_len > kv_len), and
     * one [Sq][Skv] mask for everything, Sq < Skv (bottom-right) */
    static const char *const bases[] = {"padding causal", "Sq7 Skv33 padded",
                                        "f16 D40 GQA Sq<Skv"};
    for (int i = 0; i < 3; i++) {
        const harness_case a = *harness_case_named(bases[i]);
        harness_case t = a;
        CU_ASSERT_FATAL(a.causal);
        t.causal = 0, t.mask = HARNESS_MASK_CAUSAL, t.mask_dtype = i == 1 ? ATTN_F16 : ATTN_F32;
        t.name = "-inf above the diagonal, not causal";
        if (!a.q_len && !a.kv_len) t.mask_bcast = HARNESS_BCAST_BATCH | HARNESS_BCAST_HEAD;
        same_as(&a, &t, 1, 0);
    }
}

/* Rows r < Sq - Skv of a causal case with sinks see no key: exactly zeros,
 * and the sink as LSE. */
static void test_sink_alone_rows(void)
{
    const harness_case *c = harness_case_named("sinks buffer Sq33 > Skv7 causal");
    harness_variant_data vd;
    harness_variant_data_make(c, NULL, &vd);
    HARNESS_FOR_FAMILIES(HARNESS_FORWARD, f) {
        float *o = NULL, *l = NULL;
        if (harness_case_run(c, f, attn_forward, fwd, &o, &l) == 0)
            for (int bh = 0; bh < c->B * c->Hq; bh++)
                for (int r = 0; r < c->Sq - c->Skv; r++) {
                    const float *row = o + ((size_t)bh * c->Sq + r) * c->D;
                    for (int d = 0; d < c->D; d++) CU_ASSERT_EQUAL(row[d], 0.0f);
                    CU_ASSERT_DOUBLE_EQUAL(l[bh * c->Sq + r], vd.sinks[bh % c->Hq], 1e-5);
                }
        free(o), free(l);
    }
    harness_variant_data_release(&vd);
}

/* ---- packed == padded ---- */

/* The padded twin of packed case pk: each entry right-padded in its own
 * batch slot of max(len) rows. */
static harness_case padded_twin(const harness_case *pk)
{
    harness_case c = *pk;
    c.packed = 0, c.q_start = NULL, c.kv_start = NULL, c.Sq = 0, c.Skv = 0;
    for (int b = 0; b < pk->B; b++) {
        if (pk->q_len[b] > c.Sq) c.Sq = pk->q_len[b];
        if (pk->kv_len[b] > c.Skv) c.Skv = pk->kv_len[b];
    }
    c.lq = c.lk = c.lv = c.lo = (harness_layout){HARNESS_BHSD, 0, 0, 0};
    return c;
}

/* Entry rows between a packed axis ([B copies][H][Sa][D]) and padded
 * slots ([B][H][Sp][D]): to_padded copies the axis's rows into the slots
 * (NaN past each length), else compares the slots' rows with the axis's. */
static int map_rows(const harness_case *pk, int H, int Sa, int Sp, const int *start,
                    const int *len, float *axis, float *pad, int D, int to_padded,
                    double atol, double rtol, const char *what)
{
    int bad = 0;
    for (int b = 0; b < pk->B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < Sp; i++) {
                float *p = pad + (((size_t)b * H + h) * Sp + i) * D;
                const float *a = axis + (((size_t)b * H + h) * Sa + start[b] + i) * D;
                if (to_padded) {
                    for (int d = 0; d < D; d++) p[d] = i < len[b] ? a[d] : NAN;
                } else if (i < len[b]) {
                    bad += harness_compare(what, p, a, (size_t)D, atol, rtol, pk->seed) != 0;
                }
            }
    return bad;
}

static void packed_is_padded(const char *name)
{
    const harness_case *pk = harness_case_named(name);
    const harness_case pd = padded_twin(pk);
    const size_t na = (size_t)pk->B * pk->Hq * pk->Sq * pk->D;
    const size_t nka = (size_t)pk->B * pk->Hkv * pk->Skv * pk->D;
    const size_t np = (size_t)pd.B * pd.Hq * pd.Sq * pd.D;
    const size_t nkp = (size_t)pd.B * pd.Hkv * pd.Skv * pd.D;
    float *q = harness_xalloc(na), *k = harness_xalloc(nka), *v = harness_xalloc(nka);
    float *o = harness_xalloc(na), *l = harness_xalloc(na / pk->D);
    float *qp = harness_xalloc(np), *kp = harness_xalloc(nkp), *vp = harness_xalloc(nkp);
    float *op = harness_xalloc(np), *lp = harness_xalloc(np / pd.D);
    /* one axis of data, copied into every batch entry and into the slots */
    harness_fill_qkv(q, na / pk->B, k, v, nka / pk->B, pk->seed, 1.0f, -2.0f, 2.0f);
    for (int b = 1; b < pk->B; b++) {
        memcpy(q + na / pk->B * b, q, na / pk->B * sizeof *q);
        memcpy(k + nka / pk->B * b, k, nka / pk->B * sizeof *k);
        memcpy(v + nka / pk->B * b, v, nka / pk->B * sizeof *v);
    }
    harness_round(pk->dtype, q, na), harness_round(pk->dtype, k, nka), harness_round(pk->dtype, v, nka);
    map_rows(pk, pk->Hq, pk->Sq, pd.Sq, pk->q_start, pk->q_len, q, qp, pk->D, 1, 0, 0, NULL);
    map_rows(pk, pk->Hkv, pk->Skv, pd.Skv, pk->kv_start, pk->kv_len, k, kp, pk->D, 1, 0, 0, NULL);
    map_rows(pk, pk->Hkv, pk->Skv, pd.Skv, pk->kv_start, pk->kv_len, v, vp, pk->D, 1, 0, 0, NULL);
    double atol, rtol;
    attn_tolerance(pk->dtype, &atol, &rtol);
    HARNESS_FOR_FAMILIES(HARNESS_FORWARD, f) {
        if (harness_case_exec(pk, f, attn_forward, fwd, q, k, v, o, l) ||
            harness_case_exec(&pd, f, attn_forward, fwd, qp, kp, vp, op, lp))
            continue;
        char what[200];
        snprintf(what, sizeof what, "packed \"%s\" vs padded [%s] O", name, harness_family_name(f));
        int bad = map_rows(pk, pk->Hq, pk->Sq, pd.Sq, pk->q_start, pk->q_len, o, op, pk->D, 0,
                           2 * atol, 2 * rtol, what);
        snprintf(what, sizeof what, "packed \"%s\" vs padded [%s] LSE", name, harness_family_name(f));
        bad += map_rows(pk, pk->Hq, pk->Sq, pd.Sq, pk->q_start, pk->q_len, l, lp, 1, 0,
                        2 * atol, 2 * rtol, what);
        CU_ASSERT_EQUAL(bad, 0);
    }
    free(q), free(k), free(v), free(o), free(l), free(qp), free(kp), free(vp), free(op), free(lp);
}

static void test_packed_is_padded(void)
{
    packed_is_padded("packed 1, 7, 33, 64 causal GQA");
    packed_is_padded("packed + window 8 + sinks, 1/7/33/64 f16");
    packed_is_padded("packed + ALiBi, Sq != Skv, unowned rows, D7");
}

static const harness_test tests[] = {
    HARNESS_TEST(test_window),
    HARNESS_TEST(test_softcap),
    HARNESS_TEST(test_sinks),
    HARNESS_TEST(test_alibi),
    HARNESS_TEST(test_mask),
    HARNESS_TEST(test_packed),
    HARNESS_TEST(test_window_wider_than_sequence),
    HARNESS_TEST(test_sinks_neg_inf_is_none),
    HARNESS_TEST(test_softcap_huge_is_none),
    HARNESS_TEST(test_mask_zeros_is_none),
    HARNESS_TEST(test_mask_upper_triangle_is_causal),
    HARNESS_TEST(test_sink_alone_rows),
    HARNESS_TEST(test_packed_is_padded),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("variants", tests); }

int main(void) { return harness_run("test_variants", register_tests); }
