/* cli.c -- helpers shared by the command-line tools; see cli.h. */
#include <config.h>

#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "tools/cli.h"

const char *cli_prog = "prog";

static char stdout_buf[1 << 20];
cli_out cli_stdout = { 1, stdout_buf, sizeof stdout_buf, 0, 0 };

static const char hexdig[] = "0123456789abcdef";

void cli_set_prog(const char *name)
{
    cli_prog = name;
}

/* Writes "prog: " + text (escaped) + "\n" to stderr in one call. */
static void emit_diag(const char *text)
{
    char esc[2048];
    cli_out_flush(&cli_stdout);
    cli_text_escape(esc, sizeof esc, text, strlen(text));
    fprintf(stderr, "%s: %s\n", cli_prog, esc);
}

void cli_error(const char *file, const char *fmt, ...)
{
    char msg[1024], text[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (file)
        snprintf(text, sizeof text, "%s: %s", file, msg);
    else
        snprintf(text, sizeof text, "%s", msg);
    emit_diag(text);
}

void cli_message(const char *msg)
{
    emit_diag(msg);
}

int cli_usage_error(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    emit_diag(msg);
    fprintf(stderr, "Try '%s --help' for more information.\n", cli_prog);
    return CLI_EXIT_TROUBLE;
}

void cli_print_version(void)
{
    cli_out_printf(&cli_stdout, "%s (%s) %s\nlibgguf %s\n", cli_prog, PACKAGE_NAME,
                   PACKAGE_VERSION, gguf_version_string());
}

int cli_getopt_error(int c, char **argv)
{
    if (c == ':') {
        if (optopt && optopt < 256)
            return cli_usage_error("option requires an argument -- '%c'", optopt);
        return cli_usage_error("option '%s' requires an argument", argv[optind - 1]);
    }
    if (optopt && optopt < 256)
        return cli_usage_error("invalid option -- '%c'", optopt);
    return cli_usage_error("unrecognized option '%s'", argv[optind - 1]);
}

int cli_getopt_default(int c, char **argv, void (*usage)(void))
{
    switch (c) {
    case 'h':
        usage();
        return cli_out_close(&cli_stdout);
    case 'V':
        cli_print_version();
        return cli_out_close(&cli_stdout);
    default:
        return cli_getopt_error(c, argv);
    }
}

int cli_isatty(int fd)
{
    return isatty(fd) == 1;
}

int cli_glob_match(const char *pattern, const char *s, size_t len)
{
    char small[256];
    char *copy = small;
    if (len >= sizeof small) {
        copy = malloc(len + 1);
        if (!copy) return 0;
    }
    memcpy(copy, s, len);
    copy[len] = '\0';
    int match = fnmatch(pattern, copy, 0) == 0;
    if (copy != small) free(copy);
    return match;
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */

int cli_out_flush(cli_out *o)
{
    if (o->err) {
        o->len = 0;
        return -1;
    }
    size_t done = 0;
    while (done < o->len) {
        ssize_t n = write(o->fd, o->buf + done, o->len - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            o->err = errno;
            break;
        }
        if (n == 0) {           /* should not happen for write(2); avoid spinning */
            o->err = EIO;
            break;
        }
        done += (size_t)n;
    }
    o->len = 0;
    return o->err ? -1 : 0;
}

int cli_out_close(cli_out *o)
{
    cli_out_flush(o);
    if (!o->err && close(o->fd) != 0 && errno != EBADF && errno != EINTR) o->err = errno;
    if (o->err) {
        fprintf(stderr, "%s: write error: %s\n", cli_prog, strerror(o->err));
        return CLI_EXIT_TROUBLE;
    }
    return CLI_EXIT_OK;
}

void cli_out_write(cli_out *o, const void *p, size_t n)
{
    const char *s = p;
    while (n > 0) {
        if (o->len == o->cap) cli_out_flush(o);
        size_t room = o->cap - o->len;
        if (room > n) room = n;
        memcpy(o->buf + o->len, s, room);
        o->len += room;
        s += room;
        n -= room;
    }
}

void cli_out_pad(cli_out *o, long n)
{
    static const char spaces[] = "                                ";
    while (n > 0) {
        long k = n < (long)sizeof spaces - 1 ? n : (long)sizeof spaces - 1;
        cli_out_write(o, spaces, (size_t)k);
        n -= k;
    }
}

void cli_out_printf(cli_out *o, const char *fmt, ...)
{
    char buf[4096];
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof buf) {
        cli_out_write(o, buf, (size_t)n);
    } else if (n >= 0) {
        /* longer than the stack's buffer (a usage text): formatted again,
         * whole, in one of its length */
        char *big = malloc((size_t)n + 1);
        if (big && vsnprintf(big, (size_t)n + 1, fmt, again) == n) {
            cli_out_write(o, big, (size_t)n);
        } else {
            cli_out_write(o, buf, sizeof buf - 1);
            if (!o->err) o->err = ENOMEM; /* the text cut short: an error at close */
        }
        free(big);
    }
    va_end(again);
}

/* Writes v in decimal at the end of buf[0..20) and returns the start. */
static char *u64_digits(char *end, uint64_t v)
{
    char *p = end;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return p;
}

void cli_out_u64(cli_out *o, uint64_t v)
{
    char buf[24];
    char *p = u64_digits(buf + sizeof buf, v);
    cli_out_write(o, p, (size_t)(buf + sizeof buf - p));
}

void cli_out_i64(cli_out *o, int64_t v)
{
    if (v < 0) {
        cli_out_putc(o, '-');
        cli_out_u64(o, (uint64_t)0 - (uint64_t)v);   /* exact for INT64_MIN too */
    } else {
        cli_out_u64(o, (uint64_t)v);
    }
}

void cli_out_u64_w(cli_out *o, uint64_t v, int width)
{
    char buf[24];
    char *p = u64_digits(buf + sizeof buf, v);
    long len = (long)(buf + sizeof buf - p);
    cli_out_pad(o, width - len);
    cli_out_write(o, p, (size_t)len);
}

/* Writes the name of a non-finite value; returns its length. */
static int fmt_nonfinite(char *buf, double v)
{
    const char *s = isnan(v) ? "nan" : v < 0 ? "-inf" : "inf";
    strcpy(buf, s);
    return (int)strlen(s);
}

/* Counts the significant digits of a plain decimal such as "1000000.0"
 * (leading and trailing zeros do not count). */
static int sig_digits(const char *s)
{
    int first = -1, last = -1, pos = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') continue;
        if (*s != '0') {
            if (first < 0) first = pos;
            last = pos;
        }
        pos++;
    }
    return first < 0 ? 1 : last - first + 1;
}

