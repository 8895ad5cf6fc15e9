/*
 * vkernels.h -- the vectorised row kernels, written once over a small
 * vocabulary of vector operations; internal to quant/, not installed.
 *
 * quant/kernels-avx2.c and quant/kernels-avx512.c each define the
 * vocabulary below for their instruction set (VL float lanes per vector)
 * and then include this file, which defines static kernels with the
 * signatures of kernels.h and the table VK_TABLE listing them:
 * vk_dequant_T, vk_quant_T and vk_quant_weighted_T do what gq_dequant_T,
 * gq_quant_T and gq_quant_weighted_T of dequant.c, quantize.c and
 * weighted.c do.
 *
 * Every kernel writes exactly what the scalar kernel of quantize.c,
 * dequant.c or weighted.c writes, bit for bit, for every input.  How:
 *  - A vector lane never mixes the float sums of different elements: the
 *    K-quant fits run one whole group per lane (lane j of vector v holds
 *    group v * VL + j of the blocks being fitted), and each lane performs
 *    the scalar code's float operations in the scalar code's order.
 *    The fits of a K-quant block's group scales (weighted kernels) run
 *    one block per lane the same way.  Element-wise work (dequantization,
 *    re-rounding against stored scales) has no sums; a sum that spans a
 *    whole block or row (the weighted kernels' sum of squares) stays one
 *    scalar chain.
 *  - Only operations that are exact IEEE per lane are used: add, sub,
 *    mul, div, sqrt, compares, min/max with the operand order of the C
 *    comparisons they replace, integer ops and exact conversions; the
 *    files are compiled with -ffp-contract=off and never call a fused
 *    multiply-add.
 *  - Blocks holding a NaN or an infinity (where the scalar results rest on
 *    out-of-range float-to-integer conversions), and the legacy blocks
 *    whose scale inverse overflows, are handed to the scalar kernel
 *    itself, so that they match by construction; so are the weighted
 *    kernels' runs of blocks with a NaN or an infinity among their floats
 *    or weights (the whole row for the legacy types).
 *
 * Vocabulary (all static inline in the including file):
 *   VL                      lanes per vector (8 or 16)
 *   vf, vi, vm              float vector, int32 vector, lane mask
 *   vf_set(f) vf_zero() vf_load(p) vf_store(p, a)
 *   vf_add vf_sub vf_mul vf_div (a, b)  vf_sqrt(a) vf_abs(a) vf_neg(a)
 *   vf_min(a, b)            a < b ? a : b, per lane (NaN: b)
 *   vf_max(a, b)            a > b ? a : b, per lane (NaN: b)
 *   vf_lt vf_le vf_gt vf_ge vf_eq (a, b)  ordered compares (false on NaN);
 *                           vf_ne(a, b) as C's != (true on NaN)
 *   vf_sel(m, a, b)         m ? a : b;  vi_sel(m, a, b) the same on ints
 *   vm_and(m, n) vm_any(m)  vm_first(m): first set lane, -1 if none
 *   vf_round_clamp(a, lo, hi)  the scalar round_even() trick, then clamped
 *   vf_cvt(i)               int32 to float;  vi_cvtt(a): float to int32,
 *                           truncating
 *   vi_set(k) vi_add vi_sub vi_and vi_or vi_min vi_max (a, b)
 *   vi_gt(a, b)             signed compare, a mask;  vi_srl(a, k) vi_sll(a, k)
 *   vi_srlv(a, b)           per-lane logical shift right by b
 *   vi_iota()               0, 1, ..., VL - 1
 *   vi_max_reduce(a)        largest lane, as a signed int
 *   vf_max_reduce(a)        largest lane of a vector without NaN
 *   vi_load_u8 vi_load_i8 vi_load_u16 (p)  VL bytes / halfwords widened
 *   vi_store(p, a)          VL int32 to p (aligned to 64)
 *   vi_store_u8(p, a)       VL lanes, each -128..127, as bytes
 *   vi_store_u16(p, a)      VL lanes, each 0..65535, as halfwords
 *   vi_bits(a, k)           bit k of each lane, lane j at bit j
 *   vf_as_vi(a) vi_as_vf(a) reinterpret the bits
 *   vh_load(p)              VL IEEE halves to floats (exact)
 *   vh_store(p, a)          VL floats to halves, nearest even (NaN: any)
 */
#ifndef GGUF_QUANT_VKERNELS_H
#define GGUF_QUANT_VKERNELS_H

#include <math.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/kernels.h"

#define VK_ALIGN __attribute__((aligned(64)))

/* Below this a Q6_K group's largest magnitude counts as zero. */
#define VK_GROUP_EPS 1e-15f

/* ------------------------------------------------------------------------ */
/* Scalar helpers: the same operations as quantize.c's                        */

static inline int vk_round_even(float x)
{
    float v = x + 12582912.0f;
    int32_t bits;
    memcpy(&bits, &v, 4);
    return (bits & 0x007fffff) - 0x00400000;
}

/* 1 when the n floats at x (n a multiple of VL) are all finite. */
static inline int vk_finite(const float *x, int n)
{
    vi acc = vi_set(0);
    const vi mag = vi_set(0x7fffffff);
    for (int i = 0; i < n; i += VL) acc = vi_max(acc, vi_and(vf_as_vi(vf_load(x + i)), mag));
    return vi_max_reduce(acc) < 0x7f800000;
}

/* ------------------------------------------------------------------------ */
/* Plain types                                                               */

static void vk_dequant_f16(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    int64_t i = 0;
    for (; i + VL <= n; i += VL) vf_store(dst + i, vh_load(p + 2 * i));
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        dst[i] = gq_h2f(h);
    }
}

static void vk_dequant_bf16(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    int64_t i = 0;
    for (; i + VL <= n; i += VL) vf_store(dst + i, vi_as_vf(vi_sll(vi_load_u16(p + 2 * i), 16)));
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        dst[i] = gq_bf2f(h);
    }
}

/* F16: the hardware conversion rounds as gq_f2h() does; a NaN is first
 * replaced by the quiet NaN of its sign, which converts to 0x7e00 | sign,
 * gq_f2h()'s answer for every NaN. */
static void vk_quant_f16(const float *src, void *dst, int64_t n)
{
    uint8_t *p = dst;
    const vi sign = vi_set((int32_t)0x80000000u), qnan = vi_set(0x7fc00000);
    int64_t i = 0;
    for (; i + VL <= n; i += VL) {
        vf x = vf_load(src + i);
        const vm nan = vf_ne(x, x);
        const vi nan_x = vi_or(vi_and(vf_as_vi(x), sign), qnan);
        x = vf_sel(nan, vi_as_vf(nan_x), x);
        vh_store(p + 2 * i, x);
    }
    for (; i < n; i++) {
        const uint16_t h = gq_f2h(src[i]);
        memcpy(p + 2 * i, &h, 2);
    }
}

/* BF16: gq_f2bf() on integer lanes. */
static void vk_quant_bf16(const float *src, void *dst, int64_t n)
{
    uint8_t *p = dst;
    const vi mag = vi_set(0x7fffffff), inf = vi_set(0x7f800000);
    const vi one = vi_set(1), round = vi_set(0x7fff), quiet = vi_set(0x40);
    int64_t i = 0;
    for (; i + VL <= n; i += VL) {
        const vi u = vf_as_vi(vf_load(src + i));
        const vm nan = vi_gt(vi_and(u, mag), inf);
        const vi rounded = vi_srl(vi_add(vi_add(u, round), vi_and(vi_srl(u, 16), one)), 16);
        const vi quieted = vi_or(vi_srl(u, 16), quiet);
        vi_store_u16(p + 2 * i, vi_sel(nan, quieted, rounded));
    }
    for (; i < n; i++) {
        const uint16_t h = gq_f2bf(src[i]);
        memcpy(p + 2 * i, &h, 2);
    }
}

/* ------------------------------------------------------------------------ */
/* Legacy formats                                                            */

/* 32 / VL vectors per block. */
#define VK_PER32 (32 / VL)

static void vk_dequant_q4_0(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q4_0 *b = src;
    const vi low = vi_set(0xf), eight = vi_set(8);
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, dst += GQ_QK) {
        const vf d = vf_set(gq_h2f(b->d));
        for (int j = 0; j < GQ_QK / 2; j += VL) {
            const vi q = vi_load_u8(b->qs + j);
            vf_store(dst + j, vf_mul(vf_cvt(vi_sub(vi_and(q, low), eight)), d));
            vf_store(dst + j + GQ_QK / 2, vf_mul(vf_cvt(vi_sub(vi_srl(q, 4), eight)), d));
        }
    }
}

static void vk_dequant_q4_1(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q4_1 *b = src;
    const vi low = vi_set(0xf);
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, dst += GQ_QK) {
        const vf d = vf_set(gq_h2f(b->d)), m = vf_set(gq_h2f(b->m));
        for (int j = 0; j < GQ_QK / 2; j += VL) {
            const vi q = vi_load_u8(b->qs + j);
            vf_store(dst + j, vf_add(vf_mul(vf_cvt(vi_and(q, low)), d), m));
            vf_store(dst + j + GQ_QK / 2, vf_add(vf_mul(vf_cvt(vi_srl(q, 4)), d), m));
        }
    }
}

/* Bit 4 of the quants j .. j + VL - 1 of a Q5_0/Q5_1 block, at bit 4. */
static inline vi vk_q5_high(uint32_t qh, int j)
{
    return vi_sll(vi_and(vi_srlv(vi_set((int32_t)qh), vi_add(vi_iota(), vi_set(j))), vi_set(1)), 4);
}

static inline uint32_t vk_load_u32(const uint8_t p[4])
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void vk_dequant_q5_0(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q5_0 *b = src;
    const vi low = vi_set(0xf), sixteen = vi_set(16);
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, dst += GQ_QK) {
        const vf d = vf_set(gq_h2f(b->d));
        const uint32_t qh = vk_load_u32(b->qh);
        for (int j = 0; j < GQ_QK / 2; j += VL) {
            const vi q = vi_load_u8(b->qs + j);
            const vi lo = vi_or(vi_and(q, low), vk_q5_high(qh, j));
            const vi hi = vi_or(vi_srl(q, 4), vk_q5_high(qh, j + 16));
            vf_store(dst + j, vf_mul(vf_cvt(vi_sub(lo, sixteen)), d));
            vf_store(dst + j + GQ_QK / 2, vf_mul(vf_cvt(vi_sub(hi, sixteen)), d));
        }
    }
}

