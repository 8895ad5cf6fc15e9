#!/bin/sh
# test-requant.sh -- gguf-requant on files: each output re-read and checked
# by tests/requant-check (KV pairs kept in order byte for byte, copied
# tensors byte-identical, converted tensors equal to quantize(dequantize(IN))
# computed independently) and by gguf-dump --json (types, file type,
# provenance keys); the choice of tensors (--from/--to, --type, --exclude,
# 1-D tensors, --strict); general.file_type and --file-type; --dry-run,
# --report and --json; alignment, version, big-endian input; OUT == IN;
# usage errors.

. "${top_srcdir:-.}/tests/test-requant-common.sh"
need_python
need_tools

version=$("$REQUANT" --version | sed -n '1s/.* //p')
[ -n "$version" ] || hard_error "gguf-requant --version printed no version"

tiny=$tmp/tiny.gguf
small=$tmp/small-q4km.gguf
synth "$tiny" --size tiny --type f16 --seed 3
synth "$small" --size small --type q4_k_m --seed 5
tiny_sum=$(sum "$tiny")
small_sum=$(sum "$small")

# kvs FILE: "key TYPE" lines of FILE's metadata in order (gguf-dump --json).
# py_check FILE... : runs the python program on stdin with the files.
py_check() {
    checks=$((checks + 1))
    python3 - "$@" || fail "python checks (see above) for $*"
}

# --- the main use: Q6_K -> Q4_K of a Q4_K_M model --------------------------
out=$tmp/small-q4k.gguf
run 0 main "$REQUANT" --from q6_k --to q4_k "$small" "$out"
check "main: nothing on stdout" empty "$tmp/main.out"
check "main: nothing on stderr (not a terminal: no progress)" empty "$tmp/main.err"
run 0 main-check "$CHECKER" "$small" "$out"
check "main: 3 tensors converted" [ "$(count "$tmp/main-check.out" converted)" -eq 3 ]
check "main: token_embd Q6_K -> Q4_K" has "$tmp/main-check.out" "converted token_embd.weight Q6_K Q4_K"
check "main: blk.1.attn_v Q6_K -> Q4_K" has "$tmp/main-check.out" "converted blk.1.attn_v.weight Q6_K Q4_K"
check "main: blk.1.ffn_down Q6_K -> Q4_K" has "$tmp/main-check.out" "converted blk.1.ffn_down.weight Q6_K Q4_K"
check "main: no Q6_K left" [ "$(grep -c ' Q6_K$' "$tmp/main-check.out")" -eq 0 ]
check "main: input unchanged" [ "$(sum "$small")" = "$small_sum" ]
"$DUMP" --json "$small" >"$tmp/small.json" || hard_error "gguf-dump $small"
"$DUMP" --json "$out" >"$tmp/out.json" || hard_error "gguf-dump $out"
py_check "$tmp/small.json" "$tmp/out.json" "$version" <<'EOF'
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2])); version = sys.argv[3]
bad = []
def expect(what, got, want):
    if got != want: bad.append("%s: got %r, want %r" % (what, got, want))
ka = [e["key"] for e in a["kv"]]; kb = [e["key"] for e in b["kv"]]
expect("keys: the input's in order, then the provenance keys", kb,
       ka + ["gguf_tools.requant.tool", "gguf_tools.requant.rules"])
vb = {e["key"]: e for e in b["kv"]}
va = {e["key"]: e for e in a["kv"]}
expect("input file type", va["general.file_type"]["value"], 15)
expect("output file type", vb["general.file_type"]["value"], 14)
expect("file type type", vb["general.file_type"]["type"], "UINT32")
expect("tool", vb["gguf_tools.requant.tool"]["value"], "gguf-requant " + version)
expect("rules", vb["gguf_tools.requant.rules"]["value"], ["--from=q6_k", "--to=q4_k"])
expect("rules type", (vb["gguf_tools.requant.rules"]["type"], vb["gguf_tools.requant.rules"]["element_type"]),
       ("ARRAY", "STRING"))
