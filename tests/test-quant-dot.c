/* test-quant-dot.c -- the dot kernels of quant/dot.h.
 *
 * For every weight type with a dot kernel, on rows of 1, 2, 3 and 17
 * blocks and one row of 4096 elements, with weights quantized from
 * Gaussian rows (scales from 1e-3 to 1e3) and with random raw blocks
 * (every bit pattern of the quants, random finite scales):
 *  (a) the scalar kernel against the double dot product of the
 *      dequantized weight row and the dequantized activation row, within
 *      GQ_DOT_TOL(n) of the sum of the magnitudes that round (see tol_ref);
 *  (b) every SIMD level this CPU has against the scalar kernel: the same
 *      float bits for the K-quants; for the legacy types, whose block sums
 *      may round in another order, within GQ_DOT_TOL(n) of the same sum of
 *      magnitudes (quant/dot.h says which is which).
 * Also the pairing of weight and activation types, and gguf_matmul() (the
 * public matrix product): at every level, each output against the scalar
 * dot kernel within GQ_DOT_TOL(k) of the same sum of magnitudes, each
 * column the same bits as that column multiplied alone, for several row
 * and column counts (tiles and their remainders, rows of more than 512
 * blocks), padded strides, and its argument checks.
 * `test-quant-dot --bench` instead prints the GB/s of weight bytes one
 * thread streams through each kernel in a 4096 x 4096 matrix-vector
 * product, per SIMD level, and gguf_matmul()'s GB/s (one column) and
 * integer multiply-adds per second (64 columns). */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quant/blocks.h"
#include "quant/dot.h"
#include "quant/half.h"
#include "quant/quant.h"
#include "tests/testutil.h"
#ifdef TEST_AMX_EMULATED
#include <immintrin.h>

#include "tests/amx-emu.h"
#endif

#define N_LEVELS 4

static const uint32_t types[] = {
    GGUF_T_Q4_0, GGUF_T_Q4_1, GGUF_T_Q5_0, GGUF_T_Q5_1, GGUF_T_Q8_0,
    GGUF_T_Q2_K, GGUF_T_Q3_K, GGUF_T_Q4_K, GGUF_T_Q5_K, GGUF_T_Q6_K,
};
#define N_TYPES (sizeof types / sizeof types[0])

/* Block size, block bytes and the offsets of the half scale fields of
 * each weight type (-1: none). */
struct tinfo {
    const char *name;
    int bs, bytes, h0, h1;
    int bit_exact; /* SIMD must equal scalar bit for bit */
};

static struct tinfo info(uint32_t t)
{
    switch (t) {
    case GGUF_T_Q4_0: return (struct tinfo){"q4_0", 32, 18, 0, -1, 0};
    case GGUF_T_Q4_1: return (struct tinfo){"q4_1", 32, 20, 0, 2, 0};
    case GGUF_T_Q5_0: return (struct tinfo){"q5_0", 32, 22, 0, -1, 0};
    case GGUF_T_Q5_1: return (struct tinfo){"q5_1", 32, 24, 0, 2, 0};
    case GGUF_T_Q8_0: return (struct tinfo){"q8_0", 32, 34, 0, -1, 0};
    case GGUF_T_Q2_K: return (struct tinfo){"q2_K", 256, 84, 80, 82, 1};
    case GGUF_T_Q3_K: return (struct tinfo){"q3_K", 256, 110, 108, -1, 1};
    case GGUF_T_Q4_K: return (struct tinfo){"q4_K", 256, 144, 0, 2, 1};
    case GGUF_T_Q5_K: return (struct tinfo){"q5_K", 256, 176, 0, 2, 1};
    case GGUF_T_Q6_K: return (struct tinfo){"q6_K", 256, 210, 208, -1, 1};
    default: return (struct tinfo){"?", 0, 0, -1, -1, 0};
    }
}

/* xorshift64*, and a Gaussian from it (Box-Muller). */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}
static double uniform(void) { return ((double)(rng() >> 11) + 0.5) / 9007199254740992.0; }
static double gauss(void) { return sqrt(-2.0 * log(uniform())) * cos(6.283185307179586 * uniform()); }

/* The levels this CPU and build offer (gguf_simd_set() accepts them). */
static int level_ok[N_LEVELS];

static void find_levels(void)
{
    const int saved = gguf_simd_get();
    for (int l = 0; l < N_LEVELS; l++) level_ok[l] = gguf_simd_set(l) == GGUF_OK;
    if (gguf_simd_set(saved) != GGUF_OK) HARD_ERROR("cannot restore SIMD level %d", saved);
}

/* Dequantized activations: d * q per element (Q8_1's s is not an
 * element). */
static void dequant_act(uint32_t wtype, const void *act, float *out, int n)
{
    const uint32_t at = gq_dot_act_type(wtype);
    if (at == GGUF_T_Q8_K) {
        gq_dequant_q8_k(act, out, n);
    } else if (at == GGUF_T_Q8_0) {
        gq_dequant_q8_0(act, out, n);
    } else {
        const struct gq_block_q8_1 *b = act;
        for (int i = 0; i < n / 32; i++)
            for (int j = 0; j < 32; j++) out[32 * i + j] = gq_h2f(b[i].d) * (float)b[i].qs[j];
    }
}

/* A bound on |kernel - exact| for the kernel's rounding, the rounding
 * of the dequantized floats, and for Q4_1/Q5_1 the half rounding of s
 * (2^-11 relative, and the rounding of d * sum q before it): GQ_DOT_TOL(n)
 * times *mag, the sum over i of |a_i| times twice the largest |w| of i's
 * block (a weight d sc q - dmin mn, or d q + m, rounds relative to its
 * two terms, each at most that; the same sum bounds the kernels' block
 * terms), plus *extra for s. */
