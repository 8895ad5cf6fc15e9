/* hash.c -- checksums: xxHash (XXH3-64, XXH3-128, XXH64, XXH32), zlib's
 * CRC-32 and OpenSSL's SHA-256 and SHA-1, incremental and over a whole GGUF
 * file in one pass.
 *
 * gguf_hash_file() walks the input once, in offset order, and feeds every
 * byte to the whole-file hash and, for the metadata and for each tensor, to
 * that part's hash as well.  A mapped file is read in place in blocks small
 * enough to stay in the cache between the two hashes, so memory is read once
 * however many digests come out of it.  For CRC-32 the whole-file value is
 * not computed a second time at all: CRC-32 values of adjacent pieces
 * combine (crc32_combine), so each byte is hashed once.
 *
 * On x86-64, libxxhash carries run-time dispatched variants of the XXH3
 * update functions (AVX2, AVX-512) next to the baseline SSE2 ones.  They are
 * declared weak here so that the library still links and runs against a
 * libxxhash built without them; the digests are the same either way. */
#include <config.h>

#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/mman.h>
#include <xxhash.h>
#include <zlib.h>

#include "gguf/internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define GG_XXH_DISPATCH 1
extern XXH_errorcode XXH3_64bits_update_dispatch(XXH3_state_t *s, const void *p, size_t n)
    __attribute__((weak));
extern XXH_errorcode XXH3_128bits_update_dispatch(XXH3_state_t *s, const void *p, size_t n)
    __attribute__((weak));
#endif

/* Bytes hashed into both hashes at a time: small enough to stay in the L2
 * cache between the first hash and the second. */
#define HASH_BLOCK ((size_t)256 << 10)
/* Bytes between two calls of the progress callback. */
#define PROGRESS_STEP ((uint64_t)64 << 20)
/* Read buffer for streams. */
#define STREAM_BUF ((size_t)1 << 20)

struct gguf_hasher {
    uint32_t algo;
    XXH3_state_t *x3;       /* XXH3, XXH128 */
    XXH64_state_t *x64;     /* XXH64 */
    XXH32_state_t *x32;     /* XXH32 */
    EVP_MD_CTX *md;         /* SHA-256, SHA-1 */
    uLong crc;              /* CRC32 */
};

static const char *const names[GGUF_HASH_COUNT] = { "xxh3", "xxh128", "xxh64", "crc32", "xxh32",
                                                    "sha256", "sha1" };
static const uint32_t sizes[GGUF_HASH_COUNT] = { 8, 16, 8, 4, 4, 32, 20 };

/* The OpenSSL digest of a SHA algorithm. */
static const EVP_MD *sha_md(uint32_t algo)
{
    return algo == GGUF_HASH_SHA256 ? EVP_sha256() : EVP_sha1();
}

const char *gguf_hash_name(uint32_t algo)
{
    return algo < GGUF_HASH_COUNT ? names[algo] : NULL;
}

int gguf_hash_parse(const char *name, uint32_t *algo)
{
    if (!name || !algo) return GGUF_E_INVALID;
    for (uint32_t a = 0; a < GGUF_HASH_COUNT; a++) {
        if (strcasecmp(name, names[a]) == 0) {
            *algo = a;
            return GGUF_OK;
        }
    }
    return GGUF_E_NOT_FOUND;
}

uint32_t gguf_hash_size(uint32_t algo)
{
    return algo < GGUF_HASH_COUNT ? sizes[algo] : 0;
}

