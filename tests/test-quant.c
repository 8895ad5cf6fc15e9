/* test-quant.c -- the row API of <gguf/quant.h> beyond the known answers:
 *  - half and bfloat16 conversions, exhaustively where the domain is 16
 *    bits and on millions of random floats against a simple reference;
 *  - block struct sizes against the type table;
 *  - round-trip error (RMSE relative to the row's RMS) per type on
 *    Gaussian rows, under a bound per type;
 *  - multi-row functions: the same bytes for 1, 2 and 3 threads and as the
 *    single-row calls; gguf_convert_rows() equal to dequantize + quantize;
 *  - argument checks and their statuses;
 *  - rows of zeros, constants, tiny and huge magnitudes: no NaN or
 *    infinity where the format can hold the values;
 *  - the SIMD level selection.
 * Prints the measured RMSE per type. */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "tests/testutil.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng_next(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static double rng_unit(void)
{
    return ((double)(rng_next() >> 11) + 0.5) * 0x1p-53;
}

static float rng_gauss(void)
{
    return (float)(sqrt(-2.0 * log(rng_unit())) * cos(6.283185307179586 * rng_unit()));
}

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) HARD_ERROR("out of memory (%zu bytes)", n);
    return p;
}

/* The types under test. */
static const uint32_t quant_types[] = {
    GGUF_T_F32, GGUF_T_F16, GGUF_T_BF16, GGUF_T_Q4_0, GGUF_T_Q4_1, GGUF_T_Q5_0, GGUF_T_Q5_1,
    GGUF_T_Q8_0, GGUF_T_Q2_K, GGUF_T_Q3_K, GGUF_T_Q4_K, GGUF_T_Q5_K, GGUF_T_Q6_K, GGUF_T_Q8_K,
};
#define N_TYPES (sizeof quant_types / sizeof quant_types[0])

/* ------------------------------------------------------------------------ */
/* Half and bfloat16                                                         */

/* The value of half h, computed the obvious way in double. */
static double half_value(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0x1f) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp(m, -24);
    else v = ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

/* Nearest half to finite f, ties to the even one, by binary search over
 * the ordered positive halves; infinity from 65520 up. */
static uint16_t half_reference(float f)
{
    uint16_t sign = f < 0 || (f == 0 && signbit(f)) ? 0x8000 : 0;
    double a = fabs((double)f);
    if (a >= 65520.0) return sign | 0x7c00;
    uint16_t lo = 0, hi = 0x7bff;   /* largest finite */
    if (a >= half_value(hi)) return sign | hi;
    while (hi - lo > 1) {           /* half_value(lo) <= a < half_value(hi) */
        uint16_t mid = (uint16_t)((lo + hi) / 2);
        if (half_value(mid) <= a) lo = mid;
        else hi = mid;
    }
    double dl = a - half_value(lo), dh = half_value(hi) - a;
    uint16_t r = dl < dh ? lo : dh < dl ? hi : (lo & 1) ? hi : lo;
    return sign | r;
}

/* Nearest bfloat16 to finite f, ties to even. */
static uint16_t bf16_reference(float f)
{
    uint32_t u = f2u(f);
    uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
    double dl = fabs((double)f - (double)u2f(lo));
    double dh = (hi & 0x7f800000u) == 0x7f800000u && (hi & 0x7fffffu) == 0
                    ? INFINITY : fabs((double)u2f(hi) - (double)f);
    /* the distance to infinity: as if one more binade step beyond the max */
    if (isinf(dh)) dh = fabs(ldexp(1.0, 128) - fabs((double)f));
    uint32_t r = dl < dh ? lo : dh < dl ? hi : ((lo >> 16) & 1) ? hi : lo;
    return (uint16_t)(r >> 16);
}

