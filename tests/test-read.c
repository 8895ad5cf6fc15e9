/* test-read.c -- reader unit tests.
 *
 * Files are built byte by byte here, independently of the library's writer,
 * so that a shared misunderstanding of the format cannot hide in both.  Each
 * is read back in every version (1, 2, 3), both byte orders and every input
 * mode (mapped, stream, gzip file, pipe, memory, sequential stream), and all
 * modes must agree.  Streams are read whole while a signal handler
 * interrupts the reads (EINTR); gzip streams follow gzread's rules
 * (members in a row, bytes after the last ignored) and name truncation and
 * corruption. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <sys/time.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "gguf/gguf.h"
#include "tests/testutil.h"
#include "tests/bytes.h"

#define N_KV 19
#define ALIGN 64

/* The test file: every value type, nested arrays, three tensors (one with a
 * zero dimension), alignment 64.  *data_off gets the data section start. */
static struct bytes make_file(uint32_t version, int be, size_t *data_off)
{
    struct bytes o = b_header(version, be, 3, N_KV); /* 3 tensors, N_KV KVs */
    b_key(&o, "general.architecture", GGUF_VT_STRING); b_str(&o, "qwen2", 5);
    b_key(&o, "t.u8", GGUF_VT_UINT8); b_u8(&o, 200);
    b_key(&o, "t.i8", GGUF_VT_INT8); b_u8(&o, (uint8_t)-5);
    b_key(&o, "t.u16", GGUF_VT_UINT16); b_u16(&o, 60000);
    b_key(&o, "t.i16", GGUF_VT_INT16); b_u16(&o, (uint16_t)-30000);
    b_key(&o, "t.u32", GGUF_VT_UINT32); b_u32(&o, 4000000000u);
    b_key(&o, "t.i32", GGUF_VT_INT32); b_u32(&o, (uint32_t)-2000000000);
    b_key(&o, "t.u64", GGUF_VT_UINT64); b_u64(&o, (1ull << 63) + 5);
    b_key(&o, "t.i64", GGUF_VT_INT64); b_u64(&o, (uint64_t)-(1ll << 62));
    b_key(&o, "t.f32", GGUF_VT_FLOAT32); b_f32(&o, 1.5f);
    b_key(&o, "t.f64", GGUF_VT_FLOAT64); b_f64(&o, -2.25);
    b_key(&o, "t.bool", GGUF_VT_BOOL); b_u8(&o, 1);
    b_key(&o, "t.str", GGUF_VT_STRING); b_str(&o, "a\0b\xff", 4);
    b_key(&o, "t.arr_u32", GGUF_VT_ARRAY); b_arr(&o, GGUF_VT_UINT32, 3);
    b_u32(&o, 1); b_u32(&o, 2); b_u32(&o, 0xdeadbeef);
    b_key(&o, "t.arr_str", GGUF_VT_ARRAY); b_arr(&o, GGUF_VT_STRING, 3);
    b_str(&o, "x", 1); b_str(&o, "yz", 2); b_str(&o, "", 0);
    b_key(&o, "t.nested", GGUF_VT_ARRAY); b_arr(&o, GGUF_VT_ARRAY, 2);
    b_arr(&o, GGUF_VT_UINT8, 2); b_u8(&o, 7); b_u8(&o, 8);
    b_arr(&o, GGUF_VT_INT16, 1); b_u16(&o, (uint16_t)-2);
    b_key(&o, "t.arr_bool", GGUF_VT_ARRAY); b_arr(&o, GGUF_VT_BOOL, 2); b_u8(&o, 1); b_u8(&o, 0);
    b_key(&o, "t.arr_empty", GGUF_VT_ARRAY); b_arr(&o, GGUF_VT_FLOAT32, 0);
    b_key(&o, "general.alignment", GGUF_VT_UINT32); b_u32(&o, ALIGN);
    /* tensors: a F32 4x2 @0 (32 B), b Q8_0 64 @64 (68 B), z F16 0x3 @192 (0 B) */
    b_tensor(&o, "a", GGUF_T_F32, 2, (const uint64_t[]){4, 2}, 0);
    b_tensor(&o, "blk.0.b", GGUF_T_Q8_0, 1, (const uint64_t[]){64}, 64);
    b_tensor(&o, "z", GGUF_T_F16, 2, (const uint64_t[]){0, 3}, 192);
    b_pad(&o, ALIGN);
    *data_off = o.n;
    for (int i = 0; i < 8; i++) b_f32(&o, (float)i - 3.5f);
    b_pad(&o, ALIGN);
    for (int i = 0; i < 68; i++) b_u8(&o, (uint8_t)(i * 7 + 1));
    b_pad(&o, ALIGN);
    return o;
}

/* ------------------------------------------------------------------------ */
/* A text rendering of everything the reader returns, to compare modes.     */

