/* matmul-x86.c -- matrix products of Q2_K .. Q6_K weights with Q8_K
 * activations, and of Q4_0, Q5_0, Q8_0 (Q4_1, Q5_1) weights with Q8_0
 * (Q8_1) activations,
 * several activation columns per pass over a weight row.
 *
 * Compiled twice: with AVX2 (the table gq_matmul_avx2) and with AVX-512
 * VL + VNNI (gq_matmul_avx512), where the same code gets 32 vector
 * registers and vpdpwssd fuses each int16 multiply-add with its
 * accumulation.
 *
 * One weight block is unpacked to bytes once and multiplied with the same
 * block of up to four activation columns (a tile); each product is
 * vpmaddubsw (unsigned weight bytes times signed activation bytes, pairs
 * added into int16: at most 2 * 63 * 128, no saturation) and vpmaddwd with
 * the sub-block scales as int16.  The integer sum of a block is exact.
 * For Q4_K, Q5_K and Q6_K it is totalled across the lanes and scaled and
 * added as the scalar kernels of dot.c do (k_block_step()): the same bits;
 * without VNNI, a tile of 2 to 4 columns totals and scales them together,
 * a column a lane (k_block_step4()), the same operations on each.
 * For the other types it is scaled and accumulated per float lane, block
 * after block, and the lanes are added at the end of the row: a different
 * order of float additions from the scalar kernels (see quant/quant.h for
 * the bound).  With VNNI, Q4_K, Q5_K and Q6_K products of GQ_PANEL_MIN
 * columns or more go to panel-vnni.c, sixteen columns per vector, and
 * Q4_0, Q5_0 and Q8_0 products of any number to tiles32.c, whose steps
 * the one-column products of these types below take too (the table's
 * column[]: sixteen rows at a time); the K-quant tiles take 512-bit
 * products, and their one-column products four weight rows at a time;
 * the weights of one-column products are prefetched ahead.
 * Without VNNI, the engine's Q4_K, Q5_K and Q6_K products of GQ_KPACK_MIN
 * columns or more take packed input and kpack-avx2.c's tiles instead.
 *
 * Rows are taken ROW_BLOCK at a time, and for each such block every tile
 * of columns, so that the block's weights stay in cache while all the
 * columns pass over them. */
#include <config.h>

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/dot.h"
#include "quant/x86.h"

#define ROW_BLOCK 16
/* Columns per tile: as many as the vector registers hold sums for. */
#ifdef __AVX512VNNI__
#define MAX_TILE 8
#else
#define MAX_TILE 4
#endif

/* Integer sums per column of a tile of C columns: enough independent
 * chains of multiply-adds to hide their latency, few enough to stay in
 * registers. */
#define NACC(C) ((C) <= 2 ? 4 : (C) <= 4 ? 2 : 1)

/* The loops over columns and sub-blocks must be unrolled for the sums to
 * stay in registers. */
#define UNROLL _Pragma("GCC unroll 8")

/* acc + the int32 pair sums of the int16 products a * b. */
static inline __m256i madd_acc(__m256i acc, __m256i a, __m256i b)
{
#ifdef __AVX512VNNI__
    return _mm256_dpwssd_epi32(acc, a, b);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

/* Tiles of three or four columns without VNNI: keeps each sum a chain of
 * additions in a register.  Otherwise the compiler, free to reorder integer
 * additions, computes the products of a whole block first and adds them up
 * at the end, out of registers: 1536 x 1536 Q4_K weights times 128 columns,
 * one thread, 44 -> 49 GMAC/s with it (no gain for one or two columns, and
 * a loss on Q6_K's one-column products, so not there). */
#ifndef __AVX512VNNI__
static inline __attribute__((always_inline)) void keep_chain(__m256i *acc, const int C)
{
    if (C > 2) __asm__("" : "+x"(*acc));
}
#endif

#ifdef __AVX512VNNI__
/* The 8 int32 lanes a[k] + a[k + 8]. */
static inline __m256i halves_sum(__m512i a)
{
    return _mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1));
}
#endif

/* Activation block i of column c. */
static inline const struct gq_block_q8_k *act_block(const uint8_t *act, size_t act_stride, int c,
                                                    int i)
{
    return (const struct gq_block_q8_k *)(act + (size_t)c * act_stride) + i;
}

/* out[c * out_stride] = the sum of the lanes of acc[c], c < C. */
static inline __attribute__((always_inline)) void store_sums(float *out, size_t out_stride,
                                                             const __m256 *acc, const int C)
{
    UNROLL
    for (int c = 0; c < C; c++) out[(size_t)c * out_stride] = hsum_f32(acc[c]);
}

/* acc + scale * isum - mscale * (the activations' 16-sums bsums times the
 * mins mn16): one K-quant block with mins, per float lane. */
static inline __m256 acc_with_mins(__m256 acc, __m256i isum, __m256i bsums, __m256i mn16, float scale,
                                   float mscale)
{
    const __m256i mins = _mm256_madd_epi16(bsums, mn16);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(scale), acc);
    return _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), _mm256_set1_ps(mscale), acc);
}

/* One block of a Q4_K/Q5_K/Q6_K product, added to a column's sum as the
 * scalar kernels of dot.c add it: the integer sums isum (in lanes) and
 * imin (the activations' 16-sums bsums times the mins mn16) are totalled
 * exactly, then scaled and added, unfused.  So these products have the
 * scalar kernels' bits, and those of the panel kernels. */
static inline float k_block_step(float sum, __m256i isum, float d, float ad)
{
    return sum + d * ad * (float)hsum_i32(isum);
}

static inline float k_block_step_mins(float sum, __m256i isum, __m256i imin, float d, float dmin,
                                      float ad)
{
    sum = k_block_step(sum, isum, d, ad);
    return sum - dmin * ad * (float)hsum_i32(imin);
}

#ifndef __AVX512VNNI__
/* Lane c: the sum of the 8 int32 lanes of v[c], for c < C (0 beyond):
 * four totals in a handful of operations instead of four. */
static inline __attribute__((always_inline)) __m128i hsum4_i32(const __m256i *v, const int C)
{
    const __m256i z = _mm256_setzero_si256();
    const __m256i a = _mm256_hadd_epi32(v[0], C > 1 ? v[1] : z);
    const __m256i b = _mm256_hadd_epi32(C > 2 ? v[2] : z, C > 3 ? v[3] : z);
    const __m256i t = _mm256_hadd_epi32(a, b);
    return _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
}

/* The scales d of block i of activation columns 0 .. C - 1, a lane each. */
static inline __attribute__((always_inline)) __m128 act_scales4(const uint8_t *act, size_t act_stride,
                                                               const int C, int i)
{
    return _mm_setr_ps(act_block(act, act_stride, 0, i)->d,
                       C > 1 ? act_block(act, act_stride, 1, i)->d : 0.0f,
                       C > 2 ? act_block(act, act_stride, 2, i)->d : 0.0f,
                       C > 3 ? act_block(act, act_stride, 3, i)->d : 0.0f);
}

/* k_block_step() and k_block_step_mins() for up to four columns at once,
 * a column a lane: the same operations in the same order on each lane,
 * so the same bits. */
static inline __m128 k_block_step4(__m128 sum, __m128i isum, float d, __m128 ad)
{
    return _mm_add_ps(sum, _mm_mul_ps(_mm_mul_ps(_mm_set1_ps(d), ad), _mm_cvtepi32_ps(isum)));
}

static inline __m128 k_block_step4_mins(__m128 sum, __m128i isum, __m128i imin, float d, float dmin,
                                        __m128 ad)
{
    sum = k_block_step4(sum, isum, d, ad);
    return _mm_sub_ps(sum, _mm_mul_ps(_mm_mul_ps(_mm_set1_ps(dmin), ad), _mm_cvtepi32_ps(imin)));
}

/* Lane c of v to out[c * out_stride], c < C. */
static inline __attribute__((always_inline)) void store4(float *out, size_t out_stride, __m128 v,
                                                         const int C)
{
    float t[4];
    _mm_storeu_ps(t, v);
    UNROLL
    for (int c = 0; c < C; c++) out[(size_t)c * out_stride] = t[c];
}
#endif

#ifndef __AVX512VNNI__ /* with VNNI, the 512-bit forms below */
/* ------------------------------------------------------------------------ */
/* Q4_K                                                                      */

/* out[c * out_stride] = the Q4_K (with_high = 0) or Q5_K (1) row at row
 * (nb blocks) times activation column c, for c < C (C and with_high are
 * constants after inlining). */
static inline __attribute__((always_inline)) void
k4_tile(int nb, const uint8_t *row, const uint8_t *act, size_t act_stride, const int C,
        float *out, size_t out_stride, const int with_high)
{
    const __m256i low4 = _mm256_set1_epi8(0x0f), bit4 = _mm256_set1_epi8(0x10);
    const size_t block_bytes = with_high ? sizeof(struct gq_block_q5_k) : sizeof(struct gq_block_q4_k);
    float acc1 = 0.0f;              /* C == 1: the column's sum */
    __m128 acc4 = _mm_setzero_ps(); /* C > 1: the columns' sums, a lane each */
    for (int i = 0; i < nb; i++) {
        /* Q4_K and Q5_K share d, dmin and scales; Q5_K has qh before qs */
        const struct gq_block_q4_k *w = (const struct gq_block_q4_k *)(row + (size_t)i * block_bytes);
        const struct gq_block_q5_k *w5 = (const struct gq_block_q5_k *)w;
        const uint8_t *qs = with_high ? w5->qs : w->qs;
        __m256i hbits = with_high ? _mm256_loadu_si256((const __m256i *)w5->qh) : _mm256_setzero_si256();
        const __m128i scmn = q4k_scales_mins(w->scales);
        /* the 8 scales as int16, in both 128-bit lanes; the 8 mins, each
         * twice (it applies to two 16-sums of the activations) */
        const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scmn));
        const __m256i mn16 = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(
            scmn, _mm_setr_epi8(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15)));
        /* NA sums per column, so that the chains of dependent
         * multiply-adds stay short when there are few columns */
        __m256i isum[MAX_TILE][4];
        UNROLL
        for (int c = 0; c < C; c++) {
            for (int a = 0; a < NACC(C); a++) isum[c][a] = _mm256_setzero_si256();
        }
        UNROLL
        for (int j = 0; j < 4; j++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
            __m256i lo = _mm256_and_si256(q, low4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            if (with_high) { /* bit 2j of qh byte l above element l of sub-block 2j, 2j + 1 above 2j + 1 */
                lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(hbits, 4), bit4));
                hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(hbits, 3), bit4));
                hbits = _mm256_srli_epi16(hbits, 2);
            }
            const __m256i s0 = _mm256_shuffle_epi8(sc16, _mm256_set1_epi16((short)(0x0100 + 0x0202 * 2 * j)));
            const __m256i s1 = _mm256_shuffle_epi8(sc16, _mm256_set1_epi16((short)(0x0100 + 0x0202 * (2 * j + 1))));
            UNROLL
            for (int c = 0; c < C; c++) {
                const int8_t *y = act_block(act, act_stride, c, i)->qs + 64 * j;
                const __m256i y0 = _mm256_loadu_si256((const __m256i *)y);
                const __m256i y1 = _mm256_loadu_si256((const __m256i *)(y + 32));
                __m256i *s0acc = &isum[c][(2 * j) % NACC(C)], *s1acc = &isum[c][(2 * j + 1) % NACC(C)];
                *s0acc = madd_acc(*s0acc, _mm256_maddubs_epi16(lo, y0), s0);
                *s1acc = madd_acc(*s1acc, _mm256_maddubs_epi16(hi, y1), s1);
                keep_chain(s0acc, C);
                keep_chain(s1acc, C);
            }
        }
        UNROLL
        for (int c = 0; c < C; c++) {
            for (int a = 1; a < NACC(C); a++) isum[c][0] = _mm256_add_epi32(isum[c][0], isum[c][a]);
        }
        const float d = _cvtsh_ss(w->d), dmin = _cvtsh_ss(w->dmin);
        if (C == 1) {
            const struct gq_block_q8_k *a = act_block(act, act_stride, 0, i);
            acc1 = k_block_step_mins(acc1, isum[0][0],
                                       _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)a->bsums), mn16),
                                       d, dmin, a->d);
            continue;
        }
        __m256i sums[4], mins[4];
        UNROLL
        for (int c = 0; c < C; c++) {
            sums[c] = isum[c][0];
            mins[c] = _mm256_madd_epi16(
                _mm256_loadu_si256((const __m256i *)act_block(act, act_stride, c, i)->bsums), mn16);
        }
        acc4 = k_block_step4_mins(acc4, hsum4_i32(sums, C), hsum4_i32(mins, C), d, dmin,
                                  act_scales4(act, act_stride, C, i));
    }
    if (C == 1)
        out[0] = acc1;
    else
        store4(out, out_stride, acc4, C);
}

/* ------------------------------------------------------------------------ */
/* Q6_K: sum (q - 32) y sc = sum q y sc - 32 sum sc bsum                    */

static inline __attribute__((always_inline)) void
q6k_tile(int nb, const uint8_t *row, const uint8_t *act, size_t act_stride, const int C,
         float *out, size_t out_stride, const int variant)
{
    (void)variant;
    const struct gq_block_q6_k *w = (const struct gq_block_q6_k *)row;
    float acc1 = 0.0f;              /* C == 1: the column's sum */
    __m128 acc4 = _mm_setzero_ps(); /* C > 1: the columns' sums, a lane each */
    for (int i = 0; i < nb; i++, w++) {
        const __m128i sc8 = _mm_loadu_si128((const __m128i *)w->scales);
        __m256i isum[MAX_TILE][4];
        UNROLL
        for (int c = 0; c < C; c++) {
            for (int a = 0; a < NACC(C); a++) isum[c][a] = _mm256_setzero_si256();
        }
        UNROLL
        for (int h = 0; h < 2; h++) {
            const struct q6k_half hv = q6k_load_half(w, h);
            UNROLL
            for (int k = 0; k < 4; k++) {
                const __m256i q = q6k_quants(hv.ql0, hv.ql1, hv.qh, k), s = q6k_scales(hv.sc16, k);
                UNROLL
                for (int c = 0; c < C; c++) {
                    const int8_t *y = act_block(act, act_stride, c, i)->qs + 128 * h + 32 * k;
                    const __m256i yv = _mm256_loadu_si256((const __m256i *)y);
                    __m256i *sa = &isum[c][k % NACC(C)];
                    *sa = madd_acc(*sa, _mm256_maddubs_epi16(q, yv), s);
                    keep_chain(sa, C);
                }
            }
        }
        UNROLL
        for (int c = 0; c < C; c++) {
            for (int a = 1; a < NACC(C); a++) isum[c][0] = _mm256_add_epi32(isum[c][0], isum[c][a]);
        }
        const __m256i sc16all = _mm256_cvtepi8_epi16(sc8);
        const float d = _cvtsh_ss(w->d);
        __m256i sums[4];
        UNROLL
        for (int c = 0; c < C; c++) {
            const struct gq_block_q8_k *a = act_block(act, act_stride, c, i);
            const __m256i corr = _mm256_madd_epi16(sc16all, _mm256_loadu_si256((const __m256i *)a->bsums));
            sums[c] = _mm256_sub_epi32(isum[c][0], _mm256_slli_epi32(corr, 5));
            if (C == 1) acc1 = k_block_step(acc1, sums[0], d, a->d);
        }
        if (C > 1) acc4 = k_block_step4(acc4, hsum4_i32(sums, C), d, act_scales4(act, act_stride, C, i));
    }
    if (C == 1)
        out[0] = acc1;
    else
        store4(out, out_stride, acc4, C);
}
#endif

#ifndef __AVX512VNNI__
/* ------------------------------------------------------------------------ */
/* Q4_K on interleaved rows (dot.h), AVX2                                    */

/* A chunk's 64-byte vectors hold sixteen rows, a row a 32-bit lane: the
 * first 32 bytes of each rows 0-7, the last 32 rows 8-15, each half
 * taken in its turn by 256-bit vectors.  A quad of weights (a byte's two
 * nibbles: four elements of one sub-block, four of the next) times four
 * activations broadcast is vpmaddubsw; a sub-block's eight such are
 * summed in int16, then vpmaddwd with its scale as an int16 pair adds
 * each pair and scales it at once: the sub-block sums come out scaled,
 * row by row in the lanes, exact; then the block's float step per lane,
 * k_block_step() and k_block_step_mins() with each row's d and dmin: the
 * scalar bits, with no folding. */
#define IL2K_FEW 2      /* columns a pass over the chunks takes */
/* The columns from which the rows are turned back into plain ones (Q5_K:
 * at two columns the interleaved kernel went at 0.77 times the plain
 * rows' speed). */
#define IL2_PLAIN_MIN(type) ((type) == GGUF_T_Q5_K ? 2 : 3)

/* A vpshufb control taking bytes j0 and j1 of each dword as the int16
 * pair (byte j0, byte j1), zero-extended. */
static inline __m256i il2_pair_sel(int j0, int j1)
{
    uint32_t ctl[4];
    for (int k = 0; k < 4; k++)
        ctl[k] = (uint32_t)(4 * k + j0) | 0x8000u | (uint32_t)(4 * k + j1) << 16 | 0x80000000u;
    return _mm256_broadcastsi128_si256(_mm_setr_epi32((int)ctl[0], (int)ctl[1], (int)ctl[2], (int)ctl[3]));
}

/* Quad t (elements 4t .. 4t + 3) of a in every lane. */
static inline __m256i il2_quad(const struct gq_block_q8_k *a, int t)
{
    int32_t v;
    memcpy(&v, a->qs + 4 * t, 4);
    return _mm256_set1_epi32(v);
}

/* Quad q of sub-blocks 2p (lo) and 2p + 1 (hi) of a Q4_K or Q5_K chunk c
 * (at the half's offset): the nibbles of qs word 8p + q, and Q5_K's fifth
 * bits, bits 2p and 2p + 1 of qh word q (dot.h, gq_ilk_pos()). */