char *gguf_digest_hex(const gguf_digest *d, char *buf)
{
    static const char hex[] = "0123456789abcdef";
    uint32_t n = d->size <= GGUF_DIGEST_MAX ? d->size : GGUF_DIGEST_MAX;
    for (uint32_t i = 0; i < n; i++) {
        buf[2 * i] = hex[d->bytes[i] >> 4];
        buf[2 * i + 1] = hex[d->bytes[i] & 15];
    }
    buf[2 * n] = '\0';
    return buf;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int gguf_digest_parse(uint32_t algo, const char *hex, size_t len, gguf_digest *out)
{
    uint32_t n = gguf_hash_size(algo);
    if (!n || !hex || !out || len != 2 * (size_t)n) return GGUF_E_INVALID;
    gguf_digest d;
    memset(&d, 0, sizeof d);
    d.algo = algo;
    d.size = n;
    for (uint32_t i = 0; i < n; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return GGUF_E_INVALID;
        d.bytes[i] = (unsigned char)(hi << 4 | lo);
    }
    *out = d;
    return GGUF_OK;
}

int gguf_digest_equal(const gguf_digest *a, const gguf_digest *b)
{
    return a && b && a->algo == b->algo && a->size == b->size && a->size <= GGUF_DIGEST_MAX &&
           memcmp(a->bytes, b->bytes, a->size) == 0;
}

uint64_t gguf_digest_u64(const gguf_digest *d)
{
    if (!d || d->size != 8) return 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | d->bytes[i];
    return v;
}

/* Stores v as an 8-byte digest of algo, most significant byte first. */
static void digest_from_u64(gguf_digest *d, uint32_t algo, uint64_t v, uint32_t size)
{
    memset(d, 0, sizeof *d);
    d->algo = algo;
    d->size = size;
    for (uint32_t i = 0; i < size; i++) d->bytes[i] = (unsigned char)(v >> (8 * (size - 1 - i)));
}

/* ------------------------------------------------------------------------ */
/* Incremental hashing                                                       */

gguf_hasher *gguf_hasher_new(uint32_t algo)
{
    if (algo >= GGUF_HASH_COUNT) return NULL;
    gguf_hasher *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->algo = algo;
    if (algo == GGUF_HASH_XXH3 || algo == GGUF_HASH_XXH128) {
        h->x3 = XXH3_createState();
        if (!h->x3) goto fail;
    } else if (algo == GGUF_HASH_XXH64) {
        h->x64 = XXH64_createState();
        if (!h->x64) goto fail;
    } else if (algo == GGUF_HASH_XXH32) {
        h->x32 = XXH32_createState();
        if (!h->x32) goto fail;
    } else if (algo == GGUF_HASH_SHA256 || algo == GGUF_HASH_SHA1) {
        h->md = EVP_MD_CTX_new();
        if (!h->md || !EVP_DigestInit_ex(h->md, sha_md(algo), NULL)) goto fail;
    }
    gguf_hasher_reset(h);
    return h;
fail:
    gguf_hasher_free(h);
    return NULL;
}

void gguf_hasher_free(gguf_hasher *h)
{
    if (!h) return;
    if (h->x3) XXH3_freeState(h->x3);
    if (h->x64) XXH64_freeState(h->x64);
    if (h->x32) XXH32_freeState(h->x32);
    EVP_MD_CTX_free(h->md);
    free(h);
}

void gguf_hasher_reset(gguf_hasher *h)
{
    switch (h->algo) {
    case GGUF_HASH_XXH3: XXH3_64bits_reset(h->x3); break;
    case GGUF_HASH_XXH128: XXH3_128bits_reset(h->x3); break;
    case GGUF_HASH_XXH64: XXH64_reset(h->x64, 0); break;
    case GGUF_HASH_XXH32: XXH32_reset(h->x32, 0); break;
    case GGUF_HASH_SHA256:
    case GGUF_HASH_SHA1:
        /* cannot fail once the context was set up for this digest */
        EVP_DigestInit_ex(h->md, sha_md(h->algo), NULL);
        break;
    default: h->crc = crc32(0L, Z_NULL, 0); break;
    }
}

void gguf_hasher_update(gguf_hasher *h, const void *p, size_t n)
{
    if (n == 0) return;
    switch (h->algo) {
    case GGUF_HASH_XXH3:
#ifdef GG_XXH_DISPATCH
        if (XXH3_64bits_update_dispatch) {
            XXH3_64bits_update_dispatch(h->x3, p, n);
            break;
        }
#endif
        XXH3_64bits_update(h->x3, p, n);
        break;
    case GGUF_HASH_XXH128:
#ifdef GG_XXH_DISPATCH
        if (XXH3_128bits_update_dispatch) {
            XXH3_128bits_update_dispatch(h->x3, p, n);
            break;
        }
#endif
        XXH3_128bits_update(h->x3, p, n);
        break;
    case GGUF_HASH_XXH64:
        XXH64_update(h->x64, p, n);
        break;
    case GGUF_HASH_XXH32:
        XXH32_update(h->x32, p, n);
        break;
    case GGUF_HASH_SHA256:
    case GGUF_HASH_SHA1:
        EVP_DigestUpdate(h->md, p, n);
        break;
    default: {
        /* crc32() takes an unsigned int length. */
        const unsigned char *b = p;
        while (n > 0) {
            uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
            h->crc = crc32(h->crc, b, k);
            b += k;
            n -= k;
        }
        break;
    }
    }
}

void gguf_hasher_digest(const gguf_hasher *h, gguf_digest *out)
{
    memset(out, 0, sizeof *out);
    out->algo = h->algo;
    out->size = sizes[h->algo];
    switch (h->algo) {
    case GGUF_HASH_XXH3: {
        XXH64_canonical_t c;
        XXH64_canonicalFromHash(&c, XXH3_64bits_digest(h->x3));
        memcpy(out->bytes, c.digest, 8);
        break;
    }
    case GGUF_HASH_XXH128: {
        XXH128_canonical_t c;
        XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h->x3));
        memcpy(out->bytes, c.digest, 16);
        break;
    }
    case GGUF_HASH_XXH64: {
        XXH64_canonical_t c;
        XXH64_canonicalFromHash(&c, XXH64_digest(h->x64));
        memcpy(out->bytes, c.digest, 8);
        break;
    }
    case GGUF_HASH_XXH32: {
        XXH32_canonical_t c;
        XXH32_canonicalFromHash(&c, XXH32_digest(h->x32));
        memcpy(out->bytes, c.digest, 4);
        break;
    }
    case GGUF_HASH_SHA256:
    case GGUF_HASH_SHA1: {
        /* finishing ends a context: finish a copy, so that input may go on */
        EVP_MD_CTX *c = EVP_MD_CTX_new();
        unsigned int n = 0;
        if (!c || !EVP_MD_CTX_copy_ex(c, h->md) || !EVP_DigestFinal_ex(c, out->bytes, &n) ||
            n != out->size)
            out->size = 0; /* equal to no digest: a check then fails, never passes */
        EVP_MD_CTX_free(c);
        break;
    }
    default:
        digest_from_u64(out, GGUF_HASH_CRC32, (uint64_t)h->crc, 4);
        break;
    }
}

