/*
 * gguf-hostile.c -- writes a corpus of malformed GGUF files.
 *
 *   gguf-hostile -o DIR       writes the files into DIR (created if needed)
 *                             and DIR/MANIFEST
 *   gguf-hostile --sanitizer  prints "yes" when built with AddressSanitizer,
 *                             else "no" (test-hostile.sh then skips ulimit -v,
 *                             since ASan reserves terabytes of address space)
 *
 * Each file starts as a valid file made by the library's writer, then is
 * mutated: bytes are found through the reader's offsets of the valid file
 * (gguf_kv.offset, gguf_tensor.info_offset ...) and patched in place, or a
 * range is replaced by raw bytes where the writer refuses to make the bad
 * thing (an empty or over-long key, deep nesting ...).
 *
 * MANIFEST has one line per file: NAME, then one or more TAB-separated
 * substrings that the reader's error message must all contain; "OK" instead
 * marks a valid control that must open without error.
 *
 * Exit status: 0 written, 2 trouble (usage, I/O, or a base file the library
 * itself could not write or read back).
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf.h"

static const char *prog = "gguf-hostile";

/* Prints "gguf-hostile: message" and exits 2. */
static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

/* Buffer failures (out of memory, a patch outside the file) are trouble too. */
#define BYTES_FAIL die
#include "tests/bytes.h"

/* ------------------------------------------------------------------------ */
/* Base files, made by the library's writer.                                */

/* Tensors of the standard base file: names of one length (so that one can
 * be renamed to another in place), types with different block sizes, and
 * one tensor of each rank that the cases below patch. */
#define T_F32 0     /* "blk.0.f32" F32 [8, 2] */
#define T_Q8 1      /* "blk.0.q8_" Q8_0 [64, 2] */
#define T_F16 2     /* "blk.0.f16" F16 [16] */
#define T_I8 3      /* "blk.0.i8x" I8 [2, 2, 2, 2] */

struct tspec {
    const char *name;
    uint32_t type;
    uint32_t n_dims;
    uint64_t ne[4];
};

static const struct tspec std_tensors[] = {
    {"blk.0.f32", GGUF_T_F32, 2, {8, 2, 1, 1}},
    {"blk.0.q8_", GGUF_T_Q8_0, 2, {64, 2, 1, 1}},
    {"blk.0.f16", GGUF_T_F16, 1, {16, 1, 1, 1}},
    {"blk.0.i8x", GGUF_T_I8, 4, {2, 2, 2, 2}},
};
#define N_STD_TENSORS (sizeof std_tensors / sizeof std_tensors[0])

/* A writer in the making: tracks the tensor data still to be written. */
struct wbuild {
    gguf_writer *w;
    uint64_t data_bytes;
    uint32_t version;
    int order;
    gguf_error err;
};

/* Exits with the writer's message when rc is not GGUF_OK. */
static void wcheck(struct wbuild *wb, int rc, const char *what)
{
    if (rc != GGUF_OK) die("writer: %s: %s", what, wb->err.message);
}

/* Starts a writer for the given version and byte order. */
static void wb_begin(struct wbuild *wb, uint32_t version, int order)
{
    memset(wb, 0, sizeof *wb);
    wb->version = version;
    wb->order = order;
    wb->w = gguf_writer_new();
    if (!wb->w) die("out of memory");
    wcheck(wb, gguf_writer_set_version(wb->w, version, &wb->err), "set_version");
    wcheck(wb, gguf_writer_set_byte_order(wb->w, order, &wb->err), "set_byte_order");
}

/* Declares tensor t and counts its data bytes (the specs never overflow). */
static void wb_tensor(struct wbuild *wb, const struct tspec *t)
{
    wcheck(wb, gguf_writer_add_tensor(wb->w, t->name, t->type, t->n_dims, t->ne, &wb->err),
           t->name);
    uint64_t n = gguf_row_bytes(t->type, t->ne[0]);
    for (uint32_t d = 1; d < t->n_dims; d++) n *= t->ne[d];
    wb->data_bytes += n;
}

