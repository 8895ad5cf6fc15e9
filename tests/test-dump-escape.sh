#!/bin/sh
# test-dump-escape.sh -- gguf-dump on a file made by tests/test-dump-fixture:
# every value type, extreme integers, awkward floats, control characters and
# invalid UTF-8 in values, keys and tensor names, nested arrays, big-endian
# files and GGUF versions 1 and 2.  Checks the text view, the validity and
# exact values of the JSON view, and the raw bytes of -k.

. "${top_srcdir:-.}/tests/test-dump-common.sh"
need_python
EDIT=$top_builddir/tests/verify-edit
need_tools "$FIXTURE" "$EDIT"

f=$tmp/fx.gguf
"$FIXTURE" "$f" || hard_error "test-dump-fixture failed"
"$FIXTURE" -b "$tmp/fx-be.gguf" || hard_error "test-dump-fixture -b failed"
"$FIXTURE" -v 1 "$tmp/fx-v1.gguf" || hard_error "test-dump-fixture -v 1 failed"
"$FIXTURE" -v 2 -b "$tmp/fx-v2be.gguf" || hard_error "test-dump-fixture -v 2 -b failed"

# --- text view -----------------------------------------------------------
run 0 text "$DUMP" "$f"
t=$tmp/text.out
check "header line" has "$t" "$f: GGUF v3, little-endian, 31 key/value pairs, 4 tensors, alignment 64, data offset 1792, size 2048"
check "escaped string" has "$t" ' general.name = "a\n\t\x01\x7f\"\\ é \xff \xc0\x80 \xed\xa0\x80 \xc2\x9b 😀 z"'
check "escaped key" has "$t" ' key\twith\x01ctl = 7'
check "escaped tensor name" has "$t" '  weird\x1b[31m\xff name  F32 '
check "no raw ESC reaches the terminal" lacks "$t" "$(printf '\033')"
check "no raw 0xff" lacks "$t" "$(printf '\377')"
check "u64 max" has "$t" ' testarch.u64 = 18446744073709551615'
check "i64 min" has "$t" ' testarch.i64 = -9223372036854775808'
check "i8 min" has "$t" ' testarch.i8 = -128'
check "f32 1e-6" has "$t" ' testarch.f32 = 1e-06'
check "f32 1/3 shortest round trip" has "$t" ' testarch.third = 0.33333334'
check "f64 0.1" has "$t" ' testarch.f64 = 0.1'
check "f64 1e300" has "$t" ' testarch.big = 1e+300'
check "nan" has "$t" ' testarch.nan = nan'
check "-inf" has "$t" ' testarch.ninf = -inf'
check "bool" has "$t" ' testarch.yes = true'
check "empty string" has "$t" ' testarch.empty = ""'
check "array type and count" has "$t" '  ARRAY[INT32]      100  testarch.ints = [-300, -293, -286, -279, -272, -265, -258, -251, ... (100 elements)]'
check "string array" has "$t" ' testarch.strs = ["plain", "tab\there", "nl\n", "\xff", "é", ""]'
check "nested array" has "$t" '  ARRAY[ARRAY]        3  testarch.nested = [[1, 2], [3], []]'
check "float array" has "$t" ' testarch.f32s = [0.5, -2.0, nan, -inf]'
check "empty array" has "$t" ' testarch.empty_arr = []'
check "zero-sized tensor" has "$t" '  3  zero                    F32   [4, 0]     2048      0'
check "quantized tensor" has "$t" '  2  w.q8                    Q8_0  [32, 2]    1920     68'
check "summary parameters" has "$t" '  parameters:   84'
check "summary bytes" has "$t" '  bytes:        116'
check "summary bits/weight" has "$t" '  bits/weight:  11.05'
check "summary file type" has "$t" '  file type:    F16 (general.file_type = 1)'
check "summary F32 row" has "$t" '    F32         2           4   4.76%     16  13.79%  32.00'
check "summary Q8_0 row" has "$t" '    Q8_0        1          64  76.19%     68  58.62%   8.50'
check "hyperparameters heading" has "$t" '  hyperparameters (testarch):'
check "hyperparameter listed" has "$t" '    testarch.u32 = 4294967295'
check "other architecture not listed" test "$(grep -c 'other.block_count' "$t")" -eq 1

