/* tiles32.c -- Q4_0, Q5_0 and Q8_0 matrix products with AMX int8 tiles
 * (the amx level; with GQ_PANEL_AMX) or with AVX-512 VNNI (the avx512
 * level): the weight types of 32-element blocks that take Q8_0
 * activations.
 *
 * A block's 32 weights times 32 activations is one tile product of depth
 * 32: sixteen weight rows (tile A: 16 x 32 signed bytes, q - 8, q - 16 or
 * q) times sixteen activation columns (tile B: 8 quads of 16 columns, as
 * struct act32 holds them), summed exactly into 16 x 16 int32.  Each block
 * has its own scales, so the sums leave the tiles block by block and take
 * them in vector registers, one row of sums per weight row:
 *     t = (float)isum * d_w;   sum = fma(t, d_a, sum)
 * block after block, in one chain per output.  The one-column kernels of
 * this level (gq_column_whole_*(), matmul-x86.c) take the same steps, so a
 * column has the same bits alone as among others; against the scalar
 * kernels, which scale and add in another order, the results differ by
 * rounding within the bound of quant/quant.h.
 *
 * The sums of a block are stored (tile store) while the tiles compute the
 * next one, and read after it is issued: a tile store reaches vector
 * loads late. */
#include <config.h>

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/dot.h"
#include "quant/x86.h"

/* Compiled twice: with AMX (gq_tiles32_*, gq_packed_amx_*) and with VNNI
 * (gq_vtiles32_*, gq_packed_vnni_*; gq_pack32()), where each block product
 * is vpdpbusd's, a weight row per int32 lane: a quad of sixteen rows'
 * weights as unsigned q + 128 (the sum then starts at -128 times the
 * column's activation sum, kept with the packed block), times a column's
 * quad broadcast.  The integer sums are the same, and so are the float
 * steps (block_step()) and the bits. */
#ifdef GQ_PANEL_AMX
#define T32_FN(name) gq_tiles32_##name
#define T32_PACKED_FN(name) gq_packed_amx_##name
#else
#define T32_FN(name) gq_vtiles32_##name
#define T32_PACKED_FN(name) gq_packed_vnni_##name
#endif

#define PANEL 16 /* activation columns per panel */
#define TR 16    /* weight rows per tile */
#define KB 32    /* weight blocks unpacked at a time (16 rows: 16 KiB) */

/* One Q8_0 block of sixteen columns, packed. */
struct act32 {
    int8_t q[8][64];  /* [t][4c + j] = byte 4t + j of column c */
    float d[16];      /* [c] = d of column c (0 past the last column) */
    int32_t bias[16]; /* [c] = -128 times the sum of column c's bytes: where
                       * VNNI's sums start (its weights are q + 128) */
};
_Static_assert(sizeof(struct act32) % 64 == 0, "packed blocks stay aligned");

#ifdef GQ_PANEL_AMX
/* Tiles 0, 1: weights of two blocks (16 rows of 32 bytes); 2, 3: their
 * activations (8 quads of 16 columns); 4, 5: their sums.  Static and
 * constant: every byte is there when ldtilecfg reads it. */
static const struct tile_config tile_config32 __attribute__((aligned(64))) = {
    .palette = 1, .colsb = {32, 32, 64, 64, 64, 64}, .rows = {TR, TR, 8, 8, TR, TR}};
#define T32_CONFIG() _tile_loadconfig(&tile_config32)
#define T32_RELEASE() _tile_release()
#else
#define T32_CONFIG() ((void)0)
#define T32_RELEASE() ((void)0)
#endif

#ifndef GQ_PANEL_AMX /* one packing for both */
size_t gq_pack32_block_bytes(void)
{
    return sizeof(struct act32);
}
#endif

/* Blocks i0 .. i0 + n - 1 of columns 0 .. nc - 1 of the Q8_0 activations
 * at act into pb[0 .. n - 1] (columns past nc: zero).  Two blocks at a
 * time: 16 columns of 64 bytes transposed as dwords. */
