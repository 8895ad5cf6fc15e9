/*
 * generate.c -- the generation loop over the sequences of a context (see
 * generate.h).
 *
 * Each turn of the loop is one decode step: first the replies whose logits
 * the last step computed take their next token (sample, accept, end
 * tests, stream); then free sequences take new prompts; then one batch is
 * built of the token each reply under way just chose and of as many
 * waiting prompt tokens as there is room for, oldest conversation first,
 * and decoded.  A prompt may take several steps; only its last token
 * wants logits.
 */
#include <config.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "infer/chat.h"
#include "infer/check.h"
#include "infer/generate.h"
#include "infer/grammar.h"

/* The ids that end a reply: the tokenizer's end of sequence, <|im_end|>,
 * <|endoftext|>; -1 where absent. */
#define N_END 3

/* Bytes of a token fed to the UTF-8 decoder at once (longer ones go in
 * pieces). */
#define PIECE 256

/* What a sequence is doing. */
enum slot_state {
    SLOT_FREE,      /* no conversation */
    SLOT_PROMPT,    /* feeding the prompt: fed of ids.n tokens so far */
    SLOT_REPLY      /* generating: logits of the last step at row `row` */
};

struct slot {
    enum slot_state state;
    uint64_t k;             /* the conversation's number */
    qwen_ids ids;           /* its prompt */
    size_t fed;             /* prompt tokens in the cache */
    int32_t next;           /* SLOT_REPLY: the token to feed next step, -1 before the first */
    int32_t row;            /* batch entry whose logits are this slot's, -1: none */
    qwen_sampler *sampler;
    qwen_utf8 dec;
    qwen_think_filter think;
    int first_id;           /* print_ids: no space before the next id */
    char *hold;             /* stop strings: reply text held back (g->hold_cap bytes) */
    size_t held;
    int fed_prompt;         /* the step being built feeds its prompt */
    int capture;            /* its prompt ends in the step being built: keep it as the prefix */
    qwen_grammar_state *gstate; /* grammar: where the reply is in it */
    int32_t *hist;          /* (n_ctx) the tokens its sequence holds, position by position */
    size_t hist_n;
    qwen_gen_reply r;
};

struct qwen_generator {
    qwen_context *ctx;
    const qwen_tokenizer *tok;
    const qwen_model *m;
    qwen_gen_params p;
    uint32_t n_seq, n_ctx, n_batch;
    struct slot *slots;     /* (n_seq) */
    qwen_batch batch;
    int32_t end[N_END];
    float *masked;          /* (n_vocab) ignore_eos: logits with the end ids at -inf */
    size_t stop_max;        /* the longest stop string */
    size_t hold_cap;        /* room of each slot's hold */
    /* reuse_prefix: the prefix's ids and keys and values */
    qwen_ids prefix;
    unsigned char *prefix_state;
    size_t prefix_cap;      /* bytes of prefix_state */
    int prefix_changed;
    int no_state;           /* the backend cannot copy its cache */
    qwen_grammar_vocab *gvocab; /* grammar: the vocabulary's byte tree */
    unsigned char *allowed; /* (n_vocab) grammar: the tokens allowed next */
    int32_t *order;         /* grammar, sampling with top-k: the candidates in order */
    size_t n_order;         /* ... room: 4 k */
    int32_t top_id[QWEN_LOGPROBS_MAX];
    float top_lp[QWEN_LOGPROBS_MAX];
    uint64_t n_started;     /* conversations taken so far */
    qwen_gen_totals totals;
};

const char *qwen_stop_name(enum qwen_stop s)
{
    switch (s) {
    case QWEN_STOP_EOS: return "eos";
    case QWEN_STOP_LENGTH: return "length";
    case QWEN_STOP_CONTEXT: return "context";
    case QWEN_STOP_CANCELLED: return "cancelled";
    case QWEN_STOP_STRING: return "stop";
    case QWEN_STOP_GRAMMAR: return "grammar";
    }
    return "?";
}

