/*
 * model.c -- Qwen2 hyperparameters and weights from a mapped GGUF file.
 */
#include <config.h>

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/model.h"
#include "quant/quant.h"

int qwen_fail(gguf_error *err, int status, uint64_t offset, const char *fmt, ...)
{
    if (!err) return status;
    err->status = status;
    err->sys_errno = 0;
    err->offset = offset;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    if (offset != UINT64_MAX && n >= 0 && (size_t)n < sizeof err->message)
        snprintf(err->message + n, sizeof err->message - (size_t)n, " (at byte %" PRIu64 ")",
                 offset);
    return status;
}

/* Writes at most `cap` - 1 bytes of s into buf with bytes outside printable
 * ASCII (and backslash) as \xNN, cut short with "..." when long.  For
 * strings from the file in messages. */
static const char *escape(char *buf, size_t cap, gguf_str s)
{
    size_t o = 0;
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (o + 8 >= cap) {
            memcpy(buf + o, "...", 4);
            return buf;
        }
        if (c >= 0x20 && c < 0x7f && c != '\\') buf[o++] = (char)c;
        else o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
    }
    buf[o] = 0;
    return buf;
}

/* ------------------------------------------------------------------------ */
/* Hyperparameters                                                           */

/* Reads integer key `key` into *out, requiring lo <= value <= hi.  When the
 * key is absent and `def` is not NULL, stores *def instead. */
static int read_uint(const gguf_file *f, const char *key, uint32_t lo, uint32_t hi,
                     const uint32_t *def, uint32_t *out, gguf_error *err)
{
    const gguf_kv *kv = gguf_kv_find(f, key);
    if (!kv) {
        if (def) {
            *out = *def;
            return GGUF_OK;
        }
        return qwen_fail(err, GGUF_E_NOT_FOUND, UINT64_MAX, "%s: key '%s' is missing",
                         gguf_name(f), key);
    }
    uint64_t v;
    if (gguf_kv_uint(f, key, &v, NULL) != GGUF_OK)
        return qwen_fail(err, GGUF_E_FORMAT, kv->offset,
                         "%s: key '%s' has type %s, expected a non-negative integer",
                         gguf_name(f), key, gguf_vtype_name(kv->value.type));
    if (v < lo || v > hi)
        return qwen_fail(err, GGUF_E_FORMAT, kv->offset,
                         "%s: key '%s' is %" PRIu64 ", expected %" PRIu32 "..%" PRIu32,
                         gguf_name(f), key, v, lo, hi);
    *out = (uint32_t)v;
    return GGUF_OK;
}

/* Reads F32 key `key` into *out, requiring a finite value in (0, hi]; when
 * absent and `def` is not NULL, stores *def. */
static int read_float(const gguf_file *f, const char *key, float hi, const float *def,
                      float *out, gguf_error *err)
{
    const gguf_kv *kv = gguf_kv_find(f, key);
    if (!kv) {
        if (def) {
            *out = *def;
            return GGUF_OK;
        }
        return qwen_fail(err, GGUF_E_NOT_FOUND, UINT64_MAX, "%s: key '%s' is missing",
                         gguf_name(f), key);
    }
    if (kv->value.type != GGUF_VT_FLOAT32)
        return qwen_fail(err, GGUF_E_FORMAT, kv->offset,
                         "%s: key '%s' has type %s, expected FLOAT32", gguf_name(f), key,
                         gguf_vtype_name(kv->value.type));
    float v = kv->value.v.f32;
    if (!(v > 0.0f && v <= hi)) /* also refuses NaN */
        return qwen_fail(err, GGUF_E_FORMAT, kv->offset,
                         "%s: key '%s' is %g, expected a number in (0, %g]", gguf_name(f), key,
                         (double)v, (double)hi);
    *out = v;
    return GGUF_OK;
}

