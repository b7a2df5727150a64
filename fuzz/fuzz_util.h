/* fuzz_util.h -- what the libFuzzer targets of fuzz/ share: reading typed
 * values from the fuzzer's bytes (zeros once they run out), a scratch
 * folder, one OpenCL context, failing loudly, and an independent walk over
 * a tensor's elements to check what validation accepted. */
#ifndef ATTN_FUZZ_UTIL_H
#define ATTN_FUZZ_UTIL_H

#include "attn.h"

#include <stddef.h>
#include <stdint.h>

typedef struct fuzz_reader {
    const uint8_t *p;
    size_t n;
} fuzz_reader;

uint8_t fuzz_u8(fuzz_reader *r);
uint32_t fuzz_u32(fuzz_reader *r);
uint64_t fuzz_u64(fuzz_reader *r);
/* Mostly small values in [lo, hi], sometimes any 32-bit int: the fuzzer
 * reaches valid problems quickly and still tries the extremes. */
int fuzz_int(fuzz_reader *r, int lo, int hi);
/* Mostly small values in [0, hi], sometimes any 64-bit size. */
size_t fuzz_size(fuzz_reader *r, size_t hi);

/* Reports a finding and aborts (libFuzzer saves the input). */
void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* A fresh folder under $TMPDIR (or /tmp) for this process, made once. */
const char *fuzz_temp_dir(void);

/* One context on $ATTN_DEVICE (the library's default otherwise), made on
 * first use; a failure is fatal. ATTN_LOG defaults to "error" here: bad
 * input is the norm and warnings would drown the fuzzer's output. */
attn_context *fuzz_context(void);

/* Walks every element [b][h][s][d] of t (offset and strides in elements)
 * with 128-bit arithmetic and marks it in marks[nelem] with bit `tag`.
 * Returns 0, or -1 when an element lies at or past nelem, or -2 when an
 * element is reached twice. Stops after nelem + 1 elements, so it is cheap
 * however large the shape claims to be. */
int fuzz_tensor_walk(const attn_tensor *t, int B, int H, int S, int D, size_t nelem,
                     unsigned char *marks, unsigned char tag);
/* The same for a tensor attn only reads: each batch entry's elements must
 * be distinct (-2 otherwise), but entries may share them (stride_batch 0
 * for a prompt shared by the batch, packed sequences). */
int fuzz_input_walk(const attn_tensor *t, int B, int H, int S, int D, size_t nelem,
                    unsigned char *marks, unsigned char tag);

#endif /* ATTN_FUZZ_UTIL_H */
