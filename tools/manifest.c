/* manifest.c -- gguf-verify's manifest lines; see manifest.h. */
#include <config.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tools/manifest.h"

/* ------------------------------------------------------------------------ */
/* Names                                                                     */

int manifest_needs_escape(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\\' || s[i] == '\n' || s[i] == '\r' || s[i] == '\0') return 1;
    return 0;
}

void manifest_put_escaped(cli_out *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '\\': cli_out_str(o, "\\\\"); break;
        case '\n': cli_out_str(o, "\\n"); break;
        case '\r': cli_out_str(o, "\\r"); break;
        case '\0': cli_out_str(o, "\\0"); break;
        default: cli_out_putc(o, s[i]);
        }
    }
}

/* Undoes manifest_put_escaped() in place.  Returns the new length, or -1
 * for an unknown escape or a backslash at the end. */
static long unescape(char *s, size_t n)
{
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\') {
            s[j++] = s[i];
            continue;
        }
        if (++i == n) return -1;
        switch (s[i]) {
        case '\\': s[j++] = '\\'; break;
        case 'n': s[j++] = '\n'; break;
        case 'r': s[j++] = '\r'; break;
        case '0': s[j++] = '\0'; break;
        default: return -1;
        }
    }
    return (long)j;
}

/* ------------------------------------------------------------------------ */
/* One line                                                                  */