int gguf_hash_buffer(uint32_t algo, const void *p, size_t n, gguf_digest *out)
{
    if (algo >= GGUF_HASH_COUNT || !out || (!p && n)) return GGUF_E_INVALID;
    gguf_hasher *h = gguf_hasher_new(algo);
    if (!h) return GGUF_E_NOMEM;
    gguf_hasher_update(h, p, n);
    gguf_hasher_digest(h, out);
    gguf_hasher_free(h);
    return GGUF_OK;
}

/* ------------------------------------------------------------------------ */
/* One pass over a file                                                      */

/* The walk: the whole-file hash and the hash of the piece being read (the
 * metadata, a tensor, or for CRC-32 also a gap between them). */
struct walk {
    gguf_file *f;
    gg_source *s;
    gguf_error *err;
    uint32_t algo;
    int crc;                /* CRC-32: pieces are combined into the whole */
    gguf_hasher *whole;     /* NULL when no whole-file digest is wanted */
    uLong whole_crc;
    gguf_hasher *piece;
    gguf_hasher *data;      /* all tensor data, or NULL */
    int piece_on;           /* the current piece is being hashed */
    int tensor_piece;       /* the current piece is a tensor's data */
    uint64_t piece_len;
    uint64_t done, total, next_report;
    gguf_hash_progress progress;
    void *ctx;
    unsigned char *buf;     /* streams */
};

