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
#include <string.h>

#include "gguf/gguf.h"

#define GQ_HIDDEN __attribute__((visibility("hidden")))

/* Below this a group's largest magnitude counts as zero (the symmetric
 * fits, Q6_K super-blocks, the weighted fits of scales). */
#define GQ_GROUP_EPS 1e-15f

/* Nearest integer, ties to even, for |x| <= 2^22: adding 1.5 * 2^23 leaves
 * the rounded integer (offset by 2^22) in the low mantissa bits.  For
 * larger |x| the result is garbage, as in the reference, where such inputs
 * cannot occur. */
static inline int gq_round_even(float x)
{
    float v = x + 12582912.0f;
    int32_t bits;
    memcpy(&bits, &v, 4);
    return (bits & 0x007fffff) - 0x00400000;
}

static inline int gq_clamp_int(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Blocks at src (n elements) to n floats at dst. */
typedef void (*gq_dequant_fn)(const void *src, float *dst, int64_t n);
/* n floats at src to blocks at dst. */
typedef void (*gq_quant_fn)(const float *src, void *dst, int64_t n);
/* ONE row of n floats at src to blocks at dst, guided by the n importance
 * weights w of its columns (contract below, at the scalar kernels of
 * weighted.c). */
typedef void (*gq_quant_weighted_fn)(const float *src, void *dst, int64_t n, const float *w);

struct gq_kernels {
    gq_dequant_fn dequant[GGUF_T_COUNT];
    gq_quant_fn quant[GGUF_T_COUNT];
    /* The importance-weighted quantizers; in the scalar table, NULL for a
     * type whose quantizer takes no weights. */
    gq_quant_weighted_fn quant_weighted[GGUF_T_COUNT];
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
/* Packs 6-bit scale levels ls and min levels lm (bits above the sixth of
 * groups 0-3 are kept, as the reference keeps them) into out. */
GQ_HIDDEN void gq_pack_k4_levels(const uint8_t ls[8], const uint8_t lm[8], uint8_t out[12]);

/* --- fits and block tails shared by quantize.c and weighted.c ------------ */
/* (defined in quantize.c; contracts there) */
struct gq_block_q2_k;
struct gq_block_q3_k;
struct gq_block_q4_k;
struct gq_block_q5_k;
struct gq_block_q6_k;

/* Scale and min of x[0..n) with levels 0..nmax, weights w (make_qkx2/3). */
GQ_HIDDEN float gq_fit_scale_min(int n, int nmax, const float *x, const float *w, uint8_t *L,
                                 float *neg_min, uint8_t *aux, float rmin, float rdelta,
                                 int nstep, int use_mad);
/* Symmetric scale of x[0..n), levels L - nmax in -nmax..nmax-1, weights w
 * or x^2 when w is NULL (make_qx_quants, rmse_type 1). */
GQ_HIDDEN float gq_fit_scale_symmetric(int n, int nmax, const float *x, const float *w,
                                       int8_t *L);

/* The tails of the K-quant blocks, after the fits: each re-rounds the 256
 * floats x of a super-block against the scales as stored (a group whose
 * stored scale is 0 keeps its levels from L, the levels of the fits) and
 * packs the levels into b.
 *  gq_finish_q2_k:  b->scales, d, dmin already set.
 *  gq_finish_q3_k:  stores the 6-bit scale levels ls (signed scale + 32)
 *                   and d first.
 *  gq_finish_q4_k, gq_finish_q5_k:  b->scales, d, dmin already set.
 *  gq_finish_q6_k:  quantizes the 16 group scales first (d = the signed
 *                   extreme / -128); all zero bytes when they are all
 *                   below GQ_GROUP_EPS.
 * L is overwritten. */
GQ_HIDDEN void gq_finish_q2_k(const float *x, uint8_t L[256], struct gq_block_q2_k *b);
/* The first step of gq_finish_q3_k(): packs the 16 scale levels ls into
 * b->scales and stores d as a half. */
GQ_HIDDEN void gq_set_q3_k_scales(const uint8_t ls[16], float d, struct gq_block_q3_k *b);
GQ_HIDDEN void gq_finish_q3_k(const float *x, const uint8_t ls[16], float d, int8_t L[256],
                              struct gq_block_q3_k *b);
GQ_HIDDEN void gq_finish_q4_k(const float *x, uint8_t L[256], struct gq_block_q4_k *b);
GQ_HIDDEN void gq_finish_q5_k(const float *x, uint8_t L[256], struct gq_block_q5_k *b);
GQ_HIDDEN void gq_finish_q6_k(const float *x, const float scales[16], int8_t L[256],
                              struct gq_block_q6_k *b);

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

/* --- importance-weighted scalar kernels (weighted.c) ---------------------
 * Quantize ONE row of n floats at src (n a positive multiple of the block
 * size) with the n importance weights w of its columns, as llama.cpp's
 * quantize_T with quant_weights (ggml_quantize_chunk with an imatrix) does
 * for one row.  The legacy types weigh every block by the row's mean
 * square, so a row may not be split; the K-quants' blocks are independent.
 * w must not be NULL (the reference quantizers are the NULL case).  The
 * SIMD tables' quant_weighted entries (vkernels.h) write the same bytes. */
GQ_HIDDEN void gq_quant_weighted_q4_0(const float *src, void *dst, int64_t n, const float *w);
GQ_HIDDEN void gq_quant_weighted_q4_1(const float *src, void *dst, int64_t n, const float *w);
GQ_HIDDEN void gq_quant_weighted_q5_0(const float *src, void *dst, int64_t n, const float *w);
GQ_HIDDEN void gq_quant_weighted_q5_1(const float *src, void *dst, int64_t n, const float *w);
GQ_HIDDEN void gq_quant_weighted_q2_k(const float *src, void *dst, int64_t n, const float *w);
GQ_HIDDEN void gq_quant_weighted_q3_k(const float *src, void *dst, int64_t n, const float *w);
GQ_HIDDEN void gq_quant_weighted_q4_k(const float *src, void *dst, int64_t n, const float *w);
GQ_HIDDEN void gq_quant_weighted_q5_k(const float *src, void *dst, int64_t n, const float *w);
GQ_HIDDEN void gq_quant_weighted_q6_k(const float *src, void *dst, int64_t n, const float *w);
/* The weighted kernel of `type` at the SIMD level in use (simd.c), or NULL
 * when the type has none (its quantizer ignores weights); _at: at a given
 * level, as gq_quant_kernel_at(). */
GQ_HIDDEN gq_quant_weighted_fn gq_quant_weighted_kernel(uint32_t type);
GQ_HIDDEN gq_quant_weighted_fn gq_quant_weighted_kernel_at(int level, uint32_t type);

/* Packs the 6-bit scale and min levels of a weighted Q4_K (nmax 15) or
 * Q5_K (nmax 31) block, as weighted.c does (contract there); shared with
 * the SIMD kernels. */
GQ_HIDDEN void gq_weighted_k4_pack(uint8_t ls[8], uint8_t lm[8], int nmax, uint8_t out[12]);

#endif /* GGUF_QUANT_KERNELS_H */
