#!/bin/sh
# test-tokenizer-real.sh -- the Qwen2 tokenizer against the reference's
# known answers (tests/data/tokenizer, 46 cases) with the vocabulary of a
# real Qwen2/Qwen2.5 GGUF file named by QWEN_MODEL: every case must give
# exactly the recorded ids and round-trip.  Skipped without QWEN_MODEL.

: "${top_builddir:=.}"
: "${top_srcdir:=.}"
PROG=$top_builddir/tests/test-tokenizer
[ -x "$PROG" ] || { echo "ERROR: $PROG not built" >&2; exit 99; }
if [ -z "${QWEN_MODEL:-}" ]; then
    echo "SKIP: QWEN_MODEL is not set (name a Qwen2.5 GGUF file to run the 46 known answers)" >&2
    exit 77
fi
[ -r "$QWEN_MODEL" ] || { echo "ERROR: QWEN_MODEL=$QWEN_MODEL is not readable" >&2; exit 99; }
data=$top_srcdir/tests/data/tokenizer
exec "$PROG" --real "$QWEN_MODEL" "$data/qwen2.inp" "$data/qwen2.out"
