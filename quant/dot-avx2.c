/* dot-avx2.c -- the dot kernels for AVX2 (see quant/dot.h for what they
 * return compared with the scalar ones of quant/dot.c).
 *
 * Weights are unpacked to bytes and multiplied with the int8 activations
 * by vpmaddubsw (unsigned x signed bytes, pairs added into int16) and
 * vpmaddwd (int16 pairs into int32).  The unsigned operand is always at
 * most 128 and the signed one in -128..127, so no int16 pair sum
 * saturates (2 * 128 * 127 < 32767; 2 * 63 * 128 for Q6_K).  Compiled with
 * -ffp-contract=off: no float multiply-add is fused but those written as
 * such (the legacy kernels', whose arithmetic the matrix tiles of
 * matmul-x86.c repeat column by column). */
#include <config.h>

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/dot.h"
#include "quant/half.h"
#include "quant/x86.h"

/* ------------------------------------------------------------------------ */
/* Q4_0, Q5_0, Q8_0: each block's whole integer sum, then its float steps   */
/* (legacy_block_step(), x86.h): the bits of the matrix products of every   */
/* level, on plain and on interleaved rows.                                 */

static float dot_q4_0(int n, const void *vw, const void *va)
{
    const struct gq_block_q4_0 *w = vw;
    const struct gq_block_q8_0 *a = va;
    float sum = 0.0f;
    for (int i = 0; i < n / GQ_QK; i++, w++, a++) {
        const __m256i x = _mm256_sub_epi8(unpack_nibbles32(w->qs), _mm256_set1_epi8(8));
        const __m256i y = _mm256_loadu_si256((const __m256i *)a->qs);
        sum = legacy_block_step(sum, hsum_i32(dot_i8(x, y)), h2f(w->d), h2f(a->d));
    }
    return sum;
}

static float dot_q5_0(int n, const void *vw, const void *va)
{
    const struct gq_block_q5_0 *w = vw;
    const struct gq_block_q8_0 *a = va;
    float sum = 0.0f;
    for (int i = 0; i < n / GQ_QK; i++, w++, a++) {
        /* q - 16 as a byte: the nibble, with 0xf0 added where bit 4 is 0 */
        const __m256i no_high = _mm256_andnot_si256(bits_to_bytes(load_u32(w->qh)),
                                                    _mm256_set1_epi8((char)0xf0));
        const __m256i x = _mm256_or_si256(unpack_nibbles32(w->qs), no_high);
        const __m256i y = _mm256_loadu_si256((const __m256i *)a->qs);
        sum = legacy_block_step(sum, hsum_i32(dot_i8(x, y)), h2f(w->d), h2f(a->d));
    }
    return sum;
}

static float dot_q8_0(int n, const void *vw, const void *va)
{
    const struct gq_block_q8_0 *w = vw;
    const struct gq_block_q8_0 *a = va;
    float sum = 0.0f;
    for (int i = 0; i < n / GQ_QK; i++, w++, a++) {
        const __m256i x = _mm256_loadu_si256((const __m256i *)w->qs);
        const __m256i y = _mm256_loadu_si256((const __m256i *)a->qs);
        sum = legacy_block_step(sum, hsum_i32(dot_i8(x, y)), h2f(w->d), h2f(a->d));
    }
    return sum;
}

/* Q4_1 and Q5_1 (with_high): the d terms per float lane, the m * s terms
 * in one float. */
static inline float dot_x1(int n, const void *vw, const void *va, int with_high)
{
    const struct gq_block_q8_1 *a = va;
    const size_t stride = with_high ? sizeof(struct gq_block_q5_1) : sizeof(struct gq_block_q4_1);
    const uint8_t *p = vw;
    __m256 acc = _mm256_setzero_ps();
    float msum = 0.0f;
    for (int i = 0; i < n / GQ_QK; i++, a++, p += stride) {
        const struct gq_block_q4_1 *w4 = (const struct gq_block_q4_1 *)p;
        const struct gq_block_q5_1 *w5 = (const struct gq_block_q5_1 *)p;
        __m256i x = unpack_nibbles32(with_high ? w5->qs : w4->qs);
        if (with_high)
            x = _mm256_or_si256(x, _mm256_and_si256(bits_to_bytes(load_u32(w5->qh)),
                                                    _mm256_set1_epi8(0x10)));
        const __m256i y = _mm256_loadu_si256((const __m256i *)a->qs);
        const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), _mm256_set1_epi16(1));
        const __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(h2f(w4->d)));
        acc = _mm256_fmadd_ps(t, _mm256_set1_ps(h2f(a->d)), acc);
        msum += h2f(w4->m) * h2f(a->s);
    }
    return hsum_f32(acc) + msum;
}

static float dot_q4_1(int n, const void *w, const void *a)
{
    return dot_x1(n, w, a, 0);
}

static float dot_q5_1(int n, const void *w, const void *a)
{
    return dot_x1(n, w, a, 1);
}

/* ------------------------------------------------------------------------ */
/* K-quants: exact integer sums per super-block, then the scalar kernel's  */
/* float steps, so the results are the scalar ones bit for bit.            */

/* The 8 six-bit scales and mins of a Q4_K/Q5_K block (the layout of
 * quant/blocks.h, four groups at a time on 32-bit words). */
static inline void k4_scales_mins(const uint8_t *scales, uint8_t sc[8], uint8_t mn[8])
{
    const uint32_t u0 = load_u32(scales), u1 = load_u32(scales + 4), u2 = load_u32(scales + 8);
    const uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, low2 = 0x03030303;
    const uint32_t w[4] = {
        u0 & low6,
        (u2 & low4) | ((u0 >> 6) & low2) << 4,
        u1 & low6,
        ((u2 >> 4) & low4) | ((u1 >> 6) & low2) << 4,
    };
    memcpy(sc, w, 8);
    memcpy(mn, w + 2, 8);
}