qwen_gen_params qwen_gen_defaults(void)
{
    qwen_gen_params p;
    memset(&p, 0, sizeof p);
    p.sampler = qwen_sampler_defaults();
    p.n_predict = -1;
    return p;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void qwen_generator_free(qwen_generator *g)
{
    if (!g) return;
    for (uint32_t i = 0; g->slots && i < g->n_seq; i++) {
        qwen_sampler_free(g->slots[i].sampler);
        qwen_ids_free(&g->slots[i].ids);
        free(g->slots[i].hold);
        free(g->slots[i].hist);
        qwen_grammar_state_free(g->slots[i].gstate);
    }
    free(g->slots);
    qwen_ids_free(&g->prefix);
    free(g->prefix_state);
    qwen_grammar_vocab_free(g->gvocab);
    free(g->allowed);
    free(g->order);
    qwen_batch_free(&g->batch);
    free(g->masked);
    free(g);
}

int qwen_generator_new(qwen_generator **out, qwen_context *ctx, const qwen_tokenizer *tok,
                       const qwen_gen_params *p, gguf_error *err)
{
    if (!out || !ctx || !tok || !p)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_generator_new: NULL argument");
    *out = NULL;
    const qwen_model *m = qwen_context_model(ctx);
    const qwen_params *cp = qwen_context_params(ctx);
    /* every reply under way puts a token into each step's batch, and
     * wants its logits */
    if (cp->n_batch < cp->n_seq || cp->n_outputs < cp->n_seq)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                         "%s: a batch of %" PRIu32 " tokens with %" PRIu32 " logits cannot hold a "
                         "token of each of %" PRIu32 " sequences", gguf_name(m->file), cp->n_batch,
                         cp->n_outputs, cp->n_seq);
    if (p->n_logprobs > QWEN_LOGPROBS_MAX)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "%" PRIu32 " log-probabilities: at most %d",
                         p->n_logprobs, QWEN_LOGPROBS_MAX);
    if (p->n_stop && !p->stop)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_generator_new: NULL stop strings");
    size_t stop_max = 0;
    for (size_t i = 0; i < p->n_stop; i++) {
        const size_t len = p->stop[i] ? strlen(p->stop[i]) : 0;
        if (len == 0 || len > QWEN_STOP_LEN_MAX)
            return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                             "stop string %zu is %s: expected 1 .. %d bytes", i + 1,
                             len ? "too long" : "empty", QWEN_STOP_LEN_MAX);
        if (len > stop_max) stop_max = len;
    }
    qwen_generator *g = calloc(1, sizeof *g);
    if (!g) return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(m->file));
    g->stop_max = stop_max;
    /* what may begin a stop string, and a token's text after it */
    g->hold_cap = stop_max ? stop_max + QWEN_UTF8_OUT_MAX(PIECE) : 0;
    g->ctx = ctx;
    g->tok = tok;
    g->m = m;
    g->p = *p;
    g->n_seq = cp->n_seq;
    g->n_ctx = cp->n_ctx;
    g->n_batch = cp->n_batch;
    int st = GGUF_OK;
    if (!(g->slots = calloc(g->n_seq, sizeof *g->slots)))
        st = qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(m->file));
    for (uint32_t i = 0; !st && i < g->n_seq; i++) {
        st = qwen_sampler_new(&g->slots[i].sampler, &p->sampler, (int32_t)m->config.n_vocab, err);
        if (!st && g->hold_cap && !(g->slots[i].hold = malloc(g->hold_cap)))
            st = qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(m->file));
        if (!st && !(g->slots[i].hist = malloc((size_t)cp->n_ctx * sizeof *g->slots[i].hist)))
            st = qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(m->file));
        if (!st && p->grammar && !(g->slots[i].gstate = qwen_grammar_state_new(p->grammar)))
            st = qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(m->file));
    }
    if (!st) st = qwen_batch_init(&g->batch, g->n_batch, err);
    if (!st && (p->ignore_eos || p->grammar) &&
        !(g->masked = malloc((size_t)m->config.n_vocab * sizeof *g->masked)))
        st = qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(m->file));
    if (!st && p->grammar &&
        (!(g->gvocab = qwen_grammar_vocab_new(tok)) || !(g->allowed = malloc(m->config.n_vocab))))
        st = qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(m->file));
    if (!st && p->grammar && p->sampler.temp > 0 && p->sampler.top_k > 0) {
        uint64_t room = 4 * (uint64_t)p->sampler.top_k;
        g->n_order = room < m->config.n_vocab ? (size_t)room : m->config.n_vocab;
        if (!(g->order = malloc(g->n_order * sizeof *g->order)))
            st = qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(m->file));
    }
    if (st) {
        qwen_generator_free(g);
        return st;
    }
    g->end[0] = qwen_tokenizer_eos(tok);
    g->end[1] = qwen_tokenizer_find(tok, "<|im_end|>", 10);
    g->end[2] = qwen_tokenizer_find(tok, "<|endoftext|>", 13);
    *out = g;
    return GGUF_OK;
}

qwen_gen_totals qwen_generator_totals(const qwen_generator *g)
{
    return g->totals;
}

static int is_end(const qwen_generator *g, int32_t id)
{
    for (int i = 0; i < N_END; i++)
        if (g->end[i] >= 0 && g->end[i] == id) return 1;
    return 0;
}

