/* kernels-avx2.c -- the row kernels for AVX2 (8 float lanes), bit-identical
 * to the scalar ones.
 *
 * Compiled with -mavx2 -mfma -mf16c (the level requires all three) and
 * -ffp-contract=off: the compiler may use the wider instructions, but no
 * multiply-add is ever fused, and this file never calls one.  The kernels
 * themselves are in quant/vkernels.h; this file supplies its vocabulary. */
#include <config.h>

#include <immintrin.h>
#include <stdint.h>

#include "quant/kernels.h"

#define VL 8
typedef __m256 vf;
typedef __m256i vi;
typedef __m256 vm; /* all ones or all zeros per lane */

static inline vf vf_set(float a) { return _mm256_set1_ps(a); }
static inline vf vf_zero(void) { return _mm256_setzero_ps(); }
static inline vf vf_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void vf_store(float *p, vf a) { _mm256_storeu_ps(p, a); }
static inline vf vf_add(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf vf_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf vf_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf vf_div(vf a, vf b) { return _mm256_div_ps(a, b); }
static inline vf vf_sqrt(vf a) { return _mm256_sqrt_ps(a); }
static inline vf vf_abs(vf a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
static inline vf vf_neg(vf a) { return _mm256_xor_ps(_mm256_set1_ps(-0.0f), a); }
/* vminps/vmaxps return the second operand unless the first compares
 * strictly less (greater): exactly the C expression a < b ? a : b. */
static inline vf vf_min(vf a, vf b) { return _mm256_min_ps(a, b); }
static inline vf vf_max(vf a, vf b) { return _mm256_max_ps(a, b); }
static inline vm vf_lt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
static inline vm vf_le(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
static inline vm vf_gt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
static inline vm vf_ge(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
static inline vm vf_eq(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
static inline vm vf_ne(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_NEQ_UQ); }
static inline vf vf_sel(vm m, vf a, vf b) { return _mm256_blendv_ps(b, a, m); }
static inline vi vi_sel(vm m, vi a, vi b)
{
    return _mm256_blendv_epi8(b, a, _mm256_castps_si256(m));
}
static inline vm vm_and(vm a, vm b) { return _mm256_and_ps(a, b); }
static inline int vm_any(vm m) { return _mm256_movemask_ps(m) != 0; }
static inline int vm_first(vm m)
{
    const int bits = _mm256_movemask_ps(m);
    return bits ? __builtin_ctz((unsigned)bits) : -1;
}

static inline vi vi_set(int32_t k) { return _mm256_set1_epi32(k); }
static inline vi vi_add(vi a, vi b) { return _mm256_add_epi32(a, b); }
static inline vi vi_sub(vi a, vi b) { return _mm256_sub_epi32(a, b); }
static inline vi vi_and(vi a, vi b) { return _mm256_and_si256(a, b); }
static inline vi vi_or(vi a, vi b) { return _mm256_or_si256(a, b); }
static inline vi vi_min(vi a, vi b) { return _mm256_min_epi32(a, b); }
static inline vi vi_max(vi a, vi b) { return _mm256_max_epi32(a, b); }
static inline vm vi_gt(vi a, vi b) { return _mm256_castsi256_ps(_mm256_cmpgt_epi32(a, b)); }
static inline vi vi_srl(vi a, int k) { return _mm256_srli_epi32(a, k); }
static inline vi vi_sll(vi a, int k) { return _mm256_slli_epi32(a, k); }
static inline vi vi_srlv(vi a, vi b) { return _mm256_srlv_epi32(a, b); }
static inline vi vi_iota(void) { return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); }
static inline vf vf_cvt(vi a) { return _mm256_cvtepi32_ps(a); }
static inline vi vi_cvtt(vf a) { return _mm256_cvttps_epi32(a); }
static inline vi vf_as_vi(vf a) { return _mm256_castps_si256(a); }
static inline vf vi_as_vf(vi a) { return _mm256_castsi256_ps(a); }

/* quantize.c's round_even() per lane (the same bits for any input), then
 * clamped to lo..hi. */
static inline vi vf_round_clamp(vf a, int lo, int hi)
{
    const vi bits = _mm256_castps_si256(_mm256_add_ps(a, _mm256_set1_ps(12582912.0f)));
    const vi r = _mm256_sub_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)),
                                  _mm256_set1_epi32(0x00400000));
    return _mm256_min_epi32(_mm256_max_epi32(r, _mm256_set1_epi32(lo)), _mm256_set1_epi32(hi));
}

static inline int32_t vi_max_reduce(vi a)
{
    __m128i m = _mm_max_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0x4e));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0xb1));
    return _mm_cvtsi128_si32(m);
}

static inline float vf_max_reduce(vf a)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    m = _mm_max_ps(m, _mm_shuffle_ps(m, m, 0x4e));
    m = _mm_max_ps(m, _mm_shuffle_ps(m, m, 0xb1));
    return _mm_cvtss_f32(m);
}

static inline vi vi_load_u8(const uint8_t *p)
{
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
}
static inline vi vi_load_i8(const int8_t *p)
{
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p));
}
static inline vi vi_load_u16(const uint8_t *p)
{
    return _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
}
static inline void vi_store(int32_t *p, vi a) { _mm256_store_si256((__m256i *)p, a); }

/* Signed saturation never triggers: the lanes are in -128..127. */
static inline void vi_store_u8(uint8_t *p, vi a)
{
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    _mm_storel_epi64((__m128i *)p, _mm_packs_epi16(w, w));
}

static inline void vi_store_u16(uint8_t *p, vi a)
{
    _mm_storeu_si128((__m128i *)p,
                     _mm_packus_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1)));
}

static inline uint32_t vi_bits(vi a, int k)
{
    return (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32(a, 31 - k)));
}

/* vcvtph2ps is exact and quiets a signalling NaN, as gq_h2f() does. */
static inline vf vh_load(const uint8_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
static inline void vh_store(uint8_t *p, vf a)
{
    _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT));
}

#include "quant/vkernels.h"

const struct gq_kernels gq_kernels_avx2 = VK_TABLE;
