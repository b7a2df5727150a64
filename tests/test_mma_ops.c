/* test_mma_ops.c -- the mma family's fragment operations (cl/mma_ops.cl)
 * through attn_mma_check (host/kernels/mma_check.c): the emulation on this
 * device agrees exactly with the host's products, shuffles and roundings;
 * a doctored emulation is caught and named; and the NVIDIA-only PTX build
 * is refused with a status, not a crash, by a compiler that is not
 * NVIDIA's. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "core/program.h"
#include "kernels/mma_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_emulation_exact(void)
{
    attn_context *ctx = harness_context();
    int ok = -1;
    char why[256];
    for (int part = ATTN_MMA_CHECK_16; part <= ATTN_MMA_CHECK_TF32; part++) {
        CU_ASSERT_EQUAL_FATAL(attn_mma_check(ctx, 0, part, &ok, why, sizeof why), ATTN_SUCCESS);
        if (!ok) printf("\n  %s", why);
        CU_ASSERT_EQUAL(ok, 1);
        CU_ASSERT_STRING_EQUAL(why, "");
    }
}

/* On an application's out-of-order queue the check's result is read after
 * its kernel: the read was not ordered, and lost the race in some runs
 * (then the whole family was switched off for the context's life). */
static void test_out_of_order_queue(void)
{
    attn_context *ctx;
    cl_command_queue queue;
    cl_context cl;
    if (!harness_out_of_order_context(&ctx, &queue, &cl)) return;
    int failed = 0;
    for (int i = 0; i < 10; i++)
        for (int part = ATTN_MMA_CHECK_16; part <= ATTN_MMA_CHECK_TF32; part++) {
            int ok = -1;
            char why[256];
            CU_ASSERT_EQUAL(attn_mma_check(ctx, 0, part, &ok, why, sizeof why), ATTN_SUCCESS);
            if (!ok && failed++ == 0) printf("\n  run %d, part %d: %s", i, part, why);
        }
    CU_ASSERT_EQUAL(failed, 0);
    harness_app_release(ctx, queue, cl);
}

/* mma_ops.cl with `from` replaced by `to` (which must occur) in a folder of
 * its own; the check of part then reports `section`, and the other part's
 * still passes (the 16-bit and tf32 operations are checked apart). */
static void check_doctored(int part, const char *from, const char *to, const char *section)
{
    char dir[256], path[512];
    harness_temp_dir(dir, sizeof dir, "mma-ops");
    attn_context *ctx = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(getenv("ATTN_TEST_DEVICE"), &ctx), ATTN_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(attn_context_set_cache_dir(ctx, NULL), ATTN_SUCCESS);
    static const char *const names[] = {"mma_ops.cl", "mma_check.cl"};
    for (int i = 0; i < 2; i++) {
        char *text = attn_kernel_source(ctx, names[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(text);
        char *out = text;
        if (i == 0) {
            char *at = strstr(text, from);
            CU_ASSERT_PTR_NOT_NULL_FATAL(at);
            const size_t n = strlen(text) + strlen(to) + 1;
            out = malloc(n);
            CU_ASSERT_PTR_NOT_NULL_FATAL(out);
            snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
        }
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "w");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        fputs(out, f);
        CU_ASSERT_EQUAL(fclose(f), 0);
        if (out != text) free(out);
        free(text);
    }
    CU_ASSERT_EQUAL_FATAL(attn_context_set_kernel_dir(ctx, dir), ATTN_SUCCESS);
    int ok = -1;
    char why[256] = "";
    CU_ASSERT_EQUAL(attn_mma_check(ctx, 0, part, &ok, why, sizeof why), ATTN_SUCCESS);
    printf("\n  doctored (%s -> %s): %s", from, to, why);
    CU_ASSERT_EQUAL(ok, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, section));
    CU_ASSERT_EQUAL(attn_mma_check(ctx, 0, 1 - part, &ok, why, sizeof why), ATTN_SUCCESS);
    CU_ASSERT_EQUAL(ok, 1);
    attn_context_release(ctx);
    harness_remove_tree(dir);
}

/* The emulation's layouts broken one at a time: A's row halves, B's k
 * halves, the tf32 A's k halves, the shuffle's partner, f16 rounding. */
static void test_doctored_emulation(void)
{
    const int p16 = ATTN_MMA_CHECK_16, p32 = ATTN_MMA_CHECK_TF32;
    check_doctored(p16, "reg = (r >> 3) + 2 * (k >> 3)", "reg = 2 * (r >> 3) + (k >> 3)", "mma_f16");
    check_doctored(p16, "reg = k >> 3;", "reg = 1 - (k >> 3);", "mma_f16");
    check_doctored(p32, "(r >> 3) + 2 * (k >> 2)]", "2 * (r >> 3) + (k >> 2)]", "mma_tf32 ");
    check_doctored(p16, "ws[l ^ mask]", "ws[(l + mask) & 31]", "mma_xor");
    check_doctored(p16, "x += 0xfffu + ((x >> 13) & 1u);", "x += 0x1000u;", "mma_pack_f16");
}

/* Only NVIDIA's compiler takes the inline PTX; another must refuse the
 * build (an attn status naming the build), never crash or pass. */
static void test_ptx_refused_elsewhere(void)
{
    attn_context *ctx = harness_context();
    char name[256] = "";
    clGetDeviceInfo(attn_context_device(ctx), CL_DEVICE_VENDOR, sizeof name, name, NULL);
    if (strstr(name, "NVIDIA")) {
        printf("\n  (an NVIDIA device: the PTX check must pass instead)");
        for (int part = ATTN_MMA_CHECK_16; part <= ATTN_MMA_CHECK_TF32; part++) {
            int ok = -1;
            char why[256];
            CU_ASSERT_EQUAL(attn_mma_check(ctx, 1, part, &ok, why, sizeof why), ATTN_SUCCESS);
            if (!ok) printf("\n  part %d: %s", part, why);
            CU_ASSERT_EQUAL(ok, 1);
        }
        return;
    }
    for (int part = ATTN_MMA_CHECK_16; part <= ATTN_MMA_CHECK_TF32; part++) {
        int ok = -1;
        char why[256];
        const attn_status st = attn_mma_check(ctx, 1, part, &ok, why, sizeof why);
        printf("\n  PTX part %d on %s: %s: %.160s", part, name, attn_status_name(st),
               attn_last_error(ctx));
        CU_ASSERT_NOT_EQUAL(st, ATTN_SUCCESS);
        CU_ASSERT_EQUAL(ok, 0);
    }
}

static const harness_test tests[] = {
    HARNESS_TEST(test_emulation_exact),
    HARNESS_TEST(test_out_of_order_queue),
    HARNESS_TEST(test_doctored_emulation),
    HARNESS_TEST(test_ptx_refused_elsewhere),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("mma_ops", tests); }

int main(void) { return harness_run("test_mma_ops", register_tests); }