/* Starts a piece; `wanted` says whether its own digest is needed. */
static void piece_begin(struct walk *w, int wanted)
{
    w->tensor_piece = 0;
    w->piece_on = wanted || (w->crc && w->whole);
    w->piece_len = 0;
    if (w->piece_on) gguf_hasher_reset(w->piece);
}

/* Hashes n bytes of the current piece. */
static void piece_feed(struct walk *w, const unsigned char *p, size_t n)
{
    while (n > 0) {
        size_t k = n < HASH_BLOCK ? n : HASH_BLOCK;
        if (w->whole && !w->crc) gguf_hasher_update(w->whole, p, k);
        if (w->piece_on) gguf_hasher_update(w->piece, p, k);
        if (w->data && w->tensor_piece) gguf_hasher_update(w->data, p, k);
        p += k;
        n -= k;
        w->piece_len += k;
        w->done += k;
        if (w->progress && w->done >= w->next_report) {
            w->progress(w->ctx, w->done, w->total);
            w->next_report = w->done + PROGRESS_STEP;
        }
    }
}

/* Ends the piece: its digest into *out (when not NULL), and for CRC-32
 * its value appended to the whole. */
static void piece_end(struct walk *w, gguf_digest *out)
{
    if (!w->piece_on) return;
    if (out) gguf_hasher_digest(w->piece, out);
    if (w->crc && w->whole) w->whole_crc = crc32_combine(w->whole_crc, w->piece->crc,
                                                         (z_off_t)w->piece_len);
}

/* Fails naming tensor t, whose data the input does not hold. */
static int truncated(struct walk *w, const gguf_tensor *t, uint64_t size)
{
    char q[96];
    gg_quote(q, sizeof q, t->name.ptr, t->name.len);
    return gg_fail(w->err, GGUF_E_FORMAT, 0, size, gguf_name(w->f),
                   "tensor %llu '%s': data ends at byte %llu, file has %llu bytes",
                   (unsigned long long)gguf_tensor_index(w->f, t), q,
                   (unsigned long long)(t->file_offset + t->size), (unsigned long long)size);
}

/* Streams: hashes bytes [from, to) of the input into the current piece.
 * to == UINT64_MAX reads to the end of the input.  Returns GGUF_OK,
 * GG_EOF when the input ends first (all it had is hashed), or a status
 * with err filled. */
static int stream_range(struct walk *w, uint64_t from, uint64_t to)
{
    while (from < to) {
        size_t k = to - from < STREAM_BUF ? (size_t)(to - from) : STREAM_BUF;
        int rc = gg_source_read(w->s, from, w->buf, k, gguf_name(w->f), w->err);
        if (rc == GG_EOF) {
            /* The bytes up to the end are in the buffer. */
            piece_feed(w, w->buf, (size_t)(w->s->size - from));
            return GG_EOF;
        }
        if (rc) return rc;
        piece_feed(w, w->buf, k);
        from += k;
    }
    return GGUF_OK;
}

/* Tensor indices in data-offset order (ties by index, the reader's order)
 * into idx, skipping empty tensors, whose offsets may lie anywhere.
 * Returns the count kept. */
static uint64_t by_offset(const gguf_file *f, uint64_t *idx)
{
    uint64_t n = gguf_tensor_count(f), m = 0;
    const uint64_t *order = gg_file_order(f);
    for (uint64_t k = 0; k < n; k++)
        if (gguf_tensor_at(f, order[k])->size) idx[m++] = order[k];
    return m;
}

