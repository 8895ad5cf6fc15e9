/*
 * context.c -- contexts and batches over a backend (see context.h): the
 * checks of every batch and the positions of every sequence; the backend
 * computes.
 */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "infer/backend.h"
#include "infer/context.h"

struct qwen_context {
    const qwen_model *m;
    const qwen_backend *be;
    void *impl;
    qwen_params p;
    uint32_t *seq_pos;      /* (n_seq) the length of each sequence */
    uint32_t *seq_next;     /* (n_seq) scratch of qwen_decode: the next position */
    float *logits;          /* (n_vocab, n_outputs) of the last batch */
    uint32_t *out_row;      /* (n_batch) row of logits of each entry, UINT32_MAX: none */
    uint32_t n_last;        /* entries of the last batch */
    uint64_t host_bytes;    /* of seq_pos, seq_next, out_row and logits */
};

/* The backends by name: the CPU's, then those programs add. */
static const qwen_backend *backends[QWEN_MAX_BACKENDS] = {&qwen_backend_cpu};
static size_t n_backends = 1;
static char backend_names[QWEN_MAX_BACKENDS * 16] = "cpu";

int qwen_backend_add(const qwen_backend *be)
{
    for (size_t i = 0; i < n_backends; i++) {
        if (backends[i] == be) return GGUF_OK;
        if (strcmp(backends[i]->name, be->name) == 0) return GGUF_E_INVALID;
    }
    const size_t len = strlen(backend_names);
    if (n_backends == QWEN_MAX_BACKENDS ||
        strlen(be->name) + 3 > sizeof backend_names - len)
        return GGUF_E_INVALID;
    backends[n_backends++] = be;
    snprintf(backend_names + len, sizeof backend_names - len, ", %s", be->name);
    return GGUF_OK;
}

const char *qwen_backend_names(void)
{
    return backend_names;
}

int qwen_default_threads(void)
{
#ifdef _OPENMP
    int n = omp_get_max_threads();
    return n < 1 ? 1 : n > QWEN_MAX_THREADS ? QWEN_MAX_THREADS : n;
#else
    return 1;
#endif
}

#define DEFAULT_CTX 4096u
#define DEFAULT_BATCH 512u

qwen_params qwen_params_defaults(void)
{
    qwen_params p = {"cpu", DEFAULT_CTX, 1, DEFAULT_BATCH, 0, 0, 0, 0, NULL, NULL};
    return p;
}

void qwen_params_fit(qwen_params *p, const qwen_config *c)
{
    if (p->n_ctx == 0) p->n_ctx = c->n_ctx_train < DEFAULT_CTX ? c->n_ctx_train : DEFAULT_CTX;
    if ((uint64_t)p->n_ctx * p->n_seq < p->n_batch) p->n_batch = p->n_ctx * p->n_seq;
}

int qwen_batch_init(qwen_batch *b, uint32_t cap, gguf_error *err)
{
    if (!b || cap == 0) return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_batch_init: no room");
    memset(b, 0, sizeof *b);
    b->token = malloc(cap * sizeof *b->token);
    b->seq = malloc(cap * sizeof *b->seq);
    b->pos = malloc(cap * sizeof *b->pos);
    b->logits = malloc(cap * sizeof *b->logits);
    if (!b->token || !b->seq || !b->pos || !b->logits) {
        qwen_batch_free(b);
        return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "out of memory for a batch of %" PRIu32,
                         cap);
    }
    b->cap = cap;
    return GGUF_OK;
}

void qwen_batch_free(qwen_batch *b)
{
    if (!b) return;
    free(b->token);
    free(b->seq);
    free(b->pos);
    free(b->logits);
    memset(b, 0, sizeof *b);
}

int qwen_batch_add(qwen_batch *b, int32_t token, int32_t seq, uint32_t pos, int logits)
{
    if (b->n >= b->cap) return -1;
    b->token[b->n] = token;
    b->seq[b->n] = seq;
    b->pos[b->n] = pos;
    b->logits[b->n] = logits != 0;
    b->n++;
    return 0;
}

/* The backend named p->backend (NULL: "cpu"), or NULL with the message. */
static const qwen_backend *find_backend(const qwen_params *p, gguf_error *err)
{
    const char *want = p->backend ? p->backend : "cpu";
    for (size_t i = 0; i < n_backends; i++)
        if (strcmp(backends[i]->name, want) == 0) return backends[i];
    qwen_fail(err, GGUF_E_UNSUPPORTED, UINT64_MAX,
              "backend '%s' is not in this build (backends: %s)", want, qwen_backend_names());
    return NULL;
}

