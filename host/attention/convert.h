/* convert.h -- the host's float to 16-bit rounding (convert.c), for the
 * library's own checks (host/kernels/mma_check.c) that must not go through
 * the public attn_convert_from_f32. */
#ifndef ATTN_ATTENTION_CONVERT_H
#define ATTN_ATTENTION_CONVERT_H

#include <stdint.h>

/* f's nearest f16 (bf16), ties to even, as the kernels' stores round */
uint16_t attn_f16_bits(float f);
uint16_t attn_bf16_bits(float f);

#endif /* ATTN_ATTENTION_CONVERT_H */
