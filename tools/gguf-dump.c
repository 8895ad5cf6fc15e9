/*
 * gguf-dump -- show the header, metadata and tensor directory of GGUF files,
 * as text for people, as JSON for programs, or one raw value for scripts.
 * See gguf-dump(1) for the output formats.
 */
#include <config.h>

#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "infer/context.h"
#include "infer/model.h"
#include "quant/quant.h"
#include "tools/cli.h"
#include "tools/dump-diff.h"
#include "tools/dump-estimate.h"
#include "tools/guard.h"
#include "tools/value.h"


struct values_req;

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

/* Number of decimal digits of v. */
static int digits(uint64_t v)
{
    int n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
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

/* A key or tensor name in the text view: escaped, without quotes. */
static void put_text_name(gguf_str s)
{
    cli_out_text_str(out, s.ptr, s.len, 0);
}

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

/* The first line of the text view of one file. */
static void text_header_file(const gguf_file *f)
{
    uint64_t nkv = gguf_kv_count(f), nt = gguf_tensor_count(f);
    const char *name = gguf_name(f);
    cli_out_text_str(out, name, strlen(name), 0);
    cli_out_printf(out,
                   ": GGUF v%u, %s-endian, %llu key/value pair%s, %llu tensor%s, alignment %u, "
                   "data offset %llu, size %llu\n",
                   gguf_version(f), gguf_byte_order(f) == GGUF_BIG_ENDIAN ? "big" : "little",
                   (unsigned long long)nkv, nkv == 1 ? "" : "s", (unsigned long long)nt,
                   nt == 1 ? "" : "s", gguf_alignment(f), (unsigned long long)gguf_data_offset(f),
                   (unsigned long long)gguf_file_size(f));
}

/* That of a set: for a split set of several shards, a line for the set
 * and one for each shard. */
static void text_header(const gguf_split *set, const char *path)
{
    const gguf_file *f = gguf_split_shard(set, 0);
    const uint32_t ns = gguf_split_count(set);
    uint64_t nkv = gguf_kv_count(f), nt = gguf_split_tensor_count(set);
    if (ns == 1) {
        text_header_file(f);
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
    int idx_w = digits(ns) < 3 ? 3 : digits(ns);
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
        if (kv->value.type == GGUF_VT_ARRAY && (size_t)digits(kv->value.count) > count_w)
            count_w = (size_t)digits(kv->value.count);
    }
    int idx_w = digits(n ? n - 1 : 0);
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
        put_text_name(kv->key);
        cli_out_str(out, " = ");
        long budget = VALUE_PREVIEW_ELEMENTS;
        value_put_text(out, v, o->full ? NULL : &budget);
        cli_out_putc(out, '\n');
    }
}

/* Formats the dims of t as "[1536, 151936]" (file order, ne[0] first) into
 * buf (at least 96 bytes); returns the length. */