static void test_half(void)
{
    int bad = 0;
    /* Every half: exact value, and back to the same bits (NaN stays NaN). */
    for (uint32_t h = 0; h < 65536; h++) {
        float f = gguf_fp16_to_fp32((uint16_t)h);
        double v = half_value((uint16_t)h);
        if (isnan(v)) {
            uint16_t back = gguf_fp32_to_fp16(f);
            if (!isnan(f) || (back & 0x7fff) != 0x7e00 || (back & 0x8000) != (h & 0x8000)) bad++;
        } else if ((double)f != v || !signbit(f) != !signbit(v) ||
                   gguf_fp32_to_fp16(f) != (uint16_t)h) {
            if (bad++ < 5) fprintf(stderr, "half 0x%04x: %.9g\n", h, f);
        }
    }
    CHECK(bad == 0, "%d halves do not convert exactly or round-trip", bad);

    /* Every midpoint between neighbouring positive halves: ties to even. */
    bad = 0;
    for (uint32_t h = 0; h < 0x7bff; h++) {
        float mid = (float)((half_value((uint16_t)h) + half_value((uint16_t)(h + 1))) / 2);
        uint16_t want = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        if (gguf_fp32_to_fp16(mid) != want || gguf_fp32_to_fp16(-mid) != (want | 0x8000)) bad++;
    }
    CHECK(bad == 0, "%d half midpoints not rounded to even", bad);

    /* Random floats: random bit patterns and random values near the half
     * range, against the binary-search reference. */
    bad = 0;
    for (int i = 0; i < 2000000; i++) {
        float f = i & 1 ? u2f((uint32_t)rng_next())
                        : (float)ldexp(rng_unit() * 2 - 1, (int)(rng_next() % 48) - 30);
        if (isnan(f)) continue;
        uint16_t got = gguf_fp32_to_fp16(f), want = half_reference(f);
        if (got != want && bad++ < 5)
            fprintf(stderr, "fp16(%a) = 0x%04x, want 0x%04x\n", (double)f, got, want);
    }
    CHECK(bad == 0, "%d random floats convert to the wrong half", bad);
    CHECK(gguf_fp32_to_fp16(NAN) == 0x7e00 || gguf_fp32_to_fp16(NAN) == 0xfe00, "NaN to half");
    CHECK(gguf_fp32_to_fp16(INFINITY) == 0x7c00 && gguf_fp32_to_fp16(-INFINITY) == 0xfc00,
          "infinities to half");
    CHECK(gguf_fp32_to_fp16(65519.99f) == 0x7bff && gguf_fp32_to_fp16(65520.0f) == 0x7c00,
          "half overflow threshold");
}

static void test_bf16(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = gguf_bf16_to_fp32((uint16_t)h);
        if (f2u(f) != h << 16) bad++;
        else if (!isnan(f) && gguf_fp32_to_bf16(f) != h) bad++;
        else if (isnan(f) && (!isnan(gguf_bf16_to_fp32(gguf_fp32_to_bf16(f))))) bad++;
    }
    CHECK(bad == 0, "%d bfloat16 values do not round-trip", bad);

    bad = 0;
    for (int i = 0; i < 2000000; i++) {
        uint32_t u = (uint32_t)rng_next();
        if (i % 4 == 0) u = (u & 0xffff0000u) | 0x8000u;   /* exact ties */
        float f = u2f(u);
        if (isnan(f)) {
            uint16_t got = gguf_fp32_to_bf16(f);
            if (!isnan(gguf_bf16_to_fp32(got)) || (got & 0x8000) != ((u >> 16) & 0x8000)) bad++;
            continue;
        }
        uint16_t got = gguf_fp32_to_bf16(f), want = bf16_reference(f);
        if (got != want && bad++ < 5)
            fprintf(stderr, "bf16(%a) = 0x%04x, want 0x%04x\n", (double)f, got, want);
    }
    CHECK(bad == 0, "%d random floats convert to the wrong bfloat16", bad);
}

/* ------------------------------------------------------------------------ */
/* Block layouts                                                             */

