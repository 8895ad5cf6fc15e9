/* dump-estimate.c -- gguf-dump --estimate; see dump-estimate.h. */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gguf/gguf.h"
#include "infer/context.h"
#include "infer/model.h"
#include "quant/quant.h"
#include "tools/dump-estimate.h"
#include "tools/guard.h"

/* llama.cpp's key/value cache for the same conversations as qwen-run's
 * -c C with N sequences, that is llama.cpp's -c C*N -np N (its context is
 * shared out among the sequences): the context rounded up to 256 cells,
 * each sequence's share rounded up to 256 again, every layer a K and a V
 * row of n_head_kv * head_dim elements per cell (llama-context.cpp,
 * llama-kv-cache.cpp).  A Q8_0 row is 34 bytes a 32 elements and needs
 * rows of whole blocks: 0 when they are not. */
struct llama_kv {
    uint64_t n_ctx, n_ctx_seq, cells, bytes;
};

static uint64_t pad256(uint64_t n)
{
    return (n + 255) / 256 * 256;
}

static struct llama_kv llama_kv_of(const qwen_config *c, const qwen_params *p, int q8_0)
{
    struct llama_kv k;
    k.n_ctx = pad256((uint64_t)p->n_ctx * p->n_seq);
    k.n_ctx_seq = pad256(k.n_ctx / p->n_seq);
    k.cells = k.n_ctx_seq * p->n_seq;
    uint64_t row = q8_0 ? (c->n_kv % 32 ? 0 : c->n_kv / 32 * 34) : 2 * (uint64_t)c->n_kv;
    k.bytes = (uint64_t)c->n_layer * k.cells * 2 * row;
    return k;
}

static void put_mib(cli_out *o, uint64_t bytes)
{
    cli_out_printf(o, "%10.2f MiB", (double)bytes / (1024.0 * 1024.0));
}

/* One text line: "  LABEL  N MiB  (BYTES bytes)  NOTE". */
static void text_line(cli_out *o, const char *label, uint64_t bytes, const char *note)
{
    cli_out_printf(o, "  %-12s", label);
    put_mib(o, bytes);
    cli_out_printf(o, "  %14" PRIu64 " bytes", bytes);
    if (note && *note) cli_out_printf(o, "  %s", note);
    cli_out_putc(o, '\n');
}

/* The model's architecture name, or "" */
static void arch_name(const gguf_file *f, char *buf, size_t cap)
{
    gguf_str s;
    buf[0] = '\0';
    if (gguf_kv_str(f, "general.architecture", &s, NULL) == GGUF_OK)
        cli_shorten(buf, s.ptr, s.len < cap - 1 ? s.len : cap - 1);
}

static void text_report(cli_out *o, const char *path, const char *arch, int known,
                        const qwen_config *c, const qwen_params *p, const qwen_memory *m,
                        const struct estimate_opts *e)
{
    char note[160];
    cli_out_text_str(o, path, strlen(path), 0);
    if (!known) {
        cli_out_printf(o, ": architecture %s: not one qwen-run runs (%s); the weights alone\n",
                       arch[0] ? arch : "(none)", qwen_arch_names());
        text_line(o, "weights", m->weights, "tensor data");
        return;
    }
    cli_out_printf(o, ": %s, %" PRIu32 " layers; qwen-run -c %" PRIu32 " on the CPU, %d thread%s,"
                   " SIMD %s\n", arch, c->n_layer, p->n_ctx, p->n_threads,
                   p->n_threads == 1 ? "" : "s", gguf_simd_name(gguf_simd_get()));
    if (p->n_seq > 1)
        cli_out_printf(o, "  (%" PRIu32 " sequences at once: qwen-run --each-line --parallel %"
                       PRIu32 ")\n", p->n_seq, p->n_seq);
    text_line(o, "weights", m->weights, "mapped from the file, read as used");
    if (m->repacked)
        text_line(o, "repacked", m->repacked,
                  "of the weights, copied interleaved in place of their pages (--no-repack: none)");
    snprintf(note, sizeof note, "F16, %" PRIu32 " layers x %" PRIu32 " positions x %" PRIu32
             " sequence%s", c->n_layer, p->n_ctx, p->n_seq, p->n_seq == 1 ? "" : "s");
    text_line(o, "KV cache", m->kv_cache, note);
    snprintf(note, sizeof note, "a batch of %" PRIu32 " tokens, %d thread%s' scratch", p->n_batch,
             p->n_threads, p->n_threads == 1 ? "" : "s");
    text_line(o, "compute", m->compute, note);
    snprintf(note, sizeof note, "%" PRIu32 " x %" PRIu32 " logits", p->n_outputs, c->n_vocab);
    text_line(o, "logits", m->host, note);
    text_line(o, "total", m->weights + m->kv_cache + m->compute + m->host, "");
    struct llama_kv k = llama_kv_of(c, p, e->kv_q8_0);
    const char *t = e->kv_q8_0 ? "q8_0" : "f16";
    if (k.bytes) {
        snprintf(note, sizeof note, "%s, -c %" PRIu64 " -np %" PRIu32 "%s%s%s: %" PRIu64 " cells",
                 e->kv_q8_0 ? "Q8_0" : "F16", (uint64_t)p->n_ctx * p->n_seq, p->n_seq,
                 e->kv_q8_0 ? " -ctk " : "", e->kv_q8_0 ? t : "", e->kv_q8_0 ? " -ctv q8_0 -fa on" : "",
                 k.cells);
        text_line(o, "llama.cpp KV", k.bytes, note);
    } else {
        cli_out_printf(o, "  llama.cpp KV  none: its Q8_0 cache needs rows of whole blocks of 32, "
                       "these are %" PRIu32 " wide\n", c->n_kv);
    }
    if (e->kv_q8_0) cli_out_str(o, "  (qwen-run keeps its key/value cache in F16)\n");
}

