/*
 * test-forward.c -- the CPU forward pass against the float64 reference
 * (tests/ref-forward.c) on synthetic models of each weight type, qwen2 and
 * qwen3 alike, and the model loader's verdicts on broken models of both.
 *
 * Models are made at test time by tests/gguf-synth (found through
 * $top_builddir) into a temporary directory; broken variants are written
 * from them with libgguf's writer.
 *
 * Accuracy: a prefill of 8 tokens, then 4 single-token steps; after each,
 * the logits must agree with the reference's for the same prefix within a
 * bound per type, relative to the largest reference logit:
 * max |ours - ref| / max |ref|.  The reference rounds keys and values to
 * F16 as the KV cache stores them, and dequantizes the same weights, so
 * the bounds measure only the float arithmetic of the forward pass.
 */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "infer/forward.h"
#include "infer/model.h"
#include "quant/quant.h"
#include "tests/ref-forward.h"
#include "tests/testutil.h"
#include "tests/alloccount.h"
#include "tests/synthdir.h"

#define N_PREFILL 8
#define N_DECODE 4
#define N_TOKENS (N_PREFILL + N_DECODE)

static int32_t token_at(uint32_t i, uint32_t n_vocab)
{
    return (int32_t)((i * 389u + 17u) % n_vocab);
}

/* max |a - b| / max |b| over n values. */
static double rel_error(const float *a, const double *b, uint32_t n)
{
    double num = 0.0, den = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= num)) num = d; /* NaN propagates */
        if (fabs(b[i]) > den) den = fabs(b[i]);
    }
    return den > 0 ? num / den : num;
}

