/*
 * ref-forward.c -- the reference forward pass (see ref-forward.h).
 *
 * Matrices are stored as in the file, row after row: a tensor of ggml
 * shape (cols, rows) is rows * cols doubles, y = W x is
 * y[r] = sum_c W[r * cols + c] * x[c].
 */
#include <config.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "tests/ref-forward.h"

struct ref_layer {
    double *attn_norm;      /* (n_embd) */
    double *wq, *bq;        /* n_q rows of n_embd; (n_q) qwen2, else NULL */
    double *q_norm;         /* (head_dim) qwen3, else NULL */
    double *wk, *bk;        /* n_head_kv * head_dim rows of n_embd; bias qwen2 */
    double *k_norm;         /* (head_dim) qwen3, else NULL */
    double *wv, *bv;        /* n_head_kv * head_dim rows of n_embd; bias qwen2 */
    double *wo;             /* n_embd rows of n_q */
    double *ffn_norm, *gate, *up, *down;
};

struct ref_model {
    int qwen3;              /* general.architecture: 0 qwen2, 1 qwen3 */
    uint32_t n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_vocab;
    uint32_t n_q;           /* n_head * head_dim */
    double rope_base, eps;
    double *embd;           /* n_vocab rows of n_embd */
    double *out_norm;
    double *out;            /* n_vocab rows of n_embd (the embeddings when tied) */
    struct ref_layer *layers;
};

static int fail(char *msg, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
    return -1;
}

/* Dequantizes tensor `name` (expected elements: n) to a new array of
 * doubles; NULL with a message when absent or of another size. */
static double *load(gguf_file *f, const char *name, uint64_t n, char *msg, size_t cap)
{
    const gguf_tensor *t = gguf_tensor_find(f, name);
    if (!t) {
        fail(msg, cap, "reference: tensor %s missing", name);
        return NULL;
    }
    if (t->n_elements != n) {
        fail(msg, cap, "reference: tensor %s has %llu elements, expected %llu", name,
             (unsigned long long)t->n_elements, (unsigned long long)n);
        return NULL;
    }
    float *tmp = malloc(n * sizeof *tmp);
    double *d = malloc(n * sizeof *d);
    if (!tmp || !d ||
        gguf_dequantize_rows(t->type, t->data, tmp, (int64_t)(n / t->ne[0]), (int64_t)t->ne[0], 1)) {
        fail(msg, cap, "reference: cannot dequantize %s", name);
        free(tmp);
        free(d);
        return NULL;
    }
    for (uint64_t i = 0; i < n; i++) d[i] = tmp[i];
    free(tmp);
    return d;
}

/* Reads key "ARCH.name" (arch: the model's general.architecture). */
static int get_u32(gguf_file *f, const char *arch, const char *name, uint32_t *v, char *msg,
                   size_t cap)
{
    char key[96];
    uint64_t u;
    snprintf(key, sizeof key, "%s.%s", arch, name);
    if (gguf_kv_uint(f, key, &u, NULL) || u == 0 || u > 1u << 20)
        return fail(msg, cap, "reference: bad or missing %s", key);
    *v = (uint32_t)u;
    return 0;
}

static int get_f32(gguf_file *f, const char *arch, const char *name, double *v, char *msg,
                   size_t cap)
{
    char key[96];
    float x;
    snprintf(key, sizeof key, "%s.%s", arch, name);
    if (gguf_kv_f32(f, key, &x, NULL) || !(x > 0.0f))
        return fail(msg, cap, "reference: bad or missing %s", key);
    *v = x;
    return 0;
}

