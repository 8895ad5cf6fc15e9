/*
 * verify.h -- the parts of gguf-verify: one file or split set
 * (verify-file.c), -c MANIFEST (verify-check.c), --embed
 * (verify-embed.c), and its options and main() (gguf-verify.c).  Not
 * installed.
 */
#ifndef TOOLS_VERIFY_H
#define TOOLS_VERIFY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "gguf/gguf.h"
#include "tools/cli.h"

enum mode { MODE_VERIFY, MODE_WRITE, MODE_CHECK, MODE_EMBED };

struct verify_options {
    enum mode mode;
    const char *manifest;       /* -c */
    uint32_t algo;              /* -a */
    int allow_trailing, strict, quiet, status, ignore_missing;
    int shard;                  /* --shard: a shard of a split set alone */
    const char *model;          /* --model, or NULL */
    int style;                  /* -w: the whole-file line's style (enum manifest_style) */
    int files_only;             /* -w --files-only: whole-file lines alone */
};

/* The options of this run (gguf-verify.c). */
extern struct verify_options verify_opt;

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

/* The shards verified with their sets so far (by device and inode), so
 * that a shard given after its set is not verified again.  (A plain file
 * given twice is verified twice, as sha256sum reads a file given twice.) */
struct seen {
    struct stat *st;
    size_t n, cap;
};

/* Prints "NAME: WORD" (and ": detail") on standard output unless --status;
 * OK lines also not with --quiet.  NAME is FILE or FILE:PART (part NULL:
 * FILE). */
void verify_result_line(const char *file, const char *part, size_t part_len, const char *word,
                        const char *detail);

/* Reports a problem that makes v fail (printf-style). */
void verify_problem(struct vfile *v, const char *fmt, ...) CLI_PRINTF(2, 3);

/* Reports trouble with v (it cannot be read): exit status 2. */
void verify_trouble(struct vfile *v, const char *msg);

/* Tensor t's name for messages, quoted and escaped, into buf (n bytes). */
const char *verify_tname(char *buf, size_t n, const gguf_tensor *t);

/* Opens v->name (a shard alone).  Returns 0, or -1 (reported). */
int vfile_open(struct vfile *v);
void vfile_close(struct vfile *v);

/* Hashes the file with algo (one pass; a stream allows one).  Returns 0,
 * or -1 (reported). */
int vfile_hash(struct vfile *v, uint32_t algo);

/* The checks of an open file v: its structure, llama.cpp's warnings,
 * --model, its hashes with hash_algo (-1: none but what the embedded
 * checksums need) and, with embedded_too, its embedded checksums.
 * Returns the number of embedded checksums that matched. */
uint64_t vfile_verify(struct vfile *v, int hash_algo, int embedded_too);

/* The default mode and -w on one file.  Returns its exit status. */
int verify_one(const char *name);

/* 1 when path was verified already with its set; else, with `add`, notes
 * it (when it exists) and returns 0. */
int verify_seen_before(struct seen *sn, const char *path, int add);

/* The default mode and -w on a file and the split set it belongs to.
 * Returns the worst exit status. */
int verify_set(const char *name, struct seen *sn);

/* -c: checks the files the manifest verify_opt.manifest lists (all of
 * them, or the n_files files given).  Returns the exit status. */
int verify_check_manifest(char **files, int n_files);

/* --embed IN OUT.  Returns the exit status. */
int verify_embed(const char *in, const char *outp);

#endif /* TOOLS_VERIFY_H */
