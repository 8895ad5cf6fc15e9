#!/bin/bash
# bench-prompt-cache.sh -- time to the first token with and without
# qwen-run --prompt-cache, for a long system prompt.
#
# On the 1.5b synthetic Qwen2 model in Q4_K_M (the one bench-qwen-run.sh
# uses), with 2 threads: a system prompt of BENCH_SYSTEM tokens (default
# 500, the text itself; the template adds a few), and a short question,
#
#   qwen-run -m MODEL --system SYSTEM -p QUESTION -n 1 --temp 0 --json -t 2
#
# without a cache, and with a cache that a first run (not timed) made with
# another question.  The time to the first token is the prompt pass, the
# "prompt_seconds" of --json (the token is chosen right after it); the wall
# time of the whole run, which includes loading the model and reading the
# cache, is given too.  Rounds alternate the two; the best of each is
# reported, never judged: the script fails only when something could not
# run, or when the replies differ.
#
# Environment:
#   BENCH_DIR, BENCH_MODEL, BENCH_THREADS as for bench-qwen-run.sh
#   BENCH_RUNS       rounds, the best one reported (default 3)
#   BENCH_SYSTEM     tokens of the system prompt's text (default 500)
#   QWEN_RUN         the qwen-run binary to time (default: the build's)

set -u
me=bench-prompt-cache
. "${top_srcdir:-.}/tests/bench/common.sh"
runs=${BENCH_RUNS:-3}
threads=${BENCH_THREADS:-2}
n_system=${BENCH_SYSTEM:-500}

run=${QWEN_RUN:-$(tool qwen-run)}
[ -x "$run" ] || die "$run: not built (run make first)"

bench_model q4_k_m
exact_prompt "$run" "$model" "$n_system"
system=$(cat "$tmp/prompt")
cache_file=$tmp/cache.gguf

echo "model: $model ($(($(stat -L -c %s "$model") / 1048576)) MiB)"
echo "threads: $threads; a system prompt of $n_system tokens of text; best of $runs rounds"

# once QUESTION [CACHE]: one run; sets ttft (s), wall (s), cached, tokens
# and reply.
once() {
    local q=$1 t0 t1
    shift
    t0=${EPOCHREALTIME//[.,]/}
    "$run" -m "$model" --system "$system" -p "$q" -n 1 --temp 0 --json -t "$threads" "$@" \
        > "$tmp/out.json" 2> "$tmp/err" || die "qwen-run failed: $(cat "$tmp/err")"
    t1=${EPOCHREALTIME//[.,]/}
    wall=$(awk -v d=$((t1 - t0)) 'BEGIN { printf "%.3f", d / 1e6 }')
    read -r ttft cached tokens reply < <(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print("%.3f" % d["prompt_seconds"], d["cached_tokens"], d["prompt_tokens"], json.dumps(d["reply"]))' "$tmp/out.json")
}

once "What is the first question?" --prompt-cache "$cache_file"
[ -s "$cache_file" ] || die "no cache was written"
# each timed run starts from this cache (a run leaves its own prompt there)
cp "$cache_file" "$tmp/first.gguf" || die "cannot copy the cache"
echo "cache: $(($(stat -c %s "$cache_file") / 1024)) KiB for $tokens prompt tokens"

best_plain='' best_cached='' wall_plain='' wall_cached=''
for ((r = 0; r < runs; r++)); do
    once "And what is the second one?"
    plain_reply=$reply
    if [ -z "$best_plain" ] || awk -v a="$ttft" -v b="$best_plain" 'BEGIN { exit !(a < b) }'; then
        best_plain=$ttft wall_plain=$wall
    fi
    n_tokens=$tokens
    cp "$tmp/first.gguf" "$cache_file" || die "cannot copy the cache"
    once "And what is the second one?" --prompt-cache "$cache_file"
    [ "$reply" = "$plain_reply" ] || die "the replies differ with the cache: $reply, $plain_reply"
    if [ -z "$best_cached" ] || awk -v a="$ttft" -v b="$best_cached" 'BEGIN { exit !(a < b) }'; then
        best_cached=$ttft wall_cached=$wall
    fi
    n_cached=$cached
done

echo "prompt: $n_tokens tokens; $n_cached of them from the cache"
printf '%-28s %10s %10s\n' "" "first token" "whole run"
printf '%-28s %9ss %9ss\n' "without --prompt-cache" "$best_plain" "$wall_plain"
printf '%-28s %9ss %9ss\n' "with --prompt-cache" "$best_cached" "$wall_cached"
echo "time to the first token: $(ratio "$best_plain" "$best_cached" 1) faster with the cache"
