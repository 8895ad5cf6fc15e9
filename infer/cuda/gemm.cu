/*
 * gemm.cu -- products of many tokens (prefill, batched decode past
 * QC_MV_MAX): weights dequantized a piece of QC_GEMM_ROWS rows at a time
 * into a scratch buffer and multiplied by cuBLAS.
 *
 * The fast path dequantizes to F16 and multiplies with the input in F16
 * (the caller converted it with qc_to_half(), each vector scaled into F16's
 * range by a power of two, undone on the output), summing in F32 on the
 * tensor cores; plain mode dequantizes to F32 and uses SGEMM on the float
 * input, the reference the other paths are tested against.  In cuBLAS's
 * column-major terms the rows of a piece are the columns of a (cols,
 * rows) matrix, so out (rows, n) = piece^T times input (cols, n).
 */
#include "infer/cuda/common.cuh"

template <uint32_t T, typename D>
__global__ void k_dequant(const uint8_t *w, int64_t row_bytes, int64_t segs, int64_t total,
                          D *dst)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    const int64_t r = i / segs, sg = i % segs;
    float v[32];
    qc_deq_seg(T, w + r * row_bytes, sg, v);
    D *o = dst + r * segs * 32 + sg * 32;
    for (int l = 0; l < 32; l++) {
        if constexpr (sizeof(D) == 2) o[l] = __float2half(v[l]);
        else o[l] = v[l];
    }
}

template <typename D>
static void dequant(qc_state *s, const qc_matrix *w, int64_t r0, int64_t nr, D *dst)
{
    const int64_t segs = w->cols / 32, total = nr * segs;
    const uint8_t *src = w->data + r0 * w->row_bytes;
    switch (w->type) {
#define DQ(T) \
    case T: \
        k_dequant<T, D><<<qc_blocks(total, 128), 128, 0, s->stream>>>(src, w->row_bytes, segs, \
                                                                      total, dst); \
        break;
        QC_EACH_TYPE(DQ)
#undef DQ
    default:
        qc_fail_type(s, "k_dequant", w->type);
        return;
    }
    qc_launched(s, "k_dequant");
}

/* out (rows, n): column t times undo[t], the scale qc_to_half() took off. */
__global__ void k_unscale(float *out, int64_t rows, int64_t total, const float *undo)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) out[i] *= undo[i / rows];
}

void qc_gemm(qc_state *s, const qc_matrix *w, const float *in, int n, float *out, int plain)
{
    const float one = 1.0f, zero = 0.0f;
    const int k = (int)w->cols;
    for (int64_t r0 = 0; r0 < w->rows && s->status == GGUF_OK; r0 += QC_GEMM_ROWS) {
        const int nr = (int)(w->rows - r0 < QC_GEMM_ROWS ? w->rows - r0 : QC_GEMM_ROWS);
        if (plain) {
            dequant(s, w, r0, nr, (float *)s->wdeq);
            qc_blas(s, qc_cublas.sgemm(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, nr, n, k, &one,
                                   (const float *)s->wdeq, k, in, k, &zero, out + r0,
                                   (int)w->rows),
                    "cublasSgemm");
        } else {
            dequant(s, w, r0, nr, (__half *)s->wdeq);
            qc_blas(s, qc_cublas.gemm_ex(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, nr, n, k, &one, s->wdeq,
                                    CUDA_R_16F, k, s->xh, CUDA_R_16F, k, &zero, out + r0,
                                    CUDA_R_32F, (int)w->rows, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT),
                    "cublasGemmEx");
        }
    }
    if (!plain && s->status == GGUF_OK) {
        const int64_t total = w->rows * n;
        k_unscale<<<qc_blocks(total, 256), 256, 0, s->stream>>>(out, w->rows, total, s->xscale);
        qc_launched(s, "k_unscale");
    }
}
