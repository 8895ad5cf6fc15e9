/*
 * model.c -- hyperparameters and weights from a mapped GGUF file, read by
 * the tables of arch.c, and the checks that decide whether a file is a
 * model the loader can use.
 */
#include <config.h>

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/model.h"
#include "infer/tokenizer.h"
#include "quant/quant.h"

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

/* "(a, b, c)": every one of the n dims in ne, for messages. */
static const char *shape_str(char *buf, size_t cap, uint32_t n, const uint64_t *ne)
{
    size_t o = 0;
    buf[o++] = '(';
    for (uint32_t i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%" PRIu64, i ? ", " : "", ne[i]);
    if (o + 2 <= cap) memcpy(buf + o, ")", 2);
    else buf[cap - 1] = '\0';
    return buf;
}

static const char *type_str(uint32_t type)
{
    const char *s = gguf_type_str(type);
    return s ? s : "(unknown)";
}

/* ------------------------------------------------------------------------ */
/* Hyperparameters                                                           */

/* Checks general.architecture: one of arch.h's, and `want` when not NULL.
 * Stores the architecture in *out.  Returns GGUF_OK or the problem's
 * status. */
static int check_arch(const gguf_file *f, const char *want, const qwen_arch **out,
                      qwen_check *c)
{
    const char *name = gguf_name(f);
    const gguf_kv *arch = gguf_kv_find(f, "general.architecture");
    *out = NULL;
    if (!arch)
        return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_NOT_FOUND, UINT64_MAX,
                               "%s: key 'general.architecture' is missing; not a model of a "
                               "supported architecture (%s)", name, qwen_arch_names());
    if (arch->value.type != GGUF_VT_STRING)
        return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_FORMAT, arch->offset,
                               "%s: key 'general.architecture' has type %s, expected STRING", name,
                               gguf_vtype_name(arch->value.type));
    gguf_str a = arch->value.v.str;
    const qwen_arch *found = qwen_arch_find(a.ptr, a.len);
    char buf[80];
    if (!found)
        return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_UNSUPPORTED, arch->offset,
                               "%s: architecture '%s' is not supported (supported: %s)", name,
                               escape(buf, sizeof buf, a), qwen_arch_names());
    if (want && strcmp(want, found->name) != 0)
        return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_UNSUPPORTED, arch->offset,
                               "%s: architecture is '%s', not %s", name, found->name, want);
    *out = found;
    return GGUF_OK;
}

/* The key of hyperparameter i of architecture a, "ARCH.name", in buf. */
static const char *hp_key(char *buf, size_t cap, const qwen_arch *a, int i)
{
    snprintf(buf, cap, "%s.%s", a->name, a->hparams[i].name);
    return buf;
}

/* The KV pair of hyperparameter i, or NULL (also when a has not that
 * key). */
static const gguf_kv *hp_find(const gguf_file *f, const qwen_arch *a, int i)
{
    char key[96];
    return a->hparams[i].name ? gguf_kv_find(f, hp_key(key, sizeof key, a, i)) : NULL;
}

/* The status a check ended early returns: its own first problem, or the
 * check's, or (ended by a callback after notes only) GGUF_E_INVALID, since
 * what it fills is incomplete. */
static int ended(int st, const qwen_check *c)
{
    return st ? st : c->status ? c->status : GGUF_E_INVALID;
}

/* Reads hyperparameter i of architecture a into cfg; when absent and
 * optional, stores its default *def.
 * Returns GGUF_OK or the problem's status. */
