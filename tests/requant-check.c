/*
 * requant-check -- checks the output of gguf-requant against its input,
 * independently of the tool.  Used by tests/test-requant*.sh.
 *
 *   requant-check IN OUT
 *
 * Checks that OUT has IN's version, byte order and alignment; IN's KV pairs
 * in IN's order, byte for byte, apart from general.file_type and the
 * gguf_tools.requant.* provenance keys (which OUT must have: the tool name
 * and the rules as a string array); and IN's tensors in IN's order with
 * the same names and shapes, each either of the same type and byte-identical,
 * or of another type and equal, row by row, to quantize(dequantize(IN row))
 * computed here one row at a time on the scalar path (the tool uses the
 * multi-threaded gguf_convert_rows on the best SIMD path).
 *
 * Prints one line per tensor to stdout: "copied NAME TYPE" or
 * "converted NAME FROM TO".  Exit status: 0 all checks hold, 1 a check
 * failed (each failure on stderr), 2 trouble (a file cannot be read).
 *
 * Two more modes make inputs the generator does not:
 *
 *   requant-check --make ALIGN OUT
 *     writes a small file through the library's writer with
 *     general.alignment = ALIGN and no general.file_type: tensors
 *     "a.weight" F16 [256, 4], "norm.weight" F32 [256], "b.weight" F32
 *     [256, 3], with values from a fixed formula.
 *
 *   requant-check --swap A B IN OUT
 *     copies IN (a little-endian GGUF v2 or v3 file) to OUT with the data
 *     offsets of tensors number A and B (which must be of one size)
 *     exchanged, so that tensor data is no longer in directory order.
 */
#include <config.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "quant/quant.h"

#define PROG "requant-check"
#define PROV_PREFIX "gguf_tools.requant."

static int failures;

/* Records a failed check. */
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    failures++;
}

/* 1 for keys that gguf-requant may change or add. */
static int changeable(const gguf_kv *kv)
{
    static const char ft[] = "general.file_type";
    size_t np = sizeof PROV_PREFIX - 1;
    return (kv->key.len == sizeof ft - 1 && memcmp(kv->key.ptr, ft, kv->key.len) == 0) ||
           (kv->key.len >= np && memcmp(kv->key.ptr, PROV_PREFIX, np) == 0);
}

/* Raw bytes of KV pair i of f: from its key length field to the next pair
 * (or the tensor infos). */
static const unsigned char *kv_bytes(const gguf_file *f, uint64_t i, size_t *len)
{
    const gguf_kv *kv = gguf_kv_at(f, i);
    uint64_t end;
    if (i + 1 < gguf_kv_count(f)) end = gguf_kv_at(f, i + 1)->offset;
    else if (gguf_tensor_count(f) > 0) end = gguf_tensor_at(f, 0)->info_offset;
    else end = gguf_header_size(f);
    *len = (size_t)(end - kv->offset);
    return (const unsigned char *)gguf_header_bytes(f) + kv->offset;
}

static void check_kvs(const gguf_file *in, const gguf_file *out)
{
    uint64_t ni = gguf_kv_count(in), no = gguf_kv_count(out), i = 0, o = 0;
    for (;;) {
        while (i < ni && changeable(gguf_kv_at(in, i))) i++;
        while (o < no && changeable(gguf_kv_at(out, o))) o++;
        if (i == ni || o == no) break;
        const gguf_kv *a = gguf_kv_at(in, i), *b = gguf_kv_at(out, o);
        size_t la, lb;
        const unsigned char *pa = kv_bytes(in, i, &la), *pb = kv_bytes(out, o, &lb);
        if (la != lb || memcmp(pa, pb, la) != 0) {
            fail("input KV %llu '%.*s' differs from output KV %llu '%.*s'",
                 (unsigned long long)i, (int)a->key.len, a->key.ptr, (unsigned long long)o,
                 (int)b->key.len, b->key.ptr);
            return;
        }
        i++;
        o++;
    }
    if (i < ni) fail("input KV '%.*s' is missing from the output", (int)gguf_kv_at(in, i)->key.len,
                     gguf_kv_at(in, i)->key.ptr);
    if (o < no) fail("output KV '%.*s' is not in the input", (int)gguf_kv_at(out, o)->key.len,
                     gguf_kv_at(out, o)->key.ptr);

    /* general.file_type keeps its place among the pairs. */
    const gguf_kv *fi = gguf_kv_find(in, "general.file_type");
    const gguf_kv *fo = gguf_kv_find(out, "general.file_type");
    if (fi && !fo) fail("general.file_type is missing from the output");
    if (fi && fo) {
        uint64_t before_in = 0, before_out = 0;   /* unchanged pairs before it */
        for (uint64_t k = 0; k < ni && gguf_kv_at(in, k) != fi; k++)
            before_in += !changeable(gguf_kv_at(in, k));
        for (uint64_t k = 0; k < no && gguf_kv_at(out, k) != fo; k++)
            before_out += !changeable(gguf_kv_at(out, k));
        if (before_in != before_out) fail("general.file_type moved");
        if (fo->value.type != GGUF_VT_UINT32)
            fail("general.file_type is not UINT32 in the output");
    }

    /* Provenance. */
    gguf_str tool;
    const gguf_value *rules;
    if (gguf_kv_str(out, PROV_PREFIX "tool", &tool, NULL) != GGUF_OK ||
        tool.len < 13 || memcmp(tool.ptr, "gguf-requant ", 13) != 0)
        fail(PROV_PREFIX "tool is missing or does not name gguf-requant");
    if (gguf_kv_array(out, PROV_PREFIX "rules", GGUF_VT_STRING, &rules, NULL) != GGUF_OK)
        fail(PROV_PREFIX "rules is missing or not a string array");
}

