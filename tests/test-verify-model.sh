#!/bin/sh
# test-verify-model.sh -- what gguf-verify checks beyond the reader:
# warnings for what the format allows but llama.cpp refuses (version 1,
# big-endian, an alignment that is not a multiple of 8, names over 63
# bytes, a removed tensor type, tensor data out of place), --strict making
# them failures, --status silencing them; and --model qwen2 and qwen3,
# which run the loader's own checks: every file they fail, qwen-run refuses
# with the same words, and every good synthetic model passes both; a file
# of one architecture fails --model of the other, by name; every problem
# listed (up to a cap), each with its byte offset; llama.cpp's stricter
# demands (UINT32 keys, unused tensors) as warnings; the same verdicts from
# a pipe; --model of an architecture not supported is a usage error that
# names the supported ones.

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
RUN=$(tool qwen-run)
need_exec "$RUN"

# accepted FILE [ARCH]: FILE passes --model ARCH (default qwen2) with
# nothing said, and qwen-run loads it (--tokenize loads the model, the
# tokenizer and the state).
accepted() {
    _b=$(basename "$1" .gguf)
    run 0 "ok-$_b" "$VERIFY" --model "${2:-qwen2}" "$1"
    check "$_b: verify --model: OK" is "$tmp/ok-$_b.out" "$1: OK"
    check "$_b: verify --model: nothing on stderr" empty "$tmp/ok-$_b.err"
    run 0 "ok-$_b-run" "$RUN" -m "$1" --tokenize -p x
}

# Every size and weight type gguf-synth makes: tiny and small in each type,
# the two large shapes in one (they take the time and the disk).
for size in tiny small; do
    for type in f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k \
                q4_k_s q4_k_m q5_k_s q5_k_m; do
        synth "good-$size-$type.gguf" --size "$size" --type "$type" --seed 13
        accepted "good-$size-$type.gguf"
        rm -f "good-$size-$type.gguf"
    done
done
for size in 0.5b 1.5b; do
    synth "good-$size.gguf" --size "$size" --type q4_0 --seed 13
    accepted "good-$size.gguf"
    rm -f "good-$size.gguf"
done
# The same for qwen3 (tiny: heads of 32, Q 128 wide in a model 64 wide;
# small: heads of 128), and Qwen3's own 0.6b shape (1.7b, of the same
# kind, would add ten seconds and 1 GB for nothing the 0.6b does not
# check; test-synth checks its shapes), and an untied one.
for size in tiny small; do
    for type in f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k \
                q4_k_s q4_k_m q5_k_s q5_k_m; do
        synth "good3-$size-$type.gguf" --arch qwen3 --size "$size" --type "$type" --seed 13
        accepted "good3-$size-$type.gguf" qwen3
        rm -f "good3-$size-$type.gguf"
    done
done
synth good3-0.6b.gguf --arch qwen3 --size 0.6b --type q4_0 --seed 13
accepted good3-0.6b.gguf qwen3
rm -f good3-0.6b.gguf
synth good3-untied.gguf --arch qwen3 --size small --type q4_k_m --untied --seed 13
accepted good3-untied.gguf qwen3

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

# refused NAME TEXT EDIT-OPTION...: m.gguf with the edits fails --model
# with TEXT named after "qwen2: ", and qwen-run refuses it with TEXT too:
# one set of rules.
refused() {
    _n=$1
    _t=$2
    shift 2
    edited "$_n" "$@"
    run 1 "$_n" "$VERIFY" --model qwen2 "$_n.gguf"
    check "$_n: verify names the problem" has "$tmp/$_n.out" "$_n.gguf: FAILED: qwen2: $_t"
    run 2 "$_n-run" "$RUN" -m "$_n.gguf" --tokenize -p x
    check "$_n: qwen-run refuses it in the same words" has "$tmp/$_n-run.err" "qwen-run: $_n.gguf: $_t"
}

