/*
 * readsum.h -- the read loop of bench-mem.c, shared with bench-matvec.c:
 * sum_wide() and sum_narrow() sum 64-bit words lo .. hi - 1 of a buffer,
 * read_all() all n of them with THREADS OpenMP threads, each a contiguous
 * share.
 */
#ifndef GGUF_TESTS_BENCH_READSUM_H
#define GGUF_TESTS_BENCH_READSUM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

typedef uint64_t v2u64 __attribute__((vector_size(16)));
typedef uint64_t v8u64 __attribute__((vector_size(64)));

/* The sum of words lo .. hi - 1 (a multiple of 32 apart), four vector
 * sums so that no load waits for another: with 64-byte loads where the
 * CPU has AVX-512 (wider loads reach more of the bandwidth here: 18
 * against 12 GB/s with two threads), else 16-byte ones. */
__attribute__((target("avx512f"))) static uint64_t sum_wide(const uint64_t *buf, size_t lo, size_t hi)
{
    v8u64 s[4] = {{0}, {0}, {0}, {0}};
    for (size_t i = lo; i < hi; i += 32)
        for (int k = 0; k < 4; k++) {
            v8u64 v;
            memcpy(&v, buf + i + 8 * k, sizeof v);
            s[k] += v;
        }
    uint64_t sum = 0;
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 8; j++) sum += s[k][j];
    return sum;
}

static uint64_t sum_narrow(const uint64_t *buf, size_t lo, size_t hi)
{
    v2u64 s[4] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
    for (size_t i = lo; i < hi; i += 8)
        for (int k = 0; k < 4; k++) {
            v2u64 v;
            memcpy(&v, buf + i + 2 * k, sizeof v);
            s[k] += v;
        }
    return s[0][0] + s[0][1] + s[1][0] + s[1][1] + s[2][0] + s[2][1] + s[3][0] + s[3][1];
}


/* The sum of words 0 .. n - 1 of buf (n a multiple of 32), threads
 * contiguous shares each, with the widest loads the CPU has. */
static uint64_t read_all(const uint64_t *buf, size_t n, int threads)
{
    const int wide = __builtin_cpu_supports("avx512f");
    uint64_t sum = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sum)
    {
#ifdef _OPENMP
        const size_t id = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
#else
        const size_t id = 0, nt = 1;
        (void)threads;
#endif
        const size_t lo = n / 32 * id / nt * 32, hi = n / 32 * (id + 1) / nt * 32;
        sum += wide ? sum_wide(buf, lo, hi) : sum_narrow(buf, lo, hi);
    }
    return sum;
}

#endif /* GGUF_TESTS_BENCH_READSUM_H */