static inline __attribute__((always_inline)) void il2_k4_quads(const uint8_t *c, int p, int q, __m256i *lo, __m256i *hi,
                                                               const int type)
{
    const __m256i low = _mm256_set1_epi8(0x0f);
    const int qs_word = (type == GGUF_T_Q5_K ? 12 : 4) + 8 * p + q;
    const __m256i x = _mm256_loadu_si256((const __m256i *)(c + 64 * gq_ilk_pos((uint32_t)type, qs_word)));
    *lo = _mm256_and_si256(x, low);
    *hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), low);
    if (type != GGUF_T_Q5_K) return;
    const __m256i hb = _mm256_loadu_si256((const __m256i *)(c + 64 * gq_ilk_pos(GGUF_T_Q5_K, 4 + q)));
    const __m256i b4 = _mm256_set1_epi8(0x10);
    /* bit 2p to bit 4, then bit 2p + 1 */
    const __m256i h0 = p == 0 ? _mm256_slli_epi16(hb, 4) : p == 1 ? _mm256_slli_epi16(hb, 2) : p == 2 ? hb : _mm256_srli_epi16(hb, 2);
    const __m256i h1 = p == 0 ? _mm256_slli_epi16(hb, 3) : p == 1 ? _mm256_slli_epi16(hb, 1) : p == 2 ? _mm256_srli_epi16(hb, 1) : _mm256_srli_epi16(hb, 3);
    *lo = _mm256_or_si256(*lo, _mm256_and_si256(h0, b4));
    *hi = _mm256_or_si256(*hi, _mm256_and_si256(h1, b4));
}

/* Half h (rows 8h .. 8h + 7) of the Q4_K or Q5_K chunk c times the nc
 * columns' blocks a[], added to acc[]: pr[k] holds column k's 32-sums of the
 * sub-blocks as int16 pairs, sub-blocks 2p and 2p + 1 in dword p of
 * lane p / 2 (vphaddw of its 16-sums). */
static inline __attribute__((always_inline)) void
il2_half_k4(const uint8_t *c, const struct gq_block_q8_k *const *a, const __m256i *pr, const int nc, __m256 *acc,
            const int type)
{
    const __m256i low = _mm256_set1_epi8(0x0f), six = _mm256_set1_epi8(0x3f), m30 = _mm256_set1_epi8(0x30);
    /* word 0: d (low half) and dmin of each row; the two sets apart */
    const __m256i w0 = _mm256_permute4x64_epi64(
        _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)c),
                            _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15))),
        _MM_SHUFFLE(3, 1, 2, 0));
    const __m256 d = _mm256_cvtph_ps(_mm256_castsi256_si128(w0));
    const __m256 dmin = _mm256_cvtph_ps(_mm256_extracti128_si256(w0, 1));
    /* the 6-bit scales and mins of sub-blocks 0-3 and 4-7, a byte each */
    const __m256i A = _mm256_loadu_si256((const __m256i *)(c + 64));
    const __m256i B = _mm256_loadu_si256((const __m256i *)(c + 128));
    const __m256i C = _mm256_loadu_si256((const __m256i *)(c + 192));
    const __m256i sc03 = _mm256_and_si256(A, six), mn03 = _mm256_and_si256(B, six);
    const __m256i sc47 = _mm256_or_si256(_mm256_and_si256(C, low), _mm256_and_si256(_mm256_srli_epi16(A, 2), m30));
    const __m256i mn47 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(C, 4), low),
                                         _mm256_and_si256(_mm256_srli_epi16(B, 2), m30));
    /* one column: the quads unpacked as they are taken; more: unpacked
     * once into nib (in the L1 cache), then each column's sums in turn,
     * few enough to stay in registers */
    __m256i nib[64]; /* (nc > 1) */
    if (nc > 1)
        UNROLL
        for (int t = 0; t < 32; t++) il2_k4_quads(c, t / 8, t % 8, &nib[2 * t], &nib[2 * t + 1], type);
    __m256i isum[IL2K_FEW], imin[IL2K_FEW];
    UNROLL
    for (int k = 0; k < nc; k++) {
        isum[k] = imin[k] = _mm256_setzero_si256();
        UNROLL
        for (int p = 0; p < 4; p++) {
            const __m256i sc = p < 2 ? sc03 : sc47, mn = p < 2 ? mn03 : mn47;
            const int j0 = 2 * p % 4, j1 = j0 + 1;
            const __m256i s0 = _mm256_shuffle_epi8(sc, il2_pair_sel(j0, j0));
            const __m256i s1 = _mm256_shuffle_epi8(sc, il2_pair_sel(j1, j1));
            /* the sub-blocks' pair sums in int16 (8 quads of products of at
             * most 2 * 15 * 128 each, Q5_K's 4 of 2 * 31 * 128: below
             * 2^15), then scaled */
            __m256i slo = _mm256_setzero_si256(), shi = _mm256_setzero_si256();
            UNROLL
            for (int q = 0; q < 8; q++) {
                /* qs bytes 32p + 4q ..: elements 64p + 4q .. (low nibbles,
                 * sub-block 2p) and 32 further (high, 2p + 1) */
                __m256i lo, hi;
                if (nc > 1) {
                    lo = nib[2 * (8 * p + q)];
                    hi = nib[2 * (8 * p + q) + 1];
                } else {
                    il2_k4_quads(c, p, q, &lo, &hi, type);
                }
                slo = _mm256_add_epi16(slo, _mm256_maddubs_epi16(lo, il2_quad(a[k], 16 * p + q)));
                shi = _mm256_add_epi16(shi, _mm256_maddubs_epi16(hi, il2_quad(a[k], 16 * p + 8 + q)));
                __asm__("" : "+x"(slo), "+x"(shi)); /* chains in registers (keep_chain()) */
                if (type == GGUF_T_Q5_K && q % 4 == 3) { /* Q5_K: four quads' sums at a time */
                    isum[k] = _mm256_add_epi32(isum[k], _mm256_add_epi32(_mm256_madd_epi16(slo, s0), _mm256_madd_epi16(shi, s1)));
                    slo = shi = _mm256_setzero_si256();
                }
            }
            if (type != GGUF_T_Q5_K)
                isum[k] = _mm256_add_epi32(isum[k], _mm256_add_epi32(_mm256_madd_epi16(slo, s0), _mm256_madd_epi16(shi, s1)));
            /* the two sub-blocks' mins as an int16 pair, times their 32-sums */
            const __m256i m = _mm256_shuffle_epi8(mn, il2_pair_sel(j0, j1));
            imin[k] = _mm256_add_epi32(
                imin[k], _mm256_madd_epi16(m, _mm256_permutevar8x32_epi32(pr[k], _mm256_set1_epi32(p / 2 * 4 + p % 2))));
        }
    }
    UNROLL
    for (int k = 0; k < nc; k++) {
        const __m256 ad = _mm256_set1_ps(a[k]->d);
        acc[k] = _mm256_add_ps(acc[k], _mm256_mul_ps(_mm256_mul_ps(d, ad), _mm256_cvtepi32_ps(isum[k])));
        acc[k] = _mm256_sub_ps(acc[k], _mm256_mul_ps(_mm256_mul_ps(dmin, ad), _mm256_cvtepi32_ps(imin[k])));
    }
}

/* A vpshufb control taking bytes j0 and j1 of each dword to the high bytes
 * of its int16 halves (the low ones zero): shifted down by 8 with their
 * sign, the signed int16 pair (byte j0, byte j1). */
static inline __m256i il2_pair_hi(int j0, int j1)
{
    uint32_t ctl[4];
    for (int k = 0; k < 4; k++)
        ctl[k] = 0x80u | (uint32_t)(4 * k + j0) << 8 | 0x800000u | (uint32_t)(4 * k + j1) << 24;
    return _mm256_broadcastsi128_si256(_mm_setr_epi32((int)ctl[0], (int)ctl[1], (int)ctl[2], (int)ctl[3]));
}

/* il2_quad() for the Q6_K kernel below: a vbroadcastss from memory, kept
 * in a register where it is taken.  Its plain form (vpbroadcastd of a
 * scalar) was stored to the stack by gcc 12 and read back as vpmaddubsw's
 * memory operand, a store and a load a quad; with this, the chains of
 * int16 and int32 sums kept as they are written (no tree of partial sums
 * held on the stack either), the kernel's stack accesses went from 396 to
 * 97 (one column; two: 793 to 103), and its speed from the L2 cache, one
 * thread, rows of 1536, from 19.6-21.3 to 22.8-24.2 GB/s (two columns
 * 10.5-12.3 to 17.1-17.4); from memory, two threads, two columns 18.4-19.7
 * to 21.0-22.8 GB/s, one column the same (bound by the reads). */
static inline __m256i il2_quad_reg(const struct gq_block_q8_k *a, int t)
{
    __m256i y = _mm256_castps_si256(_mm256_broadcast_ss((const float *)(a->qs + 4 * t)));
    __asm__("" : "+x"(y));
    return y;
}

/* Quant kind e (0 .. 3: elements 32e + 4q .. of a 128-element half of the
 * block) of a Q6_K quad vector: the nibbles of x (ql word q or 8 + q: x1
 * for e = 0, 2, x2 for 1, 3; low for e < 2) with two bits of hb (qh) above,
 * 0 .. 63. */
static inline __attribute__((always_inline)) __m256i il2_q6k_unpack(const __m256i x, const __m256i hb, const int e)
{
    const __m256i lo = _mm256_and_si256(e < 2 ? x : _mm256_srli_epi16(x, 4), _mm256_set1_epi8(0x0f));
    const __m256i hi = e == 0 ? _mm256_slli_epi16(hb, 4) : e == 1 ? _mm256_slli_epi16(hb, 2) : e == 2 ? hb : _mm256_srli_epi16(hb, 2);
    return _mm256_or_si256(lo, _mm256_and_si256(hi, _mm256_set1_epi8(0x30)));
}

/* Half h (rows 8h .. 8h + 7) of the Q6_K chunk c times the nc columns'
 * blocks a[], added to acc[] (the chunk's layout: dot.h, gq_ilk_pos()).
 * Sub-block by sub-block (8hh + 2e + t: quads 4t .. 4t + 3 of kind e of
 * the block's half hh), two quads' vpmaddubsw summed in int16 (at most 2
 * x 2 x 63 x 128 < 2^15), then vpmaddwd with the sub-block's scale as an
 * int16 pair; the offsets, 32 times the scales times the activations'
 * 16-sums, by vpmaddwd of scale pairs with bsums pairs; then each row's
 * float step as k_block_step() takes it: the scalar bits. */
static inline __attribute__((always_inline)) void
il2_half_q6_k(const uint8_t *c, int h, const struct gq_block_q8_k *const *a, const int nc, __m256 *acc)
{
    __m256i scv[4], isum[IL2K_FEW], off[IL2K_FEW];
    UNROLL
    for (int v = 0; v < 4; v++) scv[v] = _mm256_loadu_si256((const __m256i *)(c + 64 * v + 32 * h)); /* scales, words 48-51 */
    UNROLL
    for (int k = 0; k < nc; k++) isum[k] = off[k] = _mm256_setzero_si256();
    UNROLL
    for (int hh = 0; hh < 2; hh++)
        UNROLL
        for (int t = 0; t < 2; t++)
            UNROLL
            for (int e = 0; e < 4; e++) {
                const int sub = 8 * hh + 2 * e + t;
                const __m256i sc = _mm256_srai_epi16(_mm256_shuffle_epi8(scv[sub / 4], il2_pair_hi(sub % 4, sub % 4)), 8);
                UNROLL
                for (int pq = 0; pq < 2; pq++) {
                    __m256i s16[IL2K_FEW];
                    UNROLL
                    for (int j = 0; j < 2; j++) {
                        const int q = 4 * t + 2 * pq + j;
                        const uint8_t *v3 = c + 64 * (4 + 3 * (8 * hh + q)) + 32 * h;
                        const __m256i u = il2_q6k_unpack(_mm256_loadu_si256((const __m256i *)(v3 + 64 * (e & 1))),
                                                         _mm256_loadu_si256((const __m256i *)(v3 + 128)), e);
                        UNROLL
                        for (int k = 0; k < nc; k++) {
                            const __m256i p = _mm256_maddubs_epi16(u, il2_quad_reg(a[k], 32 * hh + 8 * e + q));
                            s16[k] = j ? _mm256_add_epi16(s16[k], p) : p;
                            __asm__("" : "+x"(s16[k]));
                        }
                    }
                    UNROLL
                    for (int k = 0; k < nc; k++) {
                        isum[k] = _mm256_add_epi32(isum[k], _mm256_madd_epi16(s16[k], sc));
                        __asm__("" : "+x"(isum[k]));
                    }
                }
            }
    UNROLL
    for (int u = 0; u < 8; u++) {
        const __m256i pr = _mm256_srai_epi16(_mm256_shuffle_epi8(scv[u / 2], il2_pair_hi(2 * (u % 2), 2 * (u % 2) + 1)), 8);
        UNROLL
        for (int k = 0; k < nc; k++) {
            int32_t bs;
            memcpy(&bs, a[k]->bsums + 2 * u, 4);
            off[k] = _mm256_add_epi32(off[k], _mm256_madd_epi16(pr, _mm256_set1_epi32(bs)));
        }
    }
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(c + 64 * 52 + 16 * h)));
    UNROLL
    for (int k = 0; k < nc; k++) {
        const __m256i tsum = _mm256_sub_epi32(isum[k], _mm256_slli_epi32(off[k], 5));
        acc[k] = _mm256_add_ps(acc[k], _mm256_mul_ps(_mm256_mul_ps(d, _mm256_set1_ps(a[k]->d)), _mm256_cvtepi32_ps(tsum)));
    }
}

/* Rows 0 .. 16 * groups - 1 (interleaved) times nc <= IL2K_FEW columns
 * from column c0 (column c at act + c * act_stride).  The chunks are read
 * in order, one stream: each chunk's bytes IL2_AHEAD further on are
 * prefetched as it is taken, up to the end of these rows. */
#define IL2_AHEAD 12288
static inline __attribute__((always_inline)) void
il2_columns(const uint8_t *w, size_t w_stride, int64_t groups, int nb, const uint8_t *act, size_t act_stride,
            int64_t c0, float *out, size_t out_stride, const int nc, const int type)
{
    const size_t bb = il2_block_bytes(type);
    const uint8_t *end = w + (size_t)groups * GQ_IL16_ROWS * w_stride;
    for (int64_t g = 0; g < groups; g++) {
        const uint8_t *c = gq_il_chunk(w, w_stride, g, 0, bb);
        __m256 acc[2][IL2K_FEW];
        UNROLL
        for (int k = 0; k < nc; k++) acc[0][k] = acc[1][k] = _mm256_setzero_ps();
        for (int i = 0; i < nb; i++, c += GQ_IL16_ROWS * bb) {
            const uint8_t *pf = c + IL2_AHEAD, *pf_end = pf + GQ_IL16_ROWS * bb < end ? pf + GQ_IL16_ROWS * bb : end;
            for (; pf < pf_end; pf += 64) _mm_prefetch((const char *)pf, _MM_HINT_T0);
            const struct gq_block_q8_k *a[IL2K_FEW];
            UNROLL
            for (int k = 0; k < nc; k++) a[k] = (const struct gq_block_q8_k *)(act + (size_t)(c0 + k) * act_stride) + i;
            if (type == GGUF_T_Q6_K) {
                il2_half_q6_k(c, 0, a, nc, acc[0]);
                il2_half_q6_k(c, 1, a, nc, acc[1]);
                continue;
            }
            __m256i pr[IL2K_FEW];
            UNROLL
            for (int k = 0; k < nc; k++) {
                const __m256i bs = _mm256_loadu_si256((const __m256i *)a[k]->bsums);
                pr[k] = _mm256_hadd_epi16(bs, bs);
            }
            il2_half_k4(c, a, pr, nc, acc[0], type);
            il2_half_k4(c + 32, a, pr, nc, acc[1], type);
        }
        UNROLL
        for (int k = 0; k < nc; k++)
            for (int h = 0; h < 2; h++)
                _mm256_storeu_ps(out + (size_t)(c0 + k) * out_stride + (size_t)g * GQ_IL16_ROWS + 8 * h, acc[h][k]);
    }
}

/* Each type and column count compiled on its own (inlined together into
 * one function, gcc scheduled the Q6_K kernel a quarter slower once the
 * Q5_K one was added beside it). */
#define IL2_COLUMNS_FN(NAME, TYPE, NC)                                                                         \
    static __attribute__((noinline)) void NAME(const uint8_t *w, size_t w_stride, int64_t groups, int nb,     \
                                               const uint8_t *act, size_t act_stride, int64_t c0, float *out, \
                                               size_t out_stride)                                             \
    {                                                                                                         \
        il2_columns(w, w_stride, groups, nb, act, act_stride, c0, out, out_stride, NC, TYPE);                 \
    }
IL2_COLUMNS_FN(il2_q4_k_1, GGUF_T_Q4_K, 1)
IL2_COLUMNS_FN(il2_q4_k_2, GGUF_T_Q4_K, 2)
IL2_COLUMNS_FN(il2_q5_k_1, GGUF_T_Q5_K, 1)
IL2_COLUMNS_FN(il2_q5_k_2, GGUF_T_Q5_K, 2)
IL2_COLUMNS_FN(il2_q6_k_1, GGUF_T_Q6_K, 1)
IL2_COLUMNS_FN(il2_q6_k_2, GGUF_T_Q6_K, 2)

static inline __attribute__((always_inline)) void
il2_cols(const uint8_t *w, size_t w_stride, int64_t groups, int nb, const uint8_t *act, size_t act_stride,
         int64_t c0, int64_t nc, float *out, size_t out_stride, const int type)
{
    typedef void (*fn)(const uint8_t *, size_t, int64_t, int, const uint8_t *, size_t, int64_t, float *, size_t);
    const fn f = type == GGUF_T_Q6_K   ? (nc == 1 ? il2_q6_k_1 : il2_q6_k_2)
                 : type == GGUF_T_Q5_K ? (nc == 1 ? il2_q5_k_1 : il2_q5_k_2)
                                       : (nc == 1 ? il2_q4_k_1 : il2_q4_k_2);
    f(w, w_stride, groups, nb, act, act_stride, c0, out, out_stride);
}