static void pack_blocks(struct act32 *pb, const uint8_t *act, size_t act_stride, int nc, int64_t i0,
                        int n)
{
    for (int i = 0; i < n; i += 2) {
        const int two = i + 1 < n;
        __m512i r[16], out[16];
        for (int c = 0; c < PANEL; c++) {
            if (c >= nc) {
                r[c] = _mm512_setzero_si512();
                continue;
            }
            const struct gq_block_q8_0 *a = (const struct gq_block_q8_0 *)(act + (size_t)c * act_stride) + i0 + i;
            const __m256i lo = _mm256_loadu_si256((const __m256i *)a[0].qs);
            const __m256i hi = two ? _mm256_loadu_si256((const __m256i *)a[1].qs) : _mm256_setzero_si256();
            r[c] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
        }
        transpose16(r, out);
        for (int j = 0; j <= two; j++) {
            __m512i sums = _mm512_setzero_si512(); /* each column's, a dword lane */
            for (int t = 0; t < 8; t++) {
                const __m512i q = out[8 * j + t];
                _mm512_store_si512(pb[i + j].q[t], q);
                const __m512i pairs = _mm512_maddubs_epi16(_mm512_set1_epi8(1), q);
                sums = _mm512_add_epi32(sums, _mm512_madd_epi16(pairs, _mm512_set1_epi16(1)));
            }
            _mm512_store_si512(pb[i + j].bias, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sums, 7)));
            for (int c = 0; c < PANEL; c++) {
                const struct gq_block_q8_0 *a = (const struct gq_block_q8_0 *)(act + (size_t)c * act_stride) + i0 + i + j;
                pb[i + j].d[c] = c < nc ? h2f(a->d) : 0.0f;
            }
        }
    }
}

#ifndef GQ_PANEL_AMX
void gq_pack32(const void *act, size_t act_stride, int64_t k, int64_t ncols, int64_t p0, int64_t p1,
               void *packed)
{
    const int nb = (int)(k / GQ_QK);
    struct act32 *pb = packed;
    for (int64_t p = p0; p < p1; p++) {
        const int64_t c0 = PANEL * p;
        const int nc = ncols - c0 < PANEL ? (int)(ncols - c0) : PANEL;
        pack_blocks(pb + p * nb, (const uint8_t *)act + (size_t)c0 * act_stride, act_stride, nc, 0, nb);
    }
}
#endif

/* A block's weights of sixteen rows, wq[i], 512 bytes: with AMX, the
 * tile's rows (row r's 32 bytes at 32 r); with VNNI, quads of rows side by
 * side, as the interleaved rows hold them (quad t of row r at 64 t + 4 r),
 * so that vnni_columns() loads a quad of sixteen rows as one vector and
 * interleaved rows need no transpose. */

/* Blocks i0 .. i0 + n - 1 of the rows at w (stride w_stride; nr real ones,
 * the others zero) as signed bytes (VNNI: plus 128) in wq[i - i0] (laid
 * out as above) and scales wd[i - i0][r]. */
static inline __attribute__((always_inline)) void
unpack_rows(int8_t (*wq)[TR][32], float (*wd)[TR], const uint8_t *w, size_t w_stride, int nr, int64_t i0,
            int n, const int type)
{
    for (int r = 0; r < TR; r++) {
        const uint8_t *row = w + (size_t)r * w_stride;
        for (int i = 0; i < n; i++) {
            float d = 0.0f, m;
            __m256i x = _mm256_setzero_si256();
            if (r < nr) {
                if (type == GGUF_T_Q4_0)
                    x = q4_0_weights(row, (int)(i0 + i), &d, &m);
                else if (type == GGUF_T_Q5_0)
                    x = q5_0_weights(row, (int)(i0 + i), &d, &m);
                else
                    x = q8_0_weights(row, (int)(i0 + i), &d, &m);
            }
#ifdef GQ_PANEL_AMX
            _mm256_store_si256((__m256i *)wq[i][r], x);
#else
            x = _mm256_xor_si256(x, _mm256_set1_epi8((char)0x80)); /* q + 128, unsigned */
            _mm256_i32scatter_epi32((int *)wq[i] + r, _mm256_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112), x, 4);
#endif
            wd[i][r] = d;
        }
    }
}

/* The same from a group of interleaved rows (gq_il_chunk(), dot.h):
 * blocks i0 .. i0 + n - 1 of its sixteen rows, from chunk c (block i0's). */
