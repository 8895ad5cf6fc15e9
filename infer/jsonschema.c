/* jsonschema.c -- JSON Schema to GBNF; see jsonschema.h. */
#include <config.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/check.h"
#include "infer/jsonschema.h"

/* ------------------------------------------------------------------------ */
/* JSON                                                                      */

enum { J_NULL, J_FALSE, J_TRUE, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
    int type;
    const char *raw;        /* J_NUM: its text */
    size_t raw_len;
    char *s;                /* J_STR: the string, decoded (NUL-terminated; may hold NUL) */
    size_t len;
    struct jv *v;           /* J_ARR, J_OBJ: the values */
    char **k;               /* J_OBJ: the keys (decoded, NUL-terminated) */
    size_t n;
};

#define MAX_NESTING 64

struct jp {
    const char *start, *p, *end;
    const char *name;
    gguf_error *err;
    int status;
};

static void jv_free(struct jv *v)
{
    free(v->s);
    for (size_t i = 0; i < v->n; i++) {
        jv_free(&v->v[i]);
        if (v->k) free(v->k[i]);
    }
    free(v->v);
    free(v->k);
    memset(v, 0, sizeof *v);
}

static int jfail(struct jp *j, const char *what)
{
    if (j->status) return j->status;
    uint32_t line = 1, col = 1;
    for (const char *q = j->start; q < j->p; q++) {
        if (*q == '\n') line++, col = 1;
        else col++;
    }
    j->status = qwen_fail(j->err, GGUF_E_FORMAT, UINT64_MAX, "%s:%" PRIu32 ":%" PRIu32 ": not JSON: %s",
                          j->name, line, col, what);
    return j->status;
}

static void jws(struct jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

/* Appends code point c as UTF-8. */
static int put_utf8(char *d, size_t *n, uint32_t c)
{
    if (c < 0x80) d[(*n)++] = (char)c;
    else if (c < 0x800) d[(*n)++] = (char)(0xC0 | c >> 6), d[(*n)++] = (char)(0x80 | (c & 0x3F));
    else if (c < 0x10000)
        d[(*n)++] = (char)(0xE0 | c >> 12), d[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3F)),
        d[(*n)++] = (char)(0x80 | (c & 0x3F));
    else
        d[(*n)++] = (char)(0xF0 | c >> 18), d[(*n)++] = (char)(0x80 | ((c >> 12) & 0x3F)),
        d[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3F)), d[(*n)++] = (char)(0x80 | (c & 0x3F));
    return 0;
}

static int hex4(struct jp *j, uint32_t *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char h = j->p < j->end ? *j->p : 0;
        int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
        if (d < 0) return jfail(j, "\\u without four hexadecimal digits");
        *v = *v * 16 + (uint32_t)d;
        j->p++;
    }
    return 0;
}

