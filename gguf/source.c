/* source.c -- the bytes under the parser: a read-only mapping, memory, or a
 * stream (pipe, socket, gzip) read into a growing buffer.
 *
 * Streams are read with read(2) here, and gzip data inflated here with
 * zlib's inflate(), rather than through zlib's gzread(): gzread gives up
 * with an error when a signal interrupts its read(2) (EINTR) and drops the
 * bytes that call had read, so a process with a signal handler could not
 * read a pipe reliably.  Gzip input follows gzread's rules all the same:
 * gzip data is recognised by its magic bytes, members follow each other,
 * and bytes after the last member that do not start another are ignored. */
#include <config.h>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "gguf/internal.h"

#define STREAM_CHUNK (256u * 1024u)

/* The reader of a stream's descriptor. */
struct gg_stream {
    int fd;
    int fd_eof;             /* read(2) returned 0 */
    int gzip;               /* inflating */
    int member_end;         /* gzip: the current member is complete */
    z_stream z;
    unsigned char *in;      /* bytes read but not yet used: z.next_in, z.avail_in */
};

static void source_init(gg_source *s)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->size = UINT64_MAX;
}

/* read(2) of up to n bytes, again when a signal interrupts it.  Returns the
 * count (0 at end of input) or -1 with errno set. */
static ssize_t read_some(int fd, void *buf, size_t n)
{
    ssize_t r;
    do r = read(fd, buf, n); while (r < 0 && errno == EINTR);
    return r;
}

static int read_error(gg_source *s, const char *name, gguf_error *err)
{
    int e = errno;
    return gg_fail(err, GGUF_E_IO, e, s->spos, name, "read error at byte %llu: %s",
                   (unsigned long long)s->spos, strerror(e));
}

/* Reads more of the descriptor after the unused input, so that at least
 * `want` bytes are unused (fewer at the end of input).  Returns GGUF_OK or
 * GGUF_E_IO with err filled. */
static int fill_input(gg_source *s, unsigned want, const char *name, gguf_error *err)
{
    struct gg_stream *st = s->st;
    if (st->z.avail_in && st->z.next_in != st->in) memmove(st->in, st->z.next_in, st->z.avail_in);
    st->z.next_in = st->in;
    while (st->z.avail_in < want && !st->fd_eof) {
        ssize_t r = read_some(st->fd, st->in + st->z.avail_in, STREAM_CHUNK - st->z.avail_in);
        if (r < 0) return read_error(s, name, err);
        if (r == 0) st->fd_eof = 1;
        st->z.avail_in += (uInt)r;
    }
    return GGUF_OK;
}

/* Notes the end of the input after spos bytes. */
static long long at_end(gg_source *s)
{
    s->eof = 1;
    s->size = s->spos;
    return 0;
}

/* Inflates up to n bytes of a gzip stream into buf.  Returns the count (0
 * at the end of the data) or minus a gguf_status with err filled. */
static long long inflate_some(gg_source *s, unsigned char *buf, size_t n, const char *name,
                              gguf_error *err)
{
    struct gg_stream *st = s->st;
    z_stream *z = &st->z;
    int rc;
    if (n > UINT_MAX) n = UINT_MAX;
    z->next_out = buf;
    z->avail_out = (uInt)n;
    while (z->avail_out == n) {
        if (st->member_end) {
            /* Another member, or the end: anything else after a member is
             * ignored, as gzread ignores it. */
            if ((rc = fill_input(s, 2, name, err))) return -rc;
            if (z->avail_in < 2 || z->next_in[0] != 0x1f || z->next_in[1] != 0x8b) return at_end(s);
            if (inflateReset(z) != Z_OK)
                return -gg_fail(err, GGUF_E_NOMEM, ENOMEM, s->spos, name, "zlib: %s", z->msg);
            st->member_end = 0;
        }
        if (z->avail_in == 0) {
            if ((rc = fill_input(s, 1, name, err))) return -rc;
            if (z->avail_in == 0)
                return -gg_fail(err, GGUF_E_FORMAT, 0, s->spos, name,
                                "gzip stream truncated after %llu decompressed bytes",
                                (unsigned long long)s->spos);
        }
        rc = inflate(z, Z_NO_FLUSH);
        if (rc == Z_STREAM_END) {
            st->member_end = 1;
        } else if (rc == Z_MEM_ERROR) {
            return -gg_fail(err, GGUF_E_NOMEM, ENOMEM, s->spos, name,
                            "out of memory inflating gzip data");
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            return -gg_fail(err, GGUF_E_FORMAT, 0, s->spos, name,
                            "gzip data corrupt after %llu decompressed bytes: %s",
                            (unsigned long long)s->spos, z->msg ? z->msg : "bad data");
        }
    }
    return (long long)(n - z->avail_out);
}

