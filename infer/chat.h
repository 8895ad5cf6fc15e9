/*
 * chat.h -- the ChatML prompt Qwen2.5 instruct models expect.
 *
 * One user turn becomes
 *
 *   <|im_start|>system\nSYSTEM<|im_end|>\n<|im_start|>user\nPROMPT<|im_end|>\n<|im_start|>assistant\n
 *
 * which is what the model's own chat template renders for a single user
 * message (with SYSTEM its default system prompt when none is given).  The
 * template's markers are always the special tokens; the system and user
 * texts are tokenized as text, with special-token text in them recognised
 * only when asked.  The Jinja template in the file is never evaluated.
 */
#ifndef QWEN_CHAT_H
#define QWEN_CHAT_H

#include <stddef.h>

#include "gguf/gguf.h"
#include "infer/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Qwen2.5's default system prompt. */
#define QWEN_CHAT_DEFAULT_SYSTEM "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

/* Flags for qwen_chat_tokenize. */
enum qwen_chat_flags {
    QWEN_CHAT_RAW = 1u << 0,     /* no template: the prompt alone */
    QWEN_CHAT_SPECIAL = 1u << 1  /* recognise special-token text in the texts */
};

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
 * <|im_start|> or <|im_end|> token (not with QWEN_CHAT_RAW);
 * GGUF_E_NOMEM (out keeps the ids it had); GGUF_E_INVALID for NULL
 * arguments.  err may be NULL. */
int qwen_chat_tokenize(const qwen_tokenizer *tok, const char *system, size_t system_len,
                       const char *prompt, size_t len, unsigned flags, qwen_ids *out,
                       gguf_error *err);

#ifdef __cplusplus
}
#endif

#endif /* QWEN_CHAT_H */
