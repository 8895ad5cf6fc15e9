/*
 * vec-avx512.c -- the row forms of the F16 dot product and multiply-add
 * (see vec.h) with AVX-512, with the bits of the AVX2 ones (vec-avx2.c):
 *
 * - dot: each sum keeps its own 8 lanes and their horizontal sum in the
 *   same order; a 512-bit vector holds the 8 lanes of two rows, so that
 *   one multiply-add serves both (the query's 8 floats in both halves);
 * - multiply-add: each element takes the rows' fused multiply-adds in
 *   turn, whatever the width: 16 elements a vector.
 *
 * The tails (a last odd row, the last 8 elements, elements one by one)
 * are those of vec-avx2.c.
 */
#include <config.h>

#include <immintrin.h>

#include "quant/half.h"
#include "quant/vec.h"
#include "quant/vec-rows.h"

#define UNROLL8 _Pragma("GCC unroll 8")

/* The sum of the 8 lanes of v, in vec-avx2.c's order. */
static inline float hsum8(__m256 v)
{
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

/* 8 halves of row b0 in lanes 0 .. 7 and of row b1 in lanes 8 .. 15. */
static inline __m512 load_h8x2(const uint16_t *b0, const uint16_t *b1)
{
    const __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)b0)),
                                              _mm_loadu_si128((const __m128i *)b1), 1);
    return _mm512_cvtph_ps(h);
}

/* 8 floats in lanes 0 .. 7 and again in 8 .. 15 (AVX-512F only). */
static inline __m512 load_f8x2(const float *p)
{
    return _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(p))));
}

/* Queries a + q * a_stride (q < MQ) against the row pairs b + 2 r * stride,
 * b + (2 r + 1) * stride (r < P), or (P == 0) against the single row b:
 * out[q * out_stride + row]. */
static inline __attribute__((always_inline)) void
dot_tile(const float *a, size_t a_stride, const uint16_t *b, size_t stride, int64_t n, float *out,
         size_t out_stride, const int MQ, const int P)
{
    const int R = P ? 2 * P : 1;
    float sums[8][6];
    if (P) {
        __m512 acc[4][6];
        UNROLL8
        for (int r = 0; r < P; r++)
            UNROLL8
            for (int q = 0; q < MQ; q++) acc[r][q] = _mm512_setzero_ps();
        int64_t i = 0;
        for (; i + 8 <= n; i += 8) {
            UNROLL8
            for (int r = 0; r < P; r++) {
                const uint16_t *br = b + (size_t)(2 * r) * stride + i;
                const __m512 k = load_h8x2(br, br + stride);
                UNROLL8
                for (int q = 0; q < MQ; q++)
                    acc[r][q] = _mm512_fmadd_ps(load_f8x2(a + (size_t)q * a_stride + i), k, acc[r][q]);
            }
        }
        for (int r = 0; r < P; r++)
            for (int q = 0; q < MQ; q++) {
                sums[2 * r][q] = hsum8(_mm512_castps512_ps256(acc[r][q]));
                sums[2 * r + 1][q] = hsum8(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[r][q]), 1)));
            }
    } else {
        __m256 acc[6];
        UNROLL8
        for (int q = 0; q < MQ; q++) acc[q] = _mm256_setzero_ps();
        for (int64_t i = 0; i + 8 <= n; i += 8) {
            const __m256 k = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + i)));
            UNROLL8
            for (int q = 0; q < MQ; q++)
                acc[q] = _mm256_fmadd_ps(_mm256_loadu_ps(a + (size_t)q * a_stride + i), k, acc[q]);
        }
        for (int q = 0; q < MQ; q++) sums[0][q] = hsum8(acc[q]);
    }
    const int64_t i0 = n / 8 * 8;
    for (int q = 0; q < MQ; q++) {
        const float *aq = a + (size_t)q * a_stride;
        for (int r = 0; r < R; r++) {
            const uint16_t *br = b + (size_t)r * stride;
            out[(size_t)q * out_stride + (size_t)r] = dot_tail(sums[r][q], aq, br, i0, n);
        }
    }
}

