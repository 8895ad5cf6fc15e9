/*
 * chat.c -- the ChatML prompt of Qwen2.5.  See chat.h.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "infer/chat.h"
#include "infer/model.h"

/* Tokenizes the concatenation of a (an) and b (bn) as one text. */
static int tokenize2(const qwen_tokenizer *tok, const char *a, size_t an, const char *b,
                     size_t bn, unsigned tflags, qwen_ids *out, gguf_error *err)
{
    char *buf = malloc(an + bn + 1);
    if (!buf) return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "chat: out of memory");
    memcpy(buf, a, an);
    if (bn) memcpy(buf + an, b, bn);
    int st = qwen_tokenize(tok, buf, an + bn, tflags, out, err);
    free(buf);
    return st;
}

int qwen_chat_tokenize(const qwen_tokenizer *tok, const char *system, size_t system_len,
                       const char *prompt, size_t len, unsigned flags, qwen_ids *out,
                       gguf_error *err)
{
    if (!tok || !out || (!prompt && len))
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_chat_tokenize: NULL argument");
    unsigned tflags = (flags & QWEN_CHAT_SPECIAL) ? QWEN_TOKENIZE_SPECIAL : 0;
    if (flags & QWEN_CHAT_RAW) return qwen_tokenize(tok, prompt, len, tflags, out, err);

    int32_t start = qwen_tokenizer_find(tok, "<|im_start|>", 12);
    int32_t end = qwen_tokenizer_find(tok, "<|im_end|>", 10);
    if (start < 0 || end < 0)
        return qwen_fail(err, GGUF_E_NOT_FOUND, UINT64_MAX,
                         "the vocabulary has no <|im_start|> or <|im_end|> token for the chat template");
    if (!system) {
        system = QWEN_CHAT_DEFAULT_SYSTEM;
        system_len = strlen(system);
    }
    size_t n0 = out->n;
    int st = qwen_ids_push(out, start);
    if (!st) st = tokenize2(tok, "system\n", 7, system, system_len, tflags, out, err);
    if (!st) st = qwen_ids_push(out, end);
    if (!st) st = qwen_tokenize(tok, "\n", 1, 0, out, err);
    if (!st) st = qwen_ids_push(out, start);
    if (!st) st = tokenize2(tok, "user\n", 5, prompt, len, tflags, out, err);
    if (!st) st = qwen_ids_push(out, end);
    if (!st) st = qwen_tokenize(tok, "\n", 1, 0, out, err);
    if (!st) st = qwen_ids_push(out, start);
    if (!st) st = qwen_tokenize(tok, "assistant\n", 10, 0, out, err);
    if (st) {
        out->n = n0;
        if (st == GGUF_E_NOMEM) qwen_fail(err, st, UINT64_MAX, "chat: out of memory");
    }
    return st;
}
