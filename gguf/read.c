/* read.c -- the GGUF parser, its validation, and the getters.
 *
 * One parser serves mapped files, memory and streams: it reads through
 * gg_source_need(), which for streams pulls more input into a buffer that may
 * move.  So while parsing, every string and array is recorded by its offset;
 * pointers are made once the header is complete and the buffer is final.
 *
 * Every count, length, dimension, type id and offset is checked against the
 * bytes that actually remain before it is used, and nothing is allocated from
 * a declared count: tables grow as items are parsed.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gguf/internal.h"

/* The element table behind gguf_value.priv of a non-empty array of
 * strings or arrays; for other arrays priv is the gguf_file itself. */
struct gg_array {
    const gguf_file *f;
    uint64_t *str_off;      /* STRING: offset of each element's length field */
    gguf_value *sub;        /* ARRAY: the nested arrays */
};

struct gguf_file {
    gg_source src;
    char *name;
    uint32_t version;
    int order;              /* enum gguf_byte_order */
    unsigned lenw;          /* width of counts and lengths: 4 (v1) or 8 */
    uint64_t n_kv, n_tensors;
    gguf_kv *kv;
    gguf_tensor *tensors;
    uint64_t *by_offset;    /* tensor indices sorted by data offset */
    gg_names kv_names, tensor_names;
    uint32_t alignment;
    uint64_t header_size, data_offset, data_end;
    unsigned flags;         /* of gguf_open */
    int stopped;            /* see gguf_stopped_at_trailing() */
    /* every allocation made for arrays, freed at close */
    void **allocs;
    size_t n_allocs, cap_allocs;
};

/* Parser state. */
typedef struct parser {
    gguf_file *f;
    gguf_error *err;
    uint64_t pos;
    /* the item being read, for messages: kind 0 header, 1 key, 2 tensor */
    int kind;
    uint64_t index;
    uint64_t name_off, name_len; /* of the key / tensor name, once read */
    int have_name;
    uint64_t count;              /* how many keys / tensors the header declares */
    /* the innermost array being read, if any */
    int in_array;
    uint64_t arr_index, arr_count;
} parser;

/* ------------------------------------------------------------------------ */
/* Messages                                                                  */

/* Describes the current item into buf: "key 3 of 25 'general.name'", with
 * "element 7 of 151936" inside an array.  The declared count is part of it so
 * that an absurd count shows in the message whatever check then fails. */
static const char *item(parser *p, char *buf, size_t n)
{
    char q[96];
    const char *kind = p->kind == 1 ? "key" : p->kind == 2 ? "tensor" : NULL;
    int k;
    if (!kind) {
        k = snprintf(buf, n, "header");
    } else if (p->have_name) {
        gg_quote(q, sizeof q, (const char *)p->f->src.base + p->name_off, p->name_len);
        k = snprintf(buf, n, "%s %llu of %llu '%s'", kind, (unsigned long long)p->index,
                     (unsigned long long)p->count, q);
    } else {
        k = snprintf(buf, n, "%s %llu of %llu", kind, (unsigned long long)p->index,
                     (unsigned long long)p->count);
    }
    if (p->in_array && k > 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, " element %llu of %llu", (unsigned long long)p->arr_index,
                 (unsigned long long)p->arr_count);
    return buf;
}