/* Compares converted tensor data row by row with the scalar reference. */
static void check_converted(gguf_file *in, gguf_file *out, const gguf_tensor *a,
                            const gguf_tensor *b)
{
    uint64_t ne0 = a->ne[0];
    uint64_t ra = gguf_row_bytes(a->type, ne0), rb = gguf_row_bytes(b->type, ne0);
    if (ne0 == 0 || a->n_elements == 0) return;
    uint64_t nrows = a->n_elements / ne0;
    if (ra == 0 || rb == 0 || b->size != rb * nrows) {
        fail("tensor '%.*s': output size does not fit its type", (int)a->name.len, a->name.ptr);
        return;
    }
    float *x = malloc(ne0 * sizeof *x);
    unsigned char *q = malloc(rb);
    unsigned char *src = malloc(ra), *dst = malloc(rb);
    if (!x || !q || !src || !dst) {
        fprintf(stderr, PROG ": out of memory\n");
        exit(2);
    }
    uint64_t bad = 0, first_bad = 0;
    for (uint64_t r = 0; r < nrows; r++) {
        if (gguf_read_data(in, a->file_offset + r * ra, src, ra, NULL) ||
            gguf_read_data(out, b->file_offset + r * rb, dst, rb, NULL)) {
            fprintf(stderr, PROG ": cannot read tensor data\n");
            exit(2);
        }
        if (gguf_dequantize_row(a->type, src, x, (int64_t)ne0) ||
            gguf_quantize_row(b->type, x, q, (int64_t)ne0)) {
            fail("tensor '%.*s': the quant API refuses the conversion", (int)a->name.len,
                 a->name.ptr);
            break;
        }
        if (memcmp(q, dst, rb) != 0 && bad++ == 0) first_bad = r;
    }
    if (bad) {
        fail("tensor '%.*s': %llu of %llu rows differ from quantize(dequantize(input)), "
             "first row %llu", (int)a->name.len, a->name.ptr, (unsigned long long)bad,
             (unsigned long long)nrows, (unsigned long long)first_bad);
    }
    free(x);
    free(q);
    free(src);
    free(dst);
}

static void check_copied(gguf_file *in, gguf_file *out, const gguf_tensor *a, const gguf_tensor *b)
{
    if (a->size != b->size) {
        fail("tensor '%.*s': size changed", (int)a->name.len, a->name.ptr);
        return;
    }
    size_t chunk = 1 << 20;
    unsigned char *pa = malloc(chunk), *pb = malloc(chunk);
    if (!pa || !pb) exit(2);
    for (uint64_t off = 0; off < a->size; off += chunk) {
        size_t k = a->size - off < chunk ? (size_t)(a->size - off) : chunk;
        if (gguf_read_data(in, a->file_offset + off, pa, k, NULL) ||
            gguf_read_data(out, b->file_offset + off, pb, k, NULL))
            exit(2);
        if (memcmp(pa, pb, k) != 0) {
            fail("tensor '%.*s': bytes differ in the chunk at data byte %llu", (int)a->name.len,
                 a->name.ptr, (unsigned long long)off);
            break;
        }
    }
    free(pa);
    free(pb);
}

static gguf_file *open_or_die(const char *path)
{
    gguf_file *f;
    gguf_error err;
    if (gguf_open(&f, path, NULL, 0, &err) != GGUF_OK) {
        fprintf(stderr, PROG ": %s\n", err.message);
        exit(2);
    }
    return f;
}

