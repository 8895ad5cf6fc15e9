/*
 * grammar.h -- constrained output: a grammar in llama.cpp's GBNF that the
 * reply must follow, character by character, token by token.
 *
 * The grammar text: rules "NAME ::= ALTERNATIVES", one of them "root";
 * alternatives separated by "|", each a sequence of items: "literal"
 * strings, [character classes] (ranges a-z, [^...] for the others),
 * "." (any character), rule names, ( groups ), each item optionally
 * followed by *, +, ?, {M}, {M,}, {M,N}; "#" starts a comment.  Literals
 * and classes take the escapes \n \r \t \\ \" \[ \] \- \^ \xHH \uHHHH
 * \UHHHHHHHH.  A rule may run over several lines; the next "NAME ::="
 * starts the next rule.  Left recursion (a rule that can reach itself
 * before reading a character) is refused, as are rules used but not
 * defined.
 *
 * Matching works on Unicode code points of the UTF-8 text; a token that
 * ends inside a character is allowed when some character the grammar
 * accepts there begins with its bytes.
 */
#ifndef QWEN_GRAMMAR_H
#define QWEN_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "infer/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qwen_grammar qwen_grammar;

/* Most bytes of grammar text. */
#define QWEN_GRAMMAR_MAX (1u << 20)

/* Parses the len bytes of grammar text at text (name: for messages, the
 * file's).  Returns GGUF_OK and the grammar in *out (free it with
 * qwen_grammar_free); GGUF_E_FORMAT for a text that is not a grammar (the
 * message gives the line and column and what was expected), left
 * recursion, a rule used but not defined, no root; GGUF_E_NOMEM. */
int qwen_grammar_parse(qwen_grammar **out, const char *text, size_t len, const char *name,
                       gguf_error *err);

void qwen_grammar_free(qwen_grammar *g);

/* Where a text is in the grammar: the ways the grammar may go on from
 * there, and the bytes of a character not yet whole. */
typedef struct qwen_grammar_state qwen_grammar_state;

/* A state at the start of root.  NULL when out of memory. */
qwen_grammar_state *qwen_grammar_state_new(const qwen_grammar *g);
void qwen_grammar_state_free(qwen_grammar_state *s);

/* Back to the start of root. */
void qwen_grammar_state_reset(qwen_grammar_state *s);

/* Takes the n bytes at p.  Returns 0, or -1 when the grammar does not
 * allow them (the state is then unchanged). */
int qwen_grammar_accept(qwen_grammar_state *s, const void *p, size_t n);

/* 1 when qwen_grammar_accept() would take the n bytes at p, else 0; s is
 * not moved. */
int qwen_grammar_takes(const qwen_grammar_state *s, const void *p, size_t n);

/* 1 when the text so far is a whole sentence of the grammar (root may end
 * here), else 0. */
int qwen_grammar_complete(const qwen_grammar_state *s);

/* 1 when no character can follow (the text can only end here). */
int qwen_grammar_closed(const qwen_grammar_state *s);

/* The vocabulary of a tokenizer arranged for masking (a tree of the
 * tokens' bytes).  NULL when out of memory. */
typedef struct qwen_grammar_vocab qwen_grammar_vocab;
qwen_grammar_vocab *qwen_grammar_vocab_new(const qwen_tokenizer *tok);
void qwen_grammar_vocab_free(qwen_grammar_vocab *v);

/* Sets allowed[id] to 1 for each token whose bytes the grammar allows
 * next from state s, else 0 (n_vocab entries).  Control tokens are never
 * allowed (the caller decides about the end tokens, with
 * qwen_grammar_complete()).  Returns the number allowed, or -1 when out of
 * memory. */
int64_t qwen_grammar_allowed(const qwen_grammar_state *s, const qwen_grammar_vocab *v,
                             unsigned char *allowed);

#ifdef __cplusplus
}
#endif

#endif /* QWEN_GRAMMAR_H */
