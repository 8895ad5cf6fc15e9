/* write.c -- the GGUF writer.
 *
 * KV pairs are serialized, in the output's version and byte order, into a
 * growing byte buffer the moment they are added; tensor infos are kept as
 * records and laid out (aligned, contiguous, in call order) as they come.
 * Opening the output writes the whole header; tensor data is then streamed
 * through a 1 MiB user-space buffer, with the alignment padding inserted
 * between tensors and after the last one (as ggml's own writer does, so that
 * readers that load the padded data section in one read accept the file).
 *
 * File output is written where no other process can see it until it is
 * whole.  On Linux that is an unnamed file (open(2) with O_TMPFILE) in the
 * target's directory, which gguf_writer_finish() fsyncs and links into
 * place, so that not even SIGKILL can leave a temporary file behind.  Where
 * O_TMPFILE is refused (an old kernel, a file system without it, no /proc
 * to link through) the output is a hidden file ".BASE.XXXXXX" from
 * mkostemp(3), renamed over the target; every failure before the rename
 * removes it, and gguf_writer_temp_path() names it for a caller's signal
 * handler. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gguf/internal.h"

#define OUT_BUF_SIZE ((size_t)1 << 20)

/* Tensor data larger than this is refused, so that header + data always fit
 * in an off_t with room to spare. */
#define MAX_DATA_END ((uint64_t)1 << 62)

enum writer_state {
    W_BUILDING,  /* adding KVs and tensors */
    W_OPEN,      /* header written, taking tensor data */
    W_DONE,      /* finished successfully */
    W_FAILED     /* output abandoned after an error */
};

struct wtensor {
    char *name;          /* owned, NUL-terminated */
    size_t name_len;
    uint32_t type;
    uint32_t n_dims;
    uint64_t ne[4];
    uint64_t size;       /* bytes of data */
    uint64_t offset;     /* relative to the data section */
};

struct gguf_writer {
    uint32_t version;
    int order;
    uint32_t alignment;

    /* Serialized KV pairs. */
    unsigned char *kv;
    size_t kv_len, kv_cap;
    int kv_oom;          /* a put into kv failed for lack of memory */
    uint64_t n_kv;
    char **keys;         /* n_kv owned key copies; key_set points into them */
    size_t keys_cap;
    gg_names key_set;    /* indexes keys[] */

    struct wtensor *tensors;
    uint64_t n_tensors;
    size_t tensors_cap;
    gg_names tensor_set; /* indexes tensors[].name */
    uint64_t ti_bytes;   /* serialized size of all tensor infos */
    uint64_t data_end;   /* end of the last tensor, relative to the data section */

    /* Output. */
    int state;
    int fd;
    int own_fd;          /* the writer opened fd and closes it */
    char *name;          /* for messages: target path or display name */
    char *target;        /* file output through a temporary: the final path */
    char *tmp;           /* ... and the template ".BASE.XXXXXX" of the temporary name */
    int tmp_named;       /* a file of ours exists under the name in tmp */
    int unnamed;         /* fd is an O_TMPFILE file, linked into place at finish */
    unsigned char *buf;
    size_t buf_len;
    uint64_t flushed;    /* bytes handed to write(2) so far */
    uint64_t cur;        /* tensor being filled */
    uint64_t cur_got;    /* bytes of it received */
    uint64_t data_pos;   /* bytes of data section emitted, padding included */
    uint64_t data_given; /* tensor bytes received in all */
    uint64_t data_total; /* tensor bytes expected in all */
};

/* ------------------------------------------------------------------------ */
/* Creation and sizes                                                        */

/* The names the hash sets of a writer index (gg_name_fn). */
static gguf_str key_name(const void *ctx, uint64_t i)
{
    const char *k = ((const gguf_writer *)ctx)->keys[i];
    return (gguf_str){k, strlen(k)};
}

static gguf_str tensor_name(const void *ctx, uint64_t i)
{
    const struct wtensor *t = &((const gguf_writer *)ctx)->tensors[i];
    return (gguf_str){t->name, t->name_len};
}

gguf_writer *gguf_writer_new(void)
{
    gguf_writer *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->version = 3;
    w->order = GGUF_LITTLE_ENDIAN;
    w->alignment = GG_DEFAULT_ALIGNMENT;
    gg_names_init(&w->key_set, key_name, w);
    gg_names_init(&w->tensor_set, tensor_name, w);
    w->state = W_BUILDING;
    w->fd = -1;
    return w;
}

/* Bytes of a count or length field in the output's version. */
static unsigned count_bytes(const gguf_writer *w)
{
    return w->version == 1 ? 4 : 8;
}

/* The largest count or length the output's version can store. */
static uint64_t count_max(const gguf_writer *w)
{
    return w->version == 1 ? UINT32_MAX : UINT64_MAX;
}

/* Header size before alignment padding: magic, version, the two counts,
 * KV pairs and tensor infos. */
static uint64_t header_size(const gguf_writer *w)
{
    return 8 + 2 * (uint64_t)count_bytes(w) + w->kv_len + w->ti_bytes;
}

uint64_t gguf_writer_data_offset(const gguf_writer *w)
{
    uint64_t r;
    if (!w || !gg_align_up(header_size(w), w->alignment, &r)) return 0;
    return r;
}

uint64_t gguf_writer_total_size(const gguf_writer *w)
{
    uint64_t end, r;
    /* data_end <= MAX_DATA_END and the header lives in memory: no overflow
     * in practice; 0 is returned if it ever happened. */
    if (!w || !gg_align_up(w->data_end, w->alignment, &end) ||
        !gg_add(gguf_writer_data_offset(w), end, &r))
        return 0;
    return r;
}

const char *gguf_writer_temp_path(const gguf_writer *w)
{
    return w && w->state == W_OPEN && w->tmp_named ? w->tmp : NULL;
}

/* Whether the header may still change; fails with GGUF_E_INVALID if not. */
static int check_building(const gguf_writer *w, gguf_error *err)
{
    if (!w) return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "writer is NULL");
    if (w->state != W_BUILDING)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, w->name,
                       "the header cannot change once the output is opened");
    return GGUF_OK;
}

int gguf_writer_set_version(gguf_writer *w, uint32_t version, gguf_error *err)
{
    int rc = check_building(w, err);
    if (rc) return rc;
    if (w->n_kv || w->n_tensors)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                       "version can only be set before any KV or tensor is added");
    if (version < 1 || version > 3)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                       "unsupported GGUF version %u (1, 2 or 3)", version);
    w->version = version;
    return GGUF_OK;
}

