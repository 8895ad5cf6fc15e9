/* panel-vnni.c -- Q4_K, Q5_K and Q6_K matrix products sixteen activation
 * columns at a time, one column per 32-bit lane (AVX-512 VNNI).
 *
 * The row tiles of matmul-x86.c spread one output over the lanes of a
 * vector, so every block of every output ends in a horizontal sum and a
 * scalar scale.  Here a lane is an output: a block's four weight bytes
 * k .. k + 3 are broadcast to all lanes and vpdpbusd multiplies them with
 * bytes k .. k + 3 of sixteen columns at once, so the per-block work of
 * scaling (sub-block scales as integers, d_w d_a, the mins) is done once
 * for sixteen outputs.
 *
 * The activations are repacked for this, CHUNK blocks at a time, into
 * struct panel_block: quad t of the block's 256 bytes holds bytes 4t ..
 * 4t + 3 of each of the sixteen columns (the B layout of an int8 tile
 * product), with the block sums and scales beside.  Weight rows are
 * unpacked block by block into bytes, PR rows at a time, which then share
 * each load of activations.
 *
 * The arithmetic is that of the scalar kernels of dot.c: each block's
 * integer sums are exact, and its float steps are
 *     sum += (d_w * d_a) * (float)isum;   sum -= (dmin_w * d_a) * (float)imin;
 * in that order, block after block, unfused: the outputs have the scalar
 * kernels' bits. */
#include <config.h>

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/dot.h"
#include "quant/x86.h"

/* Compiled twice: with VNNI (gq_panel_*) and, with GQ_PANEL_AMX, with AMX
 * int8 tiles (gq_matmul_amx, gq_packed_amx_*): for Q4_K and Q5_K sixteen
 * rows at a time, one tile product per sub-block of 32, whose sums take
 * the sub-block scales as block_rows() applies them (tile_rows()); on
 * packed activations of many columns, whole blocks through the tiles for
 * Q4_K, Q5_K and Q6_K (block_gemm(), on plain or interleaved rows:
 * gq_packed_il_amx()).  Same arithmetic, same bits. */
#ifdef GQ_PANEL_AMX
#define PANEL_FN(t) panel_amx_##t
#define PANEL_DEF static void
#else
#define PANEL_FN(t) gq_panel_##t
#define PANEL_DEF void
#endif

#define PANEL 16 /* columns per panel: one per int32 lane */
#define PR 4     /* weight rows multiplied together */
#define TR 16    /* the same with AMX: the rows of a tile */
#define CHUNK 8  /* activation blocks repacked at a time (39 KiB) */
#define RG 256   /* rows per pass over a chunk of activations */

/* The loops over rows and quads must be unrolled for the sums to stay in
 * registers. */
#define UNROLL _Pragma("GCC unroll 16")

/* One Q8_K block of sixteen columns. */
struct panel_block {
    int8_t q[64][64];    /* [t][4c + j] = byte 4t + j of column c */
    int32_t bs16[8][16]; /* [p][c] = bsums[2p], bsums[2p + 1] of column c as int16 */
    int32_t bs32[4][16]; /* [p][c] = the sums over sub-blocks of 32 elements 2p, 2p + 1, as int16 */
    float d[16];         /* [c] = d of column c */
};

static inline int32_t pair16(int a, int b)
{
    return (int32_t)(((uint32_t)(uint16_t)b << 16) | (uint16_t)a);
}

/* Blocks i0 .. i0 + n - 1 of columns 0 .. nc - 1 (the others zero). */
static void repack(struct panel_block *pb, const uint8_t *act, size_t act_stride, int nc, int i0,
                   int n)
{
    for (int i = 0; i < n; i++, pb++) {
        const struct gq_block_q8_k *a[PANEL];
        for (int c = 0; c < nc; c++) a[c] = (const struct gq_block_q8_k *)(act + (size_t)c * act_stride) + i0 + i;
        /* quads 16 q0 .. 16 q0 + 15 of the 16 columns */
        for (int q0 = 0; q0 < 4; q0++) {
            __m512i r[16], out[16];
            for (int c = 0; c < PANEL; c++)
                r[c] = c < nc ? _mm512_loadu_si512(a[c]->qs + 64 * q0) : _mm512_setzero_si512();
            transpose16(r, out);
            for (int t = 0; t < 16; t++) _mm512_store_si512(pb->q[16 * q0 + t], out[t]);
        }
        memset(pb->bs16, 0, sizeof pb->bs16);
        memset(pb->bs32, 0, sizeof pb->bs32);
        memset(pb->d, 0, sizeof pb->d);
        for (int c = 0; c < nc; c++) {
            int16_t bs[16];
            memcpy(bs, a[c]->bsums, sizeof bs);
            for (int p = 0; p < 8; p++) pb->bs16[p][c] = pair16(bs[2 * p], bs[2 * p + 1]);
            for (int p = 0; p < 4; p++)
                pb->bs32[p][c] = pair16(bs[4 * p] + bs[4 * p + 1], bs[4 * p + 2] + bs[4 * p + 3]);
            pb->d[c] = a[c]->d;
        }
    }
}

/* A weight block unpacked: its 256 quants as bytes (unsigned), the scale
 * of each sub-block, and the pairs that the block sums multiply. */
struct wblock {
    uint8_t q[256];
    int32_t sc[16];   /* Q4_K/Q5_K: 8 sub-blocks of 32; Q6_K: 16 of 16 (signed) */
    int32_t pair[8];  /* Q4_K/Q5_K: (mn 2p, mn 2p + 1); Q6_K: (sc 2p, sc 2p + 1) */
    float d, dmin;
};