/* The standard KVs: one of several types, two keys of equal length for the
 * duplicate case, a bool and a bool array, a u32 array and a string array. */
static void wb_std_kvs(struct wbuild *wb)
{
    static const uint32_t arr[3] = {1, 2, 3};
    static const uint8_t bools[3] = {0, 1, 1};
    static const gguf_str strs[2] = {{"a", 1}, {"bc", 2}};
    gguf_writer *w = wb->w;
    gguf_error *e = &wb->err;
    wcheck(wb, gguf_writer_add_str(w, "general.architecture", "llama", 5, e), "arch");
    wcheck(wb, gguf_writer_add_u32(w, "test.u32", 7, e), "test.u32");
    wcheck(wb, gguf_writer_add_str(w, "test.str", "hello", 5, e), "test.str");
    wcheck(wb, gguf_writer_add_u8(w, "test.aaa", 1, e), "test.aaa");
    wcheck(wb, gguf_writer_add_u8(w, "test.bbb", 2, e), "test.bbb");
    wcheck(wb, gguf_writer_add_bool(w, "test.bool", 1, e), "test.bool");
    wcheck(wb, gguf_writer_add_array(w, "test.arr", GGUF_VT_UINT32, arr, 3, e), "test.arr");
    wcheck(wb, gguf_writer_add_array(w, "test.bools", GGUF_VT_BOOL, bools, 3, e), "test.bools");
    wcheck(wb, gguf_writer_add_str_array(w, "test.strs", strs, 2, e), "test.strs");
    wcheck(wb, gguf_writer_add_f32(w, "test.f32", 0.5f, e), "test.f32");
}

static void wb_std_tensors(struct wbuild *wb)
{
    for (size_t i = 0; i < N_STD_TENSORS; i++) wb_tensor(wb, &std_tensors[i]);
}

/* Writes the header and deterministic tensor data to a temporary file and
 * returns the file's bytes, marked with the file's byte order and version
 * so that patches go in as the reader expects them.  Frees the writer. */
static struct bytes wb_finish(struct wbuild *wb)
{
    FILE *tmp = tmpfile();
    if (!tmp) die("tmpfile: %s", strerror(errno));
    wcheck(wb, gguf_writer_open_fd(wb->w, fileno(tmp), "(base)", &wb->err), "open");
    unsigned char chunk[4096];
    for (size_t i = 0; i < sizeof chunk; i++) chunk[i] = (unsigned char)(i * 37 + 11);
    for (uint64_t left = wb->data_bytes; left;) {
        size_t n = left < sizeof chunk ? (size_t)left : sizeof chunk;
        wcheck(wb, gguf_writer_write(wb->w, chunk, n, &wb->err), "write");
        left -= n;
    }
    wcheck(wb, gguf_writer_finish(wb->w, &wb->err), "finish");
    gguf_writer_free(wb->w);
    wb->w = NULL;

    struct bytes b = {0};
    b.big = wb->order == GGUF_BIG_ENDIAN;
    b.v1 = wb->version == 1;
    if (fflush(tmp) != 0 || fseek(tmp, 0, SEEK_SET) != 0) die("temporary file: %s", strerror(errno));
    if (b_read(&b, tmp) != 0) die("temporary file: %s", strerror(errno));
    fclose(tmp);
    return b;
}

/* The standard base file: std KVs and tensors, in the given version and
 * byte order. */
static struct bytes std_base(uint32_t version, int order)
{
    struct wbuild wb;
    wb_begin(&wb, version, order);
    wb_std_kvs(&wb);
    wb_std_tensors(&wb);
    return wb_finish(&wb);
}

/* Opens b with the reader; a base file that fails to open is a defect of the
 * writer or reader, reported as trouble. */
static gguf_file *open_base(const struct bytes *b, const char *what)
{
    gguf_file *f = NULL;
    gguf_error err;
    if (gguf_open_memory(&f, b->p, b->n, what, &err) != GGUF_OK)
        die("base file does not open: %s", err.message);
    return f;
}