static void test_block_sizes(void)
{
    static const struct { uint32_t type; size_t size; } blocks[] = {
        {GGUF_T_Q4_0, sizeof(struct gq_block_q4_0)}, {GGUF_T_Q4_1, sizeof(struct gq_block_q4_1)},
        {GGUF_T_Q5_0, sizeof(struct gq_block_q5_0)}, {GGUF_T_Q5_1, sizeof(struct gq_block_q5_1)},
        {GGUF_T_Q8_0, sizeof(struct gq_block_q8_0)}, {GGUF_T_Q8_K, sizeof(struct gq_block_q8_k)},
        {GGUF_T_Q2_K, sizeof(struct gq_block_q2_k)}, {GGUF_T_Q3_K, sizeof(struct gq_block_q3_k)},
        {GGUF_T_Q4_K, sizeof(struct gq_block_q4_k)}, {GGUF_T_Q5_K, sizeof(struct gq_block_q5_k)},
        {GGUF_T_Q6_K, sizeof(struct gq_block_q6_k)},
    };
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        const gguf_type_info *t = gguf_type_get(blocks[i].type);
        REQUIRE(t != NULL, "type %u missing from the table", blocks[i].type);
        CHECK(t->type_size == blocks[i].size, "%s: struct is %zu bytes, type table says %u",
              t->name, blocks[i].size, t->type_size);
    }
}

/* ------------------------------------------------------------------------ */
/* Round-trip error                                                          */

/* RMSE / RMS bound on Gaussian rows: the measured value (printed) with a
 * margin of about 10%.  The values are what the reference algorithms give
 * (this library writes the same bytes): for b-bit levels over a group's
 * range of about 4.5 sigma the rounding error alone is near
 * 4.5 / 2^b / sqrt(12), e.g. 0.08 for Q4_0 and 0.02 for Q6_K.  Zero for
 * the lossless F32. */
static double rmse_bound(uint32_t type)
{
    switch (type) {
    case GGUF_T_F32: return 0.0;
    case GGUF_T_F16: return 0.00025;
    case GGUF_T_BF16: return 0.0019;
    case GGUF_T_Q8_0: return 0.0059;
    case GGUF_T_Q8_K: return 0.0077;
    case GGUF_T_Q6_K: return 0.0196;
    case GGUF_T_Q5_1: return 0.042;
    case GGUF_T_Q5_K: return 0.040;
    case GGUF_T_Q5_0: return 0.047;
    case GGUF_T_Q4_1: return 0.086;
    case GGUF_T_Q4_K: return 0.079;
    case GGUF_T_Q4_0: return 0.095;
    case GGUF_T_Q3_K: return 0.166;
    case GGUF_T_Q2_K: return 0.325;
    default: return 0.0;
    }
}

static void test_rmse(void)
{
    const int64_t nrows = 64, ne0 = 4096, n = nrows * ne0;
    float *x = xmalloc((size_t)n * sizeof *x), *y = xmalloc((size_t)n * sizeof *y);
    void *q = xmalloc((size_t)gguf_row_bytes(GGUF_T_F32, (uint64_t)n));
    /* Rows with different scales, as weight matrices have. */
    for (int64_t r = 0; r < nrows; r++) {
        float scale = (float)ldexp(1.0, (int)(r % 9) - 6);
        for (int64_t i = 0; i < ne0; i++) x[r * ne0 + i] = scale * rng_gauss();
    }
    printf("round trip on %lld Gaussian rows of %lld: RMSE / RMS\n", (long long)nrows,
           (long long)ne0);
    for (size_t t = 0; t < N_TYPES; t++) {
        const uint32_t type = quant_types[t];
        REQUIRE(gguf_can_quantize(type) && gguf_can_dequantize(type), "%s unsupported",
                gguf_type_str(type));
        int rc = gguf_quantize_rows(type, x, q, nrows, ne0, 0);
        CHECK(rc == GGUF_OK, "%s: quantize_rows returned %d", gguf_type_str(type), rc);
        rc = gguf_dequantize_rows(type, q, y, nrows, ne0, 0);
        CHECK(rc == GGUF_OK, "%s: dequantize_rows returned %d", gguf_type_str(type), rc);
        /* Relative to each row's RMS, then the root mean square over rows. */
        double sum_rel2 = 0;
        for (int64_t r = 0; r < nrows; r++) {
            double se = 0, ss = 0;
            for (int64_t i = r * ne0; i < (r + 1) * ne0; i++) {
                double e = (double)y[i] - x[i];
                se += e * e;
                ss += (double)x[i] * x[i];
            }
            sum_rel2 += se / ss;
        }
        double rel = sqrt(sum_rel2 / (double)nrows);
        printf("  %-5s %.5f (bound %.5f)\n", gguf_type_str(type), rel, rmse_bound(type));
        CHECK(rel <= rmse_bound(type), "%s: RMSE/RMS %.5f over the bound %.4f",
              gguf_type_str(type), rel, rmse_bound(type));
    }
    free(x);
    free(y);
    free(q);
}

