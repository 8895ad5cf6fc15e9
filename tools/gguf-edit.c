/* gguf-edit -- change the metadata of a GGUF file: set, delete and rename
 * keys; the tensor data is copied as it is (by the kernel where it can). */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "tools/cli.h"
#include "tools/guard.h"
#include "tools/mdiff.h"
#include "tools/outset.h"
#include "tools/value.h"

#define KEY_ALIGNMENT "general.alignment"
/* The string that --in-place adds (or resizes) to make the new metadata
 * end where the old did.  The namespace is the package's own. */
#define KEY_PADDING "gguf_tools.edit.padding"
/* The longest key the format allows. */
#define KEY_MAX 65535

static cli_out *out = &cli_stdout;

static void usage(void)
{
    cli_out_printf(out,
        "Usage: %s [OPTION]... FILE OUT\n"
        "  or:  %s --in-place [OPTION]... FILE\n"
        "  or:  %s -n [OPTION]... FILE\n"
        "Change the metadata of the GGUF file FILE: set, delete and rename keys.\n"
        "The result is written to OUT, a new file (FILE is never changed), whole\n"
        "or not at all; the tensors are copied as they are, by the kernel where\n"
        "it can.  FILE may be - or a pipe, OUT - (standard output, not a terminal).\n"
        "\n"
        "Edits, applied in command-line order (each may be repeated):\n"
        "      --set=KEY=[TYPE:]VALUE\n"
        "                        give KEY the value VALUE (a new key is added\n"
        "                        after the others); TYPE: str, bool, u8, i8, u16,\n"
        "                        i16, u32, i32, u64, i64, f32, f64 (a VALUE of\n"
        "                        [A, B ...]: an array of that type; str: always\n"
        "                        a string), or json (a JSON string, number, true,\n"
        "                        false or array: arrays of strings);\n"
        "                        without TYPE, the type KEY has (a new key needs one)\n"
        "      --set-file=KEY=[TYPE:]PATH\n"
        "                        the same with the value read from the file PATH:\n"
        "                        its bytes as a string (str, the default), or a\n"
        "                        JSON value (json, or any other TYPE)\n"
        "      --delete=KEY      remove KEY\n"
        "      --rename=OLD=NEW  rename the key OLD to NEW, in its place\n"
        "\n"
        "Split sets: FILE may be any shard of a set (NAME-00002-of-00003.gguf ...):\n"
        "the edits go to its first shard, which holds the metadata, and the whole\n"
        "set is written, named after OUT (OUT m.gguf: m-00001-of-00003.gguf ...).\n"
        "      --all-shards      the edits in every shard\n"
        "      --shard           FILE alone, not its set\n"
        "\n"
        "Output:\n"
        "  -n, --dry-run         print the changes as a diff of the metadata;\n"
        "                        write nothing (OUT may then be left out)\n"
        "      --in-place        rewrite FILE's header in place (no OUT), only when\n"
        "                        the new metadata fits before its tensor data\n"
        "                        (padded with the key gguf_tools.edit.padding); a\n"
        "                        journal beside FILE makes a crash leave the old or\n"
        "                        the new header, completed by the next gguf-edit\n"
        "  -q, --quiet           no diff with --dry-run: the exit status tells\n"
        "  -h, --help            show this help and exit\n"
        "  -V, --version         show the version and exit\n"
        "\n"
        "Edits that would make an invalid file are refused: an empty key or one\n"
        "of more than 65535 bytes, a key twice, a value of the wrong type,\n"
        "general.alignment (the tensor data would move), the split.* keys of\n"
        "split sets (see gguf-requant).\n"
        "\n"
        "Exit status: 0 success, 1 with --dry-run: nothing would change, 2\n"
        "trouble (usage, an unreadable or invalid FILE, a key to delete or rename\n"
        "that is absent, a refused edit, an output that cannot be written).\n",
        cli_prog, cli_prog, cli_prog);
}

/* ------------------------------------------------------------------------ */
/* Edits                                                                     */

enum op { OP_SET, OP_SET_FILE, OP_DELETE, OP_RENAME };

struct edit {
    enum op op;
    char *key;              /* KEY, or OLD */
    const char *arg;        /* [TYPE:]VALUE, [TYPE:]PATH, or NEW; points into key's allocation */
};

/* A value given on the command line (or in a file), parsed. */
struct newval {
    uint32_t type;          /* GGUF_VT_*: a scalar, a string or an array */
    uint32_t elem_type;     /* arrays */
    uint64_t count;         /* arrays */
    gguf_value v;           /* scalars; strings point into str */
    char *str;              /* a string's bytes (owned) */
    size_t str_len;
    void *data;             /* arrays of fixed-size elements: count of them */
    gguf_str *strs;         /* arrays of strings: count of them, each owned */
};

static void newval_free(struct newval *nv)
{
    if (!nv) return;
    free(nv->str);
    free(nv->data);
    for (uint64_t i = 0; nv->strs && i < nv->count; i++) free((char *)nv->strs[i].ptr);
    free(nv->strs);
    free(nv);
}

/* An entry of the output's metadata: a pair of the input (under its name
 * or another), or a new value. */
struct item {
    char *name;
    const gguf_kv *src;     /* the input's pair, when it keeps its value */
    struct newval *nv;      /* else the value */
};

struct plan {
    struct item *it;
    size_t n, cap;
};

/* Type names of --set. */
static const struct {
    const char *name;
    uint32_t type;
} type_names[] = {
    {"str", GGUF_VT_STRING}, {"bool", GGUF_VT_BOOL}, {"u8", GGUF_VT_UINT8},   {"i8", GGUF_VT_INT8},
    {"u16", GGUF_VT_UINT16}, {"i16", GGUF_VT_INT16}, {"u32", GGUF_VT_UINT32}, {"i32", GGUF_VT_INT32},
    {"u64", GGUF_VT_UINT64}, {"i64", GGUF_VT_INT64}, {"f32", GGUF_VT_FLOAT32}, {"f64", GGUF_VT_FLOAT64},
};
#define TYPE_JSON UINT32_MAX /* json: inferred from the value */
#define TYPE_NONE (UINT32_MAX - 1)

/* The TYPE: prefix of spec: its type (TYPE_NONE when there is none, or
 * when the text before the first colon is not a type name), and in *rest
 * what follows. */
static uint32_t spec_type(const char *spec, const char **rest)
{
    const char *colon = strchr(spec, ':');
    *rest = spec;
    if (!colon) return TYPE_NONE;
    size_t n = (size_t)(colon - spec);
    if (n == 4 && memcmp(spec, "json", 4) == 0) {
        *rest = colon + 1;
        return TYPE_JSON;
    }
    for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
        if (strlen(type_names[i].name) == n && memcmp(spec, type_names[i].name, n) == 0) {
            *rest = colon + 1;
            return type_names[i].type;
        }
    return TYPE_NONE;
}

/* --- a small JSON reader: strings, numbers, true, false, arrays of them --- */

struct json {
    const char *p, *end;
    char err[160];
};

/* A JSON scalar, read. */
struct jscalar {
    int kind;               /* 's' string, 'n' number, 'b' bool */
    char *s;                /* string bytes (owned) */
    size_t len;
    char num[64];           /* the number's text */
    int is_int;             /* the number has no fraction or exponent */
    int b;
};

