/* test-quant-simd.c -- every SIMD path against the scalar one, bit for bit.
 *
 * For each SIMD path this CPU and build support (avx2, avx512), and for
 * every type that can be quantized or dequantized, the path's output must
 * be byte for byte the scalar path's:
 *  - quantization of rows of 1, 2, 3, 5, 6 and 17 blocks (every tail of
 *    the kernels that fit several blocks at once): Gaussian rows over a
 *    wide range of scales, the input rows of the known-answer files
 *    (tests/data/quant-kat), rows on a grid of half steps (rounding ties
 *    in every format), zeros, constants, tiny, subnormal and huge
 *    magnitudes up to FLT_MAX, sparse rows, runs of equal values, rows
 *    already on another format's grid (dequantized Q6_K, Q4_K, Q5_K,
 *    Q8_0: what gguf-requant converts), rows whose elements have random
 *    exponents over the whole float range, rows of one sign (all
 *    negative, all positive), and rows with NaN and infinity;
 *  - F16 and BF16 conversions on every half value and on random float bit
 *    patterns (NaN payloads included);
 *  - dequantization of the quantizers' outputs and of random blocks: the
 *    floats must have the same bits, except that where a block's half
 *    scale fields are random NaNs, any NaN matches any NaN (the payload of
 *    a sum of two NaNs depends on the order the compiler put them in);
 *  - the threaded functions, gguf_quantize_rows() and the Q6_K -> Q4_K
 *    gguf_convert_rows() of gguf-requant, with 1 and 2 threads;
 *  - the importance-weighted quantizers (gguf_quantize_rows_weighted(),
 *    every type that has one): each row kind above under ordinary, unit,
 *    zero, sparse, group-wise zero, tiny, subnormal, huge, partly
 *    negative, random-exponent and non-finite weights, in rows reaching
 *    every tail of the kernels, and rows of 1536 through the threaded
 *    function with 1 and 2 threads.  (test-quant-weighted holds every
 *    path to llama.cpp's known answers as well.)
 * The vector kernels of the forward pass (gguf_vec_*) sum in another order
 * on each path, so they are held to the bounds quant.h states instead of
 * bits: the dot products and the multiply-add against the scalar path at
 * every length 0 .. 300 (every tail), silu-mul against float64 on every
 * path, the scalar one included.
 * A build that has a path's kernels (configure found the compiler flags)
 * on a CPU that has the instructions must offer that path.  Exits 77 only
 * when no SIMD path is available at all.  Usage: test-quant-simd [KATDIR]
 */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "tests/testutil.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static uint64_t rng_state = 0x5eed5eed12345678ull;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rng_unit(void)
{
    return ((double)(rng_next() >> 11) + 0.5) * 0x1p-53;
}

static int rng_int(int lo, int hi)
{
    return lo + (int)(rng_next() % (uint64_t)(hi - lo + 1));
}

