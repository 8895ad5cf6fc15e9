#!/bin/sh
# run-fuzz.sh -- `make fuzz`: runs each libFuzzer harness of tests/fuzz for
# FUZZ_SECONDS seconds, one after the other, on the seed corpus (made by
# gen-corpus.sh into tests/fuzz/corpus when it is missing or older than the
# generators) and on what earlier runs found (tests/fuzz/work/NAME, kept).
# A crash, a failed check, a leak, a timeout (FUZZ_TIMEOUT seconds for one
# input, default 20) or running out of memory (2 GiB) fails the run; the
# input that did it is saved as tests/fuzz/findings/NAME-KIND-HASH and its
# path printed, with the end of the log.  To make it a regression case:
#     od -An -tx1 -v FILE > tests/fuzz/regress/NAME-WHAT.hex
# Environment: FUZZ_TARGETS (the harnesses), FUZZ_SECONDS, top_srcdir,
# top_builddir.  Exit 0 when no harness found anything, 1 otherwise, 2 for
# trouble.

set -u
: "${top_srcdir:=.}"
: "${top_builddir:=.}"
: "${FUZZ_SECONDS:=60}"
: "${FUZZ_TIMEOUT:=20}"
: "${FUZZ_TARGETS:=read stream manifest tokenizer write}"
dir=$top_builddir/tests/fuzz
corpus=$dir/corpus
stamp=$dir/corpus.stamp

case $FUZZ_SECONDS in ''|*[!0-9]*) echo "make fuzz: FUZZ_SECONDS must be a number of seconds" >&2; exit 2 ;; esac

if [ ! -f "$stamp" ] || [ "$top_srcdir/tests/fuzz/gen-corpus.sh" -nt "$stamp" ] ||
   [ "$top_builddir/tests/gguf-synth" -nt "$stamp" ] || [ "$top_builddir/tests/gguf-hostile" -nt "$stamp" ]; then
    echo "fuzz: making the seed corpus in $corpus"
    top_srcdir=$top_srcdir top_builddir=$top_builddir sh "$top_srcdir/tests/fuzz/gen-corpus.sh" "$corpus" ||
        exit 2
    touch "$stamp"
fi

# Longest input each harness is given: inputs are read in full per run.
max_len() {
    case $1 in
    read) echo 1048576 ;;
    stream) echo 262144 ;;
    manifest) echo 65536 ;;
    tokenizer) echo 8192 ;;
    write) echo 32768 ;;
    *) echo 65536 ;;
    esac
}

status=0
mkdir -p "$dir/findings" || exit 2
for name in $FUZZ_TARGETS; do
    prog=$dir/fuzz-$name
    [ -x "$prog" ] || { echo "fuzz: $prog is not built" >&2; exit 2; }
    mkdir -p "$dir/work/$name" "$corpus/$name" || exit 2
    log=$dir/findings/$name.log
    before=$(ls "$dir/findings" | grep -c "^$name-" || true)
    echo "fuzz: $name for $FUZZ_SECONDS s (log: $log)"
    "$prog" -max_total_time="$FUZZ_SECONDS" -max_len="$(max_len "$name")" \
        -timeout="$FUZZ_TIMEOUT" -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$dir/findings/$name-" "$dir/work/$name" "$corpus/$name" >"$log" 2>&1
    rc=$?
    after=$(ls "$dir/findings" | grep -c "^$name-" || true)
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)|^#[0-9]+.*DONE' "$log" | sed "s/^/  $name: /"
    if [ "$rc" -ne 0 ] || [ "$after" -gt "$before" ]; then
        status=1
        echo "FAIL: fuzz-$name (exit $rc); the end of $log:" >&2
        tail -n 40 "$log" | sed 's/^/    /' >&2
        for f in $(ls -t "$dir/findings" | grep "^$name-" | grep -v '\.log$'); do
            echo "FAIL: fuzz-$name: input: $dir/findings/$f" >&2
        done
    fi
done
[ "$status" -eq 0 ] && echo "fuzz: no findings"
exit "$status"
