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

template <uint32_t T, int NC>
__global__ void __launch_bounds__(MV_WARPS * 32)
k_mv_q(const uint8_t *w, int64_t row_bytes, int64_t rows, int64_t segs, const int8_t *aq,
       const float2 *ds, int64_t stride, int n, float *out, int64_t out_stride)
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
            const int8_t *a = aq + c * stride + sg * 32;
            const float2 f = ds[c * (stride / 32) + sg];
            for (int r = 0; r < MV_ROWS; r++)
                if (r0 + r < rows)
                    acc[r][c] += qc_dot_seg(T, w + (r0 + r) * row_bytes, sg, a, f.x, f.y);
        }
    for (int r = 0; r < MV_ROWS; r++)
        for (int c = 0; c < NC; c++) {
            const float v = qc_warp_sum(acc[r][c]);
            if (lane == 0 && c < n && r0 + r < rows) out[c * out_stride + r0 + r] = v;
        }
}

template <uint32_t T, int NC>
__global__ void __launch_bounds__(MV_WARPS * 32)
k_mv_f(const uint8_t *w, int64_t row_bytes, int64_t rows, int64_t segs, const float *in, int n,
       float *out, int64_t out_stride)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int64_t r0 = ((int64_t)blockIdx.x * MV_WARPS + warp) * MV_ROWS;
    if (r0 >= rows) return;
    const int64_t cols = segs * 32;
    float acc[MV_ROWS][NC];
    for (int r = 0; r < MV_ROWS; r++)
        for (int c = 0; c < NC; c++) acc[r][c] = 0.0f;
    for (int64_t sg = lane; sg < segs; sg += 32)
        for (int c = 0; c < NC; c++) {
            if (c >= n) break;
            for (int r = 0; r < MV_ROWS; r++)
                if (r0 + r < rows)
                    acc[r][c] += qc_dot_float_seg(T, w + (r0 + r) * row_bytes, sg,
                                                  in + c * cols + sg * 32);
        }
    for (int r = 0; r < MV_ROWS; r++)
        for (int c = 0; c < NC; c++) {
            const float v = qc_warp_sum(acc[r][c]);
            if (lane == 0 && c < n && r0 + r < rows) out[c * out_stride + r0 + r] = v;
        }
}

/* F32, F16 and BF16 take float input. */
constexpr bool mv_quantized(uint32_t t)
{
    return t != 0 && t != 1 && t != 30;
}

template <uint32_t T, int NC>
static void launch(qc_state *s, const qc_matrix *w, const float *in, int n, float *out)
{
    const unsigned blocks = qc_blocks(w->rows, MV_WARPS * MV_ROWS);
    const int64_t segs = w->cols / 32;
    if constexpr (mv_quantized(T))
        k_mv_q<T, NC><<<blocks, MV_WARPS * 32, 0, s->stream>>>(
            w->data, w->row_bytes, w->rows, segs, s->act.q, s->act.ds, s->act.stride, n, out,
            w->rows);
    else
        k_mv_f<T, NC><<<blocks, MV_WARPS * 32, 0, s->stream>>>(w->data, w->row_bytes, w->rows,
                                                               segs, in, n, out, w->rows);
    qc_launched(s, mv_quantized(T) ? "k_mv_q" : "k_mv_f");
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
