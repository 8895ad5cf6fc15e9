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
tests_gguf_synth_SOURCES = tests/gguf-synth.c tests/bytelevel.h
tests_gguf_synth_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
tests_gguf_synth_LDFLAGS = $(OPENMP_CFLAGS)
tests_gguf_synth_LDADD = tools/libcli.la gguf/libgguf.la -lm

# --- reader unit tests ---
check_PROGRAMS += tests/test-read
tests_test_read_SOURCES = tests/test-read.c tests/testutil.h tests/bytes.h
tests_test_read_LDADD = gguf/libgguf.la
TESTS += tests/test-read

# --- the tensor types of gguf-requant --preset (tools/preset.c) ---
check_PROGRAMS += tests/test-preset
tests_test_preset_SOURCES = tests/test-preset.c tests/testutil.h
tests_test_preset_LDADD = tools/libcli.la gguf/libgguf.la -lm
TESTS += tests/test-preset
EXTRA_DIST += tests/data/preset-kat/types.kat

# --- split sets (gguf_split_*) ---
check_PROGRAMS += tests/test-split
tests_test_split_SOURCES = tests/test-split.c tests/testutil.h
tests_test_split_LDADD = gguf/libgguf.la
TESTS += tests/test-split
check_PROGRAMS += tests/split-file
tests_split_file_LDADD = gguf/libgguf.la
TESTS += tests/test-split-tools.sh tests/test-edit.sh tests/test-edit-in-place.sh tests/test-requant-preset.sh \
	tests/test-requant-imatrix.sh
EXTRA_DIST += tests/test-split-tools.sh tests/test-edit.sh tests/test-edit-in-place.sh tests/test-requant-preset.sh \
	tests/test-requant-imatrix.sh tests/data/preset-kat/small.kat tests/data/preset-kat/README.md \
	tests/data/preset-kat/imatrix.kat tests/data/preset-kat/small.imatrix.gguf \
	tests/data/preset-kat/small.imatrix.dat tests/data/preset-kat/untied.imatrix.gguf

# --- the memory bound and size limit of parsing (gguf.h) ---
check_PROGRAMS += tests/test-meta-memory
tests_test_meta_memory_SOURCES = tests/test-meta-memory.c tests/testutil.h
tests_test_meta_memory_LDADD = gguf/libgguf.la
TESTS += tests/test-meta-memory

# --- threads: one open file read by many threads at once, while the SIMD
# level changes, gguf_open and writers run alongside (gguf.h, libgguf(3)) ---
check_PROGRAMS += tests/test-threads
tests_test_threads_SOURCES = tests/test-threads.c tests/testutil.h
tests_test_threads_CFLAGS = $(AM_CFLAGS) -pthread
tests_test_threads_LDFLAGS = -pthread
tests_test_threads_LDADD = gguf/libgguf.la -lm
TESTS += tests/test-threads

# --- infra: symbols, install, manual coverage, benchmarks ---
TESTS += tests/test-symbols.sh tests/test-install.sh tests/test-manual.sh
EXTRA_DIST += tests/test-symbols.sh tests/test-install.sh tests/test-manual.sh \
	tests/data/README.md tests/data/libggml-gguf-symbols.txt

# --- make installcheck (make distcheck runs it after installing): a program
# built against the installed library with the flags of the installed
# libgguf.pc, linked shared and fully static, runs (tests/installcheck.sh) ---
installcheck-local:
	CC='$(CC)' CFLAGS='$(CFLAGS)' LDFLAGS='$(LDFLAGS)' SANITIZER_CFLAGS='$(SANITIZER_CFLAGS)' \
	  PKG_CONFIG='$(PKG_CONFIG)' libdir='$(libdir)' DESTDIR='$(DESTDIR)' \
	  $(SHELL) '$(srcdir)/tests/installcheck.sh' '$(srcdir)/tests/installcheck.c'
