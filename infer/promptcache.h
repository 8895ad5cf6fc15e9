/*
 * promptcache.h -- a prompt's keys and values in a file, to start a later
 * run from them (qwen-run --prompt-cache).
 *
 * The file is a GGUF file: its metadata says what it is for and holds the
 * prompt's token ids; one F16 tensor "kv" (n_kv, 2 x n_layer, tokens)
 * holds each position's key and value rows of every layer, as
 * qwen_seq_state_get() lays them out.  It carries
 *   qwen.prompt_cache.version   UINT32 (1)
 *   qwen.prompt_cache.model     STRING  the model's digest (qwen_model_digest)
 *   qwen.prompt_cache.tokens    INT32 array
 *   qwen.prompt_cache.xxh3      STRING  XXH3 of the ids and of the tensor's data
 * and is written atomically (libgguf's writer).  A file made for another
 * model (another digest or shape), by another version, cut short or
 * damaged is refused with a message that says which.
 */
#ifndef QWEN_PROMPTCACHE_H
#define QWEN_PROMPTCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "infer/model.h"
#include "infer/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QWEN_PROMPT_CACHE_VERSION 1u

/* A digest of model m that tells it from other models cheaply: XXH3-128
 * of every shard's header (metadata and tensor directory) and of the first
 * and last 4 KiB of every tensor's data. */
void qwen_model_digest(const qwen_model *m, gguf_digest *out);

/* Writes the n ids at ids and their keys and values (state, as
 * qwen_seq_state_get() gives them for model m) to path, atomically.
 * Returns GGUF_OK or a writer's error (the message names the file). */
int qwen_prompt_cache_save(const char *path, const qwen_model *m, const int32_t *ids, size_t n,
                           const void *state, gguf_error *err);

/* Reads path into *ids (appended to, empty when called) and *state (malloc'ed,
 * the caller frees it).  Returns GGUF_OK; GGUF_E_NOT_FOUND when there is
 * no such file; GGUF_E_FORMAT for a file that is not a prompt cache of
 * this version, was made for another model, or is damaged (the message
 * says which); the errors of gguf_open(); GGUF_E_NOMEM. */
int qwen_prompt_cache_load(const char *path, const qwen_model *m, qwen_ids *ids, void **state,
                           gguf_error *err);

/* 1 when path may be written as a prompt cache: there is no such file,
 * or its header (read as a stream, so a cache cut short in its data still
 * counts) says it is one; 0 for any other file, which must be left as it
 * is. */
int qwen_prompt_cache_replaceable(const char *path);

#ifdef __cplusplus
}
#endif

#endif /* QWEN_PROMPTCACHE_H */
