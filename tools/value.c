/* value.c -- metadata values rendered for people, JSON and scripts; see
 * value.h. */
#include <config.h>

#include <string.h>

#include "gguf/gguf.h"
#include "tools/cli.h"
#include "tools/value.h"

void value_arr_open(struct value_arr *r, const gguf_value *arr)
{
    r->arr = arr;
    r->esize = gguf_vtype_size(arr->elem_type);
    r->data = r->esize ? gguf_array_data(arr) : NULL;
}

/* Element i of the array into *v.  Returns 0, or -1 when the library
 * refuses (which it does not for i < count of a validated file). */
int value_arr_get(const struct value_arr *r, uint64_t i, gguf_value *v)
{
    if (!r->data) return gguf_array_get(r->arr, i, v) == GGUF_OK ? 0 : -1;
    const unsigned char *p = r->data + i * r->esize;
    memset(v, 0, sizeof *v);
    v->type = r->arr->elem_type;
    if (v->type == GGUF_VT_BOOL)
        v->v.b = p[0] != 0;
    else
        memcpy(&v->v, p, r->esize);     /* every union member starts at its first byte */
    return 0;
}

/* Writes a scalar value (anything but an array) in rendering r. */
void value_put_scalar(cli_out *out, const gguf_value *v, enum value_render r, int raw_to_tty)
{
    int json = r == VALUE_JSON;
    switch (v->type) {
    case GGUF_VT_UINT8: cli_out_u64(out, v->v.u8); break;
    case GGUF_VT_INT8: cli_out_i64(out, v->v.i8); break;
    case GGUF_VT_UINT16: cli_out_u64(out, v->v.u16); break;
    case GGUF_VT_INT16: cli_out_i64(out, v->v.i16); break;
    case GGUF_VT_UINT32: cli_out_u64(out, v->v.u32); break;
    case GGUF_VT_INT32: cli_out_i64(out, v->v.i32); break;
    case GGUF_VT_UINT64: cli_out_u64(out, v->v.u64); break;
    case GGUF_VT_INT64: cli_out_i64(out, v->v.i64); break;
    case GGUF_VT_FLOAT32: cli_out_f32(out, v->v.f32, json); break;
    case GGUF_VT_FLOAT64: cli_out_f64(out, v->v.f64, json); break;
    case GGUF_VT_BOOL: cli_out_str(out, v->v.b ? "true" : "false"); break;
    case GGUF_VT_STRING:
        if (r == VALUE_JSON)
            cli_out_json_str(out, v->v.str.ptr, v->v.str.len);
        else if (r == VALUE_TEXT)
            cli_out_text_str(out, v->v.str.ptr, v->v.str.len, 1);
        else if (raw_to_tty)
            cli_out_text_str(out, v->v.str.ptr, v->v.str.len, 0);
        else
            cli_out_write(out, v->v.str.ptr, v->v.str.len);
        break;
    default:    /* a validated file has no other type; keep the output well-formed */
        cli_out_str(out, json ? "null" : "?");
    }
}

/* Writes any value as JSON; arrays complete, nested arrays nested. */
void value_put_json(cli_out *out, const gguf_value *v)
{
    if (v->type != GGUF_VT_ARRAY) {
        value_put_scalar(out, v, VALUE_JSON, 0);
        return;
    }
    struct value_arr r;
    gguf_value e;
    value_arr_open(&r, v);
    cli_out_putc(out, '[');
    for (uint64_t i = 0; i < v->count; i++) {
        if (i) cli_out_putc(out, ',');
        if (value_arr_get(&r, i, &e) == 0)
            value_put_json(out, &e);
        else
            cli_out_str(out, "null");
    }
    cli_out_putc(out, ']');
}

/* Writes a value for the text view.  With budget NULL arrays are shown
 * whole (--full); otherwise each array element shown, at any depth, uses
 * one unit of *budget, and an array whose turn comes when the budget is
 * spent ends with "... (N elements)".  The budget keeps a preview short
 * even for nested arrays.  In a preview, long strings are cut as well and
 * end with "... (N bytes)". */
void value_put_text(cli_out *out, const gguf_value *v, long *budget)
{
    if (v->type == GGUF_VT_STRING && budget && v->v.str.len > VALUE_PREVIEW_STRING_MAX) {
        size_t cut = VALUE_PREVIEW_STRING_BYTES;
        /* end on a character boundary: back up over UTF-8 continuation bytes */
        for (int k = 0; k < 3 && ((unsigned char)v->v.str.ptr[cut] & 0xc0) == 0x80; k++) cut--;
        cli_out_text_str(out, v->v.str.ptr, cut, 1);
        cli_out_str(out, " ... (");
        cli_out_u64(out, v->v.str.len);
        cli_out_str(out, " bytes)");
        return;
    }
    if (v->type != GGUF_VT_ARRAY) {
        value_put_scalar(out, v, VALUE_TEXT, 0);
        return;
    }
    struct value_arr r;
    gguf_value e;
    value_arr_open(&r, v);
    cli_out_putc(out, '[');
    for (uint64_t i = 0; i < v->count; i++) {
        if (i) cli_out_str(out, ", ");
        if (budget && *budget <= 0) {
            cli_out_str(out, "... (");
            cli_out_u64(out, v->count);
            cli_out_str(out, v->count == 1 ? " element)" : " elements)");
            break;
        }
        if (budget) (*budget)--;
        if (value_arr_get(&r, i, &e) == 0)
            value_put_text(out, &e, budget);
        else
            cli_out_putc(out, '?');
    }
    cli_out_putc(out, ']');
}

/* Writes a value for -k: a scalar on one line; an array one element a
 * line, an element that is itself an array as one line of JSON. */
void value_put_raw(cli_out *out, const gguf_value *v, int raw_to_tty)
{
    if (v->type != GGUF_VT_ARRAY) {
        value_put_scalar(out, v, VALUE_RAW, raw_to_tty);
        cli_out_putc(out, '\n');
        return;
    }
    struct value_arr r;
    gguf_value e;
    value_arr_open(&r, v);
    for (uint64_t i = 0; i < v->count && !cli_out_failed(out); i++) {
        if (value_arr_get(&r, i, &e) != 0) continue;
        if (e.type == GGUF_VT_ARRAY) {
            value_put_json(out, &e);
            cli_out_putc(out, '\n');
        } else {
            value_put_scalar(out, &e, VALUE_RAW, raw_to_tty);
            cli_out_putc(out, '\n');
        }
    }
}

/* Type of a value as the text view and JSON name it: "UINT32", or
 * "ARRAY[STRING]" for arrays when `with_elem` is set. */
void value_put_vtype(cli_out *out, const gguf_value *v, int with_elem)
{
    const char *name = gguf_vtype_name(v->type);
    cli_out_str(out, name ? name : "?");
    if (v->type == GGUF_VT_ARRAY && with_elem) {
        const char *en = gguf_vtype_name(v->elem_type);
        cli_out_putc(out, '[');
        cli_out_str(out, en ? en : "?");
        cli_out_putc(out, ']');
    }
}

/* Columns put_vtype(v, 1) takes. */
size_t value_vtype_width(const gguf_value *v)
{
    const char *name = gguf_vtype_name(v->type);
    size_t w = name ? strlen(name) : 1;
    if (v->type == GGUF_VT_ARRAY) {
        const char *en = gguf_vtype_name(v->elem_type);
        w += 2 + (en ? strlen(en) : 1);
    }
    return w;
}