/* Q4_K (with_high 0) or Q5_K (1) block `blk`. */
static inline __attribute__((always_inline)) void unpack_k4(struct wblock *u, const uint8_t *blk,
                                                            const int with_high)
{
    const struct gq_block_q4_k *w = (const struct gq_block_q4_k *)blk;
    const struct gq_block_q5_k *w5 = (const struct gq_block_q5_k *)blk;
    const uint8_t *qs = with_high ? w5->qs : w->qs;
    const __m256i low4 = _mm256_set1_epi8(0x0f), bit4 = _mm256_set1_epi8(0x10);
    __m256i hbits = with_high ? _mm256_loadu_si256((const __m256i *)w5->qh) : _mm256_setzero_si256();
    for (int j = 0; j < 4; j++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
        __m256i lo = _mm256_and_si256(q, low4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
        if (with_high) {
            lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(hbits, 4), bit4));
            hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(hbits, 3), bit4));
            hbits = _mm256_srli_epi16(hbits, 2);
        }
        _mm256_storeu_si256((__m256i *)(u->q + 64 * j), lo);
        _mm256_storeu_si256((__m256i *)(u->q + 64 * j + 32), hi);
    }
    const __m128i scmn = q4k_scales_mins(w->scales);
    _mm256_storeu_si256((__m256i *)u->sc, _mm256_cvtepu8_epi32(scmn));
    _mm_storeu_si128((__m128i *)u->pair, _mm_cvtepu8_epi16(_mm_srli_si128(scmn, 8)));
    u->d = _cvtsh_ss(w->d);
    u->dmin = _cvtsh_ss(w->dmin);
}

static inline void unpack_q6k(struct wblock *u, const uint8_t *blk)
{
    const struct gq_block_q6_k *w = (const struct gq_block_q6_k *)blk;
    for (int h = 0; h < 2; h++) {
        const struct q6k_half hv = q6k_load_half(w, h);
        for (int k = 0; k < 4; k++)
            _mm256_storeu_si256((__m256i *)(u->q + 128 * h + 32 * k), q6k_quants(hv.ql0, hv.ql1, hv.qh, k));
    }
    const __m128i sc8 = _mm_loadu_si128((const __m128i *)w->scales);
    _mm512_storeu_si512(u->sc, _mm512_cvtepi8_epi32(sc8));
    _mm256_storeu_si256((__m256i *)u->pair, _mm256_cvtepi8_epi16(sc8));
    u->d = _cvtsh_ss(w->d);
    u->dmin = 0.0f;
}

/* The 4 bytes of u->q at quad t, broadcast. */
static inline __m512i quad(const struct wblock *u, int t)
{
    int32_t v;
    memcpy(&v, u->q + 4 * t, 4);
    return _mm512_set1_epi32(v);
}

/* acc[r] += block pb times weight block u[r] (r < nr), given isum[r], the
 * products with the sub-block scales applied: the corrections from the
 * activations' block sums, then the float steps of the scalar kernels
 * (kind 0: Q4_K, Q5_K; kind 1: Q6_K). */
static inline __attribute__((always_inline)) void
block_finish(__m512 *acc, const __m512i *isum, const struct wblock *u, const struct panel_block *pb,
             const int nr, const int kind)
{
    const int npairs = kind ? 8 : 4;
    __m512i corr[TR];
    UNROLL
    for (int r = 0; r < nr; r++) corr[r] = _mm512_setzero_si512();
    /* Q4_K/Q5_K: imin = sum of mn_g times the sums of sub-block g;
     * Q6_K: sum of sc_g times the 16-sums (the -32 of its quants) */
    for (int p = 0; p < npairs; p++) {
        const __m512i b = _mm512_load_si512(kind ? pb->bs16[p] : pb->bs32[p]);
        UNROLL
        for (int r = 0; r < nr; r++)
            corr[r] = _mm512_dpwssd_epi32(corr[r], _mm512_set1_epi32(u[r].pair[p]), b);
    }
    const __m512 ad = _mm512_load_ps(pb->d);
    UNROLL
    for (int r = 0; r < nr; r++) {
        const __m512 dad = _mm512_mul_ps(_mm512_set1_ps(u[r].d), ad);
        if (kind) {
            const __m512i t = _mm512_sub_epi32(isum[r], _mm512_slli_epi32(corr[r], 5));
            acc[r] = _mm512_add_ps(acc[r], _mm512_mul_ps(dad, _mm512_cvtepi32_ps(t)));
        } else {
            acc[r] = _mm512_add_ps(acc[r], _mm512_mul_ps(dad, _mm512_cvtepi32_ps(isum[r])));
            acc[r] = _mm512_sub_ps(acc[r], _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(u[r].dmin), ad),
                                                         _mm512_cvtepi32_ps(corr[r])));
        }
    }
}

/* acc[r] += the products of block pb with the weight blocks u[r], r < nr,
 * as the scalar kernels take them (kind 0: Q4_K, Q5_K; kind 1: Q6_K). */