/* Layout facts of a base file, taken from the reader.  All offsets are
 * absolute.  For a KV: where its key length, key bytes, type and value
 * start, and where the pair ends.  For a tensor: its name length field,
 * name, n_dims, dims, type and offset fields. */
struct kvpos {
    uint64_t off, key, type, val, end;
    uint64_t keylen;
};

struct tpos {
    uint64_t off, name, ndims, dims, type, offset;
    uint64_t namelen, data_offset, size;
    uint32_t n_dims;
};

/* Width of counts and lengths: 4 bytes in version 1, 8 after. */
static unsigned lenw(const gguf_file *f)
{
    return gguf_version(f) == 1 ? 4 : 8;
}

/* Where the fields of KV `key` lie in f; exits when the key is absent. */
static struct kvpos kv_pos(const gguf_file *f, const char *key)
{
    const gguf_kv *kv = gguf_kv_find(f, key);
    if (!kv) die("base file lacks key %s", key);
    struct kvpos p;
    p.off = kv->offset;
    p.keylen = kv->key.len;
    p.key = p.off + lenw(f);
    p.type = p.key + p.keylen;
    p.val = p.type + 4;
    uint64_t i;
    for (i = 0; i < gguf_kv_count(f); i++)
        if (gguf_kv_at(f, i) == kv) break;
    if (i + 1 < gguf_kv_count(f)) p.end = gguf_kv_at(f, i + 1)->offset;
    else if (gguf_tensor_count(f)) p.end = gguf_tensor_at(f, 0)->info_offset;
    else p.end = gguf_header_size(f);
    return p;
}

/* Where the fields of tensor info i lie in f; exits when there is none. */
static struct tpos t_pos(const gguf_file *f, uint64_t i)
{
    const gguf_tensor *t = gguf_tensor_at(f, i);
    if (!t) die("base file lacks tensor %llu", (unsigned long long)i);
    struct tpos p;
    p.off = t->info_offset;
    p.namelen = t->name.len;
    p.name = p.off + lenw(f);
    p.ndims = p.name + p.namelen;
    p.dims = p.ndims + 4;
    p.n_dims = t->n_dims;
    p.type = p.dims + (uint64_t)lenw(f) * t->n_dims;
    p.offset = p.type + 4;
    p.data_offset = t->file_offset;
    p.size = t->size;
    return p;
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */

static const char *outdir;
static FILE *manifest;
static unsigned n_bad, n_ok;

/* Writes b as DIR/NAME and its MANIFEST line; expect is "OK" or one or more
 * TAB-separated substrings.  Frees b. */
static void emit(const char *name, const char *expect, struct bytes *b)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    FILE *fp = fopen(path, "wb");
    if (!fp) die("%s: %s", path, strerror(errno));
    if ((b->n && fwrite(b->p, 1, b->n, fp) != b->n) || fclose(fp) != 0)
        die("%s: write error", path);
    fprintf(manifest, "%s\t%s\n", name, expect);
    if (strcmp(expect, "OK") == 0) n_ok++;
    else n_bad++;
    b_free(b);
}

/* ------------------------------------------------------------------------ */
/* The cases                                                                 */

/* Emits a copy of base with the u32 or u64 at off set to v, in base's byte
 * order. */
static void emit_u32(const char *name, const char *expect, const struct bytes *base, uint64_t off,
                     uint32_t v)
{
    struct bytes b = b_copy(base);
    b_patch_u32(&b, off, v);
    emit(name, expect, &b);
}

static void emit_u64(const char *name, const char *expect, const struct bytes *base, uint64_t off,
                     uint64_t v)
{
    struct bytes b = b_copy(base);
    b_patch_u64(&b, off, v);
    emit(name, expect, &b);
}

