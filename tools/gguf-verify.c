/*
 * gguf-verify -- check that GGUF files are intact: their structure, their
 * checksums against a manifest or against checksums embedded in their
 * metadata, and (with --model) that a model is complete.  See gguf-verify(1).
 *
 * Every file is read once: gguf_hash_file() hashes the whole input, the
 * metadata and each tensor in one pass in offset order, from the mapping
 * or, for a pipe, as the bytes stream past.
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "infer/model.h"
#include "tools/cli.h"
#include "tools/guard.h"
#include "tools/manifest.h"
#include "tools/progress.h"

/* Files over 1 GB show progress on a terminal. */
#define PROGRESS_MIN UINT64_C(1000000000)

enum mode { MODE_VERIFY, MODE_WRITE, MODE_CHECK, MODE_EMBED };

struct options {
    enum mode mode;
    const char *manifest;       /* -c */
    uint32_t algo;              /* -a */
    int allow_trailing, strict, quiet, status, ignore_missing;
    int shard;                  /* --shard: a shard of a split set alone */
    const char *model;          /* --model, or NULL */
    int style;                  /* -w: the whole-file line's style (enum manifest_style) */
    int files_only;             /* -w --files-only: whole-file lines alone */
};

static struct options opt;
static cli_out *out = &cli_stdout;

static void usage(void)
{
    cli_out_printf(out,
        "Usage: %s [OPTION]... [FILE]...\n"
        "  or:  %s -w [OPTION]... [FILE]...\n"
        "  or:  %s -c MANIFEST [OPTION]... [FILE]...\n"
        "  or:  %s --embed IN OUT\n"
        "Check that GGUF files are intact.  Each FILE's structure is checked, and\n"
        "the checksums embedded in its metadata when it has them; one line per\n"
        "file says FILE: OK or FILE: FAILED: reason.  FILE may be - (standard\n"
        "input, the default when it is not a terminal) or a pipe: tensors are\n"
        "then hashed as they stream past.  A shard of a split set\n"
        "(NAME-00001-of-00003.gguf ...) brings its whole set: the shards are\n"
        "checked against each other, then each is verified (or, with -w,\n"
        "listed) as a file.\n"
        "\n"
        "Modes:\n"
        "  -w, --write           print a manifest of each FILE: its whole-file,\n"
        "                        metadata and per-tensor checksums\n"
        "  -c, --check=MANIFEST  check files against MANIFEST ('-' for standard\n"
        "                        input): all it lists, or only the FILEs given\n"
        "      --embed           write a copy of IN to OUT with the XXH3 checksum\n"
        "                        of each tensor in its metadata\n"
        "\n"
        "Checks:\n"
        "      --allow-trailing  accept bytes after the data section\n"
        "      --strict          warnings are failures; with -c, so are malformed\n"
        "                        manifest lines\n"
        "      --model=ARCH      also check that qwen-run can load the model, with\n"
        "                        its loader's checks of keys, tensors and tokenizer;\n"
        "                        warn of what llama.cpp refuses besides (ARCH: qwen2,\n"
        "                        qwen3)\n"
        "      --shard           a shard of a split set alone, without its set\n"
        "  -a, --algo=ALGO       checksum algorithm for -w: xxh3 (default), xxh128,\n"
        "                        xxh64, xxh32, crc32, sha256, sha1\n"
        "      --format=FORMAT   with -w: the whole-file line as gguf-verify (the\n"
        "                        default), gnu (HEX  FILE, as sha256sum and xxhsum\n"
        "                        write it) or bsd (ALGO (FILE) = HEX)\n"
        "      --tag             the same as --format=bsd\n"
        "      --files-only      with -w: the whole-file lines alone\n"
        "      --ignore-missing  with -c: skip listed files that do not exist\n"
        "\n"
        "Output:\n"
        "  -q, --quiet           no OK lines, no progress\n"
        "      --status          print nothing on standard output, no warnings:\n"
        "                        the exit status tells\n"
        "  -h, --help            show this help and exit\n"
        "  -V, --version         show the version and exit\n"
        "\n"
        "Manifest lines are ALGO  HEX  FILE (the whole file), ALGO  HEX  FILE:TENSOR,\n"
        "ALGO  HEX  FILE:(metadata) and ALGO  HEX  FILE:(tensor data) (all tensors);\n"
        "names holding a backslash or a line break are escaped as sha256sum does.\n"
        "Whole-file values equal xxhsum's (-H3, -H2, -H1, -H0), zlib's crc32,\n"
        "sha256sum's and sha1sum's for the same bytes.  -c also reads the lines of\n"
        "sha256sum, sha1sum and xxhsum (with or without --tag) and llama.cpp's\n"
        "llama-gguf-hash (whose FILE line is the tensor data: FILE:(tensor data)).\n"
        "\n"
        "Exit status: 0 all OK, 1 a file is invalid or a checksum differs,\n"
        "2 trouble (usage, a file that cannot be read or shrinks while it is read,\n"
        "out of memory).\n",
        cli_prog, cli_prog, cli_prog, cli_prog);
}

/* ------------------------------------------------------------------------ */
/* Names in output lines                                                     */

/* Prints "NAME: WORD" (and ": detail") on standard output unless --status;
 * OK lines also not with --quiet. */
static void result_line(const char *file, const char *part, size_t part_len, const char *word,
                        const char *detail)
{
    if (opt.status) return;
    if (opt.quiet && strcmp(word, "OK") == 0) return;
    manifest_put_name(out, file, part, part_len);
    cli_out_str(out, ": ");
    cli_out_str(out, word);
    if (detail) {
        cli_out_str(out, detail[0] == '(' ? " " : ": ");
        cli_out_str(out, detail);
    }
    cli_out_putc(out, '\n');
}

/* ------------------------------------------------------------------------ */
/* Progress (stderr, a terminal, large files)                                */

struct progress {
    const char *name;
    cli_progress line;
};

static void progress_cb(void *ctx, uint64_t done, uint64_t total)
{
    struct progress *p = ctx;
    if ((total ? total : done) <= PROGRESS_MIN) return;
    char esc[256];
    cli_text_escape(esc, sizeof esc, p->name, strlen(p->name));
    if (total)
        cli_progress_show(&p->line, done == total, "%s: %3d%%", esc, (int)(100.0 * done / total));
    else
        cli_progress_show(&p->line, 0, "%s: %llu MiB", esc, (unsigned long long)(done >> 20));
}

/* ------------------------------------------------------------------------ */
/* One file: open, structure, hashes, verdict                                */

/* The state of one file being verified. */
struct vfile {
    const char *name;           /* as given, and in result lines ("-" for standard input) */
    char shown[CLI_SHORT_NAME_MAX + 32]; /* the name in messages: shortened when long */
    const char *manifest;       /* -c: the manifest that lists it, and the line */
    unsigned long line;         /* of its first entry, for names too long to show */
    gguf_file *f;
    int status;                 /* CLI_EXIT_* so far */
    int failed;                 /* problems reported */
    int warnings;
    int model_problems;         /* problems --model found */
    /* hashes of the last pass */
    int passes;                 /* passes started (a stream allows one) */
    int hashed;                 /* the last pass succeeded: the digests are valid */
    uint32_t algo;              /* ... and its algorithm */
    int want_data;              /* hash the tensor data as a whole too */
    gguf_digest whole, meta, data, *tensors;
};

