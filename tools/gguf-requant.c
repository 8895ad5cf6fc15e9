/*
 * gguf-requant -- rewrite chosen tensors of a GGUF file in another type,
 * copying everything else byte for byte.  See gguf-requant(1).
 *
 * The work is streamed: the output header is built from the input's KV
 * pairs and tensor directory, then tensors are converted (or copied) one
 * after the other in chunks of rows, so that memory use is bounded by a
 * few chunk buffers whatever the size of the model.
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "tools/cli.h"
#include "tools/guard.h"
#include "tools/mixture.h"
#include "tools/outset.h"
#include "tools/progress.h"
#include "tools/imatrix.h"
#include "tools/preset.h"

/* Provenance keys added to (or replaced in) every output.  The namespace is
 * the package's own, so that it cannot meet a key llama.cpp defines. */
#define KEY_TOOL "gguf_tools.requant.tool"
#define KEY_RULES "gguf_tools.requant.rules"
#define KEY_FILE_TYPE "general.file_type"

/* Elements converted per call of gguf_convert_rows(): bounds the buffers
 * (16 MiB of floats for --report) and keeps progress and signals prompt. */
#define CHUNK_ELEMENTS ((int64_t)1 << 22)
/* Bytes copied per write for tensors that are not converted. */
#define COPY_CHUNK ((size_t)8 << 20)

/* --type GLOB=TYPE */
struct type_rule {
    const char *glob;       /* points into a copy of the argument */
    uint32_t type;
};

struct options {
    int have_from, have_to;
    uint32_t from, to;
    struct type_rule *rules;    /* --type, in command-line order */
    size_t n_rules;
    const char **excludes;      /* --exclude */
    size_t n_excludes;
    char **given;               /* the rule options as given, for KEY_RULES */
    size_t n_given;
    long file_type;             /* --file-type, or -1 */
    const struct preset *preset; /* --preset, or NULL */
    struct preset_model pm;     /* --pure, --output-tensor-type, --token-embedding-type; the
                                 * model's facts, filled from the input */
    int strict, dry_run, report, json, quiet;
    int checksums;              /* --checksums */
    int threads;                /* 0: all cores */
    const char *imatrix_path;   /* --imatrix, or NULL */
    const char **im_include;    /* --include-weights */
    size_t n_im_include;
    const char **im_exclude;    /* --exclude-weights */
    size_t n_im_exclude;
    struct imatrix im;          /* the importance matrix read (im.n 0: none) */
    uint64_t split_tensors;     /* --split-max-tensors, or 0 */
    uint64_t split_bytes;       /* --split-max-size, or 0 */
    const char *in, *out;       /* out is NULL for a dry run without OUT */
};

/* What happens to one tensor. */
struct entry {
    const gguf_tensor *t;
    uint32_t shard;         /* the input shard that holds it */
    uint32_t to;            /* output type: t->type when the tensor is copied */
    uint32_t wanted;        /* type a rule asked for (differs from `to` when kept) */
    uint64_t bytes_after;
    const struct imatrix_entry *w;  /* its importance matrix entry, or NULL */
    char reason[160];       /* why a wanted conversion is not made, or "" */
    /* --report: sums over the tensor's elements */
    double sq_err, sq_in, max_err;
};

static cli_out *out = &cli_stdout;

static void usage(void)
{
    cli_out_printf(out,
        "Usage: %s [OPTION]... IN OUT\n"
        "Rewrite chosen tensors of the GGUF file IN in another type and write the\n"
        "result to OUT; every other tensor is copied byte for byte and every\n"
        "metadata pair is kept in order.  IN may be - (standard input) or a pipe;\n"
        "OUT may be - (standard output, not a terminal).  IN may be a shard of a\n"
        "split set: the whole set is read and written as one file (merged), or as\n"
        "a set with --split-max-*.\n"
        "\n"
        "Choosing tensors (an --exclude match wins, then the first matching --type,\n"
        "then --preset or --from/--to; tensors of one dimension are never converted):\n"
        "      --preset=NAME     the types llama-quantize gives each tensor for the file\n"
        "                        type NAME (Q4_K_M, Q8_0 ...; see gguf-requant(1)),\n"
        "                        best from F32, F16 or BF16\n"
        "      --pure            with --preset: every converted tensor the base type\n"
        "      --output-tensor-type=TYPE, --token-embedding-type=TYPE\n"
        "                        with --preset: the type of output.weight, of\n"
        "                        token_embd.weight\n"
        "      --imatrix=FILE    quantize with the importance matrix FILE, as\n"
        "                        llama-imatrix writes it (GGUF or .dat): the\n"
        "                        tensors it has an entry for (listed: those it lacks)\n"
        "      --include-weights=NAME, --exclude-weights=NAME\n"
        "                        use the matrix only for the tensors whose names\n"
        "                        contain NAME, or not for them (may be repeated)\n"
        "      --from=TYPE       convert every tensor of type TYPE ...\n"
        "      --to=TYPE         ... to type TYPE (both are needed)\n"
        "      --type=GLOB=TYPE  convert tensors whose names match GLOB to TYPE;\n"
        "                        may be repeated, the first match wins\n"
        "      --exclude=GLOB    never convert tensors whose names match GLOB;\n"
        "                        may be repeated\n"
        "      --strict          a tensor whose rows do not fit the target block\n"
        "                        size is an error (default: a warning, kept as is)\n"
        "      --file-type=NAME  set general.file_type to NAME (Q4_K_M, MOSTLY_Q8_0,\n"
        "                        15 ...) instead of the name of the new mixture\n"
        "\n"
        "Output:\n"
        "  -n, --dry-run         print the plan and the size change; write nothing\n"
        "                        (OUT may then be left out)\n"
        "      --report          print each converted tensor's RMSE and largest\n"
        "                        absolute error against its dequantized input\n"
        "  -j, --json            print the plan or report as one JSON document\n"
        "      --split-max-tensors=N\n"
        "                        write OUT as a split set (OUT m.gguf: files\n"
        "                        m-00001-of-0000K.gguf ...) of at most N tensors a file\n"
        "      --split-max-size=SIZE\n"
        "                        the same with at most SIZE bytes of tensor data a file\n"
        "                        (a tensor larger than SIZE alone); SIZE in bytes, or\n"
        "                        with K, M, G (powers of 1000, as llama-gguf-split)\n"
        "      --checksums       store the XXH3 checksum of each output tensor in the\n"
        "                        output's metadata, for gguf-verify (IN must be a\n"
        "                        file; converted tensors are converted twice)\n"
        "  -t, --threads=N       threads for the conversion (default: all cores)\n"
        "  -q, --quiet           no progress on the terminal\n"
        "  -h, --help            show this help and exit\n"
        "  -V, --version         show the version and exit\n"
        "\n"
        "TYPE is a tensor type name (q4_k, Q8_0, f16 ...).  GLOB is a shell pattern\n"
        "on tensor names ('blk.*.ffn_down.weight').\n"
        "\n"
        "Exit status: 0 success, 2 trouble (usage, an unreadable or invalid input,\n"
        "an input that shrinks while it is read, an output that cannot be written,\n"
        "a --strict violation).  No output is left behind on trouble.\n",
        cli_prog);
}

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

/* Looks up a type for --from/--to/--type.  Returns 0, or -1 after a usage
 * message. */
static int parse_type(const char *opt, const char *name, uint32_t *type)
{
    if (gguf_type_parse(name, type) != GGUF_OK) {
        cli_usage_error("%s: unknown tensor type '%s'", opt, name);
        return -1;
    }
    return 0;
}

/* --file-type: a file type name (with or without MOSTLY_, any case) or a
 * number.  Returns the value or -1. */
static long parse_file_type(const char *s)
{
    char *end;
    if (*s >= '0' && *s <= '9') {
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        return errno || *end || v > UINT32_MAX ? -1 : (long)v;
    }
    if (strncasecmp(s, "MOSTLY_", 7) == 0) s += 7;
    for (uint32_t v = 0; v <= 1024; v++) {
        const char *n = gguf_file_type_name(v);
        if (n && strcasecmp(n, s) == 0) return (long)v;
    }
    return -1;
}

/* Records a rule option as given, "--opt=value", for KEY_RULES.  Returns
 * 0, or -1 when out of memory. */
