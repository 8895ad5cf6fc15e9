/* matmul.c -- gguf_matmul() and its activations: argument checks, the
 * choice of kernel per SIMD level, and the generic product (one dot
 * kernel call per output), which is the whole scalar path. */
#include <config.h>

#include <stdint.h>

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
    /* For one column of 32-weight blocks the dot kernels, which sum in
     * vector lanes across blocks, are faster than the tiles. */
    const gq_matmul_fn gemm = ncols == 1 && bs == GQ_QK ? NULL : gemm_kernel_at(level, wtype, ncols);
    if (gemm)
        gemm(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
    else
        gemm_generic(gq_dot_kernel_at(level, wtype), k, w, w_stride, nrows, act, act_stride, ncols,
                     out, out_stride);
    return GGUF_OK;
}
