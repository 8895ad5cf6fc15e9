/*
 * forward.c -- the plain CPU forward pass: weights are dequantized one row
 * at a time and multiplied in float.  The reference for faster paths.
 *
 * Activations of a batch of n tokens are stored token after token: a
 * buffer of shape (w, n) holds n vectors of w floats, token t at t * w.
 */
#include <config.h>

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infer/forward.h"
#include "quant/quant.h"

struct qwen_state {
    const qwen_model *m;
    uint32_t n_ctx, n_batch;
    uint32_t pos;           /* tokens in the cache */
    float *x;               /* (n_embd, n_batch) the residual stream */
    float *xb;              /* (n_embd, n_batch) normed input of a sublayer */
    float *q;               /* (n_embd, n_batch) queries */
    float *k;               /* (n_kv, n_batch) keys */
    float *v;               /* (n_kv, n_batch) values */
    float *ao;              /* (n_embd, n_batch) attention output, before projection */
    float *gate;            /* (n_ff, n_batch) */
    float *up;              /* (n_ff, n_batch) */
    float *rope;            /* (head_dim, n_batch) cos, sin of each pair's angle */
    float *att;             /* (n_ctx) attention weights of one head */
    float *kvrow;           /* (head_dim) one key or value as float */
    float *row;             /* (max(n_embd, n_ff)) one dequantized weight row */
    float *logits;          /* (n_vocab) */
    uint16_t *k_cache;      /* (n_kv, n_ctx, n_layer) F16 */
    uint16_t *v_cache;      /* (n_kv, n_ctx, n_layer) F16 */
};

/* calloc of n * size bytes, NULL when the product overflows. */
static void *alloc_array(uint64_t n, size_t size)
{
    if (n > SIZE_MAX / size) return NULL;
    return calloc(n ? (size_t)n : 1, size);
}

int qwen_state_new(qwen_state **out, const qwen_model *m, uint32_t n_ctx, uint32_t n_batch,
                   gguf_error *err)
{
    if (!out || !m) return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_state_new: NULL argument");
    *out = NULL;
    const qwen_config *c = &m->config;
    if (n_ctx == 0 || n_ctx > c->n_ctx_train)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                         "%s: context size %" PRIu32 " out of range 1..%" PRIu32,
                         gguf_name(m->file), n_ctx, c->n_ctx_train);
    if (n_batch == 0 || n_batch > n_ctx)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                         "%s: batch size %" PRIu32 " out of range 1..%" PRIu32,
                         gguf_name(m->file), n_batch, n_ctx);
    qwen_state *s = calloc(1, sizeof *s);
    if (!s) return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(m->file));
    s->m = m;
    s->n_ctx = n_ctx;
    s->n_batch = n_batch;
    /* Every factor is bounded by the QWEN_MAX_* limits, so no product below
     * overflows 64 bits; alloc_array refuses what size_t cannot hold. */
    uint64_t nb = n_batch, row = c->n_embd > c->n_ff ? c->n_embd : c->n_ff;
    uint64_t cache = (uint64_t)c->n_kv * n_ctx * c->n_layer;
    s->x = alloc_array(c->n_embd * nb, sizeof(float));
    s->xb = alloc_array(c->n_embd * nb, sizeof(float));
    s->q = alloc_array(c->n_embd * nb, sizeof(float));
    s->k = alloc_array(c->n_kv * nb, sizeof(float));
    s->v = alloc_array(c->n_kv * nb, sizeof(float));
    s->ao = alloc_array(c->n_embd * nb, sizeof(float));
    s->gate = alloc_array(c->n_ff * nb, sizeof(float));
    s->up = alloc_array(c->n_ff * nb, sizeof(float));
    s->rope = alloc_array(c->head_dim * nb, sizeof(float));
    s->att = alloc_array(n_ctx, sizeof(float));
    s->kvrow = alloc_array(c->head_dim, sizeof(float));
    s->row = alloc_array(row, sizeof(float));
    s->logits = alloc_array(c->n_vocab, sizeof(float));
    s->k_cache = alloc_array(cache, sizeof(uint16_t));
    s->v_cache = alloc_array(cache, sizeof(uint16_t));
    if (!s->x || !s->xb || !s->q || !s->k || !s->v || !s->ao || !s->gate || !s->up ||
        !s->rope || !s->att || !s->kvrow || !s->row || !s->logits || !s->k_cache ||
        !s->v_cache) {
        qwen_state_free(s);
        return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX,
                         "%s: out of memory for a context of %" PRIu32 " tokens",
                         gguf_name(m->file), n_ctx);
    }
    *out = s;
    return GGUF_OK;
}

void qwen_state_free(qwen_state *s)
{
    if (!s) return;
    free(s->x);
    free(s->xb);
    free(s->q);
    free(s->k);
    free(s->v);
    free(s->ao);
    free(s->gate);
    free(s->up);
    free(s->rope);
    free(s->att);
    free(s->kvrow);
    free(s->row);
    free(s->logits);
    free(s->k_cache);
    free(s->v_cache);
    free(s);
}

void qwen_state_reset(qwen_state *s)
{
    s->pos = 0;
}