/* Checks the n_vocab logits after a step: sampling from NaN would print a
 * token ("!", id 0, for NaN) for ever, from a model whose weights are
 * damaged.  One pass over the vocabulary, small beside the step itself.
 * n_gen 0: after the prompt.  Returns GGUF_OK or GGUF_E_FORMAT. */
static int check_logits(const qwen_model *m, const float *logits, uint64_t n_gen, gguf_error *err)
{
    const int32_t n = (int32_t)m->config.n_vocab;
    for (int32_t i = 0; i < n; i++) {
        if (isfinite(logits[i])) continue;
        char step[48];
        if (n_gen) snprintf(step, sizeof step, "generated token %" PRIu64, n_gen);
        else snprintf(step, sizeof step, "the prompt prefill");
        return qwen_fail(err, GGUF_E_FORMAT, UINT64_MAX,
                         "%s: the logits after %s are not finite (token %" PRId32 ": %s); the "
                         "model's weights hold NaN or Inf, or overflow", gguf_name(m->file), step,
                         i, isnan(logits[i]) ? "NaN" : logits[i] > 0 ? "+Inf" : "-Inf");
    }
    return GGUF_OK;
}

int qwen_prompt_logits(qwen_context *ctx, int32_t seq, const int32_t *ids, size_t n,
                       const float **logits, gguf_error *err)
{
    if (!ctx || (!ids && n) || !logits)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_prompt_logits: NULL argument");
    const qwen_model *m = qwen_context_model(ctx);
    const qwen_params *p = qwen_context_params(ctx);
    if (n == 0) return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "%s: no tokens to process", gguf_name(m->file));
    if (n > p->n_ctx)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                         "%s: the prompt is %zu tokens, longer than the context of %" PRIu32
                         " (see -c)", gguf_name(m->file), n, p->n_ctx);
    qwen_batch b;
    int st = qwen_batch_init(&b, p->n_batch, err);
    if (st) return st;
    qwen_seq_clear(ctx, seq);
    for (size_t done = 0; done < n && !st;) {
        b.n = 0;
        while (done < n && b.n < b.cap) {
            qwen_batch_add(&b, ids[done], seq, (uint32_t)done, done == n - 1);
            done++;
        }
        st = qwen_decode(ctx, &b, err);
    }
    if (!st) {
        *logits = qwen_logits(ctx, b.n - 1);
        st = check_logits(m, *logits, 0, err);
    }
    qwen_batch_free(&b);
    return st;
}

/* Passes n bytes of slot s's reply text on (silent: only looks at them)
 * past the stop strings: bytes that may begin one are held until they
 * cannot.  Returns 0; 1 when a stop string is complete (the text before it
 * passed on, it and the rest dropped); -1 when text() failed. */
static int stop_feed(qwen_generator *g, struct slot *s, const qwen_gen_io *io, const char *p,
                     size_t n, int silent)
{
    if (!g->p.n_stop) return n && !silent ? (io->text(io->user, s->k, p, n) ? -1 : 0) : 0;
    while (n > 0) {
        size_t k = g->hold_cap - s->held < n ? g->hold_cap - s->held : n;
        memcpy(s->hold + s->held, p, k);
        s->held += k;
        p += k;
        n -= k;
        /* the first place a stop string is complete: the hold had none
         * before these bytes */
        size_t at = SIZE_MAX;
        for (size_t i = 0; i < g->p.n_stop; i++) {
            const size_t len = strlen(g->p.stop[i]);
            for (size_t j = 0; j + len <= s->held && j < at; j++)
                if (memcmp(s->hold + j, g->p.stop[i], len) == 0) {
                    at = j;
                    break;
                }
        }
        if (at != SIZE_MAX) {
            int rc = at && !silent ? io->text(io->user, s->k, s->hold, at) : 0;
            s->held = 0;
            return rc ? -1 : 1;
        }
        /* keep the longest end that begins a stop string */
        size_t keep = 0;
        for (size_t i = 0; i < g->p.n_stop; i++) {
            const size_t len = strlen(g->p.stop[i]);
            for (size_t m = (len - 1 < s->held ? len - 1 : s->held); m > keep; m--)
                if (memcmp(s->hold + s->held - m, g->p.stop[i], m) == 0) {
                    keep = m;
                    break;
                }
        }
        const size_t out = s->held - keep;
        if (out && !silent && io->text(io->user, s->k, s->hold, out)) return -1;
        memmove(s->hold, s->hold + out, keep);
        s->held = keep;
    }
    return 0;
}

