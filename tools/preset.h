/*
 * preset.h -- llama-quantize's file types ("presets": Q4_K_M ...) built
 * from the types quant/ can write: which type each tensor of a model gets,
 * by llama.cpp's rules (src/llama-quant.cpp), with or without an
 * importance matrix,
 * for models of one expert (qwen2, qwen3, llama ...).  Not installed; used
 * by gguf-requant --preset and the model generator of the tests.
 *
 * The rules, per tensor (in llama-quantize's order of the categories):
 *  - only tensors of 2 or more dimensions whose names end in "weight" and
 *    hold no "_norm.weight" are converted (--pure and the overrides apply
 *    to those only); the others keep their type;
 *  - output.weight takes --output-tensor-type, token_embd.weight
 *    --token-embedding-type, when given;
 *  - with --pure, or a base type that is not a quantization (F16, BF16),
 *    every other tensor takes the base type, with no fallback below (a tensor
 *    whose rows are not whole blocks of it keeps its type, with a warning
 *    from gguf-requant, where llama-quantize aborts);
 *  - else the output matrix (output.weight, or token_embd.weight when the
 *    model has no output.weight) takes --output-tensor-type when given
 *    (so a tied token_embd does too), else Q8_0 when its rows are not
 *    whole blocks of the base type, else Q6_K unless the base type is Q8_0;
 *  - else attn_v, ffn_down and attn_output take more bits in some layers
 *    (use_more_bits(): the first and last eighth of the layers and every
 *    third between): Q2_K: attn_v Q4_K (4 or more query heads a KV head)
 *    or Q3_K, ffn_down Q3_K, attn_output Q3_K; Q3_K_M: attn_v Q5_K in the
 *    first two layers, else Q4_K, ffn_down Q5_K in the first sixteenth of
 *    the layers, else Q4_K, attn_output Q4_K; Q3_K_L: attn_v, ffn_down,
 *    attn_output Q5_K; Q4_K_M, Q5_K_M: attn_v and ffn_down Q6_K by
 *    use_more_bits(); Q4_K_S: attn_v Q5_K in layers 0-3, ffn_down Q5_K in
 *    the first eighth; 80-layer models (the 70B sizes): attn_v Q5_K for
 *    Q3_K or Q4_K; with an importance matrix, Q4_0 and Q5_0: ffn_down
 *    Q4_1 and Q5_1 in the first eighth of the layers;
 *  - a row that is not whole blocks of the type chosen falls back: Q4_K to
 *    Q5_0, Q5_K to Q5_1, Q6_K to Q8_0, Q2_K and Q3_K to Q4_0, and to F16
 *    when even that does not fit.
 */
#ifndef TOOLS_PRESET_H
#define TOOLS_PRESET_H

#include <stddef.h>
#include <stdint.h>

struct preset {
    const char *name;       /* "Q4_K_M" */
    long file_type;         /* general.file_type (llama_ftype) */
    uint32_t base;          /* ggml type of most tensors */
};

/* The preset named `name` (any case), or NULL. */
const struct preset *preset_find(const char *name);
/* The names, comma-separated, for messages. */
const char *preset_names(void);

/* What the rules need of the model and the options. */
struct preset_model {
    uint32_t n_layer;       /* ARCH.block_count */
    uint32_t n_gqa;         /* query heads per KV head (1 when unknown) */
    int tied;               /* no output.weight: token_embd is the output matrix */
    int pure;               /* --pure */
    uint32_t output_type;   /* --output-tensor-type, or GGUF_T_COUNT */
    uint32_t embd_type;     /* --token-embedding-type, or GGUF_T_COUNT */
    int imatrix;            /* quantized with an importance matrix */
};

/* The type tensor `name` (name_len bytes) of n_dims dims and rows of ne0
 * elements, now of type `type`, gets under preset p; `type` itself for
 * the tensors the rules leave alone. */
uint32_t preset_tensor_type(const struct preset *p, const struct preset_model *m, const char *name,
                            size_t name_len, uint32_t n_dims, uint64_t ne0, uint32_t type);

#endif /* TOOLS_PRESET_H */
