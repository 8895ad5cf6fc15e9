#!/bin/bash
# bench-quant.sh -- row kernel speed per SIMD path (tests/bench/bench-quant).
#
# Runs the bench-quant program `make bench` builds: quantize and dequantize
# Mweights/s per type for the scalar, avx2 and avx512 paths (those the CPU
# has), single thread, with ratios to scalar; then the Q6_K -> Q4_K
# conversion of gguf-requant with 1 and 2 threads and the time it projects
# for the 1.5b Q4_K_M model's Q6_K tensors; then the importance-weighted
# quantizers of gguf-requant --imatrix per path, in rows of 1536 and 8960.
# Times are reported, never judged; the script fails only when the program
# could not run or a path's output differed from the scalar path's.
#
# Environment:
#   BENCH_QUANT_SECONDS  minimum time per measurement (default 0.3)

set -u
top_builddir=${top_builddir:-.}
me=bench-quant

prog=$top_builddir/tests/bench/bench-quant
[ -x "$prog" ] || { echo "$me: $prog: not built (run make bench)" >&2; exit 2; }
exec "$prog" -s "${BENCH_QUANT_SECONDS:-0.3}"
