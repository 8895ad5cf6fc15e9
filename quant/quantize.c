/* quantize.c -- scalar kernels from floats to each quantizable type.
 *
 * The quantizers are those of the formats' authors without an importance
 * matrix (what llama.cpp's ggml_quantize_chunk does when given none), and
 * they must write the same bytes as those for the same floats.  Three
 * things decide that besides the algorithm itself:
 *  - the order of float operations: every sum is accumulated left to right
 *    in float, products are grouped as the comments say, and the file is
 *    compiled with -ffp-contract=off so that no multiply-add is fused;
 *  - rounding: the K-quants round half to even by adding 1.5 * 2^23 (see
 *    gq_round_even), Q8_0 rounds half away from zero (roundf), the other
 *    legacy formats add an offset and truncate;
 *  - the float-to-integer conversions and their clamps, including where
 *    the reference narrows an int to 8 bits before clamping.
 * Blocks are independent of one another: a row may be quantized in any
 * split of whole blocks.
 *
 * Each kernel takes n elements, a positive multiple of the block size
 * (rows.c checks it).
 *
 * The group fits and the tails of the K-quant blocks (re-rounding against
 * the stored scales, packing) are shared with the importance-weighted
 * quantizers of weighted.c, which differ from these only in their fits;
 * they are the gq_fit_* and gq_finish_* functions declared in kernels.h. */
#include <config.h>

#include <float.h>
#include <math.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/kernels.h"

/* ------------------------------------------------------------------------ */
/* Plain types                                                               */

void gq_quant_f32(const float *src, void *dst, int64_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(float));
}

void gq_quant_f16(const float *src, void *dst, int64_t n)
{
    uint8_t *p = dst;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h = gq_f2h(src[i]);
        memcpy(p + 2 * i, &h, 2);
    }
}

void gq_quant_bf16(const float *src, void *dst, int64_t n)
{
    uint8_t *p = dst;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h = gq_f2bf(src[i]);
        memcpy(p + 2 * i, &h, 2);
    }
}

/* ------------------------------------------------------------------------ */
/* Legacy formats: one scale (and a minimum) per 32 weights                  */

/* The element of largest magnitude (the first one on ties), signed; 0 for
 * a block of zeros. */
static float signed_absmax(const float *x, int n)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

static void min_max(const float *x, int n, float *min, float *max)
{
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int j = 0; j < n; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    *min = lo;
    *max = hi;
}

static void store_q5_high_bits(uint8_t qh[4], uint32_t bits)
{
    qh[0] = (uint8_t)bits;
    qh[1] = (uint8_t)(bits >> 8);
    qh[2] = (uint8_t)(bits >> 16);
    qh[3] = (uint8_t)(bits >> 24);
}

/* Q4_0: the signed extreme maps to -8, so d = max / -8; q = x / d + 8,
 * rounded by truncating x / d + 8.5, at most 15. */
void gq_quant_q4_0(const float *src, void *dst, int64_t n)
{
    struct gq_block_q4_0 *b = dst;
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, src += GQ_QK) {
        const float d = signed_absmax(src, GQ_QK) / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = gq_f2h(d);
        for (int j = 0; j < GQ_QK / 2; j++) {
            int lo = (int8_t)(src[j] * id + 8.5f);
            int hi = (int8_t)(src[j + GQ_QK / 2] * id + 8.5f);
            if (lo > 15) lo = 15;
            if (hi > 15) hi = 15;
            b->qs[j] = (uint8_t)(lo | hi << 4);
        }
    }
}

/* Q4_1: d = (max - min) / 15, m = min; q = (x - min) / d, truncated after
 * adding 0.5, at most 15. */
