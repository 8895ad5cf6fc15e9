/* matmul.c -- gguf_matmul() and its activations: argument checks, the
 * choice of kernel per SIMD level, and the generic product (one dot
 * kernel call per output), which is the whole scalar path. */
#include <config.h>

#include <stdint.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/dot.h"
#include "quant/quant.h"

uint32_t gguf_matmul_act_type(uint32_t wtype)
{
    return gq_dot_act_type(wtype);
}

/* Elements per block of the activations of wtype (0: not taken). */
static int64_t act_block_size(uint32_t wtype)
{
    switch (gq_dot_act_type(wtype)) {
    case GGUF_T_Q8_K:
        return GQ_QK_K;
    case GGUF_T_Q8_0:
    case GGUF_T_Q8_1:
        return GQ_QK;
    default:
        return 0;
    }
}

size_t gguf_matmul_act_size(uint32_t wtype, int64_t n)
{
    const int64_t bs = act_block_size(wtype);
    if (bs == 0 || n <= 0 || n % bs) return 0;
    const int64_t block_bytes = gq_dot_act_size(wtype, bs);
    const uint64_t limit = SIZE_MAX < INT64_MAX ? (uint64_t)SIZE_MAX : (uint64_t)INT64_MAX;
    if ((uint64_t)(n / bs) > limit / (uint64_t)block_bytes) return 0; /* not representable */
    return (size_t)gq_dot_act_size(wtype, n);
}

int gguf_matmul_quantize(uint32_t wtype, const float *src, void *dst, int64_t n)
{
    const int64_t bs = act_block_size(wtype);
    if (bs == 0) return GGUF_E_UNSUPPORTED;
    if (!src || !dst || n <= 0 || n % bs) return GGUF_E_INVALID;
    gq_dot_act_quant(wtype)(src, dst, n);
    return GGUF_OK;
}

/* One dot kernel call per output. */
static void gemm_generic(gq_dot_fn dot, int64_t k, const void *w, size_t w_stride, int64_t nrows,
                         const void *act, size_t act_stride, int64_t ncols, float *out,
                         size_t out_stride)
{
    const uint8_t *wb = w, *ab = act;
    for (int64_t r = 0; r < nrows; r++)
        for (int64_t c = 0; c < ncols; c++)
            out[(size_t)c * out_stride + (size_t)r] =
                dot((int)k, wb + (size_t)r * w_stride, ab + (size_t)c * act_stride);
}

/* The product kernel of wtype at `level`, or NULL for the generic one. */
static gq_matmul_fn gemm_kernel_at(int level, uint32_t wtype, int64_t ncols)
{
#ifdef GQ_HAVE_AMX
    /* Q4_0, Q5_0, Q8_0: the tiles for any number of columns, and their
     * steps for one (the same bits alone as in a batch) */
    if (level >= GGUF_SIMD_AMX && ncols == 1 && gq_matmul_amx.column[wtype])
        return gq_matmul_amx.column[wtype];
    if (level >= GGUF_SIMD_AMX && act_block_size(wtype) == GQ_QK && gq_matmul_amx.gemm[wtype])
        return gq_matmul_amx.gemm[wtype];
#endif
#ifdef GQ_HAVE_AVX512
    if (ncols == 1 && level >= GGUF_SIMD_AVX512 && __builtin_cpu_supports("avx512vnni") &&
        gq_matmul_avx512.column[wtype])
        return gq_matmul_avx512.column[wtype];
#endif
#ifdef GQ_HAVE_AVX2
    if (ncols == 1 && level >= GGUF_SIMD_AVX2 && gq_matmul_avx2.column[wtype]) return gq_matmul_avx2.column[wtype];
#endif
    /* For one column of 32-weight blocks the dot kernels, which sum in
     * vector lanes across blocks, are faster than the tiles. */
    if (ncols == 1 && act_block_size(wtype) == GQ_QK) return NULL;
#ifdef GQ_HAVE_AMX
    if (level >= GGUF_SIMD_AMX && ncols >= GQ_PANEL_MIN && gq_matmul_amx.gemm[wtype])
        return gq_matmul_amx.gemm[wtype];
#endif
#ifdef GQ_HAVE_AVX512
    if (level >= GGUF_SIMD_AVX512 && __builtin_cpu_supports("avx512vnni") &&
        gq_matmul_avx512.gemm[wtype])
        return gq_matmul_avx512.gemm[wtype];
#endif
#ifdef GQ_HAVE_AVX2
    if (level >= GGUF_SIMD_AVX2 && gq_matmul_avx2.gemm[wtype]) return gq_matmul_avx2.gemm[wtype];
#endif
    (void)level;
    (void)wtype;
    (void)ncols;
    return NULL;
}

