/*
 * test-grammar.c -- GBNF grammars (infer/grammar.h).
 *
 * - Texts a grammar takes and texts it refuses, whole and byte by byte
 *   (characters split between calls), with repetitions, groups, classes,
 *   negated classes, escapes, "." and characters past ASCII.
 * - Grammars refused with the line and column: no root, a rule used but
 *   not defined, left recursion, an unclosed literal or class or group, a
 *   bad escape or repetition, a rule defined twice.
 * - JSON Schemas compiled to grammars take the instances the schema
 *   accepts and refuse others (missing required properties, other types,
 *   extra properties, values outside an enum, too many items, strings too
 *   long); schemas that are not JSON or use keywords left out are refused
 *   naming the place.
 * - The tokens qwen_grammar_allowed() allows are, for every state along
 *   several texts, exactly those whose bytes qwen_grammar_accept() takes,
 *   tried one token at a time over a synthetic model's whole vocabulary.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/grammar.h"
#include "infer/jsonschema.h"
#include "infer/model.h"
#include "infer/tokenizer.h"
#include "tests/testutil.h"
#include "tests/synthdir.h"

static qwen_grammar *parse(const char *text)
{
    gguf_error err = {0};
    qwen_grammar *g;
    int st = qwen_grammar_parse(&g, text, strlen(text), "t.gbnf", &err);
    REQUIRE(st == GGUF_OK, "parse '%s': %s", text, err.message);
    return g;
}

/* Whether g takes the whole text s (given whole, or byte by byte). */
static int takes(const qwen_grammar *g, const char *s, int bytewise)
{
    qwen_grammar_state *st = qwen_grammar_state_new(g);
    REQUIRE(st, "out of memory");
    int ok = 1;
    if (bytewise) {
        for (size_t i = 0; s[i] && ok; i++) ok = qwen_grammar_accept(st, s + i, 1) == 0;
    } else {
        ok = qwen_grammar_accept(st, s, strlen(s)) == 0;
    }
    ok = ok && qwen_grammar_complete(st);
    qwen_grammar_state_free(st);
    return ok;
}

