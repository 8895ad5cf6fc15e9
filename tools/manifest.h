/*
 * manifest.h -- the manifest format of gguf-verify: writing names into
 * lines and parsing lines back, from a FILE* or from memory.  Not
 * installed; used by gguf-verify and by the fuzz harness of the parser.
 *
 * A line is
 *
 *     [\]ALGO  HEX  NAME
 *
 * as sha256sum writes it: ALGO is a gguf_hash_name() ("xxh3", any case on
 * input), then blanks, HEX the digest (either case), then "  " (or " *",
 * sha256sum's binary marker), then NAME to the end of the line.  When NAME
 * holds a backslash, a line break or a NUL, the line starts with a
 * backslash and NAME is escaped as \\ \n \r \0.  NAME is FILE, FILE:TENSOR
 * or FILE:(metadata).  Empty lines and lines starting with '#' are skipped;
 * a line ending in CR LF is read as if it ended in LF.
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
 * the algorithm, two blanks, the longest digest in hex, the two characters
 * before NAME, NAME with every byte escaped to two, and a CR. */
#define MANIFEST_LINE_MAX \
    (1 + MANIFEST_ALGO_MAX + 2 + 2 * GGUF_DIGEST_MAX + 2 + 2 * MANIFEST_NAME_MAX + 1)

/* One entry as parsed. */
typedef struct manifest_entry {
    uint32_t algo;          /* enum gguf_hash_algo */
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
 * dropped), into *e (algo, want, name, len; line and offset are left as
 * they are).  Returns 1 for an entry (e->name is then malloc'ed), 0 for a
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

#endif /* TOOLS_MANIFEST_H */
