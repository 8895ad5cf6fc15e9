/* tokenizer.c -- the Qwen2 byte-level BPE tokenizer (see tokenizer.h). */
#include <config.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/tokenizer.h"

/* The Qwen2 pre-tokenizer split, as Qwen2's tokenizer.json gives it, with
 * the case-insensitive group (?i:'s|'t|'re|'ve|'m|'ll|'d) written out as
 * ASCII classes: under Unicode case folding (?i) would also let 's' match
 * U+017F and 'k' U+212A, which the reference splitters do not do. */
static const char qwen2_pattern[] =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
    "|\\p{N}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+"
    "|\\s+(?!\\S)"
    "|\\s+";

#define KEY_MODEL "tokenizer.ggml.model"
#define KEY_PRE "tokenizer.ggml.pre"
#define KEY_TOKENS "tokenizer.ggml.tokens"
#define KEY_TYPES "tokenizer.ggml.token_type"
#define KEY_MERGES "tokenizer.ggml.merges"
#define KEY_BOS "tokenizer.ggml.bos_token_id"
#define KEY_EOS "tokenizer.ggml.eos_token_id"
#define KEY_PAD "tokenizer.ggml.padding_token_id"

#define EMPTY_KEY UINT64_MAX

/* Vocabulary lookup: raw bytes -> id, open addressing.  The bytes are the
 * token's piece (t->pieces), so slots hold only the id and the hash. */
struct vocab_slot {
    int32_t id;     /* -1 when empty */
    uint32_t hash;
};

/* Merge lookup: (left id, right id) -> rank and merged id. */
struct merge_slot {
    uint64_t key;   /* left << 32 | right, EMPTY_KEY when empty */
    uint32_t rank;
    int32_t result;
};

struct qwen_tokenizer {
    int32_t n_vocab;
    uint8_t *types;         /* (n_vocab) enum qwen_token_type, clamped to 0..255 */
    uint64_t *piece_off;    /* (n_vocab + 1) offsets of each token's bytes in pieces */
    char *pieces;           /* every token's bytes, back to back */
    int32_t byte_id[256];   /* the token of each single byte */
    uint64_t max_bytes;     /* the longest token's bytes */

    struct vocab_slot *vocab; /* byte-level tokens only */
    uint64_t vocab_mask;      /* capacity - 1 */
    struct merge_slot *merges;
    uint64_t merge_mask;

    int32_t *special;       /* control/user-defined/unknown ids, longest text first */
    size_t n_special;

    pcre2_code *re;
    int32_t bos, eos, pad;
};

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */

/* Formats "FILE: KEY: text" into err with qwen_fail, which adds
 * " (at byte OFF)" unless offset is UINT64_MAX. */
static int vfail(gguf_error *err, int status, const gguf_file *f, const char *key,
                 uint64_t offset, const char *fmt, va_list ap)
{
    char text[sizeof err->message];
    vsnprintf(text, sizeof text, fmt, ap);
    return qwen_fail(err, status, offset, "%s: %s: %s", f ? gguf_name(f) : "tokenizer", key, text);
}

/* Fills err (when not NULL) with "FILE: KEY: text (at byte OFF)" and returns
 * status. */
__attribute__((format(printf, 6, 7)))
static int fail(gguf_error *err, int status, const gguf_file *f, const char *key,
                uint64_t offset, const char *fmt, ...)
{
    if (!err) return status;
    va_list ap;
    va_start(ap, fmt);
    vfail(err, status, f, key, offset, fmt, ap);
    va_end(ap);
    return status;
}

/* As fail(), for the checks of loading: the finding (a problem, or with
 * kind QWEN_LLAMA_NOTE a note) goes to c.  Returns what qwen_check_add
 * returns. */
__attribute__((format(printf, 7, 8)))
static int report(qwen_check *c, int kind, int status, const gguf_file *f, const char *key,
                  uint64_t offset, const char *fmt, ...)
{
    gguf_error e;
    va_list ap;
    va_start(ap, fmt);
    vfail(&e, status, f, key, offset, fmt, ap);
    va_end(ap);
    return qwen_check_add(c, kind, &e);
}

#define problem(c, ...) report((c), QWEN_PROBLEM, __VA_ARGS__)

static int fail_nomem(qwen_check *c, const gguf_file *f)
{
    return problem(c, GGUF_E_NOMEM, f, "tokenizer", UINT64_MAX, "out of memory");
}

/* A printable rendering of len bytes at s into buf (size n), for messages. */
static const char *quote(char *buf, size_t n, const char *s, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 8 < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, n - o, "\\x%02x", c);
        if (i + 1 < len && o + 8 >= n) {
            memcpy(buf + o, "...", 3);
            o += 3;
        }
    }
    buf[o] = '\0';
    return buf;
}

/* Type name of a value for messages: "UINT32", "ARRAY of STRING". */
static const char *value_type_name(char *buf, size_t n, const gguf_value *v)
{
    const char *t = gguf_vtype_name(v->type);
    if (v->type == GGUF_VT_ARRAY) {
        const char *e = gguf_vtype_name(v->elem_type);
        snprintf(buf, n, "ARRAY of %s", e ? e : "?");
    } else {
        snprintf(buf, n, "%s", t ? t : "?");
    }
    return buf;
}

