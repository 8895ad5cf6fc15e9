/*
 * bench-attn.c -- a decode step's attention on the CPU, per SIMD path:
 * for each of L layers and each KV head (one a thread, as the CPU
 * backend shares them), the G query heads that read it take their dot
 * products with the cached keys of P positions (gguf_vec_dot_f16_rows_m),
 * the softmax of each, and the weighted sum of the cached values
 * (gguf_vec_axpy_f16_rows_m); keys and values halves, heads of D, each
 * layer's cache its own memory (L x KV x P x D x 4 bytes in all: past the
 * caches at the defaults, as in a decode step after a long prompt).
 *
 *   bench-attn [-t THREADS] [-p POSITIONS] [-l LAYERS] [-k KV_HEADS]
 *              [-g GROUP] [-d HEAD_DIM] [-r ROUNDS]
 *
 * Defaults: the 1.5b model after a 2048-token prompt (-p 2048 -l 28 -k 2
 * -g 6 -d 128), two threads, 20 rounds.  Prints, per SIMD path, the best
 * round's milliseconds a step, and the best rounds' milliseconds of the
 * dot products (with the softmax) and of the weighted sums, each summed
 * over the threads, and the largest difference of an output from the
 * first path's (the paths sum in their own orders).
 */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "tests/bench/benchutil.h"

int main(int argc, char **argv)
{
    long threads = 2, P = 2048, L = 28, KV = 2, G = 6, D = 128, rounds = 20;
    int opt;
    while ((opt = getopt(argc, argv, "t:p:l:k:g:d:r:")) != -1) {
        switch (opt) {
        case 't': threads = bench_arg("bench-attn", optarg, 1, 1024, 't'); break;
        case 'p': P = bench_arg("bench-attn", optarg, 1, 1L << 20, 'p'); break;
        case 'l': L = bench_arg("bench-attn", optarg, 1, 1024, 'l'); break;
        case 'k': KV = bench_arg("bench-attn", optarg, 1, 1024, 'k'); break;
        case 'g': G = bench_arg("bench-attn", optarg, 1, 64, 'g'); break;
        case 'd': D = bench_arg("bench-attn", optarg, 1, 1024, 'd'); break;
        case 'r': rounds = bench_arg("bench-attn", optarg, 1, 100000, 'r'); break;
        default:
            fprintf(stderr, "usage: bench-attn [-t THREADS] [-p POSITIONS] [-l LAYERS] [-k KV_HEADS] "
                            "[-g GROUP] [-d HEAD_DIM] [-r ROUNDS]\n");
            return 2;
        }
    }
    const size_t head = (size_t)P * (size_t)D, heads = (size_t)L * (size_t)KV;
    if ((double)heads * (double)head * 4.0 > 16.0 * 1073741824.0) {
        fprintf(stderr, "bench-attn: a cache of more than 16 GiB: fewer positions or layers\n");
        return 2;
    }
    uint16_t *kc = malloc(heads * head * sizeof *kc), *vc = malloc(heads * head * sizeof *vc);
    float *q = malloc((size_t)KV * G * D * sizeof *q);
    float *att = malloc((size_t)KV * G * P * sizeof *att);
    float *o = malloc((size_t)KV * G * D * sizeof *o), *want = malloc((size_t)L * KV * G * D * sizeof *want);
    float *got = malloc((size_t)L * KV * G * D * sizeof *got);
    if (!kc || !vc || !q || !att || !o || !want || !got) {
        fprintf(stderr, "bench-attn: out of memory\n");
        return 1;
    }
    uint64_t seed = 1;
    float row[1024];
    for (size_t h = 0; h < heads * P; h++) {
        for (long i = 0; i < D; i++) row[i] = bench_next(&seed);
        gguf_quantize_row(GGUF_T_F16, row, kc + h * D, D);
        for (long i = 0; i < D; i++) row[i] = bench_next(&seed);
        gguf_quantize_row(GGUF_T_F16, row, vc + h * D, D);
    }
    for (size_t i = 0; i < (size_t)KV * G * D; i++) q[i] = bench_next(&seed);
    const float scale = 1.0f / sqrtf((float)D);

    printf("attention of a decode step: %ld layers x %ld KV heads of %ld positions x %ld, %ld queries each; "
           "%ld thread%s, best of %ld rounds\n",
           L, KV, P, D, G, threads, threads > 1 ? "s" : "", rounds);
    printf("  %-8s %12s %14s %14s %12s\n", "path", "ms a step", "dot (threads)", "axpy (threads)", "max diff");
    int first = 1;
    for (int level = GGUF_SIMD_SCALAR; level <= GGUF_SIMD_AMX; level++) {
        if (gguf_simd_set(level) != GGUF_OK) continue;
        double best = INFINITY, best_dot = INFINITY, best_axpy = INFINITY;
        for (long r = 0; r < rounds; r++) {
            double dot = 0, axpy = 0;
            const double t0 = bench_now();
#pragma omp parallel for schedule(static, 1) num_threads(threads) reduction(+ : dot, axpy)
            for (long kv = 0; kv < KV; kv++) {
                float *a = att + (size_t)kv * G * P, *y = o + (size_t)kv * G * D;
                const float *qk = q + (size_t)kv * G * D;
                for (long l = 0; l < L; l++) {
                    const size_t at = ((size_t)l * KV + (size_t)kv) * head;
                    const double a0 = bench_now();
                    gguf_vec_dot_f16_rows_m(qk, D, G, kc + at, D, P, D, a, P);
                    for (long g = 0; g < G; g++) gguf_vec_softmax(a + (size_t)g * P, P, scale);
                    const double a1 = bench_now();
                    memset(y, 0, (size_t)G * D * sizeof *y);
                    gguf_vec_axpy_f16_rows_m(y, D, a, P, G, vc + at, D, P, D);
                    const double a2 = bench_now();
                    dot += a1 - a0;
                    axpy += a2 - a1;
                    memcpy(got + ((size_t)l * KV + (size_t)kv) * G * D, y, (size_t)G * D * sizeof *y);
                }
            }
            const double t = bench_now() - t0;
            if (t < best) best = t;
            if (dot < best_dot) best_dot = dot;
            if (axpy < best_axpy) best_axpy = axpy;
        }
        if (first) memcpy(want, got, (size_t)L * KV * G * D * sizeof *want);
        double diff = 0;
        for (size_t i = 0; i < (size_t)L * KV * G * D; i++) diff = fmax(diff, fabs((double)got[i] - want[i]));
        printf("  %-8s %12.3f %14.3f %14.3f %12.2g\n", gguf_simd_name(level), best * 1e3, best_dot * 1e3,
               best_axpy * 1e3, diff);
        if (!(diff <= 1e-3)) {
            fprintf(stderr, "bench-attn: the %s path's outputs differ from the first path's by %g\n",
                    gguf_simd_name(level), diff);
            return 1;
        }
        first = 0;
    }
    gguf_simd_set(gguf_simd_best());
    free(kc);
    free(vc);
    free(q);
    free(att);
    free(o);
    free(want);
    free(got);
    return 0;
}