static void check_texts(void)
{
    static const struct {
        const char *grammar, *yes[6], *no[6];
    } cases[] = {
        {"root ::= \"ab\" [0-9]+ \"!\"?", {"ab1", "ab12!", "ab007"}, {"ab", "a", "ab1!!", "abx", "b1"}},
        {"root ::= expr\nexpr ::= term (\"+\" term)*\nterm ::= [0-9]{1,3} | \"(\" expr \")\"",
         {"1", "1+22+333", "(1+2)+3", "((4))"}, {"1234", "1+", "(1", "+1", ""}},
        {"root ::= [^\"\\\\]* \"\\\"\"", {"\"", "abc\"", "é\""}, {"a\\\"", "abc", "\"x"}},
        {"root ::= \"x\"{2,} | \"y\"{0,2} \"z\"", {"xx", "xxxxx", "z", "yyz"}, {"x", "yyyz", "xxz"}},
        {"# a comment\nroot ::= (\"a\" | \"b\")\n  \"c\" # another\n  | \"d\"", {"ac", "bc", "d"},
         {"a", "c", "dc", "abc"}},
        {"root ::= [α-ω]+ \"\\u00e9\" .", {"αβé!", "ωé\n", "αé日"}, {"aé!", "αβ", "αβé"}},
        {"root ::= \"\\x41\\n\" [\\t ]", {"A\n\t", "A\n "}, {"A\n", "A\nx"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qwen_grammar *g = parse(cases[i].grammar);
        for (int k = 0; k < 6 && cases[i].yes[k]; k++)
            for (int b = 0; b < 2; b++)
                CHECK(takes(g, cases[i].yes[k], b), "grammar %zu takes '%s' (%s)", i, cases[i].yes[k],
                      b ? "byte by byte" : "whole");
        for (int k = 0; k < 6 && cases[i].no[k]; k++)
            for (int b = 0; b < 2; b++)
                CHECK(!takes(g, cases[i].no[k], b), "grammar %zu refuses '%s' (%s)", i, cases[i].no[k],
                      b ? "byte by byte" : "whole");
        qwen_grammar_free(g);
    }
    /* a refused piece leaves the state as it was; closed and complete */
    qwen_grammar *g = parse("root ::= \"ab\" \"c\"?");
    qwen_grammar_state *st = qwen_grammar_state_new(g);
    CHECK(qwen_grammar_accept(st, "ax", 2) == -1 && qwen_grammar_accept(st, "ab", 2) == 0,
          "a refusal changes nothing");
    CHECK(qwen_grammar_complete(st) && !qwen_grammar_closed(st), "after ab: complete, not closed");
    CHECK(qwen_grammar_takes(st, "c", 1) && !qwen_grammar_takes(st, "x", 1) &&
              !qwen_grammar_takes(st, "cc", 2) && !qwen_grammar_closed(st),
          "takes() says, and does not move the state");
    CHECK(qwen_grammar_accept(st, "c", 1) == 0 && qwen_grammar_closed(st), "after abc: closed");
    /* what is not UTF-8 is never taken, not even by "." */
    qwen_grammar *any = parse("root ::= .*");
    static const char *const bad[] = {"\xC1\xBB", "\xE0\x81\xBB", "\xED\xA0\x80", "\xF4\x90\x80\x80",
                                      "\x80", "\xFF"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        for (int b = 0; b < 2; b++)
            CHECK(!takes(any, bad[i], b), "'.' refuses bytes %zu that are not UTF-8 (%s)", i,
                  b ? "byte by byte" : "whole");
    CHECK(takes(any, "\xF0\x9F\x98\x80\xED\x9F\xBF", 1), "'.' takes U+1F600 and U+D7FF byte by byte");
    qwen_grammar_free(any);
    /* a character's first byte: taken when a character there starts so */
    qwen_grammar_state_reset(st);
    CHECK(qwen_grammar_accept(st, "\xc3", 1) == -1, "a byte no character of the grammar starts with");
    qwen_grammar_state_free(st);
    qwen_grammar_free(g);
}

static void refused(const char *text, const char *want)
{
    gguf_error err = {0};
    qwen_grammar *g = (qwen_grammar *)1;
    int st = qwen_grammar_parse(&g, text, strlen(text), "t.gbnf", &err);
    CHECK(st == GGUF_E_FORMAT && g == NULL && strstr(err.message, want),
          "'%s': status %d, '%s', want '%s'", text, st, err.message, want);
}

static void check_refusals(void)
{
    refused("expr ::= \"a\"", "no rule 'root'");
    refused("root ::= item\n", "t.gbnf:1:10: rule 'item' is used but not defined");
    refused("root ::= \"a\" | root \"b\"", "rule 'root' is left-recursive");
    refused("root ::= x\nx ::= y? \"a\"\ny ::= x", "is left-recursive");
    refused("root ::= \"abc", "t.gbnf:1:10: a literal without its closing \"");
    refused("root ::= [a-", "a class without its closing ]");
    refused("root ::= [z-a]", "a range whose end comes before its start");
    refused("root ::= (\"a\"", "a group without its closing )");
    refused("root ::= \"a\" )", "a ) without its (");
    refused("root ::= \"\\q\"", "an unknown escape");
    refused("root ::= \"\\x4\"", "an escape without its hexadecimal digits");
    refused("root ::= \"a\"{3,1}", "with N below M");
    refused("root ::= \"a\"{2000}", "a repetition of more than 1000");
    refused("root ::= \"a\"\nroot ::= \"b\"", "t.gbnf:2:1: a rule defined twice");
    refused("root ::= \"a\" @", "t.gbnf:1:14: a literal, a class, a rule name or a group expected");
    refused("  \"a\"", "a rule expected");
    refused("root ::= []", "an empty class");
}

static qwen_grammar *schema(const char *json)
{
    gguf_error err = {0};
    char *gbnf;
    int st = qwen_json_schema_grammar(json, strlen(json), "s.json", &gbnf, &err);
    REQUIRE(st == GGUF_OK, "schema '%s': %s", json, err.message);
    qwen_grammar *g;
    st = qwen_grammar_parse(&g, gbnf, strlen(gbnf), "s.json", &err);
    REQUIRE(st == GGUF_OK, "schema '%s': its grammar: %s\n%s", json, err.message, gbnf);
    free(gbnf);
    return g;
}

static void check_schemas(void)
{
    static const struct {
        const char *schema, *yes[6], *no[7];
    } cases[] = {
        {"{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, \"age\": "
         "{\"type\": \"integer\"}, \"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, "
         "\"maxItems\": 2}}, \"required\": [\"name\"]}",
         {"{\"name\": \"Tom\"}", "{\"name\":\"T\", \"age\": 42}", "{ \"name\": \"a\\\"b\", \"tags\": [\"x\",\"y\"] }",
          "{\"name\": \"Tom\",\n  \"age\": -3,\n  \"tags\": []}"},
         {"{}", "{\"age\": 1}", "{\"name\": 1}", "{\"name\": \"a\", \"extra\": 1}",
          "{\"name\": \"a\", \"tags\": [\"x\",\"y\",\"z\"]}", "{\"age\": 1, \"name\": \"a\"}",
          "{\"name\": \"a\", \"age\": 1.5}"}},
        {"{\"enum\": [\"red\", \"green\", 3, null, true]}", {"\"red\"", "3", "null", "true"},
         {"\"blue\"", "4", "false", "\"Red\""}},
        {"{\"type\": [\"number\", \"null\"]}", {"1.5e3", "-0.25", "null", "0"}, {"\"1\"", "01", "true"}},
        {"{\"type\": \"array\", \"items\": {\"anyOf\": [{\"type\": \"boolean\"}, {\"const\": \"x\"}]}, "
         "\"minItems\": 1}", {"[true]", "[\"x\", false, \"x\"]"}, {"[]", "[\"y\"]", "[1]"}},
        {"{\"type\": \"string\", \"minLength\": 2, \"maxLength\": 3, \"title\": \"t\"}",
         {"\"ab\"", "\"abc\"", "\"\\n\\t\""}, {"\"a\"", "\"abcd\"", "\"\""}},
        {"{\"$defs\": {\"node\": {\"type\": \"object\", \"properties\": {\"v\": {\"type\": \"integer\"}, "
         "\"next\": {\"anyOf\": [{\"$ref\": \"#/$defs/node\"}, {\"type\": \"null\"}]}}, "
         "\"required\": [\"v\", \"next\"]}}, \"$ref\": \"#/$defs/node\"}",
         {"{\"v\": 1, \"next\": null}", "{\"v\": 1, \"next\": {\"v\": 2, \"next\": null}}"},
         {"{\"v\": 1}", "{\"v\": 1, \"next\": {\"v\": 2}}"}},
        {"{}", {"{\"a\": [1, {\"b\": null}]}", "\"s\"", "12"}, {"{a: 1}", "[1,]", "tru"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qwen_grammar *g = schema(cases[i].schema);
        for (int k = 0; k < 6 && cases[i].yes[k]; k++)
            CHECK(takes(g, cases[i].yes[k], 1), "schema %zu takes %s", i, cases[i].yes[k]);
        for (int k = 0; k < 7 && cases[i].no[k]; k++)
            CHECK(!takes(g, cases[i].no[k], 0), "schema %zu refuses %s", i, cases[i].no[k]);
        qwen_grammar_free(g);
    }
    static const struct {
        const char *schema, *want;
        int status;
    } bad[] = {
        {"{\"type\": \"string\", \"pattern\": \"^a\"}", "s.json: #: the keyword 'pattern' is not supported", GGUF_E_UNSUPPORTED},
        {"{\"properties\": {\"n\": {\"type\": \"number\", \"minimum\": 0}}}",
         "s.json: #/properties/n: the keyword 'minimum' is not supported", GGUF_E_UNSUPPORTED},
        {"{\"type\": \"strin\"}", "unknown type 'strin'", GGUF_E_FORMAT},
        {"{\"type\": \"object\",}", "s.json:1:19: not JSON: a key (a string) expected", GGUF_E_FORMAT},
        {"{\"$ref\": \"#/$defs/none\"}", "$ref '#/$defs/none': no such definition", GGUF_E_FORMAT},
        {"{\"$ref\": \"other.json\"}", "only #/$defs/NAME", GGUF_E_UNSUPPORTED},
        {"[1]", "a schema must be an object", GGUF_E_FORMAT},
        {"{} x", "more after the value", GGUF_E_FORMAT},
        {"{\"type\": \"array\", \"maxItems\": 1.5}", "maxItems is not a count", GGUF_E_FORMAT},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gguf_error err = {0};
        char *gbnf = (char *)1;
        int st = qwen_json_schema_grammar(bad[i].schema, strlen(bad[i].schema), "s.json", &gbnf, &err);
        CHECK(st == bad[i].status && gbnf == NULL && strstr(err.message, bad[i].want),
              "schema %s: status %d, '%s', want '%s'", bad[i].schema, st, err.message, bad[i].want);
    }
}

/* allowed() against accept() token by token, along the text. */
static void check_allowed(void)
{
    char path[512];
    tu_synth_model(path, sizeof path, "small", "--size small --type q8_0");
    gguf_error err;
    qwen_model *m;
    REQUIRE(qwen_model_open(&m, path, &err) == GGUF_OK, "%s", err.message);
    qwen_tokenizer *tok;
    REQUIRE(qwen_tokenizer_load(&tok, m->file, &err) == GGUF_OK, "%s", err.message);
    qwen_grammar_vocab *v = qwen_grammar_vocab_new(tok);
    REQUIRE(v, "out of memory");
    const int32_t nv = qwen_tokenizer_n_vocab(tok);
    unsigned char *allowed = malloc((size_t)nv);
    REQUIRE(allowed, "out of memory");
    static const struct {
        const char *grammar, *text;
    } cases[] = {
        {"root ::= \"{\" ws \"\\\"\" [a-z]+ \"\\\":\" ws [0-9]+ ws \"}\"\nws ::= [ \\n]*",
         "{ \"name\": 42 }"},
        {"root ::= [^\\n]* \"\\n\"", "any text, é 日本\n"},
        {"root ::= (\"yes\" | \"no\" | \"maybe\") \".\"", "maybe."},
    };
    int states = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        qwen_grammar *g = parse(cases[c].grammar);
        qwen_grammar_state *st = qwen_grammar_state_new(g), *try = qwen_grammar_state_new(g);
        REQUIRE(st && try, "out of memory");
        const char *t = cases[c].text;
        for (size_t i = 0;; i++) {
            int64_t n = qwen_grammar_allowed(st, v, allowed);
            int64_t want = 0, bad = 0;
            for (int32_t id = 0; id < nv; id++) {
                int ok = 0;
                if (qwen_token_type(tok, id) != QWEN_TOKEN_CONTROL) {
                    size_t len;
                    const char *p = qwen_token_bytes(tok, id, &len);
                    /* try from st's place: st took t[0 .. i) */
                    qwen_grammar_state_reset(try);
                    ok = len > 0 && qwen_grammar_accept(try, t, i) == 0 &&
                         qwen_grammar_accept(try, p, len) == 0;
                }
                want += ok;
                bad += ok != allowed[id];
            }
            CHECK(bad == 0 && n == want, "grammar %zu after %zu bytes: %lld allowed, %lld by accept, "
                  "%lld differ", c, i, (long long)n, (long long)want, (long long)bad);
            states++;
            if (!t[i]) break;
            REQUIRE(qwen_grammar_accept(st, t + i, 1) == 0, "grammar %zu takes byte %zu", c, i);
        }
        CHECK(qwen_grammar_complete(st), "grammar %zu: the text is whole", c);
        qwen_grammar_state_free(st);
        qwen_grammar_state_free(try);
        qwen_grammar_free(g);
    }
    fprintf(stderr, "allowed tokens equal accept() at %d states over %d tokens\n", states, nv);
    free(allowed);
    qwen_grammar_vocab_free(v);
    qwen_tokenizer_free(tok);
    qwen_model_close(m);
}

int main(void)
{
    tu_synth_init("test-grammar");
    check_texts();
    check_refusals();
    check_schemas();
    check_allowed();
    tu_finish();
}
