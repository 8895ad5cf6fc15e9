# test-dump-common.sh -- shared by the gguf-dump CLI tests (sourced, not run).
#
# Provides: $DUMP $SYNTH $FIXTURE, a temporary directory $tmp removed on
# exit, and helpers that count checks and failures; finish() ends the test
# with the automake status (0 pass, 1 fail).  A test that cannot run exits
# 77 (skip) with a reason; a broken test setup exits 99.

: "${top_builddir:=.}"
: "${top_srcdir:=.}"
DUMP=$top_builddir/gguf-dump
SYNTH=$top_builddir/tests/gguf-synth
FIXTURE=$top_builddir/tests/test-dump-fixture

checks=0
failures=0

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-dump.XXXXXX") || {
    echo "ERROR: cannot create a temporary directory" >&2
    exit 99
}
trap 'rm -rf "$tmp"' EXIT
trap 'exit 99' HUP INT TERM

# fail MESSAGE: records a failed check.
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# hard_error MESSAGE: the test itself cannot go on.
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
        fail "$_name: exit status $_got, expected $_want; stderr: $(head -c 400 "$tmp/$_name.err")"
    fi
}

# has FILE TEXT: FILE contains TEXT (fixed string) on some line.
has() {
    grep -F -e "$2" "$1" >/dev/null
}

# lacks FILE TEXT: FILE does not contain TEXT.
lacks() {
    ! grep -F -e "$2" "$1" >/dev/null
}

# same FILE1 FILE2: the files are byte for byte equal (shows a diff if not).
same() {
    cmp -s "$1" "$2" || { diff "$1" "$2" | head -20 >&2; return 1; }
}

# empty FILE: FILE has no bytes.
empty() {
    [ ! -s "$1" ]
}

need_python() {
    command -v python3 >/dev/null 2>&1 || {
        echo "SKIP: python3 not found (needed to parse the JSON output)"
        exit 77
    }
}

need_tools() {
    [ -x "$DUMP" ] || hard_error "$DUMP not built"
    for _t in "$@"; do
        [ -x "$_t" ] || hard_error "$_t not built (make check builds it)"
    done
}

finish() {
    echo "$checks checks, $failures failed"
    [ "$failures" -eq 0 ] || exit 1
    exit 0
}
