# test-verify-common.sh -- shared by the gguf-verify tests (sourced, not run).
#
# Provides: $VERIFY $SYNTH $DUMP $EDIT $REQUANT $HOSTILE, helpers for
# models, and everything from tests/common.sh (a temporary directory $tmp
# removed on exit, helpers that count checks and failures, finish()).

test_name=test-verify
. "${top_srcdir:-.}/tests/common.sh"
# Absolute, so that tests may work inside their temporary directory.
top_builddir=$(cd "$top_builddir" && pwd) || exit 99
top_srcdir=$(cd "$top_srcdir" && pwd) || exit 99
VERIFY=$(tool gguf-verify)
SYNTH=$top_builddir/tests/gguf-synth
DUMP=$(tool gguf-dump)
EDIT=$top_builddir/tests/verify-edit
REQUANT=$(tool gguf-requant)
HOSTILE=$top_builddir/tests/gguf-hostile

need_exec "$VERIFY" "$SYNTH" "$DUMP" "$EDIT" "$HOSTILE"

# is FILE TEXT: FILE holds exactly the one line TEXT.
is() { [ "$(cat "$1")" = "$2" ] && [ "$(wc -l < "$1")" -eq 1 ]; }

# synth FILE OPTION...: a synthetic model, or a hard error.
synth() {
    _out=$1
    shift
    "$SYNTH" -j 1 "$@" -o "$_out" 2>"$tmp/synth.err" ||
        hard_error "gguf-synth $*: $(cat "$tmp/synth.err")"
}

# tensor_at FILE NAME: prints "OFFSET BYTES" of tensor NAME (absolute
# offset), from gguf-dump --json.
tensor_at() {
    "$DUMP" --json "$1" >"$tmp/dump.json" || hard_error "gguf-dump --json $1"
    python3 -c '
import json, sys
for t in json.load(open(sys.argv[1]))["tensors"]:
    if t["name"] == sys.argv[2]:
        print(t["offset"], t["bytes"])
' "$tmp/dump.json" "$2"
}

# flip FILE OFFSET: inverts the bits of the byte at OFFSET, in place.
flip() {
    python3 -c '
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2]))
    b = f.read(1)
    f.seek(int(sys.argv[2]))
    f.write(bytes([b[0] ^ 0xff]))
' "$1" "$2" || hard_error "cannot patch $1"
}