static float rng_gauss(void)
{
    return (float)(sqrt(-2.0 * log(rng_unit())) * cos(6.283185307179586 * rng_unit()));
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

/* The SIMD levels to test (not the scalar one). */
static int levels[2];
static int nlevels;

static void set_level(int level)
{
    if (gguf_simd_set(level) != GGUF_OK)
        HARD_ERROR("gguf_simd_set(%s) failed after it succeeded", gguf_simd_name(level));
}

/* ------------------------------------------------------------------------ */
/* Comparisons                                                               */

static int ncompared[GGUF_T_COUNT][2]; /* [type][0 quant, 1 dequant] rows checked */

/* Quantizes x (n floats) into `type` with the scalar path and with every
 * SIMD level; the bytes must agree.  `what` names the input. */
static void compare_quant(uint32_t type, const float *x, int64_t n, const char *what)
{
    const uint64_t bytes = gguf_row_bytes(type, (uint64_t)n);
    uint8_t *ref = xmalloc(bytes), *out = xmalloc(bytes);
    set_level(GGUF_SIMD_SCALAR);
    memset(ref, 0x5a, bytes);
    int rc = gguf_quantize_row(type, x, ref, n);
    REQUIRE(rc == GGUF_OK, "%s %s: scalar quantize returned %d", gguf_type_str(type), what, rc);
    const uint64_t tsize = gguf_type_get(type)->type_size;
    for (int k = 0; k < nlevels; k++) {
        set_level(levels[k]);
        memset(out, 0xa5, bytes);
        rc = gguf_quantize_row(type, x, out, n);
        uint64_t i = 0;
        while (i < bytes && out[i] == ref[i]) i++;
        CHECK(rc == GGUF_OK && i == bytes,
              "%s quantize, %s path, %s (%lld elements): rc %d, first difference at byte %llu "
              "(block %llu, offset %llu): 0x%02x, scalar 0x%02x",
              gguf_type_str(type), gguf_simd_name(levels[k]), what, (long long)n, rc,
              (unsigned long long)i, (unsigned long long)(i / tsize),
              (unsigned long long)(i % tsize), i < bytes ? out[i] : 0, i < bytes ? ref[i] : 0);
    }
    ncompared[type][0]++;
    free(ref);
    free(out);
}

/* Dequantizes blocks q (n elements of `type`) with the scalar path and with
 * every SIMD level; the floats must have the same bits (any NaN matching
 * any NaN when nan_any). */
static void compare_dequant(uint32_t type, const void *q, int64_t n, int nan_any, const char *what)
{
    float *ref = xmalloc((size_t)n * sizeof *ref), *out = xmalloc((size_t)n * sizeof *out);
    set_level(GGUF_SIMD_SCALAR);
    int rc = gguf_dequantize_row(type, q, ref, n);
    REQUIRE(rc == GGUF_OK, "%s %s: scalar dequantize returned %d", gguf_type_str(type), what, rc);
    for (int k = 0; k < nlevels; k++) {
        set_level(levels[k]);
        memset(out, 0xa5, (size_t)n * sizeof *out);
        rc = gguf_dequantize_row(type, q, out, n);
        int64_t i = 0;
        for (; i < n; i++) {
            if (memcmp(&out[i], &ref[i], 4) == 0) continue;
            if (nan_any && isnan(out[i]) && isnan(ref[i])) continue;
            break;
        }
        uint32_t a = 0, b = 0;
        if (i < n) {
            memcpy(&a, &out[i], 4);
            memcpy(&b, &ref[i], 4);
        }
        CHECK(rc == GGUF_OK && i == n,
              "%s dequantize, %s path, %s (%lld elements): rc %d, first difference at element "
              "%lld: %.9g (0x%08x), scalar %.9g (0x%08x)",
              gguf_type_str(type), gguf_simd_name(levels[k]), what, (long long)n, rc,
              (long long)i, i < n ? out[i] : 0.0f, a, i < n ? ref[i] : 0.0f, b);
    }
    ncompared[type][1]++;
    free(ref);
    free(out);
}

/* Quantizes x with the scalar path, then compares quantization of x and
 * dequantization of the result across paths. */
static void compare_both(uint32_t type, const float *x, int64_t n, const char *what)
{
    compare_quant(type, x, n, what);
    if (!gguf_can_dequantize(type)) return;
    const uint64_t bytes = gguf_row_bytes(type, (uint64_t)n);
    uint8_t *q = xmalloc(bytes);
    set_level(GGUF_SIMD_SCALAR);
    if (gguf_quantize_row(type, x, q, n) != GGUF_OK) HARD_ERROR("quantize failed");
    compare_dequant(type, q, n, 1, what); /* NaN and infinity inputs make NaN scales */
    free(q);
}

/* ------------------------------------------------------------------------ */
/* Inputs                                                                    */

/* Rows of this many blocks: one, and every remainder of the kernels that
 * take 2 or 4 blocks at a time, plus a longer row. */
static const int block_counts[] = {1, 2, 3, 5, 6, 17};
#define NCOUNTS (sizeof block_counts / sizeof block_counts[0])

enum kind {
    K_GAUSS, K_GRID, K_ZEROS, K_CONST, K_TINY, K_SUBNORMAL, K_HUGE, K_MAXMAG, K_SPARSE,
    K_WILD, K_GROUP_CONST, K_DEQUANTIZED, K_NEGATIVE, K_NONFINITE, K_COUNT
};

static const char *const kind_names[K_COUNT] = {
    "gaussian", "half-step grid", "zeros", "constant", "tiny", "subnormal", "huge",
    "near FLT_MAX", "sparse", "random exponents", "constant groups", "dequantized",
    "all negative", "NaN and infinity",
};

/* A float with random sign, exponent (any finite one) and mantissa. */
static float wild_float(void)
{
    const uint32_t e = (uint32_t)rng_int(0, 254);
    return u2f((uint32_t)(rng_next() & 0x807fffffu) | e << 23);
}

/* Fills x[0..n) with a row of kind k (variant v picks scales and signs). */
static void make_row(enum kind k, int v, float *x, int64_t n)
{
    const double scale = pow(10.0, rng_int(-8, 8) / 2.0);
    switch (k) {
    case K_GAUSS:
        for (int64_t i = 0; i < n; i++) x[i] = (float)(scale * rng_gauss());
        break;
    case K_GRID: {
        /* Multiples of half a step of a power of two, the extreme placed
         * where the formats map it to a whole level: the scaled values fall
         * on x.5 exactly, the rounding ties. */
        const float s = ldexpf(1.0f, rng_int(-20, 10));
        const int span = (int[]){4, 8, 16, 32, 64, 127, 254}[rng_int(0, 6)];
        for (int64_t i = 0; i < n; i++) x[i] = s * 0.5f * (float)rng_int(-span, span);
        for (int64_t i = 0; i < n; i += 32)
            x[i + rng_int(0, 31)] = s * (float)(v & 1 ? span : -span) / 2;
        break;
    }
    case K_ZEROS:
        for (int64_t i = 0; i < n; i++) x[i] = v & 1 ? -0.0f : 0.0f;
        break;
    case K_CONST: {
        const float c = (float)(v & 1 ? -scale : scale);
        for (int64_t i = 0; i < n; i++) x[i] = c;
        break;
    }
    case K_TINY:
        for (int64_t i = 0; i < n; i++) x[i] = (float)(1e-30 * rng_gauss());
        break;
    case K_SUBNORMAL:
        for (int64_t i = 0; i < n; i++) x[i] = (float)(1e-41 * rng_gauss());
        break;
    case K_HUGE:
        for (int64_t i = 0; i < n; i++) x[i] = (float)(1e30 * rng_gauss());
        break;
    case K_MAXMAG:
        for (int64_t i = 0; i < n; i++) {
            const double g = rng_gauss();
            x[i] = (float)(g > 0 ? FLT_MAX * fmin(g / 4, 1.0) : -FLT_MAX * fmin(-g / 4, 1.0));
        }
        break;
    case K_SPARSE:
        for (int64_t i = 0; i < n; i++)
            x[i] = rng_int(0, 15) == 0 ? (float)(scale * rng_gauss()) : 0.0f;
        break;
    case K_WILD:
        for (int64_t i = 0; i < n; i++) x[i] = wild_float();
        break;
    case K_GROUP_CONST:
        /* Runs of 16 equal values, some zero: flat groups among others. */
        for (int64_t i = 0; i < n; i += 16) {
            const float c = rng_int(0, 2) ? (float)(scale * rng_gauss()) : 0.0f;
            for (int j = 0; j < 16; j++) x[i + j] = c;
        }
        break;
    case K_DEQUANTIZED: {
        /* What gguf-requant feeds the quantizers: values on the grid of
         * another format, where candidate fits often tie exactly. */
        static const uint32_t from[] = {GGUF_T_Q6_K, GGUF_T_Q4_K, GGUF_T_Q5_K, GGUF_T_Q8_0};
        const uint32_t t = from[v % 4];
        for (int64_t i = 0; i < n; i++) x[i] = (float)(scale * rng_gauss());
        const int64_t whole = n / 256 * 256;
        if (whole == 0) break;
        uint8_t *q = xmalloc(gguf_row_bytes(t, (uint64_t)whole));
        if (gguf_quantize_row(t, x, q, whole) != GGUF_OK ||
            gguf_dequantize_row(t, q, x, whole) != GGUF_OK)
            HARD_ERROR("making a dequantized row failed");
        free(q);
        break;
    }
    case K_NEGATIVE:
        /* Groups with no positive element (min < 0 < max never holds);
         * variant 1 makes them all positive instead. */
        for (int64_t i = 0; i < n; i++) {
            const float a = (float)(scale * fabs(rng_gauss())) + (float)scale * 1e-3f;
            x[i] = v & 1 ? a : -a;
        }
        break;
    case K_NONFINITE:
        for (int64_t i = 0; i < n; i++) x[i] = (float)(scale * rng_gauss());
        for (int64_t i = 0; i < n; i += 256) {
            const float bad[] = {NAN, -NAN, INFINITY, -INFINITY, u2f(0x7f800001u)};
            x[i + rng_int(0, 255 < n - i - 1 ? 255 : (int)(n - i - 1))] = bad[rng_int(0, 4)];
        }
        break;
    case K_COUNT:
        break;
    }
}

/* The input rows of every .kat file in dir (512 floats each). */
static float *kat_rows;
static int kat_nrows;
#define KAT_FLOATS 512

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static void load_kat(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) HARD_ERROR("%s: %s", dir, strerror(errno));
    const size_t line_max = 1 << 16;
    char *line = xmalloc(line_max);
    struct dirent *e;
    while ((e = readdir(d))) {
        const size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".kat") != 0) continue;
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path)
            HARD_ERROR("%s/%s: path too long", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) HARD_ERROR("%s: %s", path, strerror(errno));
        /* Header, then (kind, input, output) triples: the input is the
         * second line of each triple. */
        long ln = 0;
        while (fgets(line, (int)line_max, f)) {
            ln++;
            if (ln < 2 || (ln - 2) % 3 != 1) continue;
            size_t l = strcspn(line, "\r\n");
            if (l != KAT_FLOATS * 8)
                HARD_ERROR("%s:%ld: not %d floats of hex", path, ln, KAT_FLOATS);
            kat_rows = realloc(kat_rows, (size_t)(kat_nrows + 1) * KAT_FLOATS * sizeof(float));
            if (!kat_rows) HARD_ERROR("out of memory");
            uint8_t *p = (uint8_t *)(kat_rows + (size_t)kat_nrows * KAT_FLOATS);
            for (size_t i = 0; i < l / 2; i++) {
                const int hi = hexval(line[2 * i]), lo = hexval(line[2 * i + 1]);
                if (hi < 0 || lo < 0) HARD_ERROR("%s:%ld: bad hex", path, ln);
                p[i] = (uint8_t)(hi << 4 | lo);
            }
            kat_nrows++;
        }
        fclose(f);
    }
    closedir(d);
    free(line);
    if (kat_nrows == 0) HARD_ERROR("%s: no known-answer inputs", dir);
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                     */