/* Emits a copy of base with the n bytes at off overwritten by src. */
static void emit_patch(const char *name, const char *expect, const struct bytes *base,
                       uint64_t off, const void *src, size_t n)
{
    struct bytes b = b_copy(base);
    b_patch(&b, off, src, n);
    emit(name, expect, &b);
}

/* Emits a copy of base in which the string field (length and bytes) from
 * off to end is replaced by one of len bytes, each fill. */
static void emit_string(const char *name, const char *expect, const struct bytes *base,
                        uint64_t off, uint64_t end, uint64_t len, int fill)
{
    struct bytes r = {NULL, 0, 0, base->big, base->v1};
    b_len(&r, len);
    b_fill(&r, fill, (size_t)len);
    struct bytes b = b_copy(base);
    b_splice(&b, off, (size_t)(end - off), r.p, r.n);
    b_free(&r);
    emit(name, expect, &b);
}

/* Emits a copy of base with the first two dims of tensor info t set. */
static void emit_dims2(const char *name, const char *expect, const struct bytes *base,
                       const struct tpos *t, uint64_t ne0, uint64_t ne1)
{
    struct bytes b = b_copy(base);
    b_patch_u64(&b, t->dims, ne0);
    b_patch_u64(&b, t->dims + 8, ne1);
    emit(name, expect, &b);
}

/* Header: magic, version, counts, in every version and byte order. */
static void header_cases(const struct bytes *base)
{
    emit_patch("bad-magic.gguf", "magic", base, 0, "GGUG", 4);
    emit_u32("version-0.gguf", "version 0", base, 4, 0);
    emit_u32("version-4.gguf", "version 4", base, 4, 4);
    emit_u64("tensor-count-2e63.gguf", "tensor\t9223372036854775808", base, 8, UINT64_C(1) << 63);
    emit_u64("tensor-count-max.gguf", "tensor\t18446744073709551615", base, 8, UINT64_MAX);
    emit_u64("kv-count-2e63.gguf", "key\t9223372036854775808", base, 16, UINT64_C(1) << 63);
    emit_u64("kv-count-max.gguf", "key\t18446744073709551615", base, 16, UINT64_MAX);

    /* Version 1: 32-bit counts and lengths. */
    struct bytes v1 = std_base(1, GGUF_LITTLE_ENDIAN);
    gguf_file *f = open_base(&v1, "v1 base");
    struct kvpos s = kv_pos(f, "test.str");
    gguf_close(f);
    emit_u32("v1-kv-count-max.gguf", "key\t4294967295", &v1, 12, UINT32_MAX);
    emit_u32("v1-tensor-count-max.gguf", "tensor\t4294967295", &v1, 8, UINT32_MAX);
    emit_u32("v1-string-len-max.gguf", "test.str\t4294967295", &v1, s.val, UINT32_MAX);
    emit("v1-valid.gguf", "OK", &v1);

    /* Big-endian: the same checks on swapped fields. */
    struct bytes be = std_base(3, GGUF_BIG_ENDIAN);
    emit_u64("be-kv-count-2e63.gguf", "key\t9223372036854775808", &be, 16, UINT64_C(1) << 63);
    emit_u64("be-tensor-count-max.gguf", "tensor\t18446744073709551615", &be, 8, UINT64_MAX);
    emit("be-valid.gguf", "OK", &be);
}