static void json_member(cli_out *o, const char *key, uint64_t v, int last)
{
    cli_out_printf(o, "  \"%s\": ", key);
    cli_out_u64(o, v);
    cli_out_str(o, last ? "\n" : ",\n");
}

static void json_report(cli_out *o, const char *path, const char *arch, int known,
                        const qwen_config *c, const qwen_params *p, const qwen_memory *m,
                        const struct estimate_opts *e)
{
    cli_out_str(o, "{\n  \"file\": ");
    cli_out_json_str(o, path, strlen(path));
    cli_out_str(o, ",\n  \"architecture\": ");
    cli_out_json_str(o, arch, strlen(arch));
    cli_out_printf(o, ",\n  \"known_architecture\": %s,\n", known ? "true" : "false");
    if (!known) {
        json_member(o, "weights", m->weights, 0);
        json_member(o, "total", m->weights, 1);
        cli_out_str(o, "}");
        return;
    }
    cli_out_printf(o, "  \"backend\": \"cpu\",\n  \"simd\": \"%s\",\n",
                   gguf_simd_name(gguf_simd_get()));
    json_member(o, "layers", c->n_layer, 0);
    json_member(o, "context", p->n_ctx, 0);
    json_member(o, "parallel", p->n_seq, 0);
    json_member(o, "batch", p->n_batch, 0);
    json_member(o, "outputs", p->n_outputs, 0);
    json_member(o, "threads", (uint64_t)p->n_threads, 0);
    json_member(o, "weights", m->weights, 0);
    json_member(o, "repacked", m->repacked, 0);
    cli_out_str(o, "  \"kv_type\": \"f16\",\n");
    json_member(o, "kv_cache", m->kv_cache, 0);
    json_member(o, "compute", m->compute, 0);
    json_member(o, "logits", m->host, 0);
    json_member(o, "total", m->weights + m->kv_cache + m->compute + m->host, 0);
    struct llama_kv k = llama_kv_of(c, p, e->kv_q8_0);
    cli_out_printf(o, "  \"llama_cpp\": {\"kv_type\": \"%s\", \"n_ctx\": %" PRIu64
                   ", \"n_ctx_seq\": %" PRIu64 ", \"n_seq\": %" PRIu32 ", \"cells\": %" PRIu64
                   ", \"kv_cache\": ", e->kv_q8_0 ? "q8_0" : "f16", k.n_ctx, k.n_ctx_seq, p->n_seq,
                   k.cells);
    if (k.bytes) cli_out_u64(o, k.bytes);
    else cli_out_str(o, "null");
    cli_out_str(o, "}\n}");
}

/* Reports trouble with path on stderr (in JSON, also as its entry). */
static void failed(cli_out *o, const char *path, gguf_error *err, int rc, int json)
{
    const char *msg = err->message[0] ? err->message : gguf_strerror(rc);
    cli_message(msg);
    if (!json) return;
    cli_out_str(o, "{\n  \"file\": ");
    cli_out_json_str(o, path, strlen(path));
    cli_out_str(o, ",\n  \"error\": ");
    cli_out_json_str(o, msg, strlen(msg));
    cli_out_str(o, "\n}");
}

/* One file.  Returns 0 or 2 (after a message). */
static int estimate_one(cli_out *o, const char *path, const struct estimate_opts *e, int json,
                        int shard)
{
    gguf_error err;
    err.message[0] = '\0';
    gguf_split *set;
    int rc = shard || strcmp(path, "-") == 0 ? guard_split_open_alone(&set, path, 0, &err)
                                             : guard_split_open(&set, path, 0, &err);
    if (rc) {
        failed(o, path, &err, rc, json);
        return CLI_EXIT_TROUBLE;
    }
    char arch[64];
    arch_name(gguf_split_shard(set, 0), arch, sizeof arch);
    qwen_params p = qwen_params_defaults();
    p.n_ctx = e->n_ctx;
    p.n_seq = e->n_seq ? e->n_seq : 1;
    p.n_threads = e->n_threads;
    qwen_memory m;
    qwen_config c;
    memset(&c, 0, sizeof c);
    rc = qwen_estimate(set, &p, &m, &err);
    int known = rc == GGUF_OK;
    if (rc == GGUF_OK) rc = qwen_config_read_set(set, &c, &err);
    if (rc != GGUF_OK && rc != GGUF_E_UNSUPPORTED) {
        failed(o, path, &err, rc, json);
        guard_split_close(set);
        return CLI_EXIT_TROUBLE;
    }
    if (json) json_report(o, path, arch, known, &c, &p, &m, e);
    else text_report(o, path, arch, known, &c, &p, &m, e);
    guard_split_close(set);
    return CLI_EXIT_OK;
}

int dump_estimate(cli_out *o, char **paths, int n, const struct estimate_opts *e, int json,
                  int shard)
{
    int status = CLI_EXIT_OK;
    if (json && n > 1) cli_out_str(o, "[\n");
    for (int i = 0; i < n && !cli_out_failed(o); i++) {
        if (i && !json) cli_out_putc(o, '\n');
        if (i && json) cli_out_str(o, ",\n");
        if (estimate_one(o, paths[i], e, json, shard) != CLI_EXIT_OK) status = CLI_EXIT_TROUBLE;
    }
    if (json) cli_out_str(o, n > 1 ? "\n]\n" : "\n");
    return status;
}