/* Turns the shortest %g rendering in buf (n bytes) of finite v into the
 * form people expect of a float: "1e+06" as "1000000.0" when that takes no
 * more significant digits, and "2" as "2.0", so that a float always shows
 * a '.' or an exponent.  Returns the new length. */
static int float_style(char *buf, int n, double v, int prec)
{
    if (strchr(buf, 'e')) {
        if (fabs(v) < 1e16 && v == (double)(long long)v) {
            char plain[32];
            int m = snprintf(plain, sizeof plain, "%.1f", v);
            if (sig_digits(plain) <= prec && m < 32) {
                memcpy(buf, plain, (size_t)m + 1);
                return m;
            }
        }
        return n;
    }
    if (!strchr(buf, '.') && n + 2 < 32) {
        memcpy(buf + n, ".0", 3);
        n += 2;
    }
    return n;
}

int cli_fmt_f32(char *buf, float v)
{
    if (!isfinite(v)) return fmt_nonfinite(buf, v);
    /* %.6g already drops trailing zeros, so fewer digits never give a
     * shorter string than trying from 6 up to the 9 that always suffice. */
    int n = 0, prec;
    for (prec = 6; prec <= 9; prec++) {
        n = snprintf(buf, 32, "%.*g", prec, (double)v);
        if (prec == 9 || strtof(buf, NULL) == v) break;
    }
    return float_style(buf, n, v, prec);
}

int cli_fmt_f64(char *buf, double v)
{
    if (!isfinite(v)) return fmt_nonfinite(buf, v);
    int n = 0, prec;
    for (prec = 15; prec <= 17; prec++) {
        n = snprintf(buf, 32, "%.*g", prec, v);
        if (prec == 17 || strtod(buf, NULL) == v) break;
    }
    return float_style(buf, n, v, prec);
}

static void out_float_text(cli_out *o, const char *buf, int n, int finite, int json)
{
    if (json && !finite) {
        cli_out_putc(o, '"');
        cli_out_write(o, buf, (size_t)n);
        cli_out_putc(o, '"');
    } else {
        cli_out_write(o, buf, (size_t)n);
    }
}

void cli_out_f32(cli_out *o, float v, int json)
{
    char buf[32];
    int n = cli_fmt_f32(buf, v);
    out_float_text(o, buf, n, isfinite(v), json);
}

void cli_out_f64(cli_out *o, double v, int json)
{
    char buf[32];
    int n = cli_fmt_f64(buf, v);
    out_float_text(o, buf, n, isfinite(v), json);
}

/* ------------------------------------------------------------------------ */
/* Escaping                                                                  */