int gguf_writer_set_byte_order(gguf_writer *w, int byte_order, gguf_error *err)
{
    int rc = check_building(w, err);
    if (rc) return rc;
    if (w->n_kv || w->n_tensors)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                       "byte order can only be set before any KV or tensor is added");
    if (byte_order != GGUF_LITTLE_ENDIAN && byte_order != GGUF_BIG_ENDIAN)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "invalid byte order %d",
                       byte_order);
    w->order = byte_order;
    return GGUF_OK;
}

/* ------------------------------------------------------------------------ */
/* Serializing KV pairs                                                      */

/* Appends n bytes to the KV buffer; on allocation failure sets kv_oom and
 * drops the bytes (the caller checks kv_oom once per pair and rolls back). */
static void put(gguf_writer *w, const void *p, size_t n)
{
    if (w->kv_oom || n == 0) return;
    if (n > w->kv_cap - w->kv_len) {
        size_t cap = w->kv_cap ? w->kv_cap : 4096;
        while (n > cap - w->kv_len) {
            if (cap > SIZE_MAX / 2) {
                w->kv_oom = 1;
                return;
            }
            cap *= 2;
        }
        unsigned char *nb = realloc(w->kv, cap);
        if (!nb) {
            w->kv_oom = 1;
            return;
        }
        w->kv = nb;
        w->kv_cap = cap;
    }
    memcpy(w->kv + w->kv_len, p, n);
    w->kv_len += n;
}

static void put_u32(gguf_writer *w, uint32_t v)
{
    unsigned char b[4];
    gg_store32(b, v, w->order);
    put(w, b, 4);
}

/* A count or length: u32 in version 1, u64 after (range checked by callers). */
static void put_count(gguf_writer *w, uint64_t v)
{
    unsigned char b[8];
    if (w->version == 1) {
        gg_store32(b, (uint32_t)v, w->order);
        put(w, b, 4);
    } else {
        gg_store64(b, v, w->order);
        put(w, b, 8);
    }
}

/* One scalar of `size` bytes given as its bit pattern in the low bits. */
static void put_scalar(gguf_writer *w, size_t size, uint64_t bits)
{
    unsigned char b[8];
    switch (size) {
    case 1: b[0] = (unsigned char)bits; break;
    case 2: gg_store16(b, (uint16_t)bits, w->order); break;
    case 4: gg_store32(b, (uint32_t)bits, w->order); break;
    default: gg_store64(b, bits, w->order); break;
    }
    put(w, b, size);
}

/* Fixed-size elements from host-order bytes, swapped as the output needs. */
static void put_host_scalars(gguf_writer *w, size_t size, const unsigned char *p, uint64_t n)
{
    if (size == 1 || w->order == GG_HOST_ORDER) {
        put(w, p, (size_t)(n * size)); /* n * size was checked to fit */
        return;
    }
    unsigned char tmp[4096];
    size_t per = sizeof tmp / size;
    while (n > 0 && !w->kv_oom) {
        size_t k = n < per ? (size_t)n : per;
        for (size_t i = 0; i < k; i++) {
            const unsigned char *s = p + i * size;
            unsigned char *d = tmp + i * size;
            for (size_t j = 0; j < size; j++) d[j] = s[size - 1 - j];
        }
        put(w, tmp, k * size);
        p += k * size;
        n -= k;
    }
}

/* For messages: the key, quoted. */
#define KEYQ(buf, k, len) gg_quote(buf, sizeof buf, k, len)

/* Checks a key for validity and uniqueness.  GGUF_OK or GGUF_E_INVALID. */
static int check_key(gguf_writer *w, const char *key, size_t len, gguf_error *err)
{
    char q[96];
    if (!key) return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "key is NULL");
    if (len == 0) return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "empty key");
    if (len > GG_MAX_KEY_LEN)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                       "key '%s': %zu bytes long, at most %u allowed", KEYQ(q, key, len), len,
                       GG_MAX_KEY_LEN);
    if (memchr(key, '\0', len))
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "key '%s': contains a NUL byte",
                       KEYQ(q, key, len));
    if (gg_names_find(&w->key_set, key, len, NULL))
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "key '%s': duplicate key",
                       KEYQ(q, key, len));
    if (w->n_kv >= count_max(w) || w->n_kv >= SIZE_MAX / sizeof(char *))
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                       "key '%s': too many KV pairs for GGUF version %u", KEYQ(q, key, len),
                       w->version);
    return GGUF_OK;
}

/* Is `key` general.alignment? */
static int is_alignment_key(const char *key, size_t len)
{
    static const char ak[] = "general.alignment";
    return len == sizeof ak - 1 && memcmp(key, ak, len) == 0;
}

/* Lays the tensors out again for alignment `align`.  With commit 0 it only
 * checks that the layout fits; returns 1 when it does, 0 on overflow. */
static int relayout(gguf_writer *w, uint32_t align, int commit)
{
    uint64_t end = 0;
    for (uint64_t i = 0; i < w->n_tensors; i++) {
        uint64_t off;
        if (!gg_align_up(end, align, &off) || !gg_add(off, w->tensors[i].size, &end) ||
            end > MAX_DATA_END)
            return 0;
        if (commit) w->tensors[i].offset = off;
    }
    if (commit) {
        w->data_end = end;
        w->alignment = align;
    }
    return 1;
}

/* Validates a general.alignment pair of type vtype and value v (when UINT32)
 * and applies it.  Called before the pair is committed; GGUF_OK or
 * GGUF_E_INVALID. */
static int apply_alignment(gguf_writer *w, uint32_t vtype, uint32_t v, gguf_error *err)
{
    if (vtype != GGUF_VT_UINT32)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                       "key 'general.alignment': must be UINT32, not %s",
                       gguf_vtype_name(vtype) ? gguf_vtype_name(vtype) : "an unknown type");
    if (v == 0 || (v & (v - 1)) || v > GG_MAX_ALIGNMENT)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                       "key 'general.alignment': %u is not a power of two up to %u", v,
                       GG_MAX_ALIGNMENT);
    if (!relayout(w, v, 0))
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                       "key 'general.alignment': tensor data too large with alignment %u", v);
    relayout(w, v, 1);
    return GGUF_OK;
}

/* Starts a pair: its key and type.  Returns the mark to roll back to. */
static size_t begin_kv(gguf_writer *w, const char *key, size_t len, uint32_t vtype)
{
    size_t mark = w->kv_len;
    w->kv_oom = 0;
    put_count(w, len);
    put(w, key, len);
    put_u32(w, vtype);
    return mark;
}

/* Ends a pair begun at `mark`: on rc != GGUF_OK or lack of memory the buffer
 * is rolled back, otherwise the key is recorded.  Returns the final status. */
