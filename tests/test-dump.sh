#!/bin/sh
# test-dump.sh -- gguf-dump on a tiny Qwen2 model from tests/gguf-synth:
# the text view (header line, metadata, tensor directory, summary), the JSON
# view checked field by field against the text view and against the shapes
# gguf-synth promises, -k for each kind of value, and the view filters.

. "${top_srcdir:-.}/tests/test-dump-common.sh"
need_python
need_tools "$SYNTH"

f=$tmp/tiny.gguf
"$SYNTH" --size tiny --type f16 --seed 7 -o "$f" || hard_error "gguf-synth failed"

run 0 text "$DUMP" "$f"
run 0 json "$DUMP" --json "$f"
run 0 full "$DUMP" --full "$f"
run 0 k-tokens "$DUMP" -k tokenizer.ggml.tokens "$f"
run 0 kj-tokens "$DUMP" --json -k tokenizer.ggml.tokens "$f"
run 0 k-merges "$DUMP" -k tokenizer.ggml.merges "$f"
run 0 k-types "$DUMP" -k tokenizer.ggml.token_type "$f"

# --- text and JSON, field by field -----------------------------------------
checks=$((checks + 1))
python3 - "$tmp" "$f" <<'EOF' || fail "text/JSON cross-checks (see above)"
import json, re, sys
tmp, path = sys.argv[1], sys.argv[2]
bad = []
def expect(what, got, want):
    if got != want:
        bad.append("%s: got %r, want %r" % (what, got, want))

text = open(tmp + "/text.out", encoding="utf-8").read().split("\n")
d = json.load(open(tmp + "/json.out", encoding="utf-8"))

# header line
m = re.fullmatch(r"(.*): GGUF v(\d), (little|big)-endian, (\d+) key/value pairs?, (\d+) tensors?, "
                 r"alignment (\d+), data offset (\d+), size (\d+)", text[0])
if not m:
    bad.append("header line: %r" % text[0])
else:
    expect("header name", m.group(1), path)
    expect("header vs JSON", [int(m.group(i)) for i in (2, 4, 5, 6, 7, 8)],
           [d["version"], d["kv_count"], d["tensor_count"], d["alignment"], d["data_offset"],
            d["file_size"]])
    expect("byte order", m.group(3), d["byte_order"])
import os
expect("file size", d["file_size"], os.path.getsize(path))
expect("JSON file name", d["file"], path)

# sections of the text view
def section(title):
    i = next((k for k, l in enumerate(text) if l.startswith(title)), None)
    if i is None:
        bad.append("no section " + title)
        return None, []
    j = i + 1
    while j < len(text) and text[j] != "":
        j += 1
    return text[i], text[i + 1:j]

head, lines = section("metadata:")
expect("metadata heading", head, "metadata: %d key/value pairs" % d["kv_count"])
expect("metadata column heading", lines[0].split(), ["#", "type", "count", "key", "=", "value"])
kvt = []
for l in lines[1:]:
    m = re.fullmatch(r" *(\d+)  (\S+) +(?:(\d+) +)?(\S+) = (.*)", l)
    if not m:
        bad.append("metadata line %r" % l)
        continue
    kvt.append(m.groups())
expect("KV lines = kv_count", len(kvt), d["kv_count"])
expect("JSON kv entries = kv_count", len(d["kv"]), d["kv_count"])
for (idx, typ, count, key, val), e in zip(kvt, d["kv"]):
    expect("kv index", int(idx), e["index"])
    expect("kv key", key, e["key"])
    if e["type"] == "ARRAY":
        expect(key + " type", typ, "ARRAY[%s]" % e["element_type"])
        expect(key + " count", int(count), e["count"])
        expect(key + " JSON array complete", len(e["value"]), e["count"])
        if e["count"] > 8:
            expect(key + " shortened", val.endswith(", ... (%d elements)]" % e["count"]), True)
    else:
        expect(key + " type", typ, e["type"])
        expect(key + " no count", count, None)
        if e["type"] == "STRING" and len(e["value"].encode()) <= 160 and e["value"].isprintable():
            expect(key + " string", val, json.dumps(e["value"], ensure_ascii=False))
        elif e["type"] in ("UINT32", "INT32", "UINT64"):
            expect(key + " integer", int(val), e["value"])
        elif e["type"] in ("FLOAT32", "FLOAT64"):
            expect(key + " float", float(val), e["value"])
