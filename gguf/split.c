/* split.c -- split sets (PREFIX-00001-of-0000N.gguf ...) opened as one
 * model: the shards found by name, their split.* keys checked against
 * each other and against their names, one tensor directory over all. */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gguf/internal.h"

#define KEY_NO "split.no"
#define KEY_COUNT "split.count"
#define KEY_TENSORS "split.tensors.count"

/* "-00001-of-00003.gguf": the tail of a shard's name. */
#define TAIL_LEN 20

struct gguf_split {
    uint32_t n;          /* shards */
    gguf_file **shard;   /* [n], by split.no */
    char **path;         /* [n] */
    uint64_t n_tensors;  /* over all shards */
    uint64_t *first;     /* [n + 1]: index of shard i's first tensor in the set */
    /* names of all tensors, hashed: slot -> global index + 1 (0 empty) */
    uint64_t *slot;
    uint64_t n_slots;    /* a power of two */
};

int gguf_split_name(char *buf, size_t size, const char *prefix, uint32_t no, uint32_t count)
{
    if (!prefix || count == 0 || count > GGUF_SPLIT_MAX || no >= count) return -1;
    return snprintf(buf, size, "%s-%05" PRIu32 "-of-%05" PRIu32 ".gguf", prefix, no + 1, count);
}

/* Five decimal digits at p, as a number. */
static int five_digits(const char *p, uint32_t *v)
{
    uint32_t x = 0;
    for (int i = 0; i < 5; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        x = x * 10 + (uint32_t)(p[i] - '0');
    }
    *v = x;
    return 1;
}

size_t gguf_split_prefix(const char *path, uint32_t *no, uint32_t *count)
{
    if (!path) return 0;
    const size_t len = strlen(path);
    if (len <= TAIL_LEN) return 0;
    const char *t = path + len - TAIL_LEN;
    uint32_t a, b;
    if (t[0] != '-' || !five_digits(t + 1, &a) || memcmp(t + 6, "-of-", 4) != 0 ||
        !five_digits(t + 10, &b) || strcmp(t + 15, ".gguf") != 0)
        return 0;
    if (b == 0 || b > GGUF_SPLIT_MAX || a == 0 || a > b) return 0;
    if (no) *no = a - 1;
    if (count) *count = b;
    return len - TAIL_LEN;
}

/* The split.* keys of f: count 1 and no 0 when it has none.  *tensors is
 * split.tensors.count, or UINT64_MAX when absent. */
static int split_keys(const gguf_file *f, uint32_t *no, uint32_t *count, uint64_t *tensors,
                      gguf_error *err)
{
    static const char *const keys[3] = {KEY_NO, KEY_COUNT, KEY_TENSORS};
    uint64_t v[3] = {0, 1, UINT64_MAX};
    for (int i = 0; i < 3; i++) {
        const gguf_kv *kv = gguf_kv_find(f, keys[i]);
        if (!kv) continue;
        const uint32_t t = kv->value.type;
        const int is_int = t == GGUF_VT_UINT8 || t == GGUF_VT_INT8 || t == GGUF_VT_UINT16 ||
                           t == GGUF_VT_INT16 || t == GGUF_VT_UINT32 || t == GGUF_VT_INT32 ||
                           t == GGUF_VT_UINT64 || t == GGUF_VT_INT64;
        if (!is_int)
            return gg_fail(err, GGUF_E_FORMAT, 0, kv->offset, gguf_name(f),
                           "key %s (at byte %" PRIu64 "): %s, not an integer", keys[i], kv->offset,
                           gguf_vtype_name(t));
        if (gguf_kv_uint(f, keys[i], &v[i], NULL) != GGUF_OK)
            return gg_fail(err, GGUF_E_FORMAT, 0, kv->offset, gguf_name(f),
                           "key %s (at byte %" PRIu64 "): negative", keys[i], kv->offset);
    }
    const gguf_kv *kc = gguf_kv_find(f, KEY_COUNT), *kn = gguf_kv_find(f, KEY_NO);
    if (kn && !kc)
        return gg_fail(err, GGUF_E_FORMAT, 0, kn->offset, gguf_name(f),
                       "key %s (at byte %" PRIu64 ") without %s", KEY_NO, kn->offset, KEY_COUNT);
    if (kc && (v[1] == 0 || v[1] > GGUF_SPLIT_MAX))
        return gg_fail(err, GGUF_E_FORMAT, 0, kc->offset, gguf_name(f),
                       "key %s (at byte %" PRIu64 "): %" PRIu64 ", not 1 to %u", KEY_COUNT, kc->offset,
                       v[1], GGUF_SPLIT_MAX);
    if (kc && v[1] > 1 && !kn)
        return gg_fail(err, GGUF_E_FORMAT, 0, kc->offset, gguf_name(f),
                       "key %s (at byte %" PRIu64 "): %" PRIu64 " shards, but no %s", KEY_COUNT,
                       kc->offset, v[1], KEY_NO);
    if (kn && v[0] >= v[1])
        return gg_fail(err, GGUF_E_FORMAT, 0, kn->offset, gguf_name(f),
                       "key %s (at byte %" PRIu64 "): %" PRIu64 ", but %s is %" PRIu64
                       " (shards are numbered from 0)", KEY_NO, kn->offset, v[0], KEY_COUNT, v[1]);
    *no = (uint32_t)v[0];
    *count = (uint32_t)v[1];
    *tensors = v[2];
    return GGUF_OK;
}

