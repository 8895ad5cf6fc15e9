/* kpack-avx2.c -- Q4_K, Q5_K and Q6_K products of many columns at the
 * avx2 level, on activations packed once (gguf_matmul_pack()).
 *
 * The row tiles of matmul-x86.c (k4_tile(), q6k_tile()) multiply each
 * sub-block's 32 weights with an activation vector (vpmaddubsw: int16 pair
 * sums), then with the sub-block's scale (vpmaddwd): two multiplies for 32
 * products, and the CPU issues two a cycle, which bounds them.  Here the
 * weights and the activations of 128 elements lie in one order of their
 * own, the "quarter order": a vector holds a quarter (8 bytes) of each of
 * four sub-blocks of 32, so that the int16 pair sums of four such vectors
 * can be added before one vpmaddwd multiplies each lane with its
 * sub-block's scale.  The int16 sums cannot overflow: at most 4 * 2 * 31 *
 * 128 = 31744 for Q5_K's quants; Q6_K's sub-blocks of 16 add two vectors,
 * 2 * 2 * 63 * 128 = 32256.  That is 5 multiplies for 128 products of
 * Q4_K and Q5_K, 6 of Q6_K, where the row tiles take 8.
 *
 * The activations take the quarter order when packed (gq_kpack()), once
 * for all the products of an input; the weights in a buffer on the stack,
 * up to 16 rows and KP_RANGE blocks of them at a time, unpacked to bytes
 * beside their scales as vectors (struct kp_block), which every eight
 * columns of the product then read.  A block's integer sums are exact,
 * and are totalled, scaled and added to the outputs' sums as the scalar
 * kernels of dot.c do, block after block: the bits of gguf_matmul().
 *
 * Element 128g + 32k + 8v + m of a block (g = 0, 1; k, v = 0 .. 3; m = 0
 * .. 7) lies at byte 128g + 32v + 8k + m in the quarter order. */
#include <config.h>

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/dot.h"
#include "quant/x86.h"

/* A packed block: panel p's block i at (p * nb + i) * KP_PANEL_BLOCK, the
 * scales d of its 16 columns; then for each four of them (a sub-panel s,
 * at KP_BSUMS + KP_SUB_SUMS * s) their sums of 16 activations b16[c][k]
 * in four vectors and those of 32, b32[c][k] = b16[c][2k] + b16[c][2k +
 * 1], in two, pairs by column: vector u has at int16 lane 8h + 2c + e
 * (h, e = 0, 1; c = 0 .. 3) b[c][4u + 2h + e], so that one vpmaddwd with
 * a row's scales or mins laid out alike (struct kp_block, mv) sums two
 * pairs of each of the four columns, and the vectors' sums fold to the
 * four totals by adding their halves; then the columns' quants in the
 * quarter order, 256 bytes each.  Columns past ncols are zero. */
#define KP_BSUMS 64
#define KP_SUB_SUMS (6 * 32)
#define KP_QS (KP_BSUMS + 4 * KP_SUB_SUMS)
#define KP_PANEL_BLOCK (KP_QS + 16 * GQ_QK_K)
_Static_assert(KP_PANEL_BLOCK % 64 == 0, "packed blocks keep their 64-byte alignment");

/* A weight block unpacked: dd d four times, then dmin four times (0 for
 * Q6_K), as floats; sc[] the int16 scales by lane of the int16 sums of
 * the quarter order (Q4_K, Q5_K: sc[g], lanes 4k .. 4k + 3 scale 4g + k;
 * Q6_K: sc[2g + h], lanes 4k .. 4k + 3 scale 8g + 2k + h); mv[u] what
 * multiplies the activations' sums vector u of a sub-panel, m[4u + 2h +
 * e] at lanes 8h + 2c + e (Q4_K, Q5_K: u = 0, 1, m the 8 mins, with the
 * 32-sums; Q6_K: u = 0 .. 3, m the 16 scales, with the 16-sums, for its
 * quants' offset of 32); the quants q (0 .. 15, 31 or 63) in the quarter
 * order. */