void gq_quant_q4_1(const float *src, void *dst, int64_t n)
{
    struct gq_block_q4_1 *b = dst;
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, src += GQ_QK) {
        float min, max;
        min_max(src, GQ_QK, &min, &max);
        const float d = (max - min) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = gq_f2h(d);
        b->m = gq_f2h(min);
        for (int j = 0; j < GQ_QK / 2; j++) {
            int lo = (int8_t)((src[j] - min) * id + 0.5f);
            int hi = (int8_t)((src[j + GQ_QK / 2] - min) * id + 0.5f);
            if (lo > 15) lo = 15;
            if (hi > 15) hi = 15;
            b->qs[j] = (uint8_t)(lo | hi << 4);
        }
    }
}

/* Q5_0: as Q4_0 with 5 bits: d = max / -16, q = x / d + 16 by truncating
 * x / d + 16.5, at most 31. */
void gq_quant_q5_0(const float *src, void *dst, int64_t n)
{
    struct gq_block_q5_0 *b = dst;
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, src += GQ_QK) {
        const float d = signed_absmax(src, GQ_QK) / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        uint32_t qh = 0;
        b->d = gq_f2h(d);
        for (int j = 0; j < GQ_QK / 2; j++) {
            int lo = (int8_t)(src[j] * id + 16.5f);
            int hi = (int8_t)(src[j + GQ_QK / 2] * id + 16.5f);
            if (lo > 31) lo = 31;
            if (hi > 31) hi = 31;
            b->qs[j] = (uint8_t)((lo & 0xf) | (hi & 0xf) << 4);
            qh |= (uint32_t)((lo >> 4) & 1) << j;
            qh |= (uint32_t)((hi >> 4) & 1) << (j + GQ_QK / 2);
        }
        store_q5_high_bits(b->qh, qh);
    }
}

/* Q5_1: as Q4_1 with 5 bits: d = (max - min) / 31; no upper clamp (the
 * reference has none: the largest value lands on 31 exactly). */
void gq_quant_q5_1(const float *src, void *dst, int64_t n)
{
    struct gq_block_q5_1 *b = dst;
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, src += GQ_QK) {
        float min, max;
        min_max(src, GQ_QK, &min, &max);
        const float d = (max - min) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        uint32_t qh = 0;
        b->d = gq_f2h(d);
        b->m = gq_f2h(min);
        for (int j = 0; j < GQ_QK / 2; j++) {
            uint8_t lo = (uint8_t)((src[j] - min) * id + 0.5f);
            uint8_t hi = (uint8_t)((src[j + GQ_QK / 2] - min) * id + 0.5f);
            b->qs[j] = (uint8_t)((lo & 0xf) | (hi & 0xf) << 4);
            qh |= (uint32_t)((lo >> 4) & 1) << j;
            qh |= (uint32_t)((hi >> 4) & 1) << (j + GQ_QK / 2);
        }
        store_q5_high_bits(b->qh, qh);
    }
}

/* Q8_0: d = absmax / 127; q = roundf(x / d) (half away from zero). */
void gq_quant_q8_0(const float *src, void *dst, int64_t n)
{
    struct gq_block_q8_0 *b = dst;
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, src += GQ_QK) {
        float amax = 0.0f;
        for (int j = 0; j < GQ_QK; j++) {
            const float a = fabsf(src[j]);
            amax = amax > a ? amax : a;
        }
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = gq_f2h(d);
        for (int j = 0; j < GQ_QK; j++) b->qs[j] = (int8_t)roundf(src[j] * id);
    }
}

/* ------------------------------------------------------------------------ */
/* K-quants: super-blocks of 256 with quantized group scales                 */

/*
 * Fits x[0..n) as scale * L + min with L in 0..nmax and min <= 0 (the
 * asymmetric K-quants), minimising the weighted error sum w * err, where
 * err is |diff| when use_mad, else diff^2.  Starting from the plain
 * min/max fit, it tries nstep + 1 grid spacings, iscale = (nmax + rmin +
 * rdelta * is) / (max - min), and for each rounding solves the weighted
 * least-squares scale and min in closed form; the best fit seen wins (the
 * start wins ties).  Returns the scale, stores -min (>= 0) in *neg_min and
 * the levels in L; aux is scratch of n bytes.  The reference's
 * make_qkx2_quants, and its make_qkx3_quants given weights (nstep >= 1).
 */