/* A string at j->p (its opening quote) into *out, *len. */
static int jstring(struct jp *j, char **out, size_t *len)
{
    j->p++;
    const char *q = j->p;
    while (q < j->end && *q != '"') q += *q == '\\' ? 2 : 1;
    if (q >= j->end) return jfail(j, "a string without its closing quote");
    char *d = malloc((size_t)(q - j->p) + 1);
    if (!d) return j->status = qwen_fail(j->err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", j->name);
    size_t n = 0;
    while (*j->p != '"') {
        unsigned char c = (unsigned char)*j->p;
        if (c < 0x20) {
            free(d);
            return jfail(j, "a control character in a string");
        }
        if (c != '\\') {
            d[n++] = (char)c;
            j->p++;
            continue;
        }
        j->p++;
        char e = *j->p++;
        uint32_t u;
        switch (e) {
        case '"': case '\\': case '/': d[n++] = e; break;
        case 'b': d[n++] = '\b'; break;
        case 'f': d[n++] = '\f'; break;
        case 'n': d[n++] = '\n'; break;
        case 'r': d[n++] = '\r'; break;
        case 't': d[n++] = '\t'; break;
        case 'u':
            if (hex4(j, &u)) {
                free(d);
                return j->status;
            }
            if (u >= 0xD800 && u <= 0xDBFF && j->end - j->p >= 6 && j->p[0] == '\\' && j->p[1] == 'u') {
                uint32_t lo;
                j->p += 2;
                if (hex4(j, &lo)) {
                    free(d);
                    return j->status;
                }
                if (lo >= 0xDC00 && lo <= 0xDFFF) u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            }
            /* (6 source bytes give at most 4) */
            put_utf8(d, &n, u);
            break;
        default:
            free(d);
            j->p -= 2;
            return jfail(j, "an unknown escape in a string");
        }
    }
    j->p++;
    d[n] = 0;
    *out = d;
    *len = n;
    return 0;
}

static int jvalue(struct jp *j, struct jv *v, int depth)
{
    memset(v, 0, sizeof *v);
    jws(j);
    if (j->p >= j->end) return jfail(j, "a value expected");
    if (depth > MAX_NESTING) return jfail(j, "nested more than 64 deep");
    char c = *j->p;
    if (c == '"') {
        v->type = J_STR;
        return jstring(j, &v->s, &v->len);
    }
    if (c == '{' || c == '[') {
        const int obj = c == '{';
        v->type = obj ? J_OBJ : J_ARR;
        j->p++;
        jws(j);
        if (j->p < j->end && *j->p == (obj ? '}' : ']')) {
            j->p++;
            return 0;
        }
        size_t cap = 0;
        for (;;) {
            if (v->n == cap) {
                cap = cap ? cap * 2 : 4;
                struct jv *nv = realloc(v->v, cap * sizeof *nv);
                char **nk = obj ? realloc(v->k, cap * sizeof *nk) : NULL;
                if (nv) v->v = nv;
                if (nk) v->k = nk;
                if (!nv || (obj && !nk))
                    return j->status = qwen_fail(j->err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", j->name);
            }
            if (obj) {
                jws(j);
                size_t kl;
                if (j->p >= j->end || *j->p != '"') return jfail(j, "a key (a string) expected");
                if (jstring(j, &v->k[v->n], &kl)) return j->status;
                jws(j);
                if (j->p >= j->end || *j->p != ':') {
                    free(v->k[v->n]);
                    return jfail(j, "':' expected");
                }
                j->p++;
            }
            if (jvalue(j, &v->v[v->n], depth + 1)) {
                if (obj) free(v->k[v->n]);
                jv_free(&v->v[v->n]);
                return j->status;
            }
            v->n++;
            jws(j);
            if (j->p < j->end && *j->p == ',') {
                j->p++;
                continue;
            }
            if (j->p < j->end && *j->p == (obj ? '}' : ']')) {
                j->p++;
                return 0;
            }
            return jfail(j, obj ? "',' or '}' expected" : "',' or ']' expected");
        }
    }
    static const struct { const char *w; int t; } words[] = {{"null", J_NULL}, {"false", J_FALSE}, {"true", J_TRUE}};
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(words[i].w);
        if ((size_t)(j->end - j->p) >= n && memcmp(j->p, words[i].w, n) == 0) {
            v->type = words[i].t;
            j->p += n;
            return 0;
        }
    }
    const char *s = j->p;
    if (j->p < j->end && *j->p == '-') j->p++;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') {
        j->p = s;
        return jfail(j, "a value expected");
    }
    if (*j->p == '0') j->p++;
    else while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9') return jfail(j, "digits after '.' expected");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9') return jfail(j, "an exponent expected");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    v->type = J_NUM;
    v->raw = s;
    v->raw_len = (size_t)(j->p - s);
    return 0;
}

static const struct jv *member(const struct jv *o, const char *key)
{
    if (o->type != J_OBJ) return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->k[i], key) == 0) return &o->v[i];
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Grammar text                                                              */

struct buf {
    char *p;
    size_t n, cap;
    int failed;
};

static void put(struct buf *b, const char *s, size_t n)
{
    if (b->failed) return;
    if (b->cap - b->n < n + 1) {
        size_t c = b->cap ? b->cap : 1024;
        while (c - b->n < n + 1) c *= 2;
        char *q = realloc(b->p, c);
        if (!q) {
            b->failed = 1;
            return;
        }
        b->p = q;
        b->cap = c;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void puts_(struct buf *b, const char *s)
{
    put(b, s, strlen(s));
}

static void putf(struct buf *b, const char *fmt, ...)
{
    char t[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t, sizeof t, fmt, ap);
    va_end(ap);
    put(b, t, n < 0 ? 0 : (size_t)n < sizeof t ? (size_t)n : sizeof t - 1);
}

/* The n bytes at s as the inside of a GBNF literal. */
static void put_gbnf(struct buf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            char t[2] = {'\\', (char)c};
            put(b, t, 2);
        } else if (c < 0x20 || c == 0x7F) {
            putf(b, "\\x%02X", c);
        } else {
            put(b, (const char *)&c, 1);
        }
    }
}

