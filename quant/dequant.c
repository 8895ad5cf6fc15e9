/* dequant.c -- scalar kernels from each supported type's blocks to floats.
 *
 * These are the reference for every SIMD path and must give the floats the
 * reference dequantizers give, bit for bit.  That fixes the order of the
 * float operations: a group scale is formed first (d * sc, as a float) and
 * then multiplied by the quant, i.e. (d * sc) * q, never d * (sc * q); an
 * offset is subtracted (or added) last.  The file is compiled with
 * -ffp-contract=off so that no multiply-add is fused.
 *
 * Each kernel takes n elements, a positive multiple of the block size
 * (rows.c checks it). */
#include <config.h>

#include <string.h>

#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/kernels.h"

void gq_dequant_f32(const void *src, float *dst, int64_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(float));
}

void gq_dequant_f16(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        dst[i] = gq_h2f(h);
    }
}

void gq_dequant_bf16(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        dst[i] = gq_bf2f(h);
    }
}

void gq_dequant_q4_0(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q4_0 *b = src;
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, dst += GQ_QK) {
        const float d = gq_h2f(b->d);
        for (int j = 0; j < GQ_QK / 2; j++) {
            dst[j] = (float)((b->qs[j] & 0xf) - 8) * d;
            dst[j + GQ_QK / 2] = (float)((b->qs[j] >> 4) - 8) * d;
        }
    }
}

void gq_dequant_q4_1(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q4_1 *b = src;
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, dst += GQ_QK) {
        const float d = gq_h2f(b->d), m = gq_h2f(b->m);
        for (int j = 0; j < GQ_QK / 2; j++) {
            dst[j] = (float)(b->qs[j] & 0xf) * d + m;
            dst[j + GQ_QK / 2] = (float)(b->qs[j] >> 4) * d + m;
        }
    }
}

/* Bit 4 of the 32 quants of a Q5_0/Q5_1 block. */
static inline uint32_t q5_high_bits(const uint8_t qh[4])
{
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
}

void gq_dequant_q5_0(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q5_0 *b = src;
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, dst += GQ_QK) {
        const float d = gq_h2f(b->d);
        const uint32_t qh = q5_high_bits(b->qh);
        for (int j = 0; j < GQ_QK / 2; j++) {
            int lo = (b->qs[j] & 0xf) | (int)((qh >> j) & 1) << 4;
            int hi = (b->qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
            dst[j] = (float)(lo - 16) * d;
            dst[j + GQ_QK / 2] = (float)(hi - 16) * d;
        }
    }
}

void gq_dequant_q5_1(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q5_1 *b = src;
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, dst += GQ_QK) {
        const float d = gq_h2f(b->d), m = gq_h2f(b->m);
        const uint32_t qh = q5_high_bits(b->qh);
        for (int j = 0; j < GQ_QK / 2; j++) {
            int lo = (b->qs[j] & 0xf) | (int)((qh >> j) & 1) << 4;
            int hi = (b->qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
            dst[j] = (float)lo * d + m;
            dst[j + GQ_QK / 2] = (float)hi * d + m;
        }
    }
}

void gq_dequant_q8_0(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q8_0 *b = src;
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, dst += GQ_QK) {
        const float d = gq_h2f(b->d);
        for (int j = 0; j < GQ_QK; j++) dst[j] = (float)b->qs[j] * d;
    }
}

void gq_dequant_q2_k(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q2_k *b = src;
    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++) {
        const float d = gq_h2f(b->d), dmin = gq_h2f(b->dmin);
        /* Groups of 16 in order: half h, bit pair k, then the first or
         * second 16 bytes of the half's 32 bytes of qs. */
        for (int g = 0; g < 16; g++, dst += 16) {
            const uint8_t *q = b->qs + 32 * (g / 8) + 16 * (g & 1);
            const int shift = 2 * ((g % 8) / 2);
            const float dl = d * (float)(b->scales[g] & 0xf);
            const float ml = dmin * (float)(b->scales[g] >> 4);
            for (int l = 0; l < 16; l++) dst[l] = dl * (float)((q[l] >> shift) & 3) - ml;
        }
    }
}

