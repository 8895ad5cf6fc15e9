/*
 * dot.h -- dot products of a quantized weight row with a quantized
 * activation row; internal to quant/ and its in-tree users (infer/),
 * not installed.  Names start with gq_ and have hidden visibility.
 *
 * A matrix-vector product over quantized weights quantizes the float
 * activation vector once, into the activation type that the weight type
 * pairs with (gq_dot_act_type()), and then takes one integer dot product
 * per weight row (gq_dot_kernel()).  The pairs are those of the reference
 * engine: the K-quants take Q8_K activations (256 per block, with block
 * sums), Q4_0, Q5_0 and Q8_0 take Q8_0, Q4_1 and Q5_1 take Q8_1.
 *
 * Kernels never fail and never allocate.  n, the row length, must be a
 * positive multiple of the weight type's block size (which is the
 * activation type's); the rows may start at any address.  The activation
 * row must come from gq_dot_act_quant() (its quants lie in -128..127 for
 * Q8_K and in -127..127 for Q8_0/Q8_1, which the SIMD kernels rely on).
 *
 * Results per SIMD level (AVX2 has kernels for every type but Q2_K and
 * Q3_K, which run the scalar kernel on every level; AVX-512 uses AVX2's):
 *  - Q4_K, Q5_K, Q6_K (and Q2_K, Q3_K): every level returns the scalar
 *    kernel's float bit for bit, given finite half scales (a NaN scale
 *    gives a NaN on every level, its payload may differ).  Per block the
 *    integer sums are exact in any order, and the float steps that follow
 *    (d * isum, then - dmin * imin, block after block) are the same.
 *  - Q4_0, Q4_1, Q5_0, Q5_1, Q8_0: the integer sum of each 32-block is
 *    exact, but the SIMD kernels accumulate the scaled block sums in
 *    vector lanes (Q4_1/Q5_1: the m * s terms apart) and add them at the
 *    end, so the result may differ from the scalar one by rounding: at
 *    most GQ_DOT_TOL(n) times the sum over blocks of |d_w * d_a * isum|
 *    (+ |m_w * s_a|), which tests/test-quant-dot.c checks.
 */
#ifndef GGUF_QUANT_DOT_H
#define GGUF_QUANT_DOT_H

#include <float.h>
#include <stddef.h>
#include <stdint.h>

#include "quant/kernels.h"

/* Relative rounding bound of a float dot product of n elements summed in
 * any order, with a factor 2 of slack (see above). */
#define GQ_DOT_TOL(n) (2.0 * ((double)(n) / 32.0 + 16.0) * (double)FLT_EPSILON)

/* Q8_1: 32 activations, a = d * q, q in -127..127, with s = d * sum(q)
 * (the activation format of Q4_1 and Q5_1 dot products).
 *
 *   0      2      4                                 36
 *   +------+------+---------------------------------+
 *   | d  h | s  h | qs  i8 x 32                     |
 *   +------+------+---------------------------------+
 */
struct gq_block_q8_1 {
    uint16_t d;
    uint16_t s;
    int8_t qs[32];
} __attribute__((packed));
_Static_assert(sizeof(struct gq_block_q8_1) == 36, "Q8_1 block is 36 bytes");

/* The dot product of n weights at w (blocks of the weight type) and n
 * activations at a (blocks of its activation type). */
typedef float (*gq_dot_fn)(int n, const void *w, const void *a);

struct gq_dot_kernels {
    gq_dot_fn dot[GGUF_T_COUNT]; /* by weight type id */
};

extern GQ_HIDDEN const struct gq_dot_kernels gq_dot_scalar;
#ifdef GQ_HAVE_AVX2
extern GQ_HIDDEN const struct gq_dot_kernels gq_dot_avx2;
#endif
/* No AVX-512 table: the AVX-512 level uses the AVX2 kernels (512-bit
 * versions of the K-quant kernels measured no faster). */

/* The activation type (GGUF_T_Q8_K, GGUF_T_Q8_0 or GGUF_T_Q8_1) that
 * weight type `wtype` pairs with, or GGUF_T_COUNT when there is no dot
 * kernel for it. */
GQ_HIDDEN uint32_t gq_dot_act_type(uint32_t wtype);