static double tol_ref(uint32_t t, const float *w, const float *a, const void *act, const void *wq,
                      int n, double *mag)
{
    const struct tinfo ti = info(t);
    double s = 0.0, extra = 0.0;
    for (int b = 0; b < n / ti.bs; b++) {
        double m = 0.0;
        for (int j = 0; j < ti.bs; j++) m = fmax(m, fabs(w[b * ti.bs + j]));
        for (int j = 0; j < ti.bs; j++) s += fabs(a[b * ti.bs + j]) * 2.0 * m;
    }
    if (gq_dot_act_type(t) == GGUF_T_Q8_1) {
        const struct gq_block_q8_1 *ab = act;
        const uint8_t *wb = wq;
        for (int b = 0; b < n / 32; b++) {
            uint16_t mh;
            memcpy(&mh, wb + b * ti.bytes + 2, 2);
            const double mabs = fabs(gq_h2f(mh));
            s += mabs * fabs(gq_h2f(ab[b].s));
            extra += mabs * fabs(gq_h2f(ab[b].s)) * (1.0 / 1024.0) +
                     mabs * fabs(gq_h2f(ab[b].d)) * 32.0 * 127.0 * (1.0 / 1024.0);
        }
    }
    *mag = s;
    return GQ_DOT_TOL(n) * s + extra + 1e-30;
}

/* Checks one weight row (quantized at wq, dequantized at w) against one
 * activation row made from x. */
static void check_row(uint32_t t, const void *wq, const float *w, const float *x, int n,
                      const char *what)
{
    const struct tinfo ti = info(t);
    const int64_t asz = gq_dot_act_size(t, n);
    REQUIRE(asz > 0, "%s: no activation size", ti.name);
    void *act = malloc((size_t)asz);
    float *a = malloc(sizeof(float) * (size_t)n);
    if (!act || !a) HARD_ERROR("out of memory");
    gq_dot_act_quant(t)(x, act, n);
    dequant_act(t, act, a, n);

    double ref = 0.0, mag = 0.0;
    for (int i = 0; i < n; i++) ref += (double)w[i] * (double)a[i];
    const float scalar = gq_dot_kernel_at(GGUF_SIMD_SCALAR, t)(n, wq, act);
    const double tol = tol_ref(t, w, a, act, wq, n, &mag);
    CHECK(fabs((double)scalar - ref) <= tol, "%s %s n=%d: scalar %.9g, double %.9g, tol %.3g",
          ti.name, what, n, scalar, ref, tol);

    for (int l = 1; l < N_LEVELS; l++) {
        if (!level_ok[l]) continue;
        const float v = gq_dot_kernel_at(l, t)(n, wq, act);
        if (ti.bit_exact) {
            CHECK(memcmp(&v, &scalar, sizeof v) == 0, "%s %s n=%d %s: %.9g, scalar %.9g",
                  ti.name, what, n, gguf_simd_name(l), v, scalar);
        } else {
            const double tl = GQ_DOT_TOL(n) * mag + 1e-30;
            CHECK(fabs((double)v - (double)scalar) <= tl, "%s %s n=%d %s: %.9g, scalar %.9g, tol %.3g",
                  ti.name, what, n, gguf_simd_name(l), v, scalar, tl);
        }
    }
    free(act);
    free(a);
}

/* Random raw blocks: every byte random, then the half scales set to
 * random finite values of either sign. */
static void random_blocks(uint32_t t, uint8_t *q, int nb)
{
    const struct tinfo ti = info(t);
    for (int i = 0; i < nb * ti.bytes; i++) q[i] = (uint8_t)rng();
    for (int b = 0; b < nb; b++) {
        const int offs[2] = {ti.h0, ti.h1};
        for (int k = 0; k < 2; k++) {
            if (offs[k] < 0) continue;
            const uint16_t h = gq_f2h((float)(gauss() * pow(2.0, -(double)(rng() % 12))));
            memcpy(q + b * ti.bytes + offs[k], &h, 2);
        }
    }
}

static void test_type(uint32_t t)
{
    const struct tinfo ti = info(t);
    static const int blocks[] = {1, 2, 3, 17, -1};
    for (int bi = 0; bi < (int)(sizeof blocks / sizeof blocks[0]); bi++) {
        const int n = blocks[bi] > 0 ? blocks[bi] * ti.bs : 4096;
        const int nb = n / ti.bs;
        float *src = malloc(sizeof(float) * (size_t)n);
        float *w = malloc(sizeof(float) * (size_t)n);
        float *x = malloc(sizeof(float) * (size_t)n);
        uint8_t *q = malloc((size_t)nb * (size_t)ti.bytes);
        if (!src || !w || !x || !q) HARD_ERROR("out of memory");
        for (int rep = 0; rep < 8; rep++) {
            const double ws = pow(10.0, -3.0 + 6.0 * uniform()), xs = pow(10.0, -3.0 + 6.0 * uniform());
            for (int i = 0; i < n; i++) {
                src[i] = (float)(gauss() * ws);
                x[i] = (float)(gauss() * xs);
            }
            if (rep == 1) x[rng() % (unsigned)n] *= 50.0f; /* an outlier */
            if (rep == 2)
                for (int i = 0; i < n; i++) src[i] = fabsf(src[i]) + (float)ws; /* one-signed */
            gq_quant_kernel_at(GGUF_SIMD_SCALAR, t)(src, q, n);
            gq_dequant_kernel_at(GGUF_SIMD_SCALAR, t)(q, w, n);
            check_row(t, q, w, x, n, "quantized");

            random_blocks(t, q, nb);
            gq_dequant_kernel_at(GGUF_SIMD_SCALAR, t)(q, w, n);
            check_row(t, q, w, x, n, "random");
        }
        /* all-zero activations give exactly zero */
        memset(x, 0, sizeof(float) * (size_t)n);
        void *act = malloc((size_t)gq_dot_act_size(t, n));
        if (!act) HARD_ERROR("out of memory");
        gq_dot_act_quant(t)(x, act, n);
        for (int l = 0; l < N_LEVELS; l++)
            if (level_ok[l]) CHECK(gq_dot_kernel_at(l, t)(n, q, act) == 0.0f, "%s zero", ti.name);
        free(act);
        free(src);
        free(w);
        free(x);
        free(q);
    }
}

