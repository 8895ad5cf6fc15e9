/*
 * vec-rows.h -- what the SIMD levels' row forms of the F16 dot product and
 * multiply-add (vec.h) share, for the file that includes it (after
 * quant/half.h): the element-by-element tails, which must be the same on
 * every level for the same bits, and the entry points.  That file
 * defines, for MQ = 1 .. 6 queries (a constant once inlined),
 *
 *   dot_queries(a, a_stride, b, stride, rows, n, out, out_stride, MQ)
 *   axpy_queries(y, y_stride, s, s_stride, x, stride, rows, n, MQ)
 *
 * and the entry points take the queries six at a time, then the rest.
 */
#ifndef GGUF_QUANT_VEC_ROWS_H
#define GGUF_QUANT_VEC_ROWS_H

/* sum, the vector part of a dot product, plus a[t] * half b[t] for t = i
 * .. n - 1 in turn. */
static inline float dot_tail(float sum, const float *a, const uint16_t *b, int64_t i, int64_t n)
{
    for (int64_t t = i; t < n; t++) sum += a[t] * gq_h2f(b[t]);
    return sum;
}

/* Elements i .. n - 1 of the MQ outputs y + q * y_stride, one by one, the
 * rows in turn. */
static inline void axpy_tail(float *y, size_t y_stride, const float *s, size_t s_stride,
                             const uint16_t *x, size_t stride, int64_t rows, int64_t i, int64_t n,
                             int MQ)
{
    for (int q = 0; q < MQ; q++)
        for (int64_t t = i; t < n; t++) {
            float yi = y[(size_t)q * y_stride + (size_t)t];
            for (int64_t j = 0; j < rows; j++)
                yi += s[(size_t)q * s_stride + (size_t)j] * gq_h2f(x[(size_t)j * stride + (size_t)t]);
            y[(size_t)q * y_stride + (size_t)t] = yi;
        }
}

static inline __attribute__((always_inline)) void
dot_queries(const float *a, size_t a_stride, const uint16_t *b, size_t stride, int64_t rows,
            int64_t n, float *out, size_t out_stride, const int MQ);
static inline __attribute__((always_inline)) void
axpy_queries(float *y, size_t y_stride, const float *s, size_t s_stride, const uint16_t *x,
             size_t stride, int64_t rows, int64_t n, const int MQ);

/* CALL(MQ) for MQ = the count, 1 .. 6, as a constant */
#define VEC_ROWS_BY_COUNT(count, CALL)                                                           \
    switch (count) {                                                                             \
    case 1: CALL(1); break;                                                                      \
    case 2: CALL(2); break;                                                                      \
    case 3: CALL(3); break;                                                                      \
    case 4: CALL(4); break;                                                                      \
    case 5: CALL(5); break;                                                                      \
    default: CALL(6); break;                                                                     \
    }

static void dot_f16_rows(const float *a, size_t a_stride, int64_t m, const uint16_t *b,
                         size_t stride, int64_t rows, int64_t n, float *out, size_t out_stride)
{
    for (int64_t q0 = 0; q0 < m; q0 += 6) {
        const float *aq = a + (size_t)q0 * a_stride;
        float *oq = out + (size_t)q0 * out_stride;
#define DOT_CALL(MQ) dot_queries(aq, a_stride, b, stride, rows, n, oq, out_stride, MQ)
        VEC_ROWS_BY_COUNT(m - q0 < 6 ? m - q0 : 6, DOT_CALL)
#undef DOT_CALL
    }
}

static void axpy_f16_rows(float *y, size_t y_stride, const float *s, size_t s_stride, int64_t m,
                          const uint16_t *x, size_t stride, int64_t rows, int64_t n)
{
    for (int64_t q0 = 0; q0 < m; q0 += 6) {
        float *yq = y + (size_t)q0 * y_stride;
        const float *sq = s + (size_t)q0 * s_stride;
#define AXPY_CALL(MQ) axpy_queries(yq, y_stride, sq, s_stride, x, stride, rows, n, MQ)
        VEC_ROWS_BY_COUNT(m - q0 < 6 ? m - q0 : 6, AXPY_CALL)
#undef AXPY_CALL
    }
}

#endif /* GGUF_QUANT_VEC_ROWS_H */