/* Checks p against the model of configuration c (in file `name`). */
static int check_params(const char *name, const qwen_config *c, const qwen_params *p,
                        gguf_error *err)
{
    if (p->n_ctx < 1 || p->n_ctx > c->n_ctx_train)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                         "%s: context of %" PRIu32 " positions: expected 1 .. %" PRIu32
                         " (the model's)", name, p->n_ctx, c->n_ctx_train);
    if (p->n_seq < 1 || p->n_seq > QWEN_MAX_SEQ)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                         "%s: %" PRIu32 " sequences: expected 1 .. %u", name, p->n_seq,
                         QWEN_MAX_SEQ);
    if (p->n_batch < 1 || (uint64_t)p->n_batch > (uint64_t)p->n_ctx * p->n_seq)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                         "%s: batch of %" PRIu32 " tokens: expected 1 .. %" PRIu64, name,
                         p->n_batch, (uint64_t)p->n_ctx * p->n_seq);
    if (p->n_outputs > p->n_batch)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                         "%s: %" PRIu32 " outputs, more than the batch of %" PRIu32, name,
                         p->n_outputs, p->n_batch);
    if (p->n_threads < 0 || p->n_threads > QWEN_MAX_THREADS)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "thread count %d out of range 1..%d",
                         p->n_threads, QWEN_MAX_THREADS);
    return GGUF_OK;
}

/* n_outputs 0: one per sequence, at most the batch. */
static uint32_t resolve_outputs(const qwen_params *p)
{
    if (p->n_outputs) return p->n_outputs;
    return p->n_seq < p->n_batch ? p->n_seq : p->n_batch;
}

/* The bytes of the context's own buffers (see qwen_context_new). */
static uint64_t host_bytes(const qwen_config *c, const qwen_params *p)
{
    return 2 * (uint64_t)p->n_seq * sizeof(uint32_t) + (uint64_t)p->n_batch * sizeof(uint32_t) +
           (uint64_t)c->n_vocab * p->n_outputs * sizeof(float);
}

int qwen_context_new(qwen_context **out, const qwen_model *m, const qwen_params *p,
                     gguf_error *err)
{
    if (!out || !m || !p)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_context_new: NULL argument");
    *out = NULL;
    const char *name = gguf_name(m->file);
    const qwen_backend *be = find_backend(p, err);
    if (!be) return GGUF_E_UNSUPPORTED;
    int st = check_params(name, &m->config, p, err);
    if (st) return st;
    qwen_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", name);
    ctx->m = m;
    ctx->be = be;
    ctx->p = *p;
    ctx->p.backend = be->name;
    ctx->p.n_outputs = resolve_outputs(p);
    ctx->seq_pos = calloc(p->n_seq, sizeof *ctx->seq_pos);
    ctx->seq_next = calloc(p->n_seq, sizeof *ctx->seq_next);
    ctx->out_row = calloc(p->n_batch, sizeof *ctx->out_row);
    /* n_vocab <= QWEN_MAX_VOCAB and n_outputs <= n_batch <= 2^34: no
     * overflow in 64 bits; size_t may not hold it. */
    uint64_t nl = (uint64_t)m->config.n_vocab * ctx->p.n_outputs;
    ctx->logits = nl <= SIZE_MAX / sizeof(float) ? calloc((size_t)nl, sizeof(float)) : NULL;
    if (!ctx->seq_pos || !ctx->seq_next || !ctx->out_row || !ctx->logits) {
        qwen_context_free(ctx);
        return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory for the logits of %"
                         PRIu32 " outputs", name, p->n_outputs);
    }
    ctx->host_bytes = host_bytes(&m->config, &ctx->p);
    st = be->open(&ctx->impl, m, &ctx->p, err);
    if (st) {
        ctx->impl = NULL;
        qwen_context_free(ctx);
        return st;
    }
    ctx->p.n_threads = be->threads(ctx->impl);
    *out = ctx;
    return GGUF_OK;
}

/* The bytes of tensor data in the set. */
static uint64_t weight_bytes(const gguf_split *set)
{
    uint64_t n = 0, count = gguf_split_tensor_count(set);
    for (uint64_t i = 0; i < count; i++) n += gguf_split_tensor_at(set, i, NULL)->size;
    return n;
}

void qwen_context_memory(const qwen_context *ctx, qwen_memory *out)
{
    memset(out, 0, sizeof *out);
    if (ctx->be->memory) ctx->be->memory(ctx->impl, out);
    out->weights = weight_bytes(ctx->m->set);
    out->host = ctx->host_bytes;
}

/* The matrices of a model: the 2-D tensors, token_embd.weight only when
 * it also serves as the output (no output.weight). */