/* Truncation at representative points. */
static void truncation_cases(const struct bytes *base, const gguf_file *f)
{
    struct bytes b;
    struct kvpos k = kv_pos(f, "test.u32");
    struct kvpos s = kv_pos(f, "test.str");
    struct kvpos a = kv_pos(f, "test.arr");
    struct tpos t1 = t_pos(f, 1);
    struct tpos tl = t_pos(f, N_STD_TENSORS - 1);
    static const struct {
        const char *name;
        int which;
        const char *expect;
    } cuts[] = {
        {"trunc-empty.gguf", 0, "GGUF"},
        {"trunc-magic.gguf", 1, "GGUF"},
        {"trunc-version.gguf", 2, "version"},
        {"trunc-counts.gguf", 3, "count"},
        {"trunc-key.gguf", 4, "key 1"},
        {"trunc-string.gguf", 5, "test.str"},
        {"trunc-array.gguf", 6, "test.arr"},
        {"trunc-tensor-info.gguf", 7, "tensor 1"},
        {"trunc-before-padding.gguf", 8, "data"},
        {"trunc-data-start.gguf", 9, "data"},
        {"trunc-data.gguf", 10, "tensor 3\tblk.0.i8x"},
    };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        uint64_t at = 0;
        switch (cuts[i].which) {
        case 0: at = 0; break;
        case 1: at = 3; break;
        case 2: at = 6; break;
        case 3: at = 13; break;
        case 4: at = k.key + 4; break;          /* "test" of "test.u32" */
        case 5: at = s.val + 8 + 2; break;      /* "he" of "hello" */
        case 6: at = a.val + 12 + 6; break;     /* inside the second element */
        case 7: at = t1.dims + 8 + 3; break;    /* inside ne1 */
        case 8: at = gguf_header_size(f); break;
        case 9: at = gguf_data_offset(f); break;
        case 10: at = tl.data_offset + tl.size / 2; break;
        }
        b = b_copy(base);
        b_truncate(&b, at);
        emit(cuts[i].name, cuts[i].expect, &b);
    }
}

/* Lengths and counts of strings and arrays. */
static void length_cases(const struct bytes *base, const gguf_file *f)
{
    struct kvpos k = kv_pos(f, "test.u32");
    struct kvpos s = kv_pos(f, "test.str");
    struct kvpos a = kv_pos(f, "test.arr");
    struct kvpos sa = kv_pos(f, "test.strs");
    struct tpos t0 = t_pos(f, 0);

    emit_u64("string-len-past-end.gguf", "test.str", base, s.val, base->n);
    emit_u64("string-len-2e63.gguf", "test.str\t9223372036854775808", base, s.val,
             UINT64_C(1) << 63);
    emit_u64("string-len-max.gguf", "test.str\t18446744073709551615", base, s.val, UINT64_MAX);
    emit_u64("key-len-past-end.gguf", "key", base, k.off, base->n);
    emit_u64("key-len-2e63.gguf", "key\t9223372036854775808", base, k.off, UINT64_C(1) << 63);
    emit_u64("array-count-past-end.gguf", "test.arr\t1000000", base, a.val + 4, 1000000);
    emit_u64("array-count-2e63.gguf", "test.arr\t9223372036854775808", base, a.val + 4,
             UINT64_C(1) << 63);
    /* 2^62 u32 elements are 2^64 bytes: a size that wraps to 0. */
    emit_u64("array-bytes-wrap.gguf", "test.arr\t4611686018427387904", base, a.val + 4,
             UINT64_C(1) << 62);
    emit_u64("string-array-count-2e63.gguf", "test.strs\t9223372036854775808", base, sa.val + 4,
             UINT64_C(1) << 63);
    emit_u64("string-array-elem-len-max.gguf", "test.strs\t18446744073709551615", base,
             sa.val + 12, UINT64_MAX);   /* length of element 0 */
    emit_u64("tensor-name-len-2e63.gguf", "tensor 0\t9223372036854775808", base, t0.off,
             UINT64_C(1) << 63);
}

