#!/bin/sh
# test-verify-model.sh -- what gguf-verify checks beyond the reader:
# warnings for what the format allows but llama.cpp refuses (version 1,
# big-endian, an alignment that is not a multiple of 8, names over 63
# bytes, a removed tensor type, tensor data out of place), --strict making
# them failures, --status silencing them; and --model qwen2: required
# tensors present, shapes consistent with the hyperparameters, token ids
# inside the vocabulary, tensors the architecture does not use.

. "${top_srcdir:-.}/tests/test-verify-common.sh"
need_python

cd "$tmp" || hard_error "cd $tmp"
"$HOSTILE" -o corpus >/dev/null 2>&1 || hard_error "gguf-hostile failed"

# warn NAME FILE TEXT [OPTION]: FILE passes with a warning holding TEXT,
# and fails with it under --strict.
warn() {
    run 0 "$1" "$VERIFY" ${4:-} "$2"
    check "$1: OK" is "$tmp/$1.out" "$2: OK"
    check "$1: a warning" has "$tmp/$1.err" "gguf-verify: $2: warning: "
    check "$1: the warning" has "$tmp/$1.err" "$3"
    run 1 "$1-strict" "$VERIFY" ${4:-} --strict "$2"
    check "$1 --strict: FAILED" has "$tmp/$1-strict.out" "$2: FAILED: "
    check "$1 --strict: the reason" has "$tmp/$1-strict.out" "$3"
    check "$1 --strict: said so" has "$tmp/$1-strict.out" "(--strict)"
    run 0 "$1-status" "$VERIFY" ${4:-} --status "$2"
    check "$1 --status: no warning" empty "$tmp/$1-status.err"
}

# --- warnings ----------------------------------------------------------------------
run 0 valid "$VERIFY" corpus/valid.gguf
check "the base file: no warning" empty "$tmp/valid.err"
warn v1 corpus/v1-valid.gguf "GGUF version 1: llama.cpp reads versions 2 and 3 only"
warn be corpus/be-valid.gguf "big-endian file"
warn align corpus/align-1-valid.gguf "general.alignment is 1, not a multiple of 8"
run 0 align64 "$VERIFY" corpus/align-64-valid.gguf
check "alignment 64: no warning" empty "$tmp/align64.err"
# (This one has bytes after its data section, as gguf-hostile made it.)
warn name64 corpus/tensor-name-64.gguf "name of 64 bytes; llama.cpp takes at most 63" --allow-trailing
warn place corpus/zero-dim.gguf \
    "tensor 1 'blk.0.q8_': data at offset 64 of the data section, where llama.cpp expects 0"
cp corpus/valid.gguf q4_2.gguf
python3 - q4_2.gguf <<'EOF' || hard_error "cannot patch q4_2.gguf"
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
p = data.index(b"blk.0.q8_") + 9      # name, then n_dims, two dims, the type
assert struct.unpack_from("<I", data, p)[0] == 2
struct.pack_into("<I", data, p + 4 + 16, 4)   # Q8_0 -> Q4_2
open(sys.argv[1], "wb").write(data)
EOF
run 0 q4_2 "$VERIFY" q4_2.gguf
check "removed type: warned" has "$tmp/q4_2.err" "tensor 1 'blk.0.q8_': type Q4_2 was removed from ggml"