kv = {e["key"]: e["value"] for e in d["kv"]}
# what gguf-synth promises for --size tiny --type f16
expect("architecture", kv.get("general.architecture"), "qwen2")
expect("block_count", kv.get("qwen2.block_count"), 2)
expect("embedding_length", kv.get("qwen2.embedding_length"), 64)
expect("rope base", kv.get("qwen2.rope.freq_base"), 1e6)
expect("rms eps text", "    qwen2.attention.layer_norm_rms_epsilon = 1e-06" in text, True)
expect("tokenizer model", kv.get("tokenizer.ggml.model"), "gpt2")
expect("file type", kv.get("general.file_type"), 1)
tokens = kv["tokenizer.ggml.tokens"]
expect("special tokens present", all(t in tokens for t in ("<|endoftext|>", "<|im_start|>", "<|im_end|>")), True)
expect("token_type length", len(kv["tokenizer.ggml.token_type"]), len(tokens))

head, lines = section("tensors:")
expect("tensors heading", head, "tensors: %d" % d["tensor_count"])
expect("tensor column heading", lines[0].split(), ["#", "name", "type", "dims", "offset", "bytes"])
tt = []
for l in lines[1:]:
    m = re.fullmatch(r" *(\d+)  (\S+) +(\S+) +\[([0-9, ]+)\] +(\d+) +(\d+)", l)
    if not m:
        bad.append("tensor line %r" % l)
        continue
    tt.append((int(m.group(1)), m.group(2), m.group(3), [int(x) for x in m.group(4).split(", ")],
               int(m.group(5)), int(m.group(6))))
expect("tensor lines = tensor_count", len(tt), d["tensor_count"])
expect("JSON tensors = tensor_count", len(d["tensors"]), d["tensor_count"])
expect("text tensors = JSON tensors", tt,
       [(t["index"], t["name"], t["type"], t["dims"], t["offset"], t["bytes"]) for t in d["tensors"]])
L, E, V = 2, 64, len(tokens)
expect("tensor count 2 + 12 per layer", d["tensor_count"], 2 + 12 * L)
ts = {t["name"]: t for t in d["tensors"]}
expect("token_embd", (ts["token_embd.weight"]["type"], ts["token_embd.weight"]["dims"]), ("F16", [E, V]))
expect("tied embeddings: no output.weight", "output.weight" in ts, False)
expect("q bias", ts["blk.1.attn_q.bias"]["dims"], [E])
size = {"F32": 4, "F16": 2}
for t in d["tensors"]:
    n = 1
    for x in t["dims"]:
        n *= x
    expect(t["name"] + " elements", t["elements"], n)
    expect(t["name"] + " bytes", t["bytes"], n * size[t["type"]])
    expect(t["name"] + " offset", t["offset"], d["data_offset"] + t["relative_offset"])
    expect(t["name"] + " aligned", t["relative_offset"] % d["alignment"], 0)
    expect(t["name"] + " inside the file", t["offset"] + t["bytes"] <= d["file_size"], True)

