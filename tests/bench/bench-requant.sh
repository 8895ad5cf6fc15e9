#!/bin/bash
# bench-requant.sh -- how fast gguf-requant turns Q6_K tensors into Q4_K,
# or (BENCH_PRESET) quantizes an F16 model to one of llama-quantize's file
# types.
#
# Converts every Q6_K tensor of the 1.5b synthetic Qwen2 model in Q4_K_M
# (token_embd, half of the attn_v and ffn_down tensors; generated once with
# tests/gguf-synth and kept in the cache directory) to Q4_K with 2 threads:
#
#   gguf-requant --from q6_k --to q4_k -t 2 IN OUT
#
# When LLAMA_QUANTIZE names llama.cpp's llama-quantize, it does the same
# conversion side by side,
#
#   llama-quantize --allow-requantize --tensor-type attn_v=q4_k
#       --tensor-type ffn_down=q4_k --token-embedding-type q4_k IN OUT2 Q4_K_M 2
#
# the ratio of the two times is printed, and every tensor of OUT is compared
# byte for byte with the same tensor of OUT2 ("identical tensor bytes: yes"
# or the first tensor that differs).  Times are best of N runs with the page
# cache warm, wall clock and the CPU time of that run (on a shared machine
# the CPU ratio is the steadier one); they are reported, never judged: the
# script fails only when something could not run.  The outputs (about 1 GB
# each) go to a temporary directory that is removed at exit.
#
# With BENCH_PRESET=NAME (Q4_K_M ...), the 1.5b model in F16 is quantized
# instead, with gguf-requant --preset NAME -t 2 IN OUT and, side by side,
# llama-quantize IN OUT2 NAME 2 (goal: at least 4x faster).  With
# BENCH_IMATRIX=FILE as well, both quantize with that importance matrix
# (--imatrix FILE; make one with llama-imatrix on the model).
#
# Environment:
#   BENCH_PRESET     quantize F16 to this file type instead ("all": each of
#                    the 16 in turn)
#   BENCH_IMATRIX    with BENCH_PRESET: the importance matrix both use
#   BENCH_DIR        cache directory for generated models
#                    (default: $top_builddir/tests/bench/cache)
#   BENCH_MODEL      convert this file instead of the generated model
#   BENCH_RUNS       runs per command, best one reported (default 3)
#   BENCH_THREADS    threads for both tools (default 2)
#   LLAMA_QUANTIZE   llama-quantize to compare with (unset: no comparison)
#   GGUF_REQUANT     the gguf-requant binary to time (default: the build's)
#   GGUF_DUMP        the gguf-dump binary used to locate tensors
#   TMPDIR           where the outputs are written (default /tmp)

set -u
me=bench-requant
. "${top_srcdir:-.}/tests/bench/common.sh"
runs=${BENCH_RUNS:-3}
threads=${BENCH_THREADS:-2}

requant=${GGUF_REQUANT:-$(tool gguf-requant)}
dump=${GGUF_DUMP:-$(tool gguf-dump)}
[ -x "$requant" ] || die "$requant: not built (run make first)"
[ -x "$dump" ] || die "$dump: not built (run make first)"
command -v python3 > /dev/null 2>&1 || die "python3 not found (needed to read gguf-dump --json)"

preset=${BENCH_PRESET:-}
if [ "$preset" = all ]; then
    # every file type in turn, each a run of this script
    for p in Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K F16 BF16; do
        BENCH_PRESET=$p bash "$0" || exit $?
    done
    exit 0
fi
imatrix=${BENCH_IMATRIX:-}
[ -z "$imatrix" ] || [ -n "$preset" ] || die "BENCH_IMATRIX goes with BENCH_PRESET"
[ -z "$imatrix" ] || [ -r "$imatrix" ] || die "$imatrix: cannot read (BENCH_IMATRIX)"
if [ -n "$preset" ]; then bench_model f16; else bench_model q4_k_m; fi

# tensors FILE: prints one line per tensor, "name type offset bytes", from
# gguf-dump --json (absolute offsets).
tensors() {
    "$dump" --json "$1" > "$tmp/dump.json" || return 1
    python3 -c '
import json, sys
for t in json.load(open(sys.argv[1]))["tensors"]:
    print(t["name"], t["type"], t["offset"], t["bytes"])
' "$tmp/dump.json"
}

