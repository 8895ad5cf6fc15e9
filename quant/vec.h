/*
 * vec.h -- the vector kernels of a forward pass (gguf_vec_* of quant.h)
 * per SIMD level; internal to quant/, not installed.
 */
#ifndef GGUF_QUANT_VEC_H
#define GGUF_QUANT_VEC_H

#include <stddef.h>
#include <stdint.h>

#include "quant/kernels.h"

struct gq_vec_kernels {
    float (*dot_f32)(const float *a, const float *b, int64_t n);
    /* out[q * out_stride + j] = the sum of a[q * a_stride + i] * half
     * b[j * stride + i], i < n, j < rows, q < m */
    void (*dot_f16_rows)(const float *a, size_t a_stride, int64_t m, const uint16_t *b, size_t stride,
                         int64_t rows, int64_t n, float *out, size_t out_stride);
    /* y[q * y_stride + i] += s[q * s_stride + j] * half x[j * stride + i],
     * i < n, q < m, for j = 0 .. rows - 1 in turn */
    void (*axpy_f16_rows)(float *y, size_t y_stride, const float *s, size_t s_stride, int64_t m,
                          const uint16_t *x, size_t stride, int64_t rows, int64_t n);
    void (*silu_mul)(float *g, const float *u, int64_t n);
    /* gguf_vec_softmax() */
    void (*softmax)(float *x, int64_t n, float scale);
};

extern GQ_HIDDEN const struct gq_vec_kernels gq_vec_scalar;
#ifdef GQ_HAVE_AVX2
/* AVX2, FMA and F16C; the AVX-512 level uses these too. */
extern GQ_HIDDEN const struct gq_vec_kernels gq_vec_avx2;
#endif
#ifdef GQ_HAVE_AVX512
/* The row forms only (dot_f16_rows, axpy_f16_rows; the others NULL), with
 * the bits of the AVX2 ones. */
extern GQ_HIDDEN const struct gq_vec_kernels gq_vec_avx512;
#endif

#endif /* GGUF_QUANT_VEC_H */