static inline __attribute__((always_inline)) void
block_rows(__m512 *acc, const struct wblock *u, const struct panel_block *pb, const int nr,
           const int kind)
{
    const int groups = kind ? 16 : 8, quads = kind ? 4 : 8;
    __m512i isum[PR];
    UNROLL
    for (int r = 0; r < nr; r++) isum[r] = _mm512_setzero_si512();
    for (int g = 0; g < groups; g++) {
        /* two chains of products per row, each quad times 16 columns */
        __m512i s0[PR], s1[PR];
        UNROLL
        for (int r = 0; r < nr; r++) s0[r] = s1[r] = _mm512_setzero_si512();
        UNROLL
        for (int t = 0; t < quads; t += 2) {
            const __m512i y0 = _mm512_load_si512(pb->q[quads * g + t]);
            const __m512i y1 = _mm512_load_si512(pb->q[quads * g + t + 1]);
            UNROLL
            for (int r = 0; r < nr; r++) {
                s0[r] = _mm512_dpbusd_epi32(s0[r], quad(&u[r], quads * g + t), y0);
                s1[r] = _mm512_dpbusd_epi32(s1[r], quad(&u[r], quads * g + t + 1), y1);
            }
        }
        UNROLL
        for (int r = 0; r < nr; r++)
            isum[r] = _mm512_add_epi32(isum[r], _mm512_mullo_epi32(_mm512_add_epi32(s0[r], s1[r]),
                                                                    _mm512_set1_epi32(u[r].sc[g])));
    }
    block_finish(acc, isum, u, pb, nr, kind);
}

/* Weight block blk of type `type` into u. */
static inline __attribute__((always_inline)) void unpack(struct wblock *u, const uint8_t *blk,
                                                         const int type)
{
    if (type == GGUF_T_Q4_K)
        unpack_k4(u, blk, 0);
    else if (type == GGUF_T_Q5_K)
        unpack_k4(u, blk, 1);
    else
        unpack_q6k(u, blk);
}

#ifdef GQ_PANEL_AMX
/* Tiles 0 and 3: sums (16 x 16 int32); 1: the quants of a sub-block of
 * 32; 2: its activations.  Static and constant, so that every byte is
 * there when ldtilecfg reads it. */
static const struct tile_config tile_config __attribute__((aligned(64))) = {
    .palette = 1, .colsb = {64, 32, 64, 64}, .rows = {TR, TR, 8, TR}};

/* block_rows() for TR rows with AMX: per sub-block one int8 tile product
 * of the rows' unpacked quants (tile 1) with the activations (tile 2, as
 * struct panel_block holds them), whose int32 sums then take the sub-block
 * scales. */
static inline __attribute__((always_inline)) void
tile_rows(__m512 *acc, const struct wblock *u, const struct panel_block *pb)
{
    int32_t c[2][TR][PANEL] __attribute__((aligned(64)));
    __m512i isum[TR];
    UNROLL
    for (int r = 0; r < TR; r++) isum[r] = _mm512_setzero_si512();
    /* The sums of sub-block g go to tile 0 or 3 and memory c[g % 2]; they
     * are read while the tiles compute sub-block g + 1, as a tile store
     * reaches loads late. */
    for (int g = 0; g <= 8; g++) {
        if (g < 8) {
            _tile_loadd(1, u[0].q + 32 * g, sizeof(struct wblock));
            _tile_loadd(2, pb->q[8 * g], 64);
            if (g % 2) {
                _tile_zero(3);
                _tile_dpbusd(3, 1, 2);
                _tile_stored(3, c[1], 64);
            } else {
                _tile_zero(0);
                _tile_dpbusd(0, 1, 2);
                _tile_stored(0, c[0], 64);
            }
        }
        if (g > 0) {
            UNROLL
            for (int r = 0; r < TR; r++)
                isum[r] = _mm512_add_epi32(isum[r], _mm512_mullo_epi32(_mm512_load_si512(c[(g - 1) % 2][r]),
                                                                        _mm512_set1_epi32(u[r].sc[g - 1])));
        }
    }
    block_finish(acc, isum, u, pb, TR, 0);
}
#endif

/* The rows r0 .. r1 - 1 over chunk blocks i0 .. i0 + n - 1: run[r - r0]
 * holds their running sums. */
static inline __attribute__((always_inline)) void
chunk_rows(const uint8_t *w, size_t w_stride, int64_t r0, int64_t r1, const struct panel_block *pb,
           int i0, int n, float (*run)[PANEL], const int type)
{
    const size_t block_bytes = type == GGUF_T_Q4_K   ? sizeof(struct gq_block_q4_k)
                               : type == GGUF_T_Q5_K ? sizeof(struct gq_block_q5_k)
                                                     : sizeof(struct gq_block_q6_k);
    const int kind = type == GGUF_T_Q6_K;
    int64_t r = r0;
#ifdef GQ_PANEL_AMX
    for (; !kind && r1 - r >= TR; r += TR) {
        struct wblock u[TR];
        __m512 acc[TR];
        for (int j = 0; j < TR; j++) acc[j] = _mm512_loadu_ps(run[r - r0 + j]);
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < TR; j++)
                unpack(&u[j], w + (size_t)(r + j) * w_stride + (size_t)(i0 + i) * block_bytes, type);
            tile_rows(acc, u, pb + i);
        }
        for (int j = 0; j < TR; j++) _mm512_storeu_ps(run[r - r0 + j], acc[j]);
    }
#endif
    for (; r < r1; r += PR) {
        struct wblock u[PR];
        const int nr = r1 - r < PR ? (int)(r1 - r) : PR;
        __m512 acc[PR];
        for (int j = 0; j < nr; j++) acc[j] = _mm512_loadu_ps(run[r - r0 + j]);
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < nr; j++)
                unpack(&u[j], w + (size_t)(r + j) * w_stride + (size_t)(i0 + i) * block_bytes, type);
            switch (nr) {
            case PR: block_rows(acc, u, pb + i, PR, kind); break;
            case 3: block_rows(acc, u, pb + i, 3, kind); break;
            case 2: block_rows(acc, u, pb + i, 2, kind); break;
            default: block_rows(acc, u, pb + i, 1, kind); break;
            }
        }
        for (int j = 0; j < nr; j++) _mm512_storeu_ps(run[r - r0 + j], acc[j]);
    }
}

