/*
 * ffn.cu -- SwiGLU between the feed-forward's products: gate =
 * silu(gate) * up, silu(g) = g / (1 + exp(-g)) as the CPU computes it,
 * fused with the quantization of the result for the down product.
 */
#include "infer/cuda/common.cuh"

__global__ void k_swiglu(float *gate, const float *up, int64_t n_ff, int64_t total, int8_t *q,
                         float2 *ds, int64_t stride)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i - threadIdx.x % 32 >= total) return; /* whole warps: total % 32 == 0 */
    const float g = gate[i], v = g / (1.0f + expf(-g)) * up[i];
    gate[i] = v;
    if (q) {
        const int64_t t = i / n_ff, c = i % n_ff;
        qc_quant_store(v, c / 32, q + t * stride, ds + t * (stride / 32));
    }
}

void qc_swiglu(qc_state *s, int n, int quantize)
{
    const int64_t n_ff = s->m->config.n_ff, total = n_ff * n;
    k_swiglu<<<qc_blocks(total, 256), 256, 0, s->stream>>>(
        s->gate, s->up, n_ff, total, quantize ? s->act.q : NULL, quantize ? s->act.ds : NULL,
        s->act.stride);
    qc_launched(s, "k_swiglu");
}
