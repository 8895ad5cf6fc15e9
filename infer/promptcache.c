/* promptcache.c -- prompt caches in GGUF files; see promptcache.h. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "infer/check.h"
#include "infer/promptcache.h"

#define KEY_VERSION "qwen.prompt_cache.version"
#define KEY_MODEL "qwen.prompt_cache.model"
#define KEY_TOKENS "qwen.prompt_cache.tokens"
#define KEY_SUM "qwen.prompt_cache.xxh3"
#define TENSOR "kv"

/* Bytes of each end of a tensor's data that the digest reads. */
#define DIGEST_EDGE 4096u

void qwen_model_digest(const qwen_model *m, gguf_digest *out)
{
    gguf_hasher *h = gguf_hasher_new(GGUF_HASH_XXH128);
    if (!h) {
        memset(out, 0, sizeof *out);
        return;
    }
    for (uint32_t i = 0; i < gguf_split_count(m->set); i++) {
        const gguf_file *f = gguf_split_shard(m->set, i);
        gguf_hasher_update(h, gguf_header_bytes(f), (size_t)gguf_header_size(f));
        for (uint64_t k = 0; k < gguf_tensor_count(f); k++) {
            const gguf_tensor *t = gguf_tensor_at(f, k);
            if (!t->data) continue;
            const size_t n = t->size < DIGEST_EDGE ? (size_t)t->size : DIGEST_EDGE;
            gguf_hasher_update(h, t->data, n);
            gguf_hasher_update(h, (const unsigned char *)t->data + t->size - n, n);
        }
    }
    gguf_hasher_digest(h, out);
    gguf_hasher_free(h);
}

/* The per-position bytes of the state: a key and a value row a layer. */
static uint64_t row_bytes(const qwen_model *m)
{
    return 2 * (uint64_t)m->config.n_layer * m->config.n_kv * sizeof(uint16_t);
}

/* XXH3 of the ids and of the state, as hex. */
static void sum_hex(const int32_t *ids, size_t n, const void *state, uint64_t bytes, char *hex)
{
    gguf_hasher *h = gguf_hasher_new(GGUF_HASH_XXH3);
    gguf_digest d;
    memset(&d, 0, sizeof d);
    if (h) {
        gguf_hasher_update(h, ids, n * sizeof *ids);
        gguf_hasher_update(h, state, (size_t)bytes);
        gguf_hasher_digest(h, &d);
        gguf_hasher_free(h);
    }
    gguf_digest_hex(&d, hex);
}

int qwen_prompt_cache_save(const char *path, const qwen_model *m, const int32_t *ids, size_t n,
                           const void *state, gguf_error *err)
{
    if (n == 0) return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "%s: a prompt cache of no tokens", path);
    const uint64_t bytes = row_bytes(m) * n;
    gguf_digest md;
    qwen_model_digest(m, &md);
    char mhex[GGUF_DIGEST_HEX_MAX], shex[GGUF_DIGEST_HEX_MAX];
    gguf_digest_hex(&md, mhex);
    sum_hex(ids, n, state, bytes, shex);
    gguf_writer *w = gguf_writer_new();
    if (!w) return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", path);
    const uint64_t ne[3] = {m->config.n_kv, 2 * (uint64_t)m->config.n_layer, n};
    int st = gguf_writer_add_u32(w, KEY_VERSION, QWEN_PROMPT_CACHE_VERSION, err);
    if (!st) st = gguf_writer_add_str(w, KEY_MODEL, mhex, strlen(mhex), err);
    if (!st) st = gguf_writer_add_array(w, KEY_TOKENS, GGUF_VT_INT32, ids, n, err);
    if (!st) st = gguf_writer_add_str(w, KEY_SUM, shex, strlen(shex), err);
    if (!st) st = gguf_writer_add_tensor(w, TENSOR, GGUF_T_F16, 3, ne, err);
    if (!st) st = gguf_writer_open(w, path, err);
    if (!st) st = gguf_writer_write(w, state, (size_t)bytes, err);
    if (!st) st = gguf_writer_finish(w, err);
    gguf_writer_free(w);
    return st;
}

/* A refusal of the cache at path: GGUF_E_FORMAT with the reason. */
#define REFUSE(...) (st = qwen_fail(err, GGUF_E_FORMAT, UINT64_MAX, __VA_ARGS__))

