/* test_variants.c -- the attention variants of attn_problem (sliding window,
 * logit softcap, sinks, ALiBi, the additive mask, packed batches) against
 * attn_reference_forward, in both kernel families: each variant alone over
 * a few shapes, through attn_forward and through attn_decode with a KV
 * cache (split and unsplit).
 *
 * The cases are the "variants/..." rows of the shared table (case_table.c),
 * run by the shared runner (cases.c), which makes each case's sinks and
 * mask (case_variants.c), checks gaps, inputs and, packed, that rows no
 * entry owns stay untouched. */
#define _POSIX_C_SOURCE 200809L
#include "cases.h"

static void run_group(const char *group) { harness_run_group(group, attn_forward, "attn_forward"); }

static void test_window(void) { run_group("variants/window"); }
static void test_softcap(void) { run_group("variants/softcap"); }
static void test_sinks(void) { run_group("variants/sinks"); }
static void test_alibi(void) { run_group("variants/alibi"); }
static void test_mask(void) { run_group("variants/mask"); }
static void test_packed(void) { run_group("variants/packed"); }

static void test_decode_alone(void)
{
    harness_run_group("variants_decode/alone", harness_decode_entry, "attn_decode");
}

static const harness_test tests[] = {
    HARNESS_TEST(test_window),
    HARNESS_TEST(test_softcap),
    HARNESS_TEST(test_sinks),
    HARNESS_TEST(test_alibi),
    HARNESS_TEST(test_mask),
    HARNESS_TEST(test_packed),
    HARNESS_TEST(test_decode_alone),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("variants", tests); }

int main(void) { return harness_run("test_variants", register_tests); }