EXTRA_DIST += tests/installcheck.sh tests/installcheck.c
# make install runs ldconfig as root, not staged, not as a user (gguf/local.mk)
TESTS += tests/test-ldconfig.sh
EXTRA_DIST += tests/test-ldconfig.sh
include tests/bench/local.mk

# --- hostile inputs: malformed-file corpus, truncation and corruption ---
check_PROGRAMS += tests/gguf-hostile tests/test-truncate
tests_gguf_hostile_SOURCES = tests/gguf-hostile.c tests/bytes.h
tests_gguf_hostile_LDADD = gguf/libgguf.la
tests_test_truncate_SOURCES = tests/test-truncate.c tests/testutil.h tests/bytes.h
tests_test_truncate_LDADD = gguf/libgguf.la
TESTS += tests/test-truncate tests/test-hostile.sh
EXTRA_DIST += tests/test-hostile.sh tests/common.sh tests/tool.sh

# --- gguf-dump CLI tests ---
check_PROGRAMS += tests/test-dump-fixture
tests_test_dump_fixture_SOURCES = tests/test-dump-fixture.c tests/bytes.h
tests_test_dump_fixture_LDADD = -lm
TESTS += tests/test-dump.sh tests/test-dump-input.sh tests/test-dump-escape.sh \
	tests/test-dump-output.sh tests/test-dump-tty.sh
EXTRA_DIST += tests/test-dump.sh tests/test-dump-input.sh tests/test-dump-escape.sh \
	tests/test-dump-output.sh tests/test-dump-tty.sh tests/test-dump-common.sh

# --- writer: round trip, known answers, failure paths; gguf-py cross-check ---
check_PROGRAMS += tests/test-write
tests_test_write_SOURCES = tests/test-write.c tests/testutil.h tests/bytes.h
tests_test_write_LDADD = gguf/libgguf.la
TESTS += tests/test-write tests/test-write-gguf-py.sh tests/test-synth.sh
EXTRA_DIST += tests/test-write-gguf-py.sh tests/test-synth.sh

# --- quant/: conversions, round-trip bounds, multi-row functions, arguments;
# known answers from the reference quantizer ---
check_PROGRAMS += tests/test-quant tests/test-quant-kat
tests_test_quant_SOURCES = tests/test-quant.c tests/testutil.h
tests_test_quant_LDADD = gguf/libgguf.la -lm
tests_test_quant_kat_SOURCES = tests/test-quant-kat.c tests/testutil.h
tests_test_quant_kat_LDADD = gguf/libgguf.la -lm
TESTS += tests/test-quant tests/test-quant-kat
EXTRA_DIST += tests/data/quant-kat/README.md \
	tests/data/quant-kat/bf16.kat tests/data/quant-kat/f16.kat \
	tests/data/quant-kat/q2_K.kat tests/data/quant-kat/q3_K.kat \
	tests/data/quant-kat/q4_0.kat tests/data/quant-kat/q4_1.kat \
	tests/data/quant-kat/q4_K.kat tests/data/quant-kat/q5_0.kat \
	tests/data/quant-kat/q5_1.kat tests/data/quant-kat/q5_K.kat \
	tests/data/quant-kat/q6_K.kat tests/data/quant-kat/q8_0.kat

# --- importance-weighted quantizers (gguf_quantize_rows_weighted): known
# answers from llama.cpp with an importance matrix, properties ---
check_PROGRAMS += tests/test-quant-weighted
tests_test_quant_weighted_SOURCES = tests/test-quant-weighted.c tests/testutil.h
tests_test_quant_weighted_LDADD = gguf/libgguf.la
TESTS += tests/test-quant-weighted
EXTRA_DIST += tests/data/weighted-kat/README.md tests/data/weighted-kat/weighted.kat