/* The walk over a mapped file or memory: every byte is in place. */
static int walk_mapped(struct walk *w, const uint64_t *idx, uint64_t m, gguf_digest *tensors)
{
    const unsigned char *base = w->s->base;
    uint64_t size = w->s->size, pos = gguf_header_size(w->f);
    for (uint64_t k = 0; k < m; k++) {
        const gguf_tensor *t = gguf_tensor_at(w->f, idx[k]);
        if (w->whole) {
            piece_begin(w, 0);
            piece_feed(w, base + pos, (size_t)(t->file_offset - pos));
            piece_end(w, NULL);
        }
        piece_begin(w, tensors != NULL);
        w->tensor_piece = 1;
        piece_feed(w, base + t->file_offset, (size_t)t->size);
        piece_end(w, tensors ? &tensors[idx[k]] : NULL);
        pos = t->file_offset + t->size;
    }
    if (w->whole) {
        piece_begin(w, 0);
        piece_feed(w, base + pos, (size_t)(size - pos));
        piece_end(w, NULL);
    }
    return GGUF_OK;
}

/* The walk over a stream opened with GGUF_OPEN_SEQUENTIAL: read in offset
 * order to the end.  Empty tensors and the start of the data section are
 * checked against the size once it is known, as the reader checks them for
 * a file. */
static int walk_stream(struct walk *w, const uint64_t *idx, uint64_t m, gguf_digest *tensors)
{
    gguf_file *f = w->f;
    uint64_t pos = gguf_header_size(f);
    int rc;
    w->buf = malloc(STREAM_BUF);
    if (!w->buf) return gg_fail(w->err, GGUF_E_NOMEM, ENOMEM, pos, gguf_name(f), "out of memory");
    for (uint64_t k = 0; k < m; k++) {
        const gguf_tensor *t = gguf_tensor_at(f, idx[k]);
        piece_begin(w, 0);
        rc = stream_range(w, pos, t->file_offset);
        piece_end(w, NULL);
        if (rc == GG_EOF) return truncated(w, t, w->s->size);
        if (rc) return rc;
        piece_begin(w, tensors != NULL);
        w->tensor_piece = 1;
        rc = stream_range(w, t->file_offset, t->file_offset + t->size);
        piece_end(w, tensors ? &tensors[idx[k]] : NULL);
        if (rc == GG_EOF) return truncated(w, t, w->s->size);
        if (rc) return rc;
        pos = t->file_offset + t->size;
    }
    /* The rest of the input; with GGUF_OPEN_STOP_AT_TRAILING only so far
     * past the data section (the first byte there decided the answer). */
    uint64_t stop = gg_file_stop_offset(f);
    piece_begin(w, 0);
    rc = stream_range(w, pos, stop == UINT64_MAX ? UINT64_MAX : stop + 1);
    piece_end(w, NULL);
    if (rc == GGUF_OK && stop != UINT64_MAX) {
        gg_file_stopped(f);
        return GGUF_OK;
    }
    if (rc != GG_EOF) return rc ? rc : gg_fail(w->err, GGUF_E_IO, EFBIG, pos, gguf_name(f),
                                               "input too large");
    uint64_t size = w->s->size, n = gguf_tensor_count(f);
    if (n > 0 && gguf_data_offset(f) > size)
        return gg_fail(w->err, GGUF_E_FORMAT, 0, gguf_header_size(f), gguf_name(f),
                       "header: data section starts at byte %llu, past the end of the file "
                       "(%llu bytes) (at byte %llu)", (unsigned long long)gguf_data_offset(f),
                       (unsigned long long)size, (unsigned long long)gguf_header_size(f));
    for (uint64_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (t->file_offset > size) return truncated(w, t, size);
    }
    return GGUF_OK;
}

/* Whether the m tensors at idx (in offset order) are in directory order. */
static int in_directory_order(const uint64_t *idx, uint64_t m)
{
    for (uint64_t k = 1; k < m; k++)
        if (idx[k] < idx[k - 1]) return 0;
    return 1;
}

