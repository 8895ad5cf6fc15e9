/* amx.c -- whether the amx level's tiles may run here (built with the amx
 * kernels; simd.c asks). */
#include <config.h>

#if defined(__linux__) && defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "quant/dot.h"

#if defined(__linux__) && defined(__x86_64__)
/* AMX-TILE and AMX-INT8 (CPUID leaf 7, EDX bits 24 and 25), the OS saving
 * the tile state (XCR0 bits 17 and 18), and Linux's leave for this
 * process to use it (arch_prctl ARCH_REQ_XCOMP_PERM for
 * XFEATURE_XTILEDATA): 1 when all hold. */
static int amx_ask(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || (d & (3u << 24)) != (3u << 24)) return 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0; /* OSXSAVE */
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & (3u << 17)) != (3u << 17)) return 0;
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0;
}

/* Asked once. */
int gq_amx_usable(void)
{
    static int granted = -1; /* -1: not asked yet */
    int g = __atomic_load_n(&granted, __ATOMIC_ACQUIRE);
    if (g < 0) {
        g = amx_ask();
        __atomic_store_n(&granted, g, __ATOMIC_RELEASE);
    }
    return g;
}
#else
int gq_amx_usable(void)
{
    return 0;
}
#endif
