/* test-quant-kat.c -- quantizers against the reference's known answers.
 *
 * Reads every .kat file of tests/data/quant-kat (format and origin in the
 * README.md there).  For each case:
 *  - quantizes the input row and compares the bytes with the reference's:
 *    they must be identical; a mismatch is reported with the first
 *    differing byte, its block and its offset in the block;
 *  - dequantizes the reference bytes and checks that every value is finite
 *    and within the error the format allows (per element, against the
 *    block's largest magnitude; see error_bound()).
 * Every type with a .kat file must be quantizable here, and every one must
 * match on every case.  Usage: test-quant-kat [DIR] (default
 * $top_srcdir/tests/data/quant-kat). */
#include <config.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "tests/testutil.h"

#define MAX_FILES 64
#define LINE_MAX_LEN (1 << 16)

/* Largest |dequantized - input| allowed for one element, relative to the
 * largest magnitude amax of its block (the super-block for K-quants).
 * The step of a format with b bits between its extremes is about
 * 2 amax / 2^b; rounding costs half a step, and the symmetric formats
 * (Q4_0, Q5_0) lose a whole step at the positive end when the extreme is
 * negative (d = max / -8 leaves +7 d as the largest level).  The packed
 * group scales and the greedy searches of the K-quants cost more.  Bounds
 * are the measured worst cases (printed by this test) with a margin. */
static double error_bound(uint32_t type)
{
    switch (type) {
    case GGUF_T_Q8_0: return 0.0045;  /* 1/254 plus the half-float scale */
    case GGUF_T_Q6_K: return 0.025;
    case GGUF_T_Q5_0: return 0.07;    /* 1/16 at the clamped end */
    case GGUF_T_Q5_1: return 0.04;    /* 1/31: half a step of 2 amax / 31 */
    case GGUF_T_Q5_K: return 0.05;
    case GGUF_T_Q4_0: return 0.13;    /* 1/8 at the clamped end */
    case GGUF_T_Q4_1: return 0.075;   /* 1/15: half a step of 2 amax / 15 */
    case GGUF_T_Q4_K: return 0.10;
    case GGUF_T_Q3_K: return 0.30;
    case GGUF_T_Q2_K: return 0.45;
    default: return 0.0;
    }
}

/* The largest multiple of the half-float block scale(s) one element can
 * carry: where the scale is a subnormal half (a block of tiny values) its
 * rounding, up to 2^-25, is multiplied by this much. */
static double scale_multiple(uint32_t type)
{
    switch (type) {
    case GGUF_T_Q8_0: return 127;
    case GGUF_T_Q4_0: return 8;
    case GGUF_T_Q4_1: return 15 + 1;
    case GGUF_T_Q5_0: return 16;
    case GGUF_T_Q5_1: return 31 + 1;
    case GGUF_T_Q2_K: return 15 * 3 + 15;
    case GGUF_T_Q3_K: return 32 * 4;
    case GGUF_T_Q4_K: return 63 * 15 + 63;
    case GGUF_T_Q5_K: return 63 * 31 + 63;
    case GGUF_T_Q6_K: return 128 * 32;
    default: return 0;
    }
}

/* Blocks whose values exceed what the format can store: a half-float
 * field (an F16 value, the Q4_1/Q5_1 minimum) of magnitude 65520 or more
 * rounds to infinity, in the reference as here.  Returns 1 when block
 * x[0..bs) is such a block. */