int gguf_hash_file(gguf_file *f, uint32_t algo, gguf_digest *file, gguf_digest *metadata,
                   gguf_digest *data, gguf_digest *tensors, gguf_hash_progress progress, void *ctx,
                   gguf_error *err)
{
    if (!f || algo >= GGUF_HASH_COUNT)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, f ? gguf_name(f) : NULL,
                       "gguf_hash_file: %s", f ? "unknown algorithm" : "NULL file");
    struct walk w;
    memset(&w, 0, sizeof w);
    w.f = f;
    w.s = gg_file_source(f);
    w.err = err;
    w.algo = algo;
    w.crc = algo == GGUF_HASH_CRC32;
    w.whole_crc = crc32(0L, Z_NULL, 0);
    w.progress = progress;
    w.ctx = ctx;
    int stream = w.s->st != NULL;
    w.total = stream ? 0 : w.s->size;
    w.next_report = PROGRESS_STEP;

    uint64_t n = gguf_tensor_count(f);
    uint64_t *idx = malloc((size_t)(n ? n : 1) * sizeof *idx);
    w.piece = gguf_hasher_new(algo);
    if (file) w.whole = gguf_hasher_new(algo);
    if (data) w.data = gguf_hasher_new(algo);
    int rc;
    if (!idx || !w.piece || (file && !w.whole) || (data && !w.data)) {
        rc = gg_fail(err, GGUF_E_NOMEM, ENOMEM, UINT64_MAX, gguf_name(f), "out of memory");
        goto done;
    }
    uint64_t m = by_offset(f, idx);
    /* The tensor data is hashed in directory order: along the walk when
     * that is the offset order (as writers store tensors), else after it,
     * from the mapping (a stream has passed by then). */
    const int data_later = data && !in_directory_order(idx, m);
    if (data_later && stream) {
        rc = gg_fail(err, GGUF_E_UNSUPPORTED, 0, UINT64_MAX, gguf_name(f),
                     "the tensor data is not stored in directory order: its digest needs a file, "
                     "not a stream");
        goto done;
    }
    if (data_later) {
        gguf_hasher_free(w.data);
        w.data = NULL;
    }

    /* Empty tensors: the digest of no bytes. */
    if (tensors) {
        for (uint64_t i = 0; i < n; i++) {
            if (gguf_tensor_at(f, i)->size) continue;
            gguf_hasher_reset(w.piece);
            gguf_hasher_digest(w.piece, &tensors[i]);
        }
    }
    /* The metadata comes first in every mode: it is in memory already. */
    piece_begin(&w, metadata != NULL);
    piece_feed(&w, w.s->base, (size_t)gguf_header_size(f));
    piece_end(&w, metadata);

    if (stream) {
        rc = walk_stream(&w, idx, m, tensors);
    } else {
        /* Sequential access: the kernel reads ahead further and may drop
         * pages behind.  Only a hint: failure changes nothing. */
        if (w.s->map) madvise(w.s->map, w.s->map_len, MADV_SEQUENTIAL);
        rc = walk_mapped(&w, idx, m, tensors);
        if (w.s->map) madvise(w.s->map, w.s->map_len, MADV_NORMAL);
    }
    if (rc == GGUF_OK && file) {
        if (w.crc) digest_from_u64(file, GGUF_HASH_CRC32, (uint64_t)w.whole_crc, 4);
        else gguf_hasher_digest(w.whole, file);
    }
    if (rc == GGUF_OK && data && !data_later) gguf_hasher_digest(w.data, data);
    if (rc == GGUF_OK && data_later) {
        gguf_hasher_reset(w.piece);
        for (uint64_t i = 0; i < n; i++) {
            const gguf_tensor *t = gguf_tensor_at(f, i);
            if (t->size) gguf_hasher_update(w.piece, w.s->base + t->file_offset, (size_t)t->size);
        }
        gguf_hasher_digest(w.piece, data);
    }
    if (rc == GGUF_OK && progress) progress(ctx, w.done, w.done);
done:
    free(idx);
    free(w.buf);
    gguf_hasher_free(w.piece);
    gguf_hasher_free(w.whole);
    gguf_hasher_free(w.data);
    return rc;
}