static void test_pairs(void)
{
    for (size_t i = 0; i < N_TYPES; i++) {
        const uint32_t t = types[i];
        const uint32_t at = gq_dot_act_type(t);
        const uint32_t want = info(t).bs == 256 ? GGUF_T_Q8_K
                              : t == GGUF_T_Q4_1 || t == GGUF_T_Q5_1 ? GGUF_T_Q8_1 : GGUF_T_Q8_0;
        CHECK(at == want, "%s pairs with %u", info(t).name, (unsigned)at);
        CHECK(gq_dot_act_quant(t) != NULL, "%s has an activation quantizer", info(t).name);
        CHECK(gq_dot_kernel(t) == gq_dot_kernel_at(gguf_simd_get(), t), "%s dispatch", info(t).name);
        for (int l = 0; l < N_LEVELS; l++) CHECK(gq_dot_kernel_at(l, t) != NULL, "%s level %d", info(t).name, l);
    }
    CHECK(gq_dot_act_size(GGUF_T_Q4_K, 512) == 2 * 292, "Q8_K size");
    CHECK(gq_dot_act_size(GGUF_T_Q4_0, 64) == 2 * 34, "Q8_0 size");
    CHECK(gq_dot_act_size(GGUF_T_Q5_1, 64) == 2 * 36, "Q8_1 size");
    const uint32_t none[] = {GGUF_T_F32, GGUF_T_F16, GGUF_T_BF16, GGUF_T_Q8_K, GGUF_T_COUNT};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        CHECK(gq_dot_act_type(none[i]) == GGUF_T_COUNT, "type %u has no pair", (unsigned)none[i]);
        CHECK(gq_dot_act_quant(none[i]) == NULL, "type %u has no quantizer", (unsigned)none[i]);
        CHECK(gq_dot_act_size(none[i], 256) == 0, "type %u has no size", (unsigned)none[i]);
        CHECK(gq_dot_kernel(none[i]) == NULL, "type %u has no kernel", (unsigned)none[i]);
    }
    /* Q8_1 quantization: Q8_0's quants and scale, s = d * sum q */
    float x[64];
    for (int i = 0; i < 64; i++) x[i] = (float)gauss();
    struct gq_block_q8_1 b1[2];
    struct gq_block_q8_0 b0[2];
    gq_quant_q8_1(x, b1, 64);
    gq_quant_q8_0(x, b0, 64);
    for (int b = 0; b < 2; b++) {
        int sum = 0;
        for (int j = 0; j < 32; j++) sum += b1[b].qs[j];
        CHECK(b1[b].d == b0[b].d && memcmp(b1[b].qs, b0[b].qs, 32) == 0, "Q8_1 block %d = Q8_0", b);
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[32 * b + j]));
        CHECK(b1[b].s == gq_f2h((float)sum * (amax / 127.0f)), "Q8_1 block %d s", b);
    }
}

/* gguf_matmul() of nr rows of k weights (quantized Gaussian rows, or
 * random raw blocks) with nc activation columns, at every level, against
 * the scalar dot kernel per output; strides padded. */
/* gguf_matmul_il() and gguf_matmul_packed_il() on the rows of wq
 * (w_stride apart) interleaved, against out (o_stride apart), the plain
 * product of act at this level: the same bits, padding untouched; the
 * layout as quant.h draws it, and rows split between calls at a group. */
/* Whether row r's block b lies in the chunk c of its group of sixteen
 * interleaved rows of Q4_0, Q5_0 or Q8_0 as quant/dot.h (gq_il_chunk())
 * lays them out. */
static int il32_layout_ok(uint32_t t, const uint8_t *c, int r, const uint8_t *b)
{
    if (memcmp(c + 2 * r, b, 2) != 0) return 0; /* d */
    for (int e = 0; e < 32; e++) {
        int q, got;
        if (t == GGUF_T_Q8_0) {
            q = b[2 + e];
            got = c[32 + (e / 4) * 64 + 4 * r + e % 4] ^ 0x80;
        } else {
            const uint8_t *qs = b + (t == GGUF_T_Q5_0 ? 6 : 2);
            const uint8_t *v = c + (t == GGUF_T_Q5_0 ? 96 : 32);
            q = e < 16 ? qs[e] & 15 : qs[e - 16] >> 4;
            const int at = (e % 16 / 4) * 64 + 4 * r + e % 4;
            got = e < 16 ? v[at] & 15 : v[at] >> 4;
            if (t == GGUF_T_Q5_0) {
                const int bit = 4 * r + e % 4;
                q |= (b[2 + e / 8] >> (e % 8) & 1) << 4;
                got |= (c[32 + (e / 4) * 8 + bit / 8] >> (bit % 8) & 1) << 4;
            }
        }
        if (q != got) return 0;
    }
    return 1;
}

/* The same for Q4_K, Q5_K and Q6_K: the block's words transposed (Q6_K's
 * in the order its products read them), Q6_K's d after them. */
static int ilk_layout_ok(uint32_t t, const uint8_t *c, int r, const uint8_t *b)
{
    const int bb = t == GGUF_T_Q4_K ? 144 : t == GGUF_T_Q5_K ? 176 : 210, words = bb / 4;
    for (int j = 0; j < words; j++) {
        /* Q6_K: the scales (words 48-51) at vectors 0-3, then ql words
         * 16h + q, 16h + 8 + q and qh word 32 + 8h + q at vectors
         * 4 + 3(8h + q) + 0, 1, 2 */
        int at = j;
        if (t == GGUF_T_Q6_K && j < 32) at = 4 + 3 * (8 * (j / 16) + j % 8) + (j % 16 >= 8);
        if (t == GGUF_T_Q6_K && j >= 32 && j < 48) at = 4 + 3 * (8 * ((j - 32) / 8) + (j - 32) % 8) + 2;
        if (t == GGUF_T_Q6_K && j >= 48) at = j - 48;
        /* Q5_K: qs words 12-19 at vectors 4, 6, .., 18 and qh words 4-11
         * at 5, 7, .., 19 */
        if (t == GGUF_T_Q5_K && j >= 4 && j < 12) at = 5 + 2 * (j - 4);
        if (t == GGUF_T_Q5_K && j >= 12 && j < 20) at = 4 + 2 * (j - 12);
        if (memcmp(c + 64 * at + 4 * r, b + 4 * j, 4) != 0) return 0;
    }
    return bb % 4 == 0 || memcmp(c + 64 * words + 2 * r, b + bb - 2, 2) == 0;
}