/* sqrt(sum (a - b)^2 / sum b^2) over n values. */
static double rms_error(const float *a, const double *b, uint32_t n)
{
    double num = 0.0, den = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        num += d * d;
        den += b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* ------------------------------------------------------------------------ */
/* Accuracy against the reference                                           */

struct acc_case {
    const char *arch, *size, *type;
    double bound;       /* plain mode: on max |ours - ref| / max |ref| */
    double qbound;      /* quantized activations: the same */
    int untied;         /* 1: with an output.weight of its own */
};

/* Plain mode (float products of the dequantized rows): bounds measured
 * with a margin of about 4x.  Both sides dequantize the same weights, so
 * the type matters little here.  The error is float rounding (about 2e-7
 * .. 1e-6 max relative) plus, now and then, a key or value element whose
 * float and double results round to neighbouring F16 values (up to 8e-5
 * measured, on the width-256 models).  Against a reference that keeps K/V
 * in double, the F16 cache costs up to 2.7e-4 (PLAIN_BOUND).
 *
 * Quantized activations (the default path): each product's input is
 * rounded to 8 bits per block, a relative error of up to 1/254 per
 * element of a block's largest, which the random weights of these models
 * carry through every layer: 0.5 % to 2 % max relative error measured
 * on the logits (RMS about the same), bounds 2.5x that or more.  F32, F16 and
 * BF16 weights have no quantized products: plain bounds apply. */
#define PLAIN_BOUND 1e-3
/* qwen3, on its own tiny and small shapes (heads of 32, Q 128 wide in a
 * model 64 wide; heads of 128, Q 512 wide in 256, every row a multiple of
 * 256 for the K-quants): the same bounds but the plain one, 5e-4 rather
 * than 3e-4.  Its Q and K, normed per head to unit scale before RoPE, are
 * larger than qwen2's, and its heads wider, so attention scores are larger
 * and a key element whose float and double results round to neighbouring
 * F16 values costs more: up to 1.3e-4 measured (small, over eight seeds),
 * against 5e-5 for qwen2; 5e-4 keeps the margin of about 4x.  Against
 * float64 K/V: up to 4.4e-4 (3.6e-4 for qwen2), under PLAIN_BOUND.
 * Quantized activations: up to 2.5 % measured (2 % for qwen2), under the
 * same 5 %.
 * A norm applied after RoPE instead of before costs 2 %. */
#define QWEN3_BOUND 5e-4
static const struct acc_case acc_cases[] = {
    {"qwen2", "tiny", "f32", 3e-4, 3e-4, 0},     {"qwen2", "tiny", "f16", 3e-4, 3e-4, 0},
    {"qwen2", "tiny", "bf16", 3e-4, 3e-4, 0},    {"qwen2", "tiny", "q8_0", 3e-4, 0.05, 0},
    {"qwen2", "tiny", "q4_k_m", 3e-4, 0.05, 0}, /* Q5_0 and Q8_0 fallbacks */
    {"qwen2", "tiny", "q5_k", 3e-4, 0.05, 0},    /* Q5_1 fallback */
    {"qwen2", "tiny", "q4_0", 3e-4, 0.05, 0},    {"qwen2", "tiny", "q4_1", 3e-4, 0.05, 0},
    {"qwen2", "small", "q4_k_m", 3e-4, 0.05, 0}, {"qwen2", "small", "q4_k", 3e-4, 0.05, 0},
    {"qwen2", "small", "q5_k_m", 3e-4, 0.05, 0}, {"qwen2", "small", "q6_k", 3e-4, 0.05, 0},
    {"qwen2", "small", "q5_k", 3e-4, 0.05, 0},   {"qwen2", "small", "q8_0", 3e-4, 0.05, 0},
    {"qwen2", "small", "q2_k", 3e-4, 0.05, 0},   {"qwen2", "small", "q3_k", 3e-4, 0.05, 0},
    {"qwen3", "tiny", "f32", QWEN3_BOUND, QWEN3_BOUND, 0},
    {"qwen3", "tiny", "f16", QWEN3_BOUND, QWEN3_BOUND, 0},
    {"qwen3", "tiny", "bf16", QWEN3_BOUND, QWEN3_BOUND, 0},
    {"qwen3", "tiny", "q8_0", QWEN3_BOUND, 0.05, 0},
    {"qwen3", "tiny", "q4_k_m", QWEN3_BOUND, 0.05, 0}, /* Q5_0 and Q8_0 fallbacks */
    {"qwen3", "tiny", "q5_k", QWEN3_BOUND, 0.05, 0},   /* Q5_1 fallback */
    {"qwen3", "tiny", "q4_0", QWEN3_BOUND, 0.05, 0},
    {"qwen3", "tiny", "q4_1", QWEN3_BOUND, 0.05, 0},
    {"qwen3", "small", "q4_k_m", QWEN3_BOUND, 0.05, 0},
    {"qwen3", "small", "q4_k", QWEN3_BOUND, 0.05, 0},
    {"qwen3", "small", "q5_k_m", QWEN3_BOUND, 0.05, 0},
    {"qwen3", "small", "q6_k", QWEN3_BOUND, 0.05, 0},
    {"qwen3", "small", "q5_k", QWEN3_BOUND, 0.05, 0},
    {"qwen3", "small", "q8_0", QWEN3_BOUND, 0.05, 0},
    {"qwen3", "small", "q2_k", QWEN3_BOUND, 0.05, 0},
    {"qwen3", "small", "q3_k", QWEN3_BOUND, 0.05, 0},
    /* An output matrix of its own (Q6_K; token_embd Q4_K). */
    {"qwen3", "small", "q4_k_m", QWEN3_BOUND, 0.05, 1},
};

/* The reference logits of the steps of check_accuracy_mode(): for step i
 * (0: the prefill) and K/V in F16 (f16 = 1) or double (0), at
 * want + ((i * 2 + f16) * n_vocab).  Computed once for both modes. */
static double *reference_logits(const ref_model *ref, const int32_t *tok, uint32_t nv)
{
    double *want = malloc(sizeof *want * nv * 2 * (N_DECODE + 1));
    REQUIRE(want != NULL, "out of memory");
    for (uint32_t step = 0; step <= N_DECODE; step++)
        for (int f16 = 0; f16 < 2; f16++)
            ref_forward(ref, tok, N_PREFILL + step, f16, want + ((size_t)step * 2 + f16) * nv);
    return want;
}

/* Prefill, then single steps, in plain mode or not, against the
 * reference logits (reference_logits()) after each step. */
static void check_accuracy_mode(const struct acc_case *ac, qwen_model *m, const double *ref_logits,
                                int plain)
{
    gguf_error err;
    const uint32_t nv = m->config.n_vocab;
    const double bound = plain ? ac->bound : ac->qbound;
    const char *mode = plain ? "plain" : "quantized";
    qwen_state *s;
    REQUIRE(qwen_state_new(&s, m, 64, N_PREFILL, &err) == GGUF_OK, "%s", err.message);
    qwen_state_set_plain(s, plain);
    int32_t tok[N_TOKENS];
    for (uint32_t i = 0; i < N_TOKENS; i++) tok[i] = token_at(i, nv);

    double worst = 0.0, worst_rms = 0.0, worst_plain = 0.0;
    for (uint32_t step = 0; step <= N_DECODE; step++) {
        uint32_t upto = N_PREFILL + step; /* prefix length after this step */
        int st;
        if (step == 0) st = qwen_forward(s, tok, N_PREFILL, &err);
        else st = qwen_forward(s, tok + upto - 1, 1, &err);
        REQUIRE(st == GGUF_OK, "%s", err.message);
        CHECK(qwen_state_pos(s) == upto, "position %u after %u tokens", qwen_state_pos(s), upto);
        const float *got = qwen_state_logits(s);
        const double *want = ref_logits + ((size_t)step * 2 + 1) * nv;
        double e = rel_error(got, want, nv), r = rms_error(got, want, nv);
        if (!(e <= worst)) worst = e;
        if (!(r <= worst_rms)) worst_rms = r;
        CHECK(e <= bound, "%s %s %s%s %s, %u tokens: relative error %.3g over the bound %.3g",
              ac->arch, ac->size, ac->type, ac->untied ? " untied" : "", mode, upto, e, bound);
        /* For the record: against a reference without F16 rounding. */
        e = rel_error(got, ref_logits + (size_t)step * 2 * nv, nv);
        if (!(e <= worst_plain)) worst_plain = e;
        CHECK(e <= (plain ? PLAIN_BOUND : bound), "%s %s %s%s %s, %u tokens: relative error %.3g "
              "against float64 K/V", ac->arch, ac->size, ac->type, ac->untied ? " untied" : "",
              mode, upto, e);
    }
    fprintf(stderr, "%s %-6s %-7s%s %-9s relative error: max %.2g (bound %.0e), RMS %.2g; "
            "against float64 K/V: max %.2g\n", ac->arch, ac->size, ac->type,
            ac->untied ? " untied" : "", mode, worst, bound, worst_rms, worst_plain);
    qwen_state_free(s);
}

static void check_accuracy(const struct acc_case *ac)
{
    char path[512], msg[512];
    tu_synth_shape(path, sizeof path, ac->arch, ac->size, ac->type, ac->untied);
    gguf_error err;
    qwen_model *m;
    int st = qwen_model_open(&m, path, &err);
    REQUIRE(st == GGUF_OK, "%s", err.message);
    /* The model is what the case says: the architecture, Q's width, and
     * an output matrix of its own or not. */
    const qwen_config *c = &m->config;
    CHECK(strcmp(c->arch->name, ac->arch) == 0, "%s: architecture %s", path, c->arch->name);
    CHECK(c->n_q == c->n_head * c->head_dim && (strcmp(ac->arch, "qwen3") != 0 || c->n_q != c->n_embd),
          "%s: Q %u wide, model %u, %u heads of %u", path, c->n_q, c->n_embd, c->n_head, c->head_dim);
    CHECK(m->weights.tied == !ac->untied, "%s: tied %d", path, m->weights.tied);
    ref_model *ref = ref_model_load(path, msg, sizeof msg);
    REQUIRE(ref != NULL, "%s", msg);
    REQUIRE(ref_model_vocab(ref) == m->config.n_vocab, "vocabulary sizes differ");
    int32_t tok[N_TOKENS];
    for (uint32_t i = 0; i < N_TOKENS; i++) tok[i] = token_at(i, m->config.n_vocab);
    double *want = reference_logits(ref, tok, m->config.n_vocab);
    check_accuracy_mode(ac, m, want, 1);
    check_accuracy_mode(ac, m, want, 0);
    free(want);
    ref_model_free(ref);
    qwen_model_close(m);
}

/* ------------------------------------------------------------------------ */
/* The decode loop allocates nothing                                         */

static void check_no_alloc(void)
{
    char path[512];
    tu_synth_shape(path, sizeof path, "qwen2", "small", "q4_k_m", 0);
    gguf_error err;
    qwen_model *m;
    REQUIRE(qwen_model_open(&m, path, &err) == GGUF_OK, "%s", err.message);
    qwen_state *s;
    REQUIRE(qwen_state_new(&s, m, 64, N_PREFILL, &err) == GGUF_OK, "%s", err.message);
    int32_t tok[N_TOKENS];
    for (uint32_t i = 0; i < N_TOKENS; i++) tok[i] = token_at(i, m->config.n_vocab);
    REQUIRE(qwen_forward(s, tok, N_PREFILL, &err) == GGUF_OK, "%s", err.message);
    tu_alloc_count_begin();
    for (uint32_t i = N_PREFILL; i < N_TOKENS; i++) {
        if (qwen_forward(s, tok + i, 1, &err) != GGUF_OK) break;
    }
    const long n_allocs = tu_alloc_count_end();
    CHECK(qwen_state_pos(s) == N_TOKENS, "decode stopped at %u: %s", qwen_state_pos(s), err.message);
    CHECK(n_allocs == 0, "%d decode steps allocated %ld times", N_DECODE, n_allocs);
    qwen_state_free(s);
    qwen_model_close(m);
}

/* ------------------------------------------------------------------------ */
/* One code path: batch sizes and single steps give the same bits           */

/* A batch as wide as a prompt's (64 columns and more: the CPU backend's
 * products on packed inputs, in fixed claims; the steps done token by
 * token shared among three threads) has the bits of single tokens. */
#define N_WIDE 70

static void check_wide(const char *arch, const char *size, const char *type)
{
    char path[512];
    tu_synth_shape(path, sizeof path, arch, size, type, 0);
    gguf_error err;
    qwen_model *m;
    REQUIRE(qwen_model_open(&m, path, &err) == GGUF_OK, "%s", err.message);
    const uint32_t nv = m->config.n_vocab;
    int32_t tok[N_WIDE];
    for (uint32_t i = 0; i < N_WIDE; i++) tok[i] = token_at(i, nv);
    qwen_state *whole, *single;
    REQUIRE(qwen_state_new(&whole, m, 128, N_WIDE, &err) == GGUF_OK, "%s", err.message);
    REQUIRE(qwen_state_new(&single, m, 128, 1, &err) == GGUF_OK, "%s", err.message);
    /* three threads, whatever the machine has */
    REQUIRE(qwen_state_set_threads(whole, 3, &err) == GGUF_OK, "%s", err.message);
    REQUIRE(qwen_forward(whole, tok, N_WIDE, &err) == GGUF_OK, "%s", err.message);
    for (uint32_t i = 0; i < N_WIDE; i++)
        REQUIRE(qwen_forward(single, tok + i, 1, &err) == GGUF_OK, "%s", err.message);
    CHECK(memcmp(qwen_state_logits(whole), qwen_state_logits(single), nv * sizeof(float)) == 0,
          "%s %s %s: one batch of %d differs from single tokens", arch, size, type, N_WIDE);
    qwen_state_free(whole);
    qwen_state_free(single);
    qwen_model_close(m);
}

static void check_batching(const char *arch)
{
    char path[512];
    tu_synth_shape(path, sizeof path, arch, "tiny", "q8_0", 0);
    gguf_error err;
    qwen_model *m;
    REQUIRE(qwen_model_open(&m, path, &err) == GGUF_OK, "%s", err.message);
    uint32_t nv = m->config.n_vocab;
    int32_t tok[N_TOKENS];
    for (uint32_t i = 0; i < N_TOKENS; i++) tok[i] = token_at(i, nv);

    qwen_state *whole, *chunked, *single;
    REQUIRE(qwen_state_new(&whole, m, 32, N_TOKENS, &err) == GGUF_OK, "%s", err.message);
    REQUIRE(qwen_state_new(&chunked, m, 32, 5, &err) == GGUF_OK, "%s", err.message);
    REQUIRE(qwen_state_new(&single, m, 32, 1, &err) == GGUF_OK, "%s", err.message);
    REQUIRE(qwen_forward(whole, tok, N_TOKENS, &err) == GGUF_OK, "%s", err.message);
    REQUIRE(qwen_forward(chunked, tok, N_TOKENS, &err) == GGUF_OK, "%s", err.message);
    for (uint32_t i = 0; i < N_TOKENS; i++)
        REQUIRE(qwen_forward(single, tok + i, 1, &err) == GGUF_OK, "%s", err.message);
    CHECK(memcmp(qwen_state_logits(whole), qwen_state_logits(chunked), nv * sizeof(float)) == 0,
          "%s: batches of 5 differ from one batch of %d", arch, N_TOKENS);
    CHECK(memcmp(qwen_state_logits(whole), qwen_state_logits(single), nv * sizeof(float)) == 0,
          "%s: single tokens differ from one batch of %d", arch, N_TOKENS);

    /* Threads share rows, never sums: any count gives the same bits. */
    qwen_state *one, *three;
    REQUIRE(qwen_state_new(&one, m, 32, N_TOKENS, &err) == GGUF_OK, "%s", err.message);
    REQUIRE(qwen_state_new(&three, m, 32, N_TOKENS, &err) == GGUF_OK, "%s", err.message);
    REQUIRE(qwen_state_set_threads(one, 1, &err) == GGUF_OK, "%s", err.message);
    REQUIRE(qwen_state_set_threads(three, 3, &err) == GGUF_OK, "%s", err.message);
    CHECK(qwen_state_threads(one) == 1, "1 thread: %d", qwen_state_threads(one));
    CHECK(qwen_state_set_threads(one, 0, &err) == GGUF_E_INVALID, "0 threads accepted");
    CHECK(qwen_state_set_threads(one, QWEN_MAX_THREADS + 1, &err) == GGUF_E_INVALID,
          "too many threads accepted");
    CHECK(qwen_state_threads(one) == 1, "a refused count changed the threads");
    REQUIRE(qwen_forward(one, tok, N_TOKENS, &err) == GGUF_OK, "%s", err.message);
    REQUIRE(qwen_forward(three, tok, N_TOKENS - 1, &err) == GGUF_OK, "%s", err.message);
    REQUIRE(qwen_forward(three, tok + N_TOKENS - 1, 1, &err) == GGUF_OK, "%s", err.message);
    CHECK(memcmp(qwen_state_logits(whole), qwen_state_logits(one), nv * sizeof(float)) == 0,
          "%s: 1 thread differs from the default", arch);
    CHECK(memcmp(qwen_state_logits(one), qwen_state_logits(three), nv * sizeof(float)) == 0,
          "%s: 3 threads differ from 1", arch);
    qwen_state_free(one);
    qwen_state_free(three);

    /* Reset starts a new sequence: the same logits again. */
    float first = qwen_state_logits(whole)[0];
    qwen_state_reset(whole);
    CHECK(qwen_state_pos(whole) == 0, "reset keeps position %u", qwen_state_pos(whole));
    REQUIRE(qwen_forward(whole, tok, N_TOKENS, &err) == GGUF_OK, "%s", err.message);
    CHECK(qwen_state_logits(whole)[0] == first, "%s: after reset: %g, before %g", arch,
          (double)qwen_state_logits(whole)[0], (double)first);

    /* Refused input leaves the state as it was. */
    int32_t bad = (int32_t)nv;
    uint32_t pos = qwen_state_pos(single);
    CHECK(qwen_forward(single, &bad, 1, &err) == GGUF_E_INVALID && strstr(err.message, "vocabulary"),
          "token %d: %s", bad, err.message);
    bad = -1;
    CHECK(qwen_forward(single, &bad, 1, &err) == GGUF_E_INVALID, "token -1 accepted");
    CHECK(qwen_forward(single, tok, 0, &err) == GGUF_E_INVALID, "0 tokens accepted");
    int32_t many[32] = {0};
    CHECK(qwen_forward(single, many, 32 - pos + 1, &err) == GGUF_E_INVALID &&
              strstr(err.message, "context"), "context overflow: %s", err.message);
    CHECK(qwen_state_pos(single) == pos, "refused input moved the position to %u",
          qwen_state_pos(single));
    CHECK(qwen_forward(single, many, 32 - pos, &err) == GGUF_OK, "filling the context: %s",
          err.message);

    qwen_state *s;
    CHECK(qwen_state_new(&s, m, m->config.n_ctx_train + 1, 1, &err) == GGUF_E_INVALID && !s,
          "context beyond the model's accepted");
    CHECK(qwen_state_new(&s, m, 16, 17, &err) == GGUF_E_INVALID && !s, "batch > context accepted");
    CHECK(qwen_state_new(&s, m, 16, 0, &err) == GGUF_E_INVALID && !s, "batch 0 accepted");

    qwen_state_free(whole);
    qwen_state_free(chunked);
    qwen_state_free(single);
    qwen_model_close(m);
}

/* ------------------------------------------------------------------------ */
/* Broken models                                                             */

/* One change to a model file. */
struct edit {
    const char *drop_key;           /* omit this KV pair */
    const char *u32_key;            /* set (or add) this key to UINT32 u32 */
    uint32_t u32;
    const char *str_key, *str;      /* set this key to a string */
    const char *f32_key;            /* set this key to FLOAT32 f32 */
    float f32;
    const char *drop_tensor;        /* omit this tensor */
    const char *tensor;             /* change this tensor's dims or type, or add it */
    uint32_t n_dims, type;
    uint64_t ne[2];
};

/* Writes the data of the tensor that edit ed changes or adds:
 * deterministic small values for F32, zero bytes otherwise. */
static void write_new_data(gguf_writer *w, const struct edit *ed)
{
    gguf_error err;
    uint64_t rows = ed->n_dims > 1 ? ed->ne[1] : 1;
    uint64_t bytes = gguf_row_bytes(ed->type, ed->ne[0]) * rows;
    unsigned char *buf = calloc(bytes ? bytes : 1, 1);
    if (!buf) HARD_ERROR("out of memory");
    if (ed->type == GGUF_T_F32) {
        uint32_t r = 12345;
        for (uint64_t k = 0; k < bytes / 4; k++) {
            r = r * 1664525u + 1013904223u;
            float v = ((float)(r >> 8) / 16777216.0f - 0.5f) * 0.04f;
            memcpy(buf + 4 * k, &v, 4);
        }
    }
    if (gguf_writer_write(w, buf, bytes, &err)) HARD_ERROR("%s", err.message);
    free(buf);
}

/* Writes src with edit ed applied to dst.  */
static void write_variant(const char *src, const char *dst, const struct edit *ed)
{
    gguf_file *f;
    gguf_error err;
    if (gguf_open(&f, src, NULL, 0, &err)) HARD_ERROR("%s", err.message);
    gguf_writer *w = gguf_writer_new();
    if (!w) HARD_ERROR("out of memory");
    int u32_done = 0;
    for (uint64_t i = 0; i < gguf_kv_count(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)kv->key.len, kv->key.ptr);
        int st;
        if (ed->drop_key && strcmp(key, ed->drop_key) == 0) continue;
        if (ed->u32_key && strcmp(key, ed->u32_key) == 0) {
            st = gguf_writer_add_u32(w, key, ed->u32, &err);
            u32_done = 1;
        } else if (ed->str_key && strcmp(key, ed->str_key) == 0) {
            st = gguf_writer_add_str(w, key, ed->str, strlen(ed->str), &err);
        } else if (ed->f32_key && strcmp(key, ed->f32_key) == 0) {
            st = gguf_writer_add_f32(w, key, ed->f32, &err);
        } else {
            st = gguf_writer_copy_kv(w, kv, &err);
        }
        if (st) HARD_ERROR("%s", err.message);
    }
    if (ed->u32_key && !u32_done && gguf_writer_add_u32(w, ed->u32_key, ed->u32, &err))
        HARD_ERROR("%s", err.message);

    int changed_found = 0;
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        if (ed->drop_tensor && strcmp(name, ed->drop_tensor) == 0) continue;
        int st;
        if (ed->tensor && strcmp(name, ed->tensor) == 0) {
            st = gguf_writer_add_tensor(w, name, ed->type, ed->n_dims, ed->ne, &err);
            changed_found = 1;
        } else {
            st = gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, &err);
        }
        if (st) HARD_ERROR("%s", err.message);
    }
    if (ed->tensor && !changed_found &&
        gguf_writer_add_tensor(w, ed->tensor, ed->type, ed->n_dims, ed->ne, &err))
        HARD_ERROR("%s", err.message);

    if (gguf_writer_open(w, dst, &err)) HARD_ERROR("%s", err.message);
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        if (ed->drop_tensor && strcmp(name, ed->drop_tensor) == 0) continue;
        if (ed->tensor && strcmp(name, ed->tensor) == 0) write_new_data(w, ed);
        else if (gguf_writer_write(w, t->data, t->size, &err)) HARD_ERROR("%s", err.message);
    }
    if (ed->tensor && !changed_found) write_new_data(w, ed); /* an added tensor comes last */
    if (gguf_writer_finish(w, &err)) HARD_ERROR("%s", err.message);
    gguf_writer_free(w);
    gguf_close(f);
}

