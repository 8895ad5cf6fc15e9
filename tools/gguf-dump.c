/*
 * gguf-dump -- show the header, metadata and tensor directory of GGUF files,
 * as text for people, as JSON for programs, or one raw value for scripts.
 * See gguf-dump(1) for the output formats.
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "infer/context.h"
#include "infer/model.h"
#include "tools/cli.h"
#include "tools/dump-common.h"
#include "tools/dump-diff.h"
#include "tools/dump-estimate.h"
#include "tools/dump-values.h"
#include "tools/guard.h"
#include "tools/value.h"



struct options {
    int json;
    int full;
    int no_kv;
    int no_tensors;
    int no_summary;
    const char *keys_glob;      /* --keys, or NULL */
    const char *tensors_glob;   /* --tensors, or NULL */
    const char **keys;          /* -k KEY..., in command-line order */
    size_t n_keys;
    struct values_req *values;  /* --values TENSOR[:N]..., in command-line order */
    size_t n_values;
    int stats;                  /* --stats */
    int shard;                  /* --shard: each file alone, not its split set */
    int diff;                   /* --diff A B */
    int estimate;               /* --estimate */
    struct estimate_opts est;   /* its -c, --parallel, -t, --kv-type */
    int est_opts;               /* one of them was given */
};


static cli_out *out = &cli_stdout;
static int raw_to_tty;          /* -k output goes to a terminal: escape strings */

/* The --help text, to stdout. */
static void usage(void)
{
    cli_out_printf(out,
        "Usage: %s [OPTION]... [FILE]...\n"
        "Show the header, metadata and tensor directory of GGUF files.\n"
        "FILE may be a path, a pipe, gzip-compressed, or - for standard input\n"
        "(the default when no FILE is given and standard input is not a terminal).\n"
        "\n"
        "  -j, --json            print one JSON document (see gguf-dump(1))\n"
        "  -k, --key=KEY         print only the value of KEY, raw: strings unquoted,\n"
        "                        arrays one element a line; may be repeated;\n"
        "                        exit status 1 when a key is absent\n"
        "      --keys=GLOB       show only the metadata keys matching GLOB\n"
        "      --tensors=GLOB    show only the tensors whose names match GLOB\n"
        "      --no-kv           leave out the metadata\n"
        "      --no-tensors      leave out the tensor directory\n"
        "      --no-summary      leave out the summary\n"
        "  -f, --full            show long arrays and strings completely in the text view\n"
        "      --values=TENSOR[:N]\n"
        "                        print the first N values of TENSOR (default 16),\n"
        "                        dequantized, one a line (with --json, as JSON);\n"
        "                        may be repeated\n"
        "      --stats           print min, max, mean and RMS of each tensor (matching\n"
        "                        --tensors), over all its elements, dequantized;\n"
        "                        NaN and infinities are counted, not included\n"
        "      --diff            with two FILEs A and B: the differences between them\n"
        "                        (metadata, tensor types and shapes, tensor data by\n"
        "                        XXH3), as diff shows them; exit status 0 when they\n"
        "                        are the same, 1 when they differ\n"
        "      --estimate        the memory qwen-run needs to run each FILE (weights,\n"
        "                        key/value cache, buffers) at these settings, and\n"
        "                        llama.cpp's key/value cache at the same:\n"
        "  -c, --ctx-size=N        positions per conversation (qwen-run -c; default\n"
        "                          4096, or the model's context when shorter)\n"
        "      --parallel=N        conversations at once (qwen-run --each-line\n"
        "                          --parallel N; default 1)\n"
        "  -t, --threads=N         threads (qwen-run -t; default as qwen-run's)\n"
        "      --kv-type=TYPE      f16 (default) or q8_0: llama.cpp's cache type\n"
        "      --shard           show each FILE alone, also when it is a shard of a\n"
        "                        split set (by default a shard's whole set is shown\n"
        "                        as one model)\n"
        "  -h, --help            show this help and exit\n"
        "  -V, --version         show the version and exit\n"
        "\n"
        "Exit status: 0 success, 1 a key given with -k is absent (or, with --diff,\n"
        "the files differ), 2 trouble\n"
        "(an invalid or unreadable file, a file that shrinks while it is read, a\n"
        "usage error, a write error, a tensor of --values that is absent, or data\n"
        "that cannot be dequantized).\n",
        cli_prog);
}

/* ------------------------------------------------------------------------ */
/* Summary data                                                              */

/* Per tensor type: counts over the whole file (filters do not apply). */
struct type_stat {
    uint64_t tensors, params, bytes;
};

struct summary {
    struct type_stat by_type[GGUF_T_COUNT + 1];   /* last slot: unknown ids */
    uint64_t params, bytes;
    int have_file_type;
    uint64_t file_type;
    gguf_str arch;              /* general.architecture, or {NULL, 0} */
};

/* Fills s from all tensors of the set and the general.* keys of its first
 * shard. */
static void compute_summary(const gguf_split *set, struct summary *s)
{
    memset(s, 0, sizeof *s);
    const gguf_file *f = gguf_split_shard(set, 0);
    uint64_t n = gguf_split_tensor_count(set);
    for (uint64_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_split_tensor_at(set, i, NULL);
        if (!t) continue;
        struct type_stat *st = &s->by_type[t->type < GGUF_T_COUNT ? t->type : GGUF_T_COUNT];
        st->tensors++;
        st->params += t->n_elements;
        st->bytes += t->size;
        s->params += t->n_elements;
        s->bytes += t->size;
    }
    s->have_file_type = gguf_kv_uint(f, "general.file_type", &s->file_type, NULL) == GGUF_OK;
    if (gguf_kv_str(f, "general.architecture", &s->arch, NULL) != GGUF_OK) {
        s->arch.ptr = NULL;
        s->arch.len = 0;
    }
}

