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
me=bench-dump
. "${top_srcdir:-.}/tests/bench/common.sh"
runs=${BENCH_RUNS:-10}
peer_runs=${BENCH_PEER_RUNS:-3}
python=${BENCH_PYTHON-python3}

dump=${GGUF_DUMP:-$(tool gguf-dump)}
[ -x "$dump" ] || die "$dump: not built (run make first)"
bench_model f16

# wall_ms N CMD...: the best wall time of CMD in ms, output discarded (see
# best_ms).
wall_ms() {
    local n=$1 wall cpu
    shift
    read -r wall cpu <<< "$(best_ms "$n" /dev/null "$@")"
    [ -n "$wall" ] && echo "$wall"
}

size=$(stat -L -c %s "$model") || die "$model: cannot stat"
echo "model: $model ($((size / 1048576)) MiB)"
echo "gguf-dump: $dump; best of $runs runs, page cache warm"

text_ms=$(wall_ms "$runs" "$dump" "$model") || die "gguf-dump $model failed"
json_ms=$(wall_ms "$runs" "$dump" --json "$model") || die "gguf-dump --json $model failed"
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
peer_text=$(wall_ms "$peer_runs" "$python" -m gguf.scripts.gguf_dump "$model") ||
    die "gguf-py gguf_dump $model failed"
peer_json=$(wall_ms "$peer_runs" "$python" -m gguf.scripts.gguf_dump --json --json-array "$model") ||
    die "gguf-py gguf_dump --json --json-array $model failed"
printf '  %-28s %10s ms\n' "gguf_dump" "$peer_text"
printf '  %-28s %10s ms\n' "gguf_dump --json --json-array" "$peer_json"

echo "ratio (gguf-py time / gguf-dump time; above 1 means gguf-dump is faster):"
echo "  text:  $(ratio "$peer_text" "$text_ms" 1)"
echo "  json:  $(ratio "$peer_json" "$json_ms" 1)"
exit 0
