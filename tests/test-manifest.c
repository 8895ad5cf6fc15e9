/*
 * test-manifest.c -- the manifest parser of gguf-verify (tools/manifest.h):
 *  1. entries, skipped and malformed lines of a sample, with their line
 *     numbers and offsets, the same from a buffer and from a FILE*;
 *  2. the line bound: a line of MANIFEST_LINE_MAX bytes is read (and judged
 *     on its content), one byte more stops the reading with GGUF_E_FORMAT
 *     naming the line and its offset; /dev/zero stops at line 1;
 *  3. a FILE* on a slow pipe read while a signal handler interrupts the
 *     reads (EINTR) gives the same entries;
 *  4. names written with manifest_put_escaped() parse back to themselves;
 *  5. an entry handler that fails stops the reading with its status;
 *  6. the lines of other tools: GNU style by length (XXH32, XXH64, XXH128,
 *     SHA-1, SHA-256) and xxhsum's XXH3_ prefix, BSD tags (names holding
 *     ") = " too), llama-gguf-hash's padded algorithm column, and what is
 *     malformed in each; manifest_put_line() in each style parses back.
 */
#include <config.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/manifest.h"
#include "tests/testutil.h"

/* What a reader reported: entries, and malformed lines (name NULL). */
struct seen {
    manifest_entry e[64];
    size_t n;
    int fail_at;        /* entry handler: fail when this would be report fail_at (1-based) */
};

static int on_entry(void *ctx, manifest_entry *e)
{
    struct seen *s = ctx;
    if (s->fail_at && (int)s->n + 1 == s->fail_at) {
        free(e->name);
        return GGUF_E_NOMEM;
    }
    if (s->n < 64) s->e[s->n++] = *e;
    else free(e->name);
    return GGUF_OK;
}

static void on_malformed(void *ctx, unsigned long line, uint64_t offset)
{
    struct seen *s = ctx;
    if (s->n < 64) {
        memset(&s->e[s->n], 0, sizeof s->e[s->n]);
        s->e[s->n].line = line;
        s->e[s->n++].offset = offset;
    }
}

static void seen_free(struct seen *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->e[i].name);
    s->n = 0;
}

static const char sample[] =
    "xxh3  0123456789abcdef  m.gguf\n"                            /* 1, at 0 */
    "# a comment\n"                                               /* 2 */
    "\n"                                                          /* 3 */
    "garbage\n"                                                   /* 4, at 44 */
    "XXH128\t0123456789ABCDEF0123456789abcdef *m.gguf:(metadata)\r\n" /* 5, at 52 */
    "\\crc32  89abcdef  odd\\nname\\\\x.gguf:t\n"                  /* 6, at 112 */
    "xxh3  0123  m.gguf\n"                                        /* 7, at 150: short hex */
    "\\xxh3  0123456789abcdef  bad\\qescape\n"                    /* 8, at 169 */
    "xxh64  fedcba9876543210  last";                              /* 9, at 206 */

static void check_sample(const struct seen *s, int rc, const gguf_error *err, const char *how)
{
    CHECK(rc == GGUF_OK, "%s: status %d: %s", how, rc, err->message);
    static const struct { unsigned long line; uint64_t off; const char *name; size_t len; uint32_t algo; } want[] = {
        { 1, 0, "m.gguf", 6, GGUF_HASH_XXH3 },
        { 4, 44, NULL, 0, 0 },
        { 5, 52, "m.gguf:(metadata)", 17, GGUF_HASH_XXH128 },
        { 6, 112, "odd\nname\\x.gguf:t", 17, GGUF_HASH_CRC32 },
        { 7, 150, NULL, 0, 0 },
        { 8, 169, NULL, 0, 0 },
        { 9, 206, "last", 4, GGUF_HASH_XXH64 },
    };
    size_t nw = sizeof want / sizeof want[0];
    CHECK(s->n == nw, "%s: %zu reports, expected %zu", how, s->n, nw);
    for (size_t i = 0; i < nw && i < s->n; i++) {
        const manifest_entry *e = &s->e[i];
        CHECK(e->line == want[i].line && e->offset == want[i].off, "%s: report %zu: line %lu at %llu",
              how, i, e->line, (unsigned long long)e->offset);
        CHECK((e->name == NULL) == (want[i].name == NULL), "%s: report %zu: entry or not", how, i);
        if (e->name && want[i].name)
            CHECK(e->len == want[i].len && memcmp(e->name, want[i].name, e->len) == 0 &&
                      e->algo == want[i].algo && e->name[e->len] == '\0',
                  "%s: report %zu: name or algorithm", how, i);
    }
    char hex[GGUF_DIGEST_HEX_MAX];
    if (s->n > 2 && s->e[2].name)
        CHECK(strcmp(gguf_digest_hex(&s->e[2].want, hex), "0123456789abcdef0123456789abcdef") == 0,
              "%s: the digest, either case", how);
}

