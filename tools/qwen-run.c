/*
 * qwen-run -- Qwen2.5 and Qwen3 inference on the CPU: reads a prompt, or
 * one per line, streams the model's replies to standard output.  See
 * qwen-run(1).
 *
 * The model, tokenizer, chat template, sampler, forward pass and the
 * generation loop live in infer/; this file parses options, reads input
 * and prints, replies in the order of their prompts.
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
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include "gguf/gguf.h"
#include "infer/chat.h"
#include "infer/context.h"
#include "infer/generate.h"
#include "infer/grammar.h"
#include "infer/jsonschema.h"
#include "infer/model.h"
#include "infer/promptcache.h"
#include "infer/sampler.h"
#include "infer/tokenizer.h"
#include "tools/cli.h"
#include "tools/guard.h"
#include "tools/progress.h"
#include "tools/run-chat.h"
#ifdef HAVE_CUDA
#include "infer/cuda/cuda.h"
#define CUDA_IN_BUILD "built in"
#else
#define CUDA_IN_BUILD "not built"
#endif

/* The default context (qwen_params_fit's): enough for a long chat, small
 * enough for little memory. */
#define DEFAULT_CTX 4096u
/* Conversations at once with --each-line (see qwen-run(1) for why). */
#define DEFAULT_PARALLEL 8u
/* Most conversations at once. */
#define MAX_PARALLEL 256u
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
    long parallel;              /* --parallel; 0: the default */
    const char *device;         /* --device: "cpu", "cuda" or "auto" */
    int think;                  /* --think 1, --no-think 0, -1: the model's default (on) */
    int raw, special, each_line, json, stats, print_ids, seed_set, ignore_eos, hide_think;
    int no_repack;
    qwen_sampler_params sp;
    const char **stop;          /* --stop STR..., in command-line order */
    size_t n_stop;
    int context_shift;          /* --context-shift */
    long n_keep;                /* --keep N; -1: the whole prompt */
    long n_logprobs;            /* --logprobs N; 0: none */
    const char *prompt_cache;   /* --prompt-cache FILE, or NULL */
    int interactive;            /* -i, or a terminal on standard input and no prompt */
    const char *grammar_file;   /* --grammar FILE, or NULL */
    const char *schema_file;    /* --json-schema FILE, or NULL */
};

static struct options opt;
static cli_out *out = &cli_stdout;
static volatile sig_atomic_t interrupted;

/* The loaded model and everything a conversation needs. */
struct run {
    qwen_model *model;
    qwen_tokenizer *tok;
    qwen_context *ctx;
    qwen_generator *gen;
    uint32_t n_ctx;
    unsigned chat_flags;        /* qwen_chat_tokenize's */
    double load_s;              /* for --stats */
    qwen_grammar *grammar;      /* --grammar */
};

/* A reply of --each-line waiting for its turn to be printed (replies come
 * out in the order of their lines), or the one being printed. */
struct reply {
    char *prompt;               /* its line */
    size_t prompt_len;
    char *text;                 /* the bytes held (all of them for --json) */
    size_t len, cap;
    char *lp;                   /* --logprobs: the JSON of its tokens so far */
    size_t lp_len, lp_cap;
    int done;
    qwen_gen_reply r;
};

/* The conversations of one run of the generator, in input order: the
 * first not yet printed is at `head`; conversation k is replies[k %
 * cap] while head <= k < head + cap. */
struct queue {
    struct run *R;
    struct reply *replies;
    uint32_t cap;
    uint64_t head, n;           /* first not printed; conversations given */
    /* input */
    const char *text;           /* the single prompt (not --each-line) */
    size_t text_len;
    char *line;                 /* --each-line: the line buffer */
    size_t line_cap;
    size_t limit;               /* most bytes a line may have */
    uint64_t line_no;
    int read_status;            /* 0, or a read_line() error: -1, -2 */
    int read_errno;             /* errno of read_status -1 */
    int status;                 /* an exit status of an error in a callback */
    char *scratch;              /* --logprobs: one token's JSON */
    size_t scratch_cap;
};

