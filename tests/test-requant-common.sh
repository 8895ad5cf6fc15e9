# test-requant-common.sh -- shared by the gguf-requant tests (sourced, not run).
#
# Provides: $REQUANT $SYNTH $CHECKER $DUMP, need_tools, file helpers, and
# everything from tests/common.sh (a temporary directory $tmp removed on
# exit, helpers that count checks and failures, finish()).

test_name=test-requant
. "${top_srcdir:-.}/tests/common.sh"
REQUANT=$(tool gguf-requant)
SYNTH=$top_builddir/tests/gguf-synth
CHECKER=$top_builddir/tests/requant-check
DUMP=$(tool gguf-dump)

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

# sum FILE: a checksum of FILE, to see that an input is unchanged.
sum() { cksum <"$1"; }

# need_tools: the programs above are built, or a hard error.
need_tools() {
    need_exec "$REQUANT" "$SYNTH" "$CHECKER" "$DUMP"
}

# synth FILE OPTION...: a model from gguf-synth.
synth() {
    _f=$1
    shift
    "$SYNTH" "$@" -o "$_f" || hard_error "gguf-synth $* failed"
}