/* Fails with GGUF_E_FORMAT: "NAME: ITEM: TEXT (at byte OFF)". */
GG_PRINTF(4, 5)
static int bad(parser *p, int status, uint64_t off, const char *fmt, ...)
{
    char it[160], text[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return gg_fail(p->err, status, 0, off, p->f->name, "%s: %s (at byte %llu)",
                   item(p, it, sizeof it), text, (unsigned long long)off);
}

/* Makes n bytes at p->pos available, or fails naming `what`.
 *
 * Metadata past GG_MAX_HEADER is refused before any byte of it is read, in
 * every input mode alike: so a stream with a corrupt length costs at most
 * that much memory, and the verdict does not depend on the mode. */
static int need(parser *p, uint64_t n, const char *what)
{
    uint64_t end;
    if (!gg_add(p->pos, n, &end) || end > GG_MAX_HEADER)
        return bad(p, GGUF_E_FORMAT, p->pos,
                   "%s of %llu bytes would take the metadata past the %u MiB limit", what,
                   (unsigned long long)n, (unsigned)(GG_MAX_HEADER >> 20));
    int rc = gg_source_need(&p->f->src, end, p->f->name, p->err);
    if (rc == GG_EOF)
        return bad(p, GGUF_E_FORMAT, p->pos,
                   "%s of %llu bytes runs past the end of the file (%llu bytes)", what,
                   (unsigned long long)n, (unsigned long long)p->f->src.size);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Primitive reads                                                           */

static const uint8_t *at(parser *p) { return p->f->src.base + p->pos; }

static int rd_u32(parser *p, uint32_t *v, const char *what)
{
    int rc = need(p, 4, what);
    if (rc) return rc;
    *v = gg_load32(at(p), p->f->order);
    p->pos += 4;
    return GGUF_OK;
}

static int rd_u64(parser *p, uint64_t *v, const char *what)
{
    int rc = need(p, 8, what);
    if (rc) return rc;
    *v = gg_load64(at(p), p->f->order);
    p->pos += 8;
    return GGUF_OK;
}

/* A count or length: 32 bits in version 1, 64 after. */
static int rd_len(parser *p, uint64_t *v, const char *what)
{
    if (p->f->lenw == 8) return rd_u64(p, v, what);
    uint32_t v32 = 0;
    int rc = rd_u32(p, &v32, what);
    *v = v32;
    return rc;
}

/* A string: its length, then that many bytes.  Records the bytes' offset. */
static int rd_str(parser *p, uint64_t *off, uint64_t *len, const char *what)
{
    int rc = rd_len(p, len, what);
    if (rc) return rc;
    if ((rc = need(p, *len, what))) return rc;
    *off = p->pos;
    p->pos += *len;
    return GGUF_OK;
}

/* ------------------------------------------------------------------------ */
/* Values                                                                    */

static int track(gguf_file *f, void *ptr)
{
    if (f->n_allocs == f->cap_allocs) {
        size_t n = f->cap_allocs ? f->cap_allocs * 2 : 16;
        void **a = realloc(f->allocs, n * sizeof *a);
        if (!a) return -1;
        f->allocs = a;
        f->cap_allocs = n;
    }
    f->allocs[f->n_allocs++] = ptr;
    return 0;
}

static int oom(parser *p)
{
    return gg_fail(p->err, GGUF_E_NOMEM, ENOMEM, p->pos, p->f->name, "out of memory");
}

/* Grows *v (elements of size sz) to hold at least n+1 elements. */
static int grow(void **v, uint64_t *cap, uint64_t n, size_t sz)
{
    if (n < *cap) return 0;
    uint64_t nc = *cap ? *cap * 2 : 8;
    if (nc > SIZE_MAX / sz) return -1;
    void *nv = realloc(*v, (size_t)(nc * sz));
    if (!nv) return -1;
    *v = nv;
    *cap = nc;
    return 0;
}

/* A first capacity for a table of n declared items of at least min_bytes
 * each.  When the input's size is known (a mapping, memory): as many as
 * the metadata bytes that remain can hold, so that an honest file's table
 * is allocated once at its size and never copied while it grows (a copy
 * holds the old and the new table at once), while a hostile count costs
 * no more than the bytes it would need.  Streams: 0, the table grows with
 * the items that arrive. */
static uint64_t first_cap(const parser *p, uint64_t n, uint64_t min_bytes)
{
    const gg_source *s = &p->f->src;
    if (s->mode != GGUF_INPUT_MAPPED && s->mode != GGUF_INPUT_MEMORY) return 0;
    uint64_t end = s->size < GG_MAX_HEADER ? s->size : GG_MAX_HEADER;
    uint64_t room = end > p->pos ? (end - p->pos) / min_bytes : 0;
    return n < room ? n : room;
}

/* Allocates *v for n elements of size sz, setting *cap, when n > 0.  A
 * failure is not an error: the table then grows as items arrive. */
static void reserve(void **v, uint64_t *cap, uint64_t n, size_t sz)
{
    if (n == 0 || n > SIZE_MAX / sz) return;
    void *nv = malloc((size_t)(n * sz));
    if (!nv) return;
    *v = nv;
    *cap = n;
}

static int parse_value(parser *p, uint32_t type, gguf_value *out, unsigned depth);

/* The body of an array (element type, count, elements) into out. */
static int parse_array(parser *p, gguf_value *out, unsigned depth)
{
    uint32_t et;
    uint64_t n;
    int rc;
    uint64_t start = p->pos;

    if (depth > GG_MAX_ARRAY_DEPTH)
        return bad(p, GGUF_E_FORMAT, start, "arrays nested deeper than %u levels",
                   GG_MAX_ARRAY_DEPTH);
    if ((rc = rd_u32(p, &et, "array element type"))) return rc;
    if (et >= GGUF_VT_COUNT)
        return bad(p, GGUF_E_FORMAT, start, "array element type id %lu out of range (0..%d)",
                   (unsigned long)et, GGUF_VT_COUNT - 1);
    if ((rc = rd_len(p, &n, "array length"))) return rc;
    out->elem_type = et;
    out->count = n;

    /* Arrays of fixed-size elements, and empty ones, need no table: their
     * elements are found from the value's offset, and priv is the file
     * (see array_file()).  That keeps a file of a million small arrays at
     * its gguf_kv entries, without an allocation each. */
    size_t esz = gguf_vtype_size(et);
    if (esz || n == 0) {
        out->priv = p->f;
        if (!esz) return GGUF_OK;
        uint64_t bytes;
        if (!gg_mul(n, esz, &bytes))
            return bad(p, GGUF_E_FORMAT, start, "array of %llu %s elements overflows",
                       (unsigned long long)n, gguf_vtype_name(et));
        char what[64];
        snprintf(what, sizeof what, "array of %llu %s", (unsigned long long)n,
                 gguf_vtype_name(et));
        if ((rc = need(p, bytes, what))) return rc;
        if (et == GGUF_VT_BOOL) {
            const uint8_t *b = at(p);
            for (uint64_t i = 0; i < n; i++)
                if (b[i] > 1)
                    return bad(p, GGUF_E_FORMAT, p->pos + i,
                               "BOOL array element %llu has value %u (must be 0 or 1)",
                               (unsigned long long)i, b[i]);
        }
        p->pos += bytes;
        return GGUF_OK;
    }

    struct gg_array *a = calloc(1, sizeof *a);
    if (!a || track(p->f, a) < 0) {
        free(a);
        return oom(p);
    }
    a->f = p->f;
    out->priv = a;
    uint64_t cap = 0;
    if (et == GGUF_VT_STRING) {
        /* The table moves while it grows: it is tracked for freeing once
         * complete, or on the way out of an error. */
        rc = GGUF_OK;
        p->in_array = 1;
        p->arr_count = n;
        for (uint64_t i = 0; i < n && !rc; i++) {
            uint64_t off, len;
            if (grow((void **)&a->str_off, &cap, i, sizeof *a->str_off) < 0) {
                rc = oom(p);
                break;
            }
            a->str_off[i] = p->pos;
            p->arr_index = i;
            rc = rd_str(p, &off, &len, "string");
        }
        if (!rc) p->in_array = 0;
        if (a->str_off && track(p->f, a->str_off) < 0) {
            free(a->str_off);
            a->str_off = NULL;
            return oom(p);
        }
        return rc;
    }
    /* Nested arrays: each element is element type, count, elements. */
    rc = GGUF_OK;
    for (uint64_t i = 0; i < n && !rc; i++) {
        if (grow((void **)&a->sub, &cap, i, sizeof *a->sub) < 0) {
            rc = oom(p);
            break;
        }
        gguf_value *v = &a->sub[i];
        memset(v, 0, sizeof *v);
        v->type = GGUF_VT_ARRAY;
        v->offset = p->pos;
        p->in_array = 1;
        p->arr_index = i;
        p->arr_count = n;
        rc = parse_array(p, v, depth + 1);
    }
    if (!rc) p->in_array = 0;
    if (a->sub && track(p->f, a->sub) < 0) {
        free(a->sub);
        a->sub = NULL;
        return oom(p);
    }
    return rc;
}

static int parse_value(parser *p, uint32_t type, gguf_value *out, unsigned depth)
{
    int rc;
    memset(out, 0, sizeof *out);
    out->type = type;
    out->offset = p->pos;
    int o = p->f->order;
    switch (type) {
    case GGUF_VT_UINT8:
    case GGUF_VT_INT8:
    case GGUF_VT_BOOL:
        if ((rc = need(p, 1, "value"))) return rc;
        out->v.u8 = *at(p);
        if (type == GGUF_VT_BOOL) {
            if (out->v.u8 > 1)
                return bad(p, GGUF_E_FORMAT, p->pos, "BOOL value %u (must be 0 or 1)",
                           out->v.u8);
            out->v.b = out->v.u8;
        }
        p->pos += 1;
        return GGUF_OK;
    case GGUF_VT_UINT16:
    case GGUF_VT_INT16:
        if ((rc = need(p, 2, "value"))) return rc;
        out->v.u16 = gg_load16(at(p), o);
        p->pos += 2;
        return GGUF_OK;
    case GGUF_VT_UINT32:
    case GGUF_VT_INT32:
    case GGUF_VT_FLOAT32:
        if ((rc = need(p, 4, "value"))) return rc;
        out->v.u32 = gg_load32(at(p), o);
        p->pos += 4;
        return GGUF_OK;
    case GGUF_VT_UINT64:
    case GGUF_VT_INT64:
    case GGUF_VT_FLOAT64:
        if ((rc = need(p, 8, "value"))) return rc;
        out->v.u64 = gg_load64(at(p), o);
        p->pos += 8;
        return GGUF_OK;
    case GGUF_VT_STRING: {
        uint64_t off, len;
        if ((rc = rd_str(p, &off, &len, "string value"))) return rc;
        /* An offset until fix_pointers() turns it into a pointer. */
        out->v.str.ptr = (const char *)(uintptr_t)off;
        out->v.str.len = (size_t)len;
        return GGUF_OK;
    }
    case GGUF_VT_ARRAY:
        return parse_array(p, out, depth + 1);
    default:
        return bad(p, GGUF_E_FORMAT, p->pos, "value type id %lu out of range (0..%d)",
                   (unsigned long)type, GGUF_VT_COUNT - 1);
    }
}

/* ------------------------------------------------------------------------ */
/* Header, KVs, tensor infos                                                 */

static int parse_header(parser *p)
{
    gguf_file *f = p->f;
    int rc = gg_source_need(&f->src, 4, f->name, p->err);
    if (rc > 0) return rc;
    if (rc == GG_EOF || memcmp(f->src.base, "GGUF", 4) != 0) {
        char q[32];
        uint64_t n = f->src.avail < 4 ? f->src.avail : 4;
        gg_quote(q, sizeof q, (const char *)f->src.base, n);
        if (n < 4)
            return bad(p, GGUF_E_FORMAT, 0, "not a GGUF file: only %llu bytes",
                       (unsigned long long)n);
        return bad(p, GGUF_E_FORMAT, 0, "not a GGUF file: magic is '%s', expected 'GGUF'", q);
    }
    p->pos = 4;
    uint32_t v;
    if ((rc = rd_u32(p, &v, "version"))) return rc;
    /* A big-endian file stores its small version number with the low
     * bytes zero when read little-endian. */
    if (v != 0 && (v & 0xffffu) == 0) {
        v = gg_bswap32(v);
        f->order = GGUF_BIG_ENDIAN;
    } else {
        f->order = GGUF_LITTLE_ENDIAN;
    }
    if (v == 0)
        return bad(p, GGUF_E_FORMAT, 4, "version 0 is not a GGUF version");
    if (v > 3)
        return bad(p, GGUF_E_UNSUPPORTED, 4, "unsupported GGUF version %lu (this reads 1 to 3)",
                   (unsigned long)v);
    f->version = v;
    f->lenw = v == 1 ? 4 : 8;
    if ((rc = rd_len(p, &f->n_tensors, "tensor count"))) return rc;
    if ((rc = rd_len(p, &f->n_kv, "key-value count"))) return rc;
    return GGUF_OK;
}

static int parse_kvs(parser *p)
{
    gguf_file *f = p->f;
    uint64_t cap = 0;
    int rc;
    p->kind = 1;
    p->count = f->n_kv;
    /* Smallest pair: a one-byte key and a one-byte value. */
    reserve((void **)&f->kv, &cap, first_cap(p, f->n_kv, f->lenw + 1 + 4 + 1), sizeof *f->kv);
    for (uint64_t i = 0; i < f->n_kv; i++) {
        p->index = i;
        p->have_name = 0;
        if (grow((void **)&f->kv, &cap, i, sizeof *f->kv) < 0) return oom(p);
        gguf_kv *kv = &f->kv[i];
        memset(kv, 0, sizeof *kv);
        kv->offset = p->pos;
        uint64_t klen;
        if ((rc = rd_len(p, &klen, "key length"))) return rc;
        if (klen == 0) return bad(p, GGUF_E_FORMAT, kv->offset, "empty key");
        if (klen > GG_MAX_KEY_LEN)
            return bad(p, GGUF_E_FORMAT, kv->offset, "key length %llu exceeds %u bytes",
                       (unsigned long long)klen, GG_MAX_KEY_LEN);
        if ((rc = need(p, klen, "key"))) return rc;
        if (memchr(at(p), 0, (size_t)klen))
            return bad(p, GGUF_E_FORMAT, kv->offset, "key contains a NUL byte");
        p->name_off = p->pos;
        p->name_len = klen;
        p->have_name = 1;
        kv->key.ptr = (const char *)(uintptr_t)p->pos; /* offset, see fix_pointers() */
        kv->key.len = (size_t)klen;
        p->pos += klen;
        uint32_t type;
        uint64_t type_at = p->pos;
        if ((rc = rd_u32(p, &type, "value type"))) return rc;
        if (type >= GGUF_VT_COUNT)
            return bad(p, GGUF_E_FORMAT, type_at, "value type id %lu out of range (0..%d)",
                       (unsigned long)type, GGUF_VT_COUNT - 1);
        if ((rc = parse_value(p, type, &kv->value, 0))) return rc;
        if (klen == 17 && memcmp(f->src.base + p->name_off, "general.alignment", 17) == 0) {
            if (type != GGUF_VT_UINT32)
                return bad(p, GGUF_E_FORMAT, type_at,
                           "general.alignment has type %s, must be UINT32", gguf_vtype_name(type));
            uint32_t a = kv->value.v.u32;
            if (a == 0 || (a & (a - 1)) != 0 || a > GG_MAX_ALIGNMENT)
                return bad(p, GGUF_E_FORMAT, kv->value.offset,
                           "general.alignment %lu is not a power of two up to %u",
                           (unsigned long)a, GG_MAX_ALIGNMENT);
            f->alignment = a;
        }
    }
    return GGUF_OK;
}

static int parse_tensor_infos(parser *p)
{
    gguf_file *f = p->f;
    uint64_t cap = 0;
    int rc;
    p->kind = 2;
    p->count = f->n_tensors;
    /* Smallest info: a one-byte name, one dimension, type and offset. */
    reserve((void **)&f->tensors, &cap, first_cap(p, f->n_tensors, 2 * f->lenw + 1 + 4 + 4 + 8),
            sizeof *f->tensors);
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        p->index = i;
        p->have_name = 0;
        if (grow((void **)&f->tensors, &cap, i, sizeof *f->tensors) < 0) return oom(p);
        gguf_tensor *t = &f->tensors[i];
        memset(t, 0, sizeof *t);
        t->info_offset = p->pos;
        uint64_t noff, nlen;
        if ((rc = rd_len(p, &nlen, "name length"))) return rc;
        if (nlen == 0) return bad(p, GGUF_E_FORMAT, t->info_offset, "empty tensor name");
        if (nlen > GG_MAX_TENSOR_NAME)
            return bad(p, GGUF_E_FORMAT, t->info_offset,
                       "tensor name length %llu exceeds %u bytes", (unsigned long long)nlen,
                       GG_MAX_TENSOR_NAME);
        p->pos = t->info_offset;
        if ((rc = rd_str(p, &noff, &nlen, "tensor name"))) return rc;
        p->name_off = noff;
        p->name_len = nlen;
        p->have_name = 1;
        t->name.ptr = (const char *)(uintptr_t)noff; /* offset, see fix_pointers() */
        t->name.len = (size_t)nlen;

        uint64_t at_dims = p->pos;
        if ((rc = rd_u32(p, &t->n_dims, "n_dims"))) return rc;
        if (t->n_dims < 1 || t->n_dims > 4)
            return bad(p, GGUF_E_FORMAT, at_dims, "n_dims is %lu, must be 1 to 4",
                       (unsigned long)t->n_dims);
        for (unsigned d = 0; d < 4; d++) t->ne[d] = 1;
        for (unsigned d = 0; d < t->n_dims; d++) {
            uint64_t at_d = p->pos;
            if ((rc = rd_len(p, &t->ne[d], "dimension"))) return rc;
            if (t->ne[d] > (uint64_t)INT64_MAX)
                return bad(p, GGUF_E_FORMAT, at_d, "dimension %u is %llu, larger than 2^63-1", d,
                           (unsigned long long)t->ne[d]);
        }
        uint64_t at_type = p->pos;
        if ((rc = rd_u32(p, &t->type, "tensor type"))) return rc;
        const gguf_type_info *ti = gguf_type_get(t->type);
        if (!ti)
            return bad(p, GGUF_E_FORMAT, at_type, "unknown tensor type id %lu",
                       (unsigned long)t->type);
        uint64_t at_off = p->pos;
        if ((rc = rd_u64(p, &t->offset, "data offset"))) return rc;

        /* Size: (ne0 / block) * bytes_per_block * ne1 * ne2 * ne3, every
         * step checked; the element count likewise, within int64. */
        if (t->ne[0] % ti->block_size)
            return bad(p, GGUF_E_FORMAT, at_dims,
                       "first dimension %llu is not a multiple of the %s block size %lu",
                       (unsigned long long)t->ne[0], ti->name, (unsigned long)ti->block_size);
        uint64_t bytes = (t->ne[0] / ti->block_size), elems = t->ne[0];
        int ok = gg_mul(bytes, ti->type_size, &bytes);
        for (unsigned d = 1; d < 4 && ok; d++)
            ok = gg_mul(bytes, t->ne[d], &bytes) && gg_mul(elems, t->ne[d], &elems);
        /* Sizes and counts live in int64 in every engine: beyond that is an overflow. */
        if (!ok || elems > (uint64_t)INT64_MAX || bytes > (uint64_t)INT64_MAX)
            return bad(p, GGUF_E_FORMAT, at_dims,
                       "dimensions %llu x %llu x %llu x %llu of type %s overflow",
                       (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
                       (unsigned long long)t->ne[2], (unsigned long long)t->ne[3], ti->name);
        t->size = bytes;
        t->n_elements = elems;
        (void)at_off;
    }
    return GGUF_OK;
}

/* ------------------------------------------------------------------------ */
/* After the header                                                          */

/* Turns the offsets recorded while parsing into pointers into the final
 * buffer. */
static void fix_pointers(gguf_file *f)
{
    const char *base = (const char *)f->src.base;
    for (uint64_t i = 0; i < f->n_kv; i++) {
        gguf_kv *kv = &f->kv[i];
        kv->key.ptr = base + (uintptr_t)kv->key.ptr;
        if (kv->value.type == GGUF_VT_STRING)
            kv->value.v.str.ptr = base + (uintptr_t)kv->value.v.str.ptr;
    }
    for (uint64_t i = 0; i < f->n_tensors; i++)
        f->tensors[i].name.ptr = base + (uintptr_t)f->tensors[i].name.ptr;
}

static int check_unique(parser *p)
{
    gguf_file *f = p->f;
    uint64_t first;
    p->kind = 1;
    p->count = f->n_kv;
    if (gg_names_reserve(&f->kv_names, f->n_kv) < 0 ||
        gg_names_reserve(&f->tensor_names, f->n_tensors) < 0)
        return oom(p);
    for (uint64_t i = 0; i < f->n_kv; i++) {
        gguf_kv *kv = &f->kv[i];
        int r = gg_names_insert(&f->kv_names, kv->key.ptr, kv->key.len, i, &first);
        if (r < 0) return oom(p);
        if (r == 0) {
            p->index = i;
            p->have_name = 1;
            p->name_off = (uint64_t)((const uint8_t *)kv->key.ptr - f->src.base);
            p->name_len = kv->key.len;
            return bad(p, GGUF_E_FORMAT, kv->offset, "duplicate key (first at key %llu)",
                       (unsigned long long)first);
        }
    }
    p->kind = 2;
    p->count = f->n_tensors;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        int r = gg_names_insert(&f->tensor_names, t->name.ptr, t->name.len, i, &first);
        if (r < 0) return oom(p);
        if (r == 0) {
            p->index = i;
            p->have_name = 1;
            p->name_off = (uint64_t)((const uint8_t *)t->name.ptr - f->src.base);
            p->name_len = t->name.len;
            return bad(p, GGUF_E_FORMAT, t->info_offset,
                       "duplicate tensor name (first at tensor %llu)", (unsigned long long)first);
        }
    }
    return GGUF_OK;
}

static void merge_sort(gguf_file *f, uint64_t *v, uint64_t *tmp, uint64_t n)
{
    /* A stable bottom-up merge sort, re-entrant unlike qsort with a global. */
    for (uint64_t w = 1; w < n; w *= 2) {
        for (uint64_t lo = 0; lo < n; lo += 2 * w) {
            uint64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            uint64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                const gguf_tensor *x = &f->tensors[v[i]], *y = &f->tensors[v[j]];
                tmp[k++] = (y->offset < x->offset) ? v[j++] : v[i++];
            }
            while (i < mid) tmp[k++] = v[i++];
            while (j < hi) tmp[k++] = v[j++];
        }
        memcpy(v, tmp, (size_t)n * sizeof *v);
    }
}