/* A GBNF literal of the JSON text of string s (len bytes). */
static void put_json_string(struct buf *b, const char *s, size_t len)
{
    struct buf j = {0};
    put(&j, "\"", 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"') put(&j, "\\\"", 2);
        else if (c == '\\') put(&j, "\\\\", 2);
        else if (c == '\n') put(&j, "\\n", 2);
        else if (c == '\r') put(&j, "\\r", 2);
        else if (c == '\t') put(&j, "\\t", 2);
        else if (c < 0x20) putf(&j, "\\u%04x", c);
        else put(&j, (const char *)&c, 1);
    }
    put(&j, "\"", 1);
    if (j.failed) b->failed = 1;
    put(b, "\"", 1);
    if (!j.failed) put_gbnf(b, j.p, j.n);
    put(b, "\"", 1);
    free(j.p);
}

/* The basic rules every grammar has. */
static const char basics[] =
    "space ::= | \" \" | \"\\n\" [ \\t]{0,20}\n"
    "char ::= [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n"
    "string ::= \"\\\"\" char* \"\\\"\" space\n"
    "integral ::= \"0\" | [1-9] [0-9]{0,15}\n"
    "number ::= \"-\"? integral (\".\" [0-9]+)? ([eE] [-+]? [0-9]{1,3})? space\n"
    "integer ::= \"-\"? integral space\n"
    "boolean ::= (\"true\" | \"false\") space\n"
    "null ::= \"null\" space\n"
    "value ::= object | array | string | number | boolean | null\n"
    "object ::= \"{\" space (string \":\" space value (\",\" space string \":\" space value)*)? \"}\" space\n"
    "array ::= \"[\" space (value (\",\" space value)*)? \"]\" space\n";

struct gen {
    struct buf out;         /* the rules */
    const struct jv *root;
    const char *name;
    gguf_error *err;
    int status;
    uint32_t n_rules;
    char path[512];         /* the JSON pointer of the schema at hand */
    /* $refs done: their names */
    char **refs;
    size_t n_refs;
};

static int gfail(struct gen *g, int status, const char *fmt, ...)
{
    if (g->status) return g->status;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    g->status = qwen_fail(g->err, status, UINT64_MAX, "%s: %s: %s", g->name,
                          g->path[0] ? g->path : "#", msg);
    return g->status;
}

/* path += "/" seg (or "/i"); returns the old length, to restore. */
static size_t path_push(struct gen *g, const char *seg)
{
    size_t n = strlen(g->path);
    snprintf(g->path + n, sizeof g->path - n, "%s%s", n ? "/" : "#/", seg);
    return n;
}

static int gen_schema(struct gen *g, const struct jv *s, struct buf *body);

/* A new rule for schema s; its name into *id.  Returns the status. */
static int new_rule(struct gen *g, const struct jv *s, uint32_t *id)
{
    struct buf body = {0};
    *id = ++g->n_rules;
    int st = gen_schema(g, s, &body);
    if (!st) {
        putf(&g->out, "r%" PRIu32 " ::= ", *id);
        put(&g->out, body.p ? body.p : "", body.n);
        puts_(&g->out, "\n");
        if (body.failed) g->out.failed = 1;
    }
    free(body.p);
    return st;
}

static uint32_t count_of(struct gen *g, const struct jv *s, const char *key, uint32_t def)
{
    const struct jv *v = member(s, key);
    if (!v) return def;
    double d = v->type == J_NUM ? strtod(v->raw, NULL) : -1;
    if (v->type != J_NUM || d < 0 || d != (double)(uint64_t)d) {
        gfail(g, GGUF_E_FORMAT, "%s is not a count", key);
        return def;
    }
    if (d > 1000) {
        gfail(g, GGUF_E_UNSUPPORTED, "%s over 1000 is not supported", key);
        return def;
    }
    return (uint32_t)d;
}

/* {min,max} after an item (max UINT32_MAX: none). */
static void put_repeat(struct buf *b, uint32_t min, uint32_t max)
{
    if (max == UINT32_MAX) {
        if (min == 0) puts_(b, "*");
        else if (min == 1) puts_(b, "+");
        else putf(b, "{%" PRIu32 ",}", min);
    } else if (!(min == 1 && max == 1)) {
        putf(b, "{%" PRIu32 ",%" PRIu32 "}", min, max);
    }
}

