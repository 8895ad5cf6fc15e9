/*
 * generate.h -- the generation loop: prompts in, replies out, for one
 * conversation or many at once.
 *
 * A generator runs conversations on the sequences of a context
 * (context.h): it takes a prompt whenever a sequence is free, feeds it,
 * then samples, accepts, tests for the end, detokenizes and streams each
 * reply token, one decode step at a time for all the conversations it
 * holds (continuous batching: each step is one batch of the next token of
 * every reply under way and as much of the waiting prompts as the batch
 * has room for, so every weight is read once for all of them; when a reply
 * ends, the next prompt starts in its sequence).  A context of one
 * sequence runs one conversation after the other.
 *
 * Every conversation samples with its own sampler, started from the same
 * seed: a prompt gets the same reply with the same settings whether it
 * runs alone or beside others, in any slot and at any batch size.  Greedy
 * replies (temperature 0) are the same too, as the CPU backend computes
 * each token of a batch with the same arithmetic as alone (the tests hold
 * it to identical logits).
 *
 * Replies stream as UTF-8 text: control tokens and the end token are not
 * printed, bytes of a character split between tokens are held until it is
 * whole, and with hide_think the thinking block of a Qwen3 reply is left
 * out (chat.h).  With print_ids the reply is its token ids instead,
 * separated by spaces, the end token included.
 *
 * Nothing is allocated per decode step: next() appends a prompt to a
 * buffer of the sequence it goes to, which keeps its room for the next.
 */
#ifndef QWEN_GENERATE_H
#define QWEN_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "infer/context.h"
#include "infer/sampler.h"
#include "infer/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Why a reply ended. */
enum qwen_stop {
    QWEN_STOP_EOS = 0,      /* the model chose an end token */
    QWEN_STOP_LENGTH,       /* n_predict tokens */
    QWEN_STOP_CONTEXT,      /* the sequence's context is full */
    QWEN_STOP_CANCELLED     /* the caller's cancel() said so */
};

/* "eos", "length", "context", "cancelled". */
const char *qwen_stop_name(enum qwen_stop s);

typedef struct qwen_gen_params {
    qwen_sampler_params sampler;  /* every conversation starts from its seed */
    int64_t n_predict;      /* most tokens of a reply; < 0: no limit */
    int ignore_eos;         /* 1: never sample an end token */
    int print_ids;          /* 1: the reply is its ids ("12 7 151645") */
    int hide_think;         /* 1: leave out a leading <think>...</think> block */
} qwen_gen_params;

/* n_predict -1, ignore_eos, print_ids and hide_think 0, the sampler's
 * defaults. */
qwen_gen_params qwen_gen_defaults(void);

/* What a conversation came to. */
typedef struct qwen_gen_reply {
    uint64_t n_prompt, n_gen;   /* tokens of the prompt; of the reply, the end token not counted */
    double prompt_s, gen_s;     /* wall time of the steps that fed its prompt; of the rest */
    enum qwen_stop stop;
} qwen_gen_reply;

/* The caller's side of qwen_generate().  Conversations are numbered from 0
 * in the order next() gives them. */
typedef struct qwen_gen_io {
    /* The next conversation's prompt: appends its ids to *ids (empty when
     * called) and returns 1; returns 0 when there are no more prompts, or
     * -1 to take no more (an error of the caller's own: the conversations
     * under way still end normally).  A prompt of no ids gets an empty
     * reply at once.  Called whenever a sequence is free. */
    int (*next)(void *user, qwen_ids *ids);
    /* n bytes of conversation k's reply.  Returns 0, or -1 to stop all
     * (the output failed): qwen_generate() then returns GGUF_E_IO. */
    int (*text)(void *user, uint64_t k, const char *p, size_t n);
    /* Conversation k has ended (after its last text). */
    void (*done)(void *user, uint64_t k, const qwen_gen_reply *r);
    /* Asked before every step: nonzero ends the conversations under way
     * (QWEN_STOP_CANCELLED) and takes no more.  May be NULL. */
    int (*cancel)(void *user);
    void *user;
} qwen_gen_io;

/* Totals over all conversations so far, for statistics: the time of each
 * step is shared between prompt and generation by the tokens of each in
 * it. */
typedef struct qwen_gen_totals {
    uint64_t prompt_tokens, gen_tokens;
    double prompt_s, gen_s;
} qwen_gen_totals;

typedef struct qwen_generator qwen_generator;

/* A generator over ctx (every sequence of it a slot for a conversation;
 * ctx must outlive the generator and is the generator's to use) and tok
 * (the model's), with parameters p (copied).
 *
 * Returns GGUF_OK and the generator in *out (free it with
 * qwen_generator_free); GGUF_E_INVALID for NULL arguments, a context
 * whose batch or logits (n_outputs) are fewer than its sequences, or sampler
 * settings it refuses; GGUF_E_NOMEM.  *out is NULL on failure. */
int qwen_generator_new(qwen_generator **out, qwen_context *ctx, const qwen_tokenizer *tok,
                       const qwen_gen_params *p, gguf_error *err);

void qwen_generator_free(qwen_generator *g);

/* Runs conversations until next() has no more (or refuses more) and every
 * reply has ended, or cancel() says so.
 *
 * Returns GGUF_OK; GGUF_E_INVALID for a prompt longer than a sequence's
 * context (the message gives both lengths); GGUF_E_FORMAT for logits
 * that are not finite (damaged weights; the message names the step and
 * the token); GGUF_E_IO when text() failed; a backend's error.  On an
 * error the conversations under way end without done(). */
int qwen_generate(qwen_generator *g, const qwen_gen_io *io, gguf_error *err);

/* The totals of the conversations run so far. */
qwen_gen_totals qwen_generator_totals(const qwen_generator *g);

/* Runs the n ids at ids through sequence seq of ctx from position 0 (what
 * the sequence held is forgotten), in batches of the context's batch
 * size, and stores in *logits its logits after the last (borrowed, valid
 * until the next decode).
 *
 * Returns GGUF_OK; GGUF_E_INVALID for n 0 or longer than the context;
 * GGUF_E_FORMAT for logits that are not finite; a backend's error. */
int qwen_prompt_logits(qwen_context *ctx, int32_t seq, const int32_t *ids, size_t n,
                       const float **logits, gguf_error *err);

#ifdef __cplusplus
}
#endif

#endif /* QWEN_GENERATE_H */
