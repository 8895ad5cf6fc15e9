/*
 * test-write.c -- the GGUF writer.
 *
 *  1. Known answers: small files are serialized by hand here (v3 and v1
 *     little-endian, v2 big-endian) and the writer's output must equal them
 *     byte for byte, padding included.
 *  2. Round trip through the reader: KVs of every value type (NaN payloads,
 *     -0.0, denormals, strings with NUL and invalid UTF-8, empty strings and
 *     arrays, nested arrays copied from a hand-made file) and tensors of
 *     several types, written in odd chunk sizes, come back with the same
 *     order, types, bits, tensor infos and bytes; offsets are aligned and
 *     contiguous, padding is zero; for versions 1, 2, 3, both byte orders,
 *     and alignment 64.  copy_kv into a new writer gives identical bytes.
 *  3. Invalid input is refused with GGUF_E_INVALID and a message naming the
 *     item, leaving the writer usable.
 *  4. Failure paths: freeing before finish, too few or too many bytes, an
 *     unwritable or missing directory, a full device: no output and no
 *     temporary file remain, an existing target is untouched.  Output to a
 *     pipe and to standard output gives the same bytes as to a file.
 */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "tests/testutil.h"
#include "tests/bytes.h"

static char tmpdir[256];

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static int read_file(const char *path, struct bytes *out)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    out->n = 0;
    int rc = b_read(out, f);
    fclose(f);
    return rc;
}

static void path_in(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", tmpdir, name);
}

/* Number of entries in tmpdir (besides . and ..), and the first one's name. */
static int dir_entries(char *first, size_t n)
{
    DIR *d = opendir(tmpdir);
    if (!d) HARD_ERROR("opendir %s: %s", tmpdir, strerror(errno));
    int count = 0;
    struct dirent *e;
    if (first && n) first[0] = '\0';
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (count++ == 0 && first) snprintf(first, n, "%s", e->d_name);
    }
    closedir(d);
    return count;
}

static void clear_dir(void)
{
    DIR *d = opendir(tmpdir);
    if (!d) return;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
        unlink(p);
    }
    closedir(d);
}

