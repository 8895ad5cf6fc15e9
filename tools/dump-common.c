/* dump-common.c -- what gguf-dump's views share; see dump-common.h. */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "tools/dump-common.h"

int dump_digits(uint64_t v)
{
    int n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

size_t dump_fmt_dims(char *buf, const gguf_tensor *t)
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

void dump_file_line(cli_out *o, const gguf_file *f)
{
    uint64_t nkv = gguf_kv_count(f), nt = gguf_tensor_count(f);
    const char *name = gguf_name(f);
    cli_out_text_str(o, name, strlen(name), 0);
    cli_out_printf(o,
                   ": GGUF v%u, %s-endian, %llu key/value pair%s, %llu tensor%s, alignment %u, "
                   "data offset %llu, size %llu\n",
                   gguf_version(f), gguf_byte_order(f) == GGUF_BIG_ENDIAN ? "big" : "little",
                   (unsigned long long)nkv, nkv == 1 ? "" : "s", (unsigned long long)nt,
                   nt == 1 ? "" : "s", gguf_alignment(f), (unsigned long long)gguf_data_offset(f),
                   (unsigned long long)gguf_file_size(f));
}

void dump_json_type(cli_out *o, const char *name)
{
    if (!name) {
        cli_out_str(o, "null");
        return;
    }
    cli_out_putc(o, '"');
    cli_out_str(o, name);
    cli_out_putc(o, '"');
}
