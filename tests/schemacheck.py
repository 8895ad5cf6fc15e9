"""schemacheck.py -- checks JSON values against a JSON Schema, for the
tests: the keywords qwen-run --json-schema takes (type, properties,
required, additionalProperties, items, minItems, maxItems, minLength,
maxLength, enum, const, anyOf, oneOf, local $ref), with JSON Schema's
meaning.  When Python's jsonschema package is there, it checks too.

    python3 schemacheck.py SCHEMA FILE   each line of FILE a qwen-run
                                         --json object: its reply must
                                         parse and be valid; prints the
                                         count, exits 1 on the first that
                                         is not
"""
import json
import sys


def _type_ok(v, t):
    if t == "object":
        return isinstance(v, dict)
    if t == "array":
        return isinstance(v, list)
    if t == "string":
        return isinstance(v, str)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "null":
        return v is None
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    raise ValueError("type " + t)


def check(v, s, root=None, where="#"):
    """Raises ValueError naming the place where v breaks schema s."""
    root = root if root is not None else s
    if s is True or s == {}:
        return
    if "$ref" in s:
        name = s["$ref"].split("/")[-1]
        defs = root.get("$defs", root.get("definitions", {}))
        return check(v, defs[name], root, where)
    if "const" in s and v != s["const"]:
        raise ValueError("%s: %r is not the const" % (where, v))
    if "enum" in s and not any(v == e and type(v) == type(e) for e in s["enum"]):
        raise ValueError("%s: %r not in the enum" % (where, v))
    for key in ("anyOf", "oneOf"):
        if key in s:
            ok = 0
            for sub in s[key]:
                try:
                    check(v, sub, root, where)
                    ok += 1
                except ValueError:
                    pass
            if ok == 0 or (key == "oneOf" and ok > 1):
                raise ValueError("%s: %r matches %d of %s" % (where, v, ok, key))
    t = s.get("type")
    if t is not None:
        ts = t if isinstance(t, list) else [t]
        if not any(_type_ok(v, x) for x in ts):
            raise ValueError("%s: %r is not %s" % (where, v, t))
    if isinstance(v, dict):
        props = s.get("properties", {})
        for r in s.get("required", []):
            if r not in v:
                raise ValueError("%s: %r lacks %r" % (where, v, r))
        for k, x in v.items():
            if k in props:
                check(x, props[k], root, where + "/" + k)
            elif s.get("additionalProperties") is False:
                raise ValueError("%s: %r is not allowed" % (where, k))
    if isinstance(v, list):
        if len(v) < s.get("minItems", 0) or len(v) > s.get("maxItems", len(v)):
            raise ValueError("%s: %d items" % (where, len(v)))
        if "items" in s:
            for i, x in enumerate(v):
                check(x, s["items"], root, "%s/%d" % (where, i))
    if isinstance(v, str):
        if len(v) < s.get("minLength", 0) or len(v) > s.get("maxLength", len(v)):
            raise ValueError("%s: %r of length %d" % (where, v, len(v)))


def main():
    schema = json.load(open(sys.argv[1]))
    try:
        import jsonschema
    except ImportError:
        jsonschema = None
    n = 0
    for line in open(sys.argv[2], encoding="utf-8"):
        d = json.loads(line)
        try:
            v = json.loads(d["reply"])
            check(v, schema)
            if jsonschema is not None:
                jsonschema.validate(v, schema)
        except Exception as e:
            print("line %d: %s: %r" % (n + 1, e, d["reply"][:300]), file=sys.stderr)
            sys.exit(1)
        n += 1
    print(n)


if __name__ == "__main__":
    main()
