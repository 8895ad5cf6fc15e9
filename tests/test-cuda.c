/*
 * test-cuda.c -- the CUDA backend against the CPU backend, on synthetic
 * models of every weight type, qwen2 and qwen3.  Skipped (77) in a build
 * without CUDA and on a machine without a usable GPU.
 *
 * Each case runs the same batches through three contexts -- the CPU in
 * plain mode (float products over dequantized weights: the reference),
 * CUDA in plain mode (cuBLAS SGEMM over dequantized weights), and CUDA as
 * it runs by default -- and compares every row of logits with the
 * reference's: max |got - want| / max |want|.  The batches cover each
 * path of the backend: a prefill of 12 tokens (cuBLAS), single tokens
 * (matrix-vector kernels, from a captured graph), a prefill of 5 (the
 * 8-column kernels), and batches of 3 sequences at once, twice (a graph
 * replayed at new positions).
 *
 * Bounds: CUDA plain against CPU plain differ only in the order of float
 * sums (and the F16 rounding of a cached key or value that lands the
 * other side of a tie): PLAIN_BOUND, as tests/test-forward.c measures
 * for the CPU against float64.  CUDA's default path quantizes each
 * product's input to 8 bits per 32 (the CPU's per 256 or 32), the same
 * order of error as the CPU's quantized path: its bound of 5 %.  F32, F16
 * and BF16 weights take float inputs in decode, and F16 inputs in the
 * cuBLAS prefill (a relative rounding of 2^-11 per element): 1 %.
 *
 * Also: 64 greedy steps on the tiny F32 models give the same tokens on
 * both backends; a context of 700 positions, filled past two attention
 * pieces of 256, agrees; a step from a replayed graph has the bits of the
 * same step launched kernel by kernel (QWEN_CUDA_SYNC=1); a model of a
 * type without CUDA kernels is refused, naming the tensor.
 */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "infer/context.h"
#include "infer/model.h"
#include "tests/testutil.h"
#include "tests/synthdir.h"

#ifdef HAVE_CUDA
#include "infer/cuda/cuda.h"

#define PLAIN_BOUND 3e-4
#define QWEN3_PLAIN_BOUND 5e-4
#define QUANT_BOUND 0.05
#define FLOAT_BOUND 0.01

struct cuda_case {
    const char *arch, *size, *type;
    int untied;
};

static const struct cuda_case cases[] = {
    {"qwen2", "tiny", "f32", 0},     {"qwen2", "tiny", "f16", 0},    {"qwen2", "tiny", "bf16", 0},
    {"qwen2", "tiny", "q8_0", 0},    {"qwen2", "tiny", "q4_0", 0},   {"qwen2", "tiny", "q4_1", 0},
    {"qwen2", "tiny", "q5_k", 0},    /* Q5_1 fallbacks */
    {"qwen2", "tiny", "q4_k_m", 0},  /* Q5_0 and Q8_0 fallbacks */
    {"qwen2", "small", "q4_k_m", 0}, {"qwen2", "small", "q4_k", 0},
    {"qwen2", "small", "q5_k_m", 0}, {"qwen2", "small", "q6_k", 0},
    {"qwen2", "small", "q5_k", 0},   {"qwen2", "small", "q2_k", 0},
    {"qwen2", "small", "q3_k", 0},   {"qwen2", "small", "q8_0", 1},
    {"qwen3", "tiny", "f32", 0},     {"qwen3", "tiny", "bf16", 0},   {"qwen3", "tiny", "q8_0", 0},
    {"qwen3", "tiny", "q4_k_m", 0},  {"qwen3", "small", "q4_k_m", 0},
    {"qwen3", "small", "q6_k", 0},   {"qwen3", "small", "q5_k", 0},
    {"qwen3", "small", "q4_k_m", 1},
};

static int32_t token_at(uint32_t i, uint32_t n_vocab)
{
    return (int32_t)((i * 389u + 17u) % n_vocab);
}

static double rel_error(const float *a, const float *b, uint32_t n)
{
    double num = 0.0, den = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= num)) num = d;
        if (fabs(b[i]) > den) den = fabs(b[i]);
    }
    return den > 0 ? num / den : num;
}

