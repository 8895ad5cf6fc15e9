/*
 * gguf-synth -- writes a Qwen2- or Qwen3-architecture GGUF model with
 * deterministic pseudo-random weights, for tests, demos and benchmarks.
 *
 * The file has the tensor names, shapes, types and metadata keys of the
 * GGUF files llama.cpp makes from Qwen2.5 checkpoints (--arch qwen2, the
 * default) or from dense Qwen3 checkpoints (--arch qwen3: no Q/K/V biases,
 * per-head Q/K norms, a head width of its own), with a synthetic
 * byte-level BPE vocabulary (the 256 GPT-2 byte tokens, merges drawn from
 * the seed, the Qwen2.5 or Qwen3 special tokens).  The same options always
 * give the same bytes.  Weights are F32, F16, BF16, or quantized from the
 * F32 values with libgguf's quantizers, in one type or in one of
 * llama-quantize's per-tensor mixtures (Q4_K_M ...).  Everything goes
 * through libgguf's writer a chunk at a time, so even the 1.7b model needs
 * little memory.
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "tests/bytelevel.h"
#include "tools/preset.h"

#define PROG "gguf-synth"
#define EXIT_TROUBLE 2
#define CHUNK_BYTES ((size_t)1 << 20)
#define MAX_TOKEN_BYTES 16   /* merged tokens are at most this long */

/* ------------------------------------------------------------------------ */
/* Model shapes                                                              */

/* The architectures gguf-synth writes: general.architecture, and the
 * prefix of the hyperparameter keys. */
enum arch { ARCH_QWEN2, ARCH_QWEN3 };
static const char *const arch_names[] = {"qwen2", "qwen3"};

/* The special tokens of the real vocabularies, ids 151643.. in this
 * order: Qwen2.5 has the first 22 (to <|file_sep|>), Qwen3 all 26, the
 * thinking block's <think> = 151667 and </think> = 151668 last. */
static const char *const qwen_specials[] = {
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
    "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>",
    "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
    "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>",
};
#define N_QWEN25_SPECIALS 22u

/* The small shapes' specials: the three the ChatML template needs, and for
 * qwen3 the two of the thinking block, so that the chat code and the
 * thinking filter can be tested on a small model. */
static const char *const qwen3_small_specials[] = {
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>",
};

#define N_OF(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))
#define QWEN_N_REGULAR 151643u  /* regular tokens of the real vocabularies */

struct shape {
    const char *name;       /* --size value */
    const char *label;      /* for general.name */
    enum arch arch;
    uint32_t n_layer, n_embd, n_head, n_head_kv;
    uint32_t head_dim;      /* qwen3: attention.key_length; qwen2: 0 (width / heads) */
    uint32_t n_ff, n_vocab, n_ctx;
    const char *const *specials;
    uint32_t n_special;     /* specials[0 .. n_special) follow the regular tokens */
    uint32_t n_regular;     /* regular tokens; 0: all but the specials (no padding) */
};

/* Each architecture's shapes, its first the default.  The small qwen3
 * shapes have Q wider than the model (heads x head width != width), as
 * every real Qwen3 but 4B has (0.6B: 16 x 128 = 2048 for a width of 1024),
 * so that tests see n_q != n_embd. */
static const struct shape shapes[] = {
    {"tiny", "tiny", ARCH_QWEN2, 2, 64, 4, 2, 0, 128, 1024, 32768, qwen_specials, 3, 0},
    {"small", "small", ARCH_QWEN2, 2, 256, 4, 2, 0, 512, 1024, 32768, qwen_specials, 3, 0},
    {"medium", "medium", ARCH_QWEN2, 2, 512, 8, 2, 0, 1024, 4096, 32768, qwen_specials, 3, 0},
    {"0.5b", "0.5B", ARCH_QWEN2, 24, 896, 14, 2, 0, 4864, 151936, 32768, qwen_specials,
     N_QWEN25_SPECIALS, QWEN_N_REGULAR},
    {"1.5b", "1.5B", ARCH_QWEN2, 28, 1536, 12, 2, 0, 8960, 151936, 32768, qwen_specials,
     N_QWEN25_SPECIALS, QWEN_N_REGULAR},
    {"7b", "7B", ARCH_QWEN2, 28, 3584, 28, 4, 0, 18944, 152064, 32768, qwen_specials,
     N_QWEN25_SPECIALS, QWEN_N_REGULAR},
    {"tiny", "tiny", ARCH_QWEN3, 2, 64, 4, 2, 32, 128, 1024, 40960, qwen3_small_specials,
     N_OF(qwen3_small_specials), 0},
    {"small", "small", ARCH_QWEN3, 2, 256, 4, 2, 128, 512, 1024, 40960, qwen3_small_specials,
     N_OF(qwen3_small_specials), 0},
    {"0.6b", "0.6B", ARCH_QWEN3, 28, 1024, 16, 8, 128, 3072, 151936, 40960, qwen_specials,
     N_OF(qwen_specials), QWEN_N_REGULAR},
    {"1.7b", "1.7B", ARCH_QWEN3, 28, 2048, 16, 8, 128, 6144, 151936, 40960, qwen_specials,
     N_OF(qwen_specials), QWEN_N_REGULAR},
};

/* The head width of shape sh. */
static uint32_t head_dim(const struct shape *sh)
{
    return sh->head_dim ? sh->head_dim : sh->n_embd / sh->n_head;
}

/* What --type asked for. */
struct wtype {
    char name[16];          /* --type value, lower case */
    uint32_t ggml_type;     /* the type of the 2-D weights (a mixture's base type) */
    uint32_t file_type;     /* llama.cpp's general.file_type */
    const struct preset *mix; /* llama-quantize's per-tensor mixture (tools/preset.c), or NULL */
    int quantized;          /* 1: weights go through gguf_quantize_rows */
};

/* The mixtures --type takes: the file types whose names are not a type's
 * (Q3_K_S ... Q5_K_M); Q4_0, Q8_0 ... name single types here. */
static const char *const mixture_names[] = {"q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s",
                                            "q4_k_m", "q5_k_s", "q5_k_m"};

/* general.file_type of a file whose 2-D weights all have one type: the
 * llama.cpp file type named after that type; for the K-quants that come in
 * sizes, the smallest (Q4_K gives Q4_K_S: no attn_v or ffn_down tensor has
 * more bits), as gguf-requant names such a file. */
static const struct {
    uint32_t type, file_type;
} single_file_types[] = {
    {GGUF_T_F32, 0},      {GGUF_T_F16, 1},      {GGUF_T_BF16, 32},   {GGUF_T_Q4_0, 2},
    {GGUF_T_Q4_1, 3},     {GGUF_T_Q5_0, 8},     {GGUF_T_Q5_1, 9},    {GGUF_T_Q8_0, 7},
    {GGUF_T_Q2_K, 21},    {GGUF_T_Q3_K, 11},    {GGUF_T_Q4_K, 14},   {GGUF_T_Q5_K, 16},
    {GGUF_T_Q6_K, 18},    {GGUF_T_TQ1_0, 36},   {GGUF_T_TQ2_0, 37},  {GGUF_T_IQ2_XXS, 19},
    {GGUF_T_IQ2_XS, 20},  {GGUF_T_IQ3_XXS, 23}, {GGUF_T_IQ1_S, 24},  {GGUF_T_IQ4_NL, 25},
    {GGUF_T_IQ3_S, 26},   {GGUF_T_IQ2_S, 28},   {GGUF_T_IQ4_XS, 30}, {GGUF_T_IQ1_M, 31},
    {GGUF_T_MXFP4, 38},   {GGUF_T_NVFP4, 39},   {GGUF_T_Q1_0, 40},
};

