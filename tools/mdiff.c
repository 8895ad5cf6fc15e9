/* mdiff.c -- metadata and tensor-directory differences; see mdiff.h. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/mdiff.h"
#include "tools/value.h"

int mdiff_same_value(const gguf_value *a, const gguf_value *b)
{
    if (a->type != b->type) return 0;
    if (a->type == GGUF_VT_STRING)
        return a->v.str.len == b->v.str.len && memcmp(a->v.str.ptr, b->v.str.ptr, a->v.str.len) == 0;
    if (a->type != GGUF_VT_ARRAY) {
        size_t n = gguf_vtype_size(a->type);
        return a->type == GGUF_VT_BOOL ? a->v.b == b->v.b : memcmp(&a->v, &b->v, n) == 0;
    }
    if (a->elem_type != b->elem_type || a->count != b->count) return 0;
    struct value_arr ra, rb;
    value_arr_open(&ra, a);
    value_arr_open(&rb, b);
    for (uint64_t i = 0; i < a->count; i++) {
        gguf_value x, y;
        if (value_arr_get(&ra, i, &x) || value_arr_get(&rb, i, &y) || !mdiff_same_value(&x, &y)) return 0;
    }
    return 1;
}

static const gguf_kv *find_kv(const gguf_file *f, const gguf_str *key)
{
    char *k = strndup(key->ptr, key->len);
    const gguf_kv *kv = k ? gguf_kv_find(f, k) : NULL;
    free(k);
    return kv;
}

static void put_pair(cli_out *o, char sign, const gguf_kv *kv)
{
    long budget = VALUE_PREVIEW_ELEMENTS;
    cli_out_putc(o, sign);
    cli_out_text_str(o, kv->key.ptr, kv->key.len, 0);
    cli_out_str(o, ": ");
    value_put_vtype(o, &kv->value, 1);
    cli_out_str(o, " = ");
    value_put_text(o, &kv->value, &budget);
    cli_out_putc(o, '\n');
}

/* {"type": ..., ["element_type": ...,] "value": ...} members, no braces. */
static void json_typed_value(cli_out *o, const gguf_value *v)
{
    cli_out_str(o, "\"type\": \"");
    value_put_vtype(o, v, 0);
    cli_out_str(o, "\", ");
    if (v->type == GGUF_VT_ARRAY) {
        const char *en = gguf_vtype_name(v->elem_type);
        cli_out_str(o, "\"element_type\": \"");
        cli_out_str(o, en ? en : "?");
        cli_out_str(o, "\", ");
    }
    cli_out_str(o, "\"value\": ");
    value_put_json(o, v);
}

/* Opens (first) or continues a JSON array member. */
static void json_item(cli_out *o, int *first)
{
    cli_out_str(o, *first ? "\n    " : ",\n    ");
    *first = 0;
}

static void json_close(cli_out *o, int first)
{
    cli_out_str(o, first ? "]" : "\n  ]");
}

