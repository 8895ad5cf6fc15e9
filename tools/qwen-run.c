/*
 * qwen-run -- Qwen2.5 inference on the CPU: reads a prompt, streams the
 * model's reply to standard output.  See qwen-run(1).
 *
 * The model, tokenizer, chat template, sampler and forward pass live in
 * infer/; this file parses options, reads input, runs the loop and prints.
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include "gguf/gguf.h"
#include "infer/chat.h"
#include "infer/forward.h"
#include "infer/model.h"
#include "infer/sampler.h"
#include "infer/tokenizer.h"
#include "tools/cli.h"
#include "tools/guard.h"

/* The default context: enough for a long chat, small enough for little memory. */
#define DEFAULT_CTX 4096u
/* Tokens per forward step of the prompt. */
#define MAX_BATCH 512u
/* Exit status after SIGINT (128 + the signal number, as shells report it). */
#define EXIT_INTERRUPTED 130

enum mode { MODE_GENERATE, MODE_TOKENIZE, MODE_LOGITS };

struct options {
    const char *model;          /* -m */
    const char *prompt;         /* -p, or NULL */
    const char *file;           /* -f, or NULL */
    const char *system;         /* --system, or NULL for the default */
    enum mode mode;
    long n_logits;              /* --logits N */
    long n_predict;             /* -n; -1: until an end token or the context is full */
    long n_ctx;                 /* -c; 0: default */
    long threads;               /* -t, 0: the default */
    int raw, special, each_line, json, stats, print_ids, seed_set, ignore_eos;
    qwen_sampler_params sp;
};

static struct options opt;
static cli_out *out = &cli_stdout;
static volatile sig_atomic_t interrupted;

/* The loaded model and everything a conversation needs. */
struct run {
    qwen_model *model;
    qwen_tokenizer *tok;
    qwen_state *state;
    qwen_sampler *sampler;
    uint32_t n_ctx;
    int32_t stop[3];            /* end-of-generation ids, -1 when absent */
    float *masked;              /* --ignore-eos: the logits with the stop ids at -inf */
    /* totals for --stats */
    double load_s, prompt_s, gen_s;
    uint64_t prompt_tokens, gen_tokens;
};

/* One conversation's result. */
struct reply {
    char *text;                 /* the reply's bytes (for --json and --each-line) */
    size_t len, cap;
    uint64_t n_prompt, n_gen;
    double prompt_s, gen_s;
};