static void vk_dequant_q5_1(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q5_1 *b = src;
    const vi low = vi_set(0xf);
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, dst += GQ_QK) {
        const vf d = vf_set(gq_h2f(b->d)), m = vf_set(gq_h2f(b->m));
        const uint32_t qh = vk_load_u32(b->qh);
        for (int j = 0; j < GQ_QK / 2; j += VL) {
            const vi q = vi_load_u8(b->qs + j);
            const vi lo = vi_or(vi_and(q, low), vk_q5_high(qh, j));
            const vi hi = vi_or(vi_srl(q, 4), vk_q5_high(qh, j + 16));
            vf_store(dst + j, vf_add(vf_mul(vf_cvt(lo), d), m));
            vf_store(dst + j + GQ_QK / 2, vf_add(vf_mul(vf_cvt(hi), d), m));
        }
    }
}

static void vk_dequant_q8_0(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q8_0 *b = src;
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, dst += GQ_QK) {
        const vf d = vf_set(gq_h2f(b->d));
        for (int j = 0; j < GQ_QK; j += VL)
            vf_store(dst + j, vf_mul(vf_cvt(vi_load_i8(b->qs + j)), d));
    }
}

/* The signed element of largest magnitude of the n finite floats at x (n
 * a multiple of VL), the first one on ties, and +0 when all are zeros
 * (quantize.c's signed_absmax). */
static inline float vk_signed_absmax(const float *x, int n)
{
    vf m = vf_zero();
    for (int k = 0; k < n; k += VL) m = vf_max(vf_abs(vf_load(x + k)), m);
    const float a = vf_max_reduce(m);
    if (a == 0.0f) return 0.0f; /* not a -0 element */
    for (int k = 0; k < n; k += VL) {
        const int j = vm_first(vf_eq(vf_abs(vf_load(x + k)), vf_set(a)));
        if (j >= 0) return x[k + j];
    }
    return 0.0f; /* not reached: some element has magnitude a */
}

/* Q4_0 (Q5_0): the signed extreme maps to -8 (-16), d = max / -8
 * (-16); q is x / d + 8.5 (16.5) truncated, at most 15 (31).  A block
 * whose 1 / d overflows (d tiny) goes to the scalar kernel. */
static void vk_quant_q4_0(const float *src, void *dst, int64_t n)
{
    struct gq_block_q4_0 *b = dst;
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, src += GQ_QK) {
        if (!vk_finite(src, GQ_QK)) {
            gq_quant_q4_0(src, b, GQ_QK);
            continue;
        }
        const float d = vk_signed_absmax(src, GQ_QK) / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        if (!isfinite(id)) {
            gq_quant_q4_0(src, b, GQ_QK);
            continue;
        }
        b->d = gq_f2h(d);
        uint8_t q[GQ_QK];
        for (int j = 0; j < GQ_QK; j += VL) {
            vi l = vi_cvtt(vf_add(vf_mul(vf_load(src + j), vf_set(id)), vf_set(8.5f)));
            vi_store_u8(q + j, vi_min(l, vi_set(15)));
        }
        for (int j = 0; j < GQ_QK / 2; j++) b->qs[j] = (uint8_t)(q[j] | q[j + GQ_QK / 2] << 4);
    }
}

static void vk_quant_q5_0(const float *src, void *dst, int64_t n)
{
    struct gq_block_q5_0 *b = dst;
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, src += GQ_QK) {
        if (!vk_finite(src, GQ_QK)) {
            gq_quant_q5_0(src, b, GQ_QK);
            continue;
        }
        const float d = vk_signed_absmax(src, GQ_QK) / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        if (!isfinite(id)) {
            gq_quant_q5_0(src, b, GQ_QK);
            continue;
        }
        b->d = gq_f2h(d);
        uint8_t q[GQ_QK];
        uint32_t qh = 0;
        for (int j = 0; j < GQ_QK; j += VL) {
            vi l = vi_cvtt(vf_add(vf_mul(vf_load(src + j), vf_set(id)), vf_set(16.5f)));
            l = vi_min(l, vi_set(31));
            qh |= vi_bits(l, 4) << j;
            vi_store_u8(q + j, l);
        }
        for (int j = 0; j < GQ_QK / 2; j++)
            b->qs[j] = (uint8_t)((q[j] & 0xf) | (q[j + GQ_QK / 2] & 0xf) << 4);
        b->qh[0] = (uint8_t)qh;
        b->qh[1] = (uint8_t)(qh >> 8);
        b->qh[2] = (uint8_t)(qh >> 16);
        b->qh[3] = (uint8_t)(qh >> 24);
    }
}

/* Q8_0: q = roundf(x * id), half away from zero: truncate, then step one
 * away from zero when the dropped fraction (exact) is at least one half. */
static void vk_quant_q8_0(const float *src, void *dst, int64_t n)
{
    struct gq_block_q8_0 *b = dst;
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, src += GQ_QK) {
        if (!vk_finite(src, GQ_QK)) {
            gq_quant_q8_0(src, b, GQ_QK);
            continue;
        }
        vf m = vf_zero();
        for (int k = 0; k < VK_PER32; k++) m = vf_max(m, vf_abs(vf_load(src + VL * k)));
        const float amax = vf_max_reduce(m);
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        if (!isfinite(id)) {
            gq_quant_q8_0(src, b, GQ_QK);
            continue;
        }
        b->d = gq_f2h(d);
        const vf vid = vf_set(id), half = vf_set(0.5f), mhalf = vf_set(-0.5f);
        for (int j = 0; j < GQ_QK; j += VL) {
            const vf t = vf_mul(vf_load(src + j), vid);
            vi q = vi_cvtt(t);
            const vf frac = vf_sub(t, vf_cvt(q));
            q = vi_sel(vf_ge(frac, half), vi_add(q, vi_set(1)), q);
            q = vi_sel(vf_le(frac, mhalf), vi_sub(q, vi_set(1)), q);
            vi_store_u8((uint8_t *)b->qs + j, q);
        }
    }
}

/* Q8_K, the activations of K-quant products: the signed value of largest
 * magnitude (the first such element) sets iscale = -127 / max; each q is
 * round_even(iscale * x), at most 127, never below -127 when iscale is
 * finite (else the scalar kernel runs). */
static void vk_quant_q8_k(const float *src, void *dst, int64_t n)
{
    struct gq_block_q8_k *b = dst;
    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++, src += GQ_QK_K) {
        if (!vk_finite(src, GQ_QK_K)) {
            gq_quant_q8_k(src, b, GQ_QK_K);
            continue;
        }
        const float max = vk_signed_absmax(src, GQ_QK_K);
        if (max == 0.0f) {
            memset(b, 0, sizeof *b);
            continue;
        }
        const float iscale = -127.0f / max;
        if (!isfinite(iscale)) { /* a subnormal max */
            gq_quant_q8_k(src, b, GQ_QK_K);
            continue;
        }
        const vf vs = vf_set(iscale);
        for (int j = 0; j < GQ_QK_K; j += VL)
            vi_store_u8((uint8_t *)b->qs + j, vf_round_clamp(vf_mul(vf_load(src + j), vs), -128, 127));
        for (int g = 0; g < 16; g++) {
            int sum = 0;
            for (int l = 0; l < 16; l++) sum += b->qs[16 * g + l];
            b->bsums[g] = (int16_t)sum;
        }
        b->d = 1.0f / iscale;
    }
}

/* ------------------------------------------------------------------------ */
/* K-quants: dequantization                                                  */

static void vk_dequant_q4_k(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q4_k *b = src;
    const vi low = vi_set(0xf);
    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++) {
        const float d = gq_h2f(b->d), dmin = gq_h2f(b->dmin);
        for (int c = 0; c < 4; c++, dst += 64) {
            const uint8_t *q = b->qs + 32 * c;
            uint8_t sc, mn;
            gq_k4_scale_min(b->scales, 2 * c, &sc, &mn);
            const vf d1 = vf_set(d * (float)sc), m1 = vf_set(dmin * (float)mn);
            gq_k4_scale_min(b->scales, 2 * c + 1, &sc, &mn);
            const vf d2 = vf_set(d * (float)sc), m2 = vf_set(dmin * (float)mn);
            for (int l = 0; l < 32; l += VL) {
                const vi v = vi_load_u8(q + l);
                vf_store(dst + l, vf_sub(vf_mul(d1, vf_cvt(vi_and(v, low))), m1));
                vf_store(dst + l + 32, vf_sub(vf_mul(d2, vf_cvt(vi_srl(v, 4))), m2));
            }
        }
    }
}

static void vk_dequant_q5_k(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q5_k *b = src;
    const vi low = vi_set(0xf), one = vi_set(1);
    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++) {
        const float d = gq_h2f(b->d), dmin = gq_h2f(b->dmin);
        for (int c = 0; c < 4; c++, dst += 64) {
            const uint8_t *q = b->qs + 32 * c;
            uint8_t sc, mn;
            gq_k4_scale_min(b->scales, 2 * c, &sc, &mn);
            const vf d1 = vf_set(d * (float)sc), m1 = vf_set(dmin * (float)mn);
            gq_k4_scale_min(b->scales, 2 * c + 1, &sc, &mn);
            const vf d2 = vf_set(d * (float)sc), m2 = vf_set(dmin * (float)mn);
            for (int l = 0; l < 32; l += VL) {
                const vi v = vi_load_u8(q + l), h = vi_load_u8(b->qh + l);
                const vi lo = vi_or(vi_and(v, low), vi_sll(vi_and(vi_srl(h, 2 * c), one), 4));
                const vi hi = vi_or(vi_srl(v, 4), vi_sll(vi_and(vi_srl(h, 2 * c + 1), one), 4));
                vf_store(dst + l, vf_sub(vf_mul(d1, vf_cvt(lo)), m1));
                vf_store(dst + l + 32, vf_sub(vf_mul(d2, vf_cvt(hi)), m2));
            }
        }
    }
}

