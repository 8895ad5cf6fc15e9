/* imatrix.c -- importance matrices for gguf-requant; see imatrix.h. */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gguf/gguf.h"
#include "tools/cli.h"
#include "tools/imatrix.h"

static uint32_t get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static float get_f32(const unsigned char *p)
{
    uint32_t u = get_le32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct imatrix_entry *)a)->name, ((const struct imatrix_entry *)b)->name);
}

/* Sorts the entries; an entry named twice is an error.  Returns 0 or -1
 * after a message. */
static int sort_entries(struct imatrix *m)
{
    if (m->n) qsort(m->e, m->n, sizeof *m->e, by_name);
    for (size_t i = 1; i < m->n; i++)
        if (strcmp(m->e[i - 1].name, m->e[i].name) == 0) {
            cli_error(m->path, "two entries for '%s'", m->e[i].name);
            return -1;
        }
    return 0;
}

/* Checks that the values of the entry are finite.  Returns 0 or -1 after
 * a message. */
static int check_finite(const struct imatrix *m, const struct imatrix_entry *e)
{
    for (uint64_t i = 0; i < e->n; i++)
        if (!isfinite(e->values[i])) {
            cli_error(m->path, "entry '%s': value %llu is not finite", e->name, (unsigned long long)i);
            return -1;
        }
    return 0;
}

/* --- .dat ------------------------------------------------------------------ */

/* The whole file at path into memory (it is the size of the matrix).
 * Returns the bytes (free them), or NULL after a message. */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    struct stat st;
    if (!fp || fstat(fileno(fp), &st) != 0) {
        cli_error(path, "cannot open: %s", strerror(errno));
        if (fp) fclose(fp);
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > (off_t)(SIZE_MAX / 2)) {
        cli_error(path, "not a regular file of a size to read");
        fclose(fp);
        return NULL;
    }
    size_t n = (size_t)st.st_size;
    unsigned char *b = malloc(n ? n : 1);
    if (!b) {
        cli_error(path, "out of memory");
        fclose(fp);
        return NULL;
    }
    size_t got = fread(b, 1, n, fp);
    int bad = ferror(fp) || got != n;
    fclose(fp);
    if (bad) {
        cli_error(path, "read error");
        free(b);
        return NULL;
    }
    *len = n;
    return b;
}

static int load_dat(struct imatrix *m)
{
    size_t len = 0, at = 0;
    unsigned char *b = slurp(m->path, &len);
    if (!b) return -1;
    int rc = -1;
    char item[96] = "the entry count";
#define NEED(k) do { if (len - at < (size_t)(k)) goto cut; } while (0)
    NEED(4);
    int32_t n_entries = (int32_t)get_le32(b);
    at = 4;
    if (n_entries < 1) {
        cli_error(m->path, "not an importance matrix: %d entries (at byte 0)", (int)n_entries);
        goto done;
    }
    /* each entry takes at least 16 bytes: the count is bounded by the size */
    if ((uint64_t)n_entries > (len - 4) / 16) {
        cli_error(m->path, "%d entries cannot fit in its %zu bytes: cut short, or not an importance "
                  "matrix (at byte 0)", (int)n_entries, len);
        goto done;
    }
    if (!(m->e = calloc((size_t)n_entries, sizeof *m->e))) goto nomem;
    for (int32_t i = 0; i < n_entries; i++) {
        struct imatrix_entry *e = &m->e[m->n];
        snprintf(item, sizeof item, "entry %d", (int)i);
        NEED(4);
        int32_t name_len = (int32_t)get_le32(b + at);
        if (name_len < 1 || (size_t)name_len > len - at - 4) {
            cli_error(m->path, "entry %d: a name of %d bytes (at byte %zu)", (int)i, (int)name_len, at);
            goto done;
        }
        at += 4;
        if (memchr(b + at, '\0', (size_t)name_len)) {
            cli_error(m->path, "entry %d: the name holds a NUL byte (at byte %zu)", (int)i, at);
            goto done;
        }
        if (!(e->name = malloc((size_t)name_len + 1))) goto nomem;
        memcpy(e->name, b + at, (size_t)name_len);
        e->name[name_len] = '\0';
        m->n++;
        at += (size_t)name_len;
        snprintf(item, sizeof item, "entry %d '%.60s'", (int)i, e->name);
        NEED(8);
        int32_t ncall = (int32_t)get_le32(b + at);
        int32_t nval = (int32_t)get_le32(b + at + 4);
        if (nval < 1 || (uint64_t)nval > (len - at - 8) / 4) {
            cli_error(m->path, "%s: %d values (at byte %zu)%s", item, (int)nval, at + 4,
                      nval < 1 ? "" : ", more than the file holds");
            goto done;
        }
        at += 8;
        e->n = (uint64_t)nval;
        if (!(e->values = malloc((size_t)nval * sizeof *e->values))) goto nomem;
        for (int32_t k = 0; k < nval; k++) {
            float v = get_f32(b + at + 4 * (size_t)k);
            /* llama-quantize: v /= ncall, the int converted to float */
            e->values[k] = ncall > 0 ? v / (float)ncall : v;
        }
        at += 4 * (size_t)nval;
        if (check_finite(m, e)) goto done;
    }
    /* the chunk count and the dataset, in files of later versions */
    if (len - at >= 8) {
        int32_t chunks = (int32_t)get_le32(b + at);
        int32_t dlen = (int32_t)get_le32(b + at + 4);
        if (dlen < 0 || (size_t)dlen > len - at - 8) {
            cli_error(m->path, "the dataset name: %d bytes (at byte %zu)", (int)dlen, at + 4);
            goto done;
        }
        m->chunks = chunks;
        if (!(m->dataset = malloc((size_t)dlen + 1))) goto nomem;
        memcpy(m->dataset, b + at + 8, (size_t)dlen);
        m->dataset[dlen] = '\0';
        at += 8 + (size_t)dlen;
    }
    if (at != len) {
        cli_error(m->path, "%zu bytes after the importance matrix (at byte %zu)", len - at, at);
        goto done;
    }
    rc = sort_entries(m);
    goto done;
cut:
    cli_error(m->path, "%s: the file ends early (%zu bytes)", item, len);
    goto done;
nomem:
    cli_error(m->path, "out of memory");
done:
#undef NEED
    free(b);
    return rc;
}

