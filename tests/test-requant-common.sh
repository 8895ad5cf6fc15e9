# test-requant-common.sh -- shared by the gguf-requant tests (sourced, not run).
#
# Provides: $REQUANT $SYNTH $CHECKER $DUMP, a temporary directory $tmp
# removed on exit, and helpers that count checks and failures; finish()
# ends the test with the automake status (0 pass, 1 fail).  A test that
# cannot run exits 77 (skip) with a reason; a broken setup exits 99.

: "${top_builddir:=.}"
: "${top_srcdir:=.}"
REQUANT=$top_builddir/gguf-requant
SYNTH=$top_builddir/tests/gguf-synth
CHECKER=$top_builddir/tests/requant-check
DUMP=$top_builddir/gguf-dump

checks=0
failures=0

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-requant.XXXXXX") || {
    echo "ERROR: cannot create a temporary directory" >&2
    exit 99
}
cleanup() {
    [ -n "${cleanup_extra:-}" ] && eval "$cleanup_extra"
    rm -rf "$tmp"
}
trap cleanup EXIT
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
        fail "$_name: exit status $_got, expected $_want; stderr: $(head -c 600 "$tmp/$_name.err")"
    fi
}

has() { grep -F -e "$2" "$1" >/dev/null; }
lacks() { ! grep -F -e "$2" "$1" >/dev/null; }
empty() { [ ! -s "$1" ]; }
absent() { [ ! -e "$1" ] && [ ! -L "$1" ]; }
same() {
    cmp -s "$1" "$2" || { cmp "$1" "$2" >&2; return 1; }
}

# count FILE TEXT: number of lines of FILE holding TEXT.
count() { grep -c -F -e "$2" "$1"; }

# entries DIR: the names in DIR (hidden ones too), one a line, sorted.
entries() { ls -A "$1" | LC_ALL=C sort; }

# only DIR NAME...: DIR holds exactly the entries NAME... (no temporary
# files left behind).
only() {
    _dir=$1
    shift
    _want=$(for _n in "$@"; do echo "$_n"; done | LC_ALL=C sort)
    _got=$(entries "$_dir")
    [ "$_got" = "$_want" ] || {
        echo "  $_dir holds: $(echo $_got)" >&2
        return 1
    }
}

# sum FILE: a checksum of FILE, to see that an input is unchanged.
sum() { cksum <"$1"; }

need_python() {
    command -v python3 >/dev/null 2>&1 || {
        echo "SKIP: python3 not found (needed to parse the JSON output)"
        exit 77
    }
}

need_tools() {
    for _t in "$REQUANT" "$SYNTH" "$CHECKER" "$DUMP"; do
        [ -x "$_t" ] || hard_error "$_t not built (make check builds it)"
    done
}

# synth FILE OPTION...: a model from gguf-synth.
synth() {
    _f=$1
    shift
    "$SYNTH" "$@" -o "$_f" || hard_error "gguf-synth $* failed"
}

finish() {
    echo "$checks checks, $failures failed"
    [ "$failures" -eq 0 ] || exit 1
    exit 0
}