/* Alignment, ranges inside the data section, no overlaps. */
static int check_layout(parser *p, int size_known)
{
    gguf_file *f = p->f;
    p->kind = 0;
    if (!gg_align_up(f->header_size, f->alignment, &f->data_offset))
        return bad(p, GGUF_E_FORMAT, f->header_size, "data offset overflows");
    uint64_t fsize = f->src.size;
    if (size_known && f->n_tensors > 0 && f->data_offset > fsize)
        return bad(p, GGUF_E_FORMAT, f->header_size,
                   "data section starts at byte %llu, past the end of the file (%llu bytes)",
                   (unsigned long long)f->data_offset, (unsigned long long)fsize);
    p->kind = 2;
    p->count = f->n_tensors;
    f->data_end = f->data_offset;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        p->index = i;
        p->have_name = 1;
        p->name_off = (uint64_t)((const uint8_t *)t->name.ptr - f->src.base);
        p->name_len = t->name.len;
        uint64_t at_off = t->info_offset + f->lenw + t->name.len + 4 +
                          (uint64_t)t->n_dims * f->lenw + 4;
        if (t->offset % f->alignment)
            return bad(p, GGUF_E_FORMAT, at_off, "data offset %llu is not a multiple of the alignment %lu",
                       (unsigned long long)t->offset, (unsigned long)f->alignment);
        uint64_t end;
        if (!gg_add(f->data_offset, t->offset, &t->file_offset) ||
            !gg_add(t->file_offset, t->size, &end))
            return bad(p, GGUF_E_FORMAT, at_off, "data offset %llu overflows",
                       (unsigned long long)t->offset);
        if (size_known && end > fsize)
            return bad(p, GGUF_E_FORMAT, at_off,
                       "data ends at byte %llu, file has %llu bytes", (unsigned long long)end,
                       (unsigned long long)fsize);
        if (end > f->data_end) f->data_end = end;
        if (f->src.mode == GGUF_INPUT_MAPPED || f->src.mode == GGUF_INPUT_MEMORY)
            t->data = f->src.base + t->file_offset;
    }
    if (f->n_tensors == 0) return GGUF_OK;
    if (f->n_tensors > SIZE_MAX / (2 * sizeof(uint64_t))) return oom(p);
    f->by_offset = malloc((size_t)f->n_tensors * sizeof(uint64_t));
    if (!f->by_offset) return oom(p);
    int sorted = 1;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        f->by_offset[i] = i;
        if (i && f->tensors[i].offset < f->tensors[i - 1].offset) sorted = 0;
    }
    /* Writers lay tensors out in directory order, so the sort and its
     * scratch array are usually not needed. */
    if (!sorted) {
        uint64_t *tmp = malloc((size_t)f->n_tensors * sizeof(uint64_t));
        if (!tmp) return oom(p);
        merge_sort(f, f->by_offset, tmp, f->n_tensors);
        free(tmp);
    }
    /* Overlap: a non-empty tensor starting before the furthest end so far. */
    uint64_t prev_end = 0, prev = UINT64_MAX;
    for (uint64_t k = 0; k < f->n_tensors; k++) {
        gguf_tensor *t = &f->tensors[f->by_offset[k]];
        if (t->size == 0) continue;
        if (prev != UINT64_MAX && t->offset < prev_end) {
            char q[96];
            const gguf_tensor *o = &f->tensors[prev];
            p->index = f->by_offset[k];
            p->name_off = (uint64_t)((const uint8_t *)t->name.ptr - f->src.base);
            p->name_len = t->name.len;
            gg_quote(q, sizeof q, o->name.ptr, o->name.len);
            return bad(p, GGUF_E_FORMAT, t->info_offset,
                       "data [%llu, %llu) overlaps tensor %llu '%s' [%llu, %llu)",
                       (unsigned long long)t->offset, (unsigned long long)(t->offset + t->size),
                       (unsigned long long)prev, q, (unsigned long long)o->offset,
                       (unsigned long long)(o->offset + o->size));
        }
        if (t->offset + t->size > prev_end) {
            prev_end = t->offset + t->size;
            prev = f->by_offset[k];
        }
    }
    return GGUF_OK;
}