/* The value llama-quantize writes as general.quantization_version. */
#define QUANTIZATION_VERSION 2

/* llama.cpp token types. */
enum { TOK_NORMAL = 1, TOK_CONTROL = 3, TOK_USER_DEFINED = 4, TOK_UNUSED = 5 };

/* The ChatML template Qwen2.5 instruct models ship (with tool calls). */
static const char chat_template[] =
    "{%- if tools %}\n"
    "    {{- '<|im_start|>system\\n' }}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- messages[0]['content'] }}\n"
    "    {%- else %}\n"
    "        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}\n"
    "    {%- endif %}\n"
    "    {{- \"\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user "
    "query.\\n\\nYou are provided with function signatures within <tools></tools> XML "
    "tags:\\n<tools>\" }}\n"
    "    {%- for tool in tools %}\n"
    "        {{- \"\\n\" }}\n"
    "        {{- tool | tojson }}\n"
    "    {%- endfor %}\n"
    "    {{- \"\\n</tools>\\n\\nFor each function call, return a json object with function name "
    "and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\\"name\\\": "
    "<function-name>, \\\"arguments\\\": <args-json-object>}\\n</tool_call><|im_end|>\\n\" }}\n"
    "{%- else %}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "    {%- else %}\n"
    "        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
    "assistant.<|im_end|>\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) or "
    "(message.role == \"assistant\" and not message.tool_calls) %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    "    {%- elif message.role == \"assistant\" %}\n"
    "        {{- '<|im_start|>' + message.role }}\n"
    "        {%- if message.content %}\n"
    "            {{- '\\n' + message.content }}\n"
    "        {%- endif %}\n"
    "        {%- for tool_call in message.tool_calls %}\n"
    "            {%- if tool_call.function is defined %}\n"
    "                {%- set tool_call = tool_call.function %}\n"
    "            {%- endif %}\n"
    "            {{- '\\n<tool_call>\\n{\"name\": \"' }}\n"
    "            {{- tool_call.name }}\n"
    "            {{- '\", \"arguments\": ' }}\n"
    "            {{- tool_call.arguments | tojson }}\n"
    "            {{- '}\\n</tool_call>' }}\n"
    "        {%- endfor %}\n"
    "        {{- '<|im_end|>\\n' }}\n"
    "    {%- elif message.role == \"tool\" %}\n"
    "        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != \"tool\") %}\n"
    "            {{- '<|im_start|>user' }}\n"
    "        {%- endif %}\n"
    "        {{- '\\n<tool_response>\\n' }}\n"
    "        {{- message.content }}\n"
    "        {{- '\\n</tool_response>' }}\n"
    "        {%- if loop.last or (messages[loop.index0 + 1].role != \"tool\") %}\n"
    "            {{- '<|im_end|>\\n' }}\n"
    "        {%- endif %}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "{%- endif %}\n";

/* A ChatML template with Qwen3's thinking block, shorter than the one
 * Qwen3 ships (no tools) but with the same prompt for plain chats: no
 * default system turn, earlier replies without their thinking block, and,
 * with enable_thinking false, an empty thinking block after the
 * assistant's header.  Nothing in this project reads it (infer/chat.c
 * builds the prompt itself); it is here so that the file has the key. */
static const char chat_template_qwen3[] =
    "{%- if messages[0].role == 'system' %}\n"
    "    {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}\n"
    "    {%- elif message.role == 'assistant' %}\n"
    "        {%- set content = message.content %}\n"
    "        {%- if '</think>' in content %}\n"
    "            {%- set content = content.split('</think>')[-1].lstrip('\\n') %}\n"
    "        {%- endif %}\n"
    "        {{- '<|im_start|>assistant\\n' + content + '<|im_end|>\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "    {%- if enable_thinking is defined and enable_thinking is false %}\n"
    "        {{- '<think>\\n\\n</think>\\n\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endif %}\n";

/* ------------------------------------------------------------------------ */
/* Pseudo-random numbers                                                     */

/* splitmix64: one 64-bit state, a full-period Weyl sequence through a
 * strong mixer; fast, and good enough for weights and merges. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t next64(uint64_t *s)
{
    *s += 0x9e3779b97f4a7c15ull;
    return mix64(*s);
}

/* Uniform in [0, n) for n > 0 (the modulo bias is irrelevant here). */
static uint64_t below(uint64_t *s, uint64_t n)
{
    return next64(s) % n;
}

/* State for the stream named `name` under `seed`: streams of different
 * names are independent, so each tensor's values depend only on the seed
 * and its own name. */
static uint64_t stream_state(uint64_t seed, const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return mix64(seed ^ mix64(h));
}

/* ------------------------------------------------------------------------ */
/* Number formats                                                            */

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static int host_big_endian(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 0;
}

/* Standard normal quantile of p in (0,1), by bisection on erfc: slow but
 * exact to double precision, and only needed 65536 times. */
static double normal_quantile(double p)
{
    double lo = -40, hi = 40;
    for (int i = 0; i < 100 && hi - lo > 1e-15; i++) {
        double mid = 0.5 * (lo + hi);
        if (0.5 * erfc(-mid / sqrt(2.0)) < p) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}

/* Values are drawn 16 random bits at a time from tables of the 65536
 * quantiles of N(0,1) at (i + 0.5) / 65536: an exact discretized normal,
 * and four values per 64-bit random number, which makes gigabytes of
 * weights a matter of seconds.  The half-float table holds the final bit
 * patterns (type and byte order of the output). */
#define TABLE_N 65536
static float z_table[TABLE_N];          /* N(0,1) quantiles */
static uint16_t w16_table[TABLE_N];     /* 0.02 * z as F16 or BF16 bits, output byte order */
static float wf_table[TABLE_N];         /* 0.02 * z as floats (F32 and quantized outputs) */

#define WEIGHT_STD 0.02f
#define NORM_STD 0.05f
#define BIAS_STD 0.02f

static void init_tables(uint32_t type, int swap)
{
    for (int i = 0; i < TABLE_N / 2; i++) {
        double q = normal_quantile((i + 0.5) / TABLE_N);
        z_table[i] = (float)q;
        z_table[TABLE_N - 1 - i] = (float)-q;
    }
    for (int i = 0; i < TABLE_N; i++) {
        float v = WEIGHT_STD * z_table[i];
        wf_table[i] = v;
        uint16_t b16 = type == GGUF_T_BF16 ? gguf_fp32_to_bf16(v) : gguf_fp32_to_fp16(v);
        w16_table[i] = swap ? __builtin_bswap16(b16) : b16;
    }
}

/* ------------------------------------------------------------------------ */
/* Vocabulary                                                                */

/* A set of byte strings (open addressing), for unique tokens. */
struct strset {
    const char **ptr;
    uint8_t *len;
    size_t cap;     /* power of two */
};

static uint64_t str_hash(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    return mix64(h);
}

/* Inserts (p, n) unless present; returns 1 when inserted, 0 when present. */
static int strset_add(struct strset *s, const char *p, size_t n)
{
    size_t i = (size_t)str_hash(p, n) & (s->cap - 1);
    while (s->ptr[i]) {
        if (s->len[i] == n && memcmp(s->ptr[i], p, n) == 0) return 0;
        i = (i + 1) & (s->cap - 1);
    }
    s->ptr[i] = p;
    s->len[i] = (uint8_t)n;
    return 1;
}

struct vocab {
    uint32_t n;             /* tokens */
    gguf_str *tokens;       /* n, pointing into arena */
    int32_t *types;         /* n */
    uint32_t n_merges;
    gguf_str *merges;       /* n_merges, pointing into arena */
    char *arena;
    size_t arena_len, arena_cap;
    uint32_t bos, eos;      /* <|endoftext|>, <|im_end|> */
};

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, PROG ": out of memory\n");
        exit(EXIT_TROUBLE);
    }
    return p;
}

