# common.sh -- helpers shared by the benchmark scripts (bash; sourced, not
# run).  Set `me` (the script's name, for messages) before sourcing.
#
# Provides: die(), tool(), bench_model(), a temporary directory $tmp
# removed at exit, and the timers cpu_now(), best_ms() and ratio().
# Benchmarks report times and never judge them: they exit 2 only when
# something could not run.

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
cache=${BENCH_DIR:-$top_builddir/tests/bench/cache}

# die MESSAGE: "me: MESSAGE" on stderr, exit 2.
die() { echo "$me: $*" >&2; exit 2; }

# tool NAME: the real binary, not libtool's wrapper script (the wrapper's
# shell start would be timed too); the library is found through
# LD_LIBRARY_PATH.
tool() {
    if [ -x "$top_builddir/.libs/$1" ]; then
        echo "$top_builddir/.libs/$1"
    else
        echo "$top_builddir/$1"
    fi
}
export LD_LIBRARY_PATH="$top_builddir/gguf/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# bench_model TYPE [SIZE [OPTION...]]: sets model to $BENCH_MODEL when
# given, else to the synthetic Qwen2 model of TYPE and SIZE (default 1.5b)
# in the cache directory, generated once with tests/gguf-synth (with the
# further OPTIONs, e.g. --untied) and kept for later runs.
bench_model() {
    if [ -n "${BENCH_MODEL:-}" ]; then
        model=$BENCH_MODEL
        [ -r "$model" ] || die "$model: cannot read"
        return
    fi
    local type=$1 size=${2:-1.5b}
    shift
    [ $# -gt 0 ] && shift
    local opt suffix=
    for opt in "$@"; do suffix=$suffix-${opt#--}; done
    model=$cache/qwen2-$size-$type$suffix.gguf
    if [ ! -f "$model" ]; then
        mkdir -p "$cache" || die "$cache: cannot create"
        local synth=$top_builddir/tests/gguf-synth
        [ -x "$synth" ] || die "$synth: not built (run make check or make bench)"
        echo "generating $model (once; kept for later runs)"
        "$synth" --size "$size" --type "$type" --seed 1 "$@" -o "$model" ||
            die "$model: gguf-synth failed"
    fi
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/$me.XXXXXX") || die "cannot create a temporary directory"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' HUP INT TERM

# llama_bench_speeds CSV: the prompt and generation speeds (avg_ts of the
# rows with n_gen 0 and with n_prompt 0) of llama-bench's -o csv output,
# printed as "PP TG".
llama_bench_speeds() {
    awk -F, '
        { for (i = 1; i <= NF; i++) gsub(/"/, "", $i) }
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        $col["n_prompt"] > 0 && $col["n_gen"] == 0 { pp = $col["avg_ts"] }
        $col["n_gen"] > 0 && $col["n_prompt"] == 0 { tg = $col["avg_ts"] }
        END { print pp, tg }' "$1"
}

# decode_bytes MODEL: the bytes of weights a decode step reads, printed:
# every tensor's data, but the embedding rows when the model has an output
# matrix of its own (then only a token's row of token_embd is read; tied,
# token_embd is the output matrix, read whole).
decode_bytes() {
    "$top_builddir/gguf-dump" --json "$1" | python3 -c '
import json, sys
ts = {t["name"]: t for t in json.load(sys.stdin)["tensors"]}
total = sum(t["bytes"] for t in ts.values())
if "output.weight" in ts:
    total -= ts["token_embd.weight"]["bytes"]
print(total)'
}

# exact_prompt RUN MODEL N: writes $tmp/prompt, a text of exactly N tokens
# for qwen-run RUN on MODEL: the longest prefix of a fixed text that has
# at most that many (found by bisection on its length), then one character
# more at a time until the count is exact.
exact_prompt() {
    local run=$1 m=$2 n=$3 lo hi mid len
    awk 'BEGIN {
        split("the of and to in is was for on that with as by at from his her an were are which " \
              "this be or has had not but one all new more first two after who been also its " \
              "their than other into most only over some time would up out very about", w, " ")
        s = 12345
        for (i = 0; i < 4 * '"$n"'; i++) {
            s = (s * 1103515245 + 12345) % 2147483648
            printf "%s ", w[int(s / 65536) % 60 + 1]
        }
    }' > "$tmp/text" || die "cannot write $tmp/text"
    count() {
        head -c "$1" "$tmp/text" > "$tmp/prompt"
        "$run" -m "$m" --raw -f "$tmp/prompt" --tokenize 2> "$tmp/tok.err" | wc -w
    }
    lo=1
    hi=$(stat -c %s "$tmp/text")
    [ "$(count "$hi")" -ge "$n" ] || die "$(cat "$tmp/tok.err") cannot make a prompt of $n tokens"
    while [ $((hi - lo)) -gt 1 ]; do
        mid=$(((lo + hi) / 2))
        if [ "$(count "$mid")" -le "$n" ]; then lo=$mid; else hi=$mid; fi
    done
    len=$lo
    while [ "$(count "$len")" -lt "$n" ] && [ "$len" -lt $((lo + 8)) ]; do len=$((len + 1)); done
    [ "$(count "$len")" -eq "$n" ] || die "no prefix of the text has exactly $n tokens"
}

# cpu_now VAR: sets VAR to the user plus system CPU time, in milliseconds,
# of this shell's finished children so far.  The `times` builtin must run
# in this shell, not in a command substitution (a subshell has children of
# its own), so its report goes through a file.
cpu_now() {
    times > "$tmp/times"
    printf -v "$1" '%s' "$(awk 'NR == 2 {
        split($1, u, "m"); split($2, s, "m")
        printf "%d\n", (u[1] * 60 + u[2]) * 1000 + (s[1] * 60 + s[2]) * 1000
    }' "$tmp/times")"
}

# best_ms N LOG CMD...: runs CMD once to warm the page cache, then N times,
# its output going to LOG; prints the best wall time in milliseconds (3
# decimals) and the CPU time (user + system, ms) of that run.  Fails when
# CMD fails.  The clock is bash's EPOCHREALTIME, read without a subshell;
# stripping its decimal separator (which follows the locale) gives
# microseconds.  On a shared machine the CPU time says more than the wall
# time about the work done.
best_ms() {
    local n=$1 log=$2 best='' cpu='' t0 t1 c0 c1 d i
    shift 2
    "$@" > "$log" 2>&1 || return 1
    for ((i = 0; i < n; i++)); do
        cpu_now c0
        t0=${EPOCHREALTIME//[.,]/}
        "$@" > "$log" 2>&1 || return 1
        t1=${EPOCHREALTIME//[.,]/}
        cpu_now c1
        d=$((t1 - t0))
        if [ -z "$best" ] || [ "$d" -lt "$best" ]; then best=$d; cpu=$((c1 - c0)); fi
    done
    printf '%d.%03d %d\n' $((best / 1000)) $((best % 1000)) "$cpu"
}

# ratio A B [DIGITS]: A / B with DIGITS decimals (default 2) and an "x",
# or "n/a" when B is not positive.
ratio() {
    awk -v a="$1" -v b="$2" -v p="${3:-2}" \
        'BEGIN { if (b > 0) printf "%." p "fx", a / b; else print "n/a" }'
}
