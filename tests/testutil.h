/* testutil.h -- a small helper for C unit tests.
 * Exit status follows the automake harness: 0 pass, 1 fail, 77 skip,
 * 99 hard error (the test itself could not run). */
#ifndef TESTS_TESTUTIL_H
#define TESTS_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tu_failures;
static int tu_checks;

/* CHECK(cond, fmt, ...): records a failure with file:line and a message,
 * and goes on. */
#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        tu_checks++;                                                        \
        if (!(cond)) {                                                      \
            tu_failures++;                                                  \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, \
                    #cond);                                                 \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
        }                                                                   \
    } while (0)

/* REQUIRE(cond, ...): as CHECK, but a failure ends the test at once. */
#define REQUIRE(cond, ...)                                                  \
    do {                                                                    \
        int tu_ok_ = (cond) != 0; /* evaluated once */                      \
        tu_checks++;                                                        \
        if (!tu_ok_) {                                                      \
            tu_failures++;                                                  \
            fprintf(stderr, "%s:%d: required check failed: %s: ", __FILE__,  \
                    __LINE__, #cond);                                       \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
            tu_finish();                                                    \
        }                                                                   \
    } while (0)

/* Ends the test with 99: the test could not run (not a verdict). */
#define HARD_ERROR(...)                                                     \
    do {                                                                    \
        fprintf(stderr, "%s:%d: hard error: ", __FILE__, __LINE__);         \
        fprintf(stderr, __VA_ARGS__);                                       \
        fputc('\n', stderr);                                                \
        exit(99);                                                           \
    } while (0)

/* Ends the test as skipped, saying why. */
#define SKIP(...)                                                           \
    do {                                                                    \
        fprintf(stderr, "SKIP: ");                                          \
        fprintf(stderr, __VA_ARGS__);                                       \
        fputc('\n', stderr);                                                \
        exit(77);                                                           \
    } while (0)

/* Prints the tally and exits 0 when every check passed, else 1. */
static inline void tu_finish(void)
{
    fprintf(stderr, "%d checks, %d failed\n", tu_checks, tu_failures);
    if (tu_checks == 0) exit(99); /* a test that checked nothing proves nothing */
    exit(tu_failures ? 1 : 0);
}

#endif