/* Copies n bytes into the arena; returns where. */
static char *arena_put(struct vocab *v, const char *p, size_t n)
{
    if (n > v->arena_cap - v->arena_len) {
        fprintf(stderr, PROG ": internal error: vocabulary arena too small\n");
        exit(EXIT_TROUBLE);
    }
    char *d = v->arena + v->arena_len;
    memcpy(d, p, n);
    v->arena_len += n;
    return d;
}

/* UTF-8 of code point c (< 0x800) into b; returns the length. */
static size_t utf8_put(char *b, unsigned c)
{
    if (c < 0x80) {
        b[0] = (char)c;
        return 1;
    }
    b[0] = (char)(0xc0 | (c >> 6));
    b[1] = (char)(0x80 | (c & 0x3f));
    return 2;
}

/* Builds the vocabulary for shape sh from the seed.
 *
 * Tokens 0..255 are the byte tokens in GPT-2's byte-to-unicode order: the
 * printable bytes ('!'..'~', 0xa1..0xac, 0xae..0xff) as themselves, then the
 * other 68 bytes as U+0100.. (space is U+0120 'Ġ', id 220, as in Qwen2).
 * Then each merge joins two existing tokens into a new, unique token of at
 * most 16 bytes; its merge string is "LEFT RIGHT" (no token contains a
 * space, so the split is unambiguous).  Merges favour common letters and
 * 'Ġ' so that ordinary text meets them.  Then the special tokens. */
static void build_vocab(struct vocab *v, const struct shape *sh, uint64_t seed)
{
    uint32_t n_special = sh->n_special;
    uint32_t n_regular = sh->n_regular ? sh->n_regular : sh->n_vocab - n_special;
    uint32_t n_pad = sh->n_vocab - n_regular - n_special;
    v->n = sh->n_vocab;
    v->n_merges = n_regular - 256;
    v->tokens = xmalloc(sizeof *v->tokens * v->n);
    v->types = xmalloc(sizeof *v->types * v->n);
    v->merges = xmalloc(sizeof *v->merges * v->n_merges);
    /* Tokens of at most 16 bytes, merges of at most 17, specials and PADs
     * of at most 24. */
    v->arena_cap = (size_t)v->n * 24 + (size_t)v->n_merges * 17;
    v->arena = xmalloc(v->arena_cap);
    v->arena_len = 0;

    struct strset set;
    set.cap = 1;
    while (set.cap < (size_t)v->n * 3) set.cap *= 2;
    set.ptr = calloc(set.cap, sizeof *set.ptr);
    set.len = calloc(set.cap, sizeof *set.len);
    if (!set.ptr || !set.len) {
        fprintf(stderr, PROG ": out of memory\n");
        exit(EXIT_TROUBLE);
    }

    /* Byte tokens. */
    uint32_t id = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned b = 0; b < 256; b++) {
            if (bl_printable(b) != (pass == 0)) continue;
            char u[2];
            size_t n = utf8_put(u, bl_code_point(b));
            char *p = arena_put(v, u, n);
            v->tokens[id] = (gguf_str){p, n};
            v->types[id] = TOK_NORMAL;
            strset_add(&set, p, n);
            id++;
        }
    }

    /* Special tokens go into the set first so that no merge can make one. */
    char (*special_names)[24] = xmalloc(sizeof *special_names * (n_special + n_pad));
    for (uint32_t i = 0; i < n_special + n_pad; i++) {
        if (i < n_special)
            snprintf(special_names[i], sizeof special_names[i], "%s", sh->specials[i]);
        else
            snprintf(special_names[i], sizeof special_names[i], "[PAD%" PRIu32 "]",
                     n_regular + i);
        strset_add(&set, special_names[i], strlen(special_names[i]));
    }

    /* Merges.  Common letters for base pieces: the more often a byte
     * appears here, the more merges start from it. */
    static const char common[] = "eeeetttaaaoooiiinnnssshhrrdlcumwfgypbvkjxqz";
    uint64_t rs = stream_state(seed, "tokenizer.ggml.merges");
    uint32_t space_id = 220; /* 'Ġ' */
    for (uint32_t m = 0; m < v->n_merges; m++) {
        uint32_t pick[2];
        for (;;) {
            for (int k = 0; k < 2; k++) {
                uint64_t r = below(&rs, 8);
                if (r < 3 || id == 256) {
                    /* A common letter, or 'Ġ' starting a word. */
                    if (k == 0 && r == 0) {
                        pick[k] = space_id;
                    } else {
                        unsigned char c = (unsigned char)common[below(&rs, sizeof common - 1)];
                        pick[k] = (uint32_t)(c - '!'); /* ids of '!'..'~' are 0..93 */
                    }
                } else if (r < 4) {
                    pick[k] = (uint32_t)below(&rs, 256); /* any byte */
                } else {
                    /* An earlier merge, favouring early (short, frequent) ones. */
                    uint64_t a = below(&rs, id - 256), b = below(&rs, id - 256);
                    pick[k] = 256 + (uint32_t)(a < b ? a : b);
                }
            }
            const gguf_str *l = &v->tokens[pick[0]], *r = &v->tokens[pick[1]];
            size_t n = l->len + r->len;
            if (n > MAX_TOKEN_BYTES) continue;
            char buf[MAX_TOKEN_BYTES];
            memcpy(buf, l->ptr, l->len);
            memcpy(buf + l->len, r->ptr, r->len);
            /* Add to the arena first; drop it again if it is a duplicate. */
            size_t mark = v->arena_len;
            char *p = arena_put(v, buf, n);
            if (!strset_add(&set, p, n)) {
                v->arena_len = mark;
                continue;
            }
            v->tokens[id] = (gguf_str){p, n};
            v->types[id] = TOK_NORMAL;
            id++;
            char mb[2 * MAX_TOKEN_BYTES + 1];
            memcpy(mb, l->ptr, l->len);
            mb[l->len] = ' ';
            memcpy(mb + l->len + 1, r->ptr, r->len);
            char *mp = arena_put(v, mb, n + 1);
            v->merges[m] = (gguf_str){mp, n + 1};
            break;
        }
    }

    /* Specials, then padding.  A special of the form <|...|> is CONTROL,
     * the others (<tool_call>, <think> ...) USER_DEFINED: the types
     * llama.cpp's converter gives them, since Qwen's tokenizer does not
     * mark those as special. */
    for (uint32_t i = 0; i < n_special + n_pad; i++) {
        size_t n = strlen(special_names[i]);
        char *p = arena_put(v, special_names[i], n);
        v->tokens[id] = (gguf_str){p, n};
        if (i >= n_special) v->types[id] = TOK_UNUSED;
        else if (n > 4 && memcmp(p, "<|", 2) == 0 && memcmp(p + n - 2, "|>", 2) == 0)
            v->types[id] = TOK_CONTROL;
        else v->types[id] = TOK_USER_DEFINED;
        id++;
    }
    v->bos = n_regular;     /* <|endoftext|> */
    v->eos = n_regular + 2; /* <|im_end|> */
    free(special_names);
    free(set.ptr);
    free(set.len);
}