static int is_matrix(const gguf_split *set, const gguf_tensor *t)
{
    if (t->n_dims != 2) return 0;
    static const char embd[] = "token_embd.weight";
    if (t->name.len != sizeof embd - 1 || memcmp(t->name.ptr, embd, sizeof embd - 1)) return 1;
    return gguf_split_tensor_find(set, "output.weight", NULL) == NULL;
}

int qwen_estimate(const gguf_split *set, qwen_params *p, qwen_memory *out, gguf_error *err)
{
    if (!set || !p || !out)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_estimate: NULL argument");
    memset(out, 0, sizeof *out);
    out->weights = weight_bytes(set);
    const gguf_file *f = gguf_split_shard(set, 0);
    qwen_config c;
    int st = qwen_config_read_set(set, &c, err);
    if (st) return st;
    const qwen_backend *be = find_backend(p, err);
    if (!be) return GGUF_E_UNSUPPORTED;
    qwen_params_fit(p, &c);
    if ((st = check_params(gguf_name(f), &c, p, err))) return st;
    if (!be->estimate)
        return qwen_fail(err, GGUF_E_UNSUPPORTED, UINT64_MAX,
                         "the %s backend does not estimate its memory", be->name);
    p->backend = be->name;
    p->n_outputs = resolve_outputs(p);
    if (p->n_threads == 0) p->n_threads = qwen_default_threads();
    /* The types of the matrices, each once. */
    uint32_t types[GGUF_T_COUNT];
    uint64_t bytes[GGUF_T_COUNT];
    size_t n_types = 0;
    uint64_t count = gguf_split_tensor_count(set);
    for (uint64_t i = 0; i < count; i++) {
        const gguf_tensor *t = gguf_split_tensor_at(set, i, NULL);
        if (!is_matrix(set, t) || t->type >= GGUF_T_COUNT) continue;
        size_t k = 0;
        while (k < n_types && types[k] != t->type) k++;
        if (k == n_types) types[n_types] = t->type, bytes[n_types++] = 0;
        if (t->ne[1] >= 4) bytes[k] += t->size;
    }
    be->estimate(&c, types, bytes, n_types, p, out);
    out->weights = weight_bytes(set);
    out->host = host_bytes(&c, p);
    return GGUF_OK;
}

void qwen_context_free(qwen_context *ctx)
{
    if (!ctx) return;
    if (ctx->impl) ctx->be->close(ctx->impl);
    free(ctx->seq_pos);
    free(ctx->seq_next);
    free(ctx->out_row);
    free(ctx->logits);
    free(ctx);
}

const qwen_params *qwen_context_params(const qwen_context *ctx)
{
    return &ctx->p;
}

const qwen_model *qwen_context_model(const qwen_context *ctx)
{
    return ctx->m;
}

int qwen_decode(qwen_context *ctx, const qwen_batch *b, gguf_error *err)
{
    if (!ctx || !b || (b->n && (!b->token || !b->seq || !b->pos || !b->logits)))
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_decode: NULL argument");
    const char *name = gguf_name(ctx->m->file);
    const qwen_params *p = &ctx->p;
    if (b->n == 0) return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "%s: no tokens to process", name);
    if (b->n > p->n_batch)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                         "%s: a batch of %" PRIu32 " tokens, more than %" PRIu32, name, b->n,
                         p->n_batch);
    memcpy(ctx->seq_next, ctx->seq_pos, p->n_seq * sizeof *ctx->seq_next);
    uint32_t n_out = 0;
    for (uint32_t i = 0; i < b->n; i++) {
        if (b->token[i] < 0 || (uint32_t)b->token[i] >= ctx->m->config.n_vocab)
            return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                             "%s: token %" PRIu32 " has id %" PRId32 ", outside the vocabulary of %"
                             PRIu32, name, i, b->token[i], ctx->m->config.n_vocab);
        if (b->seq[i] < 0 || (uint32_t)b->seq[i] >= p->n_seq)
            return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                             "%s: token %" PRIu32 " is of sequence %" PRId32 ", outside 0 .. %"
                             PRIu32, name, i, b->seq[i], p->n_seq - 1);
        uint32_t *next = &ctx->seq_next[b->seq[i]];
        if (b->pos[i] != *next)
            return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                             "%s: token %" PRIu32 " is at position %" PRIu32 " of sequence %"
                             PRId32 ", whose next position is %" PRIu32, name, i, b->pos[i],
                             b->seq[i], *next);
        if (*next >= p->n_ctx)
            return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                             "%s: sequence %" PRId32 ": %" PRIu32 " tokens exceed the context of %"
                             PRIu32, name, b->seq[i], *next + 1, p->n_ctx);
        (*next)++;
        if (b->logits[i] && n_out++ == p->n_outputs)
            return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                             "%s: more than %" PRIu32 " tokens of the batch want logits", name,
                             p->n_outputs);
    }
    ctx->n_last = 0;
    int st = ctx->be->decode(ctx->impl, b, ctx->logits, err);
    if (st) return st;
    memcpy(ctx->seq_pos, ctx->seq_next, p->n_seq * sizeof *ctx->seq_pos);
    n_out = 0;
    for (uint32_t i = 0; i < b->n; i++) ctx->out_row[i] = b->logits[i] ? n_out++ : UINT32_MAX;
    ctx->n_last = b->n;
    return GGUF_OK;
}