/* Reports a problem that makes the file fail: "NAME: FAILED: text" on
 * standard output (on stderr in -w mode, whose standard output is the
 * manifest). */
static void problem(struct vfile *v, const char *fmt, ...) CLI_PRINTF(2, 3);
static void problem(struct vfile *v, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    v->failed++;
    if (v->status < CLI_EXIT_NEGATIVE) v->status = CLI_EXIT_NEGATIVE;
    if (opt.mode == MODE_WRITE || opt.mode == MODE_EMBED) {
        if (!opt.status) cli_error(v->shown, "FAILED: %s", text);
    } else {
        result_line(v->name, NULL, 0, "FAILED", text);
    }
}

/* Reports something the format allows but llama.cpp refuses: a warning on
 * stderr, or with --strict a problem. */
static void warning(struct vfile *v, const char *fmt, ...) CLI_PRINTF(2, 3);
static void warning(struct vfile *v, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    v->warnings++;
    if (opt.strict) problem(v, "%s (--strict)", text);
    else if (!opt.status) cli_error(v->shown, "warning: %s", text);
}

/* Trouble with the file (cannot read it, out of memory): an error on
 * stderr and "NAME: FAILED open or read" as sha256sum prints it.  A name
 * too long to show whole is shortened in msg; then the manifest line that
 * lists the file tells which it is. */
static void trouble(struct vfile *v, const char *msg)
{
    v->status = CLI_EXIT_TROUBLE;
    if (v->manifest && strlen(v->name) > CLI_SHORT_NAME_MAX)
        cli_error(v->manifest, "%lu: %s", v->line, msg);
    else
        cli_message(msg);
    if (opt.mode == MODE_VERIFY || opt.mode == MODE_CHECK)
        result_line(v->name, NULL, 0, "FAILED open or read", NULL);
}

/* The library's message without its leading "NAME: ". */
static const char *reason(const struct vfile *v, const gguf_error *err)
{
    size_t n = strlen(v->shown);
    if (strncmp(err->message, v->shown, n) == 0 && strncmp(err->message + n, ": ", 2) == 0)
        return err->message + n + 2;
    return err->message;
}

/* Reports a failed library call: malformed content is a problem of the
 * file, anything else trouble. */
static void report(struct vfile *v, int rc, gguf_error *err)
{
    if (!err->message[0])
        snprintf(err->message, sizeof err->message, "%s: %s", v->shown, gguf_strerror(rc));
    if (rc == GGUF_E_FORMAT || rc == GGUF_E_UNSUPPORTED) problem(v, "%s", reason(v, err));
    else trouble(v, err->message);
}

/* A tensor's name quoted and escaped for messages. */
static const char *tname(char *buf, size_t n, const gguf_tensor *t)
{
    char esc[200];
    cli_text_escape(esc, sizeof esc, t->name.ptr, t->name.len);
    snprintf(buf, n, "'%s'", esc);
    return buf;
}

/* Opens v->name for reading in one pass.  Returns 0, or -1 (reported). */
static int vfile_open(struct vfile *v)
{
    gguf_error err;
    err.message[0] = '\0';
    cli_shorten(v->shown, v->name, strlen(v->name));
    if (strcmp(v->name, "-") == 0 && cli_isatty(0)) {
        v->status = CLI_EXIT_TROUBLE;
        cli_error(v->shown, "standard input is a terminal");
        if (opt.mode == MODE_VERIFY || opt.mode == MODE_CHECK)
            result_line(v->name, NULL, 0, "FAILED open or read", NULL);
        return -1;
    }
    /* Without --allow-trailing the first trailing byte of a stream decides:
     * reading stops there, even when the input never ends. */
    unsigned flags = GGUF_OPEN_SEQUENTIAL | (opt.allow_trailing ? 0 : GGUF_OPEN_STOP_AT_TRAILING);
    int rc = guard_open(&v->f, v->name, v->shown, flags, &err);
    if (rc) {
        report(v, rc, &err);
        return -1;
    }
    uint64_t n = gguf_tensor_count(v->f);
    v->tensors = calloc((size_t)(n ? n : 1), sizeof *v->tensors);
    if (!v->tensors) {
        snprintf(err.message, sizeof err.message, "%s: out of memory", v->shown);
        trouble(v, err.message);
        return -1;
    }
    return 0;
}

static void vfile_close(struct vfile *v)
{
    guard_close(v->f);
    v->f = NULL;
    free(v->tensors);
    v->tensors = NULL;
}

/* Hashes the file with `algo` (one pass; a stream can take only one).
 * Returns 0, or -1 (reported). */
static int vfile_hash(struct vfile *v, uint32_t algo)
{
    if (v->passes && gguf_is_stream(v->f)) {
        char msg[300];
        snprintf(msg, sizeof msg, "%s: a stream can be hashed with one algorithm only", v->shown);
        trouble(v, msg);
        return -1;
    }
    struct progress p;
    p.name = v->shown;
    cli_progress_init(&p.line, !opt.quiet && !opt.status);
    int show = p.line.on;
    gguf_error err;
    err.message[0] = '\0';
    int rc = gguf_hash_file(v->f, algo, &v->whole, &v->meta, v->want_data ? &v->data : NULL,
                            v->tensors, show ? progress_cb : NULL, &p, &err);
    cli_progress_clear(&p.line);
    v->passes++;
    v->hashed = 0;
    if (rc) {
        report(v, rc, &err);
        return -1;
    }
    v->algo = algo;
    v->hashed = 1;
    return 0;
}

/* What the format allows but llama.cpp refuses. */
static void check_warnings(struct vfile *v)
{
    gguf_file *f = v->f;
    char q[256];
    if (gguf_version(f) == 1)
        warning(v, "GGUF version 1: llama.cpp reads versions 2 and 3 only");
    if (gguf_byte_order(f) == GGUF_BIG_ENDIAN)
        warning(v, "big-endian file: llama.cpp reads it only on a big-endian machine");
    if (gguf_alignment(f) % 8)
        warning(v, "general.alignment is %lu, not a multiple of 8 as llama.cpp expects",
                (unsigned long)gguf_alignment(f));
    uint64_t n = gguf_tensor_count(f), expect = 0, misplaced = 0, first = 0;
    for (uint64_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (t->name.len > 63)
            warning(v, "tensor %llu %s: name of %zu bytes; llama.cpp takes at most 63",
                    (unsigned long long)i, tname(q, sizeof q, t), t->name.len);
        const gguf_type_info *ti = gguf_type_get(t->type);
        if (ti && ti->removed)
            warning(v, "tensor %llu %s: type %s was removed from ggml; llama.cpp cannot load it",
                    (unsigned long long)i, tname(q, sizeof q, t), ti->name);
        /* ggml's reader wants each tensor where the previous one ends,
         * padded to the alignment, in directory order. */
        if (t->offset != expect && misplaced++ == 0) first = i;
        uint64_t a = gguf_alignment(f), padded = (t->size + a - 1) / a * a;
        expect = t->offset + padded;
    }
    if (misplaced) {
        const gguf_tensor *t = gguf_tensor_at(f, first);
        uint64_t a = gguf_alignment(f), want = 0;
        if (first > 0) {
            const gguf_tensor *p = gguf_tensor_at(f, first - 1);
            want = p->offset + (p->size + a - 1) / a * a;
        }
        warning(v, "tensor %llu %s: data at offset %llu of the data section, where llama.cpp "
                "expects %llu (tensor data contiguous and in directory order)%s",
                (unsigned long long)first, tname(q, sizeof q, t), (unsigned long long)t->offset,
                (unsigned long long)want, misplaced > 1 ? "; more tensors are out of place" : "");
    }
}

