/*
 * qblocks.h -- the per-thread arithmetic of the CUDA kernels on GGUF weight
 * blocks, written once for the device and the host.
 *
 * A weight row is cut into segments of 32 elements, the unit one thread
 * of a matrix-vector product (or of a dequantizing kernel) takes: a whole
 * block of the legacy types (Q4_0 ... Q8_0), a group of 32 of a K-quant
 * super-block (two groups of 16 for Q2_K, Q3_K and Q6_K), 32 floats of
 * F32, F16 or BF16.  For each type:
 *
 *   qc_deq_T(row, s, out)           out[0..32) = the 32 weights of segment s,
 *                                   in float, as quant/dequant.c gives them
 *   qc_dot_T(row, s, a, d8, s8)     the dot product of segment s with 32
 *                                   activations quantized to 8 bits: a[] the
 *                                   int8 values (4-byte aligned), d8 their
 *                                   scale, s8 = d8 * sum(a)
 *
 * The integer part of every dot product is taken four bytes at a time
 * (dp4a on the device, its plain equivalent on the host): weights as
 * unsigned bytes (every quant below 128, so a signed multiply-add serves),
 * activations as signed.  The constant of each format (Q4_0's 8, Q6_K's
 * 32, the minima of Q4_K) is applied once per segment through s8 or the
 * sum of a group's activations, never per element.
 *
 * The file compiles as C (tests/test-cuda-blocks.c holds every function
 * to quant/'s scalar kernels on the host, in every build) and as CUDA
 * (the .cu files of infer/cuda/, where QC_HD makes them device functions).  Weights
 * are read a byte at a time, so that a row may start at any address, as
 * the blocks of Q8_0 (34 bytes) or Q6_K (210) do.
 */
#ifndef QWEN_CUDA_QBLOCKS_H
#define QWEN_CUDA_QBLOCKS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#include <cuda_fp16.h>
#define QC_HD __host__ __device__ static __forceinline__
#else
#define QC_HD static inline
#endif

/* Elements per segment. */
#define QC_SEG 32

/* Bytes of a block and elements per block of the types with segments. */
#define QC_Q4_0_BYTES 18
#define QC_Q4_1_BYTES 20
#define QC_Q5_0_BYTES 22
#define QC_Q5_1_BYTES 24
#define QC_Q8_0_BYTES 34
#define QC_Q2_K_BYTES 84
#define QC_Q3_K_BYTES 110
#define QC_Q4_K_BYTES 144
#define QC_Q5_K_BYTES 176
#define QC_Q6_K_BYTES 210
#define QC_QK_K 256

/* --- loads and conversions --- */

QC_HD uint32_t qc_u16(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

QC_HD uint32_t qc_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* An IEEE half's bits to float, exactly. */
QC_HD float qc_h2f(uint32_t h)
{
#ifdef __CUDA_ARCH__
    return __half2float(__ushort_as_half((unsigned short)h));
#else
    uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | man << 13;
    } else if (exp != 0) {
        bits = sign | (exp + 112) << 23 | man << 13;
    } else if (man == 0) {
        bits = sign;
    } else { /* subnormal: normalise */
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400));
        bits = sign | (uint32_t)(112 - e) << 23 | (man & 0x3ff) << 13;
    }
    union { uint32_t u; float f; } v;
    v.u = bits;
    return v.f;
#endif
}

QC_HD float qc_bf2f(uint32_t h)
{
    union { uint32_t u; float f; } v;
    v.u = h << 16;
    return v.f;
}

QC_HD float qc_f32(const uint8_t *p)
{
    union { uint32_t u; float f; } v;
    v.u = qc_u32(p);
    return v.f;
}

/* c + the sum of the four products of the signed bytes of a and b. */
QC_HD int qc_dp4a(int a, int b, int c)
{
#ifdef __CUDA_ARCH__
    return __dp4a(a, b, c);
#else
    for (int i = 0; i < 4; i++)
        c += (int)(int8_t)(uint8_t)((uint32_t)a >> (8 * i)) *
             (int)(int8_t)(uint8_t)((uint32_t)b >> (8 * i));
    return c;
#endif
}

/* Bits 0..3 of x to bit 4 of each of the four bytes. */
QC_HD int qc_spread4(uint32_t x)
{
    return (int)(((x & 1u) << 4) | ((x & 2u) << 11) | ((x & 4u) << 18) | ((x & 8u) << 25));
}