struct bad_case {
    const char *what;
    struct edit ed;
    int status;
    const char *needle;     /* must occur in the message */
};

/* Each of the n cases: base with the case's edit must fail to load with
 * the case's status, no model, and a message that starts with the file's
 * name and holds the case's needle. */
static void check_bad_cases(const char *base, const struct bad_case *cases, size_t n)
{
    char path[600];
    for (size_t i = 0; i < n; i++) {
        const struct bad_case *bc = &cases[i];
        snprintf(path, sizeof path, "%s/bad-%zu.gguf", tu_tmpdir, i);
        write_variant(base, path, &bc->ed);
        qwen_model *m = (qwen_model *)1;
        gguf_error err;
        memset(&err, 0, sizeof err);
        int st = qwen_model_open(&m, path, &err);
        CHECK(st == bc->status, "%s: status %d (%s), expected %d; message: %s", bc->what, st,
              gguf_strerror(st), bc->status, err.message);
        CHECK(m == NULL, "%s: model returned on failure", bc->what);
        CHECK(err.status == st, "%s: err.status %d, returned %d", bc->what, err.status, st);
        CHECK(strncmp(err.message, path, strlen(path)) == 0 && strstr(err.message, bc->needle),
              "%s: message '%s' lacks the file name or '%s'", bc->what, err.message, bc->needle);
        if (st != GGUF_OK) qwen_model_close(m);
        unlink(path);
    }
}

