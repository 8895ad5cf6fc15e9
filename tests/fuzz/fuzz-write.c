/*
 * fuzz-write.c -- the writer: read(write(x)) == x.
 *
 * The input is a recipe: a byte for the version (1 to 3) and byte order,
 * then operations, each a byte for its kind and the bytes it takes: a
 * scalar KV of any type, a string, an array of scalars or of strings,
 * general.alignment, a tensor of any type and small dims.  Keys and names
 * come from the input, so duplicates, empty and overlong ones occur.  The
 * writer must refuse exactly the operations the format forbids
 * (GGUF_E_INVALID, the writer unchanged) and take the rest; the output,
 * written into memory and read back, must hold exactly what was taken, in
 * order, with the tensor bytes given, at the data offset and total size
 * the writer announced.  Copying that file again (gguf_writer_copy_kv) must
 * give the same bytes.
 *
 * When the input itself is a GGUF file the reader accepts, it is copied
 * too (every KV pair, nested arrays included, and every tensor with its
 * data) and the copy must read back with the same content.
 */
#include <config.h>

#include "gguf/gguf.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/walk.h"

#define MAX_OPS 96
#define MAX_DATA (1u << 18)

/* One KV pair taken by the writer, as the reader must give it back. */
struct want_kv {
    char key[48];
    uint32_t type, elem_type;
    uint64_t bits;              /* scalars */
    const uint8_t *p;           /* strings: bytes in the input or in `arena` */
    size_t len;
    uint64_t count;             /* arrays */
    uint8_t *elems;             /* fixed-size elements, host order (malloc'ed) */
    gguf_str *strs;             /* string elements (malloc'ed table) */
};

struct want_tensor {
    char name[80];
    uint32_t type, n_dims;
    uint64_t ne[4], size;
    uint64_t seed;              /* its bytes: fill(seed) */
};

struct recipe {
    uint32_t version;
    int order;
    struct want_kv kv[MAX_OPS];
    size_t n_kv;
    struct want_tensor t[MAX_OPS];
    size_t n_t;
    uint32_t alignment;
    uint64_t data;              /* tensor bytes so far */
};

/* The bytes of a tensor: a function of its seed. */
static void fill(uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (uint8_t)(seed >> 56);
    }
}

/* A NUL-terminated name from the input: a length byte, then bytes (a NUL
 * among them ends the name early, as the API takes C strings). */
static void take_name(struct fuzz_in *in, char *buf, size_t cap)
{
    size_t len = fz_u8(in) % cap;
    const uint8_t *p;
    len = fz_bytes(in, len, &p);
    memcpy(buf, p, len);
    buf[len] = '\0';
}

static int key_taken(const struct recipe *r, const char *key)
{
    for (size_t i = 0; i < r->n_kv; i++)
        if (strcmp(r->kv[i].key, key) == 0) return 1;
    return 0;
}

static int name_taken(const struct recipe *r, const char *name)
{
    for (size_t i = 0; i < r->n_t; i++)
        if (strcmp(r->t[i].name, name) == 0) return 1;
    return 0;
}

/* The outcome of one operation: the writer took it exactly when the format
 * allows it. */
static void expect(int rc, int valid, const gguf_error *err, const char *what)
{
    FUZZ_ASSERT(rc == GGUF_OK || rc == GGUF_E_INVALID, "%s: status %d: %s", what, rc,
                err->message);
    FUZZ_ASSERT((rc == GGUF_OK) == valid, "%s: %s", what,
                rc ? err->message : "taken, though the format forbids it");
}

static const uint32_t scalar_types[] = {
    GGUF_VT_UINT8, GGUF_VT_INT8, GGUF_VT_UINT16, GGUF_VT_INT16, GGUF_VT_UINT32, GGUF_VT_INT32,
    GGUF_VT_FLOAT32, GGUF_VT_BOOL, GGUF_VT_UINT64, GGUF_VT_INT64, GGUF_VT_FLOAT64
};
#define N_SCALAR_TYPES (sizeof scalar_types / sizeof scalar_types[0])

