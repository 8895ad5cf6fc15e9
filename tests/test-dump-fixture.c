/*
 * test-dump-fixture -- writes a small GGUF file whose metadata exercises
 * every value type and the corners of gguf-dump's output: extreme integers,
 * floats that need care (1e-6, 1/3, NaN, infinities), control characters
 * and invalid UTF-8 in strings, keys and tensor names, nested arrays, an
 * empty string, a zero-sized tensor and a non-default alignment.
 *
 *   test-dump-fixture [-b] [-v VERSION] FILE
 *
 * -b writes a big-endian file, -v 1|2|3 the GGUF version (default 3).
 * The bytes are laid out here directly (not through libgguf's writer), so
 * that the dump tests do not depend on the writer and can produce nested
 * arrays and big-endian files.  The expected values are listed in
 * tests/test-dump-escape.sh; keep the two in step.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/bytes.h"

enum { U8 = 0, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 };

#define STRLIT(s) s, sizeof s - 1

struct tensor {
    const char *name;
    uint32_t type;
    uint32_t n_dims;
    uint64_t ne[4];
    uint64_t size;      /* bytes */
    uint64_t offset;    /* relative to the data section */
};

#define ALIGN 64u

int main(int argc, char **argv)
{
    const char *path = NULL;
    int big = 0, version = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-b"))
            big = 1;
        else if (!strcmp(argv[i], "-v") && i + 1 < argc)
            version = atoi(argv[++i]);
        else if (!path)
            path = argv[i];
        else
            path = NULL, i = argc;
    }
    if (!path || version < 1 || version > 3) {
        fprintf(stderr, "usage: test-dump-fixture [-b] [-v 1|2|3] FILE\n");
        return 99;
    }

    static struct tensor tensors[] = {
        { "weird\x1b[31m\xff name", 0, 1, { 4 }, 16, 0 },         /* F32 */
        { "w.f16", 1, 2, { 8, 2 }, 32, 0 },                       /* F16 */
        { "w.q8", 8, 2, { 32, 2 }, 68, 0 },                       /* Q8_0 */
        { "zero", 0, 2, { 4, 0 }, 0, 0 },                         /* F32, no data */
    };
    const size_t n_tensors = sizeof tensors / sizeof tensors[0];
    uint64_t off = 0;
    for (size_t i = 0; i < n_tensors; i++) {
        off = (off + ALIGN - 1) / ALIGN * ALIGN;
        tensors[i].offset = off;
        off += tensors[i].size;
    }
    uint64_t data_size = off;

    const uint64_t n_kv = 31;
    struct bytes o = b_header((uint32_t)version, big, n_tensors, n_kv);

    b_key(&o, "general.architecture", STR);
    b_str(&o, STRLIT("testarch"));
    b_key(&o, "general.name", STR);
    /* controls, quote, backslash, valid 2-byte UTF-8 (e-acute), a stray
     * 0xff, an overlong NUL (c0 80), a surrogate (ed a0 80), a C1 CSI (c2 9b),
     * a 4-byte emoji */
    b_str(&o, STRLIT("a\n\t\x01\x7f\"\\ \xc3\xa9 \xff \xc0\x80 \xed\xa0\x80 \xc2\x9b \xf0\x9f\x98\x80 z"));
    b_key(&o, "testarch.u8", U8);
    b_u8(&o, 255);
    b_key(&o, "testarch.i8", I8);
    b_u8(&o, 0x80);
    b_key(&o, "testarch.u16", U16);
    b_u16(&o, 65535);
    b_key(&o, "testarch.i16", I16);
    b_u16(&o, 0x8000);
    b_key(&o, "testarch.u32", U32);
    b_u32(&o, 4294967295u);
    b_key(&o, "testarch.i32", I32);
    b_u32(&o, 0x80000000u);
    b_key(&o, "testarch.u64", U64);
    b_u64(&o, UINT64_MAX);
    b_key(&o, "testarch.i64", I64);
    b_u64(&o, UINT64_C(0x8000000000000000));
    b_key(&o, "testarch.f32", F32);
    b_f32(&o, 1e-6f);
    b_key(&o, "testarch.third", F32);
    b_f32(&o, 1.0f / 3.0f);
    b_key(&o, "testarch.f64", F64);
    b_f64(&o, 0.1);
    b_key(&o, "testarch.big", F64);
    b_f64(&o, 1e300);
    b_key(&o, "testarch.nan", F32);
    b_f32(&o, NAN);
    b_key(&o, "testarch.inf", F32);
    b_f32(&o, INFINITY);
    b_key(&o, "testarch.ninf", F64);
    b_f64(&o, -INFINITY);
    b_key(&o, "testarch.yes", BOOL);
    b_u8(&o, 1);
    b_key(&o, "testarch.no", BOOL);
    b_u8(&o, 0);
    b_key(&o, "testarch.empty", STR);
    b_str(&o, "", 0);
    b_key(&o, "testarch.ints", ARR);            /* 0, 7, 14, ... 693 minus 300 */
    b_arr(&o, I32, 100);
    for (int i = 0; i < 100; i++) b_u32(&o, (uint32_t)(i * 7 - 300));
    b_key(&o, "testarch.strs", ARR);
    b_arr(&o, STR, 6);
    b_str(&o, STRLIT("plain"));
    b_str(&o, STRLIT("tab\there"));
    b_str(&o, STRLIT("nl\n"));
    b_str(&o, STRLIT("\xff"));
    b_str(&o, STRLIT("\xc3\xa9"));
    b_str(&o, "", 0);
    b_key(&o, "testarch.nested", ARR);          /* [[1, 2], [3], []] of INT16 */
    b_arr(&o, ARR, 3);
    b_arr(&o, I16, 2);
    b_u16(&o, 1);
    b_u16(&o, 2);
    b_arr(&o, I16, 1);
    b_u16(&o, 3);
    b_arr(&o, I16, 0);
    b_key(&o, "testarch.f32s", ARR);
    b_arr(&o, F32, 4);
    b_f32(&o, 0.5f);
    b_f32(&o, -2.0f);
    b_f32(&o, NAN);
    b_f32(&o, -INFINITY);
    b_key(&o, "testarch.bools", ARR);
    b_arr(&o, BOOL, 3);
    b_u8(&o, 1);
    b_u8(&o, 0);
    b_u8(&o, 1);
    b_key(&o, "testarch.u64s", ARR);
    b_arr(&o, U64, 2);
    b_u64(&o, 0);
    b_u64(&o, UINT64_MAX);
    b_key(&o, "testarch.empty_arr", ARR);
    b_arr(&o, U32, 0);
    b_key(&o, "key\twith\x01" "ctl", U8);
    b_u8(&o, 7);
    b_key(&o, "general.file_type", U32);
    b_u32(&o, 1);
    b_key(&o, "general.alignment", U32);
    b_u32(&o, ALIGN);
    b_key(&o, "other.block_count", U32);        /* not a hyperparameter of testarch */
    b_u32(&o, 5);

    for (size_t i = 0; i < n_tensors; i++) {
        const struct tensor *t = &tensors[i];
        b_tensor(&o, t->name, t->type, t->n_dims, t->ne, t->offset);
    }
    b_pad(&o, ALIGN);
    for (uint64_t i = 0; i < data_size; i++) b_u8(&o, (uint8_t)(i * 37 + 11));

    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(o.p, 1, o.n, fp) != o.n || fclose(fp) != 0) {
        perror(path);
        return 99;
    }
    free(o.p);
    return 0;
}