/* ------------------------------------------------------------------------ */
/* Tensors                                                                   */

enum tkind { K_WEIGHT, K_NORM, K_BIAS };

struct tspec {
    char name[64];
    uint32_t n_dims;
    uint64_t ne[2];
    enum tkind kind;
    uint32_t type;          /* output type, from plan_types() */
};

/* Appends one tensor spec named by fmt to t[*n]. */
static void spec(struct tspec *t, size_t *n, enum tkind kind, uint32_t n_dims, uint64_t a,
                 uint64_t b, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static void spec(struct tspec *t, size_t *n, enum tkind kind, uint32_t n_dims, uint64_t a,
                 uint64_t b, const char *fmt, ...)
{
    struct tspec *s = &t[(*n)++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->name, sizeof s->name, fmt, ap);
    va_end(ap);
    s->n_dims = n_dims;
    s->ne[0] = a;
    s->ne[1] = b;
    s->kind = kind;
}

/* The tensor list of a Qwen2 or Qwen3 GGUF of shape sh, in file order,
 * dims in ggml order (ne[0] is the input width); with `untied`, an
 * output.weight after output_norm.weight.  Returns the count.
 *
 * qwen2: Q, K and V with biases, every head width / heads wide.
 * qwen3: no biases; an RMSNorm weight over one head of Q and of K
 * (attn_q_norm, attn_k_norm, head_dim each); Q and attention's output
 * n_head * head_dim wide, which need not be the model's width. */
static size_t list_tensors(const struct shape *sh, int untied, struct tspec **out)
{
    size_t n = 0;
    struct tspec *t = xmalloc(sizeof *t * (3 + (size_t)sh->n_layer * 12));
    uint64_t e = sh->n_embd, ff = sh->n_ff, hd = head_dim(sh);
    uint64_t q = (uint64_t)sh->n_head * hd, kv = (uint64_t)sh->n_head_kv * hd;
    int qwen3 = sh->arch == ARCH_QWEN3;
    spec(t, &n, K_WEIGHT, 2, e, sh->n_vocab, "token_embd.weight");
    for (uint32_t l = 0; l < sh->n_layer; l++) {
        spec(t, &n, K_NORM, 1, e, 1, "blk.%u.attn_norm.weight", l);
        spec(t, &n, K_WEIGHT, 2, e, q, "blk.%u.attn_q.weight", l);
        if (qwen3) spec(t, &n, K_NORM, 1, hd, 1, "blk.%u.attn_q_norm.weight", l);
        else spec(t, &n, K_BIAS, 1, q, 1, "blk.%u.attn_q.bias", l);
        spec(t, &n, K_WEIGHT, 2, e, kv, "blk.%u.attn_k.weight", l);
        if (qwen3) spec(t, &n, K_NORM, 1, hd, 1, "blk.%u.attn_k_norm.weight", l);
        else spec(t, &n, K_BIAS, 1, kv, 1, "blk.%u.attn_k.bias", l);
        spec(t, &n, K_WEIGHT, 2, e, kv, "blk.%u.attn_v.weight", l);
        if (!qwen3) spec(t, &n, K_BIAS, 1, kv, 1, "blk.%u.attn_v.bias", l);
        spec(t, &n, K_WEIGHT, 2, q, e, "blk.%u.attn_output.weight", l);
        spec(t, &n, K_NORM, 1, e, 1, "blk.%u.ffn_norm.weight", l);
        spec(t, &n, K_WEIGHT, 2, e, ff, "blk.%u.ffn_gate.weight", l);
        spec(t, &n, K_WEIGHT, 2, e, ff, "blk.%u.ffn_up.weight", l);
        spec(t, &n, K_WEIGHT, 2, ff, e, "blk.%u.ffn_down.weight", l);
    }
    spec(t, &n, K_NORM, 1, e, 1, "output_norm.weight");
    if (untied) spec(t, &n, K_WEIGHT, 2, e, sh->n_vocab, "output.weight");
    *out = t;
    return n;
}

/* ------------------------------------------------------------------------ */
/* Tensor types: llama-quantize's rules                                      */

/* The type llama-quantize substitutes for `type` when a row of ne0
 * elements is not a whole number of its blocks: K-quants (blocks of 256)
 * fall back to a format with blocks of 32 (Q4_K to Q5_0, Q5_K to Q5_1,
 * Q6_K to Q8_0, Q2_K and Q3_K to Q4_0, the IQ types to IQ4_NL), and to F16
 * when even that does not fit.  Returns `type` itself when it fits, or
 * GGUF_T_COUNT when it does not and llama.cpp defines no substitute. */
static uint32_t fallback_type(uint32_t type, uint64_t ne0)
{
    if (ne0 % gguf_type_get(type)->block_size == 0) return type;
    uint32_t fb;
    switch (type) {
    case GGUF_T_IQ1_S: case GGUF_T_IQ1_M: case GGUF_T_IQ2_XXS: case GGUF_T_IQ2_XS:
    case GGUF_T_IQ2_S: case GGUF_T_IQ3_XXS: case GGUF_T_IQ3_S: case GGUF_T_IQ4_XS:
        fb = GGUF_T_IQ4_NL;
        break;
    case GGUF_T_Q2_K: case GGUF_T_Q3_K: case GGUF_T_TQ1_0: case GGUF_T_TQ2_0:
        fb = GGUF_T_Q4_0;
        break;
    case GGUF_T_Q4_K: fb = GGUF_T_Q5_0; break;
    case GGUF_T_Q5_K: fb = GGUF_T_Q5_1; break;
    case GGUF_T_Q6_K: fb = GGUF_T_Q8_0; break;
    default: return GGUF_T_COUNT;
    }
    return ne0 % gguf_type_get(fb)->block_size == 0 ? fb : GGUF_T_F16;
}

/* The output type of tensor t of a model of the shape sh under --type wt,
 * or GGUF_T_COUNT when a row does not fit the type and has no substitute.
 * `tied`: the model has no output.weight.
 *
 * Norms and biases (1-D) are F32.  A single type applies to every 2-D
 * weight, with fallback_type() where a row does not fit.  A mixture takes
 * the types llama-quantize gives a qwen2 or qwen3 model without importance
 * matrix or overrides (tools/preset.c, shared with gguf-requant --preset). */
static uint32_t tensor_type(const struct wtype *wt, const struct tspec *t, const struct shape *sh,
                            int tied)
{
    if (t->kind != K_WEIGHT) return GGUF_T_F32;
    if (!wt->quantized) return wt->ggml_type;
    if (wt->mix) {
        const struct preset_model m = {.n_layer = sh->n_layer,
                                       .n_gqa = sh->n_head / sh->n_head_kv,
                                       .tied = tied,
                                       .output_type = GGUF_T_COUNT,
                                       .embd_type = GGUF_T_COUNT};
        return preset_tensor_type(wt->mix, &m, t->name, strlen(t->name), t->n_dims, t->ne[0], GGUF_T_F32);
    }
    return fallback_type(wt->ggml_type, t->ne[0]);
}

/* Sets the type of every tensor; exits with a message when a tensor gets
 * no type, or (with `need_quantizer`) one that libgguf cannot quantize. */
static void plan_types(const struct wtype *wt, struct tspec *ts, size_t nt, const struct shape *sh,
                       int need_quantizer)
{
    int tied = 1;
    for (size_t i = 0; i < nt; i++)
        if (strcmp(ts[i].name, "output.weight") == 0) tied = 0;
    for (size_t i = 0; i < nt; i++) {
        struct tspec *t = &ts[i];
        t->type = tensor_type(wt, t, sh, tied);
        if (t->type == GGUF_T_COUNT) {
            fprintf(stderr,
                    PROG ": tensor '%s': rows of %" PRIu64 " elements do not fit type %s, "
                    "which has no fallback\n", t->name, t->ne[0], gguf_type_str(wt->ggml_type));
            exit(EXIT_TROUBLE);
        }
        if (need_quantizer && wt->quantized && t->kind == K_WEIGHT &&
            !gguf_can_quantize(t->type)) {
            fprintf(stderr, PROG ": tensor '%s' needs type %s, which libgguf cannot quantize\n",
                    t->name, gguf_type_str(t->type));
            exit(EXIT_TROUBLE);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */

static gguf_writer *g_writer; /* for the signal handler */

/* On SIGINT/SIGTERM/SIGHUP: remove the temporary output, then die of the
 * signal.  Only async-signal-safe calls. */
static void on_signal(int sig)
{
    const char *tmp = gguf_writer_temp_path(g_writer);
    if (tmp) unlink(tmp);
    signal(sig, SIG_DFL);
    raise(sig);
}

static const char *g_out; /* output name for messages */

/* Reports a writer failure.  Messages from an open output already start
 * with the file name; those from building the header do not. */
static void die_writer(const gguf_error *err, int named)
{
    gguf_writer *w = g_writer;
    g_writer = NULL;
    gguf_writer_free(w); /* removes a temporary output */
    if (named) fprintf(stderr, PROG ": %s\n", err->message);
    else fprintf(stderr, PROG ": %s: %s\n", g_out, err->message);
    exit(EXIT_TROUBLE);
}

#define GAMMA 0x9e3779b97f4a7c15ull  /* next64()'s increment */
#define PER32 (CHUNK_BYTES / 4)         /* F32 values per chunk */

/* Stores at dst values first .. first+n-1 (in file order) of the weight or
 * bias tensor whose random stream starts at state s0: the floats of F32
 * files, and what quantized files are made from; with half, the same
 * values rounded to the F16 or BF16 bits of w16_table (uint16_t at dst).
 *
 * The sequence is that of a generator drawing chunk after chunk of PER32
 * values, four values (16 random bits each, lowest first) per 64-bit random
 * number, with one random number discarded after each chunk: value i of
 * chunk c comes from random number c * (PER32 / 4 + 1) + i / 4.  Random
 * number k is mix64(s0 + (k + 1) * GAMMA) (next64() from state s0), so any
 * range can be made directly, in parallel. */
static void weights_at(void *dst, int half, uint64_t s0, uint64_t first, size_t n)
{
    const size_t span = 16384;
    const int64_t nspan = (int64_t)((n + span - 1) / span);
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t b = 0; b < nspan; b++) {
        size_t lo = (size_t)b * span, hi = lo + span < n ? lo + span : n;
        uint64_t c = (first + lo) / PER32, i = (first + lo) % PER32;
        uint64_t r = mix64(s0 + (c * (PER32 / 4 + 1) + i / 4 + 1) * GAMMA);
        for (size_t x = lo; x < hi; x++) {
            const unsigned idx = (r >> (16 * (i % 4))) & 0xffff;
            if (half)
                ((uint16_t *)dst)[x] = w16_table[idx];
            else
                ((float *)dst)[x] = wf_table[idx];
            if (++i == PER32) {
                i = 0;
                c++;
            }
            if (i % 4 == 0) r = mix64(s0 + (c * (PER32 / 4 + 1) + i / 4 + 1) * GAMMA);
        }
    }
}

/* Streams the data of tensor t, of type F32, F16 or BF16, to the writer,
 * a chunk of CHUNK_BYTES at a time.  Weights and biases are weights_at()'s
 * values (F16 and BF16: those values rounded, so a model in F16 is the F32
 * model rounded); norms are drawn per chunk, four values per random
 * number. */
static void write_tensor(gguf_writer *w, const struct tspec *t, int swap, uint64_t seed,
                         void *chunk)
{
    gguf_error err;
    uint64_t s = stream_state(seed, t->name);
    const uint64_t s0 = s;
    uint64_t count = t->ne[0] * t->ne[1], done = 0;
    int two = t->type == GGUF_T_F16 || t->type == GGUF_T_BF16;
    size_t esize = two ? 2 : 4;
    size_t per = CHUNK_BYTES / esize; /* a multiple of 4 */
    while (count > 0) {
        size_t n = count < per ? (size_t)count : per;
        if (two) {
            weights_at(chunk, 1, s0, done, n);
        } else if (t->kind == K_WEIGHT || t->kind == K_BIAS) {
            /* BIAS_STD == WEIGHT_STD: biases share the weights' values. */
            weights_at(chunk, 0, s0, done, n);
            if (swap) {
                uint32_t *o = chunk;
                for (size_t i = 0; i < n; i++) o[i] = __builtin_bswap32(o[i]);
            }
        } else {
            uint32_t *o = chunk;
            uint64_t r = 0;
            for (size_t i = 0; i < n; i++) {
                if (i % 4 == 0) r = next64(&s);
                uint32_t b = f32_bits(1.0f + NORM_STD * z_table[r & 0xffff]);
                r >>= 16;
                o[i] = swap ? __builtin_bswap32(b) : b;
            }
        }
        if (gguf_writer_write(w, chunk, n * esize, &err)) die_writer(&err, 1);
        count -= n;
        done += n;
    }
}

/* Floats per batch of rows in write_quantized(). */
#define BATCH_FLOATS ((size_t)1 << 22)

/* Streams the data of weight tensor t in its (quantized) type: the values
 * of the F32 file, through gguf_quantize_rows() on nthreads threads (0:
 * all cores), a batch of rows at a time. */
static void write_quantized(gguf_writer *w, const struct tspec *t, uint64_t seed, int nthreads)
{
    gguf_error err;
    uint64_t s0 = stream_state(seed, t->name);
    uint64_t ne0 = t->ne[0], nrows = t->ne[1];
    uint64_t row_bytes = gguf_row_bytes(t->type, ne0);
    uint64_t batch = BATCH_FLOATS / ne0 ? BATCH_FLOATS / ne0 : 1;
    if (batch > nrows) batch = nrows;
    float *f = xmalloc(sizeof *f * (size_t)(batch * ne0));
    void *q = xmalloc((size_t)(batch * row_bytes));
    for (uint64_t row = 0; row < nrows; row += batch) {
        uint64_t rows = nrows - row < batch ? nrows - row : batch;
        weights_at(f, 0, s0, row * ne0, (size_t)(rows * ne0));
        int rc = gguf_quantize_rows(t->type, f, q, (int64_t)rows, (int64_t)ne0, nthreads);
        if (rc != GGUF_OK) {
            fprintf(stderr, PROG ": %s: tensor '%s': quantizing to %s failed: %s\n", g_out,
                    t->name, gguf_type_str(t->type), gguf_strerror(rc));
            g_writer = NULL;
            gguf_writer_free(w); /* removes the temporary output */
            exit(EXIT_TROUBLE);
        }
        if (gguf_writer_write(w, q, (size_t)(rows * row_bytes), &err)) die_writer(&err, 1);
    }
    free(f);
    free(q);
}

static void usage(int status)
{
    FILE *f = status ? stderr : stdout;
    if (status) {
        fprintf(f, "Try '" PROG " --help' for more information.\n");
        exit(status);
    }
    fprintf(f,
"Usage: " PROG " [OPTION]... -o FILE\n"
"  or:  " PROG " [OPTION]... --plan\n"
"Write a Qwen2- or Qwen3-architecture GGUF model with deterministic\n"
"pseudo-random weights, for tests and benchmarks.  The same options give the\n"
"same bytes.\n"
"\n"
"  -a, --arch=ARCH      qwen2 (Qwen2.5, the default) or qwen3 (dense Qwen3)\n"
"  -s, --size=SIZE      model shape (default tiny); qwen2:\n"
"                         tiny   2 layers, width 64, 4 heads (2 KV), FFN 128,\n"
"                                vocabulary 1024 (256 byte tokens, 765 merges,\n"
"                                <|endoftext|> <|im_start|> <|im_end|>)\n"
"                         small  as tiny with width 256 and FFN 512: every row\n"
"                                length is a multiple of 256, so K-quants apply\n"
"                                to every 2-D tensor\n"
"                         medium as small with width 512, 8 heads, FFN 1024\n"
"                                and a vocabulary of 4096: tensors of several\n"
"                                MiB (4 MiB of F16 token_embd)\n"
"                         0.5b   24 layers, width 896, 14 heads (2 KV), FFN 4864\n"
"                         1.5b   28 layers, width 1536, 12 heads (2 KV), FFN 8960\n"
"                         7b     28 layers, width 3584, 28 heads (4 KV), FFN\n"
"                                18944, vocabulary 152064 (Qwen2.5-7B's; with\n"
"                                --untied as the real one, 15 GiB in F16)\n"
"                       qwen3 (heads of their own width: Q is heads x head\n"
"                       width wide, wider than the model):\n"
"                         tiny   2 layers, width 64, 4 heads (2 KV) of 32 (Q\n"
"                                128 wide), FFN 128, vocabulary 1024 (256 byte\n"
"                                tokens, 763 merges, <|endoftext|> <|im_start|>\n"
"                                <|im_end|> <think> </think>)\n"
"                         small  as tiny with width 256, heads of 128 (Q 512\n"
"                                wide) and FFN 512: rows for K-quants\n"
"                         0.6b   28 layers, width 1024, 16 heads (8 KV) of 128\n"
"                                (Q 2048 wide), FFN 3072\n"
"                         1.7b   28 layers, width 2048, 16 heads (8 KV) of 128,\n"
"                                FFN 6144\n"
"                       0.5b, 1.5b, 7b, 0.6b and 1.7b have the real\n"
"                       vocabulary layout: 151936 tokens (7b: 152064),\n"
"                       151643 regular (256 byte tokens, 151387 merges),\n"
"                       the special tokens from\n"
"                       <|endoftext|> = 151643 (22 of Qwen2.5; Qwen3 adds\n"
"                       <tool_response> </tool_response> <think> = 151667\n"
"                       </think> = 151668), then [PAD...] tokens to the end\n"
"  -t, --type=TYPE      type of the 2-D weights (default f16); norms and\n"
"                       biases are always F32:\n"
"                         f32, f16, bf16\n"
"                         any type libgguf can quantize (q8_0, q4_0, q5_0,\n"
"                           q4_k, q5_k, q6_k ...): the values of the f32\n"
"                           model, quantized; rows that do not fit the type's\n"
"                           blocks fall back as in llama-quantize (Q4_K to\n"
"                           Q5_0, Q5_K to Q5_1, Q6_K to Q8_0)\n"
"                         q3_k_s, q3_k_m, q3_k_l, q4_k_s, q4_k_m, q5_k_s,\n"
"                         q5_k_m: llama-quantize's\n"
"                           mixtures of that name (without importance matrix),\n"
"                           e.g. q4_k_m: Q6_K for the output matrix (token_embd\n"
"                           when tied) and for attn_v and ffn_down on the first\n"
"                           and last eighth of the layers and every third\n"
"                           between, Q4_K elsewhere, with the same fallbacks\n"
"                       Quantized files get general.quantization_version = 2\n"
"                       and the general.file_type llama.cpp uses (15 for\n"
"                       q4_k_m, 7 for q8_0, 14 (Q4_K_S) for q4_k ...)\n"
"      --untied         write an output.weight of its own (by default the\n"
"                       embeddings are tied: no output.weight)\n"
"  -j, --threads=N      threads for making and quantizing weights (default:\n"
"                       all cores); the output does not depend on it\n"
"      --plan           print the type, dims and bytes of each tensor and the\n"
"                       file size, write nothing\n"
"      --seed=N         seed of weights and merges (default 0); each tensor's\n"
"                       values depend only on the seed and its name\n"
"      --gguf-version=N GGUF format version of the file: 1, 2 or 3 (default 3)\n"
"      --big-endian     write a big-endian file (header and tensor data; f32,\n"
"                       f16 and bf16 only)\n"
"  -o, --output=FILE    output file; '-' for standard output (not a terminal).\n"
"                       A file is written under a temporary name and renamed\n"
"                       when complete\n"
"  -h, --help           show this help and exit\n"
"  -V, --version        show the version and exit\n"
"\n"
"Weights are N(0, 0.02) (a 65536-level discretized normal), norm weights\n"
"N(1, 0.05), biases N(0, 0.02); F16 and BF16 are rounded to nearest even.\n"
"Metadata follows llama.cpp's qwen2 and qwen3 files: general.*, ARCH.*\n"
"hyperparameters (rope base 1e6, RMS epsilon 1e-6; context 32768 for qwen2,\n"
"40960 for qwen3, which also has attention.key_length and value_length),\n"
"tokenizer.ggml.* (gpt2 model, qwen2 pre-tokenizer, tokens, token types,\n"
"merges, BOS/EOS/padding ids) and a ChatML tokenizer.chat_template (for\n"
"qwen3 with the thinking block).\n"
"\n"
"Exit status: 0 on success, 2 on trouble (usage, I/O).\n");
    exit(0);
}

/* -V, --version: the program's version, as the installed tools print it
 * (tools/cli.c), then exit.  The GGUF format version of the output is
 * --gguf-version. */
static void print_version(void)
{
    printf(PROG " (" PACKAGE_NAME ") " PACKAGE_VERSION "\nlibgguf %s\n", gguf_version_string());
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, PROG ": write error: %s\n", strerror(errno));
        exit(EXIT_TROUBLE);
    }
    exit(0);
}

/* The shape of architecture `arch` named `size` (NULL: the
 * architecture's first, tiny); exits with a usage message when it has no
 * such shape. */
static const struct shape *find_shape(enum arch arch, const char *size)
{
    char names[128] = "";
    size_t n = 0, k = 0, count = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        if (shapes[i].arch != arch) continue;
        if (!size || strcmp(size, shapes[i].name) == 0) return &shapes[i];
        count++;
    }
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        if (shapes[i].arch != arch) continue;
        k++;
        n += (size_t)snprintf(names + n, sizeof names - n, "%s%s",
                              k == 1 ? "" : k == count ? " or " : ", ", shapes[i].name);
    }
    fprintf(stderr, PROG ": unknown size '%s' for %s (%s)\n", size, arch_names[arch], names);
    usage(EXIT_TROUBLE);
    return NULL;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!*s || *s == '-') return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

