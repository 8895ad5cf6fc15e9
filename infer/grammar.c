/*
 * grammar.c -- GBNF grammars and the sets of ways a text can go on in
 * them (see grammar.h).
 *
 * A grammar compiles to elements in one array: each alternative of each
 * rule is a run of elements (a character class, or a reference to a rule)
 * closed by an END.  Repetitions and groups become rules of their own:
 * x* is R ::= x R | (nothing), x+ is R ::= x R | x, x? is R ::= x |
 * (nothing), x{m,n} is m copies of x and n - m nested optional ones.
 *
 * Where a text is in the grammar is a set of stacks of element positions:
 * the top of each is the next class to match, the ones below are where
 * the rules entered go on once they end; an empty stack is a text that
 * has ended root.  Taking a character keeps the stacks whose top matches
 * it, each moved past it and expanded again until its top is a class
 * (entering rules, leaving ended ones).  A reference whose rule ends its
 * alternative is entered without keeping where to go on (a tail call), so
 * that x* does not deepen the stacks.
 *
 * The allowed tokens come from a walk over a tree of the vocabulary's
 * bytes, with the set of stacks carried down: a branch is cut as soon as
 * no stack takes its bytes, so tokens that share a start share the work.
 */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/check.h"
#include "infer/grammar.h"

enum { E_END, E_CHAR, E_REF };

struct elem {
    uint8_t kind;
    uint8_t negate;         /* E_CHAR: every character but the ranges */
    uint32_t a, n;          /* E_CHAR: ranges a .. a + n - 1; E_REF: rule a */
};

struct range {
    uint32_t lo, hi;
};

struct rule {
    char *name;
    uint32_t first, n;      /* its alternatives: alt[first .. first + n - 1] */
    uint32_t line, col;     /* where it was first used or defined */
    int defined;
};

struct qwen_grammar {
    struct elem *e;
    size_t n_e, cap_e;
    struct range *r;
    size_t n_r, cap_r;
    uint32_t *alt;          /* the first element of each alternative */
    size_t n_alt, cap_alt;
    struct rule *rules;
    size_t n_rules, cap_rules;
    uint32_t root;
};

/* Most stacks a state holds, most elements a stack, most repetitions. */
#define MAX_STACKS 4096
#define MAX_DEPTH 512
#define MAX_REPEAT 1000