static int add_scalar(gguf_writer *w, const char *key, uint32_t type, uint64_t bits,
                      gguf_error *err)
{
    union { uint32_t u; float f; } f32 = { (uint32_t)bits };
    union { uint64_t u; double d; } f64 = { bits };
    switch (type) {
    case GGUF_VT_UINT8: return gguf_writer_add_u8(w, key, (uint8_t)bits, err);
    case GGUF_VT_INT8: return gguf_writer_add_i8(w, key, (int8_t)bits, err);
    case GGUF_VT_UINT16: return gguf_writer_add_u16(w, key, (uint16_t)bits, err);
    case GGUF_VT_INT16: return gguf_writer_add_i16(w, key, (int16_t)bits, err);
    case GGUF_VT_UINT32: return gguf_writer_add_u32(w, key, (uint32_t)bits, err);
    case GGUF_VT_INT32: return gguf_writer_add_i32(w, key, (int32_t)bits, err);
    case GGUF_VT_FLOAT32: return gguf_writer_add_f32(w, key, f32.f, err);
    case GGUF_VT_BOOL: return gguf_writer_add_bool(w, key, (int)(bits & 3), err);
    case GGUF_VT_UINT64: return gguf_writer_add_u64(w, key, bits, err);
    case GGUF_VT_INT64: return gguf_writer_add_i64(w, key, (int64_t)bits, err);
    default: return gguf_writer_add_f64(w, key, f64.d, err);
    }
}

static int is_alignment(const char *key)
{
    return strcmp(key, "general.alignment") == 0;
}

/* Applies one operation of the recipe. */
static void one_op(struct recipe *r, gguf_writer *w, struct fuzz_in *in)
{
    gguf_error err;
    memset(&err, 0, sizeof err);
    uint8_t op = fz_u8(in) % 8;
    struct want_kv *k = &r->kv[r->n_kv];
    memset(k, 0, sizeof *k);
    int rc, valid;
    if (op == 6) {
        /* A tensor. */
        struct want_tensor *t = &r->t[r->n_t];
        memset(t, 0, sizeof *t);
        take_name(in, t->name, sizeof t->name);
        t->type = fz_u8(in) % (GGUF_T_COUNT + 1);
        t->n_dims = fz_u8(in) % 6;
        const gguf_type_info *ti = gguf_type_get(t->type);
        uint64_t block = ti ? ti->block_size : 1;
        for (unsigned d = 0; d < 4; d++) t->ne[d] = 1;
        for (unsigned d = 0; d < t->n_dims && d < 4; d++) {
            uint8_t b = fz_u8(in);
            t->ne[d] = d == 0 ? block * (b % 4) + (b >= 250) : b % 3;
        }
        valid = t->name[0] && strlen(t->name) <= GGUF_TENSOR_NAME_MAX && !name_taken(r, t->name) &&
                ti && t->n_dims >= 1 && t->n_dims <= 4 && t->ne[0] % block == 0;
        t->size = valid ? gguf_row_bytes(t->type, t->ne[0]) * t->ne[1] * t->ne[2] * t->ne[3] : 0;
        if (valid && r->data + t->size > MAX_DATA) return;     /* too big to be worth it */
        t->seed = r->n_t * 1000003u + t->size;
        rc = gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, &err);
        expect(rc, valid, &err, "add_tensor");
        if (rc == GGUF_OK) {
            r->data += t->size;
            r->n_t++;
        }
        return;
    }
    if (op == 7) {
        strcpy(k->key, "general.alignment");
    } else {
        take_name(in, k->key, sizeof k->key);
    }
    int key_ok = k->key[0] && !key_taken(r, k->key);
    switch (op) {
    case 0:
    case 1:
    case 7: {
        /* A scalar; general.alignment gets a small value, often valid. */
        k->type = scalar_types[fz_u8(in) % N_SCALAR_TYPES];
        if (op == 7 && fz_u8(in) & 1) k->type = GGUF_VT_UINT32;
        k->bits = op == 7 ? (uint64_t)1 << (fz_u8(in) % 22) : fz_u64(in);
        if (op == 7 && fz_u8(in) % 8 == 0) k->bits += 1;
        valid = key_ok;
        uint64_t bits = k->bits;
        if (k->type == GGUF_VT_BOOL) {
            valid = valid && (bits & 3) <= 1;
            k->bits = bits & 3;
        }
        if (is_alignment(k->key)) {
            uint64_t a = (uint32_t)bits;
            valid = valid && k->type == GGUF_VT_UINT32 && a && !(a & (a - 1)) && a <= (1u << 20);
        }
        rc = add_scalar(w, k->key, k->type, bits, &err);
        expect(rc, valid, &err, "add scalar");
        if (rc == GGUF_OK && is_alignment(k->key)) r->alignment = (uint32_t)bits;
        break;
    }
    case 2:
    case 3: {
        k->type = GGUF_VT_STRING;
        k->len = fz_bytes(in, fz_u16(in) % 600, &k->p);
        valid = key_ok && !is_alignment(k->key);
        rc = gguf_writer_add_str(w, k->key, (const char *)k->p, k->len, &err);
        expect(rc, valid, &err, "add_str");
        break;
    }
    case 4: {
        k->type = GGUF_VT_ARRAY;
        k->elem_type = scalar_types[fz_u8(in) % N_SCALAR_TYPES];
        k->count = fz_u8(in) % 200;
        size_t sz = gguf_vtype_size(k->elem_type), n = (size_t)k->count * sz;
        k->elems = calloc(n ? n : 1, 1);
        if (!k->elems) FUZZ_TROUBLE("out of memory");
        const uint8_t *p;
        size_t got = fz_bytes(in, n, &p);
        memcpy(k->elems, p, got);
        valid = key_ok && !is_alignment(k->key);
        for (size_t i = 0; k->elem_type == GGUF_VT_BOOL && i < n; i++)
            if (k->elems[i] > 1) valid = 0;
        rc = gguf_writer_add_array(w, k->key, k->elem_type, k->elems, k->count, &err);
        expect(rc, valid, &err, "add_array");
        break;
    }
    default: {
        k->type = GGUF_VT_ARRAY;
        k->elem_type = GGUF_VT_STRING;
        k->count = fz_u8(in) % 40;
        k->strs = calloc((size_t)k->count + 1, sizeof *k->strs);
        if (!k->strs) FUZZ_TROUBLE("out of memory");
        for (uint64_t i = 0; i < k->count; i++) {
            const uint8_t *p;
            k->strs[i].len = fz_bytes(in, fz_u8(in) % 50, &p);
            k->strs[i].ptr = (const char *)p;
        }
        valid = key_ok && !is_alignment(k->key);
        rc = gguf_writer_add_str_array(w, k->key, k->strs, k->count, &err);
        expect(rc, valid, &err, "add_str_array");
        break;
    }
    }
    if (rc == GGUF_OK) {
        r->n_kv++;
    } else {
        free(k->elems);
        free(k->strs);
    }
}

