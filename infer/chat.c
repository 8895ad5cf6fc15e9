/*
 * chat.c -- the ChatML prompts of Qwen2.5 and Qwen3, and the filter of
 * Qwen3's thinking block.  See chat.h.
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
    int32_t think = -1, think_end = -1;
    if (flags & QWEN_CHAT_NO_THINK) {
        think = qwen_tokenizer_find(tok, "<think>", 7);
        think_end = qwen_tokenizer_find(tok, "</think>", 8);
        if (think < 0 || think_end < 0)
            return qwen_fail(err, GGUF_E_NOT_FOUND, UINT64_MAX,
                             "the vocabulary has no <think> or </think> token for the empty "
                             "thinking block");
    }
    if (flags & QWEN_CHAT_TURN) {
        system = NULL;
    } else if (!system && !(flags & QWEN_CHAT_NO_DEFAULT_SYSTEM)) {
        system = QWEN_CHAT_DEFAULT_SYSTEM;
        system_len = strlen(system);
    }
    size_t n0 = out->n;
    int st = GGUF_OK;
    if (system) {
        st = qwen_ids_push(out, start);
        if (!st) st = tokenize2(tok, "system\n", 7, system, system_len, tflags, out, err);
        if (!st) st = qwen_ids_push(out, end);
        if (!st) st = qwen_tokenize(tok, "\n", 1, 0, out, err);
    }
    if (!st) st = qwen_ids_push(out, start);
    if (!st) st = tokenize2(tok, "user\n", 5, prompt, len, tflags, out, err);
    if (!st) st = qwen_ids_push(out, end);
    if (!st) st = qwen_tokenize(tok, "\n", 1, 0, out, err);
    if (!st) st = qwen_ids_push(out, start);
    if (!st) st = qwen_tokenize(tok, "assistant\n", 10, 0, out, err);
    if (think >= 0) {
        if (!st) st = qwen_ids_push(out, think);
        if (!st) st = qwen_tokenize(tok, "\n\n", 2, 0, out, err);
        if (!st) st = qwen_ids_push(out, think_end);
        if (!st) st = qwen_tokenize(tok, "\n\n", 2, 0, out, err);
    }
    if (st) {
        out->n = n0;
        if (st == GGUF_E_NOMEM) qwen_fail(err, st, UINT64_MAX, "chat: out of memory");
    }
    return st;
}

unsigned qwen_chat_style_flags(enum qwen_chat_style style, int think)
{
    if (style != QWEN_CHAT_CHATML_THINK) return 0;
    return QWEN_CHAT_NO_DEFAULT_SYSTEM | (think ? 0 : QWEN_CHAT_NO_THINK);
}

/* ------------------------------------------------------------------------ */
/* The thinking block of a reply                                             */

/* Where the reply is. */
enum {
    THINK_START,    /* nothing yet: a <think> token opens the block */
    THINK_INSIDE,   /* in the block: hidden up to </think> */
    THINK_AFTER,    /* after </think>: white space hidden */
    THINK_ANSWER    /* the answer: everything passes */
};

void qwen_think_filter_init_ids(qwen_think_filter *f, int32_t open, int32_t close)
{
    f->open = open;
    f->close = close;
    f->state = open < 0 || close < 0 ? THINK_ANSWER : THINK_START;
}

void qwen_think_filter_init(qwen_think_filter *f, const qwen_tokenizer *tok)
{
    qwen_think_filter_init_ids(f, qwen_tokenizer_find(tok, "<think>", 7),
                               qwen_tokenizer_find(tok, "</think>", 8));
}

const char *qwen_think_filter_feed(qwen_think_filter *f, int32_t id, const char *p, size_t *n)
{
    switch (f->state) {
    case THINK_START:
        if (id == f->open) {
            f->state = THINK_INSIDE;
            *n = 0;
            return p;
        }
        f->state = THINK_ANSWER;
        return p;
    case THINK_INSIDE:
        if (id == f->close) f->state = THINK_AFTER;
        *n = 0;
        return p;
    case THINK_AFTER: {
        size_t i = 0;
        while (i < *n && (p[i] == ' ' || p[i] == '\n' || p[i] == '\t' || p[i] == '\r')) i++;
        if (i < *n) f->state = THINK_ANSWER;
        *n -= i;
        return p + i;
    }
    default:
        return p;
    }
}

int qwen_think_filter_hiding(const qwen_think_filter *f)
{
    return f->state == THINK_INSIDE || f->state == THINK_AFTER;
}