/* Grows *p (of *cap elements of size sz) to hold n.  Returns 0 or -1. */
static int grow(void **p, size_t *cap, size_t n, size_t sz)
{
    if (n <= *cap) return 0;
    size_t c = *cap ? *cap : 16;
    while (c < n) c *= 2;
    void *q = realloc(*p, c * sz);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Parsing                                                                   */

/* A sequence of elements being built, and alternatives of sequences. */
struct seq {
    struct elem *e;
    size_t n, cap;
};

struct alts {
    struct seq *s;
    size_t n, cap;
};

struct parser {
    qwen_grammar *g;
    const char *start, *p, *end;
    const char *name;
    gguf_error *err;
    int status;             /* GGUF_OK until a failure */
    uint32_t n_anon;        /* rules made for groups and repetitions */
};

static void seqs_free(struct alts *a)
{
    for (size_t i = 0; i < a->n; i++) free(a->s[i].e);
    free(a->s);
    memset(a, 0, sizeof *a);
}

/* Line and column of p (1-based). */
static void where(const struct parser *ps, const char *p, uint32_t *line, uint32_t *col)
{
    *line = 1;
    *col = 1;
    for (const char *q = ps->start; q < p && q < ps->end; q++) {
        if (*q == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static int fail(struct parser *ps, const char *at, const char *what)
{
    if (ps->status) return ps->status;
    uint32_t line, col;
    where(ps, at, &line, &col);
    ps->status = qwen_fail(ps->err, GGUF_E_FORMAT, UINT64_MAX, "%s:%" PRIu32 ":%" PRIu32 ": %s",
                           ps->name, line, col, what);
    return ps->status;
}

static int nomem(struct parser *ps)
{
    if (!ps->status)
        ps->status = qwen_fail(ps->err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", ps->name);
    return ps->status;
}

/* Skips blanks, line ends and comments. */
static void skip(struct parser *ps)
{
    while (ps->p < ps->end) {
        char c = *ps->p;
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            ps->p++;
        } else if (c == '#') {
            while (ps->p < ps->end && *ps->p != '\n') ps->p++;
        } else {
            break;
        }
    }
}

static int is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

/* The length of the name at p (0: none). */
static size_t name_len(const struct parser *ps, const char *p)
{
    size_t n = 0;
    while (p + n < ps->end && is_name_char(p[n])) n++;
    return n;
}

/* 1 when a new rule starts at p: NAME, blanks, "::=". */
static int rule_starts(const struct parser *ps, const char *p)
{
    size_t n = name_len(ps, p);
    if (!n) return 0;
    p += n;
    while (p < ps->end && (*p == ' ' || *p == '\t')) p++;
    return ps->end - p >= 3 && memcmp(p, "::=", 3) == 0;
}

/* The rule named by the n bytes at s, made (undefined) when new; where
 * says where for messages.  Returns its id, or UINT32_MAX out of memory. */
static uint32_t rule_id(struct parser *ps, const char *s, size_t n, const char *at)
{
    qwen_grammar *g = ps->g;
    for (size_t i = 0; i < g->n_rules; i++)
        if (strlen(g->rules[i].name) == n && memcmp(g->rules[i].name, s, n) == 0)
            return (uint32_t)i;
    if (grow((void **)&g->rules, &g->cap_rules, g->n_rules + 1, sizeof *g->rules)) return UINT32_MAX;
    struct rule *r = &g->rules[g->n_rules];
    memset(r, 0, sizeof *r);
    if (!(r->name = malloc(n + 1))) return UINT32_MAX;
    memcpy(r->name, s, n);
    r->name[n] = 0;
    where(ps, at, &r->line, &r->col);
    return (uint32_t)g->n_rules++;
}

/* A new rule for a group or a repetition inside rule `parent`. */
static uint32_t anon_rule(struct parser *ps, uint32_t parent, const char *at)
{
    char name[128];
    snprintf(name, sizeof name, "%s_%" PRIu32, ps->g->rules[parent].name, ++ps->n_anon);
    return rule_id(ps, name, strlen(name), at);
}

static int seq_add(struct seq *s, struct elem e)
{
    if (grow((void **)&s->e, &s->cap, s->n + 1, sizeof *s->e)) return -1;
    s->e[s->n++] = e;
    return 0;
}

static int seq_cat(struct seq *s, const struct seq *t)
{
    for (size_t i = 0; i < t->n; i++)
        if (seq_add(s, t->e[i])) return -1;
    return 0;
}

static struct seq *alt_new(struct alts *a)
{
    if (grow((void **)&a->s, &a->cap, a->n + 1, sizeof *a->s)) return NULL;
    struct seq *s = &a->s[a->n++];
    memset(s, 0, sizeof *s);
    return s;
}

/* Gives rule id the alternatives a (which it then owns no more). */
static int commit(struct parser *ps, uint32_t id, struct alts *a)
{
    qwen_grammar *g = ps->g;
    struct rule *r = &g->rules[id];
    r->defined = 1;
    r->first = (uint32_t)g->n_alt;
    r->n = (uint32_t)a->n;
    for (size_t i = 0; i < a->n; i++) {
        if (grow((void **)&g->alt, &g->cap_alt, g->n_alt + 1, sizeof *g->alt) ||
            grow((void **)&g->e, &g->cap_e, g->n_e + a->s[i].n + 1, sizeof *g->e))
            return nomem(ps);
        g->alt[g->n_alt++] = (uint32_t)g->n_e;
        if (a->s[i].n) memcpy(g->e + g->n_e, a->s[i].e, a->s[i].n * sizeof *g->e);
        g->n_e += a->s[i].n;
        g->e[g->n_e++] = (struct elem){E_END, 0, 0, 0};
    }
    seqs_free(a);
    return GGUF_OK;
}

static int add_range(struct parser *ps, uint32_t lo, uint32_t hi)
{
    qwen_grammar *g = ps->g;
    if (grow((void **)&g->r, &g->cap_r, g->n_r + 1, sizeof *g->r)) return nomem(ps);
    g->r[g->n_r++] = (struct range){lo, hi};
    return GGUF_OK;
}

/* Decodes one UTF-8 character at ps->p (advanced).  Returns it, or
 * UINT32_MAX for bytes that are not UTF-8. */
static uint32_t utf8_char(struct parser *ps)
{
    const unsigned char *u = (const unsigned char *)ps->p;
    size_t left = (size_t)(ps->end - ps->p);
    uint32_t c = u[0];
    size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (!n || n > left) return UINT32_MAX;
    if (n > 1) c &= 0x3Fu >> (n - 1);
    for (size_t i = 1; i < n; i++) {
        if ((u[i] & 0xC0) != 0x80) return UINT32_MAX;
        c = (c << 6) | (u[i] & 0x3F);
    }
    ps->p += n;
    return c;
}

/* One character of a literal or class, its escapes decoded.  Returns it,
 * or UINT32_MAX after the message. */
static uint32_t char_at(struct parser *ps)
{
    const char *at = ps->p;
    if (ps->p >= ps->end) {
        fail(ps, at, "the text ends inside a literal or a class");
        return UINT32_MAX;
    }
    if (*ps->p != '\\') {
        uint32_t c = utf8_char(ps);
        if (c == UINT32_MAX) fail(ps, at, "bytes that are not UTF-8");
        return c;
    }
    ps->p++;
    if (ps->p >= ps->end) {
        fail(ps, at, "the text ends inside an escape");
        return UINT32_MAX;
    }
    char e = *ps->p++;
    int digits = 0;
    switch (e) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case '\\': case '"': case '[': case ']': case '-': case '^': case '\'': return (uint32_t)e;
    case 'x': digits = 2; break;
    case 'u': digits = 4; break;
    case 'U': digits = 8; break;
    default:
        fail(ps, at, "an unknown escape (\\n \\r \\t \\\\ \\\" \\[ \\] \\- \\^ \\xHH \\uHHHH \\UHHHHHHHH)");
        return UINT32_MAX;
    }
    uint32_t v = 0;
    for (int i = 0; i < digits; i++) {
        char h = ps->p < ps->end ? *ps->p : 0;
        int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
        if (d < 0) {
            fail(ps, at, "an escape without its hexadecimal digits");
            return UINT32_MAX;
        }
        v = v * 16 + (uint32_t)d;
        ps->p++;
    }
    if (v > 0x10FFFF) {
        fail(ps, at, "a character past U+10FFFF");
        return UINT32_MAX;
    }
    return v;
}

static int parse_alternatives(struct parser *ps, uint32_t rule, struct alts *out, int nested);

/* A number of a {M,N} repetition. */
static int repeat_count(struct parser *ps, uint32_t *v)
{
    const char *at = ps->p;
    uint64_t n = 0;
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') return fail(ps, at, "a number expected");
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        n = n * 10 + (uint64_t)(*ps->p++ - '0');
        if (n > MAX_REPEAT) return fail(ps, at, "a repetition of more than 1000");
    }
    *v = (uint32_t)n;
    return GGUF_OK;
}

/* Appends item (its elements) to s repeated min .. max times (max
 * UINT32_MAX: no limit), through new rules inside `rule`. */
static int repeat(struct parser *ps, uint32_t rule, struct seq *s, const struct seq *item,
                  uint32_t min, uint32_t max, const char *at)
{
    for (uint32_t i = 0; i < min; i++)
        if (seq_cat(s, item)) return nomem(ps);
    if (max == min) return GGUF_OK;
    struct alts a = {0};
    struct seq *x;
    uint32_t r = anon_rule(ps, rule, at);
    if (r == UINT32_MAX) return nomem(ps);
    if (max == UINT32_MAX) {
        /* R ::= item R | (nothing) */
        if (!(x = alt_new(&a)) || seq_cat(x, item) || seq_add(x, (struct elem){E_REF, 0, r, 0}) ||
            !alt_new(&a)) {
            seqs_free(&a);
            return nomem(ps);
        }
        if (commit(ps, r, &a)) return ps->status;
    } else {
        /* R1 ::= item | ; Rk ::= item R(k-1) | (nothing) */
        uint32_t prev = UINT32_MAX;
        for (uint32_t k = 0; k < max - min; k++) {
            uint32_t rk = k == max - min - 1 ? r : anon_rule(ps, rule, at);
            if (rk == UINT32_MAX) return nomem(ps);
            if (!(x = alt_new(&a)) || seq_cat(x, item) ||
                (prev != UINT32_MAX && seq_add(x, (struct elem){E_REF, 0, prev, 0})) || !alt_new(&a)) {
                seqs_free(&a);
                return nomem(ps);
            }
            if (commit(ps, rk, &a)) return ps->status;
            prev = rk;
        }
    }
    return seq_add(s, (struct elem){E_REF, 0, r, 0}) ? nomem(ps) : GGUF_OK;
}

/* One sequence of items into s, up to "|", ")" (nested), the next rule or
 * the end. */
static int parse_sequence(struct parser *ps, uint32_t rule, struct seq *s, int nested)
{
    for (;;) {
        skip(ps);
        if (ps->p >= ps->end || *ps->p == '|' || (*ps->p == ')' && nested)) return GGUF_OK;
        if (!nested && rule_starts(ps, ps->p)) return GGUF_OK;
        const char *at = ps->p;
        struct seq item = {0};
        char c = *ps->p;
        if (c == '"') {
            ps->p++;
            while (ps->p < ps->end && *ps->p != '"') {
                uint32_t ch = char_at(ps);
                if (ch == UINT32_MAX) break;
                if (add_range(ps, ch, ch) ||
                    seq_add(&item, (struct elem){E_CHAR, 0, (uint32_t)ps->g->n_r - 1, 1})) {
                    nomem(ps);
                    break;
                }
            }
            if (!ps->status && ps->p >= ps->end) fail(ps, at, "a literal without its closing \"");
            if (ps->status) {
                free(item.e);
                return ps->status;
            }
            ps->p++;
        } else if (c == '[') {
            ps->p++;
            struct elem e = {E_CHAR, 0, (uint32_t)ps->g->n_r, 0};
            if (ps->p < ps->end && *ps->p == '^') {
                e.negate = 1;
                ps->p++;
            }
            while (!ps->status && ps->p < ps->end && *ps->p != ']') {
                uint32_t lo = char_at(ps), hi = lo;
                if (lo == UINT32_MAX) break;
                if (ps->p + 1 < ps->end && *ps->p == '-' && ps->p[1] != ']') {
                    ps->p++;
                    hi = char_at(ps);
                    if (hi == UINT32_MAX) break;
                    if (hi < lo) fail(ps, at, "a range whose end comes before its start");
                }
                if (!ps->status && add_range(ps, lo, hi)) break;
                e.n++;
            }
            if (!ps->status && ps->p >= ps->end) fail(ps, at, "a class without its closing ]");
            if (!ps->status && e.n == 0 && !e.negate) fail(ps, at, "an empty class");
            if (ps->status || seq_add(&item, e)) {
                free(item.e);
                return ps->status ? ps->status : nomem(ps);
            }
            ps->p++;
        } else if (c == '.') {
            ps->p++;
            if (seq_add(&item, (struct elem){E_CHAR, 1, (uint32_t)ps->g->n_r, 0})) return nomem(ps);
        } else if (c == '(') {
            ps->p++;
            uint32_t r = anon_rule(ps, rule, at);
            struct alts a = {0};
            if (r == UINT32_MAX) return nomem(ps);
            if (parse_alternatives(ps, r, &a, 1) || commit(ps, r, &a)) {
                seqs_free(&a);
                free(item.e);
                return ps->status;
            }
            skip(ps);
            if (ps->p >= ps->end || *ps->p != ')') {
                free(item.e);
                return fail(ps, at, "a group without its closing )");
            }
            ps->p++;
            if (seq_add(&item, (struct elem){E_REF, 0, r, 0})) return nomem(ps);
        } else if (is_name_char(c)) {
            size_t n = name_len(ps, ps->p);
            uint32_t r = rule_id(ps, ps->p, n, ps->p);
            if (r == UINT32_MAX) return nomem(ps);
            ps->p += n;
            if (seq_add(&item, (struct elem){E_REF, 0, r, 0})) return nomem(ps);
        } else if (c == ')') {
            return fail(ps, at, "a ) without its (");
        } else {
            return fail(ps, at, "a literal, a class, a rule name or a group expected");
        }
        /* a repetition of the item */
        uint32_t min = 1, max = 1;
        const char *op = ps->p;
        if (ps->p < ps->end) {
            if (*ps->p == '*') min = 0, max = UINT32_MAX, ps->p++;
            else if (*ps->p == '+') min = 1, max = UINT32_MAX, ps->p++;
            else if (*ps->p == '?') min = 0, max = 1, ps->p++;
            else if (*ps->p == '{') {
                ps->p++;
                if (repeat_count(ps, &min)) {
                    free(item.e);
                    return ps->status;
                }
                max = min;
                if (ps->p < ps->end && *ps->p == ',') {
                    ps->p++;
                    max = UINT32_MAX;
                    if (ps->p < ps->end && *ps->p != '}' && repeat_count(ps, &max)) {
                        free(item.e);
                        return ps->status;
                    }
                }
                if (ps->p >= ps->end || *ps->p != '}') {
                    free(item.e);
                    return fail(ps, op, "a repetition {M}, {M,} or {M,N} without its closing }");
                }
                ps->p++;
                if (max < min) {
                    free(item.e);
                    return fail(ps, op, "a repetition {M,N} with N below M");
                }
            }
        }
        int st = repeat(ps, rule, s, &item, min, max, op);
        free(item.e);
        if (st) return st;
    }
}

/* Alternatives into *out, up to ")" (nested), the next rule or the end. */
static int parse_alternatives(struct parser *ps, uint32_t rule, struct alts *out, int nested)
{
    for (;;) {
        struct seq *s = alt_new(out);
        if (!s) return nomem(ps);
        if (parse_sequence(ps, rule, s, nested)) return ps->status;
        skip(ps);
        if (ps->p < ps->end && *ps->p == '|') {
            ps->p++;
            continue;
        }
        return GGUF_OK;
    }
}

/* ------------------------------------------------------------------------ */
/* Checks: every rule defined, no left recursion                            */

/* Whether each rule can match the empty text, into nullable[]. */
static void find_nullable(const qwen_grammar *g, unsigned char *nullable)
{
    memset(nullable, 0, g->n_rules);
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t r = 0; r < g->n_rules; r++) {
            if (nullable[r]) continue;
            const struct rule *ru = &g->rules[r];
            for (uint32_t k = 0; k < ru->n && !nullable[r]; k++) {
                uint32_t i = g->alt[ru->first + k];
                while (g->e[i].kind == E_REF && nullable[g->e[i].a]) i++;
                if (g->e[i].kind == E_END) nullable[r] = changed = 1;
            }
        }
    }
}

