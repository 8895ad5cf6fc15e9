/* run-chat.c -- qwen-run's interactive chat; see run-chat.h. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_LIBEDIT
#include <editline/readline.h>
#endif

#include "infer/chat.h"
#include "tools/run-chat.h"

#define PROMPT "> "
#define PROMPT_MORE "... "

struct chat {
    const struct chat_env *e;
    qwen_ids hist;              /* the conversation's ids so far */
    qwen_ids reply;             /* the ids of the reply under way */
    char *log;                  /* the conversation as text, for /save */
    size_t log_len, log_cap;
    int given;                  /* next() gave the turn */
    int log_failed;             /* out of memory for the transcript */
    enum qwen_stop stop;
    int editline;               /* lines come through libedit */
};

/* Appends n bytes to the transcript (quietly dropped when out of memory:
 * /save says so). */
static void log_add(struct chat *c, const char *p, size_t n)
{
    if (n == 0) return;
    if (c->log_cap - c->log_len < n) {
        size_t cap = c->log_cap ? c->log_cap : 4096;
        while (cap - c->log_len < n) cap *= 2;
        char *t = realloc(c->log, cap);
        if (!t) {
            c->log_failed = 1;
            return;
        }
        c->log = t;
        c->log_cap = cap;
    }
    memcpy(c->log + c->log_len, p, n);
    c->log_len += n;
}

static int c_next(void *user, qwen_ids *ids)
{
    struct chat *c = user;
    if (c->given) return 0;
    c->given = 1;
    for (size_t i = 0; i < c->hist.n; i++)
        if (qwen_ids_push(ids, c->hist.v[i])) return -1;
    return 1;
}

static int c_text(void *user, uint64_t k, const char *p, size_t n)
{
    (void)k;
    struct chat *c = user;
    cli_out_write(c->e->out, p, n);
    cli_out_flush(c->e->out);
    log_add(c, p, n);
    return cli_out_failed(c->e->out) ? -1 : 0;
}

static void c_done(void *user, uint64_t k, const qwen_gen_reply *r)
{
    (void)k;
    ((struct chat *)user)->stop = r->stop;
}

static int c_cancel(void *user)
{
    struct chat *c = user;
    return *c->e->interrupted || cli_out_failed(c->e->out);
}

static int c_token(void *user, uint64_t k, const qwen_gen_token *t)
{
    (void)k;
    struct chat *c = user;
    return qwen_ids_push(&c->reply, t->id) ? -1 : 0;
}

/* One line from standard input without its line end (malloc'ed), or NULL
 * at its end; *intr is 1 when SIGINT came while it was read (the line is
 * then dropped). */
static char *read_line(struct chat *c, const char *prompt, int *intr)
{
    *intr = 0;
#ifdef HAVE_LIBEDIT
    if (c->editline) {
        char *l = readline(prompt);
        if (*c->e->interrupted) {
            *c->e->interrupted = 0;
            *intr = 1;
            free(l);
            return NULL;
        }
        return l;
    }
#endif
    if (isatty(0)) {
        fputs(prompt, stdout);
        fflush(stdout);
    }
    char *line = NULL;
    size_t cap = 0;
    errno = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (n < 0) {
        free(line);
        if (errno == EINTR || *c->e->interrupted) {
            *c->e->interrupted = 0;
            clearerr(stdin);
            *intr = 1;
        }
        return NULL;
    }
    if (n > 0 && line[n - 1] == '\n') line[--n] = '\0';
    return line;
}

/* A turn's text: a line, and the lines after it while one ends in a
 * backslash (which is dropped; the lines are joined with line breaks).
 * NULL at the end of input; *intr as for read_line. */
static char *read_turn(struct chat *c, int *intr)
{
    char *text = read_line(c, PROMPT, intr);
    while (text) {
        size_t n = strlen(text);
        if (n == 0 || text[n - 1] != '\\') break;
        char *more = read_line(c, PROMPT_MORE, intr);
        if (!more) {
            text[n - 1] = '\0';
            if (*intr) {
                free(text);
                return NULL;
            }
            break;
        }
        size_t m = strlen(more);
        char *t = realloc(text, n + m + 1);
        if (!t) {
            free(more);
            break;
        }
        text = t;
        text[n - 1] = '\n';
        memcpy(text + n, more, m + 1);
        free(more);
    }
#ifdef HAVE_LIBEDIT
    if (text && c->editline && *text) add_history(text);
#endif
    return text;
}

/* /save FILE: the transcript, written whole or not at all (a temporary
 * file beside FILE, renamed over it). */
static void save(struct chat *c, const char *path)
{
    if (c->log_failed) {
        cli_error(path, "the conversation could not all be kept (out of memory): not saved");
        return;
    }
    size_t n = strlen(path);
    char *tmp = malloc(n + 8);
    if (!tmp) {
        cli_error(path, "out of memory");
        return;
    }
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".XXXXXX", 8);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        cli_error(path, "%s", strerror(errno));
        free(tmp);
        return;
    }
    const char *p = c->log;
    size_t left = c->log_len;
    int ok = 1;
    while (left && ok) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        ok = w > 0;
        if (ok) {
            p += w;
            left -= (size_t)w;
        }
    }
    ok = ok && fsync(fd) == 0;
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        e = errno;
    }
    if (!ok) {
        unlink(tmp);
        cli_error(path, "%s", strerror(e));
    } else {
        fprintf(stderr, "%s: the conversation is in %s\n", cli_prog, path);
    }
    free(tmp);
}