int qwen_config_read(const gguf_file *f, qwen_config *cfg, gguf_error *err)
{
    if (!f || !cfg) return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_config_read: NULL argument");
    memset(cfg, 0, sizeof *cfg);
    const char *name = gguf_name(f);

    const gguf_kv *arch = gguf_kv_find(f, "general.architecture");
    if (!arch)
        return qwen_fail(err, GGUF_E_NOT_FOUND, UINT64_MAX,
                         "%s: key 'general.architecture' is missing; not a qwen2 model", name);
    if (arch->value.type != GGUF_VT_STRING)
        return qwen_fail(err, GGUF_E_FORMAT, arch->offset,
                         "%s: key 'general.architecture' has type %s, expected STRING", name,
                         gguf_vtype_name(arch->value.type));
    gguf_str a = arch->value.v.str;
    if (a.len != 5 || memcmp(a.ptr, "qwen2", 5) != 0) {
        char buf[80];
        return qwen_fail(err, GGUF_E_UNSUPPORTED, arch->offset,
                         "%s: architecture '%s' is not supported (only qwen2)", name,
                         escape(buf, sizeof buf, a));
    }

    int st;
    if ((st = read_uint(f, "qwen2.block_count", 1, QWEN_MAX_LAYERS, NULL, &cfg->n_layer, err)) ||
        (st = read_uint(f, "qwen2.context_length", 1, QWEN_MAX_CTX, NULL, &cfg->n_ctx_train, err)) ||
        (st = read_uint(f, "qwen2.embedding_length", 2, QWEN_MAX_EMBD, NULL, &cfg->n_embd, err)) ||
        (st = read_uint(f, "qwen2.feed_forward_length", 1, QWEN_MAX_FF, NULL, &cfg->n_ff, err)) ||
        (st = read_uint(f, "qwen2.attention.head_count", 1, QWEN_MAX_HEADS, NULL, &cfg->n_head,
                        err)))
        return st;
    if ((st = read_uint(f, "qwen2.attention.head_count_kv", 1, cfg->n_head, &cfg->n_head, &cfg->n_head_kv,
                        err)))
        return st;
    const float def_base = 10000.0f;
    if ((st = read_float(f, "qwen2.rope.freq_base", 1e30f, &def_base, &cfg->rope_base, err)) ||
        (st = read_float(f, "qwen2.attention.layer_norm_rms_epsilon", 1.0f, NULL, &cfg->rms_eps,
                         err)))
        return st;

    const gguf_kv *kv = gguf_kv_find(f, "qwen2.attention.head_count");
    if (cfg->n_embd % cfg->n_head != 0)
        return qwen_fail(err, GGUF_E_FORMAT, kv->offset,
                         "%s: embedding length %" PRIu32 " is not a multiple of the head count %" PRIu32,
                         name, cfg->n_embd, cfg->n_head);
    cfg->head_dim = cfg->n_embd / cfg->n_head;
    if (cfg->head_dim % 2 != 0 || cfg->head_dim > QWEN_MAX_HEAD_DIM)
        return qwen_fail(err, GGUF_E_FORMAT, kv->offset,
                         "%s: head size %" PRIu32 " (embedding length / head count) must be even "
                         "and at most %u", name, cfg->head_dim, QWEN_MAX_HEAD_DIM);
    if (cfg->n_head % cfg->n_head_kv != 0)
        return qwen_fail(err, GGUF_E_FORMAT, gguf_kv_find(f, "qwen2.attention.head_count_kv")->offset,
                         "%s: head count %" PRIu32 " is not a multiple of the KV head count %" PRIu32,
                         name, cfg->n_head, cfg->n_head_kv);
    cfg->n_kv = cfg->n_head_kv * cfg->head_dim;

    const gguf_tensor *te = gguf_tensor_find(f, "token_embd.weight");
    if (!te)
        return qwen_fail(err, GGUF_E_NOT_FOUND, UINT64_MAX, "%s: tensor 'token_embd.weight' is missing",
                         name);
    if (te->n_dims != 2 || te->ne[0] != cfg->n_embd || te->ne[1] < 1 || te->ne[1] > QWEN_MAX_VOCAB)
        return qwen_fail(err, GGUF_E_FORMAT, te->info_offset,
                         "%s: tensor 'token_embd.weight' has shape (%" PRIu64 ", %" PRIu64 "), "
                         "expected (%" PRIu32 ", 1..%u)", name, te->ne[0], te->n_dims > 1 ? te->ne[1] : 0,
                         cfg->n_embd, QWEN_MAX_VOCAB);
    cfg->n_vocab = (uint32_t)te->ne[1];
    return GGUF_OK;
}