static void usage(void)
{
    cli_out_printf(out,
        "Usage: %s -m MODEL [OPTION]... [-p PROMPT | -f FILE]\n"
        "Run a Qwen2.5 or Qwen3 model (GGUF, qwen2 or qwen3 architecture) on the\n"
        "CPU or a GPU: the prompt (from -p, -f or standard input) is wrapped in the ChatML\n"
        "chat template and the model's reply is written to standard output as it\n"
        "is generated.  Generation stops at <|im_end|> or <|endoftext|>, after -n\n"
        "tokens, or when the context is full.\n"
        "\n"
        "Input:\n"
        "  -m, --model=MODEL       the GGUF model file (required): a regular,\n"
        "                          uncompressed file, as it is memory-mapped (not a\n"
        "                          pipe, not gzip); - when standard input is one\n"
        "  -p, --prompt=TEXT       the prompt\n"
        "  -f, --file=FILE         read the prompt from FILE, bytes exactly as they are\n"
        "                          (standard input when neither -p nor -f is given;\n"
        "                          one final newline of standard input is dropped)\n"
        "      --system=TEXT       the system prompt (default: Qwen2.5's own; Qwen3\n"
        "                          has none)\n"
        "      --think, --no-think Qwen3: let the model think before it answers, in a\n"
        "                          <think>...</think> block (default), or not\n"
        "      --hide-think        leave the thinking block out of the reply\n"
        "      --raw               no chat template: feed the prompt as it is\n"
        "      --special           recognise special-token text such as <|im_start|>\n"
        "                          in the prompt (the template's own always are)\n"
        "  -i, --interactive       a chat: each line of standard input is a turn, the\n"
        "                          conversation kept (the default when standard\n"
        "                          input is a terminal and no -p or -f is given);\n"
        "                          /clear, /save FILE, /exit; Ctrl-C stops a reply\n"
        "      --each-line         each line of standard input is its own conversation;\n"
        "                          one reply per line, with \\ and line breaks escaped\n"
        "                          as \\\\, \\n and \\r; replies in the order of the lines\n"
        "      --parallel=N        with --each-line: answer up to N lines at once, in\n"
        "                          one batch a step (default %u; 1: one at a time)\n"
        "      --json              print one JSON object per conversation: prompt,\n"
        "                          reply, token counts, timings, why it stopped;\n"
        "                          with --tokenize and --logits, theirs as JSON\n"
        "\n"
        "Generation:\n"
        "  -n, --n-predict=N       generate at most N tokens (default: no limit)\n"
        "  -c, --ctx-size=N        context size in tokens, of each conversation at once\n"
        "                          (default: %u or the model's, if smaller)\n"
        "  -t, --threads=N         threads of the forward pass (default: one per CPU,\n"
        "                          or OMP_NUM_THREADS)\n"
        "      --device=DEV        cpu, cuda (an NVIDIA GPU; this build: %s), or auto:\n"
        "                          the GPU when there is one, else the CPU (default)\n"
        "      --no-repack         on the CPU, multiply the mapped weights as they are\n"
        "                          (default: copy the matrices the SIMD level reads\n"
        "                          faster interleaved, for faster generation)\n"
        "      --temp=T            temperature (default 0.8); 0: greedy, deterministic\n"
        "      --top-k=K           keep the K most likely tokens (default 40; 0: all)\n"
        "      --top-p=P           keep the most likely tokens up to mass P (default 0.95)\n"
        "      --min-p=P           drop tokens below P times the most likely (default 0.05)\n"
        "      --repeat-penalty=R  penalise the last 64 tokens (default 1.0: off)\n"
        "  -s, --seed=N            seed of the sampler (default: from the clock)\n"
        "      --stop=STR          end a reply before the first STR in its text, also\n"
        "                          across tokens (not printed); may be repeated\n"
        "      --context-shift     when a reply fills the context, drop half of the\n"
        "                          tokens after the first --keep and go on (default:\n"
        "                          the reply ends there, with a message)\n"
        "      --keep=N            with --context-shift: tokens of the conversation's\n"
        "                          start always kept (default 0; -1: the whole prompt)\n"
        "\n"
        "Output:\n"
        "      --grammar=FILE      every reply follows the GBNF grammar in FILE (as\n"
        "                          llama.cpp's; see qwen-run(1)): only tokens it\n"
        "                          allows are chosen\n"
        "      --json-schema=FILE  every reply is JSON that the JSON Schema in FILE\n"
        "                          accepts (objects, arrays, strings, numbers, enums,\n"
        "                          required properties, nesting; see qwen-run(1))\n"
        "      --prompt-cache=FILE the keys and values of the prompt kept in FILE: a\n"
        "                          later run whose prompt starts with the same tokens\n"
        "                          (a long system prompt) computes only the rest; a\n"
        "                          FILE for another model, or damaged, is said and\n"
        "                          made again\n"
        "      --stats             print load time and prompt and generation speed on\n"
        "                          standard error at the end\n"
        "      --tokenize          print the input's token ids (template applied unless\n"
        "                          --raw) on one line and exit\n"
        "      --logits=N          print the N highest next-token logits after the\n"
        "                          prompt, one 'ID LOGIT' per line, and exit\n"
        "      --logprobs=N        with --json: each generated token's log-probability\n"
        "                          and the N (1..%d) most likely tokens' (after the\n"
        "                          temperature)\n"
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
        cli_prog, DEFAULT_PARALLEL, DEFAULT_CTX, CUDA_IN_BUILD, QWEN_LOGPROBS_MAX);
}

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

enum {
    OPT_SYSTEM = 256, OPT_RAW, OPT_SPECIAL, OPT_EACH_LINE, OPT_JSON, OPT_TEMP, OPT_TOP_K,
    OPT_TOP_P, OPT_MIN_P, OPT_REPEAT_PENALTY, OPT_STATS, OPT_TOKENIZE, OPT_LOGITS, OPT_PRINT_IDS,
    OPT_IGNORE_EOS, OPT_PARALLEL, OPT_THINK, OPT_NO_THINK, OPT_HIDE_THINK, OPT_DEVICE,
    OPT_STOP, OPT_CONTEXT_SHIFT, OPT_KEEP, OPT_LOGPROBS, OPT_PROMPT_CACHE, OPT_GRAMMAR,
    OPT_JSON_SCHEMA, OPT_NO_REPACK
};

