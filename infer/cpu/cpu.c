/*
 * cpu.c -- the CPU backend: its state, buffers and key/value cache, all
 * allocated when it opens, and the entry points of backend.h.
 */
#include <config.h>

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "infer/backend.h"
#include "infer/cpu/cpu.h"
#include "quant/quant.h"

/* calloc of n * size bytes, added to *count; NULL when the product
 * overflows. */
static void *alloc_array(uint64_t n, size_t size, uint64_t *count)
{
    if (n > SIZE_MAX / size) return NULL;
    *count += n * size;
    return calloc(n ? (size_t)n : 1, size);
}

/* The per-thread buffers of n threads: the attention weights of a
 * position and the dequantized weight row of the plain products. */
static uint64_t thread_floats(const qwen_config *c, uint32_t n_ctx, int n, uint64_t *rows)
{
    *rows = qwen_widest_input(c) * (uint64_t)n;
    return (uint64_t)n_ctx * (c->n_head / c->n_head_kv) * (uint64_t)n;
}

/* (Re)allocates the per-thread buffers for n threads. */
static int alloc_thread_buffers(struct cpu_state *s, int n)
{
    uint64_t n_rows, bytes = 0;
    const uint64_t n_att = thread_floats(&s->m->config, s->n_ctx, n, &n_rows);
    float *att = alloc_array(n_att, sizeof(float), &bytes);
    float *rows = alloc_array(n_rows, sizeof(float), &bytes);
    if (!att || !rows) {
        free(att);
        free(rows);
        return GGUF_E_NOMEM;
    }
    free(s->att);
    free(s->rows);
    s->att = att;
    s->rows = rows;
    s->thread_bytes = bytes;
    s->n_threads = n;
    return GGUF_OK;
}

/* Notes in s->act_wtype which activation types the model's matrices use
 * (GGUF_T_COUNT for none). */
static void find_act_types(struct cpu_state *s)
{
    const qwen_weights *w = &s->m->weights;
    for (int k = 0; k < CPU_N_ACT; k++) s->act_wtype[k] = GGUF_T_COUNT;
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
            int k = cpu_act_index(gguf_matmul_act_type(list[i]->type));
            if (k >= 0) s->act_wtype[k] = list[i]->type;
        }
    }
}

/* The matrices of w the products read (the layers', the output), n at
 * most 7 * n_layer + 1, into list; returns n. */
static uint32_t product_matrices(qwen_weights *w, uint32_t n_layer, qwen_matrix **list)
{
    uint32_t n = 0;
    for (uint32_t l = 0; l < n_layer; l++) {
        qwen_layer *L = &w->layers[l];
        list[n++] = &L->wq, list[n++] = &L->wk, list[n++] = &L->wv, list[n++] = &L->wo;
        list[n++] = &L->w_gate, list[n++] = &L->w_up, list[n++] = &L->w_down;
    }
    list[n++] = &w->output;
    return n;
}

/* Whether the CPU backend repacks matrix type `type` of `rows` rows with
 * parameters p: where the SIMD level in use reads its rows faster
 * interleaved (quant.h), for the quantized products. */
static int repacks(uint32_t type, uint64_t rows, const qwen_params *p)
{
    return !p->no_repack && !p->plain && gguf_matmul_il_rows(type) && rows >= (uint64_t)gguf_matmul_il_rows(type);
}

/* madvise(advice) on the pages of data .. data + n - 1, a range of the
 * read-only file mapping: those it touches (outer), or only its whole
 * ones (MADV_DONTNEED: a neighbour's bytes stay mapped).  Advice only:
 * a refusal changes nothing but speed or resident size. */
static void advise_pages(const void *data, size_t n, int advice, int outer)
{
    const long ps = sysconf(_SC_PAGESIZE);
    if (ps <= 0) return;
    const uintptr_t p = (uintptr_t)ps, lo = (uintptr_t)data, hi = (uintptr_t)data + n;
    const uintptr_t a = outer ? lo / p * p : (lo + p - 1) / p * p;
    const uintptr_t b = outer ? (hi + p - 1) / p * p : hi / p * p;
    if (b > a) (void)madvise((void *)a, b - a, advice);
}