struct kp_block {
    float dd[8];
    int16_t sc[4][16];
    int16_t mv[4][16];
    uint8_t q[GQ_QK_K];
};
_Static_assert(sizeof(struct kp_block) == 544, "a kp_block is 544 bytes");

/* Blocks of a row in the buffer at most (16 rows of them take 68 KiB):
 * the activations of eight columns over as many blocks, about 20 KiB,
 * stay in the L1 cache while the sixteen rows pass over them (one thread,
 * 1536 x 8960 Q6_K weights times 64 columns: 55 GMAC/s with runs of 14
 * blocks, 66 with 8). */
#define KP_RANGE 8

#define UNROLL _Pragma("GCC unroll 8")

/* The 128 elements a (elements 0-31), b, c, d (96-127) in the quarter
 * order at dst. */
static inline void quarter_store(__m256i a, __m256i b, __m256i c, __m256i d, uint8_t *dst)
{
    const __m256i t0 = _mm256_unpacklo_epi64(a, b), t1 = _mm256_unpackhi_epi64(a, b);
    const __m256i t2 = _mm256_unpacklo_epi64(c, d), t3 = _mm256_unpackhi_epi64(c, d);
    _mm256_store_si256((__m256i *)dst, _mm256_permute2x128_si256(t0, t2, 0x20));
    _mm256_store_si256((__m256i *)(dst + 32), _mm256_permute2x128_si256(t1, t3, 0x20));
    _mm256_store_si256((__m256i *)(dst + 64), _mm256_permute2x128_si256(t0, t2, 0x31));
    _mm256_store_si256((__m256i *)(dst + 96), _mm256_permute2x128_si256(t1, t3, 0x31));
}

size_t gq_kpack_block_bytes(void)
{
    return KP_PANEL_BLOCK;
}

void gq_kpack(const void *act, size_t act_stride, int64_t k, int64_t ncols, int64_t p0, int64_t p1, void *packed)
{
    const int64_t nb = k / GQ_QK_K;
    for (int64_t p = p0; p < p1; p++)
        for (int64_t i = 0; i < nb; i++) {
            uint8_t *blk = (uint8_t *)packed + (size_t)(p * nb + i) * KP_PANEL_BLOCK;
            for (int j = 0; j < 16; j++) {
                const int64_t c = 16 * p + j;
                uint8_t *qs = blk + KP_QS + GQ_QK_K * j;
                int16_t bs[16] = {0}; /* the column's 16-sums (past ncols: zero, as d and qs) */
                if (c < ncols) {
                    const struct gq_block_q8_k *a =
                        (const struct gq_block_q8_k *)((const uint8_t *)act + (size_t)c * act_stride) + i;
                    memcpy(blk + 4 * j, &a->d, 4);
                    memcpy(bs, a->bsums, sizeof bs);
                    for (int g = 0; g < 2; g++) {
                        const __m256i *y = (const __m256i *)(a->qs + 128 * g);
                        quarter_store(_mm256_loadu_si256(y), _mm256_loadu_si256(y + 1), _mm256_loadu_si256(y + 2),
                                      _mm256_loadu_si256(y + 3), qs + 128 * g);
                    }
                } else {
                    memset(blk + 4 * j, 0, 4);
                    memset(qs, 0, GQ_QK_K);
                }
                /* sum t of the column (j % 4 in its sub-panel) at int16 lane
                 * 8 (t / 2 % 2) + 2 (j % 4) + t % 2 of vector t / 4 */
                int16_t *b16 = (int16_t *)(blk + KP_BSUMS + KP_SUB_SUMS * (j / 4)), *b32 = b16 + 4 * 16;
                for (int t = 0; t < 16; t++) {
                    const int at = 16 * (t / 4) + 8 * (t / 2 % 2) + 2 * (j % 4) + t % 2;
                    b16[at] = bs[t];
                    if (t < 8) b32[at] = (int16_t)(bs[2 * t] + bs[2 * t + 1]);
                }
            }
        }
}

/* mv[u] of struct kp_block from m4, int16 values 4u .. 4u + 3 in each
 * 64-bit lane. */
