/*
 * forward.c -- the CPU forward pass.
 *
 * Matrix products keep the weights quantized: the input vectors are
 * quantized once per product into the 8-bit activation type the weight
 * type pairs with, and gguf_matmul() takes integer dot products per block
 * (<gguf/quant.h>).  Weights without such products (F32, F16, BF16), and
 * every matrix in plain mode (qwen_state_set_plain), are dequantized one
 * row at a time and multiplied in float: the reference the quantized path
 * is tested against.
 *
 * Threads (OpenMP): each product splits the rows of its matrices among the
 * threads, attention splits its (token, head) pairs, the feed-forward its
 * elements; the rest is cheap and runs on one thread.
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

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

#include "infer/forward.h"
#include "quant/quant.h"

/* The activation types of the quantized products; index of each. */
enum { ACT_Q8_K, ACT_Q8_0, ACT_Q8_1, N_ACT };

static int act_index(uint32_t act_type)
{
    switch (act_type) {
    case GGUF_T_Q8_K: return ACT_Q8_K;
    case GGUF_T_Q8_0: return ACT_Q8_0;
    case GGUF_T_Q8_1: return ACT_Q8_1;
    default: return -1;
    }
}

/* The F16 dot product and multiply-add of attention: the vector kernels
 * where the CPU has them. */
typedef float (*dot_f16_fn)(const float *q, const uint16_t *k, uint32_t n);
typedef void (*axpy_f16_fn)(float *o, float a, const uint16_t *v, uint32_t n);
typedef float (*dot_f32_fn)(const float *a, const float *b, uint64_t n);

struct qwen_state {
    const qwen_model *m;
    uint32_t n_ctx, n_batch;
    uint32_t pos;           /* tokens in the cache */
    float *x;               /* (n_embd, n_batch) the residual stream */
    float *xb;              /* (n_embd, n_batch) normed input of a sublayer */
    float *q;               /* (n_q, n_batch) queries */
    float *k;               /* (n_kv, n_batch) keys */
    float *v;               /* (n_kv, n_batch) values */
    float *ao;              /* (n_q, n_batch) attention output, before projection */
    float *gate;            /* (n_ff, n_batch) */
    float *up;              /* (n_ff, n_batch) */
    float *rope;            /* (head_dim, n_batch) cos, sin of each pair's angle */
    float *att;             /* (n_ctx, n_threads) attention weights, per thread */
    float *rows;            /* (widest input, n_threads) a dequantized weight row, per thread */
    float *logits;          /* (n_vocab) */
    void *act[N_ACT];       /* (act_size(widest input), n_batch) a product's quantized
                             * input, per activation type the model's matrices use */
    uint32_t act_wtype[N_ACT]; /* a weight type of each activation type, for sizes */
    int plain;              /* 1: every product in float over dequantized rows */
    int n_threads;
    dot_f16_fn dot_f16;
    axpy_f16_fn axpy_f16;
    dot_f32_fn dot_f32;     /* the float products of plain mode */
    uint16_t *k_cache;      /* (n_kv, n_ctx, n_layer) F16 */
    uint16_t *v_cache;      /* (n_kv, n_ctx, n_layer) F16 */
};

/* The widest input of a product: max(n_embd, n_q, n_ff). */
static uint64_t widest_input(const qwen_config *c)
{
    uint64_t w = c->n_embd > c->n_ff ? c->n_embd : c->n_ff;
    return w > c->n_q ? w : c->n_q;
}

/* calloc of n * size bytes, NULL when the product overflows. */
static void *alloc_array(uint64_t n, size_t size)
{
    if (n > SIZE_MAX / size) return NULL;
    return calloc(n ? (size_t)n : 1, size);
}

/* ------------------------------------------------------------------------ */
/* Attention kernels                                                         */

#ifdef HAVE_X86
/* 1 when the vector kernels below may run: the SIMD level in use
 * (GGUF_SIMD) is AVX2 or above, which libgguf's one CPU probe grants only
 * where the CPU has AVX2, FMA and F16C. */
static int use_avx2(void)
{
    return gguf_simd_get() >= GGUF_SIMD_AVX2;
}
#endif

static float dot_f32_scalar(const float *a, const float *b, uint64_t n)
{
    float sum = 0.0f;
    for (uint64_t i = 0; i < n; i++) sum += a[i] * b[i];
    return sum;
}

static float dot_f16_scalar(const float *q, const uint16_t *k, uint32_t n)
{
    float sum = 0.0f;
    for (uint32_t i = 0; i < n; i++) sum += q[i] * gguf_fp16_to_fp32(k[i]);
    return sum;
}

