/* amx-emu.h -- the AMX tile instructions the amx level uses, in C, for
 * checking its kernels where the CPU has no AMX: tests/local.mk compiles
 * quant/panel-vnni.c and quant/tiles32.c once more with this header
 * forced in first (-include), into the amx level of test-quant-amx.
 *
 * Each instruction does what the architecture defines (one tile
 * configuration and eight tiles per thread, rows x colsb bytes of each
 * loaded, the rest zero; products of int8 quads summed into int32 with
 * wrap-around), and checks what the processor checks: a bad
 * configuration, a tile used before ldtilecfg or after tilerelease, and
 * operands whose shapes do not fit end the program with a message, as
 * the processor would end it with a fault. */
#ifndef GGUF_TESTS_AMX_EMU_H
#define GGUF_TESTS_AMX_EMU_H

#include <immintrin.h>
#include <stddef.h>

void amx_emu_loadconfig(const void *config);
void amx_emu_release(void);
void amx_emu_loadd(int tile, const void *base, size_t stride);
void amx_emu_stored(int tile, void *base, size_t stride);
void amx_emu_zero(int tile);
/* dst += src1 times src2; sign1, sign2: whether each one's bytes are
 * signed (tdpbssd 1 1, tdpbsud 1 0, tdpbusd 0 1, tdpbuud 0 0). */
void amx_emu_dp(int dst, int src1, int src2, int sign1, int sign2);

#undef _tile_loadd
#undef _tile_stream_loadd
#undef _tile_stored
#undef _tile_zero
#undef _tile_dpbssd
#undef _tile_dpbsud
#undef _tile_dpbusd
#undef _tile_dpbuud
#define _tile_loadconfig(config) amx_emu_loadconfig(config)
#define _tile_release() amx_emu_release()
#define _tile_loadd(t, base, stride) amx_emu_loadd(t, base, (size_t)(stride))
#define _tile_stream_loadd(t, base, stride) amx_emu_loadd(t, base, (size_t)(stride))
#define _tile_stored(t, base, stride) amx_emu_stored(t, base, (size_t)(stride))
#define _tile_zero(t) amx_emu_zero(t)
#define _tile_dpbssd(d, a, b) amx_emu_dp(d, a, b, 1, 1)
#define _tile_dpbsud(d, a, b) amx_emu_dp(d, a, b, 1, 0)
#define _tile_dpbusd(d, a, b) amx_emu_dp(d, a, b, 0, 1)
#define _tile_dpbuud(d, a, b) amx_emu_dp(d, a, b, 0, 0)

#endif /* GGUF_TESTS_AMX_EMU_H */