static void jskip(struct json *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static int jfail(struct json *j, const char *what)
{
    snprintf(j->err, sizeof j->err, "%s", what);
    return -1;
}

/* Appends the UTF-8 of code point c. */
static void put_utf8(char *o, size_t *n, uint32_t c)
{
    if (c < 0x80) {
        o[(*n)++] = (char)c;
    } else if (c < 0x800) {
        o[(*n)++] = (char)(0xc0 | c >> 6);
        o[(*n)++] = (char)(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
        o[(*n)++] = (char)(0xe0 | c >> 12);
        o[(*n)++] = (char)(0x80 | (c >> 6 & 0x3f));
        o[(*n)++] = (char)(0x80 | (c & 0x3f));
    } else {
        o[(*n)++] = (char)(0xf0 | c >> 18);
        o[(*n)++] = (char)(0x80 | (c >> 12 & 0x3f));
        o[(*n)++] = (char)(0x80 | (c >> 6 & 0x3f));
        o[(*n)++] = (char)(0x80 | (c & 0x3f));
    }
}

static int hex4(const char *p, uint32_t *v)
{
    uint32_t x = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        x <<= 4;
        if (c >= '0' && c <= '9') x |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') x |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') x |= (uint32_t)(c - 'A' + 10);
        else return -1;
    }
    *v = x;
    return 0;
}

static int jstring(struct json *j, struct jscalar *s)
{
    j->p++; /* the quote */
    char *o = malloc((size_t)(j->end - j->p) + 1);
    if (!o) return jfail(j, "out of memory");
    size_t n = 0;
    while (j->p < j->end && *j->p != '"') {
        unsigned char c = (unsigned char)*j->p++;
        if (c < 0x20) {
            free(o);
            return jfail(j, "a control character in a string");
        }
        if (c != '\\') {
            o[n++] = (char)c;
            continue;
        }
        if (j->p >= j->end) break;
        char e = *j->p++;
        uint32_t u, lo;
        switch (e) {
        case '"': o[n++] = '"'; break;
        case '\\': o[n++] = '\\'; break;
        case '/': o[n++] = '/'; break;
        case 'b': o[n++] = '\b'; break;
        case 'f': o[n++] = '\f'; break;
        case 'n': o[n++] = '\n'; break;
        case 'r': o[n++] = '\r'; break;
        case 't': o[n++] = '\t'; break;
        case 'u':
            if (j->end - j->p < 4 || hex4(j->p, &u)) {
                free(o);
                return jfail(j, "a bad \\u escape");
            }
            j->p += 4;
            if (u >= 0xd800 && u < 0xdc00) {
                if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u' || hex4(j->p + 2, &lo) ||
                    lo < 0xdc00 || lo >= 0xe000) {
                    free(o);
                    return jfail(j, "a lone surrogate in a \\u escape");
                }
                j->p += 6;
                u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
            } else if (u >= 0xdc00 && u < 0xe000) {
                free(o);
                return jfail(j, "a lone surrogate in a \\u escape");
            }
            put_utf8(o, &n, u);
            break;
        default:
            free(o);
            return jfail(j, "a bad escape in a string");
        }
    }
    if (j->p >= j->end) {
        free(o);
        return jfail(j, "a string without its closing quote");
    }
    j->p++;
    s->kind = 's';
    s->s = o;
    s->len = n;
    return 0;
}

static int jscalar_read(struct json *j, struct jscalar *s)
{
    memset(s, 0, sizeof *s);
    jskip(j);
    if (j->p >= j->end) return jfail(j, "a value is missing");
    if (*j->p == '"') return jstring(j, s);
    if (j->end - j->p >= 4 && memcmp(j->p, "true", 4) == 0) {
        j->p += 4;
        s->kind = 'b';
        s->b = 1;
        return 0;
    }
    if (j->end - j->p >= 5 && memcmp(j->p, "false", 5) == 0) {
        j->p += 5;
        s->kind = 'b';
        return 0;
    }
    const char *q = j->p;
    if (q < j->end && *q == '-') q++;
    if (q >= j->end || *q < '0' || *q > '9') {
        if (*j->p == '[') return jfail(j, "nested arrays are not supported");
        if (*j->p == '{') return jfail(j, "objects are not supported");
        if (*j->p == 'n') return jfail(j, "null is not supported");
        return jfail(j, "not a JSON value");
    }
    int is_int = 1;
    while (q < j->end && ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' ||
                          *q == '-')) {
        if (*q == '.' || *q == 'e' || *q == 'E') is_int = 0;
        q++;
    }
    if ((size_t)(q - j->p) >= sizeof s->num) return jfail(j, "a number too long");
    memcpy(s->num, j->p, (size_t)(q - j->p));
    s->num[q - j->p] = '\0';
    s->kind = 'n';
    s->is_int = is_int;
    j->p = q;
    return 0;
}

/* --- values -------------------------------------------------------------- */

/* text (NUL-terminated) as a scalar of fixed-size type `type` into *v.
 * Returns 0, or -1 with a reason in why. */
static int parse_scalar(const char *text, uint32_t type, gguf_value *v, char *why, size_t why_n)
{
    memset(v, 0, sizeof *v);
    v->type = type;
    char *end;
    errno = 0;
    /* strto* skip leading white space; a value with it is a typo */
    if (isspace((unsigned char)text[0])) goto bad;
    if (type == GGUF_VT_BOOL) {
        if (strcmp(text, "true") == 0) v->v.b = 1;
        else if (strcmp(text, "false") == 0) v->v.b = 0;
        else goto bad;
        return 0;
    }
    if (type == GGUF_VT_FLOAT32 || type == GGUF_VT_FLOAT64) {
        double d = strtod(text, &end);
        if (end == text || *end) goto bad;
        if (errno == ERANGE && isinf(d)) goto range;
        if (type == GGUF_VT_FLOAT32) {
            if (isfinite(d) && fabs(d) > FLT_MAX) goto range;
            v->v.f32 = (float)d;
        } else {
            v->v.f64 = d;
        }
        return 0;
    }
    int is_signed = type == GGUF_VT_INT8 || type == GGUF_VT_INT16 || type == GGUF_VT_INT32 ||
                    type == GGUF_VT_INT64;
    if (is_signed) {
        long long x = strtoll(text, &end, 10);
        if (end == text || *end) goto bad;
        if (errno == ERANGE) goto range;
        switch (type) {
        case GGUF_VT_INT8: if (x < INT8_MIN || x > INT8_MAX) goto range; v->v.i8 = (int8_t)x; break;
        case GGUF_VT_INT16: if (x < INT16_MIN || x > INT16_MAX) goto range; v->v.i16 = (int16_t)x; break;
        case GGUF_VT_INT32: if (x < INT32_MIN || x > INT32_MAX) goto range; v->v.i32 = (int32_t)x; break;
        default: v->v.i64 = x; break;
        }
        return 0;
    }
    if (text[0] == '-') goto range;
    unsigned long long x = strtoull(text, &end, 10);
    if (end == text || *end) goto bad;
    if (errno == ERANGE) goto range;
    switch (type) {
    case GGUF_VT_UINT8: if (x > UINT8_MAX) goto range; v->v.u8 = (uint8_t)x; break;
    case GGUF_VT_UINT16: if (x > UINT16_MAX) goto range; v->v.u16 = (uint16_t)x; break;
    case GGUF_VT_UINT32: if (x > UINT32_MAX) goto range; v->v.u32 = (uint32_t)x; break;
    default: v->v.u64 = x; break;
    }
    return 0;
bad:
    snprintf(why, why_n, "'%s' is not a %s", text, gguf_vtype_name(type));
    return -1;
range:
    snprintf(why, why_n, "%s is out of the range of %s", text, gguf_vtype_name(type));
    return -1;
}