static void ok(int rc, const gguf_error *err, const char *what)
{
    if (rc != GGUF_OK) HARD_ERROR("%s failed: %d %s", what, rc, err->message);
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static double u2d(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* ------------------------------------------------------------------------ */
/* 1. Known answers                                                          */

/* The writer's file for: KV "a" u32 7, "s" string "hi", "arr" u16 [1, 2],
 * "sa" string array ["x", ""], "b" bool 1, "f" f64 -0.0; tensor "t" F32 {2}
 * = bytes 1..8, tensor "u" I8 {3} = 9, 10, 11. */
static void kat_writer(gguf_writer *w)
{
    gguf_error err;
    static const uint16_t arr[2] = {1, 2};
    const gguf_str sa[2] = {{"x", 1}, {"", 0}};
    const uint64_t ne_t[1] = {2}, ne_u[1] = {3};
    ok(gguf_writer_add_u32(w, "a", 7, &err), &err, "add a");
    ok(gguf_writer_add_str(w, "s", "hi", 2, &err), &err, "add s");
    ok(gguf_writer_add_array(w, "arr", GGUF_VT_UINT16, arr, 2, &err), &err, "add arr");
    ok(gguf_writer_add_str_array(w, "sa", sa, 2, &err), &err, "add sa");
    ok(gguf_writer_add_bool(w, "b", 1, &err), &err, "add b");
    ok(gguf_writer_add_f64(w, "f", -0.0, &err), &err, "add f");
    ok(gguf_writer_add_tensor(w, "t", GGUF_T_F32, 1, ne_t, &err), &err, "tensor t");
    ok(gguf_writer_add_tensor(w, "u", GGUF_T_I8, 1, ne_u, &err), &err, "tensor u");
}

/* The bytes kat_writer must produce, laid out by hand. */
static struct bytes kat_expected(uint32_t version, int be)
{
    struct bytes s = b_header(version, be, 2, 6); /* 2 tensors, 6 KVs */
    b_key(&s, "a", GGUF_VT_UINT32);
    b_u32(&s, 7);
    b_key(&s, "s", GGUF_VT_STRING);
    b_str(&s, "hi", 2);
    b_key(&s, "arr", GGUF_VT_ARRAY);
    b_arr(&s, GGUF_VT_UINT16, 2);
    b_u16(&s, 1);
    b_u16(&s, 2);
    b_key(&s, "sa", GGUF_VT_ARRAY);
    b_arr(&s, GGUF_VT_STRING, 2);
    b_str(&s, "x", 1);
    b_str(&s, "", 0);
    b_key(&s, "b", GGUF_VT_BOOL);
    b_u8(&s, 1);
    b_key(&s, "f", GGUF_VT_FLOAT64);
    b_u64(&s, 0x8000000000000000ull);
    b_tensor(&s, "t", GGUF_T_F32, 1, (const uint64_t[]){2}, 0);
    b_tensor(&s, "u", GGUF_T_I8, 1, (const uint64_t[]){3}, 32); /* 8 bytes of t, padded to 32 */
    b_pad(&s, 32);
    const unsigned char t[8] = {1, 2, 3, 4, 5, 6, 7, 8}, u[3] = {9, 10, 11};
    b_put(&s, t, 8);
    b_pad(&s, 32);
    b_put(&s, u, 3);
    b_pad(&s, 32); /* the last tensor is padded too */
    return s;
}

static void test_known_answers(void)
{
    static const struct { uint32_t version; int be; } cases[] = {{3, 0}, {1, 0}, {2, 1}, {3, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        gguf_error err;
        char path[512];
        path_in(path, sizeof path, "kat.gguf");
        gguf_writer *w = gguf_writer_new();
        REQUIRE(w, "gguf_writer_new");
        ok(gguf_writer_set_version(w, cases[c].version, &err), &err, "set_version");
        ok(gguf_writer_set_byte_order(w, cases[c].be ? GGUF_BIG_ENDIAN : GGUF_LITTLE_ENDIAN, &err),
           &err, "set_byte_order");
        kat_writer(w);
        struct bytes s = kat_expected(cases[c].version, cases[c].be);
        /* data offset: header rounded up to 32; total includes trailing pad */
        CHECK(gguf_writer_total_size(w) == s.n, "v%u be%d: total size %llu, expected %zu",
              cases[c].version, cases[c].be, (unsigned long long)gguf_writer_total_size(w), s.n);
        CHECK(gguf_writer_data_offset(w) == s.n - 64, "v%u: data offset %llu", cases[c].version,
              (unsigned long long)gguf_writer_data_offset(w));
        ok(gguf_writer_open(w, path, &err), &err, "open");
        const unsigned char data[11] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
        /* One call spanning both tensors: the padding goes in between. */
        ok(gguf_writer_write(w, data, 11, &err), &err, "write");
        ok(gguf_writer_finish(w, &err), &err, "finish");
        gguf_writer_free(w);
        struct bytes got = {0};
        if (read_file(path, &got) < 0) HARD_ERROR("cannot read %s", path);
        CHECK(got.n == s.n && memcmp(got.p, s.p, s.n) == 0,
              "v%u be%d: writer output (%zu bytes) differs from the hand-made file (%zu bytes)",
              cases[c].version, cases[c].be, got.n, s.n);
        free(got.p);
        free(s.p);
        unlink(path);
    }
}

/* ------------------------------------------------------------------------ */
/* 2. Round trip                                                             */

/* Float bit patterns that a conversion through double would change or that
 * are easy to lose: signalling NaN, NaN payloads, -0.0, denormals, extremes. */
static const uint32_t odd_f32[] = {0x7f800001u, 0xffc00001u, 0x7fc12345u, 0x80000000u,
                                   0x00000001u, 0x807fffffu, 0x7f7fffffu, 0xff800000u};
static const uint64_t odd_f64[] = {0x7ff0000000000001ull, 0xfff8000000000123ull,
                                   0x8000000000000000ull, 0x0000000000000001ull,
                                   0x000fffffffffffffull, 0x7fefffffffffffffull,
                                   0xfff0000000000000ull};

static const uint8_t a_u8[] = {0, 1, 0x7f, 0x80, 0xff};
static const int8_t a_i8[] = {-128, -1, 0, 127};
static const uint16_t a_u16[] = {1, 0x8001, 0xffff};
static const int16_t a_i16[] = {-32768, 32767, -2};
static const uint32_t a_u32[] = {0xdeadbeefu, 0, 1};
static const int32_t a_i32[] = {INT32_MIN, INT32_MAX, -7};
static const uint64_t a_u64[] = {0xfedcba9876543210ull, 1};
static const int64_t a_i64[] = {INT64_MIN, INT64_MAX, -3};
static const uint8_t a_bool[] = {1, 0, 1, 1};
static const char str_odd[] = "a\0b\xff\xfe\xc0\x80z"; /* NUL, invalid UTF-8 */
#define STR_ODD_LEN (sizeof str_odd - 1)

/* The fixed-size arrays of the round trip, added and checked in this order. */
#define RT_ARRAY(key, vt, a) {key, vt, a, sizeof a / sizeof a[0]}
static const struct {
    const char *key;
    uint32_t vt;
    const void *data;
    uint64_t n;
} rt_arrays[] = {
    RT_ARRAY("t.a.u8", GGUF_VT_UINT8, a_u8),
    RT_ARRAY("t.a.i8", GGUF_VT_INT8, a_i8),
    RT_ARRAY("t.a.u16", GGUF_VT_UINT16, a_u16),
    RT_ARRAY("t.a.i16", GGUF_VT_INT16, a_i16),
    RT_ARRAY("t.a.u32", GGUF_VT_UINT32, a_u32),
    RT_ARRAY("t.a.i32", GGUF_VT_INT32, a_i32),
    RT_ARRAY("t.a.u64", GGUF_VT_UINT64, a_u64),
    RT_ARRAY("t.a.i64", GGUF_VT_INT64, a_i64),
    RT_ARRAY("t.a.f32", GGUF_VT_FLOAT32, odd_f32),
    RT_ARRAY("t.a.f64", GGUF_VT_FLOAT64, odd_f64),
    RT_ARRAY("t.a.bool", GGUF_VT_BOOL, a_bool),
};
#undef RT_ARRAY
#define N_RT_ARRAYS (sizeof rt_arrays / sizeof rt_arrays[0])

/* A GGUF v3 file, made by hand, with nested arrays (the writer's API can
 * only pass those on from a file):
 *   n.u16  [[1, 2], [3]]                 (array of u16 arrays)
 *   n.str  [[["a", "b\0"]], []]          (strings two levels down, an empty array)
 *   n.deep [[[[[[[[7]]]]]]]]             (8 levels, the most allowed)
 *   n.f32  [[<sNaN>, -0.0]]              (float bits inside nesting) */
static struct bytes nested_source(void)
{
    struct bytes s = b_header(3, 0, 0, 4); /* v3 little-endian, no tensor, 4 KVs */
    b_key(&s, "n.u16", GGUF_VT_ARRAY);
    b_arr(&s, GGUF_VT_ARRAY, 2);
    b_arr(&s, GGUF_VT_UINT16, 2);
    b_u16(&s, 1);
    b_u16(&s, 2);
    b_arr(&s, GGUF_VT_UINT16, 1);
    b_u16(&s, 3);
    b_key(&s, "n.str", GGUF_VT_ARRAY);
    b_arr(&s, GGUF_VT_ARRAY, 2);
    b_arr(&s, GGUF_VT_ARRAY, 1);
    b_arr(&s, GGUF_VT_STRING, 2);
    b_str(&s, "a", 1);
    b_str(&s, "b\0", 2);
    b_arr(&s, GGUF_VT_STRING, 0);
    b_key(&s, "n.deep", GGUF_VT_ARRAY);
    for (int d = 0; d < 7; d++) b_arr(&s, GGUF_VT_ARRAY, 1);
    b_arr(&s, GGUF_VT_UINT8, 1);
    b_u8(&s, 7);
    b_key(&s, "n.f32", GGUF_VT_ARRAY);
    b_arr(&s, GGUF_VT_ARRAY, 1);
    b_arr(&s, GGUF_VT_FLOAT32, 2);
    b_u32(&s, 0x7f800001u);
    b_u32(&s, 0x80000000u);
    b_pad(&s, 32);
    return s;
}

struct tdef {
    const char *name;
    uint32_t type, n_dims;
    uint64_t ne[4];
    uint64_t size;
};

static const char name64[] = /* 64 bytes, the longest allowed */
    "t.0123456789012345678901234567890123456789012345678901234567890x";

static const struct tdef tdefs[] = {
    {"tok.weight", GGUF_T_F32, 2, {3, 2, 1, 1}, 24},
    {"q8", GGUF_T_Q8_0, 2, {64, 2, 1, 1}, 136},
    {"h", GGUF_T_F16, 1, {5, 1, 1, 1}, 10},
    {"empty", GGUF_T_F32, 2, {0, 4, 1, 1}, 0},
    {"i8.4d", GGUF_T_I8, 4, {2, 3, 1, 2}, 12},
    {name64, GGUF_T_BF16, 1, {1, 1, 1, 1}, 2},
    {"q4k", GGUF_T_Q4_K, 3, {256, 1, 2, 1}, 288},
};
#define N_TDEFS (sizeof tdefs / sizeof tdefs[0])

static unsigned char tbyte(size_t t, uint64_t i)
{
    return (unsigned char)(i * 31 + 7 + t * 101);
}

/* Expected keys in order. */
static const char *const rt_keys[] = {
    "t.u8", "t.i8", "t.u16", "t.i16", "t.u32", "t.i32", "t.u64", "t.i64",
    "t.f32.snan", "t.f32.negzero", "t.f32.denorm", "t.f32.nan",
    "t.f64.snan", "t.f64.nan", "t.f64.negzero", "t.f64.denorm",
    "t.bool.1", "t.bool.0", "t.str", "t.str.empty",
    "t.a.u8", "t.a.i8", "t.a.u16", "t.a.i16", "t.a.u32", "t.a.i32", "t.a.u64", "t.a.i64",
    "t.a.f32", "t.a.f64", "t.a.bool", "t.a.str", "t.a.empty",
    "n.u16", "n.str", "n.deep", "n.f32",
};
#define N_RT_KEYS (sizeof rt_keys / sizeof rt_keys[0])

/* Adds the round-trip KVs (nested ones copied from src) and the tensors. */
static void rt_build(gguf_writer *w, const gguf_file *src, uint32_t alignment)
{
    gguf_error err;
    ok(gguf_writer_add_u8(w, "t.u8", 0xff, &err), &err, "u8");
    ok(gguf_writer_add_i8(w, "t.i8", -128, &err), &err, "i8");
    ok(gguf_writer_add_u16(w, "t.u16", 0xfffe, &err), &err, "u16");
    ok(gguf_writer_add_i16(w, "t.i16", -32768, &err), &err, "i16");
    ok(gguf_writer_add_u32(w, "t.u32", 0xdeadbeefu, &err), &err, "u32");
    ok(gguf_writer_add_i32(w, "t.i32", INT32_MIN, &err), &err, "i32");
    ok(gguf_writer_add_u64(w, "t.u64", 0xfedcba9876543210ull, &err), &err, "u64");
    ok(gguf_writer_add_i64(w, "t.i64", INT64_MIN, &err), &err, "i64");
    ok(gguf_writer_add_f32(w, "t.f32.snan", u2f(0xff800001u), &err), &err, "f32");
    ok(gguf_writer_add_f32(w, "t.f32.negzero", -0.0f, &err), &err, "f32");
    ok(gguf_writer_add_f32(w, "t.f32.denorm", u2f(1), &err), &err, "f32");
    ok(gguf_writer_add_f32(w, "t.f32.nan", u2f(0x7fc12345u), &err), &err, "f32");
    ok(gguf_writer_add_f64(w, "t.f64.snan", u2d(0x7ff0000000000001ull), &err), &err, "f64");
    ok(gguf_writer_add_f64(w, "t.f64.nan", u2d(0xfff8000000000123ull), &err), &err, "f64");
    ok(gguf_writer_add_f64(w, "t.f64.negzero", -0.0, &err), &err, "f64");
    ok(gguf_writer_add_f64(w, "t.f64.denorm", u2d(1), &err), &err, "f64");
    ok(gguf_writer_add_bool(w, "t.bool.1", 1, &err), &err, "bool");
    ok(gguf_writer_add_bool(w, "t.bool.0", 0, &err), &err, "bool");
    ok(gguf_writer_add_str(w, "t.str", str_odd, STR_ODD_LEN, &err), &err, "str");
    ok(gguf_writer_add_str(w, "t.str.empty", NULL, 0, &err), &err, "str empty");
    for (size_t i = 0; i < N_RT_ARRAYS; i++)
        ok(gguf_writer_add_array(w, rt_arrays[i].key, rt_arrays[i].vt, rt_arrays[i].data,
                                 rt_arrays[i].n, &err), &err, rt_arrays[i].key);
    const gguf_str sa[4] = {{"x", 1}, {"", 0}, {str_odd, STR_ODD_LEN}, {NULL, 0}};
    ok(gguf_writer_add_str_array(w, "t.a.str", sa, 4, &err), &err, "str array");
    ok(gguf_writer_add_array(w, "t.a.empty", GGUF_VT_UINT32, NULL, 0, &err), &err, "empty");
    /* Nested: one by copy_kv, the others by add_value under the same key. */
    ok(gguf_writer_copy_kv(w, gguf_kv_find(src, "n.u16"), &err), &err, "copy n.u16");
    for (int i = 1; i < 4; i++) {
        const gguf_kv *kv = gguf_kv_at(src, (uint64_t)i);
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)kv->key.len, kv->key.ptr);
        ok(gguf_writer_add_value(w, key, &kv->value, &err), &err, key);
    }
    for (size_t t = 0; t < N_TDEFS; t++)
        ok(gguf_writer_add_tensor(w, tdefs[t].name, tdefs[t].type, tdefs[t].n_dims, tdefs[t].ne,
                                  &err), &err, tdefs[t].name);
    if (alignment) /* after the tensors: their offsets must follow */
        ok(gguf_writer_add_u32(w, "general.alignment", alignment, &err), &err, "alignment");
}

/* Streams the tensor bytes in chunks of odd sizes (1, 7, 100, 3, ...), so
 * that chunks split tensors and span several, padding included. */
static void rt_data(gguf_writer *w)
{
    struct bytes all = {0};
    for (size_t t = 0; t < N_TDEFS; t++)
        for (uint64_t i = 0; i < tdefs[t].size; i++) b_u8(&all, tbyte(t, i));
    static const size_t sizes[] = {1, 7, 100, 3, 250, 2};
    size_t pos = 0;
    gguf_error err;
    for (size_t k = 0; pos < all.n; k++) {
        size_t n = sizes[k % 6];
        if (n > all.n - pos) n = all.n - pos;
        ok(gguf_writer_write(w, all.p + pos, n, &err), &err, "write");
        pos += n;
    }
    free(all.p);
}

/* Writes the round-trip file to path; returns its total size. */
static uint64_t rt_write(const char *path, const gguf_file *src, uint32_t version, int order,
                         uint32_t alignment)
{
    gguf_error err;
    gguf_writer *w = gguf_writer_new();
    if (!w) HARD_ERROR("out of memory");
    ok(gguf_writer_set_version(w, version, &err), &err, "set_version");
    ok(gguf_writer_set_byte_order(w, order, &err), &err, "set_byte_order");
    rt_build(w, src, alignment);
    uint64_t total = gguf_writer_total_size(w);
    ok(gguf_writer_open(w, path, &err), &err, "open");
    rt_data(w);
    ok(gguf_writer_finish(w, &err), &err, "finish");
    gguf_writer_free(w);
    return total;
}

/* Bit-exact comparison of two values, recursing into arrays. */
static int value_eq(const gguf_value *a, const gguf_value *b)
{
    if (a->type != b->type) return 0;
    switch (a->type) {
    case GGUF_VT_UINT8: case GGUF_VT_INT8: return a->v.u8 == b->v.u8;
    case GGUF_VT_BOOL: return a->v.b == b->v.b;
    case GGUF_VT_UINT16: case GGUF_VT_INT16: return a->v.u16 == b->v.u16;
    case GGUF_VT_UINT32: case GGUF_VT_INT32: case GGUF_VT_FLOAT32: return a->v.u32 == b->v.u32;
    case GGUF_VT_UINT64: case GGUF_VT_INT64: case GGUF_VT_FLOAT64: return a->v.u64 == b->v.u64;
    case GGUF_VT_STRING:
        return a->v.str.len == b->v.str.len &&
               (a->v.str.len == 0 || memcmp(a->v.str.ptr, b->v.str.ptr, a->v.str.len) == 0);
    case GGUF_VT_ARRAY:
        if (a->elem_type != b->elem_type || a->count != b->count) return 0;
        for (uint64_t i = 0; i < a->count; i++) {
            gguf_value ea, eb;
            if (gguf_array_get(a, i, &ea) || gguf_array_get(b, i, &eb) || !value_eq(&ea, &eb))
                return 0;
        }
        return 1;
    default: return 0;
    }
}

/* The scalar at key has type vt and bit pattern bits. */
static void check_scalar(const gguf_file *f, const char *key, uint32_t vt, uint64_t bits)
{
    const gguf_kv *kv = gguf_kv_find(f, key);
    CHECK(kv, "%s: key %s missing", gguf_name(f), key);
    if (!kv) return;
    const gguf_value *v = &kv->value;
    uint64_t got;
    switch (gguf_vtype_size(vt)) {
    case 1: got = vt == GGUF_VT_BOOL ? (uint64_t)v->v.b : v->v.u8; break;
    case 2: got = v->v.u16; break;
    case 4: got = v->v.u32; break;
    default: got = v->v.u64; break;
    }
    CHECK(v->type == vt && got == bits, "%s: %s: type %u bits %#llx, expected type %u bits %#llx",
          gguf_name(f), key, v->type, (unsigned long long)got, vt, (unsigned long long)bits);
}

/* The array at key has elem_type vt and the n host-order elements at data. */
static void check_array(const gguf_file *f, const char *key, uint32_t vt, const void *data,
                        uint64_t n)
{
    const gguf_value *v;
    int rc = gguf_kv_array(f, key, vt, &v, NULL);
    CHECK(rc == GGUF_OK, "%s: %s: not an array of %s", gguf_name(f), key, gguf_vtype_name(vt));
    if (rc) return;
    CHECK(v->count == n, "%s: %s: %llu elements, expected %llu", gguf_name(f), key,
          (unsigned long long)v->count, (unsigned long long)n);
    if (v->count != n) return;
    size_t sz = gguf_vtype_size(vt);
    for (uint64_t i = 0; i < n; i++) {
        gguf_value e;
        uint64_t want = 0, got = 0;
        memcpy(&want, (const unsigned char *)data + i * sz, sz); /* little-endian host */
        CHECK(gguf_array_get(v, i, &e) == GGUF_OK, "%s[%llu]", key, (unsigned long long)i);
        memcpy(&got, &e.v, sz);
        if (vt == GGUF_VT_BOOL) got = (uint64_t)e.v.b;
        CHECK(e.type == vt && got == want, "%s: %s[%llu] = %#llx, expected %#llx", gguf_name(f),
              key, (unsigned long long)i, (unsigned long long)got, (unsigned long long)want);
    }
    const void *raw = gguf_array_data(v);
    if (raw && n) CHECK(memcmp(raw, data, (size_t)(n * sz)) == 0, "%s: %s: raw data differs", gguf_name(f), key);
}

/* Checks the whole round-trip file at path (bytes in `bytes`). */
static void rt_check(const char *path, const gguf_file *src, uint32_t version, int order,
                     uint32_t alignment, uint64_t total)
{
    gguf_error err;
    gguf_file *f = NULL;
    int rc = gguf_open(&f, path, NULL, 0, &err);
    CHECK(rc == GGUF_OK, "open %s: %s", path, rc ? err.message : "");
    if (rc) return;
    uint32_t align = alignment ? alignment : 32;
    CHECK(gguf_version(f) == version, "version %u, expected %u", gguf_version(f), version);
    CHECK(gguf_byte_order(f) == order, "byte order %d, expected %d", gguf_byte_order(f), order);
    CHECK(gguf_alignment(f) == align, "alignment %u, expected %u", gguf_alignment(f), align);
    CHECK(gguf_file_size(f) == total, "file size %llu, writer said %llu",
          (unsigned long long)gguf_file_size(f), (unsigned long long)total);
    CHECK(gguf_data_offset(f) % align == 0, "data offset %llu not aligned",
          (unsigned long long)gguf_data_offset(f));

    /* KVs: order, types, values. */
    uint64_t nkv = N_RT_KEYS + (alignment ? 1 : 0);
    CHECK(gguf_kv_count(f) == nkv, "%llu KVs, expected %llu", (unsigned long long)gguf_kv_count(f),
          (unsigned long long)nkv);
    for (uint64_t i = 0; i < N_RT_KEYS && i < gguf_kv_count(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        CHECK(kv->key.len == strlen(rt_keys[i]) && !memcmp(kv->key.ptr, rt_keys[i], kv->key.len),
              "KV %llu is '%.*s', expected '%s'", (unsigned long long)i, (int)kv->key.len,
              kv->key.ptr, rt_keys[i]);
    }
    if (alignment) check_scalar(f, "general.alignment", GGUF_VT_UINT32, alignment);
    check_scalar(f, "t.u8", GGUF_VT_UINT8, 0xff);
    check_scalar(f, "t.i8", GGUF_VT_INT8, 0x80);
    check_scalar(f, "t.u16", GGUF_VT_UINT16, 0xfffe);
    check_scalar(f, "t.i16", GGUF_VT_INT16, 0x8000);
    check_scalar(f, "t.u32", GGUF_VT_UINT32, 0xdeadbeefu);
    check_scalar(f, "t.i32", GGUF_VT_INT32, 0x80000000u);
    check_scalar(f, "t.u64", GGUF_VT_UINT64, 0xfedcba9876543210ull);
    check_scalar(f, "t.i64", GGUF_VT_INT64, 0x8000000000000000ull);
    check_scalar(f, "t.f32.snan", GGUF_VT_FLOAT32, 0xff800001u);
    check_scalar(f, "t.f32.negzero", GGUF_VT_FLOAT32, 0x80000000u);
    check_scalar(f, "t.f32.denorm", GGUF_VT_FLOAT32, 1);
    check_scalar(f, "t.f32.nan", GGUF_VT_FLOAT32, 0x7fc12345u);
    check_scalar(f, "t.f64.snan", GGUF_VT_FLOAT64, 0x7ff0000000000001ull);
    check_scalar(f, "t.f64.nan", GGUF_VT_FLOAT64, 0xfff8000000000123ull);
    check_scalar(f, "t.f64.negzero", GGUF_VT_FLOAT64, 0x8000000000000000ull);
    check_scalar(f, "t.f64.denorm", GGUF_VT_FLOAT64, 1);
    check_scalar(f, "t.bool.1", GGUF_VT_BOOL, 1);
    check_scalar(f, "t.bool.0", GGUF_VT_BOOL, 0);
    gguf_str s;
    CHECK(gguf_kv_str(f, "t.str", &s, NULL) == GGUF_OK && s.len == STR_ODD_LEN &&
              memcmp(s.ptr, str_odd, STR_ODD_LEN) == 0, "t.str differs");
    CHECK(gguf_kv_str(f, "t.str.empty", &s, NULL) == GGUF_OK && s.len == 0, "t.str.empty");
    for (size_t i = 0; i < N_RT_ARRAYS; i++)
        check_array(f, rt_arrays[i].key, rt_arrays[i].vt, rt_arrays[i].data, rt_arrays[i].n);
    check_array(f, "t.a.empty", GGUF_VT_UINT32, NULL, 0);
    const gguf_value *sa;
    if (gguf_kv_array(f, "t.a.str", GGUF_VT_STRING, &sa, NULL) == GGUF_OK && sa->count == 4) {
        gguf_str e0 = gguf_array_str(sa, 0), e1 = gguf_array_str(sa, 1);
        gguf_str e2 = gguf_array_str(sa, 2), e3 = gguf_array_str(sa, 3);
        CHECK(e0.len == 1 && e0.ptr[0] == 'x' && e1.len == 0 && e3.len == 0 &&
                  e2.len == STR_ODD_LEN && !memcmp(e2.ptr, str_odd, STR_ODD_LEN),
              "t.a.str elements differ");
    } else {
        CHECK(0, "t.a.str is not a 4-string array");
    }
    for (uint64_t i = 0; i < gguf_kv_count(src); i++) {
        const gguf_kv *a = gguf_kv_at(src, i);
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)a->key.len, a->key.ptr);
        const gguf_kv *b = gguf_kv_find(f, key);
        CHECK(b && value_eq(&a->value, &b->value), "nested %s differs", key);
    }
    /* The nested ones hold what the hand-made file says. */
    const gguf_kv *nd = gguf_kv_find(f, "n.deep");
    if (nd) {
        gguf_value v = nd->value;
        int levels = 0;
        gguf_value inner;
        while (v.type == GGUF_VT_ARRAY && v.elem_type == GGUF_VT_ARRAY && v.count == 1 &&
               gguf_array_get(&v, 0, &inner) == GGUF_OK) {
            v = inner;
            levels++;
        }
        gguf_value e;
        CHECK(levels == 7 && v.elem_type == GGUF_VT_UINT8 && v.count == 1 &&
                  gguf_array_get(&v, 0, &e) == GGUF_OK && e.v.u8 == 7,
              "n.deep: %d levels", levels);
    }

    /* Tensors: infos, contiguous aligned offsets, bytes, zero padding. */
    CHECK(gguf_tensor_count(f) == N_TDEFS, "%llu tensors", (unsigned long long)gguf_tensor_count(f));
    struct bytes file = {0};
    if (read_file(path, &file) < 0) HARD_ERROR("cannot read %s", path);
    uint64_t expect_off = 0, data_off = gguf_data_offset(f);
    for (uint64_t i = 0; i < N_TDEFS && i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        const struct tdef *d = &tdefs[i];
        CHECK(t->name.len == strlen(d->name) && !memcmp(t->name.ptr, d->name, t->name.len),
              "tensor %llu name", (unsigned long long)i);
        CHECK(t->type == d->type && t->n_dims == d->n_dims, "tensor %s type/dims", d->name);
        CHECK(!memcmp(t->ne, d->ne, sizeof t->ne), "tensor %s ne", d->name);
        CHECK(t->size == d->size, "tensor %s: size %llu, expected %llu", d->name,
              (unsigned long long)t->size, (unsigned long long)d->size);
        CHECK(t->offset == expect_off, "tensor %s: offset %llu, expected %llu", d->name,
              (unsigned long long)t->offset, (unsigned long long)expect_off);
        CHECK(t->offset % align == 0 && t->file_offset == data_off + t->offset,
              "tensor %s offsets", d->name);
        /* zero padding from the previous end to this offset */
        int bad = 0;
        for (uint64_t k = 0; k < d->size; k++)
            if (file.p[data_off + t->offset + k] != tbyte(i, k)) bad = 1;
        CHECK(!bad, "tensor %s: data differs", d->name);
        uint64_t end = t->offset + t->size;
        uint64_t next = (end + align - 1) / align * align;
        for (uint64_t k = end; k < next; k++)
            if (file.p[data_off + k]) bad = 1;
        CHECK(!bad, "tensor %s: padding after it is not zero", d->name);
        if (t->data && d->size) {
            unsigned char c0 = tbyte(i, 0);
            CHECK(memcmp(t->data, &c0, 1) == 0, "tensor %s: mapped data", d->name);
        }
        expect_off = next;
    }
    CHECK(file.n == data_off + expect_off, "file is %zu bytes, expected %llu", file.n,
          (unsigned long long)(data_off + expect_off));
    for (uint64_t k = gguf_header_size(f); k < data_off && k < file.n; k++)
        if (file.p[k]) {
            CHECK(0, "header padding byte %llu is not zero", (unsigned long long)k);
            break;
        }
    free(file.p);
    gguf_close(f);
}

