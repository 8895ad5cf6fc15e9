/*
 * fuzz-tokenizer.c -- the Qwen2 BPE tokenizer (infer/tokenizer.h) on any
 * text, against vocabularies with random merges.
 *
 * Input: one byte of choices, then (bit 3 set) a vocabulary recipe, then
 * the text.  Bits 0-1 pick one of four vocabularies made once with seeded
 * random merges; bit 2 asks for QWEN_TOKENIZE_SPECIAL; bit 3 makes a
 * vocabulary from the input instead: a count byte, then that many merges
 * as two 16-bit token ids (taken modulo the tokens so far), each joining
 * the two tokens when the result is at most 48 bytes.  Every vocabulary
 * has the 256 byte tokens, the merges, control tokens (<|endoftext|>,
 * <|im_start|>, <|im_end|> and <|im_start|>system, which overlaps), a
 * user-defined <tool_call> and an unused [PAD0], and is written through
 * the library's writer into memory and loaded from there, as a model's.
 *
 * What the tokenizer guarantees, checked for every text:
 *  - ids are inside the vocabulary, appended after what the output held;
 *  - decode(encode(text)) == text (every byte sequence round-trips, with
 *    specials recognised or not);
 *  - the streaming UTF-8 decoder passes the same bytes on (without
 *    replacement), or valid UTF-8 (with);
 *  - the pre-tokenizer's pieces cover the text without gaps, and when no
 *    special token's text occurs, encoding piece by piece gives the same
 *    ids as encoding the whole, and each piece (up to 256 bytes) the ids
 *    of a plain reference merge loop written here: merge the adjacent pair
 *    of lowest rank, the leftmost among equals, until no pair has a merge.
 */
#include <config.h>

#include "gguf/gguf.h"
#include "infer/tokenizer.h"
#include "tests/bytelevel.h"
#include "tests/fuzz/fuzz.h"

#define MAX_TOKENS 1024
#define MAX_TOKEN_BYTES 48
#define N_CACHED 4

static const struct {
    const char *text;
    int32_t type;
} specials[] = {
    { "<|endoftext|>", QWEN_TOKEN_CONTROL },
    { "<|im_start|>", QWEN_TOKEN_CONTROL },
    { "<|im_end|>", QWEN_TOKEN_CONTROL },
    { "<|im_start|>system", QWEN_TOKEN_CONTROL },
    { "<tool_call>", QWEN_TOKEN_USER_DEFINED },
    { "[PAD0]", QWEN_TOKEN_UNUSED },
};
#define N_SPECIALS (sizeof specials / sizeof specials[0])

/* A vocabulary being made: raw bytes of each regular token, merges as id
 * pairs in rank order. */
struct vocab {
    uint8_t raw[MAX_TOKENS][MAX_TOKEN_BYTES];
    size_t len[MAX_TOKENS];
    int n;
    int32_t ml[MAX_TOKENS], mr[MAX_TOKENS], mres[MAX_TOKENS]; /* merge i: l + r = mres, rank i */
    int n_merges;
    /* merges by pair: open addressing on l << 16 | r, -1 empty */
    int32_t slot_key[2 * MAX_TOKENS];
    int16_t slot_rank[2 * MAX_TOKENS];
};

/* The slot of pair (l, r): where it is, or the empty one where it goes. */
static size_t slot_of(const struct vocab *v, int32_t l, int32_t r)
{
    int32_t key = l << 16 | r;
    size_t i = ((uint32_t)key * 2654435761u) % (2 * MAX_TOKENS);
    while (v->slot_key[i] != -1 && v->slot_key[i] != key) i = (i + 1) % (2 * MAX_TOKENS);
    return i;
}

static void vocab_bytes(struct vocab *v)
{
    v->n = 0;
    v->n_merges = 0;
    memset(v->slot_key, 0xff, sizeof v->slot_key);
    for (int pass = 0; pass < 2; pass++)
        for (unsigned b = 0; b < 256; b++) {
            if (bl_printable(b) != (pass == 0)) continue;
            v->raw[v->n][0] = (uint8_t)b;
            v->len[v->n++] = 1;
        }
}

