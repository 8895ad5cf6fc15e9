/* kernels-avx512.c -- the row kernels for AVX-512 (16 float lanes),
 * bit-identical to the scalar ones.
 *
 * Compiled with -mavx512f -mavx512bw -mavx512vl (what the level requires;
 * only AVX-512F instructions are used) and -ffp-contract=off: no
 * multiply-add is ever fused.  The kernels are in quant/vkernels.h; this
 * file supplies its vocabulary.  The K-quant fits run 16 groups per
 * vector: two Q4_K/Q5_K blocks, or one Q6_K block. */
#include <config.h>

#include <immintrin.h>
#include <stdint.h>

#include "quant/kernels.h"

#define VL 16
typedef __m512 vf;
typedef __m512i vi;
typedef __mmask16 vm;

static inline vf vf_set(float a) { return _mm512_set1_ps(a); }
static inline vf vf_zero(void) { return _mm512_setzero_ps(); }
static inline vf vf_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void vf_store(float *p, vf a) { _mm512_storeu_ps(p, a); }
static inline vf vf_add(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf vf_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
static inline vf vf_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf vf_div(vf a, vf b) { return _mm512_div_ps(a, b); }
static inline vf vf_sqrt(vf a) { return _mm512_sqrt_ps(a); }
static inline vi vf_as_vi(vf a) { return _mm512_castps_si512(a); }
static inline vf vi_as_vf(vi a) { return _mm512_castsi512_ps(a); }
static inline vf vf_abs(vf a)
{
    return vi_as_vf(_mm512_and_si512(vf_as_vi(a), _mm512_set1_epi32(0x7fffffff)));
}
static inline vf vf_neg(vf a)
{
    return vi_as_vf(_mm512_xor_si512(vf_as_vi(a), _mm512_set1_epi32((int32_t)0x80000000u)));
}
/* vminps/vmaxps return the second operand unless the first compares
 * strictly less (greater): exactly the C expression a < b ? a : b. */
static inline vf vf_min(vf a, vf b) { return _mm512_min_ps(a, b); }
static inline vf vf_max(vf a, vf b) { return _mm512_max_ps(a, b); }
static inline vm vf_lt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
static inline vm vf_le(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
static inline vm vf_gt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
static inline vm vf_ge(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
static inline vm vf_eq(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
static inline vm vf_ne(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_NEQ_UQ); }
static inline vf vf_sel(vm m, vf a, vf b) { return _mm512_mask_blend_ps(m, b, a); }
static inline vi vi_sel(vm m, vi a, vi b) { return _mm512_mask_blend_epi32(m, b, a); }
static inline vm vm_and(vm a, vm b) { return (vm)(a & b); }
static inline int vm_any(vm m) { return m != 0; }
static inline int vm_first(vm m) { return m ? __builtin_ctz((unsigned)m) : -1; }

static inline vi vi_set(int32_t k) { return _mm512_set1_epi32(k); }
static inline vi vi_add(vi a, vi b) { return _mm512_add_epi32(a, b); }
static inline vi vi_sub(vi a, vi b) { return _mm512_sub_epi32(a, b); }
static inline vi vi_and(vi a, vi b) { return _mm512_and_si512(a, b); }
static inline vi vi_or(vi a, vi b) { return _mm512_or_si512(a, b); }
static inline vi vi_min(vi a, vi b) { return _mm512_min_epi32(a, b); }
static inline vi vi_max(vi a, vi b) { return _mm512_max_epi32(a, b); }
static inline vm vi_gt(vi a, vi b) { return _mm512_cmpgt_epi32_mask(a, b); }
static inline vi vi_srl(vi a, int k) { return _mm512_srli_epi32(a, (unsigned)k); }
static inline vi vi_sll(vi a, int k) { return _mm512_slli_epi32(a, (unsigned)k); }
static inline vi vi_srlv(vi a, vi b) { return _mm512_srlv_epi32(a, b); }
static inline vi vi_iota(void)
{
    return _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
static inline vf vf_cvt(vi a) { return _mm512_cvtepi32_ps(a); }
static inline vi vi_cvtt(vf a) { return _mm512_cvttps_epi32(a); }

/* quantize.c's round_even() per lane (the same bits for any input), then
 * clamped to lo..hi. */
static inline vi vf_round_clamp(vf a, int lo, int hi)
{
    const vi bits = _mm512_castps_si512(_mm512_add_ps(a, _mm512_set1_ps(12582912.0f)));
    const vi r = _mm512_sub_epi32(_mm512_and_si512(bits, _mm512_set1_epi32(0x007fffff)),
                                  _mm512_set1_epi32(0x00400000));
    return _mm512_min_epi32(_mm512_max_epi32(r, _mm512_set1_epi32(lo)), _mm512_set1_epi32(hi));
}

static inline int32_t vi_max_reduce(vi a) { return _mm512_reduce_max_epi32(a); }
static inline float vf_max_reduce(vf a) { return _mm512_reduce_max_ps(a); }

static inline vi vi_load_u8(const uint8_t *p)
{
    return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p));
}
static inline vi vi_load_i8(const int8_t *p)
{
    return _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p));
}
static inline vi vi_load_u16(const uint8_t *p)
{
    return _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
}
static inline void vi_store(int32_t *p, vi a) { _mm512_store_si512(p, a); }
static inline void vi_store_u8(uint8_t *p, vi a)
{
    _mm_storeu_si128((__m128i *)p, _mm512_cvtepi32_epi8(a));
}
static inline void vi_store_u16(uint8_t *p, vi a)
{
    _mm256_storeu_si256((__m256i *)p, _mm512_cvtepi32_epi16(a));
}
static inline uint32_t vi_bits(vi a, int k)
{
    return _mm512_test_epi32_mask(a, _mm512_set1_epi32(1 << k));
}

/* vcvtph2ps is exact and quiets a signalling NaN, as gq_h2f() does. */
static inline vf vh_load(const uint8_t *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
static inline void vh_store(uint8_t *p, vf a)
{
    _mm256_storeu_si256((__m256i *)p, _mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT));
}

#include "quant/vkernels.h"

const struct gq_kernels gq_kernels_avx512 = VK_TABLE;
