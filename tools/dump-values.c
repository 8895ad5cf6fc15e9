/* dump-values.c -- gguf-dump --values and --stats: tensor data,
 * dequantized; see dump-values.h. */
#include <config.h>

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "tools/dump-common.h"
#include "tools/dump-values.h"

/* ------------------------------------------------------------------------ */
/* Tensor values: --values and --stats                                       */

/* Values shown by --values TENSOR without :N. */
#define VALUES_DEFAULT 16
/* About this many elements make a segment: the unit of dequantization, of
 * work between threads and of --stats' partial sums. */
#define SEGMENT_ELEMENTS 65536
/* Bytes read from a stream at a time by --stats. */
#define STREAM_BATCH_BYTES ((size_t)16 << 20)

/* Fills *r from a --values argument TENSOR[:N]; N is taken from after the
 * last colon when that is all digits, so names with colons still work.
 * Returns 0, or -1 when out of memory or N is out of range. */
int dump_parse_values(const char *arg, struct values_req *r)
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
    const char *tn = gguf_type_str(t->type);
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
int dump_values(cli_out *out, gguf_file *f, const struct values_req *values, size_t n_values,
                int json)
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
    struct vjob *jobs = calloc(n_values, sizeof *jobs);
    struct vjob **order = calloc(n_values, sizeof *order);
    if (!jobs || !order) {
        free(jobs);
        free(order);
        cli_error(fname, "out of memory");
        return CLI_EXIT_TROUBLE;
    }
    char why[128];
    for (size_t i = 0; i < n_values; i++) {
        struct vjob *j = &jobs[i];
        j->req = &values[i];
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
        for (size_t a = 1; a < n_values; a++) /* insertion sort: few requests */
            for (size_t b = a; b > 0; b--) {
                struct vjob *x = order[b - 1], *y = order[b];
                uint64_t xo = x->ok ? x->t->file_offset : 0, yo = y->ok ? y->t->file_offset : 0;
                if (xo < yo || (xo == yo && x->nbytes >= y->nbytes)) break;
                order[b - 1] = y;
                order[b] = x;
            }
        const struct vjob *prev = NULL;
        for (size_t i = 0; i < n_values; i++) {
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
    if (json) {
        cli_out_str(out, "{\"file\": ");
        cli_out_json_str(out, fname, strlen(fname));
        cli_out_str(out, ", \"values\": [");
    }
    for (size_t i = 0; i < n_values && !cli_out_failed(out); i++) {
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
        if (json) {
            cli_out_str(out, first ? "\n  {\"tensor\": " : ",\n  {\"tensor\": ");
            first = 0;
            cli_out_json_str(out, t->name.ptr, t->name.len);
            cli_out_str(out, ", \"type\": \"");
            cli_out_str(out, ti->name);
            char dims[96];
            dump_fmt_dims(dims, t);
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
                if (json) {
                    if (done + k) cli_out_str(out, ", ");
                    cli_out_f32(out, vals[k], 1);
                } else {
                    cli_out_f32(out, vals[k], 0);
                    cli_out_putc(out, '\n');
                }
            }
            done += n;
        }
        if (json) cli_out_str(out, "]}");
    }
    if (json) cli_out_str(out, first ? "]}" : "\n]}");
    free(vals);
    free(tmp);

    if (gguf_is_stream(f)) {
        gguf_error err;
        if (gguf_read_to_end(f, &err) != GGUF_OK) {
            cli_message(err.message);
            status = CLI_EXIT_TROUBLE;
        }
    }
    for (size_t i = 0; i < n_values; i++) free(jobs[i].buf);
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
static void put_stat(cli_out *out, double v, int have, int width)
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
int dump_stats(cli_out *out, gguf_file *f, const char *tensors_glob, int json)
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
        if (!t || (tensors_glob && !cli_glob_match(tensors_glob, t->name.ptr, t->name.len)))
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
    if (json) {
        cli_out_str(out, "{\"file\": ");
        cli_out_json_str(out, fname, strlen(fname));
        cli_out_str(out, ", \"stats\": [");
        for (uint64_t i = 0, first = 1; i < n && !cli_out_failed(out); i++) {
            const struct tres *r = &res[i];
            if (!r->t) continue;
            const char *tn = gguf_type_str(r->t->type);
            cli_out_str(out, first ? "\n  {\"index\": " : ",\n  {\"index\": ");
            first = 0;
            cli_out_u64(out, i);
            cli_out_str(out, ", \"name\": ");
            cli_out_json_str(out, r->t->name.ptr, r->t->name.len);
            cli_out_str(out, ", \"type\": ");
            dump_json_type(out, tn);
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
            const char *tn = gguf_type_str(r->t->type);
            w = tn ? strlen(tn) : (size_t)dump_digits(r->t->type) + 5;
            if (w > type_w) type_w = w;
            if (dump_digits(r->t->n_elements) > el_w) el_w = dump_digits(r->t->n_elements);
            if (r->ok && dump_digits(r->s.nan) > cnt_w) cnt_w = dump_digits(r->s.nan);
            if (r->ok && dump_digits(r->s.inf) > cnt_w) cnt_w = dump_digits(r->s.inf);
        }
        int idx_w = dump_digits(n ? n - 1 : 0);
        if (idx_w < 3) idx_w = 3;
        dump_file_line(out, f);
        cli_out_str(out, "\nstatistics: ");
        if (tensors_glob) {
            cli_out_u64(out, shown);
            cli_out_str(out, " of ");
        }
        cli_out_u64(out, n);
        cli_out_str(out, n == 1 ? " tensor" : " tensors");
        if (tensors_glob) {
            cli_out_str(out, " match ");
            cli_out_text_str(out, tensors_glob, strlen(tensors_glob), 1);
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
            dump_put_name(out, r->t->name);
            cli_out_pad(out, (long)(name_w - cli_text_width(r->t->name.ptr, r->t->name.len)) + 2);
            const char *tn = gguf_type_str(r->t->type);
            size_t tw;
            if (tn) {
                cli_out_str(out, tn);
                tw = strlen(tn);
            } else {
                cli_out_str(out, "type#");
                cli_out_u64(out, r->t->type);
                tw = (size_t)dump_digits(r->t->type) + 5;
            }
            cli_out_pad(out, (long)(type_w - tw) + 2);
            cli_out_u64_w(out, r->t->n_elements, el_w);
            int have = r->ok && r->s.finite;
            double fin = have ? (double)r->s.finite : 1;
            put_stat(out, r->s.min, have, 14);
            put_stat(out, r->s.max, have, 14);
            put_stat(out, r->s.sum / fin, have, 14);
            put_stat(out, sqrt(r->s.sumsq / fin), have, 14);
            cli_out_str(out, "  ");
            if (r->ok) cli_out_u64_w(out, r->s.nan, cnt_w);
            else put_stat(out, 0, 0, cnt_w);
            cli_out_str(out, "  ");
            if (r->ok) cli_out_u64_w(out, r->s.inf, cnt_w);
            else put_stat(out, 0, 0, cnt_w);
            cli_out_putc(out, '\n');
        }
    }
    free(res);
    return status;
}
