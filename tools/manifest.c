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

int manifest_parse_line(const char *s, size_t n, manifest_entry *e)
{
    if (n > 0 && s[n - 1] == '\r') n--;
    if (n == 0 || s[0] == '#') return 0;
    int esc = s[0] == '\\';
    size_t i = esc ? 1 : 0, a0 = i;
    while (i < n && s[i] != ' ' && s[i] != '\t') i++;
    char algo[MANIFEST_ALGO_MAX + 1];
    if (i == a0 || i - a0 > MANIFEST_ALGO_MAX) return -1;
    memcpy(algo, s + a0, i - a0);
    algo[i - a0] = '\0';
    if (gguf_hash_parse(algo, &e->algo) != GGUF_OK) return -1;
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
    size_t h0 = i;
    while (i < n && hexdigit((unsigned char)s[i])) i++;
    if (gguf_digest_parse(e->algo, s + h0, i - h0, &e->want) != GGUF_OK) return -1;
    /* Then two characters as sha256sum has them: "  " or " *", and a
     * name of at least one byte. */
    if (i + 2 >= n || s[i] != ' ' || (s[i + 1] != ' ' && s[i + 1] != '*')) return -1;
    i += 2;
    size_t len = n - i;
    char *name = malloc(len + 1);
    if (!name) return -2;
    memcpy(name, s + i, len);
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