static inline __attribute__((always_inline)) void unpack_rows_il(int8_t (*wq)[TR][32], float (*wd)[TR],
                                                                const uint8_t *c, int n, const int type)
{
    const size_t bb = type == GGUF_T_Q4_0 ? sizeof(struct gq_block_q4_0)
                      : type == GGUF_T_Q5_0 ? sizeof(struct gq_block_q5_0)
                                            : sizeof(struct gq_block_q8_0);
    /* from q + o to unpack_rows()'s bytes: q - o, or q - o + 128 */
#ifdef GQ_PANEL_AMX
    const __m512i to = _mm512_set1_epi8((char)(-(1 << il32_log2_offset(type))));
#else
    const __m512i to = _mm512_set1_epi8((char)(128 - (1 << il32_log2_offset(type))));
#endif
    for (int i = 0; i < n; i++, c += GQ_IL16_ROWS * bb) {
        __m512i v[16];
        il32_weights(c, v, type);
        for (int t = 0; t < 8; t++) v[t] = _mm512_add_epi8(v[t], to);
#ifdef GQ_PANEL_AMX
        __m512i rows[16];
        for (int t = 8; t < 16; t++) v[t] = _mm512_setzero_si512();
        transpose16(v, rows); /* rows[r] lanes 0 .. 7: row r's quads */
        for (int r = 0; r < TR; r++) _mm256_store_si256((__m256i *)wq[i][r], _mm512_castsi512_si256(rows[r]));
#else
        for (int t = 0; t < 8; t++) _mm512_store_si512((int8_t *)wq[i] + 64 * t, v[t]);
#endif
        _mm512_storeu_ps(wd[i], _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)c)));
    }
}

/* acc + the steps of one block from its integer sums isum, the weight
 * rows' scales dw and the columns' da, lane by lane (AMX: a row's sixteen
 * columns, dw the row's scale in every lane; VNNI: a column's sixteen
 * rows, da the column's scale in every lane). */
static inline __m512 block_step(__m512 acc, __m512i isum, __m512 dw, __m512 da)
{
    const __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(isum), dw);
    return _mm512_fmadd_ps(t, da, acc);
}

#ifdef GQ_PANEL_AMX
/* acc[r] += block_step() of the sums c[r], the rows' scales dw[r] and the
 * columns' da. */
static inline __attribute__((always_inline)) void drain(__m512 *acc, const int32_t (*c)[PANEL],
                                                        const float *dw, const float *da)
{
    const __m512 a = _mm512_load_ps(da);
    _Pragma("GCC unroll 16") for (int r = 0; r < TR; r++) acc[r] =
        block_step(acc[r], _mm512_load_si512(c[r]), _mm512_set1_ps(dw[r]), a);
}
#endif

#ifdef GQ_PANEL_AMX
/* One block's product into sums tile S and memory c: weights tile W,
 * activations tile A. */
#define BLOCK_PRODUCT(W, A, S, wq, pa, c)                                                        \
    do {                                                                                         \
        _tile_loadd(W, (wq), 32);                                                                \
        _tile_loadd(A, (pa)->q, 64);                                                             \
        _tile_zero(S);                                                                           \
        _tile_dpbssd(S, W, A);                                                                   \
        _tile_stored(S, (c), 64);                                                                \
    } while (0)

/* acc[r] (row r of a panel, r < nr) += the steps of the n blocks a times
 * the weight rows wq, wd, block after block: with the tiles, the sums of
 * a block stored while the next one's are computed. */
