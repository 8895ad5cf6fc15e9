/*
 * vec.c -- the scalar vector kernels of a forward pass, the reference of
 * the SIMD ones, and the gguf_vec_* entry points that choose among them.
 */
#include <config.h>

#include <math.h>

#include "quant/half.h"
#include "quant/quant.h"
#include "quant/vec.h"

static float dot_f32(const float *a, const float *b, int64_t n)
{
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += a[i] * b[i];
    return sum;
}

static void dot_f16_rows(const float *a, size_t a_stride, int64_t m, const uint16_t *b,
                         size_t stride, int64_t rows, int64_t n, float *out, size_t out_stride)
{
    for (int64_t q = 0; q < m; q++)
        for (int64_t j = 0; j < rows; j++) {
            const float *aq = a + (size_t)q * a_stride;
            const uint16_t *bj = b + (size_t)j * stride;
            float sum = 0.0f;
            for (int64_t i = 0; i < n; i++) sum += aq[i] * gq_h2f(bj[i]);
            out[(size_t)q * out_stride + (size_t)j] = sum;
        }
}

static void axpy_f16_rows(float *y, size_t y_stride, const float *s, size_t s_stride, int64_t m,
                          const uint16_t *x, size_t stride, int64_t rows, int64_t n)
{
    for (int64_t q = 0; q < m; q++)
        for (int64_t j = 0; j < rows; j++)
            for (int64_t i = 0; i < n; i++)
                y[(size_t)q * y_stride + (size_t)i] += s[(size_t)q * s_stride + (size_t)j] * gq_h2f(x[(size_t)j * stride + (size_t)i]);
}

static void silu_mul(float *g, const float *u, int64_t n)
{
    for (int64_t i = 0; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* The scores times scale, their maximum, the exponentials (expf), their
 * sum in double in order, each exponential times the float inverse of
 * the sum. */
static void softmax(float *x, int64_t n, float scale)
{
    if (n <= 0) return;
    for (int64_t i = 0; i < n; i++) x[i] *= scale;
    float max = x[0];
    for (int64_t i = 1; i < n; i++)
        if (x[i] > max) max = x[i];
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    const float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

const struct gq_vec_kernels gq_vec_scalar = {dot_f32, dot_f16_rows, axpy_f16_rows, silu_mul, softmax};

/* The kernels of the SIMD level in use. */
static const struct gq_vec_kernels *kernels(void)
{
#ifdef GQ_HAVE_AVX2
    if (gguf_simd_get() >= GGUF_SIMD_AVX2) return &gq_vec_avx2;
#endif
    return &gq_vec_scalar;
}

/* The kernels of the row forms at the SIMD level in use. */
static const struct gq_vec_kernels *row_kernels(void)
{
#ifdef GQ_HAVE_AVX512
    if (gguf_simd_get() >= GGUF_SIMD_AVX512) return &gq_vec_avx512;
#endif
    return kernels();
}

float gguf_vec_dot_f32(const float *a, const float *b, int64_t n)
{
    return kernels()->dot_f32(a, b, n);
}

float gguf_vec_dot_f16(const float *a, const uint16_t *b, int64_t n)
{
    float out;
    row_kernels()->dot_f16_rows(a, 0, 1, b, 0, 1, n, &out, 0);
    return out;
}

void gguf_vec_dot_f16_rows(const float *a, const uint16_t *b, size_t stride, int64_t rows, int64_t n,
                           float *out)
{
    row_kernels()->dot_f16_rows(a, 0, 1, b, stride, rows, n, out, 0);
}

void gguf_vec_dot_f16_rows_m(const float *a, size_t a_stride, int64_t m, const uint16_t *b,
                             size_t stride, int64_t rows, int64_t n, float *out, size_t out_stride)
{
    row_kernels()->dot_f16_rows(a, a_stride, m, b, stride, rows, n, out, out_stride);
}

void gguf_vec_axpy_f16(float *y, float s, const uint16_t *x, int64_t n)
{
    row_kernels()->axpy_f16_rows(y, 0, &s, 0, 1, x, 0, 1, n);
}

void gguf_vec_axpy_f16_rows(float *y, const float *s, const uint16_t *x, size_t stride, int64_t rows,
                            int64_t n)
{
    row_kernels()->axpy_f16_rows(y, 0, s, 0, 1, x, stride, rows, n);
}

void gguf_vec_axpy_f16_rows_m(float *y, size_t y_stride, const float *s, size_t s_stride, int64_t m,
                              const uint16_t *x, size_t stride, int64_t rows, int64_t n)
{
    row_kernels()->axpy_f16_rows(y, y_stride, s, s_stride, m, x, stride, rows, n);
}

void gguf_vec_silu_mul(float *g, const float *u, int64_t n)
{
    kernels()->silu_mul(g, u, n);
}

void gguf_vec_softmax(float *x, int64_t n, float scale)
{
    kernels()->softmax(x, n, scale);
}