/* The products of Q4_K, Q5_K (k4_tile()) or Q6_K (q6k_tile()) on
 * interleaved rows: the groups below whole, one or two columns a pass
 * over them (il2_columns()); IL2_PLAIN_MIN columns or more (where
 * il2_columns()'s speed for Q4_K, at 4 columns 0.7 times the plain rows',
 * moved between builds with gcc's scheduling of it), each group turned
 * back into plain rows in a buffer (in the L2 cache: rows of at most
 * IL2_PLAIN_BYTES / 16 bytes; longer ones stay with il2_columns()), then
 * the tiles of the plain rows, at their speed less the transposes (Q4_K:
 * 0.84, 0.94, 0.97 times at 4, 16 and 64 columns); then the rows past the
 * groups, plain. */
#define IL2_PLAIN_BYTES (1 << 20)
#define IL2_TILE(C)                                                                                      \
    do {                                                                                                 \
        if (type == GGUF_T_Q6_K)                                                                         \
            q6k_tile(nb, row, a, act_stride, C, o, out_stride, 0);                                       \
        else                                                                                             \
            k4_tile(nb, row, a, act_stride, C, o, out_stride, type == GGUF_T_Q5_K);                      \
    } while (0)
static inline __attribute__((always_inline)) void
il2_k(int64_t whole, int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act, size_t act_stride,
      int64_t ncols, float *out, size_t out_stride, const int type)
{
    const size_t bb = il2_block_bytes(type);
    const int nb = (int)(k / GQ_QK_K);
    const int64_t groups = whole / GQ_IL16_ROWS;
    const uint8_t *wb = w, *ab = act;
    const size_t buf_bytes = GQ_IL16_ROWS * (size_t)nb * bb;
    uint8_t *buf = ncols >= IL2_PLAIN_MIN(type) && groups && buf_bytes <= IL2_PLAIN_BYTES ? malloc(buf_bytes) : NULL;
    if (buf) {
        const size_t rb = (size_t)nb * bb;
        for (int64_t g = 0; g < groups; g++) {
            il2_plain(gq_il_chunk(wb, w_stride, g, 0, bb), nb, buf, type);
            /* the next group, a sixteenth as each row of the first tile is taken */
            const char *next = (const char *)gq_il_chunk(wb, w_stride, g + 1, 0, bb);
            const size_t part = g + 1 < groups ? rb : 0;
            for (int64_t c = 0; c < ncols; c += MAX_TILE)
                for (int r = 0; r < GQ_IL16_ROWS; r++) {
                    for (size_t o = 0; c == 0 && o < part; o += 64) _mm_prefetch(next + (size_t)r * rb + o, _MM_HINT_T0);
                    const uint8_t *row = buf + (size_t)r * rb, *a = ab + (size_t)c * act_stride;
                    float *o = out + (size_t)c * out_stride + (size_t)g * GQ_IL16_ROWS + r;
                    switch (ncols - c < MAX_TILE ? (int)(ncols - c) : MAX_TILE) {
                    case 1: IL2_TILE(1); break;
                    case 2: IL2_TILE(2); break;
                    case 3: IL2_TILE(3); break;
                    default: IL2_TILE(MAX_TILE); break;
                    }
                }
        }
        free(buf);
    } else {
        /* (and where no buffer was taken or could be had) IL2K_FEW columns a pass */
        for (int64_t c = 0; c < ncols; c += IL2K_FEW)
            il2_cols(wb, w_stride, groups, nb, ab, act_stride, c, ncols - c < IL2K_FEW ? ncols - c : IL2K_FEW, out,
                     out_stride, type);
    }
    for (int64_t r = whole; r < nrows; r++)
        for (int64_t c = 0; c < ncols; c++) {
            const uint8_t *row = wb + (size_t)r * w_stride, *a = ab + (size_t)c * act_stride;
            float *o = out + (size_t)c * out_stride + r;
            IL2_TILE(1);
        }
}
#undef IL2_TILE
#endif

#ifdef __AVX512VNNI__
/* ------------------------------------------------------------------------ */
/* Q4_K, Q5_K, Q6_K with 512-bit products                                  */

enum { KQ_Q4_K, KQ_Q5_K, KQ_Q6_K };

static inline size_t kq_block_bytes(const int type)
{
    return type == KQ_Q6_K ? sizeof(struct gq_block_q6_k)
           : type == KQ_Q5_K ? sizeof(struct gq_block_q5_k) : sizeof(struct gq_block_q4_k);
}

/* A block unpacked for 512-bit products: x[p] the unsigned quants that
 * meet activations 64p .. 64p + 63, s[p] the int16 scales of their pair
 * sums; m16 what multiplies the activations' 16-sums: the mins of Q4_K
 * and Q5_K (each twice), the scales of Q6_K (whose quants are q + 32). */
struct kq512 {
    __m512i x[4], s[4];
    __m256i m16;
};

/* A Q4_K (Q5_K) block's quants as bytes: x[2h] the low nibbles of qs
 * bytes 64h .. 64h + 63 (sub-blocks 4h and 4h + 2), x[2h + 1] their high
 * ones (4h + 1, 4h + 3), with Q5_K's fifth bits; *scmn its scales and
 * mins (q4k_scales_mins()); returns the mins as int16, each twice, for
 * the activations' 16-sums. */
static inline __attribute__((always_inline)) __m256i k4_quants(__m512i *x, __m128i *scmn, const uint8_t *blk,
                                                              const int type)
{
    const struct gq_block_q4_k *w = (const struct gq_block_q4_k *)blk;
    const struct gq_block_q5_k *w5 = (const struct gq_block_q5_k *)blk;
    const __m512i low4 = _mm512_set1_epi8(0x0f), bit4 = _mm512_set1_epi8(0x10);
    const uint8_t *qs = type == KQ_Q5_K ? w5->qs : w->qs;
    /* bits 2j, 2j + 1 of qh for the nibbles of qs bytes 32j .. 32j + 31
     * at bits 0, 1 (then 4, 5 for j + 2): qh >> 2 in the upper 256 bits */
    __m512i hbits = type == KQ_Q5_K
                        ? _mm512_srlv_epi16(_mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)w5->qh)),
                                            _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1))
                        : _mm512_setzero_si512();
    UNROLL
    for (int h = 0; h < 2; h++) {
        const __m512i q = _mm512_loadu_si512(qs + 64 * h);
        __m512i lo = _mm512_and_si512(q, low4);
        __m512i hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
        if (type == KQ_Q5_K) {
            lo = _mm512_or_si512(lo, _mm512_and_si512(_mm512_slli_epi16(hbits, 4), bit4));
            hi = _mm512_or_si512(hi, _mm512_and_si512(_mm512_slli_epi16(hbits, 3), bit4));
            hbits = _mm512_srli_epi16(hbits, 4);
        }
        x[2 * h] = lo;
        x[2 * h + 1] = hi;
    }
    *scmn = q4k_scales_mins(w->scales);
    return _mm256_cvtepu8_epi16(
        _mm_shuffle_epi8(*scmn, _mm_setr_epi8(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15)));
}

/* Q4_K, Q5_K: 64 bytes of qs hold sub-blocks 4h, 4h + 2 in their low
 * nibbles and 4h + 1, 4h + 3 in their high ones; the nibbles are
 * regrouped by 128-bit lanes into the pairs of sub-blocks (2p, 2p + 1)
 * that lie side by side in the activations, each with its two scales.
 * Q6_K: quants k = 2m and 2m + 1 of half h (q6k_quants()) side by side,
 * with the four scales 8h + 4m .. 8h + 4m + 3 of their groups of 16. */
static inline __attribute__((always_inline)) struct kq512 kq_unpack512(const uint8_t *blk, const int type)
{
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    /* qh >> 2 in the upper 256 bits */
    const __m512i upper2 = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    struct kq512 u;
    if (type == KQ_Q6_K) {
        const struct gq_block_q6_k *w = (const struct gq_block_q6_k *)blk;
        const __m512i three = _mm512_set1_epi8(3);
        /* pair sums 8g .. 8g + 7 take scale g of the four */
        const __m512i sidx = _mm512_set_epi64(0x0003000300030003, 0x0003000300030003, 0x0002000200020002,
                                              0x0002000200020002, 0x0001000100010001, 0x0001000100010001, 0, 0);
        const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w->scales));
        const __m512i sc16 = _mm512_zextsi256_si512(sc);
        u.m16 = sc;
        UNROLL
        for (int h = 0; h < 2; h++) {
            const __m512i ql = _mm512_loadu_si512(w->ql + 64 * h);
            /* qh, and qh >> 2 above it: bits 2k, 2k + 1 of quants k = 2m
             * below, of k = 2m + 1 above, after a shift by 4m */
            const __m512i qh = _mm512_srlv_epi16(
                _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(w->qh + 32 * h))), upper2);
            UNROLL
            for (int m = 0; m < 2; m++) {
                const __m512i lo = _mm512_and_si512(m ? _mm512_srli_epi16(ql, 4) : ql, low4);
                const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(qh, 4 * m), three);
                u.x[2 * h + m] = _mm512_or_si512(lo, _mm512_slli_epi16(hi, 4));
                u.s[2 * h + m] = _mm512_permutexvar_epi16(
                    _mm512_add_epi16(sidx, _mm512_set1_epi16((short)(8 * h + 4 * m))), sc16);
            }
        }
        return u;
    }
    /* int16 lanes 0-15 take scale 2p, lanes 16-31 scale 2p + 1 */
    const __m512i sel0 = _mm512_inserti64x4(_mm512_set1_epi16(0x0100), _mm256_set1_epi16(0x0100 + 0x0202), 1);
    __m512i x[4];
    __m128i scmn;
    u.m16 = k4_quants(x, &scmn, blk, type);
    const __m512i sc16 = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(scmn));
    UNROLL
    for (int p = 0; p < 4; p++) {
        const int h = p / 2;
        u.x[p] = p % 2 ? _mm512_shuffle_i64x2(x[2 * h], x[2 * h + 1], 0xee)
                       : _mm512_shuffle_i64x2(x[2 * h], x[2 * h + 1], 0x44);
        u.s[p] = _mm512_shuffle_epi8(sc16, _mm512_add_epi16(sel0, _mm512_set1_epi16((short)(0x0404 * p))));
    }
    return u;
}

/* d (and dmin) of a block as halves. */
static inline uint16_t kq_d(const uint8_t *blk, const int type)
{
    return load_u16(type == KQ_Q6_K ? blk + offsetof(struct gq_block_q6_k, d) : blk);
}

static inline uint16_t kq_dmin(const uint8_t *blk, const int type)
{
    return type == KQ_Q6_K ? 0 : load_u16(blk + offsetof(struct gq_block_q4_k, dmin));
}

/* The block's integer sum in 8 lanes (exact), for the activations y and
 * their 16-sums bsums, with the mins term in *imin (Q4_K, Q5_K) or the
 * q + 32 of Q6_K taken out. */
static inline __m256i kq_finish(__m512i isum, __m256i m16, __m256i bsums, __m256i *imin, const int type)
{
    const __m256i t = halves_sum(isum), c = _mm256_madd_epi16(bsums, m16);
    if (type == KQ_Q6_K) return _mm256_sub_epi32(t, _mm256_slli_epi32(c, 5));
    *imin = c;
    return t;
}

/* k4_tile() and q6k_tile() with 512-bit products: the halves of the sums
 * are added into their 8 lanes, which then hold the same numbers. */
static inline __attribute__((always_inline)) void
kq_tile512(int nb, const uint8_t *row, const uint8_t *act, size_t act_stride, const int C,
           float *out, size_t out_stride, const int type)
{
    const size_t bb = kq_block_bytes(type);
    float acc[MAX_TILE];
    UNROLL
    for (int c = 0; c < C; c++) acc[c] = 0.0f;
    for (int i = 0; i < nb; i++) {
        const uint8_t *blk = row + (size_t)i * bb;
        const struct kq512 u = kq_unpack512(blk, type);
        __m512i isum[MAX_TILE][4];
        UNROLL
        for (int c = 0; c < C; c++) {
            for (int a = 0; a < NACC(C); a++) isum[c][a] = _mm512_setzero_si512();
        }
        UNROLL
        for (int p = 0; p < 4; p++) {
            UNROLL
            for (int c = 0; c < C; c++) {
                const int8_t *y = act_block(act, act_stride, c, i)->qs + 64 * p;
                __m512i *sa = &isum[c][p % NACC(C)];
                *sa = _mm512_dpwssd_epi32(*sa, _mm512_maddubs_epi16(u.x[p], _mm512_loadu_si512(y)), u.s[p]);
            }
        }
        const float d = _cvtsh_ss(kq_d(blk, type)), dmin = _cvtsh_ss(kq_dmin(blk, type));
        UNROLL
        for (int c = 0; c < C; c++) {
            for (int a = 1; a < NACC(C); a++) isum[c][0] = _mm512_add_epi32(isum[c][0], isum[c][a]);
            const struct gq_block_q8_k *a = act_block(act, act_stride, c, i);
            __m256i imin;
            const __m256i t = kq_finish(isum[c][0], u.m16, _mm256_loadu_si256((const __m256i *)a->bsums), &imin, type);
            acc[c] = type == KQ_Q6_K ? k_block_step(acc[c], t, d, a->d)
                                     : k_block_step_mins(acc[c], t, imin, d, dmin, a->d);
        }
    }
    UNROLL
    for (int c = 0; c < C; c++) out[(size_t)c * out_stride] = acc[c];
}

/* How far ahead (bytes) a one-column product asks for its weights: the
 * next rows, at least this far, so that the memory streams at full speed
 * (four rows read side by side went at 60-70 % of the read bandwidth
 * without it, at 90 % with it). */
#define PREFETCH_AHEAD 12288

/* Where a pass over rows taken four at a time from w0 asks for the lines
 * it will read: whole groups of four rows ahead, at least PREFETCH_AHEAD
 * bytes. */
static inline const char *prefetch_start(const uint8_t *w0, size_t w_stride)
{
    const size_t group = 4 * w_stride;
    return (const char *)w0 + (group >= PREFETCH_AHEAD ? group : (PREFETCH_AHEAD + group - 1) / group * group);
}

/* Asks for the bytes of four blocks of bb bytes at block i of that pass:
 * as many as the four rows' block i.  Always inlined: gcc 12 drops the
 * prefetches of a copy left out of line, whose hint is then no constant. */
static inline __attribute__((always_inline)) void prefetch_blocks(const char *pf, int i, size_t bb)
{
    _Pragma("GCC unroll 16")
    for (size_t o = 0; o < 4 * bb; o += 64) _mm_prefetch(pf + (size_t)i * 4 * bb + o, _MM_HINT_T0);
}

/* -2^log2_off times the sum of each int32 lane's four activation bytes y:
 * where vpdpbusd starts, so that weights taken as unsigned q + 2^log2_off
 * leave the lane sums of q y. */
static inline __m512i offset_start(__m512i y, int log2_off)
{
    const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), y);
    return _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sums, (unsigned)log2_off));
}

/* The 8 int32 totals of v[0..7] (8 lanes each), in that order. */
static inline __m256i sum8x8(const __m256i v[8])
{
    __m256i p[4], q[2];
    UNROLL
    for (int k = 0; k < 4; k++) /* per half: v2k 0+2, v2k+1 0+2, v2k 1+3, v2k+1 1+3 */
        p[k] = _mm256_add_epi32(_mm256_unpacklo_epi32(v[2 * k], v[2 * k + 1]),
                                _mm256_unpackhi_epi32(v[2 * k], v[2 * k + 1]));
    UNROLL
    for (int k = 0; k < 2; k++) /* per half: the totals of 4 vectors' halves */
        q[k] = _mm256_add_epi32(_mm256_unpacklo_epi64(p[2 * k], p[2 * k + 1]),
                                _mm256_unpackhi_epi64(p[2 * k], p[2 * k + 1]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(q[0], q[1], 0x20),
                            _mm256_permute2x128_si256(q[0], q[1], 0x31));
}

/* A block unpacked for one-column products (kq_rows4()): x[p] the
 * unsigned quants of the block's bytes 64p .. 64p + 63 as they lie (Q4_K,
 * Q5_K: the low nibbles of qs bytes 32p .. 32p + 63, then the high ones,
 * see kq_acts()), for vpdpbusd, whose int32 lanes then each hold the sum
 * of four products of one sub-block (at most 4 * 63 * 128, an int16);
 * s[q] the int16 scales of those lane sums of x[2q] and x[2q + 1] as
 * vpackssdw interleaves them (a quarter of either per 128-bit lane); m16
 * as in struct kq512.  Fewer operations than kq_unpack512(), whose
 * products also serve several columns: no regrouping of the nibbles, and
 * half as many scale vectors. */
struct kqd {
    __m512i x[4], s[2];
    __m256i m16;
};

/* The int16 lanes of s[q]: lane t of 128-bit lane L = t / 8 takes the
 * scale of the sub-block that vpackssdw put there (entries: indices of
 * int16 scales). Q4_K, Q5_K (scales of 32): x[2q] holds sub-blocks 4q in
 * its lanes 0-7 and 4q + 2 in 8-15, x[2q + 1] 4q + 1 and 4q + 3; Q6_K
 * (scales of 16): x[p] holds 4p + j in lanes 4j .. 4j + 3. */
static const uint16_t kqd_sidx[2][2][32] __attribute__((aligned(64))) = {
    {{0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 2, 2, 2, 2, 3, 3, 3, 3},
     {4, 4, 4, 4, 5, 5, 5, 5, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 6, 6, 6, 6, 7, 7, 7, 7}},
    {{0, 0, 0, 0, 4, 4, 4, 4, 1, 1, 1, 1, 5, 5, 5, 5, 2, 2, 2, 2, 6, 6, 6, 6, 3, 3, 3, 3, 7, 7, 7, 7},
     {8, 8, 8, 8, 12, 12, 12, 12, 9, 9, 9, 9, 13, 13, 13, 13,
      10, 10, 10, 10, 14, 14, 14, 14, 11, 11, 11, 11, 15, 15, 15, 15}},
};

static inline __attribute__((always_inline)) struct kqd kq_unpack_dp(const uint8_t *blk, const int type)
{
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    /* qh >> 2 in the upper 256 bits */
    const __m512i upper2 = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    struct kqd u;
    if (type == KQ_Q6_K) {
        const struct gq_block_q6_k *w = (const struct gq_block_q6_k *)blk;
        const __m512i bits45 = _mm512_set1_epi8(0x30);
        const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w->scales));
        u.m16 = sc;
        UNROLL
        for (int q = 0; q < 2; q++)
            u.s[q] = _mm512_permutexvar_epi16(_mm512_load_si512(kqd_sidx[1][q]), _mm512_zextsi256_si512(sc));
        UNROLL
        for (int h = 0; h < 2; h++) {
            const __m512i ql = _mm512_loadu_si512(w->ql + 64 * h);
            /* qh, and qh >> 2 above it: bits 0-1 of byte l are the high
             * bits of quant l of x[2h], bits 4-5 of x[2h + 1] */
            const __m512i qh = _mm512_srlv_epi16(
                _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(w->qh + 32 * h))), upper2);
            /* (a & 0x0f) | b, b holding only bits 4-5 */
            u.x[2 * h] = _mm512_ternarylogic_epi32(
                ql, _mm512_and_si512(_mm512_slli_epi16(qh, 4), bits45), low4, 0xec);
            u.x[2 * h + 1] =
                _mm512_ternarylogic_epi32(_mm512_srli_epi16(ql, 4), _mm512_and_si512(qh, bits45), low4, 0xec);
        }
        return u;
    }
    __m128i scmn;
    u.m16 = k4_quants(u.x, &scmn, blk, type);
    const __m512i sc16 = _mm512_castsi128_si512(_mm_cvtepu8_epi16(scmn));
    UNROLL
    for (int q = 0; q < 2; q++)
        u.s[q] = _mm512_permutexvar_epi16(_mm512_load_si512(kqd_sidx[0][q]), sc16);
    return u;
}

