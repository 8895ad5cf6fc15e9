/* weighted.c -- scalar kernels from floats to the quantized types, guided by
 * an importance matrix.
 *
 * An importance matrix ("imatrix") gives one weight per column of a
 * tensor: how much the error in that element of every row costs, as
 * measured on sample activations.  With one, llama.cpp's
 * ggml_quantize_chunk() runs, for Q4_0, Q4_1, Q5_0, Q5_1 and Q2_K .. Q6_K,
 * quantizers other than the reference ones of quantize.c: the same block
 * layouts, but fits that minimise the error weighted by
 *
 *     w[i] = imatrix[i] * sqrt(sigma2 + x[i]^2)
 *
 * (imatrix[i] alone for Q6_K), where sigma2 is the mean square of the row
 * (legacy types) or of the super-block (K-quants, twice it for Q3_K, Q4_K
 * and Q5_K), and that quantize the group scales of the K-quants by a
 * weighted fit as well (make_qp_quants, fit_scale_positive below) rather
 * than against the largest.  These kernels write the same bytes as those
 * (ggml-quants.c, quantize_row_T_impl) for the same floats and weights, by
 * the rules of quantize.c: the reference's order of float operations,
 * products grouped as it groups them, no fused multiply-add
 * (-ffp-contract=off), rounding by gq_round_even, and its integer
 * narrowings (a level computed as an int, stored in a byte).
 *
 * What is the same arithmetic as the reference quantizers is shared with
 * quantize.c: the asymmetric fit (gq_fit_scale_min, the reference's
 * make_qkx3_quants with weights), the symmetric one (gq_fit_scale_symmetric
 * with weights, make_qx_quants), and the block tails after the fits
 * (gq_finish_*: re-rounding against the stored scales, packing).
 *
 * Each kernel quantizes one row of n elements (a positive multiple of the
 * block size) with its n weights; rows.c checks the arguments and splits
 * work by whole rows, since the legacy types' sigma2 spans the row.
 *
 * These are the reference of the vector kernels of quant/vkernels.h
 * (vk_quant_weighted_T, chosen by the SIMD level in simd.c), which write
 * the same bytes: a change of an operation or of its order here must be
 * made there too (tests/test-quant-simd compares every level). */
#include <config.h>

#include <math.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/kernels.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

/* The sum of x[i]^2, i < n, accumulated left to right. */
static float sum_squares(const float *x, int64_t n)
{
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) s += x[i] * x[i];
    return s;
}

/* w[i] = qw[i] * sqrt(sigma2 + x[i]^2), i < n: the weight of each element
 * of a group, its column's importance scaled by its own magnitude and the
 * spread of its neighbourhood.  Returns the sum of the w[i] in order. */
static float element_weights(int n, const float *x, const float *qw, float sigma2, float *w)
{
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        w[i] = qw[i] * sqrtf(sigma2 + x[i] * x[i]);
        sum += w[i];
    }
    return sum;
}

/*
 * Fits x[0..n), meant to be >= 0 (the group scales or mins of a K-quant
 * block), as scale * L with L in 0..nmax, minimising the error weighted by
 * w: the largest value maps to nmax; of that and 8 grid spacings around it,
 * iscale = (nmax + 0.1 * is) / max for is = -4..4, the one of least
 * weighted squared error wins (the first on ties); then up to five passes
 * move single levels to what the least-squares scale of the others
 * suggests, keeping a move when it raises sumlx^2 / suml2.  Returns the
 * least-squares scale of the final levels (0 when max < GQ_GROUP_EPS, L
 * all 0 then, or when suml2 is not positive).  The reference's
 * make_qp_quants.
 *
 * A level is computed as an int and stored in a byte: a negative x (which
 * a fit may give) wraps, and the passes compute with the wrapped byte,
 * exactly as the reference does.  Levels are clamped at nmax only from the
 * grid search on (the first rounding is not, but is then replaced).
 * vkernels.h's vk_fit_positive() runs it one block per lane.
 */
