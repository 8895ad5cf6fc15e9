/* x86.h -- small AVX2 helpers shared by the x86 kernels of quant/ (included
 * by files compiled with at least -mavx2 -mfma -mf16c); internal. */
#ifndef GGUF_QUANT_X86_H
#define GGUF_QUANT_X86_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/dot.h"

/* The sum of the 8 float lanes of v. */
static inline float hsum_f32(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The sum of the 8 int32 lanes of v (exact: the block sums are far below
 * 2^31). */
static inline int32_t hsum_i32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

/* One block of a Q4_0, Q5_0 or Q8_0 product added to an output's sum:
 * the block's whole integer sum isum, t = (float)isum * d_w, then sum =
 * fma(t, d_a, sum).  Every SIMD level's products of these types take
 * these steps, block after block (the lanes of a vector holding rows or
 * columns, never parts of one sum), so they give the same bits at avx2,
 * avx512 and amx, on plain and on interleaved rows. */
static inline float legacy_block_step(float sum, int32_t isum, float dw, float da)
{
    const __m128 t = _mm_mul_ss(_mm_cvtsi32_ss(_mm_setzero_ps(), isum), _mm_set_ss(dw));
    return _mm_cvtss_f32(_mm_fmadd_ss(t, _mm_set_ss(da), _mm_set_ss(sum)));
}

/* 16 bytes of packed nibbles as 32 bytes: low nibbles (elements 0..15)
 * then high nibbles (elements 16..31), each 0..15. */
static inline __m256i unpack_nibbles32(const uint8_t *p)
{
    const __m128i q = _mm_loadu_si128((const __m128i *)p);
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

/* Byte j is 0xff where bit j of x is set, else 0. */
static inline __m256i bits_to_bytes(uint32_t x)
{
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32((int)x),
        _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0202020202020202,
                           0x0303030303030303));
    /* byte k of each 8 has every bit but bit k set */
    const __m256i others = _mm256_set1_epi64x((long long)0x7fbfdfeff7fbfdfeULL);
    return _mm256_cmpeq_epi8(_mm256_or_si256(spread, others), _mm256_set1_epi64x(-1));
}

/* 8 int32 lanes summing to the dot product of the signed bytes x and y
 * (x in -128..127 but not paired with y = -128; our activations are
 * -127..127 here). */
static inline __m256i dot_i8(__m256i x, __m256i y)
{
    const __m256i ax = _mm256_sign_epi8(x, x);
    const __m256i sy = _mm256_sign_epi8(y, x);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, sy), _mm256_set1_epi16(1));
}

/* A half as a float by the F16C instruction: exact, the value of
 * gq_h2f() (NaNs aside, which no finite result depends on). */
static inline float h2f(uint16_t h)
{
    return _cvtsh_ss(h);
}

static inline uint16_t load_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static inline uint32_t load_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* The 8 six-bit scales (low 8 bytes) and mins (high 8 bytes) of a Q4_K
 * block, as in quant/blocks.h. */
static inline __m128i q4k_scales_mins(const uint8_t *scales)
{
    /* 32-bit words u0 u1 u2 of the 12 bytes (and 4 bytes of qs beyond,
     * unused): scales 0-3 = u0 & 0x3f..; 4-7 = (u2 & 0x0f..) | (u0 >> 6 &
     * 3..) << 4; mins 0-3 = u1 & 0x3f..; 4-7 = (u2 >> 4 & 0x0f..) | (u1 >> 6
     * & 3..) << 4 -- one word per lane. */
    const __m128i v = _mm_loadu_si128((const __m128i *)scales);
    const __m128i a = _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 1, 2, 0)); /* u0 u2 u1 u2 */
    const __m128i b = _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 1, 0, 0)); /* u0 u0 u1 u1 */
    const __m128i lo = _mm_and_si128(_mm_srlv_epi32(a, _mm_setr_epi32(0, 0, 0, 4)),
                                     _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
    const __m128i hi = _mm_and_si128(_mm_srli_epi32(b, 6), _mm_setr_epi32(0, 0x03030303, 0, 0x03030303));
    return _mm_or_si128(lo, _mm_slli_epi32(hi, 4));
}

/* Half h (0 or 1) of a Q6_K block: its 8 scales as int16 in both 128-bit
 * lanes, and the bytes of its quants (see q6k_quants()). */
struct q6k_half {
    __m256i sc16, ql0, ql1, qh;
};

static inline struct q6k_half q6k_load_half(const struct gq_block_q6_k *w, int h)
{
    const __m128i sc8 = _mm_loadu_si128((const __m128i *)w->scales);
    return (struct q6k_half){
        .sc16 = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(h ? _mm_srli_si128(sc8, 8) : sc8)),
        .ql0 = _mm256_loadu_si256((const __m256i *)(w->ql + 64 * h)),
        .ql1 = _mm256_loadu_si256((const __m256i *)(w->ql + 64 * h + 32)),
        .qh = _mm256_loadu_si256((const __m256i *)(w->qh + 32 * h)),
    };
}