/* ------------------------------------------------------------------------ */
/* Multi-row functions                                                       */

static void test_rows(void)
{
    /* 400 rows of 768: 307200 elements, several work chunks, and chunk
     * boundaries that fall inside rows. */
    const int64_t nrows = 400, ne0 = 768, n = nrows * ne0;
    float *x = xmalloc((size_t)n * sizeof *x), *y1 = xmalloc((size_t)n * sizeof *y1);
    float *y2 = xmalloc((size_t)n * sizeof *y2);
    for (int64_t i = 0; i < n; i++) x[i] = 0.05f * rng_gauss();

    for (size_t t = 0; t < N_TYPES; t++) {
        const uint32_t type = quant_types[t];
        const char *name = gguf_type_str(type);
        const size_t rb = (size_t)gguf_row_bytes(type, (uint64_t)ne0), total = rb * (size_t)nrows;
        uint8_t *single = xmalloc(total), *multi = xmalloc(total);

        for (int64_t r = 0; r < nrows; r++) {
            int rc = gguf_quantize_row(type, x + r * ne0, single + (size_t)r * rb, ne0);
            REQUIRE(rc == GGUF_OK, "%s: quantize_row returned %d", name, rc);
            rc = gguf_dequantize_row(type, single + (size_t)r * rb, y1 + r * ne0, ne0);
            REQUIRE(rc == GGUF_OK, "%s: dequantize_row returned %d", name, rc);
        }
        for (int nt = 0; nt <= 3; nt++) {
            memset(multi, 0x5a, total);
            int rc = gguf_quantize_rows(type, x, multi, nrows, ne0, nt);
            CHECK(rc == GGUF_OK && memcmp(single, multi, total) == 0,
                  "%s: quantize_rows with %d threads differs from the row calls (rc %d)", name,
                  nt, rc);
            memset(y2, 0x5a, (size_t)n * sizeof *y2);
            rc = gguf_dequantize_rows(type, single, y2, nrows, ne0, nt);
            CHECK(rc == GGUF_OK && memcmp(y1, y2, (size_t)n * sizeof *y1) == 0,
                  "%s: dequantize_rows with %d threads differs from the row calls (rc %d)", name,
                  nt, rc);
        }
        free(single);
        free(multi);
    }
    free(x);
    free(y1);
    free(y2);
}

static void test_convert(void)
{
    static const uint32_t pairs[][2] = {
        {GGUF_T_Q6_K, GGUF_T_Q4_K}, {GGUF_T_Q8_0, GGUF_T_Q4_0}, {GGUF_T_F16, GGUF_T_Q6_K},
        {GGUF_T_BF16, GGUF_T_Q8_0}, {GGUF_T_Q4_K, GGUF_T_F32}, {GGUF_T_F32, GGUF_T_Q5_K},
        {GGUF_T_Q5_0, GGUF_T_F16}, {GGUF_T_Q3_K, GGUF_T_Q2_K},
    };
    const int64_t nrows = 300, ne0 = 1280, n = nrows * ne0;
    float *x = xmalloc((size_t)n * sizeof *x), *y = xmalloc((size_t)n * sizeof *y);
    for (int64_t i = 0; i < n; i++) x[i] = 0.02f * rng_gauss();

    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
        const uint32_t from = pairs[p][0], to = pairs[p][1];
        const size_t in_bytes = (size_t)gguf_row_bytes(from, (uint64_t)n);
        const size_t out_bytes = (size_t)gguf_row_bytes(to, (uint64_t)n);
        uint8_t *src = xmalloc(in_bytes), *want = xmalloc(out_bytes), *got = xmalloc(out_bytes);
        REQUIRE(gguf_quantize_rows(from, x, src, nrows, ne0, 1) == GGUF_OK, "setup");
        REQUIRE(gguf_dequantize_rows(from, src, y, nrows, ne0, 1) == GGUF_OK, "setup");
        REQUIRE(gguf_quantize_rows(to, y, want, nrows, ne0, 1) == GGUF_OK, "setup");
        for (int nt = 1; nt <= 3; nt += 2) {
            memset(got, 0x5a, out_bytes);
            int rc = gguf_convert_rows(from, src, to, got, nrows, ne0, nt);
            CHECK(rc == GGUF_OK && memcmp(got, want, out_bytes) == 0,
                  "convert %s -> %s with %d threads differs from dequantize + quantize (rc %d)",
                  gguf_type_str(from), gguf_type_str(to), nt, rc);
        }
        free(src);
        free(want);
        free(got);
    }
    free(x);
    free(y);
}