/* Value and element type ids, nesting depth. */
static void type_cases(const struct bytes *base, const gguf_file *f)
{
    struct kvpos k = kv_pos(f, "test.u32");
    struct kvpos a = kv_pos(f, "test.arr");

    emit_u32("kv-type-13.gguf", "test.u32\t13", base, k.type, GGUF_VT_COUNT);
    emit_u32("kv-type-max.gguf", "test.u32\t4294967295", base, k.type, UINT32_MAX);
    emit_u32("array-elem-type-13.gguf", "test.arr\t13", base, a.val, GGUF_VT_COUNT);
    emit_u32("array-elem-type-max.gguf", "test.arr\t4294967295", base, a.val, UINT32_MAX);

    /* Nested arrays replacing the value of test.arr: depth levels of
     * [ARRAY, count 1], the innermost [UINT8, count 1, byte].  8 is the cap. */
    static const struct {
        const char *name;
        unsigned depth;
        const char *expect;
    } nests[] = {
        {"nested-8.gguf", 8, "OK"},
        {"nested-9.gguf", 9, "test.arr\tnested"},
        {"nested-10000.gguf", 10000, "test.arr\tnested"},
    };
    for (size_t i = 0; i < sizeof nests / sizeof nests[0]; i++) {
        struct bytes v = {NULL, 0, 0, base->big, base->v1};
        for (unsigned d = 1; d < nests[i].depth; d++) b_arr(&v, GGUF_VT_ARRAY, 1);
        b_arr(&v, GGUF_VT_UINT8, 1);
        b_u8(&v, 0x2a);
        struct bytes b = b_copy(base);
        b_splice(&b, a.val, a.end - a.val, v.p, v.n);
        b_free(&v);
        emit(nests[i].name, nests[i].expect, &b);
    }
}

/* Keys: empty, duplicate, NUL inside, too long; BOOL values. */
static void key_cases(const struct bytes *base, const gguf_file *f)
{
    struct kvpos k = kv_pos(f, "test.u32");
    struct kvpos bb = kv_pos(f, "test.bbb");
    struct kvpos bo = kv_pos(f, "test.bool");
    struct kvpos bs = kv_pos(f, "test.bools");

    emit_string("key-empty.gguf", "key\tempty", base, k.off, k.type, 0, 0);
    emit_patch("key-duplicate.gguf", "duplicate key\ttest.aaa", base, bb.key, "test.aaa", 8);
    emit_patch("key-nul.gguf", "key\tNUL", base, k.key + 4, "", 1);   /* "test\0u32" */
    emit_string("key-65536.gguf", "key\t65536", base, k.off, k.type, 65536, 'k');
    emit_string("key-65535.gguf", "OK", base, k.off, k.type, 65535, 'k');
    emit_patch("bool-2.gguf", "test.bool\t2", base, bo.val, "\x02", 1);
    emit_patch("bool-array-2.gguf", "test.bools\t2", base, bs.val + 12 + 1,   /* element 1 */
               "\x02", 1);
}

/* general.alignment with a bad type or value.  The writer refuses those, so
 * the file is written with the key "general.alignmenX" and the last letter is
 * patched. */
static void alignment_cases(void)
{
    static const uint32_t none[1] = {0};
    static const struct {
        const char *name;
        int kind;
        uint64_t v;
        const char *expect;
    } cases[] = {
        {"align-u64.gguf", 0, 32, "general.alignment\tUINT64"},
        {"align-i32.gguf", 1, 32, "general.alignment\tINT32"},
        {"align-string.gguf", 2, 0, "general.alignment\tSTRING"},
        {"align-empty-array.gguf", 3, 0, "general.alignment\tARRAY"},
        {"align-0.gguf", 4, 0, "general.alignment\t0"},
        {"align-3.gguf", 4, 3, "general.alignment\t3"},
        {"align-2e31.gguf", 4, UINT64_C(1) << 31, "general.alignment\t2147483648"},
        {"align-2MiB.gguf", 4, UINT64_C(1) << 21, "general.alignment\t2097152"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct wbuild wb;
        const char *key = "general.alignmenX";
        wb_begin(&wb, 3, GGUF_LITTLE_ENDIAN);
        wb_std_kvs(&wb);
        int rc = GGUF_OK;
        switch (cases[i].kind) {
        case 0: rc = gguf_writer_add_u64(wb.w, key, cases[i].v, &wb.err); break;
        case 1: rc = gguf_writer_add_i32(wb.w, key, (int32_t)cases[i].v, &wb.err); break;
        case 2: rc = gguf_writer_add_str(wb.w, key, "32", 2, &wb.err); break;
        case 3: rc = gguf_writer_add_array(wb.w, key, GGUF_VT_UINT32, none, 0, &wb.err); break;
        case 4: rc = gguf_writer_add_u32(wb.w, key, (uint32_t)cases[i].v, &wb.err); break;
        }
        wcheck(&wb, rc, key);
        wb_std_tensors(&wb);
        struct bytes b = wb_finish(&wb);
        gguf_file *f = open_base(&b, "alignment base");
        struct kvpos p = kv_pos(f, key);
        gguf_close(f);
        b_patch(&b, p.key + p.keylen - 1, "t", 1);
        emit(cases[i].name, cases[i].expect, &b);
    }

    /* Valid controls: the smallest and a larger alignment. */
    static const uint32_t good[] = {1, 64};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        struct wbuild wb;
        wb_begin(&wb, 3, GGUF_LITTLE_ENDIAN);
        wb_std_kvs(&wb);
        wcheck(&wb, gguf_writer_add_u32(wb.w, "general.alignment", good[i], &wb.err), "align");
        wb_std_tensors(&wb);
        struct bytes b = wb_finish(&wb);
        char name[64];
        snprintf(name, sizeof name, "align-%u-valid.gguf", good[i]);
        emit(name, "OK", &b);
    }
}

