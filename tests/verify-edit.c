/*
 * verify-edit.c -- copies a GGUF file through the library's writer with
 * edits, to make the damaged models the gguf-verify and qwen-run tests need.
 *
 *   verify-edit [EDIT]... IN OUT
 *
 *   --drop NAME           leave tensor NAME out
 *   --set KEY=N           give KEY the UINT32 value N (in place, or appended)
 *   --set KEY=TYPE:VALUE  ... or a value of TYPE: u8 i8 u16 i16 u32 i32 u64
 *                         i64 f32 f64 (nan and inf too), bool (0 or 1), str
 *   --delete KEY          leave the KV pair KEY out
 *   --resize KEY=N        cut array KEY to N elements (or repeat its last)
 *   --cast KEY=TYPE       array KEY with its elements as TYPE (u8 ... f64,
 *                         str): numbers convert, strings become 0, numbers
 *                         become their decimal text
 *   --elem KEY:I=TEXT     string I of array KEY becomes TEXT
 *   --retype NAME=TYPE    tensor NAME gets ggml type TYPE (f16, i32 ...)
 *   --reshape NAME=DIMS   tensor NAME gets dims DIMS (64x32x2)
 *   --add NAME=TYPE:DIMS  append a tensor of zero bytes
 *   --fill NAME=X         every element of tensor NAME (F32, F16, BF16 or
 *                         a type libgguf quantizes) becomes X (nan, inf ...)
 *   --fill NAME@ROW=X     ... only those of row ROW
 *
 * A tensor whose byte size a --retype or --reshape changes gets zero bytes.
 * Fills apply in the order given, after the other edits.  Everything else
 * (version, byte order, KV pairs in order, the other tensors and their
 * bytes) is copied.  Exit status: 0 written, 2 trouble.
 */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "quant/quant.h"

static const char *prog = "verify-edit";

static void die(const char *what, const gguf_error *err)
{
    fprintf(stderr, "%s: %s: %s\n", prog, what, err ? err->message : "failed");
    exit(2);
}

static void usage(void)
{
    fprintf(stderr, "usage: %s [--drop NAME] [--set KEY=[TYPE:]V] [--delete KEY] [--resize KEY=N]\n"
            "       [--cast KEY=TYPE] [--elem KEY:I=TEXT] [--retype NAME=TYPE]\n"
            "       [--reshape NAME=DIMS] [--add NAME=TYPE:DIMS] [--fill NAME[@ROW]=X] IN OUT\n",
            prog);
    exit(2);
}

/* One edit: an option and its argument split at the first '=' (and, for
 * --elem and --fill, at ':' or '@' in the left part). */
struct edit {
    int op;
    char *name;         /* the key or tensor */
    char *arg;          /* the right part */
    long long index;    /* --elem's I, --fill's ROW (-1: all) */
    int done;
};

static struct edit *edits;
static int n_edits;

/* The edit of op for name, or NULL. */
static struct edit *find_edit(int op, const char *s, size_t len)
{
    for (int i = 0; i < n_edits; i++)
        if (edits[i].op == op && strlen(edits[i].name) == len && memcmp(edits[i].name, s, len) == 0)
            return &edits[i];
    return NULL;
}

static const struct { const char *name; uint32_t type; } vtypes[] = {
    {"u8", GGUF_VT_UINT8}, {"i8", GGUF_VT_INT8}, {"u16", GGUF_VT_UINT16},
    {"i16", GGUF_VT_INT16}, {"u32", GGUF_VT_UINT32}, {"i32", GGUF_VT_INT32},
    {"u64", GGUF_VT_UINT64}, {"i64", GGUF_VT_INT64}, {"f32", GGUF_VT_FLOAT32},
    {"f64", GGUF_VT_FLOAT64}, {"bool", GGUF_VT_BOOL}, {"str", GGUF_VT_STRING},
};

static uint32_t vtype_of(const char *s, size_t len)
{
    for (size_t i = 0; i < sizeof vtypes / sizeof vtypes[0]; i++)
        if (strlen(vtypes[i].name) == len && memcmp(vtypes[i].name, s, len) == 0)
            return vtypes[i].type;
    fprintf(stderr, "%s: unknown value type '%.*s'\n", prog, (int)len, s);
    exit(2);
}

static uint32_t ttype_of(const char *s)
{
    uint32_t t;
    if (gguf_type_parse(s, &t) != GGUF_OK) {
        fprintf(stderr, "%s: unknown tensor type '%s'\n", prog, s);
        exit(2);
    }
    return t;
}

/* Parses "D0xD1..." into ne; returns the number of dims. */
static uint32_t dims_of(const char *s, uint64_t *ne)
{
    uint32_t n = 0;
    for (;;) {
        char *end;
        if (n == 4) break;
        ne[n++] = strtoull(s, &end, 10);
        if (end == s) break;
        if (*end != 'x') {
            if (*end) break;
            return n;
        }
        s = end + 1;
    }
    fprintf(stderr, "%s: bad dims '%s'\n", prog, s);
    exit(2);
}

