#!/bin/sh
# test-edit.sh -- gguf-edit on a tiny model: --set of every type (typed,
# the key's own type, JSON, arrays), --set-file (exact bytes; a JSON
# array), --delete, --rename in its place, new keys at the end, in order;
# the tensors copied byte for byte and the model still running; the
# --dry-run diff and its exit status; standard input and output; every
# refused edit (general.alignment, split keys, absent keys, a key twice,
# wrong types and ranges, bad JSON, OUT = FILE) with its message and no
# output left; the gguf Python package reading the result.

test_name=test-edit
. "${top_srcdir:-.}/tests/common.sh"

SYNTH=$top_builddir/tests/gguf-synth
EDIT=$(tool gguf-edit)
DUMP=$(tool gguf-dump)
VERIFY=$(tool gguf-verify)
RUN=$(tool qwen-run)
need_exec "$SYNTH" "$top_builddir/gguf-edit" "$top_builddir/gguf-dump"

m=$tmp/m.gguf
"$SYNTH" --size tiny --type q8_0 --seed 5 -o "$m" || hard_error "gguf-synth failed"
cp "$m" "$tmp/m.orig"
key() { "$DUMP" -k "$2" "$1" 2>/dev/null; }
keys() { "$DUMP" --json --no-tensors --no-summary "$1" | sed -n 's/.*"key": "\([^"]*\)".*/\1/p'; }
tensor_sums() { "$VERIFY" -w "$1" | sed -n 's/^xxh3  \([0-9a-f]*\)  .*:\([^(].*\)$/\2 \1/p'; }

# --- edits -------------------------------------------------------------------
printf 'line one\nline\0two\n' > "$tmp/template.txt"
printf '["x", "y\\u00e9", "z"]\n' > "$tmp/list.json"
run 0 edit "$EDIT" --set general.name=str:Foo --set qwen2.context_length=4096 \
    --set qwen2.rope.freq_base=250000.5 --set tokenizer.ggml.add_bos_token=true \
    --set new.u8=u8:255 --set new.i64=i64:-9000000000 --set new.f64=f64:0.125 \
    --set new.arr=i32:[1,-2,3] --set 'new.json=json:["a", "b"]' --set new.jint=json:42 \
    --set new.jfloat=json:1.5 --set 'new.jbools=json:[true, false]' --set new.empty=u16:[] \
    --set-file tokenizer.chat_template="$tmp/template.txt" --set-file new.list=json:"$tmp/list.json" \
    --delete general.type --rename qwen2.block_count=qwen2.layers --set new.str=str:u32:5 \
    --set general.name=str:Bar "$m" "$tmp/e.gguf"
e=$tmp/e.gguf
check "FILE unchanged" same "$tmp/m.orig" "$m"
check "--set str" [ "$(key "$e" general.name)" = Bar ]
check "--set, the key's type" [ "$(key "$e" qwen2.context_length)" = 4096 ]
check "--set f32" [ "$(key "$e" qwen2.rope.freq_base)" = 250000.5 ]
check "--set bool" [ "$(key "$e" tokenizer.ggml.add_bos_token)" = true ]
check "--set u8" [ "$(key "$e" new.u8)" = 255 ]
check "--set i64" [ "$(key "$e" new.i64)" = -9000000000 ]
check "--set f64" [ "$(key "$e" new.f64)" = 0.125 ]
check "--set i32 array" [ "$(key "$e" new.arr | tr '\n' ' ')" = "1 -2 3 " ]
check "--set json array" [ "$(key "$e" new.json | tr '\n' ' ')" = "a b " ]
check "--set str: of a type name" [ "$(key "$e" new.str)" = "u32:5" ]
run 0 types "$DUMP" --json --no-tensors --no-summary "$e"
check "json: inferred types" python3 - "$tmp/types.out" <<'EOF'
import json, sys
kv = {k["key"]: k for k in json.load(open(sys.argv[1]))["kv"]}
want = {"new.jint": ("INT32", 42), "new.jfloat": ("FLOAT32", 1.5), "new.jbools": ("ARRAY", [True, False]),
        "new.u8": ("UINT8", 255), "new.i64": ("INT64", -9000000000), "new.empty": ("ARRAY", []),
        "new.list": ("ARRAY", ["x", "y\u00e9", "z"]), "qwen2.layers": ("UINT32", 2)}
