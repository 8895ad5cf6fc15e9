/*
 * split-file.c -- writes a GGUF file as a split set for the tests, as
 * llama.cpp's gguf-split does: IN's tensors in N shards named by
 * gguf_split_name(PREFIX, ...), all its key/value pairs in the first, and
 * split.no (UINT16), split.count (UINT16) and split.tensors.count (INT32)
 * in each.  Usage: split-file IN PREFIX N
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"

static void die(const char *what, const gguf_error *err)
{
    fprintf(stderr, "split-file: %s: %s\n", what, err ? err->message : "failed");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc != 4 || atoi(argv[3]) < 1) {
        fprintf(stderr, "usage: split-file IN PREFIX N\n");
        return 2;
    }
    gguf_error err;
    gguf_file *in;
    if (gguf_open(&in, argv[1], NULL, 0, &err)) die(argv[1], &err);
    const uint64_t nt = gguf_tensor_count(in);
    const uint32_t n = (uint32_t)atoi(argv[3]);
    if (nt < n) die("fewer tensors than shards", NULL);
    for (uint32_t s = 0; s < n; s++) {
        const uint64_t t0 = nt * s / n, t1 = nt * (s + 1) / n;
        gguf_writer *w = gguf_writer_new();
        if (!w) die("out of memory", NULL);
        for (uint64_t i = 0; s == 0 && i < gguf_kv_count(in); i++)
            if (gguf_writer_copy_kv(w, gguf_kv_at(in, i), &err)) die("copy", &err);
        if (gguf_writer_add_u16(w, "split.no", (uint16_t)s, &err) ||
            gguf_writer_add_u16(w, "split.count", (uint16_t)n, &err) ||
            gguf_writer_add_i32(w, "split.tensors.count", (int32_t)nt, &err))
            die("split keys", &err);
        for (uint64_t i = t0; i < t1; i++) {
            const gguf_tensor *t = gguf_tensor_at(in, i);
            char name[GGUF_TENSOR_NAME_MAX + 1];
            snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
            if (gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, &err)) die(name, &err);
        }
        char path[4096];
        if (gguf_split_name(path, sizeof path, argv[2], s, n) >= (int)sizeof path) die("name too long", NULL);
        if (gguf_writer_open(w, path, &err)) die(path, &err);
        for (uint64_t i = t0; i < t1; i++) {
            const gguf_tensor *t = gguf_tensor_at(in, i);
            if (gguf_writer_write(w, t->data, t->size, &err)) die(path, &err);
        }
        if (gguf_writer_finish(w, &err)) die(path, &err);
        gguf_writer_free(w);
    }
    gguf_close(in);
    return 0;
}
