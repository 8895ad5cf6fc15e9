/*
 * test-context.c -- contexts of many sequences (infer/context.h) and the
 * generation loop over them (infer/generate.h), on synthetic models.
 *
 * - Sequences decoded together in one batch (their prompts interleaved
 *   entry by entry, then one token of each a step) give the same logits,
 *   bit for bit, as each decoded alone in a context of one sequence: the
 *   attention of a token sees only its own sequence, and the products
 *   compute each entry of a batch with the same arithmetic.
 * - qwen_seq_truncate() and qwen_seq_clear() forget positions: decoding
 *   the same tokens again gives the same logits.
 * - qwen_decode() refuses bad batches (empty, too long, a token outside
 *   the vocabulary, a sequence id out of range, a position other than the
 *   next, past the context, too many logits wanted) and leaves the context
 *   as it was; qwen_context_new() refuses bad parameters naming them.
 * - A batched decode step allocates nothing.
 * - qwen_generate(): the replies to a list of prompts of different lengths
 *   and limits are the same, id for id, with 1, 2, 3 and 5 sequences at
 *   once, greedy and seeded; each conversation ends once, with its reason
 *   (end token, length, full context, cancelled); a prompt too long and a
 *   batch smaller than the sequences are refused.
 * - Stop strings end a reply before their first place in its text, also
 *   across tokens, the earliest of several; log-probabilities are the
 *   log-softmax of the logits over the temperature, the greedy choice the
 *   most likely; the context shift drops half of what follows the kept
 *   tokens and goes on as if the rest were fed afresh.
 */
#include <config.h>

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "infer/context.h"
#include "infer/generate.h"
#include "infer/model.h"
#include "infer/tokenizer.h"
#include "tests/testutil.h"
#include "tests/alloccount.h"
#include "tests/synthdir.h"

#define N_SEQ 4
#define N_STEPS 5

static int32_t token_at(uint32_t seq, uint32_t i, uint32_t n_vocab)
{
    return (int32_t)((i * 389u + seq * 131u + 17u) % n_vocab);
}

/* Prompt length of sequence s: each its own. */
static uint32_t prompt_len(uint32_t s)
{
    return 3 + 4 * s;
}

static qwen_context *new_context(const qwen_model *m, uint32_t n_ctx, uint32_t n_seq,
                                 uint32_t n_batch)
{
    gguf_error err;
    qwen_params p = qwen_params_defaults();
    p.n_ctx = n_ctx;
    p.n_seq = n_seq;
    p.n_batch = n_batch;
    qwen_context *ctx;
    REQUIRE(qwen_context_new(&ctx, m, &p, &err) == GGUF_OK, "%s", err.message);
    return ctx;
}

static qwen_model *open_model(const char *name, const char *args)
{
    char path[512];
    tu_synth_model(path, sizeof path, name, args);
    gguf_error err;
    qwen_model *m;
    REQUIRE(qwen_model_open(&m, path, &err) == GGUF_OK, "%s", err.message);
    return m;
}

/* ------------------------------------------------------------------------ */
/* Many sequences in one batch, the same as each alone                      */

