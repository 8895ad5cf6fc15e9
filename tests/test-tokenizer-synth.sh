#!/bin/sh
# test-tokenizer-synth.sh -- the tokenizer loads the vocabulary gguf-synth
# writes (what the inference tests run on) and round-trips text with it.

: "${top_builddir:=.}"
PROG=$top_builddir/tests/test-tokenizer
SYNTH=$top_builddir/tests/gguf-synth
[ -x "$PROG" ] && [ -x "$SYNTH" ] || { echo "ERROR: $PROG or $SYNTH not built" >&2; exit 99; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-tokenizer-synth.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 99' HUP INT TERM

"$SYNTH" --size tiny --seed 7 -o "$tmp/tiny.gguf" || { echo "ERROR: gguf-synth failed" >&2; exit 99; }
"$PROG" --file "$tmp/tiny.gguf"
