/* verify-check.c -- gguf-verify -c MANIFEST; see verify.h. */
#include <config.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "tools/cli.h"
#include "tools/manifest.h"
#include "tools/verify.h"


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
    if (verify_opt.strict && !verify_opt.status)
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
        if (!v->passes) vfile_verify(v, algo, 0);
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
                if (!verify_opt.status) cli_error(v->shown, "no tensor '%s' in the file", esc);
                e->bad = 1;
                tensors_ok = 0;
            }
            if (e->bad) {
                any_bad = 1;
                tl->mismatched++;
                const char *fname = m->g[g].open != m->g[g].file ? m->g[g].open : NULL;
                if (e->part == PART_FILE)
                    verify_result_line(fname ? fname : e->name, NULL, 0, "FAILED", NULL);
                else if (e->part == PART_DATA && !e->split)
                    verify_result_line(m->g[g].open, MANIFEST_DATA_PART, MANIFEST_DATA_PART_LEN, "FAILED", NULL);
                else verify_result_line(m->g[g].open, e->name + e->split + 1, e->len - e->split - 1,
                                 "FAILED", NULL);
            }
        }
    }
    if (any_bad) {
        if (v->status < CLI_EXIT_NEGATIVE) v->status = CLI_EXIT_NEGATIVE;
        if (file_bad && tensors_ok && !verify_opt.status) {
            const char *where = have_meta && meta_ok ? "outside the metadata and tensors (padding "
                                                       "or trailing bytes)"
                              : have_meta ? "in the metadata" : "outside the tensors";
            if (n_tensor_entries)
                cli_error(v->shown, "the %llu listed tensors match: the difference is %s",
                          (unsigned long long)n_tensor_entries, where);
        }
    } else if (!v->failed && v->status == CLI_EXIT_OK) {
        verify_result_line(m->g[g].shown, NULL, 0, "OK", NULL);
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
int verify_check_manifest(char **files, int n_files)
{
    struct manifest m;
    memset(&m, 0, sizeof m);
    int status = read_manifest(verify_opt.manifest, &m);
    const char *shown = m.shown;
    if (status) goto done;
    if (m.n == 0) {
        cli_error(shown, "no properly formatted checksum lines found");
        status = CLI_EXIT_NEGATIVE;
        goto done;
    }
    split_names(&m);
    /* the same words, another meaning: say so before any result */
    if (m.llama && !verify_opt.status)
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
        if (strcmp(gr->open, "-") == 0 && strcmp(verify_opt.manifest, "-") == 0) {
            cli_error("-", "standard input holds the manifest, not the file");
            status = CLI_EXIT_TROUBLE;
            continue;
        }
        if (!gr->exists && strcmp(gr->open, "-") != 0 && verify_opt.ignore_missing) {
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
    if (!verify_opt.status) {
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
    if ((m.truncated || (m.malformed && verify_opt.strict)) && status < CLI_EXIT_NEGATIVE)
        status = CLI_EXIT_NEGATIVE;
    if (verify_opt.ignore_missing && tl.verified == 0 && status == CLI_EXIT_OK) {
        cli_error(shown, "no file was verified");
        status = CLI_EXIT_NEGATIVE;
    }
done:
    free_manifest(&m);
    return status;
}
