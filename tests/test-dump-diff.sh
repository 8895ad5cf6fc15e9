#!/bin/sh
# test-dump-diff.sh -- gguf-dump --diff A B: nothing and exit 0 for a model
# and its copy (and a split set of it); the metadata changes gguf-edit made
# (changed, removed, added, reordered keys) as diff lines with their types
# and values; tensors whose type changed (gguf-requant), whose data
# changed (one byte), added and removed ones; the same in --json, checked
# field by field; usage errors.

. "${top_srcdir:-.}/tests/test-dump-common.sh"
test_name=test-dump-diff
need_python
EDIT=$top_builddir/gguf-edit
REQUANT=$top_builddir/gguf-requant
need_tools "$SYNTH" "$EDIT" "$REQUANT"

a=$tmp/a.gguf
"$SYNTH" --size tiny --type q8_0 --seed 4 -o "$a" || hard_error "gguf-synth failed"
cp "$a" "$tmp/copy.gguf"
run 0 same "$DUMP" --diff "$a" "$tmp/copy.gguf"
check "the same model: nothing printed" empty "$tmp/same.out"
run 0 same-json "$DUMP" --diff --json "$a" "$tmp/copy.gguf"
check "the same model, JSON: same true" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["same"] is True and d["changes"] == 0))' "$tmp/same-json.out"
if [ -x "$top_builddir/tests/split-file" ]; then
    "$top_builddir/tests/split-file" "$a" "$tmp/s" 3 || hard_error "split-file"
    run 1 set "$DUMP" --diff "$a" "$tmp/s-00002-of-00003.gguf"
    check "a split set of it: only its split keys differ" \
        [ "$(grep -c '^+split\.' "$tmp/set.out")" -eq 3 -a "$(grep -c '^[-+~][a-z]' "$tmp/set.out")" -eq 3 ]
fi

# --- metadata -----------------------------------------------------------------------------
"$EDIT" --set general.name=str:Changed --delete general.type --set new.key=u32:7 "$a" "$tmp/e.gguf" ||
    hard_error "gguf-edit"
run 1 kv "$DUMP" --diff "$a" "$tmp/e.gguf"
check "the header" [ "$(head -n 2 "$tmp/kv.out")" = "--- $a
+++ $tmp/e.gguf" ]
check "a changed value: its old line" has "$tmp/kv.out" "-general.name: STRING = "
check "a changed value: its new line" has "$tmp/kv.out" '+general.name: STRING = "Changed"'
check "a removed key" grep -q '^-general.type: STRING = ' "$tmp/kv.out"
check "an added key" has "$tmp/kv.out" "+new.key: UINT32 = 7"
check "no tensor lines" lacks "$tmp/kv.out" "tensor "
check "three changes, four lines" [ "$(grep -c '^[-+][a-z]' "$tmp/kv.out")" -eq 4 ]

# --- tensors ------------------------------------------------------------------------------
"$REQUANT" -q --type 'blk.1.ffn_down.weight=q4_0' "$a" "$tmp/r.gguf" || hard_error "gguf-requant"
run 1 type "$DUMP" --diff "$a" "$tmp/r.gguf"
check "a type change: the old type" has "$tmp/type.out" "-tensor blk.1.ffn_down.weight: Q8_0 [128, 64]"
check "a type change: the new type" has "$tmp/type.out" "+tensor blk.1.ffn_down.weight: Q4_0 [128, 64]"
# one byte of one tensor's data
off=$("$DUMP" --json "$a" | python3 -c 'import json,sys
for t in json.load(sys.stdin)["tensors"]:
    if t["name"] == "blk.0.attn_q.weight": print(t["offset"] + 5)')
cp "$a" "$tmp/b.gguf"
printf '\377' | dd of="$tmp/b.gguf" bs=1 seek="$off" conv=notrunc 2>/dev/null
run 1 data "$DUMP" --diff "$a" "$tmp/b.gguf"
check "a data change: one line" [ "$(grep -c '^[-+~][a-z]' "$tmp/data.out")" -eq 1 ]
check "a data change: named, with both hashes" grep -q '^~tensor blk.0.attn_q.weight: data differs (xxh3 [0-9a-f]\{16\} [0-9a-f]\{16\})$' "$tmp/data.out"
run 1 data-json "$DUMP" --diff --json "$a" "$tmp/b.gguf"
check "JSON: the data change" python3 - "$tmp/data-json.out" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
c = d["tensors_changed"]
ok = (d["same"] is False and d["changes"] == 1 and len(c) == 1 and c[0]["name"] == "blk.0.attn_q.weight"
      and c[0]["what"] == ["data"] and c[0]["old"]["xxh3"] != c[0]["new"]["xxh3"]
      and c[0]["old"]["type"] == "Q8_0" and c[0]["old"]["shape"] == [64, 64]
      and not d["kv_removed"] and not d["kv_added"] and not d["kv_changed"]
      and not d["tensors_removed"] and not d["tensors_added"])
sys.exit(not ok)
EOF
# a model of another size: tensors added and removed, keys changed
"$SYNTH" --size tiny --arch qwen3 --type q8_0 --seed 4 -o "$tmp/q3.gguf" || hard_error "gguf-synth qwen3"
run 1 arch "$DUMP" --diff --json "$a" "$tmp/q3.gguf"
check "JSON: another architecture" python3 - "$tmp/arch.out" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
ch = {k["key"]: k for k in d["kv_changed"]}
rm = {t["name"] for t in d["tensors_removed"]}
add = {t["name"] for t in d["tensors_added"]}
ok = (ch["general.architecture"]["old"]["value"] == "qwen2" and ch["general.architecture"]["new"]["value"] == "qwen3"
      and "blk.0.attn_q.bias" in rm and "blk.0.attn_q_norm.weight" in add
      and any(k["key"].startswith("qwen3.") for k in d["kv_added"])
      and any(k["key"].startswith("qwen2.") for k in d["kv_removed"])
      and all("shape" in t and "xxh3" in t for t in d["tensors_added"]))
sys.exit(not ok)
EOF

# --- usage --------------------------------------------------------------------------------
run 2 one "$DUMP" --diff "$a"
check "--diff with one file: usage" has "$tmp/one.err" "--diff needs two files"
run 2 with-k "$DUMP" --diff -k general.name "$a" "$a"
check "--diff with -k: usage" has "$tmp/with-k.err" "--diff takes --json and --shard only"
run 2 missing "$DUMP" --diff "$a" "$tmp/absent.gguf"
check "a missing file: trouble" has "$tmp/missing.err" "absent.gguf"
run 2 stdin2 "$DUMP" --diff - - < "$a"
check "standard input twice: refused" has "$tmp/stdin2.err" "standard input can be one side only"
run 0 stdin "$DUMP" --diff "$a" - < "$a"
check "standard input as one side" empty "$tmp/stdin.out"

finish