static size_t fmt_dims(char *buf, const gguf_tensor *t)
{
    size_t n = 0;
    buf[n++] = '[';
    for (uint32_t d = 0; d < t->n_dims && d < 4; d++) {
        if (d) {
            buf[n++] = ',';
            buf[n++] = ' ';
        }
        n += (size_t)snprintf(buf + n, 24, "%llu", (unsigned long long)t->ne[d]);
    }
    buf[n++] = ']';
    buf[n] = '\0';
    return n;
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
        w = tn ? strlen(tn) : (size_t)digits(t->type) + 5;
        if (w > type_w) type_w = w;
        w = fmt_dims(dims, t);
        if (w > dims_w) dims_w = w;
        if (digits(t->file_offset) > off_w) off_w = digits(t->file_offset);
        if (digits(t->size) > bytes_w) bytes_w = digits(t->size);
    }
    int idx_w = digits(n ? n - 1 : 0);
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
        put_text_name(t->name);
        cli_out_pad(out, (long)(name_w - cli_text_width(t->name.ptr, t->name.len)) + 2);
        const char *tn = type_name_or_null(t->type);
        size_t tw;
        if (tn) {
            cli_out_str(out, tn);
            tw = strlen(tn);
        } else {
            cli_out_str(out, "type#");
            cli_out_u64(out, t->type);
            tw = (size_t)digits(t->type) + 5;
        }
        cli_out_pad(out, (long)(type_w - tw) + 2);
        size_t dl = fmt_dims(dims, t);
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
            if (digits(st->params) > par_w) par_w = digits(st->params);
            if (digits(st->bytes) > byt_w) byt_w = digits(st->bytes);
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
    put_text_name(s->arch);
    cli_out_str(out, "):\n");
    uint64_t n = gguf_kv_count(f);
    for (uint64_t i = 0; i < n; i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (!kv || !is_hparam(&kv->key, &s->arch)) continue;
        cli_out_str(out, "    ");
        put_text_name(kv->key);
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
        if (tn) {
            cli_out_putc(out, '"');
            cli_out_str(out, tn);
            cli_out_putc(out, '"');
        } else {
            cli_out_str(out, "null");
        }
        cli_out_str(out, ", \"type_id\": ");
        cli_out_u64(out, t->type);
        char dims[96];
        fmt_dims(dims, t);
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
        if (tn) {
            cli_out_putc(out, '"');
            cli_out_str(out, tn);
            cli_out_putc(out, '"');
        } else {
            cli_out_str(out, "null");
        }
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
/* Tensor values: --values and --stats                                       */

/* Values shown by --values TENSOR without :N. */
#define VALUES_DEFAULT 16
/* About this many elements make a segment: the unit of dequantization, of
 * work between threads and of --stats' partial sums. */
#define SEGMENT_ELEMENTS 65536
/* Bytes read from a stream at a time by --stats. */
#define STREAM_BATCH_BYTES ((size_t)16 << 20)

/* One --values request. */
struct values_req {
    char *name;             /* tensor name */
    uint64_t count;         /* values asked for */
};

/* Fills *r from a --values argument TENSOR[:N]; N is taken from after the
 * last colon when that is all digits, so names with colons still work.
 * Returns 0, or -1 when out of memory or N is out of range. */
static int parse_values_arg(const char *arg, struct values_req *r)
{
    const char *colon = strrchr(arg, ':');
    size_t name_len = strlen(arg);
    r->count = VALUES_DEFAULT;
    if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1)) {
        errno = 0;
        unsigned long long v = strtoull(colon + 1, NULL, 10);
        if (errno) return -1;
        r->count = v;
        name_len = (size_t)(colon - arg);
    }
    r->name = malloc(name_len + 1);
    if (!r->name) return -1;
    memcpy(r->name, arg, name_len);
    r->name[name_len] = '\0';
    return 0;
}

/* Why the data of tensor t cannot be turned into floats, written to buf
 * (n bytes); NULL when it can. */
static const char *cannot_dequantize(const gguf_file *f, const gguf_tensor *t, char *buf,
                                     size_t n)
{
    const char *tn = type_name_or_null(t->type);
    if (!tn) {
        snprintf(buf, n, "cannot dequantize unknown type id %u", t->type);
        return buf;
    }
    if (!gguf_can_dequantize(t->type)) {
        snprintf(buf, n, "cannot dequantize type %s", tn);
        return buf;
    }
    if (gguf_data_swapped(f) && gguf_type_get(t->type)->quantized) {
        snprintf(buf, n, "cannot dequantize %s data in a file of the other byte order", tn);
        return buf;
    }
    return NULL;
}

/* Converts nb blocks of `type` at src into nb * block_size floats at dst.
 * With swap, elements of a plain type (F32, F16, BF16) are byte-swapped
 * first, into tmp (nb * type_size bytes). */
static void blocks_to_floats(uint32_t type, const unsigned char *src, uint64_t nb, float *dst,
                             int swap, unsigned char *tmp)
{
    const gguf_type_info *ti = gguf_type_get(type);
    /* The type and count were checked by the callers: a plain type when
     * swapped (cannot_dequantize). */
    if (swap) {
        (void)gguf_swap_elements(type, tmp, src, nb);
        src = tmp;
    }
    (void)gguf_dequantize_row(type, src, dst, (int64_t)(nb * ti->block_size));
}

/* Blocks per segment for a type of block size bs. */
static uint64_t segment_blocks(uint32_t bs)
{
    return bs >= SEGMENT_ELEMENTS ? 1 : SEGMENT_ELEMENTS / bs;
}

/* --values for one file: prints each request's first values, in the
 * order of the options.  Mapped input is read in place; from a stream the
 * blocks needed are read in offset order first.  Returns CLI_EXIT_OK, or
 * CLI_EXIT_TROUBLE after reporting an absent tensor, a type that cannot be
 * dequantized, or a read error. */