/* Writes w (its tensors' bytes made from the recipe) into memory and
 * returns the bytes (malloc'ed), checking the size the writer announced. */
static uint8_t *write_out(gguf_writer *w, const struct recipe *r, size_t *n)
{
    gguf_error err;
    uint64_t total = gguf_writer_total_size(w);
    int fd = fuzz_memfd();
    FUZZ_ASSERT(gguf_writer_open_fd(w, fd, "out.gguf", &err) == GGUF_OK, "open: %s", err.message);
    uint8_t *buf = malloc(MAX_DATA);
    if (!buf) FUZZ_TROUBLE("out of memory");
    for (size_t i = 0; i < r->n_t; i++) {
        fill(buf, (size_t)r->t[i].size, r->t[i].seed);
        /* In two pieces, so that chunks do not always match tensors. */
        size_t half = (size_t)r->t[i].size / 2;
        FUZZ_ASSERT(gguf_writer_write(w, buf, half, &err) == GGUF_OK &&
                        gguf_writer_write(w, buf + half, (size_t)r->t[i].size - half, &err) ==
                            GGUF_OK,
                    "write tensor %zu: %s", i, err.message);
    }
    free(buf);
    FUZZ_ASSERT(gguf_writer_finish(w, &err) == GGUF_OK, "finish: %s", err.message);
    uint8_t *bytes = fuzz_slurp_fd(fd, n);
    close(fd);
    FUZZ_ASSERT(*n == total, "%zu bytes written, the writer announced %llu", *n,
                (unsigned long long)total);
    return bytes;
}

