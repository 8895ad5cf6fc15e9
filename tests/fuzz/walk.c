/* walk.c -- checks over open GGUF files for the harnesses; see walk.h. */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/walk.h"

void fuzz_check_refusal(int rc, const gguf_file *f, const gguf_error *err, const char *name,
                        int io_ok)
{
    FUZZ_ASSERT(rc == GGUF_E_FORMAT || rc == GGUF_E_UNSUPPORTED || rc == GGUF_E_NOMEM ||
                    (io_ok && rc == GGUF_E_IO),
                "status %d for hostile input: %s", rc, err->message);
    FUZZ_ASSERT(f == NULL, "a handle after a refusal");
    FUZZ_ASSERT(err->status == rc, "err->status %d, returned %d", err->status, rc);
    size_t n = strlen(name);
    FUZZ_ASSERT(strncmp(err->message, name, n) == 0 && strncmp(err->message + n, ": ", 2) == 0,
                "message does not start with the name: '%s'", err->message);
    FUZZ_ASSERT(strlen(err->message) > n + 2, "empty message");
    if (rc == GGUF_E_FORMAT)
        FUZZ_ASSERT(err->offset != UINT64_MAX && strstr(err->message, "byte") != NULL,
                    "a malformed file without the offset: '%s'", err->message);
}

/* Bytes [p, p + n) lie inside [base, base + size). */
static int inside(const void *p, size_t n, const void *base, size_t size)
{
    const uint8_t *x = p, *b = base;
    return x >= b && n <= size && (size_t)(x - b) <= size - n;
}

/* Checks one value (recursively for arrays); strings must lie inside the
 * header bytes. */
static void walk_value(const gguf_file *f, const gguf_value *v, unsigned depth)
{
    const void *hdr = gguf_header_bytes(f);
    size_t hsize = (size_t)gguf_header_size(f);
    FUZZ_ASSERT(v->type < GGUF_VT_COUNT, "value type %u", v->type);
    FUZZ_ASSERT(v->offset < hsize, "value offset %llu past the header (%zu)",
                (unsigned long long)v->offset, hsize);
    if (v->type == GGUF_VT_BOOL) FUZZ_ASSERT(v->v.b == 0 || v->v.b == 1, "BOOL %d", v->v.b);
    if (v->type == GGUF_VT_STRING)
        FUZZ_ASSERT(inside(v->v.str.ptr, v->v.str.len, hdr, hsize), "string outside the header");
    if (v->type != GGUF_VT_ARRAY) return;

    FUZZ_ASSERT(depth <= 64, "arrays nested %u deep", depth);
    FUZZ_ASSERT(v->elem_type < GGUF_VT_COUNT, "element type %u", v->elem_type);
    size_t esz = gguf_vtype_size(v->elem_type);
    const uint8_t *raw = gguf_array_data(v);
    int host = gguf_byte_order(f) == GGUF_LITTLE_ENDIAN; /* the harnesses run little-endian */
    FUZZ_ASSERT((raw != NULL) == (esz > 0 && (host || esz == 1)),
                "gguf_array_data %p for elements of %zu bytes", (const void *)raw, esz);
    if (raw) FUZZ_ASSERT(inside(raw, (size_t)(v->count * esz), hdr, hsize), "array data outside");
    gguf_value e;
    for (uint64_t i = 0; i < v->count; i++) {
        FUZZ_ASSERT(gguf_array_get(v, i, &e) == GGUF_OK, "element %llu of %llu",
                    (unsigned long long)i, (unsigned long long)v->count);
        FUZZ_ASSERT(e.type == v->elem_type, "element type %u in an array of %u", e.type,
                    v->elem_type);
        if (raw) FUZZ_ASSERT(memcmp(raw + i * esz, &e.v, esz) == 0, "element %llu differs from "
                             "gguf_array_data", (unsigned long long)i);
        gguf_str s = gguf_array_str(v, i);
        if (v->elem_type == GGUF_VT_STRING)
            FUZZ_ASSERT(s.ptr == e.v.str.ptr && s.len == e.v.str.len, "gguf_array_str differs");
        else
            FUZZ_ASSERT(s.ptr == NULL && s.len == 0, "gguf_array_str of a non-string array");
        walk_value(f, &e, depth + 1);
    }
    FUZZ_ASSERT(gguf_array_get(v, v->count, &e) == GGUF_E_INVALID, "element past the end");
}

