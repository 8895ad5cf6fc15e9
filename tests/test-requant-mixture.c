/*
 * test-requant-mixture -- the rule by which gguf-requant names a mixture of
 * tensor types (tools/mixture.c), on the tensor lists of Qwen2.5 0.5B and
 * 1.5B models as llama.cpp's llama-quantize builds them for each file
 * type, and on edge cases.
 */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "gguf/gguf.h"
#include "tests/testutil.h"
#include "tools/mixture.h"

#define MAX_TENSORS 512

/* A tensor list under construction; names live in `names`. */
struct model {
    struct mixture_tensor t[MAX_TENSORS];
    char names[MAX_TENSORS][64];
    size_t n;
};

static void add(struct model *m, const char *name, uint32_t type, uint32_t n_dims, uint64_t ne0,
                uint64_t ne1)
{
    if (m->n == MAX_TENSORS) HARD_ERROR("too many tensors");
    struct mixture_tensor *t = &m->t[m->n];
    snprintf(m->names[m->n], sizeof m->names[m->n], "%s", name);
    t->name = m->names[m->n];
    t->name_len = strlen(name);
    t->type = type;
    t->n_dims = n_dims;
    t->ne0 = ne0;
    t->n_elements = ne0 * (n_dims > 1 ? ne1 : 1);
    m->n++;
}

/* llama.cpp's choice of layers that get more bits in the _M mixtures. */
static int more_bits(int i, int n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* The types of one mixture: what llama-quantize gives each kind of weight
 * (before the row-length fallbacks, which build() applies). */
struct recipe {
    uint32_t embd;                  /* token_embd (tied: the output type) */
    uint32_t base;                  /* attn_q, attn_k, ffn_gate, ffn_up */
    uint32_t attn_output;
    uint32_t v_more, v_less;        /* attn_v on more_bits layers, others */
    int v_first;                    /* >0: only the first v_first layers get v_more */
    uint32_t down_more, down_less;  /* ffn_down */
    int down_first_div;             /* >0: layers i < n/div get down_more (not more_bits) */
};

/* llama.cpp's fallback for a type whose block does not fit a row of ne0. */
static uint32_t fallback(uint32_t type, uint64_t ne0)
{
    const gguf_type_info *ti = gguf_type_get(type);
    if (ne0 % ti->block_size == 0) return type;
    switch (type) {
    case GGUF_T_Q2_K: case GGUF_T_Q3_K: return GGUF_T_Q4_0;
    case GGUF_T_Q4_K: return GGUF_T_Q5_0;
    case GGUF_T_Q5_K: return GGUF_T_Q5_1;
    case GGUF_T_Q6_K: return GGUF_T_Q8_0;
    default: return GGUF_T_F16;
    }
}

/* A Qwen2 model (tied embeddings) of the given shape and recipe. */
static void build(struct model *m, int n_layer, uint64_t n_embd, uint64_t n_kv, uint64_t n_ff,
                  const struct recipe *r)
{
    char name[64];
    m->n = 0;
    add(m, "token_embd.weight", fallback(r->embd, n_embd), 2, n_embd, 151936);
    for (int i = 0; i < n_layer; i++) {
        int vm = r->v_first > 0 ? i < r->v_first : more_bits(i, n_layer);
        int dm = r->down_first_div > 0 ? i < n_layer / r->down_first_div : more_bits(i, n_layer);
        struct { const char *suffix; uint32_t type; uint64_t ne0, ne1; } w[] = {
            { "attn_q.weight", r->base, n_embd, n_embd },
            { "attn_k.weight", r->base, n_embd, n_kv },
            { "attn_v.weight", vm ? r->v_more : r->v_less, n_embd, n_kv },
            { "attn_output.weight", r->attn_output, n_embd, n_embd },
            { "ffn_gate.weight", r->base, n_embd, n_ff },
            { "ffn_up.weight", r->base, n_embd, n_ff },
            { "ffn_down.weight", dm ? r->down_more : r->down_less, n_ff, n_embd },
        };
        snprintf(name, sizeof name, "blk.%d.attn_norm.weight", i);
        add(m, name, GGUF_T_F32, 1, n_embd, 1);
        for (size_t k = 0; k < sizeof w / sizeof w[0]; k++) {
            snprintf(name, sizeof name, "blk.%d.%s", i, w[k].suffix);
            add(m, name, fallback(w[k].type, w[k].ne0), 2, w[k].ne0, w[k].ne1);
            if (k < 3) {
                snprintf(name, sizeof name, "blk.%d.%.6s.bias", i, w[k].suffix);
                add(m, name, GGUF_T_F32, 1, w[k].ne1, 1);
            }
        }
        snprintf(name, sizeof name, "blk.%d.ffn_norm.weight", i);
        add(m, name, GGUF_T_F32, 1, n_embd, 1);
    }
    add(m, "output_norm.weight", GGUF_T_F32, 1, n_embd, 1);
}

static void build_15b(struct model *m, const struct recipe *r) { build(m, 28, 1536, 256, 8960, r); }
static void build_05b(struct model *m, const struct recipe *r) { build(m, 24, 896, 128, 4864, r); }

/* Every tensor of type `from` becomes `to` (as gguf-requant --from --to). */
static void convert(struct model *m, uint32_t from, uint32_t to)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->t[i].type == from && m->t[i].n_dims >= 2) m->t[i].type = to;
}