static float fit_scale_positive(int n, int nmax, const float *x, uint8_t *L, const float *w)
{
    float max = 0.0f;
    for (int i = 0; i < n; i++) max = max > x[i] ? max : x[i];   /* MAX(max, x): NaN wins */
    if (max < GQ_GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = (float)nmax / max;
    for (int i = 0; i < n; i++) L[i] = (uint8_t)gq_round_even(iscale * x[i]);
    const float scale = 1.0f / iscale;
    float best = 0.0f;
    for (int i = 0; i < n; i++) {
        const float diff = x[i] - scale * (float)L[i];
        best += w[i] * diff * diff;   /* (w * diff) * diff */
    }
    for (int is = -4; is <= 4; is++) {
        if (is == 0) continue;
        const float iscale_is = (0.1f * (float)is + (float)nmax) / max;
        const float scale_is = 1.0f / iscale_is;
        float err = 0.0f;
        for (int i = 0; i < n; i++) {
            int l = gq_round_even(iscale_is * x[i]);
            if (l > nmax) l = nmax;
            const float diff = x[i] - scale_is * (float)l;
            err += w[i] * diff * diff;
        }
        if (err < best) {
            best = err;
            iscale = iscale_is;
        }
    }

    /* The sums take the int level; L keeps its byte. */
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = gq_round_even(iscale * x[i]);
        if (l > nmax) l = nmax;
        L[i] = (uint8_t)l;
        sumlx += w[i] * x[i] * (float)l;
        suml2 += w[i] * (float)l * (float)l;
    }
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float slx = sumlx - w[i] * x[i] * (float)L[i];
            float sl2 = suml2 - w[i] * (float)L[i] * (float)L[i];
            if (slx > 0 && sl2 > 0) {
                int l = gq_round_even(x[i] * sl2 / slx);
                if (l > nmax) l = nmax;
                if (l != L[i]) {
                    slx += w[i] * x[i] * (float)l;
                    sl2 += w[i] * (float)l * (float)l;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (uint8_t)l;
                        sumlx = slx;
                        suml2 = sl2;
                        changed++;
                    }
                }
            }
        }
        if (!changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Packs 32 levels 0..31 into Q5_0/Q5_1 nibbles and high bits (bit 4 of
 * level j is bit j of qh, stored little-endian). */
static void pack_q5(const uint8_t L[GQ_QK], uint8_t qs[GQ_QK / 2], uint8_t qh[4])
{
    uint32_t bits = 0;
    for (int j = 0; j < GQ_QK / 2; j++) {
        const unsigned lo = L[j], hi = L[j + GQ_QK / 2];
        qs[j] = (uint8_t)((lo & 0xf) | (hi & 0xf) << 4);
        bits |= ((lo & 0x10u) >> 4) << j;
        bits |= ((hi & 0x10u) >> 4) << (j + GQ_QK / 2);
    }
    qh[0] = (uint8_t)bits;
    qh[1] = (uint8_t)(bits >> 8);
    qh[2] = (uint8_t)(bits >> 16);
    qh[3] = (uint8_t)(bits >> 24);
}

/* The grid of every weighted asymmetric fit (Q4_1, Q5_1, Q2_K, Q4_K,
 * Q5_K): 37 spacings from nmax - 0.9 by 0.05, squared error. */
#define GRID_RMIN -0.9f
#define GRID_RDELTA 0.05f
#define GRID_NSTEP 36

/* ------------------------------------------------------------------------ */
/* Legacy formats: sigma2 is the mean square of the whole row                */

/* Q4_0: each block fitted symmetrically, levels 0..15 meaning -8..7; a
 * block whose weights are all zero gets d = 0 and the levels of the
 * plain rounding. */
void gq_quant_weighted_q4_0(const float *src, void *dst, int64_t n, const float *w)
{
    struct gq_block_q4_0 *b = dst;
    const float sigma2 = sum_squares(src, n) / (float)n;
    float weight[GQ_QK];
    int8_t L[GQ_QK];
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, src += GQ_QK, w += GQ_QK) {
        element_weights(GQ_QK, src, w, sigma2, weight);
        b->d = gq_f2h(gq_fit_scale_symmetric(GQ_QK, 8, src, weight, L));
        for (int j = 0; j < GQ_QK / 2; j++)
            b->qs[j] = (uint8_t)(L[j] | L[j + GQ_QK / 2] << 4);
    }
}

