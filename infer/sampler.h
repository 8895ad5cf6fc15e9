/*
 * sampler.h -- choosing the next token from the logits.
 *
 * The steps, in the order llama.cpp's default chain applies them:
 * repetition penalty over the last tokens; then, with temperature <= 0, the
 * argmax (lowest id among equal logits); otherwise top-k, top-p, min-p,
 * temperature, and a draw from the remaining distribution with the
 * sampler's own pseudo-random generator, so that a seed gives the same
 * tokens on every machine.
 */
#ifndef QWEN_SAMPLER_H
#define QWEN_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sampling settings.  Fill with qwen_sampler_defaults(), then change. */
typedef struct qwen_sampler_params {
    float temp;             /* <= 0: greedy */
    int32_t top_k;          /* keep the k most likely; <= 0: all */
    float top_p;            /* keep the smallest set reaching this mass; >= 1: all */
    float min_p;            /* keep tokens with p >= min_p * p(most likely); <= 0: all */
    float repeat_penalty;   /* 1: none */
    uint32_t repeat_last_n; /* how many recent tokens are penalised */
    uint64_t seed;
} qwen_sampler_params;

/* The defaults of llama.cpp's tools: temp 0.8, top-k 40, top-p 0.95,
 * min-p 0.05, repetition penalty 1.0 over the last 64 tokens, seed 0. */
qwen_sampler_params qwen_sampler_defaults(void);

typedef struct qwen_sampler qwen_sampler;

/* Creates a sampler for a vocabulary of n_vocab tokens with settings *p
 * (copied).  Returns GGUF_OK and the sampler in *out (free it with
 * qwen_sampler_free), GGUF_E_INVALID for NULL arguments, n_vocab < 1, a
 * NaN setting, top_p or min_p outside [0, 1], a repeat_penalty that is
 * not finite and positive, GGUF_E_NOMEM.  *out is NULL on
 * failure. */
int qwen_sampler_new(qwen_sampler **out, const qwen_sampler_params *p, int32_t n_vocab,
                     gguf_error *err);

/* Releases the sampler.  NULL is allowed. */
void qwen_sampler_free(qwen_sampler *s);

/* Forgets the recent tokens (a new conversation); the generator is not
 * reseeded. */
void qwen_sampler_reset(qwen_sampler *s);

/* Restarts the generator from seed: the draws that follow are those of a
 * new sampler with that seed. */
void qwen_sampler_seed(qwen_sampler *s, uint64_t seed);

/* Records token id as seen (prompt or generated), for the repetition
 * penalty.  Ids outside the vocabulary are ignored. */
void qwen_sampler_accept(qwen_sampler *s, int32_t id);

/* Chooses the next token from the n_vocab logits (not modified).  Does not
 * record it: call qwen_sampler_accept() with the result.  NaN logits are
 * never chosen unless all are NaN (then 0 is returned).  Allocates
 * nothing. */
int32_t qwen_sampler_sample(qwen_sampler *s, const float *logits);

/* The ids of the m most likely tokens of the n_vocab logits in the order
 * the sampler ranks them (after the repetition penalty; the higher logit
 * first, the lower id among equals; NaN left out) into ids.  Returns how
 * many (fewer than m only when fewer are not NaN).  For a caller that
 * tests candidates in the sampler's order (grammar.h's).  Allocates
 * nothing. */
size_t qwen_sampler_order(qwen_sampler *s, const float *logits, size_t m, int32_t *ids);

/* The sampler's generator: splitmix64, one 64-bit state word.  Exposed for
 * tests.  qwen_rng_next returns the next 64 bits; qwen_rng_uniform a double
 * in [0, 1) from the top 53 of them. */
uint64_t qwen_rng_next(uint64_t *state);
double qwen_rng_uniform(uint64_t *state);

#ifdef __cplusplus
}
#endif

#endif /* QWEN_SAMPLER_H */