/* qwen3's own demands, on the tiny qwen3 model (2 layers, width 64, 4
 * heads (2 KV) of 32: Q 128 wide, K and V 64; FFN 128; vocabulary 1024):
 * its per-head norms, its head width key, shapes in that width. */
static void check_broken_qwen3(void)
{
    char base[512];
    tu_synth_shape(base, sizeof base, "qwen3", "tiny", "f32", 0);
    static const struct bad_case cases[] = {
        {"qwen3: missing attn_q_norm", {.drop_tensor = "blk.1.attn_q_norm.weight"},
         GGUF_E_NOT_FOUND, "'blk.1.attn_q_norm.weight' is missing"},
        {"qwen3: missing attn_k_norm", {.drop_tensor = "blk.0.attn_k_norm.weight"},
         GGUF_E_NOT_FOUND, "'blk.0.attn_k_norm.weight' is missing"},
        {"qwen3: a Q norm over all of Q, not one head",
         {.tensor = "blk.0.attn_q_norm.weight", .type = GGUF_T_F32, .n_dims = 1, .ne = {128, 1}},
         GGUF_E_FORMAT, "'blk.0.attn_q_norm.weight' has shape (128), expected (32)"},
        {"qwen3: K norm in F16",
         {.tensor = "blk.1.attn_k_norm.weight", .type = GGUF_T_F16, .n_dims = 1, .ne = {32, 1}},
         GGUF_E_FORMAT, "'blk.1.attn_k_norm.weight' has type F16, expected F32"},
        {"qwen3: attn_q of the model's width",
         {.tensor = "blk.0.attn_q.weight", .type = GGUF_T_F32, .n_dims = 2, .ne = {64, 64}},
         GGUF_E_FORMAT, "'blk.0.attn_q.weight' has shape (64, 64), expected (64, 128)"},
        {"qwen3: attn_output from the model's width",
         {.tensor = "blk.1.attn_output.weight", .type = GGUF_T_F32, .n_dims = 2, .ne = {64, 64}},
         GGUF_E_FORMAT, "'blk.1.attn_output.weight' has shape (64, 64), expected (128, 64)"},
        /* A wrong head width (value_length absent, so it follows): Q and
         * K are then of another width than the file's. */
        {"qwen3: key_length 16, the file's heads 32 wide",
         {.drop_key = "qwen3.attention.value_length", .u32_key = "qwen3.attention.key_length",
          .u32 = 16},
         GGUF_E_FORMAT, "'blk.0.attn_q.weight' has shape (64, 128), expected (64, 64)"},
        {"qwen3: key_length unlike value_length", {.u32_key = "qwen3.attention.key_length", .u32 = 64},
         GGUF_E_UNSUPPORTED, "'qwen3.attention.value_length' is 32, unlike the key head width 64"},
        {"qwen3: odd key_length", {.u32_key = "qwen3.attention.key_length", .u32 = 33},
         GGUF_E_FORMAT, "'qwen3.attention.key_length' is 33; the head width must be even"},
        {"qwen3: key_length 0", {.u32_key = "qwen3.attention.key_length", .u32 = 0},
         GGUF_E_FORMAT, "'qwen3.attention.key_length' is 0"},
        /* Absent, the head width is width / heads = 16, as llama.cpp
         * defaults it: unlike value_length's 32. */
        {"qwen3: no key_length", {.drop_key = "qwen3.attention.key_length"}, GGUF_E_UNSUPPORTED,
         "'qwen3.attention.value_length' is 32, unlike the key head width 16"},
        /* A qwen3 file called qwen2: read by qwen2's keys, which it has not. */
        {"qwen3 file as qwen2", {.str_key = "general.architecture", .str = "qwen2"},
         GGUF_E_NOT_FOUND, "key 'qwen2.block_count' is missing"},
        {"qwen3: head count 0", {.u32_key = "qwen3.attention.head_count", .u32 = 0},
         GGUF_E_FORMAT, "'qwen3.attention.head_count' is 0"},
    };
    check_bad_cases(base, cases, sizeof cases / sizeof cases[0]);

    /* What the loader binds: the norms, no biases, Q of heads x 32. */
    gguf_error err;
    qwen_model *m;
    REQUIRE(qwen_model_open(&m, base, &err) == GGUF_OK, "%s", err.message);
    const qwen_config *c = &m->config;
    CHECK(c->head_dim == 32 && c->head_dim_v == 32 && c->n_q == 128 && c->n_kv == 64 &&
              c->n_embd == 64 && c->n_ctx_train == 40960,
          "qwen3 tiny: head %u/%u, Q %u, KV %u, width %u, context %u", c->head_dim, c->head_dim_v,
          c->n_q, c->n_kv, c->n_embd, c->n_ctx_train);
    for (uint32_t l = 0; l < c->n_layer; l++) {
        const qwen_layer *L = &m->weights.layers[l];
        CHECK(L->q_norm && L->k_norm && !L->bq && !L->bk && !L->bv,
              "qwen3 tiny layer %u: norms or biases bound wrongly", l);
        CHECK(L->wq.rows == 128 && L->wq.cols == 64 && L->wo.rows == 64 && L->wo.cols == 128,
              "qwen3 tiny layer %u: Wq %llu x %llu, Wo %llu x %llu", l,
              (unsigned long long)L->wq.rows, (unsigned long long)L->wq.cols,
              (unsigned long long)L->wo.rows, (unsigned long long)L->wo.cols);
    }
    qwen_model_close(m);
}

