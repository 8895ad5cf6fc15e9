#!/bin/sh
# test-synth-quant.sh -- gguf-synth's quantized outputs: the per-tensor type
# plan of llama-quantize's mixtures (stated here by hand from the rules in
# llama.cpp's src/llama-quant.cpp), for qwen2 and qwen3 models, tied and
# untied; file type keys, and tensor data equal to quantizing the F32
# model with libgguf (checked by tests/synth-check).

: "${top_builddir:=.}"
SYNTH=$top_builddir/tests/gguf-synth
LIST=$top_builddir/tests/test-write
CHECK=$top_builddir/tests/synth-check
. "${top_srcdir:-.}/tests/tool.sh"
DUMP=$(tool gguf-dump)
for p in "$SYNTH" "$LIST" "$CHECK" "$DUMP"; do
    [ -x "$p" ] || { echo "ERROR: $p not built" >&2; exit 99; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-synth-quant.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 99' HUP INT TERM

checks=0
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# same_text WANT GOT WHAT: the two files are equal.
same_text() {
    checks=$((checks + 1))
    if ! cmp -s "$1" "$2"; then
        fail "$3: $(diff "$1" "$2" | head -20)"
    fi
}

# The architecture of the models planned and expected: qwen2 or qwen3.
arch=qwen2

# plan SIZE TYPE [OPTION...]: "name type" per tensor from --plan of an
# $arch model into $tmp/plan.
plan() {
    _size=$1 _type=$2
    shift 2
    "$SYNTH" --arch "$arch" --size "$_size" --type "$_type" "$@" --plan >"$tmp/plan.full" 2>"$tmp/plan.err" ||
        fail "--plan --arch $arch --size $_size --type $_type $*: $(cat "$tmp/plan.err")"
    grep -v '^file size ' "$tmp/plan.full" | awk '{print $1, $2}' >"$tmp/plan"
}

# in_list N LIST: N is one of the words of LIST.
in_list() {
    case " $2 " in *" $1 "*) return 0 ;; esac
    return 1
}

# expect N_LAYER EMBD Q K V O GATE UP DOWN V_MORE DOWN_MORE MORE_LAYERS
# [V_FIRST4 DOWN_FIRST]: writes the expected "name type" list of an $arch
# model to $tmp/want: token_embd EMBD; per layer attn_q Q, attn_k K, attn_v
# V (V_MORE on MORE_LAYERS), attn_output O, ffn_gate GATE, ffn_up UP,
# ffn_down DOWN (DOWN_MORE on MORE_LAYERS); norms and (qwen2) biases F32,
# for qwen3 the Q and K norms in the biases' place.
# Q4_K_S-style: attn_v V_FIRST4 on layers 0-3 and ffn_down DOWN_FIRST on
# layers below N_LAYER/8, when given.
expect() {
    n=$1 embd=$2 q=$3 k=$4 v=$5 o=$6 gate=$7 up=$8 down=$9
    shift 9
    v_more=$1 down_more=$2 more=$3 v_first4=${4:-} down_first=${5:-}
    {
        echo "token_embd.weight $embd"
        l=0
        while [ "$l" -lt "$n" ]; do
            tv=$v td=$down
            if in_list "$l" "$more"; then
                tv=$v_more td=$down_more
            fi
            [ -n "$v_first4" ] && [ "$l" -lt 4 ] && tv=$v_first4
            [ -n "$down_first" ] && [ "$l" -lt $((n / 8)) ] && td=$down_first
            echo "blk.$l.attn_norm.weight F32"
            echo "blk.$l.attn_q.weight $q"
            if [ "$arch" = qwen3 ]; then
                echo "blk.$l.attn_q_norm.weight F32"
                echo "blk.$l.attn_k.weight $k"
                echo "blk.$l.attn_k_norm.weight F32"
                echo "blk.$l.attn_v.weight $tv"
            else
                echo "blk.$l.attn_q.bias F32"
                echo "blk.$l.attn_k.weight $k"
                echo "blk.$l.attn_k.bias F32"
                echo "blk.$l.attn_v.weight $tv"
                echo "blk.$l.attn_v.bias F32"
            fi
            echo "blk.$l.attn_output.weight $o"
            echo "blk.$l.ffn_norm.weight F32"
            echo "blk.$l.ffn_gate.weight $gate"
            echo "blk.$l.ffn_up.weight $up"
            echo "blk.$l.ffn_down.weight $td"
            l=$((l + 1))
        done
        echo "output_norm.weight F32"
    } >"$tmp/want"
}