/* Passes the n bytes of token id of slot s's reply on, through the
 * thinking filter, the UTF-8 decoder and the stop strings.  Returns 0, 1
 * when a stop string is complete, or -1 when text() failed. */
static int emit_token(qwen_generator *g, struct slot *s, const qwen_gen_io *io, int32_t id)
{
    char buf[QWEN_UTF8_OUT_MAX(PIECE)];
    const int silent = g->p.print_ids;
    if (g->p.print_ids) {
        int k = snprintf(buf, sizeof buf, "%s%" PRId32, s->first_id ? "" : " ", id);
        s->first_id = 0;
        if (io->text(io->user, s->k, buf, (size_t)k)) return -1;
        if (!g->p.n_stop) return 0;
    }
    if (is_end(g, id) || qwen_token_type(g->tok, id) == QWEN_TOKEN_CONTROL) return 0;
    size_t n;
    const char *p = qwen_token_bytes(g->tok, id, &n);
    if (g->p.hide_think) p = qwen_think_filter_feed(&s->think, id, p, &n);
    while (n > 0) {
        size_t k = n < PIECE ? n : PIECE;
        size_t w = qwen_utf8_feed(&s->dec, p, k, buf);
        int rc = w ? stop_feed(g, s, io, buf, w, silent) : 0;
        if (rc) return rc;
        p += k;
        n -= k;
    }
    return 0;
}

/* Ends slot s's conversation for reason why: the held bytes out (not after
 * a stop string), done(). */
static int finish(qwen_generator *g, struct slot *s, const qwen_gen_io *io, enum qwen_stop why)
{
    int rc = 0;
    if (why != QWEN_STOP_STRING) {
        char buf[8];
        size_t w = qwen_utf8_flush(&s->dec, buf);
        rc = w ? stop_feed(g, s, io, buf, w, g->p.print_ids) : 0;
        if (rc == 1) {
            why = QWEN_STOP_STRING;
            rc = 0;
        } else if (!rc && s->held && !g->p.print_ids) {
            rc = io->text(io->user, s->k, s->hold, s->held) ? -1 : 0;
        }
    }
    s->held = 0;
    s->r.stop = why;
    s->state = SLOT_FREE;
    g->totals.gen_tokens += s->r.n_gen;
    io->done(io->user, s->k, &s->r);
    return rc;
}

/* Starts conversation k with the prompt in s->ids in slot s (sequence
 * seq).  An empty prompt ends at once.  Returns GGUF_OK, or
 * GGUF_E_INVALID for a prompt longer than the context. */
static int start(qwen_generator *g, struct slot *s, int32_t seq, const qwen_gen_io *io,
                 gguf_error *err)
{
    memset(&s->r, 0, sizeof s->r);
    s->k = g->n_started++;
    s->fed = 0;
    s->next = -1;
    s->row = -1;
    s->first_id = 1;
    s->dec = (qwen_utf8)QWEN_UTF8_INIT;
    s->held = 0;
    if (s->gstate) qwen_grammar_state_reset(s->gstate);
    qwen_think_filter_init(&s->think, g->tok);
    if (s->ids.n == 0) {
        s->state = SLOT_REPLY;
        return finish(g, s, io, QWEN_STOP_EOS) ? qwen_fail(err, GGUF_E_IO, UINT64_MAX, "output failed")
                                                : GGUF_OK;
    }
    if (s->ids.n > g->n_ctx)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                         "%s: the prompt is %zu tokens, longer than the context of %" PRIu32
                         " (see -c)", gguf_name(g->m->file), s->ids.n, g->n_ctx);
    /* a context shift keeps the conversation's tokens here: room for a
     * full context and the token chosen after it, so that no step
     * allocates */
    if (g->p.context_shift && s->ids.cap < (size_t)g->n_ctx + 1) {
        int32_t *v = realloc(s->ids.v, ((size_t)g->n_ctx + 1) * sizeof *v);
        if (!v) return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(g->m->file));
        s->ids.v = v;
        s->ids.cap = (size_t)g->n_ctx + 1;
    }
    qwen_sampler_reset(s->sampler);
    qwen_sampler_seed(s->sampler, g->p.sampler.seed);
    for (size_t i = 0; i < s->ids.n; i++) qwen_sampler_accept(s->sampler, s->ids.v[i]);
    s->r.n_prompt = s->ids.n;
    s->state = SLOT_PROMPT;
    s->capture = 0;
    /* What the sequence holds from its last conversation, and the prefix,
     * are not computed again where the prompt starts with them (but its
     * last token, whose logits are wanted): the longer of the two. */
    size_t own = 0, pre = 0;
    while (own < s->hist_n && own + 1 < s->ids.n && s->hist[own] == s->ids.v[own]) own++;
    if (g->p.reuse_prefix && !g->no_state)
        while (pre < g->prefix.n && pre + 1 < s->ids.n && g->prefix.v[pre] == s->ids.v[pre]) pre++;
    if (own && own >= pre) {
        qwen_seq_truncate(g->ctx, seq, (uint32_t)own);
        s->hist_n = own;
        s->fed = own;
    } else {
        qwen_seq_clear(g->ctx, seq);
        s->hist_n = 0;
        if (pre) {
            int st = qwen_seq_state_set(g->ctx, seq, (uint32_t)pre, g->prefix_state, err);
            if (st == GGUF_E_UNSUPPORTED) {
                g->no_state = 1;
            } else if (st) {
                return st;
            } else {
                memcpy(s->hist, s->ids.v, pre * sizeof *s->hist);
                s->hist_n = pre;
                s->fed = pre;
            }
        }
    }
    s->r.n_cached = s->fed;
    return GGUF_OK;
}