/* A JSON value of an enum or const as a literal. */
static int put_const(struct gen *g, const struct jv *v, struct buf *b)
{
    switch (v->type) {
    case J_NULL: puts_(b, "\"null\""); break;
    case J_TRUE: puts_(b, "\"true\""); break;
    case J_FALSE: puts_(b, "\"false\""); break;
    case J_NUM: put(b, "\"", 1), put_gbnf(b, v->raw, v->raw_len), put(b, "\"", 1); break;
    case J_STR: put_json_string(b, v->s, v->len); break;
    default: return gfail(g, GGUF_E_UNSUPPORTED, "an enum or const of arrays or objects is not supported");
    }
    puts_(b, " space");
    return 0;
}

/* The properties of an object schema, as an ordered subset that holds the
 * required ones: rule "rN-i-f" is the properties from i on, f: the first
 * (no comma before it). */
static int gen_object(struct gen *g, const struct jv *s, struct buf *b)
{
    const struct jv *props = member(s, "properties"), *req = member(s, "required");
    if (props && props->type != J_OBJ) return gfail(g, GGUF_E_FORMAT, "properties is not an object");
    if (req && req->type != J_ARR) return gfail(g, GGUF_E_FORMAT, "required is not a list");
    const struct jv *add = member(s, "additionalProperties");
    if (add && !(add->type == J_FALSE || (add->type == J_OBJ && add->n == 0) || add->type == J_TRUE))
        return gfail(g, GGUF_E_UNSUPPORTED, "additionalProperties with a schema is not supported");
    if (!props && !req) {
        puts_(b, "object");
        return 0;
    }
    /* the keys: the properties in order, then required ones they lack */
    size_t n = (props ? props->n : 0) + (req ? req->n : 0);
    const char **key = calloc(n ? n : 1, sizeof *key);
    uint32_t *rule = calloc(n ? n : 1, sizeof *rule);
    unsigned char *must = calloc(n ? n : 1, 1);
    if (!key || !rule || !must) {
        free(key), free(rule), free(must);
        return gfail(g, GGUF_E_NOMEM, "out of memory");
    }
    size_t m = 0;
    for (size_t i = 0; props && i < props->n && !g->status; i++) {
        key[m] = props->k[i];
        size_t old = path_push(g, "properties");
        size_t old2 = path_push(g, props->k[i]);
        (void)old2;
        new_rule(g, &props->v[i], &rule[m]);
        g->path[old] = 0;
        m++;
    }
    for (size_t i = 0; req && i < req->n && !g->status; i++) {
        if (req->v[i].type != J_STR) {
            gfail(g, GGUF_E_FORMAT, "required holds a value that is not a string");
            break;
        }
        size_t k = 0;
        while (k < m && strcmp(key[k], req->v[i].s) != 0) k++;
        if (k == m) {
            key[m] = req->v[i].s;
            rule[m++] = 0; /* any value */
        }
        must[k] = 1;
    }
    if (!g->status) {
        const uint32_t base = ++g->n_rules;
        for (size_t i = m; i-- > 0;)
            for (int f = 0; f < 2; f++) {
                putf(&g->out, "r%" PRIu32 "-%zu-%d ::= ", base, i, f);
                struct buf kv = {0};
                if (!f) puts_(&kv, "\",\" space ");
                put_json_string(&kv, key[i], strlen(key[i]));
                puts_(&kv, " space \":\" space ");
                if (rule[i]) putf(&kv, "r%" PRIu32, rule[i]);
                else puts_(&kv, "value");
                if (i + 1 < m) putf(&kv, " r%" PRIu32 "-%zu-0", base, i + 1);
                put(&g->out, kv.p ? kv.p : "", kv.n);
                if (kv.failed) g->out.failed = 1;
                free(kv.p);
                if (!must[i]) {
                    if (i + 1 < m) putf(&g->out, " | r%" PRIu32 "-%zu-%d", base, i + 1, f);
                    else puts_(&g->out, " | ");
                }
                puts_(&g->out, "\n");
            }
        if (m) putf(b, "\"{\" space r%" PRIu32 "-0-1 \"}\" space", base);
        else puts_(b, "\"{\" space \"}\" space");
    }
    free(key);
    free(rule);
    free(must);
    return g->status;
}