/* Bytes after the data section (beyond the padding after the last tensor)
 * are a problem unless --allow-trailing. */
static void check_trailing(struct vfile *v)
{
    gguf_file *f = v->f;
    uint64_t size = gguf_file_size(f), a = gguf_alignment(f), end = gguf_data_end(f);
    uint64_t padded = end + (a - end % a) % a;
    if (gguf_stopped_at_trailing(f)) {
        problem(v, "more than %u bytes after the end of the data section at byte %llu, not read "
                "further (--allow-trailing accepts them)", (unsigned)GGUF_TRAILING_READ_MAX,
                (unsigned long long)padded);
        return;
    }
    if (gguf_tensor_count(f) == 0 && size <= gguf_data_offset(f)) return;
    if (size > padded && !opt.allow_trailing)
        problem(v, "%llu bytes after the end of the data section at byte %llu "
                "(--allow-trailing accepts them)", (unsigned long long)(size - padded),
                (unsigned long long)padded);
}

/* --- --model ----------------------------------------------------------------- */

/* Problems a --model check lists before it stops: a file that is not the
 * model at all would give one for every tensor. */
#define MODEL_PROBLEMS_MAX 20

/* Receives the findings of the loader's checks (qwen_model_check): a
 * problem fails the file, a note is a llama.cpp warning, a resource
 * failure is trouble.  Returns 1 to end the check. */
static int model_finding(void *ctx, int kind, const gguf_error *e)
{
    struct vfile *v = ctx;
    if (kind == QWEN_LLAMA_NOTE) {
        warning(v, "%s: %s", opt.model, reason(v, e));
        return 0;
    }
    if (e->status == GGUF_E_NOMEM || e->status == GGUF_E_IO || e->status == GGUF_E_INVALID) {
        trouble(v, e->message);
        return 1;
    }
    if (v->model_problems++ == MODEL_PROBLEMS_MAX) {
        problem(v, "%s: more problems, not listed", opt.model);
        return 1;
    }
    problem(v, "%s: %s", opt.model, reason(v, e));
    return 0;
}

/* The model check of --model: the loader's and the tokenizer's own checks
 * (infer/model.c, infer/tokenizer.c), so that a file passes exactly when
 * qwen-run can load it; llama.cpp's stricter demands come back as notes. */
static void check_model(struct vfile *v)
{
    qwen_check c = { model_finding, v, NULL, GGUF_OK, 0 };
    qwen_model_check(v->f, opt.model, &c);
}

/* --- embedded checksums ------------------------------------------------------ */

/* The embedded tensor checksums of f: 1 and *arr when present and well
 * formed, 0 when absent, -1 after reporting a malformed entry. */
static int embedded(struct vfile *v, const gguf_value **arr)
{
    const gguf_kv *kv = gguf_kv_find(v->f, GGUF_KEY_TENSOR_XXH3);
    if (!kv) return 0;
    const gguf_value *a = &kv->value;
    uint64_t n = gguf_tensor_count(v->f);
    if (a->type != GGUF_VT_ARRAY || a->elem_type != GGUF_VT_UINT64) {
        problem(v, "%s is not an array of UINT64 (at byte %llu)", GGUF_KEY_TENSOR_XXH3,
                (unsigned long long)kv->offset);
        return -1;
    }
    if (a->count != n) {
        problem(v, "%s holds %llu checksums for %llu tensors (at byte %llu)", GGUF_KEY_TENSOR_XXH3,
                (unsigned long long)a->count, (unsigned long long)n,
                (unsigned long long)kv->offset);
        return -1;
    }
    *arr = a;
    return 1;
}

/* Compares the tensors' XXH3 digests (v->tensors, hashed with XXH3) with
 * the embedded values: a line for each tensor that differs.  Returns the
 * number that differ. */
static uint64_t compare_embedded(struct vfile *v, const gguf_value *arr)
{
    uint64_t n = gguf_tensor_count(v->f), bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        gguf_value e;
        if (gguf_array_get(arr, i, &e) != GGUF_OK || e.v.u64 != gguf_digest_u64(&v->tensors[i])) {
            const gguf_tensor *t = gguf_tensor_at(v->f, i);
            if (opt.mode == MODE_WRITE || opt.mode == MODE_EMBED) {
                char q[256];
                if (!opt.status)
                    cli_error(v->shown, "tensor %llu %s: FAILED: differs from its embedded checksum",
                              (unsigned long long)i, tname(q, sizeof q, t));
            } else {
                result_line(v->name, t->name.ptr, t->name.len, "FAILED", NULL);
            }
            bad++;
        }
    }
    return bad;
}

/* Everything but the checksums of a manifest, for a file just opened:
 * warnings, --model, then a pass that hashes with `hash_algo` (-1: none
 * unless the input is a stream, which is read to its end in any case),
 * trailing bytes, and with `embedded_too` the embedded checksums, which
 * take a pass with XXH3 of their own when hash_algo is another algorithm
 * (not possible for a stream: then they are skipped with a note).
 * Returns the number of embedded checksums that matched. */
static uint64_t verify_open_file(struct vfile *v, int hash_algo, int embedded_too)
{
    const gguf_value *arr = NULL;
    uint64_t matched = 0, n = gguf_tensor_count(v->f);
    check_warnings(v);
    if (opt.model) check_model(v);
    int emb = embedded_too ? embedded(v, &arr) : 0;
    if (emb > 0 && hash_algo != GGUF_HASH_XXH3) {
        if (gguf_is_stream(v->f)) {
            if (!opt.status)
                cli_error(v->shown, "note: embedded XXH3 checksums not checked (a stream is read "
                          "once, here for %s)", gguf_hash_name((uint32_t)hash_algo));
            emb = 0;
        } else {
            if (vfile_hash(v, GGUF_HASH_XXH3)) return 0;
            uint64_t bad = compare_embedded(v, arr);
            if (bad) problem(v, "%llu of %llu tensors differ from their embedded checksums",
                             (unsigned long long)bad, (unsigned long long)n);
            else matched = n;
            emb = 0;
        }
    }
    if (hash_algo >= 0 || gguf_is_stream(v->f)) {
        uint32_t a = hash_algo >= 0 ? (uint32_t)hash_algo : GGUF_HASH_XXH3;
        if (vfile_hash(v, a)) return 0;
    }
    check_trailing(v);
    if (emb > 0) {
        uint64_t bad = compare_embedded(v, arr);
        if (bad) problem(v, "%llu of %llu tensors differ from their embedded checksums",
                         (unsigned long long)bad, (unsigned long long)n);
        else matched = n;
    }
    return matched;
}

