/*
 * bench-matmul.c -- the speed of the products of many columns per weight
 * type: a prompt's (prefill) and a batched decode step's, which are bound
 * by the arithmetic where a one-column product (bench-matvec) is bound by
 * the memory.  Each type's matrix of ROWS rows of K weights (the 1.5b
 * model's feed-forward shape by default) is laid out as the CPU backend
 * keeps it (interleaved rows where the SIMD level has them), in copies
 * enough to fill MIB MiB, which the products take in turn so that the
 * weights come from memory as in a forward pass; the columns are
 * quantized and, where the level has packed products, packed once before
 * the products are timed (the engine packs an input once for the several
 * matrices that take it).  The rows are split among the threads in
 * contiguous shares of whole groups of 16.
 *
 *   bench-matmul [-t THREADS] [-k ELEMENTS] [-r ROWS] [-m MIB]
 *                [-c COLUMNS,...] [TYPE...]
 *
 * Defaults: OpenMP's threads, rows of 1536, 8960 rows, 64 MiB, columns
 * 1,2,4,8,16,32,64,128, types q4_K q5_K q6_K q4_0 q5_0 q8_0.
 * Prints, per type and column count, the best of ROUNDS rounds over all
 * copies in GMAC/s (10^9 multiply-adds a second); every product's
 * outputs must have the bits of gguf_matmul() on the plain rows (quant.h
 * promises them), else it fails.
 */
#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "tests/bench/benchutil.h"

#define DISTINCT 64 /* rows quantized; the others copies */
#define ROUNDS 5
#define MAX_COLS 32 /* column counts in a -c list */

