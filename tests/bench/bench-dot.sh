#!/bin/bash
# bench-dot.sh -- dot and matrix-product kernel speed per SIMD level
# (quant/dot.h, gguf_matmul()).
#
# Runs `tests/test-quant-dot --bench`: for each weight type, the GB/s of
# weight bytes one thread streams through the dot kernel in a 4096 x 4096
# matrix-vector product, for the scalar, avx2 and avx512 levels this CPU
# has; then gguf_matmul()'s GB/s with one column and its integer
# multiply-adds per second with 64 columns (prompt processing).  Decode reads every weight once per token, so the 1.5b Q4_K_M
# model's ~0.94 GB per token at R GB/s takes about 0.94 / R s per token
# and thread.  Times are reported, never judged.

set -u
top_builddir=${top_builddir:-.}
me=bench-dot

prog=$top_builddir/tests/test-quant-dot
[ -x "$prog" ] || { echo "$me: $prog: not built (run make bench)" >&2; exit 2; }
exec "$prog" --bench