/* After the step that fed the end of slot s's prompt (sequence seq): the
 * prompt becomes the prefix unless it is the start of the prefix. */
static int capture_prefix(qwen_generator *g, struct slot *s, int32_t seq, gguf_error *err)
{
    s->capture = 0;
    const size_t n = (size_t)s->r.n_prompt;
    if (n <= g->prefix.n && memcmp(s->ids.v, g->prefix.v, n * sizeof *s->ids.v) == 0) return GGUF_OK;
    const uint64_t bytes = qwen_seq_state_size(g->ctx, (uint32_t)n);
    if (bytes > SIZE_MAX) return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "out of memory");
    if (g->prefix_cap < bytes) {
        unsigned char *b = realloc(g->prefix_state, (size_t)bytes);
        if (!b) return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(g->m->file));
        g->prefix_state = b;
        g->prefix_cap = (size_t)bytes;
    }
    int st = qwen_seq_state_get(g->ctx, seq, (uint32_t)n, g->prefix_state, err);
    if (st == GGUF_E_UNSUPPORTED) {
        g->no_state = 1;
        return GGUF_OK;
    }
    if (st) return st;
    g->prefix.n = 0;
    for (size_t i = 0; i < n; i++)
        if (qwen_ids_push(&g->prefix, s->ids.v[i]))
            return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(g->m->file));
    g->prefix_changed = 1;
    return GGUF_OK;
}

size_t qwen_generator_prefix(const qwen_generator *g, const int32_t **ids, const void **state,
                             int *changed)
{
    if (ids) *ids = g->prefix.v;
    if (state) *state = g->prefix_state;
    if (changed) *changed = g->prefix_changed;
    return g->prefix.n;
}

int qwen_generator_set_prefix(qwen_generator *g, const int32_t *ids, size_t n, const void *state,
                              gguf_error *err)
{
    if (!g->p.reuse_prefix)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_generator_set_prefix: no reuse_prefix");
    if (n > g->n_ctx)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                         "a prefix of %zu tokens, longer than the context of %" PRIu32, n, g->n_ctx);
    const uint64_t bytes = qwen_seq_state_size(g->ctx, (uint32_t)n);
    unsigned char *b = bytes <= SIZE_MAX ? malloc(bytes ? (size_t)bytes : 1) : NULL;
    qwen_ids copy = QWEN_IDS_INIT;
    for (size_t i = 0; b && i < n; i++)
        if (qwen_ids_push(&copy, ids[i])) {
            free(b);
            b = NULL;
        }
    if (!b) {
        qwen_ids_free(&copy);
        return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(g->m->file));
    }
    memcpy(b, state, (size_t)bytes);
    free(g->prefix_state);
    qwen_ids_free(&g->prefix);
    g->prefix = copy;
    g->prefix_state = b;
    g->prefix_cap = (size_t)bytes;
    g->prefix_changed = 0;
    return GGUF_OK;
}

/* The log-softmax of logits / temp (temp 1 when not above 0) at id, and
 * the n most likely into g->top_id, g->top_lp (most likely first, the
 * lower id first among equals).  Tokens at -inf are left out of the top;
 * fewer than n when fewer are finite.  Returns the number in the top. */