ref_model *ref_model_load(const char *path, char *msg, size_t cap)
{
    gguf_file *f;
    gguf_error err;
    if (cap) msg[0] = 0;
    if (gguf_open(&f, path, NULL, 0, &err)) {
        fail(msg, cap, "reference: %s", err.message);
        return NULL;
    }
    ref_model *m = calloc(1, sizeof *m);
    if (!m) {
        gguf_close(f);
        fail(msg, cap, "reference: out of memory");
        return NULL;
    }
    const gguf_kv *akv = gguf_kv_find(f, "general.architecture");
    const char *arch = NULL;
    if (akv && akv->value.type == GGUF_VT_STRING && akv->value.v.str.len == 5) {
        if (memcmp(akv->value.v.str.ptr, "qwen2", 5) == 0) arch = "qwen2";
        if (memcmp(akv->value.v.str.ptr, "qwen3", 5) == 0) arch = "qwen3";
    }
    if (!arch) {
        fail(msg, cap, "reference: general.architecture is not qwen2 or qwen3");
        goto bad;
    }
    m->qwen3 = arch[4] == '3';
    if (get_u32(f, arch, "block_count", &m->n_layer, msg, cap) ||
        get_u32(f, arch, "embedding_length", &m->n_embd, msg, cap) ||
        get_u32(f, arch, "feed_forward_length", &m->n_ff, msg, cap) ||
        get_u32(f, arch, "attention.head_count", &m->n_head, msg, cap) ||
        get_u32(f, arch, "attention.head_count_kv", &m->n_head_kv, msg, cap) ||
        get_f32(f, arch, "rope.freq_base", &m->rope_base, msg, cap) ||
        get_f32(f, arch, "attention.layer_norm_rms_epsilon", &m->eps, msg, cap))
        goto bad;
    /* The head width: Qwen3's key_length (V's the same), else, as llama.cpp
     * defaults it, width / heads. */
    m->head_dim = m->n_embd / m->n_head;
    if (m->qwen3 && gguf_kv_find(f, "qwen3.attention.key_length") &&
        get_u32(f, arch, "attention.key_length", &m->head_dim, msg, cap))
        goto bad;
    if (m->qwen3 && gguf_kv_find(f, "qwen3.attention.value_length")) {
        uint32_t hv;
        if (get_u32(f, arch, "attention.value_length", &hv, msg, cap)) goto bad;
        if (hv != m->head_dim) {
            fail(msg, cap, "reference: value_length %u unlike key_length %u", hv, m->head_dim);
            goto bad;
        }
    }
    if (m->head_dim % 2 || m->n_head % m->n_head_kv) {
        fail(msg, cap, "reference: head width %u or head counts %u/%u unusable", m->head_dim,
             m->n_head, m->n_head_kv);
        goto bad;
    }
    m->n_q = m->n_head * m->head_dim;
    const gguf_tensor *te = gguf_tensor_find(f, "token_embd.weight");
    if (!te) {
        fail(msg, cap, "reference: no token_embd.weight");
        goto bad;
    }
    m->n_vocab = (uint32_t)te->ne[1];
    uint64_t e = m->n_embd, kv = (uint64_t)m->n_head_kv * m->head_dim, ff = m->n_ff;
    uint64_t nq = m->n_q, hd = m->head_dim;
    uint64_t nv = m->n_vocab;
    if (!(m->embd = load(f, "token_embd.weight", e * nv, msg, cap)) ||
        !(m->out_norm = load(f, "output_norm.weight", e, msg, cap)))
        goto bad;
    if (gguf_tensor_find(f, "output.weight")) {
        if (!(m->out = load(f, "output.weight", e * nv, msg, cap))) goto bad;
    }
    m->layers = calloc(m->n_layer, sizeof *m->layers);
    for (uint32_t l = 0; l < m->n_layer; l++) {
        struct ref_layer *L = &m->layers[l];
        char n[64];
#define LOAD(field, suffix, count)                                  \
        snprintf(n, sizeof n, "blk.%u." suffix, l);                 \
        if (!(L->field = load(f, n, count, msg, cap))) goto bad;
        LOAD(attn_norm, "attn_norm.weight", e)
        LOAD(wq, "attn_q.weight", e * nq)
        LOAD(wk, "attn_k.weight", e * kv)
        LOAD(wv, "attn_v.weight", e * kv)
        LOAD(wo, "attn_output.weight", nq * e)
        if (m->qwen3) {
            /* No biases: Qwen3's graph has none, whatever the file holds. */
            LOAD(q_norm, "attn_q_norm.weight", hd)
            LOAD(k_norm, "attn_k_norm.weight", hd)
        } else {
            LOAD(bq, "attn_q.bias", nq)
            LOAD(bk, "attn_k.bias", kv)
            LOAD(bv, "attn_v.bias", kv)
        }
        LOAD(ffn_norm, "ffn_norm.weight", e)
        LOAD(gate, "ffn_gate.weight", e * ff)
        LOAD(up, "ffn_up.weight", e * ff)
        LOAD(down, "ffn_down.weight", ff * e)
#undef LOAD
    }
    gguf_close(f);
    return m;
bad:
    gguf_close(f);
    ref_model_free(m);
    return NULL;
}