/* --- GGUF ------------------------------------------------------------------ */

/* Whether name (len bytes) ends in suffix; *stem gets the length before it. */
static int ends_with(const char *name, size_t len, const char *suffix, size_t *stem)
{
    size_t n = strlen(suffix);
    if (len <= n || memcmp(name + len - n, suffix, n) != 0) return 0;
    *stem = len - n;
    return 1;
}

/* The n floats of F32 tensor t into dst.  Returns 0 or -1 after a message. */
static int tensor_floats(const struct imatrix *m, gguf_file *f, const gguf_tensor *t, float *dst,
                         uint64_t n)
{
    gguf_error err;
    err.message[0] = '\0';
    const unsigned char *p = t->data;
    unsigned char *buf = NULL;
    if (!p) {
        if (!(buf = malloc((size_t)n * 4))) {
            cli_error(m->path, "out of memory");
            return -1;
        }
        if (gguf_read_data(f, t->file_offset, buf, (size_t)n * 4, &err)) {
            cli_message(err.message);
            free(buf);
            return -1;
        }
        p = buf;
    }
    for (uint64_t i = 0; i < n; i++) dst[i] = get_f32(p + 4 * i);
    free(buf);
    return 0;
}

/* The tensor named as tensor i (t) with its `stem` bytes followed by
 * suffix, or NULL after a message. */
static const gguf_tensor *partner(const struct imatrix *m, const gguf_file *f, uint64_t i,
                                  const gguf_tensor *t, size_t stem, const char *suffix)
{
    char name[256];
    const gguf_tensor *p = NULL;
    if (stem + strlen(suffix) < sizeof name) {
        snprintf(name, sizeof name, "%.*s%s", (int)stem, t->name.ptr, suffix);
        p = gguf_tensor_find(f, name);
    }
    if (!p)
        cli_error(m->path, "tensor %llu '%.*s': no %.*s%s beside it (at byte %llu)", (unsigned long long)i,
                  (int)t->name.len, t->name.ptr, (int)stem, t->name.ptr, suffix,
                  (unsigned long long)t->info_offset);
    return p;
}