static void check_il(uint32_t t, const uint8_t *wq, size_t w_stride, int nr, int k, const uint8_t *act,
                     size_t a_stride, int nc, const float *out, size_t o_stride, const void *pk)
{
    const struct tinfo ti = info(t);
    const size_t bb = (size_t)ti.bytes, rb = (size_t)(k / ti.bs) * bb;
    const int group = gguf_matmul_il_rows(t), nb = k / ti.bs, whole = nr - nr % group;
    uint8_t *plain = malloc(rb * (size_t)nr + 1), *il = malloc(rb * (size_t)nr + 1);
    float *o = malloc(sizeof(float) * o_stride * (size_t)(nc ? nc : 1));
    if (!plain || !il || !o) HARD_ERROR("out of memory");
    for (int r = 0; r < nr; r++) memcpy(plain + (size_t)r * rb, wq + (size_t)r * w_stride, rb);
    CHECK(gguf_interleave_rows(t, plain, il, nr, k) == GGUF_OK, "%s interleave", ti.name);
    for (int r = 0; r < nr; r++)
        for (int i = 0; i < nb; i++) {
            const uint8_t *b = plain + (size_t)r * rb + (size_t)i * bb;
            if (r >= whole) { /* the rows past the last group: plain */
                CHECK(memcmp(il + (size_t)r * rb + (size_t)i * bb, b, bb) == 0,
                      "%s interleaved %d rows: row %d block %d misplaced", ti.name, nr, r, i);
                continue;
            }
            CHECK((t == GGUF_T_Q4_K || t == GGUF_T_Q5_K || t == GGUF_T_Q6_K ? ilk_layout_ok : il32_layout_ok)(
                      t, il + (size_t)(r / 16) * 16 * rb + (size_t)i * 16 * bb, r % 16, b),
                  "%s interleaved %d rows: row %d block %d misplaced", ti.name, nr, r, i);
        }
    for (int r = 0; r < nr; r++)
        CHECK(memcmp(plain + (size_t)r * rb, wq + (size_t)r * w_stride, rb) == 0, "%s interleave wrote its input",
              ti.name);
    for (int pass = 0; pass < 2 + (pk != NULL); pass++) {
        for (size_t i = 0; i < o_stride * (size_t)nc; i++) o[i] = -12345.0f;
        /* pass 0: one call; 1: the rows in two calls split at a group
         * boundary (the second runs to the end); 2: on packed input */
        const int split = pass == 1 ? whole / (2 * group) * group : 0;
        if (split)
            CHECK(gguf_matmul_il(t, il, rb, split, k, act, a_stride, nc, o, o_stride) == GGUF_OK, "%s il",
                  ti.name);
        const int st = pass == 2 ? gguf_matmul_packed_il(t, il + (size_t)split * rb, rb, nr - split, k, pk, nc, o,
                                                         o_stride)
                                 : gguf_matmul_il(t, il + (size_t)split * rb, rb, nr - split, k, act, a_stride,
                                                  nc, o + split, o_stride);
        CHECK(st == GGUF_OK, "%s il products", ti.name);
        CHECK(memcmp(o, out, sizeof(float) * o_stride * (size_t)nc) == 0,
              "%s interleaved %dx%d, %d columns, %s%s: not the bits of plain rows", ti.name, nr, k, nc,
              gguf_simd_name(gguf_simd_get()), pass == 1 ? ", split" : pass == 2 ? ", packed" : "");
    }
    free(plain);
    free(il);
    free(o);
}