static int gen_type(struct gen *g, const struct jv *s, const char *t, struct buf *b)
{
    if (!strcmp(t, "object")) return gen_object(g, s, b);
    if (!strcmp(t, "array")) {
        const struct jv *items = member(s, "items");
        uint32_t min = count_of(g, s, "minItems", 0), max = count_of(g, s, "maxItems", UINT32_MAX);
        if (g->status) return g->status;
        if (max < min) return gfail(g, GGUF_E_FORMAT, "maxItems below minItems");
        uint32_t item = 0;
        if (items) {
            if (items->type == J_ARR)
                return gfail(g, GGUF_E_UNSUPPORTED, "items as a list (tuples) is not supported");
            size_t old = path_push(g, "items");
            int st = new_rule(g, items, &item);
            g->path[old] = 0;
            if (st) return st;
        }
        char it[32];
        if (item) snprintf(it, sizeof it, "r%" PRIu32, item);
        else snprintf(it, sizeof it, "value");
        puts_(b, "\"[\" space ");
        if (max == 0) {
        } else if (min == 0) {
            putf(b, "(%s (\",\" space %s)", it, it);
            put_repeat(b, 0, max == UINT32_MAX ? UINT32_MAX : max - 1);
            puts_(b, ")?");
        } else {
            putf(b, "%s (\",\" space %s)", it, it);
            put_repeat(b, min - 1, max == UINT32_MAX ? UINT32_MAX : max - 1);
        }
        puts_(b, " \"]\" space");
        return 0;
    }
    if (!strcmp(t, "string")) {
        uint32_t min = count_of(g, s, "minLength", 0), max = count_of(g, s, "maxLength", UINT32_MAX);
        if (g->status) return g->status;
        if (max < min) return gfail(g, GGUF_E_FORMAT, "maxLength below minLength");
        if (min == 0 && max == UINT32_MAX) {
            puts_(b, "string");
        } else {
            puts_(b, "\"\\\"\" char");
            put_repeat(b, min, max);
            puts_(b, " \"\\\"\" space");
        }
        return 0;
    }
    static const char *const simple[] = {"number", "integer", "boolean", "null"};
    for (size_t i = 0; i < 4; i++)
        if (!strcmp(t, simple[i])) {
            puts_(b, simple[i]);
            return 0;
        }
    return gfail(g, GGUF_E_FORMAT, "unknown type '%s'", t);
}

