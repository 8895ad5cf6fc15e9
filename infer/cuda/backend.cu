/*
 * backend.cu -- the CUDA backend (cuda.h): its state on the device, the
 * upload of the weights, the graph of a decode step, and the entry points
 * of backend.h.
 *
 * Open: the first device is taken; every matrix, norm and bias is copied
 * into one device allocation through two pinned staging buffers (one
 * fills from the file's mapping while the other is on its way up), the
 * matrices in their GGUF form; then the activation buffers, the F16
 * key/value cache and the RoPE table (the CPU's angles for every
 * position) are allocated, nothing later but cuBLAS's scratch for the
 * first large batch.
 *
 * A step: the batch (tokens, sequences, positions, the entries that want
 * logits) goes up in one copy, the graph runs on one stream, the logits
 * come down.  The graph of a layer is the CPU's (infer/cpu/graph.c), with
 * its small steps fused: the residual addition with the RMSNorm after it
 * and the quantization of the normed vector; biases, per-head norms, RoPE
 * and the cache store in one kernel; SwiGLU with the quantization for the
 * down product.  Batches of up to QC_MV_MAX tokens use the matrix-vector
 * kernels, and their step is captured once per (tokens, outputs) as a
 * CUDA graph and replayed: every kernel reads the positions from device
 * memory, so the graph serves every step of that shape.  Larger batches
 * (prefill) go through cuBLAS.
 */
#include <config.h>

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/cuda/common.cuh"
#include "infer/cuda/cuda.h"
#include "infer/model.h"

/* Bytes of each pinned staging buffer of the upload. */
#define STAGE_BYTES (32u << 20)

/* Most bytes of attention pieces (common.cuh) at once. */
#define ATT_SCRATCH_BYTES (64u << 20)

/* --- errors --- */

int qc_call(qc_state *s, cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return 1;
    if (s->status == GGUF_OK) {
        s->status = GGUF_E_DEVICE;
        snprintf(s->message, sizeof s->message, "cuda: %s: %s (%s)", what, cudaGetErrorString(e),
                 cudaGetErrorName(e));
    }
    return 0;
}

int qc_blas(qc_state *s, cublasStatus_t e, const char *what)
{
    if (e == CUBLAS_STATUS_SUCCESS) return 1;
    if (s->status == GGUF_OK) {
        s->status = GGUF_E_DEVICE;
        snprintf(s->message, sizeof s->message, "cuda: %s: cuBLAS status %d", what, (int)e);
    }
    return 0;
}

int qc_launched(qc_state *s, const char *name)
{
    char what[128];
    snprintf(what, sizeof what, "kernel %s", name);
    if (!qc_call(s, cudaGetLastError(), what)) return 0;
    if (s->sync_each) return qc_call(s, cudaStreamSynchronize(s->stream), what);
    return 1;
}

int qc_fail_type(qc_state *s, const char *where, uint32_t type)
{
    if (s->status == GGUF_OK) {
        s->status = GGUF_E_DEVICE;
        snprintf(s->message, sizeof s->message, "cuda: %s: no kernel for type %s", where,
                 gguf_type_str(type));
    }
    return 0;
}

/* The state's failure as the caller's error. */
static int fail_state(qc_state *s, gguf_error *err)
{
    return qwen_fail(err, s->status, UINT64_MAX, "%s", s->message);
}

extern "C" int qwen_cuda_device_count(char *msg, size_t cap)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        if (msg && cap)
            snprintf(msg, cap, "%s", e == cudaErrorInsufficientDriver
                                         ? "no NVIDIA driver, or one older than this build's CUDA"
                                         : cudaGetErrorString(e));
        cudaGetLastError(); /* clear it */
        return 0;
    }
    if (n == 0 && msg && cap) snprintf(msg, cap, "no CUDA device");
    return n;
}

/* --- cuBLAS --- */

qc_blas_api qc_cublas;

/* Loads cuBLAS once: the library of the build's CUDA by its soname (found
 * as the dynamic linker finds libraries), else in the build's CUDA
 * directory.  Returns 1, or 0 with the failure kept in s. */