/* Reads `text` (n bytes) through a pipe fed by a child, `slow`: 5 bytes at
 * a time, 100 us apart. */
static int read_pipe(const char *text, size_t n, int slow, struct seen *s, gguf_error *err)
{
    pid_t pid;
    int fd = tu_pipe_feed(text, n, slow ? 5 : 0, slow ? 100000 : 0, &pid);
    FILE *fp = fdopen(fd, "r");
    if (!fp) HARD_ERROR("fdopen");
    manifest_handler h = { on_entry, on_malformed, s };
    int rc = manifest_read_file(fp, "pipe.xxh", &h, err);
    fclose(fp);
    waitpid(pid, NULL, 0);
    return rc;
}

static void test_sample(void)
{
    struct seen s = { .n = 0 };
    gguf_error err;
    manifest_handler h = { on_entry, on_malformed, &s };
    int rc = manifest_read_buffer(sample, sizeof sample - 1, "sample.xxh", &h, &err);
    check_sample(&s, rc, &err, "buffer");
    seen_free(&s);
    rc = read_pipe(sample, sizeof sample - 1, 0, &s, &err);
    check_sample(&s, rc, &err, "FILE*");
    seen_free(&s);
    rc = manifest_read_buffer("", 0, "empty.xxh", &h, &err);
    CHECK(rc == GGUF_OK && s.n == 0, "an empty manifest");
}

static volatile sig_atomic_t ticks;
static void on_tick(int sig)
{
    (void)sig;
    ticks++;
}

static void test_signals(void)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_tick;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGALRM, &sa, &old) < 0) HARD_ERROR("sigaction");
    struct itimerval every = { { 0, 20 }, { 0, 20 } }, off = { { 0, 0 }, { 0, 0 } };
    struct seen s = { .n = 0 };
    gguf_error err;
    setitimer(ITIMER_REAL, &every, NULL);
    int rc = read_pipe(sample, sizeof sample - 1, 1, &s, &err);
    setitimer(ITIMER_REAL, &off, NULL);
    sigaction(SIGALRM, &old, NULL);
    CHECK(ticks > 10, "the signal came (%d times)", (int)ticks);
    check_sample(&s, rc, &err, "FILE* under signals");
    seen_free(&s);
}

/* A manifest of: an entry, a line of `len` bytes, an entry. */
static char *long_manifest(size_t len, size_t *n)
{
    static const char first[] = "xxh3  0123456789abcdef  a\n", last[] = "xxh3  0123456789abcdef  b\n";
    char *m = malloc(sizeof first + len + sizeof last);
    if (!m) HARD_ERROR("out of memory");
    size_t o = 0;
    memcpy(m, first, sizeof first - 1);
    o += sizeof first - 1;
    /* A valid entry as long as asked: "xxh3  HEX  " and a name. */
    memcpy(m + o, "xxh3  0123456789abcdef  ", 24);
    memset(m + o + 24, 'n', len - 24);
    o += len;
    m[o++] = '\n';
    memcpy(m + o, last, sizeof last - 1);
    o += sizeof last - 1;
    *n = o;
    return m;
}

