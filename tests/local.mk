# tests/: unit tests, CLI tests, the model generator, hostile inputs, benchmarks.
# Tests use the automake parallel harness; a test exits 0 pass, 77 skip,
# 99 hard error, anything else fail.

TEST_EXTENSIONS = .sh
SH_LOG_COMPILER = $(SHELL)
AM_TESTS_ENVIRONMENT = \
	top_srcdir='$(top_srcdir)'; top_builddir='$(top_builddir)'; \
	export top_srcdir top_builddir;

# The model generator (built by make check, not installed).
check_PROGRAMS += tests/gguf-synth
tests_gguf_synth_SOURCES = tests/gguf-synth.c
tests_gguf_synth_LDADD = gguf/libgguf.la -lm

# --- reader unit tests ---
check_PROGRAMS += tests/test-read
tests_test_read_SOURCES = tests/test-read.c tests/testutil.h
tests_test_read_LDADD = gguf/libgguf.la
TESTS += tests/test-read