static void dump_value(FILE *out, const gguf_value *v)
{
    switch (v->type) {
    case GGUF_VT_UINT8: fprintf(out, "u8:%u", v->v.u8); break;
    case GGUF_VT_INT8: fprintf(out, "i8:%d", v->v.i8); break;
    case GGUF_VT_UINT16: fprintf(out, "u16:%u", v->v.u16); break;
    case GGUF_VT_INT16: fprintf(out, "i16:%d", v->v.i16); break;
    case GGUF_VT_UINT32: fprintf(out, "u32:%u", v->v.u32); break;
    case GGUF_VT_INT32: fprintf(out, "i32:%d", v->v.i32); break;
    case GGUF_VT_UINT64: fprintf(out, "u64:%llu", (unsigned long long)v->v.u64); break;
    case GGUF_VT_INT64: fprintf(out, "i64:%lld", (long long)v->v.i64); break;
    case GGUF_VT_FLOAT32: fprintf(out, "f32:%a", v->v.f32); break;
    case GGUF_VT_FLOAT64: fprintf(out, "f64:%a", v->v.f64); break;
    case GGUF_VT_BOOL: fprintf(out, "bool:%d", v->v.b); break;
    case GGUF_VT_STRING:
        fprintf(out, "str[%zu]:", v->v.str.len);
        for (size_t i = 0; i < v->v.str.len; i++) fprintf(out, "%02x", (unsigned char)v->v.str.ptr[i]);
        break;
    case GGUF_VT_ARRAY:
        fprintf(out, "arr<%u>[%llu]{", v->elem_type, (unsigned long long)v->count);
        for (uint64_t i = 0; i < v->count; i++) {
            gguf_value e;
            if (gguf_array_get(v, i, &e) != GGUF_OK) fprintf(out, "ERR");
            dump_value(out, &e);
            fputc(',', out);
        }
        fputc('}', out);
        break;
    }
}

/* Returns a malloc'd rendering; the mode and display name are left out. */
static char *render(const gguf_file *f)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&buf, &n);
    fprintf(out, "v%u order%d kv%llu t%llu align%u data%llu size%llu end%llu hdr%llu\n",
            gguf_version(f), gguf_byte_order(f), (unsigned long long)gguf_kv_count(f),
            (unsigned long long)gguf_tensor_count(f), gguf_alignment(f),
            (unsigned long long)gguf_data_offset(f), (unsigned long long)gguf_file_size(f),
            (unsigned long long)gguf_data_end(f), (unsigned long long)gguf_header_size(f));
    for (uint64_t i = 0; i < gguf_kv_count(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        fprintf(out, "%.*s @%llu = ", (int)kv->key.len, kv->key.ptr, (unsigned long long)kv->offset);
        dump_value(out, &kv->value);
        fputc('\n', out);
    }
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        fprintf(out, "%.*s type%u dims%u %llux%llux%llux%llu n%llu off%llu abs%llu size%llu info%llu\n",
                (int)t->name.len, t->name.ptr, t->type, t->n_dims, (unsigned long long)t->ne[0],
                (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
                (unsigned long long)t->ne[3], (unsigned long long)t->n_elements,
                (unsigned long long)t->offset, (unsigned long long)t->file_offset,
                (unsigned long long)t->size, (unsigned long long)t->info_offset);
    }
    fclose(out);
    return buf;
}

/* ------------------------------------------------------------------------ */

static char tmpdir[] = "/tmp/test-read.XXXXXX";

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(p, 1, n, fp) != n || fclose(fp) != 0) HARD_ERROR("write %s", path);
}

static void write_gz(const char *path, const void *p, size_t n)
{
    gzFile g = gzopen(path, "wb");
    if (!g || gzwrite(g, p, (unsigned)n) != (int)n || gzclose(g) != Z_OK) HARD_ERROR("gz %s", path);
}

/* Opens the bytes through a pipe fed by a child process. */
static int open_pipe(gguf_file **f, const struct bytes *o, unsigned flags, gguf_error *err,
                     pid_t *child)
{
    return gguf_open_fd(f, tu_pipe_feed(o->p, o->n, 0, 0, child), "(pipe)", flags, err);
}