static inline __attribute__((always_inline)) void panel_blocks(__m512 *acc, const int8_t (*wq)[TR][32],
                                                              const float (*wd)[TR], int n,
                                                              const struct act32 *a, int nr)
{
    int32_t c[2][TR][PANEL] __attribute__((aligned(64)));
    (void)nr;
    int i = 0;
    for (; i + 2 <= n; i += 2) {
        BLOCK_PRODUCT(0, 2, 4, wq[i], a + i, c[0]);
        if (i) drain(acc, c[1], wd[i - 1], a[i - 1].d);
        BLOCK_PRODUCT(1, 3, 5, wq[i + 1], a + i + 1, c[1]);
        drain(acc, c[0], wd[i], a[i].d);
    }
    if (i < n) {
        BLOCK_PRODUCT(0, 2, 4, wq[i], a + i, c[0]);
        if (i) drain(acc, c[1], wd[i - 1], a[i - 1].d);
        drain(acc, c[0], wd[i], a[i].d);
    } else {
        drain(acc, c[1], wd[i - 1], a[i - 1].d);
    }
}
#else
/* VNNI: columns c0 .. c0 + nc - 1 (nc <= 4) of the panel at a times the n
 * blocks of weights wq, wd, a row to an int32 lane and a column to a
 * vector: each quad of the sixteen rows loaded as it lies (bytes q + 128),
 * the column's quad broadcast, the sums from the column's start value
 * (-128 times its sum), then block_step()'s float steps with the rows'
 * scales in lanes; into out (nc columns at out_stride, rows `rows`), or
 * added to it unless `first`.  The same integers and steps as the tiles,
 * so the same bits; no transposes, and a panel of few columns costs no
 * more than their share (1 thread, 256 x 896 Q5_0 in the L2 cache: 8
 * columns 66 -> 110 GMAC/s against sixteen rows to a vector and the
 * columns in lanes; 16: 133 -> 138; 128: 168 -> 176). */
static inline __attribute__((always_inline)) void
vnni_columns(const int8_t (*wq)[TR][32], const float (*wd)[TR], int n, const struct act32 *a, float *out,
             size_t out_stride, __mmask16 rows, int first, int c0, const int nc)
{
    __m512 acc[4];
    _Pragma("GCC unroll 4") for (int c = 0; c < nc; c++) acc[c] =
        first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(rows, out + (size_t)c * out_stride);
    for (int i = 0; i < n; i++) {
        __m512i s[4];
        _Pragma("GCC unroll 4") for (int c = 0; c < nc; c++) s[c] = _mm512_set1_epi32(a[i].bias[c0 + c]);
        _Pragma("GCC unroll 8") for (int t = 0; t < 8; t++)
        {
            const __m512i x = _mm512_load_si512((const int8_t *)wq[i] + 64 * t);
            _Pragma("GCC unroll 4") for (int c = 0; c < nc; c++)
            {
                int32_t y;
                memcpy(&y, a[i].q[t] + 4 * (c0 + c), 4);
                s[c] = _mm512_dpbusd_epi32(s[c], x, _mm512_set1_epi32(y));
            }
        }
        const __m512 dw = _mm512_loadu_ps(wd[i]);
        _Pragma("GCC unroll 4") for (int c = 0; c < nc; c++) acc[c] =
            block_step(acc[c], s[c], dw, _mm512_set1_ps(a[i].d[c0 + c]));
    }
    _Pragma("GCC unroll 4") for (int c = 0; c < nc; c++)
        _mm512_mask_storeu_ps(out + (size_t)c * out_stride, rows, acc[c]);
}
#endif

/* Rows rt .. rt + nr - 1 (nr <= 16) of out, for the np panels at pk
 * (panel p's blocks at pk + p * pstride, n of them, whose weights are
 * unpacked in wq, wd), columns up to ncols: out += the n blocks' steps
 * (out = them, if `first`). */