static void check_matmul(uint32_t t, int nr, int k, int nc, int raw)
{
    const struct tinfo ti = info(t);
    const size_t row_bytes = (size_t)(k / ti.bs) * (size_t)ti.bytes, w_stride = row_bytes + 16;
    const size_t asz = gguf_matmul_act_size(t, k), a_stride = asz + 40, o_stride = (size_t)nr + 3;
    uint8_t *wq = calloc((size_t)nr, w_stride), *act = calloc((size_t)nc, a_stride);
    float *src = malloc(sizeof(float) * (size_t)k), *w = malloc(sizeof(float) * (size_t)k);
    float *a = malloc(sizeof(float) * (size_t)k * (size_t)nc);
    float *out = malloc(sizeof(float) * o_stride * (size_t)nc);
    if (!wq || !act || !src || !w || !a || !out) HARD_ERROR("out of memory");
    REQUIRE(asz == (size_t)gq_dot_act_size(t, k), "%s act size %zu", ti.name, asz);
    for (int r = 0; r < nr; r++) {
        if (raw) {
            random_blocks(t, wq + (size_t)r * w_stride, k / ti.bs);
            /* Q6_K's scales take every byte in turn (the tile products
             * write each in three signed digits) */
            for (int b = 0; t == GGUF_T_Q6_K && b < k / ti.bs; b++) {
                struct gq_block_q6_k *blk = (struct gq_block_q6_k *)(wq + (size_t)r * w_stride) + b;
                for (int j = 0; j < 16; j++) blk->scales[j] = (int8_t)(uint8_t)((r * (k / ti.bs) + b) * 16 + j);
            }
        } else {
            const double ws = pow(10.0, -2.0 + 4.0 * uniform());
            for (int i = 0; i < k; i++) src[i] = (float)(gauss() * ws);
            REQUIRE(gguf_quantize_row(t, src, wq + (size_t)r * w_stride, k) == GGUF_OK, "quantize");
        }
    }
    for (int c = 0; c < nc; c++) {
        const double xs = pow(10.0, -2.0 + 4.0 * uniform());
        for (int i = 0; i < k; i++) src[i] = (float)(gauss() * xs);
        REQUIRE(gguf_matmul_quantize(t, src, act + (size_t)c * a_stride, k) == GGUF_OK, "act");
        dequant_act(t, act + (size_t)c * a_stride, a + (size_t)c * (size_t)k, k);
    }
    const int saved = gguf_simd_get();
    /* Q4_0, Q5_0 and Q8_0: every SIMD level takes the same float steps
     * (legacy_block_step()), so the first one's bits are all of theirs */
    const int same_bits = t == GGUF_T_Q4_0 || t == GGUF_T_Q5_0 || t == GGUF_T_Q8_0;
    float *first = NULL;
    for (int l = 0; l < N_LEVELS; l++) {
        if (!level_ok[l]) continue;
        REQUIRE(gguf_simd_set(l) == GGUF_OK, "set level %d", l);
        for (size_t i = 0; i < o_stride * (size_t)nc; i++) out[i] = -12345.0f;
        CHECK(gguf_matmul(t, wq, w_stride, nr, k, act, a_stride, nc, out, o_stride) == GGUF_OK,
              "%s matmul", ti.name);
        if (same_bits && l > GGUF_SIMD_SCALAR) {
            if (!first) {
                first = malloc(sizeof(float) * o_stride * (size_t)nc);
                if (!first) HARD_ERROR("out of memory");
                memcpy(first, out, sizeof(float) * o_stride * (size_t)nc);
            } else {
                CHECK(memcmp(first, out, sizeof(float) * o_stride * (size_t)nc) == 0,
                      "%s matmul %dx%d, %d columns, %s: not the bits of the first SIMD level", ti.name, nr, k, nc,
                      gguf_simd_name(l));
            }
        }
        for (int r = 0; r < nr; r++) {
            const uint8_t *row = wq + (size_t)r * w_stride;
            gq_dequant_kernel_at(GGUF_SIMD_SCALAR, t)(row, w, k);
            for (int c = 0; c < nc; c++) {
                const uint8_t *ac = act + (size_t)c * a_stride;
                const float ref = gq_dot_kernel_at(GGUF_SIMD_SCALAR, t)(k, row, ac);
                double mag;
                tol_ref(t, w, a + (size_t)c * (size_t)k, ac, row, k, &mag);
                const double tl = GQ_DOT_TOL(k) * mag + 1e-30;
                const float v = out[(size_t)c * o_stride + (size_t)r];
                /* the K-quants with 8-bit activations keep the scalar bits */
                if (t == GGUF_T_Q4_K || t == GGUF_T_Q5_K || t == GGUF_T_Q6_K)
                    CHECK(memcmp(&v, &ref, sizeof v) == 0,
                          "%s matmul %dx%d, %d columns, %s: [%d,%d] %.9g, scalar %.9g: not the same bits",
                          ti.name, nr, k, nc, gguf_simd_name(l), r, c, v, ref);
                CHECK(fabs((double)v - (double)ref) <= tl,
                      "%s matmul %s %dx%d, %d columns, %s: [%d,%d] %.9g, scalar %.9g, tol %.3g",
                      ti.name, raw ? "random" : "quantized", nr, k, nc, gguf_simd_name(l), r, c, v,
                      ref, tl);
            }
        }
        /* the same product on activations packed once (in two shares of
         * panels, as threads pack them): the same bits */
        const size_t psz = gguf_matmul_pack_size(t, k, nc);
        const int64_t np = ((int64_t)nc + 15) / 16;
        if (psz) {
            void *pk = aligned_alloc(64, (psz + 63) / 64 * 64);
            float *o2 = malloc(sizeof(float) * o_stride * (size_t)nc);
            if (!pk || !o2) HARD_ERROR("out of memory");
            CHECK(gguf_matmul_pack(t, act, a_stride, k, nc, 0, np / 2, pk) == GGUF_OK &&
                      gguf_matmul_pack(t, act, a_stride, k, nc, np / 2, np, pk) == GGUF_OK,
                  "%s pack", ti.name);
            for (size_t i = 0; i < o_stride * (size_t)nc; i++) o2[i] = -12345.0f;
            CHECK(gguf_matmul_packed(t, wq, w_stride, nr, k, pk, nc, o2, o_stride) == GGUF_OK,
                  "%s packed", ti.name);
            CHECK(memcmp(o2, out, sizeof(float) * o_stride * (size_t)nc) == 0,
                  "%s packed %dx%d, %d columns, %s: not the bits of gguf_matmul()", ti.name, nr, k,
                  nc, gguf_simd_name(l));
            CHECK(gguf_matmul_pack(t, act, a_stride, k, nc, 0, np + 1, pk) == GGUF_E_INVALID,
                  "%s pack past the panels", ti.name);
            CHECK(gguf_matmul_packed(t, wq, w_stride, nr, k, (uint8_t *)pk + 8, nc, o2, o_stride) ==
                      GGUF_E_INVALID, "%s packed misaligned", ti.name);
            free(pk);
            free(o2);
        } else {
            /* only Q4_K, Q5_K and Q6_K have it from avx2: at the VNNI and
             * AMX levels from GQ_PANEL_MIN columns, elsewhere from
             * GQ_KPACK_MIN */
            const int kq = t == GGUF_T_Q4_K || t == GGUF_T_Q5_K || t == GGUF_T_Q6_K;
            const int vnni_here = l >= GGUF_SIMD_AVX512 && __builtin_cpu_supports("avx512vnni");
            CHECK(!kq || l < GGUF_SIMD_AVX2 || nc < (vnni_here ? GQ_PANEL_MIN : GQ_KPACK_MIN),
                  "%s at %s, %d columns: no packed products", ti.name, gguf_simd_name(l), nc);
            CHECK(gguf_matmul_packed(t, wq, w_stride, nr, k, out, nc, out, o_stride) ==
                      GGUF_E_UNSUPPORTED, "%s packed without a packed form", ti.name);
        }
        /* interleaved rows: Q4_K, Q5_K, Q6_K, Q4_0, Q5_0 and Q8_0 in groups
         * of sixteen, at every level from avx2 */
        const int k_quant = t == GGUF_T_Q4_K || t == GGUF_T_Q5_K || t == GGUF_T_Q6_K;
        const int q32 = t == GGUF_T_Q4_0 || t == GGUF_T_Q5_0 || t == GGUF_T_Q8_0;
        const int vnni = l >= GGUF_SIMD_AVX512 && __builtin_cpu_supports("avx512vnni");
        const int il_here = ((k_quant || q32) && vnni) || ((k_quant || q32) && l >= GGUF_SIMD_AVX2);
        CHECK(gguf_matmul_il_rows(t) == (il_here ? 16 : 0), "%s at %s: interleaved rows %d", ti.name,
              gguf_simd_name(l), gguf_matmul_il_rows(t));
        if (il_here) {
            /* packed input: Q4_0, Q5_0 and Q8_0's, at the amx level the
             * K-quants' from the columns where the tiles' block products
             * pay (quant.h: 49 for Q4_K and Q5_K, 33 for Q6_K), and
             * without VNNI the K-quants' from GQ_KPACK_MIN */
            const int k_packed = (l == GGUF_SIMD_AMX && nc >= (t == GGUF_T_Q6_K ? 33 : 49)) ||
                                 (k_quant && !vnni && nc >= GQ_KPACK_MIN);
            const size_t psz_il = gguf_matmul_pack_size_il(t, k, nc);
            void *pk = NULL;
            /* Q4_0, Q5_0 and Q8_0 below the amx level from GQ_IL32_PACK_MIN */
            const int q32_packed = q32 && (l == GGUF_SIMD_AMX || nc >= GQ_IL32_PACK_MIN);
            CHECK(psz_il == (q32_packed || k_packed ? psz : 0), "%s at %s: packed size %zu on interleaved rows",
                  ti.name, gguf_simd_name(l), psz_il);
            if (psz_il) {
                pk = aligned_alloc(64, (psz_il + 63) / 64 * 64);
                if (!pk) HARD_ERROR("out of memory");
                CHECK(gguf_matmul_pack(t, act, a_stride, k, nc, 0, np, pk) == GGUF_OK, "%s pack", ti.name);
            } else if (psz) {
                CHECK(gguf_matmul_packed_il(t, wq, w_stride, nr, k, out, nc, out, o_stride) == GGUF_E_UNSUPPORTED,
                      "%s at %s: packed products on interleaved rows", ti.name, gguf_simd_name(l));
            }
            check_il(t, wq, w_stride, nr, k, act, a_stride, nc, out, o_stride, pk);
            free(pk);
        } else {
            CHECK(gguf_matmul_il(t, wq, w_stride, nr, k, act, a_stride, nc, out, o_stride) == GGUF_E_UNSUPPORTED &&
                      gguf_interleave_rows(t, wq, out, nr, k) == GGUF_E_UNSUPPORTED &&
                      gguf_matmul_pack_size_il(t, k, nc) == 0,
                  "%s at %s: interleaved products without the layout", ti.name, gguf_simd_name(l));
        }
        /* each column alone gives the bits it has among the others */
        float *one = malloc(sizeof(float) * (size_t)(nr ? nr : 1));
        if (!one) HARD_ERROR("out of memory");
        for (int c = 0; c < nc && nr > 0; c++) {
            CHECK(gguf_matmul(t, wq, w_stride, nr, k, act + (size_t)c * a_stride, a_stride, 1, one,
                              (size_t)nr) == GGUF_OK, "%s matmul", ti.name);
            CHECK(memcmp(one, out + (size_t)c * o_stride, sizeof(float) * (size_t)nr) == 0,
                  "%s matmul %dx%d, %s: column %d of %d differs from the column alone", ti.name, nr,
                  k, gguf_simd_name(l), c, nc);
        }
        free(one);
        /* the padding between columns of out is not written */
        for (int c = 0; c < nc; c++)
            for (size_t i = (size_t)nr; i < o_stride; i++)
                CHECK(out[(size_t)c * o_stride + i] == -12345.0f, "%s matmul wrote padding", ti.name);
    }
    if (gguf_simd_set(saved) != GGUF_OK) HARD_ERROR("cannot restore SIMD level %d", saved);
    free(first);
    free(wq);
    free(act);
    free(src);
    free(w);
    free(a);
    free(out);
}