static void test_round_trip(void)
{
    gguf_error err;
    struct bytes nb = nested_source();
    gguf_file *src = NULL;
    int rc = gguf_open_memory(&src, nb.p, nb.n, "nested", &err);
    REQUIRE(rc == GGUF_OK, "hand-made nested file rejected: %s", rc ? err.message : "");

    static const struct { uint32_t version; int order; uint32_t align; } cases[] = {
        {3, GGUF_LITTLE_ENDIAN, 0}, {2, GGUF_LITTLE_ENDIAN, 0}, {1, GGUF_LITTLE_ENDIAN, 0},
        {3, GGUF_BIG_ENDIAN, 0},    {1, GGUF_BIG_ENDIAN, 0},    {3, GGUF_LITTLE_ENDIAN, 64},
        {2, GGUF_BIG_ENDIAN, 64},
    };
    char path[512];
    path_in(path, sizeof path, "rt.gguf");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint64_t total = rt_write(path, src, cases[c].version, cases[c].order, cases[c].align);
        rt_check(path, src, cases[c].version, cases[c].order, cases[c].align, total);
    }

    /* copy_kv of every pair (and the same tensors) into a writer of the same
     * version and order gives the same file, byte for byte; into another
     * version and order, the same values. */
    for (int same = 1; same >= 0; same--) {
        rt_write(path, src, 3, GGUF_LITTLE_ENDIAN, 64);
        gguf_file *a = NULL;
        rc = gguf_open(&a, path, NULL, 0, &err);
        REQUIRE(rc == GGUF_OK, "%s", err.message);
        gguf_writer *w = gguf_writer_new();
        if (!same) {
            ok(gguf_writer_set_version(w, 1, &err), &err, "version");
            ok(gguf_writer_set_byte_order(w, GGUF_BIG_ENDIAN, &err), &err, "order");
        }
        for (uint64_t i = 0; i < gguf_kv_count(a); i++) {
            rc = gguf_writer_copy_kv(w, gguf_kv_at(a, i), &err);
            CHECK(rc == GGUF_OK, "copy_kv %llu: %s", (unsigned long long)i, err.message);
        }
        for (uint64_t i = 0; i < gguf_tensor_count(a); i++) {
            const gguf_tensor *t = gguf_tensor_at(a, i);
            char name[80];
            snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
            ok(gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, &err), &err, name);
        }
        char path2[512];
        path_in(path2, sizeof path2, "copy.gguf");
        ok(gguf_writer_open(w, path2, &err), &err, "open copy");
        for (uint64_t i = 0; i < gguf_tensor_count(a); i++) {
            const gguf_tensor *t = gguf_tensor_at(a, i);
            unsigned char buf[512];
            REQUIRE(t->size <= sizeof buf, "tensor too big for the test buffer");
            ok(gguf_read_data(a, t->file_offset, buf, (size_t)t->size, &err), &err, "read");
            ok(gguf_writer_write(w, buf, (size_t)t->size, &err), &err, "write copy");
        }
        ok(gguf_writer_finish(w, &err), &err, "finish copy");
        gguf_writer_free(w);
        if (same) {
            struct bytes x = {0}, y = {0};
            read_file(path, &x);
            read_file(path2, &y);
            CHECK(x.n == y.n && !memcmp(x.p, y.p, x.n), "copy_kv copy differs from the original");
            CHECK(gguf_header_size(a) > 0, "header size");
            free(x.p);
            free(y.p);
        } else {
            gguf_file *b = NULL;
            rc = gguf_open(&b, path2, NULL, 0, &err);
            CHECK(rc == GGUF_OK, "v1 BE copy rejected: %s", rc ? err.message : "");
            if (!rc) {
                CHECK(gguf_version(b) == 1 && gguf_byte_order(b) == GGUF_BIG_ENDIAN, "v1 BE");
                CHECK(gguf_kv_count(b) == gguf_kv_count(a), "KV count of the copy");
                for (uint64_t i = 0; i < gguf_kv_count(a) && i < gguf_kv_count(b); i++) {
                    const gguf_kv *ka = gguf_kv_at(a, i), *kb = gguf_kv_at(b, i);
                    CHECK(ka->key.len == kb->key.len && !memcmp(ka->key.ptr, kb->key.ptr, ka->key.len) &&
                              value_eq(&ka->value, &kb->value),
                          "KV %llu differs in the v1 big-endian copy", (unsigned long long)i);
                }
                gguf_close(b);
            }
        }
        gguf_close(a);
        unlink(path2);
    }
    unlink(path);
    gguf_close(src);
    free(nb.p);
}

