/* bytelevel.h -- GPT-2's byte-level alphabet, as the tests write
 * vocabularies with it: the printable bytes '!'..'~', 0xA1..0xAC and
 * 0xAE..0xFF stand for themselves (as code points of the same value), the
 * other 68 bytes, in increasing order, for U+0100, U+0101 ...  So space
 * (0x20) is U+0120 'Ġ' and newline U+010A 'Ċ'.  The tokenizer's own table
 * (infer/tokenizer.c) is kept apart on purpose: a test must not share the
 * code it checks. */
#ifndef TESTS_BYTELEVEL_H
#define TESTS_BYTELEVEL_H

#include <stddef.h>

/* 1 when byte b stands for itself. */
static inline int bl_printable(unsigned b)
{
    return (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
}

/* The code point that byte b is written as. */
static inline unsigned bl_code_point(unsigned b)
{
    if (bl_printable(b)) return b;
    unsigned rank = 0;
    for (unsigned x = 0; x < b; x++) rank += !bl_printable(x);
    return 0x100 + rank;
}

/* Writes the byte-level text of the n bytes at raw into out (room for 2 n
 * bytes: every code point is below U+0800).  Returns its length. */
static inline size_t bl_text(const void *raw, size_t n, char *out)
{
    const unsigned char *r = raw;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned c = bl_code_point(r[i]);
        if (c < 0x80) {
            out[o++] = (char)c;
        } else {
            out[o++] = (char)(0xc0 | c >> 6);
            out[o++] = (char)(0x80 | (c & 0x3f));
        }
    }
    return o;
}

#endif /* TESTS_BYTELEVEL_H */
