/*
 * common.cuh -- what the CUDA backend's files share: the state of an open
 * backend, its error reporting, and the launchers of each kernel family
 * (one .cu file each); internal to infer/cuda/.
 *
 * Layouts follow the CPU backend (infer/cpu/cpu.h): a batch of n tokens'
 * activations is n vectors one after the other; the key/value cache holds
 * per layer and sequence n_ctx positions of n_kv halves, position p of
 * sequence q in layer l at ((l * n_seq + q) * n_ctx + p) * n_kv.
 *
 * A product's input exists as floats, and, for the matrix-vector kernels
 * of quantized weights, as 8-bit activations: int8 values and per 32 of
 * them (d, d * sum) as a float2, made by the kernel that produces the
 * input (RMSNorm, SwiGLU) or by qc_quantize().
 *
 * Errors: every CUDA and cuBLAS call goes through qc_call()/qc_blas(), every
 * launch through qc_launched(); the first failure is kept in the state
 * (its message names the call or the kernel) and ends the decode step with
 * GGUF_E_DEVICE.  Kernels run asynchronously, so a fault inside one shows
 * at the next synchronisation; with QWEN_CUDA_SYNC=1 in the environment
 * every launch is followed by a synchronisation (and no graph is
 * captured), so that the message names the kernel that failed.
 */
#ifndef QWEN_CUDA_COMMON_CUH
#define QWEN_CUDA_COMMON_CUH

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "infer/backend.h"
#include "infer/cuda/qblocks.h"

/* Most tokens of a batch the matrix-vector kernels take; larger batches
 * (prefill) dequantize weights to F16 for cuBLAS. */
#define QC_MV_MAX 8

/* Positions of the cache one attention block takes; a query over a longer
 * context is split into pieces of this many, combined after. */
#define QC_ATT_CHUNK 256

/* Rows of a weight matrix dequantized at once for cuBLAS. */
#define QC_GEMM_ROWS 4096

/* A weight matrix in device memory, its rows as in the file. */
struct qc_matrix {
    const uint8_t *data;
    uint32_t type;
    int64_t cols, rows;
    int64_t row_bytes;
};

struct qc_layer {
    const float *attn_norm, *bq, *bk, *bv, *q_norm, *k_norm, *ffn_norm; /* NULL: absent */
    qc_matrix wq, wk, wv, wo, gate, up, down;
};

/* A product's 8-bit input: n vectors of stride elements. */
struct qc_act {
    int8_t *q;      /* (stride, n) */
    float2 *ds;     /* (stride / 32, n) scale, scale * sum */
    int64_t stride; /* elements per vector */
};

struct qc_state {
    const qwen_model *m;
    uint32_t n_ctx, n_seq, n_batch, n_outputs;
    int plain, n_threads, sync_each, device;
    char device_name[256];
    int cc_major, cc_minor;
    size_t vram_total, vram_used;
    size_t weight_bytes, kv_bytes;  /* of vram_used: the weights, the key and value caches */

    cudaStream_t stream;
    cublasHandle_t blas;
    int status;             /* the first failure (GGUF_E_DEVICE), else GGUF_OK */
    char message[512];

    void *weights;          /* every matrix, norm and bias, in one allocation */
    qc_layer *layers;       /* (n_layer) host array of device pointers */
    qc_matrix token_embd, output;
    const float *output_norm;

    float *x;               /* (n_embd, n_batch) residual stream */
    float *xb;              /* (n_embd, n_batch) normed input of a sublayer */
    float *y;               /* (n_embd, n_batch) a sublayer's output, added to x next */
    float *q, *k, *v;       /* (n_q | n_kv, n_batch) */
    float *ao;              /* (n_q, n_batch) attention output */
    float *gate, *up;       /* (n_ff, n_batch) */
    qc_act act;             /* (widest input, n_batch) */
    __half *xh;             /* (widest input, n_batch) F16 input of cuBLAS products, each
                             * vector scaled by a power of two into F16's range */
    float *xscale;          /* (n_batch) what undoes each vector's scaling */
    void *wdeq;             /* (widest input, QC_GEMM_ROWS) F32 or F16 dequantized rows */
    float *logits;          /* (n_vocab, n_outputs) */
    float *att;             /* attention pieces, att_tokens at a time */
    uint32_t att_tokens;
    __half *k_cache, *v_cache; /* (n_kv, n_ctx, n_seq, n_layer) */
    float *rope;            /* (head_dim, n_ctx) cos, sin of each pair at each position */

    int32_t *d_token, *d_seq;  /* (n_batch) */
    uint32_t *d_pos;           /* (n_batch) */
    int32_t *d_rows;           /* (n_outputs) entries that want logits */
    void *h_stage;             /* pinned: the batch on its way up */
    float *h_logits;           /* pinned: (n_vocab, n_outputs) on their way down */

    cudaGraphExec_t graph[QC_MV_MAX + 1][QC_MV_MAX + 1]; /* [n][n_out] decode steps */
};

/* cuBLAS's entry points, loaded with dlopen() when the first context
 * opens (backend.cu): linked, its libraries (hundreds of MiB) would load
 * into every qwen-run, also one that runs on the CPU. */