/* Keys and names at their limits, a file with no KVs and no tensors. */
static void test_limits(void)
{
    gguf_error err;
    char path[512];
    path_in(path, sizeof path, "limits.gguf");
    char *key = malloc(65536);
    if (!key) HARD_ERROR("out of memory");
    memset(key, 'k', 65535);
    key[65535] = '\0';
    gguf_writer *w = gguf_writer_new();
    CHECK(gguf_writer_add_u8(w, key, 1, &err) == GGUF_OK, "a 65535-byte key is allowed: %s",
          err.message);
    CHECK(gguf_writer_add_tensor(w, name64, GGUF_T_F32, 1, (uint64_t[]){0}, &err) == GGUF_OK,
          "a 64-byte tensor name is allowed: %s", err.message);
    ok(gguf_writer_open(w, path, &err), &err, "open");
    ok(gguf_writer_finish(w, &err), &err, "finish");
    gguf_writer_free(w);
    gguf_file *f = NULL;
    int rc = gguf_open(&f, path, NULL, 0, &err);
    CHECK(rc == GGUF_OK, "limits file: %s", rc ? err.message : "");
    if (!rc) {
        const gguf_kv *kv = gguf_kv_at(f, 0);
        CHECK(kv && kv->key.len == 65535, "long key read back");
        gguf_close(f);
    }
    free(key);

    /* Empty: no KV, no tensor: 24 bytes padded to 32. */
    w = gguf_writer_new();
    CHECK(gguf_writer_data_offset(w) == 32 && gguf_writer_total_size(w) == 32,
          "empty writer sizes %llu %llu", (unsigned long long)gguf_writer_data_offset(w),
          (unsigned long long)gguf_writer_total_size(w));
    ok(gguf_writer_open(w, path, &err), &err, "open");
    ok(gguf_writer_finish(w, &err), &err, "finish");
    gguf_writer_free(w);
    rc = gguf_open(&f, path, NULL, 0, &err);
    CHECK(rc == GGUF_OK && gguf_kv_count(f) == 0 && gguf_tensor_count(f) == 0,
          "empty file: %s", rc ? err.message : "");
    gguf_close(f);
    unlink(path);
}