/* ------------------------------------------------------------------------ */
/* Weights                                                                   */

/* Formats "%s" with up to one unsigned argument into buf (a tensor name). */
static const char *tname(char *buf, size_t cap, const char *fmt, uint32_t layer)
{
    snprintf(buf, cap, fmt, layer);
    return buf;
}

/* Finds tensor `name`; checks that its data is in memory and little-endian. */
static int find_tensor(const gguf_file *f, const char *name, const gguf_tensor **out,
                       gguf_error *err)
{
    const gguf_tensor *t = gguf_tensor_find(f, name);
    *out = t;
    if (!t)
        return qwen_fail(err, GGUF_E_NOT_FOUND, UINT64_MAX, "%s: tensor '%s' is missing",
                         gguf_name(f), name);
    if (!t->data)
        return qwen_fail(err, GGUF_E_UNSUPPORTED, t->info_offset,
                         "%s: tensor '%s': data is not in memory (the model must be a regular "
                         "file, not a pipe)", gguf_name(f), name);
    return GGUF_OK;
}

/* Binds matrix `name`, which must have shape (cols, rows) and a type that
 * can be dequantized. */
static int bind_matrix(const gguf_file *f, const char *name, uint64_t cols, uint64_t rows,
                       qwen_matrix *m, gguf_error *err)
{
    const gguf_tensor *t;
    int st = find_tensor(f, name, &t, err);
    if (st) return st;
    if (t->n_dims != 2 || t->ne[0] != cols || t->ne[1] != rows)
        return qwen_fail(err, GGUF_E_FORMAT, t->info_offset,
                         "%s: tensor '%s' has %" PRIu32 " dims (%" PRIu64 ", %" PRIu64 "), expected "
                         "(%" PRIu64 ", %" PRIu64 ")", gguf_name(f), name, t->n_dims, t->ne[0],
                         t->ne[1], cols, rows);
    if (!gguf_can_dequantize(t->type))
        return qwen_fail(err, GGUF_E_UNSUPPORTED, t->info_offset,
                         "%s: tensor '%s' has type %s, which cannot be computed", gguf_name(f),
                         name, gguf_type_str(t->type) ? gguf_type_str(t->type) : "(unknown)");
    /* The reader has checked that size = rows * row bytes fits the file. */
    m->data = t->data;
    m->type = t->type;
    m->cols = cols;
    m->rows = rows;
    m->row_bytes = (size_t)gguf_row_bytes(t->type, cols);
    return GGUF_OK;
}

/* Binds F32 vector `name` of n elements. */
static int bind_vector(const gguf_file *f, const char *name, uint64_t n, const float **v,
                       gguf_error *err)
{
    const gguf_tensor *t;
    int st = find_tensor(f, name, &t, err);
    if (st) return st;
    if (t->n_dims != 1 || t->ne[0] != n)
        return qwen_fail(err, GGUF_E_FORMAT, t->info_offset,
                         "%s: tensor '%s' has %" PRIu32 " dims (%" PRIu64 ", ...), expected (%" PRIu64 ")",
                         gguf_name(f), name, t->n_dims, t->ne[0], n);
    if (t->type != GGUF_T_F32)
        return qwen_fail(err, GGUF_E_FORMAT, t->info_offset,
                         "%s: tensor '%s' has type %s, expected F32", gguf_name(f), name,
                         gguf_type_str(t->type) ? gguf_type_str(t->type) : "(unknown)");
    if ((uintptr_t)t->data % sizeof(float) != 0)
        return qwen_fail(err, GGUF_E_UNSUPPORTED, t->info_offset,
                         "%s: tensor '%s': F32 data is not 4-byte aligned", gguf_name(f), name);
    *v = t->data;
    return GGUF_OK;
}

/* Binds every weight of the model whose configuration is c; w->layers must
 * hold c->n_layer entries. */
