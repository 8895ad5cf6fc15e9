/* x86.h -- small AVX2 helpers shared by the x86 kernels of quant/ (included
 * by files compiled with at least -mavx2 -mfma -mf16c); internal. */
#ifndef GGUF_QUANT_X86_H
#define GGUF_QUANT_X86_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* The sum of the 8 float lanes of v. */
static inline float hsum_f32(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* 16 bytes of packed nibbles as 32 bytes: low nibbles (elements 0..15)
 * then high nibbles (elements 16..31), each 0..15. */
static inline __m256i unpack_nibbles32(const uint8_t *p)
{
    const __m128i q = _mm_loadu_si128((const __m128i *)p);
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

/* Byte j is 0xff where bit j of x is set, else 0. */
static inline __m256i bits_to_bytes(uint32_t x)
{
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32((int)x),
        _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0202020202020202,
                           0x0303030303030303));
    /* byte k of each 8 has every bit but bit k set */
    const __m256i others = _mm256_set1_epi64x((long long)0x7fbfdfeff7fbfdfeULL);
    return _mm256_cmpeq_epi8(_mm256_or_si256(spread, others), _mm256_set1_epi64x(-1));
}

/* 8 int32 lanes summing to the dot product of the signed bytes x and y
 * (x in -128..127 but not paired with y = -128; our activations are
 * -127..127 here). */
static inline __m256i dot_i8(__m256i x, __m256i y)
{
    const __m256i ax = _mm256_sign_epi8(x, x);
    const __m256i sy = _mm256_sign_epi8(y, x);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, sy), _mm256_set1_epi16(1));
}

/* A half as a float by the F16C instruction: exact, the value of
 * gq_h2f() (NaNs aside, which no finite result depends on). */
static inline float h2f(uint16_t h)
{
    return _cvtsh_ss(h);
}

static inline uint32_t load_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

#endif /* GGUF_QUANT_X86_H */
