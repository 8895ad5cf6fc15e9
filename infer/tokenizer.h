/*
 * tokenizer.h -- the Qwen2 byte-level BPE tokenizer, built from a GGUF
 * file's tokenizer.ggml.* metadata.
 *
 * Encoding: the text is first cut at special tokens (see qwen_tokenize), then
 * each remaining span is split by the Qwen2 pre-tokenizer regex (PCRE2, UTF
 * and Unicode properties), and each piece is encoded byte by byte and merged
 * by BPE rank, lowest rank first and leftmost first among equal ranks, the
 * order the reference tokenizers use.  Every byte sequence can be encoded
 * (invalid UTF-8 included), and decoding the ids gives the bytes back.
 *
 * A qwen_tokenizer is immutable after loading: any number of threads may use
 * one at the same time.  It keeps no pointer into the gguf_file it was loaded
 * from, which may be closed afterwards.
 */
#ifndef INFER_TOKENIZER_H
#define INFER_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "infer/check.h"

/* Token types as tokenizer.ggml.token_type stores them (llama.cpp's
 * LLAMA_TOKEN_TYPE_*). */
enum qwen_token_type {
    QWEN_TOKEN_UNDEFINED = 0,
    QWEN_TOKEN_NORMAL = 1,
    QWEN_TOKEN_UNKNOWN = 2,
    QWEN_TOKEN_CONTROL = 3,      /* <|im_start|>, <|im_end|>, <|endoftext|> */
    QWEN_TOKEN_USER_DEFINED = 4, /* added tokens such as <tool_call> */
    QWEN_TOKEN_UNUSED = 5,
    QWEN_TOKEN_BYTE = 6
};

typedef struct qwen_tokenizer qwen_tokenizer;

/* A growing array of token ids, owned by the caller.  Start from
 * QWEN_IDS_INIT (all zero); release with qwen_ids_free. */
typedef struct qwen_ids {
    int32_t *v;
    size_t n;   /* ids in v */
    size_t cap; /* room in v */
} qwen_ids;

#define QWEN_IDS_INIT {NULL, 0, 0}

/* Releases the storage of ids and empties it (it may be used again).  NULL
 * is allowed. */
void qwen_ids_free(qwen_ids *ids);

/* Appends one id.  Returns GGUF_OK or GGUF_E_NOMEM (ids unchanged). */
int qwen_ids_push(qwen_ids *ids, int32_t id);

/* Builds the tokenizer from the metadata of open file f:
 *  - tokenizer.ggml.model (STRING) must be "gpt2";
 *  - tokenizer.ggml.pre (STRING), when present, must name the Qwen2
 *    pre-tokenizer ("qwen2", or "deepseek-r1-qwen" which is the same);
 *  - tokenizer.ggml.tokens (ARRAY of STRING), 256 .. INT32_MAX entries, with
 *    a token for each of the 256 single bytes;
 *  - tokenizer.ggml.token_type (ARRAY of INT32), one per token;
 *  - tokenizer.ggml.merges (ARRAY of STRING), each "LEFT RIGHT" where LEFT,
 *    RIGHT and LEFT+RIGHT are tokens;
 *  - tokenizer.ggml.bos_token_id, eos_token_id, padding_token_id (any
 *    unsigned integer type), each optional, each below the token count.
 * Nothing of f is borrowed: f may be closed afterwards.  The regex is
 * compiled (JIT where PCRE2 offers it) once, here.
 *
 * Returns GGUF_OK and stores the tokenizer in *out (free it with
 * qwen_tokenizer_free), or: GGUF_E_NOT_FOUND (a required key is missing),
 * GGUF_E_TYPE (a key has another type), GGUF_E_FORMAT (counts disagree, an
 * id is out of range, a merge names no token, a byte has no token),
 * GGUF_E_UNSUPPORTED (another tokenizer model or pre-tokenizer),
 * GGUF_E_NOMEM, GGUF_E_INVALID (NULL arguments).  err, when not NULL,
 * receives a message "FILE: KEY: problem" naming the key (and the element
 * index where one is at fault) with the byte offset of the value, or of
 * the element at fault (a merge); a missing key has no offset.  *out is
 * NULL on failure. */
int qwen_tokenizer_load(qwen_tokenizer **out, const gguf_file *f, gguf_error *err);

/* Runs the checks of qwen_tokenizer_load() on f, reporting each problem to
 * c (see check.h) and going on where the checks do not depend on each
 * other: the model names, the vocabulary, every merge, each token id (the
 * merges are checked only against a complete vocabulary).  Token ids of
 * another integer type than UINT32 are notes (llama.cpp refuses them).
 * Returns the status of the tokenizer's first problem, or GGUF_OK. */
int qwen_tokenizer_check(const gguf_file *f, qwen_check *c);

/* Releases the tokenizer.  NULL is allowed. */
void qwen_tokenizer_free(qwen_tokenizer *tok);

/* Number of tokens in the vocabulary. */
int32_t qwen_tokenizer_n_vocab(const qwen_tokenizer *tok);

/* The BOS, EOS and padding ids from the metadata, or -1 when absent. */
int32_t qwen_tokenizer_bos(const qwen_tokenizer *tok);
int32_t qwen_tokenizer_eos(const qwen_tokenizer *tok);
int32_t qwen_tokenizer_pad(const qwen_tokenizer *tok);