/* s->w: the model's weights, with a copy in the interleaved layout of each
 * matrix repacks() takes (made by the state's threads, a run of whole
 * groups of rows each), whose mapped pages are then dropped: products
 * read such rows as one stream, sixteen rows in the lanes of a vector
 * (about 1.7x the decode speed of Qwen2.5-Coder-1.5B Q4_K_M and of the
 * 0.5B on a Zen 4, see README), for the memory of the
 * copies (qwen_memory.repacked) in place of the mapping's.  The products
 * read the mapping still where the SIMD level changes later (ops.c).
 *
 * The copies lie one after the other in one allocation, in huge pages
 * where the kernel gives them on request: the small matrices too (Q, K,
 * V and the attention output of a layer, a few MiB together), which
 * malloc() alone would place in 4 KiB pages unless the kernel happens to
 * merge them into a neighbour's huge-page mapping.  Read in 4 KiB pages
 * (a page walk each, and the hardware prefetcher stops at their
 * boundaries), 28 matrices of 1536 x 1536 Q4_K went at 80-92 % of the
 * speed they had in huge pages on a Zen 4; and a 4 KiB page fault per
 * 4 KiB copied took most of the copying time. */
#define HUGE_PAGE ((uint64_t)2 << 20)
#define IL_ALIGN ((uint64_t)64) /* each copy's start: a cache line */

/* n rounded up to a multiple of a (no overflow: n is at most a file's
 * size, or checked first). */
static inline uint64_t round_up(uint64_t n, uint64_t a)
{
    return (n + a - 1) / a * a;
}
static int repack_weights(struct cpu_state *s, const qwen_params *p, int threads)
{
    const uint32_t n_layer = s->m->config.n_layer;
    s->w = s->m->weights;
    s->w.layers = malloc((n_layer ? n_layer : 1) * sizeof *s->w.layers);
    qwen_matrix **list = malloc(((uint64_t)7 * n_layer + 1) * sizeof *list);
    if (!s->w.layers || !list) {
        free(list);
        return GGUF_E_NOMEM;
    }
    memcpy(s->w.layers, s->m->weights.layers, n_layer * sizeof *s->w.layers);
    const uint32_t n = product_matrices(&s->w, n_layer, list);
    /* the arena: the copies' bytes, each rounded up to IL_ALIGN (the
     * matrices' sizes are bounded by the file's) */
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        if (repacks(list[i]->type, list[i]->rows, p))
            total += round_up(list[i]->rows * list[i]->row_bytes, IL_ALIGN);
    if (total == 0) {
        free(list);
        return GGUF_OK;
    }
    const uint64_t span = total <= SIZE_MAX - HUGE_PAGE ? round_up(total, HUGE_PAGE) : 0;
    unsigned char *arena = span ? aligned_alloc((size_t)HUGE_PAGE, (size_t)span) : NULL;
    if (!arena) {
        free(list);
        return GGUF_E_NOMEM;
    }
#ifdef MADV_HUGEPAGE
    (void)madvise(arena, (size_t)span, MADV_HUGEPAGE);
#endif
    s->il_mem = arena;
    uint64_t at = 0;
    for (uint32_t i = 0; i < n; i++) {
        qwen_matrix *m = list[i];
        if (!repacks(m->type, m->rows, p)) continue;
        const uint64_t group = (uint64_t)gguf_matmul_il_rows(m->type), bytes = m->rows * m->row_bytes;
        unsigned char *dst = arena + at;
        at += round_up(bytes, IL_ALIGN);
#ifdef MADV_POPULATE_READ
        /* the source's page table filled in one call, not fault by fault */
        advise_pages(m->data, (size_t)bytes, MADV_POPULATE_READ, 1);
#endif
        /* runs of 16 whole groups (both threads busy on the small
         * matrices too); the last takes the rows past them */
        const uint64_t runs = (m->rows / group + 15) / 16;
#pragma omp parallel for num_threads(threads) schedule(dynamic)
        for (uint64_t r = 0; r < runs; r++) {
            const uint64_t r0 = r * 16 * group, r1 = r + 1 == runs ? m->rows : r0 + 16 * group;
            int e = gguf_interleave_rows(m->type, (const unsigned char *)m->data + r0 * m->row_bytes,
                                         dst + r0 * m->row_bytes, (int64_t)(r1 - r0), (int64_t)m->cols);
            assert(e == GGUF_OK);
            (void)e;
        }
        advise_pages(m->data, (size_t)bytes, MADV_DONTNEED, 0);
        m->il = dst;
        s->il_bytes += bytes;
    }
    free(list);
    return GGUF_OK;
}

static void cpu_close(void *impl)
{
    struct cpu_state *s = impl;
    if (!s) return;
    free(s->il_mem);
    free(s->w.layers);
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
    for (int k = 0; k < CPU_N_ACT; k++) free(s->act[k]);
    free(s->packed);
    free(s->k_cache);
    free(s->v_cache);
    free(s);
}