static int bind_weights(const gguf_file *f, const qwen_config *c, qwen_weights *w,
                        gguf_error *err)
{
    char b[64];
    int st;
    uint64_t e = c->n_embd, kv = c->n_kv, ff = c->n_ff, nv = c->n_vocab;
    if ((st = bind_matrix(f, "token_embd.weight", e, nv, &w->token_embd, err)) ||
        (st = bind_vector(f, "output_norm.weight", e, &w->output_norm, err)))
        return st;
    if (gguf_tensor_find(f, "output.weight")) {
        if ((st = bind_matrix(f, "output.weight", e, nv, &w->output, err))) return st;
        w->tied = 0;
    } else {
        w->output = w->token_embd;
        w->tied = 1;
    }
    for (uint32_t i = 0; i < c->n_layer; i++) {
        qwen_layer *L = &w->layers[i];
        if ((st = bind_vector(f, tname(b, sizeof b, "blk.%u.attn_norm.weight", i), e, &L->attn_norm, err)) ||
            (st = bind_matrix(f, tname(b, sizeof b, "blk.%u.attn_q.weight", i), e, e, &L->wq, err)) ||
            (st = bind_vector(f, tname(b, sizeof b, "blk.%u.attn_q.bias", i), e, &L->bq, err)) ||
            (st = bind_matrix(f, tname(b, sizeof b, "blk.%u.attn_k.weight", i), e, kv, &L->wk, err)) ||
            (st = bind_vector(f, tname(b, sizeof b, "blk.%u.attn_k.bias", i), kv, &L->bk, err)) ||
            (st = bind_matrix(f, tname(b, sizeof b, "blk.%u.attn_v.weight", i), e, kv, &L->wv, err)) ||
            (st = bind_vector(f, tname(b, sizeof b, "blk.%u.attn_v.bias", i), kv, &L->bv, err)) ||
            (st = bind_matrix(f, tname(b, sizeof b, "blk.%u.attn_output.weight", i), e, e, &L->wo, err)) ||
            (st = bind_vector(f, tname(b, sizeof b, "blk.%u.ffn_norm.weight", i), e, &L->ffn_norm, err)) ||
            (st = bind_matrix(f, tname(b, sizeof b, "blk.%u.ffn_gate.weight", i), e, ff, &L->w_gate, err)) ||
            (st = bind_matrix(f, tname(b, sizeof b, "blk.%u.ffn_up.weight", i), e, ff, &L->w_up, err)) ||
            (st = bind_matrix(f, tname(b, sizeof b, "blk.%u.ffn_down.weight", i), ff, e, &L->w_down, err)))
            return st;
    }
    return GGUF_OK;
}

int qwen_model_open(qwen_model **out, const char *path, gguf_error *err)
{
    if (!out || !path) return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_model_open: NULL argument");
    *out = NULL;
    gguf_file *f;
    int st = gguf_open(&f, path, NULL, 0, err);
    if (st) return st;
    if (gguf_byte_order(f) != GGUF_LITTLE_ENDIAN) {
        st = qwen_fail(err, GGUF_E_UNSUPPORTED, UINT64_MAX,
                       "%s: big-endian model files are not supported", gguf_name(f));
        gguf_close(f);
        return st;
    }
    qwen_model *m = calloc(1, sizeof *m);
    if (!m) {
        gguf_close(f);
        return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", path);
    }
    m->file = f;
    if ((st = qwen_config_read(f, &m->config, err))) goto fail;
    /* n_layer is checked: at most QWEN_MAX_LAYERS. */
    m->weights.layers = calloc(m->config.n_layer, sizeof *m->weights.layers);
    if (!m->weights.layers) {
        st = qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(f));
        goto fail;
    }
    if ((st = bind_weights(f, &m->config, &m->weights, err))) goto fail;
    *out = m;
    return GGUF_OK;
fail:
    qwen_model_close(m);
    return st;
}

void qwen_model_close(qwen_model *m)
{
    if (!m) return;
    free(m->weights.layers);
    gguf_close(m->file);
    free(m);
}