/* Exactly the typed getter of the value's type accepts the key. */
static void typed_getters(const gguf_file *f, const char *key, const gguf_value *v)
{
    union {
        uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
        uint64_t u64; int64_t i64; float f32; double f64; int b; gguf_str s;
    } o;
    int rc[GGUF_VT_COUNT];
    rc[GGUF_VT_UINT8] = gguf_kv_u8(f, key, &o.u8, NULL);
    rc[GGUF_VT_INT8] = gguf_kv_i8(f, key, &o.i8, NULL);
    rc[GGUF_VT_UINT16] = gguf_kv_u16(f, key, &o.u16, NULL);
    rc[GGUF_VT_INT16] = gguf_kv_i16(f, key, &o.i16, NULL);
    rc[GGUF_VT_UINT32] = gguf_kv_u32(f, key, &o.u32, NULL);
    rc[GGUF_VT_INT32] = gguf_kv_i32(f, key, &o.i32, NULL);
    rc[GGUF_VT_FLOAT32] = gguf_kv_f32(f, key, &o.f32, NULL);
    rc[GGUF_VT_BOOL] = gguf_kv_bool(f, key, &o.b, NULL);
    rc[GGUF_VT_STRING] = gguf_kv_str(f, key, &o.s, NULL);
    rc[GGUF_VT_UINT64] = gguf_kv_u64(f, key, &o.u64, NULL);
    rc[GGUF_VT_INT64] = gguf_kv_i64(f, key, &o.i64, NULL);
    rc[GGUF_VT_FLOAT64] = gguf_kv_f64(f, key, &o.f64, NULL);
    const gguf_value *arr = NULL;
    rc[GGUF_VT_ARRAY] = gguf_kv_array(f, key, v->elem_type, &arr, NULL);
    for (uint32_t t = 0; t < GGUF_VT_COUNT; t++)
        FUZZ_ASSERT(rc[t] == (t == v->type ? GGUF_OK : GGUF_E_TYPE),
                    "getter for type %u on a value of type %u: %d", t, v->type, rc[t]);
    if (v->type == GGUF_VT_ARRAY) FUZZ_ASSERT(arr == v, "gguf_kv_array gives another value");
    uint64_t u;
    int urc = gguf_kv_uint(f, key, &u, NULL);
    int integer = v->type <= GGUF_VT_INT32 || v->type == GGUF_VT_UINT64 || v->type == GGUF_VT_INT64;
    FUZZ_ASSERT(urc == GGUF_OK || urc == GGUF_E_TYPE, "gguf_kv_uint: %d", urc);
    if (!integer) FUZZ_ASSERT(urc == GGUF_E_TYPE, "gguf_kv_uint on type %u", v->type);
}