/* Adds the merge of tokens l and r, unless it is there already or too long. */
static void vocab_merge(struct vocab *v, int32_t l, int32_t r)
{
    size_t n = v->len[l] + v->len[r];
    if (n > MAX_TOKEN_BYTES || v->n_merges == MAX_TOKENS - 256 - (int)N_SPECIALS) return;
    size_t slot = slot_of(v, l, r);
    if (v->slot_key[slot] != -1) return;
    uint8_t buf[MAX_TOKEN_BYTES];
    memcpy(buf, v->raw[l], v->len[l]);
    memcpy(buf + v->len[l], v->raw[r], v->len[r]);
    int id = -1;
    for (int i = 0; i < v->n && id < 0; i++)
        if (v->len[i] == n && memcmp(v->raw[i], buf, n) == 0) id = i;
    if (id < 0) {
        if (v->n == MAX_TOKENS - (int)N_SPECIALS) return;
        memcpy(v->raw[v->n], buf, n);
        v->len[v->n++] = n;
    }
    v->slot_key[slot] = l << 16 | r;
    v->slot_rank[slot] = (int16_t)v->n_merges;
    v->ml[v->n_merges] = l;
    v->mr[v->n_merges] = r;
    v->mres[v->n_merges++] = id < 0 ? v->n - 1 : id;
}

/* Writes v as a model's tokenizer metadata into memory and loads it. */
static qwen_tokenizer *vocab_load(const struct vocab *v)
{
    int n = v->n + (int)N_SPECIALS;
    gguf_str *tok = calloc((size_t)n, sizeof *tok), *mg = calloc((size_t)(v->n_merges + 1), sizeof *mg);
    int32_t *type = calloc((size_t)n, sizeof *type);
    char *arena = malloc((size_t)n * 2 * MAX_TOKEN_BYTES + (size_t)v->n_merges * 4 * MAX_TOKEN_BYTES + 1);
    if (!tok || !mg || !type || !arena) FUZZ_TROUBLE("out of memory");
    size_t o = 0;
    for (int i = 0; i < v->n; i++) {
        tok[i].ptr = arena + o;
        o += bl_text(v->raw[i], v->len[i], arena + o);
        tok[i].len = (size_t)(arena + o - tok[i].ptr);
        type[i] = QWEN_TOKEN_NORMAL;
    }
    for (size_t i = 0; i < N_SPECIALS; i++) {
        tok[v->n + (int)i] = (gguf_str){ specials[i].text, strlen(specials[i].text) };
        type[v->n + (int)i] = specials[i].type;
    }
    for (int i = 0; i < v->n_merges; i++) {
        mg[i].ptr = arena + o;
        o += bl_text(v->raw[v->ml[i]], v->len[v->ml[i]], arena + o);
        arena[o++] = ' ';
        o += bl_text(v->raw[v->mr[i]], v->len[v->mr[i]], arena + o);
        mg[i].len = (size_t)(arena + o - mg[i].ptr);
    }
    gguf_error err;
    gguf_writer *w = gguf_writer_new();
    int fd = fuzz_memfd();
    if (!w || gguf_writer_add_str(w, "tokenizer.ggml.model", "gpt2", 4, &err) ||
        gguf_writer_add_str(w, "tokenizer.ggml.pre", "qwen2", 5, &err) ||
        gguf_writer_add_str_array(w, "tokenizer.ggml.tokens", tok, (uint64_t)n, &err) ||
        gguf_writer_add_array(w, "tokenizer.ggml.token_type", GGUF_VT_INT32, type, (uint64_t)n,
                              &err) ||
        gguf_writer_add_str_array(w, "tokenizer.ggml.merges", mg, (uint64_t)v->n_merges, &err) ||
        gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)v->n + 2, &err) ||
        gguf_writer_open_fd(w, fd, "vocab.gguf", &err) || gguf_writer_finish(w, &err))
        FUZZ_TROUBLE("writing the vocabulary: %s", err.message);
    gguf_writer_free(w);
    size_t size;
    uint8_t *bytes = fuzz_slurp_fd(fd, &size);
    close(fd);
    gguf_file *f;
    FUZZ_ASSERT(gguf_open_memory(&f, bytes, size, "vocab.gguf", &err) == GGUF_OK,
                "the vocabulary file: %s", err.message);
    qwen_tokenizer *t = NULL;
    FUZZ_ASSERT(qwen_tokenizer_load(&t, f, &err) == GGUF_OK, "a valid vocabulary refused: %s",
                err.message);
    gguf_close(f);      /* the tokenizer keeps nothing of it */
    free(bytes);
    free(tok);
    free(mg);
    free(type);
    free(arena);
    return t;
}

/* The rank of merging tokens l and r in v, or -1. */
static int rank_of(const struct vocab *v, int32_t l, int32_t r)
{
    size_t slot = slot_of(v, l, r);
    return v->slot_key[slot] == -1 ? -1 : v->slot_rank[slot];
}