static int end_kv(gguf_writer *w, size_t mark, const char *key, size_t len, int rc,
                  gguf_error *err)
{
    char *copy = NULL;
    if (rc == GGUF_OK && !w->kv_oom) {
        if (w->n_kv == w->keys_cap) {
            size_t cap = w->keys_cap ? w->keys_cap * 2 : 64;
            char **nk = cap <= SIZE_MAX / sizeof *nk ? realloc(w->keys, cap * sizeof *nk) : NULL;
            if (!nk) goto oom;
            w->keys = nk;
            w->keys_cap = cap;
        }
        copy = malloc(len + 1);
        if (!copy) goto oom;
        memcpy(copy, key, len);
        copy[len] = '\0';
        if (gg_names_insert(&w->key_set, copy, len, w->n_kv, NULL) != 1) goto oom;
        w->keys[w->n_kv++] = copy;
        return GGUF_OK;
    }
    if (rc == GGUF_OK) {
oom:
        free(copy);
        rc = gg_fail(err, GGUF_E_NOMEM, 0, UINT64_MAX, NULL, "out of memory adding a KV pair");
    }
    w->kv_len = mark;
    w->kv_oom = 0;
    return rc;
}

/* Adds a scalar pair of fixed-size type vtype with bit pattern `bits`. */
static int add_scalar(gguf_writer *w, const char *key, uint32_t vtype, uint64_t bits,
                      gguf_error *err)
{
    int rc = check_building(w, err);
    if (rc) return rc;
    size_t len = key ? strlen(key) : 0;
    if ((rc = check_key(w, key, len, err))) return rc;
    if (vtype == GGUF_VT_BOOL && bits > 1)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                       "key '%s': BOOL value must be 0 or 1", key);
    uint32_t old_align = w->alignment;
    if (is_alignment_key(key, len) && (rc = apply_alignment(w, vtype, (uint32_t)bits, err)))
        return rc;
    size_t mark = begin_kv(w, key, len, vtype);
    put_scalar(w, gguf_vtype_size(vtype), bits);
    rc = end_kv(w, mark, key, len, GGUF_OK, err);
    if (rc && w->alignment != old_align) relayout(w, old_align, 1);
    return rc;
}

int gguf_writer_add_u8(gguf_writer *w, const char *key, uint8_t v, gguf_error *err)
{
    return add_scalar(w, key, GGUF_VT_UINT8, v, err);
}

int gguf_writer_add_i8(gguf_writer *w, const char *key, int8_t v, gguf_error *err)
{
    return add_scalar(w, key, GGUF_VT_INT8, (uint8_t)v, err);
}

int gguf_writer_add_u16(gguf_writer *w, const char *key, uint16_t v, gguf_error *err)
{
    return add_scalar(w, key, GGUF_VT_UINT16, v, err);
}

int gguf_writer_add_i16(gguf_writer *w, const char *key, int16_t v, gguf_error *err)
{
    return add_scalar(w, key, GGUF_VT_INT16, (uint16_t)v, err);
}

int gguf_writer_add_u32(gguf_writer *w, const char *key, uint32_t v, gguf_error *err)
{
    return add_scalar(w, key, GGUF_VT_UINT32, v, err);
}

int gguf_writer_add_i32(gguf_writer *w, const char *key, int32_t v, gguf_error *err)
{
    return add_scalar(w, key, GGUF_VT_INT32, (uint32_t)v, err);
}

int gguf_writer_add_u64(gguf_writer *w, const char *key, uint64_t v, gguf_error *err)
{
    return add_scalar(w, key, GGUF_VT_UINT64, v, err);
}

int gguf_writer_add_i64(gguf_writer *w, const char *key, int64_t v, gguf_error *err)
{
    return add_scalar(w, key, GGUF_VT_INT64, (uint64_t)v, err);
}

int gguf_writer_add_f32(gguf_writer *w, const char *key, float v, gguf_error *err)
{
    uint32_t bits;
    memcpy(&bits, &v, 4);
    return add_scalar(w, key, GGUF_VT_FLOAT32, bits, err);
}

int gguf_writer_add_f64(gguf_writer *w, const char *key, double v, gguf_error *err)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    return add_scalar(w, key, GGUF_VT_FLOAT64, bits, err);
}

int gguf_writer_add_bool(gguf_writer *w, const char *key, int v, gguf_error *err)
{
    if (v != 0 && v != 1) {
        int rc = check_building(w, err);
        if (rc) return rc;
        char q[96];
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                       "key '%s': BOOL value %d is not 0 or 1",
                       key ? KEYQ(q, key, strlen(key)) : "(null)", v);
    }
    return add_scalar(w, key, GGUF_VT_BOOL, (uint64_t)v, err);
}

/* Checks a string of len bytes at s for the output; GGUF_OK or GGUF_E_INVALID. */
static int check_str(gguf_writer *w, const char *key, size_t klen, const char *s, uint64_t len,
                     const char *what, gguf_error *err)
{
    char q[96];
    if (!s && len)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "key '%s': %s is NULL",
                       KEYQ(q, key, klen), what);
    if (len > count_max(w) || len > SIZE_MAX)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                       "key '%s': %s of %llu bytes is too long for GGUF version %u",
                       KEYQ(q, key, klen), what, (unsigned long long)len, w->version);
    return GGUF_OK;
}

int gguf_writer_add_str(gguf_writer *w, const char *key, const char *s, size_t len,
                        gguf_error *err)
{
    int rc = check_building(w, err);
    if (rc) return rc;
    size_t klen = key ? strlen(key) : 0;
    if ((rc = check_key(w, key, klen, err))) return rc;
    if ((rc = check_str(w, key, klen, s, len, "string", err))) return rc;
    if (is_alignment_key(key, klen)) return apply_alignment(w, GGUF_VT_STRING, 0, err);
    size_t mark = begin_kv(w, key, klen, GGUF_VT_STRING);
    put_count(w, len);
    put(w, s, len);
    return end_kv(w, mark, key, klen, GGUF_OK, err);
}

/* Checks an array header: element type and count.  GGUF_OK or GGUF_E_INVALID. */
static int check_array(gguf_writer *w, const char *key, size_t klen, uint32_t elem_type,
                       uint64_t n, unsigned depth, gguf_error *err)
{
    char q[96];
    if (elem_type >= GGUF_VT_COUNT)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                       "key '%s': array element type %u is out of range", KEYQ(q, key, klen),
                       elem_type);
    if (depth > GG_MAX_ARRAY_DEPTH)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                       "key '%s': arrays nested more than %u deep", KEYQ(q, key, klen),
                       GG_MAX_ARRAY_DEPTH);
    if (n > count_max(w))
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                       "key '%s': array of %llu elements is too long for GGUF version %u",
                       KEYQ(q, key, klen), (unsigned long long)n, w->version);
    return GGUF_OK;
}