static int cpu_open(void **impl, const qwen_model *m, const qwen_params *p, gguf_error *err)
{
    const qwen_config *c = &m->config;
    const char *name = gguf_name(m->file);
    cpu_layer_fn layer = cpu_graph_layer(c->arch);
    if (!layer)
        return qwen_fail(err, GGUF_E_UNSUPPORTED, UINT64_MAX,
                         "%s: the CPU backend has no graph for architecture %s", name,
                         c->arch->name);
    struct cpu_state *s = calloc(1, sizeof *s);
    if (!s) return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", name);
    s->m = m;
    s->layer = layer;
    s->n_ctx = p->n_ctx;
    s->n_seq = p->n_seq;
    s->n_batch = p->n_batch;
    s->plain = p->plain;
    /* Every factor is bounded by the QWEN_MAX_* limits, so no product below
     * overflows 64 bits; alloc_array refuses what size_t cannot hold. */
    uint64_t nb = p->n_batch, row = qwen_widest_input(c);
    uint64_t cache = (uint64_t)c->n_kv * p->n_ctx * p->n_seq * c->n_layer;
    uint64_t *cb = &s->compute_bytes;
    s->x = alloc_array(c->n_embd * nb, sizeof(float), cb);
    s->xb = alloc_array(c->n_embd * nb, sizeof(float), cb);
    s->q = alloc_array(c->n_q * nb, sizeof(float), cb);
    s->k = alloc_array(c->n_kv * nb, sizeof(float), cb);
    s->v = alloc_array(c->n_kv * nb, sizeof(float), cb);
    s->ao = alloc_array(c->n_q * nb, sizeof(float), cb);
    s->gate = alloc_array(c->n_ff * nb, sizeof(float), cb);
    s->up = alloc_array(c->n_ff * nb, sizeof(float), cb);
    s->rope = alloc_array(c->head_dim * nb, sizeof(float), cb);
    s->k_cache = alloc_array(cache, sizeof(uint16_t), &s->kv_bytes);
    s->v_cache = alloc_array(cache, sizeof(uint16_t), &s->kv_bytes);
    int ok = s->x && s->xb && s->q && s->k && s->v && s->ao && s->gate && s->up && s->rope &&
             s->k_cache && s->v_cache;
    find_act_types(s);
    for (int k = 0; k < CPU_N_ACT && ok; k++) {
        if (s->act_wtype[k] == GGUF_T_COUNT) continue;
        /* room for the widest input, rounded up to a multiple of 256 (of
         * every block size) */
        s->act[k] = alloc_array(nb, gguf_matmul_act_size(s->act_wtype[k],
                                                         (int64_t)((row + 255) / 256 * 256)),
                                cb);
        ok = s->act[k] != NULL;
    }
    /* The packed input of the products that have packed forms (K-quants:
     * about 4.8 KiB per 256 elements and 16 columns, 5.3 MiB for 512
     * tokens of Qwen2.5-1.5B's 8960-wide feed-forward input; Q4_0, Q5_0,
     * Q8_0: 4.5 KiB), at SIMD levels that have them: room for either. */
    if (ok) {
        const int64_t width = (int64_t)((row + 255) / 256 * 256);
        size_t need = 0;
        if (s->act_wtype[CPU_ACT_Q8_K] != GGUF_T_COUNT)
            need = gguf_matmul_pack_size(GGUF_T_Q4_K, width, (int64_t)nb);
        if (s->act_wtype[CPU_ACT_Q8_0] != GGUF_T_COUNT) {
            const size_t n32 = gguf_matmul_pack_size(GGUF_T_Q8_0, width, (int64_t)nb);
            if (n32 > need) need = n32;
        }
        if (need) {
            s->packed = aligned_alloc(64, (need + 63) / 64 * 64);
            s->packed_cap = need;
            *cb += (need + 63) / 64 * 64;
            ok = s->packed != NULL;
        }
    }
#ifdef _OPENMP
    int threads = p->n_threads ? p->n_threads : qwen_default_threads();
#else
    int threads = 1;
#endif
    if (ok) ok = alloc_thread_buffers(s, threads) == GGUF_OK;
    if (!ok) {
        cpu_close(s);
        return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX,
                         "%s: out of memory for %" PRIu32 " sequences of %" PRIu32 " tokens", name,
                         p->n_seq, p->n_ctx);
    }
    if (repack_weights(s, p, threads) != GGUF_OK) {
        cpu_close(s);
        return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX,
                         "%s: out of memory for the repacked weights (without repacking, the "
                         "mapped rows are multiplied as they are)", name);
    }
    *impl = s;
    return GGUF_OK;
}

static int cpu_decode(void *impl, const qwen_batch *b, float *logits, gguf_error *err)
{
    (void)err;
    cpu_decode_step(impl, b, logits);
    return GGUF_OK;
}

static int cpu_set_threads(void *impl, int n, gguf_error *err)
{
#ifndef _OPENMP
    n = 1;
#endif
    if (alloc_thread_buffers(impl, n) != GGUF_OK)
        return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "out of memory for %d threads", n);
    return GGUF_OK;
}