/* --- default mode and -w ------------------------------------------------- */

/* Prints the manifest lines of a hashed file. */
static void write_manifest(const struct vfile *v)
{
    /* the whole file in the style asked for (parse_options checked it has
     * a form for the algorithm) */
    manifest_put_line(out, opt.style, &v->whole, v->name, strlen(v->name));
    if (opt.files_only) return;
    uint64_t n = gguf_tensor_count(v->f);
    /* The metadata line is left out when a tensor has its name. */
    if (!gguf_tensor_find(v->f, MANIFEST_META_PART))
        manifest_put_part_line(out, &v->meta, v->name, MANIFEST_META_PART, MANIFEST_META_PART_LEN);
    for (uint64_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(v->f, i);
        manifest_put_part_line(out, &v->tensors[i], v->name, t->name.ptr, t->name.len);
    }
}

/* A journal that an interrupted gguf-edit --in-place left beside FILE:
 * its header may be half rewritten until gguf-edit completes it. */
static void check_edit_journal(struct vfile *v)
{
    if (strcmp(v->name, "-") == 0) return;
    const char *slash = strrchr(v->name, '/');
    size_t dlen = slash ? (size_t)(slash - v->name) + 1 : 0, n = strlen(v->name) + 24;
    char *j = malloc(n);
    if (!j) return;
    snprintf(j, n, "%.*s.%s.gguf-edit-journal", (int)dlen, v->name, v->name + dlen);
    struct stat st;
    if (stat(j, &st) == 0)
        problem(v, "an interrupted gguf-edit --in-place left %s: run gguf-edit on the file to "
                "complete it", j);
    free(j);
}

/* Verifies (or with -w, writes the manifest of) one FILE.  Returns its
 * exit status. */
static int verify_one(const char *name)
{
    struct vfile v;
    memset(&v, 0, sizeof v);
    v.name = name;
    if (vfile_open(&v)) {
        check_edit_journal(&v);
        return v.status;
    }
    check_edit_journal(&v);
    uint64_t matched;
    if (opt.mode == MODE_WRITE) {
        matched = verify_open_file(&v, (int)opt.algo, 1);
        if (!v.failed && v.status == CLI_EXIT_OK) write_manifest(&v);
    } else {
        int want = gguf_kv_find(v.f, GGUF_KEY_TENSOR_XXH3) != NULL;
        matched = verify_open_file(&v, want ? GGUF_HASH_XXH3 : -1, 1);
        if (!v.failed && v.status == CLI_EXIT_OK) {
            char detail[96];
            snprintf(detail, sizeof detail, "(%llu embedded tensor checksums match)",
                     (unsigned long long)matched);
            result_line(v.name, NULL, 0, "OK", matched ? detail : NULL);
        }
    }
    vfile_close(&v);
    return v.status;
}

/* --- split sets ---------------------------------------------------------------- */

/* The shards verified with their sets so far (by device and inode), so
 * that a shard given after its set is not verified again.  (A plain file
 * given twice is verified twice, as sha256sum reads a file given twice.) */
struct seen {
    struct stat *st;
    size_t n, cap;
};

/* 1 when path was verified already; else, with `add`, notes it (when it
 * exists) and returns 0. */
static int seen_before(struct seen *sn, const char *path, int add)
{
    struct stat st;
    if (strcmp(path, "-") == 0 || stat(path, &st) != 0) return 0;
    for (size_t i = 0; i < sn->n; i++)
        if (sn->st[i].st_dev == st.st_dev && sn->st[i].st_ino == st.st_ino) return 1;
    if (!add) return 0;
    if (sn->n == sn->cap) {
        size_t cap = sn->cap ? 2 * sn->cap : 16;
        struct stat *p = realloc(sn->st, cap * sizeof *p);
        if (!p) return 0; /* then only verified twice */
        sn->st = p;
        sn->cap = cap;
    }
    sn->st[sn->n++] = st;
    return 0;
}

/* A FILE named as a shard of a split set of several: the set's own checks
 * (every shard there and agreeing with the others, no tensor twice; with
 * --model the loader's checks over all the shards) as problems of FILE,
 * then each shard verified (or listed, with -w) as a file in its turn,
 * once in a run.  Returns the worst exit status. */
static int verify_set(const char *name, struct seen *sn)
{
    struct vfile v;
    memset(&v, 0, sizeof v);
    v.name = name;
    cli_shorten(v.shown, v.name, strlen(v.name));
    gguf_split *set = NULL;
    gguf_error err;
    err.message[0] = '\0';
    int rc = guard_split_open(&set, name, 0, &err);
    if (rc) {
        report(&v, rc, &err);
        return v.status;
    }
    if (opt.model) {
        v.f = gguf_split_shard(set, 0);
        qwen_check c = { model_finding, &v, NULL, GGUF_OK, 0 };
        qwen_model_check_split(set, opt.model, &c);
    }
    const uint32_t n = gguf_split_count(set);
    char **paths = calloc(n, sizeof *paths);
    for (uint32_t i = 0; paths && i < n; i++)
        if (!(paths[i] = strdup(gguf_split_path(set, i)))) {
            while (i) free(paths[--i]);
            free(paths);
            paths = NULL;
        }
    guard_split_close(set);
    if (!paths) {
        snprintf(err.message, sizeof err.message, "%s: out of memory", v.shown);
        trouble(&v, err.message);
        return v.status;
    }
    int status = v.status;
    const char *model = opt.model;
    opt.model = NULL; /* checked over the set */
    for (uint32_t i = 0; i < n && !cli_out_failed(out); i++) {
        if (!seen_before(sn, paths[i], 1)) {
            int st = verify_one(paths[i]);
            if (st > status) status = st;
            cli_out_flush(out);
        }
        free(paths[i]);
    }
    opt.model = model;
    free(paths);
    return status;
}

/* ------------------------------------------------------------------------ */
/* -c MANIFEST                                                               */

enum part { PART_FILE, PART_META, PART_DATA, PART_TENSOR };

struct entry {
    uint32_t algo;
    gguf_digest want;
    char *name;                 /* unescaped NAME (may hold any byte) */
    size_t len;
    size_t split;               /* NAME = FILE ':' PART when split > 0 */
    enum part part;
    size_t group;
    unsigned long line;
    int style;                  /* enum manifest_style */
    int bad;                    /* differs */
};