static inline void kp_mv(struct kp_block *o, int u, __m256i m4)
{
    const __m256i idx = _mm256_setr_epi8(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5,
                                         6, 7, 4, 5, 6, 7);
    _mm256_store_si256((__m256i *)o->mv[u], _mm256_shuffle_epi8(m4, idx));
}

/* The vpshufb indices that put int16 values s0, s1 (lanes 0-7 of an
 * 128-bit half's source) at lanes 0-3 and 4-7 of the low half, and s2,
 * s3 (of the high half's source) at lanes 8-11 and 12-15. */
static inline __m256i kp_scale_idx(int s0, int s1, int s2, int s3)
{
    const __m256i pick = _mm256_setr_epi16((short)s0, (short)s0, (short)s0, (short)s0, (short)s1, (short)s1,
                                           (short)s1, (short)s1, (short)s2, (short)s2, (short)s2, (short)s2,
                                           (short)s3, (short)s3, (short)s3, (short)s3);
    /* int16 index s -> bytes 2s, 2s + 1 */
    return _mm256_add_epi8(_mm256_mullo_epi16(pick, _mm256_set1_epi16(0x0202)), _mm256_set1_epi16(0x0100));
}

/* dd of struct kp_block. */
static inline void kp_dd(struct kp_block *o, float d, float dmin)
{
    _mm256_store_ps(o->dd, _mm256_setr_ps(d, d, d, d, dmin, dmin, dmin, dmin));
}

/* A Q4_K (with_high 0) or Q5_K (1) block at blk unpacked into *o. */
static inline __attribute__((always_inline)) void kp_from_k4(const uint8_t *blk, struct kp_block *o,
                                                             const int with_high)
{
    const struct gq_block_q4_k *w = (const struct gq_block_q4_k *)blk;
    const struct gq_block_q5_k *w5 = (const struct gq_block_q5_k *)blk;
    const uint8_t *qs = with_high ? w5->qs : w->qs;
    const __m256i low4 = _mm256_set1_epi8(0x0f), bit4 = _mm256_set1_epi8(0x10);
    kp_dd(o, _cvtsh_ss(w->d), _cvtsh_ss(w->dmin));
    const __m128i scmn = q4k_scales_mins(w->scales);
    const __m128i mins = _mm_cvtepu8_epi16(_mm_srli_si128(scmn, 8));
    kp_mv(o, 0, _mm256_broadcastq_epi64(mins));
    kp_mv(o, 1, _mm256_broadcastq_epi64(_mm_unpackhi_epi64(mins, mins)));
    const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scmn));
    for (int g = 0; g < 2; g++) {
        /* lanes 4k .. 4k + 3: scale 4g + k */
        _mm256_store_si256((__m256i *)o->sc[g],
                           _mm256_shuffle_epi8(sc16, kp_scale_idx(4 * g, 4 * g + 1, 4 * g + 2, 4 * g + 3)));
    }
    __m256i hbits = with_high ? _mm256_loadu_si256((const __m256i *)w5->qh) : _mm256_setzero_si256();
    for (int g = 0; g < 2; g++) {
        __m256i x[4]; /* sub-blocks 4g .. 4g + 3: the nibbles of qs bytes 64g .. 64g + 63 */
        for (int h = 0; h < 2; h++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 64 * g + 32 * h));
            x[2 * h] = _mm256_and_si256(q, low4);
            x[2 * h + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            if (with_high) { /* bit 2j of qh byte l above element l of sub-block 2j, 2j + 1 above 2j + 1 */
                x[2 * h] = _mm256_or_si256(x[2 * h], _mm256_and_si256(_mm256_slli_epi16(hbits, 4), bit4));
                x[2 * h + 1] = _mm256_or_si256(x[2 * h + 1], _mm256_and_si256(_mm256_slli_epi16(hbits, 3), bit4));
                hbits = _mm256_srli_epi16(hbits, 2);
            }
        }
        quarter_store(x[0], x[1], x[2], x[3], o->q + 128 * g);
    }
}

