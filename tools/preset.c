/* preset.c -- llama-quantize's file types and the type each tensor gets
 * under them; see preset.h. */
#include <config.h>

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gguf/gguf.h"
#include "tools/preset.h"

static const struct preset presets[] = {
    {"Q4_0", 2, GGUF_T_Q4_0},     {"Q4_1", 3, GGUF_T_Q4_1},     {"Q5_0", 8, GGUF_T_Q5_0},
    {"Q5_1", 9, GGUF_T_Q5_1},     {"Q8_0", 7, GGUF_T_Q8_0},     {"Q2_K", 10, GGUF_T_Q2_K},
    {"Q3_K_S", 11, GGUF_T_Q3_K},  {"Q3_K_M", 12, GGUF_T_Q3_K},  {"Q3_K_L", 13, GGUF_T_Q3_K},
    {"Q4_K_S", 14, GGUF_T_Q4_K},  {"Q4_K_M", 15, GGUF_T_Q4_K},  {"Q5_K_S", 16, GGUF_T_Q5_K},
    {"Q5_K_M", 17, GGUF_T_Q5_K},  {"Q6_K", 18, GGUF_T_Q6_K},    {"F16", 1, GGUF_T_F16},
    {"BF16", 32, GGUF_T_BF16},
};
#define N_PRESETS (sizeof presets / sizeof presets[0])

const struct preset *preset_find(const char *name)
{
    for (size_t i = 0; name && i < N_PRESETS; i++)
        if (strcasecmp(name, presets[i].name) == 0) return &presets[i];
    return NULL;
}

const char *preset_names(void)
{
    static char buf[256];
    if (!buf[0])
        for (size_t i = 0; i < N_PRESETS; i++)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? ", " : "", presets[i].name);
    return buf;
}

static int has(const char *name, size_t len, const char *part)
{
    size_t n = strlen(part);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(name + i, part, n) == 0) return 1;
    return 0;
}

static int is(const char *name, size_t len, const char *s)
{
    return strlen(s) == len && memcmp(name, s, len) == 0;
}

static int use_more_bits(int i, int n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* The type llama-quantize writes instead of `type` when rows of ne0 are
 * not whole blocks of it. */
static uint32_t fallback(uint32_t type, uint64_t ne0)
{
    const gguf_type_info *ti = gguf_type_get(type);
    if (!ti || ne0 % ti->block_size == 0) return type;
    uint32_t fb;
    switch (type) {
    case GGUF_T_Q2_K: case GGUF_T_Q3_K: fb = GGUF_T_Q4_0; break;
    case GGUF_T_Q4_K: fb = GGUF_T_Q5_0; break;
    case GGUF_T_Q5_K: fb = GGUF_T_Q5_1; break;
    case GGUF_T_Q6_K: fb = GGUF_T_Q8_0; break;
    default: return type; /* no substitute: refused later */
    }
    return ne0 % gguf_type_get(fb)->block_size == 0 ? fb : GGUF_T_F16;
}

uint32_t preset_tensor_type(const struct preset *p, const struct preset_model *m, const char *name,
                            size_t len, uint32_t n_dims, uint64_t ne0, uint32_t type)
{
    /* the tensors llama-quantize converts at all */
    if (n_dims < 2 || len < 6 || memcmp(name + len - 6, "weight", 6) != 0 || has(name, len, "_norm.weight") ||
        has(name, len, "ffn_gate_inp.weight"))
        return type;
    const int output = is(name, len, "output.weight"), embd = is(name, len, "token_embd.weight");
    if (embd && m->embd_type != GGUF_T_COUNT) return m->embd_type;
    if (output && m->output_type != GGUF_T_COUNT) return m->output_type;
    const uint32_t base = p->base;
    const gguf_type_info *bi = gguf_type_get(base);
    const int quantized = base != GGUF_T_F16 && base != GGUF_T_BF16 && base != GGUF_T_F32;
    if (m->pure || !quantized) return base;
    const long ft = p->file_type;
    int layer = -1;
    if (len > 4 && memcmp(name, "blk.", 4) == 0) sscanf(name + 4, "%d", &layer);
    const int n = (int)m->n_layer;
    uint32_t t = base;
    if (output || (m->tied && embd)) {
        /* the output matrix's type; a tied token_embd is the output matrix */
        if (m->output_type != GGUF_T_COUNT) t = m->output_type;
        else if (ne0 % bi->block_size != 0) t = GGUF_T_Q8_0;
        else if (base != GGUF_T_Q8_0) t = GGUF_T_Q6_K;
    } else if (embd) {
        /* the base type */
    } else if (has(name, len, "attn_v.weight") || has(name, len, "attn_qkv.weight") ||
               has(name, len, "attn_kv_b.weight")) {
        if (ft == 10) t = m->n_gqa >= 4 ? GGUF_T_Q4_K : GGUF_T_Q3_K;
        else if (ft == 12) t = layer < 2 ? GGUF_T_Q5_K : GGUF_T_Q4_K;
        else if (ft == 13) t = GGUF_T_Q5_K;
        else if ((ft == 15 || ft == 17) && use_more_bits(layer, n)) t = GGUF_T_Q6_K;
        else if (ft == 14 && layer < 4) t = GGUF_T_Q5_K;
        if (n == 80 && (t == GGUF_T_Q3_K || t == GGUF_T_Q4_K)) t = GGUF_T_Q5_K;
    } else if (has(name, len, "attn_k.weight") || has(name, len, "attn_q.weight")) {
        /* the base type */
    } else if (has(name, len, "attn_output.weight")) {
        if (ft == 10) t = GGUF_T_Q3_K;
        else if (ft == 12) t = GGUF_T_Q4_K;
        else if (ft == 13) t = GGUF_T_Q5_K;
    } else if (has(name, len, "ffn_up") || has(name, len, "ffn_gate")) {
        /* the base type */
    } else if (has(name, len, "ffn_down")) {
        if (ft == 10) t = GGUF_T_Q3_K;
        else if (ft == 12) t = layer < n / 16 ? GGUF_T_Q5_K : GGUF_T_Q4_K;
        else if (ft == 13) t = GGUF_T_Q5_K;
        else if (ft == 15 && use_more_bits(layer, n)) t = GGUF_T_Q6_K;
        else if (ft == 17 && use_more_bits(layer, n)) t = GGUF_T_Q6_K;
        else if (ft == 14 && layer < n / 8) t = GGUF_T_Q5_K;
        else if ((ft == 2 || ft == 8) && m->imatrix && layer < n / 8) t = ft == 2 ? GGUF_T_Q4_1 : GGUF_T_Q5_1;
    }
    return fallback(t, ne0);
}
