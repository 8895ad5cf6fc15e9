/*
 * internal.h -- shared by the files of libgguf; not installed.
 * Internal names start with gg_ and have hidden visibility.
 */
#ifndef GGUF_INTERNAL_H
#define GGUF_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "gguf/gguf.h"

#define GG_HIDDEN __attribute__((visibility("hidden")))
#define GG_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Limits the format rules of libgguf(3) impose. */
#define GG_MAX_KEY_LEN 65535u
#define GG_MAX_TENSOR_NAME ((unsigned)GGUF_TENSOR_NAME_MAX)
#define GG_MAX_ARRAY_DEPTH 8u
#define GG_MAX_ALIGNMENT (1u << 20)
#define GG_DEFAULT_ALIGNMENT 32u
/* Metadata larger than this is refused (see GGUF_METADATA_MAX). */
#define GG_MAX_HEADER GGUF_METADATA_MAX

/* --- errors (error.c) ---------------------------------------------------- */

/* Fills err (when not NULL) and returns status.  The message is
 * "NAME: " followed by the formatted text; name may be NULL to omit it.
 * offset is stored in err->offset (UINT64_MAX for none). */
GG_HIDDEN int gg_fail(gguf_error *err, int status, int sys_errno, uint64_t offset,
                      const char *name, const char *fmt, ...) GG_PRINTF(6, 7);

/* Writes a printable rendering of s (at most max bytes of it, escaped, with
 * "..." when cut) into buf of size n; returns buf.  For messages. */
GG_HIDDEN char *gg_quote(char *buf, size_t n, const char *s, size_t len);

/* --- byte order ------------------------------------------------------------ */

static inline uint16_t gg_bswap16(uint16_t v) { return __builtin_bswap16(v); }
static inline uint32_t gg_bswap32(uint32_t v) { return __builtin_bswap32(v); }
static inline uint64_t gg_bswap64(uint64_t v) { return __builtin_bswap64(v); }

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define GG_HOST_ORDER GGUF_BIG_ENDIAN
#else
#define GG_HOST_ORDER GGUF_LITTLE_ENDIAN
#endif

/* Loads from possibly unaligned bytes in byte order `order`. */
static inline uint16_t gg_load16(const void *p, int order)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return order == GG_HOST_ORDER ? v : gg_bswap16(v);
}
static inline uint32_t gg_load32(const void *p, int order)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return order == GG_HOST_ORDER ? v : gg_bswap32(v);
}
static inline uint64_t gg_load64(const void *p, int order)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return order == GG_HOST_ORDER ? v : gg_bswap64(v);
}
static inline void gg_store16(void *p, uint16_t v, int order)
{
    if (order != GG_HOST_ORDER) v = gg_bswap16(v);
    memcpy(p, &v, 2);
}
static inline void gg_store32(void *p, uint32_t v, int order)
{
    if (order != GG_HOST_ORDER) v = gg_bswap32(v);
    memcpy(p, &v, 4);
}
static inline void gg_store64(void *p, uint64_t v, int order)
{
    if (order != GG_HOST_ORDER) v = gg_bswap64(v);
    memcpy(p, &v, 8);
}

/* --- checked arithmetic ---------------------------------------------------- */

/* Each returns 1 and stores the result, or 0 on overflow. */
static inline int gg_add(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_add_overflow(a, b, r); }
static inline int gg_mul(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_mul_overflow(a, b, r); }
/* Rounds a up to a multiple of align (a power of two); 0 on overflow. */
static inline int gg_align_up(uint64_t a, uint64_t align, uint64_t *r)
{
    uint64_t t;
    if (!gg_add(a, align - 1, &t)) return 0;
    *r = t & ~(align - 1);
    return 1;
}

/* --- name sets (names.c) ---------------------------------------------------- */

/* An open-addressing hash set of the names of a caller's table (KV keys,
 * tensor names), mapping each name to its index in the table.  The set
 * stores no strings, only 8 bytes a slot (a 32-bit piece of the hash and
 * the index): it asks the caller's `name` function for entry i's name when
 * a probe meets a slot whose hash piece matches.  A million-key file thus
 * costs about 11 to 21 bytes a key here, against the 72 of its gguf_kv. */
typedef gguf_str (*gg_name_fn)(const void *ctx, uint64_t index);

struct gg_name_slot {
    uint32_t tag;   /* high half of the name's XXH3-64 */
    uint32_t idx1;  /* index + 1; 0 marks an empty slot */
};

typedef struct gg_names {
    struct gg_name_slot *slots;
    uint64_t cap;   /* power of two, 0 when empty */
    uint64_t used;
    gg_name_fn name;
    const void *ctx;
} gg_names;

/* Indices a set can hold: 0 .. GG_NAMES_MAX_INDEX. */
#define GG_NAMES_MAX_INDEX (UINT32_MAX - 1u)