/* The activations y (the block's bytes 64p .. 64p + 63 in y[p]) as
 * kq_unpack_dp()'s x[p] meet them: Q4_K and Q5_K's x[2h] holds elements
 * 128h .. 128h + 31 and 128h + 64 .. 128h + 95, x[2h + 1] the 32 after
 * each; Q6_K's are in order. */
static inline __attribute__((always_inline)) void kq_acts(__m512i *ya, const __m512i *y, const int type)
{
    UNROLL
    for (int h = 0; h < 2; h++) {
        ya[2 * h] = type == KQ_Q6_K ? y[2 * h] : _mm512_shuffle_i64x2(y[2 * h], y[2 * h + 1], 0x44);
        ya[2 * h + 1] = type == KQ_Q6_K ? y[2 * h + 1] : _mm512_shuffle_i64x2(y[2 * h], y[2 * h + 1], 0xee);
    }
}

/* out[r] = rows r (r < 4, from w0, stride w_stride) times one activation
 * column: for four rows at once, which share the activation loads, the
 * horizontal sums (sum8x8()) and the float steps, taken in the 4 lanes of
 * a vector exactly as kq_tile512() takes them in one: the same integers
 * (kq_unpack_dp()), the same bits, and four independent chains of work
 * per block.  (Q6_K's zero mins term takes nothing away: x - 0 is x.) */
static inline __attribute__((always_inline)) void
kq_rows4(int nb, const uint8_t *w0, size_t w_stride, const uint8_t *act, float *out, const int type)
{
    const __m256i even_odd = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    const size_t bb = kq_block_bytes(type);
    const char *pf = prefetch_start(w0, w_stride);
    __m128 acc = _mm_setzero_ps();
    for (int i = 0; i < nb; i++) {
        prefetch_blocks(pf, i, bb);
        const struct gq_block_q8_k *a = (const struct gq_block_q8_k *)act + i;
        __m512i y[4], ya[4];
        UNROLL
        for (int p = 0; p < 4; p++) y[p] = _mm512_loadu_si512(a->qs + 64 * p);
        kq_acts(ya, y, type);
        const __m256i bsums = _mm256_loadu_si256((const __m256i *)a->bsums);
        /* per row r: v[2r] its integer sum, v[2r + 1] its mins term; the
         * halves in dd: d and dmin of each row, in the same order */
        __m256i v[8];
        int32_t ddw[4];
        UNROLL
        for (int r = 0; r < 4; r++) {
            const uint8_t *blk = w0 + (size_t)r * w_stride + (size_t)i * bb;
            ddw[r] = (int32_t)(kq_d(blk, type) | (uint32_t)kq_dmin(blk, type) << 16);
            const struct kqd u = kq_unpack_dp(blk, type);
            __m512i l[4];
            UNROLL
            for (int p = 0; p < 4; p++) l[p] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u.x[p], ya[p]);
            const __m512i isum = _mm512_dpwssd_epi32(_mm512_madd_epi16(_mm512_packs_epi32(l[0], l[1]), u.s[0]),
                                                     _mm512_packs_epi32(l[2], l[3]), u.s[1]);
            v[2 * r + 1] = _mm256_setzero_si256();
            v[2 * r] = kq_finish(isum, u.m16, bsums, &v[2 * r + 1], type);
        }
        /* (d * ad) * isum and (dmin * ad) * imin per row, rounded as the
         * one-row kernel rounds them; the sums added, then the mins taken */
        const __m128i dd = _mm_setr_epi32(ddw[0], ddw[1], ddw[2], ddw[3]);
        const __m256 f = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtph_ps(dd), _mm256_set1_ps(a->d)),
                                       _mm256_cvtepi32_ps(sum8x8(v)));
        const __m256 g = _mm256_permutevar8x32_ps(f, even_odd);
        acc = _mm_add_ps(acc, _mm256_castps256_ps128(g));
        acc = _mm_sub_ps(acc, _mm256_extractf128_ps(g, 1));
    }
    _mm_storeu_ps(out, acc);
}

/* A one-column product: kq_rows4() for the rows in fours, kq_tile512()
 * for the rest. */
static inline __attribute__((always_inline)) void
kq_column(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act, float *out, const int type)
{
    const int nb = (int)(k / GQ_QK_K);
    const uint8_t *wb = w;
    int64_t r = 0;
    for (; r + 4 <= nrows; r += 4) kq_rows4(nb, wb + (size_t)r * w_stride, w_stride, act, out + r, type);
    for (; r < nrows; r++) kq_tile512(nb, wb + (size_t)r * w_stride, act, 0, 1, out + r, 0, type);
}

#define DEFINE_COLUMN(NAME, TYPE)                                                                    \
    static void NAME(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act,      \
                     size_t act_stride, int64_t ncols, float *out, size_t out_stride)                \
    {                                                                                                \
        (void)act_stride, (void)ncols, (void)out_stride;                                             \
        kq_column(k, w, w_stride, nrows, act, out, TYPE);                                            \
    }
DEFINE_COLUMN(column_q4_k, KQ_Q4_K)
DEFINE_COLUMN(column_q5_k, KQ_Q5_K)
DEFINE_COLUMN(column_q6_k, KQ_Q6_K)

/* Q4_K, Q5_K and Q6_K on interleaved rows (gq_ilk_type(), dot.h):
 * sixteen rows in the lanes of a vector, their blocks' words transposed.
 * Per chunk,
 * vpdpbusd of a vector of quants (unsigned) with four activations
 * broadcast adds a quad of each row's elements into its lane, so a
 * sub-block's sums come out row by row; they are multiplied by the rows'
 * scales (vpmulld), the mins or Q6_K's -32 taken from the activations'
 * block sums (vpdpwssd), and the float steps of kq_rows4() follow lane by
 * lane: the same integers, the same bits, with a third of kq_rows4()'s
 * instructions (1 thread, 512 x 1536 in cache: Q4_K 26 -> 60 GB/s, Q5_K
 * 25 -> 50, Q6_K 32 -> 50).  Q4_K's high nibbles stay in place, sixteen
 * times their value, and the sums are shifted back, exactly: a shift less
 * per vector of quants (one column 64 -> 68 GB/s).  The quants are
 * unpacked once for ILK_FEW columns. */
#define ILK_FEW 4
#define ILK_ACT_BYTES (256 << 10) /* inputs taken at a time by products of many columns */

/* The columns a product of many takes at a time on interleaved rows: as
 * many as fit ILK_ACT_BYTES of input (the L2 cache), in steps of `few`, at
 * least one step. */
static inline int64_t il_column_run(int nb, size_t act_block, int few)
{
    const int64_t run = ILK_ACT_BYTES / ((int64_t)nb * (int64_t)act_block) / few * few;
    return run > few ? run : few;
}

/* Byte j of each dword of v, zero-extended (top: 0) or sign-extended from
 * the dword's top byte (top: 1), as the shuffle control of vpshufb. */
static inline __m512i ilk_byte_sel(int j, int top)
{
    const int b = top ? 3 : 0;
    uint32_t ctl[4];
    for (int k = 0; k < 4; k++) ctl[k] = (0x80808080u & ~(0xffu << (8 * b))) | (uint32_t)(4 * k + j) << (8 * b);
    return _mm512_broadcast_i32x4(_mm_setr_epi32((int)ctl[0], (int)ctl[1], (int)ctl[2], (int)ctl[3]));
}

/* Two int16 block sums of Q8_K activations as one lane: a low, b high. */
static inline __m512i ilk_pair(int a, int b)
{
    return _mm512_set1_epi32((int)((uint32_t)(uint16_t)a | (uint32_t)(uint16_t)b << 16));
}

/* The dword k of each 128-bit lane: 4k in each of its bytes (a vpshufb
 * control's offset). */
static inline __m512i ilk_lane_base(void)
{
    return _mm512_broadcast_i32x4(_mm_setr_epi32(0, 0x04040404, 0x08080808, 0x0c0c0c0c));
}

/* Quad t (elements 4t .. 4t + 3) of a in every lane. */
static inline __m512i ilk_quad(const struct gq_block_q8_k *a, int t)
{
    int32_t v;
    memcpy(&v, a->qs + 4 * t, 4);
    return _mm512_set1_epi32(v);
}

/* Q4_K (five 0) or Q5_K (five 1: its qh words between its first eight qs
 * words, as gq_ilk_pos() places them). */
static inline __attribute__((always_inline)) void
ilk_chunk_q45_k(const uint8_t *c, const struct gq_block_q8_k *const *a, const int nc, __m512 *acc, const int five)
{
    const __m512i low = _mm512_set1_epi8(0x0f), six = _mm512_set1_epi8(0x3f), m30 = _mm512_set1_epi8(0x30);
    const __m512i w0 = _mm512_loadu_si512(c);
    const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(w0));
    const __m512 dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(w0, 16)));
    /* the 6-bit scales and mins of sub-blocks 0-3 and 4-7, a byte each */
    const __m512i A = _mm512_loadu_si512(c + 64), B = _mm512_loadu_si512(c + 128), C = _mm512_loadu_si512(c + 192);
    const __m512i sc03 = _mm512_and_si512(A, six), mn03 = _mm512_and_si512(B, six);
    /* (a & c) | (b & m30): ternary logic 0xf8 on (a & low), b, m30 */
    const __m512i sc47 = _mm512_ternarylogic_epi32(_mm512_and_si512(C, low), _mm512_srli_epi16(A, 2), m30, 0xf8);
    const __m512i mn47 =
        _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(C, 4), low), _mm512_srli_epi16(B, 2), m30, 0xf8);
    __m512i isum[ILK_FEW], imin[ILK_FEW];
    UNROLL
    for (int k = 0; k < nc; k++) isum[k] = imin[k] = _mm512_setzero_si512();
    UNROLL
    for (int p = 0; p < 4; p++) {
        __m512i slo[ILK_FEW], shi[ILK_FEW];
        UNROLL
        for (int k = 0; k < nc; k++) slo[k] = shi[k] = _mm512_setzero_si512();
        UNROLL
        for (int q = 0; q < 8; q++) {
            /* qs bytes 32p + 4q ..: elements 64p + 4q .. (low nibbles,
             * sub-block 2p) and 32 further (high, 2p + 1) */
            const uint32_t wtype = five ? GGUF_T_Q5_K : GGUF_T_Q4_K;
            const __m512i x = _mm512_loadu_si512(c + 64 * gq_ilk_pos(wtype, 4 + 8 * five + 8 * p + q));
            /* Q4_K: the high nibbles in place, 16 times their value
             * (the sums are shifted back below, exactly) */
            __m512i lo = _mm512_and_si512(x, low),
                    hi = five ? _mm512_and_si512(_mm512_srli_epi16(x, 4), low) : _mm512_andnot_si512(low, x);
            if (five) {
                /* the fifth bits: bits 2p and 2p + 1 of qh bytes 4q .. */
                const __m512i h = _mm512_loadu_si512(c + 64 * gq_ilk_pos(wtype, 4 + q)), b4 = _mm512_set1_epi8(0x10);
                const __m512i hl = 4 - 2 * p >= 0 ? _mm512_slli_epi16(h, (unsigned)(4 - 2 * p))
                                                  : _mm512_srli_epi16(h, (unsigned)(2 * p - 4));
                const __m512i hh = 3 - 2 * p >= 0 ? _mm512_slli_epi16(h, (unsigned)(3 - 2 * p))
                                                  : _mm512_srli_epi16(h, (unsigned)(2 * p - 3));
                lo = _mm512_ternarylogic_epi32(lo, hl, b4, 0xf8); /* a | (b & c) */
                hi = _mm512_ternarylogic_epi32(hi, hh, b4, 0xf8);
            }
            UNROLL
            for (int k = 0; k < nc; k++) {
                slo[k] = _mm512_dpbusd_epi32(slo[k], lo, ilk_quad(a[k], 16 * p + q));
                shi[k] = _mm512_dpbusd_epi32(shi[k], hi, ilk_quad(a[k], 16 * p + 8 + q));
            }
        }
        const int j0 = 2 * p, j1 = 2 * p + 1;
        const __m512i s0 = _mm512_shuffle_epi8(j0 < 4 ? sc03 : sc47, ilk_byte_sel(j0 % 4, 0));
        const __m512i s1 = _mm512_shuffle_epi8(j1 < 4 ? sc03 : sc47, ilk_byte_sel(j1 % 4, 0));
        /* the two sub-blocks' mins as int16 pairs */
        const __m512i mn = _mm512_or_si512(_mm512_shuffle_epi8(j0 < 4 ? mn03 : mn47, ilk_byte_sel(j0 % 4, 0)),
                                           _mm512_slli_epi32(_mm512_shuffle_epi8(j1 < 4 ? mn03 : mn47,
                                                                                 ilk_byte_sel(j1 % 4, 0)), 16));
        UNROLL
        for (int k = 0; k < nc; k++) {
            if (!five) shi[k] = _mm512_srai_epi32(shi[k], 4);
            isum[k] = _mm512_add_epi32(isum[k], _mm512_add_epi32(_mm512_mullo_epi32(slo[k], s0),
                                                                 _mm512_mullo_epi32(shi[k], s1)));
            const struct gq_block_q8_k *y = a[k];
            imin[k] = _mm512_dpwssd_epi32(imin[k], mn, ilk_pair(y->bsums[4 * p] + y->bsums[4 * p + 1],
                                                                y->bsums[4 * p + 2] + y->bsums[4 * p + 3]));
        }
    }
    UNROLL
    for (int k = 0; k < nc; k++) {
        const __m512 ad = _mm512_set1_ps(a[k]->d);
        acc[k] = _mm512_add_ps(acc[k], _mm512_mul_ps(_mm512_mul_ps(d, ad), _mm512_cvtepi32_ps(isum[k])));
        acc[k] = _mm512_sub_ps(acc[k], _mm512_mul_ps(_mm512_mul_ps(dmin, ad), _mm512_cvtepi32_ps(imin[k])));
    }
}

/* Q6_K quant kind e (0-3) of quad q of half h as unsigned bytes 0-63,
 * from ql words 16h + q and 16h + 8 + q and qh word 32 + 8h + q (they lie
 * together at c + 64 * (4 + 3 * (8h + q))): x is the first ql word for
 * even e, the second for odd e, hb the qh word; kind e takes x's low
 * (e < 2) or high nibbles and bits 2e, 2e + 1 of hb as its fifth and
 * sixth. */
static inline __attribute__((always_inline)) __m512i ilk_q6k_unpack(const __m512i x, const __m512i hb, const int e)
{
    const __m512i low = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    const __m512i lo = e < 2 ? x : _mm512_srli_epi16(x, 4);
    const __m512i hi = e == 0   ? _mm512_slli_epi16(hb, 4)
                       : e == 1 ? _mm512_slli_epi16(hb, 2)
                       : e == 2 ? hb
                                : _mm512_srli_epi16(hb, 2);
    /* (a & c) | b: ternary logic 0xec */
    return _mm512_ternarylogic_epi32(lo, _mm512_and_si512(hi, m30), low, 0xec);
}

/* The signed scale of sub-block sub (0-15) in each lane. */
static inline __attribute__((always_inline)) __m512i ilk_q6k_scale(const __m512i scv[4], const int sub)
{
    return _mm512_srai_epi32(_mm512_shuffle_epi8(scv[sub / 4], ilk_byte_sel(sub % 4, 1)), 24);
}

/* Q6_K's offsets of nc columns, the scales times the block sums, from the
 * chunk's scale words 48-51 (scv): the scales of sub-blocks 2u and 2u + 1
 * as int16 pairs (bytes 0, 1 and 2, 3 of a lane, each moved to the top of
 * a 16-bit half and shifted down with its sign), each pair taken to every
 * column as it is made. */
static inline __attribute__((always_inline)) void
ilk_q6k_offsets(const __m512i scv[4], const struct gq_block_q8_k *const *a, const int nc, __m512i *off)
{
    UNROLL
    for (int k = 0; k < nc; k++) off[k] = _mm512_setzero_si512();
    UNROLL
    for (int u = 0; u < 8; u++) {
        const unsigned h = (unsigned)u % 2;
        const __m512i ctl = _mm512_set1_epi32((int)(0x80u | (2u * h) << 8 | 0x80u << 16 | (2u * h + 1) << 24));
        const __m512i pr = _mm512_srai_epi16(_mm512_shuffle_epi8(scv[u / 2], _mm512_add_epi32(ctl, ilk_lane_base())), 8);
        UNROLL
        for (int k = 0; k < nc; k++)
            off[k] = _mm512_dpwssd_epi32(off[k], pr, ilk_pair(a[k]->bsums[2 * u], a[k]->bsums[2 * u + 1]));
    }
}

