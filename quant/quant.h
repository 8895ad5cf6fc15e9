/*
 * quant.h -- numeric formats of GGUF tensors: half floats, the legacy and
 * K-quant block formats; rows to and from float.
 *
 * Installed as <gguf/quant.h>, part of libgguf.  Knows nothing of files:
 * it works on memory.  Type ids are the ggml ids of <gguf/gguf.h>
 * (GGUF_T_Q4_K ...).  Returns are enum gguf_status values.
 *
 * Quantizers follow the reference algorithms of the formats' authors
 * (llama.cpp's ggml-quants, without an importance matrix, or with one:
 * gguf_quantize_rows_weighted()) and produce the same bytes for the same
 * input.  Every function here gives identical
 * results whichever SIMD path runs (see gguf_simd_*), except gguf_matmul(),
 * whose float sums may round differently (within a stated bound).
 */
#ifndef GGUF_QUANT_H
#define GGUF_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include <gguf/gguf.h>

#ifdef __cplusplus
extern "C" {
#endif


/* ------------------------------------------------------------------------ */
/* Half floats                                                               */

/* IEEE binary16 from float, round to nearest even; NaN stays NaN. */
GGUF_API uint16_t gguf_fp32_to_fp16(float f);
GGUF_API float gguf_fp16_to_fp32(uint16_t h);
/* bfloat16 from float, round to nearest even; NaN stays a quiet NaN. */
GGUF_API uint16_t gguf_fp32_to_bf16(float f);
GGUF_API float gguf_bf16_to_fp32(uint16_t h);

/* ------------------------------------------------------------------------ */
/* Rows                                                                      */

/* 1 when rows of `type` can be turned into floats / made from floats, else
 * 0 (also for unknown ids).  Dequantizable: F32, F16, BF16, Q4_0, Q4_1,
 * Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K.  Quantizable: the
 * same list. */
GGUF_API int gguf_can_dequantize(uint32_t type);
GGUF_API int gguf_can_quantize(uint32_t type);

/* Converts n elements of `type` at src (gguf_row_bytes(type, n) bytes, in
 * the file layout, any alignment) to n floats at dst.
 * Returns GGUF_OK; GGUF_E_UNSUPPORTED when the type cannot be dequantized
 * (checked first); GGUF_E_INVALID when n is negative or not a multiple of
 * the type's block size, when the byte size overflows, or when src or dst
 * is NULL and n > 0.  n == 0 does nothing and succeeds. */
GGUF_API int gguf_dequantize_row(uint32_t type, const void *src, float *dst, int64_t n);

/* Quantizes n floats at src into `type` at dst, which holds
 * gguf_row_bytes(type, n) bytes; the bytes are those the reference
 * quantizers write (llama.cpp's ggml_quantize_chunk without an importance
 * matrix; for Q8_K, its quantize_row_q8_K_ref; F32 is a copy).
 * Same returns as gguf_dequantize_row(). */
GGUF_API int gguf_quantize_row(uint32_t type, const float *src, void *dst, int64_t n);

/* nrows contiguous rows of ne0 elements each (ne0 a multiple of the block
 * size), spread over nthreads OpenMP threads; 0 means OpenMP's default (one
 * per core unless OMP_NUM_THREADS says otherwise).  The result is the same
 * bytes for any thread count and equals the row-by-row calls.  Returns as
 * the row functions, plus GGUF_E_INVALID for negative nrows, ne0 or
 * nthreads or an nrows * ne0 that overflows.  Buffers must not overlap. */
GGUF_API int gguf_dequantize_rows(uint32_t type, const void *src, float *dst, int64_t nrows,
                                   int64_t ne0, int nthreads);
GGUF_API int gguf_quantize_rows(uint32_t type, const float *src, void *dst, int64_t nrows,
                                 int64_t ne0, int nthreads);

/* gguf_quantize_rows() guided by an importance matrix: `weights` holds ne0
 * floats, the importance of each column, applied to every row (as read
 * from an imatrix file for one tensor); the caller keeps them.  The bytes
 * are those of llama.cpp's ggml_quantize_chunk with that importance matrix
 * (its quantize_row_T_impl quantizers): for Q4_0, Q4_1, Q5_0, Q5_1 and
 * Q2_K .. Q6_K, other fits than without weights, in the same block
 * layouts.  The other types ignore the weights, as llama.cpp does, and so
 * does weights == NULL: both give exactly gguf_quantize_rows().  Weights
 * are used as given: non-negative finite values make sense; any floats
 * are accepted (none makes this fail or read outside the buffers).  The
 * bytes match for finite rows and weights; where NaNs of both signs meet
 * (rows or weights holding NaN or infinity), a scale stored as NaN may
 * carry the other sign than in a given llama.cpp build, as IEEE leaves
 * that sign to the compiler's order of operands.  Same threading,
 * identical bytes for any thread count, and the same returns as
 * gguf_quantize_rows(); weights must not overlap dst. */
GGUF_API int gguf_quantize_rows_weighted(uint32_t type, const float *src, void *dst, int64_t nrows,
                                          int64_t ne0, const float *weights, int nthreads);

/* 1 when quantizing to `type` uses the weights of
 * gguf_quantize_rows_weighted() (Q4_0, Q4_1, Q5_0, Q5_1, Q2_K .. Q6_K),
 * else 0 (also for unknown ids). */
GGUF_API int gguf_quantize_uses_weights(uint32_t type);

/* Converts nrows rows of ne0 elements from type `from` at src to type `to`
 * at dst (which holds gguf_row_bytes(to, ne0) * nrows bytes): each run of
 * elements is dequantized to floats, then quantized, in chunks through a
 * small float buffer per thread, never a whole-tensor one.  The bytes are
 * those of gguf_dequantize_rows() followed by gguf_quantize_rows() (a
 * lossy type converted to itself is re-quantized, not copied).  ne0 must
 * be a multiple of both block sizes.  Returns as gguf_quantize_rows(),
 * GGUF_E_UNSUPPORTED when `from` cannot be dequantized or `to` cannot be
 * quantized, and GGUF_E_NOMEM when the buffers cannot be allocated. */
GGUF_API int gguf_convert_rows(uint32_t from, const void *src, uint32_t to, void *dst,
                                int64_t nrows, int64_t ne0, int nthreads);

/* ------------------------------------------------------------------------ */
/* Matrix products over quantized weights                                    */
/*
 * The product of a weight matrix kept in its quantized form with float
 * inputs, as inference engines compute it: each input vector is quantized
 * once, per block, into an 8-bit activation type paired with the weight
 * type (gguf_matmul_act_type()), and every output is an integer dot
 * product per block, scaled in float.  The result is therefore not the
 * float product of the dequantized rows: the inputs are rounded to 8 bits.
 *
 * Weight types: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (activations Q8_0, or Q8_1 for
 * Q4_1 and Q5_1: Q8_0's quants with d and the half d * sum(q) in front)
 * and Q2_K .. Q6_K (activations Q8_K).  Functions here are single-threaded
 * and reentrant; split the rows of a matrix among threads.  gguf_matmul()
 * keeps its working buffers on the stack: up to about 64 KiB (allocating
 * nothing). */

/* The activation type (GGUF_T_Q8_0, GGUF_T_Q8_1 or GGUF_T_Q8_K) paired
 * with weight type `wtype`, or GGUF_T_COUNT when gguf_matmul() does not
 * take `wtype`. */
GGUF_API uint32_t gguf_matmul_act_type(uint32_t wtype);

/* Bytes of activations for an input of n elements for weight type wtype;
 * 0 when wtype is not taken, n is not a positive multiple of its block
 * size, or the size does not fit in a size_t. */
GGUF_API size_t gguf_matmul_act_size(uint32_t wtype, int64_t n);

/* Quantizes the n floats at src into activations for weight type wtype at
 * dst (gguf_matmul_act_size(wtype, n) bytes).  The same bytes at every SIMD
 * level.  GGUF_E_INVALID for NULL pointers or n not a positive multiple of
 * the block size, GGUF_E_UNSUPPORTED for a type that is not taken. */
GGUF_API int gguf_matmul_quantize(uint32_t wtype, const float *src, void *dst, int64_t n);

/* out[c * out_stride + r] = the dot product of row r of the weights with
 * activation column c, for r < nrows and c < ncols.  Row r of the weights
 * starts at w + r * w_stride and has k elements (a positive multiple of
 * the block size); column c of the activations starts at act + c *
 * act_stride and comes from gguf_matmul_quantize(wtype, ..., k).
 *
 * The integer sum of each block is exact; the float steps after it may be
 * done in another order at each SIMD level, so results may differ by
 * rounding from the scalar path's: by at most 2 (k / 32 + 16) FLT_EPSILON
 * times the sum of the magnitudes of the scaled block terms; for Q4_K,
 * Q5_K and Q6_K weights every level takes them in the scalar order, and
 * the results have the scalar path's bits; for Q4_0, Q5_0 and Q8_0 every
 * SIMD level takes the same steps (each block's whole integer sum, times
 * d_w, then added with d_a in one fused multiply-add), and they give the
 * same bits.  At one SIMD
 * level, each output depends only on its row and column: a column gives
 * the same bits whatever other columns are multiplied with it, so each
 * entry of a batch is computed exactly as it would be alone.
 *
 * GGUF_E_INVALID for NULL pointers, k not a positive multiple of the block
 * size or above INT32_MAX, or negative counts; GGUF_E_UNSUPPORTED for a
 * type not taken. */
GGUF_API int gguf_matmul(uint32_t wtype, const void *w, size_t w_stride, int64_t nrows, int64_t k,
                         const void *act, size_t act_stride, int64_t ncols, float *out,
                         size_t out_stride);

/* Products that share their input.  An engine multiplies one input with
 * several matrices, and splits each product among threads by rows; for
 * Q4_K, Q5_K, Q6_K, Q4_0, Q5_0 and Q8_0 weights and 6 columns or more,
 * the AVX-512 VNNI and AMX kernels rearrange the activations into panels of
 * 16 columns first, as do the AVX2 kernels (also at avx512 on a CPU
 * without VNNI) for Q4_K, Q5_K and Q6_K, which the input can then undergo
 * once rather than in every call:
 *
 *   gguf_matmul_pack_size(wtype, k, ncols): the bytes of the packed input
 *     of ncols columns of k elements; 0 when the SIMD path in use has no
 *     packed products for wtype (or ncols < 6): use gguf_matmul() then.
 *     The packed form is the same for Q4_K, Q5_K and Q6_K, and for Q4_0,
 *     Q5_0 and Q8_0.
 *   gguf_matmul_pack(): packs panels p0 .. p1 - 1 (of (ncols + 15) / 16;
 *     threads may pack their shares) of activations as gguf_matmul() takes
 *     them into packed, 64-byte aligned.
 *   gguf_matmul_packed(): gguf_matmul() on the packed input, with its bits.
 *
 * Each returns GGUF_E_UNSUPPORTED where the size is 0 (the SIMD path may
 * not change between packing and use) and GGUF_E_INVALID for NULL
 * pointers, a misaligned buffer or panels out of range.  They keep their
 * working buffers on the stack, up to about 128 KiB. */
GGUF_API size_t gguf_matmul_pack_size(uint32_t wtype, int64_t k, int64_t ncols);
GGUF_API int gguf_matmul_pack(uint32_t wtype, const void *act, size_t act_stride, int64_t k,
                              int64_t ncols, int64_t p0, int64_t p1, void *packed);
GGUF_API int gguf_matmul_packed(uint32_t wtype, const void *w, size_t w_stride, int64_t nrows,
                                int64_t k, const void *packed, int64_t ncols, float *out,
                                size_t out_stride);

/* Interleaved rows.  A one-column product (a decoder's step) is bound by
 * the speed at which the weights stream from memory; read row after row,
 * four or sixteen rows at once, they make as many streams, which the
 * hardware prefetchers of some CPUs follow badly, and their sums must be
 * folded across the lanes of a vector.  Rows in groups of sixteen whose
 * blocks lie together read as one stream, and laid out with a row to a
 * 32-bit lane, their sums need no folding and their scales come in one
 * load.  At the avx2, avx512 and amx levels:
 *
 *   gguf_matmul_il_rows(wtype): 16, the rows of a group, for Q4_K, Q5_K,
 *     Q6_K, Q4_0, Q5_0 and Q8_0 where the SIMD path in use has products
 *     on interleaved rows (from avx2), else 0.  A group holds the blocks
 *     i of its rows together, in a layout of this library's own, the
 *     same at every level.
 *   gguf_interleave_rows(): copies nrows rows of k elements from src
 *     (plain, row after row) to dst (as many bytes, not overlapping src):
 *     every whole group of rows interleaved, the last nrows % 16 rows
 *     plain, as they were.
 *   gguf_matmul_il(), gguf_matmul_packed_il(): gguf_matmul() and
 *     gguf_matmul_packed() on such rows, with their bits.  w is the start
 *     of a group and w_stride the bytes of one row; the call's nrows rows
 *     below nrows rounded down to a multiple of 16 are read as groups,
 *     the others as plain rows, so a call takes whole groups, or
 *     runs to the end of the matrix.  Packed input serves Q4_0, Q5_0 and
 *     Q8_0 (below the amx level from 32 columns: fewer go faster on the
 *     plain input), at the amx level Q4_K and Q5_K from 49 columns, Q6_K
 *     from 33, where the tiles' products of whole blocks pay, and without
 *     VNNI (avx2) the K-quants from 6 columns: the K-quants' other
 *     products on interleaved rows read the plain input at least as
 *     fast.
 *   gguf_matmul_pack_size_il(): gguf_matmul_pack_size() for
 *     gguf_matmul_packed_il(), 0 where it takes no packed input.
 *
 * gguf_interleave_rows() returns GGUF_E_INVALID for NULL pointers, k not
 * a positive multiple of the block size or negative nrows; the products
 * return as gguf_matmul() and gguf_matmul_packed() do; all of them
 * GGUF_E_UNSUPPORTED where gguf_matmul_il_rows(wtype) is 0 (the SIMD path
 * may not change between interleaving and use), gguf_matmul_packed_il()
 * also where gguf_matmul_pack_size_il() is 0. */
GGUF_API int gguf_matmul_il_rows(uint32_t wtype);
GGUF_API int gguf_interleave_rows(uint32_t wtype, const void *src, void *dst, int64_t nrows, int64_t k);
GGUF_API int gguf_matmul_il(uint32_t wtype, const void *w, size_t w_stride, int64_t nrows, int64_t k,
                            const void *act, size_t act_stride, int64_t ncols, float *out,
                            size_t out_stride);
GGUF_API size_t gguf_matmul_pack_size_il(uint32_t wtype, int64_t k, int64_t ncols);
GGUF_API int gguf_matmul_packed_il(uint32_t wtype, const void *w, size_t w_stride, int64_t nrows,
                                   int64_t k, const void *packed, int64_t ncols, float *out,
                                   size_t out_stride);

/* ------------------------------------------------------------------------ */
/* Vector kernels of a forward pass                                          */

/* The float arithmetic of attention and of the feed-forward gate, with the
 * SIMD path in use (gguf_simd_get(), read at each call).  Any n >= 0;
 * pointers need no alignment; F16 values are IEEE halves.
 *
 * The sums are taken in another order (and with fused multiply-adds) by
 * the SIMD paths than by the scalar one, so results may differ from
 * scalar by rounding: the dot products by at most 2 (n / 8 + 8)
 * FLT_EPSILON times the sum of |a[i] b[i]|, the multiply-add by one
 * rounding per element.  silu-mul is within 1e-6 of the exact value
 * relative to it (plus 1e-30 absolute, where exp underflows) on every
 * path, softmax within 1e-6 of it. */

/* The sum of a[i] * b[i], i < n. */
GGUF_API float gguf_vec_dot_f32(const float *a, const float *b, int64_t n);
/* The sum of a[i] * half b[i], i < n. */
GGUF_API float gguf_vec_dot_f16(const float *a, const uint16_t *b, int64_t n);
/* out[j] = gguf_vec_dot_f16(a, b + j * stride, n), j < rows: the same
 * bits, several rows at a time (the scores of a query against the keys of
 * a cache). */
GGUF_API void gguf_vec_dot_f16_rows(const float *a, const uint16_t *b, size_t stride, int64_t rows,
                                    int64_t n, float *out);
/* y[i] += s * half x[i], i < n. */
GGUF_API void gguf_vec_axpy_f16(float *y, float s, const uint16_t *x, int64_t n);
/* gguf_vec_axpy_f16(y, s[j], x + j * stride, n) for j = 0 .. rows - 1 in
 * turn: the same bits, y held in registers across the rows (the weighted
 * sum of the values of a cache). */
GGUF_API void gguf_vec_axpy_f16_rows(float *y, const float *s, const uint16_t *x, size_t stride,
                                     int64_t rows, int64_t n);
/* The same for m queries at once, each with the bits it has alone (the
 * heads that share a cache's keys and values, whose rows are then read
 * and converted once for all): out[q * out_stride + j] =
 * gguf_vec_dot_f16(a + q * a_stride, b + j * stride, n), and
 * gguf_vec_axpy_f16_rows(y + q * y_stride, s + q * s_stride, x, stride,
 * rows, n), for q < m. */
GGUF_API void gguf_vec_dot_f16_rows_m(const float *a, size_t a_stride, int64_t m, const uint16_t *b,
                                      size_t stride, int64_t rows, int64_t n, float *out,
                                      size_t out_stride);
GGUF_API void gguf_vec_axpy_f16_rows_m(float *y, size_t y_stride, const float *s, size_t s_stride,
                                       int64_t m, const uint16_t *x, size_t stride, int64_t rows,
                                       int64_t n);
/* g[i] = silu(g[i]) * u[i] = g[i] / (1 + exp(-g[i])) * u[i], i < n: the
 * SwiGLU gate. */
GGUF_API void gguf_vec_silu_mul(float *g, const float *u, int64_t n);
/* x[i] = exp(y[i] - m) / the sum of exp(y[j] - m), j < n, for y[i] the
 * float product scale * x[i] and m the largest y, i < n (nothing for
 * n <= 0): the attention weights of scores x.  Within 1e-6 of that value
 * (the weights sum to 1) on every path; the plain C path takes expf() and
 * sums in double in order. */
GGUF_API void gguf_vec_softmax(float *x, int64_t n, float scale);

/* ------------------------------------------------------------------------ */
/* SIMD paths                                                                */

enum gguf_simd {
    GGUF_SIMD_SCALAR = 0,   /* plain C, the reference */
    GGUF_SIMD_AVX2 = 1,     /* AVX2 + FMA + F16C */
    GGUF_SIMD_AVX512 = 2,   /* AVX-512 F/BW/VL (+VNNI where used) */
    GGUF_SIMD_AMX = 3       /* AVX-512 with VNNI, and the AMX int8 tiles for
                               Q4_K, Q5_K and Q6_K matrix products (Linux; asking
                               for it asks the kernel once for the tile
                               state, which enlarges signal frames) */
};

/* The best path this CPU (and build) supports. */
GGUF_API int gguf_simd_best(void);
/* The path in use; by default the best one, or GGUF_SIMD=scalar|avx2|avx512|amx
 * from the environment (read at the first call) when the CPU and build
 * support it.  Thread-safe. */
GGUF_API int gguf_simd_get(void);
/* Chooses a path (for tests and benchmarks).  GGUF_E_UNSUPPORTED when the
 * CPU or build lacks it; the path in use is then unchanged.  The path is
 * one for the whole process; changing it while other threads compute is
 * allowed: each call reads it once and keeps it throughout, so only
 * gguf_matmul() results may differ (within its bound) between calls made
 * before and after (see gguf.h, Threads). */
GGUF_API int gguf_simd_set(int level);
/* "scalar", "avx2", "avx512", "amx"; NULL for any other value. */
GGUF_API const char *gguf_simd_name(int level);

#ifdef __cplusplus
}
#endif

#endif /* GGUF_QUANT_H */