/* Rows of 17 blocks per type beyond the kinds above. */
#define MANY_ROWS 160

static void test_quant_rows(void)
{
    for (uint32_t type = 0; type < GGUF_T_COUNT; type++) {
        if (!gguf_can_quantize(type)) continue;
        const int64_t bs = gguf_type_get(type)->block_size;
        /* The elements of one K-quant block, or of 8 legacy blocks. */
        const int64_t unit = bs == 1 ? 256 : bs == 32 ? 256 : bs;
        char what[128];

        for (size_t c = 0; c < NCOUNTS; c++) {
            const int64_t n = unit * block_counts[c];
            float *x = xmalloc((size_t)n * sizeof *x);
            for (int k = 0; k < K_COUNT; k++) {
                for (int v = 0; v < 4; v++) {
                    make_row((enum kind)k, v, x, n);
                    snprintf(what, sizeof what, "%s row %d", kind_names[k], v);
                    compare_both(type, x, n, what);
                }
            }
            free(x);
        }
        /* Legacy formats also in rows of 1, 3 and 17 blocks of 32. */
        if (bs == 32) {
            for (int nb = 1; nb <= 17; nb += 2) {
                float *x = xmalloc((size_t)nb * 32 * sizeof *x);
                for (int k = 0; k < K_COUNT; k++) {
                    make_row((enum kind)k, nb, x, nb * 32);
                    snprintf(what, sizeof what, "%s row of %d blocks", kind_names[k], nb);
                    compare_both(type, x, nb * 32, what);
                }
                free(x);
            }
        }
        /* Many Gaussian and dequantized rows of 17 blocks. */
        float *x = xmalloc((size_t)unit * 17 * sizeof *x);
        for (int r = 0; r < MANY_ROWS; r++) {
            const enum kind k = r % 2 ? K_DEQUANTIZED : K_GAUSS;
            make_row(k, r / 2, x, unit * 17);
            snprintf(what, sizeof what, "%s row %d of 17 blocks", kind_names[k], r);
            compare_both(type, x, unit * 17, what);
        }
        free(x);
        /* The known-answer inputs, two K-quant blocks each, then all of
         * them as one row (an even number of blocks of every size). */
        for (int r = 0; r < kat_nrows; r++) {
            snprintf(what, sizeof what, "known-answer input %d", r);
            compare_both(type, kat_rows + (size_t)r * KAT_FLOATS, KAT_FLOATS, what);
        }
        compare_both(type, kat_rows, (int64_t)kat_nrows * KAT_FLOATS, "all known-answer inputs");
    }
}

/* Every half value; random float bit patterns (payloads, boundaries). */
static void test_half_conversions(void)
{
    const int64_t n = 65536;
    uint16_t *h = xmalloc((size_t)n * 2);
    for (int64_t i = 0; i < n; i++) h[i] = (uint16_t)i;
    compare_dequant(GGUF_T_F16, h, n, 0, "every half value");
    compare_dequant(GGUF_T_BF16, h, n, 0, "every bfloat16 value");
    /* Odd lengths: the element-wise kernels' scalar tails. */
    for (int64_t len = 1; len < 40; len += 3) {
        compare_dequant(GGUF_T_F16, h + 31744 - len / 2, len, 0, "a short run of halves");
        compare_dequant(GGUF_T_BF16, h + 32640 - len / 2, len, 0, "a short run of bfloat16");
    }
    free(h);

    const int64_t m = 1 << 18;
    float *x = xmalloc((size_t)m * sizeof *x);
    for (int64_t i = 0; i < m; i++) {
        uint32_t u = (uint32_t)rng_next();
        switch (i % 4) {
        case 0: /* any bits, NaNs with every payload included */
            break;
        case 1: /* the half range and below, half of them ties for halves */
            u = (u & 0x807fffffu) | (uint32_t)rng_int(90, 145) << 23;
            if (u & 1) u = (u & ~0x1fffu) | 0x1000u;
            break;
        case 2: /* ties for bfloat16 */
            u = (u & ~0xffffu) | 0x8000u;
            break;
        case 3: /* around 65520, where halves overflow */
            u = (u & 0x80000000u) | (uint32_t)rng_int(0x477fe000, 0x47800000);
            break;
        }
        memcpy(&x[i], &u, 4);
    }
    compare_quant(GGUF_T_F16, x, m, "random float bit patterns");
    compare_quant(GGUF_T_BF16, x, m, "random float bit patterns");
    for (int64_t len = 1; len < 40; len += 3) {
        compare_quant(GGUF_T_F16, x + 1000, len, "a short row");
        compare_quant(GGUF_T_BF16, x + 1000, len, "a short row");
    }
    free(x);
}

/* Byte offsets of the half-float fields of a block of `type`. */
static int half_fields(uint32_t type, int off[2])
{
    switch (type) {
    case GGUF_T_Q4_0: case GGUF_T_Q5_0: case GGUF_T_Q8_0: off[0] = 0; return 1;
    case GGUF_T_Q4_1: case GGUF_T_Q5_1: case GGUF_T_Q4_K: case GGUF_T_Q5_K:
        off[0] = 0;
        off[1] = 2;
        return 2;
    case GGUF_T_Q2_K: off[0] = 80; off[1] = 82; return 2;
    case GGUF_T_Q3_K: off[0] = 108; return 1;
    case GGUF_T_Q6_K: off[0] = 208; return 1;
    default: return 0;
    }
}

