#!/bin/sh
# test-split-tools.sh -- split sets through the tools: a tiny model written as a
# set of 3 (tests/split-file, as llama.cpp's gguf-split writes one) runs
# in qwen-run from any shard with the greedy tokens of the whole file;
# gguf-verify checks the set, then each shard once (-w and -c per shard);
# gguf-requant merges a set into one file, splits a file or a set again
# (--split-max-tensors, --split-max-size; whole or not at all) with the
# tensors of a single-file run;
# gguf-dump shows the set as the model (the tensor directory and summary
# of the whole file, a line per shard, the shard of each tensor; JSON
# too), --shard one file alone, -k the first shard's metadata, --values a
# tensor of the third shard; a missing shard is an error naming it.  A set
# written by the gguf Python package (when installed) reads the same; one
# written by llama.cpp's llama-gguf-split too, when LLAMA_GGUF_SPLIT names
# it.

test_name=test-split-tools
. "${top_srcdir:-.}/tests/common.sh"

SYNTH=$top_builddir/tests/gguf-synth
SPLIT=$top_builddir/tests/split-file
DUMP=$(tool gguf-dump)
RUN=$(tool qwen-run)
need_exec "$SYNTH" "$SPLIT" "$top_builddir/gguf-dump" "$top_builddir/qwen-run"

m=$tmp/m.gguf
"$SYNTH" --size tiny --type q8_0 --seed 3 -o "$m" || hard_error "gguf-synth failed"
"$SPLIT" "$m" "$tmp/s" 3 || hard_error "split-file failed"
s1=$tmp/s-00001-of-00003.gguf s2=$tmp/s-00002-of-00003.gguf s3=$tmp/s-00003-of-00003.gguf

# qwen-run: the same greedy tokens from the file and from each shard
run 0 run-whole "$RUN" -m "$m" --raw --temp 0 -n 12 -p "Hello"
for s in "$s1" "$s2" "$s3"; do
    run 0 run-shard "$RUN" -m "$s" --raw --temp 0 -n 12 -p "Hello"
    check "qwen-run on $(basename "$s"): the tokens of the whole file" same "$tmp/run-whole.out" "$tmp/run-shard.out"
done

# gguf-dump: the set as one model
run 0 dump-whole "$DUMP" "$m"
run 0 dump-set "$DUMP" "$s2"
# the tensor table without the offsets (each shard has its own) and the
# shard column, and the summary, are the whole file's
tensors() {
    sed -n '/^tensors:/,/^$/p' "$1" |
        sed -n -E 's/^ *[0-9]+  ([^ ]+) +([^ ]+) +(\[[^]]*\]) +[0-9]+ +([0-9]+).*/\1 \2 \3 \4/p'
}
tensors "$tmp/dump-whole.out" > "$tmp/t-whole"
tensors "$tmp/dump-set.out" > "$tmp/t-set"
check "dump: the set's tensors are the file's" same "$tmp/t-whole" "$tmp/t-set"
check "dump: 26 tensors" [ "$(wc -l < "$tmp/t-set")" -eq 26 ]
sed -n '/^summary:/,$p' "$tmp/dump-whole.out" > "$tmp/sum-whole"
sed -n '/^summary:/,$p' "$tmp/dump-set.out" > "$tmp/sum-set"
check "dump: the set's summary is the file's" same "$tmp/sum-whole" "$tmp/sum-set"
check "dump: header line" has "$tmp/dump-set.out" "$s2: split set of 3 shards, GGUF v3"
for i in 1 2 3; do
    check "dump: line of shard $i" grep -E "^ +$i  $tmp/s-0000$i-of-00003.gguf " "$tmp/dump-set.out"
done
check "dump: the last tensor is in shard 3" grep -E "^ *25  output_norm.weight .* 3$" "$tmp/dump-set.out"
check "dump: the first tensor is in shard 1" grep -E "^ *0  token_embd.weight .* 1$" "$tmp/dump-set.out"

run 0 json-set "$DUMP" --json "$s3"
if command -v python3 >/dev/null 2>&1; then
    checks=$((checks + 1))
    python3 - "$tmp/json-set.out" "$s1" "$s2" "$s3" <<'EOF' || fail "dump --json of the set (see above)"
import json, sys
d = json.load(open(sys.argv[1]))
paths = sys.argv[2:]
bad = []
if d["split_count"] != 3: bad.append("split_count %r" % d["split_count"])
if [s["file"] for s in d["shards"]] != paths: bad.append("shard files %r" % [s["file"] for s in d["shards"]])
if [s["shard"] for s in d["shards"]] != [1, 2, 3]: bad.append("shard numbers")
if sum(s["tensor_count"] for s in d["shards"]) != d["tensor_count"] or d["tensor_count"] != 26:
    bad.append("tensor counts")