/* The reference: ids of the n bytes at p by the plain merge loop. */
static size_t ref_bpe(const struct vocab *v, const uint8_t *p, size_t n, int32_t *ids)
{
    for (size_t i = 0; i < n; i++) {
        ids[i] = -1;
        for (int t = 0; t < 256; t++)
            if (v->raw[t][0] == p[i]) ids[i] = t;
    }
    for (;;) {
        int best = -1;
        size_t at = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            int r = rank_of(v, ids[i], ids[i + 1]);
            if (r >= 0 && (best < 0 || r < best)) best = r, at = i;
        }
        if (best < 0) return n;
        ids[at] = v->mres[best];
        memmove(ids + at + 1, ids + at + 2, (n - at - 2) * sizeof *ids);
        n--;
    }
}

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Vocabulary k of the cached ones: merges that favour letters, space and
 * the tokens made so far, so that text meets long tokens. */
static qwen_tokenizer *cached(unsigned k, const struct vocab **vp)
{
    static qwen_tokenizer *cache[N_CACHED];
    static struct vocab vocabs[N_CACHED];
    struct vocab *v = &vocabs[k];
    *vp = v;
    if (cache[k]) return cache[k];
    uint64_t s = 0x5eed0000u + k;
    static const char common[] = "etaoinshrdlucmfwypvbgkqjxz ETAOIN0123456789.,'\n\xe4\xb8\x80\xc3\xa9";
    vocab_bytes(v);
    for (int m = 0; m < 150 * (int)(k + 1); m++) {
        int32_t pick[2];
        for (int j = 0; j < 2; j++) {
            uint64_t r = rng(&s);
            if (r % 3 == 0 && v->n > 256) {
                pick[j] = 256 + (int32_t)(r / 3 % (uint64_t)(v->n - 256));
            } else {
                unsigned char c = (unsigned char)common[r / 3 % (sizeof common - 1)];
                pick[j] = -1;
                for (int i = 0; i < 256; i++)
                    if (v->raw[i][0] == c) pick[j] = i;
            }
        }
        vocab_merge(v, pick[0], pick[1]);
    }
    return cache[k] = vocab_load(v);
}

static int utf8_valid(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
                   : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        if (!len || n - i < len) return 0;
        for (size_t j = 1; j < len; j++)
            if ((s[i + j] & 0xc0) != 0x80) return 0;
        if ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] > 0x9f) ||
            (c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] > 0x8f))
            return 0;
        i += len;
    }
    return 1;
}

struct pieces {
    size_t *start, *end;
    size_t n, cap;
};

static void collect(void *ctx, size_t start, size_t end)
{
    struct pieces *p = ctx;
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->start = realloc(p->start, p->cap * sizeof *p->start);
        p->end = realloc(p->end, p->cap * sizeof *p->end);
        if (!p->start || !p->end) FUZZ_TROUBLE("out of memory");
    }
    p->start[p->n] = start;
    p->end[p->n++] = end;
}

