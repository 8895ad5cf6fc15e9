/*
 * quantize.cu -- a product's float input to the 8-bit activations of the
 * matrix-vector kernels, or to F16 for cuBLAS.
 *
 * One warp quantizes one segment of 32 elements (qc_quant_store() in
 * common.cuh), so the input's width must be a multiple of 32, which the
 * backend checks for every matrix when it opens.
 */
#include "infer/cuda/common.cuh"

/* Thread i of the grid: element i % cols of vector i / cols. */
__global__ void k_quantize(const float *in, int64_t cols, int64_t total, int8_t *q, float2 *ds,
                           int64_t stride)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i - threadIdx.x % 32 >= total) return; /* whole warps only: total % 32 == 0 */
    const int64_t t = i / cols, c = i % cols;
    qc_quant_store(in[i], c / 32, q + t * stride, ds + t * (stride / 32));
}

__global__ void k_to_half(const float *in, int64_t cols, int64_t total, __half *out,
                          int64_t stride)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    out[i / cols * stride + i % cols] = __float2half(in[i]);
}

void qc_quantize(qc_state *s, const float *in, int64_t cols, int n)
{
    const int64_t total = cols * n;
    k_quantize<<<qc_blocks(total, 256), 256, 0, s->stream>>>(in, cols, total, s->act.q,
                                                              s->act.ds, s->act.stride);
    qc_launched(s, "k_quantize");
}

void qc_to_half(qc_state *s, const float *in, int64_t cols, int n)
{
    const int64_t total = cols * n;
    k_to_half<<<qc_blocks(total, 256), 256, 0, s->stream>>>(in, cols, total, s->xh, cols);
    qc_launched(s, "k_to_half");
}