/* The int8 activations as four-byte words; a is 4-byte aligned. */
QC_HD int qc_a32(const int8_t *a, int i)
{
#ifdef __CUDA_ARCH__
    return ((const int *)(const void *)a)[i];
#else
    int v;
    memcpy(&v, a + 4 * i, 4);
    return v;
#endif
}

/* The sum of 16 activations from word i on. */
QC_HD int qc_asum16(const int8_t *a, int i)
{
    int s = 0;
    for (int k = 0; k < 4; k++) s = qc_dp4a(0x01010101, qc_a32(a, i + k), s);
    return s;
}

/* The 6-bit scale and min of group g (0..7) of a Q4_K/Q5_K block's 12
 * scale bytes (the layout of quant/blocks.h). */
QC_HD void qc_k4_scale_min(const uint8_t *sc, int g, int *s, int *m)
{
    if (g < 4) {
        *s = sc[g] & 63;
        *m = sc[g + 4] & 63;
    } else {
        *s = (sc[g + 4] & 0xf) | ((sc[g - 4] >> 6) << 4);
        *m = (sc[g + 4] >> 4) | ((sc[g] >> 6) << 4);
    }
}

/* The signed scale (-32..31) of group g (0..15) of a Q3_K block. */
QC_HD int qc_k3_scale(const uint8_t *sc, int g)
{
    int lo = g < 8 ? sc[g] & 0xf : sc[g - 8] >> 4;
    int hi = (sc[8 + g % 4] >> (2 * (g / 4))) & 3;
    return (lo | hi << 4) - 32;
}

/* --- floats --- */

QC_HD void qc_deq_f32(const uint8_t *row, int64_t s, float *out)
{
    for (int l = 0; l < 32; l++) out[l] = qc_f32(row + 4 * (32 * s + l));
}

QC_HD void qc_deq_f16(const uint8_t *row, int64_t s, float *out)
{
    for (int l = 0; l < 32; l++) out[l] = qc_h2f(qc_u16(row + 2 * (32 * s + l)));
}

QC_HD void qc_deq_bf16(const uint8_t *row, int64_t s, float *out)
{
    for (int l = 0; l < 32; l++) out[l] = qc_bf2f(qc_u16(row + 2 * (32 * s + l)));
}

/* --- legacy blocks of 32 --- */

QC_HD void qc_deq_q4_0(const uint8_t *row, int64_t s, float *out)
{
    const uint8_t *b = row + QC_Q4_0_BYTES * s;
    const float d = qc_h2f(qc_u16(b));
    for (int j = 0; j < 16; j++) {
        out[j] = (float)((b[2 + j] & 0xf) - 8) * d;
        out[j + 16] = (float)((b[2 + j] >> 4) - 8) * d;
    }
}

QC_HD float qc_dot_q4_0(const uint8_t *row, int64_t s, const int8_t *a, float d8, float s8)
{
    const uint8_t *b = row + QC_Q4_0_BYTES * s;
    int sum = 0;
    for (int i = 0; i < 4; i++) {
        uint32_t v = qc_u32(b + 2 + 4 * i);
        sum = qc_dp4a((int)(v & 0x0f0f0f0fu), qc_a32(a, i), sum);
        sum = qc_dp4a((int)((v >> 4) & 0x0f0f0f0fu), qc_a32(a, i + 4), sum);
    }
    return qc_h2f(qc_u16(b)) * (d8 * (float)sum - 8.0f * s8);
}

QC_HD void qc_deq_q4_1(const uint8_t *row, int64_t s, float *out)
{
    const uint8_t *b = row + QC_Q4_1_BYTES * s;
    const float d = qc_h2f(qc_u16(b)), m = qc_h2f(qc_u16(b + 2));
    for (int j = 0; j < 16; j++) {
        out[j] = (float)(b[4 + j] & 0xf) * d + m;
        out[j + 16] = (float)(b[4 + j] >> 4) * d + m;
    }
}

QC_HD float qc_dot_q4_1(const uint8_t *row, int64_t s, const int8_t *a, float d8, float s8)
{
    const uint8_t *b = row + QC_Q4_1_BYTES * s;
    int sum = 0;
    for (int i = 0; i < 4; i++) {
        uint32_t v = qc_u32(b + 4 + 4 * i);
        sum = qc_dp4a((int)(v & 0x0f0f0f0fu), qc_a32(a, i), sum);
        sum = qc_dp4a((int)((v >> 4) & 0x0f0f0f0fu), qc_a32(a, i + 4), sum);
    }
    return qc_h2f(qc_u16(b)) * d8 * (float)sum + qc_h2f(qc_u16(b + 2)) * s8;
}