static int dump_values(gguf_file *f, const struct options *o)
{
    struct vjob {
        const struct values_req *req;
        const gguf_tensor *t;
        uint64_t count, nbytes;
        const unsigned char *data;
        unsigned char *buf;     /* owned, for streams */
        int ok;
    };
    int status = CLI_EXIT_OK, swap = gguf_data_swapped(f);
    const char *fname = gguf_name(f);
    struct vjob *jobs = calloc(o->n_values, sizeof *jobs);
    struct vjob **order = calloc(o->n_values, sizeof *order);
    if (!jobs || !order) {
        free(jobs);
        free(order);
        cli_error(fname, "out of memory");
        return CLI_EXIT_TROUBLE;
    }
    char why[128];
    for (size_t i = 0; i < o->n_values; i++) {
        struct vjob *j = &jobs[i];
        j->req = &o->values[i];
        order[i] = j;
        j->t = gguf_tensor_find(f, j->req->name);
        if (!j->t) {
            cli_error(fname, "tensor '%s' not found", j->req->name);
            status = CLI_EXIT_TROUBLE;
            continue;
        }
        if (cannot_dequantize(f, j->t, why, sizeof why)) {
            cli_error(fname, "tensor '%s': %s", j->req->name, why);
            status = CLI_EXIT_TROUBLE;
            continue;
        }
        const gguf_type_info *ti = gguf_type_get(j->t->type);
        j->count = j->req->count < j->t->n_elements ? j->req->count : j->t->n_elements;
        j->nbytes = (j->count + ti->block_size - 1) / ti->block_size * ti->type_size;
        j->data = j->t->data;
        j->ok = 1;
    }

    /* Streams: read what is needed in offset order, the largest request
     * for a tensor first so that others of the same tensor share it. */
    if (gguf_is_stream(f)) {
        for (size_t a = 1; a < o->n_values; a++) /* insertion sort: few requests */
            for (size_t b = a; b > 0; b--) {
                struct vjob *x = order[b - 1], *y = order[b];
                uint64_t xo = x->ok ? x->t->file_offset : 0, yo = y->ok ? y->t->file_offset : 0;
                if (xo < yo || (xo == yo && x->nbytes >= y->nbytes)) break;
                order[b - 1] = y;
                order[b] = x;
            }
        const struct vjob *prev = NULL;
        for (size_t i = 0; i < o->n_values; i++) {
            struct vjob *j = order[i];
            if (!j->ok || !j->nbytes) continue;
            if (prev && prev->t == j->t) {
                j->data = prev->data;
                j->ok = prev->ok;
                continue;
            }
            gguf_error err;
            j->buf = malloc(j->nbytes);
            if (!j->buf) {
                cli_error(fname, "out of memory");
                j->ok = 0;
                status = CLI_EXIT_TROUBLE;
                continue;
            }
            if (gguf_read_data(f, j->t->file_offset, j->buf, j->nbytes, &err) != GGUF_OK) {
                cli_message(err.message);
                j->ok = 0;
                status = CLI_EXIT_TROUBLE;
            }
            j->data = j->buf;
            prev = j;
        }
    }

    /* Print, in the order of the options. */
    float *vals = NULL;
    unsigned char *tmp = NULL;
    int first = 1;
    if (o->json) {
        cli_out_str(out, "{\"file\": ");
        cli_out_json_str(out, fname, strlen(fname));
        cli_out_str(out, ", \"values\": [");
    }
    for (size_t i = 0; i < o->n_values && !cli_out_failed(out); i++) {
        struct vjob *j = &jobs[i];
        if (!j->ok) continue;
        const gguf_tensor *t = j->t;
        const gguf_type_info *ti = gguf_type_get(t->type);
        uint64_t seg = segment_blocks(ti->block_size);
        if (!vals) {
            vals = malloc(sizeof *vals * (size_t)(SEGMENT_ELEMENTS > ti->block_size
                                                       ? SEGMENT_ELEMENTS : ti->block_size));
            tmp = malloc(SEGMENT_ELEMENTS * 4); /* plain types only are swapped */
            if (!vals || !tmp) {
                cli_error(fname, "out of memory");
                status = CLI_EXIT_TROUBLE;
                break;
            }
        }
        if (o->json) {
            cli_out_str(out, first ? "\n  {\"tensor\": " : ",\n  {\"tensor\": ");
            first = 0;
            cli_out_json_str(out, t->name.ptr, t->name.len);
            cli_out_str(out, ", \"type\": \"");
            cli_out_str(out, ti->name);
            char dims[96];
            fmt_dims(dims, t);
            cli_out_str(out, "\", \"dims\": ");
            cli_out_str(out, dims);
            cli_out_str(out, ", \"elements\": ");
            cli_out_u64(out, t->n_elements);
            cli_out_str(out, ", \"count\": ");
            cli_out_u64(out, j->count);
            cli_out_str(out, ", \"values\": [");
        }
        uint64_t done = 0;
        for (uint64_t b = 0; done < j->count && !cli_out_failed(out); b += seg) {
            uint64_t nb = (j->count - done + ti->block_size - 1) / ti->block_size;
            if (nb > seg) nb = seg;
            blocks_to_floats(t->type, j->data + b * ti->type_size, nb, vals, swap, tmp);
            uint64_t n = nb * ti->block_size;
            if (n > j->count - done) n = j->count - done;
            for (uint64_t k = 0; k < n; k++) {
                if (o->json) {
                    if (done + k) cli_out_str(out, ", ");
                    cli_out_f32(out, vals[k], 1);
                } else {
                    cli_out_f32(out, vals[k], 0);
                    cli_out_putc(out, '\n');
                }
            }
            done += n;
        }
        if (o->json) cli_out_str(out, "]}");
    }
    if (o->json) cli_out_str(out, first ? "]}" : "\n]}");
    free(vals);
    free(tmp);

    if (gguf_is_stream(f)) {
        gguf_error err;
        if (gguf_read_to_end(f, &err) != GGUF_OK) {
            cli_message(err.message);
            status = CLI_EXIT_TROUBLE;
        }
    }
    for (size_t i = 0; i < o->n_values; i++) free(jobs[i].buf);
    free(jobs);
    free(order);
    return status;
}

