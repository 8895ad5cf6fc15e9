/*
 * test-tokenizer.c -- the Qwen2 byte-level BPE tokenizer (infer/tokenizer.h).
 *
 * Without arguments (make check), on a vocabulary built here and written
 * through the library's writer:
 *  1. the pre-tokenizer split: known answers on ASCII and Unicode text, and
 *     pieces that always cover the input without gaps;
 *  2. BPE: ids equal those of a plain reference merge loop written here
 *     (lowest rank first, leftmost first) for many random strings;
 *  3. round trip: detokenize(tokenize(s)) == s for fixed and random text
 *     (CJK, emoji, combining marks, digits, runs of spaces and newlines),
 *     for random bytes that are not UTF-8, with special parsing on and off;
 *  4. special tokens: control tokens recognised only with
 *     QWEN_TOKENIZE_SPECIAL, user-defined ones always, longest first;
 *  5. streaming UTF-8: characters split across feeds are held until whole,
 *     invalid bytes pass (or become U+FFFD), flush gives the rest;
 *  6. bad metadata: each missing key, wrong type, bad count, id out of range
 *     and bad merge is refused with its status and a message naming the key;
 *  7. speed: tokens per millisecond, printed, never judged.
 *
 * test-tokenizer --real MODEL INP OUT: the reference's known answers (see
 * tests/data/tokenizer/README.md) with a real Qwen2 vocabulary: every case
 * must give exactly the recorded ids and round-trip; prints the speed.
 *
 * test-tokenizer --file MODEL: round trip and split checks on the
 * vocabulary of any GGUF file (gguf-synth's output, for example).
 */