/* ------------------------------------------------------------------------ */
/* Argument checks                                                           */

static void test_arguments(void)
{
    float f[512] = {0};
    uint8_t b[4096] = {0};

    /* Types that cannot be converted: known but not computed here, removed,
     * and unknown ids. */
    static const uint32_t unsupported[] = {GGUF_T_Q8_1, GGUF_T_IQ2_XXS, GGUF_T_IQ4_NL,
                                           GGUF_T_Q4_2, GGUF_T_I32, GGUF_T_F64, GGUF_T_TQ1_0,
                                           GGUF_T_MXFP4, GGUF_T_COUNT, 1000, UINT32_MAX};
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
        uint32_t t = unsupported[i];
        CHECK(!gguf_can_dequantize(t) && !gguf_can_quantize(t), "type %u claimed supported", t);
        CHECK(gguf_dequantize_row(t, b, f, 256) == GGUF_E_UNSUPPORTED, "dequantize type %u", t);
        CHECK(gguf_quantize_row(t, f, b, 256) == GGUF_E_UNSUPPORTED, "quantize type %u", t);
        CHECK(gguf_dequantize_rows(t, b, f, 1, 256, 1) == GGUF_E_UNSUPPORTED, "rows type %u", t);
        CHECK(gguf_quantize_rows(t, f, b, 1, 256, 1) == GGUF_E_UNSUPPORTED, "rows type %u", t);
        CHECK(gguf_convert_rows(t, b, GGUF_T_F32, f, 1, 256, 1) == GGUF_E_UNSUPPORTED,
              "convert from type %u", t);
        CHECK(gguf_convert_rows(GGUF_T_F32, f, t, b, 1, 256, 1) == GGUF_E_UNSUPPORTED,
              "convert to type %u", t);
    }
    /* Every type in the lists is supported. */
    for (size_t t = 0; t < N_TYPES; t++)
        CHECK(gguf_can_dequantize(quant_types[t]) && gguf_can_quantize(quant_types[t]),
              "%s not supported", gguf_type_str(quant_types[t]));

    /* Bad counts. */
    CHECK(gguf_quantize_row(GGUF_T_Q4_K, f, b, 255) == GGUF_E_INVALID, "Q4_K n=255");
    CHECK(gguf_quantize_row(GGUF_T_Q8_0, f, b, 48) == GGUF_E_INVALID, "Q8_0 n=48");
    CHECK(gguf_quantize_row(GGUF_T_Q8_0, f, b, -32) == GGUF_E_INVALID, "negative n");
    CHECK(gguf_dequantize_row(GGUF_T_Q6_K, b, f, 100) == GGUF_E_INVALID, "Q6_K n=100");
    CHECK(gguf_dequantize_row(GGUF_T_F16, b, f, -1) == GGUF_E_INVALID, "negative n");
    CHECK(gguf_quantize_row(GGUF_T_F16, f, b, 3) == GGUF_OK, "F16 n=3");
    CHECK(gguf_quantize_row(GGUF_T_Q4_K, f, b, 0) == GGUF_OK, "n=0 is nothing to do");
    CHECK(gguf_quantize_row(GGUF_T_Q4_K, NULL, NULL, 0) == GGUF_OK, "n=0 with NULL buffers");
    CHECK(gguf_quantize_row(GGUF_T_Q4_K, NULL, b, 256) == GGUF_E_INVALID, "NULL src");
    CHECK(gguf_dequantize_row(GGUF_T_Q4_K, b, NULL, 256) == GGUF_E_INVALID, "NULL dst");
    CHECK(gguf_quantize_rows(GGUF_T_Q4_K, f, b, 2, 128, 1) == GGUF_E_INVALID,
          "rows of 128 for Q4_K (a whole multiple of 256 in all)");
    CHECK(gguf_quantize_rows(GGUF_T_Q8_0, f, b, -1, 32, 1) == GGUF_E_INVALID, "nrows < 0");
    CHECK(gguf_quantize_rows(GGUF_T_Q8_0, f, b, 1, -32, 1) == GGUF_E_INVALID, "ne0 < 0");
    CHECK(gguf_quantize_rows(GGUF_T_Q8_0, f, b, 1, 32, -1) == GGUF_E_INVALID, "nthreads < 0");
    CHECK(gguf_dequantize_rows(GGUF_T_Q8_0, b, f, INT64_MAX / 2, 64, 1) == GGUF_E_INVALID,
          "nrows * ne0 overflows");
    CHECK(gguf_dequantize_rows(GGUF_T_Q8_0, b, f, 0, 32, 1) == GGUF_OK, "no rows");
    CHECK(gguf_convert_rows(GGUF_T_F16, b, GGUF_T_Q4_K, b + 2048, 8, 32, 1) == GGUF_E_INVALID,
          "convert: row of 32 into Q4_K");
    CHECK(gguf_convert_rows(GGUF_T_Q4_K, b, GGUF_T_Q8_0, b + 2048, 1, 128, 1) == GGUF_E_INVALID,
          "convert: row of 128 from Q4_K");
    CHECK(gguf_convert_rows(GGUF_T_Q8_0, b, GGUF_T_Q4_0, NULL, 1, 32, 1) == GGUF_E_INVALID,
          "convert: NULL dst");
    CHECK(gguf_convert_rows(GGUF_T_Q8_0, b, GGUF_T_Q4_0, b + 2048, 1, 32, -2) == GGUF_E_INVALID,
          "convert: nthreads < 0");
}