/* ------------------------------------------------------------------------ */
/* Open / close                                                              */

static int parse(gguf_file *f, unsigned flags, gguf_error *err)
{
    parser p = {.f = f, .err = err};
    int rc;
    f->flags = flags;
    f->alignment = GG_DEFAULT_ALIGNMENT;
    if ((rc = parse_header(&p))) return rc;
    if ((rc = parse_kvs(&p))) return rc;
    if ((rc = parse_tensor_infos(&p))) return rc;
    f->header_size = p.pos;
    int stream = f->src.st != NULL;
    int size_known = 1;
    if (stream) {
        if (flags & GGUF_OPEN_SEQUENTIAL) {
            size_known = 0;
        } else if ((rc = gg_source_drain(&f->src, f->name, err))) {
            return rc;
        }
    }
    fix_pointers(f);
    if ((rc = check_unique(&p))) return rc;
    return check_layout(&p, size_known);
}

static int open_source(gguf_file **out, gguf_file *f, const char *display, unsigned flags,
                       gguf_error *err)
{
    int rc = parse(f, flags, err);
    if (rc) {
        gguf_close(f);
        return rc;
    }
    *out = f;
    return GGUF_OK;
}

/* The names the hash sets of a file index (gg_name_fn). */
static gguf_str kv_name(const void *ctx, uint64_t i)
{
    return ((const gguf_file *)ctx)->kv[i].key;
}