/* Checks every value of the file against what make_file wrote. */
static void check_values(const gguf_file *f, uint32_t version, int be, size_t data_off)
{
    gguf_error err;
    CHECK(gguf_version(f) == version, "version %u", gguf_version(f));
    CHECK(gguf_byte_order(f) == (be ? GGUF_BIG_ENDIAN : GGUF_LITTLE_ENDIAN), "order");
    CHECK(gguf_kv_count(f) == N_KV, "kv count %llu", (unsigned long long)gguf_kv_count(f));
    CHECK(gguf_tensor_count(f) == 3, "tensor count");
    CHECK(gguf_alignment(f) == ALIGN, "alignment %u", gguf_alignment(f));
    CHECK(gguf_data_offset(f) == data_off, "data offset %llu want %zu",
          (unsigned long long)gguf_data_offset(f), data_off);
    CHECK(gguf_data_end(f) == data_off + 192, "data end");

    gguf_str s;
    CHECK(gguf_kv_str(f, "general.architecture", &s, NULL) == GGUF_OK && s.len == 5 &&
              memcmp(s.ptr, "qwen2", 5) == 0, "architecture");
    uint8_t vu8; int8_t vi8; uint16_t vu16; int16_t vi16; uint32_t vu32; int32_t vi32;
    uint64_t vu64; int64_t vi64; float vf32; double vf64; int vb;
    CHECK(gguf_kv_u8(f, "t.u8", &vu8, NULL) == GGUF_OK && vu8 == 200, "u8");
    CHECK(gguf_kv_i8(f, "t.i8", &vi8, NULL) == GGUF_OK && vi8 == -5, "i8");
    CHECK(gguf_kv_u16(f, "t.u16", &vu16, NULL) == GGUF_OK && vu16 == 60000, "u16");
    CHECK(gguf_kv_i16(f, "t.i16", &vi16, NULL) == GGUF_OK && vi16 == -30000, "i16");
    CHECK(gguf_kv_u32(f, "t.u32", &vu32, NULL) == GGUF_OK && vu32 == 4000000000u, "u32");
    CHECK(gguf_kv_i32(f, "t.i32", &vi32, NULL) == GGUF_OK && vi32 == -2000000000, "i32");
    CHECK(gguf_kv_u64(f, "t.u64", &vu64, NULL) == GGUF_OK && vu64 == (1ull << 63) + 5, "u64");
    CHECK(gguf_kv_i64(f, "t.i64", &vi64, NULL) == GGUF_OK && vi64 == -(1ll << 62), "i64");
    CHECK(gguf_kv_f32(f, "t.f32", &vf32, NULL) == GGUF_OK && vf32 == 1.5f, "f32");
    CHECK(gguf_kv_f64(f, "t.f64", &vf64, NULL) == GGUF_OK && vf64 == -2.25, "f64");
    CHECK(gguf_kv_bool(f, "t.bool", &vb, NULL) == GGUF_OK && vb == 1, "bool");
    CHECK(gguf_kv_str(f, "t.str", &s, NULL) == GGUF_OK && s.len == 4 &&
              memcmp(s.ptr, "a\0b\xff", 4) == 0, "string with NUL and 0xff");

    /* Type mismatches and absent keys. */
    CHECK(gguf_kv_u32(f, "t.u8", &vu32, &err) == GGUF_E_TYPE && err.status == GGUF_E_TYPE &&
              strstr(err.message, "t.u8") && strstr(err.message, "UINT8"), "type mismatch: %s",
          err.message);
    CHECK(gguf_kv_u32(f, "no.such.key", &vu32, &err) == GGUF_E_NOT_FOUND &&
              strstr(err.message, "no.such.key"), "not found");
    CHECK(gguf_kv_find(f, "t.u") == NULL, "prefix is not a match");
    CHECK(gguf_kv_uint(f, "t.u16", &vu64, NULL) == GGUF_OK && vu64 == 60000, "uint widening");
    CHECK(gguf_kv_uint(f, "t.i8", &vu64, NULL) == GGUF_E_TYPE, "negative is not a uint");
    CHECK(gguf_kv_uint(f, "t.f32", &vu64, NULL) == GGUF_E_TYPE, "float is not a uint");

    /* Arrays. */
    const gguf_value *a;
    gguf_value e;
    CHECK(gguf_kv_array(f, "t.arr_u32", GGUF_VT_UINT32, &a, NULL) == GGUF_OK && a->count == 3,
          "u32 array");
    CHECK(gguf_kv_array(f, "t.arr_u32", GGUF_VT_INT32, &a, &err) == GGUF_E_TYPE, "elem type");
    CHECK(gguf_kv_array(f, "t.u8", GGUF_VT_UINT8, &a, NULL) == GGUF_E_TYPE, "not an array");
    gguf_kv_array(f, "t.arr_u32", GGUF_VT_UINT32, &a, NULL);
    CHECK(gguf_array_get(a, 2, &e) == GGUF_OK && e.type == GGUF_VT_UINT32 && e.v.u32 == 0xdeadbeef,
          "array element");
    CHECK(gguf_array_get(a, 3, &e) == GGUF_E_INVALID, "index out of range");
    const uint32_t *raw = gguf_array_data(a);
    if (be) {
        CHECK(raw == NULL, "no raw data for a foreign byte order");
    } else {
        uint32_t want[3] = {1, 2, 0xdeadbeef}, got[3];
        CHECK(raw != NULL, "raw data");
        if (raw) {
            memcpy(got, raw, sizeof got);
            CHECK(memcmp(got, want, sizeof got) == 0, "raw array values");
        }
    }
    CHECK(gguf_kv_array(f, "t.arr_str", GGUF_VT_STRING, &a, NULL) == GGUF_OK, "string array");
    s = gguf_array_str(a, 1);
    CHECK(s.len == 2 && memcmp(s.ptr, "yz", 2) == 0, "string element");
    s = gguf_array_str(a, 2);
    CHECK(s.len == 0 && s.ptr != NULL, "empty string element");
    CHECK(gguf_array_str(a, 3).ptr == NULL, "string index out of range");
    CHECK(gguf_array_data(a) == NULL, "no raw data for strings");
    CHECK(gguf_kv_array(f, "t.nested", GGUF_VT_ARRAY, &a, NULL) == GGUF_OK && a->count == 2,
          "nested");
    gguf_value sub, x;
    CHECK(gguf_array_get(a, 0, &sub) == GGUF_OK && sub.type == GGUF_VT_ARRAY &&
              sub.elem_type == GGUF_VT_UINT8 && sub.count == 2 &&
              gguf_array_get(&sub, 1, &x) == GGUF_OK && x.v.u8 == 8, "nested[0][1]");
    CHECK(gguf_array_get(a, 1, &sub) == GGUF_OK && sub.elem_type == GGUF_VT_INT16 &&
              gguf_array_get(&sub, 0, &x) == GGUF_OK && x.v.i16 == -2, "nested[1][0]");
    CHECK(gguf_kv_array(f, "t.arr_bool", GGUF_VT_BOOL, &a, NULL) == GGUF_OK &&
              gguf_array_get(a, 0, &e) == GGUF_OK && e.v.b == 1 &&
              gguf_array_get(a, 1, &e) == GGUF_OK && e.v.b == 0, "bool array");
    CHECK(gguf_kv_array(f, "t.arr_empty", GGUF_VT_FLOAT32, &a, NULL) == GGUF_OK && a->count == 0,
          "empty array");

    /* Order is the file's. */
    const gguf_kv *kv0 = gguf_kv_at(f, 0), *kvl = gguf_kv_at(f, N_KV - 1);
    CHECK(kv0 && kv0->key.len == 20 && memcmp(kv0->key.ptr, "general.architecture", 20) == 0 &&
              kv0->offset == (version == 1 ? 16u : 24u), "first kv and its offset");
    CHECK(kvl && kvl->key.len == 17 && memcmp(kvl->key.ptr, "general.alignment", 17) == 0, "last kv");
    CHECK(gguf_kv_at(f, N_KV) == NULL, "kv index out of range");

    /* Tensors. */
    const gguf_tensor *t = gguf_tensor_find(f, "blk.0.b");
    CHECK(t && t->type == GGUF_T_Q8_0 && t->n_dims == 1 && t->ne[0] == 64 && t->ne[1] == 1 &&
              t->n_elements == 64 && t->size == 68 && t->offset == 64 &&
              t->file_offset == data_off + 64 && gguf_tensor_index(f, t) == 1, "tensor b");
    t = gguf_tensor_find(f, "a");
    CHECK(t && t->type == GGUF_T_F32 && t->n_dims == 2 && t->ne[0] == 4 && t->ne[1] == 2 &&
              t->size == 32 && t->offset == 0, "tensor a");
    t = gguf_tensor_find(f, "z");
    CHECK(t && t->ne[0] == 0 && t->ne[1] == 3 && t->size == 0 && t->n_elements == 0, "zero dim");
    CHECK(gguf_tensor_find(f, "blk.0") == NULL && gguf_tensor_at(f, 3) == NULL, "absent tensor");
    const gguf_tensor *t0 = gguf_tensor_at(f, 0);
    CHECK(t0 && t0->info_offset > kvl->offset, "tensor info after the KVs");
}