static inline __attribute__((always_inline)) void
panel_gemm(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act, size_t act_stride,
           int64_t ncols, float *out, size_t out_stride, const int type)
{
    const int nb = (int)(k / GQ_QK_K);
#ifdef GQ_PANEL_AMX
    if (nrows >= TR) _tile_loadconfig(&tile_config);
#endif
    struct panel_block pb[CHUNK] __attribute__((aligned(64)));
    float run[RG][PANEL] __attribute__((aligned(64)));
    for (int64_t c0 = 0; c0 < ncols; c0 += PANEL) {
        const int nc = ncols - c0 < PANEL ? (int)(ncols - c0) : PANEL;
        const uint8_t *a = (const uint8_t *)act + (size_t)c0 * act_stride;
        /* a row's blocks all fit in one chunk: repacked once for all rows */
        if (nb <= CHUNK) repack(pb, a, act_stride, nc, 0, nb);
        for (int64_t r0 = 0; r0 < nrows; r0 += RG) {
            const int64_t r1 = nrows - r0 < RG ? nrows : r0 + RG;
            memset(run, 0, sizeof run);
            for (int i0 = 0; i0 < nb; i0 += CHUNK) {
                const int n = nb - i0 < CHUNK ? nb - i0 : CHUNK;
                if (nb > CHUNK) repack(pb, a, act_stride, nc, i0, n);
                chunk_rows(w, w_stride, r0, r1, pb, i0, n, run, type);
            }
            for (int64_t r = r0; r < r1; r++)
                for (int c = 0; c < nc; c++) out[(size_t)(c0 + c) * out_stride + (size_t)r] = run[r - r0][c];
        }
    }
#ifdef GQ_PANEL_AMX
    if (nrows >= TR) _tile_release();
#endif
}

/* --- products on activations packed once (gguf_matmul_pack()) ---
 *
 * A product of many columns repacks the activations of every panel, and
 * does it again in each call, while an engine splits one product into
 * calls by rows among its threads and multiplies one input with several
 * matrices.  Packed once, panel p's block i is the struct panel_block at
 * packed + p * nb + i. */

#ifndef GQ_PANEL_AMX
size_t gq_panel_block_bytes(void)
{
    return sizeof(struct panel_block);
}

void gq_panel_pack(const void *act, size_t act_stride, int64_t k, int64_t ncols, int64_t p0,
                   int64_t p1, void *packed)
{
    const int nb = (int)(k / GQ_QK_K);
    struct panel_block *pb = packed;
    for (int64_t p = p0; p < p1; p++) {
        const int64_t c0 = PANEL * p;
        const int nc = ncols - c0 < PANEL ? (int)(ncols - c0) : PANEL;
        repack(pb + p * nb, (const uint8_t *)act + (size_t)c0 * act_stride, act_stride, nc, 0, nb);
    }
}
#endif

/* panel_gemm() on packed activations, rows r0 .. nrows - 1. */
static inline __attribute__((always_inline)) void
packed_rows(int64_t k, const void *w, size_t w_stride, int64_t r0, int64_t nrows,
            const struct panel_block *packed, int64_t ncols, float *out, size_t out_stride,
            const int type)
{
    const int nb = (int)(k / GQ_QK_K);
    float run[RG][PANEL] __attribute__((aligned(64)));
    for (int64_t c0 = 0; c0 < ncols; c0 += PANEL) {
        const int nc = ncols - c0 < PANEL ? (int)(ncols - c0) : PANEL;
        const struct panel_block *pb = packed + (c0 / PANEL) * nb;
        for (int64_t ra = r0; ra < nrows; ra += RG) {
            const int64_t rb = nrows - ra < RG ? nrows : ra + RG;
            memset(run, 0, sizeof run);
            chunk_rows(w, w_stride, ra, rb, pb, 0, nb, run, type);
            for (int c = 0; c < nc; c++)
                for (int64_t r = ra; r < rb; r++) out[(size_t)(c0 + c) * out_stride + (size_t)r] = run[r - ra][c];
        }
    }
}

#ifdef GQ_PANEL_AMX
/* With the tiles, a sub-block's scale differs per weight row, so
 * tile_rows() drains a 16 x 16 tile of sums per sub-block and scales them
 * with vector multiplies, which cost more than the tile products.  Here
 * each quant is multiplied beforehand with the high and the low three
 * bits of its sub-block's 6-bit scale (struct tblock): the whole block
 * then goes through the tiles as two products of 256 (8 hi + lo is the
 * sum over sub-blocks of scale times quant times activation, the integer
 * block_rows() makes), drained twice a block rather than eight times; a
 * quant (<= 31) times a part (<= 7) fits the unsigned bytes of tdpbusd.
 * Each block of 16 weight rows is unpacked once for all the panels. */
#define MAXP 32 /* panels a pass over the rows takes (512 columns) */
/* Panels from which block_gemm() beats tile_rows() (1 thread, 192 rows of
 * 1536: 16 columns 58 against 109 GMAC/s, 32: 103 against 121, 64: 150
 * against 121, 132: 202 against 113) */
#define BLOCK_GEMM_PANELS 4
/* The same for Q6_K's block_gemm() against the VNNI panels (1 thread, 768
 * rows of 1536: 32 columns 77 against 100 GMAC/s, 40: 84 against 73, 64:
 * 124 against 99, 512: 265 against 93) */