static gguf_str tensor_name(const void *ctx, uint64_t i)
{
    return ((const gguf_file *)ctx)->tensors[i].name;
}

static gguf_file *file_new(const char *display)
{
    gguf_file *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->src.fd = -1;
    f->name = strdup(display ? display : "(memory)");
    if (!f->name) {
        free(f);
        return NULL;
    }
    gg_names_init(&f->kv_names, kv_name, f);
    gg_names_init(&f->tensor_names, tensor_name, f);
    return f;
}

int gguf_open_fd(gguf_file **out, int fd, const char *display_name, unsigned flags,
                 gguf_error *err)
{
    if (!out) {
        if (fd >= 0) close(fd);
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "gguf_open_fd: out is NULL");
    }
    *out = NULL;
    if (fd < 0) return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "gguf_open_fd: bad fd");
    const char *name = display_name ? display_name : "(fd)";
    gguf_file *f = file_new(name);
    if (!f) {
        close(fd);
        return gg_fail(err, GGUF_E_NOMEM, ENOMEM, UINT64_MAX, name, "out of memory");
    }
    int rc = gg_source_open_fd(&f->src, fd, (flags & GGUF_OPEN_NO_MMAP) != 0, f->name, err);
    if (rc) {
        gguf_close(f);
        return rc;
    }
    return open_source(out, f, name, flags, err);
}