/* Random blocks of every block type: once with finite half scales (exact
 * bits required), once with any bits (NaN scales: any NaN matches). */
static void test_dequant_random(void)
{
    for (uint32_t type = 0; type < GGUF_T_COUNT; type++) {
        if (!gguf_can_dequantize(type) || gguf_type_get(type)->block_size == 1) continue;
        const int64_t bs = gguf_type_get(type)->block_size;
        const uint64_t tsize = gguf_type_get(type)->type_size;
        for (size_t c = 0; c < NCOUNTS; c++) {
            const int64_t nblocks = block_counts[c] * (bs == 32 ? 8 : 1);
            uint8_t *q = xmalloc((size_t)(nblocks * (int64_t)tsize));
            for (int pass = 0; pass < 2; pass++) {
                for (uint64_t i = 0; i < (uint64_t)nblocks * tsize; i++) q[i] = (uint8_t)rng_next();
                int off[2];
                const int nh = half_fields(type, off);
                for (int64_t b = 0; b < nblocks && pass == 0; b++) {
                    for (int f = 0; f < nh; f++) {
                        uint8_t *p = q + (uint64_t)b * tsize + off[f];
                        p[1] &= 0xbf; /* exponent below 0x1f: finite */
                    }
                    if (type == GGUF_T_Q8_K) {
                        const float d = (float)rng_gauss();
                        memcpy(q + (uint64_t)b * tsize, &d, 4);
                    }
                }
                compare_dequant(type, q, nblocks * bs, pass == 1,
                                pass == 0 ? "random blocks, finite scales" : "random blocks");
            }
            free(q);
        }
    }
}

/* The threaded paths at each level: the same bytes as scalar. */
static void test_threaded(void)
{
    const int64_t ne0 = 1536, nrows = 64, n = ne0 * nrows;
    float *x = xmalloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++) x[i] = 0.02f * rng_gauss();
    const uint64_t q6_bytes = gguf_row_bytes(GGUF_T_Q6_K, (uint64_t)n);
    const uint64_t q4_bytes = gguf_row_bytes(GGUF_T_Q4_K, (uint64_t)n);
    uint8_t *q6 = xmalloc(q6_bytes), *ref = xmalloc(q4_bytes), *out = xmalloc(q4_bytes);

    set_level(GGUF_SIMD_SCALAR);
    REQUIRE(gguf_quantize_rows(GGUF_T_Q6_K, x, q6, nrows, ne0, 1) == GGUF_OK,
            "quantize_rows failed");
    REQUIRE(gguf_convert_rows(GGUF_T_Q6_K, q6, GGUF_T_Q4_K, ref, nrows, ne0, 1) == GGUF_OK,
            "convert_rows failed");
    for (int k = 0; k < nlevels; k++) {
        set_level(levels[k]);
        for (int t = 1; t <= 2; t++) {
            memset(out, 0xa5, q4_bytes);
            int rc = gguf_convert_rows(GGUF_T_Q6_K, q6, GGUF_T_Q4_K, out, nrows, ne0, t);
            CHECK(rc == GGUF_OK && memcmp(out, ref, q4_bytes) == 0,
                  "Q6_K -> Q4_K convert_rows, %s path, %d threads: differs from scalar (rc %d)",
                  gguf_simd_name(levels[k]), t, rc);
            memset(out, 0xa5, q4_bytes);
            rc = gguf_quantize_rows(GGUF_T_Q4_K, x, out, nrows, ne0, t);
            set_level(GGUF_SIMD_SCALAR);
            uint8_t *sref = xmalloc(q4_bytes);
            gguf_quantize_rows(GGUF_T_Q4_K, x, sref, nrows, ne0, 1);
            CHECK(rc == GGUF_OK && memcmp(out, sref, q4_bytes) == 0,
                  "Q4_K quantize_rows, %s path, %d threads: differs from scalar (rc %d)",
                  gguf_simd_name(levels[k]), t, rc);
            free(sref);
            set_level(levels[k]);
        }
    }
    free(x);
    free(q6);
    free(ref);
    free(out);
}

/* ------------------------------------------------------------------------ */
/* Importance-weighted quantizers                                            */

static const uint32_t weighted_types[] = {GGUF_T_Q4_0, GGUF_T_Q4_1, GGUF_T_Q5_0,
                                          GGUF_T_Q5_1, GGUF_T_Q2_K, GGUF_T_Q3_K,
                                          GGUF_T_Q4_K, GGUF_T_Q5_K, GGUF_T_Q6_K};
#define N_WEIGHTED (sizeof weighted_types / sizeof weighted_types[0])

static int nweighted[GGUF_T_COUNT]; /* rows compared per type */

/* Quantizes x (n floats, one row) with the importance weights w through
 * gguf_quantize_rows_weighted() on the scalar path and on every SIMD
 * level; the bytes must agree. */
static void compare_weighted(uint32_t type, const float *x, const float *w, int64_t n,
                             const char *what)
{
    const uint64_t bytes = gguf_row_bytes(type, (uint64_t)n);
    uint8_t *ref = xmalloc(bytes), *out = xmalloc(bytes);
    set_level(GGUF_SIMD_SCALAR);
    memset(ref, 0x5a, bytes);
    int rc = gguf_quantize_rows_weighted(type, x, ref, 1, n, w, 1);
    REQUIRE(rc == GGUF_OK, "%s %s: scalar weighted quantize returned %d", gguf_type_str(type),
            what, rc);
    const uint64_t tsize = gguf_type_get(type)->type_size;
    for (int k = 0; k < nlevels; k++) {
        set_level(levels[k]);
        memset(out, 0xa5, bytes);
        rc = gguf_quantize_rows_weighted(type, x, out, 1, n, w, 1);
        uint64_t i = 0;
        while (i < bytes && out[i] == ref[i]) i++;
        CHECK(rc == GGUF_OK && i == bytes,
              "%s weighted quantize, %s path, %s (%lld elements): rc %d, first difference at "
              "byte %llu (block %llu, offset %llu): 0x%02x, scalar 0x%02x",
              gguf_type_str(type), gguf_simd_name(levels[k]), what, (long long)n, rc,
              (unsigned long long)i, (unsigned long long)(i / tsize),
              (unsigned long long)(i % tsize), i < bytes ? out[i] : 0, i < bytes ? ref[i] : 0);
    }
    nweighted[type]++;
    free(ref);
    free(out);
}

