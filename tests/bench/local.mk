# tests/bench/: benchmarks, run by `make bench` (never by `make check`).
BENCHMARKS += tests/bench/bench-dump.sh
EXTRA_DIST += $(BENCHMARKS)
CLEANFILES += tests/bench/cache/qwen2-1.5b-f16.gguf