int gguf_open(gguf_file **out, const char *path, const char *display_name, unsigned flags,
              gguf_error *err)
{
    if (!out || !path) return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                                      "gguf_open: NULL argument");
    *out = NULL;
    const char *name = display_name ? display_name : path;
    int fd;
    if (strcmp(path, "-") == 0) {
        fd = fcntl(0, F_DUPFD_CLOEXEC, 3);
    } else {
        do fd = open(path, O_RDONLY | O_CLOEXEC); while (fd < 0 && errno == EINTR);
    }
    if (fd < 0) {
        int e = errno;
        return gg_fail(err, GGUF_E_IO, e, UINT64_MAX, name, "%s", strerror(e));
    }
    return gguf_open_fd(out, fd, name, flags, err);
}

int gguf_open_memory(gguf_file **out, const void *data, size_t size, const char *display_name,
                     gguf_error *err)
{
    if (!out || (!data && size))
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "gguf_open_memory: NULL argument");
    *out = NULL;
    gguf_file *f = file_new(display_name);
    if (!f) return gg_fail(err, GGUF_E_NOMEM, ENOMEM, UINT64_MAX, display_name, "out of memory");
    gg_source_open_memory(&f->src, data, size);
    return open_source(out, f, f->name, 0, err);
}

void gguf_close(gguf_file *f)
{
    if (!f) return;
    for (size_t i = 0; i < f->n_allocs; i++) free(f->allocs[i]);
    free(f->allocs);
    free(f->kv);
    free(f->tensors);
    free(f->by_offset);
    gg_names_free(&f->kv_names);
    gg_names_free(&f->tensor_names);
    gg_source_close(&f->src);
    free(f->name);
    free(f);
}

/* ------------------------------------------------------------------------ */
/* Getters                                                                   */

const char *gguf_name(const gguf_file *f) { return f->name; }
uint32_t gguf_version(const gguf_file *f) { return f->version; }
int gguf_byte_order(const gguf_file *f) { return f->order; }
int gguf_input_mode(const gguf_file *f) { return f->src.mode; }
uint64_t gguf_kv_count(const gguf_file *f) { return f->n_kv; }
uint64_t gguf_tensor_count(const gguf_file *f) { return f->n_tensors; }
uint32_t gguf_alignment(const gguf_file *f) { return f->alignment; }
uint64_t gguf_data_offset(const gguf_file *f) { return f->data_offset; }
uint64_t gguf_data_end(const gguf_file *f) { return f->data_end; }
uint64_t gguf_header_size(const gguf_file *f) { return f->header_size; }
const void *gguf_header_bytes(const gguf_file *f) { return f->src.base; }

gg_source *gg_file_source(gguf_file *f) { return &f->src; }
const uint64_t *gg_file_order(const gguf_file *f) { return f->by_offset; }
const uint64_t *gguf_tensor_order(const gguf_file *f) { return f->by_offset; }

int gguf_is_stream(const gguf_file *f)
{
    return f->src.mode == GGUF_INPUT_STREAM || f->src.mode == GGUF_INPUT_GZIP;
}

int gguf_data_swapped(const gguf_file *f)
{
    return (f->order == GGUF_BIG_ENDIAN) != (GG_HOST_ORDER == GGUF_BIG_ENDIAN);
}

int gguf_mapped_range(const gguf_file *f, const void **base, size_t *len)
{
    int mapped = f && f->src.map != NULL;
    if (base) *base = mapped ? f->src.map : NULL;
    if (len) *len = mapped ? f->src.map_len : 0;
    return mapped;
}

int gguf_stopped_at_trailing(const gguf_file *f) { return f->stopped; }
void gg_file_stopped(gguf_file *f) { f->stopped = 1; }

