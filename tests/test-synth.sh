#!/bin/sh
# test-synth.sh -- the test model generator as a command: options, exit
# statuses and messages, deterministic output, stdout, failure cleanup;
# the qwen3 shapes (--arch qwen3): keys, tensor shapes with Q wider than
# the model, the Qwen3 specials, --untied, and --plan of the 0.6b and 1.7b
# shapes without writing them.
# The file contents are checked by test-write-gguf-py.sh (with llama.cpp's
# reader) and by the reader's own tests.

: "${top_builddir:=.}"
SYNTH=$top_builddir/tests/gguf-synth
LIST=$top_builddir/tests/test-write
. "${top_srcdir:-.}/tests/tool.sh"
DUMP=$(tool gguf-dump)
[ -x "$SYNTH" ] && [ -x "$LIST" ] || { echo "ERROR: $SYNTH or $LIST not built" >&2; exit 99; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-synth.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 99' HUP INT TERM

checks=0
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# run STATUS NAME ARGS...: runs gguf-synth, checks the exit status.
run() {
    want=$1
    name=$2
    shift 2
    "$SYNTH" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    got=$?
    checks=$((checks + 1))
    [ "$got" -eq "$want" ] ||
        fail "$name: gguf-synth $*: exit $got, expected $want: $(head -c 300 "$tmp/$name.err")"
}

# has FILE TEXT
has() {
    checks=$((checks + 1))
    grep -F -e "$2" "$1" >/dev/null || fail "$1 lacks '$2': $(head -c 300 "$1")"
}

empty() {
    checks=$((checks + 1))
    [ ! -s "$1" ] || fail "$1 is not empty: $(head -c 200 "$1")"
}

# Help and usage errors.
run 0 help --help
has "$tmp/help.out" "Usage: gguf-synth"
has "$tmp/help.out" "--big-endian"
has "$tmp/help.out" "small  as tiny with width 256 and FFN 512"
has "$tmp/help.out" "q3_k_s, q3_k_m, q3_k_l, q4_k_s, q4_k_m, q5_k_s,"
has "$tmp/help.out" "--threads=N"
has "$tmp/help.out" "--plan"
empty "$tmp/help.err"
has "$tmp/help.out" "--gguf-version=N"
has "$tmp/help.out" "-V, --version"
has "$tmp/help.out" "-a, --arch=ARCH      qwen2 (Qwen2.5, the default) or qwen3"
has "$tmp/help.out" "0.6b   28 layers, width 1024, 16 heads (8 KV) of 128"
has "$tmp/help.out" "--untied"
# --version is the program's version, as every tool prints it; the GGUF
# format version of the output is --gguf-version.
run 0 version --version
has "$tmp/version.out" "gguf-synth (gguf-tools) "
checks=$((checks + 1))
grep -q '^gguf-synth (gguf-tools) [0-9][0-9.]*$' "$tmp/version.out" &&
    grep -q '^libgguf [0-9][0-9.]*$' "$tmp/version.out" ||
    fail "--version: $(head -c 300 "$tmp/version.out")"
empty "$tmp/version.err"
run 0 version-V -V
checks=$((checks + 1))
cmp -s "$tmp/version.out" "$tmp/version-V.out" || fail "-V differs from --version"
run 2 version-arg --version=2 -o "$tmp/x.gguf"
has "$tmp/version-arg.err" "Try 'gguf-synth --help'"
run 2 badsize --size 3b -o "$tmp/x.gguf"
has "$tmp/badsize.err" "gguf-synth: unknown size '3b'"
empty "$tmp/badsize.out"
# A size is one of its architecture's, whatever the order of the options.
run 2 badsize3 --size 0.5b --arch qwen3 -o "$tmp/x.gguf"
has "$tmp/badsize3.err" "gguf-synth: unknown size '0.5b' for qwen3 (tiny, small, 0.6b or 1.7b)"
run 2 badsize2 --arch qwen2 --size 0.6b -o "$tmp/x.gguf"
has "$tmp/badsize2.err" "gguf-synth: unknown size '0.6b' for qwen2 (tiny, small, medium, 0.5b, 1.5b or 7b)"
run 2 badarch --arch llama -o "$tmp/x.gguf"
has "$tmp/badarch.err" "gguf-synth: unknown architecture 'llama' (qwen2 or qwen3)"
run 2 badtype --type q9 -o "$tmp/x.gguf"
has "$tmp/badtype.err" "unknown type 'q9'"
run 2 badver --gguf-version 4 -o "$tmp/x.gguf"
has "$tmp/badver.err" "invalid GGUF version '4'"
run 2 badseed --seed x1 -o "$tmp/x.gguf"
has "$tmp/badseed.err" "invalid seed"
run 2 noout
has "$tmp/noout.err" "no output file"
run 2 extra -o "$tmp/x.gguf" surplus
has "$tmp/extra.err" "unexpected argument 'surplus'"
run 2 badopt --frobnicate -o "$tmp/x.gguf"
has "$tmp/badopt.err" "Try 'gguf-synth --help'"
checks=$((checks + 1))
[ ! -e "$tmp/x.gguf" ] || fail "usage errors created an output file"

# Deterministic: same options, same bytes; another seed, other weights
# but the same header size; stdout carries the same bytes as a file.
run 0 a --seed 42 -o "$tmp/a.gguf"
run 0 b --seed 42 -o "$tmp/b.gguf"
run 0 c --seed 43 -o "$tmp/c.gguf"
"$SYNTH" --seed 42 -o - 2>"$tmp/d.err" | cat >"$tmp/d.gguf"
checks=$((checks + 3))
cmp -s "$tmp/a.gguf" "$tmp/b.gguf" || fail "same seed, different bytes"
cmp -s "$tmp/a.gguf" "$tmp/c.gguf" && fail "different seeds, same bytes"
cmp -s "$tmp/a.gguf" "$tmp/d.gguf" || fail "-o - differs from -o FILE"
empty "$tmp/a.err"

# Every variant is read back by our reader with the expected header.
for opts in "--type f32" "--type bf16" "--gguf-version 1" "--gguf-version 2 --big-endian" \
    "--gguf-version 1 --big-endian --type f32"; do
    # shellcheck disable=SC2086
    "$SYNTH" $opts -o "$tmp/v.gguf" 2>"$tmp/v.err" || fail "gguf-synth $opts: $(cat "$tmp/v.err")"
    checks=$((checks + 1))
    if "$LIST" --list "$tmp/v.gguf" >"$tmp/v.list" 2>"$tmp/v.err"; then
        want_v=3
        case $opts in *"--gguf-version 1"*) want_v=1 ;; *"--gguf-version 2"*) want_v=2 ;; esac
        grep -q "^version $want_v\$" "$tmp/v.list" || fail "$opts: not version $want_v"
        grep -q '^tensor_count 26$' "$tmp/v.list" || fail "$opts: tensor count"
        grep -q '^kv tokenizer.ggml.tokens ARRAY STRING 1024 ' "$tmp/v.list" || fail "$opts: tokens"
        grep -q '^kv tokenizer.ggml.eos_token_id UINT32 1023$' "$tmp/v.list" || fail "$opts: eos"
        grep -q '^tensor token_embd.weight ' "$tmp/v.list" || fail "$opts: token_embd"
        grep -q '^tensor output.weight ' "$tmp/v.list" && fail "$opts: output.weight present"
    else
        fail "gguf-synth $opts: our reader rejects the output: $(cat "$tmp/v.err")"
    fi