static void usage(void)
{
    cli_out_printf(out,
        "Usage: %s -m MODEL [OPTION]... [-p PROMPT | -f FILE]\n"
        "Run a Qwen2.5 model (GGUF, qwen2 architecture) on the CPU: the prompt\n"
        "(from -p, -f or standard input) is wrapped in the ChatML chat template\n"
        "and the model's reply is written to standard output as it is generated.\n"
        "Generation stops at <|im_end|> or <|endoftext|>, after -n tokens, or when\n"
        "the context is full.\n"
        "\n"
        "Input:\n"
        "  -m, --model=MODEL       the GGUF model file (required): a regular,\n"
        "                          uncompressed file, as it is memory-mapped (not a\n"
        "                          pipe, not gzip); - when standard input is one\n"
        "  -p, --prompt=TEXT       the prompt\n"
        "  -f, --file=FILE         read the prompt from FILE, bytes exactly as they are\n"
        "                          (standard input when neither -p nor -f is given;\n"
        "                          one final newline of standard input is dropped)\n"
        "      --system=TEXT       the system prompt (default: Qwen2.5's own)\n"
        "      --raw               no chat template: feed the prompt as it is\n"
        "      --special           recognise special-token text such as <|im_start|>\n"
        "                          in the prompt (the template's own always are)\n"
        "      --each-line         each line of standard input is its own conversation;\n"
        "                          one reply per line, with \\ and line breaks escaped\n"
        "                          as \\\\, \\n and \\r\n"
        "      --json              print one JSON object per conversation: prompt,\n"
        "                          reply, token counts, timings\n"
        "\n"
        "Generation:\n"
        "  -n, --n-predict=N       generate at most N tokens (default: no limit)\n"
        "  -c, --ctx-size=N        context size in tokens (default: %u or the model's,\n"
        "                          if smaller)\n"
        "  -t, --threads=N         threads of the forward pass (default: one per CPU,\n"
        "                          or OMP_NUM_THREADS)\n"
        "      --temp=T            temperature (default 0.8); 0: greedy, deterministic\n"
        "      --top-k=K           keep the K most likely tokens (default 40; 0: all)\n"
        "      --top-p=P           keep the most likely tokens up to mass P (default 0.95)\n"
        "      --min-p=P           drop tokens below P times the most likely (default 0.05)\n"
        "      --repeat-penalty=R  penalise the last 64 tokens (default 1.0: off)\n"
        "  -s, --seed=N            seed of the sampler (default: from the clock)\n"
        "\n"
        "Output:\n"
        "      --stats             print load time and prompt and generation speed on\n"
        "                          standard error at the end\n"
        "      --tokenize          print the input's token ids (template applied unless\n"
        "                          --raw) on one line and exit\n"
        "      --logits=N          print the N highest next-token logits after the\n"
        "                          prompt, one 'ID LOGIT' per line, and exit\n"
        "      --print-ids         print the generated token ids (the end token too)\n"
        "                          instead of the text\n"
        "      --ignore-eos        never choose an end token: generate until -n or the\n"
        "                          context is full (for benchmarks)\n"
        "  -h, --help              show this help and exit\n"
        "  -V, --version           show the version and exit\n"
        "\n"
        "Input is read only as far as it could fit the context (-c): past the\n"
        "context's tokens times the longest token's bytes it is refused at once.\n"
        "Logits that are NaN or infinite (damaged weights) stop the run.\n"
        "\n"
        "Exit status: 0 success, 2 trouble (usage, a file that cannot be read or\n"
        "shrinks while it is read, a model that cannot be used, a prompt longer\n"
        "than the context, NaN or infinite logits), 130 when interrupted by SIGINT.\n",
        cli_prog, DEFAULT_CTX);
}

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

enum {
    OPT_SYSTEM = 256, OPT_RAW, OPT_SPECIAL, OPT_EACH_LINE, OPT_JSON, OPT_TEMP, OPT_TOP_K,
    OPT_TOP_P, OPT_MIN_P, OPT_REPEAT_PENALTY, OPT_STATS, OPT_TOKENIZE, OPT_LOGITS, OPT_PRINT_IDS,
    OPT_IGNORE_EOS
};

static const struct option long_options[] = {
    { "model", required_argument, NULL, 'm' },
    { "prompt", required_argument, NULL, 'p' },
    { "file", required_argument, NULL, 'f' },
    { "system", required_argument, NULL, OPT_SYSTEM },
    { "raw", no_argument, NULL, OPT_RAW },
    { "special", no_argument, NULL, OPT_SPECIAL },
    { "each-line", no_argument, NULL, OPT_EACH_LINE },
    { "json", no_argument, NULL, OPT_JSON },
    { "n-predict", required_argument, NULL, 'n' },
    { "ctx-size", required_argument, NULL, 'c' },
    { "threads", required_argument, NULL, 't' },
    { "temp", required_argument, NULL, OPT_TEMP },
    { "top-k", required_argument, NULL, OPT_TOP_K },
    { "top-p", required_argument, NULL, OPT_TOP_P },
    { "min-p", required_argument, NULL, OPT_MIN_P },
    { "repeat-penalty", required_argument, NULL, OPT_REPEAT_PENALTY },
    { "seed", required_argument, NULL, 's' },
    { "stats", no_argument, NULL, OPT_STATS },
    { "tokenize", no_argument, NULL, OPT_TOKENIZE },
    { "logits", required_argument, NULL, OPT_LOGITS },
    { "print-ids", no_argument, NULL, OPT_PRINT_IDS },
    { "ignore-eos", no_argument, NULL, OPT_IGNORE_EOS },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 }
};

/* Parses a whole decimal integer in [lo, hi] into *v.  Returns 0, or -1. */
static int parse_long(const char *s, long lo, long hi, long *v)
{
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (end == s || *end || errno || x < lo || x > hi) return -1;
    *v = x;
    return 0;
}