# offset_of FILE BYTES: the offset of the first occurrence of BYTES (a
# Python bytes literal) in FILE.
offset_of() {
    python3 -c 'import sys; print(open(sys.argv[1], "rb").read().index(eval(sys.argv[2])))' "$1" "$2"
}

# What qwen-run's loader refuses, which --model once let pass.
refused ctx64 "key 'qwen2.context_length' is 1099511627776, expected 1..16777216 (at byte " \
    --set qwen2.context_length=u64:1099511627776
refused rope0 "key 'qwen2.rope.freq_base' is 0, expected a number in (0, 1e+30] (at byte " \
    --set qwen2.rope.freq_base=f32:0
refused ropeinf "key 'qwen2.rope.freq_base' is inf, expected a number" --set qwen2.rope.freq_base=f32:inf
refused i32 "tensor 'blk.0.attn_q.weight' has type I32, which cannot be computed (at byte " \
    --retype blk.0.attn_q.weight=i32
refused nomerges "tokenizer.ggml.merges: missing" --delete tokenizer.ggml.merges
refused badmerge "tokenizer.ggml.merges: merge 3 'zzqq' is not two tokens separated by a space (at byte " \
    --elem tokenizer.ggml.merges:3=zzqq --elem tokenizer.ggml.merges:5=qqzz
at=$(offset_of badmerge.gguf 'b"\x04" + b"\0" * 7 + b"zzqq"')
check "a bad merge: the offset is its element's ($at)" has "$tmp/badmerge.out" "(at byte $at)"
check "a bad merge: verify lists the next one too" has "$tmp/badmerge.out" "merge 5 'qqzz'"
check "a bad merge: qwen-run stops at the first" lacks "$tmp/badmerge-run.err" "merge 5"
refused typeslen "tokenizer.ggml.token_type: 1000 entries for 1024 tokens (at byte " \
    --resize tokenizer.ggml.token_type=1000
refused typesu32 "tokenizer.ggml.token_type: is ARRAY of UINT32, expected ARRAY of INT32 (at byte " \
    --cast tokenizer.ggml.token_type=u32
refused qkv "tensor 'blk.0.attn_q.weight' is missing" \
    --drop blk.0.attn_q.weight --drop blk.0.attn_k.weight --drop blk.0.attn_v.weight \
    --drop blk.0.attn_q.bias --drop blk.0.attn_k.bias --drop blk.0.attn_v.bias \
    --add blk.0.attn_qkv.weight=f16:64x128 --add blk.0.attn_qkv.bias=f32:128
check "fused attn_qkv: a warning that llama.cpp would not use it" has "$tmp/qkv.err" \
    "warning: qwen2: tensor 20 'blk.0.attn_qkv.weight' is not part of the qwen2 architecture (nor is one other)"
refused layers "key 'qwen2.block_count' is 100000, expected 1..1024" --set qwen2.block_count=100000
refused vocab "tokenizer.ggml.tokens: 1100 tokens, more than the 1024 rows of token_embd.weight (at byte " \
    --resize tokenizer.ggml.tokens=1100 --resize tokenizer.ggml.token_type=1100

# Tokens that are not strings: the tokenizer's problem, and nothing more.
refused tokint "tokenizer.ggml.tokens: is ARRAY of INT32, expected ARRAY of STRING (at byte " \
    --cast tokenizer.ggml.tokens=i32
check "tokens not strings: one problem" [ "$(wc -l < "$tmp/tokint.out")" -eq 1 ]
check "tokens not strings: no knock-on warning about token_embd" lacks "$tmp/tokint.err" "token_embd"

refused drop "tensor 'blk.1.ffn_up.weight' is missing" --drop blk.1.ffn_up.weight
run 0 drop-plain "$VERIFY" drop.gguf
check "a missing tensor: one line" is "$tmp/drop.out" "drop.gguf: FAILED: qwen2: tensor 'blk.1.ffn_up.weight' is missing"
refused noembd "tensor 'token_embd.weight' is missing" --drop token_embd.weight