static void *xalloc(size_t n)
{
    void *p = aligned_alloc(64, (n + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "bench-matmul: out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

/* The product of the nrows rows at w (interleaved if il) with nc columns
 * (packed at pk if pk, else the activations act, a_stride apart), threads
 * in contiguous shares of whole groups of 16. */
static void product(uint32_t t, const uint8_t *w, size_t rb, int64_t nrows, int64_t k, const void *act,
                    size_t a_stride, const void *pk, int64_t nc, float *out, int threads, int il)
{
    int bad = 0;
#pragma omp parallel num_threads(threads) reduction(| : bad)
    {
        int64_t r0, r1;
        team_share((nrows + 15) / 16, &r0, &r1);
        r0 *= 16;
        r1 = r1 * 16 < nrows ? r1 * 16 : nrows;
        const uint8_t *wr = w + (size_t)r0 * rb;
        if (r1 > r0)
            bad |= (pk ? (il ? gguf_matmul_packed_il : gguf_matmul_packed)(t, wr, rb, r1 - r0, k, pk, nc, out + r0,
                                                                          (size_t)nrows)
                       : (il ? gguf_matmul_il : gguf_matmul)(t, wr, rb, r1 - r0, k, act, a_stride, nc, out + r0,
                                                             (size_t)nrows)) != GGUF_OK;
    }
    if (bad) {
        fprintf(stderr, "bench-matmul: the product failed\n");
        exit(1);
    }
}

int main(int argc, char **argv)
{
    int threads = 0, opt, ncounts = 0;
    long mib = 64;
    int64_t k = 1536, nrows = 8960, counts[MAX_COLS];
    while ((opt = getopt(argc, argv, "t:k:r:m:c:")) != -1) {
        if (opt == 't') threads = (int)bench_arg("bench-matmul", optarg, 1, 1024, 't');
        else if (opt == 'k') k = bench_arg("bench-matmul", optarg, 256, 1 << 20, 'k');
        else if (opt == 'r') nrows = bench_arg("bench-matmul", optarg, 16, 1 << 24, 'r');
        else if (opt == 'm') mib = bench_arg("bench-matmul", optarg, 1, 1 << 16, 'm');
        else if (opt == 'c') {
            char *list = optarg, *tok, *save = NULL;
            ncounts = 0;
            for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (ncounts == MAX_COLS) {
                    fprintf(stderr, "bench-matmul: -c: at most %d column counts\n", MAX_COLS);
                    return 2;
                }
                counts[ncounts++] = bench_arg("bench-matmul", tok, 1, 4096, 'c');
            }
        } else {
            fprintf(stderr, "usage: bench-matmul [-t THREADS] [-k ELEMENTS] [-r ROWS] [-m MIB] [-c COLUMNS,...] "
                            "[TYPE...]\n");
            return 2;
        }
    }
    if (k % 256) {
        fprintf(stderr, "bench-matmul: -k: not a multiple of 256: %lld\n", (long long)k);
        return 2;
    }
    if (!ncounts) {
        static const int64_t defaults[] = {1, 2, 4, 8, 16, 32, 64, 128};
        ncounts = 8;
        memcpy(counts, defaults, sizeof defaults);
    }
    threads = team_threads(threads);
    static const char *const default_types[] = {"q4_K", "q5_K", "q6_K", "q4_0", "q5_0", "q8_0"};
    const int ntypes = optind < argc ? argc - optind : 6;
    int64_t max_cols = 0;
    for (int j = 0; j < ncounts; j++)
        if (counts[j] > max_cols) max_cols = counts[j];

    printf("bench-matmul: %d thread%s, %lld x %lld matrices in copies filling %ld MiB, SIMD %s; GMAC/s, the best "
           "of %d rounds over the copies\n",
           threads, threads == 1 ? "" : "s", (long long)nrows, (long long)k, mib, gguf_simd_name(gguf_simd_get()),
           ROUNDS);
    printf("%-6s %-6s", "type", "rows");
    for (int j = 0; j < ncounts; j++) printf(" %7lld", (long long)counts[j]);
    printf("   (columns)\n");

    uint64_t seed = 0x9e3779b97f4a7c15ull;
    float *src = xalloc(sizeof(float) * (size_t)k * DISTINCT); /* DISTINCT rows, or a column */
    for (int ti = 0; ti < ntypes; ti++) {
        const char *name = optind < argc ? argv[optind + ti] : default_types[ti];
        uint32_t t;
        if (gguf_type_parse(name, &t) != GGUF_OK || gguf_matmul_act_type(t) == GGUF_T_COUNT) {
            fprintf(stderr, "bench-matmul: %s: not a weight type of the products\n", name);
            return 2;
        }
        const size_t rb = (size_t)gguf_row_bytes(t, (uint64_t)k), bytes = rb * (size_t)nrows;
        const int nmat = (int)((((size_t)mib << 20) + bytes - 1) / bytes);
        uint8_t *plain = xalloc(bytes);
        for (int r = 0; r < DISTINCT && r < nrows; r++)
            for (int64_t i = 0; i < k; i++) src[(size_t)r * (size_t)k + (size_t)i] = bench_next(&seed);
        if (gguf_quantize_rows(t, src, plain, nrows < DISTINCT ? nrows : DISTINCT, k, 1) != GGUF_OK) return 2;
        for (int64_t r = DISTINCT; r < nrows; r++) memcpy(plain + (size_t)r * rb, plain + (size_t)(r % DISTINCT) * rb, rb);
        const int il = gguf_matmul_il_rows(t) > 0;
        uint8_t **w = xalloc(sizeof(uint8_t *) * (size_t)nmat);
        for (int m = 0; m < nmat; m++) {
            w[m] = xalloc(bytes);
            if (!il)
                memcpy(w[m], plain, bytes);
            else if (gguf_interleave_rows(t, plain, w[m], nrows, k) != GGUF_OK)
                return 2;
        }
        const size_t a_stride = gguf_matmul_act_size(t, k);
        uint8_t *act = xalloc(a_stride * (size_t)max_cols);
        for (int64_t c = 0; c < max_cols; c++) {
            for (int64_t i = 0; i < k; i++) src[i] = bench_next(&seed);
            if (gguf_matmul_quantize(t, src, act + (size_t)c * a_stride, k) != GGUF_OK) return 2;
        }
        float *out = xalloc(sizeof(float) * (size_t)nrows * (size_t)max_cols);
        float *ref = xalloc(sizeof(float) * (size_t)nrows * (size_t)max_cols);
        printf("%-6s %-6s", name, il ? "il" : "plain");
        for (int j = 0; j < ncounts; j++) {
            const int64_t nc = counts[j];
            const size_t psz = (il ? gguf_matmul_pack_size_il : gguf_matmul_pack_size)(t, k, nc);
            void *pk = psz ? xalloc(psz) : NULL;
            if (pk && gguf_matmul_pack(t, act, a_stride, k, nc, 0, (nc + 15) / 16, pk) != GGUF_OK) return 2;
            double best = 1e30;
            for (int round = 0; round < ROUNDS; round++) {
                const double t0 = bench_now();
                for (int m = 0; m < nmat; m++) product(t, w[m], rb, nrows, k, act, a_stride, pk, nc, out, threads, il);
                const double dt = bench_now() - t0;
                if (dt < best) best = dt;
            }
            /* the last product's bits against the plain rows' */
            if (gguf_matmul(t, plain, rb, nrows, k, act, a_stride, nc, ref, (size_t)nrows) != GGUF_OK) return 2;
            if (memcmp(out, ref, sizeof(float) * (size_t)nrows * (size_t)nc)) {
                printf("\n");
                fprintf(stderr, "bench-matmul: %s, %lld columns: not the bits of gguf_matmul() on plain rows\n", name,
                        (long long)nc);
                return 1;
            }
            printf(" %7.1f", (double)k * (double)nrows * (double)nc * nmat / best / 1e9);
            fflush(stdout);
            free(pk);
        }
        printf("\n");
        for (int m = 0; m < nmat; m++) free(w[m]);
        free(w);
        free(plain);
        free(act);
        free(out);
        free(ref);
    }
    free(src);
    return 0;
}