/* ------------------------------------------------------------------------ */
/* 3. Invalid input                                                          */

/* rc must be GGUF_E_INVALID and the message must contain `want`. */
#define EXPECT_INVALID(call, want)                                                      \
    do {                                                                                \
        memset(&err, 0, sizeof err);                                                    \
        int rc_ = (call);                                                               \
        CHECK(rc_ == GGUF_E_INVALID && err.status == GGUF_E_INVALID &&                  \
                  strstr(err.message, want),                                            \
              "%s: rc %d, message '%s', expected GGUF_E_INVALID naming '%s'", #call, rc_, \
              err.message, want);                                                       \
    } while (0)

static void test_invalid(void)
{
    gguf_error err;
    gguf_writer *w = gguf_writer_new();
    REQUIRE(w, "new");
    const uint64_t ne1[1] = {4};
    ok(gguf_writer_add_u32(w, "k", 1, &err), &err, "add k");
    ok(gguf_writer_add_tensor(w, "t", GGUF_T_F32, 1, ne1, &err), &err, "add t");
    uint64_t off0 = gguf_writer_data_offset(w), tot0 = gguf_writer_total_size(w);

    EXPECT_INVALID(gguf_writer_set_version(w, 2, &err), "version");
    EXPECT_INVALID(gguf_writer_set_byte_order(w, GGUF_BIG_ENDIAN, &err), "byte order");
    EXPECT_INVALID(gguf_writer_add_u32(w, "", 1, &err), "empty key");
    EXPECT_INVALID(gguf_writer_add_u32(w, NULL, 1, &err), "NULL");
    EXPECT_INVALID(gguf_writer_add_u8(w, "k", 1, &err), "duplicate");
    char *big = malloc(65537);
    memset(big, 'x', 65536);
    big[65536] = '\0';
    EXPECT_INVALID(gguf_writer_add_u8(w, big, 1, &err), "65536 bytes");
    free(big);
    EXPECT_INVALID(gguf_writer_add_bool(w, "b", 2, &err), "BOOL");
    const uint8_t bools[3] = {0, 1, 2};
    EXPECT_INVALID(gguf_writer_add_array(w, "ba", GGUF_VT_BOOL, bools, 3, &err), "element 2");
    EXPECT_INVALID(gguf_writer_add_array(w, "a", GGUF_VT_STRING, bools, 1, &err), "str_array");
    EXPECT_INVALID(gguf_writer_add_array(w, "a", GGUF_VT_ARRAY, bools, 1, &err), "a");
    EXPECT_INVALID(gguf_writer_add_array(w, "a", GGUF_VT_COUNT, bools, 1, &err), "type 13");
    EXPECT_INVALID(gguf_writer_add_array(w, "a", GGUF_VT_UINT8, NULL, 1, &err), "NULL");
    EXPECT_INVALID(gguf_writer_add_str(w, "s", NULL, 3, &err), "NULL");
    const gguf_str bad_s[2] = {{"a", 1}, {NULL, 2}};
    EXPECT_INVALID(gguf_writer_add_str_array(w, "sa", bad_s, 2, &err), "NULL");
    EXPECT_INVALID(gguf_writer_add_value(w, "v", NULL, &err), "NULL");
    gguf_value bv;
    memset(&bv, 0, sizeof bv);
    bv.type = GGUF_VT_COUNT;
    EXPECT_INVALID(gguf_writer_add_value(w, "v", &bv, &err), "type 13");
    bv.type = GGUF_VT_BOOL;
    bv.v.b = 5;
    EXPECT_INVALID(gguf_writer_add_value(w, "v", &bv, &err), "BOOL");
    /* copy_kv of a key with a NUL in it */
    gguf_kv nulkv;
    memset(&nulkv, 0, sizeof nulkv);
    nulkv.key.ptr = "a\0b";
    nulkv.key.len = 3;
    nulkv.value.type = GGUF_VT_UINT8;
    EXPECT_INVALID(gguf_writer_copy_kv(w, &nulkv, &err), "NUL");
    nulkv.key.len = 0;
    EXPECT_INVALID(gguf_writer_copy_kv(w, &nulkv, &err), "empty key");

    /* general.alignment: UINT32, power of two, at most 1 MiB. */
    EXPECT_INVALID(gguf_writer_add_u64(w, "general.alignment", 32, &err), "general.alignment");
    EXPECT_INVALID(gguf_writer_add_str(w, "general.alignment", "32", 2, &err), "general.alignment");
    EXPECT_INVALID(gguf_writer_add_array(w, "general.alignment", GGUF_VT_UINT32, NULL, 0, &err),
                   "general.alignment");
    EXPECT_INVALID(gguf_writer_add_u32(w, "general.alignment", 0, &err), "power of two");
    EXPECT_INVALID(gguf_writer_add_u32(w, "general.alignment", 3, &err), "power of two");
    EXPECT_INVALID(gguf_writer_add_u32(w, "general.alignment", 1u << 21, &err), "power of two");
    EXPECT_INVALID(gguf_writer_add_u32(w, "general.alignment", 1u << 31, &err), "power of two");

    /* Tensors. */
    const uint64_t ne33[1] = {33}, ne_big[2] = {1ull << 62, 4};
    const uint64_t ne4[4] = {1, 1, 1, 1};
    EXPECT_INVALID(gguf_writer_add_tensor(w, "", GGUF_T_F32, 1, ne1, &err), "empty name");
    EXPECT_INVALID(gguf_writer_add_tensor(w, NULL, GGUF_T_F32, 1, ne1, &err), "NULL");
    char n65[66];
    memset(n65, 'n', 65);
    n65[65] = '\0';
    EXPECT_INVALID(gguf_writer_add_tensor(w, n65, GGUF_T_F32, 1, ne1, &err), "65 bytes");
    EXPECT_INVALID(gguf_writer_add_tensor(w, "t", GGUF_T_F32, 1, ne1, &err), "duplicate");
    EXPECT_INVALID(gguf_writer_add_tensor(w, "u", GGUF_T_F32, 0, ne4, &err), "n_dims 0");
    EXPECT_INVALID(gguf_writer_add_tensor(w, "u", GGUF_T_F32, 5, ne4, &err), "n_dims 5");
    EXPECT_INVALID(gguf_writer_add_tensor(w, "u", GGUF_T_COUNT, 1, ne1, &err), "type id 42");
    EXPECT_INVALID(gguf_writer_add_tensor(w, "u", 1000, 1, ne1, &err), "type id 1000");
    EXPECT_INVALID(gguf_writer_add_tensor(w, "u", GGUF_T_Q8_0, 1, ne33, &err), "block size");
    EXPECT_INVALID(gguf_writer_add_tensor(w, "u", GGUF_T_F32, 2, ne_big, &err), "'u'");
    EXPECT_INVALID(gguf_writer_add_tensor(w, "u", GGUF_T_F32, 1, NULL, &err), "NULL");
    const uint64_t ne_wrap[4] = {1ull << 40, 1ull << 40, 1, 1};
    EXPECT_INVALID(gguf_writer_add_tensor(w, "u", GGUF_T_F32, 2, ne_wrap, &err), "overflow");

    /* Nothing of that changed the writer. */
    CHECK(gguf_writer_data_offset(w) == off0 && gguf_writer_total_size(w) == tot0,
          "rejected calls changed the layout");
    /* Still usable: a good pair and tensor are taken. */
    CHECK(gguf_writer_add_u32(w, "general.alignment", 1u << 20, &err) == GGUF_OK, "1 MiB alignment");
    CHECK(gguf_writer_total_size(w) == 2 * (1u << 20), "1 MiB alignment layout: %llu",
          (unsigned long long)gguf_writer_total_size(w));

    /* Out-of-order use. */
    EXPECT_INVALID(gguf_writer_write(w, "x", 1, &err), "not open");
    EXPECT_INVALID(gguf_writer_finish(w, &err), "not open");
    gguf_writer_free(w);

    w = gguf_writer_new();
    EXPECT_INVALID(gguf_writer_set_version(w, 0, &err), "version 0");
    EXPECT_INVALID(gguf_writer_set_version(w, 4, &err), "version 4");
    EXPECT_INVALID(gguf_writer_set_byte_order(w, 2, &err), "byte order 2");
    ok(gguf_writer_set_version(w, 1, &err), &err, "v1");
    const uint64_t ne_u32[1] = {1ull << 32};
    EXPECT_INVALID(gguf_writer_add_tensor(w, "u", GGUF_T_I8, 1, ne_u32, &err), "too large");
    gguf_writer_free(w);

    /* After open: no more header changes. */
    char path[512];
    path_in(path, sizeof path, "inv.gguf");
    w = gguf_writer_new();
    ok(gguf_writer_open(w, path, &err), &err, "open");
    EXPECT_INVALID(gguf_writer_add_u32(w, "late", 1, &err), "opened");
    EXPECT_INVALID(gguf_writer_add_tensor(w, "late", GGUF_T_F32, 1, ne1, &err), "opened");
    EXPECT_INVALID(gguf_writer_open(w, path, &err), "opened");
    ok(gguf_writer_finish(w, &err), &err, "finish");
    EXPECT_INVALID(gguf_writer_write(w, "x", 1, &err), "finished");
    gguf_writer_free(w);
    unlink(path);
    gguf_writer_free(NULL);
}

