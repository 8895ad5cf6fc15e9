/*
 * fuzz-stream.c -- the stream code under the reader (gguf/source.c): the
 * same bytes as memory and as a pipe fed by a thread must get the same
 * verdict, and the same message; a disagreement is a bug.  Each input goes
 *  1. through a pipe, read at open to its end: the verdict and message of
 *     gguf_open_memory(), and for an accepted file the same header bytes and
 *     content;
 *  2. through a pipe opened with GGUF_OPEN_SEQUENTIAL, its tensors read
 *     with gguf_read_data() in offset order, then gguf_read_to_end(): the
 *     memory verdict (a refusal at open with the same status, or for data
 *     past the end, at one of the reads) and the same bytes;
 *  3. as 2, hashed with gguf_hash_file(): the same digests as in memory;
 *  4. gzip-compressed here with zlib, through a pipe: as 1, in gzip mode;
 *  5. when the input itself starts like gzip data: as 1, against the
 *     memory verdict on what zlib makes of it.
 */
#include <config.h>

#include <zlib.h>

#include "gguf/gguf.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/walk.h"

#define NAME "fuzz.gguf"
/* Inputs that inflate beyond this are not compared (5): their cost, not
 * their content, would decide what the fuzzer explores. */
#define INFLATE_MAX (16u << 20)

/* The memory verdict on some bytes: the file (or NULL) and the refusal. */
struct verdict {
    int rc;
    gguf_file *f;
    gguf_error err;
};

static void memory_verdict(struct verdict *v, const uint8_t *p, size_t n)
{
    memset(v, 0, sizeof *v);
    v->rc = gguf_open_memory(&v->f, p, n, NAME, &v->err);
}

/* 1, 4, 5: the bytes at p through a pipe, read at open; must match m. */
static void check_pipe(const uint8_t *p, size_t n, const struct verdict *m, int want_mode,
                       const char *what)
{
    struct fuzz_feed feed;
    int fd = fuzz_feed_start(&feed, p, n);
    gguf_file *f = NULL;
    gguf_error err;
    memset(&err, 0, sizeof err);
    int rc = gguf_open_fd(&f, fd, NAME, 0, &err);
    if (rc != GGUF_OK) fuzz_check_refusal(rc, f, &err, NAME, 0);
    if (rc != GGUF_OK || m->rc != GGUF_OK) {
        gguf_close(f);
        fuzz_feed_join(&feed);
        fuzz_same_refusal(m->rc, &m->err, rc, &err, what);
        return;
    }
    FUZZ_ASSERT(gguf_input_mode(f) == want_mode, "%s: input mode %d", what, gguf_input_mode(f));
    FUZZ_ASSERT(gguf_header_size(f) == gguf_header_size(m->f) &&
                    memcmp(gguf_header_bytes(f), gguf_header_bytes(m->f),
                           (size_t)gguf_header_size(f)) == 0,
                "%s: header bytes differ", what);
    FUZZ_ASSERT(gguf_file_size(f) == gguf_file_size(m->f), "%s: sizes %llu and %llu", what,
                (unsigned long long)gguf_file_size(f), (unsigned long long)gguf_file_size(m->f));
    fuzz_walk_file(f, NULL, 0);
    fuzz_same_content(m->f, f, 1);
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++)
        FUZZ_ASSERT(gguf_tensor_at(f, i)->offset == gguf_tensor_at(m->f, i)->offset,
                    "%s: tensor %llu offset", what, (unsigned long long)i);
    gguf_close(f);
    fuzz_feed_join(&feed);
}

struct placed {
    uint64_t off;
    uint64_t idx;
};