enum wkind {
    W_ORDINARY, W_ONES, W_ZEROS, W_SPARSE, W_GROUP_ZERO, W_TINY, W_SUBNORMAL, W_HUGE,
    W_NEGATIVE, W_WILD, W_NONFINITE, W_COUNT
};

static const char *const wkind_names[W_COUNT] = {
    "ordinary", "ones", "zero", "sparse", "zero groups", "tiny", "subnormal", "huge",
    "negative", "random exponents", "NaN and infinity",
};

/* Fills w[0..n) with importance weights of kind k. */
static void make_weights(enum wkind k, float *w, int64_t n)
{
    /* An imatrix entry: a mean of squared activations, spread over
     * several orders of magnitude around a per-row scale. */
    const double scale = pow(10.0, rng_int(-6, 6) / 2.0);
    switch (k) {
    case W_ORDINARY:
        for (int64_t i = 0; i < n; i++) w[i] = (float)(scale * exp(2.0 * rng_gauss()));
        break;
    case W_ONES:
        for (int64_t i = 0; i < n; i++) w[i] = 1.0f;
        break;
    case W_ZEROS:
        for (int64_t i = 0; i < n; i++) w[i] = 0.0f;
        break;
    case W_SPARSE:
        for (int64_t i = 0; i < n; i++)
            w[i] = rng_int(0, 3) ? 0.0f : (float)(scale * exp(2.0 * rng_gauss()));
        break;
    case W_GROUP_ZERO:
        /* Runs of 16 weights all zero among ordinary runs: whole groups
         * (K-quants) and half blocks (legacy) without weight. */
        for (int64_t i = 0; i < n; i += 16) {
            const int zero = rng_int(0, 1);
            for (int j = 0; j < 16; j++)
                w[i + j] = zero ? 0.0f : (float)(scale * exp(2.0 * rng_gauss()));
        }
        break;
    case W_TINY:
        for (int64_t i = 0; i < n; i++) w[i] = (float)(1e-30 * exp(rng_gauss()));
        break;
    case W_SUBNORMAL:
        for (int64_t i = 0; i < n; i++) w[i] = (float)(1e-41 * exp(rng_gauss()));
        break;
    case W_HUGE:
        for (int64_t i = 0; i < n; i++) w[i] = (float)(1e30 * exp(rng_gauss()));
        break;
    case W_NEGATIVE:
        /* Not what an imatrix holds, but nothing stops a caller: a quarter
         * of them negative, which makes negative group scales (levels
         * that wrap in their byte in the block scale fits) and many moves
         * in those fits' passes. */
        for (int64_t i = 0; i < n; i++)
            w[i] = (float)(scale * exp(2.0 * rng_gauss())) * (rng_int(0, 3) ? 1.0f : -1.0f);
        break;
    case W_WILD:
        for (int64_t i = 0; i < n; i++) w[i] = wild_float();
        break;
    case W_NONFINITE:
        for (int64_t i = 0; i < n; i++) w[i] = (float)(scale * exp(2.0 * rng_gauss()));
        for (int64_t i = 0; i < n; i += 256) {
            const float bad[] = {NAN, INFINITY, -INFINITY};
            w[i + rng_int(0, 255 < n - i - 1 ? 255 : (int)(n - i - 1))] = bad[rng_int(0, 2)];
        }
        break;
    case W_COUNT:
        break;
    }
}

/*
 * Every weighted type on every SIMD level against the scalar path: each
 * row kind with each weight kind, in rows of block counts that reach
 * every tail of the vector kernels (group fits of 1, 2 or 4 K-quant
 * blocks, block scale fits of 8 or 16, sums of squares 8 blocks at a time
 * and the rest; fits of 16 or 32 legacy blocks), many rows under every
 * finite kind of weights, many Gaussian and dequantized rows under
 * ordinary and sparse weights, and the known-answer inputs of
 * tests/data/quant-kat.
 */
static void test_weighted_rows(void)
{
    static const int k_counts[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 17};
    static const int legacy_counts[] = {1, 5, 8, 9, 15, 16, 17, 31, 32, 33, 47};
    float *x = xmalloc(sizeof *x * 17 * 256), *w = xmalloc(sizeof *w * 17 * 256);
    char what[160];

    for (size_t t = 0; t < N_WEIGHTED; t++) {
        const uint32_t type = weighted_types[t];
        const int64_t bs = gguf_type_get(type)->block_size;
        const int *counts = bs == 256 ? k_counts : legacy_counts;
        const int ncounts = bs == 256 ? (int)(sizeof k_counts / sizeof k_counts[0])
                                      : (int)(sizeof legacy_counts / sizeof legacy_counts[0]);

        /* Each pair of kinds at two block counts, the counts rotating. */
        for (int k = 0; k < K_COUNT; k++) {
            for (int wk = 0; wk < W_COUNT; wk++) {
                for (int rep = 0; rep < 2; rep++) {
                    const int nb = counts[(k * W_COUNT + wk + 5 * rep) % ncounts];
                    const int64_t n = bs * nb;
                    make_row((enum kind)k, rep, x, n);
                    make_weights((enum wkind)wk, w, n);
                    snprintf(what, sizeof what, "%s row, %s weights", kind_names[k],
                             wkind_names[wk]);
                    compare_weighted(type, x, w, n, what);
                }
            }
        }
        /* Many rows of 17 K-quant blocks (47 legacy ones) under every
         * finite kind of weights: the rare paths of the block scale fits
         * (negative group scales, levels that wrap in their byte, the
         * passes that move levels) want many tries. */
        static const enum kind many[] = {K_GAUSS, K_DEQUANTIZED, K_SPARSE, K_GROUP_CONST,
                                         K_NEGATIVE, K_GRID, K_WILD};
        for (int r = 0; r < 120; r++) {
            const enum kind k = many[r % (sizeof many / sizeof many[0])];
            const enum wkind wk = r % 2 ? W_NEGATIVE : (enum wkind)(r / 2 % W_NONFINITE);
            const int64_t n = bs * counts[ncounts - 1 - r % 2];
            make_row(k, r, x, n);
            make_weights(wk, w, n);
            snprintf(what, sizeof what, "%s row %d, %s weights", kind_names[k], r,
                     wkind_names[wk]);
            compare_weighted(type, x, w, n, what);
        }
        /* Every block count, Gaussian and dequantized rows. */
        for (int c = 0; c < ncounts; c++) {
            const int64_t n = bs * counts[c];
            for (int r = 0; r < 8; r++) {
                const enum kind k = r % 2 ? K_DEQUANTIZED : K_GAUSS;
                make_row(k, r / 2, x, n);
                make_weights(r % 4 < 2 ? W_ORDINARY : W_SPARSE, w, n);
                snprintf(what, sizeof what, "%s row %d of %d blocks", kind_names[k], r,
                         counts[c]);
                compare_weighted(type, x, w, n, what);
            }
        }
        /* The known-answer inputs, 512 floats each. */
        for (int r = 0; r < kat_nrows; r++) {
            make_weights(r % 2 ? W_ORDINARY : W_GROUP_ZERO, w, KAT_FLOATS);
            snprintf(what, sizeof what, "known-answer input %d", r);
            compare_weighted(type, kat_rows + (size_t)r * KAT_FLOATS, w, KAT_FLOATS, what);
        }
    }
    free(x);
    free(w);
}

