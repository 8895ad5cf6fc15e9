/*
 * blocks.h -- the block formats of the quantized tensor types; internal to
 * quant/, not installed.
 *
 * One struct per format, laid out exactly as the bytes of a GGUF file (the
 * ggml layouts).  Multi-byte fields are little-endian, i.e. host order on
 * the machines this library targets.  Half-float fields are kept as their
 * uint16_t bits and converted with quant/half.h.  The structs are packed
 * (alignment 1) so that a row may start at any address; none of them has
 * padding, so the sizes are those of the file format, checked below against
 * the type table of gguf/types.c.
 *
 * In the diagrams each cell is one byte offset range; "h" is an IEEE half,
 * "u8"/"i8" bytes, "u4" two 4-bit values per byte (low nibble first).
 */
#ifndef GGUF_QUANT_BLOCKS_H
#define GGUF_QUANT_BLOCKS_H

#include <stdint.h>

#define GQ_PACKED __attribute__((packed))

/* Elements per block: legacy formats and K-quant super-blocks. */
#define GQ_QK 32
#define GQ_QK_K 256

/* Q4_0: 32 weights, w = d * (q - 8), q in 0..15.
 *
 *   0      2                        18
 *   +------+------------------------+
 *   | d  h | qs  u4 x 16            |
 *   +------+------------------------+
 *   qs[j] low nibble: weight j, high nibble: weight j + 16.
 */
struct gq_block_q4_0 {
    uint16_t d;
    uint8_t qs[GQ_QK / 2];
} GQ_PACKED;
_Static_assert(sizeof(struct gq_block_q4_0) == 18, "Q4_0 block is 18 bytes");

/* Q4_1: 32 weights, w = d * q + m, q in 0..15.
 *
 *   0      2      4                        20
 *   +------+------+------------------------+
 *   | d  h | m  h | qs  u4 x 16            |
 *   +------+------+------------------------+
 *   qs as in Q4_0.
 */
struct gq_block_q4_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qs[GQ_QK / 2];
} GQ_PACKED;
_Static_assert(sizeof(struct gq_block_q4_1) == 20, "Q4_1 block is 20 bytes");

/* Q5_0: 32 weights, w = d * (q - 16), q in 0..31.
 *
 *   0      2             6                        22
 *   +------+-------------+------------------------+
 *   | d  h | qh  32 bits | qs  u4 x 16            |
 *   +------+-------------+------------------------+
 *   Low 4 bits of q as Q4_0's qs; bit 4 of weight j is bit j of qh
 *   (qh read as a little-endian uint32).
 */
struct gq_block_q5_0 {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[GQ_QK / 2];
} GQ_PACKED;
_Static_assert(sizeof(struct gq_block_q5_0) == 22, "Q5_0 block is 22 bytes");

/* Q5_1: 32 weights, w = d * q + m, q in 0..31.
 *
 *   0      2      4             8                        24
 *   +------+------+-------------+------------------------+
 *   | d  h | m  h | qh  32 bits | qs  u4 x 16            |
 *   +------+------+-------------+------------------------+
 *   qh and qs as in Q5_0.
 */
struct gq_block_q5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[GQ_QK / 2];
} GQ_PACKED;
_Static_assert(sizeof(struct gq_block_q5_1) == 24, "Q5_1 block is 24 bytes");

/* Q8_0: 32 weights, w = d * q, q in -127..127.
 *
 *   0      2                                 34
 *   +------+---------------------------------+
 *   | d  h | qs  i8 x 32                     |
 *   +------+---------------------------------+
 */
struct gq_block_q8_0 {
    uint16_t d;
    int8_t qs[GQ_QK];
} GQ_PACKED;
_Static_assert(sizeof(struct gq_block_q8_0) == 34, "Q8_0 block is 34 bytes");

/* Q8_K: 256 weights, w = d * q; the intermediate format of K-quant dot
 * products (d is a float, not a half).
 *
 *   0         4                          260                 292
 *   +---------+--------------------------+-------------------+
 *   | d  f32  | qs  i8 x 256             | bsums  i16 x 16   |
 *   +---------+--------------------------+-------------------+
 *   bsums[k] = sum of qs[16k .. 16k+15].
 */
struct gq_block_q8_k {
    float d;
    int8_t qs[GQ_QK_K];
    int16_t bsums[GQ_QK_K / 16];
} GQ_PACKED;
_Static_assert(sizeof(struct gq_block_q8_k) == 292, "Q8_K block is 292 bytes");

/* Q2_K: 256 weights in 16 groups of 16; group g has a 4-bit scale sc and
 * min mn, w = d * sc * q - dmin * mn, q in 0..3.
 *
 *   0                 16                         80     82     84
 *   +-----------------+--------------------------+------+------+
 *   | scales  u8 x 16 | qs  2 bits x 256         | d  h | dmin h|
 *   +-----------------+--------------------------+------+------+
 *   scales[g]: low nibble sc, high nibble mn.  Weight e (0..255): half
 *   h = e / 128, r = e % 128; q = (qs[32h + r % 32] >> 2 * (r / 32)) & 3.
 */
struct gq_block_q2_k {
    uint8_t scales[GQ_QK_K / 16];
    uint8_t qs[GQ_QK_K / 4];
    uint16_t d;
    uint16_t dmin;
} GQ_PACKED;
_Static_assert(sizeof(struct gq_block_q2_k) == 84, "Q2_K block is 84 bytes");

