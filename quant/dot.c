/* dot.c -- the scalar dot kernels (the reference of every SIMD level), the
 * Q8_1 activation quantizer and the choice of kernel per SIMD level.
 *
 * Each kernel sums the integer products of one block exactly (int32: the
 * largest block sum, Q6_K's 16 * 16 * 32 * 128 * 128, is far below 2^31),
 * then scales it in float and adds it to the running float sum, block
 * after block, in the order written here. */
#include <config.h>

#include <math.h>

#include "quant/blocks.h"
#include "quant/dot.h"
#include "quant/half.h"
#include "quant/quant.h"

/* ------------------------------------------------------------------------ */
/* Activations                                                               */

/* Q8_1: Q8_0's quantization (d = absmax / 127, q = roundf(x / d)) plus
 * s = d * sum(q) as a half. */
void gq_quant_q8_1(const float *src, void *dst, int64_t n)
{
    struct gq_block_q8_1 *b = dst;
    for (int64_t i = 0; i < n / GQ_QK; i++, b++, src += GQ_QK) {
        float amax = 0.0f;
        for (int j = 0; j < GQ_QK; j++) {
            const float a = fabsf(src[j]);
            amax = amax > a ? amax : a;
        }
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = gq_f2h(d);
        int sum = 0;
        for (int j = 0; j < GQ_QK; j++) {
            b->qs[j] = (int8_t)roundf(src[j] * id);
            sum += b->qs[j];
        }
        b->s = gq_f2h((float)sum * d);
    }
}

uint32_t gq_dot_act_type(uint32_t wtype)
{
    switch (wtype) {
    case GGUF_T_Q2_K:
    case GGUF_T_Q3_K:
    case GGUF_T_Q4_K:
    case GGUF_T_Q5_K:
    case GGUF_T_Q6_K:
        return GGUF_T_Q8_K;
    case GGUF_T_Q4_0:
    case GGUF_T_Q5_0:
    case GGUF_T_Q8_0:
        return GGUF_T_Q8_0;
    case GGUF_T_Q4_1:
    case GGUF_T_Q5_1:
        return GGUF_T_Q8_1;
    default:
        return GGUF_T_COUNT;
    }
}

gq_quant_fn gq_dot_act_quant(uint32_t wtype)
{
    switch (gq_dot_act_type(wtype)) {
    case GGUF_T_Q8_K:
        return gq_quant_kernel(GGUF_T_Q8_K);
    case GGUF_T_Q8_0:
        return gq_quant_kernel(GGUF_T_Q8_0);
    case GGUF_T_Q8_1:
        return gq_quant_q8_1;
    default:
        return NULL;
    }
}

int64_t gq_dot_act_size(uint32_t wtype, int64_t n)
{
    switch (gq_dot_act_type(wtype)) {
    case GGUF_T_Q8_K:
        return n / GQ_QK_K * (int64_t)sizeof(struct gq_block_q8_k);
    case GGUF_T_Q8_0:
        return n / GQ_QK * (int64_t)sizeof(struct gq_block_q8_0);
    case GGUF_T_Q8_1:
        return n / GQ_QK * (int64_t)sizeof(struct gq_block_q8_1);
    default:
        return 0;
    }
}

/* ------------------------------------------------------------------------ */
/* Legacy weights: per block sum += (float)isum * d_w * d_a                  */

static float dot_q4_0(int n, const void *vw, const void *va)
{
    const struct gq_block_q4_0 *w = vw;
    const struct gq_block_q8_0 *a = va;
    float sum = 0.0f;
    for (int i = 0; i < n / GQ_QK; i++, w++, a++) {
        int isum = 0;
        for (int j = 0; j < GQ_QK / 2; j++) {
            isum += ((w->qs[j] & 0xf) - 8) * a->qs[j];
            isum += ((w->qs[j] >> 4) - 8) * a->qs[j + GQ_QK / 2];
        }
        sum += (float)isum * gq_h2f(w->d) * gq_h2f(a->d);
    }
    return sum;
}

