/* test-quant-weighted.c -- gguf_quantize_rows_weighted() against llama.cpp's
 * known answers, and the properties that always hold.
 *
 * Reads tests/data/weighted-kat/weighted.kat (format and origin in the
 * README.md there).  Each case names a type, a row length, a kind of
 * weights and a kind of row with their seeds; the inputs are made again
 * here by the generator below (the README describes it: it must stay as
 * it is, or the answers no longer apply), quantized one row at a time, and
 * the XXH3-64 of the bytes, or the bytes themselves, must be the
 * reference's, on every SIMD path (gguf_simd_set(): the scalar kernels of
 * quant/weighted.c and the vector ones of quant/vkernels.h).  Then:
 *  - NULL weights give exactly gguf_quantize_rows(), for every type;
 *  - types without a weighted form (Q8_0, Q8_K, F16, BF16, F32) ignore the
 *    weights;
 *  - a matrix gives the same bytes as its rows one by one, for 1, 2 and 3
 *    threads and the default, with several units of work per call (rows
 *    shorter and longer than a unit);
 *  - argument errors and their statuses, dst untouched on each.
 * Usage: test-quant-weighted [FILE]. */
#include <config.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "tests/testutil.h"

/* ------------------------------------------------------------------------ */
/* The input generator of the known answers                                  */
/*
 * Only integer arithmetic, exact int-to-float conversions (or one rounding
 * where an integer exceeds 2^24) and products with powers of two, so that
 * every compiler and CPU makes the same floats.
 */

