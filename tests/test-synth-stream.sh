#!/bin/sh
# test-synth-stream.sh -- gguf-synth's weights past the first chunk: the
# F16 values are the F32 values (which quantized outputs are made from)
# rounded, whatever the chunk, checked on the first 524288 values of the
# 0.5b model's token_embd.weight (two F32 chunks, four F16 chunks of
# writing) by tests/gguflite.py f16-chunks.  Only the start of each model
# is written: the output is cut after the first tensor.

: "${top_builddir:=.}"
: "${top_srcdir:=.}"
SYNTH=$top_builddir/tests/gguf-synth
LITE=$top_srcdir/tests/gguflite.py
[ -x "$SYNTH" ] || { echo "ERROR: $SYNTH not built" >&2; exit 99; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not found" >&2; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-synth-stream.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 99' HUP INT TERM

# The 0.5b header takes about 6 MB, token_embd's first 524288 values 2 MB
# (F32) or 1 MB (F16).  gguf-synth dies of SIGPIPE when head has enough.
for t in f32 f16; do
    "$SYNTH" --size 0.5b --type "$t" --seed 9 -o - 2>/dev/null | head -c 9000000 >"$tmp/$t.gguf"
    [ "$(wc -c <"$tmp/$t.gguf")" -eq 9000000 ] || { echo "ERROR: gguf-synth --type $t: short output" >&2; exit 99; }
done
if python3 "$LITE" f16-chunks "$tmp/f32.gguf" "$tmp/f16.gguf" token_embd.weight; then
    echo "1 check, 0 failed" >&2
    exit 0
fi
echo "FAIL: the F16 weights are not the F32 weights rounded" >&2
exit 1