uint64_t mdiff_kv(cli_out *o, const gguf_file *a, const gguf_file *b, const char *a_name,
                  const char *b_name, int print, int json)
{
    uint64_t changes = 0;
    const int text = print && !json;
    if (text) {
        cli_out_str(o, "--- ");
        cli_out_text_str(o, a_name, strlen(a_name), 0);
        cli_out_str(o, "\n+++ ");
        cli_out_text_str(o, b_name, strlen(b_name), 0);
        cli_out_putc(o, '\n');
    }
    int first_rm = 1, first_ch = 1, first_add = 1;
    /* removed, then changed, each in a's order (JSON: two members) */
    for (int pass = 0; pass < (json && print ? 2 : 1); pass++) {
        if (json && print) cli_out_str(o, pass == 0 ? "  \"kv_removed\": [" : ",\n  \"kv_changed\": [");
        for (uint64_t i = 0; i < gguf_kv_count(a); i++) {
            const gguf_kv *x = gguf_kv_at(a, i), *y = find_kv(b, &x->key);
            if (y && mdiff_same_value(&x->value, &y->value)) continue;
            if (!json || !print) {
                changes++;
                if (text) {
                    put_pair(o, '-', x);
                    if (y) put_pair(o, '+', y);
                }
                continue;
            }
            if ((pass == 0) != (y == NULL)) continue;
            changes++;
            json_item(o, pass == 0 ? &first_rm : &first_ch);
            cli_out_str(o, "{\"key\": ");
            cli_out_json_str(o, x->key.ptr, x->key.len);
            if (pass == 0) {
                cli_out_str(o, ", ");
                json_typed_value(o, &x->value);
            } else {
                cli_out_str(o, ", \"old\": {");
                json_typed_value(o, &x->value);
                cli_out_str(o, "}, \"new\": {");
                json_typed_value(o, &y->value);
                cli_out_putc(o, '}');
            }
            cli_out_putc(o, '}');
        }
        if (json && print) json_close(o, pass == 0 ? first_rm : first_ch);
    }
    if (json && print) cli_out_str(o, ",\n  \"kv_added\": [");
    for (uint64_t i = 0; i < gguf_kv_count(b); i++) {
        const gguf_kv *y = gguf_kv_at(b, i);
        if (find_kv(a, &y->key)) continue;
        changes++;
        if (text) put_pair(o, '+', y);
        if (json && print) {
            json_item(o, &first_add);
            cli_out_str(o, "{\"key\": ");
            cli_out_json_str(o, y->key.ptr, y->key.len);
            cli_out_str(o, ", ");
            json_typed_value(o, &y->value);
            cli_out_putc(o, '}');
        }
    }
    if (json && print) json_close(o, first_add);
    /* the same pairs in another order */
    int reordered = 0;
    if (!changes && gguf_kv_count(a) == gguf_kv_count(b)) {
        for (uint64_t i = 0; i < gguf_kv_count(a); i++) {
            const gguf_kv *x = gguf_kv_at(a, i), *y = gguf_kv_at(b, i);
            if (x->key.len != y->key.len || memcmp(x->key.ptr, y->key.ptr, x->key.len) != 0) {
                changes++;
                reordered = 1;
                if (text) cli_out_str(o, "(the keys in another order)\n");
                break;
            }
        }
    }
    if (json && print) cli_out_str(o, reordered ? ",\n  \"kv_reordered\": true" : ",\n  \"kv_reordered\": false");
    return changes;
}

/* "Q4_K [4864, 896]" */
static void put_type_shape(cli_out *o, const gguf_tensor *t)
{
    const char *tn = gguf_type_str(t->type);
    if (tn) cli_out_str(o, tn);
    else cli_out_printf(o, "type %u", t->type);
    cli_out_str(o, " [");
    for (uint32_t d = 0; d < t->n_dims; d++) {
        if (d) cli_out_str(o, ", ");
        cli_out_u64(o, t->ne[d]);
    }
    cli_out_putc(o, ']');
}

/* "-tensor NAME: TYPE [SHAPE]" and its line break, sign first. */
static void put_tensor_line(cli_out *o, char sign, const gguf_tensor *t)
{
    cli_out_putc(o, sign);
    cli_out_str(o, "tensor ");
    cli_out_text_str(o, t->name.ptr, t->name.len, 0);
    cli_out_str(o, ": ");
    put_type_shape(o, t);
    cli_out_putc(o, '\n');
}

static void json_tensor(cli_out *o, const gguf_tensor *t, const uint64_t *sum)
{
    const char *tn = gguf_type_str(t->type);
    cli_out_str(o, "\"type\": ");
    if (tn) {
        cli_out_putc(o, '"');
        cli_out_str(o, tn);
        cli_out_putc(o, '"');
    } else {
        cli_out_u64(o, t->type);
    }
    cli_out_str(o, ", \"shape\": [");
    for (uint32_t d = 0; d < t->n_dims; d++) {
        if (d) cli_out_str(o, ", ");
        cli_out_u64(o, t->ne[d]);
    }
    cli_out_putc(o, ']');
    if (sum) cli_out_printf(o, ", \"xxh3\": \"%016llx\"", (unsigned long long)*sum);
}

static int same_shape(const gguf_tensor *x, const gguf_tensor *y)
{
    if (x->n_dims != y->n_dims) return 0;
    for (uint32_t d = 0; d < x->n_dims; d++)
        if (x->ne[d] != y->ne[d]) return 0;
    return 1;
}