static struct recipe uniform(uint32_t type, uint32_t embd)
{
    struct recipe r = { embd, type, type, type, type, 0, type, type, 0 };
    return r;
}

#define EXPECT(m, want, what)                                                          \
    do {                                                                              \
        long got_ = mixture_file_type((m)->t, (m)->n);                                \
        CHECK(got_ == (want), "%s: got %ld (%s), want %ld (%s)", what, got_,          \
              got_ >= 0 ? gguf_file_type_name((uint32_t)got_) : "none", (long)(want), \
              (want) >= 0 ? gguf_file_type_name((uint32_t)(want)) : "none");          \
    } while (0)

int main(void)
{
    static struct model m;
    struct recipe r;

    /* Plain types: the weights all of one type, the embedding as llama.cpp. */
    r = uniform(GGUF_T_F32, GGUF_T_F32); build_15b(&m, &r); EXPECT(&m, 0, "1.5b F32");
    r = uniform(GGUF_T_F16, GGUF_T_F16); build_15b(&m, &r); EXPECT(&m, 1, "1.5b F16");
    r = uniform(GGUF_T_BF16, GGUF_T_BF16); build_15b(&m, &r); EXPECT(&m, 32, "1.5b BF16");
    r = uniform(GGUF_T_Q8_0, GGUF_T_Q8_0); build_15b(&m, &r); EXPECT(&m, 7, "1.5b Q8_0");
    r = uniform(GGUF_T_Q8_0, GGUF_T_Q8_0); build_05b(&m, &r); EXPECT(&m, 7, "0.5b Q8_0");
    r = uniform(GGUF_T_Q4_0, GGUF_T_Q6_K); build_15b(&m, &r); EXPECT(&m, 2, "1.5b Q4_0");
    r = uniform(GGUF_T_Q4_1, GGUF_T_Q6_K); build_15b(&m, &r); EXPECT(&m, 3, "1.5b Q4_1");
    r = uniform(GGUF_T_Q5_0, GGUF_T_Q6_K); build_15b(&m, &r); EXPECT(&m, 8, "1.5b Q5_0");
    r = uniform(GGUF_T_Q5_0, GGUF_T_Q6_K); build_05b(&m, &r); EXPECT(&m, 8, "0.5b Q5_0");
    r = uniform(GGUF_T_Q5_1, GGUF_T_Q6_K); build_15b(&m, &r); EXPECT(&m, 9, "1.5b Q5_1");
    r = uniform(GGUF_T_Q6_K, GGUF_T_Q6_K); build_15b(&m, &r); EXPECT(&m, 18, "1.5b Q6_K");

    /* Q4_K_M: attn_v and ffn_down Q6_K on the more_bits layers. */
    r = (struct recipe){ GGUF_T_Q6_K, GGUF_T_Q4_K, GGUF_T_Q4_K, GGUF_T_Q6_K, GGUF_T_Q4_K, 0,
                         GGUF_T_Q6_K, GGUF_T_Q4_K, 0 };
    build_15b(&m, &r);
    EXPECT(&m, 15, "1.5b Q4_K_M");
    convert(&m, GGUF_T_Q6_K, GGUF_T_Q4_K);
    EXPECT(&m, 14, "1.5b Q4_K_M, every Q6_K made Q4_K");
    build_05b(&m, &r);
    EXPECT(&m, 15, "0.5b Q4_K_M (Q5_0/Q8_0 fallbacks, half the ffn_down Q6_K)");
    convert(&m, GGUF_T_Q6_K, GGUF_T_Q4_K);
    EXPECT(&m, 14, "0.5b Q4_K_M, every Q6_K made Q4_K");

    /* Q4_K_S: the first 4 attn_v and the first n/8 ffn_down Q5_K. */
    r = (struct recipe){ GGUF_T_Q6_K, GGUF_T_Q4_K, GGUF_T_Q4_K, GGUF_T_Q5_K, GGUF_T_Q4_K, 4,
                         GGUF_T_Q5_K, GGUF_T_Q4_K, 8 };
    build_15b(&m, &r);
    EXPECT(&m, 14, "1.5b Q4_K_S");

    /* Q5_K_M and Q5_K_S. */
    r = (struct recipe){ GGUF_T_Q6_K, GGUF_T_Q5_K, GGUF_T_Q5_K, GGUF_T_Q6_K, GGUF_T_Q5_K, 0,
                         GGUF_T_Q6_K, GGUF_T_Q5_K, 0 };
    build_15b(&m, &r);
    EXPECT(&m, 17, "1.5b Q5_K_M");
    r = uniform(GGUF_T_Q5_K, GGUF_T_Q6_K);
    build_15b(&m, &r);
    EXPECT(&m, 16, "1.5b Q5_K_S");

    /* Q3_K_S, Q3_K_M, Q3_K_L. */
    r = uniform(GGUF_T_Q3_K, GGUF_T_Q6_K);
    build_15b(&m, &r);
    EXPECT(&m, 11, "1.5b Q3_K_S");
    r = (struct recipe){ GGUF_T_Q6_K, GGUF_T_Q3_K, GGUF_T_Q4_K, GGUF_T_Q5_K, GGUF_T_Q4_K, 2,
                         GGUF_T_Q5_K, GGUF_T_Q4_K, 16 };
    build_15b(&m, &r);
    EXPECT(&m, 12, "1.5b Q3_K_M");
    r = (struct recipe){ GGUF_T_Q6_K, GGUF_T_Q3_K, GGUF_T_Q5_K, GGUF_T_Q5_K, GGUF_T_Q5_K, 0,
                         GGUF_T_Q5_K, GGUF_T_Q5_K, 0 };
    build_15b(&m, &r);
    EXPECT(&m, 13, "1.5b Q3_K_L");

    /* Q2_K (attn_v Q4_K with GQA >= 4, ffn_down and attn_output Q3_K) and
     * Q2_K_S (attn_v Q4_K, the first n/8 ffn_down Q4_K). */
    r = (struct recipe){ GGUF_T_Q6_K, GGUF_T_Q2_K, GGUF_T_Q3_K, GGUF_T_Q4_K, GGUF_T_Q4_K, 0,
                         GGUF_T_Q3_K, GGUF_T_Q3_K, 0 };
    build_15b(&m, &r);
    EXPECT(&m, 10, "1.5b Q2_K");
    r = (struct recipe){ GGUF_T_Q6_K, GGUF_T_Q2_K, GGUF_T_Q2_K, GGUF_T_Q4_K, GGUF_T_Q4_K, 0,
                         GGUF_T_Q4_K, GGUF_T_Q2_K, 8 };
    build_15b(&m, &r);
    EXPECT(&m, 21, "1.5b Q2_K_S");

    /* An F16 0.5b model with only the ffn_down made Q4_K is still mostly
     * F16: F16 is no stand-in for a K-quant. */
    r = uniform(GGUF_T_F16, GGUF_T_F16);
    build_05b(&m, &r);
    for (size_t i = 0; i < m.n; i++)
        if (strstr(m.names[i], "ffn_down")) m.t[i].type = GGUF_T_Q4_K;
    EXPECT(&m, 1, "0.5b F16 with Q4_K ffn_down");

    /* An F16 model with a few tensors converted stays F16; with most, not. */
    r = uniform(GGUF_T_F16, GGUF_T_F16);
    build_15b(&m, &r);
    for (size_t i = 0; i < m.n; i++)
        if (strncmp(m.names[i], "blk.0.", 6) == 0 && m.t[i].n_dims == 2) m.t[i].type = GGUF_T_Q8_0;
    EXPECT(&m, 1, "1.5b F16 with layer 0 Q8_0");
    convert(&m, GGUF_T_F16, GGUF_T_Q8_0);
    EXPECT(&m, 7, "1.5b F16 all made Q8_0");

    /* Ties go to the type with fewer bits. */
    m.n = 0;
    add(&m, "a.weight", GGUF_T_Q8_0, 2, 256, 4);
    add(&m, "b.weight", GGUF_T_Q4_0, 2, 256, 4);
    EXPECT(&m, 2, "tie Q8_0/Q4_0");

    /* Only the special tensors: they count then. */
    m.n = 0;
    add(&m, "token_embd.weight", GGUF_T_Q6_K, 2, 256, 8);
    add(&m, "norm.weight", GGUF_T_F32, 1, 256, 1);
    EXPECT(&m, 18, "only token_embd");

    /* No weights, or a base type without a file type. */
    m.n = 0;
    add(&m, "norm.weight", GGUF_T_F32, 1, 256, 1);
    EXPECT(&m, -1, "1-D only");
    EXPECT(&m, -1, "1-D only");
    CHECK(mixture_file_type(m.t, 0) == -1, "empty list");
    m.n = 0;
    add(&m, "idx.weight", GGUF_T_I32, 2, 16, 16);
    EXPECT(&m, -1, "I32 weights");
    tu_finish();
}
