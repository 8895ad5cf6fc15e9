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
    out->cancel_after = proto->cancel_after;
    qwen_params p = qwen_params_defaults();
    p.n_ctx = n_ctx;
    p.n_seq = n_seq;
    p.n_batch = 16; /* the long prompts take several steps */
    qwen_context *ctx;
    REQUIRE(qwen_context_new(&ctx, m, &p, &err) == GGUF_OK, "%s", err.message);
    qwen_generator *gen;
    REQUIRE(qwen_generator_new(&gen, ctx, tok, gp, &err) == GGUF_OK, "%s", err.message);
    qwen_gen_io io = {g_next, g_text, g_done, g_cancel, out};
    int st = qwen_generate(gen, &io, &err);
    CHECK(st == GGUF_OK, "qwen_generate with %u sequences: %s", n_seq, err.message);
    qwen_gen_totals t = qwen_generator_totals(gen);
    uint64_t n_gen = 0, n_prompt = 0;
    for (int i = 0; i < N_CONV; i++) {
        n_gen += out->r[i].n_gen;
        n_prompt += out->done[i] ? out->r[i].n_prompt : 0;
    }
    CHECK(t.gen_tokens == n_gen, "totals: %" PRIu64 " generated, the replies %" PRIu64, t.gen_tokens, n_gen);
    if (proto->cancel_after < 0)
        CHECK(t.prompt_tokens == n_prompt, "totals: %" PRIu64 " prompt tokens, the replies %" PRIu64,
              t.prompt_tokens, n_prompt);
    qwen_generator_free(gen);
    qwen_context_free(ctx);
}

static void check_generate(void)
{
    qwen_model *m = open_model("small-q8_0", "--size small --type q8_0");
    const uint32_t nv = m->config.n_vocab;
    gguf_error err;
    qwen_tokenizer *tok;
    REQUIRE(qwen_tokenizer_load(&tok, m->file, &err) == GGUF_OK, "%s", err.message);
    struct gen_run proto;
    memset(&proto, 0, sizeof proto);
    proto.cancel_after = -1;
    /* prompts of 1 .. 37 tokens; the fourth empty */
    static const uint32_t lens[N_CONV] = {5, 37, 1, 0, 20, 9, 2};
    for (int i = 0; i < N_CONV; i++)
        for (uint32_t j = 0; j < lens[i]; j++)
            REQUIRE(qwen_ids_push(&proto.prompts[i], token_at((uint32_t)i, j, nv)) == 0, "out of memory");

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
        qwen_gen_io io = {g_next, g_text, g_done, g_cancel, &r};
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

int main(void)
{
    tu_synth_init("test-context");
    check_sequences("tiny-q8_0", "--size tiny --type q8_0");
    check_sequences("small-q4_k_m", "--size small --type q4_k_m");
    check_sequences("tiny-f16", "--size tiny --type f16");
    check_refusals();
    check_no_alloc();
    check_generate();
    tu_finish();
}