/* Fills *wt from a --type argument.  Returns 0; -1 when the name is not a
 * type or mixture; -2 for a type libgguf cannot quantize; -3 for a type that
 * no llama.cpp file type is named after (Q8_K, the type of activations). */
static int parse_type(const char *arg, struct wtype *wt)
{
    size_t n = strlen(arg);
    if (n >= sizeof wt->name) return -1;
    memset(wt, 0, sizeof *wt);
    for (size_t i = 0; i <= n; i++)
        wt->name[i] = (char)(arg[i] >= 'A' && arg[i] <= 'Z' ? arg[i] - 'A' + 'a' : arg[i]);
    for (size_t i = 0; i < sizeof mixture_names / sizeof mixture_names[0]; i++)
        if (strcmp(wt->name, mixture_names[i]) == 0) {
            wt->mix = preset_find(wt->name);
            wt->ggml_type = wt->mix->base;
            wt->file_type = (uint32_t)wt->mix->file_type;
            wt->quantized = 1;
            return 0;
        }
    uint32_t type;
    if (gguf_type_parse(wt->name, &type) != GGUF_OK) return -1;
    if (type != GGUF_T_F32 && type != GGUF_T_F16 && type != GGUF_T_BF16) {
        if (!gguf_can_quantize(type)) return -2;
        wt->quantized = 1;
    }
    wt->ggml_type = type;
    for (size_t i = 0; i < sizeof single_file_types / sizeof single_file_types[0]; i++)
        if (single_file_types[i].type == type) {
            wt->file_type = single_file_types[i].file_type;
            return 0;
        }
    return -3;
}