struct group {
    char *file;                 /* path, NUL-terminated */
    const char *open;           /* what is read: file, or "-" for an operand - */
    const char *shown;          /* the name shown in its OK line */
    unsigned long line;         /* manifest line of its first entry */
    int exists;
    dev_t dev;
    ino_t ino;
    int selected;
};

struct manifest {
    const char *shown;          /* its name in messages */
    struct entry *e;
    size_t n, cap;
    struct group *g;
    size_t ng;
    unsigned long malformed;
    unsigned long llama;        /* lines in llama-gguf-hash's format */
    int truncated;              /* an overlong line stopped the reading */
};

/* Stores one parsed entry (manifest_handler.entry). */
static int add_entry(void *ctx, manifest_entry *me)
{
    struct manifest *m = ctx;
    if (m->n == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 64;
        struct entry *ne = realloc(m->e, nc * sizeof *ne);
        if (!ne) {
            free(me->name);
            return GGUF_E_NOMEM;
        }
        m->e = ne;
        m->cap = nc;
    }
    struct entry *e = &m->e[m->n++];
    memset(e, 0, sizeof *e);
    e->algo = me->algo;
    e->want = me->want;
    e->name = me->name;
    e->len = me->len;
    e->line = me->line;
    e->style = me->style;
    if (me->style == MANIFEST_LLAMA) m->llama++;
    return GGUF_OK;
}

/* Counts a malformed line, and names it with --strict
 * (manifest_handler.malformed). */
static void malformed_line(void *ctx, unsigned long line, uint64_t offset)
{
    struct manifest *m = ctx;
    m->malformed++;
    if (opt.strict && !opt.status)
        cli_error(m->shown, "%lu: improperly formatted checksum line", line);
}

/* Reads the manifest.  Returns 0 (m->truncated set when an overlong line
 * stopped the reading, which is reported), or the exit status after
 * reporting. */
static int read_manifest(const char *path, struct manifest *m)
{
    FILE *fp;
    m->shown = strcmp(path, "-") == 0 ? "standard input" : path;
    if (strcmp(path, "-") == 0) {
        fp = stdin;
    } else {
        fp = fopen(path, "r");
        if (!fp) {
            cli_error(path, "%s", strerror(errno));
            return CLI_EXIT_TROUBLE;
        }
    }
    manifest_handler h = { add_entry, malformed_line, m };
    gguf_error err;
    int rc = manifest_read_file(fp, m->shown, &h, &err), status = 0;
    if (rc == GGUF_E_FORMAT) {
        m->truncated = 1;
        cli_message(err.message);
    } else if (rc) {
        cli_message(err.message);
        status = CLI_EXIT_TROUBLE;
    }
    if (fp != stdin) fclose(fp);
    return status;
}

/* 1 when `path` (len bytes, no NUL) names something that exists. */
static int exists(const char *path, size_t len, struct stat *st)
{
    if (memchr(path, '\0', len)) return 0;
    char *p = strndup(path, len);
    if (!p) return 0;
    int ok = (len == 1 && p[0] == '-') || stat(p, st) == 0;
    free(p);
    return ok;
}

/* Decides for each entry which file it belongs to.  NAME is FILE:PART when
 * some ':' in it ends an existing file's name (or "-", or the NAME of
 * another entry that names a whole file): the first such ':'.  Otherwise
 * NAME is a whole file, found or missing. */
static void split_names(struct manifest *m)
{
    struct stat st;
    for (size_t i = 0; i < m->n; i++) {
        struct entry *e = &m->e[i];
        e->split = 0;
        for (size_t k = 1; k < e->len; k++) {
            if (e->name[k] == ':' && exists(e->name, k, &st)) {
                e->split = k;
                break;
            }
        }
    }
    for (size_t i = 0; i < m->n; i++) {
        struct entry *e = &m->e[i];
        for (size_t k = 1; k < e->len && !e->split; k++) {
            if (e->name[k] != ':') continue;
            for (size_t j = 0; j < m->n; j++) {
                const struct entry *o = &m->e[j];
                if (j != i && !o->split && o->len == k && memcmp(o->name, e->name, k) == 0) {
                    e->split = k;
                    break;
                }
            }
        }
    }
    for (size_t i = 0; i < m->n; i++) {
        struct entry *e = &m->e[i];
        if (!e->split && e->style == MANIFEST_LLAMA) e->part = PART_DATA;
        else if (!e->split) e->part = PART_FILE;
        else if (e->len - e->split - 1 == MANIFEST_META_PART_LEN &&
                 memcmp(e->name + e->split + 1, MANIFEST_META_PART, MANIFEST_META_PART_LEN) == 0)
            e->part = PART_META;
        else if (e->len - e->split - 1 == MANIFEST_DATA_PART_LEN &&
                 memcmp(e->name + e->split + 1, MANIFEST_DATA_PART, MANIFEST_DATA_PART_LEN) == 0)
            e->part = PART_DATA;
        else e->part = PART_TENSOR;
    }
}

/* Groups the entries by file: the same path, or the same file under
 * another path (./m.gguf and m.gguf).  Returns 0 or -1 (out of memory). */
static int group_entries(struct manifest *m)
{
    m->g = calloc(m->n ? m->n : 1, sizeof *m->g);
    if (!m->g) return -1;
    for (size_t i = 0; i < m->n; i++) {
        struct entry *e = &m->e[i];
        size_t flen = e->split ? e->split : e->len;
        /* A file's entries usually follow each other: try the last group
         * first, so that a long manifest is grouped in linear time. */
        if (i > 0) {
            const struct entry *p = &m->e[i - 1];
            size_t plen = p->split ? p->split : p->len;
            if (plen == flen && memcmp(p->name, e->name, flen) == 0) {
                e->group = p->group;
                if (e->part == PART_FILE && m->g[e->group].shown == m->g[e->group].file)
                    m->g[e->group].shown = NULL;
                continue;
            }
        }
        struct stat st;
        int ex = !memchr(e->name, '\0', flen) && exists(e->name, flen, &st) &&
                 !(flen == 1 && e->name[0] == '-');
        size_t g;
        for (g = 0; g < m->ng; g++) {
            struct group *gr = &m->g[g];
            if (strlen(gr->file) == flen && memcmp(gr->file, e->name, flen) == 0) break;
            if (ex && gr->exists && gr->dev == st.st_dev && gr->ino == st.st_ino) break;
        }
        if (g == m->ng) {
            struct group *gr = &m->g[m->ng++];
            gr->file = strndup(e->name, flen);
            if (!gr->file) return -1;
            gr->exists = ex;
            if (ex) {
                gr->dev = st.st_dev;
                gr->ino = st.st_ino;
            }
            gr->selected = 1;
            gr->line = e->line;
            gr->open = gr->shown = gr->file;
        }
        e->group = g;
        /* A whole-file entry names the group in its OK line. */
        if (e->part == PART_FILE && m->g[g].shown == m->g[g].file) m->g[g].shown = NULL;
    }
    for (size_t i = 0; i < m->n; i++) {
        struct group *gr = &m->g[m->e[i].group];
        if (!gr->shown && m->e[i].part == PART_FILE) gr->shown = m->e[i].name;
    }
    return 0;
}

