/* bench-quant.c -- row kernel speed per SIMD path.
 *
 * For every SIMD path this CPU and build support (scalar, avx2, avx512),
 * single-threaded: quantize and dequantize throughput of each type on
 * Gaussian rows, in millions of weights per second, with the ratio to
 * the scalar path.  Then the conversion gguf-requant makes, Q6_K rows to
 * Q4_K (gguf_convert_rows), with 1 and 2 threads, and the time that rate
 * projects for the 1.5b Q4_K_M model's Q6_K tensors (431 M weights; the
 * file I/O of a real run comes on top).  Then the importance-weighted
 * quantizers of gguf-requant --imatrix (gguf_quantize_rows_weighted), one
 * thread, in rows of 1536 and 8960 (the 1.5b model's widths) with one
 * weight per column: Mweights/s, MB/s of float input and the ratio to
 * scalar.  Every path's bytes are checked against the scalar path's on
 * the way: a mismatch is an error (exit 1), times never are.
 *
 * Usage: bench-quant [-s SECONDS] [-n WEIGHTS]
 *   -s  minimum time per measurement (default 0.3; best of 3 such runs)
 *   -n  weights per row buffer (default 1048576, a multiple of 256) */
#include <config.h>

#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "tests/bench/benchutil.h"

/* Q6_K weights of the 1.5b synthetic Q4_K_M model: token_embd (151936 x
 * 1536) and 14 each of attn_v (1536 x 256) and ffn_down (8960 x 1536). */
#define MODEL_WEIGHTS (151936.0 * 1536 + 14.0 * 1536 * 256 + 14.0 * 8960 * 1536)

static const uint32_t types[] = {
    GGUF_T_F16,  GGUF_T_BF16, GGUF_T_Q4_0, GGUF_T_Q5_0, GGUF_T_Q8_0,
    GGUF_T_Q4_K, GGUF_T_Q5_K, GGUF_T_Q6_K, GGUF_T_Q2_K, GGUF_T_Q3_K,
};
#define NTYPES (sizeof types / sizeof types[0])
#define NLEVELS 3

static uint64_t rng_state = 42;

static double rng_unit(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) * 0x1p-53;
}

static float rng_gauss(void)
{
    return (float)(sqrt(-2.0 * log(rng_unit())) * cos(6.283185307179586 * rng_unit()));
}

enum op { OP_QUANT, OP_DEQUANT, OP_CONVERT, OP_WEIGHTED };

/* The types with an importance-weighted quantizer, those of the Q4_K_M
 * and Q5_K_M mixtures first. */
static const uint32_t weighted_types[] = {
    GGUF_T_Q4_K, GGUF_T_Q6_K, GGUF_T_Q5_K, GGUF_T_Q3_K, GGUF_T_Q2_K,
    GGUF_T_Q4_0, GGUF_T_Q4_1, GGUF_T_Q5_0, GGUF_T_Q5_1,
};
#define NWEIGHTED (sizeof weighted_types / sizeof weighted_types[0])

struct job {
    enum op op;
    uint32_t type;
    const float *f;    /* n floats (input of quantize) */
    float *fout;       /* n floats (output of dequantize) */
    void *q;           /* quantized input (dequantize, convert) */
    void *qout;        /* quantized output (quantize, convert) */
    int64_t n;
    int threads;
    const float *w;    /* ne0 importance weights (weighted quantize) */
    int64_t ne0;       /* row length (weighted quantize; n / ne0 rows) */
};

static int run_once(const struct job *j)
{
    switch (j->op) {
    case OP_QUANT: return gguf_quantize_rows(j->type, j->f, j->qout, 1, j->n, j->threads);
    case OP_DEQUANT: return gguf_dequantize_rows(j->type, j->q, j->fout, 1, j->n, j->threads);
    case OP_CONVERT:
        return gguf_convert_rows(GGUF_T_Q6_K, j->q, GGUF_T_Q4_K, j->qout, j->n / 4096, 4096,
                                 j->threads);
    case OP_WEIGHTED:
        return gguf_quantize_rows_weighted(j->type, j->f, j->qout, j->n / j->ne0, j->ne0, j->w,
                                           j->threads);
    }
    return GGUF_E_INVALID;
}