/* Depth-first search for a rule that reaches itself before any character:
 * state 0 new, 1 on the path, 2 done.  Returns the rule on a cycle, or
 * UINT32_MAX. */
static uint32_t left_cycle(const qwen_grammar *g, const unsigned char *nullable, uint32_t r,
                           unsigned char *state)
{
    if (state[r] == 1) return r;
    if (state[r] == 2) return UINT32_MAX;
    state[r] = 1;
    const struct rule *ru = &g->rules[r];
    for (uint32_t k = 0; k < ru->n; k++) {
        for (uint32_t i = g->alt[ru->first + k]; g->e[i].kind == E_REF; i++) {
            uint32_t c = left_cycle(g, nullable, g->e[i].a, state);
            if (c != UINT32_MAX) return c;
            if (!nullable[g->e[i].a]) break;
        }
    }
    state[r] = 2;
    return UINT32_MAX;
}

static int check_grammar(struct parser *ps)
{
    qwen_grammar *g = ps->g;
    for (size_t r = 0; r < g->n_rules; r++) {
        if (g->rules[r].defined) continue;
        return ps->status = qwen_fail(ps->err, GGUF_E_FORMAT, UINT64_MAX,
                                      "%s:%" PRIu32 ":%" PRIu32 ": rule '%s' is used but not defined",
                                      ps->name, g->rules[r].line, g->rules[r].col, g->rules[r].name);
    }
    unsigned char *nullable = malloc(g->n_rules ? g->n_rules : 1);
    unsigned char *state = calloc(g->n_rules ? g->n_rules : 1, 1);
    if (!nullable || !state) {
        free(nullable);
        free(state);
        return nomem(ps);
    }
    find_nullable(g, nullable);
    for (size_t r = 0; r < g->n_rules && !ps->status; r++) {
        uint32_t c = left_cycle(g, nullable, (uint32_t)r, state);
        if (c != UINT32_MAX)
            ps->status = qwen_fail(ps->err, GGUF_E_FORMAT, UINT64_MAX,
                                   "%s: rule '%s' is left-recursive (it can reach itself before "
                                   "any character)", ps->name, g->rules[c].name);
    }
    free(nullable);
    free(state);
    return ps->status;
}