/* Finds key in f.  When absent: GGUF_E_NOT_FOUND (required) or GGUF_OK with
 * *out NULL.  When present with another type than `type` (and, for arrays,
 * elements of `elem`): GGUF_E_TYPE. */
static int find_key(const gguf_file *f, const char *key, uint32_t type, uint32_t elem,
                    int required, const gguf_kv **out, qwen_check *c)
{
    const gguf_kv *kv = gguf_kv_find(f, key);
    *out = NULL;
    if (!kv) {
        if (required)
            return problem(c, GGUF_E_NOT_FOUND, f, key, UINT64_MAX, "missing");
        return GGUF_OK;
    }
    if (kv->value.type != type || (type == GGUF_VT_ARRAY && kv->value.elem_type != elem)) {
        char have[64];
        value_type_name(have, sizeof have, &kv->value);
        if (type == GGUF_VT_ARRAY)
            return problem(c, GGUF_E_TYPE, f, key, kv->value.offset,
                           "is %s, expected ARRAY of %s", have, gguf_vtype_name(elem));
        return problem(c, GGUF_E_TYPE, f, key, kv->value.offset, "is %s, expected %s", have,
                       gguf_vtype_name(type));
    }
    *out = kv;
    return GGUF_OK;
}

/* ------------------------------------------------------------------------ */
/* The GPT-2 byte <-> unicode mapping                                        */

/* GPT-2's byte-level alphabet writes the printable bytes '!'..'~',
 * 0xA1..0xAC and 0xAE..0xFF as the code points of the same value, and the
 * other 68 bytes, in increasing order, as U+0100, U+0101 ...  So space
 * (0x20) is U+0120 'Ġ' and newline U+010A 'Ċ'. */
static int byte_printable(unsigned b)
{
    return (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
}

/* The inverse: code point -> byte, -1 for code points outside the
 * alphabet.  Built once per tokenizer load into a 324-entry table. */
#define BYTE_CP_LIMIT 0x144
static void build_cp_to_byte(int16_t map[BYTE_CP_LIMIT])
{
    for (unsigned c = 0; c < BYTE_CP_LIMIT; c++) map[c] = -1;
    unsigned extra = 0;
    for (unsigned b = 0; b < 256; b++) {
        if (byte_printable(b))
            map[b] = (int16_t)b;
        else
            map[0x100 + extra++] = (int16_t)b;
    }
}

/* Decodes one UTF-8 character at s (n > 0 bytes left).  Returns its length
 * and stores the code point, or returns 0 for an invalid sequence. */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if (c >= 0xc2 && c <= 0xdf) len = 2, v = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef) len = 3, v = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4) len = 4, v = c & 0x07, min = 0x10000;
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
    *cp = v;
    return len;
}

/* Writes into out the raw bytes the byte-level text (len bytes at s)
 * stands for.  Returns the number of bytes, or -1 when s holds a character
 * outside the alphabet (or invalid UTF-8).  out has room for len bytes
 * (each character gives one byte and takes at least one). */
static long byte_decode(const int16_t *cp_to_byte, const char *s, size_t len, char *out)
{
    size_t i = 0, o = 0;
    while (i < len) {
        uint32_t cp;
        size_t k = utf8_next((const unsigned char *)s + i, len - i, &cp);
        if (!k || cp >= BYTE_CP_LIMIT || cp_to_byte[cp] < 0) return -1;
        out[o++] = (char)cp_to_byte[cp];
        i += k;
    }
    return (long)o;
}

/* ------------------------------------------------------------------------ */
/* Hash tables                                                               */

static uint32_t hash_bytes(const char *s, size_t n)
{
    /* FNV-1a, finished with a multiply-shift mix so that low bits spread. */
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(h ^ (h >> 32));
}

static uint64_t hash_pair(uint64_t key)
{
    key ^= key >> 31;
    key *= 0x9e3779b97f4a7c15ull;
    key ^= key >> 29;
    return key;
}

static const char *piece_of(const qwen_tokenizer *t, int32_t id, size_t *len)
{
    *len = (size_t)(t->piece_off[id + 1] - t->piece_off[id]);
    return t->pieces + t->piece_off[id];
}

/* The id of the byte-level token with raw bytes s, or -1. */
static int32_t vocab_get(const qwen_tokenizer *t, const char *s, size_t n)
{
    uint32_t h = hash_bytes(s, n);
    for (uint64_t i = h & t->vocab_mask;; i = (i + 1) & t->vocab_mask) {
        const struct vocab_slot *sl = &t->vocab[i];
        if (sl->id < 0) return -1;
        if (sl->hash == h) {
            size_t pl;
            const char *p = piece_of(t, sl->id, &pl);
            if (pl == n && memcmp(p, s, n) == 0) return sl->id;
        }
    }
}

/* Adds token id under its piece; a later token with the same bytes takes the
 * place of an earlier one (as the reference's text-to-id map does). */
static void vocab_put(qwen_tokenizer *t, int32_t id)
{
    size_t n;
    const char *s = piece_of(t, id, &n);
    uint32_t h = hash_bytes(s, n);
    for (uint64_t i = h & t->vocab_mask;; i = (i + 1) & t->vocab_mask) {
        struct vocab_slot *sl = &t->vocab[i];
        if (sl->id < 0) {
            sl->id = id;
            sl->hash = h;
            return;
        }
        if (sl->hash == h) {
            size_t pl;
            const char *p = piece_of(t, sl->id, &pl);
            if (pl == n && memcmp(p, s, n) == 0) {
                sl->id = id;
                return;
            }
        }
    }
}

