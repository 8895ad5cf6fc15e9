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

static void dot_f16_rows(const float *a, const uint16_t *b, size_t stride, int64_t rows, int64_t n,
                         float *out)
{
    for (int64_t j = 0; j < rows; j++, b += stride) {
        float sum = 0.0f;
        for (int64_t i = 0; i < n; i++) sum += a[i] * gq_h2f(b[i]);
        out[j] = sum;
    }
}

static void axpy_f16_rows(float *y, const float *s, const uint16_t *x, size_t stride, int64_t rows,
                          int64_t n)
{
    for (int64_t j = 0; j < rows; j++, x += stride)
        for (int64_t i = 0; i < n; i++) y[i] += s[j] * gq_h2f(x[i]);
}

static void silu_mul(float *g, const float *u, int64_t n)
{
    for (int64_t i = 0; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

const struct gq_vec_kernels gq_vec_scalar = {dot_f32, dot_f16_rows, axpy_f16_rows, silu_mul};

/* The kernels of the SIMD level in use. */
static const struct gq_vec_kernels *kernels(void)
{
#ifdef GQ_HAVE_AVX2
    if (gguf_simd_get() >= GGUF_SIMD_AVX2) return &gq_vec_avx2;
#endif
    return &gq_vec_scalar;
}

float gguf_vec_dot_f32(const float *a, const float *b, int64_t n)
{
    return kernels()->dot_f32(a, b, n);
}

float gguf_vec_dot_f16(const float *a, const uint16_t *b, int64_t n)
{
    float out;
    kernels()->dot_f16_rows(a, b, 0, 1, n, &out);
    return out;
}

void gguf_vec_dot_f16_rows(const float *a, const uint16_t *b, size_t stride, int64_t rows, int64_t n,
                           float *out)
{
    kernels()->dot_f16_rows(a, b, stride, rows, n, out);
}

void gguf_vec_axpy_f16(float *y, float s, const uint16_t *x, int64_t n)
{
    kernels()->axpy_f16_rows(y, &s, x, 0, 1, n);
}

void gguf_vec_axpy_f16_rows(float *y, const float *s, const uint16_t *x, size_t stride, int64_t rows,
                            int64_t n)
{
    kernels()->axpy_f16_rows(y, s, x, stride, rows, n);
}

void gguf_vec_silu_mul(float *g, const float *u, int64_t n)
{
    kernels()->silu_mul(g, u, n);
}
