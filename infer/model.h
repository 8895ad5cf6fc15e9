/*
 * model.h -- a Qwen model: hyperparameters and weights.
 *
 * A model is read from a GGUF file whose general.architecture is one of
 * the architectures of infer/arch.h ("qwen2": Qwen2.5 0.5B ... 72B and
 * their Instruct and Coder variants; "qwen3": dense Qwen3).  The file is
 * memory-mapped by libgguf and every weight points into the mapping: nothing
 * is copied.  Every hyperparameter is checked before anything is sized from
 * it, and every tensor's type and shape before it is bound.
 *
 * Tensor shapes are written in ggml order, (ne0, ne1): ne0 is the length of
 * one row (the input width of a matrix), ne1 the number of rows (its output
 * width).  A matrix of shape (n_embd, n_vocab) has n_vocab rows of n_embd.
 *
 * What a file of each architecture must hold (keys with their limits and
 * defaults, tensors with shapes in named dimensions) is its table in
 * arch.c, which both the loader and qwen_model_check() (gguf-verify
 * --model) read.
 *
 * Statuses are those of <gguf/gguf.h>; the error message names the file,
 * the key or tensor and its byte offset, ready to print after "prog: ".
 */
#ifndef QWEN_MODEL_H
#define QWEN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "infer/arch.h"
#include "infer/check.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits of what the loader accepts.  Far above any Qwen2 or Qwen3 model
 * (the largest, Qwen2.5 72B, has 80 layers, width 8192, FFN 29568, 64
 * heads, a vocabulary of 152064 and a context of 131072), low enough that no size computed from
 * them overflows 64 bits. */
#define QWEN_MAX_LAYERS 1024u
#define QWEN_MAX_EMBD 65536u
#define QWEN_MAX_FF 1048576u
#define QWEN_MAX_HEADS 1024u
#define QWEN_MAX_HEAD_DIM 1024u
#define QWEN_MAX_VOCAB 16777216u
#define QWEN_MAX_CTX 16777216u

/* Hyperparameters (the ARCH.* keys; n_vocab from token_embd). */
typedef struct qwen_config {
    const qwen_arch *arch;  /* general.architecture */
    uint32_t n_layer;       /* ARCH.block_count */
    uint32_t n_ctx_train;   /* ARCH.context_length */
    uint32_t n_embd;        /* ARCH.embedding_length */
    uint32_t n_ff;          /* ARCH.feed_forward_length */
    uint32_t n_head;        /* ARCH.attention.head_count */
    uint32_t n_head_kv;     /* ARCH.attention.head_count_kv (default n_head) */
    uint32_t head_dim;      /* qwen3.attention.key_length, else n_embd / n_head; even
                             * (RoPE rotates pairs) */
    uint32_t head_dim_v;    /* qwen3.attention.value_length: equal to head_dim */
    uint32_t n_q;           /* n_head * head_dim: width of Q and of attention's output */
    uint32_t n_kv;          /* n_head_kv * head_dim: width of K and V */
    uint32_t n_vocab;       /* rows of token_embd.weight */
    float rope_base;        /* ARCH.rope.freq_base (default 10000) */
    float rms_eps;          /* ARCH.attention.layer_norm_rms_epsilon */
} qwen_config;

/* A weight matrix of `rows` rows of `cols` elements of ggml type `type`,
 * each row row_bytes long, rows contiguous; data points into the mapped
 * file.  Any type gguf_can_dequantize() accepts. */
typedef struct qwen_matrix {
    const void *data;
    uint32_t type;
    uint64_t cols;          /* ne0 */
    uint64_t rows;          /* ne1 */
    size_t row_bytes;
    const void *il;         /* the same rows interleaved for the SIMD level in use
                             * (gguf_interleave_rows()), in a CPU backend's copy of
                             * the weights; NULL in the model's */
} qwen_matrix;

/* One transformer block.  Vectors are F32, read in place; those the
 * architecture has not are NULL. */
typedef struct qwen_layer {
    const float *attn_norm;  /* (n_embd) */
    qwen_matrix wq;          /* (n_embd, n_q) */
    const float *bq;         /* (n_q) qwen2 */
    const float *q_norm;     /* (head_dim) qwen3 */
    qwen_matrix wk;          /* (n_embd, n_kv) */
    const float *bk;         /* (n_kv) qwen2 */
    const float *k_norm;     /* (head_dim) qwen3 */
    qwen_matrix wv;          /* (n_embd, n_kv) */
    const float *bv;         /* (n_kv) qwen2 */
    qwen_matrix wo;          /* (n_q, n_embd) */
    const float *ffn_norm;   /* (n_embd) */
    qwen_matrix w_gate;      /* (n_embd, n_ff) */
    qwen_matrix w_up;        /* (n_embd, n_ff) */
    qwen_matrix w_down;      /* (n_ff, n_embd) */
} qwen_layer;

typedef struct qwen_weights {
    qwen_matrix token_embd;  /* (n_embd, n_vocab) */
    qwen_layer *layers;      /* (n_layer) */
    const float *output_norm; /* (n_embd) */
    qwen_matrix output;      /* (n_embd, n_vocab): output.weight, or token_embd when tied */
    int tied;                /* 1: the file has no output.weight */
} qwen_weights;