# The rules, for a qwen2 model with tied embeddings (no output.weight),
# without importance matrix or overrides (llama_tensor_get_type_impl and
# tensor_type_fallback in llama-quant.cpp):
#  - token_embd is treated as the output matrix: Q8_0 when its rows are not
#    a multiple of 256, else Q6_K;
#  - Q4_K_M and Q5_K_M: attn_v and ffn_down are Q6_K on the layers where
#    use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2;
#    Q4_K_S: attn_v Q5_K on layers 0-3, ffn_down Q5_K on layers < n/8;
#  - the rest has the base type (Q4_K, Q5_K);
#  - a type whose blocks do not divide the row length falls back:
#    Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0.
# The layers of use_more_bits:
#  24 layers (0.5b): n/8 = 3, 7n/8 = 21: 0 1 2, 21 22 23, and 5 8 ... 20
more24="0 1 2 5 8 11 14 17 20 21 22 23"
#  28 layers (1.5b): n/8 = 3, 7n/8 = 24: 0 1 2, 24 25 26 27, and 5 8 ... 23
more28="0 1 2 5 8 11 14 17 20 23 24 25 26 27"
#  2 layers (tiny, small): n/8 = 0, 7n/8 = 1: layer 1 only
more2="1"

# 1.5b, Q4_K_M: every row length (1536, 8960) is a multiple of 256.
expect 28 Q6_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q6_K Q6_K "$more28"
plan 1.5b q4_k_m
same_text "$tmp/want" "$tmp/plan" "1.5b q4_k_m plan"
checks=$((checks + 1))
[ "$(grep -c ' Q6_K$' "$tmp/plan")" -eq 29 ] && [ "$(grep -c ' Q4_K$' "$tmp/plan")" -eq 168 ] &&
    [ "$(grep -c ' F32$' "$tmp/plan")" -eq 141 ] || fail "1.5b q4_k_m: type counts"

# 0.5b, Q4_K_M: width 896 is not a multiple of 256 (896 = 3.5 * 256), the
# FFN width 4864 = 19 * 256 is: only ffn_down (rows of 4864) keeps K-quants.
# token_embd Q8_0; attn_v Q6_K -> Q8_0 on the more-bits layers, Q4_K ->
# Q5_0 elsewhere; attn_q/k/output and ffn_gate/up Q4_K -> Q5_0.
expect 24 Q8_0 Q5_0 Q5_0 Q5_0 Q5_0 Q5_0 Q5_0 Q4_K Q8_0 Q6_K "$more24"
plan 0.5b q4_k_m
same_text "$tmp/want" "$tmp/plan" "0.5b q4_k_m plan"

# The other mixtures on the same shapes.
expect 28 Q6_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K "" Q5_K Q5_K
plan 1.5b q4_k_s
same_text "$tmp/want" "$tmp/plan" "1.5b q4_k_s plan"
expect 28 Q6_K Q5_K Q5_K Q5_K Q5_K Q5_K Q5_K Q5_K Q6_K Q6_K "$more28"
plan 1.5b q5_k_m
same_text "$tmp/want" "$tmp/plan" "1.5b q5_k_m plan"
expect 28 Q6_K Q5_K Q5_K Q5_K Q5_K Q5_K Q5_K Q5_K Q5_K Q5_K ""
plan 1.5b q5_k_s
same_text "$tmp/want" "$tmp/plan" "1.5b q5_k_s plan"
# 0.5b, Q4_K_S: attn_v of layers 0-3 is Q5_K -> Q5_1 (rows of 896).
expect 24 Q8_0 Q5_0 Q5_0 Q5_0 Q5_0 Q5_0 Q5_0 Q4_K Q5_0 Q4_K "" Q5_1 Q5_K
plan 0.5b q4_k_s
same_text "$tmp/want" "$tmp/plan" "0.5b q4_k_s plan"