/* Checks n BOOL bytes to be 0 or 1. */
static int check_bools(const char *key, size_t klen, const unsigned char *p, uint64_t n,
                       gguf_error *err)
{
    char q[96];
    for (uint64_t i = 0; i < n; i++)
        if (p[i] > 1)
            return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                           "key '%s': BOOL element %llu is %u, not 0 or 1", KEYQ(q, key, klen),
                           (unsigned long long)i, p[i]);
    return GGUF_OK;
}

int gguf_writer_add_array(gguf_writer *w, const char *key, uint32_t elem_type, const void *data,
                          uint64_t n, gguf_error *err)
{
    char q[96];
    int rc = check_building(w, err);
    if (rc) return rc;
    size_t klen = key ? strlen(key) : 0;
    if ((rc = check_key(w, key, klen, err))) return rc;
    if ((rc = check_array(w, key, klen, elem_type, n, 1, err))) return rc;
    size_t size = gguf_vtype_size(elem_type);
    if (size == 0)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                       "key '%s': %s elements need gguf_writer_add_%s", KEYQ(q, key, klen),
                       gguf_vtype_name(elem_type),
                       elem_type == GGUF_VT_STRING ? "str_array" : "value");
    if (n && !data)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "key '%s': array data is NULL",
                       KEYQ(q, key, klen));
    if (n > SIZE_MAX / size)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "key '%s': array too large",
                       KEYQ(q, key, klen));
    if (elem_type == GGUF_VT_BOOL && (rc = check_bools(key, klen, data, n, err))) return rc;
    if (is_alignment_key(key, klen)) return apply_alignment(w, GGUF_VT_ARRAY, 0, err);
    size_t mark = begin_kv(w, key, klen, GGUF_VT_ARRAY);
    put_u32(w, elem_type);
    put_count(w, n);
    put_host_scalars(w, size, data, n);
    return end_kv(w, mark, key, klen, GGUF_OK, err);
}

int gguf_writer_add_str_array(gguf_writer *w, const char *key, const gguf_str *s, uint64_t n,
                              gguf_error *err)
{
    char q[96];
    int rc = check_building(w, err);
    if (rc) return rc;
    size_t klen = key ? strlen(key) : 0;
    if ((rc = check_key(w, key, klen, err))) return rc;
    if ((rc = check_array(w, key, klen, GGUF_VT_STRING, n, 1, err))) return rc;
    if (n && !s)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "key '%s': array data is NULL",
                       KEYQ(q, key, klen));
    for (uint64_t i = 0; i < n; i++)
        if ((rc = check_str(w, key, klen, s[i].ptr, s[i].len, "array string", err))) return rc;
    if (is_alignment_key(key, klen)) return apply_alignment(w, GGUF_VT_ARRAY, 0, err);
    size_t mark = begin_kv(w, key, klen, GGUF_VT_ARRAY);
    put_u32(w, GGUF_VT_STRING);
    put_count(w, n);
    for (uint64_t i = 0; i < n && !w->kv_oom; i++) {
        put_count(w, s[i].len);
        put(w, s[i].ptr, s[i].len);
    }
    return end_kv(w, mark, key, klen, GGUF_OK, err);
}

/* Bit pattern of a fixed-size scalar value.  Reads the union through its
 * unsigned members so that floats keep their bits (NaN payloads included). */
static uint64_t value_bits(const gguf_value *v)
{
    switch (gguf_vtype_size(v->type)) {
    case 1: return v->type == GGUF_VT_BOOL ? (uint64_t)(unsigned)v->v.b : v->v.u8;
    case 2: return v->v.u16;
    case 4: return v->v.u32;
    default: return v->v.u64;
    }
}

/* Serializes value v (its type id already written by the caller) at array
 * nesting depth `depth` (1 for a top-level array).  Returns GGUF_OK or
 * GGUF_E_INVALID; lack of memory shows in kv_oom. */
static int put_value(gguf_writer *w, const char *key, size_t klen, const gguf_value *v,
                     unsigned depth, gguf_error *err)
{
    char q[96];
    int rc;
    if (v->type >= GGUF_VT_COUNT)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                       "key '%s': value type %u is out of range", KEYQ(q, key, klen), v->type);
    if (v->type == GGUF_VT_STRING) {
        if ((rc = check_str(w, key, klen, v->v.str.ptr, v->v.str.len, "string", err))) return rc;
        put_count(w, v->v.str.len);
        put(w, v->v.str.ptr, v->v.str.len);
        return GGUF_OK;
    }
    if (v->type != GGUF_VT_ARRAY) {
        uint64_t bits = value_bits(v);
        if (v->type == GGUF_VT_BOOL && bits > 1)
            return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                           "key '%s': BOOL value must be 0 or 1", KEYQ(q, key, klen));
        put_scalar(w, gguf_vtype_size(v->type), bits);
        return GGUF_OK;
    }

    if ((rc = check_array(w, key, klen, v->elem_type, v->count, depth, err))) return rc;
    put_u32(w, v->elem_type);
    put_count(w, v->count);
    size_t size = gguf_vtype_size(v->elem_type);
    const unsigned char *raw = size ? gguf_array_data(v) : NULL;
    if (raw) {
        /* Fast path: the elements in host byte order, in one block. */
        if (v->count > SIZE_MAX / size)
            return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                           "key '%s': array too large", KEYQ(q, key, klen));
        if (v->elem_type == GGUF_VT_BOOL && (rc = check_bools(key, klen, raw, v->count, err)))
            return rc;
        put_host_scalars(w, size, raw, v->count);
        return GGUF_OK;
    }
    for (uint64_t i = 0; i < v->count && !w->kv_oom; i++) {
        gguf_value e;
        if (gguf_array_get(v, i, &e) != GGUF_OK)
            return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                           "key '%s': array element %llu cannot be read", KEYQ(q, key, klen),
                           (unsigned long long)i);
        if (e.type != v->elem_type)
            return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL,
                           "key '%s': array element %llu has type %u, the array says %u",
                           KEYQ(q, key, klen), (unsigned long long)i, e.type, v->elem_type);
        if ((rc = put_value(w, key, klen, &e, depth + 1, err))) return rc;
    }
    return GGUF_OK;
}