/* Tensor infos: names, ranks, dims, types. */
static void tensor_cases(const struct bytes *base, const gguf_file *f)
{
    struct tpos t0 = t_pos(f, T_F32), t1 = t_pos(f, T_Q8), t3 = t_pos(f, T_I8);

    emit_string("tensor-name-empty.gguf", "tensor 1\tname", base, t1.off, t1.ndims, 0, 0);
    emit_patch("tensor-name-duplicate.gguf", "duplicate\tblk.0.f32", base, t1.name,
               std_tensors[T_F32].name, t1.namelen);
    emit_string("tensor-name-65.gguf", "tensor 1\t65", base, t1.off, t1.ndims, 65, 'n');
    emit_string("tensor-name-64.gguf", "OK", base, t1.off, t1.ndims, 64, 'n');
    emit_u32("n-dims-0.gguf", "tensor 1\tn_dims", base, t1.ndims, 0);
    emit_u32("n-dims-5.gguf", "tensor 1\tn_dims", base, t1.ndims, 5);

    /* A zero dim is a tensor of 0 bytes: valid. */
    emit_u64("zero-dim.gguf", "OK", base, t0.dims + 8, 0);
    emit_u64("zero-ne0-q8_0.gguf", "OK", base, t1.dims, 0);

    /* Element count 2^32 * 2^32 wraps to 0. */
    emit_dims2("dims-product-wrap.gguf", "tensor 0\tblk.0.f32", base, &t0, UINT64_C(1) << 32,
               UINT64_C(1) << 32);

    /* Four dims of 2^16: the product is 2^64, 0 after wrapping. */
    struct bytes b = b_copy(base);
    for (int d = 0; d < 4; d++) b_patch_u64(&b, t3.dims + 8 * (uint64_t)d, UINT64_C(1) << 16);
    emit("dims-product-wrap-4d.gguf", "tensor 3\tblk.0.i8x", &b);

    /* 2^31 x 2^31 F32: 2^62 elements fit, 2^64 bytes wrap to 0. */
    emit_dims2("bytes-wrap-f32-2d.gguf", "tensor 0\tblk.0.f32", base, &t0, UINT64_C(1) << 31,
               UINT64_C(1) << 31);

    /* ne0 = 2^62 - 1 F32: 2^64 - 4 bytes; padding it overflows. */
    emit_dims2("f32-ne0-2e62-1.gguf", "tensor 0\tblk.0.f32", base, &t0,
               (UINT64_C(1) << 62) - 1, 1);

    /* ne0 = 2^62 F32: 2^64 bytes, 0 after wrapping. */
    emit_dims2("f32-ne0-2e62.gguf", "tensor 0\tblk.0.f32", base, &t0, UINT64_C(1) << 62, 1);

    /* Q8_0: 542551296285575048 blocks of 34 bytes are 2^64 + 16 bytes, a
     * size that wraps to a plausible 16.  As one row, ne0 is past 2^63 (ggml
     * dims are int64); as 281401388481241 blocks x 1928 rows, each row's size
     * fits and the product wraps. */
    emit_dims2("q8_0-row-bytes-wrap.gguf", "tensor 1\tblk.0.q8_", base, &t1,
               UINT64_C(542551296285575048) * 32, 1);
    emit_dims2("q8_0-bytes-wrap.gguf", "tensor 1\tblk.0.q8_", base, &t1,
               UINT64_C(281401388481241) * 32, 1928);

    emit_u64("ne0-not-block-multiple.gguf", "tensor 1\t33", base, t1.dims, 33);
    emit_u32("tensor-type-99.gguf", "tensor 1\t99", base, t1.type, 99);
    emit_u32("tensor-type-max.gguf", "tensor 1\t4294967295", base, t1.type, UINT32_MAX);
}