/* A Q6_K block at blk unpacked into *o. */
static inline void kp_from_q6k(const uint8_t *blk, struct kp_block *o)
{
    const struct gq_block_q6_k *w = (const struct gq_block_q6_k *)blk;
    kp_dd(o, _cvtsh_ss(w->d), 0.0f);
    /* -32 times the scales: -32 sum(sc bsums) is what the offset of the quants takes off */
    const __m256i sc = _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w->scales)),
                                          _mm256_set1_epi16(-32));
    kp_mv(o, 0, _mm256_permute4x64_epi64(sc, 0x00));
    kp_mv(o, 1, _mm256_permute4x64_epi64(sc, 0x55));
    kp_mv(o, 2, _mm256_permute4x64_epi64(sc, 0xaa));
    kp_mv(o, 3, _mm256_permute4x64_epi64(sc, 0xff));
    for (int g = 0; g < 2; g++) {
        const struct q6k_half hv = q6k_load_half(w, g); /* sc16: scales 8g .. 8g + 7, both 128-bit lanes */
        for (int h = 0; h < 2; h++) {
            /* lanes 4k .. 4k + 3: scale 8g + 2k + h */
            _mm256_store_si256((__m256i *)o->sc[2 * g + h],
                               _mm256_shuffle_epi8(hv.sc16, kp_scale_idx(h, 2 + h, 4 + h, 6 + h)));
        }
        quarter_store(q6k_quants(hv.ql0, hv.ql1, hv.qh, 0), q6k_quants(hv.ql0, hv.ql1, hv.qh, 1),
                      q6k_quants(hv.ql0, hv.ql1, hv.qh, 2), q6k_quants(hv.ql0, hv.ql1, hv.qh, 3), o->q + 128 * g);
    }
}

static inline __attribute__((always_inline)) void kp_from(const uint8_t *blk, struct kp_block *o, const int type)
{
    if (type == GGUF_T_Q6_K)
        kp_from_q6k(blk, o);
    else if (type == GGUF_T_Q5_K)
        kp_from_k4(blk, o, 1);
    else
        kp_from_k4(blk, o, 0);
}

/* Lane c of each 128-bit half: the sum of v[c]'s four lanes in that half
 * (vphaddd's result, in shuffles and additions, which this CPU runs
 * about three times as fast). */
static inline __m256i kp_fold4(const __m256i v[4])
{
    const __m256i s01 = _mm256_add_epi32(_mm256_unpacklo_epi32(v[0], v[1]), _mm256_unpackhi_epi32(v[0], v[1]));
    const __m256i s23 = _mm256_add_epi32(_mm256_unpacklo_epi32(v[2], v[3]), _mm256_unpackhi_epi32(v[2], v[3]));
    return _mm256_add_epi32(_mm256_unpacklo_epi64(s01, s23), _mm256_unpackhi_epi64(s01, s23));
}

/* The sums mm (the activations' sums times a row's mins or scales, two
 * lanes a column, struct kp_block) of the four columns of sub-panel sub. */
static inline __m256i kp_sums(const struct kp_block *b, const uint8_t *blk, int sub, const int type)
{
    /* the sub-panel's 16-sums (Q6_K) or 32-sums */
    const __m256i *bs = (const __m256i *)(blk + KP_BSUMS + KP_SUB_SUMS * sub) + (type == GGUF_T_Q6_K ? 0 : 4);
    const __m256i *mv = (const __m256i *)b->mv;
    __m256i mm = _mm256_add_epi32(_mm256_madd_epi16(_mm256_load_si256(bs), _mm256_load_si256(mv)),
                                  _mm256_madd_epi16(_mm256_load_si256(bs + 1), _mm256_load_si256(mv + 1)));
    if (type == GGUF_T_Q6_K)
        mm = _mm256_add_epi32(mm, _mm256_add_epi32(_mm256_madd_epi16(_mm256_load_si256(bs + 2), _mm256_load_si256(mv + 2)),
                                                   _mm256_madd_epi16(_mm256_load_si256(bs + 3), _mm256_load_si256(mv + 3))));
    return mm;
}

/* Halves added: a's, then b's. */
static inline __m256i kp_halves(__m256i a, __m256i b)
{
    return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
}