#define Q6_GEMM_PANELS 3

struct tblock {
    uint8_t hi[TR][256], lo[TR][256];
};

/* Q4_K, Q5_K: tiles 0, 1: hi and lo of 16 rows, 64 quants, 2: a panel's
 * activations for them; 3, 4, 5: the same for the next 64; 6, 7: the sums
 * of hi and lo.  Q6_K uses them as block_gemm() says. */
static const struct tile_config tile_config_block __attribute__((aligned(64))) = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {TR, TR, TR, TR, TR, TR, TR, TR}};

/* Row u's quants times the two parts of their sub-block's scale. */
static inline void split_scales(uint8_t *hi, uint8_t *lo, const struct wblock *u)
{
    for (int g = 0; g < 8; g++) {
        const __m512i q = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(u->q + 32 * g)));
        const __m512i h = _mm512_mullo_epi16(q, _mm512_set1_epi16((short)(u->sc[g] >> 3)));
        const __m512i l = _mm512_mullo_epi16(q, _mm512_set1_epi16((short)(u->sc[g] & 7)));
        _mm256_storeu_si256((__m256i *)(hi + 32 * g), _mm512_cvtepi16_epi8(h));
        _mm256_storeu_si256((__m256i *)(lo + 32 * g), _mm512_cvtepi16_epi8(l));
    }
}

/* Rows r0 .. r0 + SR - 1 of the running sums run[r][16 p ..] of panel p
 * += block pb times the weight rows u, from the hi and lo sums c[0], c[1]
 * (each row's steps are block_rows()'s; a block's rows are done in four
 * parts, which go between its successor's tile products). */
#define SR (TR / 4)
static inline __attribute__((always_inline)) void
block_sums(float (*run)[MAXP * PANEL], int p, int32_t (*c)[TR][PANEL], const struct wblock *u,
           const struct panel_block *pb, int r0)
{
    __m512 acc[SR];
    __m512i isum[SR];
    UNROLL
    for (int r = 0; r < SR; r++) {
        acc[r] = _mm512_load_ps(run[r0 + r] + PANEL * p);
        isum[r] = _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(c[0][r0 + r]), 3),
                                   _mm512_load_si512(c[1][r0 + r]));
    }
    block_finish(acc, isum, u + r0, pb, SR, 0);
    UNROLL
    for (int r = 0; r < SR; r++) _mm512_store_ps(run[r0 + r] + PANEL * p, acc[r]);
}

/* Rows rt .. rt + TR - 1 of columns c0 .. c0 + cols - 1 of out from
 * run[r][c - c0] (a column's 16 outputs are contiguous). */
static inline void store_run(float *out, size_t out_stride, int64_t c0, int cols, int64_t rt,
                             float (*run)[MAXP * PANEL])
{
    for (int cc = 0; cc < cols; cc++) {
        float *o = out + (size_t)(c0 + cc) * out_stride + (size_t)rt;
        for (int r = 0; r < TR; r++) o[r] = run[r][cc];
    }
}

/* Q6_K with the tiles.  Its scales are signed bytes, so quants scaled as
 * split_scales() scales Q4_K's do not fit the tiles' unsigned operand.  Here the weights
 * are the signed one (tdpbssd, signed activations as they are packed): a
 * scale sc is written in balanced base-8 digits, sc = D0 + 8 D1 + 64 D2
 * with each D in [-3, 4] (every byte has such a form), and the quants of
 * a sub-block enter three products as (q - 32) D_j, in [-128, 124]; the
 * block's integer is then P0 + 8 P1 + 64 P2, that of the scalar kernel,
 * and takes its float step as there.  Three products a block rather than
 * Q4_K's two, but no sums of the activations and a shorter drain. */
struct t6block {
    int8_t w[3][TR][256]; /* [digit][row][quant] */
};

/* Row u's quants, less 32, times the three digits of their sub-block's
 * scale. */
static inline void split_digits6(int8_t (*w)[TR][256], int r, const struct wblock *u)
{
    const __m512i sc = _mm512_loadu_si512(u->sc), three = _mm512_set1_epi32(3), seven = _mm512_set1_epi32(7);
    const __m512i d0 = _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(sc, three), seven), three);
    const __m512i s1 = _mm512_srai_epi32(_mm512_sub_epi32(sc, d0), 3);
    const __m512i d1 = _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(s1, three), seven), three);
    const __m512i d2 = _mm512_srai_epi32(_mm512_sub_epi32(s1, d1), 3);
    /* the 16 digits as int16 in lanes 0 .. 15 */
    const __m512i dg[3] = {_mm512_castsi256_si512(_mm512_cvtepi32_epi16(d0)),
                           _mm512_castsi256_si512(_mm512_cvtepi32_epi16(d1)),
                           _mm512_castsi256_si512(_mm512_cvtepi32_epi16(d2))};
    /* lanes 0 .. 15 of pair m take sub-block 2m, lanes 16 .. 31 2m + 1 */
    const __m512i upper = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(1), 1);
    for (int m = 0; m < 8; m++) {
        const __m512i x = _mm512_sub_epi16(
            _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(u->q + 32 * m))), _mm512_set1_epi16(32));
        const __m512i idx = _mm512_add_epi16(_mm512_set1_epi16((short)(2 * m)), upper);
        for (int j = 0; j < 3; j++) {
            const __m512i p = _mm512_mullo_epi16(x, _mm512_permutexvar_epi16(idx, dg[j]));
            _mm256_storeu_si256((__m256i *)(w[j][r] + 32 * m), _mm512_cvtepi16_epi8(p));
        }
    }
}