/* 1 when `key` is a hyperparameter of architecture `arch`: it starts with
 * the architecture name and a dot. */
static int is_hparam(const gguf_str *key, const gguf_str *arch)
{
    return arch->ptr && key->len > arch->len + 1 && memcmp(key->ptr, arch->ptr, arch->len) == 0 &&
           key->ptr[arch->len] == '.';
}

/* Name of tensor type id `type`, or NULL when libgguf does not know it. */
static const char *type_name_or_null(uint32_t type)
{
    return type < GGUF_T_COUNT ? gguf_type_str(type) : NULL;
}

/* ------------------------------------------------------------------------ */
/* Text view                                                                 */

/* "1.54 B"-style rendering of a count. */
static void put_human_count(uint64_t n)
{
    if (n >= 1000000000ull)
        cli_out_printf(out, "%.2f B", n / 1e9);
    else if (n >= 1000000ull)
        cli_out_printf(out, "%.2f M", n / 1e6);
    else if (n >= 1000ull)
        cli_out_printf(out, "%.2f K", n / 1e3);
    else
        cli_out_u64(out, n);
}

/* "2.88 GiB"-style rendering of a byte count. */
static void put_human_bytes(uint64_t n)
{
    if (n >= (1ull << 30))
        cli_out_printf(out, "%.2f GiB", n / (double)(1ull << 30));
    else if (n >= (1ull << 20))
        cli_out_printf(out, "%.2f MiB", n / (double)(1ull << 20));
    else if (n >= (1ull << 10))
        cli_out_printf(out, "%.2f KiB", n / (double)(1ull << 10));
    else
        cli_out_printf(out, "%llu B", (unsigned long long)n);
}

/* The header line: "FILE: GGUF v3, little-endian, ...". */
/* The bytes of all the shards of a set. */
static uint64_t set_size(const gguf_split *set)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < gguf_split_count(set); i++) n += gguf_file_size(gguf_split_shard(set, i));
    return n;
}

/* The facts of a shard that a set's views show, in their order: the JSON
 * keys, the text columns' widths and the values. */
#define N_SHARD_FACTS 6
static const char *const shard_keys[N_SHARD_FACTS] = {"version", "kv_count", "tensor_count",
                                                      "alignment", "data_offset", "file_size"};
static const int shard_widths[N_SHARD_FACTS] = {7, 15, 7, 9, 11, 12};

static void shard_facts(const gguf_file *g, uint64_t *v)
{
    v[0] = gguf_version(g);
    v[1] = gguf_kv_count(g);
    v[2] = gguf_tensor_count(g);
    v[3] = gguf_alignment(g);
    v[4] = gguf_data_offset(g);
    v[5] = gguf_file_size(g);
}

/* That of a set: for a split set of several shards, a line for the set
 * and one for each shard. */
static void text_header(const gguf_split *set, const char *path)
{
    const gguf_file *f = gguf_split_shard(set, 0);
    const uint32_t ns = gguf_split_count(set);
    uint64_t nkv = gguf_kv_count(f), nt = gguf_split_tensor_count(set);
    if (ns == 1) {
        dump_file_line(out, f);
        return;
    }
    cli_out_text_str(out, path, strlen(path), 0);
    cli_out_printf(out,
                   ": split set of %u shards, GGUF v%u, %s-endian, %llu key/value pair%s (first "
                   "shard), %llu tensor%s, size %llu\n",
                   ns, gguf_version(f), gguf_byte_order(f) == GGUF_BIG_ENDIAN ? "big" : "little",
                   (unsigned long long)nkv, nkv == 1 ? "" : "s", (unsigned long long)nt, nt == 1 ? "" : "s",
                   (unsigned long long)set_size(set));
    size_t name_w = 4;
    for (uint32_t i = 0; i < ns; i++) {
        const char *p = gguf_split_path(set, i);
        size_t w = cli_text_width(p, strlen(p));
        if (w > name_w) name_w = w;
    }
    int idx_w = dump_digits(ns) < 3 ? 3 : dump_digits(ns);
    cli_out_str(out, "\nshards:\n");
    cli_out_pad(out, idx_w - 1);
    cli_out_str(out, "#  file");
    cli_out_pad(out, (long)name_w - 4 + 2);
    cli_out_str(out, "version  key/value pairs  tensors  alignment  data offset          size\n");
    for (uint32_t i = 0; i < ns; i++) {
        const gguf_file *g = gguf_split_shard(set, i);
        const char *p = gguf_split_path(set, i);
        cli_out_u64_w(out, (uint64_t)i + 1, idx_w);
        cli_out_str(out, "  ");
        cli_out_text_str(out, p, strlen(p), 0);
        cli_out_pad(out, (long)(name_w - cli_text_width(p, strlen(p))) + 2);
        uint64_t v[N_SHARD_FACTS];
        shard_facts(g, v);
        for (int k = 0; k < N_SHARD_FACTS; k++) {
            cli_out_u64_w(out, v[k], shard_widths[k]);
            cli_out_str(out, k + 1 < N_SHARD_FACTS ? "  " : "\n");
        }
    }
}

/* The metadata section of the text view: a heading and one line per pair
 * (matching --keys), in columns sized by a first pass over the pairs. */