/* Columns c0 .. c0 + nc - 1 (nc <= C, C = 4 or 8, from sub-panel sub of a
 * packed panel; 8 from an even one) of one row, blocks i0 .. i0 + n - 1:
 * from the row's unpacked blocks wb and the packed blocks pa (block i0 of
 * the panel), added to the sums in out (first: from zero).  The float
 * steps of matmul-x86.c's k_block_step4() and k_block_step4_mins(), a
 * column a lane. */
static inline __attribute__((always_inline)) void kp_tile(const struct kp_block *wb, int n, const uint8_t *pa,
                                                          int sub, float *out, size_t out_stride, int nc,
                                                          int first, const int C, const int type)
{
    float t[8] = {0};
    for (int c = 0; c < nc && !first; c++) t[c] = out[(size_t)c * out_stride];
    __m128 acc4 = _mm_loadu_ps(t);    /* C = 4 */
    __m256 acc8 = _mm256_loadu_ps(t); /* C = 8 */
    for (int i = 0; i < n; i++) {
        const struct kp_block *b = wb + i;
        const uint8_t *blk = pa + (size_t)i * KP_PANEL_BLOCK;
        const int8_t *ys = (const int8_t *)blk + KP_QS + GQ_QK_K * 4 * sub;
        __m256i is[8];
        UNROLL
        for (int c = 0; c < C; c++) is[c] = _mm256_setzero_si256();
        UNROLL
        for (int g = 0; g < 2; g++) {
            const __m256i *x = (const __m256i *)(b->q + 128 * g);
            const __m256i w0 = _mm256_load_si256(x), w1 = _mm256_load_si256(x + 1);
            const __m256i w2 = _mm256_load_si256(x + 2), w3 = _mm256_load_si256(x + 3);
            UNROLL
            for (int c = 0; c < C; c++) {
                const __m256i *y = (const __m256i *)(ys + GQ_QK_K * c + 128 * g);
                const __m256i p01 = _mm256_add_epi16(_mm256_maddubs_epi16(w0, _mm256_load_si256(y)),
                                                     _mm256_maddubs_epi16(w1, _mm256_load_si256(y + 1)));
                const __m256i p23 = _mm256_add_epi16(_mm256_maddubs_epi16(w2, _mm256_load_si256(y + 2)),
                                                     _mm256_maddubs_epi16(w3, _mm256_load_si256(y + 3)));
                if (type == GGUF_T_Q6_K) {
                    is[c] = _mm256_add_epi32(is[c], _mm256_madd_epi16(p01, _mm256_load_si256((const __m256i *)b->sc[2 * g])));
                    is[c] = _mm256_add_epi32(is[c],
                                             _mm256_madd_epi16(p23, _mm256_load_si256((const __m256i *)b->sc[2 * g + 1])));
                } else {
                    is[c] = _mm256_add_epi32(is[c], _mm256_madd_epi16(_mm256_add_epi16(p01, p23),
                                                                      _mm256_load_si256((const __m256i *)b->sc[g])));
                }
                __asm__("" : "+x"(is[c])); /* one chain of additions in a register */
            }
        }
        /* h: is's totals by column in the halves; mm: the mins' (Q6_K: the
         * offset's, already times -32) */
        const __m256i h0 = kp_fold4(is), mm0 = kp_sums(b, blk, sub, type);
        if (C == 4) {
            const __m128 ad = _mm_load_ps((const float *)blk + 4 * sub);
            if (type == GGUF_T_Q6_K) {
                const __m256i t6 = _mm256_add_epi32(h0, mm0);
                const __m128i sum = _mm_add_epi32(_mm256_castsi256_si128(t6), _mm256_extracti128_si256(t6, 1));
                acc4 = _mm_add_ps(acc4, _mm_mul_ps(_mm_mul_ps(_mm_load_ps(b->dd), ad), _mm_cvtepi32_ps(sum)));
            } else {
                const __m256 p = _mm256_mul_ps(_mm256_mul_ps(_mm256_load_ps(b->dd), _mm256_set_m128(ad, ad)),
                                               _mm256_cvtepi32_ps(kp_halves(h0, mm0)));
                acc4 = _mm_sub_ps(_mm_add_ps(acc4, _mm256_castps256_ps128(p)), _mm256_extractf128_ps(p, 1));
            }
        } else {
            const __m256i h1 = kp_fold4(is + 4), mm1 = kp_sums(b, blk, sub + 1, type);
            const __m256 ad = _mm256_load_ps((const float *)blk + 4 * sub);
            const __m256 dad = _mm256_mul_ps(_mm256_broadcast_ss(b->dd), ad);
            if (type == GGUF_T_Q6_K) {
                const __m256i sum = kp_halves(_mm256_add_epi32(h0, mm0), _mm256_add_epi32(h1, mm1));
                acc8 = _mm256_add_ps(acc8, _mm256_mul_ps(dad, _mm256_cvtepi32_ps(sum)));
            } else {
                acc8 = _mm256_add_ps(acc8, _mm256_mul_ps(dad, _mm256_cvtepi32_ps(kp_halves(h0, h1))));
                acc8 = _mm256_sub_ps(acc8, _mm256_mul_ps(_mm256_mul_ps(_mm256_broadcast_ss(b->dd + 4), ad),
                                                         _mm256_cvtepi32_ps(kp_halves(mm0, mm1))));
            }
        }
    }
    if (C == 4)
        _mm_storeu_ps(t, acc4);
    else
        _mm256_storeu_ps(t, acc8);
    for (int c = 0; c < nc; c++) out[(size_t)c * out_stride] = t[c];
}

