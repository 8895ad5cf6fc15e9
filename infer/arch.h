/*
 * arch.h -- the model architectures qwen-run runs, as data.
 *
 * One table per architecture says what its GGUF files hold: the
 * hyperparameters (keys "ARCH.name", with their limits and defaults), the
 * tensors (names, shapes in named dimensions, which are optional) and
 * flags for what the graph does differently.  The model loader binds its
 * weights from the table and gguf-verify --model checks a file against the
 * same table (both through infer/model.c), so the two give one answer.
 *
 *   qwen2  Qwen2 and Qwen2.5 (0.5B ... 72B, Instruct and Coder): Q, K and V
 *          projections with biases; head width = width / heads.
 *   qwen3  dense Qwen3 (0.6B ... 32B): no biases; an RMSNorm over each head
 *          of Q and of K before RoPE (attn_q_norm, attn_k_norm); the head
 *          width from qwen3.attention.key_length (128), independent of the
 *          model width, so that Q is heads x 128 wide (2048 at 0.6B, whose
 *          width is 1024).
 *
 * Both tie the output matrix to the embeddings when output.weight is
 * absent, and use the NeoX RoPE arrangement.
 */
#ifndef INFER_ARCH_H
#define INFER_ARCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Hyperparameters, the same index in every table (an architecture without
 * the key has a NULL name there). */
enum qwen_hp {
    QWEN_HP_LAYER,      /* block_count */
    QWEN_HP_CTX,        /* context_length */
    QWEN_HP_EMBD,       /* embedding_length */
    QWEN_HP_FF,         /* feed_forward_length */
    QWEN_HP_HEAD,       /* attention.head_count */
    QWEN_HP_HEAD_KV,    /* attention.head_count_kv */
    QWEN_HP_KEY_LEN,    /* attention.key_length: the head width of Q and K */
    QWEN_HP_VALUE_LEN,  /* attention.value_length: the head width of V */
    QWEN_HP_ROPE_BASE,  /* rope.freq_base */
    QWEN_HP_EPS,        /* attention.layer_norm_rms_epsilon */
    QWEN_HP_COUNT
};

enum qwen_hp_kind { QWEN_HP_UINT, QWEN_HP_FLOAT };

/* Where an absent optional hyperparameter takes its value from (def_from):
 * a constant, another hyperparameter (its index), or width / heads. */
#define QWEN_DEF_CONST (-1)
#define QWEN_DEF_HEAD_WIDTH (-2)

/* A hyperparameter: key "ARCH.name", stored at `field` of qwen_config
 * (uint32_t for QWEN_HP_UINT, float for QWEN_HP_FLOAT). */
typedef struct qwen_hparam {
    const char *name;       /* NULL: not a key of this architecture, which always
                             * takes the default */
    enum qwen_hp_kind kind;
    size_t field;
    double lo, hi;          /* UINT: lo..hi; FLOAT: (0, hi] (lo unused) */
    int required;
    int def_from;           /* when absent: QWEN_DEF_* or a hyperparameter's index */
    double def;             /* the constant of QWEN_DEF_CONST */
    uint32_t llama_type;    /* the value type llama.cpp insists on */
} qwen_hparam;

/* The named dimensions tensor shapes are written in. */
enum qwen_dim {
    QWEN_DIM_EMBD,      /* the model width */
    QWEN_DIM_Q,         /* heads x head width: the width of Q and of attention's output */
    QWEN_DIM_KV,        /* KV heads x head width: the width of K and V */
    QWEN_DIM_HEAD,      /* the head width */
    QWEN_DIM_FF,        /* the feed-forward width */
    QWEN_DIM_VOCAB,     /* the vocabulary: rows of token_embd.weight */
    QWEN_DIM_COUNT,
    QWEN_DIM_NONE = QWEN_DIM_COUNT
};

/* Tensor rule flags. */
#define QWEN_T_LAYER 1u     /* one per layer: the name has a %u for the layer number */
#define QWEN_T_OPTIONAL 2u  /* may be absent */
#define QWEN_T_F32 4u       /* read in place as F32 (norms, biases), so F32 and 4-byte
                             * aligned; else any type gguf_can_dequantize() accepts */

/* A tensor: shape (ne[0]) or (ne[0], ne[1]) in ggml order, bound to
 * `field` of qwen_layer (QWEN_T_LAYER) or qwen_weights: a qwen_matrix, or
 * for QWEN_T_F32 a const float pointer. */
typedef struct qwen_tensor_rule {
    const char *name;
    unsigned flags;
    enum qwen_dim ne[2];
    size_t field;
} qwen_tensor_rule;

/* Architecture flags: what the graph does. */
#define QWEN_ARCH_QKV_BIAS 1u   /* Q, K and V projections add a bias */
#define QWEN_ARCH_QK_NORM 2u    /* an RMSNorm over each head of Q and K before RoPE */
#define QWEN_ARCH_HEAD_KEY 4u   /* the head width is a key (key_length), not width / heads */
#define QWEN_ARCH_TIED 8u       /* output.weight may be absent: token_embd serves */

/* The chat template an architecture's instruct models use. */
enum qwen_chat_style {
    QWEN_CHAT_CHATML,       /* ChatML with a default system prompt (Qwen2.5) */
    QWEN_CHAT_CHATML_THINK  /* ChatML with a thinking block, no default system prompt (Qwen3) */
};

typedef struct qwen_arch {
    const char *name;                   /* general.architecture */
    const qwen_hparam *hparams;         /* QWEN_HP_COUNT entries */
    const qwen_tensor_rule *tensors;    /* global ones first */
    size_t n_tensors;
    unsigned flags;                     /* QWEN_ARCH_* */
    enum qwen_chat_style chat;
} qwen_arch;

/* The architecture of that name (len bytes, need not be terminated), or
 * NULL when it is not supported. */
const qwen_arch *qwen_arch_find(const char *name, size_t len);

/* The supported architectures' names, "qwen2, qwen3", for messages. */
const char *qwen_arch_names(void);

/* The i-th supported architecture (0 ..), NULL past the last. */
const qwen_arch *qwen_arch_at(size_t i);

#ifdef __cplusplus
}
#endif

#endif /* INFER_ARCH_H */