/* Reads up to n bytes of the stream (inflated when gzip) into buf.
 * Returns the count (0 at the end of the input) or minus a gguf_status with
 * err filled. */
static long long stream_read_some(gg_source *s, void *buf, size_t n, const char *name,
                                  gguf_error *err)
{
    struct gg_stream *st = s->st;
    long long got;
    if (s->eof || n == 0) return 0;
    if (st->gzip) {
        got = inflate_some(s, buf, n, name, err);
    } else if (st->z.avail_in) {
        /* Plain data: first the bytes read to look for the gzip magic. */
        got = st->z.avail_in < n ? st->z.avail_in : (long long)n;
        memcpy(buf, st->z.next_in, (size_t)got);
        st->z.next_in += got;
        st->z.avail_in -= (uInt)got;
    } else {
        ssize_t r = read_some(st->fd, buf, n);
        if (r < 0) return -read_error(s, name, err);
        got = r;
    }
    if (got <= 0) {
        if (got == 0) at_end(s);
        return got;
    }
    s->spos += (uint64_t)got;
    return got;
}

/* Starts reading fd (taken over) as a stream: gzip when it starts with
 * the gzip magic bytes, plain data otherwise. */
static int stream_open(gg_source *s, int fd, const char *name, gguf_error *err)
{
    struct gg_stream *st = calloc(1, sizeof *st);
    unsigned char *in = malloc(STREAM_CHUNK);
    if (!st || !in) {
        free(st);
        free(in);
        close(fd);
        return gg_fail(err, GGUF_E_NOMEM, ENOMEM, UINT64_MAX, name, "out of memory");
    }
    st->fd = fd;
    st->in = in;
    st->z.next_in = in;
    s->st = st;
    s->mode = GGUF_INPUT_STREAM;
    s->base = (const uint8_t *)"";
    int rc = fill_input(s, 2, name, err);
    if (rc == GGUF_OK && st->z.avail_in >= 2 && in[0] == 0x1f && in[1] == 0x8b) {
        /* 15 + 16: a gzip wrapper around deflate data with a 32 KiB window. */
        if (inflateInit2(&st->z, 15 + 16) == Z_OK) {
            st->gzip = 1;
            s->mode = GGUF_INPUT_GZIP;
        } else {
            rc = gg_fail(err, GGUF_E_NOMEM, ENOMEM, UINT64_MAX, name, "cannot start zlib inflation");
        }
    }
    if (rc) gg_source_close(s);
    return rc;
}

int gg_source_open_fd(gg_source *s, int fd, int no_mmap, const char *name, gguf_error *err)
{
    source_init(s);
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return gg_fail(err, GGUF_E_IO, e, UINT64_MAX, name, "%s", strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return gg_fail(err, GGUF_E_IO, EISDIR, UINT64_MAX, name, "%s", strerror(EISDIR));
    }
    if (S_ISREG(st.st_mode) && !no_mmap) {
        unsigned char magic[2];
        ssize_t got;
        do got = pread(fd, magic, 2, 0); while (got < 0 && errno == EINTR);
        if (got < 0) {
            int e = errno;
            close(fd);
            return gg_fail(err, GGUF_E_IO, e, 0, name, "%s", strerror(e));
        }
        int gz = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
        if (!gz) {
            s->mode = GGUF_INPUT_MAPPED;
            s->size = (uint64_t)st.st_size;
            s->avail = s->size;
            if (st.st_size == 0) {
                close(fd);
                s->base = (const uint8_t *)"";
                return GGUF_OK;
            }
            if ((uint64_t)st.st_size > SIZE_MAX) {
                close(fd);
                return gg_fail(err, GGUF_E_UNSUPPORTED, 0, UINT64_MAX, name,
                               "file too large to map");
            }
            void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
            if (m == MAP_FAILED) {
                int e = errno;
                close(fd);
                return gg_fail(err, GGUF_E_IO, e, UINT64_MAX, name, "mmap: %s", strerror(e));
            }
            s->map = m;
            s->map_len = (size_t)st.st_size;
            s->base = m;
            s->fd = fd;
            return GGUF_OK;
        }
    }
    return stream_open(s, fd, name, err);
}