uint32_t qwen_state_pos(const qwen_state *s)
{
    return s->pos;
}

const float *qwen_state_logits(const qwen_state *s)
{
    return s->logits;
}

/* ------------------------------------------------------------------------ */
/* Building blocks                                                           */

static float dot(const float *a, const float *b, uint64_t n)
{
    float sum = 0.0f;
    for (uint64_t i = 0; i < n; i++) sum += a[i] * b[i];
    return sum;
}

/* out (w->rows, n) = w times each of the n vectors of in (w->cols, n).
 * Each weight row is dequantized once into s->row and used for all n. */
static void matmul(qwen_state *s, float *out, const float *in, const qwen_matrix *w, uint32_t n)
{
    for (uint64_t r = 0; r < w->rows; r++) {
        const unsigned char *src = (const unsigned char *)w->data + r * w->row_bytes;
        int st = gguf_dequantize_row(w->type, src, s->row, (int64_t)w->cols);
        assert(st == GGUF_OK); /* the type and width were checked at load */
        (void)st;
        for (uint32_t t = 0; t < n; t++)
            out[(uint64_t)t * w->rows + r] = dot(s->row, in + (uint64_t)t * w->cols, w->cols);
    }
}

/* out (n) = x / sqrt(mean(x^2) + eps) * weight.  The sum of squares is
 * accumulated in double, as the reference engine does. */
static void rmsnorm(float *out, const float *x, const float *weight, uint32_t n, float eps)
{
    double ss = 0.0;
    for (uint32_t i = 0; i < n; i++) ss += (double)(x[i] * x[i]);
    float scale = 1.0f / sqrtf((float)(ss / n) + eps);
    for (uint32_t i = 0; i < n; i++) out[i] = (x[i] * scale) * weight[i];
}

/* cs (head_dim) = cos and sin of the angle of each of the head_dim/2 pairs
 * at position pos: pos * base^(-2i/head_dim) for pair i, the angle made by
 * successive multiplication as the reference engine does. */
static void rope_angles(float *cs, uint32_t pos, uint32_t head_dim, float base)
{
    float step = powf(base, -2.0f / (float)head_dim);
    float theta = (float)pos;
    for (uint32_t i = 0; i < head_dim / 2; i++) {
        cs[2 * i] = cosf(theta);
        cs[2 * i + 1] = sinf(theta);
        theta *= step;
    }
}

/* Rotates each of n_heads heads of head_dim in vec: element i with element
 * i + head_dim/2 by the angle of pair i (the NeoX arrangement). */
static void rope_apply(float *vec, uint32_t n_heads, uint32_t head_dim, const float *cs)
{
    uint32_t half = head_dim / 2;
    for (uint32_t h = 0; h < n_heads; h++) {
        float *v = vec + (uint64_t)h * head_dim;
        for (uint32_t i = 0; i < half; i++) {
            float c = cs[2 * i], sn = cs[2 * i + 1];
            float a = v[i], b = v[i + half];
            v[i] = a * c - b * sn;
            v[i + half] = a * sn + b * c;
        }
    }
}

static void f16_to_float(float *dst, const uint16_t *src, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) dst[i] = gguf_fp16_to_fp32(src[i]);
}

/* Softmax of x[0..n) in place. */
static void softmax(float *x, uint32_t n)
{
    float max = x[0];
    for (uint32_t i = 1; i < n; i++)
        if (x[i] > max) max = x[i];
    double sum = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    float inv = (float)(1.0 / sum);
    for (uint32_t i = 0; i < n; i++) x[i] *= inv;
}

/* Attention of layer l for the n tokens of the batch at positions pos ..
 * pos + n - 1, whose keys and values are already in the cache: s->ao gets,
 * for each token and query head, the softmax-weighted sum of the values of
 * positions 0 .. its own, weighted by scaled query-key dot products.
 * Query head h reads KV head h / (n_head / n_head_kv). */
static void attention(qwen_state *s, uint32_t l, uint32_t n)
{
    const qwen_config *c = &s->m->config;
    uint32_t hd = c->head_dim, group = c->n_head / c->n_head_kv;
    float scale = 1.0f / sqrtf((float)hd);
    const uint16_t *kc = s->k_cache + (uint64_t)l * s->n_ctx * c->n_kv;
    const uint16_t *vc = s->v_cache + (uint64_t)l * s->n_ctx * c->n_kv;
    for (uint32_t t = 0; t < n; t++) {
        uint32_t len = s->pos + t + 1; /* causal: positions 0 .. pos + t */
        for (uint32_t h = 0; h < c->n_head; h++) {
            const float *q = s->q + (uint64_t)t * c->n_embd + (uint64_t)h * hd;
            uint64_t kvoff = (uint64_t)(h / group) * hd;
            for (uint32_t j = 0; j < len; j++) {
                f16_to_float(s->kvrow, kc + (uint64_t)j * c->n_kv + kvoff, hd);
                s->att[j] = dot(q, s->kvrow, hd) * scale;
            }
            softmax(s->att, len);
            float *o = s->ao + (uint64_t)t * c->n_embd + (uint64_t)h * hd;
            memset(o, 0, hd * sizeof *o);
            for (uint32_t j = 0; j < len; j++) {
                f16_to_float(s->kvrow, vc + (uint64_t)j * c->n_kv + kvoff, hd);
                for (uint32_t i = 0; i < hd; i++) o[i] += s->att[j] * s->kvrow[i];
            }
        }
    }
}