static int read_hparam(const gguf_file *f, const qwen_arch *a, int i, const double *def,
                       qwen_config *cfg, qwen_check *c)
{
    const qwen_hparam *h = &a->hparams[i];
    char key[96] = "";
    if (h->name) hp_key(key, sizeof key, a, i);
    const char *name = gguf_name(f);
    void *field = (char *)cfg + h->field;
    const gguf_kv *kv = hp_find(f, a, i);
    if (!kv) {
        if (h->required)
            return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_NOT_FOUND, UINT64_MAX,
                                   "%s: key '%s' is missing", name, key);
        if (h->kind == QWEN_HP_UINT) *(uint32_t *)field = (uint32_t)*def;
        else *(float *)field = (float)*def;
        return GGUF_OK;
    }
    if (h->kind == QWEN_HP_UINT) {
        uint64_t v;
        if (gguf_kv_uint(f, key, &v, NULL) != GGUF_OK)
            return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_FORMAT, kv->offset,
                                   "%s: key '%s' has type %s, expected a non-negative integer",
                                   name, key, gguf_vtype_name(kv->value.type));
        if (v < (uint64_t)h->lo || v > (uint64_t)h->hi)
            return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_FORMAT, kv->offset,
                                   "%s: key '%s' is %" PRIu64 ", expected %" PRIu64 "..%" PRIu64,
                                   name, key, v, (uint64_t)h->lo, (uint64_t)h->hi);
        *(uint32_t *)field = (uint32_t)v;
    } else {
        if (kv->value.type != GGUF_VT_FLOAT32)
            return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_FORMAT, kv->offset,
                                   "%s: key '%s' has type %s, expected FLOAT32", name, key,
                                   gguf_vtype_name(kv->value.type));
        float v = kv->value.v.f32;
        if (!(v > 0.0f && v <= (float)h->hi)) /* also refuses NaN */
            return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_FORMAT, kv->offset,
                                   "%s: key '%s' is %g, expected a number in (0, %g]", name, key,
                                   (double)v, h->hi);
        *(float *)field = v;
    }
    if (kv->value.type != h->llama_type)
        qwen_check_fail(c, QWEN_LLAMA_NOTE, GGUF_OK, kv->offset,
                        "%s: key '%s' has type %s; llama.cpp reads it as %s only", name, key,
                        gguf_vtype_name(kv->value.type), gguf_vtype_name(h->llama_type));
    return GGUF_OK;
}

/* Where a model's tensors are: one file, or the shards of a split set
 * (set not NULL; f is then its first shard, which holds the metadata). */
struct src {
    const gguf_file *f;
    const gguf_split *set;
};

/* Tensor `name`, and its index over all the tensors in *index (when not
 * NULL), or NULL. */
static const gguf_tensor *src_find(const struct src *x, const char *name, uint64_t *index)
{
    if (!x->set) {
        const gguf_tensor *t = gguf_tensor_find(x->f, name);
        if (t && index) *index = gguf_tensor_index(x->f, t);
        return t;
    }
    uint32_t sh;
    const gguf_tensor *t = gguf_split_tensor_find(x->set, name, &sh);
    if (t && index) {
        *index = gguf_tensor_index(gguf_split_shard(x->set, sh), t);
        for (uint32_t i = 0; i < sh; i++) *index += gguf_tensor_count(gguf_split_shard(x->set, i));
    }
    return t;
}

static uint64_t src_count(const struct src *x)
{
    return x->set ? gguf_split_tensor_count(x->set) : gguf_tensor_count(x->f);
}

/* Tensor i over all, and the name of its file. */
static const gguf_tensor *src_at(const struct src *x, uint64_t i, const char **file)
{
    if (!x->set) {
        *file = gguf_name(x->f);
        return gguf_tensor_at(x->f, i);
    }
    uint32_t sh = 0;
    const gguf_tensor *t = gguf_split_tensor_at(x->set, i, &sh);
    *file = gguf_name(gguf_split_shard(x->set, sh));
    return t;
}

/* The hyperparameters of architecture a, the vocabulary size from
 * token_embd.weight and its agreement with the tokenizer's.  Each key is
 * checked on its own; a rule that relates keys runs only when they were
 * read.  Returns GGUF_OK when cfg is complete, else the status of the
 * first problem; *dims_ok (when not NULL) tells whether the tensor
 * dimensions and the layer count were read, so that the tensors can be
 * checked even when, say, the rope base was refused. */