void gg_source_open_memory(gg_source *s, const void *data, size_t size)
{
    source_init(s);
    s->mode = GGUF_INPUT_MEMORY;
    s->base = size ? data : (const void *)"";
    s->avail = s->size = size;
}

void gg_source_close(gg_source *s)
{
    if (!s) return;
    if (s->map) munmap(s->map, s->map_len);
    if (s->fd >= 0) close(s->fd);
    if (s->st) {
        if (s->st->gzip) inflateEnd(&s->st->z);
        close(s->st->fd);
        free(s->st->in);
        free(s->st);
    }
    free(s->buf);
    source_init(s);
}

int gg_source_need(gg_source *s, uint64_t end, const char *name, gguf_error *err)
{
    if (end <= s->avail) return GGUF_OK;
    if (!s->st || s->eof || s->spos != s->avail) return GG_EOF;
    while (s->avail < end) {
        if (s->avail == s->cap) {
            /* Grow with the bytes that actually arrived, never by a declared
             * length: a hostile length costs at most twice the input. */
            uint64_t ncap = s->cap ? s->cap * 2 : STREAM_CHUNK;
            if (ncap > SIZE_MAX)
                return gg_fail(err, GGUF_E_NOMEM, ENOMEM, s->avail, name, "input too large");
            uint8_t *nb = realloc(s->buf, (size_t)ncap);
            if (!nb)
                return gg_fail(err, GGUF_E_NOMEM, ENOMEM, s->avail, name,
                               "out of memory reading %llu bytes of metadata",
                               (unsigned long long)ncap);
            s->buf = nb;
            s->cap = ncap;
            s->base = nb;
        }
        long long got = stream_read_some(s, s->buf + s->avail, (size_t)(s->cap - s->avail), name, err);
        if (got < 0) return (int)-got;
        if (got == 0) return GG_EOF;
        s->avail += (uint64_t)got;
    }
    return GGUF_OK;
}

int gg_source_drain(gg_source *s, const char *name, gguf_error *err)
{
    if (!s->st) return GGUF_OK;
    unsigned char scratch[64 * 1024];
    while (!s->eof) {
        long long got = stream_read_some(s, scratch, sizeof scratch, name, err);
        if (got < 0) return (int)-got;
    }
    return GGUF_OK;
}

int gg_source_read(gg_source *s, uint64_t off, void *buf, size_t n, const char *name,
                   gguf_error *err)
{
    uint8_t *out = buf;
    /* Part still in the header buffer. */
    if (off < s->avail) {
        uint64_t k = s->avail - off;
        if (k > n) k = n;
        memcpy(out, s->base + off, (size_t)k);
        out += k;
        off += k;
        n -= (size_t)k;
    }
    if (n == 0) return GGUF_OK;
    if (off < s->spos)
        return gg_fail(err, GGUF_E_INVALID, 0, off, name,
                       "stream input: byte %llu was already read (streams are read in order)",
                       (unsigned long long)off);
    unsigned char scratch[64 * 1024];
    while (s->spos < off) {
        if (s->eof) return GG_EOF;
        uint64_t k = off - s->spos;
        if (k > sizeof scratch) k = sizeof scratch;
        long long got = stream_read_some(s, scratch, (size_t)k, name, err);
        if (got < 0) return (int)-got;
    }
    while (n > 0) {
        if (s->eof) return GG_EOF;
        long long got = stream_read_some(s, out, n, name, err);
        if (got < 0) return (int)-got;
        out += got;
        n -= (size_t)got;
    }
    return GGUF_OK;
}