/* A chunk's term of a column's sums: the rows' d times the column's scale
 * ad times the scaled sub-block sums isum less 32 times the offset off. */
static inline __attribute__((always_inline)) __m512 ilk_q6k_term(__m512 d, float ad, __m512i isum, __m512i off)
{
    const __m512i t = _mm512_sub_epi32(isum, _mm512_slli_epi32(off, 5));
    return _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(ad)), _mm512_cvtepi32_ps(t));
}

static inline __attribute__((always_inline)) void
ilk_chunk_q6_k(const uint8_t *c, const struct gq_block_q8_k *const *a, const int nc, __m512 *acc)
{
    __m512i isum[ILK_FEW], off[ILK_FEW], scv[4];
    for (int v = 0; v < 4; v++) scv[v] = _mm512_loadu_si512(c + 64 * v); /* the scales, words 48-51 */
    UNROLL
    for (int k = 0; k < nc; k++) isum[k] = _mm512_setzero_si512();
    UNROLL
    for (int h = 0; h < 2; h++)
        UNROLL
        for (int t = 0; t < 2; t++) {
            /* sub-blocks 8h + t + 2u (u = 0 .. 3): quads q = 4t .. 4t + 3
             * of the four quant kinds of half h */
            __m512i sb[ILK_FEW][4];
            UNROLL
            for (int k = 0; k < nc; k++) sb[k][0] = sb[k][1] = sb[k][2] = sb[k][3] = _mm512_setzero_si512();
            UNROLL
            for (int q = 4 * t; q < 4 * t + 4; q++) {
                const uint8_t *v3 = c + 64 * (4 + 3 * (8 * h + q));
                const __m512i x1 = _mm512_loadu_si512(v3), x2 = _mm512_loadu_si512(v3 + 64);
                const __m512i hb = _mm512_loadu_si512(v3 + 128);
                __m512i u[4];
                UNROLL
                for (int e = 0; e < 4; e++) u[e] = ilk_q6k_unpack(e & 1 ? x2 : x1, hb, e);
                UNROLL
                for (int k = 0; k < nc; k++)
                    UNROLL
                    for (int e = 0; e < 4; e++)
                        sb[k][e] = _mm512_dpbusd_epi32(sb[k][e], u[e], ilk_quad(a[k], 32 * h + 8 * e + q));
            }
            UNROLL
            for (int e = 0; e < 4; e++) {
                const __m512i sc = ilk_q6k_scale(scv, 8 * h + t + 2 * e);
                UNROLL
                for (int k = 0; k < nc; k++) isum[k] = _mm512_add_epi32(isum[k], _mm512_mullo_epi32(sb[k][e], sc));
            }
        }
    ilk_q6k_offsets(scv, a, nc, off);
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(c + 64 * 52)));
    UNROLL
    for (int k = 0; k < nc; k++) acc[k] = _mm512_add_ps(acc[k], ilk_q6k_term(d, a[k]->d, isum[k], off[k]));
}

#define ILK_WIDE 8

/* Q6_K, ILK_WIDE columns: sub-block after sub-block, each of its vectors
 * of quants unpacked and multiplied by every column before the next
 * (ilk_chunk_q6_k() keeps four sub-blocks' sums of each column, too many
 * registers for more than four columns), so the unpacking, about a third
 * of the work at four columns, is shared by eight.  The same integers,
 * the same float steps, the same bits.  The columns' sums in acc[] (in
 * memory: the registers hold the integer sums).  One thread, 512 x 1536
 * in the cache, 8 to 64 columns: 1.27-1.32 times as fast as four at a
 * time. */
static inline __attribute__((always_inline)) void
ilk_chunk_q6_k_wide(const uint8_t *c, const struct gq_block_q8_k *const *a, float (*acc)[GQ_IL16_ROWS])
{
    __m512i isum[ILK_WIDE], off[ILK_WIDE], scv[4];
    for (int v = 0; v < 4; v++) scv[v] = _mm512_loadu_si512(c + 64 * v); /* the scales, words 48-51 */
    UNROLL
    for (int k = 0; k < ILK_WIDE; k++) isum[k] = _mm512_setzero_si512();
    for (int h = 0; h < 2; h++)
        for (int t = 0; t < 2; t++)
            UNROLL
            for (int e = 0; e < 4; e++) {
                /* sub-block 8h + t + 2e: quads q = 4t .. 4t + 3 of quant kind
                 * e of half h */
                __m512i sb[ILK_WIDE];
                UNROLL
                for (int k = 0; k < ILK_WIDE; k++) sb[k] = _mm512_setzero_si512();
                UNROLL
                for (int q = 4 * t; q < 4 * t + 4; q++) {
                    const uint8_t *v3 = c + 64 * (4 + 3 * (8 * h + q));
                    const __m512i u = ilk_q6k_unpack(_mm512_loadu_si512(v3 + 64 * (e & 1)), _mm512_loadu_si512(v3 + 128), e);
                    UNROLL
                    for (int k = 0; k < ILK_WIDE; k++)
                        sb[k] = _mm512_dpbusd_epi32(sb[k], u, ilk_quad(a[k], 32 * h + 8 * e + q));
                }
                const __m512i sc = ilk_q6k_scale(scv, 8 * h + t + 2 * e);
                UNROLL
                for (int k = 0; k < ILK_WIDE; k++) isum[k] = _mm512_add_epi32(isum[k], _mm512_mullo_epi32(sb[k], sc));
            }
    ilk_q6k_offsets(scv, a, ILK_WIDE, off);
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(c + 64 * 52)));
    UNROLL
    for (int k = 0; k < ILK_WIDE; k++)
        _mm512_storeu_ps(acc[k], _mm512_add_ps(_mm512_loadu_ps(acc[k]), ilk_q6k_term(d, a[k]->d, isum[k], off[k])));
}

/* Rows 0 .. 16 * groups - 1 (interleaved) Q6_K times ILK_WIDE columns
 * from column c0. */
static void ilk_columns_q6_k_wide(const uint8_t *w, size_t w_stride, int64_t groups, int nb, const uint8_t *act,
                                  size_t act_stride, int64_t c0, float *out, size_t out_stride)
{
    const size_t bb = kq_block_bytes(KQ_Q6_K);
    for (int64_t g = 0; g < groups; g++) {
        const uint8_t *c = gq_il_chunk(w, w_stride, g, 0, bb);
        float acc[ILK_WIDE][GQ_IL16_ROWS] = {{0}};
        for (int k = 0; k < ILK_WIDE; k++)
            __builtin_prefetch(out + (size_t)(c0 + k) * out_stride + (size_t)g * GQ_IL16_ROWS, 1, 3);
        for (int i = 0; i < nb; i++, c += GQ_IL16_ROWS * bb) {
            const struct gq_block_q8_k *a[ILK_WIDE];
            for (int k = 0; k < ILK_WIDE; k++) a[k] = (const struct gq_block_q8_k *)(act + (size_t)(c0 + k) * act_stride) + i;
            ilk_chunk_q6_k_wide(c, a, acc);
        }
        for (int k = 0; k < ILK_WIDE; k++)
            memcpy(out + (size_t)(c0 + k) * out_stride + (size_t)g * GQ_IL16_ROWS, acc[k], sizeof acc[k]);
    }
}

/* Rows 0 .. 16 * groups - 1 (interleaved) times nc <= ILK_FEW columns
 * from column c0 (column c at act + c * act_stride).  Each group's lines
 * of the output are fetched for writing before its products (here and in
 * ilk_columns_q6_k_wide()): a product's output beyond the L2 cache (a
 * column of 8960 rows a page apart from the next) otherwise slowed the
 * kernel by a tenth (measured by storing every group's sums to the same
 * lines instead: as fast as the prefetch).  One thread, 8960 x 1536, 128
 * columns: Q4_K 145-148 -> 160-161 GMAC/s (256 rows: 168-170 either
 * way), Q5_K 130 -> 144, Q6_K 132 -> 137-139; two threads (bench-matmul):
 * Q4_K 282-295 -> 307-318, Q6_K 255-258 -> 268-271. */
static inline __attribute__((always_inline)) void
ilk_columns(const uint8_t *w, size_t w_stride, int64_t groups, int nb, const uint8_t *act, size_t act_stride,
            int64_t c0, float *out, size_t out_stride, const int nc, const int type)
{
    const size_t bb = kq_block_bytes(type);
    for (int64_t g = 0; g < groups; g++) {
        const uint8_t *c = gq_il_chunk(w, w_stride, g, 0, bb);
        __m512 acc[ILK_FEW];
        UNROLL
        for (int k = 0; k < nc; k++) {
            acc[k] = _mm512_setzero_ps();
            __builtin_prefetch(out + (size_t)(c0 + k) * out_stride + (size_t)g * GQ_IL16_ROWS, 1, 3);
        }
        for (int i = 0; i < nb; i++, c += GQ_IL16_ROWS * bb) {
            const struct gq_block_q8_k *a[ILK_FEW];
            UNROLL
            for (int k = 0; k < nc; k++) a[k] = (const struct gq_block_q8_k *)(act + (size_t)(c0 + k) * act_stride) + i;
            if (type == KQ_Q6_K)
                ilk_chunk_q6_k(c, a, nc, acc);
            else
                ilk_chunk_q45_k(c, a, nc, acc, type == KQ_Q5_K);
        }
        UNROLL
        for (int k = 0; k < nc; k++)
            _mm512_storeu_ps(out + (size_t)(c0 + k) * out_stride + (size_t)g * GQ_IL16_ROWS, acc[k]);
    }
}

/* Q4_K, Q5_K and Q6_K on interleaved rows below whole, any number of
 * columns, ILK_FEW at a time: of up to ILK_FEW columns, the groups one
 * after the other; of more, each group's rows (in the cache after the
 * first pass) times a run of the columns (1 thread, 512 x 1536 Q4_K in
 * cache: 1 column 0.42 G row blocks a second, 4: 0.62 G, against
 * 0.55-0.58 G on 16-64 columns with the panels on plain rows). */
static inline __attribute__((always_inline)) void
ilk_cols(const uint8_t *w, size_t w_stride, int64_t groups, int nb, const uint8_t *act, size_t act_stride,
         int64_t c0, int64_t nc, float *out, size_t out_stride, const int type)
{
    switch (nc) {
    case 1: ilk_columns(w, w_stride, groups, nb, act, act_stride, c0, out, out_stride, 1, type); break;
    case 2: ilk_columns(w, w_stride, groups, nb, act, act_stride, c0, out, out_stride, 2, type); break;
    case 3: ilk_columns(w, w_stride, groups, nb, act, act_stride, c0, out, out_stride, 3, type); break;
    default: ilk_columns(w, w_stride, groups, nb, act, act_stride, c0, out, out_stride, 4, type); break;
    }
}

/* The product: the groups below whole, then the rows past them, plain. */
static inline __attribute__((always_inline)) void
ilk_matmul(int64_t whole, int64_t k, const uint8_t *w, size_t w_stride, int64_t nrows, const uint8_t *act,
           size_t act_stride, int64_t ncols, float *out, size_t out_stride, const int type)
{
    const int nb = (int)(k / GQ_QK_K);
    const int64_t groups = whole / GQ_IL16_ROWS;
    if (ncols <= ILK_FEW) {
        if (ncols > 0) ilk_cols(w, w_stride, groups, nb, act, act_stride, 0, ncols, out, out_stride, type);
    } else {
        /* a run of the columns times every group, run after run */
        const int64_t cr = il_column_run(nb, sizeof(struct gq_block_q8_k), ILK_FEW);
        for (int64_t c0 = 0; c0 < ncols; c0 += cr) {
            const int64_t end = ncols < c0 + cr ? ncols : c0 + cr;
            for (int64_t g = 0; g < groups; g++) {
                const uint8_t *wg = w + (size_t)g * GQ_IL16_ROWS * w_stride;
                float *og = out + (size_t)g * GQ_IL16_ROWS;
                int64_t c = c0;
                /* Q6_K: eight columns at a time while eight are left (Q4_K
                 * and Q5_K went no faster so: their products bind them) */
                if (type == KQ_Q6_K)
                    for (; end - c >= ILK_WIDE; c += ILK_WIDE)
                        ilk_columns_q6_k_wide(wg, w_stride, 1, nb, act, act_stride, c, og, out_stride);
                for (; c < end; c += ILK_FEW)
                    ilk_cols(wg, w_stride, 1, nb, act, act_stride, c, end - c < ILK_FEW ? end - c : ILK_FEW, og,
                             out_stride, type);
            }
        }
    }
    for (int64_t r = whole; r < nrows; r++)
        for (int64_t c = 0; c < ncols; c++)
            kq_tile512(nb, w + (size_t)r * w_stride, act + (size_t)c * act_stride, 0, 1,
                       out + (size_t)c * out_stride + r, 0, type);
}

void gq_matmul_il(uint32_t wtype, int64_t whole, int64_t k, const void *w, size_t w_stride, int64_t nrows,
                  const void *act, size_t act_stride, int64_t ncols, float *out, size_t out_stride)
{
    if (wtype == GGUF_T_Q4_K)
        ilk_matmul(whole, k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride, KQ_Q4_K);
    else if (wtype == GGUF_T_Q5_K)
        ilk_matmul(whole, k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride, KQ_Q5_K);
    else
        ilk_matmul(whole, k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride, KQ_Q6_K);
}
#endif

/* ------------------------------------------------------------------------ */
/* Q2_K, Q3_K: 16 groups of 16 weights                                        */

/* The 16 signed scales (-32..31) of a Q3_K block: low 4 bits from bytes
 * 0-7 (low nibbles for groups 0-7, high nibbles for 8-15), high 2 bits of
 * group g from byte 8 + g % 4 at bit 2 (g / 4). */
static inline __m128i q3k_scales(const uint8_t *scales)
{
    const __m128i low4 = _mm_set1_epi8(0x0f);
    const __m128i b = _mm_loadl_epi64((const __m128i *)scales);
    const __m128i lo = _mm_unpacklo_epi64(_mm_and_si128(b, low4), _mm_and_si128(_mm_srli_epi16(b, 4), low4));
    const __m128i hi = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32((int)load_u32(scales + 8)),
                                                    _mm_setr_epi32(0, 2, 4, 6)),
                                     _mm_set1_epi8(3));
    return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
}

/* The tile of k4_tile() for Q2_K (q3 = 0: w = d sc q - dmin m, q 0..3)
 * and Q3_K (q3 = 1: w = d sc (q - 4), q 0..7 with the third bit from
 * hmask; the -4 is taken out as 4 sc times the group sums of the
 * activations).  Elements 128 n + 32 j + l (l < 32) hold bits 2j, 2j+1 of
 * qs[32 n + l] (and for Q3_K bit 4n + j of hmask[l]); groups 8n + 2j and
 * 8n + 2j + 1, as Q6_K's, so its scale shuffle serves. */
static inline __attribute__((always_inline)) void
k16_tile(int nb, const uint8_t *row, const uint8_t *act, size_t act_stride, const int C,
         float *out, size_t out_stride, const int q3)
{
    const __m256i three = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    const size_t block_bytes = q3 ? sizeof(struct gq_block_q3_k) : sizeof(struct gq_block_q2_k);
    __m256 acc[MAX_TILE];
    UNROLL
    for (int c = 0; c < C; c++) acc[c] = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        const struct gq_block_q2_k *w2 = (const struct gq_block_q2_k *)(row + (size_t)i * block_bytes);
        const struct gq_block_q3_k *w3 = (const struct gq_block_q3_k *)w2;
        __m128i sc8; /* the 16 group scales as int8 */
        __m256i mn16 = _mm256_setzero_si256(), hm = _mm256_setzero_si256();
        if (q3) {
            sc8 = q3k_scales(w3->scales);
            hm = _mm256_loadu_si256((const __m256i *)w3->hmask);
        } else {
            const __m128i v = _mm_loadu_si128((const __m128i *)w2->scales);
            sc8 = _mm_and_si128(v, _mm_set1_epi8(0x0f));
            mn16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(0x0f)));
        }
        const uint8_t *qs = q3 ? w3->qs : w2->qs;
        __m256i isum[MAX_TILE][4];
        UNROLL
        for (int c = 0; c < C; c++) {
            for (int a = 0; a < NACC(C); a++) isum[c][a] = _mm256_setzero_si256();
        }
        UNROLL
        for (int n = 0; n < 2; n++) {
            const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(n ? _mm_srli_si128(sc8, 8) : sc8));
            const __m256i qv = _mm256_loadu_si256((const __m256i *)(qs + 32 * n));
            UNROLL
            for (int j = 0; j < 4; j++) {
                __m256i q = _mm256_and_si256(_mm256_srli_epi16(qv, 2 * j), three);
                if (q3)
                    q = _mm256_or_si256(q, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, 4 * n + j), one), 2));
                const __m256i sv = q6k_scales(sc16, j);
                UNROLL
                for (int c = 0; c < C; c++) {
                    const int8_t *y = act_block(act, act_stride, c, i)->qs + 128 * n + 32 * j;
                    __m256i *sa = &isum[c][j % NACC(C)];
                    *sa = madd_acc(*sa, _mm256_maddubs_epi16(q, _mm256_loadu_si256((const __m256i *)y)), sv);
                }
            }
        }
        const __m256i scall = _mm256_cvtepi8_epi16(sc8);
        const float d = _cvtsh_ss(q3 ? w3->d : w2->d), dmin = q3 ? 0.0f : _cvtsh_ss(w2->dmin);
        UNROLL
        for (int c = 0; c < C; c++) {
            for (int a = 1; a < NACC(C); a++) isum[c][0] = _mm256_add_epi32(isum[c][0], isum[c][a]);
            const struct gq_block_q8_k *a = act_block(act, act_stride, c, i);
            const __m256i bsums = _mm256_loadu_si256((const __m256i *)a->bsums);
            if (q3) {
                const __m256i t = _mm256_sub_epi32(isum[c][0], _mm256_slli_epi32(_mm256_madd_epi16(scall, bsums), 2));
                acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), _mm256_set1_ps(d * a->d), acc[c]);
            } else {
                acc[c] = acc_with_mins(acc[c], isum[c][0], bsums, mn16, d * a->d, dmin * a->d);
            }
        }
    }
    store_sums(out, out_stride, acc, C);
}