int gguf_matmul(uint32_t wtype, const void *w, size_t w_stride, int64_t nrows, int64_t k,
                const void *act, size_t act_stride, int64_t ncols, float *out, size_t out_stride)
{
    const int64_t bs = act_block_size(wtype);
    if (bs == 0) return GGUF_E_UNSUPPORTED;
    if (!w || !act || !out || k <= 0 || k % bs || k > INT32_MAX || nrows < 0 || ncols < 0)
        return GGUF_E_INVALID;
    const int level = gguf_simd_get();
    const gq_matmul_fn gemm = gemm_kernel_at(level, wtype, ncols);
    if (gemm)
        gemm(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
    else
        gemm_generic(gq_dot_kernel_at(level, wtype), k, w, w_stride, nrows, act, act_stride, ncols,
                     out, out_stride);
    return GGUF_OK;
}

/* Whether the VNNI kernels take the interleaved rows at `level`. */
static int il_vnni_at(int level)
{
#ifdef GQ_HAVE_AVX512
    return level >= GGUF_SIMD_AVX512 && __builtin_cpu_supports("avx512vnni");
#else
    (void)level;
    return 0;
#endif
}

/* Whether the products of wtype on packed input at `level` are the avx2
 * level's (kpack-avx2.c): Q4_K, Q5_K and Q6_K where no VNNI kernel serves. */
static int kpack_at(int level, uint32_t wtype)
{
#ifdef GQ_HAVE_AVX2
    return gq_ilk_type(wtype) && level >= GGUF_SIMD_AVX2 && !il_vnni_at(level);
#else
    (void)level;
    (void)wtype;
    return 0;
#endif
}

/* The product kernel on packed activations of wtype at `level`, or NULL. */
static gq_packed_fn packed_kernel_at(int level, uint32_t wtype)
{
#ifdef GQ_HAVE_AMX
    if (level >= GGUF_SIMD_AMX && wtype == GGUF_T_Q4_K) return gq_packed_amx_q4_k;
    if (level >= GGUF_SIMD_AMX && wtype == GGUF_T_Q5_K) return gq_packed_amx_q5_k;
    if (level >= GGUF_SIMD_AMX && wtype == GGUF_T_Q6_K) return gq_packed_amx_q6_k;
    if (level >= GGUF_SIMD_AMX && wtype == GGUF_T_Q4_0) return gq_packed_amx_q4_0;
    if (level >= GGUF_SIMD_AMX && wtype == GGUF_T_Q5_0) return gq_packed_amx_q5_0;
    if (level >= GGUF_SIMD_AMX && wtype == GGUF_T_Q8_0) return gq_packed_amx_q8_0;
#endif
#ifdef GQ_HAVE_AVX512
    if (level >= GGUF_SIMD_AVX512 && __builtin_cpu_supports("avx512vnni")) {
        if (wtype == GGUF_T_Q4_0) return gq_packed_vnni_q4_0;
        if (wtype == GGUF_T_Q5_0) return gq_packed_vnni_q5_0;
        if (wtype == GGUF_T_Q8_0) return gq_packed_vnni_q8_0;
        if (wtype == GGUF_T_Q4_K) return gq_packed_q4_k;
        if (wtype == GGUF_T_Q5_K) return gq_packed_q5_k;
        if (wtype == GGUF_T_Q6_K) return gq_packed_q6_k;
    }
#endif
#ifdef GQ_HAVE_AVX2
    if (kpack_at(level, wtype))
        return wtype == GGUF_T_Q4_K   ? gq_kpacked_avx2_q4_k
               : wtype == GGUF_T_Q5_K ? gq_kpacked_avx2_q5_k
                                      : gq_kpacked_avx2_q6_k;
#endif
    (void)level;
    (void)wtype;
    return NULL;
}

/* Bytes of one packed block of 16 columns for wtype's activations (the
 * caller has checked that a packed kernel exists). */
static uint64_t pack_block_bytes(int level, uint32_t wtype)
{
#ifdef GQ_HAVE_AVX2
    if (kpack_at(level, wtype)) return gq_kpack_block_bytes();
#endif
    (void)level;
#ifdef GQ_HAVE_AVX512
    if (act_block_size(wtype) == GQ_QK) return gq_pack32_block_bytes();
    return gq_panel_block_bytes();
#else
    (void)wtype;
    return 0;
#endif
}

size_t gguf_matmul_pack_size(uint32_t wtype, int64_t k, int64_t ncols)
{
    const int level = gguf_simd_get();
    if (!packed_kernel_at(level, wtype)) return 0;
    const int64_t bs = act_block_size(wtype);
    if (k <= 0 || k % bs || k > INT32_MAX || ncols < (kpack_at(level, wtype) ? GQ_KPACK_MIN : GQ_PANEL_MIN))
        return 0;
    const uint64_t panels = (uint64_t)(ncols + 15) / 16, nb = (uint64_t)(k / bs);
    const uint64_t bytes = pack_block_bytes(level, wtype);
    if (bytes == 0 || panels > SIZE_MAX / bytes / nb) return 0;
    return (size_t)(panels * nb * bytes);
}

int gguf_matmul_pack(uint32_t wtype, const void *act, size_t act_stride, int64_t k, int64_t ncols,
                     int64_t p0, int64_t p1, void *packed)
{
    if (gguf_matmul_pack_size(wtype, k, ncols) == 0) return GGUF_E_UNSUPPORTED;
    if (!act || !packed || ((uintptr_t)packed & 63) || p0 < 0 || p1 < p0 || p1 > (ncols + 15) / 16)
        return GGUF_E_INVALID;
#ifdef GQ_HAVE_AVX2
    if (kpack_at(gguf_simd_get(), wtype)) {
        gq_kpack(act, act_stride, k, ncols, p0, p1, packed);
        return GGUF_OK;
    }
#endif
#ifdef GQ_HAVE_AVX512
    if (act_block_size(wtype) == GQ_QK) {
        gq_pack32(act, act_stride, k, ncols, p0, p1, packed);
        return GGUF_OK;
    }
    gq_panel_pack(act, act_stride, k, ncols, p0, p1, packed);
#endif
    return GGUF_OK;
}

int gguf_matmul_packed(uint32_t wtype, const void *w, size_t w_stride, int64_t nrows, int64_t k,
                       const void *packed, int64_t ncols, float *out, size_t out_stride)
{
    const gq_packed_fn f = packed_kernel_at(gguf_simd_get(), wtype);
    if (!f || gguf_matmul_pack_size(wtype, k, ncols) == 0) return GGUF_E_UNSUPPORTED;
    if (!w || !packed || ((uintptr_t)packed & 63) || !out || nrows < 0) return GGUF_E_INVALID;
    f(k, w, w_stride, nrows, packed, ncols, out, out_stride);
    return GGUF_OK;
}

/* --- interleaved rows --- */

/* gguf_matmul_il_rows() at `level`: the VNNI kernels' types (the amx
 * level's CPUs have VNNI, which the products take when the tiles do not
 * pay), else the AVX2 kernels'. */
static int il_rows_at(int level, uint32_t wtype)
{
    if ((gq_ilk_type(wtype) || gq_il32_type(wtype)) && il_vnni_at(level)) return GQ_IL16_ROWS;
#ifdef GQ_HAVE_AVX2
    if (gq_il_avx2_type(wtype) && level >= GGUF_SIMD_AVX2) return GQ_IL16_ROWS;
#endif
    (void)level;
    (void)wtype;
    return 0;
}


int gguf_matmul_il_rows(uint32_t wtype)
{
    return il_rows_at(gguf_simd_get(), wtype);
}

/* The elements of a block of wtype (one the interleaved rows take). */
static int64_t il_block_elems(uint32_t wtype)
{
    return gq_il32_type(wtype) ? GQ_QK : GQ_QK_K;
}

/* Group g of the rows at s (row bytes each) into its chunks at d
 * (gq_il_chunk(), dot.h). */
static void interleave32(uint32_t wtype, const uint8_t *s, size_t row, uint8_t *d, int64_t nb)
{
    const size_t bb = (size_t)gguf_row_bytes(wtype, GQ_QK);
    for (int64_t i = 0; i < nb; i++) {
        uint8_t *c = d + (size_t)i * GQ_IL16_ROWS * bb;
        uint64_t mask[8] = {0}; /* Q5_0: bit 4r + j of mask t, the fifth bit of element 4t + j of row r */
        for (int r = 0; r < GQ_IL16_ROWS; r++) {
            const uint8_t *b = s + (size_t)r * row + (size_t)i * bb;
            memcpy(c + 2 * r, b, 2); /* d */
            if (wtype == GGUF_T_Q8_0) {
                for (int t = 0; t < 8; t++) {
                    uint32_t q;
                    memcpy(&q, b + 2 + 4 * t, 4);
                    q ^= 0x80808080u;
                    memcpy(c + 32 + 64 * t + 4 * r, &q, 4);
                }
                continue;
            }
            const uint8_t *qs = b + (wtype == GGUF_T_Q5_0 ? 6 : 2);
            uint8_t *v = c + (wtype == GGUF_T_Q5_0 ? 96 : 32);
            for (int t = 0; t < 4; t++) memcpy(v + 64 * t + 4 * r, qs + 4 * t, 4);
            if (wtype != GGUF_T_Q5_0) continue;
            const uint32_t qh = (uint32_t)b[2] | (uint32_t)b[3] << 8 | (uint32_t)b[4] << 16 | (uint32_t)b[5] << 24;
            for (int t = 0; t < 8; t++) mask[t] |= (uint64_t)(qh >> 4 * t & 15u) << 4 * r;
        }
        for (int t = 0; t < 8 && wtype == GGUF_T_Q5_0; t++) /* little-endian */
            for (int k = 0; k < 8; k++) c[32 + 8 * t + k] = (uint8_t)(mask[t] >> 8 * k);
    }
}

/* The same for Q4_K, Q5_K and Q6_K: each chunk the blocks' words
 * transposed (dot.h, gq_ilk_type()), 64 bytes of it written at a time. */
static void interleave_k(uint32_t wtype, const uint8_t *s, size_t row, uint8_t *d, int64_t nb)
{
    const size_t bb = (size_t)gguf_row_bytes(wtype, GQ_QK_K), words = bb / 4;
    uint8_t *at[64]; /* where each word goes in a chunk */
    for (int64_t i = 0; i < nb; i++) {
        uint8_t *c = d + (size_t)i * GQ_IL16_ROWS * bb;
        const uint8_t *b = s + (size_t)i * bb;
        for (size_t j = 0; j < words; j++) at[j] = c + 64 * (size_t)gq_ilk_pos(wtype, (int)j);
        for (size_t j = 0; j < words; j++)
            for (int r = 0; r < GQ_IL16_ROWS; r++) memcpy(at[j] + 4 * r, b + (size_t)r * row + 4 * j, 4);
        for (int r = 0; bb % 4 && r < GQ_IL16_ROWS; r++) /* Q6_K's d */
            memcpy(c + 64 * words + 2 * (size_t)r, b + (size_t)r * row + 4 * words, 2);
    }
}

int gguf_interleave_rows(uint32_t wtype, const void *src, void *dst, int64_t nrows, int64_t k)
{
    if (!gguf_matmul_il_rows(wtype)) return GGUF_E_UNSUPPORTED;
    const int64_t qk = il_block_elems(wtype);
    if (!src || !dst || nrows < 0 || k <= 0 || k % qk) return GGUF_E_INVALID;
    const size_t bb = (size_t)gguf_row_bytes(wtype, qk), row = (size_t)(k / qk) * bb;
    const int64_t whole = nrows - nrows % GQ_IL16_ROWS;
    const uint8_t *s = src;
    uint8_t *d = dst;
    for (int64_t g = 0; g < whole / GQ_IL16_ROWS; g++)
        (gq_il32_type(wtype) ? interleave32 : interleave_k)(wtype, s + (size_t)g * GQ_IL16_ROWS * row, row,
                                                           d + (size_t)g * GQ_IL16_ROWS * row, k / qk);
    memcpy(d + (size_t)whole * row, s + (size_t)whole * row, (size_t)(nrows - whole) * row);
    return GGUF_OK;
}

int gguf_matmul_il(uint32_t wtype, const void *w, size_t w_stride, int64_t nrows, int64_t k,
                   const void *act, size_t act_stride, int64_t ncols, float *out, size_t out_stride)
{
    if (!gguf_matmul_il_rows(wtype)) return GGUF_E_UNSUPPORTED;
    if (!w || !act || !out || k <= 0 || k % il_block_elems(wtype) || k > INT32_MAX || nrows < 0 || ncols < 0)
        return GGUF_E_INVALID;
    const int64_t whole = nrows - nrows % GQ_IL16_ROWS;
#ifdef GQ_HAVE_AVX512
    if (il_vnni_at(gguf_simd_get())) {
        if (!gq_il32_type(wtype))
            gq_matmul_il(wtype, whole, k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
        else
            gq_columns_il32(wtype, whole, k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
        return GGUF_OK;
    }
#endif
#ifdef GQ_HAVE_AVX2
    gq_matmul_il_avx2(wtype, whole, k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
#endif
    (void)whole;
    return GGUF_OK;
}

/* gguf_matmul_pack_size_il() at `level`. */
static size_t pack_size_il_at(int level, uint32_t wtype, int64_t k, int64_t ncols)
{
    if (!il_rows_at(level, wtype)) return 0;
    if (gq_il32_type(wtype) && level < GGUF_SIMD_AMX && ncols < GQ_IL32_PACK_MIN) return 0;
    if (gq_il32_type(wtype) || kpack_at(level, wtype)) return gguf_matmul_pack_size(wtype, k, ncols);
#ifdef GQ_HAVE_AMX
    /* the K-quants: the tiles' block products, from where they pay */
    if (level >= GGUF_SIMD_AMX && ncols >= gq_amx_block_min(wtype)) return gguf_matmul_pack_size(wtype, k, ncols);
#endif
    return 0;
}

size_t gguf_matmul_pack_size_il(uint32_t wtype, int64_t k, int64_t ncols)
{
    return pack_size_il_at(gguf_simd_get(), wtype, k, ncols);
}

int gguf_matmul_packed_il(uint32_t wtype, const void *w, size_t w_stride, int64_t nrows, int64_t k,
                          const void *packed, int64_t ncols, float *out, size_t out_stride)
{
    const int level = gguf_simd_get();
    if (pack_size_il_at(level, wtype, k, ncols) == 0) return GGUF_E_UNSUPPORTED;
    if (!w || !packed || ((uintptr_t)packed & 63) || !out || nrows < 0) return GGUF_E_INVALID;
    const int64_t whole = nrows - nrows % GQ_IL16_ROWS;
#ifdef GQ_HAVE_AVX2
    if (kpack_at(level, wtype)) {
        gq_kpacked_avx2(wtype, whole, k, w, w_stride, nrows, packed, ncols, out, out_stride);
        return GGUF_OK;
    }
#endif
#ifdef GQ_HAVE_AVX512
#ifdef GQ_HAVE_AMX
    if (level >= GGUF_SIMD_AMX) {
        if (gq_ilk_type(wtype))
            gq_packed_il_amx(wtype, k, w, w_stride, nrows, packed, ncols, out, out_stride);
        else
            gq_packed32_il_amx(wtype, whole, k, w, w_stride, nrows, packed, ncols, out, out_stride);
        return GGUF_OK;
    }
#endif
    gq_packed32_il(wtype, whole, k, w, w_stride, nrows, packed, ncols, out, out_stride);
#endif
    (void)whole;
    return GGUF_OK;
}