/* gguf_quantize_rows_weighted() over many rows with 1 and 2 threads on
 * every level: the scalar path's bytes, for every weighted type. */
static void test_weighted_threaded(void)
{
    const int64_t ne0 = 1536, nrows = 24, n = ne0 * nrows;
    float *x = xmalloc((size_t)n * sizeof *x), *w = xmalloc((size_t)ne0 * sizeof *w);
    for (int64_t i = 0; i < n; i++) x[i] = 0.02f * rng_gauss();
    make_weights(W_ORDINARY, w, ne0);
    for (size_t t = 0; t < N_WEIGHTED; t++) {
        const uint32_t type = weighted_types[t];
        const size_t bytes = (size_t)gguf_row_bytes(type, (uint64_t)n);
        uint8_t *ref = xmalloc(bytes), *out = xmalloc(bytes);
        set_level(GGUF_SIMD_SCALAR);
        REQUIRE(gguf_quantize_rows_weighted(type, x, ref, nrows, ne0, w, 1) == GGUF_OK,
                "%s: scalar quantize_rows_weighted failed", gguf_type_str(type));
        for (int k = 0; k < nlevels; k++) {
            set_level(levels[k]);
            for (int th = 1; th <= 2; th++) {
                memset(out, 0xa5, bytes);
                const int rc = gguf_quantize_rows_weighted(type, x, out, nrows, ne0, w, th);
                CHECK(rc == GGUF_OK && memcmp(out, ref, bytes) == 0,
                      "%s quantize_rows_weighted, %s path, %d threads: differs from scalar "
                      "(rc %d)",
                      gguf_type_str(type), gguf_simd_name(levels[k]), th, rc);
            }
        }
        free(ref);
        free(out);
    }
    free(x);
    free(w);
}

/* ------------------------------------------------------------------------ */
/* Vector kernels of the forward pass                                        */

/* The dot products and the F16 multiply-add of every level against the
 * scalar level, lengths 0 .. 300, within quant.h's bounds. */
static void test_vec_dots(void)
{
    enum { N = 300 };
    float a[N], b[N], y0[N], y[N];
    uint16_t h[N];
    int checked = 0;
    for (int n = 0; n <= N; n++) {
        double mag_f32 = 0.0, mag_f16 = 0.0;
        for (int i = 0; i < n; i++) {
            a[i] = rng_gauss() * (float)(1 << rng_int(0, 6));
            b[i] = rng_gauss();
            h[i] = gguf_fp32_to_fp16(rng_gauss() * 4.0f);
            y0[i] = rng_gauss();
            mag_f32 += fabs((double)a[i] * b[i]);
            mag_f16 += fabs((double)a[i] * gguf_fp16_to_fp32(h[i]));
        }
        const float s = rng_gauss();
        set_level(GGUF_SIMD_SCALAR);
        const float want32 = gguf_vec_dot_f32(a, b, n), want16 = gguf_vec_dot_f16(a, h, n);
        float want_y[N];
        memcpy(want_y, y0, sizeof y0);
        gguf_vec_axpy_f16(want_y, s, h, n);
        const double bound = 2.0 * (n / 8 + 8) * FLT_EPSILON;
        for (int k = 0; k < nlevels; k++) {
            set_level(levels[k]);
            const char *lv = gguf_simd_name(levels[k]);
            const float got32 = gguf_vec_dot_f32(a, b, n), got16 = gguf_vec_dot_f16(a, h, n);
            CHECK(fabs((double)got32 - want32) <= bound * mag_f32,
                  "%s dot_f32, n %d: %.9g, scalar %.9g", lv, n, got32, want32);
            CHECK(fabs((double)got16 - want16) <= bound * mag_f16,
                  "%s dot_f16, n %d: %.9g, scalar %.9g", lv, n, got16, want16);
            memcpy(y, y0, sizeof y0);
            gguf_vec_axpy_f16(y, s, h, n);
            for (int i = 0; i < n; i++) {
                /* one rounding (fused) against two: within 2 ulps of the sum */
                const double tol = 2.0 * FLT_EPSILON *
                                   (fabs((double)y0[i]) + fabs((double)s * gguf_fp16_to_fp32(h[i])));
                CHECK(fabs((double)y[i] - want_y[i]) <= tol, "%s axpy_f16, n %d, element %d: %.9g, scalar %.9g",
                      lv, n, i, y[i], want_y[i]);
            }
            checked++;
        }
    }
    printf("vector dot products and multiply-add: %d lengths x levels within bounds\n", checked);
}

/* The row forms of the F16 dot product and multiply-add on every level:
 * the bits of one call per row, for 0 .. 9 rows (fours and the rest) of
 * lengths with every tail, rows apart by a stride wider than a row. */
static void test_vec_rows(void)
{
    enum { N = 200, ROWS = 9, STRIDE = N + 5 };
    static uint16_t x[ROWS * STRIDE];
    float a[N], s[ROWS], y0[N], y[N], want_y[N], out[ROWS];
    for (int i = 0; i < ROWS * STRIDE; i++) x[i] = gguf_fp32_to_fp16(rng_gauss() * 4.0f);
    for (int i = 0; i < N; i++) {
        a[i] = rng_gauss();
        y0[i] = rng_gauss();
    }
    for (int j = 0; j < ROWS; j++) s[j] = rng_gauss();
    static const int lengths[] = {0, 1, 7, 8, 13, 64, 71, 128, 136, 199};
    int checked = 0;
    for (int l = 0; l < nlevels + 1; l++) {
        set_level(l < nlevels ? levels[l] : GGUF_SIMD_SCALAR);
        const char *lv = gguf_simd_name(gguf_simd_get());
        for (size_t m = 0; m < sizeof lengths / sizeof lengths[0]; m++) {
            const int n = lengths[m];
            for (int rows = 0; rows <= ROWS; rows++) {
                gguf_vec_dot_f16_rows(a, x, STRIDE, rows, n, out);
                memcpy(want_y, y0, sizeof y0);
                memcpy(y, y0, sizeof y0);
                for (int j = 0; j < rows; j++) {
                    const float want = gguf_vec_dot_f16(a, x + j * STRIDE, n);
                    CHECK(memcmp(&want, &out[j], sizeof want) == 0, "%s dot_f16_rows, %d rows of %d, row %d: %.9g, alone %.9g",
                          lv, rows, n, j, out[j], want);
                    gguf_vec_axpy_f16(want_y, s[j], x + j * STRIDE, n);
                }
                gguf_vec_axpy_f16_rows(y, s, x, STRIDE, rows, n);
                CHECK(memcmp(y, want_y, sizeof y) == 0, "%s axpy_f16_rows, %d rows of %d: not the bits of one call a row",
                      lv, rows, n);
                checked++;
            }
        }
    }
    printf("row forms of dot_f16 and axpy_f16: %d cases, the bits of one call a row\n", checked);
}