static const struct merge_slot *merge_get(const qwen_tokenizer *t, int32_t left, int32_t right)
{
    uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    for (uint64_t i = hash_pair(key) & t->merge_mask;; i = (i + 1) & t->merge_mask) {
        const struct merge_slot *sl = &t->merges[i];
        if (sl->key == key) return sl;
        if (sl->key == EMPTY_KEY) return NULL;
    }
}

/* Adds a merge unless the pair has one already (the first, lowest rank
 * wins, as in the reference). */
static void merge_put(qwen_tokenizer *t, int32_t left, int32_t right, uint32_t rank,
                      int32_t result)
{
    uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    for (uint64_t i = hash_pair(key) & t->merge_mask;; i = (i + 1) & t->merge_mask) {
        struct merge_slot *sl = &t->merges[i];
        if (sl->key == key) return;
        if (sl->key == EMPTY_KEY) {
            sl->key = key;
            sl->rank = rank;
            sl->result = result;
            return;
        }
    }
}

/* Smallest power of two >= 2n (load factor at most one half), at least 16. */
static uint64_t table_cap(uint64_t n)
{
    uint64_t c = 16;
    while (c < 2 * n) c *= 2;
    return c;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */

void qwen_tokenizer_free(qwen_tokenizer *t)
{
    if (!t) return;
    free(t->types);
    free(t->piece_off);
    free(t->pieces);
    free(t->vocab);
    free(t->merges);
    free(t->special);
    pcre2_code_free(t->re);
    free(t);
}

/* Reads an optional token id key into *id (-1 when absent), checked against
 * the vocabulary size. */
static int load_id(const gguf_file *f, const char *key, int32_t n_vocab, int32_t *id,
                   qwen_check *c)
{
    *id = -1;
    const gguf_kv *kv = gguf_kv_find(f, key);
    if (!kv) return GGUF_OK;
    uint64_t v;
    char have[64];
    if (gguf_kv_uint(f, key, &v, NULL) != GGUF_OK)
        return problem(c, GGUF_E_TYPE, f, key, kv->value.offset,
                       "is %s, expected an unsigned integer token id",
                       value_type_name(have, sizeof have, &kv->value));
    if (v >= (uint64_t)n_vocab)
        return problem(c, GGUF_E_FORMAT, f, key, kv->value.offset,
                       "token id %llu is out of range (vocabulary has %ld tokens)",
                       (unsigned long long)v, (long)n_vocab);
    if (kv->value.type != GGUF_VT_UINT32)
        report(c, QWEN_LLAMA_NOTE, GGUF_OK, f, key, kv->value.offset,
               "is %s; llama.cpp reads token ids as UINT32 only",
               value_type_name(have, sizeof have, &kv->value));
    *id = (int32_t)v;
    return GGUF_OK;
}

/* A special token for sorting: decreasing text length, then increasing id. */
struct special_key {
    uint64_t len;
    int32_t id;
};

static int special_cmp(const void *a, const void *b)
{
    const struct special_key *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int is_special_type(int type)
{
    return type == QWEN_TOKEN_CONTROL || type == QWEN_TOKEN_USER_DEFINED ||
           type == QWEN_TOKEN_UNKNOWN;
}

/* Checks model and pre-tokenizer names.  The two keys are independent:
 * both are checked. */
static int check_model(const gguf_file *f, qwen_check *c)
{
    const gguf_kv *kv;
    char q[64];
    int st = find_key(f, KEY_MODEL, GGUF_VT_STRING, 0, 1, &kv, c);
    if (!st) {
        gguf_str s = kv->value.v.str;
        if (s.len != 4 || memcmp(s.ptr, "gpt2", 4) != 0)
            st = problem(c, GGUF_E_UNSUPPORTED, f, KEY_MODEL, kv->value.offset,
                         "tokenizer model '%s' is not supported (only 'gpt2', byte-level BPE)",
                         quote(q, sizeof q, s.ptr, s.len));
    }
    if (c->done) return st;
    int r = find_key(f, KEY_PRE, GGUF_VT_STRING, 0, 0, &kv, c);
    if (r || !kv) return st ? st : r;
    gguf_str s = kv->value.v.str;
    static const char *const ok[] = {"qwen2", "deepseek-r1-qwen"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (s.len == strlen(ok[i]) && memcmp(s.ptr, ok[i], s.len) == 0) return st;
    r = problem(c, GGUF_E_UNSUPPORTED, f, KEY_PRE, kv->value.offset,
                "pre-tokenizer '%s' is not supported (only 'qwen2')",
                quote(q, sizeof q, s.ptr, s.len));
    return st ? st : r;
}

/* Loads tokens and types: pieces, the vocabulary table, byte ids, the
 * special list.  t->n_vocab is set as soon as the token array is usable,
 * so that the token ids can be checked even when the types are not.
 * Returns GGUF_OK when the vocabulary is complete. */
static int load_tokens(qwen_tokenizer *t, const gguf_file *f, qwen_check *c)
{
    const gguf_kv *tk, *ty;
    int st = find_key(f, KEY_TOKENS, GGUF_VT_ARRAY, GGUF_VT_STRING, 1, &tk, c);
    if (st) return st;
    const gguf_value *tokens = &tk->value;
    if (tokens->count < 256 || tokens->count > INT32_MAX)
        return problem(c, GGUF_E_FORMAT, f, KEY_TOKENS, tokens->offset,
                       "%llu tokens; a byte-level vocabulary has 256 to %ld",
                       (unsigned long long)tokens->count, (long)INT32_MAX);
    int32_t n = (int32_t)tokens->count;
    t->n_vocab = n;
    if (c->done) return c->status;
    st = find_key(f, KEY_TYPES, GGUF_VT_ARRAY, GGUF_VT_INT32, 1, &ty, c);
    if (st) return st;
    const gguf_value *types = &ty->value;
    if (types->count != tokens->count)
        return problem(c, GGUF_E_FORMAT, f, KEY_TYPES, types->offset,
                       "%llu entries for %llu tokens", (unsigned long long)types->count,
                       (unsigned long long)tokens->count);

    uint64_t total = 0;
    for (int32_t i = 0; i < n; i++) total += gguf_array_str(tokens, (uint64_t)i).len;
    t->types = malloc((size_t)n);
    t->piece_off = malloc(sizeof *t->piece_off * ((size_t)n + 1));
    t->pieces = malloc(total ? total : 1);
    uint64_t vcap = table_cap((uint64_t)n);
    t->vocab = malloc(sizeof *t->vocab * vcap);
    if (!t->types || !t->piece_off || !t->pieces || !t->vocab) return fail_nomem(c, f);
    t->vocab_mask = vcap - 1;
    for (uint64_t i = 0; i < vcap; i++) t->vocab[i].id = -1;

    int16_t cp_to_byte[BYTE_CP_LIMIT];
    build_cp_to_byte(cp_to_byte);
    const void *raw_types = gguf_array_data(types);
    uint64_t off = 0;
    size_t n_special = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t type;
        if (raw_types) {
            memcpy(&type, (const char *)raw_types + 4 * (size_t)i, 4);
        } else {
            gguf_value v;
            gguf_array_get(types, (uint64_t)i, &v);
            type = v.v.i32;
        }
        t->types[i] = (uint8_t)(type >= 0 && type <= 255 ? type : QWEN_TOKEN_UNDEFINED);
        gguf_str s = gguf_array_str(tokens, (uint64_t)i);
        char *dst = t->pieces + off;
        t->piece_off[i] = off;
        /* Ordinary tokens are byte-level text and stand for the bytes behind
         * it; specials keep their text, as does text outside the byte
         * alphabet (possible only in an odd file). */
        long k = -1;
        int special = is_special_type(t->types[i]);
        if (!special) k = byte_decode(cp_to_byte, s.ptr, s.len, dst);
        int byte_level = k >= 0;
        if (k < 0) {
            if (s.len) memcpy(dst, s.ptr, s.len);
            k = (long)s.len;
        }
        /* A special whose text is plain ASCII reads the same in the byte
         * alphabet, where the reference's BPE could meet it too. */
        if (special && k > 0) {
            n_special++;
            byte_level = 1;
            for (long b = 0; b < k; b++)
                if (!(dst[b] >= 0x21 && dst[b] <= 0x7e)) byte_level = 0;
        }
        off += (uint64_t)k;
        t->piece_off[i + 1] = off;
        if ((uint64_t)k > t->max_bytes) t->max_bytes = (uint64_t)k;
        if (byte_level) vocab_put(t, i);
    }

    unsigned missing = 0, first = 0;
    for (unsigned b = 0; b < 256; b++) {
        char ch = (char)b;
        t->byte_id[b] = vocab_get(t, &ch, 1);
        if (t->byte_id[b] < 0 && missing++ == 0) first = b;
    }
    if (missing) {
        char more[64] = "";
        if (missing > 1) snprintf(more, sizeof more, " (nor for %u other bytes)", missing - 1);
        return problem(c, GGUF_E_FORMAT, f, KEY_TOKENS, tokens->offset,
                       "no token for byte 0x%02x%s, which byte-level BPE needs", first, more);
    }

    t->special = malloc(sizeof *t->special * (n_special ? n_special : 1));
    struct special_key *keys = malloc(sizeof *keys * (n_special ? n_special : 1));
    if (!t->special || !keys) {
        free(keys);
        return fail_nomem(c, f);
    }
    size_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        uint64_t len = t->piece_off[i + 1] - t->piece_off[i];
        if (is_special_type(t->types[i]) && len > 0) keys[m++] = (struct special_key){len, i};
    }
    qsort(keys, m, sizeof *keys, special_cmp);
    for (size_t i = 0; i < m; i++) t->special[i] = keys[i].id;
    t->n_special = m;
    free(keys);
    return GGUF_OK;
}

/* Loads the merges into the merge table: merge i has rank i.  Each merge
 * that is not two tokens is a problem of its own, at its own offset. */
static int load_merges(qwen_tokenizer *t, const gguf_file *f, qwen_check *c)
{
    const gguf_kv *kv;
    int st = find_key(f, KEY_MERGES, GGUF_VT_ARRAY, GGUF_VT_STRING, 1, &kv, c);
    if (st) return st;
    const gguf_value *merges = &kv->value;
    if (merges->count > UINT32_MAX)
        return problem(c, GGUF_E_FORMAT, f, KEY_MERGES, merges->offset, "%llu merges is too many",
                       (unsigned long long)merges->count);
    uint64_t cap = table_cap(merges->count);
    t->merges = malloc(sizeof *t->merges * cap);
    if (!t->merges) return fail_nomem(c, f);
    t->merge_mask = cap - 1;
    for (uint64_t i = 0; i < cap; i++) t->merges[i].key = EMPTY_KEY;

    int16_t cp_to_byte[BYTE_CP_LIMIT];
    build_cp_to_byte(cp_to_byte);
    char *buf = NULL;
    size_t buf_cap = 0;
    for (uint64_t i = 0; i < merges->count && !c->done; i++) {
        gguf_value e;
        gguf_array_get(merges, i, &e);
        gguf_str s = e.v.str;
        char q[96];
        /* "LEFT RIGHT": byte-level text has no space, so the first space
         * (past the first byte) splits it. */
        const char *sp = s.len > 1 ? memchr(s.ptr + 1, ' ', s.len - 1) : NULL;
        if (!sp) {
            int r = problem(c, GGUF_E_FORMAT, f, KEY_MERGES, e.offset,
                            "merge %llu '%s' is not two tokens separated by a space",
                            (unsigned long long)i, quote(q, sizeof q, s.ptr, s.len));
            if (!st) st = r;
            continue;
        }
        if (buf_cap < s.len) {
            free(buf);
            buf_cap = s.len * 2 + 64;
            buf = malloc(buf_cap);
            if (!buf) return fail_nomem(c, f);
        }
        size_t ll = (size_t)(sp - s.ptr);
        long a = byte_decode(cp_to_byte, s.ptr, ll, buf);
        long b = a < 0 ? -1 : byte_decode(cp_to_byte, sp + 1, s.len - ll - 1, buf + a);
        int32_t left = -1, right = -1, result = -1;
        if (b >= 0) {
            left = vocab_get(t, buf, (size_t)a);
            right = vocab_get(t, buf + a, (size_t)b);
            result = vocab_get(t, buf, (size_t)(a + b));
        }
        if (left < 0 || right < 0 || result < 0) {
            const char *what = b < 0 ? "is not byte-level text"
                             : left < 0 ? "has a left part that is no token"
                             : right < 0 ? "has a right part that is no token"
                             : "joins two tokens into one that is not in the vocabulary";
            int r = problem(c, GGUF_E_FORMAT, f, KEY_MERGES, e.offset, "merge %llu '%s' %s",
                            (unsigned long long)i, quote(q, sizeof q, s.ptr, s.len), what);
            if (!st) st = r;
            continue;
        }
        merge_put(t, left, right, (uint32_t)i, result);
    }
    free(buf);
    return st;
}

/* Compiles the split regex, with the JIT when PCRE2 has one (the
 * interpreter gives the same matches, more slowly). */
static int compile_regex(qwen_tokenizer *t, const gguf_file *f, qwen_check *c)
{
    int code;
    PCRE2_SIZE at;
    t->re = pcre2_compile((PCRE2_SPTR)qwen2_pattern, PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &at, NULL);
    if (!t->re) {
        char msg[160];
        pcre2_get_error_message(code, (PCRE2_UCHAR *)msg, sizeof msg);
        return problem(c, GGUF_E_UNSUPPORTED, f, "tokenizer", UINT64_MAX,
                       "PCRE2 cannot compile the Qwen2 split regex at %lu: %s", (unsigned long)at,
                       msg);
    }
    (void)pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE);
    return GGUF_OK;
}