bad = [k for k, (t, v) in want.items() if kv[k]["type"] != t or kv[k]["value"] != v]
bad += [k for k in ("new.jbools", "new.list", "new.empty")
        if kv[k]["element_type"] != {"new.jbools": "BOOL", "new.list": "STRING", "new.empty": "UINT16"}[k]]
if bad: print("wrong:", bad, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
"$DUMP" -k tokenizer.chat_template "$e" > "$tmp/template.out"
{ cat "$tmp/template.txt"; echo; } > "$tmp/template.want" # -k ends the value with a newline
check "--set-file: the file's bytes exactly" same "$tmp/template.want" "$tmp/template.out"
# the order: kept pairs in place, the renamed one too, new ones at the end
keys "$m" | grep -v '^general.type$' | sed 's/^qwen2.block_count$/qwen2.layers/' > "$tmp/keys-want"
for k in new.u8 new.i64 new.f64 new.arr new.json new.jint new.jfloat new.jbools new.empty new.list new.str; do
    echo "$k" >> "$tmp/keys-want"
done
keys "$e" > "$tmp/keys-got"
check "key order" same "$tmp/keys-want" "$tmp/keys-got"
# the tensors, byte for byte
tensor_sums "$m" > "$tmp/sums-m"
tensor_sums "$e" > "$tmp/sums-e"
check "tensors copied" same "$tmp/sums-m" "$tmp/sums-e"
run 0 verify "$VERIFY" "$e"
if [ -x "$top_builddir/qwen-run" ]; then
    "$EDIT" --set general.name=str:Other "$m" "$tmp/n.gguf" || fail "a plain edit"
    run 0 run-m "$RUN" -m "$m" --raw --temp 0 -n 8 -p Hello
    run 0 run-n "$RUN" -m "$tmp/n.gguf" --raw --temp 0 -n 8 -p Hello
    check "the edited model runs alike" same "$tmp/run-m.out" "$tmp/run-n.out"
fi

# --- --dry-run ------------------------------------------------------------------
run 0 dry "$EDIT" -n --set general.name=str:Foo --delete tokenizer.ggml.pre --set new.k=u32:7 "$m"
cat > "$tmp/dry-want" <<EOF
--- $m
+++ $m
-general.name: STRING = "Qwen2.5 tiny synthetic (seed 5)"
+general.name: STRING = "Foo"
-tokenizer.ggml.pre: STRING = "qwen2"
+new.k: UINT32 = 7
EOF
check "--dry-run: the diff" same "$tmp/dry-want" "$tmp/dry.out"
check "--dry-run: FILE unchanged" same "$tmp/m.orig" "$m"
run 1 dry-none "$EDIT" -n --set general.name=str:"Qwen2.5 tiny synthetic (seed 5)" "$m"
run 0 dry-q "$EDIT" -n -q --set general.name=str:X "$m"
check "--dry-run -q: no diff" empty "$tmp/dry-q.out"
run 1 dry-renamed "$EDIT" -n --rename general.name=x.name --rename x.name=general.name "$m"

# --- standard input and output ----------------------------------------------------
"$EDIT" --set general.name=str:Foo - - < "$m" > "$tmp/piped.gguf" || fail "stdin to stdout"
"$EDIT" --set general.name=str:Foo "$m" "$tmp/file.gguf" || fail "file to file"
check "stdin to stdout: the bytes of a file edit" same "$tmp/file.gguf" "$tmp/piped.gguf"
cat "$m" | "$EDIT" --set general.name=str:Foo - "$tmp/pipe-in.gguf" || fail "a pipe"
check "a pipe: the bytes of a file edit" same "$tmp/file.gguf" "$tmp/pipe-in.gguf"
gzip -c "$m" > "$tmp/m.gguf.gz"
run 0 gzip "$EDIT" --set general.name=str:Foo "$tmp/m.gguf.gz" "$tmp/from-gz.gguf"
check "a gzip FILE: the bytes of a file edit" same "$tmp/file.gguf" "$tmp/from-gz.gguf"

# --- refused edits: a message, status 2, no output ---------------------------------
echo keep > "$tmp/old.gguf"
refused() {
    _msg=$1
    shift
    run 2 refused "$EDIT" "$@" "$m" "$tmp/old.gguf"
    check "refused ($*): message '$_msg'" has "$tmp/refused.err" "$_msg"
    check "refused ($*): OUT left as it was" [ "$(cat "$tmp/old.gguf")" = keep ]
}
refused "general.alignment cannot be edited: the tensor data would move" --set general.alignment=u32:64
refused "general.alignment cannot be edited" --delete general.alignment
refused "general.alignment cannot be edited" --rename general.name=general.alignment
refused "the split.* keys describe a split set" --set split.count=u16:2
refused "the split.* keys describe a split set" --delete split.count
refused "the split.* keys describe a split set" --rename split.no=x.no
refused "the split.* keys describe a split set" --rename general.name=split.tensors.count
refused "key 'nope' not found (to delete)" --delete nope
refused "key 'nope' not found (to rename)" --rename nope=other
refused "cannot rename 'general.name' to 'general.architecture': that key exists" --rename general.name=general.architecture
refused "--set qwen2.block_count: 'abc' is not a UINT32" --set qwen2.block_count=abc
refused "--set new.x: 300 is out of the range of UINT8" --set new.x=u8:300
refused "--set new.x: -1 is out of the range of UINT32" --set new.x=u32:-1
refused "--set new.x: ' -1' is not a UINT64" --set 'new.x=u64: -1'
refused "--set new.x: ' 5' is not a INT32" --set 'new.x=i32: 5'
refused "--set new.x: 1e999 is out of the range of FLOAT32" --set new.x=f32:1e999
refused "--set new.x: -1e999 is out of the range of FLOAT64" --set new.x=f64:-1e999
refused "--set new.x: 1e39 is out of the range of FLOAT32" --set new.x=f32:1e39
refused "--set new.x: a new key needs a type" --set new.x=5
refused "--set new.x: nested arrays are not supported" --set 'new.x=json:[[1]]'
refused "--set new.x: array elements of different kinds" --set 'new.x=json:[1, "a"]'
refused "--set new.x: an array without its closing bracket" --set 'new.x=json:[1, 2'
refused "--set new.x: an empty array has no element type" --set 'new.x=json:[]'
refused "--set qwen2.block_count: an array for a key that holds a scalar" --set 'qwen2.block_count=[1]'
refused "--set tokenizer.ggml.tokens: a scalar for a key that holds an array" --set 'tokenizer.ggml.tokens=1'
refused "--set tokenizer.ggml.tokens: element 1: a number where a string is wanted" --set 'tokenizer.ggml.tokens=["a", 1]'
refused "--set general.name: element 0: a string where a UINT32 is wanted" --set 'general.name=u32:[1]' --set 'general.name=json:["a"]'
refused "--set-file new.x: $tmp/absent: No such file or directory" --set-file new.x=str:"$tmp/absent"
long=$(head -c 70000 /dev/zero | tr '\0' k)
run 2 long-key "$EDIT" --set "$long=u8:1" "$m" "$tmp/old.gguf"
check "a key of more than 65535 bytes: refused" has "$tmp/long-key.err" "a key of more than 65535 bytes"
check "a key of more than 65535 bytes: OUT left as it was" [ "$(cat "$tmp/old.gguf")" = keep ]
run 2 onto-input "$EDIT" --set general.name=str:X "$m" "$m"
check "OUT = FILE: refused" has "$tmp/onto-input.err" "is the input file"
ln "$m" "$tmp/link.gguf"
run 2 onto-link "$EDIT" --set general.name=str:X "$m" "$tmp/link.gguf"
check "OUT a link to FILE: refused" has "$tmp/onto-link.err" "is the input file"
check "OUT = FILE: FILE unchanged" same "$tmp/m.orig" "$m"
run 2 no-edit "$EDIT" "$m" "$tmp/x.gguf"
check "no edit: usage" has "$tmp/no-edit.err" "nothing to do"
run 2 bad-set "$EDIT" --set noequals "$m" "$tmp/x.gguf"
check "--set without =: usage" has "$tmp/bad-set.err" "expected KEY=VALUE"
check "no output after refusals" [ ! -e "$tmp/x.gguf" ]

# --- split sets: the set read and written whole, the edits in the first shard --------
SPLIT=$top_builddir/tests/split-file
if [ -x "$SPLIT" ]; then
    "$SPLIT" "$m" "$tmp/s" 3 || hard_error "split-file failed"
    run 0 set-edit "$EDIT" --set general.name=str:SetName "$tmp/s-00002-of-00003.gguf" "$tmp/o.gguf"
    check "a set: three files" [ -f "$tmp/o-00001-of-00003.gguf" -a -f "$tmp/o-00002-of-00003.gguf" -a -f "$tmp/o-00003-of-00003.gguf" ]
    check "a set: no partial files" [ -z "$(ls -A "$tmp" | grep partial)" ]
    check "a set: the first shard edited" [ "$(key "$tmp/o-00003-of-00003.gguf" general.name)" = SetName ]
    check "a set: the other shards as they were" same "$tmp/s-00002-of-00003.gguf" "$tmp/o-00002-of-00003.gguf"
    check "a set: the other shards as they were (3)" same "$tmp/s-00003-of-00003.gguf" "$tmp/o-00003-of-00003.gguf"
    run 0 set-verify "$VERIFY" "$tmp/o-00001-of-00003.gguf"
    tensor_sums "$tmp/o-00001-of-00003.gguf" | sed 's/^.*:\(.*\)$/\1/' | sort > "$tmp/sums-o"
    sort "$tmp/sums-m" > "$tmp/sums-m-sorted"
    check "a set: the tensors" same "$tmp/sums-m-sorted" "$tmp/sums-o"
    run 0 set-all "$EDIT" --all-shards --set my.k=u8:7 "$tmp/s-00001-of-00003.gguf" "$tmp/a.gguf"
    run 0 set-all-k "$DUMP" --shard -k my.k "$tmp/a-00002-of-00003.gguf"
    check "--all-shards: every shard edited" [ "$(cat "$tmp/set-all-k.out")" = 7 ]
    run 0 set-shard "$EDIT" --shard --set my.k=u8:7 "$tmp/s-00002-of-00003.gguf" "$tmp/alone.gguf"
    check "--shard: the file alone, with a note" has "$tmp/set-shard.err" "edited alone"
    run 0 set-shard-k "$DUMP" --shard -k my.k -k split.no "$tmp/alone.gguf"
    check "--shard: the shard's own pairs" [ "$(tr '\n' ' ' < "$tmp/set-shard-k.out")" = "7 1 " ]
    run 2 set-stdout "$EDIT" --set general.name=str:X "$tmp/s-00001-of-00003.gguf" -
    check "a set to standard output: refused" has "$tmp/set-stdout.err" "OUT cannot be '-'"
    rm "$tmp/s-00003-of-00003.gguf"
    run 2 set-missing "$EDIT" --set general.name=str:X "$tmp/s-00001-of-00003.gguf" "$tmp/q.gguf"
    check "a set, a shard missing: message" has "$tmp/set-missing.err" "s-00003-of-00003.gguf: shard 3 of 3 is missing"
    check "a set, a shard missing: no output" [ -z "$(ls -A "$tmp" | grep '^q')" ]
fi

# --- the gguf Python package reads the result ----------------------------------------
if command -v python3 >/dev/null 2>&1 && python3 -c 'import gguf, numpy' 2>/dev/null; then
    checks=$((checks + 1))
    python3 - "$e" <<'EOF' || fail "the gguf package on gguf-edit's output"
import sys, gguf
r = gguf.GGUFReader(sys.argv[1])
f = r.fields
name = bytes(f["general.name"].parts[-1]).decode()
arr = [int(f["new.arr"].parts[i][0]) for i in f["new.arr"].data]
if name != "Bar" or arr != [1, -2, 3] or "general.type" in f or len(r.tensors) != 26:
    sys.exit("got %r %r" % (name, arr))
EOF
fi

# --- every long option of --help is in gguf-edit(1) -------------------------------
run 0 help "$EDIT" --help
for opt in $(grep -o -e '--[a-z][a-z-]*' "$tmp/help.out" | sort -u); do
    check "gguf-edit(1) documents $opt" \
        grep -q -e "$(echo "$opt" | sed 's/-/\\\\-/g')" "$top_srcdir/man/gguf-edit.1"
done

finish