static void test_bound(void)
{
    struct seen s = { .n = 0 };
    gguf_error err;
    manifest_handler h = { on_entry, on_malformed, &s };
    size_t n;
    char *m = long_manifest(MANIFEST_LINE_MAX, &n);
    int rc = manifest_read_buffer(m, n, "max.xxh", &h, &err);
    CHECK(rc == GGUF_OK && s.n == 3 && s.e[1].name && s.e[1].len == MANIFEST_LINE_MAX - 24,
          "a line of MANIFEST_LINE_MAX bytes is an entry: %d, %zu reports", rc, s.n);
    seen_free(&s);
    free(m);
    m = long_manifest(MANIFEST_LINE_MAX + 1, &n);
    for (int file = 0; file < 2; file++) {
        memset(&err, 0, sizeof err);
        rc = file ? read_pipe(m, n, 0, &s, &err) : manifest_read_buffer(m, n, "over.xxh", &h, &err);
        const char *who = file ? "pipe.xxh" : "over.xxh";
        char want[160];
        snprintf(want, sizeof want, "%s: 2: line longer than %u bytes, improperly formatted; the "
                 "manifest is not read further (at byte 26)", who, (unsigned)MANIFEST_LINE_MAX);
        CHECK(rc == GGUF_E_FORMAT && strcmp(err.message, want) == 0 && err.offset == 26,
              "%s: one byte more stops the reading: %d '%s'", file ? "FILE*" : "buffer", rc,
              err.message);
        CHECK(s.n == 2 && s.e[0].name && !s.e[1].name && s.e[1].line == 2,
              "%s: the entry before, the long line malformed, nothing after (%zu reports)",
              file ? "FILE*" : "buffer", s.n);
        seen_free(&s);
    }
    free(m);
    FILE *zero = fopen("/dev/zero", "r");
    if (zero) {
        rc = manifest_read_file(zero, "/dev/zero", &h, &err);
        CHECK(rc == GGUF_E_FORMAT && strstr(err.message, "/dev/zero: 1: line longer than") == err.message,
              "/dev/zero: %s", err.message);
        fclose(zero);
        seen_free(&s);
    }
}

static void test_escapes(void)
{
    static const char *const names[] = { "plain", "with space", "back\\slash", "new\nline",
                                         "cr\r", "\r\n\\", "tab\there" };
    char nul[] = { 'a', '\0', 'b' };
    for (size_t i = 0; i <= sizeof names / sizeof names[0]; i++) {
        const char *name = i < sizeof names / sizeof names[0] ? names[i] : nul;
        size_t len = i < sizeof names / sizeof names[0] ? strlen(name) : sizeof nul;
        char buf[128];
        cli_out o = { -1, buf, sizeof buf, 0, 0 };  /* never flushed: the buffer is the line */
        int esc = manifest_needs_escape(name, len);
        if (esc) cli_out_putc(&o, '\\');
        cli_out_str(&o, "xxh3  0123456789abcdef  ");
        manifest_put_escaped(&o, name, len);
        manifest_entry e;
        memset(&e, 0, sizeof e);
        int k = manifest_parse_line(buf, o.len, &e);
        CHECK(k == 1 && e.len == len && memcmp(e.name, name, len) == 0, "name %zu round trip", i);
        CHECK(esc == (strpbrk(name, "\\\n\r") != NULL || memchr(name, '\0', len) != NULL),
              "name %zu: escaped when needed", i);
        free(e.name);
    }
}

static void test_handler_failure(void)
{
    struct seen s = { .n = 0, .fail_at = 3 };
    gguf_error err;
    manifest_handler h = { on_entry, on_malformed, &s };
    int rc = manifest_read_buffer(sample, sizeof sample - 1, "sample.xxh", &h, &err);
    CHECK(rc == GGUF_E_NOMEM && strstr(err.message, "sample.xxh: 5: ") == err.message,
          "the handler's status stops the reading at its line: %d '%s'", rc, err.message);
    CHECK(s.n == 2, "nothing after it (%zu reports)", s.n);
    seen_free(&s);
}