/* The type JSON scalars of these kinds take in a new key: strings STRING,
 * booleans BOOL, integers INT32 (INT64 when one does not fit), other
 * numbers FLOAT32; GGUF_VT_COUNT when they are mixed. */
static uint32_t infer_type(const struct jscalar *s, size_t n)
{
    uint32_t t = GGUF_VT_COUNT;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        if (s[i].kind == 's') u = GGUF_VT_STRING;
        else if (s[i].kind == 'b') u = GGUF_VT_BOOL;
        else if (!s[i].is_int) u = GGUF_VT_FLOAT32;
        else {
            errno = 0;
            long long x = strtoll(s[i].num, NULL, 10);
            u = errno == 0 && x >= INT32_MIN && x <= INT32_MAX ? GGUF_VT_INT32 : GGUF_VT_INT64;
        }
        if (i == 0) t = u;
        else if (t != u) {
            int num_t = t == GGUF_VT_INT32 || t == GGUF_VT_INT64 || t == GGUF_VT_FLOAT32;
            int num_u = u == GGUF_VT_INT32 || u == GGUF_VT_INT64 || u == GGUF_VT_FLOAT32;
            if (!num_t || !num_u) return GGUF_VT_COUNT;
            t = t == GGUF_VT_FLOAT32 || u == GGUF_VT_FLOAT32 ? GGUF_VT_FLOAT32 : GGUF_VT_INT64;
        }
    }
    return t;
}

/* JSON scalar s as a value of `type` into *v (strings: borrowed). */
static int scalar_of(const struct jscalar *s, uint32_t type, gguf_value *v, char *why, size_t why_n)
{
    if (type == GGUF_VT_STRING) {
        if (s->kind != 's') {
            snprintf(why, why_n, "a %s where a string is wanted", s->kind == 'b' ? "boolean" : "number");
            return -1;
        }
        memset(v, 0, sizeof *v);
        v->type = type;
        v->v.str.ptr = s->s;
        v->v.str.len = s->len;
        return 0;
    }
    if (s->kind == 's') {
        snprintf(why, why_n, "a string where a %s is wanted", gguf_vtype_name(type));
        return -1;
    }
    if ((s->kind == 'b') != (type == GGUF_VT_BOOL)) {
        snprintf(why, why_n, "a %s where a %s is wanted", s->kind == 'b' ? "boolean" : "number",
                 gguf_vtype_name(type));
        return -1;
    }
    return parse_scalar(s->kind == 'b' ? (s->b ? "true" : "false") : s->num, type, v, why, why_n);
}

/* Parses the JSON text (len bytes) into *nv: a scalar, or an array of
 * scalars.  `want` is the type asked for (TYPE_JSON: inferred, TYPE_NONE:
 * the key's, in have/have_elem; else a scalar type, arrays of it too). */
static int parse_json(const char *text, size_t len, uint32_t want, uint32_t have, uint32_t have_elem,
                      struct newval *nv, char *why, size_t why_n)
{
    struct json j = {text, text + len, ""};
    struct jscalar *el = NULL;
    size_t n = 0, cap = 0;
    int rc = -1, is_array = 0;
    jskip(&j);
    if (j.p < j.end && *j.p == '[') {
        is_array = 1;
        j.p++;
        jskip(&j);
        if (j.p < j.end && *j.p == ']') {
            j.p++;
        } else {
            for (;;) {
                if (n == cap) {
                    cap = cap ? 2 * cap : 16;
                    struct jscalar *p = realloc(el, cap * sizeof *p);
                    if (!p) {
                        jfail(&j, "out of memory");
                        goto done;
                    }
                    el = p;
                }
                if (jscalar_read(&j, &el[n])) goto done;
                n++;
                jskip(&j);
                if (j.p < j.end && *j.p == ',') {
                    j.p++;
                    continue;
                }
                if (j.p < j.end && *j.p == ']') {
                    j.p++;
                    break;
                }
                jfail(&j, "an array without its closing bracket");
                goto done;
            }
        }
    } else {
        el = malloc(sizeof *el);
        if (!el) {
            jfail(&j, "out of memory");
            goto done;
        }
        if (jscalar_read(&j, el)) goto done;
        n = 1;
    }
    jskip(&j);
    if (j.p != j.end) {
        jfail(&j, "more after the value");
        goto done;
    }
    /* the type of the value (of its elements) */
    uint32_t t;
    if (want == TYPE_JSON && have != GGUF_VT_COUNT) want = TYPE_NONE; /* the key's type */
    if (want == TYPE_JSON) {
        t = n ? infer_type(el, n) : GGUF_VT_COUNT;
        if (t == GGUF_VT_COUNT && n) {
            jfail(&j, "array elements of different kinds");
            goto done;
        }
        if (t == GGUF_VT_COUNT) {
            if (have == GGUF_VT_ARRAY) {
                t = have_elem;
            } else {
                jfail(&j, "an empty array has no element type: give one (i32:[] ...)");
                goto done;
            }
        }
    } else if (want == TYPE_NONE) {
        if ((have == GGUF_VT_ARRAY) != is_array) {
            jfail(&j, is_array ? "an array for a key that holds a scalar" : "a scalar for a key that holds an array");
            goto done;
        }
        t = is_array ? have_elem : have;
        if (t == GGUF_VT_ARRAY) {
            jfail(&j, "the key holds nested arrays, which cannot be given");
            goto done;
        }
    } else {
        t = want;
    }
    if (!is_array) {
        nv->type = t;
        if (scalar_of(&el[0], t, &nv->v, j.err, sizeof j.err)) goto done;
        if (t == GGUF_VT_STRING) {
            nv->str = el[0].s;
            nv->str_len = el[0].len;
            el[0].s = NULL;
            nv->v.v.str.ptr = nv->str;
        }
        rc = 0;
        goto done;
    }
    nv->type = GGUF_VT_ARRAY;
    nv->elem_type = t;
    nv->count = n;
    if (t == GGUF_VT_STRING) {
        nv->strs = calloc(n ? n : 1, sizeof *nv->strs);
        if (!nv->strs) {
            jfail(&j, "out of memory");
            goto done;
        }
    } else {
        nv->data = calloc(n ? n : 1, gguf_vtype_size(t));
        if (!nv->data) {
            jfail(&j, "out of memory");
            goto done;
        }
    }
    for (size_t i = 0; i < n; i++) {
        gguf_value v;
        char e[128];
        if (scalar_of(&el[i], t, &v, e, sizeof e)) {
            snprintf(j.err, sizeof j.err, "element %zu: %s", i, e);
            goto done;
        }
        if (t == GGUF_VT_STRING) {
            nv->strs[i].ptr = el[i].s;
            nv->strs[i].len = el[i].len;
            el[i].s = NULL;
        } else if (t == GGUF_VT_BOOL) {
            ((uint8_t *)nv->data)[i] = (uint8_t)v.v.b;
        } else {
            memcpy((char *)nv->data + i * gguf_vtype_size(t), &v.v, gguf_vtype_size(t));
        }
    }
    rc = 0;
done:
    for (size_t i = 0; i < n; i++) free(el[i].s);
    free(el);
    if (rc) snprintf(why, why_n, "%s", j.err);
    return rc;
}

