/*
 * forward.h -- one sequence through a model on the CPU: a thin wrapper
 * over a context of one sequence (context.h), for callers that need no
 * more.
 *
 * A qwen_state holds the F16 key/value cache of its sequence and every
 * activation buffer, all allocated by qwen_state_new(); the forward pass
 * itself allocates nothing.  A batch of tokens (prefill) and a single
 * token (decode) go through the same code.
 *
 * Per layer (infer/cpu/graph.c): RMSNorm; Q, K, V projections, with
 * biases (qwen2); an RMSNorm over each head of Q and of K (qwen3); RoPE in
 * the NeoX arrangement (element i of each head rotated with element i +
 * head_dim/2 by the angle pos * base^(-2i/head_dim)); grouped-query
 * attention, causal, over the keys and values of all earlier positions,
 * stored as F16; output projection; residual; RMSNorm; SwiGLU feed-forward
 * (silu(gate) * up, then down); residual.  Then the final RMSNorm and the
 * logits of the output matrix (token_embd when tied).
 *
 * Matrix products quantize their input to 8 bits per block and take
 * integer dot products with the quantized weights (gguf_matmul()), as the
 * reference engines do; plain mode multiplies dequantized rows in float
 * instead, slowly, as the reference the fast path is tested against.  The
 * work is shared among OpenMP threads.
 */
#ifndef QWEN_FORWARD_H
#define QWEN_FORWARD_H

#include <stdint.h>

#include "gguf/gguf.h"
#include "infer/context.h"
#include "infer/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qwen_state qwen_state;

/* Creates the state of one sequence over model m (which must outlive it)
 * for up to n_ctx positions, processing at most n_batch tokens per step
 * (longer inputs to qwen_forward() are split).  0 < n_batch <= n_ctx <=
 * the model's context length.
 *
 * Returns GGUF_OK and stores the state in *out (free it with
 * qwen_state_free), GGUF_E_INVALID for NULL arguments or sizes out of
 * range, GGUF_E_NOMEM.  *out is NULL on failure. */
int qwen_state_new(qwen_state **out, const qwen_model *m, uint32_t n_ctx, uint32_t n_batch,
                   gguf_error *err);

/* The context the state runs on (for its parameters). */
const qwen_context *qwen_state_context(const qwen_state *s);

/* Sets the number of threads the forward pass runs on (default: OpenMP's
 * omp_get_max_threads() when the state was made; 1 in a build without
 * OpenMP).  Returns GGUF_OK, GGUF_E_INVALID for n outside 1 ..
 * QWEN_MAX_THREADS, GGUF_E_NOMEM (the state is then unchanged). */
int qwen_state_set_threads(qwen_state *s, int n, gguf_error *err);

/* The number of threads in use. */
int qwen_state_threads(const qwen_state *s);

/* plain != 0: every product from now on multiplies dequantized weight rows
 * with the float inputs (the reference of the quantized path; slow).
 * 0 (the default): quantized activations for every weight type that has
 * them. */
void qwen_state_set_plain(qwen_state *s, int plain);

/* Releases the state.  NULL is allowed. */
void qwen_state_free(qwen_state *s);

/* Forgets the sequence: the next token goes to position 0. */
void qwen_state_reset(qwen_state *s);

/* Number of tokens in the sequence so far (the position of the next one). */
uint32_t qwen_state_pos(const qwen_state *s);

/* Runs the n tokens at `tokens` through the model at positions pos ..
 * pos + n - 1 (pos = qwen_state_pos()), adds their keys and values to the
 * cache, and computes the logits of the last of them (qwen_state_logits).
 *
 * Returns GGUF_OK; GGUF_E_INVALID when n is 0, a token id is outside the
 * vocabulary, or pos + n exceeds the context (the message says which); the
 * state is then unchanged. */
int qwen_forward(qwen_state *s, const int32_t *tokens, uint32_t n, gguf_error *err);

/* The n_vocab logits after the last qwen_forward(); borrowed from s, valid
 * until the next call.  Zeros before the first. */
const float *qwen_state_logits(const qwen_state *s);

#ifdef __cplusplus
}
#endif

#endif /* QWEN_FORWARD_H */
