/* verify-file.c -- gguf-verify on one file or split set: its structure,
 * hashes, embedded checksums, --model, and -w lines; see verify.h. */
#include <config.h>

#include <errno.h>
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
#include "tools/verify.h"

static cli_out *out = &cli_stdout;

/* Files over 1 GB show progress on a terminal. */
#define PROGRESS_MIN UINT64_C(1000000000)

/* ------------------------------------------------------------------------ */
/* Names in output lines                                                     */

/* Prints "NAME: WORD" (and ": detail") on standard output unless --status;
 * OK lines also not with --quiet. */
void verify_result_line(const char *file, const char *part, size_t part_len, const char *word,
                        const char *detail)
{
    if (verify_opt.status) return;
    if (verify_opt.quiet && strcmp(word, "OK") == 0) return;
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


/* Reports a problem that makes the file fail: "NAME: FAILED: text" on
 * standard output (on stderr in -w mode, whose standard output is the
 * manifest). */
void verify_problem(struct vfile *v, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    v->failed++;
    if (v->status < CLI_EXIT_NEGATIVE) v->status = CLI_EXIT_NEGATIVE;
    if (verify_opt.mode == MODE_WRITE || verify_opt.mode == MODE_EMBED) {
        if (!verify_opt.status) cli_error(v->shown, "FAILED: %s", text);
    } else {
        verify_result_line(v->name, NULL, 0, "FAILED", text);
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
    if (verify_opt.strict) verify_problem(v, "%s (--strict)", text);
    else if (!verify_opt.status) cli_error(v->shown, "warning: %s", text);
}

/* Trouble with the file (cannot read it, out of memory): an error on
 * stderr and "NAME: FAILED open or read" as sha256sum prints it.  A name
 * too long to show whole is shortened in msg; then the manifest line that
 * lists the file tells which it is. */
void verify_trouble(struct vfile *v, const char *msg)
{
    v->status = CLI_EXIT_TROUBLE;
    if (v->manifest && strlen(v->name) > CLI_SHORT_NAME_MAX)
        cli_error(v->manifest, "%lu: %s", v->line, msg);
    else
        cli_message(msg);
    if (verify_opt.mode == MODE_VERIFY || verify_opt.mode == MODE_CHECK)
        verify_result_line(v->name, NULL, 0, "FAILED open or read", NULL);
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
    if (rc == GGUF_E_FORMAT || rc == GGUF_E_UNSUPPORTED) verify_problem(v, "%s", reason(v, err));
    else verify_trouble(v, err->message);
}

/* A tensor's name quoted and escaped for messages. */
const char *verify_tname(char *buf, size_t n, const gguf_tensor *t)
{
    char esc[200];
    cli_text_escape(esc, sizeof esc, t->name.ptr, t->name.len);
    snprintf(buf, n, "'%s'", esc);
    return buf;
}

/* Opens v->name for reading in one pass.  Returns 0, or -1 (reported). */
int vfile_open(struct vfile *v)
{
    gguf_error err;
    err.message[0] = '\0';
    cli_shorten(v->shown, v->name, strlen(v->name));
    if (strcmp(v->name, "-") == 0 && cli_isatty(0)) {
        v->status = CLI_EXIT_TROUBLE;
        cli_error(v->shown, "standard input is a terminal");
        if (verify_opt.mode == MODE_VERIFY || verify_opt.mode == MODE_CHECK)
            verify_result_line(v->name, NULL, 0, "FAILED open or read", NULL);
        return -1;
    }
    /* Without --allow-trailing the first trailing byte of a stream decides:
     * reading stops there, even when the input never ends. */
    unsigned flags = GGUF_OPEN_SEQUENTIAL | (verify_opt.allow_trailing ? 0 : GGUF_OPEN_STOP_AT_TRAILING);
    int rc = guard_open(&v->f, v->name, v->shown, flags, &err);
    if (rc) {
        report(v, rc, &err);
        return -1;
    }
    uint64_t n = gguf_tensor_count(v->f);
    v->tensors = calloc((size_t)(n ? n : 1), sizeof *v->tensors);
    if (!v->tensors) {
        snprintf(err.message, sizeof err.message, "%s: out of memory", v->shown);
        verify_trouble(v, err.message);
        return -1;
    }
    return 0;
}

void vfile_close(struct vfile *v)
{
    guard_close(v->f);
    v->f = NULL;
    free(v->tensors);
    v->tensors = NULL;
}

/* Hashes the file with `algo` (one pass; a stream can take only one).
 * Returns 0, or -1 (reported). */
int vfile_hash(struct vfile *v, uint32_t algo)
{
    if (v->passes && gguf_is_stream(v->f)) {
        char msg[300];
        snprintf(msg, sizeof msg, "%s: a stream can be hashed with one algorithm only", v->shown);
        verify_trouble(v, msg);
        return -1;
    }
    struct progress p;
    p.name = v->shown;
    cli_progress_init(&p.line, !verify_opt.quiet && !verify_opt.status);
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
                    (unsigned long long)i, verify_tname(q, sizeof q, t), t->name.len);
        const gguf_type_info *ti = gguf_type_get(t->type);
        if (ti && ti->removed)
            warning(v, "tensor %llu %s: type %s was removed from ggml; llama.cpp cannot load it",
                    (unsigned long long)i, verify_tname(q, sizeof q, t), ti->name);
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
                (unsigned long long)first, verify_tname(q, sizeof q, t), (unsigned long long)t->offset,
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
        verify_problem(v, "more than %u bytes after the end of the data section at byte %llu, not read "
                "further (--allow-trailing accepts them)", (unsigned)GGUF_TRAILING_READ_MAX,
                (unsigned long long)padded);
        return;
    }
    if (gguf_tensor_count(f) == 0 && size <= gguf_data_offset(f)) return;
    if (size > padded && !verify_opt.allow_trailing)
        verify_problem(v, "%llu bytes after the end of the data section at byte %llu "
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
        warning(v, "%s: %s", verify_opt.model, reason(v, e));
        return 0;
    }
    if (e->status == GGUF_E_NOMEM || e->status == GGUF_E_IO || e->status == GGUF_E_INVALID) {
        verify_trouble(v, e->message);
        return 1;
    }
    if (v->model_problems++ == MODEL_PROBLEMS_MAX) {
        verify_problem(v, "%s: more problems, not listed", verify_opt.model);
        return 1;
    }
    verify_problem(v, "%s: %s", verify_opt.model, reason(v, e));
    return 0;
}