static void text_kvs(const gguf_file *f, const struct options *o)
{
    uint64_t n = gguf_kv_count(f), shown = 0;
    size_t type_w = 4, count_w = 5;
    /* First pass: what is shown, and the column widths. */
    for (uint64_t i = 0; i < n; i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (!kv || (o->keys_glob && !cli_glob_match(o->keys_glob, kv->key.ptr, kv->key.len)))
            continue;
        shown++;
        size_t w = value_vtype_width(&kv->value);
        if (w > type_w) type_w = w;
        if (kv->value.type == GGUF_VT_ARRAY && (size_t)dump_digits(kv->value.count) > count_w)
            count_w = (size_t)dump_digits(kv->value.count);
    }
    int idx_w = dump_digits(n ? n - 1 : 0);
    if (idx_w < 3) idx_w = 3;

    cli_out_str(out, "\nmetadata:");
    if (o->keys_glob) {
        cli_out_str(out, " ");
        cli_out_u64(out, shown);
        cli_out_str(out, " of ");
    } else {
        cli_out_str(out, " ");
    }
    cli_out_u64(out, n);
    cli_out_str(out, n == 1 ? " key/value pair" : " key/value pairs");
    if (o->keys_glob) {
        cli_out_str(out, " match ");
        cli_out_text_str(out, o->keys_glob, strlen(o->keys_glob), 1);
    }
    cli_out_putc(out, '\n');
    if (!shown) return;

    cli_out_pad(out, idx_w - 1);
    cli_out_str(out, "#  type");
    cli_out_pad(out, (long)type_w - 4 + 2 + (long)count_w - 5);
    cli_out_str(out, "count  key = value\n");
    for (uint64_t i = 0; i < n && !cli_out_failed(out); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (!kv || (o->keys_glob && !cli_glob_match(o->keys_glob, kv->key.ptr, kv->key.len)))
            continue;
        const gguf_value *v = &kv->value;
        cli_out_u64_w(out, i, idx_w);
        cli_out_str(out, "  ");
        value_put_vtype(out, v, 1);
        cli_out_pad(out, (long)(type_w - value_vtype_width(v)) + 2);
        if (v->type == GGUF_VT_ARRAY)
            cli_out_u64_w(out, v->count, (int)count_w);
        else
            cli_out_pad(out, (long)count_w);
        cli_out_str(out, "  ");
        dump_put_name(out, kv->key);
        cli_out_str(out, " = ");
        long budget = VALUE_PREVIEW_ELEMENTS;
        value_put_text(out, v, o->full ? NULL : &budget);
        cli_out_putc(out, '\n');
    }
}

/* The tensor directory of the text view, one line per tensor (matching
 * --tensors), in columns sized by a first pass over the tensors. */
static void text_tensors(const gguf_split *set, const struct options *o)
{
    uint64_t n = gguf_split_tensor_count(set), shown = 0;
    const int by_shard = gguf_split_count(set) > 1;
    uint32_t shard;
    size_t name_w = 4, type_w = 4, dims_w = 4;
    int off_w = 6, bytes_w = 5;
    char dims[96];
    for (uint64_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_split_tensor_at(set, i, NULL);
        if (!t || (o->tensors_glob && !cli_glob_match(o->tensors_glob, t->name.ptr, t->name.len)))
            continue;
        shown++;
        size_t w = cli_text_width(t->name.ptr, t->name.len);
        if (w > name_w) name_w = w;
        const char *tn = type_name_or_null(t->type);
        w = tn ? strlen(tn) : (size_t)dump_digits(t->type) + 5;
        if (w > type_w) type_w = w;
        w = dump_fmt_dims(dims, t);
        if (w > dims_w) dims_w = w;
        if (dump_digits(t->file_offset) > off_w) off_w = dump_digits(t->file_offset);
        if (dump_digits(t->size) > bytes_w) bytes_w = dump_digits(t->size);
    }
    int idx_w = dump_digits(n ? n - 1 : 0);
    if (idx_w < 3) idx_w = 3;

    cli_out_str(out, "\ntensors: ");
    if (o->tensors_glob) {
        cli_out_u64(out, shown);
        cli_out_str(out, " of ");
    }
    cli_out_u64(out, n);
    if (o->tensors_glob) {
        cli_out_str(out, " match ");
        cli_out_text_str(out, o->tensors_glob, strlen(o->tensors_glob), 1);
    }
    cli_out_putc(out, '\n');
    if (!shown) return;

    cli_out_pad(out, idx_w - 1);
    cli_out_str(out, "#  name");
    cli_out_pad(out, (long)name_w - 4 + 2);
    cli_out_str(out, "type");
    cli_out_pad(out, (long)type_w - 4 + 2);
    cli_out_str(out, "dims");
    cli_out_pad(out, (long)dims_w - 4 + 2 + off_w - 6);
    cli_out_str(out, "offset");
    cli_out_pad(out, 2 + bytes_w - 5);
    cli_out_str(out, by_shard ? "bytes  shard\n" : "bytes\n");
    for (uint64_t i = 0; i < n && !cli_out_failed(out); i++) {
        const gguf_tensor *t = gguf_split_tensor_at(set, i, &shard);
        if (!t || (o->tensors_glob && !cli_glob_match(o->tensors_glob, t->name.ptr, t->name.len)))
            continue;
        cli_out_u64_w(out, i, idx_w);
        cli_out_str(out, "  ");
        dump_put_name(out, t->name);
        cli_out_pad(out, (long)(name_w - cli_text_width(t->name.ptr, t->name.len)) + 2);
        const char *tn = type_name_or_null(t->type);
        size_t tw;
        if (tn) {
            cli_out_str(out, tn);
            tw = strlen(tn);
        } else {
            cli_out_str(out, "type#");
            cli_out_u64(out, t->type);
            tw = (size_t)dump_digits(t->type) + 5;
        }
        cli_out_pad(out, (long)(type_w - tw) + 2);
        size_t dl = dump_fmt_dims(dims, t);
        cli_out_write(out, dims, dl);
        cli_out_pad(out, (long)(dims_w - dl) + 2);
        cli_out_u64_w(out, t->file_offset, off_w);
        cli_out_str(out, "  ");
        cli_out_u64_w(out, t->size, bytes_w);
        if (by_shard) {
            cli_out_str(out, "  ");
            cli_out_u64_w(out, (uint64_t)shard + 1, 5);
        }
        cli_out_putc(out, '\n');
    }
}