static int remember(struct options *o, const char *opt, const char *value)
{
    size_t n = strlen(opt) + strlen(value) + 2;
    char *s = malloc(n);
    if (!s) return -1;
    if (*value) snprintf(s, n, "%s=%s", opt, value);
    else snprintf(s, n, "%s", opt);
    o->given[o->n_given++] = s;
    return 0;
}

enum {
    OPT_FROM = 256, OPT_TO, OPT_TYPE, OPT_EXCLUDE, OPT_STRICT, OPT_FILE_TYPE, OPT_REPORT,
    OPT_CHECKSUMS, OPT_SPLIT_TENSORS, OPT_SPLIT_SIZE, OPT_PRESET, OPT_PURE, OPT_OUTPUT_TYPE,
    OPT_EMBD_TYPE, OPT_IMATRIX, OPT_INCLUDE_WEIGHTS, OPT_EXCLUDE_WEIGHTS
};

/* A --split-max-size value: digits, then K, M or G (powers of 1000) or
 * nothing (bytes), into *value.  Returns 0, or -1 for anything else, 0 or
 * an overflow. */
static int parse_size(const char *s, uint64_t *value)
{
    uint64_t v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10) return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (p == s) return -1;
    uint64_t mul = 1;
    if (*p == 'K') mul = 1000, p++;
    else if (*p == 'M') mul = 1000 * 1000, p++;
    else if (*p == 'G') mul = 1000 * 1000 * 1000, p++;
    if (*p || v == 0 || v > UINT64_MAX / mul) return -1;
    *value = v * mul;
    return 0;
}

static const struct option long_options[] = {
    { "from", required_argument, NULL, OPT_FROM },
    { "to", required_argument, NULL, OPT_TO },
    { "type", required_argument, NULL, OPT_TYPE },
    { "exclude", required_argument, NULL, OPT_EXCLUDE },
    { "strict", no_argument, NULL, OPT_STRICT },
    { "file-type", required_argument, NULL, OPT_FILE_TYPE },
    { "dry-run", no_argument, NULL, 'n' },
    { "report", no_argument, NULL, OPT_REPORT },
    { "checksums", no_argument, NULL, OPT_CHECKSUMS },
    { "json", no_argument, NULL, 'j' },
    { "split-max-tensors", required_argument, NULL, OPT_SPLIT_TENSORS },
    { "preset", required_argument, NULL, OPT_PRESET },
    { "pure", no_argument, NULL, OPT_PURE },
    { "output-tensor-type", required_argument, NULL, OPT_OUTPUT_TYPE },
    { "token-embedding-type", required_argument, NULL, OPT_EMBD_TYPE },
    { "imatrix", required_argument, NULL, OPT_IMATRIX },
    { "include-weights", required_argument, NULL, OPT_INCLUDE_WEIGHTS },
    { "exclude-weights", required_argument, NULL, OPT_EXCLUDE_WEIGHTS },
    { "split-max-size", required_argument, NULL, OPT_SPLIT_SIZE },
    { "threads", required_argument, NULL, 't' },
    { "quiet", no_argument, NULL, 'q' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 }
};

/* Parses the command line into *o, whose arrays have room for argc
 * entries.  Returns -1 to go on, or the exit status for main to return at
 * once (after --help, --version or a usage error). */
static int parse_options(int argc, char **argv, struct options *o)
{
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":njt:qhV", long_options, NULL)) != -1) {
        switch (c) {
        case OPT_FROM:
            if (parse_type("--from", optarg, &o->from)) return CLI_EXIT_TROUBLE;
            if (!gguf_can_dequantize(o->from))
                return cli_usage_error("--from: cannot convert from %s", gguf_type_str(o->from));
            o->have_from = 1;
            if (remember(o, "--from", optarg)) goto nomem;
            break;
        case OPT_TO:
            if (parse_type("--to", optarg, &o->to)) return CLI_EXIT_TROUBLE;
            if (!gguf_can_quantize(o->to))
                return cli_usage_error("--to: cannot convert to %s", gguf_type_str(o->to));
            o->have_to = 1;
            if (remember(o, "--to", optarg)) goto nomem;
            break;
        case OPT_TYPE: {
            const char *eq = strrchr(optarg, '=');
            if (!eq || eq == optarg || !eq[1])
                return cli_usage_error("--type: expected GLOB=TYPE, got '%s'", optarg);
            struct type_rule *r = &o->rules[o->n_rules];
            if (parse_type("--type", eq + 1, &r->type)) return CLI_EXIT_TROUBLE;
            if (!gguf_can_quantize(r->type))
                return cli_usage_error("--type: cannot convert to %s", gguf_type_str(r->type));
            char *glob = strndup(optarg, (size_t)(eq - optarg));
            if (!glob) goto nomem;
            r->glob = glob;
            o->n_rules++;
            if (remember(o, "--type", optarg)) goto nomem;
            break;
        }
        case OPT_EXCLUDE:
            o->excludes[o->n_excludes++] = optarg;
            if (remember(o, "--exclude", optarg)) goto nomem;
            break;
        case OPT_STRICT: o->strict = 1; break;
        case OPT_PRESET:
            if (!(o->preset = preset_find(optarg)))
                return cli_usage_error("--preset: unknown file type '%s' (%s)", optarg, preset_names());
            if (remember(o, "--preset", optarg)) goto nomem;
            break;
        case OPT_PURE:
            o->pm.pure = 1;
            if (remember(o, "--pure", "")) goto nomem;
            break;
        case OPT_OUTPUT_TYPE:
        case OPT_EMBD_TYPE: {
            const char *opt = c == OPT_OUTPUT_TYPE ? "--output-tensor-type" : "--token-embedding-type";
            uint32_t *t = c == OPT_OUTPUT_TYPE ? &o->pm.output_type : &o->pm.embd_type;
            if (parse_type(opt, optarg, t)) return CLI_EXIT_TROUBLE;
            if (!gguf_can_quantize(*t))
                return cli_usage_error("%s: cannot convert to %s", opt, gguf_type_str(*t));
            if (remember(o, opt, optarg)) goto nomem;
            break;
        }
        case OPT_IMATRIX:
            o->imatrix_path = optarg;
            if (remember(o, "--imatrix", optarg)) goto nomem;
            break;
        case OPT_INCLUDE_WEIGHTS:
        case OPT_EXCLUDE_WEIGHTS:
            if (c == OPT_INCLUDE_WEIGHTS) o->im_include[o->n_im_include++] = optarg;
            else o->im_exclude[o->n_im_exclude++] = optarg;
            if (remember(o, c == OPT_INCLUDE_WEIGHTS ? "--include-weights" : "--exclude-weights", optarg))
                goto nomem;
            break;
        case OPT_FILE_TYPE:
            o->file_type = parse_file_type(optarg);
            if (o->file_type < 0)
                return cli_usage_error("--file-type: unknown file type '%s'", optarg);
            if (remember(o, "--file-type", optarg)) goto nomem;
            break;
        case 'n': o->dry_run = 1; break;
        case OPT_REPORT: o->report = 1; break;
        case OPT_CHECKSUMS: o->checksums = 1; break;
        case OPT_SPLIT_TENSORS:
            if (parse_size(optarg, &o->split_tensors) || strpbrk(optarg, "KMG"))
                return cli_usage_error("--split-max-tensors: invalid count '%s' (a positive "
                                       "number)", optarg);
            break;
        case OPT_SPLIT_SIZE:
            if (parse_size(optarg, &o->split_bytes))
                return cli_usage_error("--split-max-size: invalid size '%s' (bytes, or a "
                                       "number with K, M or G)", optarg);
            break;
        case 'j': o->json = 1; break;
        case 't': {
            char *end;
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || v < 0 || v > 4096)
                return cli_usage_error("-t: invalid thread count '%s' (0 to 4096; 0: all cores)",
                                       optarg);
            o->threads = (int)v;
            break;
        }
        case 'q': o->quiet = 1; break;
        default:        /* -h, -V, usage errors */
            return cli_getopt_default(c, argv, usage);
        }
    }
    int n_args = argc - optind;
    if (n_args < 1 || n_args < 2 - o->dry_run)
        return cli_usage_error(o->dry_run ? "missing IN" : "missing IN or OUT");
    if (n_args > 2) return cli_usage_error("unexpected argument '%s'", argv[optind + 2]);
    o->in = argv[optind];
    o->out = n_args == 2 ? argv[optind + 1] : NULL;
    if (o->have_from != o->have_to)
        return cli_usage_error(o->have_from ? "--from needs --to" : "--to needs --from");
    if (o->preset && o->have_from) return cli_usage_error("--preset and --from/--to cannot be combined");
    if (!o->preset && (o->pm.pure || o->pm.output_type != GGUF_T_COUNT || o->pm.embd_type != GGUF_T_COUNT))
        return cli_usage_error("--pure, --output-tensor-type and --token-embedding-type go with --preset");
    if ((o->n_im_include || o->n_im_exclude) && !o->imatrix_path)
        return cli_usage_error("--include-weights and --exclude-weights go with --imatrix");
    if (o->n_im_include && o->n_im_exclude)
        return cli_usage_error("--include-weights and --exclude-weights cannot be combined");
    uint32_t in_count = 1;
    const int in_set = gguf_split_prefix(o->in, NULL, &in_count) && in_count > 1;
    if (!o->have_from && !o->n_rules && o->file_type < 0 && !o->split_tensors && !o->split_bytes &&
        !in_set && !o->preset)
        return cli_usage_error("nothing to do: give --preset, --from and --to, --type, --file-type or "
                               "--split-max-*");
    if ((o->split_tensors || o->split_bytes) && o->out && strcmp(o->out, "-") == 0)
        return cli_usage_error("--split-max-* write files: OUT cannot be '-'");
    if (!o->dry_run && strcmp(o->out, "-") == 0 && (o->report || o->json))
        return cli_usage_error("--report and --json print to standard output, "
                               "which OUT '-' takes");
    return -1;

