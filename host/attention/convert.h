/* convert.h -- the host's float to 16-bit rounding and the conversions
 * (convert.c), for the library's own use, which must not go through the
 * public attn_convert_* (they clear the thread's last error). */
#ifndef ATTN_ATTENTION_CONVERT_H
#define ATTN_ATTENTION_CONVERT_H

#include "attn.h"

#include <stddef.h>
#include <stdint.h>

/* f's nearest f16 (bf16), ties to even, as the kernels' stores round */
uint16_t attn_f16_bits(float f);
uint16_t attn_bf16_bits(float f);

/* attn_convert_from_f32 and attn_convert_to_f32 for the library's own use:
 * t a storage type, src and dst valid for n values, and the calling
 * thread's last error left alone (it belongs to the caller's last public
 * call without a context, attn/core.h). */
void attn_store_from_f32(attn_dtype t, const float *src, void *dst, size_t n);
void attn_load_to_f32(attn_dtype t, const void *src, float *dst, size_t n);

#endif /* ATTN_ATTENTION_CONVERT_H */