/* Q4_1: each block fitted as d * L + m, L in 0..15, m <= 0. */
void gq_quant_weighted_q4_1(const float *src, void *dst, int64_t n, const float *w)
{
    struct gq_block_q4_1 *b = dst;
    const float sigma2 = sum_squares(src, n) / (float)n;
    float weight[GQ_QK];
    uint8_t L[GQ_QK], aux[GQ_QK];
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, src += GQ_QK, w += GQ_QK) {
        element_weights(GQ_QK, src, w, sigma2, weight);
        float neg_min;
        const float d = gq_fit_scale_min(GQ_QK, 15, src, weight, L, &neg_min, aux, GRID_RMIN,
                                         GRID_RDELTA, GRID_NSTEP, 0);
        b->d = gq_f2h(d);
        b->m = gq_f2h(-neg_min);
        for (int j = 0; j < GQ_QK / 2; j++)
            b->qs[j] = (uint8_t)(L[j] | L[j + GQ_QK / 2] << 4);
    }
}

/* Q5_0: as Q4_0 with levels 0..31 meaning -16..15. */
void gq_quant_weighted_q5_0(const float *src, void *dst, int64_t n, const float *w)
{
    struct gq_block_q5_0 *b = dst;
    const float sigma2 = sum_squares(src, n) / (float)n;
    float weight[GQ_QK];
    int8_t L[GQ_QK];
    uint8_t u[GQ_QK];
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, src += GQ_QK, w += GQ_QK) {
        element_weights(GQ_QK, src, w, sigma2, weight);
        b->d = gq_f2h(gq_fit_scale_symmetric(GQ_QK, 16, src, weight, L));
        for (int j = 0; j < GQ_QK; j++) u[j] = (uint8_t)L[j];
        pack_q5(u, b->qs, b->qh);
    }
}

/* Q5_1: as Q4_1 with L in 0..31. */
void gq_quant_weighted_q5_1(const float *src, void *dst, int64_t n, const float *w)
{
    struct gq_block_q5_1 *b = dst;
    const float sigma2 = sum_squares(src, n) / (float)n;
    float weight[GQ_QK];
    uint8_t L[GQ_QK], aux[GQ_QK];
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, src += GQ_QK, w += GQ_QK) {
        element_weights(GQ_QK, src, w, sigma2, weight);
        float neg_min;
        const float d = gq_fit_scale_min(GQ_QK, 31, src, weight, L, &neg_min, aux, GRID_RMIN,
                                         GRID_RDELTA, GRID_NSTEP, 0);
        b->d = gq_f2h(d);
        b->m = gq_f2h(-neg_min);
        pack_q5(L, b->qs, b->qh);
    }
}

/* ------------------------------------------------------------------------ */
/* K-quants: sigma2 per super-block                                          */

/* Q2_K: groups of 16 fitted as scale * L - min, L in 0..3 (squared error,
 * sigma2 the plain mean square); the 16 scales and the 16
 * mins are each fitted to 4 bits by fit_scale_positive, weighted by the
 * groups' weight sums. */
void gq_quant_weighted_q2_k(const float *src, void *dst, int64_t n, const float *w)
{
    struct gq_block_q2_k *b = dst;
    uint8_t L[GQ_QK_K], aux[16], ls[16], lm[16];
    float weight[16], sw[16], scales[16], mins[16];

    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++, src += GQ_QK_K, w += GQ_QK_K) {
        const float sigma2 = sum_squares(src, GQ_QK_K) / (float)GQ_QK_K;
        for (int g = 0; g < 16; g++) {
            const float *x = src + 16 * g;
            sw[g] = element_weights(16, x, w + 16 * g, sigma2, weight);
            scales[g] = gq_fit_scale_min(16, 3, x, weight, L + 16 * g, &mins[g], aux, GRID_RMIN,
                                         GRID_RDELTA, GRID_NSTEP, 0);
        }
        /* d and dmin are read back from their halves by the tail. */
        b->d = gq_f2h(fit_scale_positive(16, 15, scales, ls, sw));
        b->dmin = gq_f2h(fit_scale_positive(16, 15, mins, lm, sw));
        for (int g = 0; g < 16; g++) b->scales[g] = (uint8_t)(ls[g] | lm[g] << 4);
        gq_finish_q2_k(src, L, b);
    }
}

/* Q3_K: groups of 16 fitted symmetrically, levels -4..3; the 16 signed
 * scales fitted symmetrically to 6 bits (-32..31), weighted by the groups'
 * weight sums. */
