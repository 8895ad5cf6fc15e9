# common.sh -- helpers shared by the shell tests (sourced, not run).
#
# Before sourcing, a test may set test_name (names its temporary
# directory; default "test") and, at any time, cleanup_extra (shell code
# evaluated at exit before the directory is removed, e.g. to unmount).
#
# Provides: a temporary directory $tmp, removed on exit (made writable
# first, so that a test may leave read-only entries in it); the counters
# $checks and $failures with helpers that count checks and failures; file
# helpers (absent, entries, only, sum); and finish(), which ends the test with the automake status (0 pass, 1 fail,
# 99 when no check ran).  A test that cannot run exits 77 (skip) with a
# reason; a broken setup exits 99.  KEEP_TMP=1 keeps $tmp, to look into a
# failure.

: "${top_builddir:=.}"
: "${top_srcdir:=.}"
. "$top_srcdir/tests/tool.sh"

checks=0
failures=0

tmp=$(mktemp -d "${TMPDIR:-/tmp}/${test_name:-test}.XXXXXX") || {
    echo "ERROR: cannot create a temporary directory" >&2
    exit 99
}
cleanup() {
    [ -n "${KEEP_TMP:-}" ] && return
    [ -n "${cleanup_extra:-}" ] && eval "$cleanup_extra"
    chmod -R u+w "$tmp" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 99' HUP INT TERM

# synth_model OUT OPTION...: writes a model with tests/gguf-synth (one
# thread), or a hard error.
synth_model() {
    _out=$1
    shift
    "$top_builddir/tests/gguf-synth" -j 1 "$@" -o "$_out" 2>"$tmp/synth.err" ||
        hard_error "gguf-synth $*: $(cat "$tmp/synth.err")"
}

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

# need_exec FILE...: each FILE is an executable, or a hard error.
need_exec() {
    for _t in "$@"; do
        [ -x "$_t" ] || hard_error "$_t not built (make check builds it)"
    done
}

# need_python: skips the test when python3 is absent.
need_python() {
    command -v python3 >/dev/null 2>&1 || {
        echo "SKIP: python3 not found (needed by this test)" >&2
        exit 77
    }
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

# has FILE TEXT: FILE contains TEXT (fixed string) on some line.
has() { grep -F -e "$2" "$1" >/dev/null; }

# lacks FILE TEXT: FILE does not contain TEXT.
lacks() { ! grep -F -e "$2" "$1" >/dev/null; }

# empty FILE: FILE has no bytes.
empty() { [ ! -s "$1" ]; }

# count FILE TEXT: number of lines of FILE holding TEXT.
count() { grep -c -F -e "$2" "$1"; }

# same FILE1 FILE2: the files are byte for byte equal (shows where they
# differ if not).
same() {
    cmp -s "$1" "$2" && return 0
    cmp "$1" "$2" >&2
    diff "$1" "$2" 2>/dev/null | head -20 >&2
    return 1
}

# limit_memory HOSTILE: for runs on hostile input, sets limit_kb to the
# address-space limit (256 MiB) that limit() applies with ulimit -v in a
# subshell; in an AddressSanitizer build (HOSTILE --sanitizer says yes),
# which reserves terabytes of address space, no ulimit -v but any single
# allocation over 256 MiB fails instead (exported in ASAN_OPTIONS).
limit_memory() {
    limit_kb=262144
    case $("$1" --sanitizer) in
    yes)
        limit_kb=
        ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}max_allocation_size_mb=256:allocator_may_return_null=1
        export ASAN_OPTIONS ;;
    esac
    if [ -n "$limit_kb" ] && ! (ulimit -v "$limit_kb") 2>/dev/null; then
        echo "note: this shell cannot set ulimit -v; memory is not bounded" >&2
        limit_kb=
    fi
}

# limit: applies limit_kb (see limit_memory) to the current (sub)shell.
limit() {
    if [ -n "${limit_kb:-}" ]; then ulimit -v "$limit_kb"; fi
}

# absent PATH: nothing, not even a dangling link, is at PATH.
absent() { [ ! -e "$1" ] && [ ! -L "$1" ]; }

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

# tensor_digests DUMP FILE: "TENSOR TYPE SHA256" of every tensor's data in
# FILE, sorted by name (writers order tensors differently), read through
# gguf-dump DUMP's --json (needs python3).
tensor_digests() {
    python3 - "$1" "$2" <<'EOF'
import hashlib, json, subprocess, sys
dump, path = sys.argv[1], sys.argv[2]
d = json.loads(subprocess.check_output([dump, "--json", "--no-kv", "--no-summary", path]))
with open(path, "rb") as f:
    data = f.read()
for t in sorted(d["tensors"], key=lambda t: t["name"]):
    print(t["name"], t["type"], hashlib.sha256(data[t["offset"]:t["offset"] + t["bytes"]]).hexdigest())
EOF
}

# sum FILE: a checksum of FILE, to see that an input is unchanged.
sum() { cksum <"$1"; }

# finish: ends the test (0 all checks passed, 1 a check failed, 99 none
# ran).
finish() {
    echo "$checks checks, $failures failed"
    [ "$failures" -eq 0 ] || exit 1
    [ "$checks" -gt 0 ] || hard_error "no checks ran"
    exit 0
}