size=$(stat -L -c %s "$model") || die "$model: cannot stat"
tensors "$model" > "$tmp/in.list" || die "$model: gguf-dump --json failed"
n_q6=$(awk '$2 == "Q6_K" { n++; w += $4 } END { printf "%d tensors, %.0f MiB", n, w / 1048576 }' "$tmp/in.list")
if [ -n "$preset" ]; then
    echo "model: $model ($((size / 1048576)) MiB) to $preset${imatrix:+ with the importance matrix $imatrix}"
else
    echo "model: $model ($((size / 1048576)) MiB; Q6_K: $n_q6)"
fi
echo "threads: $threads; best of $runs runs, page cache warm"

out=$tmp/requant.gguf
if [ -n "$preset" ]; then
    ours_args=(--preset "$preset")
    [ -z "$imatrix" ] || ours_args+=(--imatrix "$imatrix")
    goal="at least 4x faster than llama-quantize"
else
    ours_args=(--from q6_k --to q4_k)
    goal="at least 2x faster than llama-quantize"
fi
read -r ours ours_cpu <<< "$(best_ms "$runs" "$tmp/requant.log" "$requant" -q "${ours_args[@]}" \
    -t "$threads" "$model" "$out")"
if [ -z "$ours" ]; then
    tail -n 20 "$tmp/requant.log" >&2
    die "gguf-requant $model failed"
fi
printf '  %-16s %10s ms wall %8s ms CPU   (goal: %s)\n' "gguf-requant" "$ours" "$ours_cpu" "$goal"

if [ -z "${LLAMA_QUANTIZE:-}" ]; then
    echo "peer llama-quantize: skipped (set LLAMA_QUANTIZE to the path of llama.cpp's llama-quantize to compare)"
    exit 0
fi
[ -x "$LLAMA_QUANTIZE" ] || die "$LLAMA_QUANTIZE: not an executable (LLAMA_QUANTIZE)"

out2=$tmp/llama-quantize.gguf
if [ -n "$preset" ]; then
    peer_args=("$model" "$out2" "$preset" "$threads")
    [ -z "$imatrix" ] || peer_args=(--imatrix "$imatrix" "${peer_args[@]}")
else
    peer_args=(--allow-requantize --tensor-type attn_v=q4_k --tensor-type ffn_down=q4_k
               --token-embedding-type q4_k "$model" "$out2" Q4_K_M "$threads")
fi
read -r peer peer_cpu <<< "$(best_ms "$runs" "$tmp/peer.log" "$LLAMA_QUANTIZE" "${peer_args[@]}")"
if [ -z "$peer" ]; then
    tail -n 20 "$tmp/peer.log" >&2
    die "llama-quantize $model failed"
fi
printf '  %-16s %10s ms wall %8s ms CPU\n' "llama-quantize" "$peer" "$peer_cpu"
echo "ratio (llama-quantize / gguf-requant; above 1 means gguf-requant is faster):" \
    "wall $(ratio "$peer" "$ours"), CPU $(ratio "$peer_cpu" "$ours_cpu")"

# Tensor by tensor, by name: same type, same size, same bytes.  Metadata is
# not compared: each tool records its own provenance.
tensors "$out" > "$tmp/out.list" || die "$out: gguf-dump --json failed"
tensors "$out2" > "$tmp/out2.list" || die "$out2: gguf-dump --json failed"
first=
n=0
while read -r name type off len; do
    n=$((n + 1))
    read -r type2 off2 len2 <<< "$(awk -v n="$name" '$1 == n { print $2, $3, $4; exit }' "$tmp/out2.list")"
    if [ -z "${type2:-}" ]; then
        first="$name (not in llama-quantize's output)"
    elif [ "$type" != "$type2" ]; then
        first="$name (type $type, llama-quantize: $type2)"
    elif [ "$len" != "$len2" ]; then
        first="$name ($len bytes, llama-quantize: $len2)"
    elif ! cmp -s -n "$len" -i "$off:$off2" "$out" "$out2"; then
        first="$name ($type: $(cmp -n "$len" -i "$off:$off2" "$out" "$out2" 2>&1 |
            sed -n 's/.* differ: byte \([0-9]*\).*/first difference at byte \1 of the tensor/p'))"
    fi
    [ -z "$first" ] || break
done < "$tmp/out.list"
n2=$(wc -l < "$tmp/out2.list")
if [ -z "$first" ] && [ "$n" -ne "$n2" ]; then
    first="(tensor counts differ: $n, llama-quantize: $n2)"
fi
if [ -z "$first" ]; then
    echo "identical tensor bytes: yes ($n tensors)"
else
    echo "identical tensor bytes: no; first differing tensor: $first"
fi
exit 0