uint64_t gg_file_stop_offset(const gguf_file *f)
{
    unsigned both = GGUF_OPEN_SEQUENTIAL | GGUF_OPEN_STOP_AT_TRAILING;
    uint64_t end;
    if (!f->src.st || (f->flags & both) != both ||
        !gg_align_up(f->data_end, f->alignment, &end) ||
        !gg_add(end, GGUF_TRAILING_READ_MAX, &end))
        return UINT64_MAX;
    return end;
}

uint64_t gguf_file_size(const gguf_file *f)
{
    return f->src.size != UINT64_MAX ? f->src.size : f->src.spos;
}

const gguf_kv *gguf_kv_at(const gguf_file *f, uint64_t i)
{
    return f && i < f->n_kv ? &f->kv[i] : NULL;
}

const gguf_kv *gguf_kv_find(const gguf_file *f, const char *key)
{
    uint64_t i;
    if (!f || !key || !gg_names_find(&f->kv_names, key, strlen(key), &i)) return NULL;
    return &f->kv[i];
}

const gguf_tensor *gguf_tensor_at(const gguf_file *f, uint64_t i)
{
    return f && i < f->n_tensors ? &f->tensors[i] : NULL;
}

const gguf_tensor *gguf_tensor_find(const gguf_file *f, const char *name)
{
    uint64_t i;
    if (!f || !name || !gg_names_find(&f->tensor_names, name, strlen(name), &i)) return NULL;
    return &f->tensors[i];
}

uint64_t gguf_tensor_index(const gguf_file *f, const gguf_tensor *t)
{
    return (uint64_t)(t - f->tensors);
}

/* Finds key and checks its type; the shared part of the typed getters. */
static int typed(const gguf_file *f, const char *key, uint32_t type, const gguf_value **v,
                 gguf_error *err)
{
    if (!f || !key) return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "NULL argument");
    const gguf_kv *kv = gguf_kv_find(f, key);
    if (!kv) return gg_fail(err, GGUF_E_NOT_FOUND, 0, UINT64_MAX, f->name, "key '%s' not found", key);
    if (kv->value.type != type)
        return gg_fail(err, GGUF_E_TYPE, 0, kv->offset, f->name, "key '%s' has type %s, not %s",
                       key, gguf_vtype_name(kv->value.type), gguf_vtype_name(type));
    *v = &kv->value;
    return GGUF_OK;
}

#define TYPED_GETTER(fn, ctype, vt, field)                                            \
    int fn(const gguf_file *f, const char *key, ctype *out, gguf_error *err)           \
    {                                                                                  \
        const gguf_value *v;                                                           \
        int rc = typed(f, key, vt, &v, err);                                           \
        if (rc == GGUF_OK && out) *out = v->v.field;                                   \
        return rc;                                                                     \
    }

TYPED_GETTER(gguf_kv_u8, uint8_t, GGUF_VT_UINT8, u8)
TYPED_GETTER(gguf_kv_i8, int8_t, GGUF_VT_INT8, i8)
TYPED_GETTER(gguf_kv_u16, uint16_t, GGUF_VT_UINT16, u16)
TYPED_GETTER(gguf_kv_i16, int16_t, GGUF_VT_INT16, i16)
TYPED_GETTER(gguf_kv_u32, uint32_t, GGUF_VT_UINT32, u32)
TYPED_GETTER(gguf_kv_i32, int32_t, GGUF_VT_INT32, i32)
TYPED_GETTER(gguf_kv_u64, uint64_t, GGUF_VT_UINT64, u64)
TYPED_GETTER(gguf_kv_i64, int64_t, GGUF_VT_INT64, i64)
TYPED_GETTER(gguf_kv_f32, float, GGUF_VT_FLOAT32, f32)
TYPED_GETTER(gguf_kv_f64, double, GGUF_VT_FLOAT64, f64)
TYPED_GETTER(gguf_kv_bool, int, GGUF_VT_BOOL, b)
TYPED_GETTER(gguf_kv_str, gguf_str, GGUF_VT_STRING, str)

int gguf_kv_uint(const gguf_file *f, const char *key, uint64_t *out, gguf_error *err)
{
    if (!f || !key) return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "NULL argument");
    const gguf_kv *kv = gguf_kv_find(f, key);
    if (!kv) return gg_fail(err, GGUF_E_NOT_FOUND, 0, UINT64_MAX, f->name, "key '%s' not found", key);
    const gguf_value *v = &kv->value;
    int64_t s = 0;
    uint64_t u = 0;
    int is_signed = 1;
    switch (v->type) {
    case GGUF_VT_UINT8: u = v->v.u8; is_signed = 0; break;
    case GGUF_VT_UINT16: u = v->v.u16; is_signed = 0; break;
    case GGUF_VT_UINT32: u = v->v.u32; is_signed = 0; break;
    case GGUF_VT_UINT64: u = v->v.u64; is_signed = 0; break;
    case GGUF_VT_INT8: s = v->v.i8; break;
    case GGUF_VT_INT16: s = v->v.i16; break;
    case GGUF_VT_INT32: s = v->v.i32; break;
    case GGUF_VT_INT64: s = v->v.i64; break;
    default:
        return gg_fail(err, GGUF_E_TYPE, 0, kv->offset, f->name,
                       "key '%s' has type %s, not an integer", key, gguf_vtype_name(v->type));
    }
    if (is_signed) {
        if (s < 0)
            return gg_fail(err, GGUF_E_TYPE, 0, kv->offset, f->name,
                           "key '%s' is negative (%lld)", key, (long long)s);
        u = (uint64_t)s;
    }
    if (out) *out = u;
    return GGUF_OK;
}

int gguf_kv_array(const gguf_file *f, const char *key, uint32_t elem_type, const gguf_value **out,
                  gguf_error *err)
{
    const gguf_value *v;
    int rc = typed(f, key, GGUF_VT_ARRAY, &v, err);
    if (rc) return rc;
    if (v->elem_type != elem_type)
        return gg_fail(err, GGUF_E_TYPE, 0, v->offset, f->name,
                       "key '%s' is an array of %s, not of %s", key, gguf_vtype_name(v->elem_type),
                       gguf_vtype_name(elem_type));
    if (out) *out = v;
    return GGUF_OK;
}