static void test_matmul(void)
{
    static const int ncols[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17};
    for (size_t i = 0; i < N_TYPES; i++) {
        const uint32_t t = types[i];
        const int bs = info(t).bs;
        for (size_t j = 0; j < sizeof ncols / sizeof ncols[0]; j++) {
            check_matmul(t, 21, 6 * bs, ncols[j], 0);
            check_matmul(t, 5, 2 * bs, ncols[j], 1);
        }
        check_matmul(t, 33, 1536 / bs * bs, 4, 0);
        /* rows of more than 512 blocks; at avx2, more than IL2W_ACT / 4 (the
         * products of many columns that unpack a group once fall back) */
        if (bs == 32) check_matmul(t, 19, 1100 * 32, 9, 0);
        /* avx2, many columns: groups, runs of their blocks unpacked, and a
         * partial last four columns; runs of four columns (IL2W_ACT) */
        if (bs == 32) check_matmul(t, 50, 40 * 32, 23, 0);
        /* with VNNI, packed input from GQ_IL32_PACK_MIN: two whole panels
         * and one of 13 columns (four at a time, then one) */
        if (bs == 32) check_matmul(t, 50, 40 * 32, 45, 0);
        if (bs == 32) check_matmul(t, 17, 1000 * 32, 9, 0);
        /* panels of 16 columns and a partial one, activations repacked in
         * chunks of blocks, more rows than one pass takes */
        if (bs == 256) check_matmul(t, 261, 20 * bs, 17, 0);
        /* AMX's block products: an odd number of panels (the last alone),
         * more columns than one group of panels, rows past whole tiles */
        if (bs == 256) check_matmul(t, 48, 3 * bs, 40, 0);
        if (bs == 256) check_matmul(t, 37, 2 * bs, 140, 0);
        if (bs == 256) check_matmul(t, 37, 2 * bs, 140, 1);
        /* more blocks than one pass of the block products takes */
        if (bs == 256) check_matmul(t, 40, 14 * bs, 70, 0);
        /* rows too long for the avx2 level's plain copy of a group (1 MiB) */
        if (bs == 256) check_matmul(t, 21, 520 * bs, 3, 1);
        check_matmul(t, 0, bs, 4, 0); /* no rows: nothing to do */
        check_matmul(t, 3, bs, 0, 0); /* no columns */
        CHECK(gguf_matmul_act_type(t) == gq_dot_act_type(t), "%s act type", info(t).name);
    }
    /* argument checks */
    uint8_t buf[1024] = {0};
    float out[8];
    CHECK(gguf_matmul_act_type(GGUF_T_F16) == GGUF_T_COUNT, "F16 has no act type");
    CHECK(gguf_matmul_act_size(GGUF_T_F16, 256) == 0, "F16 act size");
    CHECK(gguf_matmul_act_size(GGUF_T_Q4_K, 255) == 0, "act size of a partial block");
    CHECK(gguf_matmul_act_size(GGUF_T_Q4_K, 0) == 0, "act size of nothing");
    CHECK(gguf_matmul_act_size(GGUF_T_Q4_0, 64) == 68, "Q8_0 act size");
    CHECK(gguf_matmul_act_size(GGUF_T_Q4_K, INT64_MAX / 256 * 256) == 0, "act size overflow");
    CHECK(gguf_matmul_act_size(GGUF_T_Q8_0, INT64_MAX / 32 * 32) == 0, "Q8_0 act size overflow");
    CHECK(gguf_matmul(GGUF_T_F16, buf, 0, 1, 256, buf, 0, 1, out, 1) == GGUF_E_UNSUPPORTED, "F16");
    CHECK(gguf_matmul(GGUF_T_Q4_K, buf, 0, 1, 100, buf, 0, 1, out, 1) == GGUF_E_INVALID, "k 100");
    CHECK(gguf_matmul(GGUF_T_Q4_K, NULL, 0, 1, 256, buf, 0, 1, out, 1) == GGUF_E_INVALID, "NULL w");
    CHECK(gguf_matmul(GGUF_T_Q4_K, buf, 0, -1, 256, buf, 0, 1, out, 1) == GGUF_E_INVALID, "rows -1");
    CHECK(gguf_matmul_quantize(GGUF_T_Q4_K, (const float *)buf, buf, 32) == GGUF_E_INVALID, "n 32");
    CHECK(gguf_matmul_quantize(GGUF_T_BF16, (const float *)buf, buf, 256) == GGUF_E_UNSUPPORTED, "BF16");
}

