#!/bin/sh
# test-dump-values.sh -- gguf-dump --values: the first N dequantized values
# of a tensor, checked against gguf_dequantize_rows() on the whole tensor
# (tests/synth-check) and, for F32 tensors, against the file's floats read
# by a reader of our own (tests/gguflite.py); the same output from streams,
# gzip input and a big-endian file; JSON; errors.

. "${top_srcdir:-.}/tests/test-dump-common.sh"
CHECK=$top_builddir/tests/synth-check
LITE=$top_srcdir/tests/gguflite.py
need_tools "$SYNTH" "$CHECK"
need_python

# Models with every type gguf-synth makes: small q4_k_m (Q4_K, Q6_K), tiny
# q4_k_m (Q5_0, Q8_0), small in single types, f16, bf16 and f32.
gen() {
    "$SYNTH" "$@" -o "$tmp/m.gguf" 2>"$tmp/gen.err" || hard_error "gguf-synth $*: $(cat "$tmp/gen.err")"
}

# values FILE TENSOR N: gguf-dump --values TENSOR:N FILE agrees with
# synth-check, and prints min(N, elements) lines.
values() {
    run 0 values "$DUMP" --values "$2:$3" "$1"
    check "$1 $2:$3: values differ from gguf_dequantize_rows" \
        "$CHECK" values "$1" "$2" "$3" "$tmp/values.out"
}

n=0
for spec in "small q4_k_m" "tiny q4_k_m" "small q8_0" "small q4_0" "small q5_0" "small q5_k" \
    "small f16" "small bf16" "small f32"; do
    set -- $spec
    gen --size "$1" --type "$2" --seed 3
    n=$((n + 1))
    cp "$tmp/m.gguf" "$tmp/m$n.gguf"
    f=$tmp/m$n.gguf
    # 1 value, part of a block, several blocks, past the first row, and
    # more than the tensor has (all 32768 values of attn_k: 256 x 128 or
    # 64 x 32 on tiny).
    for t in token_embd.weight blk.1.attn_v.weight blk.0.ffn_down.weight; do
        for k in 1 17 300 1000; do values "$f" "$t" "$k"; done
    done
    values "$f" blk.0.attn_k.weight 40000
    values "$f" blk.0.attn_q.bias 5
    values "$f" output_norm.weight 1000
done
f_q=$tmp/m1.gguf     # small q4_k_m
f_tiny=$tmp/m2.gguf  # tiny q4_k_m
f_32=$tmp/m9.gguf    # small f32

# N defaults to 16; :0 prints nothing.
run 0 default "$DUMP" --values token_embd.weight "$f_q"
check "default count is 16" [ "$(wc -l <"$tmp/default.out")" -eq 16 ]
run 0 zero "$DUMP" --values token_embd.weight:0 "$f_q"
check ":0 prints nothing" empty "$tmp/zero.out"

# F32 values are the file's floats exactly, as another reader sees them.
for t in token_embd.weight blk.0.attn_norm.weight blk.1.ffn_down.weight; do
    run 0 f32 "$DUMP" --values "$t:5000" "$f_32"
    check "F32 $t: not the file's floats" python3 "$LITE" values "$f_32" "$t" 5000 "$tmp/f32.out"
done

# Several requests print in the order given; from a pipe, from gzip and
# from standard input the output is the same (the stream is read in offset
# order whatever the order of the options, the same tensor twice).
set -- --values output_norm.weight:7 --values token_embd.weight:300 \
    --values blk.1.ffn_down.weight:20 --values token_embd.weight:3
run 0 multi "$DUMP" "$@" "$f_q"
check "several requests: line count" [ "$(wc -l <"$tmp/multi.out")" -eq 330 ]
"$DUMP" --values output_norm.weight:7 "$f_q" >"$tmp/one.out"
check "several requests: the first comes first" [ "$(head -n 7 "$tmp/multi.out")" = "$(cat "$tmp/one.out")" ]
cat "$f_q" | "$DUMP" "$@" - >"$tmp/pipe.out" 2>"$tmp/pipe.err"
check "pipe: exit status" [ $? -eq 0 ]
check "pipe: same output as the mapped file" same "$tmp/multi.out" "$tmp/pipe.out"
if command -v gzip >/dev/null 2>&1; then
    gzip -c "$f_q" >"$tmp/q.gguf.gz"
    run 0 gz "$DUMP" "$@" "$tmp/q.gguf.gz"
    check "gzip: same output as the mapped file" same "$tmp/multi.out" "$tmp/gz.out"
fi
run 0 stdin "$DUMP" "$@" <"$f_q"
check "stdin: same output" same "$tmp/multi.out" "$tmp/stdin.out"

# A truncated stream is still an error (the rest of the input is read).
head -c 200000 "$f_q" >"$tmp/cut.gguf"
cat "$tmp/cut.gguf" | "$DUMP" --values token_embd.weight:3 - >"$tmp/cut.out" 2>"$tmp/cut.err"
check "truncated stream: exit 2" [ $? -eq 2 ]
check "truncated stream: message" has "$tmp/cut.err" "gguf-dump: "