static int load_gguf(struct imatrix *m)
{
    gguf_error err;
    err.message[0] = '\0';
    gguf_file *f = NULL;
    int rc = -1;
    float *counts = NULL;
    if (gguf_open(&f, m->path, NULL, 0, &err)) {
        cli_message(err.message);
        return -1;
    }
    if (gguf_byte_order(f) != GGUF_LITTLE_ENDIAN) {
        cli_error(m->path, "a big-endian importance matrix is not supported");
        goto done;
    }
    static const char *const need[] = {"imatrix.datasets", "imatrix.chunk_count", "imatrix.chunk_size"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!gguf_kv_find(f, need[i])) {
            cli_error(m->path, "not an importance matrix: no key %s", need[i]);
            goto done;
        }
    uint64_t chunks;
    if (gguf_kv_uint(f, "imatrix.chunk_count", &chunks, &err) == GGUF_OK) m->chunks = (int64_t)chunks;
    const gguf_value *ds;
    if (gguf_kv_array(f, "imatrix.datasets", GGUF_VT_STRING, &ds, &err) == GGUF_OK && ds->count > 0) {
        gguf_str s = gguf_array_str(ds, 0);
        if (!(m->dataset = strndup(s.ptr ? s.ptr : "", s.len))) goto nomem;
    }
    const uint64_t nt = gguf_tensor_count(f);
    if (!(m->e = calloc((size_t)(nt ? nt : 1), sizeof *m->e))) goto nomem;
    for (uint64_t i = 0; i < nt; i++) {
        const gguf_tensor *s = gguf_tensor_at(f, i);
        size_t stem;
        if (!ends_with(s->name.ptr, s->name.len, ".in_sum2", &stem)) continue;
        const gguf_tensor *c = partner(m, f, i, s, stem, ".counts");
        if (!c) goto done;
        const uint64_t n_per_row = s->ne[0], n_mat = s->ne[1];
        if (s->type != GGUF_T_F32 || c->type != GGUF_T_F32 || s->n_dims > 2 || c->n_dims > 2 ||
            c->ne[0] != 1 || c->ne[1] != n_mat || n_per_row == 0 || n_mat == 0) {
            cli_error(m->path, "tensor %llu '%.*s': not F32 sums [n, m] with F32 counts [1, m] (at byte %llu)",
                      (unsigned long long)i, (int)s->name.len, s->name.ptr, (unsigned long long)s->info_offset);
            goto done;
        }
        struct imatrix_entry *e = &m->e[m->n];
        if (!(e->name = strndup(s->name.ptr, stem))) goto nomem;
        m->n++;
        e->n = s->n_elements;
        free(counts);
        if (!(e->values = malloc((size_t)e->n * sizeof *e->values)) ||
            !(counts = malloc((size_t)n_mat * sizeof *counts)))
            goto nomem;
        if (tensor_floats(m, f, s, e->values, e->n) || tensor_floats(m, f, c, counts, n_mat)) goto done;
        for (uint64_t j = 0; j < n_mat; j++) {
            float *v = e->values + j * n_per_row;
            for (uint64_t k = 0; k < n_per_row; k++) v[k] = counts[j] > 0.0f ? v[k] / counts[j] : 1.0f;
        }
        if (check_finite(m, e)) goto done;
    }
    /* a .counts without its sums */
    for (uint64_t i = 0; i < nt; i++) {
        const gguf_tensor *c = gguf_tensor_at(f, i);
        size_t stem;
        if (!ends_with(c->name.ptr, c->name.len, ".counts", &stem)) continue;
        if (!partner(m, f, i, c, stem, ".in_sum2")) goto done;
    }
    if (m->n == 0) {
        cli_error(m->path, "the importance matrix has no entries");
        goto done;
    }
    rc = sort_entries(m);
    goto done;
nomem:
    cli_error(m->path, "out of memory");
done:
    free(counts);
    gguf_close(f);
    return rc;
}

int imatrix_load(struct imatrix *m, const char *path)
{
    memset(m, 0, sizeof *m);
    m->path = path;
    m->chunks = -1;
    unsigned char magic[4] = {0};
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        cli_error(path, "cannot open: %s", strerror(errno));
        return -1;
    }
    size_t got = fread(magic, 1, 4, fp);
    fclose(fp);
    m->gguf = got == 4 && memcmp(magic, "GGUF", 4) == 0;
    int rc = m->gguf ? load_gguf(m) : load_dat(m);
    if (rc) imatrix_free(m);
    return rc;
}

struct imatrix_entry *imatrix_find(const struct imatrix *m, const char *name, size_t len)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *s = m->e[mid].name;
        size_t sl = strlen(s);
        int c = memcmp(s, name, sl < len ? sl : len);
        if (c == 0) c = sl < len ? -1 : sl > len;
        if (c == 0) return &m->e[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static int contains_any(const char *name, const char *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strstr(name, v[i])) return 1;
    return 0;
}

void imatrix_filter(struct imatrix *m, const char *const *inc, size_t n_inc, const char *const *exc,
                    size_t n_exc)
{
    size_t k = 0;
    for (size_t i = 0; i < m->n; i++) {
        struct imatrix_entry *e = &m->e[i];
        if ((n_inc && !contains_any(e->name, inc, n_inc)) || contains_any(e->name, exc, n_exc)) {
            free(e->name);
            free(e->values);
            continue;
        }
        m->e[k++] = *e;
    }
    m->n = k;
}

void imatrix_free(struct imatrix *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->e[i].name);
        free(m->e[i].values);
    }
    free(m->e);
    free(m->dataset);
    m->e = NULL;
    m->n = 0;
    m->dataset = NULL;
}
