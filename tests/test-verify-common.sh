# test-verify-common.sh -- shared by the gguf-verify tests (sourced, not run).
#
# Provides: $VERIFY $SYNTH $DUMP $EDIT $REQUANT, a temporary directory $tmp
# removed on exit, helpers that count checks and failures, and finish(),
# which ends the test with the automake status (0 pass, 1 fail).  A test
# that cannot run exits 77 (skip) with a reason; a broken setup exits 99.

: "${top_builddir:=.}"
: "${top_srcdir:=.}"
# Absolute, so that tests may work inside their temporary directory.
top_builddir=$(cd "$top_builddir" && pwd) || exit 99
top_srcdir=$(cd "$top_srcdir" && pwd) || exit 99
VERIFY=$top_builddir/gguf-verify
SYNTH=$top_builddir/tests/gguf-synth
DUMP=$top_builddir/gguf-dump
EDIT=$top_builddir/tests/verify-edit
REQUANT=$top_builddir/gguf-requant
HOSTILE=$top_builddir/tests/gguf-hostile

for _p in "$VERIFY" "$SYNTH" "$DUMP" "$EDIT" "$HOSTILE"; do
    if [ ! -x "$_p" ]; then
        echo "ERROR: $_p is missing (run make check)" >&2
        exit 99
    fi
done

checks=0
failures=0

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-verify.XXXXXX") || {
    echo "ERROR: cannot create a temporary directory" >&2
    exit 99
}
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 99' HUP INT TERM

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

hard_error() {
    echo "ERROR: $*" >&2
    exit 99
}

# check DESCRIPTION COMMAND...: one check; fails when COMMAND fails.
check() {
    _desc=$1
    shift
    checks=$((checks + 1))
    "$@" || fail "$_desc"
}

# run STATUS NAME COMMAND...: runs COMMAND with stdout in $tmp/NAME.out and
# stderr in $tmp/NAME.err, and checks that it exits with STATUS.
run() {
    _want=$1
    _name=$2
    shift 2
    "$@" >"$tmp/$_name.out" 2>"$tmp/$_name.err"
    _got=$?
    checks=$((checks + 1))
    if [ "$_got" -ne "$_want" ]; then
        fail "$_name: exit status $_got, expected $_want; stdout: $(head -c 400 "$tmp/$_name.out"); stderr: $(head -c 600 "$tmp/$_name.err")"
    fi
}

has() { grep -F -e "$2" "$1" >/dev/null; }
lacks() { ! grep -F -e "$2" "$1" >/dev/null; }
empty() { [ ! -s "$1" ]; }
# is FILE TEXT: FILE holds exactly the one line TEXT.
is() { [ "$(cat "$1")" = "$2" ] && [ "$(wc -l < "$1")" -eq 1 ]; }
# count FILE TEXT: number of lines of FILE holding TEXT.
count() { grep -c -F -e "$2" "$1"; }

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

need_python() {
    command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not found" >&2; exit 77; }
}

finish() {
    echo "$checks checks, $failures failures"
    [ "$failures" -eq 0 ] || exit 1
    [ "$checks" -gt 0 ] || hard_error "no checks ran"
    exit 0
}