#include <config.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "infer/chat.h"
#include "infer/tokenizer.h"
#include "tests/bytelevel.h"
#include "tests/testutil.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static unsigned below(unsigned n) { return (unsigned)(rnd() % n); }

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static size_t put_utf8(char *b, uint32_t c)
{
    if (c < 0x80) { b[0] = (char)c; return 1; }
    if (c < 0x800) {
        b[0] = (char)(0xc0 | c >> 6); b[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        b[0] = (char)(0xe0 | c >> 12); b[1] = (char)(0x80 | (c >> 6 & 0x3f));
        b[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    b[0] = (char)(0xf0 | c >> 18); b[1] = (char)(0x80 | (c >> 12 & 0x3f));
    b[2] = (char)(0x80 | (c >> 6 & 0x3f)); b[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* Length of the valid UTF-8 character at s, or 0. */
static size_t utf8_char(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c >= 0xe0 && c <= 0xef) len = 3;
    else if (c >= 0xf0 && c <= 0xf4) len = 4;
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) if ((s[i] & 0xc0) != 0x80) return 0;
    if (c == 0xe0 && s[1] < 0xa0) return 0;
    if (c == 0xed && s[1] > 0x9f) return 0;
    if (c == 0xf0 && s[1] < 0x90) return 0;
    if (c == 0xf4 && s[1] > 0x8f) return 0;
    return len;
}

static int utf8_valid(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t k = utf8_char((const unsigned char *)s + i, n - i);
        if (!k) return 0;
        i += k;
    }
    return 1;
}

/* A printable form of s for messages (static buffer). */
static const char *show(const char *s, size_t n)
{
    static char buf[4][256];
    static int k;
    char *b = buf[k++ & 3];
    size_t o = 0;
    for (size_t i = 0; i < n && o < sizeof buf[0] - 8; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') b[o++] = (char)c;
        else o += (size_t)snprintf(b + o, 8, "\\x%02x", c);
    }
    b[o] = 0;
    return b;
}

static const char *show_ids(const int32_t *v, size_t n)
{
    static char buf[2][1024];
    static int k;
    char *b = buf[k++ & 1];
    size_t o = 0;
    b[0] = 0;
    for (size_t i = 0; i < n && o < sizeof buf[0] - 16; i++)
        o += (size_t)snprintf(b + o, sizeof buf[0] - o, " %ld", (long)v[i]);
    return b;
}

/* Detokenizes ids into a malloc'ed buffer; returns its length. */
static size_t detok(const qwen_tokenizer *t, const qwen_ids *ids, int special, char **out)
{
    size_t need = qwen_detokenize(t, ids->v, ids->n, special, NULL, 0);
    *out = malloc(need + 1);
    if (!*out) HARD_ERROR("out of memory");
    size_t got = qwen_detokenize(t, ids->v, ids->n, special, *out, need);
    if (got != need) HARD_ERROR("detokenize sizes differ");
    return need;
}

/* Round trip of n bytes at s; returns 1 when it holds. */
static int round_trip(const qwen_tokenizer *t, const char *s, size_t n, unsigned flags)
{
    qwen_ids ids = QWEN_IDS_INIT;
    gguf_error err;
    int st = qwen_tokenize(t, s, n, flags, &ids, &err);
    if (st) HARD_ERROR("tokenize: %s", err.message);
    char *back;
    size_t m = detok(t, &ids, 1, &back);
    int ok = m == n && memcmp(back, s, n) == 0;
    if (!ok) fprintf(stderr, "round trip of '%s' gave '%s'\n", show(s, n), show(back, m));
    free(back);
    qwen_ids_free(&ids);
    return ok;
}

struct pieces {
    size_t start[4096], end[4096];
    size_t n;
};

static void collect(void *ctx, size_t start, size_t end)
{
    struct pieces *p = ctx;
    if (p->n < 4096) {
        p->start[p->n] = start;
        p->end[p->n] = end;
    }
    p->n++;
}

/* Checks that the pieces of s cover it in order without gaps. */
static int pieces_cover(const qwen_tokenizer *t, const char *s, size_t n)
{
    struct pieces *p = calloc(1, sizeof *p);
    if (!p) HARD_ERROR("out of memory");
    if (qwen_pretokenize(t, s, n, collect, p, NULL)) HARD_ERROR("pretokenize failed");
    int ok = p->n <= 4096;
    size_t pos = 0;
    for (size_t i = 0; ok && i < p->n; i++) {
        if (p->start[i] != pos || p->end[i] <= p->start[i]) ok = 0;
        pos = p->end[i];
    }
    if (ok && pos != n) ok = 0;
    free(p);
    return ok;
}

/* Random text from a mix of scripts and whitespace; n characters. */
static size_t random_text(char *b, size_t chars)
{
    static const uint32_t ranges[][2] = {
        {'a', 'z'}, {'A', 'Z'}, {'0', '9'}, {' ', ' '}, {'\n', '\n'}, {'\t', '\t'}, {'\r', '\r'},
        {'!', '/'}, {'\'', '\''}, {0xa0, 0xff}, {0x400, 0x44f},       /* Latin-1, Cyrillic */
        {0x300, 0x36f},                                               /* combining marks */
        {0x4e00, 0x4fff}, {0x3040, 0x30ff}, {0xac00, 0xac80},         /* CJK, kana, Hangul */
        {0x600, 0x6ff}, {0x1780, 0x17ff}, {0x660, 0x669},             /* Arabic, Khmer, digits */
        {0x1f600, 0x1f64f}, {0x1f300, 0x1f5ff}, {0x200d, 0x200d},     /* emoji, ZWJ */
        {0xfe0f, 0xfe0f}, {0x2000, 0x200a}, {0x3000, 0x3000},         /* VS16, spaces */
        {0xff10, 0xff19}, {0x10000, 0x1007f},                         /* wide digits, Linear B */
    };
    size_t o = 0;
    for (size_t i = 0; i < chars; i++) {
        unsigned r = below(sizeof ranges / sizeof ranges[0]);
        uint32_t c = ranges[r][0] + below(ranges[r][1] - ranges[r][0] + 1);
        unsigned rep = below(8) == 0 ? 1 + below(5) : 1; /* runs */
        for (unsigned k = 0; k < rep; k++) o += put_utf8(b + o, c);
    }
    return o;
}

static int count_id(const qwen_ids *ids, int32_t id)
{
    int c = 0;
    for (size_t i = 0; i < ids->n; i++) c += ids->v[i] == id;
    return c;
}

/* ------------------------------------------------------------------------ */
/* Real vocabularies                                                         */

static qwen_tokenizer *open_tokenizer(const char *path, gguf_file **fp)
{
    gguf_error err;
    gguf_file *f;
    if (gguf_open(&f, path, NULL, 0, &err)) HARD_ERROR("%s", err.message);
    qwen_tokenizer *t;
    double t0 = now_ms();
    if (qwen_tokenizer_load(&t, f, &err)) {
        fprintf(stderr, "%s\n", err.message);
        CHECK(0, "the tokenizer of %s loads", path);
        tu_finish();
    }
    fprintf(stderr, "%s: %ld tokens, loaded in %.1f ms\n", path, (long)qwen_tokenizer_n_vocab(t),
            now_ms() - t0);
    *fp = f;
    return t;
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) HARD_ERROR("%s: %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap);
    size_t k;
    while (b && (k = fread(b + len, 1, cap - len, f)) > 0) {
        len += k;
        if (len == cap) b = realloc(b, cap *= 2);
    }
    fclose(f);
    if (!b) HARD_ERROR("out of memory");
    b[len] = 0;
    *n = len;
    return b;
}

/* Tokenizes `text` `reps` times and prints tokens per millisecond. */
static void speed(const qwen_tokenizer *t, const char *what, const char *text, size_t n, int reps)
{
    qwen_ids ids = QWEN_IDS_INIT;
    size_t tokens = 0;
    double t0 = now_ms();
    for (int r = 0; r < reps; r++) {
        ids.n = 0;
        if (qwen_tokenize(t, text, n, 0, &ids, NULL)) HARD_ERROR("tokenize failed");
        tokens += ids.n;
    }
    double ms = now_ms() - t0;
    fprintf(stderr, "speed (%s): %zu tokens from %zu bytes in %.1f ms: %.0f tokens/ms, %.1f MB/s\n",
            what, tokens, n * (size_t)reps, ms, tokens / ms, n * (double)reps / ms / 1e3);
    qwen_ids_free(&ids);
}

static int run_real(const char *model, const char *inp, const char *outp)
{
    gguf_file *f;
    qwen_tokenizer *t = open_tokenizer(model, &f);
    size_t ni, no;
    char *in = slurp(inp, &ni), *out = slurp(outp, &no);
    static const char sep[] = "\n__ggml_vocab_test__\n";
    char *p = in, *line = out;
    int cases = 0;
    qwen_ids ids = QWEN_IDS_INIT;
    for (;;) {
        char *e = strstr(p, sep);
        if (!e) break;
        size_t len = (size_t)(e - p);
        char *nl = strchr(line, '\n');
        if (!nl) HARD_ERROR("%s has fewer lines than %s has cases", outp, inp);
        *nl = 0;
        /* The expected ids, each after a space. */
        int32_t want[512];
        size_t nw = 0;
        for (char *q = line; *q;) {
            char *end;
            long v = strtol(q, &end, 10);
            if (end == q) break;
            if (nw < 512) want[nw++] = (int32_t)v;
            q = end;
        }
        ids.n = 0;
        if (qwen_tokenize(t, p, len, 0, &ids, NULL)) HARD_ERROR("tokenize failed");
        int same = ids.n == nw && (nw == 0 || memcmp(ids.v, want, nw * sizeof *want) == 0);
        CHECK(same, "case %d '%s': got%s, want%s", cases + 1, show(p, len),
              show_ids(ids.v, ids.n), show_ids(want, nw));
        CHECK(round_trip(t, p, len, 0), "case %d round trip", cases + 1);
        cases++;
        p = e + sizeof sep - 1;
        line = nl + 1;
    }
    fprintf(stderr, "%d cases\n", cases);
    CHECK(cases == 46, "46 cases in %s, found %d", inp, cases);
    CHECK(*line == 0, "%s has more lines than cases", outp);

    /* Specials of the real vocabulary: ChatML control tokens only with the
     * flag; <tool_call> (user-defined in Qwen2.5 files) in either case. */
    const char *chat = "<|im_start|>user\nhi<|im_end|>\n<tool_call>";
    int32_t ims = qwen_tokenizer_find(t, "<|im_start|>", 12), ime = qwen_tokenizer_find(t, "<|im_end|>", 10);
    CHECK(ims >= 0 && ime >= 0 && qwen_token_type(t, ims) == QWEN_TOKEN_CONTROL,
          "<|im_start|> and <|im_end|> are control tokens");
    ids.n = 0;
    qwen_tokenize(t, chat, strlen(chat), QWEN_TOKENIZE_SPECIAL, &ids, NULL);
    CHECK(ids.n > 2 && ids.v[0] == ims && count_id(&ids, ime) == 1, "ChatML specials:%s",
          show_ids(ids.v, ids.n));
    int32_t last_on = ids.n ? ids.v[ids.n - 1] : -1;
    ids.n = 0;
    qwen_tokenize(t, chat, strlen(chat), 0, &ids, NULL);
    CHECK(count_id(&ids, ims) == 0 && count_id(&ids, ime) == 0 && ids.n &&
              ids.v[ids.n - 1] == last_on,
          "without the flag:%s", show_ids(ids.v, ids.n));
    CHECK(round_trip(t, chat, strlen(chat), QWEN_TOKENIZE_SPECIAL), "ChatML round trip");

    /* Speed on the cases' text, repeated to about 1 MB. */
    size_t reps = ni ? (1u << 20) / ni + 1 : 1;
    char *big = malloc(ni * reps + 1);
    if (!big) HARD_ERROR("out of memory");
    for (size_t r = 0; r < reps; r++) memcpy(big + r * ni, in, ni);
    speed(t, "test cases, 1 MB", big, ni * reps, 3);
    char *rt = malloc(1 << 20);
    size_t rn = 0;
    while (rn + 64 < (1u << 20)) rn += random_text(rt + rn, 8);
    speed(t, "random multilingual text, 1 MB", rt, rn, 3);
    CHECK(round_trip(t, rt, rn, 0), "round trip of 1 MB of random text");
    free(rt);
    free(big);
    free(in);
    free(out);
    qwen_ids_free(&ids);
    qwen_tokenizer_free(t);
    gguf_close(f);
    tu_finish();
    return 0;
}

/* ------------------------------------------------------------------------ */
/* A synthetic vocabulary                                                    */

#define MAX_TOK 1024

static struct {
    char *raw[MAX_TOK];   /* bytes each token stands for (specials: text) */
    size_t raw_len[MAX_TOK];
    int32_t type[MAX_TOK];
    int n;
    int32_t merge_l[MAX_TOK], merge_r[MAX_TOK]; /* merge i: ids, rank i */
    int n_merges;
    int32_t endoftext, im_start, im_end, im_system, tool_call, unused;
} V;

static int32_t v_find(const char *s, size_t n)
{
    for (int i = V.n - 1; i >= 0; i--)
        if (V.type[i] == 1 && V.raw_len[i] == n && memcmp(V.raw[i], s, n) == 0) return i;
    return -1;
}

static int32_t v_add(const char *s, size_t n, int32_t type)
{
    if (V.n == MAX_TOK) HARD_ERROR("vocabulary full");
    V.raw[V.n] = malloc(n + 1);
    memcpy(V.raw[V.n], s, n);
    V.raw_len[V.n] = n;
    V.type[V.n] = type;
    return V.n++;
}

static const char corpus[] =
    "The quick brown fox jumps over the lazy dog. She sells sea shells by the sea shore; "
    "the shells she sells are surely sea shells. I'll tell you what we're doing: they've "
    "gone, he'd said, and it's done.  Numbers 1234567890 and 3.14159 and 2024-01-01.\n\n"
    "def main():\n    return 0\n\tif (x == y) { print(\"hello world\"); }\n"
    "Привет мир, как дела? 你好世界，我想在苹果工作。こんにちは世界。 😀😀 🦙 ✅ café naïve "
    "Äpfel über straße. hello hello hello world world world the the the and and and";

/* Builds V: the 256 byte tokens in GPT-2 order, up to 400 merges learned
 * from the corpus (most frequent pair first, down to pairs seen once), then the specials. */
static void build_vocab(void)
{
    for (int pass = 0; pass < 2; pass++)
        for (unsigned b = 0; b < 256; b++) {
            if (bl_printable(b) != (pass == 0)) continue;
            char c = (char)b;
            v_add(&c, 1, 1);
        }
    /* Words: spaces start words, as the pre-tokenizer mostly cuts them. */
    static int32_t word[sizeof corpus];
    size_t n = 0;
    static size_t wstart[sizeof corpus];
    size_t nw = 0;
    for (size_t i = 0; i < sizeof corpus - 1; i++) {
        if (i == 0 || corpus[i] == ' ' || corpus[i] == '\n') wstart[nw++] = n;
        word[n++] = v_find(&corpus[i], 1);
    }
    wstart[nw] = n;
    static int counts[MAX_TOK][MAX_TOK];
    while (V.n < 256 + 400) {
        memset(counts, 0, sizeof counts);
        int best = 0;
        int32_t bl = -1, br = -1;
        for (size_t w = 0; w < nw; w++)
            for (size_t i = wstart[w]; i + 1 < wstart[w + 1]; i++) {
                if (word[i] < 0 || word[i + 1] < 0) continue;
                int c = ++counts[word[i]][word[i + 1]];
                if (c > best) best = c, bl = word[i], br = word[i + 1];
            }
        if (best < 1) break;
        char buf[256];
        memcpy(buf, V.raw[bl], V.raw_len[bl]);
        memcpy(buf + V.raw_len[bl], V.raw[br], V.raw_len[br]);
        size_t len = V.raw_len[bl] + V.raw_len[br];
        int32_t id = v_find(buf, len);
        if (id < 0) id = v_add(buf, len, 1);
        V.merge_l[V.n_merges] = bl;
        V.merge_r[V.n_merges] = br;
        V.n_merges++;
        /* Apply it to every word; -1 marks the bytes merged away. */
        for (size_t w = 0; w < nw; w++) {
            size_t e = wstart[w + 1];
            for (size_t i = wstart[w]; i < e; i++) {
                if (word[i] != bl) continue;
                size_t j = i + 1;
                while (j < e && word[j] == -2) j++;
                if (j < e && word[j] == br) {
                    word[i] = id;
                    word[j] = -2;
                }
            }
            /* Compact: drop the merged-away slots. */
            size_t o = wstart[w];
            for (size_t i = wstart[w]; i < e; i++)
                if (word[i] != -2) word[o++] = word[i];
            for (size_t i = o; i < e; i++) word[i] = -1;
        }
    }
    V.endoftext = v_add("<|endoftext|>", 13, 3);
    V.im_start = v_add("<|im_start|>", 12, 3);
    V.im_end = v_add("<|im_end|>", 10, 3);
    V.im_system = v_add("<|im_start|>system", 18, 3);
    V.tool_call = v_add("<tool_call>", 11, 4);
    V.unused = v_add("[PAD7]", 6, 5);
}

enum mut {
    M_NONE, M_NO_MODEL, M_MODEL_LLAMA, M_MODEL_U32, M_PRE_OTHER, M_PRE_NONE, M_NO_TOKENS,
    M_TOKENS_U32, M_NO_TYPES, M_TYPES_SHORT, M_TYPES_U8, M_NO_MERGES, M_MERGES_U32,
    M_MERGE_UNKNOWN, M_MERGE_NOSPACE, M_MERGE_RESULT, M_EOS_RANGE, M_BOS_STRING, M_PAD_RANGE,
    M_NO_BYTE, M_FEW_TOKENS, M_MANY, M_COUNT
};

static char tmp_path[256];

#define OK(x) do { if ((x) != GGUF_OK) HARD_ERROR("writer: %s", err.message); } while (0)

/* Writes V (changed as `m` says) into tmp_path as a GGUF file without
 * tensors. */
static void write_vocab(enum mut m)
{
    gguf_error err;
    gguf_writer *w = gguf_writer_new();
    if (!w) HARD_ERROR("out of memory");
    OK(gguf_writer_add_str(w, "general.architecture", "qwen2", 5, &err));
    if (m == M_MODEL_LLAMA || m == M_MANY)
        OK(gguf_writer_add_str(w, "tokenizer.ggml.model", "llama", 5, &err));
    else if (m == M_MODEL_U32) OK(gguf_writer_add_u32(w, "tokenizer.ggml.model", 2, &err));
    else if (m != M_NO_MODEL) OK(gguf_writer_add_str(w, "tokenizer.ggml.model", "gpt2", 4, &err));
    if (m == M_PRE_OTHER) OK(gguf_writer_add_str(w, "tokenizer.ggml.pre", "llama-bpe", 9, &err));
    else if (m != M_PRE_NONE) OK(gguf_writer_add_str(w, "tokenizer.ggml.pre", "qwen2", 5, &err));

    int n = m == M_FEW_TOKENS ? 200 : V.n;
    gguf_str *tok = calloc((size_t)V.n, sizeof *tok);
    char *arena = malloc((size_t)V.n * 64 * 4);
    size_t o = 0;
    for (int i = 0; i < V.n; i++) {
        tok[i].ptr = arena + o;
        if (V.type[i] == 1) o += bl_text(V.raw[i], V.raw_len[i], arena + o);
        else memcpy(arena + o, V.raw[i], V.raw_len[i]), o += V.raw_len[i];
        tok[i].len = (size_t)(arena + o - tok[i].ptr);
    }
    if (m == M_NO_BYTE) tok['A' - '!'] = (gguf_str){"\xc4\xa0\xc4\xa0", 4}; /* "ĠĠ", no 'A' */
    if (m == M_TOKENS_U32) {
        uint32_t *u = calloc((size_t)n, 4);
        OK(gguf_writer_add_array(w, "tokenizer.ggml.tokens", GGUF_VT_UINT32, u, (uint64_t)n, &err));
        free(u);
    } else if (m != M_NO_TOKENS) {
        OK(gguf_writer_add_str_array(w, "tokenizer.ggml.tokens", tok, (uint64_t)n, &err));
    }
    if (m == M_TYPES_U8) {
        uint8_t *u = calloc((size_t)n, 1);
        OK(gguf_writer_add_array(w, "tokenizer.ggml.token_type", GGUF_VT_UINT8, u, (uint64_t)n, &err));
        free(u);
    } else if (m != M_NO_TYPES) {
        OK(gguf_writer_add_array(w, "tokenizer.ggml.token_type", GGUF_VT_INT32, V.type,
                                 (uint64_t)(m == M_TYPES_SHORT ? n - 1 : n), &err));
    }

    gguf_str *mg = calloc((size_t)V.n_merges, sizeof *mg);
    char *marena = malloc((size_t)V.n_merges * 64 * 4 * 2 + 64);
    o = 0;
    for (int i = 0; i < V.n_merges; i++) {
        mg[i].ptr = marena + o;
        o += bl_text(V.raw[V.merge_l[i]], V.raw_len[V.merge_l[i]], marena + o);
        marena[o++] = ' ';
        o += bl_text(V.raw[V.merge_r[i]], V.raw_len[V.merge_r[i]], marena + o);
        mg[i].len = (size_t)(marena + o - mg[i].ptr);
    }
    int k = V.n_merges / 2;
    if (m == M_MERGE_UNKNOWN) mg[k] = (gguf_str){"q \xe4\xb8\x80", 5};  /* U+4E00: no byte */
    if (m == M_MERGE_NOSPACE || m == M_MANY) mg[k] = (gguf_str){"qz", 2};
    if (m == M_MANY) mg[k + 1] = (gguf_str){"zq", 2};
    if (m == M_MERGE_RESULT) mg[k] = (gguf_str){"q z", 3};              /* "qz" is no token */
    if (m == M_MERGES_U32) {
        uint32_t u[3] = {0};
        OK(gguf_writer_add_array(w, "tokenizer.ggml.merges", GGUF_VT_UINT32, u, 3, &err));
    } else if (m != M_NO_MERGES) {
        OK(gguf_writer_add_str_array(w, "tokenizer.ggml.merges", mg, (uint64_t)V.n_merges, &err));
    }
    if (m == M_BOS_STRING) OK(gguf_writer_add_str(w, "tokenizer.ggml.bos_token_id", "1", 1, &err));
    else OK(gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)V.endoftext, &err));
    OK(gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id",
                           m == M_EOS_RANGE || m == M_MANY ? (uint32_t)n : (uint32_t)V.im_end, &err));
    if (m == M_PAD_RANGE) OK(gguf_writer_add_u64(w, "tokenizer.ggml.padding_token_id", 1ull << 40, &err));
    else if (m != M_NONE) OK(gguf_writer_add_u32(w, "tokenizer.ggml.padding_token_id", 0, &err));
    OK(gguf_writer_open(w, tmp_path, &err));
    OK(gguf_writer_finish(w, &err));
    gguf_writer_free(w);
    free(tok);
    free(arena);
    free(mg);
    free(marena);
}

