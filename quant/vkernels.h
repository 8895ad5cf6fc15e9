/*
 * vkernels.h -- the vectorised row kernels, written once over a small
 * vocabulary of vector operations; internal to quant/, not installed.
 *
 * quant/kernels-avx2.c and quant/kernels-avx512.c each define the
 * vocabulary below for their instruction set (VL float lanes per vector)
 * and then include this file, which defines static kernels with the
 * signatures of kernels.h and the table VK_TABLE listing them:
 * vk_dequant_T and vk_quant_T do what gq_dequant_T and gq_quant_T of
 * dequant.c and quantize.c do.
 *
 * Every kernel writes exactly what the scalar kernel of quantize.c or
 * dequant.c writes, bit for bit, for every input.  How:
 *  - A vector lane never mixes the float sums of different elements: the
 *    K-quant fits run one whole group per lane (lane j of vector v holds
 *    group v * VL + j of the blocks being fitted), and each lane performs
 *    the scalar code's float operations in the scalar code's order.
 *    Element-wise work (dequantization, re-rounding against stored
 *    scales) has no sums.
 *  - Only operations that are exact IEEE per lane are used: add, sub,
 *    mul, div, sqrt, compares, min/max with the operand order of the C
 *    comparisons they replace, integer ops and exact conversions; the
 *    files are compiled with -ffp-contract=off and never call a fused
 *    multiply-add.
 *  - Blocks holding a NaN or an infinity (where the scalar results rest on
 *    out-of-range float-to-integer conversions), and the legacy blocks
 *    whose scale inverse overflows, are handed to the scalar kernel
 *    itself, so that they match by construction.
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
/* Q4_K and Q5_K quantization                                                */

/* Vectors a K-quant fit runs side by side: the float sums of one lane
 * form chains of dependent additions, and two independent vectors keep
 * the adder busy while each waits for its previous sum. */
#define VK_NV 2
/* Loops over the vectors of a fit; unrolled, so that the per-vector state
 * stays in registers rather than in the arrays that name it. */
#define VK_EACH_V _Pragma("GCC unroll 2") for (int v = 0; v < nv; v++)

/*
 * The group fit of quantize.c's fit_k4_groups() and fit_scale_min() (squared
 * error, weights sqrt(mean x^2) + |x|) for nv * VL groups of 32 consecutive
 * floats at x (nv is 1 or VK_NV), lane j of vector v fitting group
 * v * VL + j.  The lanes follow the scalar code's branches by masks: a
 * lane whose candidate loses, or whose determinant is not positive, keeps
 * its state.  Instead of copying the levels of every winning candidate, a
 * lane remembers the candidate's iscale and the minimum it rounded
 * against, and the levels are recomputed once at the end (the same
 * operations on the same values give the same levels).  Writes the
 * scales, the negated minimums and the levels, group g's at L[32 g ..].
 */