static int check_config(const struct src *x, const qwen_arch *a, qwen_config *cfg, qwen_check *c,
                        int *dims_ok)
{
    const gguf_file *f = x->f;
    memset(cfg, 0, sizeof *cfg);
    cfg->arch = a;
    if (dims_ok) *dims_ok = 0;
    const char *name = gguf_name(f);
    int ok[QWEN_HP_COUNT] = {0}, bad = 0, st = GGUF_OK;
    for (int i = 0; i < QWEN_HP_COUNT && !c->done; i++) {
        const qwen_hparam *h = &a->hparams[i];
        const gguf_kv *kv = hp_find(f, a, i);
        double def = h->def;
        if (!kv && h->def_from == QWEN_DEF_HEAD_WIDTH) {
            if (!ok[QWEN_HP_EMBD] || !ok[QWEN_HP_HEAD]) continue; /* refused: said */
            if (cfg->n_embd % cfg->n_head != 0) {
                st = st ? st : GGUF_E_FORMAT;
                qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_FORMAT, hp_find(f, a, QWEN_HP_HEAD)->offset,
                                "%s: embedding length %" PRIu32 " is not a multiple of the head "
                                "count %" PRIu32, name, cfg->n_embd, cfg->n_head);
                continue;
            }
            def = cfg->n_embd / cfg->n_head;
        } else if (!kv && h->def_from >= 0) {
            if (!ok[h->def_from]) continue; /* absent, and its default was refused */
            const qwen_hparam *from = &a->hparams[h->def_from];
            const void *v = (const char *)cfg + from->field;
            def = from->kind == QWEN_HP_UINT ? *(const uint32_t *)v : *(const float *)v;
        }
        int r = read_hparam(f, a, i, &def, cfg, c);
        ok[i] = r == GGUF_OK;
        if (r && !st) st = r;
    }
    for (int i = 0; i < QWEN_HP_COUNT; i++) bad |= !ok[i];
    if (c->done) return ended(st, c);

    /* An even head width (RoPE rotates pairs), at most QWEN_MAX_HEAD_DIM
     * (a key's range is checked, not a default's), the same for values;
     * n_head a multiple of n_head_kv (grouped-query attention). */
    int heads_ok = ok[QWEN_HP_EMBD] && ok[QWEN_HP_HEAD] && ok[QWEN_HP_HEAD_KV] &&
                   ok[QWEN_HP_KEY_LEN] && ok[QWEN_HP_VALUE_LEN];
    if (ok[QWEN_HP_KEY_LEN] && (cfg->head_dim % 2 != 0 || cfg->head_dim > QWEN_MAX_HEAD_DIM)) {
        const gguf_kv *kv = hp_find(f, a, QWEN_HP_KEY_LEN);
        char key[96];
        st = st ? st : GGUF_E_FORMAT;
        bad = 1;
        heads_ok = 0;
        if (kv)
            qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_FORMAT, kv->offset,
                            "%s: key '%s' is %" PRIu32 "; the head width must be even", name,
                            hp_key(key, sizeof key, a, QWEN_HP_KEY_LEN), cfg->head_dim);
        else
            qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_FORMAT, hp_find(f, a, QWEN_HP_HEAD)->offset,
                            "%s: head size %" PRIu32 " (embedding length / head count) must "
                            "be even and at most %u", name, cfg->head_dim, QWEN_MAX_HEAD_DIM);
    }
    if (c->done) return ended(st, c);
    if (heads_ok && cfg->head_dim_v != cfg->head_dim) {
        char key[96];
        st = st ? st : GGUF_E_UNSUPPORTED;
        bad = 1;
        heads_ok = 0;
        qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_UNSUPPORTED,
                        hp_find(f, a, QWEN_HP_VALUE_LEN)->offset,
                        "%s: key '%s' is %" PRIu32 ", unlike the key head width %" PRIu32
                        "; value heads of another width are not supported", name,
                        hp_key(key, sizeof key, a, QWEN_HP_VALUE_LEN), cfg->head_dim_v,
                        cfg->head_dim);
    }
    if (c->done) return ended(st, c);
    if (ok[QWEN_HP_HEAD] && ok[QWEN_HP_HEAD_KV] && cfg->n_head % cfg->n_head_kv != 0) {
        /* (Present: its default, the head count, divides itself.) */
        const gguf_kv *kv = hp_find(f, a, QWEN_HP_HEAD_KV);
        char key[96];
        st = st ? st : GGUF_E_FORMAT;
        bad = 1;
        heads_ok = 0;
        if (cfg->n_head_kv > cfg->n_head)
            qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_FORMAT, kv->offset,
                            "%s: key '%s' is %" PRIu32 ", more than the head count %" PRIu32,
                            name, hp_key(key, sizeof key, a, QWEN_HP_HEAD_KV), cfg->n_head_kv,
                            cfg->n_head);
        else
            qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_FORMAT, kv->offset,
                            "%s: head count %" PRIu32 " is not a multiple of the KV head count %"
                            PRIu32, name, cfg->n_head, cfg->n_head_kv);
    }
    if (c->done) return ended(st, c);
    /* At most QWEN_MAX_HEADS * QWEN_MAX_HEAD_DIM each. */
    cfg->n_q = cfg->n_head * cfg->head_dim;
    cfg->n_kv = cfg->n_head_kv * cfg->head_dim;

    /* n_vocab: the rows of token_embd.weight. */
    if (!ok[QWEN_HP_EMBD]) return st;
    const gguf_tensor *te = src_find(x, "token_embd.weight", NULL);
    if (!te)
        return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_NOT_FOUND, UINT64_MAX,
                               "%s: tensor 'token_embd.weight' is missing", name);
    if (te->n_dims != 2 || te->ne[0] != cfg->n_embd || te->ne[1] < 1 ||
        te->ne[1] > QWEN_MAX_VOCAB) {
        char have[128];
        qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_FORMAT, te->info_offset,
                        "%s: tensor 'token_embd.weight' has shape %s, expected (%" PRIu32
                        ", 1..%u)", name, shape_str(have, sizeof have, te->n_dims, te->ne),
                        cfg->n_embd, QWEN_MAX_VOCAB);
        return st ? st : GGUF_E_FORMAT;
    }
    cfg->n_vocab = (uint32_t)te->ne[1];
    if (dims_ok) *dims_ok = heads_ok && ok[QWEN_HP_LAYER] && ok[QWEN_HP_FF];

    /* Every token the tokenizer can give must have an embedding row.  (When
     * the tokens are not an array of strings the tokenizer says so.) */
    const gguf_kv *tok = gguf_kv_find(f, "tokenizer.ggml.tokens");
    if (tok && tok->value.type == GGUF_VT_ARRAY && tok->value.elem_type == GGUF_VT_STRING &&
        tok->value.count > cfg->n_vocab) {
        qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_FORMAT, tok->value.offset,
                        "%s: tokenizer.ggml.tokens: %" PRIu64 " tokens, more than the %" PRIu32
                        " rows of token_embd.weight", name, tok->value.count, cfg->n_vocab);
        return st ? st : GGUF_E_FORMAT;
    }
    return bad ? (st ? st : GGUF_E_FORMAT) : GGUF_OK;
}