static uint32_t logprobs(qwen_generator *g, const float *logits, int32_t id, float *lp_id)
{
    const int32_t nv = (int32_t)g->m->config.n_vocab;
    const double t = g->p.sampler.temp > 0 ? g->p.sampler.temp : 1.0;
    float mx = -INFINITY;
    for (int32_t i = 0; i < nv; i++)
        if (logits[i] > mx) mx = logits[i];
    double sum = 0;
    for (int32_t i = 0; i < nv; i++) sum += exp(((double)logits[i] - mx) / t);
    const double lse = (double)mx / t + log(sum);
    *lp_id = (float)((double)logits[id] / t - lse);
    uint32_t n = 0;
    const uint32_t want = g->p.n_logprobs;
    for (int32_t i = 0; i < nv; i++) {
        if (logits[i] == -INFINITY) continue;
        if (n == want && !(logits[i] > logits[g->top_id[n - 1]])) continue;
        uint32_t j = n < want ? n++ : n - 1;
        while (j > 0 && logits[i] > logits[g->top_id[j - 1]]) {
            g->top_id[j] = g->top_id[j - 1];
            j--;
        }
        g->top_id[j] = i;
    }
    for (uint32_t k = 0; k < n; k++) g->top_lp[k] = (float)((double)logits[g->top_id[k]] / t - lse);
    return n;
}

/* Makes room in slot s's full sequence (sequence seq): keeps the first
 * n_keep tokens of the conversation, drops half of the rest, and feeds the
 * kept ones and id (chosen, not fed) again as a prompt.  Returns 1 when it
 * did, 0 when nothing can be dropped. */
static int shift(qwen_generator *g, struct slot *s, int32_t seq, int32_t id)
{
    const size_t n_past = s->ids.n;     /* the prompt and the reply's tokens fed */
    size_t keep = g->p.n_keep < 0 ? (size_t)s->r.n_prompt : (size_t)g->p.n_keep;
    if (keep > n_past) keep = n_past;
    const size_t drop = (n_past - keep) / 2;
    if (drop == 0) return 0;
    memmove(s->ids.v + keep, s->ids.v + keep + drop, (n_past - keep - drop) * sizeof *s->ids.v);
    s->ids.n = n_past - drop;
    if (qwen_ids_push(&s->ids, id) != GGUF_OK) return 0; /* room was reserved */
    qwen_seq_clear(g->ctx, seq);
    s->hist_n = 0;
    s->fed = 0;
    s->r.n_shift++;
    s->state = SLOT_PROMPT;
    return 1;
}

/* Whether token id can be part of a grammar's text (as the vocabulary's
 * byte tree has it, grammar.c): not a control or unused token, some bytes. */
static int token_in_grammar(const qwen_generator *g, int32_t id)
{
    int type = qwen_token_type(g->tok, id);
    size_t n = 0;
    return type != QWEN_TOKEN_CONTROL && type != QWEN_TOKEN_UNUSED && type >= 0 &&
           qwen_token_bytes(g->tok, id, &n) && n > 0;
}