/* An empty set over the table that name(ctx, i) reads. */
GG_HIDDEN void gg_names_init(gg_names *s, gg_name_fn name, const void *ctx);
GG_HIDDEN void gg_names_free(gg_names *s);
/* Inserts entry `index`, whose name is (ptr,len); the entries already in
 * the set must be readable through the name function, the new one need
 * not be yet.  Returns 1 when inserted, 0 when the name was present already
 * (*existing gets that entry's index when not NULL), -1 when out of memory
 * or index > GG_NAMES_MAX_INDEX. */
GG_HIDDEN int gg_names_insert(gg_names *s, const char *ptr, uint64_t len, uint64_t index,
                              uint64_t *existing);
/* Makes room for n names in all, so that inserting them allocates nothing
 * more: a table that grows holds its old and new slots at once.  Returns
 * 0, or -1 when out of memory. */
GG_HIDDEN int gg_names_reserve(gg_names *s, uint64_t n);
/* Looks a name up: 1 and *index when found, else 0. */
GG_HIDDEN int gg_names_find(const gg_names *s, const char *ptr, uint64_t len, uint64_t *index);

/* --- input sources (source.c) ------------------------------------------------ */

/* Where the bytes of a file come from.  The parser sees [base, base+avail);
 * for streams, gg_source_need() reads more into a growing buffer, so base may
 * move while parsing: the parser keeps offsets, not pointers, until the
 * header is complete. */
typedef struct gg_source {
    int mode;               /* enum gguf_input_mode */
    const uint8_t *base;    /* the bytes available so far */
    uint64_t avail;         /* how many */
    uint64_t size;          /* total input size when known, else UINT64_MAX */
    uint64_t spos;          /* streams: absolute position of the next byte the stream gives */
    int eof;                /* streams: end of input reached */
    int fd;                 /* mapped files: the descriptor, else -1 */
    void *map;              /* mapped files: the mapping */
    size_t map_len;
    struct gg_stream *st;   /* streams: the descriptor's reader (and inflater for gzip) */
    uint8_t *buf;           /* streams: the buffer base points into */
    uint64_t cap;
} gg_source;

/* Opens `fd` (taken over: closed by gg_source_close or on failure).
 * Regular files are mapped unless no_mmap; gzip input and anything
 * non-seekable becomes a stream.  name is for messages. */
GG_HIDDEN int gg_source_open_fd(gg_source *s, int fd, int no_mmap, const char *name,
                                gguf_error *err);
GG_HIDDEN void gg_source_open_memory(gg_source *s, const void *data, size_t size);
GG_HIDDEN void gg_source_close(gg_source *s);

/* Returned by the source functions when the input ends too early. */
#define GG_EOF (-1)

/* Makes bytes [0, end) available.  Returns GGUF_OK; GG_EOF when the input ends
 * before `end` (s->size then holds the input size); GGUF_E_IO or
 * GGUF_E_NOMEM with err filled (naming `name`). */
GG_HIDDEN int gg_source_need(gg_source *s, uint64_t end, const char *name, gguf_error *err);

/* Streams: reads and discards input up to its end, setting s->size. */
GG_HIDDEN int gg_source_drain(gg_source *s, const char *name, gguf_error *err);

/* Streams: copies n bytes at absolute offset off (>= what was consumed) into
 * buf, from the buffer and then from the stream.  Returns GGUF_OK, GG_EOF at end
 * of input (s->size set, and the bytes from off up to s->size stored in buf),
 * GGUF_E_INVALID for a backward read, GGUF_E_IO. */
GG_HIDDEN int gg_source_read(gg_source *s, uint64_t off, void *buf, size_t n, const char *name,
                             gguf_error *err);

/* --- access to an open file for the other parts of the library (read.c) --- */

/* The bytes under f, for hash.c: a mapping to read in place or a stream to
 * read in order. */
GG_HIDDEN gg_source *gg_file_source(gguf_file *f);

/* The indices of f's tensors ordered by data offset, ties by index
 * (gguf_tensor_count() of them; NULL when there are none). */
GG_HIDDEN const uint64_t *gg_file_order(const gguf_file *f);

/* For a stream opened with GGUF_OPEN_SEQUENTIAL | GGUF_OPEN_STOP_AT_TRAILING:
 * the offset of the byte whose presence stops the reading of the rest of
 * the input, GGUF_TRAILING_READ_MAX bytes after the data section's padded
 * end (gg_file_stopped() records that it was there); UINT64_MAX for every
 * other input. */
GG_HIDDEN uint64_t gg_file_stop_offset(const gguf_file *f);
GG_HIDDEN void gg_file_stopped(gguf_file *f);

#endif /* GGUF_INTERNAL_H */