/* ------------------------------------------------------------------------ */
/* Q4_0, Q5_0, Q8_0 (Q8_0 activations), Q4_1, Q5_1 (Q8_1): 32-weight blocks */

/* The 32 weights of block i of a row of Q4_1 or Q5_1 as unsigned bytes q
 * (w = d q + m), its scale in *d and its offset in *m; those of Q4_0,
 * Q5_0 and Q8_0: quant/x86.h. */
static inline __m256i q4_1_weights(const uint8_t *row, int i, float *d, float *m)
{
    const struct gq_block_q4_1 *b = (const struct gq_block_q4_1 *)row + i;
    *d = _cvtsh_ss(b->d);
    *m = _cvtsh_ss(b->m);
    return unpack_nibbles32(b->qs);
}

static inline __m256i q5_1_weights(const uint8_t *row, int i, float *d, float *m)
{
    const struct gq_block_q5_1 *b = (const struct gq_block_q5_1 *)row + i;
    *d = _cvtsh_ss(b->d);
    *m = _cvtsh_ss(b->m);
    return _mm256_or_si256(unpack_nibbles32(b->qs),
                           _mm256_and_si256(bits_to_bytes(load_u32(b->qh)), _mm256_set1_epi8(0x10)));
}

/* 8 int32 lanes summing to the products of the unsigned bytes u (at most
 * 128) and the signed bytes v (-127..127). */
static inline __m256i dot_u8s8(__m256i u, __m256i v)
{
#ifdef __AVX512VNNI__
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, v);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, v), _mm256_set1_epi16(1));
#endif
}

/* The tile of k4_tile() for the 32-weight blocks with an offset, whose
 * weights WEIGHTS() gives: x times y plus the offset times the Q8_1
 * activations' s.  da[c * nb + i] and sa[c * nb + i] are the d and s of
 * activation block i of column c as floats, or, with da NULL, read from
 * the blocks themselves.
 *
 * Each column's sum is taken exactly as the dot kernels of dot-avx2.c
 * take it (the block's integer sums in 8 lanes, times d_w, then times d_a
 * and added in one fused multiply-add, lane by lane, block after block;
 * the offset terms in one float; the lanes added at the end), whatever
 * the number of columns: a product of one column, which gguf_matmul() gives to the dot
 * kernel, and each column of a wider one have the same bits.  So a
 * sequence decoded alone and the same sequence in a batch of many get the
 * same logits.  (Q4_0, Q5_0 and Q8_0: whole_rows8(), below.) */
static inline __attribute__((always_inline)) void
legacy_tile(__m256i (*weights)(const uint8_t *, int, float *, float *), int nb, const uint8_t *row,
            const uint8_t *act, size_t act_stride, const float *da, const float *sa, const int C, float *out,
            size_t out_stride)
{
    const size_t act_bytes = sizeof(struct gq_block_q8_1), qs_at = 4;
    __m256 acc[MAX_TILE];
    float msum[MAX_TILE];
    UNROLL
    for (int c = 0; c < C; c++) {
        acc[c] = _mm256_setzero_ps();
        msum[c] = 0.0f;
    }
    for (int i = 0; i < nb; i++) {
        float d, m;
        const __m256i x = weights(row, i, &d, &m);
        const __m256 dw = _mm256_set1_ps(d);
        UNROLL
        for (int c = 0; c < C; c++) {
            const uint8_t *a = act + (size_t)c * act_stride + (size_t)i * act_bytes;
            const __m256i y = _mm256_loadu_si256((const __m256i *)(a + qs_at));
            float dc, sc;
            if (da) {
                dc = da[(size_t)c * nb + i];
                sc = sa[(size_t)c * nb + i];
            } else {
                uint16_t h;
                memcpy(&h, a, 2);
                dc = _cvtsh_ss(h);
                memcpy(&h, a + 2, 2);
                sc = _cvtsh_ss(h);
            }
            const __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(dot_u8s8(x, y)), dw);
            acc[c] = _mm256_fmadd_ps(t, _mm256_set1_ps(dc), acc[c]);
            msum[c] += m * sc;
        }
    }
    UNROLL
    for (int c = 0; c < C; c++) out[(size_t)c * out_stride] = hsum_f32(acc[c]) + msum[c];
}

/* Most blocks in a row of a legacy product whose activation scales are
 * converted ahead (2 * MAX_TILE * LEGACY_MAX_NB floats on the stack);
 * longer rows read them from the blocks as they go. */
#define LEGACY_MAX_NB 512

/* gemm_NAME(): the gq_matmul_fn of legacy_tile() with WEIGHTS, rows
 * ROW_BLOCK at a time; for each block of rows and tile of columns the
 * activation scales are converted once (rows of up to LEGACY_MAX_NB
 * blocks), then every row of the block is multiplied. */
#define DEFINE_GEMM_LEGACY(NAME, WEIGHTS)                                                                 \
    static void NAME(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act,           \
                     size_t act_stride, int64_t ncols, float *out, size_t out_stride)                     \
    {                                                                                                     \
        const int nb = (int)(k / GQ_QK);                                                                  \
        const uint8_t *wb = w, *ab = act;                                                                 \
        float da_buf[MAX_TILE * LEGACY_MAX_NB], sa_buf[MAX_TILE * LEGACY_MAX_NB];                          \
        const float *da = nb <= LEGACY_MAX_NB ? da_buf : NULL, *sa = sa_buf;                              \
        for (int64_t r0 = 0; r0 < nrows; r0 += ROW_BLOCK) {                                               \
            const int64_t r1 = nrows - r0 < ROW_BLOCK ? nrows : r0 + ROW_BLOCK;                           \
            for (int64_t c0 = 0; c0 < ncols; c0 += MAX_TILE) {                                            \
                const int cn = ncols - c0 < MAX_TILE ? (int)(ncols - c0) : MAX_TILE;                      \
                const uint8_t *a = ab + (size_t)c0 * act_stride;                                          \
                for (int c = 0; da && c < cn; c++)                                                        \
                    for (int i = 0; i < nb; i++) {                                                        \
                        const uint8_t *blk = a + (size_t)c * act_stride + (size_t)i * sizeof(struct gq_block_q8_1); \
                        da_buf[c * nb + i] = _cvtsh_ss(load_u16(blk));                                    \
                        sa_buf[c * nb + i] = _cvtsh_ss(load_u16(blk + 2));                                \
                    }                                                                                     \
                for (int64_t r = r0; r < r1; r++) {                                                       \
                    const uint8_t *row = wb + (size_t)r * w_stride;                                       \
                    float *o = out + (size_t)c0 * out_stride + r;                                         \
                    if (!da) {                                                                            \
                        LEGACY_LOOP(WEIGHTS, NULL, NULL);                                                 \
                        continue;                                                                         \
                    }                                                                                     \
                    LEGACY_LOOP(WEIGHTS, da, sa);                                                         \
                }                                                                                         \
            }                                                                                             \
        }                                                                                                 \
    }

/* legacy_tile() of cn columns (1 .. MAX_TILE) with the scales DA, SA. */
#define LEGACY_LOOP(WEIGHTS, DA, SA)                                                                      \
    switch (cn) {                                                                                         \
    case 1: LEGACY_CALL(WEIGHTS, DA, SA, 1); break;                                                       \
    case 2: LEGACY_CALL(WEIGHTS, DA, SA, 2); break;                                                       \
    case 3: LEGACY_CALL(WEIGHTS, DA, SA, 3); break;                                                       \
    LEGACY_REST_CASES(WEIGHTS, DA, SA)                                                                    \
    default: LEGACY_CALL(WEIGHTS, DA, SA, MAX_TILE);                                                      \
    }

#define LEGACY_CALL(WEIGHTS, DA, SA, C) legacy_tile(WEIGHTS, nb, row, a, act_stride, DA, SA, C, o, out_stride)

#if MAX_TILE == 8
#define LEGACY_REST_CASES(WEIGHTS, DA, SA)                                                                \
    case 4: LEGACY_CALL(WEIGHTS, DA, SA, 4); break;                                                       \
    case 5: LEGACY_CALL(WEIGHTS, DA, SA, 5); break;                                                       \
    case 6: LEGACY_CALL(WEIGHTS, DA, SA, 6); break;                                                       \
    case 7: LEGACY_CALL(WEIGHTS, DA, SA, 7); break;
#else
#define LEGACY_REST_CASES(WEIGHTS, DA, SA)
#endif

/* The activations' part of the products of Q4_0, Q5_0 and Q8_0 on
 * interleaved rows (both levels), taken IL32_BLOCKS blocks at a time. */
#define IL32_BLOCKS 512

/* bias[i] = -o times the sum of the activations of block i0 + i, da[i]
 * their scale, for n blocks. */
static void il32_act(const struct gq_block_q8_0 *a, int64_t i0, int n, int log2_off, int32_t *bias, float *da)
{
    for (int i = 0; i < n; i++) {
        const struct gq_block_q8_0 *b = a + i0 + i;
        /* y + 128 as unsigned bytes, summed in four 64-bit lanes */
        const __m256i y = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)b->qs), _mm256_set1_epi8((char)0x80));
        const __m256i s4 = _mm256_sad_epu8(y, _mm256_setzero_si256());
        const __m128i s2 = _mm_add_epi64(_mm256_castsi256_si128(s4), _mm256_extracti128_si256(s4, 1));
        const int32_t sum = (int32_t)(_mm_cvtsi128_si64(s2) + _mm_extract_epi64(s2, 1)) - 32 * 128;
        bias[i] = -(int32_t)((uint32_t)sum << log2_off);
        da[i] = h2f(b->d);
    }
}

#ifdef __AVX512VNNI__
/* One-column products of Q4_0, Q5_0 and Q8_0 (the steps of tiles32.c).
 * The weights go in as unsigned bytes u = q + o (o = 8, 16, 128) and
 * vpdpbusd starts each lane from -o times the sum of its four
 * activations, so each lane holds the integer sum of x y over its four
 * elements. */

/* Rows r and r + 1, block i, as unsigned bytes (row r in the low half) and
 * their offset o. */
/* The 16 bytes of nibbles qa and qb as 64 bytes: qa's low nibbles, its
 * high ones, then qb's (elements 0-15, 16-31 of each block). */
static inline __m512i nibbles_pair(const uint8_t *qa, const uint8_t *qb)
{
    const __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)qa)),
                                              _mm_loadu_si128((const __m128i *)qb), 1);
    /* low nibbles of a, of b, high nibbles of a, of b; then a's, b's */
    const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1);
    return _mm512_and_si512(_mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0)), _mm512_set1_epi8(0x0f));
}

static inline __m512i legacy_pair_q4_0(const uint8_t *ra, const uint8_t *rb)
{
    return nibbles_pair(((const struct gq_block_q4_0 *)ra)->qs, ((const struct gq_block_q4_0 *)rb)->qs);
}

static inline __m512i legacy_pair_q5_0(const uint8_t *ra, const uint8_t *rb)
{
    const struct gq_block_q5_0 *a = (const struct gq_block_q5_0 *)ra, *b = (const struct gq_block_q5_0 *)rb;
    const __m512i nib = nibbles_pair(a->qs, b->qs);
    /* bit j of qh: 16 above element j */
    const __mmask64 high = (__mmask64)load_u32(a->qh) | (__mmask64)load_u32(b->qh) << 32;
    return _mm512_mask_add_epi8(nib, high, nib, _mm512_set1_epi8(16));
}

static inline __m512i legacy_pair_q8_0(const uint8_t *ra, const uint8_t *rb)
{
    const struct gq_block_q8_0 *a = (const struct gq_block_q8_0 *)ra, *b = (const struct gq_block_q8_0 *)rb;
    const __m512i x = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a->qs)),
                                         _mm256_loadu_si256((const __m256i *)b->qs), 1);
    return _mm512_xor_si512(x, _mm512_set1_epi8((char)0x80));
}

/* The avx512 and amx levels' one-column products of Q4_0, Q5_0 and Q8_0, with the
 * steps of its tile products (tiles32.c): per output, block after block,
 * the block's whole integer sum isum, t = (float)isum * d_w, then sum =
 * fma(t, d_a, sum).  Sixteen rows at a time, a row to a lane: vpdpbusd
 * gives two rows' block in 8 lanes each, and eight
 * such vectors fold into the sixteen block sums, in the lane order below;
 * the float steps then go down the lanes, one chain per row. */
static inline __attribute__((always_inline)) void
whole_rows16(__m512i (*pair)(const uint8_t *, const uint8_t *), const int log2_off, const size_t bb, int nb,
             const uint8_t *w0, size_t w_stride, int nr, const uint8_t *act, float *out)
{
    /* the folded sums have row 4m + q in lane 4q + m (and back) */
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const uint8_t *row[16];
    for (int r = 0; r < 16; r++) row[r] = w0 + (size_t)(r < nr ? r : nr - 1) * w_stride;
    /* the offsets of the rows' blocks in the lane order of the sums, for
     * gathering their scales d (one vector load rather than 16 scalar
     * ones), where they fit an int32 */
    const int gather = w_stride <= INT32_MAX / 15;
    int32_t off[16];
    for (int l = 0; l < 16; l++) off[l] = gather ? (int32_t)(row[(l & 3) * 4 + (l >> 2)] - w0) : 0;
    const __m512i offs = _mm512_loadu_si512(off);
    /* the rows that follow, whole groups of 16 ahead (see prefetch_start()) */
    const size_t group = 16 * w_stride;
    const char *pf = (const char *)w0 + (group >= PREFETCH_AHEAD ? group : (PREFETCH_AHEAD + group - 1) / group * group);
    __m512 acc = _mm512_setzero_ps();
    for (int i = 0; i < nb; i++) {
        _Pragma("GCC unroll 16")
        for (size_t o = 0; o < 16 * bb; o += 64) _mm_prefetch(pf + (size_t)i * 16 * bb + o, _MM_HINT_T0);
        const struct gq_block_q8_0 *a = (const struct gq_block_q8_0 *)act + i;
        const __m512i y = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)a->qs));
        const __m512i bias = offset_start(y, log2_off);
        const size_t at = (size_t)i * bb;
        __m512i v[8], z[4];
        UNROLL
        for (int j = 0; j < 8; j++) v[j] = _mm512_dpbusd_epi32(bias, pair(row[2 * j] + at, row[2 * j + 1] + at), y);
        /* z[k], 128-bit lane q: four partial sums of row 4k + q */
        UNROLL
        for (int k = 0; k < 4; k++)
            z[k] = _mm512_add_epi32(_mm512_shuffle_i32x4(v[2 * k], v[2 * k + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                                    _mm512_shuffle_i32x4(v[2 * k], v[2 * k + 1], _MM_SHUFFLE(3, 1, 3, 1)));
        const __m512i p01 = _mm512_add_epi32(_mm512_unpacklo_epi32(z[0], z[1]), _mm512_unpackhi_epi32(z[0], z[1]));
        const __m512i p23 = _mm512_add_epi32(_mm512_unpacklo_epi32(z[2], z[3]), _mm512_unpackhi_epi32(z[2], z[3]));
        const __m512i s = _mm512_add_epi32(_mm512_unpacklo_epi64(p01, p23), _mm512_unpackhi_epi64(p01, p23));
        __m256i dh16;
        if (gather) {
            /* d is a block's first two bytes; the words are read whole */
            const __m512i dh32 = _mm512_i32gather_epi32(offs, w0 + at, 1);
            dh16 = _mm512_cvtepi32_epi16(dh32);
        } else {
            uint16_t dh[16];
            for (int l = 0; l < 16; l++) dh[l] = load_u16(row[(l & 3) * 4 + (l >> 2)] + at);
            dh16 = _mm256_loadu_si256((const __m256i *)dh);
        }
        const __m512 dw = _mm512_cvtph_ps(dh16);
        const __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(s), dw);
        acc = _mm512_fmadd_ps(t, _mm512_set1_ps(h2f(a->d)), acc);
    }
    _mm512_mask_storeu_ps(out, (__mmask16)((1u << nr) - 1), _mm512_permutexvar_ps(order, acc));
}

#define DEFINE_COLUMN_WHOLE(NAME, PAIR, LOG2_OFF, BLOCK_TYPE)                                       \
    void gq_column_whole_##NAME(int64_t k, const void *w, size_t w_stride, int64_t nrows,           \
                                const void *act, size_t act_stride, int64_t ncols, float *out,     \
                                size_t out_stride)                                                 \
    {                                                                                              \
        (void)act_stride, (void)ncols, (void)out_stride;                                           \
        const uint8_t *wb = w;                                                                     \
        for (int64_t r = 0; r < nrows; r += 16)                                                    \
            whole_rows16(PAIR, LOG2_OFF, sizeof(BLOCK_TYPE), (int)(k / GQ_QK), wb + (size_t)r * w_stride, \
                         w_stride, nrows - r < 16 ? (int)(nrows - r) : 16, act, out + r);          \
    }
DEFINE_COLUMN_WHOLE(q4_0, legacy_pair_q4_0, 3, struct gq_block_q4_0)
DEFINE_COLUMN_WHOLE(q5_0, legacy_pair_q5_0, 4, struct gq_block_q5_0)
DEFINE_COLUMN_WHOLE(q8_0, legacy_pair_q8_0, 7, struct gq_block_q8_0)

/* Q4_0, Q5_0 and Q8_0 on interleaved rows (gq_il_chunk(), dot.h),
 * GQ_IL32_FEW columns at a time: a group's sixteen rows in the lanes of one
 * vector, each chunk's weights unpacked once for all the columns, eight
 * vpdpbusd a column, from -o times the sum of its block's activations
 * (taken for IL32_BLOCKS blocks at a time); then the float steps of
 * whole_rows16(), with the same integer sums, so the same bits. */
