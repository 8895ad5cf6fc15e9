/*
 * manifest.h -- the manifest format of gguf-verify: writing names into
 * lines and parsing lines back, from a FILE* or from memory.  Not
 * installed; used by gguf-verify and by the fuzz harness of the parser.
 *
 * gguf-verify writes lines
 *
 *     [\]ALGO  HEX  NAME
 *
 * as sha256sum writes its own: ALGO is a gguf_hash_name() ("xxh3", any
 * case on input), then blanks, HEX the digest (either case), then "  " (or
 * " *", sha256sum's binary marker), then NAME to the end of the line.
 * When NAME holds a backslash, a line break or a NUL, the line starts with
 * a backslash and NAME is escaped as \\ \n \r \0.  NAME is FILE,
 * FILE:TENSOR, FILE:(metadata) or FILE:(tensor data).  Empty lines and
 * lines starting with '#' are skipped; a line ending in CR LF is read as if
 * it ended in LF.
 *
 * The lines other tools write are read too (manifest_entry.style says
 * which):
 *  - GNU style, sha256sum's and xxhsum's: [\]HEX  NAME, the algorithm told
 *    by the length of HEX as they tell it (8 digits XXH32, 16 XXH64, 32
 *    XXH128, 40 SHA-1, 64 SHA-256), or [\]XXH3_HEX  NAME (xxhsum 0.8.2's
 *    XXH3);
 *  - BSD style (--tag): [\]TAG (NAME) = HEX, TAG one of XXH32, XXH64,
 *    XXH128, XXH3, SHA256, SHA1;
 *  - llama.cpp's llama-gguf-hash: ALGO padded to 8 columns, two blanks,
 *    HEX, two blanks, NAME.  Its FILE lines hold the digest of the tensor
 *    data (all tensors one after the other), not of the whole file: the
 *    caller reads them as FILE:(tensor data).
 *
 * Reading is bounded: a line longer than MANIFEST_LINE_MAX bytes cannot be
 * a valid entry, and since its end may never come (a manifest on /dev/zero)
 * reading stops there with an error naming the line.
 *
 * Like the library, nothing here prints or exits: errors come back as a
 * gguf_status with a gguf_error whose message names the manifest, the line
 * and the byte offset.
 */
#ifndef TOOLS_MANIFEST_H
#define TOOLS_MANIFEST_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gguf/gguf.h"
#include "tools/cli.h"

/* The part name of the metadata section: FILE:(metadata). */
#define MANIFEST_META_PART "(metadata)"
#define MANIFEST_META_PART_LEN (sizeof MANIFEST_META_PART - 1)

/* Longest algorithm name a line may carry (longer ones are malformed
 * without a lookup). */
#define MANIFEST_ALGO_MAX 15

/* Longest NAME of a valid entry, unescaped: a path the system can open
 * (PATH_MAX counts its NUL, which stands for the ':') and a tensor name. */
#define MANIFEST_NAME_MAX (PATH_MAX + GGUF_TENSOR_NAME_MAX)

/* Longest line (without its LF) a valid entry can take: the escape marker,
 * the algorithm, up to eight blanks (llama-gguf-hash pads), the longest
 * digest in hex, the two characters before NAME, NAME with every byte
 * escaped to two, and a CR. */
#define MANIFEST_LINE_MAX \
    (1 + MANIFEST_ALGO_MAX + 8 + 2 * GGUF_DIGEST_MAX + 2 + 2 * MANIFEST_NAME_MAX + 1)

/* The part name of all the tensor data together: FILE:(tensor data). */
#define MANIFEST_DATA_PART "(tensor data)"
#define MANIFEST_DATA_PART_LEN (sizeof MANIFEST_DATA_PART - 1)

