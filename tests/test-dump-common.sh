# test-dump-common.sh -- shared by the gguf-dump CLI tests (sourced, not run).
#
# Provides: $DUMP $SYNTH $FIXTURE, need_tools, and everything from
# tests/common.sh (a temporary directory $tmp removed on exit, helpers that
# count checks and failures, finish()).

test_name=test-dump
. "${top_srcdir:-.}/tests/common.sh"
DUMP=$(tool gguf-dump)
SYNTH=$top_builddir/tests/gguf-synth
FIXTURE=$top_builddir/tests/test-dump-fixture

# need_tools TOOL...: gguf-dump and each TOOL are built, or a hard error.
need_tools() {
    need_exec "$DUMP" "$@"
}
