/*
 * rope.cu -- what happens to Q, K and V between their products and
 * attention, in one kernel: the biases (qwen2), the RMSNorm over each head
 * of Q and K (qwen3), RoPE, and the store of K and V into the cache as F16.
 *
 * One block per head of one token: heads 0 .. n_head-1 of Q, then the
 * n_head_kv heads of K, then those of V.  RoPE takes the cos and sin of
 * each pair from the table the backend made at open with the CPU's own
 * qwen_rope_angles(), so both rotate by the same angles; the position is
 * read from device memory, so a captured decode step replays at any.
 */
#include "infer/cuda/common.cuh"

#define ROPE_THREADS 64

__global__ void k_qkv_post(float *q, float *k, const float *v, const float *bq, const float *bk,
                           const float *bv, const float *q_norm, const float *k_norm,
                           const float *rope, const uint32_t *pos, const int32_t *seq,
                           __half *kc, __half *vc, uint32_t n_head, uint32_t n_head_kv,
                           uint32_t hd, uint32_t n_ctx, uint32_t n_seq, uint32_t layer,
                           float eps)
{
    extern __shared__ float vec[]; /* (hd) */
    __shared__ float red[32];
    const uint32_t t = blockIdx.y, h = blockIdx.x;
    const uint32_t n_q = n_head * hd, n_kv = n_head_kv * hd;
    const int kind = h < n_head ? 0 : h < n_head + n_head_kv ? 1 : 2; /* q, k, v */
    const uint32_t head = kind == 0 ? h : kind == 1 ? h - n_head : h - n_head - n_head_kv;
    const float *src = kind == 0 ? q + (int64_t)t * n_q : kind == 1 ? k + (int64_t)t * n_kv
                                                                     : v + (int64_t)t * n_kv;
    const float *bias = kind == 0 ? bq : kind == 1 ? bk : bv;
    src += head * hd;
    for (uint32_t i = threadIdx.x; i < hd; i += blockDim.x)
        vec[i] = bias ? src[i] + bias[head * hd + i] : src[i];
    const int64_t at = (((int64_t)layer * n_seq + seq[t]) * n_ctx + pos[t]) * n_kv + head * hd;
    if (kind == 2) {
        for (uint32_t i = threadIdx.x; i < hd; i += blockDim.x) vc[at + i] = __float2half(vec[i]);
        return;
    }
    const float *norm = kind == 0 ? q_norm : k_norm;
    __syncthreads();
    if (norm) { /* uniform over the block */
        float ss = 0.0f;
        for (uint32_t i = threadIdx.x; i < hd; i += blockDim.x) ss += vec[i] * vec[i];
        ss = qc_block_sum(ss, red);
        const float scale = 1.0f / sqrtf(ss / (float)hd + eps);
        for (uint32_t i = threadIdx.x; i < hd; i += blockDim.x) vec[i] = vec[i] * scale * norm[i];
        __syncthreads();
    }
    const float *cs = rope + (int64_t)pos[t] * hd;
    const uint32_t half = hd / 2;
    for (uint32_t i = threadIdx.x; i < half; i += blockDim.x) {
        const float c = cs[2 * i], sn = cs[2 * i + 1], a = vec[i], b = vec[i + half];
        const float r0 = a * c - b * sn, r1 = a * sn + b * c;
        if (kind == 0) {
            float *dst = q + (int64_t)t * n_q + head * hd;
            dst[i] = r0;
            dst[i + half] = r1;
        } else {
            kc[at + i] = __float2half(r0);
            kc[at + i + half] = __float2half(r1);
        }
    }
}

void qc_qkv_post(qc_state *s, const qc_layer *L, uint32_t l, int n)
{
    const qwen_config *c = &s->m->config;
    const dim3 grid(c->n_head + 2 * c->n_head_kv, n);
    k_qkv_post<<<grid, ROPE_THREADS, c->head_dim * sizeof(float), s->stream>>>(
        s->q, s->k, s->v, L->bq, L->bk, L->bv, L->q_norm, L->k_norm, s->rope, s->d_pos, s->d_seq,
        s->k_cache, s->v_cache, c->n_head, c->n_head_kv, c->head_dim, s->n_ctx, s->n_seq, l,
        c->rms_eps);
    qc_launched(s, "k_qkv_post");
}