static int by_offset(const void *a, const void *b)
{
    const struct placed *x = a, *y = b;
    if (x->off != y->off) return x->off < y->off ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Opens the input as a sequential stream.  Returns the handle, or NULL
 * after checking that memory refuses it too.  The message may differ:
 * without the size of the input the open cannot check where tensor data
 * ends, so a later check may be the first to fail. */
static gguf_file *open_sequential(struct fuzz_feed *feed, const uint8_t *p, size_t n,
                                  const struct verdict *m, const char *what)
{
    int fd = fuzz_feed_start(feed, p, n);
    gguf_file *f = NULL;
    gguf_error err;
    memset(&err, 0, sizeof err);
    int rc = gguf_open_fd(&f, fd, NAME, GGUF_OPEN_SEQUENTIAL, &err);
    if (rc == GGUF_OK) return f;
    fuzz_check_refusal(rc, f, &err, NAME, 0);
    fuzz_feed_join(feed);
    FUZZ_ASSERT(m->rc == rc, "%s: status %d (%s), in memory %d (%s)", what, rc, err.message,
                m->rc, m->rc ? m->err.message : "accepted");
    return NULL;
}

/* 2: tensor data read in offset order. */
static void check_sequential(const uint8_t *p, size_t n, const struct verdict *m)
{
    struct fuzz_feed feed;
    gguf_file *f = open_sequential(&feed, p, n, m, "sequential open");
    if (!f) return;
    if (m->rc == GGUF_OK) fuzz_same_content(m->f, f, 1);
    uint64_t nt = gguf_tensor_count(f), k = 0;
    struct placed *order = malloc((size_t)(nt ? nt : 1) * sizeof *order);
    if (!order) FUZZ_TROUBLE("out of memory");
    for (uint64_t i = 0; i < nt; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (t->size) order[k++] = (struct placed){ t->file_offset, i };
    }
    qsort(order, (size_t)k, sizeof *order, by_offset);
    /* In pieces: a declared size may be anything up to 2^63. */
    static uint8_t buf[1 << 16];
    gguf_error err;
    int rc = GGUF_OK;
    for (uint64_t j = 0; j < k && rc == GGUF_OK; j++) {
        const gguf_tensor *t = gguf_tensor_at(f, order[j].idx);
        const gguf_tensor *mt = m->rc == GGUF_OK ? gguf_tensor_at(m->f, order[j].idx) : NULL;
        for (uint64_t done = 0; done < t->size && rc == GGUF_OK;) {
            size_t piece = t->size - done < sizeof buf ? (size_t)(t->size - done) : sizeof buf;
            memset(&err, 0, sizeof err);
            rc = gguf_read_data(f, t->file_offset + done, buf, piece, &err);
            if (rc == GGUF_OK && mt)
                FUZZ_ASSERT(memcmp(buf, (const uint8_t *)mt->data + done, piece) == 0,
                            "tensor %llu: bytes differ", (unsigned long long)order[j].idx);
            done += piece;
        }
    }
    if (rc == GGUF_OK) {
        memset(&err, 0, sizeof err);
        rc = gguf_read_to_end(f, &err);
    }
    if (m->rc == GGUF_OK) {
        FUZZ_ASSERT(rc == GGUF_OK, "sequential: refused what memory accepts: %s", err.message);
        FUZZ_ASSERT(gguf_file_size(f) == gguf_file_size(m->f), "sequential: size");
    } else {
        FUZZ_ASSERT(rc == GGUF_E_FORMAT, "sequential: status %d (%s) where memory refused: %s", rc,
                    rc ? err.message : "accepted", m->err.message);
    }
    free(order);
    gguf_close(f);
    fuzz_feed_join(&feed);
}

/* 3: one pass of gguf_hash_file(). */
static void check_hash(const uint8_t *p, size_t n, const struct verdict *m)
{
    struct fuzz_feed feed;
    gguf_file *f = open_sequential(&feed, p, n, m, "hashed open");
    if (!f) return;
    uint64_t nt = gguf_tensor_count(f);
    gguf_digest whole, meta, *t = calloc((size_t)(nt ? nt : 1), sizeof *t);
    if (!t) FUZZ_TROUBLE("out of memory");
    gguf_error err;
    memset(&err, 0, sizeof err);
    int rc = gguf_hash_file(f, GGUF_HASH_XXH3, &whole, &meta, NULL, t, NULL, NULL, &err);
    if (m->rc == GGUF_OK) {
        FUZZ_ASSERT(rc == GGUF_OK, "hash: refused what memory accepts: %s", err.message);
        gguf_digest mw, mm, *mt = calloc((size_t)(nt ? nt : 1), sizeof *mt);
        if (!mt) FUZZ_TROUBLE("out of memory");
        FUZZ_ASSERT(gguf_hash_file(m->f, GGUF_HASH_XXH3, &mw, &mm, NULL, mt, NULL, NULL, &err) == GGUF_OK,
                    "hash in memory: %s", err.message);
        FUZZ_ASSERT(gguf_digest_equal(&whole, &mw) && gguf_digest_equal(&meta, &mm),
                    "hash: whole-file or metadata digests differ");
        for (uint64_t i = 0; i < nt; i++)
            FUZZ_ASSERT(gguf_digest_equal(&t[i], &mt[i]), "hash: tensor %llu differs",
                        (unsigned long long)i);
        free(mt);
    } else {
        FUZZ_ASSERT(rc == GGUF_E_FORMAT, "hash: status %d (%s) where memory refused: %s", rc,
                    rc ? err.message : "accepted", m->err.message);
    }
    free(t);
    gguf_close(f);
    fuzz_feed_join(&feed);
}

/* The n bytes at p as one gzip member, in a malloc'ed buffer. */
static uint8_t *gzip_bytes(const uint8_t *p, size_t n, size_t *out_n)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        FUZZ_TROUBLE("deflateInit2");
    size_t cap = deflateBound(&z, (uLong)n) + 64;
    uint8_t *out = malloc(cap);
    if (!out) FUZZ_TROUBLE("out of memory");
    z.next_in = (Bytef *)(uintptr_t)p;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) FUZZ_TROUBLE("deflate");
    *out_n = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