/* The keywords a schema may hold. */
static int known_keyword(const char *k)
{
    static const char *const ok[] = {
        "type", "properties", "required", "items", "minItems", "maxItems", "minLength", "maxLength",
        "enum", "const", "anyOf", "oneOf", "$ref", "$defs", "definitions", "additionalProperties",
        "title", "description", "$schema", "$id", "examples", "default", "$comment"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (!strcmp(k, ok[i])) return 1;
    return 0;
}

static int gen_ref(struct gen *g, const char *ref, struct buf *b)
{
    const char *name = NULL;
    const struct jv *defs = NULL;
    if (!strncmp(ref, "#/$defs/", 8)) name = ref + 8, defs = member(g->root, "$defs");
    else if (!strncmp(ref, "#/definitions/", 14)) name = ref + 14, defs = member(g->root, "definitions");
    else return gfail(g, GGUF_E_UNSUPPORTED, "$ref '%s': only #/$defs/NAME and #/definitions/NAME are supported", ref);
    const struct jv *target = defs ? member(defs, name) : NULL;
    if (!target) return gfail(g, GGUF_E_FORMAT, "$ref '%s': no such definition", ref);
    size_t i = 0;
    while (i < g->n_refs && strcmp(g->refs[i], ref) != 0) i++;
    if (i == g->n_refs) {
        char **r = realloc(g->refs, (g->n_refs + 1) * sizeof *r);
        char *copy = strdup(ref);
        if (!r || !copy) {
            free(copy);
            if (r) g->refs = r;
            return gfail(g, GGUF_E_NOMEM, "out of memory");
        }
        g->refs = r;
        g->refs[g->n_refs++] = copy;
        /* the definition's rule, made once (a schema may refer to itself) */
        struct buf body = {0};
        char saved[sizeof g->path];
        memcpy(saved, g->path, sizeof saved);
        snprintf(g->path, sizeof g->path, "%s", ref);
        int st = gen_schema(g, target, &body);
        memcpy(g->path, saved, sizeof saved);
        if (!st) {
            putf(&g->out, "ref%zu ::= ", i);
            put(&g->out, body.p ? body.p : "", body.n);
            puts_(&g->out, "\n");
        }
        free(body.p);
        if (st) return st;
    }
    putf(b, "ref%zu", i);
    return 0;
}

static int gen_schema(struct gen *g, const struct jv *s, struct buf *b)
{
    if (g->status) return g->status;
    if (s->type == J_TRUE) {
        puts_(b, "value");
        return 0;
    }
    if (s->type == J_FALSE) return gfail(g, GGUF_E_UNSUPPORTED, "the schema false allows no value");
    if (s->type != J_OBJ) return gfail(g, GGUF_E_FORMAT, "a schema must be an object or true");
    for (size_t i = 0; i < s->n; i++)
        if (!known_keyword(s->k[i]))
            return gfail(g, GGUF_E_UNSUPPORTED, "the keyword '%s' is not supported", s->k[i]);
    const struct jv *v;
    if ((v = member(s, "$ref"))) {
        if (v->type != J_STR) return gfail(g, GGUF_E_FORMAT, "$ref is not a string");
        return gen_ref(g, v->s, b);
    }
    if ((v = member(s, "const"))) return put_const(g, v, b);
    if ((v = member(s, "enum"))) {
        if (v->type != J_ARR || v->n == 0) return gfail(g, GGUF_E_FORMAT, "enum is not a list of values");
        puts_(b, "(");
        for (size_t i = 0; i < v->n && !g->status; i++) {
            if (i) puts_(b, " | ");
            put_const(g, &v->v[i], b);
        }
        puts_(b, ")");
        return g->status;
    }
    const struct jv *alts = member(s, "anyOf");
    if (!alts) alts = member(s, "oneOf");
    if (alts) {
        if (alts->type != J_ARR || alts->n == 0) return gfail(g, GGUF_E_FORMAT, "anyOf/oneOf is not a list of schemas");
        puts_(b, "(");
        for (size_t i = 0; i < alts->n && !g->status; i++) {
            char idx[48];
            snprintf(idx, sizeof idx, "%s/%zu", member(s, "anyOf") ? "anyOf" : "oneOf", i);
            size_t old = path_push(g, idx);
            uint32_t r;
            if (!new_rule(g, &alts->v[i], &r)) putf(b, "%sr%" PRIu32, i ? " | " : "", r);
            g->path[old] = 0;
        }
        puts_(b, ")");
        return g->status;
    }
    const struct jv *t = member(s, "type");
    if (!t) {
        if (member(s, "properties") || member(s, "required")) return gen_type(g, s, "object", b);
        if (member(s, "items")) return gen_type(g, s, "array", b);
        puts_(b, "value");
        return 0;
    }
    if (t->type == J_STR) return gen_type(g, s, t->s, b);
    if (t->type != J_ARR || t->n == 0) return gfail(g, GGUF_E_FORMAT, "type is not a name or a list of names");
    puts_(b, "(");
    for (size_t i = 0; i < t->n && !g->status; i++) {
        if (t->v[i].type != J_STR) return gfail(g, GGUF_E_FORMAT, "type holds a value that is not a name");
        if (i) puts_(b, " | ");
        puts_(b, "(");
        gen_type(g, s, t->v[i].s, b);
        puts_(b, ")");
    }
    puts_(b, ")");
    return g->status;
}

int qwen_json_schema_grammar(const char *text, size_t len, const char *name, char **gbnf,
                             gguf_error *err)
{
    *gbnf = NULL;
    if (!name) name = "schema";
    if (len > QWEN_SCHEMA_MAX)
        return qwen_fail(err, GGUF_E_FORMAT, UINT64_MAX, "%s: a schema of more than %u bytes", name,
                         QWEN_SCHEMA_MAX);
    struct jp j = {text, text, text + len, name, err, GGUF_OK};
    struct jv root;
    if (jvalue(&j, &root, 0)) {
        jv_free(&root);
        return j.status;
    }
    jws(&j);
    if (j.p < j.end) {
        jfail(&j, "more after the value");
        jv_free(&root);
        return j.status;
    }
    struct gen g;
    memset(&g, 0, sizeof g);
    g.root = &root;
    g.name = name;
    g.err = err;
    puts_(&g.out, basics);
    struct buf body = {0};
    if (!gen_schema(&g, &root, &body)) {
        puts_(&g.out, "root ::= ");
        put(&g.out, body.p ? body.p : "", body.n);
        puts_(&g.out, "\n");
    }
    free(body.p);
    for (size_t i = 0; i < g.n_refs; i++) free(g.refs[i]);
    free(g.refs);
    jv_free(&root);
    if (!g.status && (g.out.failed || body.failed))
        g.status = qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", name);
    if (g.status) {
        free(g.out.p);
        return g.status;
    }
    *gbnf = g.out.p;
    return GGUF_OK;
}
