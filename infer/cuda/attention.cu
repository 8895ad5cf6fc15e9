/*
 * attention.cu -- causal grouped-query attention over the F16 cache,
 * split along the sequence.
 *
 * A query (one head of one token) attends to positions 0 .. its own of
 * its sequence.  The positions go in pieces of QC_ATT_CHUNK: one block
 * per (head, token, piece) scores its piece against the query, takes the
 * piece's softmax and the weighted sum of its values, and leaves the sum
 * with the piece's maximum and total; a second kernel combines the pieces
 * of each query, rescaling each by exp(its max - the overall max).  So a
 * long context is spread over many blocks, and a decode step's grid does
 * not depend on the position (pieces past it end at once), which lets a
 * captured graph replay at any position.  Query head h reads KV head
 * h / (n_head / n_head_kv), as the CPU does.
 */
#include <math.h>

#include "infer/cuda/common.cuh"

#define ATT_THREADS 128

/* Piece p of query (h, t0 + blockIdx.y): part gets hd sums, then the max
 * and the total of the piece's exponentials. */
__global__ void k_attn_part(const float *q, const __half *kc, const __half *vc,
                            const uint32_t *pos, const int32_t *seq, float *part, uint32_t t0,
                            uint32_t n_head, uint32_t group, uint32_t hd, uint32_t n_kv,
                            uint32_t n_ctx, uint32_t n_seq, uint32_t layer, float scale)
{
    extern __shared__ float sh[]; /* qv (hd), then sc (QC_ATT_CHUNK) */
    float *qv = sh, *sc = sh + hd;
    __shared__ float red[32];
    const uint32_t h = blockIdx.x, t = t0 + blockIdx.y, piece = blockIdx.z;
    const uint32_t n_piece = gridDim.z;
    float *out = part + (((int64_t)blockIdx.y * n_head + h) * n_piece + piece) * (hd + 2);
    const uint32_t len = pos[t] + 1, j0 = piece * QC_ATT_CHUNK;
    if (j0 >= len) return; /* the combining kernel reads only the pieces in use */
    const uint32_t j1 = len - j0 < QC_ATT_CHUNK ? len : j0 + QC_ATT_CHUNK;
    for (uint32_t i = threadIdx.x; i < hd; i += blockDim.x)
        qv[i] = q[(int64_t)t * n_head * hd + h * hd + i];
    __syncthreads();
    const int64_t base = (((int64_t)layer * n_seq + seq[t]) * n_ctx) * n_kv + (h / group) * hd;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
    for (uint32_t j = j0 + warp; j < j1; j += nw) {
        const __half *kr = kc + base + (int64_t)j * n_kv;
        float d = 0.0f;
        for (uint32_t i = lane; i < hd; i += 32) d += qv[i] * __half2float(kr[i]);
        d = qc_warp_sum(d);
        if (lane == 0) sc[j - j0] = d * scale;
    }
    __syncthreads();
    float m = -INFINITY;
    for (uint32_t j = threadIdx.x; j < j1 - j0; j += blockDim.x) m = fmaxf(m, sc[j]);
    m = qc_warp_max(m);
    if (lane == 0) red[warp] = m;
    __syncthreads();
    m = red[0];
    for (int w = 1; w < nw; w++) m = fmaxf(m, red[w]);
    __syncthreads();
    float l = 0.0f;
    for (uint32_t j = threadIdx.x; j < j1 - j0; j += blockDim.x) {
        const float e = expf(sc[j] - m);
        sc[j] = e;
        l += e;
    }
    l = qc_block_sum(l, red); /* its barriers also publish sc */
    for (uint32_t i = threadIdx.x; i < hd; i += blockDim.x) {
        float o = 0.0f;
        for (uint32_t j = j0; j < j1; j++)
            o += sc[j - j0] * __half2float(vc[base + (int64_t)j * n_kv + i]);
        out[i] = o;
    }
    if (threadIdx.x == 0) {
        out[hd] = m;
        out[hd + 1] = l;
    }
}

/* ao of query (h, t0 + blockIdx.y): the pieces in use, combined. */
__global__ void k_attn_combine(const float *part, const uint32_t *pos, float *ao, uint32_t t0,
                               uint32_t n_head, uint32_t hd, uint32_t n_piece)
{
    const uint32_t h = blockIdx.x, t = t0 + blockIdx.y;
    const uint32_t used = (pos[t] + QC_ATT_CHUNK) / QC_ATT_CHUNK; /* pieces of pos + 1 */
    const float *p = part + ((int64_t)blockIdx.y * n_head + h) * n_piece * (hd + 2);
    float m = -INFINITY;
    for (uint32_t k = 0; k < used; k++) m = fmaxf(m, p[k * (hd + 2) + hd]);
    float l = 0.0f;
    for (uint32_t k = 0; k < used; k++)
        l += p[k * (hd + 2) + hd + 1] * expf(p[k * (hd + 2) + hd] - m);
    const float inv = 1.0f / l;
    for (uint32_t i = threadIdx.x; i < hd; i += blockDim.x) {
        float o = 0.0f;
        for (uint32_t k = 0; k < used; k++)
            o += p[k * (hd + 2) + i] * expf(p[k * (hd + 2) + hd] - m);
        ao[(int64_t)t * n_head * hd + h * hd + i] = o * inv;
    }
}

void qc_attention(qc_state *s, uint32_t l, int n)
{
    const qwen_config *c = &s->m->config;
    const uint32_t n_piece = (s->n_ctx + QC_ATT_CHUNK - 1) / QC_ATT_CHUNK;
    const size_t shared = (c->head_dim + QC_ATT_CHUNK) * sizeof(float);
    const float scale = 1.0f / sqrtf((float)c->head_dim);
    for (uint32_t t0 = 0; t0 < (uint32_t)n; t0 += s->att_tokens) {
        const uint32_t nt = (uint32_t)n - t0 < s->att_tokens ? (uint32_t)n - t0 : s->att_tokens;
        k_attn_part<<<dim3(c->n_head, nt, n_piece), ATT_THREADS, shared, s->stream>>>(
            s->q, s->k_cache, s->v_cache, s->d_pos, s->d_seq, s->att, t0, c->n_head,
            c->n_head / c->n_head_kv, c->head_dim, c->n_kv, s->n_ctx, s->n_seq, l, scale);
        if (!qc_launched(s, "k_attn_part")) return;
        k_attn_combine<<<dim3(c->n_head, nt), ATT_THREADS, 0, s->stream>>>(
            s->att, s->d_pos, s->ao, t0, c->n_head, c->head_dim, n_piece);
        if (!qc_launched(s, "k_attn_combine")) return;
    }
}