static int hexdigit(int c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* BSD-style tags and the algorithms they name. */
static const struct { const char *tag; uint32_t algo; } bsd_tags[] = {
    {"XXH3", GGUF_HASH_XXH3},     {"XXH128", GGUF_HASH_XXH128}, {"XXH64", GGUF_HASH_XXH64},
    {"XXH32", GGUF_HASH_XXH32},   {"SHA256", GGUF_HASH_SHA256}, {"SHA1", GGUF_HASH_SHA1},
};

/* GNU style: the algorithm by the number of hex digits, as sha256sum,
 * sha1sum and xxhsum tell it; -1 for other lengths. */
static int gnu_algo(size_t digits)
{
    switch (digits) {
    case 8: return GGUF_HASH_XXH32;
    case 16: return GGUF_HASH_XXH64;
    case 32: return GGUF_HASH_XXH128;
    case 40: return GGUF_HASH_SHA1;
    case 64: return GGUF_HASH_SHA256;
    default: return -1;
    }
}

static size_t hex_run(const char *s, size_t i, size_t n)
{
    size_t j = i;
    while (j < n && hexdigit((unsigned char)s[j])) j++;
    return j - i;
}

/* Copies NAME (the len bytes at p) into e, unescaping when esc.  Returns
 * 1, -1 (a bad escape or an empty name) or -2 (out of memory). */
static int take_name(manifest_entry *e, const char *p, size_t len, int esc)
{
    if (len == 0) return -1;
    char *name = malloc(len + 1);
    if (!name) return -2;
    memcpy(name, p, len);
    if (esc) {
        long k = unescape(name, len);
        if (k <= 0) {
            free(name);
            return -1;
        }
        len = (size_t)k;
    }
    name[len] = '\0';
    e->name = name;
    e->len = len;
    return 1;
}

/* TAG (NAME) = HEX, from i (after the escape marker).  Returns as
 * manifest_parse_line(), or 0 when the line is not of this form. */
static int parse_bsd(const char *s, size_t i, size_t n, int esc, manifest_entry *e)
{
    size_t t = i;
    while (t < n && s[t] != ' ') t++;
    if (t + 2 >= n || s[t + 1] != '(') return 0;
    int algo = -1;
    for (size_t k = 0; k < sizeof bsd_tags / sizeof bsd_tags[0]; k++)
        if (strlen(bsd_tags[k].tag) == t - i && memcmp(s + i, bsd_tags[k].tag, t - i) == 0)
            algo = (int)bsd_tags[k].algo;
    if (algo < 0) return 0;
    size_t digits = 2 * (size_t)gguf_hash_size((uint32_t)algo);
    /* the name ends where ") = HEX" ends the line: NAME may hold ") = " */
    if (n < t + 2 + 1 + 4 + digits) return -1;
    size_t h0 = n - digits;
    if (memcmp(s + h0 - 4, ") = ", 4) != 0 || hex_run(s, h0, n) != digits) return -1;
    if (gguf_digest_parse((uint32_t)algo, s + h0, digits, &e->want) != GGUF_OK) return -1;
    e->algo = (uint32_t)algo;
    e->style = MANIFEST_BSD;
    return take_name(e, s + t + 2, h0 - 4 - (t + 2), esc);
}

int manifest_parse_line(const char *s, size_t n, manifest_entry *e)
{
    if (n > 0 && s[n - 1] == '\r') n--;
    if (n == 0 || s[0] == '#') return 0;
    int esc = s[0] == '\\';
    size_t i = esc ? 1 : 0, a0 = i;
    int r = parse_bsd(s, i, n, esc, e);
    if (r != 0) return r;
    /* GNU style: HEX, then "  " or " *" */
    size_t digits = hex_run(s, i, n);
    int algo = digits ? gnu_algo(digits) : -1;
    size_t skip = 0;
    if (digits == 0 && n - i > 21 && memcmp(s + i, "XXH3_", 5) == 0 && hex_run(s, i + 5, n) == 16) {
        algo = GGUF_HASH_XXH3;
        skip = 5;
        digits = 16;
    }
    size_t h = i + skip + digits;
    if (algo >= 0 && h + 2 < n && s[h] == ' ' && (s[h + 1] == ' ' || s[h + 1] == '*')) {
        if (gguf_digest_parse((uint32_t)algo, s + i + skip, digits, &e->want) != GGUF_OK) return -1;
        e->algo = (uint32_t)algo;
        e->style = MANIFEST_GNU;
        return take_name(e, s + h + 2, n - h - 2, esc);
    }
    /* ALGO  HEX  NAME: gguf-verify's, or llama-gguf-hash's (ALGO padded) */
    while (i < n && s[i] != ' ' && s[i] != '\t') i++;
    char name[MANIFEST_ALGO_MAX + 1];
    if (i == a0 || i - a0 > MANIFEST_ALGO_MAX) return -1;
    memcpy(name, s + a0, i - a0);
    name[i - a0] = '\0';
    if (gguf_hash_parse(name, &e->algo) != GGUF_OK) return -1;
    size_t b0 = i;
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
    size_t blanks = i - b0, alen = b0 - a0;
    e->style = alen < 8 && blanks == 8 - alen + 2 && blanks > 2 && !esc ? MANIFEST_LLAMA : MANIFEST_OWN;
    size_t h0 = i;
    while (i < n && hexdigit((unsigned char)s[i])) i++;
    if (gguf_digest_parse(e->algo, s + h0, i - h0, &e->want) != GGUF_OK) return -1;
    /* Then two characters as sha256sum has them: "  " or " *", and a
     * name of at least one byte. */
    if (i + 2 >= n || s[i] != ' ' || (s[i + 1] != ' ' && s[i + 1] != '*')) return -1;
    i += 2;
    return take_name(e, s + i, n - i, esc);
}

int manifest_style_has(int style, uint32_t algo)
{
    if (style == MANIFEST_OWN) return gguf_hash_name(algo) != NULL;
    if (style == MANIFEST_BSD)
        for (size_t k = 0; k < sizeof bsd_tags / sizeof bsd_tags[0]; k++)
            if (bsd_tags[k].algo == algo) return 1;
    if (style == MANIFEST_GNU) return algo == GGUF_HASH_XXH3 || (algo < GGUF_HASH_COUNT && algo != GGUF_HASH_CRC32);
    return 0;
}

int manifest_put_line(cli_out *o, int style, const gguf_digest *d, const char *name, size_t n)
{
    if (!manifest_style_has(style, d->algo)) return -1;
    char hex[GGUF_DIGEST_HEX_MAX];
    gguf_digest_hex(d, hex);
    int esc = manifest_needs_escape(name, n);
    if (esc) cli_out_putc(o, '\\');
    if (style == MANIFEST_BSD) {
        for (size_t k = 0; k < sizeof bsd_tags / sizeof bsd_tags[0]; k++)
            if (bsd_tags[k].algo == d->algo) cli_out_str(o, bsd_tags[k].tag);
        cli_out_str(o, " (");
    } else {
        if (style == MANIFEST_OWN) {
            cli_out_str(o, gguf_hash_name(d->algo));
            cli_out_str(o, "  ");
        } else if (d->algo == GGUF_HASH_XXH3) {
            cli_out_str(o, "XXH3_");
        }
        cli_out_str(o, hex);
        cli_out_str(o, "  ");
    }
    if (esc) manifest_put_escaped(o, name, n);
    else cli_out_write(o, name, n);
    if (style == MANIFEST_BSD) {
        cli_out_str(o, ") = ");
        cli_out_str(o, hex);
    }
    cli_out_putc(o, '\n');
    return 0;
}

/* FILE or FILE:PART escaped, without the marker. */
static void put_file_part(cli_out *o, const char *file, const char *part, size_t part_len)
{
    manifest_put_escaped(o, file, strlen(file));
    if (part) {
        cli_out_putc(o, ':');
        manifest_put_escaped(o, part, part_len);
    }
}

/* The escape marker, when FILE or PART needs escaping. */
static void put_marker(cli_out *o, const char *file, const char *part, size_t part_len)
{
    if (manifest_needs_escape(file, strlen(file)) || (part && manifest_needs_escape(part, part_len)))
        cli_out_putc(o, '\\');
}

void manifest_put_name(cli_out *o, const char *file, const char *part, size_t part_len)
{
    put_marker(o, file, part, part_len);
    put_file_part(o, file, part, part_len);
}

void manifest_put_part_line(cli_out *o, const gguf_digest *d, const char *file, const char *part,
                            size_t part_len)
{
    char hex[GGUF_DIGEST_HEX_MAX];
    put_marker(o, file, part, part_len);
    cli_out_str(o, gguf_hash_name(d->algo));
    cli_out_str(o, "  ");
    cli_out_str(o, gguf_digest_hex(d, hex));
    cli_out_str(o, "  ");
    put_file_part(o, file, part, part_len);
    cli_out_putc(o, '\n');
}

/* ------------------------------------------------------------------------ */
/* Lines of a manifest                                                       */

/* Reads from a FILE* through a window that always holds the line being
 * cut, so that its size, not the manifest's, bounds the memory: room for
 * the longest line, its LF and one byte more (enough to know that a line
 * is too long), plus a block for fread. */
#define WINDOW (MANIFEST_LINE_MAX + 2 + 64 * 1024)

struct lines {
    FILE *fp;               /* NULL: the bytes are all at buf */
    const char *buf;
    char *window;           /* FILE*: malloc'ed, WINDOW bytes */
    size_t start, end;      /* unread bytes: buf[start, end) */
    uint64_t base;          /* offset in the input of buf[0] */
    int eof;
};

/* Fills err (when not NULL) and returns status. */
static int fail(gguf_error *err, int status, int sys_errno, uint64_t offset, const char *fmt, ...)
    CLI_PRINTF(5, 6);
static int fail(gguf_error *err, int status, int sys_errno, uint64_t offset, const char *fmt, ...)
{
    if (!err) return status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    err->status = status;
    err->sys_errno = sys_errno;
    err->offset = offset;
    return status;
}

/* The next line at *s (without its LF), *n bytes, at offset *off.
 * Returns 1 for a line, 0 at the end of input, -1 for a line longer than
 * MANIFEST_LINE_MAX (*off is its offset), GGUF_E_IO or GGUF_E_NOMEM as -2
 * and -3 (errno set). */
static int next_line(struct lines *l, const char **s, size_t *n, uint64_t *off)
{
    for (;;) {
        const char *p = l->buf + l->start;
        size_t have = l->end - l->start;
        size_t look = have < MANIFEST_LINE_MAX + 1 ? have : MANIFEST_LINE_MAX + 1;
        const char *nl = memchr(p, '\n', look);
        *off = l->base + l->start;
        if (nl) {
            *s = p;
            *n = (size_t)(nl - p);
            l->start += *n + 1;
            return 1;
        }
        if (have > MANIFEST_LINE_MAX) return -1;
        if (l->eof || !l->fp) {
            if (have == 0) return 0;
            *s = p;
            *n = have;
            l->start = l->end;
            return 1;
        }
        /* Move the partial line to the front and read more after it. */
        if (!l->window) {
            l->window = malloc(WINDOW);
            if (!l->window) return -3;
            l->buf = l->window;
        }
        memmove(l->window, p, have);
        l->base += l->start;
        l->start = 0;
        l->end = have;
        size_t got = fread(l->window + have, 1, WINDOW - have, l->fp);
        l->end += got;
        if (got < WINDOW - have) {
            if (!ferror(l->fp)) {
                l->eof = 1;
            } else if (errno == EINTR) {
                /* A signal interrupted read(2); what came before it counts. */
                clearerr(l->fp);
            } else {
                return -2;
            }
        }
    }
}

static int read_lines(struct lines *l, const char *name, const manifest_handler *h,
                      gguf_error *err)
{
    const char *s;
    size_t n;
    uint64_t off;
    unsigned long ln = 0;
    int r, rc = GGUF_OK;
    while ((r = next_line(l, &s, &n, &off)) == 1) {
        ln++;
        manifest_entry e;
        memset(&e, 0, sizeof e);
        int k = manifest_parse_line(s, n, &e);
        if (k == -2) {
            rc = fail(err, GGUF_E_NOMEM, ENOMEM, off, "%s: %lu: out of memory (at byte %llu)",
                      name, ln, (unsigned long long)off);
            break;
        }
        if (k < 0) {
            if (h->malformed) h->malformed(h->ctx, ln, off);
            continue;
        }
        if (k == 0) continue;
        e.line = ln;
        e.offset = off;
        if ((rc = h->entry(h->ctx, &e)) != GGUF_OK) {
            if (err && !err->message[0])
                fail(err, rc, 0, off, "%s: %lu: %s (at byte %llu)", name, ln, gguf_strerror(rc),
                     (unsigned long long)off);
            break;
        }
    }
    if (r == -1) {
        ln++;
        if (h->malformed) h->malformed(h->ctx, ln, off);
        rc = fail(err, GGUF_E_FORMAT, 0, off,
                  "%s: %lu: line longer than %u bytes, improperly formatted; the manifest is not "
                  "read further (at byte %llu)", name, ln, (unsigned)MANIFEST_LINE_MAX,
                  (unsigned long long)off);
    } else if (r == -2) {
        int e = errno;
        rc = fail(err, GGUF_E_IO, e, l->base + l->end, "%s: read error: %s", name, strerror(e));
    } else if (r == -3) {
        rc = fail(err, GGUF_E_NOMEM, ENOMEM, off, "%s: out of memory", name);
    }
    free(l->window);
    return rc;
}

int manifest_read_file(FILE *fp, const char *name, const manifest_handler *h, gguf_error *err)
{
    struct lines l = { fp, "", NULL, 0, 0, 0, 0 };
    if (err) err->message[0] = '\0';
    return read_lines(&l, name, h, err);
}

int manifest_read_buffer(const void *buf, size_t n, const char *name, const manifest_handler *h,
                         gguf_error *err)
{
    struct lines l = { NULL, n ? buf : "", NULL, 0, n, 0, 1 };
    if (err) err->message[0] = '\0';
    return read_lines(&l, name, h, err);
}