static void check_text(const qwen_tokenizer *t, const struct vocab *voc, const char *text,
                       size_t n, unsigned flags)
{
    gguf_error err;
    int32_t n_vocab = qwen_tokenizer_n_vocab(t);
    qwen_ids ids = QWEN_IDS_INIT;
    FUZZ_ASSERT(qwen_ids_push(&ids, 7) == GGUF_OK, "push");
    FUZZ_ASSERT(qwen_tokenize(t, text, n, flags, &ids, &err) == GGUF_OK, "tokenize: %s",
                err.message);
    FUZZ_ASSERT(ids.n >= 1 && ids.v[0] == 7, "the ids already there were not kept");
    for (size_t i = 1; i < ids.n; i++)
        FUZZ_ASSERT(ids.v[i] >= 0 && ids.v[i] < n_vocab, "id %ld", (long)ids.v[i]);
    FUZZ_ASSERT(n == 0 || ids.n > 1, "no ids for %zu bytes", n);

    /* decode(encode(text)) == text */
    const int32_t *v = ids.v + 1;
    size_t nv = ids.n - 1;
    size_t need = qwen_detokenize(t, v, nv, 1, NULL, 0);
    char *back = malloc(need + 1);
    if (!back) FUZZ_TROUBLE("out of memory");
    FUZZ_ASSERT(qwen_detokenize(t, v, nv, 1, back, need) == need, "detokenize sizes");
    FUZZ_ASSERT(need == n && memcmp(back, text, n) == 0, "round trip: %zu bytes back for %zu",
                need, n);

    /* Streaming: the same bytes, or valid UTF-8 with replacement. */
    for (int replace = 0; replace < 2; replace++) {
        qwen_utf8 d = QWEN_UTF8_INIT;
        d.replace = replace;
        size_t cap = QWEN_UTF8_OUT_MAX(n) + 64, o = 0;
        char *out = malloc(cap);
        if (!out) FUZZ_TROUBLE("out of memory");
        for (size_t i = 0; i < nv; i++) {
            size_t len;
            const char *b = qwen_token_bytes(t, v[i], &len);
            FUZZ_ASSERT(b != NULL, "token %ld has no bytes", (long)v[i]);
            FUZZ_ASSERT(o + QWEN_UTF8_OUT_MAX(len) <= cap, "stream output room");
            o += qwen_utf8_feed(&d, b, len, out + o);
        }
        FUZZ_ASSERT(o + 12 <= cap, "flush room");
        o += qwen_utf8_flush(&d, out + o);
        if (!replace)
            FUZZ_ASSERT(o == n && memcmp(out, text, n) == 0, "streamed bytes differ");
        else
            FUZZ_ASSERT(utf8_valid((const unsigned char *)out, o), "replacement left bad UTF-8");
        free(out);
    }

    /* Pieces cover the text; piece by piece gives the same ids when no
     * special text cuts it first. */
    struct pieces p = { NULL, NULL, 0, 0 };
    FUZZ_ASSERT(qwen_pretokenize(t, text, n, collect, &p, &err) == GGUF_OK, "pretokenize: %s",
                err.message);
    size_t at = 0;
    for (size_t i = 0; i < p.n; i++) {
        FUZZ_ASSERT(p.start[i] == at && p.end[i] > p.start[i], "piece %zu: [%zu, %zu) after %zu",
                    i, p.start[i], p.end[i], at);
        at = p.end[i];
    }
    FUZZ_ASSERT(at == n, "pieces end at %zu of %zu", at, n);
    int special = 0;
    for (size_t s = 0; s < N_SPECIALS && !special; s++) {
        if (specials[s].type == QWEN_TOKEN_CONTROL && !(flags & QWEN_TOKENIZE_SPECIAL)) continue;
        if (specials[s].type == QWEN_TOKEN_UNUSED) continue;
        special = memmem(text, n, specials[s].text, strlen(specials[s].text)) != NULL;
    }
    if (!special) {
        qwen_ids each = QWEN_IDS_INIT;
        int32_t ref[256];
        for (size_t i = 0; i < p.n; i++) {
            size_t before = each.n, len = p.end[i] - p.start[i];
            FUZZ_ASSERT(qwen_tokenize(t, text + p.start[i], len, flags, &each, &err) == GGUF_OK,
                        "tokenize a piece: %s", err.message);
            if (len > 256) continue;
            size_t nr = ref_bpe(voc, (const uint8_t *)text + p.start[i], len, ref);
            FUZZ_ASSERT(each.n - before == nr && memcmp(each.v + before, ref, nr * sizeof *ref) == 0,
                        "piece %zu (%zu bytes at %zu): %zu ids, the reference merge loop %zu", i,
                        len, p.start[i], each.n - before, nr);
        }
        FUZZ_ASSERT(each.n == nv && (nv == 0 || memcmp(each.v, v, nv * sizeof *v) == 0),
                    "piece by piece: %zu ids, whole: %zu", each.n, nv);
        qwen_ids_free(&each);
    }
    free(p.start);
    free(p.end);
    free(back);
    qwen_ids_free(&ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_in in = { data, size };
    uint8_t choice = fz_u8(&in);
    unsigned flags = choice & 4 ? QWEN_TOKENIZE_SPECIAL : 0;
    qwen_tokenizer *own = NULL;
    const qwen_tokenizer *t;
    const struct vocab *voc;
    if (choice & 8) {
        static struct vocab v;
        vocab_bytes(&v);
        unsigned m = fz_u8(&in);
        for (unsigned i = 0; i < m; i++) {
            uint16_t l = fz_u16(&in), r = fz_u16(&in);
            vocab_merge(&v, (int32_t)(l % v.n), (int32_t)(r % v.n));
        }
        t = own = vocab_load(&v);
        voc = &v;
    } else {
        t = cached(choice & 3, &voc);
    }
    check_text(t, voc, (const char *)in.p, in.n, flags);
    qwen_tokenizer_free(own);
    return 0;
}