/* Rows r0 .. r0 + SR - 1 of run[r][16 p ..] += block pb times the rows
 * u, from the products of the three digits c[0 .. 2]. */
static inline __attribute__((always_inline)) void
block_sums6(float (*run)[MAXP * PANEL], int p, int32_t (*c)[TR][PANEL], const struct wblock *u,
            const struct panel_block *pb, int r0)
{
    const __m512 ad = _mm512_load_ps(pb->d);
    UNROLL
    for (int r = r0; r < r0 + SR; r++) {
        const __m512i isum = _mm512_add_epi32(
            _mm512_load_si512(c[0][r]),
            _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(c[1][r]), 3),
                             _mm512_slli_epi32(_mm512_load_si512(c[2][r]), 6)));
        const __m512 dad = _mm512_mul_ps(_mm512_set1_ps(u[r].d), ad);
        _mm512_store_ps(run[r] + PANEL * p, _mm512_add_ps(_mm512_load_ps(run[r] + PANEL * p),
                                                           _mm512_mul_ps(dad, _mm512_cvtepi32_ps(isum))));
    }
}

/* The three products of 64 quants kk of a block with one panel's: digit
 * tiles 0, 1, 2, activations in tile b, sums in 4, 5, 6. */
#define Q6_STEP(tb, pb, kk, b)                                                                   \
    do {                                                                                         \
        _tile_loadd(b, (pb)->q[16 * (kk)], 64);                                                  \
        _tile_loadd(0, (tb)->w[0][0] + 64 * (kk), 256);                                          \
        _tile_dpbssd(4, 0, b);                                                                   \
        _tile_loadd(1, (tb)->w[1][0] + 64 * (kk), 256);                                          \
        _tile_dpbssd(5, 1, b);                                                                   \
        _tile_loadd(2, (tb)->w[2][0] + 64 * (kk), 256);                                          \
        _tile_dpbssd(6, 2, b);                                                                   \
    } while (0)

/* Bytes of a row's block in ilk_blocks()'s copies (Q6_K's 210, rounded
 * up to 32). */
#define ILK_BB 224

/* Block i of the sixteen rows of a group of interleaved rows (chunk c,
 * gq_il_chunk(), dot.h) back as plain blocks, b[r] row r's: sixteen words
 * of the rows at a time transposed back. */
static inline __attribute__((always_inline)) void ilk_blocks(uint8_t (*b)[ILK_BB], const uint8_t *c,
                                                             const int type)
{
    const int words = type == GGUF_T_Q4_K   ? (int)sizeof(struct gq_block_q4_k) / 4
                      : type == GGUF_T_Q5_K ? (int)sizeof(struct gq_block_q5_k) / 4
                                            : (int)sizeof(struct gq_block_q6_k) / 4;
    for (int j0 = 0; j0 < words; j0 += 16) {
        __m512i v[16], rows[16];
        for (int t = 0; t < 16; t++)
            v[t] = j0 + t < words ? _mm512_loadu_si512(c + 64 * gq_ilk_pos((uint32_t)type, j0 + t))
                                  : _mm512_setzero_si512();
        transpose16(v, rows); /* rows[r] lane t: row r's word j0 + t */
        const __mmask16 keep = words - j0 >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (words - j0)) - 1);
        for (int r = 0; r < 16; r++) _mm512_mask_storeu_epi32(b[r] + 4 * j0, keep, rows[r]);
    }
    if (type == GGUF_T_Q6_K) /* d: the 16 halves after the words */
        for (int r = 0; r < 16; r++) memcpy(b[r] + 4 * words, c + 64 * words + 2 * r, 2);
}

/* Blocks a pass over the rows takes at most: the activations of 32 panels
 * for them (6 x 32 x 4.6 KiB) stay in the core's cache while the weight
 * rows go by, and the running sums go to out between passes (each output
 * still takes its blocks in order). */
#define KC 6

/* out[c][r] for rows rt .. rt + TR - 1 into run[r][c - c0], the inverse of
 * store_run(). */
static inline void load_run(const float *out, size_t out_stride, int64_t c0, int cols, int64_t rt,
                            float (*run)[MAXP * PANEL])
{
    for (int cc = 0; cc < cols; cc++) {
        const float *o = out + (size_t)(c0 + cc) * out_stride + (size_t)rt;
        for (int r = 0; r < TR; r++) run[r][cc] = o[r];
    }
}

/* Rows 0 .. nrows - 1 (a multiple of TR) of a Q4_K, Q5_K or Q6_K matrix
 * times the packed columns.  Each block of 16 weight rows is unpacked (and
 * scaled: split_scales(), split_digits6()) once for all the panels, whose
 * products then go through the tiles:
 * - Q4_K, Q5_K: one panel at a time, the weight and activation tiles of
 *   alternate 64 quants in two sets (0 1 2, 3 4 5), so that the loads of
 *   the next go on while the products of the last compute; hi and lo
 *   summed in tiles 6 and 7;
 * - Q6_K: digit tiles 0, 1, 2, the activations alternately in 3 and 7, the
 *   three sums in 4, 5, 6.
 * The sums are stored and read only after the next panel's products are
 * under way (a tile store reaches vector loads late), a quarter of the
 * rows after each quarter of those products, so that the vector units
 * work while the tiles do (1 thread, 512 columns of 1536: Q4_K 278 -> 315
 * GMAC/s, Q6_K 277 -> 294 against all the sums after the products):
 * `pending` is the panel stored last, in c[cb ^ 1]. */