/* Q5_0 and Q5_1: the quants of a block with their fifth bits; qs at
 * q, the 32 high bits qh. */
QC_HD int qc_q5_dot(const uint8_t *q, uint32_t qh, const int8_t *a)
{
    int sum = 0;
    for (int i = 0; i < 4; i++) {
        uint32_t v = qc_u32(q + 4 * i);
        int lo = (int)(v & 0x0f0f0f0fu) | qc_spread4(qh >> (4 * i));
        int hi = (int)((v >> 4) & 0x0f0f0f0fu) | qc_spread4(qh >> (16 + 4 * i));
        sum = qc_dp4a(lo, qc_a32(a, i), sum);
        sum = qc_dp4a(hi, qc_a32(a, i + 4), sum);
    }
    return sum;
}

QC_HD void qc_deq_q5_0(const uint8_t *row, int64_t s, float *out)
{
    const uint8_t *b = row + QC_Q5_0_BYTES * s;
    const float d = qc_h2f(qc_u16(b));
    const uint32_t qh = qc_u32(b + 2);
    for (int j = 0; j < 16; j++) {
        int lo = (b[6 + j] & 0xf) | (int)((qh >> j) & 1) << 4;
        int hi = (b[6 + j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
        out[j] = (float)(lo - 16) * d;
        out[j + 16] = (float)(hi - 16) * d;
    }
}

QC_HD float qc_dot_q5_0(const uint8_t *row, int64_t s, const int8_t *a, float d8, float s8)
{
    const uint8_t *b = row + QC_Q5_0_BYTES * s;
    int sum = qc_q5_dot(b + 6, qc_u32(b + 2), a);
    return qc_h2f(qc_u16(b)) * (d8 * (float)sum - 16.0f * s8);
}

QC_HD void qc_deq_q5_1(const uint8_t *row, int64_t s, float *out)
{
    const uint8_t *b = row + QC_Q5_1_BYTES * s;
    const float d = qc_h2f(qc_u16(b)), m = qc_h2f(qc_u16(b + 2));
    const uint32_t qh = qc_u32(b + 4);
    for (int j = 0; j < 16; j++) {
        int lo = (b[8 + j] & 0xf) | (int)((qh >> j) & 1) << 4;
        int hi = (b[8 + j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
        out[j] = (float)lo * d + m;
        out[j + 16] = (float)hi * d + m;
    }
}

QC_HD float qc_dot_q5_1(const uint8_t *row, int64_t s, const int8_t *a, float d8, float s8)
{
    const uint8_t *b = row + QC_Q5_1_BYTES * s;
    int sum = qc_q5_dot(b + 8, qc_u32(b + 4), a);
    return qc_h2f(qc_u16(b)) * d8 * (float)sum + qc_h2f(qc_u16(b + 2)) * s8;
}

QC_HD void qc_deq_q8_0(const uint8_t *row, int64_t s, float *out)
{
    const uint8_t *b = row + QC_Q8_0_BYTES * s;
    const float d = qc_h2f(qc_u16(b));
    for (int j = 0; j < 32; j++) out[j] = (float)(int8_t)b[2 + j] * d;
}

QC_HD float qc_dot_q8_0(const uint8_t *row, int64_t s, const int8_t *a, float d8, float s8)
{
    const uint8_t *b = row + QC_Q8_0_BYTES * s;
    int sum = 0;
    for (int i = 0; i < 8; i++) sum = qc_dp4a((int)qc_u32(b + 2 + 4 * i), qc_a32(a, i), sum);
    (void)s8;
    return qc_h2f(qc_u16(b)) * d8 * (float)sum;
}

/* --- K-quants: super-blocks of 256, segment j = s % 8 of block s / 8 --- */

/* Q2_K: weight 32j + l is bits 2k..2k+1 of qs[32 * (j / 4) + l], k = j % 4;
 * groups of 16 with a 4-bit scale (low nibble) and min (high). */
QC_HD void qc_deq_q2_k(const uint8_t *row, int64_t s, float *out)
{
    const uint8_t *b = row + QC_Q2_K_BYTES * (s / 8);
    const int j = (int)(s % 8), k = j % 4;
    const float d = qc_h2f(qc_u16(b + 80)), dmin = qc_h2f(qc_u16(b + 82));
    const uint8_t *q = b + 16 + 32 * (j / 4);
    for (int half = 0; half < 2; half++) {
        const uint8_t sc = b[2 * j + half];
        const float dl = d * (float)(sc & 0xf), ml = dmin * (float)(sc >> 4);
        for (int l = 16 * half; l < 16 * half + 16; l++)
            out[l] = dl * (float)((q[l] >> (2 * k)) & 3) - ml;
    }
}

QC_HD float qc_dot_q2_k(const uint8_t *row, int64_t s, const int8_t *a, float d8, float s8)
{
    const uint8_t *b = row + QC_Q2_K_BYTES * (s / 8);
    const int j = (int)(s % 8), k = j % 4;
    const float d = qc_h2f(qc_u16(b + 80)), dmin = qc_h2f(qc_u16(b + 82));
    const uint8_t *q = b + 16 + 32 * (j / 4);
    float r = 0.0f;
    for (int half = 0; half < 2; half++) {
        int sum = 0;
        for (int i = 4 * half; i < 4 * half + 4; i++)
            sum = qc_dp4a((int)((qc_u32(q + 4 * i) >> (2 * k)) & 0x03030303u), qc_a32(a, i), sum);
        const uint8_t sc = b[2 * j + half];
        r += d * (float)(sc & 0xf) * d8 * (float)sum -
             dmin * (float)(sc >> 4) * d8 * (float)qc_asum16(a, 4 * half);
    }
    (void)s8;
    return r;
}

/* Q3_K: Q2_K's low bits, the third bit j of hmask[l] (clear: minus 4),
 * signed 6-bit group scales. */
QC_HD void qc_deq_q3_k(const uint8_t *row, int64_t s, float *out)
{
    const uint8_t *b = row + QC_Q3_K_BYTES * (s / 8);
    const int j = (int)(s % 8), k = j % 4;
    const float d = qc_h2f(qc_u16(b + 108));
    const uint8_t *q = b + 32 + 32 * (j / 4), *hm = b;
    for (int half = 0; half < 2; half++) {
        const float dl = d * (float)qc_k3_scale(b + 96, 2 * j + half);
        for (int l = 16 * half; l < 16 * half + 16; l++) {
            int v = ((q[l] >> (2 * k)) & 3) - ((hm[l] >> j) & 1 ? 0 : 4);
            out[l] = dl * (float)v;
        }
    }
}

QC_HD float qc_dot_q3_k(const uint8_t *row, int64_t s, const int8_t *a, float d8, float s8)
{
    const uint8_t *b = row + QC_Q3_K_BYTES * (s / 8);
    const int j = (int)(s % 8), k = j % 4;
    const float d = qc_h2f(qc_u16(b + 108));
    const uint8_t *q = b + 32 + 32 * (j / 4), *hm = b;
    float r = 0.0f;
    for (int half = 0; half < 2; half++) {
        int sum = 0;
        for (int i = 4 * half; i < 4 * half + 4; i++) {
            uint32_t v = (qc_u32(q + 4 * i) >> (2 * k)) & 0x03030303u;
            v |= ((qc_u32(hm + 4 * i) >> j) & 0x01010101u) << 2; /* q + 4, 0..7 */
            sum = qc_dp4a((int)v, qc_a32(a, i), sum);
        }
        sum -= 4 * qc_asum16(a, 4 * half);
        r += d * (float)qc_k3_scale(b + 96, 2 * j + half) * d8 * (float)sum;
    }
    (void)s8;
    return r;
}

/* Q4_K: group j is the low (j even) or high nibbles of qs[32 * (j / 2) ..]. */
QC_HD void qc_deq_q4_k(const uint8_t *row, int64_t s, float *out)
{
    const uint8_t *b = row + QC_Q4_K_BYTES * (s / 8);
    const int j = (int)(s % 8);
    int sc, mn;
    qc_k4_scale_min(b + 4, j, &sc, &mn);
    const float d1 = qc_h2f(qc_u16(b)) * (float)sc, m1 = qc_h2f(qc_u16(b + 2)) * (float)mn;
    const uint8_t *q = b + 16 + 32 * (j / 2);
    const int shift = 4 * (j & 1);
    for (int l = 0; l < 32; l++) out[l] = d1 * (float)((q[l] >> shift) & 0xf) - m1;
}

QC_HD float qc_dot_q4_k(const uint8_t *row, int64_t s, const int8_t *a, float d8, float s8)
{
    const uint8_t *b = row + QC_Q4_K_BYTES * (s / 8);
    const int j = (int)(s % 8);
    const uint8_t *q = b + 16 + 32 * (j / 2);
    const int shift = 4 * (j & 1);
    int sum = 0;
    for (int i = 0; i < 8; i++)
        sum = qc_dp4a((int)((qc_u32(q + 4 * i) >> shift) & 0x0f0f0f0fu), qc_a32(a, i), sum);
    int sc, mn;
    qc_k4_scale_min(b + 4, j, &sc, &mn);
    return qc_h2f(qc_u16(b)) * (float)sc * d8 * (float)sum - qc_h2f(qc_u16(b + 2)) * (float)mn * s8;
}

/* Q5_K: Q4_K with bit j of qh[l] as the fifth bit of weight l of group j. */
QC_HD void qc_deq_q5_k(const uint8_t *row, int64_t s, float *out)
{
    const uint8_t *b = row + QC_Q5_K_BYTES * (s / 8);
    const int j = (int)(s % 8);
    int sc, mn;
    qc_k4_scale_min(b + 4, j, &sc, &mn);
    const float d1 = qc_h2f(qc_u16(b)) * (float)sc, m1 = qc_h2f(qc_u16(b + 2)) * (float)mn;
    const uint8_t *qh = b + 16, *q = b + 48 + 32 * (j / 2);
    const int shift = 4 * (j & 1);
    for (int l = 0; l < 32; l++)
        out[l] = d1 * (float)(((q[l] >> shift) & 0xf) + ((qh[l] >> j) & 1 ? 16 : 0)) - m1;
}

QC_HD float qc_dot_q5_k(const uint8_t *row, int64_t s, const int8_t *a, float d8, float s8)
{
    const uint8_t *b = row + QC_Q5_K_BYTES * (s / 8);
    const int j = (int)(s % 8);
    const uint8_t *qh = b + 16, *q = b + 48 + 32 * (j / 2);
    const int shift = 4 * (j & 1);
    int sum = 0;
    for (int i = 0; i < 8; i++) {
        uint32_t v = (qc_u32(q + 4 * i) >> shift) & 0x0f0f0f0fu;
        v |= ((qc_u32(qh + 4 * i) >> j) & 0x01010101u) << 4;
        sum = qc_dp4a((int)v, qc_a32(a, i), sum);
    }
    int sc, mn;
    qc_k4_scale_min(b + 4, j, &sc, &mn);
    return qc_h2f(qc_u16(b)) * (float)sc * d8 * (float)sum - qc_h2f(qc_u16(b + 2)) * (float)mn * s8;
}

/* Q6_K: weight 32j + l, h = j / 4, k = j % 4: low four bits in the low
 * (k < 2) or high nibble of ql[64h + 32 (k & 1) + l], high two bits
 * 2k..2k+1 of qh[32h + l]; signed 8-bit scales per group of 16; q - 32. */
QC_HD void qc_deq_q6_k(const uint8_t *row, int64_t s, float *out)
{
    const uint8_t *b = row + QC_Q6_K_BYTES * (s / 8);
    const int j = (int)(s % 8), h = j / 4, k = j % 4;
    const float d = qc_h2f(qc_u16(b + 208));
    const uint8_t *ql = b + 64 * h + 32 * (k & 1), *qh = b + 128 + 32 * h;
    for (int l = 0; l < 32; l++) {
        int q = ((ql[l] >> (4 * (k >> 1))) & 0xf) | ((qh[l] >> (2 * k)) & 3) << 4;
        out[l] = d * (float)(int8_t)b[192 + 2 * j + l / 16] * (float)(q - 32);
    }
}

QC_HD float qc_dot_q6_k(const uint8_t *row, int64_t s, const int8_t *a, float d8, float s8)
{
    const uint8_t *b = row + QC_Q6_K_BYTES * (s / 8);
    const int j = (int)(s % 8), h = j / 4, k = j % 4;
    const uint8_t *ql = b + 64 * h + 32 * (k & 1), *qh = b + 128 + 32 * h;
    const float d = qc_h2f(qc_u16(b + 208));
    float r = 0.0f;
    for (int half = 0; half < 2; half++) {
        int sum = 0;
        for (int i = 4 * half; i < 4 * half + 4; i++) {
            uint32_t v = (qc_u32(ql + 4 * i) >> (4 * (k >> 1))) & 0x0f0f0f0fu;
            v |= ((qc_u32(qh + 4 * i) >> (2 * k)) & 0x03030303u) << 4;
            sum = qc_dp4a((int)v, qc_a32(a, i), sum);
        }
        sum -= 32 * qc_asum16(a, 4 * half);
        r += d * (float)(int8_t)b[192 + 2 * j + half] * d8 * (float)sum;
    }
    (void)s8;
    return r;
}

/* --- by type id (GGUF_T_*); the matrix kernels instantiate one each --- */

/* 1 when the CUDA kernels compute type t. */
QC_HD int qc_type_ok(uint32_t t)
{
    switch (t) {
    case 0: case 1: case 30:                  /* F32, F16, BF16 */
    case 2: case 3: case 6: case 7: case 8:   /* Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 */
    case 10: case 11: case 12: case 13: case 14: /* Q2_K .. Q6_K */
        return 1;
    default:
        return 0;
    }
}

/* 1 for the types whose products take 8-bit activations (all but the
 * floats). */
QC_HD int qc_type_quantized(uint32_t t)
{
    return qc_type_ok(t) && t != 0 && t != 1 && t != 30;
}

QC_HD void qc_deq_seg(uint32_t t, const uint8_t *row, int64_t s, float *out)
{
    switch (t) {
    case 0: qc_deq_f32(row, s, out); break;
    case 1: qc_deq_f16(row, s, out); break;
    case 30: qc_deq_bf16(row, s, out); break;
    case 2: qc_deq_q4_0(row, s, out); break;
    case 3: qc_deq_q4_1(row, s, out); break;
    case 6: qc_deq_q5_0(row, s, out); break;
    case 7: qc_deq_q5_1(row, s, out); break;
    case 8: qc_deq_q8_0(row, s, out); break;
    case 10: qc_deq_q2_k(row, s, out); break;
    case 11: qc_deq_q3_k(row, s, out); break;
    case 12: qc_deq_q4_k(row, s, out); break;
    case 13: qc_deq_q5_k(row, s, out); break;
    case 14: qc_deq_q6_k(row, s, out); break;
    default: break;
    }
}

QC_HD float qc_dot_seg(uint32_t t, const uint8_t *row, int64_t s, const int8_t *a, float d8,
                       float s8)
{
    switch (t) {
    case 2: return qc_dot_q4_0(row, s, a, d8, s8);
    case 3: return qc_dot_q4_1(row, s, a, d8, s8);
    case 6: return qc_dot_q5_0(row, s, a, d8, s8);
    case 7: return qc_dot_q5_1(row, s, a, d8, s8);
    case 8: return qc_dot_q8_0(row, s, a, d8, s8);
    case 10: return qc_dot_q2_k(row, s, a, d8, s8);
    case 11: return qc_dot_q3_k(row, s, a, d8, s8);
    case 12: return qc_dot_q4_k(row, s, a, d8, s8);
    case 13: return qc_dot_q5_k(row, s, a, d8, s8);
    case 14: return qc_dot_q6_k(row, s, a, d8, s8);
    default: return 0.0f;
    }
}

/* The dot product of segment s of a float row (F32, F16, BF16) with 32
 * floats x. */
QC_HD float qc_dot_float_seg(uint32_t t, const uint8_t *row, int64_t s, const float *x)
{
    float w[32], sum = 0.0f;
    qc_deq_seg(t, row, s, w);
    for (int l = 0; l < 32; l++) sum += w[l] * x[l];
    return sum;
}

/* 32 floats x to int8 q with scale *d and *s = d * sum(q), as the
 * producing kernels do it across a warp: d = max |x| / 127, q = round(x / d). */
QC_HD void qc_quant_seg(const float *x, int8_t *q, float *d, float *s)
{
    float amax = 0.0f;
    for (int l = 0; l < 32; l++) amax = fabsf(x[l]) > amax ? fabsf(x[l]) : amax;
    const float dd = amax / 127.0f, id = dd != 0.0f ? 1.0f / dd : 0.0f;
    int sum = 0;
    for (int l = 0; l < 32; l++) {
        q[l] = (int8_t)roundf(x[l] * id);
        sum += q[l];
    }
    *d = dd;
    *s = dd * (float)sum;
}

#endif /* QWEN_CUDA_QBLOCKS_H */
