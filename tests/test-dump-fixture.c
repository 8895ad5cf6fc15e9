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

struct out {
    unsigned char *p;
    size_t len, cap;
    int big;            /* write multi-byte numbers big-endian */
    int version;        /* 1: 32-bit counts and lengths */
};

static void grow(struct out *o, size_t n)
{
    if (o->len + n <= o->cap) return;
    size_t cap = o->cap ? o->cap : 4096;
    while (cap < o->len + n) cap *= 2;
    o->p = realloc(o->p, cap);
    if (!o->p) {
        fprintf(stderr, "test-dump-fixture: out of memory\n");
        exit(99);
    }
    o->cap = cap;
}

static void put_bytes(struct out *o, const void *s, size_t n)
{
    grow(o, n);
    memcpy(o->p + o->len, s, n);
    o->len += n;
}

/* Appends the n-byte unsigned v in the file's byte order. */
static void put_num(struct out *o, uint64_t v, int n)
{
    unsigned char b[8];
    for (int i = 0; i < n; i++) {
        int shift = o->big ? 8 * (n - 1 - i) : 8 * i;
        b[i] = (unsigned char)(v >> shift);
    }
    put_bytes(o, b, (size_t)n);
}

static void put_len(struct out *o, uint64_t v)
{
    put_num(o, v, o->version == 1 ? 4 : 8);
}