/* Each type and width compiled on its own (see IL2_COLUMNS_FN,
 * matmul-x86.c). */
#define KP_TILE_FN(NAME, TYPE, C)                                                                               \
    static __attribute__((noinline)) void NAME(const struct kp_block *wb, int n, const uint8_t *pa, int sub,    \
                                               float *out, size_t out_stride, int nc, int first)                \
    {                                                                                                         \
        kp_tile(wb, n, pa, sub, out, out_stride, nc, first, C, TYPE);                                           \
    }
KP_TILE_FN(kp_tile_q4_k, GGUF_T_Q4_K, 4)
KP_TILE_FN(kp_tile_q5_k, GGUF_T_Q5_K, 4)
KP_TILE_FN(kp_tile_q6_k, GGUF_T_Q6_K, 4)
KP_TILE_FN(kp_tile8_q4_k, GGUF_T_Q4_K, 8)
KP_TILE_FN(kp_tile8_q5_k, GGUF_T_Q5_K, 8)
KP_TILE_FN(kp_tile8_q6_k, GGUF_T_Q6_K, 8)

/* gq_kpacked_avx2() for one type. */
static inline __attribute__((always_inline)) void kp_product(int64_t whole, int64_t k, const void *w, size_t w_stride,
                                                             int64_t nrows, const void *packed, int64_t ncols,
                                                             float *out, size_t out_stride, const int type)
{
    typedef void (*tile_fn)(const struct kp_block *, int, const uint8_t *, int, float *, size_t, int, int);
    const tile_fn tile4 = type == GGUF_T_Q6_K ? kp_tile_q6_k : type == GGUF_T_Q5_K ? kp_tile_q5_k : kp_tile_q4_k;
    const tile_fn tile8 = type == GGUF_T_Q6_K ? kp_tile8_q6_k : type == GGUF_T_Q5_K ? kp_tile8_q5_k : kp_tile8_q4_k;
    const size_t bb = il2_block_bytes(type);
    const int nb = (int)(k / GQ_QK_K);
    const uint8_t *wb = w, *pk = packed;
    struct kp_block buf[GQ_IL16_ROWS * KP_RANGE] __attribute__((aligned(32)));
    /* the rows' blocks in as few runs as KP_RANGE allows, of equal length */
    const int runs = (nb + KP_RANGE - 1) / KP_RANGE, step = (nb + runs - 1) / runs;
    for (int64_t r0 = 0; r0 < nrows; r0 += GQ_IL16_ROWS) {
        const int rows = nrows - r0 < GQ_IL16_ROWS ? (int)(nrows - r0) : GQ_IL16_ROWS;
        for (int i0 = 0; i0 < nb; i0 += step) {
            const int n = nb - i0 < step ? nb - i0 : step;
            /* the rows' blocks i0 .. i0 + n - 1 unpacked, row r's at buf + KP_RANGE * r */
            for (int i = 0; i < n; i++) {
                if (r0 < whole) { /* a group of interleaved rows: its chunk as plain blocks first */
                    uint8_t plain[GQ_IL16_ROWS * sizeof(struct gq_block_q6_k)];
                    il2_plain(gq_il_chunk(wb, w_stride, r0 / GQ_IL16_ROWS, i0 + i, bb), 1, plain, type);
                    for (int r = 0; r < GQ_IL16_ROWS; r++) kp_from(plain + (size_t)r * bb, buf + KP_RANGE * r + i, type);
                } else {
                    for (int r = 0; r < rows; r++)
                        kp_from(wb + (size_t)(r0 + r) * w_stride + (size_t)(i0 + i) * bb, buf + KP_RANGE * r + i, type);
                }
            }
            /* the interleaved rows' next run, the chunks after these (of this
             * group or the next), a sixteenth as each row of the first tile
             * is taken */
            const char *next = (const char *)gq_il_chunk(wb, w_stride, r0 / GQ_IL16_ROWS, i0 + n, bb);
            const size_t part = r0 < whole && (r0 + GQ_IL16_ROWS < whole || i0 + n < nb) ? (size_t)step * bb : 0;
            /* eight columns a tile, four for the last four or fewer */
            for (int64_t c0 = 0; c0 < ncols; c0 += ncols - c0 > 4 ? 8 : 4) {
                const uint8_t *pa = pk + (size_t)((c0 / 16) * nb + i0) * KP_PANEL_BLOCK;
                const int nc = ncols - c0 < 8 ? (int)(ncols - c0) : 8;
                for (int r = 0; r < rows; r++) {
                    for (size_t o = 0; c0 == 0 && o < part; o += 64) _mm_prefetch(next + (size_t)r * part + o, _MM_HINT_T0);
                    (nc > 4 ? tile8 : tile4)(buf + KP_RANGE * r, n, pa, (int)(c0 % 16 / 4),
                                             out + (size_t)c0 * out_stride + (size_t)(r0 + r), out_stride, nc, i0 == 0);
                }
            }
        }
    }
}

