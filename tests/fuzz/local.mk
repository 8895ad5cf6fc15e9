# tests/fuzz/: one libFuzzer harness per parser of untrusted input.
#
#   read       the reader on bytes in memory, and a walk over all it gives
#   stream     the same bytes through pipes and gzip: the memory verdict
#   manifest   gguf-verify's manifest parser (tools/manifest.c)
#   tokenizer  the BPE tokenizer on random vocabularies, merges and text
#   write      the writer: read(write(x)) == x
#
# A new parser (split sets, imatrix files, grammars ...) gets a harness
# tests/fuzz/fuzz-NAME.c, its name in FUZZ_TARGETS below, a program entry
# like the others, seeds in tests/fuzz/gen-corpus.sh, and the sources it
# fuzzes in FUZZ_INSTRUMENTED.
#
# With --enable-fuzzing each harness is a libFuzzer program linked with
# the fuzzed sources compiled once more with coverage instrumentation, ASan
# and UBSan (libfuzzed.la, for these programs only); `make fuzz
# FUZZ_SECONDS=N` runs each for N seconds on a seed corpus made at build
# time.  Otherwise each harness gets tests/fuzz/driver.c as main(), links
# the ordinary libraries, and is one more program of `make check`.  Either
# way tests/fuzz/test-fuzz-regress.sh replays the seeds and every input of
# tests/fuzz/regress (hex text, NAME-*.hex for harness NAME) in `make
# check`.

FUZZ_TARGETS = read stream manifest tokenizer write
FUZZ_PROGS = tests/fuzz/fuzz-read tests/fuzz/fuzz-stream tests/fuzz/fuzz-manifest \
	tests/fuzz/fuzz-tokenizer tests/fuzz/fuzz-write

check_PROGRAMS += $(FUZZ_PROGS) tests/fuzz/unhex
tests_fuzz_unhex_SOURCES = tests/fuzz/unhex.c

FUZZ_WALK = tests/fuzz/walk.c tests/fuzz/walk.h tests/fuzz/fuzz.h
tests_fuzz_fuzz_read_SOURCES = tests/fuzz/fuzz-read.c $(FUZZ_WALK)
tests_fuzz_fuzz_stream_SOURCES = tests/fuzz/fuzz-stream.c $(FUZZ_WALK)
tests_fuzz_fuzz_manifest_SOURCES = tests/fuzz/fuzz-manifest.c tests/fuzz/fuzz.h
tests_fuzz_fuzz_tokenizer_SOURCES = tests/fuzz/fuzz-tokenizer.c tests/fuzz/fuzz.h tests/bytelevel.h
tests_fuzz_fuzz_write_SOURCES = tests/fuzz/fuzz-write.c $(FUZZ_WALK)

if FUZZING
# The fuzzed sources, instrumented: what the fuzzer learns from.
FUZZ_INSTRUMENTED = $(gguf_libgguf_la_SOURCES) infer/tokenizer.c infer/tokenizer.h infer/check.c infer/check.h \
	tools/manifest.c tools/manifest.h tools/cli.c tools/cli.h