/* Checks tensor bytes through gguf_read_data (and the data pointer). */
static void check_data(gguf_file *f, int be)
{
    const gguf_tensor *a = gguf_tensor_at(f, 0), *b = gguf_tensor_at(f, 1);
    uint8_t buf[68];
    gguf_error err;
    CHECK(gguf_read_data(f, a->file_offset, buf, 32, &err) == GGUF_OK, "read a: %s", err.message);
    for (int i = 0; i < 8; i++) {
        uint32_t u = 0;
        for (int k = 0; k < 4; k++) u |= (uint32_t)buf[4 * i + k] << (be ? 8 * (3 - k) : 8 * k);
        float v;
        memcpy(&v, &u, 4);
        CHECK(v == (float)i - 3.5f, "a[%d] = %g", i, v);
    }
    if (a->data) CHECK(memcmp(a->data, buf, 32) == 0, "mapped data of a");
    /* The F32 elements through gguf_swap_elements when the byte order is
     * not the host's; the Q8_0 blocks cannot be swapped. */
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    const int host_be = first == 0;
    CHECK(gguf_data_swapped(f) == (be != host_be), "data swapped %d", gguf_data_swapped(f));
    float fl[8];
    if (gguf_data_swapped(f)) CHECK(gguf_swap_elements(GGUF_T_F32, fl, buf, 8) == GGUF_OK, "swap");
    else memcpy(fl, buf, sizeof fl);
    for (int i = 0; i < 8; i++) CHECK(fl[i] == (float)i - 3.5f, "a[%d] = %g in host order", i, fl[i]);
    CHECK(gguf_read_data(f, b->file_offset, buf, 68, &err) == GGUF_OK, "read b: %s", err.message);
    int ok = 1;
    for (int i = 0; i < 68; i++) ok &= buf[i] == (uint8_t)(i * 7 + 1);
    CHECK(ok, "b bytes");
    CHECK(gguf_swap_elements(GGUF_T_Q8_0, buf, buf, 2) == GGUF_E_UNSUPPORTED &&
              buf[0] == 1 && buf[67] == (uint8_t)(67 * 7 + 1), "quantized blocks not swapped");
    /* directory order: a, b, z (z is empty, at offset 192) */
    const uint64_t *order = gguf_tensor_order(f);
    CHECK(order && order[0] == 0 && order[1] == 1 && order[2] == 2, "offset order");
}

