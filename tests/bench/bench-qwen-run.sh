#!/bin/bash
# bench-qwen-run.sh -- qwen-run's prompt and generation speed.
#
# On the 1.5b synthetic Qwen2 model in Q4_K_M (generated once with
# tests/gguf-synth and kept in the cache directory), with 2 threads:
#
#   qwen-run -m MODEL --raw -f PROMPT -n 64 --temp 0 --ignore-eos --stats -t 2
#
# where PROMPT is a text of exactly 128 tokens; the speeds are those
# --stats prints.  When LLAMA_BENCH names llama.cpp's llama-bench, it runs
# on the same file with the same threads, side by side,
#
#   llama-bench -m MODEL -t 2 -p 128 -n 64 -r 1 -o csv
#
# alternating with qwen-run round after round (a noisy machine then slows
# both alike), and the ratios of the best speeds are printed.  llama-bench
# times its generation from an empty context, qwen-run's follows the 128
# prompt tokens (slightly more attention work for qwen-run).  Speeds are
# reported, never judged: the script fails only when something could not
# run.
#
# The decode speed is also given as GB/s of weights read (every tensor's
# bytes, see decode_bytes in common.sh) and as a share of the read
# bandwidth tests/bench/bench-mem measures with the same threads, in every
# round of the same run: the best decode over the best read, and, as this
# machine's bandwidth moves from minute to minute, each round's decode over
# the mean of the reads just before and just after it (the median and the
# range of the rounds, and the bandwidth of the round with the best share).
#
# Environment:
#   BENCH_DIR        cache directory for generated models
#                    (default: $top_builddir/tests/bench/cache)
#   BENCH_MODEL      run this file instead of the generated model
#   BENCH_RUNS       rounds, the best one reported (default 3)
#   BENCH_THREADS    threads for both (default 2)
#   BENCH_PROMPT     prompt tokens (default 128)
#   BENCH_GEN        generated tokens (default 64)
#   BENCH_DEPTH      generation after a long context: a prompt of this many
#                    tokens (in place of BENCH_PROMPT), and llama-bench's
#                    generation timed at that depth (-p 0 -n GEN -d DEPTH;
#                    its prompt speed from -p DEPTH -n 0, from empty, as
#                    ours is)
#   LLAMA_BENCH      llama-bench to compare with (unset: no comparison)
#   QWEN_RUN         the qwen-run binary to time (default: the build's)

set -u
me=bench-qwen-run
. "${top_srcdir:-.}/tests/bench/common.sh"
runs=${BENCH_RUNS:-3}
threads=${BENCH_THREADS:-2}
n_prompt=${BENCH_PROMPT:-128}
n_gen=${BENCH_GEN:-64}
depth=${BENCH_DEPTH:-}
ctx=()
if [ -n "$depth" ]; then
    n_prompt=$depth
    ctx=(-c $((depth + n_gen)))
fi

run=${QWEN_RUN:-$(tool qwen-run)}
[ -x "$run" ] || die "$run: not built (run make first)"

bench_model q4_k_m

exact_prompt "$run" "$model" "$n_prompt"

echo "model: $model ($(($(stat -L -c %s "$model") / 1048576)) MiB)"
echo "threads: $threads; prompt $n_prompt tokens, generation $n_gen tokens${depth:+ after them (llama-bench: at depth $depth)}; best of $runs rounds"

# ours: runs qwen-run once; sets pp and tg to its two speeds.
ours() {
    "$run" -m "$model" --raw -f "$tmp/prompt" -n "$n_gen" --temp 0 --ignore-eos --stats \
        -t "$threads" "${ctx[@]}" > /dev/null 2> "$tmp/ours.err" || return 1
    pp=$(awk '$1 == "prompt:" { print $4 }' "$tmp/ours.err")
    tg=$(awk '$1 == "generation:" { print $4 }' "$tmp/ours.err")
    [ -n "$pp" ] && [ -n "$tg" ]
}

# peer: runs llama-bench once; sets pp and tg to the two speeds it reports.
peer() {
    if [ -n "$depth" ]; then
        "$LLAMA_BENCH" -m "$model" -t "$threads" -p "$n_prompt" -n 0 -r 1 -o csv \
            > "$tmp/peer.csv" 2> "$tmp/peer.err" &&
            "$LLAMA_BENCH" -m "$model" -t "$threads" -p 0 -n "$n_gen" -d "$depth" -r 1 -o csv \
                > "$tmp/peer-tg.csv" 2>> "$tmp/peer.err" || return 1
        tail -n +2 "$tmp/peer-tg.csv" >> "$tmp/peer.csv"
    else
        "$LLAMA_BENCH" -m "$model" -t "$threads" -p "$n_prompt" -n "$n_gen" -r 1 -o csv \
            > "$tmp/peer.csv" 2> "$tmp/peer.err" || return 1
    fi
    read -r pp tg < <(llama_bench_speeds "$tmp/peer.csv")
    [ -n "$pp" ] && [ -n "$tg" ]
}

