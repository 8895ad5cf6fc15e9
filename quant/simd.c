/* simd.c -- the kernel tables and the choice of SIMD level.
 *
 * The level in use starts as the best one this CPU and build support, or
 * the one named by the GGUF_SIMD environment variable when that one is
 * supported; gguf_simd_set() changes it.  It is read and written
 * atomically, so a change is safe while other threads convert rows (each
 * call then uses one level or the other throughout a kernel call, and all
 * levels give the same results). */
#include <config.h>

#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "quant/dot.h"
#include "quant/kernels.h"
#include "quant/quant.h"

const struct gq_kernels gq_kernels_scalar = {
    .dequant = {
        [GGUF_T_F32] = gq_dequant_f32,
        [GGUF_T_F16] = gq_dequant_f16,
        [GGUF_T_BF16] = gq_dequant_bf16,
        [GGUF_T_Q4_0] = gq_dequant_q4_0,
        [GGUF_T_Q4_1] = gq_dequant_q4_1,
        [GGUF_T_Q5_0] = gq_dequant_q5_0,
        [GGUF_T_Q5_1] = gq_dequant_q5_1,
        [GGUF_T_Q8_0] = gq_dequant_q8_0,
        [GGUF_T_Q2_K] = gq_dequant_q2_k,
        [GGUF_T_Q3_K] = gq_dequant_q3_k,
        [GGUF_T_Q4_K] = gq_dequant_q4_k,
        [GGUF_T_Q5_K] = gq_dequant_q5_k,
        [GGUF_T_Q6_K] = gq_dequant_q6_k,
        [GGUF_T_Q8_K] = gq_dequant_q8_k,
    },
    .quant = {
        [GGUF_T_F32] = gq_quant_f32,
        [GGUF_T_F16] = gq_quant_f16,
        [GGUF_T_BF16] = gq_quant_bf16,
        [GGUF_T_Q4_0] = gq_quant_q4_0,
        [GGUF_T_Q4_1] = gq_quant_q4_1,
        [GGUF_T_Q5_0] = gq_quant_q5_0,
        [GGUF_T_Q5_1] = gq_quant_q5_1,
        [GGUF_T_Q8_0] = gq_quant_q8_0,
        [GGUF_T_Q2_K] = gq_quant_q2_k,
        [GGUF_T_Q3_K] = gq_quant_q3_k,
        [GGUF_T_Q4_K] = gq_quant_q4_k,
        [GGUF_T_Q5_K] = gq_quant_q5_k,
        [GGUF_T_Q6_K] = gq_quant_q6_k,
        [GGUF_T_Q8_K] = gq_quant_q8_k,
    },
    .quant_weighted = {
        [GGUF_T_Q4_0] = gq_quant_weighted_q4_0,
        [GGUF_T_Q4_1] = gq_quant_weighted_q4_1,
        [GGUF_T_Q5_0] = gq_quant_weighted_q5_0,
        [GGUF_T_Q5_1] = gq_quant_weighted_q5_1,
        [GGUF_T_Q2_K] = gq_quant_weighted_q2_k,
        [GGUF_T_Q3_K] = gq_quant_weighted_q3_k,
        [GGUF_T_Q4_K] = gq_quant_weighted_q4_k,
        [GGUF_T_Q5_K] = gq_quant_weighted_q5_k,
        [GGUF_T_Q6_K] = gq_quant_weighted_q6_k,
    },
};

#define N_LEVELS 4

/* The kernel table of each level this build has, NULL for the others. */
static const struct gq_kernels *const level_tables[N_LEVELS] = {
    [GGUF_SIMD_SCALAR] = &gq_kernels_scalar,
#ifdef GQ_HAVE_AVX2
    [GGUF_SIMD_AVX2] = &gq_kernels_avx2,
#endif
#ifdef GQ_HAVE_AVX512
    [GGUF_SIMD_AVX512] = &gq_kernels_avx512,
#endif
#ifdef GQ_HAVE_AMX
    [GGUF_SIMD_AMX] = &gq_kernels_avx512, /* AMX serves only matrix products */
#endif
};

static const char *const level_names[N_LEVELS] = {"scalar", "avx2", "avx512", "amx"};

