/* attn-info -- lists every OpenCL platform and device with the facts attn
 * cares about, and marks the device a selector picks (the default selector
 * unless --device is given). Uses only attn.h and OpenCL. */
#define _POSIX_C_SOURCE 200809L
#include "attn.h"
#include "tool_error.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: attn-info [--device SEL]\n"
            "Lists every OpenCL platform and device as P:D and marks with '*' the one\n"
            "attn would use.\n"
            "\n"
            "  --device SEL  mark the device SEL selects instead of the default one:\n"
            "                \"P:D\" (platform and device index) or a case-insensitive\n"
            "                substring of platform, vendor or device name\n"
            "                (\"nvidia\", \"pocl\", \"cpu\")\n"
            "  --help        print this help and exit\n"
            "  --version     print the version and exit\n"
            "\n"
            "The default selector is $ATTN_DEVICE when set, else the first GPU, else the\n"
            "first device. Exit status: 0 ok, 1 failure, 2 bad usage.\n");
}

static const char *type_name(cl_device_type t)
{
    if (t & CL_DEVICE_TYPE_GPU) return "GPU";
    if (t & CL_DEVICE_TYPE_CPU) return "CPU";
    if (t & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
#ifdef CL_DEVICE_TYPE_CUSTOM
    if (t & CL_DEVICE_TYPE_CUSTOM) return "custom";
#endif
    return "other";
}

/* A device string property, "?" when the query fails. */
static void device_str(cl_device_id d, cl_device_info what, char *buf, size_t size)
{
    if (clGetDeviceInfo(d, what, size, buf, NULL) != CL_SUCCESS) snprintf(buf, size, "?");
    buf[size - 1] = 0;
}

/* Whether a space-separated extension list holds `name` exactly. */
static int has_extension(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return 1;
    return 0;
}

static void print_device(unsigned pi, unsigned di, const char *platform, cl_device_id d,
                         int marked)
{
    char name[256], vendor[256], driver[256], version[256], cversion[256];
    device_str(d, CL_DEVICE_NAME, name, sizeof name);
    device_str(d, CL_DEVICE_VENDOR, vendor, sizeof vendor);
    device_str(d, CL_DRIVER_VERSION, driver, sizeof driver);
    device_str(d, CL_DEVICE_VERSION, version, sizeof version);
    device_str(d, CL_DEVICE_OPENCL_C_VERSION, cversion, sizeof cversion);
    cl_device_type type = 0;
    cl_uint cus = 0, fwidth = 0;
    cl_ulong local = 0, global = 0;
    size_t wg = 0, ext_size = 0;
    clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus, &cus, NULL);
    clGetDeviceInfo(d, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof fwidth, &fwidth, NULL);
    clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, NULL);
    clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
    int fp16 = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &ext_size) == CL_SUCCESS && ext_size) {
        char *ext = malloc(ext_size + 1);
        if (ext && clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, ext_size, ext, NULL) == CL_SUCCESS) {
            ext[ext_size] = 0;
            fp16 = has_extension(ext, "cl_khr_fp16");
        }
        free(ext);
    }
    printf("%c %u:%u  %s / %s\n", marked ? '*' : ' ', pi, di, platform, name);
    /* the float vector width sets a CPU's vector-family defaults (desc_vector.c) */
    printf("        vendor: %s   type: %s   compute units: %u   native float vector: %u\n",
           vendor, type_name(type), (unsigned)cus, (unsigned)fwidth);
    printf("        local memory: %llu KiB   global memory: %llu MiB   max work-group: %zu"
           "   fp16 (cl_khr_fp16): %s\n",
           (unsigned long long)(local / 1024), (unsigned long long)(global >> 20), wg,
           fp16 ? "yes" : "no");
    printf("        driver: %s   %s   (%s)\n", driver, version, cversion);
}

/* The mma family's verdict on the selected device (attn_family_status):
 * on an NVIDIA GPU of compute capability 8.0 or more this builds and
 * verifies the family's kernels, a few seconds. */