void fuzz_walk_file(gguf_file *f, const uint8_t *data, size_t size)
{
    uint64_t hs = gguf_header_size(f), doff = gguf_data_offset(f), dend = gguf_data_end(f);
    uint32_t a = gguf_alignment(f);
    FUZZ_ASSERT(gguf_version(f) >= 1 && gguf_version(f) <= 3, "version %u", gguf_version(f));
    FUZZ_ASSERT(a && (a & (a - 1)) == 0, "alignment %u", a);
    FUZZ_ASSERT(hs <= doff && doff - hs < a && doff % a == 0, "header %llu, data offset %llu",
                (unsigned long long)hs, (unsigned long long)doff);
    FUZZ_ASSERT(dend >= doff, "data end %llu before the data offset %llu",
                (unsigned long long)dend, (unsigned long long)doff);
    if (data) {
        FUZZ_ASSERT(gguf_header_bytes(f) == data, "header bytes are not the input");
        FUZZ_ASSERT(gguf_file_size(f) == size, "size %llu, input %zu",
                    (unsigned long long)gguf_file_size(f), size);
        FUZZ_ASSERT(hs <= size, "header %llu past the input %zu", (unsigned long long)hs, size);
        if (gguf_tensor_count(f)) FUZZ_ASSERT(dend <= size, "data end past the input");
    } else {
        FUZZ_ASSERT(memcmp(gguf_header_bytes(f), "GGUF", 4) == 0, "header bytes lost");
    }

    uint64_t n_kv = gguf_kv_count(f);
    FUZZ_ASSERT(gguf_kv_at(f, n_kv) == NULL, "KV past the end");
    for (uint64_t i = 0; i < n_kv; i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        FUZZ_ASSERT(kv != NULL, "KV %llu", (unsigned long long)i);
        FUZZ_ASSERT(kv->key.len > 0 && inside(kv->key.ptr, kv->key.len, gguf_header_bytes(f),
                                              (size_t)hs), "key outside the header");
        FUZZ_ASSERT(kv->offset < kv->value.offset, "key after its value");
        walk_value(f, &kv->value, 0);
        if (!memchr(kv->key.ptr, '\0', kv->key.len)) {
            char *key = strndup(kv->key.ptr, kv->key.len);
            if (!key) FUZZ_TROUBLE("out of memory");
            FUZZ_ASSERT(gguf_kv_find(f, key) == kv, "gguf_kv_find(%s) is not KV %llu", key,
                        (unsigned long long)i);
            typed_getters(f, key, &kv->value);
            free(key);
        }
    }

    uint64_t n_t = gguf_tensor_count(f);
    FUZZ_ASSERT(gguf_tensor_at(f, n_t) == NULL, "tensor past the end");
    for (uint64_t i = 0; i < n_t; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        FUZZ_ASSERT(t && gguf_tensor_index(f, t) == i, "tensor %llu", (unsigned long long)i);
        FUZZ_ASSERT(t->name.len > 0 && t->name.len <= GGUF_TENSOR_NAME_MAX &&
                        inside(t->name.ptr, t->name.len, gguf_header_bytes(f), (size_t)hs),
                    "tensor name");
        const gguf_type_info *ti = gguf_type_get(t->type);
        FUZZ_ASSERT(ti != NULL, "tensor type %u", t->type);
        FUZZ_ASSERT(t->n_dims >= 1 && t->n_dims <= 4, "n_dims %u", t->n_dims);
        uint64_t elems = 1;
        for (unsigned d = 0; d < 4; d++) {
            FUZZ_ASSERT(d < t->n_dims || t->ne[d] == 1, "dim %u past n_dims is %llu", d,
                        (unsigned long long)t->ne[d]);
            FUZZ_ASSERT(!__builtin_mul_overflow(elems, t->ne[d], &elems), "elements overflow");
        }
        FUZZ_ASSERT(elems == t->n_elements, "n_elements");
        FUZZ_ASSERT(t->ne[0] % ti->block_size == 0, "ne0 not a multiple of the block size");
        uint64_t rows = t->ne[0] ? t->n_elements / t->ne[0] : 0;
        FUZZ_ASSERT(t->ne[0] == 0 || t->size == gguf_row_bytes(t->type, t->ne[0]) * rows,
                    "size %llu", (unsigned long long)t->size);
        FUZZ_ASSERT(t->offset % a == 0 && t->file_offset == doff + t->offset, "offsets");
        FUZZ_ASSERT(t->file_offset + t->size <= dend, "data past the data end");
        if (data) {
            FUZZ_ASSERT(t->data == data + t->file_offset, "data pointer");
            if (t->size <= 65536) {
                uint8_t *buf = malloc(t->size ? (size_t)t->size : 1);
                if (!buf) FUZZ_TROUBLE("out of memory");
                gguf_error err;
                FUZZ_ASSERT(gguf_read_data(f, t->file_offset, buf, (size_t)t->size, &err) == GGUF_OK,
                            "read_data: %s", err.message);
                FUZZ_ASSERT(memcmp(buf, t->data, (size_t)t->size) == 0, "read_data differs");
                free(buf);
            }
        } else {
            FUZZ_ASSERT(t->data == NULL, "a stream tensor with a data pointer");
        }
        if (!memchr(t->name.ptr, '\0', t->name.len)) {
            char name[GGUF_TENSOR_NAME_MAX + 1];
            memcpy(name, t->name.ptr, t->name.len);
            name[t->name.len] = '\0';
            FUZZ_ASSERT(gguf_tensor_find(f, name) == t, "gguf_tensor_find(%s)", name);
        }
    }
}

