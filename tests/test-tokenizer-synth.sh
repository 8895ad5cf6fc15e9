#!/bin/sh
# test-tokenizer-synth.sh -- the tokenizer loads the vocabularies gguf-synth
# writes for qwen2 and qwen3 (what the inference tests run on) and
# round-trips text with them; qwen3's <think> and </think> are recognised.

: "${top_builddir:=.}"
PROG=$top_builddir/tests/test-tokenizer
SYNTH=$top_builddir/tests/gguf-synth
[ -x "$PROG" ] && [ -x "$SYNTH" ] || { echo "ERROR: $PROG or $SYNTH not built" >&2; exit 99; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-tokenizer-synth.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 99' HUP INT TERM

"$SYNTH" --size tiny --seed 7 -o "$tmp/tiny.gguf" &&
    "$SYNTH" --arch qwen3 --size tiny --seed 7 -o "$tmp/tiny3.gguf" || { echo "ERROR: gguf-synth failed" >&2; exit 99; }
# qwen2, then qwen3 (whose vocabulary has <think> and </think> as well).
"$PROG" --file "$tmp/tiny.gguf" && "$PROG" --file "$tmp/tiny3.gguf"