/* part/whole as " 12.34%" (7 columns), or "-" when whole is 0. */
static void put_percent(uint64_t part, uint64_t whole)
{
    if (whole)
        cli_out_printf(out, "%6.2f%%", 100.0 * (double)part / (double)whole);
    else
        cli_out_str(out, "      -");
}

/* Bits per weight with two decimals, or "-" without parameters. */
static void put_bpw(uint64_t bytes, uint64_t params)
{
    if (params)
        cli_out_printf(out, "%.2f", 8.0 * (double)bytes / (double)params);
    else
        cli_out_str(out, "-");
}

/* The summary section: totals, file type, the per-type table and the
 * architecture hyperparameters (shortened like the metadata values). */
static void text_summary(const gguf_file *f, const struct summary *s)
{
    cli_out_str(out, "\nsummary:\n  parameters:   ");
    cli_out_u64(out, s->params);
    if (s->params >= 1000) {
        cli_out_str(out, " (");
        put_human_count(s->params);
        cli_out_putc(out, ')');
    }
    cli_out_str(out, "\n  bytes:        ");
    cli_out_u64(out, s->bytes);
    if (s->bytes >= 1024) {
        cli_out_str(out, " (");
        put_human_bytes(s->bytes);
        cli_out_putc(out, ')');
    }
    cli_out_str(out, "\n  bits/weight:  ");
    put_bpw(s->bytes, s->params);
    cli_out_str(out, "\n  file type:    ");
    if (s->have_file_type) {
        const char *ftn = s->file_type <= UINT32_MAX ? gguf_file_type_name((uint32_t)s->file_type)
                                                     : NULL;
        cli_out_str(out, ftn ? ftn : "unknown");
        cli_out_str(out, " (general.file_type = ");
        cli_out_u64(out, s->file_type);
        cli_out_putc(out, ')');
    } else {
        cli_out_str(out, "not set");
    }
    cli_out_putc(out, '\n');

    /* Per-type table. */
    int any = 0;
    for (int t = 0; t <= GGUF_T_COUNT; t++) any |= s->by_type[t].tensors != 0;
    if (any) {
        int tn_w = 4, cnt_w = 7, par_w = 10, byt_w = 5;
        for (int t = 0; t <= GGUF_T_COUNT; t++) {
            const struct type_stat *st = &s->by_type[t];
            if (!st->tensors) continue;
            const char *tn = t < GGUF_T_COUNT ? gguf_type_str((uint32_t)t) : "other";
            if ((int)strlen(tn ? tn : "other") > tn_w) tn_w = (int)strlen(tn ? tn : "other");
            if (dump_digits(st->params) > par_w) par_w = dump_digits(st->params);
            if (dump_digits(st->bytes) > byt_w) byt_w = dump_digits(st->bytes);
        }
        cli_out_str(out, "  by type:\n    type");
        cli_out_pad(out, tn_w - 4 + 2);
        cli_out_str(out, "tensors");
        cli_out_pad(out, 2 + par_w - 10);
        cli_out_str(out, "parameters   share");
        cli_out_pad(out, 2 + byt_w - 5);
        cli_out_str(out, "bytes   share    bpw\n");
        for (int t = 0; t <= GGUF_T_COUNT; t++) {
            const struct type_stat *st = &s->by_type[t];
            if (!st->tensors) continue;
            const char *tn = t < GGUF_T_COUNT ? gguf_type_str((uint32_t)t) : NULL;
            if (!tn) tn = "other";
            cli_out_str(out, "    ");
            cli_out_str(out, tn);
            cli_out_pad(out, tn_w - (long)strlen(tn) + 2);
            cli_out_u64_w(out, st->tensors, cnt_w);
            cli_out_str(out, "  ");
            cli_out_u64_w(out, st->params, par_w);
            cli_out_str(out, " ");
            put_percent(st->params, s->params);
            cli_out_str(out, "  ");
            cli_out_u64_w(out, st->bytes, byt_w);
            cli_out_str(out, " ");
            put_percent(st->bytes, s->bytes);
            cli_out_str(out, "  ");
            char bpw[32];
            if (st->params)
                snprintf(bpw, sizeof bpw, "%.2f", 8.0 * (double)st->bytes / (double)st->params);
            else
                strcpy(bpw, "-");
            cli_out_pad(out, 5 - (long)strlen(bpw));
            cli_out_str(out, bpw);
            cli_out_putc(out, '\n');
        }
    }

    /* Hyperparameters: the <arch>.* keys, in file order. */
    if (!s->arch.ptr) {
        cli_out_str(out, "  architecture: not set\n");
        return;
    }
    cli_out_str(out, "  hyperparameters (");
    dump_put_name(out, s->arch);
    cli_out_str(out, "):\n");
    uint64_t n = gguf_kv_count(f);
    for (uint64_t i = 0; i < n; i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (!kv || !is_hparam(&kv->key, &s->arch)) continue;
        cli_out_str(out, "    ");
        dump_put_name(out, kv->key);
        cli_out_str(out, " = ");
        long budget = VALUE_PREVIEW_ELEMENTS;
        value_put_text(out, &kv->value, &budget);
        cli_out_putc(out, '\n');
    }
}

/* The whole text view of one file, or of a split set (the metadata of its
 * first shard). */
