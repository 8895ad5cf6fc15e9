# tests/bench/: benchmarks, run by `make bench` (never by `make check`).
BENCHMARKS += tests/bench/bench-dump.sh tests/bench/bench-requant.sh
BENCHMARKS += tests/bench/bench-verify.sh tests/bench/bench-qwen-run.sh tests/bench/bench-batched.sh
BENCHMARKS += tests/bench/bench-prompt-cache.sh
# qwen-run on a CUDA GPU (says so and skips without one)
BENCHMARKS += tests/bench/bench-cuda.sh
EXTRA_DIST += $(BENCHMARKS) tests/bench/common.sh
CLEANFILES += tests/bench/cache/qwen2-1.5b-f16.gguf tests/bench/cache/qwen2-1.5b-q4_k_m.gguf

# Row kernel speed per SIMD path: a C program built by `make bench` only
# (EXTRA_PROGRAMS), run by its script.
BENCHMARKS += tests/bench/bench-quant.sh
EXTRA_PROGRAMS = tests/bench/bench-quant tests/bench/bench-mem tests/bench/bench-matvec
tests_bench_bench_quant_SOURCES = tests/bench/bench-quant.c tests/bench/benchutil.h
# The read bandwidth, the ceiling of decode, for bench-qwen-run.sh.
tests_bench_bench_mem_SOURCES = tests/bench/bench-mem.c tests/bench/readsum.h tests/bench/benchutil.h
tests_bench_bench_mem_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS) -O3
tests_bench_bench_mem_LDFLAGS = $(OPENMP_CFLAGS)
CLEANFILES += tests/bench/bench-mem$(EXEEXT)
bench: tests/bench/bench-mem$(EXEEXT)
# A decode step's product per weight type against that bandwidth.
BENCHMARKS += tests/bench/bench-matvec.sh
tests_bench_bench_matvec_SOURCES = tests/bench/bench-matvec.c tests/bench/readsum.h tests/bench/benchutil.h
tests_bench_bench_matvec_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
tests_bench_bench_matvec_LDFLAGS = $(OPENMP_CFLAGS)
tests_bench_bench_matvec_LDADD = gguf/libgguf.la -lm
CLEANFILES += tests/bench/bench-matvec$(EXEEXT)
bench: tests/bench/bench-matvec$(EXEEXT)
# The products of many columns (prompts, batched decode) per weight type.
BENCHMARKS += tests/bench/bench-matmul.sh
EXTRA_PROGRAMS += tests/bench/bench-matmul
tests_bench_bench_matmul_SOURCES = tests/bench/bench-matmul.c tests/bench/benchutil.h
tests_bench_bench_matmul_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
tests_bench_bench_matmul_LDFLAGS = $(OPENMP_CFLAGS)
tests_bench_bench_matmul_LDADD = gguf/libgguf.la -lm
CLEANFILES += tests/bench/bench-matmul$(EXEEXT)
bench: tests/bench/bench-matmul$(EXEEXT)
tests_bench_bench_quant_LDADD = gguf/libgguf.la -lm
CLEANFILES += tests/bench/bench-quant$(EXEEXT)
bench: tests/bench/bench-quant$(EXEEXT)
# A decode step's attention per SIMD path: a C program built by `make bench` only
BENCHMARKS += tests/bench/bench-attn.sh
EXTRA_PROGRAMS += tests/bench/bench-attn
tests_bench_bench_attn_SOURCES = tests/bench/bench-attn.c tests/bench/benchutil.h
tests_bench_bench_attn_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
tests_bench_bench_attn_LDFLAGS = $(OPENMP_CFLAGS)
tests_bench_bench_attn_LDADD = gguf/libgguf.la -lm
CLEANFILES += tests/bench/bench-attn$(EXEEXT)
bench: tests/bench/bench-attn$(EXEEXT)