/* FNV-1a of len bytes. */
static uint64_t hash_name(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

static const gguf_tensor *tensor_of(const gguf_split *s, uint64_t i, uint32_t *shard)
{
    /* the shard whose range holds i: binary search over first[] */
    uint32_t lo = 0, hi = s->n;
    while (hi - lo > 1) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (s->first[mid] <= i)
            lo = mid;
        else
            hi = mid;
    }
    if (shard) *shard = lo;
    return gguf_tensor_at(s->shard[lo], i - s->first[lo]);
}

/* Indexes every tensor name of the set; a name in two shards is an error. */
static int index_names(gguf_split *s, gguf_error *err)
{
    uint64_t n_slots = 16;
    while (n_slots < 2 * s->n_tensors) n_slots *= 2;
    s->slot = calloc(n_slots, sizeof *s->slot);
    if (!s->slot) return gg_fail(err, GGUF_E_NOMEM, 0, UINT64_MAX, NULL, "out of memory");
    s->n_slots = n_slots;
    for (uint64_t i = 0; i < s->n_tensors; i++) {
        uint32_t sh;
        const gguf_tensor *t = tensor_of(s, i, &sh);
        uint64_t j = hash_name(t->name.ptr, t->name.len) & (n_slots - 1);
        for (; s->slot[j]; j = (j + 1) & (n_slots - 1)) {
            uint32_t sh2;
            const gguf_tensor *u = tensor_of(s, s->slot[j] - 1, &sh2);
            if (u->name.len == t->name.len && memcmp(u->name.ptr, t->name.ptr, t->name.len) == 0) {
                char q[96];
                return gg_fail(err, GGUF_E_FORMAT, 0, t->info_offset, s->path[sh],
                               "tensor '%s' (at byte %" PRIu64 ") is also in shard %" PRIu32 " of %" PRIu32
                               " (%s)", gg_quote(q, sizeof q, t->name.ptr, t->name.len), t->info_offset,
                               sh2 + 1, s->n, s->path[sh2]);
            }
        }
        s->slot[j] = i + 1;
    }
    return GGUF_OK;
}

/* A file of the directory of prefix named as a shard of a set of `count`
 * beyond its last shard: its name, else NULL. */
static char *extra_shard(const char *prefix, uint32_t count)
{
    const char *slash = strrchr(prefix, '/');
    const size_t dlen = slash ? (size_t)(slash - prefix) + 1 : 0;
    char *dir = slash ? strndup(prefix, dlen) : strdup(".");
    if (!dir) return NULL;
    DIR *d = opendir(dir);
    free(dir);
    if (!d) return NULL;
    const char *base = prefix + dlen;
    const size_t blen = strlen(base);
    char *found = NULL;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        uint32_t no, c;
        const size_t plen = gguf_split_prefix(e->d_name, &no, &c);
        /* gguf_split_prefix() takes numbers 1 .. count only: look at the
         * raw digits for a number above the count */
        const size_t len = strlen(e->d_name);
        uint32_t a, b;
        if (plen == 0 && len > TAIL_LEN && len - TAIL_LEN == blen && memcmp(e->d_name, base, blen) == 0 &&
            five_digits(e->d_name + blen + 1, &a) && five_digits(e->d_name + blen + 10, &b) &&
            e->d_name[blen] == '-' && memcmp(e->d_name + blen + 6, "-of-", 4) == 0 &&
            strcmp(e->d_name + blen + 15, ".gguf") == 0 && b == count && (a == 0 || a > count)) {
            const size_t n = dlen + len + 1;
            found = malloc(n);
            if (found) snprintf(found, n, "%.*s%s", (int)dlen, prefix, e->d_name);
        }
    }
    closedir(d);
    return found;
}