if sum(s["file_size"] for s in d["shards"]) != d["file_size"]: bad.append("file_size")
counts = [sum(1 for t in d["tensors"] if t["shard"] == k) for k in (1, 2, 3)]
if counts != [s["tensor_count"] for s in d["shards"]]: bad.append("tensors per shard %r" % counts)
if [t["index"] for t in d["tensors"]] != list(range(26)): bad.append("tensor indexes")
for b in bad: print("json:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
fi

# --shard: the file alone; -k: the first shard's metadata
run 0 dump-shard "$DUMP" --shard --no-kv --no-summary "$s2"
check "dump --shard: header of the file" has "$tmp/dump-shard.out" "$s2: GGUF v3, little-endian, 3 key/value pairs"
check "dump --shard: no shard column" lacks "$tmp/dump-shard.out" "shard"
run 0 k-set "$DUMP" -k general.architecture -k split.count "$s3"
check "dump -k on a set" [ "$(cat "$tmp/k-set.out")" = "qwen2
3" ]
# --values of a tensor of the third shard, from the first
run 0 values-whole "$DUMP" --values output_norm.weight:4 "$m"
run 0 values-set "$DUMP" --values output_norm.weight:4 "$s1"
check "dump --values on a set" same "$tmp/values-whole.out" "$tmp/values-set.out"
run 2 values-none "$DUMP" --values no.such.tensor "$s1"
check "dump --values of no tensor: message" has "$tmp/values-none.err" "tensor 'no.such.tensor' not found in the 3 shards"

# gguf-verify: the set checked, then each shard once (also when all are
# given), with --model over the set; -w lists each shard, -c checks them
VERIFY=$(tool gguf-verify)
run 0 verify-set "$VERIFY" "$s2"
check "verify: a line per shard" [ "$(cat "$tmp/verify-set.out")" = "$s1: OK
$s2: OK
$s3: OK" ]
run 0 verify-all "$VERIFY" --model qwen2 "$s1" "$s3" "$s2" "$m"
check "verify: each shard once, the file too" [ "$(cat "$tmp/verify-all.out")" = "$s1: OK
$s2: OK
$s3: OK
$m: OK" ]
run 0 verify-shard "$VERIFY" --shard "$s3"
check "verify --shard: the file alone" [ "$(cat "$tmp/verify-shard.out")" = "$s3: OK" ]
run 1 verify-shard-model "$VERIFY" --shard --model qwen2 "$s3"
check "verify --shard --model: a shard alone is not the model" has "$tmp/verify-shard-model.out" "key 'general.architecture' is missing"
run 0 verify-w "$VERIFY" -w "$s3"
check "verify -w: every shard's tensors" [ "$(grep -c ':blk\.\|:token_embd\|:output' "$tmp/verify-w.out")" -eq 26 ]
check "verify -w: each shard's whole-file line" [ "$(grep -c -E 'gguf$' "$tmp/verify-w.out")" -eq 3 ]
run 0 verify-c "$VERIFY" -c "$tmp/verify-w.out"
# a byte of the last tensor's data changed in the third shard
cp "$s3" "$tmp/s3.orig"
size=$(wc -c < "$s3")
printf '\177' | dd of="$s3" bs=1 seek=$((size - 40)) conv=notrunc 2>/dev/null
run 1 verify-c-bad "$VERIFY" -c "$tmp/verify-w.out"
check "verify -c: the changed tensor of the third shard" has "$tmp/verify-c-bad.out" "$s3:output_norm.weight: FAILED"
check "verify -c: that shard's file" has "$tmp/verify-c-bad.out" "$s3: FAILED"
check "verify -c: the other shards" has "$tmp/verify-c-bad.out" "$s1: OK"
mv "$tmp/s3.orig" "$s3"

# gguf-requant: a set merged into one file (no split keys left), a file
# split again, a set converted and split by size; the tensors are those a
# single-file run gives, and the sets read as the model
REQUANT=$(tool gguf-requant)
tensor_sums() { "$VERIFY" -w "$1" | sed -n 's/^xxh3  \([0-9a-f]*\)  .*:\([^(].*\)$/\2 \1/p' | sort; }
tensor_sums "$m" > "$tmp/sums-m"
run 0 merge "$REQUANT" "$s2" "$tmp/merged.gguf"
tensor_sums "$tmp/merged.gguf" > "$tmp/sums-merged"
check "requant merge: one file, the file's tensors" same "$tmp/sums-m" "$tmp/sums-merged"
run 1 merged-keys "$DUMP" -k split.count "$tmp/merged.gguf"
run 1 merged-keys2 "$DUMP" -k split.no "$tmp/merged.gguf"
run 0 merged-arch "$DUMP" -k general.architecture -k tokenizer.ggml.model "$tmp/merged.gguf"
run 0 split-n "$REQUANT" --split-max-tensors 10 "$m" "$tmp/o.gguf"
o1=$tmp/o-00001-of-00003.gguf o2=$tmp/o-00002-of-00003.gguf o3=$tmp/o-00003-of-00003.gguf
check "requant --split-max-tensors: three files" [ -f "$o1" -a -f "$o2" -a -f "$o3" ]
check "requant --split-max-tensors: no partial files left" [ -z "$(ls -A "$tmp" | grep partial)" ]
run 0 split-keys "$DUMP" --shard -k split.no -k split.count -k split.tensors.count "$o3"
check "requant --split-max-tensors: split keys of the last file" [ "$(tr '\n' ' ' < "$tmp/split-keys.out")" = "2 3 26 " ]
run 0 split-keys1 "$DUMP" --shard -k split.no -k general.architecture "$o1"
check "requant --split-max-tensors: the first file holds the metadata" [ "$(tr '\n' ' ' < "$tmp/split-keys1.out")" = "0 qwen2 " ]
run 0 run-o "$RUN" -m "$o2" --raw --temp 0 -n 12 -p "Hello"
check "qwen-run on requant's set" same "$tmp/run-whole.out" "$tmp/run-o.out"
tensor_sums "$o1" > "$tmp/sums-o" # (the whole set: gguf-verify -w lists each file)
check "requant --split-max-tensors: the file's tensors" same "$tmp/sums-m" "$tmp/sums-o"
# a set converted and split by size, against the same conversion of the file
run 0 conv-one "$REQUANT" --from q8_0 --to q4_0 "$m" "$tmp/q4.gguf"
run 0 conv-set "$REQUANT" --from q8_0 --to q4_0 --split-max-size 30K "$s3" "$tmp/q4s"
check "requant --split-max-size: a file per 30 KB" [ -f "$tmp/q4s-00003-of-00003.gguf" ]
tensor_sums "$tmp/q4s-00002-of-00003.gguf" > "$tmp/sums-q4s"
tensor_sums "$tmp/q4.gguf" > "$tmp/sums-q4"
check "requant a set, split by size: the tensors of the single-file run" same "$tmp/sums-q4" "$tmp/sums-q4s"
run 0 q4s-ft "$DUMP" -k general.file_type "$tmp/q4s-00002-of-00003.gguf"
check "requant a set: the file type of the new mixture" [ "$(cat "$tmp/q4s-ft.out")" = 2 ]
# --checksums in a split output: each file's own, checked by gguf-verify
run 0 split-sums "$REQUANT" --checksums --split-max-tensors 9 "$s1" "$tmp/c.gguf"
run 0 verify-sums "$VERIFY" "$tmp/c-00001-of-00003.gguf"
check "requant --checksums, split: every file's embedded checksums" [ "$(grep -c 'embedded tensor checksums match' "$tmp/verify-sums.out")" -eq 3 ]
# a file that cannot be put in place: none of the set is left
mkdir "$tmp/x-00002-of-00003.gguf"
run 2 split-fail "$REQUANT" --split-max-tensors 10 "$m" "$tmp/x.gguf"
check "requant, a file not put in place: message" has "$tmp/split-fail.err" "x-00002-of-00003.gguf: cannot put in place"
check "requant, a file not put in place: nothing left" [ -z "$(ls -A "$tmp" | grep -e '^x-0000[13]' -e partial)" ]
rmdir "$tmp/x-00002-of-00003.gguf"
run 2 split-stdout "$REQUANT" --split-max-tensors 10 "$m" -
check "requant --split-max-* to standard output: refused" has "$tmp/split-stdout.err" "OUT cannot be '-'"
run 2 split-bad "$REQUANT" --split-max-size 10X "$m" "$tmp/y.gguf"
check "requant --split-max-size 10X: refused" has "$tmp/split-bad.err" "invalid size '10X'"
run 2 split-onto-input "$REQUANT" --split-max-tensors 10 "$s1" "$tmp/s.gguf"
check "requant: a set written over its input: refused" has "$tmp/split-onto-input.err" "is the input file"

# a shard missing
mv "$s2" "$tmp/away.gguf"
run 2 verify-missing "$VERIFY" "$s3"
check "verify, a shard missing: message" has "$tmp/verify-missing.err" "gguf-verify: $s2: shard 2 of 3 is missing"
check "verify, a shard missing: result line" has "$tmp/verify-missing.out" "$s3: FAILED open or read"
run 2 dump-missing "$DUMP" "$s1"
check "dump, a shard missing: message" has "$tmp/dump-missing.err" "gguf-dump: $s2: shard 2 of 3 is missing"
run 2 run-missing "$RUN" -m "$s3" -p "Hello" -n 1
check "qwen-run, a shard missing: message" has "$tmp/run-missing.err" "$s2: shard 2 of 3 is missing"
run 0 dump-alone "$DUMP" --shard "$s1"
mv "$tmp/away.gguf" "$s2"

# a set written by the gguf Python package (llama.cpp's own writer)
if command -v python3 >/dev/null 2>&1 && python3 -c 'import gguf, numpy' 2>/dev/null; then
    checks=$((checks + 1))
    python3 - "$tmp/py.gguf" <<'EOF' || fail "the gguf package could not write a set"
import sys, numpy as np, gguf
w = gguf.GGUFWriter(sys.argv[1], "qwen2", split_max_tensors=2)
w.add_string("general.name", "py split")
for i in range(5):
    w.add_tensor("t%d" % i, np.arange(8 * (i + 1), dtype=np.float32) + i)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
EOF
    run 0 py-json "$DUMP" --json "$tmp/py-00002-of-00003.gguf"
    checks=$((checks + 1))
    python3 - "$tmp/py-json.out" <<'EOF' || fail "dump of the gguf package's set (see above)"
import json, sys
d = json.load(open(sys.argv[1]))
got = [(t["name"], t["dims"], t["shard"]) for t in d["tensors"]]
want = [("t%d" % i, [8 * (i + 1)], i // 2 + 1) for i in range(5)]
kv = {k["key"]: k["value"] for k in d["kv"]}
ok = got == want and d["split_count"] == 3 and kv.get("general.name") == "py split"
if not ok: print("got", got, d["split_count"], kv, file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
    # the gguf package reads requant's set
    checks=$((checks + 1))
    python3 - "$o1" "$o2" "$o3" <<'EOF' || fail "the gguf package on requant's set (see above)"
import sys, gguf
total = 0
for no, path in enumerate(sys.argv[1:]):
    r = gguf.GGUFReader(path)
    f = r.fields
    got = (int(f["split.no"].parts[-1][0]), int(f["split.count"].parts[-1][0]),
           int(f["split.tensors.count"].parts[-1][0]))
    if got != (no, 3, 26): sys.exit("%s: split keys %r" % (path, got))
    total += len(r.tensors)
if total != 26: sys.exit("tensors: %d" % total)
EOF
    run 0 py-values "$DUMP" --values t4:3 "$tmp/py-00001-of-00003.gguf"
    check "dump --values of the gguf package's set" [ "$(tr '\n' ' ' < "$tmp/py-values.out")" = "4.0 5.0 6.0 " ]
else
    echo "note: the gguf Python package is not installed: its sets are not checked" >&2
fi

# a set written by llama.cpp's llama-gguf-split
if [ -n "${LLAMA_GGUF_SPLIT:-}" ]; then
    # llama-gguf-split merges requant's set into the file's tensors
    "$LLAMA_GGUF_SPLIT" --merge "$o1" "$tmp/lmerged.gguf" >/dev/null 2>&1 ||
        hard_error "$LLAMA_GGUF_SPLIT --merge failed"
    tensor_sums "$tmp/lmerged.gguf" > "$tmp/sums-lm"
    check "llama-gguf-split --merge of requant's set: the file's tensors" same "$tmp/sums-m" "$tmp/sums-lm"
    "$LLAMA_GGUF_SPLIT" --split --split-max-tensors 10 "$m" "$tmp/l" >/dev/null 2>&1 ||
        hard_error "$LLAMA_GGUF_SPLIT failed"
    run 0 run-llama "$RUN" -m "$tmp/l-00003-of-00003.gguf" --raw --temp 0 -n 12 -p "Hello"
    check "qwen-run on llama-gguf-split's set" same "$tmp/run-whole.out" "$tmp/run-llama.out"
    run 0 dump-llama "$DUMP" "$tmp/l-00001-of-00003.gguf"
    tensors "$tmp/dump-llama.out" > "$tmp/t-llama"
    check "dump of llama-gguf-split's set: the file's tensors" same "$tmp/t-whole" "$tmp/t-llama"
fi

finish
