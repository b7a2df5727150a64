/* test_info_tool.c -- attn-info end to end ($ATTN_INFO_BIN): the device
 * list marks the device attn_context_create(NULL) selects, and the mma
 * family's line says the library's own verdict and reason
 * (attn_family_status) for it; --device marks the one it names and refuses
 * one that matches nothing; a bad option is status 2 with a pointer to
 * --help. (It had no test: a verdict line printing "usable" everywhere
 * passed the suites.) */
#define _XOPEN_SOURCE 700
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* attn-info with args; its output (stdout and stderr) in *text, which
 * the caller frees. */
static int run(const char *const *args, char **text)
{
    const char *bin = harness_tool_path("ATTN_INFO_BIN", "attn-info");
    char dir[512], log[600];
    harness_temp_dir(dir, sizeof dir, "info");
    snprintf(log, sizeof log, "%s/info.log", dir);
    const int rc = harness_run_program(bin, args, log);
    *text = harness_read_file(log, NULL);
    harness_remove_tree(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(*text);
    return rc;
}

/* How the line attn-info prints for ctx's device ("P:D  platform /
 * device") ends. */
static void device_line(attn_context *ctx, char *buf, size_t size)
{
    char name[256] = "";
    clGetDeviceInfo(attn_context_device(ctx), CL_DEVICE_NAME, sizeof name, name, NULL);
    snprintf(buf, size, "/ %s\n", name);
}

static void test_default_device_and_mma_verdict(void)
{
    attn_context *ctx = NULL;
    CU_ASSERT_EQUAL_FATAL(attn_context_create(NULL, &ctx), ATTN_SUCCESS);
    int usable = -1;
    char why[256] = "", want[600], dev[300];
    CU_ASSERT_EQUAL_FATAL(attn_family_status(ctx, "mma", &usable, why, sizeof why), ATTN_SUCCESS);
    device_line(ctx, dev, sizeof dev);
    attn_context_release(ctx);

    const char *const none[] = {NULL};
    char *text = NULL;
    CU_ASSERT_EQUAL(run(none, &text), 0);
    /* the marked line is the default device's */
    const char *star = strstr(text, "\n* ");
    CU_ASSERT_PTR_NOT_NULL(star);
    if (star) {
        const char *eol = strchr(star + 1, '\n');
        const char *at = strstr(star, dev);
        CU_ASSERT(at != NULL && eol != NULL && at + strlen(dev) - 1 == eol);
    }
    /* the mma line is the library's verdict, with its reason */
    if (usable)
        snprintf(want, sizeof want, "mma family (tensor cores): usable on the selected device");
    else
        snprintf(want, sizeof want,
                 "mma family (tensor cores): not used on the selected device: %s\n", why);
    if (!strstr(text, want)) printf("\n  attn-info lacks \"%s\"; it said:\n%s", want, text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
    free(text);
}

static void test_device_option(void)
{
    char *text = NULL;
    const char *const first[] = {"--device", "0:0", NULL};
    CU_ASSERT_EQUAL(run(first, &text), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\n* 0:0 "));
    free(text);
    /* a selector that matches nothing: refused, naming it */
    const char *const nothing[] = {"--device", "no-such-device-xyz", NULL};
    CU_ASSERT_NOT_EQUAL(run(nothing, &text), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "no-such-device-xyz"));
    free(text);
}

static void test_bad_option(void)
{
    char *text = NULL;
    const char *const bogus[] = {"--bogus", NULL};
    CU_ASSERT_EQUAL(run(bogus, &text), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "--bogus"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "attn-info --help"));
    free(text);
    const char *const help[] = {"--help", NULL};
    CU_ASSERT_EQUAL(run(help, &text), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "Usage: attn-info"));
    free(text);
}

static const harness_test tests[] = {
    HARNESS_TEST(test_default_device_and_mma_verdict),
    HARNESS_TEST(test_device_option),
    HARNESS_TEST(test_bad_option),
    HARNESS_END,
};

static void register_tests(void) { harness_add_suite("info_tool", tests); }

int main(void) { return harness_run("test_info_tool", register_tests); }
