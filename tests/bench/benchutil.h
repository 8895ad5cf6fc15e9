/*
 * benchutil.h -- what the benchmarks' C programs share: bench_now() the
 * monotonic clock in seconds, bench_next() deterministic values,
 * bench_arg() a numeric option checked against its range, team_threads()
 * the threads of a -t option, and team_share() the calling OpenMP
 * thread's contiguous share of n units.
 */
#ifndef GGUF_TESTS_BENCH_BENCHUTIL_H
#define GGUF_TESTS_BENCH_BENCHUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Deterministic values in [-0.5, 0.5). */
static inline float bench_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(*s >> 40) / (float)(1u << 24) - 0.5f;
}

/* The value of option -opt of program me, a decimal from lo to hi; exits
 * with status 2 and a message otherwise. */
static inline long bench_arg(const char *me, const char *s, long lo, long hi, char opt)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || end == s || v < lo || v > hi) {
        fprintf(stderr, "%s: -%c: not a number from %ld to %ld: '%s'\n", me, opt, lo, hi, s);
        exit(2);
    }
    return v;
}

/* The threads a -t THREADS option asks for: OpenMP's default for 0, 1
 * without OpenMP. */
static inline int team_threads(int threads)
{
#ifdef _OPENMP
    return threads ? threads : omp_get_max_threads();
#else
    (void)threads;
    return 1;
#endif
}

/* Units *lo .. *hi - 1 of n: the calling thread's contiguous share, in a
 * parallel region (all of them outside one, or without OpenMP). */
static inline void team_share(int64_t n, int64_t *lo, int64_t *hi)
{
#ifdef _OPENMP
    const int64_t id = omp_get_thread_num(), nt = omp_get_num_threads();
#else
    const int64_t id = 0, nt = 1;
#endif
    *lo = n * id / nt;
    *hi = n * (id + 1) / nt;
}

#endif /* GGUF_TESTS_BENCH_BENCHUTIL_H */