head, lines = section("summary:")
s = d["summary"]
P = sum(t["elements"] for t in d["tensors"])
B = sum(t["bytes"] for t in d["tensors"])
expect("summary parameters", (s["parameters"], s["bytes"]), (P, B))
expect("text parameters", lines[0].split()[:2], ["parameters:", str(P)])
expect("text bytes", lines[1].split()[:2], ["bytes:", str(B)])
expect("text bits/weight", lines[2], "  bits/weight:  %.2f" % (8 * B / P))
expect("text file type", lines[3], "  file type:    F16 (general.file_type = 1)")
expect("JSON file type", (s["file_type"], s["file_type_name"]), (1, "F16"))
for ty in ("F32", "F16"):
    n = sum(1 for t in d["tensors"] if t["type"] == ty)
    p = sum(t["elements"] for t in d["tensors"] if t["type"] == ty)
    b = sum(t["bytes"] for t in d["tensors"] if t["type"] == ty)
    row = next((l.split() for l in lines if l.startswith("    " + ty + " ")), None)
    expect(ty + " row", row, [ty, str(n), str(p), "%.2f%%" % (100 * p / P), str(b),
                              "%.2f%%" % (100 * b / B), "%.2f" % (8 * b / p)])
    js = next((x for x in s["types"] if x["type"] == ty), {})
    expect(ty + " JSON", (js.get("tensors"), js.get("parameters"), js.get("bytes")), (n, p, b))
    expect(ty + " JSON share", round(js.get("byte_share", 0), 4), round(b / B, 4))
hp = [l.strip() for l in lines[lines.index("  hyperparameters (qwen2):") + 1:]]
expect("hyperparameters text", [h.split(" = ")[0] for h in hp], [k for k in kv if k.startswith("qwen2.")])
expect("hyperparameters JSON", s["hyperparameters"], {k: v for k, v in kv.items() if k.startswith("qwen2.")})
expect("hyperparameter block_count", "qwen2.block_count = 2" in hp, True)

# --full shows every element; -k prints every element, one a line
full = open(tmp + "/full.out", encoding="utf-8").read()
expect("--full: no shortening", "... (" in full, False)
line = next(l for l in full.split("\n") if " tokenizer.ggml.token_type = " in l)
expect("--full: all token types", line.split(" = ", 1)[1],
       "[" + ", ".join(str(x) for x in kv["tokenizer.ggml.token_type"]) + "]")
kj = json.loads(open(tmp + "/kj-tokens.out", encoding="utf-8").read())
expect("--json -k tokens", kj, tokens)
raw = open(tmp + "/k-tokens.out", "rb").read().decode("utf-8")
if not any("\n" in t for t in tokens):
    expect("-k tokens", raw.split("\n"), tokens + [""])
raw = open(tmp + "/k-merges.out", "rb").read().decode("utf-8")
expect("-k merges", raw.split("\n"), kv["tokenizer.ggml.merges"] + [""])
raw = open(tmp + "/k-types.out").read()
expect("-k token types", raw.split("\n"), [str(x) for x in kv["tokenizer.ggml.token_type"]] + [""])
for b in bad:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF

# --- -k: one value of each kind --------------------------------------------
run 0 k-str "$DUMP" -k general.architecture "$f"
check "-k string, unquoted" test "$(cat "$tmp/k-str.out")" = qwen2
run 0 k-int "$DUMP" --key qwen2.block_count "$f"
check "-k integer" test "$(cat "$tmp/k-int.out")" = 2
run 0 k-float "$DUMP" -k qwen2.rope.freq_base -k qwen2.attention.layer_norm_rms_epsilon "$f"
printf '1000000.0\n1e-06\n' >"$tmp/want"
check "-k floats" same "$tmp/k-float.out" "$tmp/want"
run 0 k-bool "$DUMP" --key=tokenizer.ggml.add_bos_token "$f"
check "-k bool" test "$(cat "$tmp/k-bool.out")" = false
check "-k array: one element a line" test "$(wc -l <"$tmp/k-types.out")" -eq 1024
run 0 k-template "$DUMP" -k tokenizer.chat_template "$f"
check "-k long string in full" test "$(wc -c <"$tmp/k-template.out")" -gt 1000
check "-k raw: newlines kept" test "$(wc -l <"$tmp/k-template.out")" -gt 20
run 1 k-absent "$DUMP" -k qwen2.no_such_key "$f"
check "-k absent: message" has "$tmp/k-absent.err" "gguf-dump: $f: key 'qwen2.no_such_key' not found"
check "-k absent: stdout empty" empty "$tmp/k-absent.out"

