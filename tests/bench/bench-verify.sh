#!/bin/bash
# bench-verify.sh -- how fast gguf-verify hashes a model: per-tensor XXH3
# plus the whole-file and metadata hashes of the 1.5b synthetic Qwen2 model
# in Q4_K_M (about 1 GB; generated once with tests/gguf-synth and kept in
# the cache directory), with the page cache warm,
#
#   gguf-verify -q -w MODEL > /dev/null
#
# side by side with `xxhsum -H3 MODEL` (the same bytes, whole file only)
# and, when LLAMA_GGUF_HASH names llama.cpp's llama-gguf-hash, with
# `llama-gguf-hash --xxh64 MODEL` (per-tensor XXH64 and XXH64 of all tensor
# data).  Prints each time and the ratios (goals: at most 1.5x the time of
# xxhsum -H3, at least 4x faster than llama-gguf-hash --xxh64), checks that
# the whole-file value equals xxhsum's and that the per-tensor XXH64 values
# (gguf-verify -w -a xxh64) equal llama-gguf-hash's.  Times are best of N
# runs, wall clock and the CPU time of that run; they are reported, never
# judged: the script fails only when something could not run or a value
# differs.
#
# Environment:
#   BENCH_DIR        cache directory for generated models
#                    (default: $top_builddir/tests/bench/cache)
#   BENCH_MODEL      hash this file instead of the generated model
#   BENCH_RUNS       runs per command, best one reported (default 5)
#   LLAMA_GGUF_HASH  llama-gguf-hash to compare with (unset: no comparison)
#   GGUF_VERIFY      the gguf-verify binary to time (default: the build's)

set -u
me=bench-verify
. "${top_srcdir:-.}/tests/bench/common.sh"
runs=${BENCH_RUNS:-5}

verify=${GGUF_VERIFY:-$(tool gguf-verify)}
[ -x "$verify" ] || die "$verify: not built (run make first)"
command -v xxhsum > /dev/null 2>&1 || die "xxhsum not found (install xxhash)"

bench_model q4_k_m

size=$(stat -L -c %s "$model") || die "$model: cannot stat"
echo "model: $model ($((size / 1048576)) MiB)"
echo "best of $runs runs, page cache warm"

read -r ours ours_cpu <<< "$(best_ms "$runs" "$tmp/ours.out" "$verify" -q -w "$model")"
[ -n "$ours" ] || { tail -n 5 "$tmp/ours.out" >&2; die "gguf-verify -w $model failed"; }
n_lines=$(wc -l < "$tmp/ours.out")
printf '  %-32s %10s ms wall %8s ms CPU   (%d manifest lines)\n' "gguf-verify -w (xxh3)" \
    "$ours" "$ours_cpu" "$n_lines"

read -r xx xx_cpu <<< "$(best_ms "$runs" "$tmp/xxhsum.out" xxhsum -H3 "$model")"
[ -n "$xx" ] || { cat "$tmp/xxhsum.out" >&2; die "xxhsum -H3 $model failed"; }
printf '  %-32s %10s ms wall %8s ms CPU\n' "xxhsum -H3 (whole file only)" "$xx" "$xx_cpu"
echo "ratio gguf-verify / xxhsum -H3 (goal: at most 1.5x): wall $(ratio "$ours" "$xx"), CPU $(ratio "$ours_cpu" "$xx_cpu")"

status=0
want=$(grep -Eo '[0-9a-f]{16}' "$tmp/xxhsum.out" | head -n 1)
got=$(head -n 1 "$tmp/ours.out" | awk '{ print $2 }')
if [ "$want" = "$got" ]; then
    echo "whole-file XXH3 equals xxhsum's: yes ($got)"
else
    echo "whole-file XXH3 equals xxhsum's: NO (gguf-verify $got, xxhsum $want)"
    status=1
fi

if [ -z "${LLAMA_GGUF_HASH:-}" ]; then
    echo "peer llama-gguf-hash: skipped (set LLAMA_GGUF_HASH to the path of llama.cpp's llama-gguf-hash to compare)"
    exit $status
fi
[ -x "$LLAMA_GGUF_HASH" ] || die "$LLAMA_GGUF_HASH: not an executable (LLAMA_GGUF_HASH)"
read -r peer peer_cpu <<< "$(best_ms "$runs" "$tmp/peer.out" "$LLAMA_GGUF_HASH" --xxh64 "$model")"
[ -n "$peer" ] || { tail -n 5 "$tmp/peer.out" >&2; die "llama-gguf-hash --xxh64 $model failed"; }
printf '  %-32s %10s ms wall %8s ms CPU\n' "llama-gguf-hash --xxh64" "$peer" "$peer_cpu"
echo "ratio llama-gguf-hash / gguf-verify (goal: at least 4x): wall $(ratio "$peer" "$ours"), CPU $(ratio "$peer_cpu" "$ours_cpu")"

# The same XXH64 per tensor: llama-gguf-hash's "xxh64  HEX  FILE:TENSOR"
# lines against gguf-verify -w -a xxh64.
"$verify" -q -w -a xxh64 "$model" | awk 'NR > 2 { print $2, $3 }' | sort > "$tmp/ours64" ||
    die "gguf-verify -w -a xxh64 failed"
awk -v m="$model" '$1 == "xxh64" && index($3, m ":") == 1 { print $2, $3 }' "$tmp/peer.out" |
    sort > "$tmp/peer64"
n=$(wc -l < "$tmp/peer64")
if [ "$n" -gt 0 ] && cmp -s "$tmp/ours64" "$tmp/peer64"; then
    echo "per-tensor XXH64 equal to llama-gguf-hash's: yes ($n tensors)"
else
    echo "per-tensor XXH64 equal to llama-gguf-hash's: NO"
    diff "$tmp/ours64" "$tmp/peer64" | head -n 5
    status=1
fi
exit $status