/* Builds the tokenizer of f, reporting to c.  Stages that do not depend on
 * each other are all run (model names, the vocabulary, each token id); the
 * merges need a complete vocabulary and the ids its size.  Returns GGUF_OK
 * and *out, or the status of the tokenizer's first problem. */
static int load(qwen_tokenizer **out, const gguf_file *f, qwen_check *c)
{
    *out = NULL;
    qwen_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return fail_nomem(c, f);
    int st = check_model(f, c), r;
    if (!c->done) {
        r = load_tokens(t, f, c);
        if (!st) st = r;
        if (!r && !c->done && (r = load_merges(t, f, c)) && !st) st = r;
        static const char *const id_keys[] = {KEY_BOS, KEY_EOS, KEY_PAD};
        int32_t *ids[] = {&t->bos, &t->eos, &t->pad};
        for (int i = 0; i < 3; i++) {
            *ids[i] = -1;
            if (t->n_vocab && !c->done && (r = load_id(f, id_keys[i], t->n_vocab, ids[i], c)) &&
                !st)
                st = r;
        }
    }
    if (!st && !c->done) st = compile_regex(t, f, c);
    /* Ended early (out of memory, or told to) before a problem of its own:
     * the tokenizer is incomplete all the same. */
    if (!st && c->done) st = c->status ? c->status : GGUF_E_INVALID;
    if (st) {
        qwen_tokenizer_free(t);
        return st;
    }
    *out = t;
    return GGUF_OK;
}