/* Seconds of a monotonic clock. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* gguf_matmul() on a 4096 x 4096 matrix, single thread, per level, best
 * of 3: GB/s of weights with one column, and integer multiply-adds per
 * second (G/s) with 64 columns. */
static int bench_matmul(void)
{
    enum { R = 4096, C = 4096, NC = 64 };
    float *x = malloc(sizeof(float) * C), *y = malloc(sizeof(float) * R * NC);
    if (!x || !y) HARD_ERROR("out of memory");
    printf("\n%-6s %10s", "matmul", "MiB");
    for (int l = 0; l < N_LEVELS; l++)
        if (level_ok[l]) printf(" %8s %8s", gguf_simd_name(l), "");
    printf("   (GB/s 1 column, GMAC/s %d columns, 1 thread)\n", NC);
    const int saved = gguf_simd_get();
    for (size_t ti = 0; ti < N_TYPES; ti++) {
        const uint32_t t = types[ti];
        const struct tinfo inf = info(t);
        const size_t row_bytes = (size_t)(C / inf.bs) * (size_t)inf.bytes;
        const size_t asz = gguf_matmul_act_size(t, C);
        uint8_t *m = malloc(row_bytes * R), *act = malloc(asz * NC);
        if (!m || !act) HARD_ERROR("out of memory");
        for (int r = 0; r < R; r++) {
            for (int i = 0; i < C; i++) x[i] = (float)gauss();
            gguf_quantize_row(t, x, m + r * row_bytes, C);
        }
        for (int c = 0; c < NC; c++) {
            for (int i = 0; i < C; i++) x[i] = (float)gauss();
            gguf_matmul_quantize(t, x, act + c * asz, C);
        }
        printf("%-6s %10.1f", inf.name, (double)(row_bytes * R) / 1048576.0);
        for (int l = 0; l < N_LEVELS; l++) {
            if (!level_ok[l]) continue;
            gguf_simd_set(l);
            double best1 = 1e30, bestn = 1e30;
            for (int rep = 0; rep < 3; rep++) {
                double t0 = now();
                gguf_matmul(t, m, row_bytes, R, C, act, asz, 1, y, R);
                best1 = fmin(best1, now() - t0);
                t0 = now();
                gguf_matmul(t, m, row_bytes, R, C, act, asz, NC, y, R);
                bestn = fmin(bestn, now() - t0);
            }
            printf(" %8.2f %8.1f", (double)(row_bytes * R) / best1 / 1e9,
                   (double)R * C * NC / bestn / 1e9);
        }
        printf("\n");
        free(m);
        free(act);
    }
    gguf_simd_set(saved);
    free(x);
    free(y);
    return 0;
}

/* GB/s of weight bytes through each kernel on a 4096 x 4096 matrix-vector
 * product, single thread, per level: the best of 5 runs. */
static int bench(void)
{
    enum { R = 4096, C = 4096 };
    float *x = malloc(sizeof(float) * C), *row = malloc(sizeof(float) * C), *y = malloc(sizeof(float) * R);
    if (!x || !row || !y) HARD_ERROR("out of memory");
    for (int i = 0; i < C; i++) x[i] = (float)gauss();
    printf("%-6s %10s", "type", "MiB");
    for (int l = 0; l < N_LEVELS; l++)
        if (level_ok[l]) printf(" %8s", gguf_simd_name(l));
    printf("   (GB/s of weights, 1 thread, %dx%d)\n", R, C);
    for (size_t ti = 0; ti < N_TYPES; ti++) {
        const uint32_t t = types[ti];
        const struct tinfo inf = info(t);
        const size_t row_bytes = (size_t)(C / inf.bs) * (size_t)inf.bytes;
        uint8_t *m = malloc(row_bytes * R);
        void *act = malloc((size_t)gq_dot_act_size(t, C));
        if (!m || !act) HARD_ERROR("out of memory");
        for (int r = 0; r < R; r++) {
            for (int i = 0; i < C; i++) row[i] = (float)gauss();
            gq_quant_kernel(t)(row, m + r * row_bytes, C);
        }
        gq_dot_act_quant(t)(x, act, C);
        printf("%-6s %10.1f", inf.name, (double)(row_bytes * R) / 1048576.0);
        for (int l = 0; l < N_LEVELS; l++) {
            if (!level_ok[l]) continue;
            const gq_dot_fn f = gq_dot_kernel_at(l, t);
            double best = 1e30;
            for (int rep = 0; rep < 5; rep++) {
                const double t0 = now();
                for (int r = 0; r < R; r++) y[r] = f(C, m + r * row_bytes, act);
                best = fmin(best, now() - t0);
            }
            printf(" %8.2f", (double)(row_bytes * R) / best / 1e9);
        }
        printf("\n");
        free(m);
        free(act);
    }
    free(x);
    free(row);
    free(y);
    return bench_matmul();
}

