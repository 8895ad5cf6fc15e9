/*
 * check.h -- how the checks of the model loader and the tokenizer report
 * what they find.
 *
 * qwen_model_open() and qwen_tokenizer_load() check a file before they use
 * it, and gguf-verify --model runs those very checks, so that the tool and
 * the loaders can never disagree about a file.  A loader wants the first
 * problem (it cannot go on); a checker wants all of them.  So each check
 * reports through a qwen_check: without a callback it ends at the first
 * problem; with one it hands every finding to the callback and goes on as
 * far as the findings so far allow.  A check that needs a value another
 * check refused is skipped, so that one fault in a file gives one message,
 * not a cascade.
 *
 * Besides problems (the loader refuses the file) a check can report notes:
 * what the loader accepts but llama.cpp refuses (a hyperparameter stored as
 * UINT64 where llama.cpp reads UINT32, a tensor the architecture does not
 * use).  Loaders drop them; gguf-verify prints them as warnings.
 */
#ifndef INFER_CHECK_H
#define INFER_CHECK_H

#include "gguf/gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a finding is. */
enum qwen_finding {
    QWEN_PROBLEM = 0,   /* the loader refuses the file */
    QWEN_LLAMA_NOTE = 1 /* the loader accepts it; llama.cpp refuses it */
};

/* The state of one check, filled by the caller before the check starts
 * (QWEN_CHECK_FIRST gives a loader's) and read after it ends. */
typedef struct qwen_check {
    /* Receives each finding: kind (enum qwen_finding) and err with status,
     * offset (UINT64_MAX for none) and message ("FILE: ... (at byte N)"),
     * valid during the call only.  Returns non-zero to end the check there.
     * NULL: the check ends at the first problem and notes are dropped. */
    int (*report)(void *ctx, int kind, const gguf_error *err);
    void *ctx;
    gguf_error *first;  /* when not NULL, receives the first problem */
    int status;         /* the status of the first problem; GGUF_OK while none */
    int done;           /* the check must end now (told to, or out of memory) */
} qwen_check;

/* A check that ends at the first problem and stores it in err (which may
 * be NULL). */
#define QWEN_CHECK_FIRST(err) {NULL, NULL, (err), GGUF_OK, 0}

/* For infer/ code: fills err (when not NULL) with status, the byte offset
 * (UINT64_MAX for none) and the printf-style message, adding
 * " (at byte N)" when an offset is given.  Returns status.  The one helper
 * every infer/ error message goes through. */
int qwen_fail(gguf_error *err, int status, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* For infer/ code: hands the finding e (kind enum qwen_finding) to c.  A
 * problem is recorded as c's first when it is; resource failures
 * (GGUF_E_NOMEM, GGUF_E_IO, GGUF_E_INVALID) end the check whatever the
 * callback says, since they say nothing about the file.  Returns
 * e->status for a problem, GGUF_OK for a note. */
int qwen_check_add(qwen_check *c, int kind, const gguf_error *e);

/* For infer/ code: formats a finding as qwen_fail() does (the message
 * with " (at byte N)" when offset is not UINT64_MAX) and hands it to c.
 * Returns what qwen_check_add returns. */
int qwen_check_fail(qwen_check *c, int kind, int status, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#ifdef __cplusplus
}
#endif

#endif /* INFER_CHECK_H */
