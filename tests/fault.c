/*
 * fault.c -- a fault-injection shim for the tests, loaded with LD_PRELOAD
 * into a tool and configured by environment variables.  Built only for
 * `make check`, never installed.
 *
 *   FAULT_OP       the calls that are counted: write (the default), pwrite,
 *                  fsync, fchmod, linkat, rename, mmap (of a regular file;
 *                  with FAULT_TRUNCATE set, of that file only), or openw
 *                  (an open for writing without O_CREAT: of a file there)
 *   FAULT_FD       for write: "file" (the default) counts writes to regular
 *                  files on descriptors above 2 (the output); a number
 *                  counts writes to that descriptor (1: standard output)
 *   FAULT_AT       the counted call that gets the fault, from 1 (default 1)
 *   FAULT_ACTION   what it gets:
 *                    eio, enospc, efbig, eintr, eacces: the call fails with that
 *                      errno instead of being made
 *                    short: a write moves at most half of its bytes (at
 *                      least one), this one and every counted one after it
 *                    sigterm, sigint, sighup, sigkill: the process sends
 *                      itself the signal before the call
 *                    crash: a write or pwrite makes half of its bytes,
 *                      then the process dies of SIGKILL (a crash mid-write)
 *                    truncate: FAULT_TRUNCATE is cut to FAULT_TRUNCATE_SIZE
 *                      bytes (default 0) as if by another process, right
 *                      after the call for mmap, right before it otherwise
 *   FAULT_TMPFILE  an errno name (EOPNOTSUPP, EISDIR, EINVAL): every open
 *                  with O_TMPFILE fails with it, as on a system without
 *                  O_TMPFILE, so that the fallback is used
 *   FAULT_LOG      a file that gets one line for each fault injected, so
 *                  that a test can tell that its fault happened
 *
 * Counting is atomic: the tools write from one thread, but may map and
 * read from several.
 */
#include <config.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum op { OP_WRITE, OP_PWRITE, OP_FSYNC, OP_FCHMOD, OP_LINKAT, OP_RENAME, OP_MMAP, OP_OPENW, OP_NONE };
enum action { A_NONE, A_ERRNO, A_SHORT, A_SIGNAL, A_TRUNCATE, A_CRASH };

static struct config {
    int ready;
    enum op op;
    int fd;                     /* -1: regular files above 2 */
    long at;
    enum action action;
    int err;                    /* A_ERRNO */
    int sig;                    /* A_SIGNAL */
    const char *truncate_path;
    long long truncate_size;
    int tmpfile_errno;          /* 0: O_TMPFILE passes */
    const char *log;
} cfg;

static long counted;

extern char **environ;

static int errno_named(const char *s)
{
    static const struct { const char *name; int value; } names[] = {
        { "eio", EIO }, { "enospc", ENOSPC }, { "efbig", EFBIG }, { "eintr", EINTR }, { "eacces", EACCES },
        { "EOPNOTSUPP", EOPNOTSUPP }, { "EISDIR", EISDIR }, { "EINVAL", EINVAL },
        { "ENOENT", ENOENT },
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i].name) == 0) return names[i].value;
    return 0;
}

/* Reads the configuration once; an unknown value is a broken test.  Not
 * before the environment is there: a sanitizer runtime loaded first calls
 * the shim while it starts, before the C library has set environ up. */
