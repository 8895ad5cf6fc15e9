/*
 * context.h -- running a model: a context over many sequences, on a
 * backend.
 *
 * A context holds the key/value cache of up to n_seq sequences of up to
 * n_ctx positions each, sized when it is made (nothing is allocated per
 * step), and the buffers of a batch of up to n_batch tokens.  A batch is a
 * list of tokens, each with its sequence id, its position in that sequence
 * and whether its logits are wanted; qwen_decode() runs them all through
 * the model in one step, every weight read once for the whole batch, and
 * the attention of each token sees only the earlier positions of its own
 * sequence.  Prefill (many tokens of one sequence), decode (one token) and
 * batched decode (one token of each of many sequences) are all batches.
 *
 * Positions are appended: a batch's entries of sequence s have positions
 * qwen_seq_pos(s), qwen_seq_pos(s) + 1, ... in order.  qwen_seq_truncate()
 * forgets the positions from a given one on (to go back and decode other
 * tokens there), qwen_seq_clear() all of them.
 *
 * The backend ("cpu"; see backend.h) computes; this file's functions check
 * every batch before the backend sees it, so that a backend computes
 * only batches it can.
 */
#ifndef QWEN_CONTEXT_H
#define QWEN_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "infer/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most threads a context takes. */
#define QWEN_MAX_THREADS 1024

/* Most sequences a context holds. */
#define QWEN_MAX_SEQ 1024u

typedef struct qwen_params {
    const char *backend;    /* "cpu", or another a program added (backend.h); NULL: "cpu" */
    uint32_t n_ctx;         /* positions per sequence, 1 .. the model's context length */
    uint32_t n_seq;         /* sequences, ids 0 .. n_seq - 1 (1 .. QWEN_MAX_SEQ) */
    uint32_t n_batch;       /* most tokens in one qwen_decode() (1 .. n_ctx * n_seq) */
    uint32_t n_outputs;     /* most entries of a batch with logits (0: n_seq) */
    int n_threads;          /* 0: OpenMP's default (omp_get_max_threads()) */
    int plain;              /* 1: every product in float over dequantized weight rows,
                             * the slow reference of the quantized path */
    int no_repack;          /* 1: the CPU backend multiplies the mapped rows as they
                             * are, rather than copies of the matrices the SIMD level
                             * reads faster interleaved (qwen_memory.repacked) */
    /* Called now and then while a backend copies the weights to its device
     * (bytes done of total; done == total last); NULL: none. */
    void (*progress)(void *user, uint64_t done, uint64_t total);
    void *progress_user;
} qwen_params;

/* The threads a context takes when n_threads is 0: OpenMP's default
 * (omp_get_max_threads(), OMP_NUM_THREADS), at most QWEN_MAX_THREADS; 1 in
 * a build without OpenMP. */
int qwen_default_threads(void);

/* Fits p to the model of configuration c as qwen-run does: n_ctx 0 becomes
 * the default (4096), or the model's context length when that is shorter;
 * n_batch at most n_ctx * n_seq. */
void qwen_params_fit(qwen_params *p, const qwen_config *c);

/* backend "cpu", n_ctx 4096, n_seq 1, n_batch 512, n_outputs 0, n_threads 0,
 * plain 0, no progress. */
qwen_params qwen_params_defaults(void);

/* A batch: n entries of token, seq, pos and logits (1: wanted). */
typedef struct qwen_batch {
    uint32_t n, cap;
    int32_t *token;
    int32_t *seq;
    uint32_t *pos;
    uint8_t *logits;
} qwen_batch;

/* A batch of room for cap entries.  GGUF_OK, GGUF_E_NOMEM, GGUF_E_INVALID. */
int qwen_batch_init(qwen_batch *b, uint32_t cap, gguf_error *err);

void qwen_batch_free(qwen_batch *b);

/* Appends an entry; the caller keeps n < cap (else: nothing, returns -1;
 * 0 on success). */
int qwen_batch_add(qwen_batch *b, int32_t token, int32_t seq, uint32_t pos, int logits);

typedef struct qwen_context qwen_context;

/* A context over model m (which must outlive it) with parameters p.
 *
 * Returns GGUF_OK and stores the context in *out (free it with
 * qwen_context_free); GGUF_E_INVALID for NULL arguments or parameters
 * out of range (the message names the parameter); GGUF_E_UNSUPPORTED for
 * an unknown backend (the message lists the known ones) or one this
 * machine cannot run; GGUF_E_NOMEM.  *out is NULL on failure. */
int qwen_context_new(qwen_context **out, const qwen_model *m, const qwen_params *p,
                     gguf_error *err);

void qwen_context_free(qwen_context *ctx);

/* The parameters the context was made with (n_outputs and n_threads
 * resolved). */
const qwen_params *qwen_context_params(const qwen_context *ctx);

const qwen_model *qwen_context_model(const qwen_context *ctx);