/* A scalar of type vt holding the number x, written into the 8 bytes at p
 * in host order. */
static void put_number(uint32_t vt, double x, void *p)
{
    switch (vt) {
    case GGUF_VT_UINT8: { uint8_t v = (uint8_t)x; memcpy(p, &v, 1); break; }
    case GGUF_VT_INT8: { int8_t v = (int8_t)x; memcpy(p, &v, 1); break; }
    case GGUF_VT_UINT16: { uint16_t v = (uint16_t)x; memcpy(p, &v, 2); break; }
    case GGUF_VT_INT16: { int16_t v = (int16_t)x; memcpy(p, &v, 2); break; }
    case GGUF_VT_UINT32: { uint32_t v = (uint32_t)x; memcpy(p, &v, 4); break; }
    case GGUF_VT_INT32: { int32_t v = (int32_t)x; memcpy(p, &v, 4); break; }
    case GGUF_VT_UINT64: { uint64_t v = (uint64_t)x; memcpy(p, &v, 8); break; }
    case GGUF_VT_INT64: { int64_t v = (int64_t)x; memcpy(p, &v, 8); break; }
    case GGUF_VT_FLOAT32: { float v = (float)x; memcpy(p, &v, 4); break; }
    case GGUF_VT_FLOAT64: memcpy(p, &x, 8); break;
    case GGUF_VT_BOOL: { uint8_t v = x != 0; memcpy(p, &v, 1); break; }
    default: fprintf(stderr, "%s: not a number type\n", prog); exit(2);
    }
}

/* The number a scalar value holds (0 for strings and arrays). */
static double number_of(const gguf_value *v)
{
    switch (v->type) {
    case GGUF_VT_UINT8: return v->v.u8;
    case GGUF_VT_INT8: return v->v.i8;
    case GGUF_VT_UINT16: return v->v.u16;
    case GGUF_VT_INT16: return v->v.i16;
    case GGUF_VT_UINT32: return v->v.u32;
    case GGUF_VT_INT32: return v->v.i32;
    case GGUF_VT_UINT64: return (double)v->v.u64;
    case GGUF_VT_INT64: return (double)v->v.i64;
    case GGUF_VT_FLOAT32: return v->v.f32;
    case GGUF_VT_FLOAT64: return v->v.f64;
    case GGUF_VT_BOOL: return v->v.b;
    default: return 0;
    }
}

/* Writes --set's value for key: "N" as UINT32, or "TYPE:VALUE". */
static void add_set(gguf_writer *w, const char *key, const char *arg)
{
    gguf_error err;
    const char *colon = strchr(arg, ':');
    int rc;
    if (!colon) {
        rc = gguf_writer_add_u32(w, key, (uint32_t)strtoul(arg, NULL, 10), &err);
    } else {
        uint32_t vt = vtype_of(arg, (size_t)(colon - arg));
        const char *v = colon + 1;
        if (vt == GGUF_VT_STRING) {
            rc = gguf_writer_add_str(w, key, v, strlen(v), &err);
        } else {
            unsigned char b[8];
            /* strtoull for the 64-bit integers, which a double cannot hold */
            if (vt == GGUF_VT_UINT64) {
                uint64_t u = strtoull(v, NULL, 0);
                memcpy(b, &u, 8);
            } else if (vt == GGUF_VT_INT64) {
                int64_t i = strtoll(v, NULL, 0);
                memcpy(b, &i, 8);
            } else {
                put_number(vt, strtod(v, NULL), b);
            }
            gguf_value val;
            memset(&val, 0, sizeof val);
            val.type = vt;
            memcpy(&val.v, b, 8);
            rc = gguf_writer_add_value(w, key, &val, &err);
        }
    }
    if (rc) die("set", &err);
}