/* ------------------------------------------------------------------------ */
/* Special rows                                                              */

/* Quantizes and dequantizes the 512 values x with `type`; checks the output
 * is finite and, when max_rel > 0, within max_rel * amax of the input
 * element by element. */
static void check_special(uint32_t type, const char *what, const float *x, double max_rel)
{
    enum { N = 512 };
    uint8_t q[N * 4];
    float y[N];
    double amax = 0;
    for (int i = 0; i < N; i++) amax = fmax(amax, fabs(x[i]));
    REQUIRE(gguf_quantize_row(type, x, q, N) == GGUF_OK, "%s: quantize", gguf_type_str(type));
    REQUIRE(gguf_dequantize_row(type, q, y, N) == GGUF_OK, "%s: dequantize", gguf_type_str(type));
    for (int i = 0; i < N; i++) {
        if (!isfinite(y[i])) {
            CHECK(0, "%s, %s: element %d: %g -> %g", gguf_type_str(type), what, i, x[i], y[i]);
            return;
        }
        if (max_rel > 0 && fabs((double)y[i] - x[i]) > max_rel * amax) {
            CHECK(0, "%s, %s: element %d: %g -> %g", gguf_type_str(type), what, i, x[i], y[i]);
            return;
        }
    }
    tu_checks++;
}