done
# --size small: 256-wide rows everywhere.
"$SYNTH" --size small -o "$tmp/small.gguf" 2>"$tmp/small.err" || fail "--size small: $(cat "$tmp/small.err")"
"$LIST" --list "$tmp/small.gguf" >"$tmp/small.list" 2>&1
for want in '^tensor_count 26$' '^kv qwen2.embedding_length UINT32 256$' \
    '^kv qwen2.feed_forward_length UINT32 512$' '^kv qwen2.attention.head_count UINT32 4$' \
    '^kv qwen2.attention.head_count_kv UINT32 2$' '^kv tokenizer.ggml.tokens ARRAY STRING 1024 ' \
    '^tensor token_embd.weight F16 256,1024 ' '^tensor blk.1.attn_k.weight F16 256,128 ' \
    '^tensor blk.1.ffn_down.weight F16 512,256 '; do
    checks=$((checks + 1))
    grep -q "$want" "$tmp/small.list" || fail "--size small: no line matching $want"
done

# --arch qwen2 is the default: the same bytes.
run 0 a2 --arch qwen2 --seed 42 -o "$tmp/a2.gguf"
checks=$((checks + 1))
cmp -s "$tmp/a.gguf" "$tmp/a2.gguf" || fail "--arch qwen2 differs from the default"