/* Parses a finite float in [lo, hi] into *v.  Returns 0, or -1. */
static int parse_float(const char *s, float lo, float hi, float *v)
{
    char *end;
    errno = 0;
    float x = strtof(s, &end);
    if (end == s || *end || errno || !isfinite(x) || x < lo || x > hi) return -1;
    *v = x;
    return 0;
}

/* Parses the command line into opt.  Returns -1 to go on, or the exit
 * status for main to return at once. */
static int parse_options(int argc, char **argv)
{
    int c;
    long v;
    opterr = 0;
    opt.n_predict = -1;
    opt.sp = qwen_sampler_defaults();
    while ((c = getopt_long(argc, argv, ":m:p:f:n:c:t:s:hV", long_options, NULL)) != -1) {
        switch (c) {
        case 'm': opt.model = optarg; break;
        case 'p': opt.prompt = optarg; break;
        case 'f': opt.file = optarg; break;
        case OPT_SYSTEM: opt.system = optarg; break;
        case OPT_RAW: opt.raw = 1; break;
        case OPT_SPECIAL: opt.special = 1; break;
        case OPT_EACH_LINE: opt.each_line = 1; break;
        case OPT_JSON: opt.json = 1; break;
        case 'n':
            if (parse_long(optarg, -1, INT32_MAX, &opt.n_predict))
                return cli_usage_error("-n: not a token count: '%s'", optarg);
            break;
        case 'c':
            if (parse_long(optarg, 1, (long)QWEN_MAX_CTX, &opt.n_ctx))
                return cli_usage_error("-c: not a context size: '%s'", optarg);
            break;
        case 't':
            if (parse_long(optarg, 1, QWEN_MAX_THREADS, &opt.threads))
                return cli_usage_error("-t: not a thread count: '%s'", optarg);
            break;
        case OPT_TEMP:
            if (parse_float(optarg, 0.0f, 1e6f, &opt.sp.temp))
                return cli_usage_error("--temp: not a temperature (>= 0): '%s'", optarg);
            break;
        case OPT_TOP_K:
            if (parse_long(optarg, 0, INT32_MAX, &v))
                return cli_usage_error("--top-k: not a count: '%s'", optarg);
            opt.sp.top_k = (int32_t)v;
            break;
        case OPT_TOP_P:
            if (parse_float(optarg, 0.0f, 1.0f, &opt.sp.top_p))
                return cli_usage_error("--top-p: not a probability: '%s'", optarg);
            break;
        case OPT_MIN_P:
            if (parse_float(optarg, 0.0f, 1.0f, &opt.sp.min_p))
                return cli_usage_error("--min-p: not a probability: '%s'", optarg);
            break;
        case OPT_REPEAT_PENALTY:
            if (parse_float(optarg, 1e-6f, 1e6f, &opt.sp.repeat_penalty))
                return cli_usage_error("--repeat-penalty: not a positive factor: '%s'", optarg);
            break;
        case 's': {
            char *end;
            errno = 0;
            unsigned long long x = strtoull(optarg, &end, 10);
            if (end == optarg || *end || errno || optarg[0] == '-')
                return cli_usage_error("--seed: not a seed: '%s'", optarg);
            opt.sp.seed = x;
            opt.seed_set = 1;
            break;
        }
        case OPT_STATS: opt.stats = 1; break;
        case OPT_TOKENIZE: opt.mode = MODE_TOKENIZE; break;
        case OPT_LOGITS:
            if (parse_long(optarg, 1, INT32_MAX, &opt.n_logits))
                return cli_usage_error("--logits: not a count: '%s'", optarg);
            opt.mode = MODE_LOGITS;
            break;
        case OPT_PRINT_IDS: opt.print_ids = 1; break;
        case OPT_IGNORE_EOS: opt.ignore_eos = 1; break;
        default:
            return cli_getopt_default(c, argv, usage);
        }
    }
    if (optind < argc) return cli_usage_error("extra operand '%s'", argv[optind]);
    if (!opt.model) return cli_usage_error("no model given (-m MODEL)");
    if (opt.prompt && opt.file) return cli_usage_error("-p and -f cannot both be given");
    if (opt.each_line && (opt.prompt || opt.file))
        return cli_usage_error("--each-line reads standard input; -p and -f cannot be given");
    if (opt.each_line && opt.mode != MODE_GENERATE)
        return cli_usage_error("--each-line cannot be combined with --tokenize or --logits");
    /* -m - maps standard input, which must then be a regular file; it
     * cannot also carry the prompt. */
    if (strcmp(opt.model, "-") == 0 &&
        (opt.each_line || (!opt.prompt && (!opt.file || strcmp(opt.file, "-") == 0))))
        return cli_usage_error("-m -: standard input holds the model; give the prompt "
                               "with -p or -f FILE");
    if (!opt.seed_set) opt.sp.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Input                                                                     */

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Reads all of fd into a new buffer (*buf, *len; NUL-terminated), but
 * stops once more than max bytes have come: a prompt that long cannot fit
 * the context, and an endless input (/dev/zero, `yes`) must not take all
 * memory first.  Returns 0; -1 with errno set; -2 when the input is longer
 * than max (nothing stored). */
static int read_all(int fd, size_t max, char **buf, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    if (!b) return -1;
    for (;;) {
        if (n > max) {
            free(b);
            return -2;
        }
        if (cap - n < 2) {
            char *nb = cap > SIZE_MAX / 2 ? NULL : realloc(b, cap * 2);
            if (!nb) {
                free(b);
                errno = ENOMEM;
                return -1;
            }
            b = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, b + n, cap - n - 1);
        if (r < 0 && errno == EINTR && !interrupted) continue;
        if (r < 0) {
            int e = errno;
            free(b);
            errno = e;
            return -1;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    b[n] = 0;
    *buf = b;
    *len = n;
    return 0;
}

/* Reads one line of `in` into *buf (capacity *cap, grown as needed) without
 * its line feed, storing its length in *len; a line longer than max bytes
 * is not read to its end.  Returns 1 for a line, 0 at the end of input, -1
 * for a read error (errno set) or out of memory, -2 for a line longer than
 * max. */
static int read_line(FILE *in, size_t max, char **buf, size_t *cap, size_t *len)
{
    size_t n = 0;
    int ch = EOF;
    while ((ch = getc_unlocked(in)) != EOF && ch != '\n') {
        if (n >= max) return -2;
        if (n + 1 >= *cap) {
            size_t nc = *cap ? *cap * 2 : 256;
            char *nb = nc < *cap ? NULL : realloc(*buf, nc);
            if (!nb) {
                errno = ENOMEM;
                return -1;
            }
            *buf = nb;
            *cap = nc;
        }
        (*buf)[n++] = (char)ch;
    }
    if (ch == EOF && ferror(in)) return -1;
    if (ch == EOF && n == 0) return 0;
    if (!*buf && !(*buf = malloc(*cap = 1))) {
        errno = ENOMEM;
        return -1;
    }
    (*buf)[n] = 0;
    *len = n;
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */

/* Appends n bytes to the reply buffer.  Returns 0, or -1 out of memory. */
static int reply_add(struct reply *r, const char *p, size_t n)
{
    if (r->cap - r->len < n) {
        size_t cap = r->cap ? r->cap : 256;
        while (cap - r->len < n) cap *= 2;
        char *t = realloc(r->text, cap);
        if (!t) return -1;
        r->text = t;
        r->cap = cap;
    }
    memcpy(r->text + r->len, p, n);
    r->len += n;
    return 0;
}

/* Writes s (n bytes) with \, line feed and carriage return escaped. */
static void put_line_escaped(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '\\': cli_out_str(out, "\\\\"); break;
        case '\n': cli_out_str(out, "\\n"); break;
        case '\r': cli_out_str(out, "\\r"); break;
        default: cli_out_putc(out, s[i]);
        }
    }
}

/* Passes the decoded bytes of the reply on: to the reply buffer for --json,
 * else to stdout (escaped with --each-line), flushed so that the reader sees
 * each token as it comes.  Returns 0, or -1 out of memory. */
static int emit(struct reply *r, const char *p, size_t n)
{
    if (n == 0) return 0;
    if (opt.json) return reply_add(r, p, n);
    if (opt.each_line)
        put_line_escaped(p, n);
    else
        cli_out_write(out, p, n);
    cli_out_flush(out);
    return 0;
}

/* The ids and logits of the n_logits highest logits, highest first, lower
 * id first among equal values. */
struct scored {
    int32_t id;
    float logit;
};

static int scored_cmp(const void *a, const void *b)
{
    const struct scored *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Prints the N highest of the n logits as "ID LOGIT" lines.  Returns 0, or
 * -1 out of memory. */
static int print_top_logits(const float *logits, int32_t n, long top)
{
    struct scored *s = malloc(sizeof *s * (size_t)n);
    if (!s) return -1;
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (!isnan(logits[i])) s[m++] = (struct scored){i, logits[i]};
    qsort(s, (size_t)m, sizeof *s, scored_cmp);
    for (int32_t i = 0; i < m && i < top; i++) {
        cli_out_i64(out, s[i].id);
        cli_out_putc(out, ' ');
        cli_out_f32(out, s[i].logit, 0);
        cli_out_putc(out, '\n');
    }
    free(s);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Running                                                                   */

static int is_stop(const struct run *R, int32_t id)
{
    for (int i = 0; i < 3; i++)
        if (R->stop[i] >= 0 && R->stop[i] == id) return 1;
    return 0;
}

/* Loads model, tokenizer, state and sampler.  Returns 0, or an exit status
 * after printing the error. */
static int load(struct run *R)
{
    gguf_error err = {0};
    double t0 = now();
    guard_input_begin(opt.model, NULL);
    int rc = qwen_model_open(&R->model, opt.model, &err);
    guard_input_end(rc == GGUF_OK ? R->model->file : NULL);
    if (rc != GGUF_OK) {
        cli_message(err.message);
        return CLI_EXIT_TROUBLE;
    }
    if (qwen_tokenizer_load(&R->tok, R->model->file, &err) != GGUF_OK) {
        cli_message(err.message);
        return CLI_EXIT_TROUBLE;
    }
    const qwen_config *c = &R->model->config;
    uint32_t n_ctx = opt.n_ctx ? (uint32_t)opt.n_ctx
                               : (c->n_ctx_train < DEFAULT_CTX ? c->n_ctx_train : DEFAULT_CTX);
    if (n_ctx > c->n_ctx_train) {
        cli_error(opt.model, "context size %" PRIu32 " exceeds the model's %" PRIu32, n_ctx,
                  c->n_ctx_train);
        return CLI_EXIT_TROUBLE;
    }
    R->n_ctx = n_ctx;
    if (qwen_state_new(&R->state, R->model, n_ctx, n_ctx < MAX_BATCH ? n_ctx : MAX_BATCH, &err) !=
        GGUF_OK) {
        cli_message(err.message);
        return CLI_EXIT_TROUBLE;
    }
    if (opt.threads && qwen_state_set_threads(R->state, (int)opt.threads, &err) != GGUF_OK) {
        cli_error(opt.model, "%s", err.message);
        return CLI_EXIT_TROUBLE;
    }
    if (qwen_sampler_new(&R->sampler, &opt.sp, (int32_t)c->n_vocab, &err) != GGUF_OK) {
        cli_error(opt.model, "%s", err.message);
        return CLI_EXIT_TROUBLE;
    }
    R->stop[0] = qwen_tokenizer_eos(R->tok);
    R->stop[1] = qwen_tokenizer_find(R->tok, "<|im_end|>", 10);
    R->stop[2] = qwen_tokenizer_find(R->tok, "<|endoftext|>", 13);
    if (opt.ignore_eos && !(R->masked = malloc((size_t)c->n_vocab * sizeof *R->masked))) {
        cli_error(opt.model, "out of memory");
        return CLI_EXIT_TROUBLE;
    }
    R->load_s = now() - t0;
    return 0;
}

/* Checks the logits of the last step (after the prompt when n_gen is 0,
 * else after generated token n_gen) and reports NaN or Inf: sampling from
 * them would print a token, "!" (id 0) for NaN, for ever, from a model
 * whose weights are damaged.  One pass over the vocabulary a step, small
 * beside the step itself.  Returns 1 after reporting, else 0. */
static int bad_logits(const struct run *R, uint64_t n_gen)
{
    const float *logits = qwen_state_logits(R->state);
    int32_t n = (int32_t)R->model->config.n_vocab;
    for (int32_t i = 0; i < n; i++) {
        if (isfinite(logits[i])) continue;
        char step[48];
        if (n_gen) snprintf(step, sizeof step, "generated token %" PRIu64, n_gen);
        else snprintf(step, sizeof step, "the prompt prefill");
        cli_error(opt.model, "the logits after %s are not finite (token %" PRId32 ": %s); the "
                  "model's weights hold NaN or Inf, or overflow", step, i,
                  isnan(logits[i]) ? "NaN" : logits[i] > 0 ? "+Inf" : "-Inf");
        return 1;
    }
    return 0;
}

/* Runs one conversation on the len bytes at text: tokenizes, and prints
 * the ids (--tokenize), the top logits (--logits) or generates the reply.
 * Returns 0, or an exit status after printing the error. */
static int converse(struct run *R, const char *text, size_t len, struct reply *rep)
{
    gguf_error err = {0};
    qwen_ids ids = QWEN_IDS_INIT;
    unsigned flags = (opt.raw ? QWEN_CHAT_RAW : 0) | (opt.special ? QWEN_CHAT_SPECIAL : 0);
    int status = 0;
    rep->len = 0;
    rep->n_prompt = rep->n_gen = 0;
    rep->prompt_s = rep->gen_s = 0.0;
    size_t sys_len = opt.system ? strlen(opt.system) : 0;
    if (qwen_chat_tokenize(R->tok, opt.system, sys_len, text, len, flags, &ids, &err) != GGUF_OK) {
        cli_error(opt.model, "%s", err.message);
        status = CLI_EXIT_TROUBLE;
        goto done;
    }
    if (opt.mode == MODE_TOKENIZE) {
        for (size_t i = 0; i < ids.n; i++) {
            if (i) cli_out_putc(out, ' ');
            cli_out_i64(out, ids.v[i]);
        }
        cli_out_putc(out, '\n');
        goto done;
    }
    /* Empty input (a whole input, or a line of --each-line) gets no reply;
     * nor does a prompt of no tokens. */
    if (len == 0 || ids.n == 0) goto done;
    if (ids.n > R->n_ctx) {
        cli_error(opt.model, "the prompt is %zu tokens, longer than the context of %" PRIu32
                  " (see -c)", ids.n, R->n_ctx);
        status = CLI_EXIT_TROUBLE;
        goto done;
    }

    qwen_state_reset(R->state);
    qwen_sampler_reset(R->sampler);
    for (size_t i = 0; i < ids.n; i++) qwen_sampler_accept(R->sampler, ids.v[i]);
    double t0 = now();
    if (qwen_forward(R->state, ids.v, (uint32_t)ids.n, &err) != GGUF_OK) {
        cli_message(err.message);
        status = CLI_EXIT_TROUBLE;
        goto done;
    }
    rep->prompt_s = now() - t0;
    rep->n_prompt = ids.n;
    R->prompt_s += rep->prompt_s;
    R->prompt_tokens += ids.n;

    int32_t n_vocab = (int32_t)R->model->config.n_vocab;
    if (bad_logits(R, 0)) {
        status = CLI_EXIT_TROUBLE;
        goto done;
    }
    if (opt.mode == MODE_LOGITS) {
        if (print_top_logits(qwen_state_logits(R->state), n_vocab, opt.n_logits)) {
            cli_error(opt.model, "out of memory");
            status = CLI_EXIT_TROUBLE;
        }
        goto done;
    }

    qwen_utf8 dec = QWEN_UTF8_INIT;
    char buf[QWEN_UTF8_OUT_MAX(256)];
    t0 = now();
    uint64_t n_gen = 0;
    int first_id = 1;
    while (!interrupted && !cli_out_failed(out)) {
        if (opt.n_predict >= 0 && n_gen >= (uint64_t)opt.n_predict) break;
        const float *logits = qwen_state_logits(R->state);
        if (R->masked) {
            memcpy(R->masked, logits, (size_t)n_vocab * sizeof *logits);
            for (int i = 0; i < 3; i++)
                if (R->stop[i] >= 0) R->masked[R->stop[i]] = -INFINITY;
            logits = R->masked;
        }
        int32_t id = qwen_sampler_sample(R->sampler, logits);
        qwen_sampler_accept(R->sampler, id);
        int stop = is_stop(R, id);
        if (opt.print_ids) {
            char num[16];
            int k = snprintf(num, sizeof num, "%s%" PRId32, first_id ? "" : " ", id);
            first_id = 0;
            if (emit(rep, num, (size_t)k)) goto nomem;
        } else if (!stop && qwen_token_type(R->tok, id) != QWEN_TOKEN_CONTROL) {
            size_t n;
            const char *p = qwen_token_bytes(R->tok, id, &n);
            /* Tokens are short; feed long ones in pieces that fit buf. */
            while (n > 0) {
                size_t k = n < 256 ? n : 256;
                if (emit(rep, buf, qwen_utf8_feed(&dec, p, k, buf))) goto nomem;
                p += k;
                n -= k;
            }
        }
        if (stop) break;
        n_gen++;
        if (opt.n_predict >= 0 && n_gen >= (uint64_t)opt.n_predict) break;
        if (qwen_state_pos(R->state) >= R->n_ctx) break; /* the context is full */
        if (qwen_forward(R->state, &id, 1, &err) != GGUF_OK) {
            cli_message(err.message);
            status = CLI_EXIT_TROUBLE;
            break;
        }
        if (bad_logits(R, n_gen)) {
            status = CLI_EXIT_TROUBLE;
            break;
        }
    }
    if (emit(rep, buf, qwen_utf8_flush(&dec, buf))) goto nomem;
    rep->gen_s = now() - t0;
    rep->n_gen = n_gen;
    R->gen_s += rep->gen_s;
    R->gen_tokens += n_gen;
    goto done;
nomem:
    cli_error(opt.model, "out of memory");
    status = CLI_EXIT_TROUBLE;
done:
    qwen_ids_free(&ids);
    return status;
}

/* Ends the output of one conversation: the JSON object, or the line end. */
static void finish_reply(const char *text, size_t len, const struct reply *rep)
{
    if (opt.mode != MODE_GENERATE) return;
    if (opt.json) {
        cli_out_str(out, "{\"prompt\": ");
        cli_out_json_str(out, text, len);
        cli_out_str(out, ", \"reply\": ");
        cli_out_json_str(out, rep->text ? rep->text : "", rep->len);
        cli_out_str(out, ", \"prompt_tokens\": ");
        cli_out_u64(out, rep->n_prompt);
        cli_out_str(out, ", \"reply_tokens\": ");
        cli_out_u64(out, rep->n_gen);
        cli_out_str(out, ", \"prompt_seconds\": ");
        cli_out_printf(out, "%.6f", rep->prompt_s);
        cli_out_str(out, ", \"reply_seconds\": ");
        cli_out_printf(out, "%.6f", rep->gen_s);
        cli_out_str(out, "}\n");
    } else {
        cli_out_putc(out, '\n');
    }
    cli_out_flush(out);
}

static void print_stats(const struct run *R)
{
    cli_out_flush(out);
    fprintf(stderr, "load: %.2f s\n", R->load_s);
    fprintf(stderr, "prompt: %" PRIu64 " tokens, %.1f tok/s\n", R->prompt_tokens,
            R->prompt_s > 0 ? (double)R->prompt_tokens / R->prompt_s : 0.0);
    fprintf(stderr, "generation: %" PRIu64 " tokens, %.1f tok/s\n", R->gen_tokens,
            R->gen_s > 0 ? (double)R->gen_tokens / R->gen_s : 0.0);
}

/* The most bytes of input that can fit the context: every token stands
 * for at most qwen_tokenizer_max_bytes() bytes, so B bytes give at least
 * B / max_bytes tokens (and the chat template adds more). */
static size_t input_limit(const struct run *R)
{
    size_t longest = qwen_tokenizer_max_bytes(R->tok);
    if (longest == 0) longest = 1;
    if (longest > (SIZE_MAX - 2) / R->n_ctx) return SIZE_MAX - 2;
    return (size_t)R->n_ctx * longest;
}

/* Reports input (line `line` of it with --each-line, else 0) that is
 * longer than limit bytes. */
static void too_long(const struct run *R, const char *name, uint64_t line, size_t limit)
{
    char where[48] = "";
    if (line) snprintf(where, sizeof where, "line %" PRIu64 ": ", line);
    cli_error(name, "%sover %zu bytes of input cannot fit the context of %" PRIu32 " tokens "
              "(no token is longer than %zu bytes; see -c)", where, limit, R->n_ctx,
              qwen_tokenizer_max_bytes(R->tok));
}

int main(int argc, char **argv)
{
    cli_set_prog("qwen-run");
    guard_init();
    int status = parse_options(argc, argv);
    if (status >= 0) return status;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL); /* no SA_RESTART: a blocked read returns */

    /* Open -f before loading the model, so that a missing file is reported
     * at once; read the input after it, since how much of it can be used
     * depends on the context and the vocabulary (input_limit). */
    char *input = NULL;
    size_t in_len = 0;
    int in_fd = -1;
    const char *in_name = NULL;
    if (opt.prompt) {
        in_len = strlen(opt.prompt);
        input = malloc(in_len + 1);
        if (!input) {
            cli_error(NULL, "out of memory");
            return CLI_EXIT_TROUBLE;
        }
        memcpy(input, opt.prompt, in_len + 1);
    } else if (opt.file) {
        in_name = opt.file;
        in_fd = strcmp(opt.file, "-") == 0 ? 0 : open(opt.file, O_RDONLY);
        if (in_fd < 0) {
            cli_error(opt.file, "%s", strerror(errno));
            return CLI_EXIT_TROUBLE;
        }
    } else if (!opt.each_line) {
        in_name = "-";
        in_fd = 0;
    }

    struct run R;
    memset(&R, 0, sizeof R);
    struct reply rep;
    memset(&rep, 0, sizeof rep);
    status = load(&R);
    if (status) goto out;
    size_t limit = input_limit(&R);

    if (in_fd >= 0) {
        /* Standard input without -f drops one final newline, which may be
         * the byte past the limit. */
        int drop_nl = !opt.file;
        int rc = read_all(in_fd, limit + (size_t)drop_nl, &input, &in_len);
        if (in_fd > 0) close(in_fd);
        if (rc == -1) {
            cli_error(in_name, "%s", strerror(errno));
            status = CLI_EXIT_TROUBLE;
            goto out;
        }
        if (drop_nl && rc == 0 && in_len > 0 && input[in_len - 1] == '\n') input[--in_len] = 0;
        if (rc == -2 || in_len > limit) {
            too_long(&R, in_name, 0, limit);
            status = CLI_EXIT_TROUBLE;
            goto out;
        }
    }

    if (!opt.each_line) {
        if (in_len > 0 || opt.mode == MODE_TOKENIZE) {
            status = converse(&R, input, in_len, &rep);
            if (!status) finish_reply(input, in_len, &rep);
        }
    } else {
        char *line = NULL;
        size_t cap = 0, len = 0;
        uint64_t line_no = 0;
        int rc = 0;
        while (!interrupted && !cli_out_failed(out) &&
               (rc = read_line(stdin, limit, &line, &cap, &len)) > 0) {
            line_no++;
            status = converse(&R, line, len, &rep);
            if (status) break;
            finish_reply(line, len, &rep);
        }
        if (!status && rc == -2) {
            too_long(&R, "-", line_no + 1, limit);
            status = CLI_EXIT_TROUBLE;
        } else if (!status && rc == -1 && !interrupted) {
            cli_error("-", "%s", strerror(errno));
            status = CLI_EXIT_TROUBLE;
        }
        free(line);
    }
    if (opt.stats) print_stats(&R);
out:
    free(rep.text);
    free(input);
    free(R.masked);
    qwen_sampler_free(R.sampler);
    qwen_state_free(R.state);
    qwen_tokenizer_free(R.tok);
    if (R.model) guard_input_forget(R.model->file);
    qwen_model_close(R.model);
    int wst = cli_out_close(out);
    if (status) return status;
    if (interrupted) return EXIT_INTERRUPTED;
    return wst;
}
