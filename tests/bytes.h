/* bytes.h -- a growable byte buffer for tests that lay out GGUF files by hand.
 *
 * The tests build files byte by byte, independently of the library's writer,
 * so that a misunderstanding of the format cannot hide in both, and they
 * mutate files made by the writer into hostile ones.  Numbers go out in the
 * buffer's byte order; counts and string lengths are 64-bit, or 32-bit when
 * the buffer is marked as GGUF version 1.  A zeroed struct bytes is an empty
 * little-endian version 2/3 buffer.
 *
 * This header needs nothing from libgguf (test-dump-fixture does not link
 * it), so value and tensor type ids are plain numbers here.
 *
 * Failure (out of memory, a patch outside the buffer, a length too large for
 * version 1) is a defect or a resource problem, never a verdict: by default
 * it prints "hard error: ..." and exits 99, a hard error for the automake
 * harness.  A program with its own convention defines BYTES_FAIL, a printf-
 * like function that does not return, before including this file. */
#ifndef TESTS_BYTES_H
#define TESTS_BYTES_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bytes {
    unsigned char *p;   /* n bytes in use of cap allocated; owned, free() it */
    size_t n, cap;
    int big;            /* numbers are big-endian */
    int v1;             /* GGUF version 1: counts and lengths are 32-bit */
};

#ifdef BYTES_FAIL
#define b_fail BYTES_FAIL
#else
static inline void b_fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static inline void b_fail(const char *fmt, ...)
{
    va_list ap;
    fputs("hard error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(99);
}
#endif

/* Makes room for extra more bytes. */
static inline void b_reserve(struct bytes *b, size_t extra)
{
    if (b->n > SIZE_MAX / 2 || extra > SIZE_MAX / 2 - b->n)
        b_fail("out of memory (%zu + %zu bytes)", b->n, extra);
    if (b->n + extra <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + extra) cap *= 2;
    unsigned char *p = realloc(b->p, cap);
    if (!p) b_fail("out of memory (%zu bytes)", cap);
    b->p = p;
    b->cap = cap;
}

/* Appends n bytes from src (which may be NULL when n is 0). */
static inline void b_put(struct bytes *b, const void *src, size_t n)
{
    if (!n) return;
    b_reserve(b, n);
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

/* Appends n copies of the byte c. */
static inline void b_fill(struct bytes *b, int c, size_t n)
{
    if (!n) return;
    b_reserve(b, n);
    memset(b->p + b->n, c, n);
    b->n += n;
}

/* Stores the low width bytes of v at dst in b's byte order. */
static inline void b_encode(const struct bytes *b, unsigned char *dst, uint64_t v, int width)
{
    for (int i = 0; i < width; i++) {
        int shift = b->big ? 8 * (width - 1 - i) : 8 * i;
        dst[i] = (unsigned char)(v >> shift);
    }
}

/* Appends the low width (1 to 8) bytes of v in b's byte order. */
static inline void b_num(struct bytes *b, uint64_t v, int width)
{
    unsigned char t[8];
    b_encode(b, t, v, width);
    b_put(b, t, (size_t)width);
}

static inline void b_u8(struct bytes *b, uint8_t v) { b_num(b, v, 1); }
static inline void b_u16(struct bytes *b, uint16_t v) { b_num(b, v, 2); }
static inline void b_u32(struct bytes *b, uint32_t v) { b_num(b, v, 4); }
static inline void b_u64(struct bytes *b, uint64_t v) { b_num(b, v, 8); }

/* Appends the bits of a float or double, as an u32 or u64. */
static inline void b_f32(struct bytes *b, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    b_u32(b, u);
}

static inline void b_f64(struct bytes *b, double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    b_u64(b, u);
}

/* Appends a count or length: 8 bytes, 4 in version 1 (where v must fit). */
static inline void b_len(struct bytes *b, uint64_t v)
{
    if (b->v1 && v > UINT32_MAX) b_fail("length %llu in a version 1 file", (unsigned long long)v);
    b_num(b, v, b->v1 ? 4 : 8);
}

/* Starts a GGUF file in a new buffer of the given byte order (big nonzero:
 * big-endian) and version (1: this and every later count and length is
 * 32-bit): the magic, the version, the tensor count and the KV count. */
static inline struct bytes b_header(uint32_t version, int big, uint64_t n_tensors, uint64_t n_kv)
{
    struct bytes b = {NULL, 0, 0, big, version == 1};
    b_put(&b, "GGUF", 4);
    b_u32(&b, version);
    b_len(&b, n_tensors);
    b_len(&b, n_kv);
    return b;
}

/* Appends a GGUF string: its length, then its n bytes. */
static inline void b_str(struct bytes *b, const char *s, size_t n)
{
    b_len(b, n);
    b_put(b, s, n);
}

/* Begins a KV pair: the key (a C string) and the value type id. */
static inline void b_key(struct bytes *b, const char *key, uint32_t type)
{
    b_str(b, key, strlen(key));
    b_u32(b, type);
}

/* Begins an array value: the element type id and the element count. */
static inline void b_arr(struct bytes *b, uint32_t elem_type, uint64_t count)
{
    b_u32(b, elem_type);
    b_len(b, count);
}

/* Appends a tensor info in file order: name (a C string), n_dims, the
 * n_dims dims, type id, then offset in the data section. */
static inline void b_tensor(struct bytes *b, const char *name, uint32_t type, uint32_t n_dims,
                            const uint64_t *ne, uint64_t offset)
{
    b_str(b, name, strlen(name));
    b_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) b_len(b, ne[d]);
    b_u32(b, type);
    b_u64(b, offset);
}

/* Appends zero bytes up to a multiple of align. */
static inline void b_pad(struct bytes *b, size_t align)
{
    if (b->n % align) b_fill(b, 0, align - b->n % align);
}

/* Appends everything left in fp.  Returns 0, or -1 on a read error. */
static inline int b_read(struct bytes *b, FILE *fp)
{
    unsigned char buf[65536];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, fp)) > 0) b_put(b, buf, k);
    return ferror(fp) ? -1 : 0;
}