/* Reads the file at path whole (at most 256 MiB: the metadata limit). */
static char *read_file(const char *path, size_t *len, char *why, size_t why_n)
{
    FILE *fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!fp) {
        snprintf(why, why_n, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t k = fread(buf + n, 1, cap - n, fp);
        n += k;
        if (k == 0) break;
        if (n == cap) {
            if (cap >= GGUF_METADATA_MAX) {
                snprintf(why, why_n, "%s: larger than the metadata may be", path);
                free(buf);
                buf = NULL;
                break;
            }
            char *p = realloc(buf, cap * 2);
            if (!p) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = p;
            cap *= 2;
        }
    }
    if (buf && ferror(fp)) {
        snprintf(why, why_n, "%s: %s", path, strerror(errno));
        free(buf);
        buf = NULL;
    } else if (!buf && !why[0]) {
        snprintf(why, why_n, "out of memory");
    }
    if (fp != stdin) fclose(fp);
    *len = n;
    return buf;
}

/* The value of a --set or --set-file edit for a key whose present value is
 * `cur` (NULL: a new key).  Returns it, or NULL with a reason in why. */
static struct newval *make_value(const struct edit *e, const gguf_value *cur, char *why, size_t why_n)
{
    const char *rest;
    uint32_t want = spec_type(e->arg, &rest);
    struct newval *nv = calloc(1, sizeof *nv);
    if (!nv) {
        snprintf(why, why_n, "out of memory");
        return NULL;
    }
    why[0] = '\0';
    const uint32_t have = cur ? cur->type : GGUF_VT_COUNT, have_elem = cur ? cur->elem_type : GGUF_VT_COUNT;
    if (want == TYPE_NONE && !cur) {
        snprintf(why, why_n, "a new key needs a type (str:, u32:, json: ...)");
        goto fail;
    }
    char *text = NULL;
    size_t len;
    if (e->op == OP_SET_FILE) {
        if (!(text = read_file(rest, &len, why, why_n))) goto fail;
        /* a string: the file's bytes */
        if (want == GGUF_VT_STRING || (want == TYPE_NONE && have == GGUF_VT_STRING)) {
            nv->type = GGUF_VT_STRING;
            nv->str = text;
            nv->str_len = len;
            nv->v.type = GGUF_VT_STRING;
            nv->v.v.str.ptr = text;
            nv->v.v.str.len = len;
            return nv;
        }
    } else {
        len = strlen(rest);
        /* a string as given; a scalar of the type given or had */
        uint32_t t = want == TYPE_NONE ? have : want;
        if (t == GGUF_VT_STRING) {
            if (!(nv->str = strdup(rest))) goto nomem;
            nv->type = GGUF_VT_STRING;
            nv->str_len = len;
            nv->v.type = GGUF_VT_STRING;
            nv->v.v.str.ptr = nv->str;
            nv->v.v.str.len = len;
            return nv;
        }
        if (want != TYPE_JSON && t != GGUF_VT_ARRAY && rest[0] != '[') {
            if (parse_scalar(rest, t, &nv->v, why, why_n)) goto fail;
            nv->type = t;
            return nv;
        }
        if (!(text = strdup(rest))) goto nomem;
    }
    int rc = parse_json(text, len, want, have, have_elem, nv, why, why_n);
    free(text);
    if (rc) goto fail;
    return nv;
nomem:
    snprintf(why, why_n, "out of memory");
fail:
    newval_free(nv);
    return NULL;
}

/* The item named `key` in p, or -1. */
static long find_item(const struct plan *p, const char *key)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->it[i].name, key) == 0) return (long)i;
    return -1;
}

static int is_split_key(const char *key)
{
    return strcmp(key, "split.no") == 0 || strcmp(key, "split.count") == 0 ||
           strcmp(key, "split.tensors.count") == 0;
}

/* A key an edit may not write or remove; the reason, or NULL. */
static const char *refused_key(const char *key)
{
    size_t n = strlen(key);
    if (n == 0) return "an empty key";
    if (n > KEY_MAX) return "a key of more than 65535 bytes";
    if (strcmp(key, KEY_ALIGNMENT) == 0)
        return "general.alignment cannot be edited: the tensor data would move";
    if (is_split_key(key)) return "the split.* keys describe a split set: gguf-requant writes them";
    return NULL;
}

static void plan_free(struct plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->it[i].name);
        newval_free(p->it[i].nv);
    }
    free(p->it);
}

/* The output's metadata: f's pairs with the edits applied in order.
 * Returns 0, or -1 after a message. */
static int make_plan(const gguf_file *f, const struct edit *ed, size_t n_ed, struct plan *p)
{
    const char *fname = gguf_name(f);
    uint64_t n_kv = gguf_kv_count(f);
    p->cap = (size_t)n_kv + n_ed + 1;
    p->it = calloc(p->cap, sizeof *p->it);
    if (!p->it) goto nomem;
    for (uint64_t i = 0; i < n_kv; i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (memchr(kv->key.ptr, '\0', kv->key.len)) {
            cli_error(fname, "key %llu holds a NUL byte, which the output cannot",
                      (unsigned long long)i);
            return -1;
        }
        if (!(p->it[p->n].name = strndup(kv->key.ptr, kv->key.len))) goto nomem;
        p->it[p->n++].src = kv;
    }
    for (size_t k = 0; k < n_ed; k++) {
        const struct edit *e = &ed[k];
        const char *why = refused_key(e->key);
        if (!why && e->op == OP_RENAME) why = refused_key(e->arg);
        if (why) {
            cli_error(fname, "%s", why);
            return -1;
        }
        long at = find_item(p, e->key);
        if (e->op == OP_DELETE || e->op == OP_RENAME) {
            if (at < 0) {
                cli_error(fname, "key '%s' not found (to %s)", e->key, e->op == OP_DELETE ? "delete" : "rename");
                return -1;
            }
            if (e->op == OP_DELETE) {
                free(p->it[at].name);
                newval_free(p->it[at].nv);
                memmove(p->it + at, p->it + at + 1, (p->n - (size_t)at - 1) * sizeof *p->it);
                p->n--;
                memset(&p->it[p->n], 0, sizeof p->it[p->n]);
            } else {
                if (find_item(p, e->arg) >= 0) {
                    cli_error(fname, "cannot rename '%s' to '%s': that key exists", e->key, e->arg);
                    return -1;
                }
                char *nn = strdup(e->arg);
                if (!nn) goto nomem;
                free(p->it[at].name);
                p->it[at].name = nn;
            }
            continue;
        }
        struct item *it = at >= 0 ? &p->it[at] : NULL;
        gguf_value cur_v;
        const gguf_value *cur = NULL;
        if (it && it->src) {
            cur = &it->src->value;
        } else if (it) {
            memset(&cur_v, 0, sizeof cur_v);
            cur_v.type = it->nv->type;
            cur_v.elem_type = it->nv->elem_type;
            cur = &cur_v;
        }
        char reason[256];
        struct newval *nv = make_value(e, cur, reason, sizeof reason);
        if (!nv) {
            cli_error(fname, "--%s %s: %s", e->op == OP_SET ? "set" : "set-file", e->key, reason);
            return -1;
        }
        if (!it) {
            it = &p->it[p->n++];
            memset(it, 0, sizeof *it);
            if (!(it->name = strdup(e->key))) {
                newval_free(nv);
                goto nomem;
            }
        }
        newval_free(it->nv);
        it->nv = nv;
        it->src = NULL;
    }
    return 0;
nomem:
    cli_error(NULL, "out of memory");
    return -1;
}

