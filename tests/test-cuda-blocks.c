/*
 * test-cuda-blocks.c -- the arithmetic of the CUDA kernels on weight
 * blocks (infer/cuda/qblocks.h), compiled here for the host, against
 * quant/'s scalar kernels.  It runs in every build, with or without CUDA
 * or a GPU: the byte layouts and formulas a CUDA kernel applies per
 * thread are these functions, so a misread bit fails here first.
 *
 * For every type the kernels compute, rows of random weights (quantized
 * with libgguf, with scales and minima of both signs and subnormal
 * halves among them):
 *   - each segment's dequantization equals gguf_dequantize_row()'s floats
 *     bit for bit (the same operations in the same order; this file is
 *     compiled with -ffp-contract=off so neither side fuses);
 *   - each segment's dot product with 8-bit activations (qc_quant_seg())
 *     equals the float64 sum of dequantized weights times dequantized
 *     activations within 1e-5 of the sum of the products' magnitudes
 *     (the integer part is exact; only the float scaling rounds);
 *   - qc_dot_float_seg() likewise for F32, F16 and BF16 against floats.
 * Also: qc_h2f() against gguf_fp16_to_fp32() for all 65536 halves, and
 * qc_quant_seg()'s rounding bound.
 */
#include <config.h>

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "infer/cuda/qblocks.h"
#include "quant/quant.h"
#include "tests/testutil.h"

#define COLS 1024 /* four K-quant super-blocks, 32 segments */
#define ROWS 24

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double uniform(void) /* [0, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* Row r of the test weights: mostly N(0, s) with s varying by row (tiny
 * rows make subnormal half scales), some rows all positive or negative so
 * that minima of both signs appear. */
static void make_row(float *x, int r)
{
    const double scale = r % 6 == 5 ? 1e-6 : 0.02 * (1 + r % 4);
    for (int i = 0; i < COLS; i++) {
        double u1 = uniform() + 1e-12, u2 = uniform();
        double v = sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2) * scale;
        if (r % 7 == 3) v = fabs(v);
        if (r % 7 == 4) v = -fabs(v) - scale;
        x[i] = (float)v;
    }
}

static int same_bits(float a, float b)
{
    uint32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x == y;
}

static void check_halves(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float a = qc_h2f(h), b = gguf_fp16_to_fp32((uint16_t)h);
        if (!same_bits(a, b) && !(isnan(a) && isnan(b))) bad++;
    }
    CHECK(bad == 0, "%d halves convert differently", bad);
    for (uint32_t h = 0; h < 65536; h += 257)
        CHECK(same_bits(qc_bf2f(h), gguf_bf16_to_fp32((uint16_t)h)) || isnan(qc_bf2f(h)),
              "bf16 %#x", h);
}

static void check_quant_seg(void)
{
    float x[32];
    int8_t q[32] __attribute__((aligned(4)));
    for (int r = 0; r < 64; r++) {
        for (int l = 0; l < 32; l++) x[l] = (float)((uniform() - 0.5) * (r + 1));
        if (r == 0) memset(x, 0, sizeof x);
        float d, s;
        qc_quant_seg(x, q, &d, &s);
        int sum = 0, amax = 0;
        for (int l = 0; l < 32; l++) {
            sum += q[l];
            if (abs(q[l]) > amax) amax = abs(q[l]);
            CHECK(fabsf(q[l] * d - x[l]) <= d * 0.5f * 1.0001f, "segment %d element %d", r, l);
        }
        CHECK(amax <= 127, "segment %d: |q| %d", r, amax);
        CHECK(r == 0 || amax == 127, "segment %d: largest |q| %d, not 127", r, amax);
        CHECK(s == d * (float)sum, "segment %d: s %g, d * sum %g", r, s, d * (float)sum);
    }
}

