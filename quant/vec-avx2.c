/*
 * vec-avx2.c -- the vector kernels of a forward pass with AVX2, FMA and
 * F16C (see vec.h), 8 floats a vector, the tail element by element.
 */
#include <config.h>

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "quant/half.h"
#include "quant/vec.h"
#include "quant/vec-rows.h"

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

#define UNROLL8 _Pragma("GCC unroll 8")

/* Queries a + q * a_stride (q < MQ) against rows b + r * stride (r < R):
 * out[q * out_stride + r].  Each sum in its own 8 lanes, 8 elements a
 * step, the tail element by element, exactly as alone: the chains of
 * multiply-adds overlap, and each load and conversion of a row serves all
 * the queries. */
static inline __attribute__((always_inline)) void
dot_tile(const float *a, size_t a_stride, const uint16_t *b, size_t stride, int64_t n, float *out,
         size_t out_stride, const int MQ, const int R)
{
    __m256 acc[4][6];
    UNROLL8
    for (int r = 0; r < R; r++)
        UNROLL8
        for (int q = 0; q < MQ; q++) acc[r][q] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        UNROLL8
        for (int r = 0; r < R; r++) {
            const __m256 k = load_h8(b + (size_t)r * stride + i);
            UNROLL8
            for (int q = 0; q < MQ; q++)
                acc[r][q] = _mm256_fmadd_ps(_mm256_loadu_ps(a + (size_t)q * a_stride + i), k, acc[r][q]);
        }
    }
    for (int q = 0; q < MQ; q++) {
        const float *aq = a + (size_t)q * a_stride;
        for (int r = 0; r < R; r++) {
            const uint16_t *br = b + (size_t)r * stride;
            out[(size_t)q * out_stride + (size_t)r] = dot_tail(hsum(acc[r][q]), aq, br, i, n);
        }
    }
}

/* Rows j .. rows - 1 for MQ queries: four at a time, the queries two
 * (MQ <= 2) or three at a time (then the rest), each block of four rows
 * read from memory once and again from the L1 cache; then two rows, then
 * one.  (Six queries by two rows a tile took 12 loads of the queries and
 * 2 of the rows for 12 multiply-adds, more loads than this CPU issues
 * beside them; three by four take 7.) */
static inline __attribute__((always_inline)) void
dot_queries(const float *a, size_t a_stride, const uint16_t *b, size_t stride, int64_t rows,
            int64_t n, float *out, size_t out_stride, const int MQ)
{
    const int M1 = MQ <= 2 ? MQ : 3, M2 = MQ - M1;
    int64_t j = 0;
    for (; j + 4 <= rows; j += 4) {
        dot_tile(a, a_stride, b + (size_t)j * stride, stride, n, out + j, out_stride, M1, 4);
        if (M2 > 0)
            dot_tile(a + (size_t)M1 * a_stride, a_stride, b + (size_t)j * stride, stride, n,
                     out + (size_t)M1 * out_stride + j, out_stride, M2, 4);
    }
    for (; j + 2 <= rows; j += 2)
        dot_tile(a, a_stride, b + (size_t)j * stride, stride, n, out + j, out_stride, MQ, 2);
    for (; j < rows; j++) dot_tile(a, a_stride, b + (size_t)j * stride, stride, n, out + j, out_stride, MQ, 1);
}

/* Elements i .. i + 8 E - 1 of the MQ outputs y + q * y_stride: each takes
 * the rows' multiply-adds in turn, as from one call per row, held in
 * registers across all the rows; each row's load and conversion serves
 * all the outputs. */
static inline __attribute__((always_inline)) void
axpy_tile(float *y, size_t y_stride, const float *s, size_t s_stride, const uint16_t *x,
          size_t stride, int64_t rows, int64_t i, const int MQ, const int E)
{
    __m256 v[6][8];
    UNROLL8
    for (int q = 0; q < MQ; q++)
        UNROLL8
        for (int e = 0; e < E; e++) v[q][e] = _mm256_loadu_ps(y + (size_t)q * y_stride + i + 8 * e);
    const uint16_t *xj = x + i;
    for (int64_t j = 0; j < rows; j++, xj += stride) {
        if (MQ == 1) {
            const __m256 sq = _mm256_set1_ps(s[(size_t)j]);
            UNROLL8
            for (int e = 0; e < E; e++) v[0][e] = _mm256_fmadd_ps(sq, load_h8(xj + 8 * e), v[0][e]);
            continue;
        }
        /* the row's E vectors, then each query's weight broadcast once:
         * E + 1 + MQ E registers (all six broadcasts held at once had
         * spilled sums to the stack, a store and reload a row) */
        __m256 k[8];
        UNROLL8
        for (int e = 0; e < E; e++) k[e] = load_h8(xj + 8 * e);
        UNROLL8
        for (int q = 0; q < MQ; q++) {
            const __m256 sq = _mm256_set1_ps(s[(size_t)q * s_stride + (size_t)j]);
            UNROLL8
            for (int e = 0; e < E; e++) v[q][e] = _mm256_fmadd_ps(sq, k[e], v[q][e]);
        }
    }
    UNROLL8
    for (int q = 0; q < MQ; q++)
        UNROLL8
        for (int e = 0; e < E; e++) _mm256_storeu_ps(y + (size_t)q * y_stride + i + 8 * e, v[q][e]);
}