/* The plan's pairs into writer w, after the input's version and byte
 * order.  Returns GGUF_OK or the writer's status (err filled). */
static int add_pairs(gguf_writer *w, const gguf_file *f, const struct plan *p, gguf_error *err)
{
    int rc;
    if ((rc = gguf_writer_set_version(w, gguf_version(f), err))) return rc;
    if ((rc = gguf_writer_set_byte_order(w, gguf_byte_order(f), err))) return rc;
    for (size_t i = 0; i < p->n; i++) {
        const struct item *it = &p->it[i];
        const struct newval *nv = it->nv;
        if (it->src)
            rc = gguf_writer_add_value(w, it->name, &it->src->value, err);
        else if (nv->type == GGUF_VT_ARRAY && nv->elem_type == GGUF_VT_STRING)
            rc = gguf_writer_add_str_array(w, it->name, nv->strs, nv->count, err);
        else if (nv->type == GGUF_VT_ARRAY)
            rc = gguf_writer_add_array(w, it->name, nv->elem_type, nv->data, nv->count, err);
        else
            rc = gguf_writer_add_value(w, it->name, &nv->v, err);
        if (rc) return rc;
    }
    return GGUF_OK;
}

/* ------------------------------------------------------------------------ */
/* The run                                                                   */

struct options {
    struct edit *ed;
    size_t n_ed;
    int dry_run, quiet;
    int shard;                  /* --shard: a shard of a split set alone */
    int all_shards;             /* --all-shards: the edits in every shard */
    int in_place;               /* --in-place */
    const char *in, *out;
};

/* The new metadata alone (no tensors), written to a temporary file and
 * read back: the edits checked by the reader, and the diff's right side.
 * Returns the file, or NULL after a message. */
static gguf_file *read_back(const gguf_file *f, const struct plan *p)
{
    gguf_error err;
    err.message[0] = '\0';
    gguf_writer *w = gguf_writer_new();
    FILE *tmp = tmpfile();
    gguf_file *g = NULL;
    int rc = !w || !tmp ? GGUF_E_NOMEM : add_pairs(w, f, p, &err);
    if (!rc) rc = gguf_writer_open_fd(w, fileno(tmp), "(new metadata)", &err);
    if (!rc) rc = gguf_writer_finish(w, &err);
    if (!rc) {
        int fd = dup(fileno(tmp));
        if (fd < 0 || lseek(fd, 0, SEEK_SET) != 0) rc = GGUF_E_IO;
        else rc = gguf_open_fd(&g, fd, "(new metadata)", GGUF_OPEN_NO_MMAP, &err);
    }
    if (rc) {
        cli_error(gguf_name(f), "the edits make invalid metadata: %s",
                  err.message[0] ? err.message : gguf_strerror(rc));
        g = NULL;
    }
    gguf_writer_free(w);
    if (tmp) fclose(tmp);
    return g;
}

/* One input file: the file (a shard of a set, or alone), a descriptor of
 * it for copying its tensors, and the plan and new metadata of its edits
 * (when it is edited). */
struct input {
    const gguf_file *f;
    int fd;
    int regular;            /* fd is a regular file (the input-is-output check) */
    int copy;               /* the tensors are copied from fd: a mapped, uncompressed file */
    struct plan p;
    gguf_file *g;           /* the new metadata, read back; NULL: not edited */
};

/* --- --in-place ------------------------------------------------------------------
 *
 * The new header is written over the old one, in the bytes before the
 * tensor data, which stays where it is.  So that a crash cannot leave a
 * mix of the two, the new header goes first to a journal beside the file
 * (".NAME.gguf-edit-journal": a magic line, the file's size, the header's
 * length and XXH3, the header), which is synced before the file is
 * touched, and removed (synced) only after the file is; a later gguf-edit
 * on the file finds a whole journal and completes the write (roll
 * forward), or a partial one, written before the file was touched, and
 * removes it. */

#define JOURNAL_MAGIC "GGUF-EDIT-JOURNAL1\n"
#define JOURNAL_HEAD (sizeof JOURNAL_MAGIC - 1 + 3 * 8)

static char *journal_path(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t dlen = slash ? (size_t)(slash - path) + 1 : 0, n = strlen(path) + 24;
    char *j = malloc(n);
    if (j) snprintf(j, n, "%.*s.%s.gguf-edit-journal", (int)dlen, path, path + dlen);
    return j;
}

static int sync_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, (size_t)(slash - path) + 1) : strdup(".");
    int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY) : -1;
    int rc = fd >= 0 && fsync(fd) == 0 ? 0 : -1;
    if (fd >= 0) close(fd);
    free(dir);
    return rc;
}

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static uint64_t xxh3_of(const void *p, size_t n)
{
    gguf_hasher *h = gguf_hasher_new(GGUF_HASH_XXH3);
    gguf_digest d;
    if (!h) return 0;
    gguf_hasher_update(h, p, n);
    gguf_hasher_digest(h, &d);
    gguf_hasher_free(h);
    return gguf_digest_u64(&d);
}

/* n bytes at offset 0 of the file at path, synced.  0, or -1 (errno). */
static int write_at_start(int fd, const void *p, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t k = pwrite(fd, (const char *)p + done, n - done, (off_t)done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            if (k == 0) errno = EIO;
            return -1;
        }
        done += (size_t)k;
    }
    return fsync(fd);
}

/* Closes fd; a close error becomes rc's when rc is 0 (errno kept). */
static int close_keep(int fd, int rc)
{
    int e = errno;
    if (close(fd) != 0 && rc == 0) return -1;
    errno = e;
    return rc;
}

/* Completes, or removes, what an interrupted --in-place edit of path left.
 * Returns 0, or -1 after a message. */
static int recover(const char *path)
{
    char *j = journal_path(path);
    if (!j) {
        cli_error(NULL, "out of memory");
        return -1;
    }
    size_t len = 0;
    char why[256] = "";
    FILE *fp = fopen(j, "rb");
    if (!fp) {
        int gone = errno == ENOENT;
        if (!gone) cli_error(j, "cannot read: %s", strerror(errno));
        free(j);
        return gone ? 0 : -1;
    }
    fclose(fp);
    unsigned char *b = (unsigned char *)read_file(j, &len, why, sizeof why);
    int rc = -1, fd;
    struct stat st;
    if (!b) {
        cli_error(j, "cannot read: %s", why);
    } else if (len >= JOURNAL_HEAD && memcmp(b, JOURNAL_MAGIC, sizeof JOURNAL_MAGIC - 1) == 0 &&
               get_le64(b + JOURNAL_HEAD - 16) == len - JOURNAL_HEAD &&
               get_le64(b + JOURNAL_HEAD - 8) == xxh3_of(b + JOURNAL_HEAD, len - JOURNAL_HEAD)) {
        /* whole: the file may hold part of the new header; write it all */
        if (stat(path, &st) != 0 || (uint64_t)st.st_size != get_le64(b + JOURNAL_HEAD - 24)) {
            cli_error(path, "an interrupted --in-place edit left %s, but the file has another size "
                      "now: left as they are", j);
        } else if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0 ||
                   close_keep(fd, write_at_start(fd, b + JOURNAL_HEAD, len - JOURNAL_HEAD)) != 0) {
            cli_error(path, "completing an interrupted --in-place edit: %s", strerror(errno));
        } else if (unlink(j) != 0 || sync_dir_of(path) != 0) {
            cli_error(j, "cannot remove: %s", strerror(errno));
        } else {
            cli_error(path, "note: completed an interrupted --in-place edit");
            rc = 0;
        }
    } else {
        /* partial: written before the file was touched */
        if (unlink(j) != 0 || sync_dir_of(path) != 0) {
            cli_error(j, "cannot remove: %s", strerror(errno));
        } else {
            cli_error(path, "note: removed the unfinished journal of an --in-place edit that had "
                      "not begun");
            rc = 0;
        }
    }
    free(b);
    free(j);
    return rc;
}

