/* test_variants_combos.c -- the attention variants together through
 * attn_forward against attn_reference_forward, in both kernel families,
 * over the matrix: GQA and MQA, padding with empty entries and pads full
 * of NaN, Sq != Skv and rows with nothing visible, head dims 7 to 256,
 * strided layouts and odd offsets, f32/f16/bf16, in place and without LSE,
 * tile parameters that do not divide the lengths (the window's and the
 * mask's tile skipping at their edges), and packed batches with the other
 * variants. The "variants/combos", "variants/tiles" and
 * "variants/packed_combos" rows of the shared table (case_table.c); each
 * variant alone and the equivalences are in test_variants.c. */
#define _POSIX_C_SOURCE 200809L
#include "cases.h"

static void run_group(const char *group) { harness_run_group(group, attn_forward, "attn_forward"); }

static void test_combos(void) { run_group("variants/combos"); }
static void test_odd_tiles(void) { run_group("variants/tiles"); }
static void test_packed_combos(void) { run_group("variants/packed_combos"); }

static const harness_test tests[] = {
    HARNESS_TEST(test_combos),
    HARNESS_TEST(test_odd_tiles),
    HARNESS_TEST(test_packed_combos),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("variants_combos", tests); }

int main(void) { return harness_run("test_variants_combos", register_tests); }
