/*
 * arch.c -- the tables of qwen2 and qwen3 (see arch.h).
 */
#include <config.h>

#include <string.h>

#include "infer/arch.h"
#include "infer/model.h"

#define CFG(f) offsetof(qwen_config, f)
#define W(f) offsetof(qwen_weights, f)
#define L(f) offsetof(qwen_layer, f)

/* The keys both architectures share. */
#define COMMON_HPARAMS                                                                         \
    [QWEN_HP_LAYER] = {"block_count", QWEN_HP_UINT, CFG(n_layer), 1, QWEN_MAX_LAYERS, 1,      \
                       QWEN_DEF_CONST, 0, GGUF_VT_UINT32},                                     \
    [QWEN_HP_CTX] = {"context_length", QWEN_HP_UINT, CFG(n_ctx_train), 1, QWEN_MAX_CTX, 1,    \
                     QWEN_DEF_CONST, 0, GGUF_VT_UINT32},                                       \
    [QWEN_HP_EMBD] = {"embedding_length", QWEN_HP_UINT, CFG(n_embd), 2, QWEN_MAX_EMBD, 1,     \
                      QWEN_DEF_CONST, 0, GGUF_VT_UINT32},                                      \
    [QWEN_HP_FF] = {"feed_forward_length", QWEN_HP_UINT, CFG(n_ff), 1, QWEN_MAX_FF, 1,        \
                    QWEN_DEF_CONST, 0, GGUF_VT_UINT32},                                        \
    [QWEN_HP_HEAD] = {"attention.head_count", QWEN_HP_UINT, CFG(n_head), 1, QWEN_MAX_HEADS,   \
                      1, QWEN_DEF_CONST, 0, GGUF_VT_UINT32},                                   \
    [QWEN_HP_HEAD_KV] = {"attention.head_count_kv", QWEN_HP_UINT, CFG(n_head_kv), 1,          \
                         QWEN_MAX_HEADS, 0, QWEN_HP_HEAD, 0, GGUF_VT_UINT32},                  \
    [QWEN_HP_ROPE_BASE] = {"rope.freq_base", QWEN_HP_FLOAT, CFG(rope_base), 0, 1e30, 0,       \
                           QWEN_DEF_CONST, 10000.0, GGUF_VT_FLOAT32},                          \
    [QWEN_HP_EPS] = {"attention.layer_norm_rms_epsilon", QWEN_HP_FLOAT, CFG(rms_eps), 0, 1.0, \
                     1, QWEN_DEF_CONST, 0, GGUF_VT_FLOAT32}

/* ------------------------------------------------------------------------ */
/* qwen2                                                                     */

/* No head width keys: the head width is width / heads. */
static const qwen_hparam qwen2_hparams[QWEN_HP_COUNT] = {
    COMMON_HPARAMS,
    [QWEN_HP_KEY_LEN] = {NULL, QWEN_HP_UINT, CFG(head_dim), 0, 0, 0, QWEN_DEF_HEAD_WIDTH, 0, 0},
    [QWEN_HP_VALUE_LEN] = {NULL, QWEN_HP_UINT, CFG(head_dim_v), 0, 0, 0, QWEN_HP_KEY_LEN, 0, 0},
};

static const qwen_tensor_rule qwen2_tensors[] = {
    {"token_embd.weight", 0, {QWEN_DIM_EMBD, QWEN_DIM_VOCAB}, W(token_embd)},
    {"output_norm.weight", QWEN_T_F32, {QWEN_DIM_EMBD, QWEN_DIM_NONE}, W(output_norm)},
    {"output.weight", QWEN_T_OPTIONAL, {QWEN_DIM_EMBD, QWEN_DIM_VOCAB}, W(output)},
    {"blk.%u.attn_norm.weight", QWEN_T_LAYER | QWEN_T_F32, {QWEN_DIM_EMBD, QWEN_DIM_NONE},
     L(attn_norm)},
    {"blk.%u.attn_q.weight", QWEN_T_LAYER, {QWEN_DIM_EMBD, QWEN_DIM_Q}, L(wq)},
    {"blk.%u.attn_q.bias", QWEN_T_LAYER | QWEN_T_F32, {QWEN_DIM_Q, QWEN_DIM_NONE}, L(bq)},
    {"blk.%u.attn_k.weight", QWEN_T_LAYER, {QWEN_DIM_EMBD, QWEN_DIM_KV}, L(wk)},
    {"blk.%u.attn_k.bias", QWEN_T_LAYER | QWEN_T_F32, {QWEN_DIM_KV, QWEN_DIM_NONE}, L(bk)},
    {"blk.%u.attn_v.weight", QWEN_T_LAYER, {QWEN_DIM_EMBD, QWEN_DIM_KV}, L(wv)},
    {"blk.%u.attn_v.bias", QWEN_T_LAYER | QWEN_T_F32, {QWEN_DIM_KV, QWEN_DIM_NONE}, L(bv)},
    {"blk.%u.attn_output.weight", QWEN_T_LAYER, {QWEN_DIM_Q, QWEN_DIM_EMBD}, L(wo)},
    {"blk.%u.ffn_norm.weight", QWEN_T_LAYER | QWEN_T_F32, {QWEN_DIM_EMBD, QWEN_DIM_NONE},
     L(ffn_norm)},
    {"blk.%u.ffn_gate.weight", QWEN_T_LAYER, {QWEN_DIM_EMBD, QWEN_DIM_FF}, L(w_gate)},
    {"blk.%u.ffn_up.weight", QWEN_T_LAYER, {QWEN_DIM_EMBD, QWEN_DIM_FF}, L(w_up)},
    {"blk.%u.ffn_down.weight", QWEN_T_LAYER, {QWEN_DIM_FF, QWEN_DIM_EMBD}, L(w_down)},
};