static int load_cublas(qc_state *s)
{
    static void *lib;
    if (lib) return 1;
    void *h = dlopen(QC_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen(QC_CUDA_LIBDIR "/" QC_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        s->status = GGUF_E_DEVICE;
        snprintf(s->message, sizeof s->message, "cuda: cannot load cuBLAS: %s", dlerror());
        return 0;
    }
    qc_blas_api api;
    const char *missing = NULL;
#define SYM(field, name) \
    if (!(*(void **)&api.field = dlsym(h, name)) && !missing) missing = name;
    SYM(create, "cublasCreate_v2")
    SYM(destroy, "cublasDestroy_v2")
    SYM(set_stream, "cublasSetStream_v2")
    SYM(sgemm, "cublasSgemm_v2")
    SYM(gemm_ex, "cublasGemmEx")
#undef SYM
    if (missing) {
        s->status = GGUF_E_DEVICE;
        snprintf(s->message, sizeof s->message, "cuda: %s has no %s", QC_CUBLAS_SONAME, missing);
        dlclose(h);
        return 0;
    }
    qc_cublas = api;
    lib = h;
    return 1;
}

/* --- memory --- */

/* cudaMalloc of bytes for `what`, counted in vram_used. */
static int dev_alloc(qc_state *s, void **p, size_t bytes, const char *what)
{
    char call[160];
    snprintf(call, sizeof call, "cudaMalloc of %zu MiB for %s", (bytes + (1u << 20) - 1) >> 20,
             what);
    if (!qc_call(s, cudaMalloc(p, bytes ? bytes : 1), call)) {
        *p = NULL;
        return 0;
    }
    s->vram_used += bytes;
    return 1;
}

template <typename P> static int dev_array(qc_state *s, P **p, uint64_t n, const char *what)
{
    void *v = NULL;
    if (n > SIZE_MAX / sizeof(P)) return qc_call(s, cudaErrorMemoryAllocation, what);
    int ok = dev_alloc(s, &v, (size_t)n * sizeof(P), what);
    *p = (P *)v;
    return ok;
}

/* --- weights --- */

/* One piece of the upload: bytes from the mapping to an offset of the
 * weights' allocation. */
struct piece {
    const void *src;
    uint64_t bytes, at;
};

struct upload {
    piece *p;
    size_t n, cap;
    uint64_t total;
};

/* Plans a piece of `bytes` at the next 256-byte boundary; its offset. */
static uint64_t plan(upload *u, const void *src, uint64_t bytes)
{
    if (u->n == u->cap) {
        size_t cap = u->cap ? 2 * u->cap : 64;
        piece *p = (piece *)realloc(u->p, cap * sizeof *p);
        if (!p) return UINT64_MAX;
        u->p = p;
        u->cap = cap;
    }
    const uint64_t at = (u->total + 255) / 256 * 256;
    u->p[u->n++] = {src, bytes, at};
    u->total = at + bytes;
    return at;
}

/* A name for messages: the tensor of layer l (UINT32_MAX: none) and role. */
static void tensor_name(char *buf, size_t cap, uint32_t l, const char *role)
{
    if (l == UINT32_MAX) snprintf(buf, cap, "%s.weight", role);
    else snprintf(buf, cap, "blk.%" PRIu32 ".%s.weight", l, role);
}

/* Checks that the kernels compute matrix w; GGUF_OK or GGUF_E_UNSUPPORTED. */
static int check_matrix(const qwen_model *m, const qwen_matrix *w, uint32_t l, const char *role,
                        gguf_error *err)
{
    char name[96];
    tensor_name(name, sizeof name, l, role);
    if (!qc_type_ok(w->type))
        return qwen_fail(err, GGUF_E_UNSUPPORTED, UINT64_MAX,
                         "%s: tensor '%s' is of type %s, which the CUDA backend does not compute "
                         "(it computes F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and Q2_K to "
                         "Q6_K); use the CPU",
                         gguf_name(m->file), name, gguf_type_str(w->type));
    if (w->cols % 32)
        return qwen_fail(err, GGUF_E_UNSUPPORTED, UINT64_MAX,
                         "%s: tensor '%s' has rows of %" PRIu64 " elements, not a multiple of 32, "
                         "which the CUDA backend needs; use the CPU",
                         gguf_name(m->file), name, w->cols);
    return GGUF_OK;
}

/* The matrix w planned into the upload; its device form in d (data as an
 * offset until the allocation exists). */
static int plan_matrix(upload *u, const qwen_matrix *w, qc_matrix *d)
{
    d->type = w->type;
    d->cols = (int64_t)w->cols;
    d->rows = (int64_t)w->rows;
    d->row_bytes = (int64_t)w->row_bytes;
    uint64_t at = plan(u, w->data, (uint64_t)w->row_bytes * w->rows);
    d->data = (const uint8_t *)(uintptr_t)at;
    return at != UINT64_MAX;
}

static int plan_vector(upload *u, const float *v, uint64_t n, const float **d)
{
    if (!v) {
        *d = NULL;
        return 1;
    }
    uint64_t at = plan(u, v, n * sizeof(float));
    *d = (const float *)(uintptr_t)at;
    return at != UINT64_MAX;
}

/* Offsets planned by plan_*() to pointers into base. */
template <typename P> static void rebase(P *&p, const void *base)
{
    if (p) p = (P *)((const uint8_t *)base + (uintptr_t)p);
}

static void rebase_matrix(qc_matrix *m, const void *base)
{
    m->data = (const uint8_t *)base + (uintptr_t)m->data;
}

/* Copies the planned pieces up through the two pinned buffers. */
static int copy_up(qc_state *s, const upload *u, const qwen_params *p)
{
    void *stage[2] = {NULL, NULL};
    cudaEvent_t done[2] = {NULL, NULL};
    int ok = qc_call(s, cudaMallocHost(&stage[0], STAGE_BYTES), "cudaMallocHost (staging)") &&
             qc_call(s, cudaMallocHost(&stage[1], STAGE_BYTES), "cudaMallocHost (staging)") &&
             qc_call(s, cudaEventCreateWithFlags(&done[0], cudaEventDisableTiming),
                     "cudaEventCreate") &&
             qc_call(s, cudaEventCreateWithFlags(&done[1], cudaEventDisableTiming),
                     "cudaEventCreate");
    uint64_t sent = 0, last = 0;
    int k = 0, used[2] = {0, 0};
    for (size_t i = 0; i < u->n && ok; i++) {
        for (uint64_t off = 0; off < u->p[i].bytes && ok; off += STAGE_BYTES) {
            const uint64_t len =
                u->p[i].bytes - off < STAGE_BYTES ? u->p[i].bytes - off : STAGE_BYTES;
            if (used[k]) ok = qc_call(s, cudaEventSynchronize(done[k]), "cudaEventSynchronize");
            if (!ok) break;
            memcpy(stage[k], (const uint8_t *)u->p[i].src + off, (size_t)len);
            ok = qc_call(s,
                         cudaMemcpyAsync((uint8_t *)s->weights + u->p[i].at + off, stage[k],
                                         (size_t)len, cudaMemcpyHostToDevice, s->stream),
                         "cudaMemcpyAsync (weights)") &&
                 qc_call(s, cudaEventRecord(done[k], s->stream), "cudaEventRecord");
            used[k] = 1;
            k ^= 1;
            sent += len;
            if (p->progress && sent - last >= (64u << 20)) {
                p->progress(p->progress_user, sent, u->total);
                last = sent;
            }
        }
    }
    /* also after a failure: no copy may be in flight when the buffers go */
    const cudaError_t synced = cudaStreamSynchronize(s->stream);
    if (ok) ok = qc_call(s, synced, "cudaStreamSynchronize (weights)");
    if (ok && p->progress) p->progress(p->progress_user, u->total, u->total);
    for (int j = 0; j < 2; j++) {
        if (done[j]) cudaEventDestroy(done[j]);
        if (stage[j]) cudaFreeHost(stage[j]);
    }
    return ok;
}

/* Plans every tensor of the model, allocates and uploads. */
static int upload_weights(qc_state *s, const qwen_params *p, gguf_error *err)
{
    const qwen_model *m = s->m;
    const qwen_config *c = &m->config;
    const qwen_weights *w = &m->weights;
    static const char *const roles[7] = {"attn_q",   "attn_k",  "attn_v",  "attn_output",
                                         "ffn_gate", "ffn_up", "ffn_down"};
    int st = check_matrix(m, &w->token_embd, UINT32_MAX, "token_embd", err);
    if (!st && !w->tied) st = check_matrix(m, &w->output, UINT32_MAX, "output", err);
    for (uint32_t l = 0; l < c->n_layer && !st; l++) {
        const qwen_layer *L = &w->layers[l];
        const qwen_matrix *mats[7] = {&L->wq,     &L->wk,   &L->wv,    &L->wo,
                                      &L->w_gate, &L->w_up, &L->w_down};
        for (int i = 0; i < 7 && !st; i++) st = check_matrix(m, mats[i], l, roles[i], err);
    }
    if (st) return st;

    upload u = {NULL, 0, 0, 256}; /* no piece at offset 0, which plan_vector() means as absent */
    int ok = plan_matrix(&u, &w->token_embd, &s->token_embd) &&
             (w->tied || plan_matrix(&u, &w->output, &s->output)) &&
             plan_vector(&u, w->output_norm, c->n_embd, &s->output_norm);
    for (uint32_t l = 0; l < c->n_layer && ok; l++) {
        const qwen_layer *L = &w->layers[l];
        qc_layer *D = &s->layers[l];
        ok = plan_vector(&u, L->attn_norm, c->n_embd, &D->attn_norm) &&
             plan_vector(&u, L->bq, c->n_q, &D->bq) && plan_vector(&u, L->bk, c->n_kv, &D->bk) &&
             plan_vector(&u, L->bv, c->n_kv, &D->bv) &&
             plan_vector(&u, L->q_norm, c->head_dim, &D->q_norm) &&
             plan_vector(&u, L->k_norm, c->head_dim, &D->k_norm) &&
             plan_vector(&u, L->ffn_norm, c->n_embd, &D->ffn_norm) &&
             plan_matrix(&u, &L->wq, &D->wq) && plan_matrix(&u, &L->wk, &D->wk) &&
             plan_matrix(&u, &L->wv, &D->wv) && plan_matrix(&u, &L->wo, &D->wo) &&
             plan_matrix(&u, &L->w_gate, &D->gate) && plan_matrix(&u, &L->w_up, &D->up) &&
             plan_matrix(&u, &L->w_down, &D->down);
    }
    if (!ok) {
        free(u.p);
        return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "out of memory");
    }
    ok = dev_alloc(s, &s->weights, (size_t)u.total, "the weights") && copy_up(s, &u, p);
    if (ok) s->weight_bytes = (size_t)u.total;
    free(u.p);
    if (!ok) return fail_state(s, err);
    rebase_matrix(&s->token_embd, s->weights);
    if (w->tied) s->output = s->token_embd;
    else rebase_matrix(&s->output, s->weights);
    rebase(s->output_norm, s->weights);
    for (uint32_t l = 0; l < c->n_layer; l++) {
        qc_layer *D = &s->layers[l];
        const float **vecs[7] = {&D->attn_norm, &D->bq,     &D->bk,      &D->bv,
                                 &D->q_norm,    &D->k_norm, &D->ffn_norm};
        for (int i = 0; i < 7; i++) rebase(*vecs[i], s->weights);
        qc_matrix *mats[7] = {&D->wq, &D->wk, &D->wv, &D->wo, &D->gate, &D->up, &D->down};
        for (int i = 0; i < 7; i++) rebase_matrix(mats[i], s->weights);
    }
    return GGUF_OK;
}