static void tile_panels(const int8_t (*wq)[TR][32], const float (*wd)[TR], int n, const struct act32 *pk,
                        size_t pstride, int64_t np, int64_t ncols, float *out, size_t out_stride, int nr,
                        int first)
{
    const __mmask16 rows = (__mmask16)((1u << nr) - 1);
    for (int64_t p = 0; p < np; p++) {
        const struct act32 *a = pk + (size_t)p * pstride;
        const int nc = ncols - PANEL * p < PANEL ? (int)(ncols - PANEL * p) : PANEL;
        float *o = out + (size_t)(PANEL * p) * out_stride;
#ifndef GQ_PANEL_AMX
        for (int c = 0; c < nc; c += 4) {
            float *oc = o + (size_t)c * out_stride;
            switch (nc - c) {
            case 1: vnni_columns(wq, wd, n, a, oc, out_stride, rows, first, c, 1); break;
            case 2: vnni_columns(wq, wd, n, a, oc, out_stride, rows, first, c, 2); break;
            case 3: vnni_columns(wq, wd, n, a, oc, out_stride, rows, first, c, 3); break;
            default: vnni_columns(wq, wd, n, a, oc, out_stride, rows, first, c, 4); break;
            }
        }
#else
        __m512 acc[TR];
        if (first) {
            for (int r = 0; r < TR; r++) acc[r] = _mm512_setzero_ps();
        } else {
            /* out holds the sums by column: transpose them to rows */
            __m512i col[PANEL], row[TR];
            for (int cc = 0; cc < PANEL; cc++)
                col[cc] = cc < nc ? _mm512_castps_si512(_mm512_maskz_loadu_ps(rows, o + (size_t)cc * out_stride))
                                  : _mm512_setzero_si512();
            transpose16(col, row);
            for (int r = 0; r < TR; r++) acc[r] = _mm512_castsi512_ps(row[r]);
        }
        panel_blocks(acc, wq, wd, n, a, nr);
        __m512i row[TR], col[PANEL];
        for (int r = 0; r < TR; r++) row[r] = _mm512_castps_si512(acc[r]);
        transpose16(row, col);
        for (int cc = 0; cc < nc; cc++)
            _mm512_mask_storeu_ps(o + (size_t)cc * out_stride, rows, _mm512_castsi512_ps(col[cc]));
#endif
    }
}

/* Blocks i0 .. i0 + n - 1 of rows rt .. rt + nr - 1 of w, interleaved
 * below whole (a multiple of 16), as unpack_rows() gives them. */
static inline __attribute__((always_inline)) void unpack(int8_t (*wq)[TR][32], float (*wd)[TR], const void *w,
                                                        size_t w_stride, int64_t whole, int64_t rt, int nr,
                                                        int64_t i0, int n, const int type)
{
    const size_t bb = type == GGUF_T_Q4_0 ? sizeof(struct gq_block_q4_0)
                      : type == GGUF_T_Q5_0 ? sizeof(struct gq_block_q5_0)
                                            : sizeof(struct gq_block_q8_0);
    if (rt < whole)
        unpack_rows_il(wq, wd, gq_il_chunk(w, w_stride, rt / GQ_IL16_ROWS, i0, bb), n, type);
    else
        unpack_rows(wq, wd, (const uint8_t *)w + (size_t)rt * w_stride, w_stride, nr, i0, n, type);
}

/* The product of rows 0 .. nrows - 1 with ncols packed columns (panel p's
 * block i at packed + p * nb + i). */
static inline __attribute__((always_inline)) void
packed32(int64_t k, const void *w, size_t w_stride, int64_t whole, int64_t nrows, const void *packed,
         int64_t ncols, float *out, size_t out_stride, const int type)
{
    const int64_t nb = k / GQ_QK, np = (ncols + PANEL - 1) / PANEL;
    int8_t wq[KB][TR][32] __attribute__((aligned(64)));
    float wd[KB][TR];
    T32_CONFIG();
    for (int64_t rt = 0; rt < nrows; rt += TR) {
        const int nr = nrows - rt < TR ? (int)(nrows - rt) : TR;
        for (int64_t i0 = 0; i0 < nb; i0 += KB) {
            const int n = nb - i0 < KB ? (int)(nb - i0) : KB;
            unpack(wq, wd, w, w_stride, whole, rt, nr, i0, n, type);
            tile_panels((const int8_t(*)[TR][32])wq, (const float(*)[TR])wd, n,
                        (const struct act32 *)packed + i0, (size_t)nb, np, ncols, out + rt, out_stride, nr,
                        i0 == 0);
        }
    }
    T32_RELEASE();
}

/* The same on activations as gguf_matmul() takes them: each panel's blocks
 * packed KB at a time on the stack, every row multiplied with them. */