/* Adds the pair (key, len) = v; shared by add_value and copy_kv. */
static int add_any(gguf_writer *w, const char *key, size_t len, const gguf_value *v,
                   gguf_error *err)
{
    int rc = check_building(w, err);
    if (rc) return rc;
    if ((rc = check_key(w, key, len, err))) return rc;
    if (!v) return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "value is NULL");
    uint32_t old_align = w->alignment;
    if (is_alignment_key(key, len) &&
        (rc = apply_alignment(w, v->type, v->type == GGUF_VT_UINT32 ? v->v.u32 : 0, err)))
        return rc;
    size_t mark = begin_kv(w, key, len, v->type);
    rc = put_value(w, key, len, v, 1, err);
    rc = end_kv(w, mark, key, len, rc, err);
    if (rc && w->alignment != old_align) relayout(w, old_align, 1);
    return rc;
}

int gguf_writer_add_value(gguf_writer *w, const char *key, const gguf_value *v, gguf_error *err)
{
    return add_any(w, key, key ? strlen(key) : 0, v, err);
}

int gguf_writer_copy_kv(gguf_writer *w, const gguf_kv *kv, gguf_error *err)
{
    if (!kv) {
        int rc = check_building(w, err);
        return rc ? rc : gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "KV pair is NULL");
    }
    if (!kv->key.ptr && kv->key.len)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "KV pair key is NULL");
    return add_any(w, kv->key.ptr ? kv->key.ptr : "", kv->key.len, &kv->value, err);
}

/* ------------------------------------------------------------------------ */
/* Tensor infos                                                              */

int gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                           const uint64_t *ne, gguf_error *err)
{
    char q[96];
    int rc = check_building(w, err);
    if (rc) return rc;
    if (!name) return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "tensor name is NULL");
    size_t len = strlen(name);
    uint64_t idx = w->n_tensors;
#define TFAIL(...)                                                                          \
    gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "tensor %llu '%s': " __VA_ARGS__)
#define TARGS (unsigned long long)idx, gg_quote(q, sizeof q, name, len)
    if (len == 0) return TFAIL("empty name", TARGS);
    if (len > GG_MAX_TENSOR_NAME)
        return TFAIL("name of %zu bytes, at most %u allowed", TARGS, len, GG_MAX_TENSOR_NAME);
    if (gg_names_find(&w->tensor_set, name, len, NULL)) return TFAIL("duplicate name", TARGS);
    const gguf_type_info *ti = gguf_type_get(type);
    if (!ti) return TFAIL("unknown type id %u", TARGS, type);
    if (n_dims < 1 || n_dims > 4) return TFAIL("n_dims %u is not 1..4", TARGS, n_dims);
    if (!ne) return TFAIL("dims are NULL", TARGS);
    if (idx >= count_max(w) || idx >= SIZE_MAX / sizeof *w->tensors)
        return TFAIL("too many tensors for GGUF version %u", TARGS, w->version);

    uint64_t dims[4] = {1, 1, 1, 1}, nel = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        dims[d] = ne[d];
        if (ne[d] > (uint64_t)INT64_MAX || (w->version == 1 && ne[d] > UINT32_MAX))
            return TFAIL("dim %u = %llu is too large", TARGS, d, (unsigned long long)ne[d]);
        if (!gg_mul(nel, ne[d], &nel) || nel > (uint64_t)INT64_MAX)
            return TFAIL("element count overflows", TARGS);
    }
    if (dims[0] % ti->block_size)
        return TFAIL("ne[0] = %llu is not a multiple of the %s block size %u", TARGS,
                     (unsigned long long)dims[0], ti->name, ti->block_size);
    uint64_t size, off, end;
    if (!gg_mul(dims[0] / ti->block_size, ti->type_size, &size) ||
        !gg_mul(size, dims[1], &size) || !gg_mul(size, dims[2], &size) ||
        !gg_mul(size, dims[3], &size))
        return TFAIL("byte size overflows", TARGS);
    if (!gg_align_up(w->data_end, w->alignment, &off) || !gg_add(off, size, &end) ||
        end > MAX_DATA_END)
        return TFAIL("tensor data would exceed 2^62 bytes", TARGS);
#undef TFAIL
#undef TARGS

    if (w->n_tensors == w->tensors_cap) {
        size_t cap = w->tensors_cap ? w->tensors_cap * 2 : 64;
        struct wtensor *nt =
            cap <= SIZE_MAX / sizeof *nt ? realloc(w->tensors, cap * sizeof *nt) : NULL;
        if (!nt) goto oom;
        w->tensors = nt;
        w->tensors_cap = cap;
    }
    struct wtensor *t = &w->tensors[idx];
    t->name = malloc(len + 1);
    if (!t->name) goto oom;
    memcpy(t->name, name, len + 1);
    if (gg_names_insert(&w->tensor_set, t->name, len, idx, NULL) != 1) {
        free(t->name);
        goto oom;
    }
    t->name_len = len;
    t->type = type;
    t->n_dims = n_dims;
    memcpy(t->ne, dims, sizeof dims);
    t->size = size;
    t->offset = off;
    w->n_tensors++;
    w->data_end = end;
    w->ti_bytes += count_bytes(w) + len + 4 + (uint64_t)n_dims * count_bytes(w) + 4 + 8;
    return GGUF_OK;
oom:
    return gg_fail(err, GGUF_E_NOMEM, 0, UINT64_MAX, NULL, "out of memory adding a tensor");
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */

/* write(2) of all n bytes, retrying on EINTR and short writes.  0, or -1
 * with errno set. */