# tiny (width 64, FFN 128: nothing is a multiple of 256) and small (256,
# 512: everything is).
expect 2 Q8_0 Q5_0 Q5_0 Q5_0 Q5_0 Q5_0 Q5_0 Q5_0 Q8_0 Q8_0 "$more2"
plan tiny q4_k_m
same_text "$tmp/want" "$tmp/plan" "tiny q4_k_m plan"
expect 2 Q6_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q6_K Q6_K "$more2"
plan small q4_k_m
same_text "$tmp/want" "$tmp/plan" "small q4_k_m plan"

# A single type applies to every 2-D weight, with the same fallbacks.
expect 24 Q5_0 Q5_0 Q5_0 Q5_0 Q5_0 Q5_0 Q5_0 Q4_K Q5_0 Q4_K ""
plan 0.5b q4_k
same_text "$tmp/want" "$tmp/plan" "0.5b q4_k plan"
expect 24 Q8_0 Q8_0 Q8_0 Q8_0 Q8_0 Q8_0 Q8_0 Q6_K Q8_0 Q6_K ""
plan 0.5b q6_k
same_text "$tmp/want" "$tmp/plan" "0.5b q6_k plan"
expect 28 Q8_0 Q8_0 Q8_0 Q8_0 Q8_0 Q8_0 Q8_0 Q8_0 Q8_0 Q8_0 ""
plan 1.5b q8_0
same_text "$tmp/want" "$tmp/plan" "1.5b q8_0 plan"

# qwen3 (the same rules; rows are the input widths, so attn_output's are
# the Q width): 0.6b (width 1024, Q 2048, FFN 3072: all multiples of 256)
# Q4_K_M as 1.5b's; tiny (64, Q 128, FFN 128) and small (256, Q 512, FFN
# 512) as qwen2's tiny and small.
arch=qwen3
expect 28 Q6_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q6_K Q6_K "$more28"
plan 0.6b q4_k_m
same_text "$tmp/want" "$tmp/plan" "qwen3 0.6b q4_k_m plan"
checks=$((checks + 1))
[ "$(grep -c ' Q6_K$' "$tmp/plan")" -eq 29 ] && [ "$(grep -c ' Q4_K$' "$tmp/plan")" -eq 168 ] &&
    [ "$(grep -c ' F32$' "$tmp/plan")" -eq 113 ] || fail "qwen3 0.6b q4_k_m: type counts"
expect 2 Q8_0 Q5_0 Q5_0 Q5_0 Q5_0 Q5_0 Q5_0 Q5_0 Q8_0 Q8_0 "$more2"
plan tiny q4_k_m
same_text "$tmp/want" "$tmp/plan" "qwen3 tiny q4_k_m plan"
expect 2 Q6_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q6_K Q6_K "$more2"
plan small q4_k_m
same_text "$tmp/want" "$tmp/plan" "qwen3 small q4_k_m plan"
# Untied: output.weight (last) is the output matrix, Q6_K (Q8_0 where its
# rows of 64 are not K-quant blocks); token_embd keeps the base type, with
# the fallback where its rows do not fit.
expect 28 Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q4_K Q6_K Q6_K "$more28"
echo "output.weight Q6_K" >>"$tmp/want"
plan 0.6b q4_k_m --untied
same_text "$tmp/want" "$tmp/plan" "qwen3 0.6b q4_k_m --untied plan"
expect 2 Q5_0 Q5_0 Q5_0 Q5_0 Q5_0 Q5_0 Q5_0 Q5_0 Q8_0 Q8_0 "$more2"
echo "output.weight Q8_0" >>"$tmp/want"
plan tiny q4_k_m --untied
same_text "$tmp/want" "$tmp/plan" "qwen3 tiny q4_k_m --untied plan"
# qwen2 untied: the same rule.
arch=qwen2
expect 28 Q5_K Q5_K Q5_K Q5_K Q5_K Q5_K Q5_K Q5_K Q6_K Q6_K "$more28"
echo "output.weight Q6_K" >>"$tmp/want"
plan 1.5b q5_k_m --untied
same_text "$tmp/want" "$tmp/plan" "qwen2 1.5b q5_k_m --untied plan"