/* --- open and close --- */

static void cuda_close(void *impl)
{
    qc_state *s = (qc_state *)impl;
    if (!s) return;
    if (s->stream) cudaStreamSynchronize(s->stream);
    for (int n = 0; n <= QC_MV_MAX; n++)
        for (int o = 0; o <= QC_MV_MAX; o++)
            if (s->graph[n][o]) cudaGraphExecDestroy(s->graph[n][o]);
    void *bufs[] = {s->weights, s->x,   s->xb,     s->y,      s->q,    s->k,       s->v,
                    s->ao,      s->gate, s->up,    s->act.q,  s->act.ds, s->xh,    s->wdeq,
                    s->logits,  s->att, s->k_cache, s->v_cache, s->rope, s->d_token,
                    s->xscale};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) cudaFree(bufs[i]);
    if (s->h_stage) cudaFreeHost(s->h_stage);
    if (s->h_logits) cudaFreeHost(s->h_logits);
    if (s->blas) qc_cublas.destroy(s->blas);
    if (s->stream) cudaStreamDestroy(s->stream);
    free(s->layers);
    free(s);
}

/* The activation buffers, cache, RoPE table and batch arrays. */
static int alloc_buffers(qc_state *s)
{
    const qwen_config *c = &s->m->config;
    const uint64_t nb = s->n_batch, wide = qwen_widest_input(c);
    const uint64_t cache = (uint64_t)c->n_kv * s->n_ctx * s->n_seq * c->n_layer;
    const uint64_t n_piece = (s->n_ctx + QC_ATT_CHUNK - 1) / QC_ATT_CHUNK;
    const uint64_t per_token = (uint64_t)c->n_head * n_piece * (c->head_dim + 2) * sizeof(float);
    uint64_t att_tokens = ATT_SCRATCH_BYTES / per_token;
    if (att_tokens < 1) att_tokens = 1;
    if (att_tokens > nb) att_tokens = nb;
    if (att_tokens > 65535) att_tokens = 65535;
    s->att_tokens = (uint32_t)att_tokens;
    s->act.stride = (int64_t)wide;
    int ok = dev_array(s, &s->x, c->n_embd * nb, "activations") &&
             dev_array(s, &s->xb, c->n_embd * nb, "activations") &&
             dev_array(s, &s->y, c->n_embd * nb, "activations") &&
             dev_array(s, &s->q, c->n_q * nb, "activations") &&
             dev_array(s, &s->k, c->n_kv * nb, "activations") &&
             dev_array(s, &s->v, c->n_kv * nb, "activations") &&
             dev_array(s, &s->ao, c->n_q * nb, "activations") &&
             dev_array(s, &s->gate, c->n_ff * nb, "activations") &&
             dev_array(s, &s->up, c->n_ff * nb, "activations") &&
             dev_array(s, &s->act.q, wide * nb, "8-bit activations") &&
             dev_array(s, &s->act.ds, wide / 32 * nb, "8-bit activations") &&
             dev_array(s, &s->logits, (uint64_t)c->n_vocab * s->n_outputs, "logits") &&
             dev_array(s, &s->att, per_token / sizeof(float) * att_tokens, "attention") &&
             dev_array(s, &s->k_cache, cache, "the key cache") &&
             dev_array(s, &s->v_cache, cache, "the value cache") &&
             dev_array(s, &s->rope, (uint64_t)c->head_dim * s->n_ctx, "the RoPE table") &&
             dev_array(s, &s->d_token, 3 * nb + s->n_outputs, "the batch");
    if (!ok) return 0;
    s->kv_bytes = 2 * cache * sizeof(__half);
    s->d_seq = s->d_token + nb;
    s->d_pos = (uint32_t *)(s->d_token + 2 * nb);
    s->d_rows = s->d_token + 3 * nb;
    ok = qc_call(s, cudaMallocHost(&s->h_stage, (3 * nb + s->n_outputs) * sizeof(int32_t)),
                 "cudaMallocHost (batch)") &&
         qc_call(s, cudaMallocHost((void **)&s->h_logits,
                                   (size_t)c->n_vocab * s->n_outputs * sizeof(float)),
                 "cudaMallocHost (logits)");
    if (!ok) return 0;
    float *tab = (float *)malloc((size_t)c->head_dim * s->n_ctx * sizeof(float));
    if (!tab) return qc_call(s, cudaErrorMemoryAllocation, "the RoPE table");
    for (uint32_t p = 0; p < s->n_ctx; p++)
        qwen_rope_angles(tab + (uint64_t)p * c->head_dim, p, c->head_dim, c->rope_base);
    ok = qc_call(s, cudaMemcpy(s->rope, tab, (size_t)c->head_dim * s->n_ctx * sizeof(float),
                               cudaMemcpyHostToDevice),
                 "cudaMemcpy (RoPE table)");
    free(tab);
    return ok;
}

