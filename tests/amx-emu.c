/* amx-emu.c -- the tile instructions of amx-emu.h, and the amx level's
 * test of the CPU: usable wherever the VNNI kernels beside the tiles run. */
#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/dot.h"
#include "tests/amx-emu.h"

enum { TILES = 8, ROWS = 16, COLSB = 64 };

struct state {
    int configured;
    uint8_t rows[TILES];
    uint16_t colsb[TILES];
    uint8_t t[TILES][ROWS][COLSB];
};
static _Thread_local struct state st;

static void fault(const char *what, int tile)
{
    fprintf(stderr, "amx-emu: %s (tile %d): the processor would fault here\n", what, tile);
    abort();
}

/* Tile `tile` configured and usable. */
static void usable(int tile)
{
    if (tile < 0 || tile >= TILES) fault("no such tile", tile);
    if (!st.configured) fault("tile used without a configuration", tile);
    if (st.rows[tile] == 0 || st.colsb[tile] == 0) fault("tile not configured", tile);
}

void amx_emu_loadconfig(const void *config)
{
    uint8_t c[64];
    memcpy(c, config, sizeof c);
    memset(&st, 0, sizeof st);
    if (c[0] == 0) return; /* palette 0: the initial state */
    if (c[0] != 1) fault("palette other than 1", -1);
    if (c[1] != 0) fault("start_row not 0", -1);
    for (int i = 2; i < 16; i++)
        if (c[i]) fault("reserved configuration byte not 0", -1);
    for (int i = 0; i < 16; i++) {
        const uint16_t colsb = (uint16_t)(c[16 + 2 * i] | c[17 + 2 * i] << 8);
        const uint8_t rows = c[48 + i];
        if (i >= TILES) {
            if (colsb || rows) fault("tile past the palette configured", i);
            continue;
        }
        if (colsb > COLSB || rows > ROWS) fault("tile larger than the palette allows", i);
        if ((colsb == 0) != (rows == 0)) fault("tile with rows but no columns, or columns but no rows", i);
        st.colsb[i] = colsb;
        st.rows[i] = rows;
    }
    st.configured = 1;
}

void amx_emu_release(void)
{
    memset(&st, 0, sizeof st);
}

void amx_emu_loadd(int tile, const void *base, size_t stride)
{
    usable(tile);
    memset(st.t[tile], 0, sizeof st.t[tile]);
    for (int r = 0; r < st.rows[tile]; r++)
        memcpy(st.t[tile][r], (const uint8_t *)base + (size_t)r * stride, st.colsb[tile]);
}

void amx_emu_stored(int tile, void *base, size_t stride)
{
    usable(tile);
    for (int r = 0; r < st.rows[tile]; r++)
        memcpy((uint8_t *)base + (size_t)r * stride, st.t[tile][r], st.colsb[tile]);
}

void amx_emu_zero(int tile)
{
    usable(tile);
    memset(st.t[tile], 0, sizeof st.t[tile]);
}

void amx_emu_dp(int dst, int src1, int src2, int sign1, int sign2)
{
    usable(dst);
    usable(src1);
    usable(src2);
    if (dst == src1 || dst == src2 || src1 == src2) fault("tile product with a tile twice", dst);
    /* dst: M x N dwords; src1: M x K quads; src2: K x N quads */
    const int m = st.rows[dst], k = st.colsb[src1] / 4, n = st.colsb[dst] / 4;
    if (st.colsb[dst] % 4 || st.colsb[src1] % 4 || st.colsb[src2] % 4) fault("tile columns not whole dwords", dst);
    if (st.rows[src1] != m || st.rows[src2] != k || st.colsb[src2] != st.colsb[dst])
        fault("tile product of shapes that do not fit", dst);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            uint32_t acc;
            memcpy(&acc, st.t[dst][i] + 4 * j, 4);
            for (int q = 0; q < k; q++)
                for (int b = 0; b < 4; b++) {
                    const uint8_t x = st.t[src1][i][4 * q + b], y = st.t[src2][q][4 * j + b];
                    const int32_t xv = sign1 ? (int8_t)x : x, yv = sign2 ? (int8_t)y : y;
                    acc += (uint32_t)(xv * yv);
                }
            memcpy(st.t[dst][i] + 4 * j, &acc, 4);
        }
}

/* The amx level's kernels use AVX-512 VNNI beside the tiles. */
int gq_amx_usable(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}