int qwen_tokenizer_load(qwen_tokenizer **out, const gguf_file *f, gguf_error *err)
{
    if (!out || !f) {
        if (out) *out = NULL;
        return fail(err, GGUF_E_INVALID, NULL, "qwen_tokenizer_load", UINT64_MAX,
                    "NULL argument");
    }
    qwen_check c = QWEN_CHECK_FIRST(err);
    return load(out, f, &c);
}

int qwen_tokenizer_check(const gguf_file *f, qwen_check *c)
{
    if (!f || !c) return GGUF_E_INVALID;
    qwen_tokenizer *t;
    int st = load(&t, f, c);
    qwen_tokenizer_free(t);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Queries                                                                   */

int32_t qwen_tokenizer_n_vocab(const qwen_tokenizer *t) { return t->n_vocab; }
int32_t qwen_tokenizer_bos(const qwen_tokenizer *t) { return t->bos; }
int32_t qwen_tokenizer_eos(const qwen_tokenizer *t) { return t->eos; }
int32_t qwen_tokenizer_pad(const qwen_tokenizer *t) { return t->pad; }
size_t qwen_tokenizer_max_bytes(const qwen_tokenizer *t) { return (size_t)t->max_bytes; }

int qwen_token_type(const qwen_tokenizer *t, int32_t id)
{
    if (id < 0 || id >= t->n_vocab) return -1;
    return t->types[id];
}

const char *qwen_token_bytes(const qwen_tokenizer *t, int32_t id, size_t *len)
{
    if (id < 0 || id >= t->n_vocab) {
        *len = 0;
        return NULL;
    }
    return piece_of(t, id, len);
}

int32_t qwen_tokenizer_find(const qwen_tokenizer *t, const char *text, size_t len)
{
    for (size_t i = 0; i < t->n_special; i++) {
        size_t n;
        const char *p = piece_of(t, t->special[i], &n);
        if (n == len && memcmp(p, text, len) == 0) return t->special[i];
    }
    return vocab_get(t, text, len);
}

size_t qwen_detokenize(const qwen_tokenizer *t, const int32_t *ids, size_t n, int special,
                       char *buf, size_t cap)
{
    size_t need = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_vocab) continue;
        if (!special && t->types[ids[i]] == QWEN_TOKEN_CONTROL) continue;
        size_t len;
        const char *p = piece_of(t, ids[i], &len);
        if (need + len <= cap) memcpy(buf + need, p, len);
        need += len;
    }
    return need;
}