static void axpy_f16_scalar(float *o, float a, const uint16_t *v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) o[i] += a * gguf_fp16_to_fp32(v[i]);
}

#ifdef HAVE_X86
/* The same with F16C and FMA, 8 elements at a time (n a multiple of 8). */
__attribute__((target("avx2,fma,f16c"))) static float dot_f16_avx2(const float *q, const uint16_t *k,
                                                                   uint32_t n)
{
    __m256 acc = _mm256_setzero_ps();
    for (uint32_t i = 0; i < n; i += 8) {
        const __m256 kv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i)));
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), kv, acc);
    }
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

/* dot_f32_scalar() in 8 float lanes (two sums of 8), the rest one by
 * one. */
__attribute__((target("avx2,fma"))) static float dot_f32_avx2(const float *a, const float *b,
                                                              uint64_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    uint64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    const __m256 t = _mm256_add_ps(s0, s1);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h) + dot_f32_scalar(a + i, b + i, n - i);
}

__attribute__((target("avx2,fma,f16c"))) static void axpy_f16_avx2(float *o, float a,
                                                                  const uint16_t *v, uint32_t n)
{
    const __m256 av = _mm256_set1_ps(a);
    for (uint32_t i = 0; i < n; i += 8) {
        const __m256 vv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + i)));
        _mm256_storeu_ps(o + i, _mm256_fmadd_ps(av, vv, _mm256_loadu_ps(o + i)));
    }
}
#endif

/* ------------------------------------------------------------------------ */
/* Feed-forward kernel                                                       */

/* g[i] = silu(g[i]) * u[i] = g[i] / (1 + exp(-g[i])) * u[i], i < n. */
static void swiglu_scalar(float *g, const float *u, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

#ifdef HAVE_X86
/* exp(x) of 8 floats: x = k ln2 + r, |r| <= ln2 / 2 (ln2 in two parts, so
 * that r is exact), exp(r) by its Taylor polynomial to r^7 / 7! (relative
 * error below 2e-7 there), times 2^k through the exponent bits.  x is
 * clamped to [-87, 88], where neither 2^k nor the result leaves the normal
 * floats. */
__attribute__((target("avx2,fma"))) static inline __m256 exp8(__m256 x)
{
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
    const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693145752f), x);
    r = _mm256_fnmadd_ps(k, _mm256_set1_ps(1.42860677e-6f), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    const __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(k), 23);
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
}

/* swiglu_scalar() 8 at a time with exp8(), the rest of n one at a time. */
__attribute__((target("avx2,fma"))) static void swiglu_avx2(float *g, const float *u, uint64_t n)
{
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i);
        const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
        const __m256 silu = _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(silu, _mm256_loadu_ps(u + i)));
    }
    swiglu_scalar(g + i, u + i, n - i);
}
#endif

/* ------------------------------------------------------------------------ */
/* The state                                                                 */

static int max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* (Re)allocates the per-thread buffers for n threads. */
static int alloc_thread_buffers(qwen_state *s, int n)
{
    const qwen_config *c = &s->m->config;
    uint64_t row = widest_input(c);
    float *att = alloc_array((uint64_t)s->n_ctx * (uint64_t)n, sizeof(float));
    float *rows = alloc_array(row * (uint64_t)n, sizeof(float));
    if (!att || !rows) {
        free(att);
        free(rows);
        return GGUF_E_NOMEM;
    }
    free(s->att);
    free(s->rows);
    s->att = att;
    s->rows = rows;
    s->n_threads = n;
    return GGUF_OK;
}

/* Notes in s->act_wtype which activation types the model's matrices use
 * (GGUF_T_COUNT for none). */