static int cpu_threads(const void *impl)
{
    return ((const struct cpu_state *)impl)->n_threads;
}

static void cpu_set_plain(void *impl, int plain)
{
    ((struct cpu_state *)impl)->plain = plain;
}

static void cpu_describe(const void *impl, char *buf, size_t cap)
{
    const struct cpu_state *s = impl;
    snprintf(buf, cap, "cpu: %d thread%s, SIMD %s%s", s->n_threads, s->n_threads == 1 ? "" : "s",
             gguf_simd_name(gguf_simd_get()), s->plain ? ", plain products" : "");
}

static void cpu_memory(const void *impl, qwen_memory *out)
{
    const struct cpu_state *s = impl;
    out->kv_cache = s->kv_bytes;
    out->compute = s->compute_bytes + s->thread_bytes;
    out->repacked = s->il_bytes;
    out->device = 0;
}

/* cpu_open's allocations, for a model whose matrices have the types
 * types[]: the same sizes, computed without allocating. */
static void cpu_estimate(const qwen_config *c, const uint32_t *types, const uint64_t *type_bytes,
                         size_t n_types, const qwen_params *p, qwen_memory *out)
{
    out->repacked = 0;
    for (size_t i = 0; i < n_types; i++)
        if (repacks(types[i], UINT64_MAX, p)) out->repacked += type_bytes[i];
    const uint64_t nb = p->n_batch, row = qwen_widest_input(c);
    const int64_t row256 = (int64_t)((row + 255) / 256 * 256);
    uint64_t f = 2 * c->n_embd + 2 * c->n_q + 2 * c->n_kv + 2 * c->n_ff + c->head_dim;
    uint64_t bytes = f * nb * sizeof(float);
    int seen[CPU_N_ACT] = {0}, q8k = 0;
    for (size_t i = 0; i < n_types; i++) {
        int k = cpu_act_index(gguf_matmul_act_type(types[i]));
        if (k < 0) continue;
        q8k |= k == CPU_ACT_Q8_K;
        if (seen[k]) continue;
        seen[k] = 1;
        bytes += nb * gguf_matmul_act_size(types[i], row256);
    }
    if (q8k) bytes += (gguf_matmul_pack_size(GGUF_T_Q4_K, row256, (int64_t)nb) + 63) / 64 * 64;
    uint64_t n_rows;
    bytes += (thread_floats(c, p->n_ctx, p->n_threads, &n_rows) + n_rows) * sizeof(float);
    out->compute = bytes;
    out->kv_cache = 2 * (uint64_t)c->n_kv * p->n_ctx * p->n_seq * c->n_layer * sizeof(uint16_t);
    out->device = 0;
}

/* Positions 0 .. n - 1 of sequence seq's keys and values from the cache
 * into get, or from set into the cache, as the saved state of a sequence
 * holds them (qwen_backend: per position, per layer, the K row then the V
 * row of all KV heads). */
static void seq_rows(struct cpu_state *s, int32_t seq, uint32_t n, unsigned char *get, const unsigned char *set)
{
    const qwen_config *c = &s->m->config;
    const size_t head = (size_t)c->head_dim * sizeof(uint16_t), row = c->n_head_kv * head;
    for (uint32_t p = 0; p < n; p++)
        for (uint32_t l = 0; l < c->n_layer; l++)
            for (uint32_t h = 0; h < c->n_head_kv; h++) {
                const uint64_t at = cpu_cache_at(s, l, seq, h) + (uint64_t)p * c->head_dim;
                const size_t k = ((size_t)p * c->n_layer + l) * 2 * row + h * head, v = k + row;
                if (get) {
                    memcpy(get + k, s->k_cache + at, head);
                    memcpy(get + v, s->v_cache + at, head);
                } else {
                    memcpy(s->k_cache + at, set + k, head);
                    memcpy(s->v_cache + at, set + v, head);
                }
            }
}

static int cpu_seq_get(void *impl, int32_t seq, uint32_t n, void *buf, gguf_error *err)
{
    (void)err;
    seq_rows(impl, seq, n, buf, NULL);
    return GGUF_OK;
}

static int cpu_seq_set(void *impl, int32_t seq, uint32_t n, const void *buf, gguf_error *err)
{
    (void)err;
    seq_rows(impl, seq, n, NULL, buf);
    return GGUF_OK;
}

const qwen_backend qwen_backend_cpu = {"cpu",         cpu_open,      cpu_decode,
                                       cpu_set_threads, cpu_threads, cpu_set_plain,
                                       cpu_describe,    cpu_close,   cpu_memory,
                                       cpu_estimate,    cpu_seq_get, cpu_seq_set};