static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (k == 0) {
            errno = EIO;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Abandons the output: closes a descriptor the writer opened and removes the
 * temporary file.  The target is left as it was. */
static void abandon(gguf_writer *w)
{
    if (w->own_fd && w->fd >= 0) close(w->fd);
    w->fd = -1;
    w->own_fd = 0;
    if (w->tmp_named) unlink(w->tmp);
    w->tmp_named = 0;
    w->state = W_FAILED;
}

/* Fails with GGUF_E_IO for errno e after abandoning the output; what says
 * which operation failed. */
static int io_fail(gguf_writer *w, int e, const char *what, gguf_error *err)
{
    char note[64 + 4096];
    note[0] = '\0';
    if (w->tmp_named) snprintf(note, sizeof note, " (temporary file '%s')", w->tmp);
    uint64_t at = w->flushed;
    int rc = gg_fail(err, GGUF_E_IO, e, at, w->name, "%s at byte %llu%s: %s", what,
                     (unsigned long long)at, note, strerror(e));
    abandon(w);
    return rc;
}

static int flush_buf(gguf_writer *w)
{
    if (w->buf_len && write_all(w->fd, w->buf, w->buf_len) < 0) return -1;
    w->flushed += w->buf_len;
    w->buf_len = 0;
    return 0;
}

/* Appends n bytes to the output (p NULL: n zero bytes).  0, or -1 with errno. */
static int out_put(gguf_writer *w, const void *p, size_t n)
{
    const unsigned char *s = p;
    while (n > 0) {
        if (w->buf_len == 0 && s && n >= OUT_BUF_SIZE) {
            /* Large chunks skip the copy. */
            size_t k = n - n % OUT_BUF_SIZE;
            if (write_all(w->fd, s, k) < 0) return -1;
            w->flushed += k;
            s += k;
            n -= k;
            continue;
        }
        size_t k = OUT_BUF_SIZE - w->buf_len;
        if (k > n) k = n;
        if (s) {
            memcpy(w->buf + w->buf_len, s, k);
            s += k;
        } else {
            memset(w->buf + w->buf_len, 0, k);
        }
        w->buf_len += k;
        n -= k;
        if (w->buf_len == OUT_BUF_SIZE && flush_buf(w) < 0) return -1;
    }
    return 0;
}

/* Writes the header and the padding up to the data section. */
/* Where the header goes: the output (out_put), or memory. */
typedef int (*header_sink)(void *ctx, const void *p, size_t n);

static int sink_output(void *ctx, const void *p, size_t n)
{
    return out_put(ctx, p, n);
}

struct mem_sink {
    unsigned char *buf;
    size_t len;
};

static int sink_memory(void *ctx, const void *p, size_t n)
{
    struct mem_sink *m = ctx;
    if (p) memcpy(m->buf + m->len, p, n);
    else memset(m->buf + m->len, 0, n);
    m->len += n;
    return 0;
}

/* The header and the padding up to the data section, to `emit`. */
static int emit_header(gguf_writer *w, header_sink emit, void *ctx)
{
    unsigned char b[4 + 4 * 8 + 4 + 8]; /* n_dims, 4 dims, type, offset */
    unsigned cb = count_bytes(w);
    memcpy(b, "GGUF", 4);
    gg_store32(b + 4, w->version, w->order);
    if (cb == 4) {
        gg_store32(b + 8, (uint32_t)w->n_tensors, w->order);
        gg_store32(b + 12, (uint32_t)w->n_kv, w->order);
    } else {
        gg_store64(b + 8, w->n_tensors, w->order);
        gg_store64(b + 16, w->n_kv, w->order);
    }
    if (emit(ctx, b, 8 + 2 * cb) < 0 || emit(ctx, w->kv, w->kv_len) < 0) return -1;
    for (uint64_t i = 0; i < w->n_tensors; i++) {
        const struct wtensor *t = &w->tensors[i];
        size_t o = 0;
        if (cb == 4) gg_store32(b, (uint32_t)t->name_len, w->order);
        else gg_store64(b, t->name_len, w->order);
        if (emit(ctx, b, cb) < 0 || emit(ctx, t->name, t->name_len) < 0) return -1;
        gg_store32(b, t->n_dims, w->order);
        o = 4;
        for (uint32_t d = 0; d < t->n_dims; d++, o += cb) {
            if (cb == 4) gg_store32(b + o, (uint32_t)t->ne[d], w->order);
            else gg_store64(b + o, t->ne[d], w->order);
        }
        gg_store32(b + o, t->type, w->order);
        gg_store64(b + o + 4, t->offset, w->order);
        if (emit(ctx, b, o + 12) < 0) return -1;
    }
    return emit(ctx, NULL, gguf_writer_data_offset(w) - header_size(w));
}

static int write_header(gguf_writer *w)
{
    return emit_header(w, sink_output, w);
}

uint64_t gguf_writer_header_size(const gguf_writer *w)
{
    return w ? header_size(w) : 0;
}

int gguf_writer_header(gguf_writer *w, void **out, size_t *len, gguf_error *err)
{
    if (!w || !out || !len) return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "invalid argument");
    *out = NULL;
    *len = 0;
    if (w->kv_oom) return gg_fail(err, GGUF_E_NOMEM, 0, UINT64_MAX, NULL, "out of memory");
    const uint64_t n = gguf_writer_data_offset(w);
    if (n == 0 || n > SIZE_MAX) return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "header too large");
    struct mem_sink m = {malloc((size_t)n), 0};
    if (!m.buf) return gg_fail(err, GGUF_E_NOMEM, 0, UINT64_MAX, NULL, "out of memory");
    emit_header(w, sink_memory, &m);
    *out = m.buf;
    *len = m.len;
    return GGUF_OK;
}

/* Common part of the opens: fd is ready; writes the header. */
static int start_output(gguf_writer *w, gguf_error *err)
{
    w->buf = malloc(OUT_BUF_SIZE);
    if (!w->buf) {
        abandon(w);
        return gg_fail(err, GGUF_E_NOMEM, 0, UINT64_MAX, w->name, "out of memory");
    }
    w->buf_len = 0;
    w->flushed = 0;
    w->cur = 0;
    w->cur_got = 0;
    w->data_pos = 0;
    w->data_given = 0;
    w->data_total = 0;
    for (uint64_t i = 0; i < w->n_tensors; i++) w->data_total += w->tensors[i].size;
    w->state = W_OPEN;
    if (write_header(w) < 0) return io_fail(w, errno, "write failed", err);
    return GGUF_OK;
}

/* The current umask, read without changing it where /proc allows (umask(2)
 * alone cannot read it without a window in which another thread would
 * create files with a wrong mode). */
static mode_t current_umask(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (f) {
        char line[256];
        unsigned m;
        while (fgets(line, sizeof line, f)) {
            if (sscanf(line, "Umask: %o", &m) == 1) {
                fclose(f);
                return (mode_t)m;
            }
        }
        fclose(f);
    }
    mode_t m = umask(022);
    umask(m);
    return m;
}

/* The name through which the unnamed file on descriptor fd can be linked. */
static void proc_fd_path(char *buf, size_t n, int fd)
{
    snprintf(buf, n, "/proc/self/fd/%d", fd);
}

/* Opens an unnamed file (O_TMPFILE) in directory dir for the output.
 * Returns its descriptor, or -1 where the system refuses one (a kernel or
 * file system without O_TMPFILE: EOPNOTSUPP, EISDIR, EINVAL), where
 * /proc/self/fd cannot link it at the end, or on any other error, which
 * mkostemp() in the same directory then reports in its own words. */
static int open_unnamed(const char *dir)
{
#ifdef O_TMPFILE
    int fd;
    do fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) return -1;
    char proc[40];
    struct stat a, b;
    proc_fd_path(proc, sizeof proc, fd);
    if (stat(proc, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        return fd;
    close(fd);
#else
    (void)dir;
#endif
    return -1;
}

/* Replaces the XXXXXX that ends name with letters and digits, as mkstemp
 * does, for a name that linkat() then creates exclusively. */
static void fill_template(char *name)
{
    static const char chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static uint64_t counter;    /* writers may finish on several threads */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t v = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15u ^ (uint64_t)ts.tv_sec ^
                 (uint64_t)getpid() << 40 ^
                 __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) * 0xbf58476d1ce4e5b9u;
    char *x = name + strlen(name) - 6;
    for (int i = 0; i < 6; i++, v /= 62) x[i] = chars[v % 62];
}