struct form {
    const char *line;
    int k;                  /* manifest_parse_line()'s answer */
    uint32_t algo;
    int style;
    const char *name;
};

static void test_forms(void)
{
    static const struct form forms[] = {
        {"0123abcd  f.gguf", 1, GGUF_HASH_XXH32, MANIFEST_GNU, "f.gguf"},
        {"0123456789abcdef  f.gguf", 1, GGUF_HASH_XXH64, MANIFEST_GNU, "f.gguf"},
        {"0123456789abcdef0123456789ABCDEF *f.gguf", 1, GGUF_HASH_XXH128, MANIFEST_GNU, "f.gguf"},
        {"da39a3ee5e6b4b0d3255bfef95601890afd80709  a b", 1, GGUF_HASH_SHA1, MANIFEST_GNU, "a b"},
        {"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  x", 1, GGUF_HASH_SHA256,
         MANIFEST_GNU, "x"},
        {"XXH3_0123456789abcdef  f.gguf", 1, GGUF_HASH_XXH3, MANIFEST_GNU, "f.gguf"},
        {"\\0123abcd  a\\nb", 1, GGUF_HASH_XXH32, MANIFEST_GNU, "a\nb"},
        {"XXH3 (f.gguf) = 0123456789abcdef", 1, GGUF_HASH_XXH3, MANIFEST_BSD, "f.gguf"},
        {"XXH32 (f) = 0123abcd", 1, GGUF_HASH_XXH32, MANIFEST_BSD, "f"},
        {"XXH64 (a) = b) = 0123456789abcdef", 1, GGUF_HASH_XXH64, MANIFEST_BSD, "a) = b"},
        {"SHA256 (m.gguf) = e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", 1,
         GGUF_HASH_SHA256, MANIFEST_BSD, "m.gguf"},
        {"\\SHA1 (a\\\\b) = da39a3ee5e6b4b0d3255bfef95601890afd80709", 1, GGUF_HASH_SHA1, MANIFEST_BSD,
         "a\\b"},
        {"xxh64     0123456789abcdef  m.gguf", 1, GGUF_HASH_XXH64, MANIFEST_LLAMA, "m.gguf"},
        {"sha256    e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  m.gguf:t", 1,
         GGUF_HASH_SHA256, MANIFEST_LLAMA, "m.gguf:t"},
        {"sha1      da39a3ee5e6b4b0d3255bfef95601890afd80709  m.gguf", 1, GGUF_HASH_SHA1, MANIFEST_LLAMA,
         "m.gguf"},
        {"xxh64  0123456789abcdef  m.gguf", 1, GGUF_HASH_XXH64, MANIFEST_OWN, "m.gguf"},
        {"xxh64   0123456789abcdef  m.gguf", 1, GGUF_HASH_XXH64, MANIFEST_OWN, "m.gguf"},
        {"0123abc  f", -1, 0, 0, NULL},                     /* 7 digits */
        {"0123abcd f", -1, 0, 0, NULL},                     /* one blank */
        {"0123abcd  ", -1, 0, 0, NULL},                     /* no name */
        {"XXH3_0123  f", -1, 0, 0, NULL},
        {"XXH3 (f) = 0123", -1, 0, 0, NULL},                /* short digest */
        {"XXH3 (f) 0123456789abcdef", -1, 0, 0, NULL},
        {"XXH3 () = 0123456789abcdef", -1, 0, 0, NULL},     /* empty name */
        {"MD5 (f) = d41d8cd98f00b204e9800998ecf8427e", -1, 0, 0, NULL},
        {"SHA256 (f) = 0123456789abcdef", -1, 0, 0, NULL},  /* the length of another */
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        const struct form *f = &forms[i];
        manifest_entry e;
        memset(&e, 0, sizeof e);
        int k = manifest_parse_line(f->line, strlen(f->line), &e);
        CHECK(k == f->k, "'%s': %d, expected %d", f->line, k, f->k);
        if (k == 1 && f->k == 1) {
            CHECK(e.algo == f->algo && e.style == f->style, "'%s': %s style %d", f->line,
                  gguf_hash_name(e.algo), e.style);
            CHECK(e.len == strlen(f->name) && memcmp(e.name, f->name, e.len) == 0, "'%s': the name",
                  f->line);
        }
        if (k == 1) free(e.name);
    }
    /* every style and algorithm it has a form for, escaped names too */
    static const char *const names[] = {"m.gguf", "a) = b", "new\nline\\"};
    for (int style = MANIFEST_OWN; style <= MANIFEST_BSD; style++)
        for (uint32_t a = 0; a < GGUF_HASH_COUNT; a++)
            for (size_t ni = 0; ni < sizeof names / sizeof names[0]; ni++) {
                gguf_digest d;
                gguf_hash_buffer(a, "abc", 3, &d);
                char buf[512];
                cli_out o = { -1, buf, sizeof buf, 0, 0 };
                int rc = manifest_put_line(&o, style, &d, names[ni], strlen(names[ni]));
                CHECK((rc == 0) == manifest_style_has(style, a), "style %d %s: a form", style,
                      gguf_hash_name(a));
                if (rc) continue;
                CHECK(o.len > 0 && buf[o.len - 1] == '\n', "style %d: one line", style);
                manifest_entry e;
                memset(&e, 0, sizeof e);
                int k = manifest_parse_line(buf, o.len - 1, &e);
                CHECK(k == 1 && e.algo == a && e.style == style && gguf_digest_equal(&e.want, &d) &&
                      e.len == strlen(names[ni]) && memcmp(e.name, names[ni], e.len) == 0,
                      "style %d %s '%s': parses back", style, gguf_hash_name(a), names[ni]);
                if (k == 1) free(e.name);
            }
    CHECK(!manifest_style_has(MANIFEST_GNU, GGUF_HASH_CRC32) && !manifest_style_has(MANIFEST_BSD, GGUF_HASH_CRC32),
          "no GNU or BSD form for CRC-32");
    /* part lines (FILE:PART) of every algorithm parse back to the name
     * FILE:PART, escaped where the file or the part needs it */
    static const char *const parts[][2] = {{"m.gguf", "blk.0.attn_q.weight"},
                                           {"m.gguf", "we\\ird\npart"},
                                           {"a\nb.gguf", "t"}};
    for (uint32_t a = 0; a < GGUF_HASH_COUNT; a++)
        for (size_t pi = 0; pi < sizeof parts / sizeof parts[0]; pi++) {
            gguf_digest d;
            gguf_hash_buffer(a, "abc", 3, &d);
            char buf[512], want[128];
            cli_out o = { -1, buf, sizeof buf, 0, 0 };
            manifest_put_part_line(&o, &d, parts[pi][0], parts[pi][1], strlen(parts[pi][1]));
            CHECK(o.len > 0 && buf[o.len - 1] == '\n', "part line: one line");
            snprintf(want, sizeof want, "%s:%s", parts[pi][0], parts[pi][1]);
            manifest_entry e;
            memset(&e, 0, sizeof e);
            int k = manifest_parse_line(buf, o.len - 1, &e);
            CHECK(k == 1 && e.algo == a && e.style == MANIFEST_OWN && gguf_digest_equal(&e.want, &d) &&
                      e.len == strlen(want) && memcmp(e.name, want, e.len) == 0,
                  "%s part line '%s': parses back", gguf_hash_name(a), want);
            if (k == 1) free(e.name);
            /* the name alone, as result lines give it */
            cli_out n = { -1, buf, sizeof buf, 0, 0 };
            manifest_put_name(&n, parts[pi][0], parts[pi][1], strlen(parts[pi][1]));
            int esc = strpbrk(want, "\\\n") != NULL;
            CHECK(n.len > 0 && (buf[0] == '\\') == esc, "name '%s': the marker when escaped", want);
        }
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    test_sample();
    test_signals();
    test_bound();
    test_escapes();
    test_handler_failure();
    test_forms();
    tu_finish();
}