# --- gguf-requant: file-type rule, output checker, CLI and failure paths ---
check_PROGRAMS += tests/requant-check tests/test-requant-mixture
tests_requant_check_SOURCES = tests/requant-check.c
tests_requant_check_LDADD = gguf/libgguf.la
tests_test_requant_mixture_SOURCES = tests/test-requant-mixture.c tools/mixture.c \
	tools/mixture.h tests/testutil.h
tests_test_requant_mixture_LDADD = gguf/libgguf.la
TESTS += tests/test-requant-mixture tests/test-requant.sh tests/test-requant-io.sh \
	tests/test-requant-fail.sh tests/test-requant-fs.sh tests/test-requant-tty.sh
EXTRA_DIST += tests/test-requant.sh tests/test-requant-io.sh tests/test-requant-fail.sh \
	tests/test-requant-fs.sh tests/test-requant-tty.sh tests/test-requant-common.sh

# --- gguf-synth quantized outputs; gguf-dump --values and --stats ---
check_PROGRAMS += tests/synth-check
tests_synth_check_SOURCES = tests/synth-check.c
tests_synth_check_LDADD = gguf/libgguf.la -lm
TESTS += tests/test-synth-quant.sh tests/test-synth-stream.sh tests/test-dump-values.sh \
	tests/test-dump-stats.sh tests/test-dump-diff.sh \
	tests/test-dump-estimate.sh
EXTRA_DIST += tests/test-synth-quant.sh tests/test-synth-stream.sh tests/test-dump-values.sh \
	tests/test-dump-stats.sh tests/test-dump-diff.sh tests/test-dump-estimate.sh tests/gguflite.py

# --- known answers from llama-quantize: requantization and synthetic quantized models ---
TESTS += tests/test-requant-kat.sh
EXTRA_DIST += tests/test-requant-kat.sh tests/data/requant-kat/README.md \
	tests/data/requant-kat/small.kat

# --- quant/ SIMD paths: every one the CPU has, bit for bit against scalar ---
check_PROGRAMS += tests/test-quant-simd
tests_test_quant_simd_SOURCES = tests/test-quant-simd.c tests/testutil.h
tests_test_quant_simd_LDADD = gguf/libgguf.la -lm
# Tell the test which paths the build has, so that it can insist on them.
tests_test_quant_simd_CPPFLAGS = $(AM_CPPFLAGS)
if HAVE_AVX2_FLAGS
tests_test_quant_simd_CPPFLAGS += -DTEST_HAVE_AVX2
endif
if HAVE_AVX512_FLAGS
tests_test_quant_simd_CPPFLAGS += -DTEST_HAVE_AVX512
endif
TESTS += tests/test-quant-simd

# --- gguf-verify: verdicts, manifests, embedded checksums, known values,
# structure and model checks, the hostile corpus, progress on a terminal ---
check_PROGRAMS += tests/verify-edit tests/test-hash
tests_verify_edit_SOURCES = tests/verify-edit.c
tests_verify_edit_LDADD = gguf/libgguf.la
tests_test_hash_SOURCES = tests/test-hash.c tests/testutil.h
tests_test_hash_LDADD = gguf/libgguf.la
TESTS += tests/test-hash
check_PROGRAMS += tests/test-manifest
tests_test_manifest_SOURCES = tests/test-manifest.c tests/testutil.h tools/manifest.c tools/manifest.h
tests_test_manifest_LDADD = tools/libcli.la gguf/libgguf.la
TESTS += tests/test-manifest
VERIFY_TESTS = tests/test-verify.sh tests/test-verify-manifest.sh tests/test-verify-embed.sh \
	tests/test-verify-kat.sh tests/test-verify-model.sh tests/test-verify-hostile.sh \
	tests/test-verify-tty.sh tests/test-verify-bounds.sh tests/test-verify-interop.sh
TESTS += $(VERIFY_TESTS)
EXTRA_DIST += $(VERIFY_TESTS) tests/test-verify-common.sh