/* ------------------------------------------------------------------------ */
/* qwen3                                                                     */

/* key_length defaults to width / heads, as llama.cpp reads it; a value
 * width other than the key width is refused by the loader. */
static const qwen_hparam qwen3_hparams[QWEN_HP_COUNT] = {
    COMMON_HPARAMS,
    [QWEN_HP_KEY_LEN] = {"attention.key_length", QWEN_HP_UINT, CFG(head_dim), 2,
                         QWEN_MAX_HEAD_DIM, 0, QWEN_DEF_HEAD_WIDTH, 0, GGUF_VT_UINT32},
    [QWEN_HP_VALUE_LEN] = {"attention.value_length", QWEN_HP_UINT, CFG(head_dim_v), 2,
                           QWEN_MAX_HEAD_DIM, 0, QWEN_HP_KEY_LEN, 0, GGUF_VT_UINT32},
};

static const qwen_tensor_rule qwen3_tensors[] = {
    {"token_embd.weight", 0, {QWEN_DIM_EMBD, QWEN_DIM_VOCAB}, W(token_embd)},
    {"output_norm.weight", QWEN_T_F32, {QWEN_DIM_EMBD, QWEN_DIM_NONE}, W(output_norm)},
    {"output.weight", QWEN_T_OPTIONAL, {QWEN_DIM_EMBD, QWEN_DIM_VOCAB}, W(output)},
    {"blk.%u.attn_norm.weight", QWEN_T_LAYER | QWEN_T_F32, {QWEN_DIM_EMBD, QWEN_DIM_NONE},
     L(attn_norm)},
    {"blk.%u.attn_q.weight", QWEN_T_LAYER, {QWEN_DIM_EMBD, QWEN_DIM_Q}, L(wq)},
    {"blk.%u.attn_q_norm.weight", QWEN_T_LAYER | QWEN_T_F32, {QWEN_DIM_HEAD, QWEN_DIM_NONE},
     L(q_norm)},
    {"blk.%u.attn_k.weight", QWEN_T_LAYER, {QWEN_DIM_EMBD, QWEN_DIM_KV}, L(wk)},
    {"blk.%u.attn_k_norm.weight", QWEN_T_LAYER | QWEN_T_F32, {QWEN_DIM_HEAD, QWEN_DIM_NONE},
     L(k_norm)},
    {"blk.%u.attn_v.weight", QWEN_T_LAYER, {QWEN_DIM_EMBD, QWEN_DIM_KV}, L(wv)},
    {"blk.%u.attn_output.weight", QWEN_T_LAYER, {QWEN_DIM_Q, QWEN_DIM_EMBD}, L(wo)},
    {"blk.%u.ffn_norm.weight", QWEN_T_LAYER | QWEN_T_F32, {QWEN_DIM_EMBD, QWEN_DIM_NONE},
     L(ffn_norm)},
    {"blk.%u.ffn_gate.weight", QWEN_T_LAYER, {QWEN_DIM_EMBD, QWEN_DIM_FF}, L(w_gate)},
    {"blk.%u.ffn_up.weight", QWEN_T_LAYER, {QWEN_DIM_EMBD, QWEN_DIM_FF}, L(w_up)},
    {"blk.%u.ffn_down.weight", QWEN_T_LAYER, {QWEN_DIM_FF, QWEN_DIM_EMBD}, L(w_down)},
};

/* ------------------------------------------------------------------------ */

#define N(a) (sizeof a / sizeof a[0])

static const qwen_arch archs[] = {
    {"qwen2", qwen2_hparams, qwen2_tensors, N(qwen2_tensors), QWEN_ARCH_QKV_BIAS | QWEN_ARCH_TIED,
     QWEN_CHAT_CHATML},
    {"qwen3", qwen3_hparams, qwen3_tensors, N(qwen3_tensors),
     QWEN_ARCH_QK_NORM | QWEN_ARCH_HEAD_KEY | QWEN_ARCH_TIED, QWEN_CHAT_CHATML_THINK},
};

const qwen_arch *qwen_arch_find(const char *name, size_t len)
{
    for (size_t i = 0; i < N(archs); i++)
        if (strlen(archs[i].name) == len && memcmp(archs[i].name, name, len) == 0)
            return &archs[i];
    return NULL;
}

const char *qwen_arch_names(void)
{
    return "qwen2, qwen3";
}

const qwen_arch *qwen_arch_at(size_t i)
{
    return i < N(archs) ? &archs[i] : NULL;
}