# Shapes: every dim printed, 1-D and 3-D alike.
refused ff "tensor 'blk.0.ffn_gate.weight' has shape (64, 128), expected (64, 256) (at byte " \
    --set qwen2.feed_forward_length=256
check "feed_forward_length: ffn_down shape" has "$tmp/ff.out" \
    "'blk.1.ffn_down.weight' has shape (128, 64), expected (256, 64)"
check "feed_forward_length: six tensors" [ "$(count "$tmp/ff.out" "has shape")" -eq 6 ]
refused kv "tensor 'blk.0.attn_k.weight' has shape (64, 32), expected (64, 64)" \
    --set qwen2.attention.head_count_kv=4
check "head_count_kv: a 1-D shape in full" has "$tmp/kv.out" "'blk.1.attn_v.bias' has shape (32), expected (64)"
refused shape3 "tensor 'blk.0.attn_q.weight' has shape (64, 32, 2), expected (64, 64)" \
    --reshape blk.0.attn_q.weight=64x32x2
refused heads "embedding length 64 is not a multiple of the head count 5" \
    --set qwen2.attention.head_count=5
refused nolayers "key 'qwen2.block_count' is missing" --delete qwen2.block_count
refused noeps "key 'qwen2.attention.layer_norm_rms_epsilon' is missing" \
    --delete qwen2.attention.layer_norm_rms_epsilon
refused tok "tokenizer.ggml.bos_token_id: token id 5000 is out of range (vocabulary has 1024 tokens)" \
    --set tokenizer.ggml.bos_token_id=5000 --set tokenizer.ggml.eos_token_id=1024 \
    --set tokenizer.ggml.padding_token_id=1023
check "eos = n_vocab is outside" has "$tmp/tok.out" "tokenizer.ggml.eos_token_id: token id 1024 is out of range"
check "padding = n_vocab - 1 is inside" lacks "$tmp/tok.out" "padding_token_id"
refused notok "tokenizer.ggml.tokens: missing" --delete tokenizer.ggml.tokens
refused arch "key 'general.architecture' has type UINT32, expected STRING" \
    --set general.architecture=7
run 1 notqwen "$VERIFY" --model qwen2 corpus/valid.gguf
check "another architecture" is "$tmp/notqwen.out" \
    "corpus/valid.gguf: FAILED: qwen2: architecture 'llama' is not supported (supported: qwen2, qwen3) (at byte 24)"
run 1 wrongarch "$VERIFY" --model qwen3 m.gguf
check "a qwen2 file is not a qwen3 model" has "$tmp/wrongarch.out" \
    "m.gguf: FAILED: qwen3: architecture is 'qwen2', not qwen3 (at byte 24)"
check "... one line" [ "$(wc -l < "$tmp/wrongarch.out")" -eq 1 ]
synth q3.gguf --arch qwen3 --size tiny --type f16 --seed 13
run 1 wrongarch3 "$VERIFY" --model qwen2 q3.gguf
check "a qwen3 file is not a qwen2 model" is "$tmp/wrongarch3.out" \
    "q3.gguf: FAILED: qwen2: architecture is 'qwen3', not qwen2 (at byte 24)"
