/*
 * imatrix.h -- importance matrices as llama.cpp's llama-imatrix writes
 * them, for gguf-requant --imatrix.  Not installed.
 *
 * An importance matrix holds, for each weight matrix a model was run with,
 * the mean square of the activations each of its columns met: one float
 * per element of a row (per element of a row of each expert for stacked
 * expert tensors).  Quantizers weigh each weight's error by it.
 *
 * Two formats are read, told apart by the GGUF magic:
 *  - GGUF (llama-imatrix's default): for each matrix NAME a tensor
 *    NAME.in_sum2 (F32, [n_per_row, n_mat]: sums of squares) and NAME.counts
 *    (F32, [1, n_mat]: the activations summed); the value is in_sum2 /
 *    counts per matrix row, or 1 where the count is 0 (no data).  Keys
 *    imatrix.datasets (array of strings), imatrix.chunk_count and
 *    imatrix.chunk_size (UINT32) must be there, as llama-quantize requires.
 *  - the older .dat format (--output-format dat), little-endian: int32
 *    n_entries (at least 1); per entry int32 name length, the name, int32
 *    ncall, int32 nval (at least 1), nval floats; then, optionally, int32
 *    the chunk count and an int32-length dataset name.  The value is the
 *    float divided by ncall (when ncall > 0).
 * Both give the values llama-quantize's loader computes, bit for bit.
 */
#ifndef TOOLS_IMATRIX_H
#define TOOLS_IMATRIX_H

#include <stddef.h>
#include <stdint.h>

struct imatrix_entry {
    char *name;             /* NUL-terminated, as in the model ("blk.0.attn_q.weight") */
    float *values;          /* [n] */
    uint64_t n;
    int used;               /* set by the caller: a tensor was quantized with it */
};

struct imatrix {
    const char *path;       /* as given */
    int gguf;               /* 1: the GGUF format, 0: .dat */
    struct imatrix_entry *e;    /* [n], sorted by name */
    size_t n;
    char *dataset;          /* the first dataset named, or NULL */
    int64_t chunks;         /* chunks it was computed on, or -1 when not said */
};

/* Reads the importance matrix at path.  Returns 0, or -1 after a message
 * naming the file, the entry and the byte offset; values that are not
 * finite, an entry named twice and a file that is neither format are
 * errors.  Memory is bounded by the file's size. */
int imatrix_load(struct imatrix *m, const char *path);

/* The entry for tensor `name` (len bytes), or NULL. */
struct imatrix_entry *imatrix_find(const struct imatrix *m, const char *name, size_t len);

/* Keeps only the entries whose names contain one of the n_inc strings of
 * inc (when n_inc > 0), then drops those containing one of exc: as
 * llama-quantize's --include-weights and --exclude-weights. */
void imatrix_filter(struct imatrix *m, const char *const *inc, size_t n_inc, const char *const *exc,
                    size_t n_exc);

void imatrix_free(struct imatrix *m);

#endif /* TOOLS_IMATRIX_H */
