/*
 * jsonschema.h -- a JSON Schema compiled to a GBNF grammar (grammar.h),
 * so that every reply is a JSON value the schema accepts.
 *
 * Supported: "type" (object, array, string, number, integer, boolean,
 * null, or a list of them), "properties" (in their order, each present at
 * most once, no others), "required", "items", "minItems", "maxItems",
 * "minLength", "maxLength", "enum", "const", "anyOf" and "oneOf" (as
 * either-or), and local references "$ref": "#/$defs/NAME" (or
 * "#/definitions/NAME").  An empty schema (or true) is any JSON value.
 * Annotations ("title", "description", "$schema", "$id", "examples",
 * "default", "$comment") are ignored; any other keyword ("pattern",
 * "minimum", "format", ...) is refused with a message naming it and where
 * it is, rather than left unchecked.  The JSON between values may hold a
 * space or a line break and indentation, as the model likes.
 */
#ifndef QWEN_JSONSCHEMA_H
#define QWEN_JSONSCHEMA_H

#include <stddef.h>

#include "gguf/gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most bytes of a schema. */
#define QWEN_SCHEMA_MAX (1u << 20)

/* Compiles the len bytes of JSON at text (name: for messages) into GBNF
 * text, NUL-terminated, malloc'ed into *gbnf.  Returns GGUF_OK;
 * GGUF_E_FORMAT for text that is not JSON (line and column) or not a
 * schema, GGUF_E_UNSUPPORTED for a keyword left out (both name the place,
 * as a JSON pointer); GGUF_E_NOMEM. */
int qwen_json_schema_grammar(const char *text, size_t len, const char *name, char **gbnf,
                             gguf_error *err);

#ifdef __cplusplus
}
#endif

#endif /* QWEN_JSONSCHEMA_H */
