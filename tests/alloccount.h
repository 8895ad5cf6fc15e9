/* alloccount.h -- counts the allocations of a stretch of a C test.
 *
 * The test is linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc:
 * calls from the program and from the libraries linked in statically
 * (infer/) come to the wrappers below, which count them while counting is
 * on.  Include in one file of the test, after testutil.h. */
#ifndef TESTS_ALLOCCOUNT_H
#define TESTS_ALLOCCOUNT_H

#include <stdlib.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
static int tu_counting;
static long tu_n_allocs;

static inline void tu_count(void)
{
    if (__atomic_load_n(&tu_counting, __ATOMIC_RELAXED)) __atomic_add_fetch(&tu_n_allocs, 1, __ATOMIC_RELAXED);
}

void *__wrap_malloc(size_t n)
{
    tu_count();
    return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    tu_count();
    return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    tu_count();
    return __real_realloc(p, n);
}

/* Starts counting from 0, after proving that the counter sees this
 * program's own allocations. */
static inline void tu_alloc_count_begin(void)
{
    __atomic_store_n(&tu_counting, 1, __ATOMIC_RELAXED);
    void *volatile probe = malloc(16);
    free(probe);
    __atomic_store_n(&tu_counting, 0, __ATOMIC_RELAXED);
    CHECK(tu_n_allocs == 1, "the allocation counter counted %ld of 1", tu_n_allocs);
    tu_n_allocs = 0;
    __atomic_store_n(&tu_counting, 1, __ATOMIC_RELAXED);
}

/* Stops counting; returns the allocations since tu_alloc_count_begin(). */
static inline long tu_alloc_count_end(void)
{
    __atomic_store_n(&tu_counting, 0, __ATOMIC_RELAXED);
    return tu_n_allocs;
}

#endif