/* Gives the whole, synced unnamed output its name.  linkat() cannot
 * replace a file: when the target exists the file is linked to a hidden
 * name first and that is renamed over the target, so that a name appears
 * only for the whole file.  Every signal the thread can hold back is held
 * back between the two, so that a caller's handler cannot leave the hidden
 * name behind.  Returns 0, or -1 with errno set and *what naming the step
 * that failed; nothing new is left in the directory then. */
static int link_into_place(gguf_writer *w, const char **what)
{
    char proc[40];
    proc_fd_path(proc, sizeof proc, w->fd);
    *what = "cannot link the output into place";
    if (linkat(AT_FDCWD, proc, AT_FDCWD, w->target, AT_SYMLINK_FOLLOW) == 0) return 0;
    if (errno != EEXIST) return -1;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = -1, tries = 0;
    do fill_template(w->tmp);
    while ((rc = linkat(AT_FDCWD, proc, AT_FDCWD, w->tmp, AT_SYMLINK_FOLLOW)) < 0 &&
           errno == EEXIST && ++tries < 100);
    if (rc == 0 && rename(w->tmp, w->target) < 0) {
        int e = errno;
        unlink(w->tmp);
        errno = e;
        *what = "cannot rename over the target";
        rc = -1;
    }
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return rc;
}

int gguf_writer_open(gguf_writer *w, const char *path, gguf_error *err)
{
    int rc = check_building(w, err);
    if (rc) return rc;
    if (!path || !*path)
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "output path is empty");
    if (strcmp(path, "-") == 0) return gguf_writer_open_fd(w, 1, "(stdout)", err);

    w->name = strdup(path);
    if (!w->name) return gg_fail(err, GGUF_E_NOMEM, 0, UINT64_MAX, path, "out of memory");

    /* An existing non-regular file (a device, a FIFO) is written in place:
     * there is nothing to rename over it. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        int fd;
        do fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        while (fd < 0 && errno == EINTR);
        if (fd < 0) {
            int e = errno;
            rc = gg_fail(err, GGUF_E_IO, e, UINT64_MAX, path, "cannot open for writing: %s",
                         strerror(e));
            free(w->name);
            w->name = NULL;
            return rc;
        }
        w->fd = fd;
        w->own_fd = 1;
        return start_output(w, err);
    }

    /* The output's directory, and the template ".BASE.XXXXXX" of a
     * temporary name next to the target. */
    const char *slash = strrchr(path, '/');
    size_t dlen = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = path + dlen;
    size_t blen = strlen(base);
    if (blen == 0) {
        free(w->name);
        w->name = NULL;
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, path, "output path names a directory");
    }
    if (blen > 200) blen = 200; /* leave room for the decoration under NAME_MAX */
    w->target = strdup(path);
    w->tmp = malloc(dlen + blen + 10);
    char *dir = dlen ? strndup(path, dlen) : strdup(".");
    if (!w->target || !w->tmp || !dir) {
        free(dir);
        free(w->target);
        free(w->tmp);
        free(w->name);
        w->target = w->tmp = w->name = NULL;
        return gg_fail(err, GGUF_E_NOMEM, 0, UINT64_MAX, path, "out of memory");
    }
    memcpy(w->tmp, path, dlen);
    w->tmp[dlen] = '.';
    memcpy(w->tmp + dlen + 1, base, blen);
    memcpy(w->tmp + dlen + 1 + blen, ".XXXXXX", 8);
    int fd = open_unnamed(dir);
    if (fd >= 0) {
        w->unnamed = 1;
    } else {
        fd = mkostemp(w->tmp, O_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            rc = gg_fail(err, GGUF_E_IO, e, UINT64_MAX, path,
                         "cannot create a temporary file in '%s': %s", dir, strerror(e));
            free(dir);
            free(w->target);
            free(w->tmp);
            free(w->name);
            w->target = w->tmp = w->name = NULL;
            return rc;
        }
        w->tmp_named = 1;
    }
    free(dir);
    w->fd = fd;
    w->own_fd = 1;
    /* mkstemp creates mode 0600 and O_TMPFILE follows a default ACL where
     * the directory has one; either way give the file the mode a plain
     * creat() would have (an existing target's mode is not kept). */
    if (fchmod(fd, 0666 & ~current_umask()) < 0) {
        int e = errno;
        w->state = W_OPEN;
        return io_fail(w, e, "cannot set the mode", err);
    }
    return start_output(w, err);
}

int gguf_writer_open_fd(gguf_writer *w, int fd, const char *display_name, gguf_error *err)
{
    int rc = check_building(w, err);
    if (rc) return rc;
    if (fd < 0) return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "bad descriptor %d", fd);
    if (!w->name) {
        char tmp[32];
        if (!display_name) {
            snprintf(tmp, sizeof tmp, "(fd %d)", fd);
            display_name = tmp;
        }
        w->name = strdup(display_name);
        if (!w->name) return gg_fail(err, GGUF_E_NOMEM, 0, UINT64_MAX, display_name, "out of memory");
    }
    w->fd = fd;
    w->own_fd = 0;
    return start_output(w, err);
}

/* Fails unless the output is open for data. */
static int check_open(gguf_writer *w, gguf_error *err)
{
    if (!w) return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "writer is NULL");
    switch (w->state) {
    case W_OPEN: return GGUF_OK;
    case W_BUILDING:
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "the output is not open");
    case W_DONE:
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, w->name, "the output is finished");
    default:
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, w->name,
                       "the output was abandoned after an earlier error");
    }
}

/* n bytes at offset `at` of fd to the output: copy_file_range(2) while the
 * kernel takes it (both regular files: it copies in the kernel, or the
 * file system shares the blocks), else pread(2) and out_put().  0, -1 with
 * errno, or -2 when fd ends before the bytes. */