/* gguf_swap_elements of every plain size, in place and not; tensor data
 * out of directory order in gguf_tensor_order(). */
static void test_swap_order(void)
{
    unsigned char in[16], outb[16];
    for (int i = 0; i < 16; i++) in[i] = (unsigned char)i;
    CHECK(gguf_swap_elements(GGUF_T_F16, outb, in, 8) == GGUF_OK && outb[0] == 1 && outb[1] == 0 &&
              outb[15] == 14, "F16");
    CHECK(gguf_swap_elements(GGUF_T_F64, outb, in, 2) == GGUF_OK && outb[0] == 7 && outb[7] == 0 &&
              outb[8] == 15, "F64");
    CHECK(gguf_swap_elements(GGUF_T_I8, outb, in, 16) == GGUF_OK && memcmp(outb, in, 16) == 0, "I8");
    CHECK(gguf_swap_elements(GGUF_T_I32, in, in, 4) == GGUF_OK && in[0] == 3 && in[3] == 0 &&
              in[4] == 7, "I32 in place");
    CHECK(gguf_swap_elements(GGUF_T_Q4_K, outb, in, 1) == GGUF_E_UNSUPPORTED, "Q4_K refused");
    CHECK(gguf_swap_elements(GGUF_T_COUNT, outb, in, 1) == GGUF_E_UNSUPPORTED, "unknown refused");

    /* three tensors whose data lies in the order c, a, b */
    struct bytes o = b_header(3, 0, 3, 0);
    b_tensor(&o, "a", GGUF_T_I8, 1, (const uint64_t[]){32}, 32);
    b_tensor(&o, "b", GGUF_T_I8, 1, (const uint64_t[]){32}, 64);
    b_tensor(&o, "c", GGUF_T_I8, 1, (const uint64_t[]){32}, 0);
    b_pad(&o, 32);
    for (int i = 0; i < 96; i++) b_u8(&o, (uint8_t)i);
    gguf_file *f = NULL;
    gguf_error err;
    REQUIRE(gguf_open_memory(&f, o.p, o.n, "mem", &err) == GGUF_OK, "%s", err.message);
    const uint64_t *order = gguf_tensor_order(f);
    CHECK(order && order[0] == 2 && order[1] == 0 && order[2] == 1, "offset order c, a, b");
    CHECK(!gguf_is_stream(f), "memory is not a stream");
    gguf_close(f);
    pid_t child;
    REQUIRE(open_pipe(&f, &o, GGUF_OPEN_SEQUENTIAL, &err, &child) == GGUF_OK, "%s", err.message);
    CHECK(gguf_is_stream(f), "a pipe is a stream");
    order = gguf_tensor_order(f);
    CHECK(order && order[0] == 2 && order[1] == 0 && order[2] == 1, "stream: offset order c, a, b");
    gguf_close(f);
    waitpid(child, NULL, 0);
    struct bytes e = b_header(3, 0, 0, 0);
    REQUIRE(gguf_open_memory(&f, e.p, e.n, "empty", &err) == GGUF_OK, "%s", err.message);
    CHECK(gguf_tensor_order(f) == NULL, "no tensors: NULL order");
    gguf_close(f);
    free(e.p);
    free(o.p);
}

static void test_modes(uint32_t version, int be)
{
    size_t data_off;
    struct bytes o = make_file(version, be, &data_off);
    char path[256], gzpath[300];
    snprintf(path, sizeof path, "%s/v%u%s.gguf", tmpdir, version, be ? "be" : "le");
    snprintf(gzpath, sizeof gzpath, "%s.gz", path);
    write_file(path, o.p, o.n);
    write_gz(gzpath, o.p, o.n);

    gguf_error err;
    gguf_file *ref = NULL;
    REQUIRE(gguf_open(&ref, path, NULL, 0, &err) == GGUF_OK, "open v%u be%d: %s", version, be,
            err.message);
    CHECK(gguf_input_mode(ref) == GGUF_INPUT_MAPPED, "mapped mode");
    CHECK(!gguf_is_stream(ref), "a mapped file is not a stream");
    CHECK(strcmp(gguf_name(ref), path) == 0, "name");
    CHECK(gguf_file_size(ref) == o.n, "size");
    check_values(ref, version, be, data_off);
    check_data(ref, be);
    char *want = render(ref);

    struct { const char *what; unsigned flags; const char *p; int mode; } modes[] = {
        {"stream", GGUF_OPEN_NO_MMAP, path, GGUF_INPUT_STREAM},
        {"gzip", 0, gzpath, GGUF_INPUT_GZIP},
        {"gzip stream", GGUF_OPEN_NO_MMAP, gzpath, GGUF_INPUT_GZIP},
    };
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        gguf_file *f = NULL;
        REQUIRE(gguf_open(&f, modes[m].p, "X", modes[m].flags, &err) == GGUF_OK, "%s: %s",
                modes[m].what, err.message);
        CHECK(gguf_input_mode(f) == modes[m].mode, "%s mode %d", modes[m].what, gguf_input_mode(f));
        CHECK(gguf_is_stream(f), "%s is a stream", modes[m].what);
        char *got = render(f);
        CHECK(strcmp(got, want) == 0, "%s differs:\n%s\nvs\n%s", modes[m].what, got, want);
        check_values(f, version, be, data_off);
        free(got);
        gguf_close(f);
    }

    /* Memory. */
    gguf_file *f = NULL;
    REQUIRE(gguf_open_memory(&f, o.p, o.n, "mem", &err) == GGUF_OK, "memory: %s", err.message);
    char *got = render(f);
    CHECK(strcmp(got, want) == 0, "memory differs");
    check_data(f, be);
    free(got);
    gguf_close(f);

    /* A pipe, read whole. */
    pid_t child;
    REQUIRE(open_pipe(&f, &o, 0, &err, &child) == GGUF_OK, "pipe: %s", err.message);
    got = render(f);
    CHECK(strcmp(got, want) == 0, "pipe differs");
    gguf_close(f);
    waitpid(child, NULL, 0);
    free(got);

    /* A pipe read sequentially: tensor data in offset order. */
    REQUIRE(open_pipe(&f, &o, GGUF_OPEN_SEQUENTIAL, &err, &child) == GGUF_OK, "seq: %s",
            err.message);
    check_data(f, be);
    CHECK(gguf_read_to_end(f, &err) == GGUF_OK, "read to end: %s", err.message);
    CHECK(gguf_file_size(f) == o.n, "size after read to end");
    gguf_close(f);
    waitpid(child, NULL, 0);

    free(want);
    gguf_close(ref);
    unlink(path);
    unlink(gzpath);
    free(o.p);
}