/* Data offsets: misaligned, past the end, wrapping, overlapping. */
static void offset_cases(const struct bytes *base, const gguf_file *f)
{
    struct tpos t0 = t_pos(f, T_F32), t1 = t_pos(f, T_Q8);
    uint64_t doff = gguf_data_offset(f);
    uint64_t rel0 = t0.data_offset - doff, rel1 = t1.data_offset - doff;

    emit_u64("offset-misaligned.gguf", "tensor 1\talign", base, t1.offset, rel1 + 1);
    emit_u64("offset-past-end.gguf", "tensor 1\tblk.0.q8_", base, t1.offset, UINT64_C(1) << 40);
    emit_u64("offset-wraps.gguf", "tensor 1\tblk.0.q8_", base, t1.offset,
             UINT64_MAX - 31);   /* aligned; + size wraps */
    emit_u64("offset-overlap.gguf", "overlap", base, t1.offset, rel0);

    /* A data section that starts past the end: header only, no padding. */
    struct bytes b = b_copy(base);
    b_truncate(&b, gguf_header_size(f));
    emit("data-section-past-end.gguf", "data", &b);
}

static void usage(int status)
{
    FILE *out = status ? stderr : stdout;
    fprintf(out,
            "Usage: %s -o DIR\n"
            "       %s --sanitizer\n"
            "Writes malformed GGUF files and DIR/MANIFEST (NAME, TAB, expected\n"
            "message substrings or OK).  --sanitizer prints yes when built with\n"
            "AddressSanitizer.\n",
            prog, prog);
    exit(status);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"sanitizer", no_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': outdir = optarg; break;
        case 'S': {
            int asan = 0;
#if defined(__SANITIZE_ADDRESS__)
            asan = 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
            asan = 1;
#endif
#endif
            puts(asan ? "yes" : "no");
            return 0;
        }
        case 'h': usage(0); break;
        default: usage(2);
        }
    }
    if (!outdir || optind != argc) usage(2);
    if (mkdir(outdir, 0777) != 0 && errno != EEXIST) die("%s: %s", outdir, strerror(errno));
    char path[4096];
    snprintf(path, sizeof path, "%s/MANIFEST", outdir);
    manifest = fopen(path, "w");
    if (!manifest) die("%s: %s", path, strerror(errno));

    struct bytes base = std_base(3, GGUF_LITTLE_ENDIAN);
    gguf_file *f = open_base(&base, "base");

    header_cases(&base);
    truncation_cases(&base, f);
    length_cases(&base, f);
    type_cases(&base, f);
    key_cases(&base, f);
    alignment_cases();
    tensor_cases(&base, f);
    offset_cases(&base, f);

    gguf_close(f);
    emit("valid.gguf", "OK", &base);
    if (fclose(manifest) != 0) die("%s: write error", path);
    fprintf(stderr, "%s: %u malformed files and %u valid controls in %s\n", prog, n_bad, n_ok,
            outdir);
    return 0;
}