# --- infer/: the CPU forward pass against a float64 reference on synthetic
# models of each weight type; the model loader on broken models ---
check_PROGRAMS += tests/test-forward
tests_test_forward_SOURCES = tests/test-forward.c tests/ref-forward.c tests/ref-forward.h \
	tests/testutil.h tests/synthdir.h tests/alloccount.h
tests_test_forward_LDADD = infer/libinfer.la gguf/libgguf.la -lm
# --wrap: the test counts the allocations of the decode loop.
tests_test_forward_LDFLAGS = $(OPENMP_CFLAGS) -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc
TESTS += tests/test-forward

# --- infer/cuda/: the per-thread block arithmetic of the CUDA kernels,
# compiled for the host, against quant/ (every build); the CUDA backend
# against the CPU's (a GPU, else skipped) ---
check_PROGRAMS += tests/test-cuda-blocks
tests_test_cuda_blocks_SOURCES = tests/test-cuda-blocks.c infer/cuda/qblocks.h tests/testutil.h
tests_test_cuda_blocks_CFLAGS = $(AM_CFLAGS) -ffp-contract=off
tests_test_cuda_blocks_LDADD = gguf/libgguf.la -lm
TESTS += tests/test-cuda-blocks

check_PROGRAMS += tests/test-cuda
tests_test_cuda_SOURCES = tests/test-cuda.c tests/testutil.h tests/synthdir.h
tests_test_cuda_LDADD =
if HAVE_CUDA
tests_test_cuda_LDADD += infer/cuda/libqwencuda.a
endif
tests_test_cuda_LDADD += infer/libinfer.la gguf/libgguf.la -lm $(CUDA_LIBS)
tests_test_cuda_LDFLAGS = $(OPENMP_CFLAGS)
TESTS += tests/test-cuda
# one run on a GPU machine: build with CUDA, the CUDA tests, the benchmark
EXTRA_DIST += tests/gpu/run.sh tests/gpu/prepare.sh

# --- infer/: contexts of many sequences against one alone, bit for bit;
# bad batches; the generation loop with 1 .. 5 sequences at once ---
check_PROGRAMS += tests/test-context
tests_test_context_SOURCES = tests/test-context.c tests/testutil.h tests/synthdir.h tests/alloccount.h
tests_test_context_LDADD = infer/libinfer.la gguf/libgguf.la -lm
tests_test_context_LDFLAGS = $(OPENMP_CFLAGS) -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc
TESTS += tests/test-context

check_PROGRAMS += tests/test-sampler
tests_test_sampler_SOURCES = tests/test-sampler.c tests/testutil.h
tests_test_sampler_LDADD = infer/libinfer.la gguf/libgguf.la -lm
tests_test_sampler_LDFLAGS = $(OPENMP_CFLAGS)
TESTS += tests/test-sampler

check_PROGRAMS += tests/test-grammar
tests_test_grammar_SOURCES = tests/test-grammar.c tests/testutil.h tests/synthdir.h
tests_test_grammar_LDADD = infer/libinfer.la gguf/libgguf.la -lm
tests_test_grammar_LDFLAGS = $(OPENMP_CFLAGS)
TESTS += tests/test-grammar

# --- infer/ tokenizer: split, BPE against a reference loop, round trip,
# special tokens, streaming UTF-8, bad metadata; the reference's known
# answers with a real vocabulary (QWEN_MODEL) ---
check_PROGRAMS += tests/test-tokenizer
tests_test_tokenizer_SOURCES = tests/test-tokenizer.c tests/testutil.h tests/bytelevel.h
tests_test_tokenizer_LDADD = infer/libinfer.la gguf/libgguf.la
tests_test_tokenizer_LDFLAGS = $(OPENMP_CFLAGS)
TESTS += tests/test-tokenizer tests/test-tokenizer-real.sh tests/test-tokenizer-synth.sh
EXTRA_DIST += tests/test-tokenizer-real.sh tests/test-tokenizer-synth.sh \
	tests/data/tokenizer/README.md tests/data/tokenizer/qwen2.inp tests/data/tokenizer/qwen2.out