const float *qwen_logits(const qwen_context *ctx, uint32_t i)
{
    if (i >= ctx->n_last || ctx->out_row[i] == UINT32_MAX) return NULL;
    return ctx->logits + (uint64_t)ctx->out_row[i] * ctx->m->config.n_vocab;
}

uint32_t qwen_seq_pos(const qwen_context *ctx, int32_t seq)
{
    return seq >= 0 && (uint32_t)seq < ctx->p.n_seq ? ctx->seq_pos[seq] : 0;
}

void qwen_seq_truncate(qwen_context *ctx, int32_t seq, uint32_t pos)
{
    if (seq >= 0 && (uint32_t)seq < ctx->p.n_seq && pos < ctx->seq_pos[seq])
        ctx->seq_pos[seq] = pos;
}

void qwen_seq_clear(qwen_context *ctx, int32_t seq)
{
    qwen_seq_truncate(ctx, seq, 0);
}

uint64_t qwen_seq_state_size(const qwen_context *ctx, uint32_t n)
{
    const qwen_config *c = &ctx->m->config;
    return 2 * (uint64_t)c->n_layer * n * c->n_kv * sizeof(uint16_t);
}

/* Checks seq and n (at most max) for the state functions. */
static int state_check(const qwen_context *ctx, int32_t seq, uint32_t n, uint32_t max,
                       const char *what, gguf_error *err)
{
    if (seq < 0 || (uint32_t)seq >= ctx->p.n_seq)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "%s: sequence %" PRId32 " out of range 0 .. %"
                         PRIu32, what, seq, ctx->p.n_seq - 1);
    if (n > max)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "%s: %" PRIu32 " positions, more than %" PRIu32,
                         what, n, max);
    return GGUF_OK;
}

int qwen_seq_state_get(qwen_context *ctx, int32_t seq, uint32_t n, void *buf, gguf_error *err)
{
    int st = state_check(ctx, seq, n, seq >= 0 && (uint32_t)seq < ctx->p.n_seq ? ctx->seq_pos[seq] : 0,
                         "qwen_seq_state_get", err);
    if (st) return st;
    if (!ctx->be->seq_get)
        return qwen_fail(err, GGUF_E_UNSUPPORTED, UINT64_MAX,
                         "the %s backend cannot copy its key/value cache out", ctx->be->name);
    return n ? ctx->be->seq_get(ctx->impl, seq, n, buf, err) : GGUF_OK;
}

int qwen_seq_state_set(qwen_context *ctx, int32_t seq, uint32_t n, const void *buf,
                       gguf_error *err)
{
    int st = state_check(ctx, seq, n, ctx->p.n_ctx, "qwen_seq_state_set", err);
    if (st) return st;
    if (!ctx->be->seq_set)
        return qwen_fail(err, GGUF_E_UNSUPPORTED, UINT64_MAX,
                         "the %s backend cannot load its key/value cache", ctx->be->name);
    if (n && (st = ctx->be->seq_set(ctx->impl, seq, n, buf, err))) return st;
    ctx->seq_pos[seq] = n;
    return GGUF_OK;
}

int qwen_context_set_threads(qwen_context *ctx, int n, gguf_error *err)
{
    if (!ctx || n < 1 || n > QWEN_MAX_THREADS)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "thread count %d out of range 1..%d", n,
                         QWEN_MAX_THREADS);
    int st = ctx->be->set_threads(ctx->impl, n, err);
    if (!st) ctx->p.n_threads = ctx->be->threads(ctx->impl);
    return st;
}

int qwen_context_threads(const qwen_context *ctx)
{
    return ctx->be->threads(ctx->impl);
}

void qwen_context_set_plain(qwen_context *ctx, int plain)
{
    ctx->p.plain = plain != 0;
    ctx->be->set_plain(ctx->impl, ctx->p.plain);
}

void qwen_context_describe(const qwen_context *ctx, char *buf, size_t cap)
{
    if (cap == 0) return;
    ctx->be->describe(ctx->impl, buf, cap);
}