/* ------------------------------------------------------------------------ */
/* Arrays                                                                    */

/* 1 when arr->priv is a struct gg_array, 0 when it is the gguf_file. */
static int array_has_table(const gguf_value *arr)
{
    return (arr->elem_type == GGUF_VT_STRING || arr->elem_type == GGUF_VT_ARRAY) && arr->count > 0;
}

static const gguf_file *array_file(const gguf_value *arr)
{
    return array_has_table(arr) ? ((const struct gg_array *)arr->priv)->f : arr->priv;
}

/* Offset of the first element of an array of fixed-size elements: after
 * its element type and count. */
static uint64_t array_data_offset(const gguf_value *arr, const gguf_file *f)
{
    return arr->offset + 4 + f->lenw;
}

int gguf_array_get(const gguf_value *arr, uint64_t i, gguf_value *out)
{
    if (!arr || !out || arr->type != GGUF_VT_ARRAY || i >= arr->count || !arr->priv)
        return GGUF_E_INVALID;
    const struct gg_array *a = arr->priv;
    const gguf_file *f = array_file(arr);
    const uint8_t *base = f->src.base;
    int o = f->order;
    memset(out, 0, sizeof *out);
    out->type = arr->elem_type;
    switch (arr->elem_type) {
    case GGUF_VT_STRING: {
        const uint8_t *p = base + a->str_off[i];
        uint64_t len = f->lenw == 8 ? gg_load64(p, o) : gg_load32(p, o);
        out->offset = a->str_off[i];
        out->v.str.ptr = (const char *)p + f->lenw;
        out->v.str.len = (size_t)len;
        return GGUF_OK;
    }
    case GGUF_VT_ARRAY:
        *out = a->sub[i];
        return GGUF_OK;
    default: {
        size_t sz = gguf_vtype_size(arr->elem_type);
        out->offset = array_data_offset(arr, f) + i * sz;
        const uint8_t *p = base + out->offset;
        switch (sz) {
        case 1: out->v.u8 = *p; break;
        case 2: out->v.u16 = gg_load16(p, o); break;
        case 4: out->v.u32 = gg_load32(p, o); break;
        default: out->v.u64 = gg_load64(p, o); break;
        }
        if (arr->elem_type == GGUF_VT_BOOL) out->v.b = *p;
        return GGUF_OK;
    }
    }
}

gguf_str gguf_array_str(const gguf_value *arr, uint64_t i)
{
    gguf_value v;
    gguf_str none = {NULL, 0};
    if (!arr || arr->elem_type != GGUF_VT_STRING || gguf_array_get(arr, i, &v)) return none;
    return v.v.str;
}

const void *gguf_array_data(const gguf_value *arr)
{
    if (!arr || arr->type != GGUF_VT_ARRAY || !arr->priv || !gguf_vtype_size(arr->elem_type))
        return NULL;
    const gguf_file *f = array_file(arr);
    if (f->order != GG_HOST_ORDER && gguf_vtype_size(arr->elem_type) > 1) return NULL;
    return f->src.base + array_data_offset(arr, f);
}

/* ------------------------------------------------------------------------ */
/* Data                                                                      */

/* The tensor whose data contains absolute offset off, for messages. */
static const gguf_tensor *tensor_at_offset(const gguf_file *f, uint64_t off)
{
    for (uint64_t k = 0; f->by_offset && k < f->n_tensors; k++) {
        const gguf_tensor *t = &f->tensors[f->by_offset[k]];
        if (t->size && off >= t->file_offset && off - t->file_offset < t->size) return t;
    }
    return NULL;
}

static int data_truncated(const gguf_file *f, uint64_t want, gguf_error *err)
{
    uint64_t size = f->src.size;
    const gguf_tensor *t = tensor_at_offset(f, size);
    char q[96];
    if (t) {
        gg_quote(q, sizeof q, t->name.ptr, t->name.len);
        return gg_fail(err, GGUF_E_FORMAT, 0, size, f->name,
                       "tensor %llu '%s': data ends at byte %llu, file has %llu bytes",
                       (unsigned long long)gguf_tensor_index(f, t), q,
                       (unsigned long long)(t->file_offset + t->size), (unsigned long long)size);
    }
    return gg_fail(err, GGUF_E_FORMAT, 0, size, f->name,
                   "file ends at byte %llu, before byte %llu", (unsigned long long)size,
                   (unsigned long long)want);
}

int gguf_read_data(gguf_file *f, uint64_t offset, void *buf, size_t n, gguf_error *err)
{
    uint64_t end;
    if (!f || (!buf && n))
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "gguf_read_data: NULL argument");
    if (!gg_add(offset, n, &end))
        return gg_fail(err, GGUF_E_INVALID, 0, offset, f->name, "read range overflows");
    if (!f->src.st) {
        if (end > f->src.size) return data_truncated(f, end, err);
        memcpy(buf, f->src.base + offset, n);
        return GGUF_OK;
    }
    int rc = gg_source_read(&f->src, offset, buf, n, f->name, err);
    if (rc == GG_EOF) return data_truncated(f, end, err);
    return rc;
}

int gguf_read_to_end(gguf_file *f, gguf_error *err)
{
    if (!f) return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "NULL handle");
    if (!f->src.st || f->stopped) return GGUF_OK;
    uint64_t stop = gg_file_stop_offset(f);
    unsigned char byte;
    int rc;
    if (stop == UINT64_MAX) {
        if ((rc = gg_source_drain(&f->src, f->name, err))) return rc;
    } else if (stop < f->src.spos) {
        f->stopped = 1;     /* the stream has given that byte already */
        return GGUF_OK;
    } else if ((rc = gg_source_read(&f->src, stop, &byte, 1, f->name, err)) == GGUF_OK) {
        f->stopped = 1;
        return GGUF_OK;
    } else if (rc != GG_EOF) {
        return rc;
    }
    /* Without tensors there is no data section to hold, so a file may end
     * before the padding that would align one, as a mapped file may. */
    if (f->n_tensors > 0 && f->src.size < f->data_end) return data_truncated(f, f->data_end, err);
    return GGUF_OK;
}