# A backslash in a key or tensor name is \\ there too, as in strings: the
# escapes above start with one, so a bare one would be ambiguous
# (back\nslash could be a newline).  -k into a pipe keeps the raw bytes.
"$EDIT" --set 'back\nslash=str:C:\dir\n' --add 'w\x01=f32:4' "$f" "$tmp/bs.gguf" 2>"$tmp/bs.err" ||
    hard_error "verify-edit: $(cat "$tmp/bs.err")"
run 0 bs "$DUMP" "$tmp/bs.gguf"
check "backslash in a key: \\" has "$tmp/bs.out" ' back\\nslash = "C:\\dir\\n"'
check "backslash in a tensor name: \\" has "$tmp/bs.out" '  w\\x01  '
check "tensor name column aligned past the escape" has "$tmp/bs.out" '  4  w\\x01                  F32   [4] '
run 0 bs-k "$DUMP" -k 'back\nslash' "$tmp/bs.gguf"
printf 'C:\\dir\\n\n' >"$tmp/want"
check "-k into a pipe: backslashes raw" same "$tmp/bs-k.out" "$tmp/want"

run 0 full "$DUMP" --full --no-tensors --no-summary "$f"
check "--full shows all 100 elements" has "$tmp/full.out" ', 379, 386, 393]'
check "--full has no ellipsis" lacks "$tmp/full.out" '... ('

# --- the same bytes in other byte orders and versions -------------------
for v in be v2be; do
    run 0 "text-$v" "$DUMP" "$tmp/fx-$v.gguf"
    sed 1d "$t" >"$tmp/a.txt"
    sed 1d "$tmp/text-$v.out" >"$tmp/b.txt"
    check "$v: same view as the little-endian v3 file" same "$tmp/a.txt" "$tmp/b.txt"
done
check "big-endian header" has "$tmp/text-be.out" ": GGUF v3, big-endian, 31 key/value pairs"
check "v2 header" has "$tmp/text-v2be.out" ": GGUF v2, big-endian,"
run 0 text-v1 "$DUMP" "$tmp/fx-v1.gguf"
check "v1 header" has "$tmp/text-v1.out" ": GGUF v1, little-endian, 31 key/value pairs, 4 tensors, alignment 64"

# --- JSON ----------------------------------------------------------------
run 0 json "$DUMP" --json "$f" "$tmp/fx-be.gguf" "$tmp/fx-v1.gguf" "$tmp/fx-v2be.gguf"
run 0 json1 "$DUMP" -j "$f"
checks=$((checks + 1))
python3 - "$tmp" "$f" <<'EOF' || fail "JSON checks (see above)"
import json, math, struct, sys
tmp, path = sys.argv[1], sys.argv[2]
bad = []
def expect(what, got, want):
    if got != want:
        bad.append("%s: got %r, want %r" % (what, got, want))

raw = open(tmp + "/json.out", "rb").read()
raw.decode("utf-8")             # strict: the output must be valid UTF-8
docs = json.loads(raw)
one = json.loads(open(tmp + "/json1.out", "rb").read())
expect("several files give an array", type(docs), list)
expect("one object per file", len(docs), 4)
expect("single file gives the object", one, docs[0])
d = docs[0]
for k, v in [("file", path), ("version", 3), ("byte_order", "little"), ("file_size", 2048),
             ("kv_count", 31), ("tensor_count", 4), ("alignment", 64), ("data_offset", 1792)]:
    expect(k, d.get(k), v)
expect("member order", list(d), ["file", "version", "byte_order", "file_size", "kv_count",
       "tensor_count", "alignment", "data_offset", "kv", "tensors", "summary"])
kv = {e["key"]: e for e in d["kv"]}
expect("kv entries", len(d["kv"]), 31)
expect("kv indexes", [e["index"] for e in d["kv"]], list(range(31)))
name = kv["general.name"]["value"]
expect("escaped name", name,
       'a\n\t\x01\x7f"\\ \u00e9 \ufffd \ufffd\ufffd \ufffd\ufffd\ufffd \u009b \U0001F600 z')