/* A writer holding the plan's pairs and f's tensor infos, or NULL after a
 * message. */
static gguf_writer *header_writer(const gguf_file *f, const struct plan *p)
{
    gguf_error err;
    err.message[0] = '\0';
    gguf_writer *w = gguf_writer_new();
    int rc = w ? add_pairs(w, f, p, &err) : GGUF_E_NOMEM;
    for (uint64_t i = 0; i < gguf_tensor_count(f) && !rc; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        char tn[GGUF_TENSOR_NAME_MAX + 1];
        snprintf(tn, sizeof tn, "%.*s", (int)t->name.len, t->name.ptr);
        rc = gguf_writer_add_tensor(w, tn, t->type, t->n_dims, t->ne, &err);
    }
    if (!rc) return w;
    cli_error(gguf_name(f), "%s", err.message[0] ? err.message : gguf_strerror(rc));
    gguf_writer_free(w);
    return NULL;
}

/* Makes the plan's metadata end where f's does, for --in-place: the
 * padding key of an earlier edit dropped, a new one added when the new
 * metadata is shorter by more than the alignment; the tensors must lie in
 * directory order, as the writer would place them.  Returns 0, or -1
 * after a message. */
static int fit_in_place(const gguf_file *f, struct plan *p)
{
    const char *name = gguf_name(f);
    long at = find_item(p, KEY_PADDING);
    if (at >= 0) {
        free(p->it[at].name);
        newval_free(p->it[at].nv);
        memmove(p->it + at, p->it + at + 1, (p->n - (size_t)at - 1) * sizeof *p->it);
        p->n--;
        memset(&p->it[p->n], 0, sizeof p->it[p->n]);
    }
    const uint64_t a = gguf_alignment(f), want = gguf_data_offset(f);
    uint64_t off = 0;
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        off = (off + a - 1) / a * a;
        if (t->offset != off) {
            cli_error(name, "--in-place: the tensor data is not laid out in directory order, "
                      "which a rewritten header would describe: write to OUT instead");
            return -1;
        }
        off += t->size;
    }
    gguf_writer *w = header_writer(f, p);
    if (!w) return -1;
    uint64_t hs = gguf_writer_header_size(w), d = gguf_writer_data_offset(w);
    gguf_writer_free(w);
    if (d == want) return 0;
    if (hs > want) {
        cli_error(name, "--in-place: the new metadata (%llu bytes) does not fit in the %llu bytes "
                  "before the tensor data: write to OUT instead", (unsigned long long)hs,
                  (unsigned long long)want);
        return -1;
    }
    /* a padding string of L bytes, L making the header end at `want` */
    struct newval *nv = calloc(1, sizeof *nv);
    if (!nv || !(p->it[p->n].name = strdup(KEY_PADDING))) {
        free(nv);
        cli_error(NULL, "out of memory");
        return -1;
    }
    nv->type = nv->v.type = GGUF_VT_STRING;
    p->it[p->n++].nv = nv;
    for (int pass = 0; pass < 2; pass++) {
        if (!(w = header_writer(f, p))) return -1;
        hs = gguf_writer_header_size(w);
        d = gguf_writer_data_offset(w);
        gguf_writer_free(w);
        if (d == want) return 0;
        if (pass || hs > want) break;
        size_t L = (size_t)(want - hs);
        if (!(nv->str = malloc(L ? L : 1))) {
            cli_error(NULL, "out of memory");
            return -1;
        }
        memset(nv->str, ' ', L);
        nv->str_len = L;
        nv->v.v.str.ptr = nv->str;
        nv->v.v.str.len = L;
    }
    cli_error(name, "--in-place: the new metadata cannot be padded to end at byte %llu, where the "
              "tensor data starts: write to OUT instead", (unsigned long long)want);
    return -1;
}

/* Rewrites f's header in place, at path, with the plan's metadata (which
 * fit_in_place() made fit), through the journal.  Returns 0, or -1 after a
 * message. */