/* Q4_K and Q5_K (with_high: the fifth bit from qh). */
static inline float dot_k4(int n, const void *vw, const void *va, int with_high)
{
    const struct gq_block_q8_k *a = va;
    const size_t stride = with_high ? sizeof(struct gq_block_q5_k) : sizeof(struct gq_block_q4_k);
    const uint8_t *p = vw;
    const __m256i low4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    float sum = 0.0f;
    for (int i = 0; i < n / GQ_QK_K; i++, a++, p += stride) {
        const struct gq_block_q4_k *w4 = (const struct gq_block_q4_k *)p;
        const struct gq_block_q5_k *w5 = (const struct gq_block_q5_k *)p;
        const uint8_t *scales = with_high ? w5->scales : w4->scales;
        const uint8_t *qs = with_high ? w5->qs : w4->qs;
        uint8_t sc[8], mn[8];
        k4_scales_mins(scales, sc, mn);
        /* the 8 scales as int16, in both 128-bit lanes */
        const __m256i sc16 = _mm256_broadcastsi128_si256(
            _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)sc)));

        __m256i hbits = with_high ? _mm256_loadu_si256((const __m256i *)w5->qh) : _mm256_setzero_si256();
        __m256i acc = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
            __m256i lo = _mm256_and_si256(q, low4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            if (with_high) {
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hbits, one), 4));
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(
                                             _mm256_and_si256(_mm256_srli_epi16(hbits, 1), one), 4));
                hbits = _mm256_srli_epi16(hbits, 2);
            }
            const __m256i y0 = _mm256_loadu_si256((const __m256i *)(a->qs + 64 * c));
            const __m256i y1 = _mm256_loadu_si256((const __m256i *)(a->qs + 64 * c + 32));
            /* int16 lane broadcasts of scales 2c and 2c + 1 */
            const __m256i s0 = _mm256_shuffle_epi8(sc16, _mm256_set1_epi16((short)(0x0100 + 0x0202 * 2 * c)));
            const __m256i s1 = _mm256_shuffle_epi8(sc16, _mm256_set1_epi16((short)(0x0100 + 0x0202 * (2 * c + 1))));
            const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, y0), s0);
            const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, y1), s1);
            acc = _mm256_add_epi32(acc, _mm256_add_epi32(p0, p1));
        }
        /* imin: each min against the two 16-sums of its group */
        const __m128i mn_pairs = _mm_shuffle_epi8(
            _mm_loadl_epi64((const __m128i *)mn),
            _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7));
        const __m256i bsums = _mm256_loadu_si256((const __m256i *)a->bsums);
        const __m256i mins = _mm256_madd_epi16(bsums, _mm256_cvtepu8_epi16(mn_pairs));
        /* both sums at once: lanes 0 and 1 of t end as isum and imin */
        __m256i t = _mm256_hadd_epi32(acc, mins);
        __m128i u = _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
        u = _mm_hadd_epi32(u, u);
        const int isum = _mm_cvtsi128_si32(u), imin = _mm_extract_epi32(u, 1);
        sum += h2f(w4->d) * a->d * (float)isum;
        sum -= h2f(w4->dmin) * a->d * (float)imin;
    }
    return sum;
}

static float dot_q4_k(int n, const void *w, const void *a)
{
    return dot_k4(n, w, a, 0);
}

static float dot_q5_k(int n, const void *w, const void *a)
{
    return dot_k4(n, w, a, 1);
}

/* Q6_K: sum (q - 32) y sc = sum q y sc - 32 sum sc bsum. */
static float dot_q6_k(int n, const void *vw, const void *va)
{
    const struct gq_block_q6_k *w = vw;
    const struct gq_block_q8_k *a = va;
    float sum = 0.0f;
    for (int i = 0; i < n / GQ_QK_K; i++, w++, a++) {
        const __m128i sc8 = _mm_loadu_si128((const __m128i *)w->scales);
        __m256i acc = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const struct q6k_half hv = q6k_load_half(w, h);
            for (int k = 0; k < 4; k++) {
                const __m256i q = q6k_quants(hv.ql0, hv.ql1, hv.qh, k), s = q6k_scales(hv.sc16, k);
                const __m256i y = _mm256_loadu_si256((const __m256i *)(a->qs + 128 * h + 32 * k));
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(q, y), s));
            }
        }
        const __m256i bsums = _mm256_loadu_si256((const __m256i *)a->bsums);
        const __m256i corr = _mm256_madd_epi16(_mm256_cvtepi8_epi16(sc8), bsums);
        /* both sums at once, as in dot_k4 */
        __m256i t = _mm256_hadd_epi32(acc, corr);
        __m128i u = _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
        u = _mm_hadd_epi32(u, u);
        const int isum = _mm_cvtsi128_si32(u) - 32 * _mm_extract_epi32(u, 1);
        sum += h2f(w->d) * a->d * (float)isum;
    }
    return sum;
}

const struct gq_dot_kernels gq_dot_avx2 = {
    .dot = {
        [GGUF_T_Q4_0] = dot_q4_0,
        [GGUF_T_Q4_1] = dot_q4_1,
        [GGUF_T_Q5_0] = dot_q5_0,
        [GGUF_T_Q5_1] = dot_q5_1,
        [GGUF_T_Q8_0] = dot_q8_0,
        [GGUF_T_Q4_K] = dot_q4_k,
        [GGUF_T_Q5_K] = dot_q5_k,
        [GGUF_T_Q6_K] = dot_q6_k,
    },
};
