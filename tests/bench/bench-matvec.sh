#!/bin/bash
# bench-matvec.sh -- a decode step's product, one column times a matrix
# far larger than the caches, per weight type: the GB/s of weights it
# reads, plain and with the CPU backend's interleaved rows, and its share
# of the read bandwidth of the same bytes with the same threads, each
# product right after such a read (tests/bench/bench-matvec.c; the read
# is bench-mem's loop).  Speeds are reported, never judged.
#
# Environment:
#   BENCH_THREADS  threads (default 2)
#   BENCH_MIB      MiB a matrix (default 512)
#   BENCH_K        weights a row (default 1536; the 1.5b's ffn_down: 8960)
#   BENCH_TYPES    weight types (default: q4_K q5_K q6_K q4_0 q5_0 q8_0)

set -u
me=bench-matvec
. "${top_srcdir:-.}/tests/bench/common.sh"
prog=$top_builddir/tests/bench/bench-matvec
[ -x "$prog" ] || die "$prog: not built (run make bench)"
read -r -a types <<< "${BENCH_TYPES:-q4_K q5_K q6_K q4_0 q5_0 q8_0}"
"$prog" -t "${BENCH_THREADS:-2}" -m "${BENCH_MIB:-512}" -k "${BENCH_K:-1536}" "${types[@]}" || die "$prog failed"