static void test_special_rows(void)
{
    enum { N = 512 };
    float x[N];
    for (size_t t = 0; t < N_TYPES; t++) {
        const uint32_t type = quant_types[t];
        const char *name = gguf_type_str(type);

        /* Zeros: exactly zero back. */
        memset(x, 0, sizeof x);
        uint8_t q[N * 4];
        float y[N];
        REQUIRE(gguf_quantize_row(type, x, q, N) == GGUF_OK, "%s zeros", name);
        REQUIRE(gguf_dequantize_row(type, q, y, N) == GGUF_OK, "%s zeros", name);
        int nonzero = 0;
        for (int i = 0; i < N; i++) nonzero += y[i] != 0.0f;
        CHECK(nonzero == 0, "%s: a row of zeros comes back with %d nonzero values", name, nonzero);

        /* Constants, both signs: close (every format holds a constant to
         * within its half-float scale). */
        for (int i = 0; i < N; i++) x[i] = 0.75f;
        check_special(type, "constant 0.75", x, 0.01);
        for (int i = 0; i < N; i++) x[i] = -1.25f;
        check_special(type, "constant -1.25", x, 0.01);

        /* Tiny magnitudes: below every half-float scale; finite, and no
         * larger than the input. */
        for (int i = 0; i < N; i++) x[i] = 1e-30f * rng_gauss();
        check_special(type, "magnitudes 1e-30", x, 2.0);
        for (int i = 0; i < N; i++) x[i] = 1e-30f;
        check_special(type, "constant 1e-30", x, 2.0);

        /* Huge magnitudes.  F32, BF16 and Q8_K (a float scale) hold 1e30.
         * F16 values and the half-float scales or minimums of the other
         * formats top out at 65504, so for them a row of 1e30 would give
         * infinities in the reference as here; they get magnitudes up to
         * 3e4, which every one of them can hold. */
        const float big = type == GGUF_T_F32 || type == GGUF_T_BF16 || type == GGUF_T_Q8_K
                              ? 1e30f : 3e4f;
        for (int i = 0; i < N; i++) x[i] = big * (float)(2 * rng_unit() - 1);
        check_special(type, "huge magnitudes", x, 0.5);
        for (int i = 0; i < N; i++) x[i] = -big;
        check_special(type, "huge constant", x, 0.02);
    }
}

/* ------------------------------------------------------------------------ */
/* SIMD level selection                                                      */

static void test_simd(void)
{
    /* GGUF_SIMD=scalar was set before the first query (main). */
    CHECK(gguf_simd_get() == GGUF_SIMD_SCALAR, "GGUF_SIMD=scalar ignored: level %d",
          gguf_simd_get());
    int best = gguf_simd_best();
    CHECK(best >= GGUF_SIMD_SCALAR && best <= GGUF_SIMD_AMX, "best level %d", best);
    CHECK(gguf_simd_set(best) == GGUF_OK && gguf_simd_get() == best, "set the best level");
    CHECK(gguf_simd_set(GGUF_SIMD_SCALAR) == GGUF_OK && gguf_simd_get() == GGUF_SIMD_SCALAR,
          "set scalar");
    CHECK(gguf_simd_set(7) == GGUF_E_UNSUPPORTED && gguf_simd_get() == GGUF_SIMD_SCALAR,
          "an unknown level is refused and changes nothing");
    CHECK(gguf_simd_set(-1) == GGUF_E_UNSUPPORTED, "level -1");
    CHECK(gguf_simd_name(GGUF_SIMD_SCALAR) && strcmp(gguf_simd_name(GGUF_SIMD_SCALAR), "scalar") == 0,
          "scalar name");
    CHECK(gguf_simd_name(GGUF_SIMD_AVX2) && strcmp(gguf_simd_name(GGUF_SIMD_AVX2), "avx2") == 0,
          "avx2 name");
    CHECK(gguf_simd_name(GGUF_SIMD_AVX512) &&
          strcmp(gguf_simd_name(GGUF_SIMD_AVX512), "avx512") == 0, "avx512 name");
    CHECK(gguf_simd_name(GGUF_SIMD_AMX) && strcmp(gguf_simd_name(GGUF_SIMD_AMX), "amx") == 0,
          "amx name");
    CHECK(gguf_simd_name(4) == NULL && gguf_simd_name(-1) == NULL, "unknown level names");
    printf("SIMD: best %s\n", gguf_simd_name(best));
    gguf_simd_set(best);
}

int main(void)
{
    if (setenv("GGUF_SIMD", "scalar", 1) != 0) HARD_ERROR("setenv failed");
    test_simd();
    test_half();
    test_bf16();
    test_block_sizes();
    test_arguments();
    test_special_rows();
    test_rows();
    test_convert();
    test_rmse();
    tu_finish();
    return 0;
}