/* Statistics of some values: the finite ones give min, max and the sums;
 * NaN and infinities are only counted. */
struct vstats {
    uint64_t finite, nan, inf;
    float min, max;
    double sum, sumsq;
};

static void vstats_init(struct vstats *s)
{
    memset(s, 0, sizeof *s);
    s->min = INFINITY;
    s->max = -INFINITY;
}

/* Statistics of the n floats at x into *s (initialised here).  Value i
 * goes to lane i % 8 of double sums, and the lanes are added up in a fixed
 * order: the result depends only on the values.  Runs of 8 finite values,
 * the common case, take a branch-free path. */
static void vstats_of(const float *x, size_t n, struct vstats *s)
{
    double sum[8] = { 0 }, sq[8] = { 0 };
    float lo[8], hi[8];
    for (int k = 0; k < 8; k++) {
        lo[k] = INFINITY;
        hi[k] = -INFINITY;
    }
    vstats_init(s);
    for (size_t i = 0; i < n; i += 8) {
        size_t m = n - i < 8 ? n - i : 8;
        int finite = 1;
        for (size_t k = 0; k < m; k++) finite &= fabsf(x[i + k]) <= FLT_MAX; /* NaN: false */
        if (finite && m == 8) {
            for (int k = 0; k < 8; k++) {
                double d = x[i + k];
                sum[k] += d;
                sq[k] += d * d;
                lo[k] = x[i + k] < lo[k] ? x[i + k] : lo[k];
                hi[k] = x[i + k] > hi[k] ? x[i + k] : hi[k];
            }
            continue;
        }
        for (size_t k = 0; k < m; k++) {
            float v = x[i + k];
            if (isnan(v)) {
                s->nan++;
            } else if (isinf(v)) {
                s->inf++;
            } else {
                sum[k] += v;
                sq[k] += (double)v * v;
                if (v < lo[k]) lo[k] = v;
                if (v > hi[k]) hi[k] = v;
            }
        }
    }
    s->finite = n - s->nan - s->inf;
    for (int k = 0; k < 8; k++) {
        if (lo[k] < s->min) s->min = lo[k];
        if (hi[k] > s->max) s->max = hi[k];
    }
    s->sum = ((sum[0] + sum[1]) + (sum[2] + sum[3])) + ((sum[4] + sum[5]) + (sum[6] + sum[7]));
    s->sumsq = ((sq[0] + sq[1]) + (sq[2] + sq[3])) + ((sq[4] + sq[5]) + (sq[6] + sq[7]));
}