/* Writes array kv with --resize, --cast and --elem applied. */
static void add_array(gguf_writer *w, const gguf_kv *kv, const char *key, struct edit *resize,
                      struct edit *cast)
{
    gguf_error err;
    const gguf_value *a = &kv->value;
    uint64_t n = resize ? strtoull(resize->arg, NULL, 10) : a->count;
    uint32_t et = cast ? vtype_of(cast->arg, strlen(cast->arg)) : a->elem_type;
    if (a->count == 0 && n > 0) die("--resize: the array is empty", NULL);
    if (et == GGUF_VT_ARRAY || a->elem_type == GGUF_VT_ARRAY) die("nested arrays", NULL);
    char (*text)[32] = NULL;
    gguf_str *strs = NULL;
    unsigned char *nums = NULL;
    if (et == GGUF_VT_STRING) {
        strs = calloc((size_t)(n ? n : 1), sizeof *strs);
        text = calloc((size_t)(n ? n : 1), sizeof *text);
        if (!strs || !text) die("out of memory", NULL);
    } else {
        nums = calloc((size_t)(n ? n : 1), 8);
        if (!nums) die("out of memory", NULL);
    }
    for (uint64_t i = 0; i < n; i++) {
        gguf_value e;
        if (gguf_array_get(a, i < a->count ? i : a->count - 1, &e)) die("array element", NULL);
        if (et == GGUF_VT_STRING) {
            if (e.type == GGUF_VT_STRING) {
                strs[i] = e.v.str;
            } else {
                snprintf(text[i], sizeof text[i], "%.17g", number_of(&e));
                strs[i] = (gguf_str){text[i], strlen(text[i])};
            }
        } else {
            put_number(et, number_of(&e), nums + gguf_vtype_size(et) * i);
        }
    }
    for (int k = 0; k < n_edits; k++) {
        struct edit *ed = &edits[k];
        if (ed->op != 'e' || strcmp(ed->name, key) != 0) continue;
        if (et != GGUF_VT_STRING || ed->index < 0 || (uint64_t)ed->index >= n)
            die("--elem: not a string element of the array", NULL);
        strs[ed->index] = (gguf_str){ed->arg, strlen(ed->arg)};
        ed->done = 1;
    }
    int rc = et == GGUF_VT_STRING ? gguf_writer_add_str_array(w, key, strs, n, &err)
                                  : gguf_writer_add_array(w, key, et, nums, n, &err);
    if (rc) die("array", &err);
    free(strs);
    free(text);
    free(nums);
}

/* A tensor of the output: its source (NULL for --add) and what it becomes. */
struct out_tensor {
    const gguf_tensor *src;
    char *name;
    uint32_t type, n_dims;
    uint64_t ne[4];
    size_t size;
    unsigned char *data;    /* the bytes to write when edited, else NULL */
};