void ref_model_free(ref_model *m)
{
    if (!m) return;
    if (m->layers) {
        for (uint32_t l = 0; l < m->n_layer; l++) {
            struct ref_layer *L = &m->layers[l];
            double *p[] = {L->attn_norm, L->wq, L->bq, L->q_norm, L->wk, L->bk, L->k_norm,
                           L->wv, L->bv, L->wo, L->ffn_norm, L->gate, L->up, L->down};
            for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
        }
        free(m->layers);
    }
    free(m->embd);
    free(m->out_norm);
    free(m->out);
    free(m);
}

uint32_t ref_model_vocab(const ref_model *m)
{
    return m->n_vocab;
}

/* y (rows) = W (rows x cols) x (cols) [+ b]. */
static void matvec(double *y, const double *w, const double *x, const double *b, uint64_t rows,
                   uint64_t cols)
{
    for (uint64_t r = 0; r < rows; r++) {
        double s = b ? b[r] : 0.0;
        for (uint64_t c = 0; c < cols; c++) s += w[r * cols + c] * x[c];
        y[r] = s;
    }
}

static void rmsnorm(double *y, const double *x, const double *w, uint32_t n, double eps)
{
    double ss = 0.0;
    for (uint32_t i = 0; i < n; i++) ss += x[i] * x[i];
    double k = 1.0 / sqrt(ss / n + eps);
    for (uint32_t i = 0; i < n; i++) y[i] = x[i] * k * w[i];
}

/* Rotary embedding of one head at position pos: element i and element
 * i + d/2 turn by pos * base^(-2i/d). */
static void rope(double *v, uint32_t d, uint32_t pos, double base)
{
    for (uint32_t i = 0; i < d / 2; i++) {
        double th = pos * pow(base, -2.0 * i / d);
        double a = v[i], b = v[i + d / 2];
        v[i] = a * cos(th) - b * sin(th);
        v[i + d / 2] = a * sin(th) + b * cos(th);
    }
}

static double to_f16(double x)
{
    return gguf_fp16_to_fp32(gguf_fp32_to_fp16((float)x));
}

/* The logits after tokens[0 .. n), one layer after another over all n
 * tokens.  A layer: x += Wo attention(RoPE(norm_q(Wq h + bq)),
 * RoPE(norm_k(Wk h + bk)), Wv h + bv) with h = RMSNorm(x), then
 * x += Wdown (silu(Wgate h) * Wup h) with h = RMSNorm(x); qwen2 has the
 * biases and no per-head norms, qwen3 the reverse.  The logits are
 * Wout RMSNorm(x) of the last token. */
