/*
 * bench-matvec.c -- the read speed of a decode step's product per weight
 * type: one column times a matrix far larger than the caches, the rows
 * split among the threads in contiguous shares of whole groups of 16,
 * plain (gguf_matmul()) and, where the SIMD level has them, interleaved
 * (gguf_matmul_il(), the CPU backend's repacked rows); each product right
 * after a read of the same bytes by the same threads in the same shares
 * (bench-mem's loop, tests/bench/readsum.h), so that the share of the
 * bandwidth each reaches holds while this machine's bandwidth moves.
 *
 *   bench-matvec [-t THREADS] [-m MIB] [-k ELEMENTS] [TYPE...]
 *
 * TYPE: the weight types (default q4_K q5_K q6_K q4_0 q5_0 q8_0); a
 * matrix of MIB MiB (default 512) of rows of ELEMENTS weights (default
 * 1536, the 1.5b model's width; 8960 is its ffn_down's), 64 distinct
 * quantized Gaussian rows over and over.  Prints, per type, the best
 * read GB/s (10^9 bytes a second), and for each layout the best product
 * GB/s and the median of its speed over the read's just before it.
 */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "tests/bench/benchutil.h"
#include "tests/bench/readsum.h"

#define DISTINCT 64 /* rows quantized; the others copies */

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static double gauss(void)
{
    double u[2];
    for (int i = 0; i < 2; i++) {
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        u[i] = ((double)((rng_state * 2685821657736338717ull) >> 11) + 0.5) / 9007199254740992.0;
    }
    return sqrt(-2.0 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

/* One product of the nrows rows at w (interleaved if il) with the column
 * act, threads contiguous shares of whole groups each. */
static void product(uint32_t t, const uint8_t *w, size_t rb, int64_t nrows, int64_t k, const void *act,
                    float *out, int threads, int il)
{
    int bad = 0;
#pragma omp parallel num_threads(threads) reduction(| : bad)
    {
        int64_t r0, r1;
        team_share(nrows / 16, &r0, &r1);
        r0 *= 16;
        r1 *= 16;
        bad |= (il ? gguf_matmul_il : gguf_matmul)(t, w + (size_t)r0 * rb, rb, r1 - r0, k, act, 0, 1, out + r0,
                                                    (size_t)nrows) != GGUF_OK;
    }
    if (bad) {
        fprintf(stderr, "bench-matvec: the product failed\n");
        exit(1);
    }
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define PASSES 9

/* PASSES pairs of a read of the matrix's bytes and a product on them, in
 * turn: the best GB/s of the product into *gbs, the median of its speed
 * over the read's in the same pair into *share, the read's best time
 * into *read_best (if better). */
static void measure(uint32_t t, const uint8_t *w, size_t rb, int64_t nrows, int64_t k, const void *act,
                    float *out, int threads, int il, double *gbs, double *share, double *read_best,
                    uint64_t *sink)
{
    double best = 1e30, ratio[PASSES];
    for (int pass = 0; pass < PASSES; pass++) {
        double t0 = bench_now();
        *sink += read_all((const uint64_t *)(const void *)w, rb * (size_t)nrows / 256 * 32, threads);
        const double tr = bench_now() - t0;
        t0 = bench_now();
        product(t, w, rb, nrows, k, act, out, threads, il);
        const double tp = bench_now() - t0;
        if (tp < best) best = tp;
        if (tr < *read_best) *read_best = tr;
        ratio[pass] = tr / tp;
    }
    qsort(ratio, PASSES, sizeof ratio[0], cmp_double);
    *gbs = (double)rb * (double)nrows / best / 1e9;
    *share = 100.0 * ratio[PASSES / 2];
}

int main(int argc, char **argv)
{
    int threads = 0, opt;
    long mib = 512;
    int64_t k = 1536;
    while ((opt = getopt(argc, argv, "t:m:k:")) != -1) {
        if (opt == 't') threads = atoi(optarg);
        else if (opt == 'm') mib = atol(optarg);
        else if (opt == 'k') k = atoll(optarg);
        else {
            fprintf(stderr, "usage: bench-matvec [-t THREADS] [-m MIB] [-k ELEMENTS] [TYPE...]\n");
            return 2;
        }
    }
    if (mib < 1 || threads < 0 || k < 256 || k % 256) {
        fprintf(stderr, "bench-matvec: bad size, width (a multiple of 256) or threads\n");
        return 2;
    }
    threads = team_threads(threads);
    static const char *const defaults[] = {"q4_K", "q5_K", "q6_K", "q4_0", "q5_0", "q8_0"};
    const int ntypes = optind < argc ? argc - optind : 6;
    printf("bench-matvec: %d thread%s, %ld MiB a matrix, rows of %lld, SIMD %s; GB/s the best of %d "
           "products, %% the median of each over a read of its bytes just before\n",
           threads, threads == 1 ? "" : "s", mib, (long long)k, gguf_simd_name(gguf_simd_get()), PASSES);
    printf("%-6s %9s %17s %17s\n", "type", "read", "plain", "interleaved");
    uint64_t sink = 0;
    float *src = malloc(sizeof(float) * (size_t)k);
    if (!src) return 2;
    for (int ti = 0; ti < ntypes; ti++) {
        const char *name = optind < argc ? argv[optind + ti] : defaults[ti];
        uint32_t t;
        if (gguf_type_parse(name, &t) != GGUF_OK || gguf_matmul_act_type(t) == GGUF_T_COUNT) {
            fprintf(stderr, "bench-matvec: %s: not a weight type of the products\n", name);
            return 2;
        }
        const size_t rb = (size_t)gguf_row_bytes(t, (uint64_t)k);
        const int64_t nrows = (int64_t)(((size_t)mib << 20) / rb / 16 * 16);
        uint8_t *w = aligned_alloc(64, (rb * (size_t)nrows + 63) / 64 * 64);
        void *act = malloc(gguf_matmul_act_size(t, k));
        float *out = malloc(sizeof(float) * (size_t)nrows);
        if (!w || !act || !out || nrows < 16) {
            fprintf(stderr, "bench-matvec: out of memory\n");
            return 2;
        }
        for (int r = 0; r < DISTINCT; r++) {
            for (int64_t i = 0; i < k; i++) src[i] = (float)gauss();
            if (gguf_quantize_row(t, src, w + (size_t)r * rb, k) != GGUF_OK) return 2;
        }
        for (int64_t r = DISTINCT; r < nrows; r++) memcpy(w + (size_t)r * rb, w + (size_t)(r % DISTINCT) * rb, rb);
        for (int64_t i = 0; i < k; i++) src[i] = (float)gauss();
        if (gguf_matmul_quantize(t, src, act, k) != GGUF_OK) return 2;
        double read_best = 1e30, plain, plain_share, il = 0.0, il_share = 0.0;
        measure(t, w, rb, nrows, k, act, out, threads, 0, &plain, &plain_share, &read_best, &sink);
        const int with_il = gguf_matmul_il_rows(t) > 0;
        if (with_il) {
            uint8_t *w2 = aligned_alloc(64, (rb * (size_t)nrows + 63) / 64 * 64);
            if (!w2 || gguf_interleave_rows(t, w, w2, nrows, k) != GGUF_OK) return 2;
            free(w);
            w = w2;
            measure(t, w, rb, nrows, k, act, out, threads, 1, &il, &il_share, &read_best, &sink);
        }
        printf("%-6s %9.1f %9.1f %5.0f %%", name, (double)(rb * (size_t)nrows / 256 * 256) / read_best / 1e9, plain,
               plain_share);
        if (with_il)
            printf(" %9.1f %5.0f %%\n", il, il_share);
        else
            printf(" %17s\n", "-");
        fflush(stdout);
        free(w);
        free(act);
        free(out);
    }
    free(src);
    printf("(read sum %016llx)\n", (unsigned long long)sink);
    return 0;
}