static void configure(void)
{
    if (__atomic_load_n(&cfg.ready, __ATOMIC_ACQUIRE)) return;
    if (!environ || !*environ) {
        cfg.op = OP_NONE;
        return;
    }
    const char *s = getenv("FAULT_OP");
    cfg.op = OP_NONE;
    if (!s || strcmp(s, "write") == 0) cfg.op = OP_WRITE;
    else if (strcmp(s, "pwrite") == 0) cfg.op = OP_PWRITE;
    else if (strcmp(s, "fsync") == 0) cfg.op = OP_FSYNC;
    else if (strcmp(s, "fchmod") == 0) cfg.op = OP_FCHMOD;
    else if (strcmp(s, "linkat") == 0) cfg.op = OP_LINKAT;
    else if (strcmp(s, "rename") == 0) cfg.op = OP_RENAME;
    else if (strcmp(s, "mmap") == 0) cfg.op = OP_MMAP;
    else if (strcmp(s, "openw") == 0) cfg.op = OP_OPENW;
    else {
        fprintf(stderr, "fault: unknown FAULT_OP '%s'\n", s);
        _exit(99);
    }
    s = getenv("FAULT_FD");
    cfg.fd = s && strcmp(s, "file") != 0 ? atoi(s) : -1;
    s = getenv("FAULT_AT");
    cfg.at = s ? atol(s) : 1;
    s = getenv("FAULT_ACTION");
    cfg.action = A_NONE;
    if (!s) {
        /* FAULT_TMPFILE alone */
    } else if (strcmp(s, "short") == 0) {
        cfg.action = A_SHORT;
    } else if (strcmp(s, "truncate") == 0) {
        cfg.action = A_TRUNCATE;
    } else if (strcmp(s, "crash") == 0) {
        cfg.action = A_CRASH;
    } else if (strncmp(s, "sig", 3) == 0) {
        cfg.action = A_SIGNAL;
        cfg.sig = !strcmp(s, "sigterm") ? SIGTERM : !strcmp(s, "sigint") ? SIGINT
                : !strcmp(s, "sighup") ? SIGHUP : !strcmp(s, "sigkill") ? SIGKILL : 0;
    } else {
        cfg.action = A_ERRNO;
        cfg.err = errno_named(s);
    }
    if ((cfg.action == A_ERRNO && !cfg.err) || (cfg.action == A_SIGNAL && !cfg.sig)) {
        fprintf(stderr, "fault: unknown FAULT_ACTION '%s'\n", s);
        _exit(99);
    }
    cfg.truncate_path = getenv("FAULT_TRUNCATE");
    s = getenv("FAULT_TRUNCATE_SIZE");
    cfg.truncate_size = s ? atoll(s) : 0;
    if (cfg.action == A_TRUNCATE && !cfg.truncate_path) {
        fprintf(stderr, "fault: FAULT_ACTION=truncate needs FAULT_TRUNCATE\n");
        _exit(99);
    }
    s = getenv("FAULT_TMPFILE");
    cfg.tmpfile_errno = s ? errno_named(s) : 0;
    if (s && !cfg.tmpfile_errno) {
        fprintf(stderr, "fault: unknown FAULT_TMPFILE '%s'\n", s);
        _exit(99);
    }
    cfg.log = getenv("FAULT_LOG");
    __atomic_store_n(&cfg.ready, 1, __ATOMIC_RELEASE);
}

/* The next function of that name after this library (the C library's). */
static void *real(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        fprintf(stderr, "fault: no %s to call\n", name);
        _exit(99);
    }
    return p;
}

#define REAL(type, name) \
    static type real_##name; \
    if (!real_##name) real_##name = (type)real(#name)

typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef int (*fsync_fn)(int);
typedef int (*fchmod_fn)(int, mode_t);
typedef int (*linkat_fn)(int, const char *, int, const char *, int);
typedef int (*rename_fn)(const char *, const char *);
typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);

/* Appends a line to FAULT_LOG. */
static void note(const char *what, long n)
{
    if (!cfg.log) return;
    REAL(open_fn, open);
    REAL(write_fn, write);
    int fd = real_open(cfg.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    char line[256];
    int k = snprintf(line, sizeof line, "%s at call %ld\n", what, n);
    if (k > 0) real_write(fd, line, (size_t)k);
    close(fd);
}

static void cut_file(void)
{
    if (truncate(cfg.truncate_path, cfg.truncate_size) != 0) {
        fprintf(stderr, "fault: truncate %s: %s\n", cfg.truncate_path, strerror(errno));
        _exit(99);
    }
}

/* Counts a call of kind op.  Returns the action it gets (A_NONE mostly);
 * signals are sent and truncations made before the call here, except a
 * truncation after mmap, which the caller makes. */
static enum action count(enum op op)
{
    configure();
    if (cfg.op != op || cfg.action == A_NONE) return A_NONE;
    long n = __atomic_add_fetch(&counted, 1, __ATOMIC_ACQ_REL);
    if (cfg.action == A_SHORT) {
        if (n < cfg.at) return A_NONE;
        if (n == cfg.at) note("short writes from here on", n);
        return A_SHORT;
    }
    if (n != cfg.at) return A_NONE;
    switch (cfg.action) {
    case A_ERRNO:
        note(strerror(cfg.err), n);
        break;
    case A_SIGNAL:
        note(strsignal(cfg.sig), n);
        kill(getpid(), cfg.sig);
        break;
    case A_TRUNCATE:
        note("truncated", n);
        if (op != OP_MMAP) cut_file();
        break;
    case A_CRASH:
        note("crash after half the bytes", n);
        break;
    default:
        break;
    }
    return cfg.action;
}

static int counts_write(int fd)
{
    configure();
    if (cfg.fd >= 0) return fd == cfg.fd;
    struct stat st;
    return fd > 2 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    REAL(write_fn, write);
    if (counts_write(fd)) {
        switch (count(OP_WRITE)) {
        case A_ERRNO:
            errno = cfg.err;
            return -1;
        case A_SHORT:
            if (n > 1) n = (n + 1) / 2;
            break;
        case A_CRASH:
            real_write(fd, buf, (n + 1) / 2);
            kill(getpid(), SIGKILL);
            break;
        default:
            break;
        }
    }
    return real_write(fd, buf, n);
}

typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    REAL(pwrite_fn, pwrite);
    if (counts_write(fd)) {
        switch (count(OP_PWRITE)) {
        case A_ERRNO:
            errno = cfg.err;
            return -1;
        case A_SHORT:
            if (n > 1) n = (n + 1) / 2;
            break;
        case A_CRASH:
            real_pwrite(fd, buf, (n + 1) / 2, off);
            kill(getpid(), SIGKILL);
            break;
        default:
            break;
        }
    }
    return real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    return pwrite(fd, buf, n, off);
}