/* The kernel that quantizes n floats (a multiple of the activation
 * type's block size) into activations for weight type `wtype`: the
 * quantizer of Q8_K or Q8_0 at the SIMD level in use, or the reference
 * quantizer of Q8_1 (the same output on every level); NULL when
 * gq_dot_act_type() is GGUF_T_COUNT. */
GQ_HIDDEN gq_quant_fn gq_dot_act_quant(uint32_t wtype);

/* Bytes of activations for n elements for weight type `wtype` (0 when
 * there is no dot kernel for it); n a multiple of the block size. */
GQ_HIDDEN int64_t gq_dot_act_size(uint32_t wtype, int64_t n);

/* The dot kernel of weight type `wtype` at the SIMD level in use
 * (gguf_simd_get()), or NULL when there is none. */
GQ_HIDDEN gq_dot_fn gq_dot_kernel(uint32_t wtype);

/* The same at `level` (enum gguf_simd), falling back to lower levels for
 * types the level does not speed up.  The caller makes sure that the CPU
 * has the level (gguf_simd_set() accepts it). */
GQ_HIDDEN gq_dot_fn gq_dot_kernel_at(int level, uint32_t wtype);

/* Matrix products (gguf_matmul(), matmul.c): out[c * out_stride + r] =
 * row r of the weights (k elements) times activation column c, for r <
 * nrows, c < ncols; arguments checked by the caller.  Levels may sum
 * floats in another order than the scalar kernels (see quant/quant.h),
 * except for Q4_K, Q5_K and Q6_K, whose products keep the scalar bits. */
typedef void (*gq_matmul_fn)(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                             const void *act, size_t act_stride, int64_t ncols, float *out,
                             size_t out_stride);

struct gq_matmul_kernels {
    gq_matmul_fn gemm[GGUF_T_COUNT]; /* by weight type id; NULL: one dot kernel call per output */
    gq_matmul_fn column[GGUF_T_COUNT]; /* one-column products; NULL: gemm's, or the dot kernel's */
};

#ifdef GQ_HAVE_AVX2
extern GQ_HIDDEN const struct gq_matmul_kernels gq_matmul_avx2;
#endif
#ifdef GQ_HAVE_AVX512
/* AVX-512 VL with VNNI; used only where the CPU has VNNI. */
extern GQ_HIDDEN const struct gq_matmul_kernels gq_matmul_avx512;
#endif

#ifdef GQ_HAVE_AVX512
/* The Q4_K, Q5_K and Q6_K products sixteen columns at a time
 * (panel-vnni.c), with the scalar kernels' bits; for VNNI CPUs. */
