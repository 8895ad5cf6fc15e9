/*
 * cuda.h -- the CUDA backend, for programs built with it (a plain C
 * header: nothing of CUDA's own headers leaks out).
 *
 * The backend lives in infer/cuda/libqwencuda.a, which only programs link
 * (qwen-run, tests/test-cuda), never libgguf or libinfer: a program adds
 * it to the backends of context.c with qwen_backend_add(&qwen_backend_cuda)
 * and then asks for it by name ("cuda") in qwen_params.backend.
 *
 * Weights are uploaded to the GPU when a context opens, kept in their
 * GGUF quantized form; every product, attention and small step of a
 * decode runs there; only the logits come back.  See backend.cu for the
 * graph and each kernel file for its kernels.
 */
#ifndef QWEN_CUDA_H
#define QWEN_CUDA_H

#include <stddef.h>

#include "infer/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const qwen_backend qwen_backend_cuda;

/* The number of CUDA devices this process can use: 0 when there is no
 * GPU, no driver, or the driver is older than the runtime this program
 * was built with; then msg (cap bytes, may be NULL) says why. */
int qwen_cuda_device_count(char *msg, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* QWEN_CUDA_H */