/* The scratch of the cuBLAS products, at the first batch that needs it. */
static int alloc_gemm(qc_state *s)
{
    if (s->wdeq && s->xh) return 1;
    const qwen_config *c = &s->m->config;
    const uint64_t wide = qwen_widest_input(c);
    uint64_t rows = 0;
    const uint64_t all[] = {c->n_q, c->n_kv, c->n_embd, c->n_ff, c->n_vocab};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i] > rows) rows = all[i];
    if (rows > QC_GEMM_ROWS) rows = QC_GEMM_ROWS;
    return (s->wdeq || dev_array(s, (float **)&s->wdeq, wide * rows, "dequantized weights")) &&
           dev_array(s, &s->xh, wide * s->n_batch, "F16 activations") &&
           dev_array(s, &s->xscale, s->n_batch, "F16 activation scales");
}

static int cuda_open(void **impl, const qwen_model *m, const qwen_params *p, gguf_error *err)
{
    const qwen_config *c = &m->config;
    const char *name = gguf_name(m->file);
    char why[256];
    if (qwen_cuda_device_count(why, sizeof why) == 0)
        return qwen_fail(err, GGUF_E_UNSUPPORTED, UINT64_MAX, "no usable CUDA device: %s", why);
    if (strcmp(c->arch->name, "qwen2") != 0 && strcmp(c->arch->name, "qwen3") != 0)
        return qwen_fail(err, GGUF_E_UNSUPPORTED, UINT64_MAX,
                         "%s: the CUDA backend has no graph for architecture %s", name,
                         c->arch->name);
    if (c->n_embd % 32 || c->n_ff % 32 || c->n_q % 32)
        return qwen_fail(err, GGUF_E_UNSUPPORTED, UINT64_MAX,
                         "%s: widths %" PRIu32 ", %" PRIu32 " and %" PRIu32
                         " must be multiples of 32 for the CUDA backend",
                         name, c->n_embd, c->n_q, c->n_ff);
    if (p->n_batch > 65535)
        return qwen_fail(err, GGUF_E_UNSUPPORTED, UINT64_MAX,
                         "%s: batches of %" PRIu32 " tokens: the CUDA backend takes at most 65535",
                         name, p->n_batch);
    if ((uint64_t)p->n_ctx > 65535ull * QC_ATT_CHUNK)
        return qwen_fail(err, GGUF_E_UNSUPPORTED, UINT64_MAX,
                         "%s: a context of %" PRIu32 " positions is more than the CUDA backend's %"
                         PRIu64, name, p->n_ctx, (uint64_t)65535 * QC_ATT_CHUNK);
    qc_state *s = (qc_state *)calloc(1, sizeof *s);
    if (s) s->layers = (qc_layer *)calloc(c->n_layer, sizeof *s->layers);
    if (!s || !s->layers) {
        if (s) free(s);
        return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", name);
    }
    s->m = m;
    s->n_ctx = p->n_ctx;
    s->n_seq = p->n_seq;
    s->n_batch = p->n_batch;
    s->n_outputs = p->n_outputs;
    s->plain = p->plain;
    s->n_threads = p->n_threads > 0 ? p->n_threads : 1;
    const char *sync = getenv("QWEN_CUDA_SYNC");
    s->sync_each = sync && *sync && strcmp(sync, "0") != 0;
    cudaDeviceProp prop;
    int ok = qc_call(s, cudaSetDevice(0), "cudaSetDevice") &&
             qc_call(s, cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties") &&
             qc_call(s, cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking),
                     "cudaStreamCreate") &&
             load_cublas(s) && qc_blas(s, qc_cublas.create(&s->blas), "cublasCreate") &&
             qc_blas(s, qc_cublas.set_stream(s->blas, s->stream), "cublasSetStream");
    if (ok) {
        snprintf(s->device_name, sizeof s->device_name, "%s", prop.name);
        s->cc_major = prop.major;
        s->cc_minor = prop.minor;
        s->vram_total = prop.totalGlobalMem;
    }
    int st = ok ? upload_weights(s, p, err) : fail_state(s, err);
    if (!st && !alloc_buffers(s)) st = fail_state(s, err);
    if (!st && (s->plain || s->n_batch > QC_MV_MAX) && !alloc_gemm(s)) st = fail_state(s, err);
    if (st) {
        cuda_close(s);
        return st;
    }
    *impl = s;
    return GGUF_OK;
}