# --- a real model: the fetch script and the reference implementation's
# answers for it (used by tests that run when QWEN_MODEL is set) ---
EXTRA_DIST += tests/fetch-model.sh tests/data/qwen-ref/README.md \
	tests/data/qwen-ref/tokens.txt tests/data/qwen-ref/greedy.txt \
	tests/data/qwen-ref/greedy-text.txt tests/data/qwen-ref/logits.txt \
	tests/data/qwen-ref/greedy-logits.txt tests/data/qwen-ref/prompts.txt \
	tests/data/qwen-ref/prompts/01-english.txt \
	tests/data/qwen-ref/prompts/02-chinese.txt \
	tests/data/qwen-ref/prompts/03-code.txt \
	tests/data/qwen-ref/prompts/04-chatml.txt \
	tests/data/qwen-ref/prompts/05-paragraph.txt \
	tests/data/qwen-ref/prompts/06-unicode.txt \
	tests/data/qwen-ref/prompts/07-chatml-chinese.txt \
	tests/data/qwen-ref/prompts/08-whitespace-digits.txt \
	tests/data/qwen-ref-1.5b/README.md tests/data/qwen-ref-1.5b/greedy.txt \
	tests/data/qwen-ref-1.5b/greedy-text.txt tests/data/qwen-ref-1.5b/logits.txt \
	tests/data/qwen-ref-1.5b/greedy-logits.txt

# --- quant/ dot kernels: against the double dot of the dequantized rows,
# and every SIMD level against scalar.  They are internal (hidden in
# libgguf), so the test links the quant/ convenience libraries itself. ---
check_PROGRAMS += tests/test-quant-dot
tests_test_quant_dot_SOURCES = tests/test-quant-dot.c tests/testutil.h
tests_test_quant_dot_LDFLAGS = $(OPENMP_CFLAGS)
tests_test_quant_dot_LDADD = $(QUANT_INTERNAL_LIBS) gguf/libgguf.la -lm
TESTS += tests/test-quant-dot
# The same test with the amx level's kernels (quant/panel-vnni.c and
# quant/tiles32.c built as for AMX) on tile instructions done in C
# (tests/amx-emu.h): the amx level checked against scalar on any CPU with
# AVX-512 VNNI, whether it has AMX or not.
if HAVE_AMX_FLAGS
check_LTLIBRARIES += tests/libquant_amxemu.la
tests_libquant_amxemu_la_SOURCES = quant/panel-vnni.c quant/tiles32.c quant/x86.h tests/amx-emu.c \
	tests/amx-emu.h
# (the VNNI library's flags: no -mamx-*, the header stands in for them)
tests_libquant_amxemu_la_CFLAGS = $(quant_libquant_vnni_la_CFLAGS) -include $(top_srcdir)/tests/amx-emu.h
tests_libquant_amxemu_la_CPPFLAGS = $(QUANT_CPPFLAGS) -DGQ_PANEL_AMX
check_PROGRAMS += tests/test-quant-amx
tests_test_quant_amx_SOURCES = tests/test-quant-dot.c tests/testutil.h
tests_test_quant_amx_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_AMX_EMULATED
tests_test_quant_amx_LDFLAGS = $(OPENMP_CFLAGS)
tests_test_quant_amx_LDADD = $(QUANT_BASE_LIBS) tests/libquant_amxemu.la gguf/libgguf.la -lm
TESTS += tests/test-quant-amx
endif
# `make bench`: the dot kernels' GB/s per SIMD level (test-quant-dot --bench)
BENCHMARKS += tests/bench/bench-dot.sh
EXTRA_DIST += tests/bench/bench-dot.sh
bench: tests/test-quant-dot$(EXEEXT)