static inline __attribute__((always_inline)) void
block_gemm(int64_t k, const uint8_t *w, size_t w_stride, int64_t nrows, const struct panel_block *packed,
           int64_t ncols, float *out, size_t out_stride, const int type, const int il)
{
    const int nb = (int)(k / GQ_QK_K), q6 = type == GGUF_T_Q6_K;
    const size_t bb = type == GGUF_T_Q4_K   ? sizeof(struct gq_block_q4_k)
                      : type == GGUF_T_Q5_K ? sizeof(struct gq_block_q5_k)
                                            : sizeof(struct gq_block_q6_k);
    float run[TR][MAXP * PANEL] __attribute__((aligned(64)));
    int32_t c[2][3][TR][PANEL] __attribute__((aligned(64))); /* [panel parity][hi, lo / digit] */
    struct wblock u[2][TR]; /* a block's rows, and the last block's while its sums are pending */
    uint8_t plain[TR][ILK_BB]; /* il: the block's rows, de-interleaved */
    union {
        struct tblock k4;
        struct t6block k6;
    } tb;
    _tile_loadconfig(&tile_config_block);
    for (int64_t c0 = 0; c0 < ncols; c0 += MAXP * PANEL) {
        const int cols = ncols - c0 < MAXP * PANEL ? (int)(ncols - c0) : MAXP * PANEL;
        const int np = (cols + PANEL - 1) / PANEL;
        const struct panel_block *pc = packed + (c0 / PANEL) * nb;
        for (int i0 = 0; i0 < nb; i0 += KC) {
            const int i1 = nb - i0 < KC ? nb : i0 + KC;
            for (int64_t rt = 0; rt < nrows; rt += TR) {
                if (i0)
                    load_run(out, out_stride, c0, cols, rt, run);
                else
                    memset(run, 0, sizeof run);
                int pending = -1, cb = 0;
                const struct wblock *pend_u = NULL;
                const struct panel_block *pend_pb = NULL;
                for (int i = i0; i <= i1; i++) {
                    struct wblock *ui = u[i & 1];
                    if (il && i < i1) ilk_blocks(plain, gq_il_chunk(w, w_stride, rt / TR, i, bb), type);
                    for (int j = 0; j < TR && i < i1; j++) {
                        const uint8_t *blk = il ? plain[j] : w + (size_t)(rt + j) * w_stride + (size_t)i * bb;
                        if (q6) {
                            unpack_q6k(&ui[j], blk);
                            split_digits6(tb.k6.w, j, &ui[j]);
                        } else {
                            unpack(&ui[j], blk, type);
                            split_scales(tb.k4.hi[j], tb.k4.lo[j], &ui[j]);
                        }
                    }
                    /* i == i1: only the last panel's sums are left */
                    for (int p = 0; p < (i < i1 ? np : 1); p++) {
                        const struct panel_block *pb = pc + (size_t)p * nb + i;
                        /* a quarter of the pending panel's sums after each
                         * quarter of this one's tile products: the vector
                         * units work while the tiles do */
#define PENDING_SUMS(part)                                                                       \
    do {                                                                                         \
        if (pending >= 0 && q6)                                                                  \
            block_sums6(run, pending, c[cb ^ 1], pend_u, pend_pb, SR * (part));                  \
        else if (pending >= 0)                                                                   \
            block_sums(run, pending, c[cb ^ 1], pend_u, pend_pb, SR * (part));                   \
    } while (0)
                        if (i < i1 && q6) {
                            _tile_zero(4);
                            _tile_zero(5);
                            _tile_zero(6);
                            Q6_STEP(&tb.k6, pb, 0, 3);
                            PENDING_SUMS(0);
                            Q6_STEP(&tb.k6, pb, 1, 7);
                            PENDING_SUMS(1);
                            Q6_STEP(&tb.k6, pb, 2, 3);
                            PENDING_SUMS(2);
                            Q6_STEP(&tb.k6, pb, 3, 7);
                            PENDING_SUMS(3);
                            _tile_stored(4, c[cb][0], 64);
                            _tile_stored(5, c[cb][1], 64);
                            _tile_stored(6, c[cb][2], 64);
                        } else if (i < i1) {
                            _tile_zero(6);
                            _tile_zero(7);
                            UNROLL
                            for (int kk = 0; kk < 4; kk += 2) {
                                _tile_loadd(0, tb.k4.hi[0] + 64 * kk, 256);
                                _tile_loadd(1, tb.k4.lo[0] + 64 * kk, 256);
                                _tile_loadd(2, pb->q[16 * kk], 64);
                                _tile_dpbusd(6, 0, 2);
                                _tile_dpbusd(7, 1, 2);
                                PENDING_SUMS(kk);
                                _tile_loadd(3, tb.k4.hi[0] + 64 * (kk + 1), 256);
                                _tile_loadd(4, tb.k4.lo[0] + 64 * (kk + 1), 256);
                                _tile_loadd(5, pb->q[16 * (kk + 1)], 64);
                                _tile_dpbusd(6, 3, 5);
                                _tile_dpbusd(7, 4, 5);
                                PENDING_SUMS(kk + 1);
                            }
                            _tile_stored(6, c[cb][0], 64);
                            _tile_stored(7, c[cb][1], 64);
                        } else {
                            for (int part = 0; part < 4; part++) PENDING_SUMS(part);
                        }
#undef PENDING_SUMS
                        pending = p;
                        pend_u = ui;
                        pend_pb = pb;
                        cb ^= 1;
                    }
                }
                store_run(out, out_stride, c0, cols, rt, run);
            }
        }
    }
    _tile_release();
}

