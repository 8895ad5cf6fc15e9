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

# --- infra: symbols, install, manual coverage, benchmarks ---
TESTS += tests/test-symbols.sh tests/test-install.sh tests/test-manual.sh
EXTRA_DIST += tests/test-symbols.sh tests/test-install.sh tests/test-manual.sh \
	tests/data/README.md tests/data/libggml-gguf-symbols.txt
include tests/bench/local.mk

# --- hostile inputs: malformed-file corpus, truncation and corruption ---
check_PROGRAMS += tests/gguf-hostile tests/test-truncate
tests_gguf_hostile_SOURCES = tests/gguf-hostile.c
tests_gguf_hostile_LDADD = gguf/libgguf.la
tests_test_truncate_SOURCES = tests/test-truncate.c tests/testutil.h
tests_test_truncate_LDADD = gguf/libgguf.la
TESTS += tests/test-truncate tests/test-hostile.sh
EXTRA_DIST += tests/test-hostile.sh

# --- gguf-dump CLI tests ---
check_PROGRAMS += tests/test-dump-fixture
tests_test_dump_fixture_SOURCES = tests/test-dump-fixture.c
tests_test_dump_fixture_LDADD = -lm
TESTS += tests/test-dump.sh tests/test-dump-input.sh tests/test-dump-escape.sh \
	tests/test-dump-output.sh tests/test-dump-tty.sh
EXTRA_DIST += tests/test-dump.sh tests/test-dump-input.sh tests/test-dump-escape.sh \
	tests/test-dump-output.sh tests/test-dump-tty.sh tests/test-dump-common.sh

# --- writer: round trip, known answers, failure paths; gguf-py cross-check ---
check_PROGRAMS += tests/test-write
tests_test_write_SOURCES = tests/test-write.c tests/testutil.h
tests_test_write_LDADD = gguf/libgguf.la
TESTS += tests/test-write tests/test-write-gguf-py.sh tests/test-synth.sh
EXTRA_DIST += tests/test-write-gguf-py.sh tests/test-synth.sh