expect("u8", kv["testarch.u8"]["value"], 255)
expect("i8", kv["testarch.i8"]["value"], -128)
expect("u16", kv["testarch.u16"]["value"], 65535)
expect("i16", kv["testarch.i16"]["value"], -32768)
expect("u32", kv["testarch.u32"]["value"], 4294967295)
expect("i32", kv["testarch.i32"]["value"], -2147483648)
expect("u64 exact", kv["testarch.u64"]["value"], 18446744073709551615)
expect("i64 exact", kv["testarch.i64"]["value"], -9223372036854775808)
f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]
for key, want in [("testarch.f32", f32(1e-6)), ("testarch.third", f32(1 / 3))]:
    got = kv[key]["value"]
    expect(key + " round trip", struct.pack("<f", got), struct.pack("<f", want))
expect("f64", kv["testarch.f64"]["value"], 0.1)
expect("f64 big", kv["testarch.big"]["value"], 1e300)
expect("nan", kv["testarch.nan"]["value"], "nan")
expect("inf", kv["testarch.inf"]["value"], "inf")
expect("-inf", kv["testarch.ninf"]["value"], "-inf")
expect("bools", (kv["testarch.yes"]["value"], kv["testarch.no"]["value"]), (True, False))
expect("type names", [kv[k]["type"] for k in ("testarch.u8", "testarch.i64", "testarch.nan",
       "testarch.ninf", "testarch.yes", "testarch.empty", "testarch.ints")],
       ["UINT8", "INT64", "FLOAT32", "FLOAT64", "BOOL", "STRING", "ARRAY"])
a = kv["testarch.ints"]
expect("array element type", a["element_type"], "INT32")
expect("array count", a["count"], 100)
expect("array complete", a["value"], [i * 7 - 300 for i in range(100)])
expect("string array", kv["testarch.strs"]["value"],
       ["plain", "tab\there", "nl\n", "\ufffd", "\u00e9", ""])
expect("nested", kv["testarch.nested"]["value"], [[1, 2], [3], []])
expect("nested element type", kv["testarch.nested"]["element_type"], "ARRAY")
expect("float array", kv["testarch.f32s"]["value"], [0.5, -2.0, "nan", "-inf"])
expect("bool array", kv["testarch.bools"]["value"], [True, False, True])
expect("u64 array", kv["testarch.u64s"]["value"], [0, 18446744073709551615])
expect("empty array", kv["testarch.empty_arr"]["value"], [])
expect("escaped key", "key\twith\x01ctl" in kv, True)
t = d["tensors"]
expect("tensor names", [x["name"] for x in t], ["weird\x1b[31m\ufffd name", "w.f16", "w.q8", "zero"])
expect("tensor types", [x["type"] for x in t], ["F32", "F16", "Q8_0", "F32"])
expect("tensor type ids", [x["type_id"] for x in t], [0, 1, 8, 0])
expect("tensor dims", [x["dims"] for x in t], [[4], [8, 2], [32, 2], [4, 0]])
expect("tensor elements", [x["elements"] for x in t], [4, 16, 64, 0])
expect("tensor offsets", [x["offset"] for x in t], [1792, 1856, 1920, 2048])
expect("tensor relative offsets", [x["relative_offset"] for x in t], [0, 64, 128, 256])
expect("tensor bytes", [x["bytes"] for x in t], [16, 32, 68, 0])
s = d["summary"]
expect("summary params", s["parameters"], 84)
expect("summary bytes", s["bytes"], 116)
expect("summary bpw", round(s["bits_per_weight"], 4), round(8 * 116 / 84, 4))
expect("summary file type", (s["file_type"], s["file_type_name"]), (1, "F16"))
expect("summary types", [(x["type"], x["tensors"], x["parameters"], x["bytes"]) for x in s["types"]],
       [("F32", 2, 4, 16), ("F16", 1, 16, 32), ("Q8_0", 1, 64, 68)])