void qwen_grammar_free(qwen_grammar *g)
{
    if (!g) return;
    for (size_t i = 0; i < g->n_rules; i++) free(g->rules[i].name);
    free(g->rules);
    free(g->e);
    free(g->r);
    free(g->alt);
    free(g);
}

int qwen_grammar_parse(qwen_grammar **out, const char *text, size_t len, const char *name,
                       gguf_error *err)
{
    *out = NULL;
    if (!name) name = "grammar";
    if (len > QWEN_GRAMMAR_MAX)
        return qwen_fail(err, GGUF_E_FORMAT, UINT64_MAX, "%s: a grammar of more than %u bytes",
                         name, QWEN_GRAMMAR_MAX);
    qwen_grammar *g = calloc(1, sizeof *g);
    if (!g) return qwen_fail(err, GGUF_E_NOMEM, UINT64_MAX, "%s: out of memory", name);
    struct parser ps = {g, text, text, text + len, name, err, GGUF_OK, 0};
    for (;;) {
        skip(&ps);
        if (ps.p >= ps.end) break;
        const char *at = ps.p;
        size_t n = name_len(&ps, ps.p);
        if (!n || !rule_starts(&ps, ps.p)) {
            fail(&ps, at, "a rule expected: NAME ::= ...");
            break;
        }
        uint32_t r = rule_id(&ps, ps.p, n, at);
        if (r == UINT32_MAX) {
            nomem(&ps);
            break;
        }
        if (g->rules[r].defined) {
            fail(&ps, at, "a rule defined twice");
            break;
        }
        where(&ps, at, &g->rules[r].line, &g->rules[r].col);
        ps.p += n;
        skip(&ps);
        ps.p += 3; /* ::= */
        struct alts a = {0};
        if (parse_alternatives(&ps, r, &a, 0) || commit(&ps, r, &a)) {
            seqs_free(&a);
            break;
        }
        skip(&ps);
        if (ps.p < ps.end && !rule_starts(&ps, ps.p)) {
            fail(&ps, ps.p, *ps.p == ')' ? "a ) without its (" : "a rule expected: NAME ::= ...");
            break;
        }
    }
    if (!ps.status) {
        uint32_t root = UINT32_MAX;
        for (size_t i = 0; i < g->n_rules; i++)
            if (strcmp(g->rules[i].name, "root") == 0) root = (uint32_t)i;
        if (root == UINT32_MAX)
            ps.status = qwen_fail(err, GGUF_E_FORMAT, UINT64_MAX, "%s: no rule 'root'", name);
        g->root = root;
    }
    if (!ps.status) check_grammar(&ps);
    if (ps.status) {
        qwen_grammar_free(g);
        return ps.status;
    }
    *out = g;
    return GGUF_OK;
}