static inline __attribute__((always_inline)) void
il32_columns(const uint8_t *w, size_t w_stride, int64_t groups, int nb, const uint8_t *act, size_t act_stride,
             float *out, size_t out_stride, const int nc, const int type)
{
    const size_t bb = type == GGUF_T_Q4_0 ? sizeof(struct gq_block_q4_0)
                      : type == GGUF_T_Q5_0 ? sizeof(struct gq_block_q5_0)
                                            : sizeof(struct gq_block_q8_0);
    int32_t bias[GQ_IL32_FEW][IL32_BLOCKS];
    float da[GQ_IL32_FEW][IL32_BLOCKS];
    for (int i0 = 0; i0 < nb; i0 += IL32_BLOCKS) {
        const int n = nb - i0 < IL32_BLOCKS ? nb - i0 : IL32_BLOCKS;
        for (int c = 0; c < nc; c++)
            il32_act((const struct gq_block_q8_0 *)(act + (size_t)c * act_stride), i0, n, il32_log2_offset(type),
                     bias[c], da[c]);
        for (int64_t g = 0; g < groups; g++) {
            const uint8_t *ch = gq_il_chunk(w, w_stride, g, i0, bb);
            float *o = out + (size_t)g * GQ_IL16_ROWS;
            __m512 acc[GQ_IL32_FEW];
            for (int c = 0; c < nc; c++)
                acc[c] = i0 ? _mm512_loadu_ps(o + (size_t)c * out_stride) : _mm512_setzero_ps();
            for (int i = 0; i < n; i++, ch += GQ_IL16_ROWS * bb) {
                __m512i v[8];
                il32_weights(ch, v, type);
                const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)ch));
                for (int c = 0; c < nc; c++) {
                    const uint8_t *y = (const uint8_t *)((const struct gq_block_q8_0 *)(act + (size_t)c * act_stride) + i0 + i)->qs;
                    __m512i sum = _mm512_set1_epi32(bias[c][i]);
                    UNROLL
                    for (int t = 0; t < 8; t++)
                        sum = _mm512_dpbusd_epi32(sum, v[t], _mm512_set1_epi32((int)load_u32(y + 4 * t)));
                    const __m512 tt = _mm512_mul_ps(_mm512_cvtepi32_ps(sum), dw);
                    acc[c] = _mm512_fmadd_ps(tt, _mm512_set1_ps(da[c][i]), acc[c]);
                }
            }
            for (int c = 0; c < nc; c++) _mm512_storeu_ps(o + (size_t)c * out_stride, acc[c]);
        }
    }
}

/* Products of more columns take runs of IL32_GROUPS groups (about 150
 * KiB of Q5_0 rows 896 long, in the L2 cache after the first pass) times
 * GQ_IL32_FEW columns after GQ_IL32_FEW (1 thread, 896 x 896 in cache,
 * 16 and 64 columns: Q5_0 at 0.95 times, Q8_0 at 1.13 times the speed of
 * tiles32.c on plain rows; tiles32.c on interleaved rows, unpacked with
 * transposes, went at 0.7 times). */
#define IL32_GROUPS 16

static inline __attribute__((always_inline)) void
il32_cols(const uint8_t *w, size_t w_stride, int64_t groups, int nb, const uint8_t *act, size_t act_stride,
          int64_t nc, float *out, size_t out_stride, const int type)
{
    switch (nc) {
    case 1: il32_columns(w, w_stride, groups, nb, act, act_stride, out, out_stride, 1, type); break;
    case 2: il32_columns(w, w_stride, groups, nb, act, act_stride, out, out_stride, 2, type); break;
    case 3: il32_columns(w, w_stride, groups, nb, act, act_stride, out, out_stride, 3, type); break;
    default: il32_columns(w, w_stride, groups, nb, act, act_stride, out, out_stride, 4, type); break;
    }
}

static inline __attribute__((always_inline)) void
il32_type(int64_t whole, int64_t k, const uint8_t *w, size_t w_stride, int64_t nrows, const uint8_t *act,
          size_t act_stride, int64_t ncols, float *out, size_t out_stride, const int type, gq_matmul_fn plain)
{
    const int nb = (int)(k / GQ_QK);
    const int64_t groups = whole / GQ_IL16_ROWS;
    if (ncols <= GQ_IL32_FEW) {
        if (ncols > 0) il32_cols(w, w_stride, groups, nb, act, act_stride, ncols, out, out_stride, type);
    } else {
        /* a run of the columns times every group, run after run */
        const int64_t cr = il_column_run(nb, sizeof(struct gq_block_q8_0), GQ_IL32_FEW);
        for (int64_t c0 = 0; c0 < ncols; c0 += cr)
            for (int64_t g = 0; g < groups; g += IL32_GROUPS)
                for (int64_t c = c0; c < ncols && c < c0 + cr; c += GQ_IL32_FEW)
                    il32_cols(w + (size_t)g * GQ_IL16_ROWS * w_stride, w_stride,
                              groups - g < IL32_GROUPS ? groups - g : IL32_GROUPS, nb,
                              act + (size_t)c * act_stride, act_stride, ncols - c < GQ_IL32_FEW ? ncols - c : GQ_IL32_FEW,
                              out + (size_t)c * out_stride + (size_t)g * GQ_IL16_ROWS, out_stride, type);
    }
    /* the rows past the last group, plain */
    for (int64_t c = 0; c < ncols && whole < nrows; c++)
        plain(k, w + (size_t)whole * w_stride, w_stride, nrows - whole, act + (size_t)c * act_stride, act_stride, 1,
              out + (size_t)c * out_stride + whole, out_stride);
}

void gq_columns_il32(uint32_t wtype, int64_t whole, int64_t k, const void *w, size_t w_stride, int64_t nrows,
                     const void *act, size_t act_stride, int64_t ncols, float *out, size_t out_stride)
{
    _Static_assert(GQ_IL32_FEW == 4, "il32_cols() takes 1 .. 4 columns");
    if (wtype == GGUF_T_Q4_0)
        il32_type(whole, k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride, GGUF_T_Q4_0,
                  gq_column_whole_q4_0);
    else if (wtype == GGUF_T_Q5_0)
        il32_type(whole, k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride, GGUF_T_Q5_0,
                  gq_column_whole_q5_0);
    else
        il32_type(whole, k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride, GGUF_T_Q8_0,
                  gq_column_whole_q8_0);
}
#endif


/* ------------------------------------------------------------------------ */
/* Tiling                                                                    */

/* The remainders of 4 to MAX_TILE - 1 columns. */
#if MAX_TILE == 8
#define REST_CASES(TILE, VARIANT)                                                              \
    case 4: TILE(nb, row, a, act_stride, 4, o, out_stride, VARIANT); break;                             \
    case 5: TILE(nb, row, a, act_stride, 5, o, out_stride, VARIANT); break;                             \
    case 6: TILE(nb, row, a, act_stride, 6, o, out_stride, VARIANT); break;                             \
    case 7: TILE(nb, row, a, act_stride, 7, o, out_stride, VARIANT); break;
#else
#define REST_CASES(TILE, VARIANT)
#endif

/* gemm_NAME(): the gq_matmul_fn of a tile function TILE (its last argument
 * VARIANT) over blocks of QK weights, columns MAX_TILE at a time, then
 * the rest. */
#define DEFINE_GEMM(NAME, TILE, VARIANT, QK) DEFINE_GEMM_WIDE(NAME, TILE, VARIANT, QK, NULL)

/* The same, giving products of at least GQ_PANEL_MIN columns to WIDE where
 * that is not NULL. */
#define DEFINE_GEMM_WIDE(NAME, TILE, VARIANT, QK, WIDE)                                            \
    static void NAME(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act, \
                     size_t act_stride, int64_t ncols, float *out, size_t out_stride)           \
    {                                                                                           \
        const gq_matmul_fn wide = (WIDE);                                                       \
        if (wide && ncols >= GQ_PANEL_MIN) {                                                       \
            wide(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);               \
            return;                                                                             \
        }                                                                                       \
        const int nb = (int)(k / (QK));                                                         \
        const uint8_t *wb = w, *ab = act;                                                       \
        for (int64_t r0 = 0; r0 < nrows; r0 += ROW_BLOCK) {                                     \
            const int64_t r1 = nrows - r0 < ROW_BLOCK ? nrows : r0 + ROW_BLOCK;                 \
            int64_t c = 0;                                                                      \
            for (; c + MAX_TILE <= ncols; c += MAX_TILE)                                        \
                for (int64_t r = r0; r < r1; r++)                                               \
                    TILE(nb, wb + (size_t)r * w_stride,                                         \
                         ab + (size_t)c * act_stride, act_stride, MAX_TILE,                     \
                         out + (size_t)c * out_stride + r, out_stride, VARIANT);                \
            const int rest = (int)(ncols - c);                                                  \
            for (int64_t r = r0; r < r1 && rest; r++) {                                         \
                const uint8_t *row = wb + (size_t)r * w_stride;                                 \
                const uint8_t *a = ab + (size_t)c * act_stride;                                 \
                float *o = out + (size_t)c * out_stride + r;                                    \
                switch (rest) {                                                                 \
                case 1: TILE(nb, row, a, act_stride, 1, o, out_stride, VARIANT); break;                  \
                case 2: TILE(nb, row, a, act_stride, 2, o, out_stride, VARIANT); break;                  \
                case 3: TILE(nb, row, a, act_stride, 3, o, out_stride, VARIANT); break;                  \
                REST_CASES(TILE, VARIANT)                                                       \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    }

DEFINE_GEMM(gemm_q2_k, k16_tile, 0, GQ_QK_K)
DEFINE_GEMM(gemm_q3_k, k16_tile, 1, GQ_QK_K)
#ifdef __AVX512VNNI__
DEFINE_GEMM_WIDE(gemm_q4_k, kq_tile512, KQ_Q4_K, GQ_QK_K, gq_panel_q4_k)
DEFINE_GEMM_WIDE(gemm_q5_k, kq_tile512, KQ_Q5_K, GQ_QK_K, gq_panel_q5_k)
DEFINE_GEMM_WIDE(gemm_q6_k, kq_tile512, KQ_Q6_K, GQ_QK_K, gq_panel_q6_k)
#else
DEFINE_GEMM(gemm_q4_k, k4_tile, 0, GQ_QK_K)
DEFINE_GEMM(gemm_q5_k, k4_tile, 1, GQ_QK_K)
DEFINE_GEMM(gemm_q6_k, q6k_tile, 0, GQ_QK_K)
#endif
#ifndef __AVX512VNNI__
/* Products of Q4_0, Q5_0 and Q8_0 on plain rows, eight rows at a time, a
 * row to a lane, times C columns: each row's block unpacked once, then for
 * each column the row's block sum in 8 lanes (dot_i8()), the eight rows'
 * vectors folded by vphaddd into their block sums, and the float steps
 * of legacy_block_step() lane by lane: the bits of the dot kernels, with
 * one float step for eight rows.  The next eight rows' blocks are
 * prefetched as these are taken (one thread, one column from memory, Q5_0:
 * 41 -> 57 % of a read, Q8_0 78 -> 100 %). */
static inline __attribute__((always_inline)) void
whole_rows8(__m256i (*weights)(const uint8_t *, int, float *, float *), int nb, const uint8_t *w0, size_t w_stride,
            int nr, const uint8_t *act, size_t act_stride, const int C, float *out, size_t out_stride)
{
    const uint8_t *row[8];
    for (int r = 0; r < 8; r++) row[r] = w0 + (size_t)(r < nr ? r : nr - 1) * w_stride;
    const size_t bb = weights == q4_0_weights ? sizeof(struct gq_block_q4_0)
                      : weights == q5_0_weights ? sizeof(struct gq_block_q5_0)
                                                : sizeof(struct gq_block_q8_0);
    __m256 acc[MAX_TILE];
    UNROLL
    for (int c = 0; c < C; c++) acc[c] = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        __m256i x[8], ax[8];
        uint16_t dh[8];
        UNROLL
        for (int r = 0; r < 8; r++) {
            float d, m;
            _mm_prefetch((const char *)(row[r] + 8 * w_stride + (size_t)i * bb), _MM_HINT_T0);
            x[r] = weights(row[r], i, &d, &m);
            ax[r] = _mm256_sign_epi8(x[r], x[r]);
            dh[r] = load_u16(row[r] + (size_t)i * bb); /* d, a block's first two bytes */
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)dh));
        UNROLL
        for (int c = 0; c < C; c++) {
            const struct gq_block_q8_0 *a = (const struct gq_block_q8_0 *)(act + (size_t)c * act_stride) + i;
            const __m256i y = _mm256_loadu_si256((const __m256i *)a->qs);
            __m256i v[8];
            UNROLL
            for (int r = 0; r < 8; r++)
                v[r] = _mm256_madd_epi16(_mm256_maddubs_epi16(ax[r], _mm256_sign_epi8(y, x[r])), _mm256_set1_epi16(1));
            /* rows 0-3 and 4-7, each 128-bit half holding half of each row's lanes */
            const __m256i h0 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
            const __m256i h1 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
            const __m256i s = _mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20),
                                               _mm256_permute2x128_si256(h0, h1, 0x31));
            const __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(s), dw);
            acc[c] = _mm256_fmadd_ps(t, _mm256_set1_ps(h2f(a->d)), acc[c]);
        }
    }
    UNROLL
    for (int c = 0; c < C; c++) {
        float o[8];
        _mm256_storeu_ps(o, acc[c]);
        memcpy(out + (size_t)c * out_stride, o, sizeof(float) * (size_t)nr);
    }
}

/* column_NAME(): one column, eight rows at a time; gemm_NAME(): ROW_BLOCK
 * rows times MAX_TILE columns at a time, then the rest. */
#define DEFINE_WHOLE8(NAME, WEIGHTS)                                                                                \
    static void column_##NAME(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act,           \
                              size_t act_stride, int64_t ncols, float *out, size_t out_stride)                     \
    {                                                                                                             \
        (void)ncols;                                                                                              \
        const uint8_t *wb = w;                                                                                    \
        for (int64_t r = 0; r < nrows; r += 8)                                                                    \
            whole_rows8(WEIGHTS, (int)(k / GQ_QK), wb + (size_t)r * w_stride, w_stride,                           \
                        nrows - r < 8 ? (int)(nrows - r) : 8, act, act_stride, 1, out + r, out_stride);           \
    }                                                                                                             \
    static void gemm_##NAME(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act,             \
                            size_t act_stride, int64_t ncols, float *out, size_t out_stride)                       \
    {                                                                                                             \
        const uint8_t *wb = w, *ab = act;                                                                         \
        const int nb = (int)(k / GQ_QK);                                                                          \
        for (int64_t r0 = 0; r0 < nrows; r0 += ROW_BLOCK)                                                         \
            for (int64_t c = 0; c < ncols; c += MAX_TILE)                                                         \
                for (int64_t r = r0; r < nrows && r < r0 + ROW_BLOCK; r += 8) {                                   \
                    const int nr = nrows - r < 8 ? (int)(nrows - r) : 8;                                          \
                    const uint8_t *a = ab + (size_t)c * act_stride;                                               \
                    float *o = out + (size_t)c * out_stride + r;                                                  \
                    switch (ncols - c < MAX_TILE ? (int)(ncols - c) : MAX_TILE) {                                 \
                    case 1: whole_rows8(WEIGHTS, nb, wb + (size_t)r * w_stride, w_stride, nr, a, act_stride, 1, o, out_stride); break; \
                    case 2: whole_rows8(WEIGHTS, nb, wb + (size_t)r * w_stride, w_stride, nr, a, act_stride, 2, o, out_stride); break; \
                    case 3: whole_rows8(WEIGHTS, nb, wb + (size_t)r * w_stride, w_stride, nr, a, act_stride, 3, o, out_stride); break; \
                    default: whole_rows8(WEIGHTS, nb, wb + (size_t)r * w_stride, w_stride, nr, a, act_stride, MAX_TILE, o, out_stride); \
                    }                                                                                             \
                }                                                                                                 \
    }
DEFINE_WHOLE8(q4_0, q4_0_weights)
DEFINE_WHOLE8(q5_0, q5_0_weights)
DEFINE_WHOLE8(q8_0, q8_0_weights)
#endif
DEFINE_GEMM_LEGACY(gemm_q4_1, q4_1_weights)
DEFINE_GEMM_LEGACY(gemm_q5_1, q5_1_weights)

#ifndef __AVX512VNNI__
/* ------------------------------------------------------------------------ */
/* Q4_0, Q5_0 and Q8_0 on interleaved rows (gq_il32_type(), dot.h), AVX2    */

/* The chunks of the VNNI level, a half (rows 8h .. 8h + 7, the first or
 * last 32 bytes of each 64-byte vector) at a time, a row to a 32-bit
 * lane: quad t of the weights times four activations broadcast is
 * vpmaddubsw.  Q4_0 and Q5_0 go in as unsigned bytes q + o (o = 8, 16),
 * their eight (Q4_0) or four (Q5_0) pair sums added in int16 (at most 8 x
 * 2 x 15 x 128, 4 x 2 x 31 x 128: below 2^15), then vpmaddwd by ones and
 * -o times the activations' sum (il32_act()); Q8_0 as |q| times the
 * activations with q's sign (dot_i8(), x86.h), a vpmaddwd each.  Each lane
 * then holds a row's whole block sum, and the float steps are those of
 * legacy_block_step(), lane by lane: the bits of the plain rows' products
 * (and of the VNNI level's). */

#define IL2_FEW 4                 /* columns a pass over the chunks takes */
#define IL2_ACT_BYTES (256 << 10) /* inputs taken at a time by products of more (the L2 cache) */
#define IL2L_GROUPS 16            /* groups a pass of more than IL2_FEW columns takes */

/* Quad t (bytes 4t .. 4t + 3) of the 32 activations y in every lane. */
static inline __m256i il2l_quad(const uint8_t *y, int t)
{
    return _mm256_set1_epi32((int)load_u32(y + 4 * t));
}

/* Half h of a chunk c's weights: u[t] lane r = elements 4t .. 4t + 3 of
 * row 8h + r, as q + o (Q4_0, Q5_0) or as q (Q8_0). */