nomem:
    cli_error(NULL, "out of memory");
    return CLI_EXIT_TROUBLE;
}

/* ------------------------------------------------------------------------ */
/* The plan                                                                  */

/* The type the options ask for tensor t (t->type when none does). */
static uint32_t wanted_type(const struct options *o, const gguf_tensor *t)
{
    if (o->preset) {
        for (size_t i = 0; i < o->n_excludes; i++)
            if (cli_glob_match(o->excludes[i], t->name.ptr, t->name.len)) return t->type;
        for (size_t i = 0; i < o->n_rules; i++)
            if (cli_glob_match(o->rules[i].glob, t->name.ptr, t->name.len)) return o->rules[i].type;
        return preset_tensor_type(o->preset, &o->pm, t->name.ptr, t->name.len, t->n_dims, t->ne[0], t->type);
    }
    for (size_t i = 0; i < o->n_excludes; i++)
        if (cli_glob_match(o->excludes[i], t->name.ptr, t->name.len)) return t->type;
    for (size_t i = 0; i < o->n_rules; i++)
        if (cli_glob_match(o->rules[i].glob, t->name.ptr, t->name.len)) return o->rules[i].type;
    if (o->have_from && t->type == o->from) return o->to;
    return t->type;
}

/* Decides what happens to tensor t: e->to is the output type; when a
 * conversion that was asked for cannot be made, e->reason says why and
 * e->to stays t->type. */
static void plan_tensor(const struct options *o, const gguf_tensor *t, struct entry *e)
{
    memset(e, 0, sizeof *e);
    e->t = t;
    e->to = e->wanted = t->type;
    e->bytes_after = t->size;
    uint32_t want = wanted_type(o, t);
    if (want == t->type || t->n_dims < 2) return;  /* 1-D: norms, biases */
    e->wanted = want;
    const gguf_type_info *ti = gguf_type_get(want);
    if (!gguf_can_dequantize(t->type)) {
        const char *tn = gguf_type_str(t->type);
        snprintf(e->reason, sizeof e->reason, "cannot convert from %s", tn ? tn : "its type");
        return;
    }
    if (t->ne[0] % ti->block_size != 0) {
        snprintf(e->reason, sizeof e->reason,
                 "row length %llu is not a multiple of %u, the block size of %s",
                 (unsigned long long)t->ne[0], ti->block_size, ti->name);
        return;
    }
    e->to = want;
    e->bytes_after = t->n_elements ? gguf_row_bytes(want, t->ne[0]) * (t->n_elements / t->ne[0])
                                   : 0;
}

/* A tensor name as a quoted, terminal-safe string for messages. */
static const char *quoted(char *buf, size_t n, const gguf_tensor *t)
{
    char esc[200];
    cli_text_escape(esc, sizeof esc, t->name.ptr, t->name.len);
    snprintf(buf, n, "'%s'", esc);
    return buf;
}

/* Plans every tensor of f into entries[].  Reports the tensors kept against
 * a rule (warnings, or errors with --strict) and what this input cannot do.
 * Returns 0, or -1 when the run must stop (after reporting). */
static int make_plan(const struct options *o, const gguf_split *set, struct entry *entries)
{
    uint64_t n = gguf_split_tensor_count(set);
    const gguf_file *f0 = gguf_split_shard(set, 0);
    /* (a stream is always a set of one) */
    int stream = gguf_is_stream(f0);
    int fatal = 0;
    uint64_t prev_end = 0, prev = UINT64_MAX;
    char q[256], q2[256];
    for (uint64_t i = 0; i < n; i++) {
        uint32_t sh = 0;
        const gguf_tensor *t = gguf_split_tensor_at(set, i, &sh);
        const gguf_file *f = gguf_split_shard(set, sh);
        struct entry *e = &entries[i];
        plan_tensor(o, t, e);
        e->shard = sh;
        if (e->reason[0]) {
            if (o->strict) {
                cli_error(gguf_name(f), "tensor %llu %s: %s (--strict)", (unsigned long long)i,
                          quoted(q, sizeof q, t), e->reason);
                fatal = 1;
            } else {
                cli_error(gguf_name(f), "warning: tensor %llu %s: %s; left as %s",
                          (unsigned long long)i, quoted(q, sizeof q, t), e->reason,
                          gguf_type_str(t->type));
            }
        }
        if (memchr(t->name.ptr, '\0', t->name.len)) {
            cli_error(gguf_name(f), "tensor %llu %s: the name holds a NUL byte, which the output "
                      "cannot", (unsigned long long)i, quoted(q, sizeof q, t));
            fatal = 1;
        }
        if (e->to != t->type && gguf_byte_order(f) == GGUF_BIG_ENDIAN) {
            cli_error(gguf_name(f), "tensor %llu %s: converting tensors of a big-endian file is "
                      "not supported", (unsigned long long)i, quoted(q, sizeof q, t));
            fatal = 1;
        }
        /* A stream is read once, in offset order, and the output is written in
         * directory order: the two must agree. */
        if (stream && t->size > 0) {
            if (t->offset < prev_end) {
                const gguf_tensor *p = gguf_split_tensor_at(set, prev, NULL);
                cli_error(gguf_name(f), "tensor %llu %s: its data (at byte %llu) comes before "
                          "that of tensor %llu %s; a stream can only be rewritten when tensor "
                          "data is in directory order: give a file instead", (unsigned long long)i,
                          quoted(q, sizeof q, t), (unsigned long long)t->file_offset,
                          (unsigned long long)prev, quoted(q2, sizeof q2, p));
                return -1;
            }
            prev_end = t->offset + t->size;
            prev = i;
        }
    }
    return fatal ? -1 : 0;
}

/* Gives each converted tensor its entry of the importance matrix: one
 * value per element of a row (of each 2-D slice of a 3-D tensor).  An
 * entry of another size is an error, except for token_embd.weight (as in
 * llama-quantize: a matrix never has the embedding's size); the tensors
 * the matrix lacks are listed.  Returns 0, or -1 after a message. */