int qwen_config_read(const gguf_file *f, qwen_config *cfg, gguf_error *err)
{
    if (!f || !cfg) return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_config_read: NULL argument");
    qwen_check c = QWEN_CHECK_FIRST(err);
    const qwen_arch *a;
    if (check_arch(f, NULL, &a, &c)) return c.status;
    const struct src x = {f, NULL};
    return check_config(&x, a, cfg, &c, NULL) ? c.status : GGUF_OK;
}

int qwen_config_read_set(const gguf_split *set, qwen_config *cfg, gguf_error *err)
{
    if (!set || !cfg)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_config_read_set: NULL argument");
    const gguf_file *f = gguf_split_shard(set, 0);
    qwen_check c = QWEN_CHECK_FIRST(err);
    const qwen_arch *a;
    if (check_arch(f, NULL, &a, &c)) return c.status;
    const struct src x = {f, gguf_split_count(set) > 1 ? set : NULL};
    return check_config(&x, a, cfg, &c, NULL) ? c.status : GGUF_OK;
}

/* ------------------------------------------------------------------------ */
/* Weights                                                                   */

/* Checks tensor `name` against rule r, the dimensions being dim[]; marks it
 * in used[] (when not NULL).  When base is not NULL, binds it there (a
 * qwen_layer or the qwen_weights), which needs its data in memory.
 * Returns GGUF_OK (an absent optional tensor too) or the problem's status. */
