/* mixture.c -- general.file_type from a mixture of tensor types; see mixture.h. */
#include <config.h>

#include <string.h>

#include "gguf/gguf.h"
#include "tools/mixture.h"

/* The file type named after each base type; -1 where none is. */
static long base_file_type(uint32_t type)
{
    switch (type) {
    case GGUF_T_F32: return 0;          /* ALL_F32 */
    case GGUF_T_F16: return 1;
    case GGUF_T_Q4_0: return 2;
    case GGUF_T_Q4_1: return 3;
    case GGUF_T_Q8_0: return 7;
    case GGUF_T_Q5_0: return 8;
    case GGUF_T_Q5_1: return 9;
    case GGUF_T_Q2_K: return 10;        /* variants decided by the caller */
    case GGUF_T_Q3_K: return 12;
    case GGUF_T_Q4_K: return 15;
    case GGUF_T_Q5_K: return 17;
    case GGUF_T_Q6_K: return 18;
    case GGUF_T_IQ2_XXS: return 19;
    case GGUF_T_IQ2_XS: return 20;
    case GGUF_T_IQ3_XXS: return 23;
    case GGUF_T_IQ1_S: return 24;
    case GGUF_T_IQ4_NL: return 25;
    case GGUF_T_IQ3_S: return 26;
    case GGUF_T_IQ2_S: return 28;
    case GGUF_T_IQ4_XS: return 30;
    case GGUF_T_IQ1_M: return 31;
    case GGUF_T_BF16: return 32;
    case GGUF_T_Q4_0_4_4: return 33;
    case GGUF_T_Q4_0_4_8: return 34;
    case GGUF_T_Q4_0_8_8: return 35;
    case GGUF_T_TQ1_0: return 36;
    case GGUF_T_TQ2_0: return 37;
    case GGUF_T_MXFP4: return 38;
    case GGUF_T_NVFP4: return 39;
    case GGUF_T_Q1_0: return 40;
    default: return -1;
    }
}

/* Bits per weight of a type; 0 for an unknown id. */
static double bpw(uint32_t type)
{
    const gguf_type_info *ti = gguf_type_get(type);
    return ti && ti->block_size ? 8.0 * ti->type_size / ti->block_size : 0.0;
}

/* 1 for block-quantized types with 256-element blocks. */
static int is_super_block(uint32_t type)
{
    const gguf_type_info *ti = gguf_type_get(type);
    return ti && ti->quantized && ti->block_size == 256;
}

/* 1 for the types llama.cpp puts in place of a 256-block type when the
 * row length does not allow one. */
static int is_fallback(uint32_t type)
{
    return type == GGUF_T_Q4_0 || type == GGUF_T_Q5_0 || type == GGUF_T_Q5_1 ||
           type == GGUF_T_Q8_0 || type == GGUF_T_IQ4_NL;
}

static int name_is(const struct mixture_tensor *t, const char *s)
{
    size_t n = strlen(s);
    return t->name_len == n && memcmp(t->name, s, n) == 0;
}

static int name_ends(const struct mixture_tensor *t, const char *s)
{
    size_t n = strlen(s);
    return t->name_len >= n && memcmp(t->name + t->name_len - n, s, n) == 0;
}

static int name_has(const struct mixture_tensor *t, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= t->name_len; i++)
        if (memcmp(t->name + i, s, n) == 0) return 1;
    return 0;
}

static int is_special(const struct mixture_tensor *t)
{
    return name_is(t, "token_embd.weight") || name_is(t, "output.weight");
}

/* Which tensors take part in choosing the base type (steps 1 to 3): all
 * weights (0), without the special tensors, without the fallbacks. */
enum { USE_NO_SPECIALS = 1, USE_NO_FALLBACKS = 2 };

/* 1 when tensor t takes part under the `use` flags. */
static int counts(const struct mixture_tensor *t, unsigned use)
{
    if (t->n_dims < 2 || t->type >= GGUF_T_COUNT) return 0;
    if ((use & USE_NO_SPECIALS) && is_special(t)) return 0;
    if ((use & USE_NO_FALLBACKS) && t->ne0 % 256 != 0 && is_fallback(t->type)) return 0;
    return 1;
}

long mixture_file_type(const struct mixture_tensor *ts, size_t n)
{
    /* Steps 1 and 2: weights, without the special tensors when others exist. */
    unsigned use = 0;
    size_t n_body = 0, n_weights = 0;
    for (size_t i = 0; i < n; i++) {
        n_weights += counts(&ts[i], use);
        n_body += counts(&ts[i], USE_NO_SPECIALS);
    }
    if (n_weights == 0) return -1;
    if (n_body > 0) use |= USE_NO_SPECIALS;

    /* Step 3: leave out the fallbacks when a 256-block type is present. */
    int super = 0;
    size_t n_left = 0;
    for (size_t i = 0; i < n; i++)
        if (counts(&ts[i], use) && is_super_block(ts[i].type)) super = 1;
    if (super) {
        for (size_t i = 0; i < n; i++) n_left += counts(&ts[i], use | USE_NO_FALLBACKS);
        if (n_left > 0) use |= USE_NO_FALLBACKS;
    }

    /* Step 4: the base type. */
    uint64_t elems[GGUF_T_COUNT] = { 0 };
    for (size_t i = 0; i < n; i++)
        if (counts(&ts[i], use)) elems[ts[i].type] += ts[i].n_elements;
    int base = -1;
    for (int t = 0; t < GGUF_T_COUNT; t++) {
        if (elems[t] == 0) continue;
        if (base < 0 || elems[t] > elems[base] ||
            (elems[t] == elems[base] && bpw((uint32_t)t) < bpw((uint32_t)base)))
            base = t;
    }
    if (base < 0) {
        /* Only empty tensors: take the first weight's type. */
        for (size_t i = 0; i < n && base < 0; i++)
            if (counts(&ts[i], use)) base = (int)ts[i].type;
    }
    long ft = base_file_type((uint32_t)base);
    if (ft < 0) return -1;

    /* Step 5: the variants, from attn_v and ffn_down. */
    double b = bpw((uint32_t)base), q5k = bpw(GGUF_T_Q5_K);
    uint64_t av = 0, av_up = 0, av_hi = 0, down = 0, down_q5 = 0;
    for (size_t i = 0; i < n; i++) {
        const struct mixture_tensor *t = &ts[i];
        if (!counts(t, use)) continue;
        int is_down = name_has(t, "ffn_down");
        if (!is_down && !name_ends(t, "attn_v.weight")) continue;
        double tb = bpw(t->type);
        av += t->n_elements;
        if (tb > b) av_up += t->n_elements;
        if (tb > q5k) av_hi += t->n_elements;
        if (is_down) {
            down += t->n_elements;
            if (tb >= q5k) down_q5 += t->n_elements;
        }
    }
    switch (base) {
    case GGUF_T_Q2_K: return av_up * 2 > av ? 10 : 21;
    case GGUF_T_Q3_K:
        if (av_up == 0) return 11;
        return down_q5 * 2 > down ? 13 : 12;
    case GGUF_T_Q4_K: return av_hi > 0 ? 15 : 14;
    case GGUF_T_Q5_K: return av_hi > 0 ? 17 : 16;
    default: return ft;
    }
}
