/*
 * cli.h -- helpers shared by the command-line tools (gguf-dump,
 * gguf-requant, gguf-verify, qwen-run).  Not installed.
 *
 * Diagnostics: every message goes to stderr as "prog: FILE: message" (or
 * "prog: message" when no file is concerned), where prog is the name set
 * with cli_set_prog().
 *
 * Output: a buffered writer (cli_out) that tools use for all of stdout, so
 * that data is written in large blocks and a write failure (a closed pipe
 * with SIGPIPE ignored, a full disk, /dev/full) is detected once, reported
 * once by cli_out_close(), and turns into exit status 2.
 *
 * Escaping: two renderings of byte strings from files, which may hold any
 * bytes.  The JSON rendering is always valid JSON (RFC 8259) and valid UTF-8;
 * the text rendering is safe to show on a terminal (no control characters,
 * no invalid UTF-8 reach it).
 */
#ifndef TOOLS_CLI_H
#define TOOLS_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__)
#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLI_PRINTF(a, b)
#endif

/* Exit statuses shared by all tools. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_NEGATIVE = 1, CLI_EXIT_TROUBLE = 2 };

/* --- program name and diagnostics --------------------------------------- */

/* The program name used in messages; "prog" until cli_set_prog() is called. */
extern const char *cli_prog;

/* Sets the program name used in messages.  `name` must stay valid (a string
 * literal); tools pass their fixed name rather than argv[0] so messages do
 * not depend on how the tool was invoked. */
void cli_set_prog(const char *name);

/* Prints "prog: FILE: message\n" to stderr (or "prog: message\n" when file
 * is NULL).  File names are printed escaped as by cli_text_escape() so that
 * a hostile name cannot send control characters to the terminal.  Flushes
 * cli_stdout first, so that data and diagnostics keep their order when both
 * go to the same terminal. */
void cli_error(const char *file, const char *fmt, ...) CLI_PRINTF(2, 3);

/* Prints "prog: " followed by `msg` and a newline to stderr.  For library
 * messages (gguf_error.message), which already start with the file name.
 * Control characters in msg are escaped.  Flushes cli_stdout first. */
void cli_message(const char *msg);

/* Reports a usage error: "prog: message" and "Try 'prog --help' for more
 * information." on stderr.  Returns CLI_EXIT_TROUBLE for the caller to
 * return from main. */
int cli_usage_error(const char *fmt, ...) CLI_PRINTF(1, 2);

/* Writes the version text of the tool to cli_stdout:
 * "prog (gguf-tools) X.Y.Z\nlibgguf X.Y.Z\n". */
void cli_print_version(void);

/* Reports what getopt_long() returned as `c` for an option it could not
 * take (the tool's optstring starts with ':' and opterr is 0): for ':' a
 * missing argument ("option requires an argument -- 'x'" or "option
 * '--name' requires an argument"), for anything else an unknown option
 * ("invalid option -- 'x'" or "unrecognized option '--name'"), each as
 * cli_usage_error() does.  Reads getopt's optopt and optind.  Returns
 * CLI_EXIT_TROUBLE. */
int cli_getopt_error(int c, char **argv);

/* The shared tail of a tool's getopt_long() switch, for the options every
 * tool has: 'h' calls usage() (which writes the help to cli_stdout) and
 * 'V' writes the version, each then closing cli_stdout; any other `c` is
 * passed to cli_getopt_error().  Returns the exit status for main to
 * return at once: that of cli_out_close() after -h or -V, else
 * CLI_EXIT_TROUBLE. */
int cli_getopt_default(int c, char **argv, void (*usage)(void));

/* 1 when file descriptor fd is a terminal, else 0. */
int cli_isatty(int fd);

/* Matches `s` (len bytes, need not end in NUL) against the shell glob
 * `pattern` with fnmatch(3) and no flags: '*' and '?' match any character,
 * '.' and '/' included; [...] classes work.  Returns 1 on a match, 0
 * otherwise (also when memory for a copy of a long s cannot be had).  A NUL
 * inside s ends the string as fnmatch sees it. */
int cli_glob_match(const char *pattern, const char *s, size_t len);

/* --- buffered output ------------------------------------------------------ */

/* A buffered writer on a file descriptor.  After the first failed write,
 * `err` holds its errno and all later output is discarded, so that callers
 * need not check each call; cli_out_close() reports the failure. */
typedef struct cli_out {
    int fd;
    char *buf;
    size_t cap;
    size_t len;
    int err;            /* errno of the first failed write, or 0 */
} cli_out;

/* The writer for standard output (fd 1) with a 1 MiB static buffer. */
extern cli_out cli_stdout;

/* Writes the buffered bytes out (retrying short writes and EINTR).
 * Returns 0, or -1 when the writer has failed (now or before). */
int cli_out_flush(cli_out *o);

/* Flushes and checks the writer; for stdout at the end of main.  When a
 * write failed, prints "prog: write error: REASON" and returns
 * CLI_EXIT_TROUBLE; otherwise returns CLI_EXIT_OK.  The descriptor is closed
 * so that errors reported only on close (e.g. NFS) are caught too. */