/* Q3_K: 256 weights in 16 groups of 16; group g has a signed 6-bit scale
 * sc, w = d * sc * q, q in -4..3.
 *
 *   0                 32                         96            108    110
 *   +-----------------+--------------------------+-------------+------+
 *   | hmask  u8 x 32  | qs  2 bits x 256         | scales  12  | d  h |
 *   +-----------------+--------------------------+-------------+------+
 *   Low 2 bits of q + 4 as Q2_K's qs.  Bit 2 (the "no minus 4" bit) of
 *   weight e is bit e / 32 of hmask[e % 32].  Scales (sc + 32, 6 bits):
 *   group g < 8 low nibble of scales[g], g >= 8 high nibble of
 *   scales[g - 8]; bits 4-5 of group g at bits 2 * (g / 4) of
 *   scales[8 + g % 4].
 */
struct gq_block_q3_k {
    uint8_t hmask[GQ_QK_K / 8];
    uint8_t qs[GQ_QK_K / 4];
    uint8_t scales[12];
    uint16_t d;
} GQ_PACKED;
_Static_assert(sizeof(struct gq_block_q3_k) == 110, "Q3_K block is 110 bytes");

/* Q4_K: 256 weights in 8 groups of 32; group g has a 6-bit scale sc and
 * min mn, w = d * sc * q - dmin * mn, q in 0..15.
 *
 *   0      2      4             16                                144
 *   +------+------+-------------+---------------------------------+
 *   | d  h | dmin | scales  12  | qs  u4 x 128                    |
 *   +------+------+-------------+---------------------------------+
 *   Scales and mins (6 bits each, see gq_k4_scale_min): groups 0-3 in
 *   the low 6 bits of scales[g] (sc) and scales[g + 4] (mn); groups 4-7:
 *   low 4 bits in the nibbles of scales[g + 4] (sc low, mn high), top 2
 *   bits in bits 6-7 of scales[g - 4] (sc) and scales[g] (mn).
 *   qs: chunk c (0..3) of 32 bytes holds groups 2c (low nibbles) and
 *   2c + 1 (high nibbles).
 */
struct gq_block_q4_k {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qs[GQ_QK_K / 2];
} GQ_PACKED;
_Static_assert(sizeof(struct gq_block_q4_k) == 144, "Q4_K block is 144 bytes");

/* Q5_K: Q4_K with a fifth bit per weight, q in 0..31.
 *
 *   0      2      4             16                 48                 176
 *   +------+------+-------------+------------------+------------------+
 *   | d  h | dmin | scales  12  | qh  u8 x 32      | qs  u4 x 128     |
 *   +------+------+-------------+------------------+------------------+
 *   Scales and qs as in Q4_K; bit 4 of weight 32g + l is bit g of qh[l].
 */
struct gq_block_q5_k {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qh[GQ_QK_K / 8];
    uint8_t qs[GQ_QK_K / 2];
} GQ_PACKED;
_Static_assert(sizeof(struct gq_block_q5_k) == 176, "Q5_K block is 176 bytes");

/* Q6_K: 256 weights in 16 groups of 16; group g has a signed 8-bit scale,
 * w = d * scales[g] * (q - 32), q in 0..63.
 *
 *   0                        128              192               208    210
 *   +------------------------+----------------+-----------------+------+
 *   | ql  u4 x 256           | qh  2 bits x256| scales  i8 x 16 | d  h |
 *   +------------------------+----------------+-----------------+------+
 *   Weight e: half h = e / 128, r = e % 128, l = r % 32, k = r / 32.
 *   Low 4 bits: ql[64h + l + 32 * (k & 1)], low nibble for k < 2, high
 *   nibble for k >= 2.  High 2 bits: (qh[32h + l] >> 2k) & 3.
 */
struct gq_block_q6_k {
    uint8_t ql[GQ_QK_K / 2];
    uint8_t qh[GQ_QK_K / 4];
    int8_t scales[GQ_QK_K / 16];
    uint16_t d;
} GQ_PACKED;
_Static_assert(sizeof(struct gq_block_q6_k) == 210, "Q6_K block is 210 bytes");

/* The 6-bit scale and min of group g (0..7) of a Q4_K/Q5_K block. */
static inline void gq_k4_scale_min(const uint8_t *scales, int g, uint8_t *sc, uint8_t *mn)
{
    if (g < 4) {
        *sc = scales[g] & 63;
        *mn = scales[g + 4] & 63;
    } else {
        *sc = (uint8_t)((scales[g + 4] & 0xf) | ((scales[g - 4] >> 6) << 4));
        *mn = (uint8_t)((scales[g + 4] >> 4) | ((scales[g] >> 6) << 4));
    }
}

/* The signed scale of group g (0..15) of a Q3_K block, in -32..31. */
static inline int gq_k3_scale(const uint8_t *scales, int g)
{
    int lo = g < 8 ? scales[g] & 0xf : scales[g - 8] >> 4;
    int hi = (scales[8 + g % 4] >> (2 * (g / 4))) & 3;
    return (lo | (hi << 4)) - 32;
}

#endif /* GGUF_QUANT_BLOCKS_H */
