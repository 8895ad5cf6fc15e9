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

/* Block t: vector t to F16, scaled by 2^-e when its largest magnitude m
 * passes 2^14 (e: the least that brings m under it; F16 ends at 65504),
 * so that the large activations some models have (the input of ffn_down)
 * do not overflow; undo[t] = 2^e.  Powers of two scale exactly. */
__global__ void k_to_half(const float *in, int64_t cols, __half *out, float *undo)
{
    __shared__ float red[32];
    const int64_t t = blockIdx.x;
    const float *x = in + t * cols;
    float m = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, fabsf(x[c]));
    m = qc_block_max(m, red);
    float scale = 1.0f;
    if (m > 16384.0f && isfinite(m)) {
        int e;
        frexpf(m / 16384.0f, &e); /* m / 2^14 = f 2^e, f in [0.5, 1): m 2^-e < 2^14 */
        scale = ldexpf(1.0f, -e);
    }
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
        out[t * cols + c] = __float2half(x[c] * scale);
    if (threadIdx.x == 0) undo[t] = 1.0f / scale;
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
    k_to_half<<<n, 256, 0, s->stream>>>(in, cols, s->xh, s->xscale);
    qc_launched(s, "k_to_half");
}