int fsync(int fd)
{
    REAL(fsync_fn, fsync);
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && count(OP_FSYNC) == A_ERRNO) {
        errno = cfg.err;
        return -1;
    }
    return real_fsync(fd);
}

int fchmod(int fd, mode_t mode)
{
    REAL(fchmod_fn, fchmod);
    if (count(OP_FCHMOD) == A_ERRNO) {
        errno = cfg.err;
        return -1;
    }
    return real_fchmod(fd, mode);
}

int linkat(int olddir, const char *old, int newdir, const char *new, int flags)
{
    REAL(linkat_fn, linkat);
    if (count(OP_LINKAT) == A_ERRNO) {
        errno = cfg.err;
        return -1;
    }
    return real_linkat(olddir, old, newdir, new, flags);
}

int rename(const char *old, const char *new)
{
    REAL(rename_fn, rename);
    if (count(OP_RENAME) == A_ERRNO) {
        errno = cfg.err;
        return -1;
    }
    return real_rename(old, new);
}

/* Whether a mapping of fd is one that FAULT_OP=mmap counts. */
static int counts_mmap(int fd)
{
    struct stat st, want;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    configure();
    if (!cfg.truncate_path) return 1;
    return stat(cfg.truncate_path, &want) == 0 && want.st_dev == st.st_dev &&
           want.st_ino == st.st_ino;
}

static void *mmap_common(void *p, size_t n, int prot, int flags, int fd, off_t off)
{
    REAL(mmap_fn, mmap);
    int counted_here = counts_mmap(fd);
    enum action a = counted_here ? count(OP_MMAP) : A_NONE;
    if (a == A_ERRNO) {
        errno = cfg.err;
        return MAP_FAILED;
    }
    void *m = real_mmap(p, n, prot, flags, fd, off);
    if (a == A_TRUNCATE && m != MAP_FAILED) cut_file();
    return m;
}

void *mmap(void *p, size_t n, int prot, int flags, int fd, off_t off)
{
    return mmap_common(p, n, prot, flags, fd, off);
}

void *mmap64(void *p, size_t n, int prot, int flags, int fd, off_t off)
{
    return mmap_common(p, n, prot, flags, fd, off);
}

/* O_TMPFILE includes O_DIRECTORY: test for all its bits; its own bit
 * alone says that a mode argument follows. */
#ifdef O_TMPFILE
#define TMPFILE_BIT (O_TMPFILE & ~O_DIRECTORY)
#else
#define TMPFILE_BIT 0
#endif

static int refuse_tmpfile(int flags)
{
#ifdef O_TMPFILE
    if ((flags & O_TMPFILE) != O_TMPFILE) return 0;
    configure();
    if (cfg.tmpfile_errno) {
        note("O_TMPFILE refused", 0);
        errno = cfg.tmpfile_errno;
        return 1;
    }
#else
    (void)flags;
#endif
    return 0;
}

/* Whether an open with these flags fails (FAULT_OP=openw), errno set. */
static int refuse_open(int flags)
{
    if (!(flags & (O_WRONLY | O_RDWR)) || (flags & O_CREAT) || (flags & TMPFILE_BIT)) return 0;
    if (count(OP_OPENW) != A_ERRNO) return 0;
    errno = cfg.err;
    return 1;
}

/* The mode argument is there when the flags say so (O_CREAT, O_TMPFILE). */
#define MODE_ARG(flags, mode) \
    do { \
        va_list ap; \
        va_start(ap, flags); \
        mode = (flags & O_CREAT) || (flags & TMPFILE_BIT) ? va_arg(ap, mode_t) : 0; \
        va_end(ap); \
    } while (0)

int open(const char *path, int flags, ...)
{
    REAL(open_fn, open);
    mode_t mode;
    MODE_ARG(flags, mode);
    if (refuse_tmpfile(flags) || refuse_open(flags)) return -1;
    return real_open(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    REAL(open_fn, open64);
    mode_t mode;
    MODE_ARG(flags, mode);
    if (refuse_tmpfile(flags) || refuse_open(flags)) return -1;
    return real_open64(path, flags, mode);
}

int openat(int dir, const char *path, int flags, ...)
{
    REAL(openat_fn, openat);
    mode_t mode;
    MODE_ARG(flags, mode);
    if (refuse_tmpfile(flags) || refuse_open(flags)) return -1;
    return real_openat(dir, path, flags, mode);
}

int openat64(int dir, const char *path, int flags, ...)
{
    REAL(openat_fn, openat64);
    mode_t mode;
    MODE_ARG(flags, mode);
    if (refuse_tmpfile(flags) || refuse_open(flags)) return -1;
    return real_openat64(dir, path, flags, mode);
}
