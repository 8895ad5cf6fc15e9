/*
 * value.h -- metadata values (gguf_value) rendered for people, JSON and
 * scripts, as gguf-dump shows them and gguf-edit's diffs.  Not installed.
 */
#ifndef TOOLS_VALUE_H
#define TOOLS_VALUE_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "tools/cli.h"

/* How many elements of an array a preview shows. */
#define VALUE_PREVIEW_ELEMENTS 8
/* Strings longer than VALUE_PREVIEW_STRING_MAX bytes are previewed by their
 * first VALUE_PREVIEW_STRING_BYTES bytes (chat templates run to kilobytes). */
#define VALUE_PREVIEW_STRING_MAX 160
#define VALUE_PREVIEW_STRING_BYTES 120

/* Renderings of a value: text for people, JSON, and raw lines. */
enum value_render { VALUE_TEXT, VALUE_JSON, VALUE_RAW };

/* Reads arrays element by element; fixed-size elements come straight from
 * the array's raw storage when the library offers it (host byte order),
 * which avoids a call per element on large arrays. */
struct value_arr {
    const gguf_value *arr;
    const unsigned char *data;  /* raw storage, or NULL */
    size_t esize;
};

void value_arr_open(struct value_arr *r, const gguf_value *arr);
/* Element i into *v: 0, or -1 when the library refuses (which it does not
 * for i < count of a validated file). */
int value_arr_get(const struct value_arr *r, uint64_t i, gguf_value *v);

/* A scalar (anything but an array) in rendering r; raw strings are
 * escaped when raw_to_tty is set (they go to a terminal). */
void value_put_scalar(cli_out *out, const gguf_value *v, enum value_render r, int raw_to_tty);
/* Any value as JSON; arrays complete, nested arrays nested. */
void value_put_json(cli_out *out, const gguf_value *v);
/* A value for people.  With budget NULL arrays are shown whole; otherwise
 * each array element shown, at any depth, uses one unit of *budget, and an
 * array whose turn comes when the budget is spent ends with "... (N
 * elements)"; long strings are cut as well and end with "... (N bytes)". */
void value_put_text(cli_out *out, const gguf_value *v, long *budget);
/* A value as lines: a scalar on one line; an array one element a line, an
 * element that is itself an array as one line of JSON. */
void value_put_raw(cli_out *out, const gguf_value *v, int raw_to_tty);
/* The type as "UINT32", or "ARRAY[STRING]" for arrays with `with_elem`;
 * value_vtype_width() is its width with the element type. */
void value_put_vtype(cli_out *out, const gguf_value *v, int with_elem);
size_t value_vtype_width(const gguf_value *v);

#endif /* TOOLS_VALUE_H */