# Each file judged on its own: one of each architecture.
run 1 mixed "$VERIFY" --model qwen3 q3.gguf m.gguf
check "qwen3 and qwen2 files under --model qwen3" [ "$(cat "$tmp/mixed.out")" = "q3.gguf: OK
m.gguf: FAILED: qwen3: architecture is 'qwen2', not qwen3 (at byte 24)" ]
# Without --model, a qwen3 file is a valid GGUF file like any other.
run 0 q3-plain "$VERIFY" q3.gguf
check "qwen3 without --model: OK" is "$tmp/q3-plain.out" "q3.gguf: OK"
# An architecture not supported: a usage error naming those that are.
run 2 llama "$VERIFY" --model llama q3.gguf
check "--model llama: the supported ones named" has "$tmp/llama.err" \
    "gguf-verify: --model: unsupported architecture 'llama' (supported: qwen2, qwen3)"
check "--model llama: nothing on stdout" empty "$tmp/llama.out"

# refused3 NAME TEXT EDIT-OPTION...: q3.gguf (the tiny qwen3: width 64, 4
# heads (2 KV) of 32, FFN 128) with the edits fails --model qwen3 with TEXT
# after "qwen3: ", and qwen-run refuses it in the same words.
refused3() {
    _n=$1
    _t=$2
    shift 2
    "$EDIT" "$@" q3.gguf "$_n.gguf" || hard_error "verify-edit $*"
    run 1 "$_n" "$VERIFY" --model qwen3 "$_n.gguf"
    check "$_n: verify names the problem" has "$tmp/$_n.out" "$_n.gguf: FAILED: qwen3: $_t"
    run 2 "$_n-run" "$RUN" -m "$_n.gguf" --tokenize -p x
    check "$_n: qwen-run refuses it in the same words" has "$tmp/$_n-run.err" "qwen-run: $_n.gguf: $_t"
}
refused3 q3-noqnorm "tensor 'blk.1.attn_q_norm.weight' is missing" --drop blk.1.attn_q_norm.weight
refused3 q3-knorm "tensor 'blk.0.attn_k_norm.weight' has shape (64), expected (32) (at byte " \
    --reshape blk.0.attn_k_norm.weight=64
refused3 q3-keylen "key 'qwen3.attention.value_length' is 32, unlike the key head width 64; value heads of another width are not supported (at byte " \
    --set qwen3.attention.key_length=64
refused3 q3-odd "key 'qwen3.attention.key_length' is 31; the head width must be even (at byte " \
    --set qwen3.attention.key_length=31
# key_length and value_length 16 (Q 64 wide): every Q and K tensor, and
# the norms, are of another width than the file's.
refused3 q3-narrow "tensor 'blk.0.attn_q.weight' has shape (64, 128), expected (64, 64) (at byte " \
    --set qwen3.attention.key_length=16 --set qwen3.attention.value_length=16
check "heads of 16: the norms too" has "$tmp/q3-narrow.out" \
    "'blk.0.attn_q_norm.weight' has shape (32), expected (16)"
check "heads of 16: attn_output from Q" has "$tmp/q3-narrow.out" \
    "'blk.1.attn_output.weight' has shape (128, 64), expected (64, 64)"
# A qwen3 file called qwen2 is read by qwen2's keys and tensors.
"$EDIT" --set general.architecture=str:qwen2 q3.gguf q3-as2.gguf || hard_error "verify-edit"
run 1 q3-as2 "$VERIFY" --model qwen2 q3-as2.gguf
check "qwen3 called qwen2: qwen2's keys missing" has "$tmp/q3-as2.out" \
    "q3-as2.gguf: FAILED: qwen2: key 'qwen2.block_count' is missing"
# Q/K/V biases are not part of qwen3: a warning that llama.cpp would not
# use them, and the model loads.
"$EDIT" --add blk.0.attn_q.bias=f32:128 q3.gguf q3-bias.gguf || hard_error "verify-edit"
run 0 q3-bias "$VERIFY" --model qwen3 q3-bias.gguf
check "a Q bias in qwen3: a warning" has "$tmp/q3-bias.err" \
    "warning: qwen3: tensor 24 'blk.0.attn_q.bias' is not part of the qwen3 architecture"
run 0 q3-bias-run "$RUN" -m q3-bias.gguf --tokenize -p x
synth be.gguf --size tiny --type f32 --seed 13 --big-endian
run 1 be-model "$VERIFY" --model qwen2 be.gguf
check "big-endian: refused, as qwen-run refuses it" has "$tmp/be-model.out" \
    "be.gguf: FAILED: qwen2: big-endian model files are not supported"
run 2 be-run "$RUN" -m be.gguf --tokenize -p x
check "big-endian: qwen-run's words" has "$tmp/be-run.err" "big-endian model files are not supported"

# Problems of separate parts are all listed; qwen-run names the first.
edited many --set qwen2.rope.freq_base=f32:0 --set tokenizer.ggml.eos_token_id=5000 \
    --retype blk.1.ffn_up.weight=i32
run 1 many "$VERIFY" --model qwen2 many.gguf
check "three problems, three lines" [ "$(count "$tmp/many.out" "many.gguf: FAILED: qwen2: ")" -eq 3 ]
check "... the key" has "$tmp/many.out" "'qwen2.rope.freq_base' is 0"
check "... the tokenizer" has "$tmp/many.out" "eos_token_id: token id 5000"
check "... the tensor" has "$tmp/many.out" "'blk.1.ffn_up.weight' has type I32"
run 2 many-run "$RUN" -m many.gguf --tokenize -p x
check "qwen-run: the first" [ "$(cat "$tmp/many-run.err")" = "qwen-run: $(sed -n 1p "$tmp/many.out" | sed 's/^many.gguf: FAILED: qwen2: //; s/^/many.gguf: /')" ]
# A file that is not the model it claims: the list stops.
edited cap --set qwen2.block_count=30
run 1 cap "$VERIFY" --model qwen2 cap.gguf
check "a cap on the problems listed" [ "$(count "$tmp/cap.out" "cap.gguf: FAILED: qwen2: ")" -eq 21 ]
check "... said so" has "$tmp/cap.out" "cap.gguf: FAILED: qwen2: more problems, not listed"

# What qwen-run accepts and llama.cpp does not: warnings, failures under --strict.
edited ctx64ok --set qwen2.context_length=u64:32768 --set tokenizer.ggml.bos_token_id=u16:1021
run 0 ctx64ok "$VERIFY" --model qwen2 ctx64ok.gguf
check "a UINT64 context length: a warning" has "$tmp/ctx64ok.err" \
    "gguf-verify: ctx64ok.gguf: warning: qwen2: key 'qwen2.context_length' has type UINT64; llama.cpp reads it as UINT32 only (at byte "
check "a UINT16 token id: a warning" has "$tmp/ctx64ok.err" \
    "tokenizer.ggml.bos_token_id: is UINT16; llama.cpp reads token ids as UINT32 only"
run 1 ctx64ok-strict "$VERIFY" --strict --model qwen2 ctx64ok.gguf
check "... a failure under --strict" has "$tmp/ctx64ok-strict.out" "has type UINT64; llama.cpp reads it as UINT32 only"
run 0 ctx64ok-run "$RUN" -m ctx64ok.gguf --tokenize -p x
edited one --set qwen2.block_count=1
run 0 one "$VERIFY" --model qwen2 one.gguf
check "unused tensors: a warning" has "$tmp/one.err" \
    "warning: qwen2: tensor 13 'blk.1.attn_norm.weight' is not part of the qwen2 architecture (nor are 11 others)"
run 1 one-strict "$VERIFY" --strict --model qwen2 one.gguf
check "unused tensors --strict: FAILED" has "$tmp/one-strict.out" "one.gguf: FAILED: qwen2: tensor 13"
run 0 one-run "$RUN" -m one.gguf --tokenize -p x

# From a pipe: the same verdicts.
cat ff.gguf | "$VERIFY" --model qwen2 >"$tmp/ff-pipe.out" 2>/dev/null
check "from a pipe: the same shapes reported" [ "$(count "$tmp/ff-pipe.out" "has shape")" -eq 6 ]
cat badmerge.gguf | "$VERIFY" --model qwen2 2>/dev/null | sed 's/^-: /badmerge.gguf: /' >"$tmp/badmerge-pipe.out"
check "from a pipe: the same merges reported" same "$tmp/badmerge-pipe.out" "$tmp/badmerge.out"
finish