static int copy_in(gguf_writer *w, int fd, uint64_t at, uint64_t n)
{
    if (flush_buf(w) < 0) return -1;
    off_t in = (off_t)at;
    int kernel = 1;
    while (n > 0 && kernel) {
        size_t k = n > ((size_t)1 << 30) ? (size_t)1 << 30 : (size_t)n;
        ssize_t r = copy_file_range(fd, &in, w->fd, NULL, k, 0);
        if (r > 0) {
            w->flushed += (uint64_t)r;
            n -= (uint64_t)r;
        } else if (r == 0) {
            return -2;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP ||
                   errno == EBADF || errno == EPERM || errno == ETXTBSY) {
            kernel = 0;
        } else {
            return -1;
        }
    }
    unsigned char chunk[65536];
    while (n > 0) {
        size_t k = n > sizeof chunk ? sizeof chunk : (size_t)n;
        ssize_t r = pread(fd, chunk, k, in);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) return -2;
        if (out_put(w, chunk, (size_t)r) < 0) return -1;
        in += r;
        n -= (uint64_t)r;
    }
    return 0;
}

/* n bytes of tensor data, from memory at data or (data NULL) from fd at
 * offset `at`, with the padding between tensors: gguf_writer_write() and
 * gguf_writer_write_from(). */
static int feed(gguf_writer *w, const unsigned char *data, int fd, uint64_t at, uint64_t n,
                gguf_error *err)
{
    int rc = check_open(w, err);
    if (rc) return rc;
    if (n == 0) return GGUF_OK;
    if (n > w->data_total - w->data_given) {
        rc = gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, w->name,
                     "%llu bytes of tensor data given, the tensors hold %llu",
                     (unsigned long long)(w->data_given + n),
                     (unsigned long long)w->data_total);
        abandon(w);
        return rc;
    }
    while (n > 0) {
        while (w->cur_got == w->tensors[w->cur].size) {
            w->cur++;
            w->cur_got = 0;
        }
        const struct wtensor *t = &w->tensors[w->cur];
        if (w->data_pos < t->offset) {
            if (out_put(w, NULL, t->offset - w->data_pos) < 0)
                return io_fail(w, errno, "write failed", err);
            w->data_pos = t->offset;
        }
        uint64_t k = t->size - w->cur_got;
        if (k > n) k = n;
        if (data) {
            if (out_put(w, data, (size_t)k) < 0) return io_fail(w, errno, "write failed", err);
            data += k;
        } else {
            int r = copy_in(w, fd, at, k);
            if (r == -2) {
                rc = gg_fail(err, GGUF_E_FORMAT, 0, at, w->name,
                             "the input ends before byte %llu of the data to copy",
                             (unsigned long long)(at + k));
                abandon(w);
                return rc;
            }
            if (r < 0) return io_fail(w, errno, "copy failed", err);
            at += k;
        }
        n -= k;
        w->cur_got += k;
        w->data_pos += k;
        w->data_given += k;
    }
    return GGUF_OK;
}

int gguf_writer_write(gguf_writer *w, const void *data, size_t n, gguf_error *err)
{
    if (!data && n && !check_open(w, NULL))
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, w->name, "data is NULL");
    return feed(w, data, -1, 0, n, err);
}

int gguf_writer_write_from(gguf_writer *w, int fd, uint64_t offset, uint64_t n, gguf_error *err)
{
    if (fd < 0 && n && !check_open(w, NULL))
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, w->name, "invalid descriptor");
    return feed(w, NULL, fd, offset, n, err);
}

/* Name of the directory of path, for fsync; caller frees. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

int gguf_writer_finish(gguf_writer *w, gguf_error *err)
{
    int rc = check_open(w, err);
    if (rc) return rc;
    if (w->data_given < w->data_total) {
        /* Name the first tensor short of bytes. */
        uint64_t i = w->cur, got = w->cur_got;
        while (i < w->n_tensors && got == w->tensors[i].size) {
            i++;
            got = 0;
        }
        char q[96];
        const struct wtensor *t = &w->tensors[i];
        rc = gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, w->name,
                     "tensor %llu '%s': got %llu of %llu bytes (%llu of %llu tensor bytes in all); "
                     "output removed",
                     (unsigned long long)i, gg_quote(q, sizeof q, t->name, t->name_len),
                     (unsigned long long)got, (unsigned long long)t->size,
                     (unsigned long long)w->data_given, (unsigned long long)w->data_total);
        abandon(w);
        return rc;
    }
    uint64_t end = w->data_end;
    gg_align_up(w->data_end, w->alignment, &end); /* cannot overflow: data_end <= 2^62 */
    if (out_put(w, NULL, end - w->data_pos) < 0 || flush_buf(w) < 0)
        return io_fail(w, errno, "write failed", err);
    w->data_pos = end;

    if (w->target) {
        if (fsync(w->fd) < 0) return io_fail(w, errno, "fsync failed", err);
        const char *what;
        if (w->unnamed && link_into_place(w, &what) < 0) return io_fail(w, errno, what, err);
        int fd = w->fd;
        w->fd = -1;
        w->own_fd = 0;
        /* A linked file is synced and in place: a late error from close
         * cannot take that back.  A named temporary is still removed. */
        if (close(fd) < 0 && errno != EINTR && !w->unnamed)
            return io_fail(w, errno, "close failed", err);
        if (!w->unnamed && rename(w->tmp, w->target) < 0)
            return io_fail(w, errno, "cannot rename over the target", err);
        w->tmp_named = 0;
        w->state = W_DONE;
        /* Make the new name durable.  Some file systems cannot fsync a
         * directory (EINVAL); that is no failure of ours. */
        char *dir = dir_of(w->target);
        if (!dir) return gg_fail(err, GGUF_E_NOMEM, 0, UINT64_MAX, w->name, "out of memory");
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int e = 0;
        if (dfd < 0) e = errno;
        else if (fsync(dfd) < 0 && errno != EINVAL && errno != ENOTSUP) e = errno;
        if (dfd >= 0) close(dfd);
        if (e) {
            rc = gg_fail(err, GGUF_E_IO, e, UINT64_MAX, w->name,
                         "written, but syncing directory '%s' failed: %s", dir, strerror(e));
            free(dir);
            return rc;
        }
        free(dir);
        return GGUF_OK;
    }
    if (w->own_fd) {
        int fd = w->fd;
        w->fd = -1;
        w->own_fd = 0;
        if (close(fd) < 0 && errno != EINTR) return io_fail(w, errno, "close failed", err);
    }
    w->state = W_DONE;
    return GGUF_OK;
}

void gguf_writer_free(gguf_writer *w)
{
    if (!w) return;
    if (w->state == W_OPEN) abandon(w);
    for (uint64_t i = 0; i < w->n_kv; i++) free(w->keys[i]);
    free(w->keys);
    gg_names_free(&w->key_set);
    for (uint64_t i = 0; i < w->n_tensors; i++) free(w->tensors[i].name);
    free(w->tensors);
    gg_names_free(&w->tensor_set);
    free(w->kv);
    free(w->buf);
    free(w->name);
    free(w->target);
    free(w->tmp);
    free(w);
}