/* ------------------------------------------------------------------------ */
/* Id arrays                                                                 */

void qwen_ids_free(qwen_ids *ids)
{
    if (!ids) return;
    free(ids->v);
    ids->v = NULL;
    ids->n = ids->cap = 0;
}

/* Makes room for `more` ids past ids->n.  Returns 1, or 0 when out of
 * memory. */
static int ids_reserve(qwen_ids *ids, size_t more)
{
    if (ids->cap - ids->n >= more) return 1;
    size_t cap = ids->cap ? ids->cap : 64;
    while (cap - ids->n < more) {
        if (cap > SIZE_MAX / 2 / sizeof *ids->v) return 0;
        cap *= 2;
    }
    int32_t *v = realloc(ids->v, cap * sizeof *v);
    if (!v) return 0;
    ids->v = v;
    ids->cap = cap;
    return 1;
}

int qwen_ids_push(qwen_ids *ids, int32_t id)
{
    if (!ids_reserve(ids, 1)) return GGUF_E_NOMEM;
    ids->v[ids->n++] = id;
    return GGUF_OK;
}

/* ------------------------------------------------------------------------ */
/* BPE                                                                       */

/* One symbol of a piece being merged; symbols are indexed by the position
 * of their first byte, and linked to their living neighbours. */
struct sym {
    int32_t id;     /* -1 once merged into its left neighbour */
    int32_t prev, next;
};

/* A candidate merge of symbol `left` with its next symbol `right`.  key
 * orders candidates: lowest rank first, then leftmost. */
struct cand {
    uint64_t key;   /* rank << 32 | left */
    int32_t right;
    int32_t left_id, right_id, result;
};

/* Scratch space of one qwen_tokenize call. */
struct work {
    struct sym *sym;
    size_t sym_cap;
    struct cand *heap;
    size_t heap_cap, heap_n;
};

static void heap_push(struct work *w, struct cand c)
{
    size_t i = w->heap_n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (w->heap[p].key <= c.key) break;
        w->heap[i] = w->heap[p];
        i = p;
    }
    w->heap[i] = c;
}

static struct cand heap_pop(struct work *w)
{
    struct cand top = w->heap[0], last = w->heap[--w->heap_n];
    size_t i = 0, n = w->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && w->heap[c + 1].key < w->heap[c].key) c++;
        if (last.key <= w->heap[c].key) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n) w->heap[i] = last;
    return top;
}

/* Queues the merge of symbol left with its right neighbour, if the pair
 * has one. */
static void consider(const qwen_tokenizer *t, struct work *w, int32_t left)
{
    if (left < 0) return;
    int32_t right = w->sym[left].next;
    if (right < 0) return;
    const struct merge_slot *m = merge_get(t, w->sym[left].id, w->sym[right].id);
    if (!m) return;
    heap_push(w, (struct cand){(uint64_t)m->rank << 32 | (uint32_t)left, right, w->sym[left].id,
                               w->sym[right].id, m->result});
}

/* Encodes one piece (n bytes at s, n > 0) and appends its ids (room for n
 * more is reserved by the caller). */
