/* fuzz_npy_header.c -- any bytes as the start of a .npy file for
 * attn-weights' header parser (tools/npy_header.c): no crash, UB or read
 * past the input; a success names a data offset inside the input, a dtype
 * string and at most NPY_MAX_DIMS dimensions; a failure gives a reason. */
#include "npy_header.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* an exact-size copy, so that ASan sees any read past the end */
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    npy_header h;
    char err[256];
    err[0] = 0;
    if (npy_header_parse(copy, size, &h, err, sizeof err) == 0) {
        if (h.data_offset > size || h.ndim < 0 || h.ndim > NPY_MAX_DIMS ||
            memchr(h.descr, 0, sizeof h.descr) == NULL || (h.fortran_order & ~1)) {
            fprintf(stderr, "fuzz_npy_header: accepted with offset %zu of %zu, ndim %d\n",
                    h.data_offset, size, h.ndim);
            abort();
        }
    } else if (err[0] == 0) {
        fprintf(stderr, "fuzz_npy_header: failed without a reason\n");
        abort();
    }
    free(copy);
    return 0;
}