static qwen_context *new_context(const qwen_model *m, const char *backend, int plain,
                                 uint32_t n_ctx, uint32_t n_batch)
{
    qwen_params p = qwen_params_defaults();
    p.backend = backend;
    p.n_ctx = n_ctx;
    p.n_seq = 3;
    p.n_batch = n_batch;
    p.n_outputs = n_batch;
    p.plain = plain;
    gguf_error err;
    qwen_context *ctx = NULL;
    REQUIRE(qwen_context_new(&ctx, m, &p, &err) == GGUF_OK, "%s context: %s", backend,
            err.message);
    return ctx;
}

/* The batches of a case: entries (seq, count) appended at each sequence's
 * next position, all wanting logits. */
struct step {
    int n;
    int seq[3], count[3];
};

static const struct step steps[] = {
    {1, {0}, {12}},                         /* cuBLAS prefill */
    {1, {0}, {1}}, {1, {0}, {1}}, {1, {0}, {1}}, /* decode, graph (1, 1) */
    {1, {1}, {5}},                          /* 8-column kernels */
    {3, {0, 1, 2}, {1, 1, 1}},              /* three sequences, graph (3, 3) */
    {3, {0, 1, 2}, {1, 1, 1}},              /* replayed at new positions */
};

static void fill(qwen_batch *b, const struct step *st, uint32_t *next, uint32_t nv)
{
    b->n = 0;
    for (int k = 0; k < st->n; k++)
        for (int i = 0; i < st->count[k]; i++) {
            const int s = st->seq[k];
            qwen_batch_add(b, token_at(next[s] + 7u * (uint32_t)s, nv), s, next[s], 1);
            next[s]++;
        }
}

static void check_case(const struct cuda_case *cc)
{
    char path[512];
    tu_synth_shape(path, sizeof path, cc->arch, cc->size, cc->type, cc->untied);
    gguf_error err;
    qwen_model *m;
    REQUIRE(qwen_model_open(&m, path, &err) == GGUF_OK, "%s", err.message);
    const uint32_t nv = m->config.n_vocab;
    const int qwen3 = strcmp(cc->arch, "qwen3") == 0;
    const int is_float = !strcmp(cc->type, "f32") || !strcmp(cc->type, "f16") ||
                         !strcmp(cc->type, "bf16");
    const double pbound = qwen3 ? QWEN3_PLAIN_BOUND : PLAIN_BOUND;
    const double qbound = is_float ? FLOAT_BOUND : QUANT_BOUND;
    qwen_context *ref = new_context(m, "cpu", 1, 64, 16);
    qwen_context *plain = new_context(m, "cuda", 1, 64, 16);
    qwen_context *fast = new_context(m, "cuda", 0, 64, 16);
    qwen_batch b;
    REQUIRE(qwen_batch_init(&b, 16, &err) == GGUF_OK, "%s", err.message);
    uint32_t next[3] = {0, 0, 0};
    double worst_p = 0.0, worst_q = 0.0;
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        fill(&b, &steps[k], next, nv);
        REQUIRE(qwen_decode(ref, &b, &err) == GGUF_OK, "cpu: %s", err.message);
        REQUIRE(qwen_decode(plain, &b, &err) == GGUF_OK, "cuda plain: %s", err.message);
        REQUIRE(qwen_decode(fast, &b, &err) == GGUF_OK, "cuda: %s", err.message);
        for (uint32_t i = 0; i < b.n; i++) {
            const float *want = qwen_logits(ref, i);
            const double ep = rel_error(qwen_logits(plain, i), want, nv);
            const double eq = rel_error(qwen_logits(fast, i), want, nv);
            if (!(ep <= worst_p)) worst_p = ep;
            if (!(eq <= worst_q)) worst_q = eq;
            CHECK(ep <= pbound, "%s %s %s: step %zu entry %u (seq %d pos %u): plain error %.3g",
                  cc->arch, cc->size, cc->type, k, i, b.seq[i], b.pos[i], ep);
            CHECK(eq <= qbound, "%s %s %s: step %zu entry %u (seq %d pos %u): error %.3g",
                  cc->arch, cc->size, cc->type, k, i, b.seq[i], b.pos[i], eq);
        }
    }
    fprintf(stderr, "%s %-6s %-7s%s against the CPU: plain %.2g (bound %.0e), default %.2g "
            "(bound %.0e)\n", cc->arch, cc->size, cc->type, cc->untied ? " untied" : "", worst_p,
            pbound, worst_q, qbound);
    qwen_batch_free(&b);
    qwen_context_free(ref);
    qwen_context_free(plain);
    qwen_context_free(fast);
    qwen_model_close(m);
}