/* The tensor of f named by entry e, or NULL. */
static const gguf_tensor *entry_tensor(const gguf_file *f, const struct entry *e)
{
    const char *p = e->name + e->split + 1;
    size_t n = e->len - e->split - 1;
    if (!memchr(p, '\0', n)) return gguf_tensor_find(f, p);
    uint64_t nt = gguf_tensor_count(f);
    for (uint64_t i = 0; i < nt; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (t->name.len == n && memcmp(t->name.ptr, p, n) == 0) return t;
    }
    return NULL;
}

/* Counters for the summary of -c. */
struct tally {
    unsigned long mismatched, unreadable, verified;
};

/* Checks every entry of group g against file v (open).  Prints the
 * result lines. */
static void check_group(struct manifest *m, size_t g, struct vfile *v, struct tally *tl)
{
    /* The algorithms the entries use, one pass each (a stream allows one). */
    int done_algo[GGUF_HASH_COUNT] = { 0 };
    int any_bad = 0, file_bad = 0, meta_ok = 0, have_meta = 0, tensors_ok = 1;
    uint64_t n_tensor_entries = 0;
    v->want_data = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->e[i].group == g && m->e[i].part == PART_DATA) v->want_data = 1;
    for (;;) {
        int algo = -1;
        for (size_t i = 0; i < m->n; i++)
            if (m->e[i].group == g && !done_algo[m->e[i].algo]) {
                algo = (int)m->e[i].algo;
                break;
            }
        if (algo < 0) break;
        done_algo[algo] = 1;
        if (!v->passes) verify_open_file(v, algo, 0);
        else vfile_hash(v, (uint32_t)algo);
        if (!v->hashed || v->algo != (uint32_t)algo) return;
        for (size_t i = 0; i < m->n; i++) {
            struct entry *e = &m->e[i];
            if (e->group != g || e->algo != (uint32_t)algo) continue;
            const gguf_tensor *t = NULL;
            if (e->part == PART_META || e->part == PART_TENSOR) t = entry_tensor(v->f, e);
            if (e->part == PART_DATA) {
                e->bad = !gguf_digest_equal(&e->want, &v->data);
                if (e->bad) tensors_ok = 0;
            } else if (e->part == PART_FILE) {
                /* A stream that stopped at trailing bytes has failed
                 * already, and its whole-file digest is of a part only. */
                if (gguf_stopped_at_trailing(v->f)) continue;
                e->bad = !gguf_digest_equal(&e->want, &v->whole);
                file_bad |= e->bad;
            } else if (t) {
                e->bad = !gguf_digest_equal(&e->want, &v->tensors[gguf_tensor_index(v->f, t)]);
                n_tensor_entries++;
                if (e->bad) tensors_ok = 0;
            } else if (e->part == PART_META) {
                e->bad = !gguf_digest_equal(&e->want, &v->meta);
                have_meta = 1;
                meta_ok = !e->bad;
            } else {
                char esc[200];
                cli_text_escape(esc, sizeof esc, e->name + e->split + 1, e->len - e->split - 1);
                if (!opt.status) cli_error(v->shown, "no tensor '%s' in the file", esc);
                e->bad = 1;
                tensors_ok = 0;
            }
            if (e->bad) {
                any_bad = 1;
                tl->mismatched++;
                const char *fname = m->g[g].open != m->g[g].file ? m->g[g].open : NULL;
                if (e->part == PART_FILE)
                    result_line(fname ? fname : e->name, NULL, 0, "FAILED", NULL);
                else if (e->part == PART_DATA && !e->split)
                    result_line(m->g[g].open, MANIFEST_DATA_PART, MANIFEST_DATA_PART_LEN, "FAILED", NULL);
                else result_line(m->g[g].open, e->name + e->split + 1, e->len - e->split - 1,
                                 "FAILED", NULL);
            }
        }
    }
    if (any_bad) {
        if (v->status < CLI_EXIT_NEGATIVE) v->status = CLI_EXIT_NEGATIVE;
        if (file_bad && tensors_ok && !opt.status) {
            const char *where = have_meta && meta_ok ? "outside the metadata and tensors (padding "
                                                       "or trailing bytes)"
                              : have_meta ? "in the metadata" : "outside the tensors";
            if (n_tensor_entries)
                cli_error(v->shown, "the %llu listed tensors match: the difference is %s",
                          (unsigned long long)n_tensor_entries, where);
        }
    } else if (!v->failed && v->status == CLI_EXIT_OK) {
        result_line(m->g[g].shown, NULL, 0, "OK", NULL);
    }
    tl->verified++;
}

/* 1 when `path` given on the command line is the file of group gr. */
static int same_file(const struct group *gr, const char *path)
{
    if (strcmp(gr->file, path) == 0) return 1;
    struct stat st;
    if (!gr->exists || strcmp(path, "-") == 0 || stat(path, &st) != 0) return 0;
    return st.st_dev == gr->dev && st.st_ino == gr->ino;
}

static void free_manifest(struct manifest *m)
{
    for (size_t i = 0; i < m->n; i++) free(m->e[i].name);
    for (size_t i = 0; i < m->ng; i++) free(m->g[i].file);
    free(m->e);
    free(m->g);
}