void gq_quant_weighted_q3_k(const float *src, void *dst, int64_t n, const float *w)
{
    struct gq_block_q3_k *b = dst;
    int8_t L[GQ_QK_K], Ls[16];
    uint8_t ls[16];
    float weight[16], sw[16], scales[16];

    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++, src += GQ_QK_K, w += GQ_QK_K) {
        const float sigma2 = 2.0f * sum_squares(src, GQ_QK_K) / (float)GQ_QK_K;
        for (int g = 0; g < 16; g++) {
            const float *x = src + 16 * g;
            sw[g] = element_weights(16, x, w + 16 * g, sigma2, weight);
            scales[g] = gq_fit_scale_symmetric(16, 4, x, weight, L + 16 * g);
        }
        const float d = gq_fit_scale_symmetric(16, 32, scales, sw, Ls);
        for (int g = 0; g < 16; g++) ls[g] = (uint8_t)Ls[g];
        gq_finish_q3_k(src, ls, d, L, b);
    }
}

/* Q4_K and Q5_K: groups of 32 fitted as scale * L - min; the 8 scales and
 * the 8 mins each fitted to 6 bits, weighted by the groups' weight sums.
 * As in the reference, Q5_K clamps the levels at 63 before packing and
 * Q4_K does not: a level above 63 can only be a negative one wrapped in
 * its byte (a negative group scale, see fit_scale_positive), which Q4_K
 * packs as it is. */
static void weighted_k4(const float *src, const float *w, int nmax, uint8_t L[GQ_QK_K],
                        uint8_t scales_out[12], uint16_t *d, uint16_t *dmin)
{
    uint8_t aux[32], ls[8], lm[8];
    float weight[32], sw[8], scales[8], mins[8];

    const float sigma2 = 2.0f * sum_squares(src, GQ_QK_K) / (float)GQ_QK_K;
    for (int g = 0; g < 8; g++) {
        const float *x = src + 32 * g;
        sw[g] = element_weights(32, x, w + 32 * g, sigma2, weight);
        scales[g] = gq_fit_scale_min(32, nmax, x, weight, L + 32 * g, &mins[g], aux, GRID_RMIN,
                                     GRID_RDELTA, GRID_NSTEP, 0);
    }
    const float d_block = fit_scale_positive(8, 63, scales, ls, sw);
    const float m_block = fit_scale_positive(8, 63, mins, lm, sw);
    gq_weighted_k4_pack(ls, lm, nmax, scales_out);
    *d = gq_f2h(d_block);
    *dmin = gq_f2h(m_block);
}

/* Packs the 6-bit scale levels ls and min levels lm of a weighted Q4_K
 * (nmax 15) or Q5_K (nmax 31) block into out, clamping them at 63 first
 * for Q5_K only (see above). */
void gq_weighted_k4_pack(uint8_t ls[8], uint8_t lm[8], int nmax, uint8_t out[12])
{
    if (nmax == 31) {
        for (int g = 0; g < 8; g++) {
            if (ls[g] > 63) ls[g] = 63;
            if (lm[g] > 63) lm[g] = 63;
        }
    }
    gq_pack_k4_levels(ls, lm, out);
}

void gq_quant_weighted_q4_k(const float *src, void *dst, int64_t n, const float *w)
{
    struct gq_block_q4_k *b = dst;
    uint8_t L[GQ_QK_K];
    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++, src += GQ_QK_K, w += GQ_QK_K) {
        uint16_t d, dmin;
        weighted_k4(src, w, 15, L, b->scales, &d, &dmin);
        b->d = d;
        b->dmin = dmin;
        gq_finish_q4_k(src, L, b);
    }
}

void gq_quant_weighted_q5_k(const float *src, void *dst, int64_t n, const float *w)
{
    struct gq_block_q5_k *b = dst;
    uint8_t L[GQ_QK_K];
    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++, src += GQ_QK_K, w += GQ_QK_K) {
        uint16_t d, dmin;
        weighted_k4(src, w, 31, L, b->scales, &d, &dmin);
        b->d = d;
        b->dmin = dmin;
        gq_finish_q5_k(src, L, b);
    }
}

/* Q6_K: the reference's algorithm with the groups fitted under the
 * importance weights themselves (no sigma2 term). */
void gq_quant_weighted_q6_k(const float *src, void *dst, int64_t n, const float *w)
{
    struct gq_block_q6_k *b = dst;
    int8_t L[GQ_QK_K];
    float scales[16];
    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++, src += GQ_QK_K, w += GQ_QK_K) {
        for (int g = 0; g < 16; g++)
            scales[g] = gq_fit_scale_symmetric(16, 32, src + 16 * g, w + 16 * g, L + 16 * g);
        gq_finish_q6_k(src, scales, L, b);
    }
}