/* The model check of --model: the loader's and the tokenizer's own checks
 * (infer/model.c, infer/tokenizer.c), so that a file passes exactly when
 * qwen-run can load it; llama.cpp's stricter demands come back as notes. */
static void check_model(struct vfile *v)
{
    qwen_check c = { model_finding, v, NULL, GGUF_OK, 0 };
    qwen_model_check(v->f, verify_opt.model, &c);
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
        verify_problem(v, "%s is not an array of UINT64 (at byte %llu)", GGUF_KEY_TENSOR_XXH3,
                (unsigned long long)kv->offset);
        return -1;
    }
    if (a->count != n) {
        verify_problem(v, "%s holds %llu checksums for %llu tensors (at byte %llu)", GGUF_KEY_TENSOR_XXH3,
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
            if (verify_opt.mode == MODE_WRITE || verify_opt.mode == MODE_EMBED) {
                char q[256];
                if (!verify_opt.status)
                    cli_error(v->shown, "tensor %llu %s: FAILED: differs from its embedded checksum",
                              (unsigned long long)i, verify_tname(q, sizeof q, t));
            } else {
                verify_result_line(v->name, t->name.ptr, t->name.len, "FAILED", NULL);
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
uint64_t vfile_verify(struct vfile *v, int hash_algo, int embedded_too)
{
    const gguf_value *arr = NULL;
    uint64_t matched = 0, n = gguf_tensor_count(v->f);
    check_warnings(v);
    if (verify_opt.model) check_model(v);
    int emb = embedded_too ? embedded(v, &arr) : 0;
    if (emb > 0 && hash_algo != GGUF_HASH_XXH3) {
        if (gguf_is_stream(v->f)) {
            if (!verify_opt.status)
                cli_error(v->shown, "note: embedded XXH3 checksums not checked (a stream is read "
                          "once, here for %s)", gguf_hash_name((uint32_t)hash_algo));
            emb = 0;
        } else {
            if (vfile_hash(v, GGUF_HASH_XXH3)) return 0;
            uint64_t bad = compare_embedded(v, arr);
            if (bad) verify_problem(v, "%llu of %llu tensors differ from their embedded checksums",
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
        if (bad) verify_problem(v, "%llu of %llu tensors differ from their embedded checksums",
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
    manifest_put_line(out, verify_opt.style, &v->whole, v->name, strlen(v->name));
    if (verify_opt.files_only) return;
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
        verify_problem(v, "an interrupted gguf-edit --in-place left %s: run gguf-edit on the file to "
                "complete it", j);
    free(j);
}

/* Verifies (or with -w, writes the manifest of) one FILE.  Returns its
 * exit status. */
int verify_one(const char *name)
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
    if (verify_opt.mode == MODE_WRITE) {
        matched = vfile_verify(&v, (int)verify_opt.algo, 1);
        if (!v.failed && v.status == CLI_EXIT_OK) write_manifest(&v);
    } else {
        int want = gguf_kv_find(v.f, GGUF_KEY_TENSOR_XXH3) != NULL;
        matched = vfile_verify(&v, want ? GGUF_HASH_XXH3 : -1, 1);
        if (!v.failed && v.status == CLI_EXIT_OK) {
            char detail[96];
            snprintf(detail, sizeof detail, "(%llu embedded tensor checksums match)",
                     (unsigned long long)matched);
            verify_result_line(v.name, NULL, 0, "OK", matched ? detail : NULL);
        }
    }
    vfile_close(&v);
    return v.status;
}

/* --- split sets ---------------------------------------------------------------- */


/* 1 when path was verified already; else, with `add`, notes it (when it
 * exists) and returns 0. */
int verify_seen_before(struct seen *sn, const char *path, int add)
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
int verify_set(const char *name, struct seen *sn)
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
    if (verify_opt.model) {
        v.f = gguf_split_shard(set, 0);
        qwen_check c = { model_finding, &v, NULL, GGUF_OK, 0 };
        qwen_model_check_split(set, verify_opt.model, &c);
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
        verify_trouble(&v, err.message);
        return v.status;
    }
    int status = v.status;
    const char *model = verify_opt.model;
    verify_opt.model = NULL; /* checked over the set */
    for (uint32_t i = 0; i < n && !cli_out_failed(out); i++) {
        if (!verify_seen_before(sn, paths[i], 1)) {
            int st = verify_one(paths[i]);
            if (st > status) status = st;
            cli_out_flush(out);
        }
        free(paths[i]);
    }
    verify_opt.model = model;
    free(paths);
    return status;
}
