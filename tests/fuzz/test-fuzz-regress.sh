#!/bin/sh
# test-fuzz-regress.sh -- every harness of tests/fuzz on its regression
# inputs (tests/fuzz/regress/NAME-*.hex, inputs that once found a bug, kept
# as hex text) and on a seed corpus made here by gen-corpus.sh: each input
# must run without a failed check or a crash.  In builds without libFuzzer
# the harnesses have tests/fuzz/driver.c as main(); with --enable-fuzzing
# they are the libFuzzer programs, which run the files named on their
# command line once each.  Each input runs on its own, so that a failure
# names it.

test_name=test-fuzz-regress
. "${top_srcdir:-.}/tests/common.sh"
top_builddir=$(cd "$top_builddir" && pwd) || exit 99
top_srcdir=$(cd "$top_srcdir" && pwd) || exit 99
targets="read stream manifest tokenizer write"
unhex=$top_builddir/tests/fuzz/unhex
need_exec "$unhex"
for name in $targets; do need_exec "$top_builddir/tests/fuzz/fuzz-$name"; done

top_srcdir=$top_srcdir top_builddir=$top_builddir \
    sh "$top_srcdir/tests/fuzz/gen-corpus.sh" "$tmp/seeds" >"$tmp/gen.log" 2>&1 ||
    hard_error "gen-corpus.sh: $(cat "$tmp/gen.log")"

# replay NAME FILE: one input through harness NAME.
replay() {
    checks=$((checks + 1))
    "$top_builddir/tests/fuzz/fuzz-$1" "$2" >"$tmp/run.log" 2>&1
    _rc=$?
    if [ "$_rc" -ne 0 ]; then
        fail "fuzz-$1 $2: exit $_rc"
        tail -n 30 "$tmp/run.log" | sed 's/^/    /' >&2
    fi
}

regress=0
for name in $targets; do
    mkdir -p "$tmp/regress/$name" || hard_error "mkdir"
    for hex in "$top_srcdir/tests/fuzz/regress/$name"-*.hex; do
        [ -f "$hex" ] || continue
        bin=$tmp/regress/$name/$(basename "$hex" .hex)
        "$unhex" "$hex" "$bin" || hard_error "unhex $hex"
        replay "$name" "$bin"
        regress=$((regress + 1))
    done
    seeds=0
    for f in "$tmp/seeds/$name"/*; do
        [ -f "$f" ] || continue
        replay "$name" "$f"
        seeds=$((seeds + 1))
    done
    [ "$seeds" -gt 0 ] || fail "no seeds made for $name"
    echo "fuzz-$name: $seeds seeds replayed"
done
echo "$regress regression inputs replayed"
[ "$regress" -gt 0 ] || fail "no regression input found in $top_srcdir/tests/fuzz/regress"
finish