struct qc_blas_api {
    cublasStatus_t (*create)(cublasHandle_t *);
    cublasStatus_t (*destroy)(cublasHandle_t);
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
    cublasStatus_t (*sgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const float *, const float *, int, const float *, int,
                            const float *, float *, int);
    cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                              int, const void *, const void *, cudaDataType, int, const void *,
                              cudaDataType, int, const void *, void *, cudaDataType, int,
                              cublasComputeType_t, cublasGemmAlgo_t);
};
extern qc_blas_api qc_cublas;

/* --- errors (backend.cu) --- */

/* Keeps the first failure: e from call `what`. Returns e == cudaSuccess. */
int qc_call(qc_state *s, cudaError_t e, const char *what);
int qc_blas(qc_state *s, cublasStatus_t e, const char *what);
/* After a launch of kernel `name`: its launch error, or with sync_each
 * the error of its run. */
int qc_launched(qc_state *s, const char *name);
/* Keeps the failure "no kernel `where` for type" (a type the open did
 * not check; returns 0). */
int qc_fail_type(qc_state *s, const char *where, uint32_t type);

/* --- launchers (one kernel family a file) --- */

/* quantize.cu: in (cols, n) to s->act, and the F16 copy for cuBLAS (each
 * vector whose largest magnitude passes 2^14 scaled down by a power of
 * two, exactly, into F16's range; s->xscale undoes it). */
void qc_quantize(qc_state *s, const float *in, int64_t cols, int n);
void qc_to_half(qc_state *s, const float *in, int64_t cols, int n);

/* norm.cu: for each output row o < n: t = rows ? rows[o] : o;
 * x[t] += y[t] when y; out[o] = RMSNorm(x[t]) * w; act[o] too when
 * quantize. */
void qc_add_rmsnorm(qc_state *s, float *x, const float *y, const float *w, const int32_t *rows,
                    int n, float *out, int quantize);

/* rope.cu: biases (qwen2), per-head norms (qwen3), RoPE of q and k, and k,
 * v into layer l's cache at each entry's sequence and position. */
void qc_qkv_post(qc_state *s, const qc_layer *L, uint32_t l, int n);

/* attention.cu: s->ao of layer l for the n entries. */
void qc_attention(qc_state *s, uint32_t l, int n);

/* ffn.cu: gate = silu(gate) * up over (n_ff, n), and act when quantize. */
void qc_swiglu(qc_state *s, int n, int quantize);

/* embed.cu: x (n_embd, n) = the rows of token_embd of the batch's tokens. */
void qc_embed(qc_state *s, int n);

/* matvec.cu: out (rows, n) = w times the n inputs, n <= QC_MV_MAX: from
 * s->act for quantized types, from the floats in for F32/F16/BF16. */
void qc_matvec(qc_state *s, const qc_matrix *w, const float *in, int n, float *out);

/* gemm.cu: the same for any n, through weights dequantized in pieces of
 * QC_GEMM_ROWS rows: to F16 against s->xh (the caller converted the
 * input), or with plain to F32 against in. */
void qc_gemm(qc_state *s, const qc_matrix *w, const float *in, int n, float *out, int plain);

/* F(T) for each type id T the kernels compute (qc_type_ok()), to
 * instantiate a kernel template per type behind a switch on the run-time
 * type. */
#define QC_EACH_TYPE(F) \
    F(0) F(1) F(30) F(2) F(3) F(6) F(7) F(8) F(10) F(11) F(12) F(13) F(14)
#define QC_EACH_QTYPE(F) F(2) F(3) F(6) F(7) F(8) F(10) F(11) F(12) F(13) F(14)
#define QC_EACH_FTYPE(F) F(0) F(1) F(30)

/* Blocks of `threads` covering n items. */
static inline unsigned qc_blocks(int64_t n, int threads)
{
    return (unsigned)((n + threads - 1) / threads);
}

#ifdef __CUDACC__
/* Sum and max of v over the warp; every lane gets the result. */
__device__ __forceinline__ float qc_warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ int qc_warp_isum(int v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float qc_warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* The sum of v over the block (blockDim.x a multiple of 32, at most
 * 1024); every thread gets it.  red: 32 floats of shared memory. */
__device__ __forceinline__ float qc_block_sum(float v, float *red)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
    v = qc_warp_sum(v);
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = lane < nw ? red[lane] : 0.0f;
    return qc_warp_sum(v);
}

/* The largest v over the block, as qc_block_sum(). */
__device__ __forceinline__ float qc_block_max(float v, float *red)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
    v = qc_warp_max(v);
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = lane < nw ? red[lane] : -INFINITY;
    return qc_warp_max(v);
}

/* One element of a warp's segment of 32 to 8 bits: lane l holds element
 * 32 seg + l of a vector; all 32 lanes call it together.  As
 * qc_quant_seg(): d = max |v| / 127, q = round(v / d). */
__device__ __forceinline__ void qc_quant_store(float v, int64_t seg, int8_t *q, float2 *ds)
{
    const float amax = qc_warp_max(fabsf(v));
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    const int qi = (int)roundf(v * id);
    const int sum = qc_warp_isum(qi);
    q[32 * seg + threadIdx.x % 32] = (int8_t)qi;
    if (threadIdx.x % 32 == 0) ds[seg] = make_float2(d, d * (float)sum);
}
#endif

#endif /* QWEN_CUDA_COMMON_CUH */