void gguf_split_close(gguf_split *s)
{
    if (!s) return;
    for (uint32_t i = 0; i < s->n; i++) {
        gguf_close(s->shard[i]);
        free(s->path[i]);
    }
    free(s->shard);
    free(s->path);
    free(s->first);
    free(s->slot);
    free(s);
}

int gguf_split_open(gguf_split **out, const char *path, unsigned flags, gguf_error *err)
{
    if (!out || !path) return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "invalid argument");
    *out = NULL;
    gguf_file *f = NULL;
    int rc = gguf_open(&f, path, NULL, flags, err);
    if (rc) return rc;
    uint32_t no, count;
    uint64_t tensors;
    if ((rc = split_keys(f, &no, &count, &tensors, err))) {
        gguf_close(f);
        return rc;
    }
    char *prefix = NULL;
    if (count > 1) {
        uint32_t name_no, name_count;
        const size_t plen = gguf_split_prefix(path, &name_no, &name_count);
        char want[48];
        snprintf(want, sizeof want, "-%05" PRIu32 "-of-%05" PRIu32 ".gguf", no + 1, count);
        if (strcmp(path, "-") == 0 || gguf_input_mode(f) == GGUF_INPUT_GZIP || plen == 0 ||
            name_no != no || name_count != count) {
            rc = gg_fail(err, GGUF_E_FORMAT, 0, UINT64_MAX, gguf_name(f),
                         "shard %" PRIu32 " of a split set of %" PRIu32 " (split.no %" PRIu32
                         "), but its name does not end in '%s', so the other shards cannot be found",
                         no + 1, count, no, want);
            gguf_close(f);
            return rc;
        }
        prefix = strndup(path, plen);
        if (!prefix) {
            gguf_close(f);
            return gg_fail(err, GGUF_E_NOMEM, 0, UINT64_MAX, NULL, "out of memory");
        }
    }
    gguf_split *s = calloc(1, sizeof *s);
    if (!s || !(s->shard = calloc(count, sizeof *s->shard)) || !(s->path = calloc(count, sizeof *s->path)) ||
        !(s->first = calloc((size_t)count + 1, sizeof *s->first))) {
        gguf_split_close(s);
        gguf_close(f);
        free(prefix);
        return gg_fail(err, GGUF_E_NOMEM, 0, UINT64_MAX, NULL, "out of memory");
    }
    s->n = count;
    s->shard[no] = f;
    s->path[no] = strdup(path);
    rc = s->path[no] ? GGUF_OK : gg_fail(err, GGUF_E_NOMEM, 0, UINT64_MAX, NULL, "out of memory");
    for (uint32_t i = 0; i < count && !rc; i++) {
        if (i == no) continue;
        const int len = gguf_split_name(NULL, 0, prefix, i, count);
        if (len < 0 || !(s->path[i] = malloc((size_t)len + 1))) {
            rc = gg_fail(err, GGUF_E_NOMEM, 0, UINT64_MAX, NULL, "out of memory");
            break;
        }
        gguf_split_name(s->path[i], (size_t)len + 1, prefix, i, count);
        struct stat st;
        if (stat(s->path[i], &st) != 0 && errno == ENOENT) {
            rc = gg_fail(err, GGUF_E_IO, ENOENT, UINT64_MAX, s->path[i],
                         "shard %" PRIu32 " of %" PRIu32 " is missing (the set of %s)", i + 1, count, path);
            break;
        }
        if ((rc = gguf_open(&s->shard[i], s->path[i], NULL, flags, err))) break;
        uint32_t no_i, count_i;
        uint64_t tensors_i;
        if ((rc = split_keys(s->shard[i], &no_i, &count_i, &tensors_i, err))) break;
        const gguf_kv *kn = gguf_kv_find(s->shard[i], KEY_NO);
        const gguf_kv *kc = gguf_kv_find(s->shard[i], KEY_COUNT);
        const gguf_kv *kt = gguf_kv_find(s->shard[i], KEY_TENSORS);
        if (!kc || count_i != count) {
            rc = kc ? gg_fail(err, GGUF_E_FORMAT, 0, kc->offset, s->path[i],
                              "key %s (at byte %" PRIu64 "): %" PRIu32 ", but shard %" PRIu32
                              " (%s) says %" PRIu32, KEY_COUNT, kc->offset, count_i, no + 1, path, count)
                    : gg_fail(err, GGUF_E_FORMAT, 0, UINT64_MAX, s->path[i],
                              "no key %s: not a shard of the set of %" PRIu32 " (%s)", KEY_COUNT, count,
                              path);
        } else if (no_i != i) {
            rc = gg_fail(err, GGUF_E_FORMAT, 0, kn->offset, s->path[i],
                         "key %s (at byte %" PRIu64 "): %" PRIu32 ", but by its name the file is shard %" PRIu32
                         " of %" PRIu32 " (split.no %" PRIu32 "): two files claim shard %" PRIu32,
                         KEY_NO, kn->offset, no_i, i + 1, count, i, no_i + 1);
        } else if (tensors_i != tensors) {
            char a[24] = "absent", b[24] = "absent";
            if (tensors_i != UINT64_MAX) snprintf(a, sizeof a, "%" PRIu64, tensors_i);
            if (tensors != UINT64_MAX) snprintf(b, sizeof b, "%" PRIu64, tensors);
            rc = gg_fail(err, GGUF_E_FORMAT, 0, kt ? kt->offset : UINT64_MAX, s->path[i],
                         "key %s: %s, but shard %" PRIu32 " (%s) says %s", KEY_TENSORS, a, no + 1, path, b);
        }
    }
    if (!rc && count > 1) {
        char *extra = extra_shard(prefix, count);
        if (extra) {
            rc = gg_fail(err, GGUF_E_FORMAT, 0, UINT64_MAX, extra,
                         "a shard past the last of the set of %" PRIu32 " (%s)", count, path);
            free(extra);
        }
    }
    free(prefix);
    for (uint32_t i = 0; i < count && !rc; i++) {
        s->first[i + 1] = s->first[i] + gguf_tensor_count(s->shard[i]);
    }
    if (!rc) {
        s->n_tensors = s->first[count];
        if (tensors != UINT64_MAX && tensors != s->n_tensors) {
            const gguf_kv *kt = gguf_kv_find(s->shard[0], KEY_TENSORS);
            rc = gg_fail(err, GGUF_E_FORMAT, 0, kt->offset, s->path[0],
                         "key %s (at byte %" PRIu64 "): %" PRIu64 ", but the %" PRIu32
                         " shards hold %" PRIu64 " tensors", KEY_TENSORS, kt->offset, tensors, count,
                         s->n_tensors);
        }
    }
    if (!rc) rc = index_names(s, err);
    if (rc) {
        gguf_split_close(s);
        return rc;
    }
    *out = s;
    return GGUF_OK;
}

