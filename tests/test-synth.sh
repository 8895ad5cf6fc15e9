#!/bin/sh
# test-synth.sh -- the test model generator as a command: options, exit
# statuses and messages, deterministic output, stdout, failure cleanup.
# The file contents are checked by test-write-gguf-py.sh (with llama.cpp's
# reader) and by the reader's own tests.

: "${top_builddir:=.}"
SYNTH=$top_builddir/tests/gguf-synth
LIST=$top_builddir/tests/test-write
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
has "$tmp/help.out" "q4_k_m, q4_k_s, q5_k_m, q5_k_s"
has "$tmp/help.out" "--threads=N"
has "$tmp/help.out" "--plan"
empty "$tmp/help.err"
has "$tmp/help.out" "--gguf-version=N"
has "$tmp/help.out" "-V, --version"
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
run 2 badsize --size 7b -o "$tmp/x.gguf"
has "$tmp/badsize.err" "gguf-synth: unknown size '7b'"
empty "$tmp/badsize.out"
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