/* Slot s's logits of the last step are ready: its next token. */
static int take_token(qwen_generator *g, struct slot *s, int32_t seq, const qwen_gen_io *io,
                      gguf_error *err)
{
    const float *logits = qwen_logits(g->ctx, (uint32_t)s->row);
    s->row = -1;
    int st = check_logits(g->m, logits, s->r.n_gen, err);
    if (st) return st;
    if (g->p.n_predict >= 0 && s->r.n_gen >= (uint64_t)g->p.n_predict)
        return finish(g, s, io, QWEN_STOP_LENGTH) ? qwen_fail(err, GGUF_E_IO, UINT64_MAX, "output failed") : 0;
    int32_t id = -1;
    if (g->masked) {
        const uint32_t nv = g->m->config.n_vocab;
        const float *raw = logits;
        memcpy(g->masked, raw, (size_t)nv * sizeof *raw);
        if (g->p.ignore_eos)
            for (int i = 0; i < N_END; i++)
                if (g->end[i] >= 0) g->masked[g->end[i]] = -INFINITY;
        logits = g->masked;
        /* Greedy: the choice without the grammar, when the grammar takes
         * it, is the choice with it (the most likely of all is the most
         * likely of those allowed), without the walk over the vocabulary. */
        if (s->gstate && !(g->p.sampler.temp > 0) && !g->p.n_logprobs) {
            const int32_t c = qwen_sampler_sample(s->sampler, logits);
            if (is_end(g, c)) {
                if (!g->p.ignore_eos && qwen_grammar_complete(s->gstate)) id = c;
            } else if (token_in_grammar(g, c)) {
                size_t n;
                const char *p = qwen_token_bytes(g->tok, c, &n);
                if (qwen_grammar_accept(s->gstate, p, n) == 0) id = c;
            }
        }
        /* Sampling with top-k: the k first tokens the grammar allows, in
         * the sampler's order, found among its 4 k first; they are the
         * top k of the masked logits, so the draw over them is the draw
         * with the whole vocabulary masked. */
        int ready = 0;
        if (s->gstate && g->order && !g->p.n_logprobs) {
            const size_t k = (size_t)g->p.sampler.top_k;
            const size_t got = qwen_sampler_order(s->sampler, logits, g->n_order, g->order);
            const int end_ok = !g->p.ignore_eos && qwen_grammar_complete(s->gstate);
            size_t found = 0;
            for (size_t i = 0; i < got && found < k; i++) {
                const int32_t c = g->order[i];
                int ok;
                if (is_end(g, c)) {
                    ok = end_ok;
                } else {
                    size_t n;
                    const char *p = qwen_token_bytes(g->tok, c, &n);
                    ok = token_in_grammar(g, c) && qwen_grammar_takes(s->gstate, p, n);
                }
                if (ok) g->order[found++] = c; /* (found <= i) */
            }
            if (found == k) {
                for (uint32_t i = 0; i < nv; i++) g->masked[i] = -INFINITY;
                for (size_t i = 0; i < k; i++) g->masked[g->order[i]] = raw[g->order[i]];
                ready = 1;
            }
        }
        if (s->gstate && id < 0 && !ready) {
            const int64_t na = qwen_grammar_allowed(s->gstate, g->gvocab, g->allowed);
            if (na < 0) return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(g->m->file));
            const int complete = qwen_grammar_complete(s->gstate);
            if (na == 0 && !complete)
                return finish(g, s, io, QWEN_STOP_GRAMMAR) ? qwen_fail(err, GGUF_E_IO, UINT64_MAX, "output failed") : 0;
            const int end_ok = complete && (!g->p.ignore_eos || na == 0);
            for (uint32_t i = 0; i < nv; i++)
                if (!g->allowed[i]) g->masked[i] = -INFINITY;
            for (int i = 0; i < N_END; i++)
                if (g->end[i] >= 0) g->masked[g->end[i]] = end_ok ? raw[g->end[i]] : -INFINITY;
        }
    }
    if (id < 0) {
        id = qwen_sampler_sample(s->sampler, logits);
        if (s->gstate && !is_end(g, id)) {
            size_t n;
            const char *p = qwen_token_bytes(g->tok, id, &n);
            if (qwen_grammar_accept(s->gstate, p, n))
                return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                                 "%s: token %" PRId32 " was sampled but the grammar refuses it",
                                 gguf_name(g->m->file), id);
        }
    }
    qwen_sampler_accept(s->sampler, id);
    if (io->token) {
        qwen_gen_token t = {id, 0.0f, 0, g->top_id, g->top_lp};
        if (g->p.n_logprobs) t.n_top = logprobs(g, logits, id, &t.logprob);
        if (io->token(io->user, s->k, &t)) return qwen_fail(err, GGUF_E_IO, UINT64_MAX, "output failed");
    }
    const int e = emit_token(g, s, io, id);
    if (e < 0) return qwen_fail(err, GGUF_E_IO, UINT64_MAX, "output failed");
    enum qwen_stop why = QWEN_STOP_EOS;
    int over = is_end(g, id);
    if (!over) {
        s->r.n_gen++;
        if (e == 1) {
            over = 1;
            why = QWEN_STOP_STRING;
        } else if (g->p.n_predict >= 0 && s->r.n_gen >= (uint64_t)g->p.n_predict) {
            over = 1;
            why = QWEN_STOP_LENGTH;
        } else if (qwen_seq_pos(g->ctx, seq) >= g->n_ctx) {
            /* the token was chosen and shown, but there is no room to feed
             * it: drop older tokens, or end */
            if (g->p.context_shift && shift(g, s, seq, id)) return GGUF_OK;
            over = 1;
            why = QWEN_STOP_CONTEXT;
        }
    }
    if (over) return finish(g, s, io, why) ? qwen_fail(err, GGUF_E_IO, UINT64_MAX, "output failed") : 0;
    /* the conversation so far, for a shift (room reserved at the start) */
    if (g->p.context_shift && qwen_ids_push(&s->ids, id) != GGUF_OK)
        return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(g->m->file));
    s->next = id;
    return GGUF_OK;
}

/* Fills the batch: the next token of every reply under way, then prompt
 * tokens, the conversation that came first first, while there is room.
 * Stores the tokens of each kind in *n_gen and *n_prompt. */