# --arch qwen3, tiny: Qwen3's keys and tensors, heads of 32 (Q 4 x 32 = 128
# wide in a model 64 wide, K and V 2 x 32), no biases, per-head Q/K norms
# of 32, tied embeddings; the vocabulary ends in the three ChatML specials
# and <think> </think> (1024 tokens: 256 bytes, 763 merges, 5 specials).
run 0 q3 --arch qwen3 --seed 42 -o "$tmp/q3.gguf"
"$LIST" --list "$tmp/q3.gguf" >"$tmp/q3.list" 2>&1 || fail "qwen3 tiny: our reader: $(head -c 300 "$tmp/q3.list")"
for want in '^tensor_count 24$' '^kv general.architecture STRING 7177656e33$' \
    '^kv qwen3.block_count UINT32 2$' '^kv qwen3.context_length UINT32 40960$' \
    '^kv qwen3.embedding_length UINT32 64$' '^kv qwen3.feed_forward_length UINT32 128$' \
    '^kv qwen3.attention.head_count UINT32 4$' '^kv qwen3.attention.head_count_kv UINT32 2$' \
    '^kv qwen3.attention.key_length UINT32 32$' '^kv qwen3.attention.value_length UINT32 32$' \
    '^kv qwen3.rope.freq_base FLOAT32 49742400$' \
    '^kv qwen3.attention.layer_norm_rms_epsilon FLOAT32 358637bd$' \
    '^kv tokenizer.ggml.tokens ARRAY STRING 1024 ' '^kv tokenizer.ggml.merges ARRAY STRING 763 ' \
    '^kv tokenizer.ggml.bos_token_id UINT32 1019$' '^kv tokenizer.ggml.eos_token_id UINT32 1021$' \
    '^tensor token_embd.weight F16 64,1024 ' '^tensor blk.1.attn_q.weight F16 64,128 ' \
    '^tensor blk.1.attn_q_norm.weight F32 32 ' '^tensor blk.1.attn_k.weight F16 64,64 ' \
    '^tensor blk.1.attn_k_norm.weight F32 32 ' '^tensor blk.1.attn_v.weight F16 64,64 ' \
    '^tensor blk.1.attn_output.weight F16 128,64 ' '^tensor blk.1.ffn_down.weight F16 128,64 '; do
    checks=$((checks + 1))
    grep -q "$want" "$tmp/q3.list" || fail "qwen3 tiny: no line matching $want"
done
checks=$((checks + 1))
grep -E '^kv qwen2\.|^tensor [^ ]*\.bias |^tensor output\.weight ' "$tmp/q3.list" &&
    fail "qwen3 tiny: a qwen2 key, a bias or output.weight"
"$DUMP" -k tokenizer.ggml.tokens -k tokenizer.ggml.token_type "$tmp/q3.gguf" >"$tmp/q3.tok" ||
    fail "gguf-dump -k on the qwen3 tiny model"
# The last five tokens, then the last five types: <|...|> are control (3),
# <think> and </think> user-defined (4), as in the real Qwen3 files.
checks=$((checks + 1))
[ "$(sed -n '1020,1024p' "$tmp/q3.tok" | tr '\n' ' ')" = "<|endoftext|> <|im_start|> <|im_end|> <think> </think> " ] &&
    [ "$(sed -n '2044,2048p' "$tmp/q3.tok" | tr '\n' ' ')" = "3 3 3 4 4 " ] ||
    fail "qwen3 tiny specials: $(sed -n '1020,1024p;2044,2048p' "$tmp/q3.tok" | tr '\n' ' ')"