/* Each type's product compiled on its own, and its form on plain rows
 * (gq_packed_fn). */
#define KP_PRODUCT_FN(NAME, PLAIN, TYPE)                                                                          \
    static __attribute__((noinline)) void NAME(int64_t whole, int64_t k, const void *w, size_t w_stride,          \
                                               int64_t nrows, const void *packed, int64_t ncols, float *out,      \
                                               size_t out_stride)                                                 \
    {                                                                                                            \
        kp_product(whole, k, w, w_stride, nrows, packed, ncols, out, out_stride, TYPE);                            \
    }                                                                                                            \
    void PLAIN(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *packed, int64_t ncols,       \
               float *out, size_t out_stride)                                                                     \
    {                                                                                                            \
        NAME(0, k, w, w_stride, nrows, packed, ncols, out, out_stride);                                          \
    }
KP_PRODUCT_FN(kp_product_q4_k, gq_kpacked_avx2_q4_k, GGUF_T_Q4_K)
KP_PRODUCT_FN(kp_product_q5_k, gq_kpacked_avx2_q5_k, GGUF_T_Q5_K)
KP_PRODUCT_FN(kp_product_q6_k, gq_kpacked_avx2_q6_k, GGUF_T_Q6_K)

void gq_kpacked_avx2(uint32_t wtype, int64_t whole, int64_t k, const void *w, size_t w_stride, int64_t nrows,
                     const void *packed, int64_t ncols, float *out, size_t out_stride)
{
    (wtype == GGUF_T_Q6_K   ? kp_product_q6_k
     : wtype == GGUF_T_Q5_K ? kp_product_q5_k
                            : kp_product_q4_k)(whole, k, w, w_stride, nrows, packed, ncols, out, out_stride);
}