/* -i given (1), or chosen for a terminal (2). */
enum { INTERACTIVE_ASKED = 1, INTERACTIVE_TTY = 2 };

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
    { "parallel", required_argument, NULL, OPT_PARALLEL },
    { "think", no_argument, NULL, OPT_THINK },
    { "no-think", no_argument, NULL, OPT_NO_THINK },
    { "hide-think", no_argument, NULL, OPT_HIDE_THINK },
    { "device", required_argument, NULL, OPT_DEVICE },
    { "no-repack", no_argument, NULL, OPT_NO_REPACK },
    { "stop", required_argument, NULL, OPT_STOP },
    { "context-shift", no_argument, NULL, OPT_CONTEXT_SHIFT },
    { "keep", required_argument, NULL, OPT_KEEP },
    { "logprobs", required_argument, NULL, OPT_LOGPROBS },
    { "prompt-cache", required_argument, NULL, OPT_PROMPT_CACHE },
    { "interactive", no_argument, NULL, 'i' },
    { "grammar", required_argument, NULL, OPT_GRAMMAR },
    { "json-schema", required_argument, NULL, OPT_JSON_SCHEMA },
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
    int c, keep_set = 0;
    long v;
    opterr = 0;
    opt.n_predict = -1;
    if (!(opt.stop = calloc((size_t)argc, sizeof *opt.stop))) {
        cli_error(NULL, "out of memory");
        return CLI_EXIT_TROUBLE;
    }
    opt.think = -1;
    opt.device = "auto";
    opt.sp = qwen_sampler_defaults();
    while ((c = getopt_long(argc, argv, ":m:p:f:n:c:t:s:ihV", long_options, NULL)) != -1) {
        switch (c) {
        case 'm': opt.model = optarg; break;
        case 'p': opt.prompt = optarg; break;
        case 'f': opt.file = optarg; break;
        case OPT_SYSTEM: opt.system = optarg; break;
        case OPT_RAW: opt.raw = 1; break;
        case OPT_NO_REPACK: opt.no_repack = 1; break;
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
        case OPT_DEVICE:
            if (strcmp(optarg, "cpu") != 0 && strcmp(optarg, "cuda") != 0 &&
                strcmp(optarg, "auto") != 0)
                return cli_usage_error("--device: expected cpu, cuda or auto, not '%s'", optarg);
            opt.device = optarg;
            break;
        case OPT_TOKENIZE: opt.mode = MODE_TOKENIZE; break;
        case OPT_LOGITS:
            if (parse_long(optarg, 1, INT32_MAX, &opt.n_logits))
                return cli_usage_error("--logits: not a count: '%s'", optarg);
            opt.mode = MODE_LOGITS;
            break;
        case OPT_PRINT_IDS: opt.print_ids = 1; break;
        case OPT_IGNORE_EOS: opt.ignore_eos = 1; break;
        case OPT_PARALLEL:
            if (parse_long(optarg, 1, MAX_PARALLEL, &opt.parallel))
                return cli_usage_error("--parallel: not a number of conversations (1..%u): '%s'",
                                       MAX_PARALLEL, optarg);
            break;
        case OPT_THINK: opt.think = 1; break;
        case OPT_NO_THINK: opt.think = 0; break;
        case OPT_HIDE_THINK: opt.hide_think = 1; break;
        case OPT_STOP:
            if (!optarg[0]) return cli_usage_error("--stop: an empty string would stop at once");
            if (strlen(optarg) > QWEN_STOP_LEN_MAX)
                return cli_usage_error("--stop: longer than %d bytes", QWEN_STOP_LEN_MAX);
            opt.stop[opt.n_stop++] = optarg;
            break;
        case OPT_CONTEXT_SHIFT: opt.context_shift = 1; break;
        case OPT_PROMPT_CACHE: opt.prompt_cache = optarg; break;
        case 'i': opt.interactive = INTERACTIVE_ASKED; break;
        case OPT_GRAMMAR: opt.grammar_file = optarg; break;
        case OPT_JSON_SCHEMA: opt.schema_file = optarg; break;
        case OPT_KEEP:
            if (parse_long(optarg, -1, (long)QWEN_MAX_CTX, &opt.n_keep))
                return cli_usage_error("--keep: not a token count (-1 for the prompt): '%s'", optarg);
            keep_set = 1;
            break;
        case OPT_LOGPROBS:
            if (parse_long(optarg, 1, QWEN_LOGPROBS_MAX, &opt.n_logprobs))
                return cli_usage_error("--logprobs: not a count (1..%d): '%s'", QWEN_LOGPROBS_MAX,
                                       optarg);
            break;
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
    if (opt.parallel && !opt.each_line)
        return cli_usage_error("--parallel needs --each-line (one prompt is one conversation)");
    if (opt.mode != MODE_GENERATE && (opt.n_stop || opt.context_shift || opt.n_logprobs ||
                                      opt.prompt_cache || opt.grammar_file || opt.schema_file))
        return cli_usage_error("--stop, --context-shift, --logprobs, --prompt-cache, --grammar and "
                               "--json-schema are for generation, not --tokenize or --logits");
    if (opt.grammar_file && opt.schema_file)
        return cli_usage_error("--grammar and --json-schema: one or the other");
    if (opt.n_logprobs && !opt.json)
        return cli_usage_error("--logprobs needs --json (the log-probabilities go in its objects)");
    if (keep_set && !opt.context_shift)
        return cli_usage_error("--keep goes with --context-shift");
    /* a person at a terminal and no prompt: a chat */
    if (!opt.interactive && opt.mode == MODE_GENERATE && !opt.prompt && !opt.file &&
        !opt.each_line && cli_isatty(0))
        opt.interactive = INTERACTIVE_TTY;
    if (opt.interactive == INTERACTIVE_ASKED &&
        (opt.prompt || opt.file || opt.each_line || opt.mode != MODE_GENERATE))
        return cli_usage_error("-i reads the chat's turns from standard input: not with -p, -f, "
                               "--each-line, --tokenize or --logits");
    if (opt.interactive && (opt.json || opt.print_ids || opt.prompt_cache || opt.n_logprobs))
        return cli_usage_error("the chat is for people: --json, --print-ids, --logprobs and "
                               "--prompt-cache are for scripts");
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

/* Appends n bytes to the growing buffer *b (*len bytes used of *cap).
 * Returns 0, or -1 out of memory. */
static int buf_add(char **b, size_t *len, size_t *cap, const char *p, size_t n)
{
    if (*cap - *len < n) {
        size_t c = *cap ? *cap : 256;
        while (c - *len < n) c *= 2;
        char *t = realloc(*b, c);
        if (!t) return -1;
        *b = t;
        *cap = c;
    }
    memcpy(*b + *len, p, n);
    *len += n;
    return 0;
}

/* Appends n bytes to the reply's text.  Returns 0, or -1 out of memory. */
static int reply_add(struct reply *r, const char *p, size_t n)
{
    return buf_add(&r->text, &r->len, &r->cap, p, n);
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

/* Prints n bytes of a reply's text (escaped with --each-line), flushed so
 * that the reader sees each token as it comes. */
static void print_text(const char *p, size_t n)
{
    if (n == 0) return;
    if (opt.each_line)
        put_line_escaped(p, n);
    else
        cli_out_write(out, p, n);
    cli_out_flush(out);
}

/* Ends the output of one conversation (its prompt, len bytes at text):
 * the JSON object, or the line end. */
static void finish_reply(const char *text, size_t len, const struct reply *rep)
{
    if (opt.json) {
        cli_out_str(out, "{\"prompt\": ");
        cli_out_json_str(out, text, len);
        cli_out_str(out, ", \"reply\": ");
        cli_out_json_str(out, rep->text ? rep->text : "", rep->len);
        cli_out_str(out, ", \"prompt_tokens\": ");
        cli_out_u64(out, rep->r.n_prompt);
        cli_out_str(out, ", \"reply_tokens\": ");
        cli_out_u64(out, rep->r.n_gen);
        cli_out_str(out, ", \"prompt_seconds\": ");
        cli_out_printf(out, "%.6f", rep->r.prompt_s);
        cli_out_str(out, ", \"reply_seconds\": ");
        cli_out_printf(out, "%.6f", rep->r.gen_s);
        cli_out_str(out, ", \"cached_tokens\": ");
        cli_out_u64(out, rep->r.n_cached);
        cli_out_str(out, ", \"stop\": \"");
        cli_out_str(out, qwen_stop_name(rep->r.stop));
        cli_out_putc(out, '"');
        if (opt.context_shift) {
            cli_out_str(out, ", \"context_shifts\": ");
            cli_out_u64(out, rep->r.n_shift);
        }
        if (opt.n_logprobs) {
            cli_out_str(out, ", \"logprobs\": [");
            if (rep->lp_len) cli_out_write(out, rep->lp, rep->lp_len);
            cli_out_putc(out, ']');
        }
        cli_out_str(out, "}\n");
    } else {
        cli_out_putc(out, '\n');
    }
    cli_out_flush(out);
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

/* Prints the N highest of the n logits as "ID LOGIT" lines, or with
 * --json as the members of a list of {"id", "text", "logit"}.  Returns 0,
 * or -1 out of memory. */
static int print_top_logits(const qwen_tokenizer *tok, const float *logits, int32_t n, long top)
{
    struct scored *s = malloc(sizeof *s * (size_t)n);
    if (!s) return -1;
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (!isnan(logits[i])) s[m++] = (struct scored){i, logits[i]};
    qsort(s, (size_t)m, sizeof *s, scored_cmp);
    for (int32_t i = 0; i < m && i < top; i++) {
        if (opt.json) {
            size_t len;
            const char *p = qwen_token_bytes(tok, s[i].id, &len);
            cli_out_str(out, i ? ", {\"id\": " : "{\"id\": ");
            cli_out_i64(out, s[i].id);
            cli_out_str(out, ", \"text\": ");
            cli_out_json_str(out, p ? p : "", p ? len : 0);
            cli_out_str(out, ", \"logit\": ");
            cli_out_f32(out, s[i].logit, 1);
            cli_out_putc(out, '}');
            continue;
        }
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

/* qwen_params.progress on a terminal: the upload of the weights to the GPU. */
static void upload_progress(void *user, uint64_t done, uint64_t total)
{
    cli_progress *line = user;
    if (done < total)
        cli_progress_show(line, 0, "uploading weights %3d%%", total ? (int)(done * 100 / total) : 100);
    else
        cli_progress_clear(line);
}

/* The backend --device asks for: "cpu" or "cuda" in *backend, and
 * *fallback = 1 when auto chose the GPU.  Returns 0, or an exit status
 * after printing why the GPU asked for cannot be used. */
static int pick_device(const char **backend, int *fallback)
{
    *backend = "cpu";
    *fallback = 0;
#ifdef HAVE_CUDA
    char why[256] = "";
    if (qwen_backend_add(&qwen_backend_cuda) != GGUF_OK) {
        cli_message("cannot add the CUDA backend");
        return CLI_EXIT_TROUBLE;
    }
    if (strcmp(opt.device, "cpu") == 0) return 0;
    if (qwen_cuda_device_count(why, sizeof why) > 0) {
        *backend = "cuda";
        *fallback = strcmp(opt.device, "auto") == 0;
        return 0;
    }
    if (strcmp(opt.device, "cuda") == 0) {
        char msg[320];
        snprintf(msg, sizeof msg, "--device cuda: no usable GPU: %s", why);
        cli_message(msg);
        return CLI_EXIT_TROUBLE;
    }
    return 0;
#else
    if (strcmp(opt.device, "cuda") == 0) {
        cli_message("--device cuda: this qwen-run was built without CUDA "
                    "(./configure --enable-cuda)");
        return CLI_EXIT_TROUBLE;
    }
    return 0;
#endif
}

/* --grammar FILE, or --json-schema FILE compiled to a grammar, into *g.
 * Returns 0, or an exit status after the message. */
static int load_grammar(qwen_grammar **g)
{
    const char *path = opt.grammar_file ? opt.grammar_file : opt.schema_file;
    const size_t max = opt.grammar_file ? QWEN_GRAMMAR_MAX : QWEN_SCHEMA_MAX;
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        cli_error(path, "%s", strerror(errno));
        return CLI_EXIT_TROUBLE;
    }
    char *text = NULL;
    size_t len = 0;
    int rc = read_all(fd, max, &text, &len);
    close(fd);
    if (rc == -1) {
        cli_error(path, "%s", strerror(errno));
        free(text);
        return CLI_EXIT_TROUBLE;
    }
    if (rc == -2 || len > max) {
        cli_error(path, "more than %zu bytes", max);
        free(text);
        return CLI_EXIT_TROUBLE;
    }
    gguf_error err = {0};
    if (opt.schema_file) {
        char *gbnf;
        rc = qwen_json_schema_grammar(text, len, path, &gbnf, &err);
        free(text);
        if (rc) {
            cli_message(err.message);
            return CLI_EXIT_TROUBLE;
        }
        text = gbnf;
        len = strlen(gbnf);
    }
    rc = qwen_grammar_parse(g, text, len, path, &err);
    free(text);
    if (rc) {
        cli_message(err.message);
        return CLI_EXIT_TROUBLE;
    }
    return 0;
}

/* --prompt-cache: the prompt's keys and values from the file, when it is
 * there and was made for this model; anything else is said, and the
 * prompt computed (and the file made again after the run). */
static void load_prompt_cache(struct run *R)
{
    gguf_error err = {0};
    if (qwen_seq_state_get(R->ctx, 0, 0, NULL, &err) != GGUF_OK) {
        cli_error(opt.prompt_cache, "not used: %s", err.message);
        opt.prompt_cache = NULL;
        return;
    }
    if (!qwen_prompt_cache_replaceable(opt.prompt_cache)) {
        cli_error(opt.prompt_cache, "not a prompt cache: left as it is, and not used");
        opt.prompt_cache = NULL;
        return;
    }
    qwen_ids ids = QWEN_IDS_INIT;
    void *state = NULL;
    int st = qwen_prompt_cache_load(opt.prompt_cache, R->model, &ids, &state, &err);
    if (st == GGUF_OK) {
        size_t n = ids.n < R->n_ctx ? ids.n : R->n_ctx; /* a state's start is a shorter state */
        st = qwen_generator_set_prefix(R->gen, ids.v, n, state, &err);
    }
    if (st != GGUF_OK && st != GGUF_E_NOT_FOUND) {
        char msg[sizeof err.message + 40];
        snprintf(msg, sizeof msg, "%s; the prompt is computed again", err.message);
        cli_message(msg);
    }
    qwen_ids_free(&ids);
    free(state);
}

/* --prompt-cache: writes the prompt kept after the run, when it changed.
 * Returns 0, or an exit status after the message. */
static int save_prompt_cache(const struct run *R)
{
    const int32_t *ids;
    const void *state;
    int changed;
    size_t n = qwen_generator_prefix(R->gen, &ids, &state, &changed);
    if (!changed || n == 0) return 0;
    gguf_error err = {0};
    if (qwen_prompt_cache_save(opt.prompt_cache, R->model, ids, n, state, &err) != GGUF_OK) {
        cli_message(err.message);
        return CLI_EXIT_TROUBLE;
    }
    return 0;
}

/* Loads model and tokenizer, and for generation and --logits a context
 * (of --parallel sequences with --each-line) and the generator.  Returns
 * 0, or an exit status after printing the error. */
static int load(struct run *R)
{
    gguf_error err = {0};
    double t0 = now();
    guard_input_begin(opt.model, NULL);
    int rc = qwen_model_open(&R->model, opt.model, &err);
    guard_input_end_split(rc == GGUF_OK ? R->model->set : NULL);
    if (rc != GGUF_OK) {
        cli_message(err.message);
        return CLI_EXIT_TROUBLE;
    }
    if (qwen_tokenizer_load(&R->tok, R->model->file, &err) != GGUF_OK) {
        cli_message(err.message);
        return CLI_EXIT_TROUBLE;
    }
    const qwen_config *c = &R->model->config;
    R->chat_flags = qwen_chat_style_flags(c->arch->chat, opt.think != 0) |
                    (opt.raw ? QWEN_CHAT_RAW : 0) | (opt.special ? QWEN_CHAT_SPECIAL : 0);
    qwen_params p = qwen_params_defaults();
    p.n_ctx = (uint32_t)opt.n_ctx;
    p.n_seq = opt.each_line ? (opt.parallel ? (uint32_t)opt.parallel : DEFAULT_PARALLEL) : 1;
    p.n_threads = (int)opt.threads;
    p.no_repack = opt.no_repack;
    qwen_params_fit(&p, c);
    const uint32_t n_ctx = p.n_ctx;
    if (n_ctx > c->n_ctx_train) {
        cli_error(opt.model, "context size %" PRIu32 " exceeds the model's %" PRIu32, n_ctx,
                  c->n_ctx_train);
        return CLI_EXIT_TROUBLE;
    }
    R->n_ctx = n_ctx;
    if (opt.mode == MODE_TOKENIZE) {
        R->load_s = now() - t0;
        return 0;
    }
    int fallback = 0; /* 1: auto chose CUDA, which may refuse the model */
    if ((rc = pick_device(&p.backend, &fallback)) != 0) return rc;
    static cli_progress upload_line;
    cli_progress_init(&upload_line, 1);
    if (upload_line.on) {
        p.progress = upload_progress;
        p.progress_user = &upload_line;
    }
    rc = qwen_context_new(&R->ctx, R->model, &p, &err);
    if (rc == GGUF_E_UNSUPPORTED && fallback) {
        /* auto: a model the GPU cannot run runs on the CPU */
        cli_message(err.message);
        fprintf(stderr, "%s: running on the CPU\n", cli_prog);
        p.backend = "cpu";
        rc = qwen_context_new(&R->ctx, R->model, &p, &err);
    }
    if (rc != GGUF_OK) {
        cli_message(err.message);
        return CLI_EXIT_TROUBLE;
    }
    qwen_gen_params gp = qwen_gen_defaults();
    gp.sampler = opt.sp;
    gp.n_predict = opt.n_predict;
    gp.ignore_eos = opt.ignore_eos;
    gp.print_ids = opt.print_ids;
    gp.hide_think = opt.hide_think;
    gp.stop = opt.stop;
    gp.n_stop = opt.n_stop;
    gp.context_shift = opt.context_shift;
    gp.n_keep = opt.n_keep;
    gp.n_logprobs = (uint32_t)opt.n_logprobs;
    /* the prompt every line shares (a system prompt) computed once */
    gp.reuse_prefix = opt.each_line || opt.prompt_cache;
    if (opt.grammar_file || opt.schema_file) {
        int rc2 = load_grammar(&R->grammar);
        if (rc2) return rc2;
        gp.grammar = R->grammar;
    }
    if (qwen_generator_new(&R->gen, R->ctx, R->tok, &gp, &err) != GGUF_OK) {
        cli_error(opt.model, "%s", err.message);
        return CLI_EXIT_TROUBLE;
    }
    if (opt.prompt_cache) load_prompt_cache(R);
    R->load_s = now() - t0;
    return 0;
}

/* Tokenizes a prompt (len bytes at text) with the chat template into ids.
 * Returns 0, or an exit status after printing the error. */
static int tokenize(const struct run *R, const char *text, size_t len, qwen_ids *ids)
{
    gguf_error err = {0};
    size_t sys_len = opt.system ? strlen(opt.system) : 0;
    if (qwen_chat_tokenize(R->tok, opt.system, sys_len, text, len, R->chat_flags, ids, &err) !=
        GGUF_OK) {
        cli_error(opt.model, "%s", err.message);
        return CLI_EXIT_TROUBLE;
    }
    return 0;
}

/* The reply of conversation k (head <= k < q->n). */
static struct reply *reply_of(struct queue *q, uint64_t k)
{
    return &q->replies[k % q->cap];
}

/* Makes room in the queue for one more conversation: the ring doubles
 * when the conversations not yet printed fill it (a long reply at its head
 * holds back the ones after it).  Returns 0, or -1 out of memory. */
static int queue_grow(struct queue *q)
{
    if (q->n - q->head < q->cap) return 0;
    uint32_t cap = q->cap ? q->cap * 2 : 16;
    struct reply *r = calloc(cap, sizeof *r);
    if (!r) return -1;
    for (uint64_t k = q->head; k < q->n; k++) r[k % cap] = q->replies[k % q->cap];
    free(q->replies);
    q->replies = r;
    q->cap = cap;
    return 0;
}

/* qwen_gen_io.next: the prompt, or the next line. */
static int q_next(void *user, qwen_ids *ids)
{
    struct queue *q = user;
    const char *text;
    size_t len;
    if (!opt.each_line) {
        if (q->n > 0) return 0;
        text = q->text;
        len = q->text_len;
    } else {
        int rc = read_line(stdin, q->limit, &q->line, &q->line_cap, &len);
        if (rc <= 0) {
            q->read_status = rc;
            q->read_errno = errno;
            return rc < 0 ? -1 : 0;
        }
        q->line_no++;
        text = q->line;
    }
    if (queue_grow(q)) goto nomem;
    struct reply *rep = reply_of(q, q->n);
    rep->len = 0;
    rep->done = 0;
    rep->prompt_len = len;
    char *copy = realloc(rep->prompt, len + 1);
    if (!copy) goto nomem;
    memcpy(copy, text, len + 1);
    rep->prompt = copy;
    /* Empty input (a line of --each-line) gets an empty reply. */
    if (len > 0 && (q->status = tokenize(q->R, text, len, ids)) != 0) return -1;
    q->n++;
    return 1;
nomem:
    cli_error(opt.model, "out of memory");
    q->status = CLI_EXIT_TROUBLE;
    return -1;
}

/* qwen_gen_io.text: printed at once for the first reply not yet printed,
 * else held. */
static int q_text(void *user, uint64_t k, const char *p, size_t n)
{
    struct queue *q = user;
    struct reply *rep = reply_of(q, k);
    if (!opt.json && k == q->head) {
        print_text(p, n);
        return 0;
    }
    if (reply_add(rep, p, n)) {
        cli_error(opt.model, "out of memory");
        q->status = CLI_EXIT_TROUBLE;
        return -1;
    }
    return 0;
}

/* qwen_gen_io.done: prints the replies that are now first in line. */
static void q_done(void *user, uint64_t k, const qwen_gen_reply *r)
{
    struct queue *q = user;
    struct reply *rep = reply_of(q, k);
    rep->r = *r;
    rep->done = 1;
    if (r->stop == QWEN_STOP_CONTEXT) {
        char where[48] = "";
        if (opt.each_line) snprintf(where, sizeof where, "line %" PRIu64 ": ", k + 1);
        cli_error(NULL, "%sthe reply filled the context of %" PRIu32 " tokens and was cut there "
                  "(%s)", where, q->R->n_ctx,
                  opt.context_shift ? "--keep leaves nothing to drop" : "see -c and --context-shift");
    }
    while (q->head < q->n && (rep = reply_of(q, q->head))->done) {
        finish_reply(rep->prompt, rep->prompt_len, rep);
        /* printed: its buffers go (queue_grow() keeps only the replies
         * not yet printed) */
        free(rep->prompt);
        free(rep->text);
        free(rep->lp);
        memset(rep, 0, sizeof *rep);
        q->head++;
        if (q->head < q->n && !opt.json) {
            rep = reply_of(q, q->head);
            print_text(rep->text, rep->len);
            rep->len = 0;
        }
    }
}

/* One token of --logprobs as JSON: {"id": N, "text": "...", "bytes": [...],
 * "logprob": X}. */
static void put_token_json(cli_out *o, const qwen_tokenizer *tok, int32_t id, float logprob)
{
    size_t n;
    const char *p = qwen_token_bytes(tok, id, &n);
    cli_out_str(o, "{\"id\": ");
    cli_out_i64(o, id);
    cli_out_str(o, ", \"text\": ");
    cli_out_json_str(o, p ? p : "", p ? n : 0);
    cli_out_str(o, ", \"bytes\": [");
    for (size_t i = 0; p && i < n; i++) {
        if (i) cli_out_str(o, ", ");
        cli_out_u64(o, (unsigned char)p[i]);
    }
    cli_out_str(o, "], \"logprob\": ");
    cli_out_f32(o, logprob, 1);
}

/* qwen_gen_io.token: --logprobs, kept with the reply for its JSON object. */
static int q_token(void *user, uint64_t k, const qwen_gen_token *t)
{
    struct queue *q = user;
    struct reply *rep = reply_of(q, k);
    cli_out o = {-1, q->scratch, q->scratch_cap, 0, 0};
    if (rep->lp_len) cli_out_str(&o, ", ");
    put_token_json(&o, q->R->tok, t->id, t->logprob);
    cli_out_str(&o, ", \"top\": [");
    for (uint32_t i = 0; i < t->n_top; i++) {
        if (i) cli_out_str(&o, ", ");
        put_token_json(&o, q->R->tok, t->top_id[i], t->top_logprob[i]);
        cli_out_putc(&o, '}');
    }
    cli_out_str(&o, "]}");
    if (cli_out_failed(&o) || buf_add(&rep->lp, &rep->lp_len, &rep->lp_cap, o.buf, o.len)) {
        cli_error(opt.model, "out of memory");
        q->status = CLI_EXIT_TROUBLE;
        return -1;
    }
    return 0;
}

/* qwen_gen_io.cancel: SIGINT, or the output failed. */
static int q_cancel(void *user)
{
    (void)user;
    return interrupted || cli_out_failed(out);
}

/* Prints the input's ids (--tokenize).  Returns 0 or an exit status. */
static int print_ids(const struct run *R, const char *text, size_t len)
{
    qwen_ids ids = QWEN_IDS_INIT;
    int status = tokenize(R, text, len, &ids);
    if (!status && opt.json) {
        cli_out_str(out, "{\"prompt\": ");
        cli_out_json_str(out, text, len);
        cli_out_str(out, ", \"ids\": [");
        for (size_t i = 0; i < ids.n; i++) {
            if (i) cli_out_str(out, ", ");
            cli_out_i64(out, ids.v[i]);
        }
        cli_out_str(out, "], \"tokens\": [");
        for (size_t i = 0; i < ids.n; i++) {
            size_t n;
            const char *p = qwen_token_bytes(R->tok, ids.v[i], &n);
            if (i) cli_out_str(out, ", ");
            cli_out_json_str(out, p ? p : "", p ? n : 0);
        }
        cli_out_str(out, "]}\n");
    } else if (!status) {
        for (size_t i = 0; i < ids.n; i++) {
            if (i) cli_out_putc(out, ' ');
            cli_out_i64(out, ids.v[i]);
        }
        cli_out_putc(out, '\n');
    }
    qwen_ids_free(&ids);
    return status;
}

/* Prints the top logits after the prompt (--logits), and counts the
 * prompt into *t.  Returns 0 or an exit status. */
static int print_logits(const struct run *R, const char *text, size_t len, qwen_gen_totals *t)
{
    gguf_error err = {0};
    qwen_ids ids = QWEN_IDS_INIT;
    int status = len ? tokenize(R, text, len, &ids) : 0;
    if (!status && ids.n) {
        const float *logits;
        double t0 = now();
        if (qwen_prompt_logits(R->ctx, 0, ids.v, ids.n, &logits, &err) != GGUF_OK) {
            cli_message(err.message);
            status = CLI_EXIT_TROUBLE;
        } else {
            t->prompt_s += now() - t0;
            t->prompt_tokens += ids.n;
            if (opt.json) {
                cli_out_str(out, "{\"prompt\": ");
                cli_out_json_str(out, text, len);
                cli_out_str(out, ", \"prompt_tokens\": ");
                cli_out_u64(out, ids.n);
                cli_out_str(out, ", \"logits\": [");
            }
            if (print_top_logits(R->tok, logits, (int32_t)R->model->config.n_vocab, opt.n_logits)) {
                cli_error(opt.model, "out of memory");
                status = CLI_EXIT_TROUBLE;
            }
            if (opt.json) cli_out_str(out, "]}\n");
        }
    }
    qwen_ids_free(&ids);
    return status;
}

/* Runs the conversations of the queue through the generator.  Returns 0
 * or an exit status after printing the error. */
static int generate(struct run *R, struct queue *q)
{
    gguf_error err = {0};
    qwen_gen_io io = {q_next, q_text, q_done, q_cancel, q, opt.n_logprobs ? q_token : NULL};
    if (opt.n_logprobs) {
        /* a token's entry: its text escaped (6 bytes a byte at most), its
         * bytes as numbers (5 a byte), numbers and names */
        q->scratch_cap = ((size_t)opt.n_logprobs + 1) * (qwen_tokenizer_max_bytes(R->tok) * 11 + 128);
        if (!(q->scratch = malloc(q->scratch_cap))) {
            cli_error(opt.model, "out of memory");
            return CLI_EXIT_TROUBLE;
        }
    }
    int st = qwen_generate(R->gen, &io, &err);
    if (q->status) return q->status;
    if (st == GGUF_E_IO) return 0; /* the output failed: cli_out_close() says so */
    if (st) {
        cli_message(err.message);
        return CLI_EXIT_TROUBLE;
    }
    return 0;
}

static void print_stats(const struct run *R, const qwen_gen_totals *extra)
{
    qwen_gen_totals t = R->gen ? qwen_generator_totals(R->gen) : (qwen_gen_totals){0, 0, 0, 0};
    t.prompt_tokens += extra->prompt_tokens;
    t.prompt_s += extra->prompt_s;
    cli_out_flush(out);
    if (R->ctx) {
        char dev[320];
        qwen_context_describe(R->ctx, dev, sizeof dev);
        fprintf(stderr, "device: %s\n", dev);
    }
    if (R->ctx) {
        qwen_memory m;
        qwen_context_memory(R->ctx, &m);
        const double mib = 1024.0 * 1024.0;
        struct rusage ru;
        double rss = getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss * 1024.0 / mib : 0.0;
        char how[80];
        if (m.device)
            snprintf(how, sizeof how, "copied to the device");
        else if (m.repacked)
            snprintf(how, sizeof how, "mapped, %.2f MiB of them repacked in memory", (double)m.repacked / mib);
        else
            snprintf(how, sizeof how, "mapped");
        fprintf(stderr, "memory: weights %.2f MiB (%s), KV cache %.2f MiB (F16), compute %.2f MiB, "
                "logits %.2f MiB", (double)m.weights / mib, how, (double)m.kv_cache / mib,
                (double)m.compute / mib, (double)m.host / mib);
        if (m.device) fprintf(stderr, ", device in use %.2f MiB", (double)m.device / mib);
        fprintf(stderr, "; peak RSS %.2f MiB\n", rss);
        fprintf(stderr, "memory bytes: weights %" PRIu64 ", kv_cache %" PRIu64 ", compute %" PRIu64
                ", host %" PRIu64 ", device %" PRIu64 ", repacked %" PRIu64 "\n", m.weights, m.kv_cache,
                m.compute, m.host, m.device, m.repacked);
    }
    fprintf(stderr, "load: %.2f s\n", R->load_s);
    fprintf(stderr, "prompt: %" PRIu64 " tokens, %.1f tok/s\n", t.prompt_tokens,
            t.prompt_s > 0 ? (double)t.prompt_tokens / t.prompt_s : 0.0);
    fprintf(stderr, "generation: %" PRIu64 " tokens, %.1f tok/s\n", t.gen_tokens,
            t.gen_s > 0 ? (double)t.gen_tokens / t.gen_s : 0.0);
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
    } else if (!opt.each_line && !opt.interactive) {
        in_name = "-";
        in_fd = 0;
    }

    struct run R;
    memset(&R, 0, sizeof R);
    struct queue q;
    memset(&q, 0, sizeof q);
    qwen_gen_totals extra = {0, 0, 0, 0}; /* --logits' prompt, for --stats */
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

    q.R = &R;
    q.text = input;
    q.text_len = in_len;
    q.limit = limit;
    if (opt.mode == MODE_TOKENIZE) {
        status = print_ids(&R, input, in_len);
    } else if (opt.mode == MODE_LOGITS) {
        status = print_logits(&R, input, in_len, &extra);
    } else if (opt.interactive) {
        struct chat_env ce = {R.gen, R.tok, opt.model, opt.system, R.chat_flags, R.n_ctx,
                              &interrupted, out};
        status = chat_run(&ce);
    } else if (opt.each_line || in_len > 0) {
        status = generate(&R, &q);
        if (!status && opt.prompt_cache) status = save_prompt_cache(&R);
        if (!status && q.read_status == -2) {
            too_long(&R, "-", q.line_no + 1, limit);
            status = CLI_EXIT_TROUBLE;
        } else if (!status && q.read_status == -1 && !interrupted) {
            cli_error("-", "%s", strerror(q.read_errno));
            status = CLI_EXIT_TROUBLE;
        }
    }
    if (opt.stats) print_stats(&R, &extra);
out:
    for (uint32_t i = 0; i < q.cap; i++) {
        free(q.replies[i].prompt);
        free(q.replies[i].text);
        free(q.replies[i].lp);
    }
    free(q.replies);
    free(q.scratch);
    free(opt.stop);
    free(q.line);
    free(input);
    qwen_generator_free(R.gen);
    qwen_grammar_free(R.grammar);
    qwen_context_free(R.ctx);
    qwen_tokenizer_free(R.tok);
    if (R.model) guard_input_forget_split(R.model->set);
    qwen_model_close(R.model);
    int wst = cli_out_close(out);
    if (status) return status;
    if (interrupted) return EXIT_INTERRUPTED;
    return wst;
}
