/*
 * quant.h -- numeric formats of GGUF tensors: half floats, the legacy and
 * K-quant block formats; rows to and from float.
 *
 * Installed as <gguf/quant.h>, part of libgguf.  Knows nothing of files:
 * it works on memory.  Type ids are the ggml ids of <gguf/gguf.h>
 * (GGUF_T_Q4_K ...).  Returns are enum gguf_status values.
 *
 * Quantizers follow the reference algorithms of the formats' authors
 * (llama.cpp's ggml-quants, without an importance matrix) and produce the
 * same bytes for the same input.  Every function here gives identical
 * results whichever SIMD path runs (see gguf_simd_*).
 */
#ifndef GGUF_QUANT_H
#define GGUF_QUANT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(GGUF_BUILDING_LIBRARY) && defined(__GNUC__)
#define GGUF_QAPI __attribute__((visibility("default")))
#else
#define GGUF_QAPI
#endif

/* ------------------------------------------------------------------------ */
/* Half floats                                                               */

/* IEEE binary16 from float, round to nearest even; NaN stays NaN. */
GGUF_QAPI uint16_t gguf_fp32_to_fp16(float f);
GGUF_QAPI float gguf_fp16_to_fp32(uint16_t h);
/* bfloat16 from float, round to nearest even; NaN stays a quiet NaN. */
GGUF_QAPI uint16_t gguf_fp32_to_bf16(float f);
GGUF_QAPI float gguf_bf16_to_fp32(uint16_t h);

/* ------------------------------------------------------------------------ */
/* Rows                                                                      */

/* 1 when rows of `type` can be turned into floats / made from floats. */
GGUF_QAPI int gguf_can_dequantize(uint32_t type);
GGUF_QAPI int gguf_can_quantize(uint32_t type);

/* Converts n elements (a multiple of the type's block size) of `type` at src
 * to floats at dst.  Returns GGUF_OK, GGUF_E_UNSUPPORTED for a type that
 * cannot be dequantized, GGUF_E_INVALID for a bad n. */
GGUF_QAPI int gguf_dequantize_row(uint32_t type, const void *src, float *dst, int64_t n);

/* Quantizes n floats (a multiple of the block size) into `type` at dst,
 * which holds gguf_row_bytes(type, n) bytes.  Same returns. */
GGUF_QAPI int gguf_quantize_row(uint32_t type, const float *src, void *dst, int64_t n);

/* Many rows of ne0 elements each, spread over nthreads threads (0: all
 * cores).  Results are identical for any thread count. */
GGUF_QAPI int gguf_dequantize_rows(uint32_t type, const void *src, float *dst, int64_t nrows,
                                   int64_t ne0, int nthreads);
GGUF_QAPI int gguf_quantize_rows(uint32_t type, const float *src, void *dst, int64_t nrows,
                                 int64_t ne0, int nthreads);

/* Converts rows from one type to another (dequantize, then quantize),
 * without a whole-tensor float buffer.  dst holds nrows rows of `to`. */
GGUF_QAPI int gguf_convert_rows(uint32_t from, const void *src, uint32_t to, void *dst,
                                int64_t nrows, int64_t ne0, int nthreads);

/* ------------------------------------------------------------------------ */
/* SIMD paths                                                                */

enum gguf_simd {
    GGUF_SIMD_SCALAR = 0,   /* plain C, the reference */
    GGUF_SIMD_AVX2 = 1,     /* AVX2 + FMA + F16C */
    GGUF_SIMD_AVX512 = 2    /* AVX-512 F/BW/VL (+VNNI where used) */
};

/* The best path this CPU (and build) supports. */
GGUF_QAPI int gguf_simd_best(void);
/* The path in use; by default the best one, or GGUF_SIMD=scalar|avx2|avx512
 * from the environment when the CPU supports it. */
GGUF_QAPI int gguf_simd_get(void);
/* Chooses a path (for tests and benchmarks).  GGUF_E_UNSUPPORTED when the
 * CPU or build lacks it; the path in use is then unchanged. */
GGUF_QAPI int gguf_simd_set(int level);
/* "scalar", "avx2", "avx512". */
GGUF_QAPI const char *gguf_simd_name(int level);

#ifdef __cplusplus
}
#endif

#endif /* GGUF_QUANT_H */
