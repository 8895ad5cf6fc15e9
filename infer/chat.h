/*
 * chat.h -- the ChatML prompts Qwen2.5 and Qwen3 instruct models expect,
 * and Qwen3's thinking block in a reply.
 *
 * One user turn becomes
 *
 *   <|im_start|>system\nSYSTEM<|im_end|>\n<|im_start|>user\nPROMPT<|im_end|>\n<|im_start|>assistant\n
 *
 * which is what the model's own chat template renders for a single user
 * message (with SYSTEM its default system prompt when none is given).
 * Qwen3's template has no default system prompt (without SYSTEM the
 * system turn is left out) and, with thinking off, ends the prompt with an
 * empty thinking block, "<think>\n\n</think>\n\n", after "assistant\n";
 * with thinking on (its default) the model writes that block itself, its
 * reasoning between the two markers, before the answer.  The
 * template's markers are always the special tokens; the system and user
 * texts are tokenized as text, with special-token text in them recognised
 * only when asked.  The Jinja template in the file is never evaluated.
 */
#ifndef QWEN_CHAT_H
#define QWEN_CHAT_H

#include <stddef.h>

#include "gguf/gguf.h"
#include "infer/arch.h"
#include "infer/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Qwen2.5's default system prompt. */
#define QWEN_CHAT_DEFAULT_SYSTEM "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

/* Flags for qwen_chat_tokenize. */
enum qwen_chat_flags {
    QWEN_CHAT_RAW = 1u << 0,     /* no template: the prompt alone */
    QWEN_CHAT_SPECIAL = 1u << 1, /* recognise special-token text in the texts */
    QWEN_CHAT_NO_DEFAULT_SYSTEM = 1u << 2, /* no system turn when system is NULL (Qwen3) */
    QWEN_CHAT_NO_THINK = 1u << 3, /* end with an empty thinking block (Qwen3, thinking off) */
    QWEN_CHAT_TURN = 1u << 4     /* a later turn of a conversation: no system turn, and
                                  * the ids go after the last reply's end token and line
                                  * break */
};

/* The flags of a template of style `style` (an architecture's, arch.h)
 * with thinking on (think != 0) or off; a template without thinking
 * ignores think. */
unsigned qwen_chat_style_flags(enum qwen_chat_style style, int think);

/* Appends to *out the ids of the prompt (len bytes at prompt) wrapped in
 * the ChatML template above, with the system text (system_len bytes at
 * system; NULL for QWEN_CHAT_DEFAULT_SYSTEM).  With QWEN_CHAT_RAW the
 * prompt alone is tokenized and system is ignored.
 *
 * The template's texts are tokenized together with the text next to them
 * ("system\n" with SYSTEM, "user\n" with PROMPT), as tokenizing the whole
 * rendered string would do.
 *
 * Returns GGUF_OK; GGUF_E_NOT_FOUND when the vocabulary has no
 * <|im_start|> or <|im_end|> token (not with QWEN_CHAT_RAW), or no <think>
 * or </think> token (with QWEN_CHAT_NO_THINK);
 * GGUF_E_NOMEM (out keeps the ids it had); GGUF_E_INVALID for NULL
 * arguments.  err may be NULL. */
int qwen_chat_tokenize(const qwen_tokenizer *tok, const char *system, size_t system_len,
                       const char *prompt, size_t len, unsigned flags, qwen_ids *out,
                       gguf_error *err);

/* Hides the thinking block of a reply as it streams out: the bytes of each
 * token from the <think> token (when the reply starts with one) to the
 * </think> token, both included, and the white space after it, so that
 * what is left is the answer.  Tokens are matched by id.  A reply without
 * the block passes whole. */
typedef struct qwen_think_filter {
    int32_t open, close;    /* the ids of <think> and </think>; -1: none */
    int state;              /* where the reply is: see chat.c */
} qwen_think_filter;

/* A filter for tok's <think> and </think> tokens (when the vocabulary has
 * not both, one that passes everything). */
void qwen_think_filter_init(qwen_think_filter *f, const qwen_tokenizer *tok);

/* The filter with the ids open and close (for tests: -1 passes all). */
void qwen_think_filter_init_ids(qwen_think_filter *f, int32_t open, int32_t close);

/* Of the *n bytes at p, the bytes of token id, returns the part to print
 * and stores its length in *n (0: nothing).  The part is the tail of p. */
const char *qwen_think_filter_feed(qwen_think_filter *f, int32_t id, const char *p, size_t *n);

/* 1 while the filter is inside the thinking block or the white space
 * after it (nothing of the answer printed yet). */
int qwen_think_filter_hiding(const qwen_think_filter *f);

#ifdef __cplusplus
}
#endif

#endif /* QWEN_CHAT_H */