static void find_act_types(qwen_state *s)
{
    const qwen_weights *w = &s->m->weights;
    for (int k = 0; k < N_ACT; k++) s->act_wtype[k] = GGUF_T_COUNT;
    const qwen_matrix *list[8];
    for (uint32_t l = 0; l <= s->m->config.n_layer; l++) {
        int n = 0;
        if (l < s->m->config.n_layer) {
            const qwen_layer *L = &w->layers[l];
            list[n++] = &L->wq, list[n++] = &L->wk, list[n++] = &L->wv, list[n++] = &L->wo;
            list[n++] = &L->w_gate, list[n++] = &L->w_up, list[n++] = &L->w_down;
        } else {
            list[n++] = &w->output;
        }
        for (int i = 0; i < n; i++) {
            int k = act_index(gguf_matmul_act_type(list[i]->type));
            if (k >= 0) s->act_wtype[k] = list[i]->type;
        }
    }
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
    uint64_t nb = n_batch, row = widest_input(c);
    uint64_t cache = (uint64_t)c->n_kv * n_ctx * c->n_layer;
    s->x = alloc_array(c->n_embd * nb, sizeof(float));
    s->xb = alloc_array(c->n_embd * nb, sizeof(float));
    s->q = alloc_array(c->n_q * nb, sizeof(float));
    s->k = alloc_array(c->n_kv * nb, sizeof(float));
    s->v = alloc_array(c->n_kv * nb, sizeof(float));
    s->ao = alloc_array(c->n_q * nb, sizeof(float));
    s->gate = alloc_array(c->n_ff * nb, sizeof(float));
    s->up = alloc_array(c->n_ff * nb, sizeof(float));
    s->rope = alloc_array(c->head_dim * nb, sizeof(float));
    s->logits = alloc_array(c->n_vocab, sizeof(float));
    s->k_cache = alloc_array(cache, sizeof(uint16_t));
    s->v_cache = alloc_array(cache, sizeof(uint16_t));
    int ok = s->x && s->xb && s->q && s->k && s->v && s->ao && s->gate && s->up && s->rope &&
             s->logits && s->k_cache && s->v_cache;
    find_act_types(s);
    for (int k = 0; k < N_ACT && ok; k++) {
        if (s->act_wtype[k] == GGUF_T_COUNT) continue;
        /* room for the widest input, rounded up to a multiple of 256 (of
         * every block size) */
        s->act[k] = alloc_array(nb, gguf_matmul_act_size(s->act_wtype[k], (int64_t)((row + 255) / 256 * 256)));
        ok = s->act[k] != NULL;
    }
    if (ok) ok = alloc_thread_buffers(s, max_threads()) == GGUF_OK;
    if (!ok) {
        qwen_state_free(s);
        return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX,
                         "%s: out of memory for a context of %" PRIu32 " tokens",
                         gguf_name(m->file), n_ctx);
    }
    s->dot_f16 = dot_f16_scalar;
    s->axpy_f16 = axpy_f16_scalar;
    s->dot_f32 = dot_f32_scalar;
#ifdef HAVE_X86
    if (use_avx2()) {
        if (c->head_dim % 8 == 0) {
            s->dot_f16 = dot_f16_avx2;
            s->axpy_f16 = axpy_f16_avx2;
        }
        s->dot_f32 = dot_f32_avx2;
    }
#endif
    *out = s;
    return GGUF_OK;
}

int qwen_state_set_threads(qwen_state *s, int n, gguf_error *err)
{
    if (!s || n < 1 || n > QWEN_MAX_THREADS)
        return qwen_fail(err, GGUF_E_INVALID, UINT64_MAX, "thread count %d out of range 1..%d", n,
                         QWEN_MAX_THREADS);
#ifndef _OPENMP
    n = 1;
#endif
    if (alloc_thread_buffers(s, n) != GGUF_OK)
        return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "out of memory for %d threads", n);
    return GGUF_OK;
}

int qwen_state_threads(const qwen_state *s)
{
    return s->n_threads;
}