float gq_fit_scale_min(int n, int nmax, const float *x, const float *w, uint8_t *L,
                       float *neg_min, uint8_t *aux, float rmin, float rdelta, int nstep,
                       int use_mad)
{
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *neg_min = -min;
        return 0.0f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1.0f / iscale;
    float best = 0.0f;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)gq_clamp_int(gq_round_even(iscale * (x[i] - min)), 0, nmax);
        float diff = scale * (float)L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best += w[i] * diff;
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
        for (int i = 0; i < n; i++) {
            const int l = gq_clamp_int(gq_round_even(iscale * (x[i] - min)), 0, nmax);
            const float wl = w[i] * (float)l;
            aux[i] = (uint8_t)l;
            sum_l += wl;
            sum_l2 += wl * (float)l;
            sum_xl += wl * x[i];
        }
        const float det = sum_w * sum_l2 - sum_l * sum_l;
        if (det > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float err = 0.0f;
            for (int i = 0; i < n; i++) {
                float diff = this_scale * (float)aux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                err += w[i] * diff;
            }
            if (err < best) {
                memcpy(L, aux, (size_t)n);
                best = err;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *neg_min = -min;
    return scale;
}

/*
 * Fits x[0..n) as scale * (L - nmax) with L - nmax in -nmax..nmax-1 (the
 * symmetric groups of Q6_K; with weights, those of Q3_K, Q4_0 and Q5_0 and
 * the Q3_K scales), weighting element i by w[i], or by x[i]^2 when w is
 * NULL.  The signed extreme maps to -nmax; then 18 grid spacings around
 * it, iscale = -(nmax + 0.1 * is) / max for is = -9..9, are tried, and the
 * one whose least-squares scale explains most of the weighted energy
 * (sumlx^2 / suml2) wins; ties keep the earlier one.  Returns the scale (0
 * for a group of zeros, L all 0 then; 0 also when every weight is 0) and
 * stores the levels L.  The reference's make_qx_quants with rmse_type 1.
 */
float gq_fit_scale_symmetric(int n, int nmax, const float *x, const float *w, int8_t *L)
{
    const float max = signed_absmax(x, n), amax = fabsf(max);
    if (amax < GQ_GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = (float)-nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        const int l = gq_clamp_int(gq_round_even(iscale * x[i]), -nmax, nmax - 1);
        const float wi = w ? w[i] : x[i] * x[i];
        L[i] = (int8_t)(l + nmax);
        sumlx += wi * x[i] * (float)l;   /* (w * x) * l */
        suml2 += wi * (float)l * (float)l;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < n; i++) {
            const int l = gq_clamp_int(gq_round_even(iscale * x[i]), -nmax, nmax - 1);
            const float wi = w ? w[i] : x[i] * x[i];
            sumlx += wi * x[i] * (float)l;
            suml2 += wi * (float)l * (float)l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++)
                L[i] = (int8_t)(nmax + gq_clamp_int(gq_round_even(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/*
 * Fits x[0..n) as scale * L with L in -nmax..nmax-1 (the Q3_K groups),
 * weighting by x^2: the signed extreme maps to -nmax, then up to five
 * passes move single elements to the level that the least-squares scale of
 * the others suggests, keeping a move when it raises sumlx^2 / suml2.
 * Returns the least-squares scale (0 for a group of zeros) and stores
 * L + nmax.
 */
static float fit_scale_q3(int n, int nmax, const float *x, int8_t *L)
{
    const float max = signed_absmax(x, n), amax = fabsf(max);
    if (amax < GQ_GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    const float iscale = (float)-nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        const int l = gq_clamp_int(gq_round_even(iscale * x[i]), -nmax, nmax - 1);
        const float w = x[i] * x[i];
        L[i] = (int8_t)l;
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * (float)L[i];
            if (slx > 0) {
                float sl2 = suml2 - w * (float)L[i] * (float)L[i];
                const int l = gq_clamp_int(gq_round_even(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (l != L[i]) {
                    slx += w * x[i] * (float)l;
                    sl2 += w * (float)l * (float)l;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)l;
                        sumlx = slx;
                        suml2 = sl2;
                        changed++;
                    }
                }
            }
        }
        if (!changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Packs 256 2-bit levels the Q2_K/Q3_K way: byte l of half h holds
 * weights 128h + l, +32, +64, +96 at bits 0, 2, 4, 6. */
static void pack_2bit(uint8_t qs[64], const uint8_t *L)
{
    for (int h = 0; h < 2; h++) {
        const uint8_t *q = L + 128 * h;
        for (int l = 0; l < 32; l++)
            qs[32 * h + l] = (uint8_t)(q[l] | q[l + 32] << 2 | q[l + 64] << 4 | q[l + 96] << 6);
    }
}

void gq_finish_q2_k(const float *x, uint8_t L[GQ_QK_K], struct gq_block_q2_k *b)
{
    const float d_all = gq_h2f(b->d), dmin_all = gq_h2f(b->dmin);
    for (int g = 0; g < 16; g++) {
        const float d = d_all * (float)(b->scales[g] & 0xf);
        if (d == 0.0f) continue;
        const float dm = dmin_all * (float)(b->scales[g] >> 4);
        for (int l = 0; l < 16; l++)
            L[16 * g + l] = (uint8_t)gq_clamp_int(gq_round_even((x[16 * g + l] + dm) / d), 0, 3);
    }
    pack_2bit(b->qs, L);
}

/* Q2_K: each group of 16 is fitted as scale * L - min with |x| weights and
 * absolute error; scales and mins are then quantized to 4 bits against
 * the largest of each (d = max_scale / 15, dmin = max_min / 15) and the
 * weights are re-rounded against the stored values. */
void gq_quant_q2_k(const float *src, void *dst, int64_t n)
{
    struct gq_block_q2_k *b = dst;
    uint8_t L[GQ_QK_K], aux[16];
    float w[16], scales[16], mins[16];

    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++, src += GQ_QK_K) {
        float max_scale = 0.0f, max_min = 0.0f;
        for (int g = 0; g < 16; g++) {
            const float *x = src + 16 * g;
            for (int l = 0; l < 16; l++) w[l] = fabsf(x[l]);
            scales[g] = gq_fit_scale_min(16, 3, x, w, L + 16 * g, &mins[g], aux, -0.5f, 0.1f, 15,
                                         1);
            if (scales[g] > max_scale) max_scale = scales[g];
            if (mins[g] > max_min) max_min = mins[g];
        }

        if (max_scale > 0) {
            const float iscale = 15.0f / max_scale;
            for (int g = 0; g < 16; g++) b->scales[g] = (uint8_t)gq_round_even(iscale * scales[g]);
            b->d = gq_f2h(max_scale / 15.0f);
        } else {
            memset(b->scales, 0, sizeof b->scales);
            b->d = gq_f2h(0.0f);
        }
        if (max_min > 0) {
            const float iscale = 15.0f / max_min;
            for (int g = 0; g < 16; g++) {
                const unsigned l = (unsigned)gq_round_even(iscale * mins[g]);
                b->scales[g] = (uint8_t)(b->scales[g] | l << 4);
            }
            b->dmin = gq_f2h(max_min / 15.0f);
        } else {
            b->dmin = gq_f2h(0.0f);
        }
        gq_finish_q2_k(src, L, b);
    }
}

void gq_set_q3_k_scales(const uint8_t ls[16], float d, struct gq_block_q3_k *b)
{
    memset(b->scales, 0, sizeof b->scales);
    for (int g = 0; g < 16; g++) {
        const int l = ls[g];
        if (g < 8)
            b->scales[g] = (uint8_t)(l & 0xf);
        else
            b->scales[g - 8] |= (uint8_t)((l & 0xf) << 4);
        b->scales[8 + g % 4] |= (uint8_t)((l >> 4) << (2 * (g / 4)));
    }
    b->d = gq_f2h(d);
}

void gq_finish_q3_k(const float *x, const uint8_t ls[16], float d, int8_t L[GQ_QK_K],
                    struct gq_block_q3_k *b)
{
    gq_set_q3_k_scales(ls, d, b);

    const float d_all = gq_h2f(b->d);
    for (int g = 0; g < 16; g++) {
        const float dg = d_all * (float)gq_k3_scale(b->scales, g);
        if (dg == 0.0f) continue;
        for (int l = 0; l < 16; l++)
            L[16 * g + l] = (int8_t)(gq_clamp_int(gq_round_even(x[16 * g + l] / dg), -4, 3) + 4);
    }

    /* Bit 2 into hmask (bit e / 32 of byte e % 32), the rest as Q2_K. */
    uint8_t low[GQ_QK_K];
    memset(b->hmask, 0, sizeof b->hmask);
    for (int e = 0; e < GQ_QK_K; e++) {
        int v = L[e];
        if (v > 3) {
            b->hmask[e % 32] |= (uint8_t)(1u << (e / 32));
            v -= 4;
        }
        low[e] = (uint8_t)v;
    }
    pack_2bit(b->qs, low);
}

/* Q3_K: each group of 16 is fitted symmetrically (fit_scale_q3); the 16
 * signed scales are quantized to 6 bits against the one of largest
 * magnitude (d = max_scale / -32), and the weights re-rounded against the
 * stored scales. */
void gq_quant_q3_k(const float *src, void *dst, int64_t n)
{
    struct gq_block_q3_k *b = dst;
    int8_t L[GQ_QK_K];
    float scales[16];
    uint8_t ls[16];

    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++, src += GQ_QK_K) {
        for (int g = 0; g < 16; g++) scales[g] = fit_scale_q3(16, 4, src + 16 * g, L + 16 * g);
        const float max_scale = signed_absmax(scales, 16);

        /* All levels 0 with d = 0 when every scale is 0: zero bytes. */
        float d = 0.0f;
        memset(ls, 0, sizeof ls);
        if (max_scale != 0.0f) {
            const float iscale = -32.0f / max_scale;
            for (int g = 0; g < 16; g++) {
                /* The reference narrows to 8 bits before clamping. */
                int8_t l8 = (int8_t)gq_round_even(iscale * scales[g]);
                ls[g] = (uint8_t)(gq_clamp_int(l8, -32, 31) + 32);
            }
            d = 1.0f / iscale;
        }
        gq_finish_q3_k(src, ls, d, L, b);
    }
}

void gq_pack_k4_levels(const uint8_t ls[8], const uint8_t lm[8], uint8_t out[12])
{
    for (int g = 0; g < 8; g++) {
        if (g < 4) {
            out[g] = ls[g];
            out[g + 4] = lm[g];
        } else {
            out[g + 4] = (uint8_t)((ls[g] & 0xf) | (lm[g] & 0xf) << 4);
            out[g - 4] |= (uint8_t)((ls[g] >> 4) << 6);
            out[g] |= (uint8_t)((lm[g] >> 4) << 6);
        }
    }
}

void gq_pack_k4_scales(const float scales[8], const float mins[8], uint8_t out[12],
                           uint16_t *d, uint16_t *dmin)
{
    float max_scale = 0.0f, max_min = 0.0f;
    for (int g = 0; g < 8; g++) {
        if (scales[g] > max_scale) max_scale = scales[g];
        if (mins[g] > max_min) max_min = mins[g];
    }
    const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    uint8_t ls[8], lm[8];
    for (int g = 0; g < 8; g++) {
        /* Narrowed to 8 bits first, then clamped, as in the reference. */
        ls[g] = (uint8_t)gq_round_even(inv_scale * scales[g]);
        lm[g] = (uint8_t)gq_round_even(inv_min * mins[g]);
        if (ls[g] > 63) ls[g] = 63;
        if (lm[g] > 63) lm[g] = 63;
    }
    gq_pack_k4_levels(ls, lm, out);
    *d = gq_f2h(max_scale / 63.0f);
    *dmin = gq_f2h(max_min / 63.0f);
}

/* Fits the 8 groups of 32 of one Q4_K/Q5_K super-block: weights
 * sqrt(mean x^2) + |x|, squared error, the given grid search. */
static void fit_k4_groups(const float *x, int nmax, float rmin, float rdelta, int nstep,
                          uint8_t L[GQ_QK_K], float scales[8], float mins[8])
{
    float w[32];
    uint8_t aux[32];
    for (int g = 0; g < 8; g++) {
        const float *xg = x + 32 * g;
        float sum_x2 = 0.0f;
        for (int l = 0; l < 32; l++) sum_x2 += xg[l] * xg[l];
        const float av_x = sqrtf(sum_x2 / 32.0f);
        for (int l = 0; l < 32; l++) w[l] = av_x + fabsf(xg[l]);
        scales[g] = gq_fit_scale_min(32, nmax, xg, w, L + 32 * g, &mins[g], aux, rmin, rdelta,
                                     nstep, 0);
    }
}

/* Re-rounds the weights of a Q4_K/Q5_K block against its stored scales
 * and mins; a group whose scale is zero keeps the levels of its fit. */
static void requantize_k4(const float *x, int nmax, const uint8_t scales[12], uint16_t dh,
                          uint16_t dminh, uint8_t L[GQ_QK_K])
{
    const float d_all = gq_h2f(dh), dmin_all = gq_h2f(dminh);
    for (int g = 0; g < 8; g++) {
        uint8_t sc, mn;
        gq_k4_scale_min(scales, g, &sc, &mn);
        const float d = d_all * (float)sc;
        if (d == 0.0f) continue;
        const float dm = dmin_all * (float)mn;
        for (int l = 0; l < 32; l++)
            L[32 * g + l] = (uint8_t)gq_clamp_int(gq_round_even((x[32 * g + l] + dm) / d), 0, nmax);
    }
}

void gq_finish_q4_k(const float *x, uint8_t L[GQ_QK_K], struct gq_block_q4_k *b)
{
    requantize_k4(x, 15, b->scales, b->d, b->dmin, L);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++)
            b->qs[32 * c + l] = (uint8_t)(L[64 * c + l] | L[64 * c + l + 32] << 4);
}

/* Q4_K: groups of 32 fitted as scale * L - min, L in 0..15 (21 grid
 * spacings from nmax - 1 by 0.1), 6-bit scales and mins. */
void gq_quant_q4_k(const float *src, void *dst, int64_t n)
{
    struct gq_block_q4_k *b = dst;
    uint8_t L[GQ_QK_K];
    float scales[8], mins[8];

    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++, src += GQ_QK_K) {
        fit_k4_groups(src, 15, -1.0f, 0.1f, 20, L, scales, mins);
        uint16_t d, dmin;
        gq_pack_k4_scales(scales, mins, b->scales, &d, &dmin);
        b->d = d;
        b->dmin = dmin;
        gq_finish_q4_k(src, L, b);
    }
}

void gq_finish_q5_k(const float *x, uint8_t L[GQ_QK_K], struct gq_block_q5_k *b)
{
    requantize_k4(x, 31, b->scales, b->d, b->dmin, L);
    memset(b->qh, 0, sizeof b->qh);
    for (int c = 0; c < 4; c++) {
        for (int l = 0; l < 32; l++) {
            int lo = L[64 * c + l], hi = L[64 * c + l + 32];
            if (lo > 15) {
                lo -= 16;
                b->qh[l] |= (uint8_t)(1u << (2 * c));
            }
            if (hi > 15) {
                hi -= 16;
                b->qh[l] |= (uint8_t)(2u << (2 * c));
            }
            b->qs[32 * c + l] = (uint8_t)(lo | hi << 4);
        }
    }
}

/* Q5_K: as Q4_K with L in 0..31 (16 grid spacings from nmax - 0.5). */
void gq_quant_q5_k(const float *src, void *dst, int64_t n)
{
    struct gq_block_q5_k *b = dst;
    uint8_t L[GQ_QK_K];
    float scales[8], mins[8];

    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++, src += GQ_QK_K) {
        fit_k4_groups(src, 31, -0.5f, 0.1f, 15, L, scales, mins);
        uint16_t d, dmin;
        gq_pack_k4_scales(scales, mins, b->scales, &d, &dmin);
        b->d = d;
        b->dmin = dmin;
        gq_finish_q5_k(src, L, b);
    }
}

void gq_finish_q6_k(const float *x, const float scales[16], int8_t L[GQ_QK_K],
                    struct gq_block_q6_k *b)
{
    const float max_scale = signed_absmax(scales, 16), amax = fabsf(max_scale);
    if (amax < GQ_GROUP_EPS) {
        memset(b, 0, sizeof *b);
        return;
    }

    const float iscale = -128.0f / max_scale;
    b->d = gq_f2h(1.0f / iscale);
    for (int g = 0; g < 16; g++) {
        const int l = gq_round_even(iscale * scales[g]);
        b->scales[g] = (int8_t)(l < 127 ? l : 127);
    }

    const float d_all = gq_h2f(b->d);
    for (int g = 0; g < 16; g++) {
        const float d = d_all * (float)b->scales[g];
        if (d == 0.0f) continue;
        for (int l = 0; l < 16; l++)
            L[16 * g + l] = (int8_t)(gq_clamp_int(gq_round_even(x[16 * g + l] / d), -32, 31) + 32);
    }

    for (int h = 0; h < 2; h++) {
        const int8_t *q = L + 128 * h;
        uint8_t *ql = b->ql + 64 * h, *qh = b->qh + 32 * h;
        for (int l = 0; l < 32; l++) {
            ql[l] = (uint8_t)((q[l] & 0xf) | (q[l + 64] & 0xf) << 4);
            ql[l + 32] = (uint8_t)((q[l + 32] & 0xf) | (q[l + 96] & 0xf) << 4);
            qh[l] = (uint8_t)((q[l] >> 4) | (q[l + 32] >> 4) << 2 | (q[l + 64] >> 4) << 4 |
                              (q[l + 96] >> 4) << 6);
        }
    }
}

/* Q6_K: groups of 16 fitted symmetrically with 6-bit levels; the signed
 * scales are quantized to 8 bits against the one of largest magnitude
 * (d = max_scale / -128) and the weights re-rounded against them.  A
 * super-block whose scales are all (near) zero is stored as zeros. */
void gq_quant_q6_k(const float *src, void *dst, int64_t n)
{
    struct gq_block_q6_k *b = dst;
    int8_t L[GQ_QK_K];
    float scales[16];

    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++, src += GQ_QK_K) {
        for (int g = 0; g < 16; g++)
            scales[g] = gq_fit_scale_symmetric(16, 32, src + 16 * g, NULL, L + 16 * g);
        gq_finish_q6_k(src, scales, L, b);
    }
}

/* Q8_K: the signed extreme maps to -127 (d = max / -127 as a float),
 * q rounded to even, at most 127; bsums hold the sums of 16. */
void gq_quant_q8_k(const float *src, void *dst, int64_t n)
{
    struct gq_block_q8_k *b = dst;
    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++, src += GQ_QK_K) {
        const float max = signed_absmax(src, GQ_QK_K);
        if (max == 0.0f) {
            memset(b, 0, sizeof *b);
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < GQ_QK_K; j++) {
            const int v = gq_round_even(iscale * src[j]);
            b->qs[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int g = 0; g < 16; g++) {
            int sum = 0;
            for (int l = 0; l < 16; l++) sum += b->qs[16 * g + l];
            b->bsums[g] = (int16_t)sum;
        }
        b->d = 1.0f / iscale;
    }
}