/* ------------------------------------------------------------------------ */
/* 4. Failure paths and outputs                                              */

/* A small writer with two tensors of 4 and 8 bytes. */
static gguf_writer *small_writer(void)
{
    gguf_error err;
    gguf_writer *w = gguf_writer_new();
    if (!w) HARD_ERROR("out of memory");
    const uint64_t a[1] = {4}, b[1] = {8};
    ok(gguf_writer_add_str(w, "general.name", "small", 5, &err), &err, "name");
    ok(gguf_writer_add_tensor(w, "a", GGUF_T_I8, 1, a, &err), &err, "a");
    ok(gguf_writer_add_tensor(w, "b", GGUF_T_I8, 1, b, &err), &err, "b");
    return w;
}

static const unsigned char small_data[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

static void test_failures(void)
{
    gguf_error err;
    char path[512], first[256];
    path_in(path, sizeof path, "out.gguf");
    clear_dir();

    /* Free before finish: the temporary file had no name (O_TMPFILE) or
     * one after the target in its directory (where O_TMPFILE is refused),
     * and goes away with nothing left.  TEST_WRITE_TEMP=named or unnamed
     * insists on one of the two (tests/test-fault.sh forces the second). */
    const char *scheme = getenv("TEST_WRITE_TEMP");
    gguf_writer *w = small_writer();
    CHECK(gguf_writer_temp_path(w) == NULL, "temp path before open");
    ok(gguf_writer_open(w, path, &err), &err, "open");
    const char *tmp = gguf_writer_temp_path(w);
    if (scheme)
        CHECK((tmp != NULL) == (strcmp(scheme, "named") == 0), "temporary file %s, expected %s",
              tmp ? "named" : "unnamed", scheme);
    if (tmp) {
        char want[512];
        snprintf(want, sizeof want, "%s/.out.gguf.", tmpdir);
        CHECK(strncmp(tmp, want, strlen(want)) == 0, "temp path '%s' not '%s*'", tmp, want);
        CHECK(access(tmp, F_OK) == 0, "temp file missing while open");
    } else {
        CHECK(dir_entries(first, sizeof first) == 0, "an unnamed output shows '%s'", first);
    }
    CHECK(access(path, F_OK) != 0, "target exists before finish");
    ok(gguf_writer_write(w, small_data, 5, &err), &err, "write");
    gguf_writer_free(w);
    CHECK(dir_entries(first, sizeof first) == 0, "free before finish left '%s'", first);

    /* An existing target survives failures untouched. */
    FILE *old = fopen(path, "w");
    if (!old) HARD_ERROR("cannot create %s", path);
    fputs("old", old);
    fclose(old);

    /* Too few bytes: finish fails, names the tensor, removes the output. */
    w = small_writer();
    ok(gguf_writer_open(w, path, &err), &err, "open");
    ok(gguf_writer_write(w, small_data, 11, &err), &err, "write");
    EXPECT_INVALID(gguf_writer_finish(w, &err), "'b'");
    CHECK(gguf_writer_temp_path(w) == NULL, "temp path after failure");
    EXPECT_INVALID(gguf_writer_write(w, small_data, 1, &err), "abandoned");
    gguf_writer_free(w);
    CHECK(dir_entries(first, sizeof first) == 1 && !strcmp(first, "out.gguf"),
          "after a short write the directory holds '%s'", first);
    struct bytes got = {0};
    read_file(path, &got);
    CHECK(got.n == 3 && !memcmp(got.p, "old", 3), "target changed by a failed write");

    /* Too many bytes: refused, output removed. */
    w = small_writer();
    ok(gguf_writer_open(w, path, &err), &err, "open");
    ok(gguf_writer_write(w, small_data, 10, &err), &err, "write");
    EXPECT_INVALID(gguf_writer_write(w, small_data, 3, &err), "hold 12");
    EXPECT_INVALID(gguf_writer_finish(w, &err), "abandoned");
    gguf_writer_free(w);
    CHECK(dir_entries(first, sizeof first) == 1, "after too many bytes: '%s' left", first);
    read_file(path, &got);
    CHECK(got.n == 3 && !memcmp(got.p, "old", 3), "target changed by a failed write");

    /* Success replaces the target, with the mode creat() would give. */
    mode_t um = umask(027);
    w = small_writer();
    ok(gguf_writer_open(w, path, &err), &err, "open");
    ok(gguf_writer_write(w, small_data, 12, &err), &err, "write");
    ok(gguf_writer_finish(w, &err), &err, "finish");
    CHECK(gguf_writer_temp_path(w) == NULL, "temp path after finish");
    gguf_writer_free(w);
    umask(um);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0640, "mode %o, expected 0640",
          (unsigned)(st.st_mode & 07777));
    CHECK(dir_entries(first, sizeof first) == 1, "after success: extra file '%s'", first);
    read_file(path, &got);
    CHECK(got.n > 12 && got.n % 32 == 0, "output size %zu", got.n);
    struct bytes file_bytes = got;
    memset(&got, 0, sizeof got);

    /* A missing directory: GGUF_E_IO naming the path. */
    char missing[512];
    path_in(missing, sizeof missing, "no/such/dir/x.gguf");
    w = small_writer();
    memset(&err, 0, sizeof err);
    int rc = gguf_writer_open(w, missing, &err);
    CHECK(rc == GGUF_E_IO && err.sys_errno == ENOENT && strstr(err.message, missing),
          "missing dir: rc %d errno %d '%s'", rc, err.sys_errno, err.message);
    gguf_writer_free(w);

    /* An unwritable directory (not for root, who may write anyway). */
    if (geteuid() != 0) {
        char ro[512], target[600];
        path_in(ro, sizeof ro, "ro");
        if (mkdir(ro, 0555) < 0) HARD_ERROR("mkdir %s: %s", ro, strerror(errno));
        snprintf(target, sizeof target, "%s/x.gguf", ro);
        w = small_writer();
        memset(&err, 0, sizeof err);
        rc = gguf_writer_open(w, target, &err);
        CHECK(rc == GGUF_E_IO && err.sys_errno == EACCES && strstr(err.message, target),
              "unwritable dir: rc %d errno %d '%s'", rc, err.sys_errno, err.message);
        gguf_writer_free(w);
        rmdir(ro);
    } else {
        fprintf(stderr, "note: running as root, unwritable-directory case not checked\n");
    }

    /* A full device: GGUF_E_IO with ENOSPC, naming it. */
    if (access("/dev/full", W_OK) == 0) {
        w = small_writer();
        rc = gguf_writer_open(w, "/dev/full", &err);
        if (rc == GGUF_OK) rc = gguf_writer_write(w, small_data, 12, &err);
        if (rc == GGUF_OK) rc = gguf_writer_finish(w, &err);
        CHECK(rc == GGUF_E_IO && err.sys_errno == ENOSPC && strstr(err.message, "/dev/full"),
              "/dev/full: rc %d errno %d '%s'", rc, err.sys_errno, err.message);
        gguf_writer_free(w);
    } else {
        fprintf(stderr, "note: no /dev/full, full-device case not checked\n");
    }

    /* A pipe (via open_fd) and standard output ("-") carry the same bytes
     * as the file; the pipe is drained while the child writes. */
    for (int use_stdout = 0; use_stdout < 2; use_stdout++) {
        int pfd[2];
        if (pipe(pfd) < 0) HARD_ERROR("pipe: %s", strerror(errno));
        pid_t pid = fork();
        if (pid < 0) HARD_ERROR("fork: %s", strerror(errno));
        if (pid == 0) {
            close(pfd[0]);
            gguf_writer *cw = small_writer();
            gguf_error cerr;
            int crc;
            if (use_stdout) {
                if (dup2(pfd[1], 1) < 0) _exit(3);
                close(pfd[1]);
                crc = gguf_writer_open(cw, "-", &cerr);
            } else {
                crc = gguf_writer_open_fd(cw, pfd[1], "(pipe)", &cerr);
            }
            if (!crc) crc = gguf_writer_temp_path(cw) ? 99 : 0;
            for (int i = 0; i < 12 && !crc; i++) crc = gguf_writer_write(cw, small_data + i, 1, &cerr);
            if (!crc) crc = gguf_writer_finish(cw, &cerr);
            if (crc) fprintf(stderr, "child: %d %s\n", crc, cerr.message);
            gguf_writer_free(cw);
            _exit(crc ? 1 : 0);
        }
        close(pfd[1]);
        struct bytes piped = {0};
        unsigned char buf[4096];
        ssize_t k;
        while ((k = read(pfd[0], buf, sizeof buf)) > 0 || (k < 0 && errno == EINTR))
            if (k > 0) b_put(&piped, buf, (size_t)k);
        close(pfd[0]);
        int status;
        waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s writer failed",
              use_stdout ? "stdout" : "pipe");
        CHECK(piped.n == file_bytes.n && !memcmp(piped.p, file_bytes.p, piped.n),
              "%s output (%zu bytes) differs from the file (%zu bytes)",
              use_stdout ? "stdout" : "pipe", piped.n, file_bytes.n);
        free(piped.p);
    }

    /* A large output through a pipe: more than the pipe and the writer's
     * buffer hold, read back by the reader as a stream. */
    {
        int pfd[2];
        if (pipe(pfd) < 0) HARD_ERROR("pipe: %s", strerror(errno));
        const uint64_t ne[2] = {1024, 1024}; /* 4 MiB of F32 */
        pid_t pid = fork();
        if (pid < 0) HARD_ERROR("fork: %s", strerror(errno));
        if (pid == 0) {
            close(pfd[0]);
            gguf_writer *cw = gguf_writer_new();
            gguf_error cerr;
            int crc = gguf_writer_add_tensor(cw, "big", GGUF_T_F32, 2, ne, &cerr);
            if (!crc) crc = gguf_writer_open_fd(cw, pfd[1], "(pipe)", &cerr);
            static uint32_t row[1024];
            for (uint32_t r = 0; r < 1024 && !crc; r++) {
                for (uint32_t c = 0; c < 1024; c++) row[c] = r * 1024 + c;
                crc = gguf_writer_write(cw, row, sizeof row, &cerr);
            }
            if (!crc) crc = gguf_writer_finish(cw, &cerr);
            gguf_writer_free(cw);
            _exit(crc ? 1 : 0);
        }
        close(pfd[1]);
        gguf_file *f = NULL;
        rc = gguf_open_fd(&f, pfd[0], "(pipe)", GGUF_OPEN_SEQUENTIAL, &err);
        CHECK(rc == GGUF_OK, "big pipe: %s", rc ? err.message : "");
        if (!rc) {
            const gguf_tensor *t = gguf_tensor_at(f, 0);
            static uint32_t row[1024];
            int bad = 0;
            for (uint32_t r = 0; r < 1024 && !bad; r++) {
                if (gguf_read_data(f, t->file_offset + (uint64_t)r * sizeof row, row, sizeof row,
                                   &err))
                    bad = 1;
                for (uint32_t c = 0; c < 1024 && !bad; c++)
                    if (row[c] != r * 1024 + c) bad = 1;
            }
            CHECK(!bad, "big pipe data differs");
            gguf_close(f);
        }
        int status;
        waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "big pipe writer failed");
    }
    free(file_bytes.p);
    free(got.p);
    unlink(path);
}

