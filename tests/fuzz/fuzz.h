/*
 * fuzz.h -- shared by the harnesses of tests/fuzz.
 *
 * Each harness is one LLVMFuzzerTestOneInput() over one parser.  Built with
 * --enable-fuzzing it is a libFuzzer program; otherwise tests/fuzz/driver.c
 * gives it a main() that runs the inputs named on the command line, so that
 * `make check` replays the regression inputs with any compiler.
 *
 * A harness fails by abort() (FUZZ_ASSERT), which libFuzzer reports as a
 * crash with the input that caused it: never by a return value.
 */
#ifndef TESTS_FUZZ_FUZZ_H
#define TESTS_FUZZ_FUZZ_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with file, line and a message when cond is false. */
#define FUZZ_ASSERT(cond, ...)                                                       \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
            abort();                                                                 \
        }                                                                            \
    } while (0)

/* The harness itself cannot go on (no memory for its own bookkeeping, no
 * pipe): not a finding, but nothing can be judged either. */
#define FUZZ_TROUBLE(...)                                                            \
    do {                                                                             \
        fprintf(stderr, "fuzz harness trouble: ");                                   \
        fprintf(stderr, __VA_ARGS__);                                                \
        fputc('\n', stderr);                                                         \
        exit(99);                                                                    \
    } while (0)

/* --- reading the input as a recipe ------------------------------------------ */

/* A cursor over the input, for harnesses that build things from its bytes.
 * Past the end every read gives zeros. */
struct fuzz_in {
    const uint8_t *p;
    size_t n;
};

static inline uint8_t fz_u8(struct fuzz_in *in)
{
    if (!in->n) return 0;
    in->n--;
    return *in->p++;
}

static inline uint16_t fz_u16(struct fuzz_in *in)
{
    uint16_t v = fz_u8(in);
    return (uint16_t)(v | (uint16_t)fz_u8(in) << 8);
}

static inline uint32_t fz_u32(struct fuzz_in *in)
{
    uint32_t v = fz_u16(in);
    return v | (uint32_t)fz_u16(in) << 16;
}

static inline uint64_t fz_u64(struct fuzz_in *in)
{
    uint64_t v = fz_u32(in);
    return v | (uint64_t)fz_u32(in) << 32;
}

/* Up to n bytes: stores where they start and returns how many there are. */
static inline size_t fz_bytes(struct fuzz_in *in, size_t n, const uint8_t **p)
{
    if (n > in->n) n = in->n;
    *p = in->p;
    in->p += n;
    in->n -= n;
    return n;
}

/* --- a pipe fed by a thread ---------------------------------------------------- */

struct fuzz_feed {
    pthread_t thread;
    int fd;                 /* the write end, owned by the thread */
    const uint8_t *p;
    size_t n;
};

static inline void *fuzz_feed_run(void *arg)
{
    struct fuzz_feed *f = arg;
    /* Small writes of varying size, so that the reader sees short reads. */
    size_t off = 0, k = 1;
    while (off < f->n) {
        size_t m = f->n - off < k ? f->n - off : k;
        ssize_t w = write(f->fd, f->p + off, m);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;      /* the reader is done (EPIPE) */
        off += (size_t)w;
        k = k * 7 % 65521 + 1;
    }
    close(f->fd);
    return NULL;
}

/* Starts a thread that writes the n bytes at p into a pipe and closes it.
 * Returns the read end, which the caller reads (gguf_open_fd takes it
 * over) and then calls fuzz_feed_join(). */
static inline int fuzz_feed_start(struct fuzz_feed *f, const void *p, size_t n)
{
    int fds[2];
    signal(SIGPIPE, SIG_IGN);   /* a reader that stops early is normal */
    if (pipe(fds) < 0) FUZZ_TROUBLE("pipe: %s", strerror(errno));
    f->fd = fds[1];
    f->p = p;
    f->n = n;
    if (pthread_create(&f->thread, NULL, fuzz_feed_run, f) != 0) FUZZ_TROUBLE("pthread_create");
    return fds[0];
}

static inline void fuzz_feed_join(struct fuzz_feed *f)
{
    pthread_join(f->thread, NULL);
}

/* --- files in memory ---------------------------------------------------------- */

/* An anonymous file in memory, for the writer's output. */
static inline int fuzz_memfd(void)
{
    int fd = memfd_create("fuzz", MFD_CLOEXEC);
    if (fd < 0) FUZZ_TROUBLE("memfd_create: %s", strerror(errno));
    return fd;
}

/* The whole content of fd (from offset 0) in a malloc'ed buffer of exactly
 * that size (so that ASan sees reads past it); *n gets the size. */
static inline uint8_t *fuzz_slurp_fd(int fd, size_t *n)
{
    struct stat st;
    if (fstat(fd, &st) < 0) FUZZ_TROUBLE("fstat: %s", strerror(errno));
    size_t len = (size_t)st.st_size;
    uint8_t *p = malloc(len ? len : 1);
    if (!p) FUZZ_TROUBLE("out of memory");
    for (size_t off = 0; off < len;) {
        ssize_t r = pread(fd, p + off, len - off, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) FUZZ_TROUBLE("pread: %s", r < 0 ? strerror(errno) : "short file");
        off += (size_t)r;
    }
    *n = len;
    return p;
}

#endif /* TESTS_FUZZ_FUZZ_H */