# Merges are drawn from the seed as qwen2's are: the same first ones.
checks=$((checks + 1))
"$DUMP" -k tokenizer.ggml.merges "$tmp/q3.gguf" | head -n 700 >"$tmp/q3.merges" &&
    "$DUMP" -k tokenizer.ggml.merges "$tmp/a.gguf" | head -n 700 >"$tmp/a.merges" &&
    cmp -s "$tmp/q3.merges" "$tmp/a.merges" || fail "qwen3 and qwen2 merges differ for one seed"
# A tensor of the same name and shape has the same values in both
# (ffn_gate: 64 x 128 in both tiny shapes).
checks=$((checks + 1))
"$LIST" --list "$tmp/a.gguf" >"$tmp/a.list" 2>&1
[ "$(grep '^tensor blk.0.ffn_gate.weight ' "$tmp/q3.list" | cut -d' ' -f2-4,6-)" = \
    "$(grep '^tensor blk.0.ffn_gate.weight ' "$tmp/a.list" | cut -d' ' -f2-4,6-)" ] ||
    fail "qwen3 and qwen2 blk.0.ffn_gate.weight differ for one seed"

# --untied: an output.weight of its own, after output_norm.weight, other
# values than token_embd's; everything before it unchanged.
run 0 q3u --arch qwen3 --seed 42 --untied -o "$tmp/q3u.gguf"
"$LIST" --list "$tmp/q3u.gguf" >"$tmp/q3u.list" 2>&1
checks=$((checks + 4))
grep -q '^tensor_count 25$' "$tmp/q3u.list" || fail "--untied: not 25 tensors"
[ "$(grep '^tensor ' "$tmp/q3u.list" | tail -n 2 | cut -d' ' -f2-4)" = "output_norm.weight F32 64
output.weight F16 64,1024" ] || fail "--untied: the last tensors: $(grep '^tensor ' "$tmp/q3u.list" | tail -n 2)"
[ "$(grep '^tensor output.weight ' "$tmp/q3u.list" | cut -d' ' -f7)" != \
    "$(grep '^tensor token_embd.weight ' "$tmp/q3u.list" | cut -d' ' -f7)" ] || fail "--untied: output.weight is token_embd's copy"
[ "$(grep '^tensor ' "$tmp/q3.list" | cut -d' ' -f2-4,6-)" = \
    "$(grep '^tensor ' "$tmp/q3u.list" | grep -v ' output.weight ' | cut -d' ' -f2-4,6-)" ] ||
    fail "--untied changed other tensors"

# --plan of the real Qwen3 shapes: the shapes of the files llama.cpp makes
# (0.6b: Q 16 x 128 = 2048 wide in a model 1024 wide, K and V 8 x 128 =
# 1024; 1.7b: Q 2048 in 2048), 28 layers, tied, in the bytes F16 takes;
# nothing written, even with -o (into an empty folder).
mkdir "$tmp/plan"
run 0 p06 --arch qwen3 --size 0.6b --plan -o "$tmp/plan/m.gguf"
empty "$tmp/p06.err"
checks=$((checks + 1))
[ -z "$(ls -A "$tmp/plan")" ] || fail "--plan wrote files: $(ls -A "$tmp/plan")"
for want in 'token_embd.weight F16 1024x151936 311164928' \
    'blk.0.attn_q.weight F16 1024x2048 4194304' 'blk.0.attn_q_norm.weight F32 128 512' \
    'blk.0.attn_k.weight F16 1024x1024 2097152' 'blk.0.attn_k_norm.weight F32 128 512' \
    'blk.0.attn_v.weight F16 1024x1024 2097152' 'blk.0.attn_output.weight F16 2048x1024 4194304' \
    'blk.27.ffn_gate.weight F16 1024x3072 6291456' 'blk.27.ffn_down.weight F16 3072x1024 6291456' \
    'output_norm.weight F32 1024 4096'; do
    checks=$((checks + 1))
    awk '{print $1, $2, $3, $4}' "$tmp/p06.out" | grep -qx "$want" || fail "--plan 0.6b: no line '$want'"
done
# 2 + 28 x 11 tensors; their bytes: F16 matrices, F32 norms.
checks=$((checks + 3))
[ "$(grep -vc '^file size ' "$tmp/p06.out")" -eq 310 ] || fail "--plan 0.6b: not 310 tensors"
grep -Eq '^(blk\.28\.|output\.weight|[^ ]*\.bias )' "$tmp/p06.out" && fail "--plan 0.6b: a 29th layer, output.weight or a bias"
want_bytes=$((2 * (1024 * 151936 + 28 * (2 * 1024 * 2048 + 2 * 1024 * 1024 + 3 * 1024 * 3072)) + 4 * (1024 + 28 * (2 * 1024 + 2 * 128))))
got_bytes=$(grep -v '^file size ' "$tmp/p06.out" | awk '{s += $4} END {printf "%d", s}')
[ "$got_bytes" -eq "$want_bytes" ] || fail "--plan 0.6b: $got_bytes bytes of tensors, expected $want_bytes"
# The file: the tensors and a header of several MB (the vocabulary).
checks=$((checks + 1))
size=$(sed -n 's/^file size //p' "$tmp/p06.out")
[ "$size" -gt "$want_bytes" ] && [ "$size" -lt $((want_bytes + 16000000)) ] || fail "--plan 0.6b: file size $size"
run 0 p17 --arch qwen3 --size 1.7b --plan
for want in 'token_embd.weight F16 2048x151936' 'blk.27.attn_q.weight F16 2048x2048' \
    'blk.27.attn_k.weight F16 2048x1024' 'blk.27.attn_q_norm.weight F32 128' \
    'blk.27.attn_output.weight F16 2048x2048' 'blk.27.ffn_up.weight F16 2048x6144' \
    'blk.27.ffn_down.weight F16 6144x2048'; do
    checks=$((checks + 1))
    awk '{print $1, $2, $3}' "$tmp/p17.out" | grep -qx "$want" || fail "--plan 1.7b: no line '$want'"
done
checks=$((checks + 1))
[ "$(grep -vc '^file size ' "$tmp/p17.out")" -eq 310 ] || fail "--plan 1.7b: not 310 tensors"

# The 7b shape (Qwen2.5-7B: 28 heads of 128, 4 of them for K and V, an
# output matrix of its own with --untied, Q4_K_M as llama-quantize mixes it).
run 0 p7b --size 7b --untied --type q4_k_m --plan
for want in 'token_embd.weight Q4_K 3584x152064' 'blk.0.attn_k.weight Q4_K 3584x512' \
    'blk.0.attn_k.bias F32 512' 'blk.27.ffn_down.weight Q6_K 18944x3584' \
    'blk.27.ffn_gate.weight Q4_K 3584x18944' 'output.weight Q6_K 3584x152064'; do
    checks=$((checks + 1))
    awk '{print $1, $2, $3}' "$tmp/p7b.out" | grep -qx "$want" || fail "--plan 7b: no line '$want'"
done
checks=$((checks + 1))
[ "$(grep -vc '^file size ' "$tmp/p7b.out")" -eq $((28 * 12 + 3)) ] || fail "--plan 7b: not 339 tensors"

# The real vocabulary layout and keys of 0.6b, from the start of the
# stream (gguf-dump stops reading after the header; gguf-synth dies of
# SIGPIPE): Qwen3's 26 specials from 151643, <think> = 151667 and </think>
# = 151668, then [PAD151669] .. [PAD151935]; EOS <|im_end|> = 151645.
"$SYNTH" --arch qwen3 --size 0.6b -j 1 -o - 2>/dev/null |
    "$DUMP" -k tokenizer.ggml.tokens -k tokenizer.ggml.token_type -k tokenizer.ggml.eos_token_id \
        -k qwen3.attention.key_length -k qwen3.context_length -k general.name >"$tmp/q06.k" 2>"$tmp/q06.err"
checks=$((checks + 5))
[ "$(wc -l <"$tmp/q06.k")" -eq $((2 * 151936 + 4)) ] || fail "0.6b header: $(wc -l <"$tmp/q06.k") lines: $(head -c 300 "$tmp/q06.err")"
[ "$(sed -n '151644p;151646p;151668p;151669p' "$tmp/q06.k" | tr '\n' ' ')" = \
    "<|endoftext|> <|im_end|> <think> </think> " ] || fail "0.6b specials: $(sed -n '151644,151670p' "$tmp/q06.k" | tr '\n' ' ')"
[ "$(sed -n '151666,151667p;151670p;151936p' "$tmp/q06.k" | tr '\n' ' ')" = \
    "<tool_response> </tool_response> [PAD151669] [PAD151935] " ] || fail "0.6b: the specials after <|file_sep|> or the padding"
[ "$(sed -n "$((151936 + 151668))p;$((151936 + 151669))p;$((151936 + 151670))p" "$tmp/q06.k" | tr '\n' ' ')" = "4 4 5 " ] ||
    fail "0.6b: token types of <think> </think> [PAD151669]"
[ "$(tail -n 4 "$tmp/q06.k" | tr '\n' ' ')" = "151645 128 40960 Qwen3 0.6B synthetic (seed 0) " ] ||
    fail "0.6b keys: $(tail -n 4 "$tmp/q06.k" | tr '\n' ' ')"

# Tensor data does not depend on the version (offsets do: the header size
# differs, so field 5 is left out).
"$SYNTH" --seed 5 --gguf-version 1 -o "$tmp/v1.gguf" && "$SYNTH" --seed 5 --gguf-version 3 -o "$tmp/v3.gguf" &&
    "$LIST" --list "$tmp/v1.gguf" | grep '^tensor' | cut -d' ' -f2-4,6- >"$tmp/v1.t" &&
    "$LIST" --list "$tmp/v3.gguf" | grep '^tensor' | cut -d' ' -f2-4,6- >"$tmp/v3.t"
checks=$((checks + 1))
cmp -s "$tmp/v1.t" "$tmp/v3.t" && [ -s "$tmp/v1.t" ] || fail "tensor data differs between versions"

# Output errors: exit 2, "gguf-synth: FILE: ...", nothing left behind.
run 2 nodir -o "$tmp/no/such/dir/m.gguf"
has "$tmp/nodir.err" "gguf-synth: $tmp/no/such/dir/m.gguf: "
if [ -w /dev/full ]; then
    run 2 full -o /dev/full
    has "$tmp/full.err" "gguf-synth: /dev/full: "
    has "$tmp/full.err" "No space left on device"
fi

# Binary data is not written to a terminal (when script(1) can give us one).
if command -v script >/dev/null 2>&1 && script -qec true /dev/null >/dev/null 2>&1; then
    script -qec "$SYNTH -o -" /dev/null >"$tmp/tty.out" 2>&1
    got=$?
    checks=$((checks + 2))
    [ "$got" -eq 2 ] || fail "-o - on a terminal: exit $got, expected 2"
    grep -q "refusing to write binary data to a terminal" "$tmp/tty.out" || fail "no terminal refusal message"
fi

# Killed while writing: the temporary file is removed (by the signal
# handler); either the complete file or nothing is at the target.
mkdir "$tmp/k"
"$SYNTH" --size 0.5b -o "$tmp/k/m.gguf" 2>"$tmp/k.err" &
pid=$!
sleep 0.3
kill -TERM "$pid" 2>/dev/null
wait "$pid"
checks=$((checks + 1))
left=$(ls -A "$tmp/k")
case $left in
"") ;;
m.gguf) "$LIST" --list "$tmp/k/m.gguf" >/dev/null 2>&1 || fail "a killed run left a broken m.gguf" ;;
*) fail "a killed run left: $left" ;;
esac

echo "$checks checks, $failures failed" >&2
[ "$failures" -eq 0 ]