static void vk_dequant_q6_k(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q6_k *b = src;
    const vi low = vi_set(0xf), three = vi_set(3), off = vi_set(32);
    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++) {
        const float d = gq_h2f(b->d);
        for (int h = 0; h < 2; h++, dst += 128) {
            const uint8_t *ql = b->ql + 64 * h, *qh = b->qh + 32 * h;
            const int8_t *sc = b->scales + 8 * h;
            /* VL divides 16, so one vector never straddles two scales. */
            for (int l = 0; l < 32; l += VL) {
                const int s = l / 16;
                const vi a = vi_load_u8(ql + l), c = vi_load_u8(ql + l + 32);
                const vi hb = vi_load_u8(qh + l);
                const vi q1 = vi_sub(vi_or(vi_and(a, low), vi_sll(vi_and(hb, three), 4)), off);
                const vi q2 =
                    vi_sub(vi_or(vi_and(c, low), vi_sll(vi_and(vi_srl(hb, 2), three), 4)), off);
                const vi q3 =
                    vi_sub(vi_or(vi_srl(a, 4), vi_sll(vi_and(vi_srl(hb, 4), three), 4)), off);
                const vi q4 = vi_sub(vi_or(vi_srl(c, 4), vi_sll(vi_srl(hb, 6), 4)), off);
                vf_store(dst + l, vf_mul(vf_set(d * (float)sc[s]), vf_cvt(q1)));
                vf_store(dst + l + 32, vf_mul(vf_set(d * (float)sc[s + 2]), vf_cvt(q2)));
                vf_store(dst + l + 64, vf_mul(vf_set(d * (float)sc[s + 4]), vf_cvt(q3)));
                vf_store(dst + l + 96, vf_mul(vf_set(d * (float)sc[s + 6]), vf_cvt(q4)));
            }
        }
    }
}

static void vk_dequant_q8_k(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q8_k *b = src;
    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++, dst += GQ_QK_K) {
        const vf d = vf_set(b->d);
        for (int j = 0; j < GQ_QK_K; j += VL)
            vf_store(dst + j, vf_mul(d, vf_cvt(vi_load_i8(b->qs + j))));
    }
}

/* ------------------------------------------------------------------------ */
/* The group fits of the K-quants and of the weighted quantizers            */

/* Vectors a K-quant fit runs side by side: the float sums of one lane
 * form chains of dependent additions, and two independent vectors keep
 * the adder busy while each waits for its previous sum. */
#define VK_NV 2
/* Loops over the vectors of a fit; unrolled, so that the per-vector state
 * stays in registers rather than in the arrays that name it. */
#define VK_EACH_V _Pragma("GCC unroll 2") for (int v = 0; v < nv; v++)

/* The transposed layout of a fit of nv * VL groups of gs floats (gs at
 * most 32): element i of group v * VL + j at [(nv * i + v) * VL + j], so
 * that one vector load gives element i of VL groups. */
#define VK_FIT_FLOATS (32 * VK_NV * VL)
#define VK_AT(a, i, v) ((a) + ((i) * nv + (v)) * VL)

/* The ng groups of gs consecutive floats at x into the transposed t;
 * the groups from ng to nv * VL, padding, are zeros. */
static inline __attribute__((always_inline)) void
vk_transpose(const int nv, const int gs, const float *x, int ng, float *t)
{
    for (int g = 0; g < nv * VL; g++)
        for (int i = 0; i < gs; i++) VK_AT(t, i, g / VL)[g % VL] = g < ng ? x[gs * g + i] : 0.0f;
}

/*
 * quantize.c's gq_fit_scale_min() with squared error for the nv * VL
 * groups (nv is 1 or VK_NV) of gs floats whose elements and weights are
 * given transposed in xt and wt; lane j of vector v fits group v * VL + j.
 * The lanes follow the scalar code's branches by masks: a lane whose
 * candidate loses, or whose determinant is not positive, keeps its state.
 * Instead of copying the levels of every winning candidate, a lane
 * remembers the candidate's iscale and the minimum it rounded against,
 * and the levels are recomputed once at the end (the same operations on
 * the same values give the same levels).  Writes the scales, the negated
 * minimums and the levels, group g's at L[gs g ..].
 */
static inline __attribute__((always_inline)) void
vk_fit_min(const int nv, const int gs, const float *xt, const float *wt, int nmax, float rmin,
           float rdelta, int nstep, float *scale_out, float *neg_min_out, uint8_t *L)
{
    float lt[VK_FIT_FLOATS] VK_ALIGN;
    int32_t it[VK_FIT_FLOATS] VK_ALIGN;
    vf min[VK_NV], max[VK_NV], sum_w[VK_NV], sum_x[VK_NV], min0[VK_NV];
    vf iscale[VK_NV], scale[VK_NV], best[VK_NV], best_iscale[VK_NV], best_min[VK_NV];
    vm flat[VK_NV];

    VK_EACH_V {
        min[v] = max[v] = vf_load(VK_AT(xt, 0, v));
        sum_w[v] = vf_load(VK_AT(wt, 0, v));
        sum_x[v] = vf_mul(sum_w[v], min[v]);
    }
    for (int i = 1; i < gs; i++) {
        VK_EACH_V {
            const vf xi = vf_load(VK_AT(xt, i, v)), wi = vf_load(VK_AT(wt, i, v));
            min[v] = vf_min(xi, min[v]);
            max[v] = vf_max(xi, max[v]);
            sum_w[v] = vf_add(sum_w[v], wi);
            sum_x[v] = vf_add(sum_x[v], vf_mul(wi, xi));
        }
    }
    VK_EACH_V {
        min[v] = vf_min(vf_zero(), min[v]); /* if (min > 0) min = 0 */
        flat[v] = vf_eq(max[v], min[v]);
        min0[v] = min[v];
        iscale[v] = vf_div(vf_set((float)nmax), vf_sub(max[v], min[v]));
        scale[v] = vf_div(vf_set(1.0f), iscale[v]);
        best[v] = vf_zero();
    }
    for (int i = 0; i < gs; i++) {
        VK_EACH_V {
            const vf xi = vf_load(VK_AT(xt, i, v)), wi = vf_load(VK_AT(wt, i, v));
            const vf l = vf_cvt(vf_round_clamp(vf_mul(iscale[v], vf_sub(xi, min[v])), 0, nmax));
            const vf diff = vf_sub(vf_add(vf_mul(scale[v], l), min[v]), xi);
            best[v] = vf_add(best[v], vf_mul(wi, vf_mul(diff, diff)));
        }
    }
    VK_EACH_V {
        best_iscale[v] = iscale[v];
        best_min[v] = min[v];
    }

    for (int is = 0; is <= nstep; is++) {
        const float num = rmin + rdelta * (float)is + (float)nmax;
        vf sum_l[VK_NV], sum_l2[VK_NV], sum_xl[VK_NV], this_scale[VK_NV], this_min[VK_NV];
        vf err[VK_NV];
        vm solvable[VK_NV], better[VK_NV];
        int any = 0;
        VK_EACH_V {
            iscale[v] = vf_div(vf_set(num), vf_sub(max[v], min[v]));
            sum_l[v] = sum_l2[v] = sum_xl[v] = vf_zero();
        }
        for (int i = 0; i < gs; i++) {
            VK_EACH_V {
                const vf xi = vf_load(VK_AT(xt, i, v)), wi = vf_load(VK_AT(wt, i, v));
                const vf l =
                    vf_cvt(vf_round_clamp(vf_mul(iscale[v], vf_sub(xi, min[v])), 0, nmax));
                const vf wl = vf_mul(wi, l);
                vf_store(VK_AT(lt, i, v), l);
                sum_l[v] = vf_add(sum_l[v], wl);
                sum_l2[v] = vf_add(sum_l2[v], vf_mul(wl, l));
                sum_xl[v] = vf_add(sum_xl[v], vf_mul(wl, xi));
            }
        }
        VK_EACH_V {
            const vf det = vf_sub(vf_mul(sum_w[v], sum_l2[v]), vf_mul(sum_l[v], sum_l[v]));
            solvable[v] = vf_gt(det, vf_zero());
            any |= vm_any(solvable[v]);
            this_scale[v] =
                vf_div(vf_sub(vf_mul(sum_w[v], sum_xl[v]), vf_mul(sum_x[v], sum_l[v])), det);
            this_min[v] =
                vf_div(vf_sub(vf_mul(sum_l2[v], sum_x[v]), vf_mul(sum_l[v], sum_xl[v])), det);
            const vm positive = vf_gt(this_min[v], vf_zero());
            this_min[v] = vf_sel(positive, vf_zero(), this_min[v]);
            this_scale[v] = vf_sel(positive, vf_div(sum_xl[v], sum_l2[v]), this_scale[v]);
            err[v] = vf_zero();
        }
        if (!any) continue;
        for (int i = 0; i < gs; i++) {
            VK_EACH_V {
                const vf xi = vf_load(VK_AT(xt, i, v)), wi = vf_load(VK_AT(wt, i, v));
                const vf l = vf_load(VK_AT(lt, i, v));
                const vf diff = vf_sub(vf_add(vf_mul(this_scale[v], l), this_min[v]), xi);
                err[v] = vf_add(err[v], vf_mul(wi, vf_mul(diff, diff)));
            }
        }
        VK_EACH_V {
            better[v] = vm_and(solvable[v], vf_lt(err[v], best[v]));
            best_iscale[v] = vf_sel(better[v], iscale[v], best_iscale[v]);
            best_min[v] = vf_sel(better[v], min[v], best_min[v]);
            best[v] = vf_sel(better[v], err[v], best[v]);
            scale[v] = vf_sel(better[v], this_scale[v], scale[v]);
            min[v] = vf_sel(better[v], this_min[v], min[v]);
        }
    }

    /* A flat group (max == min) gets levels 0, scale 0 and its own min. */
    for (int i = 0; i < gs; i++) {
        VK_EACH_V {
            const vf xi = vf_load(VK_AT(xt, i, v));
            const vi l = vf_round_clamp(vf_mul(best_iscale[v], vf_sub(xi, best_min[v])), 0, nmax);
            vi_store(VK_AT(it, i, v), vi_sel(flat[v], vi_set(0), l));
        }
    }
    for (int g = 0; g < nv * VL; g++)
        for (int i = 0; i < gs; i++) L[gs * g + i] = (uint8_t)VK_AT(it, i, g / VL)[g % VL];
    VK_EACH_V {
        vf_store(scale_out + VL * v, vf_sel(flat[v], vf_zero(), scale[v]));
        vf_store(neg_min_out + VL * v, vf_neg(vf_sel(flat[v], min0[v], min[v])));
    }
}