int gguf_split_adopt(gguf_split **out, gguf_file *f, gguf_error *err)
{
    if (!out || !f) {
        gguf_close(f);
        if (out) *out = NULL;
        return gg_fail(err, GGUF_E_INVALID, 0, UINT64_MAX, NULL, "invalid argument");
    }
    *out = NULL;
    gguf_split *s = calloc(1, sizeof *s);
    if (!s || !(s->shard = calloc(1, sizeof *s->shard)) || !(s->path = calloc(1, sizeof *s->path)) ||
        !(s->first = calloc(2, sizeof *s->first)) || !(s->path[0] = strdup(gguf_name(f)))) {
        gguf_split_close(s);
        gguf_close(f);
        return gg_fail(err, GGUF_E_NOMEM, 0, UINT64_MAX, NULL, "out of memory");
    }
    s->n = 1;
    s->shard[0] = f;
    s->n_tensors = s->first[1] = gguf_tensor_count(f);
    const int rc = index_names(s, err);
    if (rc) {
        gguf_split_close(s);
        return rc;
    }
    *out = s;
    return GGUF_OK;
}

uint32_t gguf_split_count(const gguf_split *s)
{
    return s ? s->n : 0;
}

gguf_file *gguf_split_shard(const gguf_split *s, uint32_t i)
{
    return s && i < s->n ? s->shard[i] : NULL;
}

const char *gguf_split_path(const gguf_split *s, uint32_t i)
{
    return s && i < s->n ? s->path[i] : NULL;
}

uint64_t gguf_split_tensor_count(const gguf_split *s)
{
    return s ? s->n_tensors : 0;
}

const gguf_tensor *gguf_split_tensor_at(const gguf_split *s, uint64_t i, uint32_t *shard)
{
    if (!s || i >= s->n_tensors) return NULL;
    return tensor_of(s, i, shard);
}

const gguf_tensor *gguf_split_tensor_find(const gguf_split *s, const char *name, uint32_t *shard)
{
    if (!s || !name) return NULL;
    const size_t len = strlen(name);
    for (uint64_t j = hash_name(name, len) & (s->n_slots - 1); s->slot[j]; j = (j + 1) & (s->n_slots - 1)) {
        uint32_t sh;
        const gguf_tensor *t = tensor_of(s, s->slot[j] - 1, &sh);
        if (t->name.len == len && memcmp(t->name.ptr, name, len) == 0) {
            if (shard) *shard = sh;
            return t;
        }
    }
    return NULL;
}