static int check_tensor(const struct src *x, const qwen_tensor_rule *r, const char *name,
                        const uint64_t *dim, void *base, unsigned char *used, qwen_check *c)
{
    uint64_t index = 0;
    const gguf_tensor *t = src_find(x, name, &index);
    if (!t) {
        if (r->flags & QWEN_T_OPTIONAL) return GGUF_OK;
        return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_NOT_FOUND, UINT64_MAX,
                               "%s: tensor '%s' is missing", gguf_name(x->f), name);
    }
    const char *file;
    src_at(x, index, &file); /* the file that holds it, for messages */
    if (used) used[index] = 1;
    uint32_t n = r->ne[1] == QWEN_DIM_NONE ? 1 : 2;
    uint64_t want[2] = {dim[r->ne[0]], n == 2 ? dim[r->ne[1]] : 0};
    if (t->n_dims != n || t->ne[0] != want[0] || (n == 2 && t->ne[1] != want[1])) {
        char have[128], exp[64];
        return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_FORMAT, t->info_offset,
                               "%s: tensor '%s' has shape %s, expected %s", file, name,
                               shape_str(have, sizeof have, t->n_dims, t->ne),
                               shape_str(exp, sizeof exp, n, want));
    }
    if (r->flags & QWEN_T_F32) {
        if (t->type != GGUF_T_F32)
            return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_FORMAT, t->info_offset,
                                   "%s: tensor '%s' has type %s, expected F32", file, name,
                                   type_str(t->type));
        /* The mapping starts on a page, so the file offset decides. */
        if (t->file_offset % sizeof(float) != 0)
            return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_UNSUPPORTED, t->info_offset,
                                   "%s: tensor '%s': F32 data at byte %" PRIu64 " is not 4-byte "
                                   "aligned", file, name, t->file_offset);
    } else if (!gguf_can_dequantize(t->type)) {
        return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_UNSUPPORTED, t->info_offset,
                               "%s: tensor '%s' has type %s, which cannot be computed", file,
                               name, type_str(t->type));
    }
    if (!base) return GGUF_OK;
    if (!t->data)
        return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_UNSUPPORTED, t->info_offset,
                               "%s: tensor '%s': data is not in memory (the model must be a "
                               "regular file, not a pipe)", file, name);
    if ((r->flags & QWEN_T_F32) && (uintptr_t)t->data % sizeof(float) != 0)
        return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_UNSUPPORTED, t->info_offset,
                               "%s: tensor '%s': F32 data is not 4-byte aligned in memory", file,
                               name);
    void *field = (char *)base + r->field;
    if (r->flags & QWEN_T_F32) {
        *(const float **)field = t->data;
    } else {
        /* The reader has checked that size = rows * row bytes fits the file. */
        qwen_matrix *m = field;
        m->data = t->data;
        m->type = t->type;
        m->cols = want[0];
        m->rows = want[1];
        m->row_bytes = (size_t)gguf_row_bytes(t->type, want[0]);
    }
    return GGUF_OK;
}