# --- --model qwen2 -----------------------------------------------------------------
synth m.gguf --size tiny --type f16 --seed 13
synth s.gguf --size small --type q4_k_m --seed 13
run 0 model "$VERIFY" --model qwen2 m.gguf s.gguf
check "qwen2: two OK lines" [ "$(cat "$tmp/model.out")" = "m.gguf: OK
s.gguf: OK" ]
check "qwen2: nothing on stderr" empty "$tmp/model.err"

# edited NAME EDIT-OPTION...: m.gguf copied with edits into NAME.gguf.
edited() {
    _n=$1
    shift
    "$EDIT" "$@" m.gguf "$_n.gguf" || hard_error "verify-edit $*"
}

edited drop --drop blk.1.ffn_up.weight
run 0 drop-plain "$VERIFY" drop.gguf
run 1 drop "$VERIFY" --model=qwen2 drop.gguf
check "a missing tensor: named" is "$tmp/drop.out" "drop.gguf: FAILED: qwen2: tensor 'blk.1.ffn_up.weight' is missing"

edited noembd --drop token_embd.weight
run 1 noembd "$VERIFY" --model qwen2 noembd.gguf
check "no token_embd: named" has "$tmp/noembd.out" "qwen2: tensor 'token_embd.weight' is missing"

edited ff --set qwen2.feed_forward_length=256
run 1 ff "$VERIFY" --model qwen2 ff.gguf
check "feed_forward_length: ffn_gate shape" has "$tmp/ff.out" \
    "qwen2: tensor 10 'blk.0.ffn_gate.weight' has shape [64, 128], expected [64, 256]"
check "feed_forward_length: ffn_down shape" has "$tmp/ff.out" \
    "'blk.1.ffn_down.weight' has shape [128, 64], expected [256, 64]"
check "feed_forward_length: six tensors" [ "$(count "$tmp/ff.out" "has shape")" -eq 6 ]

edited kv --set qwen2.attention.head_count_kv=4
run 1 kv "$VERIFY" --model qwen2 kv.gguf
check "head_count_kv: attn_k shape" has "$tmp/kv.out" "'blk.0.attn_k.weight' has shape [64, 32], expected [64, 64]"
check "head_count_kv: attn_v bias shape" has "$tmp/kv.out" "'blk.1.attn_v.bias' has shape [32], expected [64]"

edited heads --set qwen2.attention.head_count=5
run 1 heads "$VERIFY" --model qwen2 heads.gguf
check "head_count: not a divisor" has "$tmp/heads.out" "embedding_length 64 is not a multiple of head_count 5"

edited nolayers --delete qwen2.block_count
run 1 nolayers "$VERIFY" --model qwen2 nolayers.gguf
check "a missing hyperparameter" has "$tmp/nolayers.out" "qwen2: key qwen2.block_count is missing"

edited noeps --delete qwen2.attention.layer_norm_rms_epsilon
run 1 noeps "$VERIFY" --model qwen2 noeps.gguf
check "no epsilon" has "$tmp/noeps.out" "qwen2.attention.layer_norm_rms_epsilon is missing"

edited tok --set tokenizer.ggml.bos_token_id=5000 --set tokenizer.ggml.eos_token_id=1024 \
    --set tokenizer.ggml.padding_token_id=1023
run 1 tok "$VERIFY" --model qwen2 tok.gguf
check "bos outside the vocabulary" has "$tmp/tok.out" \
    "qwen2: tokenizer.ggml.bos_token_id is 5000, outside the vocabulary of 1024 tokens"
check "eos = n_vocab is outside" has "$tmp/tok.out" "tokenizer.ggml.eos_token_id is 1024, outside"
check "padding = n_vocab - 1 is inside" lacks "$tmp/tok.out" "padding_token_id"

edited notok --delete tokenizer.ggml.tokens
run 1 notok "$VERIFY" --model qwen2 notok.gguf
check "no vocabulary" has "$tmp/notok.out" "qwen2: key tokenizer.ggml.tokens is missing"

edited arch --set general.architecture=7
run 1 arch "$VERIFY" --model qwen2 arch.gguf
check "architecture not a string" has "$tmp/arch.out" "qwen2: general.architecture is not a string"
run 1 notqwen "$VERIFY" --model qwen2 corpus/valid.gguf
check "another architecture" has "$tmp/notqwen.out" "qwen2: general.architecture is 'llama', not qwen2"

edited one --set qwen2.block_count=1
run 0 one "$VERIFY" --model qwen2 one.gguf
check "unused tensors: a warning" has "$tmp/one.err" \
    "warning: qwen2: tensor 13 'blk.1.attn_norm.weight' is not part of the architecture (nor are others)"
run 1 one-strict "$VERIFY" --strict --model qwen2 one.gguf
check "unused tensors --strict: FAILED" has "$tmp/one-strict.out" "one.gguf: FAILED: qwen2: tensor 13"

# From a pipe: the same verdicts.
cat ff.gguf | "$VERIFY" --model qwen2 >"$tmp/ff-pipe.out" 2>/dev/null
check "from a pipe: the same shapes reported" [ "$(count "$tmp/ff-pipe.out" "has shape")" -eq 6 ]
finish