# Written files: for tiny and small, each type and mixture.  The tensors
# and types are those of the plan, the file size is the plan's, the file
# type keys are llama.cpp's, and the data is the F32 model quantized.
"$SYNTH" --size tiny --type f32 -o "$tmp/tiny-f32.gguf" &&
    "$SYNTH" --size small --type f32 -o "$tmp/small-f32.gguf" || {
    echo "ERROR: gguf-synth --type f32 failed" >&2
    exit 99
}
# TYPE FILE_TYPE; the types beyond the six the quantization API promises
# (Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, Q6_K) are tested where libgguf makes them.
types="q8_0:7 q4_0:2 q5_0:8 q4_k:14 q5_k:16 q6_k:18 q4_k_m:15 q4_k_s:14"
for extra in q4_1:3 q5_1:9 q2_k:21 q3_k:11; do
    if "$SYNTH" --type "${extra%%:*}" --plan >/dev/null 2>&1; then
        types="$types $extra"
    else
        echo "note: libgguf cannot quantize ${extra%%:*}; not tested" >&2
    fi
done
if "$SYNTH" --type q5_1 --plan >/dev/null 2>&1; then
    types="$types q5_k_m:17 q5_k_s:16"     # they fall back to Q5_1 on tiny
fi
for size in tiny small; do
    for tf in $types; do
        t=${tf%%:*} ft=${tf#*:}
        f=$tmp/$size-$t.gguf
        if ! "$SYNTH" --size "$size" --type "$t" -o "$f" 2>"$tmp/err"; then
            checks=$((checks + 1))
            fail "gguf-synth --size $size --type $t: $(cat "$tmp/err")"
            continue
        fi
        plan "$size" "$t"
        "$LIST" --list "$f" | awk '$1 == "tensor" {print $2, $3}' >"$tmp/got"
        same_text "$tmp/plan" "$tmp/got" "$size $t: tensor types differ from --plan"
        checks=$((checks + 1))
        [ "$(sed -n 's/^file size //p' "$tmp/plan.full")" = "$(wc -c <"$f" | tr -d ' ')" ] ||
            fail "$size $t: file size differs from --plan"
        checks=$((checks + 1))
        "$CHECK" same "$tmp/$size-f32.gguf" "$f" ||
            fail "$size $t: tensor data is not the F32 model quantized"
        # general.quantization_version and general.file_type are the last
        # two keys, as llama-quantize appends them.
        "$LIST" --list "$f" | awk '$1 == "kv" {print $2, $3, $4}' | tail -n 2 >"$tmp/kv"
        printf 'general.quantization_version UINT32 2\ngeneral.file_type UINT32 %s\n' "$ft" \
            >"$tmp/kv.want"
        same_text "$tmp/kv.want" "$tmp/kv" "$size $t: file type keys"
    done
done

# qwen3 files, tied and untied, in a few types: the plan's tensors and
# size, and the F32 model of the same options quantized.
for size in tiny small; do
    for untied in "" --untied; do
        if ! "$SYNTH" --arch qwen3 --size "$size" --type f32 $untied -o "$tmp/q3-f32.gguf" 2>"$tmp/err"; then
            checks=$((checks + 1))
            fail "gguf-synth --arch qwen3 --size $size --type f32 $untied: $(cat "$tmp/err")"
            continue
        fi
        for t in q8_0 q4_0 q4_k q6_k q4_k_m; do
            f=$tmp/q3-$size-$t.gguf
            if ! "$SYNTH" --arch qwen3 --size "$size" --type "$t" $untied -o "$f" 2>"$tmp/err"; then
                checks=$((checks + 1))
                fail "gguf-synth --arch qwen3 --size $size --type $t $untied: $(cat "$tmp/err")"
                continue
            fi
            arch=qwen3
            plan "$size" "$t" $untied
            arch=qwen2
            "$LIST" --list "$f" | awk '$1 == "tensor" {print $2, $3}' >"$tmp/got"
            same_text "$tmp/plan" "$tmp/got" "qwen3 $size $t $untied: tensor types differ from --plan"
            checks=$((checks + 2))
            [ "$(sed -n 's/^file size //p' "$tmp/plan.full")" = "$(wc -c <"$f" | tr -d ' ')" ] ||
                fail "qwen3 $size $t $untied: file size differs from --plan"
            "$CHECK" same "$tmp/q3-f32.gguf" "$f" ||
                fail "qwen3 $size $t $untied: tensor data is not the F32 model quantized"
        done
    done
done

# small has only K-quant-sized rows: its Q4_K_M file has Q4_K and Q6_K only.
checks=$((checks + 1))
[ "$("$DUMP" --json --no-kv --no-tensors "$tmp/small-q4_k_m.gguf" |
    grep -c '"type": "Q[0-9]')" -eq 2 ] || fail "small q4_k_m: types other than Q4_K and Q6_K"

# Unquantized files keep general.file_type in place and have no
# quantization version.
"$SYNTH" --size small -o "$tmp/small-f16.gguf"
"$LIST" --list "$tmp/small-f16.gguf" >"$tmp/f16.list"
checks=$((checks + 2))
grep -q '^kv general.file_type UINT32 1$' "$tmp/f16.list" || fail "f16: general.file_type"
grep -q 'quantization_version' "$tmp/f16.list" && fail "f16: has a quantization version"

# The thread count does not change the bytes.
"$SYNTH" --size small --type q4_k_m -j 1 -o "$tmp/j1.gguf" &&
    "$SYNTH" --size small --type q4_k_m --threads 2 -o "$tmp/j2.gguf"
checks=$((checks + 2))
cmp -s "$tmp/j1.gguf" "$tmp/j2.gguf" || fail "-j 1 and -j 2 differ"
cmp -s "$tmp/j1.gguf" "$tmp/small-q4_k_m.gguf" || fail "-j 1 and the default differ"

# Usage errors.
# run_err NAME TEXT ARGS...: exit status 2 and TEXT on stderr, no output.
run_err() {
    name=$1 text=$2
    shift 2
    "$SYNTH" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    got=$?
    checks=$((checks + 2))
    [ "$got" -eq 2 ] || fail "gguf-synth $*: exit $got, expected 2"
    grep -F -e "$text" "$tmp/$name.err" >/dev/null || fail "gguf-synth $*: no '$text' in: $(cat "$tmp/$name.err")"
}
run_err be "gguf-synth: --big-endian works with f32, f16 and bf16 only" \
    --type q8_0 --big-endian -o "$tmp/x.gguf"
run_err q8k "type 'q8_k' is not used for model weights" --type q8_k -o "$tmp/x.gguf"
run_err iq "gguf-synth: libgguf cannot quantize to type 'iq2_xxs'" --type iq2_xxs -o "$tmp/x.gguf"
run_err j0 "invalid thread count '0'" -j 0 -o "$tmp/x.gguf"
run_err badmix "unknown type 'q4_k_x'" --type q4_k_x -o "$tmp/x.gguf"
checks=$((checks + 1))
[ ! -e "$tmp/x.gguf" ] || fail "a usage error created an output file"

echo "$checks checks, $failures failed" >&2
[ "$failures" -eq 0 ]