/* Compares the file read back with the recipe. */
static void check_back(const gguf_file *f, const struct recipe *r)
{
    FUZZ_ASSERT(gguf_version(f) == r->version, "version %u, wrote %u", gguf_version(f), r->version);
    FUZZ_ASSERT(gguf_byte_order(f) == r->order, "byte order");
    FUZZ_ASSERT(gguf_alignment(f) == (r->alignment ? r->alignment : 32), "alignment %u",
                gguf_alignment(f));
    FUZZ_ASSERT(gguf_kv_count(f) == r->n_kv, "%llu KV pairs, wrote %zu",
                (unsigned long long)gguf_kv_count(f), r->n_kv);
    for (size_t i = 0; i < r->n_kv; i++) {
        const struct want_kv *k = &r->kv[i];
        const gguf_kv *kv = gguf_kv_at(f, i);
        const gguf_value *v = &kv->value;
        FUZZ_ASSERT(kv->key.len == strlen(k->key) && memcmp(kv->key.ptr, k->key, kv->key.len) == 0,
                    "key %zu", i);
        FUZZ_ASSERT(v->type == k->type, "key %zu: type %u, wrote %u", i, v->type, k->type);
        if (k->type == GGUF_VT_STRING) {
            FUZZ_ASSERT(v->v.str.len == k->len && memcmp(v->v.str.ptr, k->p, k->len) == 0,
                        "key %zu: string", i);
        } else if (k->type == GGUF_VT_ARRAY) {
            FUZZ_ASSERT(v->elem_type == k->elem_type && v->count == k->count, "key %zu: array", i);
            size_t sz = gguf_vtype_size(k->elem_type);
            for (uint64_t j = 0; j < k->count; j++) {
                gguf_value e;
                FUZZ_ASSERT(gguf_array_get(v, j, &e) == GGUF_OK, "key %zu element %llu", i,
                            (unsigned long long)j);
                if (k->elem_type == GGUF_VT_STRING)
                    FUZZ_ASSERT(e.v.str.len == k->strs[j].len &&
                                    memcmp(e.v.str.ptr, k->strs[j].ptr, e.v.str.len) == 0,
                                "key %zu: string element %llu", i, (unsigned long long)j);
                else
                    FUZZ_ASSERT(memcmp(&e.v, k->elems + j * sz, sz) == 0,
                                "key %zu: element %llu", i, (unsigned long long)j);
            }
        } else {
            size_t sz = gguf_vtype_size(k->type);
            FUZZ_ASSERT(memcmp(&v->v, &k->bits, sz) == 0, "key %zu: value of type %u", i, k->type);
        }
    }
    FUZZ_ASSERT(gguf_tensor_count(f) == r->n_t, "%llu tensors, wrote %zu",
                (unsigned long long)gguf_tensor_count(f), r->n_t);
    uint8_t *buf = malloc(MAX_DATA);
    if (!buf) FUZZ_TROUBLE("out of memory");
    for (size_t i = 0; i < r->n_t; i++) {
        const struct want_tensor *w = &r->t[i];
        const gguf_tensor *t = gguf_tensor_at(f, i);
        FUZZ_ASSERT(t->name.len == strlen(w->name) && memcmp(t->name.ptr, w->name, t->name.len) == 0,
                    "tensor %zu: name", i);
        FUZZ_ASSERT(t->type == w->type && t->n_dims == w->n_dims &&
                        memcmp(t->ne, w->ne, sizeof t->ne) == 0 && t->size == w->size,
                    "tensor %zu: type or shape", i);
        fill(buf, (size_t)w->size, w->seed);
        FUZZ_ASSERT(memcmp(t->data, buf, (size_t)w->size) == 0, "tensor %zu: data", i);
    }
    free(buf);
}

/* Copies f (every KV pair and tensor, with its data) through a new writer
 * into memory; returns the bytes, or NULL when f has what the writer's C
 * strings cannot name (a NUL in a key or tensor name). */
