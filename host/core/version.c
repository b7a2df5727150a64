/* version.c -- the library's version and the names of its statuses. */
#include "attn.h"

#define ATTN_STR2(x) #x
#define ATTN_STR(x) ATTN_STR2(x)

unsigned attn_version(void) { return ATTN_VERSION_NUMBER; }

const char *attn_version_string(void)
{
    return ATTN_STR(ATTN_VERSION_MAJOR) "." ATTN_STR(ATTN_VERSION_MINOR) "." ATTN_STR(
        ATTN_VERSION_PATCH);
}

const char *attn_status_name(attn_status s)
{
    switch (s) {
    case ATTN_SUCCESS: return "ATTN_SUCCESS";
    case ATTN_ERROR_INVALID_ARGUMENT: return "ATTN_ERROR_INVALID_ARGUMENT";
    case ATTN_ERROR_UNSUPPORTED: return "ATTN_ERROR_UNSUPPORTED";
    case ATTN_ERROR_NO_DEVICE: return "ATTN_ERROR_NO_DEVICE";
    case ATTN_ERROR_OPENCL: return "ATTN_ERROR_OPENCL";
    case ATTN_ERROR_BUILD: return "ATTN_ERROR_BUILD";
    case ATTN_ERROR_OUT_OF_MEMORY: return "ATTN_ERROR_OUT_OF_MEMORY";
    case ATTN_ERROR_TUNING_DB: return "ATTN_ERROR_TUNING_DB";
    case ATTN_ERROR_IO: return "ATTN_ERROR_IO";
    case ATTN_ERROR_MISMATCH: return "ATTN_ERROR_MISMATCH";
    }
    return "ATTN_STATUS_UNKNOWN";
}