static int attach_imatrix(const struct options *o, uint64_t n, struct entry *entries)
{
    const struct imatrix *im = &o->im;
    uint64_t n_lacking = 0;
    char q[256];
    for (uint64_t i = 0; i < n; i++) {
        struct entry *e = &entries[i];
        const gguf_tensor *t = e->t;
        if (e->to == t->type || !gguf_quantize_uses_weights(e->to)) continue;
        struct imatrix_entry *m = imatrix_find(im, t->name.ptr, t->name.len);
        if (!m) {
            n_lacking++;
            continue;
        }
        const uint64_t want = t->ne[0] * t->ne[2];
        if (m->n != want || t->ne[3] != 1) {
            if (t->name.len == 17 && memcmp(t->name.ptr, "token_embd.weight", 17) == 0) {
                n_lacking++;
                continue;
            }
            cli_error(im->path, "the entry for tensor %llu %s has %llu values; the tensor's rows "
                      "need %llu", (unsigned long long)i, quoted(q, sizeof q, t),
                      (unsigned long long)m->n, (unsigned long long)want);
            return -1;
        }
        m->used = 1;
        e->w = m;
    }
    if (n_lacking && !o->quiet) {
        cli_error(im->path, "note: %llu tensors quantized without the importance matrix (it has no "
                  "entry for them):", (unsigned long long)n_lacking);
        for (uint64_t i = 0; i < n; i++) {
            const struct entry *e = &entries[i];
            if (e->to != e->t->type && gguf_quantize_uses_weights(e->to) && !e->w)
                fprintf(stderr, "  %s\n", quoted(q, sizeof q, e->t));
        }
    }
    return 0;
}

/* The file type of the output: --file-type, else the name of the new
 * mixture when some tensor changes type.  Returns it, or -1 to leave
 * general.file_type as it is.  *unnamed is set when a mixture changed but
 * has no name. */
static long output_file_type(const struct options *o, uint64_t n, const struct entry *entries,
                             int *unnamed)
{
    *unnamed = 0;
    if (o->file_type >= 0) return o->file_type;
    if (o->preset) return o->preset->file_type;
    int changed = 0;
    for (uint64_t i = 0; i < n; i++) changed |= entries[i].to != entries[i].t->type;
    if (!changed) return -1;
    struct mixture_tensor *m = malloc((size_t)(n ? n : 1) * sizeof *m);
    if (!m) return -1;
    for (uint64_t i = 0; i < n; i++) {
        const gguf_tensor *t = entries[i].t;
        m[i].name = t->name.ptr;
        m[i].name_len = t->name.len;
        m[i].type = entries[i].to;
        m[i].n_dims = t->n_dims;
        m[i].ne0 = t->ne[0];
        m[i].n_elements = t->n_elements;
    }
    long ft = mixture_file_type(m, (size_t)n);
    free(m);
    if (ft < 0) *unnamed = 1;
    return ft;
}

static int key_is(const gguf_kv *kv, const char *key)
{
    size_t n = strlen(key);
    return kv->key.len == n && memcmp(kv->key.ptr, key, n) == 0;
}

/* One output file: tensors i0 .. i1 - 1; of a split output, shard no of
 * count. */
struct shard_out {
    uint64_t i0, i1;
    uint32_t no, count;
};

/* The split keys, which the output writes anew (or, merged, not at all). */
static int is_split_key(const gguf_kv *kv)
{
    return key_is(kv, "split.no") || key_is(kv, "split.count") || key_is(kv, "split.tensors.count");
}

/* The keys llama-quantize writes about the importance matrix it used: the
 * file and first dataset named (at most 127 bytes, as there), the entries
 * and the chunks it was computed on (when known). */
static int add_imatrix_keys(gguf_writer *w, const struct imatrix *im, gguf_error *err)
{
    size_t n = strlen(im->path);
    int rc = gguf_writer_add_str(w, "quantize.imatrix.file", im->path, n < 127 ? n : 127, err);
    if (!rc && im->dataset) {
        n = strlen(im->dataset);
        rc = gguf_writer_add_str(w, "quantize.imatrix.dataset", im->dataset, n < 127 ? n : 127, err);
    }
    if (!rc) rc = gguf_writer_add_u32(w, "quantize.imatrix.entries_count", (uint32_t)im->n, err);
    if (!rc && im->chunks > 0)
        rc = gguf_writer_add_u32(w, "quantize.imatrix.chunks_count", (uint32_t)im->chunks, err);
    return rc;
}

/* Fills writer w with the header of output file `so` (split: not NULL):
 * the input's version and byte order; in the first (or only) file, the KV
 * pairs of the input's first shard in order (general.file_type and the
 * provenance keys replaced in place, or appended when absent; its split
 * keys left out); in every file of a split output, its split keys; and
 * the tensor directory of entries i0 .. i1 - 1 with the planned types.
 * sums, when not NULL, are the XXH3 of all n output tensors; keep_sums
 * says that the input's embedded checksums still hold for the output.
 * Returns GGUF_OK or the writer's status (err filled). */
