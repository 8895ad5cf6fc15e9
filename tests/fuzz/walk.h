/*
 * walk.h -- checks over open GGUF files, shared by the reader, stream and
 * writer harnesses of tests/fuzz.  Every check aborts on a violation.
 */
#ifndef TESTS_FUZZ_WALK_H
#define TESTS_FUZZ_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"

/* A refused open: the status is one a hostile file may cause (FORMAT,
 * UNSUPPORTED, NOMEM; IO too when `io_ok`, for streams), the handle is
 * NULL, and err holds that status and a message starting with "NAME: ". */
void fuzz_check_refusal(int rc, const gguf_file *f, const gguf_error *err, const char *name,
                        int io_ok);

/* Walks everything f offers (see fuzz-read.c).  `data`, `size`: the bytes
 * f was opened on when they are all in memory (mapped or memory input),
 * else NULL and the input size when known (0 otherwise). */
void fuzz_walk_file(gguf_file *f, const uint8_t *data, size_t size);

/* Aborts unless a and b hold the same content: version, byte order (when
 * `same_order`), alignment, every KV pair (key, type, value, arrays element
 * by element) and tensor (name, type, dims, size) in order.  Values are
 * compared as the getters give them, in host order; data offsets are not
 * compared (a copy may lay tensors out anew). */
void fuzz_same_content(const gguf_file *a, const gguf_file *b, int same_order);

/* Aborts unless two refusals agree: the same status and the same message. */
void fuzz_same_refusal(int rc_a, const gguf_error *a, int rc_b, const gguf_error *b,
                       const char *what);

#endif /* TESTS_FUZZ_WALK_H */