/* ------------------------------------------------------------------------ */
/* The forward pass                                                          */

/* One step: the n <= n_batch tokens at positions s->pos ...; checked by the
 * caller. */
static void forward_batch(qwen_state *s, const int32_t *tokens, uint32_t n)
{
    const qwen_config *c = &s->m->config;
    const qwen_weights *w = &s->m->weights;
    uint32_t e = c->n_embd, kv = c->n_kv, ff = c->n_ff;

    for (uint32_t t = 0; t < n; t++) {
        const qwen_matrix *te = &w->token_embd;
        const unsigned char *src = (const unsigned char *)te->data + (uint64_t)tokens[t] * te->row_bytes;
        int st = gguf_dequantize_row(te->type, src, s->x + (uint64_t)t * e, e);
        assert(st == GGUF_OK);
        (void)st;
        rope_angles(s->rope + (uint64_t)t * c->head_dim, s->pos + t, c->head_dim, c->rope_base);
    }

    for (uint32_t l = 0; l < c->n_layer; l++) {
        const qwen_layer *L = &w->layers[l];

        /* Attention. */
        for (uint32_t t = 0; t < n; t++)
            rmsnorm(s->xb + (uint64_t)t * e, s->x + (uint64_t)t * e, L->attn_norm, e, c->rms_eps);
        matmul(s, s->q, s->xb, &L->wq, n);
        matmul(s, s->k, s->xb, &L->wk, n);
        matmul(s, s->v, s->xb, &L->wv, n);
        uint16_t *kc = s->k_cache + (uint64_t)l * s->n_ctx * kv;
        uint16_t *vc = s->v_cache + (uint64_t)l * s->n_ctx * kv;
        for (uint32_t t = 0; t < n; t++) {
            float *q = s->q + (uint64_t)t * e, *k = s->k + (uint64_t)t * kv, *v = s->v + (uint64_t)t * kv;
            for (uint32_t i = 0; i < e; i++) q[i] += L->bq[i];
            for (uint32_t i = 0; i < kv; i++) {
                k[i] += L->bk[i];
                v[i] += L->bv[i];
            }
            const float *cs = s->rope + (uint64_t)t * c->head_dim;
            rope_apply(q, c->n_head, c->head_dim, cs);
            rope_apply(k, c->n_head_kv, c->head_dim, cs);
            uint64_t at = (uint64_t)(s->pos + t) * kv;
            for (uint32_t i = 0; i < kv; i++) {
                kc[at + i] = gguf_fp32_to_fp16(k[i]);
                vc[at + i] = gguf_fp32_to_fp16(v[i]);
            }
        }
        attention(s, l, n);
        matmul(s, s->xb, s->ao, &L->wo, n);
        for (uint64_t i = 0; i < (uint64_t)n * e; i++) s->x[i] += s->xb[i];

        /* Feed-forward. */
        for (uint32_t t = 0; t < n; t++)
            rmsnorm(s->xb + (uint64_t)t * e, s->x + (uint64_t)t * e, L->ffn_norm, e, c->rms_eps);
        matmul(s, s->gate, s->xb, &L->w_gate, n);
        matmul(s, s->up, s->xb, &L->w_up, n);
        for (uint64_t i = 0; i < (uint64_t)n * ff; i++) {
            float g = s->gate[i];
            s->gate[i] = g / (1.0f + expf(-g)) * s->up[i];
        }
        matmul(s, s->xb, s->gate, &L->w_down, n);
        for (uint64_t i = 0; i < (uint64_t)n * e; i++) s->x[i] += s->xb[i];
    }

    /* Logits of the last token only. */
    const float *last = s->x + (uint64_t)(n - 1) * e;
    rmsnorm(s->xb, last, w->output_norm, e, c->rms_eps);
    matmul(s, s->logits, s->xb, &w->output, 1);
    s->pos += n;
}

int qwen_forward(qwen_state *s, const int32_t *tokens, uint32_t n, gguf_error *err)
{
    if (!s || (!tokens && n)) return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_forward: NULL argument");
    const char *name = gguf_name(s->m->file);
    if (n == 0) return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "%s: no tokens to process", name);
    if (n > s->n_ctx - s->pos)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                         "%s: %" PRIu32 " tokens after %" PRIu32 " exceed the context of %" PRIu32,
                         name, n, s->pos, s->n_ctx);
    for (uint32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= s->m->config.n_vocab)
            return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX,
                             "%s: token %" PRIu32 " has id %" PRId32 ", outside the vocabulary of %" PRIu32,
                             name, i, tokens[i], s->m->config.n_vocab);
    for (uint32_t done = 0; done < n;) {
        uint32_t step = n - done < s->n_batch ? n - done : s->n_batch;
        forward_batch(s, tokens + done, step);
        done += step;
    }
    return GGUF_OK;
}