/* -c MANIFEST [FILE...].  Returns the exit status. */
static int check_manifest(char **files, int n_files)
{
    struct manifest m;
    memset(&m, 0, sizeof m);
    int status = read_manifest(opt.manifest, &m);
    const char *shown = m.shown;
    if (status) goto done;
    if (m.n == 0) {
        cli_error(shown, "no properly formatted checksum lines found");
        status = CLI_EXIT_NEGATIVE;
        goto done;
    }
    split_names(&m);
    /* the same words, another meaning: say so before any result */
    if (m.llama && !opt.status)
        cli_error(shown, "note: %lu line%s in llama-gguf-hash's format: a FILE line there is the "
                  "digest of the tensor data, not of the whole file, and is checked as "
                  "FILE:" MANIFEST_DATA_PART, m.llama, m.llama == 1 ? "" : "s");
    if (group_entries(&m)) {
        cli_error(NULL, "out of memory");
        status = CLI_EXIT_TROUBLE;
        goto done;
    }
    if (n_files > 0) {
        for (size_t g = 0; g < m.ng; g++) m.g[g].selected = 0;
        for (int i = 0; i < n_files; i++) {
            int found = 0;
            for (size_t g = 0; g < m.ng; g++)
                if (same_file(&m.g[g], files[i])) m.g[g].selected = found = 1;
            /* Standard input against the one file a manifest lists: a
             * download checked as it arrives. */
            if (!found && strcmp(files[i], "-") == 0 && m.ng == 1) {
                m.g[0].selected = found = 1;
                m.g[0].open = m.g[0].shown = "-";
            }
            if (!found) {
                cli_error(files[i], "not listed in %s", shown);
                status = CLI_EXIT_NEGATIVE;
            }
        }
    }
    struct tally tl = { 0, 0, 0 };
    for (size_t g = 0; g < m.ng; g++) {
        struct group *gr = &m.g[g];
        if (!gr->selected) continue;
        if (strcmp(gr->open, "-") == 0 && strcmp(opt.manifest, "-") == 0) {
            cli_error("-", "standard input holds the manifest, not the file");
            status = CLI_EXIT_TROUBLE;
            continue;
        }
        if (!gr->exists && strcmp(gr->open, "-") != 0 && opt.ignore_missing) {
            struct stat st;
            if (stat(gr->file, &st) != 0 && errno == ENOENT) continue;
        }
        struct vfile v;
        memset(&v, 0, sizeof v);
        v.name = gr->open;
        v.manifest = shown;
        v.line = gr->line;
        if (vfile_open(&v) == 0) check_group(&m, g, &v, &tl);
        if (v.status == CLI_EXIT_TROUBLE && !v.f) tl.unreadable++;
        vfile_close(&v);
        if (v.status > status) status = v.status;
    }
    if (!opt.status) {
        if (m.malformed)
            cli_error(NULL, "WARNING: %lu line%s improperly formatted", m.malformed,
                      m.malformed == 1 ? " is" : "s are");
        if (tl.unreadable)
            cli_error(NULL, "WARNING: %lu listed file%s could not be read", tl.unreadable,
                      tl.unreadable == 1 ? "" : "s");
        if (tl.mismatched)
            cli_error(NULL, "WARNING: %lu computed checksum%s did NOT match", tl.mismatched,
                      tl.mismatched == 1 ? "" : "s");
    }
    /* Entries after an overlong line were never read: not all is known. */
    if ((m.truncated || (m.malformed && opt.strict)) && status < CLI_EXIT_NEGATIVE)
        status = CLI_EXIT_NEGATIVE;
    if (opt.ignore_missing && tl.verified == 0 && status == CLI_EXIT_OK) {
        cli_error(shown, "no file was verified");
        status = CLI_EXIT_NEGATIVE;
    }
done:
    free_manifest(&m);
    return status;
}

/* ------------------------------------------------------------------------ */
/* --embed IN OUT                                                            */

/* 1 when OUT is the file IN. */
static int same_path(const char *in, const char *outp)
{
    struct stat si, so;
    if (strcmp(outp, "-") == 0) return 0;
    if (strcmp(in, outp) == 0) return 1;
    return stat(in, &si) == 0 && stat(outp, &so) == 0 && si.st_dev == so.st_dev &&
           si.st_ino == so.st_ino;
}

static int key_is(const gguf_kv *kv, const char *key)
{
    size_t n = strlen(key);
    return kv->key.len == n && memcmp(kv->key.ptr, key, n) == 0;
}

/* Builds the output header: IN's version, byte order, KV pairs in order
 * (the checksum key replaced in place, or appended), tensor directory.
 * Returns GGUF_OK or the writer's status. */
static int embed_header(gguf_writer *w, gguf_file *f, const uint64_t *sums, gguf_error *err)
{
    int rc, have = 0;
    uint64_t n = gguf_tensor_count(f);
    if ((rc = gguf_writer_set_version(w, gguf_version(f), err))) return rc;
    if ((rc = gguf_writer_set_byte_order(w, gguf_byte_order(f), err))) return rc;
    for (uint64_t i = 0; i < gguf_kv_count(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (key_is(kv, GGUF_KEY_TENSOR_XXH3)) {
            rc = gguf_writer_add_array(w, GGUF_KEY_TENSOR_XXH3, GGUF_VT_UINT64, sums, n, err);
            have = 1;
        } else {
            rc = gguf_writer_copy_kv(w, kv, err);
        }
        if (rc) return rc;
    }
    if (!have &&
        (rc = gguf_writer_add_array(w, GGUF_KEY_TENSOR_XXH3, GGUF_VT_UINT64, sums, n, err)))
        return rc;
    for (uint64_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        char *name = strndup(t->name.ptr, t->name.len);
        if (!name) {
            snprintf(err->message, sizeof err->message, "out of memory");
            return err->status = GGUF_E_NOMEM;
        }
        rc = gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, err);
        free(name);
        if (rc) return rc;
    }
    return GGUF_OK;
}

/* --embed IN OUT.  Returns the exit status. */
static int embed(const char *in, const char *outp)
{
    if (strcmp(outp, "-") == 0 && cli_isatty(1)) {
        cli_error("-", "refusing to write binary data to a terminal");
        return CLI_EXIT_TROUBLE;
    }
    if (same_path(in, outp)) {
        cli_error(outp, "is the input file; write to another name (the input is never changed)");
        return CLI_EXIT_TROUBLE;
    }
    struct vfile v;
    memset(&v, 0, sizeof v);
    v.name = in;
    if (vfile_open(&v)) return v.status;
    int status = CLI_EXIT_TROUBLE;
    gguf_writer *w = NULL;
    uint64_t *sums = NULL;
    gguf_error err;
    err.message[0] = '\0';
    if (gguf_is_stream(v.f)) {
        cli_error(in, "--embed needs a file: the checksums go into the header, before the data, "
                  "so the input is read twice");
        goto done;
    }
    uint64_t n = gguf_tensor_count(v.f);
    for (uint64_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(v.f, i);
        if (memchr(t->name.ptr, '\0', t->name.len)) {
            char q[256];
            cli_error(in, "tensor %llu %s: the name holds a NUL byte, which the output cannot",
                      (unsigned long long)i, tname(q, sizeof q, t));
            goto done;
        }
    }
    /* The input's own checksums, when it has some, must hold: new ones
     * would vouch for damaged data. */
    verify_open_file(&v, GGUF_HASH_XXH3, 1);
    if (v.failed || v.status) {
        if (v.failed) cli_error(in, "not copied: the input failed its checks");
        status = v.status;
        goto done;
    }
    sums = malloc((size_t)(n ? n : 1) * sizeof *sums);
    w = gguf_writer_new();
    if (!sums || !w) {
        cli_error(NULL, "out of memory");
        goto done;
    }
    for (uint64_t i = 0; i < n; i++) sums[i] = gguf_digest_u64(&v.tensors[i]);
    int rc = embed_header(w, v.f, sums, &err);
    if (rc) {
        cli_error(in, "cannot be rewritten: %s", err.message[0] ? err.message : gguf_strerror(rc));
        goto done;
    }
    guard_output_catch();
    if ((rc = guard_output_open(w, outp, &err))) goto write_error;
    for (uint64_t i = 0; i < n && !rc; i++) {
        const gguf_tensor *t = gguf_tensor_at(v.f, i);
        rc = gguf_writer_write(w, t->data, (size_t)t->size, &err);
    }
    if (rc || (rc = guard_output_finish(w, &err))) goto write_error;
    status = CLI_EXIT_OK;
    goto done;
write_error:
    if (guard_report_shrunk_input(&err)) goto done;
    if (!err.message[0])
        snprintf(err.message, sizeof err.message, "%s: %s", outp, gguf_strerror(rc));
    cli_message(err.message);
done:
    guard_output_free(w);
    free(sums);
    vfile_close(&v);
    return status;
}

