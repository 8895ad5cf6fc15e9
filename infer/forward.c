/*
 * forward.c -- one sequence through a context of one (see forward.h).
 */
#include <config.h>

#include <inttypes.h>
#include <stdlib.h>

#include "infer/forward.h"

struct qwen_state {
    qwen_context *ctx;
    qwen_batch batch;
    const float *logits;    /* of the last token, or zeros before the first */
    float *zeros;           /* (n_vocab) */
};

int qwen_state_new(qwen_state **out, const qwen_model *m, uint32_t n_ctx, uint32_t n_batch,
                   gguf_error *err)
{
    if (!out || !m) return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_state_new: NULL argument");
    *out = NULL;
    const qwen_config *c = &m->config;
    if (n_ctx == 0 || n_ctx > c->n_ctx_train)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                         "%s: context size %" PRIu32 " out of range 1..%" PRIu32,
                         gguf_name(m->file), n_ctx, c->n_ctx_train);
    if (n_batch == 0 || n_batch > n_ctx)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                         "%s: batch size %" PRIu32 " out of range 1..%" PRIu32,
                         gguf_name(m->file), n_batch, n_ctx);
    qwen_state *s = calloc(1, sizeof *s);
    if (!s) return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(m->file));
    qwen_params p = qwen_params_defaults();
    p.n_ctx = n_ctx;
    p.n_batch = n_batch;
    int st = qwen_context_new(&s->ctx, m, &p, err);
    if (!st) st = qwen_batch_init(&s->batch, n_batch, err);
    if (!st && !(s->zeros = calloc(c->n_vocab, sizeof *s->zeros)))
        st = qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(m->file));
    if (st) {
        qwen_state_free(s);
        return st;
    }
    s->logits = s->zeros;
    *out = s;
    return GGUF_OK;
}

const qwen_context *qwen_state_context(const qwen_state *s)
{
    return s->ctx;
}

int qwen_state_set_threads(qwen_state *s, int n, gguf_error *err)
{
    return qwen_context_set_threads(s->ctx, n, err);
}

int qwen_state_threads(const qwen_state *s)
{
    return qwen_context_threads(s->ctx);
}

void qwen_state_set_plain(qwen_state *s, int plain)
{
    qwen_context_set_plain(s->ctx, plain);
}

void qwen_state_free(qwen_state *s)
{
    if (!s) return;
    qwen_context_free(s->ctx);
    qwen_batch_free(&s->batch);
    free(s->zeros);
    free(s);
}

void qwen_state_reset(qwen_state *s)
{
    qwen_seq_clear(s->ctx, 0);
}

uint32_t qwen_state_pos(const qwen_state *s)
{
    return qwen_seq_pos(s->ctx, 0);
}

const float *qwen_state_logits(const qwen_state *s)
{
    return s->logits;
}

int qwen_forward(qwen_state *s, const int32_t *tokens, uint32_t n, gguf_error *err)
{
    if (!s || (!tokens && n)) return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_forward: NULL argument");
    const qwen_model *m = qwen_context_model(s->ctx);
    const qwen_params *p = qwen_context_params(s->ctx);
    const char *name = gguf_name(m->file);
    const uint32_t pos = qwen_state_pos(s);
    if (n == 0) return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "%s: no tokens to process", name);
    if (n > p->n_ctx - pos)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                         "%s: %" PRIu32 " tokens after %" PRIu32 " exceed the context of %" PRIu32,
                         name, n, pos, p->n_ctx);
    for (uint32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= m->config.n_vocab)
            return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                             "%s: token %" PRIu32 " has id %" PRId32 ", outside the vocabulary of %" PRIu32,
                             name, i, tokens[i], m->config.n_vocab);
    for (uint32_t done = 0; done < n;) {
        uint32_t step = n - done < p->n_batch ? n - done : p->n_batch;
        s->batch.n = 0;
        for (uint32_t i = 0; i < step; i++)
            qwen_batch_add(&s->batch, tokens[done + i], 0, pos + done + i, done + i == n - 1);
        int st = qwen_decode(s->ctx, &s->batch, err);
        if (st) {
            /* Nothing of this call stays. */
            qwen_seq_truncate(s->ctx, 0, pos);
            return st;
        }
        done += step;
    }
    s->logits = qwen_logits(s->ctx, s->batch.n - 1);
    return GGUF_OK;
}