/* ------------------------------------------------------------------------ */
/* Sets of stacks                                                            */

struct stacks {
    uint32_t *pos;          /* the stacks one after the other, bottom first */
    size_t n_pos, cap_pos;
    uint32_t *off;          /* stack i is pos[off[i] .. off[i + 1]) */
    size_t n, cap_off;
    int overflow;           /* more than MAX_STACKS or MAX_DEPTH */
};

static void stacks_clear(struct stacks *s)
{
    s->n_pos = 0;
    s->n = 0;
    s->overflow = 0;
}

static void stacks_free(struct stacks *s)
{
    free(s->pos);
    free(s->off);
    memset(s, 0, sizeof *s);
}

/* Adds the stack st (depth elements) unless the set has it.  Returns 0 or
 * -1 out of memory. */
static int stacks_add(struct stacks *s, const uint32_t *st, size_t depth)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->off[i + 1] - s->off[i] == depth &&
            (depth == 0 || !memcmp(s->pos + s->off[i], st, depth * sizeof *st)))
            return 0;
    if (s->n == MAX_STACKS) {
        s->overflow = 1;
        return 0;
    }
    if (grow((void **)&s->pos, &s->cap_pos, s->n_pos + depth, sizeof *s->pos) ||
        grow((void **)&s->off, &s->cap_off, s->n + 2, sizeof *s->off))
        return -1;
    if (s->n == 0) s->off[0] = 0;
    if (depth) memcpy(s->pos + s->n_pos, st, depth * sizeof *st);
    s->n_pos += depth;
    s->off[++s->n] = (uint32_t)s->n_pos;
    return 0;
}

