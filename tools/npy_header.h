/* npy_header.h -- parses the header of a NumPy .npy file (format versions
 * 1.0, 2.0 and 3.0): its dtype, memory order and shape. */
#ifndef ATTN_NPY_HEADER_H
#define ATTN_NPY_HEADER_H

#include <stddef.h>

enum { NPY_MAX_DIMS = 8 };

typedef struct npy_header {
    char descr[16];        /* the dtype as written, e.g. "<f4" */
    int fortran_order;     /* 1: column-major */
    int ndim;              /* 0 .. NPY_MAX_DIMS */
    size_t shape[NPY_MAX_DIMS];
    size_t data_offset;    /* bytes from the start of the file to the data */
} npy_header;

/* Parses the first n bytes of a file (at least the whole header). Returns 0,
 * or -1 with the reason in err (e.g. "not a .npy file (no \\x93NUMPY magic)",
 * "header has no 'shape'"). Checks the form only: which dtypes and orders a
 * caller accepts is its own decision. */
int npy_header_parse(const unsigned char *bytes, size_t n, npy_header *h, char *err,
                     size_t err_size);

#endif /* ATTN_NPY_HEADER_H */