void qwen_state_set_plain(qwen_state *s, int plain)
{
    s->plain = plain != 0;
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
    free(s->rows);
    free(s->logits);
    for (int k = 0; k < N_ACT; k++) free(s->act[k]);
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

/* Pieces of work per thread and product: enough to even out threads that
 * run at different speeds, few enough that each streams a long run of
 * contiguous weights (the hardware prefetchers restart at every jump). */
#define CHUNKS_PER_THREAD 4u

/* Most products in one matmul() call. */
#define MAX_PRODUCTS 3

/* One product of a matmul() call: out (w->rows, n) = w times the input. */
struct product {
    const qwen_matrix *w;
    float *out;
};

/* Rows r0 .. r1 of w times the n vectors of in, in float, each weight row
 * dequantized once into row. */
static void plain_rows(const qwen_state *s, const qwen_matrix *w, uint64_t r0, uint64_t r1,
                       const float *in, uint32_t n, float *out, float *row)
{
    for (uint64_t r = r0; r < r1; r++) {
        const unsigned char *src = (const unsigned char *)w->data + r * w->row_bytes;
        int st = gguf_dequantize_row(w->type, src, row, (int64_t)w->cols);
        assert(st == GGUF_OK); /* the type and width were checked at load */
        (void)st;
        for (uint32_t t = 0; t < n; t++)
            out[(uint64_t)t * w->rows + r] = s->dot_f32(row, in + (uint64_t)t * w->cols, w->cols);
    }
}

/* The np products p[] of the n vectors of `in` (all matrices of the same
 * width), on the state's threads: the input is quantized once per
 * activation type the matrices need, then each thread takes its share of
 * the rows of every matrix. */
static void matmul(qwen_state *s, const float *in, uint32_t n, const struct product *p, int np)
{
    assert(np >= 1 && np <= MAX_PRODUCTS);
    const uint64_t cols = p[0].w->cols;
    uint32_t need[N_ACT]; /* a weight type per activation type needed, else GGUF_T_COUNT */
    size_t stride[N_ACT] = {0};
    for (int k = 0; k < N_ACT; k++) need[k] = GGUF_T_COUNT;
    for (int i = 0; i < np && !s->plain; i++) {
        const int k = act_index(gguf_matmul_act_type(p[i].w->type));
        if (k < 0) continue;
        need[k] = p[i].w->type;
        stride[k] = gguf_matmul_act_size(p[i].w->type, (int64_t)cols);
    }
    /* Inputs are quantized in pieces of QUANT_CHUNK elements (blocks are
     * independent), so that a single vector is shared among threads too. */
    const uint64_t n_chunks = (cols + QUANT_CHUNK - 1) / QUANT_CHUNK;
#pragma omp parallel num_threads(s->n_threads)
    {
        for (int k = 0; k < N_ACT; k++) {
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
        /* Rows go out in chunks, first come first served, so that threads
         * slowed by others (or by the memory) still finish together; a
         * chunk is a multiple of 16 rows. */
        const int id = thread_id();
        uint64_t first[MAX_PRODUCTS + 1], chunk[MAX_PRODUCTS];
        first[0] = 0;
        for (int i = 0; i < np; i++) {
            const uint64_t rows = p[i].w->rows, pieces = CHUNKS_PER_THREAD * (uint64_t)team_size();
            chunk[i] = ((rows + pieces - 1) / pieces + 15) / 16 * 16;
            first[i + 1] = first[i] + (rows + chunk[i] - 1) / chunk[i];
        }
#pragma omp for schedule(dynamic, 1) nowait
        for (uint64_t ch = 0; ch < first[np]; ch++) {
            int i = 0;
            while (ch >= first[i + 1]) i++;
            const qwen_matrix *w = p[i].w;
            const uint64_t r0 = (ch - first[i]) * chunk[i];
            const uint64_t r1 = w->rows - r0 < chunk[i] ? w->rows : r0 + chunk[i];
            const int k = s->plain ? -1 : act_index(gguf_matmul_act_type(w->type));
            if (k < 0) {
                plain_rows(s, w, r0, r1, in, n, p[i].out, s->rows + (uint64_t)id * cols);
                continue;
            }
            int st = gguf_matmul(w->type, (const unsigned char *)w->data + r0 * w->row_bytes,
                                 w->row_bytes, (int64_t)(r1 - r0), (int64_t)cols, s->act[k],
                                 stride[k], n, p[i].out + r0, w->rows);
            assert(st == GGUF_OK);
            (void)st;
        }
    }
}

/* A single product. */
static void matmul1(qwen_state *s, float *out, const float *in, const qwen_matrix *w, uint32_t n)
{
    const struct product p = {w, out};
    matmul(s, in, n, &p, 1);
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
 * Query head h reads KV head h / (n_head / n_head_kv).  The (token, head)
 * pairs are shared among the threads. */
static void attention(qwen_state *s, uint32_t l, uint32_t n)
{
    const qwen_config *c = &s->m->config;
    const uint32_t hd = c->head_dim, group = c->n_head / c->n_head_kv;
    const float scale = 1.0f / sqrtf((float)hd);
    const uint16_t *kc = s->k_cache + (uint64_t)l * s->n_ctx * c->n_kv;
    const uint16_t *vc = s->v_cache + (uint64_t)l * s->n_ctx * c->n_kv;
    const int64_t pairs = (int64_t)n * c->n_head;
#pragma omp parallel for schedule(static, 1) num_threads(s->n_threads)
    for (int64_t th = 0; th < pairs; th++) {
        const uint32_t t = (uint32_t)(th / c->n_head), h = (uint32_t)(th % c->n_head);
        float *att = s->att + (uint64_t)thread_id() * s->n_ctx;
        const uint32_t len = s->pos + t + 1; /* causal: positions 0 .. pos + t */
        const float *q = s->q + (uint64_t)t * c->n_q + (uint64_t)h * hd;
        const uint64_t kvoff = (uint64_t)(h / group) * hd;
        for (uint32_t j = 0; j < len; j++)
            att[j] = s->dot_f16(q, kc + (uint64_t)j * c->n_kv + kvoff, hd) * scale;
        softmax(att, len);
        float *o = s->ao + (uint64_t)t * c->n_q + (uint64_t)h * hd;
        memset(o, 0, hd * sizeof *o);
        for (uint32_t j = 0; j < len; j++) s->axpy_f16(o, att[j], vc + (uint64_t)j * c->n_kv + kvoff, hd);
    }
}

/* ------------------------------------------------------------------------ */
/* The forward pass                                                          */

void qwen_silu_mul(float *g, const float *u, uint64_t n)
{
    static void (*kernel)(float *, const float *, uint64_t);
    if (!kernel) {
        void (*k)(float *, const float *, uint64_t) = swiglu_scalar;
#ifdef HAVE_X86
        if (use_avx2()) k = swiglu_avx2;
#endif
        __atomic_store_n(&kernel, k, __ATOMIC_RELAXED);
    }
    kernel(g, u, n);
}

/* gate (n) = silu(gate) * up, on the state's threads, in pieces of 256. */
static void swiglu(qwen_state *s, uint64_t n)
{
    const uint64_t pieces = (n + 255) / 256;
#pragma omp parallel for schedule(static) num_threads(s->n_threads)
    for (uint64_t i = 0; i < pieces; i++) {
        const uint64_t len = n - i * 256 < 256 ? n - i * 256 : 256;
        qwen_silu_mul(s->gate + i * 256, s->up + i * 256, len);
    }
}

/* One step: the n <= n_batch tokens at positions s->pos ...; checked by the
 * caller. */
static void forward_batch(qwen_state *s, const int32_t *tokens, uint32_t n)
{
    const qwen_config *c = &s->m->config;
    const qwen_weights *w = &s->m->weights;
    uint32_t e = c->n_embd, nq = c->n_q, kv = c->n_kv, ff = c->n_ff;

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
        const struct product qkv[3] = {{&L->wq, s->q}, {&L->wk, s->k}, {&L->wv, s->v}};
        matmul(s, s->xb, n, qkv, 3);
        uint16_t *kc = s->k_cache + (uint64_t)l * s->n_ctx * kv;
        uint16_t *vc = s->v_cache + (uint64_t)l * s->n_ctx * kv;
        for (uint32_t t = 0; t < n; t++) {
            float *q = s->q + (uint64_t)t * nq, *k = s->k + (uint64_t)t * kv, *v = s->v + (uint64_t)t * kv;
            if (L->bq) {
                for (uint32_t i = 0; i < nq; i++) q[i] += L->bq[i];
                for (uint32_t i = 0; i < kv; i++) {
                    k[i] += L->bk[i];
                    v[i] += L->bv[i];
                }
            }
            if (L->q_norm) {
                for (uint32_t h = 0; h < c->n_head; h++)
                    rmsnorm(q + (uint64_t)h * c->head_dim, q + (uint64_t)h * c->head_dim, L->q_norm,
                            c->head_dim, c->rms_eps);
                for (uint32_t h = 0; h < c->n_head_kv; h++)
                    rmsnorm(k + (uint64_t)h * c->head_dim, k + (uint64_t)h * c->head_dim, L->k_norm,
                            c->head_dim, c->rms_eps);
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
        matmul1(s, s->xb, s->ao, &L->wo, n);
        for (uint64_t i = 0; i < (uint64_t)n * e; i++) s->x[i] += s->xb[i];

        /* Feed-forward. */
        for (uint32_t t = 0; t < n; t++)
            rmsnorm(s->xb + (uint64_t)t * e, s->x + (uint64_t)t * e, L->ffn_norm, e, c->rms_eps);
        const struct product gate_up[2] = {{&L->w_gate, s->gate}, {&L->w_up, s->up}};
        matmul(s, s->xb, n, gate_up, 2);
        swiglu(s, (uint64_t)n * ff);
        matmul1(s, s->xb, s->gate, &L->w_down, n);
        for (uint64_t i = 0; i < (uint64_t)n * e; i++) s->x[i] += s->xb[i];
    }

    /* Logits of the last token only. */
    const float *last = s->x + (uint64_t)(n - 1) * e;
    rmsnorm(s->xb, last, w->output_norm, e, c->rms_eps);
    matmul1(s, s->logits, s->xb, &w->output, 1);
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