/* The forms of m queries on every level: each query's bits are those of
 * its own call, for 1 .. 14 queries (chunks of six and the rest) and row
 * counts of every remainder, and around the blocks of rows a level may
 * take at a time (64), with strides wider than a row. */
static void test_vec_rows_m(void)
{
    enum { N = 136, ROWS = 130, STRIDE = N + 3, M = 14, AS = N + 5, OS = ROWS + 2 };
    static const int row_counts[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 17, 63, 64, 65, 130};
    static uint16_t x[ROWS * STRIDE];
    static float a[M * AS], s[M * OS], y0[M * AS], y[M * AS], want_y[AS], out[M * OS], want[ROWS];
    for (int i = 0; i < ROWS * STRIDE; i++) x[i] = gguf_fp32_to_fp16(rng_gauss() * 4.0f);
    for (int i = 0; i < M * AS; i++) {
        a[i] = rng_gauss();
        y0[i] = rng_gauss();
    }
    for (int i = 0; i < M * OS; i++) s[i] = rng_gauss();
    static const int lengths[] = {0, 5, 8, 16, 29, 64, 128, 136};
    int checked = 0;
    for (int l = 0; l < nlevels + 1; l++) {
        set_level(l < nlevels ? levels[l] : GGUF_SIMD_SCALAR);
        const char *lv = gguf_simd_name(gguf_simd_get());
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
            const int n = lengths[li];
            for (int m = 1; m <= M; m++)
                for (size_t ri = 0; ri < sizeof row_counts / sizeof row_counts[0]; ri++) {
                    const int rows = row_counts[ri];
                    gguf_vec_dot_f16_rows_m(a, AS, m, x, STRIDE, rows, n, out, OS);
                    memcpy(y, y0, sizeof y);
                    gguf_vec_axpy_f16_rows_m(y, AS, s, OS, m, x, STRIDE, rows, n);
                    for (int q = 0; q < m; q++) {
                        gguf_vec_dot_f16_rows(a + q * AS, x, STRIDE, rows, n, want);
                        CHECK(memcmp(want, out + q * OS, sizeof(float) * (size_t)rows) == 0,
                              "%s dot_f16_rows_m, %d queries, %d rows of %d: query %d not its own bits", lv, m,
                              rows, n, q);
                        memcpy(want_y, y0 + q * AS, sizeof want_y);
                        gguf_vec_axpy_f16_rows(want_y, s + q * OS, x, STRIDE, rows, n);
                        CHECK(memcmp(want_y, y + q * AS, sizeof want_y) == 0,
                              "%s axpy_f16_rows_m, %d queries, %d rows of %d: query %d not its own bits", lv, m,
                              rows, n, q);
                    }
                    /* past the m outputs nothing is written */
                    CHECK(memcmp(y + m * AS, y0 + m * AS, sizeof(float) * (size_t)(M - m) * AS) == 0,
                          "%s axpy_f16_rows_m wrote past %d queries", lv, m);
                    checked++;
                }
        }
    }
    /* the AVX-512 forms have the bits of the AVX2 ones */
    static float out2[M * OS], y2[M * AS];
    int have_avx2 = 0, same = 0;
    for (int l = 0; l < nlevels; l++) have_avx2 |= levels[l] == GGUF_SIMD_AVX2;
    for (int l = 0; l < nlevels && have_avx2; l++) {
        if (levels[l] <= GGUF_SIMD_AVX2) continue;
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
            for (int m = 1; m <= M; m += 5) {
                const int n = lengths[li];
                memset(out, 0, sizeof out);
                memset(out2, 0, sizeof out2);
                set_level(GGUF_SIMD_AVX2);
                gguf_vec_dot_f16_rows_m(a, AS, m, x, STRIDE, ROWS, n, out2, OS);
                memcpy(y2, y0, sizeof y2);
                gguf_vec_axpy_f16_rows_m(y2, AS, s, OS, m, x, STRIDE, ROWS, n);
                set_level(levels[l]);
                gguf_vec_dot_f16_rows_m(a, AS, m, x, STRIDE, ROWS, n, out, OS);
                memcpy(y, y0, sizeof y);
                gguf_vec_axpy_f16_rows_m(y, AS, s, OS, m, x, STRIDE, ROWS, n);
                CHECK(memcmp(out, out2, sizeof out) == 0, "%s dot_f16_rows_m, %d queries of %d: not the avx2 bits",
                      gguf_simd_name(levels[l]), m, n);
                CHECK(memcmp(y, y2, sizeof y) == 0, "%s axpy_f16_rows_m, %d queries of %d: not the avx2 bits",
                      gguf_simd_name(levels[l]), m, n);
                same++;
            }
    }
    printf("forms of m queries of dot_f16 and axpy_f16: %d cases, each query's own bits; %d cases of the "
           "levels above avx2 with its bits\n", checked, same);
}

/* silu(g) * u on every level, the scalar one too, against float64: within
 * 1e-6 relative (1e-30 absolute where exp underflows), over -100 .. 100,
 * zero and a long random row with every tail. */