for key in ka:
    if key != "general.file_type":
        expect("value of " + key, vb[key]["value"], va[key]["value"])
expect("alignment", b["alignment"], a["alignment"])
expect("tensor names", [t["name"] for t in b["tensors"]], [t["name"] for t in a["tensors"]])
expect("tensor dims", [t["dims"] for t in b["tensors"]], [t["dims"] for t in a["tensors"]])
want = [("Q4_K" if t["type"] == "Q6_K" else t["type"]) for t in a["tensors"]]
expect("tensor types", [t["type"] for t in b["tensors"]], want)
for t in b["tensors"]:
    if t["offset"] % b["alignment"]: bad.append("tensor %s not aligned" % t["name"])
for m in bad: print("  " + m, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF

# The same output for any number of threads.
run 0 t1 "$REQUANT" -t 1 --from q6_k --to q4_k "$small" "$tmp/t1.gguf"
run 0 t2 "$REQUANT" --threads=2 --from q6_k --to q4_k "$small" "$tmp/t2.gguf"
check "-t 1 and -t 2 give the same bytes" same "$tmp/t1.gguf" "$out"
check "-t 2 and the default give the same bytes" same "$tmp/t2.gguf" "$out"

# --- --dry-run, --report, --json --------------------------------------------
mkdir "$tmp/dry" || hard_error "mkdir"
run 0 dry "$REQUANT" --dry-run --from q6_k --to q4_k "$small" "$tmp/dry/never.gguf"
check "dry run: writes nothing" only "$tmp/dry"
check "dry run: table heading" has "$tmp/dry.out" "tensor                 from     to       bytes before   bytes after"
check "dry run: token_embd line" has "$tmp/dry.out" "token_embd.weight      Q6_K     Q4_K           215040        147456"
check "dry run: total line" has "$tmp/dry.out" "converted 3 of 26 tensors: 349440 -> 239616 bytes (-109824, -31.4%)"
size_out=$(wc -c <"$out" | tr -d ' ')
size_in=$(wc -c <"$small" | tr -d ' ')
check "dry run: file line matches the real sizes" has "$tmp/dry.out" "file: $size_in -> $size_out bytes"
check "dry run: file type line" has "$tmp/dry.out" "general.file_type: 15 (Q4_K_M) -> 14 (Q4_K_S)"
run 0 dry-noout "$REQUANT" -n --from q6_k --to q4_k "$small"
check "dry run without OUT: same plan" same "$tmp/dry.out" "$tmp/dry-noout.out"
run 0 dry-json "$REQUANT" -n -j --from q6_k --to q4_k "$small"
run 0 dry-report "$REQUANT" -n --report --json --from q6_k --to q4_k "$small" "$tmp/dry/never.gguf"
check "dry run with --report: writes nothing" only "$tmp/dry"
run 0 report "$REQUANT" --report --json --from q6_k --to q4_k "$small" "$tmp/rep.gguf"
check "--report output equals the plain output" same "$tmp/rep.gguf" "$out"
run 0 json-run "$REQUANT" -j --exclude token_embd.weight --from q6_k --to q4_k "$small" "$tmp/j.gguf"
py_check "$tmp/json-run.out" "$tmp/j.gguf" <<'EOF'
import json, os, sys
d = json.load(open(sys.argv[1]))
ok = d["dry_run"] is False and d["output"] == sys.argv[2] and d["converted_tensors"] == 2 and \
     [t["name"] for t in d["tensors"]] == ["blk.1.attn_v.weight", "blk.1.ffn_down.weight"] and \
     "rmse" not in d["tensors"][0] and d["file_bytes_after"] == os.path.getsize(sys.argv[2]) and \
     d["file_type_after"] == 14
if not ok: print("  %r" % d, file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
run 0 report-text "$REQUANT" --report --from q6_k --to q4_k "$small" "$tmp/rep2.gguf"
check "--report text: error columns" has "$tmp/report-text.out" "rmse   max abs error"
py_check "$tmp/dry-json.out" "$tmp/dry-report.out" "$tmp/report.out" "$tmp/out.json" "$small" "$out" <<'EOF'
import json, os, sys
dry = json.load(open(sys.argv[1])); dr = json.load(open(sys.argv[2])); rep = json.load(open(sys.argv[3]))
dump = json.load(open(sys.argv[4])); src, dst = sys.argv[5], sys.argv[6]
bad = []
def expect(what, got, want):
    if got != want: bad.append("%s: got %r, want %r" % (what, got, want))
keys = ["input", "output", "dry_run", "tensor_count", "tensors", "kept", "converted_tensors",
        "converted_bytes_before", "converted_bytes_after", "file_bytes_before", "file_bytes_after",
        "file_type_before", "file_type_before_name", "file_type_after", "file_type_after_name",
        "input_files", "output_files"]
for name, d in (("dry", dry), ("dry-report", dr), ("report", rep)):
    expect(name + " keys", list(d), keys)
expect("dry: output", dry["output"], None)
expect("dry: dry_run", dry["dry_run"], True)
expect("report: output", rep["output"], os.path.join(os.path.dirname(dst), "rep.gguf"))
expect("report: dry_run", rep["dry_run"], False)
expect("input", dry["input"], src)
expect("tensor_count", dry["tensor_count"], 26)
expect("converted", [(t["name"], t["from"], t["to"]) for t in dry["tensors"]],
       [("token_embd.weight", "Q6_K", "Q4_K"), ("blk.1.attn_v.weight", "Q6_K", "Q4_K"),
        ("blk.1.ffn_down.weight", "Q6_K", "Q4_K")])
expect("converted_tensors", dry["converted_tensors"], 3)
expect("kept", dry["kept"], [])
expect("file_bytes_before", dry["file_bytes_before"], os.path.getsize(src))
expect("file_bytes_after", dry["file_bytes_after"], os.path.getsize(dst))
expect("file types", (dry["file_type_before"], dry["file_type_before_name"], dry["file_type_after"],
                      dry["file_type_after_name"]), (15, "Q4_K_M", 14, "Q4_K_S"))
bytes_out = {t["name"]: t["bytes"] for t in dump["tensors"]}
for t in dry["tensors"]:
    expect(t["name"] + " bytes_after", t["bytes_after"], bytes_out[t["name"]])
expect("sum before", dry["converted_bytes_before"], sum(t["bytes_before"] for t in dry["tensors"]))
expect("sum after", dry["converted_bytes_after"], sum(t["bytes_after"] for t in dry["tensors"]))
expect("no error fields without --report", [k for t in dry["tensors"] for k in t if k in ("rmse",)], [])
for name, d in (("dry-report", dr), ("report", rep)):
    for t in d["tensors"]:
        r, m, rms = t["rmse"], t["max_abs_error"], t["input_rms"]
        if not (0 < r <= m): bad.append("%s %s: rmse %r, max %r" % (name, t["name"], r, m))
        # weights are N(0, 0.02); Q4_K of Q6_K data loses a few percent
        if not (0.001 < r / rms < 0.2): bad.append("%s %s: relative rmse %r" % (name, t["name"], r / rms))
        if not (0.015 < rms < 0.025): bad.append("%s %s: input rms %r" % (name, t["name"], rms))
expect("dry run and real run report the same errors",
       [(t["rmse"], t["max_abs_error"]) for t in dr["tensors"]],
       [(t["rmse"], t["max_abs_error"]) for t in rep["tensors"]])
for m in bad: print("  " + m, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF

# The reported errors, recomputed from the values gguf-dump shows.
"$DUMP" --json --values blk.1.attn_v.weight:32768 "$small" >"$tmp/vals-in.json" || hard_error "gguf-dump --values"
"$DUMP" --json --values blk.1.attn_v.weight:32768 "$tmp/rep.gguf" >"$tmp/vals-out.json" || hard_error "gguf-dump --values"
py_check "$tmp/vals-in.json" "$tmp/vals-out.json" "$tmp/report.out" <<'EOF'
import json, math, struct, sys
# the values are floats printed with the fewest digits that read back as the
# same float: round each to float32 again before any arithmetic
f32 = lambda v: struct.unpack("<f", struct.pack("<f", v))[0]
x = [f32(v) for v in json.load(open(sys.argv[1]))["values"][0]["values"]]
y = [f32(v) for v in json.load(open(sys.argv[2]))["values"][0]["values"]]
t = [t for t in json.load(open(sys.argv[3]))["tensors"] if t["name"] == "blk.1.attn_v.weight"][0]
bad = []
if len(x) != 32768 or len(y) != 32768: bad.append("value counts %d %d" % (len(x), len(y)))
rmse = math.sqrt(sum((b - a) ** 2 for a, b in zip(x, y)) / len(x))
mx = max(abs(b - a) for a, b in zip(x, y))
rms = math.sqrt(sum(a * a for a in x) / len(x))
if abs(t["rmse"] - rmse) > 1e-9 * rmse: bad.append("rmse %r, recomputed %r" % (t["rmse"], rmse))
if t["max_abs_error"] != mx: bad.append("max_abs_error %r, recomputed %r" % (t["max_abs_error"], mx))
if abs(t["input_rms"] - rms) > 1e-9 * rms: bad.append("input_rms %r, recomputed %r" % (t["input_rms"], rms))
for m in bad: print("  " + m, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF

# --- choosing tensors: --exclude, then the first --type, then --from/--to --
pre=$tmp/prec.gguf
run 0 prec "$REQUANT" --exclude 'blk.0.attn_q.weight' --type 'blk.0.*=q8_0' --type 'blk.*=BF16' \
    --from f16 --to f32 "$tiny" "$pre"
run 0 prec-check "$CHECKER" "$tiny" "$pre"
c=$tmp/prec-check.out
check "precedence: --from/--to for token_embd" has "$c" "converted token_embd.weight F16 F32"
check "precedence: --exclude beats an earlier --type" has "$c" "copied blk.0.attn_q.weight F16"
check "precedence: first --type wins (blk.0 -> Q8_0)" has "$c" "converted blk.0.ffn_down.weight F16 Q8_0"
check "precedence: first --type wins (blk.0.attn_k)" has "$c" "converted blk.0.attn_k.weight F16 Q8_0"
check "precedence: second --type for blk.1" has "$c" "converted blk.1.attn_q.weight F16 BF16"
check "precedence: second --type for blk.1.ffn_up" has "$c" "converted blk.1.ffn_up.weight F16 BF16"
check "precedence: 1-D tensors are never converted" has "$c" "copied blk.1.attn_q.bias F32"
check "precedence: 1-D norms are never converted" has "$c" "copied output_norm.weight F32"
check "precedence: 14 tensors converted" [ "$(count "$c" converted)" -eq 14 ]
check "precedence: rules recorded as given, in order" [ "$("$DUMP" -k gguf_tools.requant.rules "$pre")" = \
"--exclude=blk.0.attn_q.weight
--type=blk.0.*=q8_0
--type=blk.*=BF16
--from=f16
--to=f32" ]
# blk.1's BF16 (36864 elements) outweighs blk.0's Q8_0 (32768) and F16 (4096).
check "precedence: file type BF16 (32)" [ "$("$DUMP" -k general.file_type "$pre")" = 32 ]

# --type on a matching tensor already of the type: copied.
run 0 same-type "$REQUANT" --type '*=f16' "$tiny" "$tmp/same.gguf"
run 0 same-type-check "$CHECKER" "$tiny" "$tmp/same.gguf"
check "--type to the same type: nothing converted" lacks "$tmp/same-type-check.out" converted
check "nothing converted: general.file_type kept" [ "$("$DUMP" -k general.file_type "$tmp/same.gguf")" = 1 ]

# --- rows that do not fit the block size; --strict --------------------------
run 0 nofit "$REQUANT" --from f16 --to q4_k "$tiny" "$tmp/nofit.gguf"
check "no fit: a warning per 2-D tensor" [ "$(count "$tmp/nofit.err" "warning: tensor")" -eq 15 ]
check "no fit: the warning names tensor, row length, block size" has "$tmp/nofit.err" \
    "gguf-requant: $tiny: warning: tensor 2 'blk.0.attn_q.weight': row length 64 is not a multiple of 256, the block size of Q4_K; left as F16"
check "no fit: ffn_down's row length" has "$tmp/nofit.err" "'blk.0.ffn_down.weight': row length 128 is not"
run 0 nofit-check "$CHECKER" "$tiny" "$tmp/nofit.gguf"
check "no fit: everything copied" lacks "$tmp/nofit-check.out" converted
run 0 nofit-json "$REQUANT" -n --json --from f16 --to q4_k "$tiny"
py_check "$tmp/nofit-json.out" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
k = d["kept"]
ok = len(k) == 15 and d["tensors"] == [] and k[1]["name"] == "blk.0.attn_q.weight" and \
     k[1]["type"] == "F16" and k[1]["wanted"] == "Q4_K" and k[1]["index"] == 2 and \
     k[1]["reason"] == "row length 64 is not a multiple of 256, the block size of Q4_K"
if not ok: print("  kept: %r" % k[:2], file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
run 2 strict "$REQUANT" --strict --from f16 --to q4_k "$tiny" "$tmp/strict.gguf"
check "--strict: no output" absent "$tmp/strict.gguf"
check "--strict: error names the tensor" has "$tmp/strict.err" \
    "gguf-requant: $tiny: tensor 2 'blk.0.attn_q.weight': row length 64 is not a multiple of 256, the block size of Q4_K (--strict)"
check "--strict: no warning wording" lacks "$tmp/strict.err" "warning"
run 0 strict-ok2 "$REQUANT" --strict --type 'blk.0.*=q8_0' --exclude '*_norm*' "$small" "$tmp/strict-ok2.gguf"
run 0 strict-ok2-check "$CHECKER" "$small" "$tmp/strict-ok2.gguf"
check "--strict with fitting rows: Q4_K -> Q8_0" has "$tmp/strict-ok2-check.out" "converted blk.0.attn_q.weight Q4_K Q8_0"
check "--strict with fitting rows: 7 converted" [ "$(count "$tmp/strict-ok2-check.out" converted)" -eq 7 ]

# --- general.file_type -------------------------------------------------------
run 0 q80 "$REQUANT" --from f16 --to q8_0 "$tiny" "$tmp/q80.gguf"
run 0 q80-check "$CHECKER" "$tiny" "$tmp/q80.gguf"
check "f16 -> q8_0: 15 converted" [ "$(count "$tmp/q80-check.out" "F16 Q8_0")" -eq 15 ]
check "f16 -> q8_0: file type Q8_0 (7)" [ "$("$DUMP" -k general.file_type "$tmp/q80.gguf")" = 7 ]
check "f16 -> q8_0: input unchanged" [ "$(sum "$tiny")" = "$tiny_sum" ]
for ft in "q4_k_m 15" "MOSTLY_Q8_0 7" "18 18" "all_f32 0"; do
    set -- $ft
    run 0 "ft-$1" "$REQUANT" --file-type "$1" --from f16 --to q8_0 "$tiny" "$tmp/ft.gguf"
    check "--file-type $1" [ "$("$DUMP" -k general.file_type "$tmp/ft.gguf")" = "$2" ]
done
run 0 ft-only "$REQUANT" --file-type=Q4_K_S "$tiny" "$tmp/ft-only.gguf"
run 0 ft-only-check "$CHECKER" "$tiny" "$tmp/ft-only.gguf"
check "--file-type alone: nothing converted" lacks "$tmp/ft-only-check.out" converted
check "--file-type alone: set" [ "$("$DUMP" -k general.file_type "$tmp/ft-only.gguf")" = 14 ]
run 2 ft-bad "$REQUANT" --file-type q9_z --from f16 --to q8_0 "$tiny" "$tmp/ft-bad.gguf"
check "--file-type unknown: message" has "$tmp/ft-bad.err" "gguf-requant: --file-type: unknown file type 'q9_z'"

# Requantizing an output replaces the provenance keys in their places.
run 0 again "$REQUANT" --from q4_k --to q8_0 "$out" "$tmp/again.gguf"
run 0 again-check "$CHECKER" "$out" "$tmp/again.gguf"
"$DUMP" --json "$tmp/again.gguf" >"$tmp/again.json" || hard_error "gguf-dump again"
py_check "$tmp/out.json" "$tmp/again.json" <<'EOF'
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
ka = [e["key"] for e in a["kv"]]; kb = [e["key"] for e in b["kv"]]
vb = {e["key"]: e["value"] for e in b["kv"]}
# Q6_K-free, Q4_K everywhere made Q8_0: base Q8_0 (7)
ok = ka == kb and vb["gguf_tools.requant.rules"] == ["--from=q4_k", "--to=q8_0"] and vb["general.file_type"] == 7
if not ok: print("  keys %r\n  rules %r ft %r" % (kb, vb["gguf_tools.requant.rules"], vb["general.file_type"]), file=sys.stderr)
sys.exit(0 if ok else 1)
EOF

# --- alignment, no general.file_type in the input, version, byte order ------
"$CHECKER" --make 64 "$tmp/a64.gguf" || hard_error "requant-check --make"
run 0 a64 "$REQUANT" --from f16 --to q8_0 "$tmp/a64.gguf" "$tmp/a64-out.gguf"
run 0 a64-check "$CHECKER" "$tmp/a64.gguf" "$tmp/a64-out.gguf"
check "alignment 64: a.weight converted" has "$tmp/a64-check.out" "converted a.weight F16 Q8_0"
"$DUMP" --json "$tmp/a64-out.gguf" >"$tmp/a64.json" || hard_error "gguf-dump a64"
py_check "$tmp/a64.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
keys = [e["key"] for e in d["kv"]]
want = ["general.architecture", "general.alignment", "test.value", "general.file_type",
        "gguf_tools.requant.tool", "gguf_tools.requant.rules"]
ok = d["alignment"] == 64 and keys == want and d["kv"][3]["value"] == 7 and \
     all(t["offset"] % 64 == 0 for t in d["tensors"]) and d["file_size"] % 64 == 0
if not ok: print("  alignment %r keys %r" % (d["alignment"], keys), file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
synth "$tmp/v2.gguf" --size tiny --type f32 --gguf-version 2 --seed 4
run 0 v2 "$REQUANT" --from f32 --to f16 "$tmp/v2.gguf" "$tmp/v2-out.gguf"
run 0 v2-check "$CHECKER" "$tmp/v2.gguf" "$tmp/v2-out.gguf"
check "GGUF v2 kept" [ "$("$DUMP" --json "$tmp/v2-out.gguf" | sed -n 's/^  "version": \([0-9]*\),$/\1/p')" = 2 ]
check "f32 -> f16: 2-D tensors converted" [ "$(count "$tmp/v2-check.out" "F32 F16")" -eq 15 ]
synth "$tmp/be.gguf" --size tiny --type f16 --big-endian
run 2 be "$REQUANT" --from f16 --to q8_0 "$tmp/be.gguf" "$tmp/be-out.gguf"
check "big-endian conversion refused" has "$tmp/be.err" "converting tensors of a big-endian file is not supported"
check "big-endian: no output" absent "$tmp/be-out.gguf"
run 0 be-copy "$REQUANT" --file-type 1 "$tmp/be.gguf" "$tmp/be-copy.gguf"
run 0 be-copy-check "$CHECKER" "$tmp/be.gguf" "$tmp/be-copy.gguf"

# --- OUT resolving to IN ----------------------------------------------------
cp "$tiny" "$tmp/self.gguf"
self_sum=$(sum "$tmp/self.gguf")
ln -s self.gguf "$tmp/link.gguf"
ln "$tmp/self.gguf" "$tmp/hard.gguf"
run 2 self "$REQUANT" --from f16 --to q8_0 "$tmp/self.gguf" "$tmp/self.gguf"
check "OUT == IN refused" has "$tmp/self.err" "gguf-requant: $tmp/self.gguf: is the input file"
run 2 self-dot "$REQUANT" --from f16 --to q8_0 "$tmp/self.gguf" "$tmp/./self.gguf"
run 2 self-link "$REQUANT" --from f16 --to q8_0 "$tmp/self.gguf" "$tmp/link.gguf"
run 2 self-hard "$REQUANT" --from f16 --to q8_0 "$tmp/hard.gguf" "$tmp/self.gguf"
run 2 self-stdin "$REQUANT" --from f16 --to q8_0 - "$tmp/self.gguf" <"$tmp/self.gguf"
check "OUT == IN: input unchanged" [ "$(sum "$tmp/self.gguf")" = "$self_sum" ]
check "OUT == IN: link still a link" [ -L "$tmp/link.gguf" ]
check "OUT == IN: no temporary files" [ -z "$(ls -A "$tmp" | grep '^\.')" ]

# --- usage ----------------------------------------------------------------------
run 0 help "$REQUANT" --help
check "--help: usage on stdout" has "$tmp/help.out" "Usage: gguf-requant [OPTION]... IN OUT"
check "--help: nothing on stderr" empty "$tmp/help.err"
run 0 version "$REQUANT" -V
check "-V: version" has "$tmp/version.out" "gguf-requant (gguf-tools) $version"
run 2 noargs "$REQUANT"
check "no arguments: usage error" has "$tmp/noargs.err" "Try 'gguf-requant --help' for more information."
run 2 noout "$REQUANT" --from f16 --to q8_0 "$tiny"
check "no OUT: message" has "$tmp/noout.err" "gguf-requant: missing IN or OUT"
run 2 extra "$REQUANT" --from f16 --to q8_0 "$tiny" "$tmp/x.gguf" "$tmp/y.gguf"
run 2 fromonly "$REQUANT" --from f16 "$tiny" "$tmp/x.gguf"
check "--from without --to" has "$tmp/fromonly.err" "gguf-requant: --from needs --to"
run 2 nothing "$REQUANT" --exclude 'x' "$tiny" "$tmp/x.gguf"
check "no rule: nothing to do" has "$tmp/nothing.err" "nothing to do"
run 2 badtype "$REQUANT" --from f16 --to q9_k "$tiny" "$tmp/x.gguf"
check "unknown type" has "$tmp/badtype.err" "gguf-requant: --to: unknown tensor type 'q9_k'"
run 2 noquant "$REQUANT" --type '*=iq2_xxs' "$tiny" "$tmp/x.gguf"
check "a type that cannot be made" has "$tmp/noquant.err" "gguf-requant: --type: cannot convert to IQ2_XXS"
run 2 badrule "$REQUANT" --type 'blk.*' "$tiny" "$tmp/x.gguf"
check "--type without =TYPE" has "$tmp/badrule.err" "--type: expected GLOB=TYPE, got 'blk.*'"
run 2 badthreads "$REQUANT" -t x --from f16 --to q8_0 "$tiny" "$tmp/x.gguf"
run 2 badopt "$REQUANT" --frobnicate "$tiny" "$tmp/x.gguf"
check "unknown option" has "$tmp/badopt.err" "gguf-requant: unrecognized option '--frobnicate'"
run 2 report-stdout "$REQUANT" --report --from f16 --to q8_0 "$tiny" -
check "--report with OUT -: refused" has "$tmp/report-stdout.err" "--report and --json print to standard output"
run 2 missing "$REQUANT" --from f16 --to q8_0 "$tmp/no-such.gguf" "$tmp/x.gguf"
check "missing input: message" has "$tmp/missing.err" "gguf-requant: $tmp/no-such.gguf:"
check "usage errors: no output" absent "$tmp/x.gguf"
check "tiny input unchanged at the end" [ "$(sum "$tiny")" = "$tiny_sum" ]
check "small input unchanged at the end" [ "$(sum "$small")" = "$small_sum" ]

finish