/* Truncated data seen by a sequential stream names the tensor. */
static void test_truncated_stream(void)
{
    size_t data_off;
    struct bytes o = make_file(3, 0, &data_off);
    b_truncate(&o, data_off + 64 + 10); /* cut inside tensor blk.0.b */
    gguf_file *f = NULL;
    gguf_error err;
    pid_t child;
    REQUIRE(open_pipe(&f, &o, GGUF_OPEN_SEQUENTIAL, &err, &child) == GGUF_OK, "%s", err.message);
    uint8_t buf[68];
    CHECK(gguf_read_data(f, data_off, buf, 32, &err) == GGUF_OK, "first tensor");
    CHECK(gguf_read_data(f, data_off + 64, buf, 68, &err) == GGUF_E_FORMAT &&
              strstr(err.message, "blk.0.b") && strstr(err.message, "(pipe)"),
          "truncated tensor named: %s", err.message);
    gguf_close(f);
    waitpid(child, NULL, 0);
    /* The same bytes, mapped/whole: rejected at open naming the tensor. */
    CHECK(gguf_open_memory(&f, o.p, o.n, "cut", &err) == GGUF_E_FORMAT &&
              strstr(err.message, "blk.0.b") && strstr(err.message, "file has"),
          "truncated at open: %s", err.message);
    free(o.p);
}

/* The n bytes at p as one gzip member (malloc'ed; *out_n its size). */
static unsigned char *gzip_member(const void *p, size_t n, size_t *out_n)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        HARD_ERROR("deflateInit2");
    size_t cap = deflateBound(&z, (uLong)n) + 64;
    unsigned char *out = malloc(cap);
    if (!out) HARD_ERROR("out of memory");
    z.next_in = (Bytef *)(uintptr_t)p;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) HARD_ERROR("deflate");
    *out_n = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

/* Opens the n bytes at p through a pipe whose writer (a child process)
 * sends them 7 bytes at a time, 100 us apart. */
static int open_slow_pipe(gguf_file **f, const void *p, size_t n, gguf_error *err, pid_t *child)
{
    return gguf_open_fd(f, tu_pipe_feed(p, n, 7, 100000, child), "(pipe)", 0, err);
}

static volatile sig_atomic_t ticks;
static void on_tick(int sig)
{
    (void)sig;
    ticks++;
}

/* A handler without SA_RESTART, called every 20 us while a slow pipe is
 * read: read(2) fails with EINTR again and again, and the stream must be
 * read all the same, plain and gzip-compressed. */
static void test_signals(void)
{
    size_t data_off, zn;
    struct bytes o = make_file(3, 0, &data_off);
    unsigned char *z = gzip_member(o.p, o.n, &zn);
    gguf_file *ref, *f;
    gguf_error err;
    REQUIRE(gguf_open_memory(&ref, o.p, o.n, "ref", &err) == GGUF_OK, "%s", err.message);
    char *want = render(ref);
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_tick;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    if (sigaction(SIGALRM, &sa, &old) < 0) HARD_ERROR("sigaction");
    struct itimerval every = { { 0, 20 }, { 0, 20 } }, off = { { 0, 0 }, { 0, 0 } };
    for (int gz = 0; gz < 2; gz++) {
        pid_t child;
        ticks = 0;
        setitimer(ITIMER_REAL, &every, NULL);
        int rc = open_slow_pipe(&f, gz ? z : o.p, gz ? zn : o.n, &err, &child);
        setitimer(ITIMER_REAL, &off, NULL);
        CHECK(rc == GGUF_OK, "%s pipe under signals: %s", gz ? "gzip" : "plain", err.message);
        CHECK(ticks > 10, "the signal came (%d times)", (int)ticks);
        if (rc == GGUF_OK) {
            char *got = render(f);
            CHECK(strcmp(got, want) == 0, "%s pipe under signals: content differs", gz ? "gzip" : "plain");
            free(got);
            CHECK(gguf_input_mode(f) == (gz ? GGUF_INPUT_GZIP : GGUF_INPUT_STREAM), "mode");
        }
        gguf_close(f);
        waitpid(child, NULL, 0);
    }
    sigaction(SIGALRM, &old, NULL);
    free(want);
    gguf_close(ref);
    free(z);
    free(o.p);
}

