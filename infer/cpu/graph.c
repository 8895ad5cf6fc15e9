/*
 * graph.c -- the CPU graphs: the order of the steps of a layer, one short
 * function per architecture, and the decode step around them.
 */
#include <config.h>

#include <assert.h>
#include <string.h>

#include "infer/cpu/cpu.h"
#include "quant/quant.h"

/* Attention's output projection and the feed-forward, with their residual
 * additions: the second half of a layer, the same in both architectures. */
static void out_and_ffn(struct cpu_state *s, const qwen_layer *L, uint32_t n)
{
    const qwen_config *c = &s->m->config;
    if (n == 0) return;
    const struct cpu_product wo = {&L->wo, s->xb};
    cpu_matmul(s, s->ao, n, &wo, 1);
    cpu_add(s, s->x, s->xb, n);

    cpu_rmsnorm_rows(s, s->xb, s->x, L->ffn_norm, n);
    const struct cpu_product gate_up[2] = {{&L->w_gate, s->gate}, {&L->w_up, s->up}};
    cpu_matmul(s, s->xb, n, gate_up, 2);
    cpu_swiglu(s, (uint64_t)n * c->n_ff);
    const struct cpu_product down = {&L->w_down, s->xb};
    cpu_matmul(s, s->gate, n, &down, 1);
    cpu_add(s, s->x, s->xb, n);
}

/* The rows that the rest of layer l works on: all of the batch's, but in
 * the last layer only those that want logits, gathered in order in s->ao
 * and s->x (nothing after that layer reads the others' rows: their keys
 * and values are in the cache by then).  A prompt's last layer so takes
 * its output projection and feed-forward for one row, not for all. */
static uint32_t rows_onward(struct cpu_state *s, uint32_t l, const qwen_batch *b)
{
    const qwen_config *c = &s->m->config;
    if (l + 1 < c->n_layer) return b->n;
    uint32_t n = 0;
    for (uint32_t t = 0; t < b->n; t++)
        if (b->logits[t]) {
            if (n != t) {
                memcpy(s->x + (uint64_t)n * c->n_embd, s->x + (uint64_t)t * c->n_embd, c->n_embd * sizeof *s->x);
                memcpy(s->ao + (uint64_t)n * c->n_q, s->ao + (uint64_t)t * c->n_q, c->n_q * sizeof *s->ao);
            }
            n++;
        }
    return n;
}

/* Q, K, V of the normed input. */
static void project_qkv(struct cpu_state *s, const qwen_layer *L, uint32_t n)
{
    const struct cpu_product qkv[3] = {{&L->wq, s->q}, {&L->wk, s->k}, {&L->wv, s->v}};
    cpu_matmul(s, s->xb, n, qkv, 3);
}

/* qwen2: biased Q, K, V. */
static void qwen2_layer(struct cpu_state *s, uint32_t l, const qwen_batch *b)
{
    const qwen_layer *L = &s->w.layers[l];
    cpu_rmsnorm_rows(s, s->xb, s->x, L->attn_norm, b->n);
    project_qkv(s, L, b->n);
    cpu_qkv_bias(s, L, b->n);
    cpu_rope_qk(s, b->n);
    cpu_store_kv(s, l, b);
    cpu_attention(s, l, b);
    out_and_ffn(s, L, rows_onward(s, l, b));
}

/* qwen3: no biases; each head of Q and K normed before RoPE. */
static void qwen3_layer(struct cpu_state *s, uint32_t l, const qwen_batch *b)
{
    const qwen_layer *L = &s->w.layers[l];
    cpu_rmsnorm_rows(s, s->xb, s->x, L->attn_norm, b->n);
    project_qkv(s, L, b->n);
    cpu_qk_norm(s, L, b->n);
    cpu_rope_qk(s, b->n);
    cpu_store_kv(s, l, b);
    cpu_attention(s, l, b);
    out_and_ffn(s, L, rows_onward(s, l, b));
}

cpu_layer_fn cpu_graph_layer(const qwen_arch *a)
{
    if (strcmp(a->name, "qwen2") == 0) return qwen2_layer;
    if (strcmp(a->name, "qwen3") == 0) return qwen3_layer;
    return NULL;
}

/* The step: embeddings, the layers, and the logits of the entries that
 * want them, in their order, into logits. */
void cpu_decode_step(struct cpu_state *s, const qwen_batch *b, float *logits)
{
    const qwen_config *c = &s->m->config;
    const qwen_weights *w = &s->w;
    const uint64_t e = c->n_embd;
    for (uint32_t t = 0; t < b->n; t++) {
        const qwen_matrix *te = &w->token_embd;
        const unsigned char *src = (const unsigned char *)te->data + (uint64_t)b->token[t] * te->row_bytes;
        int st = gguf_dequantize_row(te->type, src, s->x + t * e, (int64_t)e);
        assert(st == GGUF_OK);
        (void)st;
    }
    cpu_rope_angles(s, b);
    for (uint32_t l = 0; l < c->n_layer; l++) s->layer(s, l, b);

    /* the last layer left the rows that want logits first (rows_onward()) */
    uint32_t n_out = 0;
    for (uint32_t t = 0; t < b->n; t++) n_out += b->logits[t] != 0;
    if (n_out == 0) return;
    cpu_rmsnorm_rows(s, s->xb, s->x, w->output_norm, n_out);
    const struct cpu_product out = {&w->output, logits};
    cpu_matmul(s, s->xb, n_out, &out, 1);
}