/* Checks every tensor of the model whose configuration is cfg, in table
 * order, the global ones first; with w (whose layers hold cfg->n_layer
 * entries), binds them.  Returns GGUF_OK or the first problem's status. */
static int check_tensors(const struct src *x, const qwen_config *cfg, qwen_weights *w,
                         unsigned char *used, qwen_check *c)
{
    const uint64_t dim[QWEN_DIM_COUNT] = {
        [QWEN_DIM_EMBD] = cfg->n_embd, [QWEN_DIM_Q] = cfg->n_q, [QWEN_DIM_KV] = cfg->n_kv,
        [QWEN_DIM_HEAD] = cfg->head_dim, [QWEN_DIM_FF] = cfg->n_ff, [QWEN_DIM_VOCAB] = cfg->n_vocab,
    };
    const qwen_arch *a = cfg->arch;
    int st = GGUF_OK, r;
    for (size_t i = 0; i < a->n_tensors && !c->done; i++) {
        const qwen_tensor_rule *t = &a->tensors[i];
        if (!(t->flags & QWEN_T_LAYER) && (r = check_tensor(x, t, t->name, dim, w, used, c)) && !st)
            st = r;
    }
    for (uint32_t l = 0; l < cfg->n_layer && !c->done; l++) {
        for (size_t i = 0; i < a->n_tensors && !c->done; i++) {
            const qwen_tensor_rule *t = &a->tensors[i];
            if (!(t->flags & QWEN_T_LAYER)) continue;
            char name[64];
            snprintf(name, sizeof name, t->name, (unsigned)l);
            if ((r = check_tensor(x, t, name, dim, w ? &w->layers[l] : NULL, used, c)) && !st)
                st = r;
        }
    }
    if (!st && w) {
        w->tied = w->output.data == NULL;
        if (w->tied) w->output = w->token_embd;
    }
    return st;
}

/* A note naming the first tensor that no rule of architecture a used, when
 * there is one. */
static void note_unused(const struct src *x, const qwen_arch *a, const unsigned char *used,
                        qwen_check *c)
{
    uint64_t n = src_count(x), unused = 0, first = 0;
    for (uint64_t i = 0; i < n; i++)
        if (!used[i] && unused++ == 0) first = i;
    if (!unused) return;
    const char *file;
    const gguf_tensor *t = src_at(x, first, &file);
    char buf[160], more[64] = "";
    if (unused == 2) snprintf(more, sizeof more, " (nor is one other)");
    else if (unused > 2) snprintf(more, sizeof more, " (nor are %" PRIu64 " others)", unused - 1);
    qwen_check_fail(c, QWEN_LLAMA_NOTE, GGUF_OK, t->info_offset,
                    "%s: tensor %" PRIu64 " '%s' is not part of the %s architecture%s; "
                    "llama.cpp refuses files with tensors it does not use", file,
                    first,
                    escape(buf, sizeof buf, t->name), a->name, more);
}

/* The tensor data is read in place in host byte order. */
static int check_byte_order(const struct src *x, qwen_check *c)
{
    const uint32_t n = x->set ? gguf_split_count(x->set) : 1;
    for (uint32_t i = 0; i < n; i++) {
        const gguf_file *f = x->set ? gguf_split_shard(x->set, i) : x->f;
        if (gguf_byte_order(f) != GGUF_LITTLE_ENDIAN)
            return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_UNSUPPORTED, UINT64_MAX,
                                   "%s: big-endian model files are not supported", gguf_name(f));
    }
    return GGUF_OK;
}