static uint64_t kat_next(uint64_t *s)
{
    /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* 2^k, -126 <= k <= 127, built from its bits. */
static float kat_pow2(int k)
{
    uint32_t u = (uint32_t)(127 + k) << 23;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int64_t kat_u22(uint64_t *s)
{
    return (int64_t)(kat_next(s) >> 42);
}

/* A sum of four 22-bit uniforms, centred: -2^23 .. 2^23 - 4, exact. */
static float kat_gauss(uint64_t *s)
{
    int64_t v = kat_u22(s);
    v += kat_u22(s);
    v += kat_u22(s);
    v += kat_u22(s);
    return (float)(v - ((int64_t)1 << 23));
}

/* Fills x[0..n) with a row of kind `kind` from seed; 0, or -1 for an
 * unknown kind. */
static int kat_make_row(const char *kind, uint64_t seed, float *x, int64_t n)
{
    uint64_t s = seed;
    if (!strcmp(kind, "gauss")) {
        for (int64_t i = 0; i < n; i++) x[i] = kat_gauss(&s) * kat_pow2(-26);
    } else if (!strcmp(kind, "outliers")) {
        for (int64_t i = 0; i < n; i++) x[i] = kat_gauss(&s) * kat_pow2(-26);
        for (int k = 0; k < 6; k++) {
            const int64_t pos = (int64_t)(kat_next(&s) % (uint64_t)n);
            const int neg = (int)(kat_next(&s) & 1);
            const float mag = (float)(1 + (kat_next(&s) >> 60));
            x[pos] = neg ? -mag : mag;
        }
    } else if (!strcmp(kind, "zero")) {
        for (int64_t i = 0; i < n; i++) x[i] = 0.0f;
    } else if (!strcmp(kind, "tiny")) {
        for (int64_t i = 0; i < n; i++) x[i] = kat_gauss(&s) * kat_pow2(-120);
    } else if (!strcmp(kind, "const")) {
        const int neg = (int)(kat_next(&s) & 1);
        const float c = (float)(1 + (kat_next(&s) >> 58)) * kat_pow2(-5);
        for (int64_t i = 0; i < n; i++) x[i] = neg ? -c : c;
    } else if (!strcmp(kind, "negative") || !strcmp(kind, "positive")) {
        const float sign = kind[0] == 'n' ? -1.0f : 1.0f;
        for (int64_t i = 0; i < n; i++) {
            int64_t v = kat_u22(&s);
            v += kat_u22(&s);
            v += kat_u22(&s);
            v += kat_u22(&s);
            x[i] = sign * (float)(v + 1) * kat_pow2(-27);
        }
    } else if (!strcmp(kind, "scaled")) {
        for (int64_t b = 0; b < n; b += 32) {
            const int e = (int)(kat_next(&s) % 13) - 8;
            for (int64_t i = b; i < b + 32 && i < n; i++) x[i] = kat_gauss(&s) * kat_pow2(e - 26);
        }
    } else {
        return -1;
    }
    return 0;
}

/* One ordinary weight: (1 + u22) * 2^e, e in -24..-17, shifted by shift. */
static float kat_weight(uint64_t *s, int shift)
{
    const int e = (int)(kat_next(s) % 8) - 24 + shift;
    return (float)(1 + kat_u22(s)) * kat_pow2(e);
}

/* Fills w[0..n) with weights of kind `kind` from seed.  Returns 1 for
 * "none" (no weights; w untouched), 0 for the others, -1 for an unknown
 * kind. */
static int kat_make_weights(const char *kind, uint64_t seed, float *w, int64_t n)
{
    uint64_t s = seed;
    if (!strcmp(kind, "none")) return 1;
    if (!strcmp(kind, "ones")) {
        for (int64_t i = 0; i < n; i++) w[i] = 1.0f;
    } else if (!strcmp(kind, "ordinary") || !strcmp(kind, "blockzero") ||
               !strcmp(kind, "sbzero")) {
        for (int64_t i = 0; i < n; i++) w[i] = kat_weight(&s, 0);
        for (int64_t i = 0; i < n; i++) {
            if ((!strcmp(kind, "blockzero") && (i / 32) % 3 == 1) ||
                (!strcmp(kind, "sbzero") && i >= 256 && i < 512))
                w[i] = 0.0f;
        }
    } else if (!strcmp(kind, "sparse")) {
        for (int64_t i = 0; i < n; i++)
            w[i] = (kat_next(&s) >> 62) == 0 ? 0.0f : kat_weight(&s, 0);
    } else if (!strcmp(kind, "zero")) {
        for (int64_t i = 0; i < n; i++) w[i] = 0.0f;
    } else if (!strcmp(kind, "huge")) {
        for (int64_t i = 0; i < n; i++) w[i] = kat_weight(&s, 40);
    } else if (!strcmp(kind, "tiny")) {
        for (int64_t i = 0; i < n; i++) w[i] = kat_weight(&s, -60);
    } else {
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Known answers                                                             */

/* The types with a weighted quantizer: each must have known answers. */
static const uint32_t weighted_types[] = {GGUF_T_Q4_0, GGUF_T_Q4_1, GGUF_T_Q5_0,
                                          GGUF_T_Q5_1, GGUF_T_Q2_K, GGUF_T_Q3_K,
                                          GGUF_T_Q4_K, GGUF_T_Q5_K, GGUF_T_Q6_K};
#define N_WEIGHTED (sizeof weighted_types / sizeof weighted_types[0])

#define MAX_NE0 4096
#define LINE_MAX_LEN 8192

struct type_tally {
    int rows, rows_ok, bytes, bytes_ok;
};

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One case of the file: its inputs made, quantized with and without the
 * weights; the checks of its line.  `what` is "row" (hex is a digest) or
 * "bytes" (hex is the output). */
static void run_case(const char *where, const char *what, uint32_t type, int64_t ne0,
                     const char *wkind, uint64_t wseed, const char *rkind, uint64_t rseed,
                     const char *hex, struct type_tally *t)
{
    static float x[MAX_NE0], w[MAX_NE0];
    static uint8_t out[MAX_NE0 * 2], plain[MAX_NE0 * 2], ref[MAX_NE0 * 2];

    if (ne0 <= 0 || ne0 > MAX_NE0) HARD_ERROR("%s: row length %lld out of range", where,
                                              (long long)ne0);
    if (kat_make_row(rkind, rseed, x, ne0) != 0) HARD_ERROR("%s: row kind '%s'", where, rkind);
    const int r = kat_make_weights(wkind, wseed, w, ne0);
    if (r < 0) HARD_ERROR("%s: weight kind '%s'", where, wkind);
    const uint64_t nb = gguf_row_bytes(type, (uint64_t)ne0);
    if (nb == 0 || nb > sizeof out) HARD_ERROR("%s: %lld is no row of %s", where, (long long)ne0,
                                               gguf_type_str(type));

    memset(out, 0xa5, nb);
    int rc = gguf_quantize_rows_weighted(type, x, out, 1, ne0, r == 1 ? NULL : w, 1);
    CHECK(rc == GGUF_OK, "%s: returned %d", where, rc);

    /* Without weights: the reference quantizer, whatever the case. */
    memset(plain, 0x5a, nb);
    memset(ref, 0xa5, nb);
    CHECK(gguf_quantize_rows_weighted(type, x, plain, 1, ne0, NULL, 1) == GGUF_OK &&
              gguf_quantize_rows(type, x, ref, 1, ne0, 1) == GGUF_OK &&
              memcmp(plain, ref, nb) == 0,
          "%s: NULL weights differ from gguf_quantize_rows", where);

    if (!strcmp(what, "row")) {
        gguf_digest want, got;
        if (gguf_digest_parse(GGUF_HASH_XXH3, hex, strlen(hex), &want) != GGUF_OK)
            HARD_ERROR("%s: bad digest '%s'", where, hex);
        if (gguf_hash_buffer(GGUF_HASH_XXH3, out, nb, &got) != GGUF_OK) HARD_ERROR("hash");
        t->rows++;
        if (rc == GGUF_OK && gguf_digest_equal(&got, &want)) {
            t->rows_ok++;
        } else {
            char h[GGUF_DIGEST_HEX_MAX];
            CHECK(0, "%s: XXH3 %s, reference %s", where, gguf_digest_hex(&got, h), hex);
        }
        return;
    }

    if (strlen(hex) != 2 * nb) HARD_ERROR("%s: %zu hex digits for %llu bytes", where, strlen(hex),
                                          (unsigned long long)nb);
    for (uint64_t i = 0; i < nb; i++) {
        const int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) HARD_ERROR("%s: bad hex", where);
        ref[i] = (uint8_t)(hi << 4 | lo);
    }
    t->bytes++;
    uint64_t k = 0;
    while (k < nb && out[k] == ref[k]) k++;
    const uint64_t ts = gguf_type_get(type)->type_size;
    if (rc == GGUF_OK && k == nb)
        t->bytes_ok++;
    else
        CHECK(0, "%s: first difference at byte %llu (block %llu, offset %llu): 0x%02x, "
              "reference 0x%02x", where, (unsigned long long)k, (unsigned long long)(k / ts),
              (unsigned long long)(k % ts), out[k], ref[k]);
}

/* Runs every case of the file; fills tally[] by the index of the type in
 * weighted_types. */
static void run_file(const char *path, struct type_tally tally[N_WEIGHTED])
{
    FILE *f = fopen(path, "r");
    if (!f) HARD_ERROR("%s: %s", path, strerror(errno));
    char *line = malloc(LINE_MAX_LEN);
    if (!line) HARD_ERROR("out of memory");
    int lineno = 0;
    while (fgets(line, LINE_MAX_LEN, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\n') line[--len] = 0;
        else if (len == LINE_MAX_LEN - 1) HARD_ERROR("%s:%d: line too long", path, lineno);
        if (!*line || *line == '#') continue;

        char what[8], tname[16], wkind[16], rkind[16], where[4096 + 256];
        long long ne0;
        unsigned long long wseed, rseed;
        int hex_at = 0;
        if (sscanf(line, "%7s %15s %lld %15s %llu %15s %llu %n", what, tname, &ne0, wkind, &wseed,
                   rkind, &rseed, &hex_at) != 7 || !hex_at ||
            (strcmp(what, "row") && strcmp(what, "bytes")))
            HARD_ERROR("%s:%d: bad line", path, lineno);
        uint32_t type;
        if (gguf_type_parse(tname, &type) != GGUF_OK)
            HARD_ERROR("%s:%d: unknown type '%s'", path, lineno, tname);
        size_t ti = 0;
        while (ti < N_WEIGHTED && weighted_types[ti] != type) ti++;
        if (ti == N_WEIGHTED) HARD_ERROR("%s:%d: %s has no weighted form", path, lineno, tname);
        snprintf(where, sizeof where, "%s:%d (%s %lld, weights %s %llu, row %s %llu)", path,
                 lineno, tname, ne0, wkind, wseed, rkind, rseed);
        run_case(where, what, type, ne0, wkind, wseed, rkind, rseed, line + hex_at, &tally[ti]);
    }
    fclose(f);
    free(line);
}

/* ------------------------------------------------------------------------ */
/* Properties                                                                */

/* Types whose quantizers take no weights give gguf_quantize_rows()'s bytes
 * with any weights. */
static void check_ignored(void)
{
    static const uint32_t types[] = {GGUF_T_Q8_0, GGUF_T_Q8_K, GGUF_T_F16, GGUF_T_BF16,
                                     GGUF_T_F32};
    enum { NE0 = 512, NROWS = 3 };
    static float x[NROWS * NE0], w[NE0];
    static uint8_t a[NROWS * NE0 * 4], b[NROWS * NE0 * 4];
    for (int r = 0; r < NROWS; r++) kat_make_row("outliers", 7 + (uint64_t)r, x + r * NE0, NE0);
    kat_make_weights("sparse", 5, w, NE0);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const size_t nb = (size_t)gguf_row_bytes(types[i], NE0) * NROWS;
        memset(a, 1, nb);
        memset(b, 2, nb);
        int rc1 = gguf_quantize_rows_weighted(types[i], x, a, NROWS, NE0, w, 2);
        int rc2 = gguf_quantize_rows(types[i], x, b, NROWS, NE0, 2);
        CHECK(rc1 == GGUF_OK && rc2 == GGUF_OK && memcmp(a, b, nb) == 0,
              "%s: weights not ignored (rc %d, %d)", gguf_type_str(types[i]), rc1, rc2);
        CHECK(!gguf_quantize_uses_weights(types[i]), "%s: said to use weights", gguf_type_str(types[i]));
    }
    static const uint32_t weighted[] = {GGUF_T_Q4_0, GGUF_T_Q4_1, GGUF_T_Q5_0, GGUF_T_Q5_1, GGUF_T_Q2_K,
                                        GGUF_T_Q3_K, GGUF_T_Q4_K, GGUF_T_Q5_K, GGUF_T_Q6_K};
    for (size_t i = 0; i < sizeof weighted / sizeof weighted[0]; i++)
        CHECK(gguf_quantize_uses_weights(weighted[i]), "%s: uses weights", gguf_type_str(weighted[i]));
    CHECK(!gguf_quantize_uses_weights(GGUF_T_COUNT) && !gguf_quantize_uses_weights(UINT32_MAX),
          "unknown types use no weights");
}

/* A matrix of nrows rows of ne0 through 1, 2 and 3 threads and the
 * default: the bytes of its rows quantized one by one. */
static void check_threads(uint32_t type, int64_t nrows, int64_t ne0)
{
    const size_t rb = (size_t)gguf_row_bytes(type, (uint64_t)ne0);
    float *x = malloc((size_t)(nrows * ne0) * sizeof *x), *w = malloc((size_t)ne0 * sizeof *w);
    uint8_t *single = malloc(rb * (size_t)nrows), *multi = malloc(rb * (size_t)nrows);
    if (!x || !w || !single || !multi) HARD_ERROR("out of memory");
    for (int64_t r = 0; r < nrows; r++)
        kat_make_row(r % 3 ? "gauss" : "scaled", 1000 + (uint64_t)r, x + r * ne0, ne0);
    kat_make_weights("sparse", 77, w, ne0);

    int ok = 1;
    for (int64_t r = 0; r < nrows; r++)
        ok &= gguf_quantize_rows_weighted(type, x + r * ne0, single + (size_t)r * rb, 1, ne0, w,
                                          1) == GGUF_OK;
    REQUIRE(ok, "%s: single rows failed", gguf_type_str(type));
    static const int nts[] = {1, 2, 3, 0};
    for (size_t k = 0; k < sizeof nts / sizeof nts[0]; k++) {
        memset(multi, 0xa5, rb * (size_t)nrows);
        int rc = gguf_quantize_rows_weighted(type, x, multi, nrows, ne0, w, nts[k]);
        CHECK(rc == GGUF_OK && memcmp(single, multi, rb * (size_t)nrows) == 0,
              "%s: %lld rows of %lld with %d threads differ from the rows one by one (rc %d)",
              gguf_type_str(type), (long long)nrows, (long long)ne0, nts[k], rc);
    }
    free(x);
    free(w);
    free(single);
    free(multi);
}

/* Argument errors: each returns its status and leaves dst as it was. */
static void check_arguments(void)
{
    enum { N = 1024 };
    static float x[N], w[N];
    static uint8_t d[N * 4], before[N * 4];
    kat_make_row("gauss", 3, x, N);
    kat_make_weights("ordinary", 4, w, N);
    memset(d, 0x3c, sizeof d);
    memcpy(before, d, sizeof d);

#define ARG(expr, status, what)                                                           \
    do {                                                                                  \
        int rc_ = (expr);                                                                 \
        CHECK(rc_ == (status), "%s: returned %d, not %d", what, rc_, status);             \
        CHECK(memcmp(d, before, sizeof d) == 0, "%s: wrote to dst", what);                \
    } while (0)

    /* Unsupported types come first, with or without weights. */
    ARG(gguf_quantize_rows_weighted(GGUF_T_COUNT, x, d, 1, 256, w, 1), GGUF_E_UNSUPPORTED,
        "type GGUF_T_COUNT");
    ARG(gguf_quantize_rows_weighted(GGUF_T_COUNT + 7, x, d, -1, 255, w, 1), GGUF_E_UNSUPPORTED,
        "unknown type, bad shape");
    ARG(gguf_quantize_rows_weighted(GGUF_T_COUNT, x, d, 1, 256, NULL, 1), GGUF_E_UNSUPPORTED,
        "type GGUF_T_COUNT, no weights");
    for (uint32_t t = 0; t < GGUF_T_COUNT; t++) {
        if (gguf_can_quantize(t)) continue;
        char what[64];
        snprintf(what, sizeof what, "type %u", t);
        ARG(gguf_quantize_rows_weighted(t, x, d, 1, 256, w, 1), GGUF_E_UNSUPPORTED, what);
    }

    for (size_t i = 0; i < N_WEIGHTED; i++) {
        const uint32_t t = weighted_types[i];
        const int64_t bs = gguf_type_get(t)->block_size;
        char what[128];
#define ARGT(expr, status, text)                                                          \
    do {                                                                                  \
        snprintf(what, sizeof what, "%s: %s", gguf_type_str(t), text);                    \
        ARG(expr, status, what);                                                          \
    } while (0)
        ARGT(gguf_quantize_rows_weighted(t, x, d, 1, bs / 2, w, 1), GGUF_E_INVALID,
             "ne0 half a block");
        ARGT(gguf_quantize_rows_weighted(t, x, d, 2, bs + 16, w, 1), GGUF_E_INVALID,
             "ne0 not whole blocks");
        ARGT(gguf_quantize_rows_weighted(t, x, d, -1, bs, w, 1), GGUF_E_INVALID, "nrows < 0");
        ARGT(gguf_quantize_rows_weighted(t, x, d, 1, -bs, w, 1), GGUF_E_INVALID, "ne0 < 0");
        ARGT(gguf_quantize_rows_weighted(t, x, d, 1, bs, w, -1), GGUF_E_INVALID, "nthreads < 0");
        ARGT(gguf_quantize_rows_weighted(t, NULL, d, 1, bs, w, 1), GGUF_E_INVALID, "NULL src");
        ARGT(gguf_quantize_rows_weighted(t, x, NULL, 1, bs, w, 1), GGUF_E_INVALID, "NULL dst");
        ARGT(gguf_quantize_rows_weighted(t, x, d, INT64_MAX / 2, 2 * bs, w, 1), GGUF_E_INVALID,
             "nrows * ne0 overflows");
        ARGT(gguf_quantize_rows_weighted(t, x, d, INT64_MAX / bs, bs, w, 1), GGUF_E_INVALID,
             "byte size overflows");
        /* Nothing to do: success, nothing written, NULL buffers allowed. */
        ARGT(gguf_quantize_rows_weighted(t, x, d, 0, bs, w, 1), GGUF_OK, "no rows");
        ARGT(gguf_quantize_rows_weighted(t, NULL, NULL, 0, bs, w, 1), GGUF_OK, "no rows, NULL");
        ARGT(gguf_quantize_rows_weighted(t, x, d, 4, 0, w, 1), GGUF_OK, "empty rows");
        ARGT(gguf_quantize_rows_weighted(t, NULL, NULL, 4, 0, NULL, 1), GGUF_OK,
             "empty rows, NULL");
#undef ARGT
    }
#undef ARG
}

int main(int argc, char **argv)
{
    char path[4096];
    if (argc > 1) {
        snprintf(path, sizeof path, "%s", argv[1]);
    } else {
        const char *top = getenv("top_srcdir");
        snprintf(path, sizeof path, "%s/tests/data/weighted-kat/weighted.kat", top ? top : ".");
    }

    /* The known answers on every SIMD path this CPU and build offer (the
     * scalar one first); the other checks on the best path. */
    const int best = gguf_simd_best();
    for (int level = GGUF_SIMD_SCALAR; level <= best; level++) {
        if (gguf_simd_set(level) != GGUF_OK) continue;
        struct type_tally tally[N_WEIGHTED];
        memset(tally, 0, sizeof tally);
        run_file(path, tally);
        for (size_t i = 0; i < N_WEIGHTED; i++) {
            const struct type_tally *t = &tally[i];
            printf("%-6s %-5s %3d/%3d digests, %d/%d full outputs bit-exact\n",
                   gguf_simd_name(level), gguf_type_str(weighted_types[i]), t->rows_ok, t->rows,
                   t->bytes_ok, t->bytes);
            CHECK(t->rows > 0 && t->bytes > 0, "no known answers for %s in %s",
                  gguf_type_str(weighted_types[i]), path);
        }
    }
    gguf_simd_set(best);

    check_ignored();
    for (size_t i = 0; i < N_WEIGHTED; i++) {
        /* 3 units of 128 rows, then rows longer than a unit. */
        check_threads(weighted_types[i], 300, 512);
        check_threads(weighted_types[i], 3, 65536 + 256);
    }
    check_arguments();
    tu_finish();
    return 0;
}
