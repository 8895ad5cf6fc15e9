/*
 * ref-forward.h -- a slow, plain reference of the Qwen2 and Qwen3 forward
 * passes for tests: every weight dequantized to double up front, double
 * arithmetic throughout, attention recomputed over the whole sequence (no
 * cache).  Written apart from infer/ on purpose: it shares only libgguf's
 * reader and dequantizers with the code under test.
 *
 *   qwen2  Q, K and V with biases; heads of width / heads.
 *   qwen3  no biases; each head of Q and of K RMS-normed (attn_q_norm,
 *          attn_k_norm, one weight per element of a head) before RoPE;
 *          heads of qwen3.attention.key_length (width / heads when
 *          absent), so that Q may be wider or narrower than the model.
 */
#ifndef TESTS_REF_FORWARD_H
#define TESTS_REF_FORWARD_H

#include <stddef.h>
#include <stdint.h>

typedef struct ref_model ref_model;

/* Loads the qwen2 or qwen3 model at path (general.architecture says
 * which).  Returns NULL with a message in msg (cap bytes) on any failure:
 * another architecture, a missing key or tensor, a tensor of another size,
 * a head width the reference cannot use (odd, or value_length unlike
 * key_length). */
ref_model *ref_model_load(const char *path, char *msg, size_t cap);

void ref_model_free(ref_model *m);

uint32_t ref_model_vocab(const ref_model *m);

/* The n_vocab logits after the last of the n tokens (positions 0 .. n-1).
 * With kv_f16, keys (after RoPE) and values are rounded to F16, the
 * precision in which the model's KV cache stores them. */
void ref_forward(const ref_model *m, const int32_t *tokens, uint32_t n, int kv_f16,
                 double *logits);

#endif