/* Prints the tensor plan and the file size for --plan. */
static void print_plan(const struct tspec *ts, size_t nt, uint64_t file_size)
{
    for (size_t i = 0; i < nt; i++) {
        const struct tspec *t = &ts[i];
        char dims[48];
        if (t->n_dims == 1)
            snprintf(dims, sizeof dims, "%" PRIu64, t->ne[0]);
        else
            snprintf(dims, sizeof dims, "%" PRIu64 "x%" PRIu64, t->ne[0], t->ne[1]);
        printf("%-28s %-5s %-12s %10" PRIu64 "\n", t->name, gguf_type_str(t->type), dims,
               gguf_row_bytes(t->type, t->ne[0]) * t->ne[1]);
    }
    printf("file size %" PRIu64 "\n", file_size);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"arch", required_argument, NULL, 'a'},
        {"size", required_argument, NULL, 's'},
        {"type", required_argument, NULL, 't'},
        {"threads", required_argument, NULL, 'j'},
        {"plan", no_argument, NULL, 'P'},
        {"seed", required_argument, NULL, 'S'},
        {"gguf-version", required_argument, NULL, 'v'},
        {"big-endian", no_argument, NULL, 'B'},
        {"untied", no_argument, NULL, 'U'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    enum arch arch = ARCH_QWEN2;
    const char *size = NULL;
    struct wtype wt;
    parse_type("f16", &wt);
    uint64_t seed = 0, version = 3, threads = 0;
    int big = 0, plan = 0, untied = 0;
    const char *out = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "a:s:t:j:o:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            if (strcmp(optarg, "qwen2") == 0) arch = ARCH_QWEN2;
            else if (strcmp(optarg, "qwen3") == 0) arch = ARCH_QWEN3;
            else {
                fprintf(stderr, PROG ": unknown architecture '%s' (qwen2 or qwen3)\n", optarg);
                usage(EXIT_TROUBLE);
            }
            break;
        case 's': size = optarg; break;
        case 't':
            switch (parse_type(optarg, &wt)) {
            case 0: break;
            case -2:
                fprintf(stderr, PROG ": libgguf cannot quantize to type '%s'\n", optarg);
                usage(EXIT_TROUBLE);
                break;
            case -3:
                fprintf(stderr, PROG ": type '%s' is not used for model weights (no llama.cpp "
                        "file type is named after it)\n", optarg);
                usage(EXIT_TROUBLE);
                break;
            default:
                fprintf(stderr,
                        PROG ": unknown type '%s' (f32, f16, bf16, a type libgguf can "
                        "quantize such as q8_0 or q4_k, or q4_k_m, q4_k_s, q5_k_m, q5_k_s)\n",
                        optarg);
                usage(EXIT_TROUBLE);
            }
            break;
        case 'j':
            if (parse_u64(optarg, &threads) || threads < 1 || threads > 4096) {
                fprintf(stderr, PROG ": invalid thread count '%s' (1 to 4096)\n", optarg);
                usage(EXIT_TROUBLE);
            }
            break;
        case 'P': plan = 1; break;
        case 'S':
            if (parse_u64(optarg, &seed)) {
                fprintf(stderr, PROG ": invalid seed '%s'\n", optarg);
                usage(EXIT_TROUBLE);
            }
            break;
        case 'v':
            if (parse_u64(optarg, &version) || version < 1 || version > 3) {
                fprintf(stderr, PROG ": invalid GGUF version '%s' (1, 2 or 3)\n", optarg);
                usage(EXIT_TROUBLE);
            }
            break;
        case 'B': big = 1; break;
        case 'U': untied = 1; break;
        case 'o': out = optarg; break;
        case 'h': usage(0); break;
        case 'V': print_version(); break;
        default: usage(EXIT_TROUBLE);
        }
    }
    if (optind < argc) {
        fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
        usage(EXIT_TROUBLE);
    }
    if (!out && !plan) {
        fprintf(stderr, PROG ": no output file (-o FILE)\n");
        usage(EXIT_TROUBLE);
    }
    if (big && wt.quantized) {
        fprintf(stderr, PROG ": --big-endian works with f32, f16 and bf16 only\n");
        usage(EXIT_TROUBLE);
    }
    const struct shape *sh = find_shape(arch, size);
    int to_stdout = out && strcmp(out, "-") == 0;
    g_out = to_stdout ? "(stdout)" : out;
    if (!plan && to_stdout && isatty(STDOUT_FILENO)) {
        fprintf(stderr, PROG ": (stdout): refusing to write binary data to a terminal\n");
        return EXIT_TROUBLE;
    }