expect("summary arch", s["architecture"], "testarch")
hp = s["hyperparameters"]
expect("hyperparameter keys", list(hp), [e["key"] for e in d["kv"] if e["key"].startswith("testarch.")])
expect("hyperparameter values", [hp[k] for k in hp], [kv[k]["value"] for k in hp])
# the other byte orders and versions hold the same values
for other in docs[1:]:
    expect(other["file"] + " kv", other["kv"], d["kv"])
    strip = lambda ts: [{k: v for k, v in x.items() if k != "offset"} for x in ts]
    expect(other["file"] + " tensors", strip(other["tensors"]), strip(d["tensors"]))
    expect(other["file"] + " summary", other["summary"], d["summary"])
expect("byte orders", [x["byte_order"] for x in docs], ["little", "big", "little", "big"])
expect("versions", [x["version"] for x in docs], [3, 3, 1, 2])
for b in bad:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF

# --- -k: raw values --------------------------------------------------------
run 0 k-name "$DUMP" -k general.name "$f"
printf 'a\n\t\001\177"\\ \303\251 \377 \300\200 \355\240\200 \302\233 \360\237\230\200 z\n' >"$tmp/want"
check "-k string: exact bytes" same "$tmp/k-name.out" "$tmp/want"
run 0 k-strs "$DUMP" -k testarch.strs "$f"
printf 'plain\ntab\there\nnl\n\n\377\n\303\251\n\n' >"$tmp/want"
check "-k string array: one element a line, raw" same "$tmp/k-strs.out" "$tmp/want"
run 0 k-many "$DUMP" -k testarch.u64 -k testarch.i64 -k testarch.f32 -k testarch.third \
    -k testarch.f64 -k testarch.nan -k testarch.ninf -k testarch.yes -k testarch.empty \
    -k testarch.nested -k testarch.f32s -k testarch.empty_arr "$f"
printf '%s\n' 18446744073709551615 -9223372036854775808 1e-06 0.33333334 0.1 nan -inf true '' \
    '[1,2]' '[3]' '[]' 0.5 -2.0 nan -inf >"$tmp/want"
check "-k numbers, bools, nested and float arrays" same "$tmp/k-many.out" "$tmp/want"
run 0 k-json "$DUMP" --json -k general.name -k testarch.nan -k testarch.nested "$f"
checks=$((checks + 1))
python3 - "$tmp/k-json.out" <<'EOF' || fail "--json -k gives one JSON value a line"
import json, sys
lines = open(sys.argv[1], "rb").read().decode("utf-8").split("\n")
assert lines[-1] == "" and len(lines) == 4, lines
assert json.loads(lines[0]).startswith('a\n\t\x01'), lines[0]
assert json.loads(lines[1]) == "nan", lines[1]
assert json.loads(lines[2]) == [[1, 2], [3], []], lines[2]
EOF
run 0 k-be "$DUMP" -k testarch.u64s -k testarch.ints "$tmp/fx-be.gguf"
run 0 k-le "$DUMP" -k testarch.u64s -k testarch.ints "$f"
check "-k on a big-endian file" same "$tmp/k-be.out" "$tmp/k-le.out"
check "-k array length" test "$(wc -l <"$tmp/k-le.out")" -eq 102

# --- invalid UTF-8 in JSON: one U+FFFD for each maximal subpart ------------
# (cut sequences, a lead byte whose next byte is out of its range, overlong
# and surrogate forms, stray bytes), as Python and browsers decode them.
bad='a\341\273b\360\237\230c\364\220d\340\200e\355\240\200f\377\200g\302'
run 0 bad-set "$(tool gguf-edit)" --set "general.name=str:$(printf "$bad")" "$f" "$tmp/bad.gguf"
run 0 bad-json "$DUMP" --json -k general.name "$tmp/bad.gguf"
printf "$bad" > "$tmp/bad.raw"
check "--json: invalid UTF-8 replaced as Python's decoder does" python3 -c '
import json, sys
got = json.loads(open(sys.argv[1], "rb").read())
want = open(sys.argv[2], "rb").read().decode("utf-8", "replace")
sys.exit(0 if got == want and got.count("\ufffd") == 12 else 1)' "$tmp/bad-json.out" "$tmp/bad.raw"

finish