/* Forgets the conversation. */
static void clear(struct chat *c)
{
    c->hist.n = 0;
    c->log_len = 0;
    c->log_failed = 0;
}

/* One turn: the text to the model, its reply printed and kept.  Returns
 * 0, or an exit status after the message. */
static int turn(struct chat *c, const char *text)
{
    const struct chat_env *e = c->e;
    gguf_error err = {0};
    const size_t n0 = c->hist.n;
    const unsigned flags = e->chat_flags | (n0 ? QWEN_CHAT_TURN : 0);
    if (qwen_chat_tokenize(e->tok, e->system, e->system ? strlen(e->system) : 0, text,
                           strlen(text), flags, &c->hist, &err) != GGUF_OK) {
        cli_error(e->model, "%s", err.message);
        return CLI_EXIT_TROUBLE;
    }
    if (c->hist.n >= e->n_ctx) {
        cli_error(NULL, "this turn does not fit the context of %u tokens with the conversation so "
                  "far (%zu tokens): /clear starts over", (unsigned)e->n_ctx, n0);
        c->hist.n = n0;
        return 0;
    }
    log_add(c, "## user\n\n", 9);
    log_add(c, text, strlen(text));
    log_add(c, "\n\n## assistant\n\n", 16);
    c->reply.n = 0;
    c->given = 0;
    c->stop = QWEN_STOP_EOS;
    qwen_gen_io io = {c_next, c_text, c_done, c_cancel, c, c_token};
    int st = qwen_generate(e->gen, &io, &err);
    cli_out_putc(e->out, '\n');
    cli_out_flush(e->out);
    log_add(c, "\n\n", 2);
    if (st == GGUF_E_IO) return cli_out_failed(e->out) ? CLI_EXIT_TROUBLE : 0;
    if (st) {
        cli_message(err.message);
        return CLI_EXIT_TROUBLE;
    }
    /* The reply's ids, closed by the end of its turn, join the
     * conversation: the next turn's prompt starts with all of it, which
     * the sequence holds but for the last tokens. */
    const int32_t end = qwen_tokenizer_find(e->tok, "<|im_end|>", 10);
    int ok = 1;
    for (size_t i = 0; i < c->reply.n && ok; i++)
        if (c->reply.v[i] != end) ok = !qwen_ids_push(&c->hist, c->reply.v[i]);
    if (ok) ok = !qwen_ids_push(&c->hist, end);
    if (ok) ok = qwen_tokenize(e->tok, "\n", 1, 0, &c->hist, &err) == GGUF_OK;
    if (!ok) {
        cli_error(NULL, "out of memory");
        return CLI_EXIT_TROUBLE;
    }
    if (c->stop == QWEN_STOP_CANCELLED) {
        *e->interrupted = 0;
        fprintf(stderr, "%s: stopped\n", cli_prog);
    } else if (c->stop == QWEN_STOP_CONTEXT) {
        cli_error(NULL, "the conversation filled the context of %u tokens: /clear starts over "
                  "(or a larger -c)", (unsigned)e->n_ctx);
    }
    return 0;
}

int chat_run(const struct chat_env *e)
{
    struct chat c;
    memset(&c, 0, sizeof c);
    c.e = e;
    const int tty = isatty(0);
#ifdef HAVE_LIBEDIT
    c.editline = tty;
    rl_catch_signals = 0;   /* SIGINT is qwen-run's: it stops a reply */
#endif
    if (tty)
        fprintf(stderr, "%s: a chat with %s: type a message and Enter; a line ending in \\ goes "
                "on; /clear starts over, /save FILE keeps the conversation, /exit or Ctrl-D "
                "ends; Ctrl-C stops a reply\n", cli_prog, e->model);
    int status = 0;
    for (;;) {
        int intr;
        char *text = read_turn(&c, &intr);
        if (!text) {
            if (intr) {
                if (tty) fputc('\n', stdout);
                continue;
            }
            if (tty) fputc('\n', stdout);
            break;
        }
        const char *t = text;
        while (*t == ' ' || *t == '\t') t++;
        if (!*t) {
            free(text);
            continue;
        }
        if (*t == '/') {
            if (strcmp(t, "/exit") == 0 || strcmp(t, "/quit") == 0) {
                free(text);
                break;
            } else if (strcmp(t, "/clear") == 0) {
                clear(&c);
                fprintf(stderr, "%s: a new conversation\n", cli_prog);
            } else if (strncmp(t, "/save", 5) == 0 && (t[5] == ' ' || t[5] == '\0')) {
                const char *path = t + 5;
                while (*path == ' ') path++;
                if (*path) save(&c, path);
                else cli_error(NULL, "/save FILE: which file?");
            } else if (strcmp(t, "/help") == 0) {
                fprintf(stderr, "/clear  start over\n/save FILE  write the conversation to FILE\n"
                                "/exit, /quit  end (or Ctrl-D)\n/help  this\n"
                                "a line ending in \\ goes on on the next; Ctrl-C stops a reply; "
                                "// at the start sends a line that begins with /\n");
            } else if (t[1] == '/') {
                status = turn(&c, t + 1);
            } else {
                cli_error(NULL, "%s: not a command (/help lists them; // sends a line that "
                          "begins with /)", t);
            }
            free(text);
            if (status) break;
            continue;
        }
        status = turn(&c, text);
        free(text);
        if (status) break;
    }
    qwen_ids_free(&c.hist);
    qwen_ids_free(&c.reply);
    free(c.log);
    return status;
}