# --- qwen-run: the CLI on synthetic models (tokenize, logits against the
# forward pass and the float64 reference, sampling, pipelines, errors);
# the reference implementation's answers on a real model (QWEN_MODEL) ---
check_PROGRAMS += tests/qwen-run-check
tests_qwen_run_check_SOURCES = tests/qwen-run-check.c tests/ref-forward.c tests/ref-forward.h
tests_qwen_run_check_LDADD = tools/libcli.la infer/libinfer.la gguf/libgguf.la -lm
tests_qwen_run_check_LDFLAGS = $(OPENMP_CFLAGS)
TESTS += tests/test-qwen-run.sh tests/test-qwen-run-pipe.sh tests/test-qwen-run-chat.sh tests/test-qwen-run-real.sh
EXTRA_DIST += tests/schemacheck.py tests/test-qwen-run.sh tests/test-qwen-run-pipe.sh tests/test-qwen-run-chat.sh tests/test-qwen-run-real.sh

# --- faults: a shim (LD_PRELOAD) that injects failed and short writes,
# signals, O_TMPFILE refusals and truncation of a mapped input into the
# tools; the tests that use it.  The shim is built without sanitizers: a
# sanitized tool brings its own runtime, which the test preloads first. ---
check_LTLIBRARIES += tests/libfault.la
tests_libfault_la_SOURCES = tests/fault.c
tests_libfault_la_CFLAGS = $(WARN_CFLAGS)
tests_libfault_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
tests_libfault_la_LIBADD = -ldl
TESTS += tests/test-sigbus.sh tests/test-fault.sh
EXTRA_DIST += tests/test-sigbus.sh tests/test-fault.sh tests/test-fault-common.sh

# --- make check-valgrind ---
# The shell tests once more, with every run of the four tools under
# valgrind's memcheck (tests/tool.sh puts it in front).  Left out: the
# real-model tests (a 0.5B forward pass under memcheck takes hours) and the
# fault-injection tests, whose LD_PRELOAD shim memcheck cannot host.
# memcheck's reports (lines "==PID== ...") fail the target, and so does a
# run in which no tool ran under it.  qwen-run runs the scalar kernels
# there, except in test-qwen-run.sh (tests/tool.sh says why).  The two
# longest tests go first (about 5 and 4 minutes on two cores), so that the
# others share the machine with them rather than leave one alone at the end.
VALGRIND_FIRST = tests/test-qwen-run.sh tests/test-qwen-run-pipe.sh
check-valgrind: all
	rm -rf valgrind-logs && mkdir valgrind-logs
	list="$(VALGRIND_FIRST)"; for t in $(TESTS); do case " $(VALGRIND_FIRST) " in *" $$t "*) continue ;; esac; case $$t in \
	  *-real.sh|tests/test-sigbus.sh|tests/test-fault.sh) ;; \
	  *.sh) list="$$list $$t" ;; esac; done; \
	GGUF_TEST_VALGRIND="$$(cd valgrind-logs && pwd)" GGUF_TEST_VALGRIND_SIMD=scalar \
	  $(MAKE) $(AM_MAKEFLAGS) check TESTS="$${VALGRIND_TESTS:-$$list}"; st=$$?; \
	runs=$$(find valgrind-logs -name '*.log' | wc -l); \
	bad=$$(grep -lE '^==[0-9]+==' valgrind-logs/*.log 2>/dev/null | sort); \
	for f in $$bad; do echo "== $$f"; grep -E '^==[0-9]+==' "$$f"; done; \
	echo "check-valgrind: $$runs tool runs under memcheck, $$(echo $$bad | wc -w) with errors"; \
	test $$st -eq 0 && test $$runs -gt 0 && test -z "$$bad"
clean-local: clean-valgrind
clean-valgrind:
	rm -rf valgrind-logs
.PHONY: check-valgrind clean-valgrind
include tests/fuzz/local.mk
