/*
 * vec-avx2.c -- the vector kernels of a forward pass with AVX2, FMA and
 * F16C (see vec.h), 8 floats a vector, the tail element by element.
 */
#include <config.h>

#include <immintrin.h>
#include <math.h>

#include "quant/half.h"
#include "quant/vec.h"

/* The sum of the 8 lanes of v. */
static inline float hsum(__m256 v)
{
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

/* Two sums of 8 lanes, 16 elements a step. */
static float dot_f32(const float *a, const float *b, int64_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    float sum = hsum(_mm256_add_ps(s0, s1));
    for (; i < n; i++) sum += a[i] * b[i];
    return sum;
}

/* 8 halves as floats. */
static inline __m256 load_h8(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* Each row's sum in its own 8 lanes, 8 elements a step, the tail element
 * by element: four rows at a time, each exactly as alone (the chains of
 * multiply-adds of four rows overlap, a's loads are shared). */
static void dot_f16_rows(const float *a, const uint16_t *b, size_t stride, int64_t rows, int64_t n,
                         float *out)
{
    int64_t j = 0;
    for (; j + 4 <= rows; j += 4) {
        const uint16_t *b0 = b + (size_t)j * stride, *b1 = b0 + stride, *b2 = b1 + stride,
                       *b3 = b2 + stride;
        __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        int64_t i = 0;
        for (; i + 8 <= n; i += 8) {
            const __m256 av = _mm256_loadu_ps(a + i);
            s0 = _mm256_fmadd_ps(av, load_h8(b0 + i), s0);
            s1 = _mm256_fmadd_ps(av, load_h8(b1 + i), s1);
            s2 = _mm256_fmadd_ps(av, load_h8(b2 + i), s2);
            s3 = _mm256_fmadd_ps(av, load_h8(b3 + i), s3);
        }
        float r[4] = {hsum(s0), hsum(s1), hsum(s2), hsum(s3)};
        for (; i < n; i++) {
            r[0] += a[i] * gq_h2f(b0[i]);
            r[1] += a[i] * gq_h2f(b1[i]);
            r[2] += a[i] * gq_h2f(b2[i]);
            r[3] += a[i] * gq_h2f(b3[i]);
        }
        for (int k = 0; k < 4; k++) out[j + k] = r[k];
    }
    for (; j < rows; j++) {
        const uint16_t *bj = b + (size_t)j * stride;
        __m256 acc = _mm256_setzero_ps();
        int64_t i = 0;
        for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), load_h8(bj + i), acc);
        float sum = hsum(acc);
        for (; i < n; i++) sum += a[i] * gq_h2f(bj[i]);
        out[j] = sum;
    }
}

/* Each element of y takes the rows' multiply-adds in turn, as from one
 * call per row; 64 elements of y stay in registers across all the rows. */
static void axpy_f16_rows(float *y, const float *s, const uint16_t *x, size_t stride, int64_t rows,
                          int64_t n)
{
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m256 v[8];
        for (int k = 0; k < 8; k++) v[k] = _mm256_loadu_ps(y + i + 8 * k);
        const uint16_t *xj = x + i;
        for (int64_t j = 0; j < rows; j++, xj += stride) {
            const __m256 sv = _mm256_set1_ps(s[j]);
            for (int k = 0; k < 8; k++) v[k] = _mm256_fmadd_ps(sv, load_h8(xj + 8 * k), v[k]);
        }
        for (int k = 0; k < 8; k++) _mm256_storeu_ps(y + i + 8 * k, v[k]);
    }
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(y + i);
        const uint16_t *xj = x + i;
        for (int64_t j = 0; j < rows; j++, xj += stride) v = _mm256_fmadd_ps(_mm256_set1_ps(s[j]), load_h8(xj), v);
        _mm256_storeu_ps(y + i, v);
    }
    for (; i < n; i++) {
        float yi = y[i];
        for (int64_t j = 0; j < rows; j++) yi += s[j] * gq_h2f(x[(size_t)j * stride + i]);
        y[i] = yi;
    }
}

/* exp(x) of 8 floats: x = k ln2 + r, |r| <= ln2 / 2 (ln2 in two parts, so
 * that r is exact), exp(r) by its Taylor polynomial to r^7 / 7! (relative
 * error below 2e-7 there), times 2^k through the exponent bits.  x is
 * clamped to [-87, 88], where neither 2^k nor the result leaves the normal
 * floats. */
static inline __m256 exp8(__m256 x)
{
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
    const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693145752f), x);
    r = _mm256_fnmadd_ps(k, _mm256_set1_ps(1.42860677e-6f), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    const __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(k), 23);
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
}

static void silu_mul(float *g, const float *u, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i);
        const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
        const __m256 silu = _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(silu, _mm256_loadu_ps(u + i)));
    }
    gq_vec_scalar.silu_mul(g + i, u + i, n - i);
}

const struct gq_vec_kernels gq_vec_avx2 = {dot_f32, dot_f16_rows, axpy_f16_rows, silu_mul};