int64_t gq_amx_block_min(uint32_t wtype)
{
    return (wtype == GGUF_T_Q6_K ? Q6_GEMM_PANELS - 1 : BLOCK_GEMM_PANELS - 1) * PANEL + 1;
}

/* Q4_K, Q5_K and Q6_K on packed activations with AMX: from
 * gq_amx_block_min() columns on, block_gemm() on whole tiles of rows
 * (interleaved ones, if il) and the VNNI panels for the rest; below, on
 * plain rows, tile_rows() (Q4_K, Q5_K) or the VNNI panels (Q6_K). */
static inline __attribute__((always_inline)) void
amx_packed(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *packed,
           int64_t ncols, float *out, size_t out_stride, const int type, const int il)
{
    const int64_t whole = nrows / TR * TR;
    if (!il && ncols < gq_amx_block_min((uint32_t)type)) {
        /* too few panels to pay for the scaled copies */
        const int tiles = type != GGUF_T_Q6_K && nrows >= TR;
        if (tiles) _tile_loadconfig(&tile_config);
        packed_rows(k, w, w_stride, 0, nrows, packed, ncols, out, out_stride, type);
        if (tiles) _tile_release();
        return;
    }
    if (whole) block_gemm(k, w, w_stride, whole, packed, ncols, out, out_stride, type, il);
    if (whole < nrows)
        packed_rows(k, w, w_stride, whole, nrows, packed, ncols, out, out_stride, type);
}

void gq_packed_amx_q4_k(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                        const void *packed, int64_t ncols, float *out, size_t out_stride)
{
    amx_packed(k, w, w_stride, nrows, packed, ncols, out, out_stride, GGUF_T_Q4_K, 0);
}

void gq_packed_amx_q5_k(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                        const void *packed, int64_t ncols, float *out, size_t out_stride)
{
    amx_packed(k, w, w_stride, nrows, packed, ncols, out, out_stride, GGUF_T_Q5_K, 0);
}

void gq_packed_amx_q6_k(int64_t k, const void *w, size_t w_stride, int64_t nrows,
                        const void *packed, int64_t ncols, float *out, size_t out_stride)
{
    amx_packed(k, w, w_stride, nrows, packed, ncols, out, out_stride, GGUF_T_Q6_K, 0);
}

void gq_packed_il_amx(uint32_t wtype, int64_t k, const void *w, size_t w_stride, int64_t nrows,
                      const void *packed, int64_t ncols, float *out, size_t out_stride)
{
    if (wtype == GGUF_T_Q4_K)
        amx_packed(k, w, w_stride, nrows, packed, ncols, out, out_stride, GGUF_T_Q4_K, 1);
    else if (wtype == GGUF_T_Q5_K)
        amx_packed(k, w, w_stride, nrows, packed, ncols, out, out_stride, GGUF_T_Q5_K, 1);
    else
        amx_packed(k, w, w_stride, nrows, packed, ncols, out, out_stride, GGUF_T_Q6_K, 1);
}
#else
void gq_packed_q4_k(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *packed,
                    int64_t ncols, float *out, size_t out_stride)
{
    packed_rows(k, w, w_stride, 0, nrows, packed, ncols, out, out_stride, GGUF_T_Q4_K);
}

void gq_packed_q5_k(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *packed,
                    int64_t ncols, float *out, size_t out_stride)
{
    packed_rows(k, w, w_stride, 0, nrows, packed, ncols, out, out_stride, GGUF_T_Q5_K);
}

void gq_packed_q6_k(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *packed,
                    int64_t ncols, float *out, size_t out_stride)
{
    packed_rows(k, w, w_stride, 0, nrows, packed, ncols, out, out_stride, GGUF_T_Q6_K);
}
#endif

PANEL_DEF PANEL_FN(q4_k)(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act,
                   size_t act_stride, int64_t ncols, float *out, size_t out_stride)
{
    panel_gemm(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride, GGUF_T_Q4_K);
}

PANEL_DEF PANEL_FN(q5_k)(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act,
                   size_t act_stride, int64_t ncols, float *out, size_t out_stride)
{
    panel_gemm(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride, GGUF_T_Q5_K);
}

#ifndef GQ_PANEL_AMX /* Q6_K's sub-blocks of 16 gain nothing from tile_rows() */
PANEL_DEF PANEL_FN(q6_k)(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act,
                   size_t act_stride, int64_t ncols, float *out, size_t out_stride)
{
    panel_gemm(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride, GGUF_T_Q6_K);
}
#endif

#ifdef GQ_PANEL_AMX
/* Q4_0, Q5_0 and Q8_0: tiles32.c, and its steps for one column. */
const struct gq_matmul_kernels gq_matmul_amx = {
    .gemm = {
        [GGUF_T_Q4_0] = gq_tiles32_q4_0,
        [GGUF_T_Q5_0] = gq_tiles32_q5_0,
        [GGUF_T_Q8_0] = gq_tiles32_q8_0,
        [GGUF_T_Q4_K] = panel_amx_q4_k,
        [GGUF_T_Q5_K] = panel_amx_q5_k,
    },
    .column = {
        [GGUF_T_Q4_0] = gq_column_whole_q4_0,
        [GGUF_T_Q5_0] = gq_column_whole_q5_0,
        [GGUF_T_Q8_0] = gq_column_whole_q8_0,
    },
};
#endif