void gq_dequant_q3_k(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q3_k *b = src;
    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++) {
        const float d = gq_h2f(b->d);
        for (int g = 0; g < 16; g++, dst += 16) {
            const int off = 16 * (g & 1);             /* first or second 16 of 32 */
            const uint8_t *q = b->qs + 32 * (g / 8) + off;
            const uint8_t *hm = b->hmask + off;
            const int shift = 2 * ((g % 8) / 2);
            const uint8_t bit = (uint8_t)(1u << (g / 2)); /* 4 * half + pair */
            const float dl = d * (float)gq_k3_scale(b->scales, g);
            for (int l = 0; l < 16; l++) {
                int v = ((q[l] >> shift) & 3) - ((hm[l] & bit) ? 0 : 4);
                dst[l] = dl * (float)v;
            }
        }
    }
}

void gq_dequant_q4_k(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q4_k *b = src;
    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++) {
        const float d = gq_h2f(b->d), dmin = gq_h2f(b->dmin);
        for (int c = 0; c < 4; c++) {
            const uint8_t *q = b->qs + 32 * c;
            uint8_t sc, mn;
            gq_k4_scale_min(b->scales, 2 * c, &sc, &mn);
            const float d1 = d * (float)sc, m1 = dmin * (float)mn;
            gq_k4_scale_min(b->scales, 2 * c + 1, &sc, &mn);
            const float d2 = d * (float)sc, m2 = dmin * (float)mn;
            for (int l = 0; l < 32; l++) dst[l] = d1 * (float)(q[l] & 0xf) - m1;
            for (int l = 0; l < 32; l++) dst[l + 32] = d2 * (float)(q[l] >> 4) - m2;
            dst += 64;
        }
    }
}

void gq_dequant_q5_k(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q5_k *b = src;
    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++) {
        const float d = gq_h2f(b->d), dmin = gq_h2f(b->dmin);
        for (int c = 0; c < 4; c++) {
            const uint8_t *q = b->qs + 32 * c;
            const uint8_t u1 = (uint8_t)(1u << (2 * c)), u2 = (uint8_t)(2u << (2 * c));
            uint8_t sc, mn;
            gq_k4_scale_min(b->scales, 2 * c, &sc, &mn);
            const float d1 = d * (float)sc, m1 = dmin * (float)mn;
            gq_k4_scale_min(b->scales, 2 * c + 1, &sc, &mn);
            const float d2 = d * (float)sc, m2 = dmin * (float)mn;
            for (int l = 0; l < 32; l++)
                dst[l] = d1 * (float)((q[l] & 0xf) + (b->qh[l] & u1 ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++)
                dst[l + 32] = d2 * (float)((q[l] >> 4) + (b->qh[l] & u2 ? 16 : 0)) - m2;
            dst += 64;
        }
    }
}

void gq_dequant_q6_k(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q6_k *b = src;
    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++) {
        const float d = gq_h2f(b->d);
        for (int h = 0; h < 2; h++, dst += 128) {
            const uint8_t *ql = b->ql + 64 * h, *qh = b->qh + 32 * h;
            const int8_t *sc = b->scales + 8 * h;
            for (int l = 0; l < 32; l++) {
                const int s = l / 16;
                int q1 = ((ql[l] & 0xf) | ((qh[l] >> 0) & 3) << 4) - 32;
                int q2 = ((ql[l + 32] & 0xf) | ((qh[l] >> 2) & 3) << 4) - 32;
                int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
                int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
                dst[l] = d * (float)sc[s] * (float)q1;
                dst[l + 32] = d * (float)sc[s + 2] * (float)q2;
                dst[l + 64] = d * (float)sc[s + 4] * (float)q3;
                dst[l + 96] = d * (float)sc[s + 6] * (float)q4;
            }
        }
    }
}

void gq_dequant_q8_k(const void *src, float *dst, int64_t n)
{
    const struct gq_block_q8_k *b = src;
    for (int64_t i = 0; i < n / GQ_QK_K; i++, b++, dst += GQ_QK_K) {
        const float d = b->d;
        for (int j = 0; j < GQ_QK_K; j++) dst[j] = d * (float)b->qs[j];
    }
}