#if defined(__x86_64__) || defined(__i386__)
/* F16C, from CPUID leaf 1 (ECX bit 29).  GCC's __builtin_cpu_supports knows
 * the name "f16c" but Clang 14's does not, so both compilers ask CPUID. */
static int cpu_has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}
#endif

/* 1 when the CPU (and the OS, which must save the wider registers) can
 * run `level`.  __builtin_cpu_supports checks both; F16C has the same
 * register state as AVX. */
static int cpu_has(int level)
{
    switch (level) {
    case GGUF_SIMD_SCALAR:
        return 1;
#if defined(__x86_64__) || defined(__i386__)
    case GGUF_SIMD_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               cpu_has_f16c();
    case GGUF_SIMD_AVX512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl");
    case GGUF_SIMD_AMX:
#ifdef GQ_HAVE_AMX
        return cpu_has(GGUF_SIMD_AVX512) && __builtin_cpu_supports("avx512vnni") && gq_amx_usable();
#else
        return 0;
#endif
#endif
    default:
        return 0;
    }
}

static int level_usable(int level)
{
    return level >= 0 && level < N_LEVELS && level_tables[level] && cpu_has(level);
}

int gguf_simd_best(void)
{
    for (int level = N_LEVELS - 1; level > 0; level--)
        if (level_usable(level)) return level;
    return GGUF_SIMD_SCALAR;
}

/* The level in use, or -1 before the first query. */
static int current_level = -1;

int gguf_simd_get(void)
{
    int level = __atomic_load_n(&current_level, __ATOMIC_ACQUIRE);
    if (level >= 0) return level;

    level = gguf_simd_best();
    const char *env = getenv("GGUF_SIMD");
    if (env) {
        for (int l = 0; l < N_LEVELS; l++)
            if (strcmp(env, level_names[l]) == 0 && level_usable(l)) level = l;
    }
    /* Two first callers compute the same value; the first store wins, and
     * a gguf_simd_set() in between is kept. */
    int expected = -1;
    if (!__atomic_compare_exchange_n(&current_level, &expected, level, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        level = expected;
    return level;
}

int gguf_simd_set(int level)
{
    if (!level_usable(level)) return GGUF_E_UNSUPPORTED;
    __atomic_store_n(&current_level, level, __ATOMIC_RELEASE);
    return GGUF_OK;
}

const char *gguf_simd_name(int level)
{
    return level >= 0 && level < N_LEVELS ? level_names[level] : NULL;
}

gq_dequant_fn gq_dequant_kernel_at(int level, uint32_t type)
{
    if (type >= GGUF_T_COUNT) return NULL;
    for (int l = level < N_LEVELS ? level : N_LEVELS - 1; l >= 0; l--)
        if (level_tables[l] && level_tables[l]->dequant[type]) return level_tables[l]->dequant[type];
    return NULL;
}

gq_quant_fn gq_quant_kernel_at(int level, uint32_t type)
{
    if (type >= GGUF_T_COUNT) return NULL;
    for (int l = level < N_LEVELS ? level : N_LEVELS - 1; l >= 0; l--)
        if (level_tables[l] && level_tables[l]->quant[type]) return level_tables[l]->quant[type];
    return NULL;
}

gq_quant_weighted_fn gq_quant_weighted_kernel_at(int level, uint32_t type)
{
    if (type >= GGUF_T_COUNT || !gq_kernels_scalar.quant_weighted[type]) return NULL;
    for (int l = level < N_LEVELS ? level : N_LEVELS - 1; l >= 0; l--)
        if (level_tables[l] && level_tables[l]->quant_weighted[type])
            return level_tables[l]->quant_weighted[type];
    return NULL;
}

gq_dequant_fn gq_dequant_kernel(uint32_t type)
{
    return gq_dequant_kernel_at(gguf_simd_get(), type);
}

gq_quant_fn gq_quant_kernel(uint32_t type)
{
    return gq_quant_kernel_at(gguf_simd_get(), type);
}

gq_quant_weighted_fn gq_quant_weighted_kernel(uint32_t type)
{
    return gq_quant_weighted_kernel_at(gguf_simd_get(), type);
}