static inline uint32_t load_u32(const uint8_t p[4])
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static float dot_q5_0(int n, const void *vw, const void *va)
{
    const struct gq_block_q5_0 *w = vw;
    const struct gq_block_q8_0 *a = va;
    float sum = 0.0f;
    for (int i = 0; i < n / GQ_QK; i++, w++, a++) {
        const uint32_t qh = load_u32(w->qh);
        int isum = 0;
        for (int j = 0; j < GQ_QK / 2; j++) {
            const int lo = (w->qs[j] & 0xf) | (int)((qh >> j) & 1) << 4;
            const int hi = (w->qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
            isum += (lo - 16) * a->qs[j] + (hi - 16) * a->qs[j + GQ_QK / 2];
        }
        sum += (float)isum * gq_h2f(w->d) * gq_h2f(a->d);
    }
    return sum;
}

static float dot_q8_0(int n, const void *vw, const void *va)
{
    const struct gq_block_q8_0 *w = vw;
    const struct gq_block_q8_0 *a = va;
    float sum = 0.0f;
    for (int i = 0; i < n / GQ_QK; i++, w++, a++) {
        int isum = 0;
        for (int j = 0; j < GQ_QK; j++) isum += w->qs[j] * a->qs[j];
        sum += (float)isum * gq_h2f(w->d) * gq_h2f(a->d);
    }
    return sum;
}

/* Q4_1/Q5_1: w = d q + m, so the block's dot is d_w d_a isum + m_w s_a. */
static float dot_q4_1(int n, const void *vw, const void *va)
{
    const struct gq_block_q4_1 *w = vw;
    const struct gq_block_q8_1 *a = va;
    float sum = 0.0f;
    for (int i = 0; i < n / GQ_QK; i++, w++, a++) {
        int isum = 0;
        for (int j = 0; j < GQ_QK / 2; j++)
            isum += (w->qs[j] & 0xf) * a->qs[j] + (w->qs[j] >> 4) * a->qs[j + GQ_QK / 2];
        sum += gq_h2f(w->d) * gq_h2f(a->d) * (float)isum + gq_h2f(w->m) * gq_h2f(a->s);
    }
    return sum;
}

static float dot_q5_1(int n, const void *vw, const void *va)
{
    const struct gq_block_q5_1 *w = vw;
    const struct gq_block_q8_1 *a = va;
    float sum = 0.0f;
    for (int i = 0; i < n / GQ_QK; i++, w++, a++) {
        const uint32_t qh = load_u32(w->qh);
        int isum = 0;
        for (int j = 0; j < GQ_QK / 2; j++) {
            const int lo = (w->qs[j] & 0xf) | (int)((qh >> j) & 1) << 4;
            const int hi = (w->qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
            isum += lo * a->qs[j] + hi * a->qs[j + GQ_QK / 2];
        }
        sum += gq_h2f(w->d) * gq_h2f(a->d) * (float)isum + gq_h2f(w->m) * gq_h2f(a->s);
    }
    return sum;
}

/* ------------------------------------------------------------------------ */
/* K-quants: per super-block sum += (d_w d_a) isum, then for the formats   */
/* with mins sum -= (dmin_w d_a) imin, where imin = sum of mn * bsums.      */

static float dot_q2_k(int n, const void *vw, const void *va)
{
    const struct gq_block_q2_k *w = vw;
    const struct gq_block_q8_k *a = va;
    float sum = 0.0f;
    for (int i = 0; i < n / GQ_QK_K; i++, w++, a++) {
        int isum = 0, imin = 0;
        for (int g = 0; g < 16; g++) {
            const int h = g / 8, k = (g % 8) / 2, off = 16 * (g % 2);
            int s = 0;
            for (int l = 0; l < 16; l++) {
                const int q = (w->qs[32 * h + off + l] >> (2 * k)) & 3;
                s += q * a->qs[16 * g + l];
            }
            isum += (w->scales[g] & 0xf) * s;
            imin += (w->scales[g] >> 4) * a->bsums[g];
        }
        sum += gq_h2f(w->d) * a->d * (float)isum;
        sum -= gq_h2f(w->dmin) * a->d * (float)imin;
    }
    return sum;
}

static float dot_q3_k(int n, const void *vw, const void *va)
{
    const struct gq_block_q3_k *w = vw;
    const struct gq_block_q8_k *a = va;
    float sum = 0.0f;
    for (int i = 0; i < n / GQ_QK_K; i++, w++, a++) {
        int isum = 0;
        for (int g = 0; g < 16; g++) {
            int s = 0;
            for (int l = 0; l < 16; l++) {
                const int e = 16 * g + l, h = e / 128, r = e % 128;
                int q = (w->qs[32 * h + r % 32] >> (2 * (r / 32))) & 3;
                if (!((w->hmask[e % 32] >> (e / 32)) & 1)) q -= 4;
                s += q * a->qs[e];
            }
            isum += gq_k3_scale(w->scales, g) * s;
        }
        sum += gq_h2f(w->d) * a->d * (float)isum;
    }
    return sum;
}

/* Q4_K and Q5_K (with_high: the fifth bit from qh). */
static float dot_k4(int n, const void *vw, const void *va, int with_high)
{
    const struct gq_block_q8_k *a = va;
    const size_t stride = with_high ? sizeof(struct gq_block_q5_k) : sizeof(struct gq_block_q4_k);
    const uint8_t *p = vw;
    float sum = 0.0f;
    for (int i = 0; i < n / GQ_QK_K; i++, a++, p += stride) {
        const struct gq_block_q4_k *w4 = (const struct gq_block_q4_k *)p;
        const struct gq_block_q5_k *w5 = (const struct gq_block_q5_k *)p;
        const uint8_t *scales = with_high ? w5->scales : w4->scales;
        const uint8_t *qs = with_high ? w5->qs : w4->qs;
        int isum = 0, imin = 0;
        for (int g = 0; g < 8; g++) {
            uint8_t sc, mn;
            gq_k4_scale_min(scales, g, &sc, &mn);
            int s = 0;
            for (int l = 0; l < 32; l++) {
                const uint8_t byte = qs[32 * (g / 2) + l];
                int q = g % 2 ? byte >> 4 : byte & 0xf;
                if (with_high) q |= ((w5->qh[l] >> g) & 1) << 4;
                s += q * a->qs[32 * g + l];
            }
            isum += sc * s;
            imin += mn * (a->bsums[2 * g] + a->bsums[2 * g + 1]);
        }
        sum += gq_h2f(w4->d) * a->d * (float)isum;
        sum -= gq_h2f(w4->dmin) * a->d * (float)imin;
    }
    return sum;
}

static float dot_q4_k(int n, const void *w, const void *a)
{
    return dot_k4(n, w, a, 0);
}

static float dot_q5_k(int n, const void *w, const void *a)
{
    return dot_k4(n, w, a, 1);
}

static float dot_q6_k(int n, const void *vw, const void *va)
{
    const struct gq_block_q6_k *w = vw;
    const struct gq_block_q8_k *a = va;
    float sum = 0.0f;
    for (int i = 0; i < n / GQ_QK_K; i++, w++, a++) {
        int isum = 0;
        for (int g = 0; g < 16; g++) {
            int s = 0;
            for (int l16 = 0; l16 < 16; l16++) {
                const int e = 16 * g + l16, h = e / 128, r = e % 128, l = r % 32, k = r / 32;
                const uint8_t byte = w->ql[64 * h + l + 32 * (k & 1)];
                const int lo = k < 2 ? byte & 0xf : byte >> 4;
                const int hi = (w->qh[32 * h + l] >> (2 * k)) & 3;
                s += ((lo | hi << 4) - 32) * a->qs[e];
            }
            isum += w->scales[g] * s;
        }
        sum += gq_h2f(w->d) * a->d * (float)isum;
    }
    return sum;
}

const struct gq_dot_kernels gq_dot_scalar = {
    .dot = {
        [GGUF_T_Q4_0] = dot_q4_0,
        [GGUF_T_Q4_1] = dot_q4_1,
        [GGUF_T_Q5_0] = dot_q5_0,
        [GGUF_T_Q5_1] = dot_q5_1,
        [GGUF_T_Q8_0] = dot_q8_0,
        [GGUF_T_Q2_K] = dot_q2_k,
        [GGUF_T_Q3_K] = dot_q3_k,
        [GGUF_T_Q4_K] = dot_q4_k,
        [GGUF_T_Q5_K] = dot_q5_k,
        [GGUF_T_Q6_K] = dot_q6_k,
    },
};

/* ------------------------------------------------------------------------ */
/* Dispatch                                                                  */

#define N_LEVELS 3

static const struct gq_dot_kernels *const dot_tables[N_LEVELS] = {
    [GGUF_SIMD_SCALAR] = &gq_dot_scalar,
#ifdef GQ_HAVE_AVX2
    [GGUF_SIMD_AVX2] = &gq_dot_avx2,
#endif
};

gq_dot_fn gq_dot_kernel_at(int level, uint32_t wtype)
{
    if (wtype >= GGUF_T_COUNT || level < 0) return NULL;
    for (int l = level < N_LEVELS ? level : N_LEVELS - 1; l >= 0; l--)
        if (dot_tables[l] && dot_tables[l]->dot[wtype]) return dot_tables[l]->dot[wtype];
    return NULL;
}

gq_dot_fn gq_dot_kernel(uint32_t wtype)
{
    return gq_dot_kernel_at(gguf_simd_get(), wtype);
}
