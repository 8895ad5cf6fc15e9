/*
 * bench-mem.c -- the memory read bandwidth a decoder can reach here: the
 * ceiling of single-sequence decode, which reads every weight once a
 * token.  Built by `make bench`; bench-qwen-run.sh runs it with the
 * decoder's threads, in the same run, and reports the decoder's share.
 *
 *   bench-mem [-t THREADS] [-m MIB]
 *
 * Sums a buffer of MIB MiB (default 1024: past every cache) as 64-bit
 * words with THREADS OpenMP threads (default: OpenMP's), each a
 * contiguous share (see sum_wide()); the buffer is written first (pages
 * faulted in).  Prints
 * the best of five passes in GB/s (10^9 bytes).
 */
#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/bench/benchutil.h"
#include "tests/bench/readsum.h"

int main(int argc, char **argv)
{
    int threads = 0, opt;
    long mib = 1024;
    while ((opt = getopt(argc, argv, "t:m:")) != -1) {
        if (opt == 't') threads = atoi(optarg);
        else if (opt == 'm') mib = atol(optarg);
        else {
            fprintf(stderr, "usage: bench-mem [-t THREADS] [-m MIB]\n");
            return 2;
        }
    }
    if (mib < 1 || threads < 0) {
        fprintf(stderr, "bench-mem: bad size or threads\n");
        return 2;
    }
    threads = team_threads(threads);
    const size_t n = (size_t)mib << 17; /* 64-bit words */
    uint64_t *buf = aligned_alloc(64, n * sizeof *buf);
    if (!buf) {
        fprintf(stderr, "bench-mem: out of memory for %ld MiB\n", mib);
        return 2;
    }
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t i = 0; i < n; i++) buf[i] = i * 0x9e3779b97f4a7c15ull;
    double best = 1e30;
    uint64_t total = 0;
    for (int pass = 0; pass < 5; pass++) {
        const double t0 = bench_now();
        const uint64_t sum = read_all(buf, n, threads);
        const double d = bench_now() - t0;
        if (d < best) best = d;
        total += sum;
    }
    printf("read bandwidth: %.1f GB/s (%d thread%s, %ld MiB, best of 5; sum %016llx)\n",
           (double)(n * sizeof *buf) / best / 1e9, threads, threads == 1 ? "" : "s", mib,
           (unsigned long long)total);
    free(buf);
    return 0;
}
