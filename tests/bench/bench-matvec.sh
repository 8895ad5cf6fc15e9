#!/bin/bash
# bench-matvec.sh -- a decode step's product, one column times a matrix
# far larger than the caches, per weight type: the GB/s of weights it
# reads, plain and with the CPU backend's interleaved rows, as a share of
# the read bandwidth bench-mem measures with the same threads in the same
# run (tests/bench/bench-matvec.c, bench-mem.c).
#
# Rounds alternate bench-mem and bench-matvec (all types), and the best of
# each is reported: this machine's bandwidth moves from minute to minute.
# Speeds are reported, never judged.
#
# Environment:
#   BENCH_RUNS     rounds (default 3)
#   BENCH_THREADS  threads (default 2)
#   BENCH_MIB      MiB a matrix (default 512)
#   BENCH_K        weights a row (default 1536; the 1.5b's ffn_down: 8960)
#   BENCH_TYPES    weight types (default: q4_K q5_K q6_K q4_0 q5_0 q8_0)

set -u
me=bench-matvec
. "${top_srcdir:-.}/tests/bench/common.sh"
runs=${BENCH_RUNS:-3}
threads=${BENCH_THREADS:-2}
mem=$top_builddir/tests/bench/bench-mem
prog=$top_builddir/tests/bench/bench-matvec
for p in "$mem" "$prog"; do
    [ -x "$p" ] || die "$p: not built (run make bench)"
done
read -r -a types <<< "${BENCH_TYPES:-q4_K q5_K q6_K q4_0 q5_0 q8_0}"

bw=''
for ((r = 0; r < runs; r++)); do
    b=$("$mem" -t "$threads" | sed -n 's/^read bandwidth: \([0-9.]*\) GB\/s.*/\1/p')
    [ -n "$b" ] || die "$mem failed"
    bw=$(awk -v a="$b" -v b="$bw" 'BEGIN { print (b == "" || a + 0 > b + 0) ? a : b }')
    "$prog" -t "$threads" -m "${BENCH_MIB:-512}" -k "${BENCH_K:-1536}" "${types[@]}" > "$tmp/round$r" ||
        die "$prog failed"
done
head -1 "$tmp/round0"
echo "bench-mem: $bw GB/s (best of $runs rounds, $threads threads)"
# the best of the rounds per type and layout, and its share of bench-mem
awk -v bw="$bw" '
    FNR <= 2 { next }
    { for (c = 2; c <= 3; c++) if ($c != "-" && $c + 0 > best[$1, c] + 0) best[$1, c] = $c
      if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
    END {
        printf "%-6s %18s %18s\n", "type", "plain GB/s (%)", "interleaved (%)"
        for (i = 1; i <= n; i++) {
            t = order[i]
            p = sprintf("%.1f (%.0f %%)", best[t, 2], 100 * best[t, 2] / bw)
            q = best[t, 3] == "" ? "-" : sprintf("%.1f (%.0f %%)", best[t, 3], 100 * best[t, 3] / bw)
            printf "%-6s %18s %18s\n", t, p, q
        }
    }' "$tmp"/round*