/* Adds the statistics b to a. */
static void vstats_add(struct vstats *a, const struct vstats *b)
{
    a->finite += b->finite;
    a->nan += b->nan;
    a->inf += b->inf;
    if (b->min < a->min) a->min = b->min;
    if (b->max > a->max) a->max = b->max;
    a->sum += b->sum;
    a->sumsq += b->sumsq;
}

/* Statistics of segments first .. first+nseg-1 of tensor t (nblocks
 * blocks in all, `seg` blocks a segment) whose blocks start at src (the
 * block of segment `first` at src), added to *total in segment order.
 * Segments are spread over threads; the result does not depend on their
 * number.  Returns 0, or -1 when out of memory. */
static int stats_segments(const gguf_tensor *t, const unsigned char *src, uint64_t first,
                          uint64_t nseg, uint64_t seg, uint64_t nblocks, int swap,
                          struct vstats *total)
{
    const gguf_type_info *ti = gguf_type_get(t->type);
    struct vstats *part = malloc(sizeof *part * (size_t)nseg);
    if (!part) return -1;
    int failed = 0;
#ifdef _OPENMP
#pragma omp parallel if (nseg > 1) reduction(|: failed)
#endif
    {
        float *x = malloc(sizeof *x * (size_t)(seg * ti->block_size));
        unsigned char *tmp = swap ? malloc((size_t)(seg * ti->type_size)) : NULL;
        if (!x || (swap && !tmp)) failed = 1;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 4)
#endif
        for (int64_t k = 0; k < (int64_t)nseg; k++) {
            if (failed) continue;
            uint64_t b0 = (first + (uint64_t)k) * seg;
            uint64_t nb = nblocks - b0 < seg ? nblocks - b0 : seg;
            blocks_to_floats(t->type, src + ((uint64_t)k * seg) * ti->type_size, nb, x, swap,
                             tmp);
            vstats_of(x, (size_t)(nb * ti->block_size), &part[k]);
        }
        free(x);
        free(tmp);
    }
    if (!failed)
        for (uint64_t k = 0; k < nseg; k++) vstats_add(total, &part[k]);
    free(part);
    return failed ? -1 : 0;
}

/* Statistics over all elements of tensor t into *s.  Mapped data is read
 * in place; from a stream the data is read in batches (the caller visits
 * tensors in offset order).  Returns 0, or -1 after reporting a read error
 * or lack of memory. */
static int tensor_stats(gguf_file *f, const gguf_tensor *t, struct vstats *s)
{
    const gguf_type_info *ti = gguf_type_get(t->type);
    int swap = gguf_data_swapped(f);
    uint64_t nblocks = t->n_elements / ti->block_size;
    uint64_t seg = segment_blocks(ti->block_size);
    uint64_t nseg = (nblocks + seg - 1) / seg;
    vstats_init(s);
    if (nseg == 0) return 0;
    if (t->data) {
        if (stats_segments(t, t->data, 0, nseg, seg, nblocks, swap, s) == 0) return 0;
        cli_error(gguf_name(f), "out of memory");
        return -1;
    }
    uint64_t seg_bytes = seg * ti->type_size;
    uint64_t batch = STREAM_BATCH_BYTES / seg_bytes ? STREAM_BATCH_BYTES / seg_bytes : 1;
    if (batch > nseg) batch = nseg;
    unsigned char *buf = malloc((size_t)(batch * seg_bytes));
    if (!buf && batch) {
        cli_error(gguf_name(f), "out of memory");
        return -1;
    }
    for (uint64_t k = 0; k < nseg; k += batch) {
        uint64_t n = nseg - k < batch ? nseg - k : batch;
        uint64_t b0 = k * seg, nb = nblocks - b0 < n * seg ? nblocks - b0 : n * seg;
        gguf_error err;
        if (gguf_read_data(f, t->file_offset + b0 * ti->type_size, buf,
                           (size_t)(nb * ti->type_size), &err) != GGUF_OK) {
            cli_message(err.message);
            free(buf);
            return -1;
        }
        if (stats_segments(t, buf, k, n, seg, nblocks, swap, s) != 0) {
            cli_error(gguf_name(f), "out of memory");
            free(buf);
            return -1;
        }
    }
    free(buf);
    return 0;
}