static int bpe_piece(const qwen_tokenizer *t, struct work *w, const unsigned char *s, size_t n,
                     qwen_ids *out)
{
    if (n == 1) {
        out->v[out->n++] = t->byte_id[s[0]];
        return GGUF_OK;
    }
    /* A piece may be long (a run of spaces, a long word); positions are
     * int32_t, so cut absurd ones into 1 GiB parts. */
    if (n > (1u << 30)) {
        int st = bpe_piece(t, w, s, 1u << 30, out);
        return st ? st : bpe_piece(t, w, s + (1u << 30), n - (1u << 30), out);
    }
    if (w->sym_cap < n) {
        free(w->sym);
        free(w->heap);
        w->sym_cap = n < 64 ? 64 : n;
        w->heap_cap = 2 * w->sym_cap;
        w->sym = malloc(sizeof *w->sym * w->sym_cap);
        w->heap = malloc(sizeof *w->heap * w->heap_cap);
        if (!w->sym || !w->heap) {
            w->sym_cap = w->heap_cap = 0;
            return GGUF_E_NOMEM;
        }
    }
    for (size_t i = 0; i < n; i++)
        w->sym[i] = (struct sym){t->byte_id[s[i]], (int32_t)i - 1, i + 1 < n ? (int32_t)i + 1 : -1};
    w->heap_n = 0;
    for (size_t i = 0; i + 1 < n; i++) consider(t, w, (int32_t)i);
    /* Each merge removes a symbol and queues at most two candidates, so
     * the heap never holds more than 2n entries. */
    while (w->heap_n) {
        struct cand c = heap_pop(w);
        int32_t left = (int32_t)(uint32_t)c.key;
        struct sym *l = &w->sym[left];
        /* Stale when either side has merged since: a symbol's id only
         * changes by growing, so equal ids mean unchanged symbols. */
        if (l->id != c.left_id || l->next != c.right || w->sym[c.right].id != c.right_id) continue;
        struct sym *r = &w->sym[c.right];
        l->id = c.result;
        l->next = r->next;
        if (r->next >= 0) w->sym[r->next].prev = left;
        r->id = -1;
        consider(t, w, l->prev);
        consider(t, w, left);
    }
    for (int32_t i = 0; i >= 0; i = w->sym[i].next) out->v[out->n++] = w->sym[i].id;
    return GGUF_OK;
}

/* ------------------------------------------------------------------------ */
/* Splitting                                                                 */

/* Calls fn(ctx, start, end) for each piece of text[0, len) the regex cuts,
 * plus the runs of bytes between matches (bytes that are not valid UTF-8,
 * which no alternative matches).  Stops at the first non-zero status fn
 * returns and returns it. */
static int split(const qwen_tokenizer *t, pcre2_match_data *md, const char *text, size_t len,
                 int (*fn)(void *ctx, size_t start, size_t end), void *ctx)
{
    size_t pos = 0;
    int st;
    while (pos < len) {
        int rc = pcre2_match(t->re, (PCRE2_SPTR)text, len, pos, 0, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) return fn(ctx, pos, len);
        if (rc < 0) return rc == PCRE2_ERROR_NOMEMORY ? GGUF_E_NOMEM : GGUF_E_INVALID;
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (ms > pos && (st = fn(ctx, pos, ms))) return st;
        /* No alternative matches the empty string; be safe all the same. */
        if (me <= ms) me = ms + 1;
        if ((st = fn(ctx, ms, me))) return st;
        pos = me;
    }
    return GGUF_OK;
}

struct encode_ctx {
    const qwen_tokenizer *t;
    struct work w;
    const char *text;
    qwen_ids *out;
};

static int encode_piece(void *p, size_t start, size_t end)
{
    struct encode_ctx *c = p;
    if (!ids_reserve(c->out, end - start)) return GGUF_E_NOMEM;
    return bpe_piece(c->t, &c->w, (const unsigned char *)c->text + start, end - start, c->out);
}

struct user_ctx {
    void (*fn)(void *ctx, size_t start, size_t end);
    void *ctx;
};

static int user_piece(void *p, size_t start, size_t end)
{
    struct user_ctx *c = p;
    c->fn(c->ctx, start, end);
    return GGUF_OK;
}

static int split_fail(gguf_error *err, int st)
{
    if (st == GGUF_E_NOMEM) return fail(err, st, NULL, "tokenizer", UINT64_MAX, "out of memory");
    return fail(err, st, NULL, "tokenizer", UINT64_MAX, "PCRE2 match failed");
}

int qwen_pretokenize(const qwen_tokenizer *t, const char *text, size_t len,
                     void (*fn)(void *ctx, size_t start, size_t end), void *ctx,
                     gguf_error *err)
{
    if (!t || !fn || (!text && len))
        return fail(err, GGUF_E_INVALID, NULL, "qwen_pretokenize", UINT64_MAX, "NULL argument");
    if (!len) return GGUF_OK;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(t->re, NULL);
    if (!md) return split_fail(err, GGUF_E_NOMEM);
    struct user_ctx c = {fn, ctx};
    int st = split(t, md, text, len, user_piece, &c);
    pcre2_match_data_free(md);
    return st ? split_fail(err, st) : GGUF_OK;
}

/* A span of the text: ordinary text (id -1) or a special token. */
struct seg {
    size_t start, end;
    int32_t id;
};

struct segs {
    struct seg *v;
    size_t n, cap;
};

static int segs_push(struct segs *s, size_t start, size_t end, int32_t id)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        struct seg *v = realloc(s->v, cap * sizeof *v);
        if (!v) return 0;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = (struct seg){start, end, id};
    return 1;
}

/* Cuts the text at special tokens as the reference does: each special, the
 * longest first, cuts every span of ordinary text left by the longer ones.
 * The result replaces *segs. */
