/*
 * kernels.h -- the row kernels of quant/ and their dispatch; internal, not
 * installed.  Internal names start with gq_ and have hidden visibility.
 *
 * A kernel converts one run of n elements (n a positive multiple of the
 * type's block size, checked by the callers in rows.c) between a type's
 * blocks and floats.  Kernels never fail and never allocate.  Each SIMD
 * level provides a table of kernels indexed by ggml type id; a NULL entry
 * means "use the next lower level's kernel", down to the scalar table,
 * which is the reference every other level must match bit for bit.
 *
 * Adding a SIMD level (a quant/...avx2.c or ...avx512.c file): define a
 * `const struct gq_kernels gq_kernels_avx2` (or _avx512) with the entries
 * it speeds up, and add -DGQ_HAVE_AVX2 (or -DGQ_HAVE_AVX512) to
 * QUANT_CPPFLAGS in quant/local.mk.  quant/simd.c picks it up.
 */
#ifndef GGUF_QUANT_KERNELS_H
#define GGUF_QUANT_KERNELS_H

#include <stdint.h>

#include "gguf/gguf.h"

#define GQ_HIDDEN __attribute__((visibility("hidden")))

/* Blocks at src (n elements) to n floats at dst. */
typedef void (*gq_dequant_fn)(const void *src, float *dst, int64_t n);
/* n floats at src to blocks at dst. */
typedef void (*gq_quant_fn)(const float *src, void *dst, int64_t n);

struct gq_kernels {
    gq_dequant_fn dequant[GGUF_T_COUNT];
    gq_quant_fn quant[GGUF_T_COUNT];
};

/* The scalar reference kernels (dequant.c, quantize.c, table in simd.c). */
extern GQ_HIDDEN const struct gq_kernels gq_kernels_scalar;

#ifdef GQ_HAVE_AVX2
extern GQ_HIDDEN const struct gq_kernels gq_kernels_avx2;
#endif
#ifdef GQ_HAVE_AVX512
extern GQ_HIDDEN const struct gq_kernels gq_kernels_avx512;
#endif

/* The kernel for `type` at the SIMD level in use (gguf_simd_get()), or
 * NULL when no level has one (the type is not supported that way). */
GQ_HIDDEN gq_dequant_fn gq_dequant_kernel(uint32_t type);
GQ_HIDDEN gq_quant_fn gq_quant_kernel(uint32_t type);

/* The same at a given level (enum gguf_simd), ignoring the one in use;
 * for callers that must not see a concurrent gguf_simd_set(). */
GQ_HIDDEN gq_dequant_fn gq_dequant_kernel_at(int level, uint32_t type);
GQ_HIDDEN gq_quant_fn gq_quant_kernel_at(int level, uint32_t type);

/* Quantizes the 8 group scales and mins of a Q4_K/Q5_K block to 6 bits
 * against the largest of each and packs them (layout in blocks.h); sets d
 * and dmin (quantize.c; scalar, shared by the SIMD kernels). */
GQ_HIDDEN void gq_pack_k4_scales(const float scales[8], const float mins[8], uint8_t out[12],
                                 uint16_t *d, uint16_t *dmin);

/* --- scalar kernels (dequant.c) ------------------------------------------ */
GQ_HIDDEN void gq_dequant_f32(const void *src, float *dst, int64_t n);
GQ_HIDDEN void gq_dequant_f16(const void *src, float *dst, int64_t n);
GQ_HIDDEN void gq_dequant_bf16(const void *src, float *dst, int64_t n);
GQ_HIDDEN void gq_dequant_q4_0(const void *src, float *dst, int64_t n);
GQ_HIDDEN void gq_dequant_q4_1(const void *src, float *dst, int64_t n);
GQ_HIDDEN void gq_dequant_q5_0(const void *src, float *dst, int64_t n);
GQ_HIDDEN void gq_dequant_q5_1(const void *src, float *dst, int64_t n);
GQ_HIDDEN void gq_dequant_q8_0(const void *src, float *dst, int64_t n);
GQ_HIDDEN void gq_dequant_q2_k(const void *src, float *dst, int64_t n);
GQ_HIDDEN void gq_dequant_q3_k(const void *src, float *dst, int64_t n);
GQ_HIDDEN void gq_dequant_q4_k(const void *src, float *dst, int64_t n);
GQ_HIDDEN void gq_dequant_q5_k(const void *src, float *dst, int64_t n);
GQ_HIDDEN void gq_dequant_q6_k(const void *src, float *dst, int64_t n);
GQ_HIDDEN void gq_dequant_q8_k(const void *src, float *dst, int64_t n);

/* --- scalar kernels (quantize.c) ----------------------------------------- */
GQ_HIDDEN void gq_quant_f32(const float *src, void *dst, int64_t n);
GQ_HIDDEN void gq_quant_f16(const float *src, void *dst, int64_t n);
GQ_HIDDEN void gq_quant_bf16(const float *src, void *dst, int64_t n);
GQ_HIDDEN void gq_quant_q4_0(const float *src, void *dst, int64_t n);
GQ_HIDDEN void gq_quant_q4_1(const float *src, void *dst, int64_t n);
GQ_HIDDEN void gq_quant_q5_0(const float *src, void *dst, int64_t n);
GQ_HIDDEN void gq_quant_q5_1(const float *src, void *dst, int64_t n);
GQ_HIDDEN void gq_quant_q8_0(const float *src, void *dst, int64_t n);
GQ_HIDDEN void gq_quant_q2_k(const float *src, void *dst, int64_t n);
GQ_HIDDEN void gq_quant_q3_k(const float *src, void *dst, int64_t n);
GQ_HIDDEN void gq_quant_q4_k(const float *src, void *dst, int64_t n);
GQ_HIDDEN void gq_quant_q5_k(const float *src, void *dst, int64_t n);
GQ_HIDDEN void gq_quant_q6_k(const float *src, void *dst, int64_t n);
GQ_HIDDEN void gq_quant_q8_k(const float *src, void *dst, int64_t n);

#endif /* GGUF_QUANT_KERNELS_H */
