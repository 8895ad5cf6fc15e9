/*
 * fuzz-manifest.c -- gguf-verify's manifest parser (tools/manifest.c) on
 * any bytes:
 *  - read from the buffer and through a FILE* on a pipe fed by a thread
 *    (short reads, the bounded window), both readers give the same
 *    entries, malformed lines, status and message;
 *  - they agree with the lines cut here: an entry or a malformed line for
 *    each, in order, with its number and offset; reading stops with
 *    GGUF_E_FORMAT exactly at the first line longer than
 *    MANIFEST_LINE_MAX, whose number the message gives;
 *  - each entry written back (marker, algorithm, hex, escaped name) parses
 *    to the same entry.
 */
#include <config.h>

#include "tools/manifest.h"
#include "tests/fuzz/fuzz.h"

/* What one reader reported, in order: entries, and malformed lines as
 * entries with a NULL name. */
struct report {
    manifest_entry *e;
    size_t n, cap;
};

static void add(struct report *r, const manifest_entry *e)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 16;
        r->e = realloc(r->e, r->cap * sizeof *r->e);
        if (!r->e) FUZZ_TROUBLE("out of memory");
    }
    r->e[r->n++] = *e;
}

static int on_entry(void *ctx, manifest_entry *e)
{
    FUZZ_ASSERT(e->name != NULL && e->len > 0 && e->name[e->len] == '\0', "entry name");
    FUZZ_ASSERT(e->algo < GGUF_HASH_COUNT && e->want.algo == e->algo &&
                    e->want.size == gguf_hash_size(e->algo), "entry digest");
    add(ctx, e);
    return GGUF_OK;
}

static void on_malformed(void *ctx, unsigned long line, uint64_t offset)
{
    manifest_entry e;
    memset(&e, 0, sizeof e);
    e.line = line;
    e.offset = offset;
    add(ctx, &e);
}

static void free_report(struct report *r)
{
    for (size_t i = 0; i < r->n; i++) free(r->e[i].name);
    free(r->e);
}

/* The entry written back as a line parses to itself. */
static void round_trip(const manifest_entry *e)
{
    size_t cap = 2 * e->len + 64;
    char *buf = malloc(cap);
    if (!buf) FUZZ_TROUBLE("out of memory");
    /* A writer that never flushes: its buffer is the line. */
    cli_out o = { -1, buf, cap, 0, 0 };
    char hex[GGUF_DIGEST_HEX_MAX];
    if (manifest_needs_escape(e->name, e->len)) cli_out_putc(&o, '\\');
    cli_out_str(&o, gguf_hash_name(e->algo));
    cli_out_str(&o, "  ");
    cli_out_str(&o, gguf_digest_hex(&e->want, hex));
    cli_out_str(&o, "  ");
    manifest_put_escaped(&o, e->name, e->len);
    FUZZ_ASSERT(o.err == 0 && o.len < cap, "the line did not fit");
    manifest_entry b;
    memset(&b, 0, sizeof b);
    int k = manifest_parse_line(buf, o.len, &b);
    FUZZ_ASSERT(k == 1, "written back, line %lu does not parse (%d)", e->line, k);
    FUZZ_ASSERT(b.algo == e->algo && gguf_digest_equal(&b.want, &e->want) && b.len == e->len &&
                    memcmp(b.name, e->name, e->len) == 0,
                "written back, line %lu parses to another entry", e->line);
    free(b.name);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    manifest_handler h;
    struct report mem = { NULL, 0, 0 }, file = { NULL, 0, 0 };
    gguf_error em, ef;
    memset(&em, 0, sizeof em);
    memset(&ef, 0, sizeof ef);

    h = (manifest_handler){ on_entry, on_malformed, &mem };
    int rm = manifest_read_buffer(data, size, "fuzz.xxh", &h, &em);

    struct fuzz_feed feed;
    int fd = fuzz_feed_start(&feed, data, size);
    FILE *fp = fdopen(fd, "r");
    if (!fp) FUZZ_TROUBLE("fdopen");
    h = (manifest_handler){ on_entry, on_malformed, &file };
    int rf = manifest_read_file(fp, "fuzz.xxh", &h, &ef);
    fclose(fp);
    fuzz_feed_join(&feed);

    FUZZ_ASSERT(rm == GGUF_OK || rm == GGUF_E_FORMAT, "status %d: %s", rm, em.message);
    FUZZ_ASSERT(rm == rf && strcmp(em.message, ef.message) == 0,
                "buffer and FILE* differ: %d '%s', %d '%s'", rm, em.message, rf, ef.message);
    FUZZ_ASSERT(mem.n == file.n, "buffer and FILE*: %zu and %zu reports", mem.n, file.n);
    for (size_t i = 0; i < mem.n; i++) {
        const manifest_entry *a = &mem.e[i], *b = &file.e[i];
        FUZZ_ASSERT(a->line == b->line && a->offset == b->offset && (a->name == NULL) == (b->name == NULL),
                    "report %zu differs", i);
        if (a->name)
            FUZZ_ASSERT(a->algo == b->algo && gguf_digest_equal(&a->want, &b->want) &&
                            a->len == b->len && memcmp(a->name, b->name, a->len) == 0,
                        "entry %zu differs", i);
    }

    /* The lines, cut here. */
    size_t r = 0, pos = 0;
    unsigned long ln = 0;
    int stopped = 0;
    while (pos < size) {
        const uint8_t *nl = memchr(data + pos, '\n', size - pos);
        size_t len = nl ? (size_t)(nl - (data + pos)) : size - pos;
        ln++;
        if (len > MANIFEST_LINE_MAX) {
            FUZZ_ASSERT(rm == GGUF_E_FORMAT, "line %lu of %zu bytes read", ln, len);
            char want[64];
            snprintf(want, sizeof want, "fuzz.xxh: %lu: line longer than", ln);
            FUZZ_ASSERT(strstr(em.message, want) == em.message, "message '%s'", em.message);
            FUZZ_ASSERT(r < mem.n && mem.e[r].name == NULL && mem.e[r].line == ln &&
                            mem.e[r].offset == pos, "the long line reported as malformed");
            r++;
            stopped = 1;
            break;
        }
        manifest_entry e;
        memset(&e, 0, sizeof e);
        int k = manifest_parse_line((const char *)data + pos, len, &e);
        FUZZ_ASSERT(k != -2, "out of memory");
        if (k != 0) {
            FUZZ_ASSERT(r < mem.n, "line %lu not reported", ln);
            const manifest_entry *g = &mem.e[r++];
            FUZZ_ASSERT(g->line == ln && g->offset == pos, "line %lu reported as %lu at %llu", ln,
                        g->line, (unsigned long long)g->offset);
            FUZZ_ASSERT((k == 1) == (g->name != NULL), "line %lu: entry or not", ln);
            if (k == 1) {
                FUZZ_ASSERT(g->len == e.len && memcmp(g->name, e.name, e.len) == 0, "line %lu",
                            ln);
                round_trip(g);
            }
        }
        free(e.name);
        pos += len + (nl != NULL);
    }
    FUZZ_ASSERT(stopped || rm == GGUF_OK, "stopped without a long line: %s", em.message);
    FUZZ_ASSERT(r == mem.n, "%zu reports for %zu lines seen", mem.n, r);
    free_report(&mem);
    free_report(&file);
    return 0;
}