static void check_broken(void)
{
    char base[512], path[600];
    tu_synth_shape(base, sizeof base, "qwen2", "tiny", "f32", 0);
    /* tiny: 2 layers, width 64, 4 heads (2 KV) of 16, FFN 128, vocabulary 1024. */
    static const struct bad_case cases[] = {
        {"llama architecture", {.str_key = "general.architecture", .str = "llama"},
         GGUF_E_UNSUPPORTED, "architecture 'llama'"},
        {"no architecture", {.drop_key = "general.architecture"}, GGUF_E_NOT_FOUND,
         "general.architecture"},
        {"missing ffn_up", {.drop_tensor = "blk.1.ffn_up.weight"}, GGUF_E_NOT_FOUND,
         "'blk.1.ffn_up.weight' is missing"},
        {"missing bias", {.drop_tensor = "blk.0.attn_k.bias"}, GGUF_E_NOT_FOUND,
         "'blk.0.attn_k.bias'"},
        {"missing output_norm", {.drop_tensor = "output_norm.weight"}, GGUF_E_NOT_FOUND,
         "'output_norm.weight'"},
        {"attn_k too wide",
         {.tensor = "blk.0.attn_k.weight", .type = GGUF_T_F32, .n_dims = 2, .ne = {64, 64}},
         GGUF_E_FORMAT, "'blk.0.attn_k.weight' has shape (64, 64), expected (64, 32)"},
        {"ffn_down transposed",
         {.tensor = "blk.1.ffn_down.weight", .type = GGUF_T_F32, .n_dims = 2, .ne = {64, 128}},
         GGUF_E_FORMAT, "'blk.1.ffn_down.weight'"},
        {"norm 2-D",
         {.tensor = "blk.0.ffn_norm.weight", .type = GGUF_T_F32, .n_dims = 2, .ne = {64, 1}},
         GGUF_E_FORMAT, "'blk.0.ffn_norm.weight' has shape (64, 1), expected (64)"},
        {"norm in F16",
         {.tensor = "blk.0.attn_norm.weight", .type = GGUF_T_F16, .n_dims = 1, .ne = {64, 1}},
         GGUF_E_FORMAT, "'blk.0.attn_norm.weight' has type F16, expected F32"},
        {"matrix type not computable",
         {.tensor = "blk.0.attn_q.weight", .type = GGUF_T_IQ4_NL, .n_dims = 2, .ne = {64, 64}},
         GGUF_E_UNSUPPORTED, "'blk.0.attn_q.weight' has type IQ4_NL"},
        {"output of the wrong width",
         {.tensor = "output.weight", .type = GGUF_T_F32, .n_dims = 2, .ne = {64, 1000}},
         GGUF_E_FORMAT, "'output.weight'"},
        {"head count 0", {.u32_key = "qwen2.attention.head_count", .u32 = 0}, GGUF_E_FORMAT,
         "'qwen2.attention.head_count' is 0"},
        {"head count absurd", {.u32_key = "qwen2.attention.head_count", .u32 = 4000000000u},
         GGUF_E_FORMAT, "'qwen2.attention.head_count' is 4000000000"},
        {"width not a multiple of heads", {.u32_key = "qwen2.attention.head_count", .u32 = 5},
         GGUF_E_FORMAT, "not a multiple of the head count 5"},
        {"odd head size", {.u32_key = "qwen2.attention.head_count", .u32 = 64}, GGUF_E_FORMAT,
         "head size 1"},
        {"heads not a multiple of KV heads",
         {.u32_key = "qwen2.attention.head_count_kv", .u32 = 3}, GGUF_E_FORMAT,
         "not a multiple of the KV head count 3"},
        {"more KV heads than heads", {.u32_key = "qwen2.attention.head_count_kv", .u32 = 8},
         GGUF_E_FORMAT, "'qwen2.attention.head_count_kv' is 8"},
        {"no layers", {.u32_key = "qwen2.block_count", .u32 = 0}, GGUF_E_FORMAT,
         "'qwen2.block_count' is 0"},
        {"a million layers", {.u32_key = "qwen2.block_count", .u32 = 1000000}, GGUF_E_FORMAT,
         "'qwen2.block_count' is 1000000"},
        {"three layers, two in the file", {.u32_key = "qwen2.block_count", .u32 = 3},
         GGUF_E_NOT_FOUND, "'blk.2.attn_norm.weight' is missing"},
        {"width beyond token_embd", {.u32_key = "qwen2.embedding_length", .u32 = 128},
         GGUF_E_FORMAT, "'token_embd.weight' has shape (64, 1024)"},
        {"absurd width", {.u32_key = "qwen2.embedding_length", .u32 = 1u << 30}, GGUF_E_FORMAT,
         "'qwen2.embedding_length' is 1073741824"},
        {"FFN 0", {.u32_key = "qwen2.feed_forward_length", .u32 = 0}, GGUF_E_FORMAT,
         "'qwen2.feed_forward_length' is 0"},
        {"context 0", {.u32_key = "qwen2.context_length", .u32 = 0}, GGUF_E_FORMAT,
         "'qwen2.context_length' is 0"},
        {"absurd context", {.u32_key = "qwen2.context_length", .u32 = 4000000000u}, GGUF_E_FORMAT,
         "'qwen2.context_length' is 4000000000"},
        {"no epsilon", {.drop_key = "qwen2.attention.layer_norm_rms_epsilon"}, GGUF_E_NOT_FOUND,
         "'qwen2.attention.layer_norm_rms_epsilon' is missing"},
        {"negative epsilon", {.f32_key = "qwen2.attention.layer_norm_rms_epsilon", .f32 = -1.0f},
         GGUF_E_FORMAT, "'qwen2.attention.layer_norm_rms_epsilon' is -1"},
        {"NaN rope base", {.f32_key = "qwen2.rope.freq_base", .f32 = NAN}, GGUF_E_FORMAT,
         "'qwen2.rope.freq_base'"},
        {"head count as a string", {.str_key = "qwen2.attention.head_count", .str = "4"},
         GGUF_E_FORMAT, "'qwen2.attention.head_count' has type STRING"},
        {"no token_embd", {.drop_tensor = "token_embd.weight"}, GGUF_E_NOT_FOUND,
         "'token_embd.weight' is missing"},
    };
    check_bad_cases(base, cases, sizeof cases / sizeof cases[0]);

    /* An untied output matrix is used for the logits. */
    struct edit untie = {.tensor = "output.weight", .type = GGUF_T_F32, .n_dims = 2,
                         .ne = {64, 1024}};
    snprintf(path, sizeof path, "%s/untied.gguf", tu_tmpdir);
    write_variant(base, path, &untie);
    gguf_error err;
    qwen_model *m;
    char msg[512];
    REQUIRE(qwen_model_open(&m, path, &err) == GGUF_OK, "%s", err.message);
    CHECK(!m->weights.tied && m->weights.output.data != m->weights.token_embd.data,
          "output.weight not bound");
    ref_model *ref = ref_model_load(path, msg, sizeof msg);
    REQUIRE(ref != NULL, "%s", msg);
    qwen_state *s;
    REQUIRE(qwen_state_new(&s, m, 16, 16, &err) == GGUF_OK, "%s", err.message);
    int32_t tok[N_PREFILL];
    for (uint32_t i = 0; i < N_PREFILL; i++) tok[i] = token_at(i, 1024);
    REQUIRE(qwen_forward(s, tok, N_PREFILL, &err) == GGUF_OK, "%s", err.message);
    double want[1024];
    ref_forward(ref, tok, N_PREFILL, 1, want);
    double e = rel_error(qwen_state_logits(s), want, 1024);
    CHECK(e <= 3e-4, "untied output: relative error %.3g", e);
    qwen_state_free(s);
    ref_model_free(ref);
    qwen_model_close(m);
    unlink(path);

    /* A file that is not GGUF, and one that does not exist. */
    snprintf(path, sizeof path, "%s/not-gguf.gguf", tu_tmpdir);
    FILE *fp = fopen(path, "w");
    REQUIRE(fp != NULL, "cannot write %s", path);
    fputs("this is not a model\n", fp);
    fclose(fp);
    m = (qwen_model *)1;
    CHECK(qwen_model_open(&m, path, &err) == GGUF_E_FORMAT && m == NULL, "text file: %s",
          err.message);
    unlink(path);
    CHECK(qwen_model_open(&m, path, &err) == GGUF_E_IO && m == NULL, "missing file: %s",
          err.message);
    CHECK(qwen_model_open(NULL, path, &err) == GGUF_E_INVALID, "NULL out accepted");

    /* A big-endian file: its F32 norms cannot be read in place. */
    tu_synth_model(path, sizeof path, "big-endian", "--size tiny --type f32 --big-endian");
    char cmd[2048];
    CHECK(qwen_model_open(&m, path, &err) == GGUF_E_UNSUPPORTED && strstr(err.message, "big-endian"),
          "big-endian file: %s", err.message);
    unlink(path);

    /* A pipe and a gzip file: the weights must be mapped, so both are
     * refused at once, by name, with what is needed instead. */
    snprintf(path, sizeof path, "%s/fifo", tu_tmpdir);
    REQUIRE(mkfifo(path, 0600) == 0, "mkfifo %s: %s", path, strerror(errno));
    snprintf(cmd, sizeof cmd, "cat '%s' > '%s' 2>/dev/null &", base, path);
    if (system(cmd) != 0) HARD_ERROR("cannot run: %s", cmd);
    char expect[1200];
    snprintf(expect, sizeof expect, "%s: the model must be a regular, uncompressed file, which is "
             "memory-mapped; this is a pipe or other stream", path);
    m = (qwen_model *)1;
    CHECK(qwen_model_open(&m, path, &err) == GGUF_E_UNSUPPORTED && m == NULL &&
              strcmp(err.message, expect) == 0,
          "model from a pipe: %s", err.message);
    unlink(path);
    snprintf(path, sizeof path, "%s/model.gguf.gz", tu_tmpdir);
    snprintf(cmd, sizeof cmd, "gzip -c '%s' > '%s'", base, path);
    if (system(cmd) != 0) HARD_ERROR("cannot run: %s", cmd);
    snprintf(expect, sizeof expect, "%s: the model must be a regular, uncompressed file, which is "
             "memory-mapped; this is gzip-compressed (gunzip it first)", path);
    m = (qwen_model *)1;
    CHECK(qwen_model_open(&m, path, &err) == GGUF_E_UNSUPPORTED && m == NULL &&
              strcmp(err.message, expect) == 0,
          "gzip-compressed model: %s", err.message);
    unlink(path);
    qwen_model_close(NULL);
    qwen_state_free(NULL);
}

/* ------------------------------------------------------------------------ */

int main(void)
{
    tu_synth_init("test-forward");

    for (size_t i = 0; i < sizeof acc_cases / sizeof acc_cases[0]; i++)
        check_accuracy(&acc_cases[i]);
    check_no_alloc();
    check_batching("qwen2");
    check_batching("qwen3");
    check_wide("qwen2", "tiny", "q8_0");
    check_wide("qwen2", "small", "q4_k_m"); /* the K-quants (tiny takes Q5_0 and Q8_0) */
    check_wide("qwen3", "small", "q4_k_m");
    check_broken();
    check_broken_qwen3();
    tu_finish();
}