static const gguf_tensor *find_tensor(const gguf_split *set, const gguf_str *name, uint64_t *index)
{
    char n[GGUF_TENSOR_NAME_MAX + 1];
    const gguf_tensor *t = NULL;
    if (name->len <= GGUF_TENSOR_NAME_MAX && !memchr(name->ptr, '\0', name->len)) {
        memcpy(n, name->ptr, name->len);
        n[name->len] = '\0';
        t = gguf_split_tensor_find(set, n, NULL);
    }
    if (!t) {
        /* names the fast lookup cannot take: by a scan */
        for (uint64_t i = 0; i < gguf_split_tensor_count(set); i++) {
            const gguf_tensor *u = gguf_split_tensor_at(set, i, NULL);
            if (u->name.len == name->len && memcmp(u->name.ptr, name->ptr, name->len) == 0) {
                *index = i;
                return u;
            }
        }
        return NULL;
    }
    for (uint64_t i = 0; i < gguf_split_tensor_count(set); i++)
        if (gguf_split_tensor_at(set, i, NULL) == t) {
            *index = i;
            break;
        }
    return t;
}

uint64_t mdiff_tensors(cli_out *o, const struct mdiff_side *a, const struct mdiff_side *b, int print,
                       int json)
{
    const uint64_t na = gguf_split_tensor_count(a->set), nb = gguf_split_tensor_count(b->set);
    const int text = print && !json, js = print && json;
    uint64_t changes = 0;
    int first_rm = 1, first_ch = 1, first_add = 1;
    for (int pass = 0; pass < (js ? 2 : 1); pass++) {
        if (js) cli_out_str(o, pass == 0 ? ",\n  \"tensors_removed\": [" : ",\n  \"tensors_changed\": [");
        for (uint64_t i = 0; i < na; i++) {
            const gguf_tensor *x = gguf_split_tensor_at(a->set, i, NULL);
            uint64_t j = 0;
            const gguf_tensor *y = find_tensor(b->set, &x->name, &j);
            const int type_diff = y && x->type != y->type, shape_diff = y && !same_shape(x, y);
            const int data_diff = y && !type_diff && !shape_diff && a->sums && b->sums &&
                                  a->sums[i] != b->sums[j];
            if (y && !type_diff && !shape_diff && !data_diff) continue;
            if (js && (pass == 0) != (y == NULL)) continue;
            changes++;
            if (text) {
                if (!y || type_diff || shape_diff) put_tensor_line(o, '-', x);
                if (y && (type_diff || shape_diff)) put_tensor_line(o, '+', y);
                if (data_diff) {
                    cli_out_str(o, "~tensor ");
                    cli_out_text_str(o, x->name.ptr, x->name.len, 0);
                    cli_out_printf(o, ": data differs (xxh3 %016llx %016llx)\n",
                                   (unsigned long long)a->sums[i], (unsigned long long)b->sums[j]);
                }
            }
            if (js) {
                json_item(o, pass == 0 ? &first_rm : &first_ch);
                cli_out_str(o, "{\"name\": ");
                cli_out_json_str(o, x->name.ptr, x->name.len);
                if (pass == 0) {
                    cli_out_str(o, ", ");
                    json_tensor(o, x, a->sums ? &a->sums[i] : NULL);
                } else {
                    cli_out_printf(o, ", \"what\": [%s%s%s]",
                                   type_diff ? "\"type\"" : "",
                                   shape_diff ? (type_diff ? ", \"shape\"" : "\"shape\"") : "",
                                   data_diff ? "\"data\"" : "");
                    cli_out_str(o, ", \"old\": {");
                    json_tensor(o, x, a->sums ? &a->sums[i] : NULL);
                    cli_out_str(o, "}, \"new\": {");
                    json_tensor(o, y, b->sums ? &b->sums[j] : NULL);
                    cli_out_putc(o, '}');
                }
                cli_out_putc(o, '}');
            }
        }
        if (js) json_close(o, pass == 0 ? first_rm : first_ch);
    }
    if (js) cli_out_str(o, ",\n  \"tensors_added\": [");
    for (uint64_t j = 0; j < nb; j++) {
        const gguf_tensor *y = gguf_split_tensor_at(b->set, j, NULL);
        uint64_t i;
        if (find_tensor(a->set, &y->name, &i)) continue;
        changes++;
        if (text) put_tensor_line(o, '+', y);
        if (js) {
            json_item(o, &first_add);
            cli_out_str(o, "{\"name\": ");
            cli_out_json_str(o, y->name.ptr, y->name.len);
            cli_out_str(o, ", ");
            json_tensor(o, y, b->sums ? &b->sums[j] : NULL);
            cli_out_putc(o, '}');
        }
    }
    if (js) json_close(o, first_add);
    return changes;
}