/*
 * quantize.c's gq_fit_scale_symmetric() for the nv * VL groups (nv is 1
 * or VK_NV) of gs floats given transposed in xt, with the weights given
 * the same way in wt, or x^2 when wt is NULL; levels -nmax..nmax-1.  As
 * in vk_fit_min() a lane remembers its winning iscale and the levels are
 * recomputed at the end.  Writes the scales and the levels L + nmax,
 * group g's at L[gs g ..].
 */
static inline __attribute__((always_inline)) void
vk_fit_symmetric(const int nv, const int gs, const float *xt, const float *wt, int nmax,
                 float *scale_out, int8_t *L)
{
    int32_t it[VK_FIT_FLOATS] VK_ALIGN;
    vf amax[VK_NV], max[VK_NV], iscale[VK_NV], sumlx[VK_NV], suml2[VK_NV];
    vf scale[VK_NV], best[VK_NV], best_iscale[VK_NV];
    vm zero[VK_NV];

    VK_EACH_V amax[v] = max[v] = vf_zero();
    for (int i = 0; i < gs; i++) {
        VK_EACH_V {
            const vf xi = vf_load(VK_AT(xt, i, v)), a = vf_abs(xi);
            const vm larger = vf_gt(a, amax[v]);
            amax[v] = vf_sel(larger, a, amax[v]);
            max[v] = vf_sel(larger, xi, max[v]);
        }
    }
    VK_EACH_V {
        zero[v] = vf_lt(amax[v], vf_set(VK_GROUP_EPS));
        iscale[v] = vf_div(vf_set((float)-nmax), max[v]);
        sumlx[v] = suml2[v] = vf_zero();
    }
    for (int i = 0; i < gs; i++) {
        VK_EACH_V {
            const vf xi = vf_load(VK_AT(xt, i, v));
            const vf l = vf_cvt(vf_round_clamp(vf_mul(iscale[v], xi), -nmax, nmax - 1));
            const vf w = wt ? vf_load(VK_AT(wt, i, v)) : vf_mul(xi, xi);
            sumlx[v] = vf_add(sumlx[v], vf_mul(vf_mul(w, xi), l));
            suml2[v] = vf_add(suml2[v], vf_mul(vf_mul(w, l), l));
        }
    }
    VK_EACH_V {
        scale[v] = vf_sel(vf_ne(suml2[v], vf_zero()), vf_div(sumlx[v], suml2[v]), vf_zero());
        best[v] = vf_mul(scale[v], sumlx[v]);
        best_iscale[v] = iscale[v];
    }

    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        const float num = -((float)nmax + 0.1f * (float)is);
        VK_EACH_V {
            iscale[v] = vf_div(vf_set(num), max[v]);
            sumlx[v] = suml2[v] = vf_zero();
        }
        for (int i = 0; i < gs; i++) {
            VK_EACH_V {
                const vf xi = vf_load(VK_AT(xt, i, v));
                const vf l = vf_cvt(vf_round_clamp(vf_mul(iscale[v], xi), -nmax, nmax - 1));
                const vf w = wt ? vf_load(VK_AT(wt, i, v)) : vf_mul(xi, xi);
                sumlx[v] = vf_add(sumlx[v], vf_mul(vf_mul(w, xi), l));
                suml2[v] = vf_add(suml2[v], vf_mul(vf_mul(w, l), l));
            }
        }
        VK_EACH_V {
            const vm better = vm_and(vf_gt(suml2[v], vf_zero()),
                                     vf_gt(vf_mul(sumlx[v], sumlx[v]), vf_mul(best[v], suml2[v])));
            const vf this_scale = vf_div(sumlx[v], suml2[v]);
            best_iscale[v] = vf_sel(better, iscale[v], best_iscale[v]);
            scale[v] = vf_sel(better, this_scale, scale[v]);
            best[v] = vf_sel(better, vf_mul(this_scale, sumlx[v]), best[v]);
        }
    }

    for (int i = 0; i < gs; i++) {
        VK_EACH_V {
            const vf xi = vf_load(VK_AT(xt, i, v));
            const vi l = vi_add(vf_round_clamp(vf_mul(best_iscale[v], xi), -nmax, nmax - 1),
                                vi_set(nmax));
            vi_store(VK_AT(it, i, v), vi_sel(zero[v], vi_set(0), l));
        }
    }
    for (int g = 0; g < nv * VL; g++)
        for (int i = 0; i < gs; i++) L[gs * g + i] = (int8_t)VK_AT(it, i, g / VL)[g % VL];
    VK_EACH_V vf_store(scale_out + VL * v, vf_sel(zero[v], vf_zero(), scale[v]));
}

/* ------------------------------------------------------------------------ */
/* Q4_K and Q5_K quantization                                                */

/*
 * The group fit of quantize.c's fit_k4_groups() (squared error, weights
 * sqrt(mean x^2) + |x|) for nv * VL groups of 32 consecutive floats at x
 * (nv is 1 or VK_NV): the weights made per lane, then vk_fit_min().
 */
static inline __attribute__((always_inline)) void
vk_fit_k4(const int nv, const float *x, int nmax, float rmin, float rdelta, int nstep,
          float *scale_out, float *neg_min_out, uint8_t *L)
{
    float xt[VK_FIT_FLOATS] VK_ALIGN, wt[VK_FIT_FLOATS] VK_ALIGN;
    vk_transpose(nv, 32, x, nv * VL, xt);

    vf sum_x2[VK_NV];
    VK_EACH_V sum_x2[v] = vf_zero();
    for (int i = 0; i < 32; i++) {
        VK_EACH_V {
            const vf xi = vf_load(VK_AT(xt, i, v));
            sum_x2[v] = vf_add(sum_x2[v], vf_mul(xi, xi));
        }
    }
    VK_EACH_V {
        const vf av_x = vf_sqrt(vf_div(sum_x2[v], vf_set(32.0f)));
        for (int i = 0; i < 32; i++)
            vf_store(VK_AT(wt, i, v), vf_add(av_x, vf_abs(vf_load(VK_AT(xt, i, v)))));
    }
    vk_fit_min(nv, 32, xt, wt, nmax, rmin, rdelta, nstep, scale_out, neg_min_out, L);
}

/* quantize.c's requantize_k4(): re-rounds one block's levels against its
 * stored scales; a group whose scale is zero keeps its fitted levels. */
static void vk_requantize_k4(const float *x, int nmax, const uint8_t scales[12], uint16_t dh,
                             uint16_t dminh, uint8_t L[GQ_QK_K])
{
    const float d_all = gq_h2f(dh), dmin_all = gq_h2f(dminh);
    for (int g = 0; g < 8; g++) {
        uint8_t sc, mn;
        gq_k4_scale_min(scales, g, &sc, &mn);
        const float d = d_all * (float)sc;
        if (d == 0.0f) continue;
        const vf vd = vf_set(d), dm = vf_set(dmin_all * (float)mn);
        for (int l = 0; l < 32; l += VL) {
            const vf v = vf_div(vf_add(vf_load(x + 32 * g + l), dm), vd);
            vi_store_u8(L + 32 * g + l, vf_round_clamp(v, 0, nmax));
        }
    }
}

/* Stores VL lanes holding 0..255 as bytes (vi_store_u8 takes -128..127:
 * the same bytes once 256 is taken from the lanes above 127). */
static inline void vk_store_byte(uint8_t *p, vi a)
{
    vi_store_u8(p, vi_sub(a, vi_sll(vi_srl(a, 7), 8)));
}

/* quantize.c's gq_finish_q4_k() (q5 = 0) or gq_finish_q5_k() (q5 = 1):
 * the block at out has its scales, d and dmin; re-rounds the 256 floats x
 * against them and packs the levels (0..nmax), VL bytes at a time:
 * chunk c of qs holds groups 2c and 2c + 1 in its nibbles, Q5_K's bit 4
 * of element l of group g at bit g of qh[l].  L is overwritten. */
static void vk_finish_k4(const float *x, uint8_t L[GQ_QK_K], void *out, int q5)
{
    const vi low = vi_set(0xf), one = vi_set(1);
    if (q5) {
        struct gq_block_q5_k *b = out;
        vk_requantize_k4(x, 31, b->scales, b->d, b->dmin, L);
        for (int l = 0; l < 32; l += VL) {
            vi qh = vi_set(0);
            for (int c = 0; c < 4; c++) {
                const vi lo = vi_load_u8(L + 64 * c + l), hi = vi_load_u8(L + 64 * c + l + 32);
                qh = vi_or(qh, vi_sll(vi_and(vi_srl(lo, 4), one), 2 * c));
                qh = vi_or(qh, vi_sll(vi_and(vi_srl(hi, 4), one), 2 * c + 1));
                vk_store_byte(b->qs + 32 * c + l,
                              vi_or(vi_and(lo, low), vi_sll(vi_and(hi, low), 4)));
            }
            vk_store_byte(b->qh + l, qh);
        }
    } else {
        struct gq_block_q4_k *b = out;
        vk_requantize_k4(x, 15, b->scales, b->d, b->dmin, L);
        for (int c = 0; c < 4; c++) {
            for (int l = 0; l < 32; l += VL) {
                const vi lo = vi_load_u8(L + 64 * c + l), hi = vi_load_u8(L + 64 * c + l + 32);
                vk_store_byte(b->qs + 32 * c + l, vi_or(lo, vi_sll(hi, 4)));
            }
        }
    }
}