static const uint32_t types[] = {
    GGUF_T_F32,  GGUF_T_F16,  GGUF_T_BF16, GGUF_T_Q4_0, GGUF_T_Q4_1, GGUF_T_Q5_0, GGUF_T_Q5_1,
    GGUF_T_Q8_0, GGUF_T_Q2_K, GGUF_T_Q3_K, GGUF_T_Q4_K, GGUF_T_Q5_K, GGUF_T_Q6_K,
};

static void check_type(uint32_t t)
{
    const char *name = gguf_type_str(t);
    CHECK(qc_type_ok(t), "%s: not a CUDA type", name);
    const uint64_t rb = gguf_row_bytes(t, COLS);
    unsigned char *w = malloc(rb * ROWS);
    float *x = malloc(sizeof *x * COLS), *deq = malloc(sizeof *deq * COLS);
    REQUIRE(w && x && deq, "out of memory");
    for (int r = 0; r < ROWS; r++) {
        make_row(x, r);
        REQUIRE(gguf_quantize_row(t, x, w + rb * r, COLS) == GGUF_OK, "%s: quantize", name);
    }
    int bad_deq = 0, bad_dot = 0;
    double worst = 0.0;
    for (int r = 0; r < ROWS; r++) {
        const unsigned char *row = w + rb * r;
        REQUIRE(gguf_dequantize_row(t, row, deq, COLS) == GGUF_OK, "%s: dequantize", name);
        for (int64_t s = 0; s < COLS / 32; s++) {
            float seg[32];
            qc_deq_seg(t, row, s, seg);
            for (int l = 0; l < 32; l++)
                if (!same_bits(seg[l], deq[32 * s + l])) {
                    if (bad_deq++ < 5)
                        fprintf(stderr, "%s row %d segment %" PRId64 " element %d: %.9g, want %.9g\n",
                                name, r, s, l, seg[l], deq[32 * s + l]);
                }
            /* activations: random, of another scale per segment */
            float a[32], ad[32];
            int8_t q[32] __attribute__((aligned(4)));
            for (int l = 0; l < 32; l++) a[l] = (float)((uniform() - 0.5) * (1 + s % 5));
            float d8, s8;
            qc_quant_seg(a, q, &d8, &s8);
            for (int l = 0; l < 32; l++) ad[l] = d8 * (float)q[l];
            double want = 0.0, mag = 0.0, got;
            if (qc_type_quantized(t)) {
                for (int l = 0; l < 32; l++) {
                    want += (double)deq[32 * s + l] * ad[l];
                    mag += fabs((double)deq[32 * s + l] * ad[l]);
                }
                got = qc_dot_seg(t, row, s, q, d8, s8);
            } else {
                for (int l = 0; l < 32; l++) {
                    want += (double)deq[32 * s + l] * a[l];
                    mag += fabs((double)deq[32 * s + l] * a[l]);
                }
                got = qc_dot_float_seg(t, row, s, a);
            }
            const double e = fabs(got - want) / (mag > 0 ? mag : 1.0);
            if (e > worst) worst = e;
            if (!(e <= 1e-5) && bad_dot++ < 5)
                fprintf(stderr, "%s row %d segment %" PRId64 ": dot %.9g, want %.9g\n", name, r,
                        s, got, want);
        }
    }
    CHECK(bad_deq == 0, "%s: %d dequantized weights differ from quant/'s", name, bad_deq);
    CHECK(bad_dot == 0, "%s: %d segment dot products off (worst %.3g)", name, bad_dot, worst);
    printf("%-5s dequantization exact, dot products within %.2g\n", name, worst);
    free(w);
    free(x);
    free(deq);
}

int main(void)
{
    check_halves();
    check_quant_seg();
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) check_type(types[i]);
    /* what the kernels refuse */
    CHECK(!qc_type_ok(GGUF_T_IQ2_XS) && !qc_type_ok(GGUF_T_Q8_K) && !qc_type_ok(GGUF_T_COUNT),
          "types without kernels accepted");
    tu_finish();
}