static qwen_tokenizer *load_vocab(enum mut m, gguf_error *err, int *status)
{
    write_vocab(m);
    gguf_file *f;
    gguf_error e;
    if (gguf_open(&f, tmp_path, "vocab.gguf", 0, &e)) HARD_ERROR("%s", e.message);
    qwen_tokenizer *t = NULL;
    memset(err, 0, sizeof *err);
    *status = qwen_tokenizer_load(&t, f, err);
    gguf_close(f); /* the tokenizer must not need it any more */
    return t;
}

/* ------------------------------------------------------------------------ */
/* The checks                                                                */

/* Findings of qwen_tokenizer_check, gathered. */
struct findings {
    int problems, notes;
    char text[8][sizeof ((gguf_error *)0)->message];
};

static int gather(void *ctx, int kind, const gguf_error *e)
{
    struct findings *fd = ctx;
    if (kind == QWEN_PROBLEM) {
        if (fd->problems < 8) snprintf(fd->text[fd->problems], sizeof fd->text[0], "%s", e->message);
        fd->problems++;
    } else {
        fd->notes++;
    }
    return 0;
}

/* The loader stops at the first problem; the check lists them all, the
 * independent ones (model name, each merge, each token id). */
static void test_check_all(void)
{
    gguf_error err;
    int st;
    qwen_tokenizer *t = load_vocab(M_MANY, &err, &st);
    CHECK(t == NULL && st == GGUF_E_UNSUPPORTED && strstr(err.message, "tokenizer model 'llama'"),
          "many problems: the loader names the first: %s", err.message);
    gguf_file *f;
    if (gguf_open(&f, tmp_path, "vocab.gguf", 0, &err)) HARD_ERROR("%s", err.message);
    struct findings fd;
    memset(&fd, 0, sizeof fd);
    qwen_check c = {gather, &fd, NULL, GGUF_OK, 0};
    st = qwen_tokenizer_check(f, &c);
    CHECK(st == GGUF_E_UNSUPPORTED && c.status == st, "many problems: status %d", st);
    CHECK(fd.problems == 4 && fd.notes == 0, "many problems: %d problems, %d notes", fd.problems,
          fd.notes);
    CHECK(strstr(fd.text[0], "tokenizer model 'llama'") && strstr(fd.text[1], "merge ") &&
              strstr(fd.text[1], "'qz'") && strstr(fd.text[2], "'zq'") &&
              strstr(fd.text[3], "eos_token_id: token id"),
          "many problems, in order: %s | %s | %s | %s", fd.text[0], fd.text[1], fd.text[2],
          fd.text[3]);
    /* A callback that ends the check at the first. */
    memset(&fd, 0, sizeof fd);
    gguf_error first;
    qwen_check one = {NULL, NULL, &first, GGUF_OK, 0};
    CHECK(qwen_tokenizer_check(f, &one) == GGUF_E_UNSUPPORTED && one.done &&
              strstr(first.message, "tokenizer model 'llama'"),
          "no callback: the first only: %s", first.message);
    gguf_close(f);

    /* A good vocabulary: nothing found; a token id of another type than
     * UINT32 is a note (llama.cpp refuses it), not a problem. */
    write_vocab(M_NONE);
    if (gguf_open(&f, tmp_path, "vocab.gguf", 0, &err)) HARD_ERROR("%s", err.message);
    memset(&fd, 0, sizeof fd);
    qwen_check good = {gather, &fd, NULL, GGUF_OK, 0};
    CHECK(qwen_tokenizer_check(f, &good) == GGUF_OK && fd.problems == 0 && fd.notes == 0,
          "a good vocabulary: %d problems, %d notes", fd.problems, fd.notes);
    gguf_close(f);
    write_vocab(M_PAD_RANGE);
    if (gguf_open(&f, tmp_path, "vocab.gguf", 0, &err)) HARD_ERROR("%s", err.message);
    memset(&fd, 0, sizeof fd);
    qwen_check pad = {gather, &fd, NULL, GGUF_OK, 0};
    CHECK(qwen_tokenizer_check(f, &pad) == GGUF_E_FORMAT && fd.problems == 1,
          "padding id 2^40 (UINT64): one problem, %d", fd.problems);
    gguf_close(f);
}

