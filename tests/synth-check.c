/*
 * synth-check -- checks for the tests of gguf-synth's quantized outputs and
 * of gguf-dump --values, computed independently of the code under test.
 *
 *   synth-check same F32FILE FILE
 *       FILE has the tensors of F32FILE (an all-F32 model), same names, dims
 *       and order; each F32 tensor holds the same bytes, and each tensor of
 *       another type holds exactly what gguf_quantize_rows() makes of the
 *       F32 tensor's rows.  So FILE is the F32 model quantized.
 *
 *   synth-check values FILE TENSOR N OUTPUT
 *       OUTPUT (gguf-dump --values TENSOR:N) has one value a line, and they
 *       are the first min(N, elements) values of TENSOR as
 *       gguf_dequantize_rows() gives them for the whole tensor, bit for bit
 *       (any NaN matches any NaN).  For an F32 tensor they are also compared
 *       with the file's bytes.
 *
 * Exit status: 0 when the check holds, 1 when it does not, 99 when the
 * check cannot run (unreadable file, no such tensor, out of memory).
 */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "quant/quant.h"

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "synth-check: out of memory\n");
        exit(99);
    }
    return p;
}

static gguf_file *open_or_die(const char *path)
{
    gguf_file *f;
    gguf_error err;
    if (gguf_open(&f, path, NULL, 0, &err) != GGUF_OK) {
        fprintf(stderr, "synth-check: %s\n", err.message);
        exit(99);
    }
    return f;
}

/* "same": returns the number of tensors that differ (0: FILE is F32FILE
 * quantized). */
static int check_same(const char *f32_path, const char *path)
{
    gguf_file *a = open_or_die(f32_path), *b = open_or_die(path);
    int bad = 0;
    uint64_t n = gguf_tensor_count(a);
    if (gguf_tensor_count(b) != n) {
        fprintf(stderr, "%s: %llu tensors, %s has %llu\n", path,
                (unsigned long long)gguf_tensor_count(b), f32_path, (unsigned long long)n);
        return 1;
    }
    for (uint64_t i = 0; i < n; i++) {
        const gguf_tensor *ta = gguf_tensor_at(a, i), *tb = gguf_tensor_at(b, i);
        int name_ok = ta->name.len == tb->name.len &&
                      memcmp(ta->name.ptr, tb->name.ptr, ta->name.len) == 0;
        if (!name_ok || ta->n_dims != tb->n_dims || memcmp(ta->ne, tb->ne, sizeof ta->ne) != 0 ||
            ta->type != GGUF_T_F32) {
            fprintf(stderr, "%s: tensor %llu: name, dims or source type differ\n", path,
                    (unsigned long long)i);
            bad++;
            continue;
        }
        const char *what;
        unsigned char *want = NULL;
        if (tb->type == GGUF_T_F32) {
            what = "the F32 bytes";
            if (tb->size != ta->size || memcmp(ta->data, tb->data, ta->size) != 0) {
                fprintf(stderr, "%s: tensor '%.*s': not %s\n", path, (int)tb->name.len,
                        tb->name.ptr, what);
                bad++;
            }
            continue;
        }
        what = gguf_type_str(tb->type);
        int64_t ne0 = (int64_t)ta->ne[0], rows = (int64_t)(ta->n_elements / ta->ne[0]);
        uint64_t size = gguf_row_bytes(tb->type, (uint64_t)ne0) * (uint64_t)rows;
        if (size != tb->size) {
            fprintf(stderr, "%s: tensor '%.*s': %llu bytes, %s needs %llu\n", path,
                    (int)tb->name.len, tb->name.ptr, (unsigned long long)tb->size, what,
                    (unsigned long long)size);
            bad++;
            continue;
        }
        /* The F32 data may be unaligned for float in principle: copy it. */
        float *src = xmalloc((size_t)ta->size);
        memcpy(src, ta->data, (size_t)ta->size);
        want = xmalloc((size_t)size);
        int rc = gguf_quantize_rows(tb->type, src, want, rows, ne0, 1);
        if (rc != GGUF_OK) {
            fprintf(stderr, "%s: tensor '%.*s': cannot quantize to %s: %s\n", path,
                    (int)tb->name.len, tb->name.ptr, what, gguf_strerror(rc));
            bad++;
        } else if (memcmp(want, tb->data, (size_t)size) != 0) {
            uint64_t at = 0;
            const unsigned char *got = tb->data;
            while (want[at] == got[at]) at++;
            fprintf(stderr, "%s: tensor '%.*s': %s bytes differ from quantizing the F32 "
                    "values, first at byte %llu of the tensor\n", path, (int)tb->name.len,
                    tb->name.ptr, what, (unsigned long long)at);
            bad++;
        }
        free(src);
        free(want);
    }
    gguf_close(a);
    gguf_close(b);
    return bad;
}