#ifdef TEST_AMX_EMULATED
/* A tile configuration (64 bytes, aligned as ldtilecfg wants it) of
 * tiles 0, 1, 2 with these rows and bytes a row. */
static void tile_config(uint8_t *cfg, const int rows[3], const int colsb[3])
{
    memset(cfg, 0, 64);
    cfg[0] = 1; /* palette */
    for (int t = 0; t < 3; t++) {
        cfg[16 + 2 * t] = (uint8_t)colsb[t];
        cfg[48 + t] = (uint8_t)rows[t];
    }
}

/* The emulated tile products: the four signednesses against sums of
 * bytes on tiles of 16 x 48 by 12 x 48, and tdpbusd on full tiles against
 * vpdpbusd (a row of the first tile times the columns of the second, each
 * four bytes deep): the operands in the roles and with the signs the
 * instructions give them. */
__attribute__((target("avx512f,avx512vnni"))) static void test_emulator(void)
{
    uint8_t cfg[64] __attribute__((aligned(64)));
    uint8_t a[16][64], b[16][64];
    int32_t c[16][16];
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 64; j++) {
            a[i][j] = (uint8_t)(rng() >> 56);
            b[i][j] = (uint8_t)(rng() >> 56);
        }
    tile_config(cfg, (const int[]){16, 12, 16}, (const int[]){48, 48, 48});
    for (int s1 = 0; s1 < 2; s1++)
        for (int s2 = 0; s2 < 2; s2++) {
            _tile_loadconfig(cfg);
            _tile_loadd(0, a, 64); /* 16 rows of 48 of the 64 bytes */
            _tile_loadd(1, b, 64);
            _tile_zero(2);
            if (s1 && s2) _tile_dpbssd(2, 0, 1);
            if (s1 && !s2) _tile_dpbsud(2, 0, 1);
            if (!s1 && s2) _tile_dpbusd(2, 0, 1);
            if (!s1 && !s2) _tile_dpbuud(2, 0, 1);
            _tile_stored(2, c, 64);
            _tile_release();
            for (int i = 0; i < 16; i++)
                for (int j = 0; j < 12; j++) {
                    int64_t sum = 0;
                    for (int q = 0; q < 12; q++)
                        for (int e = 0; e < 4; e++)
                            sum += (int64_t)(s1 ? (int8_t)a[i][4 * q + e] : a[i][4 * q + e]) *
                                   (s2 ? (int8_t)b[q][4 * j + e] : b[q][4 * j + e]);
                    CHECK(c[i][j] == (int32_t)sum, "emulated tile product (signed %d, %d) [%d,%d] %d, want %lld",
                          s1, s2, i, j, c[i][j], (long long)sum);
                }
        }
    tile_config(cfg, (const int[]){16, 16, 16}, (const int[]){64, 64, 64});
    _tile_loadconfig(cfg);
    _tile_loadd(0, a, 64);
    _tile_loadd(1, b, 64);
    _tile_zero(2);
    _tile_dpbusd(2, 0, 1);
    _tile_stored(2, c, 64);
    _tile_release();
    for (int i = 0; i < 16; i++) {
        __m512i acc = _mm512_setzero_si512();
        for (int q = 0; q < 16; q++) {
            int32_t quad;
            memcpy(&quad, a[i] + 4 * q, 4);
            acc = _mm512_dpbusd_epi32(acc, _mm512_set1_epi32(quad), _mm512_loadu_si512(b[q]));
        }
        int32_t got[16];
        _mm512_storeu_si512(got, acc);
        CHECK(memcmp(got, c[i], sizeof got) == 0, "emulated tdpbusd row %d: not vpdpbusd's sums", i);
    }
}
#endif

int main(int argc, char **argv)
{
#ifdef TEST_AMX_EMULATED
    /* the amx level here is the emulated one, which needs VNNI */
    if (!__builtin_cpu_supports("avx512vnni")) {
        fprintf(stderr, "skip: no AVX-512 VNNI here, which the amx level's kernels use beside the tiles\n");
        return 77;
    }
    test_emulator();
#endif
    find_levels();
#ifdef TEST_AMX_EMULATED
    REQUIRE(level_ok[GGUF_SIMD_AMX], "the emulated amx level is not offered");
#endif
    if (argc > 1 && strcmp(argv[1], "--bench") == 0) return bench();
    test_pairs();
    for (size_t i = 0; i < N_TYPES; i++) test_type(types[i]);
    test_matmul();
    int simd = 0;
    for (int l = 1; l < N_LEVELS; l++) simd += level_ok[l];
    if (!simd) fprintf(stderr, "note: no SIMD level here; only the scalar kernels were checked\n");
#if defined(__x86_64__) || defined(__i386__)
    if (level_ok[GGUF_SIMD_AVX512])
        fprintf(stderr, "note: avx512 matrix products %s\n",
                __builtin_cpu_supports("avx512vnni") ? "use the VNNI kernels"
                                                     : "use the AVX2 kernels (no VNNI here)");
    fprintf(stderr, "note: %s\n",
            level_ok[GGUF_SIMD_AMX] ?
#ifdef TEST_AMX_EMULATED
                                    "the amx level's products were checked, their tile instructions done in C"
#else
                                    "the amx level's products (AMX int8 tiles) were checked"
#endif
                                    : "no amx level here (CPU, build or kernel): its products were not checked");
#endif
    tu_finish();
    return 0;
}
