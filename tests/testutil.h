/* testutil.h -- a small helper for C unit tests.
 * Exit status follows the automake harness: 0 pass, 1 fail, 77 skip,
 * 99 hard error (the test itself could not run). */
#ifndef TESTS_TESTUTIL_H
#define TESTS_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

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

/* Starts a child process that writes the n bytes at p into a pipe, `chunk`
 * bytes a write (0: all at once) with pause_ns nanoseconds after each, then
 * exits.  Returns the pipe's read end; *child gets the child's pid (the
 * caller waits for it). */
static inline int tu_pipe_feed(const void *p, size_t n, size_t chunk, long pause_ns, pid_t *child)
{
    int fds[2];
    if (pipe(fds) < 0) HARD_ERROR("pipe");
    pid_t pid = fork();
    if (pid < 0) HARD_ERROR("fork");
    if (pid == 0) {
        close(fds[0]);
        const unsigned char *b = p;
        struct timespec pause = {0, pause_ns};
        for (size_t off = 0; off < n;) {
            size_t k = chunk && n - off > chunk ? chunk : n - off;
            ssize_t w = write(fds[1], b + off, k);
            if (w <= 0) _exit(1);
            off += (size_t)w;
            if (pause_ns) nanosleep(&pause, NULL);
        }
        _exit(0);
    }
    close(fds[1]);
    *child = pid;
    return fds[0];
}

/* Prints the tally and exits 0 when every check passed, else 1. */
static inline void tu_finish(void)
{
    fprintf(stderr, "%d checks, %d failed\n", tu_checks, tu_failures);
    if (tu_checks == 0) exit(99); /* a test that checked nothing proves nothing */
    exit(tu_failures ? 1 : 0);
}

#endif
