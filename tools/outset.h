/*
 * outset.h -- the files a tool writes as one output: one file, or the
 * shards of a split set named after it (OUT m.gguf: m-00001-of-0000N.gguf
 * ...), each written whole under a hidden name beside its final one
 * (".NAME.partial") and renamed into place only when all are written, so
 * that a set appears whole or not at all.  Not installed.
 */
#ifndef TOOLS_OUTSET_H
#define TOOLS_OUTSET_H

#include <stddef.h>
#include <stdint.h>

struct outset {
    uint32_t n;
    int split;          /* a split set (else n is 1 and the file is written directly) */
    char **path;        /* [n] the final names */
    char **tmp;         /* [n] split: the hidden names written first */
    int *done;          /* [n] written under tmp, not yet in place */
};

/* The names of n files for OUT: with split, the shards of a set named
 * after OUT less a final ".gguf" (gguf_split_name()); else OUT itself (n
 * must be 1).  Returns 0, or -1 after a message (out of memory). */
int outset_init(struct outset *s, const char *out, uint32_t n, int split);

/* The name to write file i to: its hidden name in a split set, else its
 * final one. */
const char *outset_target(const struct outset *s, uint32_t i);

/* File i is written: it is removed if the run fails or a fatal signal
 * ends it before outset_place(). */
void outset_done(struct outset *s, uint32_t i);

/* Puts a split set's files in place (renames), those already renamed
 * removed again when one cannot be, then syncs the directory.  Returns 0,
 * or -1 after a message. */
int outset_place(struct outset *s);

/* Rewrites a message (of size bytes) that names a hidden name of s to
 * name the final one instead: users know the names they asked for. */
void outset_name_message(const struct outset *s, char *msg, size_t size);

/* Removes the files written but not put in place, and frees s. */
void outset_free(struct outset *s);

#endif /* TOOLS_OUTSET_H */
