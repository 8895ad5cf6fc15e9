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
 *
 * A sequence keeps what it holds after a conversation: the next prompt
 * that starts with the same tokens (a chat's next turn, which repeats the
 * conversation so far; a line with the system prompt of the line before)
 * computes only the rest, with the same reply as computed whole.
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
    QWEN_STOP_CANCELLED,    /* the caller's cancel() said so */
    QWEN_STOP_STRING,       /* the reply's text reached one of the stop strings */
    QWEN_STOP_GRAMMAR       /* the grammar allows no token there (and cannot end) */
};

/* "eos", "length", "context", "cancelled", "stop", "grammar". */
const char *qwen_stop_name(enum qwen_stop s);

/* Most alternatives n_logprobs may ask for (as the OpenAI API allows). */
#define QWEN_LOGPROBS_MAX 20

typedef struct qwen_gen_params {
    qwen_sampler_params sampler;  /* every conversation starts from its seed */
    int64_t n_predict;      /* most tokens of a reply; < 0: no limit */
    int ignore_eos;         /* 1: never sample an end token */
    int print_ids;          /* 1: the reply is its ids ("12 7 151645") */
    int hide_think;         /* 1: leave out a leading <think>...</think> block */
    /* Stop strings: a reply ends before the first place its text holds
     * one of them (QWEN_STOP_STRING), also when it spans tokens; the
     * string and what follows are not passed on.  Text that may be the
     * start of one is held back until it is known not to be.  The text is
     * what text() would get (after the thinking filter); with print_ids
     * the ids are printed as they come and the reply ends after the token
     * that completes a stop string.  n_stop strings, NUL-terminated, not
     * empty, at most QWEN_STOP_LEN_MAX bytes; borrowed: they must outlive
     * the generator. */
    const char *const *stop;
    size_t n_stop;
    /* A full context: 0 ends the reply (QWEN_STOP_CONTEXT); 1 drops half
     * of the tokens after the first n_keep of the conversation (prompt and
     * reply so far) and computes the rest again, so that the reply goes
     * on with the conversation's start and its latest tokens in view.
     * n_keep < 0: the whole prompt (a conversation whose prompt leaves no
     * room then ends as without the shift). */
    int context_shift;
    int64_t n_keep;
    /* > 0: token() gets the log-probability of each token sampled and of
     * the n_logprobs most likely (at most QWEN_LOGPROBS_MAX). */
    uint32_t n_logprobs;
    /* 1: keep the keys and values of a prompt (the prefix), and start each
     * conversation from the longest common start of its prompt with it,
     * copied rather than computed again: a system prompt all the prompts
     * share costs its prefill once.  The prefix is the last prompt that
     * went beyond what it shared with the one before (or the one given to
     * qwen_generator_set_prefix()).  The replies are the same as without,
     * the cached positions being what the backend computes in any batch.
     * A backend that cannot copy its cache (qwen_seq_state_get) computes
     * every prompt whole. */
    int reuse_prefix;
    /* A grammar every reply follows (grammar.h; borrowed: it must outlive
     * the generator): only tokens whose bytes it allows are sampled, the
     * end tokens only where the reply is a whole sentence of it (and then
     * always, even with ignore_eos, once nothing else can follow).  NULL:
     * none. */
    const struct qwen_grammar *grammar;
} qwen_gen_params;

/* Longest stop string. */
#define QWEN_STOP_LEN_MAX 4096

/* n_predict -1, ignore_eos, print_ids, hide_think, context_shift, n_keep
 * and n_logprobs 0, no stop strings, the sampler's defaults. */
qwen_gen_params qwen_gen_defaults(void);

/* A token sampled, for qwen_gen_io.token: its log-probability and those of
 * the n_top most likely tokens (most likely first, the lower id first
 * among equals), from the logits the sampler saw (end tokens at -inf with
 * ignore_eos, so left out of the top) divided by the temperature (1 at
 * temperature 0): log-softmax, as the OpenAI API reports them.  The
 * repetition penalty and the top-k, top-p and min-p cuts do not change
 * them. */
typedef struct qwen_gen_token {
    int32_t id;
    float logprob;
    uint32_t n_top;
    const int32_t *top_id;          /* borrowed, valid during the call */
    const float *top_logprob;
} qwen_gen_token;

/* What a conversation came to. */
typedef struct qwen_gen_reply {
    uint64_t n_prompt, n_gen;   /* tokens of the prompt; of the reply, the end token not counted */
    double prompt_s, gen_s;     /* wall time of the steps that fed its prompt; of the rest */
    enum qwen_stop stop;
    uint64_t n_shift;           /* context shifts (context_shift) */
    uint64_t n_cached;          /* prompt tokens not computed: held by its sequence from
                                 * the conversation before (the tokens fed there, the
                                 * reply's included), or copied from the prefix */
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
    /* Every token conversation k samples (the end token too), before its
     * text; the log-probabilities with n_logprobs only (else logprob 0 and
     * no top).  Returns 0, or -1 to stop all as text() does.  May be
     * NULL. */
    int (*token)(void *user, uint64_t k, const qwen_gen_token *t);
} qwen_gen_io;

/* Totals over all conversations so far, for statistics: the time of each
 * step is shared between prompt and generation by the tokens of each in
 * it.  Tokens fed again after a context shift count as prompt tokens. */
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
 * whose batch or logits (n_outputs) are fewer than its sequences, sampler
 * settings it refuses, an empty or too long stop string, n_logprobs over
 * QWEN_LOGPROBS_MAX; GGUF_E_NOMEM.  *out is NULL on failure. */
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

/* The prefix of reuse_prefix: returns its length n (0: none) and stores
 * its ids in *ids and their keys and values (qwen_seq_state_size(ctx, n)
 * bytes, see qwen_seq_state_get) in *state, borrowed until the generator
 * runs or changes again.  *changed (may be NULL) is 1 when a conversation
 * made it since the last qwen_generator_set_prefix(). */
size_t qwen_generator_prefix(const qwen_generator *g, const int32_t **ids, const void **state,
                             int *changed);

/* Makes the n ids at ids, whose keys and values are at state
 * (qwen_seq_state_size(ctx, n) bytes, as qwen_generator_prefix() gives
 * them, from a context over a model of the same shape), the prefix
 * (copied).  Returns GGUF_OK; GGUF_E_INVALID for n past the context, or a
 * generator without reuse_prefix; GGUF_E_NOMEM. */
int qwen_generator_set_prefix(qwen_generator *g, const int32_t *ids, size_t n, const void *state,
                              gguf_error *err);

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