/* Formats v for the --stats table ("%.6g"), or "-" when !have. */
static void put_stat(double v, int have, int width)
{
    char buf[40];
    int n = have ? snprintf(buf, sizeof buf, "%.6g", v) : snprintf(buf, sizeof buf, "-");
    cli_out_pad(out, width - n);
    cli_out_write(out, buf, (size_t)n);
}

/* --stats for one file: min, max, mean and RMS of every tensor matching
 * --tensors, a text table or a JSON object.  Returns CLI_EXIT_OK, or
 * CLI_EXIT_TROUBLE after reporting tensors that could not be read or
 * dequantized (their rows show "-" / null). */
static int dump_stats(gguf_file *f, const struct options *o)
{
    const char *fname = gguf_name(f);
    uint64_t n = gguf_tensor_count(f);
    struct tres {
        const gguf_tensor *t;
        struct vstats s;
        int ok;
        char why[128];
    } *res = calloc(n ? n : 1, sizeof *res);
    if (!res) {
        cli_error(fname, "out of memory");
        return CLI_EXIT_TROUBLE;
    }
    int status = CLI_EXIT_OK;
    uint64_t shown = 0;
    for (uint64_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (!t || (o->tensors_glob && !cli_glob_match(o->tensors_glob, t->name.ptr, t->name.len)))
            continue;
        res[i].t = t;
        shown++;
    }
    /* Read in offset order (the file order, usually), as streams need it. */
    const uint64_t *order = gguf_tensor_order(f);
    int read_failed = 0;
    for (uint64_t k = 0; k < n; k++) {
        struct tres *r = &res[order[k]];
        if (!r->t) continue;
        char name[160];
        if (cannot_dequantize(f, r->t, r->why, sizeof r->why)) {
            cli_error(fname, "tensor '%s': %s",
                      cli_text_escape(name, sizeof name, r->t->name.ptr, r->t->name.len), r->why);
            status = CLI_EXIT_TROUBLE;
            continue;
        }
        if (read_failed) {
            snprintf(r->why, sizeof r->why, "not read");
            continue;
        }
        if (tensor_stats(f, r->t, &r->s) != 0) {
            snprintf(r->why, sizeof r->why, "read failed");
            status = CLI_EXIT_TROUBLE;
            read_failed = 1;  /* a stream cannot go on after a failed read */
            continue;
        }
        r->ok = 1;
    }
    if (!read_failed && gguf_is_stream(f)) {
        gguf_error err;
        if (gguf_read_to_end(f, &err) != GGUF_OK) {
            cli_message(err.message);
            status = CLI_EXIT_TROUBLE;
        }
    }

    /* Output, in file order. */
    if (o->json) {
        cli_out_str(out, "{\"file\": ");
        cli_out_json_str(out, fname, strlen(fname));
        cli_out_str(out, ", \"stats\": [");
        for (uint64_t i = 0, first = 1; i < n && !cli_out_failed(out); i++) {
            const struct tres *r = &res[i];
            if (!r->t) continue;
            const char *tn = type_name_or_null(r->t->type);
            cli_out_str(out, first ? "\n  {\"index\": " : ",\n  {\"index\": ");
            first = 0;
            cli_out_u64(out, i);
            cli_out_str(out, ", \"name\": ");
            cli_out_json_str(out, r->t->name.ptr, r->t->name.len);
            cli_out_str(out, ", \"type\": ");
            if (tn) {
                cli_out_putc(out, '"');
                cli_out_str(out, tn);
                cli_out_putc(out, '"');
            } else {
                cli_out_str(out, "null");
            }
            cli_out_str(out, ", \"elements\": ");
            cli_out_u64(out, r->t->n_elements);
            int have = r->ok && r->s.finite;
            static const char *const keys[4] = { ", \"min\": ", ", \"max\": ", ", \"mean\": ",
                                                 ", \"rms\": " };
            for (int k = 0; k < 4; k++) {
                cli_out_str(out, keys[k]);
                if (!have)
                    cli_out_str(out, "null");
                else if (k == 0)
                    cli_out_f32(out, r->s.min, 1);
                else if (k == 1)
                    cli_out_f32(out, r->s.max, 1);
                else if (k == 2)
                    cli_out_f64(out, r->s.sum / (double)r->s.finite, 1);
                else
                    cli_out_f64(out, sqrt(r->s.sumsq / (double)r->s.finite), 1);
            }
            if (r->ok) {
                cli_out_str(out, ", \"nan\": ");
                cli_out_u64(out, r->s.nan);
                cli_out_str(out, ", \"inf\": ");
                cli_out_u64(out, r->s.inf);
            } else {
                cli_out_str(out, ", \"nan\": null, \"inf\": null, \"error\": ");
                cli_out_json_str(out, r->why, strlen(r->why));
            }
            cli_out_putc(out, '}');
        }
        cli_out_str(out, shown ? "\n]}" : "]}");
    } else {
        size_t name_w = 4, type_w = 4;
        int el_w = 8, cnt_w = 3;
        for (uint64_t i = 0; i < n; i++) {
            const struct tres *r = &res[i];
            if (!r->t) continue;
            size_t w = cli_text_width(r->t->name.ptr, r->t->name.len);
            if (w > name_w) name_w = w;
            const char *tn = type_name_or_null(r->t->type);
            w = tn ? strlen(tn) : (size_t)digits(r->t->type) + 5;
            if (w > type_w) type_w = w;
            if (digits(r->t->n_elements) > el_w) el_w = digits(r->t->n_elements);
            if (r->ok && digits(r->s.nan) > cnt_w) cnt_w = digits(r->s.nan);
            if (r->ok && digits(r->s.inf) > cnt_w) cnt_w = digits(r->s.inf);
        }
        int idx_w = digits(n ? n - 1 : 0);
        if (idx_w < 3) idx_w = 3;
        text_header_file(f);
        cli_out_str(out, "\nstatistics: ");
        if (o->tensors_glob) {
            cli_out_u64(out, shown);
            cli_out_str(out, " of ");
        }
        cli_out_u64(out, n);
        cli_out_str(out, n == 1 ? " tensor" : " tensors");
        if (o->tensors_glob) {
            cli_out_str(out, " match ");
            cli_out_text_str(out, o->tensors_glob, strlen(o->tensors_glob), 1);
        }
        cli_out_putc(out, '\n');
        if (shown) {
            cli_out_pad(out, idx_w - 1);
            cli_out_str(out, "#  name");
            cli_out_pad(out, (long)name_w - 4 + 2);
            cli_out_str(out, "type");
            cli_out_pad(out, (long)type_w - 4 + 2 + el_w - 8);
            cli_out_str(out, "elements           min           max          mean           rms");
            cli_out_pad(out, 2 + cnt_w - 3);
            cli_out_str(out, "nan");
            cli_out_pad(out, 2 + cnt_w - 3);
            cli_out_str(out, "inf\n");
        }
        for (uint64_t i = 0; i < n && !cli_out_failed(out); i++) {
            const struct tres *r = &res[i];
            if (!r->t) continue;
            cli_out_u64_w(out, i, idx_w);
            cli_out_str(out, "  ");
            put_text_name(r->t->name);
            cli_out_pad(out, (long)(name_w - cli_text_width(r->t->name.ptr, r->t->name.len)) + 2);
            const char *tn = type_name_or_null(r->t->type);
            size_t tw;
            if (tn) {
                cli_out_str(out, tn);
                tw = strlen(tn);
            } else {
                cli_out_str(out, "type#");
                cli_out_u64(out, r->t->type);
                tw = (size_t)digits(r->t->type) + 5;
            }
            cli_out_pad(out, (long)(type_w - tw) + 2);
            cli_out_u64_w(out, r->t->n_elements, el_w);
            int have = r->ok && r->s.finite;
            double fin = have ? (double)r->s.finite : 1;
            put_stat(r->s.min, have, 14);
            put_stat(r->s.max, have, 14);
            put_stat(r->s.sum / fin, have, 14);
            put_stat(sqrt(r->s.sumsq / fin), have, 14);
            cli_out_str(out, "  ");
            if (r->ok) cli_out_u64_w(out, r->s.nan, cnt_w);
            else put_stat(0, 0, cnt_w);
            cli_out_str(out, "  ");
            if (r->ok) cli_out_u64_w(out, r->s.inf, cnt_w);
            else put_stat(0, 0, cnt_w);
            cli_out_putc(out, '\n');
        }
    }
    free(res);
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
            if (parse_values_arg(optarg, &o->values[o->n_values]) != 0)
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
    int st = o->stats ? dump_stats(f, o) : dump_values(f, o);
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
