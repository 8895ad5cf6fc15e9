/* source.c -- the bytes under the parser: a read-only mapping, memory, or a
 * stream (pipe, socket, gzip) read through zlib into a growing buffer. */
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

static void source_init(gg_source *s)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->size = UINT64_MAX;
}

/* Reads up to n bytes from the gz stream.  Returns the count (0 at end of
 * input) or minus a gguf_status with err filled. */
static long long gz_read_some(gg_source *s, void *buf, size_t n, const char *name, gguf_error *err)
{
    if (n > (size_t)INT_MAX / 2) n = (size_t)INT_MAX / 2;
    int got = gzread((gzFile)s->gz, buf, (unsigned)n);
    if (got < 0) {
        int zerr = 0;
        const char *msg = gzerror((gzFile)s->gz, &zerr);
        if (zerr == Z_ERRNO)
            return -gg_fail(err, GGUF_E_IO, errno, s->spos, name, "read error at byte %llu: %s",
                            (unsigned long long)s->spos, strerror(errno));
        return -gg_fail(err, GGUF_E_FORMAT, 0, s->spos, name,
                        "gzip data corrupt after %llu decompressed bytes: %s",
                        (unsigned long long)s->spos, msg);
    }
    if (got == 0) {
        /* gzread returns 0 both at a clean end and at a truncated gzip
         * member; zlib reports the latter through gzerror. */
        int zerr = 0;
        const char *msg = gzerror((gzFile)s->gz, &zerr);
        if (zerr != Z_OK && zerr != Z_BUF_ERROR) {
            return -gg_fail(err, GGUF_E_FORMAT, 0, s->spos, name, "gzip data corrupt: %s", msg);
        }
        if (zerr == Z_BUF_ERROR) {
            return -gg_fail(err, GGUF_E_FORMAT, 0, s->spos, name,
                            "gzip stream truncated after %llu decompressed bytes",
                            (unsigned long long)s->spos);
        }
        s->eof = 1;
        s->size = s->spos;
    }
    s->spos += (uint64_t)got;
    return got;
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
    /* A stream.  zlib reads plain data transparently, so one path serves
     * pipes with and without gzip. */
    gzFile g = gzdopen(fd, "rb");
    if (!g) {
        close(fd);
        return gg_fail(err, GGUF_E_NOMEM, 0, UINT64_MAX, name, "cannot start zlib stream");
    }
    gzbuffer(g, STREAM_CHUNK);
    s->gz = g;
    s->mode = GGUF_INPUT_STREAM;
    s->base = (const uint8_t *)"";
    /* Learn whether the input is compressed: zlib decides on the first read. */
    int rc = gg_source_need(s, 1, name, err);
    if (rc > 0) {
        gg_source_close(s);
        return rc;
    }
    if (!gzdirect(g)) s->mode = GGUF_INPUT_GZIP;
    return GGUF_OK;
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
    if (s->gz) gzclose((gzFile)s->gz);
    free(s->buf);
    source_init(s);
}

int gg_source_need(gg_source *s, uint64_t end, const char *name, gguf_error *err)
{
    if (end <= s->avail) return GGUF_OK;
    if (!s->gz || s->eof || s->spos != s->avail) return GG_EOF;
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
        long long got = gz_read_some(s, s->buf + s->avail, (size_t)(s->cap - s->avail), name, err);
        if (got < 0) return (int)-got;
        if (got == 0) return GG_EOF;
        s->avail += (uint64_t)got;
    }
    return GGUF_OK;
}

int gg_source_drain(gg_source *s, const char *name, gguf_error *err)
{
    if (!s->gz) return GGUF_OK;
    unsigned char scratch[64 * 1024];
    while (!s->eof) {
        long long got = gz_read_some(s, scratch, sizeof scratch, name, err);
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
        long long got = gz_read_some(s, scratch, (size_t)k, name, err);
        if (got < 0) return (int)-got;
    }
    while (n > 0) {
        if (s->eof) return GG_EOF;
        long long got = gz_read_some(s, out, n, name, err);
        if (got < 0) return (int)-got;
        out += got;
        n -= (size_t)got;
    }
    return GGUF_OK;
}