/* All rows for MQ queries: four pairs at a time for up to three queries,
 * two for more, then a pair, then a last row. */
static inline __attribute__((always_inline)) void
dot_queries(const float *a, size_t a_stride, const uint16_t *b, size_t stride, int64_t rows,
            int64_t n, float *out, size_t out_stride, const int MQ)
{
    int64_t j = 0;
    if (MQ <= 3)
        for (; j + 8 <= rows; j += 8)
            dot_tile(a, a_stride, b + (size_t)j * stride, stride, n, out + j, out_stride, MQ, 4);
    for (; j + 4 <= rows; j += 4)
        dot_tile(a, a_stride, b + (size_t)j * stride, stride, n, out + j, out_stride, MQ, 2);
    for (; j + 2 <= rows; j += 2)
        dot_tile(a, a_stride, b + (size_t)j * stride, stride, n, out + j, out_stride, MQ, 1);
    for (; j < rows; j++) dot_tile(a, a_stride, b + (size_t)j * stride, stride, n, out + j, out_stride, MQ, 0);
}

/* Elements i .. i + 16 E - 1 of the MQ outputs y + q * y_stride, held in
 * registers across all the rows. */
static inline __attribute__((always_inline)) void
axpy_tile(float *y, size_t y_stride, const float *s, size_t s_stride, const uint16_t *x,
          size_t stride, int64_t rows, int64_t i, const int MQ, const int E)
{
    __m512 v[6][8];
    UNROLL8
    for (int q = 0; q < MQ; q++)
        UNROLL8
        for (int e = 0; e < E; e++) v[q][e] = _mm512_loadu_ps(y + (size_t)q * y_stride + i + 16 * e);
    const uint16_t *xj = x + i;
    for (int64_t j = 0; j < rows; j++, xj += stride) {
        UNROLL8
        for (int e = 0; e < E; e++) {
            const __m512 k = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(xj + 16 * e)));
            UNROLL8
            for (int q = 0; q < MQ; q++)
                v[q][e] = _mm512_fmadd_ps(_mm512_set1_ps(s[(size_t)q * s_stride + (size_t)j]), k, v[q][e]);
        }
    }
    UNROLL8
    for (int q = 0; q < MQ; q++)
        UNROLL8
        for (int e = 0; e < E; e++) _mm512_storeu_ps(y + (size_t)q * y_stride + i + 16 * e, v[q][e]);
}

/* All n elements of MQ outputs: 128, 64 or 32 at a time, then 16, then 8
 * (256-bit), then one by one. */
static inline __attribute__((always_inline)) void
axpy_queries(float *y, size_t y_stride, const float *s, size_t s_stride, const uint16_t *x,
             size_t stride, int64_t rows, int64_t n, const int MQ)
{
    const int E = MQ == 1 ? 8 : MQ <= 3 ? 4 : 2;
    int64_t i = 0;
    for (; i + 16 * E <= n; i += 16 * E) axpy_tile(y, y_stride, s, s_stride, x, stride, rows, i, MQ, E);
    for (; i + 16 <= n; i += 16) axpy_tile(y, y_stride, s, s_stride, x, stride, rows, i, MQ, 1);
    for (; i + 8 <= n; i += 8)
        for (int q = 0; q < MQ; q++) {
            float *yq = y + (size_t)q * y_stride + i;
            __m256 v = _mm256_loadu_ps(yq);
            const uint16_t *xj = x + i;
            for (int64_t j = 0; j < rows; j++, xj += stride)
                v = _mm256_fmadd_ps(_mm256_set1_ps(s[(size_t)q * s_stride + (size_t)j]),
                                    _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)xj)), v);
            _mm256_storeu_ps(yq, v);
        }
    axpy_tail(y, y_stride, s, s_stride, x, stride, rows, i, n, MQ);
}

/* The other vector kernels are the AVX2 ones (vec.c takes those). */
const struct gq_vec_kernels gq_vec_avx512 = {NULL, dot_f16_rows, axpy_f16_rows, NULL, NULL};