static void test_bad_metadata(void)
{
    static const struct {
        enum mut m;
        int status;
        const char *key;
    } cases[] = {
        {M_NO_MODEL, GGUF_E_NOT_FOUND, "tokenizer.ggml.model: missing"},
        {M_MODEL_LLAMA, GGUF_E_UNSUPPORTED, "tokenizer.ggml.model: tokenizer model 'llama'"},
        {M_MODEL_U32, GGUF_E_TYPE, "tokenizer.ggml.model: is UINT32, expected STRING"},
        {M_PRE_OTHER, GGUF_E_UNSUPPORTED, "tokenizer.ggml.pre: pre-tokenizer 'llama-bpe'"},
        {M_NO_TOKENS, GGUF_E_NOT_FOUND, "tokenizer.ggml.tokens: missing"},
        {M_TOKENS_U32, GGUF_E_TYPE, "tokenizer.ggml.tokens: is ARRAY of UINT32, expected ARRAY of STRING"},
        {M_NO_TYPES, GGUF_E_NOT_FOUND, "tokenizer.ggml.token_type: missing"},
        {M_TYPES_SHORT, GGUF_E_FORMAT, "tokenizer.ggml.token_type: "},
        {M_TYPES_U8, GGUF_E_TYPE, "tokenizer.ggml.token_type: is ARRAY of UINT8"},
        {M_NO_MERGES, GGUF_E_NOT_FOUND, "tokenizer.ggml.merges: missing"},
        {M_MERGES_U32, GGUF_E_TYPE, "tokenizer.ggml.merges: is ARRAY of UINT32"},
        {M_MERGE_UNKNOWN, GGUF_E_FORMAT, "tokenizer.ggml.merges: merge "},
        {M_MERGE_NOSPACE, GGUF_E_FORMAT, "tokenizer.ggml.merges: merge "},
        {M_MERGE_RESULT, GGUF_E_FORMAT, "not in the vocabulary"},
        {M_EOS_RANGE, GGUF_E_FORMAT, "tokenizer.ggml.eos_token_id: token id "},
        {M_BOS_STRING, GGUF_E_TYPE, "tokenizer.ggml.bos_token_id: is STRING"},
        {M_PAD_RANGE, GGUF_E_FORMAT, "tokenizer.ggml.padding_token_id: token id 1099511627776"},
        {M_NO_BYTE, GGUF_E_FORMAT, "tokenizer.ggml.tokens: no token for byte 0x41"},
        {M_FEW_TOKENS, GGUF_E_FORMAT, "tokenizer.ggml.tokens: 200 tokens"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gguf_error err;
        int st;
        qwen_tokenizer *t = load_vocab(cases[i].m, &err, &st);
        CHECK(t == NULL && st == cases[i].status, "mutation %d: status %d (%s), want %d",
              (int)cases[i].m, st, err.message, cases[i].status);
        CHECK(err.status == st && strncmp(err.message, "vocab.gguf: ", 12) == 0 &&
                  strstr(err.message, cases[i].key) != NULL,
              "mutation %d: message '%s' should start with the file and contain '%s'",
              (int)cases[i].m, err.message, cases[i].key);
        if (st == GGUF_E_FORMAT || st == GGUF_E_TYPE || st == GGUF_E_UNSUPPORTED)
            CHECK(strstr(err.message, "(at byte ") != NULL && err.offset != UINT64_MAX,
                  "mutation %d: message '%s' gives the offset", (int)cases[i].m, err.message);
        qwen_tokenizer_free(t);
    }
    /* A bad merge is named at its own element's offset, not the array's. */
    {
        gguf_error e;
        int s2;
        qwen_tokenizer *bad = load_vocab(M_MERGE_NOSPACE, &e, &s2);
        gguf_file *f;
        gguf_error oe;
        if (gguf_open(&f, tmp_path, NULL, 0, &oe)) HARD_ERROR("%s", oe.message);
        const gguf_kv *kv = gguf_kv_find(f, "tokenizer.ggml.merges");
        gguf_value el;
        REQUIRE(kv && gguf_array_get(&kv->value, (uint64_t)(V.n_merges / 2), &el) == GGUF_OK,
                "the merges array");
        CHECK(bad == NULL && e.offset == el.offset && el.offset != kv->value.offset,
              "bad merge at byte %llu, its element is at %llu: %s", (unsigned long long)e.offset,
              (unsigned long long)el.offset, e.message);
        gguf_close(f);
    }
    test_check_all();

    /* A missing pre-tokenizer key is accepted (Qwen2 assumed). */
    gguf_error err;
    int st;
    qwen_tokenizer *t = load_vocab(M_PRE_NONE, &err, &st);
    CHECK(t != NULL && st == GGUF_OK, "no tokenizer.ggml.pre: %s", err.message);
    CHECK(t && qwen_tokenizer_pad(t) == 0, "padding id read");
    qwen_tokenizer_free(t);
    CHECK(qwen_tokenizer_load(NULL, NULL, NULL) == GGUF_E_INVALID, "NULL arguments");
}

struct split_case {
    const char *text;
    const char *pieces[12];
};

static void test_split(const qwen_tokenizer *t)
{
    static const struct split_case cases[] = {
        {"Hello world", {"Hello", " world"}},
        {"   Hello", {"  ", " Hello"}},
        {"Hello, y'all! How're you?", {"Hello", ",", " y", "'all", "!", " How", "'re", " you", "?"}},
        {"I'LL DO IT'S", {"I", "'LL", " DO", " IT", "'S"}},
        {"3333 12", {"3", "3", "3", "3", " ", "1", "2"}},
        {"a\n\n\nb", {"a", "\n\n\n", "b"}},
        {"x  \n  y", {"x", "  \n", " ", " y"}},
        {"!!!\n\n ok", {"!!!\n\n", " ok"}},
        {" (\n =", {" (\n", " ="}},
        {"\t\tfoo", {"\t", "\tfoo"}},
        {"end   ", {"end", "   "}},
        {"🦙.cpp", {"🦙.", "cpp"}},
        {"你好世界，我想", {"你好世界", "，我想"}},
        {"Cửa Việt", {"Cửa", " Việt"}},
        {"e\xcc\x81t\xc3\xa9", {"e", "\xcc\x81t\xc3\xa9"}}, /* a combining mark is not a letter */
        {"\xd9\xa3\xd9\xa4x", {"\xd9\xa3", "\xd9\xa4", "x"}}, /* Arabic-Indic digits */
        {"a\xffz", {"a", "\xff", "z"}},                      /* invalid UTF-8 */
        {"a\xe4\xb8z", {"a", "\xe4\xb8", "z"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *s = cases[i].text;
        struct pieces *p = calloc(1, sizeof *p);
        if (!p) HARD_ERROR("out of memory");
        CHECK(qwen_pretokenize(t, s, strlen(s), collect, p, NULL) == GGUF_OK, "split '%s'", s);
        size_t want = 0;
        while (want < 12 && cases[i].pieces[want]) want++;
        int ok = p->n == want;
        for (size_t k = 0; ok && k < want; k++)
            ok = p->end[k] - p->start[k] == strlen(cases[i].pieces[k]) &&
                 memcmp(s + p->start[k], cases[i].pieces[k], p->end[k] - p->start[k]) == 0;
        if (!ok) {
            fprintf(stderr, "split of '%s':", show(s, strlen(s)));
            for (size_t k = 0; k < p->n && k < 4096; k++)
                fprintf(stderr, " [%s]", show(s + p->start[k], p->end[k] - p->start[k]));
            fputc('\n', stderr);
        }
        CHECK(ok, "split case %zu '%s'", i, show(s, strlen(s)));
        free(p);
    }
    char buf[4096];
    for (int r = 0; r < 200; r++) {
        size_t n = random_text(buf, 1 + below(300));
        CHECK(pieces_cover(t, buf, n), "pieces cover '%s'", show(buf, n));
    }
    for (int r = 0; r < 100; r++) {
        size_t n = 1 + below(200);
        for (size_t i = 0; i < n; i++) buf[i] = (char)below(256);
        CHECK(pieces_cover(t, buf, n), "pieces cover random bytes '%s'", show(buf, n));
    }
}

/* The reference merge loop: symbols as byte ranges of the piece, merged
 * by the lowest rank (leftmost among equals) until no pair has a merge. */
static size_t ref_bpe(const char *s, size_t n, int32_t *out)
{
    size_t st[512], len[512], k = n;
    for (size_t i = 0; i < n; i++) st[i] = i, len[i] = 1;
    for (;;) {
        int best = -1;
        size_t at = 0;
        for (size_t i = 0; i + 1 < k; i++) {
            for (int m = 0; m < V.n_merges; m++) {
                if (best >= 0 && m >= best) break;
                int32_t l = V.merge_l[m], r = V.merge_r[m];
                if (V.raw_len[l] == len[i] && V.raw_len[r] == len[i + 1] &&
                    memcmp(V.raw[l], s + st[i], len[i]) == 0 &&
                    memcmp(V.raw[r], s + st[i + 1], len[i + 1]) == 0) {
                    best = m;
                    at = i;
                    break;
                }
            }
        }
        if (best < 0) break;
        len[at] += len[at + 1];
        memmove(st + at + 1, st + at + 2, (k - at - 2) * sizeof *st);
        memmove(len + at + 1, len + at + 2, (k - at - 2) * sizeof *len);
        k--;
    }
    for (size_t i = 0; i < k; i++) out[i] = v_find(s + st[i], len[i]);
    return k;
}

static void test_bpe(const qwen_tokenizer *t)
{
    char buf[4096];
    int32_t want[4096];
    for (int r = 0; r < 300; r++) {
        size_t n;
        if (r < 100) {
            /* Stretches of the corpus, where the merges apply most. */
            size_t a = below(sizeof corpus - 2), b = a + 1 + below(120);
            if (b > sizeof corpus - 1) b = sizeof corpus - 1;
            n = b - a;
            memcpy(buf, corpus + a, n);
        } else {
            n = random_text(buf, 1 + below(200));
        }
        struct pieces *p = calloc(1, sizeof *p);
        if (!p) HARD_ERROR("out of memory");
        qwen_pretokenize(t, buf, n, collect, p, NULL);
        size_t nw = 0;
        for (size_t k = 0; k < p->n && k < 4096; k++) {
            if (p->end[k] - p->start[k] > 512) HARD_ERROR("piece too long for the reference");
            nw += ref_bpe(buf + p->start[k], p->end[k] - p->start[k], want + nw);
        }
        free(p);
        qwen_ids ids = QWEN_IDS_INIT;
        CHECK(qwen_tokenize(t, buf, n, 0, &ids, NULL) == GGUF_OK, "tokenize");
        CHECK(ids.n == nw && memcmp(ids.v, want, nw * sizeof *want) == 0,
              "BPE of '%s': got%s, want%s", show(buf, n), show_ids(ids.v, ids.n),
              show_ids(want, nw));
        qwen_ids_free(&ids);
    }
    /* The merges did something: the corpus takes far fewer tokens than bytes. */
    qwen_ids ids = QWEN_IDS_INIT;
    qwen_tokenize(t, corpus, sizeof corpus - 1, 0, &ids, NULL);
    CHECK(ids.n * 2 < sizeof corpus - 1, "corpus: %zu tokens for %zu bytes", ids.n,
          sizeof corpus - 1);
    /* Appending keeps earlier ids. */
    size_t before = ids.n;
    int32_t first = ids.n ? ids.v[0] : -1;
    CHECK(qwen_tokenize(t, "hello", 5, 0, &ids, NULL) == GGUF_OK && ids.n > before &&
              ids.v[0] == first,
          "appending keeps the earlier ids");
    qwen_ids_free(&ids);
}

static void test_round_trip(const qwen_tokenizer *t)
{
    static const char *fixed[] = {
        "", " ", "\n", "\n\n\n", "  \t \r\n ", "Hello world", "Äpfel", "ied 4 ½ months",
        "нещо на Български", "កាន់តែពិសេសអាចខលចេញ", "🚀 (normal) 😶‍🌫️ ✅",
        "Hello, y'all! How are you 😁 ?我想在apple工作1314151天～", "3333333 33",
        "e\xcc\x81\xcc\x81\xcc\x81", "\xe2\x80\x8b\xe2\x80\x8d", "a\0b", "<|im_start|>",
        "<|im_start|>user\nhi<|im_end|>\n<tool_call>x</tool_call>", "[PAD7]",
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        size_t n = strlen(fixed[i]) + (i == 15 ? 2 : 0);
        CHECK(round_trip(t, fixed[i], n, 0), "round trip %zu", i);
        CHECK(round_trip(t, fixed[i], n, QWEN_TOKENIZE_SPECIAL), "round trip %zu, special", i);
    }
    char buf[8192];
    for (int r = 0; r < 500; r++) {
        size_t n = random_text(buf, 1 + below(r < 450 ? 60 : 1500));
        if (!utf8_valid(buf, n)) HARD_ERROR("generator made invalid UTF-8");
        CHECK(round_trip(t, buf, n, r & 1 ? QWEN_TOKENIZE_SPECIAL : 0), "random round trip %d", r);
    }
    for (int r = 0; r < 200; r++) {
        size_t n = 1 + below(300);
        for (size_t i = 0; i < n; i++) buf[i] = (char)below(256);
        CHECK(round_trip(t, buf, n, 0), "random bytes round trip %d", r);
    }
    /* Long runs: one piece of many bytes. */
    memset(buf, ' ', 5000);
    CHECK(round_trip(t, buf, 5000, 0), "5000 spaces");
    memset(buf, 'e', 5000);
    CHECK(round_trip(t, buf, 5000, 0), "5000 letters");
}


static void test_special(const qwen_tokenizer *t)
{
    const char *s = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>system\n<tool_call>[PAD7]"
                    "<|endoftext|>";
    qwen_ids on = QWEN_IDS_INIT, off = QWEN_IDS_INIT;
    CHECK(qwen_tokenize(t, s, strlen(s), QWEN_TOKENIZE_SPECIAL, &on, NULL) == GGUF_OK, "on");
    CHECK(qwen_tokenize(t, s, strlen(s), 0, &off, NULL) == GGUF_OK, "off");
    CHECK(on.n > 0 && on.v[0] == V.im_start, "starts with <|im_start|>:%s", show_ids(on.v, on.n));
    CHECK(count_id(&on, V.im_start) == 1 && count_id(&on, V.im_system) == 1 &&
              count_id(&on, V.im_end) == 1 && count_id(&on, V.endoftext) == 1 &&
              count_id(&on, V.tool_call) == 1 && count_id(&on, V.unused) == 0,
          "specials recognised, longest first, unused not:%s", show_ids(on.v, on.n));
    CHECK(on.n > 0 && on.v[on.n - 1] == V.endoftext, "ends with <|endoftext|>");
    CHECK(count_id(&off, V.im_start) + count_id(&off, V.im_system) + count_id(&off, V.im_end) +
                  count_id(&off, V.endoftext) == 0 &&
              count_id(&off, V.tool_call) == 1,
          "without the flag only user-defined tokens are recognised:%s", show_ids(off.v, off.n));
    /* Control tokens vanish from output unless asked for. */
    char *a, *b;
    size_t na = detok(t, &on, 0, &a), nb = detok(t, &on, 1, &b);
    CHECK(nb == strlen(s) && memcmp(b, s, nb) == 0, "special detokenize gives the text");
    const char *plain = "user\nhi\n\n<tool_call>[PAD7]";
    CHECK(na == strlen(plain) && memcmp(a, plain, na) == 0, "control tokens left out: '%s'",
          show(a, na));
    free(a);
    free(b);
    /* Text around: "x<|im_end|>y" cuts into x, the special, y. */
    on.n = 0;
    qwen_tokenize(t, "x<|im_end|>y", 12, QWEN_TOKENIZE_SPECIAL, &on, NULL);
    CHECK(on.n == 3 && on.v[0] == qwen_tokenizer_find(t, "x", 1) && on.v[1] == V.im_end &&
              on.v[2] == qwen_tokenizer_find(t, "y", 1),
          "x<|im_end|>y:%s", show_ids(on.v, on.n));
    CHECK(qwen_tokenizer_find(t, "<|im_end|>", 10) == V.im_end, "find a special");
    CHECK(qwen_tokenizer_find(t, " the", 4) >= 256, "find an ordinary token by its bytes");
    CHECK(qwen_tokenizer_find(t, "\xff", 1) >= 0, "find a byte token");
    CHECK(qwen_tokenizer_find(t, "zzzzqq", 6) == -1, "find nothing");
    CHECK(qwen_tokenizer_bos(t) == V.endoftext && qwen_tokenizer_eos(t) == V.im_end &&
              qwen_tokenizer_pad(t) == -1,
          "bos/eos/pad ids");
    CHECK(qwen_token_type(t, V.im_end) == QWEN_TOKEN_CONTROL &&
              qwen_token_type(t, V.tool_call) == QWEN_TOKEN_USER_DEFINED &&
              qwen_token_type(t, 0) == QWEN_TOKEN_NORMAL && qwen_token_type(t, V.n) == -1 &&
              qwen_token_type(t, -1) == -1,
          "token types");
    size_t len;
    const char *p = qwen_token_bytes(t, qwen_tokenizer_find(t, " the", 4), &len);
    CHECK(p && len == 4 && memcmp(p, " the", 4) == 0, "bytes of ' the'");
    CHECK(qwen_token_bytes(t, V.n, &len) == NULL && len == 0, "bytes of an id out of range");
    CHECK(qwen_tokenizer_n_vocab(t) == V.n, "vocabulary size");
    qwen_ids_free(&on);
    qwen_ids_free(&off);
}

/* Feeds s in chunks of `step` bytes; after each feed, the output so far
 * must be the longest prefix of s made of whole characters. */
static void stream_check(const char *s, size_t n, size_t step)
{
    qwen_utf8 d = QWEN_UTF8_INIT;
    char out[8192];
    size_t o = 0;
    for (size_t i = 0; i < n; i += step) {
        size_t k = n - i < step ? n - i : step;
        o += qwen_utf8_feed(&d, s + i, k, out + o);
        size_t whole = 0;
        while (whole < i + k) {
            size_t c = utf8_char((const unsigned char *)s + whole, i + k - whole);
            if (!c) break;
            whole += c;
        }
        CHECK(o == whole && memcmp(out, s, o) == 0, "after %zu bytes of '%s': %zu out, want %zu",
              i + k, show(s, n), o, whole);
    }
    o += qwen_utf8_flush(&d, out + o);
    CHECK(o == n && memcmp(out, s, n) == 0 && d.n_held == 0, "all out after flush");
}

static void test_utf8_stream(const qwen_tokenizer *t)
{
    const char *s = "aé€𝄞你好🦙😶‍🌫️ok";
    for (size_t step = 1; step <= 5; step++) stream_check(s, strlen(s), step);
    char buf[4096];
    for (int r = 0; r < 50; r++) {
        size_t n = random_text(buf, 1 + below(100));
        stream_check(buf, n, 1 + below(4));
    }

    /* Invalid input passes at once, as is or as U+FFFD. */
    struct {
        const char *in;
        size_t n;
        const char *raw, *rep;
    } inv[] = {
        {"\xff", 1, "\xff", "\xef\xbf\xbd"},
        {"\xe4\xb8" "A", 3, "\xe4\xb8" "A", "\xef\xbf\xbd" "A"},
        {"\x80\x80", 2, "\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xe0\x80", 2, "\xe0\x80", "\xef\xbf\xbd\xef\xbf\xbd"},        /* overlong */
        {"\xed\xa0\x80", 3, "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* surrogate */
        {"\xf0\x9f\xa6" "\xf0\x9f\xa6\x99", 7, "\xf0\x9f\xa6\xf0\x9f\xa6\x99",
         "\xef\xbf\xbd\xf0\x9f\xa6\x99"},
    };
    for (size_t i = 0; i < sizeof inv / sizeof inv[0]; i++) {
        for (int rep = 0; rep < 2; rep++) {
            qwen_utf8 d = QWEN_UTF8_INIT;
            d.replace = rep;
            char out[64];
            size_t o = 0;
            for (size_t k = 0; k < inv[i].n; k++) o += qwen_utf8_feed(&d, inv[i].in + k, 1, out + o);
            o += qwen_utf8_flush(&d, out + o);
            const char *want = rep ? inv[i].rep : inv[i].raw;
            CHECK(o == strlen(want) && memcmp(out, want, o) == 0, "invalid case %zu (replace %d): '%s'",
                  i, rep, show(out, o));
        }
    }
    /* An incomplete character at the end is held, then flushed. */
    qwen_utf8 d = QWEN_UTF8_INIT;
    char out[64];
    CHECK(qwen_utf8_feed(&d, "x\xf0\x9f", 3, out) == 1 && d.n_held == 2, "held at the end");
    CHECK(qwen_utf8_flush(&d, out) == 2 && memcmp(out, "\xf0\x9f", 2) == 0, "flushed as is");
    d.replace = 1;
    qwen_utf8_feed(&d, "\xf0\x9f", 2, out);
    CHECK(qwen_utf8_flush(&d, out) == 3 && memcmp(out, "\xef\xbf\xbd", 3) == 0, "flushed as U+FFFD");

    /* Token by token: every chunk that comes out is valid UTF-8, and all
     * together are the text. */
    const char *text = "Hello 你好世界 🦙🚀😶‍🌫️ naïve café ✅ Привет";
    qwen_ids ids = QWEN_IDS_INIT;
    qwen_tokenize(t, text, strlen(text), 0, &ids, NULL);
    qwen_utf8 dd = QWEN_UTF8_INIT;
    char all[512];
    size_t o = 0;
    int split = 0;
    for (size_t i = 0; i < ids.n; i++) {
        size_t len;
        const char *p = qwen_token_bytes(t, ids.v[i], &len);
        if (!utf8_valid(p, len)) split = 1;
        char chunk[QWEN_UTF8_OUT_MAX(64)];
        size_t k = qwen_utf8_feed(&dd, p, len, chunk);
        CHECK(utf8_valid(chunk, k), "chunk %zu is valid UTF-8", i);
        memcpy(all + o, chunk, k);
        o += k;
    }
    o += qwen_utf8_flush(&dd, all + o);
    CHECK(o == strlen(text) && memcmp(all, text, o) == 0, "token stream gives the text");
    CHECK(split, "some token ends inside a character (so holding was exercised)");
    qwen_ids_free(&ids);
}

static int run_file(const char *path)
{
    gguf_file *f;
    qwen_tokenizer *t = open_tokenizer(path, &f);
    char buf[8192];
    for (int r = 0; r < 300; r++) {
        size_t n = random_text(buf, 1 + below(200));
        CHECK(round_trip(t, buf, n, r & 1 ? QWEN_TOKENIZE_SPECIAL : 0), "round trip %d", r);
        CHECK(pieces_cover(t, buf, n), "pieces cover");
    }
    const char *chat = "<|im_start|>user\nhi<|im_end|>\n";
    CHECK(round_trip(t, chat, strlen(chat), QWEN_TOKENIZE_SPECIAL), "chat round trip");
    int32_t im = qwen_tokenizer_find(t, "<|im_start|>", 12);
    if (im >= 0) {
        qwen_ids ids = QWEN_IDS_INIT;
        qwen_tokenize(t, chat, strlen(chat), QWEN_TOKENIZE_SPECIAL, &ids, NULL);
        CHECK(ids.n > 0 && ids.v[0] == im, "<|im_start|> recognised");
        qwen_ids_free(&ids);
    }
    /* A Qwen3 vocabulary: <think> and </think> are user-defined tokens,
     * recognised in any text, and the thinking filter finds them. */
    int32_t think = qwen_tokenizer_find(t, "<think>", 7), think_end = qwen_tokenizer_find(t, "</think>", 8);
    if (think >= 0 || think_end >= 0) {
        CHECK(think >= 0 && think_end >= 0, "<think> %d without </think> %d", think, think_end);
        CHECK(qwen_token_type(t, think) == QWEN_TOKEN_USER_DEFINED &&
                  qwen_token_type(t, think_end) == QWEN_TOKEN_USER_DEFINED,
              "<think> and </think> not user-defined");
        const char *block = "<think>\nhm</think>\n\nok";
        for (unsigned flags = 0; flags <= QWEN_TOKENIZE_SPECIAL; flags += QWEN_TOKENIZE_SPECIAL) {
            qwen_ids ids = QWEN_IDS_INIT;
            qwen_tokenize(t, block, strlen(block), flags, &ids, NULL);
            CHECK(ids.n > 2 && ids.v[0] == think && count_id(&ids, think_end) == 1,
                  "thinking block, flags %u:%s", flags, show_ids(ids.v, ids.n));
            CHECK(round_trip(t, block, strlen(block), flags), "thinking block round trip");
            qwen_ids_free(&ids);
        }
        qwen_think_filter tf;
        qwen_think_filter_init(&tf, t);
        CHECK(tf.open == think && tf.close == think_end, "thinking filter ids %d %d, tokens %d %d",
              tf.open, tf.close, think, think_end);
    }
    qwen_tokenizer_free(t);
    gguf_close(f);
    tu_finish();
    return 0;
}

/* Feeds the tokens (id, text) of a reply through a thinking filter with
 * <think> = 7, </think> = 8 and compares what it lets through with want. */
static void think_case(const char *what, int32_t open, const int32_t *ids, const char *const *texts,
                       size_t n, const char *want)
{
    qwen_think_filter f;
    qwen_think_filter_init_ids(&f, open, 8);
    char got[256];
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = strlen(texts[i]);
        const char *p = qwen_think_filter_feed(&f, ids[i], texts[i], &k);
        memcpy(got + len, p, k);
        len += k;
    }
    got[len] = 0;
    CHECK(strcmp(got, want) == 0, "think filter, %s: '%s', expected '%s'", what, got, want);
}

static void test_think_filter(void)
{
    const int32_t ids[] = {7, 1, 2, 8, 3, 4, 5};
    const char *const texts[] = {"<think>", "Let me", " see", "</think>", "\n\n", "\n The", " answer"};
    think_case("block hidden with the white space after it", 7, ids, texts, 7, "The answer");
    think_case("no filter without the ids", -1, ids, texts, 7,
               "<think>Let me see</think>\n\n\n The answer");
    think_case("a reply that does not open the block passes whole", 7, ids + 1, texts + 1, 6,
               "Let me see</think>\n\n\n The answer");
    think_case("a block never closed hides everything", 7, ids, texts, 3, "");
    qwen_think_filter f;
    qwen_think_filter_init_ids(&f, 7, 8);
    size_t k = 7;
    qwen_think_filter_feed(&f, 7, "<think>", &k);
    CHECK(qwen_think_filter_hiding(&f) && k == 0, "think filter: hiding inside the block");
    const int32_t later[] = {1, 7, 2};
    const char *const later_t[] = {"A", "<think>", "B"};
    think_case("a <think> after the start passes", 7, later, later_t, 3, "A<think>B");
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--real") == 0) return run_real(argv[2], argv[3], argv[4]);
    if (argc == 3 && strcmp(argv[1], "--file") == 0) return run_file(argv[2]);
    if (argc != 1) {
        fprintf(stderr, "usage: test-tokenizer [--real MODEL INP OUT | --file MODEL]\n");
        return 99;
    }
    const char *dir = getenv("TMPDIR");
    snprintf(tmp_path, sizeof tmp_path, "%s/test-tokenizer-%ld.gguf", dir && *dir ? dir : "/tmp",
             (long)getpid());
    build_vocab();
    fprintf(stderr, "synthetic vocabulary: %d tokens, %d merges\n", V.n, V.n_merges);

    test_bad_metadata();
    test_think_filter();
    gguf_error err;
    int st;
    qwen_tokenizer *t = load_vocab(M_NONE, &err, &st);
    unlink(tmp_path);
    if (!t) HARD_ERROR("the synthetic vocabulary does not load: %s", err.message);
    size_t longest = 0;
    for (int32_t id = 0; id < qwen_tokenizer_n_vocab(t); id++) {
        size_t len;
        qwen_token_bytes(t, id, &len);
        if (len > longest) longest = len;
    }
    CHECK(longest > 1 && qwen_tokenizer_max_bytes(t) == longest,
          "qwen_tokenizer_max_bytes %zu, the longest token has %zu", qwen_tokenizer_max_bytes(t),
          longest);
    test_split(t);
    test_bpe(t);
    test_round_trip(t);
    test_special(t);
    test_utf8_stream(t);

    char *big = malloc(1 << 20);
    size_t n = 0;
    while (n + sizeof corpus < (1u << 20)) memcpy(big + n, corpus, sizeof corpus - 1), n += sizeof corpus - 1;
    speed(t, "synthetic vocabulary, corpus, 1 MB", big, n, 2);
    free(big);
    qwen_tokenizer_free(t);
    for (int i = 0; i < V.n; i++) free(V.raw[i]);
    tu_finish();
    return 0;
}