static int model_check(const struct src *x, const char *arch, qwen_check *c)
{
    const gguf_file *f = x->f;
    check_byte_order(x, c);
    /* Another architecture: its keys and tensors are not these. */
    const qwen_arch *a;
    if (c->done || check_arch(f, arch, &a, c) || c->done) return c->status;
    qwen_config cfg;
    int dims_ok;
    check_config(x, a, &cfg, c, &dims_ok);
    if (dims_ok && !c->done) {
        uint64_t n = src_count(x);
        unsigned char *used = calloc((size_t)(n ? n : 1), 1);
        if (!used)
            return qwen_check_fail(c, QWEN_PROBLEM, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory",
                                   gguf_name(f));
        check_tensors(x, &cfg, NULL, used, c);
        /* Only a walk that ended has seen every tensor it would use. */
        if (!c->done) note_unused(x, a, used, c);
        free(used);
    }
    if (!c->done) qwen_tokenizer_check(f, c);
    return c->status;
}

int qwen_model_check(const gguf_file *f, const char *arch, qwen_check *c)
{
    if (!f || !c) return GGUF_E_INVALID;
    const struct src x = {f, NULL};
    return model_check(&x, arch, c);
}

int qwen_model_check_split(const gguf_split *s, const char *arch, qwen_check *c)
{
    if (!s || !c) return GGUF_E_INVALID;
    const struct src x = {gguf_split_shard(s, 0), s};
    return model_check(&x, arch, c);
}

int qwen_model_open(qwen_model **out, const char *path, gguf_error *err)
{
    if (!out || !path) return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "qwen_model_open: NULL argument");
    *out = NULL;
    gguf_split *set;
    int st = gguf_split_open(&set, path, 0, err);
    if (st) return st;
    /* The weights are used in place, in the mapping: a stream (a pipe, or
     * gzip, which is decompressed as a stream even from a regular file)
     * has no mapping.  Said here, once, rather than at the first tensor. */
    for (uint32_t i = 0; i < gguf_split_count(set); i++) {
        const gguf_file *f = gguf_split_shard(set, i);
        if (gguf_is_stream(f)) {
            st = qwen_fail(err, GGUF_E_UNSUPPORTED, UINT64_MAX,
                           "%s: the model must be a regular, uncompressed file, which is "
                           "memory-mapped; this is %s", gguf_name(f),
                           gguf_input_mode(f) == GGUF_INPUT_GZIP
                               ? "gzip-compressed (gunzip it first)"
                               : "a pipe or other stream");
            gguf_split_close(set);
            return st;
        }
    }
    qwen_model *m = calloc(1, sizeof *m);
    if (!m) {
        gguf_split_close(set);
        return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", path);
    }
    m->set = set;
    m->file = gguf_split_shard(set, 0);
    const struct src x = {m->file, gguf_split_count(set) > 1 ? set : NULL};
    gguf_file *f = m->file;
    qwen_check c = QWEN_CHECK_FIRST(err);
    const qwen_arch *a;
    if (check_byte_order(&x, &c) || check_arch(f, NULL, &a, &c) ||
        check_config(&x, a, &m->config, &c, NULL)) {
        st = c.status;
        goto fail;
    }
    /* n_layer is checked: at most QWEN_MAX_LAYERS. */
    m->weights.layers = calloc(m->config.n_layer, sizeof *m->weights.layers);
    if (!m->weights.layers) {
        st = qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", gguf_name(f));
        goto fail;
    }
    if ((st = check_tensors(&x, &m->config, &m->weights, NULL, &c))) goto fail;
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
    gguf_split_close(m->set);
    free(m);
}

uint64_t qwen_widest_input(const qwen_config *c)
{
    uint64_t w = c->n_embd > c->n_ff ? c->n_embd : c->n_ff;
    return w > c->n_q ? w : c->n_q;
}

void qwen_rope_angles(float *cs, uint32_t pos, uint32_t head_dim, float base)
{
    float step = powf(base, -2.0f / (float)head_dim);
    float theta = (float)pos;
    for (uint32_t i = 0; i < head_dim / 2; i++) {
        cs[2 * i] = cosf(theta);
        cs[2 * i + 1] = sinf(theta);
        theta *= step;
    }
}