# --- filters -----------------------------------------------------------------
run 0 keys "$DUMP" --keys 'qwen2.*' "$f"
check "--keys heading" grep -q '^metadata: 8 of 22 key/value pairs match "qwen2\.\*"$' "$tmp/keys.out"
n=$(sed -n '/^metadata:/,/^$/p' "$tmp/keys.out" | grep -c '^ *[0-9][0-9]*  ')
check "--keys: only the 8 qwen2 keys ($n)" test "$n" -eq 8
check "--keys: others left out" lacks "$tmp/keys.out" "general.name ="
check "--keys: tensors still shown" has "$tmp/keys.out" "token_embd.weight"
run 0 keys-none "$DUMP" --keys 'nothing.*' --no-tensors --no-summary "$f"
check "--keys matching nothing" grep -q '^metadata: 0 of 22 key/value pairs match' "$tmp/keys-none.out"
check "--keys matching nothing: no table" test "$(wc -l <"$tmp/keys-none.out")" -eq 3

run 0 tensors "$DUMP" --tensors 'blk.0.*' "$f"
check "--tensors heading" grep -q '^tensors: 12 of 26 match "blk\.0\.\*"$' "$tmp/tensors.out"
n=$(sed -n '/^tensors:/,/^$/p' "$tmp/tensors.out" | grep -c '  blk\.0\.')
check "--tensors: the 12 tensors of block 0 ($n)" test "$n" -eq 12
check "--tensors: block 1 left out" lacks "$tmp/tensors.out" "blk.1."
check "--tensors: summary over the whole file" has "$tmp/tensors.out" "  parameters:   139840 "
run 0 tensors-q "$DUMP" --tensors '*.attn_?.bias' --no-kv --no-summary "$f"
check "--tensors with ?" test "$(grep -c 'attn_[qkv]\.bias' "$tmp/tensors-q.out")" -eq 6

run 0 nokv "$DUMP" --no-kv "$f"
check "--no-kv: no metadata" lacks "$tmp/nokv.out" "metadata:"
check "--no-kv: tensors" has "$tmp/nokv.out" "tensors: 26"
check "--no-kv: summary" has "$tmp/nokv.out" "summary:"
run 0 notensors "$DUMP" --no-tensors "$f"
check "--no-tensors: no directory" lacks "$tmp/notensors.out" "tensors: "
check "--no-tensors: metadata" has "$tmp/notensors.out" "metadata: 22 key/value pairs"
run 0 bare "$DUMP" --no-kv --no-tensors --no-summary "$f"
check "header only" test "$(wc -l <"$tmp/bare.out")" -eq 1

run 0 json-filtered "$DUMP" --json --keys 'tokenizer.*' --tensors '*norm*' --no-summary "$f"
run 0 json-nokv "$DUMP" --json --no-kv --no-tensors "$f"
checks=$((checks + 1))
python3 - "$tmp" <<'EOF' || fail "JSON with filters"
import json, sys
d = json.load(open(sys.argv[1] + "/json-filtered.out"))
assert d["kv_count"] == 22 and len(d["kv"]) == 10, [e["key"] for e in d["kv"]]
assert all(e["key"].startswith("tokenizer.") for e in d["kv"])
assert [t["name"] for t in d["tensors"]] == ["blk.0.attn_norm.weight", "blk.0.ffn_norm.weight",
    "blk.1.attn_norm.weight", "blk.1.ffn_norm.weight", "output_norm.weight"], d["tensors"]
assert "summary" not in d
d = json.load(open(sys.argv[1] + "/json-nokv.out"))
assert "kv" not in d and "tensors" not in d and d["summary"]["parameters"] == 139840, d
EOF

finish