static void build_batch(qwen_generator *g, uint32_t *n_gen, uint32_t *n_prompt)
{
    qwen_batch *b = &g->batch;
    b->n = 0;
    *n_gen = *n_prompt = 0;
    for (uint32_t i = 0; i < g->n_seq; i++) {
        struct slot *s = &g->slots[i];
        s->fed_prompt = 0;
        if (s->state != SLOT_REPLY || s->next < 0) continue;
        s->row = (int32_t)b->n;
        const uint32_t pos = qwen_seq_pos(g->ctx, (int32_t)i);
        qwen_batch_add(b, s->next, (int32_t)i, pos, 1);
        s->hist[pos] = s->next;
        s->hist_n = (size_t)pos + 1;
        s->next = -1;
        (*n_gen)++;
    }
    for (;;) {
        struct slot *s = NULL;
        uint32_t seq = 0;
        for (uint32_t i = 0; i < g->n_seq; i++)
            if (g->slots[i].state == SLOT_PROMPT && (!s || g->slots[i].k < s->k)) {
                s = &g->slots[i];
                seq = i;
            }
        if (!s || b->n == b->cap) break;
        s->fed_prompt = 1;
        while (s->fed < s->ids.n && b->n < b->cap) {
            const int last = s->fed == s->ids.n - 1;
            if (last) s->row = (int32_t)b->n;
            qwen_batch_add(b, s->ids.v[s->fed], (int32_t)seq, (uint32_t)s->fed, last);
            s->hist[s->fed] = s->ids.v[s->fed];
            s->hist_n = s->fed + 1;
            s->fed++;
            (*n_prompt)++;
        }
        if (s->fed < s->ids.n) break;
        s->state = SLOT_REPLY; /* its logits come with this step */
        s->capture = g->p.reuse_prefix && !g->no_state && s->r.n_shift == 0;
    }
}

int qwen_generate(qwen_generator *g, const qwen_gen_io *io, gguf_error *err)
{
    if (!g || !io || !io->next || !io->text || !io->done)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_generate: NULL argument");
    int more = 1;   /* next() may give more */
    int st = GGUF_OK;
    double t0 = now();
    for (;;) {
        /* 1. the replies whose logits came with the last step */
        for (uint32_t i = 0; i < g->n_seq && !st; i++) {
            struct slot *s = &g->slots[i];
            if (s->state == SLOT_REPLY && s->row >= 0) st = take_token(g, s, (int32_t)i, io, err);
        }
        if (st) break;
        if (io->cancel && io->cancel(io->user)) {
            more = 0;
            for (uint32_t i = 0; i < g->n_seq && !st; i++)
                if (g->slots[i].state != SLOT_FREE &&
                    finish(g, &g->slots[i], io, QWEN_STOP_CANCELLED))
                    st = qwen_fail(err, GGUF_E_IO, UINT64_MAX, "output failed");
            break;
        }
        /* 2. new conversations in the free sequences (the time the
         * caller takes to give them is not the model's) */
        const double t_in = now();
        for (uint32_t i = 0; i < g->n_seq && more && !st; i++) {
            struct slot *s = &g->slots[i];
            while (s->state == SLOT_FREE && more && !st) {
                s->ids.n = 0;
                int rc = io->next(io->user, &s->ids);
                if (rc <= 0) more = 0;
                else st = start(g, s, (int32_t)i, io, err);
            }
        }
        t0 += now() - t_in;
        if (st) break;
        /* 3. one step */
        uint32_t n_gen, n_prompt;
        build_batch(g, &n_gen, &n_prompt);
        if (g->batch.n == 0) {
            /* nothing under way, nothing to come: the last sampling was
             * generation's */
            g->totals.gen_s += now() - t0;
            break;
        }
        st = qwen_decode(g->ctx, &g->batch, err);
        if (st) break;
        for (uint32_t i = 0; i < g->n_seq && !st; i++)
            if (g->slots[i].capture) st = capture_prefix(g, &g->slots[i], (int32_t)i, err);
        if (st) break;
        /* The step's time, with the sampling before it, is shared by the
         * kinds of tokens in it, and charged whole to each conversation
         * in it. */
        const double t1 = now(), dt = t1 - t0;
        t0 = t1;
        const double n = (double)(n_gen + n_prompt);
        g->totals.prompt_tokens += n_prompt;
        g->totals.prompt_s += dt * n_prompt / n;
        g->totals.gen_s += dt * n_gen / n;
        for (uint32_t i = 0; i < g->n_seq; i++) {
            struct slot *s = &g->slots[i];
            if (s->state == SLOT_FREE) continue;
            if (s->fed_prompt) s->r.prompt_s += dt;
            else s->r.gen_s += dt;
        }
    }
    /* After an error the conversations under way are dropped: the next
     * run starts with every sequence free. */
    for (uint32_t i = 0; st && i < g->n_seq; i++) {
        g->slots[i].state = SLOT_FREE;
        g->slots[i].hist_n = 0; /* what the cache holds is not known */
    }
    return st;
}