/* --- the step --- */

/* Prepares the float input `in` (cols, n) of the products that follow:
 * its F16 copy for cuBLAS, or its 8-bit form when the kernel that made it
 * did not (made == 0). */
static void prepare(qc_state *s, const float *in, int64_t cols, int n, int gemm, int made)
{
    if (gemm) {
        if (!s->plain) qc_to_half(s, in, cols, n);
    } else if (!made) {
        qc_quantize(s, in, cols, n);
    }
}

static void product(qc_state *s, const qc_matrix *w, const float *in, int n, float *out, int gemm)
{
    if (s->status) return;
    if (gemm) qc_gemm(s, w, in, n, out, s->plain);
    else qc_matvec(s, w, in, n, out);
}

/* The step's kernels for n entries, n_out of them with logits, on the
 * stream (directly, or while it is captured). */
static void run_step(qc_state *s, int n, int n_out)
{
    const qwen_config *c = &s->m->config;
    const int gemm = s->plain || n > QC_MV_MAX, mv = !gemm;
    qc_embed(s, n);
    const float *y = NULL; /* the last sublayer's output, not yet in x */
    for (uint32_t l = 0; l < c->n_layer && s->status == GGUF_OK; l++) {
        const qc_layer *L = &s->layers[l];
        qc_add_rmsnorm(s, s->x, y, L->attn_norm, NULL, n, s->xb, mv);
        prepare(s, s->xb, c->n_embd, n, gemm, 1);
        product(s, &L->wq, s->xb, n, s->q, gemm);
        product(s, &L->wk, s->xb, n, s->k, gemm);
        product(s, &L->wv, s->xb, n, s->v, gemm);
        qc_qkv_post(s, L, l, n);
        qc_attention(s, l, n);
        prepare(s, s->ao, c->n_q, n, gemm, 0);
        product(s, &L->wo, s->ao, n, s->y, gemm);
        qc_add_rmsnorm(s, s->x, s->y, L->ffn_norm, NULL, n, s->xb, mv);
        prepare(s, s->xb, c->n_embd, n, gemm, 1);
        product(s, &L->gate, s->xb, n, s->gate, gemm);
        product(s, &L->up, s->xb, n, s->up, gemm);
        qc_swiglu(s, n, mv);
        prepare(s, s->gate, c->n_ff, n, gemm, 1);
        product(s, &L->down, s->gate, n, s->y, gemm);
        y = s->y;
    }
    if (n_out == 0 || s->status) return;
    const int gemm_out = s->plain || n_out > QC_MV_MAX;
    qc_add_rmsnorm(s, s->x, y, s->output_norm, s->d_rows, n_out, s->xb, !gemm_out);
    prepare(s, s->xb, c->n_embd, n_out, gemm_out, 1);
    product(s, &s->output, s->xb, n_out, s->logits, gemm_out);
}