static inline __attribute__((always_inline)) void
vk_fit_k4(const int nv, const float *x, int nmax, float rmin, float rdelta, int nstep,
          float *scale_out, float *neg_min_out, uint8_t *L)
{
    /* Element i of group v * VL + j at [(nv * i + v) * VL + j]. */
    float xt[32 * VK_NV * VL] VK_ALIGN, wt[32 * VK_NV * VL] VK_ALIGN;
    float lt[32 * VK_NV * VL] VK_ALIGN;
    int32_t it[32 * VK_NV * VL] VK_ALIGN;
#define VK_AT(a, i, v) ((a) + ((i) * nv + (v)) * VL)

    for (int g = 0; g < nv * VL; g++)
        for (int i = 0; i < 32; i++) VK_AT(xt, i, g / VL)[g % VL] = x[32 * g + i];

    vf sum_x2[VK_NV], min[VK_NV], max[VK_NV], sum_w[VK_NV], sum_x[VK_NV], min0[VK_NV];
    vf iscale[VK_NV], scale[VK_NV], best[VK_NV], best_iscale[VK_NV], best_min[VK_NV];
    vm flat[VK_NV];

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
        min[v] = max[v] = vf_load(VK_AT(xt, 0, v));
        sum_w[v] = vf_load(VK_AT(wt, 0, v));
        sum_x[v] = vf_mul(sum_w[v], min[v]);
    }
    for (int i = 1; i < 32; i++) {
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
    for (int i = 0; i < 32; i++) {
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
        for (int i = 0; i < 32; i++) {
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
        for (int i = 0; i < 32; i++) {
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
    for (int i = 0; i < 32; i++) {
        VK_EACH_V {
            const vf xi = vf_load(VK_AT(xt, i, v));
            const vi l = vf_round_clamp(vf_mul(best_iscale[v], vf_sub(xi, best_min[v])), 0, nmax);
            vi_store(VK_AT(it, i, v), vi_sel(flat[v], vi_set(0), l));
        }
    }
    for (int g = 0; g < nv * VL; g++)
        for (int i = 0; i < 32; i++) L[32 * g + i] = (uint8_t)VK_AT(it, i, g / VL)[g % VL];
    VK_EACH_V {
        vf_store(scale_out + VL * v, vf_sel(flat[v], vf_zero(), scale[v]));
        vf_store(neg_min_out + VL * v, vf_neg(vf_sel(flat[v], min0[v], min[v])));
    }
#undef VK_AT
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
            const float *xb = x + GQ_QK_K * k;
            uint8_t *Lb = L + GQ_QK_K * k;
            uint16_t d, dmin;
            if (q5) {
                struct gq_block_q5_k *b = (struct gq_block_q5_k *)out;
                gq_pack_k4_scales(scales + 8 * k, mins + 8 * k, b->scales, &d, &dmin);
                b->d = d;
                b->dmin = dmin;
                vk_requantize_k4(xb, 31, b->scales, d, dmin, Lb);
                memset(b->qh, 0, sizeof b->qh);
                for (int c = 0; c < 4; c++) {
                    for (int l = 0; l < 32; l++) {
                        int lo = Lb[64 * c + l], hi = Lb[64 * c + l + 32];
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
            } else {
                struct gq_block_q4_k *b = (struct gq_block_q4_k *)out;
                gq_pack_k4_scales(scales + 8 * k, mins + 8 * k, b->scales, &d, &dmin);
                b->d = d;
                b->dmin = dmin;
                vk_requantize_k4(xb, 15, b->scales, d, dmin, Lb);
                for (int c = 0; c < 4; c++)
                    for (int l = 0; l < 32; l++)
                        b->qs[32 * c + l] = (uint8_t)(Lb[64 * c + l] | Lb[64 * c + l + 32] << 4);
            }
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

/*
 * quantize.c's fit_scale_symmetric() with nmax 32 for the 16 groups of 16
 * floats of one Q6_K block at x, lane j of vector v fitting group
 * v * VL + j; as in vk_fit_k4() a lane remembers its winning iscale and
 * the levels are recomputed at the end.  Writes the 16 scales and the
 * levels L + 32, group g's at L[16 g ..].
 */
static void vk_fit_q6(const float *x, float scale_out[16], int8_t L[GQ_QK_K])
{
    const int nv = VK_Q6_NV;
    float xt[GQ_QK_K] VK_ALIGN;
    int32_t it[GQ_QK_K] VK_ALIGN;
#define VK_AT(a, i, v) ((a) + ((i) * nv + (v)) * VL)
    for (int g = 0; g < 16; g++)
        for (int i = 0; i < 16; i++) VK_AT(xt, i, g / VL)[g % VL] = x[16 * g + i];

    vf amax[VK_Q6_NV], max[VK_Q6_NV], iscale[VK_Q6_NV], sumlx[VK_Q6_NV], suml2[VK_Q6_NV];
    vf scale[VK_Q6_NV], best[VK_Q6_NV], best_iscale[VK_Q6_NV];
    vm zero[VK_Q6_NV];

    VK_EACH_V amax[v] = max[v] = vf_zero();
    for (int i = 0; i < 16; i++) {
        VK_EACH_V {
            const vf xi = vf_load(VK_AT(xt, i, v)), a = vf_abs(xi);
            const vm larger = vf_gt(a, amax[v]);
            amax[v] = vf_sel(larger, a, amax[v]);
            max[v] = vf_sel(larger, xi, max[v]);
        }
    }
    VK_EACH_V {
        zero[v] = vf_lt(amax[v], vf_set(VK_GROUP_EPS));
        iscale[v] = vf_div(vf_set(-32.0f), max[v]);
        sumlx[v] = suml2[v] = vf_zero();
    }
    for (int i = 0; i < 16; i++) {
        VK_EACH_V {
            const vf xi = vf_load(VK_AT(xt, i, v));
            const vf l = vf_cvt(vf_round_clamp(vf_mul(iscale[v], xi), -32, 31));
            const vf w = vf_mul(xi, xi);
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
        const float num = -(32.0f + 0.1f * (float)is);
        VK_EACH_V {
            iscale[v] = vf_div(vf_set(num), max[v]);
            sumlx[v] = suml2[v] = vf_zero();
        }
        for (int i = 0; i < 16; i++) {
            VK_EACH_V {
                const vf xi = vf_load(VK_AT(xt, i, v));
                const vf l = vf_cvt(vf_round_clamp(vf_mul(iscale[v], xi), -32, 31));
                const vf w = vf_mul(xi, xi);
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

    for (int i = 0; i < 16; i++) {
        VK_EACH_V {
            const vf xi = vf_load(VK_AT(xt, i, v));
            const vi l = vi_add(vf_round_clamp(vf_mul(best_iscale[v], xi), -32, 31), vi_set(32));
            vi_store(VK_AT(it, i, v), vi_sel(zero[v], vi_set(0), l));
        }
    }
    for (int g = 0; g < 16; g++)
        for (int i = 0; i < 16; i++) L[16 * g + i] = (int8_t)VK_AT(it, i, g / VL)[g % VL];
    VK_EACH_V vf_store(scale_out + VL * v, vf_sel(zero[v], vf_zero(), scale[v]));
#undef VK_AT
}

static void vk_quant_q6_k(const float *src, void *dst, int64_t n)
{
    struct gq_block_q6_k *b = dst;
    int8_t L[GQ_QK_K];
    float scales[16];

    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++, src += GQ_QK_K) {
        if (!vk_finite(src, GQ_QK_K)) {
            gq_quant_q6_k(src, b, GQ_QK_K);
            continue;
        }
        vk_fit_q6(src, scales, L);

        float max_scale = 0.0f, amax = 0.0f;
        for (int g = 0; g < 16; g++) {
            if (fabsf(scales[g]) > amax) {
                amax = fabsf(scales[g]);
                max_scale = scales[g];
            }
        }
        if (amax < VK_GROUP_EPS) {
            memset(b, 0, sizeof *b);
            continue;
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
                const vf v = vf_div(vf_load(src + 16 * g + l), vf_set(d));
                vi_store_u8((uint8_t *)L + 16 * g + l,
                            vi_add(vf_round_clamp(v, -32, 31), vi_set(32)));
            }
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
}

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
    }

#endif /* GGUF_QUANT_VKERNELS_H */
