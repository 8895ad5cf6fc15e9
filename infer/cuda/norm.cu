/*
 * norm.cu -- the residual addition fused with the RMSNorm that follows it,
 * and with the quantization of the normed vector for the products after.
 *
 * One block per output vector: x += y in place (the sublayer's output
 * joins the residual stream), the mean of squares over the block, then
 * out = x / sqrt(mean + eps) * w, as the CPU's rmsnorm() (in float where
 * it sums in double).  Rows gather the vectors that want logits for the
 * final norm.
 */
#include "infer/cuda/common.cuh"

#define NORM_THREADS 256

__global__ void k_add_rmsnorm(float *x, const float *y, const float *w, const int32_t *rows,
                              int64_t e, float eps, float *out, int8_t *q, float2 *ds,
                              int64_t stride)
{
    __shared__ float red[32];
    const int64_t o = blockIdx.x, t = rows ? rows[o] : o;
    float *xt = x + t * e;
    float ss = 0.0f;
    for (int64_t c = threadIdx.x; c < e; c += blockDim.x) {
        float v = xt[c];
        if (y) {
            v += y[t * e + c];
            xt[c] = v;
        }
        ss += v * v;
    }
    ss = qc_block_sum(ss, red);
    const float scale = 1.0f / sqrtf(ss / (float)e + eps);
    /* whole warps to the end: e is a multiple of 32 */
    for (int64_t c = threadIdx.x; c - threadIdx.x % 32 < e; c += blockDim.x) {
        const float v = xt[c] * scale * w[c];
        out[o * e + c] = v;
        if (q) qc_quant_store(v, c / 32, q + o * stride, ds + o * (stride / 32));
    }
}

void qc_add_rmsnorm(qc_state *s, float *x, const float *y, const float *w, const int32_t *rows,
                    int n, float *out, int quantize)
{
    const qwen_config *c = &s->m->config;
    k_add_rmsnorm<<<n, NORM_THREADS, 0, s->stream>>>(
        x, y, w, rows, c->n_embd, c->rms_eps, out, quantize ? s->act.q : NULL,
        quantize ? s->act.ds : NULL, s->act.stride);
    qc_launched(s, "k_add_rmsnorm");
}
