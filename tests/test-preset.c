/*
 * test-preset.c -- the tensor types of gguf-requant --preset (tools/preset.c)
 * on models of many layers, against llama-quantize's: for every file type,
 * every tensor of Qwen2.5-0.5B's shapes (24 layers, width 896: the
 * fallbacks of rows that are not whole K-quant blocks; output.weight of its
 * own; also with an importance matrix) and of Qwen2.5-1.5B's (28 layers,
 * width 1536, tied embeddings) gets the type llama-quantize --dry-run gives.  tests/data/preset-kat/types.kat
 * lists the tensors whose type is not the file type's base type ("MODEL
 * PRESET TENSOR TYPE"); every other 2-D weight must get the base type, and
 * norms and biases keep F32.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "tests/testutil.h"
#include "tools/preset.h"

struct shape {
    const char *name;
    uint32_t n_layer, n_embd, n_q, n_kv, n_ff, n_head, n_head_kv;
    int tied;
    int imatrix;    /* quantized with an importance matrix */
};

static const struct shape shapes[] = {
    {"0.5b-untied", 24, 896, 896, 128, 4864, 14, 2, 0, 0},
    {"0.5b-untied-imatrix", 24, 896, 896, 128, 4864, 14, 2, 0, 1},
    {"1.5b", 28, 1536, 1536, 256, 8960, 12, 2, 1, 0},
};

static const char *const presets[] = {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K_S", "Q3_K_M",
                                      "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "F16", "BF16"};

struct kat_line {
    char model[32], preset[16], tensor[80], type[16];
};
static struct kat_line *kat;
static size_t n_kat;

static void read_kat(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) HARD_ERROR("cannot read %s", path);
    char line[256];
    size_t cap = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        if (n_kat == cap) {
            cap = cap ? 2 * cap : 256;
            kat = realloc(kat, cap * sizeof *kat);
            if (!kat) HARD_ERROR("out of memory");
        }
        struct kat_line *k = &kat[n_kat];
        if (sscanf(line, "%31s %15s %79s %15s", k->model, k->preset, k->tensor, k->type) != 4)
            HARD_ERROR("%s: bad line: %s", path, line);
        n_kat++;
    }
    fclose(f);
}

/* The recorded type of a tensor, or NULL: the base type. */
static const char *recorded(const char *model, const char *preset, const char *tensor)
{
    for (size_t i = 0; i < n_kat; i++)
        if (!strcmp(kat[i].model, model) && !strcmp(kat[i].preset, preset) && !strcmp(kat[i].tensor, tensor))
            return kat[i].type;
    return NULL;
}

static void check_tensor(const struct shape *s, const struct preset *p, const struct preset_model *m,
                         const char *name, uint32_t n_dims, uint64_t ne0, unsigned *listed)
{
    uint32_t in = n_dims == 1 ? GGUF_T_F32 : GGUF_T_F16;
    uint32_t got = preset_tensor_type(p, m, name, strlen(name), n_dims, ne0, in);
    const char *want = recorded(s->name, p->name, name);
    if (want) (*listed)++;
    const char *expect = want ? want : n_dims == 1 ? "F32" : gguf_type_str(p->base);
    CHECK(strcmp(gguf_type_str(got), expect) == 0, "%s %s %s: %s, llama-quantize %s", s->name, p->name,
          name, gguf_type_str(got), expect);
}

int main(void)
{
    const char *src = getenv("top_srcdir");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/preset-kat/types.kat", src ? src : ".");
    read_kat(path);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const struct shape *s = &shapes[si];
        for (size_t pi = 0; pi < sizeof presets / sizeof presets[0]; pi++) {
            const struct preset *p = preset_find(presets[pi]);
            REQUIRE(p != NULL, "preset %s", presets[pi]);
            struct preset_model m = {s->n_layer, s->n_head / s->n_head_kv, s->tied, 0, GGUF_T_COUNT, GGUF_T_COUNT,
                                     s->imatrix};
            unsigned listed = 0, want_listed = 0;
            for (size_t i = 0; i < n_kat; i++)
                want_listed += !strcmp(kat[i].model, s->name) && !strcmp(kat[i].preset, p->name);
            char name[80];
            check_tensor(s, p, &m, "token_embd.weight", 2, s->n_embd, &listed);
            check_tensor(s, p, &m, "output_norm.weight", 1, s->n_embd, &listed);
            if (!s->tied) check_tensor(s, p, &m, "output.weight", 2, s->n_embd, &listed);
            static const struct {
                const char *t;
                int dims, in; /* in: 0 n_embd, 1 n_q, 2 n_ff */
            } layer[] = {
                {"attn_norm.weight", 1, 0}, {"attn_q.weight", 2, 0},      {"attn_q.bias", 1, 1},
                {"attn_k.weight", 2, 0},    {"attn_k.bias", 1, 1},        {"attn_v.weight", 2, 0},
                {"attn_v.bias", 1, 1},      {"attn_output.weight", 2, 1}, {"ffn_norm.weight", 1, 0},
                {"ffn_gate.weight", 2, 0},  {"ffn_up.weight", 2, 0},      {"ffn_down.weight", 2, 2},
            };
            for (uint32_t l = 0; l < s->n_layer; l++)
                for (size_t k = 0; k < sizeof layer / sizeof layer[0]; k++) {
                    snprintf(name, sizeof name, "blk.%u.%s", l, layer[k].t);
                    uint64_t ne0 = layer[k].in == 0 ? s->n_embd : layer[k].in == 1 ? s->n_q : s->n_ff;
                    check_tensor(s, p, &m, name, (uint32_t)layer[k].dims, ne0, &listed);
                }
            CHECK(listed == want_listed, "%s %s: %u of the %u recorded tensors seen", s->name, p->name,
                  listed, want_listed);
        }
    }
    CHECK(n_kat > 100, "only %zu recorded tensors", n_kat);
    free(kat);
    tu_finish();
}