/* Q6_K: half h (0 or 1) of a block has 128 quants in 32 bytes of ql0,
 * 32 of ql1 (low nibbles) and 32 of qh (2 high bits each).  quants k = 0..3
 * (32 each) are ql0/ql1 low nibbles (k = 0, 1), then their high nibbles
 * (k = 2, 3), with bits 2k, 2k+1 of qh above: returned as bytes 0..63. */
static inline __m256i q6k_quants(__m256i ql0, __m256i ql1, __m256i qh, int k)
{
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i ql = k & 1 ? ql1 : ql0;
    const __m256i lo = k < 2 ? _mm256_and_si256(ql, low4)
                             : _mm256_and_si256(_mm256_srli_epi16(ql, 4), low4);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), _mm256_set1_epi8(3));
    return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
}

/* The int16 scales of quants k of q6k_quants() from sc16 (scales 8h ..
 * 8h + 7 of the half as int16 in both 128-bit lanes): scale 2k for its
 * elements 0-15, 2k + 1 for 16-31. */
static inline __m256i q6k_scales(__m256i sc16, int k)
{
    return _mm256_shuffle_epi8(
        sc16, _mm256_set_m128i(_mm_set1_epi16((short)(0x0100 + 0x0202 * (2 * k + 1))),
                               _mm_set1_epi16((short)(0x0100 + 0x0202 * 2 * k))));
}

/* The 32 weights of block i of a row of Q4_0, Q5_0 or Q8_0 as signed
 * bytes q - 8, q - 16, q, its scale in *d (and 0 in *m, for the kernels
 * that take the offset types too). */
static inline __m256i q4_0_weights(const uint8_t *row, int i, float *d, float *m)
{
    const struct gq_block_q4_0 *b = (const struct gq_block_q4_0 *)row + i;
    *d = _cvtsh_ss(b->d);
    *m = 0.0f;
    return _mm256_sub_epi8(unpack_nibbles32(b->qs), _mm256_set1_epi8(8));
}

static inline __m256i q5_0_weights(const uint8_t *row, int i, float *d, float *m)
{
    const struct gq_block_q5_0 *b = (const struct gq_block_q5_0 *)row + i;
    *d = _cvtsh_ss(b->d);
    *m = 0.0f;
    /* q - 16 as a byte: the nibble, with 0xf0 added where bit 4 is 0 */
    const __m256i no_high = _mm256_andnot_si256(bits_to_bytes(load_u32(b->qh)), _mm256_set1_epi8((char)0xf0));
    return _mm256_or_si256(unpack_nibbles32(b->qs), no_high);
}

static inline __m256i q8_0_weights(const uint8_t *row, int i, float *d, float *m)
{
    const struct gq_block_q8_0 *b = (const struct gq_block_q8_0 *)row + i;
    *d = _cvtsh_ss(b->d);
    *m = 0.0f;
    return _mm256_loadu_si256((const __m256i *)b->qs);
}

#ifdef __AVX512F__
/* out[t] lane c = r[c] lane t: the transpose of 16 x 16 dwords. */
static inline __attribute__((always_inline)) void transpose16(const __m512i r[16], __m512i out[16])
{
    __m512i t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    /* u[4i + j], 128-bit lane L: rows 4i .. 4i + 3 of element 4L + j */
    for (int i = 0; i < 4; i++) {
        u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int j = 0; j < 4; j++) {
        const __m512i v0 = _mm512_shuffle_i32x4(u[j], u[4 + j], _MM_SHUFFLE(2, 0, 2, 0));
        const __m512i w0 = _mm512_shuffle_i32x4(u[j], u[4 + j], _MM_SHUFFLE(3, 1, 3, 1));
        const __m512i v1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], _MM_SHUFFLE(2, 0, 2, 0));
        const __m512i w1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], _MM_SHUFFLE(3, 1, 3, 1));
        out[j] = _mm512_shuffle_i32x4(v0, v1, _MM_SHUFFLE(2, 0, 2, 0));
        out[8 + j] = _mm512_shuffle_i32x4(v0, v1, _MM_SHUFFLE(3, 1, 3, 1));
        out[4 + j] = _mm512_shuffle_i32x4(w0, w1, _MM_SHUFFLE(2, 0, 2, 0));
        out[12 + j] = _mm512_shuffle_i32x4(w0, w1, _MM_SHUFFLE(3, 1, 3, 1));
    }
}

#endif

/* The offset o of a Q4_0, Q5_0 or Q8_0 weight as an unsigned byte q + o
 * (8, 16, 128), as a power of two. */
static inline int il32_log2_offset(const int type)
{
    return type == GGUF_T_Q4_0 ? 3 : type == GGUF_T_Q5_0 ? 4 : 7;
}

#if defined(__AVX512BW__)

/* A chunk of sixteen interleaved rows' blocks (gq_il_chunk(), dot.h):
 * v[t] lane r = elements 4t .. 4t + 3 of row r as unsigned bytes q + o. */