/* Expands the stack st (depth positions, room for MAX_DEPTH + 2) until its
 * top is a class, into out: ended alternatives left, rules entered (each
 * alternative a stack).  Returns 0 or -1 out of memory. */
static int expand(const qwen_grammar *g, uint32_t *st, size_t depth, struct stacks *out)
{
    if (depth == 0) return stacks_add(out, st, 0);
    const uint32_t top = st[depth - 1];
    const struct elem *e = &g->e[top];
    if (e->kind == E_CHAR) return stacks_add(out, st, depth);
    if (e->kind == E_END) return expand(g, st, depth - 1, out);
    /* E_REF: where to go on, unless the alternative ends there (a tail
     * call), then the rule's alternatives */
    if (depth >= MAX_DEPTH) {
        out->overflow = 1;
        return 0;
    }
    const struct rule *r = &g->rules[e->a];
    const int tail = g->e[top + 1].kind == E_END;
    for (uint32_t k = 0; k < r->n; k++) {
        size_t d = depth - 1;
        uint32_t save_top = st[d], save_next = st[d + 1];
        if (!tail) st[d++] = top + 1;
        st[d++] = g->alt[r->first + k];
        int rc = expand(g, st, d, out);
        st[depth - 1] = save_top;
        st[depth] = save_next;
        if (rc) return rc;
    }
    return 0;
}

static int class_has(const qwen_grammar *g, const struct elem *e, uint32_t c)
{
    int in = 0;
    for (uint32_t i = 0; i < e->n && !in; i++) in = c >= g->r[e->a + i].lo && c <= g->r[e->a + i].hi;
    return in != e->negate;
}

/* Whether the class has a character in lo .. hi. */
static int class_meets(const qwen_grammar *g, const struct elem *e, uint32_t lo, uint32_t hi)
{
    if (!e->negate) {
        for (uint32_t i = 0; i < e->n; i++)
            if (g->r[e->a + i].lo <= hi && g->r[e->a + i].hi >= lo) return 1;
        return 0;
    }
    /* a character of lo .. hi outside every range: walk up from lo */
    uint32_t c = lo;
    for (int again = 1; again && c <= hi;) {
        again = 0;
        for (uint32_t i = 0; i < e->n; i++)
            if (c >= g->r[e->a + i].lo && c <= g->r[e->a + i].hi) {
                if (g->r[e->a + i].hi >= hi) return 0;
                c = g->r[e->a + i].hi + 1;
                again = 1;
            }
    }
    return c <= hi;
}

/* The stacks of in that take character c, moved on and expanded, into
 * out (cleared first).  Returns 0 or -1 out of memory. */
static int advance(const qwen_grammar *g, const struct stacks *in, uint32_t c, struct stacks *out,
                   uint32_t *scratch)
{
    stacks_clear(out);
    for (size_t i = 0; i < in->n; i++) {
        size_t depth = in->off[i + 1] - in->off[i];
        if (!depth) continue;
        const uint32_t *st = in->pos + in->off[i];
        if (!class_has(g, &g->e[st[depth - 1]], c)) continue;
        memcpy(scratch, st, depth * sizeof *st);
        scratch[depth - 1]++;
        if (expand(g, scratch, depth, out)) return -1;
    }
    return 0;
}

/* Whether some stack of in can take a character that begins with the
 * bytes so far: acc, with need continuation bytes to come. */
static int partial_ok(const qwen_grammar *g, const struct stacks *in, uint32_t acc, int need,
                      uint32_t min)
{
    uint32_t lo = acc << (6 * need), hi = lo | ((1u << (6 * need)) - 1);
    if (lo < min) lo = min;
    if (hi > 0x10FFFF) hi = 0x10FFFF;
    if (lo > hi) return 0;
    for (size_t i = 0; i < in->n; i++) {
        size_t depth = in->off[i + 1] - in->off[i];
        if (depth && class_meets(g, &g->e[in->pos[in->off[i] + depth - 1]], lo, hi)) return 1;
    }
    return 0;
}

/* One byte b after the UTF-8 state (acc, need, min: the least character a
 * sequence of its length may encode): the new state, and *c the character
 * when it is whole (else UINT32_MAX).  Returns 0, or -1 for a byte that
 * cannot come there, and for an overlong form or a surrogate. */
