/* test_variants_decode.c -- the attention variants in attn_decode through a
 * KV cache (harness_decode_entry), against attn_reference_forward, in both
 * kernel families (vector, tiled, mma), unsplit and split (where attn_decode_combine adds each
 * row's sink once): each variant alone, then together (gpt-oss's window
 * and sinks, a mask hiding whole rows, GQA and MQA, odd head dims, the
 * three storage types, strided K/V, in place), and the equivalences that
 * matter most in decode:
 *   window wider than the cache == no window         (bit for bit)
 *   sinks all -inf == no sinks, split and unsplit     (bit for bit)
 *   attn_decode == attn_forward on the same problem   (tolerance: twice
 *     the storage type's; the paths split the keys differently)
 * Rows with no visible key but a sink give zeros and LSE = the sink,
 * checked exactly on rows the mask hides whole (attn_decode refuses more
 * queries than a sequence's cache holds, and the window always keeps a
 * query's own position, so in decode only a mask empties a row). */
#define _POSIX_C_SOURCE 200809L
#include "cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dec = "attn_decode";

static void run_group(const char *group) { harness_run_group(group, harness_decode_entry, dec); }

static void test_alone(void) { run_group("variants_decode/alone"); }
static void test_combos(void) { run_group("variants_decode/combos"); }

/* c unchanged, and each of n twins, under both families and each split. */
static void same_as(const harness_case *c, const harness_case *twins, int n, int exact)
{
    static const char *const splits[] = {"splits=1", "splits=3"};
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < n; i++) {
            harness_case a = *c, t = twins[i];
            a.params = t.params = splits[s];
            HARNESS_FOR_FAMILIES(HARNESS_DECODE, f)
                harness_case_same(&a, &t, f, harness_decode_entry, dec, exact);
        }
}

static void test_window_wider_than_cache(void)
{
    harness_case a = *harness_case_named("decode sinks, unsplit");
    harness_case t[2] = {a, a};
    t[0].window = 1, t[0].window_left = a.Skv + 1, t[0].window_right = a.Skv + 1;
    t[1].window = 1, t[1].window_left = -1, t[1].window_right = -1;
    t[0].name = "window wider than the cache", t[1].name = "window -1/-1";
    same_as(&a, t, 2, 1);
}

static void test_sinks_neg_inf_is_none(void)
{
    static const float neg_inf[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                                     -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    harness_case a = *harness_case_named("decode window 8, unsplit");
    harness_case t[2] = {a, a};
    CU_ASSERT_FATAL(a.Hq <= 8);
    t[0].sinks = HARNESS_SINKS_HOST, t[0].sink_values = neg_inf, t[0].name = "host sinks -inf";
    t[1].sinks = HARNESS_SINKS_BUFFER, t[1].sink_values = neg_inf, t[1].name = "buffer sinks -inf";
    same_as(&a, t, 2, 1);
}

/* Each combination row through attn_decode and attn_forward (which takes
 * the same problem: starts 0, the cache's rows as K/V). */
static void test_decode_is_forward(void)
{
    for (const harness_case *c = harness_group_next("variants_decode/combos", NULL); c;
         c = harness_group_next("variants_decode/combos", c))
        HARNESS_FOR_FAMILIES(c->kv_int8 ? 0 : HARNESS_DECODE, f) { /* int8: a cache's alone */
            float *od = NULL, *ld = NULL, *of = NULL, *lf = NULL;
            harness_case_run(c, f, harness_decode_entry, dec, &od, &ld);
            harness_case_run(c, f, attn_forward, "attn_forward", &of, &lf);
            if (od && of) {
                double atol, rtol;
                attn_tolerance(c->dtype, &atol, &rtol);
                const size_t rows = (size_t)c->B * c->Hq * c->Sq;
                char what[200];
                snprintf(what, sizeof what, "\"%s\" decode vs forward [%s]", c->name,
                         harness_family_name(f));
                int bad = harness_compare(what, od, of, rows * (size_t)c->D, 2 * atol, 2 * rtol, c->seed);
                if (!c->no_lse) bad += harness_compare(what, ld, lf, rows, 2 * atol, 2 * rtol, c->seed);
                CU_ASSERT_EQUAL(bad, 0);
            }
            free(od), free(ld), free(of), free(lf);
        }
}

/* Row 2 of entries 0 and 1 is masked whole (harness_mask_kind RANDOM):
 * exactly zeros, and the sink as LSE, whether the combine or the unsplit
 * kernel adds it. */
static void test_hidden_rows_give_the_sink(void)
{
    static const char *const names[] = {"hidden rows + sinks, unsplit",
                                        "hidden rows + sinks buffer + window, split 3"};
    for (int n = 0; n < 2; n++) {
        const harness_case *c = harness_case_named(names[n]);
        harness_variant_data vd;
        harness_variant_data_make(c, NULL, &vd);
        CU_ASSERT_FATAL(c->q_len[0] > 2 && c->q_len[1] > 2 && c->mask == HARNESS_MASK_RANDOM);
        HARNESS_FOR_FAMILIES(HARNESS_DECODE, f) {
            float *o = NULL, *l = NULL;
            if (harness_case_run(c, f, harness_decode_entry, dec, &o, &l) == 0)
                for (int b = 0; b < 2; b++)
                    for (int h = 0; h < c->Hq; h++) {
                        const size_t row = ((size_t)b * c->Hq + h) * c->Sq + 2;
                        for (int d = 0; d < c->D; d++) CU_ASSERT_EQUAL(o[row * c->D + d], 0.0f);
                        CU_ASSERT_DOUBLE_EQUAL(l[row], vd.sinks[h], 1e-5);
                    }
            free(o), free(l);
        }
        harness_variant_data_release(&vd);
    }
}

static const harness_test tests[] = {
    HARNESS_TEST(test_alone),
    HARNESS_TEST(test_combos),
    HARNESS_TEST(test_window_wider_than_cache),
    HARNESS_TEST(test_sinks_neg_inf_is_none),
    HARNESS_TEST(test_decode_is_forward),
    HARNESS_TEST(test_hidden_rows_give_the_sink),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("variants_decode", tests); }

int main(void) { return harness_run("test_variants_decode", register_tests); }