static int32_t argmax(const float *x, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return (int32_t)best;
}

/* 64 greedy steps after a prompt of 8: the same tokens on both. */
static void check_greedy(const char *arch)
{
    char path[512];
    tu_synth_shape(path, sizeof path, arch, "tiny", "f32", 0);
    gguf_error err;
    qwen_model *m;
    REQUIRE(qwen_model_open(&m, path, &err) == GGUF_OK, "%s", err.message);
    const uint32_t nv = m->config.n_vocab;
    qwen_context *ctx[2] = {new_context(m, "cpu", 0, 128, 8), new_context(m, "cuda", 0, 128, 8)};
    int32_t ids[2][64];
    for (int k = 0; k < 2; k++) {
        qwen_batch b;
        REQUIRE(qwen_batch_init(&b, 8, &err) == GGUF_OK, "%s", err.message);
        for (uint32_t i = 0; i < 8; i++) qwen_batch_add(&b, token_at(i, nv), 0, i, i == 7);
        REQUIRE(qwen_decode(ctx[k], &b, &err) == GGUF_OK, "%s", err.message);
        int32_t t = argmax(qwen_logits(ctx[k], 7), nv);
        for (uint32_t i = 0; i < 64; i++) {
            ids[k][i] = t;
            b.n = 0;
            qwen_batch_add(&b, t, 0, 8 + i, 1);
            REQUIRE(qwen_decode(ctx[k], &b, &err) == GGUF_OK, "%s", err.message);
            t = argmax(qwen_logits(ctx[k], 0), nv);
        }
        qwen_batch_free(&b);
        qwen_context_free(ctx[k]);
    }
    int first = -1;
    for (int i = 0; i < 64 && first < 0; i++)
        if (ids[0][i] != ids[1][i]) first = i;
    CHECK(first < 0, "%s tiny f32: greedy tokens differ from step %d (cpu %d, cuda %d)", arch,
          first, first >= 0 ? ids[0][first] : 0, first >= 0 ? ids[1][first] : 0);
    if (first < 0) fprintf(stderr, "%s tiny f32: 64 greedy tokens identical\n", arch);
    qwen_model_close(m);
}

/* 600 positions in batches of 64, then single steps: queries over three
 * attention pieces. */
static void check_long(void)
{
    char path[512];
    tu_synth_shape(path, sizeof path, "qwen2", "tiny", "q8_0", 0);
    gguf_error err;
    qwen_model *m;
    REQUIRE(qwen_model_open(&m, path, &err) == GGUF_OK, "%s", err.message);
    const uint32_t nv = m->config.n_vocab;
    qwen_context *ctx[3] = {new_context(m, "cpu", 1, 700, 64), new_context(m, "cuda", 1, 700, 64),
                            new_context(m, "cuda", 0, 700, 64)};
    qwen_batch b;
    REQUIRE(qwen_batch_init(&b, 64, &err) == GGUF_OK, "%s", err.message);
    double worst[3] = {0, 0, 0};
    for (uint32_t pos = 0; pos < 604;) {
        const uint32_t n = pos < 600 ? 64 - (pos == 576 ? 40 : 0) : 1; /* to 600, then 1 */
        b.n = 0;
        for (uint32_t i = 0; i < n; i++) qwen_batch_add(&b, token_at(pos + i, nv), 0, pos + i, 1);
        for (int k = 0; k < 3; k++)
            REQUIRE(qwen_decode(ctx[k], &b, &err) == GGUF_OK, "%s", err.message);
        for (uint32_t i = 0; i < n; i += 7)
            for (int k = 1; k < 3; k++) {
                const double e = rel_error(qwen_logits(ctx[k], i), qwen_logits(ctx[0], i), nv);
                if (!(e <= worst[k])) worst[k] = e;
            }
        pos += n;
    }
    CHECK(worst[1] <= PLAIN_BOUND, "700 positions: plain error %.3g", worst[1]);
    CHECK(worst[2] <= QUANT_BOUND, "700 positions: error %.3g", worst[2]);
    fprintf(stderr, "qwen2 tiny q8_0 to 604 positions: plain %.2g, default %.2g\n", worst[1],
            worst[2]);
    qwen_batch_free(&b);
    for (int k = 0; k < 3; k++) qwen_context_free(ctx[k]);
    qwen_model_close(m);
}