/* Memory of a context, in bytes. */
typedef struct qwen_memory {
    uint64_t weights;       /* the model's tensor data: mapped from its files on the CPU
                             * (read on demand), copied to device memory by a GPU backend */
    uint64_t kv_cache;      /* keys and values of n_seq sequences of n_ctx positions (F16) */
    uint64_t compute;       /* the backend's buffers: a batch's activations, quantized
                             * inputs and per-thread scratch */
    uint64_t repacked;      /* of the weights, those the CPU backend copied into its own
                             * memory in another layout (quant.h's interleaved rows); their
                             * mapped pages are given back */
    uint64_t host;          /* the context's own: logits of n_outputs entries, bookkeeping */
    uint64_t device;        /* device memory a GPU backend holds (its weights, cache and
                             * buffers together); 0 on the CPU */
} qwen_memory;

/* What ctx holds: every buffer counted as it was allocated. */
void qwen_context_memory(const qwen_context *ctx, qwen_memory *out);

/* What qwen_context_new() would allocate for the model in the open set
 * with parameters p, without loading it: the hyperparameters from the
 * architecture table, the weight types from the tensor directory.  p is
 * fitted (qwen_params_fit) and resolved in place as qwen_context_new()
 * resolves it (n_outputs, n_threads 0: qwen_default_threads()).  Tensor
 * data is not read, so the set may be a stream.  The figures equal
 * qwen_context_memory()'s for a context made with the same parameters on
 * this machine (the SIMD level sizes some buffers), except device, which
 * only a context knows.
 *
 * Returns GGUF_OK; GGUF_E_UNSUPPORTED for an architecture the table lacks
 * or a backend that cannot estimate (out->weights is still set); the
 * errors of qwen_config_read(); GGUF_E_INVALID for parameters
 * qwen_context_new() refuses. */
int qwen_estimate(const gguf_split *set, qwen_params *p, qwen_memory *out, gguf_error *err);

/* The backends this build has, "cpu" first, for messages. */
const char *qwen_backend_names(void);

/* Runs batch b through the model: adds each entry's keys and values to its
 * sequence's cache and computes the logits of the entries that want them.
 *
 * Returns GGUF_OK; GGUF_E_INVALID (the context unchanged, the message
 * names the entry) for an empty batch or one longer than n_batch, a token
 * outside the vocabulary, a sequence id outside 0 .. n_seq - 1, a position
 * other than the next of its sequence, a position past n_ctx, more
 * entries with logits than n_outputs; a backend's failure. */
int qwen_decode(qwen_context *ctx, const qwen_batch *b, gguf_error *err);

/* The n_vocab logits of entry i of the last batch decoded, or NULL when
 * the entry did not want them (or there is no such entry).  Borrowed from
 * the context, valid until the next qwen_decode(). */
const float *qwen_logits(const qwen_context *ctx, uint32_t i);

/* The next position of sequence seq (its length); 0 for an id out of
 * range. */
uint32_t qwen_seq_pos(const qwen_context *ctx, int32_t seq);

/* Forgets the positions pos .. of sequence seq (nothing when pos is not
 * below its length, or seq is out of range). */
void qwen_seq_truncate(qwen_context *ctx, int32_t seq, uint32_t pos);

/* Forgets every position of sequence seq. */
void qwen_seq_clear(qwen_context *ctx, int32_t seq);

/* The bytes of the keys and values of n positions (qwen_seq_state_get):
 * for each position, for each layer, its key and then its value, n_kv F16
 * numbers each (in the host's byte order).  The state of the first m
 * positions is the first qwen_seq_state_size(ctx, m) bytes of that of
 * more. */
uint64_t qwen_seq_state_size(const qwen_context *ctx, uint32_t n);

/* Copies the keys and values of the first n positions of sequence seq to
 * buf (qwen_seq_state_size(ctx, n) bytes): what a later
 * qwen_seq_state_set() puts back, in this context or another over a model
 * of the same shape, to go on from there without computing them again.
 * Returns GGUF_OK; GGUF_E_INVALID for seq out of range or n past its
 * length; GGUF_E_UNSUPPORTED when the backend cannot. */
int qwen_seq_state_get(qwen_context *ctx, int32_t seq, uint32_t n, void *buf, gguf_error *err);

/* Puts the keys and values of n positions from buf into sequence seq,
 * which then holds those n positions (what it held is forgotten).
 * Returns GGUF_OK; GGUF_E_INVALID for seq out of range or n past n_ctx;
 * GGUF_E_UNSUPPORTED when the backend cannot. */
int qwen_seq_state_set(qwen_context *ctx, int32_t seq, uint32_t n, const void *buf,
                       gguf_error *err);

/* Sets the number of threads (1 .. QWEN_MAX_THREADS; a build without
 * OpenMP uses 1).  GGUF_OK, GGUF_E_INVALID, GGUF_E_NOMEM (unchanged). */
int qwen_context_set_threads(qwen_context *ctx, int n, gguf_error *err);

/* The number of threads in use. */
int qwen_context_threads(const qwen_context *ctx);

/* Switches the products to the plain reference (plain != 0) or back. */
void qwen_context_set_plain(qwen_context *ctx, int plain);

/* A line on the backend's device into buf (cap bytes, NUL-terminated):
 * "cpu: N threads, SIMD LEVEL", "cuda: DEVICE (sm_XY), N MiB of M MiB in
 * use". */
void qwen_context_describe(const qwen_context *ctx, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* QWEN_CONTEXT_H */
