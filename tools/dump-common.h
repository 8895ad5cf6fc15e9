/* dump-common.h -- what gguf-dump's views share.  Not installed. */
#ifndef TOOLS_DUMP_COMMON_H
#define TOOLS_DUMP_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "tools/cli.h"

/* Number of decimal digits of v. */
int dump_digits(uint64_t v);

/* Formats the dims of t as "[1536, 151936]" (file order, ne[0] first) into
 * buf (at least 96 bytes); returns the length. */
size_t dump_fmt_dims(char *buf, const gguf_tensor *t);

/* The first line of the text view of one file: "FILE: GGUF v3,
 * little-endian, N key/value pairs, ...". */
void dump_file_line(cli_out *o, const gguf_file *f);

/* A type name as a JSON value: "Q4_K", or null for NULL (a type id
 * libgguf does not know). */
void dump_json_type(cli_out *o, const char *name);

/* A key or tensor name in the text view: escaped, without quotes. */
static inline void dump_put_name(cli_out *o, gguf_str s)
{
    cli_out_text_str(o, s.ptr, s.len, 0);
}

#endif /* TOOLS_DUMP_COMMON_H */