static int cut_specials(const qwen_tokenizer *t, const char *text, unsigned flags,
                        struct segs *segs)
{
    struct segs next = {0};
    for (size_t k = 0; k < t->n_special; k++) {
        int32_t id = t->special[k];
        if (t->types[id] != QWEN_TOKEN_USER_DEFINED && !(flags & QWEN_TOKENIZE_SPECIAL)) continue;
        size_t plen;
        const char *p = piece_of(t, id, &plen);
        next.n = 0;
        int found = 0;
        for (size_t i = 0; i < segs->n; i++) {
            struct seg s = segs->v[i];
            if (s.id >= 0) {
                if (!segs_push(&next, s.start, s.end, s.id)) goto nomem;
                continue;
            }
            size_t pos = s.start;
            for (;;) {
                const char *m = memmem(text + pos, s.end - pos, p, plen);
                if (!m) break;
                size_t at = (size_t)(m - text);
                found = 1;
                if ((at > pos && !segs_push(&next, pos, at, -1)) ||
                    !segs_push(&next, at, at + plen, id))
                    goto nomem;
                pos = at + plen;
            }
            if (pos < s.end && !segs_push(&next, pos, s.end, -1)) goto nomem;
        }
        if (found) {
            struct segs tmp = *segs;
            *segs = next;
            next = tmp;
        }
    }
    free(next.v);
    return GGUF_OK;
nomem:
    free(next.v);
    return GGUF_E_NOMEM;
}

int qwen_tokenize(const qwen_tokenizer *t, const char *text, size_t len, unsigned flags,
                  qwen_ids *out, gguf_error *err)
{
    if (!t || !out || (!text && len))
        return fail(err, GGUF_E_INVALID, NULL, "qwen_tokenize", UINT64_MAX, "NULL argument");
    if (!len) return GGUF_OK;
    size_t n0 = out->n;
    struct segs segs = {0};
    struct encode_ctx c = {t, {0}, text, out};
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(t->re, NULL);
    int st = md && segs_push(&segs, 0, len, -1) ? GGUF_OK : GGUF_E_NOMEM;
    if (!st) st = cut_specials(t, text, flags, &segs);
    for (size_t i = 0; !st && i < segs.n; i++) {
        if (segs.v[i].id >= 0)
            st = qwen_ids_push(out, segs.v[i].id);
        else {
            c.text = text + segs.v[i].start;
            st = split(t, md, c.text, segs.v[i].end - segs.v[i].start, encode_piece, &c);
        }
    }
    free(segs.v);
    free(c.w.sym);
    free(c.w.heap);
    pcre2_match_data_free(md);
    if (st) {
        out->n = n0;
        return split_fail(err, st);
    }
    return GGUF_OK;
}

/* ------------------------------------------------------------------------ */
/* Streaming UTF-8                                                           */

/* Length of the character lead byte c starts (2..4), or 0 when c cannot
 * start a multi-byte character. */
static unsigned lead_len(unsigned c)
{
    if (c >= 0xc2 && c <= 0xdf) return 2;
    if (c >= 0xe0 && c <= 0xef) return 3;
    if (c >= 0xf0 && c <= 0xf4) return 4;
    return 0;
}

/* Whether c may follow the held bytes: the second byte's range depends on
 * the lead (no overlong forms, surrogates or code points past U+10FFFF). */
static int continues(const qwen_utf8 *d, unsigned c)
{
    if (d->n_held == 1) {
        switch (d->held[0]) {
        case 0xe0: return c >= 0xa0 && c <= 0xbf;
        case 0xed: return c >= 0x80 && c <= 0x9f;
        case 0xf0: return c >= 0x90 && c <= 0xbf;
        case 0xf4: return c >= 0x80 && c <= 0x8f;
        }
    }
    return c >= 0x80 && c <= 0xbf;
}

/* Writes n invalid bytes at p: as they are, or one U+FFFD for them. */
static size_t put_invalid(const qwen_utf8 *d, const unsigned char *p, size_t n, char *out)
{
    if (d->replace) {
        memcpy(out, "\xef\xbf\xbd", 3);
        return 3;
    }
    memcpy(out, p, n);
    return n;
}

size_t qwen_utf8_feed(qwen_utf8 *d, const void *in, size_t n, char *out)
{
    const unsigned char *s = in;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned c = s[i];
        if (d->n_held) {
            if (continues(d, c)) {
                d->held[d->n_held++] = (unsigned char)c;
                if (d->n_held == lead_len(d->held[0])) {
                    memcpy(out + o, d->held, d->n_held);
                    o += d->n_held;
                    d->n_held = 0;
                }
                continue;
            }
            /* The held start is cut short: it goes out as invalid, and c
             * is looked at afresh. */
            o += put_invalid(d, d->held, d->n_held, out + o);
            d->n_held = 0;
        }
        if (c < 0x80) {
            out[o++] = (char)c;
        } else if (lead_len(c)) {
            d->held[0] = (unsigned char)c;
            d->n_held = 1;
        } else {
            unsigned char b = (unsigned char)c;
            o += put_invalid(d, &b, 1, out + o);
        }
    }
    return o;
}

size_t qwen_utf8_flush(qwen_utf8 *d, char *out)
{
    size_t o = 0;
    if (d->n_held) o = put_invalid(d, d->held, d->n_held, out);
    d->n_held = 0;
    return o;
}