/* ------------------------------------------------------------------------ */
/* --list FILE: our reader's view of a file, for tests/test-write-gguf-py.sh */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

/* FNV-1a of a fixed-size scalar's little-endian bytes. */
static uint64_t fnv_scalar(uint64_t h, const gguf_value *v, size_t size)
{
    uint64_t bits;
    switch (size) {
    case 1: bits = v->type == GGUF_VT_BOOL ? (uint64_t)v->v.b : v->v.u8; break;
    case 2: bits = v->v.u16; break;
    case 4: bits = v->v.u32; break;
    default: bits = v->v.u64; break;
    }
    unsigned char b[8];
    for (size_t i = 0; i < size; i++) b[i] = (unsigned char)(bits >> (8 * i));
    return fnv(h, b, size);
}

/* Prints one line per KV and per tensor:
 *   kv KEY TYPE VALUE                  integers in decimal, floats as hex
 *                                      bits, strings as hex bytes
 *   kv KEY ARRAY ELEM COUNT FNV        FNV-1a 64 over the elements (LE
 *                                      bytes; strings as u64 LE length + bytes)
 *   tensor NAME TYPE NE0,NE1,.. OFFSET SIZE FNV   absolute offset, FNV of the data */
static int list_file(const char *path)
{
    gguf_error err;
    gguf_file *f = NULL;
    if (gguf_open(&f, path, NULL, 0, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 2;
    }
    printf("version %u\nkv_count %llu\ntensor_count %llu\n", gguf_version(f),
           (unsigned long long)gguf_kv_count(f), (unsigned long long)gguf_tensor_count(f));
    for (uint64_t i = 0; i < gguf_kv_count(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        const gguf_value *v = &kv->value;
        printf("kv %.*s %s", (int)kv->key.len, kv->key.ptr, gguf_vtype_name(v->type));
        size_t size = gguf_vtype_size(v->type);
        if (v->type == GGUF_VT_STRING) {
            putchar(' ');
            for (size_t k = 0; k < v->v.str.len; k++) printf("%02x", (unsigned char)v->v.str.ptr[k]);
        } else if (v->type == GGUF_VT_ARRAY) {
            uint64_t h = 0xcbf29ce484222325ull;
            size_t es = gguf_vtype_size(v->elem_type);
            for (uint64_t k = 0; k < v->count; k++) {
                gguf_value e;
                if (gguf_array_get(v, k, &e)) return 2;
                if (e.type == GGUF_VT_STRING) {
                    unsigned char b[8];
                    for (int j = 0; j < 8; j++) b[j] = (unsigned char)((uint64_t)e.v.str.len >> (8 * j));
                    h = fnv(fnv(h, b, 8), e.v.str.ptr, e.v.str.len);
                } else if (es) {
                    h = fnv_scalar(h, &e, es);
                }
            }
            printf(" %s %llu %016llx", gguf_vtype_name(v->elem_type), (unsigned long long)v->count,
                   (unsigned long long)h);
        } else if (v->type == GGUF_VT_FLOAT32) {
            printf(" %08x", v->v.u32);
        } else if (v->type == GGUF_VT_FLOAT64) {
            printf(" %016llx", (unsigned long long)v->v.u64);
        } else if (v->type == GGUF_VT_BOOL) {
            printf(" %d", v->v.b);
        } else {
            int sgn = v->type == GGUF_VT_INT8 || v->type == GGUF_VT_INT16 ||
                      v->type == GGUF_VT_INT32 || v->type == GGUF_VT_INT64;
            long long sv = size == 1 ? v->v.i8 : size == 2 ? v->v.i16 : size == 4 ? v->v.i32 : v->v.i64;
            unsigned long long uv = size == 1 ? v->v.u8 : size == 2 ? v->v.u16 : size == 4 ? v->v.u32 : v->v.u64;
            if (sgn) printf(" %lld", sv);
            else printf(" %llu", uv);
        }
        putchar('\n');
    }
    unsigned char *buf = malloc(1 << 20);
    if (!buf) return 2;
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        printf("tensor %.*s %s ", (int)t->name.len, t->name.ptr, gguf_type_str(t->type));
        for (uint32_t d = 0; d < t->n_dims; d++) printf("%s%llu", d ? "," : "", (unsigned long long)t->ne[d]);
        uint64_t h = 0xcbf29ce484222325ull;
        for (uint64_t o = 0; o < t->size;) {
            size_t n = t->size - o < (1 << 20) ? (size_t)(t->size - o) : (1 << 20);
            if (gguf_read_data(f, t->file_offset + o, buf, n, &err)) {
                fprintf(stderr, "%s\n", err.message);
                return 2;
            }
            h = fnv(h, buf, n);
            o += n;
        }
        printf(" %llu %llu %016llx\n", (unsigned long long)t->file_offset, (unsigned long long)t->size,
               (unsigned long long)h);
    }
    free(buf);
    gguf_close(f);
    return fflush(stdout) || ferror(stdout) ? 2 : 0;
}

static void cleanup(void)
{
    clear_dir();
    rmdir(tmpdir);
}

/* gguf_writer_write_from(): the same file as gguf_writer_write() with the
 * same bytes, to a file (copy_file_range) and to a pipe (read and write);
 * a source that ends too soon, a bad descriptor, more bytes than the
 * tensors hold. */
static void test_write_from(void)
{
    enum { A = 100, B = 3000 }; /* tensor bytes: padding between them */
    unsigned char src[A + B];
    for (size_t i = 0; i < sizeof src; i++) src[i] = (unsigned char)(i * 7 + 3);
    char in[512], p1[512], p2[512];
    path_in(in, sizeof in, "from-src.bin");
    path_in(p1, sizeof p1, "from-mem.gguf");
    path_in(p2, sizeof p2, "from-fd.gguf");
    FILE *fp = fopen(in, "wb");
    if (!fp || fwrite("xyz", 1, 3, fp) != 3 || fwrite(src, 1, sizeof src, fp) != sizeof src || fclose(fp))
        HARD_ERROR("writing %s", in);
    int fd = open(in, O_RDONLY);
    if (fd < 0) HARD_ERROR("open %s", in);
    for (int mode = 0; mode < 3; mode++) {
        gguf_error err;
        gguf_writer *w = gguf_writer_new();
        const uint64_t ne_a[1] = {A / 4}, ne_b[1] = {B / 4};
        if (!w || gguf_writer_add_tensor(w, "a", GGUF_T_F32, 1, ne_a, &err) ||
            gguf_writer_add_tensor(w, "b", GGUF_T_F32, 1, ne_b, &err))
            HARD_ERROR("writer");
        int pfd[2] = {-1, -1};
        pid_t child = -1;
        if (mode == 2) {
            /* to a pipe, read by a child into p2 */
            if (pipe(pfd)) HARD_ERROR("pipe");
            child = fork();
            if (child == 0) {
                close(pfd[1]);
                FILE *o = fopen(p2, "wb");
                char buf[4096];
                ssize_t r;
                while ((r = read(pfd[0], buf, sizeof buf)) > 0) fwrite(buf, 1, (size_t)r, o);
                _exit(fclose(o) ? 1 : 0);
            }
            close(pfd[0]);
            CHECK(gguf_writer_open_fd(w, pfd[1], "(pipe)", &err) == GGUF_OK, "open pipe: %s", err.message);
        } else {
            CHECK(gguf_writer_open(w, mode ? p2 : p1, &err) == GGUF_OK, "open: %s", err.message);
        }
        int rc;
        if (mode == 0) {
            rc = gguf_writer_write(w, src, sizeof src, &err);
        } else {
            /* in pieces that split and span the tensors */
            rc = gguf_writer_write_from(w, fd, 3, 40, &err);
            if (!rc) rc = gguf_writer_write_from(w, fd, 43, 2000, &err);
            if (!rc) rc = gguf_writer_write_from(w, fd, 2043, A + B - 2040, &err);
        }
        CHECK(rc == GGUF_OK, "mode %d: write: %s", mode, err.message);
        CHECK(gguf_writer_finish(w, &err) == GGUF_OK, "mode %d: finish: %s", mode, err.message);
        gguf_writer_free(w);
        if (mode == 2) {
            close(pfd[1]);
            int st;
            if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st)) HARD_ERROR("reader");
        }
        if (mode) {
            struct bytes x = {0}, y = {0};
            CHECK(read_file(p1, &x) == 0 && read_file(p2, &y) == 0 && x.n == y.n && x.n > A + B &&
                      memcmp(x.p, y.p, x.n) == 0,
                  "mode %d: write_from's file differs from write's", mode);
            free(x.p);
            free(y.p);
            unlink(p2);
        }
    }
    /* a source that ends too soon; a bad descriptor; too many bytes */
    gguf_error err;
    gguf_writer *w = gguf_writer_new();
    const uint64_t ne[1] = {(A + B) / 4};
    if (!w || gguf_writer_add_tensor(w, "t", GGUF_T_F32, 1, ne, &err)) HARD_ERROR("writer");
    CHECK(gguf_writer_open(w, p2, &err) == GGUF_OK, "open: %s", err.message);
    CHECK(gguf_writer_write_from(w, -1, 0, 4, &err) == GGUF_E_INVALID, "bad descriptor");
    CHECK(gguf_writer_write_from(w, fd, 3, A + B + 4, &err) == GGUF_E_INVALID, "more bytes than the tensors");
    gguf_writer_free(w);
    w = gguf_writer_new();
    if (!w || gguf_writer_add_tensor(w, "t", GGUF_T_F32, 1, ne, &err)) HARD_ERROR("writer");
    CHECK(gguf_writer_open(w, p2, &err) == GGUF_OK, "open: %s", err.message);
    CHECK(gguf_writer_write_from(w, fd, 100, A + B, &err) == GGUF_E_FORMAT &&
              strstr(err.message, "the input ends before byte") != NULL,
          "a short source: %s", err.message);
    CHECK(gguf_writer_finish(w, &err) != GGUF_OK, "finish after a short source");
    gguf_writer_free(w);
    CHECK(access(p2, F_OK) != 0, "no output after a short source");
    close(fd);
    unlink(in);
    unlink(p1);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--list") == 0) return list_file(argv[2]);
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/test-write.XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) HARD_ERROR("mkdtemp %s: %s", tmpdir, strerror(errno));
    atexit(cleanup);
    if (strlen(name64) != 64) HARD_ERROR("name64 is %zu bytes", strlen(name64));

    test_known_answers();
    test_invalid();
    test_failures();
    test_limits();
    test_round_trip();
    test_write_from();
    tu_finish();
}