static int utf8_step(uint32_t *acc, int *need, uint32_t *min, unsigned char b, uint32_t *c)
{
    *c = UINT32_MAX;
    if (*need == 0) {
        if (b < 0x80) *c = b;
        else if (b >= 0xC2 && b <= 0xDF) *acc = b & 0x1F, *need = 1, *min = 0x80;
        else if (b >= 0xE0 && b <= 0xEF) *acc = b & 0x0F, *need = 2, *min = 0x800;
        else if (b >= 0xF0 && b <= 0xF4) *acc = b & 0x07, *need = 3, *min = 0x10000;
        else return -1;
        return 0;
    }
    if ((b & 0xC0) != 0x80) return -1;
    *acc = (*acc << 6) | (b & 0x3F);
    if (--*need == 0) {
        if (*acc < *min || *acc > 0x10FFFF || (*acc >= 0xD800 && *acc <= 0xDFFF)) return -1;
        *c = *acc;
    } else if (((*acc << (6 * *need)) | ((1u << (6 * *need)) - 1)) < *min) {
        return -1; /* overlong already */
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* States                                                                    */

struct qwen_grammar_state {
    const qwen_grammar *g;
    struct stacks cur, next;
    uint32_t acc;           /* a character not yet whole: its bits so far */
    int need;               /* ... the continuation bytes it still needs */
    uint32_t min;           /* ... and the least character of its length */
    uint32_t *scratch;      /* MAX_DEPTH + 2 */
    struct stacks *level;   /* qwen_grammar_allowed's, one a tree level */
    size_t n_level;
};

void qwen_grammar_state_reset(qwen_grammar_state *s)
{
    stacks_clear(&s->cur);
    s->acc = 0;
    s->need = 0;
    s->min = 0;
    uint32_t *st = s->scratch;
    /* root's alternatives, each a stack */
    const struct rule *r = &s->g->rules[s->g->root];
    for (uint32_t k = 0; k < r->n; k++) {
        st[0] = s->g->alt[r->first + k];
        if (expand(s->g, st, 1, &s->cur)) s->cur.overflow = 1;
    }
}

qwen_grammar_state *qwen_grammar_state_new(const qwen_grammar *g)
{
    qwen_grammar_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->g = g;
    if (!(s->scratch = malloc((MAX_DEPTH + 2) * sizeof *s->scratch))) {
        free(s);
        return NULL;
    }
    qwen_grammar_state_reset(s);
    return s;
}

void qwen_grammar_state_free(qwen_grammar_state *s)
{
    if (!s) return;
    stacks_free(&s->cur);
    stacks_free(&s->next);
    for (size_t i = 0; i < s->n_level; i++) stacks_free(&s->level[i]);
    free(s->level);
    free(s->scratch);
    free(s);
}

/* Takes the n bytes at p from s's place; commit: s moves there.  Returns
 * 0, or -1 when the grammar does not allow them (s unchanged). */
static int take(qwen_grammar_state *s, const void *p, size_t n, int commit);

int qwen_grammar_accept(qwen_grammar_state *s, const void *p, size_t n)
{
    return take(s, p, n, 1);
}

int qwen_grammar_takes(const qwen_grammar_state *s, const void *p, size_t n)
{
    return take((qwen_grammar_state *)s, p, n, 0) == 0; /* its scratch only */
}

static int take(qwen_grammar_state *s, const void *p, size_t n, int commit)
{
    const unsigned char *b = p;
    uint32_t acc = s->acc, min = s->min;
    int need = s->need;
    /* work on a copy: a refusal leaves the state as it was */
    struct stacks work = {0}, tmp = {0};
    for (size_t i = 0; i < s->cur.n; i++)
        if (stacks_add(&work, s->cur.pos + s->cur.off[i], s->cur.off[i + 1] - s->cur.off[i])) goto no;
    for (size_t i = 0; i < n; i++) {
        uint32_t c;
        if (utf8_step(&acc, &need, &min, b[i], &c)) goto no;
        if (c == UINT32_MAX) {
            if (!partial_ok(s->g, &work, acc, need, min)) goto no;
            continue;
        }
        if (advance(s->g, &work, c, &tmp, s->scratch) || tmp.n == 0) goto no;
        struct stacks t = work;
        work = tmp;
        tmp = t;
    }
    if (!commit) goto no_change;
    stacks_free(&s->cur);
    stacks_free(&tmp);
    s->cur = work;
    s->acc = acc;
    s->need = need;
    s->min = min;
    return 0;
no_change:
    stacks_free(&work);
    stacks_free(&tmp);
    return 0;
no:
    stacks_free(&work);
    stacks_free(&tmp);
    return -1;
}

int qwen_grammar_complete(const qwen_grammar_state *s)
{
    if (s->need) return 0;
    for (size_t i = 0; i < s->cur.n; i++)
        if (s->cur.off[i + 1] == s->cur.off[i]) return 1;
    return 0;
}

int qwen_grammar_closed(const qwen_grammar_state *s)
{
    for (size_t i = 0; i < s->cur.n; i++)
        if (s->cur.off[i + 1] != s->cur.off[i]) return 0;
    return 1;
}

/* ------------------------------------------------------------------------ */
/* The vocabulary as a tree of bytes                                         */

struct node {
    uint32_t child;         /* first child, 0: none */
    uint32_t sibling;       /* next sibling, 0: none */
    int32_t token;          /* first token ending here, -1: none */
    unsigned char byte;
};

struct qwen_grammar_vocab {
    struct node *nodes;     /* nodes[0]: the root */
    size_t n_nodes, cap;
    int32_t *next_token;    /* tokens with the same bytes */
    int32_t n_vocab;
    size_t depth;           /* the longest token */
};

void qwen_grammar_vocab_free(qwen_grammar_vocab *v)
{
    if (!v) return;
    free(v->nodes);
    free(v->next_token);
    free(v);
}

qwen_grammar_vocab *qwen_grammar_vocab_new(const qwen_tokenizer *tok)
{
    qwen_grammar_vocab *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->n_vocab = qwen_tokenizer_n_vocab(tok);
    v->next_token = malloc((size_t)(v->n_vocab > 0 ? v->n_vocab : 1) * sizeof *v->next_token);
    if (!v->next_token || grow((void **)&v->nodes, &v->cap, 1, sizeof *v->nodes)) goto nomem;
    v->nodes[0] = (struct node){0, 0, -1, 0};
    v->n_nodes = 1;
    for (int32_t id = 0; id < v->n_vocab; id++) {
        v->next_token[id] = -1;
        int type = qwen_token_type(tok, id);
        if (type == QWEN_TOKEN_CONTROL || type == QWEN_TOKEN_UNUSED || type < 0) continue;
        size_t n;
        const unsigned char *p = (const unsigned char *)qwen_token_bytes(tok, id, &n);
        if (!p || n == 0) continue;
        if (n > v->depth) v->depth = n;
        uint32_t at = 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t c = v->nodes[at].child, prev = 0;
            while (c && v->nodes[c].byte < p[i]) prev = c, c = v->nodes[c].sibling;
            if (!c || v->nodes[c].byte != p[i]) {
                if (grow((void **)&v->nodes, &v->cap, v->n_nodes + 1, sizeof *v->nodes)) goto nomem;
                uint32_t k = (uint32_t)v->n_nodes++;
                v->nodes[k] = (struct node){0, c, -1, p[i]};
                if (prev) v->nodes[prev].sibling = k;
                else v->nodes[at].child = k;
                c = k;
            }
            at = c;
        }
        v->next_token[id] = v->nodes[at].token;
        v->nodes[at].token = id;
    }
    return v;
nomem:
    qwen_grammar_vocab_free(v);
    return NULL;
}

/* The walk below node `at` (depth d) with the stacks of level d. */
static int64_t walk(qwen_grammar_state *s, const qwen_grammar_vocab *v, uint32_t at, size_t d,
                    uint32_t acc, int need, uint32_t min, unsigned char *allowed)
{
    int64_t count = 0;
    const struct stacks *in = &s->level[d];
    for (uint32_t c = v->nodes[at].child; c; c = v->nodes[c].sibling) {
        uint32_t a = acc, mn = min, ch;
        int nd = need;
        if (utf8_step(&a, &nd, &mn, v->nodes[c].byte, &ch)) continue;
        if (ch == UINT32_MAX) {
            if (!partial_ok(s->g, in, a, nd, mn)) continue;
            /* the same stacks go down */
            if (v->nodes[c].child) {
                struct stacks *down = &s->level[d + 1];
                stacks_clear(down);
                for (size_t i = 0; i < in->n; i++)
                    if (stacks_add(down, in->pos + in->off[i], in->off[i + 1] - in->off[i])) return -1;
            }
        } else {
            struct stacks *down = &s->level[d + 1];
            if (advance(s->g, in, ch, down, s->scratch)) return -1;
            if (down->n == 0) continue;
        }
        for (int32_t t = v->nodes[c].token; t >= 0; t = v->next_token[t]) {
            allowed[t] = 1;
            count++;
        }
        if (v->nodes[c].child) {
            int64_t k = walk(s, v, c, d + 1, a, nd, mn, allowed);
            if (k < 0) return -1;
            count += k;
        }
    }
    return count;
}

int64_t qwen_grammar_allowed(const qwen_grammar_state *cs, const qwen_grammar_vocab *v,
                             unsigned char *allowed)
{
    qwen_grammar_state *s = (qwen_grammar_state *)cs; /* its scratch only */
    memset(allowed, 0, (size_t)v->n_vocab);
    if (s->n_level < v->depth + 2) {
        struct stacks *l = realloc(s->level, (v->depth + 2) * sizeof *l);
        if (!l) return -1;
        memset(l + s->n_level, 0, (v->depth + 2 - s->n_level) * sizeof *l);
        s->level = l;
        s->n_level = v->depth + 2;
    }
    stacks_clear(&s->level[0]);
    for (size_t i = 0; i < s->cur.n; i++)
        if (stacks_add(&s->level[0], s->cur.pos + s->cur.off[i], s->cur.off[i + 1] - s->cur.off[i]))
            return -1;
    return walk(s, v, 0, 0, s->acc, s->need, s->min, allowed);
}
