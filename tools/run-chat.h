/*
 * run-chat.h -- qwen-run's interactive chat: a person at a terminal talks
 * with the model, turn after turn, the conversation kept in the key/value
 * cache.  Not installed.
 */
#ifndef TOOLS_RUN_CHAT_H
#define TOOLS_RUN_CHAT_H

#include <signal.h>
#include <stdint.h>

#include "infer/generate.h"
#include "infer/tokenizer.h"
#include "tools/cli.h"

struct chat_env {
    qwen_generator *gen;            /* over a context of one sequence */
    const qwen_tokenizer *tok;
    const char *model;              /* its name, for messages */
    const char *system;             /* --system, or NULL for the model's default */
    unsigned chat_flags;            /* qwen_chat_tokenize's */
    uint32_t n_ctx;
    volatile sig_atomic_t *interrupted; /* set by SIGINT */
    cli_out *out;                   /* the replies */
};

/* Runs the chat on standard input until its end, /exit or /quit: a line
 * is a turn (a line ending in a backslash goes on on the next), "/clear"
 * starts over, "/save FILE" writes the conversation so far.  SIGINT
 * stops the reply under way (or drops the line being typed) and the chat
 * goes on.  Lines are read with line editing and history (libedit) when
 * standard input is a terminal and the build has it.  Returns the exit
 * status: 0, or 2 after a message on trouble (the model's, the output's). */
int chat_run(const struct chat_env *e);

#endif /* TOOLS_RUN_CHAT_H */