static void test_vec_silu(void)
{
    enum { N = 100003 }; /* not a multiple of 8 or 16: the tails too */
    float *g0 = xmalloc(sizeof *g0 * N), *g = xmalloc(sizeof *g * N), *u = xmalloc(sizeof *u * N);
    double *want = xmalloc(sizeof *want * N);
    for (int i = 0; i < N; i++) {
        const double r = rng_unit();
        g0[i] = (float)(i < 64 ? -100.0 + 200.0 * i / 63.0 : (r - 0.5) * (i % 7 == 0 ? 200.0 : 20.0));
        u[i] = (float)(1.0 - 2.0 * r * r);
    }
    g0[64] = 0.0f;
    for (int i = 0; i < N; i++) want[i] = (double)g0[i] / (1.0 + exp(-(double)g0[i])) * (double)u[i];
    for (int k = -1; k < nlevels; k++) {
        const int level = k < 0 ? GGUF_SIMD_SCALAR : levels[k];
        set_level(level);
        memcpy(g, g0, sizeof *g * N);
        gguf_vec_silu_mul(g, u, N);
        int bad = 0;
        double worst = 0.0;
        for (int i = 0; i < N; i++) {
            const double d = fabs((double)g[i] - want[i]);
            if (!(d <= 1e-6 * fabs(want[i]) + 1e-30)) bad++;
            if (fabs(want[i]) > 1e-20 && d / fabs(want[i]) > worst) worst = d / fabs(want[i]);
        }
        CHECK(bad == 0, "%s silu * up: %d of %d values off by more than 1e-6 relative",
              gguf_simd_name(level), bad, N);
        printf("silu * up, %s: max relative error %.2g\n", gguf_simd_name(level), worst);
    }
    free(g0);
    free(g);
    free(u);
    free(want);
}

/* softmax on every level, the scalar one too, against float64 from the
 * same float products scale * x: within 1e-6 absolute; the weights sum
 * to 1; the scalar level has the steps of the engine's former softmax
 * (expf, a double sum in order).  Rows of every length 1 .. 40 (the
 * tails), long ones of scores spread wide and narrow, ties, and one
 * score far above the rest. */
static void test_vec_softmax(void)
{
    enum { N = 5003 };
    float *x0 = xmalloc(sizeof *x0 * N), *x = xmalloc(sizeof *x * N);
    double *want = xmalloc(sizeof *want * N);
    const float scale = 0.0883883476f; /* 1 / sqrt(128) */
    for (int shape = 0; shape < 45; shape++) {
        const int n = shape < 40 ? shape + 1 : N - (shape - 40);
        for (int i = 0; i < n; i++) {
            const double r = rng_unit();
            x0[i] = (float)(shape == 40 ? (r - 0.5) * 2000.0 /* spread: most weights underflow */
                            : shape == 41 ? 3.0                 /* ties */
                            : shape == 42 ? (i == 17 ? 900.0 : (r - 0.5) * 10.0)
                                          : (r - 0.5) * 160.0);
        }
        double m = -INFINITY, sum = 0.0;
        for (int i = 0; i < n; i++) m = fmax(m, (double)(scale * x0[i]));
        for (int i = 0; i < n; i++) sum += exp((double)(scale * x0[i]) - m);
        for (int i = 0; i < n; i++) want[i] = exp((double)(scale * x0[i]) - m) / sum;
        for (int k = -1; k < nlevels; k++) {
            const int level = k < 0 ? GGUF_SIMD_SCALAR : levels[k];
            set_level(level);
            memcpy(x, x0, sizeof *x * (size_t)n);
            gguf_vec_softmax(x, n, scale);
            int bad = 0;
            double total = 0.0;
            for (int i = 0; i < n; i++) {
                if (!(fabs((double)x[i] - want[i]) <= 1e-6)) bad++;
                total += x[i];
            }
            CHECK(bad == 0, "%s softmax of %d (shape %d): %d weights off by more than 1e-6", gguf_simd_name(level),
                  n, shape, bad);
            CHECK(fabs(total - 1.0) <= 1e-5, "%s softmax of %d: weights sum to %.9g", gguf_simd_name(level), n, total);
            if (level == GGUF_SIMD_SCALAR) { /* the steps it documents */
                float *y = xmalloc(sizeof *y * (size_t)n), mx = -INFINITY;
                double s = 0.0;
                for (int i = 0; i < n; i++) mx = fmaxf(mx, y[i] = x0[i] * scale);
                for (int i = 0; i < n; i++) s += y[i] = expf(y[i] - mx);
                for (int i = 0; i < n; i++) y[i] *= (float)(1.0 / s);
                CHECK(memcmp(x, y, sizeof *y * (size_t)n) == 0, "scalar softmax of %d: not expf and a double sum", n);
                free(y);
            }
        }
    }
    gguf_vec_softmax(x, 0, 1.0f); /* nothing to do */
    printf("softmax: %d shapes on every level within 1e-6 of float64\n", 45);
    free(x0);
    free(x);
    free(want);
}

#if defined(__x86_64__) || defined(__i386__)
/* F16C from CPUID leaf 1 (ECX bit 29): older compilers' built-in CPU
 * checks do not know the name. */
static int cpu_has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}
#endif

/* The levels a build with these kernels must offer on this CPU. */
static void test_levels_offered(void)
{
#if defined(__x86_64__) || defined(__i386__)
#ifdef TEST_HAVE_AVX2
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c())
        CHECK(gguf_simd_best() >= GGUF_SIMD_AVX2,
              "the CPU has AVX2 and the build its kernels, but the best path is %s",
              gguf_simd_name(gguf_simd_best()));
#endif
#ifdef TEST_HAVE_AVX512
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
        CHECK(gguf_simd_best() >= GGUF_SIMD_AVX512,
              "the CPU has AVX-512 and the build its kernels, but the best path is %s",
              gguf_simd_name(gguf_simd_best()));
#endif
#endif
}

int main(int argc, char **argv)
{
    char dir[4096];
    if (argc > 1) {
        snprintf(dir, sizeof dir, "%s", argv[1]);
    } else {
        const char *top = getenv("top_srcdir");
        snprintf(dir, sizeof dir, "%s/tests/data/quant-kat", top ? top : ".");
    }

    test_levels_offered();
    for (int level = GGUF_SIMD_AVX2; level <= GGUF_SIMD_AVX512; level++) {
        if (gguf_simd_set(level) == GGUF_OK) levels[nlevels++] = level;
    }
    if (nlevels == 0) {
        if (tu_failures) tu_finish();
        SKIP("no SIMD path on this CPU and build (best path: %s); nothing to compare",
             gguf_simd_name(gguf_simd_best()));
    }
    printf("comparing with the scalar path:");
    for (int k = 0; k < nlevels; k++) printf(" %s", gguf_simd_name(levels[k]));
    printf("\n");

    load_kat(dir);
    test_quant_rows();
    test_half_conversions();
    test_dequant_random();
    test_threaded();
    test_weighted_rows();
    test_weighted_threaded();
    test_vec_dots();
    test_vec_rows();
    test_vec_rows_m();
    test_vec_silu();
    test_vec_softmax();
    set_level(gguf_simd_best());

    for (uint32_t t = 0; t < GGUF_T_COUNT; t++) {
        if (ncompared[t][0] || ncompared[t][1])
            printf("%-5s %5d rows quantized, %5d dequantized, %5d with weights, compared on "
                   "every path\n",
                   gguf_type_str(t), ncompared[t][0], ncompared[t][1], nweighted[t]);
    }
    tu_finish();
    return 0;
}