/* All n elements of MQ outputs, the rows AXPY_ROWS at a time (16 KiB of
 * a head of 128, in the L1 cache), each block 64, 32 or 16 elements at a
 * time (as MQ allows the registers), then 8, then one by one: each row is
 * read from memory once, whole, in order.  Each element still takes the
 * rows in turn, through y between blocks: the same bits.  (The passes of
 * 16 elements over all the rows missed the caches on every pass: a decode
 * step's attention over 2048 positions, 28 layers of two KV heads of 128,
 * six queries each, on two threads of a Zen 3, spent 3.1 ms here.) */
#define AXPY_ROWS 64
static inline __attribute__((always_inline)) void
axpy_queries(float *y, size_t y_stride, const float *s, size_t s_stride, const uint16_t *x,
             size_t stride, int64_t rows, int64_t n, const int MQ)
{
    const int E = MQ == 1 ? 8 : MQ == 2 ? 4 : 2;
    for (int64_t j = 0; j < rows; j += AXPY_ROWS) {
        const int64_t nr = rows - j < AXPY_ROWS ? rows - j : AXPY_ROWS;
        const uint16_t *xj = x + (size_t)j * stride;
        const float *sj = s + j;
        int64_t i = 0;
        for (; i + 8 * E <= n; i += 8 * E) axpy_tile(y, y_stride, sj, s_stride, xj, stride, nr, i, MQ, E);
        for (; i + 8 <= n; i += 8) axpy_tile(y, y_stride, sj, s_stride, xj, stride, nr, i, MQ, 1);
        axpy_tail(y, y_stride, sj, s_stride, xj, stride, nr, i, n, MQ);
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

/* The scalar kernel's steps eight at a time: the maximum of the scaled
 * scores, exp8() of each less it, their sum in double (two lanes of four
 * and the tail, then folded), the products with the float inverse.  The
 * last n % 8 take the same exp8() from a padded vector. */
static void softmax(float *x, int64_t n, float scale)
{
    if (n <= 0) return;
    const __m256 s = _mm256_set1_ps(scale);
    __m256 mv = _mm256_set1_ps(-INFINITY);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), s);
        _mm256_storeu_ps(x + i, v);
        mv = _mm256_max_ps(mv, v);
    }
    float lanes[8], max = -INFINITY;
    _mm256_storeu_ps(lanes, mv);
    for (int j = 0; j < 8; j++) max = lanes[j] > max ? lanes[j] : max;
    for (int64_t t = i; t < n; t++) {
        x[t] *= scale;
        if (x[t] > max) max = x[t];
    }
    const __m256 m = _mm256_set1_ps(max);
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    for (i = 0; i + 8 <= n; i += 8) {
        const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
        _mm256_storeu_ps(x + i, e);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    double sum = 0.0, d[4];
    if (i < n) {
        float tail[8] = {0};
        memcpy(tail, x + i, sizeof(float) * (size_t)(n - i));
        _mm256_storeu_ps(tail, exp8(_mm256_sub_ps(_mm256_loadu_ps(tail), m)));
        for (int64_t t = i; t < n; t++) {
            x[t] = tail[t - i];
            sum += x[t];
        }
    }
    _mm256_storeu_pd(d, _mm256_add_pd(s0, s1));
    sum += (d[0] + d[2]) + (d[1] + d[3]);
    const __m256 inv = _mm256_set1_ps((float)(1.0 / sum));
    for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
    for (; i < n; i++) x[i] *= _mm256_cvtss_f32(inv);
}

const struct gq_vec_kernels gq_vec_avx2 = {dot_f32, dot_f16_rows, axpy_f16_rows, silu_mul, softmax};