/* Opens the n bytes at p through a pipe, as a stream read whole. */
static int open_bytes(gguf_file **f, const void *p, size_t n, gguf_error *err)
{
    struct bytes b = { (unsigned char *)(uintptr_t)p, n, n, 0, 0 };
    pid_t child;
    int rc = open_pipe(f, &b, 0, err, &child);
    waitpid(child, NULL, 0);
    return rc;
}

/* gzip input as gzread reads it: members in a row make one input, bytes
 * after the last member that do not start another are ignored; a cut or
 * damaged member is named as such. */
static void test_gzip_rules(void)
{
    size_t data_off, z1n, z2n, zn;
    struct bytes o = make_file(3, 0, &data_off);
    size_t half = o.n / 2;
    unsigned char *z1 = gzip_member(o.p, half, &z1n), *z2 = gzip_member(o.p + half, o.n - half, &z2n);
    unsigned char *z = gzip_member(o.p, o.n, &zn);
    gguf_file *ref, *f;
    gguf_error err;
    REQUIRE(gguf_open_memory(&ref, o.p, o.n, "ref", &err) == GGUF_OK, "%s", err.message);
    char *want = render(ref);
    struct bytes two = { NULL, 0, 0, 0, 0 };
    b_put(&two, z1, z1n);
    b_put(&two, z2, z2n);
    CHECK(open_bytes(&f, two.p, two.n, &err) == GGUF_OK, "two members: %s", err.message);
    if (f) {
        char *got = render(f);
        CHECK(strcmp(got, want) == 0, "two members: content");
        free(got);
        gguf_close(f);
    }
    struct bytes tail = { NULL, 0, 0, 0, 0 };
    b_put(&tail, z, zn);
    b_put(&tail, "trailing garbage", 16);
    CHECK(open_bytes(&f, tail.p, tail.n, &err) == GGUF_OK && gguf_file_size(f) == o.n,
          "bytes after the last member are ignored: %s", f ? "" : err.message);
    gguf_close(f);
    CHECK(open_bytes(&f, z, zn - 20, &err) == GGUF_E_FORMAT &&
              strstr(err.message, "(pipe): gzip stream truncated after ") == err.message,
          "a cut member: %s", err.message);
    z[zn / 2] ^= 0x55;
    CHECK(open_bytes(&f, z, zn, &err) == GGUF_E_FORMAT &&
              strstr(err.message, "(pipe): gzip data corrupt after ") == err.message,
          "a damaged member: %s", err.message);
    free(two.p);
    free(tail.p);
    free(want);
    gguf_close(ref);
    free(z);
    free(z1);
    free(z2);
    free(o.p);
}

/* A file without tensors may end before the padding of a data section it
 * does not have: read to its end from a sequential stream as well. */
static void test_no_tensors_unpadded(void)
{
    struct bytes o = b_header(3, 0, 0, 0);     /* 24 bytes; a data section would start at 32 */
    gguf_file *f = NULL;
    gguf_error err;
    pid_t child;
    CHECK(gguf_open_memory(&f, o.p, o.n, "mem", &err) == GGUF_OK, "memory: %s", err.message);
    gguf_close(f);
    REQUIRE(open_pipe(&f, &o, GGUF_OPEN_SEQUENTIAL, &err, &child) == GGUF_OK, "%s", err.message);
    CHECK(gguf_read_to_end(f, &err) == GGUF_OK && gguf_file_size(f) == o.n,
          "read to the end: %s", err.message);
    gguf_close(f);
    waitpid(child, NULL, 0);
    free(o.p);
}

/* A stream is read forward: bytes that have gone by cannot be read again. */
static void test_stream_order(void)
{
    const uint64_t n = 1u << 20;
    struct bytes o = b_header(3, 0, 1, 0); /* v3 little-endian, 1 tensor, no KV */
    b_tensor(&o, "big", GGUF_T_I8, 1, &n, 0);
    b_pad(&o, 32);
    size_t data_off = o.n;
    for (uint64_t i = 0; i < n; i++) b_u8(&o, (uint8_t)(i % 251));
    gguf_file *f = NULL;
    gguf_error err;
    pid_t child;
    REQUIRE(open_pipe(&f, &o, GGUF_OPEN_SEQUENTIAL, &err, &child) == GGUF_OK, "%s", err.message);
    uint8_t buf[16];
    CHECK(gguf_read_data(f, data_off + 900000, buf, 16, &err) == GGUF_OK &&
              buf[0] == 900000 % 251 && buf[15] == 900015 % 251, "forward read");
    CHECK(gguf_read_data(f, data_off + 600000, buf, 16, &err) == GGUF_E_INVALID &&
              strstr(err.message, "already read"), "backward read refused: %s", err.message);
    CHECK(gguf_read_data(f, data_off + n - 16, buf, 16, &err) == GGUF_OK && buf[15] == (n - 1) % 251,
          "last bytes");
    CHECK(gguf_read_data(f, data_off + n, buf, 1, &err) == GGUF_E_FORMAT, "past the end");
    gguf_close(f);
    waitpid(child, NULL, 0);
    free(o.p);
}

