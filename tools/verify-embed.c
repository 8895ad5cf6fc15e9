/* verify-embed.c -- gguf-verify --embed IN OUT; see verify.h. */
#include <config.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "tools/cli.h"
#include "tools/guard.h"
#include "tools/verify.h"


/* ------------------------------------------------------------------------ */
/* --embed IN OUT                                                            */

/* 1 when OUT is the file IN. */
static int same_path(const char *in, const char *outp)
{
    struct stat si, so;
    if (strcmp(outp, "-") == 0) return 0;
    if (strcmp(in, outp) == 0) return 1;
    return stat(in, &si) == 0 && stat(outp, &so) == 0 && si.st_dev == so.st_dev &&
           si.st_ino == so.st_ino;
}

static int key_is(const gguf_kv *kv, const char *key)
{
    size_t n = strlen(key);
    return kv->key.len == n && memcmp(kv->key.ptr, key, n) == 0;
}

/* Builds the output header: IN's version, byte order, KV pairs in order
 * (the checksum key replaced in place, or appended), tensor directory.
 * Returns GGUF_OK or the writer's status. */
static int embed_header(gguf_writer *w, gguf_file *f, const uint64_t *sums, gguf_error *err)
{
    int rc, have = 0;
    uint64_t n = gguf_tensor_count(f);
    if ((rc = gguf_writer_set_version(w, gguf_version(f), err))) return rc;
    if ((rc = gguf_writer_set_byte_order(w, gguf_byte_order(f), err))) return rc;
    for (uint64_t i = 0; i < gguf_kv_count(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (key_is(kv, GGUF_KEY_TENSOR_XXH3)) {
            rc = gguf_writer_add_array(w, GGUF_KEY_TENSOR_XXH3, GGUF_VT_UINT64, sums, n, err);
            have = 1;
        } else {
            rc = gguf_writer_copy_kv(w, kv, err);
        }
        if (rc) return rc;
    }
    if (!have &&
        (rc = gguf_writer_add_array(w, GGUF_KEY_TENSOR_XXH3, GGUF_VT_UINT64, sums, n, err)))
        return rc;
    for (uint64_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        char *name = strndup(t->name.ptr, t->name.len);
        if (!name) {
            snprintf(err->message, sizeof err->message, "out of memory");
            return err->status = GGUF_E_NOMEM;
        }
        rc = gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, err);
        free(name);
        if (rc) return rc;
    }
    return GGUF_OK;
}

/* --embed IN OUT.  Returns the exit status. */
int verify_embed(const char *in, const char *outp)
{
    if (strcmp(outp, "-") == 0 && cli_isatty(1)) {
        cli_error("-", "refusing to write binary data to a terminal");
        return CLI_EXIT_TROUBLE;
    }
    if (same_path(in, outp)) {
        cli_error(outp, "is the input file; write to another name (the input is never changed)");
        return CLI_EXIT_TROUBLE;
    }
    struct vfile v;
    memset(&v, 0, sizeof v);
    v.name = in;
    if (vfile_open(&v)) return v.status;
    int status = CLI_EXIT_TROUBLE;
    gguf_writer *w = NULL;
    uint64_t *sums = NULL;
    gguf_error err;
    err.message[0] = '\0';
    if (gguf_is_stream(v.f)) {
        cli_error(in, "--embed needs a file: the checksums go into the header, before the data, "
                  "so the input is read twice");
        goto done;
    }
    uint64_t n = gguf_tensor_count(v.f);
    for (uint64_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(v.f, i);
        if (memchr(t->name.ptr, '\0', t->name.len)) {
            char q[256];
            cli_error(in, "tensor %llu %s: the name holds a NUL byte, which the output cannot",
                      (unsigned long long)i, verify_tname(q, sizeof q, t));
            goto done;
        }
    }
    /* The input's own checksums, when it has some, must hold: new ones
     * would vouch for damaged data. */
    vfile_verify(&v, GGUF_HASH_XXH3, 1);
    if (v.failed || v.status) {
        if (v.failed) cli_error(in, "not copied: the input failed its checks");
        status = v.status;
        goto done;
    }
    sums = malloc((size_t)(n ? n : 1) * sizeof *sums);
    w = gguf_writer_new();
    if (!sums || !w) {
        cli_error(NULL, "out of memory");
        goto done;
    }
    for (uint64_t i = 0; i < n; i++) sums[i] = gguf_digest_u64(&v.tensors[i]);
    int rc = embed_header(w, v.f, sums, &err);
    if (rc) {
        cli_error(in, "cannot be rewritten: %s", err.message[0] ? err.message : gguf_strerror(rc));
        goto done;
    }
    guard_output_catch();
    if ((rc = guard_output_open(w, outp, &err))) goto write_error;
    for (uint64_t i = 0; i < n && !rc; i++) {
        const gguf_tensor *t = gguf_tensor_at(v.f, i);
        rc = gguf_writer_write(w, t->data, (size_t)t->size, &err);
    }
    if (rc || (rc = guard_output_finish(w, &err))) goto write_error;
    status = CLI_EXIT_OK;
    goto done;
write_error:
    if (guard_report_shrunk_input(&err)) goto done;
    if (!err.message[0])
        snprintf(err.message, sizeof err.message, "%s: %s", outp, gguf_strerror(rc));
    cli_message(err.message);
done:
    guard_output_free(w);
    free(sums);
    vfile_close(&v);
    return status;
}
