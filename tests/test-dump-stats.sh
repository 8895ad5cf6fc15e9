#!/bin/sh
# test-dump-stats.sh -- gguf-dump --stats: min, max, mean and RMS per
# tensor, checked against a computation in Python on the file's floats
# (tests/gguflite.py, standard library only); NaN and infinities; the text
# table; streams, gzip and thread counts give the same numbers; tensors
# that cannot be dequantized.

. "${top_srcdir:-.}/tests/test-dump-common.sh"
LITE=$top_srcdir/tests/gguflite.py
need_tools "$SYNTH"
need_python

"$SYNTH" --size small --type f32 --seed 4 -o "$tmp/f32.gguf" &&
    "$SYNTH" --size small --type f16 --seed 4 -o "$tmp/f16.gguf" &&
    "$SYNTH" --size small --type bf16 --seed 4 --big-endian -o "$tmp/bf16be.gguf" &&
    "$SYNTH" --size small --type q4_k_m --seed 4 -o "$tmp/q.gguf" ||
    hard_error "gguf-synth failed"
python3 "$LITE" fixture "$tmp/fx.gguf" && python3 "$LITE" fixture "$tmp/fxbe.gguf" big ||
    hard_error "gguflite.py fixture failed"

# Every F32, F16 and BF16 tensor: the numbers Python computes.
for m in f32 f16 bf16be; do
    run 0 "$m" "$DUMP" --stats --json "$tmp/$m.gguf"
    check "$m: stats differ from Python's" python3 "$LITE" stats "$tmp/$m.gguf" "$tmp/$m.out"
done

# NaN and infinities are counted and left out; a tensor of NaN only has no
# min/max/mean/RMS; types that cannot be dequantized are reported (exit
# 2), listed with nulls and an error, and do not stop the others.
run 2 fx "$DUMP" --stats --json "$tmp/fx.gguf"
check "fixture: stats differ from Python's" python3 "$LITE" stats "$tmp/fx.gguf" "$tmp/fx.out"
check "fixture: I32 reported" has "$tmp/fx.err" "gguf-dump: $tmp/fx.gguf: tensor 'ints': cannot dequantize type I32"
check "fixture: IQ2_XXS reported" has "$tmp/fx.err" "tensor 'iq': cannot dequantize type IQ2_XXS"
check "fixture: JSON" python3 -c '
import json, math, sys
s = {t["name"]: t for t in json.load(open(sys.argv[1]))["stats"]}
m = s["mixed"]
assert (m["min"], m["max"], m["nan"], m["inf"]) == (-2.5, 3.25, 1, 2), m
assert abs(m["mean"] - 0.35) < 1e-15 and abs(m["rms"] - math.sqrt(3.5625)) < 1e-15, m
a = s["all_nan"]
assert (a["min"], a["max"], a["mean"], a["rms"], a["nan"], a["inf"]) == (None,) * 4 + (4, 0), a
q = s["q8"]
assert (q["min"], q["max"], q["mean"], q["nan"]) == (-8, 7.5, -0.25, 0), q
for n in ("ints", "iq"):
    assert s[n]["min"] is None and s[n]["nan"] is None and "cannot dequantize" in s[n]["error"]
assert [t["index"] for t in json.load(open(sys.argv[1]))["stats"]] == list(range(7))
' "$tmp/fx.out"
# The other byte order: the same numbers for plain types; Q8_0 refused.
run 2 fxbe "$DUMP" --stats --json "$tmp/fxbe.gguf"
check "big-endian fixture: stats differ from Python's" python3 "$LITE" stats "$tmp/fxbe.gguf" "$tmp/fxbe.out"
check "big-endian fixture: Q8_0 refused" has "$tmp/fxbe.err" "tensor 'q8': cannot dequantize Q8_0 data in a file of the other byte order"

