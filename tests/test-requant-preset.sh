#!/bin/sh
# test-requant-preset.sh -- gguf-requant --preset against known answers
# from llama.cpp's llama-quantize (tests/data/preset-kat/small.kat): for
# each of the 16 file types, every tensor of gguf-synth's small f32 model
# gets llama-quantize's type and bytes, and general.file_type its number;
# --pure gives every 2-D tensor the base type (the q4_k section of
# tests/data/requant-kat/small.kat); --output-tensor-type,
# --token-embedding-type and --type rules override the preset; quantized
# input is requantized with a warning.  With LLAMA_QUANTIZE naming
# llama-quantize, the same side by side on models with an output matrix
# of their own and with Qwen3's shapes.
#
# The float weights go through libm (see test-requant-kat.sh): when the
# float model differs from the record the bytes are not judged, the types
# still are.

test_name=test-requant-preset
. "${top_srcdir:-.}/tests/common.sh"
SYNTH=$top_builddir/tests/gguf-synth
REQUANT=$(tool gguf-requant)
DUMP=$(tool gguf-dump)
KAT=$top_srcdir/tests/data/preset-kat/small.kat
need_exec "$SYNTH" "$top_builddir/gguf-requant" "$top_builddir/gguf-dump"
need_python
[ -r "$KAT" ] || hard_error "$KAT: cannot read"

digests() { tensor_digests "$DUMP" "$1"; }
section() { sed -n "s/^$1 //p" "$KAT" | sort; }

f=$tmp/small-f32.gguf
# shellcheck disable=SC2046
"$SYNTH" $(sed -n 's/^synth //p' "$KAT") -o "$f" || hard_error "gguf-synth failed"
digests "$f" > "$tmp/input"
same_input=1
if ! section input | cmp -s - "$tmp/input"; then
    same_input=0
    echo "note: the float model differs from the record (another libm?): tensor bytes not judged" >&2
fi

for p in Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K F16 BF16; do
    run 0 "preset-$p" "$REQUANT" -q --preset "$p" "$f" "$tmp/$p.gguf"
    digests "$tmp/$p.gguf" > "$tmp/got"
    section "$p" > "$tmp/want"
    if [ "$same_input" = 1 ]; then
        check "--preset $p: llama-quantize's tensors" same "$tmp/want" "$tmp/got"
    else
        check "--preset $p: llama-quantize's types" same "$(cut -d' ' -f1,2 "$tmp/want" > "$tmp/w2"; echo "$tmp/w2")" \
            "$(cut -d' ' -f1,2 "$tmp/got" > "$tmp/g2"; echo "$tmp/g2")"
    fi
