/*
 * half.h -- inline half and bfloat16 conversions for the files of quant/;
 * not installed.  quant/fp16.c exports them as gguf_fp32_to_fp16() and
 * friends; kernels include this header so that the conversion of each
 * element is inlined rather than a call through the library's PLT.
 *
 * Both directions round to nearest, ties to even, as the reference
 * converters do.  A NaN becomes the quiet NaN 0x7e00 (half, sign kept) or
 * keeps its top bits with the quiet bit set (bfloat16), so files match the
 * reference byte for byte.
 */
#ifndef GGUF_QUANT_HALF_H
#define GGUF_QUANT_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t gq_f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float gq_u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* IEEE binary16 from float. */
static inline uint16_t gq_f2h(float f)
{
    uint32_t u = gq_f2u(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u;            /* NaN */
    if (a >= 0x477ff000u) return sign | 0x7c00u;           /* rounds to infinity */
    if (a < 0x38800000u) {
        /* Subnormal half (or zero): the value in units of 2^-24, rounded
         * to nearest even.  Below 2^-25 everything rounds to zero. */
        if (a < 0x33000000u) return sign;
        uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e;                          /* 14..24 */
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return sign | (uint16_t)q;
    }
    /* Normal: rebias the exponent, round the 13 dropped mantissa bits. */
    uint32_t h = ((a - 0x38000000u) >> 13);
    uint32_t rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return sign | (uint16_t)h;
}

/* Float from IEEE binary16; exact (a signalling NaN comes back quiet). */
static inline float gq_h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) {
        /* infinity, or a NaN made quiet as the hardware converters do */
        return gq_u2f(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0));
    }
    if (e == 0) {
        /* zero or subnormal: m * 2^-24, exact in float */
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    return gq_u2f(sign | ((e + 112) << 23) | (m << 13));
}

/* bfloat16 from float. */
static inline uint16_t gq_f2bf(float f)
{
    uint32_t u = gq_f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* Float from bfloat16; exact. */
static inline float gq_bf2f(uint16_t h)
{
    return gq_u2f((uint32_t)h << 16);
}

#endif /* GGUF_QUANT_HALF_H */