static void dump_text(const gguf_split *set, const char *path, const struct options *o)
{
    const gguf_file *f = gguf_split_shard(set, 0);
    text_header(set, path);
    if (!o->no_kv) text_kvs(f, o);
    if (!o->no_tensors) text_tensors(set, o);
    if (!o->no_summary) {
        struct summary s;
        compute_summary(set, &s);
        text_summary(f, &s);
    }
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                      */

/* Starts an object member: indent, the quoted key (plain ASCII), ": ". */
static void json_key(const char *indent, const char *key)
{
    cli_out_str(out, indent);
    cli_out_putc(out, '"');
    cli_out_str(out, key);
    cli_out_str(out, "\": ");
}

/* A whole integer member followed by ",\n". */
static void json_u64_member(const char *indent, const char *key, uint64_t v)
{
    json_key(indent, key);
    cli_out_u64(out, v);
    cli_out_str(out, ",\n");
}

/* A ratio computed by the tool (not a value from the file), rounded to 6
 * significant digits; null when the denominator is 0. */
static void json_ratio(double num, double den)
{
    if (den == 0)
        cli_out_str(out, "null");
    else
        cli_out_printf(out, "%.6g", num / den);
}

/* The "kv" member: the pairs matching --keys, values complete. */
static void json_kvs(const gguf_file *f, const struct options *o)
{
    uint64_t n = gguf_kv_count(f);
    int first = 1;
    cli_out_str(out, ",\n  \"kv\": [");
    for (uint64_t i = 0; i < n && !cli_out_failed(out); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (!kv || (o->keys_glob && !cli_glob_match(o->keys_glob, kv->key.ptr, kv->key.len)))
            continue;
        const gguf_value *v = &kv->value;
        cli_out_str(out, first ? "\n    {\"index\": " : ",\n    {\"index\": ");
        first = 0;
        cli_out_u64(out, i);
        cli_out_str(out, ", \"key\": ");
        cli_out_json_str(out, kv->key.ptr, kv->key.len);
        cli_out_str(out, ", \"type\": \"");
        value_put_vtype(out, v, 0);
        if (v->type == GGUF_VT_ARRAY) {
            const char *en = gguf_vtype_name(v->elem_type);
            cli_out_str(out, "\", \"element_type\": \"");
            cli_out_str(out, en ? en : "?");
            cli_out_str(out, "\", \"count\": ");
            cli_out_u64(out, v->count);
            cli_out_str(out, ", \"value\": ");
        } else {
            cli_out_str(out, "\", \"value\": ");
        }
        value_put_json(out, v);
        cli_out_putc(out, '}');
    }
    cli_out_str(out, first ? "]" : "\n  ]");
}

/* The "tensors" member: the tensors matching --tensors. */
static void json_tensors(const gguf_split *set, const struct options *o)
{
    uint64_t n = gguf_split_tensor_count(set);
    const int by_shard = gguf_split_count(set) > 1;
    uint32_t shard;
    int first = 1;
    cli_out_str(out, ",\n  \"tensors\": [");
    for (uint64_t i = 0; i < n && !cli_out_failed(out); i++) {
        const gguf_tensor *t = gguf_split_tensor_at(set, i, &shard);
        if (!t || (o->tensors_glob && !cli_glob_match(o->tensors_glob, t->name.ptr, t->name.len)))
            continue;
        cli_out_str(out, first ? "\n    {\"index\": " : ",\n    {\"index\": ");
        first = 0;
        cli_out_u64(out, i);
        cli_out_str(out, ", \"name\": ");
        cli_out_json_str(out, t->name.ptr, t->name.len);
        const char *tn = type_name_or_null(t->type);
        cli_out_str(out, ", \"type\": ");
        dump_json_type(out, tn);
        cli_out_str(out, ", \"type_id\": ");
        cli_out_u64(out, t->type);
        char dims[96];
        dump_fmt_dims(dims, t);
        cli_out_str(out, ", \"dims\": ");
        cli_out_str(out, dims); /* "[a, b]" is also a JSON array */
        cli_out_str(out, ", \"elements\": ");
        cli_out_u64(out, t->n_elements);
        cli_out_str(out, ", \"offset\": ");
        cli_out_u64(out, t->file_offset);
        cli_out_str(out, ", \"relative_offset\": ");
        cli_out_u64(out, t->offset);
        cli_out_str(out, ", \"bytes\": ");
        cli_out_u64(out, t->size);
        if (by_shard) {
            cli_out_str(out, ", \"shard\": ");
            cli_out_u64(out, (uint64_t)shard + 1);
        }
        cli_out_putc(out, '}');
    }
    cli_out_str(out, first ? "]" : "\n  ]");
}

/* The "summary" member; the same facts as the text summary. */
static void json_summary(const gguf_file *f, const struct summary *s)
{
    cli_out_str(out, ",\n  \"summary\": {\n");
    json_u64_member("    ", "parameters", s->params);
    json_u64_member("    ", "bytes", s->bytes);
    json_key("    ", "bits_per_weight");
    json_ratio(8.0 * (double)s->bytes, (double)s->params);
    cli_out_str(out, ",\n");
    json_key("    ", "file_type");
    if (s->have_file_type)
        cli_out_u64(out, s->file_type);
    else
        cli_out_str(out, "null");
    cli_out_str(out, ",\n");
    json_key("    ", "file_type_name");
    const char *ftn = s->have_file_type && s->file_type <= UINT32_MAX
                          ? gguf_file_type_name((uint32_t)s->file_type) : NULL;
    if (ftn) {
        cli_out_putc(out, '"');
        cli_out_str(out, ftn);
        cli_out_putc(out, '"');
    } else {
        cli_out_str(out, "null");
    }
    cli_out_str(out, ",\n");
    json_key("    ", "types");
    cli_out_putc(out, '[');
    int first = 1;
    for (int t = 0; t <= GGUF_T_COUNT; t++) {
        const struct type_stat *st = &s->by_type[t];
        if (!st->tensors) continue;
        const char *tn = t < GGUF_T_COUNT ? gguf_type_str((uint32_t)t) : NULL;
        cli_out_str(out, first ? "\n      {\"type\": " : ",\n      {\"type\": ");
        first = 0;
        dump_json_type(out, tn);
        cli_out_str(out, ", \"tensors\": ");
        cli_out_u64(out, st->tensors);
        cli_out_str(out, ", \"parameters\": ");
        cli_out_u64(out, st->params);
        cli_out_str(out, ", \"bytes\": ");
        cli_out_u64(out, st->bytes);
        cli_out_str(out, ", \"parameter_share\": ");
        json_ratio((double)st->params, (double)s->params);
        cli_out_str(out, ", \"byte_share\": ");
        json_ratio((double)st->bytes, (double)s->bytes);
        cli_out_str(out, ", \"bits_per_weight\": ");
        json_ratio(8.0 * (double)st->bytes, (double)st->params);
        cli_out_putc(out, '}');
    }
    cli_out_str(out, first ? "],\n" : "\n    ],\n");
    json_key("    ", "architecture");
    if (s->arch.ptr)
        cli_out_json_str(out, s->arch.ptr, s->arch.len);
    else
        cli_out_str(out, "null");
    cli_out_str(out, ",\n");
    json_key("    ", "hyperparameters");
    cli_out_putc(out, '{');
    first = 1;
    uint64_t n = gguf_kv_count(f);
    for (uint64_t i = 0; i < n && s->arch.ptr; i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (!kv || !is_hparam(&kv->key, &s->arch)) continue;
        cli_out_str(out, first ? "\n      " : ",\n      ");
        first = 0;
        cli_out_json_str(out, kv->key.ptr, kv->key.len);
        cli_out_str(out, ": ");
        value_put_json(out, &kv->value);
    }
    cli_out_str(out, first ? "}\n  }" : "\n    }\n  }");
}

/* One file as a JSON object (without a final newline); member order is
 * part of the documented format. */
static void dump_json(const gguf_split *set, const char *path, const struct options *o)
{
    const gguf_file *f = gguf_split_shard(set, 0);
    const uint32_t ns = gguf_split_count(set);
    const char *name = ns > 1 ? path : gguf_name(f);
    cli_out_str(out, "{\n  \"file\": ");
    cli_out_json_str(out, name, strlen(name));
    cli_out_str(out, ",\n");
    json_u64_member("  ", "version", gguf_version(f));
    json_key("  ", "byte_order");
    cli_out_str(out, gguf_byte_order(f) == GGUF_BIG_ENDIAN ? "\"big\",\n" : "\"little\",\n");
    json_u64_member("  ", "file_size", set_size(set));
    json_u64_member("  ", "kv_count", gguf_kv_count(f));
    json_u64_member("  ", "tensor_count", gguf_split_tensor_count(set));
    json_u64_member("  ", "alignment", gguf_alignment(f));
    json_key("  ", "data_offset");
    cli_out_u64(out, gguf_data_offset(f));
    if (ns > 1) {
        cli_out_str(out, ",\n  \"split_count\": ");
        cli_out_u64(out, ns);
        cli_out_str(out, ",\n  \"shards\": [");
        for (uint32_t i = 0; i < ns; i++) {
            const gguf_file *g = gguf_split_shard(set, i);
            const char *p = gguf_split_path(set, i);
            cli_out_str(out, i ? ",\n    {\"shard\": " : "\n    {\"shard\": ");
            cli_out_u64(out, (uint64_t)i + 1);
            cli_out_str(out, ", \"file\": ");
            cli_out_json_str(out, p, strlen(p));
            uint64_t v[N_SHARD_FACTS];
            shard_facts(g, v);
            for (int k = 0; k < N_SHARD_FACTS; k++) {
                cli_out_str(out, ", \"");
                cli_out_str(out, shard_keys[k]);
                cli_out_str(out, "\": ");
                cli_out_u64(out, v[k]);
            }
            cli_out_putc(out, '}');
        }
        cli_out_str(out, "\n  ]");
    }
    if (!o->no_kv) json_kvs(f, o);
    if (!o->no_tensors) json_tensors(set, o);
    if (!o->no_summary) {
        struct summary s;
        compute_summary(set, &s);
        json_summary(f, &s);
    }
    cli_out_str(out, "\n}");
}

/* ------------------------------------------------------------------------ */
/* -k                                                                        */

/* Prints the values of the -k keys of one file.  Returns CLI_EXIT_OK, or
 * CLI_EXIT_NEGATIVE when a key is absent (after reporting it). */
static int dump_keys(const gguf_file *f, const struct options *o)
{
    int status = CLI_EXIT_OK;
    for (size_t i = 0; i < o->n_keys && !cli_out_failed(out); i++) {
        const gguf_kv *kv = gguf_kv_find(f, o->keys[i]);
        if (!kv) {
            cli_error(gguf_name(f), "key '%s' not found", o->keys[i]);
            status = CLI_EXIT_NEGATIVE;
            continue;
        }
        if (o->json) {
            value_put_json(out, &kv->value);
            cli_out_putc(out, '\n');
        } else {
            value_put_raw(out, &kv->value, raw_to_tty);
        }
    }
    return status;
}

/* ------------------------------------------------------------------------ */

enum { OPT_KEYS = 256, OPT_TENSORS, OPT_NO_KV, OPT_NO_TENSORS, OPT_NO_SUMMARY, OPT_VALUES,
       OPT_STATS, OPT_SHARD, OPT_DIFF, OPT_ESTIMATE, OPT_PARALLEL, OPT_KV_TYPE };

static const struct option long_options[] = {
    { "json", no_argument, NULL, 'j' },
    { "key", required_argument, NULL, 'k' },
    { "keys", required_argument, NULL, OPT_KEYS },
    { "tensors", required_argument, NULL, OPT_TENSORS },
    { "no-kv", no_argument, NULL, OPT_NO_KV },
    { "no-tensors", no_argument, NULL, OPT_NO_TENSORS },
    { "no-summary", no_argument, NULL, OPT_NO_SUMMARY },
    { "values", required_argument, NULL, OPT_VALUES },
    { "stats", no_argument, NULL, OPT_STATS },
    { "shard", no_argument, NULL, OPT_SHARD },
    { "diff", no_argument, NULL, OPT_DIFF },
    { "estimate", no_argument, NULL, OPT_ESTIMATE },
    { "ctx-size", required_argument, NULL, 'c' },
    { "parallel", required_argument, NULL, OPT_PARALLEL },
    { "threads", required_argument, NULL, 't' },
    { "kv-type", required_argument, NULL, OPT_KV_TYPE },
    { "full", no_argument, NULL, 'f' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 }
};

/* A count 1 .. max in *v.  Returns 0, or -1 for anything else. */
static int parse_count(const char *s, uint32_t max, uint32_t *v)
{
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9') return -1;
    unsigned long long n = strtoull(s, &end, 10);
    if (errno || *end || n < 1 || n > max) return -1;
    *v = (uint32_t)n;
    return 0;
}

/* Parses the command line into *o (o->keys must have room for argc
 * entries).  Returns -1 to go on, or the exit status for main to return
 * at once (after --help, --version or a usage error). */
static int parse_options(int argc, char **argv, struct options *o)
{
    opterr = 0;         /* messages of our own, with our program name */
    int c;
    while ((c = getopt_long(argc, argv, ":jk:fc:t:hV", long_options, NULL)) != -1) {
        switch (c) {
        case 'j': o->json = 1; break;
        case 'k': o->keys[o->n_keys++] = optarg; break;
        case 'f': o->full = 1; break;
        case OPT_KEYS: o->keys_glob = optarg; break;
        case OPT_TENSORS: o->tensors_glob = optarg; break;
        case OPT_NO_KV: o->no_kv = 1; break;
        case OPT_NO_TENSORS: o->no_tensors = 1; break;
        case OPT_NO_SUMMARY: o->no_summary = 1; break;
        case OPT_VALUES:
            if (dump_parse_values(optarg, &o->values[o->n_values]) != 0)
                return cli_usage_error("invalid --values argument '%s'", optarg);
            o->n_values++;
            break;
        case OPT_STATS: o->stats = 1; break;
        case OPT_SHARD: o->shard = 1; break;
        case OPT_DIFF: o->diff = 1; break;
        case OPT_ESTIMATE: o->estimate = 1; break;
        case 'c':
            if (parse_count(optarg, QWEN_MAX_CTX, &o->est.n_ctx))
                return cli_usage_error("-c: not a number of positions (1..%u): '%s'", QWEN_MAX_CTX,
                                       optarg);
            o->est_opts = 1;
            break;
        case OPT_PARALLEL:
            if (parse_count(optarg, QWEN_MAX_SEQ, &o->est.n_seq))
                return cli_usage_error("--parallel: not a number of conversations (1..%u): '%s'",
                                       QWEN_MAX_SEQ, optarg);
            o->est_opts = 1;
            break;
        case 't': {
            uint32_t n;
            if (parse_count(optarg, QWEN_MAX_THREADS, &n))
                return cli_usage_error("-t: not a number of threads (1..%d): '%s'",
                                       QWEN_MAX_THREADS, optarg);
            o->est.n_threads = (int)n;
            o->est_opts = 1;
            break;
        }
        case OPT_KV_TYPE:
            if (strcmp(optarg, "f16") != 0 && strcmp(optarg, "q8_0") != 0)
                return cli_usage_error("--kv-type: f16 or q8_0, not '%s'", optarg);
            o->est.kv_q8_0 = strcmp(optarg, "q8_0") == 0;
            o->est_opts = 1;
            break;
        default:        /* -h, -V, usage errors */
            return cli_getopt_default(c, argv, usage);
        }
    }
    if (o->est_opts && !o->estimate)
        return cli_usage_error("-c, --parallel, -t and --kv-type go with --estimate");
    if (o->estimate) {
        if (o->diff || o->n_keys || o->n_values || o->stats || o->keys_glob || o->tensors_glob ||
            o->no_kv || o->no_tensors || o->no_summary || o->full)
            return cli_usage_error("--estimate takes -c, --parallel, -t, --kv-type, --json and "
                                   "--shard only");
    }
    if (o->diff) {
        if (o->n_keys || o->n_values || o->stats || o->keys_glob || o->tensors_glob || o->no_kv ||
            o->no_tensors || o->no_summary || o->full)
            return cli_usage_error("--diff takes --json and --shard only");
        if (argc - optind != 2) return cli_usage_error("--diff needs two files, A and B");
        return -1;
    }
    if (o->n_keys && (o->n_values || o->stats))
        return cli_usage_error("-k cannot be combined with --values or --stats");
    if (o->n_values && o->stats)
        return cli_usage_error("--values and --stats cannot be combined");
    if (optind == argc && cli_isatty(0))
        return cli_usage_error("no FILE given and standard input is a terminal");
    return -1;
}

/* Reports a file that could not be opened (in the JSON array, an entry
 * of its own). */
static void open_failed(const char *path, gguf_error *err, int rc, int json_array)
{
    if (!err->message[0]) snprintf(err->message, sizeof err->message, "%s: %s", path, gguf_strerror(rc));
    cli_message(err->message);
    if (json_array) {
        cli_out_str(out, "{\"file\": ");
        cli_out_json_str(out, path, strlen(path));
        cli_out_str(out, ", \"error\": ");
        cli_out_json_str(out, err->message, strlen(err->message));
        cli_out_putc(out, '}');
    }
}

/* --values or --stats of one file (a shard, or a file alone), with the
 * --values requests of o.  *dumped counts the outputs so far. */
static int dump_data(gguf_file *f, const struct options *o, int json_array, int *dumped)
{
    if (json_array && *dumped) cli_out_str(out, ",\n");
    if (o->stats && !o->json && *dumped) cli_out_putc(out, '\n');
    int st = o->stats ? dump_stats(out, f, o->tensors_glob, o->json)
                     : dump_values(out, f, o->values, o->n_values, o->json);
    if (o->json && !json_array) cli_out_putc(out, '\n');
    (*dumped)++;
    return st;
}

/* --values or --stats of a split set of several shards: each shard in
 * turn, as if named alone, with the --values requests for the tensors it
 * holds (a tensor in none is an error of the set). */
static int dump_set_data(const gguf_split *set, const char *path, const struct options *o,
                         int json_array, int *dumped)
{
    int status = CLI_EXIT_OK;
    struct options so = *o;
    so.values = calloc(o->n_values ? o->n_values : 1, sizeof *so.values);
    if (!so.values) {
        cli_error(path, "out of memory");
        return CLI_EXIT_TROUBLE;
    }
    for (size_t i = 0; i < o->n_values; i++)
        if (!gguf_split_tensor_find(set, o->values[i].name, NULL)) {
            cli_error(path, "tensor '%s' not found in the %u shards", o->values[i].name,
                      gguf_split_count(set));
            status = CLI_EXIT_TROUBLE;
        }
    for (uint32_t sh = 0; sh < gguf_split_count(set) && !cli_out_failed(out); sh++) {
        gguf_file *f = gguf_split_shard(set, sh);
        so.n_values = 0;
        for (size_t i = 0; i < o->n_values; i++)
            if (gguf_tensor_find(f, o->values[i].name)) so.values[so.n_values++] = o->values[i];
        if (o->n_values && !so.n_values) continue;
        int st = dump_data(f, &so, json_array, dumped);
        if (st > status) status = st;
        cli_out_flush(out);
    }
    free(so.values);
    return status;
}

/* Shows each file (or the split set it is a shard of) in turn as the
 * options ask.  Returns the worst status of the files: 0 shown, 1 a -k key
 * absent, 2 trouble. */
static int dump_files(char **files, int n_files, const struct options *o)
{
    const int data = o->n_values || o->stats;
    /* Several files in JSON: one array holding an object per file; also
     * for --values and --stats of a split set, an object per shard. */
    int json_array = o->json && !o->n_keys && n_files > 1;
    for (int i = 0; i < n_files && data && !o->shard; i++) {
        uint32_t count = 1;
        if (gguf_split_prefix(files[i], NULL, &count) && count > 1) json_array = o->json;
    }
    int status = CLI_EXIT_OK;
    int dumped = 0;             /* files shown so far, for separators */
    if (json_array) cli_out_str(out, "[\n");
    for (int i = 0; i < n_files && !cli_out_failed(out); i++) {
        gguf_split *set = NULL;
        gguf_error err;
        err.message[0] = '\0';
        /* --values and --stats read tensor data: from a stream, in offset
         * order after the header. */
        unsigned flags = data ? GGUF_OPEN_SEQUENTIAL : 0;
        int rc;
        if (o->shard || strcmp(files[i], "-") == 0) {
            rc = guard_split_open_alone(&set, files[i], flags, &err);
        } else {
            rc = guard_split_open(&set, files[i], flags, &err);
        }
        if (rc != GGUF_OK) {
            if (json_array && dumped) cli_out_str(out, ",\n");   /* failures get an entry too */
            open_failed(files[i], &err, rc, json_array);
            status = CLI_EXIT_TROUBLE;
            dumped++;
            continue;
        }
        gguf_file *f = gguf_split_shard(set, 0);
        if (o->n_keys) {
            int st = dump_keys(f, o);
            if (st > status) status = st;
            dumped++;
        } else if (data) {
            int st = gguf_split_count(set) > 1 ? dump_set_data(set, files[i], o, json_array, &dumped)
                                               : dump_data(f, o, json_array, &dumped);
            if (st > status) status = st;
        } else if (o->json) {
            if (json_array && dumped) cli_out_str(out, ",\n");
            dump_json(set, files[i], o);
            if (!json_array) cli_out_putc(out, '\n');
            dumped++;
        } else {
            if (dumped) cli_out_putc(out, '\n');
            dump_text(set, files[i], o);
            dumped++;
        }
        guard_split_close(set);
        /* Out before the next file is mapped: a mapping that shrinks ends
         * the process, and should not take the files before it along. */
        cli_out_flush(out);
    }
    if (json_array) cli_out_str(out, "\n]\n");
    return status;
}

int main(int argc, char **argv)
{
    struct options o = { 0 };
    cli_set_prog("gguf-dump");
    guard_init();
    o.keys = calloc((size_t)argc, sizeof *o.keys);  /* at most one -k per argument */
    o.values = calloc((size_t)argc, sizeof *o.values);
    if (!o.keys || !o.values) {
        cli_error(NULL, "out of memory");
        return CLI_EXIT_TROUBLE;
    }
    int status = parse_options(argc, argv, &o);
    if (status < 0) {
        char *stdin_only[] = { "-", NULL };
        char **files = argv + optind;
        int n_files = argc - optind;
        if (n_files == 0) {
            files = stdin_only;
            n_files = 1;
        }
        raw_to_tty = o.n_keys && !o.json && cli_isatty(1);
        status = o.diff       ? dump_diff(out, files[0], files[1], o.json, o.shard)
                 : o.estimate ? dump_estimate(out, files, n_files, &o.est, o.json, o.shard)
                              : dump_files(files, n_files, &o);
        if (cli_out_close(out) != CLI_EXIT_OK) status = CLI_EXIT_TROUBLE;
    }
    for (size_t i = 0; i < o.n_values; i++) free(o.values[i].name);
    free(o.keys);
    free(o.values);
    return status;
}
