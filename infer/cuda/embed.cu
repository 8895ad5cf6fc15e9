/*
 * embed.cu -- the embeddings of a batch's tokens: row token[t] of
 * token_embd dequantized into x, a segment of 32 per thread, with the
 * functions of qblocks.h that the host tests hold to quant/'s kernels.
 */
#include "infer/cuda/common.cuh"

template <uint32_t T>
__global__ void k_embed(const uint8_t *w, int64_t row_bytes, int64_t segs, const int32_t *token,
                        float *x)
{
    const int64_t s = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= segs) return;
    const int64_t t = blockIdx.y;
    qc_deq_seg(T, w + (int64_t)token[t] * row_bytes, s, x + t * segs * 32 + s * 32);
}

void qc_embed(qc_state *s, int n)
{
    const qc_matrix *w = &s->token_embd;
    const int64_t segs = w->cols / 32;
    const dim3 grid(qc_blocks(segs, 64), n);
    switch (w->type) {
#define EMBED(T) \
    case T: \
        k_embed<T><<<grid, 64, 0, s->stream>>>(w->data, w->row_bytes, segs, s->d_token, s->x); \
        break;
        QC_EACH_TYPE(EMBED)
#undef EMBED
    default:
        qc_fail_type(s, "k_embed", w->type);
        return;
    }
    qc_launched(s, "k_embed");
}
