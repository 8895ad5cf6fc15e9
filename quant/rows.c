/* rows.c -- the public row API of <gguf/quant.h>: argument checks, then the
 * kernels of the SIMD level in use, spread over threads for many rows.
 *
 * Rows of a tensor are contiguous and every supported format's blocks are
 * independent, so many rows are processed as one flat run of
 * nrows * ne0 elements cut into chunks of whole blocks; each chunk's
 * result does not depend on which thread computes it, hence the output is
 * identical for any thread count. */
#include <config.h>

#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "gguf/gguf.h"
#include "quant/kernels.h"
#include "quant/quant.h"

/* Elements per unit of work of the multi-row functions: a multiple of
 * every supported block size (1, 32, 256), small enough for the float
 * buffer of gguf_convert_rows() to stay in cache (256 KiB). */
#define CHUNK 65536

int gguf_can_dequantize(uint32_t type)
{
    return type < GGUF_T_COUNT && gq_kernels_scalar.dequant[type] != NULL;
}

int gguf_can_quantize(uint32_t type)
{
    return type < GGUF_T_COUNT && gq_kernels_scalar.quant[type] != NULL;
}

static uint32_t block_size(uint32_t type)
{
    const gguf_type_info *t = gguf_type_get(type);
    return t ? t->block_size : 0;
}

/* Checks n elements of `type` (supported) with its buffers: n >= 0, a
 * multiple of the block size, a byte size that fits; the pointers are
 * needed only when n > 0.  GGUF_OK or GGUF_E_INVALID. */
static int check_run(uint32_t type, int64_t n, const void *a, const void *b)
{
    if (n < 0 || (uint64_t)n % block_size(type)) return GGUF_E_INVALID;
    if (n == 0) return GGUF_OK;
    if (!a || !b) return GGUF_E_INVALID;
    if (gguf_row_bytes(type, (uint64_t)n) == 0 || (uint64_t)n > SIZE_MAX / sizeof(float))
        return GGUF_E_INVALID;
    return GGUF_OK;
}

int gguf_dequantize_row(uint32_t type, const void *src, float *dst, int64_t n)
{
    if (!gguf_can_dequantize(type)) return GGUF_E_UNSUPPORTED;
    int rc = check_run(type, n, src, dst);
    if (rc != GGUF_OK || n == 0) return rc;
    gq_dequant_kernel(type)(src, dst, n);
    return GGUF_OK;
}

int gguf_quantize_row(uint32_t type, const float *src, void *dst, int64_t n)
{
    if (!gguf_can_quantize(type)) return GGUF_E_UNSUPPORTED;
    int rc = check_run(type, n, src, dst);
    if (rc != GGUF_OK || n == 0) return rc;
    gq_quant_kernel(type)(src, dst, n);
    return GGUF_OK;
}

/* nrows * ne0 into *total after the shape checks common to the multi-row
 * functions; GGUF_E_INVALID for negative or overflowing shapes or a
 * negative thread count. */
static int flat_size(int64_t nrows, int64_t ne0, int nthreads, int64_t *total)
{
    if (nrows < 0 || ne0 < 0 || nthreads < 0) return GGUF_E_INVALID;
    if (ne0 && nrows > INT64_MAX / ne0) return GGUF_E_INVALID;
    *total = nrows * ne0;
    return GGUF_OK;
}

/* Threads to use for nchunks units of work when nthreads were asked for
 * (0: as many as OpenMP would use, by default one per core). */
static int thread_count(int nthreads, int64_t nchunks)
{
#ifdef _OPENMP
    int64_t nt = nthreads > 0 ? nthreads : omp_get_max_threads();
    if (nt > nchunks) nt = nchunks;
    return nt > 0 ? (int)nt : 1;
#else
    (void)nthreads;
    (void)nchunks;
    return 1;
#endif
}

/* The checks of gguf_dequantize_rows() and gguf_quantize_rows(): sizes,
 * rows of whole blocks, pointers; *total = nrows * ne0. */
static int check_rows(uint32_t type, const void *src, const void *dst, int64_t nrows, int64_t ne0,
                      int nthreads, int64_t *total)
{
    int rc = flat_size(nrows, ne0, nthreads, total);
    if (rc == GGUF_OK && (uint64_t)ne0 % block_size(type)) rc = GGUF_E_INVALID;
    if (rc == GGUF_OK) rc = check_run(type, *total, src, dst);
    return rc;
}

int gguf_dequantize_rows(uint32_t type, const void *src, float *dst, int64_t nrows, int64_t ne0,
                         int nthreads)
{
    if (!gguf_can_dequantize(type)) return GGUF_E_UNSUPPORTED;
    int64_t total;
    int rc = check_rows(type, src, dst, nrows, ne0, nthreads, &total);
    if (rc != GGUF_OK || total == 0) return rc;

    /* One level for the whole call, whatever gguf_simd_set() does meanwhile. */
    const gq_dequant_fn kernel = gq_dequant_kernel(type);
    const uint64_t bs = block_size(type), tsize = gguf_type_get(type)->type_size;
    const int64_t nchunks = (total + CHUNK - 1) / CHUNK;
    const int nt = thread_count(nthreads, nchunks);
    (void)nt;

#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) if (nt > 1)
    for (int64_t c = 0; c < nchunks; c++) {
        const int64_t start = c * CHUNK;
        const int64_t n = total - start < CHUNK ? total - start : CHUNK;
        kernel((const char *)src + (uint64_t)start / bs * tsize, dst + start, n);
    }
    return GGUF_OK;
}