static inline __attribute__((always_inline)) void
gemm32(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act, size_t act_stride,
       int64_t ncols, float *out, size_t out_stride, const int type)
{
    const int64_t nb = k / GQ_QK;
    int8_t wq[KB][TR][32] __attribute__((aligned(64)));
    float wd[KB][TR];
    struct act32 pb[KB] __attribute__((aligned(64)));
    T32_CONFIG();
    for (int64_t c0 = 0; c0 < ncols; c0 += PANEL) {
        const int nc = ncols - c0 < PANEL ? (int)(ncols - c0) : PANEL;
        for (int64_t i0 = 0; i0 < nb; i0 += KB) {
            const int n = nb - i0 < KB ? (int)(nb - i0) : KB;
            pack_blocks(pb, (const uint8_t *)act + (size_t)c0 * act_stride, act_stride, nc, i0, n);
            for (int64_t rt = 0; rt < nrows; rt += TR) {
                const int nr = nrows - rt < TR ? (int)(nrows - rt) : TR;
                unpack_rows(wq, wd, (const uint8_t *)w + (size_t)rt * w_stride, w_stride, nr, i0, n, type);
                tile_panels((const int8_t(*)[TR][32])wq, (const float(*)[TR])wd, n, pb, KB, 1, nc,
                            out + (size_t)c0 * out_stride + rt, out_stride, nr, i0 == 0);
            }
        }
    }
    T32_RELEASE();
}

/* With VNNI, a product of T32_FEW columns or fewer is taken a column at a
 * time (gq_column_whole_*(), the same steps): a panel costs as much for
 * them as for sixteen (1 thread, 896 x 896 Q5_0: 2 columns 13 GMAC/s in a
 * panel, 22 a column at a time; 4: 22 either way; 16 columns 99). */
#ifdef GQ_PANEL_AMX
#define T32_FEW 0
#else
#define T32_FEW 4
#endif

static void few_columns(void (*column)(int64_t, const void *, size_t, int64_t, const void *, size_t, int64_t,
                                       float *, size_t),
                        int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act,
                        size_t act_stride, int64_t ncols, float *out, size_t out_stride)
{
    for (int64_t c = 0; c < ncols; c++)
        column(k, w, w_stride, nrows, (const uint8_t *)act + (size_t)c * act_stride, act_stride, 1,
               out + (size_t)c * out_stride, out_stride);
}

#define DEFINE_TILES32(NAME, TYPE)                                                               \
    void T32_FN(NAME)(int64_t k, const void *w, size_t w_stride, int64_t nrows, const void *act, \
                           size_t act_stride, int64_t ncols, float *out, size_t out_stride)      \
    {                                                                                            \
        if (ncols <= T32_FEW)                                                                    \
            few_columns(gq_column_whole_##NAME, k, w, w_stride, nrows, act, act_stride, ncols, out, \
                        out_stride);                                                             \
        else                                                                                     \
            gemm32(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride, TYPE);        \
    }                                                                                            \
    void T32_PACKED_FN(NAME)(int64_t k, const void *w, size_t w_stride, int64_t nrows,          \
                              const void *packed, int64_t ncols, float *out, size_t out_stride)  \
    {                                                                                            \
        packed32(k, w, w_stride, 0, nrows, packed, ncols, out, out_stride, TYPE);                \
    }
DEFINE_TILES32(q4_0, GGUF_T_Q4_0)
DEFINE_TILES32(q5_0, GGUF_T_Q5_0)
DEFINE_TILES32(q8_0, GGUF_T_Q8_0)

#ifdef GQ_PANEL_AMX
#define T32_IL_FN gq_packed32_il_amx
#else
#define T32_IL_FN gq_packed32_il
#endif
/* On packed columns and interleaved rows below whole (gguf_matmul_packed_il();
 * gq_columns_il32() takes the products on plain columns). */
void T32_IL_FN(uint32_t wtype, int64_t whole, int64_t k, const void *w, size_t w_stride, int64_t nrows,
               const void *packed, int64_t ncols, float *out, size_t out_stride)
{
    if (wtype == GGUF_T_Q4_0)
        packed32(k, w, w_stride, whole, nrows, packed, ncols, out, out_stride, GGUF_T_Q4_0);
    else if (wtype == GGUF_T_Q5_0)
        packed32(k, w, w_stride, whole, nrows, packed, ncols, out, out_stride, GGUF_T_Q5_0);
    else
        packed32(k, w, w_stride, whole, nrows, packed, ncols, out, out_stride, GGUF_T_Q8_0);
}