/* Float bits equal, or both NaN. */
static int same_float(float x, float y)
{
    if (isnan(x) || isnan(y)) return isnan(x) && isnan(y);
    return memcmp(&x, &y, sizeof x) == 0;
}

/* "values": returns the number of problems found. */
static int check_values(const char *path, const char *name, uint64_t n, const char *output)
{
    gguf_file *f = open_or_die(path);
    const gguf_tensor *t = gguf_tensor_find(f, name);
    if (!t) {
        fprintf(stderr, "synth-check: %s: no tensor '%s'\n", path, name);
        exit(99);
    }
    if (n > t->n_elements) n = t->n_elements;
    int64_t ne0 = (int64_t)t->ne[0], rows = (int64_t)(t->n_elements / t->ne[0]);
    float *all = xmalloc(sizeof *all * (size_t)t->n_elements);
    int rc = gguf_dequantize_rows(t->type, t->data, all, rows, ne0, 1);
    if (rc != GGUF_OK) {
        fprintf(stderr, "synth-check: %s: '%s': %s\n", path, name, gguf_strerror(rc));
        exit(99);
    }
    int bad = 0;
    if (t->type == GGUF_T_F32 && gguf_byte_order(f) == GGUF_LITTLE_ENDIAN) {
        const unsigned char *p = t->data;
        for (uint64_t i = 0; i < t->n_elements; i++) {
            uint32_t u = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
                         (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
            float v;
            memcpy(&v, &u, 4);
            if (!same_float(v, all[i])) {
                fprintf(stderr, "%s: '%s': F32 element %llu dequantizes to %.9g, file has %.9g\n",
                        path, name, (unsigned long long)i, all[i], v);
                bad++;
                break;
            }
        }
    }
    FILE *in = fopen(output, "r");
    if (!in) {
        perror(output);
        exit(99);
    }
    char line[128];
    uint64_t i = 0;
    while (fgets(line, sizeof line, in)) {
        if (i >= n) {
            fprintf(stderr, "%s: more than %llu values\n", output, (unsigned long long)n);
            bad++;
            break;
        }
        char *end;
        float v = strtof(line, &end);
        if (end == line || (*end != '\n' && *end != '\0')) {
            fprintf(stderr, "%s: line %llu is not a number: %s", output,
                    (unsigned long long)i + 1, line);
            bad++;
            break;
        }
        if (!same_float(v, all[i])) {
            fprintf(stderr, "%s: value %llu is %.9g, gguf_dequantize_rows gives %.9g\n", output,
                    (unsigned long long)i, v, all[i]);
            bad++;
        }
        i++;
    }
    fclose(in);
    if (i < n && !bad) {
        fprintf(stderr, "%s: %llu values, expected %llu\n", output, (unsigned long long)i,
                (unsigned long long)n);
        bad++;
    }
    free(all);
    gguf_close(f);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "same") == 0) return check_same(argv[2], argv[3]) ? 1 : 0;
    if (argc == 6 && strcmp(argv[1], "values") == 0) {
        char *end;
        unsigned long long n = strtoull(argv[4], &end, 10);
        if (*end) return 99;
        return check_values(argv[2], argv[3], n, argv[5]) ? 1 : 0;
    }
    fprintf(stderr, "usage: synth-check same F32FILE FILE\n"
                    "       synth-check values FILE TENSOR N OUTPUT\n");
    return 99;
}
