/*
 * ops.c -- the building blocks of the CPU graphs (see cpu.h).
 *
 * Matrix products keep the weights quantized: the input vectors are
 * quantized once per product into the 8-bit activation type the weight
 * type pairs with, and gguf_matmul() takes integer dot products per block
 * (<gguf/quant.h>).  Weights without such products (F32, F16, BF16), and
 * every matrix in plain mode, are dequantized one row at a time and
 * multiplied in float: the reference the quantized path is tested
 * against.  The float kernels of attention and of the feed-forward are
 * libgguf's (gguf_vec_*), which choose their SIMD path.
 */
#include <config.h>

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "infer/cpu/cpu.h"
#include "quant/quant.h"

int cpu_act_index(uint32_t act_type)
{
    switch (act_type) {
    case GGUF_T_Q8_K: return CPU_ACT_Q8_K;
    case GGUF_T_Q8_0: return CPU_ACT_Q8_0;
    case GGUF_T_Q8_1: return CPU_ACT_Q8_1;
    default: return -1;
    }
}

/* The thread's number and the team's size inside a parallel region. */
static int thread_id(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static int team_size(void)
{
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

/* Elements per piece of a product's input quantized by one thread: a
 * multiple of every activation block size. */
#define QUANT_CHUNK 1024u

/* Rows go to threads in units of 16 (ROW_UNIT), the units of all the
 * products of a call in one sequence, each thread claiming a run of them
 * at a time (claim_units()) until none is left.
 *
 * One-vector products (decode) stream their weights from memory: a claim
 * takes 1 / GUIDE_DIV of what is left per thread, so that the runs are long
 * (the memory streams restart at every jump) and yet the threads finish
 * together, also when one starts late (the wake-up of a thread costs tens
 * of microseconds, a 1536 x 1536 Q4_K product about 25-50).  Against fixed
 * runs of a quarter of a thread's share, first come first served: 25 ->
 * 29-34 GB/s on 200 such products in turn, two threads.  A whole share's
 * worth of what is left (GUIDE_DIV 1) rather than half of it: half the
 * claims, and the products of the 1.5B's attention (1536 x 1536 and its
 * Q, K, V) 15-20 % faster when the machine reads 60 GB/s (two threads;
 * the 0.5B's 25 %, its feed-forward 9 %), the same at 34 GB/s and for
 * sixteen columns, timed call by call with the two alternated in one
 * process; a prefetch of each claim's first 12 KiB added nothing.
 * Prompts (products of PROMPT_COLS columns or more) are compute-bound:
 * runs of a fixed 1 / PROMPT_CHUNKS_PER_THREAD of a thread's share, so that
 * a thread that finishes first does not wait long for the other's last. */
#define ROW_UNIT 16u /* a multiple of the groups of interleaved rows (quant.h) */
#define GUIDE_DIV 1u
#define PROMPT_COLS 64u
#define PROMPT_CHUNKS_PER_THREAD 16u

/* Claims the next run of units below `total` from the shared counter
 * *next: at least `least`, else `left / div` (div 0: always `least`).
 * Returns 0 when nothing is left, else 1 with the run in [*u0, *u1). */
static int claim_units(uint64_t *next, uint64_t total, uint64_t least, uint64_t div, uint64_t *u0,
                       uint64_t *u1)
{
    uint64_t cur = __atomic_load_n(next, __ATOMIC_RELAXED), take;
    do {
        if (cur >= total) return 0;
        take = div ? (total - cur) / div : 0;
        if (take < least) take = least;
        if (take > total - cur) take = total - cur;
    } while (!__atomic_compare_exchange_n(next, &cur, cur + take, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    *u0 = cur;
    *u1 = cur + take;
    return 1;
}

/* Rows r0 .. r1 of w times the n vectors of in, in float, each weight row
 * dequantized once into row. */
static void plain_rows(const struct cpu_state *s, const qwen_matrix *w, uint64_t r0, uint64_t r1,
                       const float *in, uint32_t n, float *out, float *row)
{
    for (uint64_t r = r0; r < r1; r++) {
        const unsigned char *src = (const unsigned char *)w->data + r * w->row_bytes;
        int st = gguf_dequantize_row(w->type, src, row, (int64_t)w->cols);
        assert(st == GGUF_OK); /* the type and width were checked at load */
        (void)st;
        for (uint32_t t = 0; t < n; t++)
            out[(uint64_t)t * w->rows + r] = gguf_vec_dot_f32(row, in + (uint64_t)t * w->cols, (int64_t)w->cols);
    }
}

/* The np products p[] of the n vectors of `in` (all matrices of the same
 * width), on the state's threads: the input is quantized once per
 * activation type the matrices need, then each thread takes its share of
 * the rows of every matrix. */
void cpu_matmul(struct cpu_state *s, const float *in, uint32_t n, const struct cpu_product *p,
                int np)
{
    assert(np >= 1 && np <= CPU_MAX_PRODUCTS);
    const uint64_t cols = p[0].w->cols;
    uint32_t need[CPU_N_ACT]; /* a weight type per activation type needed, else GGUF_T_COUNT */
    size_t stride[CPU_N_ACT] = {0};
    for (int k = 0; k < CPU_N_ACT; k++) need[k] = GGUF_T_COUNT;
    for (int i = 0; i < np && !s->plain; i++) {
        const int k = cpu_act_index(gguf_matmul_act_type(p[i].w->type));
        if (k < 0) continue;
        need[k] = p[i].w->type;
        stride[k] = gguf_matmul_act_size(p[i].w->type, (int64_t)cols);
    }
    /* Products of many columns that take the same quantized input (Q4_K,
     * Q5_K and Q6_K: Q8_K; Q4_0, Q5_0 and Q8_0: Q8_0) share one packing
     * of it (quant.h), made once here rather than in every call of every
     * thread: that of the first such product's input. */
    int packed[CPU_MAX_PRODUCTS] = {0}, any_packed = 0, pack_k = -1;
    uint32_t pack_type = GGUF_T_COUNT;
    for (int i = 0; i < np && s->packed && !s->plain; i++) {
        /* repacked rows (below) have packed forms of their own */
        const int il = p[i].w->il && gguf_matmul_il_rows(p[i].w->type);
        const size_t bytes = (il ? gguf_matmul_pack_size_il : gguf_matmul_pack_size)(p[i].w->type, (int64_t)cols, n);
        const int k = cpu_act_index(gguf_matmul_act_type(p[i].w->type));
        if (bytes && bytes <= s->packed_cap && (pack_k < 0 || k == pack_k)) {
            packed[i] = any_packed = 1;
            pack_k = k;
            pack_type = p[i].w->type;
        }
    }
    const int64_t n_panels = ((int64_t)n + 15) / 16;
    /* Inputs are quantized in pieces of QUANT_CHUNK elements (blocks are
     * independent), so that a single vector is shared among threads too. */
    const uint64_t n_chunks = (cols + QUANT_CHUNK - 1) / QUANT_CHUNK;
    uint64_t next_unit = 0; /* claim_units()'s counter, shared */
#pragma omp parallel num_threads(s->n_threads)
    {
        for (int k = 0; k < CPU_N_ACT; k++) {
            if (need[k] == GGUF_T_COUNT) continue;
            unsigned char *act = s->act[k];
#pragma omp for schedule(static)
            for (uint64_t i = 0; i < n * n_chunks; i++) {
                const uint64_t t = i / n_chunks, c0 = i % n_chunks * QUANT_CHUNK;
                const uint64_t len = cols - c0 < QUANT_CHUNK ? cols - c0 : QUANT_CHUNK;
                int st = gguf_matmul_quantize(need[k], in + t * cols + c0,
                                              act + t * stride[k] +
                                                  gguf_matmul_act_size(need[k], (int64_t)c0),
                                              (int64_t)len);
                assert(st == GGUF_OK);
                (void)st;
            }
        }
        if (any_packed) {
#pragma omp for schedule(static)
            for (int64_t pn = 0; pn < n_panels; pn++) {
                int st = gguf_matmul_pack(pack_type, s->act[pack_k], stride[pack_k], (int64_t)cols, n,
                                          pn, pn + 1, s->packed);
                assert(st == GGUF_OK);
                (void)st;
            }
        }
        /* units first[i] .. first[i + 1] - 1 are the rows of product i */
        const int id = thread_id();
        uint64_t first[CPU_MAX_PRODUCTS + 1];
        first[0] = 0;
        for (int i = 0; i < np; i++) first[i + 1] = first[i] + (p[i].w->rows + ROW_UNIT - 1) / ROW_UNIT;
        const uint64_t threads = (uint64_t)team_size(), total = first[np];
        const uint64_t least = n >= PROMPT_COLS
                                   ? (total + PROMPT_CHUNKS_PER_THREAD * threads - 1) / (PROMPT_CHUNKS_PER_THREAD * threads)
                                   : 1;
        const uint64_t div = n >= PROMPT_COLS ? 0 : GUIDE_DIV * threads;
        uint64_t u0, u1;
        while (claim_units(&next_unit, total, least, div, &u0, &u1)) {
            for (int i = 0; i < np && u0 < u1; i++) {
                if (u0 >= first[i + 1]) continue;
                const uint64_t end = u1 < first[i + 1] ? u1 : first[i + 1];
                const qwen_matrix *w = p[i].w;
                const uint64_t r0 = (u0 - first[i]) * ROW_UNIT;
                const uint64_t r1 = (end - first[i]) * ROW_UNIT < w->rows ? (end - first[i]) * ROW_UNIT : w->rows;
                u0 = end;
                const int k = s->plain ? -1 : cpu_act_index(gguf_matmul_act_type(w->type));
                if (k < 0) {
                    plain_rows(s, w, r0, r1, in, n, p[i].out, s->rows + (uint64_t)id * cols);
                    continue;
                }
                /* repacked rows where the SIMD level still reads them (r0 is
                 * at a group of them: ROW_UNIT is a multiple of 16, and r1 a
                 * unit's end or the matrix's) */
                const int il = w->il && gguf_matmul_il_rows(w->type);
                const unsigned char *wr = (const unsigned char *)(il ? w->il : w->data) + r0 * w->row_bytes;
                int st = packed[i] ? (il ? gguf_matmul_packed_il : gguf_matmul_packed)(
                                         w->type, wr, w->row_bytes, (int64_t)(r1 - r0), (int64_t)cols,
                                         s->packed, n, p[i].out + r0, w->rows)
                                   : (il ? gguf_matmul_il : gguf_matmul)(
                                         w->type, wr, w->row_bytes, (int64_t)(r1 - r0), (int64_t)cols,
                                         s->act[k], stride[k], n, p[i].out + r0, w->rows);
                assert(st == GGUF_OK);
                (void)st;
            }
        }
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

/* Rows (tokens) from which the steps done row by row (norms, biases,
 * RoPE, the cache's stores, residual additions) are shared among the
 * threads: each row's bits are its own.  Below, one thread does them,
 * outside any parallel region (a region of one thread costs about 0.35
 * us, a few times a decode step's whole bias or RoPE step). */
#define ROWS_SHARED 16u

/* What the row steps take. */
struct row_args {
    const struct cpu_state *s;
    const qwen_layer *L; /* the layer (biases, Q/K norms) */
    const qwen_batch *b; /* the batch (the cache's stores) */
    uint32_t l;          /* the layer's number (the cache's stores) */
    float *dst;          /* (n_embd, n) the norms' output, the sum of an addition */
    const float *src;    /* (n_embd, n) the norms' input, the addend */
    const float *weight; /* (n_embd) the norm's weight */
};

/* fn(a, t) for t < n, on the state's threads from ROWS_SHARED rows: fn
 * writes row (token) t only. */
static void for_rows(const struct row_args *a, uint32_t n, void (*fn)(const struct row_args *, uint32_t))
{
    if (n < ROWS_SHARED) {
        for (uint32_t t = 0; t < n; t++) fn(a, t);
        return;
    }
#pragma omp parallel for schedule(static) num_threads(a->s->n_threads)
    for (uint32_t t = 0; t < n; t++) fn(a, t);
}

static void norm_row(const struct row_args *a, uint32_t t)
{
    const qwen_config *c = &a->s->m->config;
    rmsnorm(a->dst + (uint64_t)t * c->n_embd, a->src + (uint64_t)t * c->n_embd, a->weight, c->n_embd,
            c->rms_eps);
}

void cpu_rmsnorm_rows(const struct cpu_state *s, float *out, const float *x, const float *weight,
                      uint32_t n)
{
    const struct row_args a = {.s = s, .dst = out, .src = x, .weight = weight};
    for_rows(&a, n, norm_row);
}

void cpu_rope_angles(struct cpu_state *s, const qwen_batch *b)
{
    const qwen_config *c = &s->m->config;
    for (uint32_t t = 0; t < b->n; t++)
        qwen_rope_angles(s->rope + (uint64_t)t * c->head_dim, b->pos[t], c->head_dim, c->rope_base);
}

static void bias_row(const struct row_args *a, uint32_t t)
{
    const qwen_config *c = &a->s->m->config;
    const qwen_layer *L = a->L;
    float *q = a->s->q + (uint64_t)t * c->n_q, *k = a->s->k + (uint64_t)t * c->n_kv;
    float *v = a->s->v + (uint64_t)t * c->n_kv;
    for (uint32_t i = 0; i < c->n_q; i++) q[i] += L->bq[i];
    for (uint32_t i = 0; i < c->n_kv; i++) {
        k[i] += L->bk[i];
        v[i] += L->bv[i];
    }
}

void cpu_qkv_bias(struct cpu_state *s, const qwen_layer *L, uint32_t n)
{
    const struct row_args a = {.s = s, .L = L};
    for_rows(&a, n, bias_row);
}

static void qk_norm_row(const struct row_args *a, uint32_t t)
{
    const qwen_config *c = &a->s->m->config;
    const uint32_t hd = c->head_dim;
    float *q = a->s->q + (uint64_t)t * c->n_q, *k = a->s->k + (uint64_t)t * c->n_kv;
    for (uint32_t h = 0; h < c->n_head; h++)
        rmsnorm(q + (uint64_t)h * hd, q + (uint64_t)h * hd, a->L->q_norm, hd, c->rms_eps);
    for (uint32_t h = 0; h < c->n_head_kv; h++)
        rmsnorm(k + (uint64_t)h * hd, k + (uint64_t)h * hd, a->L->k_norm, hd, c->rms_eps);
}

void cpu_qk_norm(struct cpu_state *s, const qwen_layer *L, uint32_t n)
{
    const struct row_args a = {.s = s, .L = L};
    for_rows(&a, n, qk_norm_row);
}

static void rope_row(const struct row_args *a, uint32_t t)
{
    const qwen_config *c = &a->s->m->config;
    const float *cs = a->s->rope + (uint64_t)t * c->head_dim;
    rope_apply(a->s->q + (uint64_t)t * c->n_q, c->n_head, c->head_dim, cs);
    rope_apply(a->s->k + (uint64_t)t * c->n_kv, c->n_head_kv, c->head_dim, cs);
}

void cpu_rope_qk(struct cpu_state *s, uint32_t n)
{
    const struct row_args a = {.s = s};
    for_rows(&a, n, rope_row);
}

/* Each head's key and value rows as halves, by the SIMD level's F16
 * conversion (the bits of gguf_fp32_to_fp16(); element by element, on one
 * thread, the stores had taken 3 % of a 688-token prompt's time). */
static void store_row(const struct row_args *a, uint32_t t)
{
    const struct cpu_state *s = a->s;
    const qwen_config *c = &s->m->config;
    const qwen_batch *b = a->b;
    const float *k = s->k + (uint64_t)t * c->n_kv, *v = s->v + (uint64_t)t * c->n_kv;
    for (uint32_t h = 0; h < c->n_head_kv; h++) {
        const uint64_t at = cpu_cache_at(s, a->l, b->seq[t], h) + (uint64_t)b->pos[t] * c->head_dim;
        int st = gguf_quantize_row(GGUF_T_F16, k + (uint64_t)h * c->head_dim, s->k_cache + at, c->head_dim);
        if (st == GGUF_OK)
            st = gguf_quantize_row(GGUF_T_F16, v + (uint64_t)h * c->head_dim, s->v_cache + at, c->head_dim);
        assert(st == GGUF_OK);
        (void)st;
    }
}

void cpu_store_kv(struct cpu_state *s, uint32_t l, const qwen_batch *b)
{
    const struct row_args a = {.s = s, .b = b, .l = l};
    for_rows(&a, b->n, store_row);
}

/* For each entry t of b and query head h: the softmax-weighted sum of the
 * values of positions 0 .. pos[t] of seq[t], weighted by scaled query-key
 * dot products.  Query head h reads KV head h / (n_head / n_head_kv).  The
 * heads that share a KV head go together, so that each key and value row
 * is read and converted once for all of them (each head's sums have the
 * bits they have alone); the (token, KV head) pairs are shared among the
 * threads, or the (token, head) pairs where those are too few to go round. */
void cpu_attention(struct cpu_state *s, uint32_t l, const qwen_batch *b)
{
    const qwen_config *c = &s->m->config;
    const uint32_t hd = c->head_dim, group = c->n_head / c->n_head_kv;
    const float scale = 1.0f / sqrtf((float)hd);
    /* heads taken together: the group, or one at a time */
    const uint32_t together = (uint64_t)b->n * c->n_head_kv >= (uint64_t)s->n_threads ? group : 1;
    const int64_t items = (int64_t)b->n * (c->n_head / together);
#pragma omp parallel for schedule(static, 1) num_threads(s->n_threads)
    for (int64_t it = 0; it < items; it++) {
        const uint32_t t = (uint32_t)(it / (c->n_head / together));
        const uint32_t h0 = (uint32_t)(it % (c->n_head / together)) * together;
        const uint64_t at = cpu_cache_at(s, l, b->seq[t], h0 / group);
        const uint16_t *kc = s->k_cache + at, *vc = s->v_cache + at;
        float *att = s->att + (uint64_t)thread_id() * s->n_ctx * group;
        const uint32_t len = b->pos[t] + 1; /* causal: positions 0 .. pos */
        const float *q = s->q + (uint64_t)t * c->n_q + (uint64_t)h0 * hd;
        gguf_vec_dot_f16_rows_m(q, hd, together, kc, hd, len, hd, att, s->n_ctx);
        for (uint32_t h = 0; h < together; h++) gguf_vec_softmax(att + (uint64_t)h * s->n_ctx, len, scale);
        float *o = s->ao + (uint64_t)t * c->n_q + (uint64_t)h0 * hd;
        memset(o, 0, (uint64_t)together * hd * sizeof *o);
        gguf_vec_axpy_f16_rows_m(o, hd, att, s->n_ctx, together, vc, hd, len, hd);
    }
}

void cpu_swiglu(struct cpu_state *s, uint64_t n)
{
    const uint64_t pieces = (n + 255) / 256;
#pragma omp parallel for schedule(static) num_threads(s->n_threads)
    for (uint64_t i = 0; i < pieces; i++) {
        const uint64_t len = n - i * 256 < 256 ? n - i * 256 : 256;
        gguf_vec_silu_mul(s->gate + i * 256, s->up + i * 256, (int64_t)len);
    }
}

static void add_row(const struct row_args *a, uint32_t t)
{
    const uint64_t e = a->s->m->config.n_embd;
    float *x = a->dst + (uint64_t)t * e;
    const float *y = a->src + (uint64_t)t * e;
    for (uint64_t i = 0; i < e; i++) x[i] += y[i];
}

void cpu_add(const struct cpu_state *s, float *x, const float *y, uint32_t n)
{
    const struct row_args a = {.s = s, .dst = x, .src = y};
    for_rows(&a, n, add_row);
}