/* Weights per second of job j: best of 3 runs of at least min_s each. */
static double rate(const struct job *j, double min_s)
{
    double best = 0.0;
    for (int r = 0; r < 3; r++) {
        int64_t reps = 0;
        double t0 = bench_now(), t;
        do {
            if (run_once(j) != GGUF_OK) {
                fprintf(stderr, "bench-quant: %s: conversion failed\n",
                        gguf_type_get(j->type)->name);
                exit(2);
            }
            reps++;
            t = bench_now() - t0;
        } while (t < min_s);
        const double w = (double)reps * (double)j->n / t;
        if (w > best) best = w;
    }
    return best;
}

static void usage(int status)
{
    fprintf(status ? stderr : stdout, "Usage: bench-quant [-s SECONDS] [-n WEIGHTS]\n");
    exit(status);
}

int main(int argc, char **argv)
{
    double min_s = 0.3;
    int64_t n = 1 << 20;
    int c;
    while ((c = getopt(argc, argv, "hs:n:")) != -1) {
        switch (c) {
        case 's': min_s = atof(optarg); break;
        case 'n': n = atoll(optarg); break;
        case 'h': usage(0); break;
        default: usage(2);
        }
    }
    if (optind != argc || n <= 0 || n % 4096 || min_s <= 0) usage(2);

    int levels[NLEVELS], nlevels = 0;
    for (int l = 0; l < NLEVELS; l++)
        if (gguf_simd_set(l) == GGUF_OK) levels[nlevels++] = l;

    float *f = malloc((size_t)n * sizeof *f), *fout = malloc((size_t)n * sizeof *fout);
    size_t qmax = 0;
    for (size_t t = 0; t < NTYPES; t++) {
        const size_t b = (size_t)gguf_row_bytes(types[t], (uint64_t)n);
        if (b > qmax) qmax = b;
    }
    uint8_t *q = malloc(qmax), *qout = malloc(qmax), *ref = malloc(qmax);
    if (!f || !fout || !q || !qout || !ref) {
        fprintf(stderr, "bench-quant: out of memory\n");
        return 2;
    }
    for (int64_t i = 0; i < n; i++) f[i] = 0.02f * rng_gauss();

    int status = 0;
    printf("SIMD paths:");
    for (int k = 0; k < nlevels; k++) printf(" %s", gguf_simd_name(levels[k]));
    printf("; best path: %s\n", gguf_simd_name(gguf_simd_best()));
    printf("single thread, Mweights/s (ratio to scalar), %lld weights per run\n", (long long)n);
    printf("%-6s %-8s", "type", "op");
    for (int k = 0; k < nlevels; k++) printf(" %20s", gguf_simd_name(levels[k]));
    printf("\n");

    for (size_t t = 0; t < NTYPES; t++) {
        const uint32_t type = types[t];
        const size_t bytes = (size_t)gguf_row_bytes(type, (uint64_t)n);
        for (int op = OP_QUANT; op <= OP_DEQUANT; op++) {
            double scalar_rate = 0.0;
            printf("%-6s %-8s", gguf_type_get(type)->name, op == OP_QUANT ? "quant" : "dequant");
            for (int k = 0; k < nlevels; k++) {
                gguf_simd_set(levels[k]);
                struct job j = {(enum op)op, type, f, fout, q, qout, n, 1, NULL, 0};
                if (op == OP_DEQUANT) gguf_quantize_rows(type, f, q, 1, n, 0);
                const double r = rate(&j, min_s);
                if (k == 0) scalar_rate = r;
                printf(" %12.1f (%5.2fx)", r / 1e6, r / scalar_rate);
                fflush(stdout);
                /* The bytes (or floats) of every path must be the scalar's. */
                const void *out = op == OP_QUANT ? (const void *)qout : (const void *)fout;
                const size_t len = op == OP_QUANT ? bytes : (size_t)n * sizeof(float);
                if (k == 0) {
                    memcpy(ref, out, len < qmax ? len : qmax);
                } else if (memcmp(ref, out, len < qmax ? len : qmax) != 0) {
                    printf(" MISMATCH");
                    status = 1;
                }
            }
            printf("\n");
        }
    }

    /* Q6_K -> Q4_K, the requantization of the speed target. */
    gguf_simd_set(GGUF_SIMD_SCALAR);
    gguf_quantize_rows(GGUF_T_Q6_K, f, q, 1, n, 0);
    const size_t q4_bytes = (size_t)gguf_row_bytes(GGUF_T_Q4_K, (uint64_t)n);
    printf("\nQ6_K -> Q4_K (gguf_convert_rows), Mweights/s; projected time for the 1.5b\n"
           "model's %.0f M Q6_K weights (conversion only, no file I/O)\n",
           MODEL_WEIGHTS / 1e6);
    for (int threads = 1; threads <= 2; threads++) {
        double scalar_rate = 0.0;
        for (int k = 0; k < nlevels; k++) {
            gguf_simd_set(levels[k]);
            struct job j = {OP_CONVERT, GGUF_T_Q4_K, f, fout, q, qout, n, threads, NULL, 0};
            const double r = rate(&j, min_s);
            if (k == 0) scalar_rate = r;
            printf("  %-7s %d thread%s %9.1f Mw/s (%5.2fx)  projected %6.2f s",
                   gguf_simd_name(levels[k]), threads, threads > 1 ? "s" : " ", r / 1e6,
                   r / scalar_rate, MODEL_WEIGHTS / r);
            if (k == 0) {
                memcpy(ref, qout, q4_bytes);
            } else if (memcmp(ref, qout, q4_bytes) != 0) {
                printf(" MISMATCH");
                status = 1;
            }
            printf("\n");
            fflush(stdout);
        }
    }
    /* Importance-weighted quantization: rows of the two widths, as many
     * as fit in n, each column with its own weight. */
    float *w = malloc(8960 * sizeof *w);
    if (!w) {
        fprintf(stderr, "bench-quant: out of memory\n");
        return 2;
    }
    for (int i = 0; i < 8960; i++) w[i] = (float)exp(2.0 * rng_gauss());
    printf("\nimportance-weighted quantization (gguf_quantize_rows_weighted), single thread,\n"
           "Mweights/s, MB/s of float input (ratio to scalar)\n");
    printf("%-6s %-6s", "type", "row");
    for (int k = 0; k < nlevels; k++) printf(" %28s", gguf_simd_name(levels[k]));
    printf("\n");
    static const int64_t widths[] = {1536, 8960};
    for (size_t t = 0; t < NWEIGHTED; t++) {
        for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
            const uint32_t type = weighted_types[t];
            const int64_t ne0 = widths[wi], nw = n / ne0 * ne0;
            const size_t bytes = (size_t)gguf_row_bytes(type, (uint64_t)nw);
            double scalar_rate = 0.0;
            printf("%-6s %-6lld", gguf_type_get(type)->name, (long long)ne0);
            for (int k = 0; k < nlevels; k++) {
                gguf_simd_set(levels[k]);
                struct job j = {.op = OP_WEIGHTED, .type = type, .f = f, .qout = qout, .n = nw,
                                .threads = 1, .w = w, .ne0 = ne0};
                const double r = rate(&j, min_s);
                if (k == 0) scalar_rate = r;
                printf(" %8.2f Mw/s %7.1f MB/s (%5.2fx)", r / 1e6, 4.0 * r / 1e6, r / scalar_rate);
                fflush(stdout);
                if (k == 0) {
                    memcpy(ref, qout, bytes);
                } else if (memcmp(ref, qout, bytes) != 0) {
                    printf(" MISMATCH");
                    status = 1;
                }
            }
            printf("\n");
        }
    }
    free(w);

    gguf_simd_set(gguf_simd_best());
    if (status)
        fprintf(stderr, "bench-quant: a SIMD path's output differs from the scalar path's\n");
    free(f);
    free(fout);
    free(q);
    free(qout);
    free(ref);
    return status;
}
