/*
 * matvec.cu -- matrix-vector products for decode and small batches (up to
 * QC_MV_MAX tokens): every weight read once for all of them.
 *
 * A warp takes MV_ROWS rows; its lanes walk the rows' segments of 32 (lane
 * l takes segments l, l + 32, ...), each a call of qblocks.h's dot product
 * for each token, then the warp sums its lanes.  Quantized weights meet
 * the 8-bit activations (integer dot products, dp4a); F32, F16 and BF16
 * weights meet the float input.  Kernels are instantiated per type and for
 * 1, 2, 4 and 8 tokens (a batch of 3 runs the 4-token kernel with one
 * column unused).
 */
#include "infer/cuda/common.cuh"

#define MV_WARPS 4
#define MV_ROWS 2

/* F32, F16 and BF16 take float input. */
__host__ __device__ constexpr bool mv_quantized(uint32_t t)
{
    return t != 0 && t != 1 && t != 30;
}

/* Rows r0 .. r0 + MV_ROWS - 1 (a warp's) times the n <= NC inputs: the
 * 8-bit activations aq, ds (stride elements a vector) for quantized T,
 * else the floats in (segs * 32 a vector). */
template <uint32_t T, int NC>
__global__ void __launch_bounds__(MV_WARPS * 32)
k_mv(const uint8_t *w, int64_t row_bytes, int64_t rows, int64_t segs, const int8_t *aq,
     const float2 *ds, int64_t stride, const float *in, int n, float *out, int64_t out_stride)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int64_t r0 = ((int64_t)blockIdx.x * MV_WARPS + warp) * MV_ROWS;
    if (r0 >= rows) return;
    float acc[MV_ROWS][NC];
    for (int r = 0; r < MV_ROWS; r++)
        for (int c = 0; c < NC; c++) acc[r][c] = 0.0f;
    for (int64_t sg = lane; sg < segs; sg += 32)
        for (int c = 0; c < NC; c++) {
            if (c >= n) break;
            for (int r = 0; r < MV_ROWS; r++) {
                if (r0 + r >= rows) break;
                const uint8_t *row = w + (r0 + r) * row_bytes;
                if constexpr (mv_quantized(T)) {
                    const float2 f = ds[c * (stride / 32) + sg];
                    acc[r][c] += qc_dot_seg(T, row, sg, aq + c * stride + sg * 32, f.x, f.y);
                } else {
                    acc[r][c] += qc_dot_float_seg(T, row, sg, in + (c * segs + sg) * 32);
                }
            }
        }
    for (int r = 0; r < MV_ROWS; r++)
        for (int c = 0; c < NC; c++) {
            const float v = qc_warp_sum(acc[r][c]);
            if (lane == 0 && c < n && r0 + r < rows) out[c * out_stride + r0 + r] = v;
        }
}

template <uint32_t T, int NC>
static void launch(qc_state *s, const qc_matrix *w, const float *in, int n, float *out)
{
    k_mv<T, NC><<<qc_blocks(w->rows, MV_WARPS * MV_ROWS), MV_WARPS * 32, 0, s->stream>>>(
        w->data, w->row_bytes, w->rows, w->cols / 32, s->act.q, s->act.ds, s->act.stride, in, n,
        out, w->rows);
    qc_launched(s, "k_mv");
}

template <uint32_t T>
static void launch_n(qc_state *s, const qc_matrix *w, const float *in, int n, float *out)
{
    if (n == 1) launch<T, 1>(s, w, in, n, out);
    else if (n == 2) launch<T, 2>(s, w, in, n, out);
    else if (n <= 4) launch<T, 4>(s, w, in, n, out);
    else launch<T, 8>(s, w, in, n, out);
}

void qc_matvec(qc_state *s, const qc_matrix *w, const float *in, int n, float *out)
{
    switch (w->type) {
#define MV(T) \
    case T: launch_n<T>(s, w, in, n, out); break;
        QC_EACH_TYPE(MV)
#undef MV
    default:
        qc_fail_type(s, "k_mv", w->type);
        return;
    }
}