int cli_out_close(cli_out *o);

/* 1 when a write has failed: callers may stop early, output is lost. */
static inline int cli_out_failed(const cli_out *o) { return o->err != 0; }

/* Appends n bytes. */
void cli_out_write(cli_out *o, const void *p, size_t n);

/* Appends one byte. */
static inline void cli_out_putc(cli_out *o, char c)
{
    if (o->len == o->cap) cli_out_flush(o);
    o->buf[o->len++] = c;
}

/* Appends a NUL-terminated string. */
static inline void cli_out_str(cli_out *o, const char *s)
{
    cli_out_write(o, s, strlen(s));
}

/* Appends n spaces (nothing when n <= 0). */
void cli_out_pad(cli_out *o, long n);

/* Appends formatted text (at most 4 KiB per call; longer output is cut). */
void cli_out_printf(cli_out *o, const char *fmt, ...) CLI_PRINTF(2, 3);

/* Appends an integer in decimal, exactly. */
void cli_out_u64(cli_out *o, uint64_t v);
void cli_out_i64(cli_out *o, int64_t v);

/* Appends v right-aligned in a field of `width` columns. */
void cli_out_u64_w(cli_out *o, uint64_t v, int width);

/* Formats a float/double into buf (at least 32 bytes) with the fewest
 * significant digits (up to 9 for float, 17 for double) that read back as
 * the same value with strtof/strtod, in the C locale ("1e-06", "0.5",
 * "151936").  Non-finite values become "nan", "inf" or "-inf".  Returns
 * the length. */
int cli_fmt_f32(char *buf, float v);
int cli_fmt_f64(char *buf, double v);

/* Appends a float/double as cli_fmt_*.  With json != 0, non-finite values
 * are written as the JSON strings "nan", "inf", "-inf" (JSON has no number
 * for them); finite values are JSON numbers either way. */
void cli_out_f32(cli_out *o, float v, int json);
void cli_out_f64(cli_out *o, double v, int json);

/* Appends s (len bytes, any content) as a JSON string with its quotes:
 * '"' and '\\' are escaped; control characters (below 0x20) become \b \f
 * \n \r \t or \u00XX; valid UTF-8 is copied as is; every byte that is not
 * part of a valid UTF-8 sequence (stray continuation bytes, truncated or
 * overlong sequences, surrogates, code points past U+10FFFF) becomes
 * \ufffd, the replacement character.  The result is valid JSON and UTF-8
 * for any input. */
void cli_out_json_str(cli_out *o, const char *s, size_t len);

/* Appends s (len bytes, any content) escaped for a terminal: \n \t \r for
 * those controls, \xNN for every other control byte (0x00-0x1f, 0x7f), for
 * each byte of a C1 control (U+0080-U+009F) and for each byte that is not
 * part of valid UTF-8, \\ for a backslash (so that a backslash in the data
 * cannot be read as the start of an escape); valid printable UTF-8 is
 * copied.  With quote != 0 the result is enclosed in double quotes and '"'
 * is escaped as \" as well; with quote = 0 (names, -k on a terminal) '"'
 * is copied. */
void cli_out_text_str(cli_out *o, const char *s, size_t len, int quote);

/* Escapes s as cli_out_text_str(quote = 0) does, except that a backslash
 * is copied, into buf of size n (always NUL terminated; cut short when too
 * long).  Returns buf.  For messages: they carry libgguf's own \xNN escapes
 * of names (a backslash in a name is \x5c there), which must not be
 * doubled. */
char *cli_text_escape(char *buf, size_t n, const char *s, size_t len);

/* Longest name cli_shorten() leaves as it is. */
#define CLI_SHORT_NAME_MAX 160

/* Writes into buf (room for CLI_SHORT_NAME_MAX + 32 bytes) a name for
 * messages: s itself when its len bytes are at most CLI_SHORT_NAME_MAX,
 * else its start, "...", its end and its length ("aaaa...aaaa (6000
 * bytes)"), cut between UTF-8 characters, so that a path of any length
 * leaves room for the rest of a message.  NUL-terminated (a NUL in s ends
 * the copy early); not escaped.  Returns buf. */
char *cli_shorten(char *buf, const char *s, size_t len);

/* Length in bytes of the valid UTF-8 sequence that starts at s[0] (of at
 * most n bytes available): 1 for ASCII, 2-4 for a valid multi-byte
 * sequence, 0 when s[0] does not start a valid sequence. */
size_t cli_utf8_len(const unsigned char *s, size_t n);

/* Where cli_utf8_len() is 0: the length (1 to 3) of the invalid bytes at s
 * that make one U+FFFD, the longest start of a valid sequence or else one
 * byte (Unicode's "maximal subpart", as Python's and browsers' decoders
 * replace them, and as qwen-run's text output does). */
size_t cli_utf8_bad_len(const unsigned char *s, size_t n);

/* Number of columns a terminal would use for the cli_out_text_str()
 * rendering of s (quote = 0), counting each code point as one column.
 * For aligning tables. */
size_t cli_text_width(const char *s, size_t len);

#endif /* TOOLS_CLI_H */
