/*
 * backend.h -- what a backend implements for context.c.
 *
 * The seam is one decode step: a backend owns its whole graph for a batch
 * (the order of the steps of each architecture's layers, its kernels, its
 * threads, its key/value cache), so that it can fuse steps freely.
 * context.c checks every batch first (see context.h): a backend sees only
 * batches of 1 .. n_batch entries with tokens in the vocabulary, sequence
 * ids below n_seq and positions appended in order below n_ctx, at most
 * n_outputs of them wanting logits.  The model code never includes a
 * backend's header; context.c finds backends by name.
 */
#ifndef QWEN_BACKEND_H
#define QWEN_BACKEND_H

#include <stddef.h>

#include "gguf/gguf.h"
#include "infer/context.h"
#include "infer/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qwen_backend {
    const char *name;
    /* Makes the backend's state for model m with parameters p (checked,
     * n_outputs and n_threads resolved).  GGUF_OK, GGUF_E_NOMEM,
     * GGUF_E_UNSUPPORTED. */
    int (*open)(void **impl, const qwen_model *m, const qwen_params *p, gguf_error *err);
    /* Decodes batch b; the logits of the entries that want them go to
     * logits, n_vocab floats each, in the order of the entries. */
    int (*decode)(void *impl, const qwen_batch *b, float *logits, gguf_error *err);
    /* Threads: set (GGUF_OK, GGUF_E_NOMEM unchanged) and read. */
    int (*set_threads)(void *impl, int n, gguf_error *err);
    int (*threads)(const void *impl);
    void (*set_plain)(void *impl, int plain);
    /* A line on the device for --stats (its name, the memory in use),
     * into buf (cap bytes, NUL-terminated). */
    void (*describe)(const void *impl, char *buf, size_t cap);
    void (*close)(void *impl);
    /* What the state holds: kv_cache, compute, repacked and device of *out
     * (the rest is context.c's), counted as allocated. */
    void (*memory)(const void *impl, qwen_memory *out);
    /* What open() would allocate, as memory() would then report it, for
     * configuration c, whose matrices (each a product's weights) have the
     * n_types types types[], those of type types[i] with 4 rows or more
     * bytes[i] bytes in all, with parameters p (checked, resolved);
     * NULL: the backend cannot say. */
    void (*estimate)(const qwen_config *c, const uint32_t *types, const uint64_t *bytes, size_t n_types,
                     const qwen_params *p, qwen_memory *out);
    /* The keys and values of positions 0 .. n-1 of sequence seq (checked:
     * n at most its length for get, n_ctx for set) copied to buf or from
     * it, in the layout of qwen_seq_state_get().  NULL: the backend
     * cannot. */
    int (*seq_get)(void *impl, int32_t seq, uint32_t n, void *buf, gguf_error *err);
    int (*seq_set)(void *impl, int32_t seq, uint32_t n, const void *buf, gguf_error *err);
} qwen_backend;

/* The CPU backend (infer/cpu/). */
extern const qwen_backend qwen_backend_cpu;

/* Most backends a program has. */
#define QWEN_MAX_BACKENDS 8

/* Adds backend be (which must outlive every context on it) to those
 * qwen_context_new() finds by name: the CPU's is always there; a program
 * built with another (infer/cuda/cuda.h) adds it before making contexts.
 * Adding one twice does nothing.  Returns GGUF_OK; GGUF_E_INVALID for a
 * name already taken by another backend or more than QWEN_MAX_BACKENDS. */
int qwen_backend_add(const qwen_backend *be);

#ifdef __cplusplus
}
#endif

#endif /* QWEN_BACKEND_H */