/* Blocks per fit: a vector of VL groups of 32 covers VL / 8 blocks. */
#define VK_K4_BLOCKS (VK_NV * VL / 8)

/* Q4_K (q5 = 0) or Q5_K (q5 = 1), VK_K4_BLOCKS blocks per fit; a last
 * partial fit runs on a copy padded with zeros, with one vector when
 * that covers the blocks left. */
static void vk_quant_k4(const float *src, void *dst, int64_t n, int q5)
{
    const int nmax = q5 ? 31 : 15;
    const float rmin = q5 ? -0.5f : -1.0f;
    const int nstep = q5 ? 15 : 20;
    const size_t bsize = q5 ? sizeof(struct gq_block_q5_k) : sizeof(struct gq_block_q4_k);
    const int64_t nb = n / GQ_QK_K;
    float pad[GQ_QK_K * VK_K4_BLOCKS];
    float scales[VK_NV * VL], mins[VK_NV * VL];
    uint8_t L[32 * VK_NV * VL];

    for (int64_t ib = 0; ib < nb; ib += VK_K4_BLOCKS) {
        const int nblk = nb - ib < VK_K4_BLOCKS ? (int)(nb - ib) : VK_K4_BLOCKS;
        const float *x = src + GQ_QK_K * ib;
        uint8_t *out = (uint8_t *)dst + bsize * (size_t)ib;
        if (!vk_finite(x, GQ_QK_K * nblk)) {
            if (q5)
                gq_quant_q5_k(x, out, (int64_t)GQ_QK_K * nblk);
            else
                gq_quant_q4_k(x, out, (int64_t)GQ_QK_K * nblk);
            continue;
        }
        if (nblk == VK_K4_BLOCKS) {
            vk_fit_k4(VK_NV, x, nmax, rmin, 0.1f, nstep, scales, mins, L);
        } else {
            memset(pad, 0, sizeof pad);
            memcpy(pad, x, sizeof(float) * GQ_QK_K * (size_t)nblk);
            if (nblk <= VL / 8)
                vk_fit_k4(1, pad, nmax, rmin, 0.1f, nstep, scales, mins, L);
            else
                vk_fit_k4(VK_NV, pad, nmax, rmin, 0.1f, nstep, scales, mins, L);
        }

        for (int k = 0; k < nblk; k++, out += bsize) {
            uint16_t d, dmin;
            if (q5) {
                struct gq_block_q5_k *b = (struct gq_block_q5_k *)out;
                gq_pack_k4_scales(scales + 8 * k, mins + 8 * k, b->scales, &d, &dmin);
                b->d = d;
                b->dmin = dmin;
            } else {
                struct gq_block_q4_k *b = (struct gq_block_q4_k *)out;
                gq_pack_k4_scales(scales + 8 * k, mins + 8 * k, b->scales, &d, &dmin);
                b->d = d;
                b->dmin = dmin;
            }
            vk_finish_k4(x + GQ_QK_K * k, L + GQ_QK_K * k, out, q5);
        }
    }
}

static void vk_quant_q4_k(const float *src, void *dst, int64_t n)
{
    vk_quant_k4(src, dst, n, 0);
}

static void vk_quant_q5_k(const float *src, void *dst, int64_t n)
{
    vk_quant_k4(src, dst, n, 1);
}

/* ------------------------------------------------------------------------ */
/* Q6_K quantization                                                         */

/* Vectors per Q6_K block: 16 groups of 16. */
#define VK_Q6_NV (16 / VL)

/* quantize.c's gq_finish_q6_k(): the 16 group scales quantized against
 * the signed extreme, the 256 floats x re-rounded against them, the
 * levels packed into b.  L is overwritten. */
static inline __attribute__((always_inline)) void
vk_finish_q6(const float *x, const float scales[16], int8_t L[GQ_QK_K], struct gq_block_q6_k *b)
{
    float max_scale = 0.0f, amax = 0.0f;
    for (int g = 0; g < 16; g++) {
        if (fabsf(scales[g]) > amax) {
            amax = fabsf(scales[g]);
            max_scale = scales[g];
        }
    }
    if (amax < VK_GROUP_EPS) {
        memset(b, 0, sizeof *b);
        return;
    }
    const float iscale = -128.0f / max_scale;
    b->d = gq_f2h(1.0f / iscale);
    for (int g = 0; g < 16; g++) {
        const int l = vk_round_even(iscale * scales[g]);
        b->scales[g] = (int8_t)(l < 127 ? l : 127);
    }

    const float d_all = gq_h2f(b->d);
    for (int g = 0; g < 16; g++) {
        const float d = d_all * (float)b->scales[g];
        if (d == 0.0f) continue;
        for (int l = 0; l < 16; l += VL) {
            const vf v = vf_div(vf_load(x + 16 * g + l), vf_set(d));
            vi_store_u8((uint8_t *)L + 16 * g + l, vi_add(vf_round_clamp(v, -32, 31), vi_set(32)));
        }
    }

    /* Levels 0..63: the low nibbles of elements l and l + 64 of each half
     * in ql[l], of l + 32 and l + 96 in ql[l + 32], the top two bits of
     * all four in qh[l]. */
    const vi low = vi_set(0xf);
    for (int h = 0; h < 2; h++) {
        const uint8_t *q = (const uint8_t *)L + 128 * h;
        uint8_t *ql = b->ql + 64 * h, *qh = b->qh + 32 * h;
        for (int l = 0; l < 32; l += VL) {
            const vi q0 = vi_load_u8(q + l), q1 = vi_load_u8(q + l + 32);
            const vi q2 = vi_load_u8(q + l + 64), q3 = vi_load_u8(q + l + 96);
            vk_store_byte(ql + l, vi_or(vi_and(q0, low), vi_sll(vi_and(q2, low), 4)));
            vk_store_byte(ql + l + 32, vi_or(vi_and(q1, low), vi_sll(vi_and(q3, low), 4)));
            const vi top = vi_or(vi_or(vi_srl(q0, 4), vi_sll(vi_srl(q1, 4), 2)),
                                 vi_or(vi_sll(vi_srl(q2, 4), 4), vi_sll(vi_srl(q3, 4), 6)));
            vk_store_byte(qh + l, top);
        }
    }
}

/* quantize.c's gq_quant_q6_k(): each block's 16 groups of 16 fitted
 * symmetrically (weights x^2) in one vk_fit_symmetric(). */
static void vk_quant_q6_k(const float *src, void *dst, int64_t n)
{
    struct gq_block_q6_k *b = dst;
    float xt[VK_FIT_FLOATS] VK_ALIGN;
    int8_t L[GQ_QK_K];
    float scales[16];

    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++, src += GQ_QK_K) {
        if (!vk_finite(src, GQ_QK_K)) {
            gq_quant_q6_k(src, b, GQ_QK_K);
            continue;
        }
        vk_transpose(VK_Q6_NV, 16, src, 16, xt);
        vk_fit_symmetric(VK_Q6_NV, 16, xt, NULL, 32, scales, L);
        vk_finish_q6(src, scales, L, b);
    }
}

/* ------------------------------------------------------------------------ */
/* Importance-weighted quantization                                          */

/*
 * vk_quant_weighted_T does what weighted.c's gq_quant_weighted_T does, bit
 * for bit, by the same rules as the kernels above.  The group fits run
 * one group per lane (vk_fit_min, vk_fit_symmetric) on weights made per
 * lane in weighted.c's order of operations; the K-quants then fit their
 * blocks' 8 or 16 group scales (and mins) one block per lane
 * (vk_fit_positive, vk_fit_symmetric), VL blocks at a time.
 *
 * The weights are w[i] = qw[i] * sqrt(sigma2 + x[i]^2) (Q6_K: qw[i]
 * itself), where sigma2 comes from one left-to-right sum of squares over a
 * super-block (K-quants) or the whole row (legacy types): a single chain
 * of additions that no lane split may reorder, so it runs as scalar code,
 * VL super-blocks' chains side by side.  A run of blocks (the row, for
 * the legacy types, whose sigma2 spans it) holding a NaN or an infinity
 * among its floats or its weights goes to the scalar kernel.
 */

/* Nearest integer, ties to even, of each lane: gq_round_even(), garbage
 * included, with no clamp. */
static inline vi vk_round(vf a)
{
    return vf_round_clamp(a, INT32_MIN, INT32_MAX);
}

/*
 * weighted.c's fit_scale_positive() (make_qp_quants) for VL sets of n
 * values (n at most 16) given transposed, value i of set j at xt[VL i + j]
 * and its weight at wt[VL i + j]: lane j fits set j.  The passes that
 * move single levels run while some lane still moves one; a lane whose
 * pass moved none stops there, as the scalar loop breaks.  As in the
 * scalar code a level is kept as a byte (a negative level wraps) while the
 * sums of the last rounding take the int.  Writes the scales and the
 * levels, set j's at L[n j ..].
 */