typedef struct qwen_model {
    gguf_split *set;         /* owns the mappings every weight points into */
    gguf_file *file;         /* its first shard (the only one of a plain file): the metadata */
    qwen_config config;
    qwen_weights weights;
} qwen_model;

/* Reads and checks the hyperparameters of the open file f.
 *
 * general.architecture must be one of arch.h's; the ARCH.* keys of its
 * table must be integers (any width) or F32 as listed, within the
 * QWEN_MAX_* limits and consistent (an even head_dim: key_length where
 * the architecture has it and the file gives it, else n_embd divided by
 * n_head without remainder; value_length equal to it; n_head divisible by
 * n_head_kv; a finite rope base and epsilon > 0).  n_vocab is
 * taken from token_embd.weight, whose shape is checked here too, and
 * tokenizer.ggml.tokens, when it is an array of strings, must not hold
 * more tokens than that.  Every error is an item of the file with its byte
 * offset.
 *
 * Returns GGUF_OK; GGUF_E_UNSUPPORTED for another architecture (the
 * message names it and the supported ones);
 * GGUF_E_NOT_FOUND for a missing required key or token_embd.weight;
 * GGUF_E_FORMAT for a value of the wrong type or out of range;
 * GGUF_E_INVALID for NULL arguments. */
int qwen_config_read(const gguf_file *f, qwen_config *cfg, gguf_error *err);

/* qwen_config_read() of an open split set (or single file): the metadata
 * of its first shard, token_embd.weight from whichever holds it. */
int qwen_config_read_set(const gguf_split *set, qwen_config *cfg, gguf_error *err);

/* Checks that the open file f holds a model of architecture `arch` (NULL:
 * any of arch.h's) that qwen_model_open() and
 * qwen_tokenizer_load() accept, with their own checks: byte order, the
 * hyperparameters (qwen_config_read), every tensor's presence, shape and
 * type, and the tokenizer metadata.  Tensor data is not read, so f may be
 * a stream; the loaders' demands on the input itself (a mapping) are not
 * checked.  Each problem and each note (what llama.cpp would refuse: a
 * hyperparameter of another integer type than UINT32, a tensor the
 * architecture does not use) goes to c, see check.h; the check goes on
 * past a problem as far as the values it needs allow.
 *
 * Returns c->status: GGUF_OK when no problem was found, else the status
 * of the first (the statuses of qwen_config_read, qwen_model_open and
 * qwen_tokenizer_load); GGUF_E_NOMEM; GGUF_E_INVALID for NULL arguments. */
int qwen_model_check(const gguf_file *f, const char *arch, qwen_check *c);

/* The same for a split set (gguf_split_open()): the metadata of its first
 * shard, the tensors of all. */
int qwen_model_check_split(const gguf_split *s, const char *arch, qwen_check *c);

/* Opens the GGUF file at `path` (memory-mapped), or the split set it is a
 * shard of (gguf_split_open(): each shard mapped), reads its configuration
 * and binds every weight by name.
 *
 * Required tensors: those of the architecture's table (arch.c):
 * token_embd.weight, output_norm.weight, and for each layer i
 * blk.i.{attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm,
 * ffn_gate, ffn_up, ffn_down}.weight, with blk.i.attn_{q,k,v}.bias for
 * qwen2 and blk.i.attn_{q,k}_norm.weight for qwen3; output.weight is
 * optional (tied embeddings).  Matrices may have any type
 * gguf_can_dequantize() accepts; norms and biases must be F32, 4-byte
 * aligned in the file.
 *
 * Returns GGUF_OK and stores the model in *out (free it with
 * qwen_model_close), or: the statuses of gguf_split_open() and
 * qwen_config_read(); GGUF_E_NOT_FOUND for a missing tensor;
 * GGUF_E_FORMAT for a tensor of the wrong shape or (norms, biases) type;
 * GGUF_E_UNSUPPORTED for a matrix type that cannot be computed, a
 * big-endian file, input that cannot be mapped (a pipe or other stream,
 * gzip-compressed input: the model must be a regular, uncompressed file,
 * "-" included when standard input is one) or misaligned F32 data; GGUF_E_NOMEM; GGUF_E_INVALID for NULL arguments.  *out is NULL on
 * failure. */
int qwen_model_open(qwen_model **out, const char *path, gguf_error *err);

/* Releases the model and unmaps its file.  NULL is allowed. */
void qwen_model_close(qwen_model *m);

/* The widest input of the model's matrix products: max(n_embd, n_q,
 * n_ff), which every backend sizes its activation buffers by. */
uint64_t qwen_widest_input(const qwen_config *c);

/* cs (head_dim) = the cos and sin of the angle of each of the head_dim/2
 * RoPE pairs at position pos: pos * base^(-2i/head_dim) for pair i, the
 * angle made by successive multiplication as the reference engine does.
 * Every backend rotates by these angles. */
void qwen_rope_angles(float *cs, uint32_t pos, uint32_t head_dim, float base);

#ifdef __cplusplus
}
#endif

#endif /* QWEN_MODEL_H */