static int beyond_half_range(uint32_t type, const float *x, int64_t bs)
{
    float min = x[0];
    for (int64_t i = 0; i < bs; i++) {
        if (type == GGUF_T_F16 && fabsf(x[i]) >= 65520.0f) return 1;
        if (x[i] < min) min = x[i];
    }
    return (type == GGUF_T_Q4_1 || type == GGUF_T_Q5_1) && min <= -65520.0f;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes the hex text s (whitespace at the end allowed) into out, which
 * holds cap bytes.  Returns the byte count, or -1 on bad text. */
static long unhex(const char *s, uint8_t *out, size_t cap)
{
    size_t len = strlen(s);
    while (len && isspace((unsigned char)s[len - 1])) len--;
    if (len % 2 || len / 2 > cap) return -1;
    for (size_t i = 0; i < len / 2; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return (long)(len / 2);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads one line into buf (without the newline); 0 at end of file. */
static int read_line(FILE *f, char *buf, size_t n)
{
    if (!fgets(buf, (int)n, f)) return 0;
    size_t len = strlen(buf);
    if (len && buf[len - 1] == '\n') buf[--len] = 0;
    else if (len == n - 1) HARD_ERROR("line longer than %zu bytes", n);
    return 1;
}

struct type_result {
    char name[32];
    int cases, matched;
    double worst_error;   /* largest element error / block amax seen */
    int overflow_blocks;  /* blocks beyond the format's range */
};

/* Checks the dequantization of the reference bytes ref (for input x of n
 * floats) and records the worst normalised error over blocks of ordinary
 * magnitude (amax >= 1e-3, where the half-float scales are normal). */
static void check_dequant(const char *file, int ci, const char *kind, uint32_t type,
                          const float *x, const uint8_t *ref, int64_t n, struct type_result *r)
{
    float *y = malloc((size_t)n * sizeof *y);
    if (!y) HARD_ERROR("out of memory");
    int rc = gguf_dequantize_row(type, ref, y, n);
    CHECK(rc == GGUF_OK, "%s case %d: dequantize returned %d", file, ci, rc);
    if (rc != GGUF_OK) {
        free(y);
        return;
    }
    const int64_t bs = gguf_type_get(type)->block_size;
    int bad = 0;
    for (int64_t b0 = 0; b0 < n && !bad; b0 += bs) {
        if (beyond_half_range(type, x + b0, bs)) {
            /* The overflow must show, not turn into wrong finite values. */
            int inf = 0;
            for (int64_t i = b0; i < b0 + bs; i++) inf |= !isfinite(y[i]);
            CHECK(inf, "%s case %d (%s): block %lld exceeds the half range but dequantizes "
                  "to finite values", file, ci, kind, (long long)(b0 / bs));
            r->overflow_blocks++;
            continue;
        }
        double amax = 0;
        for (int64_t i = b0; i < b0 + bs; i++) amax = fmax(amax, fabs(x[i]));
        for (int64_t i = b0; i < b0 + bs && !bad; i++) {
            double err = fabs((double)y[i] - x[i]), limit;
            if (!isfinite(y[i])) {
                CHECK(0, "%s case %d (%s): element %lld dequantizes to %g", file, ci, kind,
                      (long long)i, y[i]);
                bad = 1;
                break;
            }
            if (type == GGUF_T_F16)
                limit = fmax(fabs(x[i]) * 0x1p-11, 0x1p-25);  /* half an ulp */
            else if (type == GGUF_T_BF16)
                limit = fabs(x[i]) * 0x1p-8;
            else if (type == GGUF_T_F32)
                limit = 0;
            else {
                limit = error_bound(type) * amax + scale_multiple(type) * 0x1p-25;
                if (amax >= 1e-3) r->worst_error = fmax(r->worst_error, err / amax);
            }
            if (err > limit) {
                CHECK(0, "%s case %d (%s): element %lld: %.9g -> %.9g, error %.3g over %.3g",
                      file, ci, kind, (long long)i, x[i], y[i], err, limit);
                bad = 1;
            }
        }
    }
    free(y);
}

static void run_file(const char *dir, const char *name, struct type_result *r)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        HARD_ERROR("%s/%s: path too long", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) HARD_ERROR("%s: %s", path, strerror(errno));

    char *line = malloc(LINE_MAX_LEN), *kind = malloc(LINE_MAX_LEN);
    if (!line || !kind) HARD_ERROR("out of memory");

    /* "# type q4_K, 512 floats per row; ..." */
    char tname[16];
    int nfloats = 0;
    if (!read_line(f, line, LINE_MAX_LEN) ||
        sscanf(line, "# type %15[^,], %d floats per row", tname, &nfloats) != 2 || nfloats <= 0)
        HARD_ERROR("%s: bad header line", path);
    uint32_t type;
    if (gguf_type_parse(tname, &type) != GGUF_OK) HARD_ERROR("%s: unknown type '%s'", path, tname);
    snprintf(r->name, sizeof r->name, "%s", gguf_type_str(type));

    REQUIRE(gguf_can_quantize(type), "%s: type %s has known answers but cannot be quantized",
            path, r->name);
    REQUIRE(gguf_can_dequantize(type), "%s: type %s cannot be dequantized", path, r->name);

    const int64_t n = nfloats;
    const uint64_t row_bytes = gguf_row_bytes(type, (uint64_t)n);
    REQUIRE(row_bytes > 0, "%s: %d is not a whole number of %s blocks", path, nfloats, r->name);
    const uint64_t tsize = gguf_type_get(type)->type_size;

    /* All cases, kept for the multi-row check at the end. */
    int cap = 64;
    float *xs = malloc((size_t)cap * (size_t)n * sizeof *xs);
    uint8_t *refs = malloc((size_t)cap * row_bytes), *out = malloc((size_t)cap * row_bytes);
    if (!xs || !refs || !out) HARD_ERROR("out of memory");

    int ci = 0;
    while (read_line(f, kind, LINE_MAX_LEN)) {
        if (!*kind) continue;
        if (ci == cap) HARD_ERROR("%s: more than %d cases", path, cap);
        float *x = xs + (size_t)ci * (size_t)n;
        uint8_t *ref = refs + (size_t)ci * row_bytes;
        ci++;
        if (!read_line(f, line, LINE_MAX_LEN) || unhex(line, (uint8_t *)x, (size_t)n * 4) != n * 4)
            HARD_ERROR("%s: case %d (%s): bad input line", path, ci, kind);
        if (!read_line(f, line, LINE_MAX_LEN) || unhex(line, ref, row_bytes) != (long)row_bytes)
            HARD_ERROR("%s: case %d (%s): bad output line", path, ci, kind);
        r->cases++;

        memset(out, 0xa5, row_bytes);
        int rc = gguf_quantize_row(type, x, out, n);
        CHECK(rc == GGUF_OK, "%s case %d (%s): quantize returned %d", name, ci, kind, rc);
        uint64_t k = 0;
        while (k < row_bytes && out[k] == ref[k]) k++;
        if (rc == GGUF_OK && k == row_bytes) {
            r->matched++;
        } else if (rc == GGUF_OK) {
            CHECK(0, "%s case %d (%s): first difference at byte %llu (block %llu, offset %llu): "
                  "0x%02x, reference 0x%02x", name, ci, kind, (unsigned long long)k,
                  (unsigned long long)(k / tsize), (unsigned long long)(k % tsize), out[k], ref[k]);
        }
        check_dequant(name, ci, kind, type, x, ref, n, r);
    }
    REQUIRE(ci > 0, "%s: no cases", path);
    fclose(f);

    /* The same cases as one matrix through the threaded path. */
    memset(out, 0xa5, (size_t)ci * row_bytes);
    int rc = gguf_quantize_rows(type, xs, out, ci, n, 2);
    CHECK(rc == GGUF_OK && memcmp(out, refs, (size_t)ci * row_bytes) == 0,
          "%s: gguf_quantize_rows (%d rows, 2 threads) differs from the reference (rc %d)",
          name, ci, rc);

    free(xs);
    free(refs);
    free(out);
    free(line);
    free(kind);
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
    DIR *d = opendir(dir);
    if (!d) HARD_ERROR("%s: %s", dir, strerror(errno));
    char *names[MAX_FILES];
    int nfiles = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".kat") == 0) {
            if (nfiles == MAX_FILES) HARD_ERROR("%s: more than %d .kat files", dir, MAX_FILES);
            if (!(names[nfiles++] = strdup(e->d_name))) HARD_ERROR("out of memory");
        }
    }
    closedir(d);
    if (nfiles == 0) HARD_ERROR("%s: no .kat files", dir);
    qsort(names, (size_t)nfiles, sizeof *names, cmp_str);

    /* The types whose quantizers must match the reference (issue 3). */
    static const uint32_t required[] = {GGUF_T_Q4_K, GGUF_T_Q5_K, GGUF_T_Q6_K, GGUF_T_Q8_0,
                                        GGUF_T_Q4_0, GGUF_T_Q5_0, GGUF_T_F16, GGUF_T_BF16};
    int seen[GGUF_T_COUNT] = {0};

    for (int i = 0; i < nfiles; i++) {
        struct type_result r = {0};
        run_file(dir, names[i], &r);
        uint32_t t;
        if (gguf_type_parse(r.name, &t) == GGUF_OK) seen[t] = 1;
        printf("%-6s %2d/%2d cases bit-exact", r.name, r.matched, r.cases);
        if (r.worst_error > 0) printf("; worst element error %.4f of block max", r.worst_error);
        if (r.overflow_blocks) printf("; %d blocks beyond the half range", r.overflow_blocks);
        printf("\n");
        free(names[i]);
    }
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        CHECK(seen[required[i]], "no known answers for %s in %s", gguf_type_str(required[i]), dir);
    tu_finish();
    return 0;
}