#ifdef _OPENMP
    if (threads) omp_set_num_threads((int)threads);
#endif

    int order = big ? GGUF_BIG_ENDIAN : GGUF_LITTLE_ENDIAN;
    int swap = big != host_big_endian();
    init_tables(wt.ggml_type, swap);

    struct tspec *ts;
    size_t nt = list_tensors(sh, untied, &ts);
    plan_types(&wt, ts, nt, sh, !plan);
    struct vocab v;
    build_vocab(&v, sh, seed);

    gguf_error err;
    gguf_writer *w = gguf_writer_new();
    if (!w) {
        fprintf(stderr, PROG ": out of memory\n");
        return EXIT_TROUBLE;
    }
    g_writer = w;
    char name[128];
    const char *an = arch_names[sh->arch];
    snprintf(name, sizeof name, "%s %s synthetic (seed %" PRIu64 ")",
             sh->arch == ARCH_QWEN3 ? "Qwen3" : "Qwen2.5", sh->label, seed);
    uint32_t bos = v.bos, eos = v.eos;
    char key[96];
#define OK(call) do { if (call) die_writer(&err, 0); } while (0)
#define HP(k) (snprintf(key, sizeof key, "%s." k, an), key)
    OK(gguf_writer_set_version(w, (uint32_t)version, &err));
    OK(gguf_writer_set_byte_order(w, order, &err));
    OK(gguf_writer_add_str(w, "general.architecture", an, strlen(an), &err));
    OK(gguf_writer_add_str(w, "general.type", "model", 5, &err));
    OK(gguf_writer_add_str(w, "general.name", name, strlen(name), &err));
    OK(gguf_writer_add_u32(w, HP("block_count"), sh->n_layer, &err));
    OK(gguf_writer_add_u32(w, HP("context_length"), sh->n_ctx, &err));
    OK(gguf_writer_add_u32(w, HP("embedding_length"), sh->n_embd, &err));
    OK(gguf_writer_add_u32(w, HP("feed_forward_length"), sh->n_ff, &err));
    OK(gguf_writer_add_u32(w, HP("attention.head_count"), sh->n_head, &err));
    OK(gguf_writer_add_u32(w, HP("attention.head_count_kv"), sh->n_head_kv, &err));
    if (sh->arch == ARCH_QWEN3) {
        /* The head width: Qwen3's own, not width / heads. */
        OK(gguf_writer_add_u32(w, HP("attention.key_length"), head_dim(sh), &err));
        OK(gguf_writer_add_u32(w, HP("attention.value_length"), head_dim(sh), &err));
    }
    OK(gguf_writer_add_f32(w, HP("rope.freq_base"), 1000000.0f, &err));
    OK(gguf_writer_add_f32(w, HP("attention.layer_norm_rms_epsilon"), 1e-6f, &err));
    if (!wt.quantized) OK(gguf_writer_add_u32(w, "general.file_type", wt.file_type, &err));
    OK(gguf_writer_add_str(w, "tokenizer.ggml.model", "gpt2", 4, &err));
    OK(gguf_writer_add_str(w, "tokenizer.ggml.pre", "qwen2", 5, &err));
    OK(gguf_writer_add_str_array(w, "tokenizer.ggml.tokens", v.tokens, v.n, &err));
    OK(gguf_writer_add_array(w, "tokenizer.ggml.token_type", GGUF_VT_INT32, v.types, v.n, &err));
    OK(gguf_writer_add_str_array(w, "tokenizer.ggml.merges", v.merges, v.n_merges, &err));
    OK(gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", eos, &err));
    OK(gguf_writer_add_u32(w, "tokenizer.ggml.padding_token_id", bos, &err));
    OK(gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", bos, &err));
    OK(gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", 0, &err));
    if (sh->arch == ARCH_QWEN3)
        OK(gguf_writer_add_str(w, "tokenizer.chat_template", chat_template_qwen3,
                               sizeof chat_template_qwen3 - 1, &err));
    else
        OK(gguf_writer_add_str(w, "tokenizer.chat_template", chat_template,
                               sizeof chat_template - 1, &err));
    if (wt.quantized) {
        /* Where llama-quantize puts them: it appends both to the pairs it
         * copies. */
        OK(gguf_writer_add_u32(w, "general.quantization_version", QUANTIZATION_VERSION, &err));
        OK(gguf_writer_add_u32(w, "general.file_type", wt.file_type, &err));
    }
    for (size_t i = 0; i < nt; i++)
        OK(gguf_writer_add_tensor(w, ts[i].name, ts[i].type, ts[i].n_dims, ts[i].ne, &err));
#undef HP
#undef OK
    /* The header holds its own copies: the vocabulary can go. */
    free(v.tokens);
    free(v.types);
    free(v.merges);
    free(v.arena);

    if (plan) {
        print_plan(ts, nt, gguf_writer_total_size(w));
        g_writer = NULL;
        gguf_writer_free(w);
        free(ts);
        if (fflush(stdout) || ferror(stdout)) {
            fprintf(stderr, PROG ": (stdout): write error: %s\n", strerror(errno));
            return EXIT_TROUBLE;
        }
        return 0;
    }

    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    void *chunk = xmalloc(CHUNK_BYTES);
    if (gguf_writer_open(w, out, &err)) die_writer(&err, 1);
    for (size_t i = 0; i < nt; i++) {
        if (wt.quantized && ts[i].kind == K_WEIGHT)
            write_quantized(w, &ts[i], seed, (int)threads);
        else
            write_tensor(w, &ts[i], swap, seed, chunk);
    }
    if (gguf_writer_finish(w, &err)) die_writer(&err, 1);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    g_writer = NULL;
    gguf_writer_free(w);
    free(chunk);
    free(ts);
    return 0;
}