# The text table.
run 0 text "$DUMP" --stats "$tmp/f32.gguf"
check "text: heading" has "$tmp/text.out" "statistics: 26 tensors"
check "text: columns" has "$tmp/text.out" "#  name                      type  elements           min           max          mean           rms  nan  inf"
check "text: a row" python3 -c '
import json, sys
row = [l.split() for l in open(sys.argv[1]) if l.split()[1:2] == ["blk.0.attn_q.weight"]][0]
s = [t for t in json.load(open(sys.argv[2]))["stats"] if t["name"] == "blk.0.attn_q.weight"][0]
want = ["2", "blk.0.attn_q.weight", "F32", "65536"] + ["%.6g" % s[k] for k in ("min", "max", "mean", "rms")] + ["0", "0"]
assert row == want, (row, want)
' "$tmp/text.out" "$tmp/f32.out"
run 2 fxtext "$DUMP" --stats "$tmp/fx.gguf"
check "text: a row without numbers" has "$tmp/fxtext.out" "  5  ints     I32             4             -             -             -             -    -    -"
check "text: counts" has "$tmp/fxtext.out" "  0  mixed    F32             8          -2.5          3.25          0.35       1.88746    1    2"

# --tensors selects; the indices are the file's.
run 0 glob "$DUMP" --stats --tensors 'blk.1.*norm*' "$tmp/q.gguf"
check "--tensors: heading" has "$tmp/glob.out" 'statistics: 2 of 26 tensors match "blk.1.*norm*"'
check "--tensors: rows" [ "$(grep -c 'blk\.1\..*_norm\.weight  *F32' "$tmp/glob.out")" -eq 2 ]

# The same numbers from a mapped file, a pipe, gzip, one thread or two.
run 0 mapped "$DUMP" --stats --json "$tmp/q.gguf"
sed 's|"file": "[^"]*"|"file": X|' "$tmp/mapped.out" >"$tmp/mapped.x"
cat "$tmp/q.gguf" | "$DUMP" --stats --json - | sed 's|"file": "[^"]*"|"file": X|' >"$tmp/pipe.x"
check "pipe: same stats" same "$tmp/mapped.x" "$tmp/pipe.x"
if command -v gzip >/dev/null 2>&1; then
    gzip -c "$tmp/q.gguf" >"$tmp/q.gguf.gz"
    "$DUMP" --stats --json "$tmp/q.gguf.gz" | sed 's|"file": "[^"]*"|"file": X|' >"$tmp/gz.x"
    check "gzip: same stats" same "$tmp/mapped.x" "$tmp/gz.x"
fi
OMP_NUM_THREADS=1 "$DUMP" --stats --json "$tmp/q.gguf" | sed 's|"file": "[^"]*"|"file": X|' >"$tmp/t1.x"
OMP_NUM_THREADS=2 "$DUMP" --stats --json "$tmp/q.gguf" | sed 's|"file": "[^"]*"|"file": X|' >"$tmp/t2.x"
check "one thread: same stats" same "$tmp/mapped.x" "$tmp/t1.x"
check "two threads: same stats" same "$tmp/mapped.x" "$tmp/t2.x"

# Quantized tensors: min and max over all values agree with --values.
check "Q4_K_M: min and max agree with --values" python3 -c '
import json, subprocess, sys
dump, path = sys.argv[1], sys.argv[2]
stats = json.load(open(sys.argv[3]))["stats"]
for t in stats:
    if t["type"] == "F32":
        continue
    out = subprocess.run([dump, "--values", "%s:%d" % (t["name"], t["elements"]), path],
                         capture_output=True, text=True, check=True).stdout.split()
    v = [float(x) for x in out]
    assert len(v) == t["elements"], t["name"]
    assert (min(v), max(v)) == (t["min"], t["max"]), (t["name"], min(v), max(v), t)
    assert abs(sum(v) / len(v) - t["mean"]) <= 1e-9 * t["rms"], t["name"]
' "$DUMP" "$tmp/q.gguf" "$tmp/mapped.out"

# Several files: text separated by a blank line, JSON in an array.
run 0 two "$DUMP" --stats --json "$tmp/f32.gguf" "$tmp/q.gguf"
check "two files: JSON array" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert [len(x["stats"]) for x in d] == [26, 26]
' "$tmp/two.out"

finish