/* What zlib's own gz reader makes of the n bytes at p, the reference for
 * the library's gzip streams: a malloc'ed buffer and 0, or NULL and -1 when
 * zlib reports corrupt data, or NULL and 1 when the output would pass
 * INFLATE_MAX.  Read from a file in memory: gzread() fails on a read(2)
 * that a signal interrupts, and libFuzzer's timers send signals. */
static uint8_t *gunzip_bytes(const uint8_t *p, size_t n, size_t *out_n, int *status)
{
    int fd = fuzz_memfd();
    for (size_t off = 0; off < n;) {
        ssize_t w = write(fd, p + off, n - off);
        if (w <= 0) FUZZ_TROUBLE("write to memfd: %s", strerror(errno));
        off += (size_t)w;
    }
    if (lseek(fd, 0, SEEK_SET) != 0) FUZZ_TROUBLE("lseek");
    gzFile g = gzdopen(fd, "rb");
    if (!g) FUZZ_TROUBLE("gzdopen");
    size_t cap = 1 << 16, len = 0;
    uint8_t *out = malloc(cap);
    *status = 0;
    for (;;) {
        if (!out) FUZZ_TROUBLE("out of memory");
        if (len == cap) {
            if (cap >= INFLATE_MAX) {
                *status = 1;
                break;
            }
            out = realloc(out, cap *= 2);
            continue;
        }
        int got = gzread(g, out + len, (unsigned)(cap - len));
        int zerr = Z_OK;
        if (got <= 0) gzerror(g, &zerr);
        if (got < 0 || (got == 0 && zerr != Z_OK)) {
            *status = -1;
            break;
        }
        if (got == 0) break;
        len += (size_t)got;
    }
    gzclose(g);
    if (*status) {
        free(out);
        return NULL;
    }
    *out_n = len;
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct verdict m;
    memory_verdict(&m, data, size);
    if (m.rc != GGUF_OK) fuzz_check_refusal(m.rc, m.f, &m.err, NAME, 0);
    int plain_gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    if (!plain_gzip) {
        check_pipe(data, size, &m, GGUF_INPUT_STREAM, "pipe");
        check_sequential(data, size, &m);
        check_hash(data, size, &m);
        size_t zn;
        uint8_t *z = gzip_bytes(data, size, &zn);
        check_pipe(z, zn, &m, GGUF_INPUT_GZIP, "gzip");
        free(z);
    } else {
        /* The input as gzip data: compare with what it inflates to. */
        size_t dn = 0;
        int st;
        uint8_t *d = gunzip_bytes(data, size, &dn, &st);
        if (st == 0) {
            struct verdict dm;
            memory_verdict(&dm, d, dn);
            check_pipe(data, size, &dm, GGUF_INPUT_GZIP, "raw gzip");
            gguf_close(dm.f);
        } else if (st < 0) {
            struct fuzz_feed feed;
            int fd = fuzz_feed_start(&feed, data, size);
            gguf_file *f = NULL;
            gguf_error err;
            memset(&err, 0, sizeof err);
            int rc = gguf_open_fd(&f, fd, NAME, 0, &err);
            FUZZ_ASSERT(rc != GGUF_OK, "corrupt gzip data accepted");
            fuzz_check_refusal(rc, f, &err, NAME, 0);
            fuzz_feed_join(&feed);
        }
        free(d);
    }
    gguf_close(m.f);
    return 0;
}