/* Applies the fills of tensor o, in order. */
static void fill(struct out_tensor *o)
{
    uint64_t cols = o->ne[0], rows = 1;
    for (uint32_t d = 1; d < o->n_dims; d++) rows *= o->ne[d];
    size_t row_bytes = (size_t)gguf_row_bytes(o->type, cols);
    float *buf = NULL;
    for (int k = 0; k < n_edits; k++) {
        struct edit *ed = &edits[k];
        if (ed->op != 'f' || strcmp(ed->name, o->name) != 0) continue;
        if (!gguf_can_quantize(o->type)) die("--fill: a type libgguf cannot write", NULL);
        if (ed->index >= (long long)rows) die("--fill: no such row", NULL);
        if (!o->data) {
            o->data = malloc(o->size ? o->size : 1);
            if (!o->data) die("out of memory", NULL);
            memcpy(o->data, o->src->data, o->size);
        }
        if (!buf && !(buf = malloc(sizeof *buf * (size_t)cols))) die("out of memory", NULL);
        float x = strtof(ed->arg, NULL);
        for (uint64_t i = 0; i < cols; i++) buf[i] = x;
        for (uint64_t r = 0; r < rows; r++) {
            if (ed->index >= 0 && (uint64_t)ed->index != r) continue;
            if (gguf_quantize_row(o->type, buf, o->data + r * row_bytes, (int64_t)cols))
                die("--fill: cannot write the row", NULL);
        }
        ed->done = 1;
    }
    free(buf);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "drop", required_argument, NULL, 'd' },
        { "set", required_argument, NULL, 's' },
        { "delete", required_argument, NULL, 'x' },
        { "resize", required_argument, NULL, 'r' },
        { "cast", required_argument, NULL, 'c' },
        { "elem", required_argument, NULL, 'e' },
        { "retype", required_argument, NULL, 't' },
        { "reshape", required_argument, NULL, 'h' },
        { "add", required_argument, NULL, 'a' },
        { "fill", required_argument, NULL, 'f' },
        { NULL, 0, NULL, 0 }
    };
    edits = calloc((size_t)argc, sizeof *edits);
    if (!edits) die("out of memory", NULL);
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == '?' || c == ':') usage();
        struct edit *ed = &edits[n_edits++];
        ed->op = c;
        ed->index = -1;
        char *s = optarg;
        if (c == 'd' || c == 'x') {
            ed->name = s;
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq) usage();
        *eq = '\0';
        ed->name = s;
        ed->arg = eq + 1;
        char *sep = c == 'e' ? strrchr(s, ':') : c == 'f' ? strrchr(s, '@') : NULL;
        if (c == 'e' && !sep) usage();
        if (sep) {
            *sep = '\0';
            ed->index = strtoll(sep + 1, NULL, 10);
        }
    }
    if (argc - optind != 2) usage();
    gguf_error err;
    gguf_file *f;
    if (gguf_open(&f, argv[optind], NULL, 0, &err)) die("open", &err);
    gguf_writer *w = gguf_writer_new();
    if (!w) die("out of memory", NULL);
    if (gguf_writer_set_version(w, gguf_version(f), &err) ||
        gguf_writer_set_byte_order(w, gguf_byte_order(f), &err))
        die("writer", &err);

    for (uint64_t i = 0; i < gguf_kv_count(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        const char *k = kv->key.ptr;
        size_t kl = kv->key.len;
        char *key = strndup(k, kl);
        if (!key) die("out of memory", NULL);
        struct edit *set = find_edit('s', k, kl), *resize = find_edit('r', k, kl);
        struct edit *cast = find_edit('c', k, kl);
        int has_elem = find_edit('e', k, kl) != NULL;
        if (find_edit('x', k, kl)) {
            /* left out */
        } else if (set) {
            add_set(w, key, set->arg);
            set->done = 1;
        } else if (resize || cast || has_elem) {
            if (kv->value.type != GGUF_VT_ARRAY) die("--resize, --cast, --elem: not an array", NULL);
            add_array(w, kv, key, resize, cast);
            if (resize) resize->done = 1;
            if (cast) cast->done = 1;
        } else if (gguf_writer_copy_kv(w, kv, &err)) {
            die("copy key", &err);
        }
        free(key);
    }
    for (int k = 0; k < n_edits; k++)
        if (edits[k].op == 's' && !edits[k].done) {
            add_set(w, edits[k].name, edits[k].arg);
            edits[k].done = 1;
        }

    uint64_t nt = gguf_tensor_count(f);
    struct out_tensor *ot = calloc((size_t)nt + (size_t)n_edits + 1, sizeof *ot);
    size_t n_out = 0;
    if (!ot) die("out of memory", NULL);
    for (uint64_t i = 0; i < nt; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (find_edit('d', t->name.ptr, t->name.len)) continue;
        struct out_tensor *o = &ot[n_out++];
        o->src = t;
        o->name = strndup(t->name.ptr, t->name.len);
        if (!o->name) die("out of memory", NULL);
        o->type = t->type;
        o->n_dims = t->n_dims;
        memcpy(o->ne, t->ne, sizeof o->ne);
        struct edit *rt = find_edit('t', t->name.ptr, t->name.len);
        struct edit *rs = find_edit('h', t->name.ptr, t->name.len);
        if (rt) o->type = ttype_of(rt->arg), rt->done = 1;
        if (rs) {
            for (int d = 0; d < 4; d++) o->ne[d] = 1;
            o->n_dims = dims_of(rs->arg, o->ne);
            rs->done = 1;
        }
    }
    for (int k = 0; k < n_edits; k++) {
        if (edits[k].op != 'a') continue;
        struct out_tensor *o = &ot[n_out++];
        char *colon = strchr(edits[k].arg, ':');
        if (!colon) usage();
        *colon = '\0';
        o->name = edits[k].name;
        o->type = ttype_of(edits[k].arg);
        for (int d = 0; d < 4; d++) o->ne[d] = 1;
        o->n_dims = dims_of(colon + 1, o->ne);
        edits[k].done = 1;
    }
    for (size_t i = 0; i < n_out; i++) {
        struct out_tensor *o = &ot[i];
        if (gguf_writer_add_tensor(w, o->name, o->type, o->n_dims, o->ne, &err)) die("tensor", &err);
        uint64_t rows = 1;
        for (uint32_t d = 1; d < o->n_dims; d++) rows *= o->ne[d];
        o->size = (size_t)(gguf_row_bytes(o->type, o->ne[0]) * rows);
        if (!o->src || o->size != o->src->size) {
            o->data = calloc(o->size ? o->size : 1, 1);
            if (!o->data) die("out of memory", NULL);
        }
        fill(o);
    }
    for (int k = 0; k < n_edits; k++)
        if (!edits[k].done && edits[k].op != 'd' && edits[k].op != 'x') {
            fprintf(stderr, "%s: '%s' is not in the file\n", prog, edits[k].name);
            return 2;
        }

    if (gguf_writer_open(w, argv[optind + 1], &err)) die("output", &err);
    for (size_t i = 0; i < n_out; i++) {
        const void *p = ot[i].data ? (const void *)ot[i].data : ot[i].src->data;
        if (gguf_writer_write(w, p, ot[i].size, &err)) die("write", &err);
    }
    if (gguf_writer_finish(w, &err)) die("finish", &err);
    gguf_writer_free(w);
    for (size_t i = 0; i < n_out; i++) {
        if (ot[i].src) free(ot[i].name);
        free(ot[i].data);
    }
    free(ot);
    gguf_close(f);
    free(edits);
    return 0;
}
