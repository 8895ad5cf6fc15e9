#!/bin/bash
# bench-batched.sh -- qwen-run's batched decoding: many conversations at
# once with --each-line --parallel N.
#
# On the 1.5b synthetic Qwen2 model in Q4_K_M (generated once with
# tests/gguf-synth and kept in the cache directory), with 2 threads: 32
# input lines of 32 tokens each (raw, no chat template), 64 tokens
# generated for each, for N = 1, 4, 8, 16 and 32:
#
#   qwen-run -m MODEL --raw --each-line --parallel N -n 64 --temp 0 \
#       --ignore-eos --stats -t 2 < LINES
#
# The aggregate generation speed is what --stats prints: generated tokens
# over the time of the decode steps that generated them (a step that also
# feeds prompt tokens is shared between the two by its tokens).  The
# end-to-end figure is all generated tokens over the whole run's wall time,
# prompts included.
#
# When LLAMA_BATCHED_BENCH names llama.cpp's llama-batched-bench (or
# LLAMA_BENCH names llama-bench, whose sibling it then is), it runs on the
# same file with the same threads, side by side, at each N:
#
#   llama-batched-bench -m MODEL -t 2 -c C -npp 32 -ntg 64 -npl N
#
# which decodes N prompts of 32 tokens, then N tokens a step 64 times; its
# S_TG (generated tokens per second of the generation phase) is compared
# with our aggregate generation speed, and its S (all tokens per second)
# is printed beside.  Speeds are reported, never judged: the script fails
# only when something could not run.
#
# Environment:
#   BENCH_DIR            cache directory for generated models
#                        (default: $top_builddir/tests/bench/cache)
#   BENCH_MODEL          run this file instead of the generated model
#   BENCH_THREADS        threads for both (default 2)
#   BENCH_PARALLEL       the values of N (default "1 4 8 16 32")
#   BENCH_LINES          input lines (default 32)
#   BENCH_GEN            generated tokens a line (default 64)
#   LLAMA_BATCHED_BENCH  llama-batched-bench to compare with
#   LLAMA_BENCH          llama-bench, whose sibling llama-batched-bench is used
#   QWEN_RUN             the qwen-run binary to time (default: the build's)

set -u
me=bench-batched
. "${top_srcdir:-.}/tests/bench/common.sh"
threads=${BENCH_THREADS:-2}
widths=${BENCH_PARALLEL:-1 4 8 16 32}
n_lines=${BENCH_LINES:-32}
n_gen=${BENCH_GEN:-64}
n_prompt=32

run=${QWEN_RUN:-$(tool qwen-run)}
[ -x "$run" ] || die "$run: not built (run make first)"

bench_model q4_k_m

peer=${LLAMA_BATCHED_BENCH:-}
if [ -z "$peer" ] && [ -n "${LLAMA_BENCH:-}" ]; then peer=$(dirname "$LLAMA_BENCH")/llama-batched-bench; fi
if [ -n "$peer" ] && [ ! -x "$peer" ]; then die "$peer: not an executable (LLAMA_BATCHED_BENCH)"; fi

# Lines of exactly n_prompt tokens: n_prompt / 2 words drawn from a fixed
# list (about two tokens a word), fewer while that is too many, then " a"
# added until the count is exact.
count() { "$run" -m "$model" --raw --tokenize -f "$1" 2> "$tmp/tok.err" | wc -w; }
: > "$tmp/lines"
seed=12345
for ((l = 0; l < n_lines; l++)); do
    words=()
    for ((i = 0; i < 2 * n_prompt; i++)); do
        seed=$(((seed * 1103515245 + 12345) % 2147483648))
        w=(the of and to in is was for on that with as by at from his her an were are which this be or
           has had not but one all new more first two after who been also its their than other into most)
        words+=("${w[$((seed / 65536 % ${#w[@]}))]}")
    done
    k=$((n_prompt / 2))
    while :; do
        printf '%s' "${words[*]:0:k}" > "$tmp/line"
        c=$(count "$tmp/line")
        [ "$c" -le "$n_prompt" ] && break
        k=$((k - 1))
    done
    while [ "$c" -lt "$n_prompt" ]; do printf ' a' >> "$tmp/line"; c=$(count "$tmp/line"); done
    [ "$c" -eq "$n_prompt" ] || die "$(cat "$tmp/tok.err") cannot make a line of $n_prompt tokens"
    cat "$tmp/line" >> "$tmp/lines"
    echo >> "$tmp/lines"