static inline __attribute__((always_inline)) void
vk_fit_positive(const int n, int nmax, const float *xt, const float *wt, float *scale_out,
                uint8_t *L)
{
    /* The byte levels, 0..255, as floats (exact): the scalar code's
     * (float)L[i]. */
    float lt[16 * VL] VK_ALIGN;
    const vi byte = vi_set(0xff), top = vi_set(nmax);

    vf max = vf_zero();
    for (int i = 0; i < n; i++) max = vf_max(max, vf_load(xt + VL * i)); /* NaN wins */
    const vm zero = vf_lt(max, vf_set(VK_GROUP_EPS));
    vf iscale = vf_div(vf_set((float)nmax), max);
    for (int i = 0; i < n; i++)
        vf_store(lt + VL * i, vf_cvt(vi_and(vk_round(vf_mul(iscale, vf_load(xt + VL * i))), byte)));
    const vf scale = vf_div(vf_set(1.0f), iscale);
    vf best = vf_zero();
    for (int i = 0; i < n; i++) {
        const vf xi = vf_load(xt + VL * i), wi = vf_load(wt + VL * i);
        const vf diff = vf_sub(xi, vf_mul(scale, vf_load(lt + VL * i)));
        best = vf_add(best, vf_mul(vf_mul(wi, diff), diff));
    }
    for (int is = -4; is <= 4; is++) {
        if (is == 0) continue;
        const vf iscale_is = vf_div(vf_set(0.1f * (float)is + (float)nmax), max);
        const vf scale_is = vf_div(vf_set(1.0f), iscale_is);
        vf err = vf_zero();
        for (int i = 0; i < n; i++) {
            const vf xi = vf_load(xt + VL * i), wi = vf_load(wt + VL * i);
            const vi l = vi_min(vk_round(vf_mul(iscale_is, xi)), top);
            const vf diff = vf_sub(xi, vf_mul(scale_is, vf_cvt(l)));
            err = vf_add(err, vf_mul(vf_mul(wi, diff), diff));
        }
        const vm better = vf_lt(err, best);
        best = vf_sel(better, err, best);
        iscale = vf_sel(better, iscale_is, iscale);
    }

    vf sumlx = vf_zero(), suml2 = vf_zero();
    for (int i = 0; i < n; i++) {
        const vf xi = vf_load(xt + VL * i), wi = vf_load(wt + VL * i);
        const vi l = vi_min(vk_round(vf_mul(iscale, xi)), top);
        const vf lf = vf_cvt(l);
        vf_store(lt + VL * i, vf_cvt(vi_and(l, byte)));
        sumlx = vf_add(sumlx, vf_mul(vf_mul(wi, xi), lf));
        suml2 = vf_add(suml2, vf_mul(vf_mul(wi, lf), lf));
    }
    /* active: 1 in the lanes whose passes go on (not the zero ones; a NaN
     * maximum is not below the threshold, as in the scalar code). */
    vi active = vi_sel(zero, vi_set(0), vi_set(1));
    for (int pass = 0; pass < 5; pass++) {
        const vm on = vi_gt(active, vi_set(0));
        if (!vm_any(on)) break;
        vi changed = vi_set(0);
        for (int i = 0; i < n; i++) {
            const vf xi = vf_load(xt + VL * i), wi = vf_load(wt + VL * i);
            const vf lb = vf_load(lt + VL * i), wx = vf_mul(wi, xi);
            vf slx = vf_sub(sumlx, vf_mul(wx, lb));
            vf sl2 = vf_sub(suml2, vf_mul(vf_mul(wi, lb), lb));
            vm move = vm_and(on, vm_and(vf_gt(slx, vf_zero()), vf_gt(sl2, vf_zero())));
            const vi l = vi_min(vk_round(vf_div(vf_mul(xi, sl2), slx)), top);
            const vf lf = vf_cvt(l); /* l and the byte are exact as floats: != is the ints' */
            move = vm_and(move, vf_ne(lf, lb));
            slx = vf_add(slx, vf_mul(wx, lf));
            sl2 = vf_add(sl2, vf_mul(vf_mul(wi, lf), lf));
            move = vm_and(move, vf_gt(vf_mul(vf_mul(slx, slx), suml2),
                                      vf_mul(vf_mul(sumlx, sumlx), sl2)));
            vf_store(lt + VL * i, vf_sel(move, vf_cvt(vi_and(l, byte)), lb));
            sumlx = vf_sel(move, slx, sumlx);
            suml2 = vf_sel(move, sl2, suml2);
            changed = vi_sel(move, vi_set(1), changed);
        }
        active = vi_sel(on, changed, vi_set(0));
    }

    const vf s = vf_sel(vf_gt(suml2, vf_zero()), vf_div(sumlx, suml2), vf_zero());
    vf_store(scale_out, vf_sel(zero, vf_zero(), s));
    for (int i = 0; i < n; i++)
        vf_store(lt + VL * i, vf_sel(zero, vf_zero(), vf_load(lt + VL * i)));
    for (int j = 0; j < VL; j++)
        for (int i = 0; i < n; i++) L[n * j + i] = (uint8_t)lt[VL * i + j];
}

/* quantize.c's pack_2bit(): 256 levels 0..3, byte l of half h holding
 * elements 128h + l, + 32, + 64, + 96 at bits 0, 2, 4, 6. */
static inline void vk_pack_2bit(uint8_t qs[64], const uint8_t L[GQ_QK_K])
{
    for (int h = 0; h < 2; h++) {
        const uint8_t *q = L + 128 * h;
        for (int l = 0; l < 32; l += VL) {
            const vi q0 = vi_load_u8(q + l), q1 = vi_load_u8(q + l + 32);
            const vi q2 = vi_load_u8(q + l + 64), q3 = vi_load_u8(q + l + 96);
            vk_store_byte(qs + 32 * h + l, vi_or(vi_or(q0, vi_sll(q1, 2)),
                                                 vi_or(vi_sll(q2, 4), vi_sll(q3, 6))));
        }
    }
}

/* quantize.c's gq_finish_q2_k(): b->scales, d and dmin set; re-rounds the
 * 256 floats x against them and packs the levels.  L is overwritten. */
static void vk_finish_q2(const float *x, uint8_t L[GQ_QK_K], struct gq_block_q2_k *b)
{
    const float d_all = gq_h2f(b->d), dmin_all = gq_h2f(b->dmin);
    for (int g = 0; g < 16; g++) {
        const float d = d_all * (float)(b->scales[g] & 0xf);
        if (d == 0.0f) continue;
        const vf vd = vf_set(d), dm = vf_set(dmin_all * (float)(b->scales[g] >> 4));
        for (int l = 0; l < 16; l += VL) {
            const vf v = vf_div(vf_add(vf_load(x + 16 * g + l), dm), vd);
            vi_store_u8(L + 16 * g + l, vf_round_clamp(v, 0, 3));
        }
    }
    vk_pack_2bit(b->qs, L);
}

/* quantize.c's gq_finish_q3_k(): stores the scale levels ls and d, then
 * re-rounds the 256 floats x against the stored scales and packs the
 * levels 0..7: bit 2 of element e at bit e / 32 of hmask[e % 32], the low
 * two bits as Q2_K's.  L is overwritten. */
static void vk_finish_q3(const float *x, const uint8_t ls[16], float d, int8_t L[GQ_QK_K],
                         struct gq_block_q3_k *b)
{
    gq_set_q3_k_scales(ls, d, b);
    const float d_all = gq_h2f(b->d);
    uint8_t *q = (uint8_t *)L;
    for (int g = 0; g < 16; g++) {
        const float dg = d_all * (float)gq_k3_scale(b->scales, g);
        if (dg == 0.0f) continue;
        for (int l = 0; l < 16; l += VL) {
            const vf v = vf_div(vf_load(x + 16 * g + l), vf_set(dg));
            vi_store_u8(q + 16 * g + l, vi_add(vf_round_clamp(v, -4, 3), vi_set(4)));
        }
    }
    const vi one = vi_set(1), three = vi_set(3);
    for (int l = 0; l < 32; l += VL) {
        vi hm = vi_set(0);
        for (int h = 0; h < 2; h++) {
            vi low[4];
            for (int m = 0; m < 4; m++) {
                const vi v = vi_load_u8(q + 128 * h + 32 * m + l);
                hm = vi_or(hm, vi_sll(vi_and(vi_srl(v, 2), one), 4 * h + m));
                low[m] = vi_and(v, three);
            }
            vk_store_byte(b->qs + 32 * h + l, vi_or(vi_or(low[0], vi_sll(low[1], 2)),
                                                    vi_or(vi_sll(low[2], 4), vi_sll(low[3], 6))));
        }
        vk_store_byte(b->hmask + l, hm);
    }
}

/* s[k] = the sum of x[i]^2 over super-block k of the m at x (m a
 * constant, at most 8), left to right, as weighted.c's sum_squares(): a
 * chain per block, the m chains interleaved so that their latencies
 * overlap. */
static inline __attribute__((always_inline)) void
vk_sum_squares_m(const float *x, const int m, float *s)
{
    float acc[8];
    for (int k = 0; k < m; k++) acc[k] = 0.0f;
    for (int i = 0; i < GQ_QK_K; i++) {
        _Pragma("GCC unroll 8") for (int k = 0; k < m; k++) {
            const float xi = x[GQ_QK_K * k + i];
            acc[k] += xi * xi;
        }
    }
    for (int k = 0; k < m; k++) s[k] = acc[k];
}

/* The same for the nblk (at most VL) super-blocks at x, eight at a time,
 * then the rest; s[k] for k < nblk. */
static inline void vk_sum_squares(const float *x, int nblk, float s[VL])
{
    int k = 0;
    for (; k + 8 <= nblk; k += 8) vk_sum_squares_m(x + GQ_QK_K * k, 8, s + k);
    switch (nblk - k) {
    case 7: vk_sum_squares_m(x + GQ_QK_K * k, 7, s + k); break;
    case 6: vk_sum_squares_m(x + GQ_QK_K * k, 6, s + k); break;
    case 5: vk_sum_squares_m(x + GQ_QK_K * k, 5, s + k); break;
    case 4: vk_sum_squares_m(x + GQ_QK_K * k, 4, s + k); break;
    case 3: vk_sum_squares_m(x + GQ_QK_K * k, 3, s + k); break;
    case 2: vk_sum_squares_m(x + GQ_QK_K * k, 2, s + k); break;
    case 1: vk_sum_squares_m(x + GQ_QK_K * k, 1, s + k); break;
    default: break;
    }
}

/*
 * The inputs of a weighted fit of the ng groups of gs floats at x with
 * importances qw, transposed into xt and wt (groups past ng are zeros):
 * wt = qw * sqrt(sig + x^2), sig[g] the sigma2 of group g, and sw[g] the
 * sum of group g's weights from 0, left to right (weighted.c's
 * element_weights()); when sig is NULL, wt is qw and sw is not written.
 */