static void check_sequences(const char *name, const char *args)
{
    qwen_model *m = open_model(name, args);
    const uint32_t nv = m->config.n_vocab;
    gguf_error err;
    /* want[s][step]: the logits of sequence s alone after its prompt
     * (step 0) and after each single token */
    float *want = malloc(sizeof *want * nv * N_SEQ * (N_STEPS + 1));
    REQUIRE(want != NULL, "out of memory");
#define WANT(s, step) (want + ((uint64_t)(s) * (N_STEPS + 1) + (step)) * nv)
    qwen_context *one = new_context(m, 64, 1, 64);
    qwen_batch b;
    REQUIRE(qwen_batch_init(&b, 64, &err) == GGUF_OK, "%s", err.message);
    for (uint32_t s = 0; s < N_SEQ; s++) {
        qwen_seq_clear(one, 0);
        CHECK(qwen_seq_pos(one, 0) == 0, "cleared sequence at %u", qwen_seq_pos(one, 0));
        b.n = 0;
        for (uint32_t i = 0; i < prompt_len(s); i++)
            qwen_batch_add(&b, token_at(s, i, nv), 0, i, i == prompt_len(s) - 1);
        REQUIRE(qwen_decode(one, &b, &err) == GGUF_OK, "%s", err.message);
        memcpy(WANT(s, 0), qwen_logits(one, b.n - 1), nv * sizeof(float));
        for (uint32_t step = 1; step <= N_STEPS; step++) {
            b.n = 0;
            uint32_t pos = prompt_len(s) + step - 1;
            qwen_batch_add(&b, token_at(s, pos, nv), 0, pos, 1);
            REQUIRE(qwen_decode(one, &b, &err) == GGUF_OK, "%s", err.message);
            memcpy(WANT(s, step), qwen_logits(one, 0), nv * sizeof(float));
        }
    }

    /* Together: the prompts interleaved entry by entry in one batch. */
    qwen_context *many = new_context(m, 64, N_SEQ, 64);
    b.n = 0;
    uint32_t row[N_SEQ];
    for (uint32_t i = 0; i < prompt_len(N_SEQ - 1); i++)
        for (uint32_t s = 0; s < N_SEQ; s++) {
            if (i >= prompt_len(s)) continue;
            if (i == prompt_len(s) - 1) row[s] = b.n;
            qwen_batch_add(&b, token_at(s, i, nv), (int32_t)s, i, i == prompt_len(s) - 1);
        }
    REQUIRE(qwen_decode(many, &b, &err) == GGUF_OK, "%s", err.message);
    for (uint32_t t = 0; t < b.n; t++) {
        int mine = 0;
        for (uint32_t s = 0; s < N_SEQ; s++) mine |= row[s] == t;
        CHECK((qwen_logits(many, t) != NULL) == mine, "entry %u: logits %s", t,
              mine ? "missing" : "where none were wanted");
    }
    for (uint32_t s = 0; s < N_SEQ; s++)
        CHECK(memcmp(qwen_logits(many, row[s]), WANT(s, 0), nv * sizeof(float)) == 0,
              "%s: sequence %u's prompt in a batch of %u sequences differs from alone", name, s,
              N_SEQ);
    /* Then one token of each a step, in reverse order of the sequences. */
    for (uint32_t step = 1; step <= N_STEPS; step++) {
        b.n = 0;
        for (uint32_t s = N_SEQ; s-- > 0;) {
            uint32_t pos = prompt_len(s) + step - 1;
            qwen_batch_add(&b, token_at(s, pos, nv), (int32_t)s, pos, 1);
        }
        REQUIRE(qwen_decode(many, &b, &err) == GGUF_OK, "%s", err.message);
        for (uint32_t s = 0; s < N_SEQ; s++)
            CHECK(memcmp(qwen_logits(many, N_SEQ - 1 - s), WANT(s, step), nv * sizeof(float)) == 0,
                  "%s: sequence %u, step %u, in a batch differs from alone", name, s, step);
    }
    for (uint32_t s = 0; s < N_SEQ; s++)
        CHECK(qwen_seq_pos(many, (int32_t)s) == prompt_len(s) + N_STEPS, "sequence %u at %u", s,
              qwen_seq_pos(many, (int32_t)s));

    /* Truncated by two, the same two tokens again: the same logits.  The
     * other sequences are untouched. */
    const uint32_t s = 2, end = prompt_len(s) + N_STEPS;
    qwen_seq_truncate(many, (int32_t)s, end - 2);
    CHECK(qwen_seq_pos(many, (int32_t)s) == end - 2, "truncated to %u", qwen_seq_pos(many, (int32_t)s));
    CHECK(qwen_seq_pos(many, 1) == prompt_len(1) + N_STEPS, "truncating 2 moved 1");
    b.n = 0;
    qwen_batch_add(&b, token_at(s, end - 2, nv), (int32_t)s, end - 2, 0);
    qwen_batch_add(&b, token_at(s, end - 1, nv), (int32_t)s, end - 1, 1);
    REQUIRE(qwen_decode(many, &b, &err) == GGUF_OK, "%s", err.message);
    CHECK(qwen_logits(many, 0) == NULL, "logits of an entry that did not want them");
    CHECK(memcmp(qwen_logits(many, 1), WANT(s, N_STEPS), nv * sizeof(float)) == 0,
          "%s: after truncating, the same tokens give other logits", name);
    /* Cleared, then the prompt again, in sequence 3's slot of the cache
     * beside the others. */
    qwen_seq_clear(many, 0);
    CHECK(qwen_seq_pos(many, 0) == 0, "cleared sequence at %u", qwen_seq_pos(many, 0));
    b.n = 0;
    for (uint32_t i = 0; i < prompt_len(0); i++)
        qwen_batch_add(&b, token_at(0, i, nv), 0, i, i == prompt_len(0) - 1);
    REQUIRE(qwen_decode(many, &b, &err) == GGUF_OK, "%s", err.message);
    CHECK(memcmp(qwen_logits(many, b.n - 1), WANT(0, 0), nv * sizeof(float)) == 0,
          "%s: a cleared sequence's prompt again gives other logits", name);
#undef WANT
    fprintf(stderr, "%s: %u sequences in one batch: the logits of each alone, bit for bit\n", name,
            N_SEQ);
    qwen_batch_free(&b);
    qwen_context_free(one);
    qwen_context_free(many);
    qwen_model_close(m);
    free(want);
}

/* ------------------------------------------------------------------------ */
/* Bad batches and parameters                                                */

/* Decodes b, which must fail with GGUF_E_INVALID and a message holding
 * `want`, leaving every sequence where it was. */
static void expect_refused(qwen_context *ctx, const qwen_batch *b, const char *want)
{
    gguf_error err = {0};
    uint32_t before[2] = {qwen_seq_pos(ctx, 0), qwen_seq_pos(ctx, 1)};
    int st = qwen_decode(ctx, b, &err);
    CHECK(st == GGUF_E_INVALID, "'%s': status %d", want, st);
    CHECK(strstr(err.message, want) != NULL, "message '%s' lacks '%s'", err.message, want);
    CHECK(qwen_seq_pos(ctx, 0) == before[0] && qwen_seq_pos(ctx, 1) == before[1],
          "'%s': the sequences moved", want);
}

