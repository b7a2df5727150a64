/* tensor_file.h -- reads a user's tensor for attn-weights: a .npy file
 * (dtype '<f4' or '<f2', C order) or a raw little-endian file whose shape
 * and element type are given on the command line. */
#ifndef ATTN_TENSOR_FILE_H
#define ATTN_TENSOR_FILE_H

#include "attn.h"

#include <stddef.h>

typedef struct tensor_file {
    int dims[4];      /* [batch, heads, seq, head_dim]; a 2-D or 3-D file gets leading 1s */
    attn_dtype dtype; /* the file's element type */
    float *data;      /* dims' product of floats, BHSD, malloc'd */
} tensor_file;

/* Parses "B,H,S,D", "H,S,D" or "S,D" (positive integers) into dims with
 * leading 1s. Returns 0, or -1 with the reason in err. */
int tensor_shape_parse(const char *text, int dims[4], char *err, size_t err_size);

/* Reads path: as .npy when its name ends in ".npy" (then shape, if not
 * NULL, must agree with the file's), else as raw elements of raw_type in
 * little-endian order with the given shape (required), the file's size
 * exactly their size. Returns 0, or -1 with the reason (naming the file) in
 * err, nothing allocated. */
int tensor_file_read(const char *path, const int *shape, attn_dtype raw_type, tensor_file *t,
                     char *err, size_t err_size);

void tensor_file_free(tensor_file *t);

#endif /* ATTN_TENSOR_FILE_H */