# A big-endian F32 file gives the values of the little-endian one.
"$SYNTH" --size small --type f32 --seed 3 --big-endian -o "$tmp/be.gguf" || hard_error "big-endian"
for t in token_embd.weight blk.0.attn_norm.weight; do
    run 0 le "$DUMP" --values "$t:600" "$f_32"
    run 0 be "$DUMP" --values "$t:600" "$tmp/be.gguf"
    check "big-endian $t: other values" same "$tmp/le.out" "$tmp/be.out"
done

# JSON: one object per file, the values as numbers equal to the text ones.
run 0 json "$DUMP" --json --values blk.0.attn_q.weight:50 --values output_norm.weight:2 "$f_q"
run 0 text "$DUMP" --values blk.0.attn_q.weight:50 --values output_norm.weight:2 "$f_q"
check "JSON values" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
text = [float(l) for l in open(sys.argv[2])]
v = d["values"]
assert d["file"] == sys.argv[3], d["file"]
assert [x["tensor"] for x in v] == ["blk.0.attn_q.weight", "output_norm.weight"]
assert v[0]["type"] == "Q4_K" and v[0]["dims"] == [256, 256] and v[0]["elements"] == 65536
assert v[0]["count"] == 50 and v[1]["count"] == 2 and v[1]["type"] == "F32"
assert v[0]["values"] + v[1]["values"] == text
' "$tmp/json.out" "$tmp/text.out" "$f_q"
run 0 json2 "$DUMP" --json --values output_norm.weight:2 "$f_q" "$f_tiny"
check "JSON, two files: an array of two objects" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d) == 2 and all(len(x["values"][0]["values"]) == 2 for x in d)
' "$tmp/json2.out"

# Errors: an absent tensor, a type that cannot be dequantized, quantized
# data of the other byte order; the other requests are still answered.
run 2 absent "$DUMP" --values no.such.tensor:3 --values output_norm.weight:2 "$f_q"
check "absent: message" has "$tmp/absent.err" "gguf-dump: $f_q: tensor 'no.such.tensor' not found"
check "absent: the other request" [ "$(wc -l <"$tmp/absent.out")" -eq 2 ]
python3 "$LITE" fixture "$tmp/fx.gguf" && python3 "$LITE" fixture "$tmp/fxbe.gguf" big ||
    hard_error "gguflite.py fixture failed"
run 2 ints "$DUMP" --values ints "$tmp/fx.gguf"
check "I32: message" has "$tmp/ints.err" "gguf-dump: $tmp/fx.gguf: tensor 'ints': cannot dequantize type I32"
check "I32: no output" empty "$tmp/ints.out"
run 2 iq "$DUMP" --values iq:4 "$tmp/fx.gguf"
check "IQ2_XXS: message" has "$tmp/iq.err" "tensor 'iq': cannot dequantize type IQ2_XXS"
run 0 q8 "$DUMP" --values q8:40 "$tmp/fx.gguf"
check "Q8_0 fixture values" [ "$(tr '\n' ' ' <"$tmp/q8.out")" = \
    "-8.0 -7.5 -7.0 -6.5 -6.0 -5.5 -5.0 -4.5 -4.0 -3.5 -3.0 -2.5 -2.0 -1.5 -1.0 -0.5 0.0 0.5 1.0 1.5 2.0 2.5 3.0 3.5 4.0 4.5 5.0 5.5 6.0 6.5 7.0 7.5 " ]
run 2 beq8 "$DUMP" --values q8:4 "$tmp/fxbe.gguf"
check "big-endian Q8_0: message" has "$tmp/beq8.err" "tensor 'q8': cannot dequantize Q8_0 data in a file of the other byte order"
run 0 mixed "$DUMP" --values mixed --values half --values brain "$tmp/fx.gguf"
run 0 mixedbe "$DUMP" --values mixed --values half --values brain "$tmp/fxbe.gguf"
check "non-finite values" [ "$(tr '\n' ' ' <"$tmp/mixed.out")" = \
    "1.0 -2.5 nan inf -inf 3.25 0.0 -0.0 65504.0 -inf nan 5.9604645e-08 -0.5 1.5 0.0 -65504.0 1.0 -3.0 inf 1.2676506e+30 -7.888609e-31 0.25 nan 7.0 " ]
check "non-finite values, big-endian" same "$tmp/mixed.out" "$tmp/mixedbe.out"
run 0 nanjson "$DUMP" --json --values mixed "$tmp/fx.gguf"
check "JSON: NaN and infinities as strings" has "$tmp/nanjson.out" '[1.0, -2.5, "nan", "inf", "-inf", 3.25, 0.0, -0.0]'

# Usage errors.
run 2 withk "$DUMP" -k general.name --values output_norm.weight "$f_q"
check "-k with --values" has "$tmp/withk.err" "-k cannot be combined with --values or --stats"
run 2 withstats "$DUMP" --stats --values output_norm.weight "$f_q"
check "--values with --stats" has "$tmp/withstats.err" "--values and --stats cannot be combined"
run 2 huge "$DUMP" --values output_norm.weight:99999999999999999999999 "$f_q"
check "count out of range" has "$tmp/huge.err" "invalid --values argument"
run 0 help "$DUMP" --help
check "--help mentions --values" has "$tmp/help.out" "--values=TENSOR[:N]"
check "--help mentions --stats" has "$tmp/help.out" "--stats"

finish
