/*
 * verify-edit.c -- copies a GGUF file through the library's writer with
 * edits, to make the damaged models the gguf-verify tests need.
 *
 *   verify-edit [--drop NAME]... [--set KEY=N]... [--delete KEY]... IN OUT
 *
 *   --drop NAME    leave tensor NAME out
 *   --set KEY=N    give KEY the UINT32 value N (in place, or appended)
 *   --delete KEY   leave the KV pair KEY out
 *
 * Everything else (version, byte order, KV pairs in order, the other
 * tensors and their bytes) is copied.  Exit status: 0 written, 2 trouble.
 */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"

static const char *prog = "verify-edit";

static void die(const char *what, const gguf_error *err)
{
    fprintf(stderr, "%s: %s: %s\n", prog, what, err ? err->message : "failed");
    exit(2);
}

static int listed(const char *const *list, int n, const char *s, size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(list[i]) == len && memcmp(list[i], s, len) == 0) return i;
    return -1;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "drop", required_argument, NULL, 'd' },
        { "set", required_argument, NULL, 's' },
        { "delete", required_argument, NULL, 'x' },
        { NULL, 0, NULL, 0 }
    };
    const char **drop = calloc((size_t)argc, sizeof *drop);
    const char **del = calloc((size_t)argc, sizeof *del);
    char **set_key = calloc((size_t)argc, sizeof *set_key);
    uint32_t *set_val = calloc((size_t)argc, sizeof *set_val);
    int *set_done = calloc((size_t)argc, sizeof *set_done);
    int n_drop = 0, n_del = 0, n_set = 0, c;
    if (!drop || !del || !set_key || !set_val || !set_done) die("out of memory", NULL);
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': drop[n_drop++] = optarg; break;
        case 'x': del[n_del++] = optarg; break;
        case 's': {
            char *eq = strchr(optarg, '=');
            if (!eq) die("--set needs KEY=N", NULL);
            set_key[n_set] = strndup(optarg, (size_t)(eq - optarg));
            set_val[n_set++] = (uint32_t)strtoul(eq + 1, NULL, 10);
            break;
        }
        default:
            fprintf(stderr, "usage: %s [--drop NAME] [--set KEY=N] [--delete KEY] IN OUT\n", prog);
            return 2;
        }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "usage: %s [--drop NAME] [--set KEY=N] [--delete KEY] IN OUT\n", prog);
        return 2;
    }
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
        int k = listed((const char *const *)set_key, n_set, kv->key.ptr, kv->key.len);
        if (listed(del, n_del, kv->key.ptr, kv->key.len) >= 0) continue;
        if (k >= 0) {
            if (gguf_writer_add_u32(w, set_key[k], set_val[k], &err)) die("set", &err);
            set_done[k] = 1;
        } else if (gguf_writer_copy_kv(w, kv, &err)) {
            die("copy key", &err);
        }
    }
    for (int k = 0; k < n_set; k++)
        if (!set_done[k] && gguf_writer_add_u32(w, set_key[k], set_val[k], &err)) die("set", &err);
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (listed(drop, n_drop, t->name.ptr, t->name.len) >= 0) continue;
        char *name = strndup(t->name.ptr, t->name.len);
        if (!name || gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, &err))
            die("tensor", &err);
        free(name);
    }
    if (gguf_writer_open(w, argv[optind + 1], &err)) die("output", &err);
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (listed(drop, n_drop, t->name.ptr, t->name.len) >= 0) continue;
        if (gguf_writer_write(w, t->data, (size_t)t->size, &err)) die("write", &err);
    }
    if (gguf_writer_finish(w, &err)) die("finish", &err);
    gguf_writer_free(w);
    gguf_close(f);
    for (int k = 0; k < n_set; k++) free(set_key[k]);
    free(set_key);
    free(set_val);
    free(set_done);
    free(drop);
    free(del);
    return 0;
}