int gguf_quantize_rows(uint32_t type, const float *src, void *dst, int64_t nrows, int64_t ne0,
                       int nthreads)
{
    if (!gguf_can_quantize(type)) return GGUF_E_UNSUPPORTED;
    int64_t total;
    int rc = check_rows(type, src, dst, nrows, ne0, nthreads, &total);
    if (rc != GGUF_OK || total == 0) return rc;

    const gq_quant_fn kernel = gq_quant_kernel(type);
    const uint64_t bs = block_size(type), tsize = gguf_type_get(type)->type_size;
    const int64_t nchunks = (total + CHUNK - 1) / CHUNK;
    const int nt = thread_count(nthreads, nchunks);
    (void)nt;

#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) if (nt > 1)
    for (int64_t c = 0; c < nchunks; c++) {
        const int64_t start = c * CHUNK;
        const int64_t n = total - start < CHUNK ? total - start : CHUNK;
        kernel(src + start, (char *)dst + (uint64_t)start / bs * tsize, n);
    }
    return GGUF_OK;
}

int gguf_quantize_uses_weights(uint32_t type)
{
    return gq_quant_weighted_kernel(type) != NULL;
}

int gguf_quantize_rows_weighted(uint32_t type, const float *src, void *dst, int64_t nrows,
                                int64_t ne0, const float *weights, int nthreads)
{
    /* Without weights, or for a type whose quantizer ignores them, this is
     * exactly gguf_quantize_rows() (checks included). */
    const gq_quant_weighted_fn kernel = gq_quant_weighted_kernel(type);
    if (!weights || !kernel) return gguf_quantize_rows(type, src, dst, nrows, ne0, nthreads);

    if (!gguf_can_quantize(type)) return GGUF_E_UNSUPPORTED;
    int64_t total;
    int rc = check_rows(type, src, dst, nrows, ne0, nthreads, &total);
    if (rc != GGUF_OK || total == 0) return rc;

    /* Units of whole rows, about CHUNK elements each: the legacy types'
     * weights depend on the mean square of the row. */
    const uint64_t row_bytes = gguf_row_bytes(type, (uint64_t)ne0);
    const int64_t rows_per_chunk = ne0 >= CHUNK ? 1 : CHUNK / ne0;
    const int64_t nchunks = (nrows + rows_per_chunk - 1) / rows_per_chunk;
    const int nt = thread_count(nthreads, nchunks);
    (void)nt;

#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) if (nt > 1)
    for (int64_t c = 0; c < nchunks; c++) {
        const int64_t r0 = c * rows_per_chunk;
        const int64_t r1 = nrows - r0 < rows_per_chunk ? nrows : r0 + rows_per_chunk;
        for (int64_t r = r0; r < r1; r++)
            kernel(src + r * ne0, (char *)dst + (uint64_t)r * row_bytes, ne0, weights);
    }
    return GGUF_OK;
}

int gguf_convert_rows(uint32_t from, const void *src, uint32_t to, void *dst, int64_t nrows,
                      int64_t ne0, int nthreads)
{
    if (!gguf_can_dequantize(from) || !gguf_can_quantize(to)) return GGUF_E_UNSUPPORTED;
    int64_t total;
    int rc = flat_size(nrows, ne0, nthreads, &total);
    if (rc == GGUF_OK && ((uint64_t)ne0 % block_size(from) || (uint64_t)ne0 % block_size(to)))
        rc = GGUF_E_INVALID;
    if (rc == GGUF_OK) rc = check_run(from, total, src, dst);
    if (rc == GGUF_OK) rc = check_run(to, total, src, dst);
    if (rc != GGUF_OK || total == 0) return rc;

    const gq_dequant_fn dq = gq_dequant_kernel(from);
    const gq_quant_fn qz = gq_quant_kernel(to);
    const uint64_t bs_from = block_size(from), ts_from = gguf_type_get(from)->type_size;
    const uint64_t bs_to = block_size(to), ts_to = gguf_type_get(to)->type_size;
    const int64_t nchunks = (total + CHUNK - 1) / CHUNK;
    const int nt = thread_count(nthreads, nchunks);

    /* One chunk of floats per thread; chunk starts are multiples of CHUNK,
     * hence block boundaries of both types. */
    const size_t per_thread = total < CHUNK ? (size_t)total : CHUNK;
    float *buf = malloc((size_t)nt * per_thread * sizeof(float));
    if (!buf) return GGUF_E_NOMEM;

#pragma omp parallel num_threads(nt) if (nt > 1)
    {
#ifdef _OPENMP
        float *mine = buf + (size_t)omp_get_thread_num() * per_thread;
#else
        float *mine = buf;
#endif
#pragma omp for schedule(dynamic, 1)
        for (int64_t c = 0; c < nchunks; c++) {
            const uint64_t start = (uint64_t)c * CHUNK;
            const int64_t n = total - (int64_t)start < CHUNK ? total - (int64_t)start : CHUNK;
            dq((const char *)src + start / bs_from * ts_from, mine, n);
            qz(mine, (char *)dst + start / bs_to * ts_to, n);
        }
    }
    free(buf);
    return GGUF_OK;
}
