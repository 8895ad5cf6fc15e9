#!/bin/bash
# bench-attn.sh -- a decode step's attention on the CPU per SIMD path:
# the dot products of the query heads with the cached keys, their
# softmax, and the weighted sums of the cached values, over every layer
# and KV head of a cache past the CPU's caches (tests/bench/bench-attn.c).
# Speeds are reported, never judged.
#
# Environment:
#   BENCH_THREADS    threads (default 2)
#   BENCH_POSITIONS  cached positions (default 2048)
#   BENCH_SHAPE      "LAYERS KV_HEADS GROUP HEAD_DIM" (default "28 2 6 128",
#                    the 1.5b model; the 0.5b: "24 2 7 64")

set -u
me=bench-attn
. "${top_srcdir:-.}/tests/bench/common.sh"
prog=$top_builddir/tests/bench/bench-attn
[ -x "$prog" ] || die "$prog: not built (run make bench)"
read -r layers kv group dim <<< "${BENCH_SHAPE:-28 2 6 128}"
"$prog" -t "${BENCH_THREADS:-2}" -p "${BENCH_POSITIONS:-2048}" -l "$layers" -k "$kv" -g "$group" -d "$dim" ||
    die "$prog failed"