noinst_LTLIBRARIES += tests/fuzz/libfuzzed.la
tests_fuzz_libfuzzed_la_SOURCES = $(FUZZ_INSTRUMENTED)
tests_fuzz_libfuzzed_la_CFLAGS = $(AM_CFLAGS) $(FUZZ_LIB_CFLAGS) $(PCRE2_CFLAGS)
tests_fuzz_libfuzzed_la_CPPFLAGS = $(AM_CPPFLAGS) $(LIBCRYPTO_CFLAGS)
tests_fuzz_libfuzzed_la_LIBADD = -lxxhash -lz $(LIBCRYPTO_LIBS) $(PCRE2_LIBS) -lm
FUZZ_CFLAGS_ALL = $(AM_CFLAGS) $(FUZZ_CFLAGS) -pthread
FUZZ_LDFLAGS_ALL = $(AM_LDFLAGS) $(FUZZ_CFLAGS) -pthread
FUZZ_LIBS = tests/fuzz/libfuzzed.la
FUZZ_LIBS_TOKENIZER = tests/fuzz/libfuzzed.la
FUZZ_LIBS_MANIFEST = tests/fuzz/libfuzzed.la
else
FUZZ_CFLAGS_ALL = $(AM_CFLAGS) -pthread
FUZZ_LDFLAGS_ALL = $(AM_LDFLAGS) -pthread
FUZZ_LIBS = gguf/libgguf.la -lz
FUZZ_LIBS_TOKENIZER = infer/libinfer.la gguf/libgguf.la
FUZZ_LIBS_MANIFEST = tools/libcli.la gguf/libgguf.la
tests_fuzz_fuzz_read_SOURCES += tests/fuzz/driver.c
tests_fuzz_fuzz_stream_SOURCES += tests/fuzz/driver.c
tests_fuzz_fuzz_manifest_SOURCES += tests/fuzz/driver.c tools/manifest.c tools/manifest.h
tests_fuzz_fuzz_tokenizer_SOURCES += tests/fuzz/driver.c
tests_fuzz_fuzz_write_SOURCES += tests/fuzz/driver.c
endif

tests_fuzz_fuzz_read_CFLAGS = $(FUZZ_CFLAGS_ALL)
tests_fuzz_fuzz_read_LDFLAGS = $(FUZZ_LDFLAGS_ALL)
tests_fuzz_fuzz_read_LDADD = $(FUZZ_LIBS)
tests_fuzz_fuzz_stream_CFLAGS = $(FUZZ_CFLAGS_ALL)
tests_fuzz_fuzz_stream_LDFLAGS = $(FUZZ_LDFLAGS_ALL)
tests_fuzz_fuzz_stream_LDADD = $(FUZZ_LIBS) -lz
tests_fuzz_fuzz_manifest_CFLAGS = $(FUZZ_CFLAGS_ALL)
tests_fuzz_fuzz_manifest_LDFLAGS = $(FUZZ_LDFLAGS_ALL)
tests_fuzz_fuzz_manifest_LDADD = $(FUZZ_LIBS_MANIFEST)
tests_fuzz_fuzz_tokenizer_CFLAGS = $(FUZZ_CFLAGS_ALL)
tests_fuzz_fuzz_tokenizer_LDFLAGS = $(FUZZ_LDFLAGS_ALL) $(OPENMP_CFLAGS)
tests_fuzz_fuzz_tokenizer_LDADD = $(FUZZ_LIBS_TOKENIZER)
tests_fuzz_fuzz_write_CFLAGS = $(FUZZ_CFLAGS_ALL)
tests_fuzz_fuzz_write_LDFLAGS = $(FUZZ_LDFLAGS_ALL)
tests_fuzz_fuzz_write_LDADD = $(FUZZ_LIBS)

# make check: the seeds and the regression inputs, replayed.
TESTS += tests/fuzz/test-fuzz-regress.sh
EXTRA_DIST += tests/fuzz/test-fuzz-regress.sh tests/fuzz/gen-corpus.sh tests/fuzz/run-fuzz.sh \
	tests/fuzz/regress

# make fuzz FUZZ_SECONDS=N: each harness for N seconds (default 60) on the
# seed corpus; fails on any finding and prints the input's path.
FUZZ_SECONDS = 60
fuzz: $(FUZZ_PROGS) tests/gguf-synth$(EXEEXT) tests/gguf-hostile$(EXEEXT) gguf-verify$(EXEEXT)
if FUZZING
	@FUZZ_TARGETS='$(FUZZ_TARGETS)' FUZZ_SECONDS='$(FUZZ_SECONDS)' \
	  top_srcdir='$(top_srcdir)' top_builddir='$(top_builddir)' \
	  $(SHELL) '$(srcdir)/tests/fuzz/run-fuzz.sh'
else
	@echo "make fuzz: this build has no libFuzzer; configure with CC=clang --enable-fuzzing" >&2; exit 1
endif
CLEANFILES += tests/fuzz/corpus.stamp
clean-local: clean-fuzz
clean-fuzz:
	-rm -rf tests/fuzz/corpus tests/fuzz/work tests/fuzz/findings
.PHONY: fuzz clean-fuzz