static void check_refusals(void)
{
    qwen_model *m = open_model("tiny-q8_0", "--size tiny --type q8_0");
    const int32_t nv = (int32_t)m->config.n_vocab;
    gguf_error err = {0};
    qwen_params p = qwen_params_defaults();
    p.n_ctx = 8;
    p.n_seq = 2;
    p.n_batch = 6;
    p.n_outputs = 2;
    qwen_context *ctx;
    REQUIRE(qwen_context_new(&ctx, m, &p, &err) == GGUF_OK, "%s", err.message);
    qwen_batch b;
    REQUIRE(qwen_batch_init(&b, 16, &err) == GGUF_OK, "%s", err.message);
    /* a good start: 3 tokens of sequence 0 */
    for (uint32_t i = 0; i < 3; i++) qwen_batch_add(&b, 5, 0, i, i == 2);
    REQUIRE(qwen_decode(ctx, &b, &err) == GGUF_OK, "%s", err.message);

    b.n = 0;
    expect_refused(ctx, &b, "no tokens");
    for (uint32_t i = 0; i < 7; i++) qwen_batch_add(&b, 1, 1, i, 0);
    expect_refused(ctx, &b, "a batch of 7 tokens, more than 6");
    b.n = 0;
    qwen_batch_add(&b, 1, 1, 0, 0);
    qwen_batch_add(&b, nv, 1, 1, 0);
    expect_refused(ctx, &b, "token 1 has id");
    b.n = 0;
    qwen_batch_add(&b, 1, 2, 0, 0);
    expect_refused(ctx, &b, "is of sequence 2, outside 0 .. 1");
    b.n = 0;
    qwen_batch_add(&b, 1, 0, 4, 0);
    expect_refused(ctx, &b, "at position 4 of sequence 0, whose next position is 3");
    b.n = 0;
    qwen_batch_add(&b, 1, 1, 0, 0);
    qwen_batch_add(&b, 1, 1, 0, 0); /* a position twice */
    expect_refused(ctx, &b, "at position 0 of sequence 1, whose next position is 1");
    b.n = 0;
    for (uint32_t i = 3; i < 9; i++) qwen_batch_add(&b, 1, 0, i, 0);
    expect_refused(ctx, &b, "9 tokens exceed the context of 8");
    b.n = 0;
    qwen_batch_add(&b, 1, 0, 3, 1);
    qwen_batch_add(&b, 1, 1, 0, 1);
    qwen_batch_add(&b, 1, 1, 1, 1);
    expect_refused(ctx, &b, "more than 2 tokens of the batch want logits");
    CHECK(qwen_batch_add(&b, 1, 0, 0, 0) == 0, "batch_add with room");
    b.n = b.cap;
    CHECK(qwen_batch_add(&b, 1, 0, 0, 0) == -1, "batch_add past the room");
    /* after all that, the context goes on where it was */
    b.n = 0;
    qwen_batch_add(&b, 5, 0, 3, 1);
    qwen_batch_add(&b, 5, 1, 0, 1);
    CHECK(qwen_decode(ctx, &b, &err) == GGUF_OK, "%s", err.message);
    CHECK(qwen_seq_pos(ctx, 0) == 4 && qwen_seq_pos(ctx, 1) == 1, "positions %u %u",
          qwen_seq_pos(ctx, 0), qwen_seq_pos(ctx, 1));
    qwen_batch_free(&b);
    qwen_context_free(ctx);

    /* parameters */
    static const struct {
        const char *backend;
        uint32_t n_ctx, n_seq, n_batch, n_outputs;
        int status;
        const char *want;
    } bad[] = {
        {"tpu", 8, 1, 8, 0, GGUF_E_UNSUPPORTED, "backend 'tpu' is not in this build (backends: cpu"},
        {"cpu", 0, 1, 1, 0, GGUF_E_INVALID, "context of 0 positions"},
        {"cpu", 8, 0, 8, 0, GGUF_E_INVALID, "0 sequences: expected 1 .. "},
        {"cpu", 8, QWEN_MAX_SEQ + 1, 8, 0, GGUF_E_INVALID, "sequences: expected 1 .. "},
        {"cpu", 8, 2, 17, 0, GGUF_E_INVALID, "batch of 17 tokens: expected 1 .. 16"},
        {"cpu", 8, 2, 0, 0, GGUF_E_INVALID, "batch of 0 tokens"},
        {"cpu", 8, 2, 4, 5, GGUF_E_INVALID, "5 outputs, more than the batch of 4"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = qwen_params_defaults();
        p.backend = bad[i].backend;
        p.n_ctx = bad[i].n_ctx;
        p.n_seq = bad[i].n_seq;
        p.n_batch = bad[i].n_batch;
        p.n_outputs = bad[i].n_outputs;
        ctx = (qwen_context *)1;
        int st = qwen_context_new(&ctx, m, &p, &err);
        CHECK(st == bad[i].status && ctx == NULL, "case %zu: status %d", i, st);
        CHECK(strstr(err.message, bad[i].want) != NULL, "case %zu: '%s' lacks '%s'", i,
              err.message, bad[i].want);
    }
    qwen_context_free(NULL);
    qwen_model_close(m);
}

/* ------------------------------------------------------------------------ */
/* A batched step allocates nothing                                          */

static void check_no_alloc(void)
{
    qwen_model *m = open_model("small-q4_k_m", "--size small --type q4_k_m");
    const uint32_t nv = m->config.n_vocab;
    gguf_error err;
    qwen_context *ctx = new_context(m, 32, N_SEQ, 32);
    qwen_batch b;
    REQUIRE(qwen_batch_init(&b, 32, &err) == GGUF_OK, "%s", err.message);
    for (uint32_t s = 0; s < N_SEQ; s++)
        for (uint32_t i = 0; i < 4; i++) qwen_batch_add(&b, token_at(s, i, nv), (int32_t)s, i, i == 3);
    REQUIRE(qwen_decode(ctx, &b, &err) == GGUF_OK, "%s", err.message);
    int st = GGUF_OK;
    tu_alloc_count_begin();
    for (uint32_t step = 0; step < N_STEPS && !st; step++) {
        b.n = 0;
        for (uint32_t s = 0; s < N_SEQ; s++)
            qwen_batch_add(&b, token_at(s, 4 + step, nv), (int32_t)s, 4 + step, 1);
        st = qwen_decode(ctx, &b, &err);
    }
    const long n_allocs = tu_alloc_count_end();
    CHECK(st == GGUF_OK, "%s", err.message);
    CHECK(n_allocs == 0, "%d batched decode steps of %d sequences allocated %ld times", N_STEPS,
          N_SEQ, n_allocs);
    qwen_batch_free(&b);
    qwen_context_free(ctx);
    qwen_model_close(m);
}

/* ------------------------------------------------------------------------ */
/* The generation loop                                                       */

#define N_CONV 7

/* What qwen_generate gave for each conversation. */
struct gen_run {
    qwen_ids prompts[N_CONV];
    int next;               /* prompts given */
    char text[N_CONV][1024];
    size_t len[N_CONV];
    int done[N_CONV];
    qwen_gen_reply r[N_CONV];
    int order_ok;           /* text() only for conversations under way */
    int cancel_after;       /* cancel() says yes from this call on; -1 never */
    int cancel_calls;
    /* token(): the ids and log-probabilities given, the best alternative */
    int32_t tok_id[N_CONV][128];
    float tok_lp[N_CONV][128], top0_lp[N_CONV][128];
    int32_t top0_id[N_CONV][128];
    size_t n_tok[N_CONV];
    int top_ok;             /* every top list sorted, within n_logprobs, below 0 */
    uint32_t want_top;
};

static int g_next(void *user, qwen_ids *ids)
{
    struct gen_run *g = user;
    if (g->next == N_CONV) return 0;
    const qwen_ids *p = &g->prompts[g->next++];
    for (size_t i = 0; i < p->n; i++)
        if (qwen_ids_push(ids, p->v[i])) return -1;
    return 1;
}

static int g_text(void *user, uint64_t k, const char *p, size_t n)
{
    struct gen_run *g = user;
    if (k >= (uint64_t)g->next || g->done[k]) g->order_ok = 0;
    if (k >= N_CONV || g->len[k] + n >= sizeof g->text[k]) return -1;
    memcpy(g->text[k] + g->len[k], p, n);
    g->len[k] += n;
    return 0;
}

static void g_done(void *user, uint64_t k, const qwen_gen_reply *r)
{
    struct gen_run *g = user;
    if (k >= N_CONV) return;
    g->done[k]++;
    g->r[k] = *r;
}

static int g_token(void *user, uint64_t k, const qwen_gen_token *t)
{
    struct gen_run *g = user;
    if (k >= N_CONV || g->n_tok[k] == 128) return 0;
    const size_t i = g->n_tok[k]++;
    g->tok_id[k][i] = t->id;
    g->tok_lp[k][i] = t->logprob;
    g->top0_id[k][i] = t->n_top ? t->top_id[0] : -1;
    g->top0_lp[k][i] = t->n_top ? t->top_logprob[0] : 1.0f;
    if (t->n_top != g->want_top || !(t->logprob <= 0)) g->top_ok = 0;
    for (uint32_t j = 0; j < t->n_top; j++)
        if (!(t->top_logprob[j] <= 0) || (j && t->top_logprob[j] > t->top_logprob[j - 1]) ||
            (j && t->top_logprob[j] == t->top_logprob[j - 1] && t->top_id[j] < t->top_id[j - 1]))
            g->top_ok = 0;
    return 0;
}

static int g_cancel(void *user)
{
    struct gen_run *g = user;
    return g->cancel_after >= 0 && g->cancel_calls++ >= g->cancel_after;
}

/* Runs the prompts of `proto` through a generator of n_seq sequences with
 * parameters gp into *out. */
static void run_generator(const qwen_model *m, const qwen_tokenizer *tok, uint32_t n_seq,
                          uint32_t n_ctx, const qwen_gen_params *gp, const struct gen_run *proto,
                          struct gen_run *out)
{
    gguf_error err = {0};
    memset(out, 0, sizeof *out);
    for (int i = 0; i < N_CONV; i++) out->prompts[i] = proto->prompts[i];
    out->order_ok = 1;
    out->top_ok = 1;
    out->want_top = gp->n_logprobs;
    out->cancel_after = proto->cancel_after;
    qwen_params p = qwen_params_defaults();
    p.n_ctx = n_ctx;
    p.n_seq = n_seq;
    p.n_batch = 16; /* the long prompts take several steps */
    qwen_context *ctx;
    REQUIRE(qwen_context_new(&ctx, m, &p, &err) == GGUF_OK, "%s", err.message);
    qwen_generator *gen;
    REQUIRE(qwen_generator_new(&gen, ctx, tok, gp, &err) == GGUF_OK, "%s", err.message);
    qwen_gen_io io = {g_next, g_text, g_done, g_cancel, out, g_token};
    int st = qwen_generate(gen, &io, &err);
    CHECK(st == GGUF_OK, "qwen_generate with %u sequences: %s", n_seq, err.message);
    qwen_gen_totals t = qwen_generator_totals(gen);
    uint64_t n_gen = 0, n_prompt = 0, n_shift = 0;
    for (int i = 0; i < N_CONV; i++) {
        n_gen += out->r[i].n_gen;
        n_prompt += out->done[i] ? out->r[i].n_prompt : 0;
        n_shift += out->r[i].n_shift;
    }
    CHECK(t.gen_tokens == n_gen, "totals: %" PRIu64 " generated, the replies %" PRIu64, t.gen_tokens, n_gen);
    /* (a context shift feeds tokens again: prompt work too; a prefix
     * reused is not fed) */
    uint64_t n_cached = 0;
    for (int i = 0; i < N_CONV; i++) n_cached += out->r[i].n_cached;
    n_prompt -= n_cached;
    if (proto->cancel_after < 0 && n_shift == 0)
        CHECK(t.prompt_tokens == n_prompt, "totals: %" PRIu64 " prompt tokens, the replies %" PRIu64,
              t.prompt_tokens, n_prompt);
    qwen_generator_free(gen);
    qwen_context_free(ctx);
}

/* The prompts of lengths lens[] (1 .. 37 tokens; the fourth empty) into
 * proto (emptied first). */
static const uint32_t lens[N_CONV] = {5, 37, 1, 0, 20, 9, 2};

static void fill_prompts(struct gen_run *proto, uint32_t nv)
{
    memset(proto, 0, sizeof *proto);
    proto->cancel_after = -1;
    for (int i = 0; i < N_CONV; i++)
        for (uint32_t j = 0; j < lens[i]; j++)
            REQUIRE(qwen_ids_push(&proto->prompts[i], token_at((uint32_t)i, j, nv)) == 0, "out of memory");
}

static void check_generate(void)
{
    qwen_model *m = open_model("small-q8_0", "--size small --type q8_0");
    const uint32_t nv = m->config.n_vocab;
    gguf_error err;
    qwen_tokenizer *tok;
    REQUIRE(qwen_tokenizer_load(&tok, m->file, &err) == GGUF_OK, "%s", err.message);
    struct gen_run proto;
    fill_prompts(&proto, nv);

    static const struct {
        float temp;
        int64_t n_predict;
    } modes[] = {{0.0f, 12}, {1.2f, 9}};
    for (size_t md = 0; md < sizeof modes / sizeof modes[0]; md++) {
        qwen_gen_params gp = qwen_gen_defaults();
        gp.sampler.temp = modes[md].temp;
        gp.sampler.top_k = 0;
        gp.sampler.seed = 11;
        gp.n_predict = modes[md].n_predict;
        gp.print_ids = 1;
        gp.ignore_eos = 1;
        static struct gen_run base, other;
        run_generator(m, tok, 1, 64, &gp, &proto, &base);
        for (int i = 0; i < N_CONV; i++) {
            CHECK(base.done[i] == 1, "conversation %d ended %d times", i, base.done[i]);
            const uint64_t want = lens[i] ? (uint64_t)gp.n_predict : 0;
            CHECK(base.r[i].n_gen == want, "conversation %d: %" PRIu64 " tokens, -n %" PRId64, i,
                  base.r[i].n_gen, gp.n_predict);
            CHECK(base.r[i].n_prompt == lens[i], "conversation %d: %" PRIu64 " prompt tokens of %u", i,
                  base.r[i].n_prompt, lens[i]);
            CHECK(!lens[i] || base.r[i].stop == QWEN_STOP_LENGTH, "conversation %d ended by %s", i,
                  qwen_stop_name(base.r[i].stop));
        }
        CHECK(base.order_ok, "text for a conversation not under way");
        static const uint32_t widths[] = {2, 3, 5};
        for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
            run_generator(m, tok, widths[w], 64, &gp, &proto, &other);
            CHECK(other.order_ok, "text for a conversation not under way");
            for (int i = 0; i < N_CONV; i++)
                CHECK(other.done[i] == 1 && other.len[i] == base.len[i] &&
                          memcmp(other.text[i], base.text[i], base.len[i]) == 0,
                      "temp %.1f: conversation %d with %u sequences: '%.*s', alone '%.*s'",
                      modes[md].temp, i, widths[w], (int)other.len[i], other.text[i],
                      (int)base.len[i], base.text[i]);
        }
        fprintf(stderr, "generate, temp %.1f: %d replies the same with 1, 2, 3 and 5 sequences\n",
                modes[md].temp, N_CONV);
    }

    /* A full context ends a reply: 37 + 4 positions hold the prompt and 4
     * fed tokens, the fifth chosen is not fed. */
    {
        qwen_gen_params gp = qwen_gen_defaults();
        gp.sampler.temp = 0;
        gp.ignore_eos = 1;
        gp.print_ids = 1;
        static struct gen_run r;
        run_generator(m, tok, 2, 41, &gp, &proto, &r);
        CHECK(r.done[1] == 1 && r.r[1].stop == QWEN_STOP_CONTEXT && r.r[1].n_gen == 5,
              "a full context: %s after %" PRIu64 " tokens", qwen_stop_name(r.r[1].stop), r.r[1].n_gen);
        CHECK(r.r[0].stop == QWEN_STOP_CONTEXT && r.r[0].n_gen == 41 - 5 + 1,
              "a full context, short prompt: %s after %" PRIu64, qwen_stop_name(r.r[0].stop), r.r[0].n_gen);
    }
    /* Without ignore_eos, an end token or the length ends each reply. */
    {
        qwen_gen_params gp = qwen_gen_defaults();
        gp.sampler.temp = 0;
        gp.n_predict = 20;
        static struct gen_run r;
        run_generator(m, tok, 3, 64, &gp, &proto, &r);
        for (int i = 0; i < N_CONV; i++)
            CHECK(r.done[i] == 1 && (r.r[i].stop == QWEN_STOP_EOS || r.r[i].stop == QWEN_STOP_LENGTH),
                  "conversation %d: %s", i, qwen_stop_name(r.r[i].stop));
    }
    /* Cancelled after three steps: every conversation under way ends,
     * cancelled, and no more are taken. */
    {
        qwen_gen_params gp = qwen_gen_defaults();
        gp.sampler.temp = 0;
        gp.ignore_eos = 1;
        static struct gen_run r;
        proto.cancel_after = 3;
        run_generator(m, tok, 2, 64, &gp, &proto, &r);
        proto.cancel_after = -1;
        int n_cancelled = 0, n_done = 0;
        for (int i = 0; i < N_CONV; i++) {
            n_done += r.done[i];
            n_cancelled += r.done[i] && r.r[i].stop == QWEN_STOP_CANCELLED;
        }
        CHECK(n_cancelled == 2 && n_done == 2 && r.next == 2,
              "cancelled: %d of %d ended, %d cancelled, %d taken", n_done, N_CONV, n_cancelled, r.next);
    }
    /* A prompt longer than the context is refused, naming both lengths. */
    {
        qwen_params p = qwen_params_defaults();
        p.n_ctx = 30;
        p.n_seq = 2;
        p.n_batch = 8;
        qwen_context *ctx;
        REQUIRE(qwen_context_new(&ctx, m, &p, &err) == GGUF_OK, "%s", err.message);
        qwen_gen_params gp = qwen_gen_defaults();
        qwen_generator *gen;
        REQUIRE(qwen_generator_new(&gen, ctx, tok, &gp, &err) == GGUF_OK, "%s", err.message);
        static struct gen_run r;
        memset(&r, 0, sizeof r);
        for (int i = 0; i < N_CONV; i++) r.prompts[i] = proto.prompts[i];
        r.cancel_after = -1;
        qwen_gen_io io = {g_next, g_text, g_done, g_cancel, &r, NULL};
        int st = qwen_generate(gen, &io, &err);
        CHECK(st == GGUF_E_INVALID && strstr(err.message, "the prompt is 37 tokens, longer than the context of 30"),
              "a prompt too long: status %d, '%s'", st, err.message);
        qwen_generator_free(gen);
        qwen_context_free(ctx);
    }
    /* A batch smaller than the sequences cannot hold a step. */
    {
        qwen_params p = qwen_params_defaults();
        p.n_ctx = 30;
        p.n_seq = 4;
        p.n_batch = 3;
        p.n_outputs = 3;
        qwen_context *ctx;
        REQUIRE(qwen_context_new(&ctx, m, &p, &err) == GGUF_OK, "%s", err.message);
        qwen_gen_params gp = qwen_gen_defaults();
        qwen_generator *gen = (qwen_generator *)1;
        int st = qwen_generator_new(&gen, ctx, tok, &gp, &err);
        CHECK(st == GGUF_E_INVALID && gen == NULL &&
                  strstr(err.message, "a batch of 3 tokens with 3 logits cannot hold a token of each of 4 sequences"),
              "batch 3 for 4 sequences: status %d, '%s'", st, err.message);
        qwen_generator_free(NULL);
        qwen_context_free(ctx);
    }
    for (int i = 0; i < N_CONV; i++) qwen_ids_free(&proto.prompts[i]);
    qwen_tokenizer_free(tok);
    qwen_model_close(m);
}