void ref_forward(const ref_model *m, const int32_t *tokens, uint32_t n, int kv_f16,
                 double *logits)
{
    uint32_t e = m->n_embd, d = m->head_dim, kvw = m->n_head_kv * d, ff = m->n_ff, nq = m->n_q;
    double *x = malloc(sizeof(double) * n * e);     /* residual stream, per token */
    double *h = malloc(sizeof(double) * e);
    double *q = malloc(sizeof(double) * n * nq);    /* per token: n_head heads of d */
    double *k = malloc(sizeof(double) * n * kvw);   /* per token: n_head_kv heads of d */
    double *v = malloc(sizeof(double) * n * kvw);
    double *att = malloc(sizeof(double) * n * nq);
    double *y = malloc(sizeof(double) * (e > ff ? e : ff));
    double *g = malloc(sizeof(double) * ff), *u = malloc(sizeof(double) * ff);
    double *sc = malloc(sizeof(double) * n);

    for (uint32_t t = 0; t < n; t++)
        memcpy(x + (size_t)t * e, m->embd + (size_t)tokens[t] * e, sizeof(double) * e);

    for (uint32_t l = 0; l < m->n_layer; l++) {
        const struct ref_layer *L = &m->layers[l];
        for (uint32_t t = 0; t < n; t++) {
            double *qt = q + (size_t)t * nq, *kt = k + (size_t)t * kvw;
            rmsnorm(h, x + (size_t)t * e, L->attn_norm, e, m->eps);
            matvec(qt, L->wq, h, L->bq, nq, e);
            matvec(kt, L->wk, h, L->bk, kvw, e);
            matvec(v + (size_t)t * kvw, L->wv, h, L->bv, kvw, e);
            if (L->q_norm) {
                /* qwen3: each head normed on its own, with the same eps. */
                for (uint32_t hh = 0; hh < m->n_head; hh++)
                    rmsnorm(qt + hh * d, qt + hh * d, L->q_norm, d, m->eps);
                for (uint32_t hh = 0; hh < m->n_head_kv; hh++)
                    rmsnorm(kt + hh * d, kt + hh * d, L->k_norm, d, m->eps);
            }
            for (uint32_t hh = 0; hh < m->n_head; hh++) rope(qt + hh * d, d, t, m->rope_base);
            for (uint32_t hh = 0; hh < m->n_head_kv; hh++)
                rope(k + (size_t)t * kvw + hh * d, d, t, m->rope_base);
            if (kv_f16)
                for (uint32_t i = 0; i < kvw; i++) {
                    k[(size_t)t * kvw + i] = to_f16(k[(size_t)t * kvw + i]);
                    v[(size_t)t * kvw + i] = to_f16(v[(size_t)t * kvw + i]);
                }
        }
        /* Causal attention; query head hh uses KV head hh * n_head_kv / n_head. */
        for (uint32_t t = 0; t < n; t++) {
            for (uint32_t hh = 0; hh < m->n_head; hh++) {
                uint32_t kh = hh / (m->n_head / m->n_head_kv);
                const double *qh = q + (size_t)t * nq + hh * d;
                double mx = -INFINITY, sum = 0.0;
                for (uint32_t j = 0; j <= t; j++) {
                    double s = 0.0;
                    for (uint32_t i = 0; i < d; i++) s += qh[i] * k[(size_t)j * kvw + kh * d + i];
                    sc[j] = s / sqrt((double)d);
                    if (sc[j] > mx) mx = sc[j];
                }
                for (uint32_t j = 0; j <= t; j++) sum += sc[j] = exp(sc[j] - mx);
                double *o = att + (size_t)t * nq + hh * d;
                for (uint32_t i = 0; i < d; i++) {
                    double s = 0.0;
                    for (uint32_t j = 0; j <= t; j++) s += sc[j] / sum * v[(size_t)j * kvw + kh * d + i];
                    o[i] = s;
                }
            }
        }
        for (uint32_t t = 0; t < n; t++) {
            double *xt = x + (size_t)t * e;
            matvec(y, L->wo, att + (size_t)t * nq, NULL, e, nq);
            for (uint32_t i = 0; i < e; i++) xt[i] += y[i];
            rmsnorm(h, xt, L->ffn_norm, e, m->eps);
            matvec(g, L->gate, h, NULL, ff, e);
            matvec(u, L->up, h, NULL, ff, e);
            for (uint32_t i = 0; i < ff; i++) g[i] = g[i] / (1.0 + exp(-g[i])) * u[i];
            matvec(y, L->down, g, NULL, e, ff);
            for (uint32_t i = 0; i < e; i++) xt[i] += y[i];
        }
    }
    rmsnorm(h, x + (size_t)(n - 1) * e, m->out_norm, e, m->eps);
    matvec(logits, m->out ? m->out : m->embd, h, NULL, m->n_vocab, e);
    free(x); free(h); free(q); free(k); free(v); free(att); free(y); free(g); free(u); free(sc);
}