static inline __attribute__((always_inline)) void
vk_weights(const int nv, const int gs, const float *x, const float *qw, int ng, const float *sig,
           float *xt, float *wt, float *sw)
{
    vk_transpose(nv, gs, x, ng, xt);
    vk_transpose(nv, gs, qw, ng, wt);
    if (!sig) return;
    VK_EACH_V {
        const vf s2 = vf_load(sig + VL * v);
        vf sum = vf_zero();
        for (int i = 0; i < gs; i++) {
            const vf xi = vf_load(VK_AT(xt, i, v));
            const vf wi = vf_mul(vf_load(VK_AT(wt, i, v)), vf_sqrt(vf_add(s2, vf_mul(xi, xi))));
            vf_store(VK_AT(wt, i, v), wi);
            sum = vf_add(sum, wi);
        }
        vf_store(sw + VL * v, sum);
    }
}

/* The weighted types: the K-quants (vk_weighted_k), then the legacy types
 * (vk_weighted_legacy). */
enum vk_wtype {
    VK_W_Q2_K, VK_W_Q3_K, VK_W_Q4_K, VK_W_Q5_K, VK_W_Q6_K,
    VK_W_Q4_0, VK_W_Q4_1, VK_W_Q5_0, VK_W_Q5_1
};

/* The grid of every weighted asymmetric fit, weighted.c's GRID_*. */
#define VK_W_RMIN -0.9f
#define VK_W_RDELTA 0.05f
#define VK_W_NSTEP 36

/* Group size, levels (nmax) and asymmetry of each weighted type's fit. */
static inline int vk_w_gs(int t)
{
    return t == VK_W_Q2_K || t == VK_W_Q3_K || t == VK_W_Q6_K ? 16 : 32;
}
static inline int vk_w_nmax(int t)
{
    static const int nmax[] = {3, 4, 15, 31, 32, 8, 15, 16, 31};
    return nmax[t];
}
static inline int vk_w_asym(int t)
{
    return t == VK_W_Q2_K || t == VK_W_Q4_K || t == VK_W_Q5_K || t == VK_W_Q4_1 ||
           t == VK_W_Q5_1;
}

/* One fit of type t over ng groups (at most nv * VL) at x with
 * importances qw and per-group sigma2 sig (unused for Q6_K): scales,
 * negated minimums (asymmetric types), weight sums and levels, group g's
 * at [g] and L[gs g ..] (Lu for the asymmetric types, Ls for the
 * others); the padding groups' too. */
static inline __attribute__((always_inline)) void
vk_wfit(const int nv, const int t, const float *x, const float *qw, int ng, const float *sig,
        float *scales, float *mins, float *sw, uint8_t *Lu, int8_t *Ls)
{
    const int gs = vk_w_gs(t);
    float xt[VK_FIT_FLOATS] VK_ALIGN, wt[VK_FIT_FLOATS] VK_ALIGN;
    vk_weights(nv, gs, x, qw, ng, t == VK_W_Q6_K ? NULL : sig, xt, wt, sw);
    if (vk_w_asym(t))
        vk_fit_min(nv, gs, xt, wt, vk_w_nmax(t), VK_W_RMIN, VK_W_RDELTA, VK_W_NSTEP, scales, mins,
                   Lu);
    else
        vk_fit_symmetric(nv, gs, xt, wt, vk_w_nmax(t), scales, Ls);
}

/* The scalar kernel of weighted type t (the fallback). */
static inline gq_quant_weighted_fn vk_w_scalar(int t)
{
    static const gq_quant_weighted_fn fn[] = {
        gq_quant_weighted_q2_k, gq_quant_weighted_q3_k, gq_quant_weighted_q4_k,
        gq_quant_weighted_q5_k, gq_quant_weighted_q6_k, gq_quant_weighted_q4_0,
        gq_quant_weighted_q4_1, gq_quant_weighted_q5_0, gq_quant_weighted_q5_1,
    };
    return fn[t];
}

/*
 * The weighted K-quants (t up to VK_W_Q6_K), VL super-blocks at a time:
 * their sums of squares; the group fits, each covering the blocks whose
 * groups fill VK_NV vectors (one or two super-blocks of 16 groups, two or
 * four of 8), a last partial fit padded with zero groups and run on one
 * vector when that holds them; the fits of the blocks' scales and mins,
 * one block a lane; then each block's tail.
 */
static inline __attribute__((always_inline)) void
vk_weighted_k(const int t, const float *src, void *dst, int64_t n, const float *w)
{
    const int gs = vk_w_gs(t), per_block = GQ_QK_K / gs;
    const int bpf = VK_NV * VL / per_block; /* blocks per group fit, a divisor of VL */
    const size_t bsize = t == VK_W_Q2_K   ? sizeof(struct gq_block_q2_k)
                         : t == VK_W_Q3_K ? sizeof(struct gq_block_q3_k)
                         : t == VK_W_Q4_K ? sizeof(struct gq_block_q4_k)
                         : t == VK_W_Q5_K ? sizeof(struct gq_block_q5_k)
                                          : sizeof(struct gq_block_q6_k);
    const int64_t nb = n / GQ_QK_K;
    /* Group g of block k at [per_block k + g]; its levels at
     * L[GQ_QK_K k + gs g ..]. */
    float ss[VL], sig[VK_NV * VL], sw[16 * VL], scales[16 * VL], mins[16 * VL];
    uint8_t Lu[GQ_QK_K * VL];
    int8_t Ls[GQ_QK_K * VL];
    /* The block fits: block k's values transposed at [VL i + k], its
     * scale (and min) at [k], its levels at [per_block k ..]. */
    float st[16 * VL] VK_ALIGN, mt[16 * VL] VK_ALIGN, swt[16 * VL] VK_ALIGN;
    float d_block[VL], m_block[VL];
    uint8_t ls[16 * VL], lm[16 * VL];
    int8_t lsym[16 * VL];

    for (int64_t ib = 0; ib < nb; ib += VL) {
        const int nblk = nb - ib < VL ? (int)(nb - ib) : VL;
        const float *x = src + GQ_QK_K * ib, *qw = w + GQ_QK_K * ib;
        uint8_t *out = (uint8_t *)dst + bsize * (size_t)ib;
        if (!vk_finite(x, GQ_QK_K * nblk) || !vk_finite(qw, GQ_QK_K * nblk)) {
            vk_w_scalar(t)(x, out, (int64_t)GQ_QK_K * nblk, qw);
            continue;
        }
        if (t != VK_W_Q6_K) vk_sum_squares(x, nblk, ss);

        for (int jb = 0; jb < nblk; jb += bpf) {
            const int nf = nblk - jb < bpf ? nblk - jb : bpf;
            /* weighted.c: Q2_K's sigma2 is the mean square, Q3_K's,
             * Q4_K's and Q5_K's twice it, computed as written there. */
            for (int g = 0; g < VK_NV * VL && t != VK_W_Q6_K; g++) {
                const int k = g / per_block;
                const float s = k < nf ? ss[jb + k] : 0.0f;
                sig[g] = t == VK_W_Q2_K ? s / (float)GQ_QK_K : 2.0f * s / (float)GQ_QK_K;
            }
            const int g0 = per_block * jb, ng = per_block * nf;
            if (ng <= VL)
                vk_wfit(1, t, x + GQ_QK_K * jb, qw + GQ_QK_K * jb, ng, sig, scales + g0,
                        mins + g0, sw + g0, Lu + GQ_QK_K * jb, Ls + GQ_QK_K * jb);
            else
                vk_wfit(VK_NV, t, x + GQ_QK_K * jb, qw + GQ_QK_K * jb, ng, sig, scales + g0,
                        mins + g0, sw + g0, Lu + GQ_QK_K * jb, Ls + GQ_QK_K * jb);
        }

        /* The blocks' scales: Q2_K's 16 and Q4_K's and Q5_K's 8 scales
         * and mins to 4 or 6 bits (fit_scale_positive), Q3_K's 16 signed
         * scales symmetrically to 6 bits; Q6_K's in its tail. */
        if (t != VK_W_Q6_K) {
            vk_transpose(1, per_block, scales, nblk, st);
            vk_transpose(1, per_block, sw, nblk, swt);
        }
        if (t == VK_W_Q3_K) {
            vk_fit_symmetric(1, 16, st, swt, 32, d_block, lsym);
        } else if (t != VK_W_Q6_K) {
            const int bits_max = t == VK_W_Q2_K ? 15 : 63;
            vk_transpose(1, per_block, mins, nblk, mt);
            vk_fit_positive(per_block, bits_max, st, swt, d_block, ls);
            vk_fit_positive(per_block, bits_max, mt, swt, m_block, lm);
        }

        for (int k = 0; k < nblk; k++, out += bsize) {
            const float *xb = x + GQ_QK_K * k;
            switch (t) {
            case VK_W_Q2_K: {
                struct gq_block_q2_k *b = (struct gq_block_q2_k *)out;
                b->d = gq_f2h(d_block[k]);
                b->dmin = gq_f2h(m_block[k]);
                for (int g = 0; g < 16; g++)
                    b->scales[g] = (uint8_t)(ls[16 * k + g] | lm[16 * k + g] << 4);
                vk_finish_q2(xb, Lu + GQ_QK_K * k, b);
                break;
            }
            case VK_W_Q3_K:
                /* The signed levels + 32 as bytes, as weighted.c keeps them. */
                vk_finish_q3(xb, (const uint8_t *)lsym + 16 * k, d_block[k], Ls + GQ_QK_K * k,
                             (struct gq_block_q3_k *)out);
                break;
            case VK_W_Q4_K: {
                struct gq_block_q4_k *b = (struct gq_block_q4_k *)out;
                gq_weighted_k4_pack(ls + 8 * k, lm + 8 * k, 15, b->scales);
                b->d = gq_f2h(d_block[k]);
                b->dmin = gq_f2h(m_block[k]);
                vk_finish_k4(xb, Lu + GQ_QK_K * k, out, 0);
                break;
            }
            case VK_W_Q5_K: {
                struct gq_block_q5_k *b = (struct gq_block_q5_k *)out;
                gq_weighted_k4_pack(ls + 8 * k, lm + 8 * k, 31, b->scales);
                b->d = gq_f2h(d_block[k]);
                b->dmin = gq_f2h(m_block[k]);
                vk_finish_k4(xb, Lu + GQ_QK_K * k, out, 1);
                break;
            }
            default:
                vk_finish_q6(xb, scales + 16 * k, Ls + GQ_QK_K * k, (struct gq_block_q6_k *)out);
                break;
            }
        }
    }
}