/* The first place the n bytes at h hold the m bytes at s, or NULL. */
static const char *find(const char *h, size_t n, const char *s, size_t m)
{
    for (size_t i = 0; i + m <= n; i++)
        if (memcmp(h + i, s, m) == 0) return h + i;
    return NULL;
}

/* 1 for the ids that end a reply (masked with ignore_eos). */
static int is_end_id(const qwen_tokenizer *tok, int32_t v)
{
    return v == qwen_tokenizer_eos(tok) || v == qwen_tokenizer_find(tok, "<|im_end|>", 10) ||
           v == qwen_tokenizer_find(tok, "<|endoftext|>", 13);
}

/* Stop strings, log-probabilities and the context shift. */
static void check_generate_more(void)
{
    qwen_model *m = open_model("small-q8_0", "--size small --type q8_0");
    const uint32_t nv = m->config.n_vocab;
    gguf_error err;
    qwen_tokenizer *tok;
    REQUIRE(qwen_tokenizer_load(&tok, m->file, &err) == GGUF_OK, "%s", err.message);
    struct gen_run proto;
    fill_prompts(&proto, nv);
    qwen_gen_params gp = qwen_gen_defaults();
    gp.sampler.temp = 0;
    gp.ignore_eos = 1;
    gp.n_predict = 40;
    static struct gen_run base, r;
    run_generator(m, tok, 1, 96, &gp, &proto, &base);

    /* A stop string cut from the middle of each reply (4 to 9 bytes, so
     * that most span tokens): the reply is the text before its first
     * place, with 1 and 3 sequences. */
    static char stops[N_CONV][16];
    int n_cut = 0;
    for (int i = 0; i < N_CONV; i++) {
        if (base.len[i] < 24) continue;
        const size_t a = base.len[i] / 3 + (size_t)i, len = 4 + (size_t)i % 6;
        memcpy(stops[i], base.text[i] + a, len);
        stops[i][len] = 0;
        const char *one[1] = {stops[i]};
        qwen_gen_params sp = gp;
        sp.stop = one;
        sp.n_stop = 1;
        const char *at = find(base.text[i], base.len[i], stops[i], len);
        const size_t want = (size_t)(at - base.text[i]);
        for (uint32_t w = 1; w <= 3; w += 2) {
            run_generator(m, tok, w, 96, &sp, &proto, &r);
            CHECK(r.r[i].stop == QWEN_STOP_STRING && r.len[i] == want &&
                      memcmp(r.text[i], base.text[i], want) == 0,
                  "stop '%s', %u sequences: %s, '%.*s', want '%.*s'", stops[i], w,
                  qwen_stop_name(r.r[i].stop), (int)r.len[i], r.text[i], (int)want, base.text[i]);
            CHECK(r.r[i].n_gen <= base.r[i].n_gen, "stop: fewer tokens");
        }
        n_cut++;
    }
    CHECK(n_cut >= 3, "only %d replies long enough to cut", n_cut);
    /* Several stop strings: the first place of any; one absent changes
     * nothing. */
    {
        const char *two[3] = {"\x01\x02" "absent", stops[1][0] ? stops[1] : "zz", NULL};
        size_t n_two = 2;
        if (n_cut && base.len[1] > 12) {
            static char early[8];
            memcpy(early, base.text[1] + 6, 3);
            early[3] = 0;
            two[2] = early;
            n_two = 3;
        }
        qwen_gen_params sp = gp;
        sp.stop = two;
        sp.n_stop = n_two;
        run_generator(m, tok, 2, 96, &sp, &proto, &r);
        for (int i = 0; i < N_CONV; i++) {
            size_t want = base.len[i];
            for (size_t k = 0; k < n_two; k++) {
                const char *at = find(base.text[i], base.len[i], two[k], strlen(two[k]));
                if (at && (size_t)(at - base.text[i]) < want) want = (size_t)(at - base.text[i]);
            }
            CHECK(r.len[i] == want && memcmp(r.text[i], base.text[i], want) == 0 &&
                      (want == base.len[i]) == (r.r[i].stop != QWEN_STOP_STRING),
                  "%zu stop strings, conversation %d: %zu bytes, want %zu (%s)", n_two, i, r.len[i],
                  want, qwen_stop_name(r.r[i].stop));
        }
        const char *bad[1] = {""};
        sp.stop = bad;
        sp.n_stop = 1;
        qwen_params p = qwen_params_defaults();
        p.n_ctx = 64;
        qwen_params_fit(&p, &m->config);
        qwen_context *ctx;
        REQUIRE(qwen_context_new(&ctx, m, &p, &err) == GGUF_OK, "%s", err.message);
        qwen_generator *gen = NULL;
        CHECK(qwen_generator_new(&gen, ctx, tok, &sp, &err) == GGUF_E_INVALID &&
                  strstr(err.message, "stop string 1 is empty"), "an empty stop string: %s", err.message);
        sp = gp;
        sp.n_logprobs = QWEN_LOGPROBS_MAX + 1;
        CHECK(qwen_generator_new(&gen, ctx, tok, &sp, &err) == GGUF_E_INVALID, "too many logprobs");
        qwen_context_free(ctx);
    }

    /* Log-probabilities: greedy picks the most likely, whose value is the
     * log-softmax of the prompt's logits (computed here in double); at
     * temperature 1.5, of the logits over 1.5. */
    static const float temps[] = {0.0f, 1.5f};
    for (size_t ti = 0; ti < 2; ti++) {
        qwen_gen_params lp = gp;
        lp.sampler.temp = temps[ti];
        lp.sampler.seed = 5;
        lp.n_logprobs = 5;
        lp.n_predict = 6;
        run_generator(m, tok, 2, 96, &lp, &proto, &r);
        CHECK(r.top_ok, "temp %.1f: every top list sorted, 5 long, below 0", temps[ti]);
        for (int i = 0; i < N_CONV; i++) {
            CHECK(r.n_tok[i] == (lens[i] ? 6u : 0u), "conversation %d: %zu tokens reported", i, r.n_tok[i]);
            if (temps[ti] == 0)
                for (size_t k = 0; k < r.n_tok[i]; k++)
                    CHECK(r.tok_id[i][k] == r.top0_id[i][k] && r.tok_lp[i][k] == r.top0_lp[i][k],
                          "greedy: token %zu of %d is the most likely", k, i);
        }
        qwen_params p = qwen_params_defaults();
        p.n_ctx = 96;
        qwen_params_fit(&p, &m->config);
        qwen_context *ctx;
        REQUIRE(qwen_context_new(&ctx, m, &p, &err) == GGUF_OK, "%s", err.message);
        const float *logits;
        REQUIRE(qwen_prompt_logits(ctx, 0, proto.prompts[1].v, proto.prompts[1].n, &logits, &err) == GGUF_OK,
                "%s", err.message);
        /* over the logits the sampler saw: the end tokens out (ignore_eos) */
        const double t = temps[ti] > 0 ? temps[ti] : 1.0;
        double mx = -INFINITY, sum = 0;
        for (uint32_t v = 0; v < nv; v++) if (logits[v] > mx) mx = logits[v];
        for (uint32_t v = 0; v < nv; v++)
            if (!is_end_id(tok, (int32_t)v)) sum += exp((logits[v] - mx) / t);
        const int32_t id = r.tok_id[1][0];
        const double want = (logits[id] - mx) / t - log(sum);
        CHECK(fabs(want - r.tok_lp[1][0]) < 1e-4, "temp %.1f: logprob %.6f, want %.6f", temps[ti],
              r.tok_lp[1][0], want);
        qwen_context_free(ctx);
    }

    /* The context shift: 41 positions, a prompt of 37, keep 4.  The
     * reply goes on to -n; the token after the first shift is the greedy
     * choice after the kept 4, the latest 19 and the token chosen, fed
     * afresh. */
    {
        qwen_gen_params cs = gp;
        cs.print_ids = 1;
        cs.context_shift = 1;
        cs.n_keep = 4;
        cs.n_predict = 30;
        run_generator(m, tok, 2, 41, &cs, &proto, &r);
        CHECK(r.r[1].stop == QWEN_STOP_LENGTH && r.r[1].n_gen == 30 && r.r[1].n_shift >= 1,
              "shifted: %s after %" PRIu64 " tokens, %" PRIu64 " shifts", qwen_stop_name(r.r[1].stop),
              r.r[1].n_gen, r.r[1].n_shift);
        /* the ids it printed */
        int32_t ids[64];
        size_t n = 0;
        for (const char *p = r.text[1], *e = r.text[1] + r.len[1]; p < e && n < 64;) {
            char *end;
            ids[n++] = (int32_t)strtol(p, &end, 10);
            p = end;
        }
        REQUIRE(n == 30, "30 ids printed, %zu", n);
        /* positions: 37 prompt + 4 fed; the 5th chosen does not fit */
        int32_t seq[64];
        size_t k = 0;
        for (size_t j = 0; j < 4; j++) seq[k++] = proto.prompts[1].v[j];
        int32_t all[41];
        for (size_t j = 0; j < 37; j++) all[j] = proto.prompts[1].v[j];
        for (size_t j = 0; j < 4; j++) all[37 + j] = ids[j];
        const size_t drop = (41 - 4) / 2;
        for (size_t j = 4 + drop; j < 41; j++) seq[k++] = all[j];
        seq[k++] = ids[4];
        qwen_params p = qwen_params_defaults();
        p.n_ctx = 41;
        qwen_params_fit(&p, &m->config);
        qwen_context *ctx;
        REQUIRE(qwen_context_new(&ctx, m, &p, &err) == GGUF_OK, "%s", err.message);
        const float *logits;
        REQUIRE(qwen_prompt_logits(ctx, 0, seq, k, &logits, &err) == GGUF_OK, "%s", err.message);
        int32_t best = -1;
        for (uint32_t v = 0; v < nv; v++) {
            if (is_end_id(tok, (int32_t)v)) continue;
            if (best < 0 || logits[v] > logits[best]) best = (int32_t)v;
        }
        CHECK(ids[5] == best, "after the shift: %d, the kept tokens fed afresh give %d", ids[5], best);
        qwen_context_free(ctx);
        /* keep the whole prompt of 37: (41 - 37) / 2 = 2 can go */
        cs.n_keep = -1;
        run_generator(m, tok, 1, 41, &cs, &proto, &r);
        CHECK(r.r[1].stop == QWEN_STOP_LENGTH && r.r[1].n_shift >= 1, "keep the prompt: %s, %" PRIu64
              " shifts", qwen_stop_name(r.r[1].stop), r.r[1].n_shift);
        /* keep more than fits: nothing to drop, the reply ends */
        cs.n_keep = 41;
        run_generator(m, tok, 1, 41, &cs, &proto, &r);
        CHECK(r.r[1].stop == QWEN_STOP_CONTEXT && r.r[1].n_shift == 0, "keep all: %s",
              qwen_stop_name(r.r[1].stop));
    }
    for (int i = 0; i < N_CONV; i++) qwen_ids_free(&proto.prompts[i]);

    /* The prefix: prompts that share their first 24 tokens (but the
     * fourth, empty, and the sixth, 5 of them) give the same replies with
     * the shared keys and values copied as computed, with 1 and 3
     * sequences; the copied tokens are counted. */
    static const uint32_t tails[N_CONV] = {6, 13, 1, 0, 9, 0, 2};
    for (int i = 0; i < N_CONV; i++) {
        const uint32_t head = i == 3 ? 0 : i == 5 ? 5 : 24;
        for (uint32_t j = 0; j < head + tails[i]; j++)
            REQUIRE(qwen_ids_push(&proto.prompts[i], j < head ? token_at(9, j, nv)
                                                               : token_at((uint32_t)i, j, nv)) == 0,
                    "out of memory");
    }
    {
        qwen_gen_params rp = gp;
        rp.sampler.temp = 0.9f;
        rp.sampler.seed = 21;
        rp.n_predict = 10;
        static struct gen_run plain, reused;
        run_generator(m, tok, 1, 96, &rp, &proto, &plain);
        rp.reuse_prefix = 1;
        for (uint32_t w = 1; w <= 3; w += 2) {
            run_generator(m, tok, w, 96, &rp, &proto, &reused);
            uint64_t cached = 0;
            for (int i = 0; i < N_CONV; i++) {
                CHECK(reused.len[i] == plain.len[i] && memcmp(reused.text[i], plain.text[i], plain.len[i]) == 0,
                      "reused prefix, %u sequences: conversation %d differs", w, i);
                cached += reused.r[i].n_cached;
            }
            /* conversation 0 computes 30; with one sequence 1, 2, 5 and 6
             * reuse 24, 24, 4 (all of its 5 but the last), 24 */
            if (w == 1)
                CHECK(reused.r[1].n_cached == 24 && reused.r[2].n_cached == 24 &&
                          reused.r[5].n_cached == 4 && reused.r[6].n_cached == 24 && reused.r[0].n_cached == 0,
                      "cached %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64, reused.r[1].n_cached,
                      reused.r[2].n_cached, reused.r[5].n_cached, reused.r[6].n_cached);
            CHECK(cached > 0, "%u sequences: nothing reused", w);
        }
        /* the prefix out of one generator and into another */
        qwen_params p = qwen_params_defaults();
        p.n_ctx = 96;
        qwen_params_fit(&p, &m->config);
        qwen_context *ctx;
        REQUIRE(qwen_context_new(&ctx, m, &p, &err) == GGUF_OK, "%s", err.message);
        qwen_generator *g1, *g2;
        REQUIRE(qwen_generator_new(&g1, ctx, tok, &rp, &err) == GGUF_OK, "%s", err.message);
        static struct gen_run one;
        memset(&one, 0, sizeof one);
        one.prompts[0] = proto.prompts[0];
        one.cancel_after = -1;
        for (int i = 1; i < N_CONV; i++) one.prompts[i] = proto.prompts[3]; /* empty */
        qwen_gen_io io = {g_next, g_text, g_done, g_cancel, &one, NULL};
        CHECK(qwen_generate(g1, &io, &err) == GGUF_OK, "%s", err.message);
        const int32_t *ids;
        const void *state;
        int changed;
        size_t n = qwen_generator_prefix(g1, &ids, &state, &changed);
        CHECK(n == 30 && changed && memcmp(ids, proto.prompts[0].v, 30 * sizeof *ids) == 0,
              "the prefix: %zu ids, changed %d", n, changed);
        REQUIRE(qwen_generator_new(&g2, ctx, tok, &rp, &err) == GGUF_OK, "%s", err.message);
        CHECK(qwen_generator_set_prefix(g2, ids, n, state, &err) == GGUF_OK, "%s", err.message);
        qwen_generator_free(g1);
        static struct gen_run two;
        memset(&two, 0, sizeof two);
        two.cancel_after = -1;
        for (int i = 0; i < N_CONV; i++) two.prompts[i] = proto.prompts[i];
        io.user = &two;
        CHECK(qwen_generate(g2, &io, &err) == GGUF_OK, "%s", err.message);
        CHECK(two.r[0].n_cached == 29 && two.len[0] == plain.len[0] &&
                  memcmp(two.text[0], plain.text[0], plain.len[0]) == 0,
              "a prefix set from another generator: %" PRIu64 " cached, the same reply",
              two.r[0].n_cached);
        qwen_generator_prefix(g2, NULL, NULL, &changed);
        CHECK(changed, "a new prompt changes the prefix");
        qwen_generator_free(g2);
        qwen_context_free(ctx);
    }
    for (int i = 0; i < N_CONV; i++) qwen_ids_free(&proto.prompts[i]);

    /* A chat: the second turn's prompt is the first's, its reply's ids and
     * more.  In one sequence, the turn computes only what is new (its
     * cached tokens: the first prompt and the reply's tokens fed, all but
     * the last chosen); its reply is the one the whole prompt gets in a
     * fresh context. */
    {
        qwen_gen_params cp = gp;
        cp.print_ids = 1;
        cp.n_predict = 7;
        static struct gen_run turns, fresh;
        memset(&proto, 0, sizeof proto);
        proto.cancel_after = -1;
        for (uint32_t j = 0; j < 12; j++) REQUIRE(qwen_ids_push(&proto.prompts[0], token_at(3, j, nv)) == 0, "oom");
        run_generator(m, tok, 1, 96, &cp, &proto, &turns);
        int32_t ids[16];
        size_t n = 0;
        for (const char *p = turns.text[0], *e = p + turns.len[0]; p < e && n < 16;) {
            char *end;
            ids[n++] = (int32_t)strtol(p, &end, 10);
            p = end;
        }
        REQUIRE(n == 7, "7 reply ids, %zu", n);
        for (int i = 1; i < N_CONV; i++) {
            qwen_ids_free(&proto.prompts[i]);
            for (size_t j = 0; j < proto.prompts[0].n; j++) qwen_ids_push(&proto.prompts[i], proto.prompts[0].v[j]);
            for (size_t j = 0; j < n; j++) qwen_ids_push(&proto.prompts[i], ids[j]);
            for (uint32_t j = 0; j < 5 + (uint32_t)i; j++) qwen_ids_push(&proto.prompts[i], token_at(4, j, nv));
        }
        run_generator(m, tok, 1, 96, &cp, &proto, &turns);
        CHECK(turns.r[1].n_cached == 12 + 6, "the second turn computes only what is new: %" PRIu64
              " cached of %" PRIu64, turns.r[1].n_cached, turns.r[1].n_prompt);
        static struct gen_run single;
        memset(&single, 0, sizeof single);
        single.cancel_after = -1;
        single.prompts[0] = proto.prompts[1];
        const qwen_ids none = QWEN_IDS_INIT;
        for (int i = 1; i < N_CONV; i++) single.prompts[i] = none;
        run_generator(m, tok, 1, 96, &cp, &single, &fresh);
        CHECK(fresh.r[0].n_cached == 0 && fresh.len[0] == turns.len[1] &&
                  memcmp(fresh.text[0], turns.text[1], turns.len[1]) == 0,
              "the second turn's reply as computed whole: '%.*s', '%.*s'", (int)turns.len[1],
              turns.text[1], (int)fresh.len[0], fresh.text[0]);
        for (int i = 0; i < N_CONV; i++) qwen_ids_free(&proto.prompts[i]);
    }
    qwen_tokenizer_free(tok);
    qwen_model_close(m);
}

int main(void)
{
    tu_synth_init("test-context");
    check_sequences("tiny-q8_0", "--size tiny --type q8_0");
    check_sequences("small-q4_k_m", "--size small --type q4_k_m");
    check_sequences("tiny-f16", "--size tiny --type f16");
    check_refusals();
    check_no_alloc();
    check_generate();
    check_generate_more();
    tu_finish();
}