static void print_mma(const char *selector)
{
    attn_context *ctx = NULL;
    if (attn_context_create(selector, &ctx) != ATTN_SUCCESS) {
        printf("mma family (tensor cores): not known (%s)\n", attn_last_create_error());
        return;
    }
    int usable = 0;
    char why[256] = "";
    if (attn_family_status(ctx, "mma", &usable, why, sizeof why) != ATTN_SUCCESS)
        printf("mma family (tensor cores): not known (%s)\n", attn_last_error(ctx));
    else if (usable && why[0])
        printf("mma family (tensor cores): usable on the selected device for f16 and bf16 "
               "(verified), not for f32: %s\n", why);
    else if (usable)
        printf("mma family (tensor cores): usable on the selected device, f16, bf16 and f32 "
               "(verified)\n");
    else
        printf("mma family (tensor cores): not used on the selected device: %s\n", why);
    attn_context_release(ctx);
}

static int run(int argc, char **argv)
{
    static const struct option options[] = {
        {"device", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *selector = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'd': selector = optarg; break;
        case 'h': usage(stdout); return EXIT_SUCCESS;
        case 'V':
            printf("attn-info %d.%d.%d (libattn %s)\n", ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR,
                   ATTN_VERSION_PATCH, attn_version_string());
            return EXIT_SUCCESS;
        default: /* getopt_long has said what is wrong */
            fprintf(stderr, "Try 'attn-info --help'.\n");
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "attn-info: unexpected argument '%s'\nTry 'attn-info --help'.\n",
                argv[optind]);
        return EXIT_USAGE;
    }

    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err != CL_SUCCESS || np == 0) {
        fprintf(stderr, "attn-info: no OpenCL platform found (clGetPlatformIDs: %d); is an ICD "
                "installed under /etc/OpenCL/vendors or named by OCL_ICD_VENDORS?\n", (int)err);
        return EXIT_FAILURE;
    }
    cl_platform_id *platforms = calloc(np, sizeof *platforms);
    if (!platforms || clGetPlatformIDs(np, platforms, NULL) != CL_SUCCESS) {
        fprintf(stderr, "attn-info: clGetPlatformIDs failed\n");
        free(platforms);
        return EXIT_FAILURE;
    }

    cl_platform_id chosen_p = NULL;
    cl_device_id chosen_d = NULL;
    attn_status st = attn_select_device(selector, &chosen_p, &chosen_d);

    printf("attn %s, %s: OpenCL platforms and devices ('*' = %s)\n", attn_version_string(),
           attn_has_clblast() ? "with CLBlast"
                              : "without CLBlast (materialized attention, attention weights and "
                                "the layer are unsupported)",
           selector ? "selected by --device" : "the default device");
    unsigned ndevices = 0;
    for (cl_uint pi = 0; pi < np; pi++) {
        char pname[256] = "?";
        clGetPlatformInfo(platforms[pi], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
        pname[sizeof pname - 1] = 0;
        cl_uint nd = 0;
        if (clGetDeviceIDs(platforms[pi], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || !nd) {
            printf("  %u:-  %s: no devices\n", (unsigned)pi, pname);
            continue;
        }
        cl_device_id *devices = calloc(nd, sizeof *devices);
        if (!devices ||
            clGetDeviceIDs(platforms[pi], CL_DEVICE_TYPE_ALL, nd, devices, NULL) != CL_SUCCESS) {
            free(devices);
            printf("  %u:-  %s: clGetDeviceIDs failed\n", (unsigned)pi, pname);
            continue;
        }
        for (cl_uint di = 0; di < nd; di++) {
            print_device(pi, di, pname, devices[di], st == ATTN_SUCCESS && devices[di] == chosen_d);
            ndevices++;
        }
        free(devices);
    }
    free(platforms);

    const char *env = getenv("ATTN_DEVICE");
    if (st != ATTN_SUCCESS) {
        tool_error("attn-info", NULL, NULL, st, attn_last_create_error());
        return EXIT_FAILURE;
    }
    print_mma(selector);
    if (!selector || !*selector) {
        if (env && *env)
            printf("default selector: ATTN_DEVICE=\"%s\"\n", env);
        else
            printf("default selector: the first GPU, else the first device\n");
    }
    return ndevices ? EXIT_SUCCESS : EXIT_FAILURE;
}

int main(int argc, char **argv) { return tool_exit("attn-info", run(argc, argv)); }
