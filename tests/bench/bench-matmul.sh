#!/bin/bash
# bench-matmul.sh -- the products of many columns per weight type, those
# of a prompt and of a batched decode step, bound by the arithmetic: GMAC/s
# for each column count, the weights laid out as the CPU backend keeps
# them, in copies past the caches (tests/bench/bench-matmul.c; it fails
# when a product's outputs are not the bits of gguf_matmul() on the plain
# rows).  Speeds are reported, never judged.
#
# Environment:
#   BENCH_THREADS  threads (default 2)
#   BENCH_K        weights a row (default 1536; the 1.5b's ffn_down: 8960)
#   BENCH_ROWS     rows a matrix (default 8960)
#   BENCH_MIB      MiB of copies of the matrix (default 64)
#   BENCH_COLS     column counts, comma-separated (default 1,2,4,8,16,32,64,128)
#   BENCH_TYPES    weight types (default: q4_K q5_K q6_K q4_0 q5_0 q8_0)

set -u
me=bench-matmul
. "${top_srcdir:-.}/tests/bench/common.sh"
prog=$top_builddir/tests/bench/bench-matmul
[ -x "$prog" ] || die "$prog: not built (run make bench)"
read -r -a types <<< "${BENCH_TYPES:-q4_K q5_K q6_K q4_0 q5_0 q8_0}"
"$prog" -t "${BENCH_THREADS:-2}" -k "${BENCH_K:-1536}" -r "${BENCH_ROWS:-8960}" -m "${BENCH_MIB:-64}" \
    -c "${BENCH_COLS:-1,2,4,8,16,32,64,128}" "${types[@]}" || die "$prog failed"