char *cli_shorten(char *buf, const char *s, size_t len)
{
    if (len <= CLI_SHORT_NAME_MAX) {
        memcpy(buf, s, len);
        buf[len] = '\0';
        return buf;
    }
    /* Two thirds of the room for the start, where paths differ most. */
    size_t head = CLI_SHORT_NAME_MAX * 2 / 3, tail = CLI_SHORT_NAME_MAX - head - 3;
    const unsigned char *u = (const unsigned char *)s;
    while (head > 0 && (u[head] & 0xc0) == 0x80) head--;
    size_t from = len - tail;
    while (from < len && (u[from] & 0xc0) == 0x80) from++;
    memcpy(buf, s, head);
    memcpy(buf + head, "...", 3);
    memcpy(buf + head + 3, s + from, len - from);
    snprintf(buf + head + 3 + (len - from), 32, " (%zu bytes)", len);
    return buf;
}

/* The number of bytes at s (of n) that start a valid UTF-8 sequence of
 * *need bytes: *need when the whole sequence is there and valid, less when
 * it is cut or a byte falls outside its range, 0 when s[0] leads none. */
static size_t utf8_prefix(const unsigned char *s, size_t n, size_t *need)
{
    unsigned c = s[0];
    *need = 1;
    if (c < 0x80) return 1;
    if (c < 0xc2 || c > 0xf4) return 0;      /* continuation, overlong lead, too large */
    *need = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
    unsigned lo = 0x80, hi = 0xbf;
    if (c == 0xe0) lo = 0xa0;                /* overlong */
    if (c == 0xed) hi = 0x9f;                /* UTF-16 surrogates */
    if (c == 0xf0) lo = 0x90;                /* overlong */
    if (c == 0xf4) hi = 0x8f;                /* past U+10FFFF */
    size_t k = 1;
    while (k < *need && k < n && s[k] >= lo && s[k] <= hi) {
        k++;
        lo = 0x80;
        hi = 0xbf;
    }
    return k;
}

size_t cli_utf8_len(const unsigned char *s, size_t n)
{
    size_t need, k = utf8_prefix(s, n, &need);
    return k == need ? k : 0;
}

size_t cli_utf8_bad_len(const unsigned char *s, size_t n)
{
    size_t need, k = utf8_prefix(s, n, &need);
    return k && k < need ? k : 1;
}

/* Byte classes for the fast scan: 0 = copy as is, 1 = needs attention
 * (control, quote, backslash, DEL, non-ASCII). */
static unsigned char json_class[256];
static unsigned char text_class[256];
static int classes_ready;

static void init_classes(void)
{
    for (int c = 0; c < 256; c++) {
        json_class[c] = c < 0x20 || c == '"' || c == '\\' || c >= 0x80;
        text_class[c] = c < 0x20 || c == '"' || c == '\\' || c >= 0x7f;
    }
    classes_ready = 1;
}

/* Writes the JSON escape of control or invalid byte c at d; returns the
 * new end. */
static char *json_escape_byte(char *d, unsigned c)
{
    *d++ = '\\';
    switch (c) {
    case '"': *d++ = '"'; break;
    case '\\': *d++ = '\\'; break;
    case '\b': *d++ = 'b'; break;
    case '\f': *d++ = 'f'; break;
    case '\n': *d++ = 'n'; break;
    case '\r': *d++ = 'r'; break;
    case '\t': *d++ = 't'; break;
    default:
        if (c < 0x20) {
            memcpy(d, "u00", 3);
            d[3] = hexdig[c >> 4];
            d[4] = hexdig[c & 15];
        } else {
            memcpy(d, "ufffd", 5);      /* bytes that are not valid UTF-8 */
        }
        d += 5;
    }
    return d;
}

/* Escapes s into d, which has room for 6 bytes per input byte (the longest
 * escape); returns the new end.  The core of cli_out_json_str. */
static char *json_escape(char *d, const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        if (!json_class[c]) {
            *d++ = (char)c;
            i++;
            continue;
        }
        if (c >= 0x80) {
            size_t k = cli_utf8_len(s + i, len - i);
            if (k) {
                memcpy(d, s + i, k);
                d += k;
                i += k;
                continue;
            }
            d = json_escape_byte(d, c);     /* U+FFFD for the maximal subpart */
            i += cli_utf8_bad_len(s + i, len - i);
            continue;
        }
        d = json_escape_byte(d, c);
        i++;
    }
    return d;
}