/* Runs the step of n entries, from its captured graph when it has one. */
static void launch_step(qc_state *s, int n, int n_out)
{
    if (s->plain || s->sync_each || n > QC_MV_MAX || n_out > QC_MV_MAX) {
        run_step(s, n, n_out);
        return;
    }
    cudaGraphExec_t *g = &s->graph[n][n_out];
    if (!*g) {
        cudaGraph_t graph = NULL;
        if (!qc_call(s, cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal),
                     "cudaStreamBeginCapture"))
            return;
        run_step(s, n, n_out);
        const int ok = qc_call(s, cudaStreamEndCapture(s->stream, &graph),
                               "cudaStreamEndCapture (decode step)");
        if (ok && s->status == GGUF_OK)
            qc_call(s, cudaGraphInstantiate(g, graph, 0), "cudaGraphInstantiate (decode step)");
        if (graph) cudaGraphDestroy(graph);
        if (s->status) {
            *g = NULL;
            return;
        }
    }
    qc_call(s, cudaGraphLaunch(*g, s->stream), "cudaGraphLaunch (decode step)");
}

static int cuda_decode(void *impl, const qwen_batch *b, float *logits, gguf_error *err)
{
    qc_state *s = (qc_state *)impl;
    const qwen_config *c = &s->m->config;
    if (s->status) return fail_state(s, err); /* a device error is sticky */
    const uint32_t nb = s->n_batch;
    int32_t *h = (int32_t *)s->h_stage;
    uint32_t n_out = 0;
    for (uint32_t i = 0; i < b->n; i++) {
        h[i] = b->token[i];
        h[nb + i] = b->seq[i];
        h[2 * nb + i] = (int32_t)b->pos[i];
        if (b->logits[i]) h[3 * nb + n_out++] = (int32_t)i;
    }
    if ((s->plain || b->n > QC_MV_MAX || n_out > QC_MV_MAX) && !alloc_gemm(s))
        return fail_state(s, err);
    qc_call(s, cudaMemcpyAsync(s->d_token, h, (3 * nb + n_out) * sizeof(int32_t),
                               cudaMemcpyHostToDevice, s->stream),
            "cudaMemcpyAsync (batch)");
    if (s->status == GGUF_OK) launch_step(s, (int)b->n, (int)n_out);
    const size_t bytes = (size_t)n_out * c->n_vocab * sizeof(float);
    if (s->status == GGUF_OK && n_out)
        qc_call(s, cudaMemcpyAsync(s->h_logits, s->logits, bytes, cudaMemcpyDeviceToHost,
                                   s->stream),
                "cudaMemcpyAsync (logits)");
    qc_call(s, cudaStreamSynchronize(s->stream), "cudaStreamSynchronize (decode step)");
    if (s->status) return fail_state(s, err);
    memcpy(logits, s->h_logits, bytes);
    return GGUF_OK;
}

