/*
 * cpu.h -- the CPU backend's state and the building blocks its graphs are
 * made of; internal to infer/cpu/.
 *
 * Activations of a batch of n tokens are stored token after token: a
 * buffer of shape (w, n) holds n vectors of w floats, token t at t * w.
 * The key/value cache holds, per layer, sequence and KV head, n_ctx
 * positions of head_dim F16 values (cpu_cache_at()).
 *
 * Threads (OpenMP): each product splits the rows of its matrices among the
 * threads, attention splits its (token, head) pairs, the feed-forward its
 * elements, and the steps done token by token their tokens (from
 * ROWS_SHARED of them, ops.c); the rest (embeddings, RoPE angles, the
 * gathering of the rows that want logits) runs on one thread.
 */
#ifndef QWEN_CPU_H
#define QWEN_CPU_H

#include <stdint.h>

#include "infer/context.h"
#include "infer/model.h"

/* The activation types of the quantized products. */
enum { CPU_ACT_Q8_K, CPU_ACT_Q8_0, CPU_ACT_Q8_1, CPU_N_ACT };

struct cpu_state;

/* One layer of an architecture's graph for the batch b: reads and updates
 * the residual stream s->x (the last layer leaves in it only the rows
 * that want logits, in order: graph.c). */
typedef void (*cpu_layer_fn)(struct cpu_state *s, uint32_t l, const qwen_batch *b);

struct cpu_state {
    const qwen_model *m;
    qwen_weights w;         /* the model's weights as the backend reads them: matrices
                             * with il set where they were repacked (repack_weights()) */
    void *il_mem;           /* the repacked copies, one after the other, to free */
    uint64_t il_bytes;      /* their bytes (the matrices', as gguf-dump --estimate
                             * counts them; the allocation rounds up to 2 MiB) */
    cpu_layer_fn layer;     /* the architecture's layer */
    uint32_t n_ctx, n_seq, n_batch;
    float *x;               /* (n_embd, n_batch) the residual stream */
    float *xb;              /* (n_embd, n_batch) normed input of a sublayer */
    float *q;               /* (n_q, n_batch) queries */
    float *k;               /* (n_kv, n_batch) keys */
    float *v;               /* (n_kv, n_batch) values */
    float *ao;              /* (n_q, n_batch) attention output, before projection */
    float *gate;            /* (n_ff, n_batch) */
    float *up;              /* (n_ff, n_batch) */
    float *rope;            /* (head_dim, n_batch) cos, sin of each pair's angle */
    float *att;             /* (n_ctx, heads per KV head, n_threads) attention weights, per thread */
    float *rows;            /* (widest input, n_threads) a dequantized weight row, per thread */
    void *act[CPU_N_ACT];   /* (act_size(widest input), n_batch) a product's quantized
                             * input, per activation type the model's matrices use */
    uint32_t act_wtype[CPU_N_ACT]; /* a weight type of each activation type, for sizes */
    void *packed;           /* (gguf_matmul_pack_size() of the widest input, n_batch) a
                             * Q8_K or Q8_0 input packed once for the products that take
                             * it (quant.h), 64-byte aligned; NULL: none at this SIMD level */
    size_t packed_cap;
    int plain;              /* 1: every product in float over dequantized rows */
    int n_threads;
    uint16_t *k_cache;      /* (head_dim, n_ctx, n_head_kv, n_seq, n_layer) F16: cpu_cache_at() */
    uint16_t *v_cache;      /* the same */
    uint64_t kv_bytes;      /* of k_cache and v_cache */
    uint64_t compute_bytes; /* of the other buffers but the per-thread ones */
    uint64_t thread_bytes;  /* of att and rows */
};

/* The index of activation type act_type (GGUF_T_Q8_K ...), -1 for none. */
int cpu_act_index(uint32_t act_type);

/* The layer function of architecture a, NULL when the CPU has none. */
cpu_layer_fn cpu_graph_layer(const qwen_arch *a);

/* Decodes the checked batch b; the logits of the entries that want them
 * into logits, in order (graph.c). */
void cpu_decode_step(struct cpu_state *s, const qwen_batch *b, float *logits);

/* --- building blocks (ops.c) --- */

/* Most products in one cpu_matmul() call. */
#define CPU_MAX_PRODUCTS 3

/* One product: out (w->rows, n) = w times the input. */
struct cpu_product {
    const qwen_matrix *w;
    float *out;
};

/* The np products p[] of the n vectors of `in` (all matrices of the same
 * width), on the state's threads. */
void cpu_matmul(struct cpu_state *s, const float *in, uint32_t n, const struct cpu_product *p,
                int np);

/* out (n_embd, n) = RMSNorm of each of the n vectors of x with weight. */
void cpu_rmsnorm_rows(const struct cpu_state *s, float *out, const float *x, const float *weight,
                      uint32_t n);

/* s->rope gets the RoPE angles of each entry's position. */
void cpu_rope_angles(struct cpu_state *s, const qwen_batch *b);

/* q += bq, k += bk, v += bv for the n tokens. */
void cpu_qkv_bias(struct cpu_state *s, const qwen_layer *L, uint32_t n);

/* An RMSNorm over each head of q (weight q_norm) and of k (k_norm). */
void cpu_qk_norm(struct cpu_state *s, const qwen_layer *L, uint32_t n);

/* RoPE on every head of q and k of the n tokens. */
void cpu_rope_qk(struct cpu_state *s, uint32_t n);

/* Where the keys (in k_cache) and values (v_cache) of KV head h of layer
 * l, sequence seq start: the head's rows for positions 0 .. n_ctx - 1
 * follow each other, head_dim halves each, so that attention reads each
 * head's as one stream. */
static inline uint64_t cpu_cache_at(const struct cpu_state *s, uint32_t l, int32_t seq, uint32_t h)
{
    const qwen_config *c = &s->m->config;
    return (((uint64_t)l * s->n_seq + (uint32_t)seq) * c->n_head_kv + h) * s->n_ctx * c->head_dim;
}

/* k and v of each entry of b into layer l's cache at its sequence and
 * position (no two entries share both: qwen_decode() checks). */
void cpu_store_kv(struct cpu_state *s, uint32_t l, const qwen_batch *b);

/* s->ao gets the attention of layer l for each entry of b over the
 * positions 0 .. its own of its sequence. */
void cpu_attention(struct cpu_state *s, uint32_t l, const qwen_batch *b);

/* gate (n) = silu(gate) * up, on the state's threads. */
void cpu_swiglu(struct cpu_state *s, uint64_t n);

/* x (n_embd, n) += y. */
void cpu_add(const struct cpu_state *s, float *x, const float *y, uint32_t n);

#endif /* QWEN_CPU_H */