static uint8_t *copy_file(const gguf_file *f, size_t *n)
{
    gguf_error err;
    for (uint64_t i = 0; i < gguf_kv_count(f); i++)
        if (memchr(gguf_kv_at(f, i)->key.ptr, '\0', gguf_kv_at(f, i)->key.len)) return NULL;
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++)
        if (memchr(gguf_tensor_at(f, i)->name.ptr, '\0', gguf_tensor_at(f, i)->name.len))
            return NULL;
    gguf_writer *w = gguf_writer_new();
    if (!w) FUZZ_TROUBLE("out of memory");
    FUZZ_ASSERT(gguf_writer_set_version(w, gguf_version(f), &err) == GGUF_OK &&
                    gguf_writer_set_byte_order(w, gguf_byte_order(f), &err) == GGUF_OK,
                "version or byte order: %s", err.message);
    for (uint64_t i = 0; i < gguf_kv_count(f); i++)
        FUZZ_ASSERT(gguf_writer_copy_kv(w, gguf_kv_at(f, i), &err) == GGUF_OK,
                    "copy_kv %llu refused what the reader accepts: %s", (unsigned long long)i,
                    err.message);
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        char name[GGUF_TENSOR_NAME_MAX + 1];
        memcpy(name, t->name.ptr, t->name.len);
        name[t->name.len] = '\0';
        FUZZ_ASSERT(gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, &err) == GGUF_OK,
                    "add_tensor %llu refused what the reader accepts: %s", (unsigned long long)i,
                    err.message);
    }
    int fd = fuzz_memfd();
    FUZZ_ASSERT(gguf_writer_open_fd(w, fd, "copy.gguf", &err) == GGUF_OK, "open: %s", err.message);
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        FUZZ_ASSERT(gguf_writer_write(w, t->data, (size_t)t->size, &err) == GGUF_OK, "write: %s",
                    err.message);
    }
    FUZZ_ASSERT(gguf_writer_finish(w, &err) == GGUF_OK, "finish: %s", err.message);
    uint64_t total = gguf_writer_total_size(w);
    gguf_writer_free(w);
    uint8_t *bytes = fuzz_slurp_fd(fd, n);
    close(fd);
    FUZZ_ASSERT(*n == total, "copy: %zu bytes, the writer announced %llu", *n,
                (unsigned long long)total);
    return bytes;
}

/* The copy of f reads back with the same content and tensor bytes. */
static void check_copy(const gguf_file *f, const uint8_t *orig, size_t orig_n)
{
    size_t n;
    uint8_t *bytes = copy_file(f, &n);
    if (!bytes) return;
    gguf_file *g;
    gguf_error err;
    FUZZ_ASSERT(gguf_open_memory(&g, bytes, n, "copy.gguf", &err) == GGUF_OK,
                "the copy does not read back: %s", err.message);
    fuzz_same_content(f, g, 1);
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *a = gguf_tensor_at(f, i), *b = gguf_tensor_at(g, i);
        FUZZ_ASSERT(memcmp(a->data, b->data, (size_t)a->size) == 0, "copy: tensor %llu data",
                    (unsigned long long)i);
    }
    /* A file of this writer, copied, is the same file. */
    if (orig) FUZZ_ASSERT(n == orig_n && memcmp(bytes, orig, n) == 0, "the copy differs");
    gguf_close(g);
    free(bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct recipe r;
    struct fuzz_in in = { data, size };
    gguf_error err;
    memset(&r, 0, sizeof r);
    uint8_t head = fz_u8(&in);
    r.version = 1 + head % 3;
    r.order = head & 4 ? GGUF_BIG_ENDIAN : GGUF_LITTLE_ENDIAN;
    gguf_writer *w = gguf_writer_new();
    if (!w) FUZZ_TROUBLE("out of memory");
    FUZZ_ASSERT(gguf_writer_set_version(w, r.version, &err) == GGUF_OK &&
                    gguf_writer_set_byte_order(w, r.order, &err) == GGUF_OK,
                "version or byte order: %s", err.message);
    for (int i = 0; i < MAX_OPS && in.n > 0; i++) one_op(&r, w, &in);

    uint64_t data_offset = gguf_writer_data_offset(w);
    size_t n;
    uint8_t *bytes = write_out(w, &r, &n);
    gguf_writer_free(w);
    gguf_file *f;
    FUZZ_ASSERT(gguf_open_memory(&f, bytes, n, "out.gguf", &err) == GGUF_OK,
                "the writer's output does not read back: %s", err.message);
    FUZZ_ASSERT(gguf_data_offset(f) == data_offset, "data offset %llu, the writer announced %llu",
                (unsigned long long)gguf_data_offset(f), (unsigned long long)data_offset);
    fuzz_walk_file(f, bytes, n);
    check_back(f, &r);
    check_copy(f, bytes, n);
    gguf_close(f);
    free(bytes);

    /* The input as a GGUF file of its own. */
    if (gguf_open_memory(&f, data, size, "in.gguf", &err) == GGUF_OK) {
        check_copy(f, NULL, 0);
        gguf_close(f);
    }
    for (size_t i = 0; i < r.n_kv; i++) {
        free(r.kv[i].elems);
        free(r.kv[i].strs);
    }
    return 0;
}