/* Steps from a replayed graph and launched one kernel at a time: the same
 * bits. */
static void check_graph_bits(void)
{
    char path[512];
    tu_synth_shape(path, sizeof path, "qwen2", "small", "q4_k_m", 0);
    gguf_error err;
    qwen_model *m;
    REQUIRE(qwen_model_open(&m, path, &err) == GGUF_OK, "%s", err.message);
    const uint32_t nv = m->config.n_vocab;
    qwen_context *graph = new_context(m, "cuda", 0, 64, 16);
    setenv("QWEN_CUDA_SYNC", "1", 1);
    qwen_context *sync = new_context(m, "cuda", 0, 64, 16);
    unsetenv("QWEN_CUDA_SYNC");
    qwen_batch b;
    REQUIRE(qwen_batch_init(&b, 16, &err) == GGUF_OK, "%s", err.message);
    int same = 1;
    for (uint32_t pos = 0; pos < 16; pos++) {
        b.n = 0;
        qwen_batch_add(&b, token_at(pos, nv), 0, pos, 1);
        REQUIRE(qwen_decode(graph, &b, &err) == GGUF_OK, "%s", err.message);
        REQUIRE(qwen_decode(sync, &b, &err) == GGUF_OK, "%s", err.message);
        same &= memcmp(qwen_logits(graph, 0), qwen_logits(sync, 0), nv * sizeof(float)) == 0;
    }
    CHECK(same, "replayed graphs and kernels launched one by one give different logits");
    char dev[320];
    qwen_context_describe(graph, dev, sizeof dev);
    CHECK(strncmp(dev, "cuda: ", 6) == 0 && strstr(dev, "MiB"), "describe: %s", dev);
    fprintf(stderr, "%s\n", dev);
    qwen_batch_free(&b);
    qwen_context_free(graph);
    qwen_context_free(sync);
    qwen_model_close(m);
}

/* A model with a type the kernels lack (one matrix requantized to Q8_K,
 * which the CPU computes) is refused, naming the tensor. */
static void check_refused(void)
{
    char src[512], path[600], cmd[2048];
    tu_synth_shape(src, sizeof src, "qwen2", "small", "q8_0", 0);
    snprintf(path, sizeof path, "%s/q8_k.gguf", tu_tmpdir);
    const char *top = getenv("top_builddir");
    snprintf(cmd, sizeof cmd, "'%s/gguf-requant' -q --type 'blk.1.ffn_up.weight=q8_k' '%s' '%s'",
             top ? top : ".", src, path);
    if (system(cmd) != 0) HARD_ERROR("cannot run: %s", cmd);
    gguf_error err;
    qwen_model *m;
    REQUIRE(qwen_model_open(&m, path, &err) == GGUF_OK, "%s", err.message);
    qwen_params p = qwen_params_defaults();
    p.backend = "cuda";
    p.n_ctx = 64;
    p.n_batch = 64;
    qwen_context *ctx = NULL;
    int st = qwen_context_new(&ctx, m, &p, &err);
    CHECK(st == GGUF_E_UNSUPPORTED && strstr(err.message, "'blk.1.ffn_up.weight'") &&
              strstr(err.message, "Q8_K"),
          "status %d: %s", st, st ? err.message : "");
    qwen_context_free(ctx);
    qwen_model_close(m);
}

int main(void)
{
    char why[256] = "";
    REQUIRE(qwen_backend_add(&qwen_backend_cuda) == GGUF_OK, "cannot add the CUDA backend");
    if (qwen_cuda_device_count(why, sizeof why) == 0) SKIP("no usable CUDA device: %s", why);
    tu_synth_init("test-cuda");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
    check_greedy("qwen2");
    check_greedy("qwen3");
    check_long();
    check_graph_bits();
    check_refused();
    tu_finish();
    return 0;
}

#else

int main(void)
{
    SKIP("this build has no CUDA backend (./configure --enable-cuda)");
}

#endif