static void test_errors(void)
{
    gguf_error err;
    gguf_file *f = (gguf_file *)1;
    CHECK(gguf_open(&f, "/nonexistent/x.gguf", NULL, 0, &err) == GGUF_E_IO && f == NULL &&
              err.sys_errno == ENOENT && strstr(err.message, "/nonexistent/x.gguf"),
          "missing file: %s", err.message);
    CHECK(gguf_open(&f, "/", NULL, 0, &err) == GGUF_E_IO, "directory");
    CHECK(gguf_open_memory(&f, "GGUF", 4, "four", &err) == GGUF_E_FORMAT &&
              strstr(err.message, "four") && strstr(err.message, "version"),
          "4 bytes: %s", err.message);
    CHECK(gguf_open_memory(&f, "", 0, "empty", &err) == GGUF_E_FORMAT &&
              strstr(err.message, "not a GGUF file"), "empty: %s", err.message);
    CHECK(gguf_open_memory(&f, "GGML\3\0\0\0", 8, "m", &err) == GGUF_E_FORMAT &&
              strstr(err.message, "magic"), "magic: %s", err.message);
    CHECK(gguf_open(NULL, "x", NULL, 0, &err) == GGUF_E_INVALID, "NULL out");
    gguf_close(NULL);
    CHECK(strcmp(gguf_strerror(GGUF_E_FORMAT), "malformed file") == 0, "strerror");
    CHECK(gguf_strerror(12345) != NULL, "strerror unknown");
}

static void test_types(void)
{
    const gguf_type_info *t = gguf_type_get(GGUF_T_Q4_K);
    CHECK(t && strcmp(t->name, "Q4_K") == 0 && t->block_size == 256 && t->type_size == 144 &&
              t->quantized, "Q4_K");
    t = gguf_type_get(GGUF_T_Q6_K);
    CHECK(t && t->block_size == 256 && t->type_size == 210, "Q6_K");
    t = gguf_type_get(GGUF_T_Q8_0);
    CHECK(t && t->block_size == 32 && t->type_size == 34, "Q8_0");
    t = gguf_type_get(GGUF_T_BF16);
    CHECK(t && t->block_size == 1 && t->type_size == 2 && !t->quantized, "BF16");
    t = gguf_type_get(GGUF_T_MXFP4);
    CHECK(t && t->block_size == 32 && t->type_size == 17, "MXFP4");
    for (uint32_t i = 0; i < GGUF_T_COUNT; i++) {
        t = gguf_type_get(i);
        CHECK(t && t->name && t->block_size > 0 && t->type_size > 0, "type %u has a layout", i);
        uint32_t back;
        CHECK(t && gguf_type_parse(t->name, &back) == GGUF_OK && back == i, "parse %u", i);
    }
    CHECK(gguf_type_get(GGUF_T_COUNT) == NULL && gguf_type_str(99) == NULL, "unknown type");
    uint32_t id;
    CHECK(gguf_type_parse("q4_k", &id) == GGUF_OK && id == GGUF_T_Q4_K, "case-insensitive");
    CHECK(gguf_type_parse("q4_kk", &id) == GGUF_E_NOT_FOUND, "bad name");
    CHECK(gguf_row_bytes(GGUF_T_Q4_K, 512) == 288, "row bytes");
    CHECK(gguf_row_bytes(GGUF_T_Q4_K, 100) == 0, "row not a block multiple");
    CHECK(gguf_row_bytes(GGUF_T_F32, UINT64_MAX / 2) == 0, "row bytes overflow");
    CHECK(strcmp(gguf_file_type_name(15), "Q4_K_M") == 0 &&
              strcmp(gguf_file_type_name(0), "ALL_F32") == 0 && gguf_file_type_name(5) == NULL,
          "file types");
    CHECK(strcmp(gguf_vtype_name(GGUF_VT_STRING), "STRING") == 0 && gguf_vtype_name(13) == NULL,
          "value type names");
    CHECK(gguf_vtype_size(GGUF_VT_FLOAT64) == 8 && gguf_vtype_size(GGUF_VT_STRING) == 0, "sizes");
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (!mkdtemp(tmpdir)) HARD_ERROR("mkdtemp");
    test_types();
    test_errors();
    for (uint32_t v = 1; v <= 3; v++)
        for (int be = 0; be <= 1; be++) test_modes(v, be);
    test_truncated_stream();
    test_stream_order();
    test_signals();
    test_gzip_rules();
    test_no_tensors_unpadded();
    test_swap_order();
    rmdir(tmpdir);
    tu_finish();
}