/* ------------------------------------------------------------------------ */
/* Options and main                                                          */

enum {
    OPT_EMBED = 256, OPT_ALLOW_TRAILING, OPT_STRICT, OPT_MODEL, OPT_STATUS, OPT_IGNORE_MISSING,
    OPT_SHARD, OPT_FORMAT, OPT_TAG, OPT_FILES_ONLY
};

static const struct option long_options[] = {
    { "write", no_argument, NULL, 'w' },
    { "check", required_argument, NULL, 'c' },
    { "embed", no_argument, NULL, OPT_EMBED },
    { "algo", required_argument, NULL, 'a' },
    { "allow-trailing", no_argument, NULL, OPT_ALLOW_TRAILING },
    { "strict", no_argument, NULL, OPT_STRICT },
    { "model", required_argument, NULL, OPT_MODEL },
    { "quiet", no_argument, NULL, 'q' },
    { "status", no_argument, NULL, OPT_STATUS },
    { "ignore-missing", no_argument, NULL, OPT_IGNORE_MISSING },
    { "shard", no_argument, NULL, OPT_SHARD },
    { "format", required_argument, NULL, OPT_FORMAT },
    { "tag", no_argument, NULL, OPT_TAG },
    { "files-only", no_argument, NULL, OPT_FILES_ONLY },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 }
};

/* Sets the mode, refusing a second one. */
static int set_mode(enum mode m, const char *name)
{
    if (opt.mode != MODE_VERIFY && opt.mode != m)
        return cli_usage_error("%s cannot be combined with another mode (-w, -c, --embed)", name);
    opt.mode = m;
    return -1;
}

/* Parses the command line into opt.  Returns -1 to go on, or the exit
 * status for main to return at once. */
static int parse_options(int argc, char **argv)
{
    int c, rc;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":wc:a:qhV", long_options, NULL)) != -1) {
        switch (c) {
        case 'w':
            if ((rc = set_mode(MODE_WRITE, "-w")) >= 0) return rc;
            break;
        case 'c':
            if ((rc = set_mode(MODE_CHECK, "-c")) >= 0) return rc;
            opt.manifest = optarg;
            break;
        case OPT_EMBED:
            if ((rc = set_mode(MODE_EMBED, "--embed")) >= 0) return rc;
            break;
        case 'a':
            if (gguf_hash_parse(optarg, &opt.algo) != GGUF_OK)
                return cli_usage_error("--algo: unknown algorithm '%s' "
                                       "(xxh3, xxh128, xxh64, xxh32, crc32, sha256, sha1)", optarg);
            break;
        case OPT_FORMAT:
            if (strcmp(optarg, "gguf-verify") == 0) opt.style = MANIFEST_OWN;
            else if (strcmp(optarg, "gnu") == 0) opt.style = MANIFEST_GNU;
            else if (strcmp(optarg, "bsd") == 0) opt.style = MANIFEST_BSD;
            else return cli_usage_error("--format: unknown format '%s' (gguf-verify, gnu, bsd)", optarg);
            break;
        case OPT_TAG: opt.style = MANIFEST_BSD; break;
        case OPT_FILES_ONLY: opt.files_only = 1; break;
        case OPT_ALLOW_TRAILING: opt.allow_trailing = 1; break;
        case OPT_STRICT: opt.strict = 1; break;
        case OPT_MODEL:
            if (!qwen_arch_find(optarg, strlen(optarg)))
                return cli_usage_error("--model: unsupported architecture '%s' (supported: %s)",
                                       optarg, qwen_arch_names());
            opt.model = optarg;
            break;
        case 'q': opt.quiet = 1; break;
        case OPT_STATUS: opt.status = 1; break;
        case OPT_IGNORE_MISSING: opt.ignore_missing = 1; break;
        case OPT_SHARD: opt.shard = 1; break;
        default:        /* -h, -V, usage errors */
            return cli_getopt_default(c, argv, usage);
        }
    }
    int n = argc - optind;
    if (opt.ignore_missing && opt.mode != MODE_CHECK)
        return cli_usage_error("--ignore-missing is for -c");
    if ((opt.style != MANIFEST_OWN || opt.files_only) && opt.mode != MODE_WRITE)
        return cli_usage_error("--format, --tag and --files-only are for -w");
    if (!manifest_style_has(opt.style, opt.algo))
        return cli_usage_error("--format %s has no form for %s checksums", opt.style == MANIFEST_GNU ? "gnu" : "bsd",
                               gguf_hash_name(opt.algo));
    if (opt.mode == MODE_EMBED) {
        if (n != 2) return cli_usage_error(n < 2 ? "--embed needs IN and OUT"
                                                 : "--embed takes IN and OUT only");
        return -1;
    }
    if (opt.mode == MODE_CHECK) {
        for (int i = optind; i < argc; i++)
            if (strcmp(argv[i], "-") == 0 && strcmp(opt.manifest, "-") == 0)
                return cli_usage_error("standard input cannot be both the manifest and a file");
        if (strcmp(opt.manifest, "-") == 0 && cli_isatty(0))
            return cli_usage_error("-c -: standard input is a terminal");
        return -1;
    }
    if (n == 0 && cli_isatty(0))
        return cli_usage_error("no FILE given and standard input is a terminal");
    return -1;
}

int main(int argc, char **argv)
{
    cli_set_prog("gguf-verify");
    guard_init();
    opt.algo = GGUF_HASH_XXH3;
    int status = parse_options(argc, argv);
    if (status >= 0) return status;
    char **files = argv + optind;
    int n_files = argc - optind;
    char *stdin_only[] = { "-", NULL };
    switch (opt.mode) {
    case MODE_EMBED:
        status = embed(files[0], files[1]);
        break;
    case MODE_CHECK:
        status = check_manifest(files, n_files);
        break;
    default:
        if (n_files == 0) {
            files = stdin_only;
            n_files = 1;
        }
        status = CLI_EXIT_OK;
        struct seen sn = { NULL, 0, 0 };
        for (int i = 0; i < n_files && !cli_out_failed(out); i++) {
            uint32_t count = 1;
            int st = CLI_EXIT_OK;
            if (!opt.shard && strcmp(files[i], "-") != 0 && gguf_split_prefix(files[i], NULL, &count) &&
                count > 1) {
                if (!seen_before(&sn, files[i], 0)) st = verify_set(files[i], &sn);
            } else {
                st = verify_one(files[i]);
            }
            if (st > status) status = st;
            /* Out before the next file is mapped: a mapping that shrinks
             * ends the process, and should not take the files before it
             * along. */
            cli_out_flush(out);
        }
        free(sn.st);
        break;
    }
    if (cli_out_close(out) != CLI_EXIT_OK) status = CLI_EXIT_TROUBLE;
    return status;
}