# max A B: the larger of two decimals.
max() { awk -v a="$1" -v b="$2" 'BEGIN { print (b == "" || a + 0 > b + 0) ? a : b }'; }

with_peer=0
if [ -n "${LLAMA_BENCH:-}" ]; then
    [ -x "$LLAMA_BENCH" ] || die "$LLAMA_BENCH: not an executable (LLAMA_BENCH)"
    with_peer=1
fi

# bench-mem's read bandwidth with the same threads, taken in every round
# (this machine's bandwidth moves with its neighbours' load from minute to
# minute), the best of them against the best decode
mem=$top_builddir/tests/bench/bench-mem
bw='' last_bw=''
membench() {
    [ -x "$mem" ] || return 0
    last_bw=$("$mem" -t "$threads" | sed -n 's/^read bandwidth: \([0-9.]*\) GB\/s.*/\1/p')
    [ -n "$last_bw" ] || die "$mem failed"
    bw=$(max "$last_bw" "$bw")
}
: > "$tmp/rounds" # per round: decode tok/s, the reads before and after it

ours || { cat "$tmp/ours.err" >&2; die "qwen-run failed"; } # warm the page cache
our_pp='' our_tg='' peer_pp='' peer_tg=''
for ((r = 0; r < runs; r++)); do
    membench
    before=$last_bw
    ours || { cat "$tmp/ours.err" >&2; die "qwen-run failed"; }
    our_pp=$(max "$pp" "$our_pp")
    our_tg=$(max "$tg" "$our_tg")
    membench
    [ -n "$before" ] && echo "$tg $before $last_bw" >> "$tmp/rounds"
    if [ "$with_peer" = 1 ]; then
        peer || { cat "$tmp/peer.err" >&2; die "llama-bench failed"; }
        peer_pp=$(max "$pp" "$peer_pp")
        peer_tg=$(max "$tg" "$peer_tg")
    fi
done

printf '  %-12s prompt %8.2f tok/s   generation %8.2f tok/s\n' qwen-run "$our_pp" "$our_tg"
# Decode against the memory: the bytes a step reads times its speed, over
# the best read bandwidth bench-mem measured with the same threads in the
# rounds.
if [ -n "$bw" ]; then
    bytes=$(decode_bytes "$model") || die "$model: cannot read its tensor sizes"
    awk -v tg="$our_tg" -v b="$bytes" -v bw="$bw" 'BEGIN {
        printf "  decode reads %.0f MiB a token: %.1f GB/s, %.0f%% of the %.1f GB/s bench-mem read (best of the rounds)\n",
            b / 1048576, tg * b / 1e9, 100 * tg * b / 1e9 / bw, bw }'
    sort -n < <(awk -v b="$bytes" '{ bw = ($2 + $3) / 2; printf "%.4f %.1f\n", $1 * b / 1e9 / bw, bw }' "$tmp/rounds") |
        awk '{ s[NR] = $1; w[NR] = $2 } END {
            printf "  paired with the reads around it: %.0f%% (median of %d rounds; %.0f-%.0f%%; the best at %.1f GB/s)\n",
                100 * (NR % 2 ? s[(NR + 1) / 2] : (s[NR / 2] + s[NR / 2 + 1]) / 2), NR, 100 * s[1], 100 * s[NR], w[NR] }'
else
    echo "  (tests/bench/bench-mem not built: make bench builds it; no bandwidth figures)"
fi
if [ "$with_peer" = 0 ]; then
    echo "peer llama-bench: skipped (set LLAMA_BENCH to the path of llama.cpp's llama-bench to compare)"
    exit 0
fi
printf '  %-12s prompt %8.2f tok/s   generation %8.2f tok/s\n' llama-bench "$peer_pp" "$peer_tg"
[ -n "${bw:-}" ] && awk -v tg="$peer_tg" -v b="$bytes" -v bw="$bw" 'BEGIN {
    printf "  llama.cpp decode: %.1f GB/s, %.0f%% of it\n", tg * b / 1e9, 100 * tg * b / 1e9 / bw }'
echo "  qwen-run / llama.cpp: prompt $(ratio "$our_pp" "$peer_pp"), generation $(ratio "$our_tg" "$peer_tg")" \
    "(goal: at least 1.00x both)"