int qwen_prompt_cache_load(const char *path, const qwen_model *m, qwen_ids *ids, void **state,
                           gguf_error *err)
{
    *state = NULL;
    gguf_file *f;
    gguf_error oe;
    int st = gguf_open(&f, path, NULL, 0, &oe);
    if (st) {
        if (st == GGUF_E_IO && oe.sys_errno == ENOENT)
            return qwen_fail(err, GGUF_E_NOT_FOUND, UINT64_MAX, "%s: no such file", path);
        if (err) *err = oe;
        return st;
    }
    uint32_t version = 0;
    gguf_str model, sum;
    const gguf_value *tokens;
    const gguf_tensor *t = gguf_tensor_find(f, TENSOR);
    char mhex[GGUF_DIGEST_HEX_MAX], shex[GGUF_DIGEST_HEX_MAX];
    gguf_digest md;
    qwen_model_digest(m, &md);
    gguf_digest_hex(&md, mhex);
    if (gguf_kv_u32(f, KEY_VERSION, &version, NULL) != GGUF_OK ||
        gguf_kv_str(f, KEY_MODEL, &model, NULL) != GGUF_OK ||
        gguf_kv_array(f, KEY_TOKENS, GGUF_VT_INT32, &tokens, NULL) != GGUF_OK ||
        gguf_kv_str(f, KEY_SUM, &sum, NULL) != GGUF_OK || !t) {
        REFUSE("%s: not a prompt cache (a GGUF file without %s, %s, %s, %s and tensor '%s')", path,
               KEY_VERSION, KEY_MODEL, KEY_TOKENS, KEY_SUM, TENSOR);
        goto done;
    }
    if (version != QWEN_PROMPT_CACHE_VERSION) {
        REFUSE("%s: a prompt cache of version %" PRIu32 ", this qwen-run reads version %u", path,
               version, QWEN_PROMPT_CACHE_VERSION);
        goto done;
    }
    if (model.len != strlen(mhex) || memcmp(model.ptr, mhex, model.len) != 0) {
        REFUSE("%s: made for another model (digest %.*s, this model's %s)", path, (int)model.len,
               model.ptr, mhex);
        goto done;
    }
    const uint64_t n = tokens->count;
    if (gguf_data_swapped(f) || !t->data) {
        REFUSE("%s: %s", path, !t->data ? "not a regular file" : "made on a machine of the other byte order");
        goto done;
    }
    if (t->type != GGUF_T_F16 || t->n_dims != 3 || t->ne[0] != m->config.n_kv ||
        t->ne[1] != 2 * (uint64_t)m->config.n_layer || n == 0 || t->ne[2] != n) {
        REFUSE("%s: tensor '%s' is not the shape of %" PRIu64 " positions of this model", path,
               TENSOR, n);
        goto done;
    }
    const uint64_t bytes = row_bytes(m) * n;
    const int32_t *v = gguf_array_data(tokens);
    for (uint64_t i = 0; i < n && !st; i++) {
        int32_t id;
        memcpy(&id, v + i, sizeof id);
        if (id < 0 || (uint32_t)id >= m->config.n_vocab)
            REFUSE("%s: token %" PRIu64 " has id %" PRId32 ", outside the vocabulary", path, i, id);
        else if (qwen_ids_push(ids, id))
            st = qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", path);
    }
    if (st) goto done;
    sum_hex(ids->v, ids->n, t->data, bytes, shex);
    if (sum.len != strlen(shex) || memcmp(sum.ptr, shex, sum.len) != 0) {
        REFUSE("%s: damaged: the checksum of its tokens and keys and values does not match", path);
        goto done;
    }
    if (!(*state = malloc(bytes ? (size_t)bytes : 1))) {
        st = qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", path);
        goto done;
    }
    memcpy(*state, t->data, (size_t)bytes);
done:
    if (st) ids->n = 0;
    gguf_close(f);
    return st;
}

int qwen_prompt_cache_replaceable(const char *path)
{
    gguf_file *f;
    gguf_error err;
    int st = gguf_open(&f, path, NULL, GGUF_OPEN_NO_MMAP | GGUF_OPEN_SEQUENTIAL, &err);
    if (st) return st == GGUF_E_IO && err.sys_errno == ENOENT;
    int ours = gguf_kv_find(f, KEY_VERSION) != NULL;
    gguf_close(f);
    return ours;
}