static int cuda_set_threads(void *impl, int n, gguf_error *err)
{
    (void)err;
    ((qc_state *)impl)->n_threads = n; /* the host's share of a step is one thread's */
    return GGUF_OK;
}

static int cuda_threads(const void *impl)
{
    return ((const qc_state *)impl)->n_threads;
}

static void cuda_set_plain(void *impl, int plain)
{
    ((qc_state *)impl)->plain = plain;
}

static void cuda_describe(const void *impl, char *buf, size_t cap)
{
    const qc_state *s = (const qc_state *)impl;
    snprintf(buf, cap, "cuda: %s (sm_%d%d), %zu MiB of %zu MiB in use%s", s->device_name,
             s->cc_major, s->cc_minor, s->vram_used >> 20, s->vram_total >> 20,
             s->plain ? ", plain products" : "");
}

/* Device memory: the cache, the rest but the weights (the weights' copy is
 * the context's weights figure), and all of it. */
static void cuda_memory(const void *impl, qwen_memory *out)
{
    const qc_state *s = (const qc_state *)impl;
    out->kv_cache = s->kv_bytes;
    out->compute = s->vram_used - s->weight_bytes - s->kv_bytes;
    out->device = s->vram_used;
}

extern "C" const qwen_backend qwen_backend_cuda = {
    "cuda",         cuda_open,      cuda_decode,   cuda_set_threads,
    cuda_threads,   cuda_set_plain, cuda_describe, cuda_close,
    cuda_memory,    NULL,           NULL,          NULL};