static int rewrite_in_place(const gguf_file *f, const struct plan *p, const char *path)
{
    gguf_error err;
    err.message[0] = '\0';
    gguf_writer *w = header_writer(f, p);
    void *hdr = NULL;
    size_t len = 0;
    char *j = journal_path(path);
    int rc = -1, fd = -1, ofd = -1;
    if (!w || !j) goto done;
    if (gguf_writer_header(w, &hdr, &len, &err) != GGUF_OK || len != gguf_data_offset(f)) {
        cli_error(path, "--in-place: %s", err.message[0] ? err.message : "the header does not fit");
        goto done;
    }
    unsigned char head[JOURNAL_HEAD];
    memcpy(head, JOURNAL_MAGIC, sizeof JOURNAL_MAGIC - 1);
    put_le64(head + JOURNAL_HEAD - 24, gguf_file_size(f));
    put_le64(head + JOURNAL_HEAD - 16, len);
    put_le64(head + JOURNAL_HEAD - 8, xxh3_of(hdr, len));
    /* the file opened for writing first: no journal is left for a file
     * that cannot be written */
    struct stat st;
    ofd = open(path, O_WRONLY | O_CLOEXEC);
    if (ofd < 0 || fstat(ofd, &st) != 0) {
        cli_error(path, "--in-place: cannot open for writing: %s", strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != gguf_file_size(f)) {
        cli_error(path, "--in-place: the file changed while it was read");
        goto done;
    }
    fd = open(j, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        cli_error(j, "cannot create the journal: %s", strerror(errno));
        goto done;
    }
    guard_output_keep(j);
    FILE *fp = fdopen(fd, "wb");
    if (!fp || fwrite(head, 1, sizeof head, fp) != sizeof head || fwrite(hdr, 1, len, fp) != len ||
        fflush(fp) != 0 || fsync(fd) != 0) {
        cli_error(j, "cannot write the journal: %s", strerror(errno));
        if (fp) fclose(fp);
        else close(fd);
        unlink(j);
        goto done;
    }
    fclose(fp);
    if (sync_dir_of(j) != 0) {
        cli_error(j, "cannot sync its directory: %s", strerror(errno));
        unlink(j);
        goto done;
    }
    /* from here the journal completes the edit after a crash: a signal
     * must not remove it */
    guard_output_kept_clear();
    int wrc = write_at_start(ofd, hdr, len);
    wrc = close_keep(ofd, wrc);
    ofd = -1;
    if (wrc != 0) {
        cli_error(path, "--in-place: writing the header failed: %s; the journal %s holds it, and "
                  "gguf-edit completes it when run on the file again", strerror(errno), j);
        goto done;
    }
    if (unlink(j) != 0 || sync_dir_of(path) != 0) {
        cli_error(j, "cannot remove the journal: %s (the file is edited)", strerror(errno));
        goto done;
    }
    rc = 0;
done:
    guard_output_kept_clear();
    if (ofd >= 0) close(ofd);
    free(hdr);
    free(j);
    gguf_writer_free(w);
    return rc;
}

/* Writes input `in` (its new metadata, or its own when not edited, and its
 * tensors) to file i of the output os.  Returns 0, or -1 after a message. */
static int write_file(const struct input *in, const struct outset *os, uint32_t i_out)
{
    const char *name = os->path[i_out];
    gguf_error err;
    err.message[0] = '\0';
    const gguf_file *f = in->f;
    gguf_writer *w = gguf_writer_new();
    int rc = GGUF_E_NOMEM;
    char *buf = NULL;
    if (!w) goto failed;
    if (in->g) {
        rc = add_pairs(w, f, &in->p, &err);
    } else {
        rc = gguf_writer_set_version(w, gguf_version(f), &err);
        if (!rc) rc = gguf_writer_set_byte_order(w, gguf_byte_order(f), &err);
        for (uint64_t i = 0; i < gguf_kv_count(f) && !rc; i++) rc = gguf_writer_copy_kv(w, gguf_kv_at(f, i), &err);
    }
    const uint64_t n = gguf_tensor_count(f);
    for (uint64_t i = 0; i < n && !rc; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        char tn[GGUF_TENSOR_NAME_MAX + 1];
        snprintf(tn, sizeof tn, "%.*s", (int)t->name.len, t->name.ptr);
        rc = gguf_writer_add_tensor(w, tn, t->type, t->n_dims, t->ne, &err);
    }
    if (!rc) rc = guard_output_open(w, outset_target(os, i_out), &err);
    /* A stream is read in offset order: the tensors in directory order,
     * as every writer stores them (else the reader refuses below). */
    for (uint64_t i = 0; i < n && !rc; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (in->copy) {
            rc = gguf_writer_write_from(w, in->fd, t->file_offset, t->size, &err);
            continue;
        }
        for (uint64_t done = 0; done < t->size && !rc;) {
            size_t k = t->size - done < ((size_t)8 << 20) ? (size_t)(t->size - done) : (size_t)8 << 20;
            if (!buf && !(buf = malloc((size_t)8 << 20))) {
                rc = GGUF_E_NOMEM;
                break;
            }
            if (!(rc = gguf_read_data((gguf_file *)f, t->file_offset + done, buf, k, &err)))
                rc = gguf_writer_write(w, buf, k, &err);
            done += k;
        }
    }
    if (!rc) rc = gguf_read_to_end((gguf_file *)f, &err);
    if (!rc) rc = guard_output_finish(w, &err);
failed:
    free(buf);
    guard_output_free(w);
    if (!rc) return 0;
    if (rc == GGUF_E_NOMEM && !err.message[0]) {
        cli_error(name, "out of memory");
    } else if (!guard_report_shrunk_input(&err)) {
        outset_name_message(os, err.message, sizeof err.message);
        cli_message(err.message[0] ? err.message : gguf_strerror(rc));
    }
    return -1;
}

static int edit(const struct options *o)
{
    if (strcmp(o->in, "-") == 0 && cli_isatty(0)) {
        cli_error("-", "standard input is a terminal");
        return CLI_EXIT_TROUBLE;
    }
    if (o->out && strcmp(o->out, "-") == 0 && !o->dry_run && cli_isatty(1)) {
        cli_error("(stdout)", "refusing to write binary data to a terminal");
        return CLI_EXIT_TROUBLE;
    }
    int status = CLI_EXIT_TROUBLE;
    gguf_error err;
    err.message[0] = '\0';
    /* the input: a shard brings its split set, unless --shard */
    uint32_t count = 1;
    const int is_set = !o->shard && strcmp(o->in, "-") != 0 && gguf_split_prefix(o->in, NULL, &count) &&
                       count > 1;
    gguf_split *set = NULL;
    gguf_file *alone = NULL;
    struct input *in = NULL;
    struct outset os = {0};
    uint32_t n_in = 1;
    /* what an interrupted --in-place edit left is completed first */
    if (strcmp(o->in, "-") != 0) {
        uint32_t no;
        size_t plen = is_set ? gguf_split_prefix(o->in, &no, &count) : 0;
        for (uint32_t i = 0; i < (is_set ? count : 1); i++) {
            char *path = NULL;
            if (is_set) {
                char *prefix = strndup(o->in, plen);
                int len = prefix ? gguf_split_name(NULL, 0, prefix, i, count) : -1;
                if (len >= 0 && (path = malloc((size_t)len + 1)))
                    gguf_split_name(path, (size_t)len + 1, prefix, i, count);
                free(prefix);
            } else {
                path = strdup(o->in);
            }
            if (!path) {
                cli_error(NULL, "out of memory");
                return CLI_EXIT_TROUBLE;
            }
            int r = recover(path);
            free(path);
            if (r) return CLI_EXIT_TROUBLE;
        }
    }
    if (is_set) {
        if (guard_split_open(&set, o->in, 0, &err)) {
            cli_message(err.message);
            return CLI_EXIT_TROUBLE;
        }
        n_in = gguf_split_count(set);
    }
    if (n_in > 1 && o->out && strcmp(o->out, "-") == 0) {
        cli_error(o->in, "a split set is written as files: OUT cannot be '-' (see --shard)");
        goto done;
    }
    if (!(in = calloc(n_in, sizeof *in))) {
        cli_error(NULL, "out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < n_in; i++) in[i].fd = -1;
    if (!set) {
        /* The data is copied from a descriptor of the very file parsed. */
        int fd = strcmp(o->in, "-") == 0 ? dup(0) : open(o->in, O_RDONLY | O_CLOEXEC);
        struct stat st;
        int pfd = fd >= 0 ? dup(fd) : -1;
        if (pfd < 0) {
            cli_error(o->in, "cannot open: %s", strerror(errno));
            if (fd >= 0) close(fd);
            goto done;
        }
        in[0].fd = fd;
        in[0].regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
        guard_input_begin(o->in, NULL);
        int rc = gguf_open_fd(&alone, pfd, strcmp(o->in, "-") ? o->in : "-",
                              in[0].regular ? 0 : GGUF_OPEN_SEQUENTIAL, &err);
        guard_input_end(rc == GGUF_OK ? alone : NULL);
        if (rc) {
            cli_message(err.message[0] ? err.message : gguf_strerror(rc));
            goto done;
        }
        in[0].f = alone;
        in[0].copy = in[0].regular && gguf_input_mode(alone) == GGUF_INPUT_MAPPED;
        if (gguf_split_prefix(o->in, NULL, &count) && count > 1 && gguf_kv_find(alone, "split.count"))
            cli_error(o->in, "note: a shard of a split set, edited alone (--shard)");
    } else {
        for (uint32_t i = 0; i < n_in; i++) {
            const char *path = gguf_split_path(set, i);
            struct stat st;
            in[i].f = gguf_split_shard(set, i);
            in[i].fd = open(path, O_RDONLY | O_CLOEXEC);
            /* the file opened by name again: it must still be the shard read */
            if (in[i].fd < 0 || fstat(in[i].fd, &st) != 0 || !S_ISREG(st.st_mode) ||
                (uint64_t)st.st_size != gguf_file_size(in[i].f)) {
                cli_error(path, "cannot open again to copy its tensors: %s",
                          in[i].fd < 0 ? strerror(errno) : "it changed");
                goto done;
            }
            in[i].regular = 1;
            in[i].copy = gguf_input_mode(in[i].f) == GGUF_INPUT_MAPPED;
        }
    }
    /* --in-place rewrites the bytes before the data of the file itself */
    for (uint32_t i = 0; o->in_place && i < n_in; i++)
        if (!in[i].copy) {
            cli_error(gguf_name(in[i].f), "--in-place needs an uncompressed regular file: write to OUT instead");
            goto done;
        }
    /* the edits: in the first file (the metadata), or all with --all-shards */
    uint64_t changes = 0;
    for (uint32_t i = 0; i < n_in; i++) {
        if (i > 0 && !o->all_shards) continue;
        if (make_plan(in[i].f, o->ed, o->n_ed, &in[i].p)) goto done;
        if (o->in_place && fit_in_place(in[i].f, &in[i].p)) goto done;
        if (!(in[i].g = read_back(in[i].f, &in[i].p))) goto done;
    }
    if (o->in_place) {
        for (uint32_t i = 0; i < n_in; i++)
            if (in[i].g)
                changes += mdiff_kv(out, in[i].f, in[i].g, gguf_name(in[i].f), gguf_name(in[i].f),
                                    o->dry_run && !o->quiet, 0);
        if (o->dry_run) {
            status = changes ? CLI_EXIT_OK : CLI_EXIT_NEGATIVE;
            goto done;
        }
        guard_output_catch();
        for (uint32_t i = 0; i < n_in; i++)
            if (in[i].g && rewrite_in_place(in[i].f, &in[i].p, gguf_name(in[i].f))) goto done;
        status = CLI_EXIT_OK;
        goto done;
    }
    if (!o->dry_run && outset_init(&os, o->out, n_in, n_in > 1)) goto done;
    for (uint32_t i = 0; i < n_in; i++) {
        if (!in[i].g) continue;
        const char *shown_out = o->dry_run ? (o->out ? o->out : gguf_name(in[i].f)) : os.path[i];
        changes += mdiff_kv(out, in[i].f, in[i].g, gguf_name(in[i].f), shown_out, o->dry_run && !o->quiet, 0);
    }
    if (o->dry_run) {
        status = changes ? CLI_EXIT_OK : CLI_EXIT_NEGATIVE;
        goto done;
    }
    /* the input is never overwritten */
    for (uint32_t k = 0; k < n_in; k++) {
        struct stat so, si;
        if (strcmp(os.path[k], "-") == 0 || stat(os.path[k], &so) != 0) continue;
        for (uint32_t i = 0; i < n_in; i++)
            if (in[i].regular && fstat(in[i].fd, &si) == 0 && so.st_dev == si.st_dev && so.st_ino == si.st_ino) {
                cli_error(os.path[k], "is the input file; write to another name (the input is never changed)");
                goto done;
            }
    }
    guard_output_catch();
    for (uint32_t i = 0; i < n_in; i++) {
        if (write_file(&in[i], &os, i)) goto done;
        outset_done(&os, i);
    }
    if (outset_place(&os)) goto done;
    status = CLI_EXIT_OK;
done:
    outset_free(&os);
    for (uint32_t i = 0; in && i < n_in; i++) {
        plan_free(&in[i].p);
        gguf_close(in[i].g);
        if (in[i].fd >= 0) close(in[i].fd);
    }
    free(in);
    guard_close(alone);
    guard_split_close(set);
    return status;
}

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

enum { OPT_SET = 256, OPT_SET_FILE, OPT_DELETE, OPT_RENAME, OPT_SHARD, OPT_ALL_SHARDS, OPT_IN_PLACE };

static const struct option long_options[] = {
    { "set", required_argument, NULL, OPT_SET },
    { "set-file", required_argument, NULL, OPT_SET_FILE },
    { "delete", required_argument, NULL, OPT_DELETE },
    { "rename", required_argument, NULL, OPT_RENAME },
    { "dry-run", no_argument, NULL, 'n' },
    { "shard", no_argument, NULL, OPT_SHARD },
    { "all-shards", no_argument, NULL, OPT_ALL_SHARDS },
    { "in-place", no_argument, NULL, OPT_IN_PLACE },
    { "quiet", no_argument, NULL, 'q' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 }
};

/* Returns -1 to go on, or the exit status for main to return at once. */
static int parse_options(int argc, char **argv, struct options *o)
{
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":nqhV", long_options, NULL)) != -1) {
        struct edit *e = &o->ed[o->n_ed];
        switch (c) {
        case OPT_SET:
        case OPT_SET_FILE:
        case OPT_RENAME: {
            const char *name = c == OPT_SET ? "--set" : c == OPT_SET_FILE ? "--set-file" : "--rename";
            const char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg)
                return cli_usage_error("%s: expected %s, got '%s'", name,
                                       c == OPT_RENAME ? "OLD=NEW" : c == OPT_SET ? "KEY=VALUE" : "KEY=PATH",
                                       optarg);
            if (!(e->key = strdup(optarg))) goto nomem;
            e->key[eq - optarg] = '\0';
            e->arg = e->key + (eq - optarg) + 1;
            e->op = c == OPT_SET ? OP_SET : c == OPT_SET_FILE ? OP_SET_FILE : OP_RENAME;
            o->n_ed++;
            break;
        }
        case OPT_DELETE:
            if (!(e->key = strdup(optarg))) goto nomem;
            e->arg = NULL;
            e->op = OP_DELETE;
            o->n_ed++;
            break;
        case 'n': o->dry_run = 1; break;
        case OPT_SHARD: o->shard = 1; break;
        case OPT_ALL_SHARDS: o->all_shards = 1; break;
        case OPT_IN_PLACE: o->in_place = 1; break;
        case 'q': o->quiet = 1; break;
        default:
            return cli_getopt_default(c, argv, usage);
        }
    }
    int n = argc - optind;
    const int one = o->dry_run || o->in_place;
    if (n < 1 || n < 2 - one) return cli_usage_error(one ? "missing FILE" : "missing FILE or OUT");
    if (n > 2 - o->in_place) return cli_usage_error("unexpected argument '%s'", argv[optind + 2 - o->in_place]);
    if (o->in_place && strcmp(argv[optind], "-") == 0)
        return cli_usage_error("--in-place needs FILE to be a file, not standard input");
    if (o->n_ed == 0) return cli_usage_error("nothing to do: give --set, --set-file, --delete or --rename");
    if (o->shard && o->all_shards) return cli_usage_error("--shard and --all-shards cannot be combined");
    o->in = argv[optind];
    o->out = n == 2 ? argv[optind + 1] : NULL;
    size_t stdin_uses = strcmp(o->in, "-") == 0;
    for (size_t i = 0; i < o->n_ed; i++)
        if (o->ed[i].op == OP_SET_FILE) {
            const char *rest;
            spec_type(o->ed[i].arg, &rest);
            stdin_uses += strcmp(rest, "-") == 0;
        }
    if (stdin_uses > 1) return cli_usage_error("standard input can be read once only");
    return -1;
nomem:
    cli_error(NULL, "out of memory");
    return CLI_EXIT_TROUBLE;
}

int main(int argc, char **argv)
{
    struct options o;
    memset(&o, 0, sizeof o);
    cli_set_prog("gguf-edit");
    guard_init();
    o.ed = calloc((size_t)argc, sizeof *o.ed);
    if (!o.ed) {
        cli_error(NULL, "out of memory");
        return CLI_EXIT_TROUBLE;
    }
    int status = parse_options(argc, argv, &o);
    if (status < 0) {
        status = edit(&o);
        if (cli_out_close(out) != CLI_EXIT_OK) status = CLI_EXIT_TROUBLE;
    }
    for (size_t i = 0; i < o.n_ed; i++) free(o.ed[i].key);
    free(o.ed);
    return status;
}