done

echo "model: $model ($(($(stat -L -c %s "$model") / 1048576)) MiB)"
echo "threads: $threads; $n_lines lines of $n_prompt tokens, $n_gen generated a line"

# ours N: runs qwen-run with --parallel N; sets tg (aggregate generation
# tok/s), pp (prompt tok/s) and e2e (generated tokens over the wall time).
ours() {
    local t0 t1
    t0=${EPOCHREALTIME//[.,]/}
    "$run" -m "$model" --raw --each-line --parallel "$1" -n "$n_gen" --temp 0 --ignore-eos --stats \
        -t "$threads" < "$tmp/lines" > "$tmp/ours.out" 2> "$tmp/ours.err" || return 1
    t1=${EPOCHREALTIME//[.,]/}
    pp=$(awk '$1 == "prompt:" { print $4 }' "$tmp/ours.err")
    tg=$(awk '$1 == "generation:" { print $4 }' "$tmp/ours.err")
    e2e=$(awk -v n=$((n_lines * n_gen)) -v us=$((t1 - t0)) 'BEGIN { printf "%.2f", n / (us / 1e6) }')
    [ -n "$pp" ] && [ -n "$tg" ] && [ "$(wc -l < "$tmp/ours.out")" -eq "$n_lines" ]
}

# theirs N: runs llama-batched-bench at N; sets ptg (S_TG) and ps (S).
theirs() {
    "$peer" -m "$model" -t "$threads" -c $((($1 * (n_prompt + n_gen) + 255) / 256 * 256 + 256)) \
        -npp "$n_prompt" -ntg "$n_gen" -npl "$1" --output-format jsonl > "$tmp/peer.out" 2> "$tmp/peer.err" ||
        return 1
    read -r ptg ps < <(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    l = l.strip()
    if l.startswith("{"):
        o = json.loads(l)
        print("%.2f %.2f" % (o["speed_tg"], o["speed"]))' "$tmp/peer.out")
    [ -n "$ptg" ]
}

ours 1 || { cat "$tmp/ours.err" >&2; die "qwen-run failed"; } # warm the page cache
printf '  %4s  %14s %14s %14s' N "qwen-run tg" "prompt" "end-to-end"
[ -n "$peer" ] && printf ' %14s %14s %8s' "llama.cpp S_TG" "S" "ratio"
echo
base=''
for n in $widths; do
    ours "$n" || { cat "$tmp/ours.err" >&2; die "qwen-run --parallel $n failed"; }
    [ -z "$base" ] && base=$tg
    printf '  %4d  %14.2f %14.2f %14.2f' "$n" "$tg" "$pp" "$e2e"
    if [ -n "$peer" ]; then
        theirs "$n" || { cat "$tmp/peer.err" >&2; die "llama-batched-bench failed"; }
        printf ' %14.2f %14.2f %8s' "$ptg" "$ps" "$(ratio "$tg" "$ptg")"
    fi
    printf '   (%s of N=%s)\n' "$(ratio "$tg" "$base")" "${widths%% *}"
done
echo "goals: N=16 at least 4x N=1; at least llama.cpp's S_TG at every N"
[ -z "$peer" ] && echo "peer llama-batched-bench: skipped (set LLAMA_BATCHED_BENCH or LLAMA_BENCH to compare)"
exit 0
