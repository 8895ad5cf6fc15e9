/* fp16.c -- IEEE half and bfloat16 conversions, the public entry points.
 *
 * The conversions themselves live in quant/half.h (inline, shared with the
 * row kernels); see there for the rounding and NaN rules. */
#include <config.h>

#include "quant/half.h"
#include "quant/quant.h"

uint16_t gguf_fp32_to_fp16(float f)
{
    return gq_f2h(f);
}

float gguf_fp16_to_fp32(uint16_t h)
{
    return gq_h2f(h);
}

uint16_t gguf_fp32_to_bf16(float f)
{
    return gq_f2bf(f);
}

float gguf_bf16_to_fp32(uint16_t h)
{
    return gq_bf2f(h);
}