/* --make: see the top of the file. */
static int make_file(const char *align_s, const char *path)
{
    gguf_error err;
    gguf_writer *w = gguf_writer_new();
    unsigned long align = strtoul(align_s, NULL, 10);
    static const uint64_t ne_a[2] = { 256, 4 }, ne_n[1] = { 256 }, ne_b[2] = { 256, 3 };
    if (!w) return 2;
    if (gguf_writer_add_str(w, "general.architecture", "test", 4, &err) ||
        gguf_writer_add_u32(w, "general.alignment", (uint32_t)align, &err) ||
        gguf_writer_add_f32(w, "test.value", 0.5f, &err) ||
        gguf_writer_add_tensor(w, "a.weight", GGUF_T_F16, 2, ne_a, &err) ||
        gguf_writer_add_tensor(w, "norm.weight", GGUF_T_F32, 1, ne_n, &err) ||
        gguf_writer_add_tensor(w, "b.weight", GGUF_T_F32, 2, ne_b, &err) ||
        gguf_writer_open(w, path, &err))
        goto bad;
    for (int i = 0; i < 1024; i++) {
        uint16_t h = gguf_fp32_to_fp16((float)((i * 37) % 101 - 50) / 64.0f);
        if (gguf_writer_write(w, &h, 2, &err)) goto bad;
    }
    for (int i = 0; i < 256 + 768; i++) {
        float v = i < 256 ? 1.0f + (float)(i % 7) / 8.0f : (float)((i * 53) % 97 - 48) / 32.0f;
        if (gguf_writer_write(w, &v, 4, &err)) goto bad;
    }
    if (gguf_writer_finish(w, &err)) goto bad;
    gguf_writer_free(w);
    return 0;
bad:
    fprintf(stderr, PROG ": %s\n", err.message);
    gguf_writer_free(w);
    return 2;
}

/* --swap: see the top of the file. */
static int swap_offsets(const char *a_s, const char *b_s, const char *in_path, const char *out_path)
{
    gguf_file *f = open_or_die(in_path);
    uint64_t ia = strtoull(a_s, NULL, 10), ib = strtoull(b_s, NULL, 10);
    const gguf_tensor *a = gguf_tensor_at(f, ia), *b = gguf_tensor_at(f, ib);
    if (!a || !b || a->size != b->size || gguf_version(f) < 2 ||
        gguf_byte_order(f) != GGUF_LITTLE_ENDIAN || gguf_input_mode(f) != GGUF_INPUT_MAPPED) {
        fprintf(stderr, PROG ": --swap: need two tensors of one size in a mapped LE v2/v3 file\n");
        return 2;
    }
    /* The offset field ends each tensor info: name length (8), name,
     * n_dims (4), dims (8 each), type (4), offset (8). */
    uint64_t fa = a->info_offset + 8 + a->name.len + 4 + 8ull * a->n_dims + 4;
    uint64_t fb = b->info_offset + 8 + b->name.len + 4 + 8ull * b->n_dims + 4;
    uint64_t size = gguf_file_size(f);
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf || gguf_read_data(f, 0, buf, size, NULL)) return 2;
    unsigned char t[8];
    memcpy(t, buf + fa, 8);
    memcpy(buf + fa, buf + fb, 8);
    memcpy(buf + fb, t, 8);
    FILE *o = fopen(out_path, "wb");
    if (!o || fwrite(buf, 1, size, o) != size || fclose(o) != 0) {
        fprintf(stderr, PROG ": %s: cannot write\n", out_path);
        return 2;
    }
    free(buf);
    gguf_close(f);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--make") == 0) return make_file(argv[2], argv[3]);
    if (argc == 6 && strcmp(argv[1], "--swap") == 0)
        return swap_offsets(argv[2], argv[3], argv[4], argv[5]);
    if (argc != 3) {
        fprintf(stderr, "usage: " PROG " IN OUT\n");
        return 2;
    }
    gguf_simd_set(GGUF_SIMD_SCALAR);
    gguf_file *in = open_or_die(argv[1]), *out = open_or_die(argv[2]);
    if (gguf_version(in) != gguf_version(out)) fail("version changed");
    if (gguf_byte_order(in) != gguf_byte_order(out)) fail("byte order changed");
    if (gguf_alignment(in) != gguf_alignment(out)) fail("alignment changed");
    check_kvs(in, out);
    uint64_t n = gguf_tensor_count(in);
    if (n != gguf_tensor_count(out)) {
        fail("tensor count changed");
        n = 0;
    }
    for (uint64_t i = 0; i < n; i++) {
        const gguf_tensor *a = gguf_tensor_at(in, i), *b = gguf_tensor_at(out, i);
        if (a->name.len != b->name.len || memcmp(a->name.ptr, b->name.ptr, a->name.len) != 0) {
            fail("tensor %llu '%.*s': name or place changed", (unsigned long long)i,
                 (int)a->name.len, a->name.ptr);
            continue;
        }
        if (a->n_dims != b->n_dims || memcmp(a->ne, b->ne, sizeof a->ne) != 0) {
            fail("tensor '%.*s': shape changed", (int)a->name.len, a->name.ptr);
            continue;
        }
        if (b->file_offset % gguf_alignment(out) != 0)
            fail("tensor '%.*s': data not aligned", (int)a->name.len, a->name.ptr);
        if (a->type == b->type) {
            printf("copied %.*s %s\n", (int)a->name.len, a->name.ptr, gguf_type_str(a->type));
            check_copied(in, out, a, b);
        } else {
            printf("converted %.*s %s %s\n", (int)a->name.len, a->name.ptr,
                   gguf_type_str(a->type), gguf_type_str(b->type));
            check_converted(in, out, a, b);
        }
    }
    gguf_close(in);
    gguf_close(out);
    if (fflush(stdout) != 0) return 2;
    return failures ? 1 : 0;
}