static void put_str(struct out *o, const char *s, size_t n)
{
    put_len(o, n);
    put_bytes(o, s, n);
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint64_t f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

enum { U8 = 0, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 };

/* Begins a KV pair: key and value type. */
static void kv(struct out *o, const char *key, size_t keylen, uint32_t type)
{
    put_str(o, key, keylen);
    put_num(o, type, 4);
}
#define KV(o, key, type) kv(o, key, sizeof key - 1, type)
#define STRLIT(s) s, sizeof s - 1

static void arr_head(struct out *o, uint32_t elem, uint64_t n)
{
    put_num(o, elem, 4);
    put_len(o, n);
}

struct tensor {
    const char *name;
    size_t name_len;
    uint32_t type;
    uint32_t n_dims;
    uint64_t ne[4];
    uint64_t size;      /* bytes */
    uint64_t offset;    /* relative to the data section */
};

#define ALIGN 64u

int main(int argc, char **argv)
{
    struct out o = { 0 };
    const char *path = NULL;
    o.version = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-b"))
            o.big = 1;
        else if (!strcmp(argv[i], "-v") && i + 1 < argc)
            o.version = atoi(argv[++i]);
        else if (!path)
            path = argv[i];
        else
            path = NULL, i = argc;
    }
    if (!path || o.version < 1 || o.version > 3) {
        fprintf(stderr, "usage: test-dump-fixture [-b] [-v 1|2|3] FILE\n");
        return 99;
    }

    static struct tensor tensors[] = {
        { STRLIT("weird\x1b[31m\xff name"), 0, 1, { 4 }, 16, 0 },      /* F32 */
        { STRLIT("w.f16"), 1, 2, { 8, 2 }, 32, 0 },                     /* F16 */
        { STRLIT("w.q8"), 8, 2, { 32, 2 }, 68, 0 },                     /* Q8_0 */
        { STRLIT("zero"), 0, 2, { 4, 0 }, 0, 0 },                       /* F32, no data */
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
    put_bytes(&o, "GGUF", 4);
    put_num(&o, (uint64_t)o.version, 4);
    put_len(&o, n_tensors);
    put_len(&o, n_kv);

    KV(&o, "general.architecture", STR);
    put_str(&o, STRLIT("testarch"));
    KV(&o, "general.name", STR);
    /* controls, quote, backslash, valid 2-byte UTF-8 (e-acute), a stray
     * 0xff, an overlong NUL (c0 80), a surrogate (ed a0 80), a C1 CSI (c2 9b),
     * a 4-byte emoji */
    put_str(&o, STRLIT("a\n\t\x01\x7f\"\\ \xc3\xa9 \xff \xc0\x80 \xed\xa0\x80 \xc2\x9b \xf0\x9f\x98\x80 z"));
    KV(&o, "testarch.u8", U8);
    put_num(&o, 255, 1);
    KV(&o, "testarch.i8", I8);
    put_num(&o, 0x80, 1);
    KV(&o, "testarch.u16", U16);
    put_num(&o, 65535, 2);
    KV(&o, "testarch.i16", I16);
    put_num(&o, 0x8000, 2);
    KV(&o, "testarch.u32", U32);
    put_num(&o, 4294967295u, 4);
    KV(&o, "testarch.i32", I32);
    put_num(&o, 0x80000000u, 4);
    KV(&o, "testarch.u64", U64);
    put_num(&o, UINT64_MAX, 8);
    KV(&o, "testarch.i64", I64);
    put_num(&o, UINT64_C(0x8000000000000000), 8);
    KV(&o, "testarch.f32", F32);
    put_num(&o, f32_bits(1e-6f), 4);
    KV(&o, "testarch.third", F32);
    put_num(&o, f32_bits(1.0f / 3.0f), 4);
    KV(&o, "testarch.f64", F64);
    put_num(&o, f64_bits(0.1), 8);
    KV(&o, "testarch.big", F64);
    put_num(&o, f64_bits(1e300), 8);
    KV(&o, "testarch.nan", F32);
    put_num(&o, f32_bits(NAN), 4);
    KV(&o, "testarch.inf", F32);
    put_num(&o, f32_bits(INFINITY), 4);
    KV(&o, "testarch.ninf", F64);
    put_num(&o, f64_bits(-INFINITY), 8);
    KV(&o, "testarch.yes", BOOL);
    put_num(&o, 1, 1);
    KV(&o, "testarch.no", BOOL);
    put_num(&o, 0, 1);
    KV(&o, "testarch.empty", STR);
    put_str(&o, "", 0);
    KV(&o, "testarch.ints", ARR);           /* 0, 7, 14, ... 693 minus 300 */
    arr_head(&o, I32, 100);
    for (int i = 0; i < 100; i++) put_num(&o, (uint32_t)(i * 7 - 300), 4);
    KV(&o, "testarch.strs", ARR);
    arr_head(&o, STR, 6);
    put_str(&o, STRLIT("plain"));
    put_str(&o, STRLIT("tab\there"));
    put_str(&o, STRLIT("nl\n"));
    put_str(&o, STRLIT("\xff"));
    put_str(&o, STRLIT("\xc3\xa9"));
    put_str(&o, "", 0);
    KV(&o, "testarch.nested", ARR);         /* [[1, 2], [3], []] of INT16 */
    arr_head(&o, ARR, 3);
    arr_head(&o, I16, 2);
    put_num(&o, 1, 2);
    put_num(&o, 2, 2);
    arr_head(&o, I16, 1);
    put_num(&o, 3, 2);
    arr_head(&o, I16, 0);
    KV(&o, "testarch.f32s", ARR);
    arr_head(&o, F32, 4);
    put_num(&o, f32_bits(0.5f), 4);
    put_num(&o, f32_bits(-2.0f), 4);
    put_num(&o, f32_bits(NAN), 4);
    put_num(&o, f32_bits(-INFINITY), 4);
    KV(&o, "testarch.bools", ARR);
    arr_head(&o, BOOL, 3);
    put_num(&o, 1, 1);
    put_num(&o, 0, 1);
    put_num(&o, 1, 1);
    KV(&o, "testarch.u64s", ARR);
    arr_head(&o, U64, 2);
    put_num(&o, 0, 8);
    put_num(&o, UINT64_MAX, 8);
    KV(&o, "testarch.empty_arr", ARR);
    arr_head(&o, U32, 0);
    KV(&o, "key\twith\x01" "ctl", U8);
    put_num(&o, 7, 1);
    KV(&o, "general.file_type", U32);
    put_num(&o, 1, 4);
    KV(&o, "general.alignment", U32);
    put_num(&o, ALIGN, 4);
    KV(&o, "other.block_count", U32);        /* not a hyperparameter of testarch */
    put_num(&o, 5, 4);

    for (size_t i = 0; i < n_tensors; i++) {
        const struct tensor *t = &tensors[i];
        put_str(&o, t->name, t->name_len);
        put_num(&o, t->n_dims, 4);
        for (uint32_t d = 0; d < t->n_dims; d++) put_len(&o, t->ne[d]);
        put_num(&o, t->type, 4);
        put_num(&o, t->offset, 8);
    }
    size_t data_start = (o.len + ALIGN - 1) / ALIGN * ALIGN;
    grow(&o, data_start - o.len + data_size);
    memset(o.p + o.len, 0, data_start - o.len);
    o.len = data_start;
    for (uint64_t i = 0; i < data_size; i++) o.p[o.len++] = (unsigned char)(i * 37 + 11);

    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(o.p, 1, o.len, fp) != o.len || fclose(fp) != 0) {
        perror(path);
        return 99;
    }
    free(o.p);
    return 0;
}
