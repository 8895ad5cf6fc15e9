#!/bin/bash
# bench-dump.sh -- how fast gguf-dump shows a model, text and --json.
#
# Times `gguf-dump FILE` and `gguf-dump --json FILE` on the 1.5b synthetic
# Qwen2 model (f16, about 3 GB; generated once with tests/gguf-synth and kept
# in the cache directory), page cache warm, best of N runs.  When a Python
# with gguf-py (PyPI package `gguf`) is available, gguf-py's dumper runs on
# the same file side by side and the ratios are printed.  Times are reported,
# never judged: the script fails only when something could not run.
#
# Environment:
#   BENCH_DIR        cache directory for generated models
#                    (default: $top_builddir/tests/bench/cache)
#   BENCH_MODEL      time this file instead of the generated model
#   BENCH_RUNS       runs per command, best one reported (default 10)
#   BENCH_PEER_RUNS  runs per gguf-py command (default 3; it is slow)
#   BENCH_PYTHON     Python interpreter that has gguf-py (default python3;
#                    set it empty to skip the peer)
#   GGUF_DUMP        the gguf-dump binary to time (default: the build's)

set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
runs=${BENCH_RUNS:-10}
peer_runs=${BENCH_PEER_RUNS:-3}
python=${BENCH_PYTHON-python3}
cache=${BENCH_DIR:-$top_builddir/tests/bench/cache}
me=bench-dump

die() { echo "$me: $*" >&2; exit 2; }

# The real binary, not libtool's wrapper script: the wrapper's shell start
# would be timed too.
if [ -n "${GGUF_DUMP:-}" ]; then
    dump=$GGUF_DUMP
elif [ -x "$top_builddir/.libs/gguf-dump" ]; then
    dump=$top_builddir/.libs/gguf-dump
    export LD_LIBRARY_PATH="$top_builddir/gguf/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
    dump=$top_builddir/gguf-dump
fi
[ -x "$dump" ] || die "$dump: not built (run make first)"

if [ -n "${BENCH_MODEL:-}" ]; then
    model=$BENCH_MODEL
    [ -r "$model" ] || die "$model: cannot read"
else
    model=$cache/qwen2-1.5b-f16.gguf
    if [ ! -f "$model" ]; then
        mkdir -p "$cache" || die "$cache: cannot create"
        synth=$top_builddir/tests/gguf-synth
        [ -x "$synth" ] || die "$synth: not built (run make check or make bench)"
        echo "generating $model (once; kept for later runs)"
        "$synth" --size 1.5b --type f16 --seed 1 -o "$model" ||
            die "$model: gguf-synth failed"
    fi
fi

# best_ms N CMD...: runs CMD once to warm the page cache, then N times with
# output discarded; prints the best wall time in milliseconds (3 decimals).
# Fails when CMD fails.  The clock is bash's EPOCHREALTIME, read without a
# subshell; stripping its decimal separator (which follows the locale) gives
# microseconds.
best_ms() {
    local n=$1 best= t0 t1 d i
    shift
    "$@" > /dev/null 2>&1 || return 1
    for ((i = 0; i < n; i++)); do
        t0=${EPOCHREALTIME//[.,]/}
        "$@" > /dev/null 2>&1 || return 1
        t1=${EPOCHREALTIME//[.,]/}
        d=$((t1 - t0))
        if [ -z "$best" ] || [ "$d" -lt "$best" ]; then best=$d; fi
    done
    printf '%d.%03d\n' $((best / 1000)) $((best % 1000))
}

size=$(stat -c %s "$model") || die "$model: cannot stat"
echo "model: $model ($((size / 1048576)) MiB)"
echo "gguf-dump: $dump; best of $runs runs, page cache warm"

text_ms=$(best_ms "$runs" "$dump" "$model") || die "gguf-dump $model failed"
json_ms=$(best_ms "$runs" "$dump" --json "$model") || die "gguf-dump --json $model failed"
printf '  %-28s %10s ms   (goal: under 20 ms)\n' "gguf-dump" "$text_ms"
printf '  %-28s %10s ms   (goal: under 100 ms)\n' "gguf-dump --json" "$json_ms"

if [ -z "$python" ]; then
    echo "peer gguf-py: skipped (BENCH_PYTHON is empty)"
    exit 0
fi
if ! "$python" -c 'import gguf.scripts.gguf_dump' > /dev/null 2>&1; then
    echo "peer gguf-py: skipped ('$python -c \"import gguf\"' fails; pip install gguf to compare)"
    exit 0
fi
peer_version=$("$python" -c 'import importlib.metadata as m; print(m.version("gguf"))' 2>/dev/null)
echo "peer: gguf-py ${peer_version:-(unknown version)} gguf_dump ($python), best of $peer_runs runs"
# gguf-py's --json leaves arrays out unless --json-array is given; gguf-dump
# --json always prints them complete, so the fair peer has both flags.
peer_text=$(best_ms "$peer_runs" "$python" -m gguf.scripts.gguf_dump "$model") ||
    die "gguf-py gguf_dump $model failed"
peer_json=$(best_ms "$peer_runs" "$python" -m gguf.scripts.gguf_dump --json --json-array "$model") ||
    die "gguf-py gguf_dump --json --json-array $model failed"
printf '  %-28s %10s ms\n' "gguf_dump" "$peer_text"
printf '  %-28s %10s ms\n' "gguf_dump --json --json-array" "$peer_json"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "n/a" }'; }
echo "ratio (gguf-py time / gguf-dump time; above 1 means gguf-dump is faster):"
echo "  text:  $(ratio "$peer_text" "$text_ms")"
echo "  json:  $(ratio "$peer_json" "$json_ms")"
exit 0
