/*
 * vec-avx512.c -- the row forms of the F16 dot product and multiply-add
 * (see vec.h) with AVX-512, with the bits of the AVX2 ones (vec-avx2.c):
 *
 * - dot: each sum keeps its own 8 lanes and their horizontal sum in the
 *   same order; a 512-bit vector holds the 8 lanes of two rows, so that
 *   one multiply-add serves both (the query's 8 floats in both halves),
 *   and the horizontal sums are taken sixteen at a time;
 * - multiply-add: each element takes the rows' fused multiply-adds in
 *   turn, whatever the width: 16 elements a vector, a row whole.
 *
 * The tails (the last rows one at a time, the last 8 elements, elements
 * one by one) are those of vec-avx2.c.
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

/* The horizontal sums of the 8-lane halves of eight vectors, in hsum8()'s
 * order: v[2 i] and v[2 i + 1] hold rows 0-1 and 2-3 of item i (i < 4),
 * a row a half; quarter i of the result is rows 0-3 of item i.  Pairs of
 * quarters, then of lanes, then of lanes again are added, with shuffles
 * that take the same lanes hsum8() adds from each half: 22 instructions
 * for 16 sums, against some 7 a sum one by one. */
static inline __m512 hsum8_x16(const __m512 v[8])
{
    __m512 p[4], h[2];
    for (int i = 0; i < 4; i++) /* lanes l + (l + 4) of each half */
        p[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    for (int i = 0; i < 2; i++) /* then lanes 0 + 2 and 1 + 3 of each quarter */
        h[i] = _mm512_add_ps(_mm512_shuffle_ps(p[2 * i], p[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(p[2 * i], p[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    /* then the two: lane 4k + i holds row k of item i */
    const __m512 r = _mm512_add_ps(_mm512_shuffle_ps(h[0], h[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_ps(h[0], h[1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), r);
}

/* Queries a + q * a_stride (q < MQ) against the row pairs b + 2 r * stride,
 * b + (2 r + 1) * stride (r < P, P 2 or 4: items of four rows and a query,
 * summed four at a time by hsum8_x16()), or (P == 0) against the single
 * row b: out[q * out_stride + row]. */
static inline __attribute__((always_inline)) void
dot_tile(const float *a, size_t a_stride, const uint16_t *b, size_t stride, int64_t n, float *out,
         size_t out_stride, const int MQ, const int P)
{
    const int64_t i0 = n / 8 * 8;
    if (P) {
        __m512 acc[4][6];
        UNROLL8
        for (int r = 0; r < P; r++)
            UNROLL8
            for (int q = 0; q < MQ; q++) acc[r][q] = _mm512_setzero_ps();
        for (int64_t i = 0; i + 8 <= n; i += 8) {
            UNROLL8
            for (int r = 0; r < P; r++) {
                const uint16_t *br = b + (size_t)(2 * r) * stride + i;
                const __m512 k = load_h8x2(br, br + stride);
                UNROLL8
                for (int q = 0; q < MQ; q++)
                    acc[r][q] = _mm512_fmadd_ps(load_f8x2(a + (size_t)q * a_stride + i), k, acc[r][q]);
            }
        }
        /* item t: query t % MQ, rows 4 (t / MQ) .. + 3; four at a time,
         * the last four padded with zeros */
        const int items = P / 2 * MQ;
        UNROLL8
        for (int t0 = 0; t0 < items; t0 += 4) {
            __m512 v[8];
            UNROLL8
            for (int i = 0; i < 4; i++) {
                const int t = t0 + i, q = t % MQ, r = 2 * (t / MQ);
                v[2 * i] = t < items ? acc[r][q] : _mm512_setzero_ps();
                v[2 * i + 1] = t < items ? acc[r + 1][q] : _mm512_setzero_ps();
            }
            float sums[16];
            _mm512_storeu_ps(sums, hsum8_x16(v));
            UNROLL8
            for (int i = 0; i < 4; i++) {
                if (t0 + i >= items) break;
                const int t = t0 + i, q = t % MQ, row = 4 * (t / MQ);
                const float *aq = a + (size_t)q * a_stride;
                float *o = out + (size_t)q * out_stride + (size_t)row;
                for (int k = 0; k < 4; k++)
                    o[k] = dot_tail(sums[4 * i + k], aq, b + (size_t)(row + k) * stride, i0, n);
            }
        }
        return;
    }
    __m256 acc[6];
    UNROLL8
    for (int q = 0; q < MQ; q++) acc[q] = _mm256_setzero_ps();
    for (int64_t i = 0; i + 8 <= n; i += 8) {
        const __m256 k = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + i)));
        UNROLL8
        for (int q = 0; q < MQ; q++)
            acc[q] = _mm256_fmadd_ps(_mm256_loadu_ps(a + (size_t)q * a_stride + i), k, acc[q]);
    }
    for (int q = 0; q < MQ; q++)
        out[(size_t)q * out_stride] = dot_tail(hsum8(acc[q]), a + (size_t)q * a_stride, b, i0, n);
}

/* All rows for MQ queries: four row pairs at a time (up to 24 sums of 16
 * lanes in registers: six queries of a 4000-position cache 22 -> 19 us
 * per 1000 positions in the L2 cache, one thread of a Zen 4), then two
 * pairs, then a row at a time. */
static inline __attribute__((always_inline)) void
dot_queries(const float *a, size_t a_stride, const uint16_t *b, size_t stride, int64_t rows,
            int64_t n, float *out, size_t out_stride, const int MQ)
{
    int64_t j = 0;
    for (; j + 8 <= rows; j += 8)
        dot_tile(a, a_stride, b + (size_t)j * stride, stride, n, out + j, out_stride, MQ, 4);
    for (; j + 4 <= rows; j += 4)
        dot_tile(a, a_stride, b + (size_t)j * stride, stride, n, out + j, out_stride, MQ, 2);
    for (; j < rows; j++) dot_tile(a, a_stride, b + (size_t)j * stride, stride, n, out + j, out_stride, MQ, 0);
}

/* Elements i .. i + 16 E - 1 of the MQ outputs y + q * y_stride, held in
 * registers across all the rows. */
static inline __attribute__((always_inline)) void
axpy_tile(float *y, size_t y_stride, const float *s, size_t s_stride, const uint16_t *x,
          size_t stride, int64_t rows, int64_t i, const int MQ, const int E)
{
    __m512 v[3][8];
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

/* All n elements of MQ outputs: 128 at a time (a head of 128 whole),
 * then 64 (a head of 64), then 16, then 8 (256-bit), then one by one. */
static inline __attribute__((always_inline)) void
axpy_span(float *y, size_t y_stride, const float *s, size_t s_stride, const uint16_t *x, size_t stride,
          int64_t rows, int64_t n, const int MQ)
{
    int64_t i = 0;
    for (; i + 128 <= n; i += 128) axpy_tile(y, y_stride, s, s_stride, x, stride, rows, i, MQ, 8);
    for (; i + 64 <= n; i += 64) axpy_tile(y, y_stride, s, s_stride, x, stride, rows, i, MQ, 4);
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

/* All n elements of MQ outputs, the rows AXPY_ROWS at a time (16 KiB of
 * a head of 128, in the L1 cache), each block taken by the queries three
 * at a time (up to 24 sums of 16 lanes in registers): each row is read
 * from memory once, whole, in order.  Each element still takes the rows
 * in turn, through y between blocks: the same bits.  (Four passes over the rows,
 * 32 elements of six queries each, read a 4000-position cache at a third
 * of the speed, missing the caches on every pass.  With the dot products
 * above, a decode step's attention on two threads, 28 layers of two KV
 * heads: 3800 positions, heads of 128, six queries each 8.5 -> 5.6 ms;
 * 2000 positions, heads of 64, seven queries 3.0 -> 2.3 ms.) */
#define AXPY_ROWS 64
static inline __attribute__((always_inline)) void
axpy_queries(float *y, size_t y_stride, const float *s, size_t s_stride, const uint16_t *x,
             size_t stride, int64_t rows, int64_t n, const int MQ)
{
    for (int64_t j = 0; j < rows; j += AXPY_ROWS) {
        const int64_t nr = rows - j < AXPY_ROWS ? rows - j : AXPY_ROWS;
        const uint16_t *xj = x + (size_t)j * stride;
        axpy_span(y, y_stride, s + j, s_stride, xj, stride, nr, n, MQ < 3 ? MQ : 3);
        if (MQ > 3)
            axpy_span(y + 3 * y_stride, y_stride, s + 3 * s_stride + j, s_stride, xj, stride, nr, n, MQ - 3);
    }
}

/* The other vector kernels are the AVX2 ones (vec.c takes those). */
const struct gq_vec_kernels gq_vec_avx512 = {NULL, dot_f16_rows, axpy_f16_rows, NULL, NULL};