/* A new buffer with a copy of src's bytes, byte order and version. */
static inline struct bytes b_copy(const struct bytes *src)
{
    struct bytes b = {NULL, 0, 0, src->big, src->v1};
    b_put(&b, src->p, src->n);
    return b;
}

/* Frees the bytes and empties the buffer (its byte order and version stay). */
static inline void b_free(struct bytes *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* Overwrites n bytes at off, which must lie inside the buffer. */
static inline void b_patch(struct bytes *b, uint64_t off, const void *src, size_t n)
{
    if (off > b->n || n > b->n - off)
        b_fail("patch of %zu bytes at %llu outside %zu bytes", n, (unsigned long long)off, b->n);
    memcpy(b->p + off, src, n);
}

/* Overwrites a number of width bytes at off, in b's byte order. */
static inline void b_patch_num(struct bytes *b, uint64_t off, uint64_t v, int width)
{
    unsigned char t[8];
    b_encode(b, t, v, width);
    b_patch(b, off, t, (size_t)width);
}

static inline void b_patch_u32(struct bytes *b, uint64_t off, uint32_t v)
{
    b_patch_num(b, off, v, 4);
}

static inline void b_patch_u64(struct bytes *b, uint64_t off, uint64_t v)
{
    b_patch_num(b, off, v, 8);
}

/* Replaces the del bytes at off by the n bytes at src. */
static inline void b_splice(struct bytes *b, uint64_t off, size_t del, const void *src, size_t n)
{
    if (off > b->n || del > b->n - off)
        b_fail("splice of %zu bytes at %llu outside %zu bytes", del, (unsigned long long)off, b->n);
    size_t tail = b->n - (size_t)off - del;
    b_reserve(b, n);
    if (tail) memmove(b->p + off + n, b->p + off + del, tail);
    if (n) memcpy(b->p + off, src, n);
    b->n = (size_t)off + n + tail;
}

/* Cuts the buffer to its first n bytes (n must not exceed its size). */
static inline void b_truncate(struct bytes *b, uint64_t n)
{
    if (n > b->n) b_fail("truncate to %llu of %zu bytes", (unsigned long long)n, b->n);
    b->n = (size_t)n;
}

#endif