done
for pair in Q4_0:2 Q8_0:7 Q3_K_M:12 Q4_K_M:15 Q5_K_S:16 F16:1 BF16:32; do
    p=${pair%:*} ft=${pair#*:}
    check "--preset $p: general.file_type $ft" [ "$("$DUMP" -k general.file_type "$tmp/$p.gguf")" = "$ft" ]
done
run 0 lower "$REQUANT" -q --preset q4_k_m "$f" "$tmp/lower.gguf"
digests "$tmp/Q4_K_M.gguf" > "$tmp/upper-d"
digests "$tmp/lower.gguf" > "$tmp/lower-d"
check "--preset in lower case" same "$tmp/upper-d" "$tmp/lower-d"

# --pure: every 2-D tensor Q4_K (llama-quantize --pure ... Q4_K_S)
run 0 pure "$REQUANT" -q --preset Q4_K_S --pure "$f" "$tmp/pure.gguf"
digests "$tmp/pure.gguf" > "$tmp/got"
sed -n 's/^q4_k //p' "$top_srcdir/tests/data/requant-kat/small.kat" | sort > "$tmp/want"
if [ "$same_input" = 1 ] && [ -s "$tmp/want" ]; then
    check "--pure: llama-quantize's tensors" same "$tmp/want" "$tmp/got"
fi
check "--pure: every 2-D tensor Q4_K" [ "$(grep -c ' Q4_K ' "$tmp/got")" -eq 15 ]

# overrides: the output matrix, the embeddings, --type rules
run 0 over "$REQUANT" -q --preset Q4_K_M --token-embedding-type q8_0 \
    --type 'blk.*.attn_v.weight=q5_0' "$f" "$tmp/over.gguf"
digests "$tmp/over.gguf" > "$tmp/got"
check "--token-embedding-type" grep -q '^token_embd.weight Q8_0 ' "$tmp/got"
check "--type over a preset" [ "$(grep -c 'attn_v.weight Q5_0 ' "$tmp/got")" -eq 2 ]
check "--type over a preset: the rest as the preset" grep -q '^blk.1.ffn_down.weight Q6_K ' "$tmp/got"
"$SYNTH" --size small --seed 1 --type f32 --untied -o "$tmp/untied.gguf" || hard_error "gguf-synth --untied"
run 0 out-type "$REQUANT" -q --preset Q4_K_M --output-tensor-type q5_k "$tmp/untied.gguf" "$tmp/out-type.gguf"
digests "$tmp/out-type.gguf" > "$tmp/got"
check "--output-tensor-type" grep -q '^output.weight Q5_K ' "$tmp/got"
check "untied: token_embd the base type" grep -q '^token_embd.weight Q4_K ' "$tmp/got"
run 0 tied-out "$REQUANT" -q --preset Q4_K_M --output-tensor-type q8_0 "$f" "$tmp/tied-out.gguf"
digests "$tmp/tied-out.gguf" > "$tmp/got"
check "tied: --output-tensor-type gives token_embd its type" grep -q '^token_embd.weight Q8_0 ' "$tmp/got"
run 0 tied-pure "$REQUANT" -q --preset Q4_K_M --pure --output-tensor-type q8_0 "$f" "$tmp/tied-pure.gguf"
digests "$tmp/tied-pure.gguf" > "$tmp/got"
check "tied, --pure: token_embd the base type" grep -q '^token_embd.weight Q4_K ' "$tmp/got"
"$SYNTH" --size tiny --seed 3 --type f16 -o "$tmp/tiny-tied.gguf" || hard_error "gguf-synth tiny"
run 0 pure-rows "$REQUANT" --preset Q4_K_M --pure "$tmp/tiny-tied.gguf" "$tmp/pure-rows.gguf"
check "--pure, rows not whole Q4_K blocks: a warning" has "$tmp/pure-rows.err" \
    "'blk.0.attn_q.weight': row length 64 is not a multiple of 256, the block size of Q4_K; left as F16"
digests "$tmp/pure-rows.gguf" > "$tmp/got"
check "--pure, rows not whole Q4_K blocks: kept, no fallback" grep -q '^blk.0.attn_q.weight F16 ' "$tmp/got"

# quantized input: requantized, with a warning
run 0 requant "$REQUANT" --preset Q4_0 "$tmp/Q4_K_M.gguf" "$tmp/re.gguf"
check "quantized input: a warning" has "$tmp/requant.err" "quantized already: quantizing them again loses precision"

# usage
run 2 unknown "$REQUANT" --preset Q9_X "$f" "$tmp/x.gguf"
check "an unknown preset: the list" has "$tmp/unknown.err" "Q4_K_M"
run 2 pure-alone "$REQUANT" --pure "$f" "$tmp/x.gguf"
check "--pure without --preset" has "$tmp/pure-alone.err" "go with --preset"
run 2 with-from "$REQUANT" --preset Q4_0 --from f32 --to q8_0 "$f" "$tmp/x.gguf"

# side by side with llama-quantize
if [ -n "${LLAMA_QUANTIZE:-}" ]; then
    "$SYNTH" --size small --arch qwen3 --seed 2 --type f16 -o "$tmp/q3.gguf" || hard_error "gguf-synth qwen3"
    "$SYNTH" --size tiny --seed 3 --type f16 --untied -o "$tmp/tiny.gguf" || hard_error "gguf-synth tiny"
    for m in "$tmp/untied.gguf" "$tmp/q3.gguf" "$tmp/tiny.gguf"; do
        for p in Q4_0 Q5_1 Q2_K Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_M Q6_K Q8_0 BF16; do
            "$LLAMA_QUANTIZE" "$m" "$tmp/l.gguf" "$p" 2 > /dev/null 2>&1 || hard_error "llama-quantize $p"
            "$REQUANT" -q --preset "$p" "$m" "$tmp/o.gguf" || fail "--preset $p on $m"
            digests "$tmp/l.gguf" > "$tmp/l"
            digests "$tmp/o.gguf" > "$tmp/o"
            check "--preset $p on $(basename "$m"): llama-quantize's tensors" same "$tmp/l" "$tmp/o"
        done
    done
    # the options on a tied and an untied model
    for m in "$f" "$tmp/untied.gguf"; do
        for opts in "--output-tensor-type q8_0" "--token-embedding-type q5_0 --output-tensor-type q6_k" \
                    "--pure --output-tensor-type q8_0" "--pure --token-embedding-type q8_0"; do
            # shellcheck disable=SC2086 # the options split into words
            "$LLAMA_QUANTIZE" $opts "$m" "$tmp/l.gguf" Q4_K_M 2 > /dev/null 2>&1 || hard_error "llama-quantize $opts"
            # shellcheck disable=SC2086
            "$REQUANT" -q --preset Q4_K_M $opts "$m" "$tmp/o.gguf" || fail "--preset Q4_K_M $opts on $m"
            digests "$tmp/l.gguf" > "$tmp/l"
            digests "$tmp/o.gguf" > "$tmp/o"
            check "Q4_K_M $opts on $(basename "$m"): llama-quantize's tensors" same "$tmp/l" "$tmp/o"
        done
    done
fi

finish