/* Who wrote a line, by its form. */
enum manifest_style {
    MANIFEST_OWN = 0,       /* ALGO  HEX  NAME */
    MANIFEST_GNU = 1,       /* HEX  NAME */
    MANIFEST_BSD = 2,       /* TAG (NAME) = HEX */
    MANIFEST_LLAMA = 3      /* llama-gguf-hash */
};

/* One entry as parsed. */
typedef struct manifest_entry {
    uint32_t algo;          /* enum gguf_hash_algo */
    int style;              /* enum manifest_style */
    gguf_digest want;
    char *name;             /* NAME unescaped, malloc'ed, NUL after len bytes; may hold NULs */
    size_t len;
    unsigned long line;     /* 1-based line number */
    uint64_t offset;        /* byte offset of the line in the manifest */
} manifest_entry;

/* What the reader calls, in line order.  `entry` takes ownership of
 * e->name (free it) and returns GGUF_OK, or another status (GGUF_E_NOMEM)
 * to stop reading, which manifest_read_*() then returns.  `malformed`, which
 * may be NULL, hears of each line that is not an entry (the overlong line
 * that stops reading included). */
typedef struct manifest_handler {
    int (*entry)(void *ctx, manifest_entry *e);
    void (*malformed)(void *ctx, unsigned long line, uint64_t offset);
    void *ctx;
} manifest_handler;

/* Parses the n bytes at s, one line without its LF (a trailing CR is
 * dropped), into *e (algo, style, want, name, len; line and offset are left
 * as they are).  Returns 1 for an entry (e->name is then malloc'ed), 0 for a
 * line to skip (empty, comment), -1 for a malformed line, -2 when out of
 * memory. */
int manifest_parse_line(const char *s, size_t n, manifest_entry *e);

/* Reads a manifest from fp (not closed) to its end, calling h for each
 * line; `name` is used in messages ("standard input" for "-").
 * Returns GGUF_OK; GGUF_E_FORMAT when a line is longer than
 * MANIFEST_LINE_MAX (after calling h->malformed for it; err names the
 * line and its offset, and nothing after it has been read); GGUF_E_IO on a
 * read error; GGUF_E_NOMEM; or the status h->entry returned. */
int manifest_read_file(FILE *fp, const char *name, const manifest_handler *h, gguf_error *err);

/* As manifest_read_file(), on the n bytes at buf. */
int manifest_read_buffer(const void *buf, size_t n, const char *name, const manifest_handler *h,
                         gguf_error *err);

/* 1 when the n bytes at s need escaping in a line (they hold a backslash,
 * a line break or a NUL), else 0. */
int manifest_needs_escape(const char *s, size_t n);

/* Appends the n bytes at s to o, escaped as NAME is in a line (the escape
 * marker at the start of the line is the caller's). */
void manifest_put_escaped(cli_out *o, const char *s, size_t n);

/* Writes the line of digest d for NAME (n bytes) in style `style`
 * (MANIFEST_OWN, MANIFEST_GNU or MANIFEST_BSD), escaped where NAME needs
 * it.  Returns 0, or -1 when the style has no form for d's algorithm
 * (CRC-32 in GNU or BSD style) and nothing is written. */
int manifest_put_line(cli_out *o, int style, const gguf_digest *d, const char *name, size_t n);

/* Writes FILE, or FILE:PART when part is not NULL (part_len bytes), as a
 * line names it: escaped, after the escape marker that sha256sum puts
 * first on a line when either part needs escaping. */
void manifest_put_name(cli_out *o, const char *file, const char *part, size_t part_len);

/* Writes the line "ALGO  HEX  FILE:PART" of a part of a file (a tensor's
 * name, or MANIFEST_META_PART) with digest d, in gguf-verify's own style,
 * escaped where needed. */
void manifest_put_part_line(cli_out *o, const gguf_digest *d, const char *file, const char *part,
                            size_t part_len);

/* Whether the style has a form for algorithm algo (see manifest_put_line). */
int manifest_style_has(int style, uint32_t algo);

#endif /* TOOLS_MANIFEST_H */