void cli_out_json_str(cli_out *o, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    char tmp[6 * 256];
    if (!classes_ready) init_classes();
    /* Short strings (tokens, keys, names) are escaped straight into the
     * buffer; long ones piece by piece through a small scratch buffer,
     * never splitting a UTF-8 sequence. */
    if (len <= o->cap / 8) {
        if (o->cap - o->len < 6 * len + 2) cli_out_flush(o);
        char *d = o->buf + o->len;
        *d++ = '"';
        d = json_escape(d, u, len);
        *d++ = '"';
        o->len = (size_t)(d - o->buf);
        return;
    }
    cli_out_putc(o, '"');
    size_t i = 0;
    while (i < len) {
        size_t n = len - i < 252 ? len - i : 252;
        /* extend to the end of a sequence that starts inside the piece */
        while (i + n < len && n < 256 && (u[i + n] & 0xc0) == 0x80) n++;
        char *end = json_escape(tmp, u + i, n);
        cli_out_write(o, tmp, (size_t)(end - tmp));
        i += n;
    }
    cli_out_putc(o, '"');
}

/* How text_escape() treats the two bytes that are not controls: '"' is
 * escaped only in the quoted form, where it would end the string; '\\' in
 * every rendering of data, since the reader must tell a backslash from
 * the start of an escape, but not in messages (TE_MESSAGE), which hold the
 * library's own \xNN escapes of names (gg_quote() turns a '\\' there into
 * \x5c already) and must not show them doubled. */
enum { TE_BARE = 0, TE_QUOTED = 1, TE_MESSAGE = 2 };

/* Appends the escape for byte c to esc; returns its length. */
static size_t text_escape_byte(char *esc, unsigned c, int how)
{
    esc[0] = '\\';
    switch (c) {
    case '\n': esc[1] = 'n'; return 2;
    case '\t': esc[1] = 't'; return 2;
    case '\r': esc[1] = 'r'; return 2;
    case '"': if (how == TE_QUOTED) { esc[1] = '"'; return 2; } break;
    case '\\': if (how != TE_MESSAGE) { esc[1] = '\\'; return 2; } break;
    default:
        if (c < 0x20 || c >= 0x7f) {
            esc[1] = 'x';
            esc[2] = hexdig[c >> 4];
            esc[3] = hexdig[c & 15];
            return 4;
        }
    }
    esc[0] = (char)c;
    return 1;
}

/* Calls emit(ctx, bytes, n) with consecutive pieces of the terminal-safe
 * rendering of s; the common core of cli_out_text_str and cli_text_escape. */
static void text_escape(const char *s, size_t len, int how,
                        void (*emit)(void *, const char *, size_t), void *ctx)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0;
    if (!classes_ready) init_classes();
    while (i < len) {
        unsigned c = u[i];
        if (!text_class[c]) {
            i++;
            continue;
        }
        if (c >= 0x80) {
            size_t k = cli_utf8_len(u + i, len - i);
            /* C1 controls U+0080..U+009F are C2 80..C2 9F: escape them. */
            if (k && !(k == 2 && c == 0xc2 && u[i + 1] < 0xa0)) {
                i += k;
                continue;
            }
            if (k == 2) {       /* a C1 control: both bytes escaped */
                char esc[8];
                emit(ctx, s + run, i - run);
                text_escape_byte(esc, c, how);
                text_escape_byte(esc + 4, u[i + 1], how);
                emit(ctx, esc, 8);
                i += 2;
                run = i;
                continue;
            }
        }
        if ((c == '"' && how != TE_QUOTED) || (c == '\\' && how == TE_MESSAGE)) {
            i++;
            continue;
        }
        char esc[4];
        emit(ctx, s + run, i - run);
        emit(ctx, esc, text_escape_byte(esc, c, how));
        i++;
        run = i;
    }
    emit(ctx, s + run, i - run);
}

static void emit_out(void *ctx, const char *p, size_t n)
{
    cli_out_write(ctx, p, n);
}

void cli_out_text_str(cli_out *o, const char *s, size_t len, int quote)
{
    if (quote) cli_out_putc(o, '"');
    text_escape(s, len, quote ? TE_QUOTED : TE_BARE, emit_out, o);
    if (quote) cli_out_putc(o, '"');
}

struct membuf {
    char *buf;
    size_t cap, len;    /* cap excludes the final NUL */
};

static void emit_mem(void *ctx, const char *p, size_t n)
{
    struct membuf *m = ctx;
    if (n > m->cap - m->len) n = m->cap - m->len;
    memcpy(m->buf + m->len, p, n);
    m->len += n;
}

char *cli_text_escape(char *buf, size_t n, const char *s, size_t len)
{
    if (n == 0) return buf;
    struct membuf m = { buf, n - 1, 0 };
    text_escape(s, len, TE_MESSAGE, emit_mem, &m);
    buf[m.len] = '\0';
    return buf;
}

static void emit_count(void *ctx, const char *p, size_t n)
{
    size_t *cols = ctx;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)p[i] & 0xc0) != 0x80) (*cols)++;   /* count lead bytes */
}

size_t cli_text_width(const char *s, size_t len)
{
    size_t cols = 0;
    text_escape(s, len, TE_BARE, emit_count, &cols);
    return cols;
}