/* The same value in two files. */
static void same_value(const gguf_value *a, const gguf_value *b, unsigned depth)
{
    FUZZ_ASSERT(a->type == b->type, "types %u and %u", a->type, b->type);
    switch (a->type) {
    case GGUF_VT_STRING:
        FUZZ_ASSERT(a->v.str.len == b->v.str.len &&
                        memcmp(a->v.str.ptr, b->v.str.ptr, a->v.str.len) == 0,
                    "strings differ");
        return;
    case GGUF_VT_ARRAY: {
        FUZZ_ASSERT(a->elem_type == b->elem_type && a->count == b->count,
                    "arrays of %llu %u and %llu %u", (unsigned long long)a->count, a->elem_type,
                    (unsigned long long)b->count, b->elem_type);
        gguf_value ea, eb;
        for (uint64_t i = 0; i < a->count; i++) {
            FUZZ_ASSERT(gguf_array_get(a, i, &ea) == GGUF_OK && gguf_array_get(b, i, &eb) == GGUF_OK,
                        "element %llu", (unsigned long long)i);
            same_value(&ea, &eb, depth + 1);
        }
        return;
    }
    default: {
        size_t sz = gguf_vtype_size(a->type);
        FUZZ_ASSERT(sz && memcmp(&a->v, &b->v, sz) == 0, "scalars of type %u differ", a->type);
        return;
    }
    }
}

void fuzz_same_content(const gguf_file *a, const gguf_file *b, int same_order)
{
    FUZZ_ASSERT(gguf_version(a) == gguf_version(b), "versions %u and %u", gguf_version(a),
                gguf_version(b));
    if (same_order)
        FUZZ_ASSERT(gguf_byte_order(a) == gguf_byte_order(b), "byte orders differ");
    FUZZ_ASSERT(gguf_alignment(a) == gguf_alignment(b), "alignments %u and %u", gguf_alignment(a),
                gguf_alignment(b));
    FUZZ_ASSERT(gguf_kv_count(a) == gguf_kv_count(b), "KV counts %llu and %llu",
                (unsigned long long)gguf_kv_count(a), (unsigned long long)gguf_kv_count(b));
    for (uint64_t i = 0; i < gguf_kv_count(a); i++) {
        const gguf_kv *x = gguf_kv_at(a, i), *y = gguf_kv_at(b, i);
        FUZZ_ASSERT(x->key.len == y->key.len && memcmp(x->key.ptr, y->key.ptr, x->key.len) == 0,
                    "key %llu differs", (unsigned long long)i);
        same_value(&x->value, &y->value, 0);
    }
    FUZZ_ASSERT(gguf_tensor_count(a) == gguf_tensor_count(b), "tensor counts differ");
    for (uint64_t i = 0; i < gguf_tensor_count(a); i++) {
        const gguf_tensor *x = gguf_tensor_at(a, i), *y = gguf_tensor_at(b, i);
        FUZZ_ASSERT(x->name.len == y->name.len && memcmp(x->name.ptr, y->name.ptr, x->name.len) == 0,
                    "tensor %llu: names differ", (unsigned long long)i);
        FUZZ_ASSERT(x->type == y->type && x->n_dims == y->n_dims &&
                        memcmp(x->ne, y->ne, sizeof x->ne) == 0 && x->size == y->size,
                    "tensor %llu: type or shape differs", (unsigned long long)i);
    }
}

void fuzz_same_refusal(int rc_a, const gguf_error *a, int rc_b, const gguf_error *b,
                       const char *what)
{
    FUZZ_ASSERT(rc_a == rc_b, "%s: status %d ('%s') against %d ('%s')", what, rc_a, a->message,
                rc_b, b->message);
    FUZZ_ASSERT(strcmp(a->message, b->message) == 0, "%s: messages differ:\n  '%s'\n  '%s'", what,
                a->message, b->message);
}
