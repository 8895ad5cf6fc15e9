/*
 * mixture.h -- names a mixture of tensor types the way llama.cpp names its
 * quantized files: the value of general.file_type (enum llama_ftype) that
 * describes a model whose tensors have the given types.  Not installed;
 * used by gguf-requant, which must set general.file_type after changing
 * tensor types.
 *
 * The rule (also in gguf-requant(1)):
 *  1. Only tensors of two or more dimensions count (llama.cpp leaves 1-D
 *     tensors, norms and biases, as they are in every file type).
 *  2. token_embd.weight and output.weight are left out (every llama.cpp
 *     mixture gives them a type of their own), unless nothing else is left.
 *  3. When a remaining tensor has a type with 256-element blocks (K-quants
 *     and most IQ types), tensors whose row length is not a multiple of 256
 *     and whose type is one of llama.cpp's stand-ins for such rows (Q4_0,
 *     Q5_0, Q5_1, Q8_0, IQ4_NL) are left out too: they show only which
 *     fallback the row length forced.
 *  4. The base type is the type holding the most elements among the
 *     remaining tensors; a tie goes to the type with fewer bits per weight.
 *  5. The base type names the file type (F16 -> MOSTLY_F16, Q8_0 ->
 *     MOSTLY_Q8_0, Q6_K -> MOSTLY_Q6_K, ...), and for the K-quants with
 *     size variants the attn_v and ffn_down tensors decide the variant:
 *     Q4_K and Q5_K are _M when one of them has more bits than Q5_K
 *     (Q6_K, Q8_0 ...), else _S; Q3_K is _S when none of them has more
 *     bits than Q3_K, _L when most ffn_down elements have at least Q5_K's
 *     bits, else _M; Q2_K is Q2_K when most of their elements have more
 *     bits than Q2_K, else Q2_K_S.
 */
#ifndef TOOLS_MIXTURE_H
#define TOOLS_MIXTURE_H

#include <stddef.h>
#include <stdint.h>

/* One tensor as the rule sees it. */
struct mixture_tensor {
    const char *name;       /* not NUL-terminated: name_len bytes */
    size_t name_len;
    uint32_t type;          /* ggml type id */
    uint32_t n_dims;
    uint64_t ne0;           /* row length */
    uint64_t n_elements;
};

/* The general.file_type value (llama.cpp's LLAMA_FTYPE_*) that names the
 * mixture of the n tensors at ts, by the rule above; -1 when no file type
 * names it (no tensor of two or more dimensions, or a base type that no
 * file type is named after, such as I32 or F64). */
long mixture_file_type(const struct mixture_tensor *ts, size_t n);

#endif /* TOOLS_MIXTURE_H */