GQ_HIDDEN void gq_panel_q4_k(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act,
                             size_t act_stride, int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_panel_q5_k(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act,
                             size_t act_stride, int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_panel_q6_k(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act,
                             size_t act_stride, int64_t ncols, float *out, size_t out_stride);
#endif
#ifdef GQ_HAVE_AMX
/* The same with AMX int8 tiles (panel-vnni.c compiled with AMX), for
 * products of GQ_PANEL_MIN columns or more where the CPU and the kernel
 * allow AMX. */
extern GQ_HIDDEN const struct gq_matmul_kernels gq_matmul_amx;
/* 1 where the tiles may run: the CPU has them and Linux lets this process
 * use them (amx.c; asked once). */
GQ_HIDDEN int gq_amx_usable(void);
#endif
/* Products of this many columns or more go to the panel kernels. */
#define GQ_PANEL_MIN 6
/* Without VNNI, Q4_K, Q5_K and Q6_K products of this many columns or more
 * take packed input (kpack-avx2.c). */
#define GQ_KPACK_MIN 6

/* Interleaved rows (gguf_matmul_il(), quant.h): rows r < whole (a
 * multiple of GQ_IL16_ROWS, counted from w) lie in groups of sixteen, the
 * group's blocks i in one chunk (the layouts below), so that a product
 * reads one stream, and the sixteen rows take the lanes of a vector; the
 * rows from whole on are plain.  Chunk i of group g, w_stride being the
 * bytes of a row and bb those of a block: */
#define GQ_IL16_ROWS 16
static inline const uint8_t *gq_il_chunk(const uint8_t *w, size_t w_stride, int64_t g, int64_t i, size_t bb)
{
    return w + (size_t)g * GQ_IL16_ROWS * w_stride + (size_t)i * GQ_IL16_ROWS * bb;
}

/* Q4_0, Q5_0 and Q8_0: in chunk i of a group, element e of block i of
 * row r (0 .. 15) is found as
 *   bytes 0 .. 31: the rows' scales d, fp16, row after row;
 *   Q5_0 only, bytes 32 .. 95: eight 64-bit masks, mask t (t = 0 .. 7)
 *     holding at bit 4r + j the fifth bit of element 4t + j of row r;
 *   then the weights, in 64-byte vectors of 16 dwords, dword r of row r:
 *     Q4_0, Q5_0: vector v (0 .. 3) has at byte 4r + j the nibbles of
 *       elements 4v + j (low) and 16 + 4v + j (high), byte 4v + j of the
 *       block's qs;
 *     Q8_0: vector t (0 .. 7) has at byte 4r + j element 4t + j plus 128
 *       (q xor 0x80: unsigned, as vpdpbusd takes it).
 * One vpdpbusd of a vector with four activations broadcast sums a quad of
 * elements of sixteen rows; eight such make the block's sums of the
 * sixteen rows, lane by lane, with no folding.  The rows past the last
 * whole group are plain. */
#define GQ_IL32_FEW 4 /* columns gq_columns_il32() takes at a time */
/* Columns from which Q4_0, Q5_0 and Q8_0 on interleaved rows take packed
 * input with VNNI below the amx level: fewer go faster on the plain input,
 * gq_columns_il32() (bench-matmul, 2 threads, 4864 x 1536 Q5_0: 6 / 8 /
 * 12 columns 166 / 191-195 / 206-211 GMAC/s against 64-95 / 123-125 /
 * 154-157 packed; 16: 172-197 against 153-180; 24 and 32 alike; 64: 225-234
 * against 273-280.  The real 0.5B, qwen-run --parallel N, 32 lines: N = 16
 * 347-379 tok/s against 280-286, N = 24 354-374 against 337-342, N = 32
 * 381-413 against 371-379; prompts of 37 tokens alike, of 65 tokens 582-585
 * against 640-648). */
#define GQ_IL32_PACK_MIN 32
/* Whether wtype interleaves that way. */
static inline int gq_il32_type(uint32_t wtype)
{
    return wtype == GGUF_T_Q4_0 || wtype == GGUF_T_Q5_0 || wtype == GGUF_T_Q8_0;
}

/* Q4_K, Q5_K and Q6_K: a chunk holds its blocks transposed by 32-bit
 * words, the 64-byte vector gq_ilk_pos(wtype, j) word j (bytes 4j ..
 * 4j + 3) of each row's block, row r in lane r: Q4_K's 36 words (word 0:
 * d and dmin) in order; Q5_K's 44 (d, scales 1-3, qh 4-11, qs 12-43) in
 * the order its products read them: words 0-3, then qs word 12 + q and
 * qh word 4 + q in turn (q = 0 .. 7), then qs words 20-43; Q6_K's 52 (ql
 * 0-31, qh 32-47, scales 48-51) in the order its products read them: the
 * scales, then ql words 16h + q and 16h + 8 + q with qh word 32 + 8h + q
 * (h = 0, 1; q = 0 .. 7) three by three; then Q6_K's d, the block's last
 * two bytes, of the 16 rows as 16 halves.  A vector's lanes hold the same quads of
 * elements of sixteen rows, as vpdpbusd sums them with four activations
 * broadcast: a block's sub-block sums come out row by row in the lanes,
 * with no folding, and a row's scales side by side with the others'; and
 * a product reads each chunk from its start to its end (Q6_K's words in
 * block order, read in three streams and the scales from the end of the
 * chunk, went at half that speed from memory). */
static inline int gq_ilk_type(uint32_t wtype)
{
    return wtype == GGUF_T_Q4_K || wtype == GGUF_T_Q5_K || wtype == GGUF_T_Q6_K;
}
static inline int gq_ilk_pos(uint32_t wtype, int j)
{
    if (wtype == GGUF_T_Q5_K) {
        if (j >= 4 && j < 12) return 4 + 2 * (j - 4) + 1; /* qh word q after qs word q */
        if (j >= 12 && j < 20) return 4 + 2 * (j - 12);
        return j;
    }
    if (wtype != GGUF_T_Q6_K) return j;
    if (j >= 48) return j - 48;               /* the scales first */
    if (j >= 32) return 4 + 3 * (j - 32) + 2; /* qh word 32 + 8h + q */
    return 4 + 3 * (8 * (j / 16) + j % 8) + j % 16 / 8;
}

#ifdef GQ_HAVE_AVX2
/* The types with products on interleaved rows at the avx2 level (and at
 * avx512 on a CPU without VNNI): all of the VNNI level's. */
static inline int gq_il_avx2_type(uint32_t wtype)
{
    return gq_ilk_type(wtype) || gq_il32_type(wtype);
}
/* Their products on interleaved rows below `whole`, any number of
 * columns (matmul-x86.c, AVX2); the bits of the same products on plain
 * rows. */
GQ_HIDDEN void gq_matmul_il_avx2(uint32_t wtype, int64_t whole, int64_t k, const void *w, size_t w_stride,
                                 int64_t nrows, const void *act, size_t act_stride, int64_t ncols, float *out,
                                 size_t out_stride);
/* Q4_K, Q5_K and Q6_K products of GQ_KPACK_MIN columns or more at the
 * avx2 level (and at avx512 without VNNI) on activations packed once
 * (kpack-avx2.c): the bytes of a packed block of 16 columns, the packing
 * of panels p0 .. p1 - 1, and the products on interleaved rows below
 * `whole` (a multiple of GQ_IL16_ROWS; 0: all plain) and plain rows from
 * there, the bits of the scalar kernels; gq_kpacked_avx2_*() on plain
 * rows. */
GQ_HIDDEN size_t gq_kpack_block_bytes(void);
GQ_HIDDEN void gq_kpack(const void *act, size_t act_stride, int64_t k, int64_t ncols, int64_t p0, int64_t p1,
                        void *packed);
GQ_HIDDEN void gq_kpacked_avx2(uint32_t wtype, int64_t whole, int64_t k, const void *w, size_t w_stride,
                               int64_t nrows, const void *packed, int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_kpacked_avx2_q4_k(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *packed,
                                    int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_kpacked_avx2_q5_k(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *packed,
                                    int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_kpacked_avx2_q6_k(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *packed,
                                    int64_t ncols, float *out, size_t out_stride);
#endif
#ifdef GQ_HAVE_AVX512
/* Q4_K, Q5_K and Q6_K products on interleaved rows below `whole` (VNNI),
 * any number of columns (matmul-x86.c; on packed activations they would
 * read sixteen columns' bytes for four, slower than the plain ones); the
 * bits of the same products on plain rows. */
GQ_HIDDEN void gq_matmul_il(uint32_t wtype, int64_t whole, int64_t k, const void *w, size_t w_stride,
                            int64_t nrows, const void *act, size_t act_stride, int64_t ncols, float *out,
                            size_t out_stride);
/* Q4_0, Q5_0 and Q8_0 on interleaved rows below whole (a multiple of
 * GQ_IL16_ROWS): any number of columns (matmul-x86.c), and packed ones
 * (tiles32.c, VNNI); the bits of gq_vtiles32_*() on plain rows. */
GQ_HIDDEN void gq_columns_il32(uint32_t wtype, int64_t whole, int64_t k, const void *w, size_t w_stride,
                               int64_t nrows, const void *act, size_t act_stride, int64_t ncols, float *out,
                               size_t out_stride);
GQ_HIDDEN void gq_packed32_il(uint32_t wtype, int64_t whole, int64_t k, const void *w, size_t w_stride,
                              int64_t nrows, const void *packed, int64_t ncols, float *out, size_t out_stride);
#endif
#ifdef GQ_HAVE_AMX
/* The amx level's products on packed activations and interleaved rows:
 * Q4_K, Q5_K and Q6_K (panel-vnni.c: block_gemm() on each group's blocks
 * de-interleaved, for gq_amx_block_min() columns or more, the number from
 * which it is the level's fastest product), Q4_0, Q5_0 and Q8_0
 * (tiles32.c); the bits of the same products on plain rows. */
GQ_HIDDEN int64_t gq_amx_block_min(uint32_t wtype);
GQ_HIDDEN void gq_packed_il_amx(uint32_t wtype, int64_t k, const void *w, size_t w_stride, int64_t nrows,
                                const void *packed, int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_packed32_il_amx(uint32_t wtype, int64_t whole, int64_t k, const void *w, size_t w_stride,
                                  int64_t nrows, const void *packed, int64_t ncols, float *out,
                                  size_t out_stride);
#endif

/* Products on packed activations (gguf_matmul_pack(), panel-vnni.c): the
 * bytes of one packed block of 16 columns, the packing of panels p0 ..
 * p1 - 1, and the Q4_K, Q5_K and Q6_K products (VNNI, and with AMX), the
 * bits of the scalar kernels. */
typedef void (*gq_packed_fn)(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                             const void *packed, int64_t ncols, float *out, size_t out_stride);
#ifdef GQ_HAVE_AVX512
GQ_HIDDEN size_t gq_panel_block_bytes(void);
GQ_HIDDEN void gq_panel_pack(const void *act, size_t act_stride, int64_t k, int64_t ncols,
                             int64_t p0, int64_t p1, void *packed);
GQ_HIDDEN void gq_packed_q4_k(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                              const void *packed, int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_packed_q5_k(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                              const void *packed, int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_packed_q6_k(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                              const void *packed, int64_t ncols, float *out, size_t out_stride);
#endif
#ifdef GQ_HAVE_AMX
GQ_HIDDEN void gq_packed_amx_q4_k(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                                  const void *packed, int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_packed_amx_q5_k(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                                  const void *packed, int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_packed_amx_q6_k(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                                  const void *packed, int64_t ncols, float *out, size_t out_stride);
#endif

#ifdef GQ_HAVE_AVX512
/* The avx512 and amx levels' one-column products of Q4_0, Q5_0 and Q8_0 (VNNI,
 * matmul-x86.c), with the steps of their tile products below: per output,
 * block after block, t = (float)isum * d_w, sum = fma(t, d_a, sum), isum
 * the block's whole integer sum. */
GQ_HIDDEN void gq_column_whole_q4_0(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                                    const void *act, size_t act_stride, int64_t ncols, float *out,
                                    size_t out_stride);
GQ_HIDDEN void gq_column_whole_q5_0(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                                    const void *act, size_t act_stride, int64_t ncols, float *out,
                                    size_t out_stride);
GQ_HIDDEN void gq_column_whole_q8_0(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                                    const void *act, size_t act_stride, int64_t ncols, float *out,
                                    size_t out_stride);
#endif
#ifdef GQ_HAVE_AVX512
/* Q4_0, Q5_0 and Q8_0 sixteen columns at a time (tiles32.c), with VNNI
 * and, below, AMX int8 tiles: products of any number of columns, and on
 * Q8_0 activations packed in blocks of 16 columns
 * (gq_pack32_block_bytes() each, 64-byte multiples; panel p's block i at
 * p * (k / 32) + i); the steps and bits of gq_column_whole_*(). */
GQ_HIDDEN void gq_vtiles32_q4_0(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act,
                                size_t act_stride, int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_vtiles32_q5_0(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act,
                                size_t act_stride, int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_vtiles32_q8_0(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act,
                                size_t act_stride, int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN size_t gq_pack32_block_bytes(void);
GQ_HIDDEN void gq_pack32(const void *act, size_t act_stride, int64_t k, int64_t ncols, int64_t p0,
                         int64_t p1, void *packed);
GQ_HIDDEN void gq_packed_vnni_q4_0(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                                   const void *packed, int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_packed_vnni_q5_0(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                                   const void *packed, int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_packed_vnni_q8_0(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                                   const void *packed, int64_t ncols, float *out, size_t out_stride);
#endif
#ifdef GQ_HAVE_AMX
GQ_HIDDEN void gq_tiles32_q4_0(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act,
                               size_t act_stride, int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_tiles32_q5_0(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act,
                               size_t act_stride, int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_tiles32_q8_0(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act,
                               size_t act_stride, int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_packed_amx_q4_0(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                                  const void *packed, int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_packed_amx_q5_0(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                                  const void *packed, int64_t ncols, float *out, size_t out_stride);
GQ_HIDDEN void gq_packed_amx_q8_0(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                                  const void *packed, int64_t ncols, float *out, size_t out_stride);
#endif

/* The reference quantizer of Q8_1 (dot.c). */
GQ_HIDDEN void gq_quant_q8_1(const float *src, void *dst, int64_t n);

#endif /* GGUF_QUANT_DOT_H */