static int build_header(gguf_writer *w, const struct options *o, const gguf_file *f,
                        const struct entry *entries, uint64_t n, uint64_t i0, uint64_t i1,
                        long file_type, const uint64_t *sums, int keep_sums,
                        const struct shard_out *so, gguf_error *err)
{
    char tool[64];
    snprintf(tool, sizeof tool, "gguf-requant %s", PACKAGE_VERSION);
    gguf_str *rules = malloc((o->n_given ? o->n_given : 1) * sizeof *rules);
    if (!rules) {
        snprintf(err->message, sizeof err->message, "out of memory");
        return err->status = GGUF_E_NOMEM;
    }
    for (size_t i = 0; i < o->n_given; i++) {
        rules[i].ptr = o->given[i];
        rules[i].len = strlen(o->given[i]);
    }
    int rc, have_ft = 0, have_tool = 0, have_rules = 0, have_sums = 0;
    const int first = !so || so->no == 0;
    const uint64_t *my_sums = sums ? sums + i0 : NULL;
    if ((rc = gguf_writer_set_version(w, gguf_version(f), err))) goto done;
    if ((rc = gguf_writer_set_byte_order(w, gguf_byte_order(f), err))) goto done;
    uint64_t n_kv = first ? gguf_kv_count(f) : 0;
    for (uint64_t i = 0; i < n_kv; i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (is_split_key(kv)) continue;
        if (o->im.n && kv->key.len > 17 && memcmp(kv->key.ptr, "quantize.imatrix.", 17) == 0)
            continue; /* an earlier quantization's: ours follow */
        if (key_is(kv, KEY_FILE_TYPE) && file_type >= 0) {
            rc = gguf_writer_add_u32(w, KEY_FILE_TYPE, (uint32_t)file_type, err);
            have_ft = 1;
        } else if (key_is(kv, KEY_TOOL)) {
            rc = gguf_writer_add_str(w, KEY_TOOL, tool, strlen(tool), err);
            have_tool = 1;
        } else if (key_is(kv, KEY_RULES)) {
            rc = gguf_writer_add_str_array(w, KEY_RULES, rules, o->n_given, err);
            have_rules = 1;
        } else if (key_is(kv, GGUF_KEY_TENSOR_XXH3)) {
            /* New checksums in place of the old; old ones stay only while
             * they are those of the output's tensors. */
            if (my_sums)
                rc = gguf_writer_add_array(w, GGUF_KEY_TENSOR_XXH3, GGUF_VT_UINT64, my_sums, i1 - i0, err);
            else if (keep_sums) rc = gguf_writer_copy_kv(w, kv, err);
            have_sums = 1;
        } else {
            rc = gguf_writer_copy_kv(w, kv, err);
        }
        if (rc) goto done;
    }
    if (first && !have_ft && file_type >= 0 &&
        (rc = gguf_writer_add_u32(w, KEY_FILE_TYPE, (uint32_t)file_type, err)))
        goto done;
    if (first && !have_tool && (rc = gguf_writer_add_str(w, KEY_TOOL, tool, strlen(tool), err)))
        goto done;
    if (first && !have_rules && (rc = gguf_writer_add_str_array(w, KEY_RULES, rules, o->n_given, err)))
        goto done;
    if (first && o->im.n && (rc = add_imatrix_keys(w, &o->im, err))) goto done;
    if (my_sums && !have_sums &&
        (rc = gguf_writer_add_array(w, GGUF_KEY_TENSOR_XXH3, GGUF_VT_UINT64, my_sums, i1 - i0, err)))
        goto done;
    if (so && ((rc = gguf_writer_add_u16(w, "split.no", (uint16_t)so->no, err)) ||
               (rc = gguf_writer_add_u16(w, "split.count", (uint16_t)so->count, err)) ||
               (rc = gguf_writer_add_i32(w, "split.tensors.count", (int32_t)n, err))))
        goto done;
    for (uint64_t i = i0; i < i1 && !rc; i++) {
        const gguf_tensor *t = entries[i].t;
        char *name = strndup(t->name.ptr, t->name.len);
        if (!name) {
            snprintf(err->message, sizeof err->message, "out of memory");
            rc = err->status = GGUF_E_NOMEM;
            break;
        }
        rc = gguf_writer_add_tensor(w, name, entries[i].to, t->n_dims, t->ne, err);
        free(name);
    }
done:
    free(rules);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Progress (stderr, only on a terminal)                                     */

struct progress {
    cli_progress line;
    uint64_t total, done;       /* input bytes */
    uint64_t n_tensors;
};

static void progress_show(struct progress *p, uint64_t i, const gguf_tensor *t, int force)
{
    if (!p->line.on) return;
    char esc[96];
    cli_text_escape(esc, sizeof esc, t->name.ptr, t->name.len < 60 ? t->name.len : 60);
    int pct = p->total ? (int)(100.0 * (double)p->done / (double)p->total) : 100;
    cli_progress_show(&p->line, force, "%3d%%  tensor %llu/%llu %s", pct,
                      (unsigned long long)(i + 1), (unsigned long long)p->n_tensors, esc);
}

static void progress_clear(struct progress *p)
{
    cli_progress_clear(&p->line);
}

/* ------------------------------------------------------------------------ */
/* Conversion                                                                */

/* Growable buffers shared by all tensors. */
struct buffers {
    void *src, *dst;
    float *fx, *fy;
    size_t src_cap, dst_cap, fx_cap, fy_cap;
};

static int grow(void **p, size_t *cap, size_t n)
{
    if (n <= *cap) return 0;
    void *q = realloc(*p, n);
    if (!q) return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* The run's state shared by the steps. */
struct run {
    const struct options *o;
    gguf_split *set;            /* the input */
    gguf_file *f;               /* its first shard (the only one of a stream) */
    gguf_writer *w;             /* NULL for a dry run with --report */
    /* --checksums: the output tensors' XXH3, computed by a first pass that
     * writes nothing (prepass) and checked again while writing. */
    gguf_hasher *h;
    uint64_t *sums;
    int prepass;
    struct buffers b;
    struct progress prog;
    const struct outset *os;    /* the output files (their names in messages) */
    gguf_error err;
};

/* Reports a failure: the library's message, or `what` naming IN; a write
 * that failed because IN shrank under its mapping names IN. */
static void report_error(struct run *r, const char *fallback_file, int rc)
{
    progress_clear(&r->prog);
    if (guard_report_shrunk_input(&r->err)) return;
    if (!r->err.message[0])
        snprintf(r->err.message, sizeof r->err.message, "%s: %s", fallback_file,
                 gguf_strerror(rc));
    if (r->os) outset_name_message(r->os, r->err.message, sizeof r->err.message);
    cli_message(r->err.message);
}

/* The name of the input file that holds e's tensor. */
static const char *in_name(const struct run *r, const struct entry *e)
{
    return gguf_name(gguf_split_shard(r->set, e->shard));
}

/* Copies tensor e->t unchanged.  Returns 0 or -1 (reported). */
static int copy_tensor(struct run *r, uint64_t i, const struct entry *e)
{
    const gguf_tensor *t = e->t;
    uint64_t done = 0;
    while (done < t->size) {
        size_t k = t->size - done < COPY_CHUNK ? (size_t)(t->size - done) : COPY_CHUNK;
        const void *p;
        int rc;
        if (t->data) {
            p = (const unsigned char *)t->data + done;
        } else {
            if (grow(&r->b.src, &r->b.src_cap, COPY_CHUNK)) goto nomem;
            rc = gguf_read_data(r->f, t->file_offset + done, r->b.src, k, &r->err);
            if (rc) {
                report_error(r, gguf_name(r->f), rc);
                return -1;
            }
            p = r->b.src;
        }
        if (r->h) gguf_hasher_update(r->h, p, k);
        if (r->w && (rc = gguf_writer_write(r->w, p, k, &r->err))) {
            report_error(r, r->o->out, rc);
            return -1;
        }
        done += k;
        r->prog.done += k;
        progress_show(&r->prog, i, t, 0);
    }
    return 0;
nomem:
    progress_clear(&r->prog);
    cli_error(in_name(r, e), "out of memory");
    return -1;
}

/* Adds the errors of n converted values y against their input x. */
static void add_errors(struct entry *e, const float *x, const float *y, size_t n)
{
    double se = 0, si = 0, mx = e->max_err;
    for (size_t k = 0; k < n; k++) {
        double d = (double)y[k] - (double)x[k];
        se += d * d;
        si += (double)x[k] * (double)x[k];
        double a = fabs(d);
        if (a > mx || isnan(a)) mx = a;
    }
    e->sq_err += se;
    e->sq_in += si;
    e->max_err = mx;
}

/* Converts tensor e->t to e->to in chunks of rows and writes it (unless
 * dry).  With --report, also measures the error.  Returns 0 or -1
 * (reported). */
static int convert_tensor(struct run *r, uint64_t i, struct entry *e)
{
    const gguf_tensor *t = e->t;
    const struct options *o = r->o;
    int64_t ne0 = (int64_t)t->ne[0];
    if (ne0 == 0 || t->n_elements == 0) return 0;
    int64_t nrows = (int64_t)(t->n_elements / t->ne[0]);
    int64_t chunk = CHUNK_ELEMENTS / ne0;
    if (chunk < 1) chunk = 1;
    if (chunk > nrows) chunk = nrows;
    uint64_t src_row = gguf_row_bytes(t->type, (uint64_t)ne0);
    uint64_t dst_row = gguf_row_bytes(e->to, (uint64_t)ne0);
    if (grow(&r->b.dst, &r->b.dst_cap, (size_t)(dst_row * (uint64_t)chunk))) goto nomem;
    if (!t->data && grow(&r->b.src, &r->b.src_cap, (size_t)(src_row * (uint64_t)chunk))) goto nomem;
    const int report = o->report && !r->prepass;
    size_t fb = (size_t)chunk * (size_t)ne0 * sizeof(float);
    if (((report || e->w) && grow((void **)&r->b.fx, &r->b.fx_cap, fb)) ||
        (report && grow((void **)&r->b.fy, &r->b.fy_cap, fb)))
        goto nomem;
    for (int64_t row = 0; row < nrows; row += chunk) {
        int64_t k = nrows - row < chunk ? nrows - row : chunk;
        uint64_t in_bytes = src_row * (uint64_t)k, out_bytes = dst_row * (uint64_t)k;
        const void *src;
        int rc;
        if (t->data) {
            src = (const unsigned char *)t->data + src_row * (uint64_t)row;
        } else {
            rc = gguf_read_data(r->f, t->file_offset + src_row * (uint64_t)row, r->b.src,
                                (size_t)in_bytes, &r->err);
            if (rc) {
                report_error(r, gguf_name(r->f), rc);
                return -1;
            }
            src = r->b.src;
        }
        if (e->w) {
            /* through floats, each 2-D slice with its importance values */
            const int64_t ne1 = (int64_t)t->ne[1];
            rc = gguf_dequantize_rows(t->type, src, r->b.fx, k, ne0, o->threads);
            for (int64_t j = 0; j < k && !rc;) {
                const int64_t slice = (row + j) / ne1;
                int64_t m = (slice + 1) * ne1 - (row + j);
                if (m > k - j) m = k - j;
                unsigned char *dst = (unsigned char *)r->b.dst + dst_row * (uint64_t)j;
                rc = gguf_quantize_rows_weighted(e->to, r->b.fx + j * ne0, dst, m, ne0,
                                                 e->w->values + slice * ne0, o->threads);
                j += m;
            }
        } else {
            rc = gguf_convert_rows(t->type, src, e->to, r->b.dst, k, ne0, o->threads);
        }
        if (rc) {
            char q[256];
            progress_clear(&r->prog);
            cli_error(in_name(r, e), "tensor %llu %s: converting %s to %s failed: %s",
                      (unsigned long long)i, quoted(q, sizeof q, t), gguf_type_str(t->type),
                      gguf_type_str(e->to), gguf_strerror(rc));
            return -1;
        }
        if (report) {
            if ((!e->w && gguf_dequantize_rows(t->type, src, r->b.fx, k, ne0, o->threads)) ||
                gguf_dequantize_rows(e->to, r->b.dst, r->b.fy, k, ne0, o->threads)) {
                progress_clear(&r->prog);
                cli_error(in_name(r, e), "tensor %llu: dequantizing for --report failed",
                          (unsigned long long)i);
                return -1;
            }
            add_errors(e, r->b.fx, r->b.fy, (size_t)k * (size_t)ne0);
        }
        if (r->h) gguf_hasher_update(r->h, r->b.dst, (size_t)out_bytes);
        if (r->w && (rc = gguf_writer_write(r->w, r->b.dst, (size_t)out_bytes, &r->err))) {
            report_error(r, o->out, rc);
            return -1;
        }
        r->prog.done += in_bytes;
        progress_show(&r->prog, i, t, 0);
    }
    return 0;
nomem:
    progress_clear(&r->prog);
    cli_error(in_name(r, e), "out of memory");
    return -1;
}

/* Converts or copies tensors i0 .. i1 - 1 in directory order.  With
 * --checksums (r->h set), hashes each output tensor: the first pass
 * records the values for the header, the writing pass checks that it
 * wrote the same bytes.  Returns 0 or -1 (reported). */
static int process_tensors(struct run *r, struct entry *entries, uint64_t i0, uint64_t i1)
{
    for (uint64_t i = i0; i < i1; i++) {
        struct entry *e = &entries[i];
        progress_show(&r->prog, i, e->t, 1);
        if (r->h) gguf_hasher_reset(r->h);
        int rc = e->to == e->t->type ? (r->w || r->h ? copy_tensor(r, i, e) : 0)
                                     : convert_tensor(r, i, e);
        if (rc) return -1;
        if (r->h) {
            gguf_digest d;
            gguf_hasher_digest(r->h, &d);
            if (r->prepass) {
                r->sums[i] = gguf_digest_u64(&d);
            } else if (r->sums[i] != gguf_digest_u64(&d)) {
                char q[256];
                progress_clear(&r->prog);
                cli_error(in_name(r, e), "tensor %llu %s: converted twice for --checksums with "
                          "different results", (unsigned long long)i, quoted(q, sizeof q, e->t));
                return -1;
            }
        }
    }
    progress_clear(&r->prog);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Printing the plan and the report                                          */

struct totals {
    uint64_t n_converted, before, after;    /* converted tensors' bytes */
    uint64_t file_before, file_after;       /* all the files */
    long ft_before, ft_after;               /* -1: absent */
    uint32_t n_in, n_out;                   /* files read and written */
    int split_out;                          /* --split-max-* */
    const struct shard_out *shards;         /* [n_out] */
    const char *const *names;               /* [n_out] their names */
};

static void put_ft_text(long ft)
{
    if (ft < 0) {
        cli_out_str(out, "none");
        return;
    }
    const char *name = gguf_file_type_name((uint32_t)ft);
    cli_out_printf(out, "%ld (%s)", ft, name ? name : "unknown");
}

static void put_change(uint64_t before, uint64_t after)
{
    cli_out_printf(out, "%llu -> %llu bytes (", (unsigned long long)before,
                   (unsigned long long)after);
    if (after >= before) cli_out_printf(out, "+%llu", (unsigned long long)(after - before));
    else cli_out_printf(out, "-%llu", (unsigned long long)(before - after));
    if (before)
        cli_out_printf(out, ", %+.1f%%", 100.0 * ((double)after - (double)before) / (double)before);
    cli_out_str(out, ")\n");
}

/* The text plan (and report): a table of the converted tensors and the
 * totals. */
static void print_text(const struct options *o, uint64_t n, const struct entry *entries,
                       const struct totals *tt)
{
    size_t width = 6;
    for (uint64_t i = 0; i < n; i++) {
        if (entries[i].to == entries[i].t->type) continue;
        size_t wd = cli_text_width(entries[i].t->name.ptr, entries[i].t->name.len);
        if (wd > width) width = wd;
    }
    cli_out_str(out, "tensor");
    cli_out_pad(out, (long)(width - 6));
    cli_out_str(out, "  from     to       bytes before   bytes after");
    if (o->report) cli_out_str(out, "           rmse   max abs error");
    cli_out_putc(out, '\n');
    for (uint64_t i = 0; i < n; i++) {
        const struct entry *e = &entries[i];
        if (e->to == e->t->type) continue;
        cli_out_text_str(out, e->t->name.ptr, e->t->name.len, 0);
        cli_out_pad(out, (long)(width - cli_text_width(e->t->name.ptr, e->t->name.len)));
        cli_out_printf(out, "  %-7s  %-7s", gguf_type_str(e->t->type), gguf_type_str(e->to));
        cli_out_u64_w(out, e->t->size, 14);
        cli_out_u64_w(out, e->bytes_after, 14);
        if (o->report) {
            double cnt = (double)e->t->n_elements;
            cli_out_printf(out, "  %13.6g  %14.6g", cnt ? sqrt(e->sq_err / cnt) : 0.0, e->max_err);
        }
        cli_out_putc(out, '\n');
    }
    cli_out_printf(out, "converted %llu of %llu tensors: ", (unsigned long long)tt->n_converted,
                   (unsigned long long)n);
    put_change(tt->before, tt->after);
    cli_out_str(out, "file: ");
    put_change(tt->file_before, tt->file_after);
    cli_out_str(out, "general.file_type: ");
    put_ft_text(tt->ft_before);
    cli_out_str(out, " -> ");
    put_ft_text(tt->ft_after);
    cli_out_putc(out, '\n');
    if (tt->n_in > 1 || tt->n_out > 1 || tt->split_out)
        cli_out_printf(out, "files: %u -> %u\n", tt->n_in, tt->n_out);
}

static void json_type(uint32_t type)
{
    const char *s = gguf_type_str(type);
    if (s) {
        cli_out_putc(out, '"');
        cli_out_str(out, s);
        cli_out_putc(out, '"');
    } else {
        cli_out_str(out, "null");
    }
}

static void json_ft(const char *key, long ft)
{
    cli_out_printf(out, ",\n  \"%s\": ", key);
    if (ft < 0) cli_out_str(out, "null");
    else cli_out_printf(out, "%ld", ft);
    cli_out_printf(out, ",\n  \"%s_name\": ", key);
    const char *name = ft >= 0 ? gguf_file_type_name((uint32_t)ft) : NULL;
    if (name) cli_out_printf(out, "\"%s\"", name);
    else cli_out_str(out, "null");
}

/* The plan (and report) as one JSON document; see gguf-requant(1). */
static void print_json(const struct options *o, uint64_t n, const struct entry *entries,
                       const struct totals *tt)
{
    const char *in = o->in;
    cli_out_str(out, "{\n  \"input\": ");
    cli_out_json_str(out, in, strlen(in));
    cli_out_str(out, ",\n  \"output\": ");
    if (o->dry_run) cli_out_str(out, "null");
    else cli_out_json_str(out, o->out, strlen(o->out));
    cli_out_printf(out, ",\n  \"dry_run\": %s", o->dry_run ? "true" : "false");
    cli_out_printf(out, ",\n  \"tensor_count\": %llu", (unsigned long long)n);
    cli_out_str(out, ",\n  \"tensors\": [");
    int first = 1;
    for (uint64_t i = 0; i < n; i++) {
        const struct entry *e = &entries[i];
        if (e->to == e->t->type) continue;
        cli_out_str(out, first ? "\n    {\"index\": " : ",\n    {\"index\": ");
        first = 0;
        cli_out_u64(out, i);
        cli_out_str(out, ", \"name\": ");
        cli_out_json_str(out, e->t->name.ptr, e->t->name.len);
        cli_out_str(out, ", \"from\": ");
        json_type(e->t->type);
        cli_out_str(out, ", \"to\": ");
        json_type(e->to);
        cli_out_printf(out, ", \"elements\": %llu, \"bytes_before\": %llu, \"bytes_after\": %llu",
                       (unsigned long long)e->t->n_elements, (unsigned long long)e->t->size,
                       (unsigned long long)e->bytes_after);
        if (o->report) {
            double cnt = (double)e->t->n_elements;
            cli_out_str(out, ", \"rmse\": ");
            cli_out_f64(out, cnt ? sqrt(e->sq_err / cnt) : 0.0, 1);
            cli_out_str(out, ", \"max_abs_error\": ");
            cli_out_f64(out, e->max_err, 1);
            cli_out_str(out, ", \"input_rms\": ");
            cli_out_f64(out, cnt ? sqrt(e->sq_in / cnt) : 0.0, 1);
        }
        cli_out_putc(out, '}');
    }
    cli_out_str(out, first ? "]" : "\n  ]");
    cli_out_str(out, ",\n  \"kept\": [");
    first = 1;
    for (uint64_t i = 0; i < n; i++) {
        const struct entry *e = &entries[i];
        if (!e->reason[0]) continue;
        cli_out_str(out, first ? "\n    {\"index\": " : ",\n    {\"index\": ");
        first = 0;
        cli_out_u64(out, i);
        cli_out_str(out, ", \"name\": ");
        cli_out_json_str(out, e->t->name.ptr, e->t->name.len);
        cli_out_str(out, ", \"type\": ");
        json_type(e->t->type);
        cli_out_str(out, ", \"wanted\": ");
        json_type(e->wanted);
        cli_out_str(out, ", \"reason\": ");
        cli_out_json_str(out, e->reason, strlen(e->reason));
        cli_out_putc(out, '}');
    }
    cli_out_str(out, first ? "]" : "\n  ]");
    cli_out_printf(out, ",\n  \"converted_tensors\": %llu", (unsigned long long)tt->n_converted);
    cli_out_printf(out, ",\n  \"converted_bytes_before\": %llu", (unsigned long long)tt->before);
    cli_out_printf(out, ",\n  \"converted_bytes_after\": %llu", (unsigned long long)tt->after);
    cli_out_printf(out, ",\n  \"file_bytes_before\": %llu", (unsigned long long)tt->file_before);
    cli_out_printf(out, ",\n  \"file_bytes_after\": %llu", (unsigned long long)tt->file_after);
    json_ft("file_type_before", tt->ft_before);
    json_ft("file_type_after", tt->ft_after);
    cli_out_printf(out, ",\n  \"input_files\": %u", tt->n_in);
    cli_out_str(out, ",\n  \"output_files\": ");
    if (!tt->split_out) {
        cli_out_str(out, "null");
    } else {
        cli_out_putc(out, '[');
        for (uint32_t k = 0; k < tt->n_out; k++) {
            cli_out_str(out, k ? ",\n    {\"file\": " : "\n    {\"file\": ");
            cli_out_json_str(out, tt->names[k], strlen(tt->names[k]));
            cli_out_printf(out, ", \"first_tensor\": %llu, \"tensors\": %llu}",
                           (unsigned long long)tt->shards[k].i0,
                           (unsigned long long)(tt->shards[k].i1 - tt->shards[k].i0));
        }
        cli_out_str(out, "\n  ]");
    }
    cli_out_str(out, "\n}\n");
}

/* ------------------------------------------------------------------------ */

/* 1 when OUT is the file IN (same path, or same device and inode,
 * whatever the names), for refusing to overwrite the input. */
static int out_is_in(const char *in, const char *outp)
{
    struct stat si, so;
    int in_std = strcmp(in, "-") == 0, out_std = strcmp(outp, "-") == 0;
    if (in_std && out_std) return 0;
    if (!in_std && !out_std && strcmp(in, outp) == 0) return 1;
    if ((in_std ? fstat(0, &si) : stat(in, &si)) != 0) return 0;
    if ((out_std ? fstat(1, &so) : stat(outp, &so)) != 0) return 0;
    if (out_std && !S_ISREG(so.st_mode)) return 0;
    return si.st_dev == so.st_dev && si.st_ino == so.st_ino;
}

/* The output files: one (OUT), or with --split-max-* a split set, the
 * tensors taken in order, a file ending before the tensor that would pass
 * a limit (bytes: padded to the alignment; a tensor alone may pass it).
 * Returns the number, with *shards (to free), or 0 after a message. */
static uint32_t plan_shards(const struct options *o, const struct entry *entries, uint64_t n,
                            uint32_t align, struct shard_out **shards)
{
    const int split = o->split_tensors || o->split_bytes;
    uint64_t count = 1, t = 0, bytes = 0;
    struct shard_out *sh = NULL;
    for (int pass = 0; pass < 2; pass++) {
        if (pass && !(sh = calloc((size_t)count, sizeof *sh))) {
            cli_error(NULL, "out of memory");
            return 0;
        }
        uint64_t k = 0;
        t = bytes = 0;
        for (uint64_t i = 0; i < n && split; i++) {
            const uint64_t b = (entries[i].bytes_after + align - 1) / align * align;
            if (t > 0 && ((o->split_tensors && t >= o->split_tensors) ||
                          (o->split_bytes && bytes + b > o->split_bytes))) {
                if (pass) {
                    sh[k].i1 = i;
                    sh[k + 1].i0 = i;
                }
                k++;
                t = bytes = 0;
            }
            t++;
            bytes += b;
        }
        count = k + 1;
        if (count > GGUF_SPLIT_MAX) {
            cli_error(o->out, "%llu files: a split set has at most %u", (unsigned long long)count,
                      GGUF_SPLIT_MAX);
            return 0;
        }
    }
    sh[count - 1].i1 = n;
    for (uint64_t j = 0; j < count; j++) {
        sh[j].no = (uint32_t)j;
        sh[j].count = (uint32_t)count;
    }
    *shards = sh;
    return (uint32_t)count;
}

/* The whole run after option parsing.  Returns the exit status. */
static int requant(struct options *o)
{
    if (o->out && strcmp(o->out, "-") == 0 && !o->dry_run && cli_isatty(1)) {
        cli_error("(stdout)", "refusing to write binary data to a terminal");
        return CLI_EXIT_TROUBLE;
    }
    if (strcmp(o->in, "-") == 0 && cli_isatty(0)) {
        cli_error("-", "standard input is a terminal");
        return CLI_EXIT_TROUBLE;
    }

    struct run r;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.err.message[0] = '\0';
    /* Standard input is named "-" in messages, as in the other tools; a
     * shard of a split set brings its whole set. */
    int rc = strcmp(o->in, "-") == 0
                 ? guard_split_open_alone(&r.set, o->in, GGUF_OPEN_SEQUENTIAL, &r.err)
                 : guard_split_open(&r.set, o->in, GGUF_OPEN_SEQUENTIAL, &r.err);
    if (rc) {
        report_error(&r, o->in, rc);
        return CLI_EXIT_TROUBLE;
    }
    r.f = gguf_split_shard(r.set, 0);
    int status = CLI_EXIT_TROUBLE;
    struct totals tt = { 0 };
    struct shard_out *shards = NULL;
    struct outset os = {0};
    r.os = &os;
    uint32_t n_out = 0;
    gguf_writer *w = NULL;
    const uint64_t n = gguf_split_tensor_count(r.set);
    tt.n_in = gguf_split_count(r.set);
    struct entry *entries = calloc((size_t)(n ? n : 1), sizeof *entries);
    if (!entries) {
        cli_error(NULL, "out of memory");
        goto done;
    }
    if (o->preset) {
        /* what the preset's rules look at */
        gguf_str arch;
        char key[160];
        uint64_t v, kv_heads;
        o->pm.n_layer = 0;
        o->pm.n_gqa = 1;
        if (gguf_kv_str(r.f, "general.architecture", &arch, NULL) == GGUF_OK && arch.len < 100) {
            snprintf(key, sizeof key, "%.*s.block_count", (int)arch.len, arch.ptr);
            if (gguf_kv_uint(r.f, key, &v, NULL) == GGUF_OK && v <= UINT32_MAX) o->pm.n_layer = (uint32_t)v;
            snprintf(key, sizeof key, "%.*s.attention.head_count", (int)arch.len, arch.ptr);
            int have_heads = gguf_kv_uint(r.f, key, &v, NULL) == GGUF_OK;
            snprintf(key, sizeof key, "%.*s.attention.head_count_kv", (int)arch.len, arch.ptr);
            if (have_heads && gguf_kv_uint(r.f, key, &kv_heads, NULL) == GGUF_OK && kv_heads > 0 &&
                v / kv_heads <= UINT32_MAX)
                o->pm.n_gqa = (uint32_t)(v / kv_heads);
        }
        o->pm.tied = gguf_split_tensor_find(r.set, "output.weight", NULL) == NULL;
    }
    if (o->imatrix_path) {
        if (imatrix_load(&o->im, o->imatrix_path)) goto done;
        imatrix_filter(&o->im, o->im_include, o->n_im_include, o->im_exclude, o->n_im_exclude);
        if (o->im.n == 0) cli_error(o->imatrix_path, "warning: no entries left to use");
        o->pm.imatrix = o->im.n > 0;
    }
    if (make_plan(o, r.set, entries)) goto done;
    if (o->im.n && attach_imatrix(o, n, entries)) goto done;
    if (o->preset) {
        uint64_t requantized = 0;
        for (uint64_t i = 0; i < n; i++) {
            const uint32_t from = entries[i].t->type;
            if (entries[i].to != from && from != GGUF_T_F32 && from != GGUF_T_F16 && from != GGUF_T_BF16)
                requantized++;
        }
        if (requantized)
            cli_error(gguf_name(r.f), "warning: %llu tensors are quantized already: quantizing them "
                      "again loses precision (quantize from F32, F16 or BF16 when you can)",
                      (unsigned long long)requantized);
    }
    if (!(n_out = plan_shards(o, entries, n, gguf_alignment(r.f), &shards))) goto done;
    tt.n_out = n_out;
    tt.shards = shards;
    tt.split_out = o->split_tensors || o->split_bytes;
    if (outset_init(&os, o->out ? o->out : o->in, n_out, tt.split_out)) goto done;
    tt.names = (const char *const *)os.path;
    /* The input is never overwritten: no output may be an input file. */
    for (uint32_t k = 0; k < n_out && !o->dry_run; k++)
        for (uint32_t i = 0; i < tt.n_in; i++)
            if (out_is_in(tt.n_in == 1 ? o->in : gguf_split_path(r.set, i), os.path[k])) {
                cli_error(strcmp(os.path[k], "-") ? os.path[k] : "(stdout)",
                          "is the input file; write to another name (the input is never changed)");
                goto done;
            }

    uint64_t old_ft;
    tt.ft_before = gguf_kv_uint(r.f, KEY_FILE_TYPE, &old_ft, NULL) == GGUF_OK &&
                   old_ft <= UINT32_MAX ? (long)old_ft : -1;
    int unnamed, changed = 0;
    long ft = output_file_type(o, n, entries, &unnamed);
    tt.ft_after = ft >= 0 ? ft : tt.ft_before;
    if (unnamed)
        cli_error(gguf_name(r.f), "warning: no file type names the new mixture of tensor types; "
                  "general.file_type left as it was (see --file-type)");
    for (uint64_t i = 0; i < n; i++) {
        if (entries[i].to == entries[i].t->type) continue;
        changed = 1;
        tt.n_converted++;
        tt.before += entries[i].t->size;
        tt.after += entries[i].bytes_after;
    }
    /* The input's embedded checksums hold for an output of the same
     * tensors in one file. */
    const int keep_sums = !changed && tt.n_in == 1 && !tt.split_out;
    /* --checksums: the values go into the header, which is written first,
     * so a first pass computes them (a stream cannot be read twice). */
    if (o->checksums && !o->dry_run) {
        if (gguf_is_stream(r.f)) {
            cli_error(gguf_name(r.f), "--checksums needs IN to be a file: the checksums go into "
                      "the header, before the data, so IN is read twice");
            goto done;
        }
        r.sums = calloc((size_t)(n ? n : 1), sizeof *r.sums);
        r.h = gguf_hasher_new(GGUF_HASH_XXH3);
        if (!r.sums || !r.h) {
            cli_error(NULL, "out of memory");
            goto done;
        }
        cli_progress_init(&r.prog.line, !o->quiet);
        r.prog.n_tensors = n;
        for (uint64_t i = 0; i < n; i++) r.prog.total += entries[i].t->size;
        r.prepass = 1;
        if (process_tensors(&r, entries, 0, n)) goto done;
        r.prepass = 0;
        r.prog.done = 0;
    }

    cli_progress_init(&r.prog.line, !o->quiet);
    r.prog.n_tensors = n;
    r.prog.total = 0;
    for (uint64_t i = 0; i < n; i++) r.prog.total += entries[i].t->size;
    if (!o->dry_run) guard_output_catch();
    for (uint32_t k = 0; k < n_out; k++) {
        struct shard_out *so = &shards[k];
        if (!(w = gguf_writer_new())) {
            cli_error(NULL, "out of memory");
            goto done;
        }
        if ((rc = build_header(w, o, r.f, entries, n, so->i0, so->i1, ft, r.sums, keep_sums,
                               tt.split_out ? so : NULL, &r.err))) {
            /* The writer's messages here name the item, not a file. */
            cli_error(gguf_name(r.f), "cannot be rewritten: %s", r.err.message[0] ? r.err.message
                      : gguf_strerror(rc));
            goto done;
        }
        tt.file_after += gguf_writer_total_size(w);
        if (o->dry_run) {
            guard_output_free(w);
            w = NULL;
            continue;
        }
        if ((rc = guard_output_open(w, outset_target(&os, k), &r.err))) {
            report_error(&r, os.path[k], rc);
            goto done;
        }
        r.w = w;
        if (process_tensors(&r, entries, so->i0, so->i1)) goto done;
        if (k + 1 == n_out && (rc = gguf_read_to_end(r.f, &r.err))) {
            /* Read a stream to its end: the writer before us should not
             * see a broken pipe, and the size is known for the report. */
            report_error(&r, gguf_name(r.f), rc);
            goto done;
        }
        if ((rc = guard_output_finish(w, &r.err))) {
            report_error(&r, os.path[k], rc);
            goto done;
        }
        outset_done(&os, k);
        guard_output_free(w);
        r.w = w = NULL;
    }
    if (o->dry_run) {
        /* Nothing is written; --report still converts, in memory. */
        if (o->report && process_tensors(&r, entries, 0, n)) goto done;
        if ((rc = gguf_read_to_end(r.f, &r.err))) {
            report_error(&r, gguf_name(r.f), rc);
            goto done;
        }
    } else if (outset_place(&os)) {
        goto done;
    }
    for (uint32_t i = 0; i < tt.n_in; i++) tt.file_before += gguf_file_size(gguf_split_shard(r.set, i));
    if (o->json) print_json(o, n, entries, &tt);
    else if (o->report || o->dry_run) print_text(o, n, entries, &tt);
    status = CLI_EXIT_OK;

done:
    guard_output_free(w);
    free(shards);
    outset_free(&os);
    guard_split_close(r.set);
    free(entries);
    free(r.b.src);
    free(r.b.dst);
    free(r.b.fx);
    free(r.b.fy);
    gguf_hasher_free(r.h);
    free(r.sums);
    return status;
}

int main(int argc, char **argv)
{
    struct options o;
    memset(&o, 0, sizeof o);
    o.file_type = -1;
    o.pm.output_type = o.pm.embd_type = GGUF_T_COUNT;
    cli_set_prog("gguf-requant");
    guard_init();
    size_t na = (size_t)argc + 1;
    o.rules = calloc(na, sizeof *o.rules);
    o.excludes = calloc(na, sizeof *o.excludes);
    o.given = calloc(na, sizeof *o.given);
    o.im_include = calloc(na, sizeof *o.im_include);
    o.im_exclude = calloc(na, sizeof *o.im_exclude);
    int status;
    if (!o.rules || !o.excludes || !o.given || !o.im_include || !o.im_exclude) {
        cli_error(NULL, "out of memory");
        status = CLI_EXIT_TROUBLE;
    } else {
        status = parse_options(argc, argv, &o);
        if (status < 0) {
            status = requant(&o);
            if (cli_out_close(out) != CLI_EXIT_OK) status = CLI_EXIT_TROUBLE;
        }
    }
    for (size_t i = 0; o.rules && i < o.n_rules; i++) free((char *)o.rules[i].glob);
    for (size_t i = 0; o.given && i < o.n_given; i++) free(o.given[i]);
    free(o.rules);
    free(o.excludes);
    free(o.given);
    free(o.im_include);
    free(o.im_exclude);
    imatrix_free(&o.im);
    return status;
}
