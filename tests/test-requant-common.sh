# test-requant-common.sh -- shared by the gguf-requant tests (sourced, not run).
#
# Provides: $REQUANT $SYNTH $CHECKER $DUMP, need_tools, and
# everything from tests/common.sh (a temporary directory $tmp removed on
# exit, helpers that count checks and failures, finish()).

test_name=test-requant
. "${top_srcdir:-.}/tests/common.sh"
REQUANT=$(tool gguf-requant)
SYNTH=$top_builddir/tests/gguf-synth
CHECKER=$top_builddir/tests/requant-check
DUMP=$(tool gguf-dump)

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
