#!/bin/bash
# bench-cuda.sh -- qwen-run on a CUDA GPU: decode and prefill speed.
#
# On the synthetic Qwen2 models 1.5b and 7b (untied, as the real 7B) in
# Q4_K_M, generated once with tests/gguf-synth into the cache directory:
#
#   prefill pp512:  qwen-run -m MODEL --device cuda --raw -f P512 -n 1 --temp 0 --stats
#   decode tg128:   qwen-run -m MODEL --device cuda --raw -f P16 -n 128 --temp 0
#                            --ignore-eos --stats
#
# P512 and P16 are texts of exactly 512 and 16 tokens; the speeds are those
# --stats prints (prompt and generation), the best of BENCH_RUNS rounds.
# When LLAMA_BENCH names a llama-bench built with CUDA, it runs on the same
# file in the same rounds, side by side:
#
#   llama-bench -m MODEL -ngl 99 -fa 1 -p 512 -n 128 -r 1 -o csv
#
# (llama-bench's tg128 starts from an empty context, ours after 16
# tokens).  The fraction of memory bandwidth of a decode step counts the
# bytes of every weight read once per token (the file's tensor data, the
# embedding rows aside when they are not also the output matrix) over
# BENCH_BANDWIDTH (GB/s; default 4300, what a device-to-device copy
# reaches on an H200, counting bytes read and written).
#
# Without a GPU, or with a qwen-run built without CUDA, it says so and
# exits 0: benchmarks report, they never judge.
#
# Environment:
#   BENCH_DIR BENCH_MODEL BENCH_RUNS (default 3) LLAMA_BENCH QWEN_RUN as in
#   bench-qwen-run.sh; BENCH_SIZES (default "1.5b 7b"); BENCH_BANDWIDTH.

set -u
me=bench-cuda
. "${top_srcdir:-.}/tests/bench/common.sh"
runs=${BENCH_RUNS:-3}
sizes=${BENCH_SIZES:-1.5b 7b}
bandwidth=${BENCH_BANDWIDTH:-4300}

run=${QWEN_RUN:-$(tool qwen-run)}
[ -x "$run" ] || die "$run: not built (run make first)"
if ! "$run" --help | grep -q 'this build: built in'; then
    echo "$me: skipped: this qwen-run has no CUDA backend (./configure --enable-cuda)"
    exit 0
fi
"$top_builddir/tests/gguf-synth" --size tiny -o "$tmp/tiny.gguf" || die "gguf-synth failed"
if ! "$run" -m "$tmp/tiny.gguf" --device cuda -p hi -n 1 --temp 0 > /dev/null 2> "$tmp/gpu.err"; then
    echo "$me: skipped: $(tail -n 1 "$tmp/gpu.err")"
    exit 0
fi
with_peer=0
if [ -n "${LLAMA_BENCH:-}" ]; then
    [ -x "$LLAMA_BENCH" ] || die "$LLAMA_BENCH: not an executable (LLAMA_BENCH)"
    with_peer=1
fi

max() { awk -v a="$1" -v b="$2" 'BEGIN { print (b == "" || a + 0 > b + 0) ? a : b }'; }

# stat_of FILE KEY: the tok/s of --stats' line KEY ("prompt:", "generation:").
stat_of() { awk -v k="$2" '$1 == k { print $4 }' "$1"; }

bench_one() {
    local size=$1 extra=
    [ "$size" = 7b ] && extra=--untied
    bench_model q4_k_m "$size" $extra
    exact_prompt "$run" "$model" 512
    mv "$tmp/prompt" "$tmp/p512"
    exact_prompt "$run" "$model" 16
    mv "$tmp/prompt" "$tmp/p16"
    # weight bytes a decode step reads: the tensor data but unused embeddings
    local bytes
    bytes=$(decode_bytes "$model") || die "$model: cannot read its tensor sizes"
    local pp='' tg='' ppp='' ptg='' r v
    "$run" -m "$model" --device cuda --raw -f "$tmp/p16" -n 8 --temp 0 > /dev/null 2>&1 # warm
    for ((r = 0; r < runs; r++)); do
        "$run" -m "$model" --device cuda --raw -f "$tmp/p512" -n 1 --temp 0 --stats \
            > /dev/null 2> "$tmp/pp.err" || { cat "$tmp/pp.err" >&2; die "qwen-run failed"; }
        pp=$(max "$(stat_of "$tmp/pp.err" prompt:)" "$pp")
        "$run" -m "$model" --device cuda --raw -f "$tmp/p16" -n 128 --temp 0 --ignore-eos \
            --stats > /dev/null 2> "$tmp/tg.err" || { cat "$tmp/tg.err" >&2; die "qwen-run failed"; }
        tg=$(max "$(stat_of "$tmp/tg.err" generation:)" "$tg")
        if [ "$with_peer" = 1 ]; then
            "$LLAMA_BENCH" -m "$model" -ngl 99 -fa 1 -p 512 -n 128 -r 1 -o csv \
                > "$tmp/peer.csv" 2> "$tmp/peer.err" || { cat "$tmp/peer.err" >&2; die "llama-bench failed"; }
            read -r a b < <(llama_bench_speeds "$tmp/peer.csv")
            ppp=$(max "$a" "$ppp")
            ptg=$(max "$b" "$ptg")
        fi
    done
    grep '^device:' "$tmp/tg.err"
    v=$(awk -v t="$tg" -v b="$bytes" -v bw="$bandwidth" 'BEGIN { printf "%.0f GB/s, %.0f%% of %s", t * b / 1e9, 100 * t * b / 1e9 / bw, bw }')
    printf '  %-5s qwen-run     pp512 %9.1f tok/s   tg128 %8.1f tok/s   (decode reads %s MiB a token: %s)\n' \
        "$size" "$pp" "$tg" $((bytes / 1048576)) "$v"
    if [ "$with_peer" = 1 ]; then
        printf '  %-5s llama-bench  pp512 %9.1f tok/s   tg128 %8.1f tok/s\n' "$size" "$ppp" "$ptg"
        echo "  $size qwen-run / llama.cpp: prefill $(ratio "$pp" "$ppp"), decode $(ratio "$tg" "$ptg")"
    fi
}

echo "best of $runs rounds; models: $sizes (Q4_K_M)"
for size in $sizes; do
    bench_one "$size"
done
[ "$with_peer" = 1 ] ||
    echo "peer llama-bench: skipped (set LLAMA_BENCH to a llama-bench built with CUDA to compare)"
exit 0