/* The length in bytes of the longest token (qwen_token_bytes).  Every token
 * qwen_tokenize gives stands for at most that many bytes of the text, so a
 * text of B bytes gives at least B / qwen_tokenizer_max_bytes() tokens. */
size_t qwen_tokenizer_max_bytes(const qwen_tokenizer *tok);

/* The id of the token whose text is exactly the len bytes at text (for
 * specials, the text as written, e.g. "<|im_end|>"; for ordinary tokens, the
 * raw bytes it stands for, e.g. " the"), or -1 when there is none. */
int32_t qwen_tokenizer_find(const qwen_tokenizer *tok, const char *text, size_t len);

/* The type of token id (enum qwen_token_type), or -1 when id is out of
 * range. */
int qwen_token_type(const qwen_tokenizer *tok, int32_t id);

/* The bytes token id stands for: for ordinary tokens the raw bytes behind
 * the byte-level text (e.g. "Ġthe" gives " the"), for control and
 * user-defined tokens their text as written ("<|im_end|>").  Stores the
 * length in *len and returns a pointer borrowed from tok (valid until
 * qwen_tokenizer_free; not NUL-terminated), or returns NULL with *len 0
 * when id is out of range. */
const char *qwen_token_bytes(const qwen_tokenizer *tok, int32_t id, size_t *len);

/* Flags for qwen_tokenize. */
enum qwen_tokenize_flags {
    /* Recognise control tokens (<|im_start|>, <|im_end|>, <|endoftext|> ...)
     * written in the text.  Without it their text is tokenized as ordinary
     * text.  User-defined tokens (<tool_call>, <|fim_prefix|> ...) are
     * recognised in either case, as the reference tokenizers do. */
    QWEN_TOKENIZE_SPECIAL = 1u << 0
};

/* Tokenizes the len bytes at text (any bytes; NUL is an ordinary byte) and
 * APPENDS the ids to *out, which grows as needed (ids already in it are
 * kept: a prompt may be built from several calls).
 *
 * Special tokens are found as the reference does: the special texts are
 * tried longest first, each cutting every span of text not yet cut.  Then
 * each span is split by the Qwen2 regex and each piece is BPE-merged.
 * Bytes that are not valid UTF-8 become pieces of their own.  No BOS or
 * EOS is added.
 *
 * Returns GGUF_OK, GGUF_E_NOMEM (out keeps the ids it had before the call),
 * GGUF_E_INVALID (NULL tok or out, or NULL text with len > 0).  err may be
 * NULL. */
int qwen_tokenize(const qwen_tokenizer *tok, const char *text, size_t len, unsigned flags,
                  qwen_ids *out, gguf_error *err);

/* Calls fn(ctx, start, end) for each piece the Qwen2 pre-tokenizer regex
 * cuts from the len bytes at text, in order; pieces cover the text without
 * gaps (a run of bytes that are not valid UTF-8 is a piece of its own).
 * No special tokens are looked for.  Exposed for tests.  Returns GGUF_OK,
 * GGUF_E_NOMEM, GGUF_E_INVALID. */
int qwen_pretokenize(const qwen_tokenizer *tok, const char *text, size_t len,
                     void (*fn)(void *ctx, size_t start, size_t end), void *ctx,
                     gguf_error *err);

/* Appends to buf (capacity cap, at *pos) the bytes of each of the n ids:
 * control tokens only when `special` is non-zero.  Returns the number of
 * bytes the whole output needs; when that exceeds cap - *pos nothing past
 * cap is written, so the caller can grow buf and call again.  Ids out of
 * range are skipped.  A convenience for tests and tools; streaming output
 * should use qwen_token_bytes with a qwen_utf8 decoder. */
size_t qwen_detokenize(const qwen_tokenizer *tok, const int32_t *ids, size_t n, int special,
                       char *buf, size_t cap);

/* --- streaming UTF-8 ------------------------------------------------------ */

/* A decoder that passes bytes on in whole UTF-8 characters: the bytes of a
 * character split across tokens are held until the character is complete.
 * Zero-initialise it (QWEN_UTF8_INIT) before use; it owns no memory. */
typedef struct qwen_utf8 {
    unsigned char held[4]; /* the start of an incomplete character */
    unsigned n_held;
    int replace;           /* non-zero: invalid bytes come out as U+FFFD */
} qwen_utf8;

#define QWEN_UTF8_INIT {{0, 0, 0, 0}, 0, 0}

/* Room the output of qwen_utf8_feed needs for n input bytes (3 bytes for
 * every byte held and fed, in the worst case of replacement). */
#define QWEN_UTF8_OUT_MAX(n) (3 * ((size_t)(n) + 4))

/* Feeds n bytes and writes to out (room for QWEN_UTF8_OUT_MAX(n) bytes)
 * every complete character so far, holding back the bytes of an incomplete
 * one at the end.  A byte that cannot start or continue a character (and a
 * held start that the next byte does not continue) is passed on as it is,
 * or as U+FFFD when d->replace is set.  Returns the bytes written. */
size_t qwen_utf8_feed(qwen_utf8 *d, const void *in, size_t n, char *out);

/* Ends the stream: writes the bytes still held (an incomplete character at
 * the end of input, as is or as U+FFFD) to out (room for 12 bytes), resets
 * the decoder and returns the bytes written. */
size_t qwen_utf8_flush(qwen_utf8 *d, char *out);

#endif