static inline __attribute__((always_inline)) void il32_weights(const uint8_t *c, __m512i v[8], const int type)
{
    if (type == GGUF_T_Q8_0) {
        _Pragma("GCC unroll 8") for (int t = 0; t < 8; t++) v[t] = _mm512_loadu_si512(c + 32 + 64 * t);
        return;
    }
    const uint8_t *q = c + (type == GGUF_T_Q5_0 ? 96 : 32);
    const __m512i low = _mm512_set1_epi8(0x0f);
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
        const __m512i x = _mm512_loadu_si512(q + 64 * j);
        v[j] = _mm512_and_si512(x, low);
        v[j + 4] = _mm512_and_si512(_mm512_srli_epi16(x, 4), low);
    }
    if (type == GGUF_T_Q5_0)
        _Pragma("GCC unroll 8") for (int t = 0; t < 8; t++) {
            uint64_t m;
            memcpy(&m, c + 32 + 8 * t, 8);
            v[t] = _mm512_mask_add_epi8(v[t], _cvtu64_mask64(m), v[t], _mm512_set1_epi8(16));
        }
}
#endif

#ifdef GQ_PANEL_AMX /* the files built with -mamx-tile (quant/local.mk) */
/* The layout ldtilecfg reads. */
struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
};

#endif

/* The bytes of a block of Q4_K, Q5_K or Q6_K. */
static inline size_t il2_block_bytes(const int type)
{
    return type == GGUF_T_Q6_K   ? sizeof(struct gq_block_q6_k)
           : type == GGUF_T_Q5_K ? sizeof(struct gq_block_q5_k)
                                 : sizeof(struct gq_block_q4_k);
}

/* The chunks of a group's nb Q4_K or Q6_K blocks (at c) as sixteen plain
 * rows of nb blocks at buf: the words of each half-chunk (rows 8h .. 8h
 * + 7) transposed eight by eight, in the rows' order (gq_ilk_pos()), the
 * last four of a block eight by four; Q6_K's d from the chunk's end. */
static inline __attribute__((always_inline)) void il2_plain(const uint8_t *c, int nb, uint8_t *buf, const int type)
{
    const size_t bb = il2_block_bytes(type);
    const int words = (int)(bb / 4);
    const size_t rb = (size_t)nb * bb;
    for (int i = 0; i < nb; i++, c += GQ_IL16_ROWS * bb) {
        _Pragma("GCC unroll 8")
        for (int h = 0; h < 2; h++)
            _Pragma("GCC unroll 8")
            for (int q = 0; q < (words + 7) / 8; q++) {
                /* v[j] lane r: word 8q + j of row 8h + r (words past the block's: none) */
                __m256i v[8], t[8], u[8];
                _Pragma("GCC unroll 8")
                for (int j = 0; j < 8; j++)
                    v[j] = 8 * q + j < words
                               ? _mm256_loadu_si256((const __m256i *)(c + 64 * gq_ilk_pos((uint32_t)type, 8 * q + j) + 32 * h))
                               : _mm256_setzero_si256();
                _Pragma("GCC unroll 8")
                for (int j = 0; j < 4; j++) {
                    t[2 * j] = _mm256_unpacklo_epi32(v[2 * j], v[2 * j + 1]);
                    t[2 * j + 1] = _mm256_unpackhi_epi32(v[2 * j], v[2 * j + 1]);
                }
                _Pragma("GCC unroll 8")
                for (int j = 0; j < 2; j++) {
                    u[4 * j] = _mm256_unpacklo_epi64(t[4 * j], t[4 * j + 2]);
                    u[4 * j + 1] = _mm256_unpackhi_epi64(t[4 * j], t[4 * j + 2]);
                    u[4 * j + 2] = _mm256_unpacklo_epi64(t[4 * j + 1], t[4 * j + 3]);
                    u[4 * j + 3] = _mm256_unpackhi_epi64(t[4 * j + 1], t[4 * j + 3]);
                }
                /* u[j] holds rows j (low 128 bits: words 0-3 of the eight) and
                 * j + 4 (high) for words 8q .. 8q + 3, u[4 + j] words 8q + 4 .. */
                _Pragma("GCC unroll 8")
                for (int r = 0; r < 8; r++) {
                    uint8_t *d = buf + (size_t)(8 * h + r) * rb + (size_t)i * bb + 32 * (size_t)q;
                    const __m256i lo = u[r % 4], hi = u[4 + r % 4];
                    const __m256i row = r < 4 ? _mm256_permute2x128_si256(lo, hi, 0x20)
                                              : _mm256_permute2x128_si256(lo, hi, 0x31);
                    if (8 * q + 8 <= words)
                        _mm256_storeu_si256((__m256i *)d, row);
                    else
                        _mm_storeu_si128((__m128i *)d, _mm256_castsi256_si128(row));
                }
            }
        for (int r = 0; type == GGUF_T_Q6_K && r < GQ_IL16_ROWS; r++)
            memcpy(buf + (size_t)r * rb + (size_t)i * bb + 4 * (size_t)words, c + 64 * (size_t)words + 2 * (size_t)r, 2);
    }
}

#endif /* GGUF_QUANT_X86_H */