static inline __attribute__((always_inline)) void il2l_weights(const uint8_t *c, int h, __m256i u[8], const int type)
{
    if (type == GGUF_T_Q8_0) {
        UNROLL
        for (int t = 0; t < 8; t++)
            u[t] = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(c + 32 + 64 * t + 32 * h)),
                                    _mm256_set1_epi8((char)0x80));
        return;
    }
    const uint8_t *q = c + (type == GGUF_T_Q5_0 ? 96 : 32) + 32 * h;
    const __m256i low = _mm256_set1_epi8(0x0f);
    UNROLL
    for (int j = 0; j < 4; j++) {
        const __m256i x = _mm256_loadu_si256((const __m256i *)(q + 64 * j));
        u[j] = _mm256_and_si256(x, low);
        u[j + 4] = _mm256_and_si256(_mm256_srli_epi16(x, 4), low);
    }
    if (type != GGUF_T_Q5_0) return;
    /* mask t's 32 bits of this half (bit b: the fifth bit of byte b of
     * u[t]), byte b >> 3 spread to byte b, then its bit b & 7 */
    const __m256i spread = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    UNROLL
    for (int t = 0; t < 8; t++) {
        const __m256i m = _mm256_shuffle_epi8(_mm256_set1_epi32((int)load_u32(c + 32 + 8 * t + 4 * h)), spread);
        const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(m, bit), bit);
        u[t] = _mm256_or_si256(u[t], _mm256_and_si256(set, _mm256_set1_epi8(16)));
    }
}

/* The eight rows' block sums of u (il2l_weights()) with the activations y;
 * bias: -o times their sum (Q4_0, Q5_0). */
static inline __attribute__((always_inline)) __m256i il2l_sums(const __m256i u[8], const uint8_t *y, int32_t bias,
                                                               const int type)
{
    const __m256i ones = _mm256_set1_epi16(1);
    if (type == GGUF_T_Q8_0) {
        __m256i s = _mm256_setzero_si256();
        UNROLL
        for (int t = 0; t < 8; t++) s = _mm256_add_epi32(s, dot_i8(u[t], il2l_quad(y, t)));
        return s;
    }
    __m256i p[2];
    UNROLL
    for (int k = 0; k < 2; k++) {
        p[k] = _mm256_maddubs_epi16(u[4 * k], il2l_quad(y, 4 * k));
        UNROLL
        for (int t = 4 * k + 1; t < 4 * k + 4; t++) p[k] = _mm256_add_epi16(p[k], _mm256_maddubs_epi16(u[t], il2l_quad(y, t)));
    }
    if (type == GGUF_T_Q4_0)
        return _mm256_add_epi32(_mm256_madd_epi16(_mm256_add_epi16(p[0], p[1]), ones), _mm256_set1_epi32(bias));
    return _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(p[0], ones), _mm256_madd_epi16(p[1], ones)),
                            _mm256_set1_epi32(bias));
}

/* acc plus the eight rows' block sums of u (il2l_weights()) with the
 * activations' block a, bias and da its il32_act() values, times the rows'
 * scales dw and da: a block's float steps, lane by lane. */
static inline __attribute__((always_inline)) __m256 il2l_step(__m256 acc, const __m256i u[8], __m256 dw,
                                                              const struct gq_block_q8_0 *a, int32_t bias, float da,
                                                              const int type)
{
    const __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(il2l_sums(u, (const uint8_t *)a->qs, bias, type)), dw);
    return _mm256_fmadd_ps(t, _mm256_set1_ps(da), acc);
}

/* Rows 0 .. 16 * groups - 1 (interleaved) times nc <= IL2_FEW columns, the
 * blocks IL32_BLOCKS at a time (il32_act() of each column), the chunks
 * read in order with their bytes IL2_AHEAD further on prefetched, up to
 * the end of these rows; each half's weights unpacked once for all the
 * columns. */
static inline __attribute__((always_inline)) void
il2l_columns(const uint8_t *w, size_t w_stride, int64_t groups, int nb, const uint8_t *act, size_t act_stride,
             float *out, size_t out_stride, const int nc, const int type)
{
    const size_t bb = type == GGUF_T_Q4_0 ? sizeof(struct gq_block_q4_0)
                      : type == GGUF_T_Q5_0 ? sizeof(struct gq_block_q5_0)
                                            : sizeof(struct gq_block_q8_0);
    const uint8_t *end = w + (size_t)groups * GQ_IL16_ROWS * w_stride;
    int32_t bias[IL2_FEW][IL32_BLOCKS];
    float da[IL2_FEW][IL32_BLOCKS];
    for (int i0 = 0; i0 < nb; i0 += IL32_BLOCKS) {
        const int n = nb - i0 < IL32_BLOCKS ? nb - i0 : IL32_BLOCKS;
        for (int k = 0; k < nc; k++)
            il32_act((const struct gq_block_q8_0 *)(act + (size_t)k * act_stride), i0, n, il32_log2_offset(type),
                     bias[k], da[k]);
        for (int64_t g = 0; g < groups; g++) {
            const uint8_t *c = gq_il_chunk(w, w_stride, g, i0, bb);
            float *o = out + (size_t)g * GQ_IL16_ROWS;
            __m256 acc[2][IL2_FEW];
            UNROLL
            for (int k = 0; k < nc; k++)
                for (int h = 0; h < 2; h++)
                    acc[h][k] = i0 ? _mm256_loadu_ps(o + (size_t)k * out_stride + 8 * h) : _mm256_setzero_ps();
            for (int i = 0; i < n; i++, c += GQ_IL16_ROWS * bb) {
                const uint8_t *pf = c + IL2_AHEAD, *pf_end = pf + GQ_IL16_ROWS * bb < end ? pf + GQ_IL16_ROWS * bb : end;
                for (; pf < pf_end; pf += 64) _mm_prefetch((const char *)pf, _MM_HINT_T0);
                UNROLL
                for (int h = 0; h < 2; h++) {
                    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(c + 16 * h)));
                    __m256i u[8];
                    il2l_weights(c, h, u, type);
                    UNROLL
                    for (int k = 0; k < nc; k++) {
                        const struct gq_block_q8_0 *a = (const struct gq_block_q8_0 *)(act + (size_t)k * act_stride) + i0 + i;
                        acc[h][k] = il2l_step(acc[h][k], u, dw, a, bias[k][i], da[k][i], type);
                    }
                }
            }
            UNROLL
            for (int k = 0; k < nc; k++)
                for (int h = 0; h < 2; h++) _mm256_storeu_ps(o + (size_t)k * out_stride + 8 * h, acc[h][k]);
        }
    }
}

static inline __attribute__((always_inline)) void
il2l_cols(const uint8_t *w, size_t w_stride, int64_t groups, int nb, const uint8_t *act, size_t act_stride,
          int64_t nc, float *out, size_t out_stride, const int type)
{
    switch (nc) {
    case 1: il2l_columns(w, w_stride, groups, nb, act, act_stride, out, out_stride, 1, type); break;
    case 2: il2l_columns(w, w_stride, groups, nb, act, act_stride, out, out_stride, 2, type); break;
    case 3: il2l_columns(w, w_stride, groups, nb, act, act_stride, out, out_stride, 3, type); break;
    default: il2l_columns(w, w_stride, groups, nb, act, act_stride, out, out_stride, 4, type); break;
    }
}

/* Products of more columns unpack a group's chunks once for all of them:
 * IL2W_RUN blocks of its weights at a time, as il2l_weights() gives them,
 * beside their scales in float (struct il2w_block); then IL2_FEW columns
 * after IL2_FEW columns take the same steps as il2l_columns() on them,
 * with every column's bias and scale (il32_act()) made once for all the
 * groups.  il2l_columns() unpacks each chunk again for every IL2_FEW
 * columns, which costs Q5_0 about as much as the products themselves. */
#define IL2W_RUN 32
#define IL2W_ACT 4096 /* blocks of input at a time (bias and da: 32 KiB) */

struct il2w_block {
    __m256i u[2][8]; /* half h, quad t: il2l_weights() */
    __m256 dw[2];    /* half h: the scales of rows 8h .. 8h + 7 */
};

/* A group's sixteen rows (its chunks of blocks i0 .. i0 + n - 1 unpacked
 * in ub) times nc <= IL2_FEW columns of act (act_stride apart), whose
 * il32_act() bias and da are at bias and da (nb blocks a column), added
 * to the rows' sums in out (first, i0 = 0: from zero). */
static inline __attribute__((always_inline)) void
il2w_columns(const struct il2w_block *ub, int i0, int n, int nb, const uint8_t *act, size_t act_stride,
             const int32_t *bias, const float *da, float *out, size_t out_stride, const int nc, const int type)
{
    UNROLL
    for (int h = 0; h < 2; h++) {
        __m256 acc[IL2_FEW];
        UNROLL
        for (int k = 0; k < nc; k++)
            acc[k] = i0 ? _mm256_loadu_ps(out + (size_t)k * out_stride + 8 * h) : _mm256_setzero_ps();
        for (int i = 0; i < n; i++) {
            const struct il2w_block *b = ub + i;
            UNROLL
            for (int k = 0; k < nc; k++) {
                const struct gq_block_q8_0 *a = (const struct gq_block_q8_0 *)(act + (size_t)k * act_stride) + i0 + i;
                const size_t at = (size_t)k * nb + i0 + i;
                acc[k] = il2l_step(acc[k], b->u[h], b->dw[h], a, bias[at], da[at], type);
            }
        }
        UNROLL
        for (int k = 0; k < nc; k++) _mm256_storeu_ps(out + (size_t)k * out_stride + 8 * h, acc[k]);
    }
}

/* Each width compiled on its own, with the type as an argument (chosen
 * by il2w_type() for the columns left). */
#define IL2W_COLUMNS_FN(NAME, NC)                                                                              \
    static __attribute__((noinline)) void NAME(const struct il2w_block *ub, int i0, int n, int nb,            \
                                               const uint8_t *act, size_t act_stride, const int32_t *bias,     \
                                               const float *da, float *out, size_t out_stride, int type)       \
    {                                                                                                        \
        if (type == GGUF_T_Q4_0)                                                                             \
            il2w_columns(ub, i0, n, nb, act, act_stride, bias, da, out, out_stride, NC, GGUF_T_Q4_0);         \
        else if (type == GGUF_T_Q5_0)                                                                        \
            il2w_columns(ub, i0, n, nb, act, act_stride, bias, da, out, out_stride, NC, GGUF_T_Q5_0);         \
        else                                                                                                 \
            il2w_columns(ub, i0, n, nb, act, act_stride, bias, da, out, out_stride, NC, GGUF_T_Q8_0);         \
    }
IL2W_COLUMNS_FN(il2w_columns1, 1)
IL2W_COLUMNS_FN(il2w_columns2, 2)
IL2W_COLUMNS_FN(il2w_columns3, 3)
IL2W_COLUMNS_FN(il2w_columns4, 4)

/* Rows 0 .. 16 * groups - 1 (interleaved) times ncols > IL2_FEW columns,
 * in runs of at most IL2W_ACT blocks of input (136 KiB, in the L2 cache
 * while every group takes them), a multiple of IL2_FEW columns (at least
 * one: nb <= IL2W_ACT / IL2_FEW, checked by the caller). */
static void il2w_type(const uint8_t *w, size_t w_stride, int64_t groups, int nb, const uint8_t *act,
                      size_t act_stride, int64_t ncols, float *out, size_t out_stride, const int type)
{
    typedef void (*cols_fn)(const struct il2w_block *, int, int, int, const uint8_t *, size_t, const int32_t *,
                            const float *, float *, size_t, int);
    static const cols_fn cols[IL2_FEW + 1] = {NULL, il2w_columns1, il2w_columns2, il2w_columns3, il2w_columns4};
    const size_t bb = type == GGUF_T_Q4_0 ? sizeof(struct gq_block_q4_0)
                      : type == GGUF_T_Q5_0 ? sizeof(struct gq_block_q5_0)
                                            : sizeof(struct gq_block_q8_0);
    const int64_t cr = IL2W_ACT / nb / IL2_FEW * IL2_FEW;
    int32_t bias[IL2W_ACT];
    float da[IL2W_ACT];
    struct il2w_block ub[IL2W_RUN];
    for (int64_t c0 = 0; c0 < ncols; c0 += cr) {
        const int64_t nc = ncols - c0 < cr ? ncols - c0 : cr;
        for (int64_t c = 0; c < nc; c++)
            il32_act((const struct gq_block_q8_0 *)(act + (size_t)(c0 + c) * act_stride), 0, nb,
                     il32_log2_offset(type), bias + c * nb, da + c * nb);
        for (int64_t g = 0; g < groups; g++)
            for (int i0 = 0; i0 < nb; i0 += IL2W_RUN) {
                const int n = nb - i0 < IL2W_RUN ? nb - i0 : IL2W_RUN;
                for (int i = 0; i < n; i++) {
                    const uint8_t *ch = gq_il_chunk(w, w_stride, g, i0 + i, bb);
                    for (int h = 0; h < 2; h++) {
                        il2l_weights(ch, h, ub[i].u[h], type);
                        ub[i].dw[h] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(ch + 16 * h)));
                    }
                }
                for (int64_t c = 0; c < nc; c += IL2_FEW)
                    cols[nc - c < IL2_FEW ? nc - c : IL2_FEW](
                        ub, i0, n, nb, act + (size_t)(c0 + c) * act_stride, act_stride, bias + c * nb, da + c * nb,
                        out + (size_t)(c0 + c) * out_stride + (size_t)g * GQ_IL16_ROWS, out_stride, type);
            }
    }
}

/* The product of one type: the groups below whole, IL2_FEW columns a pass
 * over them; of more columns, il2w_type(), or where four columns' input
 * passes IL2W_ACT blocks, runs of IL2L_GROUPS groups (in the cache after the
 * first pass) times a run of the columns whose input fits it; then the
 * rows past the groups, plain (gemm_*(), or column_*() for one column:
 * the same bits). */
static inline __attribute__((always_inline)) void
il2l_type(int64_t whole, int64_t k, const uint8_t *w, size_t w_stride, int64_t nrows, const uint8_t *act,
          size_t act_stride, int64_t ncols, float *out, size_t out_stride, const int type, gq_matmul_fn plain,
          gq_matmul_fn column)
{
    const int nb = (int)(k / GQ_QK);
    const int64_t groups = whole / GQ_IL16_ROWS;
    if (ncols <= IL2_FEW) {
        if (ncols > 0) il2l_cols(w, w_stride, groups, nb, act, act_stride, ncols, out, out_stride, type);
    } else if (nb <= IL2W_ACT / IL2_FEW) {
        il2w_type(w, w_stride, groups, nb, act, act_stride, ncols, out, out_stride, type);
    } else {
        const int64_t run = IL2_ACT_BYTES / ((int64_t)nb * (int64_t)sizeof(struct gq_block_q8_0)) / IL2_FEW * IL2_FEW;
        const int64_t cr = run > IL2_FEW ? run : IL2_FEW;
        for (int64_t c0 = 0; c0 < ncols; c0 += cr)
            for (int64_t g = 0; g < groups; g += IL2L_GROUPS)
                for (int64_t c = c0; c < ncols && c < c0 + cr; c += IL2_FEW)
                    il2l_cols(w + (size_t)g * GQ_IL16_ROWS * w_stride, w_stride,
                              groups - g < IL2L_GROUPS ? groups - g : IL2L_GROUPS, nb, act + (size_t)c * act_stride,
                              act_stride, ncols - c < IL2_FEW ? ncols - c : IL2_FEW,
                              out + (size_t)c * out_stride + (size_t)g * GQ_IL16_ROWS, out_stride, type);
    }
    if (whole < nrows)
        (ncols == 1 ? column : plain)(k, w + (size_t)whole * w_stride, w_stride, nrows - whole, act, act_stride, ncols,
                                      out + whole, out_stride);
}

void gq_matmul_il_avx2(uint32_t wtype, int64_t whole, int64_t k, const void *w, size_t w_stride, int64_t nrows,
                       const void *act, size_t act_stride, int64_t ncols, float *out, size_t out_stride)
{
    if (wtype == GGUF_T_Q4_K)
        il2_k(whole, k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride, GGUF_T_Q4_K);
    else if (wtype == GGUF_T_Q5_K)
        il2_k(whole, k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride, GGUF_T_Q5_K);
    else if (wtype == GGUF_T_Q6_K)
        il2_k(whole, k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride, GGUF_T_Q6_K);
    else if (wtype == GGUF_T_Q4_0)
        il2l_type(whole, k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride, GGUF_T_Q4_0, gemm_q4_0,
                  column_q4_0);
    else if (wtype == GGUF_T_Q5_0)
        il2l_type(whole, k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride, GGUF_T_Q5_0, gemm_q5_0,
                  column_q5_0);
    else
        il2l_type(whole, k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride, GGUF_T_Q8_0, gemm_q8_0,
                  column_q8_0);
}
#endif

#ifdef __AVX512VNNI__
const struct gq_matmul_kernels gq_matmul_avx512 = {
#else
const struct gq_matmul_kernels gq_matmul_avx2 = {
#endif
    .gemm = {
#ifdef __AVX512VNNI__
        [GGUF_T_Q4_0] = gq_vtiles32_q4_0,
        [GGUF_T_Q5_0] = gq_vtiles32_q5_0,
        [GGUF_T_Q8_0] = gq_vtiles32_q8_0,
#else
        [GGUF_T_Q4_0] = gemm_q4_0,
        [GGUF_T_Q5_0] = gemm_q5_0,
        [GGUF_T_Q8_0] = gemm_q8_0,
#endif
        [GGUF_T_Q4_1] = gemm_q4_1,
        [GGUF_T_Q5_1] = gemm_q5_1,
        [GGUF_T_Q2_K] = gemm_q2_k,
        [GGUF_T_Q3_K] = gemm_q3_k,
        [GGUF_T_Q4_K] = gemm_q4_k,
        [GGUF_T_Q5_K] = gemm_q5_k,
        [GGUF_T_Q6_K] = gemm_q6_k,
    },
#ifdef __AVX512VNNI__
    .column = {
        [GGUF_T_Q4_0] = gq_column_whole_q4_0,
        [GGUF_T_Q5_0] = gq_column_whole_q5_0,
        [GGUF_T_Q8_0] = gq_column_whole_q8_0,
        [GGUF_T_Q4_K] = column_q4_k,
        [GGUF_T_Q5_K] = column_q5_k,
        [GGUF_T_Q6_K] = column_q6_k,
    },
#else
    .column = {
        [GGUF_T_Q4_0] = column_q4_0,
        [GGUF_T_Q5_0] = column_q5_0,
        [GGUF_T_Q8_0] = column_q8_0,
    },
#endif
};