/* weighted.c's packings of 32 legacy levels: 0..15 (Q4_0, Q4_1) as the
 * nibbles of qs, element j low and j + 16 high; 0..31 (Q5_0, Q5_1) the
 * same with bit 4 of element j at bit j of qh (little-endian). */
static inline void vk_pack_q4(const uint8_t L[GQ_QK], uint8_t qs[GQ_QK / 2])
{
    for (int j = 0; j < GQ_QK / 2; j += VL)
        vk_store_byte(qs + j, vi_or(vi_load_u8(L + j), vi_sll(vi_load_u8(L + j + GQ_QK / 2), 4)));
}

static inline void vk_pack_q5(const uint8_t L[GQ_QK], uint8_t qs[GQ_QK / 2], uint8_t qh[4])
{
    const vi low = vi_set(0xf);
    uint32_t bits = 0;
    for (int j = 0; j < GQ_QK; j += VL) bits |= vi_bits(vi_load_u8(L + j), 4) << j;
    for (int j = 0; j < GQ_QK / 2; j += VL) {
        const vi lo = vi_and(vi_load_u8(L + j), low);
        const vi hi = vi_and(vi_load_u8(L + j + GQ_QK / 2), low);
        vk_store_byte(qs + j, vi_or(lo, vi_sll(hi, 4)));
    }
    qh[0] = (uint8_t)bits;
    qh[1] = (uint8_t)(bits >> 8);
    qh[2] = (uint8_t)(bits >> 16);
    qh[3] = (uint8_t)(bits >> 24);
}

/* 1 when the n floats at x (n a multiple of VL) are all finite. */
static inline int vk_finite_run(const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i += 1 << 16)
        if (!vk_finite(x + i, n - i < (1 << 16) ? (int)(n - i) : 1 << 16)) return 0;
    return 1;
}

/*
 * The weighted legacy types: sigma2 = the row's sum of squares / n, then
 * VK_NV * VL blocks of 32 per fit, one block a lane, a last partial fit
 * padded and run on one vector when that holds it.
 */
static inline __attribute__((always_inline)) void
vk_weighted_legacy(const int t, const float *src, void *dst, int64_t n, const float *w)
{
    if (!vk_finite_run(src, n) || !vk_finite_run(w, n)) {
        vk_w_scalar(t)(src, dst, n, w);
        return;
    }
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += src[i] * src[i];
    const float sigma2 = sum / (float)n;

    const size_t bsize = t == VK_W_Q4_0   ? sizeof(struct gq_block_q4_0)
                         : t == VK_W_Q4_1 ? sizeof(struct gq_block_q4_1)
                         : t == VK_W_Q5_0 ? sizeof(struct gq_block_q5_0)
                                          : sizeof(struct gq_block_q5_1);
    const int64_t nb = n / GQ_QK;
    float sig[VK_NV * VL], sw[VK_NV * VL], scales[VK_NV * VL], mins[VK_NV * VL];
    uint8_t Lu[VK_FIT_FLOATS];
    int8_t Ls[VK_FIT_FLOATS];
    for (int g = 0; g < VK_NV * VL; g++) sig[g] = sigma2;

    for (int64_t ib = 0; ib < nb; ib += VK_NV * VL) {
        const int nblk = nb - ib < VK_NV * VL ? (int)(nb - ib) : VK_NV * VL;
        const float *x = src + GQ_QK * ib, *qw = w + GQ_QK * ib;
        uint8_t *out = (uint8_t *)dst + bsize * (size_t)ib;
        if (nblk <= VL)
            vk_wfit(1, t, x, qw, nblk, sig, scales, mins, sw, Lu, Ls);
        else
            vk_wfit(VK_NV, t, x, qw, nblk, sig, scales, mins, sw, Lu, Ls);

        for (int k = 0; k < nblk; k++, out += bsize) {
            /* The symmetric fits' levels L + nmax are 0..15 or 0..31. */
            const uint8_t *lu = Lu + GQ_QK * k, *ls = (const uint8_t *)Ls + GQ_QK * k;
            switch (t) {
            case VK_W_Q4_0: {
                struct gq_block_q4_0 *b = (struct gq_block_q4_0 *)out;
                b->d = gq_f2h(scales[k]);
                vk_pack_q4(ls, b->qs);
                break;
            }
            case VK_W_Q5_0: {
                struct gq_block_q5_0 *b = (struct gq_block_q5_0 *)out;
                b->d = gq_f2h(scales[k]);
                vk_pack_q5(ls, b->qs, b->qh);
                break;
            }
            case VK_W_Q4_1: {
                struct gq_block_q4_1 *b = (struct gq_block_q4_1 *)out;
                b->d = gq_f2h(scales[k]);
                b->m = gq_f2h(-mins[k]);
                vk_pack_q4(lu, b->qs);
                break;
            }
            default: {
                struct gq_block_q5_1 *b = (struct gq_block_q5_1 *)out;
                b->d = gq_f2h(scales[k]);
                b->m = gq_f2h(-mins[k]);
                vk_pack_q5(lu, b->qs, b->qh);
                break;
            }
            }
        }
    }
}

static void vk_quant_weighted_q2_k(const float *src, void *dst, int64_t n, const float *w)
{
    vk_weighted_k(VK_W_Q2_K, src, dst, n, w);
}

static void vk_quant_weighted_q3_k(const float *src, void *dst, int64_t n, const float *w)
{
    vk_weighted_k(VK_W_Q3_K, src, dst, n, w);
}

static void vk_quant_weighted_q4_k(const float *src, void *dst, int64_t n, const float *w)
{
    vk_weighted_k(VK_W_Q4_K, src, dst, n, w);
}

static void vk_quant_weighted_q5_k(const float *src, void *dst, int64_t n, const float *w)
{
    vk_weighted_k(VK_W_Q5_K, src, dst, n, w);
}

static void vk_quant_weighted_q6_k(const float *src, void *dst, int64_t n, const float *w)
{
    vk_weighted_k(VK_W_Q6_K, src, dst, n, w);
}

static void vk_quant_weighted_q4_0(const float *src, void *dst, int64_t n, const float *w)
{
    vk_weighted_legacy(VK_W_Q4_0, src, dst, n, w);
}

static void vk_quant_weighted_q4_1(const float *src, void *dst, int64_t n, const float *w)
{
    vk_weighted_legacy(VK_W_Q4_1, src, dst, n, w);
}

static void vk_quant_weighted_q5_0(const float *src, void *dst, int64_t n, const float *w)
{
    vk_weighted_legacy(VK_W_Q5_0, src, dst, n, w);
}

static void vk_quant_weighted_q5_1(const float *src, void *dst, int64_t n, const float *w)
{
    vk_weighted_legacy(VK_W_Q5_1, src, dst, n, w);
}

#undef VK_AT

/* ------------------------------------------------------------------------ */
/* The table                                                                 */

#define VK_TABLE                                                                 \
    {                                                                            \
        .dequant =                                                               \
            {                                                                    \
                [GGUF_T_F16] = vk_dequant_f16,                                   \
                [GGUF_T_BF16] = vk_dequant_bf16,                                 \
                [GGUF_T_Q4_0] = vk_dequant_q4_0,                                 \
                [GGUF_T_Q4_1] = vk_dequant_q4_1,                                 \
                [GGUF_T_Q5_0] = vk_dequant_q5_0,                                 \
                [GGUF_T_Q5_1] = vk_dequant_q5_1,                                 \
                [GGUF_T_Q8_0] = vk_dequant_q8_0,                                 \
                [GGUF_T_Q4_K] = vk_dequant_q4_k,                                 \
                [GGUF_T_Q5_K] = vk_dequant_q5_k,                                 \
                [GGUF_T_Q6_K] = vk_dequant_q6_k,                                 \
                [GGUF_T_Q8_K] = vk_dequant_q8_k,                                 \
            },                                                                   \
        .quant = {                                                               \
            [GGUF_T_F16] = vk_quant_f16,                                         \
            [GGUF_T_BF16] = vk_quant_bf16,                                       \
            [GGUF_T_Q4_0] = vk_quant_q4_0,                                       \
            [GGUF_T_Q5_0] = vk_quant_q5_0,                                       \
            [GGUF_T_Q8_0] = vk_quant_q8_0,                                       \
            [GGUF_T_Q4_K] = vk_quant_q4_k,                                       \
            [GGUF_T_Q5_K] = vk_quant_q5_k,                                       \
            [GGUF_T_Q6_K] = vk_quant_q6_k,                                       \
            [GGUF_T_Q8_K] = vk_quant_q8_k,                                       \
        },                                                                       \
        .quant_weighted = {                                                      \
            [GGUF_T_Q4_0] = vk_quant_weighted_q4_0,                              \
            [GGUF_T_Q4_1] = vk_quant_weighted_q4_1,                              \
            [GGUF_T_Q5_0] = vk_quant_weighted_q5_0,                              \
            [GGUF_T_Q5_1] = vk_quant_weighted_q5_1,                              \
            [GGUF_T_Q2_K] = vk_quant_weighted_q2_k,                              \
            [GGUF_T_Q3_K] = vk_quant_weighted_q3_k,                              \
            [GGUF_T_Q4_K] = vk_quant_weighted_q4_k,                              \
            [GGUF_T_Q5_K] = vk_quant_weighted_q5_k,                              \
            [GGUF_T_Q6_K] = vk_quant_weighted_q6_k,                              \
        },                                                                       \
    }

#endif /* GGUF_QUANT_VKERNELS_H */
